//! `TileBuffer`: one 64 KiB, page-aligned, zero-initialised block of tile memory with a
//! stable address (samplers read it through raw pointers while it is visible).

use crate::ids::TILE_BYTES;
use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

const ALIGN: usize = 4096;

/// Owned tile memory.
pub struct TileBuffer {
    ptr: NonNull<u8>,
}

// SAFETY: a TileBuffer owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for TileBuffer {}
// SAFETY: shared access only reads through `as_ptr`/`as_slice`.
unsafe impl Sync for TileBuffer {}

impl TileBuffer {
    fn layout() -> Layout {
        // TILE_BYTES is a non-zero multiple of ALIGN, a power of two: always valid.
        Layout::from_size_align(TILE_BYTES, ALIGN).expect("valid tile layout")
    }

    /// A zeroed buffer.
    pub fn new() -> TileBuffer {
        // SAFETY: the layout has non-zero size.
        let p = unsafe { alloc_zeroed(Self::layout()) };
        match NonNull::new(p) {
            Some(ptr) => TileBuffer { ptr },
            None => handle_alloc_error(Self::layout()),
        }
    }

    /// The address samplers read; stable for the buffer's life.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The bytes, for writing a fill. Only called while no sampler can see the buffer.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the allocation is TILE_BYTES long and exclusively ours (&mut self).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), TILE_BYTES) }
    }

    /// The bytes, for reading.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as above; shared borrow.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), TILE_BYTES) }
    }
}

impl Default for TileBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TileBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the same layout, freed once.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout()) }
    }
}

impl std::fmt::Debug for TileBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TileBuffer({:p})", self.ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_aligned_and_writable() {
        let mut b = TileBuffer::new();
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[TILE_BYTES - 1] = 7;
        let p = b.as_ptr();
        let moved = b;
        assert_eq!(moved.as_ptr(), p, "moving the owner keeps the address");
        assert_eq!(moved.as_slice()[TILE_BYTES - 1], 7);
    }
}
