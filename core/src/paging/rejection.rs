//! Probabilistic request rejection (Disney's GPU Ptex streaming, eq. 1): a lookup that
//! misses a page nobody has requested yet in this launch drops the request with
//! probability `RP`, so that a launch's requests are spread over the whole frame instead of
//! being spent on the pixels that happened to run first.
//!
//! `RP = 1 − unique / total` of the previous launch: `unique` is the distinct pages it
//! requested (the pull's list), `total` the misses whose request stood (not rejected). A
//! page missed by `k` lookups is then requested with probability about `1 − RP^k`: the pages
//! many pixels need are almost always requested, the rest are sampled evenly across the
//! image. Counting only the requests that stood keeps `RP` stable from launch to launch (it
//! does not ratchet towards 1 as rejection thins the unique list).
//!
//! The coin is a hash of (request key, launch number, page): deterministic, so tests and
//! images reproduce. The key is the caller's pixel or sample id (CPU:
//! [`crate::SampleOptions::request_key`]; CUDA: the thread's global index). A launch holds
//! `RP` as a 32-bit threshold, [`DeviceContext::reject_threshold`]: a request is rejected
//! when `request_hash(key, launch, page) < threshold`; 0 disables rejection.
//!
//! Only tile and mip-tail requests (`request_and_test`) are rejected; sampler, base-colour
//! and user-resource pages (`map_or_request`) are always requested: they are few and
//! everything else waits on them.
//!
//! The gate also counts each page's standing misses ([`RequestCounts`]): in interactive
//! mode the fill queue serves, within a level, the pages most lookups missed first. An
//! interactive launch goes through the gate even with rejection off (threshold 0) for them.
//!
//! [`DeviceContext::reject_threshold`]: super::DeviceContext::reject_threshold

use super::request_counts::RequestCounts;
use super::sharded_counter::ShardedCounter;
use super::PageTable;
use std::sync::atomic::{AtomicU32, Ordering};

/// The largest rejection probability used, as a fraction (a launch never rejects every
/// new request, whatever the previous one saw).
pub const MAX_REJECT_PROBABILITY: f64 = 0.99;

/// The rejection coin of one request: a well-mixed 32-bit hash of the request key (pixel or
/// sample id), the launch number and the page. The CUDA header's `dtex::requestHash` is the
/// same function (pinned by the same test values).
#[inline]
pub fn request_hash(key: u32, launch_num: u32, page: u32) -> u32 {
    let mut h =
        key ^ launch_num.wrapping_mul(0x9E37_79B9) ^ page.wrapping_mul(0x85EB_CA6B).rotate_left(13);
    // murmur3's finaliser
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^= h >> 16;
    h
}

/// The threshold for `RP = 1 − unique / total` (eq. 1), capped at
/// [`MAX_REJECT_PROBABILITY`]; 0 (no rejection) when the previous launch missed nothing.
pub fn reject_threshold(unique: u64, total: u64) -> u32 {
    if total == 0 || unique >= total {
        return 0;
    }
    let rp = (1.0 - unique as f64 / total as f64).min(MAX_REJECT_PROBABILITY);
    (rp * 4_294_967_296.0) as u32
}

/// The probability a threshold stands for.
pub fn reject_probability(threshold: u32) -> f64 {
    threshold as f64 / 4_294_967_296.0
}

/// The engine's rejection state: this launch's count of misses whose request stood (the
/// `total` of eq. 1), the threshold for the next launch, and the requests rejected so far.
/// Every missing lookup bumps one of the two counts, so they are sharded per thread.
#[derive(Debug, Default)]
pub struct RequestGate {
    standing: ShardedCounter,
    rejected: ShardedCounter,
    threshold: AtomicU32,
    /// Standing misses per page (the interactive fill queue's priority).
    counts: RequestCounts,
}

impl RequestGate {
    /// No rejection yet, nothing counted.
    pub fn new() -> RequestGate {
        RequestGate::default()
    }

    /// Record a use of `page` for the lookup with request key `key` in launch `launch_num`,
    /// whose threshold is `threshold`, and say whether the page is resident: as
    /// [`PageTable::request_and_test`], except that a miss of a page not yet requested in
    /// this launch is dropped when its coin falls under the threshold (and counted).
    #[inline]
    pub fn request_and_test(
        &self,
        pages: &PageTable,
        page: u32,
        key: u32,
        launch_num: u32,
        threshold: u32,
    ) -> bool {
        if pages.is_resident(page) {
            return pages.request_and_test(page);
        }
        if page >= pages.layout().num_pages {
            return false;
        }
        if threshold != 0
            && !pages.is_referenced(page)
            && request_hash(key, launch_num, page) < threshold
        {
            self.rejected.add(1);
            return false;
        }
        self.standing.add(1);
        self.counts.add(page);
        pages.request_and_test(page)
    }

    /// The misses of `page` whose request stood since the last pull (an upper bound: see
    /// [`RequestCounts`]); 0 for requests recorded elsewhere (a GPU's).
    pub fn request_count(&self, page: u32) -> u64 {
        self.counts.count(page)
    }

    /// Forget the per-page counts (the launch's requests were ordered).
    pub fn clear_request_counts(&self) {
        self.counts.clear();
    }

    /// A launch's requests were pulled (`unique` distinct pages): set the threshold of the
    /// launches that follow from it and start counting afresh. Returns the new threshold.
    pub fn end_launch(&self, unique: u64) -> u32 {
        let total = self.standing.take();
        let threshold = reject_threshold(unique, total);
        self.threshold.store(threshold, Ordering::Relaxed);
        threshold
    }

    /// The threshold a launch starting now uses.
    pub fn threshold(&self) -> u32 {
        self.threshold.load(Ordering::Relaxed)
    }

    /// Requests rejected since creation.
    pub fn rejected(&self) -> u64 {
        self.rejected.sum()
    }

    /// Count `n` rejections made elsewhere (a GPU's device counter).
    pub fn add_rejected(&self, n: u64) {
        self.rejected.add(n);
    }

    /// Count `n` standing misses made elsewhere (a GPU's device counter).
    pub fn add_standing(&self, n: u64) {
        self.standing.add(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paging::PageLayout;

    #[test]
    fn hash_values_are_pinned_for_the_cuda_header() {
        // dtex::requestHash in include/demandtex/device/paging.cuh must give these.
        assert_eq!(request_hash(0, 0, 0), 0);
        assert_eq!(request_hash(1, 2, 3), 0x02D0_ED25);
        assert_eq!(request_hash(12345, 7, 99999), 0x6062_805E);
    }

    #[test]
    fn hash_is_roughly_uniform() {
        let n = 100_000u32;
        let below = (0..n)
            .filter(|&k| request_hash(k, 5, 77) < u32::MAX / 4)
            .count();
        assert!((23_000..27_000).contains(&below), "{below}");
    }

    #[test]
    fn threshold_follows_eq_1() {
        assert_eq!(reject_threshold(0, 0), 0);
        assert_eq!(reject_threshold(10, 10), 0);
        assert_eq!(reject_threshold(10, 5), 0);
        assert!((reject_probability(reject_threshold(1, 4)) - 0.75).abs() < 1e-6);
        assert!(
            (reject_probability(reject_threshold(1, 1000)) - MAX_REJECT_PROBABILITY).abs() < 1e-6
        );
    }

    #[test]
    fn rejected_requests_set_no_bit_and_are_counted() {
        let pages = PageTable::new(PageLayout::new(4, 64, 4096).unwrap());
        let gate = RequestGate::new();
        let page = 1000;
        // Threshold u32::MAX: every first request is rejected.
        assert!(!gate.request_and_test(&pages, page, 7, 1, u32::MAX));
        assert!(!pages.is_referenced(page));
        assert_eq!(gate.rejected(), 1);
        // Threshold 0: requested; once requested, later misses are never rejected.
        assert!(!gate.request_and_test(&pages, page, 7, 1, 0));
        assert!(pages.is_referenced(page));
        assert!(!gate.request_and_test(&pages, page, 8, 1, u32::MAX));
        assert_eq!(gate.rejected(), 1);
        // Two standing misses, one unique page: RP = 1/2.
        let t = gate.end_launch(1);
        assert!((reject_probability(t) - 0.5).abs() < 1e-6);
        assert_eq!(gate.threshold(), t);
        assert_eq!(gate.end_launch(0), 0, "counting starts afresh");
        // Out of range: not resident, nothing counted.
        assert!(!gate.request_and_test(&pages, 5000, 0, 1, 0));
        assert_eq!(gate.end_launch(0), 0);
    }
}
