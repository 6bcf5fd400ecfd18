//! [`describe`]: what an OpenEXR file holds and how an [`ExrSource`](super::ExrSource)
//! would serve it, from its headers and offset tables only (no pixel is decoded, so it is
//! instant on a huge file). `demandtex info` prints it.
//!
//! The file is read by the same code as the source's ([`RawFile::read`]) and
//! [`ExrDescription::served`] is the source's own rule ([`Served::new`]): where the source
//! would refuse the file, `served` holds the very error
//! [`ExrSource::open`](crate::sources::ImageSource::open) gives.

use super::file::RawFile;
use super::handles::OpenFile;
use super::serve::Served;
use super::writer::exr_compression_name;
use super::ChannelSelection;
use crate::error::panic_message;
use crate::sources::limits::SizeLimits;
use crate::sources::SourceError;
use crate::textures::TexelFormat;
use exr::math::RoundingMode;
use exr::meta::attribute::{AttributeValue, LevelMode, LineOrder, SampleType};
use exr::meta::header::Header;
use exr::meta::{mip_map_levels, rip_map_levels, BlockDescription};
use serde::Serialize;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// What an OpenEXR file holds, and how demandtex serves it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExrDescription {
    /// The file described.
    pub file: PathBuf,
    /// Size of the file.
    pub file_bytes: u64,
    /// Whether the file has several parts.
    pub multipart: bool,
    /// Whether some part holds deep data.
    pub deep: bool,
    /// The parts, in file order.
    pub parts: Vec<PartDescription>,
    /// What an [`ExrSource`](super::ExrSource) with the part and channels described for
    /// serves, or the error its [`open`](crate::sources::ImageSource::open) gives. Not
    /// serialised (callers choose how to show a refusal).
    #[serde(skip)]
    pub served: Result<ServedAs, SourceError>,
}

/// One part (layer) of an OpenEXR file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartDescription {
    /// The part name, when set.
    pub name: Option<String>,
    /// Data window width.
    pub width: u64,
    /// Data window height.
    pub height: u64,
    /// Data window top-left corner.
    pub origin: [i32; 2],
    /// Display window `[x, y, width, height]`.
    pub display_window: [i64; 4],
    /// Channels, in file order.
    pub channels: Vec<ChannelDescription>,
    /// The order chunks were written in.
    pub line_order: ExrLineOrder,
    /// `none`, `rle`, `zips`, `zip`, `piz`, `pxr24`, `b44`, `b44a`, `dwaa`, `dwab`,
    /// `htj2k32` or `htj2k256` (the [`Compression`](super::Compression) names).
    pub compression: &'static str,
    /// Scan lines or tiles.
    pub storage: ExrStorage,
    /// Tile width and height (tiled parts).
    pub tile: Option<[u64; 2]>,
    /// One level, a mip map or a rip map.
    pub level_mode: ExrLevelMode,
    /// How level sizes are rounded (mip and rip maps).
    pub rounding: Option<ExrRounding>,
    /// Every level, finest first.
    pub levels: Vec<LevelDescription>,
    /// Chunks (tiles or scan-line blocks).
    pub chunks: u64,
    /// Bytes of this part's chunks in the file (from the offset tables).
    pub bytes_on_disk: u64,
    /// Bytes of all levels' samples, uncompressed (none for deep data).
    pub decoded_bytes: Option<u64>,
    /// `decoded_bytes / bytes_on_disk`.
    pub ratio: Option<f64>,
    /// Whether the part holds deep data.
    pub deep: bool,
    /// Attributes beyond the structural ones (owner, comments, software, custom ...), as
    /// text.
    pub attributes: BTreeMap<String, String>,
}

/// One channel of a part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelDescription {
    /// The channel name.
    pub name: String,
    /// The sample type.
    #[serde(rename = "type")]
    pub sample_type: ExrSampleType,
    /// x and y sampling (1 1 unless subsampled).
    pub sampling: [u64; 2],
}

/// One resolution level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LevelDescription {
    /// Level index (x and y; equal except in rip maps).
    pub level: [u64; 2],
    /// Width in texels.
    pub width: u64,
    /// Height in texels.
    pub height: u64,
}

/// What an [`ExrSource`](super::ExrSource) serves from a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServedAs {
    /// The part served.
    pub part: usize,
    /// The file's channels served, in component order.
    pub channels: Vec<String>,
    /// Whether a fourth component of 1 follows them (three channels served as four).
    pub constant_alpha: bool,
    /// The texel format served.
    pub format: TexelFormat,
    /// Level-0 width.
    pub width: u32,
    /// Level-0 height.
    pub height: u32,
    /// Levels served: the full chain, sizes rounded down.
    pub levels: u32,
    /// Levels `0..levels_from_file` are read from the file; the rest are generated in
    /// memory from the last of them when first read (slow).
    pub levels_from_file: u32,
    /// Why levels are generated (`None` when the file stores them all).
    pub generated_because: Option<&'static str>,
    /// Width and height of one full page (a 64 KiB cache tile, a GPU's sparse tile) of the
    /// format served.
    pub page_tile: [u32; 2],
    /// Width and height of a page on a CPU loader or cache: the file's tiles where they
    /// are smaller than a full page ([`crate::textures::file_tile_pages`];
    /// `LoaderOptions::pages_of_file_tiles`, on by default), else `page_tile`.
    pub cpu_page_tile: [u32; 2],
    /// File blocks (tiles, scan-line blocks) a full page decodes where they line up with
    /// pages; `None` where they do not (neighbouring pages share decoded blocks through a
    /// small cache).
    pub blocks_per_page: Option<u32>,
}

/// How a part stores its pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExrStorage {
    /// Blocks of scan lines.
    Scanline,
    /// Tiles.
    Tiled,
}

/// Which resolution levels a part stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExrLevelMode {
    /// One level.
    Single,
    /// A mip map (both sides halved per level).
    Mipmap,
    /// A rip map (each side halved on its own).
    Ripmap,
}

/// How level sizes are rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExrRounding {
    /// `floor(side / 2^l)` (what demandtex serves and writes).
    Down,
    /// `ceil(side / 2^l)`.
    Up,
}

/// The order of a part's chunks in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExrLineOrder {
    /// Top to bottom.
    Increasing,
    /// Bottom to top.
    Decreasing,
    /// Any order.
    Unspecified,
}

/// The type of a channel's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExrSampleType {
    /// 16-bit float.
    Half,
    /// 32-bit float.
    Float,
    /// 32-bit unsigned integer.
    Uint,
}

macro_rules! names {
    ($ty:ident { $($variant:ident => $name:literal),* $(,)? }) => {
        impl $ty {
            /// The name, as `demandtex info` prints it.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),*
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names!(ExrStorage { Scanline => "scanline", Tiled => "tiled" });
names!(ExrLevelMode { Single => "single", Mipmap => "mipmap", Ripmap => "ripmap" });
names!(ExrRounding { Down => "down", Up => "up" });
names!(ExrLineOrder {
    Increasing => "increasing",
    Decreasing => "decreasing",
    Unspecified => "unspecified",
});
names!(ExrSampleType { Half => "half", Float => "float", Uint => "uint" });

/// Describe the OpenEXR file at `path`, and what an [`ExrSource`](super::ExrSource) with
/// [`ExrOptions::part`](super::ExrOptions::part) `part` and
/// [`ExrOptions::channels`](super::ExrOptions::channels) `channels` serves from it. The file
/// is opened for this call only (no [`FileHandles`](super::FileHandles) set keeps it).
///
/// Errors (naming the file): the file cannot be opened, is not an OpenEXR file, or its
/// header or offset tables are unreadable or point outside the file (truncated or
/// corrupt). A file that parses but cannot be served is described, with the reason in
/// [`ExrDescription::served`].
pub fn describe(
    path: impl AsRef<Path>,
    part: usize,
    channels: &ChannelSelection,
) -> Result<ExrDescription, SourceError> {
    let path = path.as_ref();
    let file = OpenFile::open(path)
        .map_err(|e| SourceError(format!("{}: cannot open: {e}", path.display())))?;
    describe_open(path, &file, part, channels, &SizeLimits::default())
}

/// [`describe`] of the file `file`, open at `path`, served within `limits`.
pub(crate) fn describe_open(
    path: &Path,
    file: &OpenFile,
    part: usize,
    channels: &ChannelSelection,
    limits: &SizeLimits,
) -> Result<ExrDescription, SourceError> {
    let raw = RawFile::read(path, file)?;
    let parts = catch_unwind(AssertUnwindSafe(|| describe_parts(&raw)))
        .unwrap_or_else(|p| Err(format!("the EXR decoder panicked: {}", panic_message(&*p))))
        .map_err(|reason| SourceError(format!("{}: {reason}", path.display())))?;
    let file_bytes = raw.file_len;
    let multipart = raw.meta.requirements.has_multiple_layers;
    let deep = raw.meta.requirements.has_deep_data;
    let served = Served::new(path, raw, part, channels, limits).map(|s| ServedAs {
        part,
        channels: s.plan.names.clone(),
        constant_alpha: s.plan.format.channels as usize > s.plan.names.len(),
        format: s.info.format,
        width: s.info.width,
        height: s.info.height,
        levels: s.info.num_levels,
        levels_from_file: s.stored_levels,
        generated_because: s.generated_because(),
        page_tile: s.info.format.tile_extent().into(),
        cpu_page_tile: s.cpu_page_tile().into(),
        blocks_per_page: s.blocks_per_page(),
    });
    Ok(ExrDescription {
        file: path.to_path_buf(),
        file_bytes,
        multipart,
        deep,
        parts,
        served,
    })
}

/// Every part of the file read into `raw`; errors (unnamed) where the offset tables do not
/// fit the file.
fn describe_parts(raw: &RawFile) -> Result<Vec<PartDescription>, String> {
    let sizes = chunk_sizes(&raw.tables, raw.tables_end, raw.file_len)?;
    Ok(raw
        .meta
        .headers
        .iter()
        .zip(sizes)
        .map(|(h, bytes)| part_description(h, bytes))
        .collect())
}

/// Each part's chunk bytes: a chunk runs from its offset to the next chunk's (or the end
/// of the file). Offsets before the chunks, past the end or repeated mean a corrupt or
/// truncated file.
fn chunk_sizes(
    tables: &[Vec<u64>],
    chunks_start: u64,
    file_bytes: u64,
) -> Result<Vec<u64>, String> {
    let mut all: Vec<(u64, usize)> = Vec::new();
    for (part, table) in tables.iter().enumerate() {
        for &offset in table {
            if offset < chunks_start || offset >= file_bytes {
                return Err(format!(
                    "a chunk offset ({offset}) lies outside the file's chunks \
                     (bytes {chunks_start} to {file_bytes}); the file is truncated or corrupt"
                ));
            }
            all.push((offset, part));
        }
    }
    all.sort_unstable();
    if all.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err("two chunks share an offset: corrupt offset table".to_string());
    }
    let mut sizes = vec![0u64; tables.len()];
    for (i, &(offset, part)) in all.iter().enumerate() {
        let end = all.get(i + 1).map_or(file_bytes, |next| next.0);
        sizes[part] += end - offset;
    }
    Ok(sizes)
}

fn part_description(h: &Header, bytes_on_disk: u64) -> PartDescription {
    let size = h.layer_size;
    let (storage, tile, level_mode, rounding) = match h.blocks {
        BlockDescription::ScanLines => (ExrStorage::Scanline, None, LevelMode::Singular, None),
        BlockDescription::Tiles(t) => (
            ExrStorage::Tiled,
            Some([t.tile_size.x() as u64, t.tile_size.y() as u64]),
            t.level_mode,
            Some(t.rounding_mode),
        ),
    };
    let round = rounding.unwrap_or(RoundingMode::Down);
    let level = |lx: usize, ly: usize, width: usize, height: usize| LevelDescription {
        level: [lx as u64, ly as u64],
        width: width as u64,
        height: height as u64,
    };
    let levels: Vec<LevelDescription> = match level_mode {
        LevelMode::Singular => vec![level(0, 0, size.x(), size.y())],
        LevelMode::MipMap => mip_map_levels(round, size)
            .map(|(l, s)| level(l, l, s.x(), s.y()))
            .collect(),
        LevelMode::RipMap => rip_map_levels(round, size)
            .map(|(l, s)| level(l.x(), l.y(), s.x(), s.y()))
            .collect(),
    };
    let channels: Vec<ChannelDescription> = h
        .channels
        .list
        .iter()
        .map(|c| ChannelDescription {
            name: c.name.to_string(),
            sample_type: match c.sample_type {
                SampleType::F16 => ExrSampleType::Half,
                SampleType::F32 => ExrSampleType::Float,
                SampleType::U32 => ExrSampleType::Uint,
            },
            sampling: [c.sampling.x() as u64, c.sampling.y() as u64],
        })
        .collect();
    let decoded_bytes = (!h.deep).then(|| {
        levels
            .iter()
            .map(|l| {
                h.channels
                    .list
                    .iter()
                    .map(|c| {
                        let (sx, sy) = (c.sampling.x().max(1) as u64, c.sampling.y().max(1) as u64);
                        (l.width / sx) * (l.height / sy) * c.sample_type.bytes_per_sample() as u64
                    })
                    .sum::<u64>()
            })
            .sum::<u64>()
    });
    let display = h.shared_attributes.display_window;
    PartDescription {
        name: h.own_attributes.layer_name.as_ref().map(|n| n.to_string()),
        width: size.x() as u64,
        height: size.y() as u64,
        origin: [
            h.own_attributes.layer_position.x(),
            h.own_attributes.layer_position.y(),
        ],
        display_window: [
            display.position.x() as i64,
            display.position.y() as i64,
            display.size.x() as i64,
            display.size.y() as i64,
        ],
        channels,
        line_order: match h.line_order {
            LineOrder::Increasing => ExrLineOrder::Increasing,
            LineOrder::Decreasing => ExrLineOrder::Decreasing,
            LineOrder::Unspecified => ExrLineOrder::Unspecified,
        },
        compression: exr_compression_name(h.compression),
        storage,
        tile,
        level_mode: match level_mode {
            LevelMode::Singular => ExrLevelMode::Single,
            LevelMode::MipMap => ExrLevelMode::Mipmap,
            LevelMode::RipMap => ExrLevelMode::Ripmap,
        },
        rounding: rounding.map(|r| match r {
            RoundingMode::Down => ExrRounding::Down,
            RoundingMode::Up => ExrRounding::Up,
        }),
        levels,
        chunks: h.chunk_count as u64,
        bytes_on_disk,
        decoded_bytes,
        ratio: decoded_bytes
            .filter(|_| bytes_on_disk > 0)
            .map(|d| d as f64 / bytes_on_disk as f64),
        deep: h.deep,
        attributes: content_attributes(h),
    }
}

/// The attributes that describe content rather than structure, as text.
fn content_attributes(h: &Header) -> BTreeMap<String, String> {
    const STRUCTURAL: &[&str] = &[
        "channels",
        "compression",
        "dataWindow",
        "displayWindow",
        "lineOrder",
        "pixelAspectRatio",
        "screenWindowCenter",
        "screenWindowWidth",
        "tiles",
        "type",
        "name",
        "chunkCount",
        "version",
        "maxSamplesPerPixel",
    ];
    h.all_named_attributes()
        .filter_map(|(name, value)| {
            let name = String::from_utf8_lossy(name).into_owned();
            if STRUCTURAL.contains(&name.as_str()) {
                return None;
            }
            let text = match value {
                AttributeValue::Text(t) => t.to_string(),
                AttributeValue::TextVector(v) => v
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                AttributeValue::F32(v) => v.to_string(),
                AttributeValue::F64(v) => v.to_string(),
                AttributeValue::I32(v) => v.to_string(),
                AttributeValue::Preview(p) => format!("{}x{} preview", p.size.x(), p.size.y()),
                other => {
                    let mut s = format!("{other:?}");
                    if s.len() > 120 {
                        let cut = (0..=117)
                            .rev()
                            .find(|&i| s.is_char_boundary(i))
                            .unwrap_or(0);
                        s.truncate(cut);
                        s.push_str("...");
                    }
                    s
                }
            };
            Some((name, text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_split_the_file_by_offsets_and_reject_bad_tables() {
        let tables = vec![vec![100, 150], vec![120]];
        assert_eq!(chunk_sizes(&tables, 100, 200).unwrap(), vec![20 + 50, 30]);
        assert!(
            chunk_sizes(&[vec![100, 250]], 100, 200).is_err(),
            "past the end"
        );
        assert!(chunk_sizes(&[vec![0]], 100, 200).is_err(), "unwritten");
        assert!(
            chunk_sizes(&[vec![120, 120]], 100, 200).is_err(),
            "repeated"
        );
    }
}
