//! A checkerboard with one colour per mip level, for seeing which level a renderer samples.

use super::read_procedural;
use crate::sources::region::full_chain_info;
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TexelFormat, TileRegion};

/// One clearly different colour per mip level (65536 → 1 is 17 levels); levels past the
/// palette reuse it from the start.
pub const LEVEL_COLORS: [[f32; 3]; 17] = [
    [0.90, 0.10, 0.10], // 0 red
    [0.95, 0.50, 0.05], // 1 orange
    [0.95, 0.90, 0.10], // 2 yellow
    [0.55, 0.90, 0.10], // 3 lime
    [0.10, 0.70, 0.20], // 4 green
    [0.10, 0.90, 0.60], // 5 spring green
    [0.10, 0.85, 0.95], // 6 cyan
    [0.15, 0.45, 0.95], // 7 azure
    [0.20, 0.15, 0.85], // 8 blue
    [0.55, 0.15, 0.90], // 9 violet
    [0.90, 0.15, 0.85], // 10 magenta
    [0.95, 0.45, 0.65], // 11 pink
    [0.97, 0.97, 0.97], // 12 white
    [0.50, 0.50, 0.50], // 13 grey
    [0.55, 0.30, 0.10], // 14 brown
    [0.50, 0.55, 0.05], // 15 olive
    [0.05, 0.40, 0.45], // 16 teal
];

/// How much darker the second square of each level is than the first.
const CHECKER_DARK: f32 = 0.4;

/// A checkerboard whose colour tells the mip level: level `l` uses `LEVEL_COLORS[l]` for
/// one square and a darker shade of it for the other.
///
/// Squares are `square_texels` texels wide at level 0 and `max(1, square_texels >> l)` at
/// level `l`, so the pattern stays put in UV space for as long as the level can show it.
/// A `square_texels` of 0 is treated as 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkerboard {
    width: u32,
    height: u32,
    square_texels: u32,
    format: TexelFormat,
}

impl Checkerboard {
    /// A `width × height` checkerboard of `square_texels`-texel squares. Never fails; an
    /// unsupported size or format is reported by [`ImageSource::open`].
    pub fn new(width: u32, height: u32, square_texels: u32, format: TexelFormat) -> Checkerboard {
        Checkerboard {
            width,
            height,
            square_texels: square_texels.max(1),
            format,
        }
    }

    /// The two colours of `level`: the square at texel (0, 0) and the other one.
    pub fn level_colors(level: u32) -> ([f32; 4], [f32; 4]) {
        let [r, g, b] = LEVEL_COLORS[level as usize % LEVEL_COLORS.len()];
        let k = CHECKER_DARK;
        ([r, g, b, 1.0], [r * k, g * k, b * k, 1.0])
    }
}

impl ImageSource for Checkerboard {
    fn name(&self) -> String {
        format!(
            "checkerboard {}×{} {}",
            self.width, self.height, self.format
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
        let (light, dark) = Checkerboard::level_colors(region.level);
        let square = self
            .square_texels
            .checked_shr(region.level)
            .unwrap_or(0)
            .max(1);
        read_procedural(self.open(), region, dest, row_bytes, |_, _, y, x0, out| {
            // Walk the run a square at a time: no division per texel.
            let row_parity = (y / square) & 1;
            let mut column = x0 / square;
            let mut rest = out;
            let mut len = (square - x0 % square) as usize;
            while !rest.is_empty() {
                let (span, tail) = rest.split_at_mut(len.min(rest.len()));
                span.fill(if (column & 1) == row_parity {
                    light
                } else {
                    dark
                });
                rest = tail;
                column += 1;
                len = square as usize;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::procedural::tests::{dist, read, read_level};
    use crate::textures::full_mip_levels;

    #[test]
    fn checkerboard_colours_are_distinct_per_level() {
        for a in 0..LEVEL_COLORS.len() as u32 {
            let (la, da) = Checkerboard::level_colors(a);
            assert!(dist(la, da) > 0.15, "level {a} light and dark too close");
            for b in 0..a {
                let (lb, db) = Checkerboard::level_colors(b);
                assert!(dist(la, lb) > 0.25, "levels {a} and {b}");
                assert!(dist(da, db) > 0.05, "dark {a} and {b}");
            }
        }
        // And the encoded texels of every level of a 65536² RGBA8 checkerboard differ.
        let c = Checkerboard::new(65536, 65536, 64, TexelFormat::RGBA8);
        let mut seen = Vec::new();
        for level in 0..17 {
            let t = read(
                &c,
                TileRegion {
                    level,
                    x: 0,
                    y: 0,
                    width: 1,
                    height: 1,
                },
            );
            assert!(!seen.contains(&t), "level {level}");
            seen.push(t);
        }
    }

    #[test]
    fn checkerboard_squares_stay_fixed_in_uv() {
        let c = Checkerboard::new(64, 32, 8, TexelFormat::RGBA32F);
        for level in 0..full_mip_levels(64, 32) {
            let (light, dark) = Checkerboard::level_colors(level);
            let (w, h, texels) = read_level(&c, level);
            let square = (8u32 >> level).max(1);
            for y in 0..h {
                for x in 0..w {
                    let want = if ((x / square) ^ (y / square)) & 1 == 0 {
                        light
                    } else {
                        dark
                    };
                    assert_eq!(
                        texels[(y * w + x) as usize],
                        want,
                        "level {level} ({x}, {y})"
                    );
                }
            }
        }
        // Level 0 and level 2 agree on which square a UV lies in (8 and 2 texel squares).
        let (_, _, l0) = read_level(&c, 0);
        let (_, _, l2) = read_level(&c, 2);
        let parity = |t: [f32; 4], level: u32| t == Checkerboard::level_colors(level).0;
        for (x, y) in [(3u32, 5u32), (10, 2), (40, 30), (63, 17)] {
            assert_eq!(
                parity(l0[(y * 64 + x) as usize], 0),
                parity(l2[((y / 4) * 16 + x / 4) as usize], 2)
            );
        }
    }
}
