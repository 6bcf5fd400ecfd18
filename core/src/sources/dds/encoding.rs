//! How a DDS file stores its texels ([`DdsEncoding`]): BC1–BC7 blocks or plain texels,
//! the format demandtex serves them in, and the decoding of a row of blocks or texels.
//! Blocks are decoded by [`BlockCodec::decode_block`] (the `bcdec_rs` crate).

pub use crate::textures::BlockCodec;
use crate::textures::{TexelFormat, TexelType};

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
