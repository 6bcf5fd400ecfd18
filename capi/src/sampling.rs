//! CPU sampling on a launch (multi-pass mode): single lookups and batches.

use crate::boundary::{entry, optional_in_prefix, slice_in, slice_out, Out, Versioned};
use crate::handles::DtexLaunch;
use crate::launch;
use crate::status::{ApiError, ApiResult, DtexStatus, DTEX_STATUS_INVALID_ARGUMENT};
use engine::ids::UdimId;
use engine::{Sample, SampleOptions, TextureId, UpAxis};

/// Per-lookup options. NULL means all defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DtexSampleOptions {
    /// `sizeof(DtexSampleOptions)`.
    pub struct_size: u32,
    /// Boolean (default 0): on a miss, return the finest coarser level that is resident
    /// and report it resident; the missing pages are still requested.
    pub fallback_to_coarser: u32,
    /// The pixel or sample id of the lookup (default 0): the deterministic seed of
    /// interactive mode's request rejection (lookups with the same key in one launch make
    /// the same decision for a page; the device uses the thread's grid index). Absent
    /// before struct size `DTEX_SAMPLE_OPTIONS_SIZE_0_1_0` (then 0).
    pub request_key: u32,
    /// Boolean (default 0): stochastic two-level point filtering. One texel from each of
    /// the two mip levels around the level of detail (one level where the texture's mip
    /// filter is point), blended by the fraction, instead of the texture's filter; the
    /// footprint is isotropic (the longer gradient). Along each axis the texel is
    /// `floor(coord * size - 0.5 + jitter)`: with `jitter` uniform random in [0, 1), each
    /// texel of the bilinear footprint is picked with its bilinear weight, so the average
    /// over a pixel's samples is the trilinear filter. Was `reserved` (must be 0) before
    /// `jitter`.
    pub stochastic: u32,
    /// The stochastic filter's random numbers for s and t, in [0, 1) (default 0.5, 0.5:
    /// the nearest texel); clamped into [0, 1), NaN means 0.5. Absent before struct size
    /// `DTEX_SAMPLE_OPTIONS_SIZE_REQUEST_KEY` (then 0.5, 0.5).
    pub jitter: [f32; 2],
}

/// `sizeof(DtexSampleOptions)` before `request_key`: callers built against that header
/// keep working (with key 0).
pub const DTEX_SAMPLE_OPTIONS_SIZE_0_1_0: u32 = 8;

/// `sizeof(DtexSampleOptions)` before `jitter` (with `request_key`, and `stochastic`
/// named `reserved`): callers built against that header keep working.
pub const DTEX_SAMPLE_OPTIONS_SIZE_REQUEST_KEY: u32 = 16;

impl Default for DtexSampleOptions {
    fn default() -> Self {
        DtexSampleOptions {
            struct_size: std::mem::size_of::<DtexSampleOptions>() as u32,
            fallback_to_coarser: 0,
            request_key: 0,
            stochastic: 0,
            jitter: [0.5, 0.5],
        }
    }
}

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexSampleOptions {
    const NAME: &'static str = "DtexSampleOptions";
    const KNOWN_SIZES: &'static [u32] = &[
        DTEX_SAMPLE_OPTIONS_SIZE_0_1_0,
        DTEX_SAMPLE_OPTIONS_SIZE_REQUEST_KEY,
        std::mem::size_of::<DtexSampleOptions>() as u32,
    ];
}

/// The result of one lookup.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DtexSample {
    /// RGBA. One-channel textures give (c, c, c, 1), two-channel (c0, c1, 0, 1).
    pub value: [f32; 4],
    /// Boolean: every texel the filter needed was resident. 0: the value is an
    /// approximation (or 0 / the base colour) and the missing pages were requested.
    pub resident: u32,
    /// Boolean: with `fallback_to_coarser`, a coarser resident level stood in for the
    /// missing level of detail asked for (`resident` is then 1, and the missing pages
    /// were requested): the lookup is not yet at full detail. (Was `reserved`, always 0.)
    pub coarser: u32,
}

impl From<Sample> for DtexSample {
    #[inline]
    fn from(s: Sample) -> DtexSample {
        DtexSample {
            value: s.value,
            resident: s.resident as u32,
            coarser: s.coarser as u32,
        }
    }
}

/// A lookup with the derivatives of its value with respect to the texture coordinates
/// (OpenImageIO's `dresultds` / `dresultdt`): for bump mapping from a height texture, or a
/// shader's `Dx()` of a lookup, without two more lookups.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DtexSampleDerivatives {
    /// The lookup, exactly as `dtex_launch_tex2d_grad` / `dtex_cache_tex2d_grad` give it.
    pub sample: DtexSample,
    /// d value / d s, per channel (1.0 of s is one texture width). 0 where no filter
    /// produced the value (a miss, the base colour, a stand-in colour) and under point
    /// filtering.
    pub ds: [f32; 4],
    /// d value / d t, per channel.
    pub dt: [f32; 4],
}

impl From<engine::SampleDerivatives> for DtexSampleDerivatives {
    #[inline]
    fn from(d: engine::SampleDerivatives) -> DtexSampleDerivatives {
        DtexSampleDerivatives {
            sample: d.sample.into(),
            ds: d.ds,
            dt: d.dt,
        }
    }
}

/// One lookup of a batch: a texture id and (s, t) with their screen-space gradients.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DtexGradQuery {
    /// Texture id.
    pub texture: u32,
    /// Horizontal texture coordinate (1.0 = one texture width).
    pub s: f32,
    /// Vertical texture coordinate.
    pub t: f32,
    /// ds/dx.
    pub dsdx: f32,
    /// dt/dx.
    pub dtdx: f32,
    /// ds/dy.
    pub dsdy: f32,
    /// dt/dy.
    pub dtdy: f32,
}

/// The engine options of optional C options (NULL = defaults).
///
/// # Safety
/// `options` is NULL or points to a `DtexSampleOptions`.
pub(crate) unsafe fn sample_options(options: *const DtexSampleOptions) -> ApiResult<SampleOptions> {
    // SAFETY: forwarded contract.
    let Some(o) = (unsafe { optional_in_prefix(options) })? else {
        return Ok(SampleOptions::default());
    };
    let stochastic = crate::boundary::c_bool(o.stochastic, "DtexSampleOptions.stochastic")?;
    Ok(SampleOptions {
        fallback_to_coarser: crate::boundary::c_bool(
            o.fallback_to_coarser,
            "DtexSampleOptions.fallback_to_coarser",
        )?,
        request_key: o.request_key,
        stochastic: stochastic.then_some(o.jitter),
    })
}

/// Sample level 0 of `texture` at (s, t). An unknown texture id gives the default
/// fallback colour, resident, with status OK (as a failed texture gives its own).
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL `out` or bad options.
/// Ownership: `options` is read during the call; `*out` is the caller's.
/// Thread-safety: many threads may sample one launch at once.
///
/// # Safety
/// `options` is NULL or points to a `DtexSampleOptions`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_tex2d(
    launch: DtexLaunch,
    texture: u32,
    s: f32,
    t: f32,
    options: *const DtexSampleOptions,
    out: *mut DtexSample,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let (out, o) = unsafe { (Out::new(out, "out")?, sample_options(options)?) };
        let l = launch::get(launch)?;
        out.write(l.launch.tex2d(TextureId(texture), s, t, &o).into());
        Ok(())
    })
}

/// Sample `texture` at (s, t) and an explicit level of detail `lod` (0 = finest; fractions
/// blend levels with a linear mip filter).
///
/// Errors, Ownership, Thread-safety: as `dtex_launch_tex2d`.
///
/// # Safety
/// As `dtex_launch_tex2d`.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_tex2d_lod(
    launch: DtexLaunch,
    texture: u32,
    s: f32,
    t: f32,
    lod: f32,
    options: *const DtexSampleOptions,
    out: *mut DtexSample,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let (out, o) = unsafe { (Out::new(out, "out")?, sample_options(options)?) };
        let l = launch::get(launch)?;
        out.write(l.launch.tex2d_lod(TextureId(texture), s, t, lod, &o).into());
        Ok(())
    })
}

/// Sample `texture` at (s, t) with the screen-space gradients of (s, t): the footprint
/// picks the level (and anisotropy, up to the texture's `max_anisotropy`).
///
/// Errors, Ownership, Thread-safety: as `dtex_launch_tex2d`.
///
/// # Safety
/// As `dtex_launch_tex2d`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_launch_tex2d_grad(
    launch: DtexLaunch,
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
        let l = launch::get(launch)?;
        let v = l
            .launch
            .tex2d_grad(TextureId(texture), s, t, [dsdx, dtdx], [dsdy, dtdy], &o);
        out.write(v.into());
        Ok(())
    })
}

/// `dtex_launch_tex2d_grad` with the derivatives of the value with respect to s and t
/// (see `DtexSampleDerivatives`): the analytic derivative of the bilinear interpolation
/// at each probe and level, weighted as the value is. The texture's own filter is used
/// even when `options` asks for stochastic filtering; otherwise `out->sample` is exactly
/// `dtex_launch_tex2d_grad`'s. On a texel centre the texel of weight 0 beside it is read
/// too (it sets the slope), so the lookup may request one more tile.
///
/// Errors, Ownership, Thread-safety: as `dtex_launch_tex2d`.
///
/// # Safety
/// As `dtex_launch_tex2d` (`out` points to a `DtexSampleDerivatives`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_launch_tex2d_grad_derivatives(
    launch: DtexLaunch,
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
        let l = launch::get(launch)?;
        let v = l.launch.tex2d_grad_with_derivatives(
            TextureId(texture),
            s,
            t,
            [dsdx, dtdx],
            [dsdy, dtdy],
            &o,
        );
        out.write(v.into());
        Ok(())
    })
}

/// Lat-long environment maps: the north pole is +z (RenderMan's convention).
pub const DTEX_UP_AXIS_Z: u32 = 0;
/// Lat-long environment maps: the north pole is +y (OpenEXR's convention and OpenImageIO's
/// default; maketx `--envlatl` OpenEXR files).
pub const DTEX_UP_AXIS_Y: u32 = 1;
const _: () = assert!(DTEX_UP_AXIS_Z == UpAxis::Z as u32 && DTEX_UP_AXIS_Y == UpAxis::Y as u32);

/// The up axis of a C code.
pub(crate) fn up_axis_of(code: u32) -> ApiResult<UpAxis> {
    UpAxis::from_code(code).ok_or_else(|| {
        ApiError::new(
            DTEX_STATUS_INVALID_ARGUMENT,
            format!("up_axis {code} (DTEX_UP_AXIS_Z 0 or DTEX_UP_AXIS_Y 1)"),
        )
    })
}

/// Sample lat-long environment map `texture` in direction `r` (any length) with the
/// direction's screen-space differentials `drdx`, `drdy` — OpenImageIO's
/// `TextureSystem::environment` with bilinear interpolation: its mapping (`up_axis`:
/// `DTEX_UP_AXIS_Y`, OpenImageIO's default, or `DTEX_UP_AXIS_Z`), level choice and
/// anisotropic probes, periodic in s and clamped in t whatever the texture's address modes.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `r`, `drdx`, `drdy` or `out`, an unknown
/// `up_axis`, bad options). Ownership, Thread-safety: as `dtex_launch_tex2d`.
///
/// # Safety
/// `r`, `drdx` and `drdy` are NULL or point to three readable floats each; `options` and
/// `out` as for `dtex_launch_tex2d`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_launch_environment(
    launch: DtexLaunch,
    texture: u32,
    r: *const f32,
    drdx: *const f32,
    drdy: *const f32,
    up_axis: u32,
    options: *const DtexSampleOptions,
    out: *mut DtexSample,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let (out, q) = unsafe {
            (
                Out::new(out, "out")?,
                EnvironmentQuery::new(r, drdx, drdy, up_axis, options)?,
            )
        };
        let l = launch::get(launch)?;
        let v = l
            .launch
            .environment(TextureId(texture), q.r, q.drdx, q.drdy, q.up, &q.options);
        out.write(v.into());
        Ok(())
    })
}

/// The checked arguments of an environment lookup (`dtex_launch_environment`,
/// `dtex_cache_environment`).
pub(crate) struct EnvironmentQuery {
    pub r: [f32; 3],
    pub drdx: [f32; 3],
    pub drdy: [f32; 3],
    pub up: UpAxis,
    pub options: SampleOptions,
}

impl EnvironmentQuery {
    /// # Safety
    /// `r`, `drdx` and `drdy` are NULL or point to three readable floats each; `options` is
    /// NULL or points to a `DtexSampleOptions`.
    pub(crate) unsafe fn new(
        r: *const f32,
        drdx: *const f32,
        drdy: *const f32,
        up_axis: u32,
        options: *const DtexSampleOptions,
    ) -> ApiResult<EnvironmentQuery> {
        // SAFETY: the caller's contract.
        unsafe {
            Ok(EnvironmentQuery {
                r: vec3(r, "r")?,
                drdx: vec3(drdx, "drdx")?,
                drdy: vec3(drdy, "drdy")?,
                up: up_axis_of(up_axis)?,
                options: sample_options(options)?,
            })
        }
    }
}

/// Three floats at `p`.
///
/// # Safety
/// `p` is NULL or points to three readable floats.
pub(crate) unsafe fn vec3(p: *const f32, name: &str) -> ApiResult<[f32; 3]> {
    if p.is_null() {
        return Err(ApiError::new(
            DTEX_STATUS_INVALID_ARGUMENT,
            format!("{name} is NULL"),
        ));
    }
    // SAFETY: non-null, and three readable floats by the caller's contract.
    Ok(unsafe { std::ptr::read_unaligned(p.cast::<[f32; 3]>()) })
}

/// Sample the UDIM texture `udim` (from `dtex_udim_create*`) at (s, t) in UDIM space
/// (tile (col, row) covers [col, col+1) x [row, row+1)) with the gradients of (s, t).
///
/// Errors, Ownership, Thread-safety: as `dtex_launch_tex2d`.
///
/// # Safety
/// As `dtex_launch_tex2d`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_launch_tex2d_grad_udim(
    launch: DtexLaunch,
    udim: u32,
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
        let l = launch::get(launch)?;
        let v = l
            .launch
            .tex2d_grad_udim(UdimId(udim), s, t, [dsdx, dtdx], [dsdy, dtdy], &o);
        out.write(v.into());
        Ok(())
    })
}

/// `dtex_launch_tex2d_grad_udim` with the derivatives of the value with respect to the
/// UDIM coordinates s and t (see `DtexSampleDerivatives`): those of the tile's lookup, or
/// of the base texture's divided by the grid's width and height (the base spans the
/// grid); zero for an unknown id, and for holes and the outside without a base texture.
///
/// Errors, Ownership, Thread-safety: as `dtex_launch_tex2d`.
///
/// # Safety
/// As `dtex_launch_tex2d` (`out` points to a `DtexSampleDerivatives`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dtex_launch_tex2d_grad_udim_derivatives(
    launch: DtexLaunch,
    udim: u32,
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
        let l = launch::get(launch)?;
        let (ddx, ddy) = ([dsdx, dtdx], [dsdy, dtdy]);
        let v = l
            .launch
            .tex2d_grad_udim_with_derivatives(UdimId(udim), s, t, ddx, ddy, &o);
        out.write(v.into());
        Ok(())
    })
}

/// Sample `count` queries (each with its own texture) in one call:
/// `out_samples[i]` is what `dtex_launch_tex2d_grad` gives for `queries[i]`. If
/// `out_resident_count` is not NULL it receives how many samples were resident.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for NULL arrays with `count > 0` or bad
/// options (nothing is written then). Ownership: the arrays are the caller's, used only
/// during the call. Thread-safety: as `dtex_launch_tex2d`; split large batches across
/// threads for parallelism.
///
/// # Safety
/// `queries` points to `count` readable queries and `out_samples` to `count` writable
/// samples (either may be NULL if `count` is 0); they must not overlap.
/// `out_resident_count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_tex2d_grad_batch(
    launch: DtexLaunch,
    queries: *const DtexGradQuery,
    count: usize,
    options: *const DtexSampleOptions,
    out_samples: *mut DtexSample,
    out_resident_count: *mut usize,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (arrays of `count`, optional pointers).
        let (queries, mut samples, resident_out, o) = unsafe {
            (
                slice_in(queries, count, "queries")?,
                slice_out(out_samples, count, "out_samples")?,
                Out::optional(out_resident_count),
                sample_options(options)?,
            )
        };
        let l = launch::get(launch)?;
        let mut resident = 0usize;
        for (i, q) in queries.iter().enumerate() {
            let v = l.launch.tex2d_grad(
                TextureId(q.texture),
                q.s,
                q.t,
                [q.dsdx, q.dtdx],
                [q.dsdy, q.dtdy],
                &o,
            );
            resident += v.resident as usize;
            samples.set(i, v.into());
        }
        if let Some(r) = resident_out {
            r.write(resident);
        }
        Ok(())
    })
}
