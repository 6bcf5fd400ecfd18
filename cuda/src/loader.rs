//! `CudaLoader`: the demand loader on one CUDA device — the engine's multi-pass cycle with
//! the page bits, LRU ages and tiles on the GPU.
//!
//! ```text
//! let launch = loader.launch_prepare()?;        // what finished since is now on the device
//! my_kernel<<<..., launch.stream()>>>(launch.device_context(), ...);   // same stream
//! let ticket = loader.process_requests(launch)?; // pull kernel → fills start on the host
//! ticket.wait();                                 // then the next launch_prepare
//! ```
//!
//! Everything that does not depend on where tiles live — textures from any source, UDIM
//! grids, invalidate / replace / unload, user resources, statistics — is the
//! [`Engine`]'s, reached through `Deref` exactly as on a CPU [`demandtex::Loader`]. The
//! engine runs on the host and tells the device side what changed through the publish
//! seam ([`crate::backend`]); the pull runs on the device (`dtex_pull_requests`: requests,
//! LRU ageing, stale pages) and feeds the engine's `process_requests`.
//!
//! The user's kernel must run on [`CudaLaunch::stream`] (or the user orders it there with
//! events) between `launch_prepare` and `process_requests`: tile memory is unmapped and
//! reused in stream order after the launches that could sample it.
//!
//! One loader per device; several loaders (on one device or several) in one process are
//! independent (no globals).

use crate::backend::{device_pool_bytes, CudaBackend, CudaStats, LoaderStreams};
use crate::device_context::{DeviceContextBuffers, ListCapacities};
use crate::gpu_texture::GpuTexture;
use crate::kernels::PagingKernels;
use crate::ops::safe;
use crate::sparse::SparseTexture;
use crate::staging::StagingRing;
use crate::streams::StreamOrder;
use crate::tile_pool::{CudaTilePool, DEFAULT_ARENA_BYTES};
use crate::{CudaDevice, CudaDeviceInfo};
use cudarc::driver::{sys, CudaContext, CudaStream};
use demandtex::error::{Error, Result};
use demandtex::ids::{TextureId, TILE_BYTES};
use demandtex::options::{LoaderOptions, StreamingMode};
use demandtex::paging::{DeviceContext, PullResult, CONTEXT_FLAG_REQUEST_IF_RESIDENT};
use demandtex::textures::{full_mip_levels, TexelFormat, TexelType, TextureLayout};
use demandtex::{Engine, Ticket};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Pinned staging slots (64 KiB each) per loader: the most tile copies waiting for their
/// map at once, and with in-flight fills the bound on the loader's host tile memory.
pub const STAGING_SLOTS: usize = 64;

/// When a CUDA loader makes filled tiles visible on the device (maps, uploads, residence
/// bits). Either way `process_requests` also publishes what finished since
/// `launch_prepare`, before its pull (see `docs/INTERACTIVE.md`, "Publishing while the
/// kernel runs").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TilePublication {
    /// At `launch_prepare`, so the launch about to run samples them: a multi-pass render
    /// converges in the fewest launches. The host's publication is on the frame's path
    /// (about 50 µs a tile, measured on an H200). The default in final mode.
    #[default]
    BeforeLaunch = 0,
    /// At `process_requests`, on the host while the launch's kernel runs on the device
    /// (the device applies them after the kernel, in stream order): the frame does not pay
    /// for them, and a tile is sampled one launch later. `launch_prepare` still publishes
    /// textures, page-table entries and withdrawals. The default in interactive mode.
    DuringLaunch = 1,
}

impl TilePublication {
    /// The default for `mode`.
    pub fn default_for(mode: StreamingMode) -> TilePublication {
        match mode {
            StreamingMode::Final => TilePublication::BeforeLaunch,
            StreamingMode::Interactive => TilePublication::DuringLaunch,
        }
    }

    fn from_u8(v: u8) -> TilePublication {
        if v == TilePublication::DuringLaunch as u8 {
            TilePublication::DuringLaunch
        } else {
            TilePublication::BeforeLaunch
        }
    }
}

/// A demand loader on one CUDA device (see the module comment). `Send + Sync`.
pub struct CudaLoader {
    engine: Arc<Engine>,
    backend: Arc<CudaBackend>,
    info: CudaDeviceInfo,
    /// A [`TilePublication`] as its `u8`.
    tile_publication: AtomicU8,
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

// SAFETY: the context's pointers are device addresses, never dereferenced on the host; the
// stream is an `Arc` of a thread-safe cudarc stream.
unsafe impl Send for CudaLaunch {}
// SAFETY: as above; every method takes `&self` and only copies plain data.
unsafe impl Sync for CudaLaunch {}

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
    /// A loader on CUDA device `ordinal` with `options` (as [`demandtex::Loader::new`];
    /// the texture budget caps the device tile pool, plus a little headroom).
    ///
    /// Textures are sparse arrays when the device supports sparse arrays and virtual
    /// memory management and its sparse tiles have the engine's layout; otherwise every
    /// texture of this loader is a dense array (whole, not paged, outside the budget).
    ///
    /// Errors: [`Error::NoCudaDriver`] / [`Error::NoCudaDevice`] (as
    /// [`crate::probe_device`]), invalid options, or the driver's (e.g. PTX the driver is
    /// too old for). Never panics.
    pub fn new(ordinal: u32, options: LoaderOptions) -> Result<CudaLoader> {
        options.validate()?;
        let device = CudaDevice::open(ordinal)?;
        let layout = demandtex::paging::PageLayout::new(
            options.max_textures,
            options.page_table_entries,
            options.num_pages,
        )?;
        let ctx = device.context().clone();
        let stream = safe("cuStreamCreate", || ctx.new_stream())?;
        let kernels = PagingKernels::load(&ctx)?;
        let buffers = DeviceContextBuffers::new(&stream, layout, ListCapacities::default())?;
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
            let max = device_pool_bytes(options.max_texture_memory);
            Some(CudaTilePool::new(&ctx, DEFAULT_ARENA_BYTES, max)?)
        } else {
            None
        };
        let staging = StagingRing::new(&ctx, STAGING_SLOTS, TILE_BYTES)?;
        let streams = LoaderStreams {
            stream,
            order: StreamOrder::new(&ctx)?,
            map_stream: safe("cuStreamCreate", || ctx.new_stream())?,
            unmapped: StreamOrder::new(&ctx)?,
            mapped: StreamOrder::new(&ctx)?,
        };
        let backend = Arc::new(CudaBackend::new(
            device,
            streams,
            kernels,
            buffers,
            pool,
            staging,
            options.coalesce_constant_tiles,
        ));
        let publication = TilePublication::default_for(options.mode);
        let engine = Engine::new(options, backend.clone())?;
        Ok(CudaLoader {
            engine,
            backend,
            info,
            tile_publication: AtomicU8::new(publication as u8),
        })
    }

    /// The engine (shared with fill threads and the C ABI).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The device, as probed when the loader was created.
    pub fn device_info(&self) -> &CudaDeviceInfo {
        &self.info
    }

    /// Register the Ptex file at `path` with this loader's engine and copy its face and
    /// unit tables to the device: sample it in a kernel with `dtex::ptexSample` and
    /// [`DevicePtex::device_texture`](crate::ptex::DevicePtex::device_texture), which must
    /// outlive the kernels that read it.
    pub fn create_ptex_texture(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<(demandtex::ptex::PtexTexture, crate::ptex::DevicePtex)> {
        let texture = demandtex::ptex::PtexTexture::create(self.engine(), path)?;
        let device = crate::ptex::DevicePtex::upload(&self.stream(), &texture)?;
        Ok((texture, device))
    }

    /// The loader's stream (every copy, map and paging kernel of the loader runs on it).
    pub fn stream(&self) -> Arc<CudaStream> {
        self.backend.state.lock().stream.clone()
    }

    /// The device's context (the primary context).
    pub fn context(&self) -> Arc<CudaContext> {
        self.backend.state.lock().device.context().clone()
    }

    /// Whether textures are sparse arrays (false: the dense fallback).
    pub fn is_sparse(&self) -> bool {
        self.backend.state.lock().pool.is_some()
    }

    /// When filled tiles are published (see [`TilePublication`]; the default follows the
    /// streaming mode).
    pub fn tile_publication(&self) -> TilePublication {
        TilePublication::from_u8(self.tile_publication.load(Ordering::Relaxed))
    }

    /// Publish filled tiles as `publication` says from the next `launch_prepare` on.
    /// Tiles already held for a `process_requests` are published there.
    pub fn set_tile_publication(&self, publication: TilePublication) {
        self.tile_publication
            .store(publication as u8, Ordering::Relaxed);
    }

    /// Publish what finished since the last launch — on the device: textures created,
    /// tiles mapped and uploaded (unless tiles are published
    /// [`DuringLaunch`](TilePublication::DuringLaunch)), residence bits and entries pushed,
    /// withdrawn pages invalidated — clear the device's reference bits, and start a new
    /// launch, whose kernel runs on [`CudaLaunch::stream`]. The host cost is the number of
    /// changes, not the size of the page space.
    ///
    /// Errors: the driver's (the loader should then be dropped).
    pub fn launch_prepare(&self) -> Result<CudaLaunch> {
        self.prepare(None)
    }

    /// As [`launch_prepare`](Self::launch_prepare), for a kernel launched on the caller's
    /// `stream` (a stream of this loader's context; null: the default stream): `stream`
    /// waits, on the device, for the publication.
    ///
    /// # Safety
    /// `stream` is null or a live stream of [`context`](Self::context).
    pub unsafe fn launch_prepare_on(&self, stream: sys::CUstream) -> Result<CudaLaunch> {
        self.prepare(Some(stream))
    }

    fn prepare(&self, user_stream: Option<sys::CUstream>) -> Result<CudaLaunch> {
        let published = match self.tile_publication() {
            TilePublication::BeforeLaunch => self.engine.publish_pending()?,
            TilePublication::DuringLaunch => self.engine.publish_pending_except_tiles()?,
        };
        // Launches read device memory only: the engine's host memory is never held.
        let launch_num = self.engine.begin_launch().launch_num();
        let end = self.engine.page_end();
        let mut st = self.backend.state.lock();
        let st = &mut *st;
        st.stats.publications += published as u64;
        st.buffers.clear_references(&st.kernels, end)?;
        if let Some(user) = user_stream {
            // SAFETY: the loader's stream is live; the caller vouches for `user`.
            unsafe { st.order.order(st.stream.cu_stream(), user) }?;
        }
        let flags = if self.engine.options().eviction {
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

    /// Publish what finished since `launch_prepare` (and the tiles it held, under
    /// [`TilePublication::DuringLaunch`]) — on the host while the kernel runs, on the
    /// device after it — then pull the requests `launch` recorded (the pull kernel runs
    /// after the work enqueued on the loader's stream, i.e. after the user's kernel) and
    /// start filling them on the fill threads.
    ///
    /// Errors: [`Error::InvalidArgument`] for a launch of another loader; the driver's.
    pub fn process_requests(&self, launch: CudaLaunch) -> Result<Ticket> {
        self.process(launch, None)
    }

    /// As [`process_requests`](Self::process_requests), for a kernel enqueued on the
    /// caller's `stream`: the pull (and the unmapping of tiles that kernel may read) waits,
    /// on the device, for the work enqueued on `stream` so far.
    ///
    /// # Safety
    /// `stream` is null or a live stream of [`context`](Self::context).
    pub unsafe fn process_requests_after(
        &self,
        launch: CudaLaunch,
        stream: sys::CUstream,
    ) -> Result<Ticket> {
        self.process(launch, Some(stream))
    }

    fn process(&self, launch: CudaLaunch, user_stream: Option<sys::CUstream>) -> Result<Ticket> {
        if launch.owner != Arc::as_ptr(&self.engine) as usize {
            return Err(Error::InvalidArgument(
                "process_requests got a launch of another loader".into(),
            ));
        }
        if let Some(user) = user_stream {
            let mut st = self.backend.state.lock();
            let st = &mut *st;
            // SAFETY: the loader's stream is live; the caller vouches for `user`. From here
            // on the loader's stream (publication, pull) runs after the user's kernel.
            unsafe { st.order.order(user, st.stream.cu_stream()) }?;
        }
        // The host's side of these publications overlaps the kernel; the engine calls
        // the backend, which takes its own lock.
        let published = self.engine.publish_pending()? as u64;
        let end = self.engine.page_end();
        let pulled = {
            let mut st = self.backend.state.lock();
            let st = &mut *st;
            st.stats.publications += published;
            st.stats.publications_during_launch += published;
            let threshold = self.engine.options().lru_threshold as u32;
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
        Ok(self
            .engine
            .process_requests(launch.launch_num, Some(pulled)))
    }

    /// What the device side did.
    pub fn cuda_stats(&self) -> CudaStats {
        self.backend.state.lock().stats.clone()
    }

    /// Change the texture memory budget (as [`Engine::set_max_texture_memory`]); the device
    /// tile pool follows at the next launches.
    pub fn set_max_texture_memory(&self, bytes: u64) -> Result<()> {
        self.engine.set_max_texture_memory(bytes)?;
        if let Some(pool) = self.backend.state.lock().pool.as_mut() {
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
        self.backend.state.lock().device_texture(texture.0)
    }

    /// Wait until everything enqueued on the loader's stream has run.
    pub fn synchronize(&self) -> Result<()> {
        let stream = self.stream();
        safe("cuStreamSynchronize", || stream.synchronize())
    }
}

impl std::ops::Deref for CudaLoader {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl std::fmt::Debug for CudaLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaLoader")
            .field("device", &self.info)
            .field("options", self.engine.options())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_published_before_final_launches_and_during_interactive_ones() {
        assert_eq!(
            TilePublication::default_for(StreamingMode::Final),
            TilePublication::BeforeLaunch
        );
        assert_eq!(
            TilePublication::default_for(StreamingMode::Interactive),
            TilePublication::DuringLaunch
        );
        for p in [TilePublication::BeforeLaunch, TilePublication::DuringLaunch] {
            assert_eq!(TilePublication::from_u8(p as u8), p);
        }
    }
}
