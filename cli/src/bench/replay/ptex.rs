//! Replay of a `.dtxp` Ptex query trace (`shared/bench/QUERIES.md`, "Ptex query traces"):
//! each query is core's [`ptex_sample`](demandtex::sampling::ptex::ptex_sample) with the
//! reference `PtexFilter`'s options for the chosen filter (lerp on, sharpness 0, edge
//! blending on; files are never premultiplied), through a [`TextureCache`] (blocking: a
//! miss fills its pages in the calling thread) or a [`Loader`] (multi-pass).
//!
//! Before the timed replay every file's header is read once to check that each query's
//! face exists (the reference replayer does the same); the timed replay then registers the
//! files (header, face table and constants read again) and looks everything up.
//!
//! Results: RGBA as f32; 1 and 2 channels give (c0, c0, c0, 1), 3 channels an alpha of 1.
//!
//! Figures: `bytes_read` is the texel bytes of the units decoded (a blocking cache decodes
//! units as lookups meet them; a multi-pass loader whole pages), `tiles_read` the pages
//! filled, `file_bytes_read` the compressed bytes read from the files.
//!
//! [`TextureCache`]: demandtex::TextureCache
//! [`Loader`]: demandtex::Loader

use super::{blocking, multipass, Mode, Prepared, ReplayArgs, Report, Results};
use crate::bench::trace::PtexQuery;
use crate::error::CliError;
use demandtex::ptex::{PtexLookup, PtexTexture};
use demandtex::sampling::ptex::{PtexFilterOptions, PtexFilterType, PtexSampled};
use demandtex::sources::ptex::PtexFile;
use demandtex::{Engine, TextureCache};
use std::time::Instant;

/// The filters a `.dtxp` trace is replayed with (QUERIES.md).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtexTraceFilter {
    /// The level-0 texel containing (u, v); the footprint is ignored.
    Point,
    /// Bilinear in the level the footprint picks, across face edges.
    Bilinear,
    /// Box filter over the footprint, across face edges.
    Box,
    /// Separable Gaussian (width 4), blended towards the next level (`lerp`).
    Gaussian,
    /// General cubic at sharpness 0 (the reference's default options), with `lerp`.
    Bicubic,
    /// Cubic B-spline, with `lerp`.
    Bspline,
    /// Catmull-Rom, with `lerp`.
    Catmullrom,
    /// Mitchell, with `lerp`.
    Mitchell,
}

impl PtexTraceFilter {
    /// The filter's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PtexTraceFilter::Point => "point",
            PtexTraceFilter::Bilinear => "bilinear",
            PtexTraceFilter::Box => "box",
            PtexTraceFilter::Gaussian => "gaussian",
            PtexTraceFilter::Bicubic => "bicubic",
            PtexTraceFilter::Bspline => "bspline",
            PtexTraceFilter::Catmullrom => "catmullrom",
            PtexTraceFilter::Mitchell => "mitchell",
        }
    }

    /// QUERIES.md's options: the reference `PtexFilter::Options` with lerp on, sharpness
    /// 0 and edge blending on.
    pub fn options(self) -> PtexFilterOptions {
        PtexFilterOptions {
            filter: match self {
                PtexTraceFilter::Point => PtexFilterType::Point,
                PtexTraceFilter::Bilinear => PtexFilterType::Bilinear,
                PtexTraceFilter::Box => PtexFilterType::Box,
                PtexTraceFilter::Gaussian => PtexFilterType::Gaussian,
                PtexTraceFilter::Bicubic => PtexFilterType::Bicubic,
                PtexTraceFilter::Bspline => PtexFilterType::BSpline,
                PtexTraceFilter::Catmullrom => PtexFilterType::CatmullRom,
                PtexTraceFilter::Mitchell => PtexFilterType::Mitchell,
            },
            lerp: true,
            sharpness: 0.0,
            noedgeblend: false,
            ..PtexFilterOptions::default()
        }
    }
}

/// QUERIES.md's channel rule: the first `channels` values of `v` as RGBA.
pub(crate) fn to_rgba(v: &[f32; 4], channels: usize) -> [f32; 4] {
    match channels {
        0 => [0.0, 0.0, 0.0, 1.0],
        1 | 2 => [v[0], v[0], v[0], 1.0],
        3 => [v[0], v[1], v[2], 1.0],
        _ => *v,
    }
}

/// Read every file's header and check each query's face; returns each file's channels
/// (at most 4 are filtered).
fn check_faces(prepared: &Prepared<PtexQuery>) -> Result<Vec<usize>, CliError> {
    let mut faces = Vec::with_capacity(prepared.paths.len());
    let mut channels = Vec::with_capacity(prepared.paths.len());
    for (i, path) in prepared.paths.iter().enumerate() {
        let file =
            PtexFile::open(path).map_err(|e| CliError::Demandtex(format!("texture {i}: {e}")))?;
        faces.push(file.num_faces() as u64);
        channels.push(file.num_channels().min(4));
    }
    if let Some((k, q)) = prepared
        .queries
        .iter()
        .enumerate()
        .find(|(_, q)| u64::from(q.face) >= faces[q.texture as usize])
    {
        return Err(CliError::Demandtex(format!(
            "query {k} names face {} of texture {} ({}), which has {} faces",
            q.face,
            q.texture,
            prepared.paths[q.texture as usize].display(),
            faces[q.texture as usize]
        )));
    }
    Ok(channels)
}

/// The report with the Ptex textures' own figures: texel bytes and units decoded, file
/// bytes read.
fn with_read_stats(report: Report, textures: &[PtexTexture], engine: &Engine) -> Report {
    let (mut units, mut bytes, mut file) = (0, 0, 0);
    for t in textures.iter().filter_map(PtexTexture::pages_if_parsed) {
        let s = t.read_stats();
        units += s.units_decoded;
        bytes += s.unit_bytes_decoded;
        file += s.file_bytes_read;
    }
    Report {
        bytes_read: bytes,
        file_bytes_read: Some(file),
        units_decoded: Some(units),
        decode_cache_bytes: Some(engine.ptex_decode_cache().capacity() as u64),
        ..report
    }
}

/// Blocking lookups of `queries` through `cache` with [`TextureCache::ptex_sample_batch`],
/// each thread's run of queries ([`blocking::run_batches`]) in one call; returns how many were
/// not resident. A query filters its file's first `channels` (at most 4) channels, as a
/// call per query does.
fn batched(
    cache: &TextureCache,
    textures: &[PtexTexture],
    queries: &[PtexQuery],
    channels: &[usize],
    options: &PtexFilterOptions,
    threads: usize,
    results: &Results,
) -> Result<u64, CliError> {
    const STRIDE: usize = 4;
    blocking::run_batches(queries.len(), threads, |first, end| {
        let chunk = &queries[first..end];
        let lookups: Vec<PtexLookup<'_>> = chunk
            .iter()
            .map(|q| PtexLookup {
                texture: &textures[q.texture as usize],
                face: q.face,
                uv: q.uv,
                d: [q.d1[0], q.d1[1], q.d2[0], q.d2[1]],
            })
            .collect();
        let mut out = vec![0.0f32; chunk.len() * STRIDE];
        let mut sampled = vec![PtexSampled::default(); chunk.len()];
        cache.ptex_sample_batch(&lookups, options, STRIDE, &mut out, &mut sampled)?;
        let mut non_resident = 0u64;
        for (i, q) in chunk.iter().enumerate() {
            let nch = channels[q.texture as usize];
            let mut v = [0.0f32; 4];
            v[..nch].copy_from_slice(&out[i * STRIDE..i * STRIDE + nch]);
            non_resident += u64::from(!sampled[i].resident);
            results.set(first + i, to_rgba(&v, nch));
        }
        Ok(non_resident)
    })
}

/// Replay `prepared` with `filter` on `threads` threads within `budget` bytes, in the
/// mode `args` asks for. Returns the figures (checksum left at 0) and the RGBA results.
pub(crate) fn replay(
    prepared: &Prepared<PtexQuery>,
    args: &ReplayArgs,
    threads: usize,
    budget: u64,
    filter: PtexTraceFilter,
) -> Result<(Report, Vec<[f32; 4]>), CliError> {
    if let Some(mb) = args.decode_cache_mb {
        demandtex::sources::ptex::set_decode_cache_bytes((mb << 20) as usize);
    }
    let channels = check_faces(prepared)?;
    let options = filter.options();
    let queries = &prepared.queries;
    let results = Results::new(queries.len());
    let lookup = |q: &PtexQuery, sample: &dyn Fn(&mut [f32]) -> bool| {
        let mut v = [0.0f32; 4];
        let nch = channels[q.texture as usize];
        let resident = sample(&mut v[..nch]);
        (to_rgba(&v, nch), resident)
    };
    let create = |create: &dyn Fn(&std::path::Path) -> demandtex::Result<PtexTexture>| {
        prepared
            .paths
            .iter()
            .map(|p| create(p))
            .collect::<Result<Vec<PtexTexture>, _>>()
    };
    match args.mode {
        Mode::Blocking => {
            let cache = blocking::cache(threads, budget, args)?;
            let start = Instant::now();
            let textures = create(&|p| cache.create_ptex_texture(p))?;
            let non_resident = if args.one_by_one {
                blocking::run_lookups(queries.len(), threads, &results, |i| {
                    let q = &queries[i];
                    let tex = &textures[q.texture as usize];
                    lookup(q, &|out| {
                        let [u, v] = q.uv;
                        let (d1, d2) = (q.d1, q.d2);
                        cache
                            .ptex_sample(
                                tex, q.face, u, v, d1[0], d1[1], d2[0], d2[1], &options, out,
                            )
                            .resident
                    })
                })
            } else {
                batched(
                    &cache, &textures, queries, &channels, &options, threads, &results,
                )?
            };
            let seconds = start.elapsed().as_secs_f64();
            let stats = cache.stats();
            let report = with_read_stats(
                Report::from_stats(queries.len(), seconds, &stats, non_resident, 1),
                &textures,
                cache.loader().engine(),
            );
            let ids: Vec<_> = textures.iter().map(PtexTexture::id).collect();
            super::report_texture_errors(cache.loader(), &ids, &prepared.paths);
            Ok((report, results.into_floats()))
        }
        Mode::Multipass => {
            let loader = multipass::loader(threads, budget, args)?;
            let start = Instant::now();
            let textures = create(&|p| loader.create_ptex_texture(p))?;
            let n = queries.len();
            let passes = multipass::run_passes(
                &loader,
                n,
                threads,
                args.max_passes,
                &results,
                |launch, i| {
                    let q = &queries[i];
                    let tex = &textures[q.texture as usize];
                    let (value, resident) = lookup(q, &|out| {
                        let [u, v] = q.uv;
                        let (d1, d2) = (q.d1, q.d2);
                        launch
                            .ptex_sample(
                                tex, q.face, u, v, d1[0], d1[1], d2[0], d2[1], &options, out,
                            )
                            .resident
                    });
                    resident.then_some(value)
                },
            )?;
            let seconds = start.elapsed().as_secs_f64();
            let report = with_read_stats(
                Report::from_stats(n, seconds, &loader.stats(), 0, passes),
                &textures,
                loader.engine(),
            );
            let ids: Vec<_> = textures.iter().map(PtexTexture::id).collect();
            super::report_texture_errors(&loader, &ids, &prepared.paths);
            Ok((report, results.into_floats()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_rule_follows_queries_md() {
        let v = [0.1, 0.2, 0.3, 0.4];
        assert_eq!(to_rgba(&v, 1), [0.1, 0.1, 0.1, 1.0]);
        assert_eq!(to_rgba(&v, 2), [0.1, 0.1, 0.1, 1.0]);
        assert_eq!(to_rgba(&v, 3), [0.1, 0.2, 0.3, 1.0]);
        assert_eq!(to_rgba(&v, 4), v);
    }

    #[test]
    fn filters_use_the_reference_options() {
        for f in [
            PtexTraceFilter::Point,
            PtexTraceFilter::Bilinear,
            PtexTraceFilter::Box,
            PtexTraceFilter::Gaussian,
            PtexTraceFilter::Bicubic,
            PtexTraceFilter::Bspline,
            PtexTraceFilter::Catmullrom,
            PtexTraceFilter::Mitchell,
        ] {
            let o = f.options();
            assert!(o.lerp && !o.noedgeblend && o.sharpness == 0.0 && o.width == 1.0);
        }
        assert_eq!(
            PtexTraceFilter::Bilinear.options().filter,
            PtexFilterType::Bilinear
        );
        assert_eq!(
            PtexTraceFilter::Catmullrom.options().filter,
            PtexFilterType::CatmullRom
        );
    }
}
