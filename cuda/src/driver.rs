//! The driver calls behind [`crate::probe_device`] and [`crate::CudaDevice::open`], over
//! `cudarc::driver::sys` (built only with the `cuda` feature).
//!
//! cudarc loads `libcuda` on first use and **panics** when it cannot (no driver), and again
//! when a function is missing from the library (a driver older than the bindings). So:
//!
//! 1. every entry point first asks [`driver_present`] (which only tries to `dlopen` the
//!    library) and answers [`Error::NoCudaDriver`] when it is not;
//! 2. every call goes through [`call`], which looks the symbol up first (a missing one is
//!    a clean [`Error::NoCudaDriver`] naming it, with no panic message) and then runs the
//!    call inside `catch_unwind`, as a last line of defence.
//!
//! A failing `CUresult` becomes [`Error::NoCudaDevice`] with the driver's own words.

use crate::{CudaDeviceInfo, NO_DRIVER_MESSAGE};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr, CUresult};
use demandtex::error::{Error, Result};
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The functions `cudarc::driver::CudaContext::new` and its `Drop` call (checked before a
/// context is created, so that neither can panic on a missing symbol).
const CONTEXT_SYMBOLS: [&str; 7] = [
    "cuInit",
    "cuDeviceGet",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDeviceGetAttribute",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
];

/// Whether a CUDA driver library (`libcuda.so`, `libcuda.so.1`, ...) can be loaded.
pub(super) fn driver_present() -> bool {
    // SAFETY: it only tries `dlopen` on each candidate name and closes what it opened.
    catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false)
}

/// Whether the loaded driver exports `symbol`.
fn has_symbol(symbol: &str) -> bool {
    catch_unwind(|| {
        // SAFETY: `culib` loads the library that `driver_present` found (callers check it
        // first); looking a symbol up calls nothing.
        let lib = unsafe { sys::culib() };
        // SAFETY: only whether the symbol exists is used; the pointer is never called.
        unsafe { lib.get::<unsafe extern "C" fn()>(symbol.as_bytes()) }.is_ok()
    })
    .unwrap_or(false)
}

/// The error for a driver library without `symbol`.
fn too_old(symbol: &str) -> Error {
    Error::NoCudaDriver(format!(
        "the CUDA driver is too old: its library has no {symbol}; install a current NVIDIA driver, or use the CPU backend"
    ))
}

/// Runs `f`, which calls the driver function `symbol` (and no other that was not checked),
/// turning a missing symbol or a panic into [`Error::NoCudaDriver`].
pub(super) fn call<T>(symbol: &'static str, f: impl FnOnce() -> T) -> Result<T> {
    if !has_symbol(symbol) {
        return Err(too_old(symbol));
    }
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        Error::NoCudaDriver(format!(
            "the CUDA driver failed in {symbol}: {}",
            demandtex::error::panic_message(p.as_ref())
        ))
    })
}

/// The driver's description of `r`: `"no CUDA-capable device is detected
/// (CUDA_ERROR_NO_DEVICE from cuInit)"`, or only the code's name when the driver has no
/// `cuGetErrorString`.
pub(super) fn describe(r: CUresult, from: &str) -> String {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: `cuGetErrorString` writes a pointer to a static string, or fails.
    let words = call("cuGetErrorString", || unsafe {
        sys::cuGetErrorString(r, &mut text)
    })
    .ok()
    .filter(|s| *s == CUresult::CUDA_SUCCESS && !text.is_null())
    .map(|_| {
        // SAFETY: non-null on success: a NUL-terminated string owned by the driver.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    });
    match words {
        Some(w) => format!("{w} ({r:?} from {from})"),
        None => format!("{r:?} from {from}"),
    }
}

/// `Ok` on `CUDA_SUCCESS`, else [`Error::NoCudaDevice`] with the driver's words.
fn check(r: CUresult, from: &str) -> Result<()> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(()),
        _ => Err(Error::NoCudaDevice(describe(r, from))),
    }
}

/// Loads the driver and initialises it; returns the CUDA version it supports
/// (`1000 * major + 10 * minor`).
fn init() -> Result<u32> {
    if !driver_present() {
        return Err(Error::NoCudaDriver(NO_DRIVER_MESSAGE.into()));
    }
    // SAFETY: cuInit takes flags (must be 0) and may be called any number of times.
    check(call("cuInit", || unsafe { sys::cuInit(0) })?, "cuInit")?;
    let mut version: c_int = 0;
    // SAFETY: writes one int.
    let r = call("cuDriverGetVersion", || unsafe {
        sys::cuDriverGetVersion(&mut version)
    })?;
    check(r, "cuDriverGetVersion")?;
    Ok(u32::try_from(version).unwrap_or(0))
}

/// The number of devices, after [`init`].
fn count() -> Result<u32> {
    let mut n: c_int = 0;
    // SAFETY: writes one int.
    let r = call("cuDeviceGetCount", || unsafe {
        sys::cuDeviceGetCount(&mut n)
    })?;
    check(r, "cuDeviceGetCount")?;
    Ok(u32::try_from(n).unwrap_or(0))
}

/// See [`crate::device_count`].
pub(super) fn device_count() -> Result<u32> {
    init()?;
    count()
}

/// The device handle of `ordinal`, after [`init`]: [`Error::NoCudaDevice`] when there is
/// none at all, [`Error::InvalidArgument`] when `ordinal` is past the last.
fn device(ordinal: u32) -> Result<sys::CUdevice> {
    let n = count()?;
    if n == 0 {
        return Err(Error::NoCudaDevice(
            "the CUDA driver reports 0 devices".into(),
        ));
    }
    if ordinal >= n {
        return Err(Error::InvalidArgument(format!(
            "CUDA device {ordinal} does not exist: the driver reports {n} device{} (0..={})",
            if n == 1 { "" } else { "s" },
            n - 1
        )));
    }
    let mut dev: sys::CUdevice = 0;
    // SAFETY: writes one handle; `ordinal < n <= i32::MAX`.
    let r = call("cuDeviceGet", || unsafe {
        sys::cuDeviceGet(&mut dev, ordinal as c_int)
    })?;
    check(r, "cuDeviceGet")?;
    Ok(dev)
}

/// One integer attribute of `dev`.
fn attribute(dev: sys::CUdevice, attr: Attr) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: writes one int; `attr` is a valid enum value of the bindings.
    let r = call("cuDeviceGetAttribute", || unsafe {
        sys::cuDeviceGetAttribute(&mut v, attr, dev)
    })?;
    check(r, "cuDeviceGetAttribute")?;
    Ok(v)
}

/// See [`crate::probe_device`].
pub(super) fn probe_device(ordinal: u32) -> Result<CudaDeviceInfo> {
    let driver_version = init()?;
    let dev = device(ordinal)?;

    let mut name = [0u8; 256];
    // SAFETY: the driver writes at most `name.len()` bytes, NUL included.
    let r = call("cuDeviceGetName", || unsafe {
        sys::cuDeviceGetName(name.as_mut_ptr().cast(), name.len() as c_int, dev)
    })?;
    check(r, "cuDeviceGetName")?;
    let name = match CStr::from_bytes_until_nul(&name) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&name).into_owned(),
    };

    let mut total: usize = 0;
    // SAFETY: writes one size.
    let r = call("cuDeviceTotalMem_v2", || unsafe {
        sys::cuDeviceTotalMem_v2(&mut total, dev)
    })?;
    check(r, "cuDeviceTotalMem_v2")?;

    let count = |attr| attribute(dev, attr).map(|v| u32::try_from(v).unwrap_or(0));
    let flag = |attr| attribute(dev, attr).map(|v| v != 0);
    Ok(CudaDeviceInfo {
        ordinal,
        name,
        compute_capability: (
            count(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            count(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        total_memory_bytes: total as u64,
        multiprocessors: count(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        sparse_supported: flag(Attr::CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED)?,
        vmm_supported: flag(Attr::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)?,
        driver_version,
        max_mipmapped_texture: (
            count(Attr::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH)?,
            count(Attr::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT)?,
        ),
    })
}

/// The primary context of device `ordinal` (already probed), through cudarc.
pub(super) fn primary_context(ordinal: u32) -> Result<Arc<cudarc::driver::CudaContext>> {
    if let Some(missing) = CONTEXT_SYMBOLS.iter().find(|s| !has_symbol(s)) {
        return Err(too_old(missing));
    }
    let created = call("cuDevicePrimaryCtxRetain", || {
        cudarc::driver::CudaContext::new(ordinal as usize)
    })?;
    created.map_err(|e| {
        Error::NoCudaDevice(format!(
            "device {ordinal}: {}",
            describe(e.0, "primary context creation")
        ))
    })
}
