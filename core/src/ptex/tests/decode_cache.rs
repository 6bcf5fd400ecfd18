//! An engine's Ptex decode cache: its own, within its share of the budget.

use super::*;

/// The sources of reductions go to the engine's cache, which holds at most its capacity:
/// the process-wide setting, at most an eighth of the budget, taken from the budget. Two
/// engines have two caches, and the budget (cache included) is never exceeded.
#[test]
fn an_engines_decode_cache_is_its_own_and_within_its_budget_share() {
    let fx = Fixture::load("quad_half_rgba");
    let ls = lookups(fx.file.num_faces(), 600);
    let want = reference(&fx, &ls);
    let mut caches = Vec::new();
    for pages in [16, 40] {
        let cache = TextureCache::new(options(pages)).unwrap();
        let tex = cache.create_ptex_texture(&fx.path).unwrap();
        let decode = cache.loader().engine().ptex_decode_cache();
        let share = pages * TILE_BYTES as u64 / 8;
        assert_eq!(
            decode.capacity() as u64,
            share.min(crate::sources::ptex::decode_cache_bytes() as u64)
        );
        for (l, want) in ls.iter().zip(&want) {
            let (face, [u, v], d, o) = l;
            let mut out = vec![0f32; want.len()];
            let s = cache.ptex_sample(&tex, *face, *u, *v, d[0], d[1], d[2], d[3], o, &mut out);
            if s.resident {
                assert_eq!(&out, want);
            }
            assert!(decode.bytes() <= decode.capacity());
        }
        assert!(decode.bytes() > 0, "{pages} pages: no source was kept");
        let stats = cache.loader().engine().stats();
        assert!(stats.peak_resident_bytes <= stats.budget_bytes, "{stats:?}");
        caches.push(decode);
    }
    assert!(!Arc::ptr_eq(&caches[0], &caches[1]));
}

/// A decode cache made when the budget is full of other textures' tiles starts with
/// nothing and takes its share as room is made: a blocking engine evicts its least
/// recently used tiles for it at its next fill, a multi-pass one its stale tiles at its
/// next `process_requests`. The budget is never exceeded.
#[test]
fn a_decode_cache_made_when_the_budget_is_full_takes_its_share_as_room_is_made() {
    use crate::sources::InMemoryImage;
    use crate::textures::{TexelFormat, TextureDesc};
    let fx = Fixture::load("quad_half_rgba");
    let ls = lookups(fx.file.num_faces(), 200);
    let want = reference(&fx, &ls);
    let pages = 64;
    let share =
        (pages * TILE_BYTES as u64 / 8).min(crate::sources::ptex::decode_cache_bytes() as u64);
    // 1024² RGBA8: 64 pages of level 0, the whole budget.
    let size: usize = 1024;
    // Texels that differ (constant tiles would share one slot).
    let pixels: Vec<[f32; 4]> = (0..size * size)
        .map(|i| {
            let v = (i.wrapping_mul(2_654_435_761) >> 7) % 251;
            [v as f32 / 250.0, 0.5, 0.25, 1.0]
        })
        .collect();
    let image = || {
        Arc::new(
            InMemoryImage::from_rgba_f32(
                size as u32,
                size as u32,
                TexelFormat::RGBA8,
                &pixels,
                true,
            )
            .unwrap(),
        )
    };
    let fill_the_budget = |cache: &TextureCache| {
        let tex = cache
            .create_texture(image(), TextureDesc::default())
            .unwrap();
        let o = crate::sampling::SampleOptions::default();
        for y in 0..8 {
            for x in 0..8 {
                let (s, t) = ((x as f32 + 0.5) / 8.0, (y as f32 + 0.5) / 8.0);
                cache.tex2d_lod(tex, s, t, 0.0, &o);
            }
        }
        let stats = cache.loader().engine().stats();
        assert!(
            stats.budget_bytes - stats.resident_bytes < share,
            "the budget is full: {stats:?}"
        );
    };

    // Blocking.
    let cache = TextureCache::new(options(pages)).unwrap();
    fill_the_budget(&cache);
    let tex = cache.create_ptex_texture(&fx.path).unwrap();
    let decode = cache.loader().engine().ptex_decode_cache();
    assert!((decode.capacity() as u64) < share, "{}", decode.capacity());
    for (l, want) in ls.iter().zip(&want) {
        let (face, [u, v], d, o) = l;
        let mut out = vec![0f32; want.len()];
        let s = cache.ptex_sample(&tex, *face, *u, *v, d[0], d[1], d[2], d[3], o, &mut out);
        assert!(s.resident);
        assert_eq!(&out, want);
    }
    assert_eq!(
        decode.capacity() as u64,
        share,
        "blocking: the share was taken"
    );
    let stats = cache.loader().engine().stats();
    assert!(stats.peak_resident_bytes <= stats.budget_bytes, "{stats:?}");

    // Multi-pass: the filler's tiles go stale when launches stop asking for them.
    let loader = Loader::new(options(pages)).unwrap();
    let filler = loader
        .create_texture(image(), TextureDesc::default())
        .unwrap();
    let o = crate::sampling::SampleOptions::default();
    for _ in 0..4 {
        let launch = loader.launch_prepare();
        for y in 0..8 {
            for x in 0..8 {
                let (s, t) = ((x as f32 + 0.5) / 8.0, (y as f32 + 0.5) / 8.0);
                launch.tex2d_lod(filler, s, t, 0.0, &o);
            }
        }
        loader.process_requests(launch).wait();
    }
    let stats = loader.engine().stats();
    assert!(
        stats.budget_bytes - stats.resident_bytes < share,
        "{stats:?}"
    );
    let tex = loader.create_ptex_texture(&fx.path).unwrap();
    let decode = loader.engine().ptex_decode_cache();
    assert!((decode.capacity() as u64) < share, "{}", decode.capacity());
    let mut got = vec![vec![0f32; fx.file.num_channels()]; ls.len()];
    for (b, (batch, out)) in ls.chunks(10).zip(got.chunks_mut(10)).enumerate() {
        let mut passes = 0;
        loop {
            let launch = loader.launch_prepare();
            let mut done = true;
            for ((face, uv, d, o), out) in batch.iter().zip(out.iter_mut()) {
                let s =
                    launch.ptex_sample(&tex, *face, uv[0], uv[1], d[0], d[1], d[2], d[3], o, out);
                done &= s.resident;
            }
            loader.process_requests(launch).wait();
            passes += 1;
            if done || passes == 12 {
                let stats = loader.engine().stats();
                assert!(
                    done,
                    "batch {b}: no convergence in {passes} passes: {stats:?}"
                );
                break;
            }
        }
    }
    assert_eq!(got, want);
    assert_eq!(
        decode.capacity() as u64,
        share,
        "multi-pass: the share was taken"
    );
    let stats = loader.engine().stats();
    assert!(stats.peak_resident_bytes <= stats.budget_bytes, "{stats:?}");
}
