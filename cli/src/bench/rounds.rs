//! Rounds of "one launch touching K new level-0 tiles → process_requests → wait → next
//! launch", shared by the request and fill benchmarks.

use super::{scattered_tile_centre, warm_up};
use crate::error::CliError;
use demandtex::sources::ImageSource;
use demandtex::textures::TextureLayout;
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureDesc, TextureId, TILE_BYTES};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Fill throughput of `source` through a loader: `threads` fill threads, `pages_per_round`
/// new tiles per round and a budget of three rounds. The texture is opened first, the
/// budget filled, then `repeats` timed runs of rounds of about `time` each follow; one
/// tally per run.
pub fn loader_fill_tallies(
    source: Arc<dyn ImageSource>,
    threads: usize,
    pages_per_round: usize,
    time: Duration,
    repeats: u32,
) -> Result<Vec<Tally>, CliError> {
    let info = source
        .open()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)?;
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: 3 * (pages_per_round * TILE_BYTES) as u64 + (1 << 20),
        fill_threads: threads,
        max_requests_per_launch: pages_per_round,
        ..LoaderOptions::default()
    })?;
    let texture = loader.create_texture(source, TextureDesc::default())?;
    warm_up(&loader, texture)?;
    let rounds = Rounds {
        loader: &loader,
        texture,
        layout: &layout,
        pages_per_round,
        time_whole_round: false,
    };
    let mut next = rounds.fill_the_budget(time);
    let mut tallies = Vec::new();
    for _ in 0..repeats {
        let mut tally = Tally::default();
        rounds.run(next, u64::MAX, time, &mut tally);
        next += tally.pages;
        tallies.push(tally);
    }
    Ok(tallies)
}

/// What the rounds run on.
pub struct Rounds<'a> {
    /// The loader.
    pub loader: &'a Loader,
    /// The texture whose level-0 tiles are requested (sampler and mip tail resident).
    pub texture: TextureId,
    /// Its layout.
    pub layout: &'a TextureLayout,
    /// New tiles touched per round.
    pub pages_per_round: usize,
    /// Time the whole round (launch, lookups, process, wait, next launch), or only
    /// `process_requests` + `wait`.
    pub time_whole_round: bool,
}

/// Totals over the rounds of one case.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Rounds run.
    pub rounds: u64,
    /// Pages touched.
    pub pages: u64,
    /// Seconds timed.
    pub seconds: f64,
    /// Tiles filled (from the loader's statistics).
    pub filled: u64,
    /// Texel bytes written by the source.
    pub bytes_read: u64,
    /// Tiles evicted.
    pub evictions: u64,
    /// Requests deferred.
    pub deferred: u64,
}

impl Rounds<'_> {
    /// Untimed rounds from tile 0 until the pool holds its whole budget (so that timed
    /// rounds reuse memory instead of faulting in fresh pages) or `cap` has passed.
    /// Returns the number of the next unrequested tile.
    pub fn fill_the_budget(&self, cap: Duration) -> u64 {
        let start = Instant::now();
        let mut scratch = Tally::default();
        let mut next = 0;
        loop {
            let s = self.loader.stats();
            if s.resident_bytes + TILE_BYTES as u64 > s.budget_bytes || start.elapsed() >= cap {
                return next;
            }
            self.run(next, 1, Duration::MAX, &mut scratch);
            next += self.pages_per_round as u64;
        }
    }

    /// Run rounds from scattered tile number `first` until `time` is spent in `tally`
    /// (counting what it held before) or `max_rounds` have run.
    pub fn run(&self, first: u64, max_rounds: u64, time: Duration, tally: &mut Tally) {
        let opts = SampleOptions::default();
        let before = self.loader.stats();
        let mut next = first;
        let mut launch = self.loader.launch_prepare();
        for _ in 0..max_rounds {
            if tally.seconds >= time.as_secs_f64() {
                break;
            }
            let start = Instant::now();
            for _ in 0..self.pages_per_round {
                let (s, t) = scattered_tile_centre(self.layout, next);
                next += 1;
                std::hint::black_box(launch.tex2d_lod(self.texture, s, t, 0.0, &opts));
            }
            let fill_start = Instant::now();
            self.loader.process_requests(launch).wait();
            let fill_seconds = fill_start.elapsed().as_secs_f64();
            let prepare_start = Instant::now();
            launch = self.loader.launch_prepare();
            tracing::debug!(
                round = tally.rounds,
                lookups_us = (fill_start - start).as_micros() as u64,
                process_us = (fill_seconds * 1e6) as u64,
                prepare_us = prepare_start.elapsed().as_micros() as u64,
                "round"
            );
            tally.seconds += if self.time_whole_round {
                start.elapsed().as_secs_f64()
            } else {
                fill_seconds
            };
            tally.rounds += 1;
            tally.pages += self.pages_per_round as u64;
        }
        self.loader.process_requests(launch).wait();
        let after = self.loader.stats();
        tally.filled += after.tiles_filled - before.tiles_filled;
        tally.bytes_read += after.bytes_read - before.bytes_read;
        tally.evictions += after.evictions - before.evictions;
        tally.deferred += after.requests_deferred - before.requests_deferred;
    }
}
