//! The first step of every lookup: from a texture id to its sampler record or base colour,
//! through the texture's two page-table entries (sampler page and base-colour page).

use super::{CpuView, Sample};
use crate::ids::{is_tile_size, TextureId};
use crate::paging::decode_base_color;
use crate::textures::{
    BlockCodec, TexelType, TextureSampler, DEFAULT_FALLBACK_COLOR, MAX_LEVELS, SAMPLER_FLAG_FAILED,
};

/// What a texture's base-colour page says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BaseColor {
    /// The average colour of the texture.
    Color([f32; 4]),
    /// The texture has no base colour (`NO_BASE_COLOR`).
    Absent,
    /// The page is not resident (a request was recorded).
    NotResident,
}

/// Read (and record a use of) the base-colour page of `texture`.
#[inline]
pub(crate) fn base_color(view: CpuView<'_>, texture: TextureId) -> BaseColor {
    match view.map_or_request(view.pages().layout().base_color_page(texture).0) {
        None => BaseColor::NotResident,
        Some(entry) => match decode_base_color(entry) {
            Some(c) => BaseColor::Color(c),
            None => BaseColor::Absent,
        },
    }
}

/// The value of a lookup that missed: the base colour if resident, else zeros.
#[inline]
pub(crate) fn miss_color(view: CpuView<'_>, texture: TextureId) -> [f32; 4] {
    match base_color(view, texture) {
        BaseColor::Color(c) => c,
        BaseColor::Absent | BaseColor::NotResident => [0.0; 4],
    }
}

/// The sampler record of `texture` (its page recorded as used), or the whole answer when
/// there is nothing to filter:
/// - page not resident: the miss colour, non-resident;
/// - entry 0 (degenerate or failed texture): the base colour, resident; with no base
///   colour [`DEFAULT_FALLBACK_COLOR`]; base-colour page not resident: zeros, non-resident;
/// - failed (`SAMPLER_FLAG_FAILED`) or malformed record: its `fallback_color`, resident.
#[inline]
pub(crate) fn sampler<'a>(
    view: CpuView<'a>,
    texture: TextureId,
) -> Result<&'a TextureSampler, Sample> {
    let Some(entry) = view.map_or_request(view.pages().layout().sampler_page(texture).0) else {
        return Err(Sample::new(miss_color(view, texture), false));
    };
    if entry == 0 {
        return Err(match base_color(view, texture) {
            BaseColor::Color(value) => Sample::new(value, true),
            BaseColor::Absent => Sample::new(DEFAULT_FALLBACK_COLOR, true),
            BaseColor::NotResident => Sample::new([0.0; 4], false),
        });
    }
    debug_assert_eq!(entry as usize % std::mem::align_of::<TextureSampler>(), 0);
    // SAFETY: the sampler page is resident with a non-zero entry, so by the contract of
    // `CpuView::new` the entry is the address of a valid `TextureSampler` that is neither
    // written nor freed while the view (lifetime 'a) lives.
    let sampler = unsafe { &*(entry as usize as *const TextureSampler) };
    if sampler.flags & SAMPLER_FLAG_FAILED != 0 || !is_well_formed(sampler) {
        return Err(Sample::new(sampler.fallback_color, true));
    }
    Ok(sampler)
}

/// Whether a sampler record is one the filters can use without dividing by zero or
/// indexing out of bounds: a known format, 1..=MAX_LEVELS levels, power-of-two tiles of a
/// tile size (4 to 64 KiB); for blocks, a known codec with its decoded format and its full
/// tile ([`BlockCodec::tile_extent`]). (A record the loader built always is; this guards
/// against bugs.)
#[inline]
pub(crate) fn is_well_formed(s: &TextureSampler) -> bool {
    let Some(texel_type) = TexelType::from_code(s.texel_type) else {
        return false;
    };
    let unit_ok = match s.block_codec {
        0 => s.texel_bytes as usize == texel_type.bytes() * s.channels as usize,
        code => BlockCodec::from_code(code).is_some_and(|c| {
            let f = c.served_format();
            f.texel_type == texel_type
                && f.channels == s.channels
                && s.texel_bytes as usize == c.block_bytes()
                && (s.tile_width, s.tile_height) == c.tile_extent()
        }),
    };
    let units = |side: u32| match s.block_codec {
        0 => side as usize,
        _ => side as usize / 4,
    };
    matches!(s.channels, 1 | 2 | 4)
        && unit_ok
        && (1..=MAX_LEVELS as u32).contains(&s.num_levels)
        && s.mip_tail_first_level <= s.num_levels
        && s.tile_width.is_power_of_two()
        && s.tile_height.is_power_of_two()
        && units(s.tile_width)
            .checked_mul(units(s.tile_height) * s.texel_bytes as usize)
            .is_some_and(is_tile_size)
}
