//! `Loader`: the public face of the engine — create textures, run the multi-pass cycle,
//! change the budget, read statistics.

use crate::error::{Error, Result};
use crate::ids::{PageId, TextureId};
use crate::launch::Launch;
use crate::options::LoaderOptions;
use crate::requests::engine::Engine;
use crate::requests::{lifecycle, process, resource, Ticket};
use crate::resources::{ResourceCallback, TextureState};
use crate::sources::ImageSource;
use crate::stats::Stats;
use crate::textures::{TextureDesc, TextureLayout};
use std::sync::Arc;

/// A demand loader: one page table, tile pool and fill pool. `Send + Sync`; cheap to clone
/// (clones share the loader).
///
/// The multi-pass cycle: [`launch_prepare`](Self::launch_prepare) → sample through the
/// [`Launch`] → [`process_requests`](Self::process_requests) → [`Ticket::wait`] → repeat.
/// A launch whose lookups were all resident needs nothing more.
#[derive(Clone)]
pub struct Loader {
    engine: Arc<Engine>,
}

impl Loader {
    /// A loader with `options` (see [`LoaderOptions`] for defaults).
    pub fn new(options: LoaderOptions) -> Result<Loader> {
        Ok(Loader {
            engine: Engine::new(options)?,
        })
    }

    /// The options the loader was created with (the budget may have changed since; see
    /// [`Stats::budget_bytes`]).
    pub fn options(&self) -> &LoaderOptions {
        &self.engine.options
    }

    /// Register a texture. Nothing is opened or read until a launch samples it.
    pub fn create_texture(
        &self,
        source: Arc<dyn ImageSource>,
        desc: TextureDesc,
    ) -> Result<TextureId> {
        self.engine.create_texture(source, desc)
    }

    /// Publish the fills finished since the last launch and start a new launch.
    pub fn launch_prepare(&self) -> Launch {
        let (launch_num, epoch) = self.engine.launch_prepare();
        Launch::new(self.engine.clone(), launch_num, epoch)
    }

    /// Pull the requests `launch` recorded, and start filling them on the fill threads.
    /// The launch ends here (its tile memory may be reused). A launch of another loader is
    /// an error, reported in the log, with an empty ticket.
    pub fn process_requests(&self, launch: Launch) -> Ticket {
        if !Arc::ptr_eq(&launch.engine, &self.engine) {
            tracing::error!("process_requests got a launch of another loader");
            return Ticket::done();
        }
        let launch_num = launch.launch_num();
        drop(launch);
        process::process_requests(&self.engine, launch_num)
    }

    /// Change the texture memory budget. Shrinking evicts the oldest tiles; memory that a
    /// live launch or a running fill may still use is freed when they finish. Fails if the
    /// budget cannot hold the non-evictable mip tails.
    pub fn set_max_texture_memory(&self, bytes: u64) -> Result<()> {
        self.engine.set_max_texture_memory(bytes)
    }

    /// A statistics snapshot.
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// Why a texture failed, if it did; [`Error::Unloaded`] once it was unloaded.
    pub fn texture_error(&self, texture: TextureId) -> Option<Error> {
        let host = self.engine.host.lock();
        match &host.resources.get(texture)?.state {
            TextureState::Failed(e) => Some(e.clone()),
            TextureState::Unloaded => Some(Error::Unloaded(texture)),
            _ => None,
        }
    }

    /// The texture's source content changed: drop every tile (resident, staged, being
    /// filled or waiting to be published), its mip tail, sampler and base colour. The
    /// next lookup requests it again: the source is reopened (its size and format may
    /// have changed) and the tiles read anew. A failed texture is retried.
    ///
    /// Lookups after this call — in a launch prepared later, or in the live launch —
    /// find the texture non-resident (the miss value, zeros) until the reopened sampler is
    /// published (the launch after the next `process_requests`), then its tiles as they
    /// are read again. Lookups before it saw the old contents. Memory a live launch or a
    /// lookup in progress may still read is returned to the pool only when they end; fills
    /// of the old contents still running publish nothing.
    ///
    /// Errors: [`Error::UnknownTexture`], [`Error::Unloaded`], or
    /// [`Error::InvalidArgument`] for an empty slot of a UDIM grid.
    pub fn invalidate_texture(&self, texture: TextureId) -> Result<()> {
        lifecycle::invalidate_texture(&self.engine, texture)
    }

    /// The texture now reads `source`, sampled with `desc`: its contents are dropped as by
    /// [`invalidate_texture`](Self::invalidate_texture) and `source` is opened at the next
    /// lookup. Size and format may differ: the texture's page range is reused if the new
    /// layout fits in it, otherwise a new range is allocated (the old one is never
    /// reused, and requests for it are ignored). Fills of the old source still running
    /// publish nothing; the old source is dropped once they end (at once if none runs).
    ///
    /// Errors: as [`invalidate_texture`](Self::invalidate_texture), or an invalid `desc`.
    pub fn replace_texture(
        &self,
        texture: TextureId,
        source: Arc<dyn ImageSource>,
        desc: TextureDesc,
    ) -> Result<()> {
        lifecycle::replace_texture(&self.engine, texture, source, desc)
    }

    /// Drop the texture for good: its tiles, mip tail and sampler (freed once no launch
    /// can see them) and its source (dropped once no fill of it is running — at once if
    /// none is). From this call on, lookups of the id return its fallback colour, resident
    /// (as a failed texture), and [`texture_error`](Self::texture_error) gives
    /// [`Error::Unloaded`]. The id is not reused. Unloading twice is not an error.
    ///
    /// Errors: [`Error::UnknownTexture`], or [`Error::InvalidArgument`] for an empty slot
    /// of a UDIM grid.
    pub fn unload_texture(&self, texture: TextureId) -> Result<()> {
        lifecycle::unload_texture(&self.engine, texture)
    }

    /// Register a user resource (OTK's `createResource`): `num_pages` consecutive pages
    /// with 64-bit page-table entries, which `callback` produces when a launch requests
    /// them ([`Launch::map_or_request`]); returns the first page. Entries are published at
    /// the next launch and never evicted; a "not yet" is asked again at the next
    /// `process_requests`; an error marks the page failed for good (see
    /// [`ResourceCallback`]).
    ///
    /// Errors: [`Error::InvalidArgument`] for 0 pages, [`Error::OutOfPages`] if the
    /// page-table-entry range (`page_table_entries`, shared with UDIM textures) has not
    /// `num_pages` pages left.
    pub fn create_resource(
        &self,
        num_pages: u32,
        callback: Arc<dyn ResourceCallback>,
    ) -> Result<PageId> {
        resource::create_resource(&self.engine, num_pages, callback)
    }

    /// The shared engine (for the blocking cache built on the same loader).
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Register a UDIM texture: every tile of `grid` becomes a texture (consecutive ids,
    /// holes included) sampled with `desc` — [`crate::udim::tile_desc`] (clamp) suits
    /// tiles — as does the base texture, if any. Nothing is opened until a launch samples
    /// it; sample with [`Launch::tex2d_grad_udim`]. Errors: a malformed grid
    /// ([`crate::udim::UdimGrid::validate`]), an invalid `desc`, or not enough texture ids
    /// or resource pages left.
    pub fn create_udim_texture(
        &self,
        grid: crate::udim::UdimGrid,
        desc: TextureDesc,
    ) -> Result<crate::udim::UdimId> {
        crate::udim::create_udim(&self.engine, grid, desc)
    }

    /// Register a UDIM texture from the OpenEXR files matching `pattern`
    /// (`name.<UDIM>.exr` or `name.<UVTILE>.exr`; see [`crate::udim::expand_pattern`]),
    /// with the OpenEXR file `base`, if given, as the whole-grid base texture. Slots
    /// without a file are holes. Errors: as [`crate::udim::UdimGrid::from_pattern`] and
    /// [`create_udim_texture`](Self::create_udim_texture).
    pub fn create_udim_from_pattern(
        &self,
        pattern: &std::path::Path,
        base: Option<&std::path::Path>,
        desc: TextureDesc,
    ) -> Result<crate::udim::UdimId> {
        let grid = crate::udim::UdimGrid::from_pattern(pattern, base)?;
        self.create_udim_texture(grid, desc)
    }

    /// The textures of a UDIM texture (holes are `None`); `None` for an id that names no
    /// UDIM texture of this loader.
    pub fn udim_tiles(&self, udim: crate::udim::UdimId) -> Option<crate::udim::UdimTiles> {
        crate::udim::udim_tiles(&self.engine, udim)
    }

    /// A texture's tile layout, once it has been opened.
    pub fn texture_layout(&self, texture: TextureId) -> Option<TextureLayout> {
        let host = self.engine.host.lock();
        host.resources.get(texture)?.layout.clone()
    }
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("options", &self.engine.options)
            .finish()
    }
}
