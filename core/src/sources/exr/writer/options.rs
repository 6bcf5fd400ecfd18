//! What [`super::write_mip_exr`] writes: tile size, compression, sample type, mip filter;
//! and what it reports having written.

use crate::error::{Error, Result};
use crate::sources::mips::DownsampleFilter;
use crate::textures::{full_mip_levels, mip_level_size};
use std::path::PathBuf;

/// The largest tile side accepted.
pub const MAX_TILE_SIDE: u32 = 1 << 16;

/// The compression of the written tiles (names as in OpenEXR; `zips` = one line per zip
/// block, `zip` = 16 lines, which for tiles are the same thing stored differently).
///
/// The names ([`name`](Self::name), [`FromStr`](std::str::FromStr)) are those of
/// `demandtex convert --compression` and of `demandtex info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
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
    /// Every compression the writer offers, in the order of their names in help texts.
    pub const ALL: [Compression; 10] = [
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
    ];

    /// The exr crate's compression.
    pub(crate) fn to_exr(self) -> exr::compression::Compression {
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

    /// The name: `none`, `rle`, `zips`, `zip`, `piz`, `pxr24`, `b44`, `b44a`, `dwaa`, `dwab`.
    pub fn name(self) -> &'static str {
        exr_compression_name(self.to_exr())
    }

    /// One line on what the compression does (for help texts).
    pub fn description(self) -> &'static str {
        match self {
            Compression::None => "No compression",
            Compression::Rle => "Run-length encoding (lossless)",
            Compression::Zips => "Zlib, one scan line per block (lossless)",
            Compression::Zip => "Zlib, 16 scan lines per block (lossless)",
            Compression::Piz => "Wavelet + Huffman (lossless)",
            Compression::Pxr24 => "Lossless for half, float rounded to 24 bits",
            Compression::B44 => "Lossy 4×4 blocks of half (float channels stored as is)",
            Compression::B44a => "B44 with flat areas packed further",
            Compression::Dwaa => "Lossy DCT, 32 lines per block",
            Compression::Dwab => "Lossy DCT, 256 lines per block",
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

/// The name of an OpenEXR compression as demandtex writes and prints it (the
/// [`Compression`] names, plus `htj2k32` and `htj2k256`, which it can neither write nor
/// read).
pub(crate) fn exr_compression_name(c: exr::compression::Compression) -> &'static str {
    use exr::compression::Compression as C;
    match c {
        C::Uncompressed => "none",
        C::RLE => "rle",
        C::ZIP1 => "zips",
        C::ZIP16 => "zip",
        C::PIZ => "piz",
        C::PXR24 => "pxr24",
        C::B44 => "b44",
        C::B44A => "b44a",
        C::DWAA(_) => "dwaa",
        C::DWAB(_) => "dwab",
        C::HTJ2K32 => "htj2k32",
        C::HTJ2K256 => "htj2k256",
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Compression {
    type Err = String;

    /// Parses a [`name`](Compression::name).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Compression::ALL.iter().map(|c| c.name()).collect();
                format!("unknown compression {s:?} ({})", names.join(", "))
            })
    }
}

/// The type of the written samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleType {
    /// 16-bit float.
    #[default]
    Half,
    /// 32-bit float.
    Float,
}

impl SampleType {
    /// Both sample types.
    pub const ALL: [SampleType; 2] = [SampleType::Half, SampleType::Float];

    /// Bytes per sample.
    pub fn bytes(self) -> usize {
        match self {
            SampleType::Half => 2,
            SampleType::Float => 4,
        }
    }

    /// The name: `half` or `float`.
    pub fn name(self) -> &'static str {
        match self {
            SampleType::Half => "half",
            SampleType::Float => "float",
        }
    }

    /// One line on the type (for help texts).
    pub fn description(self) -> &'static str {
        match self {
            SampleType::Half => "16-bit float",
            SampleType::Float => "32-bit float",
        }
    }
}

impl std::fmt::Display for SampleType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SampleType {
    type Err = String;

    /// Parses a [`name`](SampleType::name).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        SampleType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown sample type {s:?} (half or float)"))
    }
}

/// How [`write_mip_exr`](super::write_mip_exr) writes the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Tile width and height in texels (each 1 to [`MAX_TILE_SIDE`]). Default 64×64.
    pub tile: (u32, u32),
    /// Compression of each tile. Default zip.
    pub compression: Compression,
    /// Sample type. Default half.
    pub sample_type: SampleType,
    /// The filter that computes each mip level from the one before. Default box.
    pub filter: DownsampleFilter,
    /// Write the full mip chain (true, the default) or level 0 only (still tiled).
    pub mips: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            tile: (64, 64),
            compression: Compression::Zip,
            sample_type: SampleType::Half,
            filter: DownsampleFilter::Box,
            mips: true,
        }
    }
}

impl WriteOptions {
    /// Checks the tile size ([`Error::InvalidArgument`] if a side is outside 1 to
    /// [`MAX_TILE_SIDE`]).
    pub fn check(&self) -> Result<()> {
        let (w, h) = self.tile;
        if !(1..=MAX_TILE_SIDE).contains(&w) || !(1..=MAX_TILE_SIDE).contains(&h) {
            return Err(Error::InvalidArgument(format!(
                "tile size {w}x{h}: each side must be 1 to {MAX_TILE_SIDE}"
            )));
        }
        Ok(())
    }

    /// The number of levels written for a `width`×`height` image: the full chain
    /// ([`full_mip_levels`]) or 1.
    pub fn levels(&self, width: u32, height: u32) -> u32 {
        if self.mips {
            full_mip_levels(width, height)
        } else {
            1
        }
    }

    /// The number of tiles (chunks) written for a `width`×`height` image.
    pub fn chunk_count(&self, width: u32, height: u32) -> u64 {
        let (tw, th) = (self.tile.0.max(1) as u64, self.tile.1.max(1) as u64);
        (0..self.levels(width, height))
            .map(|l| {
                let (w, h) = mip_level_size(width, height, l);
                (w as u64).div_ceil(tw) * (h as u64).div_ceil(th)
            })
            .sum()
    }
}

/// What [`write_mip_exr`](super::write_mip_exr) wrote.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_match_the_exr_names() {
        for c in Compression::ALL {
            assert_eq!(c.name().parse(), Ok(c));
            assert_eq!(c.to_string(), c.name());
        }
        assert_eq!(Compression::Zips.name(), "zips");
        assert_eq!(Compression::Dwab.name(), "dwab");
        assert!("lzw".parse::<Compression>().is_err());
        for t in SampleType::ALL {
            assert_eq!(t.name().parse(), Ok(t));
        }
        assert!("uint".parse::<SampleType>().is_err());
    }

    #[test]
    fn chunk_counts_follow_the_level_sizes() {
        let options = WriteOptions {
            tile: (16, 8),
            ..WriteOptions::default()
        };
        // 37x19: 3x3, 18x9: 2x2, 9x4: 1x1, then 1 each for 4x2, 2x1, 1x1.
        assert_eq!(options.levels(37, 19), 6);
        assert_eq!(options.chunk_count(37, 19), 9 + 4 + 1 + 1 + 1 + 1);
        let single = WriteOptions {
            mips: false,
            ..options
        };
        assert_eq!((single.levels(37, 19), single.chunk_count(37, 19)), (1, 9));
        assert!(WriteOptions {
            tile: (0, 4),
            ..options
        }
        .check()
        .is_err());
    }
}
