//! Blocking fills (the CPU cache's blocking mode, as OpenImageIO's TextureSystem): a lookup
//! that misses fills the page in the calling thread and publishes it at once. The same
//! routing, fill code, pool, staging and statistics as the multi-pass mode.
//!
//! - Concurrent misses on one page cause one read: the first thread marks the page in
//!   flight; the others wait on the engine's condition variable until it is published.
//! - Memory comes from the pool, then from staged tiles no lookup can still see, then from
//!   a clock sweep over the resident tiles (reference bit set → spared and cleared;
//!   otherwise aged), which stages the oldest. Staged memory is reused only once every
//!   lookup that could have seen it has finished (thread epoch pins, which never block),
//!   so a tile is never freed or overwritten under a reader.
//! - The host lock is never held during a read.
//! - A fill whose texture's contents were dropped meanwhile (invalidate, replace, unload)
//!   publishes nothing, as in the multi-pass mode (`requests::fill`); the lookup looks
//!   again and finds the texture to reopen.

use super::decode_hold::DecodeHold;
use super::engine::Engine;
use super::fill::{self, TileJob};
use super::host_state::{HostState, Pending};
use super::open_fill;
use super::resource::ResourceTask;
use super::ticket::Ticket;
use super::whole_decodes;
use crate::ids::PageId;
use crate::memory::epoch::Quiescence;
use crate::memory::TileSlot;
use crate::resources::Route;
use parking_lot::MutexGuard;
use std::time::{Duration, Instant};

/// How long a waiter sleeps before it looks again (a multi-pass fill does not signal).
const WAIT_SLICE: Duration = Duration::from_millis(1);

/// Yields while staged memory waits for lookups in progress, before sleeping instead.
const MAX_QUIESCENCE_SPINS: u32 = 10_000;

/// How long a fill waits in all for lookups in progress to end (they end without any
/// fill's help, so waiting is safe) before giving up: long enough for a descheduled
/// thread of a loaded machine to be scheduled again and unpin, or for a lookup reading a
/// file tile in place from slow storage to finish, so that whether a lookup gets its pages
/// does not depend on the scheduler or the storage's latency.
const QUIESCENCE_PATIENCE: Duration = Duration::from_millis(100);

/// Make `page` resident now (or learn that it cannot be). Returns whether anything changed
/// that a retried lookup could see: the page (or, for a failed texture, its fallback) was
/// published, or another thread published it while this one waited.
pub(crate) fn fill_page(engine: &Engine, page: PageId) -> bool {
    let mut host = engine.host.lock();
    let mut waited = false;
    loop {
        if engine.pages.is_resident(page.0) {
            return true;
        }
        if !host.in_flight.contains(&page) {
            break;
        }
        // A multi-pass fill may have finished without publishing (that waits for the next
        // launch): publish it now.
        if publish_now(engine, &mut host) > 0 {
            engine.fill_done.notify_all();
            continue;
        }
        if !waited {
            waited = true;
            host.counters.fill_waits += 1;
        }
        engine.fill_done.wait_for(&mut host, WAIT_SLICE);
    }
    if waited {
        // The other fill ended without publishing the page (no memory, "not yet", or the
        // texture failed): report progress so the lookup looks again, at most once more.
        return publish_now(engine, &mut host) > 0;
    }
    if host.residency.restore(page) {
        host.in_flight.insert(page);
        host.pending.push(Pending::Tile(page));
        publish_now(engine, &mut host);
        return true;
    }
    if host.ptex_decode_short > 0 {
        // The Ptex decode cache was made when the budget was full: make its room from the
        // least recently used tiles, without waiting for readers (tiles some thread can
        // still see stay staged, for a later fill or a later try).
        let short = host.ptex_decode_short;
        if host.residency.available_bytes() < short {
            let tiles = short.div_ceil(crate::TILE_BYTES as u64) as usize;
            host.residency.sweep(&engine.pages, &engine.epochs, tiles);
        }
        host.residency.free_staged_for(&engine.epochs, short);
        engine.grow_ptex_decode_cache(&mut host);
    }
    match host.resources.route(&engine.layout, page) {
        Route::InitTexture {
            texture,
            generation,
        } => init_now(engine, host, texture, generation),
        Route::Tile {
            texture,
            generation,
            level,
            tile_x,
            tile_y,
            tile_bytes,
        } => tile_now(
            engine,
            host,
            TileJob {
                page,
                texture,
                generation,
                level,
                tile_x,
                tile_y,
                tile_bytes,
                launch: None,
            },
        ),
        Route::Resource { index, page_index } => {
            resource_now(engine, host, page, index, page_index)
        }
        // Missed through contents dropped since: the lookup will see the texture anew.
        Route::Stale(_) => true,
        Route::UnknownTexture(texture) => {
            host.publish_unknown_texture(&engine.layout, texture);
            publish_now(engine, &mut host) > 0
        }
        Route::Failed(_) => publish_now(engine, &mut host) > 0,
        Route::Unowned => {
            host.counters.unowned_requests += 1;
            false
        }
    }
}

/// Open a texture in this thread: sampler, base colour and mip tail. If its mip tail does
/// not fit, free room by evicting tiles and try once more.
fn init_now(
    engine: &Engine,
    mut host: MutexGuard<'_, HostState>,
    texture: crate::ids::TextureId,
    generation: u32,
) -> bool {
    let sampler_page = engine.layout.sampler_page(texture);
    let base_page = engine.layout.base_color_page(texture);
    for attempt in 0..2 {
        if !host.is_current(texture, generation) {
            // Dropped while room was being made: the lookup will see the texture anew.
            engine.fill_done.notify_all();
            return true;
        }
        host.in_flight.insert(sampler_page);
        host.in_flight.insert(base_page);
        MutexGuard::unlocked(&mut host, || {
            let kept = open_fill::init_texture(engine, texture, generation);
            whole_decodes::fill_after_open(engine, kept);
        });
        if host.deferred.remove(&sampler_page) {
            // Deferred: no room for the mip tail, or the source said "not yet".
            let wanted = std::mem::take(&mut host.wanted_bytes);
            let retry = attempt == 0 && wanted > 0 && free_bytes(engine, &mut host, wanted);
            if !retry {
                engine.fill_done.notify_all();
                return false;
            }
            continue;
        }
        publish_now(engine, &mut host);
        engine.fill_done.notify_all();
        return true;
    }
    false
}

/// Ask a resource's callback for one page's entry in this thread and publish it. A failed
/// page is never asked again.
fn resource_now(
    engine: &Engine,
    mut host: MutexGuard<'_, HostState>,
    page: PageId,
    index: u32,
    page_index: u32,
) -> bool {
    if engine.is_resource_failed(page) {
        return false;
    }
    let Some(callback) = host.resources.resource(index).map(|r| r.callback.clone()) else {
        return false;
    };
    host.in_flight.insert(page);
    let task = ResourceTask {
        page,
        page_index,
        callback,
    };
    MutexGuard::unlocked(&mut host, || task.run(engine, None));
    // "Not yet": nobody serves the deferred list in blocking mode.
    let not_yet = host.deferred.remove(&page);
    let published = publish_now(engine, &mut host);
    engine.fill_done.notify_all();
    !not_yet && published > 0
}

/// Read one tile in this thread and publish it. A page of levels served from one decode
/// of the whole image brings the texture's other pages of those levels with it, as far as
/// free memory allows (`whole_decodes`).
fn tile_now(engine: &Engine, mut host: MutexGuard<'_, HostState>, job: TileJob) -> bool {
    host.in_flight.insert(job.page);
    engine.settle_decodes(&mut host);
    let mut hold = decode_hold(engine, &mut host, &job);
    let Some(slot) = take_slot_now(engine, &mut host, job.tile_bytes as usize) else {
        // The marker is ours unless the contents were dropped while we waited for memory
        // (then it may be a newer fill's).
        if host.is_current(job.texture, job.generation) {
            host.in_flight.remove(&job.page);
        }
        host.counters.blocking_no_memory += 1;
        engine.fill_done.notify_all();
        return false;
    };
    let ticket = Ticket::new(1);
    let Some(task) = fill::prepare_tile(&mut host, job, slot, ticket.task()) else {
        engine.fill_done.notify_all();
        return false;
    };
    let task = task.by_file_tile(engine.fills_by_file_tile());
    MutexGuard::unlocked(&mut host, || task.run(engine));
    // "Not yet" puts the page on the deferred list: in blocking mode nobody serves that
    // list, so take it back off.
    let not_yet = host.deferred.remove(&job.page);
    if hold.is_some() && !not_yet {
        // The other missing pages of those levels, in memory free now or held by staged
        // tiles no lookup can see (nothing is swept for them).
        let (pages, _) = whole_decodes::prefetch_pages(engine, &mut host, &job, usize::MAX);
        if !whole_decodes::fill_here(engine, &mut host, pages) {
            // Pages the budget had no room for will need the decode again: spill it.
            hold = hold.map(|h| h.spilling(engine.spills_enabled()));
        }
    }
    drop(hold);
    engine.settle_decodes(&mut host);
    let published = publish_now(engine, &mut host);
    engine.fill_done.notify_all();
    !not_yet && published > 0
}

/// A hold of the whole decode `job` reads from, if its level is served so, charged to the
/// budget (evicting tiles for it if need be).
fn decode_hold(
    engine: &Engine,
    host: &mut MutexGuard<'_, HostState>,
    job: &TileJob,
) -> Option<DecodeHold> {
    let record = host.resources.get(job.texture)?;
    let (levels, whole) = record.layout.as_ref()?.whole_decode_pages()?;
    if !levels.contains(&job.level) || record.generation != job.generation {
        return None;
    }
    let source = record.source.clone();
    // Room is made by evicting tiles, unless the decode would not fit beside the tails
    // anyway (then it is made uncharged, and counted).
    let room = host
        .residency
        .budget_bytes()
        .saturating_sub(host.residency.non_evictable_bytes());
    if host.residency.available_bytes() < whole.bytes && whole.bytes <= room {
        free_bytes(engine, host, whole.bytes);
    }
    Some(whole_decodes::charged_hold(
        engine,
        host,
        (job.texture, job.generation),
        source,
        whole.bytes,
    ))
}

/// Publish what is pending at once (blocking fills do not wait for a launch). Returns how
/// many were published; a backend failure is logged (the CPU backend has none).
fn publish_now(engine: &Engine, host: &mut HostState) -> usize {
    engine.publish(host, usize::MAX).unwrap_or_else(|e| {
        tracing::error!("publishing a blocking fill: {e}");
        0
    })
}

/// A tile slot of `bytes`: free memory, then reclaimable staged tiles, then tiles staged by
/// a clock sweep. Waits (yielding, lock released) while staged memory is held only by
/// lookups in progress. `None` if every tile is held by a live launch or nothing is
/// evictable.
fn take_slot_now(
    engine: &Engine,
    host: &mut MutexGuard<'_, HostState>,
    bytes: usize,
) -> Option<TileSlot> {
    let mut spins = 0;
    let mut since: Option<Instant> = None;
    loop {
        if let Some(slot) = host.residency.allocate(&engine.epochs, bytes) {
            return Some(slot);
        }
        match host.residency.staged_quiescence(&engine.epochs) {
            None => {
                if host.residency.sweep(&engine.pages, &engine.epochs, 1) == 0 {
                    return None;
                }
            }
            Some(Quiescence::ThreadsPinned) if spins < MAX_QUIESCENCE_SPINS => {
                spins += 1;
                MutexGuard::unlocked(host, std::thread::yield_now);
            }
            Some(Quiescence::ThreadsPinned)
                if since.get_or_insert_with(Instant::now).elapsed() < QUIESCENCE_PATIENCE =>
            {
                MutexGuard::unlocked(host, || std::thread::sleep(WAIT_SLICE));
            }
            Some(Quiescence::Quiescent) => {} // reclaimable now: take it on the next turn
            Some(Quiescence::ThreadsPinned | Quiescence::LaunchPinned) => return None,
        }
    }
}

/// Free `bytes` of pool memory (for a mip tail or a whole decode) by evicting tiles: each slot taken goes
/// back (as a spare buffer, which reserving the tail then frees, or straight to the
/// budget if it was a new slot). Whether it worked.
fn free_bytes(engine: &Engine, host: &mut MutexGuard<'_, HostState>, bytes: u64) -> bool {
    let tiles = bytes.div_ceil(crate::TILE_BYTES as u64) as usize;
    let mut taken = Vec::with_capacity(tiles);
    let mut enough = true;
    for _ in 0..tiles {
        match take_slot_now(engine, host, crate::TILE_BYTES) {
            Some(slot) => taken.push(slot),
            None => {
                enough = false;
                break;
            }
        }
    }
    for slot in taken {
        host.residency.cancel_slot(slot);
    }
    enough
}
