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

/// The box and bilinear filters' fast path (a window inside one unit, no kernel) sums
/// exactly as the general kernel path: every quad fixture, every face, points on a grid that
/// puts windows inside faces, across edges and corners and on texel centres (a zero
/// weight), footprints from none to wider than the face, with and without blur.
#[test]
fn small_kernel_fast_path_sums_as_the_kernel_path_to_the_bit() {
    let coords: Vec<f32> = (0..=16)
        .map(|i| i as f32 / 16.0)
        .chain([0.03, 0.51, 0.97])
        .collect();
    for filter in [PtexFilterType::Bilinear, PtexFilterType::Box] {
        let (mut inside, mut total) = (0, 0);
        for name in fixtures::FIXTURES.iter().filter(|n| n.starts_with("quad")) {
            let fx = Fixture::load(name);
            let src = store(&fx.path, false);
            let tex = *src.texture();
            let ch = Channels {
                first: 0,
                count: tex.num_channels,
                data_type: tex.data_type,
                pixel_size: tex.pixel_size(),
            };
            for face in 0..tex.num_faces as u32 {
                let f = *src.face_info(face).unwrap();
                if f.is_subface() {
                    continue;
                }
                for (&u, &v) in coords
                    .iter()
                    .flat_map(|u| coords.iter().map(move |v| (u, v)))
                {
                    for (w, blur) in [(0.0, 0.0), (0.01, 0.0), (0.1, 0.02), (0.3, 0.0), (2.0, 0.0)]
                    {
                        let options = PtexFilterOptions {
                            filter,
                            blur,
                            ..PtexFilterOptions::default()
                        };
                        let (uw, vw) = (w, w * 0.5);
                        let mut fast = vec![f32::NAN; ch.count];
                        let mut general = vec![f32::NAN; ch.count];
                        let window = [u, v, uw, vw];
                        // The fast path takes the widths with the blur added (width 1).
                        let builder = build::Builder::new(filter, false, 0.0);
                        let axes = builder
                            .small_axes(u, v, uw + blur, vw + blur, f.res)
                            .expect("box and bilinear have small axes");
                        total += 1;
                        let Some(r) = separable::small_inside(&src, &ch, face, &f, axes, &mut fast)
                        else {
                            continue;
                        };
                        let g = separable::eval_kernel(
                            &src,
                            &ch,
                            face,
                            &f,
                            window,
                            &options,
                            &mut general,
                        );
                        let at = format!("{filter:?} {name} face {face} at {window:?} blur {blur}");
                        assert_eq!(r, g, "{at}");
                        let bits = |x: &[f32]| x.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&fast), bits(&general), "{at}");
                        inside += 1;
                    }
                }
            }
        }
        // Both paths are exercised: most windows lie inside a face, many do not.
        assert!(
            inside > total / 3 && inside < total,
            "{filter:?}: {inside} of {total} inside"
        );
    }
}
