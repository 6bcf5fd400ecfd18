//! The device tile pool: physical memory that sparse-array tiles are mapped onto.
//!
//! Memory comes in arenas (`cuMemCreate` allocations of e.g. 32 MiB, a multiple of the
//! driver's allocation granularity) carved into 64 KiB tiles. A block is one tile (a
//! texture tile) or a few consecutive tiles of one arena (a mip tail). Arenas are created
//! on demand up to a byte cap and released when empty on [`shrink`](ArenaAccounting::shrink).
//!
//! [`ArenaAccounting`] is the bookkeeping alone (a free bitmap per arena), tested without a
//! GPU; with the `cuda` feature, `CudaTilePool` adds the driver calls.

use demandtex::error::{Error, Result};
use demandtex::ids::TILE_BYTES;

/// Default arena size: 32 MiB (512 tiles).
pub const DEFAULT_ARENA_BYTES: u64 = 32 << 20;

/// Consecutive tiles of one arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileBlock {
    /// The arena's index.
    pub arena: u32,
    /// First tile within the arena.
    pub first_tile: u32,
    /// Number of tiles.
    pub tiles: u32,
}

impl TileBlock {
    /// Byte offset of the block within its arena.
    pub fn offset_bytes(&self) -> u64 {
        self.first_tile as u64 * TILE_BYTES as u64
    }

    /// Bytes of the block.
    pub fn bytes(&self) -> u64 {
        self.tiles as u64 * TILE_BYTES as u64
    }
}

/// One arena's free tiles.
#[derive(Clone, Debug)]
struct Arena {
    /// Bit `i` set: tile `i` is free.
    free: Vec<u64>,
    free_tiles: u32,
}

impl Arena {
    fn new(tiles: u32) -> Arena {
        let mut free = vec![u64::MAX; (tiles as usize).div_ceil(64)];
        if tiles % 64 != 0 {
            *free.last_mut().unwrap() = (1u64 << (tiles % 64)) - 1;
        }
        Arena {
            free,
            free_tiles: tiles,
        }
    }

    fn is_free(&self, tile: u32) -> bool {
        self.free[tile as usize / 64] >> (tile % 64) & 1 == 1
    }

    fn set(&mut self, first: u32, count: u32, free: bool) {
        for t in first..first + count {
            let (w, b) = (t as usize / 64, t % 64);
            if free {
                self.free[w] |= 1 << b;
            } else {
                self.free[w] &= !(1 << b);
            }
        }
    }

    /// The first run of `count` free tiles.
    fn find_run(&self, count: u32, tiles: u32) -> Option<u32> {
        if count == 1 {
            let (w, word) = self.free.iter().enumerate().find(|(_, w)| **w != 0)?;
            return Some(w as u32 * 64 + word.trailing_zeros());
        }
        let mut run = 0;
        for t in 0..tiles {
            if self.is_free(t) {
                run += 1;
                if run == count {
                    return Some(t + 1 - count);
                }
            } else {
                run = 0;
            }
        }
        None
    }
}

/// The bookkeeping of a tile pool: which tiles of which arena are in use.
#[derive(Clone, Debug)]
pub struct ArenaAccounting {
    tiles_per_arena: u32,
    /// `None`: a released arena's slot, reused by the next [`add_arena`](Self::add_arena).
    arenas: Vec<Option<Arena>>,
    used_tiles: u64,
}

impl ArenaAccounting {
    /// No arenas yet; each arena will hold `arena_bytes` (a non-zero multiple of
    /// [`TILE_BYTES`]).
    pub fn new(arena_bytes: u64) -> Result<ArenaAccounting> {
        let tiles = arena_bytes / TILE_BYTES as u64;
        if tiles == 0 || arena_bytes % TILE_BYTES as u64 != 0 || tiles > u32::MAX as u64 {
            return Err(Error::InvalidArgument(format!(
                "a tile-pool arena of {arena_bytes} bytes (a non-zero multiple of {TILE_BYTES})"
            )));
        }
        Ok(ArenaAccounting {
            tiles_per_arena: tiles as u32,
            arenas: Vec::new(),
            used_tiles: 0,
        })
    }

    /// Tiles of one arena.
    pub fn tiles_per_arena(&self) -> u32 {
        self.tiles_per_arena
    }

    /// Bytes of one arena.
    pub fn arena_bytes(&self) -> u64 {
        self.tiles_per_arena as u64 * TILE_BYTES as u64
    }

    /// Arenas in existence.
    pub fn arena_count(&self) -> usize {
        self.arenas.iter().filter(|a| a.is_some()).count()
    }

    /// Tiles handed out.
    pub fn used_tiles(&self) -> u64 {
        self.used_tiles
    }

    /// Bytes of all arenas.
    pub fn capacity_bytes(&self) -> u64 {
        self.arena_count() as u64 * self.arena_bytes()
    }

    /// `count` consecutive tiles of an existing arena (the lowest arena with room, so the
    /// high ones tend to empty out for [`shrink`](Self::shrink)); `None` if no arena has
    /// such a run (add one, or free some). Errors if `count` is 0 or exceeds an arena.
    pub fn allocate(&mut self, count: u32) -> Result<Option<TileBlock>> {
        if count == 0 || count > self.tiles_per_arena {
            return Err(Error::InvalidArgument(format!(
                "a block of {count} tiles (an arena holds 1..={})",
                self.tiles_per_arena
            )));
        }
        let tiles = self.tiles_per_arena;
        for (index, slot) in self.arenas.iter_mut().enumerate() {
            let Some(arena) = slot else { continue };
            if arena.free_tiles < count {
                continue;
            }
            if let Some(first) = arena.find_run(count, tiles) {
                arena.set(first, count, false);
                arena.free_tiles -= count;
                self.used_tiles += count as u64;
                return Ok(Some(TileBlock {
                    arena: index as u32,
                    first_tile: first,
                    tiles: count,
                }));
            }
        }
        Ok(None)
    }

    /// Register a new, empty arena; returns its index (a released arena's index is reused).
    pub fn add_arena(&mut self) -> u32 {
        let arena = Some(Arena::new(self.tiles_per_arena));
        match self.arenas.iter().position(Option::is_none) {
            Some(i) => {
                self.arenas[i] = arena;
                i as u32
            }
            None => {
                self.arenas.push(arena);
                self.arenas.len() as u32 - 1
            }
        }
    }

    /// Return a block. Errors (and changes nothing) for a block that is not wholly in use.
    pub fn free(&mut self, block: TileBlock) -> Result<()> {
        let tiles = self.tiles_per_arena;
        let arena = self
            .arenas
            .get_mut(block.arena as usize)
            .and_then(Option::as_mut)
            .filter(|_| {
                block.tiles > 0 && block.first_tile as u64 + block.tiles as u64 <= tiles as u64
            })
            .ok_or_else(|| Error::Internal(format!("freeing {block:?}: no such arena or range")))?;
        if (block.first_tile..block.first_tile + block.tiles).any(|t| arena.is_free(t)) {
            return Err(Error::Internal(format!(
                "freeing {block:?}: part of it is already free"
            )));
        }
        arena.set(block.first_tile, block.tiles, true);
        arena.free_tiles += block.tiles;
        self.used_tiles -= block.tiles as u64;
        Ok(())
    }

    /// Forget every empty arena; returns their indices (to release their memory).
    pub fn shrink(&mut self) -> Vec<u32> {
        let tiles = self.tiles_per_arena;
        let mut released = Vec::new();
        for (i, slot) in self.arenas.iter_mut().enumerate() {
            if slot.as_ref().is_some_and(|a| a.free_tiles == tiles) {
                *slot = None;
                released.push(i as u32);
            }
        }
        while self.arenas.last().is_some_and(Option::is_none) {
            self.arenas.pop();
        }
        released
    }
}

/// `bytes` rounded up to a multiple of `granularity` (itself at least one tile and a
/// multiple of the tile size, as the drivers report: 2 MiB).
pub fn arena_bytes_for(bytes: u64, granularity: u64) -> Result<u64> {
    if granularity == 0 || granularity % TILE_BYTES as u64 != 0 {
        return Err(Error::Unsupported(format!(
            "a CUDA allocation granularity of {granularity} bytes (a multiple of {TILE_BYTES} is needed)"
        )));
    }
    Ok(bytes.max(1).div_ceil(granularity) * granularity)
}

pub use gpu::{CudaTilePool, TileMemory};

mod gpu {
    use super::{arena_bytes_for, ArenaAccounting, TileBlock};
    use crate::ops::{bind, drv};
    use cudarc::driver::sys::{self, CUmemGenericAllocationHandle as Handle};
    use cudarc::driver::CudaContext;
    use demandtex::error::{Error, Result};
    use std::marker::PhantomData;
    use std::sync::Arc;

    /// Where a block's memory is, for [`crate::mapping::MapBatch`]: the
    /// arena's handle and the byte offset in it. Borrows the pool, so the arena cannot be
    /// released while a map that uses it is being built.
    #[derive(Clone, Copy, Debug)]
    pub struct TileMemory<'pool> {
        /// The arena's `cuMemCreate` handle.
        pub handle: Handle,
        /// Byte offset of the block in the arena (a multiple of 64 KiB).
        pub offset: u64,
        /// Bytes of the block.
        pub bytes: u64,
        _pool: PhantomData<&'pool CudaTilePool>,
    }

    /// Device tile memory in `cuMemCreate` arenas (see the module comment).
    pub struct CudaTilePool {
        ctx: Arc<CudaContext>,
        ordinal: i32,
        accounting: ArenaAccounting,
        handles: Vec<Option<Handle>>,
        max_bytes: u64,
    }

    impl CudaTilePool {
        /// An empty pool on `ctx`'s device whose arenas hold about `arena_bytes` (rounded
        /// up to the driver's granularity) and which never holds more than `max_bytes`.
        pub fn new(ctx: &Arc<CudaContext>, arena_bytes: u64, max_bytes: u64) -> Result<Self> {
            let ordinal = ctx.ordinal() as i32;
            let prop = allocation_prop(ordinal);
            let mut granularity = 0usize;
            bind(ctx)?;
            // SAFETY: `prop` describes a pinned device allocation; one size is written.
            drv("cuMemGetAllocationGranularity", || unsafe {
                sys::cuMemGetAllocationGranularity(
                    &mut granularity,
                    &prop,
                    sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
                )
            })?;
            let arena = arena_bytes_for(arena_bytes, granularity as u64)?;
            Ok(CudaTilePool {
                ctx: ctx.clone(),
                ordinal,
                accounting: ArenaAccounting::new(arena)?,
                handles: Vec::new(),
                max_bytes,
            })
        }

        /// The bookkeeping (sizes, tiles in use).
        pub fn accounting(&self) -> &ArenaAccounting {
            &self.accounting
        }

        /// `tiles` consecutive tiles, creating an arena if none has room.
        ///
        /// Errors: [`Error::BudgetTooSmall`] when a new arena would pass `max_bytes`; the
        /// driver's error (out of memory) from `cuMemCreate`.
        pub fn allocate(&mut self, tiles: u32) -> Result<TileBlock> {
            if let Some(b) = self.accounting.allocate(tiles)? {
                return Ok(b);
            }
            let arena_bytes = self.accounting.arena_bytes();
            let after = self.accounting.capacity_bytes() + arena_bytes;
            if after > self.max_bytes {
                return Err(Error::BudgetTooSmall {
                    budget_bytes: self.max_bytes,
                    needed_bytes: after,
                });
            }
            let prop = allocation_prop(self.ordinal);
            let mut handle: Handle = 0;
            bind(&self.ctx)?;
            // SAFETY: `prop` is a valid pinned-device description and `arena_bytes` a
            // multiple of its granularity; the driver writes one handle.
            drv("cuMemCreate", || unsafe {
                sys::cuMemCreate(&mut handle, arena_bytes as usize, &prop, 0)
            })?;
            let index = self.accounting.add_arena() as usize;
            if self.handles.len() <= index {
                self.handles.resize(index + 1, None);
            }
            self.handles[index] = Some(handle);
            tracing::debug!(index, arena_bytes, "tile pool: new arena");
            self.accounting
                .allocate(tiles)?
                .ok_or_else(|| Error::Internal("a fresh arena has no room".into()))
        }

        /// The most bytes the pool may hold.
        pub fn max_bytes(&self) -> u64 {
            self.max_bytes
        }

        /// Change the most bytes the pool may hold. Blocks in use stay; arenas beyond the
        /// new cap are released by [`shrink`](Self::shrink) once empty.
        pub fn set_max_bytes(&mut self, bytes: u64) {
            self.max_bytes = bytes;
        }

        /// Return a block. Its tiles must be unmapped first, or at least never sampled
        /// again (the next map of the same tiles replaces the old mapping).
        pub fn free(&mut self, block: TileBlock) -> Result<()> {
            self.accounting.free(block)
        }

        /// Where `block`'s memory is.
        pub fn memory(&self, block: &TileBlock) -> Result<TileMemory<'_>> {
            let handle = self
                .handles
                .get(block.arena as usize)
                .copied()
                .flatten()
                .ok_or_else(|| Error::Internal(format!("{block:?}: no such arena")))?;
            Ok(TileMemory {
                handle,
                offset: block.offset_bytes(),
                bytes: block.bytes(),
                _pool: PhantomData,
            })
        }

        /// Release every empty arena; returns how many were released. Arenas are freed by
        /// the driver once no array tile is mapped onto them any more.
        pub fn shrink(&mut self) -> Result<usize> {
            let released = self.accounting.shrink();
            let mut first_error = None;
            for &i in &released {
                if let Some(h) = self.handles.get_mut(i as usize).and_then(Option::take) {
                    if let Err(e) = release(&self.ctx, h) {
                        first_error.get_or_insert(e);
                    }
                }
            }
            match first_error {
                Some(e) => Err(e),
                None => Ok(released.len()),
            }
        }
    }

    impl Drop for CudaTilePool {
        fn drop(&mut self) {
            for h in self.handles.iter_mut().filter_map(Option::take) {
                if let Err(e) = release(&self.ctx, h) {
                    tracing::warn!("releasing a tile-pool arena: {e}");
                }
            }
        }
    }

    impl std::fmt::Debug for CudaTilePool {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("CudaTilePool")
                .field("accounting", &self.accounting)
                .field("max_bytes", &self.max_bytes)
                .finish_non_exhaustive()
        }
    }

    /// Release one arena's handle.
    fn release(ctx: &CudaContext, handle: Handle) -> Result<()> {
        bind(ctx)?;
        // SAFETY: `handle` came from cuMemCreate and is released exactly once (it was
        // taken out of the pool's table).
        drv("cuMemRelease", || unsafe { sys::cuMemRelease(handle) })
    }

    /// A pinned, uncompressed allocation on device `ordinal`, usable as a tile pool.
    fn allocation_prop(ordinal: i32) -> sys::CUmemAllocationProp {
        // SAFETY: all-zero is a valid value of this plain C struct (no handle types, no
        // flags); the fields that matter are set below.
        let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = ordinal;
        prop.allocFlags.compressionType =
            sys::CUmemAllocationCompType::CU_MEM_ALLOCATION_COMP_NONE as u8;
        prop.allocFlags.usage = sys::CU_MEM_CREATE_USAGE_TILE_POOL as u16;
        prop
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn arenas_are_pinned_device_tile_pool_memory() {
            let p = allocation_prop(3);
            assert_eq!(
                p.type_,
                sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED
            );
            assert_eq!(
                p.location.type_,
                sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE
            );
            assert_eq!(p.location.id, 3);
            assert_eq!(p.requestedHandleTypes.0, 0, "no shareable handle");
            assert_eq!(
                p.allocFlags.usage as u32,
                sys::CU_MEM_CREATE_USAGE_TILE_POOL
            );
            assert_eq!(p.allocFlags.compressionType, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_come_from_the_lowest_arena_with_room_and_new_arenas_on_demand() {
        let mut a = ArenaAccounting::new(4 * TILE_BYTES as u64).unwrap();
        assert_eq!(a.allocate(1).unwrap(), None, "no arena yet");
        assert_eq!(a.add_arena(), 0);
        let blocks: Vec<_> = (0..4).map(|_| a.allocate(1).unwrap().unwrap()).collect();
        assert_eq!(
            blocks
                .iter()
                .map(|b| (b.arena, b.first_tile))
                .collect::<Vec<_>>(),
            vec![(0, 0), (0, 1), (0, 2), (0, 3)]
        );
        assert_eq!(a.allocate(1).unwrap(), None, "full");
        assert_eq!(a.add_arena(), 1);
        let b = a.allocate(1).unwrap().unwrap();
        assert_eq!((b.arena, b.first_tile, b.offset_bytes()), (1, 0, 0));
        assert_eq!(a.used_tiles(), 5);
        assert_eq!(a.capacity_bytes(), 8 * TILE_BYTES as u64);
        a.free(blocks[2]).unwrap();
        let again = a.allocate(1).unwrap().unwrap();
        assert_eq!((again.arena, again.first_tile), (0, 2), "reused");
        assert_eq!(again.offset_bytes(), 2 * TILE_BYTES as u64);
    }

    #[test]
    fn runs_are_contiguous_within_one_arena() {
        let mut a = ArenaAccounting::new(130 * TILE_BYTES as u64).unwrap();
        a.add_arena();
        let one = a.allocate(1).unwrap().unwrap();
        let big = a.allocate(100).unwrap().unwrap();
        assert_eq!(
            (big.first_tile, big.tiles, big.bytes()),
            (1, 100, 100 * TILE_BYTES as u64)
        );
        assert_eq!(a.allocate(29).unwrap().unwrap().first_tile, 101);
        assert_eq!(a.allocate(1).unwrap(), None, "130 of 130 used");
        a.free(one).unwrap();
        assert_eq!(
            a.allocate(2).unwrap(),
            None,
            "one free tile is not a run of two"
        );
        assert!(a.allocate(131).is_err());
        assert!(a.allocate(0).is_err());
        a.free(big).unwrap();
        let b = a.allocate(64).unwrap().unwrap();
        assert_eq!(
            b.first_tile, 0,
            "the freed tile 0 and the big block's tiles join up"
        );
    }

    #[test]
    fn double_frees_and_unknown_blocks_are_errors_that_change_nothing() {
        let mut a = ArenaAccounting::new(8 * TILE_BYTES as u64).unwrap();
        a.add_arena();
        let b = a.allocate(2).unwrap().unwrap();
        a.free(b).unwrap();
        assert!(a.free(b).is_err());
        assert!(a
            .free(TileBlock {
                arena: 7,
                first_tile: 0,
                tiles: 1
            })
            .is_err());
        assert!(a
            .free(TileBlock {
                arena: 0,
                first_tile: 7,
                tiles: 2
            })
            .is_err());
        assert_eq!(a.used_tiles(), 0);
    }

    #[test]
    fn shrink_releases_only_empty_arenas_and_their_slots_are_reused() {
        let mut a = ArenaAccounting::new(2 * TILE_BYTES as u64).unwrap();
        for _ in 0..3 {
            a.add_arena();
        }
        let blocks: Vec<_> = (0..6).map(|_| a.allocate(1).unwrap().unwrap()).collect();
        assert_eq!(a.shrink(), Vec::<u32>::new());
        for b in &blocks[0..2] {
            a.free(*b).unwrap();
        }
        for b in &blocks[4..6] {
            a.free(*b).unwrap();
        }
        assert_eq!(a.shrink(), vec![0, 2]);
        assert_eq!(a.arena_count(), 1);
        assert_eq!(a.used_tiles(), 2);
        assert_eq!(a.allocate(1).unwrap(), None, "arena 1 is full");
        assert_eq!(a.add_arena(), 0, "the released slot is reused");
        assert_eq!(a.allocate(1).unwrap().unwrap().arena, 0);
        // Blocks of released arenas are unknown now.
        assert!(a.free(blocks[5]).is_err());
    }

    #[test]
    fn arena_sizes_round_up_to_the_granularity() {
        let g = 2 << 20;
        assert_eq!(arena_bytes_for(DEFAULT_ARENA_BYTES, g).unwrap(), 32 << 20);
        assert_eq!(arena_bytes_for(1, g).unwrap(), g);
        assert_eq!(arena_bytes_for((32 << 20) + 1, g).unwrap(), 34 << 20);
        assert!(arena_bytes_for(1 << 20, 1000).is_err());
        assert!(arena_bytes_for(1 << 20, 0).is_err());
        assert!(ArenaAccounting::new(0).is_err());
        assert!(ArenaAccounting::new(TILE_BYTES as u64 + 1).is_err());
    }
}
