//! `demandtex info --check` and `--stats`, run as the built binary: whole files (OpenEXR
//! converted here, the Ptex reference fixtures, a PNG) exit 0 with their statistics; the
//! same files truncated or with a corrupted chunk exit 1 with one line naming the damage.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-check-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn demandtex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_demandtex"))
        .args(args)
        .output()
        .expect("the demandtex binary runs")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `info --check --stats --json` of a whole file: its JSON.
fn check_whole(path: &Path) -> serde_json::Value {
    let out = demandtex(&["info", "--stats", "--json", p(path)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", path.display());
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `info --check` of a damaged file: exit code 1, one `demandtex: damaged: …` line (or
/// `cannot open: …`, where the damage is in what describes the image), no panic.
fn check_damaged(path: &Path, mentions: &[&str]) {
    check_fails(path, &["damaged", "cannot open"], mentions);
}

/// `info --check` that fails: exit code 1, one `demandtex: WHAT: …` line with WHAT one of
/// `what`, mentioning one of `mentions`, nothing on stdout, no panic.
fn check_fails(path: &Path, what: &[&str], mentions: &[&str]) {
    let out = demandtex(&["info", "--check", p(path)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}: {stderr}", path.display());
    assert!(!stderr.contains("panicked"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        what.iter()
            .any(|w| lines[0].starts_with(&format!("demandtex: {w}: "))),
        "{stderr} should start with one of {what:?}"
    );
    assert!(
        mentions.iter().any(|m| lines[0].contains(m)),
        "{stderr} should mention one of {mentions:?}"
    );
    assert!(out.stdout.is_empty(), "nothing on stdout");
}

/// A 300×200 RGB PNG: red = x % 256, green = y % 256, blue = 7.
fn png(dir: &Path) -> PathBuf {
    let (w, h) = (300u32, 200u32);
    let mut pixels = Vec::new();
    for y in 0..h {
        for x in 0..w {
            pixels.extend_from_slice(&[(x % 256) as u8, (y % 256) as u8, 7]);
        }
    }
    let path = dir.join("in.png");
    image::RgbImage::from_raw(w, h, pixels)
        .unwrap()
        .save(&path)
        .unwrap();
    path
}

fn stats(json: &serde_json::Value, channel: usize) -> (f64, f64, f64) {
    let s = &json["check"]["stats"][channel];
    (
        s["min"].as_f64().unwrap(),
        s["max"].as_f64().unwrap(),
        s["mean"].as_f64().unwrap(),
    )
}

#[test]
fn openexr_whole_truncated_and_with_a_corrupted_chunk() {
    let dir = test_dir("exr");
    let input = png(&dir);
    let exr = dir.join("t.exr");
    let out = demandtex(&["convert", p(&input), "-o", p(&exr), "--tile", "32"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let json = check_whole(&exr);
    assert_eq!(json["format"], "OpenEXR");
    assert_eq!(json["whole"], true);
    assert_eq!(json["check"]["level0_texels"], 300 * 200);
    assert_eq!(json["check"]["levels"], 9);
    // Blue is 7/255 everywhere (stored as half); green is y % 256 / 255, mean (0..200)/2.
    let (bmin, bmax, _) = stats(&json, 2);
    assert!(
        (bmin - 7.0 / 255.0).abs() < 1e-4 && bmin == bmax,
        "{bmin} {bmax}"
    );
    let (gmin, gmax, gmean) = stats(&json, 1);
    assert_eq!(gmin, 0.0);
    assert!((gmax - 199.0 / 255.0).abs() < 1e-3, "{gmax}");
    assert!((gmean - 99.5 / 255.0).abs() < 1e-3, "{gmean}");

    let text = demandtex(&["info", "--stats", p(&exr)]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("whole (OpenEXR: 9 levels"), "{text}");
    assert!(text.contains("non-finite"), "{text}");

    let bytes = std::fs::read(&exr).unwrap();
    let cut = dir.join("cut.exr");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    check_damaged(&cut, &["truncated", "cut short"]);

    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid..mid + 48].fill(0xEE);
    let corrupt = dir.join("corrupt.exr");
    std::fs::write(&corrupt, &bad).unwrap();
    check_damaged(&corrupt, &["tile"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ptex_whole_and_with_damaged_face_data() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ptex");
    let good = fixtures.join("quad_uint8_rgb.ptx");
    let json = check_whole(&good);
    assert_eq!(json["format"], "Ptex");
    assert_eq!(json["check"]["stats"].as_array().unwrap().len(), 3);
    let info = demandtex(&["info", p(&good)]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("Ptex,"));

    let dir = test_dir("ptex");
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.join("cut.ptx");
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).unwrap();
    check_damaged(&cut, &["ptex file"]);
    let mut bad = bytes.clone();
    let at = bytes.len() * 3 / 4;
    bad[at..at + 64].fill(0x5A);
    let corrupt = dir.join("corrupt.ptx");
    std::fs::write(&corrupt, &bad).unwrap();
    check_damaged(&corrupt, &["checking face"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn png_whole_and_truncated() {
    let dir = test_dir("png");
    let input = png(&dir);
    let json = check_whole(&input);
    assert_eq!(json["format"], "PNG");
    let (rmin, rmax, _) = stats(&json, 0);
    assert_eq!((rmin, rmax), (0.0, 1.0));
    let bytes = std::fs::read(&input).unwrap();
    let cut = dir.join("cut.png");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    check_damaged(&cut, &["cannot decode"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn maketx_tx_whole_and_truncated() {
    let tx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx/rgba16_lzw.tx");
    let v = check_whole(&tx);
    assert_eq!(v["format"], "TIFF");
    assert_eq!(v["check"]["level0_texels"], 160 * 96);
    assert_eq!(v["check"]["stats"].as_array().unwrap().len(), 4);
    let dir = test_dir("tx");
    let cut = dir.join("cut.tx");
    let bytes = std::fs::read(&tx).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 5000]).unwrap();
    check_damaged(&cut, &["cut.tx"]);
}

#[test]
fn maketx_tx_described_from_its_directories() {
    let tx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx/gray_float.tx");
    let out = demandtex(&["info", p(&tx)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("TIFF texture (\"Plain Texture\"), 130x70, 1 channel, 32-bit float")
            && text.contains("8 stored levels")
            && text.contains("served as R32F"),
        "{text}"
    );
    let out = demandtex(&["info", "--json", p(&tx)]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "TIFF");
    assert_eq!(v["levels"].as_array().unwrap().len(), 8);
    assert_eq!(v["compression"], "ZIP (deflate)");
    assert_eq!(v["wrap_modes"], serde_json::json!(["black", "black"]));
}

#[test]
fn dds_converted_here_and_from_other_tools_whole_and_truncated() {
    let dir = test_dir("dds");
    let input = png(&dir);
    // convert → BC7 DDS: the summary gives the quality; info describes it; the check reads
    // every block.
    let bc7 = dir.join("out.dds");
    let out = demandtex(&["convert", p(&input), "-o", p(&bc7)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("DDS BC7") && stdout.contains("PSNR"),
        "{stdout}"
    );
    let psnr: f64 = stdout
        .split("PSNR ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a PSNR figure: {stdout}"));
    assert!(psnr > 40.0, "{stdout}");
    let info = demandtex(&["info", "--json", p(&bc7)]);
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(info["format"], "DDS");
    assert_eq!(info["dds_format"], "DXGI_FORMAT_BC7_UNORM");
    assert_eq!(
        info["levels"].as_array().unwrap().len(),
        9,
        "300x200: 9 levels"
    );
    assert_eq!(info["stored_bits_per_texel"], 8);
    assert_eq!(info["served_format"], "RGBA8");
    // A full chain of blocks: pages keep them, 8 bits a texel in the budget, not 32.
    assert_eq!(info["blocks_kept"], true);
    assert_eq!(info["budget_bits_per_texel"], 8);
    let text = demandtex(&["info", p(&bc7)]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("pages keep the BC7 blocks"), "{text}");
    let v = check_whole(&bc7);
    assert_eq!(v["format"], "DDS");
    assert_eq!(v["check"]["level0_texels"], 300 * 200);
    let (rmin, rmax, _) = stats(&v, 0);
    assert!(rmin < 0.01 && rmax > 0.99, "{rmin} {rmax}");
    // Every other encoding, and an unknown one.
    for format in [
        "dds-bc1",
        "dds-bc3",
        "dds-bc4",
        "dds-bc5",
        "dds-bc6h",
        "dds-rgba8",
    ] {
        let path = dir.join(format!("{format}.dds"));
        let out = demandtex(&[
            "convert",
            p(&input),
            "-o",
            p(&path),
            "--format",
            format,
            "-q",
        ]);
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        check_whole(&path);
        // BC1, BC3, BC4, BC5 and RGBA8 get the legacy header every reader knows; BC6H and
        // BC7 DX10.
        let info = demandtex(&["info", "--json", p(&path)]);
        let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        let header = info["dds_format"].as_str().unwrap_or_default().to_string();
        let want = match format {
            "dds-bc1" => "FourCC DXT1",
            "dds-bc3" => "FourCC DXT5",
            "dds-bc4" => "FourCC ATI1",
            "dds-bc5" => "FourCC ATI2",
            "dds-rgba8" => "D3DFMT_A8B8G8R8",
            _ => "DXGI_FORMAT_",
        };
        assert!(header.starts_with(want), "{format}: {header}");
    }
    let out = demandtex(&["convert", p(&input), "-o", p(&bc7), "--format", "dds-bc2"]);
    assert_eq!(out.status.code(), Some(2));
    // A file nvcompress wrote: checked whole, and converted to a tiled OpenEXR.
    let nv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/dds/nv-bc3.dds");
    assert_eq!(check_whole(&nv)["check"]["level0_texels"], 37 * 22);
    let exr = dir.join("from-dds.exr");
    let out = demandtex(&["convert", p(&nv), "-o", p(&exr)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("R,G,B,A half from DDS"), "{stdout}");
    assert_eq!(check_whole(&exr)["check"]["level0_texels"], 37 * 22);
    // The BC7 file cut short.
    let cut = dir.join("cut.dds");
    let bytes = std::fs::read(&bc7).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    check_damaged(&cut, &["truncated"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_of_a_kind_not_served_is_not_called_damaged() {
    // A CCITT Group 4 bilevel TIFF written by ImageMagick (tests/fixtures/tx/README.md).
    let tif = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx/fax4.tif");
    check_fails(&tif, &["cannot open"], &["compression 4"]);
    // Named once.
    let out = demandtex(&["info", "--check", p(&tif)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("fax4.tif").count(), 1, "{stderr}");
}

/// A FIFO named like a texture, a Ptex file or a trace: `info`, `convert` and `bench
/// replay` refuse it at once, naming it (opening it for reading would wait for a writer).
#[cfg(unix)]
#[test]
fn fifos_are_refused_not_waited_on() {
    let dir = test_dir("fifo");
    for name in ["t.exr", "t.png", "t.ptx", "t.dtxq"] {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        let made = Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let runs: Vec<Vec<&str>> = match name {
            "t.dtxq" => vec![vec!["bench", "replay", p(&path), "--textures", p(&dir)]],
            _ => vec![
                vec!["info", "--check", p(&path)],
                vec!["convert", p(&path), "-o", "unused.exr"],
            ],
        };
        for args in runs {
            // A run that waited would never end: the child is killed after 30 s.
            let mut child = Command::new(env!("CARGO_BIN_EXE_demandtex"))
                .args(&args)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let start = std::time::Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if start.elapsed() > std::time::Duration::from_secs(30) {
                    let _ = child.kill();
                    panic!("{args:?}: still waiting on the FIFO after 30 s");
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            assert!(!status.success(), "{args:?}");
            assert!(stderr.contains("FIFO"), "{args:?}: {stderr}");
        }
    }
}
