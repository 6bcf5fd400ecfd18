//! `TextureSampler`: the device-visible description of one texture, pointed to by the page
//! table entry of the texture's sampler page. `#[repr(C)]` with plain integer fields (no
//! bitfields) so C, C++ and CUDA read the same bytes.

use super::desc::TextureDesc;
use super::layout::{TextureLayout, MAX_LEVELS};

/// One mip level as the samplers see it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SamplerLevel {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Tiled levels: page of the first tile relative to `TextureSampler::start_page`.
    /// Levels in the mip tail: byte offset of the level in the packed mip tail.
    pub offset: u32,
    /// Tile columns (0 in the mip tail).
    pub tiles_x: u32,
}

/// Flag: the texture failed; every lookup returns `fallback_color`.
pub const SAMPLER_FLAG_FAILED: u32 = 1;

/// The device-visible description of one texture.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextureSampler {
    /// CUDA: the `CUtexObject` of the sparse texture. CPU: 0.
    pub texture_object: u64,
    /// CPU: address of the packed mip tail in host memory. CUDA: 0 (the tail is mapped into
    /// the sparse array).
    pub mip_tail_data: u64,
    /// First page of the texture's tile range (the mip-tail page).
    pub start_page: u32,
    /// Pages in the texture's range.
    pub num_pages: u32,
    /// Level-0 width.
    pub width: u32,
    /// Level-0 height.
    pub height: u32,
    /// Mip levels.
    pub num_levels: u32,
    /// First level stored in the mip tail (`num_levels` if none is).
    pub mip_tail_first_level: u32,
    /// Tile width in texels.
    pub tile_width: u32,
    /// Tile height in texels.
    pub tile_height: u32,
    /// `TexelType` code (for blocks: of the decoded texels).
    pub texel_type: u32,
    /// Channels (1, 2 or 4; for blocks: of the decoded texels).
    pub channels: u32,
    /// Bytes per texel, or per 4×4 block where `block_codec` is not 0.
    pub texel_bytes: u32,
    /// `AddressMode` code for s.
    pub address_s: u32,
    /// `AddressMode` code for t.
    pub address_t: u32,
    /// `FilterMode` code.
    pub filter: u32,
    /// `MipFilter` code.
    pub mip_filter: u32,
    /// Largest anisotropy honoured.
    pub max_anisotropy: u32,
    /// `SAMPLER_FLAG_*` bits.
    pub flags: u32,
    /// 0: pages hold texels. Else the `BlockCodec` code (1..=10) of the 4×4 blocks pages
    /// hold (`TextureLayout::blocks`).
    pub block_codec: u32,
    /// Colour returned once the texture has failed.
    pub fallback_color: [f32; 4],
    /// Per level, finest first; entries past `num_levels` are zero.
    pub levels: [SamplerLevel; MAX_LEVELS],
}

impl TextureSampler {
    /// The sampler of a texture laid out as `layout` whose range starts at `start_page`.
    pub fn new(layout: &TextureLayout, desc: &TextureDesc, start_page: u32) -> TextureSampler {
        let mut levels = [SamplerLevel::default(); MAX_LEVELS];
        for (dst, src) in levels.iter_mut().zip(&layout.levels) {
            *dst = SamplerLevel {
                width: src.width,
                height: src.height,
                offset: src.offset,
                tiles_x: src.tiles_x,
            };
        }
        TextureSampler {
            texture_object: 0,
            mip_tail_data: 0,
            start_page,
            num_pages: layout.num_pages,
            width: layout.width,
            height: layout.height,
            num_levels: layout.num_levels(),
            mip_tail_first_level: layout.mip_tail_first_level,
            tile_width: layout.tile_width,
            tile_height: layout.tile_height,
            texel_type: layout.format.texel_type as u32,
            channels: layout.format.channels,
            texel_bytes: match layout.blocks {
                Some(codec) => codec.block_bytes() as u32,
                None => layout.format.texel_bytes() as u32,
            },
            address_s: desc.address[0] as u32,
            address_t: desc.address[1] as u32,
            filter: desc.filter as u32,
            mip_filter: desc.mip_filter as u32,
            max_anisotropy: desc.max_anisotropy.clamp(1, super::desc::MAX_ANISOTROPY),
            flags: 0,
            block_codec: layout.blocks.map_or(0, |c| c.code()),
            fallback_color: desc.fallback_color,
            levels,
        }
    }
}

const _: () = assert!(std::mem::size_of::<SamplerLevel>() == 16);
const _: () = assert!(std::mem::size_of::<TextureSampler>() == 104 + 16 * MAX_LEVELS);
const _: () = assert!(std::mem::align_of::<TextureSampler>() == 8);
