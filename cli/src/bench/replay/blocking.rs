//! Blocking replay: the queries through a [`TextureCache`]; a miss reads its tiles in the
//! calling thread.

use super::{for_each_chunk, Prepared, Replayed, Report, Results};
use crate::error::CliError;
use demandtex::{LoaderOptions, SampleOptions, TextureCache, TextureDesc, TextureId};
use std::time::Instant;

/// Replay `prepared` on `threads` threads through a cache of `budget` bytes.
pub(crate) fn replay(
    prepared: &Prepared,
    threads: usize,
    budget: u64,
) -> Result<Replayed, CliError> {
    let cache = TextureCache::new(LoaderOptions {
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
        .map(|p| cache.texture_for_path(p, TextureDesc::default()))
        .collect::<Result<Vec<TextureId>, _>>()?;
    let non_resident: u64 = for_each_chunk(queries.len(), threads, |first, end| {
        let mut misses = 0u64;
        for (i, q) in queries[first..end].iter().enumerate() {
            let s = cache.tex2d_grad(ids[q.texture as usize], q.s, q.t, q.ddx, q.ddy, &options);
            misses += u64::from(!s.resident);
            results.set(first + i, s.value);
        }
        misses
    })
    .into_iter()
    .sum();
    let seconds = start.elapsed().as_secs_f64();

    let stats = cache.stats();
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
        non_resident,
        passes: 1,
    };
    for (i, id) in ids.iter().enumerate() {
        if let Some(e) = cache.texture_error(*id) {
            eprintln!(
                "bench replay: texture {i} ({}): {e}",
                prepared.paths[i].display()
            );
        }
    }
    let two = super::two_channel(cache.loader(), &ids);
    Ok((report, results.into_floats(), two))
}
