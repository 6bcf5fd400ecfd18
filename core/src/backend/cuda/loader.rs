//! `CudaLoader`: the demand loader on one CUDA device — the engine's multi-pass cycle with
//! the page bits, LRU ages and tiles on the GPU.
//!
//! ```text
//! let launch = loader.launch_prepare()?;        // mappings of finished fills now on the device
//! my_kernel<<<..., launch.stream()>>>(launch.device_context(), ...);   // same stream
//! let ticket = loader.process_requests(launch)?; // pull kernel → fills start on the host
//! ticket.wait();                                 // then the next launch_prepare
//! ```
//!
//! The engine (requests, fills, budget, eviction, second chance) is the CPU loader's,
//! unchanged; this type adds the device side ([`super::device_sync`]): the pull runs on
//! the device (`dtex_pull_requests`: requests, LRU ageing, stale pages) and feeds the
//! engine's `process_requests`; `launch_prepare` brings the device's page table,
//! residence bits, textures and tiles up to date with what the engine published.
//!
//! The user's kernel must run on [`CudaLaunch::stream`] (or the user orders it there with
//! events) between `launch_prepare` and `process_requests`: tile memory is unmapped and
//! reused in stream order after the launches that could sample it.
//!
//! One loader per device; several loaders (on one device or several) in one process are
//! independent (no globals).

use super::device_context::{DeviceContextBuffers, ListCapacities};
use super::device_sync::{device_pool_bytes, CudaStats, DeviceState};
use super::gpu_texture::GpuTexture;
use super::module::PagingKernels;
use super::ops::safe;
use super::sparse::SparseTexture;
use super::staging::StagingRing;
use super::tile_pool::{CudaTilePool, DEFAULT_ARENA_BYTES};
use super::{CudaDevice, CudaDeviceInfo};
use crate::error::{Error, Result};
use crate::ids::{TextureId, TILE_BYTES};
use crate::options::LoaderOptions;
use crate::paging::{DeviceContext, PullResult, CONTEXT_FLAG_REQUEST_IF_RESIDENT};
use crate::requests::engine::Engine;
use crate::requests::{process, Ticket};
use crate::resources::TextureState;
use crate::sources::ImageSource;
use crate::stats::Stats;
use crate::textures::{full_mip_levels, TexelFormat, TexelType, TextureDesc, TextureLayout};
use cudarc::driver::{CudaContext, CudaStream};
use parking_lot::Mutex;
use std::sync::Arc;

/// Pinned staging slots (64 KiB each) per loader.
pub(crate) const STAGING_SLOTS: usize = 64;

/// A demand loader on one CUDA device (see the module comment). `Send + Sync`.
pub struct CudaLoader {
    engine: Arc<Engine>,
    info: CudaDeviceInfo,
    state: Mutex<DeviceState>,
}

/// One launch on the device: the `DtexDeviceContext` to pass to the kernel and the stream
/// to launch it on. Hand it back to [`CudaLoader::process_requests`] after the kernel was
/// enqueued.
#[derive(Debug)]
pub struct CudaLaunch {
    context: DeviceContext,
    stream: Arc<CudaStream>,
    launch_num: u32,
    owner: usize,
}

impl CudaLaunch {
    /// The context to pass to a kernel (the `DtexDeviceContext` argument): device
    /// addresses valid until the next `launch_prepare` of its loader.
    pub fn device_context(&self) -> DeviceContext {
        self.context
    }

    /// The loader's stream: launch the kernel on it.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// This launch's number (1 for the first).
    pub fn launch_num(&self) -> u32 {
        self.launch_num
    }
}

/// Whether the device's sparse arrays agree with the engine's tile layout for the usual
/// formats (checked once per loader: a loader is sparse or dense as a whole).
fn sparse_layouts_agree(ctx: &Arc<CudaContext>) -> Result<()> {
    let formats = [
        TexelFormat::RGBA8,
        TexelFormat::RGBA16F,
        TexelFormat::RGBA32F,
        TexelFormat::new(TexelType::U8, 1)?,
        TexelFormat::new(TexelType::F32, 1)?,
    ];
    for format in formats {
        for (w, h) in [(1024, 1024), (1000, 300)] {
            let layout = TextureLayout::new(w, h, full_mip_levels(w, h), format)?;
            SparseTexture::new(ctx, &layout)?;
        }
    }
    Ok(())
}

impl CudaLoader {
    /// A loader on CUDA device `ordinal` with `options` (as [`crate::Loader::new`]; the
    /// texture budget caps the device tile pool, plus a little headroom).
    ///
    /// Textures are sparse arrays when the device supports sparse arrays and virtual
    /// memory management and its sparse tiles have the engine's layout; otherwise every
    /// texture of this loader is a dense array (whole, not paged, outside the budget).
    ///
    /// Errors: [`Error::NoCudaDriver`] / [`Error::NoCudaDevice`] (as
    /// [`super::probe_device`]), invalid options, or the driver's (e.g. PTX the driver is
    /// too old for). Never panics.
    pub fn new(ordinal: u32, options: LoaderOptions) -> Result<CudaLoader> {
        let device = CudaDevice::open(ordinal)?;
        let engine = Engine::new(options)?;
        let ctx = device.context().clone();
        let stream = safe("cuStreamCreate", || ctx.new_stream())?;
        let kernels = PagingKernels::load(&ctx)?;
        let buffers = DeviceContextBuffers::new(&stream, engine.layout, ListCapacities::default())?;
        let info = device.info().clone();
        let sparse = info.sparse_supported
            && info.vmm_supported
            && match sparse_layouts_agree(&ctx) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("CUDA device {ordinal}: dense textures ({e})");
                    false
                }
            };
        let pool = if sparse {
            let max = device_pool_bytes(engine.options.max_texture_memory);
            Some(CudaTilePool::new(&ctx, DEFAULT_ARENA_BYTES, max)?)
        } else {
            None
        };
        let staging = StagingRing::new(&ctx, STAGING_SLOTS, TILE_BYTES)?;
        let state = DeviceState::new(device, stream, kernels, buffers, pool, staging);
        Ok(CudaLoader {
            engine,
            info,
            state: Mutex::new(state),
        })
    }

    /// The device, as probed when the loader was created.
    pub fn device_info(&self) -> &CudaDeviceInfo {
        &self.info
    }

    /// The options the loader was created with.
    pub fn options(&self) -> &LoaderOptions {
        &self.engine.options
    }

    /// The loader's stream (every copy, map and paging kernel of the loader runs on it).
    pub fn stream(&self) -> Arc<CudaStream> {
        self.state.lock().stream.clone()
    }

    /// The device's context (the primary context).
    pub fn context(&self) -> Arc<CudaContext> {
        self.state.lock().device.context().clone()
    }

    /// Whether textures are sparse arrays (false: the dense fallback).
    pub fn is_sparse(&self) -> bool {
        self.state.lock().pool.is_some()
    }

    /// Register a texture (as [`crate::Loader::create_texture`]); nothing is opened or put
    /// on the device until a launch samples it.
    pub fn create_texture(
        &self,
        source: Arc<dyn ImageSource>,
        desc: TextureDesc,
    ) -> Result<TextureId> {
        self.engine.create_texture(source, desc)
    }

    /// Publish the fills finished since the last launch — on the device: textures created,
    /// tiles mapped and uploaded, residence bits and entries pushed, withdrawn tiles
    /// invalidated — clear the reference bits, and start a new launch.
    ///
    /// Errors: the driver's (the loader should then be dropped).
    pub fn launch_prepare(&self) -> Result<CudaLaunch> {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let (launch_num, epoch) = self.engine.launch_prepare();
        // Launches read device memory only: the engine's host buffers may be reused as
        // soon as the device copy is made (under the engine's lock, below).
        self.engine.epochs.unpin(epoch);
        let end = {
            let mut host = self.engine.host.lock();
            st.sync(&self.engine, &mut host)?;
            host.space.end_page()
        };
        st.buffers.clear_references(&st.kernels, end)?;
        let flags = if self.engine.options.eviction {
            CONTEXT_FLAG_REQUEST_IF_RESIDENT
        } else {
            0
        };
        Ok(CudaLaunch {
            context: st.buffers.context(launch_num, flags),
            stream: st.stream.clone(),
            launch_num,
            owner: Arc::as_ptr(&self.engine) as usize,
        })
    }

    /// Pull the requests `launch` recorded (the pull kernel runs after the work enqueued
    /// on the stream, i.e. after the user's kernel) and start filling them on the fill
    /// threads.
    ///
    /// Errors: [`Error::InvalidArgument`] for a launch of another loader; the driver's.
    pub fn process_requests(&self, launch: CudaLaunch) -> Result<Ticket> {
        if launch.owner != Arc::as_ptr(&self.engine) as usize {
            return Err(Error::InvalidArgument(
                "process_requests got a launch of another loader".into(),
            ));
        }
        let pulled = {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            let end = self.engine.host.lock().space.end_page();
            let threshold = self.engine.options.lru_threshold as u32;
            let pull = st
                .buffers
                .pull(&st.kernels, launch.launch_num, end, threshold)?;
            st.stats.requests_pulled += pull.requested.len() as u64;
            st.stats.request_overflows +=
                u64::from(pull.requested_total as usize > pull.requested.len());
            PullResult {
                requested: pull.requested,
                stale: pull.stale,
            }
        };
        Ok(process::process_pulled(
            &self.engine,
            launch.launch_num,
            Some(pulled),
        ))
    }

    /// The engine's statistics (as [`crate::Loader::stats`]).
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// What the device side did.
    pub fn cuda_stats(&self) -> CudaStats {
        self.state.lock().stats.clone()
    }

    /// Change the texture memory budget (as [`crate::Loader::set_max_texture_memory`]); the
    /// device tile pool follows at the next launches.
    pub fn set_max_texture_memory(&self, bytes: u64) -> Result<()> {
        let mut st = self.state.lock();
        self.engine.set_max_texture_memory(bytes)?;
        if let Some(pool) = st.pool.as_mut() {
            pool.set_max_bytes(device_pool_bytes(bytes));
        }
        Ok(())
    }

    /// The device side of `texture` (array, texture object, device sampler) if a
    /// `launch_prepare` has put it on the device and it is still there. Holding the `Arc`
    /// keeps its array and texture object alive (tiles may still be unmapped under it;
    /// they then read as zeros). For benchmarks and tests that sample the texture object
    /// directly, e.g. a plain hardware `tex2DGrad` against the demand path.
    pub fn device_texture(&self, texture: TextureId) -> Option<Arc<GpuTexture>> {
        self.state.lock().device_texture(texture.0)
    }

    /// Why a texture failed, if it did (as [`crate::Loader::texture_error`]).
    pub fn texture_error(&self, texture: TextureId) -> Option<Error> {
        let host = self.engine.host.lock();
        match &host.resources.get(texture)?.state {
            TextureState::Failed(e) => Some(e.clone()),
            TextureState::Unloaded => Some(Error::Unloaded(texture)),
            _ => None,
        }
    }

    /// Wait until everything enqueued on the loader's stream has run.
    pub fn synchronize(&self) -> Result<()> {
        let stream = self.stream();
        safe("cuStreamSynchronize", || stream.synchronize())
    }
}

impl std::fmt::Debug for CudaLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaLoader")
            .field("device", &self.info)
            .field("options", &self.engine.options)
            .finish_non_exhaustive()
    }
}
