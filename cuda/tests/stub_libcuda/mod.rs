//! Builds the stand-in `libcuda.so.1` of `libcuda_stub.c` with the system C compiler, for
//! tests of the "no GPU" paths. Shared by core's `cuda_no_device` test and the CLI's
//! `cuda_cli` test (which includes this file by path).
//!
//! cudarc opens the driver library on first use, so a stub only takes effect in a process
//! started with `LD_LIBRARY_PATH` pointing at it: tests run a child process
//! ([`Stub::command`]).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The stub's C source.
const SOURCE: &str = include_str!("libcuda_stub.c");

/// Which stub to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `cuInit` fails with `CUDA_ERROR_NO_DEVICE`.
    NoDevice,
    /// `cuInit` succeeds and the driver reports this many devices, but the library lacks
    /// `cuDeviceTotalMem_v2` (a driver too old).
    OldDriver {
        /// Devices reported.
        devices: u32,
    },
    /// As `OldDriver`, plus what a probe needs (device 0 a 9.0 device with sparse arrays,
    /// the others 7.5 devices without), but no context API.
    Probeable {
        /// Devices reported.
        devices: u32,
    },
}

/// A built stub, in its own directory (removed on drop).
pub struct Stub {
    dir: PathBuf,
}

impl Stub {
    /// The directory to put on `LD_LIBRARY_PATH`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `program` set up to load the stub instead of any installed driver.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("LD_LIBRARY_PATH", &self.dir);
        c
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The first C compiler that runs: `$CC`, `cc`, `gcc`, `clang`.
fn c_compiler() -> Option<String> {
    let candidates = std::env::var("CC")
        .ok()
        .into_iter()
        .chain(["cc", "gcc", "clang"].map(String::from));
    for cc in candidates {
        let ok = Command::new(&cc)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(cc);
        }
    }
    None
}

/// Builds `variant` into a fresh temporary directory as `libcuda.so.1` and `libcuda.so`
/// (the name cudarc tries first, so the stub wins over an installed driver too). `None`,
/// after a loud message, only when no C compiler is found; a failing compile panics.
pub fn build(variant: Variant) -> Option<Stub> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let Some(cc) = c_compiler() else {
        eprintln!(
            "\n*** SKIPPED: no C compiler ($CC, cc, gcc, clang) to build the stand-in libcuda; \
             the stub-driver checks did not run ***\n"
        );
        return None;
    };
    let dir = std::env::temp_dir().join(format!(
        "demandtex-stub-libcuda-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let stub = Stub { dir };
    let source = stub.dir.join("libcuda_stub.c");
    std::fs::write(&source, SOURCE).unwrap();
    let lib = stub.dir.join("libcuda.so.1");
    let mut c = Command::new(&cc);
    c.args([
        "-shared",
        "-fPIC",
        "-O1",
        "-Wall",
        "-Werror",
        "-Wl,-soname,libcuda.so.1",
    ]);
    match variant {
        Variant::NoDevice => {}
        Variant::OldDriver { devices } => {
            c.arg(format!("-DSTUB_DEVICES={devices}"));
        }
        Variant::Probeable { devices } => {
            c.args([format!("-DSTUB_DEVICES={devices}"), "-DSTUB_PROBE".into()]);
        }
    }
    let out = c.arg("-o").arg(&lib).arg(&source).output().unwrap();
    assert!(
        out.status.success(),
        "{cc} failed to build the stub libcuda: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::copy(&lib, stub.dir.join("libcuda.so")).unwrap();
    Some(stub)
}
