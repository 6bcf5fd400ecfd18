//! The CUDA backend's front door: find the NVIDIA driver and a device, describe the device,
//! and say plainly why not when there is none.
//!
//! The entry points exist in every build, so front ends need no `cfg`: built without the
//! `cuda` feature they answer [`Error::Unsupported`]. With it, the driver is loaded at run
//! time (cudarc's dynamic loading), so a build needs no CUDA toolkit and a machine without
//! the driver gets an error, never a panic:
//!
//! - no loadable `libcuda` → [`Error::NoCudaDriver`] ([`NO_DRIVER_MESSAGE`]);
//! - a driver that fails to initialise or has no device → [`Error::NoCudaDevice`] with the
//!   driver's own message (e.g. `no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE
//!   from cuInit)`);
//! - a device ordinal past the last → [`Error::InvalidArgument`];
//! - a driver that lacks a function demandtex calls (too old) → [`Error::NoCudaDriver`]
//!   naming the function.
//!
//! None of this touches the CPU backend: a CPU [`crate::Loader`] works in the same process
//! whatever the probe said.
//!
//! ```
//! use demandtex::backend::cuda;
//! match cuda::probe_device(0) {
//!     Ok(info) => println!("{}: {} bytes", info.name, info.total_memory_bytes),
//!     Err(e) => println!("{e}"), // and fall back to the CPU backend
//! }
//! ```

#[cfg(feature = "cuda")]
pub mod array;
#[cfg(feature = "cuda")]
pub mod bench;
#[cfg(feature = "cuda")]
pub mod bench_upload;
#[cfg(feature = "cuda")]
pub mod demo;
#[cfg(feature = "cuda")]
pub mod dense;
#[cfg(feature = "cuda")]
pub mod device_context;
#[cfg(feature = "cuda")]
mod device_sync;
#[cfg(feature = "cuda")]
mod driver;
#[cfg(feature = "cuda")]
pub mod gpu_texture;
#[cfg(feature = "cuda")]
pub mod loader;
#[cfg(feature = "cuda")]
pub mod mapping;
#[cfg(feature = "cuda")]
pub mod module;
#[cfg(feature = "cuda")]
mod ops;
pub mod sparse;
pub mod staging;
#[cfg(feature = "cuda")]
pub mod texture_object;
pub mod tile_pool;

#[cfg(feature = "cuda")]
pub use device_sync::{device_pool_bytes, CudaStats};
#[cfg(feature = "cuda")]
pub use loader::{CudaLaunch, CudaLoader};

use crate::error::Result;
// The doc links name `Error` in every build; the code only without the feature.
#[cfg(any(doc, not(feature = "cuda")))]
use crate::error::Error;

/// The message of [`Error::NoCudaDriver`] when no CUDA driver library can be loaded.
pub const NO_DRIVER_MESSAGE: &str = "no CUDA driver found (libcuda.so.1 not loadable): install the NVIDIA driver, or use the CPU backend";

/// The message of [`Error::Unsupported`] from every entry point of a build without the
/// `cuda` feature.
pub const NOT_BUILT_MESSAGE: &str = "built without the cuda feature";

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

/// Whether a CUDA driver library (`libcuda.so.1`) can be loaded in this process; always
/// `false` without the `cuda` feature. Only tries to load it: no driver call is made.
pub fn driver_present() -> bool {
    #[cfg(feature = "cuda")]
    {
        driver::driver_present()
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

/// The number of CUDA devices the driver reports (possibly 0).
///
/// Errors: [`Error::NoCudaDriver`], [`Error::NoCudaDevice`] when the driver fails to
/// initialise (it says why), [`Error::Unsupported`] without the `cuda` feature.
pub fn device_count() -> Result<u32> {
    #[cfg(feature = "cuda")]
    {
        driver::device_count()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(Error::Unsupported(NOT_BUILT_MESSAGE.into()))
    }
}

/// Describe CUDA device `ordinal` without creating a context on it.
///
/// Errors: [`Error::NoCudaDriver`] (no driver, or one too old), [`Error::NoCudaDevice`] (the
/// driver's message: none found, failed to initialise), [`Error::InvalidArgument`] (an
/// ordinal past the last device), [`Error::Unsupported`] without the `cuda` feature.
/// Never panics.
pub fn probe_device(ordinal: u32) -> Result<CudaDeviceInfo> {
    #[cfg(feature = "cuda")]
    {
        driver::probe_device(ordinal)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        Err(Error::Unsupported(NOT_BUILT_MESSAGE.into()))
    }
}

/// One CUDA device, opened: its description and (with the `cuda` feature) its retained
/// primary context, which the sparse-texture backend builds on. Dropping it releases the
/// context.
pub struct CudaDevice {
    info: CudaDeviceInfo,
    #[cfg(feature = "cuda")]
    context: std::sync::Arc<cudarc::driver::CudaContext>,
}

impl CudaDevice {
    /// Probe device `ordinal` ([`probe_device`]) and retain its primary context.
    ///
    /// Errors: those of [`probe_device`], and [`Error::NoCudaDevice`] with the driver's
    /// message when the context cannot be created. Never panics.
    pub fn open(ordinal: u32) -> Result<CudaDevice> {
        let info = probe_device(ordinal)?;
        #[cfg(feature = "cuda")]
        {
            let context = driver::primary_context(ordinal)?;
            Ok(CudaDevice { info, context })
        }
        #[cfg(not(feature = "cuda"))]
        {
            // Unreachable: `probe_device` fails in such a build.
            Err(Error::Unsupported(format!(
                "{NOT_BUILT_MESSAGE} (device {})",
                info.ordinal
            )))
        }
    }

    /// What the driver reported when the device was opened.
    pub fn info(&self) -> &CudaDeviceInfo {
        &self.info
    }

    /// The device's primary context (cudarc), current on the thread that opened it.
    #[cfg(feature = "cuda")]
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

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn without_the_feature_every_entry_point_is_unsupported() {
        let unsupported = Error::Unsupported(NOT_BUILT_MESSAGE.into());
        assert!(!driver_present());
        assert_eq!(device_count(), Err(unsupported.clone()));
        assert_eq!(probe_device(0), Err(unsupported.clone()));
        assert_eq!(CudaDevice::open(0).map(|_| ()), Err(unsupported));
    }
}
