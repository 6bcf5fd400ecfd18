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
