//! Texels against the fixtures: constant values, every resolution of every face (stored,
//! constant and reduced on the fly) by checksum, block and tile properties, and single
//! pixels raw and as `f32`, unpremultiplied and premultiplied.

use super::fixtures::*;
use crate::sources::ptex::*;
use serde_json::Value;

#[test]
fn constant_values_match() {
    for fx in all() {
        let pre = fx.file.alpha_channel().map(|_| fx.premultiplied());
        for jf in list(&fx.json["faces"]) {
            let face = int(&jf["id"]) as u32;
            let expected = raw_texel(&fx.file, &jf["const_raw"]);
            assert_eq!(
                fx.file.constant(face).unwrap(),
                expected,
                "{} face {face}",
                fx.name
            );
            if let Some(pre) = &pre {
                let expected = raw_texel(&fx.file, &jf["const_raw_premultiplied"]);
                assert_eq!(
                    pre.constant(face).unwrap(),
                    expected,
                    "{} face {face} premultiplied",
                    fx.name
                );
            }
        }
    }
}

/// Compare a block's (or face's) properties with a `faceData` / `level0` entry.
fn check_face_data(f: &PtexFile, face: u32, level: usize, j: &Value, ctx: &str) {
    let block = f.block(face, level).unwrap();
    let constant = f.face_info(face).unwrap().is_constant();
    assert_eq!(constant, flag(&j["isConstant"]), "{ctx}");
    assert_eq!(block.tiles.is_some(), flag(&j["isTiled"]), "{ctx}");
    if !constant {
        assert_eq!(block.res, res(&j["res"]), "{ctx}");
    }
    if let Some(t) = &block.tiles {
        assert_eq!(t.tile_res, res(&j["tileRes"]), "{ctx}");
        assert_eq!(t.ntiles_u as u64, int(&j["ntilesu"]), "{ctx}");
        assert_eq!(t.ntiles_v as u64, int(&j["ntilesv"]), "{ctx}");
        for (tile, jc) in list(&j["tileIsConstant"]).iter().enumerate() {
            let data = f.read_tile(face, level, tile).unwrap();
            assert_eq!(data.is_constant(), flag(jc), "{ctx} tile {tile}");
            assert_eq!(data.res(), t.tile_res, "{ctx} tile {tile}");
        }
    }
}

/// Every `data[]` entry of every face: the texels `getData(face, buffer, 0, res)` filled,
/// by FNV-1a checksum, whatever their source (level 0, a stored reduction, the constant,
/// or a reduction the library computed on the fly); stored blocks' properties too.
#[test]
fn every_resolution_of_every_face_matches() {
    let (mut stored, mut dynamic, mut constant) = (0, 0, 0);
    for fx in all() {
        let f = &fx.file;
        let pre = f.alpha_channel().map(|_| fx.premultiplied());
        for jf in list(&fx.json["faces"]) {
            let face = int(&jf["id"]) as u32;
            check_face_data(
                f,
                face,
                0,
                &jf["level0"],
                &format!("{} face {face} level0", fx.name),
            );
            for jd in list(&jf["data"]) {
                let r = res(&jd["res"]);
                let ctx = format!("{} face {face} res {r} ({})", fx.name, jd["source"]);
                let data = f
                    .read_face(face, r)
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert_eq!(data.res(), r, "{ctx}");
                assert_eq!(fnv1a64(&data.to_packed()), jd["fnv1a64"], "{ctx}");
                let source = jd["source"].as_str().unwrap();
                if source.starts_with("dynamic") {
                    dynamic += 1;
                } else if source.starts_with("const") {
                    constant += 1;
                    assert!(data.is_constant(), "{ctx}");
                } else {
                    stored += 1;
                    let level = int(&jd["layout_level"]) as usize;
                    check_face_data(f, face, level, &jd["faceData"], &ctx);
                    let whole = f.read_level(face, level).unwrap();
                    assert_eq!(fnv1a64(&whole.to_packed()), jd["fnv1a64"], "{ctx}");
                }
                if let (Some(pre), Some(sum)) = (&pre, jd.get("fnv1a64_premultiplied")) {
                    let data = pre.read_face(face, r).unwrap();
                    assert_eq!(&fnv1a64(&data.to_packed()), sum, "{ctx} premultiplied");
                }
            }
        }
    }
    // The fixtures exercise every source.
    assert!(
        stored >= 60 && dynamic >= 100 && constant >= 30,
        "{stored} {dynamic} {constant}"
    );
}

/// Every face's full-resolution data regenerated from the README's texel patterns: the
/// check that the checksums above are of the right texels.
#[test]
fn level_zero_matches_the_written_patterns() {
    for fx in all() {
        let f = &fx.file;
        for jf in list(&fx.json["faces"]) {
            let face = int(&jf["id"]) as u32;
            let w = &jf["written"];
            if w["data"] != "pattern" {
                continue;
            }
            let r = res(&w["res"]);
            let pattern = int(&w["pattern_faceid"]) as u32;
            let mut expected = Vec::new();
            for v in 0..r.v() {
                for u in 0..r.u() {
                    let region = list(&w["regions"]).iter().find(|g| {
                        (int(&g["u0"]) as usize..int(&g["u1"]) as usize).contains(&u)
                            && (int(&g["v0"]) as usize..int(&g["v1"]) as usize).contains(&v)
                    });
                    match region {
                        Some(g) => expected.extend(raw_texel(f, &g["raw"])),
                        None => {
                            for c in 0..f.num_channels() {
                                expected.extend(pattern_value(
                                    f, pattern, u as u32, v as u32, c as u32,
                                ));
                            }
                        }
                    }
                }
            }
            let data = f.read_face(face, r).unwrap().to_packed();
            assert!(
                data == expected,
                "{} face {face}: level 0 differs from its pattern",
                fx.name
            );
        }
    }
}

/// The README's pattern value of channel `c` at (`u`, `v`) of pattern face `p`.
fn pattern_value(f: &PtexFile, p: u32, u: u32, v: u32, c: u32) -> Vec<u8> {
    let mut h = p.wrapping_mul(0x9E37_79B1)
        ^ u.wrapping_mul(0x85EB_CA77)
        ^ v.wrapping_mul(0xC2B2_AE3D)
        ^ c.wrapping_mul(0x27D4_EB2F);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^= h >> 12;
    h = h.wrapping_mul(0x297A_2D39);
    h ^= h >> 15;
    let w = |x: u32, y: u32| x.wrapping_mul(y);
    match f.data_type() {
        DataType::U8 => vec![(w(u, 3) + w(v, 5) + w(p, 17) + w(c, 64) + (h & 7)) as u8],
        DataType::U16 => ((w(u, 300) + w(v, 700) + w(p, 4099) + w(c, 20000) + (h & 0xff)) as u16)
            .to_le_bytes()
            .to_vec(),
        DataType::Half => {
            let bits = if Some(c as usize) == f.alpha_channel() {
                [0x0000u16, 0x3400, 0x3800, 0x3A00, 0x3C00]
                    [((u + 2 * v + p + (h & 1)) % 5) as usize]
            } else {
                0x3000 + ((w(u, 7) + w(v, 13) + w(p, 29) + w(c, 97) + (h & 0x3f)) & 0x7ff) as u16
            };
            bits.to_le_bytes().to_vec()
        }
        DataType::F32 => {
            let x = ((w(u, 3) + w(v, 7) + w(p, 101) + w(c, 211) + (h & 0x3f)) & 0x3ff) as f32
                / 1024.0
                + p as f32;
            x.to_le_bytes().to_vec()
        }
    }
}

/// Every sampled pixel: the raw texel and `getPixel`'s `f32` values, bit for bit.
#[test]
fn pixels_match_raw_and_converted() {
    let mut n = 0;
    for fx in all() {
        let pre = fx.file.alpha_channel().map(|_| fx.premultiplied());
        for jp in list(&fx.json["pixels"]) {
            let f = if flag(&jp["premultiply"]) {
                pre.as_ref().unwrap()
            } else {
                &fx.file
            };
            let (face, r) = (int(&jp["face"]) as u32, res(&jp["res"]));
            let (u, v) = (int(&jp["u"]) as usize, int(&jp["v"]) as usize);
            let ctx = format!(
                "{} face {face} res {r} ({u}, {v}) premultiplied {}",
                fx.name, jp["premultiply"]
            );
            assert_eq!(
                f.texel(face, r, u, v).unwrap(),
                raw_texel(f, &jp["raw"]),
                "{ctx}"
            );
            let values = f.pixel(face, r, u, v).unwrap();
            let expected: Vec<f32> = list(&jp["value"]).iter().map(f32_of).collect();
            assert_eq!(values.len(), expected.len(), "{ctx}");
            for (a, b) in values.iter().zip(&expected) {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{ctx}: {values:?} vs {expected:?}"
                );
            }
            // The same texel from the whole face.
            let whole = f.read_face(face, r).unwrap();
            assert_eq!(
                whole.texel(u, v).unwrap(),
                raw_texel(f, &jp["raw"]).as_slice(),
                "{ctx}"
            );
            n += 1;
        }
    }
    assert!(n > 1000, "{n} pixels");
}

/// Triangle reductions on the fly use `reduceTri`; anisotropic resolutions are errors.
#[test]
fn triangles_reduce_isotropically_only() {
    let fx = Fixture::load("tri_uint8_rgb");
    let f = &fx.file;
    let face = (0..f.num_faces() as u32)
        .find(|&i| !f.face_info(i).unwrap().is_constant() && f.face_info(i).unwrap().res.ulog2 >= 2)
        .unwrap();
    let r = f.face_info(face).unwrap().res;
    let e = f
        .read_face(face, Res::new(r.ulog2 - 1, r.vlog2))
        .unwrap_err();
    assert_eq!(e.kind, PtexErrorKind::OutOfRange, "{e}");
    assert!(e.message.contains("anisotropic"), "{e}");
}

#[test]
fn requests_outside_a_face_are_errors() {
    let fx = Fixture::load("quad_uint8_rgb");
    let f = &fx.file;
    let big = f.face_info(0).unwrap().res;
    for (face, r) in [
        (10, Res::new(0, 0)),
        (0, Res::new(big.ulog2 + 1, big.vlog2)),
        (0, Res::new(-1, 0)),
    ] {
        let e = f.read_face(face, r).unwrap_err();
        assert_eq!(e.kind, PtexErrorKind::OutOfRange, "{e}");
        assert!(e.to_string().contains("quad_uint8_rgb.ptx"), "{e}");
    }
    assert_eq!(
        f.read_tile(0, 0, 4).unwrap_err().kind,
        PtexErrorKind::OutOfRange
    );
    assert_eq!(
        f.read_tile(1, 0, 0).unwrap_err().kind,
        PtexErrorKind::OutOfRange
    );
    assert_eq!(
        f.read_level(0, 7).unwrap_err().kind,
        PtexErrorKind::OutOfRange
    );
    assert_eq!(
        f.texel(1, big, 64, 0).unwrap_err().kind,
        PtexErrorKind::OutOfRange
    );
    assert_eq!(
        f.meta_value(99).unwrap_err().kind,
        PtexErrorKind::OutOfRange
    );
}

#[test]
fn size_limits_bound_whole_face_reads_and_decoded_blocks() {
    use crate::sources::SizeLimits;
    let path = fixture_dir().join("quad_uint8_rgb.ptx");
    let whole = PtexFile::open(&path).unwrap();
    // The largest face, whole, in bytes; and the largest non-constant face's block.
    let (face, bytes) = (0..whole.num_faces() as u32)
        .filter(|&f| !whole.face_info(f).unwrap().is_constant())
        .map(|f| {
            (
                f,
                whole.face_info(f).unwrap().res.texels() * whole.pixel_size(),
            )
        })
        .max_by_key(|&(_, b)| b)
        .unwrap();
    let res = whole.face_info(face).unwrap().res;
    let with = |limits| {
        PtexFile::open_with(
            &path,
            PtexOptions {
                limits,
                ..PtexOptions::default()
            },
        )
    };
    let image = |max_image_bytes| SizeLimits {
        max_image_bytes,
        ..SizeLimits::default()
    };
    let fits = with(image(bytes as u64)).unwrap();
    assert_eq!(
        fits.read_face(face, res).unwrap(),
        whole.read_face(face, res).unwrap()
    );
    let e = with(image(bytes as u64 - 1))
        .unwrap()
        .read_face(face, res)
        .unwrap_err();
    assert_eq!(e.kind, PtexErrorKind::OutOfRange, "{e}");
    assert!(
        e.message.contains("max_image_bytes") && e.message.contains("read it by tiles"),
        "{e}"
    );
    // A block limit below any face's data: every non-constant level-0 read fails cleanly.
    let block = SizeLimits {
        max_decoded_block_bytes: 2,
        ..SizeLimits::default()
    };
    let small = with(block).unwrap();
    let e = small.read_level(face, 0).unwrap_err();
    assert!(
        e.message.contains("over this reader's limit of 2 bytes"),
        "{e}"
    );
}

#[test]
fn interleave_puts_each_plane_in_its_channel() {
    use crate::sources::ptex::planar::interleave;
    for value_size in [1usize, 2, 3, 4, 8] {
        for nchannels in 1..=5usize {
            let texels = 7;
            let planar: Vec<u8> = (0..texels * nchannels * value_size)
                .map(|i| (i * 37 % 251) as u8)
                .collect();
            let out = interleave(&planar, texels, nchannels, value_size);
            for t in 0..texels {
                for c in 0..nchannels {
                    let from = (c * texels + t) * value_size;
                    let to = (t * nchannels + c) * value_size;
                    assert_eq!(
                        out[to..to + value_size],
                        planar[from..from + value_size],
                        "size {value_size}, {nchannels} channels, texel {t}, channel {c}"
                    );
                }
            }
        }
    }
}
