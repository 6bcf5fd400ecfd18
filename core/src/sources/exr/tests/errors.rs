//! Bad files: missing, truncated, corrupt, garbage, unsupported. Clear errors naming the
//! file, never a panic.

use super::fixtures::*;
use crate::sources::exr::{ChannelSelection, ExrOptions, ExrSource};
use crate::sources::{ImageSource, SourceError};
use crate::textures::{TextureLayout, TileRegion};

/// Open `path` and read every cache tile and mip-tail level; the first error, if any.
fn read_everything(src: &ExrSource) -> Result<(), SourceError> {
    let info = src.open()?;
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)
        .map_err(|e| SourceError(e.to_string()))?;
    let tb = info.format.texel_bytes();
    let mut first = Ok(());
    for level in 0..info.num_levels {
        let l = layout.levels[level as usize];
        let regions: Vec<TileRegion> = if layout.in_mip_tail(level) {
            vec![layout.level_region(level)]
        } else {
            (0..l.tiles_y)
                .flat_map(|ty| (0..l.tiles_x).map(move |tx| (tx, ty)))
                .map(|(tx, ty)| layout.tile_region(level, tx, ty))
                .collect()
        };
        for r in regions {
            let row_bytes = r.width as usize * tb;
            let mut dest = vec![0u8; row_bytes * r.height as usize];
            if let Err(e) = src.read_tile(r, &mut dest, row_bytes) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
    }
    first
}

fn names_file(e: &SourceError, f: &TempFile) {
    let path = f.path().display().to_string();
    assert!(e.0.contains(&path), "the error names the file: {e}");
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let f = TempFile::new("missing");
    let src = ExrSource::new(f.path());
    let e = src.open().unwrap_err();
    names_file(&e, &f);
    assert!(e.0.contains("cannot open"), "{e}");
    // Reading without opening first says the same.
    let mut dest = [0u8; 8];
    let r = TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: 1,
        height: 1,
    };
    assert!(src.read_region(r, &mut dest, 8).is_err());
}

#[test]
fn garbage_is_not_an_exr() {
    let f = TempFile::new("garbage");
    for bytes in [
        b"not an exr at all, just text\n".to_vec(),
        vec![],
        vec![0x76, 0x2f, 0x31, 0x01, 2, 0, 0, 0, 0xFF, 0xFF, 0xFF],
        (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect(),
    ] {
        std::fs::write(f.path(), &bytes).unwrap();
        let e = ExrSource::new(f.path()).open().unwrap_err();
        names_file(&e, &f);
    }
}

#[test]
fn truncated_files_fail_at_open_or_read_never_panic() {
    for spec in [
        Spec::rgba_half(200, 150, 32),
        Spec::rgba_half(200, 150, 32).with(|s| {
            s.tiles = None;
            s.levels = LevelSpec::Single;
        }),
    ] {
        let good = write("trunc-src", &spec);
        let bytes = std::fs::read(good.path()).unwrap();
        let f = TempFile::new("trunc");
        let n = bytes.len();
        for cut in [0, 3, 40, 200, 400, n / 4, n / 2, n - 1000, n - 10, n - 1] {
            std::fs::write(f.path(), &bytes[..cut]).unwrap();
            let src = ExrSource::new(f.path());
            let e = read_everything(&src).expect_err("a cut file cannot be read in full");
            names_file(&e, &f);
        }
    }
}

#[test]
fn corrupt_chunks_give_errors_naming_level_and_tile() {
    let spec = Spec::rgba_half(256, 256, 64);
    let good = write("corrupt-src", &spec);
    let bytes = std::fs::read(good.path()).unwrap();
    let f = TempFile::new("corrupt");
    // Scribble over the compressed data of the chunks in the second half of the file.
    let mut bad = bytes.clone();
    for i in (bytes.len() / 2..bytes.len()).step_by(97) {
        bad[i] ^= 0x5A;
    }
    std::fs::write(f.path(), &bad).unwrap();
    let e = read_everything(&ExrSource::new(f.path())).unwrap_err();
    names_file(&e, &f);
    assert!(e.0.contains("level") && e.0.contains("tile"), "{e}");
}

#[test]
fn a_corrupt_offset_table_is_caught() {
    let spec = Spec::rgba_half(128, 128, 64);
    let good = write("table-src", &spec);
    let mut bytes = std::fs::read(good.path()).unwrap();
    // The offset table is the run of little-endian u64 just before the first chunk; with
    // increasing line order its first entry points just past it.
    let chunks = exr::meta::MetaData::read_from_file(good.path(), false)
        .unwrap()
        .headers[0]
        .chunk_count;
    let len = bytes.len() as u64;
    let first_table_entry = (0..bytes.len() - 8)
        .find(|&i| {
            u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()) == (i + 8 * chunks) as u64
        })
        .expect("offset table");
    let f = TempFile::new("table");
    // Entry 0 points past the end; entry 1 points at entry 2's chunk.
    bytes[first_table_entry..first_table_entry + 8].copy_from_slice(&(len + 100).to_le_bytes());
    let third: [u8; 8] = bytes[first_table_entry + 16..first_table_entry + 24]
        .try_into()
        .unwrap();
    bytes[first_table_entry + 8..first_table_entry + 16].copy_from_slice(&third);
    std::fs::write(f.path(), &bytes).unwrap();
    let src = ExrSource::new(f.path());
    src.open().unwrap();
    let mut dest = vec![0u8; 128 * 64 * 8];
    let tile = |tx: u32| TileRegion {
        level: 0,
        x: tx * 64,
        y: 0,
        width: 64,
        height: 64,
    };
    let e = src.read_tile(tile(0), &mut dest, 64 * 8).unwrap_err();
    names_file(&e, &f);
    assert!(
        e.0.contains("level 0 tile (0, 0)") && e.0.contains("outside"),
        "{e}"
    );
    let e = src.read_tile(tile(1), &mut dest, 64 * 8).unwrap_err();
    assert!(
        e.0.contains("level 0 tile (1, 0)") && e.0.contains("offset table"),
        "{e}"
    );
}

#[test]
fn unsupported_files_say_why() {
    // 65537 texels wide.
    let wide = write(
        "wide",
        &Spec::rgba_half(65537, 1, 0).with(|s| {
            s.channels = vec![("Y", Kind::Half)];
            s.tiles = None;
            s.levels = LevelSpec::Single;
            s.compression = Compression::Uncompressed;
        }),
    );
    let e = ExrSource::new(wide.path()).open().unwrap_err();
    names_file(&e, &wide);
    assert!(e.0.contains("65537"), "{e}");

    // HTJ2K: patch the compression attribute of a good file (code 10).
    let f = write("htj2k", &Spec::rgba_half(64, 64, 32));
    let mut bytes = std::fs::read(f.path()).unwrap();
    let key = b"compression\0compression\0\x01\0\0\0";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    bytes[at] = 10;
    std::fs::write(f.path(), &bytes).unwrap();
    let e = ExrSource::new(f.path()).open().unwrap_err();
    names_file(&e, &f);
    assert!(e.0.contains("j2k"), "{e}");

    // Missing channels for the selection; a part the file does not have.
    let f = write(
        "rgb",
        &Spec::rgba_half(64, 64, 32).with(|s| s.channels.truncate(3)),
    );
    let with = |channels, part| {
        ExrSource::with_options(
            f.path(),
            ExrOptions {
                channels,
                part,
                ..ExrOptions::default()
            },
        )
    };
    let e = with(ChannelSelection::Rgba, 0).open().unwrap_err();
    assert!(e.0.contains("no channel A"), "{e}");
    let e = with(ChannelSelection::Layer("spec".into()), 0)
        .open()
        .unwrap_err();
    assert!(e.0.contains("spec"), "{e}");
    let e = with(ChannelSelection::Names(vec![]), 0).open().unwrap_err();
    assert!(e.0.contains("0 names"), "{e}");
    let e = with(ChannelSelection::Auto, 1).open().unwrap_err();
    assert!(e.0.contains("part 1"), "{e}");
    names_file(&e, &f);
}

#[test]
fn bad_reads_are_rejected_before_touching_the_destination() {
    let f = write("bounds", &Spec::rgba_half(64, 64, 32));
    let src = ExrSource::new(f.path());
    let info = src.open().unwrap();
    let mut dest = vec![0u8; 64];
    let r = TileRegion {
        level: info.num_levels,
        x: 0,
        y: 0,
        width: 1,
        height: 1,
    };
    assert!(src.read_region(r, &mut dest, 8).is_err());
    let r = TileRegion {
        level: 0,
        x: 60,
        y: 0,
        width: 8,
        height: 1,
    };
    assert!(src.read_region(r, &mut dest, 64).is_err());
    let r = TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: 8,
        height: 2,
    };
    assert!(
        src.read_region(r, &mut dest, 64).is_err(),
        "destination too small"
    );
    assert!(dest.iter().all(|&b| b == 0));
}
