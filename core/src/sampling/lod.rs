//! Level of detail and anisotropy: from screen-space gradients of (s, t) to a level of
//! detail, a probe count and the axis the probes are spread along; and from a level of
//! detail to the one or two mip levels read.

use super::rounding::ceil_u32;
use crate::textures::MipFilter;

/// The footprint of one lookup: a level of detail and `probes` isotropic samples spread
/// evenly along `axis` (normalised UV; zero for one probe) around the lookup point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Footprint {
    /// Level of detail, unclamped (may be negative or huge; never NaN).
    pub lod: f32,
    /// Number of probes, `1..=max_anisotropy`.
    pub probes: u32,
    /// The major axis of the footprint in UV: probe `i` sits at
    /// `((i + 0.5) / probes − 0.5) × axis` from the lookup point.
    pub axis: [f32; 2],
}

impl Footprint {
    /// One probe at an explicit level of detail.
    #[inline]
    pub fn isotropic(lod: f32) -> Footprint {
        Footprint {
            lod,
            probes: 1,
            axis: [0.0, 0.0],
        }
    }

    /// The footprint of gradients `ddx`, `ddy` (normalised UV per pixel, finite) on a
    /// texture whose level 0 is `width × height`, honouring up to `max_anisotropy` probes.
    ///
    /// In level-0 texels `dx = (ddx.s · width, ddx.t · height)`, likewise `dy`. Isotropic:
    /// `lod = log2(max(|dx|, |dy|))`. Anisotropic: with `major` and `minor` the longer and
    /// shorter of `|dx|`, `|dy|`, `n = min(ceil(major / minor), max_anisotropy)` probes
    /// along the major gradient and `lod = log2(max(major / n, minor))`.
    #[inline]
    pub fn from_gradients(
        ddx: [f32; 2],
        ddy: [f32; 2],
        width: u32,
        height: u32,
        max_anisotropy: u32,
    ) -> Footprint {
        let (w, h) = (width as f32, height as f32);
        // Not `hypot` (a libm call): overflow to infinity is harmless here.
        let len = |g: [f32; 2]| ((g[0] * w) * (g[0] * w) + (g[1] * h) * (g[1] * h)).sqrt();
        let (len_x, len_y) = (len(ddx), len(ddy));
        if max_anisotropy <= 1 {
            return Footprint::isotropic(len_x.max(len_y).log2());
        }
        let (major, minor, axis) = if len_x >= len_y {
            (len_x, len_y, ddx)
        } else {
            (len_y, len_x, ddy)
        };
        if major == 0.0 {
            return Footprint::isotropic(f32::NEG_INFINITY);
        }
        let ratio = major / minor;
        // NaN (inf / inf) or past the limit: the limit.
        let probes = if ratio < max_anisotropy as f32 {
            ceil_u32(ratio).max(1)
        } else {
            max_anisotropy
        };
        let lod = (major / probes as f32).max(minor).log2();
        Footprint {
            lod,
            probes,
            axis: if probes > 1 { axis } else { [0.0, 0.0] },
        }
    }

    /// Offset of probe `i` from the lookup point, in UV.
    #[inline]
    pub fn probe_offset(&self, i: u32) -> [f32; 2] {
        let f = (i as f32 + 0.5) / self.probes as f32 - 0.5;
        [f * self.axis[0], f * self.axis[1]]
    }
}

/// The mip levels a lookup reads: `fine` with weight `1 − coarse_weight`, and `fine + 1`
/// with `coarse_weight` when that is non-zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MipLevels {
    /// The finest level read.
    pub fine: u32,
    /// Weight of level `fine + 1` (0: not read).
    pub coarse_weight: f32,
}

/// Levels for `lod` clamped to `[0, num_levels − 1]` (negative lod, i.e. magnification,
/// reads level 0): linear mip filtering blends `floor(lod)` and the next level by the
/// fraction; point mip filtering reads the nearest level.
#[inline]
pub(crate) fn mip_levels(lod: f32, num_levels: u32, filter: MipFilter) -> MipLevels {
    let last = num_levels.saturating_sub(1) as f32;
    // `>=` is false for NaN, which therefore reads level 0.
    let lod = if lod >= 0.0 { lod.min(last) } else { 0.0 };
    // lod ≥ 0 here, so truncation is floor (and no libm call).
    let fine = lod as u32;
    let frac = lod - fine as f32;
    match filter {
        MipFilter::Point => MipLevels {
            fine: fine + (frac >= 0.5) as u32,
            coarse_weight: 0.0,
        },
        MipFilter::Linear => MipLevels {
            fine,
            coarse_weight: frac,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isotropic_lod_is_log2_of_the_longer_gradient_in_texels() {
        let f = Footprint::from_gradients([4.0 / 256.0, 0.0], [0.0, 1.0 / 64.0], 256, 64, 1);
        assert_eq!(f, Footprint::isotropic(2.0));
        let f = Footprint::from_gradients([0.0, 0.0], [0.0, 0.0], 256, 64, 1);
        assert_eq!(f.lod, f32::NEG_INFINITY);
        // Diagonal: |(3, 4)| = 5 texels.
        let f = Footprint::from_gradients([3.0 / 100.0, 4.0 / 100.0], [0.0, 0.0], 100, 100, 1);
        assert!((f.lod - 5f32.log2()).abs() < 1e-6);
    }

    #[test]
    fn anisotropic_footprints_spread_probes_along_the_major_axis() {
        // 8 texels along s, 1 along t.
        let ddx = [8.0 / 512.0, 0.0];
        let ddy = [0.0, 1.0 / 512.0];
        let f = Footprint::from_gradients(ddx, ddy, 512, 512, 16);
        assert_eq!((f.probes, f.lod, f.axis), (8, 0.0, ddx));
        assert_eq!(f.probe_offset(0), [-7.0 / 16.0 * ddx[0], 0.0]);
        assert_eq!(f.probe_offset(7), [7.0 / 16.0 * ddx[0], 0.0]);
        // Limited to 4 probes: each covers 2 texels, lod 1.
        let f = Footprint::from_gradients(ddx, ddy, 512, 512, 4);
        assert_eq!((f.probes, f.lod), (4, 1.0));
        // Major along ddy this time, ratio 2.5 → 3 probes; lod = log2(max(10/3, 4)) = 2.
        let f = Footprint::from_gradients([4.0 / 512.0, 0.0], [0.0, 10.0 / 512.0], 512, 512, 16);
        assert_eq!((f.probes, f.axis, f.lod), (3, [0.0, 10.0 / 512.0], 2.0));
        // Isotropic footprints take one probe.
        let f = Footprint::from_gradients([2.0 / 512.0, 0.0], [0.0, 2.0 / 512.0], 512, 512, 16);
        assert_eq!(f, Footprint::isotropic(1.0));
    }

    #[test]
    fn degenerate_gradients_give_finite_probe_counts() {
        let f = Footprint::from_gradients([0.0, 0.0], [0.0, 0.0], 512, 512, 8);
        assert_eq!(f.probes, 1);
        // A line: minor 0 → the most probes allowed.
        let f = Footprint::from_gradients([0.5, 0.0], [0.0, 0.0], 512, 512, 8);
        assert_eq!((f.probes, f.lod), (8, 5.0));
        // Overflow to infinity in texel units.
        let f = Footprint::from_gradients([3e38, 3e38], [3e38, -3e38], 65536, 65536, 16);
        assert_eq!(f.probes, 16);
        assert_eq!(f.lod, f32::INFINITY);
        assert!(f.probe_offset(0).iter().all(|v| v.is_finite()));
    }

    #[test]
    fn lod_selects_levels_by_mip_filter() {
        use MipFilter::*;
        let l = |lod, f| mip_levels(lod, 5, f);
        assert_eq!(
            l(-3.0, Linear),
            MipLevels {
                fine: 0,
                coarse_weight: 0.0
            }
        );
        assert_eq!(
            l(f32::NEG_INFINITY, Linear),
            MipLevels {
                fine: 0,
                coarse_weight: 0.0
            }
        );
        assert_eq!(
            l(f32::NAN, Linear),
            MipLevels {
                fine: 0,
                coarse_weight: 0.0
            }
        );
        assert_eq!(
            l(1.25, Linear),
            MipLevels {
                fine: 1,
                coarse_weight: 0.25
            }
        );
        assert_eq!(
            l(4.0, Linear),
            MipLevels {
                fine: 4,
                coarse_weight: 0.0
            }
        );
        assert_eq!(
            l(1e30, Linear),
            MipLevels {
                fine: 4,
                coarse_weight: 0.0
            }
        );
        assert_eq!(
            l(f32::INFINITY, Point),
            MipLevels {
                fine: 4,
                coarse_weight: 0.0
            }
        );
        assert_eq!(l(1.4, Point).fine, 1);
        assert_eq!(l(1.6, Point).fine, 2);
        assert_eq!(
            mip_levels(3.0, 1, Linear),
            MipLevels {
                fine: 0,
                coarse_weight: 0.0
            }
        );
    }
}
