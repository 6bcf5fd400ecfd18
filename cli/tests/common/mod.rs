//! Helpers the CLI's integration tests share: the binary, a fresh scratch directory, a
//! successful run's output, OpenImageIO's comparison programs, and `.dtxq` traces.

// Each test binary includes this module and uses some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `demandtex` binary under test.
pub fn demandtex() -> Command {
    Command::new(env!("CARGO_BIN_EXE_demandtex"))
}

/// An empty scratch directory named for the test (and this process).
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Standard output of a run that must have succeeded (else the failure and its stderr).
pub fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The OpenImageIO comparison program `oiio-NAME` (`scripts/build-oiio-replay.sh` builds
/// it), or `None` where OpenImageIO is not installed (the caller's check is skipped, saying
/// so).
pub fn oiio_program(name: &str) -> Option<PathBuf> {
    let installed = Command::new("pkg-config")
        .args(["--exists", "OpenImageIO"])
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("note: OpenImageIO not installed (pkg-config OpenImageIO); OIIO check skipped");
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    ok(
        Command::new(root.join("scripts/build-oiio-replay.sh"))
            .output()
            .unwrap(),
        "build-oiio-replay.sh",
    );
    Some(root.join("target/oiio-replay").join(format!("oiio-{name}")))
}

/// One query record, as QUERIES.md lays it out.
#[derive(Clone, Copy, Debug)]
pub struct Q {
    pub texture: u32,
    pub s: f32,
    pub t: f32,
    pub ddx: [f32; 2],
    pub ddy: [f32; 2],
}

/// A trace's bytes, written here independently of the CLI's writer.
pub fn trace_bytes(textures: &[&str], queries: &[Q]) -> Vec<u8> {
    let mut b = b"DTXQ".to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&(textures.len() as u32).to_le_bytes());
    for t in textures {
        b.extend_from_slice(&(t.len() as u32).to_le_bytes());
        b.extend_from_slice(t.as_bytes());
    }
    b.extend_from_slice(&(queries.len() as u64).to_le_bytes());
    for q in queries {
        b.extend_from_slice(&q.texture.to_le_bytes());
        for v in [q.s, q.t, q.ddx[0], q.ddx[1], q.ddy[0], q.ddy[1]] {
            b.extend_from_slice(&v.to_le_bytes());
        }
    }
    b
}
