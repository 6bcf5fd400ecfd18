//! Files that change on disk: every `open` after the first parses the file now at the
//! path; a lazy parse is the first `open`'s; reads of a changed file fail, naming the
//! change. (Whole renders through the engine: `core/tests/exr_file_changes.rs`.)

use super::fixtures::*;
use crate::sources::exr::{ExrOptions, ExrSource, FileHandles};
use crate::sources::{ImageSource, Readiness};
use crate::textures::TileRegion;
use std::sync::Arc;

fn source(f: &TempFile, handles: &Arc<FileHandles>) -> ExrSource {
    ExrSource::with_options(
        f.path(),
        ExrOptions {
            handles: handles.clone(),
            ..ExrOptions::default()
        },
    )
}

fn read(src: &ExrSource, level: u32) -> Result<Readiness, crate::sources::SourceError> {
    let r = TileRegion {
        level,
        x: 0,
        y: 0,
        width: 8,
        height: 8,
    };
    src.read_tile(r, &mut [0u8; 8 * 8 * 8], 64)
}

#[test]
fn a_lazy_parse_is_the_first_open_and_later_opens_parse_anew() {
    let f = write("lazy", &Spec::rgba_half(100, 60, 32));
    let handles = Arc::new(FileHandles::new(4));
    let src = source(&f, &handles);
    src.format().unwrap();
    let lazy = src.opened.read().clone().unwrap();
    assert_eq!(src.open().unwrap().width, 100);
    let first = src.opened.read().clone().unwrap();
    assert!(
        Arc::ptr_eq(&lazy, &first),
        "the first open uses the lazy parse"
    );
    src.open().unwrap();
    let second = src.opened.read().clone().unwrap();
    assert!(!Arc::ptr_eq(&first, &second), "a reopen parses again");
    assert_eq!(handles.stats().opens, 1, "from the same open file");
}

#[test]
fn a_reopen_reads_the_file_now_at_the_path() {
    let f = write("reopen", &Spec::rgba_half(100, 60, 32));
    let handles = Arc::new(FileHandles::new(4));
    let src = source(&f, &handles);
    assert_eq!(src.open().unwrap().width, 100);
    // Replaced by a rename: the source still reads the file it opened, whole.
    let g = write("reopen-new", &Spec::rgba_half(48, 200, 16));
    std::fs::rename(g.path(), f.path()).unwrap();
    assert_eq!(read(&src, 0).unwrap(), Readiness::Ready);
    // Reopened: the new file, whatever the set of open files still holds.
    let info = src.open().unwrap();
    assert_eq!((info.width, info.height), (48, 200));
    let reference = Reference::read(f.path());
    let levels = expected_levels(
        &reference,
        0,
        &["R", "G", "B", "A"],
        info.format,
        (48, 200),
        info.num_levels as usize,
        info.num_levels as usize,
    );
    check_reads(&src, &levels);
}

#[test]
fn reads_of_a_changed_file_fail_and_say_how_it_changed() {
    // Scan lines: the levels past 0 are generated, and fail too once the file changed.
    let f = write(
        "changed",
        &Spec::rgba_half(64, 64, 16).with(|s| {
            s.tiles = None;
            s.levels = LevelSpec::Single;
        }),
    );
    let handles = Arc::new(FileHandles::new(4));
    let src = source(&f, &handles);
    src.open().unwrap();
    assert_eq!(read(&src, 0).unwrap(), Readiness::Ready);
    assert_eq!(read(&src, 2).unwrap(), Readiness::Ready);
    let len = std::fs::metadata(f.path()).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(f.path())
        .unwrap();
    file.set_len(len + 10).unwrap();
    for level in [0, 2] {
        let e = read(&src, level).unwrap_err().0;
        assert!(
            e.contains("changed on disk")
                && e.contains(&format!("length went from {len} to {}", len + 10))
                && e.contains("invalidate"),
            "{e}"
        );
    }
    // Reopened, it is served again (the bytes added are past the data).
    src.open().unwrap();
    assert_eq!(read(&src, 0).unwrap(), Readiness::Ready);
}
