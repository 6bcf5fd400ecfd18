//! `demandtex bench replay TRACE`: replay a `.dtxq` query trace exactly as
//! `shared/bench/QUERIES.md` specifies — trilinear, periodic wrap, RGBA results, chunks of
//! 4096 queries taken in order by T threads, each query looked up once — and report the
//! figures it names. A `.dtxp` (Ptex) trace, recognised by its magic, is replayed the same
//! way with the Ptex filters ([`ptex`]).
//!
//! - `blocking` (the default): [`demandtex::TextureCache`]; a miss loads its tiles in the
//!   calling thread, as OpenImageIO's TextureSystem does.
//! - `multipass`: a [`demandtex::Loader`]; each pass samples every query still pending
//!   through one launch, then the launch's requests are filled and the next pass repeats
//!   the queries that were not resident. Every pass is timed.
//!
//! The wall time covers the replay itself: registering the files, opening them (lazily, at
//! their first lookup), every lookup and fill. Reading the trace and checking that the
//! files exist come before it.
//!
//! Channels: a texture has the channels demandtex's EXR reader serves (R G B A; R G B with
//! an alpha of 1; Y — a `Y A` file is served as Y; otherwise the first channels). The
//! samplers give (c, c, c, 1) for one channel, as QUERIES.md asks, and (c0, c1, 0, 1) for
//! two, whose third channel is set to c0 after the replay (QUERIES.md: missing colour
//! channels repeat the first).

mod blocking;
mod multipass;
mod ptex;

use super::trace::{magic_of, PtexQuery, Query, Record, Trace};
use crate::error::CliError;
use crate::table::format_bytes;
use demandtex::LoaderOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Queries per chunk: threads take chunks of this many consecutive queries.
pub const CHUNK: usize = 4096;

/// How the trace is replayed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Blocking texture cache: a miss reads its tiles in the calling thread.
    Blocking,
    /// Multi-pass loader: launches, requests and fills until every query is resident.
    Multipass,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Blocking => "blocking",
            Mode::Multipass => "multipass",
        }
    }
}

/// Arguments of `demandtex bench replay`.
#[derive(clap::Args, Clone, Debug)]
pub struct ReplayArgs {
    /// The `.dtxq` trace to replay.
    pub trace: PathBuf,
    /// Directory the trace's texture paths are relative to (default: the trace's directory).
    #[arg(long)]
    pub textures: Option<PathBuf>,
    /// Threads looking up (and, in multipass mode, filling).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Texture cache size in MiB (tiles and mip tails).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=(1 << 24)))]
    pub cache_mb: u64,
    /// Blocking cache or multi-pass loader.
    #[arg(long, value_enum, default_value = "blocking")]
    pub mode: Mode,
    /// Write every result as 4 × f32 (RGBA, little-endian) to this file, in query order.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the figures as one JSON object on a line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Multipass: most passes before giving up.
    #[arg(long, default_value_t = 10_000)]
    pub max_passes: u32,
    /// Ptex (`.dtxp`) traces: the filter (QUERIES.md: `PtexFilter` with lerp on, sharpness
    /// 0, edge blending on). Default: box.
    #[arg(long, value_enum)]
    pub filter: Option<ptex::PtexTraceFilter>,
    /// Give every texture 64 KiB pages, even those whose files have smaller tiles (by
    /// default their pages are the file's tiles: `LoaderOptions::pages_of_file_tiles`);
    /// blocking lookups still fill them file tile by file tile. For comparison.
    #[arg(long)]
    pub full_pages: bool,
    /// As `--full-pages`, and blocking lookups read every page whole
    /// (`LoaderOptions::fill_by_file_tile` off). For comparison.
    #[arg(long)]
    pub whole_pages: bool,
    /// Blocking: one call per query (`tex2d_grad`, `ptex_sample`) instead of a batch
    /// (`tex2d_grad_batch`, `ptex_sample_batch`) over each thread's run of queries. For
    /// comparison.
    #[arg(long)]
    pub one_by_one: bool,
    /// Blocking `.dtxq` replay: one `tex2d_grad_with_derivatives` call per query (instead
    /// of a batch) and write the derivatives of every result with respect to s, then t
    /// (8 × f32, little-endian; two-channel textures' third channel repeats the first, as
    /// in the results) to this file, in query order.
    #[arg(long)]
    pub derivatives: Option<PathBuf>,
    /// Ptex: the most MiB the decode cache (the sources of reductions) holds
    /// (`set_decode_cache_bytes`; default: the library's, 64), at most an eighth of
    /// `--cache-mb`, taken from it. For comparison.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=(1 << 20)))]
    pub decode_cache_mb: Option<u64>,
}

impl ReplayArgs {
    /// The page options the flags ask for, on top of `options`.
    pub(crate) fn page_options(&self, options: LoaderOptions) -> LoaderOptions {
        LoaderOptions {
            pages_of_file_tiles: !(self.full_pages || self.whole_pages),
            fill_by_file_tile: !self.whole_pages,
            ..options
        }
    }
}

/// What a replay measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Lookups replayed (the trace's queries).
    pub lookups: u64,
    /// Wall seconds of the replay.
    pub seconds: f64,
    /// Tile reads from files (mip tails not counted): pages read whole, and file tiles
    /// read into pages filled file tile by file tile.
    pub tiles_read: u64,
    /// Mip tails read (one per opened texture).
    pub mip_tails_read: u64,
    /// Decoded texel bytes read from files, tiles and mip tails, re-reads counted.
    pub bytes_read: u64,
    /// Highest texture memory held.
    pub peak_resident_bytes: u64,
    /// f64 sum of r + g + b + a over all results, in query order.
    pub checksum: f64,
    /// Textures whose file failed (they sample as their fallback colour).
    pub failed_textures: u64,
    /// Tiles evicted and dropped (their memory reused).
    pub evictions: u64,
    /// Lookups that returned a non-resident approximation (blocking: budget too small for
    /// the lookups in flight or a failed read; multipass: 0 once converged).
    pub non_resident: u64,
    /// Multipass: launches used (1 for the blocking mode).
    pub passes: u64,
    /// Ptex: compressed bytes read from the files (every read counted).
    pub file_bytes_read: Option<u64>,
    /// Ptex: units (faces at one resolution, or tiles of them) decoded.
    pub units_decoded: Option<u64>,
    /// Ptex: the most the engine's decode cache (sources of reductions, taken from the
    /// budget) may hold.
    pub decode_cache_bytes: Option<u64>,
}

/// The replay's inputs, resolved and checked, ready to be timed.
pub(crate) struct Prepared<Q = Query> {
    /// The queries.
    pub queries: Vec<Q>,
    /// Absolute (or working-directory-relative) path of each texture.
    pub paths: Vec<PathBuf>,
}

/// What a replay returns: its figures (checksum left at 0), the results in query order,
/// and per texture whether it was served with two channels.
pub(crate) type Replayed = (Report, Vec<[f32; 4]>, Vec<bool>);

/// One result per query, written by the replay threads. Relaxed atomic stores compile to
/// plain stores, so threads write disjoint (or scattered) queries without locks.
pub(crate) struct Results(Vec<[AtomicU32; 4]>);

impl Results {
    pub(crate) fn new(n: usize) -> Results {
        Results((0..n).map(|_| Default::default()).collect())
    }

    /// Store the result of query `i`.
    #[inline]
    pub fn set(&self, i: usize, v: [f32; 4]) {
        let r = &self.0[i];
        for c in 0..4 {
            r[c].store(v[c].to_bits(), Ordering::Relaxed);
        }
    }

    pub(crate) fn into_floats(self) -> Vec<[f32; 4]> {
        self.0
            .into_iter()
            .map(|r| r.map(|c| f32::from_bits(c.into_inner())))
            .collect()
    }
}

/// QUERIES.md's channel rule for two-channel textures, whose samples are (c0, c1, 0, 1):
/// the missing third colour channel repeats the first.
pub(crate) fn apply_channel_rule(results: &mut [[f32; 4]], queries: &[Query], two: &[bool]) {
    if !two.iter().any(|&t| t) {
        return;
    }
    for (r, q) in results.iter_mut().zip(queries) {
        if two[q.texture as usize] {
            r[2] = r[0];
        }
    }
}

/// Per texture, whether it was served with two channels (known once it was opened).
pub(crate) fn two_channel(loader: &demandtex::Loader, ids: &[demandtex::TextureId]) -> Vec<bool> {
    ids.iter()
        .map(|&id| {
            loader
                .texture_layout(id)
                .is_some_and(|l| l.format.channels == 2)
        })
        .collect()
}

/// Run `work(first, end)` over `n` items cut into chunks of [`CHUNK`], `threads` threads
/// taking chunks in order from a shared counter as they become free. Returns what each
/// chunk's call returned, in chunk order.
pub(crate) fn for_each_chunk<R: Send>(
    n: usize,
    threads: usize,
    work: impl Fn(usize, usize) -> R + Sync,
) -> Vec<R> {
    let chunks = n.div_ceil(CHUNK);
    let next = AtomicUsize::new(0);
    let mut out: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.min(chunks.max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        if c >= chunks {
                            return mine;
                        }
                        let first = c * CHUNK;
                        mine.push((c, work(first, (first + CHUNK).min(n))));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    out.sort_unstable_by_key(|(c, _)| *c);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Print each texture's error (it sampled as its fallback colour).
pub(crate) fn report_texture_errors(
    loader: &demandtex::Loader,
    ids: &[demandtex::TextureId],
    paths: &[PathBuf],
) {
    for (i, id) in ids.iter().enumerate() {
        if let Some(e) = loader.texture_error(*id) {
            eprintln!("bench replay: texture {i} ({}): {e}", paths[i].display());
        }
    }
}

/// Read the trace and check that its textures exist.
fn prepare<Q: Record>(args: &ReplayArgs) -> Result<Prepared<Q>, CliError> {
    let trace = Trace::<Q>::read(&args.trace)?;
    let dir = match &args.textures {
        Some(d) => d.clone(),
        None => args
            .trace
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    let mut paths = Vec::with_capacity(trace.textures.len());
    for (i, rel) in trace.textures.iter().enumerate() {
        let path = dir.join(rel);
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(CliError::Io(format!(
                    "texture {i} ({}): not a file",
                    path.display()
                )))
            }
            Err(e) => {
                return Err(CliError::Io(format!(
                    "texture {i} ({}): {e}",
                    path.display()
                )))
            }
        }
        paths.push(path);
    }
    Ok(Prepared {
        queries: trace.queries,
        paths,
    })
}

/// The results' checksum: the f64 sum of r + g + b + a, in query order.
pub fn checksum(results: &[[f32; 4]]) -> f64 {
    results
        .iter()
        .map(|r| r.iter().map(|&c| c as f64).sum::<f64>())
        .sum()
}

/// Write results as 4 × f32 little-endian per query (or as many as a record has).
pub fn write_results<const N: usize>(path: &Path, results: &[[f32; N]]) -> Result<(), CliError> {
    let mut bytes = Vec::with_capacity(results.len() * N * 4);
    for r in results {
        for c in r {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

impl Report {
    /// The figures of a replay of `lookups` queries that took `seconds`, from the engine's
    /// statistics (the checksum is set later).
    pub(crate) fn from_stats(
        lookups: usize,
        seconds: f64,
        stats: &demandtex::Stats,
        non_resident: u64,
        passes: u32,
    ) -> Report {
        Report {
            lookups: lookups as u64,
            seconds,
            tiles_read: stats.tiles_filled - stats.tiles_published_unread + stats.file_tiles_filled,
            mip_tails_read: stats.mip_tails_filled,
            bytes_read: stats.bytes_read,
            peak_resident_bytes: stats.peak_resident_bytes,
            checksum: 0.0,
            failed_textures: stats.failed_textures,
            evictions: stats.evictions,
            non_resident,
            passes: passes.into(),
            file_bytes_read: None,
            units_decoded: None,
            decode_cache_bytes: None,
        }
    }

    /// Lookups per second.
    pub fn lookups_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.lookups as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// The report as one JSON object, with what it was run with.
    pub fn to_json(&self, args: &ReplayArgs) -> serde_json::Value {
        serde_json::json!({
            "system": "demandtex",
            "mode": args.mode.name(),
            "filter": args.filter.map(ptex::PtexTraceFilter::name),
            "threads": args.threads,
            "cache_mb": args.cache_mb,
            "whole_pages": args.whole_pages,
            "full_pages": args.full_pages,
            "one_by_one": args.one_by_one,
            "derivatives": args.derivatives.is_some(),
            "lookups": self.lookups,
            "seconds": self.seconds,
            "lookups_per_s": self.lookups_per_s(),
            "tiles_read": self.tiles_read,
            "mip_tails_read": self.mip_tails_read,
            "bytes_read": self.bytes_read,
            "peak_resident_bytes": self.peak_resident_bytes,
            "evictions": self.evictions,
            "failed_textures": self.failed_textures,
            "non_resident": self.non_resident,
            "passes": self.passes,
            "file_bytes_read": self.file_bytes_read,
            "units_decoded": self.units_decoded,
            "decode_cache_bytes": self.decode_cache_bytes,
            "checksum": self.checksum,
        })
    }

    fn print_text(&self, args: &ReplayArgs) {
        println!(
            "demandtex {} replay of {}: {} thread(s), cache {} MiB",
            args.mode.name(),
            args.trace.display(),
            args.threads,
            args.cache_mb
        );
        println!(
            "  {} lookups in {:.3} s: {:.3} M lookups/s{}",
            self.lookups,
            self.seconds,
            self.lookups_per_s() / 1e6,
            if args.mode == Mode::Multipass {
                format!(" ({} passes)", self.passes)
            } else {
                String::new()
            }
        );
        println!(
            "  tiles read {} (+{} mip tails), bytes read {}, peak resident {}",
            self.tiles_read,
            self.mip_tails_read,
            format_bytes(self.bytes_read),
            format_bytes(self.peak_resident_bytes)
        );
        if let (Some(file), Some(units)) = (self.file_bytes_read, self.units_decoded) {
            println!(
                "  Ptex: {units} units decoded, {} read from the files",
                format_bytes(file)
            );
        }
        println!(
            "  evictions {}, non-resident results {}, checksum {}",
            self.evictions, self.non_resident, self.checksum
        );
    }
}

/// Replay the trace (`.dtxq` or, by its magic, `.dtxp`) and print the figures (and write
/// the results with `--out`).
pub fn run(args: &ReplayArgs) -> Result<(), CliError> {
    let budget = args.cache_mb << 20;
    let threads = args.threads as usize;
    let (mut report, results) = if magic_of(&args.trace)? == PtexQuery::MAGIC {
        if args.derivatives.is_some() {
            return Err(CliError::Usage(format!(
                "--derivatives applies to texture query traces; {} is a Ptex trace",
                args.trace.display()
            )));
        }
        let prepared = prepare::<PtexQuery>(args)?;
        let filter = args.filter.unwrap_or(ptex::PtexTraceFilter::Box);
        ptex::replay(&prepared, args, threads, budget, filter)?
    } else {
        if args.filter.is_some() {
            return Err(CliError::Usage(format!(
                "--filter applies to Ptex (.dtxp) traces; {} is a texture query trace \
                 (trilinear)",
                args.trace.display()
            )));
        }
        if args.derivatives.is_some() && args.mode != Mode::Blocking {
            return Err(CliError::Usage(
                "--derivatives applies to the blocking mode".to_string(),
            ));
        }
        let prepared = prepare::<Query>(args)?;
        let (report, mut results, two) = match args.mode {
            Mode::Blocking => blocking::replay(&prepared, threads, budget, args)?,
            Mode::Multipass => multipass::replay(&prepared, threads, budget, args)?,
        };
        apply_channel_rule(&mut results, &prepared.queries, &two);
        (report, results)
    };
    report.checksum = checksum(&results);
    if let Some(out) = &args.out {
        write_results(out, &results)?;
    }
    if report.failed_textures > 0 {
        eprintln!(
            "bench replay: {} texture(s) failed and sampled as their fallback colour",
            report.failed_textures
        );
    }
    if args.json {
        println!("{}", report.to_json(args));
    } else {
        report.print_text(args);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_item_once_in_order() {
        for threads in [1, 2, 5] {
            let n = 3 * CHUNK + 17;
            let seen = Results::new(n);
            let spans = for_each_chunk(n, threads, |a, b| {
                for i in a..b {
                    seen.set(i, [i as f32, 0.0, 0.0, 1.0]);
                }
                (a, b)
            });
            assert_eq!(
                spans,
                vec![
                    (0, CHUNK),
                    (CHUNK, 2 * CHUNK),
                    (2 * CHUNK, 3 * CHUNK),
                    (3 * CHUNK, n)
                ]
            );
            let r = seen.into_floats();
            assert!(r.iter().enumerate().all(|(i, v)| v[0] == i as f32));
            assert_eq!(checksum(&r), (0..n).map(|i| i as f64 + 1.0).sum::<f64>());
        }
        assert!(for_each_chunk(0, 2, |a, b| (a, b)).is_empty());
    }

    #[test]
    fn two_channel_results_repeat_the_first_channel() {
        let q = |texture| Query {
            texture,
            ..Default::default()
        };
        let mut r = [[0.2, 0.4, 0.0, 1.0]; 3];
        apply_channel_rule(&mut r, &[q(0), q(1), q(0)], &[false, true]);
        assert_eq!(r[0], [0.2, 0.4, 0.0, 1.0]);
        assert_eq!(r[1], [0.2, 0.4, 0.2, 1.0]);
        assert_eq!(r[2], [0.2, 0.4, 0.0, 1.0]);
    }
}
