//! Texture lifecycle: dropping a texture's contents when its source changed
//! (invalidate), when it reads another source (replace), or for good (unload).
//!
//! Dropping the contents of a texture:
//! - its generation goes up, so fills started for the earlier contents publish nothing
//!   (they return their buffers; they never touch the markers of newer fills);
//! - mappings queued for the next launch (tiles, sampler, base colour, mip tail) are
//!   withdrawn; resident tiles, the mip-tail page, the sampler and base-colour pages become
//!   non-resident; staged tiles leave the staging area (never to be restored);
//! - the tiles, the sampler record and the mip tail are *retired*: stamped with the epoch
//!   after their pages became non-resident, and returned to the pool (tile buffers) or
//!   freed (records; the tail's bytes leave the budget) only once no launch or lookup
//!   pinned before can still read them — the same rule as eviction;
//! - the record goes back to "unopened": the next lookup requests its sampler, and the
//!   source is opened again (its size and format may have changed). The tile range is
//!   reused if the new layout fits in it, otherwise a new range is allocated and the old
//!   one keeps routing to nothing ([`crate::resources::Route::Stale`]);
//! - textures sharing its tiles (`super::duplicates`) have their contents dropped too.

use super::engine::Engine;
use super::host_state::{HostState, Pending};
use crate::backend::Withdrawal;
use crate::error::{Error, Result};
use crate::ids::{PageId, TextureId};
use crate::paging::encode_base_color;
use crate::resources::TextureState;
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TextureDesc, TileRegion};
use std::sync::Arc;

impl Engine {
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
        let mut host = self.host.lock();
        self.drop_contents(&mut host, texture)
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
        super::engine::check_desc(&desc)?;
        let old_source = {
            let mut host = self.host.lock();
            self.drop_contents(&mut host, texture)?;
            let record = host
                .resources
                .get_mut(texture)
                .ok_or(Error::UnknownTexture(texture))?;
            record.desc = desc;
            std::mem::replace(&mut record.source, source)
        };
        // Outside the lock: a source's Drop may run user code (the C ABI's `close`).
        drop(old_source);
        Ok(())
    }

    /// Drop the texture for good: its tiles, mip tail and sampler (freed once no launch
    /// can see them) and its source (dropped once no fill of it is running — at once if
    /// none is). From this call on, lookups of the id return its fallback colour, resident
    /// (as a failed texture), and [`texture_error`](Self::texture_error) gives
    /// [`Error::Unloaded`]. The id is not reused. Unloading twice is not an error.
    ///
    /// Errors: [`Error::UnknownTexture`], or [`Error::InvalidArgument`] for an empty slot
    /// of a UDIM grid; the backend's, if it failed.
    pub fn unload_texture(&self, texture: TextureId) -> Result<()> {
        let (old_source, published) = {
            let mut host = self.host.lock();
            if let Some(TextureState::Unloaded) = host.resources.get(texture).map(|r| &r.state) {
                return Ok(());
            }
            self.drop_contents(&mut host, texture)?;
            let record = host
                .resources
                .get_mut(texture)
                .ok_or(Error::UnknownTexture(texture))?;
            record.state = TextureState::Unloaded;
            let fallback = record.desc.fallback_color;
            let old = std::mem::replace(&mut record.source, Arc::new(UnloadedSource));
            // Visible at once (entries only, no memory): a null sampler and the fallback
            // colour as the base colour, never evicted — as a failed texture.
            let entries = [
                (self.layout.sampler_page(texture), 0),
                (
                    self.layout.base_color_page(texture),
                    encode_base_color(fallback),
                ),
            ];
            (old, self.publish_entries_now(&mut host, &entries))
        };
        // Fills still reading it hold their own reference; the last one drops it.
        drop(old_source);
        published
    }

    /// Drop everything `texture` has published or is about to publish (see the module
    /// docs).
    fn drop_contents(&self, host: &mut HostState, texture: TextureId) -> Result<()> {
        let record = host
            .resources
            .get(texture)
            .ok_or(Error::UnknownTexture(texture))?;
        match record.state {
            TextureState::Hole => {
                return Err(Error::InvalidArgument(format!(
                    "texture {} is an empty slot of a UDIM grid: it has no contents",
                    texture.0
                )))
            }
            TextureState::Unloaded => return Err(Error::Unloaded(texture)),
            _ => {}
        }
        let sampler_page = self.layout.sampler_page(texture);
        let base_page = self.layout.base_color_page(texture);
        let range = record
            .start_page
            .map_or(0..0, |start| start..start + record.range_pages);
        let ours =
            |page: PageId| page == sampler_page || page == base_page || range.contains(&page.0);

        // Withdraw what waits for the next launch (tiles are withdrawn with their slots).
        host.pending.retain(|p| match *p {
            Pending::Entry { page, .. } => !ours(page),
            Pending::Texture { texture: t, .. } => t != texture,
            Pending::Tile(_) => true,
        });
        // Tiles: resident, staged or waiting to be published, retired with their slots.
        host.residency
            .retire_range(&self.pages, &self.epochs, range.clone());
        // Non-resident from now on: the mip-tail page, sampler and base colour.
        let mut entry_pages = vec![sampler_page, base_page];
        if !range.is_empty() {
            entry_pages.push(PageId(range.start));
        }
        self.withdraw_entries(host, &entry_pages);
        host.withdrawn.push(Withdrawal::Texture(texture));
        // Fills in flight for these pages belong to the old generation: forget their markers
        // (they will not publish), so that new requests are served. Deferred tiles of the old
        // layout mean nothing any more; a deferred sampler request is still wanted.
        host.in_flight.retain(|&p| !ours(p));
        host.deferred.retain(|p| !range.contains(&p.0));

        let Some(record) = host.resources.get_mut(texture) else {
            return Err(Error::UnknownTexture(texture));
        };
        record.generation = record.generation.wrapping_add(1);
        record.state = TextureState::Unopened;
        record.whole_decodes = 0;
        let shared_from = record.tiles_of.take();
        let owned_key = record.duplicate_key.take();
        let sampler = record.sampler.take();
        let mip_tail = record.mip_tail.take();
        let layout = record.layout.take();
        let tail_bytes = match (&mip_tail, &layout) {
            (Some(_), Some(l)) => l.non_evictable_bytes(),
            _ => 0,
        };
        let level0_bytes = match (&sampler, &layout) {
            (Some(_), Some(l)) => l.level0_bytes(),
            _ => 0,
        };

        // Taken after the residence bits were cleared: launches pinned from now on cannot
        // reach the sampler record or the mip tail.
        if sampler.is_some() || mip_tail.is_some() {
            let stamp = self.epochs.retire_stamp();
            host.residency
                .retire_contents(stamp, sampler, mip_tail, tail_bytes);
        }
        host.counters.virtual_bytes = host.counters.virtual_bytes.saturating_sub(level0_bytes);
        host.residency.reclaim_retired(&self.epochs);

        // Duplicate sharing: a sharer leaves its owner alone; an owner's sharers sample its
        // pages, so their contents go too (they open again, and share or own then).
        if shared_from.is_some() {
            host.counters.textures_sharing_tiles -= 1;
        }
        if let Some(key) = owned_key {
            host.duplicates.remove(&key, texture);
            let sharers: Vec<TextureId> = host
                .resources
                .iter()
                .filter(|(_, r)| r.tiles_of == Some(texture))
                .map(|(t, _)| t)
                .collect();
            for sharer in sharers {
                self.drop_contents(host, sharer)?;
            }
        }
        Ok(())
    }
}

/// The source of an unloaded texture's record. Unloaded textures route to nothing (their
/// pages are resident with the fallback colour), so every call is an error.
struct UnloadedSource;

impl ImageSource for UnloadedSource {
    fn name(&self) -> String {
        "unloaded texture".into()
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        Err("the texture was unloaded".into())
    }
    fn read_region(&self, _: TileRegion, _: &mut [u8], _: usize) -> Result<Readiness, SourceError> {
        Err("the texture was unloaded".into())
    }
}
