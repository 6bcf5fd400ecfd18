//! Ptex batches through the C ABI: `dtex_cache_ptex_sample_batch` and
//! `dtex_launch_ptex_sample_batch` equal the calls one by one, and check every query first.

use super::ptex::{cache_of_12_pages, create, fixtures, info, launch_sample, lookups, Lookup};
use super::util::*;
use crate::cache::dtex_cache_destroy;
use crate::ptex::*;
use crate::status::*;
use engine::sources::ptex::PtexFile;
use std::path::Path;
use std::ptr::{null, null_mut};

/// `l` on `texture` as a batch query.
fn query(texture: u32, l: &Lookup) -> DtexPtexQuery {
    DtexPtexQuery {
        texture,
        face: l.face,
        u: l.uv[0],
        v: l.uv[1],
        dudx: l.d[0],
        dvdx: l.d[1],
        dudy: l.d[2],
        dvdy: l.d[3],
    }
}

#[test]
fn a_blocking_batch_equals_the_calls_one_by_one_and_checks_every_query_first() {
    // Two fixtures in one cache of a few pages; each filter's lookups as one batch that
    // alternates between them, against `dtex_cache_ptex_sample` query by query on a cache
    // of its own.
    let files = fixtures();
    let (pa, pb) = (&files[0], &files[3]);
    let new_cache = || {
        let cache = cache_of_12_pages();
        let mut ids = [0u32; 2];
        for (id, path) in ids.iter_mut().zip([pa, pb]) {
            // SAFETY: valid pointers.
            ok(unsafe { dtex_cache_ptex_create(cache, cpath(path).as_ptr(), id) });
        }
        (cache, ids)
    };
    let (batch_cache, ids) = new_cache();
    let (single_cache, single_ids) = new_cache();
    let faces = |path: &Path| PtexFile::open(path).unwrap().num_faces() as u32;
    let (la, lb) = (lookups(faces(pa), 120), lookups(faces(pb), 120));
    const CHANNELS: usize = 3;
    for filter in 0..9u32 {
        let options = DtexPtexFilterOptions {
            filter,
            ..la[0].options
        };
        let queries: Vec<DtexPtexQuery> = (0..la.len())
            .map(|i| {
                let (which, l) = if i % 5 < 3 { (0, &la[i]) } else { (1, &lb[i]) };
                query(ids[which], l)
            })
            .collect();
        let mut out = vec![f32::NAN; queries.len() * CHANNELS];
        let mut results = vec![DtexPtexSampled::default(); queries.len()];
        // SAFETY: the arrays hold `count` queries and results and `count * CHANNELS` floats.
        ok(unsafe {
            dtex_cache_ptex_sample_batch(
                batch_cache,
                queries.as_ptr(),
                queries.len(),
                &options,
                out.as_mut_ptr(),
                CHANNELS,
                results.as_mut_ptr(),
            )
        });
        for (k, q) in queries.iter().enumerate() {
            let mut want = [f32::NAN; CHANNELS];
            let mut r = DtexPtexSampled::default();
            let tex = single_ids[usize::from(q.texture != ids[0])];
            // SAFETY: `want` holds CHANNELS floats.
            ok(unsafe {
                dtex_cache_ptex_sample(
                    single_cache,
                    tex,
                    q.face,
                    q.u,
                    q.v,
                    q.dudx,
                    q.dvdx,
                    q.dudy,
                    q.dvdy,
                    &options,
                    want.as_mut_ptr(),
                    CHANNELS,
                    &mut r,
                )
            });
            assert_eq!(results[k], r, "filter {filter} query {k}");
            assert_eq!(r.resident, 1, "filter {filter} query {k}");
            let got = &out[k * CHANNELS..(k + 1) * CHANNELS];
            assert_eq!(
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "filter {filter} query {k}"
            );
        }
    }
    // Every query is checked before any is looked up: a bad face, an unknown texture, a
    // NULL output give their statuses and write nothing.
    let good = DtexPtexQuery {
        texture: ids[0],
        face: 0,
        u: 0.5,
        v: 0.5,
        ..Default::default()
    };
    let bad_face = DtexPtexQuery {
        face: faces(pa),
        ..good
    };
    let unknown = DtexPtexQuery {
        texture: 9999,
        ..good
    };
    for (bad, status) in [
        (bad_face, DTEX_STATUS_INVALID_ARGUMENT),
        (unknown, DTEX_STATUS_UNKNOWN_TEXTURE),
    ] {
        let qs = [good, bad];
        let mut out = [f32::NAN; 2];
        // SAFETY: two queries, two floats, no results.
        let s = unsafe {
            dtex_cache_ptex_sample_batch(
                batch_cache,
                qs.as_ptr(),
                2,
                null(),
                out.as_mut_ptr(),
                1,
                null_mut(),
            )
        };
        assert_eq!(s, status);
        assert!(out.iter().all(|x| x.is_nan()), "nothing written: {out:?}");
    }
    // SAFETY: NULL output with work to do.
    let s = unsafe {
        dtex_cache_ptex_sample_batch(batch_cache, &good, 1, null(), null_mut(), 1, null_mut())
    };
    assert_eq!(s, DTEX_STATUS_INVALID_ARGUMENT);
    ok(dtex_cache_destroy(batch_cache));
    ok(dtex_cache_destroy(single_cache));
}

#[test]
fn a_launch_batch_equals_the_calls_one_by_one_launch_by_launch() {
    // Two loaders fed the same lookups: one samples each launch as one batch, the other
    // call by call; values and results agree at every launch, until both converge.
    let path = &fixtures()[2];
    let (batched, single) = (TestLoader::new(), TestLoader::new());
    let (tb, ts) = (create(batched.0, path), create(single.0, path));
    // Asking for the info parses a file: both asked, so both loaders start alike.
    let (i, _) = (info(batched.0, tb), info(single.0, ts));
    let n = i.num_channels as usize;
    let options = DtexPtexFilterOptions {
        filter: DTEX_PTEX_FILTER_BOX,
        ..lookups(1, 1)[0].options
    };
    let ls: Vec<Lookup> = lookups(i.num_faces, 150)
        .into_iter()
        .map(|l| Lookup { options, ..l })
        .collect();
    let queries: Vec<DtexPtexQuery> = ls.iter().map(|l| query(tb, l)).collect();
    let mut converged = false;
    for pass in 0..20 {
        let (lb, lsg) = (batched.launch(), single.launch());
        let mut out = vec![f32::NAN; ls.len() * n];
        let mut results = vec![DtexPtexSampled::default(); ls.len()];
        // SAFETY: the arrays hold `count` queries and results and `count * n` floats.
        ok(unsafe {
            dtex_launch_ptex_sample_batch(
                lb,
                queries.as_ptr(),
                queries.len(),
                &options,
                out.as_mut_ptr(),
                n,
                results.as_mut_ptr(),
            )
        });
        for (k, l) in ls.iter().enumerate() {
            let (one, r) = launch_sample(lsg, ts, l, n);
            assert_eq!(results[k], r, "pass {pass} query {k}");
            assert_eq!(
                &out[k * n..][..one.len()],
                &one[..],
                "pass {pass} query {k}"
            );
        }
        let all = results.iter().all(|r| r.resident == 1);
        process_and_wait(lb);
        process_and_wait(lsg);
        if all {
            converged = true;
            break;
        }
    }
    assert!(converged, "not resident after 20 launches");
}
