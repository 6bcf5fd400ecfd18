//! Resources: what each page range holds. Textures own a sampler page, a base-colour page
//! and (once opened) a tile range; user resources ([`ResourceCallback`]) own a range of
//! entry pages. This module records them and routes a page to its texture and tile, or to
//! its resource. All page-id arithmetic goes through [`PageLayout`] and [`TextureLayout`].
//!
//! A texture's contents can be dropped ([`crate::Engine::invalidate_texture`],
//! [`crate::Engine::replace_texture`], [`crate::Engine::unload_texture`]); each time its
//! record's `generation` goes up. Fills carry the generation they were started for and
//! publish nothing if it has changed since, and pages requested through the earlier
//! contents route to [`Route::Stale`].

use crate::error::Error;
use crate::ids::{PageId, TextureId};
use crate::memory::RawBox;
use crate::paging::{PageKind, PageLayout};
use crate::sources::{ImageSource, SourceError};
use crate::textures::{DuplicateKey, PageContent, TextureDesc, TextureLayout, TextureSampler};
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
    /// Unloaded: source, tiles and mip tail dropped; samples give the fallback colour.
    /// Final: the id is never reused.
    Unloaded,
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
    /// Pages of the tile range starting at `start_page` (0 if none): what a reopened
    /// texture may use without a new range.
    pub range_pages: u32,
    /// Bumped each time the texture's contents are dropped (invalidate, replace, unload).
    /// Fills started for an earlier generation publish nothing.
    pub generation: u32,
    /// The published sampler (address in the page table). Kept until the loader drops
    /// (launches may still read it after a failure replaced its entry) or the contents
    /// are dropped (then retired until no launch or lookup can see it).
    pub sampler: Option<RawBox<TextureSampler>>,
    /// The packed mip tail (CPU backend), addressed by the sampler.
    pub mip_tail: Option<RawBox<[u8]>>,
    /// Duplicate sharing: the texture whose tile pages this one's sampler addresses (its
    /// own range, if any, stays unused) while both are open.
    pub tiles_of: Option<TextureId>,
    /// Duplicate sharing: the key this texture is indexed under as an owner of its tiles.
    pub duplicate_key: Option<DuplicateKey>,
    /// Whole decodes made for this texture ([`ImageSource::whole_decode`]): from the
    /// second, the decode is spilled when released (`requests::spills`).
    pub whole_decodes: u32,
}

/// What a requested page needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Open the texture and publish its sampler, base colour and mip tail.
    InitTexture {
        /// The texture.
        texture: TextureId,
        /// Its generation now (the fill publishes only if it is still current).
        generation: u32,
    },
    /// Read one tile.
    Tile {
        /// The texture.
        texture: TextureId,
        /// Its generation now (the fill publishes only if it is still current).
        generation: u32,
        /// Mip level.
        level: u32,
        /// Tile column.
        tile_x: u32,
        /// Tile row.
        tile_y: u32,
        /// Bytes of the texture's tiles (`TextureLayout::tile_bytes`): the slot to fill.
        tile_bytes: u32,
    },
    /// A sampler or base-colour page of an id no texture has.
    UnknownTexture(TextureId),
    /// A page of a texture that has failed or was unloaded, or of a UDIM hole: nothing to
    /// read.
    Failed(TextureId),
    /// A tile-range page of a texture as it was before its contents were dropped (asked
    /// for by a launch that sampled the earlier sampler record): nothing to read.
    Stale(TextureId),
    /// A page of a user resource: ask its callback.
    Resource {
        /// The resource's index ([`Resources::resource`]).
        index: u32,
        /// The page's index within the resource (0-based).
        page_index: u32,
    },
    /// A page nothing owns (or a mip-tail page, which is published with the sampler).
    Unowned,
}

/// What a [`ResourceCallback`] produced for a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceFill {
    /// The page's 64-bit page-table entry; it becomes visible at the next launch.
    Entry(u64),
    /// Not available yet: the request is deferred to the next `process_requests`.
    NotYet,
}

/// Produces the page-table entries of a user resource on demand (OTK's `createResource`
/// callback). Called on the fill threads, from several at once, for pages that a launch
/// requested ([`crate::Launch::map_or_request`]) — at most once per page while a call for
/// it is running, and never again for a page once its entry was published.
///
/// An error is final for that page: it is counted in [`crate::Stats::read_errors`], the
/// page is marked failed and stays non-resident, and it is never requested or asked for
/// again (`map_or_request` answers `None` without recording a request).
pub trait ResourceCallback: Send + Sync {
    /// The entry of page `page_index` (0-based within the resource).
    fn fill(&self, page_index: u32) -> Result<ResourceFill, SourceError>;
}

/// One user resource: its entry pages and the callback that fills them.
pub struct UserResource {
    /// First page.
    pub start: u32,
    /// Pages.
    pub num_pages: u32,
    /// Fills the pages.
    pub callback: Arc<dyn ResourceCallback>,
}

/// The textures and user resources of a loader and the page ranges they own.
#[derive(Default)]
pub struct Resources {
    textures: Vec<TextureRecord>,
    /// `(start, end, texture)`, sorted by start (ranges are handed out in order). A range
    /// outgrown by a replacement stays here (its pages route to [`Route::Stale`]).
    tile_ranges: Vec<(u32, u32, TextureId)>,
    /// Sorted by start (ranges are handed out in order).
    user_resources: Vec<UserResource>,
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
            range_pages: 0,
            generation: 0,
            sampler: None,
            mip_tail: None,
            tiles_of: None,
            duplicate_key: None,
            whole_decodes: 0,
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

    /// Record that `texture` owns tile pages `[start, start + count)` from now on, as its
    /// current range (`start_page`, `range_pages`). A range it had before stays recorded
    /// and routes to [`Route::Stale`].
    pub fn add_tile_range(&mut self, texture: TextureId, start: u32, count: u32) {
        debug_assert!(self
            .tile_ranges
            .last()
            .is_none_or(|&(_, end, _)| end <= start));
        self.tile_ranges.push((start, start + count, texture));
        if let Some(r) = self.get_mut(texture) {
            r.start_page = Some(start);
            r.range_pages = count;
        }
    }

    /// Register a user resource over entry pages `[start, start + num_pages)`; returns its
    /// index.
    pub fn add_resource(
        &mut self,
        start: u32,
        num_pages: u32,
        callback: Arc<dyn ResourceCallback>,
    ) -> u32 {
        debug_assert!(self
            .user_resources
            .last()
            .is_none_or(|r| r.start + r.num_pages <= start));
        self.user_resources.push(UserResource {
            start,
            num_pages,
            callback,
        });
        (self.user_resources.len() - 1) as u32
    }

    /// A user resource by index.
    pub fn resource(&self, index: u32) -> Option<&UserResource> {
        self.user_resources.get(index as usize)
    }

    /// What `page` needs.
    pub fn route(&self, layout: &PageLayout, page: PageId) -> Route {
        match layout.kind(page) {
            PageKind::Sampler(t) | PageKind::BaseColor(t) => match self.get(t) {
                None => Route::UnknownTexture(t),
                Some(r) => match r.state {
                    TextureState::Failed(_) | TextureState::Hole | TextureState::Unloaded => {
                        Route::Failed(t)
                    }
                    _ => Route::InitTexture {
                        texture: t,
                        generation: r.generation,
                    },
                },
            },
            PageKind::Tile(p) => self.route_tile(p.0),
            PageKind::Resource(p) => self.route_resource(p.0),
            PageKind::Invalid => Route::Unowned,
        }
    }

    fn route_resource(&self, page: u32) -> Route {
        let i = self.user_resources.partition_point(|r| r.start <= page);
        match i.checked_sub(1).map(|i| (i, &self.user_resources[i])) {
            Some((index, r)) if page - r.start < r.num_pages => Route::Resource {
                index: index as u32,
                page_index: page - r.start,
            },
            // UDIM entries (resident from creation) and pages nobody allocated.
            _ => Route::Unowned,
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
        if matches!(
            record.state,
            TextureState::Failed(_) | TextureState::Hole | TextureState::Unloaded
        ) {
            return Route::Failed(texture);
        }
        if record.start_page != Some(start) {
            return Route::Stale(texture); // a range the texture has outgrown
        }
        match record
            .layout
            .as_ref()
            .and_then(|l| Some((l.page_content(page - start)?, l.tile_bytes())))
        {
            Some((
                PageContent::Tile {
                    level,
                    tile_x,
                    tile_y,
                },
                tile_bytes,
            )) => Route::Tile {
                texture,
                generation: record.generation,
                level,
                tile_x,
                tile_y,
                tile_bytes: tile_bytes as u32,
            },
            // Not reopened since its contents were dropped, the mip-tail page (published
            // with the sampler), or past the current layout: asked for by a launch that
            // sampled the earlier contents.
            _ if record.generation > 0 => Route::Stale(texture),
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
        let init = |texture| Route::InitTexture {
            texture,
            generation: 0,
        };
        assert_eq!(r.route(&layout, PageId(1)), init(b));
        assert_eq!(r.route(&layout, PageId(4)), init(a));
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
                generation: 0,
                level: 0,
                tile_x: 7,
                tile_y: 2,
                tile_bytes: crate::TILE_BYTES as u32,
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
                generation: 0,
                level: 0,
                tile_x: 1,
                tile_y: 1,
                tile_bytes: crate::TILE_BYTES as u32,
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

    struct Entries;
    impl ResourceCallback for Entries {
        fn fill(&self, page_index: u32) -> Result<ResourceFill, SourceError> {
            Ok(ResourceFill::Entry(page_index as u64))
        }
    }

    #[test]
    fn pages_of_dropped_contents_route_to_stale_and_resources_to_their_callback() {
        let layout = PageLayout::new(4, 32, 10_000).unwrap();
        let mut r = Resources::default();
        let a = r.add_texture(Arc::new(Blank), TextureDesc::default());
        let big = TextureLayout::new(1000, 300, 10, TexelFormat::RGBA8).unwrap();
        let small = TextureLayout::new(300, 300, 9, TexelFormat::RGBA8).unwrap();
        r.add_tile_range(a, 32, big.num_pages);
        r.get_mut(a).unwrap().layout = Some(big.clone());
        let far = 32 + big.tile_page_offset(0, 7, 2);
        assert!(matches!(r.route(&layout, PageId(far)), Route::Tile { .. }));

        // Contents dropped: not reopened yet.
        let rec = r.get_mut(a).unwrap();
        rec.generation = 1;
        rec.layout = None;
        rec.state = TextureState::Unopened;
        assert_eq!(r.route(&layout, PageId(far)), Route::Stale(a));
        assert_eq!(r.route(&layout, PageId(32)), Route::Stale(a));
        assert_eq!(
            r.route(&layout, PageId(0)),
            Route::InitTexture {
                texture: a,
                generation: 1
            }
        );
        // Reopened smaller in the same range: pages past the new layout are stale.
        r.get_mut(a).unwrap().layout = Some(small.clone());
        assert_eq!(r.route(&layout, PageId(far)), Route::Stale(a));
        assert_eq!(
            r.route(&layout, PageId(32 + small.tile_page_offset(0, 1, 1))),
            Route::Tile {
                texture: a,
                generation: 1,
                level: 0,
                tile_x: 1,
                tile_y: 1,
                tile_bytes: crate::TILE_BYTES as u32,
            }
        );
        // Outgrown: a new range; the old one is stale, never rerouted.
        let new_start = 32 + big.num_pages;
        r.add_tile_range(a, new_start, small.num_pages);
        assert_eq!(r.route(&layout, PageId(33)), Route::Stale(a));
        assert!(matches!(
            r.route(&layout, PageId(new_start + small.tile_page_offset(0, 0, 0))),
            Route::Tile { .. }
        ));
        r.get_mut(a).unwrap().state = TextureState::Unloaded;
        assert_eq!(r.route(&layout, PageId(0)), Route::Failed(a));
        assert_eq!(r.route(&layout, PageId(new_start + 1)), Route::Failed(a));

        // Resources: [8, 11) and [11, 12); page 12 is past both.
        assert_eq!(r.add_resource(8, 3, Arc::new(Entries)), 0);
        assert_eq!(r.add_resource(11, 1, Arc::new(Entries)), 1);
        assert_eq!(
            r.route(&layout, PageId(10)),
            Route::Resource {
                index: 0,
                page_index: 2
            }
        );
        assert_eq!(
            r.route(&layout, PageId(11)),
            Route::Resource {
                index: 1,
                page_index: 0
            }
        );
        assert_eq!(r.route(&layout, PageId(12)), Route::Unowned);
        assert_eq!(r.resource(1).map(|x| x.start), Some(11));
        assert!(r.resource(2).is_none());
    }
}
