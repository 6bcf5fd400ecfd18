//! `demandtex cuda-info` and `demandtex demo --backend cuda` without a GPU: exit code 2 and
//! a clear message, never a panic; `demandtex demo` on the CPU still renders. The driver
//! cases load the stand-in libcuda of `cuda/tests/stub_libcuda/` (`LD_LIBRARY_PATH`).

#[path = "../../cuda/tests/stub_libcuda/mod.rs"]
mod stub_libcuda;

use demandtex_cuda::{self as cuda, NO_DRIVER_MESSAGE};
use std::process::{Command, Output};
use stub_libcuda::Variant;

const BIN: &str = env!("CARGO_BIN_EXE_demandtex");

/// Runs `command`; returns (exit code, stdout, stderr) and checks that nothing panicked.
fn run(mut command: Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("the demandtex binary runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    );
    assert!(
        !stderr.contains("panicked") && !stdout.contains("panicked"),
        "{stdout}\n{stderr}"
    );
    (status.code().expect("exited, not killed"), stdout, stderr)
}

fn demandtex(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    c
}

#[test]
fn without_a_driver_cuda_is_exit_code_2_and_the_cpu_demo_still_renders() {
    if cuda::driver_present() {
        eprintln!("a CUDA driver is present: the no-driver checks need a machine without one");
    } else {
        for args in [
            &["cuda-info"][..],
            &["demo", "--backend", "cuda"],
            &[
                "demo",
                "--backend",
                "cuda",
                "--interactive",
                "--frames",
                "4",
            ],
        ] {
            let (code, stdout, stderr) = run(demandtex(args));
            assert_eq!(code, 2, "{args:?}: {stdout}\n{stderr}");
            assert_eq!(
                stderr,
                format!("demandtex: {NO_DRIVER_MESSAGE}\n"),
                "{args:?}"
            );
        }
    }
    let out = std::env::temp_dir().join(format!("demandtex-cli-cuda-cpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (code, stdout, stderr) = run(demandtex(&[
        "demo",
        "--width",
        "32",
        "--height",
        "18",
        "--texture-size",
        "1024",
        "--threads",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("converged after"), "{stdout}");
    assert!(out.join("demo.png").is_file() && out.join("stats.json").is_file());
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_driver_without_a_device_is_exit_code_2_with_the_drivers_message() {
    let Some(stub) = stub_libcuda::build(Variant::NoDevice) else {
        return;
    };
    let expected = "demandtex: no CUDA device: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE from cuInit)\n";
    for args in [
        &["cuda-info"][..],
        &["cuda-info", "--json"],
        &["demo", "--backend", "cuda"],
        &["demo", "--backend", "cuda", "--interactive"],
    ] {
        let mut c = stub.command(BIN);
        c.args(args);
        let (code, stdout, stderr) = run(c);
        assert_eq!((code, stderr.as_str()), (2, expected), "{args:?}: {stdout}");
        assert_eq!(stdout, "", "{args:?}");
    }
}

#[test]
fn a_driver_too_old_or_a_missing_ordinal_is_exit_code_2() {
    let Some(stub) = stub_libcuda::build(Variant::OldDriver { devices: 1 }) else {
        return;
    };
    let mut c = stub.command(BIN);
    c.arg("cuda-info");
    let (code, _, stderr) = run(c);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("the CUDA driver is too old: its library has no cuDeviceTotalMem_v2"),
        "{stderr}"
    );
    let mut c = stub.command(BIN);
    c.args(["cuda-info", "--device", "3"]);
    let (code, _, stderr) = run(c);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "demandtex: invalid argument: CUDA device 3 does not exist: the driver reports 1 device (0..=0)\n"
    );
}

#[test]
fn a_probed_device_is_described_and_the_cuda_demo_stops_cleanly_without_a_context_api() {
    let Some(stub) = stub_libcuda::build(Variant::Probeable { devices: 2 }) else {
        return;
    };
    let mut c = stub.command(BIN);
    c.arg("cuda-info");
    let (code, stdout, stderr) = run(c);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "CUDA driver: 13.0
device 0: demandtex stub device
  compute capability:        9.0
  memory:                    80.0 GiB
  multiprocessors:           132
  sparse CUDA arrays:        yes
  virtual memory management: yes
  largest mipmapped texture: 32768×32768
device 1: demandtex stub device
  compute capability:        7.5
  memory:                    16.0 GiB
  multiprocessors:           40
  sparse CUDA arrays:        no
  virtual memory management: no
  largest mipmapped texture: 16384×16384
"
    );
    let mut c = stub.command(BIN);
    c.args(["cuda-info", "--device", "1", "--json"]);
    let (code, stdout, stderr) = run(c);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json[0]["ordinal"], 1);
    assert_eq!(json[0]["compute_capability"], serde_json::json!([7, 5]));
    assert_eq!(json[0]["sparse_supported"], false);
    assert_eq!(json[0]["total_memory_bytes"], 16u64 << 30);

    let mut c = stub.command(BIN);
    c.args(["demo", "--backend", "cuda"]);
    let (code, stdout, stderr) = run(c);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        // The stub answers the probe but has no context API: the CUDA loader stops there.
        "demandtex: the CUDA driver is too old: its library has no cuDevicePrimaryCtxRetain; install a current NVIDIA driver, or use the CPU backend\n"
    );
}
