//! The device side of `demandtex bench --backend cuda`: the kernels of
//! cli/kernels/bench_fetch.cu (embedded PTX) launched on a [`CudaLoader`]'s stream and timed
//! with CUDA events. Figures only: nothing here decides whether a figure is good.
//!
//! - [`FetchBench::demand`] / [`FetchBench::hardware`]: the same lookups through the demand
//!   path (`dtex::tex2DGrad` over a launch's context) and as a plain hardware `tex2DGrad` on
//!   the texture object the demand path filters with ([`CudaLoader::device_texture`]).
//! - [`FetchBench::request_tiles`]: one request for each of a range of level-0 tiles, to
//!   drive the pull → fill → push pipeline.
//!
//! Tile upload and mapping rates, outside any loader, are in [`super::upload_bench`].

use demandtex::error::{Error, Result};
use demandtex::ids::TextureId;
use demandtex::paging::{DeviceContext, CONTEXT_FLAG_REQUEST_IF_RESIDENT};
use demandtex_cuda::cudarc::driver::sys;
use demandtex_cuda::cudarc::driver::{
    CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use demandtex_cuda::cudarc::nvrtc::Ptx;
use demandtex_cuda::gpu_texture::GpuTexture;
use demandtex_cuda::kernels::{ptx_param_sizes, KernelContext};
use demandtex_cuda::safe;
use demandtex_cuda::{CudaLaunch, CudaLoader};
use std::mem::{offset_of, size_of};
use std::sync::Arc;

/// PTX of cli/kernels/bench_fetch.cu.
pub const BENCH_FETCH_PTX: &str = include_str!("../../../kernels/ptx/bench_fetch.ptx");

/// Threads per block of the benchmark launches.
pub const BENCH_BLOCK: u32 = 256;

/// How a fetch benchmark picks its coordinates (`DtexBenchFetch::pattern`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchPattern {
    /// A row-by-row sweep of an `image_width`² image laid over the texture: the lanes of a
    /// warp sample neighbouring pixels, as a render does.
    Coherent {
        /// Pixels per row (and rows) of the swept image.
        image_width: u32,
    },
    /// Coordinates from a hash of the lookup's index: every lane somewhere else.
    Random {
        /// The hash's seed.
        seed: u32,
    },
}

/// What a fetch benchmark samples: kernels/bench_fetch.cu's `DtexBenchFetch`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FetchParams {
    /// Lookups each thread makes.
    pub lookups_per_thread: u32,
    /// 0: coherent sweep; 1: random.
    pub pattern: u32,
    /// Coherent: pixels per row (and rows) of the swept image.
    pub image_width: u32,
    /// Random: the hash's seed.
    pub seed: u32,
    /// The gradients' length in texture coordinates: ddx = (g, 0), ddy = (0, g).
    pub gradient: f32,
    /// Zero.
    pub reserved: u32,
}

const _: () = assert!(size_of::<FetchParams>() == 24 && offset_of!(FetchParams, gradient) == 16);

// SAFETY: `#[repr(C)]` plain data (u32s and an f32), laid out as `DtexBenchFetch` (size and
// offsets asserted here and in the kernel).
unsafe impl DeviceRepr for FetchParams {}

impl FetchParams {
    /// `lookups_per_thread` lookups per thread with isotropic gradients of length
    /// `gradient`, at the coordinates of `pattern`.
    pub fn new(lookups_per_thread: u32, gradient: f32, pattern: FetchPattern) -> FetchParams {
        let (pattern, image_width, seed) = match pattern {
            FetchPattern::Coherent { image_width } => (0, image_width.max(1), 0),
            FetchPattern::Random { seed } => (1, 0, seed),
        };
        FetchParams {
            lookups_per_thread,
            pattern,
            image_width,
            seed,
            gradient,
            reserved: 0,
        }
    }
}

/// The parameter sizes of the benchmark kernels as the launch helpers pass them (checked
/// against the embedded PTX by a test).
pub const BENCH_KERNEL_PARAMS: &[(&str, &[usize])] = &[
    (
        "dtex_bench_fetch_demand",
        &[
            size_of::<DeviceContext>(),
            4,
            size_of::<FetchParams>(),
            8,
            8,
        ],
    ),
    (
        "dtex_bench_fetch_hardware",
        &[8, size_of::<FetchParams>(), 8, 8],
    ),
    (
        "dtex_bench_request_tiles",
        &[size_of::<DeviceContext>(), 4, 4, 4, 4, 4, 8],
    ),
];

/// One timed kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelTiming {
    /// Milliseconds between the events recorded before and after the kernel.
    pub milliseconds: f64,
    /// Lookups the kernel made.
    pub lookups: u64,
    /// Lookups that were not resident.
    pub non_resident: u64,
}

/// The benchmark kernels loaded into a loader's context, with their buffers and events
/// (see the module comment).
pub struct FetchBench {
    demand: CudaFunction,
    hardware: CudaFunction,
    request: CudaFunction,
    stream: Arc<CudaStream>,
    threads: u32,
    sums: CudaSlice<f32>,
    counter: CudaSlice<u32>,
    start: CudaEvent,
    end: CudaEvent,
}

impl FetchBench {
    /// Load the kernels into `loader`'s context; fetch launches run `threads` threads
    /// (rounded up to whole blocks of [`BENCH_BLOCK`]).
    ///
    /// Errors: [`Error::InvalidArgument`] for 0 or more than 2^26 threads; the driver's.
    pub fn new(loader: &CudaLoader, threads: u32) -> Result<FetchBench> {
        if threads == 0 || threads > 1 << 26 {
            return Err(Error::InvalidArgument(format!(
                "{threads} benchmark threads (1..=2^26)"
            )));
        }
        let threads = threads.div_ceil(BENCH_BLOCK) * BENCH_BLOCK;
        // Launch arguments the PTX does not declare would be undefined behaviour.
        check_kernel_params().map_err(Error::Internal)?;
        let ctx = loader.context();
        let stream = loader.stream();
        let module = safe("cuModuleLoadData(bench_fetch)", || {
            ctx.load_module(Ptx::from_src(BENCH_FETCH_PTX))
        })?;
        let function = |name: &str| {
            safe(&format!("cuModuleGetFunction({name})"), || {
                module.load_function(name)
            })
        };
        let demand = function("dtex_bench_fetch_demand")?;
        let hardware = function("dtex_bench_fetch_hardware")?;
        let request = function("dtex_bench_request_tiles")?;
        let sums = safe("allocating benchmark sums", || {
            stream.alloc_zeros::<f32>(threads as usize)
        })?;
        let counter = safe("allocating a counter", || stream.alloc_zeros::<u32>(1))?;
        let event = || {
            safe("cuEventCreate", || {
                ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            })
        };
        let (start, end) = (event()?, event()?);
        Ok(FetchBench {
            demand,
            hardware,
            request,
            stream,
            threads,
            sums,
            counter,
            start,
            end,
        })
    }

    /// Threads of a fetch launch.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Enqueue `launch_kernel` between the two events, wait, and read the miss counter.
    fn timed(
        &mut self,
        what: &str,
        lookups: u64,
        launch_kernel: impl FnOnce(&CudaStream, u64, u64) -> Result<()>,
    ) -> Result<KernelTiming> {
        let stream = self.stream.clone();
        safe("cuMemsetD8Async", || stream.memset_zeros(&mut self.counter))?;
        let sums = self.sums.device_ptr(&stream).0;
        let counter = self.counter.device_ptr(&stream).0;
        safe("cuEventRecord", || self.start.record(&stream))?;
        launch_kernel(&stream, sums, counter)?;
        safe("cuEventRecord", || self.end.record(&stream))?;
        let ms = safe(&format!("timing {what}"), || {
            self.start.elapsed_ms(&self.end)
        })?;
        let missed = safe("reading the miss counter", || {
            let v = stream.clone_dtoh(&self.counter)?;
            stream.synchronize()?;
            Ok(v)
        })?;
        Ok(KernelTiming {
            milliseconds: ms as f64,
            lookups,
            non_resident: missed[0] as u64,
        })
    }

    fn fetch_config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.threads / BENCH_BLOCK, 1, 1),
            block_dim: (BENCH_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Time `dtex_bench_fetch_demand` on `texture` in `launch` (on the launch's stream).
    /// `request_if_resident`: keep the context's flag that makes resident lookups set
    /// their reference bits (what eviction needs); false clears it for this kernel.
    pub fn demand(
        &mut self,
        launch: &CudaLaunch,
        texture: TextureId,
        params: &FetchParams,
        request_if_resident: bool,
    ) -> Result<KernelTiming> {
        let mut ctx = KernelContext(launch.device_context());
        if !request_if_resident {
            ctx.0.flags &= !CONTEXT_FLAG_REQUEST_IF_RESIDENT;
        }
        let lookups = self.threads as u64 * params.lookups_per_thread as u64;
        let (function, config) = (self.demand.clone(), self.fetch_config());
        let texture = texture.0;
        let params = *params;
        self.timed(
            "dtex_bench_fetch_demand",
            lookups,
            |stream, sums, counter| {
                let mut b = stream.launch_builder(&function);
                b.arg(&ctx)
                    .arg(&texture)
                    .arg(&params)
                    .arg(&sums)
                    .arg(&counter);
                // SAFETY: the arguments match the kernel's parameters (BENCH_KERNEL_PARAMS,
                // tested against the PTX); `ctx` is the launch's context, whose buffers live
                // until the loader's next launch_prepare; `sums` holds one float per thread of
                // the grid and `counter` one counter, device memory of this context alive in
                // `self` (`timed` waits for the kernel).
                safe("cuLaunchKernel(dtex_bench_fetch_demand)", || unsafe {
                    b.launch(config)
                })
                .map(|_| ())
            },
        )
    }

    /// Time `dtex_bench_fetch_hardware` on `texture`'s texture object (the one the demand
    /// path filters with), with the same lookups as [`demand`](Self::demand).
    pub fn hardware(&mut self, texture: &GpuTexture, params: &FetchParams) -> Result<KernelTiming> {
        let object = texture.object.raw();
        let lookups = self.threads as u64 * params.lookups_per_thread as u64;
        let (function, config) = (self.hardware.clone(), self.fetch_config());
        let params = *params;
        self.timed(
            "dtex_bench_fetch_hardware",
            lookups,
            |stream, sums, counter| {
                let mut b = stream.launch_builder(&function);
                b.arg(&object).arg(&params).arg(&sums).arg(&counter);
                // SAFETY: as in `demand`; the texture object (and the array under it) is
                // kept alive by the caller's `&GpuTexture` until `timed` has waited for
                // the kernel.
                safe("cuLaunchKernel(dtex_bench_fetch_hardware)", || unsafe {
                    b.launch(config)
                })
                .map(|_| ())
            },
        )
    }

    /// Time `dtex_bench_request_tiles` in `launch`: one level-0 lookup at the centre of each
    /// of the tiles `first_tile .. first_tile + count` of `texture` (`tiles_x` × `tiles_y`
    /// whole tiles). `non_resident` counts the tiles that were requested.
    pub fn request_tiles(
        &mut self,
        launch: &CudaLaunch,
        texture: TextureId,
        first_tile: u32,
        count: u32,
        tiles: (u32, u32),
    ) -> Result<KernelTiming> {
        let ctx = KernelContext(launch.device_context());
        let function = self.request.clone();
        let blocks = count.div_ceil(BENCH_BLOCK).clamp(1, 1 << 16);
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BENCH_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let texture = texture.0;
        self.timed(
            "dtex_bench_request_tiles",
            count as u64,
            |stream, _, counter| {
                let mut b = stream.launch_builder(&function);
                b.arg(&ctx)
                    .arg(&texture)
                    .arg(&first_tile)
                    .arg(&count)
                    .arg(&tiles.0)
                    .arg(&tiles.1)
                    .arg(&counter);
                // SAFETY: as in `demand` (the kernel writes only the counter and the
                // context's reference bits).
                safe("cuLaunchKernel(dtex_bench_request_tiles)", || unsafe {
                    b.launch(config)
                })
                .map(|_| ())
            },
        )
    }
}

impl std::fmt::Debug for FetchBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchBench")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// The median of `values` (the mean of the middle two for an even count); NaN if empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Whether every benchmark kernel's parameters, as the helpers pass them, are those the
/// embedded PTX declares; the first disagreement otherwise.
pub fn check_kernel_params() -> std::result::Result<(), String> {
    for (name, sizes) in BENCH_KERNEL_PARAMS {
        match ptx_param_sizes(BENCH_FETCH_PTX, name) {
            Some(declared) if declared == *sizes => {}
            Some(declared) => {
                return Err(format!("{name}: PTX {declared:?}, helpers {sizes:?}"));
            }
            None => return Err(format!("{name} is not an entry of bench_fetch.ptx")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_helpers_pass_what_the_shipped_ptx_declares() {
        check_kernel_params().unwrap();
    }

    #[test]
    fn params_follow_the_pattern() {
        let c = FetchParams::new(8, 0.25, FetchPattern::Coherent { image_width: 0 });
        assert_eq!((c.pattern, c.image_width, c.seed), (0, 1, 0));
        let r = FetchParams::new(8, 0.25, FetchPattern::Random { seed: 7 });
        assert_eq!((r.pattern, r.image_width, r.seed), (1, 0, 7));
        assert_eq!(r.gradient, 0.25);
    }

    #[test]
    fn medians_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }
}
