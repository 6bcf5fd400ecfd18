//! Inputs declaring absurd sizes are refused cleanly, before decoding: a PNG whose header
//! claims 100000×100000 pixels (30 GB of RGB8, 160 GB as f32) makes `demandtex convert`
//! and `demandtex info --check` exit 1 with one line naming `max_image_bytes`, never abort
//! on a failed allocation.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn demandtex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_demandtex"))
        .args(args)
        .output()
        .expect("the demandtex binary runs")
}

/// CRC-32 (ISO 3309, as PNG chunks use), bit by bit.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A PNG whose IHDR declares `w × h` RGB8, with a few bytes of (not enough) image data.
fn png(path: &Path, w: u32, h: u32) {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(
        &mut out,
        b"IDAT",
        &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    chunk(&mut out, b"IEND", &[]);
    std::fs::write(path, out).unwrap();
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("demandtex-limits-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[track_caller]
fn refused(out: &Output, mentions: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("memory allocation"),
        "{stderr}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains(mentions),
        "{stderr} should mention {mentions}"
    );
}

#[test]
fn a_png_declaring_100000_squared_pixels_is_refused_before_decoding() {
    let d = dir();
    let huge = d.join("huge.png");
    png(&huge, 100_000, 100_000);
    let out = demandtex(&[
        "convert",
        huge.to_str().unwrap(),
        "-o",
        d.join("o.exr").to_str().unwrap(),
    ]);
    refused(&out, "max_image_bytes");
    assert!(String::from_utf8_lossy(&out.stderr).contains("100000×100000"));
    assert!(!d.join("o.exr").exists());
    refused(
        &demandtex(&["info", "--check", huge.to_str().unwrap()]),
        "max_image_bytes",
    );
    // The same header at a sane size gets past the limit and fails on its missing data.
    let small = d.join("small.png");
    png(&small, 64, 64);
    let out = demandtex(&[
        "convert",
        small.to_str().unwrap(),
        "-o",
        d.join("s.exr").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && !stderr.contains("max_image_bytes"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
