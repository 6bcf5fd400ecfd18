//! `demandtex demo`: render a built-in scene textured by over a tebibyte of procedural
//! textures within a small memory budget, multi-pass until converged; optionally verify
//! the result against a render with every needed tile resident.

pub mod builtin;
pub mod camera;
pub mod cuda;
pub mod cuda_kernel;
pub mod cuda_render;
#[cfg(test)]
mod gpu_loader;
pub mod interactive;
pub mod interactive_cuda;
pub mod interactive_io;
pub mod interactive_plot;
pub mod output;
mod pinning;
pub mod render;
pub mod scene;
pub mod soak;
pub mod textures;

use crate::error::CliError;
use crate::progress::Progress;
use crate::table::{format_bytes, object_table};
use builtin::SceneSize;
use demandtex::{Loader, LoaderOptions, TextureId};
use output::RunSummary;
use render::{RenderJob, RenderOutcome};
use scene::{Scene, TextureSpec};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `demandtex demo`.
#[derive(clap::Args, Clone, Debug)]
pub struct DemoArgs {
    /// Directory for demo.png and stats.json (created if missing).
    #[arg(long, default_value = "demandtex-demo")]
    pub out: PathBuf,
    /// Texture memory budget in MiB.
    #[arg(long, default_value_t = 256)]
    pub budget_mb: u64,
    /// Image width in pixels.
    #[arg(long, default_value_t = 960)]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 540)]
    pub height: u32,
    /// Threads for shading and for fills (0 = all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Stop after this many launches even if not converged.
    #[arg(long, default_value_t = 64)]
    pub max_launches: u32,
    /// Render again with no budget limit and compare: exit non-zero unless both converge
    /// and agree exactly.
    #[arg(long)]
    pub verify: bool,
    /// Side of every texture in texels (65536 for the film-scale scene).
    #[arg(long, default_value_t = 65536)]
    pub texture_size: u32,
    /// Where to render: on the CPU, or on CUDA device 0 (without a driver or device: a
    /// clear error, exit code 2). With cuda, --verify compares with the CPU render.
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,
    /// Interactive streaming: a camera path (with a cut) frame by frame, never waiting
    /// for a fill, timed against the same frames fully resident and untextured; writes
    /// frames.csv, interactive.json and interactive.png (CPU only).
    #[arg(long)]
    pub interactive: bool,
    /// With --interactive: frames of the camera path.
    #[arg(long, default_value_t = 240)]
    pub frames: u32,
    /// With --interactive: milliseconds added to every tile read of the streaming run
    /// (textures on a slow store; the reference runs read without it).
    #[arg(long, default_value_t = 0)]
    pub io_latency_ms: u64,
    /// With --interactive: frame-rate target; frames are paced to it (0: back to back).
    #[arg(long, default_value_t = 0.0)]
    pub fps: f64,
    /// With --interactive: most requests served per launch (0: the loader's default).
    /// Non-zero also runs the cap experiment (rejection on vs off, from a still camera).
    #[arg(long, default_value_t = 0)]
    pub request_cap: usize,
    /// With --interactive: most tile publications per launch (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub publish_cap: usize,
    /// With --interactive: turn probabilistic request rejection off.
    #[arg(long)]
    pub no_rejection: bool,
    /// With --interactive --backend cuda: publish filled tiles at `launch_prepare`, before
    /// the kernel (the default publishes them at `process_requests`, while it runs).
    #[arg(long)]
    pub publish_before_launch: bool,
    /// With --interactive: fill threads of the streaming loader (0: the library's default,
    /// one per core and at least 8). Reads that wait on a slow store (--io-latency-ms) need
    /// more threads than cores; they run in the background (below the shading threads'
    /// priority).
    #[arg(long, default_value_t = 0)]
    pub fill_threads: usize,
    /// With --interactive: the most CPU time the streaming loader's fills may take, in
    /// cores (the shading threads use every core: what fills compute is taken from the
    /// frame). Default: the library's advice for such a renderer,
    /// `CPU_RENDERER_FILL_CPU_CORES`. 0: no limit.
    #[arg(long, default_value_t = demandtex::CPU_RENDERER_FILL_CPU_CORES)]
    pub fill_cpu_cores: f32,
    /// Leave the shading threads unpinned. By default (Linux, no more shading threads than
    /// CPUs the process may use) shading thread i runs on the i-th of those CPUs, as
    /// renderers pin their threads: otherwise the scheduler can leave two shading threads
    /// sharing one CPU for a whole frame while another idles or runs a fill.
    #[arg(long)]
    pub no_pin: bool,
    /// With --interactive: a soak run instead: the streaming frames of the camera path,
    /// over and over for this many minutes (no reference runs), the process's resident
    /// memory sampled as it goes; writes soak.csv and soak.json.
    #[arg(long, default_value_t = 0.0)]
    pub soak_minutes: f64,
    /// With --interactive: stochastic two-level point filtering (one texel per mip level,
    /// picked by a per-pixel jitter) instead of the textures' trilinear filter, in every
    /// run (CPU only).
    #[arg(long)]
    pub stochastic: bool,
}

/// The demo's renderer.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Rust shading and the CPU samplers.
    Cpu,
    /// A CUDA kernel over the CUDA backend.
    Cuda,
}

/// Budget of the verification render: in effect unlimited.
const UNLIMITED_BYTES: u64 = u64::MAX / 4;

impl DemoArgs {
    fn check(&self) -> Result<(), CliError> {
        let side = 1..=16384;
        if !side.contains(&self.width) || !side.contains(&self.height) {
            return Err(CliError::Usage(format!(
                "image size {}×{} (each side 1..=16384)",
                self.width, self.height
            )));
        }
        if self.budget_mb == 0 || self.budget_mb > u64::MAX >> 21 {
            return Err(CliError::Usage(format!("--budget-mb {}", self.budget_mb)));
        }
        if self.max_launches == 0 {
            return Err(CliError::Usage("--max-launches must be at least 1".into()));
        }
        if self.interactive && self.frames == 0 {
            return Err(CliError::Usage("--interactive needs --frames ≥ 1".into()));
        }
        if self.stochastic && (!self.interactive || self.backend != Backend::Cpu) {
            return Err(CliError::Usage(
                "--stochastic needs --interactive and the CPU backend".into(),
            ));
        }
        if self.interactive && self.soak_minutes > 0.0 && self.backend != Backend::Cpu {
            return Err(CliError::Usage(
                "--soak-minutes needs the CPU backend".into(),
            ));
        }
        if !(self.fps.is_finite() && self.fps >= 0.0) || self.io_latency_ms > 60_000 {
            return Err(CliError::Usage(format!(
                "--fps {} (≥ 0) / --io-latency-ms {} (≤ 60000)",
                self.fps, self.io_latency_ms
            )));
        }
        if !(self.soak_minutes.is_finite() && self.soak_minutes >= 0.0)
            || (self.soak_minutes > 0.0 && !self.interactive)
        {
            return Err(CliError::Usage(format!(
                "--soak-minutes {} (≥ 0, with --interactive)",
                self.soak_minutes
            )));
        }
        if !(1..=65536).contains(&self.texture_size) {
            return Err(CliError::Usage(format!(
                "--texture-size {} (1..=65536)",
                self.texture_size
            )));
        }
        Ok(())
    }
}

/// A loader with the scene's textures.
fn loader_with_scene(
    scene: &Scene,
    budget_bytes: u64,
    threads: usize,
) -> Result<(Loader, Vec<TextureId>), CliError> {
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: budget_bytes,
        fill_threads: threads,
        ..LoaderOptions::default()
    })?;
    let ids = scene
        .textures
        .iter()
        .map(|t| loader.create_texture(t.source(), t.desc()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((loader, ids))
}

fn render_scene(
    scene: &Scene,
    args: &DemoArgs,
    budget_bytes: u64,
    pool: &rayon::ThreadPool,
    progress: &Progress,
) -> Result<(Loader, RenderOutcome), CliError> {
    let (loader, ids) = loader_with_scene(scene, budget_bytes, args.threads)?;
    let camera = builtin::camera(args.width, args.height);
    let job = RenderJob {
        scene,
        textures: &ids,
        camera: &camera,
        width: args.width,
        height: args.height,
        max_launches: args.max_launches,
        stochastic: false,
    };
    let outcome = render::render(&loader, &job, pool, progress);
    Ok((loader, outcome))
}

/// Level-0 bytes of every texture of the scene, from what each source reports.
pub fn virtual_texture_bytes(scene: &Scene) -> Result<u64, CliError> {
    let mut total = 0u64;
    for t in &scene.textures {
        total += TextureSpec::level0_bytes(t.source().as_ref()).map_err(CliError::Demandtex)?;
    }
    Ok(total)
}

/// What a demo run produced (also written to `stats.json`).
#[derive(Clone, Debug, PartialEq)]
pub struct DemoReport {
    /// The summary added to the statistics.
    pub summary: RunSummary,
    /// `stats.json`'s content.
    pub stats: serde_json::Map<String, serde_json::Value>,
}

/// The report of an interactive run (its figures are in its own outputs).
fn interactive_report(args: &DemoArgs, virtual_bytes: u64, textures: usize) -> DemoReport {
    DemoReport {
        summary: RunSummary {
            converged: true,
            launches: args.frames,
            width: args.width,
            height: args.height,
            virtual_texture_bytes: virtual_bytes,
            textures,
            wall_seconds: 0.0,
            verify_max_abs_diff: None,
        },
        stats: serde_json::Map::new(),
    }
}

/// Run the demo, showing progress on stderr when `show_progress`.
pub fn run(args: &DemoArgs, show_progress: bool) -> Result<DemoReport, CliError> {
    args.check()?;
    if args.backend == Backend::Cuda {
        if args.interactive {
            let (virtual_bytes, textures) = interactive_cuda::run(args)?;
            return Ok(interactive_report(args, virtual_bytes, textures));
        }
        return cuda::run(args, show_progress);
    }
    let size = SceneSize {
        texture_size: args.texture_size,
        ..SceneSize::FULL
    };
    let scene = builtin::scene(size);
    let virtual_bytes = virtual_texture_bytes(&scene)?;
    println!(
        "virtual texture: {} in {} textures",
        format_bytes(virtual_bytes),
        scene.textures.len()
    );
    let pin = !args.no_pin && pinning::can_pin(args.threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .start_handler(move |i| {
            if pin {
                pinning::pin_current_thread(i);
            }
        })
        .build()
        .map_err(|e| CliError::Demandtex(format!("thread pool: {e}")))?;
    let budget = args.budget_mb << 20;
    println!(
        "rendering {}×{} on {} threads within {} of texture memory",
        args.width,
        args.height,
        pool.current_num_threads(),
        format_bytes(budget)
    );
    if args.interactive {
        if args.soak_minutes > 0.0 {
            soak::run(args, &scene, &pool)?;
        } else {
            interactive::run(args, &scene, &pool)?;
        }
        return Ok(interactive_report(
            args,
            virtual_bytes,
            scene.textures.len(),
        ));
    }
    let pixels = args.width as u64 * args.height as u64;
    let bar = |label: &str| Progress::shown_if(show_progress, pixels, label);

    let start = Instant::now();
    let progress = bar("pixels");
    let (loader, outcome) = render_scene(&scene, args, budget, &pool, &progress)?;
    progress.finish();
    let wall_seconds = start.elapsed().as_secs_f64();
    println!(
        "{} after {} launches in {wall_seconds:.2} s ({} of {pixels} pixels done)",
        if outcome.converged {
            "converged"
        } else {
            "stopped"
        },
        outcome.launches,
        outcome.pixels_done
    );

    let verify_max_abs_diff =
        if args.verify {
            let t = Instant::now();
            let progress = bar("pixels (reference)");
            let (_, reference) = render_scene(&scene, args, UNLIMITED_BYTES, &pool, &progress)?;
            progress.finish();
            let diff = if reference.converged {
                outcome.frame.max_abs_diff(&reference.frame)
            } else {
                f32::INFINITY
            };
            println!(
            "verify: reference render (no budget) {} in {} launches, {:.2} s; max abs diff {diff}",
            if reference.converged { "converged" } else { "did not converge" },
            reference.launches,
            t.elapsed().as_secs_f64()
        );
            Some(diff)
        } else {
            None
        };

    let summary = RunSummary {
        converged: outcome.converged,
        launches: outcome.launches,
        width: args.width,
        height: args.height,
        virtual_texture_bytes: virtual_bytes,
        textures: scene.textures.len(),
        wall_seconds,
        verify_max_abs_diff,
    };
    let stats = output::stats_json(&loader.stats(), &summary);
    print!("{}", object_table(&stats).render());

    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Io(format!("{}: {e}", args.out.display())))?;
    let png = args.out.join("demo.png");
    output::write_png(&png, &outcome.frame)?;
    output::write_json(&args.out.join("stats.json"), &stats)?;
    println!("wrote {} and stats.json", png.display());

    if !outcome.converged {
        let e = CliError::NotConverged {
            launches: outcome.launches,
        };
        if args.verify {
            return Err(e);
        }
        tracing::warn!("{e}");
    }
    if let Some(d) = verify_max_abs_diff {
        if d != 0.0 {
            return Err(CliError::VerifyFailed { max_abs_diff: d });
        }
    }
    Ok(DemoReport { summary, stats })
}

#[cfg(test)]
impl DemoArgs {
    /// A small, final-mode CPU render into `out` with `--verify`; tests change what they
    /// test with struct update syntax.
    pub(crate) fn for_test(out: PathBuf) -> DemoArgs {
        DemoArgs {
            out,
            budget_mb: 64,
            width: 64,
            height: 36,
            threads: 2,
            max_launches: 64,
            verify: true,
            texture_size: 1024,
            backend: Backend::Cpu,
            interactive: false,
            frames: 240,
            io_latency_ms: 0,
            fps: 0.0,
            request_cap: 0,
            publish_cap: 0,
            no_rejection: false,
            publish_before_launch: false,
            fill_threads: 0,
            fill_cpu_cores: demandtex::CPU_RENDERER_FILL_CPU_CORES,
            no_pin: false,
            soak_minutes: 0.0,
            stochastic: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_scene_sums_over_a_tebibyte_from_the_sources() {
        let scene = builtin::scene(SceneSize::FULL);
        let bytes = virtual_texture_bytes(&scene).unwrap();
        assert!(bytes >= 1 << 40, "{}", format_bytes(bytes));
        assert_eq!(format_bytes(bytes), "1.06 TiB");
    }

    #[test]
    fn small_demo_converges_and_matches_the_resident_render() {
        let out = std::env::temp_dir().join(format!("demandtex-cli-demo-{}", std::process::id()));
        let args = DemoArgs::for_test(out.clone());
        let report = run(&args, false).expect("demo runs, converges and verifies");
        assert!(report.summary.converged);
        assert_eq!(report.summary.verify_max_abs_diff, Some(0.0));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("stats.json")).unwrap())
                .unwrap();
        assert_eq!(json["width"], 64);
        assert_eq!(json["converged"], true);
        assert!(json["tiles_filled"].as_u64().unwrap() > 0);
        assert!(json["peak_resident_bytes"].as_u64().unwrap() <= 64 << 20);
        let img = image::open(out.join("demo.png")).unwrap();
        assert_eq!((img.width(), img.height()), (64, 36));
        std::fs::remove_dir_all(&out).ok();
    }

    #[test]
    fn a_budget_far_below_the_working_set_still_converges_exactly() {
        let out = std::env::temp_dir().join(format!("demandtex-cli-tight-{}", std::process::id()));
        let args = DemoArgs {
            budget_mb: 1,
            max_launches: 1000,
            ..DemoArgs::for_test(out.clone())
        };
        let report = run(&args, false).expect("converges by shrinking the pixel window");
        assert_eq!(report.summary.verify_max_abs_diff, Some(0.0));
        assert!(
            report.stats["evictions"].as_u64().unwrap() > 0,
            "{:?}",
            report.stats
        );
        assert!(report.stats["peak_resident_bytes"].as_u64().unwrap() <= 1 << 20);
        std::fs::remove_dir_all(&out).ok();
    }

    #[test]
    fn launch_limit_stops_an_unconverged_render() {
        let out = std::env::temp_dir().join(format!("demandtex-cli-limit-{}", std::process::id()));
        let args = DemoArgs {
            width: 32,
            height: 18,
            threads: 1,
            max_launches: 1,
            ..DemoArgs::for_test(out.clone())
        };
        // One launch only requests samplers: it cannot converge.
        assert_eq!(
            run(&args, false),
            Err(CliError::NotConverged { launches: 1 })
        );
        std::fs::remove_dir_all(&out).ok();
    }

    #[test]
    fn the_cuda_backend_is_an_exit_code_2_error_never_a_render() {
        if demandtex_cuda::probe_device(0).is_ok() {
            println!("skipped: a CUDA device is present (see cuda_demo_agrees_with_the_cpu)");
            return;
        }
        let out = std::env::temp_dir().join(format!("demandtex-cli-cuda-{}", std::process::id()));
        let args = DemoArgs {
            width: 32,
            height: 18,
            threads: 1,
            max_launches: 4,
            verify: false,
            backend: Backend::Cuda,
            ..DemoArgs::for_test(out.clone())
        };
        let e = run(&args, false).unwrap_err();
        assert!(matches!(e, CliError::Unavailable(_)), "{e:?}");
        assert_eq!(e.exit_code(), 2);
        assert!(!out.exists(), "nothing is written");
    }

    #[test]
    fn cuda_demo_agrees_with_the_cpu() {
        if let Err(e) = demandtex_cuda::probe_device(0) {
            println!("skipped: cuda demo: {e}");
            return;
        }
        let out =
            std::env::temp_dir().join(format!("demandtex-cli-cudademo-{}", std::process::id()));
        let args = DemoArgs {
            budget_mb: 4,
            max_launches: 1000,
            backend: Backend::Cuda,
            ..DemoArgs::for_test(out.clone())
        };
        let report = run(&args, false).expect("the CUDA demo converges and agrees with the CPU");
        assert!(report.summary.converged);
        assert!(report.stats["verify_psnr_db"]
            .as_f64()
            .is_none_or(|p| p >= cuda::MIN_PSNR_DB));
        assert_eq!(report.stats["backend"], "cuda");
        std::fs::remove_dir_all(&out).ok();
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        let mut args = DemoArgs {
            budget_mb: 0,
            width: 8,
            height: 8,
            threads: 1,
            max_launches: 4,
            verify: false,
            ..DemoArgs::for_test(PathBuf::from("unused"))
        };
        assert!(matches!(run(&args, false), Err(CliError::Usage(_))));
        args.budget_mb = 1;
        args.width = 0;
        assert!(matches!(run(&args, false), Err(CliError::Usage(_))));
    }
}
