//! Tests of the interactive demo (`interactive.rs`).

use super::*;
use std::path::PathBuf;

#[test]
fn the_path_has_one_cut_and_ends_still() {
    let n = 40;
    let cuts: Vec<u32> = (0..n).filter(|&f| camera_path(f, n, 64, 36).1).collect();
    assert_eq!(cuts, vec![20]);
    assert_eq!(
        camera_path(n - 1, n, 64, 36).0,
        camera_path(n - 2, n, 64, 36).0
    );
    assert_ne!(camera_path(1, n, 64, 36).0, camera_path(2, n, 64, 36).0);
}

/// Run the interactive demo small (48×27, 1024² textures, 2 threads) with `args` over
/// the defaults; its output folder (to remove) and `interactive.json`.
fn small_run(name: &str, args: impl FnOnce(DemoArgs) -> DemoArgs) -> (PathBuf, Value) {
    let out = std::env::temp_dir().join(format!("demandtex-{name}-{}", std::process::id()));
    let args = args(DemoArgs {
        width: 48,
        height: 27,
        verify: false,
        interactive: true,
        ..DemoArgs::for_test(out.clone())
    });
    let scene = super::super::builtin::scene(super::super::builtin::SceneSize {
        texture_size: 1024,
        mandelbrot_iterations: 16,
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    run(&args, &scene, &pool).unwrap();
    let json =
        serde_json::from_str(&std::fs::read_to_string(out.join("interactive.json")).unwrap())
            .unwrap();
    (out, json)
}

#[test]
fn a_small_interactive_run_writes_its_outputs_and_ends_on_the_resident_image() {
    let (out, json) = small_run("interactive", |a| DemoArgs {
        frames: 16,
        request_cap: 64,
        ..a
    });
    assert_eq!(json["frames"], 16);
    for key in [
        "median_frame_ratio_vs_resident",
        "max_frame_ratio_vs_resident",
        "stalled_frames",
        "frames_to_full_detail_after_cut",
        "requests_rejected",
        "io_latency_ms",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert!(json["request_cap_rejection_on"].is_object());
    let csv = std::fs::read_to_string(out.join("frames.csv")).unwrap();
    assert_eq!(csv.lines().count(), 17);
    let png = image::open(out.join("interactive.png")).unwrap();
    assert_eq!(png.width(), 960);
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_stochastic_run_says_so_and_ends_on_the_resident_image_when_converged() {
    let (out, json) = small_run("interactive-stochastic", |a| DemoArgs {
        frames: 48,
        stochastic: true,
        ..a
    });
    assert_eq!(json["stochastic"], true);
    // The camera stands still for the last frames. Where the fills kept up (they may not in
    // a debug build, whose procedural fills are slow), every pixel is at full detail and
    // equals the resident render: the same jitter per pixel in both.
    if json["final_full_detail"] == 1.0 {
        assert_eq!(json["last_frame_max_abs_diff_vs_resident"], 0.0, "{json}");
    }
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn jitters_cover_the_unit_square() {
    let (mut lo, mut hi) = ([1.0f32; 2], [0.0f32; 2]);
    for key in 0..4096 {
        let j = pixel_jitter(key);
        for k in 0..2 {
            assert!((0.0..1.0).contains(&j[k]));
            lo[k] = lo[k].min(j[k]);
            hi[k] = hi[k].max(j[k]);
        }
    }
    assert!(lo.iter().all(|&x| x < 0.01) && hi.iter().all(|&x| x > 0.99));
}

#[test]
fn spread_counts_cells_that_progressed() {
    let before = vec![false; 16 * 16];
    let mut after = before.clone();
    after[0] = true; // one cell of 64
    let (cells, cv) = progress_spread(&before, &after, 16, 16);
    assert!((cells - 1.0 / 64.0).abs() < 1e-9);
    assert!(cv > 1.0);
    let all = vec![true; 16 * 16];
    let (cells, cv) = progress_spread(&before, &all, 16, 16);
    assert_eq!((cells, cv), (1.0, 0.0));
}
