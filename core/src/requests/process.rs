//! `process_requests`: pull a launch's requests, route each page, restore staged pages
//! (second chance), make room by staging stale tiles, take buffers, and start the fills.
//! Nothing is dropped: work beyond the per-launch maximum or the memory available is
//! deferred to the next launch and counted.

use super::engine::Engine;
use super::fill::{self, TileJob};
use super::host_state::{Deferral, HostState, Pending};
use super::lifecycle::reclaim_retired;
use super::resource::ResourceTask;
use super::ticket::Ticket;
use crate::ids::{PageId, TextureId, TILE_BYTES};
use crate::memory::TileBuffer;
use crate::paging::{PullResult, StalePage};
use crate::resources::Route;
use crate::textures::DEFAULT_FALLBACK_COLOR;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Pull and start serving the requests of launch `launch_num` (whose pin is released).
pub(crate) fn process_requests(engine: &Arc<Engine>, launch_num: u32) -> Ticket {
    process_pulled(engine, launch_num, None)
}

/// [`process_requests`] with the pull done elsewhere: the backend hook of the CUDA loader,
/// whose reference bits and LRU ages live on the device (its pull kernel produces the
/// same requested and stale lists). `None`: the host pull, as for the CPU backend.
pub(crate) fn process_pulled(
    engine: &Arc<Engine>,
    launch_num: u32,
    pulled: Option<PullResult>,
) -> Ticket {
    let mut host = engine.host.lock();
    let pull = match pulled {
        Some(p) => p,
        None => {
            let mut pull = std::mem::take(&mut host.pull);
            engine.pages.pull(
                host.space.end_page(),
                launch_num,
                engine.options.lru_threshold,
                &mut pull,
            );
            pull
        }
    };
    host.counters.requests += pull.requested.len() as u64;
    // The launch has ended: memory retired while it lived may be free now.
    reclaim_retired(engine, &mut host);

    // Deferred requests and new ones, ascending: samplers first, then each texture's
    // coarse levels before its fine ones.
    let mut candidates: BTreeSet<u32> = std::mem::take(&mut host.deferred);
    candidates.extend(pull.requested.iter().copied());

    let max = engine.options.max_requests_per_launch;
    let mut inits: Vec<(TextureId, u32)> = Vec::new();
    let mut tiles: Vec<TileJob> = Vec::new();
    let mut resources: Vec<ResourceTask> = Vec::new();
    for page in candidates {
        if host.in_flight.contains(&page) || engine.pages.is_resident(page) {
            continue;
        }
        if let Some(buffer) = host.staged.restore(page) {
            host.counters.second_chance_restores += 1;
            host.in_flight.insert(page);
            host.pending.push(Pending::Tile { page, buffer });
            continue;
        }
        if inits.len() + tiles.len() + resources.len() >= max {
            host.defer(page, Deferral::OverLimit);
            continue;
        }
        match host.resources.route(&engine.layout, PageId(page)) {
            Route::InitTexture {
                texture,
                generation,
            } => {
                host.in_flight.insert(engine.layout.sampler_page(texture).0);
                host.in_flight
                    .insert(engine.layout.base_color_page(texture).0);
                inits.push((texture, generation));
            }
            Route::Tile {
                texture,
                generation,
                level,
                tile_x,
                tile_y,
            } => {
                host.in_flight.insert(page);
                tiles.push(TileJob {
                    page,
                    texture,
                    generation,
                    level,
                    tile_x,
                    tile_y,
                });
            }
            Route::Resource { index, page_index } => {
                // A failed page is never asked for again (see `requests::resource`).
                if engine.is_resource_failed(page) {
                    continue;
                }
                if let Some(r) = host.resources.resource(index) {
                    let callback = r.callback.clone();
                    host.in_flight.insert(page);
                    resources.push(ResourceTask {
                        page,
                        page_index,
                        callback,
                    });
                }
            }
            Route::UnknownTexture(t) => publish_unknown_texture(engine, &mut host, t),
            // A failed texture's sampler entry is (or is about to be) 0: nothing to read.
            // Stale pages were asked for through contents that have been dropped.
            Route::Failed(_) | Route::Stale(_) => {}
            Route::Unowned => {
                host.counters.unowned_requests += 1;
                tracing::warn!(page, "request for a page no resource owns");
            }
        }
    }

    let wanted_tiles = host.wanted_bytes.div_ceil(TILE_BYTES as u64) as usize;
    host.wanted_bytes = 0;
    if engine.options.eviction {
        let excess_tiles = host.pool.excess_bytes().div_ceil(TILE_BYTES as u64) as usize;
        make_room(
            engine,
            &mut host,
            tiles.len() + wanted_tiles + excess_tiles,
            &pull.stale,
        );
    }
    free_reclaimable(engine, &mut host);

    let mut jobs = Vec::with_capacity(tiles.len());
    for job in tiles {
        match take_buffer(engine, &mut host) {
            Some(buffer) => jobs.push((job, buffer)),
            None => {
                host.in_flight.remove(&job.page);
                host.defer(job.page, Deferral::NoMemory);
            }
        }
    }
    host.pull = pull;
    let ticket = Ticket::new(inits.len() + jobs.len() + resources.len());
    let tile_tasks: Vec<_> = jobs
        .into_iter()
        .filter_map(|(job, buffer)| fill::prepare_tile(&mut host, job, buffer, ticket.task()))
        .collect();
    drop(host);

    // Each task lets go of the engine before its guard completes the ticket: a caller who
    // saw the ticket complete and drops the loader then drops the engine on its own thread,
    // which joins the fill threads (see `workers`), rather than leaving that to a fill
    // thread, which cannot.
    for (t, generation) in inits {
        let engine = engine.clone();
        let guard = ticket.task();
        engine.clone().workers.spawn(move || {
            fill::init_texture(&engine, t, generation);
            drop(engine);
            drop(guard);
        });
    }
    for task in resources {
        let engine = engine.clone();
        let guard = ticket.task();
        engine.clone().workers.spawn(move || {
            task.run(&engine, None);
            drop(engine);
            drop(guard);
        });
    }
    for mut task in tile_tasks {
        let engine = engine.clone();
        let guard = task.take_guard();
        engine.clone().workers.spawn(move || {
            task.run(&engine);
            drop(engine);
            drop(guard);
        });
    }
    ticket
}

/// Stage stale tiles (oldest first) when free memory cannot cover `needed` buffers, keeping
/// a reserve of staged tiles beyond the need so that recently evicted tiles get a second
/// chance instead of a reread.
fn make_room(engine: &Engine, host: &mut HostState, needed: usize, stale: &[StalePage]) {
    let free = host.pool.available_tiles();
    if free >= needed {
        return;
    }
    let budget_tiles = (host.pool.budget_bytes() / TILE_BYTES as u64) as f64;
    let reserve = (budget_tiles * engine.options.staged_reserve as f64) as usize;
    let want_staged = needed - free + reserve;
    if host.staged.len() >= want_staged {
        return;
    }
    let mut victims: Vec<StalePage> = stale
        .iter()
        .copied()
        .filter(|s| host.resident.contains_key(&s.page))
        .collect();
    victims.sort_by(|a, b| b.age.cmp(&a.age).then(a.page.cmp(&b.page)));
    let count = want_staged - host.staged.len();
    let pages: Vec<u32> = victims.iter().take(count).map(|s| s.page).collect();
    stage_pages(engine, host, &pages);
}

/// Make resident tiles non-resident, keeping their data for a second chance.
pub(crate) fn stage_pages(engine: &Engine, host: &mut HostState, pages: &[u32]) {
    let mut staged = Vec::with_capacity(pages.len());
    for &page in pages {
        if let Some(buffer) = host.resident.remove(&page) {
            engine.pages.invalidate(page);
            staged.push((page, buffer));
        }
    }
    if staged.is_empty() {
        return;
    }
    // The stamp is taken after the residence bits were cleared: launches pinned later
    // cannot see these tiles.
    let stamp = engine.epochs.retire_stamp();
    host.counters.pages_staged += staged.len() as u64;
    for (page, buffer) in staged {
        host.staged.stage(page, buffer, stamp);
    }
}

/// A buffer for a fill: free memory first, then retired memory no reader can see, then
/// the oldest reclaimable staged tile.
pub(crate) fn take_buffer(engine: &Engine, host: &mut HostState) -> Option<TileBuffer> {
    if host.pool.excess_bytes() == 0 {
        if let Some(b) = host.pool.take() {
            return Some(b);
        }
    }
    if !host.retired.is_empty() {
        reclaim_retired(engine, host);
        if host.pool.excess_bytes() == 0 {
            if let Some(b) = host.pool.take() {
                return Some(b);
            }
        }
    }
    let (page, buffer) = host.staged.reclaim_oldest(&engine.epochs)?;
    engine.tiles.set(page, std::ptr::null());
    host.counters.evictions += 1;
    Some(buffer)
}

/// Free retired memory and staged tiles no launch can see while the pool is over its
/// budget.
pub(crate) fn free_reclaimable(engine: &Engine, host: &mut HostState) {
    reclaim_retired(engine, host);
    while host.pool.excess_bytes() > 0 {
        let Some((page, buffer)) = host.staged.reclaim_oldest(&engine.epochs) else {
            break;
        };
        engine.tiles.set(page, std::ptr::null());
        host.counters.evictions += 1;
        host.pool.free_buffer(buffer);
    }
}

/// A sampler lookup of an id no texture has: publish the default fallback colour so the
/// lookup resolves (and stop it from being requested every launch).
pub(crate) fn publish_unknown_texture(engine: &Engine, host: &mut HostState, texture: TextureId) {
    tracing::warn!(
        texture = texture.0,
        "lookup of an unknown texture id: returning the fallback colour"
    );
    host.publish_fallback(&engine.layout, texture, DEFAULT_FALLBACK_COLOR);
}
