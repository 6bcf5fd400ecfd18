//! # demandtex-cuda
//!
//! demandtex's CUDA backend: the same demand loader as the CPU's ([`demandtex::Engine`]:
//! textures, UDIM grids, user resources, invalidate / replace / unload, budget,
//! statistics), with the page table, residence bits, LRU ages and tiles on a GPU —
//! hardware-filtered CUDA sparse textures whose 64 KiB tiles are mapped on demand onto a
//! device tile pool. [`CudaLoader`] is the entry point; the device code that samples it is
//! the header-only API of `include/demandtex/device/`.
//!
//! The crate builds everywhere: the driver is loaded at run time (cudarc's dynamic
//! loading), so a build needs no CUDA toolkit and a machine without the driver gets an
//! error, never a panic:
//!
//! - no loadable `libcuda` → [`Error::NoCudaDriver`] ([`NO_DRIVER_MESSAGE`]);
//! - a driver that fails to initialise or has no device → [`Error::NoCudaDevice`] with the
//!   driver's own message (e.g. `no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE
//!   from cuInit)`);
//! - a device ordinal past the last → [`Error::InvalidArgument`];
//! - a driver that lacks a function demandtex calls (too old) → [`Error::NoCudaDriver`]
//!   naming the function.
//!
//! None of this touches the CPU backend: a CPU [`demandtex::Loader`] works in the same
//! process whatever the probe said.
//!
//! ```
//! match demandtex_cuda::probe_device(0) {
//!     Ok(info) => println!("{}: {} bytes", info.name, info.total_memory_bytes),
//!     Err(e) => println!("{e}"), // and fall back to the CPU backend
//! }
//! ```
//!
//! # Layers
//! - the driver front door (this file, `driver`, `ops`): probing, errors;
//! - the host layer over `cudarc::driver::sys`: mipmapped and sparse arrays (`array`,
//!   `sparse`, `dense`), the `cuMemCreate` tile pool (`tile_pool`), `cuMemMapArrayAsync`
//!   batches (`mapping`), texture objects, pinned staging with fences (`staging`,
//!   `staging_gpu`), the device page arrays (`device_context`) and the paging kernels
//!   (`kernels`, their PTX shipped in `kernels/ptx/`);
//! - `backend`: the [`demandtex::backend::Backend`] that mirrors what the engine
//!   publishes onto the device;
//! - `loader`: [`CudaLoader`].

#![warn(missing_docs)]

pub mod array;
mod backend;
pub mod dense;
pub mod device_context;
mod driver;
pub mod gpu_texture;
pub mod kernels;
pub mod limits;
mod loader;
pub mod mapping;
mod ops;
pub mod ptex;
mod shared_blocks;
pub mod sparse;
pub mod staging;
mod streams;
pub mod texture_object;
pub mod tile_pool;

pub use backend::{device_pool_bytes, CudaStats};
/// The cudarc version this crate is built on (its types appear in the API: streams,
/// contexts, kernel functions).
pub use cudarc;
pub use limits::check_texture_fits;
pub use loader::{CudaLaunch, CudaLoader, TilePublication, STAGING_SLOTS};
pub use ops::safe;

#[cfg(doc)]
use demandtex::error::Error;
use demandtex::error::Result;

/// The message of [`Error::NoCudaDriver`] when no CUDA driver library can be loaded.
pub const NO_DRIVER_MESSAGE: &str = "no CUDA driver found (libcuda.so.1 not loadable): install the NVIDIA driver, or use the CPU backend";

/// What the driver reports about one device.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CudaDeviceInfo {
    /// The device's ordinal (0 = the first device the driver lists).
    pub ordinal: u32,
    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (u32, u32),
    /// Device memory in bytes.
    pub total_memory_bytes: u64,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Whether the device supports sparse CUDA arrays
    /// (`CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED`); without it the backend falls
    /// back to dense textures.
    pub sparse_supported: bool,
    /// Whether the device supports virtual memory management (`cuMemCreate`, ...;
    /// `CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`).
    pub vmm_supported: bool,
    /// The newest CUDA version the driver supports, as `1000 * major + 10 * minor`
    /// (13000 = CUDA 13.0).
    pub driver_version: u32,
    /// The largest mipmapped 2D texture, width and height
    /// (`CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH` / `_HEIGHT`; 32768 × 32768
    /// from compute capability 5.0). See [`limits`].
    pub max_mipmapped_texture: (u32, u32),
}

impl CudaDeviceInfo {
    /// [`Self::driver_version`] as `major.minor`, e.g. `13.0`.
    pub fn driver_version_text(&self) -> String {
        format!(
            "{}.{}",
            self.driver_version / 1000,
            self.driver_version % 1000 / 10
        )
    }
}

/// Whether a CUDA driver library (`libcuda.so.1`) can be loaded in this process. Only
/// tries to load it: no driver call is made.
pub fn driver_present() -> bool {
    driver::driver_present()
}

/// The number of CUDA devices the driver reports (possibly 0).
///
/// Errors: [`Error::NoCudaDriver`], [`Error::NoCudaDevice`] when the driver fails to
/// initialise (it says why).
pub fn device_count() -> Result<u32> {
    driver::device_count()
}

/// Describe CUDA device `ordinal` without creating a context on it.
///
/// Errors: [`Error::NoCudaDriver`] (no driver, or one too old), [`Error::NoCudaDevice`] (the
/// driver's message: none found, failed to initialise), [`Error::InvalidArgument`] (an
/// ordinal past the last device). Never panics.
pub fn probe_device(ordinal: u32) -> Result<CudaDeviceInfo> {
    driver::probe_device(ordinal)
}

/// One CUDA device, opened: its description and its retained primary context, which the
/// sparse-texture backend builds on. Dropping it releases the context.
pub struct CudaDevice {
    info: CudaDeviceInfo,
    context: std::sync::Arc<cudarc::driver::CudaContext>,
}

impl CudaDevice {
    /// Probe device `ordinal` ([`probe_device`]) and retain its primary context.
    ///
    /// Errors: those of [`probe_device`], and [`Error::NoCudaDevice`] with the driver's
    /// message when the context cannot be created. Never panics.
    pub fn open(ordinal: u32) -> Result<CudaDevice> {
        let info = probe_device(ordinal)?;
        let context = driver::primary_context(ordinal)?;
        Ok(CudaDevice { info, context })
    }

    /// What the driver reported when the device was opened.
    pub fn info(&self) -> &CudaDeviceInfo {
        &self.info
    }

    /// The device's primary context (cudarc), current on the thread that opened it.
    pub fn context(&self) -> &std::sync::Arc<cudarc::driver::CudaContext> {
        &self.context
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_reads_as_major_minor() {
        let info = CudaDeviceInfo {
            ordinal: 0,
            name: "x".into(),
            compute_capability: (9, 0),
            total_memory_bytes: 1,
            multiprocessors: 1,
            sparse_supported: true,
            vmm_supported: true,
            driver_version: 12080,
            max_mipmapped_texture: (32768, 32768),
        };
        assert_eq!(info.driver_version_text(), "12.8");
        assert_eq!(
            CudaDeviceInfo {
                driver_version: 13000,
                ..info
            }
            .driver_version_text(),
            "13.0"
        );
    }
}
