//! Option structs grown by appended fields: the old sizes are still accepted (the new fields
//! take their defaults), the new fields reach the engine and are checked.

use super::util::*;
use crate::handles::DtexLoader;
use crate::loader::{dtex_loader_create, dtex_loader_destroy};
use crate::options::*;
use crate::sampling::*;
use crate::status::*;
use crate::textures::{dtex_texture_create_procedural, DtexProceduralDesc};
use std::ptr::null;

#[test]
fn loader_options_of_the_old_size_take_the_new_fields_defaults() {
    let defaults = DtexLoaderOptions::default();
    assert_eq!(
        defaults.max_fill_age,
        engine::LoaderOptions::default().max_fill_age
    );
    assert_eq!(defaults.max_publications_per_launch, 0);
    // An old caller: its struct ends before max_fill_age; whatever follows is not read.
    let old = DtexLoaderOptions {
        struct_size: DTEX_LOADER_OPTIONS_SIZE_0_1_0,
        max_fill_age: 0,
        max_publications_per_launch: 0xdead,
        ..small_options()
    };
    // SAFETY: a valid struct (larger than its struct_size).
    let e = unsafe { DtexLoaderOptions::resolve(&old) }.unwrap();
    assert_eq!(
        e.max_fill_age,
        engine::LoaderOptions::default().max_fill_age
    );
    assert_eq!(e.max_publications_per_launch, usize::MAX);
    let mut l = DtexLoader::default();
    // SAFETY: valid pointers.
    ok(unsafe { dtex_loader_create(&old, &mut l) });
    ok(dtex_loader_destroy(l));
    // The new fields reach the engine, and are checked by it.
    let new = DtexLoaderOptions {
        max_fill_age: 7,
        max_publications_per_launch: 16,
        ..small_options()
    };
    // SAFETY: a valid struct.
    let e = unsafe { DtexLoaderOptions::resolve(&new) }.unwrap();
    assert_eq!((e.max_fill_age, e.max_publications_per_launch), (7, 16));
    let bad = DtexLoaderOptions {
        max_fill_age: 0,
        ..small_options()
    };
    // SAFETY: valid pointers.
    let m = fails(
        unsafe { dtex_loader_create(&bad, &mut l) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(m.contains("max_fill_age"), "{m}");
}

#[test]
fn loader_options_switch_constant_tiles_and_file_tile_fills() {
    let d = DtexLoaderOptions::default();
    assert_eq!((d.coalesce_constant_tiles, d.fill_by_file_tile), (1, 1));
    let off = DtexLoaderOptions {
        coalesce_constant_tiles: 0,
        fill_by_file_tile: 0,
        ..small_options()
    };
    // SAFETY: a valid struct.
    let e = unsafe { DtexLoaderOptions::resolve(&off) }.unwrap();
    assert!(!e.coalesce_constant_tiles && !e.fill_by_file_tile);
    // A caller built before the switches: its struct ends at max_publications_per_launch.
    let before = DtexLoaderOptions {
        struct_size: DTEX_LOADER_OPTIONS_SIZE_FILL_AGE,
        coalesce_constant_tiles: 0,
        fill_by_file_tile: 7,
        ..small_options()
    };
    // SAFETY: a valid struct (larger than its struct_size).
    let e = unsafe { DtexLoaderOptions::resolve(&before) }.unwrap();
    assert!(
        e.coalesce_constant_tiles && e.fill_by_file_tile,
        "the defaults"
    );
    let bad = DtexLoaderOptions {
        fill_by_file_tile: 2,
        ..small_options()
    };
    let mut l = DtexLoader::default();
    // SAFETY: valid pointers.
    let m = fails(
        unsafe { dtex_loader_create(&bad, &mut l) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(m.contains("fill_by_file_tile"), "{m}");
}

#[test]
fn loader_options_switch_duplicate_sharing_and_accept_the_size_before_it() {
    assert_eq!(DtexLoaderOptions::default().share_duplicate_textures, 1);
    let off = DtexLoaderOptions {
        share_duplicate_textures: 0,
        ..small_options()
    };
    // SAFETY: a valid struct.
    let e = unsafe { DtexLoaderOptions::resolve(&off) }.unwrap();
    assert!(!e.share_duplicate_textures);
    assert!(
        e.pages_of_file_tiles,
        "full_pages 0 (was reserved): the default"
    );
    let full = DtexLoaderOptions {
        full_pages: 1,
        ..small_options()
    };
    // SAFETY: a valid struct.
    let e = unsafe { DtexLoaderOptions::resolve(&full) }.unwrap();
    assert!(!e.pages_of_file_tiles);
    // A caller built before the switch: its struct ends at fill_by_file_tile.
    let before = DtexLoaderOptions {
        struct_size: DTEX_LOADER_OPTIONS_SIZE_FILE_TILES,
        share_duplicate_textures: 0,
        ..small_options()
    };
    // SAFETY: a valid struct (larger than its struct_size).
    let e = unsafe { DtexLoaderOptions::resolve(&before) }.unwrap();
    assert!(e.share_duplicate_textures, "the default");
    let mut l = DtexLoader::default();
    for (bad, field) in [
        (
            DtexLoaderOptions {
                share_duplicate_textures: 2,
                ..small_options()
            },
            "share_duplicate_textures",
        ),
        (
            DtexLoaderOptions {
                full_pages: 2,
                ..small_options()
            },
            "full_pages",
        ),
    ] {
        // SAFETY: valid pointers.
        let m = fails(
            unsafe { dtex_loader_create(&bad, &mut l) },
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(m.contains(field), "{m}");
    }
}

#[test]
fn loader_options_carry_the_fill_cpu_limit_and_accept_the_size_before_it() {
    assert_eq!(DtexLoaderOptions::default().fill_cpu_cores, 0.0);
    // SAFETY: valid structs (below, larger than their struct_size where it is smaller).
    let e = unsafe { DtexLoaderOptions::resolve(&small_options()) }.unwrap();
    assert_eq!(e.fill_cpu_cores, None, "0: no limit");
    let limited = DtexLoaderOptions {
        fill_cpu_cores: 0.25,
        ..small_options()
    };
    // SAFETY: as above.
    let e = unsafe { DtexLoaderOptions::resolve(&limited) }.unwrap();
    assert_eq!(e.fill_cpu_cores, Some(0.25));
    // A caller built before the limit: its struct ends at full_pages.
    let before = DtexLoaderOptions {
        struct_size: DTEX_LOADER_OPTIONS_SIZE_FULL_PAGES,
        fill_cpu_cores: -1.0,
        decode_blocks: 7,
        ..small_options()
    };
    // SAFETY: as above.
    let e = unsafe { DtexLoaderOptions::resolve(&before) }.unwrap();
    assert_eq!(e.fill_cpu_cores, None, "the default");
    assert!(e.keep_blocks, "the default");
    let mut l = DtexLoader::default();
    for (bad, field) in [
        (-0.5, "fill_cpu_cores -0.5"),
        (DTEX_MIN_FILL_CPU_CORES / 2.0, "fill_cpu_cores 0.005"),
        (f32::NAN, "fill_cpu_cores NaN"),
        (f32::INFINITY, "fill_cpu_cores inf"),
    ] {
        let o = DtexLoaderOptions {
            fill_cpu_cores: bad,
            ..small_options()
        };
        // SAFETY: valid pointers.
        let m = fails(
            unsafe { dtex_loader_create(&o, &mut l) },
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(m.contains(field), "{m}");
    }
    let o = DtexLoaderOptions {
        decode_blocks: 2,
        ..small_options()
    };
    // SAFETY: valid pointers.
    let m = fails(
        unsafe { dtex_loader_create(&o, &mut l) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(m.contains("decode_blocks"), "{m}");
    // What was `reserved` (0 in older callers) keeps blocks; 1 decodes them.
    for (decode, keep) in [(0, true), (1, false)] {
        let o = DtexLoaderOptions {
            decode_blocks: decode,
            ..small_options()
        };
        // SAFETY: as above.
        assert_eq!(
            unsafe { DtexLoaderOptions::resolve(&o) }
                .unwrap()
                .keep_blocks,
            keep
        );
    }
    // A limited loader is created like any other.
    let o = DtexLoaderOptions {
        fill_cpu_cores: 0.5,
        ..small_options()
    };
    // SAFETY: valid pointers; the loader is destroyed below.
    assert_eq!(unsafe { dtex_loader_create(&o, &mut l) }, DTEX_STATUS_OK);
    dtex_loader_destroy(l);
}

#[test]
fn sample_options_carry_the_request_key_and_jitter_and_accept_the_old_sizes() {
    let o = DtexSampleOptions {
        request_key: 1234,
        fallback_to_coarser: 1,
        ..Default::default()
    };
    // SAFETY: a valid struct.
    let e = unsafe { sample_options(&o) }.unwrap();
    assert_eq!((e.request_key, e.fallback_to_coarser), (1234, true));
    let old = DtexSampleOptions {
        struct_size: DTEX_SAMPLE_OPTIONS_SIZE_0_1_0,
        request_key: 99,
        stochastic: 5,
        ..Default::default()
    };
    // SAFETY: a valid struct (larger than its struct_size).
    let e = unsafe { sample_options(&old) }.unwrap();
    assert_eq!(e.request_key, 0, "an old caller's struct has no key");
    assert_eq!(e.stochastic, None);
    // Before `jitter`: `stochastic` was `reserved` (0), so nothing changes for them; a 1
    // now asks for the stochastic filter with the nearest texels.
    let keyed = DtexSampleOptions {
        struct_size: DTEX_SAMPLE_OPTIONS_SIZE_REQUEST_KEY,
        request_key: 7,
        stochastic: 1,
        jitter: [0.1, 0.2],
        ..Default::default()
    };
    // SAFETY: a valid struct (larger than its struct_size).
    let e = unsafe { sample_options(&keyed) }.unwrap();
    assert_eq!((e.request_key, e.stochastic), (7, Some([0.5, 0.5])));
    let jittered = DtexSampleOptions {
        stochastic: 1,
        jitter: [0.1, 0.2],
        ..Default::default()
    };
    // SAFETY: a valid struct.
    let e = unsafe { sample_options(&jittered) }.unwrap();
    assert_eq!(e.stochastic, Some([0.1, 0.2]));
    let not_bool = DtexSampleOptions {
        stochastic: 2,
        ..Default::default()
    };
    // SAFETY: a valid struct.
    let m = unsafe { sample_options(&not_bool) }.unwrap_err().message;
    assert!(m.contains("stochastic"), "{m}");
    // Lookups with either size work.
    let loader = TestLoader::new();
    let mut tex = 0;
    let p = DtexProceduralDesc::default();
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_create_procedural(loader.0, &p, null(), &mut tex) });
    let launch = loader.launch();
    for opts in [&o, &old, &keyed, &jittered] {
        let mut s = DtexSample::default();
        // SAFETY: valid pointers.
        ok(unsafe { dtex_launch_tex2d(launch, tex, 0.5, 0.5, opts, &mut s) });
    }
    process_and_wait(launch);
}
