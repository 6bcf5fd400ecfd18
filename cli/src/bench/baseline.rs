//! The lookup baseline: the same bilinear / trilinear filter written directly over flat
//! in-memory levels (one `Vec<u8>` per level, decoded with the same `TexelFormat::decode`),
//! with no paging at all. Wrap addressing, texel centres at half-integers, the level of
//! detail from the longer gradient (isotropic).

use demandtex::sources::ImageSource;
use demandtex::textures::{TexelFormat, TileRegion};

/// One mip level held flat.
pub struct FlatLevel {
    width: usize,
    height: usize,
    data: Vec<u8>,
}

/// Every level of an image, held flat.
pub struct FlatTexture {
    format: TexelFormat,
    levels: Vec<FlatLevel>,
}

impl FlatTexture {
    /// Read every level of `source` whole.
    pub fn read(source: &dyn ImageSource) -> Result<FlatTexture, String> {
        let info = source
            .open()
            .map_err(|e| format!("{}: {e}", source.name()))?;
        let tb = info.format.texel_bytes();
        let mut levels = Vec::new();
        for level in 0..info.num_levels {
            let region = TileRegion::whole_level(info.width, info.height, level);
            let (w, h) = (region.width, region.height);
            let mut data = vec![0u8; w as usize * h as usize * tb];
            source
                .read_region(region, &mut data, w as usize * tb)
                .map_err(|e| format!("{}: level {level}: {e}", source.name()))?;
            levels.push(FlatLevel {
                width: w as usize,
                height: h as usize,
                data,
            });
        }
        Ok(FlatTexture {
            format: info.format,
            levels,
        })
    }

    /// Texel `(x, y)` of `l`, for `x ∈ [-1, width]` and `y ∈ [-1, height]` (wrapped).
    #[inline]
    fn texel(&self, l: &FlatLevel, x: isize, y: isize) -> [f32; 4] {
        let wrap = |v: isize, n: usize| {
            if v < 0 {
                (v + n as isize) as usize
            } else if v as usize >= n {
                v as usize - n
            } else {
                v as usize
            }
        };
        let (xi, yi) = (wrap(x, l.width), wrap(y, l.height));
        let tb = self.format.texel_bytes();
        let at = (yi * l.width + xi) * tb;
        self.format.decode(&l.data[at..at + tb])
    }

    /// Bilinear lookup in `level` with wrapping.
    #[inline]
    pub fn bilinear(&self, level: usize, s: f32, t: f32) -> [f32; 4] {
        let l = &self.levels[level];
        // One period: then x0 ∈ [-1, width - 1], which `texel` wraps cheaply.
        let (s, t) = (s - s.floor(), t - t.floor());
        let x = s * l.width as f32 - 0.5;
        let y = t * l.height as f32 - 0.5;
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let (xi, yi) = (x0 as isize, y0 as isize);
        let a = self.texel(l, xi, yi);
        let b = self.texel(l, xi + 1, yi);
        let c = self.texel(l, xi, yi + 1);
        let d = self.texel(l, xi + 1, yi + 1);
        std::array::from_fn(|i| {
            let top = a[i] + (b[i] - a[i]) * fx;
            let bottom = c[i] + (d[i] - c[i]) * fx;
            top + (bottom - top) * fy
        })
    }

    /// Trilinear lookup with the level of detail from screen-space gradients.
    #[inline]
    pub fn grad(&self, s: f32, t: f32, ddx: [f32; 2], ddy: [f32; 2]) -> [f32; 4] {
        let l0 = &self.levels[0];
        let (w, h) = (l0.width as f32, l0.height as f32);
        let lx = (ddx[0] * w).hypot(ddx[1] * h);
        let ly = (ddy[0] * w).hypot(ddy[1] * h);
        let rho = lx.max(ly);
        let max_lod = (self.levels.len() - 1) as f32;
        let lod = if rho > 0.0 {
            rho.log2().clamp(0.0, max_lod)
        } else {
            0.0
        };
        let level = lod.floor() as usize;
        let f = lod - level as f32;
        let a = self.bilinear(level, s, t);
        if f == 0.0 || level + 1 >= self.levels.len() {
            return a;
        }
        let b = self.bilinear(level + 1, s, t);
        std::array::from_fn(|i| a[i] + (b[i] - a[i]) * f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use demandtex::sources::ImageInfo;
    use demandtex::sources::{Readiness, SourceError};
    use demandtex::textures::full_mip_levels;

    /// A 4×2 RGBA8 image whose red channel is x/3 and green y, at every level.
    struct Ramp;

    impl ImageSource for Ramp {
        fn name(&self) -> String {
            "ramp".into()
        }
        fn open(&self) -> Result<ImageInfo, SourceError> {
            Ok(ImageInfo {
                width: 4,
                height: 2,
                format: TexelFormat::RGBA8,
                num_levels: full_mip_levels(4, 2),
            })
        }
        fn read_region(
            &self,
            r: TileRegion,
            dest: &mut [u8],
            row_bytes: usize,
        ) -> Result<Readiness, SourceError> {
            for y in 0..r.height as usize {
                for x in 0..r.width as usize {
                    let px = &mut dest[y * row_bytes + x * 4..][..4];
                    px.copy_from_slice(&[(x * 85) as u8, (y * 255) as u8, 0, 255]);
                }
            }
            Ok(Readiness::Ready)
        }
    }

    #[test]
    fn bilinear_hits_texel_centres_and_wraps() {
        let t = FlatTexture::read(&Ramp).unwrap();
        assert_eq!(t.levels.len(), 3);
        // Centre of texel (1, 0).
        let v = t.bilinear(0, 1.5 / 4.0, 0.5 / 2.0);
        assert!(
            (v[0] - 85.0 / 255.0).abs() < 1e-6 && v[1].abs() < 1e-6,
            "{v:?}"
        );
        // Halfway between the last and (wrapped) first column.
        let v = t.bilinear(0, 0.0, 0.25);
        assert!((v[0] - 0.5).abs() < 1e-6, "{v:?}");
    }

    #[test]
    fn gradients_pick_the_level() {
        let t = FlatTexture::read(&Ramp).unwrap();
        let tiny = t.grad(1.5 / 4.0, 0.25, [1e-4, 0.0], [0.0, 1e-4]);
        assert_eq!(tiny, t.bilinear(0, 1.5 / 4.0, 0.25));
        let one = t.grad(0.3, 0.3, [2.0 / 4.0, 0.0], [0.0, 0.0]);
        assert_eq!(one, t.bilinear(1, 0.3, 0.3));
        let half = t.grad(0.3, 0.3, [2f32.powf(0.5) / 4.0, 0.0], [0.0, 0.0]);
        let (a, b) = (t.bilinear(0, 0.3, 0.3), t.bilinear(1, 0.3, 0.3));
        assert!(
            (half[0] - (a[0] + b[0]) * 0.5).abs() < 1e-5,
            "{half:?} {a:?} {b:?}"
        );
    }
}
