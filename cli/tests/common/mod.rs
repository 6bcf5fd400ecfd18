//! Helpers the CLI's integration tests share: the binary, a fresh scratch directory, and
//! a successful run's output.

use std::path::PathBuf;
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
