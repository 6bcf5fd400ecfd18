//! [`SpilledLevels`]: the levels of a whole decode written to an unnamed temporary file,
//! so that a source whose decode the loader released serves later reads of those levels
//! by positioned reads instead of decoding the whole image again
//! ([`ImageSource::spill_decoded`](crate::sources::ImageSource::spill_decoded)). The file
//! has no name (removed by the system when closed: the source's drop, or a crash), and is
//! read from any number of threads at once. A [`SpillLedger`] counts the bytes a loader's
//! spill files hold, each file from its writing to its removal.

use super::exr::mips::GenLevel;
use super::positioned::PositionedFile;
use super::SourceError;
use crate::textures::TileRegion;
use parking_lot::Mutex;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The bytes a loader's spill files hold now
/// ([`ImageSource::spill_decoded`](crate::sources::ImageSource::spill_decoded)): each file
/// counts its bytes through a [`SpillHold`] kept as long as the file, so bytes of files
/// gone (a texture unregistered or opened again) no longer count against
/// `LoaderOptions::max_spill_bytes`. Clones share the count.
#[derive(Clone, Debug, Default)]
pub struct SpillLedger(Arc<AtomicU64>);

impl SpillLedger {
    /// An empty ledger.
    pub fn new() -> SpillLedger {
        SpillLedger::default()
    }

    /// Bytes held now.
    pub fn held_bytes(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Count `bytes` until the returned hold is dropped (keep it with the file).
    pub fn hold(&self, bytes: u64) -> SpillHold {
        self.0.fetch_add(bytes, Ordering::Relaxed);
        SpillHold {
            ledger: self.clone(),
            bytes,
        }
    }

    /// Count `bytes` if the bytes held stay within `limit`.
    pub(crate) fn try_hold(&self, bytes: u64, limit: u64) -> Option<SpillHold> {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(bytes).filter(|&n| n <= limit)
            })
            .ok()?;
        Some(SpillHold {
            ledger: self.clone(),
            bytes,
        })
    }
}

/// Bytes counted in a [`SpillLedger`] until dropped.
#[must_use]
#[derive(Debug)]
pub struct SpillHold {
    ledger: SpillLedger,
    bytes: u64,
}

impl SpillHold {
    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for SpillHold {
    fn drop(&mut self) {
        self.ledger.0.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Where a source keeps its spilled levels: empty until [`SpillSlot::fill`], then read
/// from any number of threads ([`SpillSlot::get`]).
#[derive(Debug, Default)]
pub(crate) struct SpillSlot(Mutex<Option<Arc<SpilledLevels>>>);

impl SpillSlot {
    /// The spilled levels, if any.
    pub fn get(&self) -> Option<Arc<SpilledLevels>> {
        self.0.lock().clone()
    }

    /// Whether levels were spilled.
    pub fn is_set(&self) -> bool {
        self.0.lock().is_some()
    }

    /// Forget the spilled levels (the file goes with the last reader).
    pub fn clear(&self) {
        *self.0.lock() = None;
    }

    /// Write `levels` (level `first` onwards, `texel_bytes` a texel) to a new file in
    /// `dir`, counted in `ledger` while it lasts, unless levels were spilled already,
    /// without holding the slot's lock (reads go on meanwhile). The bytes written: 0 if
    /// the slot was set (before, or by another spill that ended first, whose file is
    /// kept).
    pub fn fill(
        &self,
        dir: &Path,
        ledger: &SpillLedger,
        first: u32,
        texel_bytes: usize,
        levels: &[GenLevel],
    ) -> std::io::Result<u64> {
        if self.is_set() {
            return Ok(0);
        }
        let file = SpilledLevels::write(dir, ledger, first, texel_bytes, levels)?;
        let mut slot = self.0.lock();
        if slot.is_some() {
            return Ok(0);
        }
        let bytes = file.bytes();
        *slot = Some(Arc::new(file));
        Ok(bytes)
    }
}

/// One level in the file: row-major texels from `offset`.
#[derive(Clone, Copy, Debug)]
struct Level {
    width: usize,
    height: usize,
    offset: u64,
}

/// Levels `first..` of a decode, in an unnamed file (see the module docs).
#[derive(Debug)]
pub(crate) struct SpilledLevels {
    file: PositionedFile,
    first: u32,
    texel_bytes: usize,
    levels: Vec<Level>,
    /// The file's bytes, counted in the loader's ledger while the file lasts.
    hold: SpillHold,
}

impl SpilledLevels {
    /// Write `levels` (level `first` onwards, `texel_bytes` a texel) to a new unnamed file
    /// in `dir`, its bytes counted in `ledger` until it is dropped.
    pub fn write(
        dir: &Path,
        ledger: &SpillLedger,
        first: u32,
        texel_bytes: usize,
        levels: &[GenLevel],
    ) -> std::io::Result<SpilledLevels> {
        let file = tempfile::tempfile_in(dir)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
        let mut placed = Vec::with_capacity(levels.len());
        let mut offset = 0u64;
        for l in levels {
            debug_assert_eq!(l.data.len(), l.width * l.height * texel_bytes);
            out.write_all(&l.data)?;
            placed.push(Level {
                width: l.width,
                height: l.height,
                offset,
            });
            offset += l.data.len() as u64;
        }
        out.flush()?;
        drop(out);
        Ok(SpilledLevels {
            file: PositionedFile::new(file),
            first,
            texel_bytes,
            levels: placed,
            hold: ledger.hold(offset),
        })
    }

    /// Bytes in the file.
    pub fn bytes(&self) -> u64 {
        self.hold.bytes()
    }

    /// Whether `level` is in the file.
    pub fn holds(&self, level: u32) -> bool {
        level >= self.first && ((level - self.first) as usize) < self.levels.len()
    }

    /// Read `region` (of a level [`Self::holds`], checked by the caller against the
    /// image's levels) into `dest`, rows `row_bytes` apart: one positioned read a row.
    pub fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<(), SourceError> {
        let err = |what: String| SourceError(format!("the spilled decode: {what}"));
        let level = region
            .level
            .checked_sub(self.first)
            .and_then(|i| self.levels.get(i as usize))
            .ok_or_else(|| err(format!("level {} is not in the file", region.level)))?;
        let (x, y, w, h) = (
            region.x as usize,
            region.y as usize,
            region.width as usize,
            region.height as usize,
        );
        if x + w > level.width || y + h > level.height {
            return Err(err(format!("{region:?} is outside its level")));
        }
        let n = w * self.texel_bytes;
        for j in 0..h {
            let at = level.offset + (((y + j) * level.width + x) * self.texel_bytes) as u64;
            let row = dest
                .get_mut(j * row_bytes..j * row_bytes + n)
                .ok_or_else(|| err("the destination is too small".into()))?;
            self.read_exact_at(row, at)
                .map_err(|e| err(e.to_string()))?;
        }
        Ok(())
    }

    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
        while !buf.is_empty() {
            match self.file.read_at(buf, offset)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(width: usize, height: usize, seed: u8) -> GenLevel {
        GenLevel {
            width,
            height,
            data: (0..width * height * 4)
                .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
                .collect(),
        }
    }

    #[test]
    fn regions_read_back_as_the_levels_held_them() {
        let levels = [level(37, 21, 1), level(18, 10, 2), level(9, 5, 3)];
        let ledger = SpillLedger::new();
        let spilled = SpilledLevels::write(&std::env::temp_dir(), &ledger, 2, 4, &levels).unwrap();
        assert_eq!(spilled.bytes(), (37 * 21 + 18 * 10 + 9 * 5) * 4);
        assert_eq!(ledger.held_bytes(), spilled.bytes());
        assert!(!spilled.holds(1) && spilled.holds(2) && spilled.holds(4) && !spilled.holds(5));
        for (i, l) in levels.iter().enumerate() {
            let region = TileRegion {
                level: 2 + i as u32,
                x: 3.min(l.width as u32 - 1),
                y: 1,
                width: (l.width as u32 - 3).min(8),
                height: (l.height as u32 - 1).min(6),
            };
            let row_bytes = 40;
            let mut dest = vec![0xAAu8; row_bytes * region.height as usize];
            spilled.read_region(region, &mut dest, row_bytes).unwrap();
            for j in 0..region.height as usize {
                let n = region.width as usize * 4;
                let src = ((region.y as usize + j) * l.width + region.x as usize) * 4;
                assert_eq!(
                    &dest[j * row_bytes..j * row_bytes + n],
                    &l.data[src..src + n]
                );
                assert!(dest[j * row_bytes + n..(j + 1) * row_bytes]
                    .iter()
                    .all(|&b| b == 0xAA));
            }
        }
        let outside = TileRegion {
            level: 4,
            x: 5,
            y: 0,
            width: 8,
            height: 1,
        };
        let mut dest = vec![0u8; 64];
        assert!(spilled.read_region(outside, &mut dest, 64).is_err());
        let missing = TileRegion {
            level: 1,
            ..outside
        };
        assert!(spilled.read_region(missing, &mut dest, 64).is_err());
        drop(spilled);
        assert_eq!(ledger.held_bytes(), 0, "the file's bytes go with it");
    }

    #[test]
    fn the_ledger_counts_what_holds_hold_and_refuses_past_the_limit() {
        let ledger = SpillLedger::new();
        let a = ledger.try_hold(10, 25).expect("room");
        let b = ledger.hold(10);
        assert_eq!(ledger.held_bytes(), 20);
        assert!(ledger.try_hold(10, 25).is_none(), "20 + 10 > 25");
        assert_eq!(ledger.held_bytes(), 20, "a refusal holds nothing");
        drop(a);
        let c = ledger
            .try_hold(15, 25)
            .expect("room again once a hold went");
        assert_eq!((ledger.held_bytes(), c.bytes()), (25, 15));
        drop((b, c));
        assert_eq!(ledger.held_bytes(), 0);
        let all = ledger.try_hold(u64::MAX, u64::MAX).expect("room");
        assert!(
            ledger.try_hold(1, u64::MAX).is_none(),
            "an overflow is refused"
        );
        drop(all);
        assert_eq!(ledger.held_bytes(), 0);
    }

    #[test]
    fn a_directory_that_cannot_hold_the_file_is_an_error() {
        let missing = std::env::temp_dir().join("dtex-no-such-dir/below");
        let ledger = SpillLedger::new();
        assert!(SpilledLevels::write(&missing, &ledger, 0, 4, &[level(4, 4, 0)]).is_err());
        assert_eq!(ledger.held_bytes(), 0);
    }
}
