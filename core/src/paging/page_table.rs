//! `PageTable`: the page layer's bit arrays and 64-bit entries in host memory, with the
//! operations the GPU kernels perform on device memory: lookups (map or request), pull
//! (requests + LRU ageing + stale pages), push (mappings), invalidate.
//!
//! Bookkeeping per virtual page: 1 residence bit + 1 reference bit + 4 LRU bits = 0.75 B,
//! plus 8 B for each of the first `page_table_entries` pages only.

use super::bits::{self, zeroed_words};
use super::device_context::{DeviceContext, PageMapping, CONTEXT_FLAG_REQUEST_IF_RESIDENT};
use super::lru::{self, NON_EVICTABLE};
use super::page_layout::PageLayout;
use crate::ids::PageId;
use crate::sync::{AtomicU32, AtomicU64};
use std::sync::atomic::Ordering;

/// A stale page found by [`PageTable::pull`]: resident, not used lately, evictable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StalePage {
    /// The page.
    pub page: PageId,
    /// Its LRU age (1..=14).
    pub age: u8,
}

/// What one pull found.
#[derive(Clone, Debug, Default)]
pub struct PullResult {
    /// Pages referenced but not resident, ascending.
    pub requested: Vec<PageId>,
    /// Resident evictable pages not referenced in the launch, with age ≥ the threshold.
    pub stale: Vec<StalePage>,
}

/// The page layer's state in host memory.
pub struct PageTable {
    layout: PageLayout,
    residence: Box<[AtomicU32]>,
    reference: Box<[AtomicU32]>,
    lru: Box<[AtomicU32]>,
    entries: Box<[AtomicU64]>,
}

impl PageTable {
    /// Zeroed tables for `layout` (the OS commits only the parts that get touched).
    pub fn new(layout: PageLayout) -> Self {
        let n = layout.num_pages as u64;
        PageTable {
            layout,
            residence: zeroed_words(bits::words_for_bits(n)),
            reference: zeroed_words(bits::words_for_bits(n)),
            lru: zeroed_words(bits::words_for_bits(n * 4)),
            entries: (0..layout.page_table_entries)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// The partition of the page space.
    #[inline]
    pub fn layout(&self) -> &PageLayout {
        &self.layout
    }

    /// Bytes of bookkeeping these tables hold (bits, LRU nibbles, entries).
    pub fn bookkeeping_bytes(&self) -> u64 {
        ((self.residence.len() + self.reference.len() + self.lru.len()) * 4
            + self.entries.len() * 8) as u64
    }

    /// Record a use of `page` and say whether it is resident (CUDA: `pagingRequest` +
    /// residence test). Out-of-range pages are never resident and record nothing.
    #[inline]
    pub fn request_and_test(&self, page: u32) -> bool {
        if page >= self.layout.num_pages {
            return false;
        }
        bits::set_bit_if_clear(&self.reference, page);
        bits::test_bit(&self.residence, page)
    }

    /// Record a use of an entry page and return its entry if resident (`pagingMapOrRequest`).
    #[inline]
    pub fn map_or_request(&self, page: u32) -> Option<u64> {
        if page >= self.layout.page_table_entries {
            return None;
        }
        if self.request_and_test(page) {
            Some(self.entries[page as usize].load(Ordering::Acquire))
        } else {
            None
        }
    }

    /// Whether `page` is resident (no request recorded).
    #[inline]
    pub fn is_resident(&self, page: u32) -> bool {
        page < self.layout.num_pages && bits::test_bit(&self.residence, page)
    }

    /// Whether any page of `[first, first + count)` is resident (`count` ≥ 1). Costs
    /// about `count / 32` loads.
    pub fn any_resident(&self, first: u32, count: u32) -> bool {
        // Pages past the page space are never resident.
        let end = first.saturating_add(count).min(self.layout.num_pages);
        end > first && bits::any_bit_in(&self.residence, first, end - first)
    }

    /// Whether `page` was referenced since the last [`clear_references`](Self::clear_references).
    pub fn is_referenced(&self, page: u32) -> bool {
        page < self.layout.num_pages && bits::test_bit(&self.reference, page)
    }

    /// The LRU age of a page.
    pub fn lru_age(&self, page: u32) -> u8 {
        bits::get_nibble(&self.lru, page)
    }

    /// One clock step for a resident evictable page (blocking mode, which has no pulls):
    /// referenced since the last step → clear the bit and reset the age to 0; otherwise
    /// age it (saturating at `MAX_LRU_AGE`). Returns the new age. Callers serialise steps
    /// (the loader's lock); samplers may set the reference bit concurrently.
    pub fn clock_step(&self, page: u32) -> u8 {
        if page >= self.layout.num_pages {
            return 0;
        }
        if bits::test_bit(&self.reference, page) {
            bits::clear_bit(&self.reference, page);
            bits::set_nibble(&self.lru, page, 0);
            0
        } else {
            let age = bits::get_nibble(&self.lru, page);
            if age >= lru::MAX_LRU_AGE {
                return age; // oldest, or non-evictable
            }
            bits::set_nibble(&self.lru, page, age + 1);
            age + 1
        }
    }

    /// Word `word` of the residence bits (pages `32·word ..`), or 0 past the end. A
    /// read-only view for a backend that mirrors residence elsewhere (the CUDA loader
    /// copies changed words to the device).
    pub fn residence_word(&self, word: usize) -> u32 {
        self.residence
            .get(word)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The entry of an entry page (0 for a page without one), resident or not. Read-only,
    /// as [`residence_word`](Self::residence_word).
    pub fn entry(&self, page: u32) -> u64 {
        self.entries
            .get(page as usize)
            .map_or(0, |e| e.load(Ordering::Acquire))
    }

    /// Make a page resident: entry first, then age, then the residence bit (release), so a
    /// sampler that sees the bit sees the entry.
    pub fn push_mapping(&self, mapping: PageMapping) {
        let page = mapping.page;
        if page < self.layout.page_table_entries {
            self.entries[page as usize].store(mapping.entry, Ordering::Release);
        }
        bits::set_nibble(&self.lru, page, mapping.lru.min(15) as u8);
        bits::set_bit_release(&self.residence, page);
    }

    /// Make a page non-resident. Its entry is kept (second chance may restore it).
    pub fn invalidate(&self, page: u32) {
        bits::clear_bit(&self.residence, page);
    }

    /// Clear every reference bit below `end_page`. The pull clears the bits it reads, so a
    /// launch cycle needs no separate clear; this is for a caller that wants a clean slate.
    pub fn clear_references(&self, end_page: u32) {
        let words = (end_page as usize).div_ceil(32).min(self.reference.len());
        for w in &self.reference[..words] {
            w.store(0, Ordering::Relaxed);
        }
    }

    /// The pull step, over pages `[0, end_page)`: collect referenced non-resident pages;
    /// reset the age of referenced resident pages; age unreferenced resident ones and
    /// report those with age ≥ `lru_threshold` as stale (never non-evictable ones). The
    /// reference bits read are cleared, so the next pull sees only the uses made after
    /// this one (the next launch's).
    pub fn pull(&self, end_page: u32, launch_num: u32, lru_threshold: u8, out: &mut PullResult) {
        out.requested.clear();
        out.stale.clear();
        let words = (end_page as usize).div_ceil(32).min(self.reference.len());
        for w in 0..words {
            let referenced = if self.reference[w].load(Ordering::Relaxed) == 0 {
                0
            } else {
                self.reference[w].swap(0, Ordering::Relaxed)
            };
            let resident = self.residence[w].load(Ordering::Acquire);
            let base = (w * 32) as u32;
            let mut requested = referenced & !resident;
            while requested != 0 {
                let bit = requested.trailing_zeros();
                requested &= requested - 1;
                let page = base + bit;
                if page < end_page {
                    out.requested.push(PageId(page));
                }
            }
            let mut resident_bits = resident;
            while resident_bits != 0 {
                let bit = resident_bits.trailing_zeros();
                resident_bits &= resident_bits - 1;
                let page = base + bit;
                let age = bits::get_nibble(&self.lru, page);
                if age == NON_EVICTABLE {
                    continue;
                }
                if referenced & (1 << bit) != 0 {
                    if age != 0 {
                        bits::set_nibble(&self.lru, page, 0);
                    }
                } else {
                    let aged = lru::age_once(age, launch_num.wrapping_add(page));
                    if aged != age {
                        bits::set_nibble(&self.lru, page, aged);
                    }
                    if aged >= lru_threshold {
                        out.stale.push(StalePage {
                            page: PageId(page),
                            age: aged,
                        });
                    }
                }
            }
        }
    }

    /// A `DeviceContext` over these host arrays (request lists null: the host pull does not
    /// use them). Valid while `self` lives.
    pub fn device_context(&self, launch_num: u32, eviction_active: bool) -> DeviceContext {
        DeviceContext {
            page_table: self.entries.as_ptr() as *mut u64,
            reference_bits: self.reference.as_ptr() as *mut u32,
            residence_bits: self.residence.as_ptr() as *mut u32,
            lru_table: self.lru.as_ptr() as *mut u32,
            requested_pages: std::ptr::null_mut(),
            stale_pages: std::ptr::null_mut(),
            array_lengths: std::ptr::null_mut(),
            filled_pages: std::ptr::null_mut(),
            invalidated_pages: std::ptr::null_mut(),
            page_table_entries: self.layout.page_table_entries,
            num_pages: self.layout.num_pages,
            max_textures: self.layout.max_textures,
            flags: if eviction_active {
                CONTEXT_FLAG_REQUEST_IF_RESIDENT
            } else {
                0
            },
            requested_capacity: 0,
            stale_capacity: 0,
            filled_capacity: 0,
            invalidated_capacity: 0,
            launch_num,
            reject_threshold: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> PageTable {
        PageTable::new(PageLayout::new(8, 64, 4096).unwrap())
    }

    #[test]
    fn a_miss_is_requested_once_however_often_it_is_looked_up() {
        let t = table();
        for _ in 0..100 {
            assert!(!t.request_and_test(100));
            assert_eq!(t.map_or_request(3), None);
        }
        let mut r = PullResult::default();
        t.pull(4096, 1, 1, &mut r);
        assert_eq!(r.requested, vec![PageId(3), PageId(100)]);
        t.pull(4096, 2, 1, &mut r);
        assert!(r.requested.is_empty(), "the pull cleared the bits it read");
        assert!(r.stale.is_empty());
    }

    #[test]
    fn pushed_pages_are_resident_with_their_entry() {
        let t = table();
        t.push_mapping(PageMapping {
            page: 5,
            lru: 15,
            entry: 0xABCD,
        });
        t.push_mapping(PageMapping {
            page: 200,
            lru: 0,
            entry: 7,
        });
        assert_eq!(t.map_or_request(5), Some(0xABCD));
        assert!(t.request_and_test(200));
        assert_eq!(t.map_or_request(200), None, "tile pages have no entry");
        t.invalidate(200);
        assert!(!t.is_resident(200));
        assert!(!t.request_and_test(5000), "out of range");
    }

    #[test]
    fn unreferenced_pages_age_and_become_stale_referenced_ones_reset() {
        let t = table();
        t.push_mapping(PageMapping {
            page: 70,
            lru: 0,
            entry: 0,
        });
        t.push_mapping(PageMapping {
            page: 71,
            lru: 0,
            entry: 0,
        });
        t.push_mapping(PageMapping {
            page: 72,
            lru: NON_EVICTABLE as u32,
            entry: 0,
        });
        let mut r = PullResult::default();
        for launch in 0..40 {
            assert!(t.request_and_test(71));
            t.pull(4096, launch, 1, &mut r);
            assert!(r.requested.is_empty());
            assert!(r.stale.iter().all(|s| s.page == PageId(70)));
        }
        assert!(t.lru_age(70) >= 4);
        assert_eq!(t.lru_age(71), 0);
        assert_eq!(t.lru_age(72), NON_EVICTABLE);
        assert_eq!(
            r.stale,
            vec![StalePage {
                page: PageId(70),
                age: t.lru_age(70)
            }]
        );
    }

    #[test]
    fn default_space_costs_under_one_byte_per_page() {
        let t = PageTable::new(PageLayout::new(1 << 16, 1 << 18, 1 << 26).unwrap());
        let per_page = t.bookkeeping_bytes() as f64 / (1u64 << 26) as f64;
        assert!(per_page <= 0.79, "{per_page}");
        let ctx = t.device_context(3, true);
        assert_eq!(ctx.num_pages, 1 << 26);
        assert_eq!(ctx.flags, CONTEXT_FLAG_REQUEST_IF_RESIDENT);
    }
}
