//! Status codes, the mapping from [`engine::Error`], and the thread-local message of the
//! last failed call.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

/// The result of every fallible call: `DTEX_STATUS_OK` (0) or one of the `DTEX_STATUS_*`
/// codes. A plain `int32_t`, never a C enum, so that any value is well defined.
pub type DtexStatus = i32;

/// Success.
pub const DTEX_STATUS_OK: DtexStatus = 0;
/// An argument is out of range: a NULL required pointer, a bad enum value, a bad
/// `struct_size`, a string that is not UTF-8.
pub const DTEX_STATUS_INVALID_ARGUMENT: DtexStatus = 1;
/// A null, destroyed or wrong-type handle.
pub const DTEX_STATUS_INVALID_HANDLE: DtexStatus = 2;
/// A texture id that this loader never handed out.
pub const DTEX_STATUS_UNKNOWN_TEXTURE: DtexStatus = 3;
/// The virtual page space or page table has no room for another allocation.
pub const DTEX_STATUS_OUT_OF_PAGES: DtexStatus = 4;
/// A source (file, callback) failed.
pub const DTEX_STATUS_SOURCE_ERROR: DtexStatus = 5;
/// An image demandtex cannot page (size, format, file type).
pub const DTEX_STATUS_UNSUPPORTED: DtexStatus = 6;
/// The texture memory budget cannot hold what must stay resident.
pub const DTEX_STATUS_BUDGET_TOO_SMALL: DtexStatus = 7;
/// A file could not be read.
pub const DTEX_STATUS_IO_ERROR: DtexStatus = 8;
/// `dtex_ticket_wait` ran out of time (not an error of the ticket).
pub const DTEX_STATUS_TIMEOUT: DtexStatus = 9;
/// No usable CUDA: no CUDA driver (`libcuda.so.1` cannot be loaded, or lacks a function
/// demandtex calls: a driver too old) or no usable CUDA device (none found, or it failed
/// to initialise). `dtex_last_error_message` says which; the CPU backend still works.
pub const DTEX_STATUS_NO_CUDA: DtexStatus = 10;
/// A caught panic or a broken invariant (a bug in demandtex: please report it).
pub const DTEX_STATUS_INTERNAL: DtexStatus = 11;

/// The names of the status codes, indexed by code.
const STATUS_NAMES: [&std::ffi::CStr; 12] = [
    c"DTEX_STATUS_OK",
    c"DTEX_STATUS_INVALID_ARGUMENT",
    c"DTEX_STATUS_INVALID_HANDLE",
    c"DTEX_STATUS_UNKNOWN_TEXTURE",
    c"DTEX_STATUS_OUT_OF_PAGES",
    c"DTEX_STATUS_SOURCE_ERROR",
    c"DTEX_STATUS_UNSUPPORTED",
    c"DTEX_STATUS_BUDGET_TOO_SMALL",
    c"DTEX_STATUS_IO_ERROR",
    c"DTEX_STATUS_TIMEOUT",
    c"DTEX_STATUS_NO_CUDA",
    c"DTEX_STATUS_INTERNAL",
];

/// An error on its way to the C caller: a status and the message for
/// `dtex_last_error_message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// A `DTEX_STATUS_*` code other than OK.
    pub status: DtexStatus,
    /// Why, in words.
    pub message: String,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: DtexStatus, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// `DTEX_STATUS_INVALID_ARGUMENT` with `message`.
    pub fn invalid_argument(message: impl Into<String>) -> ApiError {
        ApiError::new(DTEX_STATUS_INVALID_ARGUMENT, message)
    }

    /// `DTEX_STATUS_INVALID_HANDLE` naming the kind of handle.
    pub fn invalid_handle(kind: &str, id: u64) -> ApiError {
        let why = if id == 0 {
            "the null handle"
        } else {
            "destroyed, never created or of another type"
        };
        ApiError::new(
            DTEX_STATUS_INVALID_HANDLE,
            format!("invalid {kind} handle {id:#x} ({why})"),
        )
    }
}

impl From<engine::Error> for ApiError {
    fn from(e: engine::Error) -> ApiError {
        use engine::Error as E;
        let status = match &e {
            E::InvalidArgument(_) => DTEX_STATUS_INVALID_ARGUMENT,
            // An unloaded id no longer names a live texture.
            E::UnknownTexture(_) | E::Unloaded(_) => DTEX_STATUS_UNKNOWN_TEXTURE,
            E::OutOfPages { .. } => DTEX_STATUS_OUT_OF_PAGES,
            E::Source { .. } => DTEX_STATUS_SOURCE_ERROR,
            E::Unsupported(_) => DTEX_STATUS_UNSUPPORTED,
            E::BudgetTooSmall { .. } => DTEX_STATUS_BUDGET_TOO_SMALL,
            E::Internal(_) => DTEX_STATUS_INTERNAL,
            E::Io { .. } => DTEX_STATUS_IO_ERROR,
            E::NoCudaDriver(_) | E::NoCudaDevice(_) => DTEX_STATUS_NO_CUDA,
        };
        ApiError::new(status, e.to_string())
    }
}

/// `Result` with [`ApiError`].
pub type ApiResult<T> = Result<T, ApiError>;

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Record `message` as this thread's last error (interior NULs become spaces).
pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|m| *m.borrow_mut() = c);
}

/// The message of the last failed call on this thread, as Rust text (for tests and the
/// C++ wrapper's tests).
pub fn last_error() -> String {
    LAST_ERROR.with(|m| m.borrow().to_string_lossy().into_owned())
}

/// The message of the last failed dtex call on this thread, or `""` if none has failed.
/// A successful call leaves the message of the last failure in place.
///
/// Ownership: the string belongs to the library; it stays valid until the next dtex call
/// on this thread (copy it to keep it). Never NULL. Thread-safety: any thread; each thread
/// has its own message.
#[no_mangle]
pub extern "C" fn dtex_last_error_message() -> *const c_char {
    let r = std::panic::catch_unwind(|| LAST_ERROR.with(|m| m.borrow().as_ptr()));
    r.unwrap_or(c"".as_ptr())
}

/// The name of a status code: `"DTEX_STATUS_OK"`, `"DTEX_STATUS_INVALID_ARGUMENT"`, ...,
/// or `"unknown status"` for a value that is not a status.
///
/// Ownership: static; never free it. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_status_string(status: DtexStatus) -> *const c_char {
    usize::try_from(status)
        .ok()
        .and_then(|i| STATUS_NAMES.get(i))
        .map_or(c"unknown status".as_ptr(), |s| s.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_unavailability_maps_to_no_cuda_with_the_message() {
        let e = ApiError::from(engine::Error::NoCudaDriver("no CUDA driver found".into()));
        assert_eq!(e.status, DTEX_STATUS_NO_CUDA);
        assert_eq!(e.message, "no CUDA driver found");
        let e = ApiError::from(engine::Error::NoCudaDevice("CUDA_ERROR_NO_DEVICE".into()));
        assert_eq!(
            (e.status, e.message.as_str()),
            (DTEX_STATUS_NO_CUDA, "no CUDA device: CUDA_ERROR_NO_DEVICE")
        );
    }
}
