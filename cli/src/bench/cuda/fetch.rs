//! Resident lookups on the GPU: the demand path (`dtex::tex2DGrad` in
//! kernels/bench_fetch.cu) against a plain hardware `tex2DGrad` on the same texture object,
//! on the 4096² RGBA8 noise texture of the CPU lookup benchmark, made fully resident first.
//!
//! Each repetition is one real launch (`launch_prepare` clears the reference bits, so the
//! demand path with eviction active pays for setting them, as every launch does) in which
//! three kernels make the same 2^26 lookups: the hardware baseline, the demand path with
//! eviction active (`REQUEST_IF_RESIDENT`: resident lookups record references) and the
//! demand path without it. Their order rotates between repetitions; each is timed with CUDA
//! events and the figures are medians.

use super::super::Record;
use super::cuda_error;
use super::kernels::{median, FetchBench, FetchParams, FetchPattern};
use crate::error::CliError;
use demandtex::sources::{ImageSource, Noise};
use demandtex::textures::TexelFormat;
use demandtex::{LoaderOptions, TextureDesc, TextureId};
use demandtex_cuda::CudaLoader;
use std::sync::Arc;

/// Side of the texture (as the CPU lookup benchmark).
const SIZE: u32 = 4096;
/// Threads of each fetch kernel.
const THREADS: u32 = 1 << 20;
/// Lookups per thread: 2^26 lookups per kernel.
const LOOKUPS_PER_THREAD: u32 = 64;
/// Most launches to make the texture resident.
const MAX_WARM_UP_LAUNCHES: u32 = 64;

/// One measured case: a filter and a coordinate pattern.
struct Case {
    name: String,
    params: FetchParams,
}

fn cases() -> Vec<Case> {
    // Bilinear: gradients of half a texel (magnified: level 0), swept as an 8192² image
    // (2^26 pixels: exactly one sweep). Trilinear: level of detail 1.5 (levels 1 and 2),
    // swept as a 1448² image.
    let bilinear = 0.5 / SIZE as f32;
    let trilinear = 2f32.powf(1.5) / SIZE as f32;
    let mut v = Vec::new();
    for (filter, g) in [("bilinear", bilinear), ("trilinear lod 1.5", trilinear)] {
        let width = (1.0 / g).round() as u32;
        for (pattern, p) in [
            ("coherent", FetchPattern::Coherent { image_width: width }),
            ("random", FetchPattern::Random { seed: 0x5eed }),
        ] {
            v.push(Case {
                name: format!("{filter} {pattern} {SIZE}² RGBA8"),
                params: FetchParams::new(LOOKUPS_PER_THREAD, g, p),
            });
        }
    }
    v
}

/// Launch every case's demand kernel until none misses: the texture's sampler and every
/// tile the cases touch are then resident.
fn make_resident(
    loader: &CudaLoader,
    bench: &mut FetchBench,
    texture: TextureId,
    cases: &[Case],
) -> Result<(), CliError> {
    for _ in 0..MAX_WARM_UP_LAUNCHES {
        let launch = loader.launch_prepare().map_err(cuda_error)?;
        let mut missed = 0;
        for c in cases {
            missed += bench
                .demand(&launch, texture, &c.params, true)
                .map_err(cuda_error)?
                .non_resident;
        }
        loader.process_requests(launch).map_err(cuda_error)?.wait();
        if missed == 0 {
            return Ok(());
        }
    }
    Err(CliError::Demandtex(format!(
        "the fetch texture did not become resident in {MAX_WARM_UP_LAUNCHES} launches"
    )))
}

/// Which kernel a timing is of.
#[derive(Clone, Copy)]
enum Kernel {
    Hardware,
    DemandEviction,
    DemandNoEviction,
}

/// Run the fetch benchmark: one record per case.
pub fn run(reps: usize) -> Result<Vec<Record>, CliError> {
    let loader = CudaLoader::new(
        0,
        LoaderOptions {
            max_texture_memory: 1 << 30,
            ..LoaderOptions::default()
        },
    )
    .map_err(cuda_error)?;
    let eviction = loader.options().eviction;
    let source: Arc<dyn ImageSource> = Arc::new(Noise::new(SIZE, SIZE, 7, TexelFormat::RGBA8));
    let texture = loader.create_texture(source, TextureDesc::default())?;
    let mut bench = FetchBench::new(&loader, THREADS).map_err(cuda_error)?;
    let cases = cases();
    make_resident(&loader, &mut bench, texture, &cases)?;
    let device_texture = loader.device_texture(texture).ok_or_else(|| {
        CliError::Demandtex("the fetch texture is resident but not on the device".into())
    })?;
    let sparse = if loader.is_sparse() {
        "sparse"
    } else {
        "dense"
    };
    let order = [
        Kernel::Hardware,
        Kernel::DemandEviction,
        Kernel::DemandNoEviction,
    ];
    let mut records = Vec::new();
    for case in &cases {
        let (mut hw, mut with, mut without) = (Vec::new(), Vec::new(), Vec::new());
        let mut missed = 0u64;
        let mut lookups = 0u64;
        for rep in 0..reps.max(1) {
            let launch = loader.launch_prepare().map_err(cuda_error)?;
            for k in 0..order.len() {
                let t = match order[(rep + k) % order.len()] {
                    Kernel::Hardware => {
                        let t = bench.hardware(&device_texture, &case.params);
                        hw.push(t.map_err(cuda_error)?.milliseconds);
                        continue;
                    }
                    Kernel::DemandEviction => {
                        let t = bench
                            .demand(&launch, texture, &case.params, eviction)
                            .map_err(cuda_error)?;
                        with.push(t.milliseconds);
                        t
                    }
                    Kernel::DemandNoEviction => {
                        let t = bench
                            .demand(&launch, texture, &case.params, false)
                            .map_err(cuda_error)?;
                        without.push(t.milliseconds);
                        t
                    }
                };
                missed = missed.max(t.non_resident);
                lookups = t.lookups;
            }
            loader.process_requests(launch).map_err(cuda_error)?.wait();
        }
        let (hw_ms, with_ms, without_ms) = (median(&hw), median(&with), median(&without));
        let rate = |ms: f64| lookups as f64 / (ms * 1e-3);
        records.push(Record {
            bench: "cuda fetch",
            case: format!("{} ({sparse})", case.name),
            threads: bench.threads() as usize,
            figures: vec![
                ("demand_lookups_per_second", rate(with_ms)),
                ("hardware_lookups_per_second", rate(hw_ms)),
                ("time_ratio_demand_to_hardware", with_ms / hw_ms),
                ("demand_no_eviction_lookups_per_second", rate(without_ms)),
                ("time_ratio_no_eviction_to_hardware", without_ms / hw_ms),
                ("demand_median_ms", with_ms),
                ("hardware_median_ms", hw_ms),
                ("lookups_per_kernel", lookups as f64),
                ("repetitions", hw.len() as f64),
                ("most_non_resident_lookups", missed as f64),
            ],
        });
    }
    drop(device_texture);
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coherent_sweeps_cover_their_image_in_whole_sweeps() {
        let cases = cases();
        assert_eq!(cases.len(), 4);
        let lookups = THREADS as u64 * LOOKUPS_PER_THREAD as u64;
        // Bilinear coherent: one 8192² sweep exactly.
        assert_eq!(cases[0].params.image_width, 8192);
        assert_eq!(lookups, 8192 * 8192);
        // Trilinear: a sweep at level of detail 1.5 (4096 / 2^1.5 ≈ 1448 pixels a row).
        assert_eq!(cases[2].params.image_width, 1448);
        assert_eq!(cases[1].params.pattern, 1);
    }
}
