//! Unit checks: the half conversions, reductions on small images, premultiplication,
//! adjacency rotations, `FaceData`, and reads of one file from many threads.

use super::fixtures::*;
use crate::sources::ptex::values::{
    f32_to_half, half_to_f32, premultiply, reduce, to_f32, Reduction,
};
use crate::sources::ptex::*;

#[test]
fn half_to_f32_is_exact_for_every_value() {
    for bits in 0..=u16::MAX {
        let ours = half_to_f32(bits);
        let theirs = half::f16::from_bits(bits).to_f32();
        if theirs.is_nan() {
            // The payload is kept, in the top bits of the f32's mantissa.
            let sign = u32::from(bits & 0x8000) << 16;
            let payload = u32::from(bits & 0x03ff) << 13;
            assert_eq!(ours.to_bits(), sign | 0x7f80_0000 | payload, "{bits:#06x}");
        } else {
            assert_eq!(ours.to_bits(), theirs.to_bits(), "{bits:#06x}");
        }
    }
}

#[test]
fn f32_to_half_round_trips_and_rounds_half_up() {
    for bits in 0..=u16::MAX {
        let x = half_to_f32(bits);
        if x.is_nan() || bits == 0x8000 {
            continue;
        }
        assert_eq!(f32_to_half(x), bits, "{bits:#06x} ({x})");
    }
    // Negative zero becomes +0, as PtexHalf's `val == 0` test does.
    assert_eq!(f32_to_half(-0.0), 0);
    // 1 + 2^-11 lies exactly between two halves: the reference rounds up (away from
    // zero), where ties-to-even would keep 1.0.
    assert_eq!(f32_to_half(1.0 + 2f32.powi(-11)), 0x3c01);
    assert_eq!(half::f16::from_f32(1.0 + 2f32.powi(-11)).to_bits(), 0x3c00);
    assert_eq!(f32_to_half(-(1.0 + 2f32.powi(-11))), 0xbc01);
    // Below the halfway point it rounds down.
    assert_eq!(f32_to_half(1.0 + 2f32.powi(-12)), 0x3c00);
    // Denormals: int(|x| * 2^24 + 0.5).
    assert_eq!(f32_to_half(2.5 * 2f32.powi(-24)), 3);
    assert_eq!(f32_to_half(2f32.powi(-26)), 0);
    // Overflow, infinity, a carry into infinity.
    assert_eq!(f32_to_half(1e6), 0x7c00);
    assert_eq!(f32_to_half(f32::NEG_INFINITY), 0xfc00);
    assert_eq!(f32_to_half(65520.0), 0x7c00);
    assert_eq!(f32_to_half(65504.0), 0x7bff);
    assert_eq!(f32_to_half(f32::NAN) & 0x7c00, 0x7c00);
}

/// The reference's conversion of results below the smallest normal half, as it writes it
/// (`PtexHalf::fromFloat_slow`: `int(|x| * 2^24 + 0.5)` in double).
fn denormal_half_in_double(x: f32) -> u16 {
    let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
    sign | (f64::from(x.abs()) * 16_777_216.0 + 0.5) as i32 as u16
}

#[test]
fn results_below_the_smallest_normal_half_round_as_the_reference_does_in_double() {
    // Every f32 whose exponent makes f32_to_half take its denormal branch (biased exponent
    // 1..=112, both signs), every 7th significand, and every significand near the rounding
    // points of the largest shifts.
    let mut checked = 0u64;
    for sign in [0u32, 0x8000_0000] {
        for exponent in 0..=112u32 {
            let significands = (0..1u32 << 23)
                .step_by(7)
                .chain((0..64).map(|k| (1 << 22) - 32 + k))
                .chain((1 << 23) - 64..1 << 23);
            for m in significands {
                let x = f32::from_bits(sign | exponent << 23 | m);
                if x == 0.0 {
                    continue;
                }
                assert_eq!(
                    f32_to_half(x),
                    denormal_half_in_double(x),
                    "{:#010x} ({x:e})",
                    x.to_bits()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 200_000_000, "{checked}");
}

#[test]
fn reductions_use_the_reference_arithmetic() {
    // u8: truncating integer halves.
    let src = [1u8, 2, 5, 8, 3, 3, 200, 255];
    assert_eq!(
        reduce(DataType::U8, Reduction::U, &src, 4, 2, 1),
        vec![1, 6, 3, 227]
    );
    assert_eq!(
        reduce(DataType::U8, Reduction::V, &src, 4, 2, 1),
        vec![2, 2, 102, 131]
    );
    // Triangle 2x2 -> 1x1: (s00 + s10 + s01 + s(W-1, W-1)) / 4.
    assert_eq!(
        reduce(
            DataType::U8,
            Reduction::Triangle,
            &[10, 20, 30, 41],
            2,
            2,
            1
        ),
        vec![25]
    );
    // Triangle 4x4 -> 2x2: output (i, j) adds the mirrored texel (3 - 2j, 3 - 2i).
    let tri: Vec<u8> = (0..16).map(|i| i * 4).collect();
    let at = |u: usize, v: usize| u32::from(tri[v * 4 + u]);
    let expected: Vec<u8> = [(0, 0), (1, 0), (0, 1), (1, 1)]
        .iter()
        .map(|&(i, j)| {
            ((at(2 * i, 2 * j)
                + at(2 * i + 1, 2 * j)
                + at(2 * i, 2 * j + 1)
                + at(3 - 2 * j, 3 - 2 * i))
                >> 2) as u8
        })
        .collect();
    let got = reduce(DataType::U8, Reduction::Triangle, &tri, 4, 4, 1);
    assert_eq!(
        got,
        vec![expected[0], expected[1], expected[2], expected[3]]
    );
    // u16, two channels, little-endian.
    let src: Vec<u8> = [1000u16, 7, 3001, 9]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let out = reduce(DataType::U16, Reduction::U, &src, 2, 1, 2);
    assert_eq!(
        out,
        [2000u16, 8]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>()
    );
    // half: 0.5 * (a + b) in f32, then the reference's rounding.
    let a = f32_to_half(1.0);
    let b = f32_to_half(1.0 + 2f32.powi(-9)); // 0x3c02
    let src: Vec<u8> = [a, b].iter().flat_map(|v| v.to_le_bytes()).collect();
    let out = reduce(DataType::Half, Reduction::U, &src, 2, 1, 1);
    assert_eq!(u16::from_le_bytes([out[0], out[1]]), 0x3c01);
    // f32.
    let src: Vec<u8> = [0.1f32, 0.7].iter().flat_map(|v| v.to_le_bytes()).collect();
    let out = reduce(DataType::F32, Reduction::V, &src, 1, 2, 1);
    assert_eq!(out, (0.5f32 * (0.1 + 0.7)).to_le_bytes());
}

#[test]
fn premultiplication_follows_multalpha() {
    // Alpha last: channels before it are multiplied (truncating).
    let mut t = vec![200u8, 100, 50, 128];
    premultiply(DataType::U8, &mut t, 4, 3);
    let a = (1.0f32 / 255.0) * 128.0;
    assert_eq!(
        t,
        vec![(200.0 * a) as u8, (100.0 * a) as u8, (50.0 * a) as u8, 128]
    );
    // Alpha first: every other channel.
    let mut t = vec![128u8, 200, 100];
    premultiply(DataType::U8, &mut t, 3, 0);
    assert_eq!(t, vec![128, (200.0 * a) as u8, (100.0 * a) as u8]);
    // Alpha in the middle: channels after it stay.
    let mut t = vec![200u8, 128, 100];
    premultiply(DataType::U8, &mut t, 3, 1);
    assert_eq!(t, vec![(200.0 * a) as u8, 128, 100]);
}

#[test]
fn to_f32_scales_by_the_f32_constants() {
    let mut out = [0f32; 2];
    to_f32(DataType::U8, &[255, 51], &mut out);
    assert_eq!(out, [255.0 * (1.0f32 / 255.0), 51.0 * (1.0f32 / 255.0)]);
    to_f32(DataType::U16, &[0xff, 0xff, 1, 0], &mut out);
    assert_eq!(out, [65535.0 * (1.0f32 / 65535.0), 1.0 / 65535.0]);
    to_f32(DataType::Half, &0x3800u16.to_le_bytes(), &mut out[..1]);
    assert_eq!(out[0], 0.5);
}

/// Inflation checks the stream's Adler-32 and its exact size.
#[test]
fn inflation_checks_checksum_and_size() {
    use crate::sources::ptex::input::inflate;
    use std::io::Write;
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&data).unwrap();
    let zip = z.finish().unwrap();
    assert_eq!(inflate(&zip, 1000, &"a block").unwrap(), data);
    let mut bad = zip.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert!(inflate(&bad, 1000, &"a block")
        .unwrap_err()
        .message
        .contains("not a valid zlib stream"));
    let e = inflate(&zip, 999, &"a block").unwrap_err();
    assert!(
        e.message
            .contains("does not end after the expected 999 bytes"),
        "{}",
        e.message
    );
    let e = inflate(&zip, 1001, &"a block").unwrap_err();
    assert!(
        e.message.contains("inflates to 1000 bytes, expected 1001"),
        "{}",
        e.message
    );
    let e = inflate(&zip[..zip.len() - 6], 1000, &"a block").unwrap_err();
    assert!(e.message.contains("a block"), "{}", e.message);
    assert!(
        inflate(&zip[2..], 1000, &"a block").is_err(),
        "raw deflate is not zlib"
    );
}

#[test]
fn rotations_between_neighbours() {
    // Shared edges facing each other (bottom to top): no rotation.
    assert_eq!(Adjacent { face: 0, edge: 2 }.rotation(0), 0);
    // Bottom to bottom: a half turn.
    assert_eq!(Adjacent { face: 0, edge: 0 }.rotation(0), 2);
    assert_eq!(Adjacent { face: 0, edge: 0 }.rotation(1), 3);
    assert_eq!(Adjacent { face: 0, edge: 3 }.rotation(0), 3);
    assert_eq!(Adjacent { face: 0, edge: 1 }.rotation(0), 1);
}

#[test]
fn face_data_copies_into_strided_buffers() {
    let fx = Fixture::load("quad_uint8_rgb");
    let f = &fx.file;
    let d = f.read_face(1, Res::new(6, 4)).unwrap();
    let row = 64 * 3;
    let mut buf = vec![0u8; (row + 5) * 16];
    d.copy_to(&mut buf, row + 5).unwrap();
    let packed = d.to_packed();
    for v in 0..16 {
        assert_eq!(
            &buf[v * (row + 5)..v * (row + 5) + row],
            &packed[v * row..(v + 1) * row]
        );
    }
    assert!(d.copy_to(&mut buf[..10], row).is_err());
    let c = f.read_face(3, Res::new(2, 1)).unwrap();
    assert!(c.is_constant());
    assert_eq!(c.to_packed(), f.constant(3).unwrap().repeat(8));
    assert_eq!(c.clone().into_packed(), c.to_packed());
}

/// One file read from many threads at once gives what one thread reads.
#[test]
fn concurrent_reads_agree() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PtexFile>();
    let fx = Fixture::load("quad_float_1ch");
    let f = std::sync::Arc::new(PtexFile::open(&fx.path).unwrap());
    let mut expected = Vec::new();
    for level in 0..2 {
        for tile in 0..f.block(8, level).unwrap().tiles.unwrap().tiles.len() {
            expected.push(((level, tile), f.read_tile(8, level, tile).unwrap()));
        }
    }
    let expected = std::sync::Arc::new(expected);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (f, expected) = (f.clone(), expected.clone());
            std::thread::spawn(move || {
                // A fresh file each round for half the threads: tile layouts read racing.
                for round in 0..20 {
                    let file = if t % 2 == 0 && round % 5 == 0 {
                        std::sync::Arc::new(PtexFile::open(f.name()).unwrap())
                    } else {
                        f.clone()
                    };
                    for k in 0..expected.len() {
                        let ((level, tile), data) = &expected[(k + t * 3 + round) % expected.len()];
                        assert_eq!(&file.read_tile(8, *level, *tile).unwrap(), data);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Half reductions in one direction (the runs of eight values without branches, and the
/// gathering of texel pairs in u) give, value by value, `f32_to_half(0.5 · (a + b))`: on
/// random bit patterns (NaN, infinity, denormals and normals mixed, so runs take both
/// paths), on texture-like values (runs take the fast path), every channel count and
/// widths that leave remainders.
#[test]
fn half_reductions_in_runs_equal_value_by_value() {
    let mut rng = crate::test_rng::xorshift32(0x5eed_0001);
    let halve = |a: u16, b: u16| f32_to_half(0.5 * (half_to_f32(a) + half_to_f32(b)));
    let value = |rng: &mut dyn FnMut() -> u32, nice: bool| -> u16 {
        if nice {
            f32_to_half((rng() >> 8) as f32 / (1u32 << 24) as f32)
        } else {
            rng() as u16
        }
    };
    for nice in [false, true] {
        for n in 1..=4 {
            for (ures, vres) in [(2, 2), (4, 8), (16, 2), (34, 6), (64, 64)] {
                let src: Vec<u16> = (0..ures * vres * n)
                    .map(|_| value(&mut rng, nice))
                    .collect();
                let bytes: Vec<u8> = src.iter().flat_map(|v| v.to_le_bytes()).collect();
                let at = |u: usize, v: usize, c: usize| src[(v * ures + u) * n + c];
                let got_u = reduce(DataType::Half, Reduction::U, &bytes, ures, vres, n);
                let got_v = reduce(DataType::Half, Reduction::V, &bytes, ures, vres, n);
                let value_of = |b: &[u8], i: usize| u16::from_le_bytes([b[2 * i], b[2 * i + 1]]);
                for v in 0..vres {
                    for u in 0..ures / 2 {
                        for c in 0..n {
                            let want = halve(at(2 * u, v, c), at(2 * u + 1, v, c));
                            let i = (v * (ures / 2) + u) * n + c;
                            assert_eq!(
                                value_of(&got_u, i),
                                want,
                                "u: {ures}×{vres}×{n} ({u}, {v}, {c})"
                            );
                        }
                    }
                }
                for v in 0..vres / 2 {
                    for u in 0..ures {
                        for c in 0..n {
                            let want = halve(at(u, 2 * v, c), at(u, 2 * v + 1, c));
                            let i = (v * ures + u) * n + c;
                            assert_eq!(
                                value_of(&got_v, i),
                                want,
                                "v: {ures}×{vres}×{n} ({u}, {v}, {c})"
                            );
                        }
                    }
                }
            }
        }
    }
}
