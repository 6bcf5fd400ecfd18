//! Images decoded whole (PNG) inside the texture budget (`ImageSource::whole_decode`):
//! 48 PNG files of 1024² RGBA8, every texel different (5.6 MB each decoded with its mip
//! levels, 268 MB in all), rendered multi-pass until every lookup was resident once:
//! 24,000 lookups spread over the textures at levels 0–3, on one thread.
//!
//! Two cases in the same run, each at a budget that holds every page and at a quarter of
//! it:
//! - **released after its fills** (now): the loader fills every page of a texture that a
//!   batch needs from one decode, charges the decode to the budget while the fills run,
//!   and releases it after;
//! - **kept for the texture's life** (before): the same, but the source ignores the
//!   release, as every source did before: what a texture decoded stays in memory,
//!   outside the budget, while it is open.
//!
//! Figures: launches and seconds to converge, decodes made, the most bytes held decoded
//! outside the budget after any batch (what the budget does not count) and at the end,
//! the peak bytes the budget held (decodes charged included), tiles read (and of them
//! filled without being asked for), the memory in all (the budget's peak and what was
//! held outside it), and the decodes spilled to files (`LoaderOptions::max_spill_bytes`:
//! a texture whose decode the budget cannot keep for its pages is read from its file
//! since).
//!
//! Then a blocking cache (`TextureCache`) of an eighth of the pages, random lookups one
//! by one over the set, with spilling on (the default) and off: without it, every miss
//! on a page whose decode is gone decodes its image again (a thrashing cache, as
//! OpenImageIO's is on such files); with it, such a miss reads its page from the file.
//! Both run 1,500 lookups; with spilling, 6,000 more follow (`next_…`: once the decodes
//! were spilled).

use super::{Record, Rng};
use crate::error::CliError;
use demandtex::sources::{
    DecodedImageSource, ImageInfo, ImageSource, Readiness, SourceError, WholeDecode,
};
use demandtex::textures::{TextureDesc, TileRegion};
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureCache, TextureId};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const SIDE: u32 = 1024;
const FILES: u32 = 48;
const LOOKUPS: usize = 24_000;

/// A PNG source that keeps its decode for the texture's life: the behaviour before
/// decodes were released.
struct KeptForever(DecodedImageSource);

impl ImageSource for KeptForever {
    fn name(&self) -> String {
        self.0.name()
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        self.0.open()
    }
    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        self.0.read_region(region, dest, row_bytes)
    }
    fn whole_decode(&self) -> Option<WholeDecode> {
        self.0.whole_decode()
    }
    fn content_identity(&self) -> Option<demandtex::sources::ContentIdentity> {
        self.0.content_identity()
    }
}

/// Write the set, run both cases at both budgets.
pub fn run() -> Result<Vec<Record>, CliError> {
    let dir = std::env::temp_dir().join(format!(
        "demandtex-bench-whole-decodes-{}",
        std::process::id()
    ));
    let result = write_set(&dir).and_then(|()| measure(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn file(dir: &Path, i: u32) -> std::path::PathBuf {
    dir.join(format!("image{i:02}.png"))
}

/// A source for each file of the set.
fn png_sources(dir: &Path) -> Vec<Arc<DecodedImageSource>> {
    (0..FILES)
        .map(|i| Arc::new(DecodedImageSource::new(file(dir, i))))
        .collect()
}

fn write_set(dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Demandtex(format!("{}: {e}", dir.display())))?;
    for i in 0..FILES {
        let mut rng = Rng::new(u64::from(i) + 1);
        let image = image::RgbaImage::from_fn(SIDE, SIDE, |x, y| {
            let n = (rng.next_f32() * 32.0) as u32;
            image::Rgba([
                ((x + i * 7) % 256) as u8,
                ((y + n) % 256) as u8,
                ((x ^ y) % 256) as u8,
                255,
            ])
        });
        image
            .save(file(dir, i))
            .map_err(|e| CliError::Demandtex(format!("writing the PNG set: {e}")))?;
    }
    Ok(())
}

/// Queries: (texture index, s, t, footprint) at levels 0–3.
fn queries() -> Vec<(u32, f32, f32, f32)> {
    let mut rng = Rng::new(7);
    (0..LOOKUPS)
        .map(|i| {
            let tex = (rng.next_f32() * FILES as f32) as u32 % FILES;
            let d = 2f32.powi((i % 4) as i32) / SIDE as f32;
            (tex, rng.next_f32(), rng.next_f32(), d)
        })
        .collect()
}

fn measure(dir: &Path) -> Result<Vec<Record>, CliError> {
    let qs = queries();
    // Every page of every texture: level 0 and its tiled levels (a third more).
    let pages_bytes = u64::from(FILES) * u64::from(SIDE) * u64::from(SIDE) * 4 * 4 / 3;
    let mut records = Vec::new();
    for budget in [pages_bytes + (64 << 20), pages_bytes / 4] {
        for kept in [false, true] {
            let r = render(dir, &qs, budget, kept)?;
            let case = format!(
                "{}, budget {} MiB",
                if kept {
                    "kept for the texture's life (before)"
                } else {
                    "released after its fills (now)"
                },
                budget >> 20
            );
            records.push(Record {
                bench: "whole-decodes",
                case,
                threads: 1,
                figures: vec![
                    ("launches", r.launches as f64),
                    ("seconds", r.seconds),
                    ("decodes", r.decodes as f64),
                    ("max_held_outside_budget_mb", r.max_held as f64 / 1e6),
                    ("held_at_end_mb", r.held_at_end as f64 / 1e6),
                    ("peak_budget_held_mb", r.peak_resident as f64 / 1e6),
                    ("budget_mb", budget as f64 / 1e6),
                    ("tiles_filled", r.tiles_filled as f64),
                    ("pages_prefetched", r.prefetched as f64),
                    (
                        "memory_in_all_mb",
                        (r.peak_resident + r.max_held) as f64 / 1e6,
                    ),
                    ("decodes_spilled", r.spilled as f64),
                    ("spilled_mb", r.spilled_bytes as f64 / 1e6),
                ],
            });
        }
    }
    for spill in [true, false] {
        records.push(blocking(dir, &qs, pages_bytes / 8, spill)?);
    }
    Ok(records)
}

/// Lookups of the blocking cases' first pass (the case without spilling decodes at most
/// misses), and of the spilling case's second pass, once its decodes were spilled.
const BLOCKING_LOOKUPS: [usize; 2] = [1_500, 6_000];

/// Random lookups one by one through a blocking cache of `budget` bytes, spilling decodes
/// or not: the first [`BLOCKING_LOOKUPS`] of `qs`, then (spilling) the next ones.
fn blocking(
    dir: &Path,
    qs: &[(u32, f32, f32, f32)],
    budget: u64,
    spill: bool,
) -> Result<Record, CliError> {
    let cache = TextureCache::new(LoaderOptions {
        max_texture_memory: budget,
        max_spill_bytes: if spill {
            LoaderOptions::default().max_spill_bytes
        } else {
            0
        },
        ..LoaderOptions::default()
    })?;
    let sources = png_sources(dir);
    let ids = sources
        .iter()
        .map(|s| {
            cache
                .loader()
                .create_texture(s.clone(), TextureDesc::default())
        })
        .collect::<Result<Vec<TextureId>, _>>()?;
    let options = SampleOptions::default();
    // Seconds, decodes so far, and the sum of the values (the same in both cases).
    let pass = |qs: &[(u32, f32, f32, f32)]| {
        let start = Instant::now();
        let mut sum = 0.0f64;
        for &(tex, s, t, f) in qs {
            let r = cache.tex2d_grad(ids[tex as usize], s, t, [f, 0.0], [0.0, f], &options);
            sum += r.value.iter().map(|&v| f64::from(v)).sum::<f64>();
        }
        let seconds = start.elapsed().as_secs_f64();
        let decodes = sources.iter().map(|s| s.decodes()).sum::<u64>();
        (seconds, decodes, sum)
    };
    let [first, next] = BLOCKING_LOOKUPS;
    let (seconds, decodes, sum) = pass(&qs[..first]);
    let second = spill.then(|| pass(&qs[first..first + next]));
    let stats = cache.stats();
    let mut record = Record {
        bench: "whole-decodes-blocking",
        case: format!(
            "blocking, budget {} MiB, spilling {}",
            budget >> 20,
            if spill { "on (default)" } else { "off" }
        ),
        threads: 1,
        figures: vec![
            ("lookups", first as f64),
            ("seconds", seconds),
            ("lookups_per_s", first as f64 / seconds),
            ("decodes", decodes as f64),
            ("decodes_spilled", stats.decodes_spilled as f64),
            ("spilled_mb", stats.spilled_bytes as f64 / 1e6),
            ("tiles_filled", stats.tiles_filled as f64),
            ("evictions", stats.evictions as f64),
            (
                "peak_budget_held_mb",
                stats.peak_resident_bytes as f64 / 1e6,
            ),
            ("budget_mb", budget as f64 / 1e6),
            ("checksum", sum),
        ],
    };
    if let Some((s, d, _)) = second {
        record.figures.push(("next_lookups", next as f64));
        record.figures.push(("next_lookups_per_s", next as f64 / s));
        record.figures.push(("next_decodes", (d - decodes) as f64));
    }
    Ok(record)
}

struct Outcome {
    launches: usize,
    seconds: f64,
    decodes: u64,
    max_held: u64,
    held_at_end: u64,
    peak_resident: u64,
    tiles_filled: u64,
    prefetched: u64,
    spilled: u64,
    spilled_bytes: u64,
}

fn render(
    dir: &Path,
    qs: &[(u32, f32, f32, f32)],
    budget: u64,
    kept: bool,
) -> Result<Outcome, CliError> {
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: budget,
        max_requests_per_launch: 1 << 16,
        ..LoaderOptions::default()
    })?;
    let sources = png_sources(dir);
    let mut ids: Vec<TextureId> = Vec::new();
    let mut forever = Vec::new();
    for s in &sources {
        let id = if kept {
            let k = Arc::new(KeptForever(DecodedImageSource::new(s.path())));
            let id = loader.create_texture(k.clone(), TextureDesc::default())?;
            forever.push(k);
            id
        } else {
            loader.create_texture(s.clone(), TextureDesc::default())?
        };
        ids.push(id);
    }
    // Bytes of one decode (every file has the same size and format; the header is read).
    let whole = DecodedImageSource::new(file(dir, 0));
    whole
        .open()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let whole = whole.whole_decode().map_or(0, |w| w.bytes);
    let held = || -> (u64, u64) {
        let (n, d): (u64, u64) = if kept {
            (
                forever.iter().filter(|k| k.0.holds_decode()).count() as u64,
                forever.iter().map(|k| k.0.decodes()).sum(),
            )
        } else {
            (
                sources.iter().filter(|s| s.holds_decode()).count() as u64,
                sources.iter().map(|s| s.decodes()).sum(),
            )
        };
        (n * whole, d)
    };
    let options = SampleOptions::default();
    let mut done = vec![false; qs.len()];
    let mut launches = 0;
    let mut max_held = 0;
    let start = Instant::now();
    while done.iter().any(|d| !d) && launches < 200 {
        let launch = loader.launch_prepare();
        launches += 1;
        for (q, d) in qs.iter().zip(done.iter_mut()) {
            if !*d {
                let (tex, s, t, f) = *q;
                *d = launch
                    .tex2d_grad(ids[tex as usize], s, t, [f, 0.0], [0.0, f], &options)
                    .resident;
            }
        }
        loader.process_requests(launch).wait();
        // What the budget does not count: decodes held beyond those charged now.
        let charged = loader.stats().whole_decode_bytes;
        max_held = max_held.max(held().0.saturating_sub(charged));
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = loader.stats();
    let (held_at_end, decodes) = held();
    Ok(Outcome {
        launches,
        seconds,
        decodes,
        max_held,
        held_at_end,
        peak_resident: stats.peak_resident_bytes,
        tiles_filled: stats.tiles_filled,
        prefetched: stats.pages_prefetched,
        spilled: stats.decodes_spilled,
        spilled_bytes: stats.spilled_bytes,
    })
}
