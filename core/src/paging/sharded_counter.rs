//! A counter that many threads add to on every lookup without sharing a cache line.
//!
//! One `AtomicU64` bumped by every sampling thread on every miss is a cache line that
//! bounces between cores: under probabilistic rejection a frame counts hundreds of
//! thousands of misses, and a contended `lock add` costs about a hundred cycles where an
//! uncontended one costs a few. Each thread adds to its own shard (one cache line each,
//! picked once per thread, round robin); readers sum the shards. A sum taken while threads
//! add is a value the counter held at some point between the first and the last shard read,
//! which is all the counters here need (they are statistics and the `total` of a rejection
//! probability).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Shards: more than the threads that usually sample at once, so that two threads rarely
/// share one.
const SHARDS: usize = 16;

/// One shard on a cache line of its own (128 bytes: adjacent-line prefetch pairs lines).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(AtomicU64);

/// A relaxed counter split over `SHARDS` cache lines (see the module docs).
#[derive(Debug, Default)]
pub struct ShardedCounter {
    shards: [Shard; SHARDS],
}

/// The shard of the calling thread: assigned round robin the first time a thread counts
/// (below `SHARDS`, 16).
pub(crate) fn shard_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    // A thread being torn down (TLS destroyed) counts on shard 0.
    SHARD.try_with(|s| *s).unwrap_or(0)
}

impl ShardedCounter {
    /// Zero.
    pub fn new() -> ShardedCounter {
        ShardedCounter::default()
    }

    /// Add `n` (on the calling thread's shard).
    #[inline]
    pub fn add(&self, n: u64) {
        self.shards[shard_index()].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The sum of every shard.
    pub fn sum(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(s.0.load(Ordering::Relaxed)))
    }

    /// The sum of every shard, leaving each at zero: an add that races with this lands in
    /// this sum or in the next, never in both and never lost.
    pub fn take(&self) -> u64 {
        self.shards.iter().fold(0u64, |sum, s| {
            sum.wrapping_add(s.0.swap(0, Ordering::Relaxed))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn adds_from_many_threads_are_all_counted() {
        let counter = Arc::new(ShardedCounter::new());
        let threads: Vec<_> = (0..2 * SHARDS + 3)
            .map(|t| {
                let c = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.add(t as u64 + 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n = 2 * SHARDS as u64 + 3;
        assert_eq!(counter.sum(), 1000 * n * (n + 1) / 2);
    }

    #[test]
    fn take_leaves_zero_and_loses_nothing_that_races_with_it() {
        let counter = Arc::new(ShardedCounter::new());
        counter.add(5);
        assert_eq!(counter.take(), 5);
        assert_eq!(counter.sum(), 0);
        let adder = {
            let c = counter.clone();
            std::thread::spawn(move || {
                for _ in 0..100_000 {
                    c.add(1);
                }
            })
        };
        let mut taken = 0;
        while !adder.is_finished() {
            taken += counter.take();
        }
        adder.join().unwrap();
        taken += counter.take();
        assert_eq!(taken, 100_000);
    }
}
