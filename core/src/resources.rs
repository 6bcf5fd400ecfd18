//! Resources: what each page range holds. Textures own a sampler page, a base-colour page
//! and (once opened) a tile range; this module records them and routes a page to its
//! texture and tile. All page-id arithmetic goes through [`PageLayout`] and
//! [`TextureLayout`].

use crate::error::Error;
use crate::ids::{PageId, TextureId};
use crate::memory::RawBox;
use crate::paging::{PageKind, PageLayout};
use crate::sources::ImageSource;
use crate::textures::{PageContent, TextureDesc, TextureLayout, TextureSampler};
use std::sync::Arc;

/// Where a texture is in its life.
#[derive(Debug, Clone, PartialEq)]
pub enum TextureState {
    /// Created; not opened yet.
    Unopened,
    /// Opened, sampler and mip tail published.
    Ready,
    /// The source failed; samples give the fallback colour.
    Failed(Error),
    /// An empty slot of a UDIM grid: no source; its sampler entry (0) and base-colour
    /// entry ([`crate::paging::HOLE_BASE_COLOR`]) were published at creation.
    Hole,
}

/// One texture.
pub struct TextureRecord {
    /// Where texels come from.
    pub source: Arc<dyn ImageSource>,
    /// Sampling state.
    pub desc: TextureDesc,
    /// Life stage.
    pub state: TextureState,
    /// Tile layout, once opened.
    pub layout: Option<TextureLayout>,
    /// First page of the tile range, once reserved.
    pub start_page: Option<u32>,
    /// The published sampler (address in the page table). Kept until the loader drops:
    /// launches may still read it after a failure replaced its entry.
    pub sampler: Option<RawBox<TextureSampler>>,
    /// The packed mip tail (CPU backend), addressed by the sampler.
    pub mip_tail: Option<RawBox<[u8]>>,
}

/// What a requested page needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Open the texture and publish its sampler, base colour and mip tail.
    InitTexture(TextureId),
    /// Read one tile.
    Tile {
        /// The texture.
        texture: TextureId,
        /// Mip level.
        level: u32,
        /// Tile column.
        tile_x: u32,
        /// Tile row.
        tile_y: u32,
    },
    /// A sampler or base-colour page of an id no texture has.
    UnknownTexture(TextureId),
    /// A page of a texture that has failed, or of a UDIM hole: nothing to read.
    Failed(TextureId),
    /// A page nothing owns (or a mip-tail page, which is published with the sampler).
    Unowned,
}

/// The textures of a loader and the tile ranges they own.
#[derive(Default)]
pub struct Resources {
    textures: Vec<TextureRecord>,
    /// `(start, end, texture)`, sorted by start (ranges are handed out in order).
    tile_ranges: Vec<(u32, u32, TextureId)>,
}

impl Resources {
    /// Register a texture; returns its id.
    pub fn add_texture(&mut self, source: Arc<dyn ImageSource>, desc: TextureDesc) -> TextureId {
        let id = TextureId(self.textures.len() as u32);
        self.textures.push(TextureRecord {
            source,
            desc,
            state: TextureState::Unopened,
            layout: None,
            start_page: None,
            sampler: None,
            mip_tail: None,
        });
        id
    }

    /// Textures created.
    pub fn len(&self) -> usize {
        self.textures.len()
    }

    /// Whether no texture was created.
    pub fn is_empty(&self) -> bool {
        self.textures.is_empty()
    }

    /// A texture's record.
    pub fn get(&self, id: TextureId) -> Option<&TextureRecord> {
        self.textures.get(id.0 as usize)
    }

    /// A texture's record, mutable.
    pub fn get_mut(&mut self, id: TextureId) -> Option<&mut TextureRecord> {
        self.textures.get_mut(id.0 as usize)
    }

    /// All records.
    pub fn iter(&self) -> impl Iterator<Item = (TextureId, &TextureRecord)> {
        self.textures
            .iter()
            .enumerate()
            .map(|(i, t)| (TextureId(i as u32), t))
    }

    /// Record that `texture` owns tile pages `[start, start + count)`.
    pub fn add_tile_range(&mut self, texture: TextureId, start: u32, count: u32) {
        debug_assert!(self
            .tile_ranges
            .last()
            .is_none_or(|&(_, end, _)| end <= start));
        self.tile_ranges.push((start, start + count, texture));
    }

    /// What `page` needs.
    pub fn route(&self, layout: &PageLayout, page: PageId) -> Route {
        match layout.kind(page) {
            PageKind::Sampler(t) | PageKind::BaseColor(t) => match self.get(t) {
                None => Route::UnknownTexture(t),
                Some(r) => match r.state {
                    TextureState::Failed(_) | TextureState::Hole => Route::Failed(t),
                    _ => Route::InitTexture(t),
                },
            },
            PageKind::Tile(p) => self.route_tile(p.0),
            PageKind::Resource(_) | PageKind::Invalid => Route::Unowned,
        }
    }

    fn route_tile(&self, page: u32) -> Route {
        let i = self
            .tile_ranges
            .partition_point(|&(start, _, _)| start <= page);
        let Some(&(start, end, texture)) = i.checked_sub(1).and_then(|i| self.tile_ranges.get(i))
        else {
            return Route::Unowned;
        };
        if page >= end {
            return Route::Unowned;
        }
        let Some(record) = self.get(texture) else {
            return Route::Unowned;
        };
        if matches!(record.state, TextureState::Failed(_) | TextureState::Hole) {
            return Route::Failed(texture);
        }
        match record
            .layout
            .as_ref()
            .and_then(|l| l.page_content(page - start))
        {
            Some(PageContent::Tile {
                level,
                tile_x,
                tile_y,
            }) => Route::Tile {
                texture,
                level,
                tile_x,
                tile_y,
            },
            _ => Route::Unowned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::{ImageInfo, Readiness, SourceError};
    use crate::textures::{TexelFormat, TileRegion};

    struct Blank;
    impl ImageSource for Blank {
        fn name(&self) -> String {
            "blank".into()
        }
        fn open(&self) -> Result<ImageInfo, SourceError> {
            Err("never opened in these tests".into())
        }
        fn read_region(
            &self,
            _: TileRegion,
            _: &mut [u8],
            _: usize,
        ) -> Result<Readiness, SourceError> {
            Ok(Readiness::Ready)
        }
    }

    #[test]
    fn pages_route_to_their_texture_and_tile() {
        let layout = PageLayout::new(4, 16, 10_000).unwrap();
        let mut r = Resources::default();
        let a = r.add_texture(Arc::new(Blank), TextureDesc::default());
        let b = r.add_texture(Arc::new(Blank), TextureDesc::default());
        assert_eq!(r.route(&layout, PageId(1)), Route::InitTexture(b));
        assert_eq!(r.route(&layout, PageId(4)), Route::InitTexture(a));
        assert_eq!(
            r.route(&layout, PageId(3)),
            Route::UnknownTexture(TextureId(3))
        );
        let la = TextureLayout::new(1000, 300, 10, TexelFormat::RGBA8).unwrap();
        let lb = TextureLayout::new(256, 256, 1, TexelFormat::RGBA8).unwrap();
        r.add_tile_range(a, 16, la.num_pages);
        r.add_tile_range(b, 16 + la.num_pages, lb.num_pages);
        let off = la.tile_page_offset(0, 7, 2);
        r.get_mut(a).unwrap().layout = Some(la.clone());
        r.get_mut(b).unwrap().layout = Some(lb.clone());
        assert_eq!(
            r.route(&layout, PageId(16 + off)),
            Route::Tile {
                texture: a,
                level: 0,
                tile_x: 7,
                tile_y: 2
            }
        );
        assert_eq!(
            r.route(&layout, PageId(16)),
            Route::Unowned,
            "mip tail page"
        );
        let first_b = 16 + la.num_pages + lb.tile_page_offset(0, 1, 1);
        assert_eq!(
            r.route(&layout, PageId(first_b)),
            Route::Tile {
                texture: b,
                level: 0,
                tile_x: 1,
                tile_y: 1
            }
        );
        assert_eq!(r.route(&layout, PageId(9_000)), Route::Unowned);
        assert_eq!(
            r.route(&layout, PageId(10)),
            Route::Unowned,
            "resource range"
        );
        r.get_mut(a).unwrap().state = TextureState::Failed(Error::Internal("x".into()));
        assert_eq!(r.route(&layout, PageId(16 + off)), Route::Failed(a));
        assert_eq!(r.route(&layout, PageId(0)), Route::Failed(a));
        r.get_mut(b).unwrap().state = TextureState::Hole;
        assert_eq!(r.route(&layout, PageId(1)), Route::Failed(b));
        assert_eq!(r.route(&layout, PageId(5)), Route::Failed(b));
    }
}
