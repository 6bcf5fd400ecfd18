//! How a texture is sampled: address modes, filters, anisotropy, fallback colour.

/// What happens to coordinates outside [0, 1). Values shared with C and CUDA
/// (they equal CUDA's `CUaddress_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u32)]
pub enum AddressMode {
    /// Repeat (periodic).
    #[default]
    Wrap = 0,
    /// Clamp to the edge texel.
    Clamp = 1,
    /// Repeat mirrored.
    Mirror = 2,
    /// Outside is transparent black.
    Border = 3,
}

impl AddressMode {
    /// The mode for a device code.
    pub fn from_code(code: u32) -> AddressMode {
        match code {
            1 => AddressMode::Clamp,
            2 => AddressMode::Mirror,
            3 => AddressMode::Border,
            _ => AddressMode::Wrap,
        }
    }
}

/// Filtering within one mip level. Values equal CUDA's `CUfilter_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u32)]
pub enum FilterMode {
    /// Nearest texel.
    Point = 0,
    /// Bilinear.
    #[default]
    Linear = 1,
}

/// Filtering between mip levels. Values equal CUDA's `CUfilter_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u32)]
pub enum MipFilter {
    /// Nearest level.
    Point = 0,
    /// Blend the two levels around the level of detail (trilinear with a linear filter).
    #[default]
    Linear = 1,
}

/// The sampling state of a texture, fixed at creation.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TextureDesc {
    /// Address modes for s and t.
    pub address: [AddressMode; 2],
    /// Filter within a level.
    pub filter: FilterMode,
    /// Filter between levels.
    pub mip_filter: MipFilter,
    /// Largest anisotropy ratio honoured (1 = isotropic; at most 16).
    pub max_anisotropy: u32,
    /// The colour every lookup returns once the texture has failed (its source could not
    /// be opened or read). Opaque magenta by default, so failures are visible.
    pub fallback_color: [f32; 4],
}

impl Default for TextureDesc {
    fn default() -> Self {
        TextureDesc {
            address: [AddressMode::Wrap; 2],
            filter: FilterMode::Linear,
            mip_filter: MipFilter::Linear,
            max_anisotropy: 1,
            fallback_color: DEFAULT_FALLBACK_COLOR,
        }
    }
}

/// Opaque magenta: the default colour of failed textures.
pub const DEFAULT_FALLBACK_COLOR: [f32; 4] = [1.0, 0.0, 1.0, 1.0];

/// Most anisotropy supported (as CUDA).
pub const MAX_ANISOTROPY: u32 = 16;
