//! The CPU backend: tiles stay in the engine's host buffers and samplers find them through
//! a [`TileDirectory`] — the CPU's "sparse texture", a two-level directory from tile page to
//! the address of its 64 KiB of texel data. The top level has one pointer per 1024 pages
//! (0.008 B per virtual page); a 8 KiB block of tile pointers is allocated the first time
//! one of its pages becomes resident.
//!
//! As a [`Backend`], it keeps the directory in step with what the engine publishes: a
//! published tile's address is stored before the engine sets its residence bit; a released
//! tile's address is cleared (samplers treat a null address as not resident). Staging and
//! restoring keep the address (the data stays in place), and sampler records, base colours
//! and entries are read straight from the engine's host page table.

use super::{Backend, HostCopy, PublishError, TextureContents, Withdrawal};
use crate::error::Error;
use crate::ids::PageId;
use crate::memory::TileBuffer;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Reads the file tiles of pages published before they were read (a blocking fill of a
/// file whose tiles are smaller than a page: see [`crate::memory::TileTrailer`]) into
/// them, in place, for the lookup that needs them. The engine is one.
pub trait FileTileFiller: Sync {
    /// Read file tile `index` of resident page `page`, whose texels are at `tile` (its
    /// tile directory entry, seen by a live view), into it. Whether that file tile's
    /// texels can now be read (false: the read failed or must wait, or the page's texture
    /// moved on; the lookup treats the page as not resident).
    fn fill_file_tile(&self, page: u32, tile: *const u8, index: u32) -> bool;
}

/// The CPU backend: the tile directory samplers read (see the module docs).
pub struct CpuBackend {
    directory: TileDirectory,
}

impl CpuBackend {
    /// A backend for `num_pages` pages.
    pub fn new(num_pages: u32) -> CpuBackend {
        CpuBackend {
            directory: TileDirectory::new(num_pages),
        }
    }

    /// The directory samplers read.
    pub fn directory(&self) -> &TileDirectory {
        &self.directory
    }
}

impl Backend for CpuBackend {
    fn samples_host_tiles(&self) -> bool {
        true
    }

    /// The directory stores one address per page; many may hold the same one.
    fn shares_tiles(&self) -> bool {
        true
    }

    fn withdraw(&self, withdrawal: Withdrawal) -> Result<(), Error> {
        if let Withdrawal::TileReleased(page) = withdrawal {
            self.directory.set(page.0, std::ptr::null());
        }
        Ok(())
    }

    fn publish_tile(&self, page: PageId, data: &TileBuffer) -> Result<HostCopy, PublishError> {
        // A tile published with file tiles missing is flagged, so samplers look at its
        // trailer only then.
        let partial = data.trailer().missing() != 0;
        self.directory.set_tile(page.0, data.as_ptr(), partial);
        Ok(HostCopy::Keep)
    }

    fn restore_tile(&self, _page: PageId) -> Result<(), PublishError> {
        Ok(())
    }

    fn publish_texture(&self, _contents: &TextureContents<'_>) -> Result<(), PublishError> {
        Ok(())
    }

    fn publish_entry(&self, _page: PageId, _entry: u64) -> Result<(), Error> {
        Ok(())
    }
}

const BLOCK_PAGES: usize = 1024;
type Block = [AtomicPtr<u8>; BLOCK_PAGES];

/// Page → tile data address, readable without locks from any sampling thread.
pub struct TileDirectory {
    blocks: Box<[AtomicPtr<Block>]>,
}

impl TileDirectory {
    /// A directory for `num_pages` pages.
    pub fn new(num_pages: u32) -> Self {
        let n = (num_pages as usize).div_ceil(BLOCK_PAGES);
        TileDirectory {
            blocks: (0..n)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
        }
    }

    /// The tile data of `page`, or null. Only meaningful after the page's residence bit was
    /// seen set (the bit's release/acquire pair orders the pointer store before this load).
    #[inline]
    pub fn get(&self, page: u32) -> *const u8 {
        self.get_tagged(page).0
    }

    /// The tile data of `page` (or null), and whether it was published with file tiles
    /// missing (see [`crate::memory::TileTrailer`]): the flag rides in the address's low
    /// bit (tile buffers are 16-byte aligned).
    #[inline]
    pub fn get_tagged(&self, page: u32) -> (*const u8, bool) {
        let Some(top) = self.blocks.get(page as usize / BLOCK_PAGES) else {
            return (std::ptr::null(), false);
        };
        let block = top.load(Ordering::Acquire);
        if block.is_null() {
            return (std::ptr::null(), false);
        }
        // SAFETY: blocks are allocated once, never freed before `self` drops, and only
        // handed out as shared references to atomics.
        let raw = unsafe { (*block)[page as usize % BLOCK_PAGES].load(Ordering::Acquire) };
        let tag = raw as usize & 1;
        (raw.wrapping_byte_sub(tag) as *const u8, tag != 0)
    }

    /// Record where `page`'s tile lives, flagged `partial` if it was published with file
    /// tiles missing. Stores are serialised as for [`set`](Self::set).
    pub fn set_tile(&self, page: u32, data: *const u8, partial: bool) {
        debug_assert_eq!(data as usize & 1, 0, "tile buffers are aligned");
        self.set(page, data.wrapping_byte_add(partial as usize));
    }

    /// Record where `page`'s data lives (null to forget it). Callers serialise stores under
    /// the loader's lock; loads may run concurrently.
    pub fn set(&self, page: u32, data: *const u8) {
        let top = &self.blocks[page as usize / BLOCK_PAGES];
        let mut block = top.load(Ordering::Acquire);
        if block.is_null() {
            if data.is_null() {
                return;
            }
            let fresh: Box<Block> =
                Box::new(std::array::from_fn(
                    |_| AtomicPtr::new(std::ptr::null_mut()),
                ));
            let fresh = Box::into_raw(fresh);
            match top.compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => block = fresh,
                Err(existing) => {
                    // SAFETY: `fresh` came from Box::into_raw above and was never shared.
                    drop(unsafe { Box::from_raw(fresh) });
                    block = existing;
                }
            }
        }
        // SAFETY: as in `get`.
        unsafe { (*block)[page as usize % BLOCK_PAGES].store(data as *mut u8, Ordering::Release) };
    }

    /// Bytes held by the directory (top level and allocated blocks).
    pub fn bookkeeping_bytes(&self) -> u64 {
        let blocks = self
            .blocks
            .iter()
            .filter(|b| !b.load(Ordering::Relaxed).is_null())
            .count();
        (self.blocks.len() * 8 + blocks * std::mem::size_of::<Block>()) as u64
    }
}

impl Drop for TileDirectory {
    fn drop(&mut self) {
        for b in self.blocks.iter() {
            let p = b.swap(std::ptr::null_mut(), Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: every non-null block pointer came from Box::into_raw in `set`, and
                // `&mut self` means no reader remains.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_map_to_their_data_and_blocks_appear_lazily() {
        let d = TileDirectory::new(1 << 20);
        let data = [1u64, 2, 3];
        assert!(d.get(5000).is_null());
        assert_eq!(d.bookkeeping_bytes(), 1024 * 8);
        d.set(5000, data.as_ptr() as *const u8);
        assert_eq!(d.get(5000), data.as_ptr() as *const u8);
        assert!(d.get(5001).is_null());
        assert!(d.get(u32::MAX).is_null());
        d.set(5000, std::ptr::null());
        assert!(d.get(5000).is_null());
        d.set(900_000, std::ptr::null()); // no block allocated for a clear
        assert_eq!(d.bookkeeping_bytes(), 1024 * 8 + 8 * 1024);
    }

    #[test]
    fn the_backend_keeps_the_directory_in_step_with_publications() {
        let b = CpuBackend::new(4096);
        let tile = TileBuffer::new();
        assert_eq!(b.publish_tile(PageId(7), &tile), Ok(HostCopy::Keep));
        assert_eq!(b.directory().get(7), tile.as_ptr());
        b.withdraw(Withdrawal::TileStaged(PageId(7))).unwrap();
        assert_eq!(
            b.directory().get(7),
            tile.as_ptr(),
            "staged data stays in place"
        );
        b.restore_tile(PageId(7)).unwrap();
        b.withdraw(Withdrawal::TileReleased(PageId(7))).unwrap();
        assert!(b.directory().get(7).is_null());
        // A tile published with file tiles missing is flagged; its address is unchanged.
        let mut partial = TileBuffer::new();
        let cut = crate::memory::SubTiles::of((128, 64), (64, 64));
        partial.set_sub_tiles(cut, 1);
        b.publish_tile(PageId(9), &partial).unwrap();
        assert_eq!(b.directory().get_tagged(9), (partial.as_ptr(), true));
        assert_eq!(b.directory().get(9), partial.as_ptr());
        assert_eq!(b.directory().get_tagged(7), (std::ptr::null(), false));
    }

    #[test]
    fn concurrent_first_stores_to_one_block_keep_both() {
        let d = TileDirectory::new(4096);
        // Aligned addresses (the low bit is the partial flag).
        let a = [0u64; 4];
        std::thread::scope(|s| {
            for i in 0..8u32 {
                let d = &d;
                let base = a.as_ptr() as usize;
                s.spawn(move || d.set(i, (base + (i as usize % 4) * 8) as *const u8));
            }
        });
        for i in 0..8u32 {
            let want = unsafe { a.as_ptr().add(i as usize % 4) } as *const u8;
            assert_eq!(d.get_tagged(i), (want, false));
        }
    }
}
