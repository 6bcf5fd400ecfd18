//! What starting a launch costs: `launch_prepare` (publish what finished, start the launch)
//! against the number of pages that changed since the last launch and against how much of
//! the page space is in use. It must grow with the changes, never with the page space.
//!
//! Textures of a source that writes nothing (no I/O) are opened until the page space in use
//! reaches 2^20, 2^24 and 60·2^20 pages (64 GiB, 1 TiB, 3.75 TiB of 64 KiB tiles; the default
//! space has 2^26 pages, 4 TiB, and whole textures of 1.4 million pages fill it to 3.75 TiB). Each round
//! requests K new level-0 tiles (rotating through the textures, so the 1 GiB budget evicts:
//! withdrawals are changes too), serves them, and times the next `launch_prepare`, which
//! publishes them. The baseline, measured in the same run: one pass over every residence
//! word of the space in use — what the CUDA loader's host side did at every launch before
//! the publish seam (it diffed the page table against a mirror).

use super::requests::NullSource;
use super::Record;
use crate::error::CliError;
use demandtex::textures::TexelFormat;
use demandtex::{Loader, LoaderOptions, PageId, TextureDesc, TextureId};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Page-space ends measured (pages in use).
const SPACE_PAGES: [u32; 3] = [1 << 20, 1 << 24, 60 << 20];
/// Pages changed per launch.
const CHANGES: [usize; 4] = [0, 16, 256, 4096];
/// Side of each texture: 65536² RGBA32F, 2^20 level-0 pages (64 GiB).
const SIDE: u32 = 65536;

/// The loader and the level-0 tile pages of its textures.
struct Space {
    loader: Loader,
    tiles: Vec<PageId>,
}

/// Open `SIDE`² textures until the page space in use reaches `pages`.
fn open_space(pages: u32) -> Result<Space, CliError> {
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: 1 << 30,
        max_requests_per_launch: 1 << 16,
        fill_threads: 2,
        ..Default::default()
    })?;
    let format = TexelFormat::RGBA32F;
    let mut textures: Vec<TextureId> = Vec::new();
    let mut tiles = Vec::new();
    while loader.page_end() < pages {
        let tex = loader.create_texture(
            Arc::new(NullSource::new(SIDE, format)),
            TextureDesc::default(),
        )?;
        let launch = loader.launch_prepare();
        launch.map_or_request(PageId(tex.0));
        loader.process_requests(launch).wait();
        textures.push(tex);
        let (Some((first, _)), Some(layout)) =
            (loader.texture_pages(tex), loader.texture_layout(tex))
        else {
            return Err(CliError::Demandtex(format!(
                "texture {} did not open",
                tex.0
            )));
        };
        // A spread of level-0 tiles of each texture (every 7th row and column).
        let level = &layout.levels[0];
        for y in (0..level.tiles_y).step_by(7) {
            for x in (0..level.tiles_x).step_by(7) {
                tiles.push(PageId(first.0 + layout.tile_page_offset(0, x, y)));
            }
        }
    }
    // The launch that makes the last samplers visible.
    drop(loader.launch_prepare());
    Ok(Space { loader, tiles })
}

/// Median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Seconds of `launch_prepare` with `k` pages changed since the last one, over `time`.
fn time_launch_prepare(space: &Space, k: usize, next: &mut usize, time: Duration) -> f64 {
    let mut samples = Vec::new();
    let end = Instant::now() + time;
    let mut launch = space.loader.launch_prepare();
    while Instant::now() < end || samples.len() < 5 {
        for _ in 0..k {
            let page = space.tiles[*next % space.tiles.len()];
            *next += 1;
            space.loader.page_table().request_and_test(page.0);
        }
        space.loader.process_requests(launch).wait();
        let start = Instant::now();
        launch = space.loader.launch_prepare();
        samples.push(start.elapsed().as_secs_f64());
    }
    drop(launch);
    median(&mut samples)
}

/// Seconds of one pass over every residence word of `[0, end)` (the former diff).
fn time_full_scan(space: &Space, time: Duration) -> f64 {
    let table = space.loader.page_table();
    let words = (space.loader.page_end() as usize).div_ceil(32);
    let mirror = vec![0u32; words];
    let mut samples = Vec::new();
    let end = Instant::now() + time;
    while Instant::now() < end || samples.len() < 5 {
        let start = Instant::now();
        let changed = (0..words)
            .filter(|&w| table.residence_word(w) != mirror[w])
            .count();
        samples.push(start.elapsed().as_secs_f64());
        std::hint::black_box(changed);
    }
    median(&mut samples)
}

/// The `launch-prepare` section's records.
pub fn run(time: Duration) -> Result<Vec<Record>, CliError> {
    let per_case = time.div_f64(2.0).max(Duration::from_millis(200));
    let mut records = Vec::new();
    for pages in SPACE_PAGES {
        let space = open_space(pages)?;
        let in_use = space.loader.page_end();
        let scan = time_full_scan(&space, per_case);
        let mut next = 0;
        for k in CHANGES {
            let prepare = time_launch_prepare(&space, k, &mut next, per_case);
            records.push(Record {
                bench: "launch-prepare",
                case: format!(
                    "{in_use} pages ({:.2} TiB) in use, {k} tiles changed",
                    in_use as f64 * 65536.0 / (1u64 << 40) as f64
                ),
                threads: 1,
                figures: vec![
                    ("launch_prepare_us", prepare * 1e6),
                    ("full_scan_us", scan * 1e6),
                    ("ratio_vs_full_scan", prepare / scan),
                ],
            });
        }
    }
    Ok(records)
}
