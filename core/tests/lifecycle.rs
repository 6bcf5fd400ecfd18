//! Texture lifecycle end to end: invalidate re-reads changed content, replace with another
//! size, unload gives the fallback colour and drops the source, fills of dropped contents
//! never publish (multi-pass and blocking), and the budget holds throughout.

use demandtex::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use demandtex::textures::{
    full_mip_levels, AddressMode, FilterMode, MipFilter, TexelFormat, TextureDesc, TileRegion,
};
use demandtex::{Error, Loader, LoaderOptions, SampleOptions, TextureCache, TextureId, TILE_BYTES};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

const TILE: u64 = TILE_BYTES as u64;

/// RGBA8 texels `[version, level, x, y]` (bytes), with `version` read when a read starts:
/// every tile and mip tail says which version of the content it was read from.
struct Versioned {
    width: u32,
    height: u32,
    version: AtomicU32,
    tile_reads: AtomicUsize,
    /// Holds tile reads (after they took their version) while armed.
    gate: Arc<Gate>,
    /// The same for mip-tail reads (`read_region`).
    tail_gate: Arc<Gate>,
    dropped: Arc<AtomicBool>,
}

/// Holds the next `n` tile reads (once armed) until released.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    to_hold: usize,
    held: usize,
    round: u64,
    released: u64,
}

impl Gate {
    /// Hold the next `n` tile reads.
    fn arm(&self, n: usize) {
        let mut s = self.state.lock().unwrap();
        s.to_hold = n;
        s.round += 1;
    }
    /// Let every held read go.
    fn release(&self) {
        let mut s = self.state.lock().unwrap();
        s.released = s.round;
        self.changed.notify_all();
    }
    fn pass(&self) {
        let mut s = self.state.lock().unwrap();
        if s.to_hold == 0 {
            return;
        }
        s.to_hold -= 1;
        s.held += 1;
        let round = s.round;
        while s.released < round {
            s = self.changed.wait(s).unwrap();
        }
    }
    /// Wait until `n` reads in all were held.
    fn wait_held(&self, n: usize) {
        for _ in 0..5000 {
            if self.state.lock().unwrap().held >= n {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("no read was held at the gate");
    }
}

impl Versioned {
    fn new(width: u32, height: u32, version: u32) -> Versioned {
        Versioned {
            width,
            height,
            version: AtomicU32::new(version),
            tile_reads: AtomicUsize::new(0),
            gate: Arc::default(),
            tail_gate: Arc::default(),
            dropped: Arc::new(AtomicBool::new(false)),
        }
    }

    fn write(&self, version: u32, r: TileRegion, dest: &mut [u8], row_bytes: usize) {
        for y in 0..r.height {
            for x in 0..r.width {
                let at = y as usize * row_bytes + x as usize * 4;
                dest[at..at + 4].copy_from_slice(&[
                    version as u8,
                    r.level as u8,
                    (r.x + x) as u8,
                    (r.y + y) as u8,
                ]);
            }
        }
    }
}

impl Drop for Versioned {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

impl ImageSource for Versioned {
    fn name(&self) -> String {
        format!("versioned {}×{}", self.width, self.height)
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        Ok(ImageInfo {
            width: self.width,
            height: self.height,
            format: TexelFormat::RGBA8,
            num_levels: full_mip_levels(self.width, self.height),
        })
    }
    fn read_region(
        &self,
        r: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let version = self.version.load(Ordering::SeqCst);
        self.tail_gate.pass();
        self.write(version, r, dest, row_bytes);
        Ok(Readiness::Ready)
    }
    fn read_tile(
        &self,
        r: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let version = self.version.load(Ordering::SeqCst);
        self.tile_reads.fetch_add(1, Ordering::SeqCst);
        self.gate.pass();
        self.write(version, r, dest, row_bytes);
        Ok(Readiness::Ready)
    }
}

/// Point sampling, so a lookup returns one texel exactly.
fn point() -> TextureDesc {
    TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        ..Default::default()
    }
}

fn options(budget: u64) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 64,
        max_texture_memory: budget,
        fill_threads: 2,
        ..Default::default()
    }
}

/// Texel `(x, y)` of `level` of a `width × height` texture: (s, t, lod).
fn at(width: u32, height: u32, level: u32, x: u32, y: u32) -> (f32, f32, f32) {
    let (w, h) = ((width >> level).max(1), (height >> level).max(1));
    (
        (x as f32 + 0.5) / w as f32,
        (y as f32 + 0.5) / h as f32,
        level as f32,
    )
}

/// The `[version, level, x, y]` bytes of a sampled value.
fn bytes(v: [f32; 4]) -> [u32; 4] {
    v.map(|c| (c * 255.0).round() as u32)
}

/// Launch until every lookup is resident; the values then.
fn converge(loader: &Loader, tex: TextureId, points: &[(f32, f32, f32)]) -> Vec<[u32; 4]> {
    for _ in 0..20 {
        let launch = loader.launch_prepare();
        let samples: Vec<_> = points
            .iter()
            .map(|&(s, t, lod)| launch.tex2d_lod(tex, s, t, lod, &SampleOptions::default()))
            .collect();
        if samples.iter().all(|s| s.resident) {
            return samples.iter().map(|s| bytes(s.value)).collect();
        }
        loader.process_requests(launch).wait();
    }
    panic!("did not converge");
}

#[test]
fn invalidate_drops_the_contents_and_the_next_lookups_read_the_new_version() {
    let loader = Loader::new(options(64 * TILE)).unwrap();
    let src = Arc::new(Versioned::new(512, 512, 1));
    let tex = loader.create_texture(src.clone(), point()).unwrap();
    // A tile of level 0, one of level 1, and the 1×1 level (in the mip tail).
    let points = [
        at(512, 512, 0, 300, 7),
        at(512, 512, 1, 3, 200),
        at(512, 512, 9, 0, 0),
    ];
    assert_eq!(
        converge(&loader, tex, &points),
        vec![[1, 0, 300 % 256, 7], [1, 1, 3, 200], [1, 9, 0, 0]]
    );
    let reads = src.tile_reads.load(Ordering::SeqCst);
    assert_eq!(reads, 2);
    let held = loader.stats().resident_bytes;

    src.version.store(2, Ordering::SeqCst);
    loader.invalidate_texture(tex).unwrap();
    assert!(loader.texture_layout(tex).is_none(), "reopened on demand");
    let launch = loader.launch_prepare();
    let (s, t, lod) = points[2];
    let miss = launch.tex2d_lod(tex, s, t, lod, &SampleOptions::default());
    assert!(!miss.resident, "nothing of the old contents is visible");
    assert_eq!(miss.value, [0.0; 4]);
    drop(launch);

    assert_eq!(
        converge(&loader, tex, &points),
        vec![[2, 0, 300 % 256, 7], [2, 1, 3, 200], [2, 9, 0, 0]]
    );
    assert_eq!(src.tile_reads.load(Ordering::SeqCst), reads + 2, "re-read");
    let stats = loader.stats();
    assert!(
        stats.resident_bytes <= held,
        "old memory was reused, not added to"
    );
    assert_eq!(stats.unowned_requests, 0);
    assert_eq!(stats.mip_tails_filled, 2);
    assert_eq!(stats.virtual_bytes, 512 * 512 * 4);
}

#[test]
fn replace_with_other_sizes_reads_only_the_new_source() {
    let loader = Loader::new(options(128 * TILE)).unwrap();
    let a = Arc::new(Versioned::new(256, 256, 1));
    let tex = loader.create_texture(a.clone(), point()).unwrap();
    assert_eq!(
        converge(&loader, tex, &[at(256, 256, 0, 200, 100)]),
        vec![[1, 0, 200, 100]]
    );

    // Larger: a new page range.
    let b = Arc::new(Versioned::new(1024, 512, 7));
    let clamp = TextureDesc {
        address: [AddressMode::Clamp; 2],
        ..point()
    };
    loader.replace_texture(tex, b.clone(), clamp).unwrap();
    assert_eq!(
        Arc::strong_count(&a),
        1,
        "the loader let go of the old source"
    );
    let points = [
        at(1024, 512, 0, 1000, 500),
        at(1024, 512, 2, 255, 1),
        (1.5, -0.5, 0.0), // clamped: texel (1023, 0)
    ];
    assert_eq!(
        converge(&loader, tex, &points),
        vec![
            [7, 0, 1000 % 256, 500 % 256],
            [7, 2, 255, 1],
            [7, 0, 1023 % 256, 0]
        ]
    );
    assert_eq!(loader.texture_layout(tex).unwrap().width, 1024);

    // Smaller: the range is reused.
    let c = Arc::new(Versioned::new(128, 64, 3));
    loader.replace_texture(tex, c, point()).unwrap();
    assert_eq!(
        converge(
            &loader,
            tex,
            &[at(128, 64, 0, 127, 63), at(128, 64, 1, 5, 6)]
        ),
        vec![[3, 0, 127, 63], [3, 1, 5, 6]]
    );
    let layout = loader.texture_layout(tex).unwrap();
    assert_eq!((layout.width, layout.height), (128, 64));
    assert_eq!(loader.texture_error(tex), None);
    let stats = loader.stats();
    assert_eq!(stats.unowned_requests, 0);
    assert!(stats.peak_resident_bytes <= 128 * TILE);
    assert_eq!(a.tile_reads.load(Ordering::SeqCst), 1);

    let bad = TextureDesc {
        max_anisotropy: 0,
        ..point()
    };
    assert!(matches!(
        loader.replace_texture(tex, Arc::new(Versioned::new(8, 8, 1)), bad),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        loader.invalidate_texture(TextureId(40)),
        Err(Error::UnknownTexture(TextureId(40)))
    ));
}

#[test]
fn the_page_range_is_reused_while_it_fits_and_a_failed_replacement_can_be_replaced() {
    // Virtual pages for one 512² RGBA8 texture (16 + 4 + 1 tiles and the tail) and 5 more.
    let loader = Loader::new(LoaderOptions {
        num_pages: (1 << 10) + 22 + 5,
        ..options(64 * TILE)
    })
    .unwrap();
    let src = Arc::new(Versioned::new(512, 512, 1));
    let tex = loader.create_texture(src.clone(), point()).unwrap();
    let p = [at(512, 512, 0, 500, 260), at(512, 512, 2, 127, 0)];
    for version in 1..=4 {
        src.version.store(version, Ordering::SeqCst);
        loader.invalidate_texture(tex).unwrap();
        let values = converge(&loader, tex, &p);
        assert_eq!(
            values,
            vec![[version, 0, 500 % 256, 4], [version, 2, 127, 0]]
        );
    }
    loader
        .replace_texture(tex, Arc::new(Versioned::new(512, 512, 8)), point())
        .unwrap();
    assert_eq!(converge(&loader, tex, &p)[0], [8, 0, 500 % 256, 4]);

    // Too large for the pages left: the texture fails (fallback colour), with the reason.
    let fallback = [0.0, 1.0, 0.0, 1.0];
    let desc = TextureDesc {
        fallback_color: fallback,
        ..point()
    };
    loader
        .replace_texture(tex, Arc::new(Versioned::new(1024, 1024, 9)), desc)
        .unwrap();
    let launch = loader.launch_prepare();
    assert!(
        !launch
            .tex2d(tex, 0.5, 0.5, &SampleOptions::default())
            .resident
    );
    loader.process_requests(launch).wait();
    let launch = loader.launch_prepare();
    let s = launch.tex2d(tex, 0.5, 0.5, &SampleOptions::default());
    assert_eq!((s.value, s.resident), (fallback, true));
    drop(launch);
    let error = loader.texture_error(tex).expect("failed").to_string();
    assert!(error.contains("out of virtual pages"), "{error}");

    // A failed texture can be replaced by one that fits.
    loader
        .replace_texture(tex, Arc::new(Versioned::new(256, 128, 5)), point())
        .unwrap();
    assert_eq!(loader.texture_error(tex), None);
    assert_eq!(
        converge(&loader, tex, &[at(256, 128, 0, 255, 127)]),
        vec![[5, 0, 255, 127]]
    );
    assert_eq!(loader.stats().unowned_requests, 0);
}

#[test]
fn unload_gives_the_fallback_colour_drops_the_source_and_returns_its_memory() {
    // Room for one 512² texture's tiles (16 at level 0) and tail, not two.
    let budget = 24 * TILE;
    let loader = Loader::new(options(budget)).unwrap();
    let src = Versioned::new(512, 512, 1);
    let dropped = src.dropped.clone();
    let fallback = [0.25, 0.5, 0.75, 1.0];
    let desc = TextureDesc {
        fallback_color: fallback,
        ..point()
    };
    let tex = loader.create_texture(Arc::new(src), desc).unwrap();
    let all: Vec<_> = (0..16)
        .map(|i| at(512, 512, 0, (i % 4) * 128 + 5, (i / 4) * 128 + 9))
        .collect();
    converge(&loader, tex, &all);

    let live = loader.launch_prepare();
    loader.unload_texture(tex).unwrap();
    assert!(
        dropped.load(Ordering::SeqCst),
        "no fill was running: dropped at once"
    );
    let s = live.tex2d(tex, 0.3, 0.3, &SampleOptions::default());
    assert_eq!(
        (s.value, s.resident),
        (fallback, true),
        "at once, in a live launch"
    );
    let whole = live.tex2d_grad(tex, 0.5, 0.5, [2.0, 0.0], [0.0, 2.0], &Default::default());
    assert_eq!((whole.value, whole.resident), (fallback, true));
    loader.process_requests(live).wait();

    assert_eq!(loader.texture_error(tex), Some(Error::Unloaded(tex)));
    assert_eq!(loader.invalidate_texture(tex), Err(Error::Unloaded(tex)));
    assert_eq!(
        loader.replace_texture(tex, Arc::new(Versioned::new(8, 8, 1)), point()),
        Err(Error::Unloaded(tex))
    );
    assert_eq!(loader.unload_texture(tex), Ok(()), "twice is fine");

    // Its memory came back: a second texture of the same size fits in the budget.
    let other = loader
        .create_texture(Arc::new(Versioned::new(512, 512, 5)), point())
        .unwrap();
    assert_ne!(other, tex, "ids are not reused");
    let values = converge(&loader, other, &all);
    assert!(values.iter().all(|v| v[0] == 5));
    let launch = loader.launch_prepare();
    let s = launch.tex2d(tex, 0.9, 0.1, &SampleOptions::default());
    assert_eq!((s.value, s.resident), (fallback, true));
    drop(launch);
    let stats = loader.stats();
    assert!(stats.peak_resident_bytes <= budget);
    assert_eq!(stats.deferred_no_memory, 0, "nothing waited for memory");
}

/// Poll `flag` for up to five seconds.
fn eventually(flag: &AtomicBool) -> bool {
    for _ in 0..5000 {
        if flag.load(Ordering::SeqCst) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

#[test]
fn a_fill_of_dropped_contents_never_publishes() {
    let loader = Loader::new(options(64 * TILE)).unwrap();
    let src = Arc::new(Versioned::new(512, 512, 1));
    let gate = src.gate.clone();
    let tex = loader.create_texture(src.clone(), point()).unwrap();
    let p = [at(512, 512, 0, 10, 20)];
    let opts = SampleOptions::default();
    let request = |loader: &Loader, (s, t, lod): (f32, f32, f32)| {
        let launch = loader.launch_prepare();
        assert!(!launch.tex2d_lod(tex, s, t, lod, &opts).resident);
        loader.process_requests(launch)
    };
    // Open the texture, then start the tile's fill and hold it with version 1.
    request(&loader, p[0]).wait();
    gate.arm(1);
    let stale = request(&loader, p[0]);
    gate.wait_held(1);

    // The content changes; the texture is reopened and the tile filled anew (version 2)
    // while the old fill is held.
    src.version.store(2, Ordering::SeqCst);
    loader.invalidate_texture(tex).unwrap();
    assert_eq!(converge(&loader, tex, &p), vec![[2, 0, 10, 20]]);
    assert!(!stale.is_done());
    gate.release();
    stale.wait();
    for _ in 0..3 {
        assert_eq!(
            converge(&loader, tex, &p),
            vec![[2, 0, 10, 20]],
            "the old fill published nothing"
        );
    }

    // Replace while a fill of the old source is held: the old source lives until it ends,
    // and what it read is never published into the new texture.
    gate.arm(1);
    let p2 = at(512, 512, 0, 400, 300);
    let stale = request(&loader, p2);
    gate.wait_held(2);
    loader
        .replace_texture(tex, Arc::new(Versioned::new(256, 256, 9)), point())
        .unwrap();
    let dropped = src.dropped.clone();
    drop(src);
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the held fill still reads it"
    );
    let new_points = [at(256, 256, 0, 144, 44), (p2.0, p2.1, 0.0)];
    // p2's texel of the new texture (its page held the old tile in the old layout).
    assert_eq!(
        converge(&loader, tex, &new_points),
        vec![[9, 0, 144, 44], [9, 0, 200, 150]]
    );
    gate.release();
    stale.wait();
    assert!(eventually(&dropped), "dropped once the held fill ended");
    assert_eq!(
        converge(&loader, tex, &new_points),
        vec![[9, 0, 144, 44], [9, 0, 200, 150]]
    );
    let stats = loader.stats();
    assert_eq!(stats.unowned_requests, 0);
    assert!(stats.peak_resident_bytes <= 64 * TILE);
}

#[test]
fn an_open_of_dropped_contents_never_publishes_its_sampler() {
    let loader = Loader::new(options(64 * TILE)).unwrap();
    let src = Arc::new(Versioned::new(512, 512, 1));
    let tex = loader.create_texture(src.clone(), point()).unwrap();
    // The first level of the mip tail.
    let tail = [at(512, 512, 3, 1, 0)];
    // Hold the first open in its mip-tail read, with version 1.
    src.tail_gate.arm(1);
    let launch = loader.launch_prepare();
    assert!(
        !launch
            .tex2d_lod(tex, 0.5, 0.5, 8.0, &SampleOptions::default())
            .resident
    );
    let stale = loader.process_requests(launch);
    src.tail_gate.wait_held(1);
    src.version.store(2, Ordering::SeqCst);
    loader.invalidate_texture(tex).unwrap();
    // The reopen (version 2) publishes; then the held open ends and must publish nothing.
    assert_eq!(converge(&loader, tex, &tail), vec![[2, 3, 1, 0]]);
    src.tail_gate.release();
    stale.wait();
    for _ in 0..3 {
        assert_eq!(converge(&loader, tex, &tail), vec![[2, 3, 1, 0]]);
    }
    assert_eq!(loader.stats().mip_tails_filled, 1, "one open was published");
    assert_eq!(loader.texture_layout(tex).unwrap().width, 512);
}

#[test]
fn blocking_lookups_never_publish_a_fill_of_dropped_contents() {
    let cache = TextureCache::new(options(64 * TILE)).unwrap();
    let src = Arc::new(Versioned::new(512, 512, 1));
    let gate = src.gate.clone();
    let tex = cache.create_texture(src.clone(), point()).unwrap();
    let (s, t, _) = at(512, 512, 0, 130, 250);
    let opts = SampleOptions::default();
    // Open the texture (its mip tail is not gated), then hold the tile read of a lookup.
    let coarse = cache.tex2d_lod(tex, 0.5, 0.5, 9.0, &opts);
    assert_eq!((bytes(coarse.value)[0], coarse.resident), (1, true));
    gate.arm(1);
    std::thread::scope(|scope| {
        let held = scope.spawn(|| cache.tex2d(tex, s, t, &opts));
        gate.wait_held(1);
        src.version.store(2, Ordering::SeqCst);
        cache.invalidate_texture(tex).unwrap();
        // Another thread reads the new version meanwhile.
        let fresh = cache.tex2d(tex, s, t, &opts);
        assert_eq!(
            (bytes(fresh.value), fresh.resident),
            ([2, 0, 130, 250], true)
        );
        gate.release();
        let late = held.join().unwrap();
        assert!(late.resident);
        assert_eq!(
            bytes(late.value),
            [2, 0, 130, 250],
            "the held read was discarded"
        );
    });
    let again = cache.tex2d(tex, s, t, &opts);
    assert_eq!(bytes(again.value), [2, 0, 130, 250]);

    // Replace and unload through the cache.
    cache
        .replace_texture(tex, Arc::new(Versioned::new(64, 64, 4)), point())
        .unwrap();
    let v = cache.tex2d(tex, 0.99, 0.01, &opts);
    assert_eq!(bytes(v.value), [4, 0, 63, 0]);
    let dropped = src.dropped.clone();
    drop(src);
    assert!(dropped.load(Ordering::SeqCst));
    cache.unload_texture(tex).unwrap();
    let f = cache.tex2d(tex, 0.5, 0.5, &opts);
    assert_eq!(
        (f.value, f.resident),
        (TextureDesc::default().fallback_color, true)
    );
    assert_eq!(cache.texture_error(tex), Some(Error::Unloaded(tex)));
}

#[test]
fn the_budget_holds_while_textures_are_invalidated_under_live_launches() {
    let budget = 20 * TILE;
    let loader = Loader::new(options(budget)).unwrap();
    let src = Arc::new(Versioned::new(1024, 1024, 1));
    let tex = loader.create_texture(src.clone(), point()).unwrap();
    // 8 tiles of level 0 and 4 of level 1 per frame (a working set of 12 tiles + tail).
    let points: Vec<_> = (0..8)
        .map(|i| at(1024, 1024, 0, i * 128 + 3, (i % 2) * 512 + 1))
        .chain((0..4).map(|i| at(1024, 1024, 1, i * 128 + 9, 77)))
        .collect();
    let opts = SampleOptions::default();
    for frame in 1..=12u32 {
        let launch = loader.launch_prepare();
        std::thread::scope(|scope| {
            for half in points.chunks(6) {
                let launch = &launch;
                scope.spawn(move || {
                    for _ in 0..50 {
                        for &(s, t, lod) in half {
                            let v = launch.tex2d_lod(tex, s, t, lod, &opts);
                            let version = bytes(v.value)[0];
                            assert!(!v.resident || (1..=frame).contains(&version), "{v:?}");
                        }
                    }
                });
            }
            if frame % 3 == 0 {
                src.version.store(frame, Ordering::SeqCst);
                loader.invalidate_texture(tex).unwrap();
            }
        });
        loader.process_requests(launch).wait();
        assert!(loader.stats().resident_bytes <= budget);
    }
    let values = converge(&loader, tex, &points);
    assert!(values.iter().all(|v| v[0] == 12), "{values:?}");
    let stats = loader.stats();
    assert!(stats.peak_resident_bytes <= budget, "{stats:?}");
    assert_eq!(stats.unowned_requests, 0);
}
