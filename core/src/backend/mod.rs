//! Backends: where tile data lives and how what the engine publishes becomes visible to
//! samplers. The engine tells its backend what changed through one trait, [`Backend`] —
//! the publish seam — instead of a backend diffing the engine's state: the cost of a
//! publication is the number of changes, never the size of the page space.
//!
//! ```text
//!  requests (fills, eviction, lifecycle)        Residency (memory/)
//!          │ pending publications                  │ TileEvents (staged, released)
//!          ▼                                       ▼
//!  Engine::publish ── withdraw(…) ─────────▶ Backend ◀── CPU: TileDirectory (this crate)
//!  (launch_prepare,  ── publish_tile(…) ───▶   trait  ◀── CUDA: sparse textures, device
//!   blocking fills)  ── publish_texture(…) ─▶          page table (crate demandtex-cuda)
//!                    ── publish_entry(…) ──▶
//!                    ── end_publication() ─▶
//! ```
//!
//! # The protocol
//! Every call is made under the engine's lock, in the order of the changes:
//!
//! 1. At each publication (a `launch_prepare`, or a blocking fill), first the withdrawals
//!    made since the previous one ([`Backend::withdraw`]): tiles staged (data kept for a
//!    second chance) or released (evicted, or dropped with their texture's contents),
//!    non-evictable pages made non-resident, textures whose contents were dropped. The engine's host
//!    page table already shows them non-resident.
//! 2. Then the publications: filled tiles ([`Backend::publish_tile`], with their texels),
//!    restored tiles ([`Backend::restore_tile`], a second chance: no data moves), opened
//!    textures ([`Backend::publish_texture`]: layout, sampler record, mip tail, base
//!    colour) and page-table entries ([`Backend::publish_entry`]: user resources, UDIM
//!    grids, a failed texture's fallback). The engine sets a page's host residence bit only
//!    once its backend accepted it; [`PublishError::NotNow`] keeps the publication for the
//!    next one.
//! 3. [`Backend::end_publication`]: a batching backend submits its work.
//!
//! Entries published outside a launch (a UDIM grid at creation, an unloaded texture's
//! fallback) arrive as soon as they are made, preceded by the pending withdrawals.
//!
//! A backend that holds tile data itself returns [`HostCopy::Release`] from
//! `publish_tile`: the engine then frees its host copy, so host memory holds only the tiles
//! being filled or waiting for publication, whatever the budget. A tile released after that
//! is read from its source again if it is needed again.

pub mod cpu;

use crate::error::Error;
use crate::ids::{PageId, TextureId};
use crate::memory::{TileBuffer, TileEvent};
use crate::textures::{TextureDesc, TextureLayout, TextureSampler};

/// What the engine does with a tile's host copy once its backend has published it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostCopy {
    /// Keep it: samplers read it in place (the CPU backend).
    Keep,
    /// Free it: the backend has copied the data (to a GPU).
    Release,
}

/// Why a backend did not take a publication.
#[derive(Clone, Debug, PartialEq)]
pub enum PublishError {
    /// Not now (e.g. no device memory free until launches finish): the engine keeps the
    /// publication and offers it again at the next one.
    NotNow(String),
    /// This texture cannot live on the backend (e.g. a format the device lacks): the
    /// texture is failed with this message and samples as its fallback colour.
    Rejected(String),
    /// The backend itself failed (a driver error): the publication stops and the error is
    /// returned to the caller of `launch_prepare`; the loader should be dropped.
    Fatal(Error),
}

impl From<Error> for PublishError {
    fn from(e: Error) -> Self {
        PublishError::Fatal(e)
    }
}

/// Something that stopped being visible (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withdrawal {
    /// A tile page was staged: non-resident, its data kept for a second chance.
    TileStaged(PageId),
    /// A tile page's slot is gone (evicted, or its texture's contents dropped): its data
    /// must never be shown for this page again.
    TileReleased(PageId),
    /// A non-evictable page — a texture's sampler, base-colour or mip-tail page — is no
    /// longer resident.
    Page(PageId),
    /// A texture's contents were dropped (invalidate, replace, unload): whatever the backend
    /// built for it is obsolete. Its pages are withdrawn separately.
    Texture(TextureId),
}

impl From<TileEvent> for Withdrawal {
    fn from(e: TileEvent) -> Self {
        match e {
            TileEvent::Staged(p) => Withdrawal::TileStaged(p),
            TileEvent::Released(p) => Withdrawal::TileReleased(p),
        }
    }
}

/// An opened texture, as published: what a backend builds its side of the texture from.
#[derive(Clone, Copy, Debug)]
pub struct TextureContents<'a> {
    /// The texture.
    pub texture: TextureId,
    /// Its tile layout.
    pub layout: &'a TextureLayout,
    /// How it is sampled.
    pub desc: &'a TextureDesc,
    /// The host sampler record (its address is the sampler page's host entry).
    pub sampler: &'a TextureSampler,
    /// The packed mip tail (`layout.mip_tail_bytes` bytes), non-evictable.
    pub mip_tail: &'a [u8],
    /// Whether the texels are packed words to be read back bit for bit
    /// ([`crate::sources::ImageSource::texels_are_words`]).
    pub texels_are_words: bool,
    /// The base-colour page's entry ([`crate::paging::encode_base_color`], or
    /// [`crate::paging::NO_BASE_COLOR`]).
    pub base_color: u64,
    /// Duplicate-texture sharing ([`Backend::shares_texture_tiles`]): the texture whose
    /// tile range this one samples (its sampler's `start_page` is that texture's, and its
    /// texels and mip tail are the same), published before it; `None` for a texture that
    /// holds its own tiles.
    pub tiles_of: Option<TextureId>,
}

/// The publish seam: how the engine tells a backend what changed (see the module docs for
/// the order of calls). Implementations are called under the engine's lock, so they must
/// not call back into the engine.
pub trait Backend: Send + Sync + 'static {
    /// Whether samplers read the engine's host tile buffers in place (the CPU backend):
    /// then a page may be published before all its texels are read and filled in place
    /// file tile by file tile (`LoaderOptions::fill_by_file_tile`), and a texture whose file has
    /// smaller tiles gets pages of that size (`LoaderOptions::pages_of_file_tiles`). Default:
    /// no.
    fn samples_host_tiles(&self) -> bool {
        false
    }

    /// Whether a texture may sample another texture's tile range (duplicate-texture
    /// sharing, `LoaderOptions::share_duplicate_textures`): `publish_texture` is then given
    /// [`TextureContents::tiles_of`], after that texture's own publication, and tiles are
    /// published for the owner's pages only. Default: what
    /// [`samples_host_tiles`](Self::samples_host_tiles) says (samplers reading one page
    /// directory can address one range).
    fn shares_texture_tiles(&self) -> bool {
        self.samples_host_tiles()
    }

    /// Whether samplers read pages of 4×4 blocks (`LoaderOptions::keep_blocks`,
    /// [`crate::textures::TextureLayout::with_blocks`]): published tiles and mip tails
    /// then hold blocks as the file stores them. Default: what
    /// [`samples_host_tiles`](Self::samples_host_tiles) says (the CPU samplers decode
    /// blocks).
    fn samples_blocks(&self) -> bool {
        self.samples_host_tiles()
    }

    /// Whether one tile's data may be published for many pages at once (constant-tile
    /// coalescing: [`crate::memory::constant_tiles`]): `publish_tile` is then given the
    /// same buffer for each page, and `withdraw` of one page must leave the others. Default:
    /// no (each page's tile is its own).
    fn shares_tiles(&self) -> bool {
        false
    }

    /// Something stopped being visible.
    fn withdraw(&self, withdrawal: Withdrawal) -> Result<(), Error>;

    /// A filled tile becomes visible for `page`: `data` holds its texels, the texture's tile
    /// size ([`crate::TILE_BYTES`] unless `samples_host_tiles` and the texture's file has
    /// smaller tiles: `LoaderOptions::pages_of_file_tiles`), in rows of `tile_width`
    /// texels (texels past an edge tile's image are zero).
    fn publish_tile(&self, page: PageId, data: &TileBuffer) -> Result<HostCopy, PublishError>;

    /// A staged tile becomes visible again (a second chance): it was staged, never
    /// released, since it was last published. No data moves.
    fn restore_tile(&self, page: PageId) -> Result<(), PublishError>;

    /// An opened texture becomes visible: its sampler page, base-colour page and mip tail.
    fn publish_texture(&self, contents: &TextureContents<'_>) -> Result<(), PublishError>;

    /// A page-table entry becomes visible (non-evictable).
    fn publish_entry(&self, page: PageId, entry: u64) -> Result<(), Error>;

    /// The end of a publication.
    fn end_publication(&self) -> Result<(), Error> {
        Ok(())
    }
}
