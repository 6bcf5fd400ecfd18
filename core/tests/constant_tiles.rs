//! Constant-tile coalescing (`LoaderOptions::coalesce_constant_tiles`): tiles whose texels
//! all hold one value share one slot per value. Lookups return exactly what they return
//! without it, in multi-pass and blocking mode; a texture whose detail fits the budget only
//! when its constant tiles share converges without eviction; shared slots are counted,
//! shared across textures, and freed with the last page using them.

mod common;

use common::{render, Query};
use demandtex::sources::{file_source, FunctionImage, ImageSource};
use demandtex::textures::{FilterMode, MipFilter, TexelFormat, TextureDesc};
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureCache, TextureId, TILE_BYTES};
use std::sync::Arc;

const TILE: u64 = TILE_BYTES as u64;
const SIZE: u32 = 2048;

/// A mask as painters make them: black on the left half, white on the right, detail only
/// in a 256×256 patch at the top left (RGBA8: 128×128-texel tiles, so 4 of level 0's 256
/// tiles have detail and the rest are constant).
struct Mask;

impl Mask {
    fn texel(level: u32, x: u32, y: u32) -> [f32; 4] {
        let (x0, y0) = (x << level, y << level);
        if x0 < 256 && y0 < 256 {
            let h = (x0.wrapping_mul(0x9E37_79B9) ^ y0.wrapping_mul(0x85EB_CA6B)) >> 7;
            return [
                (h & 0xff) as f32 / 255.0,
                ((h >> 8) & 0xff) as f32 / 255.0,
                128.0 / 255.0,
                1.0,
            ];
        }
        let v = if x0 < SIZE / 2 { 0.0 } else { 1.0 };
        [v, v, v, 1.0]
    }
}

/// The mask as an image source.
fn mask() -> Arc<dyn ImageSource> {
    Arc::new(FunctionImage::new(
        "mask",
        SIZE,
        SIZE,
        TexelFormat::RGBA8,
        Mask::texel,
    ))
}

fn options(budget_tiles: u64, coalesce: bool) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 16,
        max_texture_memory: budget_tiles * TILE,
        fill_threads: 2,
        coalesce_constant_tiles: coalesce,
        ..Default::default()
    }
}

/// Point-sized lookups at level 0 over the whole texture: every tile is touched.
fn queries(texture: TextureId) -> Vec<Query> {
    let d = 1.0 / SIZE as f32;
    (0..4096u32)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761).rotate_left(13);
            Query {
                texture,
                s: ((i % 64) as f32 * 32.0 + (h % 32) as f32 + 0.5) / SIZE as f32,
                t: ((i / 64) as f32 * 32.0 + ((h >> 8) % 32) as f32 + 0.5) / SIZE as f32,
                ddx: [d, 0.0],
                ddy: [0.0, d],
            }
        })
        .collect()
}

#[test]
fn multipass_lookups_are_unchanged_and_the_detail_fits_without_eviction() {
    // 64 tiles: level 0 alone has 256; its detail (4 tiles) plus two shared slots and
    // the coarser levels' detail fit.
    let run = |coalesce: bool| {
        let loader = Loader::new(options(64, coalesce)).unwrap();
        let t = loader
            .create_texture(mask(), TextureDesc::default())
            .unwrap();
        let r = render(&loader, &queries(t), 2, 400);
        assert!(r.converged);
        let first = loader.stats();
        // The same frame again: what stayed resident is not read again.
        let again = render(&loader, &queries(t), 2, 400);
        assert_eq!(again.values, r.values);
        (r.values, first, loader.stats())
    };
    let (on, s_on, again_on) = run(true);
    let (off, s_off, again_off) = run(false);
    assert_eq!(on, off, "coalescing changes no lookup");
    for (q, v) in queries(TextureId(0)).iter().zip(&on).take(64) {
        let (x, y) = ((q.s * SIZE as f32) as u32, (q.t * SIZE as f32) as u32);
        let want = Mask::texel(0, x, y);
        for c in 0..4 {
            assert!(
                (v[c] - want[c]).abs() < 1e-6,
                "({x}, {y}): {v:?} vs {want:?}"
            );
        }
    }
    assert!(s_on.tiles_coalesced >= 252, "{s_on:?}");
    assert_eq!(s_on.shared_constant_tiles, 2, "black and white");
    assert_eq!(s_on.coalesced_pages, s_on.tiles_coalesced);
    // A fill holds a slot while it reads, before its tile is known to be constant, so a
    // launch requesting more tiles than the budget may still evict a few.
    assert!(
        s_on.evictions * 10 <= s_off.evictions,
        "the detail fits once constant tiles share"
    );
    assert!(s_on.peak_resident_bytes <= 64 * TILE);
    assert_eq!((s_off.tiles_coalesced, s_off.coalesced_pages), (0, 0));
    assert!(
        s_off.evictions > 0,
        "without it the level does not fit: {s_off:?}"
    );
    assert!(s_off.peak_resident_bytes <= 64 * TILE);
    // A second frame reads again only what the first evicted: with sharing, that is a few
    // tiles; without, most of level 0.
    let (reread_on, reread_off) = (
        again_on.bytes_read - s_on.bytes_read,
        again_off.bytes_read - s_off.bytes_read,
    );
    assert!(reread_on <= s_on.evictions * TILE, "{reread_on}");
    assert!(
        reread_off > 10 * reread_on.max(TILE),
        "{reread_off} vs {reread_on}"
    );
}

#[test]
fn blocking_lookups_are_unchanged_and_textures_share_the_slots() {
    let cache = TextureCache::new(options(64, true)).unwrap();
    let plain = TextureCache::new(options(64, false)).unwrap();
    let a = cache
        .loader()
        .create_texture(mask(), TextureDesc::default())
        .unwrap();
    let b = cache
        .loader()
        .create_texture(mask(), TextureDesc::default())
        .unwrap();
    let p = plain
        .loader()
        .create_texture(mask(), TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    std::thread::scope(|s| {
        for texture in [a, b] {
            let (cache, plain) = (&cache, &plain);
            let o = &o;
            s.spawn(move || {
                for q in queries(texture) {
                    let x = cache.tex2d_grad(texture, q.s, q.t, q.ddx, q.ddy, o);
                    let y = plain.tex2d_grad(p, q.s, q.t, q.ddx, q.ddy, o);
                    assert!(x.resident && y.resident);
                    assert_eq!(x.value, y.value, "({}, {})", q.s, q.t);
                }
            });
        }
    });
    let s = cache.stats();
    assert_eq!(
        s.shared_constant_tiles, 2,
        "two textures, two values: {s:?}"
    );
    assert!(
        s.coalesced_pages >= 2 * 252 && s.peak_resident_bytes <= 64 * TILE,
        "{s:?}"
    );
    // The slots go with the last page using them.
    cache.loader().unload_texture(a).unwrap();
    assert_eq!(cache.stats().shared_constant_tiles, 2);
    cache.loader().unload_texture(b).unwrap();
    let s = cache.stats();
    assert_eq!(
        (s.shared_constant_tiles, s.coalesced_pages),
        (0, 0),
        "{s:?}"
    );
}

#[test]
fn a_budget_too_small_to_share_keeps_tiles_whole() {
    // Under 16 tiles nothing is shared (a shared slot could otherwise hold a large part
    // of the budget); lookups still converge, within the budget.
    let loader = Loader::new(options(12, true)).unwrap();
    let t = loader
        .create_texture(mask(), TextureDesc::default())
        .unwrap();
    let r = render(&loader, &queries(t)[..512], 1, 2000);
    assert!(r.converged);
    let s = loader.stats();
    assert_eq!(s.tiles_coalesced, 0);
    assert!(s.peak_resident_bytes <= 12 * TILE);
}

/// maketx's `.tx` of a mask (`tests/fixtures/tx/mask8.tx`: 512² 8-bit RGBA, 64×64 file
/// tiles, black left half, white right half, a noise patch at the top left): its pages are
/// its 16 KiB file tiles (`pages_of_file_tiles`), so 63 of level 0's 64 pages and 15 of
/// level 1's 16 are constant.
/// Every texel of both levels samples the same with coalescing on and off, and the texels
/// OpenImageIO decoded (`mask8.ref`) are what the coalesced loader returns.
#[test]
fn a_maketx_mask_samples_the_same_and_its_constant_pages_share() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx");
    let path = dir.join("mask8.tx");
    let desc = TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        ..TextureDesc::default()
    };
    let texel_query = |texture, level: u32, x: u32, y: u32| {
        let side = (512 >> level) as f32;
        Query {
            texture,
            s: (x as f32 + 0.5) / side,
            t: (y as f32 + 0.5) / side,
            ddx: [1.0 / side, 0.0],
            ddy: [0.0, 1.0 / side],
        }
    };
    let run = |coalesce: bool, queries: &dyn Fn(TextureId) -> Vec<Query>| {
        let loader = Loader::new(options(64, coalesce)).unwrap();
        let t = loader.create_texture(file_source(&path), desc).unwrap();
        let r = render(&loader, &queries(t), 2, 100);
        assert!(r.converged);
        (r.values, loader.stats())
    };
    let every_texel = |t| {
        (0..2u32)
            .flat_map(|level| {
                let side = 512 >> level;
                (0..side * side).map(move |i| (level, i % side, i / side))
            })
            .map(|(level, x, y)| texel_query(t, level, x, y))
            .collect::<Vec<_>>()
    };
    let (on, stats) = run(true, &every_texel);
    let (off, _) = run(false, &every_texel);
    assert!(on == off, "coalescing changed a texel of the maketx file");
    assert_eq!(
        (stats.tiles_coalesced, stats.shared_constant_tiles),
        (78, 2),
        "{stats:?}"
    );
    // OpenImageIO's decode of the same file (levels 0 and 1 of its sampled texels).
    let reference: Vec<(u32, u32, u32, [f32; 4])> = std::fs::read_to_string(dir.join("mask8.ref"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<f32> = l.split_whitespace().map(|w| w.parse().unwrap()).collect();
            (
                v[0] as u32,
                v[1] as u32,
                v[2] as u32,
                [v[3], v[4], v[5], v[6]],
            )
        })
        .filter(|r| r.0 < 2)
        .collect();
    assert!(reference.len() >= 80);
    let (values, _) = run(true, &|t| {
        reference
            .iter()
            .map(|&(level, x, y, _)| texel_query(t, level, x, y))
            .collect()
    });
    for (v, (level, x, y, want)) in values.iter().zip(&reference) {
        let close = v.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6);
        assert!(close, "level {level} ({x}, {y}): {v:?}, OIIO {want:?}");
    }
}
