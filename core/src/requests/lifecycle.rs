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
//!   one keeps routing to nothing ([`crate::resources::Route::Stale`]).

use super::engine::Engine;
use super::host_state::{HostState, Pending, Retired};
use crate::error::{Error, Result};
use crate::ids::TextureId;
use crate::memory::TileBuffer;
use crate::paging::{encode_base_color, PageMapping, NON_EVICTABLE};
use crate::resources::TextureState;
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TextureDesc, TileRegion};
use std::sync::Arc;

/// The texture's source content changed: drop its contents; they are read again on demand.
pub(crate) fn invalidate_texture(engine: &Engine, texture: TextureId) -> Result<()> {
    let mut host = engine.host.lock();
    drop_contents(engine, &mut host, texture)
}

/// From now on `texture` reads `source`, sampled with `desc`.
pub(crate) fn replace_texture(
    engine: &Engine,
    texture: TextureId,
    source: Arc<dyn ImageSource>,
    desc: TextureDesc,
) -> Result<()> {
    super::engine::check_desc(&desc)?;
    let old_source = {
        let mut host = engine.host.lock();
        drop_contents(engine, &mut host, texture)?;
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

/// Drop `texture`'s contents and source for good; it samples as its fallback colour.
pub(crate) fn unload_texture(engine: &Engine, texture: TextureId) -> Result<()> {
    let old_source = {
        let mut host = engine.host.lock();
        if let Some(TextureState::Unloaded) = host.resources.get(texture).map(|r| &r.state) {
            return Ok(());
        }
        drop_contents(engine, &mut host, texture)?;
        let record = host
            .resources
            .get_mut(texture)
            .ok_or(Error::UnknownTexture(texture))?;
        record.state = TextureState::Unloaded;
        let fallback = record.desc.fallback_color;
        let old = std::mem::replace(&mut record.source, Arc::new(UnloadedSource));
        // Visible at once (entries only, no memory): a null sampler and the fallback colour
        // as the base colour, never evicted — as a failed texture.
        engine.pages.push_mapping(PageMapping {
            page: engine.layout.sampler_page(texture).0,
            lru: NON_EVICTABLE as u32,
            entry: 0,
        });
        engine.pages.push_mapping(PageMapping {
            page: engine.layout.base_color_page(texture).0,
            lru: NON_EVICTABLE as u32,
            entry: encode_base_color(fallback),
        });
        old
    };
    // Fills still reading it hold their own reference; the last one drops it.
    drop(old_source);
    Ok(())
}

/// Drop everything `texture` has published or is about to publish (see the module docs).
fn drop_contents(engine: &Engine, host: &mut HostState, texture: TextureId) -> Result<()> {
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
    let sampler_page = engine.layout.sampler_page(texture).0;
    let base_page = engine.layout.base_color_page(texture).0;
    let range = record
        .start_page
        .map_or(0..0, |start| start..start + record.range_pages);
    let ours = |page: u32| page == sampler_page || page == base_page || range.contains(&page);

    // Withdraw what waits for the next launch. Queued tiles may be second-chance restores
    // that a launch saw before they were staged: retire them like the resident ones.
    let mut tiles: Vec<(u32, TileBuffer)> = Vec::new();
    for p in std::mem::take(&mut host.pending) {
        match p {
            Pending::Tile { page, buffer } if range.contains(&page) => tiles.push((page, buffer)),
            Pending::Entry { page, .. } | Pending::Resident { page } if ours(page) => {}
            other => host.pending.push(other),
        }
    }
    // Non-resident from now on: tiles, the mip-tail page, sampler and base colour.
    let resident: Vec<u32> = host
        .resident
        .keys()
        .copied()
        .filter(|p| range.contains(p))
        .collect();
    for page in resident {
        if let Some(buffer) = host.resident.remove(&page) {
            engine.pages.invalidate(page);
            tiles.push((page, buffer));
        }
    }
    if !range.is_empty() {
        engine.pages.invalidate(range.start);
    }
    engine.pages.invalidate(sampler_page);
    engine.pages.invalidate(base_page);
    tiles.extend(host.staged.remove_range(range.start, range.end));
    // Fills in flight for these pages belong to the old generation: forget their markers
    // (they will not publish), so that new requests are served. Deferred tiles of the old
    // layout mean nothing any more; a deferred sampler request is still wanted.
    host.in_flight.retain(|&p| !ours(p));
    host.deferred.retain(|p| !range.contains(p));

    let Some(record) = host.resources.get_mut(texture) else {
        return Err(Error::UnknownTexture(texture));
    };
    record.generation = record.generation.wrapping_add(1);
    record.state = TextureState::Unopened;
    let sampler = record.sampler.take();
    let mip_tail = record.mip_tail.take();
    let layout = record.layout.take();
    let tail_bytes = match (&mip_tail, &layout) {
        (Some(_), Some(l)) => l.mip_tail_bytes,
        _ => 0,
    };
    let level0_bytes = match (&sampler, &layout) {
        (Some(_), Some(l)) => l.level0_bytes(),
        _ => 0,
    };

    // Taken after the residence bits were cleared: launches pinned from now on cannot
    // reach any of this memory.
    let stamp = engine.epochs.retire_stamp();
    for (page, buffer) in tiles {
        host.retired.retire(stamp, Retired::Tile { page, buffer });
    }
    if sampler.is_some() || mip_tail.is_some() {
        host.retired.retire(
            stamp,
            Retired::Contents {
                sampler,
                mip_tail,
                tail_bytes,
            },
        );
    }
    host.counters.virtual_bytes = host.counters.virtual_bytes.saturating_sub(level0_bytes);
    reclaim_retired(engine, host);
    Ok(())
}

/// Hand back the retired memory no launch or lookup can see any more: tile buffers to the
/// pool, sampler records and mip tails freed (their bytes leave the budget).
pub(crate) fn reclaim_retired(engine: &Engine, host: &mut HostState) {
    while let Some(item) = host.retired.reclaim_one(&engine.epochs) {
        match item {
            Retired::Tile { page, buffer } => {
                // The page may have been filled anew since: keep that mapping.
                if engine.tiles.get(page) == buffer.as_ptr() {
                    engine.tiles.set(page, std::ptr::null());
                }
                host.pool.give_back(buffer);
            }
            Retired::Contents {
                sampler,
                mip_tail,
                tail_bytes,
            } => {
                drop((sampler, mip_tail));
                host.pool.release(tail_bytes);
            }
        }
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
