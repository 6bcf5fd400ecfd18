//! In-memory images: texel data held in memory, with an optional box-filtered mip chain
//! generated once at construction. Reads are row copies; nothing is locked.

use super::box_filter::filter_row;
use super::region::check_read;
use super::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::error::{Error, Result};
use crate::textures::{full_mip_levels, TexelFormat, TexelType, TileRegion, MAX_TEXTURE_SIZE};
use rayon::prelude::*;

/// Output texels per parallel task when generating mips (small levels run on one thread).
const MIP_TEXELS_PER_TASK: usize = 16 * 1024;

/// One stored mip level: tightly packed rows.
#[derive(Clone, PartialEq, Eq)]
struct Level {
    width: u32,
    height: u32,
    data: Vec<u8>,
}

/// An image held in memory: level 0 as given and, on request, a full mip chain down to 1×1.
///
/// Each texel of level `l + 1` is the `f32` average of the 2×2 texels of level `l` it
/// covers (decoded from the stored, encoded level `l`), encoded back to the image's format.
/// Where a side of level `l` is odd, the last texel of level `l + 1` along that side also
/// takes in the extra last column or row (a 3-texel box), so every texel contributes; a
/// side of 1 stays 1.
#[derive(Clone, PartialEq, Eq)]
pub struct InMemoryImage {
    format: TexelFormat,
    /// Finest first; `levels[0]` is the image as given.
    levels: Vec<Level>,
}

impl std::fmt::Debug for InMemoryImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryImage")
            .field("width", &self.levels[0].width)
            .field("height", &self.levels[0].height)
            .field("format", &self.format)
            .field("num_levels", &self.levels.len())
            .finish_non_exhaustive()
    }
}

impl InMemoryImage {
    /// An image from row-major level-0 `data`: `channels` components of `texel_type` per
    /// texel, little-endian, no row padding. Three-channel data is widened to four with an
    /// alpha of 1. With `generate_mips` the full chain is built now (in parallel).
    ///
    /// Errors: [`Error::InvalidArgument`] for a side outside 1..=65536 or a `data` length
    /// that is not exactly `width × height × channels × component bytes`;
    /// [`Error::Unsupported`] for a channel count outside 1..=4.
    pub fn new(
        width: u32,
        height: u32,
        texel_type: TexelType,
        channels: u32,
        data: Vec<u8>,
        generate_mips: bool,
    ) -> Result<InMemoryImage> {
        check_size(width, height)?;
        if !(1..=4).contains(&channels) {
            return Err(Error::Unsupported(format!(
                "{channels} channels (1 to 4 are accepted; 3 is widened to 4)"
            )));
        }
        let expected = width as u64 * height as u64 * channels as u64 * texel_type.bytes() as u64;
        if data.len() as u64 != expected {
            return Err(Error::InvalidArgument(format!(
                "a {width}×{height} image of {channels} {texel_type:?} components per texel needs \
                 {expected} bytes, got {}",
                data.len()
            )));
        }
        let (format, data) = if channels == 3 {
            let format = TexelFormat {
                texel_type,
                channels: 4,
            };
            (format, widen_to_four_channels(format, &data))
        } else {
            (TexelFormat::new(texel_type, channels)?, data)
        };
        Ok(InMemoryImage::from_level0(
            Level {
                width,
                height,
                data,
            },
            format,
            generate_mips,
        ))
    }

    /// An image from row-major `f32` RGBA pixels, encoded to `format` (1, 2 or 4 channels;
    /// the first `channels` components are kept). With `generate_mips` the full chain is
    /// built now.
    ///
    /// Errors: [`Error::InvalidArgument`] for a side outside 1..=65536 or a pixel count
    /// other than `width × height`; [`Error::Unsupported`] for a format that is not 1, 2 or
    /// 4 channels.
    pub fn from_rgba_f32(
        width: u32,
        height: u32,
        format: TexelFormat,
        pixels: &[[f32; 4]],
        generate_mips: bool,
    ) -> Result<InMemoryImage> {
        check_size(width, height)?;
        let format = TexelFormat::new(format.texel_type, format.channels)?;
        let expected = width as u64 * height as u64;
        if pixels.len() as u64 != expected {
            return Err(Error::InvalidArgument(format!(
                "a {width}×{height} image needs {expected} pixels, got {}",
                pixels.len()
            )));
        }
        let texel_bytes = format.texel_bytes();
        let bytes = pixels.len().checked_mul(texel_bytes).ok_or_else(|| {
            Error::InvalidArgument(format!("a {width}×{height} image does not fit in memory"))
        })?;
        let mut data = vec![0u8; bytes];
        format.encode_row(pixels, &mut data);
        Ok(InMemoryImage::from_level0(
            Level {
                width,
                height,
                data,
            },
            format,
            generate_mips,
        ))
    }

    /// Build the image from a checked level 0.
    fn from_level0(level0: Level, format: TexelFormat, generate_mips: bool) -> InMemoryImage {
        let num_levels = if generate_mips {
            full_mip_levels(level0.width, level0.height)
        } else {
            1
        };
        let mut levels = Vec::with_capacity(num_levels as usize);
        levels.push(level0);
        while levels.len() < num_levels as usize {
            let next = downsample(format, &levels[levels.len() - 1]);
            levels.push(next);
        }
        InMemoryImage { format, levels }
    }

    /// The texel format of every level (three-channel input is reported as four).
    pub fn format(&self) -> TexelFormat {
        self.format
    }

    /// Number of stored levels: the full chain with mips, else 1.
    pub fn num_levels(&self) -> u32 {
        self.levels.len() as u32
    }

    /// Level `level`'s width, height and packed texel bytes; `None` past the last level.
    pub fn level(&self, level: u32) -> Option<(u32, u32, &[u8])> {
        self.levels
            .get(level as usize)
            .map(|l| (l.width, l.height, l.data.as_slice()))
    }

    fn info(&self) -> ImageInfo {
        ImageInfo {
            width: self.levels[0].width,
            height: self.levels[0].height,
            format: self.format,
            num_levels: self.num_levels(),
        }
    }
}

/// Check that both sides are 1..=[`MAX_TEXTURE_SIZE`].
fn check_size(width: u32, height: u32) -> Result<()> {
    if width == 0 || height == 0 || width > MAX_TEXTURE_SIZE || height > MAX_TEXTURE_SIZE {
        return Err(Error::InvalidArgument(format!(
            "image size {width}×{height} (each side must be 1..={MAX_TEXTURE_SIZE})"
        )));
    }
    Ok(())
}

/// Widen packed three-component texels to `format` (four components) with an alpha of 1.
fn widen_to_four_channels(format: TexelFormat, rgb: &[u8]) -> Vec<u8> {
    let component = format.texel_type.bytes();
    let mut opaque = [0u8; 16];
    format.encode([0.0, 0.0, 0.0, 1.0], &mut opaque);
    let alpha = &opaque[3 * component..4 * component];
    let mut out = Vec::with_capacity(rgb.len() / 3 * 4);
    for texel in rgb.chunks_exact(3 * component) {
        out.extend_from_slice(texel);
        out.extend_from_slice(alpha);
    }
    out
}

/// The next coarser level of `src`: a box filter in `f32`, encoded back to `format`.
fn downsample(format: TexelFormat, src: &Level) -> Level {
    let (sw, sh) = (src.width as usize, src.height as usize);
    let (dw, dh) = ((sw / 2).max(1), (sh / 2).max(1));
    let texel_bytes = format.texel_bytes();
    let dst_row_bytes = dw * texel_bytes;
    let mut data = vec![0u8; dst_row_bytes * dh];
    data.par_chunks_mut(dst_row_bytes)
        .enumerate()
        .with_min_len((MIP_TEXELS_PER_TASK / dw).max(1))
        .for_each_init(Vec::new, |sums: &mut Vec<[f32; 4]>, (j, out)| {
            let src_row = |y: usize| &src.data[y * sw * texel_bytes..];
            filter_row(format, (sw, sh), (dw, dh), j, src_row, sums, out);
        });
    Level {
        width: dw as u32,
        height: dh as u32,
        data,
    }
}

impl ImageSource for InMemoryImage {
    fn name(&self) -> String {
        let info = self.info();
        format!("in-memory {}×{} {}", info.width, info.height, self.format)
    }

    fn open(&self) -> std::result::Result<ImageInfo, SourceError> {
        Ok(self.info())
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> std::result::Result<Readiness, SourceError> {
        check_read(&self.info(), region, dest.len(), row_bytes)?;
        if region.width == 0 || region.height == 0 {
            return Ok(Readiness::Ready);
        }
        let level = &self.levels[region.level as usize];
        let texel_bytes = self.format.texel_bytes();
        let src_row_bytes = level.width as usize * texel_bytes;
        let n = region.width as usize * texel_bytes;
        for j in 0..region.height as usize {
            let src = (region.y as usize + j) * src_row_bytes + region.x as usize * texel_bytes;
            let dst = j * row_bytes;
            dest[dst..dst + n].copy_from_slice(&level.data[src..src + n]);
        }
        Ok(Readiness::Ready)
    }
}

#[cfg(test)]
mod tests;
