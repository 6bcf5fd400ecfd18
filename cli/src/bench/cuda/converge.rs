//! Launches to converge: the demo scene (22 procedural 65536² textures, 1.06 TiB of
//! level-0 texels, or the largest textures the device takes: `scene_for_device`) rendered
//! at 960×540 by `dtex_demo_render` through a `CudaLoader`, the demo's own CUDA render path
//! (`demandtex demo --backend cuda`), multi-pass until every pixel's lookups were resident:
//! in the demo's default 256 MiB, and through a 2 GiB pool.
//! Time, launches, bytes the sources produced, peak resident bytes (engine) and peak
//! tile-pool bytes (device).

use super::super::Record;
use crate::demo::builtin::{self, SceneSize};
use crate::demo::cuda::{open_loader, render_on, scene_for_device};
use crate::demo::virtual_texture_bytes;
use crate::error::CliError;
use crate::progress::Progress;
use std::time::Instant;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 540;
/// The demo's launch limit.
const MAX_LAUNCHES: u32 = 64;
/// Budgets: the demo's default, and the 2 GiB pool.
const BUDGETS_MIB: [u64; 2] = [256, 2048];

/// Run the convergence benchmark: one record per budget.
pub fn run() -> Result<Vec<Record>, CliError> {
    let device = demandtex_cuda::probe_device(0).map_err(super::cuda_error)?;
    let (scene, note) = scene_for_device(&device, SceneSize::FULL.texture_size);
    if let Some(note) = note {
        eprintln!("bench: {note}");
    }
    let virtual_bytes = virtual_texture_bytes(&scene)?;
    let camera = builtin::camera(WIDTH, HEIGHT);
    let fill_threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut records = Vec::new();
    for mib in BUDGETS_MIB {
        let loader = open_loader(mib << 20, 0)?;
        let start = Instant::now();
        let r = render_on(&loader, &scene, &camera, MAX_LAUNCHES, &Progress::hidden())?;
        let seconds = start.elapsed().as_secs_f64();
        let launches = r.outcome.launches.max(1) as f64;
        let what = format!(
            "demo scene ({} virtual)",
            crate::table::format_bytes(virtual_bytes)
        );
        records.push(Record {
            bench: "cuda converge",
            case: format!(
                "{what} {WIDTH}×{HEIGHT}, {mib} MiB ({})",
                if r.cuda.sparse { "sparse" } else { "dense" }
            ),
            threads: fill_threads,
            figures: vec![
                ("launches", r.outcome.launches as f64),
                ("converged", f64::from(u8::from(r.outcome.converged))),
                ("seconds", seconds),
                ("ms_per_launch", seconds * 1e3 / launches),
                ("virtual_bytes", virtual_bytes as f64),
                ("bytes_read", r.stats.bytes_read as f64),
                ("tiles_filled", r.stats.tiles_filled as f64),
                ("peak_resident_bytes", r.stats.peak_resident_bytes as f64),
                ("pool_peak_bytes", r.cuda.pool_peak_bytes as f64),
                ("tiles_uploaded", r.cuda.tiles_uploaded as f64),
                ("device_restores", r.cuda.device_restores as f64),
                ("evictions", r.stats.evictions as f64),
            ],
        });
    }
    Ok(records)
}
