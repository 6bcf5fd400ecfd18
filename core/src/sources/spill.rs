//! [`SpilledLevels`]: the levels of a whole decode written to an unnamed temporary file,
//! so that a source whose decode the loader released serves later reads of those levels
//! by positioned reads instead of decoding the whole image again
//! ([`ImageSource::spill_decoded`](crate::sources::ImageSource::spill_decoded)). The file
//! has no name (removed by the system when closed: the source's drop, or a crash), and is
//! read from any number of threads at once.

use super::exr::mips::GenLevel;
use super::positioned::PositionedFile;
use super::SourceError;
use crate::textures::TileRegion;
use parking_lot::Mutex;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

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
    /// `dir` unless levels were spilled already, without holding the slot's lock (reads
    /// go on meanwhile). The bytes written: 0 if the slot was set (before, or by another
    /// spill that ended first, whose file is kept).
    pub fn fill(
        &self,
        dir: &Path,
        first: u32,
        texel_bytes: usize,
        levels: &[GenLevel],
    ) -> std::io::Result<u64> {
        if self.is_set() {
            return Ok(0);
        }
        let file = SpilledLevels::write(dir, first, texel_bytes, levels)?;
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
    bytes: u64,
}

impl SpilledLevels {
    /// Write `levels` (level `first` onwards, `texel_bytes` a texel) to a new unnamed file
    /// in `dir`.
    pub fn write(
        dir: &Path,
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
            bytes: offset,
        })
    }

    /// Bytes in the file.
    pub fn bytes(&self) -> u64 {
        self.bytes
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
        let spilled = SpilledLevels::write(&std::env::temp_dir(), 2, 4, &levels).unwrap();
        assert_eq!(spilled.bytes(), (37 * 21 + 18 * 10 + 9 * 5) * 4);
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
    }

    #[test]
    fn a_directory_that_cannot_hold_the_file_is_an_error() {
        let missing = std::env::temp_dir().join("dtex-no-such-dir/below");
        assert!(SpilledLevels::write(&missing, 0, 4, &[level(4, 4, 0)]).is_err());
    }
}
