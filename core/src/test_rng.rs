//! The deterministic random numbers unit tests draw on: Marsaglia's 32-bit xorshift.

/// A xorshift32 generator from `seed` (not 0): each call returns the next state.
pub(crate) fn xorshift32(mut seed: u32) -> impl FnMut() -> u32 {
    debug_assert_ne!(seed, 0);
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    }
}
