//! `demandtex demo --backend cuda`: the demo scene rendered by cli/kernels/demo_render.cu's
//! `dtex_demo_render` through a [`CudaLoader`] on device 0, multi-pass until converged,
//! with the same pixel window as the CPU render (render.rs) and the same outputs.

use super::builtin::{self, SceneSize};
use super::camera::{Camera, Vec3};
use super::cuda_kernel::{DemoCamera, DemoLayer, DemoQuad};
use super::cuda_render::DemoRenderer;
use super::output::{self, RunSummary};
use super::render::{Frame, RenderOutcome, Window};
use super::scene::{Layer, Scene};
use super::{render_scene, virtual_texture_bytes, DemoArgs, DemoReport, UNLIMITED_BYTES};
use crate::error::CliError;
use crate::progress::Progress;
use crate::table::{format_bytes, object_table};
use demandtex::textures::AddressMode;
use demandtex::{LoaderOptions, Stats, TextureId};
use demandtex_cuda::{CudaLoader, CudaStats};
use std::time::Instant;

/// What a CUDA render produced.
pub struct CudaRender {
    /// The image and how the render went.
    pub outcome: RenderOutcome,
    /// The engine's statistics.
    pub stats: Stats,
    /// The device side's.
    pub cuda: CudaStats,
    /// The device's name.
    pub device: String,
}

/// The built-in scene for `device` with textures of `texture_size` or, where one of them
/// is more than the device takes as one texture ([`demandtex_cuda::check_texture_fits`]),
/// of the largest power of two below it that every texture fits; with the note to print
/// when the size was lowered.
pub fn scene_for_device(
    device: &demandtex_cuda::CudaDeviceInfo,
    texture_size: u32,
) -> (Scene, Option<String>) {
    let fits = |scene: &Scene| {
        scene
            .textures
            .iter()
            .try_for_each(|t| demandtex_cuda::check_texture_fits(device, t.size, t.size, t.format))
    };
    let at = |side| {
        builtin::scene(SceneSize {
            texture_size: side,
            ..SceneSize::FULL
        })
    };
    let requested = at(texture_size);
    let Err(why) = fits(&requested) else {
        return (requested, None);
    };
    let mut side = texture_size.next_power_of_two() / 2;
    while side > 1 && fits(&at(side)).is_err() {
        side /= 2;
    }
    let note = format!(
        "textures: {texture_size}² is more than {} takes ({why}); rendering with {side}² textures",
        device.name
    );
    (at(side.max(1)), Some(note))
}

/// A library error of the CUDA path: no driver or device is "unavailable" (exit code 2).
fn cuda_error(e: demandtex::Error) -> CliError {
    match e {
        demandtex::Error::NoCudaDriver(_)
        | demandtex::Error::NoCudaDevice(_)
        | demandtex::Error::Unsupported(_) => CliError::Unavailable(e.to_string()),
        other => CliError::Demandtex(other.to_string()),
    }
}

fn v3(v: Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

/// The kernel's camera.
pub fn device_camera(camera: &Camera) -> DemoCamera {
    let ([eye, forward, right, up], [half_width, half_height], [width, height]) = camera.parts();
    DemoCamera {
        eye: v3(eye),
        forward: v3(forward),
        right: v3(right),
        up: v3(up),
        half_width,
        half_height,
        width,
        height,
    }
}

/// The kernel's rectangles, with texture indices resolved to the loader's ids.
pub fn device_quads(scene: &Scene, ids: &[TextureId]) -> Vec<DemoQuad> {
    let layer = |l: &Layer| DemoLayer {
        scale: l.scale,
        offset: l.offset,
        texture: ids[l.texture].0,
        wrap: u32::from(scene.textures[l.texture].address == AddressMode::Wrap),
    };
    scene
        .quads
        .iter()
        .map(|q| DemoQuad {
            origin: v3(q.origin),
            edge_u: v3(q.edge_u),
            edge_v: v3(q.edge_v),
            base: layer(&q.base),
            detail: q.detail.as_ref().map_or(
                DemoLayer {
                    texture: u32::MAX,
                    ..DemoLayer::default()
                },
                layer,
            ),
        })
        .collect()
}

/// The demo's loader on device 0.
pub fn open_loader(budget_bytes: u64, fill_threads: usize) -> Result<CudaLoader, CliError> {
    open_cuda_loader(
        0,
        LoaderOptions {
            max_texture_memory: budget_bytes,
            fill_threads,
            ..LoaderOptions::default()
        },
    )
}

/// A loader with `options` on device `ordinal` (no driver or device: exit code 2).
pub fn open_cuda_loader(ordinal: u32, options: LoaderOptions) -> Result<CudaLoader, CliError> {
    CudaLoader::new(ordinal, options).map_err(cuda_error)
}

/// Create `scene`'s textures on `loader` and render them through `camera`, multi-pass,
/// for at most `max_launches` launches.
pub fn render_on(
    loader: &CudaLoader,
    scene: &Scene,
    camera: &Camera,
    max_launches: u32,
    progress: &Progress,
) -> Result<CudaRender, CliError> {
    let ids = scene
        .textures
        .iter()
        .map(|t| loader.create_texture(t.source(), t.desc()))
        .collect::<Result<Vec<_>, _>>()?;
    let outcome =
        render_with(loader, scene, camera, &ids, max_launches, progress).map_err(cuda_error)?;
    Ok(CudaRender {
        outcome,
        stats: loader.stats(),
        cuda: loader.cuda_stats(),
        device: loader.device_info().name.clone(),
    })
}

/// The multi-pass loop on an existing loader (textures `ids` in scene order).
pub fn render_with(
    loader: &CudaLoader,
    scene: &Scene,
    camera: &Camera,
    ids: &[TextureId],
    max_launches: u32,
    progress: &Progress,
) -> demandtex::Result<RenderOutcome> {
    let dcam = device_camera(camera);
    let quads = device_quads(scene, ids);
    let mut frame = DemoRenderer::new(loader, dcam, v3(scene.light), &quads)?;
    let total = frame.pixel_count();
    let mut window = Window::new(total);
    let (mut launches, mut pixels_done) = (0u32, 0usize);
    while pixels_done < total && launches < max_launches {
        let launch = loader.launch_prepare()?;
        launches += 1;
        progress.set_message(format!("launch {launches}"));
        let active = window.range();
        let newly = frame.render(&launch, active.start as u32, active.end as u32)? as usize;
        pixels_done += newly;
        progress.inc(newly as u64);
        let deferred_before = loader.stats().deferred_no_memory;
        let ticket = loader.process_requests(launch)?;
        ticket.wait();
        let deferred = loader.stats().deferred_no_memory > deferred_before;
        window.update(&frame.done_flags()?, newly > 0, deferred);
    }
    Ok(RenderOutcome {
        frame: Frame {
            width: dcam.width,
            height: dcam.height,
            pixels: frame.pixels()?,
        },
        converged: pixels_done == total,
        launches,
        pixels_done,
    })
}

/// `demandtex demo --backend cuda` (see [`super::run`]): the render on device 0, then with
/// `--verify` the CPU render with no budget limit, compared by [`frame_diff`] (pass:
/// PSNR ≥ [`MIN_PSNR_DB`]). Without a driver or device: the probe's error (exit code 2),
/// nothing written.
pub fn run(args: &DemoArgs, show_progress: bool) -> Result<DemoReport, CliError> {
    let device = demandtex_cuda::probe_device(0).map_err(crate::cuda::unavailable)?;
    let budget = args.budget_mb << 20;
    // Before anything is printed: without a usable device, only the error.
    let loader = open_loader(budget, args.threads)?;
    let (scene, note) = scene_for_device(&device, args.texture_size);
    if let Some(note) = note {
        println!("{note}");
    }
    let virtual_bytes = virtual_texture_bytes(&scene)?;
    println!(
        "virtual texture: {} in {} textures",
        format_bytes(virtual_bytes),
        scene.textures.len()
    );
    let pixels = args.width as u64 * args.height as u64;
    let bar = |label: &str| Progress::shown_if(show_progress, pixels, label);
    let camera = builtin::camera(args.width, args.height);
    let start = Instant::now();
    let progress = bar("pixels");
    let r = render_on(&loader, &scene, &camera, args.max_launches, &progress)?;
    progress.finish();
    let wall_seconds = start.elapsed().as_secs_f64();
    println!(
        "CUDA ({}, {} textures): {} after {} launches in {wall_seconds:.2} s ({} of {pixels} pixels done) within {} of texture memory",
        r.device,
        if r.cuda.sparse { "sparse" } else { "dense" },
        if r.outcome.converged { "converged" } else { "stopped" },
        r.outcome.launches,
        r.outcome.pixels_done,
        format_bytes(budget)
    );

    let mut diff = None;
    let mut reference_converged = true;
    if args.verify {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(args.threads)
            .build()
            .map_err(|e| CliError::Demandtex(format!("thread pool: {e}")))?;
        let progress = bar("pixels (CPU reference)");
        let (_, reference) = render_scene(&scene, args, UNLIMITED_BYTES, &pool, &progress)?;
        progress.finish();
        reference_converged = reference.converged;
        diff = frame_diff(&r.outcome.frame, &reference.frame);
        match diff {
            Some(d) => println!(
                "verify against the CPU render (no budget, {} in {} launches): max abs diff {}, mean abs diff {:.3e}, PSNR {:.1} dB (pass: ≥ {MIN_PSNR_DB} dB)",
                if reference.converged { "converged" } else { "did not converge" },
                reference.launches,
                d.max_abs,
                d.mean_abs,
                d.psnr_db
            ),
            None => println!("verify: the CPU render has another size"),
        }
    }

    let summary = RunSummary {
        converged: r.outcome.converged,
        launches: r.outcome.launches,
        width: args.width,
        height: args.height,
        virtual_texture_bytes: virtual_bytes,
        textures: scene.textures.len(),
        wall_seconds,
        verify_max_abs_diff: if args.verify {
            Some(diff.map_or(f32::INFINITY, |d| d.max_abs))
        } else {
            None
        },
    };
    let mut stats = output::stats_json(&r.stats, &summary);
    stats.insert("backend".into(), "cuda".into());
    stats.insert("device".into(), r.device.clone().into());
    if let Ok(v) = serde_json::to_value(&r.cuda) {
        stats.insert("cuda".into(), v);
    }
    if let Some(d) = diff {
        stats.insert("verify_mean_abs_diff".into(), d.mean_abs.into());
        stats.insert("verify_psnr_db".into(), d.psnr_db.into());
    }
    print!("{}", object_table(&stats).render());
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Io(format!("{}: {e}", args.out.display())))?;
    let png = args.out.join("demo.png");
    output::write_png(&png, &r.outcome.frame)?;
    output::write_json(&args.out.join("stats.json"), &stats)?;
    println!("wrote {} and stats.json", png.display());

    if !r.outcome.converged {
        let e = CliError::NotConverged {
            launches: r.outcome.launches,
        };
        if args.verify {
            return Err(e);
        }
        tracing::warn!("{e}");
    }
    if args.verify {
        let pass = reference_converged && diff.is_some_and(|d| d.psnr_db >= MIN_PSNR_DB);
        if !pass {
            return Err(CliError::VerifyFailed {
                max_abs_diff: summary.verify_max_abs_diff.unwrap_or(f32::INFINITY),
            });
        }
    }
    Ok(DemoReport { summary, stats })
}

/// How two frames of one size differ: the largest and mean absolute difference over the
/// RGB channels, and the PSNR (peak 1.0) in dB (infinite when equal).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameDiff {
    /// Largest absolute difference.
    pub max_abs: f32,
    /// Mean absolute difference.
    pub mean_abs: f64,
    /// Peak signal-to-noise ratio for a peak of 1.0, in dB.
    pub psnr_db: f64,
}

/// Agreement the CUDA render must reach with the CPU render. Hardware filtering weights
/// are 8-bit fixed point (1/256 steps) and the device blends levels in hardware, so single
/// texels differ by up to about 1/256 of the texel range, i.e. an RMS error of order 1e-3
/// (≈ 55-60 dB); 40 dB (RMS 0.01, an average error of 2.5 of 255 levels in the PNG)
/// leaves room for that and for rare pixels whose LOD rounds to another level, while any
/// real error — a wrong tile, a wrong level, a missing texture — costs far more.
pub const MIN_PSNR_DB: f64 = 40.0;

/// Compare `a` with `b` (see [`FrameDiff`]); `None` if the sizes differ.
pub fn frame_diff(a: &Frame, b: &Frame) -> Option<FrameDiff> {
    if (a.width, a.height) != (b.width, b.height) || a.pixels.is_empty() {
        return None;
    }
    let (mut max_abs, mut sum, mut sq) = (0.0f32, 0.0f64, 0.0f64);
    for (p, q) in a.pixels.iter().zip(&b.pixels) {
        for c in 0..3 {
            let d = (p[c] - q[c]).abs();
            let d = if d.is_nan() { f32::INFINITY } else { d };
            max_abs = max_abs.max(d);
            sum += d as f64;
            sq += d as f64 * d as f64;
        }
    }
    let n = (a.pixels.len() * 3) as f64;
    let mse = sq / n;
    Some(FrameDiff {
        max_abs,
        mean_abs: sum / n,
        psnr_db: if mse == 0.0 {
            f64::INFINITY
        } else {
            -10.0 * mse.log10()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_differences_give_psnr() {
        let a = Frame {
            width: 2,
            height: 1,
            pixels: vec![[0.5; 4], [0.25; 4]],
        };
        let same = frame_diff(&a, &a).unwrap();
        assert_eq!((same.max_abs, same.mean_abs), (0.0, 0.0));
        assert!(same.psnr_db.is_infinite());
        let mut b = a.clone();
        b.pixels[0] = [0.6, 0.5, 0.5, 1.0];
        let d = frame_diff(&a, &b).unwrap();
        assert!((d.max_abs - 0.1).abs() < 1e-6);
        // MSE = 0.01 / 6: PSNR = 10·log10(600) ≈ 27.8 dB.
        assert!((d.psnr_db - 27.78).abs() < 0.01, "{}", d.psnr_db);
        let c = Frame {
            width: 1,
            height: 2,
            pixels: a.pixels.clone(),
        };
        assert!(frame_diff(&a, &c).is_none());
    }

    #[test]
    fn quads_resolve_texture_ids_and_no_detail() {
        let scene = super::super::builtin::scene(super::super::builtin::SceneSize {
            texture_size: 1024,
            ..super::super::builtin::SceneSize::FULL
        });
        let ids: Vec<TextureId> = (0..scene.textures.len() as u32)
            .map(|i| TextureId(i + 100))
            .collect();
        let quads = device_quads(&scene, &ids);
        assert_eq!(quads.len(), scene.quads.len());
        for (d, q) in quads.iter().zip(&scene.quads) {
            assert_eq!(d.base.texture, ids[q.base.texture].0);
            match q.detail {
                Some(l) => assert_eq!(d.detail.texture, ids[l.texture].0),
                None => assert_eq!(d.detail.texture, u32::MAX),
            }
        }
        let cam = device_camera(&super::super::builtin::camera(64, 36));
        assert_eq!((cam.width, cam.height), (64, 36));
    }
}
