//! Mip levels generated in memory for files that do not store a usable chain (scan-line
//! files, single-level tiled files, mips rounded up): the same box filter as
//! [`crate::sources::InMemoryImage`], computed in horizontal bands on scoped threads.
//!
//! Scoped OS threads rather than rayon: generation runs inside a fill task on the loader's
//! rayon pool while other fill tasks of the same texture wait for it; a rayon join here
//! could steal one of those tasks onto this very thread and deadlock it on itself.

use crate::sources::box_filter::{box_span, filter_row};
use crate::sources::spill::{SpillLedger, SpillSlot};
use crate::sources::{ImageInfo, SourceError};
use crate::textures::TexelFormat;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Source bytes a band aims at (it is at least one row unit).
const BAND_BYTES: usize = 4 << 20;
/// Below this many output texels a level is filtered on the calling thread.
const PARALLEL_TEXELS: usize = 64 * 1024;

/// One generated level: packed rows of the source's texel format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GenLevel {
    /// Width in texels.
    pub width: usize,
    /// Height in texels.
    pub height: usize,
    /// Packed rows.
    pub data: Vec<u8>,
}

impl std::fmt::Debug for GeneratedLevels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratedLevels")
            .field("first", &self.first)
            .field("levels", &self.levels)
            .field("spilled", &self.spilled.is_set())
            .finish()
    }
}

/// The levels a source generates past its last stored one (`first` onwards), made on
/// first use from that level's rows and kept (or the error that stopped them): what the
/// TIFF and DDS sources serve for levels their file lacks.
pub(crate) struct GeneratedLevels {
    first: u32,
    levels: crate::sources::remade::Remade<Result<Vec<GenLevel>, SourceError>>,
    /// The levels written to a file ([`Self::spill`]): read from there since.
    spilled: SpillSlot,
}

impl GeneratedLevels {
    /// Levels `first..` to be generated from level `first - 1` ([`Self::read`], `first`
    /// ≥ 1), or made by the caller ([`Self::read_with`]; 0: every level, as a PNG's
    /// decode).
    pub fn new(first: u32) -> GeneratedLevels {
        GeneratedLevels {
            first,
            levels: crate::sources::remade::Remade::new(),
            spilled: SpillSlot::default(),
        }
    }

    /// The levels generated for `info` ([`ImageSource::whole_decode`](crate::sources::ImageSource::whole_decode));
    /// `None` once they were spilled.
    pub fn whole_decode(&self, info: &ImageInfo) -> Option<crate::sources::WholeDecode> {
        if self.spilled.is_set() {
            return None;
        }
        crate::sources::whole_decode_of_levels(info, self.first)
    }

    /// Write the levels held now to an unnamed file in `dir`, and read them from there
    /// from then on ([`ImageSource::spill_decoded`](crate::sources::ImageSource::spill_decoded)).
    /// The bytes written (0: nothing held, or spilled already). `name` names the source
    /// in an error.
    pub fn spill(
        &self,
        dir: &std::path::Path,
        ledger: &SpillLedger,
        info: &ImageInfo,
        name: &str,
    ) -> Result<u64, SourceError> {
        let Some(held) = self.levels.held() else {
            return Ok(0);
        };
        let Ok(levels) = held.as_ref() else {
            return Ok(0);
        };
        self.spilled
            .fill(dir, ledger, self.first, info.format.texel_bytes(), levels)
            .map_err(|e| {
                SourceError(format!(
                    "{name}: cannot spill levels {}.. to {}: {e}",
                    self.first,
                    dir.display()
                ))
            })
    }

    /// Drop the generated levels; the next read of one generates them again.
    pub fn release(&self) {
        self.levels.release();
    }

    /// Drop the levels and their spill file: the source's file is read again at the next
    /// read (a source opened again).
    pub fn reset(&self) {
        self.levels.release();
        self.spilled.clear();
    }

    /// Whether the levels are held in memory now.
    pub fn is_made(&self) -> bool {
        self.levels.is_made()
    }

    /// Whether the levels are read from a spill file.
    pub fn is_spilled(&self) -> bool {
        self.spilled.is_set()
    }

    /// Serve `region` of a source whose levels `0..first` are stored: a stored level
    /// through `read_stored`; a later one from the levels generated (on first use) from
    /// level `first - 1`, whose size is `base`, read through `read_stored` in bands of
    /// `row_unit` rows on `mip_threads` threads (0: one per core; resolved only when the
    /// levels are generated, since asking the system costs system calls).
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        &self,
        info: &ImageInfo,
        base: (u32, u32),
        row_unit: usize,
        mip_threads: usize,
        region: crate::textures::TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
        read_stored: &ReadStored<'_>,
    ) -> Result<(), SourceError> {
        if region.level < self.first {
            return read_stored(region, dest, row_bytes);
        }
        let tb = info.format.texel_bytes();
        self.read_with(region, dest, row_bytes, tb, || {
            let level = self.first - 1;
            let (w, h) = (base.0 as usize, base.1 as usize);
            let read_base = |y: usize, rows: usize, band: &mut [u8]| {
                let rows_region = crate::textures::TileRegion {
                    level,
                    x: 0,
                    y: y as u32,
                    width: w as u32,
                    height: rows as u32,
                };
                read_stored(rows_region, band, w * tb)
            };
            let count = (info.num_levels - level) as usize;
            let threads = threads(mip_threads);
            generate(info.format, (w, h), count, row_unit, threads, &read_base)
        })
    }

    /// Serve `region` of a generated level (`region.level ≥ first`, `texel_bytes` a
    /// texel): from the spill file if the levels were spilled, else from the levels held,
    /// made by `make` if none are.
    pub fn read_with(
        &self,
        region: crate::textures::TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
        texel_bytes: usize,
        make: impl FnOnce() -> Result<Vec<GenLevel>, SourceError>,
    ) -> Result<(), SourceError> {
        if let Some(spilled) = self.spilled.get().filter(|s| s.holds(region.level)) {
            return spilled.read_region(region, dest, row_bytes);
        }
        let levels = self.levels.get_or_make(make);
        let levels = levels.as_ref().as_ref().map_err(Clone::clone)?;
        let level = region
            .level
            .checked_sub(self.first)
            .and_then(|i| levels.get(i as usize))
            .ok_or_else(|| SourceError(format!("level {} was not generated", region.level)))?;
        let tb = texel_bytes;
        if region.x as usize + region.width as usize > level.width
            || region.y as usize + region.height as usize > level.height
        {
            return Err(SourceError(format!(
                "{region:?} is outside its {}×{} level",
                level.width, level.height
            )));
        }
        let n = region.width as usize * tb;
        for j in 0..region.height as usize {
            let src = ((region.y as usize + j) * level.width + region.x as usize) * tb;
            dest[j * row_bytes..j * row_bytes + n].copy_from_slice(&level.data[src..src + n]);
        }
        Ok(())
    }
}

/// Write `region` of a stored level into the buffer given (rows `row_bytes` apart).
pub(crate) type ReadStored<'a> =
    dyn Fn(crate::textures::TileRegion, &mut [u8], usize) -> Result<(), SourceError> + Sync + 'a;

/// Threads for generation: `asked`, or one per core when 0.
pub(crate) fn threads(asked: usize) -> usize {
    match asked {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Rows `[y, y + rows)` of a level, packed, into the buffer given.
pub(crate) type ReadRows<'a> =
    dyn Fn(usize, usize, &mut [u8]) -> Result<(), SourceError> + Sync + 'a;

/// Levels 1 to `num_levels - 1` of a `width × height` level 0 whose rows `read_level0`
/// provides. Bands of level 0 start at multiples of `row_unit` rows (the file's block
/// height), so each file block is decoded once.
pub(crate) fn generate(
    format: TexelFormat,
    (width, height): (usize, usize),
    num_levels: usize,
    row_unit: usize,
    threads: usize,
    read_level0: &ReadRows<'_>,
) -> Result<Vec<GenLevel>, SourceError> {
    let mut levels: Vec<GenLevel> = Vec::with_capacity(num_levels.saturating_sub(1));
    if num_levels < 2 {
        return Ok(levels);
    }
    levels.push(downsample(
        format,
        (width, height),
        row_unit,
        threads,
        read_level0,
    )?);
    while levels.len() + 1 < num_levels {
        let prev = &levels[levels.len() - 1];
        let row_bytes = prev.width * format.texel_bytes();
        let copy = |y: usize, rows: usize, dest: &mut [u8]| {
            dest.copy_from_slice(&prev.data[y * row_bytes..(y + rows) * row_bytes]);
            Ok(())
        };
        let next = downsample(format, (prev.width, prev.height), 1, threads, &copy)?;
        levels.push(next);
    }
    Ok(levels)
}

/// The next coarser level of a `sw × sh` level read through `read_rows`.
fn downsample(
    format: TexelFormat,
    (sw, sh): (usize, usize),
    row_unit: usize,
    threads: usize,
    read_rows: &ReadRows<'_>,
) -> Result<GenLevel, SourceError> {
    let tb = format.texel_bytes();
    let (dw, dh) = ((sw / 2).max(1), (sh / 2).max(1));
    let (src_row_bytes, dst_row_bytes) = (sw * tb, dw * tb);
    let unit = row_unit.max(1) * if row_unit % 2 == 0 { 1 } else { 2 };
    let band_src_rows = unit * (BAND_BYTES / src_row_bytes / unit).max(1);
    let band_out_rows = band_src_rows / 2;
    let mut data = vec![0u8; dst_row_bytes * dh];
    let bands = data.chunks_mut(band_out_rows * dst_row_bytes).enumerate();
    let n_bands = bands.len();
    let work = Mutex::new(bands);
    let failed = AtomicBool::new(false);
    let first_error = Mutex::new(None);
    let worker = || {
        let mut src = Vec::new();
        let mut sums = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let Some((b, out)) = work.lock().next() else {
                break;
            };
            let j0 = b * band_out_rows;
            let j1 = j0 + out.len() / dst_row_bytes;
            let y0 = box_span(j0, dh, sh).0;
            let y1 = box_span(j1 - 1, dh, sh).1;
            src.resize((y1 - y0) * src_row_bytes, 0);
            if let Err(e) = read_rows(y0, y1 - y0, &mut src) {
                failed.store(true, Ordering::Relaxed);
                first_error.lock().get_or_insert(e);
                break;
            }
            for (j, row) in (j0..j1).zip(out.chunks_exact_mut(dst_row_bytes)) {
                let src_row = |y: usize| &src[(y - y0) * src_row_bytes..];
                filter_row(format, (sw, sh), (dw, dh), j, src_row, &mut sums, row);
            }
        }
    };
    let threads = threads
        .min(n_bands)
        .min((dw * dh).div_ceil(PARALLEL_TEXELS))
        .max(1);
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 1..threads {
                s.spawn(worker);
            }
            worker();
        });
    }
    if let Some(e) = first_error.into_inner() {
        return Err(e);
    }
    Ok(GenLevel {
        width: dw,
        height: dh,
        data,
    })
}
