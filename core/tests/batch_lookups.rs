//! `TextureCache::tex2d_grad_batch`: a batch gives each query what `tex2d_grad` gives it
//! alone, bit for bit — under a budget of a few pages where most queries miss and pages
//! are evicted between them, across several textures (one of them a missing file, which
//! samples its fallback colour), with misses, anisotropy and every mip level.

mod common;

use common::TestDir;
use demandtex::sources::exr::{write_mip_exr, WriteOptions};
use demandtex::sources::FloatImage;
use demandtex::textures::{AddressMode, TextureDesc};
use demandtex::{
    Error, GradLookup, LoaderOptions, SampleOptions, TextureCache, TextureId, TILE_BYTES,
};
use std::path::PathBuf;

/// Three 256² textures with different patterns, and a path that does not exist.
fn files(dir: &TestDir) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for k in 0..3u32 {
        let mut img = FloatImage::zeros(256, 256, 4);
        for (i, v) in img.data.iter_mut().enumerate() {
            *v = ((i as u32).wrapping_mul(2654435761).wrapping_add(k * 977) % 1000) as f32 / 999.0;
        }
        let path = dir.path(&format!("t{k}.exr"));
        write_mip_exr(&path, &img, &WriteOptions::default(), None).unwrap();
        paths.push(path);
    }
    paths.push(dir.path("missing.exr"));
    paths
}

/// Deterministic queries: runs of a few on one texture, footprints from a texel to the
/// whole texture, some anisotropic; points spread by the additive recurrence of the
/// plastic number (R2), a little past the texture on every side.
fn queries(ids: &[TextureId], n: usize) -> Vec<GradLookup> {
    const A: [f64; 2] = [0.754_877_666_246_692_7, 0.569_840_290_998_053_3];
    let frac = |i: usize, a: f64, k: f64| ((i as f64 + k) * a).fract() as f32;
    (0..n)
        .map(|i| {
            let w = [0.0005, 0.004, 0.03, 0.2, 1.0][i % 5];
            let aniso = if i % 3 == 0 { 6.0 } else { 1.0 };
            let (skew_x, skew_y) = (frac(i, A[0], 0.3) - 0.5, frac(i, A[1], 0.7) - 0.5);
            GradLookup {
                texture: ids[(i / 5) % ids.len()],
                s: frac(i, A[0], 0.5) * 1.2 - 0.1,
                t: frac(i, A[1], 0.5) * 1.2 - 0.1,
                ddx: [w * aniso, w * skew_x],
                ddy: [w * skew_y * 0.2, w],
            }
        })
        .collect()
}

fn cache(pages: u64) -> TextureCache {
    TextureCache::new(LoaderOptions {
        max_texture_memory: pages * TILE_BYTES as u64,
        fill_threads: 1,
        ..Default::default()
    })
    .unwrap()
}

fn register(cache: &TextureCache, paths: &[PathBuf]) -> Vec<TextureId> {
    let desc = TextureDesc {
        address: [AddressMode::Wrap; 2],
        max_anisotropy: 8,
        ..TextureDesc::default()
    };
    paths
        .iter()
        .map(|p| cache.texture_for_path(p, desc).unwrap())
        .collect()
}

fn bits(v: [f32; 4]) -> [u32; 4] {
    v.map(f32::to_bits)
}

#[test]
fn a_batch_gives_each_query_what_it_gets_alone() {
    let dir = TestDir::new("batch-lookups", "equal");
    let paths = files(&dir);
    let o = SampleOptions::default();
    // Alone, with room for everything: the values every query must get.
    let roomy = cache(4096);
    let ids = register(&roomy, &paths);
    let qs = queries(&ids, 3000);
    let alone: Vec<_> = qs
        .iter()
        .map(|q| roomy.tex2d_grad(q.texture, q.s, q.t, q.ddx, q.ddy, &o))
        .collect();
    assert!(alone.iter().all(|s| s.resident));
    for pages in [24, 4096] {
        let c = cache(pages);
        let ids2 = register(&c, &paths);
        assert_eq!(ids, ids2, "the same ids in a new cache");
        let mut out = vec![demandtex::Sample::new([f32::NAN; 4], false); qs.len()];
        c.tex2d_grad_batch(&qs, &o, &mut out).unwrap();
        for (i, (got, want)) in out.iter().zip(&alone).enumerate() {
            assert!(got.resident, "{pages} pages, query {i}");
            assert_eq!(
                bits(got.value),
                bits(want.value),
                "{pages} pages, query {i}: {:?}",
                qs[i]
            );
        }
        let stats = c.stats();
        assert!(stats.peak_resident_bytes <= stats.budget_bytes, "{stats:?}");
        if pages == 24 {
            assert!(
                stats.evictions > 0,
                "the small budget forced no eviction: {stats:?}"
            );
        }
    }
}

#[test]
fn a_batch_refuses_too_small_an_output() {
    let dir = TestDir::new("batch-lookups", "short");
    let c = cache(64);
    let ids = register(&c, &files(&dir));
    let qs = queries(&ids, 10);
    let mut out = vec![demandtex::Sample::new([0.0; 4], false); 9];
    let e = c.tex2d_grad_batch(&qs, &SampleOptions::default(), &mut out);
    assert!(matches!(e, Err(Error::InvalidArgument(_))), "{e:?}");
    assert_eq!(c.stats().tiles_filled, 0, "nothing was looked up");
}
