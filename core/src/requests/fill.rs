//! Fill tasks, run on the worker pool: open a texture (sampler, base colour, mip tail) or
//! read one tile. Each ends in a result under the host lock: published, deferred ("not
//! yet", no memory), or the texture marked failed. Panics in sources are contained.
//!
//! Every task carries the texture generation it was started for. If the texture's
//! contents were dropped meanwhile (invalidate, replace, unload), the task publishes
//! nothing, gives its memory back and leaves the in-flight markers alone (they belong to
//! fills of the new generation).

use super::decode_hold::{hold_open_decode, DecodeHold, ReleaseUnlessKept};
use super::engine::Engine;
use super::host_state::{Deferral, HostState, Pending};
use super::ticket::TaskGuard;
use crate::error::Error;
use crate::ids::{PageId, TextureId};
use crate::memory::constant_tiles::{constant_texel, fill_constant, ConstantKey};
use crate::memory::{RawBox, SubTiles, TileBuffer, TileShape, TileSlot};
use crate::options::StreamingMode;
use crate::paging::{encode_base_color, NO_BASE_COLOR};
use crate::resources::TextureState;
use crate::sources::{tail_levels, ImageSource, Readiness, SourceError};
use crate::textures::{DuplicateKey, TextureLayout, TextureSampler, TileRegion};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

/// One tile to read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileJob {
    pub page: PageId,
    pub texture: TextureId,
    pub generation: u32,
    pub level: u32,
    pub tile_x: u32,
    pub tile_y: u32,
    /// Bytes of the texture's tiles: the size of the slot the fill needs.
    pub tile_bytes: u32,
    /// The launch that requested it (`None`: a blocking fill, never dropped).
    pub launch: Option<u32>,
}

/// A tile read ready to run: everything it needs, taken under the lock.
pub(crate) struct TileTask {
    job: TileJob,
    source: Arc<dyn ImageSource>,
    region: TileRegion,
    row_bytes: usize,
    full_tile: bool,
    texel_bytes: usize,
    tile: (u32, u32),
    /// Publish the page before reading it, to be filled file tile by file tile, if the
    /// file's tiles are smaller than a page (a blocking fill on the CPU backend).
    by_file_tile: bool,
    /// The slot filled: its buffer is made (if new) on the fill thread.
    buffer: TileSlot,
    guard: Option<TaskGuard>,
}

/// Gather what a tile read needs. `None` (buffer returned) if the texture went away or its
/// contents were dropped since the job was routed.
pub(crate) fn prepare_tile(
    host: &mut HostState,
    job: TileJob,
    buffer: TileSlot,
    guard: TaskGuard,
) -> Option<TileTask> {
    if !host.is_current(job.texture, job.generation) {
        // The buffer was never visible. The page's in-flight marker was dropped with the
        // contents (it may be a newer fill's now).
        host.residency.cancel_slot(buffer);
        return None;
    }
    let record = host.resources.get(job.texture);
    let layout = record.and_then(|r| r.layout.as_ref());
    let (Some(record), Some(layout)) = (record, layout) else {
        host.residency.cancel_slot(buffer);
        host.in_flight.remove(&job.page);
        return None;
    };
    let region = layout.tile_region(job.level, job.tile_x, job.tile_y);
    let texel_bytes = layout.format.texel_bytes();
    host.queued_fills += 1;
    Some(TileTask {
        job,
        source: record.source.clone(),
        region,
        row_bytes: layout.tile_width as usize * texel_bytes,
        full_tile: region.width == layout.tile_width && region.height == layout.tile_height,
        texel_bytes,
        tile: (layout.tile_width, layout.tile_height),
        by_file_tile: false,
        buffer,
        guard: Some(guard),
    })
}

impl TileTask {
    /// The same task, publishing the page before reading it when the file's tiles are
    /// smaller than a page (see `requests::file_tiles`).
    pub(crate) fn by_file_tile(self, yes: bool) -> TileTask {
        TileTask {
            by_file_tile: yes,
            ..self
        }
    }

    /// The page the task fills.
    pub(crate) fn page(&self) -> PageId {
        self.job.page
    }

    /// The texture whose page the task fills.
    pub(crate) fn texture(&self) -> TextureId {
        self.job.texture
    }

    /// Take the task's ticket guard, for a caller that completes the ticket itself after
    /// the task ran (and after it let go of the engine).
    pub(crate) fn take_guard(&mut self) -> Option<TaskGuard> {
        self.guard.take()
    }

    /// Read the tile and record the outcome (a blocking fill, on the caller's thread).
    pub(crate) fn run(self, engine: &Engine) {
        self.run_within(engine, false);
    }

    /// [`run`](Self::run) on a fill thread: the read within the fill pool's CPU-time limit
    /// ([`crate::LoaderOptions::fill_cpu_cores`]); a task dropped unread does not wait.
    pub(crate) fn run_on_fill_thread(self, engine: &Engine) {
        self.run_within(engine, true);
    }

    fn run_within(mut self, engine: &Engine, limited: bool) {
        // The ticket completes only once the task has let go of everything, the source
        // included (its Drop may be what the caller waits for).
        let guard = self.guard.take();
        if let Some(task) = self.take_up(engine) {
            if limited {
                engine
                    .workers
                    .within_limit(|| task.read_and_publish(engine));
            } else {
                task.read_and_publish(engine);
            }
        }
        drop(guard);
    }

    /// A fill thread takes the task up: `None` (the task dropped unread, its buffer and
    /// page given back, and counted) if it was cancelled, or if in interactive mode no
    /// launch of the last `max_fill_age` asked for its page (the view has moved on; a page
    /// needed again is requested again). A page every frame still asks for is read however
    /// long the queue took to reach it.
    fn take_up(self, engine: &Engine) -> Option<TileTask> {
        let Some(launch) = self.job.launch else {
            return Some(self); // a blocking fill: never dropped
        };
        let mut host = engine.host.lock();
        let cancelled = host.cancel_through != 0 && launch <= host.cancel_through;
        let stale = engine.options.mode == StreamingMode::Interactive && {
            let wanted = host.queued_wanted.remove(&self.job.page).unwrap_or(launch);
            host.launch_num.wrapping_sub(wanted) >= engine.options.max_fill_age
        };
        if !(cancelled || stale) {
            return Some(self);
        }
        host.queued_fills = host.queued_fills.saturating_sub(1);
        host.residency.cancel_slot(self.buffer);
        host.in_flight.remove(&self.job.page);
        host.counters.fills_dropped_stale += 1;
        None
    }

    fn read_and_publish(self, engine: &Engine) {
        let TileTask {
            guard: _,
            source,
            job,
            region,
            row_bytes,
            full_tile,
            texel_bytes,
            tile,
            by_file_tile,
            buffer,
        } = self;
        let start = Instant::now();
        let mut buffer = buffer.into_buffer();
        // Read now, or leave the file tiles to the lookups that need them.
        let cut = if by_file_tile {
            contain(|| Ok(source.file_tile(region.level)))
                .ok()
                .flatten()
                .and_then(|file_tile| SubTiles::of(tile, file_tile))
        } else {
            None
        };
        buffer.set_sub_tiles(cut, job.generation);
        let dest = buffer.as_mut_slice();
        if !full_tile {
            // Edge tiles: texels past the image are never sampled; keep them defined.
            dest.fill(0);
        }
        let outcome = match cut {
            Some(_) => Ok(Readiness::Ready),
            None => contain(|| source.read_tile(region, dest, row_bytes)),
        };
        let constant = match (&outcome, cut) {
            (Ok(Readiness::Ready), None)
                if engine.coalesces_constant_tiles() && source.tiles_coalescable() =>
            {
                let shape = TileShape {
                    width: region.width as usize,
                    height: region.height as usize,
                    tile_width: tile.0 as usize,
                    tile_height: tile.1 as usize,
                    texel_bytes,
                };
                constant_tile(&mut buffer, shape)
            }
            _ => None,
        };
        let mut host = engine.host.lock();
        host.queued_fills = host.queued_fills.saturating_sub(1);
        host.counters.fill_seconds += start.elapsed().as_secs_f64();
        if !host.is_current(job.texture, job.generation) {
            // Read from contents that were dropped meanwhile: publish nothing.
            host.residency.cancel(buffer);
            host.counters.read_errors += outcome.is_err() as u64;
            return;
        }
        let failed = matches!(
            host.resources.get(job.texture).map(|r| &r.state),
            Some(TextureState::Failed(_))
        );
        match outcome {
            Ok(Readiness::Ready) if !failed => {
                host.counters.tiles_filled += 1;
                if cut.is_some() {
                    host.counters.tiles_published_unread += 1;
                } else {
                    host.counters.bytes_read +=
                        (region.width as usize * region.height as usize * texel_bytes) as u64;
                }
                match constant {
                    Some(key) => {
                        host.residency.filled_constant(job.page, buffer, key);
                    }
                    None => host.residency.filled(job.page, buffer),
                }
                host.pending.push(Pending::Tile(job.page));
            }
            Ok(Readiness::Ready) => {
                host.residency.cancel(buffer);
                host.in_flight.remove(&job.page);
            }
            Ok(Readiness::NotYet) => {
                host.residency.cancel(buffer);
                host.in_flight.remove(&job.page);
                host.defer(job.page, Deferral::NotYet);
            }
            Err(e) => {
                host.residency.cancel(buffer);
                host.in_flight.remove(&job.page);
                host.counters.read_errors += 1;
                let msg = format!(
                    "reading level {} tile ({}, {}): {e}",
                    region.level, job.tile_x, job.tile_y
                );
                host.fail_texture(&engine.layout, job.texture, msg);
            }
        }
    }
}

/// If the tile just read is constant, its key, with the value written over the whole tile
/// (so its buffer can serve any page of that value: `memory::constant_tiles`). Tiles are
/// read with rows of `tile_width` texels, the shape `constant_texel` reads.
fn constant_tile(buffer: &mut TileBuffer, shape: TileShape) -> Option<ConstantKey> {
    let key = constant_texel(buffer.as_slice(), shape)?;
    if shape.width < shape.tile_width || shape.height < shape.tile_height {
        fill_constant(buffer.as_mut_slice(), &key);
    }
    Some(key)
}

/// Open a texture, read its mip tail and base colour, and publish its sampler — if the
/// texture is still at `generation`. With duplicate sharing (`duplicates`), a texture
/// whose source names its file reads its tail before reserving anything, so that a
/// texture it duplicates can be found first: it then reserves no page range of its own.
///
/// Returns the whole decode its tail was read from, kept and charged to the budget, if
/// the texture has pages that decode also fills and the budget takes it: for
/// `whole_decodes::fill_after_open`. Otherwise the decode is released here.
pub(crate) fn init_texture(
    engine: &Engine,
    texture: TextureId,
    generation: u32,
) -> Option<DecodeHold> {
    let mut kept = None;
    open_texture(engine, (texture, generation), &mut kept);
    kept
}

/// [`init_texture`], the kept decode (if any) put in `kept`.
fn open_texture(
    engine: &Engine,
    (texture, generation): (TextureId, u32),
    kept: &mut Option<DecodeHold>,
) {
    let start = Instant::now();
    let (source, desc) = {
        let host = engine.host.lock();
        match host.resources.get(texture) {
            Some(r) if r.generation == generation => (r.source.clone(), r.desc),
            _ => return,
        }
    };
    let opened = contain(|| source.open()).map_err(|e| format!("opening: {e}"));
    let layout = opened.and_then(|info| {
        let tile = engine.page_tile(&*source, info.format);
        TextureLayout::with_tile(info.width, info.height, info.num_levels, info.format, tile)
            .map(|layout| TextureLayout {
                held_bytes: source.held_bytes(),
                whole_decode: contain(|| Ok(source.whole_decode())).unwrap_or(None),
                ..layout
            })
            .map_err(|e| e.to_string())
    });
    let layout = match layout {
        Ok(l) => l,
        Err(msg) => {
            let mut host = engine.host.lock();
            if host.is_current(texture, generation) {
                host.fail_texture(&engine.layout, texture, msg);
            }
            return;
        }
    };

    // Reading the mip tail of such a texture decodes the whole image: kept for the fills
    // of its pages if the budget takes it (below), released otherwise.
    let mut decode = ReleaseUnlessKept {
        source: &source,
        armed: layout.whole_decode.is_some(),
    };

    let identity = if engine.shares_duplicate_textures() {
        source.content_identity()
    } else {
        None
    };
    let (tail, owner, start_page) = match identity {
        None => {
            let Some(start_page) = reserve(
                engine,
                &mut engine.host.lock(),
                (texture, generation),
                &source,
                &layout,
                true,
            ) else {
                return;
            };
            let tail = read_tail(&source, &layout);
            if !tail.ready() {
                let mut host = engine.host.lock();
                host.residency.release_tail(layout.non_evictable_bytes());
                return tail_not_read(engine, &mut host, texture, generation, tail);
            }
            (tail, None, start_page)
        }
        Some(identity) => {
            let tail = read_tail(&source, &layout);
            if !tail.ready() {
                let mut host = engine.host.lock();
                return tail_not_read(engine, &mut host, texture, generation, tail);
            }
            let key = DuplicateKey::new(&layout, &tail.bytes, tail.base_color());
            // Candidates are looked for, and the range reserved when there are none, under
            // one lock: of two copies opening at once, the second sees the first.
            let mut host = engine.host.lock();
            let candidates = host.duplicate_candidates(texture, &key);
            let mut owner = None;
            if !candidates.is_empty() {
                drop(host);
                owner = engine.confirm_duplicate(&identity, candidates);
                host = engine.host.lock();
                owner = owner.filter(|o| host.owns_tiles(o, &key));
            }
            let own_range = owner.is_none();
            let Some(own_start) = reserve(
                engine,
                &mut host,
                (texture, generation),
                &source,
                &layout,
                own_range,
            ) else {
                return;
            };
            let start_page = owner.map_or(own_start, |o| o.start_page);
            if own_range {
                host.register_owner(texture, key);
            }
            drop(host);
            (tail, owner, start_page)
        }
    };

    let mut host = engine.host.lock();
    host.counters.fill_seconds += start.elapsed().as_secs_f64();
    if !host.is_current(texture, generation) || !host.is_unopened(texture) {
        // Dropped while we read (nothing of this was published), or another open of the
        // same contents ended first (a blocking lookup retrying after a deferral can
        // overlap a fill thread's open): the first one's sampler and tail stand.
        host.residency.release_tail(layout.non_evictable_bytes());
        return;
    }
    if let Some(o) = owner {
        // The owner's contents were dropped since the range was chosen: open again, on
        // its own or sharing.
        if !host.is_current(o.texture, o.generation) {
            host.residency.release_tail(layout.non_evictable_bytes());
            return host.defer_init(&engine.layout, texture, Deferral::NotYet);
        }
    }
    let base = tail.base_color();
    let tail_bytes = layout.mip_tail_bytes as usize;
    // `AddressMode::FromFile` takes the file's wrap modes now; the sampler record (and
    // the CUDA texture object, made from it at publication) holds the resolved modes.
    let file_address = contain(|| Ok(source.address_modes())).unwrap_or(None);
    let mut sampler = TextureSampler::new(&layout, &desc.resolved(file_address), start_page);
    let tail = RawBox::new(tail.bytes);
    if tail_bytes > 0 {
        sampler.mip_tail_data = tail.as_ptr() as *const u8 as u64;
    }
    let sampler = RawBox::new(Box::new(sampler));
    let level0 = layout.level0_bytes();
    let Some(record) = host.resources.get_mut(texture) else {
        // Unreachable: a current texture exists.
        host.residency.release_tail(layout.non_evictable_bytes());
        return;
    };
    record.sampler = Some(sampler);
    record.mip_tail = Some(tail);
    record.state = TextureState::Ready;
    record.tiles_of = owner.map(|o| o.texture);
    if owner.is_some() {
        host.counters.textures_sharing_tiles += 1;
    }
    host.residency.publish_tail(layout.non_evictable_bytes());
    host.counters.mip_tails_filled += 1;
    host.counters.bytes_read += tail_bytes as u64;
    host.counters.virtual_bytes += level0;
    host.pending.push(Pending::Texture {
        texture,
        generation,
        base_color: base,
    });
    // A decode of levels that also have pages: kept for their fills, or spilled.
    let hold = hold_open_decode(
        engine,
        &mut host,
        (texture, generation),
        &source,
        &layout,
        owner.is_none(),
    );
    drop(host);
    if let Some(hold) = hold {
        decode.armed = false;
        if hold.is_charged() {
            *kept = Some(hold);
        }
        // An uncharged hold is dropped here, the lock released: it spills the decode.
    }
}

/// A texture's mip tail and base colour as read from its source.
struct TailRead {
    bytes: Box<[u8]>,
    read: Result<Readiness, SourceError>,
    base: Result<u64, SourceError>,
}

impl TailRead {
    /// Whether the tail and base colour were read.
    fn ready(&self) -> bool {
        matches!(self.read, Ok(Readiness::Ready)) && self.base.is_ok()
    }

    /// The base-colour entry (of a tail that was read).
    fn base_color(&self) -> u64 {
        *self.base.as_ref().unwrap_or(&NO_BASE_COLOR)
    }
}

/// Read `layout`'s mip tail and the base colour (the source's, else the tail's 1×1 level).
fn read_tail(source: &Arc<dyn ImageSource>, layout: &TextureLayout) -> TailRead {
    let mut bytes = vec![0u8; layout.mip_tail_bytes as usize].into_boxed_slice();
    let levels = tail_levels(layout);
    let read = if levels.is_empty() {
        Ok(Readiness::Ready)
    } else {
        contain(|| source.read_mip_tail(&levels, &mut bytes))
    };
    let base = match &read {
        Ok(Readiness::Ready) => contain(|| source.read_base_color()).map(|c| match c {
            Some(c) => encode_base_color(c),
            None => base_color_from_tail(layout, &bytes),
        }),
        Ok(Readiness::NotYet) => Ok(NO_BASE_COLOR),
        Err(e) => Err(e.clone()),
    };
    TailRead { bytes, read, base }
}

/// The tail could not be read (a "not yet", or an error): defer the open, or fail the
/// texture — if it is still current and unopened. Nothing is reserved for it any more.
fn tail_not_read(
    engine: &Engine,
    host: &mut HostState,
    texture: TextureId,
    generation: u32,
    tail: TailRead,
) {
    if !host.is_current(texture, generation) || !host.is_unopened(texture) {
        return;
    }
    match (tail.read, tail.base) {
        (Ok(Readiness::NotYet), _) => host.defer_init(&engine.layout, texture, Deferral::NotYet),
        (Err(e), _) | (_, Err(e)) => {
            host.counters.read_errors += 1;
            let msg = format!("reading the mip tail: {e}");
            host.fail_texture(&engine.layout, texture, msg);
        }
        (Ok(Readiness::Ready), Ok(_)) => {}
    }
}

/// Reserve the texture's page range (if `own_range`) and its mip tail's bytes; the range's
/// first page (0 without one). The texture's range is kept while the layout fits in it (a
/// reopen after invalidation, or a replacement no larger); otherwise a new range is
/// allocated. `None` when the open ends here: its contents were dropped since the fill
/// started (nothing reserved), it is deferred for memory, or it failed (marked so).
fn reserve(
    engine: &Engine,
    host: &mut HostState,
    (texture, generation): (TextureId, u32),
    source: &Arc<dyn ImageSource>,
    layout: &TextureLayout,
    own_range: bool,
) -> Option<u32> {
    let record = host.resources.get(texture)?;
    // Another open of the same contents that ended first makes this one stale too.
    if record.generation != generation || !matches!(record.state, TextureState::Unopened) {
        return None;
    }
    let start = match record.start_page {
        // A texture sharing another's tiles needs no range (`duplicates`).
        _ if !own_range => 0,
        Some(p) if layout.num_pages <= record.range_pages => p,
        _ => match host.space.allocate_tiles(layout.num_pages, &source.name()) {
            Ok(p) => {
                host.resources.add_tile_range(texture, p, layout.num_pages);
                p
            }
            Err(e) => {
                host.fail_texture(&engine.layout, texture, e.to_string());
                return None;
            }
        },
    };
    if let Some(r) = host.resources.get_mut(texture) {
        r.layout = Some(layout.clone());
    }
    let bytes = layout.non_evictable_bytes();
    if host.residency.reserve_tail(bytes) {
        return Some(start);
    }
    let budget = host.residency.budget_bytes();
    // Retired mip tails (textures invalidated while a launch could still see them) are
    // freed once no reader can, and tails reserved by opens still reading are published or
    // released when they end (an open that went stale releases): a shortage they cause is
    // waited out, never a failure. Only the published tails are there for good.
    let needed = host.residency.published_tail_bytes() + bytes;
    if needed > budget {
        let msg = Error::BudgetTooSmall {
            budget_bytes: budget,
            needed_bytes: needed,
        }
        .to_string();
        host.fail_texture(&engine.layout, texture, msg);
        return None;
    }
    // Room can be made by evicting tiles: ask the next process_requests for it.
    host.wanted_bytes += bytes;
    host.defer_init(&engine.layout, texture, Deferral::NoMemory);
    None
}

/// The base colour: the 1×1 level if the chain reaches it (it is then in the tail).
fn base_color_from_tail(layout: &TextureLayout, tail: &[u8]) -> u64 {
    let last = layout.levels.last().expect("at least one level");
    if last.width != 1 || last.height != 1 || !layout.in_mip_tail(layout.num_levels() - 1) {
        return NO_BASE_COLOR;
    }
    let at = last.offset as usize;
    encode_base_color(
        layout
            .format
            .decode(&tail[at..at + layout.format.texel_bytes()]),
    )
}

/// Run source code, turning a panic into an error.
pub(crate) fn contain<T>(f: impl FnOnce() -> Result<T, SourceError>) -> Result<T, SourceError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let what = crate::error::panic_message(&*panic);
            Err(SourceError(format!("the source panicked: {what}")))
        }
    }
}
