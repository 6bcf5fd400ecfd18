//! An image computed by a function of (level, x, y): a procedural texture from a closure.

use super::read_procedural;
use crate::sources::region::full_chain_info;
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TexelFormat, TileRegion};

/// An image whose texel (`x`, `y`) of level `l` is `texel(l, x, y)` (RGBA, encoded to
/// `format`), with a full mip chain: every level is the function at that level's texels,
/// never filtered from the level below. Masks, ramps and test patterns for tests,
/// benchmarks and hosts that compute their textures.
pub struct FunctionImage<F> {
    name: String,
    width: u32,
    height: u32,
    format: TexelFormat,
    texel: F,
}

impl<F> FunctionImage<F>
where
    F: Fn(u32, u32, u32) -> [f32; 4] + Send + Sync,
{
    /// A `width × height` image named `name` (for messages). Never fails; an unsupported
    /// size or format is reported by [`ImageSource::open`] and every read.
    pub fn new(
        name: impl Into<String>,
        width: u32,
        height: u32,
        format: TexelFormat,
        texel: F,
    ) -> Self {
        FunctionImage {
            name: name.into(),
            width,
            height,
            format,
            texel,
        }
    }
}

impl<F> ImageSource for FunctionImage<F>
where
    F: Fn(u32, u32, u32) -> [f32; 4] + Send + Sync,
{
    fn name(&self) -> String {
        format!(
            "{} {}×{} {}",
            self.name, self.width, self.height, self.format
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
        read_procedural(self.open(), region, dest, row_bytes, |_, _, y, x0, out| {
            for (x, t) in (x0..).zip(out.iter_mut()) {
                *t = (self.texel)(region.level, x, y);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::procedural::tests::read_level;

    #[test]
    fn every_level_is_the_function_at_its_texels() {
        let f =
            |l: u32, x: u32, y: u32| [x as f32 / 255.0, y as f32 / 255.0, l as f32 / 255.0, 1.0];
        let image = FunctionImage::new("ramp", 100, 37, TexelFormat::RGBA8, f);
        assert_eq!(image.open().unwrap().num_levels, 7);
        for level in [0, 2, 6] {
            let (w, h, texels) = read_level(&image, level);
            for (i, t) in texels.iter().enumerate() {
                let (x, y) = (i as u32 % w, i as u32 / w);
                let want = f(level, x, y);
                let close = t.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6);
                assert!(
                    close,
                    "level {level} ({x}, {y}) of {w}×{h}: {t:?} vs {want:?}"
                );
            }
        }
        let bad = FunctionImage::new("empty", 0, 5, TexelFormat::RGBA8, f);
        assert!(bad.open().is_err());
        let region = TileRegion {
            level: 0,
            x: 90,
            y: 0,
            width: 20,
            height: 1,
        };
        let mut dest = [0u8; 80];
        assert!(
            image.read_region(region, &mut dest, 80).is_err(),
            "past the edge"
        );
    }
}
