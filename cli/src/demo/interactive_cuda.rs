//! `demandtex demo --interactive --backend cuda`: the camera path of [`super::interactive`]
//! rendered on device 0 by cli/kernels/demo_render.cu's `dtex_demo_frame` through a
//! [`CudaLoader`] in interactive mode — the frame never waits for a fill; a lookup that
//! misses shows the finest resident coarser level (`fallbackToCoarser`) and records its
//! request (rejected at random with the previous launch's `RP`; the request key is the
//! thread's global index, i.e. the pixel) — then the same frames with every needed tile
//! resident and untextured, timed the same way. The outputs are the CPU run's
//! (`frames.csv`, `interactive.json`, `interactive.png`).
//!
//! A frame's time is the host's wall clock from `launch_prepare` (its publication) through
//! the kernel, enqueued, and `process_requests` (which publishes tiles while the kernel
//! runs, under the default `TilePublication::DuringLaunch`, and hands the requests to the
//! fill threads) to the kernel's counter of pixels at full detail, read back. The reference
//! runs time the same order.

use super::cuda::{device_camera, device_quads, open_cuda_loader};
use super::cuda_render::DemoRenderer;
use super::interactive::{
    begin, camera_path, median_of, reference_options, slow_store, streaming_options, summarize,
    write_outputs, REFERENCE_LAUNCHES, REFERENCE_TIMINGS,
};
use super::interactive_io::{FramePhases, FrameRecord};
use super::render::Frame;
use super::scene::Scene;
use super::DemoArgs;
use crate::error::CliError;
use demandtex::TextureId;
use demandtex_cuda::{CudaLoader, TilePublication};
use std::time::{Duration, Instant};

/// Run the interactive demo on device 0; returns the scene's virtual texture bytes and
/// texture count. Without a driver or device: the probe's error (exit code 2), nothing
/// written.
pub fn run(args: &DemoArgs) -> Result<(u64, usize), CliError> {
    let device = demandtex_cuda::probe_device(0).map_err(crate::cuda::unavailable)?;
    let (scene, note) = super::cuda::scene_for_device(&device, args.texture_size);
    begin(args, " on CUDA")?;
    if let Some(note) = note {
        println!("{note}");
    }
    let (mut records, last_stream, stats, device, publication) = streaming_run(&scene, args)?;
    println!("streaming run done; reference runs (every needed tile resident; untextured)");
    let last_resident = reference_runs(&scene, args, &mut records)?;
    let mut summary = summarize(args, &records, &last_stream, &last_resident, &stats);
    summary.insert("backend".into(), "cuda".into());
    summary.insert("device".into(), device.into());
    let publication = match publication {
        TilePublication::BeforeLaunch => "before_launch",
        TilePublication::DuringLaunch => "during_launch",
    };
    summary.insert("tile_publication".into(), publication.into());
    write_outputs(args, &records, &summary)?;
    Ok((super::virtual_texture_bytes(&scene)?, scene.textures.len()))
}

/// `scene`'s textures on `loader`, each read delayed by `latency`.
fn create_textures(
    loader: &CudaLoader,
    scene: &Scene,
    latency: Duration,
) -> Result<Vec<TextureId>, CliError> {
    scene
        .textures
        .iter()
        .map(|t| {
            let source = slow_store(t.source(), latency)?;
            Ok(loader.create_texture(source, t.desc())?)
        })
        .collect()
}

/// A renderer of `scene` through frame 0's camera (each frame sets its own).
fn renderer(
    loader: &CudaLoader,
    scene: &Scene,
    ids: &[TextureId],
    args: &DemoArgs,
) -> Result<DemoRenderer, CliError> {
    let (camera, _) = camera_path(0, args.frames, args.width, args.height);
    Ok(DemoRenderer::new(
        loader,
        device_camera(&camera),
        [scene.light.x, scene.light.y, scene.light.z],
        &device_quads(scene, ids),
    )?)
}

fn image(renderer: &DemoRenderer, args: &DemoArgs) -> Result<Frame, CliError> {
    Ok(Frame {
        width: args.width,
        height: args.height,
        pixels: renderer.pixels()?,
    })
}

/// The streaming run's records, last frame, statistics, device name and tile publication.
type StreamingRun = (
    Vec<FrameRecord>,
    Frame,
    demandtex::Stats,
    String,
    TilePublication,
);

/// The streaming frames: never waiting for a fill, paced to `--fps` when given.
fn streaming_run(scene: &Scene, args: &DemoArgs) -> Result<StreamingRun, CliError> {
    let loader = open_cuda_loader(0, streaming_options(args, !args.no_rejection))?;
    if args.publish_before_launch {
        loader.set_tile_publication(TilePublication::BeforeLaunch);
    }
    let ids = create_textures(&loader, scene, Duration::from_millis(args.io_latency_ms))?;
    let mut frame = renderer(&loader, scene, &ids, args)?;
    let period = (args.fps > 0.0).then(|| Duration::from_secs_f64(1.0 / args.fps));
    let total = frame.pixel_count().max(1) as f64;
    let mut records = Vec::with_capacity(args.frames as usize);
    for f in 0..args.frames {
        let (camera, cut) = camera_path(f, args.frames, args.width, args.height);
        frame.set_camera(device_camera(&camera));
        let before = loader.stats();
        let published_before = loader.cuda_stats().publications;
        let start = Instant::now();
        let launch = loader.launch_prepare()?;
        let prepared = start.elapsed();
        frame.enqueue_frame(&launch, false)?;
        let enqueued = start.elapsed();
        let ticket = loader.process_requests(launch)?; // never waited for
        let processed = start.elapsed();
        let (full, shade) = frame.finish_frame()?;
        let seconds = start.elapsed().as_secs_f64();
        drop(ticket);
        let after = loader.stats();
        let published = loader.cuda_stats().publications - published_before;
        let phases = FramePhases {
            prepare: prepared.as_secs_f64(),
            shade,
            process: (processed - enqueued).as_secs_f64(),
        };
        records.push(
            FrameRecord::streaming(
                (f, cut),
                seconds,
                published,
                full as f64 / total,
                &before,
                &after,
            )
            .with_phases(phases),
        );
        if let Some(p) = period {
            std::thread::sleep(p.saturating_sub(start.elapsed()));
        }
    }
    let last = image(&frame, args)?;
    // Fills still queued are cancelled, not waited for.
    loader.cancel_queued_fills();
    let device = loader.device_info().name.clone();
    Ok((
        records,
        last,
        loader.stats(),
        device,
        loader.tile_publication(),
    ))
}

/// For every frame: make its tiles resident (untimed), then time it textured and
/// untextured ([`REFERENCE_TIMINGS`] times each, the median kept), as the CPU reference.
fn reference_runs(
    scene: &Scene,
    args: &DemoArgs,
    records: &mut [FrameRecord],
) -> Result<Frame, CliError> {
    let loader = open_cuda_loader(0, reference_options(args))?;
    let ids = create_textures(&loader, scene, Duration::ZERO)?;
    let mut frame = renderer(&loader, scene, &ids, args)?;
    let total = frame.pixel_count() as u32;
    for r in records.iter_mut() {
        let (camera, _) = camera_path(r.frame, args.frames, args.width, args.height);
        frame.set_camera(device_camera(&camera));
        let mut converged = false;
        for _ in 0..REFERENCE_LAUNCHES {
            let launch = loader.launch_prepare()?;
            let full = frame.frame(&launch, false)?;
            loader.process_requests(launch)?.wait();
            if full == total {
                converged = true;
                break;
            }
        }
        if !converged {
            return Err(CliError::Demandtex(format!(
                "reference frame {} did not converge in {REFERENCE_LAUNCHES} launches",
                r.frame
            )));
        }
        let mut failure = None;
        let mut time = |untextured: bool| {
            median_of(REFERENCE_TIMINGS, || {
                let start = Instant::now();
                let run = loader.launch_prepare().and_then(|launch| {
                    frame.enqueue_frame(&launch, untextured)?;
                    let ticket = loader.process_requests(launch)?;
                    frame.finish_frame()?;
                    Ok(ticket)
                });
                let seconds = start.elapsed().as_secs_f64();
                match run {
                    Ok(ticket) => ticket.wait(),
                    Err(e) => failure = Some(e),
                }
                seconds
            })
        };
        r.resident_seconds = time(false);
        r.untextured_seconds = time(true);
        if let Some(e) = failure {
            return Err(e.into());
        }
    }
    // The last frame, textured again (the untextured timing overwrote the pixels).
    let launch = loader.launch_prepare()?;
    frame.frame(&launch, false)?;
    loader.process_requests(launch)?.wait();
    image(&frame, args)
}
