//! The one pattern every driver call of the CUDA backend goes through (built only with the
//! `cuda` feature):
//!
//! - raw `cudarc::driver::sys` calls: [`drv`] looks the symbol up first (a driver too old is
//!   [`Error::NoCudaDriver`] naming it), runs the call inside `catch_unwind`, and turns a
//!   failing `CUresult` into an [`Error`] naming the call ([`error_from`]);
//! - cudarc's safe API: [`safe`] does the same for a `Result<_, DriverError>`.
//!
//! Raw calls need the right context current on the calling thread: [`bind`] first.

use crate::driver::{call, describe};
use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaContext, DriverError};
use demandtex::error::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The [`Error`] for a failing `CUresult` of the driver function `from`: the driver's own
/// words and the code's name. A device that went away (or a context that is gone) is
/// [`Error::NoCudaDevice`]; an operation the device cannot do is [`Error::Unsupported`];
/// anything else (out of memory, an invalid value, a failed launch) is [`Error::Internal`].
pub(crate) fn error_from(r: CUresult, from: &str) -> Error {
    let words = describe(r, from);
    match r {
        CUresult::CUDA_ERROR_NO_DEVICE
        | CUresult::CUDA_ERROR_NOT_INITIALIZED
        | CUresult::CUDA_ERROR_DEINITIALIZED
        | CUresult::CUDA_ERROR_INVALID_DEVICE
        | CUresult::CUDA_ERROR_INVALID_CONTEXT
        | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED => Error::NoCudaDevice(words),
        CUresult::CUDA_ERROR_NOT_SUPPORTED => Error::Unsupported(format!("CUDA: {words}")),
        _ => Error::Internal(format!("CUDA: {words}")),
    }
}

/// Run `f`, one call of the driver function `symbol`, and check its result.
pub(crate) fn drv(symbol: &'static str, f: impl FnOnce() -> CUresult) -> Result<()> {
    match call(symbol, f)? {
        CUresult::CUDA_SUCCESS => Ok(()),
        r => Err(error_from(r, symbol)),
    }
}

/// Run `f`, calls of cudarc's safe API that `what` names, turning a driver error or a panic
/// (cudarc panics on a symbol missing from the driver) into an [`Error`]: what every
/// driver call of the crate goes through, and what code launching its own kernels on a
/// [`crate::CudaLoader`]'s stream can use too.
pub fn safe<T>(what: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(error_from(e.0, what)),
        Err(p) => Err(Error::NoCudaDriver(format!(
            "the CUDA driver failed in {what}: {}",
            demandtex::error::panic_message(p.as_ref())
        ))),
    }
}

/// Make `ctx` current on this thread (raw calls act on the current context).
pub(crate) fn bind(ctx: &CudaContext) -> Result<()> {
    safe("cuCtxSetCurrent", || ctx.bind_to_thread())
}

/// Run `f`, one call of the driver function `symbol`, and return its `CUresult` unchecked
/// (for calls where a failure code is an answer, e.g. `CUDA_ERROR_NOT_READY`).
pub(crate) fn status(symbol: &'static str, f: impl FnOnce() -> CUresult) -> Result<CUresult> {
    call(symbol, f)
}
