//! From a normalised coordinate to the (at most two) texel indices a filter reads along one
//! axis, with their weights, after the address mode (wrap, clamp, mirror, border).
//!
//! Texel `i` of a level `n` texels wide has its centre at `(i + 0.5) / n`. Integer texel
//! coordinates are `i64` and coordinates are first clamped to ±2^40 texels, so huge
//! inputs (1e30, ±inf after scaling) can neither overflow nor panic; past 2^24 texels an
//! `f32` coordinate has no fractional part left anyway.

use super::rounding::floor_split;
use crate::textures::AddressMode;

/// Coordinates are clamped to ±this many texels before conversion to integers.
const MAX_TEXEL_COORD: f32 = (1u64 << 40) as f32;

/// The texels one axis of a filter reads, with their weights. A texel with weight 0 is not
/// read and touches no page: the second texel of point filtering, one exactly on a texel
/// centre, or one outside a border-mode texture (transparent black contributes nothing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Axis {
    /// Texel indices within `[0, size)` (0 where the weight is 0).
    pub index: [u32; 2],
    /// Weights: `1 − frac` and `frac`, or 0 for texels outside a border.
    pub weight: [f32; 2],
}

/// Map integer texel coordinate `i` into `[0, size)` by `mode`; `None` outside a border.
#[inline]
pub(crate) fn address(i: i64, size: u32, mode: AddressMode) -> Option<u32> {
    let n = size as i64;
    debug_assert!(n >= 1);
    if (0..n).contains(&i) {
        return Some(i as u32);
    }
    match mode {
        AddressMode::Wrap => Some(i.rem_euclid(n) as u32),
        AddressMode::Clamp => Some(i.clamp(0, n - 1) as u32),
        AddressMode::Mirror => {
            let m = i.rem_euclid(2 * n);
            Some(if m < n { m } else { 2 * n - 1 - m } as u32)
        }
        AddressMode::Border | AddressMode::FromFile => None, // FromFile: resolved at open
    }
}

/// Whether `mode` maps every texel coordinate to a texel ([`address`] never gives `None`):
/// a footprint under it always needs a page, never lies wholly outside the texture.
#[inline]
pub(crate) fn maps_every_coordinate(mode: AddressMode) -> bool {
    !matches!(mode, AddressMode::Border | AddressMode::FromFile)
}

/// Clamp a texel-space coordinate to a range where integer conversion is exact and
/// `+ 1` cannot overflow; NaN (never produced from finite inputs) becomes 0.
#[inline]
fn sanitise(x: f32) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(-MAX_TEXEL_COORD, MAX_TEXEL_COORD)
    }
}

/// How one axis of a level picks its texels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AxisFilter {
    /// The texel containing the coordinate.
    Point,
    /// The two texels around it, weighted by the fraction (bilinear).
    Linear,
    /// One of the two texels around it, `floor(coord · size − 0.5 + jitter)`: with
    /// `jitter` uniform in [0, 1) each is picked with its bilinear weight; 0.5 picks the
    /// texel containing the coordinate (stochastic filtering).
    Jitter(f32),
}

/// A caller's jitter as used: within [0, 1); NaN means 0.5 (the nearest texel).
#[inline]
pub(crate) fn sanitise_jitter(j: f32) -> f32 {
    if j.is_nan() {
        0.5
    } else {
        j.clamp(0.0, 1.0 - f32::EPSILON / 2.0)
    }
}

/// The texels and weights for normalised coordinate `coord` on an axis `size` texels long,
/// picked by `filter`.
#[inline(always)]
pub(crate) fn axis(coord: f32, size: u32, filter: AxisFilter, mode: AddressMode) -> Axis {
    let texel = |i: i64, weight: f32| match address(i, size, mode) {
        Some(i) => (i, weight),
        None => (0, 0.0),
    };
    if let AxisFilter::Jitter(j) = filter {
        let (i, w) = texel(floor_split(sanitise(coord * size as f32 - 0.5 + j)).0, 1.0);
        return Axis {
            index: [i, 0],
            weight: [w, 0.0],
        };
    }
    if filter == AxisFilter::Linear {
        let (i0, frac) = floor_split(sanitise(coord * size as f32 - 0.5));
        let (a, wa) = texel(i0, 1.0 - frac);
        let (b, wb) = texel(i0 + 1, frac);
        Axis {
            index: [a, b],
            weight: [wa, wb],
        }
    } else {
        let (i, w) = texel(floor_split(sanitise(coord * size as f32)).0, 1.0);
        Axis {
            index: [i, 0],
            weight: [w, 0.0],
        }
    }
}

/// One axis of a lookup that also gives the derivative of its value along the axis: the
/// texels to read (`reach`: weight 1 for every texel of the bilinear pair that lies in
/// the texture, even where its filter weight is 0, as on a texel centre), their filter
/// weights (`weights`: exactly [`axis`]'s), and the derivative of each weight with
/// respect to the normalised coordinate (`slopes`: `∓size` for the pair, 0 for a texel
/// outside a border or under point filtering, whose value is piecewise constant).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlopedAxis {
    /// The texels read, with weight 1 (0: outside a border, not read).
    pub reach: Axis,
    /// The filter weights, as [`axis`] gives them.
    pub weights: Axis,
    /// ∂weight/∂coord of each texel.
    pub slopes: [f32; 2],
}

/// [`axis`] with the slopes of its weights ([`SlopedAxis`]); jitter is not taken (a
/// derivative lookup filters with the texture's own filter).
#[inline(always)]
pub(crate) fn sloped_axis(coord: f32, size: u32, linear: bool, mode: AddressMode) -> SlopedAxis {
    if !linear {
        let weights = axis(coord, size, AxisFilter::Point, mode);
        return SlopedAxis {
            reach: weights,
            weights,
            slopes: [0.0; 2],
        };
    }
    let (i0, frac) = floor_split(sanitise(coord * size as f32 - 0.5));
    let (a, b) = (address(i0, size, mode), address(i0 + 1, size, mode));
    let index = [a.unwrap_or(0), b.unwrap_or(0)];
    let inside = [a.is_some(), b.is_some()];
    let pick = |i: usize, v: f32| if inside[i] { v } else { 0.0 };
    let n = size as f32;
    SlopedAxis {
        reach: Axis {
            index,
            weight: [pick(0, 1.0), pick(1, 1.0)],
        },
        weights: Axis {
            index,
            weight: [pick(0, 1.0 - frac), pick(1, frac)],
        },
        slopes: [pick(0, -n), pick(1, n)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AddressMode::*;

    #[test]
    fn maps_every_coordinate_agrees_with_address() {
        use AddressMode::*;
        for mode in [Wrap, Clamp, Mirror, Border, FromFile] {
            let all = (-9..9).all(|i| address(i, 4, mode).is_some());
            assert_eq!(maps_every_coordinate(mode), all, "{mode:?}");
        }
    }

    #[test]
    fn modes_map_outside_indices_like_cuda() {
        let n = 4;
        let wrap: Vec<_> = (-5..9).map(|i| address(i, n, Wrap).unwrap()).collect();
        assert_eq!(wrap, [3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]);
        let clamp: Vec<_> = (-2..6).map(|i| address(i, n, Clamp).unwrap()).collect();
        assert_eq!(clamp, [0, 0, 0, 1, 2, 3, 3, 3]);
        let mirror: Vec<_> = (-5..13).map(|i| address(i, n, Mirror).unwrap()).collect();
        assert_eq!(
            mirror,
            [3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3]
        );
        assert_eq!(address(-1, n, Border), None);
        assert_eq!(address(4, n, Border), None);
        assert_eq!(address(3, n, Border), Some(3));
        for mode in [Wrap, Clamp, Mirror] {
            assert_eq!(address(5, 1, mode), Some(0));
            assert_eq!(address(i64::MIN / 2, 1, mode), Some(0));
        }
    }

    #[test]
    fn bilinear_weights_follow_texel_centres() {
        // 4 texels: centres at 0.125, 0.375, ...
        let a = axis(0.125, 4, AxisFilter::Linear, Clamp);
        assert_eq!((a.index, a.weight), ([0, 1], [1.0, 0.0]));
        let a = axis(0.25, 4, AxisFilter::Linear, Clamp);
        assert_eq!((a.index, a.weight), ([0, 1], [0.5, 0.5]));
        // Across the wrap seam: between texel 3 and texel 0.
        let a = axis(0.0, 4, AxisFilter::Linear, Wrap);
        assert_eq!((a.index, a.weight), ([3, 0], [0.5, 0.5]));
        // Outside a border: weight 0.
        let a = axis(0.0, 4, AxisFilter::Linear, Border);
        assert_eq!((a.index, a.weight), ([0, 0], [0.0, 0.5]));
        assert_eq!(axis(-0.5, 4, AxisFilter::Point, Border).weight, [0.0, 0.0]);
        let p = axis(0.99, 4, AxisFilter::Point, Wrap);
        assert_eq!((p.index, p.weight), ([3, 0], [1.0, 0.0]));
        assert_eq!(axis(1.0, 4, AxisFilter::Point, Wrap).index[0], 0);
        assert_eq!(axis(1.0, 4, AxisFilter::Point, Clamp).index[0], 3);
    }

    #[test]
    fn huge_and_odd_coordinates_never_overflow() {
        for c in [
            1e30,
            -1e30,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ] {
            for mode in [Wrap, Clamp, Mirror, Border] {
                for filter in [
                    AxisFilter::Point,
                    AxisFilter::Linear,
                    AxisFilter::Jitter(0.0),
                    AxisFilter::Jitter(sanitise_jitter(1.0)),
                ] {
                    let a = axis(c, 65536, filter, mode);
                    assert!(a.weight.iter().all(|w| w.is_finite()), "{c} {mode:?}");
                    assert!(a.index.iter().all(|&i| i < 65536));
                }
            }
        }
    }

    #[test]
    fn jitter_picks_each_bilinear_texel_with_its_weight() {
        // 0.3 of the way from texel 1's centre to texel 2's on an 8-texel axis: bilinear
        // weights 0.7 and 0.3.
        let coord = (1.5 + 0.3) / 8.0;
        let pick = |j: f32| axis(coord, 8, AxisFilter::Jitter(sanitise_jitter(j)), Clamp);
        let n = 1000;
        let second = (0..n)
            .filter(|&k| pick((k as f32 + 0.5) / n as f32).index[0] == 2)
            .count();
        assert!((295..=305).contains(&second), "{second} of {n}");
        // 0.5 is the nearest texel (the one containing the point): point filtering.
        let p = axis(coord, 8, AxisFilter::Point, Clamp);
        assert_eq!(pick(0.5), p);
        assert_eq!(pick(f32::NAN), p);
        // Out-of-range jitters are clamped, never reach a third texel.
        assert_eq!(pick(-3.0).index[0], 1);
        assert_eq!(pick(7.0).index[0], 2);
        // A border texel outside reads nothing.
        let b = axis(0.2 / 8.0, 8, AxisFilter::Jitter(0.0), Border);
        assert_eq!(b.weight, [0.0, 0.0]);
    }

    #[test]
    fn sloped_axes_weigh_as_axis_and_reach_both_texels_in_range() {
        let mut next = crate::test_rng::xorshift32(7);
        for mode in [Wrap, Clamp, Mirror, Border] {
            for size in [1u32, 2, 5, 64] {
                for _ in 0..500 {
                    let c = (next() >> 8) as f32 / (1 << 24) as f32 * 3.0 - 1.0;
                    for linear in [false, true] {
                        let filter = if linear {
                            AxisFilter::Linear
                        } else {
                            AxisFilter::Point
                        };
                        let want = axis(c, size, filter, mode);
                        let got = sloped_axis(c, size, linear, mode);
                        assert_eq!(got.weights.weight, want.weight, "{c} {size} {mode:?}");
                        for i in 0..2 {
                            if want.weight[i] != 0.0 {
                                assert_eq!(got.weights.index[i], want.index[i]);
                                assert_eq!(got.reach.weight[i], 1.0);
                            }
                        }
                        if !linear {
                            assert_eq!(got.slopes, [0.0; 2]);
                        }
                    }
                }
            }
        }
        // On a texel centre the second texel has weight 0 but is reached, with its slope.
        let a = sloped_axis(0.125, 4, true, Clamp);
        assert_eq!(a.weights.weight, [1.0, 0.0]);
        assert_eq!((a.reach.index, a.reach.weight), ([0, 1], [1.0, 1.0]));
        assert_eq!(a.slopes, [-4.0, 4.0]);
        // Outside a border: neither reached nor sloped.
        let a = sloped_axis(0.0, 4, true, Border);
        assert_eq!((a.reach.weight, a.slopes), ([0.0, 1.0], [0.0, 4.0]));
    }
}
