//! [`DecodeHold`]: a whole decode (`ImageSource::whole_decode`: a PNG or JPEG decoded
//! whole, mip levels generated in memory) kept for the fills that read from it, its bytes
//! charged to the budget. The fills of one texture in one batch share a hold (`Arc`);
//! the last one to finish drops it, which releases the decode in the source and hands
//! the charged bytes to the engine, which takes them off the budget at its next turn
//! under the lock (`Engine::settle_decodes`). Dropping a hold never takes the lock, so
//! it may happen anywhere.

use crate::ids::TextureId;
use crate::sources::ImageSource;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A whole decode kept for fills (see the module docs).
pub(crate) struct DecodeHold {
    /// The texture whose source decoded.
    pub texture: TextureId,
    /// The texture's generation when the hold was made.
    pub generation: u32,
    source: Arc<dyn ImageSource>,
    /// Bytes charged to the budget (0: the budget could not take them).
    charged: u64,
    /// Where the charged bytes go when the hold is dropped.
    released: Arc<AtomicU64>,
}

impl DecodeHold {
    /// A hold of `source`'s decode for `texture` at `generation`, `charged` bytes of it
    /// charged to the budget, to be handed to `released` when dropped.
    pub fn new(
        (texture, generation): (TextureId, u32),
        source: Arc<dyn ImageSource>,
        charged: u64,
        released: Arc<AtomicU64>,
    ) -> DecodeHold {
        DecodeHold {
            texture,
            generation,
            source,
            charged,
            released,
        }
    }
}

impl Drop for DecodeHold {
    fn drop(&mut self) {
        // Source code: a panic in it is contained (the decode then stays until the
        // texture's next release or its end).
        let source = &self.source;
        if catch_unwind(AssertUnwindSafe(|| source.release_decoded())).is_err() {
            tracing::error!("{}: releasing its decode panicked", source.name());
        }
        self.released.fetch_add(self.charged, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for DecodeHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeHold")
            .field("texture", &self.texture)
            .field("generation", &self.generation)
            .field("charged", &self.charged)
            .finish_non_exhaustive()
    }
}
