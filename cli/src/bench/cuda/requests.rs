//! Requests per second through the CUDA loader's pull → fill → push, without I/O: 32768 ×
//! 16384 RGBA8 textures (32768 tiles of level 0; the largest RGBA8 texture a CUDA
//! mipmapped array samples correctly, `demandtex_cuda::limits`) whose source writes nothing
//! (the CPU request benchmark's), one per round, and rounds of
//!
//! 1. a launch of `dtex_bench_request_tiles` requesting N level-0 tiles of the round's
//!    texture, never requested before (timed with CUDA events; the figures below start
//!    after it has run);
//! 2. `process_requests`: the pull kernel, the lists back on the host, the fills started;
//! 3. `wait`: the fills (the engine's fill threads);
//! 4. the next `launch_prepare` and a stream synchronisation: the N tiles mapped, uploaded
//!    through the staging ring and pushed to the device's page table.
//!
//! Each N gets its own loader, with a budget that holds every round's tiles (no eviction).
//! A round whose requests do not all reach the host (a texture that failed, say) is an
//! error, not a figure.

use super::super::requests::NullSource;
use super::super::Record;
use super::cuda_error;
use super::kernels::{median, FetchBench};
use crate::error::CliError;
use demandtex::textures::{full_mip_levels, TexelFormat, TextureLayout};
use demandtex::{LoaderOptions, TextureDesc, TextureId, TILE_BYTES};
use demandtex_cuda::{CudaLaunch, CudaLoader};
use std::sync::Arc;
use std::time::Instant;

const WIDTH: u32 = 32768;
const HEIGHT: u32 = 16384;
/// Tiles requested per launch (the largest is the device request list's capacity).
const TILES_PER_LAUNCH: [u32; 3] = [1024, 4096, 16384];

/// What one round measured, in milliseconds, and the pages that went through.
struct Round {
    kernel_ms: f64,
    pull_ms: f64,
    fill_ms: f64,
    publish_ms: f64,
    pulled: u64,
    uploaded: u64,
}

/// Launch until tile 0 is resident (the sampler and mip tail with it); returns the next
/// launch.
fn warm_up(
    loader: &CudaLoader,
    bench: &mut FetchBench,
    texture: TextureId,
    tiles: (u32, u32),
) -> Result<CudaLaunch, CliError> {
    let mut launch = loader.launch_prepare().map_err(cuda_error)?;
    for _ in 0..16 {
        let t = bench
            .request_tiles(&launch, texture, 0, 1, tiles)
            .map_err(cuda_error)?;
        loader.process_requests(launch).map_err(cuda_error)?.wait();
        launch = loader.launch_prepare().map_err(cuda_error)?;
        if t.non_resident == 0 {
            if let Some(e) = loader.texture_error(texture) {
                return Err(CliError::Demandtex(format!(
                    "the request texture failed: {e}"
                )));
            }
            return Ok(launch);
        }
    }
    Err(CliError::Demandtex(
        "the request texture's first tile did not become resident in 16 launches".into(),
    ))
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// `reps` rounds of `n` tiles on a fresh loader.
fn measure(n: u32, reps: usize) -> Result<Record, CliError> {
    let budget = (reps as u64 + 1) * n as u64 * TILE_BYTES as u64 + (256 << 20);
    let loader = CudaLoader::new(
        0,
        LoaderOptions {
            max_texture_memory: budget,
            max_requests_per_launch: n as usize,
            ..LoaderOptions::default()
        },
    )
    .map_err(cuda_error)?;
    let layout = TextureLayout::new(
        WIDTH,
        HEIGHT,
        full_mip_levels(WIDTH, HEIGHT),
        TexelFormat::RGBA8,
    )?;
    let tiles = (layout.levels[0].tiles_x, layout.levels[0].tiles_y);
    if n >= tiles.0 * tiles.1 {
        return Err(CliError::Demandtex(format!(
            "{n} tiles a launch: more than a {WIDTH}×{HEIGHT} texture's {} tiles after the first",
            tiles.0 * tiles.1 - 1
        )));
    }
    let mut bench = FetchBench::new(&loader, 256).map_err(cuda_error)?;
    // One texture per round, each with its tile 0 (and so its sampler and mip tail)
    // resident before the rounds.
    let mut textures = Vec::new();
    let mut launch = loader.launch_prepare().map_err(cuda_error)?;
    for _ in 0..reps.max(1) {
        let source = Arc::new(NullSource::with_size(WIDTH, HEIGHT, TexelFormat::RGBA8));
        let texture = loader.create_texture(source, TextureDesc::default())?;
        loader.process_requests(launch).map_err(cuda_error)?.wait();
        launch = warm_up(&loader, &mut bench, texture, tiles)?;
        textures.push(texture);
    }
    let mut rounds = Vec::new();
    for &texture in &textures {
        let before = loader.cuda_stats();
        let kernel = bench
            .request_tiles(&launch, texture, 1, n, tiles)
            .map_err(cuda_error)?;
        let t = Instant::now();
        let ticket = loader.process_requests(launch).map_err(cuda_error)?;
        let pull_ms = ms(t);
        let t = Instant::now();
        ticket.wait();
        let fill_ms = ms(t);
        let t = Instant::now();
        launch = loader.launch_prepare().map_err(cuda_error)?;
        loader.synchronize().map_err(cuda_error)?;
        let publish_ms = ms(t);
        let after = loader.cuda_stats();
        let pulled = after.requests_pulled - before.requests_pulled;
        if pulled < u64::from(n) {
            return Err(CliError::Demandtex(format!(
                "{n} tiles requested, {pulled} pulled: the round measured nothing"
            )));
        }
        rounds.push(Round {
            kernel_ms: kernel.milliseconds,
            pull_ms,
            fill_ms,
            publish_ms,
            pulled,
            uploaded: after.tiles_uploaded - before.tiles_uploaded,
        });
    }
    loader.process_requests(launch).map_err(cuda_error)?.wait();
    let m = |f: fn(&Round) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
    let total = m(|r| r.pull_ms + r.fill_ms + r.publish_ms);
    let publish = m(|r| r.publish_ms);
    let fill_threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match loader.options().fill_threads {
        0 => fill_threads,
        t => t,
    };
    Ok(Record {
        bench: "cuda requests",
        case: format!("{n} tiles a launch, null {WIDTH}×{HEIGHT} RGBA8"),
        threads,
        figures: vec![
            ("requests_per_second", n as f64 / (total * 1e-3)),
            ("pull_ms", m(|r| r.pull_ms)),
            ("fill_ms", m(|r| r.fill_ms)),
            ("publish_ms", publish),
            ("publish_tiles_per_second", n as f64 / (publish * 1e-3)),
            ("request_kernel_ms", m(|r| r.kernel_ms)),
            ("pages_pulled_per_round", m(|r| r.pulled as f64)),
            ("tiles_uploaded_per_round", m(|r| r.uploaded as f64)),
            ("rounds", rounds.len() as f64),
        ],
    })
}

/// Run the request benchmark: one record per tile count.
pub fn run(reps: usize) -> Result<Vec<Record>, CliError> {
    TILES_PER_LAUNCH.iter().map(|&n| measure(n, reps)).collect()
}
