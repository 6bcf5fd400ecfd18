//! How many lookups of a launch missed each page: the priority of the interactive fill
//! queue ("the tiles most requested first"; `docs/INTERACTIVE.md`).
//!
//! A page's count is kept in a bucket chosen by a hash of the page, so the table has a
//! fixed size whatever the page space: pages that share a bucket add up (a count is an
//! upper bound, exact while the launch's missing pages are few beside [`BUCKETS`]). Each
//! sampling thread adds to a shard of its own (as [`super::sharded_counter`]), so that
//! threads shading neighbouring pixels, which miss the same pages, do not bounce one cache
//! line; a count is the sum over the shards. Counts are relaxed: an add that races with
//! [`RequestCounts::clear`] lands in this launch's counts or the next one's.

use super::sharded_counter::shard_index;
use std::sync::atomic::{AtomicU32, Ordering};

/// Buckets per shard (a power of two).
pub const BUCKETS: usize = 4096;

/// Shards: as many as threads that usually sample at once, so that two threads rarely
/// share one (a thread's shard is its [`shard_index`] modulo this).
const SHARDS: usize = 8;

/// The bucket of `page` (a multiplicative hash: neighbouring pages land far apart).
#[inline]
fn bucket(page: u32) -> usize {
    (page.wrapping_mul(0x9E37_79B1) >> (32 - BUCKETS.trailing_zeros())) as usize
}

/// Per-page miss counts of one launch (see the module docs). 128 KiB.
pub struct RequestCounts {
    shards: Box<[AtomicU32]>,
}

impl std::fmt::Debug for RequestCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestCounts").finish_non_exhaustive()
    }
}

impl Default for RequestCounts {
    fn default() -> Self {
        RequestCounts::new()
    }
}

impl RequestCounts {
    /// Every count zero.
    pub fn new() -> RequestCounts {
        RequestCounts {
            shards: (0..SHARDS * BUCKETS).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Count one miss of `page` (on the calling thread's shard; saturating).
    #[inline]
    pub fn add(&self, page: u32) {
        let slot = &self.shards[(shard_index() % SHARDS) * BUCKETS + bucket(page)];
        // Only the owning thread usually adds here: a load and a store would lose adds from
        // a second thread on the shard; fetch_add does not, and is uncontended.
        if slot.load(Ordering::Relaxed) != u32::MAX {
            slot.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The misses counted for `page` (and the pages sharing its bucket) since the last
    /// [`clear`](Self::clear).
    pub fn count(&self, page: u32) -> u64 {
        let b = bucket(page);
        (0..SHARDS)
            .map(|s| u64::from(self.shards[s * BUCKETS + b].load(Ordering::Relaxed)))
            .sum()
    }

    /// Zero every count (a launch's requests were pulled).
    pub fn clear(&self) {
        for slot in self.shards.iter() {
            slot.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_adds_from_many_threads_per_page() {
        let counts = Arc::new(RequestCounts::new());
        let threads: Vec<_> = (0..2 * SHARDS as u32 + 1)
            .map(|t| {
                let c = counts.clone();
                std::thread::spawn(move || {
                    for page in 0..100u32 {
                        for _ in 0..=(page % 7) {
                            c.add(1_000_000 + page * 13 + t % 2);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let threads_on = |parity: u32| {
            (0..2 * SHARDS as u32 + 1)
                .filter(|t| t % 2 == parity)
                .count()
        };
        for page in 0..100u32 {
            for parity in 0..2 {
                let p = 1_000_000 + page * 13 + parity;
                let want = (page % 7 + 1) as u64 * threads_on(parity) as u64;
                // A bucket may hold other pages too: a count is never below the page's.
                assert!(counts.count(p) >= want, "page {p}");
            }
        }
        counts.clear();
        assert_eq!(counts.count(1_000_000), 0);
    }

    #[test]
    fn distinct_pages_of_a_launch_rarely_share_a_bucket() {
        // A launch's requests are runs of neighbouring pages (a texture's tiles).
        let mut used = vec![0u32; BUCKETS];
        for page in (5_000..5_512).chain(900_000..900_512) {
            used[bucket(page)] += 1;
        }
        assert!(used.iter().all(|&n| n <= 2), "{:?}", used.iter().max());
    }

    #[test]
    fn a_count_saturates_instead_of_wrapping() {
        let counts = RequestCounts::new();
        let me = shard_index() % SHARDS;
        counts.shards[me * BUCKETS + bucket(3)].store(u32::MAX - 1, Ordering::Relaxed);
        counts.add(3);
        counts.add(3);
        assert_eq!(counts.count(3), u64::from(u32::MAX));
    }
}
