//! The error model: null, stale and wrong-type handles, bad struct sizes, NULL pointers,
//! bad strings and enum values, the thread-local message, caught panics.

use super::util::*;
use crate::boundary::entry;
use crate::cache::*;
use crate::callbacks::*;
use crate::handles::*;
use crate::launch::*;
use crate::loader::*;
use crate::options::*;
use crate::sampling::*;
use crate::stats::*;
use crate::status::*;
use crate::textures::*;
use std::ffi::CStr;
use std::ptr::{null, null_mut};

fn text(p: *const std::ffi::c_char) -> String {
    // SAFETY: the library returns NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[test]
fn versions_and_status_names() {
    assert_eq!(
        text(crate::dtex_version_string()),
        env!("CARGO_PKG_VERSION")
    );
    let [major, minor, patch]: [u32; 3] = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse().unwrap())
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    assert_eq!(
        (
            crate::DTEX_VERSION_MAJOR,
            crate::DTEX_VERSION_MINOR,
            crate::DTEX_VERSION_PATCH
        ),
        (major, minor, patch)
    );
    assert_eq!(crate::dtex_version(), major * 10000 + minor * 100 + patch);
    assert_eq!(crate::dtex_abi_version(), crate::DTEX_ABI_VERSION);
    assert_eq!(text(dtex_status_string(DTEX_STATUS_OK)), "DTEX_STATUS_OK");
    assert_eq!(
        text(dtex_status_string(DTEX_STATUS_TIMEOUT)),
        "DTEX_STATUS_TIMEOUT"
    );
    assert_eq!(
        text(dtex_status_string(DTEX_STATUS_INTERNAL)),
        "DTEX_STATUS_INTERNAL"
    );
    assert_eq!(text(dtex_status_string(12)), "unknown status");
    assert_eq!(text(dtex_status_string(-1)), "unknown status");
}

#[test]
fn null_and_forged_handles_are_errors_not_crashes() {
    let null_loader = DtexLoader { id: 0 };
    let forged = DtexLoader {
        id: 0xdead_beef_1234_5678,
    };
    for l in [null_loader, forged] {
        let msg = fails(dtex_loader_destroy(l), DTEX_STATUS_INVALID_HANDLE);
        assert!(msg.contains("loader handle"), "{msg}");
        fails(
            dtex_loader_set_max_texture_memory(l, 1 << 20),
            DTEX_STATUS_INVALID_HANDLE,
        );
        let mut launch = DtexLaunch { id: 77 };
        // SAFETY: valid out pointer.
        fails(
            unsafe { dtex_launch_prepare(l, &mut launch) },
            DTEX_STATUS_INVALID_HANDLE,
        );
        assert_eq!(launch.id, 77, "out pointers are untouched on error");
        let mut s = DtexStats {
            struct_size: std::mem::size_of::<DtexStats>() as u32,
            ..Default::default()
        };
        // SAFETY: valid out pointer.
        fails(
            unsafe { dtex_loader_get_stats(l, &mut s) },
            DTEX_STATUS_INVALID_HANDLE,
        );
        let p = DtexProceduralDesc::default();
        let mut tex = 5u32;
        // SAFETY: valid pointers.
        fails(
            unsafe { dtex_texture_create_procedural(l, &p, null(), &mut tex) },
            DTEX_STATUS_INVALID_HANDLE,
        );
        assert_eq!(tex, 5);
    }
    assert!(last_error().contains("invalid loader handle"));
    let launch = DtexLaunch { id: 0 };
    let mut out = DtexSample::default();
    // SAFETY: valid out pointer.
    fails(
        unsafe { dtex_launch_tex2d(launch, 0, 0.5, 0.5, null(), &mut out) },
        DTEX_STATUS_INVALID_HANDLE,
    );
    fails(dtex_launch_discard(launch), DTEX_STATUS_INVALID_HANDLE);
    let mut t = DtexTicket::default();
    // SAFETY: valid out pointer.
    fails(
        unsafe { dtex_process_requests(launch, &mut t) },
        DTEX_STATUS_INVALID_HANDLE,
    );
    fails(
        dtex_ticket_wait(DtexTicket { id: 0 }, 0),
        DTEX_STATUS_INVALID_HANDLE,
    );
    fails(
        dtex_ticket_destroy(DtexTicket { id: 3 }),
        DTEX_STATUS_INVALID_HANDLE,
    );
    let mut done = 0;
    // SAFETY: valid pointers.
    fails(
        unsafe { dtex_ticket_poll(DtexTicket { id: 0 }, &mut done, null_mut(), null_mut()) },
        DTEX_STATUS_INVALID_HANDLE,
    );
    fails(
        dtex_cache_destroy(DtexCache { id: 0 }),
        DTEX_STATUS_INVALID_HANDLE,
    );
    // SAFETY: valid pointer.
    fails(
        unsafe {
            dtex_cache_tex2d_grad(
                DtexCache { id: 9 },
                0,
                0.0,
                0.0,
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
fn stale_and_wrong_type_handles_are_invalid() {
    let loader = TestLoader::new();
    let launch = loader.launch();
    // A launch id is not a loader id, and vice versa.
    fails(
        dtex_loader_destroy(DtexLoader { id: launch.id }),
        DTEX_STATUS_INVALID_HANDLE,
    );
    fails(
        dtex_launch_discard(DtexLaunch { id: loader.0.id }),
        DTEX_STATUS_INVALID_HANDLE,
    );
    let mut ticket = DtexTicket::default();
    // SAFETY: valid pointer.
    ok(unsafe { dtex_process_requests(launch, &mut ticket) });
    // The launch was consumed.
    fails(dtex_launch_discard(launch), DTEX_STATUS_INVALID_HANDLE);
    let mut launch_num = 0;
    // SAFETY: valid pointer.
    fails(
        unsafe { dtex_launch_get_number(launch, &mut launch_num) },
        DTEX_STATUS_INVALID_HANDLE,
    );
    ok(dtex_ticket_wait(ticket, DTEX_WAIT_FOREVER));
    // Destroying the loader invalidates its launches and tickets too.
    let live_launch = loader.launch();
    ok(dtex_loader_destroy(loader.0));
    fails(dtex_loader_destroy(loader.0), DTEX_STATUS_INVALID_HANDLE);
    fails(dtex_ticket_wait(ticket, 0), DTEX_STATUS_INVALID_HANDLE);
    fails(dtex_launch_discard(live_launch), DTEX_STATUS_INVALID_HANDLE);
    let mut out = DtexSample::default();
    // SAFETY: valid pointer.
    fails(
        unsafe { dtex_launch_tex2d(live_launch, 0, 0.5, 0.5, null(), &mut out) },
        DTEX_STATUS_INVALID_HANDLE,
    );
    // A new loader may reuse the slot, but not the id.
    let again = TestLoader::new();
    assert_ne!(again.0, loader.0);
    fails(
        dtex_loader_set_max_texture_memory(loader.0, 1 << 20),
        DTEX_STATUS_INVALID_HANDLE,
    );
    ok(dtex_loader_set_max_texture_memory(again.0, 32 << 20));
}

#[test]
fn bad_struct_sizes_and_null_pointers_are_invalid_arguments() {
    let mut loader = DtexLoader { id: 42 };
    let mut opts = small_options();
    opts.struct_size = 12;
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_loader_create(&opts, &mut loader) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("DtexLoaderOptions.struct_size is 12"), "{msg}");
    assert_eq!(loader.id, 42);
    // SAFETY: NULL out.
    let msg = fails(
        unsafe { dtex_loader_create(null(), null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("out is NULL"), "{msg}");

    let l = TestLoader::new();
    let mut stats = DtexStats::default(); // struct_size 0
                                          // SAFETY: valid pointer.
    let msg = fails(
        unsafe { dtex_loader_get_stats(l.0, &mut stats) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("DtexStats.struct_size"), "{msg}");
    assert_eq!(stats, DtexStats::default(), "untouched on error");
    // SAFETY: NULL out.
    fails(
        unsafe { dtex_loader_get_stats(l.0, null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // A caller built against the 0.1.0 header: its fields are written, nothing past them.
    let mut old = DtexStats {
        struct_size: DTEX_STATS_SIZE_0_1_0,
        host_tile_bytes: 7,
        peak_host_tile_bytes: 7,
        publications_deferred: 7,
        ..Default::default()
    };
    // SAFETY: valid pointer to a struct at least `struct_size` bytes long.
    assert_eq!(
        unsafe { dtex_loader_get_stats(l.0, &mut old) },
        DTEX_STATUS_OK
    );
    assert_eq!(old.struct_size, DTEX_STATS_SIZE_0_1_0);
    assert_eq!(old.budget_bytes, small_options().max_texture_memory);
    assert_eq!(
        (
            old.host_tile_bytes,
            old.peak_host_tile_bytes,
            old.publications_deferred
        ),
        (7, 7, 7),
        "fields the caller's struct does not have are not written"
    );
    // A caller built before `requests_rejected`: it gets the publication counter, not that.
    let mut mid = DtexStats {
        struct_size: DTEX_STATS_SIZE_HOST_TILES,
        publications_deferred: 7,
        requests_rejected: 7,
        ..Default::default()
    };
    // SAFETY: valid pointer to a struct at least `struct_size` bytes long.
    assert_eq!(
        unsafe { dtex_loader_get_stats(l.0, &mut mid) },
        DTEX_STATUS_OK
    );
    assert_eq!(mid.struct_size, DTEX_STATS_SIZE_HOST_TILES);
    assert_eq!((mid.publications_deferred, mid.requests_rejected), (0, 7));

    let mut desc = DtexTextureDesc::default();
    desc.struct_size += 4;
    let p = DtexProceduralDesc::default();
    let mut tex = 0;
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_texture_create_procedural(l.0, &p, &desc, &mut tex) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("DtexTextureDesc.struct_size"), "{msg}");
    // SAFETY: NULL procedural description.
    fails(
        unsafe { dtex_texture_create_procedural(l.0, null(), null(), &mut tex) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // SAFETY: NULL out.
    fails(
        unsafe { dtex_texture_create_procedural(l.0, &p, null(), null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );

    let launch = l.launch();
    let so = DtexSampleOptions {
        struct_size: 3,
        ..Default::default()
    };
    let mut out = DtexSample::default();
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_launch_tex2d(launch, 0, 0.5, 0.5, &so, &mut out) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("DtexSampleOptions"), "{msg}");
    let so = DtexSampleOptions {
        struct_size: 8,
        fallback_to_coarser: 2,
        ..Default::default()
    };
    // SAFETY: valid pointers.
    fails(
        unsafe { dtex_launch_tex2d(launch, 0, 0.5, 0.5, &so, &mut out) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // SAFETY: NULL out.
    fails(
        unsafe { dtex_launch_tex2d(launch, 0, 0.5, 0.5, null(), null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // Batches: NULL arrays are fine only for an empty batch.
    let mut n = 7usize;
    // SAFETY: empty batch with NULL arrays.
    ok(unsafe { dtex_launch_tex2d_grad_batch(launch, null(), 0, null(), null_mut(), &mut n) });
    assert_eq!(n, 0);
    // SAFETY: NULL arrays with a count.
    fails(
        unsafe { dtex_launch_tex2d_grad_batch(launch, null(), 3, null(), null_mut(), null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    let q = [DtexGradQuery::default()];
    // SAFETY: an absurd count is refused before the arrays are touched.
    fails(
        unsafe {
            dtex_launch_tex2d_grad_batch(
                launch,
                q.as_ptr(),
                usize::MAX,
                null(),
                out_ptr(&mut out),
                null_mut(),
            )
        },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    // A NULL process_requests out still consumes the launch.
    // SAFETY: NULL out.
    fails(
        unsafe { dtex_process_requests(launch, null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    fails(dtex_launch_discard(launch), DTEX_STATUS_INVALID_HANDLE);

    let cb = DtexImageSourceCallbacks {
        struct_size: 8,
        reserved: 0,
        user_data: null_mut(),
        open: None,
        read_region: None,
        read_mip_tail: None,
        read_base_color: None,
        close: None,
    };
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_texture_create_from_callbacks(l.0, &cb, null(), null(), &mut tex) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(
        msg.contains("DtexImageSourceCallbacks.struct_size"),
        "{msg}"
    );
}

fn out_ptr(s: &mut DtexSample) -> *mut DtexSample {
    s
}

#[test]
fn bad_field_values_name_the_field() {
    let mut loader = DtexLoader::default();
    let cases: [(Change<DtexLoaderOptions>, &str); 5] = [
        (|o| o.eviction = 2, "eviction"),
        (|o| o.lru_threshold = 300, "lru_threshold"),
        (|o| o.lru_threshold = 0, "lru_threshold"),
        (|o| o.max_requests_per_launch = 0, "max_requests_per_launch"),
        (|o| o.interactive = 2, "interactive"),
    ];
    for (change, field) in cases {
        let mut o = small_options();
        change(&mut o);
        // SAFETY: valid pointers.
        let msg = fails(
            unsafe { dtex_loader_create(&o, &mut loader) },
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(msg.contains(field), "{field}: {msg}");
    }
    let l = TestLoader::new();
    let desc_cases: [(Change<DtexTextureDesc>, &str); 5] = [
        (|d| d.address_s = 5, "address_s"),
        (|d| d.address_t = 99, "address_t"),
        (|d| d.filter = 2, "filter"),
        (|d| d.mip_filter = 7, "mip_filter"),
        (|d| d.max_anisotropy = 0, "max_anisotropy"),
    ];
    let p = DtexProceduralDesc::default();
    let mut tex = 0;
    for (change, field) in desc_cases {
        let mut d = DtexTextureDesc::default();
        change(&mut d);
        // SAFETY: valid pointers.
        let msg = fails(
            unsafe { dtex_texture_create_procedural(l.0, &p, &d, &mut tex) },
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(msg.contains(field), "{field}: {msg}");
    }
    let proc_cases: [(Change<DtexProceduralDesc>, &str); 6] = [
        (|p| p.kind = 9, "kind 9"),
        (|p| p.texel_type = 9, "texel_type 9"),
        (|p| p.channels = 3, "channels 3"),
        (|p| p.width = 0, "size 0x"),
        (|p| p.height = 70000, "size"),
        (|p| p.reserved = 5, "reserved"),
    ];
    for (change, what) in proc_cases {
        let mut p = DtexProceduralDesc::default();
        change(&mut p);
        // SAFETY: valid pointers.
        let msg = fails(
            unsafe { dtex_texture_create_procedural(l.0, &p, null(), &mut tex) },
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(msg.contains(what), "{what}: {msg}");
    }
    assert_eq!(l.stats().textures, 0, "nothing was created");
}

#[test]
fn strings_must_be_utf8_and_files_must_exist_and_be_exr() {
    let l = TestLoader::new();
    let mut tex = 0;
    let bad = [0x66u8, 0xff, 0xfe, 0x2e, 0x65, 0x78, 0x72, 0];
    // SAFETY: a NUL-terminated byte string.
    let msg = fails(
        unsafe { dtex_texture_create_from_file(l.0, bad.as_ptr() as *const _, null(), &mut tex) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("path is not valid UTF-8"), "{msg}");
    // SAFETY: NULL path.
    fails(
        unsafe { dtex_texture_create_from_file(l.0, null(), null(), &mut tex) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    let dir = TempDir::new("files");
    let missing = cpath(&dir.path().join("missing.exr"));
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_texture_create_from_file(l.0, missing.as_ptr(), null(), &mut tex) },
        DTEX_STATUS_IO_ERROR,
    );
    assert!(msg.contains("missing.exr"), "{msg}");
    let text = dir.path().join("notes.exr");
    std::fs::write(&text, b"hello, not an image").unwrap();
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_texture_create_from_file(l.0, cpath(&text).as_ptr(), null(), &mut tex) },
        DTEX_STATUS_UNSUPPORTED,
    );
    assert!(msg.contains("not a texture file"), "{msg}");
    let empty = dir.path().join("empty.exr");
    std::fs::write(&empty, b"").unwrap();
    // SAFETY: valid pointers.
    fails(
        unsafe { dtex_texture_create_from_file(l.0, cpath(&empty).as_ptr(), null(), &mut tex) },
        DTEX_STATUS_UNSUPPORTED,
    );
}

#[test]
fn the_last_error_is_per_thread_and_survives_successes() {
    fails(
        dtex_loader_destroy(DtexLoader { id: 0 }),
        DTEX_STATUS_INVALID_HANDLE,
    );
    let here = text(dtex_last_error_message());
    assert!(here.contains("null handle"), "{here}");
    let there = std::thread::spawn(|| text(dtex_last_error_message()))
        .join()
        .unwrap();
    assert_eq!(there, "");
    // A success leaves the last failure's message.
    let _l = TestLoader::new();
    assert_eq!(text(dtex_last_error_message()), here);
}

#[test]
fn a_panic_inside_an_entry_point_becomes_internal() {
    let status = entry(|| panic!("boom {}", 42));
    assert_eq!(status, DTEX_STATUS_INTERNAL);
    assert!(last_error().contains("boom 42"), "{}", last_error());
    let status = entry(|| std::panic::panic_any(7u8));
    assert_eq!(status, DTEX_STATUS_INTERNAL);
    assert!(last_error().contains("non-text payload"));
}

#[test]
fn defaults_match_the_engine_and_null_is_a_no_op() {
    let mut o = DtexLoaderOptions {
        struct_size: 0,
        num_pages: 0,
        page_table_entries: 0,
        max_textures: 0,
        max_texture_memory: 0,
        max_requests_per_launch: 0,
        eviction: 0,
        fill_threads: 7,
        lru_threshold: 0,
        staged_reserve: 0.0,
        interactive: 0,
        max_fill_age: 0,
        max_publications_per_launch: 9,
        coalesce_constant_tiles: 0,
        fill_by_file_tile: 5,
        share_duplicate_textures: 3,
        full_pages: 4,
        fill_cpu_cores: -2.0,
        decode_blocks: 6,
        max_spill_bytes: 11,
        spill_dir: c"/nowhere".as_ptr(),
    };
    // SAFETY: valid pointer.
    unsafe { dtex_loader_options_default(&mut o) };
    // SAFETY: the default's `spill_dir` is NULL.
    assert_eq!(
        unsafe { o.to_engine() }.unwrap(),
        engine::LoaderOptions::default()
    );
    assert_eq!(
        o.struct_size as usize,
        std::mem::size_of::<DtexLoaderOptions>()
    );
    let mut d = DtexTextureDesc {
        filter: 9,
        ..Default::default()
    };
    // SAFETY: valid pointer.
    unsafe { dtex_texture_desc_default(&mut d) };
    assert_eq!(d.to_engine().unwrap(), engine::TextureDesc::default());
    assert_eq!(d.fallback_color, [1.0, 0.0, 1.0, 1.0]);
    let mut p = DtexProceduralDesc {
        kind: 5,
        ..Default::default()
    };
    // SAFETY: valid pointer.
    unsafe { dtex_procedural_desc_default(&mut p) };
    assert_eq!(p, DtexProceduralDesc::default());
    assert_eq!(
        (p.width, p.height, p.channels, p.param),
        (4096, 4096, 4, 16)
    );
    // SAFETY: NULL is allowed.
    unsafe {
        dtex_loader_options_default(null_mut());
        dtex_texture_desc_default(null_mut());
        dtex_procedural_desc_default(null_mut());
        dtex_source_set_error(null());
    }
}

#[test]
fn stats_fields_match_the_engine() {
    // The names of `demandtex::Stats`' fields, in order, from its Debug form.
    let debug = format!("{:?}", engine::Stats::default());
    let inner = debug.trim_start_matches("Stats {").trim_end_matches('}');
    let engine_fields: Vec<&str> = inner
        .split(',')
        .filter_map(|f| f.split(':').next())
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    let c = crate::device::LAYOUTS
        .iter()
        .find(|l| l.c_name == "DtexStats")
        .unwrap();
    let c_fields: Vec<&str> = c.fields.iter().map(|(f, _)| *f).skip(2).collect();
    assert_eq!(
        c_fields, engine_fields,
        "DtexStats must list every field of demandtex::Stats, in order (append new ones and \
         add the new struct_size to DtexStats::KNOWN_SIZES)"
    );
}
