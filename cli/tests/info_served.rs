//! `demandtex info` says how the loader serves a file (the "served as" lines), or the very
//! error the loader gives, from core's EXR description.

use exr::meta::attribute::LineOrder;
use exr::prelude::{
    AnyChannel, AnyChannels, Blocks, Encoding, FlatSamples, Image, Layer, LayerAttributes,
    SmallVec, Vec2, WritableImage,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-info-{}-{name}", std::process::id()));
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

/// `demandtex info [--json] path`, which must succeed; its stdout.
fn info(path: &Path, json: bool) -> String {
    let path = path.to_str().unwrap();
    let args: &[&str] = if json {
        &["info", "--json", path]
    } else {
        &["info", path]
    };
    let out = demandtex(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "info failed: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// A scan-line EXR of float channels `names`, `width` × `height`.
fn write_scanline(path: &Path, width: usize, height: usize, names: &[&str]) {
    let channels: Vec<AnyChannel<FlatSamples>> = names
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let values = (0..width * height).map(|i| (i + k) as f32 * 0.01).collect();
            AnyChannel::new(n, FlatSamples::F32(values))
        })
        .collect();
    let layer = Layer::new(
        Vec2(width, height),
        LayerAttributes::default(),
        Encoding {
            compression: exr::compression::Compression::ZIP16,
            blocks: Blocks::ScanLines,
            line_order: LineOrder::Increasing,
        },
        AnyChannels::sort(SmallVec::from_vec(channels)),
    );
    Image::from_layer(layer).write().to_file(path).unwrap();
}

#[test]
fn a_scan_line_file_is_served_with_generated_levels() {
    let dir = test_dir("scan");
    let path = dir.join("scan.exr");
    write_scanline(&path, 300, 77, &["R", "G", "B"]);
    let text = info(&path, false);
    for needle in [
        "storage:     scanline",
        "served as (part 0):",
        "channels:    R, G, B + alpha 1",
        "4 x float (16 bytes), 300x77",
        "9: 1 from the file, 8 generated in memory",
        "a scan-line file",
        "not aligned with the scan-line blocks",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let json: serde_json::Value = serde_json::from_str(&info(&path, true)).unwrap();
    let served = &json["served_as"];
    assert_eq!(served["channels"], serde_json::json!(["R", "G", "B"]));
    assert_eq!(served["constant_alpha"], true);
    assert_eq!(
        (
            served["levels"].as_u64(),
            served["levels_from_file"].as_u64()
        ),
        (Some(9), Some(1))
    );
    assert!(served["blocks_per_page"].is_null());
    assert!(json["not_served"].is_null());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_the_loader_refuses_is_described_with_its_reason() {
    let dir = test_dir("wide");
    let path = dir.join("wide.exr");
    write_scanline(&path, 65537, 1, &["Y"]);
    let text = info(&path, false);
    assert!(text.contains("resolution:  65537x1"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("served as:"))
        .unwrap_or_else(|| panic!("no served line in:\n{text}"));
    assert!(
        line.contains("not servable") && line.contains("65537") && line.contains("wide.exr"),
        "{line}"
    );
    let source = demandtex::sources::ExrSource::new(&path);
    let open = demandtex::sources::ImageSource::open(&source).unwrap_err();
    assert!(
        line.ends_with(&open.0),
        "the loader's own words: {line} / {open}"
    );
    let json: serde_json::Value = serde_json::from_str(&info(&path, true)).unwrap();
    assert_eq!(json["not_served"], open.0.as_str());
    assert!(json["served_as"].is_null());
    std::fs::remove_dir_all(&dir).unwrap();
}
