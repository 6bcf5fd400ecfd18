//! `TileBuffer`: one tile's texels ([`TILE_BYTES`], or a smaller tile size: `is_tile_size`),
//! 16-byte aligned, zero-initialised, with a stable address (samplers read it through raw
//! pointers while it is visible), preceded by a small [`TileTrailer`]: which of its file
//! tiles are still missing when the tile is filled file tile by file tile ([`SubTiles`];
//! see `requests::file_tiles`). The trailer sits before the texels so that a sampler finds
//! it from the texels' address alone, whatever the tile's size.

use crate::ids::{is_tile_size, TILE_BYTES};
use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// 16 bytes: the most the system allocator gives through `calloc`, which takes fresh memory
/// from the kernel already zeroed, so a new buffer costs only the pages its fill writes (a
/// lazily filled Ptex page touches a few). Page alignment (4096) went through
/// `posix_memalign` and a 64 KiB `memset`, faulting in every page of every new buffer.
const ALIGN: usize = 16;
/// Bytes before the texels: the trailer, padded (a multiple of `ALIGN`).
const TRAILER_BYTES: usize = 64;

/// How a tile is cut into the file's tiles when it is filled one file tile at a time:
/// sub-tiles of `2^w_shift × 2^h_shift` texels, `cols` to a row, `count` (2 to 32) in all,
/// numbered row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubTiles {
    /// log2 of a sub-tile's width in texels.
    pub w_shift: u8,
    /// log2 of a sub-tile's height in texels.
    pub h_shift: u8,
    /// Sub-tiles in a row of the tile.
    pub cols: u8,
    /// Sub-tiles in the tile.
    pub count: u8,
}

impl SubTiles {
    /// The cut of a `tile` (width, height) into `file_tile`s, if it is one: both sides
    /// powers of two dividing the tile's, 2 to 32 of them.
    pub fn of(tile: (u32, u32), file_tile: (u32, u32)) -> Option<SubTiles> {
        let ((tw, th), (fw, fh)) = (tile, file_tile);
        let fits = |t: u32, f: u32| f.is_power_of_two() && t.is_power_of_two() && f <= t;
        if !fits(tw, fw) || !fits(th, fh) {
            return None;
        }
        let (cols, rows) = (tw / fw, th / fh);
        let count = cols * rows;
        (2..=32).contains(&count).then(|| SubTiles {
            w_shift: fw.trailing_zeros() as u8,
            h_shift: fh.trailing_zeros() as u8,
            cols: cols as u8,
            count: count as u8,
        })
    }

    /// The sub-tile of texel (x, y) of the tile (coordinates within the tile).
    #[inline]
    pub fn index(self, x: u32, y: u32) -> u32 {
        (y >> self.h_shift) * self.cols as u32 + (x >> self.w_shift)
    }

    /// Bits of every sub-tile.
    pub fn all(self) -> u32 {
        if self.count >= 32 {
            u32::MAX
        } else {
            (1u32 << self.count) - 1
        }
    }

    fn pack(self) -> u32 {
        u32::from(self.w_shift)
            | u32::from(self.h_shift) << 8
            | u32::from(self.cols) << 16
            | u32::from(self.count) << 24
    }

    fn unpack(v: u32) -> SubTiles {
        SubTiles {
            w_shift: v as u8,
            h_shift: (v >> 8) as u8,
            cols: (v >> 16) as u8,
            count: (v >> 24) as u8,
        }
    }
}

/// What follows a tile's texels. A whole tile has no missing bits; a tile published before
/// its file tiles are read has one bit per missing sub-tile, cleared (Release) once the
/// sub-tile's texels are written, so a sampler that sees a bit clear (Acquire) sees them.
#[repr(C)]
pub struct TileTrailer {
    missing: AtomicU32,
    geometry: AtomicU32,
    generation: AtomicU32,
}

impl TileTrailer {
    /// The trailer of the tile at `tile`.
    ///
    /// # Safety
    /// `tile` is the address of a live [`TileBuffer`] (`as_ptr`), which outlives `'a`.
    #[inline]
    pub unsafe fn of<'a>(tile: *const u8) -> &'a TileTrailer {
        // SAFETY: a TileBuffer's allocation starts TRAILER_BYTES before its texels, 16-byte
        // aligned, so the trailer is in bounds and aligned; it is only accessed atomically
        // (or through &mut TileBuffer, when no sampler sees the buffer).
        unsafe { &*(tile.sub(TRAILER_BYTES) as *const TileTrailer) }
    }

    /// The sub-tiles still missing (0: the tile is whole).
    #[inline]
    pub fn missing(&self) -> u32 {
        self.missing.load(Ordering::Acquire)
    }

    /// How the tile is cut (meaningful while bits are missing).
    #[inline]
    pub fn sub_tiles(&self) -> SubTiles {
        SubTiles::unpack(self.geometry.load(Ordering::Relaxed))
    }

    /// The texture generation the tile was published for (meaningful while bits are
    /// missing): a file tile is read into it only while the texture is at it.
    pub fn generation(&self) -> u32 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Mark sub-tile `index` written: its texels are visible to whoever sees the bit clear.
    pub fn mark_written(&self, index: u32) {
        self.missing.fetch_and(!(1u32 << index), Ordering::Release);
    }
}

/// Owned tile memory.
pub struct TileBuffer {
    /// The allocation's start: the trailer; the texels follow at `TRAILER_BYTES`.
    base: NonNull<u8>,
    /// Bytes of texels (a tile size).
    bytes: u32,
}

// SAFETY: a TileBuffer owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for TileBuffer {}
// SAFETY: shared access only reads through `as_ptr`/`as_slice`.
unsafe impl Sync for TileBuffer {}

impl TileBuffer {
    fn layout(bytes: usize) -> Layout {
        // A non-zero size (at most 64 KiB + 64) and a power-of-two alignment: always valid.
        Layout::from_size_align(TRAILER_BYTES + bytes, ALIGN).expect("valid tile layout")
    }

    /// A zeroed buffer of [`TILE_BYTES`].
    pub fn new() -> TileBuffer {
        Self::with_bytes(TILE_BYTES)
    }

    /// A zeroed buffer of `bytes` of texels: a tile size (`is_tile_size`; anything else is
    /// a caller's bug and gives a full tile).
    pub fn with_bytes(bytes: usize) -> TileBuffer {
        debug_assert!(is_tile_size(bytes), "{bytes} is not a tile size");
        let bytes = if is_tile_size(bytes) {
            bytes
        } else {
            TILE_BYTES
        };
        let layout = Self::layout(bytes);
        // SAFETY: the layout has non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        match NonNull::new(p) {
            Some(base) => TileBuffer {
                base,
                bytes: bytes as u32,
            },
            None => handle_alloc_error(layout),
        }
    }

    /// Bytes of texels.
    pub fn bytes(&self) -> usize {
        self.bytes as usize
    }

    /// The address samplers read (the first texel); stable for the buffer's life.
    pub fn as_ptr(&self) -> *const u8 {
        // SAFETY: the allocation is TRAILER_BYTES + bytes long.
        unsafe { self.base.as_ptr().add(TRAILER_BYTES) }
    }

    /// The texels, for writing a fill. Only called while no sampler can see the buffer.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the texels are `bytes` long, after the trailer, and exclusively ours
        // (&mut self).
        unsafe {
            std::slice::from_raw_parts_mut(self.base.as_ptr().add(TRAILER_BYTES), self.bytes())
        }
    }

    /// The texels, for reading.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as above; shared borrow.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.bytes()) }
    }

    /// Say the texels are whole (`None`), or that every sub-tile of `cut` is still
    /// missing, for texture generation `generation`. Only called while no sampler can see
    /// the buffer, before it is published.
    pub fn set_sub_tiles(&mut self, cut: Option<SubTiles>, generation: u32) {
        // SAFETY: the buffer is live for the borrow.
        let t = unsafe { TileTrailer::of(self.as_ptr()) };
        let (missing, geometry) = cut.map_or((0, 0), |c| (c.all(), c.pack()));
        t.geometry.store(geometry, Ordering::Relaxed);
        t.generation.store(generation, Ordering::Relaxed);
        t.missing.store(missing, Ordering::Relaxed);
    }

    /// The buffer's trailer.
    pub fn trailer(&self) -> &TileTrailer {
        // SAFETY: the buffer is live for the borrow.
        unsafe { TileTrailer::of(self.as_ptr()) }
    }
}

impl Default for TileBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TileBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `with_bytes` with the same layout, freed once.
        unsafe { dealloc(self.base.as_ptr(), Self::layout(self.bytes())) }
    }
}

impl std::fmt::Debug for TileBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TileBuffer({:p}, {} bytes)", self.as_ptr(), self.bytes)
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
        assert_eq!(moved.trailer().missing(), 0, "a new buffer is whole");
    }

    #[test]
    fn sub_tiles_cut_a_tile_into_file_tiles_and_track_them() {
        // Half RGBA pages (128×64) of 64×64 file tiles: two; 8-bit RGBA (128×128): four.
        let two = SubTiles::of((128, 64), (64, 64)).unwrap();
        assert_eq!((two.cols, two.count, two.all()), (2, 2, 0b11));
        assert_eq!((two.index(63, 63), two.index(64, 0)), (0, 1));
        let four = SubTiles::of((128, 128), (64, 64)).unwrap();
        assert_eq!((four.index(127, 127), four.count), (3, 4));
        assert_eq!(SubTiles::of((128, 64), (128, 64)), None, "one is no cut");
        assert_eq!(
            SubTiles::of((128, 64), (48, 64)),
            None,
            "not a power of two"
        );
        assert_eq!(
            SubTiles::of((128, 64), (256, 64)),
            None,
            "larger than the tile"
        );
        assert_eq!(SubTiles::of((256, 256), (16, 16)), None, "more than 32");
        assert_eq!(SubTiles::of((256, 128), (32, 32)).unwrap().all(), u32::MAX);
        let mut b = TileBuffer::new();
        b.set_sub_tiles(Some(four), 3);
        assert_eq!(b.trailer().generation(), 3);
        assert_eq!(b.trailer().missing(), 0b1111);
        assert_eq!(b.trailer().sub_tiles(), four);
        b.trailer().mark_written(2);
        assert_eq!(b.trailer().missing(), 0b1011);
        b.set_sub_tiles(None, 0);
        assert_eq!(b.trailer().missing(), 0);
    }
}
