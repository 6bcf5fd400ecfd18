//! The demo's outputs: the PNG and `stats.json`.

use super::render::Frame;
use crate::error::CliError;
use demandtex::Stats;
use serde_json::{Map, Value};
use std::path::Path;

/// What the demo adds to the loader's statistics in `stats.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    /// Whether every pixel converged.
    pub converged: bool,
    /// Launches the render used.
    pub launches: u32,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Level-0 bytes of the scene's textures.
    pub virtual_texture_bytes: u64,
    /// Textures in the scene.
    pub textures: usize,
    /// Seconds from the first texture created to the render's end.
    pub wall_seconds: f64,
    /// With `--verify`: the largest difference from the fully resident render.
    pub verify_max_abs_diff: Option<f32>,
}

/// The loader's statistics, flattened, followed by the run's summary.
pub fn stats_json(stats: &Stats, run: &RunSummary) -> Map<String, Value> {
    let mut obj = match serde_json::to_value(stats) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    obj.insert("converged".into(), run.converged.into());
    obj.insert("launches".into(), run.launches.into());
    obj.insert("width".into(), run.width.into());
    obj.insert("height".into(), run.height.into());
    obj.insert(
        "virtual_texture_bytes".into(),
        run.virtual_texture_bytes.into(),
    );
    obj.insert("textures".into(), (run.textures as u64).into());
    obj.insert("wall_seconds".into(), run.wall_seconds.into());
    if let Some(d) = run.verify_max_abs_diff {
        // JSON has no infinity: a size mismatch or NaN is recorded as null.
        let v = serde_json::Number::from_f64(d as f64).map_or(Value::Null, Value::Number);
        obj.insert("verify_max_abs_diff".into(), v);
    }
    obj
}

/// Write `obj` as pretty JSON to `path`.
pub fn write_json(path: &Path, obj: &Map<String, Value>) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(obj)
        .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
    std::fs::write(path, text + "\n").map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

/// 8-bit RGBA of a float frame: clamped to [0, 1] and rounded; NaN becomes 0.
pub fn quantize(frame: &Frame) -> Vec<u8> {
    let q = |c: f32| {
        if c.is_nan() {
            0
        } else {
            (c.clamp(0.0, 1.0) * 255.0).round() as u8
        }
    };
    frame.pixels.iter().flat_map(|p| p.map(q)).collect()
}

/// Write `frame` as an 8-bit PNG.
pub fn write_png(path: &Path, frame: &Frame) -> Result<(), CliError> {
    image::save_buffer_with_format(
        path,
        &quantize(frame),
        frame.width,
        frame.height,
        image::ExtendedColorType::Rgba8,
        image::ImageFormat::Png,
    )
    .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_json_has_every_stats_field_and_the_run_summary() {
        let run = RunSummary {
            converged: true,
            launches: 7,
            width: 64,
            height: 36,
            virtual_texture_bytes: 1 << 40,
            textures: 22,
            wall_seconds: 1.5,
            verify_max_abs_diff: Some(0.0),
        };
        let obj = stats_json(&Stats::default(), &run);
        for key in [
            "virtual_bytes",
            "textures",
            "failed_textures",
            "requests",
            "requests_deferred",
            "tiles_filled",
            "mip_tails_filled",
            "bytes_read",
            "read_errors",
            "second_chance_restores",
            "pages_staged",
            "evictions",
            "resident_bytes",
            "peak_resident_bytes",
            "budget_bytes",
            "bookkeeping_bytes",
            "fill_seconds",
            "launches",
            "converged",
            "width",
            "height",
            "virtual_texture_bytes",
            "wall_seconds",
            "verify_max_abs_diff",
        ] {
            assert!(obj.contains_key(key), "missing {key}");
        }
        assert_eq!(obj["launches"], 7);
        assert_eq!(obj["textures"], 22);
        assert_eq!(obj["converged"], true);
        let without = stats_json(
            &Stats::default(),
            &RunSummary {
                verify_max_abs_diff: None,
                ..run
            },
        );
        assert!(!without.contains_key("verify_max_abs_diff"));
    }

    #[test]
    fn quantize_clamps_and_rounds() {
        let f = Frame {
            width: 1,
            height: 1,
            pixels: vec![[-1.0, 0.5, 2.0, f32::NAN]],
        };
        assert_eq!(quantize(&f), vec![0, 128, 255, 0]);
    }

    #[test]
    fn png_round_trips_its_size() {
        let dir = std::env::temp_dir().join(format!("demandtex-cli-png-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.png");
        let f = Frame {
            width: 3,
            height: 2,
            pixels: vec![[0.25, 0.5, 0.75, 1.0]; 6],
        };
        write_png(&path, &f).unwrap();
        let img = image::open(&path).unwrap();
        assert_eq!((img.width(), img.height()), (3, 2));
        std::fs::remove_dir_all(&dir).ok();
    }
}
