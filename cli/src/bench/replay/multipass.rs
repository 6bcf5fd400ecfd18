//! Multi-pass replay: each pass samples every pending query through one launch of a
//! [`Loader`]; the launch's requests are then filled, and the queries that were not
//! resident are repeated in the next pass. Every pass, fills included, is timed.

use super::{for_each_chunk, Prepared, ReplayArgs, Replayed, Report, Results};
use crate::error::CliError;
use demandtex::sources::file_source;
use demandtex::{Launch, Loader, LoaderOptions, SampleOptions, TextureDesc, TextureId};
use std::time::Instant;

/// Passes in a row that may resolve no query before the replay gives up (the cache cannot
/// hold what the pending queries need at once).
const STALLED_PASSES: u32 = 8;

/// The loader a multi-pass replay runs on: `budget` bytes, `threads` fill threads, pages
/// as `args` ask ([`ReplayArgs::page_options`]).
pub(crate) fn loader(threads: usize, budget: u64, args: &ReplayArgs) -> Result<Loader, CliError> {
    Ok(Loader::new(args.page_options(LoaderOptions {
        max_texture_memory: budget,
        fill_threads: threads,
        ..Default::default()
    }))?)
}

/// Run passes over `n` queries until every one has a resident result: each pass samples
/// the pending queries through one launch on `threads` threads (`sample(launch, i)` is
/// query `i`'s result, or `None` when it was not resident), then fills the launch's
/// requests. Returns the passes used.
pub(crate) fn run_passes(
    loader: &Loader,
    n: usize,
    threads: usize,
    max_passes: u32,
    results: &Results,
    sample: impl Fn(&Launch, usize) -> Option<[f32; 4]> + Sync,
) -> Result<u32, CliError> {
    // None: every query (the first pass); then the indices still pending, in order.
    let mut pending: Option<Vec<u32>> = None;
    let (mut passes, mut stalled) = (0u32, 0u32);
    loop {
        let n = pending.as_ref().map_or(n, Vec::len);
        if n == 0 {
            return Ok(passes);
        }
        if passes == max_passes {
            return Err(CliError::Demandtex(format!(
                "multipass replay: {n} queries still not resident after {max_passes} passes"
            )));
        }
        passes += 1;
        let launch = loader.launch_prepare();
        let index = |k: usize| pending.as_ref().map_or(k, |p| p[k] as usize);
        let still: Vec<Vec<u32>> = for_each_chunk(n, threads, |first, end| {
            let mut missed = Vec::new();
            for k in first..end {
                let i = index(k);
                match sample(&launch, i) {
                    Some(v) => results.set(i, v),
                    None => missed.push(i as u32),
                }
            }
            missed
        });
        loader.process_requests(launch).wait();
        let next: Vec<u32> = still.concat();
        stalled = if next.len() == n { stalled + 1 } else { 0 };
        if stalled == STALLED_PASSES {
            return Err(CliError::Demandtex(format!(
                "multipass replay: {n} pending queries made no progress in {STALLED_PASSES} \
                 passes (the cache is too small for them at once; use a larger --cache-mb \
                 or the blocking mode)"
            )));
        }
        pending = Some(next);
    }
}

/// Replay `prepared` on `threads` sampling threads (and as many fill threads) with a budget
/// of `budget` bytes, in at most `args.max_passes` passes.
pub(crate) fn replay(
    prepared: &Prepared,
    threads: usize,
    budget: u64,
    args: &ReplayArgs,
) -> Result<Replayed, CliError> {
    let loader = loader(threads, budget, args)?;
    let queries = &prepared.queries;
    let results = Results::new(queries.len());
    let options = SampleOptions::default();

    let start = Instant::now();
    let ids = prepared
        .paths
        .iter()
        // The format by the file's magic, as the blocking cache's `texture_for_path` does.
        .map(|p| loader.create_texture(file_source(p), TextureDesc::default()))
        .collect::<Result<Vec<TextureId>, _>>()?;
    let passes = run_passes(
        &loader,
        queries.len(),
        threads,
        args.max_passes,
        &results,
        |l, i| {
            let q = &queries[i];
            let s = l.tex2d_grad(ids[q.texture as usize], q.s, q.t, q.ddx, q.ddy, &options);
            s.resident.then_some(s.value)
        },
    )?;
    let seconds = start.elapsed().as_secs_f64();

    super::report_texture_errors(&loader, &ids, &prepared.paths);
    let report = Report::from_stats(queries.len(), seconds, &loader.stats(), 0, passes);
    let two = super::two_channel(&loader, &ids);
    Ok((report, results.into_floats(), two))
}
