//! Fault injection: [`FaultInjectingSource`] wraps any [`ImageSource`] and makes it
//! misbehave as a failing disk, a flaky network file system or a buggy decoder would —
//! I/O errors, short reads, panics, "not yet" answers and latency — by a deterministic,
//! seeded [`FaultPlan`]. Tests render through it to check that the engine survives every
//! fault: each ticket completes, a failed texture shows its fallback colour and says why,
//! every other texture is exact, and the budget holds.
//!
//! # Determinism
//! Every call the plan covers is a *site* ([`FaultSite`]: the open, the mip tail, or one
//! region of one level) and the wrapper counts the calls of each site. The fault of the
//! `n`-th call of a site is a pure function of the seed, the site and `n`
//! ([`FaultPlan::fault`]), so the same seed gives the same faults for the same
//! (level, tile, attempt) whatever the thread interleaving. (The engine never reads one
//! page twice at once, so a site's calls are ordered.) Nothing depends on time: latency
//! only slows calls down.
//!
//! # What each fault does
//! - [`Fault::Error`]: the call fails with an I/O error. The engine marks the texture
//!   failed (its fallback colour from then on, the error in
//!   [`Engine::texture_error`](crate::Engine::texture_error)).
//! - [`Fault::ShortRead`]: the read ended early. For this API a short read is a *partial
//!   write followed by an error*: the inner source fills the destination, then everything
//!   from a cut point (a whole number of rows, chosen by the plan) on is overwritten with
//!   [`POISON`] bytes — what a reused buffer holds where a read stopped — and the call
//!   fails. A source that returns success vouches for every texel of the region (the
//!   engine cannot tell a torn write that claims success from good data), so a source
//!   that reads less than it was asked must say so; the engine then discards the whole
//!   buffer, never publishing a partly written tile. At the open, a short read is an error
//!   (the header ended early).
//! - [`Fault::Panic`]: the call panics (a decoder bug). The engine contains panics in
//!   sources and treats them as errors. The panic unwinds without running the panic hook
//!   ([`std::panic::resume_unwind`], with the message as a `String` payload), so a test
//!   that injects thousands prints nothing; to `catch_unwind` it is the same unwinding as
//!   `panic!`'s.
//! - [`Fault::NotYet`]: the read answers [`Readiness::NotYet`] (tile and mip-tail reads
//!   only; an open cannot). The engine asks again at a later launch (multi-pass) or lookup
//!   (blocking). A site is never answered "not yet" from its
//!   [`max_not_yet`](FaultPlan::max_not_yet)-th call on, so every read eventually gets an
//!   answer.
//! - Latency: every covered call sleeps [`FaultPlan::latency`] first.
//!
//! [`ImageSource::read_base_color`] and [`ImageSource::name`] are passed through untouched.
//!
//! ```
//! use demandtex::sources::fault::{FaultInjectingSource, FaultPlan};
//! use demandtex::sources::{Checkerboard, ImageSource};
//! use demandtex::textures::TexelFormat;
//! use std::sync::Arc;
//!
//! let inner = Arc::new(Checkerboard::new(1024, 1024, 16, TexelFormat::RGBA8));
//! let plan = FaultPlan { seed: 7, error_rate: 0.05, not_yet_rate: 0.2, ..FaultPlan::default() };
//! let source = FaultInjectingSource::new(inner, plan).unwrap();
//! assert!(source.open().is_ok() || source.injected().failures() == 1);
//! ```

use super::{ImageInfo, ImageSource, MipTailLevel, Readiness, SourceError};
use crate::error::{Error, Result};
use crate::textures::TileRegion;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The byte a short read leaves where it stopped writing.
pub const POISON: u8 = 0xA5;

/// A call the plan can make fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultSite {
    /// [`ImageSource::open`].
    Open,
    /// [`ImageSource::read_mip_tail`] (the whole tail is one site).
    MipTail,
    /// [`ImageSource::read_tile`] or [`ImageSource::read_region`] of this region.
    Region(TileRegion),
}

impl std::fmt::Display for FaultSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FaultSite::Open => f.write_str("open"),
            FaultSite::MipTail => f.write_str("mip tail"),
            FaultSite::Region(r) => write!(
                f,
                "level {} region {}×{} at ({}, {})",
                r.level, r.width, r.height, r.x, r.y
            ),
        }
    }
}

/// What the plan does to one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fail with an I/O error.
    Error,
    /// Write part of the destination, poison the rest, and fail.
    ShortRead,
    /// Panic.
    Panic,
    /// Answer "not yet" (reads only).
    NotYet,
}

/// Which calls a [`FaultPlan`] covers; calls it does not cover pass straight through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSites {
    /// [`ImageSource::open`].
    pub open: bool,
    /// [`ImageSource::read_mip_tail`].
    pub mip_tail: bool,
    /// [`ImageSource::read_tile`] and [`ImageSource::read_region`].
    pub tiles: bool,
}

// Constructors rather than associated constants: cbindgen (the C ABI's header, which
// parses core) would export associated constants of a core type into demandtex.h.
impl FaultSites {
    /// Every call.
    pub const fn all() -> FaultSites {
        FaultSites {
            open: true,
            mip_tail: true,
            tiles: true,
        }
    }

    /// Tile and mip-tail reads, not the open.
    pub const fn reads() -> FaultSites {
        FaultSites {
            open: false,
            mip_tail: true,
            tiles: true,
        }
    }

    /// Tile reads only.
    pub const fn tiles_only() -> FaultSites {
        FaultSites {
            open: false,
            mip_tail: false,
            tiles: true,
        }
    }

    /// The open only.
    pub const fn open_only() -> FaultSites {
        FaultSites {
            open: true,
            mip_tail: false,
            tiles: false,
        }
    }

    fn covers(&self, site: FaultSite) -> bool {
        match site {
            FaultSite::Open => self.open,
            FaultSite::MipTail => self.mip_tail,
            FaultSite::Region(_) => self.tiles,
        }
    }
}

/// A deterministic, seeded fault plan. Each rate is the probability, per covered call,
/// of that fault; the rates must sum to at most 1. The default injects nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaultPlan {
    /// Seeds every decision; the same seed gives the same faults.
    pub seed: u64,
    /// Probability of an I/O error.
    pub error_rate: f64,
    /// Probability of a short read (partial write, poison, error).
    pub short_read_rate: f64,
    /// Probability of a panic.
    pub panic_rate: f64,
    /// Probability of a "not yet" answer (reads only).
    pub not_yet_rate: f64,
    /// A site is never answered "not yet" from this call on (counting from 0).
    pub max_not_yet: u32,
    /// Slept at the start of every covered call.
    pub latency: Duration,
    /// The calls the plan covers.
    pub sites: FaultSites,
}

impl Default for FaultPlan {
    fn default() -> Self {
        FaultPlan {
            seed: 0,
            error_rate: 0.0,
            short_read_rate: 0.0,
            panic_rate: 0.0,
            not_yet_rate: 0.0,
            max_not_yet: 3,
            latency: Duration::ZERO,
            sites: FaultSites::all(),
        }
    }
}

impl FaultPlan {
    /// Check the rates: each in `0..=1`, summing to at most 1.
    pub fn validate(&self) -> Result<()> {
        let rates = [
            ("error_rate", self.error_rate),
            ("short_read_rate", self.short_read_rate),
            ("panic_rate", self.panic_rate),
            ("not_yet_rate", self.not_yet_rate),
        ];
        for (name, r) in rates {
            if !(0.0..=1.0).contains(&r) {
                return Err(Error::InvalidArgument(format!(
                    "fault plan: {name} {r} (0..=1)"
                )));
            }
        }
        let sum: f64 = rates.iter().map(|(_, r)| r).sum();
        if sum > 1.0 + 1e-9 {
            return Err(Error::InvalidArgument(format!(
                "fault plan: the rates sum to {sum} (at most 1)"
            )));
        }
        Ok(())
    }

    /// The fault of call number `attempt` (from 0) of `site`, if the plan covers the site:
    /// a pure function of the seed, the site and the attempt.
    pub fn fault(&self, site: FaultSite, attempt: u32) -> Option<Fault> {
        if !self.sites.covers(site) {
            return None;
        }
        let u = unit(self.draw(site, attempt, 0));
        let mut edge = self.error_rate;
        if u < edge {
            return Some(Fault::Error);
        }
        edge += self.short_read_rate;
        if u < edge {
            return Some(Fault::ShortRead);
        }
        edge += self.panic_rate;
        if u < edge {
            return Some(Fault::Panic);
        }
        edge += self.not_yet_rate;
        let readable = site != FaultSite::Open && attempt < self.max_not_yet;
        (u < edge && readable).then_some(Fault::NotYet)
    }

    /// A 64-bit hash of (seed, site, attempt, salt).
    fn draw(&self, site: FaultSite, attempt: u32, salt: u64) -> u64 {
        const NONE: TileRegion = TileRegion {
            level: 0,
            x: 0,
            y: 0,
            width: 0,
            height: 0,
        };
        let (kind, r) = match site {
            FaultSite::Open => (1u64, NONE),
            FaultSite::MipTail => (2, NONE),
            FaultSite::Region(r) => (3, r),
        };
        let mut h = mix(self.seed ^ 0x6A09_E667_F3BC_C908);
        for v in [
            kind,
            u64::from(r.level),
            u64::from(r.x),
            u64::from(r.y),
            u64::from(r.width),
            u64::from(r.height),
            u64::from(attempt),
            salt,
        ] {
            h = mix(h ^ v);
        }
        h
    }
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash as a number in `[0, 1)`.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// What a [`FaultInjectingSource`] has injected so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InjectedFaults {
    /// Calls the plan covered (faulted or not).
    pub calls: u64,
    /// I/O errors.
    pub errors: u64,
    /// Short reads.
    pub short_reads: u64,
    /// Panics.
    pub panics: u64,
    /// "Not yet" answers.
    pub not_yet: u64,
    /// Of the errors, short reads and panics: those at the open.
    pub open_failures: u64,
}

impl InjectedFaults {
    /// Calls that failed: errors, short reads and panics.
    pub fn failures(&self) -> u64 {
        self.errors + self.short_reads + self.panics
    }

    /// Failed tile and mip-tail reads (what the engine counts in
    /// [`Stats::read_errors`](crate::Stats::read_errors)).
    pub fn read_failures(&self) -> u64 {
        self.failures() - self.open_failures
    }
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    errors: AtomicU64,
    short_reads: AtomicU64,
    panics: AtomicU64,
    not_yet: AtomicU64,
    open_failures: AtomicU64,
}

/// An [`ImageSource`] that injects the faults of a [`FaultPlan`] into the calls of the
/// source it wraps (see the [module documentation](self)).
pub struct FaultInjectingSource {
    inner: Arc<dyn ImageSource>,
    plan: FaultPlan,
    /// Calls so far of each site (at most one entry per region the engine reads, plus
    /// the open and the mip tail: bounded by the image's tile count).
    attempts: Mutex<HashMap<FaultSite, u32>>,
    counters: Counters,
}

impl std::fmt::Debug for FaultInjectingSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultInjectingSource")
            .field("inner", &self.inner.name())
            .field("plan", &self.plan)
            .field("injected", &self.injected())
            .finish()
    }
}

impl FaultInjectingSource {
    /// Wrap `inner`, injecting the faults of `plan`.
    ///
    /// Errors: [`Error::InvalidArgument`] for rates outside `0..=1` or summing past 1.
    pub fn new(inner: Arc<dyn ImageSource>, plan: FaultPlan) -> Result<FaultInjectingSource> {
        plan.validate()?;
        Ok(FaultInjectingSource {
            inner,
            plan,
            attempts: Mutex::new(HashMap::new()),
            counters: Counters::default(),
        })
    }

    /// The plan.
    pub fn plan(&self) -> &FaultPlan {
        &self.plan
    }

    /// The wrapped source.
    pub fn inner(&self) -> &Arc<dyn ImageSource> {
        &self.inner
    }

    /// The faults injected so far.
    pub fn injected(&self) -> InjectedFaults {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        InjectedFaults {
            calls: get(&c.calls),
            errors: get(&c.errors),
            short_reads: get(&c.short_reads),
            panics: get(&c.panics),
            not_yet: get(&c.not_yet),
            open_failures: get(&c.open_failures),
        }
    }

    /// Count a call of `site`, sleep the latency, and decide its fault. Returns the fault
    /// and the call's attempt number.
    fn enter(&self, site: FaultSite) -> Option<(Fault, u32)> {
        if !self.plan.sites.covers(site) {
            return None;
        }
        let attempt = {
            let mut attempts = self.attempts.lock();
            let n = attempts.entry(site).or_insert(0);
            let attempt = *n;
            *n = n.saturating_add(1);
            attempt
        };
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        if !self.plan.latency.is_zero() {
            std::thread::sleep(self.plan.latency);
        }
        let fault = self.plan.fault(site, attempt)?;
        let c = &self.counters;
        let counter = match fault {
            Fault::Error => &c.errors,
            Fault::ShortRead => &c.short_reads,
            Fault::Panic => &c.panics,
            Fault::NotYet => &c.not_yet,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if site == FaultSite::Open && fault != Fault::NotYet {
            c.open_failures.fetch_add(1, Ordering::Relaxed);
        }
        Some((fault, attempt))
    }

    /// The error of a failing fault without a destination (a panic panics here).
    fn failure(&self, fault: Fault, site: FaultSite, attempt: u32) -> SourceError {
        let what = match fault {
            Fault::Panic => {
                let message = format!("injected panic at {site} (call {attempt})");
                std::panic::resume_unwind(Box::new(message))
            }
            Fault::Error => "I/O error",
            Fault::ShortRead => "short read (the data ended early)",
            Fault::NotYet => "\"not yet\"",
        };
        SourceError(format!("injected {what} at {site} (call {attempt})"))
    }

    /// Overwrite `dest` from a cut point the plan chooses (a multiple of `unit` bytes)
    /// with [`POISON`], and report the short read.
    fn short_read(
        &self,
        dest: &mut [u8],
        unit: usize,
        units: usize,
        site: FaultSite,
        attempt: u32,
    ) -> SourceError {
        let kept = (self.plan.draw(site, attempt, 1) % units.max(1) as u64) as usize;
        let cut = (kept * unit).min(dest.len());
        dest[cut..].fill(POISON);
        SourceError(format!(
            "injected short read at {site} (call {attempt}): {cut} of {} bytes",
            dest.len()
        ))
    }

    /// A tile or region read through the plan; `read` is the inner call.
    fn read_through(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
        read: impl FnOnce(&mut [u8]) -> Result<Readiness, SourceError>,
    ) -> Result<Readiness, SourceError> {
        let site = FaultSite::Region(region);
        match self.enter(site) {
            None => read(dest),
            Some((Fault::ShortRead, attempt)) => {
                read(dest)?;
                let rows = region.height as usize;
                Err(self.short_read(dest, row_bytes, rows, site, attempt))
            }
            Some((Fault::NotYet, _)) => Ok(Readiness::NotYet),
            Some((fault, attempt)) => Err(self.failure(fault, site, attempt)),
        }
    }
}

impl ImageSource for FaultInjectingSource {
    fn name(&self) -> String {
        format!("{} (with injected faults)", self.inner.name())
    }

    fn open(&self) -> Result<ImageInfo, SourceError> {
        let site = FaultSite::Open;
        match self.enter(site) {
            None | Some((Fault::NotYet, _)) => self.inner.open(),
            Some((fault, attempt)) => Err(self.failure(fault, site, attempt)),
        }
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        self.read_through(region, dest, row_bytes, |d| {
            self.inner.read_region(region, d, row_bytes)
        })
    }

    fn read_tile(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        self.read_through(region, dest, row_bytes, |d| {
            self.inner.read_tile(region, d, row_bytes)
        })
    }

    fn read_mip_tail(
        &self,
        levels: &[MipTailLevel],
        dest: &mut [u8],
    ) -> Result<Readiness, SourceError> {
        let site = FaultSite::MipTail;
        match self.enter(site) {
            None => self.inner.read_mip_tail(levels, dest),
            Some((Fault::ShortRead, attempt)) => {
                self.inner.read_mip_tail(levels, dest)?;
                let len = dest.len();
                Err(self.short_read(dest, 1, len, site, attempt))
            }
            Some((Fault::NotYet, _)) => Ok(Readiness::NotYet),
            Some((fault, attempt)) => Err(self.failure(fault, site, attempt)),
        }
    }

    fn read_base_color(&self) -> Result<Option<[f32; 4]>, SourceError> {
        self.inner.read_base_color()
    }

    fn address_modes(&self) -> Option<[crate::textures::AddressMode; 2]> {
        self.inner.address_modes()
    }

    fn tiles_coalescable(&self) -> bool {
        self.inner.tiles_coalescable()
    }

    fn texels_are_words(&self) -> bool {
        self.inner.texels_are_words()
    }

    fn whole_decode(&self) -> Option<crate::sources::WholeDecode> {
        self.inner.whole_decode()
    }

    fn release_decoded(&self) {
        self.inner.release_decoded()
    }
}

#[cfg(test)]
mod tests;
