//! Every input the fuzzers (`fuzz/`, `scripts/fuzz.sh`) found a crash with, kept in
//! `fuzz/regressions/TARGET/` after the fix, read through the same code as the target does
//! (`sources::check`, the whole-file walk of `demandtex info --check`) in an ordinary test
//! build. A panic anywhere fails the test, even one the library contains and reports as an
//! error: a panic hook counts them.

use demandtex::sources::check::{check_ptex, check_source};
use demandtex::sources::ptex::{PtexFile, PtexOptions};
use demandtex::sources::tiff::TiffSource;
use demandtex::sources::ExrSource;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn fuzz_findings_read_without_a_panic() {
    let panics = Arc::new(AtomicUsize::new(0));
    let seen = panics.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        seen.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let mut read = 0;
    for path in inputs("exr") {
        let before = panics.load(Ordering::SeqCst);
        let result = check_source(&ExrSource::new(&path), true);
        let after = panics.load(Ordering::SeqCst);
        assert_eq!(before, after, "{}: panicked ({result:?})", path.display());
        read += 1;
    }
    for path in inputs("ptex") {
        let before = panics.load(Ordering::SeqCst);
        if let Ok(file) = PtexFile::open_with(&path, PtexOptions::default()) {
            let _ = check_ptex(&file, true);
        }
        let after = panics.load(Ordering::SeqCst);
        assert_eq!(before, after, "{}: panicked", path.display());
        read += 1;
    }
    for path in inputs("tiff") {
        let before = panics.load(Ordering::SeqCst);
        let source = TiffSource::new(&path);
        let _ = source.metadata();
        let result = check_source(&source, true);
        let after = panics.load(Ordering::SeqCst);
        assert_eq!(before, after, "{}: panicked ({result:?})", path.display());
        read += 1;
    }
    let _ = std::panic::take_hook();
    assert!(
        read > 0,
        "no regression inputs found under fuzz/regressions"
    );
}
