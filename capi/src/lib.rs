//! # demandtex C ABI
//!
//! The stable C interface of demandtex: `libdemandtex.so` (SONAME `libdemandtex.so.0`) and
//! `libdemandtex.a`, described by the generated, checked-in `include/demandtex.h`.
//!
//! Conventions (see the header for each function):
//! - Every fallible call returns a [`DtexStatus`]; `dtex_last_error_message` says why the
//!   last failed call on this thread failed. Out pointers are written only on success.
//! - No panic crosses the boundary: every entry point runs inside `catch_unwind`
//!   ([`boundary::entry`]); a caught panic is `DTEX_STATUS_INTERNAL`.
//! - Handles ([`DtexLoader`], [`DtexLaunch`], [`DtexTicket`], [`DtexCache`]) are generation-
//!   checked ids into a global registry of `Arc`s ([`handles`]): a null, destroyed or
//!   foreign handle is `DTEX_STATUS_INVALID_HANDLE`, never a crash.
//! - Option structs start with `struct_size`, so fields can be appended later.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

// The order of these modules is the order of the header's sections (cbindgen follows it);
// each is its own group so that rustfmt keeps it.
pub mod status;

pub mod options;

pub mod stats;

pub mod loader;

pub mod textures;

pub mod pixels;

pub mod callbacks;

pub mod lifecycle;

pub mod udim;

pub mod ptex;

pub mod resources;

pub mod launch;

pub mod sampling;

pub mod cache;

pub mod cuda;

pub mod device;

pub mod boundary;

pub mod handles;

#[cfg(test)]
mod tests;

pub use handles::{DtexCache, DtexLaunch, DtexLoader, DtexTicket};
pub use status::DtexStatus;

use std::ffi::c_char;

/// Major version of the library (`DTEX_VERSION_MAJOR`).
pub const DTEX_VERSION_MAJOR: u32 = 0;
/// Minor version of the library (`DTEX_VERSION_MINOR`).
pub const DTEX_VERSION_MINOR: u32 = 1;
/// Patch version of the library (`DTEX_VERSION_PATCH`).
pub const DTEX_VERSION_PATCH: u32 = 0;
/// The ABI version: the number in the SONAME, `libdemandtex.so.0`. It changes whenever a
/// symbol is removed or a signature or struct layout changes incompatibly.
pub const DTEX_ABI_VERSION: u32 = 0;

/// The library version as text, e.g. `"0.1.0"`.
///
/// Ownership: the string is static; never free it. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_version_string() -> *const c_char {
    c"0.1.0".as_ptr()
}

/// The library version as one number: `MAJOR * 10000 + MINOR * 100 + PATCH`. Compare it
/// with the header's `DTEX_VERSION_*` macros to detect a header/library mismatch.
///
/// Ownership: a value. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_version() -> u32 {
    DTEX_VERSION_MAJOR * 10000 + DTEX_VERSION_MINOR * 100 + DTEX_VERSION_PATCH
}

/// The ABI version of the library (`DTEX_ABI_VERSION` of the header it was built with).
///
/// Ownership: a value. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_abi_version() -> u32 {
    DTEX_ABI_VERSION
}
