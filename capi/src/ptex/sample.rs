//! Ptex lookups through the C ABI: multi-pass on a launch, blocking on a cache, both over
//! core's `ptex_sample` (this module only checks the arguments and copies the values).

use super::{check_face, DtexPtexFilterOptions, DtexPtexSampled};
use crate::boundary::slice_in;
use crate::boundary::{entry, optional_in, slice_out, Out};
use crate::handles::{DtexCache, DtexLaunch};
use crate::status::{ApiError, ApiResult, DtexStatus};
use crate::{cache, launch};
use engine::ptex::{PtexLookup, PtexTexture};
use engine::sampling::ptex::{PtexFilterOptions, PtexSampled};
use std::collections::HashMap;

/// The arguments of one lookup, checked: the values buffer, the result, the options.
struct Call {
    values: crate::boundary::OutSlice<f32>,
    result: Option<Out<DtexPtexSampled>>,
    options: PtexFilterOptions,
}

/// Check the pointers of a lookup.
///
/// # Safety
/// `options` is NULL or points to a `DtexPtexFilterOptions`; `out` is NULL or points to
/// `channels` writable floats; `out_result` is NULL or writable.
unsafe fn call(
    options: *const DtexPtexFilterOptions,
    out: *mut f32,
    channels: usize,
    out_result: *mut DtexPtexSampled,
) -> ApiResult<Call> {
    // SAFETY: forwarded contract.
    let (values, result, options) = unsafe {
        (
            slice_out(out, channels, "out")?,
            Out::optional(out_result),
            optional_in(options)?,
        )
    };
    Ok(Call {
        values,
        result,
        options: DtexPtexFilterOptions::resolve(options)?,
    })
}

/// Run `sample` on a zeroed buffer of `call.values.len()` floats (on the stack when
/// small), copy all of it to the caller (what core did not write stays 0), report the
/// result.
fn finish(mut call: Call, sample: impl FnOnce(&mut [f32]) -> PtexSampled) {
    let n = call.values.len();
    let mut small = [0f32; 16];
    let mut large = Vec::new();
    let buf: &mut [f32] = if n <= small.len() {
        &mut small[..n]
    } else {
        large.resize(n, 0.0);
        &mut large
    };
    let s = sample(buf);
    for (i, &v) in buf.iter().enumerate() {
        call.values.set(i, v);
    }
    if let Some(r) = call.result {
        r.write(s.into());
    }
}

/// Filter the Ptex texture `texture` at (`u`, `v`) of face `face` over the footprint
/// (`dudx`, `dvdx`), (`dudy`, `dvdy`) in face uv, with the semantics of the reference
/// library's `PtexFilter` (and the stochastic two-level filter): see
/// `DtexPtexFilterOptions` and docs/PTEX.md. Writes `out_result->channels` =
/// `min(channels, num_channels - first_channel)` normalised values (u8 / 255, u16 /
/// 65535) to `out`, and 0 to the rest of its `channels` floats. Multi-pass: a unit the filter needs that is not resident records a
/// request for its page, and the values are the face's constant colour with
/// `out_result->resident` 0 (status OK), exactly as core's `Launch::ptex_sample`. Before
/// the texture is opened (its file parsed: by the `dtex_loader_process_requests` after
/// its first lookups), the values are zeros, `out_result->channels` 0 and `resident` 0;
/// a texture whose file failed to parse gives zeros, `resident` 1. A non-finite
/// coordinate or footprint gives zeros, `out_result->channels` 0 (reported resident).
///
/// Errors: INVALID_HANDLE; UNKNOWN_TEXTURE (not a Ptex texture of the launch's loader);
/// INVALID_ARGUMENT (NULL `out` with `channels > 0`, a face id the texture lacks, a bad
/// filter enum, boolean or `struct_size`). Nothing is written on error. Ownership: the
/// buffers are the caller's, used only during the call. Thread-safety: many threads may
/// sample one launch at once.
///
/// # Safety
/// `options` is NULL or points to a `DtexPtexFilterOptions`; `out` is NULL or points to
/// `channels` writable floats; `out_result` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_launch_ptex_sample(
    launch: DtexLaunch,
    texture: u32,
    face: u32,
    u: f32,
    v: f32,
    dudx: f32,
    dvdx: f32,
    dudy: f32,
    dvdy: f32,
    options: *const DtexPtexFilterOptions,
    out: *mut f32,
    channels: usize,
    out_result: *mut DtexPtexSampled,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let call = unsafe { call(options, out, channels, out_result) }?;
        let l = launch::get(launch)?;
        let tex = l.loader.ptex.get(texture)?;
        check_face(&tex, face)?;
        let o = call.options;
        finish(call, |buf| {
            l.launch
                .ptex_sample(&tex, face, u, v, dudx, dvdx, dudy, dvdy, &o, buf)
        });
        Ok(())
    })
}

/// `dtex_launch_ptex_sample` on a cache, blocking: the pages the footprint needs are
/// loaded in this thread first, so `out_result->resident` is 0 only when the budget
/// cannot hold the footprint or a read failed (the values are then the face's constant
/// colour), exactly as core's `TextureCache::ptex_sample`.
///
/// Errors: as `dtex_launch_ptex_sample` (UNKNOWN_TEXTURE: not a Ptex texture of this
/// cache). Ownership: the buffers are the caller's, used only during the call.
/// Thread-safety: any number of threads at once.
///
/// # Safety
/// As `dtex_launch_ptex_sample`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_cache_ptex_sample(
    cache: DtexCache,
    texture: u32,
    face: u32,
    u: f32,
    v: f32,
    dudx: f32,
    dvdx: f32,
    dudy: f32,
    dvdy: f32,
    options: *const DtexPtexFilterOptions,
    out: *mut f32,
    channels: usize,
    out_result: *mut DtexPtexSampled,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let call = unsafe { call(options, out, channels, out_result) }?;
        let c = cache::get(cache)?;
        let tex = c.ptex.get(texture)?;
        check_face(&tex, face)?;
        let o = call.options;
        finish(call, |buf| {
            c.cache
                .ptex_sample(&tex, face, u, v, dudx, dvdx, dudy, dvdy, &o, buf)
        });
        Ok(())
    })
}

/// One lookup of `dtex_cache_ptex_sample_batch`: the arguments of `dtex_cache_ptex_sample`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DtexPtexQuery {
    /// A Ptex texture of the cache.
    pub texture: u32,
    /// The face.
    pub face: u32,
    /// u in the face.
    pub u: f32,
    /// v in the face.
    pub v: f32,
    /// du per pixel step in x.
    pub dudx: f32,
    /// dv per pixel step in x.
    pub dvdx: f32,
    /// du per pixel step in y.
    pub dudy: f32,
    /// dv per pixel step in y.
    pub dvdy: f32,
}

/// `count` blocking Ptex lookups in one call: query `i` writes `channels` floats at
/// `out + i * channels` and its result to `out_results[i]` (NULL: not reported), what
/// `dtex_cache_ptex_sample` gives it alone with the same `options`. Faster than a call per
/// query (core's `TextureCache::ptex_sample_batch`: a chunk of queries shares one pinned
/// view, consecutive queries of one texture share its sampler and the unit they located
/// last): renderers should pass their shading batches whole.
///
/// Errors: INVALID_HANDLE; UNKNOWN_TEXTURE (a query's texture is not a Ptex texture of
/// this cache); INVALID_ARGUMENT (NULL `queries` or `out` with work to do, `count ×
/// channels` overflowing, a face id a query's texture lacks, bad options). Every query is
/// checked before any is looked up; nothing is written on error. Ownership: the arrays
/// are the caller's, used only during the call. Thread-safety: any number of threads.
///
/// # Safety
/// `queries` points to `count` readable queries; `out` to `count * channels` writable
/// floats; `out_results` is NULL or points to `count` writable results; `options` is NULL
/// or points to a `DtexPtexFilterOptions`. The arrays must not overlap.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_ptex_sample_batch(
    cache: DtexCache,
    queries: *const DtexPtexQuery,
    count: usize,
    options: *const DtexPtexFilterOptions,
    out: *mut f32,
    channels: usize,
    out_results: *mut DtexPtexSampled,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let call = unsafe { batch_call(queries, count, options, out, channels, out_results) }?;
        let c = cache::get(cache)?;
        run_batch(call, &c.ptex, |l, o, v, s| {
            c.cache.ptex_sample_batch(l, o, channels, v, s)
        })
    })
}

/// `dtex_cache_ptex_sample_batch` on a launch, multi-pass: each query as
/// `dtex_launch_ptex_sample` gives it (a missing unit records a request for its page; the
/// values are the face's constant colour, `resident` 0), consecutive queries of one
/// texture sharing its sampler and the unit they located last (core's
/// `Launch::ptex_sample_batch`).
///
/// Errors: as `dtex_cache_ptex_sample_batch` (UNKNOWN_TEXTURE: not a Ptex texture of the
/// launch's loader). Ownership: the arrays are the caller's, used only during the call.
/// Thread-safety: many threads may sample one launch at once.
///
/// # Safety
/// As `dtex_cache_ptex_sample_batch`.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_ptex_sample_batch(
    launch: DtexLaunch,
    queries: *const DtexPtexQuery,
    count: usize,
    options: *const DtexPtexFilterOptions,
    out: *mut f32,
    channels: usize,
    out_results: *mut DtexPtexSampled,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let call = unsafe { batch_call(queries, count, options, out, channels, out_results) }?;
        let l = launch::get(launch)?;
        run_batch(call, &l.loader.ptex, |q, o, v, s| {
            l.launch.ptex_sample_batch(q, o, channels, v, s)
        })
    })
}

/// The arguments of a batch, checked.
struct BatchCall<'a> {
    queries: &'a [DtexPtexQuery],
    channels: usize,
    values: crate::boundary::OutSlice<f32>,
    results: Option<crate::boundary::OutSlice<DtexPtexSampled>>,
    options: PtexFilterOptions,
}

/// Check the pointers of a batch.
///
/// # Safety
/// As `dtex_cache_ptex_sample_batch`.
unsafe fn batch_call<'a>(
    queries: *const DtexPtexQuery,
    count: usize,
    options: *const DtexPtexFilterOptions,
    out: *mut f32,
    channels: usize,
    out_results: *mut DtexPtexSampled,
) -> ApiResult<BatchCall<'a>> {
    let total = count.checked_mul(channels).ok_or_else(|| {
        ApiError::invalid_argument(format!("{count} queries × {channels} channels"))
    })?;
    // SAFETY: forwarded contract.
    unsafe {
        Ok(BatchCall {
            queries: slice_in(queries, count, "queries")?,
            channels,
            values: slice_out(out, total, "out")?,
            results: match out_results.is_null() {
                true => None,
                false => Some(slice_out(out_results, count, "out_results")?),
            },
            options: DtexPtexFilterOptions::resolve(optional_in(options)?)?,
        })
    }
}

/// Resolve every query's texture in `table` and check its face (before anything is looked
/// up), then run core's batch `sample(lookups, options, values, results)` a chunk at a
/// time and copy the values and results out.
fn run_batch(
    mut call: BatchCall<'_>,
    table: &super::PtexTable,
    sample: impl Fn(
        &[PtexLookup<'_>],
        &PtexFilterOptions,
        &mut [f32],
        &mut [PtexSampled],
    ) -> engine::Result<()>,
) -> ApiResult<()> {
    // Each distinct texture looked up once, every face checked.
    let mut textures: Vec<PtexTexture> = Vec::new();
    let mut index: HashMap<u32, usize> = HashMap::new();
    let mut slot = Vec::with_capacity(call.queries.len());
    for q in call.queries {
        let at = match index.get(&q.texture) {
            Some(&at) => at,
            None => {
                textures.push(table.get(q.texture)?);
                index.insert(q.texture, textures.len() - 1);
                textures.len() - 1
            }
        };
        check_face(&textures[at], q.face)?;
        slot.push(at);
    }
    const CHUNK: usize = 256;
    let channels = call.channels;
    let mut buf = Vec::new();
    let mut sampled = [PtexSampled::default(); CHUNK];
    for (k, chunk) in call.queries.chunks(CHUNK).enumerate() {
        let first = k * CHUNK;
        let lookups: Vec<PtexLookup<'_>> = chunk
            .iter()
            .zip(&slot[first..])
            .map(|(q, &at)| PtexLookup {
                texture: &textures[at],
                face: q.face,
                uv: [q.u, q.v],
                d: [q.dudx, q.dvdx, q.dudy, q.dvdy],
            })
            .collect();
        let n = chunk.len();
        buf.clear();
        buf.resize(n * channels, 0.0f32);
        sample(&lookups, &call.options, &mut buf, &mut sampled[..n])?;
        for (i, &v) in buf.iter().enumerate() {
            call.values.set(first * channels + i, v);
        }
        if let Some(r) = call.results.as_mut() {
            for (i, s) in sampled[..n].iter().enumerate() {
                r.set(first + i, (*s).into());
            }
        }
    }
    Ok(())
}
