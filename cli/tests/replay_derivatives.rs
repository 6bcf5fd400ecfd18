//! `demandtex bench replay --derivatives`: the derivatives of every result with respect to
//! s and t. The results are those of a replay without it, and where OpenImageIO is
//! installed, the derivatives are its `dresultds` / `dresultdt` (bench/oiio-replay
//! `--derivatives`) to float rounding, on maketx `.tx` files (8-bit RGB, 16-bit RGBA,
//! one-channel float) and make-trace's OpenEXR textures, over every level.

use std::path::Path;
use std::process::Command;

mod common;

use common::{demandtex, oiio_program, ok, trace_bytes, Q};

/// Little-endian f32 records of `N` floats.
fn read_records<const N: usize>(path: &Path) -> Vec<[f32; N]> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(b.len() % (4 * N), 0, "{}", path.display());
    b.chunks_exact(4 * N)
        .map(|r| {
            std::array::from_fn(|c| f32::from_le_bytes(r[c * 4..c * 4 + 4].try_into().unwrap()))
        })
        .collect()
}

/// Queries over `textures` textures of the given sizes: anywhere (the replay wraps), with
/// isotropic footprints from a tenth of a texel to 32 texels, so that OIIO's level choice
/// under `--lod exact` is the same filter (on the coarsest levels of a non-square texture,
/// one texel on a side, OpenImageIO's rule picks other levels: docs/FORMATS.md, "Filtering
/// against OpenImageIO's").
fn queries(sizes: &[(u32, u32)], n: u32) -> Vec<Q> {
    let mut state = 0x2545_f491u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state >> 8) as f32 / (1u32 << 24) as f32
    };
    (0..n)
        .map(|i| {
            let texture = i % sizes.len() as u32;
            let (w, h) = sizes[texture as usize];
            let texels = (next() * 8.3 - 3.3).exp2();
            Q {
                texture,
                s: next() * 3.0 - 1.0,
                t: next() * 3.0 - 1.0,
                ddx: [texels / w as f32, 0.0],
                ddy: [0.0, texels / h as f32],
            }
        })
        .collect()
}

/// `demandtex bench replay TRACE` (blocking, 2 threads) writing its results to `out`, and
/// its derivatives to `derivatives` if given.
fn replay(trace: &Path, out: &Path, derivatives: Option<&Path>) -> serde_json::Value {
    let mut cmd = demandtex();
    cmd.args(["bench", "replay"])
        .arg(trace)
        .args(["--threads", "2", "--cache-mb", "64", "--json", "--out"])
        .arg(out);
    if let Some(d) = derivatives {
        cmd.arg("--derivatives").arg(d);
    }
    serde_json::from_str(ok(cmd.output().unwrap(), "replay").trim()).unwrap()
}

#[test]
fn derivatives_come_with_unchanged_results_and_match_openimageio_s() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = common::temp_dir("replay-derivatives");
    // maketx .tx files (OpenImageIO 2.4.7) and make-trace's mip-mapped OpenEXR files.
    let fixtures = [
        ("rgb8_zip.tx", 200, 136),
        ("rgba16_lzw.tx", 160, 96),
        ("gray_float.tx", 130, 70),
    ];
    for (name, _, _) in fixtures {
        std::fs::copy(root.join("tests/fixtures/tx").join(name), dir.join(name)).unwrap();
    }
    ok(
        demandtex()
            .args(["bench", "make-trace", "--out"])
            .arg(&dir)
            .args(["--kind", "coherent", "--textures", "2", "--size", "256"])
            .args(["--queries", "10", "--seed", "5"])
            .output()
            .unwrap(),
        "make-trace",
    );
    let mut names: Vec<String> = fixtures.iter().map(|f| f.0.to_string()).collect();
    let mut sizes: Vec<(u32, u32)> = fixtures.iter().map(|f| (f.1, f.2)).collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(size) = name.strip_suffix(".exr").and_then(|n| n.split('_').nth(1)) {
            let side: u32 = size.parse().unwrap();
            sizes.push((side, side));
            names.push(name);
        }
    }
    assert_eq!(names.len(), 5, "{names:?}");
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let qs = queries(&sizes, 6000);
    let trace = dir.join("derivatives.dtxq");
    std::fs::write(&trace, trace_bytes(&refs, &qs)).unwrap();

    let plain = replay(&trace, &dir.join("plain.f32"), None);
    let with = replay(&trace, &dir.join("with.f32"), Some(&dir.join("d.f32")));
    assert_eq!(with["derivatives"], true);
    assert_eq!(plain["non_resident"], 0);
    assert_eq!(with["non_resident"], 0);
    assert_eq!(
        std::fs::read(dir.join("plain.f32")).unwrap(),
        std::fs::read(dir.join("with.f32")).unwrap(),
        "results with --derivatives are the results without"
    );
    let ours = read_records::<8>(&dir.join("d.f32"));
    assert_eq!(ours.len(), qs.len());
    assert!(
        ours.iter().flatten().any(|&d| d.abs() > 1.0),
        "the textures vary: some derivative is large"
    );

    let Some(oiio_replay) = oiio_program("replay") else {
        return;
    };
    let (oiio_out, oiio_d) = (dir.join("oiio.f32"), dir.join("oiio-d.f32"));
    ok(
        Command::new(&oiio_replay)
            .arg(&trace)
            .arg("--textures")
            .arg(&dir)
            .args(["--threads", "2", "--cache-mb", "64", "--json", "--out"])
            .arg(&oiio_out)
            .arg("--derivatives")
            .arg(&oiio_d)
            .output()
            .unwrap(),
        "oiio-replay",
    );
    // The same filter: the values agree to rounding.
    let values = read_records::<4>(&dir.join("with.f32"));
    let oiio_values = read_records::<4>(&oiio_out);
    let value_diff = values
        .iter()
        .flatten()
        .zip(oiio_values.iter().flatten())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(
        value_diff <= 1e-4,
        "values differ from OpenImageIO's by {value_diff}"
    );
    let theirs = read_records::<8>(&oiio_d);
    assert_eq!(theirs.len(), qs.len());
    let mut worst = (0.0f32, 0usize);
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        for k in 0..8 {
            let rel = (a[k] - b[k]).abs() / (1.0 + b[k].abs());
            if rel > worst.0 {
                worst = (rel, i);
            }
        }
    }
    let (rel, i) = worst;
    eprintln!(
        "derivatives: {} lookups, largest relative difference from OpenImageIO {rel:e}",
        qs.len()
    );
    // Float rounding of slopes up to a few thousand per unit of s, summed in another order.
    assert!(
        rel <= 1e-3,
        "query {i} ({:?}): demandtex {:?}, OpenImageIO {:?}",
        qs[i],
        ours[i],
        theirs[i]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
