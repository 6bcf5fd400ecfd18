//! Multi-pass replay: each pass samples every pending query through one launch of a
//! [`Loader`]; the launch's requests are then filled, and the queries that were not
//! resident are repeated in the next pass. Every pass, fills included, is timed.

use super::{for_each_chunk, Prepared, Replayed, Report, Results};
use crate::error::CliError;
use demandtex::sources::ExrSource;
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureDesc, TextureId};
use std::sync::Arc;
use std::time::Instant;

/// Passes in a row that may resolve no query before the replay gives up (the cache cannot
/// hold what the pending queries need at once).
const STALLED_PASSES: u32 = 8;

/// Replay `prepared` on `threads` sampling threads (and as many fill threads) with a budget
/// of `budget` bytes, in at most `max_passes` passes.
pub(crate) fn replay(
    prepared: &Prepared,
    threads: usize,
    budget: u64,
    max_passes: u32,
) -> Result<Replayed, CliError> {
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: budget,
        fill_threads: threads,
        ..Default::default()
    })?;
    let queries = &prepared.queries;
    let results = Results::new(queries.len());
    let options = SampleOptions::default();

    let start = Instant::now();
    let ids = prepared
        .paths
        .iter()
        .map(|p| loader.create_texture(Arc::new(ExrSource::new(p)), TextureDesc::default()))
        .collect::<Result<Vec<TextureId>, _>>()?;
    // None: every query (the first pass); then the indices still pending, in order.
    let mut pending: Option<Vec<u32>> = None;
    let (mut passes, mut stalled) = (0u32, 0u32);
    loop {
        let n = pending.as_ref().map_or(queries.len(), Vec::len);
        if n == 0 {
            break;
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
                let q = &queries[i];
                let s =
                    launch.tex2d_grad(ids[q.texture as usize], q.s, q.t, q.ddx, q.ddy, &options);
                if s.resident {
                    results.set(i, s.value);
                } else {
                    missed.push(i as u32);
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
    let seconds = start.elapsed().as_secs_f64();

    let stats = loader.stats();
    for (i, id) in ids.iter().enumerate() {
        if let Some(e) = loader.texture_error(*id) {
            eprintln!(
                "bench replay: texture {i} ({}): {e}",
                prepared.paths[i].display()
            );
        }
    }
    let report = Report {
        lookups: queries.len() as u64,
        seconds,
        tiles_read: stats.tiles_filled,
        mip_tails_read: stats.mip_tails_filled,
        bytes_read: stats.bytes_read,
        peak_resident_bytes: stats.peak_resident_bytes,
        checksum: 0.0,
        failed_textures: stats.failed_textures,
        evictions: stats.evictions,
        non_resident: 0,
        passes: passes as u64,
    };
    let two = super::two_channel(&loader, &ids);
    Ok((report, results.into_floats(), two))
}
