//! Ptex through the C ABI: every fixture sampled with every filter, multi-pass (launch by
//! launch, the same values and residency as core's `Launch::ptex_sample` on an identical
//! loader, converging to core's resident `ptex_sample`) and blocking (core's resident
//! values under a budget of a few pages); texture and face info as the reader's; bad
//! handles, ids, enums, faces, pointers and files give their statuses.

use super::util::*;
use crate::cache::{dtex_cache_create, dtex_cache_destroy};
use crate::device::DTEX_TILE_BYTES;
use crate::handles::{DtexCache, DtexLaunch, DtexLoader};
use crate::launch::dtex_launch_discard;
use crate::options::DtexLoaderOptions;
use crate::ptex::*;
use crate::status::*;
use engine::sampling::ptex::{ptex_sample, ResidentPtex};
use engine::sources::ptex::PtexFile;
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};
use std::sync::Arc;

/// The fixtures (tests/fixtures/ptex).
pub(super) fn fixtures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ptex");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 7, "the Ptex fixtures in {}", dir.display());
    files
}

/// One lookup: face, (u, v), footprint, C options.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lookup {
    pub face: u32,
    pub uv: [f32; 2],
    pub d: [f32; 4],
    pub options: DtexPtexFilterOptions,
}

/// Deterministic lookups over every face and every filter: zero to whole-face footprints,
/// near edges and corners, lerp on and off, jittered stochastic picks.
pub(super) fn lookups(num_faces: u32, n: usize) -> Vec<Lookup> {
    let mut state = 0x2545_F491u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state >> 8) as f32 / (1u32 << 24) as f32
    };
    (0..n)
        .map(|i| {
            let face = i as u32 % num_faces;
            let (u, v) = (next() * 1.1 - 0.05, next() * 1.1 - 0.05);
            let w = [0.0, 0.004, 0.03, 0.2, 1.0][i % 5];
            let d = [
                w * next(),
                w * (next() - 0.5) * 0.3,
                w * (next() - 0.5) * 0.3,
                w * next(),
            ];
            let options = DtexPtexFilterOptions {
                filter: (i / 2 % 9) as u32,
                lerp: (i % 3 == 0) as u32,
                sharpness: 0.5,
                jitter_u: next(),
                jitter_v: next(),
                ..Default::default()
            };
            Lookup {
                face,
                uv: [u, v],
                d,
                options,
            }
        })
        .collect()
}

/// What core's resident reader gives for `lookups`.
pub(super) fn reference(path: &Path, lookups: &[Lookup]) -> Vec<Vec<f32>> {
    let store = ResidentPtex::new(Arc::new(PtexFile::open(path).unwrap())).unwrap();
    let n = store.file().num_channels();
    lookups
        .iter()
        .map(|l| {
            let o = DtexPtexFilterOptions::resolve(Some(&l.options)).unwrap();
            let mut out = vec![0f32; n];
            let (u, v, d) = (l.uv[0], l.uv[1], l.d);
            let s = ptex_sample(&store, l.face, u, v, d[0], d[1], d[2], d[3], &o, &mut out);
            assert!(s.resident);
            out.truncate(s.channels);
            out
        })
        .collect()
}

/// A blocking cache of 12 pages (the largest fixture packs into about 40) and one fill
/// thread.
pub(super) fn cache_of_12_pages() -> DtexCache {
    let options = DtexLoaderOptions {
        max_texture_memory: 12 * u64::from(DTEX_TILE_BYTES),
        fill_threads: 1,
        ..small_options()
    };
    let mut cache = DtexCache::default();
    // SAFETY: valid pointers.
    ok(unsafe { dtex_cache_create(&options, &mut cache) });
    cache
}

pub(super) fn create(loader: DtexLoader, path: &Path) -> u32 {
    let mut id = u32::MAX;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_ptex_create(loader, cpath(path).as_ptr(), &mut id) });
    id
}

pub(super) fn info(loader: DtexLoader, texture: u32) -> DtexPtexInfo {
    let mut i = DtexPtexInfo {
        struct_size: std::mem::size_of::<DtexPtexInfo>() as u32,
        ..Default::default()
    };
    // SAFETY: valid pointer with struct_size set.
    ok(unsafe { dtex_ptex_get_info(loader, texture, &mut i) });
    i
}

/// Sample on a launch: the values and the result.
pub(super) fn launch_sample(
    launch: DtexLaunch,
    tex: u32,
    l: &Lookup,
    n: usize,
) -> (Vec<f32>, DtexPtexSampled) {
    let mut out = vec![f32::NAN; n];
    let mut r = DtexPtexSampled::default();
    let (u, v, d) = (l.uv[0], l.uv[1], l.d);
    // SAFETY: `out` holds `n` floats; the other pointers are valid.
    ok(unsafe {
        dtex_launch_ptex_sample(
            launch,
            tex,
            l.face,
            u,
            v,
            d[0],
            d[1],
            d[2],
            d[3],
            &l.options,
            out.as_mut_ptr(),
            n,
            &mut r,
        )
    });
    out.truncate(r.channels as usize);
    (out, r)
}

#[test]
fn multi_pass_lookups_equal_core_launch_by_launch_and_converge_to_the_resident_values() {
    for path in fixtures() {
        let c_loader = TestLoader::new();
        // SAFETY: valid options.
        let options = unsafe { DtexLoaderOptions::resolve(&small_options()) }.unwrap();
        let core_loader = engine::Loader::new(options).unwrap();
        let tex = create(c_loader.0, &path);
        let core_tex = core_loader.create_ptex_texture(&path).unwrap();
        // `info` parses the C texture's file: the core one's parsed too, so both start alike.
        core_tex.pages().unwrap();
        let n = info(c_loader.0, tex).num_channels as usize;
        let num_faces = info(c_loader.0, tex).num_faces;
        let lookups = lookups(num_faces, 300);
        let want = reference(&path, &lookups);
        let mut converged = false;
        for pass in 0..20 {
            let launch = c_loader.launch();
            let core_launch = core_loader.launch_prepare();
            let mut all = true;
            for (i, l) in lookups.iter().enumerate() {
                let (got, r) = launch_sample(launch, tex, l, n);
                let o = DtexPtexFilterOptions::resolve(Some(&l.options)).unwrap();
                let mut core = vec![0f32; n];
                let (u, v, d) = (l.uv[0], l.uv[1], l.d);
                let s = core_launch.ptex_sample(
                    &core_tex, l.face, u, v, d[0], d[1], d[2], d[3], &o, &mut core,
                );
                core.truncate(s.channels);
                let what = format!("{} pass {pass} lookup {i} {l:?}", path.display());
                assert_eq!(
                    (r.channels as usize, r.resident == 1),
                    (s.channels, s.resident),
                    "{what}"
                );
                assert_eq!(got, core, "{what}");
                if r.resident == 1 {
                    assert_eq!(got, want[i], "{what}");
                }
                all &= r.resident == 1;
            }
            core_loader.process_requests(core_launch).wait();
            if all {
                ok(dtex_launch_discard(launch));
                converged = true;
                break;
            }
            process_and_wait(launch);
        }
        assert!(
            converged,
            "{}: not resident after 20 launches",
            path.display()
        );
    }
}

#[test]
fn blocking_lookups_on_a_cache_of_a_few_pages_equal_the_resident_values() {
    blocking_lookups_equal_the_resident_values();
}

/// The decode cache is scratch: its size, set through the C ABI, changes no result (a
/// cache of 0 bytes makes every reduction again from the file).
#[test]
fn the_decode_cache_size_is_set_through_the_c_abi_and_changes_no_result() {
    let before = dtex_ptex_decode_cache_bytes();
    assert_eq!(
        before,
        engine::sources::ptex::DEFAULT_DECODE_CACHE_BYTES as u64,
        "the default"
    );
    dtex_ptex_set_decode_cache_bytes(0);
    assert_eq!(dtex_ptex_decode_cache_bytes(), 0);
    blocking_lookups_equal_the_resident_values();
    dtex_ptex_set_decode_cache_bytes(3 << 20);
    assert_eq!(dtex_ptex_decode_cache_bytes(), 3 << 20);
    blocking_lookups_equal_the_resident_values();
    dtex_ptex_set_decode_cache_bytes(before);
}

/// Every fixture, 200 lookups each, on a cache of 12 pages: core's resident values.
fn blocking_lookups_equal_the_resident_values() {
    for path in fixtures() {
        let cache = cache_of_12_pages();
        let mut tex = 0u32;
        // SAFETY: valid pointers.
        ok(unsafe { dtex_cache_ptex_create(cache, cpath(&path).as_ptr(), &mut tex) });
        let mut i = DtexPtexInfo {
            struct_size: std::mem::size_of::<DtexPtexInfo>() as u32,
            ..Default::default()
        };
        // SAFETY: valid pointer with struct_size set.
        ok(unsafe { dtex_cache_ptex_get_info(cache, tex, &mut i) });
        let n = i.num_channels as usize;
        let lookups = lookups(i.num_faces, 200);
        let want = reference(&path, &lookups);
        for (k, l) in lookups.iter().enumerate() {
            let mut out = vec![f32::NAN; n];
            let mut r = DtexPtexSampled::default();
            let (u, v, d) = (l.uv[0], l.uv[1], l.d);
            // SAFETY: `out` holds `n` floats.
            ok(unsafe {
                dtex_cache_ptex_sample(
                    cache,
                    tex,
                    l.face,
                    u,
                    v,
                    d[0],
                    d[1],
                    d[2],
                    d[3],
                    &l.options,
                    out.as_mut_ptr(),
                    n,
                    &mut r,
                )
            });
            out.truncate(r.channels as usize);
            assert_eq!(r.resident, 1, "{} lookup {k}", path.display());
            assert_eq!(out, want[k], "{} lookup {k} {l:?}", path.display());
        }
        ok(dtex_cache_destroy(cache));
    }
}

#[test]
fn texture_and_face_info_are_the_readers() {
    let loader = TestLoader::new();
    for path in fixtures() {
        let file = PtexFile::open(&path).unwrap();
        let tex = create(loader.0, &path);
        let i = info(loader.0, tex);
        assert_eq!(i.num_faces as usize, file.num_faces());
        assert_eq!(i.num_channels as usize, file.num_channels());
        assert_eq!(
            i.alpha_channel,
            file.alpha_channel().map_or(-1, |a| a as i32)
        );
        assert!(i.num_pages >= 1 && i.unit_bytes <= i.num_pages * 65536);
        for (f, want) in file.faces().iter().enumerate() {
            let mut fi = DtexPtexFaceInfo {
                struct_size: std::mem::size_of::<DtexPtexFaceInfo>() as u32,
                ..Default::default()
            };
            // SAFETY: valid pointer with struct_size set.
            ok(unsafe { dtex_ptex_get_face_info(loader.0, tex, f as u32, &mut fi) });
            assert_eq!(
                (fi.ulog2 as i8, fi.vlog2 as i8),
                (want.res.ulog2.max(0), want.res.vlog2.max(0))
            );
            assert_eq!(fi.flags, u32::from(want.flags));
            assert_eq!(fi.adj_faces, want.adjfaces);
            assert_eq!(
                fi.adj_edges,
                [0, 1, 2, 3].map(|e| u32::from(want.adj_edge(e)))
            );
        }
    }
    let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
    let tri = fixtures()
        .into_iter()
        .find(|p| name(p).starts_with("tri"))
        .unwrap();
    let i = info(loader.0, create(loader.0, &tri));
    assert_eq!(
        (i.mesh_type, i.data_type),
        (DTEX_PTEX_MESH_TRIANGLE, crate::textures::DTEX_TEXEL_U8)
    );
    let half = fixtures()
        .into_iter()
        .find(|p| name(p).contains("half"))
        .unwrap();
    let i = info(loader.0, create(loader.0, &half));
    assert_eq!(
        (i.mesh_type, i.data_type, i.u_border),
        (
            DTEX_PTEX_MESH_QUAD,
            crate::textures::DTEX_TEXEL_F16,
            DTEX_PTEX_BORDER_PERIODIC
        )
    );
    let tanvec = fixtures()
        .into_iter()
        .find(|p| name(p).contains("2ch"))
        .unwrap();
    let i = info(loader.0, create(loader.0, &tanvec));
    assert_eq!(
        (i.u_border, i.edge_filter),
        (DTEX_PTEX_BORDER_BLACK, DTEX_PTEX_EDGE_FILTER_TANVEC)
    );
}

#[test]
fn bad_handles_ids_faces_enums_pointers_and_files_give_clear_statuses() {
    let loader = TestLoader::new();
    let path = &fixtures()[0];
    let tex = create(loader.0, path);
    let faces = info(loader.0, tex).num_faces;
    let launch = loader.launch();
    let mut out = [0f32; 4];
    let opts = DtexPtexFilterOptions::default();
    let sample = |launch: DtexLaunch,
                  tex: u32,
                  face: u32,
                  o: *const DtexPtexFilterOptions,
                  out: *mut f32,
                  n: usize| {
        // SAFETY: `out` is NULL or holds 4 floats (n ≤ 4 where it is not NULL).
        unsafe {
            dtex_launch_ptex_sample(
                launch,
                tex,
                face,
                0.5,
                0.5,
                0.1,
                0.0,
                0.0,
                0.1,
                o,
                out,
                n,
                null_mut(),
            )
        }
    };
    let p = out.as_mut_ptr();
    // Handles.
    let m = fails(
        sample(DtexLaunch::default(), tex, 0, &opts, p, 4),
        DTEX_STATUS_INVALID_HANDLE,
    );
    assert!(m.contains("null"), "{m}");
    let mut id = 0u32;
    let c = cpath(path);
    // SAFETY: valid pointers.
    fails(
        unsafe { dtex_ptex_create(DtexLoader { id: launch.id }, c.as_ptr(), &mut id) },
        DTEX_STATUS_INVALID_HANDLE,
    );
    // SAFETY: valid pointers.
    fails(
        unsafe { dtex_cache_ptex_create(DtexCache::default(), c.as_ptr(), &mut id) },
        DTEX_STATUS_INVALID_HANDLE,
    );
    // Ids and faces.
    let m = fails(
        sample(launch, tex + 1000, 0, &opts, p, 4),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    assert!(m.contains("not a Ptex texture"), "{m}");
    let m = fails(
        sample(launch, tex, faces, &opts, p, 4),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(
        m.contains(&format!("face {faces} of a Ptex texture of {faces} faces")),
        "{m}"
    );
    fails(
        sample(launch, tex, u32::MAX, &opts, p, 4),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    let mut fi = DtexPtexFaceInfo {
        struct_size: std::mem::size_of::<DtexPtexFaceInfo>() as u32,
        ..Default::default()
    };
    // SAFETY: valid pointer.
    fails(
        unsafe { dtex_ptex_get_face_info(loader.0, tex, faces, &mut fi) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // Enums, booleans, struct sizes.
    for (change, field) in [
        (DtexPtexFilterOptions { filter: 9, ..opts }, "filter is 9"),
        (DtexPtexFilterOptions { lerp: 2, ..opts }, "lerp is 2"),
        (
            DtexPtexFilterOptions {
                noedgeblend: 7,
                ..opts
            },
            "noedgeblend is 7",
        ),
        (
            DtexPtexFilterOptions {
                struct_size: 3,
                ..opts
            },
            "struct_size is 3",
        ),
    ] {
        out = [-1.0; 4];
        let m = fails(
            sample(launch, tex, 0, &change, out.as_mut_ptr(), 4),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(m.contains(field), "{m}");
        assert_eq!(out, [-1.0; 4], "nothing is written on error");
    }
    // Pointers: NULL out with channels, NULL info out; NULL options are the defaults and
    // zero channels write nothing.
    let m = fails(
        sample(launch, tex, 0, &opts, null_mut(), 3),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(m.contains("out is NULL"), "{m}");
    ok(sample(launch, tex, 0, null(), null_mut(), 0));
    ok(sample(launch, tex, 0, null(), out.as_mut_ptr(), 4));
    // SAFETY: NULL out is the error being tested.
    fails(
        unsafe { dtex_ptex_get_info(loader.0, tex, null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // Non-finite coordinates: zeros, resident (core's rule), not an error.
    let mut r = DtexPtexSampled::default();
    // SAFETY: `out` holds 4 floats.
    ok(unsafe {
        dtex_launch_ptex_sample(
            launch,
            tex,
            0,
            f32::NAN,
            0.5,
            0.0,
            0.0,
            0.0,
            0.0,
            null(),
            out.as_mut_ptr(),
            4,
            &mut r,
        )
    });
    assert_eq!((r.resident, r.channels, out), (1, 0, [0.0f32; 4]));
    // Files: missing, not Ptex, truncated.
    let dir = TempDir::new("ptex-bad");
    let missing = dir.path().join("missing.ptx");
    // SAFETY: valid pointers.
    let m = fails(
        unsafe { dtex_ptex_create(loader.0, cpath(&missing).as_ptr(), &mut id) },
        DTEX_STATUS_IO_ERROR,
    );
    assert!(m.contains("missing.ptx"), "{m}");
    let not_ptex = dir.path().join("text.ptx");
    std::fs::write(&not_ptex, b"this is not a Ptex file at all, only text").unwrap();
    // SAFETY: valid pointers.
    let m = fails(
        unsafe { dtex_ptex_create(loader.0, cpath(&not_ptex).as_ptr(), &mut id) },
        DTEX_STATUS_UNSUPPORTED,
    );
    assert!(m.contains("text.ptx"), "{m}");
    let truncated = dir.path().join("truncated.ptx");
    std::fs::write(&truncated, &std::fs::read(path).unwrap()[..100]).unwrap();
    // SAFETY: valid pointers.
    let m = fails(
        unsafe { dtex_ptex_create(loader.0, cpath(&truncated).as_ptr(), &mut id) },
        DTEX_STATUS_IO_ERROR,
    );
    assert!(m.contains("truncated.ptx"), "{m}");
    // SAFETY: NULL path is the error being tested.
    fails(
        unsafe { dtex_ptex_create(loader.0, null(), &mut id) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    ok(dtex_launch_discard(launch));
    // A stale launch.
    fails(
        sample(launch, tex, 0, &opts, out.as_mut_ptr(), 4),
        DTEX_STATUS_INVALID_HANDLE,
    );
}
