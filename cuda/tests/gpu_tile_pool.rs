//! GPU test of the device tile pool: arenas from `cuMemCreate` appear on demand, stop at the
//! byte cap, and are released when empty. Skips (printing `skipped: ...`) without a device
//! with virtual memory management.

mod gpu_support;

use demandtex::{Error, TILE_BYTES};
use demandtex_cuda::tile_pool::CudaTilePool;

#[test]
fn the_pool_grows_by_arenas_up_to_its_cap_and_shrinks_when_they_empty() {
    let Some(g) = gpu_support::sparse_gpu("tile pool grow/shrink") else {
        return;
    };
    // Arenas of the granularity (asking for one tile rounds up), at most three.
    let probe = CudaTilePool::new(g.ctx(), 1, u64::MAX).unwrap();
    let arena = probe.accounting().arena_bytes();
    println!("allocation granularity: {arena} bytes");
    assert_eq!(arena % TILE_BYTES as u64, 0);
    drop(probe);
    let mut pool = CudaTilePool::new(g.ctx(), 1, 3 * arena).unwrap();
    let per_arena = pool.accounting().tiles_per_arena();
    let blocks: Vec<_> = (0..3 * per_arena)
        .map(|_| pool.allocate(1).unwrap())
        .collect();
    assert_eq!(pool.accounting().arena_count(), 3);
    assert_eq!(pool.accounting().capacity_bytes(), 3 * arena);
    match pool.allocate(1) {
        Err(Error::BudgetTooSmall { budget_bytes, .. }) => assert_eq!(budget_bytes, 3 * arena),
        other => panic!("a fourth arena past the cap: {other:?}"),
    }
    // Distinct memory for blocks of different arenas.
    let h0 = pool.memory(&blocks[0]).unwrap().handle;
    let h2 = pool.memory(&blocks[blocks.len() - 1]).unwrap().handle;
    assert_ne!(h0, h2);
    // Empty the middle arena: shrink releases exactly it, and it can come back.
    for b in blocks.iter().filter(|b| b.arena == 1) {
        pool.free(*b).unwrap();
    }
    assert_eq!(pool.shrink().unwrap(), 1);
    assert_eq!(pool.accounting().arena_count(), 2);
    let again = pool.allocate(per_arena).unwrap();
    assert_eq!((again.arena, again.first_tile), (1, 0));
    assert!(pool.memory(&again).is_ok());
    for b in blocks.iter().filter(|b| b.arena != 1) {
        pool.free(*b).unwrap();
    }
    pool.free(again).unwrap();
    assert_eq!(pool.shrink().unwrap(), 3);
    assert_eq!(pool.accounting().capacity_bytes(), 0);
}
