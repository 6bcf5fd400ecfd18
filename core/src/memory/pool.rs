//! `TilePool`: texture memory within a byte budget. Tiles come as [`TileBuffer`]s; mip
//! tails as byte reservations. `allocated_bytes` counts every byte held — tile slots
//! (resident, staged, being filled), spare buffers kept for reuse, and mip tails — and
//! never passes the budget when memory is taken; a shrink of the budget frees what it can
//! at once.
//!
//! A slot need not keep its host buffer: a backend that holds tile data elsewhere (a GPU)
//! lets the engine drop the host copy once the data is uploaded
//! ([`drop_host_copy`](TilePool::drop_host_copy)). The slot's bytes stay allocated — the
//! budget then counts device memory — while the host bytes ([`host_bytes`](TilePool::host_bytes))
//! count only the buffers that exist.

use super::tile_buffer::TileBuffer;
use crate::ids::TILE_BYTES;

const TILE: u64 = TILE_BYTES as u64;

/// A slot of the budget given to a fill: a spare buffer to reuse, or a new one that the
/// fill makes when it runs ([`into_buffer`](TileSlot::into_buffer)). Allocating and zeroing
/// 64 KiB is then a fill thread's work, not that of the launch that hands out the slots
/// (about 15 ms for 500 new slots, under the engine's lock).
#[derive(Debug)]
pub enum TileSlot {
    /// A buffer that exists (spare, or given back by an eviction).
    Ready(TileBuffer),
    /// A buffer still to be allocated; the pool already counts it.
    New,
}

impl TileSlot {
    /// The slot's buffer, allocated (zeroed) now if the slot is new.
    pub fn into_buffer(self) -> TileBuffer {
        match self {
            TileSlot::Ready(buffer) => buffer,
            TileSlot::New => TileBuffer::new(),
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
    free: Vec<TileBuffer>,
    /// Tile buffers in existence (given out, held, or spare).
    host_buffers: u64,
    peak_host_buffers: u64,
}

impl TilePool {
    /// An empty pool with a budget.
    pub fn new(budget_bytes: u64) -> Self {
        TilePool {
            budget_bytes,
            allocated_bytes: 0,
            peak_bytes: 0,
            non_evictable_bytes: 0,
            free: Vec::new(),
            host_buffers: 0,
            peak_host_buffers: 0,
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

    /// Tiles obtainable without evicting anything.
    pub fn available_tiles(&self) -> usize {
        self.free.len() + (self.budget_bytes.saturating_sub(self.allocated_bytes) / TILE) as usize
    }

    /// A slot with a buffer from the free list, or a new slot if the budget allows.
    pub fn take(&mut self) -> Option<TileSlot> {
        if let Some(b) = self.free.pop() {
            return Some(TileSlot::Ready(b));
        }
        if self.allocated_bytes + TILE <= self.budget_bytes {
            self.grow(TILE);
            Some(self.new_slot())
        } else {
            None
        }
    }

    /// Return a slot that was never filled: its buffer kept for reuse (or freed if over
    /// budget); a new slot's bytes go back to the budget.
    pub fn give_back_slot(&mut self, slot: TileSlot) {
        match slot {
            TileSlot::Ready(buffer) => self.give_back(buffer),
            TileSlot::New => {
                self.host_buffers -= 1;
                self.free_slot();
            }
        }
    }

    /// Return a buffer nobody can see any more: kept for reuse, or freed if over budget.
    pub fn give_back(&mut self, buffer: TileBuffer) {
        if self.allocated_bytes > self.budget_bytes {
            self.free_buffer(buffer);
        } else {
            self.free.push(buffer);
        }
    }

    /// Free a buffer's memory.
    pub fn free_buffer(&mut self, buffer: TileBuffer) {
        self.drop_host_copy(buffer);
        self.free_slot();
    }

    /// Drop a slot's host buffer, keeping the slot: its bytes stay allocated (the backend
    /// holds the tile's data elsewhere); give them back with [`free_slot`](Self::free_slot).
    pub fn drop_host_copy(&mut self, buffer: TileBuffer) {
        drop(buffer);
        self.host_buffers -= 1;
    }

    /// A new host buffer, to be made by whoever fills it, for a slot whose bytes are
    /// already allocated (a new one, or one whose host copy was dropped): the budget is
    /// unchanged.
    pub fn new_slot(&mut self) -> TileSlot {
        self.host_buffers += 1;
        self.peak_host_buffers = self.peak_host_buffers.max(self.host_buffers);
        TileSlot::New
    }

    /// Free a slot whose host buffer was dropped ([`drop_host_copy`](Self::drop_host_copy)).
    pub fn free_slot(&mut self) {
        self.allocated_bytes -= TILE;
    }

    /// Buffers kept for reuse (allocated, holding no tile).
    pub fn spare_buffers(&self) -> usize {
        self.free.len()
    }

    /// Bytes of the tile buffers that exist (given out, held, or spare).
    pub fn host_bytes(&self) -> u64 {
        self.host_buffers * TILE
    }

    /// Most bytes of tile buffers that existed at once.
    pub fn peak_host_bytes(&self) -> u64 {
        self.peak_host_buffers * TILE
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

    /// Drop free buffers until `extra` more bytes fit, or the free list is empty.
    fn trim_free_list_for(&mut self, extra: u64) {
        while self.allocated_bytes + extra > self.budget_bytes {
            match self.free.pop() {
                Some(b) => self.free_buffer(b),
                None => break,
            }
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
        let a = p.take().unwrap().into_buffer();
        let b = p.take().unwrap().into_buffer();
        let c = p.take().unwrap().into_buffer();
        assert!(p.take().is_none());
        assert_eq!(p.allocated_bytes(), 3 * TILE);
        assert!(!p.reserve(200));
        assert!(p.reserve(100));
        p.give_back(a);
        assert_eq!(p.available_tiles(), 1);
        assert!(p.take().is_some());
        assert_eq!(p.peak_bytes(), 3 * TILE + 100);
        drop((b, c));
    }

    #[test]
    fn shrinking_drops_free_buffers_and_reserve_reclaims_them() {
        let mut p = TilePool::new(4 * TILE);
        let bufs: Vec<_> = (0..4).map(|_| p.take().unwrap().into_buffer()).collect();
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
        let a = p.take().unwrap().into_buffer();
        let b = p.take().unwrap().into_buffer();
        assert_eq!(p.host_bytes(), 2 * TILE);
        p.drop_host_copy(a);
        assert_eq!(p.host_bytes(), TILE);
        assert_eq!(p.allocated_bytes(), 2 * TILE, "the slot is still held");
        assert!(p.take().is_none());
        p.free_slot();
        assert_eq!(p.allocated_bytes(), TILE);
        let c = p.take().unwrap().into_buffer();
        assert_eq!(p.peak_host_bytes(), 2 * TILE);
        p.free_buffer(b);
        p.free_buffer(c);
        assert_eq!((p.allocated_bytes(), p.host_bytes()), (0, 0));
    }

    #[test]
    fn a_new_slot_is_counted_when_taken_and_given_back_whole_if_never_filled() {
        let mut p = TilePool::new(2 * TILE);
        let a = p.take().unwrap();
        assert!(matches!(a, TileSlot::New), "no buffer is made by the pool");
        assert_eq!((p.allocated_bytes(), p.host_bytes()), (TILE, TILE));
        p.give_back_slot(a);
        assert_eq!((p.allocated_bytes(), p.host_bytes()), (0, 0));
        // A spare buffer is handed out as it is.
        let b = p.take().unwrap().into_buffer();
        p.give_back(b);
        let c = p.take().unwrap();
        assert!(matches!(c, TileSlot::Ready(_)));
        p.give_back_slot(c);
        assert_eq!(
            (p.allocated_bytes(), p.host_bytes(), p.spare_buffers()),
            (TILE, TILE, 1)
        );
    }
}
