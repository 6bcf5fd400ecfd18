//! Pages of the file's tiles (`LoaderOptions::pages_of_file_tiles`, on by default): a CPU
//! loader gives a texture whose file has tiles smaller than a 64 KiB page (maketx's 64×64,
//! in OpenEXR and `.tx`) pages of that size, so that a page holds and costs exactly one
//! file tile. The values equal full pages read whole; each page's buffer has the file
//! tile's bytes; textures of several page sizes share one budget under eviction from many
//! threads, and multi-pass launches converge to the same values.

use demandtex::sampling::SampleOptions;
use demandtex::textures::TextureDesc;
use demandtex::{Loader, LoaderOptions, TextureCache, TextureId};
use std::path::{Path, PathBuf};

mod common;

use common::spread_queries as queries;

/// A 700×500 RGBA image, every texel distinct, written as half with `tile`-sized tiles.
fn exr(name: &str, tile: (u32, u32)) -> PathBuf {
    let path = common::temp_file("tile-pages", name);
    common::distinct_exr(&path, tile);
    path
}

/// One fill thread, `budget` bytes; pages of the file's tiles, or full pages read whole.
fn options(budget: u64, file_tile_pages: bool) -> LoaderOptions {
    LoaderOptions {
        max_texture_memory: budget,
        fill_threads: 1,
        pages_of_file_tiles: file_tile_pages,
        fill_by_file_tile: file_tile_pages,
        ..Default::default()
    }
}

/// Look `qs` up in both caches: equal values, all resident.
fn assert_same(
    small: (&TextureCache, TextureId),
    full: (&TextureCache, TextureId),
    qs: &[(f32, f32, [f32; 2], [f32; 2])],
) {
    let o = SampleOptions::default();
    for &(s, t, dx, dy) in qs {
        let a = small.0.tex2d_grad(small.1, s, t, dx, dy, &o);
        let b = full.0.tex2d_grad(full.1, s, t, dx, dy, &o);
        assert!(a.resident && b.resident);
        assert_eq!(a, b, "({s}, {t})");
    }
}

/// Open `path` in a cache with pages of its file tiles and in one with full pages, look
/// `n` queries up in both, and check that every tile buffer of the first holds `bytes`.
fn check_file(path: &Path, n: u32, bytes: u64) {
    let small = TextureCache::new(options(1 << 30, true)).unwrap();
    let full = TextureCache::new(options(1 << 30, false)).unwrap();
    let desc = TextureDesc::default();
    let ts = small.texture_for_path(path, desc).unwrap();
    let tf = full.texture_for_path(path, desc).unwrap();
    assert_same((&small, ts), (&full, tf), &queries(n));
    let (s, f) = (small.stats(), full.stats());
    assert!(s.tiles_filled > f.tiles_filled, "{s:?}");
    assert_eq!(
        s.host_tile_bytes,
        s.tiles_filled * bytes,
        "one file tile a page: {s:?}"
    );
    assert_eq!((s.tiles_published_unread, s.file_tiles_filled), (0, 0));
    assert!(s.bytes_read <= f.bytes_read, "{s:?} {f:?}");
    if f.tiles_filled > 0 {
        // (A small image is all mip tail in full pages: nothing to compare.)
        assert!(s.resident_bytes < f.resident_bytes, "{s:?} {f:?}");
    }
}

#[test]
fn pages_hold_one_64_by_64_file_tile_and_equal_full_pages() {
    // Half RGBA: 32 KiB pages (a full page is 128×64).
    check_file(&exr("half64.exr", (64, 64)), 400, 64 * 64 * 8);
    // 32×32 tiles: 8 KiB pages.
    check_file(&exr("half32.exr", (32, 32)), 400, 32 * 32 * 8);
}

#[test]
fn maketx_files_get_pages_of_their_tiles() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx");
    // maketx's 64×64 tiles of 8-bit RGB, served as RGBA: 16 KiB pages (a full page is
    // 128×128); 32×32 tiles of 8-bit RGBA: 4 KiB pages.
    check_file(&fixtures.join("rgb8_zip.tx"), 60, 64 * 64 * 4);
    check_file(&fixtures.join("rgba8_none_tile32.tx"), 60, 32 * 32 * 4);
}

#[test]
fn pages_of_several_sizes_share_one_budget_under_eviction_from_many_threads() {
    let small_tiles = exr("mixed64.exr", (64, 64));
    let page_tiles = exr("mixed_page.exr", (128, 64));
    let o = SampleOptions::default();
    let desc = TextureDesc::default();
    let qs = queries(3000);
    let reference = TextureCache::new(options(1 << 30, false)).unwrap();
    let refs = [
        reference.texture_for_path(&small_tiles, desc).unwrap(),
        reference.texture_for_path(&page_tiles, desc).unwrap(),
    ];
    let want: Vec<[f32; 4]> = qs
        .iter()
        .enumerate()
        .map(|(i, &(s, t, dx, dy))| reference.tex2d_grad(refs[i % 2], s, t, dx, dy, &o).value)
        .collect();
    // About a sixth of what the lookups touch: tiles of both sizes are evicted for each
    // other. (A lookup whose footprint is fought over may settle for a coarser level,
    // reported non-resident: only resident results are compared.)
    let budget = 40 * 64 * 1024;
    let cache = TextureCache::new(LoaderOptions {
        fill_threads: 2,
        ..options(budget, true)
    })
    .unwrap();
    let ids = [
        cache.texture_for_path(&small_tiles, desc).unwrap(),
        cache.texture_for_path(&page_tiles, desc).unwrap(),
    ];
    let resident = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for k in 0..4 {
            let (cache, qs, want, resident) = (&cache, &qs, &want, &resident);
            scope.spawn(move || {
                for (i, &(s, t, dx, dy)) in qs.iter().enumerate().skip(k).step_by(4) {
                    let got = cache.tex2d_grad(ids[i % 2], s, t, dx, dy, &o);
                    if got.resident {
                        assert_eq!(got.value, want[i], "query {i}");
                        resident.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let s = cache.stats();
    assert!(resident.into_inner() > qs.len() * 9 / 10, "{s:?}");
    assert!(s.evictions > 0, "{s:?}");
    assert!(s.peak_resident_bytes <= budget, "{s:?}");
    assert_eq!(s.failed_textures, 0);
}

#[test]
fn multi_pass_launches_converge_to_the_full_page_values() {
    let path = exr("multipass.exr", (64, 64));
    let loader = Loader::new(options(24 * 64 * 1024, true)).unwrap();
    let tex = TextureCache::from_loader(&loader)
        .texture_for_path(&path, TextureDesc::default())
        .unwrap();
    let full = TextureCache::new(options(1 << 30, false)).unwrap();
    let tf = full
        .texture_for_path(&path, TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    for q @ (s, t, dx, dy) in queries(300) {
        let got = common::converged_grad(&loader, tex, q, &o);
        assert_eq!(got, full.tex2d_grad(tf, s, t, dx, dy, &o), "({s}, {t})");
    }
    let s = loader.stats();
    assert!(s.evictions > 0, "{s:?}");
    assert!(s.peak_resident_bytes <= s.budget_bytes);
    assert_eq!(s.host_tile_bytes % (64 * 64 * 8), 0, "{s:?}");
}
