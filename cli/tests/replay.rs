//! `demandtex bench make-trace / replay / compare` end to end: small procedural textures and
//! traces, replayed in both modes and checked against an independent implementation of
//! QUERIES.md's semantics over the texels read back from the files; damaged traces give
//! clear errors; and, where OpenImageIO is installed, its replayer agrees to PSNR ≥ 40 dB.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{demandtex, oiio_program, ok, trace_bytes, Q};

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir(&format!("replay-{name}"))
}

/// A trace read back with the same independent parser (textures, queries).
fn parse_trace(b: &[u8]) -> (Vec<String>, Vec<Q>) {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let f32_at = |i: usize| f32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(&b[..4], b"DTXQ");
    let n = u32_at(8) as usize;
    let mut pos = 12;
    let mut names = Vec::new();
    for _ in 0..n {
        let len = u32_at(pos) as usize;
        names.push(String::from_utf8(b[pos + 4..pos + 4 + len].to_vec()).unwrap());
        pos += 4 + len;
    }
    let nq = u64::from_le_bytes(b[pos..pos + 8].try_into().unwrap()) as usize;
    pos += 8;
    assert_eq!(b.len(), pos + nq * 28);
    let queries = (0..nq)
        .map(|i| {
            let p = pos + i * 28;
            Q {
                texture: u32_at(p),
                s: f32_at(p + 4),
                t: f32_at(p + 8),
                ddx: [f32_at(p + 12), f32_at(p + 16)],
                ddy: [f32_at(p + 20), f32_at(p + 24)],
            }
        })
        .collect();
    (names, queries)
}

/// Every level of a mip EXR as RGBA f32 texels, finest first, with the channels
/// demandtex's reader serves (R G B A; R G B with alpha 1; Y, also from a `Y A` file;
/// otherwise the first channels) and QUERIES.md's rule: one channel gives (c, c, c, 1), two
/// (c0, c1, c0, 1).
struct Levels(Vec<(usize, usize, Vec<[f32; 4]>)>);

fn read_levels(path: &Path) -> Levels {
    use exr::prelude::*;
    let image = read()
        .no_deep_data()
        .all_resolution_levels()
        .all_channels()
        .first_valid_layer()
        .all_attributes()
        .from_file(path)
        .unwrap();
    let layer = &image.layer_data;
    let (w, h) = (layer.size.0, layer.size.1);
    let list = &layer.channel_data.list;
    let find = |name: &str| list.iter().find(|c| c.name.eq(name));
    let served: Vec<_> = match (find("R"), find("G"), find("B"), find("A"), find("Y")) {
        (Some(r), Some(g), Some(b), a, _) => [Some(r), Some(g), Some(b), a].to_vec(),
        (None, _, _, Some(a), Some(y)) => vec![Some(y), Some(a)],
        (None, _, _, None, Some(y)) => vec![Some(y)],
        _ => list.iter().take(4).map(Some).collect(),
    };
    let count = served[0].unwrap().sample_data.levels_as_slice().len();
    Levels(
        (0..count)
            .map(|l| {
                let (lw, lh) = ((w >> l).max(1), (h >> l).max(1));
                let data: Vec<Option<Vec<f32>>> = served
                    .iter()
                    .map(|c| {
                        c.map(|c| c.sample_data.levels_as_slice()[l].values_as_f32().collect())
                    })
                    .collect();
                let at = |c: usize, i: usize| data[c].as_ref().map_or(1.0, |d| d[i]);
                let texels = (0..lw * lh)
                    .map(|i| match data.len() {
                        1 => [at(0, i), at(0, i), at(0, i), 1.0],
                        2 => [at(0, i), at(1, i), at(0, i), 1.0],
                        3 => [at(0, i), at(1, i), at(2, i), 1.0],
                        _ => [at(0, i), at(1, i), at(2, i), at(3, i)],
                    })
                    .collect();
                (lw, lh, texels)
            })
            .collect(),
    )
}

impl Levels {
    fn bilinear(&self, level: usize, s: f64, t: f64) -> [f64; 4] {
        let (w, h, texels) = &self.0[level];
        let (w, h) = (*w as i64, *h as i64);
        let x = s * w as f64 - 0.5;
        let y = t * h as f64 - 0.5;
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let mut out = [0.0; 4];
        for (dy, wy) in [(0, 1.0 - fy), (1, fy)] {
            for (dx, wx) in [(0, 1.0 - fx), (1, fx)] {
                let xi = (x0 as i64 + dx).rem_euclid(w);
                let yi = (y0 as i64 + dy).rem_euclid(h);
                let texel = texels[(yi * w + xi) as usize];
                for c in 0..4 {
                    out[c] += wx * wy * texel[c] as f64;
                }
            }
        }
        out
    }

    /// QUERIES.md: trilinear at lod = log2(max(|dx|, |dy|)) in level-0 texels, clamped.
    fn trilinear(&self, q: &Q) -> [f64; 4] {
        let (w, h, _) = self.0[0];
        let len = |g: [f32; 2]| (g[0] as f64 * w as f64).hypot(g[1] as f64 * h as f64);
        let top = (self.0.len() - 1) as f64;
        let lod = len(q.ddx).max(len(q.ddy)).log2().clamp(0.0, top);
        let l0 = lod.floor();
        let f = lod - l0;
        let a = self.bilinear(l0 as usize, q.s as f64, q.t as f64);
        if f == 0.0 {
            return a;
        }
        let b = self.bilinear(l0 as usize + 1, q.s as f64, q.t as f64);
        [0, 1, 2, 3].map(|c| a[c] * (1.0 - f) + b[c] * f)
    }
}

fn read_results(path: &Path) -> Vec<[f32; 4]> {
    let b = std::fs::read(path).unwrap();
    b.chunks_exact(16)
        .map(|q| [0, 1, 2, 3].map(|c| f32::from_le_bytes(q[c * 4..c * 4 + 4].try_into().unwrap())))
        .collect()
}

/// Replay `trace` in `mode`, returning the JSON report and the results.
fn replay(trace: &Path, mode: &str, cache_mb: u32) -> (serde_json::Value, Vec<[f32; 4]>) {
    let out = trace.with_extension(format!("{mode}-{cache_mb}.f32"));
    let stdout = ok(
        demandtex()
            .args(["bench", "replay"])
            .arg(trace)
            .args([
                "--threads",
                "2",
                "--cache-mb",
                &cache_mb.to_string(),
                "--mode",
                mode,
            ])
            .arg("--out")
            .arg(&out)
            .arg("--json")
            .output()
            .unwrap(),
        "replay",
    );
    let json: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    (json, read_results(&out))
}

fn make_traces(dir: &Path) {
    for kind in ["coherent", "incoherent"] {
        ok(
            demandtex()
                .args(["bench", "make-trace", "--out"])
                .arg(dir)
                .args([
                    "--kind",
                    kind,
                    "--textures",
                    "3",
                    "--size",
                    "512",
                    "--queries",
                    "9000",
                ])
                .args(["--width", "48", "--height", "32", "--seed", "3"])
                .output()
                .unwrap(),
            "make-trace",
        );
    }
}

#[test]
fn replays_agree_with_an_independent_reference_in_both_modes() {
    let dir = temp_dir("reference");
    make_traces(&dir);
    let (names, _) = parse_trace(&std::fs::read(dir.join("coherent.dtxq")).unwrap());
    assert_eq!(names.len(), 3);
    let levels: Vec<Levels> = names.iter().map(|n| read_levels(&dir.join(n))).collect();

    // Exact texel values: level-0 texel centres with tiny derivatives, plus wrapped copies.
    let (w, h, texels) = &levels[0].0[0];
    let mut exact = Vec::new();
    let mut expected = Vec::new();
    for (k, (x, y)) in [(0usize, 0usize), (5, 9), (511, 511), (17, 400)]
        .into_iter()
        .enumerate()
    {
        let s = (x as f32 + 0.5) / *w as f32 + [0.0, 1.0, -2.0, 3.0][k];
        let t = (y as f32 + 0.5) / *h as f32;
        exact.push(Q {
            texture: 0,
            s,
            t,
            ddx: [1e-6, 0.0],
            ddy: [0.0, 1e-6],
        });
        expected.push(texels[y * w + x]);
    }
    let hand = dir.join("hand.dtxq");
    std::fs::write(&hand, trace_bytes(&[&names[0]], &exact)).unwrap();
    for mode in ["blocking", "multipass"] {
        let (_, r) = replay(&hand, mode, 64);
        assert_eq!(r, expected, "{mode}");
    }

    for kind in ["coherent", "incoherent"] {
        let trace = dir.join(format!("{kind}.dtxq"));
        let (_, queries) = parse_trace(&std::fs::read(&trace).unwrap());
        assert_eq!(queries.len(), 9000);
        // 1 MiB holds a sixth of the textures: the incoherent trace's tiles are evicted and
        // read again.
        for (mode, cache) in [("blocking", 64), ("blocking", 1), ("multipass", 64)] {
            let (json, results) = replay(&trace, mode, cache);
            assert_eq!(json["non_resident"], 0, "{kind} {mode} {cache}: {json}");
            if cache == 1 && kind == "incoherent" {
                assert!(json["evictions"].as_u64().unwrap() > 0, "{kind}: {json}");
            }
            for key in [
                "lookups",
                "seconds",
                "lookups_per_s",
                "tiles_read",
                "bytes_read",
                "peak_resident_bytes",
                "checksum",
            ] {
                assert!(json[key].is_number(), "{kind} {mode}: no {key} in {json}");
            }
            assert_eq!(json["lookups"], 9000);
            let sum: f64 = results
                .iter()
                .map(|r| r.iter().map(|&c| c as f64).sum::<f64>())
                .sum();
            let checksum = json["checksum"].as_f64().unwrap();
            assert!(
                (checksum - sum).abs() <= 1e-9 * sum.abs(),
                "{checksum} vs {sum}"
            );
            let mut worst = 0.0f64;
            for (q, r) in queries.iter().zip(&results) {
                let e = levels[q.texture as usize].trilinear(q);
                for c in 0..4 {
                    worst = worst.max((e[c] - r[c] as f64).abs());
                }
            }
            assert!(
                worst < 1e-4,
                "{kind} {mode} cache {cache}: differs by {worst}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_traces_and_missing_files_give_clear_errors() {
    let dir = temp_dir("errors");
    let q = Q {
        texture: 0,
        s: 0.5,
        t: 0.5,
        ddx: [0.01, 0.0],
        ddy: [0.0, 0.01],
    };
    let good = trace_bytes(&["missing.exr"], &[q, q]);
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    cases.push(("magic", bad_magic, "not a query trace"));
    let mut bad_version = good.clone();
    bad_version[4] = 9;
    cases.push(("version", bad_version, "version 9"));
    cases.push(("truncated", good[..good.len() - 5].to_vec(), "truncated"));
    cases.push((
        "index",
        trace_bytes(&["missing.exr"], &[Q { texture: 1, ..q }]),
        "names texture 1",
    ));
    let mut non_utf8 = good.clone();
    non_utf8[16] = 0xFF;
    cases.push(("utf8", non_utf8, "not UTF-8"));
    cases.push(("missing file", good, "missing.exr"));
    for (what, bytes, message) in cases {
        let path = dir.join(format!("{}.dtxq", what.replace(' ', "-")));
        std::fs::write(&path, bytes).unwrap();
        let out = demandtex()
            .args(["bench", "replay"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: succeeded");
        assert!(stderr.contains(message), "{what}: {stderr}");
    }
    let out = demandtex()
        .args(["bench", "compare"])
        .arg(dir.join("a.f32"))
        .arg(dir.join("b.f32"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// 8-bit RGBA, 16-bit RGBA and 8-bit grey + alpha PNGs whose alpha runs from 0 to 1.
fn write_alpha_pngs(dir: &Path) -> Vec<String> {
    let (w, h) = (96u32, 80u32);
    let v = |x: u32, y: u32, k: u32| (x * (3 + k) + y * (5 + 2 * k)) % 256;
    let a = |x: u32, _y: u32| (x * 255 / (w - 1)) as u8;
    image::RgbaImage::from_fn(w, h, |x, y| {
        image::Rgba([
            v(x, y, 0) as u8,
            v(x, y, 1) as u8,
            v(x, y, 2) as u8,
            a(x, y),
        ])
    })
    .save(dir.join("rgba8.png"))
    .unwrap();
    image::ImageBuffer::<image::Rgba<u16>, _>::from_fn(w, h, |x, y| {
        let c = |k| (v(x, y, k) * 257) as u16;
        image::Rgba([c(3), c(4), c(5), u16::from(a(y, x)) * 257])
    })
    .save(dir.join("rgba16.png"))
    .unwrap();
    image::GrayAlphaImage::from_fn(w, h, |x, y| image::LumaA([v(x, y, 6) as u8, a(x, y)]))
        .save(dir.join("ya8.png"))
        .unwrap();
    ["rgba8.png", "rgba16.png", "ya8.png"]
        .map(String::from)
        .to_vec()
}

/// Gray, gray + alpha and RGB PNGs converted to EXR: results follow the channel rule.
fn write_channel_textures(dir: &Path) -> Vec<String> {
    let (w, h) = (96u32, 80u32);
    let v = |x: u32, y: u32, k: u32| ((x * (3 + k) + y * (5 + 2 * k)) % 256) as u8;
    let gray = image::GrayImage::from_fn(w, h, |x, y| image::Luma([v(x, y, 0)]));
    let gray_alpha =
        image::GrayAlphaImage::from_fn(w, h, |x, y| image::LumaA([v(x, y, 1), v(x, y, 2)]));
    let rgb = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([v(x, y, 3), v(x, y, 4), v(x, y, 5)])
    });
    gray.save(dir.join("y.png")).unwrap();
    gray_alpha.save(dir.join("ya.png")).unwrap();
    rgb.save(dir.join("rgb.png")).unwrap();
    let mut names = Vec::new();
    for stem in ["y", "ya", "rgb"] {
        ok(
            demandtex()
                .arg("convert")
                .arg(dir.join(format!("{stem}.png")))
                .arg("-o")
                .arg(dir.join(format!("{stem}.exr")))
                .arg("-q")
                .output()
                .unwrap(),
            "convert",
        );
        names.push(format!("{stem}.exr"));
    }
    names
}

/// Deterministic queries over `textures` textures, footprints over every level.
fn spread_queries(textures: u32, n: u32) -> Vec<Q> {
    (0..n)
        .map(|i| {
            let f = |k: u32| {
                ((i.wrapping_mul(2_654_435_761).wrapping_add(k * 40_503)) % 10_007) as f32
                    / 10_007.0
            };
            let len = (f(3) * 7.0).exp2() / 96.0;
            Q {
                texture: i % textures,
                s: f(1) * 3.0 - 1.0,
                t: f(2),
                ddx: [len, 0.0],
                ddy: [0.0, len * 0.5],
            }
        })
        .collect()
}

#[test]
fn channel_rules_hold_for_gray_gray_alpha_and_rgb_files() {
    let dir = temp_dir("channels");
    let names = write_channel_textures(&dir);
    let levels: Vec<Levels> = names.iter().map(|n| read_levels(&dir.join(n))).collect();
    let queries = spread_queries(3, 3000);
    let trace = dir.join("channels.dtxq");
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    std::fs::write(&trace, trace_bytes(&refs, &queries)).unwrap();
    for mode in ["blocking", "multipass"] {
        let (_, results) = replay(&trace, mode, 64);
        for (q, r) in queries.iter().zip(&results) {
            let e = levels[q.texture as usize].trilinear(q);
            for c in 0..4 {
                assert!(
                    (e[c] - r[c] as f64).abs() < 1e-4,
                    "{mode} {q:?}: {r:?} vs {e:?}"
                );
            }
            // Grey: (y, y, y, 1); grey and alpha, two channels: (y, a, y, 1).
            let opaque = (r[3] - 1.0).abs() < 1e-6;
            match q.texture {
                0 => assert!(r[0] == r[1] && r[1] == r[2] && opaque, "{r:?}"),
                1 => assert!(r[2] == r[0] && opaque, "{r:?}"),
                _ => {}
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same queries with footprints 8192 times smaller: magnified, at level 0.
fn at_level_0(queries: Vec<Q>) -> Vec<Q> {
    queries
        .into_iter()
        .map(|q| Q {
            ddx: [q.ddx[0] / 8192.0, 0.0],
            ddy: [0.0, q.ddy[1] / 8192.0],
            ..q
        })
        .collect()
}

#[test]
fn openimageio_agrees_where_it_is_installed() {
    let Some(oiio_replay) = oiio_program("replay") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = temp_dir("oiio");
    make_traces(&dir);
    let names = write_channel_textures(&dir);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    std::fs::write(
        dir.join("channels.dtxq"),
        trace_bytes(&refs, &spread_queries(3, 3000)),
    )
    .unwrap();
    // PNGs with partial alpha, served directly (their alpha associated as OIIO does),
    // sampled at level 0 (OIIO makes no mip levels for them): as OIIO's to rounding. The
    // same for Targa, Radiance HDR and BMP files.
    let mut alpha = write_alpha_pngs(&dir);
    // Files other tools wrote in the formats decoded whole beside PNG (Targa alpha
    // associated by OIIO's rules, among them a TGA 2.0 gamma; float RGBE; a BMP's alpha as
    // stored).
    for name in [
        "oiio_rle.tga",
        "crafted_gamma.tga",
        "crafted_zero_alpha.tga",
        "im_bottomup.tga",
        "oiio.hdr",
        "im_rgba.bmp",
    ] {
        std::fs::copy(root.join("tests/fixtures/img").join(name), dir.join(name)).unwrap();
        alpha.push(name.to_string());
    }
    let refs: Vec<&str> = alpha.iter().map(String::as_str).collect();
    let level_0 = at_level_0(spread_queries(alpha.len() as u32, 3000));
    std::fs::write(dir.join("alpha.dtxq"), trace_bytes(&refs, &level_0)).unwrap();
    // DDS files NVIDIA Texture Tools wrote (legacy headers, which OIIO 2.4 reads; two of
    // several pages of blocks; one BC1 with transparent texels), their blocks kept in the pages and decoded at lookup: at
    // level 0 as OIIO's to the decoders' rounding of interpolated colours (one 8-bit step).
    // With them, files `demandtex convert` writes with legacy headers (BC1 as DXT1, BC3 as
    // DXT5, BC4 as ATI1, BC5 as ATI2, 8-bit RGBA masks), which OIIO 2.4 reads too.
    let mut dds: Vec<String> = [
        "nv-bc1-tiled.dds",
        "nv-bc3-tiled.dds",
        "nv-bc1.dds",
        "nv-bc1a.dds",
        "nv-bc3.dds",
    ]
    .map(String::from)
    .to_vec();
    for name in &dds {
        std::fs::copy(root.join("tests/fixtures/dds").join(name), dir.join(name)).unwrap();
    }
    for format in ["bc1", "bc3", "bc4", "bc5", "rgba8"] {
        let name = format!("dtx-{format}.dds");
        ok(
            demandtex()
                .arg("convert")
                .arg(dir.join("rgba8.png"))
                .arg("-o")
                .arg(dir.join(&name))
                .args(["--format", &format!("dds-{format}"), "-q"])
                .output()
                .unwrap(),
            "convert to DDS",
        );
        dds.push(name);
    }
    let dds: Vec<&str> = dds.iter().map(String::as_str).collect();
    let dds_level_0 = at_level_0(spread_queries(dds.len() as u32, 3000));
    std::fs::write(dir.join("dds.dtxq"), trace_bytes(&dds, &dds_level_0)).unwrap();
    for kind in ["coherent", "incoherent", "channels", "alpha", "dds"] {
        let trace = dir.join(format!("{kind}.dtxq"));
        let (json, _) = replay(&trace, "blocking", 64);
        let oiio_out = dir.join(format!("{kind}-oiio.f32"));
        let stdout = ok(
            Command::new(&oiio_replay)
                .arg(&trace)
                .arg("--textures")
                .arg(&dir)
                .args(["--threads", "2", "--cache-mb", "64", "--json", "--out"])
                .arg(&oiio_out)
                .output()
                .unwrap(),
            "oiio-replay",
        );
        let oiio: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(oiio["lookups"], json["lookups"]);
        let cmp = ok(
            demandtex()
                .args(["bench", "compare", "--json"])
                .arg(trace.with_extension("blocking-64.f32"))
                .arg(&oiio_out)
                .output()
                .unwrap(),
            "compare",
        );
        let cmp: serde_json::Value = serde_json::from_str(cmp.trim()).unwrap();
        let psnr = cmp["psnr_rgb"].as_f64().unwrap_or(f64::INFINITY);
        let want = match kind {
            "alpha" => 100.0,
            "dds" => 55.0,
            _ => 40.0,
        };
        assert!(psnr >= want, "{kind}: PSNR {psnr} dB against OIIO ({cmp})");
        let checksums = (
            json["checksum"].as_f64().unwrap(),
            oiio["checksum"].as_f64().unwrap(),
        );
        assert!(
            (checksums.0 - checksums.1).abs() < 1e-3 * checksums.0,
            "{checksums:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
