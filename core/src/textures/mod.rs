//! Textures: texel formats, sampling descriptors, tile indexing and the device-visible
//! sampler record. Pure data and arithmetic; nothing here touches pages or memory.

pub mod blocks;
pub mod desc;
pub mod duplicate_key;
pub mod format;
pub mod layout;
pub mod sampler;

pub use blocks::{BlockCodec, BLOCK_CODECS};
pub use desc::{
    AddressMode, FilterMode, MipFilter, TextureDesc, DEFAULT_FALLBACK_COLOR, MAX_ANISOTROPY,
};
pub use duplicate_key::DuplicateKey;
pub use format::{TexelFormat, TexelType};
pub use layout::{
    file_tile_pages, full_mip_levels, mip_level_size, LevelLayout, PageContent, TextureLayout,
    TileRegion, WholeDecode, MAX_LEVELS, MAX_TEXTURE_SIZE,
};
pub use sampler::{SamplerLevel, TextureSampler, SAMPLER_FLAG_FAILED};
