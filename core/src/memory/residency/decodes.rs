//! Whole decodes charged to the budget: the memory a source holds while the pages of a
//! PNG, a JPEG or generated mip levels are filled from one decode
//! (`ImageSource::whole_decode`). Non-evictable while charged, released when the fills
//! that use the decode end; a shortage they cause passes.

use super::Residency;
use crate::memory::epoch::Epochs;

impl Residency {
    /// Charge a whole decode's `bytes`, evicting staged tiles no reader can see (oldest
    /// first) where free memory does not cover them. False, with nothing charged, if
    /// that is not enough.
    pub fn reserve_decode(&mut self, epochs: &Epochs, bytes: u64) -> bool {
        loop {
            if self.pool.excess_bytes() == 0 && self.pool.reserve(bytes) {
                self.decode_bytes += bytes;
                return true;
            }
            if !self.free_oldest_staged(epochs) {
                return false;
            }
        }
    }

    /// Release bytes charged by [`reserve_decode`](Self::reserve_decode).
    pub fn release_decode(&mut self, bytes: u64) {
        let bytes = bytes.min(self.decode_bytes);
        self.decode_bytes -= bytes;
        self.pool.release(bytes);
    }

    /// Bytes of whole decodes charged now (part of the non-evictable bytes).
    pub fn decode_bytes(&self) -> u64 {
        self.decode_bytes
    }
}
