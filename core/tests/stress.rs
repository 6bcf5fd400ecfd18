//! Stress: sampling threads (blocking lookups through a `TextureCache`, and multi-pass
//! launches fanned out over threads of their own) and fill threads against a budget of a
//! few tiles beyond the mip tails, while another thread invalidates textures and changes
//! the budget between three sizes. Checked:
//! - no deadlock: every ticket completes and every thread ends (watchdogs);
//! - every texel a lookup reports resident equals the source's: lookups are point-filtered
//!   at texel centres of an explicit level, and every texel of the pattern sources is a
//!   hash of (seed, level, x, y) — a checksum of its own position, so a tile served for the
//!   wrong place, level or texture, or torn, is caught;
//! - the budget is never exceeded: peak resident bytes stay within the largest budget set,
//!   and once the threads are done, resident bytes within the budget in force.
//! - no texture fails: the budget always holds the mip tails, so no re-open under heavy
//!   invalidation may be failed with `BudgetTooSmall` (it was, with several fill threads,
//!   until tails reserved by opens still reading stopped counting as permanent).
//!
//! Nothing depends on timing: the threads run fixed numbers of lookups, and how they
//! interleave changes only which lookups are resident, never what a resident one returns.
//! `stress_quick` runs in the suite (a few seconds); `stress_long` (ignored) scales it up,
//! `DEMANDTEX_STRESS_LOOKUPS` lookups (default 2·10⁷) for each of its two shapes, and
//! prints its figures (a watchdog fails it only when lookups stop completing):
//! `cargo test -p demandtex --test stress -- --ignored --nocapture`.

mod common;

use common::{PatternSource, WATCHDOG};
use demandtex::textures::{full_mip_levels, mip_level_size, FilterMode, MipFilter, TexelFormat};
use demandtex::textures::{TextureDesc, TextureLayout};
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureCache, TextureId, TILE_BYTES};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const TILE: u64 = TILE_BYTES as u64;
const SIZES: [(u32, u32); 4] = [(512, 512), (700, 300), (300, 900), (1024, 256)];

/// One run's shape.
#[derive(Clone, Copy, Debug)]
struct Shape {
    blocking_threads: usize,
    multipass_threads: usize,
    fill_threads: usize,
    /// Lookups of each blocking thread.
    blocking_lookups: usize,
    /// Launches of the multi-pass driver, each with this many lookups per thread.
    launches: usize,
    lookups_per_launch: usize,
    /// Tiles beyond the mip tails in the smallest budget set.
    min_tiles: u64,
    /// Sources with constant tiles (shared between pages and textures), and the two larger
    /// budgets big enough for constant tiles to share slots (16 tiles and more).
    constant_tiles: bool,
}

/// What a run did.
#[derive(Debug, Default)]
struct Figures {
    lookups: u64,
    verified: u64,
    verified_multipass: u64,
    chaos_ops: u64,
    seconds: f64,
    /// Constant tiles given a shared slot.
    coalesced: u64,
}

/// A small xorshift generator (each thread seeds its own).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Scene {
    loader: Loader,
    sources: Vec<Arc<PatternSource>>,
    textures: Vec<TextureId>,
}

impl Scene {
    /// A random lookup: texture index, level, s, t at a texel centre.
    fn pick(&self, rng: &mut Rng) -> (usize, u32, f32, f32, u32, u32) {
        let i = rng.below(self.sources.len() as u64) as usize;
        let src = &self.sources[i];
        let level = rng.below(u64::from(full_mip_levels(src.width, src.height))) as u32;
        let (w, h) = mip_level_size(src.width, src.height, level);
        let (x, y) = (
            rng.below(u64::from(w)) as u32,
            rng.below(u64::from(h)) as u32,
        );
        let s = (x as f32 + 0.5) / w as f32;
        let t = (y as f32 + 0.5) / h as f32;
        (i, level, s, t, x, y)
    }

    /// Panics unless `value` is texel (`x`, `y`) of `level` of source `i`: the same
    /// stored bytes (RGBA8; decoding may round the last bit of `byte / 255` differently).
    fn verify(&self, i: usize, level: u32, x: u32, y: u32, value: [f32; 4]) {
        let bytes = |v: [f32; 4]| v.map(|c| (c * 255.0).round() as u8);
        let want = self.sources[i].texel(level, x, y);
        let error = self.loader.texture_error(self.textures[i]);
        assert_eq!(
            bytes(value),
            bytes(want),
            "texture {i} level {level} texel ({x}, {y}): a resident lookup returned another \
             texel (texture error: {error:?})"
        );
    }
}

fn desc() -> TextureDesc {
    TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        ..TextureDesc::default()
    }
}

fn tails() -> u64 {
    SIZES
        .iter()
        .map(|&(w, h)| {
            TextureLayout::new(w, h, full_mip_levels(w, h), TexelFormat::RGBA8)
                .unwrap()
                .mip_tail_bytes
        })
        .sum()
}

/// `lookups` counts the lookups made (the watchdog's measure of progress).
fn run(shape: Shape, lookups: &AtomicU64) -> Figures {
    let (middle, largest) = if shape.constant_tiles {
        (24, 40)
    } else {
        (8, 12)
    };
    let budgets = [
        tails() + shape.min_tiles * TILE,
        tails() + middle * TILE,
        tails() + largest * TILE,
    ];
    let loader = Loader::new(LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 16,
        max_texture_memory: budgets[1],
        fill_threads: shape.fill_threads,
        ..Default::default()
    })
    .unwrap();
    let cache = TextureCache::from_loader(&loader);
    let sources: Vec<Arc<PatternSource>> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &(w, h))| {
            let source = PatternSource::new(w, h, TexelFormat::RGBA8, 77 + i as u32);
            Arc::new(if shape.constant_tiles {
                source.with_constant_blocks()
            } else {
                source
            })
        })
        .collect();
    let textures = sources
        .iter()
        .map(|s| loader.create_texture(s.clone(), desc()).unwrap())
        .collect();
    let scene = Scene {
        loader: loader.clone(),
        sources,
        textures,
    };
    let done = AtomicBool::new(false);
    let (verified, verified_mp, chaos_ops) =
        (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let opts = SampleOptions::default();
    let start = Instant::now();
    std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for b in 0..shape.blocking_threads {
            let (cache, scene, verified) = (&cache, &scene, &verified);
            workers.push(scope.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((b as u64 + 1) * 0x1234_5678));
                for _ in 0..shape.blocking_lookups {
                    let (i, level, s, t, x, y) = scene.pick(&mut rng);
                    let r = cache.tex2d_lod(scene.textures[i], s, t, level as f32, &opts);
                    lookups.fetch_add(1, Ordering::Relaxed);
                    if r.resident {
                        scene.verify(i, level, x, y, r.value);
                        verified.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        {
            let (loader, scene, verified_mp) = (&loader, &scene, &verified_mp);
            workers.push(scope.spawn(move || {
                for launch_no in 0..shape.launches {
                    let launch = loader.launch_prepare();
                    std::thread::scope(|inner| {
                        for m in 0..shape.multipass_threads {
                            let launch = &launch;
                            inner.spawn(move || {
                                let mut rng = Rng((launch_no * 64 + m + 1) as u64 * 0x2545_F491);
                                for _ in 0..shape.lookups_per_launch {
                                    let (i, level, s, t, x, y) = scene.pick(&mut rng);
                                    let r = launch.tex2d_lod(
                                        scene.textures[i],
                                        s,
                                        t,
                                        level as f32,
                                        &opts,
                                    );
                                    lookups.fetch_add(1, Ordering::Relaxed);
                                    if r.resident {
                                        scene.verify(i, level, x, y, r.value);
                                        verified_mp.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                            });
                        }
                    });
                    let ticket = loader.process_requests(launch);
                    assert!(
                        ticket.wait_timeout(WATCHDOG),
                        "launch {launch_no}: ticket hung"
                    );
                }
            }));
        }
        // Invalidations and budget changes until the samplers are done (at least 20).
        let chaos = {
            let (loader, scene, done, chaos_ops) = (&loader, &scene, &done, &chaos_ops);
            scope.spawn(move || {
                let mut rng = Rng(0xC0FF_EE00_1234_5678);
                let mut n = 0u64;
                while !done.load(Ordering::Acquire) || n < 20 {
                    match rng.below(3) {
                        0 => {
                            let i = rng.below(scene.textures.len() as u64) as usize;
                            loader.invalidate_texture(scene.textures[i]).unwrap();
                        }
                        _ => {
                            // Refused (BudgetTooSmall) while retired mip tails still
                            // count: a budget change the caller may try again.
                            let b = budgets[rng.below(budgets.len() as u64) as usize];
                            match loader.set_max_texture_memory(b) {
                                Ok(()) | Err(demandtex::Error::BudgetTooSmall { .. }) => {}
                                Err(e) => panic!("set_max_texture_memory({b}): {e}"),
                            }
                        }
                    }
                    n += 1;
                    std::thread::yield_now();
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                chaos_ops.store(n, Ordering::Relaxed);
            })
        };
        // Tell the chaos thread to stop however the workers end (a panic included).
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let stop = Done(&done);
        for w in workers {
            w.join().unwrap();
        }
        drop(stop);
        chaos.join().unwrap();
    });
    let seconds = start.elapsed().as_secs_f64();
    // Quiesce: one more launch publishes and retires what is pending.
    let ticket = loader.process_requests(loader.launch_prepare());
    assert!(ticket.wait_timeout(WATCHDOG), "final ticket hung");
    let _ = loader.launch_prepare();
    let stats = loader.stats();
    let max_budget = budgets[2];
    assert!(
        stats.peak_resident_bytes <= max_budget,
        "peak past every budget: {stats:?}"
    );
    assert!(
        stats.resident_bytes <= stats.budget_bytes,
        "over the budget at rest: {stats:?}"
    );
    assert_eq!(stats.failed_textures, 0, "{stats:?}");
    for &t in &scene.textures {
        let e = loader.texture_error(t);
        assert!(e.is_none(), "texture {t:?} failed: {e:?}");
    }
    assert!(
        stats.evictions > 0,
        "the budget made room by evicting: {stats:?}"
    );
    let f = Figures {
        lookups: lookups.load(Ordering::Relaxed),
        verified: verified.load(Ordering::Relaxed),
        verified_multipass: verified_mp.load(Ordering::Relaxed),
        chaos_ops: chaos_ops.load(Ordering::Relaxed),
        seconds,
        coalesced: stats.tiles_coalesced,
    };
    assert!(f.verified > 0 && f.verified_multipass > 0, "{f:?}");
    println!(
        "{shape:?}: {} lookups in {:.2} s ({:.0}/s), {} verified blocking + {} multi-pass, {} \
         invalidations/budget changes; {} tiles filled, {} evictions, {} second-chance \
         restores, {} tiles coalesced, peak {} of max budget {} bytes",
        f.lookups,
        f.seconds,
        f.lookups as f64 / f.seconds,
        f.verified,
        f.verified_multipass,
        f.chaos_ops,
        stats.tiles_filled,
        stats.evictions,
        stats.second_chance_restores,
        stats.tiles_coalesced,
        stats.peak_resident_bytes,
        max_budget
    );
    f
}

/// `run` on a thread of its own: a deadlock fails at the watchdog instead of hanging. The
/// watchdog measures progress, not time: it fails the run when no lookup completed for
/// [`WATCHDOG`], however long the whole run takes on a loaded machine.
fn guarded(shape: Shape) -> Figures {
    let (tx, rx) = std::sync::mpsc::channel();
    let lookups = Arc::new(AtomicU64::new(0));
    {
        let lookups = lookups.clone();
        std::thread::spawn(move || {
            let _ = tx.send(run(shape, &lookups));
        });
    }
    let mut seen = 0;
    loop {
        match rx.recv_timeout(WATCHDOG) {
            Ok(figures) => return figures,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let now = lookups.load(Ordering::Relaxed);
                assert!(
                    now > seen,
                    "{shape:?}: no lookup completed for {WATCHDOG:?}: deadlock"
                );
                seen = now;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("{shape:?}: failed (see the thread's panic)")
            }
        }
    }
}

#[test]
fn stress_quick() {
    for (blocking_threads, multipass_threads, fill_threads) in [(1, 1, 1), (3, 2, 4)] {
        guarded(Shape {
            blocking_threads,
            multipass_threads,
            fill_threads,
            blocking_lookups: 20_000,
            launches: 60,
            lookups_per_launch: 300,
            min_tiles: 3,
            constant_tiles: false,
        });
    }
}

/// Constant tiles sharing slots across pages and textures, under the same chaos: budget
/// changes between 3 tiles (no sharing) and 40 (shared slots evicted on shrinks) and
/// invalidations dropping pages of shared slots while lookups read them.
#[test]
fn stress_constant_tiles() {
    let figures = guarded(Shape {
        blocking_threads: 2,
        multipass_threads: 2,
        fill_threads: 2,
        blocking_lookups: 30_000,
        launches: 80,
        lookups_per_launch: 300,
        min_tiles: 3,
        constant_tiles: true,
    });
    assert!(figures.coalesced > 0, "no tile was shared: {figures:?}");
}

/// Found by this test: with several fill threads, a texture invalidated while the budget is
/// at its smallest (tails + 3 tiles) was failed with `BudgetTooSmall` ("cannot hold … bytes
/// of non-evictable data") although the tails fit: the mip tails reserved by opens still
/// reading (some of them stale, about to be released) counted as if published for good.
/// Failed 3 runs out of 3 before the fix.
#[test]
fn stress_eight_fill_threads_at_the_smallest_budget() {
    guarded(Shape {
        blocking_threads: 6,
        multipass_threads: 2,
        fill_threads: 8,
        blocking_lookups: 20_000,
        launches: 60,
        lookups_per_launch: 300,
        min_tiles: 3,
        constant_tiles: false,
    });
}

#[test]
#[ignore = "long: run with --ignored --nocapture for the figures"]
fn stress_long() {
    let total: u64 = std::env::var("DEMANDTEX_STRESS_LOOKUPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000_000);
    for (blocking_threads, multipass_threads, fill_threads) in [(2, 2, 1), (4, 4, 4)] {
        let threads = (blocking_threads + multipass_threads) as u64;
        let per_thread = (total / threads) as usize;
        let launches = 2000;
        guarded(Shape {
            blocking_threads,
            multipass_threads,
            fill_threads,
            blocking_lookups: per_thread,
            launches,
            lookups_per_launch: per_thread / launches,
            min_tiles: 3,
            constant_tiles: false,
        });
    }
}
