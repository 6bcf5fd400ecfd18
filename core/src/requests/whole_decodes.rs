//! Pages filled from one decode of the whole image: a PNG or JPEG, which can only be
//! decoded whole, and the mip levels a file lacks, which are generated from the whole of
//! the level above them (`ImageSource::whole_decode`). The decode's memory stays inside
//! the texture budget:
//!
//! - a batch that fills a page of such levels makes one [`DecodeHold`] for the texture,
//!   charging the decode's bytes to the budget (room is made for them as for tiles);
//! - the batch fills the texture's other pages of those levels too, from the same decode
//!   — those neither resident, staged nor in flight, coarse levels first, at most a
//!   [`PREFETCH_BUDGET_SHARE`]th of the budget, and only where memory is free or can be
//!   had from stale tiles (a prefetched page never defers or evicts a page asked for);
//! - when the last fill of the batch ends the hold is dropped: the source lets the decode
//!   go and the bytes leave the budget. What stays is pages, evicted one by one like any.
//!
//! An open reads the mip tail, whose levels come from the decode: the hold it makes is
//! kept for the texture's first batch (`HostState::kept_decodes`), so that a PNG is
//! decoded once to open it and fill the pages its first launch asks for; a batch without
//! pages of that texture releases it. A decode the budget cannot take (a budget smaller
//! than the image) is made all the same and counted (`Stats::whole_decodes_over_budget`):
//! the texture is served, and the transient memory is bounded by `SizeLimits`.

use super::decode_hold::DecodeHold;
use super::engine::Engine;
use super::fill::TileJob;
use super::host_state::HostState;
use crate::ids::{PageId, TextureId};
use crate::sources::ImageSource;
use std::collections::HashMap;
use std::sync::Arc;

/// Pages filled from a whole decode without being asked for take at most this share of
/// the budget per texture and batch (1 / N).
pub(crate) const PREFETCH_BUDGET_SHARE: u64 = 4;

/// A texture whose whole decode a batch uses.
struct DecodeUse {
    texture: TextureId,
    generation: u32,
    source: Arc<dyn ImageSource>,
    bytes: u64,
    /// The hold its open made, already charged.
    kept: Option<DecodeHold>,
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
    /// whole-decode levels, and at most `max_prefetch` prefetched pages in all. Also
    /// returns the holds kept since an open whose texture has no such page in the batch:
    /// the caller drops them (they take no lock, but free the decode's memory).
    pub fn new(
        engine: &Engine,
        host: &mut HostState,
        tiles: &[TileJob],
        launch: Option<u32>,
        max_prefetch: usize,
    ) -> (DecodePlan, Vec<DecodeHold>) {
        let mut kept = std::mem::take(&mut host.kept_decodes);
        let mut plan = DecodePlan::default();
        for job in tiles {
            if plan.uses.iter().any(|u| u.texture == job.texture) {
                continue;
            }
            let Some(record) = host.resources.get(job.texture) else {
                continue;
            };
            let Some((levels, whole)) = record.layout.as_ref().and_then(|l| l.whole_decode_pages())
            else {
                continue;
            };
            let asked = tiles
                .iter()
                .any(|j| j.texture == job.texture && levels.contains(&j.level));
            if !asked || record.generation != job.generation {
                continue;
            }
            let source = record.source.clone();
            let room = max_prefetch - plan.prefetch.len();
            let pages = prefetch_pages(engine, host, job, room);
            plan.prefetch.extend(pages);
            plan.uses.push(DecodeUse {
                texture: job.texture,
                generation: job.generation,
                source,
                bytes: whole.bytes,
                kept: kept
                    .remove(&job.texture)
                    .filter(|h| h.generation == job.generation),
            });
        }
        for job in &mut plan.prefetch {
            job.launch = launch;
        }
        (plan, kept.into_values().collect())
    }

    /// Bytes the batch must charge: the decodes not kept since an open.
    pub fn bytes_to_charge(&self) -> u64 {
        self.uses
            .iter()
            .filter(|u| u.kept.is_none())
            .map(|u| u.bytes)
            .sum()
    }

    /// Charge the decodes not kept (once room has been made) and make the holds, by
    /// texture.
    pub fn charge(
        self,
        engine: &Engine,
        host: &mut HostState,
    ) -> HashMap<TextureId, Arc<DecodeHold>> {
        let mut holds = HashMap::with_capacity(self.uses.len());
        for u in self.uses {
            let hold = match u.kept {
                Some(hold) => hold,
                None => {
                    let charged = charge(engine, host, &*u.source, u.bytes);
                    DecodeHold::new(
                        (u.texture, u.generation),
                        u.source,
                        charged,
                        engine.decode_bytes_released.clone(),
                    )
                }
            };
            holds.insert(u.texture, Arc::new(hold));
        }
        holds
    }
}

/// Charge a new decode of `source` (`bytes`) to the budget, evicting staged tiles no
/// reader can see if need be, and count it. The bytes charged: 0 if the budget could not
/// take them (the decode is made all the same; warned once per source name).
pub(crate) fn charge(
    engine: &Engine,
    host: &mut HostState,
    source: &dyn ImageSource,
    bytes: u64,
) -> u64 {
    host.counters.whole_decodes += 1;
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
/// staged nor in flight (nor `job`'s own), coarse levels first, at most a
/// [`PREFETCH_BUDGET_SHARE`]th of the budget and `room` pages: marked in flight and
/// returned as jobs like `job`.
pub(crate) fn prefetch_pages(
    engine: &Engine,
    host: &mut HostState,
    job: &TileJob,
    room: usize,
) -> Vec<TileJob> {
    let mut out = Vec::new();
    let record = host.resources.get(job.texture);
    let (Some(layout), Some(start)) = (
        record.and_then(|r| r.layout.as_ref()),
        record.and_then(|r| r.start_page),
    ) else {
        return out;
    };
    let Some((levels, _)) = layout.whole_decode_pages() else {
        return out;
    };
    let cap = host.residency.budget_bytes() / PREFETCH_BUDGET_SHARE;
    let tile_bytes = job.tile_bytes;
    let max = room.min((cap / u64::from(tile_bytes.max(1))) as usize);
    let mut jobs = Vec::new();
    'levels: for level in levels.rev() {
        let l = &layout.levels[level as usize];
        for tile_y in 0..l.tiles_y {
            for tile_x in 0..l.tiles_x {
                if jobs.len() >= max {
                    break 'levels;
                }
                let page = PageId(start + layout.tile_page_offset(level, tile_x, tile_y));
                if host.in_flight.contains(&page)
                    || engine.pages.is_resident(page.0)
                    || host.residency.is_staged(page)
                {
                    continue;
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
    out.extend(jobs);
    out
}
