//! Whole-buffer zlib inflate with libdeflate (`libdeflater`), shared by the TIFF and
//! OpenEXR readers: their compressed chunks decode to a size known in advance, which is
//! what libdeflate needs, and it inflates 1.15–1.3× faster than the streaming inflaters
//! (zlib-rs, zune-inflate) on maketx's tiles.

use std::cell::RefCell;

thread_local! {
    /// Each thread's decompressor (its tables are reused from chunk to chunk).
    static DEFLATE: RefCell<Option<libdeflater::Decompressor>> = const { RefCell::new(None) };
}

/// Inflate the zlib stream `input` into `out`: `Some(bytes written)` (at most
/// `out.len()`), or `None` when libdeflate cannot take the stream whole — it holds more than
/// `out`, or it is damaged anywhere, even after the last byte a caller needs. Callers then
/// fall back to a streaming inflater, whose errors they already report.
pub(crate) fn inflate_whole(input: &[u8], out: &mut [u8]) -> Option<usize> {
    DEFLATE.with_borrow_mut(|d| {
        d.get_or_insert_with(libdeflater::Decompressor::new)
            .zlib_decompress(input, out)
            .ok()
    })
}
