//! Tile fills, run on the worker pool: read one tile (the texture's open is
//! [`super::open_fill`]). Each ends in a result under the host lock: published, deferred
//! ("not yet", no memory), or the texture marked failed. Panics in sources are contained
//! ([`contain`]).
//!
//! Every task carries the texture generation it was started for. If the texture's
//! contents were dropped meanwhile (invalidate, replace, unload), the task publishes
//! nothing, gives its memory back and leaves the in-flight markers alone (they belong to
//! fills of the new generation).

use super::engine::Engine;
use super::host_state::{Deferral, HostState, Pending};
use super::ticket::TaskGuard;
use crate::ids::{PageId, TextureId};
use crate::memory::constant_tiles::{constant_texel, fill_constant, ConstantKey};
use crate::memory::{SubTiles, TileBuffer, TileShape, TileSlot};
use crate::options::StreamingMode;
use crate::resources::TextureState;
use crate::sources::{ImageSource, Readiness, SourceError};
use crate::textures::TileRegion;
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
    /// The page holds the region's 4×4 blocks as stored (`TextureLayout::blocks`).
    blocks: bool,
    /// Bytes the region's texels (or blocks) take: what the read counts.
    region_bytes: u64,
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
        row_bytes: layout.row_bytes(layout.tile_width),
        full_tile: region.width == layout.tile_width && region.height == layout.tile_height,
        texel_bytes,
        blocks: layout.blocks.is_some(),
        region_bytes: layout.region_bytes(region.width, region.height),
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
            blocks,
            region_bytes,
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
            None if blocks => contain(|| source.read_blocks(region, dest, row_bytes)),
            None => contain(|| source.read_tile(region, dest, row_bytes)),
        };
        let constant = match (&outcome, cut) {
            (Ok(Readiness::Ready), None)
                if !blocks && engine.coalesces_constant_tiles() && source.tiles_coalescable() =>
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
                    host.counters.bytes_read += region_bytes;
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
