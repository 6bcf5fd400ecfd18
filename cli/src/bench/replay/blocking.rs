//! Blocking replay: the queries through a [`TextureCache`]; a miss reads its tiles in the
//! calling thread.

use super::{for_each_chunk, Prepared, ReplayArgs, Replayed, Report, Results};
use crate::error::CliError;
use demandtex::sampling::Sample;
use demandtex::{GradLookup, LoaderOptions, SampleOptions, TextureCache, TextureDesc, TextureId};
use std::time::Instant;

/// The cache a blocking replay runs on: `budget` bytes, `threads` fill threads, pages as
/// `args` ask ([`ReplayArgs::page_options`]).
pub(crate) fn cache(
    threads: usize,
    budget: u64,
    args: &ReplayArgs,
) -> Result<TextureCache, CliError> {
    Ok(TextureCache::new(args.page_options(LoaderOptions {
        max_texture_memory: budget,
        fill_threads: threads,
        ..Default::default()
    }))?)
}

/// Look up `n` queries on `threads` threads (`sample(i)` is query `i`'s result and whether
/// it was resident), storing the results; returns how many were not resident.
pub(crate) fn run_lookups(
    n: usize,
    threads: usize,
    results: &Results,
    sample: impl Fn(usize) -> ([f32; 4], bool) + Sync,
) -> u64 {
    for_each_chunk(n, threads, |first, end| {
        let mut misses = 0u64;
        for i in first..end {
            let (value, resident) = sample(i);
            misses += u64::from(!resident);
            results.set(i, value);
        }
        misses
    })
    .into_iter()
    .sum()
}

/// Look up `n` queries on `threads` threads a run at a time: `batch(first, end)` looks up
/// queries `first..end` in one call, stores their results and returns how many were not
/// resident; returns the total, or the first error.
pub(crate) fn run_batches(
    n: usize,
    threads: usize,
    batch: impl Fn(usize, usize) -> demandtex::Result<u64> + Sync,
) -> Result<u64, CliError> {
    let per_run: demandtex::Result<u64> = for_each_chunk(n, threads, batch).into_iter().sum();
    Ok(per_run?)
}

/// Replay `prepared` on `threads` threads through a cache of `budget` bytes (pages as
/// `args` ask).
pub(crate) fn replay(
    prepared: &Prepared,
    threads: usize,
    budget: u64,
    args: &ReplayArgs,
) -> Result<Replayed, CliError> {
    let cache = cache(threads, budget, args)?;
    let queries = &prepared.queries;
    let results = Results::new(queries.len());
    let options = SampleOptions::default();

    let start = Instant::now();
    let ids = prepared
        .paths
        .iter()
        .map(|p| cache.texture_for_path(p, TextureDesc::default()))
        .collect::<Result<Vec<TextureId>, _>>()?;
    // ∂/∂s and ∂/∂t of every result, with `--derivatives`.
    let derivatives = args
        .derivatives
        .as_ref()
        .map(|_| [Results::new(queries.len()), Results::new(queries.len())]);
    let non_resident = if let Some([ds, dt]) = &derivatives {
        run_lookups(queries.len(), threads, &results, |i| {
            let q = &queries[i];
            let id = ids[q.texture as usize];
            let d = cache.tex2d_grad_with_derivatives(id, q.s, q.t, q.ddx, q.ddy, &options);
            ds.set(i, d.ds);
            dt.set(i, d.dt);
            (d.sample.value, d.sample.resident)
        })
    } else if args.one_by_one {
        run_lookups(queries.len(), threads, &results, |i| {
            let q = &queries[i];
            let s = cache.tex2d_grad(ids[q.texture as usize], q.s, q.t, q.ddx, q.ddy, &options);
            (s.value, s.resident)
        })
    } else {
        // Each thread's run of queries in one `tex2d_grad_batch`.
        run_batches(queries.len(), threads, |first, end| {
            let lookups: Vec<GradLookup> = queries[first..end]
                .iter()
                .map(|q| GradLookup {
                    texture: ids[q.texture as usize],
                    s: q.s,
                    t: q.t,
                    ddx: q.ddx,
                    ddy: q.ddy,
                })
                .collect();
            let mut out = vec![Sample::new([0.0; 4], false); lookups.len()];
            cache.tex2d_grad_batch(&lookups, &options, &mut out)?;
            for (i, s) in out.iter().enumerate() {
                results.set(first + i, s.value);
            }
            Ok(out.iter().filter(|s| !s.resident).count() as u64)
        })?
    };
    let seconds = start.elapsed().as_secs_f64();

    let report = Report::from_stats(queries.len(), seconds, &cache.stats(), non_resident, 1);
    super::report_texture_errors(cache.loader(), &ids, &prepared.paths);
    let two = super::two_channel(cache.loader(), &ids);
    if let (Some(path), Some(derivatives)) = (&args.derivatives, derivatives) {
        // The results' channel rule, applied to their derivatives.
        let [ds, dt] = derivatives.map(|d| {
            let mut d = d.into_floats();
            super::apply_channel_rule(&mut d, queries, &two);
            d
        });
        let pairs: Vec<[f32; 8]> = ds
            .iter()
            .zip(&dt)
            .map(|(ds, dt)| std::array::from_fn(|k| if k < 4 { ds[k] } else { dt[k - 4] }))
            .collect();
        super::write_results(path, &pairs)?;
    }
    Ok((report, results.into_floats(), two))
}
