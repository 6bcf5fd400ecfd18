//! The open fill, run on the worker pool: open a texture's source, lay the texture out,
//! read its mip tail and base colour, reserve its page range (or find the texture it
//! duplicates), and publish its sampler. It ends under the host lock: published, deferred
//! ("not yet", no memory for the tail), or the texture marked failed. Like every fill, it
//! carries the texture generation it was started for and publishes nothing if the
//! texture's contents were dropped meanwhile.

use super::decode_hold::{hold_open_decode, DecodeHold, ReleaseUnlessKept};
use super::engine::Engine;
use super::fill::contain;
use super::host_state::{Deferral, HostState, Pending};
use crate::error::Error;
use crate::ids::TextureId;
use crate::memory::RawBox;
use crate::paging::{encode_base_color, NO_BASE_COLOR};
use crate::resources::TextureState;
use crate::sources::{read_tail_blocks, tail_levels, ImageSource, Readiness, SourceError};
use crate::textures::{DuplicateKey, TextureLayout, TextureSampler};
use std::sync::Arc;
use std::time::Instant;

/// Open a texture, read its mip tail and base colour, and publish its sampler — if the
/// texture is still at `generation`. The tail's bytes are reserved before the tail is read,
/// so that an open deferred for memory reads nothing it would read again; its page range
/// after, so that with duplicate sharing (`duplicates`) a texture whose source names its
/// file can find a texture it duplicates first: it then reserves no page range of its own.
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
        contain(|| {
            engine
                .lay_out(&*source, &info)
                .map_err(|e| e.to_string().into())
        })
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
    // Room for the tail first: an open deferred for memory ends before its tail is read
    // (which may decode the whole image), and reads it once, when it is retried.
    if !reserve_tail_bytes(
        engine,
        &mut engine.host.lock(),
        (texture, generation),
        &layout,
    ) {
        return;
    }
    let tail = read_tail(&source, &layout);
    if !tail.ready() {
        let mut host = engine.host.lock();
        host.residency.release_tail(layout.non_evictable_bytes());
        return tail_not_read(engine, &mut host, texture, generation, tail);
    }
    let (owner, start_page) = match identity {
        None => {
            let Some(start_page) = reserve_range(
                engine,
                &mut engine.host.lock(),
                (texture, generation),
                &source,
                &layout,
                true,
            ) else {
                return;
            };
            (None, start_page)
        }
        Some(identity) => {
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
            let Some(own_start) = reserve_range(
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
            (owner, start_page)
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
    } else if layout.blocks.is_some() {
        contain(|| read_tail_blocks(&**source, layout, &mut bytes))
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

/// Reserve the texture's mip-tail bytes (its non-evictable bytes), if it is still at
/// `generation` and unopened. False when the open ends here: its contents were dropped
/// since the fill started (nothing reserved), it is deferred for memory, or it failed
/// (marked so).
fn reserve_tail_bytes(
    engine: &Engine,
    host: &mut HostState,
    (texture, generation): (TextureId, u32),
    layout: &TextureLayout,
) -> bool {
    // Another open of the same contents that ended first makes this one stale too.
    if !host.is_current(texture, generation) || !host.is_unopened(texture) {
        return false;
    }
    let bytes = layout.non_evictable_bytes();
    if host.residency.reserve_tail(bytes) {
        return true;
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
        return false;
    }
    // Room can be made by evicting tiles: ask the next process_requests for it.
    host.wanted_bytes += bytes;
    host.defer_init(&engine.layout, texture, Deferral::NoMemory);
    false
}

/// Reserve the texture's page range (if `own_range`), its tail's bytes reserved
/// ([`reserve_tail_bytes`]); the range's first page (0 without one). The texture's range is
/// kept while the layout fits in it (a reopen after invalidation, or a replacement no
/// larger); otherwise a new range is allocated. `None` when the open ends here, its tail's
/// bytes released: its contents were dropped since the bytes were reserved, or no range
/// could be had (the texture marked failed).
fn reserve_range(
    engine: &Engine,
    host: &mut HostState,
    (texture, generation): (TextureId, u32),
    source: &Arc<dyn ImageSource>,
    layout: &TextureLayout,
    own_range: bool,
) -> Option<u32> {
    let release = |host: &mut HostState| host.residency.release_tail(layout.non_evictable_bytes());
    if !host.is_current(texture, generation) || !host.is_unopened(texture) {
        release(host);
        return None;
    }
    let record = host.resources.get(texture)?;
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
                release(host);
                host.fail_texture(&engine.layout, texture, e.to_string());
                return None;
            }
        },
    };
    if let Some(r) = host.resources.get_mut(texture) {
        r.layout = Some(layout.clone());
    }
    Some(start)
}

/// The base colour: the 1×1 level if the chain reaches it (it is then in the tail).
fn base_color_from_tail(layout: &TextureLayout, tail: &[u8]) -> u64 {
    let last = layout.levels.last().expect("at least one level");
    if last.width != 1 || last.height != 1 || !layout.in_mip_tail(layout.num_levels() - 1) {
        return NO_BASE_COLOR;
    }
    let at = last.offset as usize;
    let color = match layout.blocks {
        // The 1×1 level is texel (0, 0) of one block.
        Some(codec) => {
            let mut texels = [0u8; 16 * 16];
            codec.decode_block(&tail[at..at + codec.block_bytes()], &mut texels);
            layout.format.decode(&texels)
        }
        None => layout
            .format
            .decode(&tail[at..at + layout.format.texel_bytes()]),
    };
    encode_base_color(color)
}
