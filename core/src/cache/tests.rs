//! Blocking-mode tests: values equal those of an unbudgeted cache, one read per tile under
//! concurrent misses, and a stress test of eviction under 8 threads with a budget of a few
//! tiles.

use super::*;
use crate::sources::ImageSource;
use crate::sources::{ImageInfo, Noise, Readiness, SourceError};
use crate::textures::{AddressMode, TexelFormat, TexelType, TileRegion};
use crate::udim::UdimGrid;
use std::collections::HashMap as Map;
use std::sync::atomic::AtomicUsize;
use std::sync::{Barrier, Mutex};

/// A source that counts reads per tile and can be slowed down.
struct Counting {
    inner: Noise,
    reads: Mutex<Map<(u32, u32, u32), usize>>,
    tail_reads: AtomicUsize,
    delay_ms: u64,
}

impl Counting {
    fn new(size: u32, delay_ms: u64) -> Arc<Counting> {
        Arc::new(Counting {
            inner: Noise::new(size, size, 7, TexelFormat::RGBA8),
            reads: Mutex::new(Map::new()),
            tail_reads: AtomicUsize::new(0),
            delay_ms,
        })
    }

    fn max_reads_of_one_tile(&self) -> usize {
        self.reads
            .lock()
            .unwrap()
            .values()
            .copied()
            .max()
            .unwrap_or(0)
    }
}

impl ImageSource for Counting {
    fn name(&self) -> String {
        "counting noise".into()
    }
    fn open(&self) -> std::result::Result<ImageInfo, SourceError> {
        self.inner.open()
    }
    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> std::result::Result<Readiness, SourceError> {
        self.tail_reads.fetch_add(1, Ordering::Relaxed);
        self.inner.read_region(region, dest, row_bytes)
    }
    fn read_tile(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> std::result::Result<Readiness, SourceError> {
        *self
            .reads
            .lock()
            .unwrap()
            .entry((region.level, region.x, region.y))
            .or_default() += 1;
        if self.delay_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(self.delay_ms));
        }
        self.inner.read_region(region, dest, row_bytes)
    }
}

fn options(budget_bytes: u64) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 256,
        max_texture_memory: budget_bytes,
        fill_threads: 1,
        ..Default::default()
    }
}

/// A deterministic spread of lookups: positions, footprints from level 0 to the tail.
fn query(i: u32) -> (f32, f32, [f32; 2], [f32; 2]) {
    let h = i.wrapping_mul(2_654_435_761).rotate_left(13) ^ i.wrapping_mul(40_503);
    let s = (h & 0xffff) as f32 / 65536.0;
    let t = (h >> 16) as f32 / 65536.0;
    let scale = 2f32.powi((i % 9) as i32) / 2048.0;
    (s, t, [scale, 0.0], [0.0, scale * 0.75])
}

#[test]
fn blocking_lookups_equal_the_unbudgeted_ones_and_fill_nothing_twice() {
    let reference = TextureCache::new(options(256 << 20)).unwrap();
    let cache = TextureCache::new(options(256 << 20)).unwrap();
    let ref_tex = reference
        .create_texture(Counting::new(2048, 0), TextureDesc::default())
        .unwrap();
    let src = Counting::new(2048, 0);
    let tex = cache
        .create_texture(src.clone(), TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    for i in 0..2000 {
        let (s, t, dx, dy) = query(i);
        let a = cache.tex2d_grad(tex, s, t, dx, dy, &o);
        assert!(a.resident, "query {i}");
        // The reference answers the same query after warming with it twice.
        reference.tex2d_grad(ref_tex, s, t, dx, dy, &o);
        let b = reference.tex2d_grad(ref_tex, s, t, dx, dy, &o);
        assert_eq!(a, b, "query {i}");
    }
    // Multi-pass reference over a third loader: the same values.
    let loader = Loader::new(options(256 << 20)).unwrap();
    let mp_tex = loader
        .create_texture(Counting::new(2048, 0), TextureDesc::default())
        .unwrap();
    let (s, t, dx, dy) = query(17);
    let mp = loop {
        let launch = loader.launch_prepare();
        let r = launch.tex2d_grad(mp_tex, s, t, dx, dy, &o);
        if r.resident {
            break r;
        }
        loader.process_requests(launch).wait();
    };
    assert_eq!(mp, cache.tex2d_grad(tex, s, t, dx, dy, &o));
    assert_eq!(src.max_reads_of_one_tile(), 1, "no tile read twice");
    let stats = cache.stats();
    assert_eq!(stats.tiles_filled as usize, src.reads.lock().unwrap().len());
    assert_eq!(stats.mip_tails_filled, 1);
    assert_eq!(stats.blocking_fallbacks, 0);
}

#[test]
fn concurrent_misses_on_one_tile_read_it_once() {
    let cache = TextureCache::new(options(64 << 20)).unwrap();
    let src = Counting::new(4096, 30);
    let tex = cache
        .create_texture(src.clone(), TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    let barrier = Barrier::new(8);
    let values: Vec<Sample> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    cache.tex2d_lod(tex, 0.4, 0.6, 0.0, &o)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(values.iter().all(|v| v.resident && *v == values[0]));
    assert_eq!(src.max_reads_of_one_tile(), 1);
    let stats = cache.stats();
    assert_eq!(stats.mip_tails_filled, 1, "the texture was opened once");
    assert!(stats.fill_waits >= 1, "someone waited: {stats:?}");
}

#[test]
fn eight_threads_with_a_budget_of_a_few_tiles_stay_correct_and_in_budget() {
    let size = 2048;
    let src = Counting::new(size, 0);
    // Mip tail of a 2048² RGBA8 texture (256² tiles): levels 128² and below, ≈ 87 KiB.
    let probe = crate::textures::TextureLayout::new(size, size, 12, TexelFormat::RGBA8).unwrap();
    let budget = probe.mip_tail_bytes + 6 * crate::TILE_BYTES as u64;
    let cache = TextureCache::new(options(budget)).unwrap();
    let reference = TextureCache::new(options(256 << 20)).unwrap();
    let desc = TextureDesc {
        address: [AddressMode::Wrap, AddressMode::Clamp],
        ..TextureDesc::default()
    };
    let tex = cache.create_texture(src.clone(), desc).unwrap();
    let ref_tex = reference
        .create_texture(Counting::new(size, 0), desc)
        .unwrap();
    let o = SampleOptions::default();
    let mismatches = AtomicUsize::new(0);
    let resolved = AtomicUsize::new(0);
    let per_thread = 600;
    std::thread::scope(|scope| {
        for th in 0..8u32 {
            let (cache, reference, mismatches, resolved) =
                (&cache, &reference, &mismatches, &resolved);
            scope.spawn(move || {
                for i in 0..per_thread {
                    let (s, t, dx, dy) = query(th * 100_003 + i);
                    let a = cache.tex2d_grad(tex, s, t, dx, dy, &o);
                    let b = reference.tex2d_grad(ref_tex, s, t, dx, dy, &o);
                    if a.resident {
                        resolved.fetch_add(1, Ordering::Relaxed);
                        if a.value != b.value {
                            mismatches.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let stats = cache.stats();
    assert_eq!(
        mismatches.load(Ordering::Relaxed),
        0,
        "torn or wrong tiles: {stats:?}"
    );
    assert!(stats.peak_resident_bytes <= budget, "{stats:?}");
    assert!(stats.evictions > 0 && stats.clock_sweeps > 0, "{stats:?}");
    let resolved = resolved.load(Ordering::Relaxed);
    // Six tiles cannot hold eight footprints at once: some lookups settle for a coarser
    // level, but most get through.
    assert!(
        resolved >= 8 * per_thread as usize * 8 / 10,
        "{resolved} of {} lookups resolved: {stats:?}",
        8 * per_thread
    );
}

/// A lookup whose fill must reuse memory that a descheduled thread's lookup still pins
/// waits for it to unpin (the pinning thread needs nothing from the filler) instead of
/// settling for a coarser level: whether it gets its texels must not depend on how the
/// scheduler treats the other thread. Before, a fill gave up after 10,000 yields, and a
/// thread pinned for longer than eight of those made the lookup fall back.
#[test]
fn a_fill_waits_for_a_descheduled_lookup_instead_of_settling_for_less() {
    let size = 2048;
    let probe = crate::textures::TextureLayout::new(size, size, 12, TexelFormat::RGBA8).unwrap();
    let budget = probe.mip_tail_bytes + 2 * crate::TILE_BYTES as u64;
    let cache = TextureCache::new(options(budget)).unwrap();
    let reference = TextureCache::new(options(256 << 20)).unwrap();
    let tex = cache
        .create_texture(Counting::new(size, 0), TextureDesc::default())
        .unwrap();
    let ref_tex = reference
        .create_texture(Counting::new(size, 0), TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    // Two level-0 tiles fill the budget.
    for s in [0.05, 0.3] {
        assert!(cache.tex2d_lod(tex, s, 0.05, 0.0, &o).resident);
    }
    let engine = cache.loader().engine();
    let pinned = Barrier::new(2);
    let held = std::time::Duration::from_millis(400);
    let (sample, waited) = std::thread::scope(|scope| {
        scope.spawn(|| {
            // A lookup in progress on a thread the scheduler left alone for 400 ms.
            let pin = engine.epochs.register_thread();
            let _guard = engine.epochs.pin_thread(&pin);
            pinned.wait();
            std::thread::sleep(held);
        });
        pinned.wait();
        let start = std::time::Instant::now();
        // A third tile: its fill evicts one of the two, whose memory the pin holds.
        let sample = cache.tex2d_lod(tex, 0.8, 0.8, 0.0, &o);
        (sample, start.elapsed())
    });
    assert!(sample.resident, "settled for less after {waited:?}");
    assert_eq!(sample, reference.tex2d_lod(ref_tex, 0.8, 0.8, 0.0, &o));
    assert!(waited >= held / 2, "the fill did not wait: {waited:?}");
    let stats = cache.stats();
    assert_eq!(stats.blocking_fallbacks, 0, "{stats:?}");
    assert!(stats.peak_resident_bytes <= budget, "{stats:?}");
}

#[test]
fn missing_files_give_the_fallback_colour_and_say_why() {
    let cache = TextureCache::new(options(16 << 20)).unwrap();
    let path = std::env::temp_dir().join("demandtex-no-such-file.exr");
    let desc = TextureDesc {
        fallback_color: [0.25, 0.5, 0.75, 1.0],
        ..TextureDesc::default()
    };
    let id = cache.texture_for_path(&path, desc).unwrap();
    assert_eq!(
        cache
            .texture_for_path(&path, TextureDesc::default())
            .unwrap(),
        id
    );
    let o = SampleOptions::default();
    let s = cache.tex2d_grad(id, 0.5, 0.5, [0.01, 0.0], [0.0, 0.01], &o);
    assert_eq!(s.value, [0.25, 0.5, 0.75, 1.0]);
    assert!(s.resident);
    let err = cache.texture_error(id).unwrap().to_string();
    assert!(err.contains("demandtex-no-such-file.exr"), "{err}");
    // By path: the same texture, the default fallback for the first registration's desc.
    let by_path = cache.tex2d_grad_path(&path, 0.5, 0.5, [0.01, 0.0], [0.0, 0.01], &o);
    assert_eq!(by_path.value, [0.25, 0.5, 0.75, 1.0]);
    assert_eq!(cache.stats().textures, 1);
}

#[test]
fn unknown_ids_and_bad_coordinates_never_block() {
    let cache = TextureCache::new(options(16 << 20)).unwrap();
    let tex = cache
        .create_texture(Counting::new(512, 0), TextureDesc::default())
        .unwrap();
    let o = SampleOptions::default();
    assert_eq!(
        cache.tex2d(TextureId(100_000), 0.5, 0.5, &o).value,
        DEFAULT_FALLBACK_COLOR
    );
    let unknown = cache.tex2d(TextureId(200), 0.5, 0.5, &o);
    assert_eq!(unknown.value, DEFAULT_FALLBACK_COLOR);
    let nan = cache.tex2d_grad(tex, f32::NAN, 0.5, [0.1, 0.0], [0.0, 0.1], &o);
    assert!(nan.value.iter().all(|v| v.is_finite()));
}

#[test]
fn udim_lookups_block_until_their_tile_is_loaded() {
    let cache = TextureCache::new(options(64 << 20)).unwrap();
    let tile =
        |seed| Arc::new(Noise::new(512, 256, seed, TexelFormat::RGBA8)) as Arc<dyn ImageSource>;
    let grid = UdimGrid {
        width: 2,
        height: 2,
        tiles: vec![Some(tile(1)), None, Some(tile(2)), Some(tile(3))],
        base: None,
    };
    let udim = cache.create_udim_texture(grid, udim::tile_desc()).unwrap();
    let alone = cache.create_texture(tile(3), udim::tile_desc()).unwrap();
    let o = SampleOptions::default();
    let g = ([1.0 / 300.0, 0.0], [0.0, 1.0 / 200.0]);
    for &(s, t) in &[(1.25, 1.5), (1.999, 1.001), (1.0, 1.0)] {
        let a = cache.tex2d_grad_udim(udim, s, t, g.0, g.1, &o);
        let b = cache.tex2d_grad(alone, s - 1.0, t - 1.0, g.0, g.1, &o);
        assert!(a.resident && b.resident);
        assert_eq!(a.value, b.value, "({s}, {t})");
    }
    let hole = cache.tex2d_grad_udim(udim, 1.5, 0.5, g.0, g.1, &o);
    assert_eq!(hole.value, [0.0; 4]);
    assert!(hole.resident);
}

#[test]
fn derivatives_of_a_ramp_are_its_slopes_through_levels_and_anisotropy() {
    // R = s, G = t, B = 2s − t at texel centres: every mip level (a box of a ramp) is the
    // same ramp, so wherever the footprint stays inside, ∂/∂s = (1, 0, 2, 0) and
    // ∂/∂t = (0, 1, −1, 0) whatever the level, blend or probes.
    let (w, h) = (512u32, 256u32);
    let pixels: Vec<[f32; 4]> = (0..w * h)
        .map(|i| {
            let s = ((i % w) as f32 + 0.5) / w as f32;
            let t = ((i / w) as f32 + 0.5) / h as f32;
            [s, t, 2.0 * s - t, 1.0]
        })
        .collect();
    let src =
        crate::sources::InMemoryImage::from_rgba_f32(w, h, TexelFormat::RGBA32F, &pixels, true)
            .unwrap();
    let cache = TextureCache::new(options(64 << 20)).unwrap();
    let desc = TextureDesc {
        max_anisotropy: 8,
        ..TextureDesc::default()
    };
    let tex = cache.create_texture(Arc::new(src), desc).unwrap();
    let o = SampleOptions::default();
    for i in 0..400u32 {
        let (s, t, _, _) = query(i);
        let (s, t) = (0.3 + 0.4 * s, 0.3 + 0.4 * t);
        let scale = 2f32.powi((i % 6) as i32) / 1024.0;
        let stretch = 1.0 + (i % 5) as f32 * 1.7;
        let (ddx, ddy) = ([scale * stretch, scale * 0.3], [-scale * 0.2, scale]);
        let d = cache.tex2d_grad_with_derivatives(tex, s, t, ddx, ddy, &o);
        let plain = cache.tex2d_grad(tex, s, t, ddx, ddy, &o);
        assert!(d.sample.resident);
        assert_eq!(d.sample, plain, "the value is tex2d_grad's");
        let what = format!("({s}, {t}) ddx {ddx:?} ddy {ddy:?}");
        for (got, want) in [(d.ds, [1.0, 0.0, 2.0, 0.0]), (d.dt, [0.0, 1.0, -1.0, 0.0])] {
            for k in 0..4 {
                assert!(
                    (got[k] - want[k]).abs() < 1e-3,
                    "{what}: {got:?}, want {want:?}"
                );
            }
        }
    }
}

#[test]
fn texture_info_opens_the_file_and_says_what_openimageio_s_get_texture_info_says() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx");
    let cache = TextureCache::new(options(16 << 20)).unwrap();
    let o = SampleOptions::default();
    // maketx files: (name, width, height, channels served, texel type, levels), and their
    // `oiio:AverageColor` as `iinfo -v` prints it (kept in halfs).
    let cases = [
        (
            ("rgb8_zip.tx", 200, 136, 4, TexelType::U8, 8),
            [0.699765, 0.649882, 0.6, 1.0],
        ),
        (
            ("gray_float.tx", 130, 70, 1, TexelType::F32, 8),
            [1.425, 1.425, 1.425, 1.0],
        ),
        (
            ("const.tx", 64, 64, 4, TexelType::U8, 7),
            [0.25, 0.5, 0.75, 1.0],
        ),
    ];
    for (want, average) in cases {
        let name = want.0;
        let tex = cache
            .texture_for_path(fixtures.join(name), TextureDesc::default())
            .unwrap();
        assert_eq!(cache.texture_layout(tex), None, "{name}: not opened before");
        let info = cache.texture_info(tex).unwrap();
        let got = (name, info.width, info.height, info.channels);
        assert_eq!(
            (got, info.texel_type, info.num_levels),
            ((want.0, want.1, want.2, want.3), want.4, want.5)
        );
        let got = info.average_color.unwrap();
        for k in 0..4 {
            assert!(
                (got[k] - average[k]).abs() < 2e-3,
                "{name}: {got:?}, want {average:?}"
            );
        }
        // Opened now: a lookup needs no open.
        assert!(cache.tex2d(tex, 0.5, 0.5, &o).resident);
    }
    let missing = cache
        .texture_for_path(fixtures.join("no-such-file.tx"), TextureDesc::default())
        .unwrap();
    let e = cache.texture_info(missing).unwrap_err();
    assert!(e.to_string().contains("no-such-file.tx"), "{e}");
    assert!(matches!(
        cache.texture_info(TextureId(999)),
        Err(crate::Error::UnknownTexture(TextureId(999)))
    ));
    let tex = cache
        .texture_for_path(fixtures.join("rgb8_zip.tx"), TextureDesc::default())
        .unwrap();
    cache.unload_texture(tex).unwrap();
    assert!(
        cache.texture_info(tex).is_err(),
        "an unloaded texture has no info"
    );
}
