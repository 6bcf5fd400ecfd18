//! What each texture costs when a shot has tens of thousands: 10,000 and 100,000 8K
//! textures (8192², RGBA8 and half RGBA) registered, then opened (sampler, page range and
//! mip tail), in a page space sized to hold all of them.
//!
//! Figures, from the process's resident memory (`VmRSS`) measured between the steps:
//! - the page space: virtual pages, and the bookkeeping they cost (bits, LRU ages,
//!   entries, the CPU tile directory) per virtual page as the loader counts it, and as
//!   resident memory once a pull has scanned every word;
//! - bytes per registered texture (its record and source object, before any open);
//! - bytes per opened texture beyond its mip tail (sampler record, layout, page range),
//!   and the mip tail itself, which stays in the budget while the texture is open;
//! - registrations and opens per second.
//!
//! The textures are checkerboards: opening one reads only its mip tail, which the source
//! computes, so the figures are the loader's, not a decoder's.

use super::Record;
use crate::error::CliError;
use crate::rss::process_rss_bytes;
use demandtex::sources::Checkerboard;
use demandtex::textures::TexelFormat;
use demandtex::{Loader, LoaderOptions, PageId, TextureDesc, TextureId};
use std::sync::Arc;
use std::time::Instant;

/// Side of every texture.
const SIDE: u32 = 8192;
/// Texture counts measured.
const COUNTS: [u32; 2] = [10_000, 100_000];
/// Virtual pages of one 8K texture of `format` (every level, whole tiles), found by opening
/// one in a loader of its own.
fn pages_per_texture(format: TexelFormat) -> Result<u32, CliError> {
    let loader = Loader::new(LoaderOptions {
        fill_threads: 1,
        ..LoaderOptions::default()
    })?;
    let tex = loader.create_texture(source(format), TextureDesc::default())?;
    open_all(&loader, &[tex])?;
    loader
        .texture_pages(tex)
        .map(|(_, pages)| pages)
        .ok_or_else(|| CliError::Demandtex("a checkerboard did not open".into()))
}

fn source(format: TexelFormat) -> Arc<Checkerboard> {
    Arc::new(Checkerboard::new(SIDE, SIDE, 64, format))
}

/// Request every texture's sampler page until all are open (one launch per round).
fn open_all(loader: &Loader, textures: &[TextureId]) -> Result<(), CliError> {
    for _ in 0..64 {
        let launch = loader.launch_prepare();
        let mut missing = 0;
        for t in textures {
            if launch.map_or_request(PageId(t.0)).is_none() {
                missing += 1;
            }
        }
        if missing == 0 {
            return Ok(());
        }
        loader.process_requests(launch).wait();
    }
    Err(CliError::Demandtex(format!(
        "{} textures did not open in 64 launches (failed: {})",
        textures.len(),
        loader.stats().failed_textures
    )))
}

/// One texture count and format.
fn measure(count: u32, format: TexelFormat, name: &str) -> Result<Record, CliError> {
    let pages_each = pages_per_texture(format)?;
    let entries = (2 * count).next_power_of_two();
    let num_pages = u64::from(entries) + u64::from(count) * u64::from(pages_each);
    let num_pages = u32::try_from(num_pages).map_err(|_| {
        CliError::Demandtex(format!(
            "{count} textures of {pages_each} pages need {num_pages} pages (the page space holds 2^32)"
        ))
    })?;
    let rss_start = process_rss_bytes()?;
    let loader = Loader::new(LoaderOptions {
        num_pages: num_pages + 1,
        page_table_entries: entries,
        max_textures: count,
        // Every texture's mip tail stays while it is open: the budget must hold them all.
        max_texture_memory: 64 << 30,
        max_requests_per_launch: count as usize,
        fill_threads: 2,
        ..LoaderOptions::default()
    })?;
    let bookkeeping = loader.stats().bookkeeping_bytes;
    let rss_loader = process_rss_bytes()?;

    let t0 = Instant::now();
    let textures = (0..count)
        .map(|_| loader.create_texture(source(format), TextureDesc::default()))
        .collect::<Result<Vec<_>, _>>()?;
    let register_seconds = t0.elapsed().as_secs_f64();
    let rss_registered = process_rss_bytes()?;

    let t1 = Instant::now();
    open_all(&loader, &textures)?;
    let open_seconds = t1.elapsed().as_secs_f64();
    // One more pull over the whole space: its words are now all touched.
    loader.process_requests(loader.launch_prepare()).wait();
    let rss_opened = process_rss_bytes()?;
    let stats = loader.stats();
    let n = f64::from(count);
    let tails = stats.resident_bytes as f64;
    let values = [
        f64::from(num_pages),
        stats.virtual_bytes as f64,
        bookkeeping as f64 / f64::from(num_pages),
        rss_loader.saturating_sub(rss_start) as f64 / f64::from(num_pages),
        rss_registered.saturating_sub(rss_loader) as f64 / n,
        (rss_opened.saturating_sub(rss_registered) as f64 - tails).max(0.0) / n,
        tails / n,
        n / register_seconds,
        n / open_seconds,
    ];
    let mut record = empty_record(count, name);
    for (f, v) in record.figures.iter_mut().zip(values) {
        f.1 = v;
    }
    Ok(record)
}

/// The record of one case, its figures zero.
fn empty_record(count: u32, name: &str) -> Record {
    let names = [
        "virtual_pages",
        "page_space_bytes",
        "bookkeeping_bytes_per_virtual_page",
        "loader_rss_bytes_per_virtual_page",
        "bytes_per_registered_texture",
        "bytes_per_opened_texture_beyond_its_tail",
        "mip_tail_bytes_per_texture",
        "registrations_per_second",
        "opens_per_second",
    ];
    Record {
        bench: "many-textures",
        case: format!("{count} × 8K {name}"),
        threads: 2,
        figures: names.iter().map(|&n| (n, 0.0)).collect(),
    }
}

/// The environment variable that makes a child process measure one case.
const CASE_VAR: &str = "DEMANDTEX_BENCH_MANY_TEXTURES_CASE";
/// The line prefix of a child's figures.
const CASE_PREFIX: &str = "many-textures-case:";

fn cases() -> Vec<(u32, TexelFormat, &'static str)> {
    COUNTS
        .iter()
        .flat_map(|&n| {
            [
                (n, TexelFormat::RGBA8, "RGBA8"),
                (n, TexelFormat::RGBA16F, "half RGBA"),
            ]
        })
        .collect()
}

/// The measurements, smallest first. Each case runs in a process of its own (this
/// program again), so that memory freed by one case and reused by the next cannot hide
/// the next one's growth.
pub fn run() -> Result<Vec<Record>, CliError> {
    let cases = cases();
    if let Ok(i) = std::env::var(CASE_VAR) {
        let (count, format, name) = i
            .parse::<usize>()
            .ok()
            .and_then(|i| cases.get(i).copied())
            .ok_or_else(|| CliError::Usage(format!("{CASE_VAR}={i}")))?;
        let record = measure(count, format, name)?;
        let values: Vec<String> = record.figures.iter().map(|(_, v)| v.to_string()).collect();
        println!("{CASE_PREFIX} {}", values.join(" "));
        std::process::exit(0);
    }
    let exe = std::env::current_exe().map_err(|e| CliError::Io(format!("this program: {e}")))?;
    let mut records = Vec::new();
    for (i, &(count, _, name)) in cases.iter().enumerate() {
        eprintln!("bench: {count} textures, {name}…");
        let out = std::process::Command::new(&exe)
            .args(["bench", "--only", "many-textures"])
            .env(CASE_VAR, i.to_string())
            .output()
            .map_err(|e| CliError::Io(format!("{}: {e}", exe.display())))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let values: Vec<f64> = stdout
            .lines()
            .find_map(|l| l.strip_prefix(CASE_PREFIX))
            .map(|l| {
                l.split_whitespace()
                    .filter_map(|v| v.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        // The names come from this process's own measurement shape.
        let mut record = empty_record(count, name);
        if !out.status.success() || values.len() != record.figures.len() {
            return Err(CliError::Demandtex(format!(
                "the {count}-texture {name} case failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        for (f, v) in record.figures.iter_mut().zip(values) {
            f.1 = v;
        }
        records.push(record);
    }
    Ok(records)
}
