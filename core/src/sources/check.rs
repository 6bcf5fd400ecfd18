//! Whole-file verification: read every texel a texture could ever serve, through the same
//! code the engine serves it with, and report the first error (or that the file is whole)
//! with optional per-channel statistics of level 0. `demandtex info --check` is a front
//! end of this module; a pipeline runs it over a texture library before a render.
//!
//! - [`check_source`] walks any [`ImageSource`] as the engine's fills do: `open`, the mip
//!   tail (`read_mip_tail`, one buffer for every tail level), then every tile of every
//!   tiled level (`read_tile`, regions from the engine's own [`TextureLayout`]). For an
//!   OpenEXR file the source is [`ExrSource`](super::ExrSource): every chunk is read and
//!   decoded, generated levels included.
//! - [`check_ptex`] walks a [`PtexFile`]: every stored level of every face, tiled blocks
//!   tile by tile ([`PtexFile::read_tile`]), others whole ([`PtexFile::read_level`]).
//!
//! A panic in a source or the reader is contained and reported as an error. A "not yet"
//! answer is an error too: a check wants the whole file now.
//!
//! Statistics ([`ChannelStats`]) are over the finite values of level 0, per stored
//! channel, as `f32` (integers normalised to [0, 1]); NaN and infinities are counted apart.

use super::ptex::{values, FaceData, PtexError, PtexFile};
use super::{tail_levels, ImageSource, Readiness, SourceError};
use crate::textures::{TexelFormat, TextureLayout};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Why [`check_source`] stopped: the source could not be opened (a format or variant that
/// is not served, or a header too damaged to describe the image), or a read of its texels
/// failed (damaged data). Both name the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// `open` failed: nothing was read past the header.
    Open(SourceError),
    /// The mip tail or a tile could not be read.
    Read(SourceError),
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::Open(e) | CheckError::Read(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CheckError {}

/// Min, max and mean of one channel over level 0.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ChannelStats {
    /// Smallest finite value (`+inf` when none is finite).
    pub min: f64,
    /// Largest finite value (`-inf` when none is finite).
    pub max: f64,
    /// Mean of the finite values (0 when none is finite).
    pub mean: f64,
    /// Values that were NaN or infinite.
    pub non_finite: u64,
}

/// What a whole-file check read.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CheckReport {
    /// Mip levels (image sources) or the most stored levels of any face (Ptex).
    pub levels: u32,
    /// Reads made: tiles and the mip tail (image sources); tiles and whole face levels
    /// (Ptex).
    pub reads: u64,
    /// Texels of level 0 (every face's, for Ptex).
    pub level0_texels: u64,
    /// Per channel of level 0, when asked for.
    pub stats: Option<Vec<ChannelStats>>,
}

/// Running per-channel sums.
struct Accumulator {
    channels: Vec<(f64, f64, f64, u64, u64)>, // min, max, sum, finite, non-finite
}

impl Accumulator {
    fn new(channels: usize) -> Accumulator {
        Accumulator {
            channels: vec![(f64::INFINITY, f64::NEG_INFINITY, 0.0, 0, 0); channels],
        }
    }

    /// Add `weight` texels of value `texel` (one value per channel).
    fn add(&mut self, texel: &[f32], weight: u64) {
        for (c, &v) in self.channels.iter_mut().zip(texel) {
            if v.is_finite() {
                let v = f64::from(v);
                c.0 = c.0.min(v);
                c.1 = c.1.max(v);
                c.2 += v * weight as f64;
                c.3 += weight;
            } else {
                c.4 += weight;
            }
        }
    }

    fn finish(self) -> Vec<ChannelStats> {
        self.channels
            .into_iter()
            .map(|(min, max, sum, n, non_finite)| ChannelStats {
                min,
                max,
                mean: if n == 0 { 0.0 } else { sum / n as f64 },
                non_finite,
            })
            .collect()
    }
}

/// Statistics of interleaved samples, `channels` per texel (for images decoded whole, as
/// `demandtex convert` decodes PNG, JPEG and TIFF inputs).
pub fn channel_stats(channels: usize, samples: &[f32]) -> Vec<ChannelStats> {
    let mut acc = Accumulator::new(channels);
    for texel in samples.chunks_exact(channels.max(1)) {
        acc.add(texel, 1);
    }
    acc.finish()
}

/// Run `f`, turning a panic into an error.
fn contained<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        Err(format!("panicked: {what}"))
    })
}

/// A read's answer as a check sees it: "not yet" is a failure.
fn ready(r: Result<Readiness, SourceError>) -> Result<(), String> {
    match r {
        Ok(Readiness::Ready) => Ok(()),
        Ok(Readiness::NotYet) => Err("the source answered \"not yet\"".into()),
        Err(e) => Err(e.0),
    }
}

/// Add the `width × height` texels of packed rows `data` in `format`.
fn add_texels(acc: &mut Accumulator, format: TexelFormat, data: &[u8]) {
    let tb = format.texel_bytes();
    let n = format.channels as usize;
    for texel in data.chunks_exact(tb) {
        acc.add(&format.decode(texel)[..n], 1);
    }
}

/// Read every texel `source` can serve, as the engine would (see the module docs).
/// Errors: the first failure, naming the source and what was being read.
pub fn check_source(source: &dyn ImageSource, stats: bool) -> Result<CheckReport, CheckError> {
    let name = source.name();
    let fail =
        |what: String, e: String| CheckError::Read(SourceError(format!("{name}: {what}: {e}")));
    // The source's own message names the file more often than not: said once.
    let open_failed = |e: String| {
        CheckError::Open(SourceError(match e.contains(&name) {
            true => e,
            false => format!("{name}: {e}"),
        }))
    };
    let info = contained(|| source.open().map_err(|e| e.0)).map_err(open_failed)?;
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)
        .map_err(|e| open_failed(e.to_string()))?;
    let format = info.format;
    let tb = format.texel_bytes();
    let mut acc = stats.then(|| Accumulator::new(format.channels as usize));
    let mut reads = 0;
    let levels = tail_levels(&layout);
    if !levels.is_empty() {
        let mut tail = vec![0u8; layout.mip_tail_bytes as usize];
        contained(|| ready(source.read_mip_tail(&levels, &mut tail)))
            .map_err(|e| fail("reading the mip tail".into(), e))?;
        reads += 1;
        if let (Some(acc), Some(l0)) = (acc.as_mut(), levels.first()) {
            if l0.region.level == 0 {
                let end = l0.offset + l0.row_bytes * l0.region.height as usize;
                add_texels(acc, format, &tail[l0.offset..end]);
            }
        }
    }
    let mut buf = vec![0u8; (layout.tile_width * layout.tile_height) as usize * tb];
    for level in 0..layout.mip_tail_first_level {
        let l = layout.levels[level as usize];
        for ty in 0..l.tiles_y {
            for tx in 0..l.tiles_x {
                let region = layout.tile_region(level, tx, ty);
                let row_bytes = region.width as usize * tb;
                let dest = &mut buf[..row_bytes * region.height as usize];
                contained(|| ready(source.read_tile(region, dest, row_bytes)))
                    .map_err(|e| fail(format!("reading level {level} tile ({tx}, {ty})"), e))?;
                reads += 1;
                if let (Some(acc), 0) = (acc.as_mut(), level) {
                    add_texels(acc, format, dest);
                }
            }
        }
    }
    Ok(CheckReport {
        levels: layout.num_levels(),
        reads,
        level0_texels: u64::from(info.width) * u64::from(info.height),
        stats: acc.map(Accumulator::finish),
    })
}

/// Read every stored level of every face of `file` (see the module docs). Errors: the
/// first failure, naming the file, the face and the level.
pub fn check_ptex(file: &PtexFile, stats: bool) -> Result<CheckReport, SourceError> {
    contained(|| walk_ptex(file, stats)).map_err(|e| match e.starts_with("panicked") {
        true => SourceError(format!("ptex file {}: the reader {e}", file.name())),
        false => SourceError(e),
    })
}

fn walk_ptex(file: &PtexFile, stats: bool) -> Result<CheckReport, String> {
    let channels = file.num_channels();
    let data_type = file.data_type();
    let mut acc = stats.then(|| Accumulator::new(channels));
    let mut texel = vec![0f32; channels];
    let mut add = |acc: &mut Accumulator, data: &FaceData| {
        let texels = data.res().texels() as u64;
        if data.is_constant() {
            values::to_f32(data_type, data.bytes(), &mut texel);
            acc.add(&texel, texels);
        } else {
            for t in data.bytes().chunks_exact(data.pixel_size()) {
                values::to_f32(data_type, t, &mut texel);
                acc.add(&texel, 1);
            }
        }
    };
    let (mut reads, mut levels, mut level0_texels) = (0, 0, 0);
    for face in 0..file.num_faces() as u32 {
        let at = |e: PtexError| format!("{e} (checking face {face})");
        let stored = file.stored_levels(face).map_err(at)?;
        levels = levels.max(stored as u32);
        level0_texels += file.face_info(face).map_err(at)?.res.texels() as u64;
        for level in 0..stored {
            let at = |e: PtexError| format!("{e} (checking face {face}, level {level})");
            let block = file.block(face, level).map_err(at)?;
            let tiles = block.tiles.map_or(0, |t| t.tiles.len());
            let mut each = |data: FaceData| {
                reads += 1;
                if let (Some(acc), 0) = (acc.as_mut(), level) {
                    add(acc, &data);
                }
            };
            if tiles == 0 {
                each(file.read_level(face, level).map_err(at)?);
            } else {
                for tile in 0..tiles {
                    each(file.read_tile(face, level, tile).map_err(at)?);
                }
            }
        }
    }
    Ok(CheckReport {
        levels,
        reads,
        level0_texels,
        stats: acc.map(Accumulator::finish),
    })
}

#[cfg(test)]
mod tests;
