//! The DDS header ([`DdsLayout::parse`]): size, mip levels and where each level's data
//! lies, the texel encoding (legacy FourCC and pixel masks, or the DX10 header's DXGI
//! format), colour space and alpha mode. Headers are read with the `ddsfile` crate; every
//! size the header declares is checked against the file's length and the size limits
//! before anything is allocated.

use super::encoding::{BlockCodec, DdsEncoding, PlainTexels};
use crate::sources::SizeLimits;
use crate::textures::{full_mip_levels, mip_level_size, TexelType, MAX_TEXTURE_SIZE};
use ddsfile::{
    AlphaMode, Caps2, D3D10ResourceDimension, D3DFormat, DxgiFormat, FourCC, Header, Header10,
    MiscFlag, PixelFormatFlags,
};

/// The first four bytes of every DDS file.
pub const DDS_MAGIC: [u8; 4] = *b"DDS ";
/// Bytes of the magic number and the header.
const HEADER_BYTES: u64 = 4 + 124;
/// Bytes of the DX10 header extension.
const HEADER10_BYTES: u64 = 20;
/// Bytes to read to parse any header.
pub const MAX_HEADER_BYTES: usize = (HEADER_BYTES + HEADER10_BYTES) as usize;

/// One stored mip level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DdsLevel {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Byte offset of the level's data in the file.
    pub offset: u64,
    /// Bytes of the level's data.
    pub bytes: u64,
}

/// What a DDS header says, checked.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DdsLayout {
    /// The texel encoding.
    pub encoding: DdsEncoding,
    /// The format as the file names it: `DXGI_FORMAT_BC7_UNORM_SRGB`, `FourCC DXT1`,
    /// `D3DFMT_A8R8G8B8`.
    pub format_name: String,
    /// The format is flagged sRGB (`_SRGB` DXGI formats): samples are served as stored.
    pub srgb: bool,
    /// Colour is premultiplied by alpha (DXT2, DXT4, or the DX10 alpha mode).
    pub premultiplied: bool,
    /// Stored levels, finest first.
    pub levels: Vec<DdsLevel>,
    /// Bytes of texel data (every stored level).
    pub data_bytes: u64,
}

impl DdsLayout {
    /// Level-0 width.
    pub fn width(&self) -> u32 {
        self.levels[0].width
    }

    /// Level-0 height.
    pub fn height(&self) -> u32 {
        self.levels[0].height
    }

    /// Parse the header at the start of `head` (at least the first
    /// [`MAX_HEADER_BYTES`] bytes of a file of `file_len` bytes, or the whole file).
    pub fn parse(head: &[u8], file_len: u64, limits: &SizeLimits) -> Result<DdsLayout, String> {
        if !head.starts_with(&DDS_MAGIC) {
            return Err("not a DDS file (no \"DDS \" magic number)".into());
        }
        if (head.len() as u64) < HEADER_BYTES {
            return Err(format!(
                "truncated header: {} bytes, a DDS header has {HEADER_BYTES}",
                head.len()
            ));
        }
        let header = Header::read(&head[4..]).map_err(|e| format!("bad header: {e}"))?;
        let dx10 = header.spf.fourcc == Some(FourCC(FourCC::DX10));
        let (header10, data_offset) = if dx10 {
            if (head.len() as u64) < HEADER_BYTES + HEADER10_BYTES {
                return Err("truncated DX10 header".into());
            }
            let mut raw = [0u8; HEADER10_BYTES as usize];
            raw.copy_from_slice(&head[HEADER_BYTES as usize..][..HEADER10_BYTES as usize]);
            // misc_flags2: only its low three bits (the alpha mode) are defined.
            raw[16] &= 0x7;
            raw[17..20].fill(0);
            let h10 = Header10::read(&raw[..]).map_err(|e| format!("bad DX10 header: {e}"))?;
            (Some(h10), HEADER_BYTES + HEADER10_BYTES)
        } else {
            (None, HEADER_BYTES)
        };
        check_dimensionality(&header, header10.as_ref())?;
        let (encoding, format_name, srgb, mut premultiplied) = match &header10 {
            Some(h) => {
                let (enc, srgb) = from_dxgi(h.dxgi_format)?;
                (
                    enc,
                    format!("DXGI_FORMAT_{:?}", h.dxgi_format).to_uppercase(),
                    srgb,
                    false,
                )
            }
            None => {
                let (enc, name, premultiplied) = from_legacy(&header)?;
                (enc, name, false, premultiplied)
            }
        };
        if let Some(h) = &header10 {
            premultiplied = h.alpha_mode == AlphaMode::PreMultiplied;
        }
        let (width, height) = (header.width, header.height.max(1));
        if width == 0 || width > MAX_TEXTURE_SIZE || height > MAX_TEXTURE_SIZE {
            return Err(format!(
                "image size {width}×{height} (each side must be 1..={MAX_TEXTURE_SIZE})"
            ));
        }
        let full = full_mip_levels(width, height);
        let declared = header.mip_map_count.unwrap_or(1).max(1);
        if declared > full {
            return Err(format!(
                "the header declares {declared} mip levels; a {width}×{height} image has at most {full}"
            ));
        }
        let mut levels = Vec::with_capacity(declared as usize);
        let mut offset = data_offset;
        for l in 0..declared {
            let (w, h) = mip_level_size(width, height, l);
            let bytes = encoding.level_bytes(w, h);
            levels.push(DdsLevel {
                width: w,
                height: h,
                offset,
                bytes,
            });
            offset += bytes;
        }
        let data_bytes = offset - data_offset;
        let served = encoding.served_format().texel_bytes() as u64;
        limits.check_image_size("level 0", (width.into(), height.into()), served)?;
        if offset > file_len {
            return Err(format!(
                "truncated: {declared} mip level{} of {} need {data_bytes} bytes after the header, the file has {}",
                if declared == 1 { "" } else { "s" },
                encoding.name(),
                file_len.saturating_sub(data_offset)
            ));
        }
        Ok(DdsLayout {
            encoding,
            format_name,
            srgb,
            premultiplied,
            levels,
            data_bytes,
        })
    }
}

/// Only 2D (or 1D) textures of one image: no cube maps, volumes or arrays.
fn check_dimensionality(header: &Header, header10: Option<&Header10>) -> Result<(), String> {
    if header.caps2.contains(Caps2::CUBEMAP)
        || header10.is_some_and(|h| h.misc_flag.contains(MiscFlag::TEXTURECUBE))
    {
        return Err("a cube map (only 2D textures are served)".into());
    }
    if header.caps2.contains(Caps2::VOLUME)
        || header.depth.is_some_and(|d| d > 1)
        || header10.is_some_and(|h| h.resource_dimension == D3D10ResourceDimension::Texture3D)
    {
        return Err("a volume texture (only 2D textures are served)".into());
    }
    if let Some(h) = header10 {
        if h.array_size > 1 {
            return Err(format!(
                "a texture array of {} images (only single 2D textures are served)",
                h.array_size
            ));
        }
        if !matches!(
            h.resource_dimension,
            D3D10ResourceDimension::Texture1D | D3D10ResourceDimension::Texture2D
        ) {
            return Err(format!(
                "resource dimension {:?} (only 2D textures are served)",
                h.resource_dimension
            ));
        }
    }
    Ok(())
}

fn plain(texel_type: TexelType, channels: u32) -> DdsEncoding {
    DdsEncoding::Plain(PlainTexels {
        texel_type,
        channels,
        bgr: false,
        padded: false,
    })
}

fn bgr(channels: u32, padded: bool) -> DdsEncoding {
    DdsEncoding::Plain(PlainTexels {
        texel_type: TexelType::U8,
        channels,
        bgr: true,
        padded,
    })
}

/// The encoding of a DXGI format, and whether it is flagged sRGB.
fn from_dxgi(f: DxgiFormat) -> Result<(DdsEncoding, bool), String> {
    use DxgiFormat as D;
    use TexelType::*;
    let blocks = |c| DdsEncoding::Blocks(c);
    Ok(match f {
        D::BC1_UNorm | D::BC1_Typeless => (blocks(BlockCodec::Bc1), false),
        D::BC1_UNorm_sRGB => (blocks(BlockCodec::Bc1), true),
        D::BC2_UNorm | D::BC2_Typeless => (blocks(BlockCodec::Bc2), false),
        D::BC2_UNorm_sRGB => (blocks(BlockCodec::Bc2), true),
        D::BC3_UNorm | D::BC3_Typeless => (blocks(BlockCodec::Bc3), false),
        D::BC3_UNorm_sRGB => (blocks(BlockCodec::Bc3), true),
        D::BC4_UNorm | D::BC4_Typeless => (blocks(BlockCodec::Bc4 { signed: false }), false),
        D::BC4_SNorm => (blocks(BlockCodec::Bc4 { signed: true }), false),
        D::BC5_UNorm | D::BC5_Typeless => (blocks(BlockCodec::Bc5 { signed: false }), false),
        D::BC5_SNorm => (blocks(BlockCodec::Bc5 { signed: true }), false),
        D::BC6H_UF16 | D::BC6H_Typeless => (blocks(BlockCodec::Bc6h { signed: false }), false),
        D::BC6H_SF16 => (blocks(BlockCodec::Bc6h { signed: true }), false),
        D::BC7_UNorm | D::BC7_Typeless => (blocks(BlockCodec::Bc7), false),
        D::BC7_UNorm_sRGB => (blocks(BlockCodec::Bc7), true),
        D::R8G8B8A8_UNorm | D::R8G8B8A8_Typeless => (plain(U8, 4), false),
        D::R8G8B8A8_UNorm_sRGB => (plain(U8, 4), true),
        D::B8G8R8A8_UNorm | D::B8G8R8A8_Typeless => (bgr(4, false), false),
        D::B8G8R8A8_UNorm_sRGB => (bgr(4, false), true),
        D::B8G8R8X8_UNorm | D::B8G8R8X8_Typeless => (bgr(4, true), false),
        D::B8G8R8X8_UNorm_sRGB => (bgr(4, true), true),
        D::R8_UNorm => (plain(U8, 1), false),
        D::R8G8_UNorm => (plain(U8, 2), false),
        D::R16_UNorm => (plain(U16, 1), false),
        D::R16G16_UNorm => (plain(U16, 2), false),
        D::R16G16B16A16_UNorm => (plain(U16, 4), false),
        D::R16_Float => (plain(F16, 1), false),
        D::R16G16_Float => (plain(F16, 2), false),
        D::R16G16B16A16_Float => (plain(F16, 4), false),
        D::R32_Float => (plain(F32, 1), false),
        D::R32G32_Float => (plain(F32, 2), false),
        D::R32G32B32_Float => (plain(F32, 3), false),
        D::R32G32B32A32_Float => (plain(F32, 4), false),
        other => {
            return Err(format!(
                "DXGI format {other:?} is not served (BC1–BC7, 8/16-bit UNORM, half and float R/RG/RGBA are)"
            ))
        }
    })
}

/// The encoding of a legacy header (FourCC or pixel masks), the format's name, and
/// whether colour is premultiplied (DXT2, DXT4).
fn from_legacy(header: &Header) -> Result<(DdsEncoding, String, bool), String> {
    use TexelType::*;
    let blocks = |c| DdsEncoding::Blocks(c);
    if let Some(FourCC(code)) = header.spf.fourcc {
        let text: String = code
            .to_le_bytes()
            .iter()
            .map(|&b| if b.is_ascii_graphic() { b as char } else { '?' })
            .collect();
        let name = format!("FourCC {text}");
        let enc = match &code.to_le_bytes() {
            b"DXT1" => blocks(BlockCodec::Bc1),
            b"DXT2" | b"DXT3" => blocks(BlockCodec::Bc2),
            b"DXT4" | b"DXT5" => blocks(BlockCodec::Bc3),
            b"ATI1" | b"BC4U" => blocks(BlockCodec::Bc4 { signed: false }),
            b"BC4S" => blocks(BlockCodec::Bc4 { signed: true }),
            b"ATI2" | b"BC5U" => blocks(BlockCodec::Bc5 { signed: false }),
            b"BC5S" => blocks(BlockCodec::Bc5 { signed: true }),
            _ => match D3DFormat::try_from_pixel_format(&header.spf) {
                Some(D3DFormat::A16B16G16R16) => plain(U16, 4),
                Some(D3DFormat::R16F) => plain(F16, 1),
                Some(D3DFormat::G16R16F) => plain(F16, 2),
                Some(D3DFormat::A16B16G16R16F) => plain(F16, 4),
                Some(D3DFormat::R32F) => plain(F32, 1),
                Some(D3DFormat::G32R32F) => plain(F32, 2),
                Some(D3DFormat::A32B32G32R32F) => plain(F32, 4),
                _ => return Err(format!("{name} ({code:#x}) is not a format served")),
            },
        };
        let premultiplied = matches!(&code.to_le_bytes(), b"DXT2" | b"DXT4");
        return Ok((enc, name, premultiplied));
    }
    // Luminance: the masks are not read for it (some writers leave them odd), the bit
    // count says which.
    let flags = header.spf.flags;
    if flags.contains(PixelFormatFlags::LUMINANCE) && !flags.contains(PixelFormatFlags::RGB) {
        let alpha = flags.contains(PixelFormatFlags::ALPHA_PIXELS);
        return match (header.spf.rgb_bit_count, alpha) {
            (Some(8), false) => Ok((plain(U8, 1), "D3DFMT_L8".into(), false)),
            (Some(16), false) => Ok((plain(U16, 1), "D3DFMT_L16".into(), false)),
            (bits, _) => Err(format!(
                "luminance{} of {} bits is not a format served (L8 and L16 are)",
                if alpha { " with alpha" } else { "" },
                bits.unwrap_or(0)
            )),
        };
    }
    let Some(format) = D3DFormat::try_from_pixel_format(&header.spf) else {
        let s = &header.spf;
        return Err(format!(
            "unknown pixel format (flags {:#x}, {} bits, masks R {:#x} G {:#x} B {:#x} A {:#x})",
            s.flags.bits(),
            s.rgb_bit_count.unwrap_or(0),
            s.r_bit_mask.unwrap_or(0),
            s.g_bit_mask.unwrap_or(0),
            s.b_bit_mask.unwrap_or(0),
            s.a_bit_mask.unwrap_or(0)
        ));
    };
    let name = format!("D3DFMT_{format:?}").to_uppercase();
    let enc = match format {
        D3DFormat::A8B8G8R8 => plain(U8, 4),
        D3DFormat::X8B8G8R8 => DdsEncoding::Plain(PlainTexels {
            texel_type: U8,
            channels: 4,
            bgr: false,
            padded: true,
        }),
        D3DFormat::A8R8G8B8 => bgr(4, false),
        D3DFormat::X8R8G8B8 => bgr(4, true),
        D3DFormat::R8G8B8 => bgr(3, false),
        D3DFormat::L8 => plain(U8, 1),
        D3DFormat::L16 => plain(U16, 1),
        D3DFormat::G16R16 => plain(U16, 2),
        _ => return Err(format!("{name} is not a format served")),
    };
    Ok((enc, name, false))
}
