//! GPU tests of the paging kernels (kernels/paging.cu, shipped PTX) on crafted bit arrays:
//! the same random page state is given to the engine's host `PageTable` and to the device
//! buffers, the same steps run on both (pull with LRU ageing and stale pages, collect
//! stale, push mappings, invalidate, clear references), and the results and arrays must be
//! equal word for word. Skips (printing `skipped: ...`) without a device.

mod gpu_support;

use demandtex::paging::bits::words_for_bits;
use demandtex::paging::{PageLayout, PageMapping, PageTable, PullResult};
use demandtex_cuda::device_context::{DeviceContextBuffers, ListCapacities, PageWords};
use demandtex_cuda::kernels::PagingKernels;

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

/// The host table's arrays, read through its (host) device context.
fn host_words(t: &PageTable) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u64>) {
    let l = *t.layout();
    let ctx = t.device_context(0, false);
    let bits = words_for_bits(l.num_pages as u64);
    let lru = words_for_bits(l.num_pages as u64 * 4);
    // SAFETY: the context addresses the table's own arrays of exactly these lengths, and
    // nothing writes them while they are read (this thread owns the table).
    unsafe {
        (
            std::slice::from_raw_parts(ctx.reference_bits, bits).to_vec(),
            std::slice::from_raw_parts(ctx.residence_bits, bits).to_vec(),
            std::slice::from_raw_parts(ctx.lru_table, lru).to_vec(),
            std::slice::from_raw_parts(ctx.page_table, l.page_table_entries as usize).to_vec(),
        )
    }
}

/// Copy the host table's state into the device buffers.
fn upload(t: &PageTable, d: &mut DeviceContextBuffers) {
    let (reference, residence, lru, entries) = host_words(t);
    d.upload_words(PageWords::Reference, 0, &reference).unwrap();
    d.upload_words(PageWords::Residence, 0, &residence).unwrap();
    d.upload_words(PageWords::Lru, 0, &lru).unwrap();
    d.upload_page_table(0, &entries).unwrap();
}

/// Both sides hold the same arrays.
fn assert_same_state(t: &PageTable, d: &DeviceContextBuffers, when: &str) {
    let (reference, residence, lru, entries) = host_words(t);
    assert!(
        d.download_words(PageWords::Reference).unwrap() == reference,
        "{when}: reference bits differ"
    );
    assert!(
        d.download_words(PageWords::Residence).unwrap() == residence,
        "{when}: residence bits differ"
    );
    assert!(
        d.download_words(PageWords::Lru).unwrap() == lru,
        "{when}: LRU tables differ"
    );
    assert!(
        d.download_page_table().unwrap() == entries,
        "{when}: page tables differ"
    );
}

#[test]
fn the_paging_kernels_do_what_the_host_page_table_does() {
    let Some(g) = gpu_support::gpu("paging kernels vs host page table") else {
        return;
    };
    let layout = PageLayout::new(64, 256, 200_003).unwrap();
    let caps = ListCapacities {
        requested: 1 << 16,
        stale: 1 << 16,
        filled: 1000,
        invalidated: 1000,
    };
    let kernels = PagingKernels::load(g.ctx()).unwrap();
    let mut d = DeviceContextBuffers::new(&g.stream, layout, caps).unwrap();
    let host = PageTable::new(layout);
    let mut rng = Rng(7);

    // Resident pages with random ages (some never evictable), entries for entry pages.
    let mappings: Vec<PageMapping> = (0..30_000)
        .map(|_| PageMapping {
            page: rng.below(layout.num_pages),
            lru: rng.below(16),
            entry: rng.next() as u64 | 1 << 40,
        })
        .collect();
    let mut last_per_page = std::collections::HashMap::new();
    for m in &mappings {
        last_per_page.insert(m.page, *m);
    }
    // One mapping per page (the kernel applies a batch in no particular order).
    let mappings: Vec<PageMapping> = last_per_page.into_values().collect();
    for m in &mappings {
        host.push_mapping(*m);
    }
    d.push_mappings(&kernels, &mappings).unwrap();
    assert_same_state(&host, &d, "after push_mappings");

    let end_page = layout.num_pages - 3; // not a multiple of 32
    let mut result = PullResult::default();
    for launch in 1..=20u32 {
        // A launch references random pages (resident or not).
        for _ in 0..5_000 {
            host.request_and_test(rng.below(layout.num_pages));
        }
        upload(&host, &mut d);
        let threshold = 1 + launch % 3;
        host.pull(end_page, launch, threshold as u8, &mut result);
        let device = d.pull(&kernels, launch, end_page, threshold).unwrap();
        assert_eq!(device.requested_total as usize, result.requested.len());
        assert_eq!(
            device.requested, result.requested,
            "launch {launch}: requests"
        );
        let mut host_stale = result.stale.clone();
        host_stale.sort_by_key(|s| s.page);
        assert_eq!(device.stale_total as usize, host_stale.len());
        assert_eq!(device.stale, host_stale, "launch {launch}: stale pages");
        let mut histogram = [0u32; 16];
        for s in &host_stale {
            histogram[s.age as usize] += 1;
        }
        assert_eq!(device.stale_age_counts, histogram, "launch {launch}");

        // Collecting again with a higher age lists exactly the older stale pages (it reads
        // the reference bits, so it runs before the device clears them).
        let collected = d.collect_stale(&kernels, launch, end_page, 6).unwrap();
        let older: Vec<_> = host_stale.iter().copied().filter(|s| s.age >= 6).collect();
        assert_eq!(collected.stale, older, "launch {launch}: collect_stale");
        assert!(collected.requested.is_empty());
        // The host pull cleared the reference bits it read; the device clears them in a
        // kernel of its own at the start of the next launch.
        d.clear_references(&kernels, end_page).unwrap();
        assert_same_state(&host, &d, &format!("after pull {launch}"));

        // Evict some stale pages, then start the next launch.
        let evict: Vec<u32> = host_stale.iter().step_by(3).map(|s| s.page.0).collect();
        for &p in &evict {
            host.invalidate(p);
        }
        d.invalidate(&kernels, &evict).unwrap();
        assert_same_state(&host, &d, &format!("after invalidate {launch}"));
    }
}

#[test]
fn overflowing_lists_report_the_full_counts() {
    let Some(g) = gpu_support::gpu("paging kernels list overflow") else {
        return;
    };
    let layout = PageLayout::new(8, 64, 10_000).unwrap();
    let caps = ListCapacities {
        requested: 100,
        stale: 50,
        filled: 64,
        invalidated: 64,
    };
    let kernels = PagingKernels::load(g.ctx()).unwrap();
    let mut d = DeviceContextBuffers::new(&g.stream, layout, caps).unwrap();
    let host = PageTable::new(layout);
    for p in (0..10_000).step_by(7) {
        host.request_and_test(p);
    }
    upload(&host, &mut d);
    let pull = d.pull(&kernels, 1, layout.num_pages, 1).unwrap();
    assert_eq!(pull.requested_total, (0..10_000).step_by(7).count() as u32);
    assert_eq!(pull.requested.len(), 100);
    // Whatever 100 were written are real requests.
    assert!(pull.requested.iter().all(|p| p.0 % 7 == 0));
}
