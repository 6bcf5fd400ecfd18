//! The filters against the reference fixtures' `PtexFilter` results, and properties that
//! hold for any texture (constant faces give their constant, weights sum to one, missing
//! units are reported).

use super::*;
use crate::sources::ptex::tests::fixtures::{self, f32_of, flag, int, list, Fixture};
use crate::sources::ptex::{PtexFile, PtexOptions};
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

mod properties;

/// Filters of the fixtures are float32 sums in the reference's order; ours follow the same
/// order except where a unit is tiled differently (units over 64 KiB that the file does not
/// store tiled, which the engine's packing cuts into tiles; constant tiles, stored
/// expanded) and where `exp` is evaluated in another precision, so the last bits may
/// differ. 1e-5 absolute on normalised values
/// (a 40th of an 8-bit step) is the bound the fixtures' README suggests; values up to 9
/// (face 8 of the float file) are compared relatively. Measured: the largest difference is 6e-8 (one ulp).
const TOLERANCE: f32 = 1e-5;

fn filter_type(name: &str) -> PtexFilterType {
    match name {
        "point" => PtexFilterType::Point,
        "bilinear" => PtexFilterType::Bilinear,
        "box" => PtexFilterType::Box,
        "gaussian" => PtexFilterType::Gaussian,
        "bicubic" => PtexFilterType::Bicubic,
        "bspline" => PtexFilterType::BSpline,
        "catmullrom" => PtexFilterType::CatmullRom,
        "mitchell" => PtexFilterType::Mitchell,
        other => panic!("unknown filter {other}"),
    }
}

fn store(path: &std::path::Path, premultiply: bool) -> ResidentPtex {
    let file = PtexFile::open_with(
        path,
        PtexOptions {
            premultiply,
            ..PtexOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    ResidentPtex::new(Arc::new(file)).unwrap()
}

/// Every filter result of every fixture, within [`TOLERANCE`]; returns the largest error.
#[test]
fn fixture_filters_match_the_reference() {
    let mut worst = 0f32;
    let mut count = 0;
    let mut failures = Vec::new();
    for name in fixtures::FIXTURES {
        let fx = Fixture::load(name);
        let plain = store(&fx.path, false);
        let premul = store(&fx.path, true);
        for case in list(&fx.json["filters"]) {
            let src = if flag(&case["premultiply"]) {
                &premul
            } else {
                &plain
            };
            let options = PtexFilterOptions {
                filter: filter_type(case["filter"].as_str().unwrap()),
                lerp: flag(&case["lerp"]),
                sharpness: f32_of(&case["sharpness"]),
                noedgeblend: flag(&case["noedgeblend"]),
                width: f32_of(&case["width"]),
                blur: f32_of(&case["blur"]),
                first_channel: int(&case["firstchan"]) as usize,
                jitter: [0.5, 0.5],
            };
            let expect: Vec<f32> = list(&case["result"]).iter().map(f32_of).collect();
            let mut got = vec![f32::NAN; int(&case["nchannels"]) as usize];
            let g = |k: &str| f32_of(&case[k]);
            let face = int(&case["face"]) as u32;
            let s = ptex_sample(
                src,
                face,
                g("u"),
                g("v"),
                g("uw1"),
                g("vw1"),
                g("uw2"),
                g("vw2"),
                &options,
                &mut got,
            );
            assert!(s.resident, "{name}: everything is resident");
            assert_eq!(s.channels, expect.len(), "{name}: {case}");
            for (a, b) in got.iter().zip(&expect) {
                let err = (a - b).abs() / b.abs().max(1.0);
                worst = worst.max(err);
                if err.is_nan() || err > TOLERANCE {
                    failures.push(format!(
                        "{name} face {face} {}: got {got:?}, want {expect:?} ({case})",
                        case["label"]
                    ));
                    break;
                }
            }
            count += 1;
        }
        assert!(plain.errors().is_empty(), "{name}: {:?}", plain.errors());
    }
    assert!(count > 3000, "only {count} filter cases");
    assert!(
        failures.is_empty(),
        "{} of {count} filter results differ (worst {worst}):\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    eprintln!("{count} filter results, largest error {worst:e}");
}
