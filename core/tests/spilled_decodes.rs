//! Whole decodes spilled to files (`LoaderOptions::max_spill_bytes`, `requests::spills`):
//! a blocking cache much smaller than its PNGs' decodes decodes each image once (twice
//! where its open had to make room) and then reads its pages from the spill file, with the values of a cache that holds
//! everything; without spilling (or where the directory cannot take a file) it decodes
//! again at every miss, with the same values.

mod common;

use common::TestDir;
use demandtex::sampling::SampleOptions;
use demandtex::sources::{DecodedImageSource, ExrSource, ImageSource};
use demandtex::textures::TextureDesc;
use demandtex::{LoaderOptions, Stats, TextureCache, TextureId, TILE_BYTES};
use std::sync::Arc;

const SIZE: (u32, u32) = (512, 384);
const FILES: u32 = 6;

/// `FILES` RGBA8 PNGs of `SIZE`, every texel distinct within a file, files distinct.
fn pngs(dir: &TestDir) -> Vec<std::path::PathBuf> {
    (0..FILES)
        .map(|f| {
            let path = dir.path(&format!("img{f}.png"));
            image::RgbaImage::from_fn(SIZE.0, SIZE.1, |x, y| {
                image::Rgba([
                    (x % 256) as u8,
                    (y % 256) as u8,
                    ((x * 3 + y * 5 + f * 17) % 251) as u8,
                    255,
                ])
            })
            .save(&path)
            .unwrap();
            path
        })
        .collect()
}

/// Random lookups over every file at levels 0–2: (file, s, t, footprint).
fn queries(n: u32) -> Vec<(usize, f32, f32, f32)> {
    (0..n)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761).rotate_left(13) ^ i.wrapping_mul(40_503);
            let d = 2f32.powi((i % 3) as i32) / SIZE.0 as f32;
            let file = (h.rotate_left(7) % FILES) as usize;
            (
                file,
                (h & 0xffff) as f32 / 65536.0,
                (h >> 16) as f32 / 65536.0,
                d,
            )
        })
        .collect()
}

/// Look `qs` up one by one through a blocking cache of `options`: the values, the
/// statistics, and the sources.
fn look_up(
    paths: &[std::path::PathBuf],
    qs: &[(usize, f32, f32, f32)],
    options: LoaderOptions,
) -> (Vec<[f32; 4]>, Stats, Vec<Arc<DecodedImageSource>>) {
    let sources: Vec<_> = paths
        .iter()
        .map(|p| Arc::new(DecodedImageSource::new(p)))
        .collect();
    let (values, stats) = look_up_in(&sources, qs, options);
    (values, stats, sources)
}

/// [`look_up`] of given sources.
fn look_up_in<S: ImageSource + 'static>(
    sources: &[Arc<S>],
    qs: &[(usize, f32, f32, f32)],
    options: LoaderOptions,
) -> (Vec<[f32; 4]>, Stats) {
    let cache = TextureCache::new(LoaderOptions {
        fill_threads: 2,
        ..options
    })
    .unwrap();
    let ids: Vec<TextureId> = sources
        .iter()
        .map(|s| {
            cache
                .loader()
                .create_texture(s.clone(), TextureDesc::default())
                .unwrap()
        })
        .collect();
    let o = SampleOptions::default();
    let values = qs
        .iter()
        .map(|&(f, s, t, d)| {
            let r = cache.tex2d_grad(ids[f], s, t, [d, 0.0], [0.0, d], &o);
            assert!(r.resident, "blocking lookups are served");
            r.value
        })
        .collect();
    (values, cache.stats())
}

/// Bytes of one image's levels (RGBA8, the full chain).
fn decode_bytes() -> u64 {
    let (mut w, mut h, mut bytes) = (SIZE.0 as u64, SIZE.1 as u64, 0);
    loop {
        bytes += w * h * 4;
        if (w, h) == (1, 1) {
            return bytes;
        }
        (w, h) = ((w / 2).max(1), (h / 2).max(1));
    }
}

/// A budget of a sixth of the decodes (each image's levels: 1 MiB).
fn tight(max_spill_bytes: u64, spill_dir: Option<std::path::PathBuf>) -> LoaderOptions {
    LoaderOptions {
        max_texture_memory: 16 * TILE_BYTES as u64,
        max_spill_bytes,
        spill_dir,
        ..Default::default()
    }
}

#[test]
fn a_thrashing_blocking_cache_spills_its_decodes_and_reads_pages_from_the_files() {
    let dir = TestDir::new("spilled-decodes", "thrash");
    let paths = pngs(&dir);
    let qs = queries(1000);
    let (want, roomy, _) = look_up(&paths, &qs, LoaderOptions::default());
    assert_eq!(roomy.decodes_spilled, 0, "{roomy:#?}");

    let spill_dir = TestDir::new("spilled-decodes", "files");
    let (got, s, sources) = look_up(&paths, &qs, tight(1 << 30, Some(spill_dir.0.clone())));
    assert_eq!(
        got, want,
        "values equal those of a cache that holds everything"
    );
    assert!(s.peak_resident_bytes <= s.budget_bytes, "{s:#?}");
    assert!(s.evictions > 0, "the budget thrashes: {s:#?}");
    assert_eq!(s.decodes_spilled, u64::from(FILES), "{s:#?}");
    // Spilled textures are served as tiled ones: no decode charged after their spill.
    assert!(s.whole_decodes <= 2 * u64::from(FILES), "{s:#?}");
    for src in &sources {
        assert!(src.is_spilled() && !src.holds_decode());
        // The open's (twice where it had to make room for the tail), spilled since the
        // budget cannot keep it; none after.
        assert!(
            src.decodes() <= 2,
            "decoded {} times: {s:#?}",
            src.decodes()
        );
    }
    let level_bytes = decode_bytes();
    assert_eq!(s.spilled_bytes, level_bytes * u64::from(FILES));
    // The files are unnamed: nothing is left in the directory.
    assert_eq!(std::fs::read_dir(&spill_dir.0).unwrap().count(), 0);

    // Without spilling: the same values, decoded again at misses.
    let (got, none, sources) = look_up(&paths, &qs, tight(0, None));
    assert_eq!(got, want);
    assert_eq!((none.decodes_spilled, none.spilled_bytes), (0, 0));
    let decodes: u64 = sources.iter().map(|s| s.decodes()).sum();
    assert!(
        decodes > 10 * u64::from(FILES),
        "{decodes} decodes: {none:#?}"
    );

    // A limit below one decode spills nothing.
    let (got, small, _) = look_up(&paths, &qs[..200], tight(decode_bytes() - 1, None));
    assert_eq!(got, want[..200]);
    assert_eq!((small.decodes_spilled, small.spilled_bytes), (0, 0));
}

#[test]
fn a_directory_that_cannot_take_a_file_leaves_textures_decoded_again() {
    let dir = TestDir::new("spilled-decodes", "no-dir");
    let paths = pngs(&dir);
    let qs = queries(300);
    let (want, ..) = look_up(&paths, &qs, LoaderOptions::default());
    let missing = dir.path("no/such/directory");
    let (got, s, sources) = look_up(&paths, &qs, tight(1 << 30, Some(missing)));
    assert_eq!(got, want);
    assert_eq!((s.decodes_spilled, s.spilled_bytes), (0, 0), "{s:#?}");
    assert!(sources.iter().all(|s| !s.is_spilled()));
}

#[test]
fn generated_levels_of_scan_line_exrs_are_spilled_too() {
    let dir = TestDir::new("spilled-decodes", "exr");
    let paths: Vec<_> = (0..FILES)
        .map(|f| {
            let path = dir.path(&format!("scan{f}.exr"));
            exr::prelude::write_rgba_file(&path, SIZE.0 as usize, SIZE.1 as usize, |x, y| {
                ((x % 97) as f32, (y % 89) as f32, f as f32, 1.0f32)
            })
            .unwrap();
            path
        })
        .collect();
    let sources =
        || -> Vec<Arc<ExrSource>> { paths.iter().map(|p| Arc::new(ExrSource::new(p))).collect() };
    // Levels 1 and 2 only: the generated ones.
    let qs: Vec<_> = queries(600)
        .into_iter()
        .map(|(f, s, t, d)| (f, s, t, d * 2.0))
        .collect();
    let (want, _) = look_up_in(&sources(), &qs, LoaderOptions::default());
    let tight = LoaderOptions {
        max_texture_memory: 24 * TILE_BYTES as u64,
        ..tight(1 << 30, None)
    };
    let exrs = sources();
    let (got, s) = look_up_in(&exrs, &qs, tight);
    assert_eq!(got, want);
    assert!(s.evictions > 0 && s.decodes_spilled > 0, "{s:#?}");
    assert!(
        exrs.iter().any(|e| e.whole_decode().is_none()),
        "spilled ones need no decode"
    );
}

#[test]
fn files_gone_with_their_textures_make_room_under_the_limit() {
    let dir = TestDir::new("spilled-decodes", "room");
    let paths = pngs(&dir);
    let qs = queries(1200);
    let (want, ..) = look_up(&paths, &qs, LoaderOptions::default());
    // Room for two spill files at once.
    let cache = TextureCache::new(LoaderOptions {
        fill_threads: 2,
        ..tight(2 * decode_bytes(), None)
    })
    .unwrap();
    let ids: Vec<TextureId> = paths
        .iter()
        .map(|p| {
            let source = Arc::new(DecodedImageSource::new(p));
            cache
                .loader()
                .create_texture(source, TextureDesc::default())
                .unwrap()
        })
        .collect();
    let o = SampleOptions::default();
    let look_up_files = |files: std::ops::Range<usize>| {
        for (i, &(f, s, t, d)) in qs.iter().enumerate() {
            if files.contains(&f) {
                let r = cache.tex2d_grad(ids[f], s, t, [d, 0.0], [0.0, d], &o);
                assert_eq!(r.value, want[i], "query {i}");
            }
        }
    };
    look_up_files(0..3);
    let s = cache.stats();
    assert_eq!(
        (s.decodes_spilled, s.spilled_bytes),
        (2, 2 * decode_bytes()),
        "two files fit: {s:#?}"
    );
    // Unloaded textures drop their sources, and the sources their files (once no fill of
    // theirs runs).
    for &id in &ids[0..3] {
        cache.loader().unload_texture(id).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while cache.stats().spilled_bytes > 0 {
        assert!(std::time::Instant::now() < deadline, "{:#?}", cache.stats());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    look_up_files(3..6);
    let s = cache.stats();
    assert_eq!(
        (s.decodes_spilled, s.spilled_bytes),
        (4, 2 * decode_bytes()),
        "the files gone made room for two more: {s:#?}"
    );
}
