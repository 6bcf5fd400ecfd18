//! DDS in `demandtex convert`: as input, level 0 decoded by core's reader
//! ([`load_dds`]); as output, the writer behind `--format dds-…`: a mip chain encoded as BC1,
//! BC3, BC4, BC5, BC6H or BC7 blocks (Intel's ISPC texture compressor, through the
//! `intel_tex_2` crate) or plain 8-bit RGBA, with a legacy header where one exists (BC1 as
//! `DXT1`, BC3 as `DXT5`, BC4 as `ATI1`, BC5 as `ATI2`, RGBA masks: what every reader
//! knows) and a DX10 header for BC6H and BC7, and the quality of level
//! 0 against the source (PSNR) decoded with the reader's own decoder (core's
//! [`BlockCodec`]).
//!
//! The encoder lives in the CLI, not in core: its prebuilt kernels need the C++ runtime,
//! which the library (and the C ABI built from it) does not otherwise link.

use super::load::{finish, LoadOptions, Loaded};
use crate::error::CliError;
use demandtex::sources::dds::{BlockCodec, DdsEncoding};
use demandtex::sources::exr::writer::write_via_tmp;
use demandtex::sources::mips::{build_mips, DownsampleFilter};
use demandtex::sources::FloatImage;
use demandtex::sources::{DdsOptions, DdsSource, ImageSource};
use demandtex::textures::TexelType;
use demandtex::{Error, Result};
use half::f16;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What the texels are encoded as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DdsCompression {
    /// BC1: RGB (alpha dropped), 4 bits a texel.
    Bc1,
    /// BC3: RGBA, 8 bits a texel.
    Bc3,
    /// BC4: the first channel, 4 bits a texel.
    Bc4,
    /// BC5: the first two channels, 8 bits a texel.
    Bc5,
    /// BC6H (unsigned half): HDR RGB, 8 bits a texel.
    Bc6h,
    /// BC7: RGBA, 8 bits a texel, the best quality of the 8-bit codecs.
    Bc7,
    /// Uncompressed 8-bit RGBA, 32 bits a texel.
    Rgba8,
}

impl DdsCompression {
    /// Every choice, in the order help lists them.
    pub const ALL: [DdsCompression; 7] = [
        DdsCompression::Bc7,
        DdsCompression::Bc1,
        DdsCompression::Bc3,
        DdsCompression::Bc4,
        DdsCompression::Bc5,
        DdsCompression::Bc6h,
        DdsCompression::Rgba8,
    ];

    /// The choice's name: `bc7`, `bc1`, ..., `rgba8`.
    pub fn name(self) -> &'static str {
        &self.format_name()["dds-".len()..]
    }

    /// The name `convert --format` takes: `dds-bc7`, `dds-bc1`, ..., `dds-rgba8`.
    pub fn format_name(self) -> &'static str {
        match self {
            DdsCompression::Bc1 => "dds-bc1",
            DdsCompression::Bc3 => "dds-bc3",
            DdsCompression::Bc4 => "dds-bc4",
            DdsCompression::Bc5 => "dds-bc5",
            DdsCompression::Bc6h => "dds-bc6h",
            DdsCompression::Bc7 => "dds-bc7",
            DdsCompression::Rgba8 => "dds-rgba8",
        }
    }

    /// One line on what it is for.
    pub fn description(self) -> &'static str {
        match self {
            DdsCompression::Bc1 => "BC1: RGB, 4 bits a texel (alpha dropped)",
            DdsCompression::Bc3 => "BC3: RGBA, 8 bits a texel",
            DdsCompression::Bc4 => "BC4: one channel (the first), 4 bits a texel",
            DdsCompression::Bc5 => "BC5: two channels (the first two; normal maps), 8 bits a texel",
            DdsCompression::Bc6h => "BC6H: HDR RGB (unsigned half), 8 bits a texel",
            DdsCompression::Bc7 => "BC7: RGBA, 8 bits a texel, best 8-bit quality",
            DdsCompression::Rgba8 => "uncompressed 8-bit RGBA, 32 bits a texel",
        }
    }

    /// The block codec, or `None` for plain texels.
    pub fn codec(self) -> Option<BlockCodec> {
        Some(match self {
            DdsCompression::Bc1 => BlockCodec::Bc1,
            DdsCompression::Bc3 => BlockCodec::Bc3,
            DdsCompression::Bc4 => BlockCodec::Bc4 { signed: false },
            DdsCompression::Bc5 => BlockCodec::Bc5 { signed: false },
            DdsCompression::Bc6h => BlockCodec::Bc6h { signed: false },
            DdsCompression::Bc7 => BlockCodec::Bc7,
            DdsCompression::Rgba8 => return None,
        })
    }

    /// The legacy (pre-DX10) header of the encodings every DDS reader knows, as NVIDIA
    /// Texture Tools writes them and OpenImageIO 2.4 reads them — FourCC `DXT1`, `DXT5`,
    /// `ATI1` (BC4), `ATI2` (BC5) and 32-bit RGBA masks — else `None`: BC6H and BC7 need
    /// a DX10 header. `ddsfile` has no format for `ATI1` and `ATI2`, so those come as the
    /// format of the same block size (`DXT1`, `DXT5`: the header's pitch) and the FourCC
    /// that replaces its own.
    fn legacy(self) -> Option<(ddsfile::D3DFormat, Option<&'static [u8; 4]>)> {
        use ddsfile::D3DFormat as D;
        match self {
            DdsCompression::Bc1 => Some((D::DXT1, None)),
            DdsCompression::Bc3 => Some((D::DXT5, None)),
            DdsCompression::Bc4 => Some((D::DXT1, Some(b"ATI1"))),
            DdsCompression::Bc5 => Some((D::DXT5, Some(b"ATI2"))),
            DdsCompression::Rgba8 => Some((D::A8B8G8R8, None)),
            DdsCompression::Bc6h | DdsCompression::Bc7 => None,
        }
    }

    fn dxgi(self) -> ddsfile::DxgiFormat {
        use ddsfile::DxgiFormat as D;
        match self {
            DdsCompression::Bc1 => D::BC1_UNorm,
            DdsCompression::Bc3 => D::BC3_UNorm,
            DdsCompression::Bc4 => D::BC4_UNorm,
            DdsCompression::Bc5 => D::BC5_UNorm,
            DdsCompression::Bc6h => D::BC6H_UF16,
            DdsCompression::Bc7 => D::BC7_UNorm,
            DdsCompression::Rgba8 => D::R8G8B8A8_UNorm,
        }
    }

    /// The channels of an RGBA texel the encoding keeps: 1, 2, 3 (RGB) or 4.
    fn kept_channels(self, source_channels: u32) -> usize {
        match self {
            DdsCompression::Bc4 => 1,
            DdsCompression::Bc5 => 2,
            DdsCompression::Bc1 | DdsCompression::Bc6h => 3,
            _ if source_channels == 2 || source_channels == 4 => 4,
            _ => 3,
        }
    }
}

/// How [`write_dds`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DdsWriteOptions {
    /// The encoding.
    pub compression: DdsCompression,
    /// The filter of the mip chain.
    pub filter: DownsampleFilter,
    /// Write the whole mip chain (else level 0 only).
    pub mips: bool,
}

impl Default for DdsWriteOptions {
    fn default() -> Self {
        DdsWriteOptions {
            compression: DdsCompression::Bc7,
            filter: DownsampleFilter::Box,
            mips: true,
        }
    }
}

/// What [`write_dds`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct WrittenDds {
    /// The file.
    pub path: PathBuf,
    /// Level-0 width.
    pub width: u32,
    /// Level-0 height.
    pub height: u32,
    /// Mip levels written.
    pub levels: u32,
    /// Bytes of the file.
    pub bytes_on_disk: u64,
    /// Peak signal-to-noise ratio of level 0 decoded against the source, over the
    /// channels kept (dB; infinite when exact). Peak 1 for 8-bit codecs; the source's
    /// largest value for BC6H.
    pub psnr_db: f64,
    /// Largest absolute difference of level 0 decoded against the source.
    pub max_error: f64,
}

/// Write `image` (1 = Y, 2 = Y A, 3 = RGB, 4 = RGBA) as a DDS file (legacy header for
/// BC1, BC3, BC4, BC5 and RGBA8, DX10 for BC6H and BC7),
/// through `path.tmp` renamed into place. 8-bit encodings clamp to [0, 1]; a single
/// channel is written as grey (BC4 and BC5 take the first channels as they are).
pub fn write_dds(path: &Path, image: &FloatImage, options: &DdsWriteOptions) -> Result<WrittenDds> {
    image.check()?;
    let coarser = if options.mips {
        build_mips(image, options.filter)
    } else {
        Vec::new()
    };
    let levels: Vec<&FloatImage> = std::iter::once(image).chain(coarser.iter()).collect();
    let c = options.compression;
    let mut data = Vec::new();
    let mut level0 = Vec::new();
    for (i, level) in levels.iter().enumerate() {
        let encoded = encode_level(level, c);
        if i == 0 {
            level0 = encoded.clone();
        }
        data.extend_from_slice(&encoded);
    }
    let mipmap_levels = Some(levels.len() as u32);
    let dds = match c.legacy() {
        Some((format, fourcc)) => ddsfile::Dds::new_d3d(ddsfile::NewD3dParams {
            height: image.height,
            width: image.width,
            depth: None,
            format,
            mipmap_levels,
            caps2: None,
        })
        .map(|mut dds| {
            if let Some(code) = fourcc {
                dds.header.spf.fourcc = Some(ddsfile::FourCC(u32::from_le_bytes(*code)));
            }
            dds
        }),
        None => ddsfile::Dds::new_dxgi(ddsfile::NewDxgiParams {
            height: image.height,
            width: image.width,
            depth: None,
            format: c.dxgi(),
            mipmap_levels,
            array_layers: None,
            caps2: None,
            is_cubemap: false,
            resource_dimension: ddsfile::D3D10ResourceDimension::Texture2D,
            alpha_mode: ddsfile::AlphaMode::Straight,
        }),
    };
    let mut dds = dds.map_err(|e| Error::InvalidArgument(format!("DDS header: {e}")))?;
    dds.data = data;
    let bytes_on_disk = write_via_tmp(path, |tmp| {
        let f = std::fs::File::create(tmp).map_err(|e| e.to_string())?;
        let mut w = std::io::BufWriter::new(f);
        dds.write(&mut w).map_err(|e| e.to_string())?;
        w.flush().map_err(|e| e.to_string())
    })?;
    let (psnr_db, max_error) = quality(image, &level0, c);
    Ok(WrittenDds {
        path: path.to_path_buf(),
        width: image.width,
        height: image.height,
        levels: levels.len() as u32,
        bytes_on_disk,
        psnr_db,
        max_error,
    })
}

/// The RGBA of texel `i` of `image` (1 channel: grey; 2: grey and alpha).
fn rgba(image: &FloatImage, i: usize) -> [f32; 4] {
    let n = image.channels as usize;
    let t = &image.data[i * n..i * n + n];
    match n {
        1 => [t[0], t[0], t[0], 1.0],
        2 => [t[0], t[0], t[0], t[1]],
        3 => [t[0], t[1], t[2], 1.0],
        _ => [t[0], t[1], t[2], t[3]],
    }
}

/// The components an encoding takes of an RGBA texel: BC4 the first channel, BC5 the
/// first two of the image's own channels, the others RGBA.
fn source_components(image: &FloatImage, i: usize, c: DdsCompression) -> [f32; 4] {
    let n = image.channels as usize;
    match c {
        DdsCompression::Bc4 | DdsCompression::Bc5 => {
            let t = &image.data[i * n..i * n + n];
            [t[0], t[n.min(2) - 1], 0.0, 1.0]
        }
        _ => rgba(image, i),
    }
}

/// One level's blocks (or texels), the image padded to whole blocks by repeating its
/// last row and column.
fn encode_level(image: &FloatImage, c: DdsCompression) -> Vec<u8> {
    let (w, h) = (image.width as usize, image.height as usize);
    let Some(codec) = c.codec() else {
        let mut out = vec![0u8; w * h * 4];
        for (i, texel) in out.chunks_exact_mut(4).enumerate() {
            for (k, v) in rgba(image, i).iter().enumerate() {
                texel[k] = unorm8(*v);
            }
        }
        return out;
    };
    let (pw, ph) = (w.div_ceil(4) * 4, h.div_ceil(4) * 4);
    let components = match codec {
        BlockCodec::Bc4 { .. } => 1,
        BlockCodec::Bc5 { .. } => 2,
        _ => 4,
    };
    let sample_bytes = if c == DdsCompression::Bc6h { 2 } else { 1 };
    let stride = pw * components * sample_bytes;
    let mut surface = vec![0u8; stride * ph];
    for y in 0..ph {
        for x in 0..pw {
            let i = y.min(h - 1) * w + x.min(w - 1);
            let v = source_components(image, i, c);
            let at = y * stride + x * components * sample_bytes;
            for k in 0..components {
                if sample_bytes == 2 {
                    let half = f16::from_f32(v[k].max(0.0)).to_le_bytes();
                    surface[at + 2 * k..at + 2 * k + 2].copy_from_slice(&half);
                } else {
                    surface[at + k] = unorm8(v[k]);
                }
            }
        }
    }
    let (width, height, stride) = (pw as u32, ph as u32, stride as u32);
    match c {
        DdsCompression::Bc4 => intel_tex_2::bc4::compress_blocks(&intel_tex_2::RSurface {
            data: &surface,
            width,
            height,
            stride,
        }),
        DdsCompression::Bc5 => intel_tex_2::bc5::compress_blocks(&intel_tex_2::RgSurface {
            data: &surface,
            width,
            height,
            stride,
        }),
        _ => {
            let s = intel_tex_2::RgbaSurface {
                data: &surface,
                width,
                height,
                stride,
            };
            match c {
                DdsCompression::Bc1 => intel_tex_2::bc1::compress_blocks(&s),
                DdsCompression::Bc3 => intel_tex_2::bc3::compress_blocks(&s),
                DdsCompression::Bc6h => {
                    intel_tex_2::bc6h::compress_blocks(&intel_tex_2::bc6h::basic_settings(), &s)
                }
                _ => {
                    let settings = if image.channels == 2 || image.channels == 4 {
                        intel_tex_2::bc7::alpha_basic_settings()
                    } else {
                        intel_tex_2::bc7::opaque_basic_settings()
                    };
                    intel_tex_2::bc7::compress_blocks(&settings, &s)
                }
            }
        }
    }
}

fn unorm8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// PSNR (dB) and largest error of `encoded` level 0 decoded against `image`.
fn quality(image: &FloatImage, encoded: &[u8], c: DdsCompression) -> (f64, f64) {
    let (w, h) = (image.width as usize, image.height as usize);
    let kept = c.kept_channels(image.channels);
    let hdr = c == DdsCompression::Bc6h;
    let mut decoded = vec![[0f32; 4]; w * h];
    match c.codec() {
        None => {
            for (d, t) in decoded.iter_mut().zip(encoded.chunks_exact(4)) {
                *d = demandtex::textures::TexelFormat::RGBA8.decode(t);
            }
        }
        Some(codec) => {
            let format = codec.served_format();
            let tb = format.texel_bytes();
            let mut texels = [0u8; 16 * 16];
            let bw = w.div_ceil(4);
            for (b, block) in encoded.chunks_exact(codec.block_bytes()).enumerate() {
                codec.decode_block(block, &mut texels[..16 * tb]);
                let (bx, by) = (b % bw * 4, b / bw * 4);
                for k in 0..16 {
                    let (x, y) = (bx + k % 4, by + k / 4);
                    if x < w && y < h {
                        decoded[y * w + x] = format.decode(&texels[k * tb..]);
                    }
                }
            }
        }
    }
    let mut peak = 1.0f64;
    let (mut sum, mut max_error) = (0.0f64, 0.0f64);
    for (i, d) in decoded.iter().enumerate() {
        let s = source_components(image, i, c);
        for k in 0..kept {
            let want = if hdr {
                f64::from(s[k].max(0.0))
            } else {
                f64::from(s[k].clamp(0.0, 1.0))
            };
            if hdr {
                peak = peak.max(want);
            }
            let e = (f64::from(d[k]) - want).abs();
            sum += e * e;
            max_error = max_error.max(e);
        }
    }
    let mse = sum / (w * h * kept) as f64;
    let psnr = if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (peak * peak / mse).log10()
    };
    (psnr, max_error)
}

/// A DDS input: level 0 through core's reader (any encoding it serves), as floats. One and
/// four served channels stay Y and RGBA; two (BC5, RG) become RGB with a blue of 0.
/// `--linearize` applies to 8- and 16-bit encodings.
pub fn load_dds(path: &Path, options: &LoadOptions) -> std::result::Result<Loaded, CliError> {
    let failed = |e: &dyn std::fmt::Display| CliError::Io(e.to_string());
    let source = DdsSource::with_options(
        path,
        DdsOptions {
            limits: options.limits,
            ..DdsOptions::default()
        },
    );
    let info = source.open().map_err(|e| failed(&e))?;
    let encoding = source.layout().map_err(|e| failed(&e))?.encoding;
    let (w, h) = (info.width, info.height);
    let channels = match info.format.channels {
        1 => 1,
        2 => 3,
        _ => 4,
    };
    let data = super::core_inputs::core_level_0(path, &source, &info, channels, &options.limits)?;
    let integer = matches!(info.format.texel_type, TexelType::U8 | TexelType::U16)
        && !matches!(encoding, DdsEncoding::Blocks(BlockCodec::Bc6h { .. }));
    finish(path, "DDS", (w, h, channels as u32), data, integer, options)
}
