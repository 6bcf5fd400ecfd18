//! Model checks of the lock-free protocols with [loom](https://docs.rs/loom): every
//! interleaving and every outcome the memory model allows, of small models built from the
//! shipping types (`crate::sync` swaps their atomics and locks for loom's). Tile memory is
//! a `loom::cell::UnsafeCell`, so a read that can overlap a write is reported as a race.
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom" cargo test --release -p demandtex
//! --lib loom_models`). What each model promises is listed in `docs/RELIABILITY.md`.

use crate::memory::epoch::Quiescence;
use crate::memory::Epochs;
use crate::paging::{PageLayout, PageMapping, PageTable, PullResult};
use crate::requests::Ticket;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// The smallest page table: 1 texture, 2 entry pages, 32 pages.
fn tiny_table() -> PageTable {
    PageTable::new(PageLayout::new(1, 2, 32).expect("valid layout"))
}

/// The tile page the models use.
const PAGE: u32 = 5;
/// The entry page the models use (the texture's base colour).
const ENTRY_PAGE: u32 = 1;

/// A page table with `PAGE` resident, the epochs, and the page's texels (7).
fn resident_tile() -> (Arc<PageTable>, Arc<Epochs>, Arc<UnsafeCell<u32>>) {
    let table = Arc::new(tiny_table());
    table.push_mapping(PageMapping {
        page: PAGE,
        lru: 0,
        entry: 0,
    });
    (
        table,
        Arc::new(Epochs::new()),
        Arc::new(UnsafeCell::new(7u32)),
    )
}

/// The evicting thread: clear the residence bit, take a retire stamp, wait until no pin
/// can see the page (launch or thread), then reuse its memory.
fn evict_and_reuse(table: &PageTable, epochs: &Epochs, texels: &UnsafeCell<u32>) {
    table.invalidate(PAGE);
    let stamp = epochs.retire_stamp();
    while epochs.quiescence(stamp) != Quiescence::Quiescent {
        thread::yield_now();
    }
    // SAFETY (model): quiescent, so no reader can read the old texels any more.
    texels.with_mut(|p| unsafe { *p = 9 });
}

/// A page published by the fill thread (texels, entry, then residence bit) is seen whole
/// by a sampler that finds it resident: the texels and the entry are never read before
/// they are written.
#[test]
fn a_published_page_is_seen_whole() {
    loom::model(|| {
        let table = Arc::new(tiny_table());
        let texels = Arc::new(UnsafeCell::new(0u32));
        let sampler = {
            let (table, texels) = (table.clone(), texels.clone());
            thread::spawn(move || {
                if table.request_and_test(PAGE) {
                    // SAFETY (model): loom reports this read if it can race the write.
                    let v = texels.with(|p| unsafe { *p });
                    assert_eq!(v, 7, "a resident page shows its texels");
                }
                if let Some(entry) = table.map_or_request(ENTRY_PAGE) {
                    assert_eq!(entry, 0xBA5E, "a resident entry page shows its entry");
                }
            })
        };
        // SAFETY (model): no sampler may read before the residence bit is set.
        texels.with_mut(|p| unsafe { *p = 7 });
        table.push_mapping(PageMapping {
            page: PAGE,
            lru: 0,
            entry: 0,
        });
        table.push_mapping(PageMapping {
            page: ENTRY_PAGE,
            lru: 0,
            entry: 0xBA5E,
        });
        sampler.join().unwrap();
    });
}

/// A request made while the host pulls is never lost: this pull or the next lists it.
#[test]
fn a_request_is_seen_by_this_pull_or_the_next() {
    loom::model(|| {
        let table = Arc::new(tiny_table());
        let sampler = {
            let table = table.clone();
            thread::spawn(move || {
                assert!(!table.request_and_test(PAGE));
            })
        };
        let mut first = PullResult::default();
        table.pull(32, 0, 1, &mut first);
        sampler.join().unwrap();
        let mut second = PullResult::default();
        table.pull(32, 1, 1, &mut second);
        let seen = |r: &PullResult| r.requested.iter().filter(|p| p.0 == PAGE).count();
        assert_eq!(seen(&first) + seen(&second), 1, "listed exactly once");
    });
}

/// Blocking mode's reclamation: a lookup pins its thread's epoch, tests the residence bit
/// and reads the tile; the evicting thread clears the bit, takes a retire stamp and reuses
/// the memory only once `quiescence` says no pin can still see it. The reuse never
/// overlaps the read (the SeqCst fences of `pin_thread` and `quiescence`).
#[test]
fn memory_is_reused_only_after_every_thread_pin_that_could_see_it() {
    loom::model(|| {
        let (table, epochs, texels) = resident_tile();
        let pin = epochs.register_thread();
        let lookup = {
            let (table, epochs, texels) = (table.clone(), epochs.clone(), texels.clone());
            thread::spawn(move || {
                let _guard = epochs.pin_thread(&pin);
                if table.is_resident(PAGE) {
                    // SAFETY (model): loom reports this read if it can race the reuse.
                    let v = texels.with(|p| unsafe { *p });
                    assert_eq!(v, 7, "a resident tile is never overwritten under a lookup");
                }
            })
        };
        evict_and_reuse(&table, &epochs, &texels);
        lookup.join().unwrap();
    });
}

/// Multi-pass mode's reclamation: a launch pinned before the stamp holds the memory until
/// it unpins; a launch pinned after the stamp cannot see the page.
#[test]
fn memory_is_reused_only_after_the_launches_that_could_see_it() {
    loom::model(|| {
        let (table, epochs, texels) = resident_tile();
        let launch = {
            let (table, epochs, texels) = (table.clone(), epochs.clone(), texels.clone());
            thread::spawn(move || {
                let epoch = epochs.pin();
                if table.is_resident(PAGE) {
                    // SAFETY (model): loom reports this read if it can race the reuse.
                    let v = texels.with(|p| unsafe { *p });
                    assert_eq!(v, 7);
                }
                epochs.unpin(epoch);
            })
        };
        evict_and_reuse(&table, &epochs, &texels);
        launch.join().unwrap();
    });
}

/// Every ticket completes: whatever order the fill threads finish in, a waiter wakes
/// (loom reports a waiter that could sleep for ever as a deadlock).
#[test]
fn a_ticket_waiter_always_wakes() {
    loom::model(|| {
        let ticket = Ticket::new(2);
        let tasks: Vec<_> = (0..2).map(|_| ticket.task()).collect();
        let fills: Vec<_> = tasks
            .into_iter()
            .map(|task| thread::spawn(move || drop(task)))
            .collect();
        ticket.wait();
        assert!(ticket.is_done());
        for f in fills {
            f.join().unwrap();
        }
    });
}
