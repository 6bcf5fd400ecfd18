//! Lookups with the derivatives of their value (blocking, multi-pass and UDIM) and the
//! blocking cache's texture info, through the C ABI.

use super::util::*;
use crate::cache::*;
use crate::launch::dtex_launch_discard;
use crate::sampling::*;
use crate::status::*;
use crate::textures::*;
use crate::udim::*;
use std::ptr::{null, null_mut};

/// `dtex_cache_tex2d_grad_derivatives` of `q`.
fn derivatives_of(cache: &Cache, q: &DtexGradQuery) -> DtexSampleDerivatives {
    let mut out = DtexSampleDerivatives::default();
    // SAFETY: valid pointers.
    ok(unsafe {
        dtex_cache_tex2d_grad_derivatives(
            cache.0,
            q.texture,
            q.s,
            q.t,
            q.dsdx,
            q.dtdx,
            q.dsdy,
            q.dtdy,
            null(),
            &mut out,
        )
    });
    out
}

#[test]
fn derivative_lookups_give_the_slopes_of_a_file_ramp_blocking_and_multi_pass() {
    // Red is x / 97 and green y / 61: one unit per texture width and height.
    let dir = TempDir::new("derivatives");
    let path = dir.path().join("pattern.exr");
    write_exr(&path, 97, 61, smooth_texel);
    let cache = Cache::new();
    let tex = cache.texture(&path);
    let q = DtexGradQuery {
        texture: tex,
        s: 0.4321,
        t: 0.5678,
        dsdx: 0.5 / 97.0,
        dtdx: 0.0,
        dsdy: 0.0,
        dtdy: 0.5 / 61.0,
    };
    let d = derivatives_of(&cache, &q);
    assert_eq!(
        d.sample,
        cache.lookup(&q),
        "the value is dtex_cache_tex2d_grad's"
    );
    assert!(
        (d.ds[0] - 1.0).abs() < 1e-4 && d.ds[1].abs() < 1e-4,
        "{:?}",
        d.ds
    );
    assert!(
        (d.dt[1] - 1.0).abs() < 1e-4 && d.dt[0].abs() < 1e-4,
        "{:?}",
        d.dt
    );
    assert_eq!((d.ds[3], d.dt[3]), (0.0, 0.0), "alpha is 1 everywhere");

    // The multi-pass lookup converges to the same value and derivatives.
    let loader = TestLoader::new();
    let mut ltex = DTEX_NO_TEXTURE;
    // SAFETY: valid pointers.
    ok(unsafe {
        dtex_texture_create_from_file(loader.0, cpath(&path).as_ptr(), null(), &mut ltex)
    });
    let mut converged = None;
    for _ in 0..10 {
        let launch = loader.launch();
        let mut m = DtexSampleDerivatives::default();
        // SAFETY: valid pointers.
        ok(unsafe {
            dtex_launch_tex2d_grad_derivatives(
                launch,
                ltex,
                q.s,
                q.t,
                q.dsdx,
                q.dtdx,
                q.dsdy,
                q.dtdy,
                null(),
                &mut m,
            )
        });
        if m.sample.resident == 1 {
            ok(dtex_launch_discard(launch));
            converged = Some(m);
            break;
        }
        assert_eq!((m.ds, m.dt), ([0.0; 4], [0.0; 4]), "a miss has no slope");
        process_and_wait(launch);
    }
    assert_eq!(converged, Some(d));

    // NULL out: an error, nothing written.
    // SAFETY: `out` NULL is the error under test.
    let status = unsafe {
        dtex_cache_tex2d_grad_derivatives(
            cache.0,
            tex,
            0.5,
            0.5,
            0.0,
            0.0,
            0.0,
            0.0,
            null(),
            null_mut(),
        )
    };
    assert!(fails(status, DTEX_STATUS_INVALID_ARGUMENT).contains("out"));
}

#[test]
fn texture_info_opens_a_maketx_file_and_fails_with_the_files_error() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx");
    let cache = Cache::new();
    let tex = cache.texture(&fixtures.join("gray_float.tx"));
    let mut info = DtexImageInfo::default();
    let mut average = [0.0f32; 4];
    // SAFETY: valid pointers (the colour is four floats).
    ok(unsafe { dtex_cache_get_texture_info(cache.0, tex, &mut info, average.as_mut_ptr()) });
    assert_eq!(
        (
            info.width,
            info.height,
            info.texel_type,
            info.channels,
            info.num_levels
        ),
        (130, 70, DTEX_TEXEL_F32, 1, 8)
    );
    // maketx's `oiio:AverageColor` "1.425", in half precision: 1459 / 1024.
    let a = 1459.0 / 1024.0;
    assert_eq!(average, [a, a, a, 1.0]);
    // SAFETY: as above; no colour wanted.
    ok(unsafe { dtex_cache_get_texture_info(cache.0, tex, &mut info, null_mut()) });

    let missing = cache.texture(&fixtures.join("no-such-file.tx"));
    let before = info;
    // SAFETY: valid pointers.
    let status = unsafe { dtex_cache_get_texture_info(cache.0, missing, &mut info, null_mut()) };
    assert!(fails(status, DTEX_STATUS_SOURCE_ERROR).contains("no-such-file.tx"));
    assert_eq!(info, before, "nothing written on error");
    // SAFETY: valid pointers.
    let status = unsafe { dtex_cache_get_texture_info(cache.0, 4000, &mut info, null_mut()) };
    fails(status, DTEX_STATUS_UNKNOWN_TEXTURE);
    // SAFETY: NULL `out_info` is the error under test.
    let status = unsafe { dtex_cache_get_texture_info(cache.0, tex, null_mut(), null_mut()) };
    assert!(fails(status, DTEX_STATUS_INVALID_ARGUMENT).contains("out_info"));
}

#[test]
fn udim_derivative_lookups_give_the_tiles_slopes() {
    // Two tiles whose red ramps across the tile: one per UDIM unit.
    let dir = TempDir::new("udim-derivatives");
    for n in [1001, 1002] {
        write_exr(&dir.path().join(format!("ramp.{n}.exr")), 32, 32, |x, _| {
            [(x as f32 + 0.5) / 32.0, 0.25, 0.5, 1.0]
        });
    }
    let loader = TestLoader::new();
    let pattern = cpath(&dir.path().join("ramp.<UDIM>.exr"));
    let mut udim = DTEX_NO_TEXTURE;
    // SAFETY: valid pointers.
    ok(unsafe {
        dtex_udim_create_from_pattern(loader.0, pattern.as_ptr(), null(), null(), &mut udim)
    });
    let slopes = std::cell::Cell::new(DtexSampleDerivatives::default());
    let samples = converge_with(&loader, |launch| {
        let mut out = DtexSampleDerivatives::default();
        // SAFETY: valid pointers.
        ok(unsafe {
            dtex_launch_tex2d_grad_udim_derivatives(
                launch,
                udim,
                1.3,
                0.4,
                1e-3,
                0.0,
                0.0,
                1e-3,
                null(),
                &mut out,
            )
        });
        slopes.set(out);
        vec![out.sample]
    });
    let slopes = slopes.get();
    assert!((samples[0].value[0] - 0.3).abs() < 1e-3, "{:?}", samples[0]);
    assert!((slopes.ds[0] - 1.0).abs() < 1e-3, "{:?}", slopes.ds);
    assert_eq!((slopes.ds[1], slopes.dt), (0.0, [0.0; 4]));
}
