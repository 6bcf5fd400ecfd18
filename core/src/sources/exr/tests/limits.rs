//! Bounded allocation: headers declaring absurd sizes are refused before anything is
//! allocated for them, with an error naming the limit (`sources::limits`).

use super::fixtures::*;
use crate::sources::exr::{ExrOptions, ExrSource};
use crate::sources::{ImageSource, SizeLimits};

/// The bytes of a 16×16 scan-line, uncompressed (one line per chunk) RGBA float file.
fn small_scanline() -> Vec<u8> {
    let spec = Spec::rgba_half(16, 16, 16).with(|s| {
        s.tiles = None;
        s.levels = LevelSpec::Single;
        s.compression = Compression::Uncompressed;
        s.channels = vec![
            ("R", Kind::Float),
            ("G", Kind::Float),
            ("B", Kind::Float),
            ("A", Kind::Float),
        ];
    });
    let f = write("limits-small", &spec);
    std::fs::read(f.path()).unwrap()
}

/// Where the data window's `xMax` lies in `bytes`.
fn data_window_max(bytes: &[u8]) -> usize {
    let key = b"dataWindow\0box2i\0";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    at + key.len() + 4 + 8 // size, xMin, yMin
}

/// `bytes` with a data window of `side × side`.
fn with_side(mut bytes: Vec<u8>, side: i32) -> Vec<u8> {
    let at = data_window_max(&bytes);
    bytes[at..at + 4].copy_from_slice(&(side - 1).to_le_bytes());
    bytes[at + 4..at + 8].copy_from_slice(&(side - 1).to_le_bytes());
    bytes
}

fn open(bytes: &[u8], tag: &str, limits: SizeLimits) -> (TempFile, Result<(), String>) {
    let f = TempFile::new(tag);
    std::fs::write(f.path(), bytes).unwrap();
    let src = ExrSource::with_options(
        f.path(),
        ExrOptions {
            limits,
            ..ExrOptions::default()
        },
    );
    let r = src.open().map(|_| ()).map_err(|e| e.0);
    (f, r)
}

#[test]
fn a_scan_line_file_whose_generated_levels_pass_max_image_bytes_is_refused_at_open() {
    let bytes = small_scanline();
    // 16×16 RGBA float: levels 1.. take (64 + 16 + 4 + 1) × 16 = 1360 bytes.
    let limits = |max_image_bytes| SizeLimits {
        max_image_bytes,
        ..SizeLimits::default()
    };
    assert_eq!(open(&bytes, "fits", limits(1360)).1, Ok(()));
    let e = open(&bytes, "over", limits(1359)).1.unwrap_err();
    assert!(
        e.contains("mip levels generated in memory would take 1360 bytes")
            && e.contains("max_image_bytes"),
        "{e}"
    );
    let block = SizeLimits {
        max_decoded_block_bytes: 255, // one line of 16 RGBA float texels is 256 bytes
        ..SizeLimits::default()
    };
    let e = open(&bytes, "block", block).1.unwrap_err();
    assert!(e.contains("max_decoded_block_bytes"), "{e}");
}

#[test]
fn a_crafted_65536_squared_float_header_is_refused_with_default_limits() {
    // The 16×16 file's header claiming 65536×65536, with an offset table of 65536 entries
    // (all naming the first line's chunk): it parses, and serving it would generate
    // 21 GiB of mip levels in memory.
    let small = small_scanline();
    let header_end = small.len() - 16 * 8 - 16 * (8 + 16 * 16);
    let chunk = &small[small.len() - 16 * (8 + 16 * 16)..][..8 + 16 * 16];
    let mut bytes = with_side(small[..header_end].to_vec(), 65536);
    let first = (header_end + 65536 * 8) as u64;
    for _ in 0..65536 {
        bytes.extend_from_slice(&first.to_le_bytes());
    }
    bytes.extend_from_slice(chunk);
    let (_f, r) = open(&bytes, "huge", SizeLimits::default());
    let e = r.unwrap_err();
    assert!(e.contains("65536") || e.contains("max_image_bytes"), "{e}");
    assert!(e.contains("max_image_bytes"), "{e}");
}

#[test]
fn a_header_declaring_more_chunks_than_the_file_can_hold_is_refused_before_the_table() {
    // 60000×60000 declared, the 16-entry table left as it is: 60000 offsets cannot fit.
    let bytes = with_side(small_scanline(), 60000);
    let (_f, r) = open(&bytes, "chunks", SizeLimits::default());
    let e = r.unwrap_err();
    assert!(e.contains("declare 60000 chunks"), "{e}");
}
