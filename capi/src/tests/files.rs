//! OpenEXR files: textures from a path (multi-pass), the blocking cache, UDIM textures from
//! a list of paths and from a pattern.

use super::util::*;
use crate::cache::*;
use crate::options::*;
use crate::sampling::*;
use crate::stats::*;
use crate::status::*;
use crate::textures::*;
use crate::udim::*;
use std::ffi::c_char;
use std::ptr::{null, null_mut};

#[test]
fn a_file_texture_converges_to_what_the_blocking_cache_reads() {
    let dir = TempDir::new("file");
    let path = dir.path().join("pattern.exr");
    write_exr(&path, 97, 61, smooth_texel);
    let loader = TestLoader::new();
    let mut tex = DTEX_NO_TEXTURE;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_create_from_file(loader.0, cpath(&path).as_ptr(), null(), &mut tex) });
    let queries = query_grid(tex, 7, 97.0);
    let (multi_pass, _) = converge(&loader, &queries);

    let cache = Cache::new();
    let ctex = cache.texture(&path);
    assert_eq!(
        cache.texture(&path),
        ctex,
        "the same path gives the same id"
    );
    let cq: Vec<DtexGradQuery> = queries
        .iter()
        .map(|q| DtexGradQuery {
            texture: ctex,
            ..*q
        })
        .collect();
    let singles: Vec<DtexSample> = cq.iter().map(|q| cache.lookup(q)).collect();
    assert_eq!(
        singles, multi_pass,
        "blocking lookups equal converged multi-pass lookups"
    );
    let mut batched = vec![DtexSample::default(); cq.len()];
    // SAFETY: arrays of cq.len() elements.
    ok(unsafe {
        dtex_cache_tex2d_grad_batch(cache.0, cq.as_ptr(), cq.len(), null(), batched.as_mut_ptr())
    });
    assert_eq!(batched, singles);
    // Level 0 at a texel centre is the texel (stored as f32).
    let q = DtexGradQuery {
        texture: ctex,
        s: 10.5 / 97.0,
        t: 20.5 / 61.0,
        dsdx: 1e-4,
        dtdx: 0.0,
        dsdy: 0.0,
        dtdy: 1e-4,
    };
    assert_eq!(cache.lookup(&q).value, smooth_texel(10, 20));

    let mut stats = DtexStats {
        struct_size: std::mem::size_of::<DtexStats>() as u32,
        ..Default::default()
    };
    // SAFETY: valid pointer.
    ok(unsafe { dtex_cache_get_stats(cache.0, &mut stats) });
    assert_eq!(stats.textures, 1);
    assert!(stats.tiles_filled + stats.mip_tails_filled > 0);
    assert_eq!(stats.launches, 0, "blocking lookups need no launch");
    ok(dtex_cache_set_max_texture_memory(cache.0, 16 << 20));
    // SAFETY: valid pointer.
    ok(unsafe { dtex_cache_get_stats(cache.0, &mut stats) });
    assert_eq!(stats.budget_bytes, 16 << 20);
    ok(dtex_cache_destroy(cache.0));
    fails(dtex_cache_destroy(cache.0), DTEX_STATUS_INVALID_HANDLE);
    let mut out = DtexSample::default();
    // SAFETY: valid pointers.
    fails(
        unsafe {
            dtex_cache_tex2d_grad(
                cache.0,
                ctex,
                0.5,
                0.5,
                0.0,
                0.0,
                0.0,
                0.0,
                null(),
                &mut out,
            )
        },
        DTEX_STATUS_INVALID_HANDLE,
    );
}

#[test]
fn the_cache_samples_a_missing_file_as_its_fallback() {
    let dir = TempDir::new("cache-missing");
    let cache = Cache::new();
    let tex = cache.texture(&dir.path().join("nothing.exr"));
    let q = DtexGradQuery {
        texture: tex,
        s: 0.5,
        t: 0.5,
        ..Default::default()
    };
    assert_eq!(cache.lookup(&q).value, [1.0, 0.0, 1.0, 1.0]);
    let mut tex2 = 0;
    // SAFETY: NULL path.
    fails(
        unsafe { dtex_cache_texture_for_path(cache.0, null(), null(), &mut tex2) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // SAFETY: NULL arrays with a count.
    fails(
        unsafe { dtex_cache_tex2d_grad_batch(cache.0, null(), 2, null(), null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
}

/// Three constant tiles (1001 red, 1002 green, 1011 blue) and a hole at 1012.
fn udim_dir() -> TempDir {
    let dir = TempDir::new("udim");
    for (n, c) in [
        (1001, [1.0, 0.0, 0.0, 1.0]),
        (1002, [0.0, 1.0, 0.0, 1.0]),
        (1011, [0.0, 0.0, 1.0, 1.0]),
    ] {
        write_exr(&dir.path().join(format!("color.{n}.exr")), 32, 32, |_, _| c);
    }
    write_exr(&dir.path().join("base.exr"), 16, 16, |_, _| {
        [0.5, 0.5, 0.5, 1.0]
    });
    dir
}

fn udim_lookups(loader: &TestLoader, udim: u32) -> Vec<[f32; 4]> {
    let points = [(0.5, 0.5), (1.5, 0.5), (0.5, 1.5), (1.5, 1.5)];
    let samples = converge_with(loader, |launch| {
        points
            .iter()
            .map(|&(s, t)| {
                let mut out = DtexSample::default();
                // SAFETY: valid pointers.
                ok(unsafe {
                    dtex_launch_tex2d_grad_udim(
                        launch,
                        udim,
                        s,
                        t,
                        1e-3,
                        0.0,
                        0.0,
                        1e-3,
                        null(),
                        &mut out,
                    )
                });
                out
            })
            .collect()
    });
    samples.iter().map(|s| s.value).collect()
}

#[test]
fn udim_textures_from_a_pattern_and_from_paths_agree() {
    let dir = udim_dir();
    let loader = TestLoader::new();
    let pattern = cpath(&dir.path().join("color.<UDIM>.exr"));
    let base = cpath(&dir.path().join("base.exr"));
    let mut from_pattern = DTEX_NO_TEXTURE;
    // SAFETY: valid pointers.
    ok(unsafe {
        dtex_udim_create_from_pattern(
            loader.0,
            pattern.as_ptr(),
            base.as_ptr(),
            null(),
            &mut from_pattern,
        )
    });
    let got = udim_lookups(&loader, from_pattern);
    assert_eq!(got[0], [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(got[1], [0.0, 1.0, 0.0, 1.0]);
    assert_eq!(got[2], [0.0, 0.0, 1.0, 1.0]);
    assert_eq!(
        got[3],
        [0.5, 0.5, 0.5, 1.0],
        "the hole shows the base texture"
    );

    let paths =
        ["color.1001.exr", "color.1002.exr", "color.1011.exr"].map(|n| cpath(&dir.path().join(n)));
    let grid: [*const c_char; 4] = [
        paths[0].as_ptr(),
        paths[1].as_ptr(),
        paths[2].as_ptr(),
        null(),
    ];
    let mut from_paths = DTEX_NO_TEXTURE;
    // SAFETY: four entries, NULL is a hole.
    ok(unsafe {
        dtex_udim_create(
            loader.0,
            grid.as_ptr(),
            2,
            2,
            base.as_ptr(),
            null(),
            &mut from_paths,
        )
    });
    assert_ne!(from_paths, from_pattern);
    assert_eq!(udim_lookups(&loader, from_paths), got);
}

#[test]
fn bad_udim_requests_are_refused() {
    let dir = udim_dir();
    let loader = TestLoader::new();
    let mut udim = DTEX_NO_TEXTURE;
    let holes: [*const c_char; 2] = [null(), null()];
    // SAFETY: valid pointers.
    unsafe {
        let msg = fails(
            dtex_udim_create(loader.0, holes.as_ptr(), 2, 1, null(), null(), &mut udim),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(msg.contains("at least one tile"), "{msg}");
        let msg = fails(
            dtex_udim_create(loader.0, holes.as_ptr(), 0, 1, null(), null(), &mut udim),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(msg.contains("each side"), "{msg}");
        fails(
            dtex_udim_create(loader.0, null(), 2, 2, null(), null(), &mut udim),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        let missing = cpath(&dir.path().join("nope.exr"));
        let one = [missing.as_ptr()];
        let msg = fails(
            dtex_udim_create(loader.0, one.as_ptr(), 1, 1, null(), null(), &mut udim),
            DTEX_STATUS_IO_ERROR,
        );
        assert!(msg.contains("nope.exr"), "{msg}");
        let no_token = cpath(&dir.path().join("color.exr"));
        fails(
            dtex_udim_create_from_pattern(loader.0, no_token.as_ptr(), null(), null(), &mut udim),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        let nothing = cpath(&dir.path().join("other.<UDIM>.exr"));
        let msg = fails(
            dtex_udim_create_from_pattern(loader.0, nothing.as_ptr(), null(), null(), &mut udim),
            DTEX_STATUS_IO_ERROR,
        );
        assert!(msg.contains("no file"), "{msg}");
        let pattern = cpath(&dir.path().join("color.<UDIM>.exr"));
        fails(
            dtex_udim_create_from_pattern(
                loader.0,
                pattern.as_ptr(),
                missing.as_ptr(),
                null(),
                &mut udim,
            ),
            DTEX_STATUS_IO_ERROR,
        );
        fails(
            dtex_udim_create_from_pattern(loader.0, pattern.as_ptr(), null(), null(), null_mut()),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
    }
    assert_eq!(udim, DTEX_NO_TEXTURE);
    assert_eq!(loader.stats().textures, 0);
}

#[test]
fn destroying_a_cache_while_threads_look_up_is_safe() {
    let dir = TempDir::new("cache-race");
    let path = dir.path().join("pattern.exr");
    write_exr(&path, 97, 61, smooth_texel);
    let cache = Cache::new();
    let tex = cache.texture(&path);
    let queries = query_grid(tex, 6, 97.0);
    let barrier = std::sync::Barrier::new(4);
    std::thread::scope(|s| {
        for _ in 0..3 {
            let (barrier, queries, handle) = (&barrier, &queries, cache.0);
            s.spawn(move || {
                barrier.wait();
                let mut out = vec![DtexSample::default(); queries.len()];
                loop {
                    // SAFETY: arrays of queries.len() elements.
                    let status = unsafe {
                        dtex_cache_tex2d_grad_batch(
                            handle,
                            queries.as_ptr(),
                            queries.len(),
                            null(),
                            out.as_mut_ptr(),
                        )
                    };
                    if status == DTEX_STATUS_INVALID_HANDLE {
                        break;
                    }
                    assert_eq!(status, DTEX_STATUS_OK);
                    assert!(out.iter().all(|o| o.resident == 1));
                }
            });
        }
        barrier.wait();
        std::thread::sleep(std::time::Duration::from_millis(20));
        ok(dtex_cache_destroy(cache.0));
    });
}

#[test]
fn a_dds_file_is_a_texture_in_both_modes() {
    // BC7 from `demandtex convert`, with Pillow's decode of level 0 beside it.
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/dds");
    let path = fixtures.join("dtx-bc7.dds");
    let reference = std::fs::read_to_string(fixtures.join("dtx-bc7.ref")).unwrap();
    let pillow: Vec<[f32; 4]> = reference
        .lines()
        .map(|l| {
            let v: Vec<f32> = l
                .split(' ')
                .map(|c| c.parse::<f32>().unwrap() / 255.0)
                .collect();
            [v[0], v[1], v[2], v[3]]
        })
        .collect();
    let level0 = |tex: u32, x: usize, y: usize| DtexGradQuery {
        texture: tex,
        s: (x as f32 + 0.5) / 37.0,
        t: (y as f32 + 0.5) / 22.0,
        dsdx: 1e-4,
        dtdx: 0.0,
        dsdy: 0.0,
        dtdy: 1e-4,
    };
    let cache = Cache::new();
    let ctex = cache.texture(&path);
    let loader = TestLoader::new();
    let mut tex = DTEX_NO_TEXTURE;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_create_from_file(loader.0, cpath(&path).as_ptr(), null(), &mut tex) });
    let queries: Vec<DtexGradQuery> = (0..22)
        .flat_map(|y| (0..37).map(move |x| (x, y)))
        .step_by(5)
        .map(|(x, y)| level0(tex, x, y))
        .collect();
    let (multi_pass, _) = converge(&loader, &queries);
    for (q, mp) in queries.iter().zip(&multi_pass) {
        let (x, y) = ((q.s * 37.0) as usize, (q.t * 22.0) as usize);
        let want = pillow[y * 37 + x];
        for c in 0..4 {
            assert!(
                (mp.value[c] - want[c]).abs() < 1e-6,
                "({x}, {y}): {mp:?} against {want:?}"
            );
        }
        let blocking = cache.lookup(&DtexGradQuery {
            texture: ctex,
            ..*q
        });
        assert_eq!(blocking, *mp);
    }
}

#[test]
fn from_file_addressing_reads_a_maketx_files_wrapmodes() {
    // tests/fixtures/tx/rgb8_lzw_wrap.tx: maketx --swrap periodic --twrap clamp.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/tx/rgb8_lzw_wrap.tx");
    let lookups = |address_s, address_t| {
        let cache = Cache::new();
        let desc = DtexTextureDesc {
            address_s,
            address_t,
            ..DtexTextureDesc::default()
        };
        let tex = cache.texture_with(&path, &desc);
        let mut out = Vec::new();
        for j in 0..9 {
            for i in 0..9 {
                let q = DtexGradQuery {
                    texture: tex,
                    s: -0.7 + 0.3 * i as f32,
                    t: -0.65 + 0.3 * j as f32,
                    dsdx: 0.01,
                    dtdx: 0.0,
                    dsdy: 0.0,
                    dtdy: 0.01,
                };
                let v = cache.lookup(&q);
                assert_eq!(v.resident, 1);
                out.push(v.value.map(f32::to_bits));
            }
        }
        out
    };
    let from_file = lookups(DTEX_ADDRESS_FROM_FILE, DTEX_ADDRESS_FROM_FILE);
    assert_eq!(from_file, lookups(DTEX_ADDRESS_WRAP, DTEX_ADDRESS_CLAMP));
    assert_ne!(from_file, lookups(DTEX_ADDRESS_BORDER, DTEX_ADDRESS_BORDER));
}

#[test]
fn environment_lookups_through_the_c_abi_equal_the_cache_s_and_check_their_arguments() {
    let dir = TempDir::new("environment");
    let path = dir.path().join("latlong.exr");
    write_exr(&path, 97, 61, smooth_texel);
    let cache = Cache::new();
    let tex = cache.texture(&path);
    let (r, drdx, drdy) = (
        [0.3f32, 0.4, -0.8],
        [1e-3f32, 0.0, 0.0],
        [0.0f32, 1e-3, 0.0],
    );
    let call = |r: *const f32, up: u32, out: &mut DtexSample| {
        // SAFETY: valid pointers (or NULL, which the call checks).
        unsafe {
            dtex_cache_environment(
                cache.0,
                tex,
                r,
                drdx.as_ptr(),
                drdy.as_ptr(),
                up,
                null(),
                out,
            )
        }
    };
    let mut y = DtexSample::default();
    ok(call(r.as_ptr(), DTEX_UP_AXIS_Y, &mut y));
    assert_eq!(y.resident, 1);
    // The same lookup through the Rust API.
    let want = engine::TextureCache::new(engine::LoaderOptions::default())
        .and_then(|c| {
            let t = c.texture_for_path(&path, engine::TextureDesc::default())?;
            Ok(c.environment(
                t,
                r,
                drdx,
                drdy,
                engine::UpAxis::Y,
                &engine::SampleOptions::default(),
            ))
        })
        .unwrap();
    assert_eq!(y.value, want.value);
    let mut z = DtexSample::default();
    ok(call(r.as_ptr(), DTEX_UP_AXIS_Z, &mut z));
    assert_ne!(z.value, y.value);
    let mut out = DtexSample::default();
    assert_eq!(call(r.as_ptr(), 7, &mut out), DTEX_STATUS_INVALID_ARGUMENT);
    assert_eq!(
        call(null(), DTEX_UP_AXIS_Y, &mut out),
        DTEX_STATUS_INVALID_ARGUMENT
    );
}
