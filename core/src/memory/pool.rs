//! `TilePool`: texture memory within a byte budget. Tiles come as [`TileBuffer`]s of a tile
//! size (64 KiB, or smaller for textures whose pages are their file's tiles), spare ones
//! kept per size; mip tails as byte reservations. `allocated_bytes` counts every byte held
//! — tile slots (resident, staged, being filled), spare buffers kept for reuse, and mip
//! tails — and never passes the budget when memory is taken; a shrink of the budget frees
//! what it can at once.
//!
//! A slot need not keep its host buffer: a backend that holds tile data elsewhere (a GPU)
//! lets the engine drop the host copy once the data is uploaded
//! ([`drop_host_copy`](TilePool::drop_host_copy)). The slot's bytes stay allocated — the
//! budget then counts device memory — while the host bytes ([`host_bytes`](TilePool::host_bytes))
//! count only the buffers that exist.

use super::tile_buffer::TileBuffer;
use crate::ids::{is_tile_size, MIN_TILE_BYTES, TILE_BYTES};

#[cfg(test)]
const TILE: u64 = TILE_BYTES as u64;

/// Tile sizes: powers of two from `MIN_TILE_BYTES` to `TILE_BYTES`.
const SIZE_CLASSES: usize =
    (TILE_BYTES.trailing_zeros() - MIN_TILE_BYTES.trailing_zeros()) as usize + 1;

/// The free list of tiles of `bytes` (a tile size).
fn class_of(bytes: usize) -> usize {
    debug_assert!(is_tile_size(bytes));
    (bytes
        .trailing_zeros()
        .saturating_sub(MIN_TILE_BYTES.trailing_zeros()) as usize)
        .min(SIZE_CLASSES - 1)
}

/// A slot of the budget given to a fill: a spare buffer to reuse, or a new one that the
/// fill makes when it runs ([`into_buffer`](TileSlot::into_buffer)). Allocating and zeroing
/// 64 KiB is then a fill thread's work, not that of the launch that hands out the slots
/// (about 15 ms for 500 new slots, under the engine's lock).
#[derive(Debug)]
pub enum TileSlot {
    /// A buffer that exists (spare, or given back by an eviction).
    Ready(TileBuffer),
    /// A buffer of this many bytes still to be allocated; the pool already counts it.
    New(u32),
}

impl TileSlot {
    /// The slot's buffer, allocated (zeroed) now if the slot is new.
    pub fn into_buffer(self) -> TileBuffer {
        match self {
            TileSlot::Ready(buffer) => buffer,
            TileSlot::New(bytes) => TileBuffer::with_bytes(bytes as usize),
        }
    }
}

/// Budgeted texture memory.
#[derive(Debug)]
pub struct TilePool {
    budget_bytes: u64,
    allocated_bytes: u64,
    peak_bytes: u64,
    non_evictable_bytes: u64,
    /// Spare buffers by size class.
    free: [Vec<TileBuffer>; SIZE_CLASSES],
    /// Bytes of the spare buffers.
    free_bytes: u64,
    /// Bytes of the tile buffers in existence (given out, held, or spare).
    host_bytes: u64,
    peak_host_bytes: u64,
}

impl TilePool {
    /// An empty pool with a budget.
    pub fn new(budget_bytes: u64) -> Self {
        TilePool {
            budget_bytes,
            allocated_bytes: 0,
            peak_bytes: 0,
            non_evictable_bytes: 0,
            free: Default::default(),
            free_bytes: 0,
            host_bytes: 0,
            peak_host_bytes: 0,
        }
    }

    /// The budget.
    pub fn budget_bytes(&self) -> u64 {
        self.budget_bytes
    }

    /// Bytes held now.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes
    }

    /// Most bytes ever held.
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }

    /// Bytes that can never be evicted (mip tails).
    pub fn non_evictable_bytes(&self) -> u64 {
        self.non_evictable_bytes
    }

    /// Bytes over the budget (after a shrink that could not free everything yet).
    pub fn excess_bytes(&self) -> u64 {
        self.allocated_bytes.saturating_sub(self.budget_bytes)
    }

    /// Bytes of tiles obtainable without evicting anything: the budget not allocated, and
    /// the spare buffers (reused, or freed to make room for another size).
    pub fn available_bytes(&self) -> u64 {
        self.free_bytes + self.budget_bytes.saturating_sub(self.allocated_bytes)
    }

    /// A slot of `bytes` (a tile size): a spare buffer of that size, or a new slot if the
    /// budget allows (freeing spare buffers of other sizes to make room).
    pub fn take(&mut self, bytes: usize) -> Option<TileSlot> {
        if let Some(b) = self.free[class_of(bytes)].pop() {
            self.free_bytes -= b.bytes() as u64;
            return Some(TileSlot::Ready(b));
        }
        self.trim_free_list_for(bytes as u64);
        if self.allocated_bytes + bytes as u64 <= self.budget_bytes {
            self.grow(bytes as u64);
            Some(self.new_slot(bytes))
        } else {
            None
        }
    }

    /// Return a slot that was never filled: its buffer kept for reuse (or freed if over
    /// budget); a new slot's bytes go back to the budget.
    pub fn give_back_slot(&mut self, slot: TileSlot) {
        match slot {
            TileSlot::Ready(buffer) => self.give_back(buffer),
            TileSlot::New(bytes) => {
                self.host_bytes -= bytes as u64;
                self.free_slot(bytes as usize);
            }
        }
    }

    /// Return a buffer nobody can see any more: kept for reuse, or freed if over budget.
    pub fn give_back(&mut self, buffer: TileBuffer) {
        if self.allocated_bytes > self.budget_bytes {
            self.free_buffer(buffer);
        } else {
            self.free_bytes += buffer.bytes() as u64;
            self.free[class_of(buffer.bytes())].push(buffer);
        }
    }

    /// Free a buffer's memory.
    pub fn free_buffer(&mut self, buffer: TileBuffer) {
        let bytes = buffer.bytes();
        self.drop_host_copy(buffer);
        self.free_slot(bytes);
    }

    /// Drop a slot's host buffer, keeping the slot: its bytes stay allocated (the backend
    /// holds the tile's data elsewhere); give them back with [`free_slot`](Self::free_slot).
    pub fn drop_host_copy(&mut self, buffer: TileBuffer) {
        self.host_bytes -= buffer.bytes() as u64;
        drop(buffer);
    }

    /// A new host buffer of `bytes`, to be made by whoever fills it, for a slot whose bytes
    /// are already allocated (a new one, or one whose host copy was dropped): the budget is
    /// unchanged.
    pub fn new_slot(&mut self, bytes: usize) -> TileSlot {
        self.host_bytes += bytes as u64;
        self.peak_host_bytes = self.peak_host_bytes.max(self.host_bytes);
        TileSlot::New(bytes as u32)
    }

    /// Free a slot of `bytes` whose host buffer was dropped
    /// ([`drop_host_copy`](Self::drop_host_copy)).
    pub fn free_slot(&mut self, bytes: usize) {
        self.allocated_bytes -= bytes as u64;
    }

    /// Buffers kept for reuse (allocated, holding no tile).
    pub fn spare_buffers(&self) -> usize {
        self.free.iter().map(Vec::len).sum()
    }

    /// Bytes of the buffers kept for reuse.
    pub fn spare_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Bytes of the tile buffers that exist (given out, held, or spare).
    pub fn host_bytes(&self) -> u64 {
        self.host_bytes
    }

    /// Most bytes of tile buffers that existed at once.
    pub fn peak_host_bytes(&self) -> u64 {
        self.peak_host_bytes
    }

    /// Reserve non-evictable bytes (a mip tail). False if the budget does not allow it.
    pub fn reserve(&mut self, bytes: u64) -> bool {
        self.trim_free_list_for(bytes);
        if self.allocated_bytes + bytes > self.budget_bytes {
            return false;
        }
        self.grow(bytes);
        self.non_evictable_bytes += bytes;
        true
    }

    /// Release bytes taken by [`reserve`](Self::reserve).
    pub fn release(&mut self, bytes: u64) {
        self.allocated_bytes -= bytes;
        self.non_evictable_bytes -= bytes;
    }

    /// Set the budget. Free buffers beyond it are dropped at once.
    pub fn set_budget(&mut self, bytes: u64) {
        self.budget_bytes = bytes;
        self.trim_free_list_for(0);
    }

    /// Drop free buffers (largest first) until `extra` more bytes fit, or none is left.
    fn trim_free_list_for(&mut self, extra: u64) {
        while self.allocated_bytes + extra > self.budget_bytes {
            let Some(b) = self.free.iter_mut().rev().find_map(Vec::pop) else {
                break;
            };
            self.free_bytes -= b.bytes() as u64;
            self.free_buffer(b);
        }
    }

    fn grow(&mut self, bytes: u64) {
        self.allocated_bytes += bytes;
        self.peak_bytes = self.peak_bytes.max(self.allocated_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_allocates_past_the_budget() {
        let mut p = TilePool::new(3 * TILE + 100);
        let a = p.take(TILE_BYTES).unwrap().into_buffer();
        let b = p.take(TILE_BYTES).unwrap().into_buffer();
        let c = p.take(TILE_BYTES).unwrap().into_buffer();
        assert!(p.take(TILE_BYTES).is_none());
        assert_eq!(p.allocated_bytes(), 3 * TILE);
        assert!(!p.reserve(200));
        assert!(p.reserve(100));
        p.give_back(a);
        assert_eq!(p.available_bytes(), TILE);
        assert!(p.take(TILE_BYTES).is_some());
        assert_eq!(p.peak_bytes(), 3 * TILE + 100);
        drop((b, c));
    }

    #[test]
    fn shrinking_drops_free_buffers_and_reserve_reclaims_them() {
        let mut p = TilePool::new(4 * TILE);
        let bufs: Vec<_> = (0..4)
            .map(|_| p.take(TILE_BYTES).unwrap().into_buffer())
            .collect();
        for b in bufs {
            p.give_back(b);
        }
        assert_eq!(p.allocated_bytes(), 4 * TILE);
        assert!(p.reserve(TILE), "a free buffer makes room");
        assert_eq!(p.allocated_bytes(), 4 * TILE);
        p.set_budget(2 * TILE);
        assert_eq!(p.allocated_bytes(), 2 * TILE);
        assert_eq!(p.non_evictable_bytes(), TILE);
        p.release(TILE);
        assert_eq!(p.allocated_bytes(), TILE);
    }

    #[test]
    fn a_slot_without_its_host_copy_stays_in_the_budget() {
        let mut p = TilePool::new(2 * TILE);
        let a = p.take(TILE_BYTES).unwrap().into_buffer();
        let b = p.take(TILE_BYTES).unwrap().into_buffer();
        assert_eq!(p.host_bytes(), 2 * TILE);
        p.drop_host_copy(a);
        assert_eq!(p.host_bytes(), TILE);
        assert_eq!(p.allocated_bytes(), 2 * TILE, "the slot is still held");
        assert!(p.take(TILE_BYTES).is_none());
        p.free_slot(TILE_BYTES);
        assert_eq!(p.allocated_bytes(), TILE);
        let c = p.take(TILE_BYTES).unwrap().into_buffer();
        assert_eq!(p.peak_host_bytes(), 2 * TILE);
        p.free_buffer(b);
        p.free_buffer(c);
        assert_eq!((p.allocated_bytes(), p.host_bytes()), (0, 0));
    }

    #[test]
    fn a_new_slot_is_counted_when_taken_and_given_back_whole_if_never_filled() {
        let mut p = TilePool::new(2 * TILE);
        let a = p.take(TILE_BYTES).unwrap();
        assert!(
            matches!(a, TileSlot::New(_)),
            "no buffer is made by the pool"
        );
        assert_eq!((p.allocated_bytes(), p.host_bytes()), (TILE, TILE));
        p.give_back_slot(a);
        assert_eq!((p.allocated_bytes(), p.host_bytes()), (0, 0));
        // A spare buffer is handed out as it is.
        let b = p.take(TILE_BYTES).unwrap().into_buffer();
        p.give_back(b);
        let c = p.take(TILE_BYTES).unwrap();
        assert!(matches!(c, TileSlot::Ready(_)));
        p.give_back_slot(c);
        assert_eq!(
            (p.allocated_bytes(), p.host_bytes(), p.spare_buffers()),
            (TILE, TILE, 1)
        );
    }

    #[test]
    fn tiles_of_several_sizes_share_one_budget() {
        let small = TILE_BYTES / 4;
        let mut p = TilePool::new(2 * TILE);
        let a = p.take(small).unwrap().into_buffer();
        let b = p.take(TILE_BYTES).unwrap().into_buffer();
        assert_eq!((a.bytes(), b.bytes()), (small, TILE_BYTES));
        assert_eq!(p.allocated_bytes(), TILE + TILE / 4);
        assert_eq!(p.available_bytes(), 3 * TILE / 4);
        assert!(
            p.take(TILE_BYTES).is_none(),
            "three quarters of a tile left"
        );
        let c = p.take(TILE_BYTES / 2).unwrap();
        p.give_back(b);
        assert_eq!(p.available_bytes(), TILE + TILE / 4);
        let d = p.take(small).unwrap();
        assert!(
            matches!(d, TileSlot::New(_)),
            "room without freeing the spare"
        );
        assert_eq!(p.spare_buffers(), 1);
        // The spare, of another size, is freed to make room.
        let e = p.take(TILE_BYTES / 2).unwrap();
        assert!(matches!(e, TileSlot::New(_)));
        assert_eq!((p.spare_buffers(), p.allocated_bytes()), (0, 3 * TILE / 2));
        // One of the size asked for is reused.
        p.give_back(a);
        assert!(matches!(p.take(small).unwrap(), TileSlot::Ready(ref x) if x.bytes() == small));
        for slot in [c, d, e] {
            p.give_back_slot(slot);
        }
        assert_eq!(p.host_bytes(), TILE / 4, "the buffer taken above");
        assert_eq!(p.peak_host_bytes(), 2 * TILE);
    }
}
