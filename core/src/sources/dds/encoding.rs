//! How a DDS file stores its texels ([`DdsEncoding`]): BC1–BC7 blocks or plain texels,
//! the format demandtex serves them in, and the decoding of a row of blocks or texels.
//! Blocks are decoded with the `bcdec_rs` crate.

use crate::textures::{TexelFormat, TexelType};
use half::f16;

/// A block-compression codec (4×4 texels a block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum BlockCodec {
    /// BC1 (DXT1): RGB and 1-bit alpha, 8 bytes a block.
    Bc1,
    /// BC2 (DXT2/DXT3): RGB and explicit 4-bit alpha, 16 bytes.
    Bc2,
    /// BC3 (DXT4/DXT5): RGB and interpolated alpha, 16 bytes.
    Bc3,
    /// BC4: one channel, 8 bytes (signed: [-1, 1]).
    Bc4 {
        /// SNORM rather than UNORM.
        signed: bool,
    },
    /// BC5: two channels, 16 bytes (signed: [-1, 1]).
    Bc5 {
        /// SNORM rather than UNORM.
        signed: bool,
    },
    /// BC6H: half-float RGB, 16 bytes (signed: SF16, else UF16).
    Bc6h {
        /// SF16 rather than UF16.
        signed: bool,
    },
    /// BC7: RGBA, 16 bytes.
    Bc7,
}

impl BlockCodec {
    /// Bytes of one 4×4 block.
    pub const fn block_bytes(self) -> usize {
        match self {
            BlockCodec::Bc1 | BlockCodec::Bc4 { .. } => 8,
            _ => 16,
        }
    }

    /// The codec's name: "BC1", "BC4 (signed)", ...
    pub fn name(self) -> String {
        let (base, signed) = match self {
            BlockCodec::Bc1 => ("BC1", false),
            BlockCodec::Bc2 => ("BC2", false),
            BlockCodec::Bc3 => ("BC3", false),
            BlockCodec::Bc4 { signed } => ("BC4", signed),
            BlockCodec::Bc5 { signed } => ("BC5", signed),
            BlockCodec::Bc6h { signed } => ("BC6H", signed),
            BlockCodec::Bc7 => ("BC7", false),
        };
        if signed {
            format!("{base} (signed)")
        } else {
            base.to_owned()
        }
    }

    /// The format demandtex serves the decoded texels in: 8-bit RGBA for BC1–3 and BC7,
    /// 8-bit R / RG for BC4 / BC5 (float when signed), half RGBA for BC6H.
    pub fn served_format(self) -> TexelFormat {
        let (texel_type, channels) = match self {
            BlockCodec::Bc1 | BlockCodec::Bc2 | BlockCodec::Bc3 | BlockCodec::Bc7 => {
                (TexelType::U8, 4)
            }
            BlockCodec::Bc4 { signed } => (
                if signed {
                    TexelType::F32
                } else {
                    TexelType::U8
                },
                1,
            ),
            BlockCodec::Bc5 { signed } => (
                if signed {
                    TexelType::F32
                } else {
                    TexelType::U8
                },
                2,
            ),
            BlockCodec::Bc6h { .. } => (TexelType::F16, 4),
        };
        TexelFormat {
            texel_type,
            channels,
        }
    }

    /// Decode one block (`block_bytes()` bytes) into 4×4 texels of
    /// [`served_format`](Self::served_format), packed row-major into `out` (16 texels).
    pub fn decode_block(self, block: &[u8], out: &mut [u8]) {
        let tb = self.served_format().texel_bytes();
        let pitch = 4 * tb;
        match self {
            BlockCodec::Bc1 => bcdec_rs::bc1(block, out, pitch),
            BlockCodec::Bc2 => bcdec_rs::bc2(block, out, pitch),
            BlockCodec::Bc3 => bcdec_rs::bc3(block, out, pitch),
            BlockCodec::Bc7 => bcdec_rs::bc7(block, out, pitch),
            BlockCodec::Bc4 { signed: false } => bcdec_rs::bc4(block, out, pitch, false),
            BlockCodec::Bc5 { signed: false } => bcdec_rs::bc5(block, out, pitch, false),
            BlockCodec::Bc4 { signed: true } => {
                let mut f = [0f32; 16];
                bcdec_rs::bc4_float(block, &mut f, 4, true);
                put_floats(&f, out);
            }
            BlockCodec::Bc5 { signed: true } => {
                let mut f = [0f32; 32];
                bcdec_rs::bc5_float(block, &mut f, 8, true);
                put_floats(&f, out);
            }
            BlockCodec::Bc6h { signed } => {
                let mut rgb = [0u16; 48];
                bcdec_rs::bc6h_half(block, &mut rgb, 12, signed);
                let one = f16::ONE.to_bits();
                for (texel, dst) in rgb.chunks_exact(3).zip(out.chunks_exact_mut(8)) {
                    for (c, v) in texel.iter().chain(std::iter::once(&one)).enumerate() {
                        dst[2 * c..2 * c + 2].copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
    }
}

fn put_floats(values: &[f32], out: &mut [u8]) {
    for (v, dst) in values.iter().zip(out.chunks_exact_mut(4)) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

/// Uncompressed texels: component type, channels in the file, their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct PlainTexels {
    /// Component type.
    pub texel_type: TexelType,
    /// Channels stored per texel (1–4).
    pub channels: u32,
    /// Stored blue, green, red (D3D's `A8R8G8B8` / DXGI's `B8G8R8A8`), swapped on read.
    pub bgr: bool,
    /// The fourth channel is padding (`X8R8G8B8`): served as an alpha of 1.
    pub padded: bool,
}

impl PlainTexels {
    /// Bytes of one stored texel.
    pub const fn texel_bytes(self) -> usize {
        self.texel_type.bytes() * self.channels as usize
    }

    /// The format served: the stored channels, three widened to four.
    pub fn served_format(self) -> TexelFormat {
        TexelFormat {
            texel_type: self.texel_type,
            channels: if self.channels == 3 { 4 } else { self.channels },
        }
    }

    /// Convert `count` stored texels at the start of `src` into served texels in `dest`.
    pub fn convert_row(self, src: &[u8], dest: &mut [u8], count: usize) {
        let served = self.served_format();
        let (sb, db) = (self.texel_bytes(), served.texel_bytes());
        let cb = self.texel_type.bytes();
        if sb == db && !self.bgr && !self.padded {
            dest[..count * db].copy_from_slice(&src[..count * sb]);
            return;
        }
        let one: &[u8] = match self.texel_type {
            TexelType::U8 => &[0xff],
            TexelType::U16 => &[0xff, 0xff],
            TexelType::F16 => &[0x00, 0x3c],
            TexelType::F32 => &[0x00, 0x00, 0x80, 0x3f],
        };
        for (s, d) in src
            .chunks_exact(sb)
            .zip(dest.chunks_exact_mut(db))
            .take(count)
        {
            d[..sb].copy_from_slice(s);
            if self.bgr {
                // Components 0 and 2 trade places.
                let (first, rest) = d.split_at_mut(2 * cb);
                first[..cb].swap_with_slice(&mut rest[..cb]);
            }
            if self.channels == 3 || self.padded {
                d[3 * cb..4 * cb].copy_from_slice(one);
            }
        }
    }
}

/// How a DDS file stores its texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum DdsEncoding {
    /// 4×4 blocks of a BC codec.
    Blocks(BlockCodec),
    /// Uncompressed texels.
    Plain(PlainTexels),
}

impl DdsEncoding {
    /// The format demandtex serves the texels in.
    pub fn served_format(self) -> TexelFormat {
        match self {
            DdsEncoding::Blocks(c) => c.served_format(),
            DdsEncoding::Plain(p) => p.served_format(),
        }
    }

    /// Rows of texels one stored row holds (4 for blocks), and its bytes for a level
    /// `width` texels wide.
    pub fn row_unit(self) -> usize {
        match self {
            DdsEncoding::Blocks(_) => 4,
            DdsEncoding::Plain(_) => 1,
        }
    }

    /// Bytes of one stored row (a row of blocks, or of texels) of a level `width` wide.
    pub fn row_bytes(self, width: u32) -> u64 {
        match self {
            DdsEncoding::Blocks(c) => u64::from(width.div_ceil(4)) * c.block_bytes() as u64,
            DdsEncoding::Plain(p) => u64::from(width) * p.texel_bytes() as u64,
        }
    }

    /// Bytes of a stored `width × height` level.
    pub fn level_bytes(self, width: u32, height: u32) -> u64 {
        let rows = u64::from(height).div_ceil(self.row_unit() as u64);
        rows * self.row_bytes(width)
    }

    /// Stored bits per texel (BC1: 4, BC7: 8, RGBA8: 32).
    pub fn bits_per_texel(self) -> u32 {
        match self {
            DdsEncoding::Blocks(c) => c.block_bytes() as u32 * 8 / 16,
            DdsEncoding::Plain(p) => p.texel_bytes() as u32 * 8,
        }
    }

    /// A name for messages and `demandtex info`: "BC7", "RGBA8 (stored BGRA)", ...
    pub fn name(self) -> String {
        match self {
            DdsEncoding::Blocks(c) => c.name(),
            DdsEncoding::Plain(p) => {
                let order = match (p.bgr, p.padded, p.channels) {
                    (true, true, _) => " (stored BGRX)",
                    (true, false, 3) => " (stored BGR)",
                    (true, false, _) => " (stored BGRA)",
                    (false, true, _) => " (stored RGBX)",
                    (false, false, 3) => " (stored RGB)",
                    _ => "",
                };
                format!("{}{order}", p.served_format())
            }
        }
    }
}
