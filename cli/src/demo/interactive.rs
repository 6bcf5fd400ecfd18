//! `demandtex demo --interactive`: a camera path through the built-in scene, frame by
//! frame, as a viewport renders it — the frame never waits for a fill; detail sharpens
//! over the next frames. The same frames are rendered again with every needed tile
//! resident (a reference loader that converges each frame before timing it) and without
//! texturing, so each streaming frame is compared with its resident counterpart.
//!
//! Per frame: time, requests made / rejected / dropped, publications, resident bytes and
//! the fraction of pixels at full detail (every lookup resident at the level it asked for;
//! the others show the finest resident coarser level). Outputs `frames.csv`,
//! `interactive.json` and `interactive.png` (see [`super::interactive_plot`]).

use super::camera::{Camera, Vec3};
use super::interactive_io::{frame_stats_json, write_csv, FramePhases, FrameRecord};
use super::render::{Frame, RenderJob};
use super::scene::Scene;
use super::DemoArgs;
use crate::error::CliError;
use demandtex::sources::fault::{FaultInjectingSource, FaultPlan, FaultSites};
use demandtex::sources::ImageSource;
use demandtex::{Launch, Loader, LoaderOptions, SampleOptions, StreamingMode, TextureId};
use rayon::prelude::*;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A frame slower than this many times its resident counterpart is a stall.
pub const STALL_RATIO: f64 = 1.5;

/// The camera of frame `f` of `n`: a dolly down the corridor for the first half, a cut to
/// a view of the far billboard that settles over a quarter of the frames and then holds
/// still. Returns the camera and whether frame `f` is the cut.
pub fn camera_path(f: u32, n: u32, width: u32, height: u32) -> (Camera, bool) {
    let cut = n / 2;
    let up = Vec3::new(0.0, 1.0, 0.0);
    if f < cut {
        let k = f as f64 / cut.max(1) as f64;
        let z = 6.0 * k;
        let eye = Vec3::new(0.3 * k, 1.7, z);
        let target = Vec3::new(0.6 - 1.2 * k, 1.3, z + 12.0);
        return (Camera::look_at(eye, target, up, 50.0, width, height), false);
    }
    let settle = ((n - cut) / 2).max(1);
    let k = ((f - cut) as f64 / settle as f64).min(1.0);
    let eye = Vec3::new(5.0 - 0.6 * k, 2.2, 46.0 - 3.0 * k);
    let target = Vec3::new(-4.5, 2.6, 32.0);
    (
        Camera::look_at(eye, target, up, 50.0, width, height),
        f == cut,
    )
}

/// How pixels are shaded in one timed frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shading {
    /// Texture lookups (a miss shows the finest resident coarser level).
    Textured,
    /// Geometry and lighting only.
    Untextured,
}

/// A pixel's jitter for stochastic filtering, in [0, 1)²: the same in every frame and
/// run, so the streaming and the resident frames agree texel for texel.
fn pixel_jitter(key: u32) -> [f32; 2] {
    let h = key.wrapping_mul(0x9E37_79B9) ^ (key >> 15);
    let h = h.wrapping_mul(0x85EB_CA6B);
    [(h & 0xFFFF) as f32 / 65536.0, (h >> 16) as f32 / 65536.0]
}

/// One pixel: its colour and whether every lookup was at full detail.
fn shade(launch: &Launch, job: &RenderJob<'_>, i: u32, j: u32, mode: Shading) -> ([f32; 4], bool) {
    let rays = job.camera.pixel_rays(i, j);
    let Some(hit) = job.scene.intersect(&rays) else {
        return (job.scene.sky(&rays[0]), true);
    };
    let (base, detail) = job.scene.lookups(&hit);
    if mode == Shading::Untextured {
        return (
            job.scene.shade(&hit, [0.5; 4], detail.map(|_| [1.0; 4])),
            true,
        );
    }
    let key = j * job.width + i;
    // A lookup not at full detail shows the finest resident coarser level (its requests
    // were made); `Sample::full_detail` tells the two apart.
    let options = SampleOptions {
        request_key: key,
        fallback_to_coarser: true,
        stochastic: job.stochastic.then(|| pixel_jitter(key)),
    };
    let look = |l: &super::scene::Lookup| {
        let id = job.textures[l.texture];
        let s = launch.tex2d_grad(id, l.st[0], l.st[1], l.ddx, l.ddy, &options);
        (s.value, s.full_detail())
    };
    let (b, b_full) = look(&base);
    let (d, d_full) = match detail {
        Some(l) => {
            let (v, full) = look(&l);
            (Some(v), full)
        }
        None => (None, true),
    };
    (job.scene.shade(&hit, b, d), b_full && d_full)
}

/// Shade every pixel of `job` in `launch` on `pool`; returns the image and the pixels at
/// full detail.
pub(super) fn shade_frame(
    launch: &Launch,
    job: &RenderJob<'_>,
    pool: &rayon::ThreadPool,
    mode: Shading,
) -> (Frame, Vec<bool>) {
    let (w, h) = (job.width as usize, job.height as usize);
    let mut pixels = vec![[0.0f32; 4]; w * h];
    let mut full = vec![false; w * h];
    pool.install(|| {
        pixels
            .par_chunks_mut(w)
            .zip(full.par_chunks_mut(w))
            .enumerate()
            .for_each(|(j, (row, row_full))| {
                for i in 0..w {
                    let (c, f) = shade(launch, job, i as u32, j as u32, mode);
                    row[i] = c;
                    row_full[i] = f;
                }
            });
    });
    let frame = Frame {
        width: job.width,
        height: job.height,
        pixels,
    };
    (frame, full)
}

/// A loader over the scene's textures (each read delayed by `latency`).
pub(super) fn scene_loader(
    scene: &Scene,
    options: LoaderOptions,
    latency: Duration,
) -> Result<(Loader, Vec<TextureId>), CliError> {
    let loader = Loader::new(options)?;
    let ids = scene
        .textures
        .iter()
        .map(|t| {
            let source = slow_store(t.source(), latency)?;
            Ok(loader.create_texture(source, t.desc())?)
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    Ok((loader, ids))
}

/// `source` on a slow store: every tile and mip-tail read first sleeps `latency` (core's
/// fault-injecting source with latency and no faults); `source` itself when `latency` is 0.
pub(super) fn slow_store(
    source: Arc<dyn ImageSource>,
    latency: Duration,
) -> Result<Arc<dyn ImageSource>, CliError> {
    if latency.is_zero() {
        return Ok(source);
    }
    let plan = FaultPlan {
        latency,
        sites: FaultSites::reads(),
        ..FaultPlan::default()
    };
    Ok(Arc::new(FaultInjectingSource::new(source, plan)?))
}

/// The streaming loader's options for `args`.
pub fn streaming_options(args: &DemoArgs, rejection: bool) -> LoaderOptions {
    let d = LoaderOptions::default();
    LoaderOptions {
        max_texture_memory: args.budget_mb << 20,
        // 0: the library's default for an interactive loader.
        fill_threads: args.fill_threads,
        fill_cpu_cores: (args.fill_cpu_cores > 0.0).then_some(args.fill_cpu_cores),
        mode: StreamingMode::Interactive,
        request_rejection: Some(rejection),
        max_requests_per_launch: if args.request_cap == 0 {
            d.max_requests_per_launch
        } else {
            args.request_cap
        },
        max_publications_per_launch: if args.publish_cap == 0 {
            d.max_publications_per_launch
        } else {
            args.publish_cap
        },
        ..d
    }
}

/// Run the streaming frames of the camera path, pacing them to `--fps` when given.
fn streaming_run(
    scene: &Scene,
    args: &DemoArgs,
    pool: &rayon::ThreadPool,
) -> Result<(Vec<FrameRecord>, Frame, demandtex::Stats), CliError> {
    let latency = Duration::from_millis(args.io_latency_ms);
    let (loader, ids) = scene_loader(scene, streaming_options(args, !args.no_rejection), latency)?;
    let period = (args.fps > 0.0).then(|| Duration::from_secs_f64(1.0 / args.fps));
    let mut records = Vec::with_capacity(args.frames as usize);
    let mut last = None;
    for f in 0..args.frames {
        let (camera, cut) = camera_path(f, args.frames, args.width, args.height);
        let job = job(scene, &ids, &camera, args);
        let before = loader.stats();
        let start = Instant::now();
        let published = loader.publish_pending().unwrap_or(0);
        let launch = loader.launch_prepare();
        let prepared = start.elapsed();
        let (frame, full) = shade_frame(&launch, &job, pool, Shading::Textured);
        let shaded = start.elapsed();
        let ticket = loader.process_requests(launch); // never waited for
        let seconds = start.elapsed().as_secs_f64();
        drop(ticket);
        let phases = FramePhases {
            prepare: prepared.as_secs_f64(),
            shade: (shaded - prepared).as_secs_f64(),
            process: seconds - shaded.as_secs_f64(),
        };
        let after = loader.stats();
        let full_detail = full.iter().filter(|&&x| x).count() as f64 / full.len().max(1) as f64;
        records.push(
            FrameRecord::streaming(
                (f, cut),
                seconds,
                published as u64,
                full_detail,
                &before,
                &after,
            )
            .with_phases(phases),
        );
        last = Some(frame);
        if let Some(p) = period {
            std::thread::sleep(p.saturating_sub(start.elapsed()));
        }
    }
    // Fills still queued are cancelled, not waited for.
    loader.cancel_queued_fills();
    let stats = loader.stats();
    Ok((records, last.unwrap_or_else(|| empty(args)), stats))
}

fn empty(args: &DemoArgs) -> Frame {
    Frame {
        width: args.width,
        height: args.height,
        pixels: vec![[0.0; 4]; args.width as usize * args.height as usize],
    }
}

pub(super) fn job<'a>(
    scene: &'a Scene,
    ids: &'a [TextureId],
    camera: &'a Camera,
    args: &DemoArgs,
) -> RenderJob<'a> {
    RenderJob {
        scene,
        textures: ids,
        camera,
        width: args.width,
        height: args.height,
        max_launches: args.max_launches,
        stochastic: args.stochastic,
    }
}

/// The reference runs' loader: final mode, room for one frame's working set at any point
/// of the path (with eviction between).
pub(super) fn reference_options(args: &DemoArgs) -> LoaderOptions {
    LoaderOptions {
        max_texture_memory: (args.budget_mb << 20).max(1 << 30) * 4,
        fill_threads: args.threads,
        ..LoaderOptions::default()
    }
}

/// Launches a reference frame may take to converge before it is timed.
pub(super) const REFERENCE_LAUNCHES: u32 = 64;

/// Timings of each reference frame; the median is kept. The same frame, all resident,
/// takes the same work each time: the median drops the odd slow one (a vCPU taken away
/// for a few milliseconds), so each streaming frame is compared with what its resident
/// counterpart usually costs.
pub(super) const REFERENCE_TIMINGS: usize = 3;

/// The median of `n` values of `time` (run `n` times, in order).
pub(super) fn median_of(n: usize, mut time: impl FnMut() -> f64) -> f64 {
    let mut t: Vec<f64> = (0..n.max(1)).map(|_| time()).collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The reference runs: for every frame, make its tiles resident (untimed), then time it
/// textured and untextured ([`REFERENCE_TIMINGS`] times each, the median kept). Fills `resident_seconds` and `untextured_seconds`; returns the
/// last resident frame.
fn reference_runs(
    scene: &Scene,
    args: &DemoArgs,
    pool: &rayon::ThreadPool,
    records: &mut [FrameRecord],
) -> Result<Frame, CliError> {
    let (loader, ids) = scene_loader(scene, reference_options(args), Duration::ZERO)?;
    let mut last = None;
    for r in records.iter_mut() {
        let (camera, _) = camera_path(r.frame, args.frames, args.width, args.height);
        let job = job(scene, &ids, &camera, args);
        for _ in 0..REFERENCE_LAUNCHES {
            let launch = loader.launch_prepare();
            let (_, full) = shade_frame(&launch, &job, pool, Shading::Textured);
            loader.process_requests(launch).wait();
            if full.iter().all(|&x| x) {
                break;
            }
        }
        let mut frame = None;
        r.resident_seconds = median_of(REFERENCE_TIMINGS, || {
            let start = Instant::now();
            loader.publish_pending().ok();
            let launch = loader.launch_prepare();
            let (image, full) = shade_frame(&launch, &job, pool, Shading::Textured);
            let ticket = loader.process_requests(launch);
            let seconds = start.elapsed().as_secs_f64();
            ticket.wait();
            frame.get_or_insert((image, full.iter().all(|&x| x)));
            seconds
        });
        let Some((image, true)) = frame else {
            return Err(CliError::Demandtex(format!(
                "reference frame {} did not converge in {REFERENCE_LAUNCHES} launches",
                r.frame
            )));
        };
        r.untextured_seconds = median_of(REFERENCE_TIMINGS, || {
            let start = Instant::now();
            let launch = loader.launch_prepare();
            shade_frame(&launch, &job, pool, Shading::Untextured);
            drop(loader.process_requests(launch));
            start.elapsed().as_secs_f64()
        });
        last = Some(image);
    }
    Ok(last.unwrap_or_else(|| empty(args)))
}

/// With a request cap, from a static camera (frame 0's): launches until every pixel is at
/// full detail (each launch's fills waited for, so the count does not depend on timing),
/// and what the first launch whose requests included tiles (not only textures to open)
/// brought: how evenly its progress spread over the image, and the pixels at full detail
/// after it.
pub fn cap_experiment(
    scene: &Scene,
    args: &DemoArgs,
    pool: &rayon::ThreadPool,
    rejection: bool,
) -> Result<Map<String, Value>, CliError> {
    let (loader, ids) = scene_loader(scene, streaming_options(args, rejection), Duration::ZERO)?;
    let (camera, _) = camera_path(0, args.frames, args.width, args.height);
    let job = job(scene, &ids, &camera, args);
    // The full-detail pixels of the launch before the first tile fills.
    let mut before_tiles: Option<Vec<bool>> = None;
    let mut first_tiles = None;
    let mut frames = None;
    let mut by_launch = Vec::new();
    for launch_index in 1..=args.max_launches.max(64) {
        let launch = loader.launch_prepare();
        let (_, full) = shade_frame(&launch, &job, pool, Shading::Textured);
        let at_full = full.iter().filter(|&&x| x).count() as f64 / full.len() as f64;
        by_launch.push(at_full);
        if first_tiles.is_none() {
            if let Some(before) = &before_tiles {
                let (cells, cv) = progress_spread(before, &full, args.width, args.height);
                first_tiles = Some((cells, cv, at_full));
            }
        }
        let filled = loader.stats().tiles_filled;
        loader.process_requests(launch).wait();
        if full.iter().all(|&x| x) {
            frames = Some(launch_index);
            break;
        }
        if before_tiles.is_none() && loader.stats().tiles_filled > filled {
            before_tiles = Some(full);
        }
    }
    let mut m = Map::new();
    m.insert("rejection".into(), rejection.into());
    m.insert("request_cap".into(), (args.request_cap as u64).into());
    m.insert(
        "frames_to_full_detail".into(),
        frames.map_or(Value::Null, Value::from),
    );
    if let Some((cells, cv, at_full)) = first_tiles {
        m.insert("first_progress_cells_fraction".into(), cells.into());
        m.insert("first_progress_cell_cv".into(), cv.into());
        m.insert("full_detail_after_first_tiles".into(), at_full.into());
    }
    m.insert(
        "requests_rejected".into(),
        loader.stats().requests_rejected.into(),
    );
    // Σ over launches of the fraction of pixels not yet at full detail: the launches a
    // pixel waits for full detail, on average (a lower bound if it was not reached).
    let mean_wait: f64 = by_launch.iter().map(|f| 1.0 - f).sum();
    m.insert("mean_launches_to_full_detail".into(), mean_wait.into());
    m.insert("full_detail_by_launch".into(), by_launch.into());
    Ok(m)
}

/// Cells of an 8×8 grid over the image: the fraction of cells (among those with pixels
/// not yet at full detail before) where some pixel reached full detail, and the
/// coefficient of variation of the per-cell fraction of pixels that did.
fn progress_spread(before: &[bool], after: &[bool], width: u32, height: u32) -> (f64, f64) {
    const G: usize = 8;
    let (w, h) = (width as usize, height as usize);
    let mut pending = [0usize; G * G];
    let mut gained = [0usize; G * G];
    for j in 0..h {
        for i in 0..w {
            let p = j * w + i;
            if !before[p] {
                let c = (j * G / h) * G + i * G / w;
                pending[c] += 1;
                gained[c] += after[p] as usize;
            }
        }
    }
    let fractions: Vec<f64> = (0..G * G)
        .filter(|&c| pending[c] > 0)
        .map(|c| gained[c] as f64 / pending[c] as f64)
        .collect();
    let n = fractions.len().max(1) as f64;
    let touched = fractions.iter().filter(|&&f| f > 0.0).count() as f64 / n;
    let mean = fractions.iter().sum::<f64>() / n;
    let var = fractions.iter().map(|f| (f - mean).powi(2)).sum::<f64>() / n;
    let cv = if mean > 0.0 { var.sqrt() / mean } else { 0.0 };
    (touched, cv)
}

/// Make the output folder and say what runs (`on`: where it renders).
pub(super) fn begin(args: &DemoArgs, on: &str) -> Result<(), CliError> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Io(format!("{}: {e}", args.out.display())))?;
    println!(
        "interactive{on}: {} frames, I/O latency {} ms per tile read, rejection {}",
        args.frames,
        args.io_latency_ms,
        if args.no_rejection { "off" } else { "on" }
    );
    Ok(())
}

/// Run the interactive demo (CPU).
pub fn run(args: &DemoArgs, scene: &Scene, pool: &rayon::ThreadPool) -> Result<(), CliError> {
    begin(args, "")?;
    let (mut records, last_stream, stats) = streaming_run(scene, args, pool)?;
    println!("streaming run done; reference runs (every needed tile resident; untextured)");
    let last_resident = reference_runs(scene, args, pool, &mut records)?;
    let mut summary = summarize(args, &records, &last_stream, &last_resident, &stats);
    summary.insert("threads".into(), (pool.current_num_threads() as u64).into());
    if args.request_cap != 0 {
        let on = cap_experiment(scene, args, pool, true)?;
        let off = cap_experiment(scene, args, pool, false)?;
        summary.insert("request_cap_rejection_on".into(), Value::Object(on));
        summary.insert("request_cap_rejection_off".into(), Value::Object(off));
    }
    write_outputs(args, &records, &summary)
}

/// The summary of a run: frame statistics, the streaming loader's counters and how the
/// last streaming frame differs from the last resident one.
pub(super) fn summarize(
    args: &DemoArgs,
    records: &[FrameRecord],
    last_stream: &Frame,
    last_resident: &Frame,
    stats: &demandtex::Stats,
) -> Map<String, Value> {
    let last_diff = last_stream.max_abs_diff(last_resident);
    let mut summary = frame_stats_json(records, STALL_RATIO);
    summary.insert("io_latency_ms".into(), args.io_latency_ms.into());
    summary.insert("requests_rejected".into(), stats.requests_rejected.into());
    summary.insert("requests_dropped".into(), stats.requests_dropped.into());
    summary.insert(
        "fills_dropped_stale".into(),
        stats.fills_dropped_stale.into(),
    );
    summary.insert("budget_bytes".into(), stats.budget_bytes.into());
    summary.insert(
        "peak_resident_bytes".into(),
        stats.peak_resident_bytes.into(),
    );
    summary.insert(
        "last_frame_max_abs_diff_vs_resident".into(),
        serde_json::Number::from_f64(last_diff as f64).map_or(Value::Null, Value::Number),
    );
    summary.insert("fps_target".into(), args.fps.into());
    summary.insert("stochastic".into(), args.stochastic.into());
    summary.insert("width".into(), args.width.into());
    summary.insert("height".into(), args.height.into());
    summary.insert(
        "fill_threads".into(),
        (streaming_options(args, true).fill_thread_count() as u64).into(),
    );
    summary
}

/// Write `frames.csv`, `interactive.json` and `interactive.png`, and print the summary.
pub(super) fn write_outputs(
    args: &DemoArgs,
    records: &[FrameRecord],
    summary: &Map<String, Value>,
) -> Result<(), CliError> {
    write_csv(&args.out.join("frames.csv"), records)?;
    super::output::write_json(&args.out.join("interactive.json"), summary)?;
    super::interactive_plot::write(&args.out.join("interactive.png"), records)?;
    print!("{}", crate::table::object_table(summary).render());
    println!(
        "wrote {}/frames.csv, interactive.json, interactive.png",
        args.out.display()
    );
    Ok(())
}

#[cfg(test)]
#[path = "interactive_tests.rs"]
mod tests;
