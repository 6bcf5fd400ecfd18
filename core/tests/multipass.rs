//! The multi-pass cycle end to end: convergence equals the fully resident render, the
//! budget holds, eviction with second chance, deferral, and failing sources.

mod common;

use common::{render, Fault, FaultySource, PatternSource, Query};
use demandtex::textures::{AddressMode, TexelFormat, TexelType, TextureDesc};
use demandtex::{Loader, LoaderOptions, SampleOptions, StreamingMode, TextureId, TILE_BYTES};
use proptest::prelude::*;
use std::sync::Arc;

const TILE: u64 = TILE_BYTES as u64;

fn options(budget: u64) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 20,
        page_table_entries: 1 << 12,
        max_textures: 256,
        max_texture_memory: budget,
        fill_threads: 2,
        ..Default::default()
    }
}

fn formats() -> Vec<TexelFormat> {
    vec![
        TexelFormat::RGBA8,
        TexelFormat::RGBA32F,
        TexelFormat::new(TexelType::F16, 2).unwrap(),
        TexelFormat::new(TexelType::U16, 1).unwrap(),
    ]
}

/// Textures of assorted sizes and formats, and queries over them from magnified to minified.
fn scene(loader: &Loader, seed: u64, n_queries: usize) -> Vec<Query> {
    let mut rng = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let sizes = [(1000, 300), (2048, 2048), (333, 777), (4096, 130)];
    let modes = [
        AddressMode::Wrap,
        AddressMode::Clamp,
        AddressMode::Mirror,
        AddressMode::Border,
    ];
    let fmts = formats();
    let mut textures = Vec::new();
    for (i, &(w, h)) in sizes.iter().enumerate() {
        let desc = TextureDesc {
            address: [modes[i % 4], modes[(i + 1) % 4]],
            max_anisotropy: if i % 2 == 0 { 8 } else { 1 },
            ..Default::default()
        };
        let src = PatternSource::new(w, h, fmts[i % fmts.len()], seed as u32 ^ i as u32);
        textures.push(loader.create_texture(Arc::new(src), desc).unwrap());
    }
    (0..n_queries)
        .map(|_| {
            let texture = textures[(next() * textures.len() as f64) as usize % textures.len()];
            let scale = (2f64).powf(-12.0 + next() * 12.0) as f32;
            let aniso = 1.0 + (next() * 6.0) as f32;
            Query {
                texture,
                s: (next() * 3.0 - 1.0) as f32,
                t: (next() * 3.0 - 1.0) as f32,
                ddx: [scale * aniso, scale * 0.1],
                ddy: [-scale * 0.2, scale],
            }
        })
        .collect()
}

fn resident_render(seed: u64, n: usize) -> (Vec<[f32; 4]>, u64) {
    let loader = Loader::new(options(u64::MAX / 2)).unwrap();
    let q = scene(&loader, seed, n);
    let r = render(&loader, &q, 2, 100);
    assert!(r.converged, "an unlimited budget always converges");
    (r.values, r.peak_resident_bytes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    #[test]
    fn converged_render_equals_fully_resident_render_and_budget_holds(
        seed in 0u64..1000,
        budget_fraction in 0.3f64..3.0,
        threads in 1usize..4,
    ) {
        let n = 3000;
        let (reference, working_set) = resident_render(seed, n);
        let budget = ((working_set as f64 * budget_fraction) as u64).max(64 * TILE);
        let loader = Loader::new(options(budget)).unwrap();
        let q = scene(&loader, seed, n);
        let r = render(&loader, &q, threads, 200);
        let stats = loader.stats();
        prop_assert!(stats.peak_resident_bytes <= budget, "peak {} > budget {budget}", stats.peak_resident_bytes);
        if budget >= working_set {
            prop_assert!(r.converged, "budget ≥ working set must converge");
        }
        if r.converged {
            for (i, (a, b)) in r.values.iter().zip(&reference).enumerate() {
                prop_assert_eq!(a, b, "query {} {:?}", i, q[i]);
            }
        }
    }
}

#[test]
fn tight_budget_evicts_with_second_chance_and_never_exceeds() {
    let loader = Loader::new(options(40 * TILE)).unwrap();
    let src = Arc::new(PatternSource::new(8192, 8192, TexelFormat::RGBA8, 7));
    let tex = loader
        .create_texture(src.clone(), TextureDesc::default())
        .unwrap();
    // Sweep across level 0 in windows of 4×4 tiles; come back to the first window.
    let window = |wx: u32| -> Vec<Query> {
        (0..256)
            .map(|i| Query {
                texture: tex,
                s: (wx as f32 * 512.0 + (i % 16) as f32 * 32.0 + 3.0) / 8192.0,
                t: ((i / 16) as f32 * 32.0 + 3.0) / 8192.0,
                ddx: [1.0 / 8192.0, 0.0],
                ddy: [0.0, 1.0 / 8192.0],
            })
            .collect()
    };
    let mut first = None;
    for wx in [0, 1, 2, 3, 4, 5, 0] {
        let r = render(&loader, &window(wx), 2, 20);
        assert!(r.converged);
        if wx == 0 {
            match &first {
                None => first = Some(r.values),
                Some(v) => assert_eq!(&r.values, v, "reloaded tiles give the same texels"),
            }
        }
        assert!(loader.stats().peak_resident_bytes <= 40 * TILE);
    }
    let s = loader.stats();
    assert!(s.pages_staged > 0, "{s:?}");
    assert!(s.evictions > 0, "{s:?}");
    assert!(s.tiles_filled > 16 * 6, "{s:?}");
}

#[test]
fn a_staged_page_requested_again_is_restored_without_a_read() {
    let loader = Loader::new(options(64 * TILE)).unwrap();
    let src = Arc::new(PatternSource::new(4096, 4096, TexelFormat::RGBA8, 1));
    let tex = loader
        .create_texture(src.clone(), TextureDesc::default())
        .unwrap();
    let at = |x: f32, y: f32| Query {
        texture: tex,
        s: x,
        t: y,
        ddx: [1.0 / 4096.0, 0.0],
        ddy: [0.0, 1.0 / 4096.0],
    };
    // Use 48 tiles of level 0, then leave them unused while asking for 40 others: 24+ must
    // be staged to make room, and the budget (64) leaves some staged but not reclaimed.
    let a: Vec<Query> = (0..48)
        .map(|i| at((i % 8) as f32 / 8.0 + 0.01, (i / 8) as f32 / 32.0 + 0.001))
        .collect();
    let b: Vec<Query> = (0..40)
        .map(|i| at((i % 8) as f32 / 8.0 + 0.01, 0.5 + (i / 8) as f32 / 32.0))
        .collect();
    assert!(render(&loader, &a, 1, 10).converged);
    // Age `a` without using it.
    for _ in 0..3 {
        let l = loader.launch_prepare();
        loader.process_requests(l).wait();
    }
    assert!(render(&loader, &b, 1, 10).converged);
    let reads_before = src.reads.load(std::sync::atomic::Ordering::Relaxed);
    let restores_before = loader.stats().second_chance_restores;
    let r = render(&loader, &a, 1, 10);
    assert!(r.converged);
    let s = loader.stats();
    let restored = s.second_chance_restores - restores_before;
    let reads = src.reads.load(std::sync::atomic::Ordering::Relaxed) - reads_before;
    assert!(restored > 0, "{s:?}");
    // Each tile of `a` is still resident, restored from staging, or read again — never
    // both restored and read.
    assert!(
        reads as u64 + restored <= 48,
        "reads {reads} + restores {restored}"
    );
    assert!((reads as u64) < 48, "some of `a` survived: {reads}");
}

#[test]
fn requests_over_the_per_launch_maximum_are_deferred_not_dropped() {
    let loader = Loader::new(LoaderOptions {
        max_requests_per_launch: 10,
        ..options(u64::MAX / 2)
    })
    .unwrap();
    let tex = loader
        .create_texture(
            Arc::new(PatternSource::new(4096, 4096, TexelFormat::RGBA32F, 3)),
            TextureDesc::default(),
        )
        .unwrap();
    let q: Vec<Query> = (0..64 * 64)
        .map(|i| Query {
            texture: tex,
            s: ((i % 64) as f32 + 0.5) / 64.0,
            t: ((i / 64) as f32 + 0.5) / 64.0,
            ddx: [0.1 / 4096.0, 0.0],
            ddy: [0.0, 0.1 / 4096.0],
        })
        .collect();
    let r = render(&loader, &q, 2, 1000);
    assert!(r.converged);
    let s = loader.stats();
    assert_eq!(s.tiles_filled, 64 * 64, "every tile read exactly once");
    assert!(
        s.deferred_over_limit > 0 && s.deferred_no_memory == 0,
        "{s:?}"
    );
    assert!(
        r.launches >= 64 * 64 / 10,
        "at most 10 fills a launch: {}",
        r.launches
    );
}

#[test]
fn failing_sources_resolve_to_their_fallback_and_leave_others_working() {
    let loader = Loader::new(options(u64::MAX / 2)).unwrap();
    let good = loader
        .create_texture(
            Arc::new(PatternSource::new(1024, 1024, TexelFormat::RGBA8, 9)),
            TextureDesc::default(),
        )
        .unwrap();
    let fallback = [0.0, 1.0, 0.0, 1.0];
    let bad: Vec<TextureId> = [
        Fault::FailOpen,
        Fault::PanicOpen,
        Fault::FailTilesAtLevel(0),
        Fault::PanicTilesAtLevel(0),
        Fault::HugeSize,
    ]
    .iter()
    .map(|&f| {
        let src = FaultySource::new(PatternSource::new(1024, 1024, TexelFormat::RGBA8, 2), f);
        loader
            .create_texture(
                Arc::new(src),
                TextureDesc {
                    fallback_color: fallback,
                    ..Default::default()
                },
            )
            .unwrap()
    })
    .collect();
    let unknown = TextureId(200);
    let mut q = Vec::new();
    for &t in bad.iter().chain([good, unknown].iter()) {
        for i in 0..50 {
            q.push(Query {
                texture: t,
                s: i as f32 / 50.0,
                t: 0.5,
                ddx: [1.0 / 1024.0, 0.0],
                ddy: [0.0, 1.0 / 1024.0],
            });
        }
    }
    let r = render(&loader, &q, 2, 20);
    assert!(r.converged, "failures resolve; nothing hangs");
    for (i, t) in bad.iter().enumerate() {
        assert!(loader.texture_error(*t).is_some(), "texture {i} failed");
        for v in &r.values[i * 50..(i + 1) * 50] {
            assert_eq!(*v, fallback, "texture {i}");
        }
    }
    assert!(loader.texture_error(good).is_none());
    assert!(r.values[250..300].iter().any(|v| *v != fallback));
    for v in &r.values[300..350] {
        assert_eq!(*v, demandtex::textures::DEFAULT_FALLBACK_COLOR);
    }
    let msg = loader.texture_error(bad[0]).unwrap().to_string();
    assert!(
        msg.contains("no such file") && msg.contains("faulty"),
        "{msg}"
    );
    let msg = loader.texture_error(bad[3]).unwrap().to_string();
    assert!(
        msg.contains("panicked") && msg.contains("decoder bug"),
        "{msg}"
    );
    let s = loader.stats();
    assert_eq!(s.failed_textures, 5);
    assert!(s.read_errors >= 2);
}

#[test]
fn not_yet_defers_to_a_later_launch() {
    let loader = Loader::new(options(u64::MAX / 2)).unwrap();
    let src = FaultySource::new(
        PatternSource::new(512, 512, TexelFormat::RGBA8, 4),
        Fault::NotYet(2),
    );
    let tex = loader
        .create_texture(Arc::new(src), TextureDesc::default())
        .unwrap();
    let q = vec![Query {
        texture: tex,
        s: 0.3,
        t: 0.3,
        ddx: [1.0 / 512.0, 0.0],
        ddy: [0.0, 1.0 / 512.0],
    }];
    let r = render(&loader, &q, 1, 20);
    assert!(r.converged);
    assert!(
        r.launches >= 5,
        "tail deferred twice, then the tile twice: {}",
        r.launches
    );
    assert!(loader.stats().deferred_not_yet >= 4);
}

#[test]
fn shrinking_the_budget_evicts_and_keeps_rendering() {
    let loader = Loader::new(options(u64::MAX / 2)).unwrap();
    let tex = loader
        .create_texture(
            Arc::new(PatternSource::new(4096, 4096, TexelFormat::RGBA8, 5)),
            TextureDesc::default(),
        )
        .unwrap();
    let q: Vec<Query> = (0..32 * 32)
        .map(|i| Query {
            texture: tex,
            s: ((i % 32) as f32 + 0.5) / 32.0,
            t: ((i / 32) as f32 + 0.5) / 32.0,
            ddx: [1.0 / 4096.0, 0.0],
            ddy: [0.0, 1.0 / 4096.0],
        })
        .collect();
    let full = render(&loader, &q, 2, 20);
    assert!(full.converged);
    assert!(loader.stats().resident_bytes > 1000 * TILE);
    loader.set_max_texture_memory(100 * TILE).unwrap();
    let s = loader.stats();
    assert!(s.resident_bytes <= 100 * TILE, "{s:?}");
    assert_eq!(s.budget_bytes, 100 * TILE);
    assert!(
        loader.set_max_texture_memory(10).is_err(),
        "below the mip tails"
    );
    // Render a part that fits.
    let part: Vec<Query> = q[..64].to_vec();
    let r = render(&loader, &part, 2, 20);
    assert!(r.converged);
    assert_eq!(r.values, full.values[..64].to_vec());
    assert!(loader.stats().resident_bytes <= 100 * TILE);
}

#[test]
fn sampling_threads_run_while_fills_run() {
    let loader = Loader::new(options(200 * TILE)).unwrap();
    let texes: Vec<TextureId> = (0..4)
        .map(|i| {
            loader
                .create_texture(
                    Arc::new(PatternSource::new(4096, 2048, TexelFormat::RGBA16F, i)),
                    TextureDesc::default(),
                )
                .unwrap()
        })
        .collect();
    let opts = SampleOptions::default();
    for threads in [2usize, 4, 8] {
        let mut pending = None;
        for round in 0..10u32 {
            let launch = loader.launch_prepare();
            std::thread::scope(|s| {
                for th in 0..threads {
                    let launch = &launch;
                    let texes = &texes;
                    s.spawn(move || {
                        for i in 0..2000u32 {
                            let k = i
                                .wrapping_mul(2654435761)
                                .wrapping_add(th as u32 * 7919 + round * 31);
                            let t = texes[(k % 4) as usize];
                            let u = (k % 1000) as f32 / 1000.0;
                            let v = ((k / 1000) % 1000) as f32 / 1000.0;
                            let r = launch.tex2d_lod(t, u, v, (k % 5) as f32 * 0.7, &opts);
                            assert!(r.value.iter().all(|c| c.is_finite()));
                        }
                    });
                }
            });
            // Do not wait for the previous fills: they overlap this launch's sampling.
            let ticket = loader.process_requests(launch);
            if let Some(prev) = pending.replace(ticket) {
                let prev: demandtex::Ticket = prev;
                prev.wait();
            }
            assert!(loader.stats().peak_resident_bytes <= 200 * TILE);
        }
        if let Some(t) = pending {
            t.wait();
        }
    }
    assert!(loader.stats().tiles_filled > 0);
}

#[test]
fn stats_serialise_with_the_documented_keys() {
    let loader = Loader::new(options(1 << 30)).unwrap();
    let v = serde_json::to_value(loader.stats()).unwrap();
    for k in [
        "virtual_bytes",
        "textures",
        "requests",
        "tiles_filled",
        "bytes_read",
        "second_chance_restores",
        "evictions",
        "resident_bytes",
        "peak_resident_bytes",
        "budget_bytes",
        "fill_seconds",
        "launches",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
}

/// Textures first sampled when the budget is full of another texture's stale tiles open
/// (their mip tails take the room of evicted tiles) and converge: reservations take free
/// memory only, so staged tiles are freed for them.
#[test]
fn textures_opened_when_the_budget_is_full_of_stale_tiles_converge() {
    for mode in [StreamingMode::Final, StreamingMode::Interactive] {
        opened_when_the_budget_is_full(mode);
    }
}

fn opened_when_the_budget_is_full(mode: StreamingMode) {
    let loader = Loader::new(LoaderOptions {
        mode,
        ..options(64 * TILE)
    })
    .unwrap();
    let filler = loader
        .create_texture(
            Arc::new(PatternSource::new(1024, 1024, TexelFormat::RGBA8, 7)),
            TextureDesc::default(),
        )
        .unwrap();
    let o = SampleOptions::default();
    // Interactive fills run behind the launches: launch until the budget is full.
    for _ in 0..400 {
        let launch = loader.launch_prepare();
        for y in 0..8 {
            for x in 0..8 {
                let (s, t) = ((x as f32 + 0.5) / 8.0, (y as f32 + 0.5) / 8.0);
                launch.tex2d_lod(filler, s, t, 0.0, &o);
            }
        }
        loader.process_requests(launch).wait();
        let stats = loader.engine().stats();
        if stats.budget_bytes - stats.resident_bytes < TILE {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let stats = loader.engine().stats();
    assert!(
        stats.budget_bytes - stats.resident_bytes < TILE,
        "{stats:?}"
    );
    // Four mip tails of about 21 KiB each: more than the budget has left.
    let late: Vec<TextureId> = (0..4)
        .map(|i| {
            let src = PatternSource::new(512, 512, TexelFormat::RGBA8, 9 + i);
            loader
                .create_texture(Arc::new(src), TextureDesc::default())
                .unwrap()
        })
        .collect();
    let mut passes = 0;
    let limit = if mode == StreamingMode::Final {
        12
    } else {
        400
    };
    loop {
        let launch = loader.launch_prepare();
        let resident = late
            .iter()
            .filter(|&&t| launch.tex2d_lod(t, 0.3, 0.6, 0.0, &o).resident)
            .count();
        loader.process_requests(launch).wait();
        passes += 1;
        if resident == late.len() {
            break;
        }
        if mode == StreamingMode::Interactive {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let stats = loader.engine().stats();
        assert!(
            passes < limit,
            "{resident} of 4 resident after {passes} passes: {stats:?}"
        );
    }
    let stats = loader.engine().stats();
    assert!(stats.peak_resident_bytes <= stats.budget_bytes, "{stats:?}");
}
