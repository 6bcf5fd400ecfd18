//! Rounding floats to integers without the library calls that `f32::floor` and `f32::ceil`
//! compile to on baseline x86-64 (no SSE4.1): the samplers round every lookup's
//! coordinates. Each is exact over the domain it states, and tested against the library's.

/// `floor(x)` as an integer, and `x − floor(x)`, for `|x| ≤ 2^40` (the tiled samplers
/// clamp coordinates to that first). Exact: truncating an `f32` gives an integer the `f32`
/// can hold.
#[inline(always)]
pub(crate) fn floor_split(x: f32) -> (i64, f32) {
    let t = x as i64;
    let i = t - ((t as f32) > x) as i64;
    (i, x - i as f32)
}

/// `x.floor()`, exactly, for every `f32` (the Ptex filters take coordinates as given):
/// below 2^23 in magnitude a float truncated toward zero is one too large for a negative
/// fraction; from 2^23 on (and for zeros, infinities and NaN) the value is its own floor.
#[inline]
pub(crate) fn floor(x: f32) -> f32 {
    // (NaN fails the comparison: it is returned as it is.)
    let fractional = x.abs() < 8_388_608.0;
    if x == 0.0 || !fractional {
        return x;
    }
    let t = x as i32 as f32;
    if t > x {
        t - 1.0
    } else {
        t
    }
}

/// `x.ceil()`, exactly, for every `f32` (see [`floor`]).
#[inline]
pub(crate) fn ceil(x: f32) -> f32 {
    -floor(-x)
}

/// `ceil(x)` as an integer, for `0 ≤ x < 2^32`.
#[inline(always)]
pub(crate) fn ceil_u32(x: f32) -> u32 {
    let t = x as u32;
    t + ((t as f32) < x) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_split_matches_f32_floor() {
        let xs = [
            0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.75, -2.75, 1e-30, -1e-30, 8388607.5, -8388608.5,
            1e12, -1e12,
        ];
        for x in xs {
            let (i, f) = floor_split(x);
            assert_eq!(i as f32, x.floor(), "{x}");
            assert_eq!(f, x - x.floor(), "{x}");
        }
    }

    #[test]
    fn floor_and_ceil_equal_the_library_ones_to_the_bit() {
        let special = [
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            -1.5,
            2.5,
            8_388_607.5,
            -8_388_607.5,
            8_388_608.0,
            -8_388_609.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        // Every 9,973rd bit pattern (both signs, every exponent) and the values above.
        let sampled = (0..=u32::MAX).step_by(9_973).map(f32::from_bits);
        for x in special.into_iter().chain(sampled) {
            let (f, c) = (floor(x), ceil(x));
            if x.is_nan() {
                assert!(f.is_nan() && c.is_nan());
            } else {
                assert_eq!(f.to_bits(), x.floor().to_bits(), "floor({x:e})");
                assert_eq!(c.to_bits(), x.ceil().to_bits(), "ceil({x:e})");
            }
        }
    }

    #[test]
    fn ceil_u32_matches_f32_ceil() {
        for x in [
            0.0f32,
            0.25,
            1.0,
            1.5,
            2.0,
            1000.999,
            65_535.5,
            4_000_000_000.0,
        ] {
            assert_eq!(ceil_u32(x) as f32, x.ceil(), "{x}");
        }
    }
}
