//! `PageLayout`: the one place that says which page ids hold what. No other code does
//! page-id arithmetic for samplers, base colours, resources or tiles.
//!
//! ```text
//! [0, max_textures)                    sampler page of texture t = t
//! [max_textures, 2·max_textures)       base-colour page of texture t = max_textures + t
//! [2·max_textures, page_table_entries) user resource pages (64-bit entries)
//! [page_table_entries, num_pages)      texture tile ranges (bits only, no entry)
//! ```

use crate::error::{Error, Result};
use crate::ids::{PageId, TextureId};

/// What kind of page an id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    /// The sampler page of a texture.
    Sampler(TextureId),
    /// The base-colour page of a texture.
    BaseColor(TextureId),
    /// A page of the user-resource range (has a 64-bit entry).
    Resource(PageId),
    /// A page of the tile range (bits only).
    Tile(PageId),
    /// Past the page space.
    Invalid,
}

/// The partition of the page space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Texture ids are `[0, max_textures)`.
    pub max_textures: u32,
    /// Pages with a 64-bit page-table entry.
    pub page_table_entries: u32,
    /// Pages in the space.
    pub num_pages: u32,
}

impl PageLayout {
    /// A layout, checking that the ranges nest.
    pub fn new(max_textures: u32, page_table_entries: u32, num_pages: u32) -> Result<Self> {
        if max_textures == 0 || (max_textures as u64) * 2 > page_table_entries as u64 {
            return Err(Error::InvalidArgument(format!(
                "page_table_entries ({page_table_entries}) must hold 2 × max_textures ({max_textures})"
            )));
        }
        if page_table_entries >= num_pages {
            return Err(Error::InvalidArgument(format!(
                "num_pages ({num_pages}) must exceed page_table_entries ({page_table_entries})"
            )));
        }
        Ok(PageLayout {
            max_textures,
            page_table_entries,
            num_pages,
        })
    }

    /// The sampler page of a texture.
    #[inline]
    pub fn sampler_page(&self, texture: TextureId) -> PageId {
        PageId(texture.0)
    }

    /// The base-colour page of a texture.
    #[inline]
    pub fn base_color_page(&self, texture: TextureId) -> PageId {
        PageId(self.max_textures + texture.0)
    }

    /// First page of the user-resource range.
    pub fn resource_start(&self) -> u32 {
        2 * self.max_textures
    }

    /// First page of the tile range.
    pub fn tile_start(&self) -> u32 {
        self.page_table_entries
    }

    /// Classify a page id.
    pub fn kind(&self, page: PageId) -> PageKind {
        let p = page.0;
        if p < self.max_textures {
            PageKind::Sampler(TextureId(p))
        } else if p < 2 * self.max_textures {
            PageKind::BaseColor(TextureId(p - self.max_textures))
        } else if p < self.page_table_entries {
            PageKind::Resource(page)
        } else if p < self.num_pages {
            PageKind::Tile(page)
        } else {
            PageKind::Invalid
        }
    }
}

/// Base-colour entries: four IEEE halfs, red in the low 16 bits.
pub fn encode_base_color(rgba: [f32; 4]) -> u64 {
    rgba.iter().enumerate().fold(0u64, |acc, (i, &c)| {
        acc | (half::f16::from_f32(c).to_bits() as u64) << (16 * i)
    })
}

/// Decode a base-colour entry; `None` for [`NO_BASE_COLOR`] and [`HOLE_BASE_COLOR`].
#[inline]
pub fn decode_base_color(entry: u64) -> Option<[f32; 4]> {
    if entry == NO_BASE_COLOR || entry == HOLE_BASE_COLOR {
        return None;
    }
    let c = |i: u32| half::f16::from_bits((entry >> (16 * i)) as u16).to_f32();
    Some([c(0), c(1), c(2), c(3)])
}

/// The base-colour entry of a texture that has none (four NaN halfs: never a real colour).
pub const NO_BASE_COLOR: u64 = u64::MAX;

/// The base-colour entry of an empty slot of a UDIM grid (a "hole"; its sampler entry is
/// 0). Four signalling-NaN halfs (`0x7C01`: exponent all ones, quiet bit clear), which
/// [`encode_base_color`] never produces: every NaN it converts comes out quiet.
/// [`decode_base_color`] reads it as "no colour".
pub const HOLE_BASE_COLOR: u64 = 0x7C01_7C01_7C01_7C01;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_partition_the_space() {
        let l = PageLayout::new(4, 16, 100).unwrap();
        assert_eq!(l.kind(PageId(3)), PageKind::Sampler(TextureId(3)));
        assert_eq!(l.kind(PageId(4)), PageKind::BaseColor(TextureId(0)));
        assert_eq!(l.base_color_page(TextureId(2)), PageId(6));
        assert_eq!(l.kind(PageId(8)), PageKind::Resource(PageId(8)));
        assert_eq!(l.kind(PageId(16)), PageKind::Tile(PageId(16)));
        assert_eq!(l.kind(PageId(100)), PageKind::Invalid);
        assert!(PageLayout::new(10, 16, 100).is_err());
        assert!(PageLayout::new(4, 100, 100).is_err());
    }

    #[test]
    fn base_colors_round_trip_through_halfs() {
        let c = [0.25, 0.5, 1.0, 0.125];
        assert_eq!(decode_base_color(encode_base_color(c)), Some(c));
        assert_eq!(decode_base_color(NO_BASE_COLOR), None);
        assert_eq!(decode_base_color(HOLE_BASE_COLOR), None);
    }

    #[test]
    fn no_colour_encodes_to_the_hole_marker() {
        let nans = [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001), // signalling
            f32::from_bits(0xFF80_0001),
            f32::from_bits(0x7FBF_FFFF),
            f32::INFINITY,
        ];
        for &a in &nans {
            for &b in &nans {
                let e = encode_base_color([a, b, a, b]);
                assert_ne!(e, HOLE_BASE_COLOR);
                for i in 0..4 {
                    assert_ne!((e >> (16 * i)) as u16, 0x7C01, "{a} {b}");
                }
            }
        }
    }
}
