//! Block-compressed texel formats: the BC1–BC7 codecs (4×4 texels a block), their codes
//! shared with C and CUDA, the 64 KiB tile shapes CUDA sparse arrays give them, and the
//! decoding of one block (the `bcdec_rs` crate).

use super::format::{TexelFormat, TexelType};
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

/// Every codec, in code order (`BlockCodec::code` 1 to 10).
pub const BLOCK_CODECS: [BlockCodec; 10] = [
    BlockCodec::Bc1,
    BlockCodec::Bc2,
    BlockCodec::Bc3,
    BlockCodec::Bc4 { signed: false },
    BlockCodec::Bc4 { signed: true },
    BlockCodec::Bc5 { signed: false },
    BlockCodec::Bc5 { signed: true },
    BlockCodec::Bc6h { signed: false },
    BlockCodec::Bc6h { signed: true },
    BlockCodec::Bc7,
];

impl BlockCodec {
    /// The codec's code in a sampler record (`TextureSampler::block_codec`; C's
    /// `DTEX_BLOCK_*`): BC1 1, BC2 2, BC3 3, BC4 4 (signed 5), BC5 6 (signed 7), BC6H 8
    /// (signed 9), BC7 10. 0 means texels, not blocks.
    pub fn code(self) -> u32 {
        BLOCK_CODECS
            .iter()
            .position(|&c| c == self)
            .map_or(0, |i| i as u32 + 1)
    }

    /// The codec of a sampler record's code; `None` for 0 (texels) or an unknown code.
    pub const fn from_code(code: u32) -> Option<BlockCodec> {
        match code {
            1..=10 => Some(BLOCK_CODECS[code as usize - 1]),
            _ => None,
        }
    }

    /// Width and height in texels of one 64 KiB tile of blocks: the shapes CUDA sparse
    /// arrays give block-compressed formats (8-byte blocks: 128×64 blocks, 512×256
    /// texels; 16-byte blocks: 64×64 blocks, 256×256 texels).
    pub const fn tile_extent(self) -> (u32, u32) {
        match self.block_bytes() {
            8 => (512, 256),
            _ => (256, 256),
        }
    }

    /// Bytes of the blocks covering `width × height` texels (partial blocks at the edges
    /// are whole blocks).
    pub const fn region_bytes(self, width: u32, height: u32) -> u64 {
        width.div_ceil(4) as u64 * height.div_ceil(4) as u64 * self.block_bytes() as u64
    }

    /// Bytes of one row of blocks covering `width` texels.
    pub const fn row_bytes(self, width: u32) -> usize {
        width.div_ceil(4) as usize * self.block_bytes()
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_zero_is_texels() {
        for (i, c) in BLOCK_CODECS.iter().enumerate() {
            assert_eq!(c.code(), i as u32 + 1);
            assert_eq!(BlockCodec::from_code(c.code()), Some(*c));
        }
        assert_eq!(BlockCodec::from_code(0), None);
        assert_eq!(BlockCodec::from_code(11), None);
        assert_eq!(BlockCodec::from_code(u32::MAX), None);
    }

    #[test]
    fn a_tile_of_blocks_is_one_page() {
        for c in BLOCK_CODECS {
            let (w, h) = c.tile_extent();
            assert_eq!(c.region_bytes(w, h), crate::TILE_BYTES as u64, "{c:?}");
            assert_eq!(c.row_bytes(w) * (h as usize / 4), crate::TILE_BYTES);
        }
        assert_eq!(BlockCodec::Bc1.region_bytes(5, 1), 16);
        assert_eq!(BlockCodec::Bc7.region_bytes(1, 1), 16);
    }
}
