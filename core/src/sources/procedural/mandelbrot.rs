//! The Mandelbrot set with smooth escape-count colouring, iterated several points at a time.

use super::{ramp, read_procedural};
use crate::sources::region::full_chain_info;
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TexelFormat, TileRegion};

/// Centre of the Mandelbrot view in the complex plane.
const MANDELBROT_CENTRE: (f64, f64) = (-0.75, 0.0);
/// Extent of the view across the texture's shorter side (the longer side sees more).
const MANDELBROT_EXTENT: f64 = 3.0;
/// Escape radius squared; a large radius makes the smooth iteration count accurate.
const MANDELBROT_BAILOUT_SQ: f64 = 256.0;
/// Colour of points that never escape.
const MANDELBROT_INSIDE: [f32; 4] = [0.0, 0.0, 0.02, 1.0];

/// The most iterations a [`Mandelbrot`] source accepts: a 64 KiB tile then costs at most
/// about 10⁹ iterations.
pub const MAX_MANDELBROT_ITERATIONS: u32 = 1 << 16;

/// The Mandelbrot set, centred on (-0.75, 0) with an extent of 3 across the shorter side
/// (so the whole set is visible at any aspect ratio), evaluated at each level's texel
/// centres with smooth (fractional escape count) colouring; the set itself is near black.
///
/// Each texel costs up to `max_iterations` iterations (points in the main cardioid and the
/// period-2 bulb are recognised as inside at once); 64 to 128 is a good range. Texels are
/// iterated eight at a time, side by side. A `max_iterations` of 0 is treated as 1; more
/// than [`MAX_MANDELBROT_ITERATIONS`] is refused by `open`, so a fill's work stays bounded
/// (a C caller's `param` of 4·10⁹ would make one tile take hours: found by fuzzing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mandelbrot {
    width: u32,
    height: u32,
    max_iterations: u32,
    format: TexelFormat,
}

impl Mandelbrot {
    /// A `width × height` view of the Mandelbrot set. Never fails; an unsupported size or
    /// format is reported by [`ImageSource::open`].
    pub fn new(width: u32, height: u32, max_iterations: u32, format: TexelFormat) -> Mandelbrot {
        Mandelbrot {
            width,
            height,
            max_iterations: max_iterations.max(1),
            format,
        }
    }

    /// Extent of the view in the complex plane, across and down (from the level-0 aspect,
    /// so every level shows the same view).
    fn view_extent(&self) -> (f64, f64) {
        let (w, h) = (self.width.max(1) as f64, self.height.max(1) as f64);
        if w >= h {
            (MANDELBROT_EXTENT * w / h, MANDELBROT_EXTENT)
        } else {
            (MANDELBROT_EXTENT, MANDELBROT_EXTENT * h / w)
        }
    }

    /// Colours of the points `(cr[l], ci)`, iterated side by side and without branches so
    /// that independent points fill the SIMD lanes and the pipeline (one point alone is a
    /// long dependency chain). Each point gets exactly what iterating it alone would give:
    /// it escapes at the first `n` with `|z_n|² > bailout` and is then frozen.
    #[inline]
    fn shade_lanes(&self, cr: [f64; LANES], ci: f64) -> [[f32; 4]; LANES] {
        // Main cardioid and period-2 bulb: known to be inside, so never worth waiting for.
        let known_inside = cr.map(|cr| {
            let xq = cr - 0.25;
            let q = xq * xq + ci * ci;
            q * (q + xq) <= 0.25 * ci * ci || (cr + 1.0) * (cr + 1.0) + ci * ci <= 0.0625
        });
        let (mut zr, mut zi) = ([0.0f64; LANES], [0.0f64; LANES]);
        // Iterations before escaping (= iterations done while still bounded).
        let mut bounded_for = [0.0f64; LANES];
        let mut n = 0;
        while n < self.max_iterations {
            let block = (self.max_iterations - n).min(8);
            for _ in 0..block {
                for l in 0..LANES {
                    let (zr2, zi2) = (zr[l] * zr[l], zi[l] * zi[l]);
                    let bounded = zr2 + zi2 <= MANDELBROT_BAILOUT_SQ;
                    let (next_r, next_i) = (zr2 - zi2 + cr[l], 2.0 * zr[l] * zi[l] + ci);
                    zr[l] = if bounded { next_r } else { zr[l] };
                    zi[l] = if bounded { next_i } else { zi[l] };
                    bounded_for[l] += if bounded { 1.0 } else { 0.0 };
                }
            }
            n += block;
            if (0..LANES).all(|l| known_inside[l] || bounded_for[l] < n as f64) {
                break;
            }
        }
        let mut out = [MANDELBROT_INSIDE; LANES];
        for l in 0..LANES {
            // Fractional escape count: n + 1 - log2(ln |z|), and
            // log2(ln |z|) = log2(log2(|z|²)) + log2(ln 2 / 2).
            // (Escaped lanes have m > 256; the floor keeps the others' discarded maths tame.)
            let m = (zr[l] * zr[l] + zi[l] * zi[l]).max(2.0);
            let mu = bounded_for[l] + 1.0 - (log2_approx(log2_approx(m)) + LOG2_HALF_LN_2);
            let escaped = !known_inside[l] && bounded_for[l] < n as f64;
            out[l] = if escaped {
                mandelbrot_palette(mu.max(0.0) as f32)
            } else {
                out[l]
            };
        }
        out
    }
}

/// Points a Mandelbrot run iterates side by side.
const LANES: usize = 8;

/// log2(ln 2 / 2).
const LOG2_HALF_LN_2: f64 = -1.528_766_372_944_897_7;

/// log2 of a positive, finite, normal `x` to about 1e-9, without a libm call: the exponent
/// plus ln(m) / ln 2 of the mantissa m in [√½, √2) from the atanh series.
#[inline]
fn log2_approx(x: f64) -> f64 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let high = m > std::f64::consts::SQRT_2;
    let (m, exponent) = (if high { 0.5 * m } else { m }, exponent + high as i32);
    let s = (m - 1.0) / (m + 1.0); // |s| < 0.172
    let s2 = s * s;
    let ln_m = 2.0
        * s
        * (1.0
            + s2 * (1.0 / 3.0
                + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 + s2 / 11.0)))));
    exponent as f64 + ln_m * std::f64::consts::LOG2_E
}

/// The cyclic Mandelbrot palette: (position, RGB), deep blue, sky, white, gold, black and
/// back to deep blue.
const MANDELBROT_RAMP: [(f32, [f32; 3]); 6] = [
    (0.0, [0.00, 0.03, 0.39]),
    (0.16, [0.13, 0.42, 0.80]),
    (0.42, [0.93, 1.00, 1.00]),
    (0.64, [1.00, 0.67, 0.00]),
    (0.86, [0.00, 0.01, 0.00]),
    (1.0, [0.00, 0.03, 0.39]),
];

/// The palette over the smooth escape count `mu` (>= 0): a cycle per few iterations near
/// the set, slowing down further out.
#[inline]
fn mandelbrot_palette(mu: f32) -> [f32; 4] {
    let t = 0.45 * mu.sqrt();
    let f = t - (t as i32) as f32;
    ramp(&MANDELBROT_RAMP, f)
}

impl ImageSource for Mandelbrot {
    fn name(&self) -> String {
        format!(
            "mandelbrot {}×{} {} ({} iterations)",
            self.width, self.height, self.format, self.max_iterations
        )
    }

    fn open(&self) -> Result<ImageInfo, SourceError> {
        if self.max_iterations > MAX_MANDELBROT_ITERATIONS {
            return Err(SourceError(format!(
                "mandelbrot: {} iterations (at most {MAX_MANDELBROT_ITERATIONS}: each texel costs up to that many)",
                self.max_iterations
            )));
        }
        full_chain_info(self.width, self.height, self.format)
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let (ex, ey) = self.view_extent();
        let left = MANDELBROT_CENTRE.0 - 0.5 * ex;
        let top = MANDELBROT_CENTRE.1 + 0.5 * ey;
        read_procedural(
            self.open(),
            region,
            dest,
            row_bytes,
            |lw, lh, y, x0, out| {
                let dx = ex / lw as f64;
                let ci = top - (y as f64 + 0.5) * (ey / lh as f64);
                let mut x = x0;
                for texels in out.chunks_mut(LANES) {
                    // A short last chunk repeats its last point in the unused lanes.
                    let last = texels.len() as u32 - 1;
                    let cr = std::array::from_fn(|l| {
                        left + ((x + (l as u32).min(last)) as f64 + 0.5) * dx
                    });
                    let shaded = self.shade_lanes(cr, ci);
                    texels.copy_from_slice(&shaded[..texels.len()]);
                    x += texels.len() as u32;
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::procedural::tests::{dist, read_level};

    #[test]
    fn mandelbrot_shows_the_set_and_its_outside() {
        let m = Mandelbrot::new(256, 256, 128, TexelFormat::RGBA32F);
        let (w, h, t) = read_level(&m, 0);
        let at = |x: u32, y: u32| t[(y * w + x) as usize];
        // The view spans [-2.25, 0.75] × [-1.5, 1.5]: c = 0 (centre-right) is inside,
        // c = -2.25 + 1.5i (top-left corner) is far outside.
        let x0 = ((0.0 + 2.25) / 3.0 * w as f64) as u32;
        assert_eq!(at(x0, h / 2), MANDELBROT_INSIDE);
        assert_ne!(at(0, 0), MANDELBROT_INSIDE);
        // Symmetric about the real axis (but for rounding at a few chaotic boundary points).
        let mut asymmetric = 0;
        for y in 0..h / 2 {
            for x in 0..w {
                asymmetric += (dist(at(x, y), at(x, h - 1 - y)) > 1e-3) as usize;
            }
        }
        assert!(asymmetric < t.len() / 200, "{asymmetric} asymmetric texels");
        // Both inside and outside are well represented, and the outside is not one colour.
        let inside = t.iter().filter(|c| **c == MANDELBROT_INSIDE).count();
        assert!(inside > t.len() / 10 && inside < t.len() / 2, "{inside}");
        let first_outside = at(0, 0);
        assert!(t
            .iter()
            .any(|c| *c != MANDELBROT_INSIDE && dist(*c, first_outside) > 0.3));
        // The 1×1 level is the centre texel of the view, (-0.75, 0): inside the set.
        let (_, _, t8) = read_level(&m, 8);
        assert_eq!(t8[0], MANDELBROT_INSIDE);
        // The wide view keeps the aspect: a 512×256 image sees 6 × 3.
        assert_eq!(
            Mandelbrot::new(512, 256, 8, TexelFormat::RGBA8).view_extent(),
            (6.0, 3.0)
        );
        assert_eq!(
            Mandelbrot::new(256, 512, 8, TexelFormat::RGBA8).view_extent(),
            (3.0, 6.0)
        );
    }

    /// The Mandelbrot colour of one point, iterated alone the plain way.
    fn mandelbrot_reference(m: &Mandelbrot, cr: f64, ci: f64) -> [f32; 4] {
        let xq = cr - 0.25;
        let q = xq * xq + ci * ci;
        if q * (q + xq) <= 0.25 * ci * ci || (cr + 1.0) * (cr + 1.0) + ci * ci <= 0.0625 {
            return MANDELBROT_INSIDE;
        }
        let (mut zr, mut zi) = (0.0f64, 0.0f64);
        for n in 0..m.max_iterations {
            let (zr2, zi2) = (zr * zr, zi * zi);
            if zr2 + zi2 > MANDELBROT_BAILOUT_SQ {
                let mu = n as f64 + 1.0 - (log2_approx(log2_approx(zr2 + zi2)) + LOG2_HALF_LN_2);
                return mandelbrot_palette(mu.max(0.0) as f32);
            }
            zi = 2.0 * zr * zi + ci;
            zr = zr2 - zi2 + cr;
        }
        MANDELBROT_INSIDE
    }

    #[test]
    fn absurd_iteration_counts_are_refused_at_open() {
        assert!(
            Mandelbrot::new(8, 8, MAX_MANDELBROT_ITERATIONS, TexelFormat::RGBA8)
                .open()
                .is_ok()
        );
        let e = Mandelbrot::new(8, 8, u32::MAX, TexelFormat::RGBA8)
            .open()
            .unwrap_err();
        assert!(e.0.contains("at most 65536"), "{e:?}");
    }

    #[test]
    fn mandelbrot_lanes_match_one_point_at_a_time() {
        for iterations in [1, 7, 8, 9, 64] {
            let m = Mandelbrot::new(203, 101, iterations, TexelFormat::RGBA32F);
            let (w, h, t) = read_level(&m, 0);
            let (ex, ey) = m.view_extent();
            for y in 0..h {
                let ci = 0.5 * ey - (y as f64 + 0.5) * (ey / h as f64);
                for x in 0..w {
                    let cr = -0.75 - 0.5 * ex + (x as f64 + 0.5) * (ex / w as f64);
                    let want = mandelbrot_reference(&m, cr, ci);
                    assert_eq!(t[(y * w + x) as usize], want, "{iterations} ({x}, {y})");
                }
            }
        }
    }

    #[test]
    fn approximations_are_accurate() {
        for x in [1.0f64, 1.5, 2.0, 3.0, 256.0, 257.3, 1e6, 1e300, 65537.0] {
            assert!((log2_approx(x) - x.log2()).abs() < 1e-9, "{x}");
        }
        for i in 0..10_000 {
            let x = 1.0 + i as f64 * 0.37;
            assert!((log2_approx(x) - x.log2()).abs() < 1e-9, "{x}");
        }
        assert!((LOG2_HALF_LN_2 - (std::f64::consts::LN_2 / 2.0).log2()).abs() < 1e-12);
    }
}
