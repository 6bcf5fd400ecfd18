//! The CUDA backend without a GPU: probing a machine with no driver, or with a driver that
//! has no device or is too old, is a clear error (never a panic), and the CPU backend keeps
//! working in the same process.
//!
//! The driver cases use the stand-in `libcuda.so.1` of `stub_libcuda/`, built with the C
//! compiler and loaded by a child process (this test binary, re-run on one ignored test)
//! started with `LD_LIBRARY_PATH` pointing at it: cudarc opens the driver library on first
//! use, so the environment must be set before the process starts.

mod stub_libcuda;

use demandtex::sources::Checkerboard;
use demandtex::textures::TexelFormat;
use demandtex::{Error, Loader, LoaderOptions, TextureDesc};
use demandtex_cuda::{self as cuda, CudaDevice, CudaDeviceInfo, NO_DRIVER_MESSAGE};
use std::sync::Arc;
use stub_libcuda::Variant;

/// The environment variable that tells the child test which stub it runs against.
const MODE_VAR: &str = "DEMANDTEX_STUB_MODE";
/// The child test's name.
const CHILD: &str = "child_probe_against_the_stub_driver";

/// A CPU loader samples a checkerboard to convergence and gets its exact colours.
fn cpu_backend_renders() {
    let loader = Loader::new(LoaderOptions {
        num_pages: 1 << 20,
        ..Default::default()
    })
    .unwrap();
    let tex = loader
        .create_texture(
            Arc::new(Checkerboard::new(1024, 1024, 16, TexelFormat::RGBA32F)),
            TextureDesc::default(),
        )
        .unwrap();
    // Texel centres inside the first square and in the one to its right, at level 0.
    let points = [(8.5 / 1024.0, 8.5 / 1024.0), (24.5 / 1024.0, 8.5 / 1024.0)];
    let (light, dark) = Checkerboard::level_colors(0);
    for launches in 1..=8 {
        let launch = loader.launch_prepare();
        let samples: Vec<_> = points
            .iter()
            .map(|&(s, t)| launch.tex2d_lod(tex, s, t, 0.0, &Default::default()))
            .collect();
        if samples.iter().all(|s| s.resident) {
            assert_eq!(samples[0].value, light);
            assert_eq!(samples[1].value, dark);
            assert!(loader.stats().tiles_filled > 0);
            return;
        }
        assert!(launches < 8, "the CPU render did not converge");
        loader.process_requests(launch).wait();
    }
}

#[test]
fn without_a_driver_the_probe_is_a_clean_error_and_the_cpu_backend_works() {
    if cuda::driver_present() {
        // A machine with the NVIDIA driver: the strict checks need one without.
        let r = cuda::probe_device(0);
        eprintln!("a CUDA driver is present; the probe says {r:?}");
        assert!(matches!(r, Ok(_) | Err(Error::NoCudaDevice(_))), "{r:?}");
    } else {
        let no_driver = Error::NoCudaDriver(NO_DRIVER_MESSAGE.into());
        assert_eq!(cuda::probe_device(0), Err(no_driver.clone()));
        assert_eq!(cuda::device_count(), Err(no_driver.clone()));
        assert_eq!(CudaDevice::open(0).map(|_| ()), Err(no_driver.clone()));
        assert_eq!(
            no_driver.to_string(),
            "no CUDA driver found (libcuda.so.1 not loadable): install the NVIDIA driver, or use the CPU backend"
        );
    }
    cpu_backend_renders();
    // And asking again after CPU work is still a clean answer.
    let again = cuda::probe_device(0);
    assert!(cuda::driver_present() || again.is_err());
}

/// Runs [`CHILD`] in a child process against `variant`'s stub in `mode`; checks that it
/// passed, printed its marker and panicked nowhere.
fn run_child_against(variant: Variant, mode: &str) {
    let Some(stub) = stub_libcuda::build(variant) else {
        return;
    };
    let out = stub
        .command(std::env::current_exe().unwrap())
        .args([
            CHILD,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE_VAR, mode)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child ({mode}) failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("stub child ok: {mode}")),
        "the child ({mode}) did not run its checks:\n{stdout}\n{stderr}"
    );
    assert!(
        !stdout.contains("panicked") && !stderr.contains("panicked"),
        "a panic (even a caught one) in the child ({mode}):\n{stdout}\n{stderr}"
    );
}

#[test]
fn a_driver_without_a_device_gives_no_cuda_device_with_the_drivers_message() {
    run_child_against(Variant::NoDevice, "no-device");
}

#[test]
fn a_driver_reporting_zero_devices_gives_no_cuda_device() {
    run_child_against(Variant::OldDriver { devices: 0 }, "zero-devices");
}

#[test]
fn a_driver_missing_a_function_is_a_clean_error_and_ordinals_are_checked() {
    run_child_against(Variant::OldDriver { devices: 2 }, "old-driver");
}

#[test]
fn a_driver_with_devices_is_probed_without_a_context() {
    run_child_against(Variant::Probeable { devices: 2 }, "probe");
}

/// The child side: only does something when started by [`run_child_against`].
#[test]
#[ignore = "run in a child process by the stub-driver tests"]
fn child_probe_against_the_stub_driver() {
    let Ok(mode) = std::env::var(MODE_VAR) else {
        eprintln!("{CHILD}: not started by a stub-driver test ({MODE_VAR} unset); nothing to do");
        return;
    };
    assert!(cuda::driver_present(), "the stub libcuda did not load");
    match mode.as_str() {
        "no-device" => {
            let e = Error::NoCudaDevice(
                "no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE from cuInit)".into(),
            );
            assert_eq!(cuda::probe_device(0), Err(e.clone()));
            assert_eq!(cuda::device_count(), Err(e.clone()));
            assert_eq!(CudaDevice::open(0).map(|_| ()), Err(e.clone()));
            assert_eq!(
                e.to_string(),
                "no CUDA device: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE from cuInit)"
            );
        }
        "zero-devices" => {
            assert_eq!(cuda::device_count(), Ok(0));
            let e = Error::NoCudaDevice("the CUDA driver reports 0 devices".into());
            assert_eq!(cuda::probe_device(0), Err(e.clone()));
            assert_eq!(cuda::probe_device(7), Err(e));
        }
        "old-driver" => {
            assert_eq!(cuda::device_count(), Ok(2));
            let e = cuda::probe_device(0).unwrap_err();
            assert!(matches!(e, Error::NoCudaDriver(_)), "{e:?}");
            assert_eq!(
                e.to_string(),
                "the CUDA driver is too old: its library has no cuDeviceTotalMem_v2; install a current NVIDIA driver, or use the CPU backend"
            );
            assert_eq!(CudaDevice::open(1).map(|_| ()), Err(e));
            let e = cuda::probe_device(2).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
            assert!(
                e.to_string()
                    .contains("CUDA device 2 does not exist: the driver reports 2 devices (0..=1)"),
                "{e}"
            );
        }
        "probe" => {
            assert_eq!(cuda::device_count(), Ok(2));
            let first = CudaDeviceInfo {
                ordinal: 0,
                name: "demandtex stub device".into(),
                compute_capability: (9, 0),
                total_memory_bytes: 80 << 30,
                multiprocessors: 132,
                sparse_supported: true,
                vmm_supported: true,
                driver_version: 13000,
                max_mipmapped_texture: (32768, 32768),
            };
            assert_eq!(cuda::probe_device(0), Ok(first.clone()));
            assert_eq!(
                cuda::probe_device(1),
                Ok(CudaDeviceInfo {
                    ordinal: 1,
                    compute_capability: (7, 5),
                    total_memory_bytes: 16 << 30,
                    multiprocessors: 40,
                    sparse_supported: false,
                    vmm_supported: false,
                    max_mipmapped_texture: (16384, 16384),
                    ..first
                })
            );
            // The stub has no context API: opening is a clean "too old", not a panic.
            let e = CudaDevice::open(0).unwrap_err();
            assert!(
                e.to_string().starts_with(
                    "the CUDA driver is too old: its library has no cuDevicePrimaryCtxRetain;"
                ),
                "{e}"
            );
        }
        other => panic!("unknown {MODE_VAR} {other:?}"),
    }
    // The driver is loaded in this process; the CPU backend does not care.
    cpu_backend_renders();
    println!("stub child ok: {mode}");
}
