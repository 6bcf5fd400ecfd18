//! `.dtxp` (Ptex) traces end to end: a trace over the reference fixtures, whose queries are
//! the fixtures' own `PtexFilter` samples, replays to the reference library's values in
//! both modes, on one and two threads, under a budget that evicts; random files written by
//! the reference's own writer replay to its results with every filter; `make-trace --ptex`
//! writes deterministic coherent and incoherent traces over a `ptex gen` set, whose
//! replays agree between modes; bad traces and arguments give clear errors.

use std::path::{Path, PathBuf};

mod common;

use common::{demandtex, ok};

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir(&format!("dtxp-{name}"))
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ptex")
}

/// A `.dtxp` trace's bytes, written here independently of the CLI's writer.
fn dtxp(textures: &[String], queries: &[(u32, u32, [f32; 6])]) -> Vec<u8> {
    let mut b = b"DTXP".to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&(textures.len() as u32).to_le_bytes());
    for t in textures {
        b.extend_from_slice(&(t.len() as u32).to_le_bytes());
        b.extend_from_slice(t.as_bytes());
    }
    b.extend_from_slice(&(queries.len() as u64).to_le_bytes());
    for (texture, face, v) in queries {
        b.extend_from_slice(&texture.to_le_bytes());
        b.extend_from_slice(&face.to_le_bytes());
        for x in v {
            b.extend_from_slice(&x.to_le_bytes());
        }
    }
    b
}

fn read_results(path: &Path) -> Vec<[f32; 4]> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(16)
        .map(|c| {
            std::array::from_fn(|i| f32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap()))
        })
        .collect()
}

fn replay(trace: &Path, textures: &Path, args: &[&str], out: &Path) -> serde_json::Value {
    let text = ok(
        demandtex()
            .args(["bench", "replay"])
            .arg(trace)
            .arg("--textures")
            .arg(textures)
            .args(args)
            .arg("--json")
            .arg("--out")
            .arg(out)
            .output()
            .unwrap(),
        "replay",
    );
    serde_json::from_str(text.trim()).unwrap()
}

/// QUERIES.md's channel rule applied to a reference result of `n` channels.
fn rgba(v: &[f32]) -> [f32; 4] {
    match v.len() {
        1 | 2 => [v[0], v[0], v[0], 1.0],
        3 => [v[0], v[1], v[2], 1.0],
        _ => [v[0], v[1], v[2], v[3]],
    }
}

/// [`replay`] with `--filter`, `--mode`, `--threads` and `--cache-mb` set to `run`'s.
fn replay_run(
    trace: &Path,
    textures: &Path,
    [filter, mode, threads, cache]: [&str; 4],
    out: &Path,
) -> serde_json::Value {
    let args = [
        "--filter",
        filter,
        "--mode",
        mode,
        "--threads",
        threads,
        "--cache-mb",
        cache,
    ];
    replay(trace, textures, &args, out)
}

/// Every channel of every result in `got` within 1e-5 of `want`'s (`what(i)` names query i).
fn assert_within_1e5(got: &[[f32; 4]], want: &[[f32; 4]], what: &dyn Fn(usize) -> String) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        for c in 0..4 {
            assert!(
                (g[c] - w[c]).abs() <= 1e-5,
                "{}: {g:?} vs the reference {w:?}",
                what(i)
            );
        }
    }
}

#[test]
fn fixture_samples_replay_to_the_reference_values() {
    let dir = temp_dir("fixtures");
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.ends_with(".ptx").then_some(n)
        })
        .collect();
    names.sort();
    for filter in ["point", "bilinear", "box"] {
        let (mut queries, mut want) = (Vec::new(), Vec::new());
        for (t, name) in names.iter().enumerate() {
            let json = fixtures().join(name.replace(".ptx", ".json"));
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
            let channels = json["info"]["numChannels"].as_u64().unwrap();
            for f in json["filters"].as_array().unwrap() {
                // (Triangle files' box samples are the reference's triangle filter, which
                // every filter but point becomes on triangles, as ours does.)
                if f["filter"] != filter
                    || f["premultiply"] != false
                    || f["width"] != 1
                    || f["blur"] != 0
                    || f["firstchan"] != 0
                    || f["noedgeblend"] != false
                    || f["sharpness"] != 0
                    || f["nchannels"].as_u64() != Some(channels)
                {
                    continue;
                }
                let x = |k: &str| f[k].as_f64().unwrap() as f32;
                let uv = [x("u"), x("v")];
                if !(0.0..=1.0).contains(&uv[0]) || !(0.0..=1.0).contains(&uv[1]) {
                    continue;
                }
                let face = f["face"].as_u64().unwrap() as u32;
                queries.push((
                    t as u32,
                    face,
                    [uv[0], uv[1], x("uw1"), x("vw1"), x("uw2"), x("vw2")],
                ));
                let result: Vec<f32> = f["result"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap() as f32)
                    .collect();
                want.push(rgba(&result));
            }
        }
        assert!(
            queries.len() >= 40,
            "{filter}: only {} samples",
            queries.len()
        );
        let trace = dir.join(format!("{filter}.dtxp"));
        std::fs::write(&trace, dtxp(&names, &queries)).unwrap();
        let mut checksums = Vec::new();
        for (mode, threads, cache) in [
            ("blocking", "1", "1"),
            ("blocking", "2", "64"),
            ("multipass", "2", "64"),
        ] {
            let out = dir.join(format!("{filter}-{mode}-{threads}.f32"));
            let report = replay_run(&trace, &fixtures(), [filter, mode, threads, cache], &out);
            assert_eq!(report["lookups"], queries.len() as u64);
            assert_eq!(report["filter"], filter);
            assert_eq!(report["failed_textures"], 0);
            assert_within_1e5(&read_results(&out), &want, &|i| {
                format!("{filter} {mode}: query {i} {:?}", queries[i])
            });
            checksums.push(report["checksum"].as_f64().unwrap());
        }
        assert!(checksums.windows(2).all(|w| w[0] == w[1]), "{checksums:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tests/fixtures/ptex-random`: files written by the reference library's `PtexWriter`
/// (`bench/ptex-replay/random-files.cpp`, seed 1092: subfaces, rotated adjacency, triangles,
/// incremental and applied edits, tiled faces, no mip maps), a trace of 2,000 random
/// lookups, and the reference replayer's results for each of its eight filters.
#[test]
fn files_the_reference_wrote_replay_to_its_results_with_every_filter() {
    let fixtures = fixtures().join("../ptex-random");
    let trace = fixtures.join("r1092.dtxp");
    let dir = temp_dir("random");
    for filter in [
        "point",
        "bilinear",
        "box",
        "gaussian",
        "bicubic",
        "bspline",
        "catmullrom",
        "mitchell",
    ] {
        let want = read_results(&fixtures.join(format!("reference-{filter}.f32")));
        assert_eq!(want.len(), 2000);
        let runs: &[(&str, &str, &str)] = if matches!(filter, "bilinear" | "mitchell") {
            &[("blocking", "1", "256"), ("multipass", "2", "1")]
        } else {
            &[("blocking", "1", "256")]
        };
        for &(mode, threads, cache) in runs {
            let out = dir.join(format!("{filter}-{mode}.f32"));
            let report = replay_run(&trace, &fixtures, [filter, mode, threads, cache], &out);
            assert_eq!(report["failed_textures"], 0);
            assert_eq!(report["non_resident"], 0, "{filter} {mode}");
            assert_within_1e5(&read_results(&out), &want, &|i| {
                format!("{filter} {mode}: query {i}")
            });
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn generated_sets_trace_deterministically_and_replay_alike() {
    let dir = temp_dir("gen");
    ok(
        demandtex()
            .args(["ptex", "gen"])
            .arg(&dir)
            .args(["--files", "3", "--faces", "300", "--max-log2", "7"])
            .output()
            .unwrap(),
        "ptex gen",
    );
    for kind in ["coherent", "incoherent"] {
        let make = || {
            ok(
                demandtex()
                    .args(["bench", "make-trace", "--ptex"])
                    .arg(&dir)
                    .args([
                        "--kind",
                        kind,
                        "--queries",
                        "20000",
                        "--width",
                        "64",
                        "--height",
                        "36",
                    ])
                    .output()
                    .unwrap(),
                "make-trace",
            );
            std::fs::read(dir.join(format!("{kind}.dtxp"))).unwrap()
        };
        let first = make();
        assert_eq!(&first[..4], b"DTXP");
        assert_eq!(first, make(), "{kind}: the same trace twice");
        let trace = dir.join(format!("{kind}.dtxp"));
        for filter in ["point", "bilinear"] {
            let a = replay(
                &trace,
                &dir,
                &["--filter", filter, "--cache-mb", "2"],
                &dir.join("a.f32"),
            );
            let b = replay(
                &trace,
                &dir,
                &[
                    "--filter",
                    filter,
                    "--mode",
                    "multipass",
                    "--threads",
                    "1",
                    "--cache-mb",
                    "64",
                ],
                &dir.join("b.f32"),
            );
            assert_eq!(a["checksum"], b["checksum"], "{kind} {filter}");
            assert_eq!(
                read_results(&dir.join("a.f32")),
                read_results(&dir.join("b.f32"))
            );
            assert!(a["evictions"].as_u64().unwrap() > 0, "{kind} {filter}: {a}");
            assert!(a["file_bytes_read"].as_u64().unwrap() > 0);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_ptex_traces_and_arguments_are_clear_errors() {
    let dir = temp_dir("bad");
    let names = vec!["quad_uint8_rgb.ptx".to_string()];
    let run = |trace: &Path, extra: &[&str]| {
        let out = demandtex()
            .args(["bench", "replay"])
            .arg(trace)
            .arg("--textures")
            .arg(fixtures())
            .args(extra)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let face = dir.join("face.dtxp");
    std::fs::write(&face, dtxp(&names, &[(0, 9999, [0.5; 6])])).unwrap();
    let e = run(&face, &[]);
    assert!(
        e.contains("face 9999") && e.contains("quad_uint8_rgb.ptx"),
        "{e}"
    );
    let cut = dir.join("cut.dtxp");
    let bytes = dtxp(&names, &[(0, 0, [0.5; 6])]);
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    assert!(run(&cut, &[]).contains("truncated"));
    // --filter belongs to Ptex traces.
    let dtxq = dir.join("t.dtxq");
    let mut q = b"DTXQ".to_vec();
    q.extend_from_slice(&1u32.to_le_bytes());
    q.extend_from_slice(&0u32.to_le_bytes());
    q.extend_from_slice(&0u64.to_le_bytes());
    std::fs::write(&dtxq, q).unwrap();
    let e = run(&dtxq, &["--filter", "box"]);
    assert!(e.contains("--filter applies to Ptex"), "{e}");
    // make-trace --ptex on a directory without .ptx files.
    let out = demandtex()
        .args(["bench", "make-trace", "--ptex"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no .ptx files"));
    let _ = std::fs::remove_dir_all(&dir);
}
