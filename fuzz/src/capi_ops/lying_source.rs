//! A callback image source for the C ABI target whose every answer comes from the input.

use capi::callbacks::*;
use capi::textures::{DtexImageInfo, DtexTileRegion};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

/// A callback source whose answers come from the input. Kept alive by the run (never
/// freed by `close`), so a call after `close` is detected rather than undefined.
pub(super) struct LyingSource {
    pub(super) info: DtexImageInfo,
    /// 0: always READY; n: every n-th read fails (odd n) or is NOT_YET (even n).
    pub(super) mode: u32,
    pub(super) fill: u8,
    pub(super) reads: AtomicU32,
    pub(super) closes: AtomicU32,
}

impl LyingSource {
    fn answer(&self) -> i32 {
        assert_eq!(
            self.closes.load(Ordering::SeqCst),
            0,
            "a source was called after its close"
        );
        let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        match self.mode {
            0 => DTEX_SOURCE_READY,
            m if n.is_multiple_of(m) && m % 2 == 1 => DTEX_SOURCE_ERROR,
            m if n.is_multiple_of(m) => DTEX_SOURCE_NOT_YET,
            _ => DTEX_SOURCE_READY,
        }
    }
}

fn source<'a>(user: *mut c_void) -> &'a LyingSource {
    // SAFETY: user_data is always a pointer from `Arc::as_ptr` of a LyingSource the run
    // keeps alive until after every loader is destroyed.
    unsafe { &*(user as *const LyingSource) }
}

pub(super) unsafe extern "C" fn open_cb(user: *mut c_void, out: *mut DtexImageInfo) -> i32 {
    let s = source(user);
    // SAFETY: the library passes a writable DtexImageInfo.
    unsafe { out.write(s.info) };
    s.answer()
}

pub(super) unsafe extern "C" fn read_cb(
    user: *mut c_void,
    _region: *const DtexTileRegion,
    dest: *mut c_void,
    dest_bytes: usize,
    _row_bytes: usize,
) -> i32 {
    let s = source(user);
    // SAFETY: the library passes `dest_bytes` writable bytes.
    unsafe { std::ptr::write_bytes(dest as *mut u8, s.fill, dest_bytes) };
    s.answer()
}

pub(super) unsafe extern "C" fn tail_cb(
    user: *mut c_void,
    _levels: *const DtexMipTailLevel,
    _num_levels: usize,
    dest: *mut c_void,
    dest_bytes: usize,
) -> i32 {
    let s = source(user);
    // SAFETY: the library passes `dest_bytes` writable bytes.
    unsafe { std::ptr::write_bytes(dest as *mut u8, s.fill, dest_bytes) };
    s.answer()
}

pub(super) unsafe extern "C" fn close_cb(user: *mut c_void) {
    let closes = source(user).closes.fetch_add(1, Ordering::SeqCst);
    assert_eq!(closes, 0, "a source was closed twice");
}
