//! LRU ageing. Ages are 4-bit: 0 = used in the last launch, up to `MAX_LRU_AGE`;
//! `NON_EVICTABLE` marks pages that are never staged. Ages grow logarithmically: a page of
//! age `a` ages on launches where `(launch + page) % 2^a == 0`, so age ≈ log2 of the number
//! of launches since last use, and the page id staggers ageing across pages (as OTK).

/// Oldest evictable age.
pub const MAX_LRU_AGE: u8 = 14;
/// Age that marks a page as not evictable.
pub const NON_EVICTABLE: u8 = 15;

/// The age of an unused page after one more launch.
#[inline]
pub fn age_once(age: u8, launch_and_page: u32) -> u8 {
    if age >= MAX_LRU_AGE {
        return age;
    }
    if launch_and_page & ((1u32 << age) - 1) == 0 {
        age + 1
    } else {
        age
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ageing_is_logarithmic_and_capped() {
        let mut age = 0;
        let mut launches = 0;
        while age < 6 {
            age = age_once(age, launches);
            launches += 1;
        }
        // Age 6 needs roughly 2^5 launches.
        assert!((16..=64).contains(&launches), "{launches}");
        assert_eq!(age_once(MAX_LRU_AGE, 0), MAX_LRU_AGE);
        assert_eq!(age_once(NON_EVICTABLE, 0), NON_EVICTABLE);
        assert_eq!(age_once(0, 12345), 1);
    }
}
