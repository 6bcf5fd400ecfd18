//! Atomic bit and nibble operations over `u32` words: the page layer's residence,
//! reference and LRU arrays. Same word layout as the CUDA side: page `p` is bit `p % 32`
//! of word `p / 32`; its LRU age is nibble `p % 8` of word `p / 8`.

use crate::sync::AtomicU32;
use std::sync::atomic::Ordering;

/// Words needed for `bits` bits, padded to whole 1024-bit blocks (32 words) so GPU warps
/// always see full words.
pub fn words_for_bits(bits: u64) -> usize {
    (bits.div_ceil(1024) * 32) as usize
}

/// Whether bit `i` is set (acquire: what the bit publishes is visible after a true).
#[inline]
pub fn test_bit(words: &[AtomicU32], i: u32) -> bool {
    words[(i >> 5) as usize].load(Ordering::Acquire) & (1 << (i & 31)) != 0
}

/// Whether any bit of `[first, first + count)` is set (`count` ≥ 1; the range within
/// `words`). Reads whole words: a range of n bits costs about n / 32 loads.
#[inline]
pub fn any_bit_in(words: &[AtomicU32], first: u32, count: u32) -> bool {
    debug_assert!(count >= 1);
    let last = first + (count - 1);
    let (w0, w1) = ((first >> 5) as usize, (last >> 5) as usize);
    let head = u32::MAX << (first & 31);
    let tail = u32::MAX >> (31 - (last & 31));
    if w0 == w1 {
        return words[w0].load(Ordering::Acquire) & head & tail != 0;
    }
    words[w0].load(Ordering::Acquire) & head != 0
        || words[w0 + 1..w1]
            .iter()
            .any(|w| w.load(Ordering::Acquire) != 0)
        || words[w1].load(Ordering::Acquire) & tail != 0
}

/// Set bit `i`, reading first so an already-set bit costs no atomic read-modify-write
/// (most lookups hit pages that other lookups already marked).
#[inline]
pub fn set_bit_if_clear(words: &[AtomicU32], i: u32) {
    let w = &words[(i >> 5) as usize];
    let mask = 1 << (i & 31);
    if w.load(Ordering::Relaxed) & mask == 0 {
        w.fetch_or(mask, Ordering::Relaxed);
    }
}

/// Set bit `i` with release ordering (publishes whatever was written before).
#[inline]
pub fn set_bit_release(words: &[AtomicU32], i: u32) {
    words[(i >> 5) as usize].fetch_or(1 << (i & 31), Ordering::Release);
}

/// Clear bit `i`.
#[inline]
pub fn clear_bit(words: &[AtomicU32], i: u32) {
    words[(i >> 5) as usize].fetch_and(!(1 << (i & 31)), Ordering::AcqRel);
}

/// The 4-bit value of page `i` in a nibble array.
#[inline]
pub fn get_nibble(words: &[AtomicU32], i: u32) -> u8 {
    ((words[(i >> 3) as usize].load(Ordering::Relaxed) >> ((i & 7) * 4)) & 0xF) as u8
}

/// Set the 4-bit value of page `i`. Only the page layer's pull and push write nibbles,
/// under the loader's lock; the compare-exchange keeps neighbouring nibbles intact anyway.
#[inline]
pub fn set_nibble(words: &[AtomicU32], i: u32, value: u8) {
    let w = &words[(i >> 3) as usize];
    let shift = (i & 7) * 4;
    let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
        Some((old & !(0xF << shift)) | ((value as u32 & 0xF) << shift))
    });
}

/// A zeroed word array (untouched pages of it are not committed by the OS).
pub fn zeroed_words(n: usize) -> Box<[AtomicU32]> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bit_in_a_range_sees_exactly_the_bits_inside_it() {
        let words = zeroed_words(16);
        for set in [0u32, 5, 31, 32, 63, 64, 100, 200] {
            set_bit_release(&words, set);
            for first in 0..210u32 {
                for count in [1u32, 2, 3, 31, 32, 33, 64, 65] {
                    let inside = (first..first + count).contains(&set);
                    assert_eq!(
                        any_bit_in(&words, first, count),
                        inside,
                        "bit {set}, range {first}+{count}"
                    );
                }
            }
            clear_bit(&words, set);
        }
    }

    #[test]
    fn bits_and_nibbles_touch_only_their_page() {
        let words = zeroed_words(64);
        set_bit_if_clear(&words, 33);
        set_bit_if_clear(&words, 33);
        assert!(test_bit(&words, 33));
        assert!(!test_bit(&words, 32) && !test_bit(&words, 34));
        assert_eq!(words[1].load(Ordering::Relaxed), 2);
        clear_bit(&words, 33);
        assert!(!test_bit(&words, 33));
        set_bit_release(&words, 2047);
        assert!(test_bit(&words, 2047));

        let lru = zeroed_words(8);
        for i in 0..64 {
            set_nibble(&lru, i, (i % 16) as u8);
        }
        for i in 0..64 {
            assert_eq!(get_nibble(&lru, i), (i % 16) as u8);
        }
        set_nibble(&lru, 9, 15);
        assert_eq!(get_nibble(&lru, 8), 8);
        assert_eq!(get_nibble(&lru, 9), 15);
        assert_eq!(get_nibble(&lru, 10), 10);
    }

    #[test]
    fn words_are_padded_to_blocks() {
        assert_eq!(words_for_bits(1), 32);
        assert_eq!(words_for_bits(1024), 32);
        assert_eq!(words_for_bits(1025), 64);
        assert_eq!(words_for_bits(1 << 26), (1 << 26) / 32);
    }
}
