//! A small per-source cache of recently decoded file blocks, for files whose blocks do not
//! line up with cache tiles (file tiles larger than, or not dividing, our 64 KiB tiles, and
//! scan-line blocks): neighbouring cache tiles then reuse one decode instead of each
//! decoding the whole block again.
//!
//! Bounded in bytes, least recently used out first. The lock is held only to look up or
//! insert an `Arc`; decoding happens outside it (two threads missing the same block at
//! once may both decode it: harmless).

use super::file::DecodedBlock;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A block of a stored level: (level, block x, block y).
pub(crate) type BlockKey = (usize, usize, usize);

#[derive(Debug)]
struct Entry {
    key: BlockKey,
    block: Arc<DecodedBlock>,
    last_used: u64,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    bytes: usize,
    clock: u64,
}

/// Recently decoded blocks of one source, at most `budget_bytes` of samples.
#[derive(Debug)]
pub(crate) struct BlockCache {
    budget_bytes: usize,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl BlockCache {
    /// A cache of at most `budget_bytes` of decoded samples.
    pub fn new(budget_bytes: usize) -> BlockCache {
        BlockCache {
            budget_bytes,
            inner: Mutex::new(Inner::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The block, if cached.
    pub fn get(&self, key: BlockKey) -> Option<Arc<DecodedBlock>> {
        let mut inner = self.inner.lock();
        inner.clock += 1;
        let now = inner.clock;
        let found = inner.entries.iter_mut().find(|e| e.key == key).map(|e| {
            e.last_used = now;
            e.block.clone()
        });
        drop(inner);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keep `block` (unless it alone exceeds the budget), dropping the least recently used
    /// blocks beyond the budget.
    pub fn insert(&self, key: BlockKey, block: Arc<DecodedBlock>) {
        let size = block.data.len();
        if size > self.budget_bytes {
            return;
        }
        let mut evicted = Vec::new();
        let mut inner = self.inner.lock();
        if inner.entries.iter().any(|e| e.key == key) {
            return;
        }
        while inner.bytes + size > self.budget_bytes && !inner.entries.is_empty() {
            let oldest = inner
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
                .map_or(0, |(i, _)| i);
            let e = inner.entries.swap_remove(oldest);
            inner.bytes -= e.block.data.len();
            evicted.push(e);
        }
        inner.clock += 1;
        let last_used = inner.clock;
        inner.bytes += size;
        inner.entries.push(Entry {
            key,
            block,
            last_used,
        });
        drop(inner);
        // Blocks are freed outside the lock.
        drop(evicted);
    }

    /// Lookups that found their block, and lookups that did not.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}
