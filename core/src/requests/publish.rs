//! Publication: making what fills produced visible — through the backend first, then in
//! the host page table (entries and tile addresses before residence bits, so a sampler that
//! sees a bit sees the data). Launches publish at `launch_prepare`
//! ([`Engine::publish_pending`], then [`Engine::begin_launch`]); the blocking cache
//! publishes as soon as its fill is done.
//!
//! Each publication first forwards the withdrawals made since the last one (tile events
//! from [`crate::memory::Residency`], entry pages and textures from the lifecycle), so the
//! backend sees every change in order. See [`crate::backend`] for the protocol.

use super::engine::Engine;
use super::host_state::{HostState, Pending};
use crate::backend::{HostCopy, PublishError, TextureContents, Withdrawal};
use crate::error::Result;
use crate::ids::PageId;
use crate::paging::{PageMapping, NON_EVICTABLE};
use crate::resources::{Route, TextureState};
use crate::textures::{AddressMode, TextureDesc};
use std::sync::Arc;

/// A launch's hold on host memory: while it lives, nothing the launch could reach through
/// the host page table is reused. A backend whose launches read only device memory drops it
/// at once. Dropping it releases the hold.
#[derive(Debug)]
pub struct LaunchPin {
    engine: Arc<Engine>,
    epoch: u64,
    launch_num: u32,
    reject_threshold: u32,
}

impl LaunchPin {
    /// The launch's number (1 for the first).
    pub fn launch_num(&self) -> u32 {
        self.launch_num
    }

    /// The launch's request-rejection threshold (`RP × 2^32`; 0 when it rejects nothing;
    /// see [`crate::paging::rejection`]).
    pub fn reject_threshold(&self) -> u32 {
        self.reject_threshold
    }

    /// The engine it belongs to.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

impl Drop for LaunchPin {
    fn drop(&mut self) {
        self.engine.epochs.unpin(self.epoch);
    }
}

/// How many tiles one publication may make visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TileLimit {
    /// At most this many (the rest are counted as capped).
    Cap(usize),
    /// None: tiles wait for the next publication, uncounted.
    Hold,
}

/// What became of one pending publication.
enum Outcome {
    Published,
    /// Withdrawn since it was queued: nothing to do.
    Gone,
    /// The backend cannot take it yet: offered again at the next publication.
    Later(Pending),
}

impl Engine {
    /// Make what finished since the last publication visible, through the backend. Costs
    /// the number of changes, not the size of the page space. Returns how many
    /// publications were made; those the backend could not take yet stay pending.
    ///
    /// Errors: the backend's ([`PublishError::Fatal`]); what was not published stays
    /// pending.
    pub fn publish_pending(&self) -> Result<usize> {
        let mut host = self.host.lock();
        self.publish(&mut host, self.options.max_publications_per_launch)
    }

    /// As [`publish_pending`](Self::publish_pending), but every tile stays pending (not
    /// counted as capped): textures, entries and withdrawals are published now, tiles at
    /// the next [`publish_pending`](Self::publish_pending). For a GPU backend that
    /// publishes tiles while its launch's kernel runs, off the frame's path (see
    /// `docs/INTERACTIVE.md`, "Publishing while the kernel runs").
    ///
    /// Errors: as [`publish_pending`](Self::publish_pending).
    pub fn publish_pending_except_tiles(&self) -> Result<usize> {
        let mut host = self.host.lock();
        self.publish_within(&mut host, TileLimit::Hold)
    }

    /// Drop every tile fill queued by the launches so far when a fill thread takes it up,
    /// unread (fills already reading finish and are published as usual); later launches'
    /// fills are not affected. For a viewport that closes or jumps: pending work is
    /// cancelled, not waited for. Counted in `Stats::fills_dropped_stale`.
    pub fn cancel_queued_fills(&self) {
        let mut host = self.host.lock();
        host.cancel_through = host.launch_num;
    }

    /// Start a launch (after [`publish_pending`](Self::publish_pending)): hand back retired
    /// memory no reader can see, advance the launch counter and pin the epoch.
    pub fn begin_launch(self: &Arc<Self>) -> LaunchPin {
        let mut host = self.host.lock();
        host.residency.reclaim_retired(&self.epochs);
        host.launch_num = host.launch_num.wrapping_add(1);
        host.counters.launches += 1;
        let launch_num = host.launch_num;
        let epoch = self.epochs.pin();
        let reject_threshold = if self.options.rejects_requests() {
            self.gate.threshold()
        } else {
            0
        };
        LaunchPin {
            engine: self.clone(),
            epoch,
            launch_num,
            reject_threshold,
        }
    }

    /// Forward the withdrawals made since the last publication to the backend, in order.
    pub(crate) fn forward_withdrawals(&self, host: &mut HostState) -> Result<()> {
        for event in host.residency.take_events() {
            self.backend.withdraw(event.into())?;
        }
        for w in std::mem::take(&mut host.withdrawn) {
            self.backend.withdraw(w)?;
        }
        Ok(())
    }

    /// Make the pending publications visible, at most `tile_cap` tiles (the rest wait for
    /// the next publication, coarse pages first). Returns how many were published.
    pub(crate) fn publish(&self, host: &mut HostState, tile_cap: usize) -> Result<usize> {
        self.publish_within(host, TileLimit::Cap(tile_cap))
    }

    /// [`publish`](Self::publish) within `limit`.
    fn publish_within(&self, host: &mut HostState, limit: TileLimit) -> Result<usize> {
        let tile_cap = match limit {
            TileLimit::Cap(cap) => cap,
            TileLimit::Hold => 0,
        };
        self.forward_withdrawals(host)?;
        let mut published = 0;
        let mut tiles = 0usize;
        let mut later = Vec::new();
        let mut failure = None;
        // A texture the backend rejects queues its fallback: publish that too.
        let mut queue = std::mem::take(&mut host.pending);
        if limit != TileLimit::Hold && tile_cap < queue.len() {
            // Textures and entries first, then tiles by page: a texture's coarse levels
            // before its fine ones.
            queue.sort_by_key(|p| match p {
                Pending::Tile(page) => (1, page.0),
                _ => (0, 0),
            });
        }
        while !queue.is_empty() {
            // Textures sharing another's tiles after the rest: their owners, published
            // first in the same pass, let them through (`publish_texture`).
            let shares = |p: &Pending| match p {
                Pending::Texture { texture, .. } => host
                    .resources
                    .get(*texture)
                    .is_some_and(|r| r.tiles_of.is_some()),
                _ => false,
            };
            if queue.iter().any(shares) {
                // Stable: the rest keep their order, and so do the sharers.
                queue.sort_by_key(shares);
            }
            for p in queue {
                let is_tile = matches!(p, Pending::Tile(_));
                if failure.is_some() {
                    later.push(p);
                    continue;
                }
                if is_tile && tiles >= tile_cap {
                    host.counters.publications_capped += matches!(limit, TileLimit::Cap(_)) as u64;
                    later.push(p);
                    continue;
                }
                match self.publish_one(host, p) {
                    Ok(Outcome::Published) => {
                        published += 1;
                        tiles += is_tile as usize;
                    }
                    Ok(Outcome::Gone) => {}
                    Ok(Outcome::Later(p)) => {
                        host.counters.publications_deferred += 1;
                        later.push(p);
                    }
                    Err(e) => {
                        failure = Some(e);
                        later.push(p);
                    }
                }
            }
            queue = std::mem::take(&mut host.pending);
        }
        host.pending = later;
        let flushed = self.backend.end_publication();
        match failure {
            Some(e) => Err(e),
            None => flushed.map(|()| published),
        }
    }

    fn publish_one(&self, host: &mut HostState, p: Pending) -> Result<Outcome> {
        match p {
            Pending::Tile(page) => self.publish_tile(host, page),
            Pending::Texture { texture, .. } => self.publish_texture(host, p, texture),
            Pending::Entry { page, entry } => {
                self.backend.publish_entry(page, entry)?;
                self.push_entry(page, entry);
                host.in_flight.remove(&page);
                Ok(Outcome::Published)
            }
        }
    }

    fn publish_tile(&self, host: &mut HostState, page: PageId) -> Result<Outcome> {
        let Some(tile) = host.residency.publishing(page) else {
            return Ok(Outcome::Gone);
        };
        let accepted = match (tile.restored, tile.data) {
            (true, _) => self.backend.restore_tile(page).map(|()| HostCopy::Keep),
            (false, Some(data)) => self.backend.publish_tile(page, data),
            (false, None) => Err(PublishError::Rejected(
                "a filled tile without data (internal error)".into(),
            )),
        };
        match accepted {
            Ok(copy) => {
                host.residency.published(page, copy == HostCopy::Keep);
                self.pages.push_mapping(PageMapping {
                    page: page.0,
                    lru: 0,
                    entry: 0,
                });
                host.in_flight.remove(&page);
                Ok(Outcome::Published)
            }
            Err(PublishError::NotNow(why)) => {
                tracing::debug!(page = page.0, "tile publication deferred: {why}");
                Ok(Outcome::Later(Pending::Tile(page)))
            }
            Err(PublishError::Rejected(why)) => {
                // Withdraw the tile and fail its texture: it samples as its fallback.
                host.residency
                    .retire_range(&self.pages, &self.epochs, page.0..page.0 + 1);
                host.in_flight.remove(&page);
                if let Route::Tile { texture, .. } = host.resources.route(&self.layout, page) {
                    host.fail_texture(&self.layout, texture, why);
                }
                Ok(Outcome::Gone)
            }
            Err(PublishError::Fatal(e)) => Err(e),
        }
    }

    fn publish_texture(
        &self,
        host: &mut HostState,
        pending: Pending,
        texture: crate::ids::TextureId,
    ) -> Result<Outcome> {
        let Pending::Texture {
            generation,
            base_color,
            ..
        } = pending
        else {
            return Ok(Outcome::Gone);
        };
        let Some(record) = host.resources.get(texture) else {
            return Ok(Outcome::Gone);
        };
        let (Some(layout), Some(sampler), Some(tail)) =
            (&record.layout, &record.sampler, &record.mip_tail)
        else {
            return Ok(Outcome::Gone);
        };
        if record.generation != generation || record.state != TextureState::Ready {
            return Ok(Outcome::Gone);
        }
        // A sharer is published after its owner (a backend builds it over the owner's),
        // and fails with it.
        if let Some(owner) = record.tiles_of {
            if let Some(TextureState::Failed(e)) = host.resources.get(owner).map(|r| &r.state) {
                let why = format!(
                    "it shares the tiles of texture {}, which failed: {e}",
                    owner.0
                );
                host.fail_texture(&self.layout, texture, why);
                return Ok(Outcome::Gone);
            }
            if !self.pages.is_resident(self.layout.sampler_page(owner).0) {
                return Ok(Outcome::Later(pending));
            }
        }
        // The address modes as opened (`AddressMode::FromFile` resolved into the sampler).
        let desc = TextureDesc {
            address: [
                AddressMode::from_code(sampler.address_s),
                AddressMode::from_code(sampler.address_t),
            ],
            ..record.desc
        };
        let contents = TextureContents {
            texture,
            layout,
            desc: &desc,
            sampler,
            mip_tail: tail,
            texels_are_words: record.source.texels_are_words(),
            base_color,
            tiles_of: record.tiles_of,
        };
        match self.backend.publish_texture(&contents) {
            Ok(()) => {
                let sampler_entry = sampler.as_ptr() as u64;
                let tail_page = sampler.start_page;
                let sampler_page = self.layout.sampler_page(texture);
                let base_page = self.layout.base_color_page(texture);
                self.push_entry(sampler_page, sampler_entry);
                self.push_entry(base_page, base_color);
                self.push_entry(PageId(tail_page), 0);
                host.in_flight.remove(&sampler_page);
                host.in_flight.remove(&base_page);
                Ok(Outcome::Published)
            }
            Err(PublishError::NotNow(why)) => {
                tracing::debug!(texture = texture.0, "texture publication deferred: {why}");
                Ok(Outcome::Later(pending))
            }
            Err(PublishError::Rejected(why)) => {
                host.fail_texture(&self.layout, texture, why);
                Ok(Outcome::Gone)
            }
            Err(PublishError::Fatal(e)) => Err(e),
        }
    }

    /// Make a non-evictable page resident in the host page table with `entry` (entries
    /// are kept only for entry pages).
    fn push_entry(&self, page: PageId, entry: u64) {
        self.pages.push_mapping(PageMapping {
            page: page.0,
            lru: NON_EVICTABLE as u32,
            entry,
        });
    }

    /// Publish page-table entries at once, outside a launch (a UDIM grid, an unloaded
    /// texture's fallback): the backend hears of them now, after the withdrawals pending.
    pub(crate) fn publish_entries_now(
        &self,
        host: &mut HostState,
        entries: &[(PageId, u64)],
    ) -> Result<()> {
        self.forward_withdrawals(host)?;
        for &(page, entry) in entries {
            self.backend.publish_entry(page, entry)?;
            self.push_entry(page, entry);
        }
        Ok(())
    }

    /// Withdraw non-evictable pages at once (a texture's sampler, base colour and mip-tail
    /// pages when its contents are dropped): non-resident now, the backend told at the next
    /// publication.
    pub(crate) fn withdraw_entries(&self, host: &mut HostState, pages: &[PageId]) {
        for &page in pages {
            if self.pages.is_resident(page.0) {
                self.pages.invalidate(page.0);
                host.withdrawn.push(Withdrawal::Page(page));
            }
        }
    }
}
