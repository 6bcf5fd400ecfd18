//! Interactive streaming seen from a renderer's loop: probabilistic request rejection
//! (deterministic per request key), and the frame that never waits.

use demandtex::sources::Checkerboard;
use demandtex::textures::TexelFormat;
use demandtex::{Loader, LoaderOptions, SampleOptions, StreamingMode, TextureDesc, TextureId};
use std::sync::Arc;

const SIDE: u32 = 8192;

fn loader(mode: StreamingMode, rejection: Option<bool>) -> (Loader, TextureId) {
    loader_with(LoaderOptions {
        fill_threads: 1,
        // Misses outlive a launch: later launches have a rejection probability.
        max_requests_per_launch: 8,
        mode,
        request_rejection: rejection,
        ..small_options()
    })
}

/// Small bookkeeping and a 64 MiB budget.
fn small_options() -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 16,
        max_texture_memory: 64 << 20,
        ..LoaderOptions::default()
    }
}

/// A loader with `options` and one `SIDE`² checkerboard, open (in interactive mode).
fn loader_with(options: LoaderOptions) -> (Loader, TextureId) {
    let mode = options.mode;
    let loader = Loader::new(options).unwrap();
    let source = Arc::new(Checkerboard::new(SIDE, SIDE, 64, TexelFormat::RGBA8));
    let id = loader
        .create_texture(source, TextureDesc::default())
        .unwrap();
    if mode == StreamingMode::Interactive {
        wait_open(&loader, id);
    }
    (loader, id)
}

/// One frame of `n × n` pixels sampling level 0 at pixel centres (key = pixel index),
/// each pixel's footprint 8 texels wide so that many pixels share a tile. Returns the
/// pages requested (the ticket's tasks) after waiting for the fills.
fn frame(loader: &Loader, id: TextureId, n: u32) -> usize {
    let launch = loader.launch_prepare();
    let g = 8.0 / SIDE as f32;
    for y in 0..n {
        for x in 0..n {
            let options = SampleOptions {
                request_key: y * n + x,
                ..SampleOptions::default()
            };
            let (s, t) = ((x as f32 + 0.5) / n as f32, (y as f32 + 0.5) / n as f32);
            launch.tex2d_grad(id, s, t, [g, 0.0], [0.0, g], &options);
        }
    }
    let ticket = loader.process_requests(launch);
    ticket.wait();
    ticket.tasks_total()
}

#[test]
fn interactive_mode_rejects_requests_from_the_second_launch_on_final_mode_never() {
    let (final_loader, id) = loader(StreamingMode::Final, None);
    let (interactive, id2) = loader(StreamingMode::Interactive, None);
    for _ in 0..3 {
        frame(&final_loader, id, 64);
        frame(&interactive, id2, 64);
    }
    assert_eq!(final_loader.stats().requests_rejected, 0);
    let s = interactive.stats();
    assert!(s.requests_rejected > 0, "{s:?}");
    // Rejection can be turned off in interactive mode.
    let (off, id3) = loader(StreamingMode::Interactive, Some(false));
    for _ in 0..3 {
        frame(&off, id3, 64);
    }
    assert_eq!(off.stats().requests_rejected, 0);
}

#[test]
fn rejection_is_reproducible() {
    let run = || {
        let (l, id) = loader(StreamingMode::Interactive, None);
        let tasks: Vec<usize> = (0..4).map(|_| frame(&l, id, 48)).collect();
        (tasks, l.stats().requests_rejected, l.stats().requests)
    };
    assert_eq!(run(), run());
}

/// A checkerboard whose tile reads wait at a gate (mip tails do not), counting the reads
/// that entered it.
struct Gated {
    inner: Checkerboard,
    state: parking_lot::Mutex<(bool, usize)>,
    changed: parking_lot::Condvar,
}

impl Gated {
    fn new() -> Arc<Gated> {
        Arc::new(Gated {
            inner: Checkerboard::new(SIDE, SIDE, 64, TexelFormat::RGBA8),
            state: parking_lot::Mutex::new((false, 0)),
            changed: parking_lot::Condvar::new(),
        })
    }

    fn open_gate(&self) {
        self.state.lock().0 = true;
        self.changed.notify_all();
    }

    /// Wait until `n` reads have entered.
    fn wait_entered(&self, n: usize) {
        let mut s = self.state.lock();
        while s.1 < n {
            self.changed.wait(&mut s);
        }
    }
}

impl demandtex::sources::ImageSource for Gated {
    fn name(&self) -> String {
        "gated".into()
    }
    fn open(&self) -> Result<demandtex::sources::ImageInfo, demandtex::sources::SourceError> {
        self.inner.open()
    }
    fn read_region(
        &self,
        region: demandtex::textures::TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<demandtex::sources::Readiness, demandtex::sources::SourceError> {
        self.inner.read_region(region, dest, row_bytes)
    }
    fn read_tile(
        &self,
        region: demandtex::textures::TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<demandtex::sources::Readiness, demandtex::sources::SourceError> {
        let mut s = self.state.lock();
        s.1 += 1;
        self.changed.notify_all();
        while !s.0 {
            self.changed.wait(&mut s);
        }
        drop(s);
        self.inner.read_region(region, dest, row_bytes)
    }
}

fn gated_loader(options: LoaderOptions) -> (Loader, TextureId, Arc<Gated>) {
    let loader = Loader::new(LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 16,
        max_texture_memory: 64 << 20,
        fill_threads: 1,
        ..options
    })
    .unwrap();
    let source = Gated::new();
    let id = loader
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    // Open the texture (its mip tail is not gated).
    wait_open(&loader, id);
    (loader, id, source)
}

/// Sample `id` until its sampler is published (interactive mode opens it at creation on a
/// fill thread; final mode when first sampled). Bounded: fails after 30 s.
/// Publishing without starting launches keeps launch numbers (and so rejection's coins)
/// the same whatever the timing.
fn wait_open(loader: &Loader, id: TextureId) {
    let sampler = loader.page_layout().sampler_page(id);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        loader.publish_pending().unwrap();
        if loader.page_table().is_resident(sampler.0) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "texture never opened");
        if loader.options().mode == StreamingMode::Final {
            let launch = loader.launch_prepare();
            launch.tex2d(id, 0.5, 0.5, &SampleOptions::default());
            loader.process_requests(launch).wait();
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Sample level 0 at the centres of `n` different tiles of one row.
fn sample_tiles(loader: &Loader, id: TextureId, n: u32) -> demandtex::Ticket {
    let launch = loader.launch_prepare();
    for k in 0..n {
        let s = (k as f32 * 128.0 + 64.0) / SIDE as f32;
        launch.tex2d(id, s, 4160.0 / SIDE as f32, &SampleOptions::default());
    }
    loader.process_requests(launch)
}

#[test]
fn the_frame_does_not_wait_and_fills_the_view_moved_on_from_are_dropped() {
    let (loader, id, gate) = gated_loader(LoaderOptions {
        mode: StreamingMode::Interactive,
        request_rejection: Some(false),
        max_fill_age: 1,
        ..LoaderOptions::default()
    });
    // Four tiles; the first read blocks at the gate, the frame goes on.
    let ticket = sample_tiles(&loader, id, 4);
    gate.wait_entered(1);
    assert!(!ticket.is_done());
    // The next frame starts while the read is blocked: nothing published, no wait.
    let launch = loader.launch_prepare();
    drop(loader.process_requests(launch));
    gate.open_gate();
    ticket.wait();
    let s = loader.stats();
    assert_eq!(s.tiles_filled, 1, "the read in progress finishes: {s:?}");
    assert_eq!(
        s.fills_dropped_stale, 3,
        "the queued ones were dropped: {s:?}"
    );
    // Dropped pages are requested again by a frame that still needs them.
    sample_tiles(&loader, id, 4).wait();
    assert_eq!(loader.stats().tiles_filled, 4);
}

#[test]
fn queued_fills_of_pages_every_frame_still_wants_are_read_however_late() {
    let (loader, id, gate) = gated_loader(LoaderOptions {
        mode: StreamingMode::Interactive,
        request_rejection: Some(false),
        max_fill_age: 1,
        ..LoaderOptions::default()
    });
    // Four tiles; the first read blocks at the gate. Frames come faster than fills: five
    // more frames ask for the same four tiles while the read is blocked.
    let first = sample_tiles(&loader, id, 4);
    gate.wait_entered(1);
    let later: Vec<_> = (0..5).map(|_| sample_tiles(&loader, id, 4)).collect();
    assert!(
        later.iter().all(|t| t.tasks_total() == 0),
        "in flight: not queued twice"
    );
    gate.open_gate();
    first.wait();
    let s = loader.stats();
    assert_eq!(
        (s.tiles_filled, s.fills_dropped_stale),
        (4, 0),
        "every frame still wanted them: {s:?}"
    );
}

#[test]
fn queued_fills_are_cancelled_not_waited_for() {
    let (loader, id, gate) = gated_loader(LoaderOptions::default());
    let ticket = sample_tiles(&loader, id, 5);
    gate.wait_entered(1);
    loader.cancel_queued_fills();
    gate.open_gate();
    ticket.wait();
    let s = loader.stats();
    assert_eq!((s.tiles_filled, s.fills_dropped_stale), (1, 4), "{s:?}");
    // Launches after the cancellation are served.
    sample_tiles(&loader, id, 5).wait();
    assert_eq!(loader.stats().tiles_filled, 5);
}

/// The tiles of `id` resident in the host page table (its pages but the mip tail's).
fn resident_tiles(loader: &Loader, id: TextureId) -> usize {
    let (first, n) = loader.texture_pages(id).unwrap();
    (first.0 + 1..first.0 + n)
        .filter(|&p| loader.page_table().is_resident(p))
        .count()
}

#[test]
fn publications_per_launch_are_capped() {
    let (loader, id, gate) = gated_loader(LoaderOptions {
        max_publications_per_launch: 2,
        ..LoaderOptions::default()
    });
    gate.open_gate();
    sample_tiles(&loader, id, 5).wait();
    let mut seen = Vec::new();
    for _ in 0..4 {
        drop(loader.launch_prepare());
        seen.push(resident_tiles(&loader, id));
    }
    assert_eq!(seen, vec![2, 4, 5, 5]);
    assert_eq!(loader.stats().publications_capped, 3 + 1);
}

#[test]
fn a_publication_except_tiles_holds_every_tile_for_the_next_one() {
    let (loader, id, gate) = gated_loader(LoaderOptions {
        max_publications_per_launch: 3,
        ..LoaderOptions::default()
    });
    gate.open_gate();
    // One launch asks for five tiles and for a texture created since.
    let other = loader
        .create_texture(
            Arc::new(Checkerboard::new(256, 256, 32, TexelFormat::RGBA8)),
            TextureDesc::default(),
        )
        .unwrap();
    let launch = loader.launch_prepare();
    launch.tex2d(other, 0.5, 0.5, &SampleOptions::default());
    for k in 0..5 {
        let s = (k as f32 * 128.0 + 64.0) / SIDE as f32;
        launch.tex2d(id, s, 4160.0 / SIDE as f32, &SampleOptions::default());
    }
    loader.process_requests(launch).wait();
    let published = loader.publish_pending_except_tiles().unwrap();
    assert!(published >= 1, "the other texture is published");
    let sampler = loader.page_layout().sampler_page(other);
    assert!(loader.page_table().is_resident(sampler.0));
    assert_eq!(resident_tiles(&loader, id), 0, "every tile is held");
    assert_eq!(loader.stats().publications_capped, 0, "held, not capped");
    // The next publication takes them, within its cap.
    assert_eq!(loader.publish_pending().unwrap(), 3);
    assert_eq!(resident_tiles(&loader, id), 3);
    assert_eq!(loader.publish_pending().unwrap(), 2);
    assert_eq!(resident_tiles(&loader, id), 5);
    assert_eq!(loader.stats().publications_capped, 2);
}

#[test]
fn interactive_mode_bounds_the_fill_queue_and_drops_the_excess() {
    let (loader, id, gate) = gated_loader(LoaderOptions {
        mode: StreamingMode::Interactive,
        request_rejection: Some(false),
        max_requests_per_launch: 3,
        max_fill_age: 100,
        ..LoaderOptions::default()
    });
    let first = sample_tiles(&loader, id, 5);
    gate.wait_entered(1);
    let s = loader.stats();
    assert_eq!(
        s.requests_dropped, 2,
        "over the cap: dropped, not deferred: {s:?}"
    );
    assert_eq!(s.requests_deferred, 0);
    // Three fills are queued (one reading): the next launch's new requests find no room.
    let second = sample_tiles(&loader, id, 8);
    assert_eq!(loader.stats().requests_dropped, 2 + 5);
    gate.open_gate();
    first.wait();
    second.wait();
    assert_eq!(loader.stats().tiles_filled, 3);
}

#[test]
fn interactive_textures_open_at_creation_and_a_miss_shows_a_coarser_level() {
    let (final_loader, f) = loader(StreamingMode::Final, None);
    drop(final_loader.launch_prepare());
    let (sampler, _) = (final_loader.page_layout().sampler_page(f), ());
    assert!(
        !final_loader.page_table().is_resident(sampler.0),
        "final mode opens a texture when it is first sampled"
    );

    let (loader, id) = loader(StreamingMode::Interactive, None);
    // The open runs on a fill thread, without a lookup; publication makes it visible.
    wait_open(&loader, id);
    assert_eq!(loader.stats().requests, 0, "nothing was requested");
    let launch = loader.launch_prepare();
    // A level-0 miss shows the finest resident coarser level (the mip tail), never the
    // fallback colour, and requests the tile.
    let coarser = SampleOptions {
        fallback_to_coarser: true,
        ..SampleOptions::default()
    };
    let got = launch.tex2d(id, 0.3, 0.3, &coarser);
    assert!(got.resident && got.coarser && !got.full_detail());
    assert_ne!(got.value, demandtex::textures::DEFAULT_FALLBACK_COLOR);
    let exact = launch.tex2d(id, 0.3, 0.3, &SampleOptions::default());
    assert!(!exact.resident);
    assert_ne!(
        exact.value, [0.0; 4],
        "a miss shows the resident base colour"
    );
    loader.process_requests(launch).wait();
    assert_eq!(loader.stats().tiles_filled, 1);
}

#[test]
fn interactive_fills_serve_the_most_missed_tiles_of_a_level_first() {
    let (loader, id, gate) = gated_loader(LoaderOptions {
        mode: StreamingMode::Interactive,
        request_rejection: Some(false),
        max_requests_per_launch: 2,
        max_fill_age: 100,
        ..LoaderOptions::default()
    });
    gate.open_gate();
    // Five tiles of one row of level 0, missed by 1, 1, 5, 1 and 3 lookups: the queue holds
    // two, the third and the fifth (page order would take the first two).
    let misses = [1, 1, 5, 1, 3];
    let s = |k: usize| (k as f32 * 128.0 + 64.0) / SIDE as f32;
    let t = 4160.0 / SIDE as f32;
    let launch = loader.launch_prepare();
    for (k, &n) in misses.iter().enumerate() {
        for _ in 0..n {
            launch.tex2d(id, s(k), t, &SampleOptions::default());
        }
    }
    loader.process_requests(launch).wait();
    assert_eq!(loader.stats().requests_dropped, 3);
    loader.publish_pending().unwrap();
    let launch = loader.launch_prepare();
    let resident: Vec<bool> = (0..misses.len())
        .map(|k| {
            launch
                .tex2d(id, s(k), t, &SampleOptions::default())
                .resident
        })
        .collect();
    assert_eq!(resident, [false, false, true, false, true]);
}

#[test]
fn fills_held_to_a_cpu_share_complete_and_converge_to_the_same_texels() {
    // A limit of a twentieth of a core: every fill still runs (a ticket waited on
    // completes), and the converged frame equals one filled without a limit.
    let converged = |fill_cpu_cores: Option<f32>| {
        let (loader, id) = loader_with(LoaderOptions {
            fill_threads: 2,
            mode: StreamingMode::Interactive,
            fill_cpu_cores,
            ..small_options()
        });
        let g = 2.0 / SIDE as f32;
        for _ in 0..64 {
            let launch = loader.launch_prepare();
            let mut values = Vec::new();
            let mut full = true;
            for y in 0..8 {
                for x in 0..8 {
                    let options = SampleOptions {
                        request_key: y * 8 + x,
                        fallback_to_coarser: true,
                        ..SampleOptions::default()
                    };
                    let (s, t) = ((x as f32 + 0.5) / 8.0, (y as f32 + 0.5) / 8.0);
                    let got = launch.tex2d_grad(id, s, t, [g, 0.0], [0.0, g], &options);
                    full &= got.full_detail();
                    values.push(got.value);
                }
            }
            loader.process_requests(launch).wait();
            if full {
                return (values, loader.stats().tiles_filled);
            }
        }
        panic!("not converged in 64 launches");
    };
    let (limited, filled) = converged(Some(0.05));
    let (free, _) = converged(None);
    assert!(filled > 16, "{filled} tiles filled");
    assert_eq!(limited, free);
}
