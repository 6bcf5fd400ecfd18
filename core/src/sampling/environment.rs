//! Lat-long environment lookups: a direction and its screen-space differentials instead of
//! (s, t), as OpenImageIO's `TextureSystem::environment` takes them. Dome lights and
//! image-based lighting sample latitude-longitude maps this way.
//!
//! The mapping is OpenImageIO 2.4's (`vector_to_latlong`, in `f32`):
//! - [`UpAxis::Y`] (OpenEXR's convention and OpenImageIO 2.4's default; maketx `--envlatl`
//!   marks its OpenEXR files with `oiio:updirection "y"`): `s = atan2(−x, z) / 2π + 0.5`,
//!   `t = 0.5 − atan2(y, hypot(z, x)) / π` — the north pole (t = 0) is +y and the centre of
//!   the map looks along +z;
//! - [`UpAxis::Z`] (RenderMan's convention, `oiio:updirection "z"`):
//!   `s = atan2(y, x) / 2π + 0.5`, `t = 0.5 − atan2(z, hypot(x, y)) / π` — the north pole is
//!   +z and the centre looks along +x.
//!
//! The filter is OpenImageIO's too. The footprint is the angles between the direction `R` and
//! `R + dRdx`, `R + dRdy` (all normalised); the shorter one sets the level: the first level
//! `m` whose height covers it in at most one texel (`height(m) · angle / π ≤ 1`) is blended
//! with the level above by `clamp(2 · height(m) · angle / π − 1, 0, 1)`. The longer one, past
//! an aspect of 1.25, adds probes towards it (one per unit of aspect, up to the texture's
//! `max_anisotropy`; past it the axes are evened out as OpenImageIO's conservative filter
//! does), at OpenImageIO's places: probe `k` of `n` looks along `R + pos · Rmajor` with
//! `pos = (k + 0.5) / n − 0.5` and `Rmajor` the normalised `R + dRdx` or `R + dRdy`, which
//! puts them between a third of the major axis behind `R` and a fifth ahead for two
//! probes. The angles are OpenImageIO's `acos` of `f32` dot products, which cannot tell
//! angles under about 4·10⁻⁴ radians apart finely: such footprints read as anisotropic
//! up to √2, in both. Each probe samples the texture's filter at that level of detail with
//! the environment's wrap modes — periodic in s, clamped in t — whatever the texture's
//! description says.
//!
//! The device's `dtex::environment` (include/demandtex/device/environment.cuh) computes the
//! same probes and levels; `cuda/tests/host_texture.rs` runs it on the host against this.
//!
//! The texture's own filter (bilinear, or point) samples each probe; OpenImageIO's default
//! interpolation is "smart bicubic" (bicubic on level 0), its bilinear mode is what this
//! matches; the largest anisotropy is the texture's (OpenImageIO's default is 32). One more
//! difference, documented in `docs/FORMATS.md`: OpenImageIO fades to the average colour of
//! the pole row on levels that fit one of its tiles, and reads files marked
//! `oiio:sampleborder` with edge texels on the seam and poles; here every texel centre is
//! at `(i + 0.5) / width` and no level is faded.

use super::filter;
use super::lod::Footprint;
use super::resolve;
use super::{CpuView, Sample, SampleOptions, UNKNOWN_TEXTURE};
use crate::ids::TextureId;
use crate::textures::{AddressMode, TextureSampler};

/// Which axis points at a lat-long map's north pole (t = 0); see the module docs. The
/// numeric values are shared with C (`DTEX_UP_AXIS_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum UpAxis {
    /// +z: RenderMan's convention (`oiio:updirection "z"`).
    Z = 0,
    /// +y: OpenEXR's convention and OpenImageIO 2.4's default (its `latlong_up`
    /// attribute; maketx `--envlatl` marks its OpenEXR files `oiio:updirection "y"`).
    #[default]
    Y = 1,
}

impl UpAxis {
    /// The axis of a C code, if it is one.
    pub fn from_code(code: u32) -> Option<UpAxis> {
        match code {
            0 => Some(UpAxis::Z),
            1 => Some(UpAxis::Y),
            _ => None,
        }
    }
}

/// The lat-long coordinates (s, t) of direction `r` (any length), OpenImageIO's
/// `vector_to_latlong`: NaN coordinates (a zero direction) become 0.
pub fn latlong(r: [f32; 3], up: UpAxis) -> (f32, f32) {
    use std::f32::consts::PI;
    let [x, y, z] = r;
    let (s, t) = match up {
        UpAxis::Y => (
            (-x).atan2(z) / (2.0 * PI) + 0.5,
            0.5 - y.atan2(z.hypot(-x)) / PI,
        ),
        UpAxis::Z => (
            y.atan2(x) / (2.0 * PI) + 0.5,
            0.5 - z.atan2(x.hypot(y)) / PI,
        ),
    };
    (
        if s.is_nan() { 0.0 } else { s },
        if t.is_nan() { 0.0 } else { t },
    )
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `v` divided by its length (unchanged if the length is 0), as Imath's `normalize`.
fn normalized(v: [f32; 3]) -> [f32; 3] {
    let l = dot(v, v).sqrt();
    if l == 0.0 {
        v
    } else {
        v.map(|c| c / l)
    }
}

fn add(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// The angle between unit vectors, `acos` clamped (OpenImageIO's `safe_acos`).
fn angle(a: [f32; 3], b: [f32; 3]) -> f32 {
    let c = dot(a, b);
    if c <= -1.0 {
        std::f32::consts::PI
    } else if c >= 1.0 {
        0.0
    } else {
        c.acos()
    }
}

/// The level of detail at which a footprint of `width` radians (across) is sampled on a
/// lat-long map with the levels of `sampler`: OpenImageIO's choice of two levels and their
/// blend, as a fractional level (see the module docs).
pub(crate) fn latlong_lod(sampler: &TextureSampler, width: f32) -> f32 {
    let levels = sampler.num_levels.max(1) as usize;
    for m in 0..levels {
        // In OpenImageIO's precision: a float product, times the double 1/π, back to float.
        let raster = (f64::from(sampler.levels[m].height as f32 * width)
            * std::f64::consts::FRAC_1_PI) as f32;
        if raster <= 1.0 {
            if m == 0 {
                // Finer than level 0 can show.
                return 0.0;
            }
            return (m - 1) as f32 + (2.0 * raster - 1.0).clamp(0.0, 1.0);
        }
    }
    (levels - 1) as f32
}

/// Sample lat-long environment map `texture` in direction `r`, with the direction's
/// screen-space differentials `drdx`, `drdy` (see the module docs). Misses, fallbacks and bad
/// input are as for [`super::tex2d_grad`]: a non-finite or zero direction samples (0.5, 0.5).
pub fn environment(
    view: CpuView<'_>,
    texture: TextureId,
    r: [f32; 3],
    drdx: [f32; 3],
    drdy: [f32; 3],
    up: UpAxis,
    options: &SampleOptions,
) -> Sample {
    if texture.0 >= view.pages().layout().max_textures {
        return UNKNOWN_TEXTURE;
    }
    let view = view.keyed(options.request_key);
    if !r.iter().chain(&drdx).chain(&drdy).all(|v| v.is_finite()) {
        return super::non_finite(view, texture);
    }
    let sampler = match resolve::sampler(view, texture) {
        Ok(sampler) => sampler,
        Err(sample) => return sample,
    };
    // The environment's wrap modes, whatever the texture's description says.
    let sampler = TextureSampler {
        address_s: AddressMode::Wrap as u32,
        address_t: AddressMode::Clamp as u32,
        ..*sampler
    };
    let rn = normalized(r);
    let rx = normalized(add(r, drdx));
    let ry = normalized(add(r, drdy));
    let xfilt = angle(rn, rx).max(1e-8);
    let yfilt = angle(rn, ry).max(1e-8);
    let (r_major, major, mut minor) = if xfilt >= yfilt {
        (rx, xfilt, yfilt)
    } else {
        (ry, yfilt, xfilt)
    };
    // OpenImageIO's anisotropic_aspect, conservative: past the largest aspect the major
    // axis is averaged with the minor one times the aspect, and the minor one widened to
    // match.
    let max_aniso = sampler.max_anisotropy.max(1) as f32;
    let mut aspect = (major / minor).clamp(1.0, 1.0e6);
    if aspect > max_aniso {
        aspect = max_aniso;
        minor = 0.5 * (major + minor * max_aniso) / max_aniso;
    }
    let probes = ((aspect - 0.25).ceil() as u32).max(1);
    let lod = latlong_lod(&sampler, minor);
    let footprint = Footprint::isotropic(lod);
    let step = 1.0 / probes as f32;
    let mut value = [0.0f32; 4];
    let (mut resident, mut coarser) = (true, false);
    let mut pos = -0.5 + 0.5 * step;
    for _ in 0..probes {
        let dir = add(rn, r_major.map(|a| pos * a));
        pos += step;
        let (s, t) = latlong(dir, up);
        let probe = filter::sample(view, texture, &sampler, s, t, &footprint, options);
        for (v, p) in value.iter_mut().zip(probe.value) {
            *v += p * step;
        }
        resident &= probe.resident;
        coarser |= probe.coarser;
    }
    Sample {
        value,
        resident,
        coarser,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::FunctionImage;
    use crate::textures::{full_mip_levels, TexelFormat, TextureDesc, TextureLayout};
    use crate::{LoaderOptions, TextureCache};
    use std::sync::Arc;

    fn close(a: (f32, f32), b: (f32, f32)) -> bool {
        (a.0 - b.0).abs() < 1e-6 && (a.1 - b.1).abs() < 1e-6
    }

    #[test]
    fn directions_map_to_openimageio_s_lat_long_coordinates() {
        // y up: the centre looks along +z, +y is the north pole (t = 0).
        assert!(close(latlong([0.0, 0.0, 1.0], UpAxis::Y), (0.5, 0.5)));
        assert!(close(latlong([0.0, 2.0, 0.0], UpAxis::Y), (0.5, 0.0)));
        assert!(close(latlong([0.0, -1.0, 0.0], UpAxis::Y), (0.5, 1.0)));
        assert!(close(latlong([-1.0, 0.0, 0.0], UpAxis::Y), (0.75, 0.5)));
        assert!(close(latlong([1.0, 0.0, 0.0], UpAxis::Y), (0.25, 0.5)));
        // z up: the centre looks along +x, +z is the north pole.
        assert!(close(latlong([3.0, 0.0, 0.0], UpAxis::Z), (0.5, 0.5)));
        assert!(close(latlong([0.0, 1.0, 0.0], UpAxis::Z), (0.75, 0.5)));
        assert!(close(latlong([0.0, 0.0, 1.0], UpAxis::Z), (0.5, 0.0)));
        // NaN coordinates become 0, as OpenImageIO makes them.
        assert_eq!(latlong([f32::NAN, 0.0, 1.0], UpAxis::Y), (0.0, 0.0));
        assert_eq!(UpAxis::default(), UpAxis::Y);
        assert_eq!(UpAxis::from_code(0), Some(UpAxis::Z));
        assert_eq!(UpAxis::from_code(2), None);
    }

    #[test]
    fn the_level_covers_the_footprint_in_one_texel_as_openimageio_picks_it() {
        let layout =
            TextureLayout::new(512, 256, full_mip_levels(512, 256), TexelFormat::RGBA8).unwrap();
        let sampler = TextureSampler::new(&layout, &TextureDesc::default(), 0);
        let pi = std::f32::consts::PI;
        // Under a texel of level 0: level 0.
        assert_eq!(latlong_lod(&sampler, 0.5 * pi / 256.0), 0.0);
        // 1.5 texels of level 0 (256 rows), 0.75 of level 1: levels 0 and 1, blended by
        // 2 · 0.75 − 1.
        let lod = latlong_lod(&sampler, 1.5 * pi / 256.0);
        assert!((lod - 0.5).abs() < 1e-5, "{lod}");
        // Exactly one texel of level 2 (64 rows): levels 1 and 2, all of level 2.
        let lod = latlong_lod(&sampler, pi / 64.0);
        assert!((lod - 2.0).abs() < 1e-5, "{lod}");
        // Wider than the whole map: the coarsest level.
        assert_eq!(latlong_lod(&sampler, 10.0), (sampler.num_levels - 1) as f32);
    }

    #[test]
    fn lookups_wrap_in_s_and_clamp_in_t_whatever_the_description_says() {
        let cache = TextureCache::new(LoaderOptions::default()).unwrap();
        let image = || {
            Arc::new(FunctionImage::new(
                "stripes",
                64,
                32,
                TexelFormat::RGBA32F,
                |l, x, y| [x as f32 + 100.0 * l as f32, y as f32, 0.25, 1.0],
            ))
        };
        let clamp = TextureDesc {
            address: [AddressMode::Clamp, AddressMode::Wrap],
            ..TextureDesc::default()
        };
        let env = TextureDesc {
            address: [AddressMode::Wrap, AddressMode::Clamp],
            ..TextureDesc::default()
        };
        let t_clamp = cache.loader().create_texture(image(), clamp).unwrap();
        let t_env = cache.loader().create_texture(image(), env).unwrap();
        let o = SampleOptions::default();
        let small = [1e-4, 0.0, 0.0];
        // Directions across the seam (s near 0 and 1) and near both poles, y up.
        for r in [
            [0.001, 0.2, -1.0],
            [-0.001, 0.2, -1.0],
            [0.3, 0.999, 0.01],
            [0.3, -0.999, 0.01],
        ] {
            let (s, t) = latlong(r, UpAxis::Y);
            let want = cache.tex2d_lod(t_env, s, t, 0.0, &o);
            for texture in [t_clamp, t_env] {
                let got = cache.environment(texture, r, small, [0.0, 1e-4, 0.0], UpAxis::Y, &o);
                assert!(got.resident);
                assert_eq!(got.value, want.value, "{r:?} ({s}, {t})");
            }
        }
        // The same lookups in multi-pass launches, once resident.
        let loader = crate::Loader::new(LoaderOptions::default()).unwrap();
        let t_loader = loader.create_texture(image(), clamp).unwrap();
        let r = [0.001, 0.2, -1.0];
        let mut got = None;
        for _ in 0..20 {
            let launch = loader.launch_prepare();
            let s = launch.environment(t_loader, r, small, [0.0, 1e-4, 0.0], UpAxis::Y, &o);
            loader.process_requests(launch).wait();
            if s.resident {
                got = Some(s);
                break;
            }
        }
        let want = cache.environment(t_clamp, r, small, [0.0, 1e-4, 0.0], UpAxis::Y, &o);
        assert_eq!(got.map(|s| s.value), Some(want.value));
        // A direction with a non-finite component: as a non-finite coordinate in 2D.
        let bad = cache.environment(t_env, [f32::NAN, 0.0, 1.0], small, small, UpAxis::Y, &o);
        assert_eq!(bad, cache.tex2d_lod(t_env, f32::NAN, 0.5, 0.0, &o));
    }
}
