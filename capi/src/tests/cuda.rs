//! The CUDA entry points where no GPU can be used (this machine, CI): a clear NO_CUDA from
//! `dtex_cuda_loader_create`, and the launch calls refusing CPU loaders, NULL outputs and
//! launches that are not pending — never a crash. The GPU path itself runs in the GPU suite
//! (`tests/cpp-consumer` with a device, `cuda/tests/gpu_*`).

use super::util::*;
use crate::cuda::*;
use crate::handles::*;
use crate::launch::*;
use crate::status::*;
use engine::paging::DeviceContext;
use std::ptr::{null, null_mut};

#[test]
fn without_a_usable_gpu_creating_a_cuda_loader_is_no_cuda_with_the_reason() {
    if demandtex_cuda::probe_device(0).is_ok() {
        println!("skipped: a CUDA device is present");
        return;
    }
    let mut loader = DtexLoader { id: 42 };
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_cuda_loader_create(0, null(), &mut loader) },
        DTEX_STATUS_NO_CUDA,
    );
    assert!(msg.contains("CUDA"), "{msg}");
    assert_eq!(loader.id, 42, "out pointers are untouched on error");
    // A CPU loader still works beside it.
    let cpu = TestLoader::new();
    let mut launch = DtexLaunch::default();
    // SAFETY: valid pointers.
    ok(unsafe { dtex_launch_prepare(cpu.0, &mut launch) });
    ok(dtex_launch_discard(launch));
}

#[test]
fn cuda_launch_calls_refuse_cpu_loaders_bad_launches_and_null_outputs() {
    let cpu = TestLoader::new();
    let mut launch = DtexCudaLaunch::default();
    // SAFETY: plain data (pointers and integers): all-zero is a valid (null) context.
    let mut ctx: DeviceContext = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers; a NULL stream is the default stream.
    let msg = fails(
        unsafe { dtex_cuda_launch_prepare(cpu.0, null_mut(), &mut launch, &mut ctx) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("CPU loader"), "{msg}");
    // SAFETY: NULL outputs are refused before anything else.
    let msg = fails(
        unsafe { dtex_cuda_launch_prepare(cpu.0, null_mut(), null_mut(), &mut ctx) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("out_launch"), "{msg}");
    let bogus = DtexCudaLaunch {
        loader: cpu.0,
        number: 1,
        reserved: 0,
    };
    let mut ticket = DtexTicket { id: 9 };
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_cuda_process_requests(bogus, null_mut(), &mut ticket) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("CPU loader"), "{msg}");
    assert_eq!(ticket.id, 9);
    let stale = DtexCudaLaunch {
        loader: DtexLoader { id: 0xdead_beef },
        ..bogus
    };
    // SAFETY: valid pointers.
    fails(
        unsafe { dtex_cuda_process_requests(stale, null_mut(), &mut ticket) },
        DTEX_STATUS_INVALID_HANDLE,
    );
}

#[test]
fn setting_tile_publication_refuses_unknown_values_cpu_loaders_and_bad_handles() {
    let cpu = TestLoader::new();
    let msg = fails(
        dtex_cuda_loader_set_tile_publication(cpu.0, 7),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("tile publication 7"), "{msg}");
    for publication in [
        DTEX_TILE_PUBLICATION_BEFORE_LAUNCH,
        DTEX_TILE_PUBLICATION_DURING_LAUNCH,
    ] {
        let msg = fails(
            dtex_cuda_loader_set_tile_publication(cpu.0, publication),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(msg.contains("CPU loader"), "{msg}");
    }
    fails(
        dtex_cuda_loader_set_tile_publication(DtexLoader { id: 0xdead_beef }, 0),
        DTEX_STATUS_INVALID_HANDLE,
    );
}

#[test]
fn cuda_ptex_calls_refuse_cpu_loaders_null_arguments_and_bad_handles() {
    let cpu = TestLoader::new();
    let fixture = super::ptex::fixtures().remove(0);
    let path = std::ffi::CString::new(fixture.to_str().unwrap()).unwrap();
    let mut id = 77u32;
    // SAFETY: plain data (pointers and integers): all-zero is a valid (null) table.
    let mut device: engine::ptex::device::PtexDeviceTexture = unsafe { std::mem::zeroed() };
    // A CPU loader has no device tables: refused, nothing written.
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_cuda_ptex_create(cpu.0, path.as_ptr(), &mut id, &mut device) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("CPU loader"), "{msg}");
    assert_eq!(
        (id, device.num_faces),
        (77, 0),
        "out pointers are untouched on error"
    );
    // NULL arguments are named.
    for (p, i, d, what) in [
        (null(), true, true, "path"),
        (path.as_ptr(), false, true, "out_texture"),
        (path.as_ptr(), true, false, "out_device"),
    ] {
        let i = if i { &mut id as *mut u32 } else { null_mut() };
        let d = if d { &mut device as *mut _ } else { null_mut() };
        // SAFETY: valid or NULL pointers.
        let msg = fails(
            unsafe { dtex_cuda_ptex_create(cpu.0, p, i, d) },
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(msg.contains(what), "{what}: {msg}");
    }
    // SAFETY: valid pointers.
    fails(
        unsafe {
            dtex_cuda_ptex_create(
                DtexLoader { id: 0xdead_beef },
                path.as_ptr(),
                &mut id,
                &mut device,
            )
        },
        DTEX_STATUS_INVALID_HANDLE,
    );
    // SAFETY: valid pointers.
    let msg = fails(
        unsafe { dtex_cuda_ptex_get_device_texture(cpu.0, 1, &mut device) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("CPU loader"), "{msg}");
    // SAFETY: NULL output.
    let msg = fails(
        unsafe { dtex_cuda_ptex_get_device_texture(cpu.0, 1, null_mut()) },
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    assert!(msg.contains("out_device"), "{msg}");
    assert_eq!(device.num_faces, 0);
}
