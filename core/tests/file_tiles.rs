//! Pages filled file tile by file tile (`LoaderOptions::fill_by_file_tile`): a blocking
//! cache over files whose tiles are smaller than a page (maketx's 64×64 in OpenEXR and
//! `.tx`) publishes pages unread and lookups read the file tiles they touch in place. The
//! values equal a cache that reads whole pages, under eviction and from many threads; each
//! file tile is read once while its page stays; bytes read fall to the file tiles used; a
//! failing file tile fails the texture with its error; multi-pass launches on the same
//! loader read missing file tiles too. (These loaders give every texture full pages; by
//! default such files get pages of their tiles' size: `file_tile_pages.rs`.)

use demandtex::sampling::SampleOptions;
use demandtex::sources::{file_source, ImageInfo, ImageSource, Readiness, SourceError};
use demandtex::textures::{TextureDesc, TileRegion};
use demandtex::{Loader, LoaderOptions, TextureCache, TILE_BYTES};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod common;

use common::spread_queries as queries;

/// A 700×500 RGBA image, every texel distinct, written with 64×64 tiles (half).
fn exr_64(name: &str) -> PathBuf {
    let path = common::temp_file("file-tiles", name);
    common::distinct_exr(&path, (64, 64));
    path
}

fn options(budget_pages: u64, by_file_tile: bool) -> LoaderOptions {
    LoaderOptions {
        max_texture_memory: budget_pages * TILE_BYTES as u64,
        fill_threads: 1,
        fill_by_file_tile: by_file_tile,
        // Full pages, to cut into file tiles (pages of the file's tiles: file_tile_pages.rs).
        pages_of_file_tiles: false,
        ..Default::default()
    }
}

#[test]
fn values_equal_whole_page_reads_and_bytes_fall_to_the_file_tiles_used() {
    let path = exr_64("values.exr");
    let o = SampleOptions::default();
    let qs = queries(3000);
    let eager = TextureCache::new(options(4096, false)).unwrap();
    let lazy = TextureCache::new(options(4096, true)).unwrap();
    let (te, tl) = (
        eager
            .texture_for_path(&path, TextureDesc::default())
            .unwrap(),
        lazy.texture_for_path(&path, TextureDesc::default())
            .unwrap(),
    );
    for &(s, t, dx, dy) in &qs[..200] {
        let a = eager.tex2d_grad(te, s, t, dx, dy, &o);
        let b = lazy.tex2d_grad(tl, s, t, dx, dy, &o);
        assert!(a.resident && b.resident);
        assert_eq!(a, b, "({s}, {t})");
    }
    let (se, sl) = (eager.stats(), lazy.stats());
    assert_eq!(se.tiles_published_unread, 0);
    assert_eq!(se.file_tiles_filled, 0);
    assert_eq!(
        sl.tiles_published_unread, sl.tiles_filled,
        "every page published unread"
    );
    assert!(sl.file_tiles_filled > 0);
    assert!(
        sl.bytes_read < se.bytes_read,
        "file tiles used {} < whole pages {}",
        sl.bytes_read,
        se.bytes_read
    );
    // 128×64 half RGBA pages hold two 64×64 file tiles: at most twice the file tiles.
    assert!(sl.file_tiles_filled <= 2 * sl.tiles_filled);
    // A file tile is read once while its page stays (no eviction in this budget).
    let filled = sl.file_tiles_filled;
    for &(s, t, dx, dy) in &qs[..200] {
        lazy.tex2d_grad(tl, s, t, dx, dy, &o);
    }
    assert_eq!(lazy.stats().file_tiles_filled, filled);
}

#[test]
fn many_threads_under_eviction_read_what_whole_pages_give() {
    let path = exr_64("threads.exr");
    let o = SampleOptions::default();
    let qs = queries(4000);
    let eager = TextureCache::new(options(4096, false)).unwrap();
    let te = eager
        .texture_for_path(&path, TextureDesc::default())
        .unwrap();
    let want: Vec<[f32; 4]> = qs
        .iter()
        .map(|&(s, t, dx, dy)| eager.tex2d_grad(te, s, t, dx, dy, &o).value)
        .collect();
    // A budget of a fraction of the texture's pages: pages are evicted and refilled. (A
    // lookup may still find its footprint fought over by the other threads and settle
    // for a coarser level, reported non-resident, as with whole pages: only resident
    // results are compared.)
    let lazy = TextureCache::new(options(24, true)).unwrap();
    let tl = lazy
        .texture_for_path(&path, TextureDesc::default())
        .unwrap();
    let resident = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for k in 0..4 {
            let (lazy, qs, want, resident) = (&lazy, &qs, &want, &resident);
            scope.spawn(move || {
                for (i, &(s, t, dx, dy)) in qs.iter().enumerate().skip(k).step_by(4) {
                    let got = lazy.tex2d_grad(tl, s, t, dx, dy, &o);
                    if got.resident {
                        assert_eq!(got.value, want[i], "query {i}");
                        resident.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert!(resident.into_inner() > 0);
    let stats = lazy.stats();
    assert!(stats.evictions > 0, "{stats:?}");
    assert!(stats.file_tiles_filled > 0);
    assert!(stats.resident_bytes <= stats.budget_bytes);
    assert_eq!(stats.failed_textures, 0);
}

/// Another source's texels, counting region reads per file tile and failing on those
/// listed.
struct Counting {
    inner: Arc<dyn ImageSource>,
    reads: Mutex<HashMap<(u32, u32, u32), usize>>,
    fail_level: Option<u32>,
}

impl ImageSource for Counting {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        self.inner.open()
    }
    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        *self
            .reads
            .lock()
            .unwrap()
            .entry((region.level, region.x, region.y))
            .or_default() += 1;
        if self.fail_level == Some(region.level) && region.width <= 64 {
            return Err(SourceError("injected file tile failure".into()));
        }
        self.inner.read_region(region, dest, row_bytes)
    }
    fn file_tile(&self, level: u32) -> Option<(u32, u32)> {
        self.inner.file_tile(level)
    }
}

fn counting(path: &Path, fail_level: Option<u32>) -> Arc<Counting> {
    Arc::new(Counting {
        inner: file_source(path),
        reads: Mutex::new(HashMap::new()),
        fail_level,
    })
}

#[test]
fn concurrent_misses_read_a_file_tile_once() {
    let path = exr_64("once.exr");
    let source = counting(&path, None);
    let cache = TextureCache::new(options(4096, true)).unwrap();
    let tex = cache
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|scope| {
        for k in 0..8 {
            let (cache, barrier) = (&cache, &barrier);
            scope.spawn(move || {
                barrier.wait();
                // Everyone looks at the same texels of level 0, then at their own.
                for i in 0..50u32 {
                    let s = ((i * 37) % 700) as f32 / 700.0 + 0.0001;
                    let t = ((i * 53 + k * 3) % 500) as f32 / 500.0 + 0.0001;
                    let r = cache.tex2d_grad(tex, s, t, [1e-4, 0.0], [0.0, 1e-4], &o);
                    assert!(r.resident);
                }
            });
        }
    });
    let reads = source.reads.lock().unwrap();
    let most = reads.values().copied().max().unwrap_or(0);
    assert_eq!(most, 1, "a file tile read twice: {reads:?}");
    assert_eq!(
        cache.stats().file_tiles_filled as usize,
        reads.keys().filter(|k| k.0 == 0).count(),
        "level-0 reads are file tiles"
    );
}

#[test]
fn a_failing_file_tile_fails_the_texture_with_its_error() {
    let path = exr_64("fail.exr");
    let cache = TextureCache::new(options(4096, true)).unwrap();
    let desc = TextureDesc {
        fallback_color: [1.0, 0.0, 1.0, 1.0],
        ..TextureDesc::default()
    };
    let tex = cache
        .create_texture(counting(&path, Some(0)), desc)
        .unwrap();
    let o = SampleOptions::default();
    let r = cache.tex2d_grad(tex, 0.3, 0.3, [1e-4, 0.0], [0.0, 1e-4], &o);
    assert!(!r.resident || r.value == [1.0, 0.0, 1.0, 1.0], "{r:?}");
    let r = cache.tex2d_grad(tex, 0.3, 0.3, [1e-4, 0.0], [0.0, 1e-4], &o);
    assert_eq!(
        r.value,
        [1.0, 0.0, 1.0, 1.0],
        "the fallback colour once failed: {:?}",
        cache.stats()
    );
    let e = cache.texture_error(tex).expect("the error is kept");
    assert!(e.to_string().contains("injected file tile failure"), "{e}");
    assert_eq!(cache.stats().failed_textures, 1);
}

#[test]
fn multi_pass_launches_read_missing_file_tiles_of_pages_a_blocking_fill_published() {
    let path = exr_64("shared.exr");
    let loader = Loader::new(options(4096, true)).unwrap();
    let cache = TextureCache::from_loader(&loader);
    let tex = cache
        .texture_for_path(&path, TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    let qs = queries(300);
    // Blocking lookups publish pages unread and fill some of their file tiles.
    for &(s, t, dx, dy) in qs.iter().step_by(2) {
        cache.tex2d_grad(tex, s, t, dx, dy, &o);
    }
    let whole = TextureCache::new(options(4096, false)).unwrap();
    let tw = whole
        .texture_for_path(&path, TextureDesc::default())
        .unwrap();
    // A launch sees those pages and reads what it lacks; misses converge as usual.
    for &q @ (s, t, dx, dy) in &qs {
        let got = common::converged_grad(&loader, tex, q, &o);
        assert_eq!(got, whole.tex2d_grad(tw, s, t, dx, dy, &o), "({s}, {t})");
    }
}

#[test]
fn maketx_tiles_smaller_than_a_page_are_filled_one_by_one() {
    // maketx's 64×64 tiles of 8-bit RGB, served as RGBA: four to a 128×128 page.
    let tx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx/rgb8_zip.tx");
    let o = SampleOptions::default();
    let eager = TextureCache::new(options(4096, false)).unwrap();
    let lazy = TextureCache::new(options(4096, true)).unwrap();
    let (te, tl) = (
        eager.texture_for_path(&tx, TextureDesc::default()).unwrap(),
        lazy.texture_for_path(&tx, TextureDesc::default()).unwrap(),
    );
    for i in 0..60u32 {
        let (s, t) = ((i * 7 % 200) as f32 / 200.0, (i * 11 % 136) as f32 / 136.0);
        let (a, b) = (
            eager.tex2d_grad(te, s, t, [1e-3, 0.0], [0.0, 1e-3], &o),
            lazy.tex2d_grad(tl, s, t, [1e-3, 0.0], [0.0, 1e-3], &o),
        );
        assert_eq!(a, b);
    }
    let s = lazy.stats();
    assert!(
        s.tiles_published_unread > 0 && s.file_tiles_filled > 0,
        "{s:?}"
    );
}
