//! Spilled whole decodes ([`crate::sources::ImageSource::spill_decoded`]). A whole decode
//! (a PNG or JPEG, mip levels generated in memory) released while its texture will need
//! it again would be made again at the next miss (a blocking cache much smaller than the
//! decodes thrashes so, as OpenImageIO's does). Such a decode is spilled: an open's decode
//! the budget has no room to keep for the pages (`fill::open_texture`), a decode whose
//! fills left pages of its levels out for want of room (`whole_decodes`), and a
//! texture's second decode (`Engine::count_decode`). When the fills of such a decode end,
//! its [`DecodeHold`](super::decode_hold) writes it to an unnamed temporary file before
//! letting it go; the source reads those
//! levels from the file from then on, and the engine, told at its next turn under the
//! lock ([`Engine::settle_decodes`](super::engine::Engine)), treats the texture as a tiled
//! one (no decode charged, nothing prefetched). The bytes written over the loader's life
//! are bounded by `LoaderOptions::max_spill_bytes`.

use crate::ids::TextureId;
use crate::options::LoaderOptions;
use crate::sources::ImageSource;
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A decode written to a file, for the engine to take note of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spilled {
    /// The texture.
    pub texture: TextureId,
    /// Its generation when the decode was made.
    pub generation: u32,
}

/// The engine's spilling: where, how much, and what was spilled since its last turn.
#[derive(Debug)]
pub(crate) struct Spills {
    dir: PathBuf,
    limit: u64,
    /// Bytes written (and reserved by spills in progress) over the loader's life.
    written: AtomicU64,
    /// Spilled since the engine's last turn.
    done: Mutex<Vec<Spilled>>,
    /// Whether a failure to write has been warned about.
    warned: AtomicBool,
}

impl Spills {
    /// Spilling as `options` set it.
    pub fn new(options: &LoaderOptions) -> Spills {
        Spills {
            dir: options.spill_dir.clone().unwrap_or_else(std::env::temp_dir),
            limit: options.max_spill_bytes,
            written: AtomicU64::new(0),
            done: Mutex::new(Vec::new()),
            warned: AtomicBool::new(false),
        }
    }

    /// Whether decodes may be spilled at all.
    pub fn enabled(&self) -> bool {
        self.limit > 0
    }

    /// Bytes written to spill files over the loader's life.
    pub fn written_bytes(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Spill `source`'s decode (`bytes`, as its `whole_decode` said) for `texture` at
    /// `generation`, if the limit leaves room. Takes no engine lock; a failure is warned
    /// about once (the texture is then decoded again at need), a panic contained.
    pub fn spill(
        &self,
        (texture, generation): (TextureId, u32),
        source: &dyn ImageSource,
        bytes: u64,
    ) {
        let reserved = self
            .written
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                w.checked_add(bytes).filter(|&n| n <= self.limit)
            })
            .is_ok();
        if !reserved {
            return;
        }
        let written = match catch_unwind(AssertUnwindSafe(|| source.spill_decoded(&self.dir))) {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "{e}; such textures are decoded again at need (later failures to \
                         spill are not reported)"
                    );
                }
                0
            }
            Err(_) => {
                tracing::error!("{}: spilling its decode panicked", source.name());
                0
            }
        };
        // The reservation becomes what was written.
        self.written
            .fetch_sub(bytes - written.min(bytes), Ordering::Relaxed);
        if written > bytes {
            self.written.fetch_add(written - bytes, Ordering::Relaxed);
        }
        if written > 0 {
            self.done.lock().push(Spilled {
                texture,
                generation,
            });
        }
    }

    /// What was spilled since the last call.
    pub fn take_done(&self) -> Vec<Spilled> {
        std::mem::take(&mut *self.done.lock())
    }
}
