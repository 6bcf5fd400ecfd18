//! Host emulation test of the paging kernels (cuda/kernels/paging.cu), no GPU needed: the
//! kernel file is compiled by the host C++ compiler after tests/cuda-host/dtex_host_shim.h
//! into tests/cuda-host/paging_host.cpp, and each kernel runs over a grid of one-thread
//! blocks, one block after the other (so every warp is a partial warp of one lane).
//!
//! A core `PageTable` gets a random state -- a third of 200,003 pages resident with random
//! LRU ages (some never evictable) and entries, a tenth referenced -- and the program runs
//! one cycle over a copy of its arrays: the pull (requests, LRU ageing, stale pages with
//! their ages and the age histogram), `dtex_collect_stale` at a higher age, invalidations,
//! pushes and `dtex_clear_references`. Each step's result must equal the engine's host
//! implementation of the same step (`PageTable::{pull, invalidate, push_mapping,
//! clear_references}`): the same requested and stale pages (as sets: the kernels' lists
//! are in no particular order), the same ages, the same LRU, residence and reference words
//! and entries afterwards; and with lists too small, the full counts with a subset written.
//!
//! `cargo test -p demandtex-cuda --test host_paging -- --nocapture`. Without a C++ compiler
//! it fails, unless `DEMANDTEX_SKIP_HOST_CUDA=1`.

use demandtex::paging::{PageLayout, PageMapping, PageTable, PullResult, NON_EVICTABLE};
use std::collections::{BTreeMap, BTreeSet};

mod host_support;
use host_support::{compile_host_program, put, run_host_program, Rng};

/// The page space: not a multiple of 32, entries for the first 256 pages.
const NUM_PAGES: u32 = 200_003;
const ENTRIES: u32 = 256;

/// One random state and cycle (the same seed gives the same table and work).
struct Cycle {
    table: PageTable,
    launch_num: u32,
    end_page: u32,
    lru_threshold: u32,
    collect_min_age: u32,
    pushes: Vec<PageMapping>,
    invalidations: Vec<u32>,
}

/// A table in a random state, and a cycle's parameters and work.
fn cycle(seed: u32) -> Cycle {
    let mut rng = Rng(seed);
    let table = PageTable::new(PageLayout::new(64, ENTRIES, NUM_PAGES).expect("a layout"));
    for page in 0..NUM_PAGES {
        let b = rng.bits();
        if b % 3 == 0 {
            // Ages 0..=14, a sixteenth never evictable.
            let lru = if b & 0xF00 == 0 { 15 } else { (b >> 12) % 15 };
            let entry = u64::from(rng.bits()) << 32 | u64::from(rng.bits());
            table.push_mapping(PageMapping { page, lru, entry });
        }
        if rng.bits() % 10 == 0 {
            table.request_and_test(page);
        }
    }
    // Distinct pages (a cycle never pushes a page twice: on the device two pushes of one
    // page race), some outside the page space (ignored).
    let mut pushed = BTreeSet::new();
    let pushes = (0..500)
        .filter_map(|_| {
            let page = rng.bits() % (NUM_PAGES + 50);
            let (lru, entry) = (rng.bits() % 17, u64::from(rng.bits()));
            pushed
                .insert(page)
                .then_some(PageMapping { page, lru, entry })
        })
        .collect();
    let invalidations = (0..700).map(|_| rng.bits() % (NUM_PAGES + 50)).collect();
    Cycle {
        table,
        launch_num: rng.bits() % 1000,
        // Not on a word boundary: the last word's pages past it are not requested.
        end_page: NUM_PAGES - 1000 - rng.bits() % 31,
        lru_threshold: 2 + rng.bits() % 3,
        collect_min_age: 6,
        pushes,
        invalidations,
    }
}

/// The table's arrays: reference, residence and LRU words, entries.
fn arrays(t: &PageTable) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u64>) {
    let ctx = t.device_context(0, true);
    let words = NUM_PAGES.div_ceil(32) as usize;
    // SAFETY: the context addresses the table's arrays (`words` bit words each, four bits a
    // page of LRU, `ENTRIES` entries), alive while `t` is borrowed; nothing writes them.
    unsafe {
        (
            std::slice::from_raw_parts(ctx.reference_bits, words).to_vec(),
            std::slice::from_raw_parts(ctx.residence_bits, words).to_vec(),
            std::slice::from_raw_parts(ctx.lru_table, NUM_PAGES.div_ceil(8) as usize).to_vec(),
            std::slice::from_raw_parts(ctx.page_table, ENTRIES as usize).to_vec(),
        )
    }
}

/// The program's input (format: paging_host.cpp).
fn input(c: &Cycle, blocks: u32, capacities: (u32, u32)) -> Vec<u8> {
    let (reference, residence, lru, entries) = arrays(&c.table);
    let mut b = b"DTXPAG01".to_vec();
    put(
        &mut b,
        &[
            NUM_PAGES,
            ENTRIES,
            c.launch_num,
            c.end_page,
            c.lru_threshold,
            blocks,
        ],
    );
    put(&mut b, &[capacities.0, capacities.1, c.collect_min_age]);
    for words in [&reference, &residence, &lru] {
        put(&mut b, &[words.len() as u32]);
        put(&mut b, words);
    }
    put(&mut b, &[entries.len() as u32]);
    b.extend(entries.iter().flat_map(|e| e.to_le_bytes()));
    put(&mut b, &[c.pushes.len() as u32]);
    for m in &c.pushes {
        put(&mut b, &[m.page, m.lru]);
        b.extend(m.entry.to_le_bytes());
    }
    put(&mut b, &[c.invalidations.len() as u32]);
    put(&mut b, &c.invalidations);
    b
}

/// A cursor over the program's output words.
struct Words<'a>(&'a [u8], usize);

impl Words<'_> {
    fn next(&mut self) -> u32 {
        let w = u32::from_le_bytes(self.0[self.1..self.1 + 4].try_into().expect("4 bytes"));
        self.1 += 4;
        w
    }
    /// A u32 count, then that many words.
    fn list(&mut self) -> Vec<u32> {
        let n = self.next();
        (0..n).map(|_| self.next()).collect()
    }
    /// A count of stale pages, then the (page, age) pairs written.
    fn stale(&mut self) -> (u32, Vec<(u32, u8)>) {
        let count = self.next();
        let n = self.next();
        (
            count,
            (0..n).map(|_| (self.next(), self.next() as u8)).collect(),
        )
    }
}

/// What the program reported.
struct Output {
    requests: u32,
    requested: Vec<u32>,
    stale: (u32, Vec<(u32, u8)>),
    histogram: Vec<u32>,
    lru_after_pull: Vec<u32>,
    collected: (u32, Vec<(u32, u8)>),
    residence: Vec<u32>,
    reference: Vec<u32>,
    lru: Vec<u32>,
    entries: Vec<u64>,
}

fn output(bytes: &[u8]) -> Output {
    assert_eq!(&bytes[..8], b"DTXPOUT1", "paging_host's output");
    let mut w = Words(bytes, 8);
    let requests = w.next();
    let requested = w.list();
    let stale = w.stale();
    let histogram = (0..16).map(|_| w.next()).collect();
    let lru_after_pull = w.list();
    let collected = w.stale();
    let residence = w.list();
    let reference = w.list();
    let lru = w.list();
    let n = w.next();
    let entries = (0..n)
        .map(|_| u64::from(w.next()) | u64::from(w.next()) << 32)
        .collect();
    assert_eq!(w.1, bytes.len(), "paging_host's output length");
    Output {
        requests,
        requested,
        stale,
        histogram,
        lru_after_pull,
        collected,
        residence,
        reference,
        lru,
        entries,
    }
}

/// Panic, naming the first differing word, unless `got` equals `want`.
fn same<T: PartialEq + std::fmt::Debug>(case: &str, what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: {what}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{case}: {what}: word {i} is {:?} on the device, {:?} in core",
            got[i], want[i]
        );
    }
}

/// Run one cycle of `seed` on the host program over `blocks` one-thread blocks with list
/// capacities `capacities` (requested, stale), and compare every step with core's.
fn check(exe: &std::path::Path, seed: u32, blocks: u32, capacities: (u32, u32)) {
    let c = cycle(seed);
    let case = format!("seed{seed}-blocks{blocks}-cap{}", capacities.0);
    let out = output(&run_host_program(
        exe,
        &case,
        &input(&c, blocks, capacities),
    ));

    // The pull.
    let (referenced, ..) = arrays(&c.table);
    let mut pulled = PullResult::default();
    c.table
        .pull(c.end_page, c.launch_num, c.lru_threshold as u8, &mut pulled);
    let want_requested: BTreeSet<u32> = pulled.requested.iter().map(|p| p.0).collect();
    let want_stale: BTreeMap<u32, u8> = pulled.stale.iter().map(|s| (s.page.0, s.age)).collect();
    assert!(
        !want_requested.is_empty() && !want_stale.is_empty(),
        "{case}: an idle cycle"
    );
    assert_eq!(
        out.requests as usize,
        want_requested.len(),
        "{case}: request count"
    );
    let got: BTreeSet<u32> = out.requested.iter().copied().collect();
    assert_eq!(
        got.len(),
        out.requested.len(),
        "{case}: a page requested twice"
    );
    if out.requested.len() == want_requested.len() {
        assert_eq!(got, want_requested, "{case}: requested pages");
    } else {
        assert_eq!(
            out.requested.len(),
            capacities.0 as usize,
            "{case}: a full list"
        );
        assert!(got.is_subset(&want_requested), "{case}: requested pages");
    }
    assert_eq!(
        out.stale.0 as usize,
        want_stale.len(),
        "{case}: stale count"
    );
    let got: BTreeMap<u32, u8> = out.stale.1.iter().copied().collect();
    assert_eq!(got.len(), out.stale.1.len(), "{case}: a page stale twice");
    if out.stale.1.len() == want_stale.len() {
        assert_eq!(got, want_stale, "{case}: stale pages and ages");
    } else {
        assert_eq!(
            out.stale.1.len(),
            capacities.1 as usize,
            "{case}: a full list"
        );
        assert!(
            got.iter().all(|(p, a)| want_stale.get(p) == Some(a)),
            "{case}: stale pages and ages"
        );
    }
    let mut histogram = vec![0u32; 16];
    for age in want_stale.values() {
        histogram[*age as usize] += 1;
    }
    assert_eq!(out.histogram, histogram, "{case}: stale age histogram");
    let (_, _, lru, _) = arrays(&c.table);
    same(&case, "LRU after the pull", &out.lru_after_pull, &lru);

    // The stale pages again at a higher age, without ageing: resident, unreferenced in the
    // launch, evictable, old enough.
    let words = c.end_page.div_ceil(32);
    let want_collected: BTreeMap<u32, u8> = (0..words * 32)
        .filter(|&p| {
            let bit = |w: &[u32]| w[p as usize / 32] >> (p % 32) & 1 != 0;
            let age = c.table.lru_age(p);
            c.table.is_resident(p)
                && !bit(&referenced)
                && age != NON_EVICTABLE
                && u32::from(age) >= c.collect_min_age
        })
        .map(|p| (p, c.table.lru_age(p)))
        .collect();
    assert_eq!(
        out.collected.0 as usize,
        want_collected.len(),
        "{case}: collected count"
    );
    let got: BTreeMap<u32, u8> = out.collected.1.iter().copied().collect();
    if out.collected.1.len() == want_collected.len() {
        assert_eq!(got, want_collected, "{case}: collected pages and ages");
    } else {
        assert!(
            got.iter().all(|(p, a)| want_collected.get(p) == Some(a)),
            "{case}: collected pages and ages"
        );
    }

    // Invalidations, pushes, the clear: the same arrays after.
    for &page in &c.invalidations {
        if page < NUM_PAGES {
            c.table.invalidate(page);
        }
    }
    for m in &c.pushes {
        if m.page < NUM_PAGES {
            c.table.push_mapping(*m);
        }
    }
    c.table.clear_references(c.end_page);
    let (reference, residence, lru, entries) = arrays(&c.table);
    assert_eq!(
        out.residence, residence,
        "{case}: residence after the cycle"
    );
    assert_eq!(
        out.reference, reference,
        "{case}: reference bits after the cycle"
    );
    assert_eq!(out.lru, lru, "{case}: LRU after the cycle");
    assert_eq!(out.entries, entries, "{case}: entries after the cycle");
    println!(
        "host_paging: {case}: {} requested, {} stale, {} collected at age {}: equal",
        want_requested.len(),
        want_stale.len(),
        want_collected.len(),
        c.collect_min_age
    );
}

#[test]
fn paging_kernels_on_the_host_do_what_the_host_page_table_does() {
    let Some(exe) = compile_host_program("paging_host") else {
        return;
    };
    // One block (one thread reads every word), several (words shared out), lists that hold
    // everything, and lists too small.
    check(&exe, 0x2545_F491, 1, (NUM_PAGES, NUM_PAGES));
    check(&exe, 0x9E37_79B9, 7, (NUM_PAGES, NUM_PAGES));
    check(&exe, 0x1234_5679, 5, (100, 64));
}
