//! The tiled, mip-mapped OpenEXR writer: `write_mip_exr`.
//!
//! One part, channels `Y` / `Y A` / `R G B` / `R G B A` by channel count, half or float
//! samples, tiles of the requested size, mip levels rounded down (or a single level).
//! Tiles are compressed in parallel (rayon) in batches and written in increasing order, to
//! `OUT.tmp` first, which is renamed to `OUT` once complete.

use super::mips::{build_mips, level_count, level_size, MipFilter};
use super::FloatImage;
use crate::error::CliError;
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

/// The largest tile side accepted.
pub const MAX_TILE_SIDE: u32 = 1 << 16;

/// The compression of the written tiles (names as in OpenEXR; `zips` = one line per zip
/// block, `zip` = 16 lines, which for tiles are the same thing stored differently).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Compression {
    /// No compression.
    None,
    /// Run-length encoding (lossless).
    Rle,
    /// Zlib, one scan line per block (lossless).
    Zips,
    /// Zlib, 16 scan lines per block (lossless).
    #[default]
    Zip,
    /// Wavelet + Huffman (lossless).
    Piz,
    /// Lossless for half, float rounded to 24 bits.
    Pxr24,
    /// Lossy 4×4 blocks of half (float channels stored as is).
    B44,
    /// B44 with flat areas packed further.
    B44a,
    /// Lossy DCT, 32 lines per block.
    Dwaa,
    /// Lossy DCT, 256 lines per block.
    Dwab,
}

impl Compression {
    /// The exr crate's compression.
    pub fn to_exr(self) -> exr::compression::Compression {
        use exr::compression::Compression as C;
        match self {
            Compression::None => C::Uncompressed,
            Compression::Rle => C::RLE,
            Compression::Zips => C::ZIP1,
            Compression::Zip => C::ZIP16,
            Compression::Piz => C::PIZ,
            Compression::Pxr24 => C::PXR24,
            Compression::B44 => C::B44,
            Compression::B44a => C::B44A,
            Compression::Dwaa => C::DWAA(None),
            Compression::Dwab => C::DWAB(None),
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Rle => "rle",
            Compression::Zips => "zips",
            Compression::Zip => "zip",
            Compression::Piz => "piz",
            Compression::Pxr24 => "pxr24",
            Compression::B44 => "b44",
            Compression::B44a => "b44a",
            Compression::Dwaa => "dwaa",
            Compression::Dwab => "dwab",
        }
    }

    /// Whether decoding gives back exactly the samples written (for half samples; pxr24
    /// also rounds float samples).
    pub fn is_lossless(self) -> bool {
        !matches!(
            self,
            Compression::B44 | Compression::B44a | Compression::Dwaa | Compression::Dwab
        )
    }
}

/// The type of the written samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SampleType {
    /// 16-bit float.
    #[default]
    Half,
    /// 32-bit float.
    Float,
}

impl SampleType {
    /// Bytes per sample.
    pub fn bytes(self) -> usize {
        match self {
            SampleType::Half => 2,
            SampleType::Float => 4,
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SampleType::Half => "half",
            SampleType::Float => "float",
        }
    }
}

/// How `write_mip_exr` writes the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Tile width and height in texels (each 1 to `MAX_TILE_SIDE`). Default 64×64.
    pub tile: (u32, u32),
    /// Compression of each tile. Default zip.
    pub compression: Compression,
    /// Sample type. Default half.
    pub sample_type: SampleType,
    /// The filter that computes each mip level from the one before. Default box.
    pub filter: MipFilter,
    /// Write the full mip chain (true, the default) or level 0 only (still tiled).
    pub mips: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            tile: (64, 64),
            compression: Compression::Zip,
            sample_type: SampleType::Half,
            filter: MipFilter::Box,
            mips: true,
        }
    }
}

impl WriteOptions {
    /// Checks the tile size.
    pub fn check(&self) -> Result<(), CliError> {
        let (w, h) = self.tile;
        if !(1..=MAX_TILE_SIDE).contains(&w) || !(1..=MAX_TILE_SIDE).contains(&h) {
            return Err(CliError::Usage(format!(
                "tile size {w}x{h}: each side must be 1 to {MAX_TILE_SIDE}"
            )));
        }
        Ok(())
    }

    /// The number of levels written for a `width`×`height` image.
    pub fn levels(&self, width: u32, height: u32) -> u32 {
        if self.mips {
            level_count(width, height)
        } else {
            1
        }
    }

    /// The number of tiles (chunks) written for a `width`×`height` image.
    pub fn chunk_count(&self, width: u32, height: u32) -> u64 {
        let (tw, th) = (self.tile.0.max(1) as u64, self.tile.1.max(1) as u64);
        (0..self.levels(width, height))
            .map(|l| {
                let (w, h) = level_size(width, height, l);
                (w as u64).div_ceil(tw) * (h as u64).div_ceil(th)
            })
            .sum()
    }
}

/// What `write_mip_exr` wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenFile {
    /// The file written.
    pub path: PathBuf,
    /// Level 0 width.
    pub width: u32,
    /// Level 0 height.
    pub height: u32,
    /// Channel names in file (alphabetical) order.
    pub channels: Vec<String>,
    /// Levels written (1 without mips).
    pub levels: u32,
    /// Tiles written.
    pub chunks: u64,
    /// Size of the file.
    pub bytes_on_disk: u64,
    /// Size of all levels' samples, uncompressed.
    pub decoded_bytes: u64,
}

/// The channel names written for an image of `channels` channels, in texel order.
pub fn channel_names(channels: u32) -> &'static [&'static str] {
    match channels {
        1 => &["Y"],
        2 => &["Y", "A"],
        3 => &["R", "G", "B"],
        _ => &["R", "G", "B", "A"],
    }
}

/// Writes `image` to `path` as a tiled, mip-mapped OpenEXR file (see `WriteOptions`).
///
/// The file is written to `path` + `.tmp` and renamed to `path` when complete, so `path`
/// is either the old file or the complete new one. `progress`, when given, is called with
/// (tiles written, total tiles) as tiles are written. Errors name the file.
pub fn write_mip_exr(
    path: &Path,
    image: &FloatImage,
    options: &WriteOptions,
    progress: Option<&dyn Fn(u64, u64)>,
) -> Result<WrittenFile, CliError> {
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

    let tmp = tmp_path(path)?;
    let result = write_tiles(&tmp, header, &levels, &order, options, progress)
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(CliError::Io(format!(
            "cannot write {}: {e}",
            path.display()
        )));
    }
    let bytes_on_disk = std::fs::metadata(path)
        .map_err(|e| CliError::Io(format!("cannot stat {}: {e}", path.display())))?
        .len();
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

/// `path` with `.tmp` appended to its file name.
fn tmp_path(path: &Path) -> Result<PathBuf, CliError> {
    let name = path
        .file_name()
        .ok_or_else(|| CliError::Usage(format!("output {} is not a file name", path.display())))?;
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
) -> Result<(), String> {
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
                .collect::<Result<Vec<_>, _>>()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use exr::prelude::{FlatSamples, Levels, ReadChannels, ReadLayers};

    fn temp_file(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("demandtex-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn pattern(width: u32, height: u32, channels: u32) -> FloatImage {
        let mut img = FloatImage::zeros(width, height, channels);
        let c = channels as usize;
        for (i, v) in img.data.iter_mut().enumerate() {
            let (t, k) = (i / c, i % c);
            let (x, y) = (t % width as usize, t / width as usize);
            *v = ((x * 3 + y * 5) % 11) as f32 / 10.0 + k as f32;
        }
        img
    }

    /// Every level of every channel, as f32, by channel name.
    fn read_levels(path: &Path) -> Vec<(String, Vec<Vec<f32>>)> {
        let image = exr::prelude::read()
            .no_deep_data()
            .all_resolution_levels()
            .all_channels()
            .first_valid_layer()
            .all_attributes()
            .from_file(path)
            .unwrap();
        let to_f32 = |s: &FlatSamples| s.values_as_f32().collect::<Vec<f32>>();
        image
            .layer_data
            .channel_data
            .list
            .iter()
            .map(|ch| {
                let levels = match &ch.sample_data {
                    Levels::Singular(s) => vec![to_f32(s)],
                    Levels::Mip { level_data, .. } => level_data.iter().map(to_f32).collect(),
                    Levels::Rip { .. } => panic!("rip map"),
                };
                (ch.name.to_string(), levels)
            })
            .collect()
    }

    #[test]
    fn writes_every_level_and_tile_and_reads_back() {
        let img = pattern(37, 19, 4);
        let path = temp_file("rgba.exr");
        let options = WriteOptions {
            tile: (16, 8),
            sample_type: SampleType::Float,
            ..WriteOptions::default()
        };
        let calls = std::sync::Mutex::new(Vec::new());
        let record = |done: u64, total: u64| calls.lock().unwrap().push((done, total));
        let written = write_mip_exr(&path, &img, &options, Some(&record)).unwrap();
        assert_eq!(written.levels, 6);
        assert_eq!(written.channels, ["A", "B", "G", "R"]);
        assert_eq!(written.chunks, options.chunk_count(37, 19));
        // 3x3 + 2x2 (18x9) + 1x2 (9x4) + 1x1 + 1x1 + 1x1
        assert_eq!(written.chunks, 9 + 4 + 1 + 1 + 1 + 1);
        assert_eq!(
            written.bytes_on_disk,
            std::fs::metadata(&path).unwrap().len()
        );
        let calls = calls.into_inner().unwrap();
        assert_eq!(calls.first(), Some(&(0, written.chunks)));
        assert_eq!(calls.last(), Some(&(written.chunks, written.chunks)));
        assert!(!tmp_path(&path).unwrap().exists());

        let mips = build_mips(&img, MipFilter::Box);
        for (name, levels) in read_levels(&path) {
            let k = ["R", "G", "B", "A"]
                .iter()
                .position(|n| *n == name)
                .unwrap();
            assert_eq!(levels.len(), 6);
            for (l, got) in levels.iter().enumerate() {
                let src = if l == 0 { &img } else { &mips[l - 1] };
                let want: Vec<f32> = src.data.iter().skip(k).step_by(4).copied().collect();
                assert_eq!(got, &want, "channel {name} level {l}");
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn every_compression_round_trips_in_half() {
        let img = pattern(40, 21, 3);
        for compression in [
            Compression::None,
            Compression::Rle,
            Compression::Zips,
            Compression::Zip,
            Compression::Piz,
            Compression::Pxr24,
            Compression::B44,
            Compression::B44a,
            Compression::Dwaa,
            Compression::Dwab,
        ] {
            let path = temp_file(&format!("rgb-{}.exr", compression.name()));
            let options = WriteOptions {
                compression,
                tile: (32, 32),
                ..WriteOptions::default()
            };
            write_mip_exr(&path, &img, &options, None).unwrap();
            let read = read_levels(&path);
            assert_eq!(read.len(), 3);
            // Half precision (2^-11 relative); B44 quantises high-contrast 4x4 blocks hard.
            let tolerance = if compression.is_lossless() {
                1e-3
            } else {
                0.15
            };
            for (name, levels) in read {
                let k = ["R", "G", "B"].iter().position(|n| *n == name).unwrap();
                let want = img.data.iter().skip(k).step_by(3);
                let worst = levels[0]
                    .iter()
                    .zip(want)
                    .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
                    .fold(0.0f32, f32::max);
                assert!(worst <= tolerance, "{compression:?} {name}: {worst}");
            }
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn single_level_gray_and_gray_alpha_names() {
        for (channels, names) in [(1, vec!["Y"]), (2, vec!["A", "Y"])] {
            let img = pattern(5, 3, channels);
            let path = temp_file(&format!("gray{channels}.exr"));
            let options = WriteOptions {
                mips: false,
                ..WriteOptions::default()
            };
            let written = write_mip_exr(&path, &img, &options, None).unwrap();
            assert_eq!((written.levels, written.chunks), (1, 1));
            let read = read_levels(&path);
            let got: Vec<&str> = read.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(got, names);
            assert!(read.iter().all(|(_, levels)| levels.len() == 1));
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn bad_options_and_paths_are_errors_without_leftovers() {
        let img = pattern(4, 4, 4);
        let bad_tile = WriteOptions {
            tile: (0, 64),
            ..WriteOptions::default()
        };
        let path = temp_file("never.exr");
        assert!(matches!(
            write_mip_exr(&path, &img, &bad_tile, None),
            Err(CliError::Usage(_))
        ));
        let missing_dir = temp_file("no-such-dir").join("x.exr");
        let err = write_mip_exr(&missing_dir, &img, &WriteOptions::default(), None).unwrap_err();
        assert!(err.to_string().contains("x.exr"), "{err}");
        let mut short = img.clone();
        short.data.pop();
        assert!(write_mip_exr(&path, &short, &WriteOptions::default(), None).is_err());
        assert!(!path.exists() && !tmp_path(&path).unwrap().exists());
    }
}
