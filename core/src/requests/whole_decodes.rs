//! Pages filled from one decode of the whole image: a PNG or JPEG, which can only be
//! decoded whole, and the mip levels a file lacks, which are generated from the whole of
//! the level above them (`ImageSource::whole_decode`). The decode's memory stays inside
//! the texture budget:
//!
//! - a batch that fills a page of such levels makes one [`DecodeHold`] for the texture,
//!   charging the decode's bytes to the budget (room is made for them as for tiles); the
//!   decodes a batch holds at once take at most a [`DECODE_BUDGET_SHARE`]th of the
//!   budget (its first decode goes whatever its size), the other textures' pages waiting
//!   for the next launch;
//! - the batch fills the texture's other pages of those levels too, from the same decode
//!   — those neither resident, staged nor in flight, coarse levels first, at most a
//!   [`PREFETCH_BUDGET_SHARE`]th of the budget, and only where memory is free or can be
//!   had from stale tiles (a prefetched page never defers or evicts a page asked for);
//! - when the last fill of the batch ends the hold is dropped: the source lets the decode
//!   go and the bytes leave the budget. What stays is pages, evicted one by one like any.
//!
//! An open reads the mip tail, whose levels come from the decode: the open keeps it
//! (charged) and hands it to [`fill_after_open`], which fills the texture's pages of those levels
//! from it at once in the same thread, in memory that is free (nothing is evicted for
//! them), and then releases it, so that a PNG opened in a budget with room is decoded
//! once. A decode the budget cannot take (a budget smaller than the image) is made all
//! the same and counted (`Stats::whole_decodes_over_budget`): the texture is served, and
//! the transient memory is bounded by `SizeLimits`.

use super::decode_hold::{DecodeHold, DECODE_BUDGET_SHARE};
use super::engine::Engine;
use super::fill::TileJob;
use super::host_state::{Deferral, HostState};
use crate::ids::{PageId, TextureId};
use crate::memory::TileSlot;
use crate::sources::ImageSource;
use std::collections::HashMap;
use std::sync::Arc;

/// Pages filled from a whole decode without being asked for take at most this share of
/// the budget per batch (1 / N).
pub(crate) const PREFETCH_BUDGET_SHARE: u64 = 4;

/// A texture whose whole decode a batch uses.
struct DecodeUse {
    texture: TextureId,
    generation: u32,
    source: Arc<dyn ImageSource>,
    bytes: u64,
    /// Whether pages of its levels were left out of the batch for want of room: the
    /// decode will be needed again, so it is spilled when released.
    pages_left: bool,
}

/// What a batch does with whole decodes (see the module docs).
#[derive(Default)]
pub(crate) struct DecodePlan {
    uses: Vec<DecodeUse>,
    /// The prefetched pages, marked in flight: filled if memory allows, else dropped
    /// (their marks removed).
    pub prefetch: Vec<TileJob>,
}

impl DecodePlan {
    /// Plan a batch filling `tiles` (marked in flight): the textures with pages at
    /// whole-decode levels, and at most `max_prefetch` prefetched pages in all.
    ///
    /// The decodes a batch holds at once are bounded: past a [`DECODE_BUDGET_SHARE`]th
    /// of the budget (decodes charged already included; the batch's first decode always
    /// goes), a texture's jobs at those levels are taken out of `tiles` and deferred to
    /// the next launch (dropped in interactive mode), so that the budget keeps room for
    /// the pages.
    pub fn new(
        engine: &Engine,
        host: &mut HostState,
        tiles: &mut Vec<TileJob>,
        launch: Option<u32>,
        max_prefetch: usize,
    ) -> DecodePlan {
        let mut plan = DecodePlan::default();
        // The first job, decode bytes and levels of each texture with pages asked at
        // whole-decode levels.
        let mut wanted: Vec<(TileJob, u64, std::ops::Range<u32>)> = Vec::new();
        for job in tiles.iter() {
            if wanted.iter().any(|(j, ..)| j.texture == job.texture) {
                continue;
            }
            let Some(record) = host.resources.get(job.texture) else {
                continue;
            };
            let Some((levels, whole)) = record.layout.as_ref().and_then(|l| l.whole_decode_pages())
            else {
                continue;
            };
            if levels.contains(&job.level) && record.generation == job.generation {
                wanted.push((*job, whole.bytes, levels));
            }
        }
        let budget = host.residency.budget_bytes();
        let cap = budget / DECODE_BUDGET_SHARE;
        let mut prefetch_left = budget / PREFETCH_BUDGET_SHARE;
        let mut held = host.residency.decode_bytes();
        let mut deferred = Vec::new();
        for (job, bytes, levels) in wanted {
            if !plan.uses.is_empty() && held + bytes > cap {
                deferred.push((job.texture, levels));
                continue;
            }
            held += bytes;
            let source = host.resources.get(job.texture).map(|r| r.source.clone());
            let Some(source) = source else { continue };
            let room = (max_prefetch - plan.prefetch.len())
                .min((prefetch_left / u64::from(job.tile_bytes.max(1))) as usize);
            let (pages, pages_left) = prefetch_pages(engine, host, &job, room);
            prefetch_left -= pages.len() as u64 * u64::from(job.tile_bytes);
            plan.prefetch.extend(pages);
            plan.uses.push(DecodeUse {
                texture: job.texture,
                generation: job.generation,
                source,
                bytes,
                pages_left,
            });
        }
        if !deferred.is_empty() {
            let interactive = engine.options.mode == crate::options::StreamingMode::Interactive;
            tiles.retain(|j| {
                let later = deferred
                    .iter()
                    .any(|(t, levels)| *t == j.texture && levels.contains(&j.level));
                if later {
                    host.in_flight.remove(&j.page);
                    if interactive {
                        host.counters.requests_dropped += 1;
                    } else {
                        host.defer(j.page, Deferral::NoMemory);
                    }
                }
                !later
            });
        }
        for job in &mut plan.prefetch {
            job.launch = launch;
        }
        plan
    }

    /// Bytes the batch must charge.
    pub fn bytes_to_charge(&self) -> u64 {
        self.uses.iter().map(|u| u.bytes).sum()
    }

    /// Charge the decodes (once room has been made) and make the holds, by texture.
    pub fn charge(
        self,
        engine: &Engine,
        host: &mut HostState,
    ) -> HashMap<TextureId, Arc<DecodeHold>> {
        let mut holds = HashMap::with_capacity(self.uses.len());
        for u in self.uses {
            let mut hold = charged_hold(engine, host, (u.texture, u.generation), u.source, u.bytes);
            if u.pages_left {
                hold = hold.spilling(engine.spills_enabled());
            }
            holds.insert(u.texture, Arc::new(hold));
        }
        holds
    }
}

/// A hold of a new decode of `source` (`bytes`) for `texture` at `generation`: the decode
/// counted (spilled when released if it is the texture's second: `Engine::count_decode`)
/// and charged ([`charge`]).
pub(crate) fn charged_hold(
    engine: &Engine,
    host: &mut HostState,
    (texture, generation): (TextureId, u32),
    source: Arc<dyn ImageSource>,
    bytes: u64,
) -> DecodeHold {
    let spill = engine.count_decode(host, texture);
    let charged = charge(engine, host, &*source, bytes);
    let released = engine.decode_bytes_released.clone();
    DecodeHold::new((texture, generation), source, (bytes, charged), released).spilling(spill)
}

/// Charge a new decode of `source` (`bytes`) to the budget, evicting staged tiles no
/// reader can see if need be. The bytes charged: 0 if the budget could not take them
/// (the decode is made all the same, counted; warned once per source name).
fn charge(engine: &Engine, host: &mut HostState, source: &dyn ImageSource, bytes: u64) -> u64 {
    if host.residency.reserve_decode(&engine.epochs, bytes) {
        return bytes;
    }
    host.counters.whole_decodes_over_budget += 1;
    if host.counters.whole_decodes_over_budget == 1 {
        tracing::warn!(
            "{}: decoding the whole image ({bytes} bytes) beyond the texture budget's free \
             room ({} of {} bytes held); later ones are counted in \
             Stats::whole_decodes_over_budget",
            source.name(),
            host.residency.allocated_bytes(),
            host.residency.budget_bytes()
        );
    }
    0
}

/// The pages of `job`'s texture at its whole-decode levels that are neither resident,
/// staged nor in flight (nor `job`'s own), coarse levels first, at most `room` pages:
/// marked in flight and returned as jobs like `job`; and whether such pages were left
/// out for want of room.
pub(crate) fn prefetch_pages(
    engine: &Engine,
    host: &mut HostState,
    job: &TileJob,
    room: usize,
) -> (Vec<TileJob>, bool) {
    let mut jobs = Vec::new();
    let mut left = false;
    let record = host.resources.get(job.texture);
    let (Some(layout), Some(start)) = (
        record.and_then(|r| r.layout.as_ref()),
        record.and_then(|r| r.start_page),
    ) else {
        return (jobs, left);
    };
    let Some((levels, _)) = layout.whole_decode_pages() else {
        return (jobs, left);
    };
    'levels: for level in levels.rev() {
        let l = &layout.levels[level as usize];
        for tile_y in 0..l.tiles_y {
            for tile_x in 0..l.tiles_x {
                let page = PageId(start + layout.tile_page_offset(level, tile_x, tile_y));
                if host.in_flight.contains(&page)
                    || engine.pages.is_resident(page.0)
                    || host.residency.is_staged(page)
                {
                    continue;
                }
                if jobs.len() >= room {
                    left = true;
                    break 'levels;
                }
                jobs.push(TileJob {
                    page,
                    level,
                    tile_x,
                    tile_y,
                    ..*job
                });
            }
        }
    }
    for j in &jobs {
        host.in_flight.insert(j.page);
    }
    (jobs, left)
}

/// After an open whose mip tail came from a whole decode that it kept (`kept`, from
/// `open_fill::init_texture`): fill the texture's pages of those levels from that decode
/// now, in this thread, in memory that is free or held by staged tiles no reader can see
/// (nothing is evicted for them), coarse levels first, at most a
/// [`PREFETCH_BUDGET_SHARE`]th of the budget (and, in interactive mode,
/// `max_requests_per_launch` pages); then release the decode. Published with
/// the texture (multi-pass: at the next launch; blocking: by the caller).
pub(crate) fn fill_after_open(engine: &Engine, kept: Option<DecodeHold>) {
    let Some(hold) = kept else {
        return;
    };
    let mut host = engine.host.lock();
    let record = host.resources.get(hold.texture);
    let (Some(layout), true) = (
        record.and_then(|r| r.layout.as_ref()),
        host.is_current(hold.texture, hold.generation),
    ) else {
        return;
    };
    let tile_bytes = layout.tile_bytes() as u32;
    let model = TileJob {
        page: PageId(0),
        texture: hold.texture,
        generation: hold.generation,
        level: 0,
        tile_x: 0,
        tile_y: 0,
        tile_bytes,
        launch: None,
    };
    let mut room = (host.residency.budget_bytes()
        / PREFETCH_BUDGET_SHARE
        / u64::from(tile_bytes.max(1))) as usize;
    if engine.options.mode == crate::options::StreamingMode::Interactive {
        // No burst of publications beyond what one launch may ask for.
        room = room.min(engine.options.max_requests_per_launch);
    }
    let (pages, left) = prefetch_pages(engine, &mut host, &model, room);
    let all_filled = fill_here(engine, &mut host, pages);
    let hold = if left || !all_filled {
        // Pages the budget had no room for will need the decode again: spill it.
        hold.spilling(engine.spills_enabled())
    } else {
        hold
    };
    drop(hold);
    engine.settle_decodes(&mut host);
}

/// Fill prefetched `pages` (marked in flight) in this thread, the lock released while
/// they are read: those that get a slot ([`take_slots`]). A "not yet" is dropped, since
/// nobody serves a prefetched page's deferral. Whether every page got a slot.
pub(crate) fn fill_here(
    engine: &Engine,
    host: &mut parking_lot::MutexGuard<'_, HostState>,
    pages: Vec<TileJob>,
) -> bool {
    let asked = pages.len();
    let ticket = super::ticket::Ticket::new(pages.len());
    let tasks: Vec<_> = take_slots(engine, host, pages)
        .into_iter()
        .filter_map(|(job, slot)| super::fill::prepare_tile(host, job, slot, ticket.task()))
        .collect();
    let filled: Vec<PageId> = tasks.iter().map(|t| t.page()).collect();
    parking_lot::MutexGuard::unlocked(host, || {
        for task in tasks {
            task.run(engine);
        }
    });
    let all = filled.len() == asked;
    for page in filled {
        host.deferred.remove(&page);
    }
    all
}

/// Slots for prefetched `pages` (marked in flight), each of free memory or of a staged
/// tile no reader can see; from the first that finds none, the rest are dropped (their
/// marks removed). Counted as prefetched.
pub(crate) fn take_slots(
    engine: &Engine,
    host: &mut HostState,
    pages: Vec<TileJob>,
) -> Vec<(TileJob, TileSlot)> {
    let mut taken = Vec::with_capacity(pages.len());
    let mut pages = pages.into_iter();
    for p in pages.by_ref() {
        let Some(slot) = host
            .residency
            .allocate(&engine.epochs, p.tile_bytes as usize)
        else {
            host.in_flight.remove(&p.page);
            break;
        };
        host.counters.pages_prefetched += 1;
        taken.push((p, slot));
    }
    for p in pages {
        host.in_flight.remove(&p.page);
    }
    taken
}
