//! Spilled whole decodes ([`crate::sources::ImageSource::spill_decoded`]). A whole decode
//! (a PNG or JPEG, mip levels generated in memory) released while its texture will need
//! it again would be made again at the next miss (a blocking cache much smaller than the
//! decodes thrashes so, as OpenImageIO's does). Such a decode is spilled: an open's decode
//! the budget has no room to keep for the pages (`decode_hold::hold_open_decode`), a decode whose
//! fills left pages of its levels out for want of room (`whole_decodes`), and a
//! texture's second decode (`Engine::count_decode`). When the fills of such a decode end,
//! its [`DecodeHold`](super::decode_hold) writes it to an unnamed temporary file before
//! letting it go; the source reads those
//! levels from the file from then on, and the engine, told at its next turn under the
//! lock ([`Engine::settle_decodes`](super::engine::Engine)), treats the texture as a tiled
//! one (no decode charged, nothing prefetched). The bytes the spill files hold at once
//! (a [`SpillLedger`]: a file's bytes stop counting when it goes, with its texture or at
//! the texture's next open) are bounded by `LoaderOptions::max_spill_bytes`.

use crate::ids::TextureId;
use crate::options::LoaderOptions;
use crate::sources::{ImageSource, SpillLedger};
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
    /// Where spill files go, in order of preference ([`spill_dirs`]).
    dirs: Vec<PathBuf>,
    /// The one used now: the next is tried when it cannot take a file.
    dir: AtomicUsize,
    limit: u64,
    /// Bytes the spill files hold, and those reserved by spills in progress.
    ledger: SpillLedger,
    /// Spilled since the engine's last turn.
    done: Mutex<Vec<Spilled>>,
    /// Whether a failure to write has been warned about.
    warned: AtomicBool,
}

impl Spills {
    /// Spilling as `options` set it.
    pub fn new(options: &LoaderOptions) -> Spills {
        Spills {
            dirs: spill_dirs(options.spill_dir.as_ref()),
            dir: AtomicUsize::new(0),
            limit: options.max_spill_bytes,
            ledger: SpillLedger::new(),
            done: Mutex::new(Vec::new()),
            warned: AtomicBool::new(false),
        }
    }

    /// Whether decodes may be spilled at all.
    pub fn enabled(&self) -> bool {
        self.limit > 0
    }

    /// Bytes the spill files hold now.
    pub fn held_bytes(&self) -> u64 {
        self.ledger.held_bytes()
    }

    /// Spill `source`'s decode (`bytes`, as its `whole_decode` said) for `texture` at
    /// `generation`, if the limit leaves room for it beside the files held. Takes no
    /// engine lock; a failure is warned about once (the texture is then decoded again at
    /// need), a panic contained.
    pub fn spill(
        &self,
        (texture, generation): (TextureId, u32),
        source: &dyn ImageSource,
        bytes: u64,
    ) {
        // Reserved until the file (which holds its own bytes) is written.
        let Some(reserved) = self.ledger.try_hold(bytes, self.limit) else {
            return;
        };
        let written = loop {
            let i = self.dir.load(Ordering::Relaxed);
            let Some(dir) = self.dirs.get(i) else {
                break 0;
            };
            match catch_unwind(AssertUnwindSafe(|| source.spill_decoded(dir, &self.ledger))) {
                Ok(Ok(n)) => break n,
                // A directory that cannot take the file: the next one, if any.
                Ok(Err(_)) if i + 1 < self.dirs.len() => {
                    let _ =
                        self.dir
                            .compare_exchange(i, i + 1, Ordering::Relaxed, Ordering::Relaxed);
                }
                Ok(Err(e)) => {
                    if !self.warned.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            "{e}; such textures are decoded again at need (later failures \
                             to spill are not reported)"
                        );
                    }
                    break 0;
                }
                Err(_) => {
                    tracing::error!("{}: spilling its decode panicked", source.name());
                    break 0;
                }
            }
        };
        drop(reserved);
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

/// Where spill files go, in order: `configured` alone if given; else `$TMPDIR` if set (the
/// user's choice); else, on Unix, `/var/tmp` (on disk by convention, where `/tmp` is
/// often a RAM file system, which would hold the spilled bytes in memory) and then the
/// system's temporary directory.
fn spill_dirs(configured: Option<&PathBuf>) -> Vec<PathBuf> {
    if let Some(dir) = configured {
        return vec![dir.clone()];
    }
    let temp = std::env::temp_dir();
    if std::env::var_os("TMPDIR").is_some_and(|d| !d.is_empty()) {
        return vec![temp];
    }
    let mut dirs = Vec::new();
    if cfg!(unix) {
        dirs.push(PathBuf::from("/var/tmp"));
    }
    if !dirs.contains(&temp) {
        dirs.push(temp);
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_directory_is_the_only_one_and_the_default_prefers_disk() {
        let mine = PathBuf::from("/somewhere/else");
        assert_eq!(spill_dirs(Some(&mine)), vec![mine]);
        let dirs = spill_dirs(None);
        assert_eq!(dirs.last(), Some(&std::env::temp_dir()));
        if cfg!(unix) && std::env::var_os("TMPDIR").is_none() {
            assert_eq!(dirs[0], PathBuf::from("/var/tmp"));
        }
    }

    /// A source whose spill succeeds (a "file" of 10 bytes, held until
    /// [`Self::remove_files`]) in a directory that exists.
    #[derive(Default)]
    struct SpillsWhereDirsExist(Mutex<Vec<crate::sources::SpillHold>>);

    impl SpillsWhereDirsExist {
        fn remove_files(&self) {
            self.0.lock().clear();
        }
    }

    impl ImageSource for SpillsWhereDirsExist {
        fn name(&self) -> String {
            "spills-where-dirs-exist".into()
        }
        fn open(&self) -> Result<crate::sources::ImageInfo, crate::sources::SourceError> {
            Err(crate::sources::SourceError("not a texture".into()))
        }
        fn read_region(
            &self,
            _: crate::textures::TileRegion,
            _: &mut [u8],
            _: usize,
        ) -> Result<crate::sources::Readiness, crate::sources::SourceError> {
            Err(crate::sources::SourceError("not a texture".into()))
        }
        fn spill_decoded(
            &self,
            dir: &std::path::Path,
            ledger: &SpillLedger,
        ) -> Result<u64, crate::sources::SourceError> {
            match dir.is_dir() {
                true => {
                    self.0.lock().push(ledger.hold(10));
                    Ok(10)
                }
                false => Err(crate::sources::SourceError(format!("no {}", dir.display()))),
            }
        }
    }

    #[test]
    fn a_directory_that_cannot_take_a_file_passes_to_the_next_and_the_limit_holds() {
        let spills = Spills {
            dirs: vec![PathBuf::from("/no/such/dir"), std::env::temp_dir()],
            ..Spills::new(&LoaderOptions {
                max_spill_bytes: 25,
                ..Default::default()
            })
        };
        let id = |t| (TextureId(t), 0);
        let (a, b) = (
            SpillsWhereDirsExist::default(),
            SpillsWhereDirsExist::default(),
        );
        spills.spill(id(1), &a, 10);
        assert_eq!(
            spills.dir.load(Ordering::Relaxed),
            1,
            "moved to the next directory"
        );
        spills.spill(id(2), &b, 10);
        // Past the limit (20 + 10 > 25): not spilled.
        spills.spill(id(3), &SpillsWhereDirsExist::default(), 10);
        assert_eq!(spills.held_bytes(), 20);
        let done: Vec<u32> = spills.take_done().iter().map(|s| s.texture.0).collect();
        assert_eq!(done, vec![1, 2]);
        assert!(spills.take_done().is_empty());
        // A file gone (its texture unregistered or opened again) makes room.
        a.remove_files();
        assert_eq!(spills.held_bytes(), 10);
        spills.spill(id(3), &a, 10);
        assert_eq!(spills.held_bytes(), 20);
        assert_eq!(spills.take_done().len(), 1);
        // The last directory failing too: nothing spilled, the reservation given back.
        let none = Spills {
            dirs: vec![PathBuf::from("/no/such/dir")],
            ..Spills::new(&LoaderOptions::default())
        };
        none.spill(id(4), &SpillsWhereDirsExist::default(), 10);
        assert_eq!((none.held_bytes(), none.take_done().len()), (0, 0));
    }
}
