//! `process_requests`: pull a launch's requests, route each page, restore staged pages
//! (second chance), make room by staging stale tiles, take buffers, and start the fills.
//! Final mode drops nothing: work beyond the per-launch maximum or the memory available is
//! deferred to the next launch and counted. Interactive mode bounds the fill queue, serves
//! coarse levels first and drops (counts) what does not fit: the next frame asks again for
//! what it still needs.

use super::engine::Engine;
use super::fill::{self, TileJob};
use super::host_state::{Deferral, HostState, Pending};
use super::open_fill;
use super::resource::ResourceTask;
use super::ticket::Ticket;
use super::whole_decodes::{self, DecodePlan};
use crate::ids::{PageId, TextureId};
use crate::options::StreamingMode;
use crate::paging::PullResult;
use crate::resources::Route;
use std::collections::BTreeSet;
use std::sync::Arc;

impl Engine {
    /// Serve the requests of launch `launch_num` (whose hold on memory must have been
    /// released): pull them from the host page table, or take `pulled` — the same lists
    /// produced elsewhere (a GPU backend's pull kernel, whose reference bits and LRU ages
    /// live on the device) — then restore staged pages, make room, and start the fills on
    /// the fill threads. The ticket completes when every fill has ended (published at the
    /// next launch, deferred, or failed).
    pub fn process_requests(
        self: &Arc<Self>,
        launch_num: u32,
        pulled: Option<PullResult>,
    ) -> Ticket {
        process_pulled(self, launch_num, pulled)
    }
}

impl Engine {
    /// Open `texture` (sampler, mip tail, base colour) on a fill thread now, unless it is
    /// open or opening. Published at the next launch start.
    pub(crate) fn open_soon(&self, host: &mut HostState, texture: TextureId) {
        let sampler = self.layout.sampler_page(texture);
        if host.in_flight.contains(&sampler) || self.pages.is_resident(sampler.0) {
            return;
        }
        let Route::InitTexture {
            texture,
            generation,
        } = host.resources.route(&self.layout, sampler)
        else {
            return;
        };
        let Some(engine) = self.me.upgrade() else {
            return;
        };
        host.in_flight.insert(sampler);
        host.in_flight.insert(self.layout.base_color_page(texture));
        self.workers.spawn(move || {
            let kept = open_fill::init_texture(&engine, texture, generation);
            whole_decodes::fill_after_open(&engine, kept);
        });
    }
}

/// See [`Engine::process_requests`].
fn process_pulled(engine: &Arc<Engine>, launch_num: u32, pulled: Option<PullResult>) -> Ticket {
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
    engine.settle_decodes(&mut host);
    host.counters.requests += pull.requested.len() as u64;
    engine.gate.end_launch(pull.requested.len() as u64);
    // The launch has ended: memory retired while it lived may be free now.
    host.residency.reclaim_retired(&engine.epochs);

    // Deferred requests and new ones, ascending: samplers first, then each texture's
    // coarse levels before its fine ones.
    let mut candidates: BTreeSet<PageId> = std::mem::take(&mut host.deferred);
    candidates.extend(pull.requested.iter().copied());

    let max = engine.options.max_requests_per_launch;
    let interactive = engine.options.mode == StreamingMode::Interactive;
    let mut inits: Vec<(TextureId, u32)> = Vec::new();
    let mut tiles: Vec<TileJob> = Vec::new();
    let mut resources: Vec<ResourceTask> = Vec::new();
    for page in candidates {
        if host.in_flight.contains(&page) {
            // Still wanted: a queued fill of it is not one the view moved on from.
            if interactive {
                if let Some(wanted) = host.queued_wanted.get_mut(&page) {
                    *wanted = launch_num;
                }
            }
            continue;
        }
        if engine.pages.is_resident(page.0) {
            continue;
        }
        if host.residency.restore(page) {
            host.in_flight.insert(page);
            host.pending.push(Pending::Tile(page));
            continue;
        }
        // Interactive mode limits tiles after the loop, coarse levels first.
        let queued = inits.len() + resources.len() + if interactive { 0 } else { tiles.len() };
        if queued >= max {
            if interactive {
                host.counters.requests_dropped += 1;
            } else {
                host.defer(page, Deferral::OverLimit);
            }
            continue;
        }
        match host.resources.route(&engine.layout, page) {
            Route::InitTexture {
                texture,
                generation,
            } => {
                host.in_flight.insert(engine.layout.sampler_page(texture));
                host.in_flight
                    .insert(engine.layout.base_color_page(texture));
                inits.push((texture, generation));
            }
            Route::Tile {
                texture,
                generation,
                level,
                tile_x,
                tile_y,
                tile_bytes,
            } => {
                host.in_flight.insert(page);
                tiles.push(TileJob {
                    page,
                    texture,
                    generation,
                    level,
                    tile_x,
                    tile_y,
                    tile_bytes,
                    launch: Some(launch_num),
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
            Route::UnknownTexture(t) => host.publish_unknown_texture(&engine.layout, t),
            // A failed texture's sampler entry is (or is about to be) 0: nothing to read.
            // Stale pages were asked for through contents that have been dropped.
            Route::Failed(_) | Route::Stale(_) => {}
            Route::Unowned => {
                host.counters.unowned_requests += 1;
                tracing::warn!(page = page.0, "request for a page no resource owns");
            }
        }
    }

    if interactive {
        // The fill queue is bounded (at most `max` tile fills queued) and served coarse
        // levels first, and within a level the pages most lookups missed first; what does
        // not fit is dropped, not deferred: a page still needed is requested again by a
        // later launch.
        let gate = &engine.gate;
        tiles.sort_by_cached_key(|j| {
            let misses = gate.request_count(j.page.0);
            (
                std::cmp::Reverse(j.level),
                std::cmp::Reverse(misses),
                j.page,
            )
        });
        let room = max
            .saturating_sub(inits.len() + resources.len())
            .min(max.saturating_sub(host.queued_fills));
        for job in tiles.drain(room.min(tiles.len())..) {
            host.in_flight.remove(&job.page);
            host.counters.requests_dropped += 1;
        }
    }
    if engine.options.counts_requests() {
        engine.gate.clear_request_counts();
    }

    // Pages of levels served from one decode of the whole image: the texture's other
    // pages of those levels come from the same decode (`whole_decodes`).
    let prefetch_room = if interactive {
        max.saturating_sub(inits.len() + resources.len() + tiles.len())
            .min(max.saturating_sub(host.queued_fills + tiles.len()))
    } else {
        usize::MAX
    };
    let mut decodes = DecodePlan::new(
        engine,
        &mut host,
        &mut tiles,
        Some(launch_num),
        prefetch_room,
    );
    let prefetch = std::mem::take(&mut decodes.prefetch);

    let wanted_bytes = std::mem::take(&mut host.wanted_bytes);
    if engine.options.eviction {
        let tile_bytes: u64 = tiles
            .iter()
            .chain(&prefetch)
            .map(|j| u64::from(j.tile_bytes))
            .sum();
        let needed = tile_bytes
            + decodes.bytes_to_charge()
            + wanted_bytes
            + host.ptex_decode_short
            + host.residency.excess_bytes();
        host.residency.make_room(
            &engine.pages,
            &engine.epochs,
            needed,
            &pull.stale,
            engine.options.staged_reserve,
        );
    }
    host.residency.free_excess(&engine.epochs);
    let holds = decodes.charge(engine, &mut host);

    let mut jobs = Vec::with_capacity(tiles.len() + prefetch.len());
    for job in tiles {
        match host
            .residency
            .allocate(&engine.epochs, job.tile_bytes as usize)
        {
            Some(buffer) => jobs.push((job, buffer)),
            None => {
                host.in_flight.remove(&job.page);
                if interactive {
                    host.counters.requests_dropped += 1;
                } else {
                    host.defer(job.page, Deferral::NoMemory);
                }
            }
        }
    }
    // Prefetched pages take memory that is free now, or nothing: never a deferral.
    jobs.extend(whole_decodes::take_slots(engine, &mut host, prefetch));
    // Reservations take free memory only: the mip tails of opens deferred for memory (each
    // open retries below) and the Ptex decode cache get the room of staged tiles.
    if engine.options.eviction {
        let reserving = wanted_bytes + host.ptex_decode_short;
        host.residency.free_staged_for(&engine.epochs, reserving);
    }
    engine.grow_ptex_decode_cache(&mut host);
    host.pull = pull;
    let ticket = Ticket::new(inits.len() + jobs.len() + resources.len());
    let tile_tasks: Vec<_> = jobs
        .into_iter()
        .filter_map(|(job, buffer)| fill::prepare_tile(&mut host, job, buffer, ticket.task()))
        .collect();
    if interactive {
        // Their age for `TileTask::take_up`, refreshed by later requests (above).
        for task in &tile_tasks {
            host.queued_wanted.insert(task.page(), launch_num);
        }
    }
    drop(host);

    // Each task lets go of the engine before its guard completes the ticket: a caller who
    // saw the ticket complete and drops the loader then drops the engine on its own thread,
    // which joins the fill threads (see `workers`), rather than leaving that to a fill
    // thread, which cannot.
    for (t, generation) in inits {
        let engine = engine.clone();
        let guard = ticket.task();
        engine.clone().workers.spawn(move || {
            let kept = open_fill::init_texture(&engine, t, generation);
            whole_decodes::fill_after_open(&engine, kept);
            drop(engine);
            drop(guard);
        });
    }
    for task in resources {
        let engine = engine.clone();
        let guard = ticket.task();
        engine.clone().workers.spawn(move || {
            engine.workers.within_limit(|| task.run(&engine, None));
            drop(engine);
            drop(guard);
        });
    }
    for mut task in tile_tasks {
        let engine = engine.clone();
        let guard = task.take_guard();
        // The last fill using a whole decode releases it (before its ticket completes).
        let hold = holds.get(&task.texture()).cloned();
        engine.clone().workers.spawn(move || {
            task.run_on_fill_thread(&engine);
            drop(hold);
            drop(engine);
            drop(guard);
        });
    }
    drop(holds);
    ticket
}
