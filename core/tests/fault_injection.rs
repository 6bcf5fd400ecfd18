//! Rendering through injected faults (`sources::fault`): many textures, some healthy, some
//! with I/O errors, short reads, panics, "not yet" answers and latency, rendered multi-pass
//! (a `Loader`, many launches, several sampling threads) and blocking (a `TextureCache`, 8
//! threads), each within a budget of a few tiles beyond the mip tails so that eviction
//! runs. Checked:
//! - every ticket completes (a watchdog turns a hang into a failure) and every lookup
//!   resolves;
//! - a texture fails exactly when a fault was injected into one of its calls; its error
//!   is retrievable and names the injected fault; its lookups give the true texels (those
//!   resolved before it failed) or its fallback colour, nothing else;
//! - every other texture gives exactly the texels of an unbudgeted, fault-free render —
//!   so no poisoned (short-read) buffer was ever published;
//! - the engine counted every failed read (`read_errors` = the injected read failures)
//!   and every failed texture, and `peak_resident_bytes` never passed the budget.
//!
//! The faults are a pure function of (seed, tile, attempt), so no outcome depends on
//! timing; latency only slows reads down.

mod common;

use common::{render, PatternSource, Query, Render, WATCHDOG};
use demandtex::sources::fault::{FaultInjectingSource, FaultPlan, FaultSites};
use demandtex::sources::ImageSource;
use demandtex::textures::{full_mip_levels, TexelFormat, TexelType, TextureDesc, TextureLayout};
use demandtex::{
    Engine, Loader, LoaderOptions, SampleOptions, TextureCache, TextureId, TILE_BYTES,
};
use std::sync::Arc;
use std::time::Duration;

const TILE: u64 = TILE_BYTES as u64;
/// Never a texel of the pattern sources (they are in [0, 1]).
const FALLBACK: [f32; 4] = [-0.5, -0.25, -0.125, 1.0];
/// Tiles of room beyond the mip tails.
const ROOM_TILES: u64 = 12;

/// What a texture's plan must lead to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// No failing fault in the plan: exact texels, no error.
    Healthy,
    /// Every call of a site every render reaches fails.
    Fails,
    /// Random faults: fails exactly if one was injected.
    MayFail,
}

/// One texture of the scene.
struct Spec {
    width: u32,
    height: u32,
    format: TexelFormat,
    plan: FaultPlan,
    expect: Expect,
}

fn specs() -> Vec<Spec> {
    let rg16f = TexelFormat::new(TexelType::F16, 2).unwrap();
    let sizes = [
        (512, 512, TexelFormat::RGBA8),
        (700, 300, TexelFormat::RGBA8),
        (300, 900, rg16f),
        (640, 480, TexelFormat::RGBA32F),
    ];
    let random = |seed, rate| FaultPlan {
        seed,
        error_rate: rate,
        short_read_rate: rate,
        panic_rate: rate,
        not_yet_rate: 0.25,
        max_not_yet: 2,
        latency: Duration::from_micros(50),
        sites: FaultSites::all(),
    };
    let plans = [
        (FaultPlan::default(), Expect::Healthy),
        (
            FaultPlan {
                latency: Duration::from_micros(300),
                ..FaultPlan::default()
            },
            Expect::Healthy,
        ),
        (
            FaultPlan {
                seed: 5,
                not_yet_rate: 0.6,
                max_not_yet: 3,
                ..FaultPlan::default()
            },
            Expect::Healthy,
        ),
        (
            FaultPlan {
                error_rate: 1.0,
                sites: FaultSites::open_only(),
                ..FaultPlan::default()
            },
            Expect::Fails,
        ),
        (
            FaultPlan {
                short_read_rate: 1.0,
                sites: FaultSites {
                    open: false,
                    mip_tail: true,
                    tiles: false,
                },
                ..FaultPlan::default()
            },
            Expect::Fails,
        ),
        (
            FaultPlan {
                panic_rate: 1.0,
                sites: FaultSites::tiles_only(),
                ..FaultPlan::default()
            },
            Expect::Fails,
        ),
        (
            FaultPlan {
                short_read_rate: 1.0,
                sites: FaultSites::tiles_only(),
                ..FaultPlan::default()
            },
            Expect::Fails,
        ),
        (random(101, 0.01), Expect::MayFail),
        (random(102, 0.01), Expect::MayFail),
        (random(103, 0.01), Expect::MayFail),
        (random(104, 0.002), Expect::MayFail),
        (random(105, 0.002), Expect::MayFail),
    ];
    plans
        .into_iter()
        .enumerate()
        .map(|(i, (plan, expect))| {
            let (width, height, format) = sizes[i % sizes.len()];
            Spec {
                width,
                height,
                format,
                plan,
                expect,
            }
        })
        .collect()
}

/// The scene's textures in one engine, and its lookups (by texture index).
struct Scene {
    textures: Vec<TextureId>,
    sources: Vec<Arc<FaultInjectingSource>>,
    queries: Vec<Query>,
}

fn pattern(i: usize, s: &Spec) -> Arc<dyn ImageSource> {
    Arc::new(PatternSource::new(
        s.width,
        s.height,
        s.format,
        1000 + i as u32,
    ))
}

fn desc() -> TextureDesc {
    TextureDesc {
        fallback_color: FALLBACK,
        ..TextureDesc::default()
    }
}

/// `n` lookups over `count` textures: footprints of 1/64 to 1/2048 of the texture, which
/// fit the room left beyond the mip tails.
fn lookups(textures: &[TextureId], n: usize) -> Vec<Query> {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let texture = textures[(next() * textures.len() as f64) as usize % textures.len()];
            let scale = 2f64.powf(-11.0 + next() * 5.0) as f32;
            Query {
                texture,
                s: next() as f32,
                t: next() as f32,
                ddx: [scale, scale * 0.25],
                ddy: [-scale * 0.25, scale],
            }
        })
        .collect()
}

impl Scene {
    fn new(engine: &Engine, specs: &[Spec], n: usize) -> Scene {
        let mut textures = Vec::new();
        let mut sources = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let src = Arc::new(FaultInjectingSource::new(pattern(i, s), s.plan).unwrap());
            textures.push(engine.create_texture(src.clone(), desc()).unwrap());
            sources.push(src);
        }
        let queries = lookups(&textures, n);
        Scene {
            textures,
            sources,
            queries,
        }
    }

    /// The texture index of a query.
    fn index(&self, q: &Query) -> usize {
        self.textures.iter().position(|&t| t == q.texture).unwrap()
    }
}

/// The fault-free, unbudgeted render of the same lookups.
fn reference(specs: &[Spec], scene: &Scene) -> Vec<[f32; 4]> {
    let loader = Loader::new(options(u64::MAX / 2)).unwrap();
    let ids: Vec<TextureId> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| loader.create_texture(pattern(i, s), desc()).unwrap())
        .collect();
    let queries: Vec<Query> = scene
        .queries
        .iter()
        .map(|q| Query {
            texture: ids[scene.index(q)],
            ..*q
        })
        .collect();
    let r = render(&loader, &queries, 2, 100);
    assert!(r.converged);
    r.values
}

fn options(budget: u64) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 18,
        page_table_entries: 1 << 10,
        max_textures: 64,
        max_texture_memory: budget,
        fill_threads: 4,
        ..Default::default()
    }
}

/// The mip tails of every texture, plus [`ROOM_TILES`] tiles.
fn budget(specs: &[Spec]) -> u64 {
    let tails: u64 = specs
        .iter()
        .map(|s| {
            let levels = full_mip_levels(s.width, s.height);
            TextureLayout::new(s.width, s.height, levels, s.format)
                .unwrap()
                .mip_tail_bytes
        })
        .sum();
    tails + ROOM_TILES * TILE
}

/// The checks both modes share (see the module docs). Returns the faults injected.
fn check(engine: &Engine, specs: &[Spec], scene: &Scene, values: &[[f32; 4]], budget: u64) -> u64 {
    let reference = reference(specs, scene);
    let mut failed = vec![false; specs.len()];
    let mut read_failures = 0;
    let mut injected = 0;
    for (i, s) in specs.iter().enumerate() {
        let faults = scene.sources[i].injected();
        let error = engine.texture_error(scene.textures[i]);
        failed[i] = error.is_some();
        assert_eq!(
            failed[i],
            faults.failures() > 0,
            "texture {i} ({:?}) fails exactly when a failing fault was injected: {faults:?}, {error:?}",
            s.expect
        );
        match s.expect {
            Expect::Healthy => assert!(!failed[i], "texture {i}: {error:?}"),
            Expect::Fails => assert!(failed[i], "texture {i} must fail: {faults:?}"),
            Expect::MayFail => {}
        }
        if let Some(e) = error {
            let msg = e.to_string();
            assert!(msg.contains("injected"), "texture {i}: {msg}");
        }
        read_failures += faults.read_failures();
        injected += faults.failures() + faults.not_yet;
    }
    for (k, q) in scene.queries.iter().enumerate() {
        let i = scene.index(q);
        let (got, want) = (values[k], reference[k]);
        if failed[i] {
            assert!(
                got == want || got == FALLBACK,
                "lookup {k} of failed texture {i}: {got:?}, neither {want:?} nor the fallback"
            );
        } else {
            assert_eq!(got, want, "lookup {k} of texture {i} ({q:?})");
        }
    }
    let stats = engine.stats();
    let n_failed = failed.iter().filter(|&&f| f).count() as u64;
    assert_eq!(stats.failed_textures, n_failed, "{stats:?}");
    assert_eq!(stats.read_errors, read_failures, "{stats:?}");
    assert!(stats.peak_resident_bytes <= budget, "{stats:?}");
    assert!(
        stats.evictions > 0,
        "the budget made room by evicting: {stats:?}"
    );
    let may_fail = (0..specs.len()).filter(|&i| specs[i].expect == Expect::MayFail);
    assert!(
        may_fail.clone().any(|i| failed[i]),
        "the random plans failed some texture"
    );
    let not_yet: u64 = scene.sources.iter().map(|s| s.injected().not_yet).sum();
    assert!(not_yet > 0, "\"not yet\" was answered");
    injected
}

#[test]
fn multipass_renders_through_faults_complete_and_stay_exact_or_fallback() {
    let specs = specs();
    let budget = budget(&specs);
    let loader = Loader::new(options(budget)).unwrap();
    let scene = Scene::new(&loader, &specs, 3000);
    let r = render_in_windows(&loader, &scene.queries, 4, 20_000);
    assert!(
        r.converged,
        "every lookup resolved in {} launches",
        r.launches
    );
    let injected = check(&loader, &specs, &scene, &r.values, budget);
    let stats = loader.stats();
    assert!(stats.deferred_not_yet > 0, "{stats:?}");
    println!(
        "multi-pass: {} textures, {} lookups over {} launches, {} tickets, {} faults injected \
         ({} read errors, {} failed textures, {} deferred \"not yet\"), {} evictions, peak {} \
         of {} bytes",
        specs.len(),
        r.lookups,
        r.launches,
        r.tickets,
        injected,
        stats.read_errors,
        stats.failed_textures,
        stats.deferred_not_yet,
        stats.evictions,
        stats.peak_resident_bytes,
        budget
    );
}

#[test]
fn blocking_lookups_from_eight_threads_through_faults_resolve_exact_or_fallback() {
    let specs = specs();
    let budget = budget(&specs);
    let cache = TextureCache::new(options(budget)).unwrap();
    let scene = Arc::new(Scene::new(&cache, &specs, 3000));
    // The lookups run on a thread of their own: a hang fails the test at the watchdog.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (cache, scene) = (cache.clone(), scene.clone());
        std::thread::spawn(move || {
            let _ = tx.send(blocking_render(&cache, &scene.queries));
        });
    }
    let (values, lookups, retried) = rx
        .recv_timeout(WATCHDOG)
        .expect("blocking lookups hung (watchdog)");
    let injected = check(&cache, &specs, &scene, &values, budget);
    let stats = cache.stats();
    println!(
        "blocking: {} textures, 8 threads, {} lookups ({retried} retried after a fallback), \
         {} faults injected ({} read errors, {} failed textures), {} blocking fallbacks, {} \
         evictions, peak {} of {} bytes",
        specs.len(),
        lookups,
        injected,
        stats.read_errors,
        stats.failed_textures,
        stats.blocking_fallbacks,
        stats.evictions,
        stats.peak_resident_bytes,
        budget
    );
}

/// Blocking lookups of `queries` from 8 threads, each retrying a lookup that returned a
/// non-resident approximation a few times; what is still unresolved is then looked up from
/// one thread (no contention: the room beyond the tails holds any one footprint). Returns
/// the values, the lookups made, and how many were retried.
fn blocking_render(cache: &TextureCache, queries: &[Query]) -> (Vec<[f32; 4]>, usize, usize) {
    let o = SampleOptions::default();
    let look = |q: &Query| cache.tex2d_grad(q.texture, q.s, q.t, q.ddx, q.ddy, &o);
    let mut values = vec![None; queries.len()];
    let chunk = queries.len().div_ceil(8);
    let counts: Vec<(usize, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = queries
            .chunks(chunk)
            .zip(values.chunks_mut(chunk))
            .map(|(qs, vs)| {
                scope.spawn(move || {
                    let (mut lookups, mut retried) = (0, 0);
                    for (q, v) in qs.iter().zip(vs.iter_mut()) {
                        for attempt in 0..4 {
                            lookups += 1;
                            retried += usize::from(attempt == 1);
                            let s = look(q);
                            if s.resident {
                                *v = Some(s.value);
                                break;
                            }
                        }
                    }
                    (lookups, retried)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut lookups, mut retried) = counts.iter().fold((0, 0), |(a, b), &(l, r)| (a + l, b + r));
    for (q, v) in queries.iter().zip(values.iter_mut()) {
        for _ in 0..16 {
            if v.is_some() {
                break;
            }
            lookups += 1;
            retried += 1;
            let s = look(q);
            if s.resident {
                *v = Some(s.value);
            }
        }
    }
    let values = values
        .into_iter()
        .enumerate()
        .map(|(k, v)| v.unwrap_or_else(|| panic!("lookup {k} never resolved")))
        .collect();
    (values, lookups, retried)
}

/// A multi-pass render as a bucket renderer makes one within a small budget: each launch
/// samples a window of the unresolved lookups (split among `threads` sampling threads),
/// keeping the value a lookup had when it first resolved. All lookups at once would
/// reference more tiles than the budget holds, and tiles a launch uses are not evicted
/// (`Stats::deferred_no_memory`): the window halves after two launches that resolve
/// nothing, and doubles after one that resolves all of it. One lookup's footprint fits the
/// room beyond the mip tails, so the window always makes progress.
fn render_in_windows(
    loader: &Loader,
    queries: &[Query],
    threads: usize,
    max_launches: usize,
) -> Render {
    let mut values: Vec<Option<[f32; 4]>> = vec![None; queries.len()];
    let (mut launches, mut lookups, mut window, mut idle) = (0, 0, 256usize, 0);
    let mut first = 0;
    let opts = SampleOptions::default();
    while launches < max_launches {
        while first < values.len() && values[first].is_some() {
            first += 1;
        }
        let pending: Vec<usize> = (first..values.len())
            .filter(|&k| values[k].is_none())
            .take(window)
            .collect();
        if pending.is_empty() {
            break;
        }
        let launch = loader.launch_prepare();
        launches += 1;
        lookups += pending.len();
        let chunk = pending.len().div_ceil(threads).max(1);
        let resolved: Vec<(usize, [f32; 4])> = std::thread::scope(|scope| {
            let handles: Vec<_> = pending
                .chunks(chunk)
                .map(|ks| {
                    let launch = &launch;
                    scope.spawn(move || {
                        ks.iter()
                            .filter_map(|&k| {
                                let q = &queries[k];
                                let s = launch.tex2d_grad(q.texture, q.s, q.t, q.ddx, q.ddy, &opts);
                                s.resident.then_some((k, s.value))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let ticket = loader.process_requests(launch);
        assert!(
            ticket.wait_timeout(WATCHDOG),
            "launch {launches}: a ticket did not complete within {WATCHDOG:?} ({ticket:?})"
        );
        if resolved.is_empty() {
            idle += 1;
            if idle >= 2 {
                window = (window / 2).max(1);
                idle = 0;
            }
        } else {
            idle = 0;
            if resolved.len() == pending.len() {
                window = (window * 2).min(4096);
            }
        }
        for (k, v) in resolved {
            values[k] = Some(v);
        }
    }
    let converged = values.iter().all(Option::is_some);
    Render {
        values: values.into_iter().map(|v| v.unwrap_or([0.0; 4])).collect(),
        converged,
        launches,
        tickets: launches,
        lookups,
        peak_resident_bytes: loader.stats().peak_resident_bytes,
    }
}
