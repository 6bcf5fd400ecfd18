//! What a TIFF file holds, as a texture: the directories that form its mip chain, each one
//! a grid of chunks (tiles, or strips as full-width chunks), the sample layout every level
//! shares, and OIIO's texture metadata. One parse, shared by the source and `describe`.
//!
//! The mip chain, as `maketx` writes it: directory 0 is level 0 and each following
//! directory of the main chain is the next level (OIIO's layout); or, when directory 0
//! lists SubIFDs, those are the levels after it (libtiff's "reduced resolution" layout).
//! Directories after level 0 are taken while they keep the sample layout and shrink.

use super::ifd::{Directory, Reader};
use crate::sources::identity::maketx_fingerprint;
use crate::sources::limits::SizeLimits;
use crate::sources::oiio_hints;
use crate::textures::{AddressMode, TexelFormat, TexelType};

const NEW_SUBFILE_TYPE: u16 = 254;
const IMAGE_WIDTH: u16 = 256;
const IMAGE_LENGTH: u16 = 257;
const BITS_PER_SAMPLE: u16 = 258;
const COMPRESSION: u16 = 259;
const PHOTOMETRIC: u16 = 262;
const FILL_ORDER: u16 = 266;
const IMAGE_DESCRIPTION: u16 = 270;
const STRIP_OFFSETS: u16 = 273;
const SAMPLES_PER_PIXEL: u16 = 277;
const ROWS_PER_STRIP: u16 = 278;
const STRIP_BYTE_COUNTS: u16 = 279;
const PLANAR_CONFIG: u16 = 284;
const COLOR_MAP: u16 = 320;
const PREDICTOR: u16 = 317;
const TILE_WIDTH: u16 = 322;
const TILE_LENGTH: u16 = 323;
const TILE_OFFSETS: u16 = 324;
const TILE_BYTE_COUNTS: u16 = 325;
const SUB_IFDS: u16 = 330;
const JPEG_TABLES: u16 = 347;
const EXTRA_SAMPLES: u16 = 338;
const SAMPLE_FORMAT: u16 = 339;
const INK_SET: u16 = 332;
const IMAGE_DEPTH: u16 = 32997;
/// OIIO's private tags, as `maketx` writes them.
const OIIO_TEXTURE_FORMAT: u16 = 33302;
const OIIO_WRAP_MODES: u16 = 33303;

/// How chunks are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TiffCompression {
    /// Stored as is.
    None,
    /// LZW (TIFF's MSB-first variant).
    Lzw,
    /// Deflate in a zlib stream ("Adobe deflate" and the old code 32946).
    Zip,
    /// PackBits run lengths.
    PackBits,
    /// JPEG ("new-style", code 7), 8-bit grey or YCbCr / RGB, each chunk a JPEG stream
    /// completed by the level's JPEGTables ([`TiffLevel::jpeg_tables`]).
    Jpeg,
}

/// The predictor undone after decompression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TiffPredictor {
    /// None.
    None,
    /// Horizontal differencing of samples.
    Horizontal,
    /// Byte planes of floating-point samples, differenced.
    FloatingPoint,
}

/// What stored samples mean (the photometric interpretations served).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredColour {
    /// Grey or RGB (and alpha) as stored (black is zero; YCbCr JPEG chunks decode to RGB).
    AsStored,
    /// Grey with white at zero (photometric 0, unsigned integers): served inverted,
    /// `max - v` for every stored sample, as OpenImageIO reads it.
    MinIsWhite,
    /// 8-bit indices into the file's colour map (photometric 3): served as RGBA8, each
    /// 16-bit map entry divided by 257 (OpenImageIO's conversion), alpha 1.
    Palette,
    /// Ink separations C, M, Y, K (photometric 5 with the CMYK ink set; 8/16-bit unsigned
    /// integers, four samples, a fifth is alpha): served as RGB(A) of the same type, `R =
    /// (1 − C)(1 − K)` (G from M, B from Y) rounded to the nearest, as OpenImageIO converts
    /// them on read.
    Cmyk,
}

/// The most samples per pixel read (the first four are served): a bound on a chunk's
/// decoded size before the limits check it, and more than any texture holds (maketx's
/// bump slopes have 6).
pub const MAX_SAMPLES: u32 = 64;

/// The sample layout every level shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleLayout {
    /// Samples per pixel in the file, 1 to [`MAX_SAMPLES`]; the first four are served
    /// ([`served_samples`](Self::served_samples)).
    pub samples: u32,
    /// Bits per sample: 1, 2, 4, 8 or 16 (unsigned integers), 8 or 16 (signed), 16 or 32
    /// (float). Samples of fewer than 8 bits are unpacked to a byte each when decoded: grey
    /// scaled to 0–255 (`v · 255 / (2^bits − 1)`, OpenImageIO's conversion), palette
    /// indices as they are.
    pub bits: u32,
    /// The bits of each byte of a chunk are stored in reverse order (FillOrder 2): a chunk's
    /// bytes are reversed before they are decompressed, as libtiff does.
    pub lsb_first: bool,
    /// Float samples rather than integers.
    pub float: bool,
    /// Signed integers (SampleFormat 2, as `maketx --prman -d uint16` writes them), served
    /// as float `v / max` (OpenImageIO's conversion: -1 to 1).
    pub signed: bool,
    /// One plane per sample (PlanarConfiguration 2) rather than interleaved.
    pub separate: bool,
    /// How chunks are compressed.
    pub compression: TiffCompression,
    /// The predictor.
    pub predictor: TiffPredictor,
    /// Multi-byte samples are little-endian in the file.
    pub little: bool,
    /// The last sample is unassociated alpha (ExtraSamples 2, of 2 or 4 samples): the
    /// source associates it as OpenImageIO does on read (`sources/associate.rs`).
    pub unassociated_alpha: bool,
    /// What the samples mean: as stored, inverted grey, or palette indices (the colour
    /// map is [`TiffLayout::palette`]).
    pub colour: StoredColour,
}

impl SampleLayout {
    /// Bytes of one decoded sample (a sample of fewer than 8 bits is unpacked to a byte).
    pub fn sample_bytes(&self) -> usize {
        (self.bits as usize / 8).max(1)
    }

    /// Bytes of one stored row of `width` pixels of `per_pixel` samples (rows of samples of
    /// fewer than 8 bits end on a byte boundary).
    pub fn stored_row_bytes(&self, width: usize, per_pixel: usize) -> usize {
        (width * per_pixel * self.bits as usize).div_ceil(8)
    }

    /// The channels of a pixel that are served (before three are widened to four): the
    /// first four samples, a palette's three colours, or the RGB (and alpha) of CMYK.
    pub fn served_samples(&self) -> u32 {
        match self.colour {
            StoredColour::Palette => 3,
            StoredColour::Cmyk => self.read_samples() - 1,
            _ => self.samples.min(4),
        }
    }

    /// The samples of a pixel that are read from the file (the planes read, where they are
    /// separate): the first four, a palette's index, or C, M, Y, K and an alpha.
    pub fn read_samples(&self) -> u32 {
        match self.colour {
            StoredColour::Palette => 1,
            StoredColour::Cmyk => self.samples.min(5),
            _ => self.samples.min(4),
        }
    }

    /// The texel format served: the sample type (signed integers as float), three samples
    /// widened to four.
    pub fn format(&self) -> TexelFormat {
        if self.colour == StoredColour::Palette {
            return TexelFormat::RGBA8;
        }
        let texel_type = match (self.float, self.signed, self.bits) {
            (false, false, ..=8) => TexelType::U8,
            (false, false, _) => TexelType::U16,
            (false, true, _) => TexelType::F32,
            (true, _, 16) => TexelType::F16,
            (true, _, _) => TexelType::F32,
        };
        let served = self.served_samples();
        let channels = if served == 3 { 4 } else { served };
        TexelFormat {
            texel_type,
            channels,
        }
    }
}

/// One stored level: its size and its grid of chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiffLevel {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Width of one chunk (the tile width, or the image width for strips).
    pub chunk_w: u32,
    /// Height of one chunk (the tile height, or rows per strip).
    pub chunk_h: u32,
    /// Tiles rather than strips.
    pub tiled: bool,
    /// Offset of every chunk (plane-major for separate planes).
    pub offsets: Vec<u64>,
    /// JPEG compression: the tables (DQT, DHT) the chunks' abbreviated streams omit, as
    /// the directory's JPEGTables tag holds them (SOI … EOI); empty otherwise.
    pub jpeg_tables: Vec<u8>,
    /// Compressed bytes of every chunk.
    pub byte_counts: Vec<u64>,
}

impl TiffLevel {
    /// Chunks across and down.
    pub fn chunks(&self) -> (u32, u32) {
        (
            self.width.div_ceil(self.chunk_w),
            self.height.div_ceil(self.chunk_h),
        )
    }

    /// Rows of chunk row `cy` that hold image data (strips end at the image; tiles are
    /// padded to whole tiles).
    pub fn chunk_rows(&self, cy: u32) -> u32 {
        if self.tiled {
            self.chunk_h
        } else {
            self.chunk_h.min(self.height - cy * self.chunk_h)
        }
    }
}

/// OIIO's texture metadata, as `maketx` writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TxMetadata {
    /// `textureformat` (e.g. "Plain Texture").
    pub texture_format: Option<String>,
    /// `wrapmodes` for s and t, as address modes (OIIO's "black" is `Border`,
    /// "periodic" `Wrap`).
    pub wrap: Option<[AddressMode; 2]>,
    /// `oiio:ConstantColor`: every texel has this value (per channel).
    pub constant_color: Option<Vec<f32>>,
    /// `oiio:AverageColor`: the image's mean (per channel).
    pub average_color: Option<Vec<f32>>,
    /// `oiio:SHA-1` (older maketx: `SHA-1`): maketx's fingerprint of the texels
    /// ([`crate::sources::identity::maketx_fingerprint`]).
    pub fingerprint: Option<String>,
}

impl TxMetadata {
    /// The base colour these hints give (constant colour first, then the average), as
    /// RGBA the way the served format decodes `channels` channels.
    pub fn base_color(&self, channels: u32) -> Option<[f32; 4]> {
        oiio_hints::base_color(
            self.constant_color.as_deref(),
            self.average_color.as_deref(),
            channels as usize,
        )
    }
}

/// A parsed file: its mip chain, sample layout and metadata.
#[derive(Clone, Debug)]
pub struct TiffLayout {
    /// Sample layout of every level.
    pub samples: SampleLayout,
    /// Stored levels, finest first (shrinking).
    pub levels: Vec<TiffLevel>,
    /// The texture metadata.
    pub metadata: TxMetadata,
    /// A palette file's colours, as served: 256 RGB entries (empty for other files).
    pub palette: Vec<[u8; 3]>,
}

/// Parse OIIO's `key=value` ImageDescription (space-separated, values without spaces).
fn description_value<'d>(description: &'d str, key: &str) -> Option<&'d str> {
    description
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

impl TiffLayout {
    /// Parse the file `r` reads, within `limits` (one decoded chunk within
    /// `max_decoded_block_bytes`).
    pub(crate) fn parse(r: &Reader<'_>, limits: &SizeLimits) -> Result<TiffLayout, String> {
        let chain = r.chain(r.header.first)?;
        let first = &chain[0];
        let samples = sample_layout(r, first)?;
        let mut dirs: Vec<&Directory> = vec![first];
        let sub: Vec<Directory>;
        if let Some(offsets) = r.uints(first, SUB_IFDS)? {
            sub = offsets
                .iter()
                .take(super::ifd::MAX_DIRECTORIES)
                .map(|&o| r.directory(o))
                .collect::<Result<_, _>>()?;
            dirs.extend(sub.iter());
        } else {
            dirs.extend(chain[1..].iter());
        }
        let mut levels: Vec<TiffLevel> = Vec::with_capacity(dirs.len());
        for (i, d) in dirs.iter().enumerate() {
            if i > 0 {
                // A following directory is a level only if it shares the samples and
                // shrinks (a multi-page TIFF's other pages are not levels).
                let reduced = r.uint(d, NEW_SUBFILE_TYPE)?.unwrap_or(0) & 1 == 1;
                let same = sample_layout(r, d).ok() == Some(samples);
                if !same && !reduced {
                    break;
                }
                if !same {
                    return Err(format!(
                        "level {i} stores its samples differently from level 0"
                    ));
                }
            }
            let level = level(r, d, &samples, limits).map_err(|e| match i {
                0 => e,
                _ => format!("level {i}: {e}"),
            })?;
            if let Some(prev) = levels.last() {
                let shrinks = level.width <= prev.width
                    && level.height <= prev.height
                    && (level.width, level.height) != (prev.width, prev.height);
                if !shrinks {
                    break;
                }
            }
            levels.push(level);
        }
        let description = r.ascii(first, IMAGE_DESCRIPTION)?.unwrap_or_default();
        let wrap_text = r
            .ascii(first, OIIO_WRAP_MODES)?
            .or_else(|| description_value(&description, "wrapmodes").map(str::to_owned));
        let metadata = TxMetadata {
            texture_format: r.ascii(first, OIIO_TEXTURE_FORMAT)?,
            wrap: wrap_text
                .as_deref()
                .and_then(AddressMode::parse_oiio_wrapmodes),
            constant_color: description_value(&description, "oiio:ConstantColor")
                .and_then(oiio_hints::parse_color),
            average_color: description_value(&description, "oiio:AverageColor")
                .and_then(oiio_hints::parse_color),
            fingerprint: description_value(&description, "oiio:SHA-1")
                .or_else(|| description_value(&description, "SHA-1"))
                .and_then(maketx_fingerprint),
        };
        let palette = match samples.colour {
            StoredColour::Palette => colour_map(r, first, samples.bits)?,
            _ => Vec::new(),
        };
        Ok(TiffLayout {
            samples,
            levels,
            metadata,
            palette,
        })
    }
}

/// The sample layout of one directory, or why it is not served.
fn sample_layout(r: &Reader<'_>, d: &Directory) -> Result<SampleLayout, String> {
    let samples = r.uint(d, SAMPLES_PER_PIXEL)?.unwrap_or(1);
    if !(1..=u64::from(MAX_SAMPLES)).contains(&samples) {
        return Err(format!(
            "{samples} samples per pixel (1 to {MAX_SAMPLES} are read, the first 4 served)"
        ));
    }
    let bits = r.uints(d, BITS_PER_SAMPLE)?.unwrap_or_else(|| vec![1]);
    if bits.is_empty() {
        return Err("a BitsPerSample tag with no value".into());
    }
    if bits.iter().any(|&b| b != bits[0]) {
        return Err(format!("samples of different sizes ({bits:?} bits)"));
    }
    let formats = r.uints(d, SAMPLE_FORMAT)?.unwrap_or_else(|| vec![1]);
    if formats.is_empty() {
        return Err("a SampleFormat tag with no value".into());
    }
    if formats.iter().any(|&f| f != formats[0]) {
        return Err("samples of different types".into());
    }
    let (float, signed) = match formats[0] {
        1 => (false, false),
        2 => (false, true),
        3 => (true, false),
        f => return Err(format!("sample format {f} (integer and float are served)")),
    };
    let bits = u32::try_from(bits[0]).unwrap_or(u32::MAX);
    let ok = match (float, signed) {
        (true, _) => bits == 16 || bits == 32,
        (false, true) => bits == 8 || bits == 16,
        (false, false) => matches!(bits, 1 | 2 | 4 | 8 | 16),
    };
    if !ok {
        let kind = match (float, signed) {
            (true, _) => "float",
            (false, true) => "signed",
            (false, false) => "unsigned",
        };
        return Err(format!(
            "{bits}-bit {kind} samples (1/2/4/8/16-bit unsigned, 8/16-bit signed and 16/32-bit \
             float are served)"
        ));
    }
    let code = r.uint(d, COMPRESSION)?.unwrap_or(1);
    let integers = !float && !signed;
    let colour = match r.uint(d, PHOTOMETRIC)? {
        None | Some(1) | Some(2) => StoredColour::AsStored,
        // YCbCr in JPEG chunks: the JPEG decoder gives RGB (as libtiff's JPEGCOLORMODE_RGB
        // does for OpenImageIO).
        Some(6) if code == 7 && samples == 3 => StoredColour::AsStored,
        Some(0) if integers && code != 7 => StoredColour::MinIsWhite,
        Some(0) => {
            return Err("white-is-zero grey of float, signed or JPEG samples \
                 (of unsigned integers it is served)"
                .into())
        }
        Some(3) if integers && bits <= 8 && samples == 1 && code != 7 => StoredColour::Palette,
        Some(3) => {
            return Err(format!(
                "palette colour of {samples} {bits}-bit sample(s) (one index of 1 to 8 bits is \
                 served; convert to RGB)"
            ))
        }
        // Separations: CMYK (the default ink set), and an alpha, as OpenImageIO reads them.
        Some(5)
            if integers
                && bits >= 8
                && code != 7
                && (samples == 4 || samples == 5)
                && r.uint(d, INK_SET)?.unwrap_or(1) == 1 =>
        {
            StoredColour::Cmyk
        }
        Some(5) => {
            return Err(format!(
                "separations of {samples} {bits}-bit {} sample(s) (CMYK of 8/16-bit unsigned \
                 integers, four samples and an optional alpha, is served; convert to RGB)",
                if float || signed {
                    "float or signed"
                } else {
                    "integer"
                }
            ))
        }
        Some(p) => {
            return Err(format!(
                "photometric interpretation {p} (grey, RGB, white-is-zero grey, 1 to 8-bit \
                 palettes and CMYK are served)"
            ))
        }
    };
    if r.uint(d, IMAGE_DEPTH)?.unwrap_or(1) > 1 {
        return Err("a volume texture (ImageDepth > 1)".into());
    }
    let compression = match code {
        1 => TiffCompression::None,
        5 => TiffCompression::Lzw,
        8 | 32946 => TiffCompression::Zip,
        32773 => TiffCompression::PackBits,
        7 => TiffCompression::Jpeg,
        c => {
            return Err(format!(
                "compression {c} (none, LZW, ZIP, PackBits and JPEG are served)"
            ))
        }
    };
    if compression == TiffCompression::Jpeg
        && (float || signed || bits != 8 || !(samples == 1 || samples == 3))
    {
        return Err(format!(
            "JPEG chunks of {samples} {bits}-bit samples (8-bit grey or colour are served)"
        ));
    }
    let predictor = match r.uint(d, PREDICTOR)?.unwrap_or(1) {
        1 => TiffPredictor::None,
        2 => TiffPredictor::Horizontal,
        3 if float => TiffPredictor::FloatingPoint,
        p => return Err(format!("predictor {p} for these samples")),
    };
    if bits < 8 && predictor != TiffPredictor::None {
        return Err(format!("a predictor on {bits}-bit samples"));
    }
    let lsb_first = match r.uint(d, FILL_ORDER)?.unwrap_or(1) {
        1 => false,
        2 => true,
        f => return Err(format!("fill order {f} (1 and 2 are served)")),
    };
    let separate = match r.uint(d, PLANAR_CONFIG)?.unwrap_or(1) {
        1 => false,
        2 => samples > 1,
        p => return Err(format!("planar configuration {p}")),
    };
    if compression == TiffCompression::Jpeg && (separate || predictor != TiffPredictor::None) {
        return Err("JPEG chunks in separate planes or with a predictor".into());
    }
    // ExtraSamples 2: unassociated alpha (1 is associated, 0 unspecified: both served as
    // stored, as OpenImageIO serves them).
    let extra = r.uints(d, EXTRA_SAMPLES)?.unwrap_or_default();
    let alpha_last = match colour {
        StoredColour::Cmyk => samples == 5,
        _ => samples == 2 || samples == 4,
    };
    let unassociated_alpha = alpha_last && extra.last() == Some(&2);
    Ok(SampleLayout {
        unassociated_alpha,
        signed,
        samples: samples as u32,
        bits,
        lsb_first,
        float,
        separate,
        compression,
        predictor,
        little: r.header.little,
        colour,
    })
}

/// A palette file's colour map: `2^bits` red, then green, then blue 16-bit entries, served
/// as 8-bit colours (`entry / 257`, OpenImageIO's conversion).
fn colour_map(r: &Reader<'_>, d: &Directory, bits: u32) -> Result<Vec<[u8; 3]>, String> {
    let map = r
        .uints(d, COLOR_MAP)?
        .ok_or("palette colour without a ColorMap tag")?;
    let n = 1usize << bits;
    if map.len() != 3 * n {
        return Err(format!(
            "a ColorMap of {} entries (3 × {n} for {bits}-bit indices)",
            map.len()
        ));
    }
    let to8 = |v: u64| (v.min(65535) / 257) as u8;
    Ok((0..n)
        .map(|i| [to8(map[i]), to8(map[n + i]), to8(map[2 * n + i])])
        .collect())
}

/// The chunk grid of one directory.
fn level(
    r: &Reader<'_>,
    d: &Directory,
    s: &SampleLayout,
    limits: &SizeLimits,
) -> Result<TiffLevel, String> {
    fn need<T>(v: Option<T>, what: &str) -> Result<T, String> {
        v.ok_or_else(|| format!("no {what} tag"))
    }
    let width = need(r.uint(d, IMAGE_WIDTH)?, "ImageWidth")?;
    let height = need(r.uint(d, IMAGE_LENGTH)?, "ImageLength")?;
    let max = u64::from(crate::textures::MAX_TEXTURE_SIZE);
    if width == 0 || height == 0 || width > max || height > max {
        return Err(format!(
            "image size {width}×{height} (each side must be 1..={max})"
        ));
    }
    let tiled = d_has(r, d, TILE_WIDTH)?;
    let (chunk_w, chunk_h, offsets, counts) = if tiled {
        let tw = need(r.uint(d, TILE_WIDTH)?, "TileWidth")?;
        let th = need(r.uint(d, TILE_LENGTH)?, "TileLength")?;
        if tw == 0 || th == 0 || tw > max || th > max {
            return Err(format!("tile size {tw}×{th}"));
        }
        (
            tw,
            th,
            need(r.uints(d, TILE_OFFSETS)?, "TileOffsets")?,
            need(r.uints(d, TILE_BYTE_COUNTS)?, "TileByteCounts")?,
        )
    } else {
        let rows = r
            .uint(d, ROWS_PER_STRIP)?
            .unwrap_or(height)
            .clamp(1, height);
        (
            width,
            rows,
            need(r.uints(d, STRIP_OFFSETS)?, "StripOffsets")?,
            need(r.uints(d, STRIP_BYTE_COUNTS)?, "StripByteCounts")?,
        )
    };
    let planes = if s.separate { u64::from(s.samples) } else { 1 };
    let chunks = width.div_ceil(chunk_w) * height.div_ceil(chunk_h) * planes;
    if offsets.len() as u64 != chunks || counts.len() as u64 != chunks {
        return Err(format!(
            "{} offsets and {} byte counts for {chunks} chunks",
            offsets.len(),
            counts.len()
        ));
    }
    let per_chunk = if s.separate { 1 } else { u64::from(s.samples) };
    let decoded = chunk_w * chunk_h * per_chunk * s.sample_bytes() as u64;
    limits.check_block("one decoded TIFF chunk", decoded)?;
    if let Some(&c) = counts.iter().max() {
        limits.check_block("one compressed TIFF chunk", c)?;
    }
    let file_len = r.file_len();
    for (o, c) in offsets.iter().zip(&counts) {
        if o.checked_add(*c).is_none_or(|end| end > file_len) {
            return Err(format!(
                "a chunk ({c} bytes at offset {o}) lies past the end of the file ({file_len} \
                 bytes)"
            ));
        }
    }
    let jpeg_tables = match s.compression {
        TiffCompression::Jpeg => r.bytes_of(d, JPEG_TABLES)?.unwrap_or_default(),
        _ => Vec::new(),
    };
    Ok(TiffLevel {
        width: width as u32,
        height: height as u32,
        chunk_w: chunk_w as u32,
        chunk_h: chunk_h as u32,
        tiled,
        offsets,
        jpeg_tables,
        byte_counts: counts,
    })
}

fn d_has(r: &Reader<'_>, d: &Directory, tag: u16) -> Result<bool, String> {
    Ok(r.uint(d, tag)?.is_some())
}
