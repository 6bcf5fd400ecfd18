//! Smooth, periodic gradient-noise fBm mapped to a landscape colour ramp.

use super::{ramp, read_procedural, RUN};
use crate::sources::region::full_chain_info;
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TexelFormat, TileRegion};

/// Lattice cells per UV unit of the coarsest octave (along the texture's shorter side).
const NOISE_BASE_CELLS: u64 = 4;
/// Octaves at most (the band limit usually stops sooner).
const NOISE_MAX_OCTAVES: u32 = 16;
/// Amplitude ratio of successive octaves.
const NOISE_GAIN: f32 = 0.5;
/// Scale from the fBm sum to the colour ramp's parameter around 0.5.
const NOISE_CONTRAST: f32 = 0.75;

/// Colour ramp stops for noise: (position, RGB), positions increasing from 0 to 1.
const NOISE_RAMP: [(f32, [f32; 3]); 6] = [
    (0.00, [0.02, 0.06, 0.25]),
    (0.38, [0.05, 0.40, 0.62]),
    (0.50, [0.86, 0.80, 0.56]),
    (0.62, [0.25, 0.55, 0.18]),
    (0.80, [0.42, 0.32, 0.22]),
    (1.00, [0.96, 0.96, 0.98]),
];

/// Unit gradients of the noise lattice.
const GRADIENTS: [[f32; 2]; 8] = {
    const S: f32 = std::f32::consts::FRAC_1_SQRT_2;
    [
        [1.0, 0.0],
        [-1.0, 0.0],
        [0.0, 1.0],
        [0.0, -1.0],
        [S, S],
        [-S, S],
        [S, -S],
        [-S, -S],
    ]
};

/// Smooth, periodic gradient-noise fBm mapped to a colour ramp (deep water, shallows, sand,
/// grass, rock, snow).
///
/// The noise is a function of UV evaluated at each level's texel centres; every octave's
/// lattice has a whole number of cells per UV unit, so the texture tiles without a seam.
/// The coarsest octave has 4 cells along the shorter side (more, by a power of two, along
/// the longer side, so cells are roughly square in texels); each octave doubles that. At
/// each level only the octaves whose cells are at least 2 texels wide and tall are summed,
/// so a level never holds detail it cannot represent and coarse levels fade to the mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Noise {
    width: u32,
    height: u32,
    seed: u32,
    format: TexelFormat,
    /// Cells per UV unit of the coarsest octave, across and down.
    base_cells: [u64; 2],
}

impl Noise {
    /// A `width × height` noise texture; different seeds give unrelated patterns. Never
    /// fails; an unsupported size or format is reported by [`ImageSource::open`].
    pub fn new(width: u32, height: u32, seed: u32, format: TexelFormat) -> Noise {
        let (w, h) = (width.max(1) as u64, height.max(1) as u64);
        // Round the aspect ratio to a power of two (at most 2^16).
        let ratio_log2 =
            |long: u64, short: u64| ((long as f64 / short as f64).log2().round() as u32).min(16);
        let base_cells = if w >= h {
            [NOISE_BASE_CELLS << ratio_log2(w, h), NOISE_BASE_CELLS]
        } else {
            [NOISE_BASE_CELLS, NOISE_BASE_CELLS << ratio_log2(h, w)]
        };
        Noise {
            width,
            height,
            seed,
            format,
            base_cells,
        }
    }

    /// Octaves summed at a `lw × lh` level: those with cells of at least 2 texels.
    fn octaves(&self, lw: u32, lh: u32) -> u32 {
        let mut k = 0;
        while k < NOISE_MAX_OCTAVES
            && 2 * (self.base_cells[0] << k) <= lw as u64
            && 2 * (self.base_cells[1] << k) <= lh as u64
        {
            k += 1;
        }
        k
    }

    /// Add the fBm sum of texels `x0 .. x0 + acc.len()` of row `y` of a `lw × lh` level
    /// to `acc`.
    ///
    /// Positions are kept as exact integers: texel `x`'s centre, in cells, is
    /// `(2x + 1) · cells / (2 · lw)`, so each texel's value depends only on `x` and `y`,
    /// never on where the run starts. Texels are visited a cell at a time, so the inner
    /// loop has the cell's gradients fixed and vectorises.
    fn fbm_run(&self, lw: u32, lh: u32, y: u32, x0: u32, acc: &mut [f32]) {
        let n = acc.len();
        let mut amplitude = 1.0f32;
        for k in 0..self.octaves(lw, lh) {
            let salt = hash3(self.seed, k, 0x6a09_e667);
            let cells_x = self.base_cells[0] << k;
            let cells_y = self.base_cells[1] << k;

            let den_y = 2 * lh as u64;
            let num_y = (2 * y as u64 + 1) * cells_y;
            let iy0 = (num_y / den_y) as u32;
            let ty = (num_y % den_y) as f32 / den_y as f32;
            let iy1 = if iy0 as u64 + 1 == cells_y {
                0
            } else {
                iy0 + 1
            };
            let sy = fade(ty);
            // Along a lattice column the noise at this row is `a · tx + b` (gradient noise is
            // linear in x there); blend top and bottom corners by the fade in y.
            let column = |cx: u32| {
                let top = GRADIENTS[(hash3(cx, iy0, salt) & 7) as usize];
                let bottom = GRADIENTS[(hash3(cx, iy1, salt) & 7) as usize];
                let (b_top, b_bottom) = (top[1] * ty, bottom[1] * (ty - 1.0));
                [
                    amplitude * (top[0] + (bottom[0] - top[0]) * sy),
                    amplitude * (b_top + (b_bottom - b_top) * sy),
                ]
            };
            let next = |cx: u32| if cx as u64 + 1 == cells_x { 0 } else { cx + 1 };

            // All below 2^18: den = 2·lw, step = 2·cells <= lw (cells are >= 2 texels).
            let den = 2 * lw as i32;
            let step = 2 * cells_x as i32;
            let inv_den = 1.0 / den as f32;
            // A cell holds `per_cell` or `per_cell + 1` texels; the first texel's
            // remainder `r` within its cell says which.
            let (per_cell, extra) = ((den / step) as usize, den % step);
            let num = (2 * x0 as u64 + 1) * cells_x;
            let mut cx = (num / den as u64) as u32;
            let mut r = (num % den as u64) as i32;
            let mut count = (den - r + step - 1) as usize / step as usize;
            let mut left = column(cx);
            let mut i = 0;
            while i < n {
                let right = column(next(cx));
                let [al, bl] = left;
                let [ar, br] = right;
                let end = (i + count).min(n);
                for (j, a) in acc[i..end].iter_mut().enumerate() {
                    let tx = (r + j as i32 * step) as f32 * inv_den;
                    let l = al * tx + bl;
                    let rr = ar * (tx - 1.0) + br;
                    *a += l + (rr - l) * fade(tx);
                }
                // The first texel of the next cell: its remainder is in [0, step).
                r = r + count as i32 * step - den;
                count = per_cell + (r < extra) as usize;
                i = end;
                cx = next(cx);
                left = right;
            }
            amplitude *= NOISE_GAIN;
        }
    }
}

/// Quintic fade: 0 and 1 at the ends with zero first and second derivatives.
#[inline]
fn fade(t: f32) -> f32 {
    t * t * t * (t * (t * 6.0 - 15.0) + 10.0)
}

/// A well-mixed 32-bit hash of three integers.
#[inline]
fn hash3(a: u32, b: u32, c: u32) -> u32 {
    let mut h =
        a.wrapping_mul(0x8da6_b343) ^ b.wrapping_mul(0xd816_3841) ^ c.wrapping_mul(0xcb1a_b31f);
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^ (h >> 16)
}

impl ImageSource for Noise {
    fn name(&self) -> String {
        format!(
            "noise {}×{} {} (seed {})",
            self.width, self.height, self.format, self.seed
        )
    }

    fn open(&self) -> Result<ImageInfo, SourceError> {
        full_chain_info(self.width, self.height, self.format)
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        read_procedural(
            self.open(),
            region,
            dest,
            row_bytes,
            |lw, lh, y, x0, out| {
                let mut acc = [0.0f32; RUN];
                let acc = &mut acc[..out.len()];
                self.fbm_run(lw, lh, y, x0, acc);
                for (texel, &v) in out.iter_mut().zip(acc.iter()) {
                    *texel = ramp(&NOISE_RAMP, 0.5 + NOISE_CONTRAST * v);
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::procedural::tests::{dist, read_level};

    /// Steps between neighbours of a `lw × lh` field: (max inside, mean inside, max across
    /// the wrap seams, mean across the wrap seams).
    fn steps<T: Copy>(lw: u32, lh: u32, t: &[T], d: impl Fn(T, T) -> f32) -> [f32; 4] {
        let at = |x: u32, y: u32| t[(y * lw + x) as usize];
        let (mut inner, mut seam) = (Vec::new(), Vec::new());
        for y in 0..lh {
            for x in 0..lw {
                let right = d(at(x, y), at((x + 1) % lw, y));
                let down = d(at(x, y), at(x, (y + 1) % lh));
                if x + 1 == lw {
                    seam.push(right)
                } else {
                    inner.push(right)
                }
                if y + 1 == lh {
                    seam.push(down)
                } else {
                    inner.push(down)
                }
            }
        }
        let max = |v: &[f32]| v.iter().copied().fold(0.0, f32::max);
        let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
        [max(&inner), mean(&inner), max(&seam), mean(&seam)]
    }

    #[test]
    fn noise_is_periodic_and_smooth() {
        for (w, h) in [(256u32, 256u32), (1000, 300), (64, 512)] {
            let n = Noise::new(w, h, 11, TexelFormat::RGBA32F);
            for level in 0..3 {
                let lw = (w >> level).max(1);
                let lh = (h >> level).max(1);
                // The scalar field: no bigger steps across the seams than inside.
                let mut field = vec![0.0f32; (lw * lh) as usize];
                for (y, row) in field.chunks_exact_mut(lw as usize).enumerate() {
                    for (i, run) in row.chunks_mut(RUN).enumerate() {
                        n.fbm_run(lw, lh, y as u32, (i * RUN) as u32, run);
                    }
                }
                let [max_in, mean_in, max_seam, mean_seam] =
                    steps(lw, lh, &field, |a, b| (a - b).abs());
                let what = format!(
                    "{w}×{h} level {level}: inside {max_in}/{mean_in}, seam {max_seam}/{mean_seam}"
                );
                assert!(
                    max_seam <= max_in * 1.01 && mean_seam < 3.0 * mean_in,
                    "{what}"
                );
                // The same for the colours.
                let (_, _, t) = read_level(&n, level);
                let [max_in, mean_in, max_seam, mean_seam] = steps(lw, lh, &t, dist);
                let what = format!(
                    "{w}×{h} level {level}: inside {max_in}/{mean_in}, seam {max_seam}/{mean_seam}"
                );
                assert!(
                    max_seam <= max_in * 1.01 && mean_seam < 3.0 * mean_in,
                    "{what}"
                );
            }
        }
    }

    #[test]
    fn noise_has_detail_seeds_differ_and_coarse_levels_are_flat() {
        let a = Noise::new(512, 512, 1, TexelFormat::RGBA32F);
        let b = Noise::new(512, 512, 2, TexelFormat::RGBA32F);
        let (_, _, ta) = read_level(&a, 0);
        let (_, _, tb) = read_level(&b, 0);
        let differ = ta
            .iter()
            .zip(&tb)
            .filter(|(x, y)| dist(**x, **y) > 0.05)
            .count();
        assert!(differ > ta.len() / 4, "seeds give similar noise");
        // Variety: the level covers a good part of the ramp.
        let lo = ta.iter().map(|t| t[2]).fold(f32::MAX, f32::min);
        let hi = ta.iter().map(|t| t[2]).fold(f32::MIN, f32::max);
        assert!(hi - lo > 0.3, "blue spans only {lo}..{hi}");
        // Band limit: levels too small for the coarsest octave hold the mean colour only.
        let (_, _, t1) = read_level(&a, 8); // 2×2: cells of 0.5 texels
        assert!(t1.iter().all(|t| *t == t1[0]));
        assert_eq!(a.octaves(512, 512), 7); // 4 .. 256 cells
        assert_eq!(a.octaves(8, 8), 1);
        assert_eq!(a.octaves(7, 8), 0);
        // Non-square: cells roughly square in texels.
        let wide = Noise::new(4096, 1024, 0, TexelFormat::RGBA8);
        assert_eq!(wide.base_cells, [16, 4]);
        let tall = Noise::new(3, 65536, 0, TexelFormat::RGBA8);
        assert_eq!(tall.base_cells[0], 4);
        assert_eq!(tall.octaves(3, 65536), 0);
        let line = Noise::new(65536, 1, 0, TexelFormat::RGBA8);
        assert_eq!(line.base_cells, [4 << 16, 4]);
    }
}
