//! The decoding steps against libtiff's definitions: predictors, PackBits, byte orders,
//! and the colour conversions of palette and white-is-zero files.

use super::*;

#[test]
fn the_horizontal_predictor_is_undone_as_the_plain_definition_says() {
    // Every sample width, 1 to 5 samples a pixel, both byte orders: sample i of a
    // row becomes the wrapping sum of samples i, i - n, i - 2n, … (n a pixel).
    let mut next = crate::test_rng::xorshift32(0x2545_F491);
    for (bits, float) in [(8, false), (16, false), (16, true), (32, true)] {
        for samples in 1..=5u32 {
            for little in [true, false] {
                let s = SampleLayout {
                    lsb_first: false,
                    samples,
                    bits,
                    float,
                    separate: false,
                    compression: TiffCompression::None,
                    predictor: TiffPredictor::Horizontal,
                    little,
                    signed: false,
                    unassociated_alpha: false,
                    colour: StoredColour::AsStored,
                };
                let (sb, n, width, rows) = ((bits / 8) as usize, samples as usize, 37, 3);
                let stored: Vec<u64> = (0..width * n * rows)
                    .map(|_| u64::from(next()) & ((1u64 << bits) - 1))
                    .collect();
                let mut data: Vec<u8> = stored
                    .iter()
                    .flat_map(|&v| {
                        let b = &v.to_le_bytes()[..sb];
                        let mut b = b.to_vec();
                        if !little {
                            b.reverse();
                        }
                        b
                    })
                    .collect();
                unpredict(&s, &mut data, width, n);
                let modulus = 1u64 << bits;
                for (i, chunk) in data.chunks_exact(sb).enumerate() {
                    let (row, k) = (i / (width * n), i % (width * n));
                    let want = (0..=k / n)
                        .map(|j| stored[row * width * n + k % n + j * n])
                        .fold(0u64, |a, v| (a + v) % modulus);
                    let mut b = [0u8; 8];
                    b[..sb].copy_from_slice(chunk);
                    assert_eq!(
                        u64::from_le_bytes(b),
                        want,
                        "{bits}-bit, {samples} samples, little {little}, sample {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn packbits_runs_and_literals_decode_and_short_input_is_an_error() {
    // literal 3 bytes, run of 4 × 0xAA, no-op, literal 1.
    let input = [2, 1, 2, 3, 0xfd, 0xaa, 0x80, 0, 9];
    let mut out = [0u8; 8];
    let shape = |width| ChunkShape {
        width,
        height: 1,
        samples: 1,
        jpeg_tables: &[],
    };
    decompress(TiffCompression::PackBits, &input, shape(8), &mut out).unwrap();
    assert_eq!(out, [1, 2, 3, 0xaa, 0xaa, 0xaa, 0xaa, 9]);
    let mut out = [0u8; 9];
    assert!(decompress(TiffCompression::PackBits, &input, shape(9), &mut out).is_err());
    let mut out = [0u8; 4];
    for (c, input) in [
        (TiffCompression::None, &[1, 2][..]),
        (TiffCompression::Zip, &[1, 2, 3]),
        (TiffCompression::Lzw, &[0xff; 3]),
        (TiffCompression::Jpeg, &[0xff, 0xd8, 0]),
    ] {
        assert!(decompress(c, input, shape(4), &mut out).is_err(), "{c:?}");
    }
}

#[test]
fn horizontal_predictor_on_big_endian_16_bit_samples() {
    let s = SampleLayout {
        lsb_first: false,
        samples: 1,
        bits: 16,
        float: false,
        separate: false,
        compression: TiffCompression::None,
        predictor: TiffPredictor::Horizontal,
        little: false,
        signed: false,
        unassociated_alpha: false,
        colour: StoredColour::AsStored,
    };
    // Values 1000, 1010, 990 stored as differences 1000, 10, -20 big-endian.
    let mut data = Vec::new();
    for d in [1000u16, 10, 0u16.wrapping_sub(20)] {
        data.extend_from_slice(&d.to_be_bytes());
    }
    unpredict(&s, &mut data, 3, 1);
    let v: Vec<u16> = data
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(v, [1000, 1010, 990]);
}

/// A row of float samples (each given big-endian) encoded as libtiff's floating-point
/// predictor does: byte planes, most significant first, then differences between
/// bytes `samples` apart.
fn libtiff_float_predicted(be_values: &[Vec<u8>], samples: usize) -> Vec<u8> {
    let n = be_values.len();
    let size = be_values.first().map_or(0, Vec::len);
    let mut planes = vec![0u8; n * size];
    for (k, v) in be_values.iter().enumerate() {
        for (j, b) in v.iter().enumerate() {
            planes[j * n + k] = *b;
        }
    }
    for i in (samples..planes.len()).rev() {
        planes[i] = planes[i].wrapping_sub(planes[i - samples]);
    }
    planes
}

#[test]
fn floating_point_predictor_restores_float_samples() {
    let s = SampleLayout {
        lsb_first: false,
        samples: 1,
        bits: 32,
        float: true,
        separate: false,
        compression: TiffCompression::None,
        predictor: TiffPredictor::FloatingPoint,
        little: true,
        signed: false,
        unassociated_alpha: false,
        colour: StoredColour::AsStored,
    };
    let values = [0.5f32, -2.25, 1e-3];
    let mut planes = libtiff_float_predicted(&values.map(|v| v.to_be_bytes().to_vec()), 1);
    unpredict(&s, &mut planes, 3, 1);
    let got: Vec<f32> = planes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(got, values);
    // Half samples, two to a pixel: planes of 2 bytes, differences across the row.
    let s = SampleLayout {
        lsb_first: false,
        samples: 2,
        bits: 16,
        ..s
    };
    let values: Vec<f16> = [0.5f32, -2.25, 1e-3, 7.0, 65504.0, -0.0]
        .iter()
        .map(|&v| f16::from_f32(v))
        .collect();
    let be: Vec<Vec<u8>> = values.iter().map(|v| v.to_be_bytes().to_vec()).collect();
    let mut planes = libtiff_float_predicted(&be, 2);
    unpredict(&s, &mut planes, 3, 2);
    let got: Vec<f16> = planes
        .chunks_exact(2)
        .map(|b| f16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(got, values);
}

/// One unsigned little-endian sample a pixel of `bits`, uncompressed, meaning `colour`.
fn grey(bits: u32, colour: StoredColour) -> SampleLayout {
    SampleLayout {
        lsb_first: false,
        samples: 1,
        bits,
        float: false,
        separate: false,
        compression: TiffCompression::None,
        predictor: TiffPredictor::None,
        little: true,
        signed: false,
        unassociated_alpha: false,
        colour,
    }
}

#[test]
fn white_is_zero_is_inverted_and_palette_indices_are_looked_up() {
    let grey16 = grey(16, StoredColour::MinIsWhite);
    let rect = |w: usize| Rect {
        chunk_w: w,
        sx: 0,
        sy: 0,
        w,
        h: 1,
        dest_at: 0,
        row_bytes: 0,
    };
    // Little-endian 0, 0x1234, 0xffff: white, 0xedcb, black.
    let stored = [0u8, 0, 0x34, 0x12, 0xff, 0xff];
    let mut dest = [0u8; 6];
    copy(&grey16, &[], &[&stored], rect(3), &mut dest);
    assert_eq!(dest, [0xff, 0xff, 0xcb, 0xed, 0, 0]);
    // 8-bit indices into a palette: RGBA8, alpha 1.
    let palette8 = SampleLayout {
        bits: 8,
        colour: StoredColour::Palette,
        ..grey16
    };
    let mut palette = vec![[0u8; 3]; 256];
    palette[2] = [10, 20, 30];
    palette[255] = [1, 2, 3];
    let mut dest = [0u8; 8];
    copy(&palette8, &palette, &[&[255, 2]], rect(2), &mut dest);
    assert_eq!(dest, [1, 2, 3, 255, 10, 20, 30, 255]);
}

#[test]
fn samples_of_fewer_than_8_bits_unpack_to_a_byte_each() {
    let as_stored = StoredColour::AsStored;
    // 1-bit, rows of 10 samples padded to 2 bytes: 0 → 0, 1 → 255.
    let packed = [0b1011_0000, 0b0100_0000, 0b0000_0001, 0b1100_0000];
    let mut out = [0u8; 20];
    unpack(&grey(1, as_stored), &packed, 10, &mut out);
    let row0 = [255, 0, 255, 255, 0, 0, 0, 0, 0, 255];
    let row1 = [0, 0, 0, 0, 0, 0, 0, 255, 255, 255];
    assert_eq!(out[..10], row0);
    assert_eq!(out[10..], row1);
    // 2-bit: v · 85; 4-bit: v · 17 (OpenImageIO's v · 255 / max).
    let mut two = [0u8; 5];
    unpack(
        &grey(2, as_stored),
        &[0b00_01_10_11, 0b1100_0000],
        5,
        &mut two,
    );
    assert_eq!(two, [0, 85, 170, 255, 255]);
    let mut four = [0u8; 3];
    unpack(&grey(4, as_stored), &[0x0F, 0x70], 3, &mut four);
    assert_eq!(four, [0, 255, 7 * 17]);
    // Palette indices are not scaled.
    let mut idx = [0u8; 3];
    unpack(&grey(4, StoredColour::Palette), &[0x0F, 0x70], 3, &mut idx);
    assert_eq!(idx, [0, 15, 7]);
}
