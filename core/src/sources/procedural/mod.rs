//! Procedural image sources: a checkerboard with a colour per mip level, periodic fBm noise,
//! the Mandelbrot set and any function of (level, x, y) ([`FunctionImage`]), at any virtual size up to 65536×65536, each with a full mip chain.
//!
//! Every level is computed from a formula evaluated at that level's texel centres, so any
//! region of any level can be produced on its own, from any thread, in any order, and the
//! same region always gives the same bytes. Nothing is cached and nothing is locked.
//!
//! Texels are shaded a short run at a time into a stack buffer of `f32` RGBA and then
//! encoded by [`TexelFormat::encode_row`], which resolves the format once per run; no read
//! allocates.
//!
//! One file per source ([`Checkerboard`], [`Noise`], [`Mandelbrot`], [`FunctionImage`]);
//! this module holds what they share: the run-at-a-time fill and the colour ramp.
//!
//! Sizes: the constructors never fail and never panic. A side of 0 or more than
//! [`MAX_TEXTURE_SIZE`] (or a format that is not 1, 2 or 4 channels) is kept as given and
//! reported as a [`SourceError`] by [`ImageSource::open`] and by every read.
//!
//! [`MAX_TEXTURE_SIZE`]: crate::textures::MAX_TEXTURE_SIZE
//! [`ImageSource::open`]: super::ImageSource::open

mod checkerboard;
mod function;
mod mandelbrot;
mod noise;
#[cfg(test)]
mod tests;

pub use checkerboard::{Checkerboard, LEVEL_COLORS};
pub use function::FunctionImage;
pub use mandelbrot::{Mandelbrot, MAX_MANDELBROT_ITERATIONS};
pub use noise::Noise;

use super::region::check_read;
use super::{ImageInfo, Readiness, SourceError};
use crate::textures::{TexelFormat, TileRegion};

/// Texels shaded per run before encoding (one stack buffer of this many `[f32; 4]`).
const RUN: usize = 128;

/// Shade `region` a run at a time and encode it into `dest`. `shade(y, x0, out)` writes the
/// RGBA of texels `x0 .. x0 + out.len()` of row `y`. The region must have been checked.
#[inline]
fn fill<F>(format: TexelFormat, region: TileRegion, dest: &mut [u8], row_bytes: usize, mut shade: F)
where
    F: FnMut(u32, u32, &mut [[f32; 4]]),
{
    let texel_bytes = format.texel_bytes();
    let used_row = region.width as usize * texel_bytes;
    let mut buf = [[0.0f32; 4]; RUN];
    for j in 0..region.height {
        let start = j as usize * row_bytes;
        let row = &mut dest[start..start + used_row];
        let y = region.y + j;
        let mut x = region.x;
        for out in row.chunks_mut(RUN * texel_bytes) {
            let n = out.len() / texel_bytes;
            let texels = &mut buf[..n];
            shade(y, x, texels);
            format.encode_row(texels, out);
            x += n as u32;
        }
    }
}

/// Check and fill: the body every procedural `read_region` shares. `shade(lw, lh, y, x0, out)`.
fn read_procedural<F>(
    info: Result<ImageInfo, SourceError>,
    region: TileRegion,
    dest: &mut [u8],
    row_bytes: usize,
    mut shade: F,
) -> Result<Readiness, SourceError>
where
    F: FnMut(u32, u32, u32, u32, &mut [[f32; 4]]),
{
    let info = info?;
    let (lw, lh) = check_read(&info, region, dest.len(), row_bytes)?;
    if region.width == 0 || region.height == 0 {
        return Ok(Readiness::Ready);
    }
    fill(info.format, region, dest, row_bytes, |y, x0, out| {
        shade(lw, lh, y, x0, out)
    });
    Ok(Readiness::Ready)
}

/// A piecewise-linear colour ramp at `t` (clamped to [0, 1]); `stops` run from 0 to 1.
#[inline]
fn ramp(stops: &[(f32, [f32; 3])], t: f32) -> [f32; 4] {
    let t = t.clamp(0.0, 1.0);
    let mut i = 1;
    while i < stops.len() - 1 && t > stops[i].0 {
        i += 1;
    }
    let (t0, c0) = stops[i - 1];
    let (t1, c1) = stops[i];
    let s = ((t - t0) / (t1 - t0)).clamp(0.0, 1.0);
    [
        c0[0] + (c1[0] - c0[0]) * s,
        c0[1] + (c1[1] - c0[1]) * s,
        c0[2] + (c1[2] - c0[2]) * s,
        1.0,
    ]
}
