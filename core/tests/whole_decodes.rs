//! Images decoded whole (PNG, JPEG) and mip levels generated in memory, inside the texture
//! budget (`ImageSource::whole_decode`, `requests::whole_decodes`): the pages of such
//! levels are filled from one decode, whose bytes are charged to the budget while the
//! fills run and released after; renders equal those of a budget that holds everything,
//! the budget is never passed, and nothing stays decoded between batches.

mod common;

use common::{render, Query};
use demandtex::sampling::SampleOptions;
use demandtex::sources::{DecodedImageSource, ExrSource, ImageSource};
use demandtex::textures::TextureDesc;
use demandtex::{Loader, LoaderOptions, TextureCache, TILE_BYTES};
use std::path::PathBuf;
use std::sync::Arc;

const SIZE: (u32, u32) = (1024, 768);

/// A `SIZE` RGBA8 PNG, every texel distinct (with an opaque alpha: served as stored).
fn png(name: &str) -> PathBuf {
    let path = common::temp_file("whole-decodes", name);
    let image = image::RgbaImage::from_fn(SIZE.0, SIZE.1, |x, y| {
        image::Rgba([
            (x % 256) as u8,
            (y % 256) as u8,
            ((x * 3 + y * 5) % 251) as u8,
            255,
        ])
    });
    image.save(&path).unwrap();
    path
}

fn options(budget_bytes: u64) -> LoaderOptions {
    LoaderOptions {
        max_texture_memory: budget_bytes,
        fill_threads: 2,
        ..Default::default()
    }
}

/// Lookups over levels 0–3, spread over the image.
fn queries(texture: demandtex::TextureId, n: u32) -> Vec<Query> {
    (0..n)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761).rotate_left(11) ^ i.wrapping_mul(40_503);
            let d = 2f32.powi((i % 4) as i32) / SIZE.0 as f32;
            Query {
                texture,
                s: (h & 0xffff) as f32 / 65536.0,
                t: (h >> 16) as f32 / 65536.0,
                ddx: [d, 0.0],
                ddy: [0.0, d],
            }
        })
        .collect()
}

/// Render `n` queries of the file through a multi-pass loader of `budget` bytes: the
/// values, the loader's statistics after, and whether the source still holds a decode.
fn render_png(path: &PathBuf, budget: u64, n: u32) -> (Vec<[f32; 4]>, demandtex::Stats, u64, bool) {
    render_png_with(path, options(budget), n)
}

/// [`render_png`] with a loader of `options`.
fn render_png_with(
    path: &PathBuf,
    options: LoaderOptions,
    n: u32,
) -> (Vec<[f32; 4]>, demandtex::Stats, u64, bool) {
    let budget = options.max_texture_memory;
    let loader = Loader::new(options).unwrap();
    let source = Arc::new(DecodedImageSource::new(path));
    let tex = loader
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    let r = render(&loader, &queries(tex, n), 2, 60);
    assert!(r.converged, "{budget}-byte budget: converged");
    (
        r.values,
        loader.stats(),
        r.peak_resident_bytes,
        source.holds_decode(),
    )
}

#[test]
fn a_png_renders_as_with_room_for_everything_and_keeps_nothing_decoded() {
    let path = png("render.png");
    let whole = SIZE.0 as u64 * SIZE.1 as u64 * 4 * 4 / 3;
    // A few lookups first: their batch fills every other page from the open's decode (a
    // quarter of the budget holds them all), so the full render decodes nothing more.
    let loader = Loader::new(options(256 << 20)).unwrap();
    let source = Arc::new(DecodedImageSource::new(&path));
    let tex = loader
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    assert!(render(&loader, &queries(tex, 8), 1, 60).converged);
    let first = loader.stats();
    assert_eq!(first.whole_decodes, 1, "{first:#?}");
    assert!(first.pages_prefetched > 0, "{first:#?}");
    let r = render(&loader, &queries(tex, 4000), 2, 60);
    assert!(r.converged);
    let roomy = loader.stats();
    assert_eq!(roomy.whole_decodes, 1, "one decode in all: {roomy:#?}");
    assert_eq!(
        roomy.tiles_filled, first.tiles_filled,
        "every page came with the first"
    );
    assert!(
        !source.holds_decode(),
        "the decode is released after the fills"
    );
    assert_eq!(
        roomy.whole_decode_bytes, 0,
        "no decode charged after the fills"
    );
    assert_eq!(roomy.whole_decodes_over_budget, 0);
    let want = r.values;

    // A budget of a third of the levels: pages are evicted and read again (from the
    // spilled decode), inside it.
    let budget = whole / 3 / TILE_BYTES as u64 * TILE_BYTES as u64;
    let (got, tight, peak, held) = render_png(&path, budget, 4000);
    assert_eq!(got, want, "values equal the roomy render's");
    assert!(!held);
    assert!(peak <= budget, "peak {peak} within {budget}");
    assert!(tight.peak_resident_bytes <= budget);
    assert_eq!(tight.whole_decode_bytes, 0);
    assert!(tight.whole_decodes >= 1, "{tight:#?}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_blocking_cache_fills_a_png_from_one_decode_and_releases_it() {
    let path = png("blocking.png");
    let (want, ..) = render_png(&path, 256 << 20, 1500);
    let cache = TextureCache::new(options(256 << 20)).unwrap();
    let source = Arc::new(DecodedImageSource::new(&path));
    let tex = cache
        .loader()
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    for (q, w) in queries(tex, 1500).iter().zip(&want) {
        let r = cache.tex2d_grad(q.texture, q.s, q.t, q.ddx, q.ddy, &o);
        assert!(r.resident);
        assert_eq!(r.value, *w, "({}, {})", q.s, q.t);
    }
    let s = cache.stats();
    assert!(!source.holds_decode());
    assert_eq!(s.whole_decode_bytes, 0);
    assert!(s.pages_prefetched > 0, "{s:#?}");
    // The open's decode, then one for the first page, which brings the rest.
    assert!(s.whole_decodes <= 2, "{s:#?}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_budget_smaller_than_the_decode_still_serves_the_image_and_counts_it() {
    let path = png("small-budget.png");
    let (want, ..) = render_png(&path, 256 << 20, 600);
    let budget = 24 * TILE_BYTES as u64;
    // Without spilling, every batch decodes it, beyond the budget.
    let no_spill = LoaderOptions {
        max_spill_bytes: 0,
        ..options(budget)
    };
    let (got, s, peak, held) = render_png_with(&path, no_spill, 600);
    assert_eq!(got, want);
    assert!(!held);
    assert!(peak <= budget, "peak {peak} within {budget}");
    assert!(s.whole_decodes_over_budget > 0, "{s:#?}");
    // With spilling (the default), the open's decode, which the budget cannot keep, is
    // spilled, and the pages are read from the file: decoded once.
    let (got, s, peak, held) = render_png(&path, budget, 600);
    assert_eq!(got, want);
    assert!(!held);
    assert!(peak <= budget, "peak {peak} within {budget}");
    assert_eq!((s.whole_decodes, s.decodes_spilled), (1, 1), "{s:#?}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn generated_levels_of_a_scan_line_exr_are_released_after_their_fills() {
    let path = common::temp_file("whole-decodes", "scan.exr");
    exr::prelude::write_rgba_file(&path, 1000, 700, |x, y| {
        ((x % 97) as f32, (y % 89) as f32, 1.0f32, 1.0f32)
    })
    .unwrap();
    let source = Arc::new(ExrSource::new(&path));
    let loader = Loader::new(options(64 << 20)).unwrap();
    let tex = loader
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    let whole = source.whole_decode().expect("levels 1.. are generated");
    assert_eq!(whole.first_level, 1);
    let qs: Vec<Query> = queries(tex, 2000)
        .into_iter()
        .map(|q| Query {
            ddx: [q.ddx[0] * 2.0, 0.0],
            ddy: [0.0, q.ddy[1] * 2.0],
            ..q
        })
        .collect();
    let r = render(&loader, &qs[..4], 1, 60);
    assert!(r.converged);
    let s = loader.stats();
    assert!(s.whole_decodes >= 1 && s.pages_prefetched > 0, "{s:#?}");
    assert_eq!(s.whole_decode_bytes, 0);
    assert!(render(&loader, &qs, 2, 60).converged);
    let s = loader.stats();
    assert_eq!(s.whole_decode_bytes, 0, "{s:#?}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn interactive_mode_converges_to_the_same_png_values_with_nothing_kept_decoded() {
    let path = png("interactive.png");
    let (want, ..) = render_png(&path, 256 << 20, 800);
    let loader = Loader::new(LoaderOptions {
        mode: demandtex::StreamingMode::Interactive,
        max_requests_per_launch: 16,
        ..options(8 << 20)
    })
    .unwrap();
    let source = Arc::new(DecodedImageSource::new(&path));
    let tex = loader
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    // Interactive frames never wait for the open's decode: keep launching frames, at a
    // frame's pace, until every lookup is served (a loaded machine decodes slowly).
    let qs = queries(tex, 800);
    let deadline = std::time::Instant::now() + common::WATCHDOG;
    let r = loop {
        let r = render(&loader, &qs, 2, 50);
        if r.converged || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(r.converged, "{:#?}", loader.stats());
    assert_eq!(r.values, want);
    let s = loader.stats();
    assert!(r.peak_resident_bytes <= 8 << 20);
    assert_eq!(s.whole_decode_bytes, 0);
    assert!(!source.holds_decode());
    let _ = std::fs::remove_file(path);
}

/// A texture opened when the budget is full (a blocking cache: its mip tail waits for
/// tiles to be evicted) decodes its image once: room for the tail is made before the tail
/// (here the whole PNG) is read, not after.
#[test]
fn an_open_that_waits_for_room_decodes_its_image_once() {
    use common::PatternSource;
    use demandtex::textures::TexelFormat;
    let path = png("waits.png");
    let budget = 64 * TILE_BYTES as u64;
    let cache = TextureCache::new(options(budget)).unwrap();
    let filler = cache
        .loader()
        .create_texture(
            Arc::new(PatternSource::new(1024, 1024, TexelFormat::RGBA8, 3)),
            TextureDesc::default(),
        )
        .unwrap();
    let o = SampleOptions::default();
    for y in 0..8 {
        for x in 0..8 {
            let (s, t) = ((x as f32 + 0.5) / 8.0, (y as f32 + 0.5) / 8.0);
            assert!(cache.tex2d_lod(filler, s, t, 0.0, &o).resident);
        }
    }
    let full = cache.stats();
    assert!(
        full.budget_bytes - full.resident_bytes < TILE_BYTES as u64,
        "{full:#?}"
    );
    // A second filler takes what room is left: the PNG's tail (about 21 KiB) cannot fit.
    let second = cache
        .loader()
        .create_texture(
            Arc::new(PatternSource::new(512, 512, TexelFormat::RGBA8, 4)),
            TextureDesc::default(),
        )
        .unwrap();
    assert!(cache.tex2d_lod(second, 0.5, 0.5, 0.0, &o).resident);
    let source = Arc::new(DecodedImageSource::new(&path));
    let tex = cache
        .loader()
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    let before = cache.stats();
    let r = cache.tex2d_lod(tex, 0.5, 0.5, 9.0, &o);
    assert!(r.resident);
    let s = cache.stats();
    assert!(
        s.deferred_no_memory > before.deferred_no_memory,
        "the open waited for room: {s:#?}"
    );
    assert_eq!(source.decodes(), 1, "{s:#?}");
    assert!(s.peak_resident_bytes <= s.budget_bytes, "{s:#?}");
    let _ = std::fs::remove_file(path);
}
