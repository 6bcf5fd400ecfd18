//! Requests per second through pull → route → allocate → fill → publish with no I/O: a
//! source that writes nothing, a 65536² RGBA8 texture, and rounds of one launch touching K
//! new tile pages, `process_requests` + `wait`, and the next `launch_prepare`.

use super::rounds::{Rounds, Tally};
use super::{warm_up, Record};
use crate::error::CliError;
use demandtex::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use demandtex::textures::{full_mip_levels, TexelFormat, TextureLayout, TileRegion};
use demandtex::{Loader, LoaderOptions, TextureDesc, TextureId, TILE_BYTES};
use std::sync::Arc;
use std::time::Duration;

const SIZE: u32 = 65536;

/// A source that produces every region instantly and writes nothing.
pub struct NullSource {
    width: u32,
    height: u32,
    format: TexelFormat,
}

impl NullSource {
    /// A `size`² null texture of `format`.
    pub fn new(size: u32, format: TexelFormat) -> NullSource {
        Self::with_size(size, size, format)
    }

    /// A `width × height` null texture of `format`.
    pub fn with_size(width: u32, height: u32, format: TexelFormat) -> NullSource {
        NullSource {
            width,
            height,
            format,
        }
    }
}

impl ImageSource for NullSource {
    fn name(&self) -> String {
        format!("null {}×{}", self.width, self.height)
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        Ok(ImageInfo {
            width: self.width,
            height: self.height,
            format: self.format,
            num_levels: full_mip_levels(self.width, self.height),
        })
    }
    fn read_region(&self, _: TileRegion, _: &mut [u8], _: usize) -> Result<Readiness, SourceError> {
        Ok(Readiness::Ready)
    }
}

/// A loader with one null texture whose sampler and mip tail are resident.
fn setup(
    size: u32,
    budget_bytes: u64,
    fill_threads: usize,
    k: usize,
) -> Result<(Loader, TextureId, TextureLayout), CliError> {
    let source = Arc::new(NullSource::new(size, TexelFormat::RGBA8));
    let info = source
        .open()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)?;
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: budget_bytes,
        fill_threads,
        max_requests_per_launch: k,
        ..LoaderOptions::default()
    })?;
    let tex = loader.create_texture(source, TextureDesc::default())?;
    warm_up(&loader, tex)?;
    Ok((loader, tex, layout))
}

fn rounds<'a>(
    loader: &'a Loader,
    texture: TextureId,
    layout: &'a TextureLayout,
    k: usize,
) -> Rounds<'a> {
    Rounds {
        loader,
        texture,
        layout,
        pages_per_round: k,
        time_whole_round: true,
    }
}

fn record(case: String, threads: usize, t: &Tally) -> Record {
    Record {
        bench: "requests",
        case,
        threads,
        figures: vec![
            ("pages_per_second", t.pages as f64 / t.seconds.max(1e-9)),
            ("us_per_round", t.seconds * 1e6 / t.rounds.max(1) as f64),
            ("rounds", t.rounds as f64),
            ("tiles_filled", t.filled as f64),
            ("evictions", t.evictions as f64),
            ("requests_deferred", t.deferred as f64),
        ],
    }
}

/// Run the request benchmark: K = 1024 and 8192, with room for every page (fresh loaders
/// once the budget is used up: every tile is new memory, so this includes the cost of
/// first-touch page faults), and in the steady state of a budget of 3 K tiles that is
/// already full (every round stages and reuses the tiles of earlier rounds).
pub fn run(threads_list: &[usize], time: Duration) -> Result<Vec<Record>, CliError> {
    const ROOMY_BYTES: u64 = 1 << 30;
    let mut records = Vec::new();
    for k in [1024usize, 8192] {
        for &threads in threads_list {
            // Room for everything: each loader serves as many rounds as its budget holds.
            let mut roomy = Tally::default();
            let per_loader = (ROOMY_BYTES / TILE_BYTES as u64 - 16) / k as u64;
            while roomy.seconds < time.as_secs_f64() {
                let (loader, tex, layout) = setup(SIZE, ROOMY_BYTES, threads, k)?;
                let before = roomy.rounds;
                rounds(&loader, tex, &layout, k).run(0, per_loader, time, &mut roomy);
                if roomy.rounds == before {
                    break;
                }
            }
            records.push(record(
                format!("K={k}, fresh memory, no eviction"),
                threads,
                &roomy,
            ));

            // A budget of 3 K tiles: every round stages and reuses the previous rounds' tiles.
            let budget = 3 * k as u64 * TILE_BYTES as u64 + (1 << 20);
            let (loader, tex, layout) = setup(SIZE, budget, threads, k)?;
            let mut tight = Tally::default();
            let r = rounds(&loader, tex, &layout, k);
            let first = r.fill_the_budget(4 * time);
            // Tile numbers wrap around the level: long evicted by then, so read again.
            r.run(first, u64::MAX, time, &mut tight);
            records.push(record(
                format!("K={k}, steady state with eviction"),
                threads,
                &tight,
            ));
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_fill_new_tiles_and_evict_once_the_budget_is_full() {
        let k = 16;
        let budget = 3 * (k * TILE_BYTES) as u64 + TILE_BYTES as u64;
        let (loader, tex, layout) = setup(4096, budget, 1, k).unwrap();
        let r = rounds(&loader, tex, &layout, k);
        let first = r.fill_the_budget(Duration::from_secs(60));
        assert!(loader.stats().resident_bytes + TILE_BYTES as u64 > budget);
        let mut tally = Tally::default();
        r.run(first, 8, Duration::MAX, &mut tally);
        assert_eq!(tally.rounds, 8);
        assert_eq!(tally.pages, 8 * k as u64);
        assert_eq!(tally.filled, 8 * k as u64);
        assert!(tally.evictions >= 7 * k as u64, "{tally:?}");
        assert_eq!(tally.deferred, 0);
        let rec = record("test".into(), 1, &tally);
        assert_eq!(rec.figures[2], ("rounds", 8.0));
    }
}
