//! The blocking texture cache: OIIO-style lookups that load what they miss in the calling
//! thread, on the same engine as the multi-pass loader.

use crate::boundary::{c_str, entry, optional_in, slice_in, slice_out, versioned_out, Out};
use crate::handles::{into_unique, DtexCache, Registry};
use crate::options::{DtexLoaderOptions, DtexTextureDesc};
use crate::ptex::PtexTable;
use crate::sampling::{
    sample_options, DtexGradQuery, DtexSample, DtexSampleDerivatives, DtexSampleOptions,
};
use crate::stats::DtexStats;
use crate::status::{ApiResult, DtexStatus};
use crate::textures::{texel_type_code, DtexImageInfo};
use engine::sampling::Sample;
use engine::{GradLookup, TextureCache, TextureId};
use std::ffi::c_char;
use std::sync::Arc;

/// The live caches.
pub(crate) static CACHES: Registry<CacheEntry> = Registry::new(4, "cache");

/// A cache as the C API holds it.
pub struct CacheEntry {
    /// The engine's cache.
    pub cache: TextureCache,
    /// Its Ptex textures (`dtex_cache_ptex_create`).
    pub ptex: PtexTable,
}

impl std::ops::Deref for CacheEntry {
    type Target = TextureCache;

    fn deref(&self) -> &TextureCache {
        &self.cache
    }
}

/// The cache of `handle`, or `DTEX_STATUS_INVALID_HANDLE`.
#[inline]
pub(crate) fn get(handle: DtexCache) -> ApiResult<Arc<CacheEntry>> {
    CACHES.get(handle.id)
}

/// Create a blocking cache with its own engine. `options` NULL means the defaults;
/// `max_texture_memory` is the cache size. Lookups do not use fill threads: `fill_threads`
/// 0 (the default) starts a single one.
///
/// Errors: INVALID_ARGUMENT (NULL `out`, bad options). Ownership: destroy it with
/// `dtex_cache_destroy`. Thread-safety: any thread; the cache may be used from many threads.
///
/// # Safety
/// `options` is NULL or points to a `DtexLoaderOptions`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_create(
    options: *const DtexLoaderOptions,
    out: *mut DtexCache,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: the caller's contract.
        let options = unsafe { DtexLoaderOptions::resolve(options) }?;
        let id = CACHES.insert(Arc::new(CacheEntry {
            cache: TextureCache::new(options)?,
            ptex: PtexTable::default(),
        }))?;
        out.write(DtexCache { id });
        Ok(())
    })
}

/// Destroy a cache (its texture ids mean nothing afterwards). Lookups other threads are
/// making on it finish first.
///
/// Errors: INVALID_HANDLE. Ownership: ends the caller's ownership of the handle; the
/// library releases everything the cache held. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_cache_destroy(cache: DtexCache) -> DtexStatus {
    entry(|| {
        drop(into_unique(CACHES.remove(cache.id)?));
        Ok(())
    })
}

/// The texture of a file (OpenEXR, TIFF/`.tx`, DDS, PNG, JPEG, Radiance HDR, Targa, BMP, by
/// its magic number; Targa by its extension):
/// registered at the first call for `path` (with `desc`; NULL = default), the same id for
/// later calls (which ignore `desc`). The file is opened at its first lookup; a missing or
/// bad file samples its fallback colour.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL pointer, path not UTF-8, bad `desc`);
/// OUT_OF_PAGES. Ownership: the path is copied; the texture belongs to the cache.
/// Thread-safety: any thread.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `desc` is NULL or points to a
/// `DtexTextureDesc`; `out_texture` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_texture_for_path(
    cache: DtexCache,
    path: *const c_char,
    desc: *const DtexTextureDesc,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (all three pointers).
        let (out, path, desc) = unsafe {
            (
                Out::new(out_texture, "out_texture")?,
                c_str(path, "path")?,
                optional_in(desc)?,
            )
        };
        let c = get(cache)?;
        let desc = DtexTextureDesc::resolve(desc, Default::default())?;
        out.write(c.texture_for_path(path, desc)?.0);
        Ok(())
    })
}

/// Sample `texture` at (s, t) with the gradients of (s, t), loading the missing tiles in
/// this thread first (blocking). `resident` is 0 only when the footprint could not be made
/// resident (budget too small for the lookups in flight, a failed read): the value is then
/// the best resident approximation.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `out`, bad options). Ownership:
/// `options` is read during the call; `*out` is the caller's. Thread-safety: any number
/// of threads at once.
///
/// # Safety
/// `options` is NULL or points to a `DtexSampleOptions`; `out` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_cache_tex2d_grad(
    cache: DtexCache,
    texture: u32,
    s: f32,
    t: f32,
    dsdx: f32,
    dtdx: f32,
    dsdy: f32,
    dtdy: f32,
    options: *const DtexSampleOptions,
    out: *mut DtexSample,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let (out, o) = unsafe { (Out::new(out, "out")?, sample_options(options)?) };
        let c = get(cache)?;
        let v = c.tex2d_grad(TextureId(texture), s, t, [dsdx, dtdx], [dsdy, dtdy], &o);
        out.write(v.into());
        Ok(())
    })
}

/// A texture's description, opening its file in this thread if no lookup has yet
/// (blocking, as OpenImageIO's `get_texture_info` answers `resolution`, `channels`,
/// `miplevels` and `averagecolor`): level-0 size, served texel type (`DTEX_TEXEL_*`),
/// served channels (1, 2 or 4: three-channel files are served as RGBA) and mip levels into
/// `*out_info`; if `out_average_color` is not NULL, the texture's average colour into its
/// four floats, as a lookup of the whole texture gives it (one channel: (c, c, c, 1)): the
/// file's hint where it has one (maketx's `oiio:AverageColor` or constant colour), else
/// its 1×1 level, in half precision; four NaNs if that lookup could not be made resident
/// (a budget smaller than the lookups in flight).
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `out_info`); UNKNOWN_TEXTURE (an id
/// this cache never handed out, or an unloaded texture); the texture's failure
/// (SOURCE_ERROR / IO_ERROR / UNSUPPORTED / ..., with the file's message) if its file is
/// missing or cannot be served.
/// Nothing is written on error. Ownership: the outputs are the caller's. Thread-safety:
/// any number of threads at once.
///
/// # Safety
/// `out_info` is NULL or writable as a `DtexImageInfo`; `out_average_color` is NULL or
/// points to four writable floats.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_get_texture_info(
    cache: DtexCache,
    texture: u32,
    out_info: *mut DtexImageInfo,
    out_average_color: *mut f32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (both pointers; the colour is four floats).
        let (out, average) = unsafe {
            (
                Out::new(out_info, "out_info")?,
                Out::optional(out_average_color.cast::<[f32; 4]>()),
            )
        };
        let info = get(cache)?.texture_info(TextureId(texture))?;
        out.write(DtexImageInfo {
            width: info.width,
            height: info.height,
            texel_type: texel_type_code(info.texel_type),
            channels: info.channels,
            num_levels: info.num_levels,
        });
        if let Some(average) = average {
            average.write(info.average_color.unwrap_or([f32::NAN; 4]));
        }
        Ok(())
    })
}

/// `dtex_cache_tex2d_grad` with the derivatives of the value with respect to s and t, as
/// OpenImageIO's `dresultds` / `dresultdt` (see `DtexSampleDerivatives` and
/// `dtex_launch_tex2d_grad_derivatives`). When the footprint could not be made resident
/// and a coarser level stood in, the derivatives are that level's.
///
/// Errors, Ownership, Thread-safety: as `dtex_cache_tex2d_grad`.
///
/// # Safety
/// `options` is NULL or points to a `DtexSampleOptions`; `out` is NULL or points to a
/// writable `DtexSampleDerivatives`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_cache_tex2d_grad_derivatives(
    cache: DtexCache,
    texture: u32,
    s: f32,
    t: f32,
    dsdx: f32,
    dtdx: f32,
    dsdy: f32,
    dtdy: f32,
    options: *const DtexSampleOptions,
    out: *mut DtexSampleDerivatives,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let (out, o) = unsafe { (Out::new(out, "out")?, sample_options(options)?) };
        let c = get(cache)?;
        let (ddx, ddy) = ([dsdx, dtdx], [dsdy, dtdy]);
        let v = c.tex2d_grad_with_derivatives(TextureId(texture), s, t, ddx, ddy, &o);
        out.write(v.into());
        Ok(())
    })
}

/// `dtex_launch_environment` as a blocking lookup: a lat-long environment map sampled in
/// direction `r` with its differentials, every tile it needs read before it returns.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `r`, `drdx`, `drdy` or `out`, an unknown
/// `up_axis`, bad options). Ownership: the arrays and `options` are read during the call;
/// `*out` is the caller's. Thread-safety: any number of threads at once.
///
/// # Safety
/// `r`, `drdx` and `drdy` are NULL or point to three readable floats each; `options` is
/// NULL or points to a `DtexSampleOptions`; `out` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_cache_environment(
    cache: DtexCache,
    texture: u32,
    r: *const f32,
    drdx: *const f32,
    drdy: *const f32,
    up_axis: u32,
    options: *const DtexSampleOptions,
    out: *mut DtexSample,
) -> DtexStatus {
    use crate::sampling::EnvironmentQuery;
    entry(|| {
        // SAFETY: the caller's contract.
        let (out, q) = unsafe {
            (
                Out::new(out, "out")?,
                EnvironmentQuery::new(r, drdx, drdy, up_axis, options)?,
            )
        };
        let c = get(cache)?;
        let v = c.environment(TextureId(texture), q.r, q.drdx, q.drdy, q.up, &q.options);
        out.write(v.into());
        Ok(())
    })
}

/// `count` blocking lookups in one call: `out_samples[i]` is what `dtex_cache_tex2d_grad`
/// gives for `queries[i]`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL arrays with `count > 0`, bad options).
/// Ownership: the arrays are the caller's, used only during the call. Thread-safety: any
/// number of threads at once.
///
/// # Safety
/// `queries` points to `count` readable queries and `out_samples` to `count` writable
/// samples (either may be NULL if `count` is 0); they must not overlap.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_tex2d_grad_batch(
    cache: DtexCache,
    queries: *const DtexGradQuery,
    count: usize,
    options: *const DtexSampleOptions,
    out_samples: *mut DtexSample,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let (queries, mut samples, o) = unsafe {
            (
                slice_in(queries, count, "queries")?,
                slice_out(out_samples, count, "out_samples")?,
                sample_options(options)?,
            )
        };
        let c = get(cache)?;
        // Core's batch, a chunk at a time (the queries converted on the stack).
        const CHUNK: usize = 256;
        let mut lookups = [GradLookup {
            texture: TextureId(0),
            s: 0.0,
            t: 0.0,
            ddx: [0.0; 2],
            ddy: [0.0; 2],
        }; CHUNK];
        let mut out = [Sample::new([0.0; 4], false); CHUNK];
        for (k, chunk) in queries.chunks(CHUNK).enumerate() {
            for (l, q) in lookups.iter_mut().zip(chunk) {
                *l = GradLookup {
                    texture: TextureId(q.texture),
                    s: q.s,
                    t: q.t,
                    ddx: [q.dsdx, q.dtdx],
                    ddy: [q.dsdy, q.dtdy],
                };
            }
            let n = chunk.len();
            c.tex2d_grad_batch(&lookups[..n], &o, &mut out[..n])?;
            for (i, v) in out[..n].iter().enumerate() {
                samples.set(k * CHUNK + i, (*v).into());
            }
        }
        Ok(())
    })
}

/// Write a statistics snapshot of the cache to `*out` (caller sets `out->struct_size`).
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `out`, bad `struct_size`).
/// Ownership: `*out` is the caller's; nothing is kept. Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or readable and writable as a `DtexStats`.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_get_stats(cache: DtexCache, out: *mut DtexStats) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { versioned_out(out, "out") }?;
        out.write(DtexStats::from_engine(&get(cache)?.stats()));
        Ok(())
    })
}

/// Change the cache size (texture memory budget) in bytes.
///
/// Errors: INVALID_HANDLE; BUDGET_TOO_SMALL (unchanged then). Ownership: nothing is
/// passed. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_cache_set_max_texture_memory(cache: DtexCache, bytes: u64) -> DtexStatus {
    entry(|| {
        get(cache)?.set_max_texture_memory(bytes)?;
        Ok(())
    })
}
