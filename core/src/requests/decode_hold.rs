//! [`DecodeHold`]: a whole decode (`ImageSource::whole_decode`: a PNG or JPEG decoded
//! whole, mip levels generated in memory) kept for the fills that read from it, its bytes
//! charged to the budget. The fills of one texture in one batch share a hold (`Arc`);
//! the last one to finish drops it, which releases the decode in the source and hands
//! the charged bytes to the engine, which takes them off the budget at its next turn
//! under the lock (`Engine::settle_decodes`). Dropping a hold never takes the lock, so
//! it may happen anywhere. A hold of a decode its texture will need again spills it to a
//! file before releasing it ([`super::spills`]).

use super::engine::Engine;
use super::host_state::HostState;
use super::spills::Spills;
use crate::ids::TextureId;
use crate::sources::ImageSource;
use crate::textures::TextureLayout;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Whole decodes held at once for a batch's fills (or an open's) take at most this
/// share of the budget (1 / N), so that it keeps room for the pages they fill; a batch's
/// first decode goes whatever its size.
pub(crate) const DECODE_BUDGET_SHARE: u64 = 4;

/// A whole decode kept for fills (see the module docs).
pub(crate) struct DecodeHold {
    /// The texture whose source decoded.
    pub texture: TextureId,
    /// The texture's generation when the hold was made.
    pub generation: u32,
    source: Arc<dyn ImageSource>,
    /// Bytes of the decode (the source's `whole_decode`).
    bytes: u64,
    /// Bytes charged to the budget (0: the budget could not take them).
    charged: u64,
    /// Where the charged bytes go when the hold is dropped.
    released: Arc<AtomicU64>,
    /// Spill the decode there before releasing it.
    spill: Option<Arc<Spills>>,
}

impl DecodeHold {
    /// A hold of `source`'s decode (`bytes`) for `texture` at `generation`, `charged`
    /// bytes of it charged to the budget, to be handed to `released` when dropped.
    pub fn new(
        (texture, generation): (TextureId, u32),
        source: Arc<dyn ImageSource>,
        (bytes, charged): (u64, u64),
        released: Arc<AtomicU64>,
    ) -> DecodeHold {
        DecodeHold {
            texture,
            generation,
            source,
            bytes,
            charged,
            released,
            spill: None,
        }
    }

    /// Whether bytes of the decode were charged to the budget.
    pub fn is_charged(&self) -> bool {
        self.charged > 0
    }

    /// Spill the decode through `spills` (if given) before releasing it.
    pub fn spilling(mut self, spills: Option<Arc<Spills>>) -> DecodeHold {
        if spills.is_some() {
            self.spill = spills;
        }
        self
    }
}

impl Drop for DecodeHold {
    fn drop(&mut self) {
        if let Some(spills) = self.spill.take() {
            spills.spill((self.texture, self.generation), &*self.source, self.bytes);
        }
        release(&*self.source);
        self.released.fetch_add(self.charged, Ordering::Relaxed);
    }
}

/// Release `source`'s decode. Source code: a panic in it is contained (the decode then
/// stays until the texture's next release or its end).
fn release(source: &dyn ImageSource) {
    if catch_unwind(AssertUnwindSafe(|| source.release_decoded())).is_err() {
        tracing::error!("{}: releasing its decode panicked", source.name());
    }
}

/// The hold of an open's whole decode (`open_fill::init_texture`), if its texture has pages
/// of those levels (`own_pages`: not sharing another texture's tiles): charged and kept
/// for their fills (`whole_decodes::fill_after_open`) where the budget has room for it within a
/// [`DECODE_BUDGET_SHARE`]th; otherwise uncharged and spilling (when spilling is on),
/// since its pages would decode the image again: dropped by the caller once the lock is
/// released. `None`: the caller releases the decode. Counted either way.
pub(crate) fn hold_open_decode(
    engine: &Engine,
    host: &mut HostState,
    (texture, generation): (TextureId, u32),
    source: &Arc<dyn ImageSource>,
    layout: &TextureLayout,
    own_pages: bool,
) -> Option<DecodeHold> {
    let whole = layout.whole_decode?;
    let spill = engine.count_decode(host, texture);
    if !own_pages || layout.whole_decode_pages().is_none() {
        return None;
    }
    let bytes = whole.bytes;
    let cap = host.residency.budget_bytes() / DECODE_BUDGET_SHARE;
    let released = engine.decode_bytes_released.clone();
    let id = (texture, generation);
    if host.residency.decode_bytes() + bytes <= cap
        && host.residency.reserve_decode(&engine.epochs, bytes)
    {
        let hold = DecodeHold::new(id, source.clone(), (bytes, bytes), released);
        return Some(hold.spilling(spill));
    }
    let spills = engine.spills_enabled()?;
    let hold = DecodeHold::new(id, source.clone(), (bytes, 0), released);
    Some(hold.spilling(Some(spills)))
}

/// Releases a source's whole decode when dropped, unless it was kept (an open's).
pub(crate) struct ReleaseUnlessKept<'a> {
    /// The source.
    pub source: &'a Arc<dyn ImageSource>,
    /// Whether to release when dropped.
    pub armed: bool,
}

impl Drop for ReleaseUnlessKept<'_> {
    fn drop(&mut self) {
        if self.armed {
            release(&**self.source);
        }
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
