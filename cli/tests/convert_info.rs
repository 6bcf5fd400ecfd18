//! `demandtex convert` and `demandtex info`, run as the built binary on inputs written here
//! (PNG, TIFF, JPEG, OpenEXR), read back with the exr crate.

use exr::meta::attribute::{LevelMode, SampleType};
use exr::meta::BlockDescription;
use exr::prelude::{
    AnyChannel, AnyChannels, Encoding, FlatSamples, Image, Layer, LayerAttributes, Levels,
    ReadChannels, ReadLayers, SmallVec, Vec2, WritableImage,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for one test.
fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-cli-{}-{name}", std::process::id()));
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

/// Runs a conversion that must succeed; returns its stdout.
fn convert(input: &Path, output: &Path, extra: &[&str]) -> String {
    let mut args = vec!["convert", p(input), "-o", p(output)];
    args.extend_from_slice(extra);
    let out = demandtex(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "convert {extra:?} failed: {stderr}");
    assert!(
        !Path::new(&format!("{}.tmp", p(output))).exists(),
        "temp file left"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A run that must fail cleanly: nonzero exit, one `demandtex:` line, no panic.
fn assert_clean_failure(out: &Output, mentions: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "should fail: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected: {stderr}");
    assert!(lines[0].starts_with("demandtex:"), "{stderr}");
    assert!(
        lines[0].contains(mentions),
        "{stderr} should mention {mentions}"
    );
}

/// What a converted file holds.
struct Read {
    channels: Vec<String>,
    /// Per level, `channels.len()` interleaved samples per texel.
    levels: Vec<(usize, usize, Vec<f32>)>,
    tile: (usize, usize),
    level_mode: LevelMode,
    compression: exr::compression::Compression,
    sample_type: SampleType,
}

fn read_back(path: &Path) -> Read {
    let meta = exr::meta::MetaData::read_from_file(path, false).unwrap();
    let header = &meta.headers[0];
    let BlockDescription::Tiles(tiles) = header.blocks else {
        panic!("not tiled")
    };
    let image = exr::prelude::read()
        .no_deep_data()
        .all_resolution_levels()
        .all_channels()
        .first_valid_layer()
        .all_attributes()
        .from_file(path)
        .unwrap();
    let size = image.layer_data.size;
    let list = &image.layer_data.channel_data.list;
    // Output order: R G B A or Y A.
    let rank = |n: &str| {
        ["R", "G", "B", "Y", "A"]
            .iter()
            .position(|x| *x == n)
            .unwrap()
    };
    let mut order: Vec<usize> = (0..list.len()).collect();
    order.sort_by_key(|&i| rank(&list[i].name.to_string()));
    let per_channel: Vec<Vec<Vec<f32>>> = order
        .iter()
        .map(|&i| match &list[i].sample_data {
            Levels::Singular(s) => vec![s.values_as_f32().collect()],
            Levels::Mip { level_data, .. } => level_data
                .iter()
                .map(|s| s.values_as_f32().collect())
                .collect(),
            Levels::Rip { .. } => panic!("rip map"),
        })
        .collect();
    let c = order.len();
    let levels = (0..per_channel[0].len())
        .map(|l| {
            let (w, h) = ((size.x() >> l).max(1), (size.y() >> l).max(1));
            assert_eq!(per_channel[0][l].len(), w * h, "level {l} size");
            let mut data = vec![0.0; w * h * c];
            for (k, ch) in per_channel.iter().enumerate() {
                for (t, &v) in ch[l].iter().enumerate() {
                    data[t * c + k] = v;
                }
            }
            (w, h, data)
        })
        .collect();
    Read {
        channels: order.iter().map(|&i| list[i].name.to_string()).collect(),
        levels,
        tile: (tiles.tile_size.x(), tiles.tile_size.y()),
        level_mode: tiles.level_mode,
        compression: header.compression,
        sample_type: header.channels.list[0].sample_type,
    }
}

/// `got` equals `want` within half precision (relative 2^-10, absolute 1e-4 near zero).
fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-4 + b.abs() / 1024.0,
            "{what}: sample {i}: {a} vs {b}"
        );
    }
}

/// The box filter of `level` (w × h × c) at output texel (x, y), InMemoryImage style: 2×2,
/// with 3 taps for the last texel of an odd side.
fn box_texel(level: &(usize, usize, Vec<f32>), c: usize, x: usize, y: usize) -> Vec<f32> {
    let (w, h, data) = level;
    let (dw, dh) = ((w / 2).max(1), (h / 2).max(1));
    let span =
        |i: usize, out: usize, len: usize| (2 * i, if i + 1 == out { len } else { 2 * i + 2 });
    let ((x0, x1), (y0, y1)) = (span(x, dw, *w), span(y, dh, *h));
    let n = ((x1 - x0) * (y1 - y0)) as f32;
    (0..c)
        .map(|k| {
            let mut sum = 0.0;
            for yy in y0..y1 {
                for xx in x0..x1 {
                    sum += data[(yy * w + xx) * c + k];
                }
            }
            sum / n
        })
        .collect()
}

/// Checks level 1 against the box filter of level 0 at corners, the middle and the odd
/// edges, and every level's size.
fn assert_mips(read: &Read, width: usize, height: usize) {
    let expected_levels = usize::BITS as usize - width.max(height).leading_zeros() as usize;
    assert_eq!(read.levels.len(), expected_levels);
    for (l, (w, h, _)) in read.levels.iter().enumerate() {
        assert_eq!(
            (*w, *h),
            ((width >> l).max(1), (height >> l).max(1)),
            "level {l}"
        );
    }
    let c = read.channels.len();
    let (w1, h1, l1) = &read.levels[1];
    for (x, y) in [
        (0, 0),
        (w1 - 1, 0),
        (0, h1 - 1),
        (w1 - 1, h1 - 1),
        (w1 / 2, h1 / 2),
    ] {
        let want = box_texel(&read.levels[0], c, x, y);
        let got = &l1[(y * w1 + x) * c..(y * w1 + x + 1) * c];
        // The writer filters the f32 input, the check filters the half level 0.
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (a - b).abs() <= 2e-3 + b.abs() / 512.0,
                "level 1 ({x},{y}): {got:?} vs {want:?}"
            );
        }
    }
}

fn pattern8(width: u32, height: u32, channels: usize) -> Vec<u8> {
    (0..width * height)
        .flat_map(|t| {
            let (x, y) = (t % width, t / width);
            (0..channels).map(move |k| ((x * 7 + y * 13 + k as u32 * 61) % 256) as u8)
        })
        .collect()
}

fn unorm8(data: &[u8]) -> Vec<f32> {
    data.iter().map(|&v| v as f32 / 255.0).collect()
}

#[test]
fn png_rgba8_odd_size_converts_to_tiled_mips() {
    let dir = test_dir("png-rgba");
    let (png, exr) = (dir.join("in.png"), dir.join("out.exr"));
    let pixels = pattern8(300, 77, 4);
    image::RgbaImage::from_raw(300, 77, pixels.clone())
        .unwrap()
        .save(&png)
        .unwrap();
    let summary = convert(&png, &exr, &["--tile", "32x16"]);
    assert!(
        summary.contains("300x77") && summary.contains("9 levels"),
        "{summary}"
    );
    let read = read_back(&exr);
    assert_eq!(read.channels, ["R", "G", "B", "A"]);
    assert_eq!(read.tile, (32, 16));
    assert_eq!(read.level_mode, LevelMode::MipMap);
    assert_eq!(read.compression, exr::compression::Compression::ZIP16);
    assert_eq!(read.sample_type, SampleType::F16);
    assert_close(&read.levels[0].2, &unorm8(&pixels), "level 0");
    assert_mips(&read, 300, 77);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn png_gray8_stays_one_channel_float_single_level() {
    let dir = test_dir("png-gray");
    let (png, exr) = (dir.join("in.png"), dir.join("out.exr"));
    let pixels = pattern8(65, 33, 1);
    image::GrayImage::from_raw(65, 33, pixels.clone())
        .unwrap()
        .save(&png)
        .unwrap();
    convert(
        &png,
        &exr,
        &["--type", "float", "--no-mips", "--tile", "16", "--quiet"],
    );
    let read = read_back(&exr);
    assert_eq!(read.channels, ["Y"]);
    assert_eq!(
        (read.tile, read.level_mode),
        ((16, 16), LevelMode::Singular)
    );
    assert_eq!(read.sample_type, SampleType::F32);
    assert_eq!(read.levels.len(), 1);
    assert_eq!(
        read.levels[0].2,
        unorm8(&pixels),
        "float keeps v/255 exactly"
    );
    // And with mips, a gray-alpha input keeps its alpha.
    let ya = pattern8(33, 65, 2);
    image::GrayAlphaImage::from_raw(33, 65, ya.clone())
        .unwrap()
        .save(&png)
        .unwrap();
    convert(&png, &exr, &[]);
    let read = read_back(&exr);
    assert_eq!(read.channels, ["Y", "A"]);
    assert_close(&read.levels[0].2, &unorm8(&ya), "gray-alpha level 0");
    assert_mips(&read, 33, 65);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tiff16_converts_and_linearizes_on_request() {
    let dir = test_dir("tiff16");
    let (tif, exr) = (dir.join("in.tif"), dir.join("out.exr"));
    let (w, h) = (129u32, 40u32);
    let pixels: Vec<u16> = (0..w * h * 3)
        .map(|i| ((i * 2731) % 65536) as u16)
        .collect();
    image::ImageBuffer::<image::Rgb<u16>, _>::from_raw(w, h, pixels.clone())
        .unwrap()
        .save(&tif)
        .unwrap();
    convert(&tif, &exr, &["--compression", "piz"]);
    let read = read_back(&exr);
    assert_eq!(read.channels, ["R", "G", "B"]);
    assert_eq!(read.compression, exr::compression::Compression::PIZ);
    let want: Vec<f32> = pixels.iter().map(|&v| v as f32 / 65535.0).collect();
    assert_close(&read.levels[0].2, &want, "16-bit level 0");
    assert_mips(&read, w as usize, h as usize);

    let out = convert(&tif, &exr, &["--linearize", "--type", "float"]);
    assert!(out.contains("linearized"), "{out}");
    let srgb = |v: f32| {
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    let want: Vec<f32> = want.iter().map(|&v| srgb(v)).collect();
    assert_close(&read_back(&exr).levels[0].2, &want, "linearized level 0");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tiffs_convert_through_the_engines_reader() {
    // maketx's signed 16-bit planes (`--prman`) and libtiff's JPEG tiles: what the image
    // crate cannot decode, read as the engine serves them. Compared with OIIO's decode in
    // the fixture's reference (`level x y values…`, level-0 lines).
    let dir = test_dir("tiff-core");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx");
    for (name, tolerance) in [("signed16_prman.tx", 1e-3), ("jpeg_tiled.tif", 4.5 / 255.0)] {
        let exr = dir.join(format!("{name}.exr"));
        convert(&fixtures.join(name), &exr, &["--type", "float"]);
        let read = read_back(&exr);
        assert_eq!(read.channels, ["R", "G", "B"], "{name}");
        let (w, _, level0) = &read.levels[0];
        let reference = std::fs::read_to_string(fixtures.join(name).with_extension("ref")).unwrap();
        let mut compared = 0;
        for line in reference.lines() {
            let v: Vec<f64> = line
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            if v[0] != 0.0 {
                continue;
            }
            let at = (v[2] as usize * w + v[1] as usize) * 3;
            for c in 0..3 {
                let got = f64::from(level0[at + c]);
                assert!(
                    (got - v[3 + c]).abs() <= tolerance,
                    "{name} ({}, {}) channel {c}: {got} vs OIIO {}",
                    v[1],
                    v[2],
                    v[3 + c]
                );
            }
            compared += 1;
        }
        assert!(compared > 0, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jpeg_converts_to_what_the_decoder_sees() {
    let dir = test_dir("jpeg");
    let (jpg, exr) = (dir.join("in.jpg"), dir.join("out.exr"));
    image::RgbImage::from_raw(64, 48, pattern8(64, 48, 3))
        .unwrap()
        .save(&jpg)
        .unwrap();
    let decoded = image::open(&jpg).unwrap().to_rgb8();
    convert(&jpg, &exr, &["--filter", "triangle"]);
    let read = read_back(&exr);
    assert_eq!(read.channels, ["R", "G", "B"]);
    assert_close(&read.levels[0].2, &unorm8(decoded.as_raw()), "jpeg level 0");
    assert_eq!(read.levels.len(), 7);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn exr_channel(name: &str, values: Vec<f32>) -> AnyChannel<FlatSamples> {
    AnyChannel::new(name, FlatSamples::F32(values))
}

/// Writes a scan-line EXR with the given f32 channels.
fn write_scanline_exr(
    path: &Path,
    width: usize,
    height: usize,
    channels: Vec<AnyChannel<FlatSamples>>,
) {
    let layer = Layer::new(
        Vec2(width, height),
        LayerAttributes::default(),
        Encoding::FAST_LOSSLESS,
        AnyChannels::sort(SmallVec::from_vec(channels)),
    );
    Image::from_layer(layer).write().to_file(path).unwrap();
}

#[test]
fn exr_inputs_keep_float_samples_and_select_layers() {
    let dir = test_dir("exr");
    let (input, exr) = (dir.join("in.exr"), dir.join("out.exr"));
    let (w, h) = (300usize, 77usize);
    let plane = |k: usize| -> Vec<f32> {
        (0..w * h)
            .map(|t| ((t % w) * 3 + (t / w) * 5 + k) as f32 * 0.01 - 1.0)
            .collect()
    };
    write_scanline_exr(
        &input,
        w,
        h,
        vec![
            exr_channel("R", plane(0)),
            exr_channel("G", plane(1)),
            exr_channel("B", plane(2)),
            exr_channel("A", plane(3)),
            exr_channel("diffuse.R", plane(4)),
            exr_channel("diffuse.G", plane(5)),
            exr_channel("diffuse.B", plane(6)),
            exr_channel("Z", plane(7)),
        ],
    );
    let interleave = |ks: &[usize]| -> Vec<f32> {
        let planes: Vec<Vec<f32>> = ks.iter().map(|&k| plane(k)).collect();
        (0..w * h)
            .flat_map(|t| planes.iter().map(move |p| p[t]))
            .collect::<Vec<f32>>()
    };
    convert(&input, &exr, &["--type", "float", "--tile", "64x32"]);
    let read = read_back(&exr);
    assert_eq!(read.channels, ["R", "G", "B", "A"]);
    assert_eq!(
        read.levels[0].2,
        interleave(&[0, 1, 2, 3]),
        "float level 0 exact"
    );
    assert_mips(&read, w, h);

    convert(&input, &exr, &["--channels", "diffuse"]);
    let read = read_back(&exr);
    assert_eq!(read.channels, ["R", "G", "B"]);
    assert_close(&read.levels[0].2, &interleave(&[4, 5, 6]), "diffuse layer");

    convert(&input, &exr, &["--channels", "Z"]);
    let read = read_back(&exr);
    assert_eq!(read.channels, ["Y"]);
    assert_close(&read.levels[0].2, &interleave(&[7]), "Z as Y");

    // A tiled mip-mapped input (our own output) converts from its level 0.
    let again = dir.join("again.exr");
    convert(&exr, &again, &["--tile", "16"]);
    assert_close(
        &read_back(&again).levels[0].2,
        &interleave(&[7]),
        "tiled input",
    );

    let bad = demandtex(&[
        "convert",
        p(&input),
        "-o",
        p(&exr),
        "--channels",
        "specular",
    ]);
    assert_clean_failure(&bad, "specular");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_compression_round_trips() {
    let dir = test_dir("compressions");
    let png = dir.join("in.png");
    let pixels = pattern8(70, 45, 4);
    image::RgbaImage::from_raw(70, 45, pixels.clone())
        .unwrap()
        .save(&png)
        .unwrap();
    let want = unorm8(&pixels);
    use exr::compression::Compression as C;
    for (name, expected, lossless) in [
        ("none", C::Uncompressed, true),
        ("rle", C::RLE, true),
        ("zips", C::ZIP1, true),
        ("zip", C::ZIP16, true),
        ("piz", C::PIZ, true),
        ("pxr24", C::PXR24, true),
        ("b44", C::B44, false),
        ("b44a", C::B44A, false),
        ("dwaa", C::DWAA(None), false),
        ("dwab", C::DWAB(None), false),
    ] {
        let exr = dir.join(format!("{name}.exr"));
        convert(&png, &exr, &["--compression", name, "--quiet"]);
        let read = read_back(&exr);
        let got = match read.compression {
            C::DWAA(_) => C::DWAA(None),
            C::DWAB(_) => C::DWAB(None),
            other => other,
        };
        assert_eq!(got, expected, "{name}");
        if lossless {
            assert_close(&read.levels[0].2, &want, name);
        } else {
            let worst = read.levels[0]
                .2
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 0.2, "{name}: {worst}");
        }
        assert_eq!(read.levels.len(), 7, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn info_describes_levels_tiles_compression_as_text_and_json() {
    let dir = test_dir("info");
    let (png, exr) = (dir.join("in.png"), dir.join("out.exr"));
    image::RgbaImage::from_raw(300, 77, pattern8(300, 77, 4))
        .unwrap()
        .save(&png)
        .unwrap();
    convert(&png, &exr, &["--compression", "piz", "--tile", "32"]);

    let out = demandtex(&["info", p(&exr)]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "300x77",
        "9 mipmap (rounding down)",
        "piz",
        "tiled 32x32",
        "150x38",
        "1x1",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }

    let out = demandtex(&["info", "--json", p(&exr)]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let part = &json["parts"][0];
    assert_eq!(part["width"], 300);
    assert_eq!(part["height"], 77);
    assert_eq!(part["compression"], "piz");
    assert_eq!(part["level_mode"], "mipmap");
    assert_eq!(part["tile"], serde_json::json!([32, 32]));
    assert_eq!(part["levels"].as_array().unwrap().len(), 9);
    assert_eq!(part["channels"].as_array().unwrap().len(), 4);
    assert_eq!(part["channels"][0]["type"], "half");
    let on_disk = part["bytes_on_disk"].as_u64().unwrap();
    let file = std::fs::metadata(&exr).unwrap().len();
    assert!(on_disk > 0 && on_disk < file, "{on_disk} of {file}");
    // 300x77 + 150x38 + ... RGBA half.
    let decoded: u64 = (0..9)
        .map(|l| ((300u64 >> l).max(1)) * ((77u64 >> l).max(1)) * 8)
        .sum();
    assert_eq!(part["decoded_bytes"].as_u64().unwrap(), decoded);
    assert_eq!(json["file_bytes"].as_u64().unwrap(), file);

    let out = demandtex(&["info", p(&png)]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("PNG image, 300x77") && text.contains("no tiles or mip levels"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_inputs_fail_with_one_clear_line() {
    let dir = test_dir("bad");
    let out_exr = dir.join("out.exr");
    let missing = dir.join("missing.png");
    assert_clean_failure(
        &demandtex(&["convert", p(&missing), "-o", p(&out_exr)]),
        "missing.png",
    );
    assert_clean_failure(&demandtex(&["info", p(&missing)]), "missing.png");

    let corrupt = dir.join("corrupt.png");
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend_from_slice(&[0x13; 200]);
    std::fs::write(&corrupt, &bytes).unwrap();
    assert_clean_failure(
        &demandtex(&["convert", p(&corrupt), "-o", p(&out_exr)]),
        "corrupt.png",
    );
    assert_clean_failure(&demandtex(&["info", p(&corrupt)]), "corrupt.png");

    let text = dir.join("notes.txt");
    std::fs::write(&text, "not an image").unwrap();
    assert_clean_failure(
        &demandtex(&["convert", p(&text), "-o", p(&out_exr)]),
        "unrecognised",
    );

    // A truncated EXR: a good file cut in the middle of its chunks, and in its header.
    let png = dir.join("good.png");
    image::RgbaImage::from_raw(200, 100, pattern8(200, 100, 4))
        .unwrap()
        .save(&png)
        .unwrap();
    let good = dir.join("good.exr");
    convert(&png, &good, &["--quiet"]);
    let full = std::fs::read(&good).unwrap();
    for (name, len) in [("cut-chunks.exr", full.len() / 2), ("cut-header.exr", 100)] {
        let cut = dir.join(name);
        std::fs::write(&cut, &full[..len]).unwrap();
        assert_clean_failure(&demandtex(&["convert", p(&cut), "-o", p(&out_exr)]), name);
        assert_clean_failure(&demandtex(&["info", p(&cut)]), name);
    }
    assert!(!out_exr.exists(), "no output from failed conversions");
    assert!(!Path::new(&format!("{}.tmp", p(&out_exr))).exists());

    // The input is never overwritten.
    let out = demandtex(&["convert", p(&good), "-o", p(&good)]);
    assert_clean_failure(&out, "input");
    assert_eq!(std::fs::read(&good).unwrap(), full);
    std::fs::remove_dir_all(&dir).unwrap();
}
