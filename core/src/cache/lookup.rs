//! The blocking lookup loop: pin this thread's epoch slot, sample through a view that lists
//! misses, unpin, fill the misses in this thread, and look again — until the footprint is
//! resident or nothing more can be loaded.
//!
//! Per-thread fast path: each thread keeps its epoch slot for each cache in a thread-local
//! list, so a resident lookup takes no shared lock and writes only its own cache line
//! (plus reference bits that are already set after the first use of a page).

use crate::loader::Loader;
use crate::memory::epoch::ThreadPin;
use crate::requests::blocking;
use crate::sampling::{CpuView, MissList, Sample, SampleDerivatives, SampleOptions};
use parking_lot::RwLockWriteGuard;
use std::cell::RefCell;

/// Rounds of "sample, fill the misses" before a lookup settles for the best resident
/// approximation. A footprint needs at most three rounds when memory allows (sampler,
/// then its tiles, then a retry); more means the budget is being fought over.
const MAX_ROUNDS: usize = 8;

/// Rounds after which a lookup takes its turn: it fills and samples its remaining rounds
/// holding the engine's `blocking_turns` alone, so no other blocking lookup fills (and
/// evicts) between its fill and its sampling. Without a turn, a thread descheduled
/// between the two could lose its pages to the others' evictions round after round (a
/// budget of a few footprints, a starved thread) and settle for the approximation, and
/// results would depend on scheduling.
const ROUNDS_BEFORE_TURN: usize = 3;

thread_local! {
    /// This thread's epoch slots, one per cache it has looked up through.
    static PINS: RefCell<Vec<ThreadPin>> = const { RefCell::new(Vec::new()) };
}

/// One lookup of [`TextureCache::tex2d_grad_batch`]: the arguments of
/// [`TextureCache::tex2d_grad`].
///
/// [`TextureCache::tex2d_grad_batch`]: super::TextureCache::tex2d_grad_batch
/// [`TextureCache::tex2d_grad`]: super::TextureCache::tex2d_grad
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradLookup {
    /// The texture.
    pub texture: crate::ids::TextureId,
    /// s.
    pub s: f32,
    /// t.
    pub t: f32,
    /// The screen-space x gradient of (s, t).
    pub ddx: [f32; 2],
    /// The screen-space y gradient of (s, t).
    pub ddy: [f32; 2],
}

/// Queries [`blocking_batch`] samples on one pinned view: enough to spread the pin and a
/// lookup's set-up over many, few enough that a pin stays short.
pub(crate) const BATCH_CHUNK: usize = 32;

/// Run `sample` on a pinned view of `loader`; the view lists the misses in `misses`.
#[inline]
fn sample_pinned<R>(
    loader: &Loader,
    misses: &MissList,
    options: &SampleOptions,
    sample: &impl Fn(CpuView<'_>, &SampleOptions) -> R,
) -> R {
    let engine = loader.engine();
    let run = |pin: &ThreadPin| {
        let _guard = engine.epochs.pin_thread(pin);
        // SAFETY: the page table publishes only valid sampler records, mip tails and tile
        // buffers, never writes them while resident, and reuses tile memory only once no
        // thread pin at or before its retirement remains — this thread is pinned until
        // `_guard` drops, after the last read through the view. Sampler records and mip
        // tails live as long as the engine, which the caller holds.
        let view = unsafe { CpuView::new(&engine.pages, loader.cpu_backend().directory()) }
            .with_misses(misses)
            .with_file_tiles(&**engine);
        sample(view, options)
    };
    let fast = PINS.try_with(|pins| {
        let pins = pins.try_borrow().ok()?;
        let pin = pins.iter().find(|p| engine.epochs.owns(p))?;
        Some(run(pin))
    });
    if let Ok(Some(result)) = fast {
        return result;
    }
    // First lookup of this thread through this cache (or thread-local storage is being
    // torn down): register a slot, and keep it if we can.
    let pin = engine.epochs.register_thread();
    let result = run(&pin);
    let _ = PINS.try_with(|pins| {
        if let Ok(mut pins) = pins.try_borrow_mut() {
            pins.retain(ThreadPin::is_live);
            pins.push(pin);
        }
    });
    result
}

/// A blocking lookup: `sample` is the sampler call (tex2d_grad and friends) on a view.
pub(crate) fn blocking_lookup<R: LookupResult>(
    loader: &Loader,
    options: &SampleOptions,
    sample: impl Fn(CpuView<'_>, &SampleOptions) -> R,
) -> R {
    let misses = MissList::new();
    let mut turn = None;
    for round in 0..MAX_ROUNDS {
        misses.clear();
        let result = sample_pinned(loader, &misses, options, &sample);
        if result.resident() || misses.is_empty() {
            return result;
        }
        fill_in_turn(loader, &misses, round, &mut turn);
    }
    // Nothing more can be loaded now: the finest resident coarser level, or the base
    // colour, reported non-resident.
    let coarser = fallback(loader, options);
    misses.clear();
    sample_pinned(loader, &misses, &coarser, &sample).not_resident()
}

/// What a blocking lookup returns: a [`Sample`], or one with more beside it.
pub(crate) trait LookupResult {
    /// Whether the lookup's footprint was resident.
    fn resident(&self) -> bool;
    /// The same result reported non-resident (the best approximation).
    fn not_resident(self) -> Self;
}

impl LookupResult for Sample {
    #[inline]
    fn resident(&self) -> bool {
        self.resident
    }

    fn not_resident(self) -> Sample {
        Sample {
            resident: false,
            ..self
        }
    }
}

impl LookupResult for SampleDerivatives {
    #[inline]
    fn resident(&self) -> bool {
        self.sample.resident
    }

    fn not_resident(self) -> SampleDerivatives {
        SampleDerivatives {
            sample: self.sample.not_resident(),
            ..self
        }
    }
}

/// [`fill_misses`] in round `round` of a lookup: under a shared hold of the engine's
/// `blocking_turns`, or, from round [`ROUNDS_BEFORE_TURN`] on, under `turn`, the lookup's
/// exclusive hold, taken then and kept until the lookup ends (its caller drops `turn`).
fn fill_in_turn<'a>(
    loader: &'a Loader,
    misses: &MissList,
    round: usize,
    turn: &mut Option<RwLockWriteGuard<'a, ()>>,
) {
    let turns = &loader.engine().blocking_turns;
    if round + 1 >= ROUNDS_BEFORE_TURN && turn.is_none() {
        *turn = Some(turns.write());
    }
    if turn.is_some() {
        fill_misses(loader, misses);
    } else {
        let _shared = turns.read();
        fill_misses(loader, misses);
    }
}

/// Fill the pages `misses` lists in this thread; if none could be filled, yield.
fn fill_misses(loader: &Loader, misses: &MissList) {
    let engine = loader.engine();
    let mut progress = false;
    for page in misses.pages() {
        progress |= blocking::fill_page(engine, page);
    }
    if !progress {
        // Everything this lookup needs is being fought over (a budget smaller than the
        // footprints in flight) or cannot be read now: let the other lookups finish,
        // then try again.
        std::thread::yield_now();
    }
}

/// A lookup gives up loading (counted): `options` with `fallback_to_coarser`, for its last
/// sampling.
fn fallback(loader: &Loader, options: &SampleOptions) -> SampleOptions {
    loader.engine().host.lock().counters.blocking_fallbacks += 1;
    SampleOptions {
        fallback_to_coarser: true,
        ..*options
    }
}

/// Blocking lookups of the queries `0..count`, [`BATCH_CHUNK`] at a time on one pinned
/// view: `sample(view, options, pending, missed)` samples the queries `pending` lists
/// (storing their results itself) and pushes onto `missed` those that were not resident.
/// A query that missed is then looked up on its own, exactly as [`blocking_lookup`] does
/// (its misses filled in this thread, sampled again, and after [`MAX_ROUNDS`] sampled
/// with `fallback_to_coarser`, its result standing as the closure stores it): each query
/// ends as it would alone, and the queries that hit share the pin and the set-up.
pub(crate) fn blocking_batch(
    loader: &Loader,
    options: &SampleOptions,
    count: usize,
    sample: impl Fn(CpuView<'_>, &SampleOptions, &[usize], &mut Vec<usize>),
) {
    let misses = MissList::new();
    let missed = RefCell::new(Vec::with_capacity(BATCH_CHUNK));
    // Sample `pending` on one pin; true if any of them missed.
    let run = |pending: &[usize], o: &SampleOptions| {
        missed.borrow_mut().clear();
        misses.clear();
        sample_pinned(loader, &misses, o, &|view, o| {
            sample(view, o, pending, &mut missed.borrow_mut())
        });
        !missed.borrow().is_empty()
    };
    let mut chunk = Vec::with_capacity(BATCH_CHUNK);
    let mut retry = Vec::with_capacity(BATCH_CHUNK);
    for first in (0..count).step_by(BATCH_CHUNK) {
        chunk.clear();
        chunk.extend(first..(first + BATCH_CHUNK).min(count));
        if !run(&chunk, options) {
            continue;
        }
        retry.clear();
        retry.extend_from_slice(&missed.borrow());
        'query: for &i in &retry {
            let one = [i];
            let mut turn = None;
            for round in 0..MAX_ROUNDS {
                if !run(&one, options) || misses.is_empty() {
                    continue 'query; // resident, or nothing to load: the result stands
                }
                fill_in_turn(loader, &misses, round, &mut turn);
            }
            run(&one, &fallback(loader, options));
        }
    }
}
