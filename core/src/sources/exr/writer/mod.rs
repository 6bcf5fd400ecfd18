//! The tiled, mip-mapped OpenEXR writer: [`write_mip_exr`] (what `demandtex convert`
//! writes, and what [`ExrSource`](super::ExrSource) serves fastest).
//!
//! One part, channels `Y` / `Y A` / `R G B` / `R G B A` by channel count, half or float
//! samples, tiles of the requested size, mip levels rounded down and computed by
//! [`build_mips`] (or a single level). Tiles are compressed in parallel (rayon) in batches
//! and written in increasing order, to `OUT.tmp` first, which is renamed to `OUT` once
//! complete.

mod options;
#[cfg(test)]
mod tests;

pub use options::{
    channel_names, Compression, SampleType, WriteOptions, WrittenFile, MAX_TILE_SIDE,
};

pub(crate) use options::exr_compression_name;

use crate::error::{Error, Result};
use crate::sources::mips::build_mips;
use crate::sources::FloatImage;
use exr::block::writer::ChunksWriter;
use exr::block::{BlockIndex, UncompressedBlock};
use exr::math::{RoundingMode, Vec2};
use exr::meta::attribute::{ChannelDescription, LevelMode, LineOrder, Text, TileDescription};
use exr::meta::header::Header;
use exr::meta::{BlockDescription, Headers, TileIndices};
use exr::prelude::{f16, SmallVec};
use rayon::prelude::*;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Writes `image` to `path` as a tiled, mip-mapped OpenEXR file (see [`WriteOptions`]).
///
/// The file is written to `path` + `.tmp` and renamed to `path` when complete, so `path`
/// is either the old file or the complete new one. `progress`, when given, is called with
/// (tiles written, total tiles) as tiles are written.
///
/// Errors: [`Error::InvalidArgument`] for a bad image ([`FloatImage::check`]), tile size
/// or output name; [`Error::Io`] naming the file when it cannot be written (nothing is left
/// behind).
pub fn write_mip_exr(
    path: &Path,
    image: &FloatImage,
    options: &WriteOptions,
    progress: Option<&dyn Fn(u64, u64)>,
) -> Result<WrittenFile> {
    image.check()?;
    options.check()?;
    let coarser = if options.mips {
        build_mips(image, options.filter)
    } else {
        Vec::new()
    };
    let levels: Vec<&FloatImage> = std::iter::once(image).chain(coarser.iter()).collect();
    let header = make_header(image, options);
    let names = channel_names(image.channels);
    // Channels in file order (sorted by name) as indices into the texel.
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| names[i]);

    let bytes_on_disk = write_via_tmp(path, |tmp| {
        write_tiles(tmp, header, &levels, &order, options, progress)
    })?;
    let decoded_bytes = levels
        .iter()
        .map(|l| l.data.len() as u64 * options.sample_type.bytes() as u64)
        .sum();
    Ok(WrittenFile {
        path: path.to_path_buf(),
        width: image.width,
        height: image.height,
        channels: order.iter().map(|&i| names[i].to_string()).collect(),
        levels: levels.len() as u32,
        chunks: options.chunk_count(image.width, image.height),
        bytes_on_disk,
        decoded_bytes,
    })
}

/// Write a file through `write(path.tmp)`, then rename it into place: a failed write
/// leaves nothing behind and never a half-written `path`. Returns the file's size.
/// Errors: [`Error::InvalidArgument`] for a path without a file name, [`Error::Io`]
/// naming the file otherwise.
pub fn write_via_tmp(
    path: &Path,
    write: impl FnOnce(&Path) -> std::result::Result<(), String>,
) -> Result<u64> {
    let io_error = |message: String| Error::Io {
        path: path.display().to_string(),
        message,
    };
    let tmp = tmp_path(path)?;
    let result = write(&tmp).and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(format!("cannot write: {e}")));
    }
    Ok(std::fs::metadata(path)
        .map_err(|e| io_error(format!("cannot stat: {e}")))?
        .len())
}

/// `path` with `.tmp` appended to its file name.
fn tmp_path(path: &Path) -> Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!("output {} is not a file name", path.display()))
    })?;
    let mut tmp = name.to_os_string();
    tmp.push(".tmp");
    Ok(path.with_file_name(tmp))
}

fn make_header(image: &FloatImage, options: &WriteOptions) -> Header {
    let sample_type = match options.sample_type {
        SampleType::Half => exr::meta::attribute::SampleType::F16,
        SampleType::Float => exr::meta::attribute::SampleType::F32,
    };
    let mut channels: Vec<ChannelDescription> = channel_names(image.channels)
        .iter()
        .map(|&n| ChannelDescription::named(n, sample_type))
        .collect();
    channels.sort_by(|a, b| a.name.cmp(&b.name));
    let size = Vec2(image.width as usize, image.height as usize);
    let blocks = BlockDescription::Tiles(TileDescription {
        tile_size: Vec2(options.tile.0 as usize, options.tile.1 as usize),
        level_mode: if options.mips {
            LevelMode::MipMap
        } else {
            LevelMode::Singular
        },
        rounding_mode: RoundingMode::Down,
    });
    let mut header = Header::new(Text::from(""), size, SmallVec::from_vec(channels)).with_encoding(
        options.compression.to_exr(),
        blocks,
        LineOrder::Increasing,
    );
    header.own_attributes.layer_name = None;
    header.own_attributes.software_name = Some(Text::from("demandtex convert"));
    header
}

/// Compresses and writes all tiles to `tmp`; errors as text (the caller names the file).
fn write_tiles(
    tmp: &Path,
    header: Header,
    levels: &[&FloatImage],
    order: &[usize],
    options: &WriteOptions,
    progress: Option<&dyn Fn(u64, u64)>,
) -> std::result::Result<(), String> {
    let file = File::create(tmp).map_err(|e| e.to_string())?;
    let headers: Headers = SmallVec::from_vec(vec![header]);
    let tile = options.tile;
    let sample_type = options.sample_type;
    exr::block::write(BufWriter::new(file), headers, true, |meta, writer| {
        let blocks: Vec<(usize, TileIndices)> =
            meta.headers[0].enumerate_ordered_blocks().collect();
        let total = blocks.len() as u64;
        if let Some(p) = progress {
            p(0, total);
        }
        // Enough tiles per batch to keep every thread busy, few enough to bound memory.
        let batch = (rayon::current_num_threads() * 16).max(64);
        let mut done = 0u64;
        for group in blocks.chunks(batch) {
            let chunks = group
                .par_iter()
                .map(|&(index, t)| {
                    let block = tile_block(levels, order, tile, sample_type, t);
                    block.compress_to_chunk(&meta.headers).map(|c| (index, c))
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            for (index, chunk) in chunks {
                writer.write_chunk(index, chunk)?;
            }
            done += group.len() as u64;
            if let Some(p) = progress {
                p(done, total);
            }
        }
        Ok(())
    })
    .map_err(|e| e.to_string())
}

/// The uncompressed samples of one tile: per row, per channel (file order), the texels,
/// native-endian.
fn tile_block(
    levels: &[&FloatImage],
    order: &[usize],
    tile: (u32, u32),
    sample_type: SampleType,
    t: TileIndices,
) -> UncompressedBlock {
    let level = t.location.level_index.x();
    let img = levels[level];
    let c = img.channels as usize;
    let w = img.width as usize;
    let x0 = t.location.tile_index.x() * tile.0 as usize;
    let y0 = t.location.tile_index.y() * tile.1 as usize;
    // Clipped at the level's edge. (Not `t.size`: exr 1.74 computes partial tile sizes
    // from the tile index instead of its position there.)
    let tw = (tile.0 as usize).min(w - x0);
    let th = (tile.1 as usize).min(img.height as usize - y0);
    let mut data = Vec::with_capacity(tw * th * order.len() * sample_type.bytes());
    for y in y0..y0 + th {
        let row = &img.data[(y * w + x0) * c..(y * w + x0 + tw) * c];
        for &k in order {
            let samples = row.iter().skip(k).step_by(c);
            match sample_type {
                SampleType::Half => {
                    for &v in samples {
                        data.extend_from_slice(&f16::from_f32(v).to_bits().to_ne_bytes());
                    }
                }
                SampleType::Float => {
                    for &v in samples {
                        data.extend_from_slice(&v.to_ne_bytes());
                    }
                }
            }
        }
    }
    UncompressedBlock {
        index: BlockIndex {
            layer: 0,
            pixel_position: Vec2(x0, y0),
            pixel_size: Vec2(tw, th),
            level: t.location.level_index,
        },
        data,
    }
}
