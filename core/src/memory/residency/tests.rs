use super::*;
use crate::memory::epoch::Quiescence;
use crate::paging::{PageLayout, PageMapping, PageTable, StalePage};
use proptest::prelude::*;

fn table() -> PageTable {
    PageTable::new(PageLayout::new(8, 64, 1 << 16).unwrap())
}

/// Fill `page` and publish it (setting its residence bit, as the engine does).
fn fill_and_publish(r: &mut Residency, pages: &PageTable, epochs: &Epochs, page: u32, keep: bool) {
    let b = r
        .allocate(epochs, TILE_BYTES)
        .map(TileSlot::into_buffer)
        .expect("a slot");
    r.filled(PageId(page), b);
    assert!(r.publishing(PageId(page)).is_some());
    assert!(r.published(PageId(page), keep));
    pages.push_mapping(PageMapping {
        page,
        lru: 0,
        entry: 0,
    });
}

fn assert_accounted(r: &Residency) {
    assert_eq!(
        r.allocated_bytes(),
        r.slot_bytes() + r.pool.spare_bytes() + r.non_evictable_bytes(),
        "{r:?}"
    );
}

#[test]
fn a_tile_goes_through_publish_stage_restore() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(4 * TILE);
    fill_and_publish(&mut r, &pages, &epochs, 100, true);
    assert!(r.is_resident(PageId(100)));
    assert_eq!(r.stage(&pages, &epochs, &[PageId(100), PageId(101)]), 1);
    assert!(!pages.is_resident(100), "staging clears the residence bit");
    assert!(r.is_staged(PageId(100)));
    assert!(r.restore(PageId(100)));
    let p = r.publishing(PageId(100)).unwrap();
    assert!(
        p.restored && p.data.is_some(),
        "the host still has the data"
    );
    assert!(r.published(PageId(100), true));
    assert!(!r.restore(PageId(100)), "not staged any more");
    let c = r.counts();
    assert_eq!((c.resident, c.staged, c.second_chance_restores), (1, 0, 1));
    assert_eq!(r.take_events(), vec![TileEvent::Staged(PageId(100))]);
    assert_accounted(&r);
}

#[test]
fn staged_slots_are_reused_only_when_no_reader_can_see_them() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(2 * TILE);
    fill_and_publish(&mut r, &pages, &epochs, 100, true);
    fill_and_publish(&mut r, &pages, &epochs, 101, true);
    assert!(
        r.allocate(&epochs, TILE_BYTES)
            .map(TileSlot::into_buffer)
            .is_none(),
        "the budget is full"
    );
    let launch = epochs.pin();
    r.stage(&pages, &epochs, &[PageId(101), PageId(100)]);
    r.take_events();
    assert!(
        r.allocate(&epochs, TILE_BYTES)
            .map(TileSlot::into_buffer)
            .is_none(),
        "the launch may still see them"
    );
    assert_eq!(r.staged_quiescence(&epochs), Some(Quiescence::LaunchPinned));
    epochs.unpin(launch);
    let b = r
        .allocate(&epochs, TILE_BYTES)
        .map(TileSlot::into_buffer)
        .expect("the oldest staged tile");
    assert_eq!(r.take_events(), vec![TileEvent::Released(PageId(101))]);
    assert!(!r.restore(PageId(101)), "evicted: no second chance");
    assert!(r.restore(PageId(100)));
    assert_eq!(r.counts().evictions, 1);
    assert_eq!(r.allocated_bytes(), 2 * TILE, "never past the budget");
    r.cancel(b);
    assert_accounted(&r);
}

#[test]
fn a_backend_holding_the_data_leaves_only_fills_on_the_host() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(8 * TILE);
    for page in 100..108 {
        fill_and_publish(&mut r, &pages, &epochs, page, false);
    }
    assert_eq!(r.host_bytes(), 0, "every host copy was freed");
    assert_eq!(
        r.allocated_bytes(),
        8 * TILE,
        "the slots stay in the budget"
    );
    assert_eq!(r.peak_host_bytes(), TILE, "one fill at a time");
    r.stage(&pages, &epochs, &[PageId(100)]);
    assert!(r.restore(PageId(100)));
    assert!(r.publishing(PageId(100)).unwrap().data.is_none());
    assert!(r.published(PageId(100), false));
    r.stage(&pages, &epochs, &[PageId(101)]);
    let b = r
        .allocate(&epochs, TILE_BYTES)
        .map(TileSlot::into_buffer)
        .expect("the staged slot, with a new host buffer");
    assert_eq!(r.allocated_bytes(), 8 * TILE);
    assert_eq!(r.host_bytes(), TILE);
    r.filled(PageId(200), b);
    assert!(r.published(PageId(200), false));
    assert_eq!(r.host_bytes(), 0);
    assert_accounted(&r);
}

#[test]
fn retired_tiles_and_contents_are_freed_once_unseen() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(8 * TILE);
    assert!(r.reserve_tail(1000));
    assert_eq!(
        (r.reserved_tail_bytes(), r.published_tail_bytes()),
        (1000, 0)
    );
    r.publish_tail(1000);
    assert_eq!(
        (r.reserved_tail_bytes(), r.published_tail_bytes()),
        (0, 1000)
    );
    for page in [100, 101, 102, 300] {
        fill_and_publish(&mut r, &pages, &epochs, page, true);
    }
    r.stage(&pages, &epochs, &[PageId(101)]);
    let b = r
        .allocate(&epochs, TILE_BYTES)
        .map(TileSlot::into_buffer)
        .unwrap();
    r.filled(PageId(102 + 1), b); // publishing, never published
    r.take_events();
    let launch = epochs.pin();
    assert_eq!(r.retire_range(&pages, &epochs, 100..200), 4);
    let stamp = epochs.retire_stamp();
    r.retire_contents(stamp, None, None, 1000);
    assert_eq!(
        (r.retired_tail_bytes(), r.published_tail_bytes()),
        (1000, 0)
    );
    assert!(!pages.is_resident(100) && pages.is_resident(300));
    let mut released: Vec<_> = r.take_events();
    released.sort_by_key(|e| match e {
        TileEvent::Released(p) | TileEvent::Staged(p) => p.0,
    });
    assert_eq!(
        released,
        [100, 101, 102, 103].map(|p| TileEvent::Released(PageId(p)))
    );
    r.reclaim_retired(&epochs);
    assert_eq!(
        r.allocated_bytes(),
        5 * TILE + 1000,
        "a launch may see them"
    );
    epochs.unpin(launch);
    r.reclaim_retired(&epochs);
    assert_eq!(r.non_evictable_bytes(), 0);
    assert_eq!(r.counts().resident, 1);
    assert_eq!(r.pool.spare_buffers(), 4, "tile buffers kept for reuse");
    assert_accounted(&r);
}

#[test]
fn shrinking_the_budget_stages_the_oldest_tiles() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(4 * TILE);
    for page in 100..104 {
        fill_and_publish(&mut r, &pages, &epochs, page, true);
    }
    pages.clear_references(1 << 16);
    let mut pull = crate::paging::PullResult::default();
    for launch in 0..20 {
        assert!(pages.request_and_test(102) && pages.request_and_test(103));
        pages.pull(1 << 16, launch, 1, &mut pull);
    }
    r.set_budget(&pages, &epochs, 2 * TILE);
    assert_eq!(r.allocated_bytes(), 2 * TILE);
    assert!(r.is_resident(PageId(102)) && r.is_resident(PageId(103)));
    assert!(!pages.is_resident(100) && !pages.is_resident(101));
    assert_eq!(r.counts().evictions, 2);
    assert_accounted(&r);
}

#[test]
fn a_clock_sweep_spares_referenced_tiles() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(4 * TILE);
    for page in 100..104 {
        fill_and_publish(&mut r, &pages, &epochs, page, true);
    }
    pages.clear_references(1 << 16);
    assert!(pages.request_and_test(101));
    assert_eq!(r.sweep(&pages, &epochs, 1), 1);
    assert!(r.is_resident(PageId(101)), "referenced: spared");
    assert_eq!(r.counts().clock_sweeps, 1);
    assert_eq!(r.counts().staged, 1);
}

#[test]
fn slots_of_several_sizes_evict_each_other_by_bytes() {
    let (pages, epochs) = (table(), Epochs::new());
    let small = TILE_BYTES / 4;
    let mut r = Residency::new(4 * TILE);
    for page in 0..16 {
        let b = r
            .allocate(&epochs, small)
            .map(TileSlot::into_buffer)
            .unwrap();
        assert_eq!(b.bytes(), small);
        r.filled(PageId(page), b);
        assert!(r.published(PageId(page), true));
    }
    assert!(r.allocate(&epochs, small).is_none(), "the budget is full");
    // Staged small tiles make room for a full one: as many as its bytes need, oldest first.
    let victims: Vec<PageId> = (0..6).map(PageId).collect();
    assert_eq!(r.stage(&pages, &epochs, &victims), 6);
    let big = r
        .allocate(&epochs, TILE_BYTES)
        .map(TileSlot::into_buffer)
        .unwrap();
    assert_eq!(big.bytes(), TILE_BYTES);
    let c = r.counts();
    assert_eq!((c.evictions, c.staged, c.resident), (4, 2, 10));
    assert!(r.is_staged(PageId(4)) && !r.is_staged(PageId(3)));
    assert_eq!(r.allocated_bytes(), 4 * TILE);
    r.filled(PageId(100), big);
    assert!(
        r.published(PageId(100), false),
        "the backend keeps the data"
    );
    // A full slot without its host copy, evicted, makes room for a small one.
    assert_eq!(r.stage(&pages, &epochs, &[PageId(100)]), 1);
    let a = r.allocate(&epochs, small).unwrap();
    let b = r.allocate(&epochs, small).unwrap();
    assert!(
        matches!((&a, &b), (TileSlot::Ready(_), TileSlot::Ready(_))),
        "4 and 5 reused"
    );
    let c = r.allocate(&epochs, small).unwrap();
    assert!(
        matches!(c, TileSlot::New(_)),
        "100's slot freed, a small one taken"
    );
    assert_eq!(r.counts().evictions, 7);
    assert_eq!(r.allocated_bytes(), 3 * TILE + TILE / 4);
    for slot in [a, b, c] {
        r.cancel_slot(slot);
    }
    // make_room counts bytes: two full tiles' worth stages eight small ones.
    let stale: Vec<StalePage> = (6..16)
        .map(|p| StalePage {
            page: PageId(p),
            age: 1,
        })
        .collect();
    r.make_room(&pages, &epochs, 2 * TILE + r.available_bytes(), &stale, 0.0);
    assert_eq!(r.counts().staged, 8);
}

#[test]
fn make_room_keeps_a_reserve_of_staged_tiles() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(16 * TILE);
    for page in 100..116 {
        fill_and_publish(&mut r, &pages, &epochs, page, true);
    }
    let stale: Vec<StalePage> = (100..116)
        .map(|p| StalePage {
            page: PageId(p),
            age: (p % 5) as u8 + 1,
        })
        .collect();
    r.make_room(&pages, &epochs, 2 * TILE, &stale, 0.25);
    let c = r.counts();
    assert_eq!(c.staged, 2 + 4, "the need plus a quarter of the budget");
    // The oldest went first.
    assert!(r.is_staged(PageId(104)) && r.is_staged(PageId(109)));
    r.make_room(&pages, &epochs, 2 * TILE, &stale, 0.25);
    assert_eq!(r.counts().staged, 6, "enough staged already");
}

fn key(value: u8) -> ConstantKey {
    let mut v = [0u8; 16];
    v[0] = value;
    ConstantKey {
        tile_width: 128,
        tile_height: 128,
        texel_bytes: 4,
        value: v,
    }
}

/// Fill `page` with a constant tile of `value` and publish it. Whether it was shared.
fn fill_constant_and_publish(
    r: &mut Residency,
    pages: &PageTable,
    epochs: &Epochs,
    page: u32,
    value: u8,
) -> bool {
    let b = r
        .allocate(epochs, TILE_BYTES)
        .map(TileSlot::into_buffer)
        .expect("a slot");
    let shared = r.filled_constant(PageId(page), b, key(value));
    assert!(r.publishing(PageId(page)).unwrap().data.is_some());
    assert!(r.published(PageId(page), true));
    pages.push_mapping(PageMapping {
        page,
        lru: 0,
        entry: 0,
    });
    shared
}

#[test]
fn constant_tiles_share_one_slot_per_value() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(32 * TILE);
    for page in 0..10 {
        assert!(fill_constant_and_publish(
            &mut r,
            &pages,
            &epochs,
            100 + page,
            (page % 2) as u8
        ));
    }
    assert_eq!((r.shared_tiles(), r.coalesced_pages()), (2, 10));
    let spare = r.pool.spare_buffers() as u64 * TILE;
    assert_eq!(r.allocated_bytes() - spare, 2 * TILE, "one slot per value");
    let a = r.publishing(PageId(100));
    assert!(a.is_none(), "published");
    assert_eq!(r.counts().resident, 10);
    assert_eq!(r.counts().tiles_coalesced, 10);
    assert_accounted(&r);
    // Eviction leaves them alone: staging one frees nothing.
    let stale: Vec<StalePage> = (0..10)
        .map(|p| StalePage {
            page: PageId(100 + p),
            age: 3,
        })
        .collect();
    r.make_room(&pages, &epochs, 40 * TILE, &stale, 0.0);
    assert_eq!(r.sweep(&pages, &epochs, 1), 0);
    assert_eq!(r.counts().resident, 10);
    // Dropping the pages of one value (100, 102, 104 of value 0 and 101, 103 of value 1)
    // frees its slot with its last page, once unseen.
    assert_eq!(r.retire_range(&pages, &epochs, 100..105), 5);
    assert_eq!((r.shared_tiles(), r.coalesced_pages()), (2, 5));
    assert_eq!(r.retire_range(&pages, &epochs, 105..110), 5);
    assert_eq!((r.shared_tiles(), r.coalesced_pages()), (0, 0));
    r.reclaim_retired(&epochs);
    assert_eq!(
        r.allocated_bytes(),
        r.pool.spare_buffers() as u64 * TILE,
        "freed slots stay as spare buffers"
    );
    assert_accounted(&r);
    r.set_budget(&pages, &epochs, 0);
    assert_eq!(r.allocated_bytes(), 0);
}

#[test]
fn sharing_is_bounded_and_a_shrunk_budget_can_take_the_shared_slots_back() {
    let (pages, epochs) = (table(), Epochs::new());
    // Under 16 tiles, nothing is shared.
    let mut small = Residency::new(15 * TILE);
    assert!(!fill_constant_and_publish(
        &mut small, &pages, &epochs, 100, 0
    ));
    assert_eq!((small.shared_tiles(), small.allocated_bytes()), (0, TILE));
    assert_accounted(&small);
    // 32 tiles: two distinct values at most; a third keeps its own slot.
    let mut r = Residency::new(32 * TILE);
    assert!(fill_constant_and_publish(&mut r, &pages, &epochs, 200, 0));
    assert!(fill_constant_and_publish(&mut r, &pages, &epochs, 201, 1));
    assert!(!fill_constant_and_publish(&mut r, &pages, &epochs, 202, 2));
    assert!(fill_constant_and_publish(&mut r, &pages, &epochs, 203, 1));
    let held = r.allocated_bytes() - r.pool.spare_buffers() as u64 * TILE;
    assert_eq!(
        (r.shared_tiles(), r.coalesced_pages(), held),
        (2, 3, 3 * TILE)
    );
    // A budget of one tile cannot hold them: the shared pages are staged and evicted too.
    r.take_events();
    r.set_budget(&pages, &epochs, TILE);
    assert_eq!(r.allocated_bytes(), TILE);
    assert_eq!(r.shared_tiles() + r.counts().resident, 1);
    let released = r
        .take_events()
        .iter()
        .filter(|e| matches!(e, TileEvent::Released(_)))
        .count();
    let c = r.counts();
    assert_eq!(
        released as u64 + c.resident + c.staged,
        4,
        "each page released once or staged"
    );
    assert_accounted(&r);
}

#[test]
fn a_shared_slot_outlives_every_reader_of_any_of_its_pages() {
    let (pages, epochs) = (table(), Epochs::new());
    let mut r = Residency::new(32 * TILE);
    assert!(fill_constant_and_publish(&mut r, &pages, &epochs, 100, 0));
    assert!(fill_constant_and_publish(&mut r, &pages, &epochs, 101, 0));
    // Page 100 is staged first; a reader then pins and can still see page 101 (and the
    // shared buffer through it) until 101 is dropped.
    assert_eq!(r.stage(&pages, &epochs, &[PageId(100)]), 1);
    let reader = epochs.pin();
    assert_eq!(r.retire_range(&pages, &epochs, 101..102), 1);
    // Evicting 100, the slot's last page, must not free the buffer the reader may read.
    r.set_budget(&pages, &epochs, 0);
    assert!(!r.is_staged(PageId(100)), "evicted");
    assert_eq!(r.shared_tiles(), 0);
    assert_eq!(r.allocated_bytes(), TILE, "still held for the reader");
    assert_accounted(&r);
    epochs.unpin(reader);
    r.free_excess(&epochs);
    assert_eq!(r.allocated_bytes(), 0);
    assert_accounted(&r);
}

#[derive(Clone, Debug)]
enum Op {
    /// Fill a page with a tile of `TILE_BYTES >> size` bytes.
    Fill(u8, u8, bool),
    FillConstant(u8, u8, bool),
    Stage(u8),
    Restore(u8),
    Retire(u8),
    Pin,
    Unpin,
    Budget(u8),
    Reclaim,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..24, 0u8..3, any::<bool>()).prop_map(|(p, s, k)| Op::Fill(p, s, k)),
        2 => (0u8..24, 0u8..3, any::<bool>()).prop_map(|(p, v, k)| Op::FillConstant(p, v, k)),
        2 => (0u8..24).prop_map(Op::Stage),
        2 => (0u8..24).prop_map(Op::Restore),
        1 => (0u8..3).prop_map(Op::Retire),
        1 => Just(Op::Pin),
        1 => Just(Op::Unpin),
        1 => (2u8..40).prop_map(Op::Budget),
        1 => Just(Op::Reclaim),
    ]
}

proptest! {
    /// Any sequence of operations keeps the accounting exact, never takes memory past the
    /// budget, and reports every slot that leaves exactly once.
    #[test]
    fn random_operations_keep_the_invariants(ops in proptest::collection::vec(op(), 1..200)) {
        let (pages, epochs) = (table(), Epochs::new());
        // 32 tiles: constant tiles share (budgets of 16 or more); shrinks go below that.
        let mut r = Residency::new(32 * TILE);
        let mut pins = Vec::new();
        for op in ops {
            let before = r.allocated_bytes();
            let prev: std::collections::BTreeMap<u32, State> =
                r.tiles.iter().map(|(&p, t)| (p, t.state)).collect();
            match op {
                Op::Fill(p, size, keep) => {
                    let page = 100 + p as u32;
                    if prev.contains_key(&page) {
                        continue;
                    }
                    let bytes = TILE_BYTES >> size;
                    if let Some(b) = r.allocate(&epochs, bytes).map(TileSlot::into_buffer) {
                        prop_assert_eq!(b.bytes(), bytes);
                        prop_assert!(r.allocated_bytes() <= r.budget_bytes().max(before));
                        r.filled(PageId(page), b);
                        prop_assert!(r.published(PageId(page), keep));
                        pages.push_mapping(PageMapping { page, lru: 0, entry: 0 });
                    }
                }
                Op::FillConstant(p, v, keep) => {
                    let page = 100 + p as u32;
                    if prev.contains_key(&page) {
                        continue;
                    }
                    if let Some(b) = r.allocate(&epochs, TILE_BYTES).map(TileSlot::into_buffer) {
                        r.filled_constant(PageId(page), b, key(v));
                        prop_assert!(r.allocated_bytes() <= r.budget_bytes().max(before));
                        prop_assert!(r.published(PageId(page), keep));
                        pages.push_mapping(PageMapping { page, lru: 0, entry: 0 });
                    }
                }
                Op::Stage(p) => { r.stage(&pages, &epochs, &[PageId(100 + p as u32)]); }
                Op::Restore(p) => {
                    let page = PageId(100 + p as u32);
                    if r.restore(page) {
                        r.published(page, true);
                        pages.push_mapping(PageMapping { page: page.0, lru: 0, entry: 0 });
                    }
                }
                Op::Retire(k) => {
                    let start = 100 + 8 * k as u32;
                    r.retire_range(&pages, &epochs, start..start + 8);
                }
                Op::Pin => pins.push(epochs.pin()),
                Op::Unpin => { if let Some(e) = pins.pop() { epochs.unpin(e); } }
                Op::Budget(tiles) => r.set_budget(&pages, &epochs, tiles as u64 * TILE),
                Op::Reclaim => r.free_excess(&epochs),
            }
            // Exactly the pages that stopped holding a slot were released, once each; the
            // pages that went from resident to staged were reported staged.
            let events = r.take_events();
            let mut released: Vec<u32> = events.iter().filter_map(|e| match e {
                TileEvent::Released(p) => Some(p.0),
                TileEvent::Staged(_) => None,
            }).collect();
            released.sort_unstable();
            let gone: Vec<u32> = prev.keys().copied().filter(|p| !r.tiles.contains_key(p)).collect();
            prop_assert_eq!(released, gone);
            for e in &events {
                if let TileEvent::Staged(p) = e {
                    prop_assert_eq!(prev.get(&p.0), Some(&State::Resident));
                }
            }
            assert_accounted(&r);
            for (&page, tile) in &r.tiles {
                prop_assert_eq!(pages.is_resident(page), tile.state == State::Resident);
            }
            prop_assert_eq!(
                r.counts().resident + r.counts().staged + r.counts().publishing,
                r.tiles.len() as u64
            );
            let shared_pages = r.tiles.values().filter(|t| t.shared.is_some()).count() as u64;
            prop_assert_eq!(shared_pages, r.coalesced_pages());
        }
    }
}
