//! The multi-pass cycle through the C ABI: convergence, batches, tickets, the device
//! context, budgets, statistics and concurrent use.

use super::util::*;
use crate::handles::*;
use crate::launch::*;
use crate::loader::*;
use crate::options::*;
use crate::sampling::*;
use crate::status::*;
use crate::textures::*;
use engine::sources::{Checkerboard, Noise};
use engine::textures::{TexelFormat, TexelType};
use engine::{LoaderOptions, SampleOptions, TextureCache, TextureId};
use std::ptr::{null, null_mut};
use std::sync::Arc;

fn procedural(loader: &TestLoader, kind: u32, size: u32, texel_type: u32, param: u32) -> u32 {
    let p = DtexProceduralDesc {
        kind,
        width: size,
        height: size,
        texel_type,
        param,
        ..Default::default()
    };
    let mut tex = DTEX_NO_TEXTURE;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_create_procedural(loader.0, &p, null(), &mut tex) });
    assert_ne!(tex, DTEX_NO_TEXTURE);
    tex
}

/// What a fully resident render gives: the engine's blocking cache over the same source.
fn reference(
    source: Arc<dyn engine::sources::ImageSource>,
    queries: &[DtexGradQuery],
) -> Vec<[f32; 4]> {
    let cache = TextureCache::new(LoaderOptions {
        num_pages: 1 << 20,
        max_texture_memory: 256 << 20,
        fill_threads: 1,
        ..Default::default()
    })
    .unwrap();
    let tex = cache.create_texture(source, Default::default()).unwrap();
    queries
        .iter()
        .map(|q| {
            let s = cache.tex2d_grad(
                tex,
                q.s,
                q.t,
                [q.dsdx, q.dtdx],
                [q.dsdy, q.dtdy],
                &SampleOptions::default(),
            );
            assert!(s.resident);
            s.value
        })
        .collect()
}

#[test]
fn multi_pass_convergence_equals_a_fully_resident_render() {
    let loader = TestLoader::new();
    let checker = procedural(
        &loader,
        DTEX_PROCEDURAL_CHECKERBOARD,
        2048,
        DTEX_TEXEL_U8,
        16,
    );
    let noise = procedural(&loader, DTEX_PROCEDURAL_NOISE, 1024, DTEX_TEXEL_F16, 7);
    let mut queries = query_grid(checker, 12, 2048.0);
    queries.extend(query_grid(noise, 12, 1024.0));
    let (samples, launches) = converge(&loader, &queries);
    assert!(launches >= 2, "the first launch cannot be resident");
    let n = queries.len() / 2;
    let expected_checker = reference(
        Arc::new(Checkerboard::new(2048, 2048, 16, TexelFormat::RGBA8)),
        &queries[..n],
    );
    let f16 = TexelFormat::new(TexelType::F16, 4).unwrap();
    let expected_noise = reference(Arc::new(Noise::new(1024, 1024, 7, f16)), &queries[n..]);
    for (i, (s, e)) in samples
        .iter()
        .zip(expected_checker.iter().chain(&expected_noise))
        .enumerate()
    {
        assert_eq!(s.resident, 1);
        assert_eq!(s.value, *e, "query {i}: {:?}", queries[i]);
    }
    let stats = loader.stats();
    assert_eq!(stats.textures, 2);
    assert!(
        stats.tiles_filled > 0 && stats.mip_tails_filled == 2,
        "{stats:?}"
    );
    assert_eq!(stats.launches as usize, launches);
    assert_eq!(stats.read_errors, 0);
}

#[test]
fn batched_sampling_equals_single_sampling() {
    let loader = TestLoader::new();
    let tex = procedural(&loader, DTEX_PROCEDURAL_MANDELBROT, 1024, DTEX_TEXEL_U8, 64);
    let mut queries = query_grid(tex, 10, 1024.0);
    // An id outside the loader's range of texture ids.
    queries.push(DtexGradQuery {
        texture: DTEX_NO_TEXTURE,
        ..queries[0]
    });
    for round in 0..3 {
        let launch = loader.launch();
        let (batched, resident) = batch(launch, &queries);
        let mut singles = Vec::new();
        for q in &queries {
            let mut s = DtexSample::default();
            // SAFETY: valid pointers.
            ok(unsafe {
                dtex_launch_tex2d_grad(
                    launch,
                    q.texture,
                    q.s,
                    q.t,
                    q.dsdx,
                    q.dtdx,
                    q.dsdy,
                    q.dtdy,
                    null(),
                    &mut s,
                )
            });
            singles.push(s);
        }
        assert_eq!(batched, singles, "round {round}");
        assert_eq!(resident, singles.iter().filter(|s| s.resident == 1).count());
        // The id outside the range gives the default fallback colour, resident.
        let last = singles.last().unwrap();
        assert_eq!((last.value, last.resident), ([1.0, 0.0, 1.0, 1.0], 1));
        process_and_wait(launch);
    }
}

#[test]
fn tex2d_and_lod_lookups_and_fallback_to_coarser() {
    let loader = TestLoader::new();
    let p = DtexProceduralDesc {
        width: 512,
        height: 512,
        param: 8,
        ..Default::default()
    };
    let desc = DtexTextureDesc {
        filter: crate::options::DTEX_FILTER_POINT,
        mip_filter: crate::options::DTEX_FILTER_POINT,
        ..Default::default()
    };
    let mut tex = 0;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_create_procedural(loader.0, &p, &desc, &mut tex) });
    let fallback = DtexSampleOptions {
        fallback_to_coarser: 1,
        ..Default::default()
    };
    let lookups = |launch: DtexLaunch, options: *const DtexSampleOptions| {
        let mut a = DtexSample::default();
        let mut b = DtexSample::default();
        // SAFETY: valid pointers.
        ok(unsafe { dtex_launch_tex2d(launch, tex, 0.3, 0.6, options, &mut a) });
        // SAFETY: valid pointers.
        ok(unsafe { dtex_launch_tex2d_lod(launch, tex, 0.3, 0.6, 2.0, options, &mut b) });
        (a, b)
    };
    // First launch: nothing is resident, not even the mip tail.
    let first = loader.launch();
    let (a, b) = lookups(first, null());
    assert_eq!((a.resident, b.resident), (0, 0));
    process_and_wait(first);
    // Second: the mip tail is in; with fallback the coarser level stands in, resident.
    let second = loader.launch();
    let (a, _) = lookups(second, null());
    let (fa, _) = lookups(second, &fallback);
    assert_eq!((a.resident, a.coarser), (0, 0));
    assert_eq!(
        (fa.resident, fa.coarser),
        (1, 1),
        "a coarser level stood in"
    );
    process_and_wait(second);
    let mut converged = None;
    for _ in 0..10 {
        let launch = loader.launch();
        let (a, b) = lookups(launch, null());
        if a.resident == 1 && b.resident == 1 {
            converged = Some((a, b));
            ok(dtex_launch_discard(launch));
            break;
        }
        process_and_wait(launch);
    }
    let (a, b) = converged.expect("converges");
    // Level 0 and level 2 of the checkerboard have different colours.
    let (c0, d0) = Checkerboard::level_colors(0);
    let (c2, d2) = Checkerboard::level_colors(2);
    let close = |x: [f32; 4], y: [f32; 4]| x.iter().zip(y).all(|(p, q)| (p - q).abs() < 0.01);
    assert!(close(a.value, c0) || close(a.value, d0), "{:?}", a.value);
    assert!(close(b.value, c2) || close(b.value, d2), "{:?}", b.value);
}

#[test]
fn tickets_poll_wait_and_time_out() {
    let loader = TestLoader::new();
    let tex = procedural(
        &loader,
        DTEX_PROCEDURAL_MANDELBROT,
        4096,
        DTEX_TEXEL_F32,
        500,
    );
    let launch = loader.launch();
    let mut launch_num = 0;
    // SAFETY: valid pointer.
    ok(unsafe { dtex_launch_get_number(launch, &mut launch_num) });
    assert_eq!(launch_num, 1);
    let _ = batch(launch, &query_grid(tex, 4, 4096.0));
    let mut ticket = DtexTicket::default();
    // SAFETY: valid pointer.
    ok(unsafe { dtex_process_requests(launch, &mut ticket) });
    let (mut done, mut remaining, mut total) = (9u32, 0u64, 0u64);
    // SAFETY: valid pointers.
    ok(unsafe { dtex_ticket_poll(ticket, &mut done, &mut remaining, &mut total) });
    assert!(
        total >= 1 && remaining <= total && done <= 1,
        "{done} {remaining}/{total}"
    );
    // SAFETY: NULL out_done.
    fails(
        unsafe { dtex_ticket_poll(ticket, null_mut(), null_mut(), null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    let status = dtex_ticket_wait(ticket, 0);
    assert!(
        status == DTEX_STATUS_OK || status == DTEX_STATUS_TIMEOUT,
        "{status}"
    );
    if status == DTEX_STATUS_TIMEOUT {
        assert!(last_error().contains("still running"));
    }
    // A huge (but not infinite) limit is no limit.
    ok(dtex_ticket_wait(ticket, u64::MAX - 1));
    // SAFETY: valid pointers; the others may be NULL.
    ok(unsafe { dtex_ticket_poll(ticket, &mut done, null_mut(), null_mut()) });
    assert_eq!(done, 1);
    ok(dtex_ticket_destroy(ticket));
    fails(dtex_ticket_destroy(ticket), DTEX_STATUS_INVALID_HANDLE);
    // The next launch sees the fills.
    let next = loader.launch();
    // SAFETY: valid pointer.
    ok(unsafe { dtex_launch_get_number(next, &mut launch_num) });
    assert_eq!(launch_num, 2);
    ok(dtex_launch_discard(next));
}

#[test]
fn the_device_context_describes_the_page_layer() {
    let options = small_options();
    let loader = TestLoader::with(options);
    let launch = loader.launch();
    let mut ctx = std::mem::MaybeUninit::<crate::device::DeviceContext>::uninit();
    // SAFETY: writable.
    ok(unsafe { dtex_launch_get_device_context(launch, ctx.as_mut_ptr()) });
    // SAFETY: written on success.
    let ctx = unsafe { ctx.assume_init() };
    assert_eq!(ctx.num_pages, options.num_pages);
    assert_eq!(ctx.max_textures, options.max_textures);
    assert_eq!(ctx.page_table_entries, options.page_table_entries);
    assert_eq!(ctx.launch_num, 1);
    assert!(!ctx.page_table.is_null() && !ctx.residence_bits.is_null());
    assert_eq!(
        ctx.flags & crate::device::DTEX_CONTEXT_FLAG_REQUEST_IF_RESIDENT,
        1
    );
    // SAFETY: NULL out.
    fails(
        unsafe { dtex_launch_get_device_context(launch, null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    ok(dtex_launch_discard(launch));
}

#[test]
fn budgets_can_change_but_not_below_the_mip_tails() {
    let loader = TestLoader::new();
    let tex = procedural(
        &loader,
        DTEX_PROCEDURAL_CHECKERBOARD,
        8192,
        DTEX_TEXEL_F32,
        16,
    );
    let _ = converge(&loader, &query_grid(tex, 6, 8192.0));
    ok(dtex_loader_set_max_texture_memory(loader.0, 8 << 20));
    assert_eq!(loader.stats().budget_bytes, 8 << 20);
    let msg = fails(
        dtex_loader_set_max_texture_memory(loader.0, 1),
        DTEX_STATUS_BUDGET_TOO_SMALL,
    );
    assert!(msg.contains("budget"), "{msg}");
    assert_eq!(
        loader.stats().budget_bytes,
        8 << 20,
        "unchanged after a refusal"
    );
}

#[test]
fn loaders_run_out_of_texture_ids_with_a_clear_error() {
    let loader = TestLoader::with(DtexLoaderOptions {
        max_textures: 2,
        page_table_entries: 1024,
        ..small_options()
    });
    procedural(&loader, DTEX_PROCEDURAL_CHECKERBOARD, 64, DTEX_TEXEL_U8, 4);
    procedural(&loader, DTEX_PROCEDURAL_CHECKERBOARD, 64, DTEX_TEXEL_U8, 4);
    let p = DtexProceduralDesc::default();
    let mut tex = 0;
    // SAFETY: valid pointers.
    let status = unsafe { dtex_texture_create_procedural(loader.0, &p, null(), &mut tex) };
    assert_ne!(status, DTEX_STATUS_OK);
    assert!(last_error().contains("max_textures"), "{}", last_error());
}

#[test]
fn many_threads_sample_one_launch_while_another_destroys_the_loader() {
    let loader = TestLoader::new();
    let tex = procedural(&loader, DTEX_PROCEDURAL_NOISE, 2048, DTEX_TEXEL_U8, 3);
    let queries = query_grid(tex, 16, 2048.0);
    let (reference, _) = converge(&loader, &queries);
    // Sampling from many threads at once gives the same results as one thread.
    let launch = loader.launch();
    std::thread::scope(|s| {
        for part in queries.chunks(64).zip(reference.chunks(64)) {
            s.spawn(move || {
                for _ in 0..20 {
                    let (got, _) = batch(launch, part.0);
                    assert_eq!(got, part.1);
                }
            });
        }
    });
    // Destroying the loader while threads sample: each call completes or gets
    // INVALID_HANDLE, never a crash.
    let barrier = std::sync::Barrier::new(5);
    std::thread::scope(|s| {
        for part in queries.chunks(64).take(4) {
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                let mut out = vec![DtexSample::default(); part.len()];
                loop {
                    // SAFETY: arrays of part.len() elements.
                    let status = unsafe {
                        dtex_launch_tex2d_grad_batch(
                            launch,
                            part.as_ptr(),
                            part.len(),
                            null(),
                            out.as_mut_ptr(),
                            null_mut(),
                        )
                    };
                    if status == DTEX_STATUS_INVALID_HANDLE {
                        break;
                    }
                    assert_eq!(status, DTEX_STATUS_OK);
                }
            });
        }
        barrier.wait();
        std::thread::sleep(std::time::Duration::from_millis(20));
        ok(dtex_loader_destroy(loader.0));
    });
    fails(dtex_launch_discard(launch), DTEX_STATUS_INVALID_HANDLE);
    let _ = TextureId(0);
}
