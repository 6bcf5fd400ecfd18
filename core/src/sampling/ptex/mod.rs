//! Ptex filtering with the semantics of the reference library's `PtexFilter` (v2.4.3), over
//! any store of per-face data that implements [`PtexFaces`]: the reader directly
//! ([`ResidentPtex`], everything decoded on first use) or the engine (units resident or
//! missing within the budget).
//!
//! # Semantics
//!
//! [`ptex_sample`] evaluates one filter at (`u`, `v`) of `face` with the footprint
//! (`dudx`, `dvdx`), (`dudy`, `dvdy`) (the reference's `uw1, vw1, uw2, vw2`) and writes
//! `min(out.len(), channels − first_channel)` values, normalised (`u8` / 255, `u16` /
//! 65535):
//!
//! - **point** (quads): the texel containing (u, v) at full resolution, clamped into the
//!   face; (triangles) the "even" texel of the lower-left half or the "odd" one of the
//!   upper-right half ([`point`]).
//! - **bilinear, box, gaussian, bicubic / b-spline / Catmull-Rom / Mitchell** (quads): the
//!   reference's separable filters (`separable`, kernels built in `build`): the
//!   resolution is chosen from the filter width, the kernel is split where it crosses an
//!   edge and applied to the neighbour across it (rotated into its frame, at the
//!   neighbour's resolution if that is lower, through subface / main-face transitions) and
//!   to the faces around a corner (valence 4: the diagonal face; 5 and more: a symmetric
//!   kernel over every corner face; 3: the corner's weight dropped); at a mesh boundary the
//!   part outside is folded back (clamp, periodic) or dropped (black). `lerp` blends the
//!   width-4 kernels towards the next lower resolution; the box and bilinear kernels ignore
//!   it, as in the reference. `noedgeblend` folds at every edge instead of crossing it.
//!   Edge filter mode `tanvec` rotates the first two channels with the kernel.
//! - any non-point filter on **triangles**: the reference's Gaussian triangle filter over
//!   the elliptical footprint (`triangle`), across the three edges. Where no texel gets
//!   any weight (the reference then returns NaN, e.g. at some points with u + v > 1) the
//!   face's constant colour is returned.
//! - **stochastic two-level point** ([`PtexFilterType::StochasticPoint`]): one texel from
//!   each of the two resolutions around the footprint's level of detail, blended by the
//!   fraction (`point::stochastic`); the texel in each level is picked with probability
//!   equal to its bilinear weight by the caller's `jitter` (0.5, 0.5 gives the nearest).
//!   A missing texel is replaced by the face's constant colour, and a face whose level
//!   lies below one texel reads the constant.
//!
//! A face flagged neighbourhood-constant gives its constant value at once. A face id the
//! texture lacks, no channels to write, or a non-finite coordinate or footprint give zeros
//! (the reference writes nothing for the first two); the result is then reported resident.
//!
//! # Residency
//!
//! Every unit of data the filter needs (face, resolution, tile) is asked of [`PtexFaces`],
//! which answers with the texels or "missing" (the engine records the request). A filter
//! that met a missing unit still asks for every other unit of its footprint, so one pass
//! requests all of them, and then returns the face's constant colour, non-resident
//! ([`PtexSampled::resident`] false). The stochastic filter replaces only the missing
//! texel, and is reported non-resident too.

mod apply;
mod build;
mod engine;
mod kernel;
pub mod point;
mod resident;
mod separable;
mod triangle;

#[cfg(test)]
mod tests;

pub use engine::EnginePtex;
pub use resident::ResidentPtex;

use crate::sources::ptex::{values, BorderMode, DataType, EdgeFilterMode, FaceInfo, MeshType, Res};

/// What a [`PtexFaces`] store says about its texture as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtexTextureInfo {
    /// Triangle or quad faces.
    pub mesh_type: MeshType,
    /// How channel values are stored.
    pub data_type: DataType,
    /// Channels per texel.
    pub num_channels: usize,
    /// Border mode in u.
    pub u_border: BorderMode,
    /// Border mode in v.
    pub v_border: BorderMode,
    /// How values are transformed across edges.
    pub edge_filter: EdgeFilterMode,
    /// Number of faces.
    pub num_faces: usize,
}

impl PtexTextureInfo {
    /// Bytes per texel.
    pub fn pixel_size(&self) -> usize {
        self.num_channels * self.data_type.size()
    }
}

/// How the data of a face at one resolution is cut into units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// The resolution of each tile.
    pub tile_res: Res,
    /// Tiles across (u); tile `t` is at (`t % ntiles_u`, `t / ntiles_u`).
    pub ntiles_u: usize,
}

/// The texels of one unit (a face at one resolution, or one tile of it).
#[derive(Clone, Copy, Debug)]
pub enum Texels<'a> {
    /// One texel (`pixel_size` bytes) stands for all of them.
    Constant(&'a [u8]),
    /// Every texel, v-major, channels interleaved, `pixel_size` bytes each.
    Packed(&'a [u8]),
}

/// A store of per-face Ptex data the filters read from: face info and adjacency, the
/// always-resident constant colour of each face, and units of texels (a face at one
/// resolution, or a tile of it) that are resident or missing.
pub trait PtexFaces {
    /// The texture's mesh, data type, channels, border and edge filter modes.
    fn texture(&self) -> &PtexTextureInfo;

    /// The info of `face` (`None` for a face the texture lacks).
    fn face_info(&self, face: u32) -> Option<&FaceInfo>;

    /// The constant value of `face` (`pixel_size` bytes): what it holds at resolution 1×1;
    /// always available.
    fn constant(&self, face: u32) -> Option<&[u8]>;

    /// How `face` at `res` (at most its own resolution in each direction, both logs ≥ 0)
    /// is cut into units: `None` for one unit.
    fn tiling(&self, face: u32, res: Res) -> Option<Tiling>;

    /// Hand the texels of tile `tile` (0 for an untiled unit) of `face` at `res` to
    /// `visit` and return true, or return false if they are not available (the store may
    /// record a request for them).
    fn texels(&self, face: u32, res: Res, tile: usize, visit: &mut dyn FnMut(Texels<'_>)) -> bool;

    /// [`PtexFaces::texels`] of `face` at `res` if it is one unit (`None` if it is tiled):
    /// `tiling` and `texels` in one call, which a store may answer with one search.
    fn untiled_texels(
        &self,
        face: u32,
        res: Res,
        visit: &mut dyn FnMut(Texels<'_>),
    ) -> Option<bool> {
        match self.tiling(face, res) {
            Some(_) => None,
            None => Some(self.texels(face, res, 0, visit)),
        }
    }
}

/// The filter kernels, as the reference's `PtexFilter::FilterType`, plus the stochastic
/// two-level point filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PtexFilterType {
    /// The texel containing the point, full resolution.
    Point,
    /// Bilinear interpolation of the 2×2 texels around the point.
    Bilinear,
    /// Box filter over the footprint (area-weighted texels).
    #[default]
    Box,
    /// Separable Gaussian (width 4).
    Gaussian,
    /// Separable general cubic with [`PtexFilterOptions::sharpness`].
    Bicubic,
    /// Cubic B-spline (sharpness 0).
    BSpline,
    /// Catmull-Rom (sharpness 1).
    CatmullRom,
    /// Mitchell (sharpness 2/3).
    Mitchell,
    /// One texel from each of the two levels around the level of detail, blended.
    StochasticPoint,
}

/// How to filter ([`ptex_sample`]): the reference's `PtexFilter::Options` plus the
/// arguments of its `eval` that are not the lookup's own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PtexFilterOptions {
    /// The kernel.
    pub filter: PtexFilterType,
    /// Blend width-4 kernels towards the next lower resolution.
    pub lerp: bool,
    /// Sharpness of [`PtexFilterType::Bicubic`], 0..=1.
    pub sharpness: f32,
    /// Filter each face alone (fold at every edge).
    pub noedgeblend: bool,
    /// Multiplier of the footprint.
    pub width: f32,
    /// Added to the footprint (in face uv).
    pub blur: f32,
    /// The first channel to filter.
    pub first_channel: usize,
    /// Random numbers in [0, 1) for the stochastic filter's texel choice in u and v; 0.5
    /// picks the nearest texel.
    pub jitter: [f32; 2],
}

impl Default for PtexFilterOptions {
    fn default() -> Self {
        PtexFilterOptions {
            filter: PtexFilterType::Box,
            lerp: false,
            sharpness: 0.0,
            noedgeblend: false,
            width: 1.0,
            blur: 0.0,
            first_channel: 0,
            jitter: [0.5, 0.5],
        }
    }
}

/// What [`ptex_sample`] reports beside the values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtexSampled {
    /// Channels written.
    pub channels: usize,
    /// Whether every unit the filter needed was available.
    pub resident: bool,
}

/// Evaluate `options.filter` at (`u`, `v`) of `face` over the footprint (`dudx`, `dvdx`),
/// (`dudy`, `dvdy`), writing normalised values to `out` (see the module documentation).
#[allow(clippy::too_many_arguments)]
pub fn ptex_sample<F: PtexFaces + ?Sized>(
    src: &F,
    face: u32,
    u: f32,
    v: f32,
    dudx: f32,
    dvdx: f32,
    dudy: f32,
    dvdy: f32,
    options: &PtexFilterOptions,
    out: &mut [f32],
) -> PtexSampled {
    let tex = *src.texture();
    let first = options.first_channel;
    let nchan = out.len().min(tex.num_channels.saturating_sub(first));
    let zero = |out: &mut [f32]| {
        out.iter_mut().for_each(|x| *x = 0.0);
        PtexSampled {
            channels: 0,
            resident: true,
        }
    };
    let Some(info) = src.face_info(face).copied() else {
        return zero(out);
    };
    let finite = [u, v, dudx, dvdx, dudy, dvdy, options.width, options.blur]
        .iter()
        .all(|x| x.is_finite());
    if nchan == 0 || !finite {
        return zero(out);
    }
    let out = &mut out[..nchan];
    let channels = Channels {
        first,
        count: nchan,
        data_type: tex.data_type,
        pixel_size: tex.pixel_size(),
    };
    if info.is_neighborhood_constant() && options.filter != PtexFilterType::StochasticPoint {
        channels.constant(src, face, out);
        return PtexSampled {
            channels: nchan,
            resident: true,
        };
    }
    let lookup = Lookup {
        face,
        u,
        v,
        uw1: dudx,
        vw1: dvdx,
        uw2: dudy,
        vw2: dvdy,
    };
    let resident = match (options.filter, tex.mesh_type) {
        (PtexFilterType::Point, MeshType::Quad) => point::quad(src, &channels, &lookup, out),
        (PtexFilterType::Point, MeshType::Triangle) => {
            point::triangle(src, &channels, &lookup, out)
        }
        (PtexFilterType::StochasticPoint, _) => {
            point::stochastic(src, &channels, &lookup, options, out)
        }
        (_, MeshType::Triangle) => triangle::eval(src, &channels, &lookup, options, out),
        (_, MeshType::Quad) => separable::eval(src, &channels, &lookup, options, out),
    };
    if !resident && options.filter != PtexFilterType::StochasticPoint {
        channels.constant(src, face, out);
    }
    PtexSampled {
        channels: nchan,
        resident,
    }
}

/// One lookup: the face, the point and the footprint vectors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lookup {
    pub face: u32,
    pub u: f32,
    pub v: f32,
    pub uw1: f32,
    pub vw1: f32,
    pub uw2: f32,
    pub vw2: f32,
}

/// The channels a lookup reads and how their values are stored.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Channels {
    pub first: usize,
    pub count: usize,
    pub data_type: DataType,
    pub pixel_size: usize,
}

impl Channels {
    /// The stored value of channel `c` (relative to `first`) of the texel at byte offset
    /// `at`, unscaled (`u8` 0..=255), as the reference's `(float)*val`.
    #[inline]
    pub fn raw(&self, bytes: &[u8], at: usize, c: usize) -> f32 {
        let i = at + (self.first + c) * self.data_type.size();
        match self.data_type {
            DataType::U8 => bytes.get(i).map_or(0.0, |&b| f32::from(b)),
            DataType::U16 => bytes
                .get(i..i + 2)
                .map_or(0.0, |b| f32::from(u16::from_le_bytes([b[0], b[1]]))),
            DataType::Half => bytes.get(i..i + 2).map_or(0.0, |b| {
                values::half_to_f32(u16::from_le_bytes([b[0], b[1]]))
            }),
            DataType::F32 => bytes
                .get(i..i + 4)
                .map_or(0.0, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        }
    }

    /// `acc[c] += raw(texel, c) * weight` for every channel, as `applyConst`.
    #[inline]
    pub fn accumulate(&self, acc: &mut [f32], bytes: &[u8], at: usize, weight: f32) {
        for (c, a) in acc.iter_mut().enumerate() {
            *a += self.raw(bytes, at, c) * weight;
        }
    }

    /// The normalised value of the texel `texel` (`ConvertToFloat`).
    pub fn convert(&self, texel: &[u8], out: &mut [f32]) {
        let inv = self.data_type.one_value_inv();
        for (c, o) in out.iter_mut().enumerate() {
            *o = self.raw(texel, 0, c) * inv;
        }
    }

    /// The face's constant colour into `out` (zeros for a face the store lacks).
    pub fn constant<F: PtexFaces + ?Sized>(&self, src: &F, face: u32, out: &mut [f32]) {
        match src.constant(face) {
            Some(texel) => self.convert(texel, out),
            None => out.iter_mut().for_each(|x| *x = 0.0),
        }
    }
}

/// The reference's `calcResFromWidth`: `ceil(log2(1 / w))` read from the float's exponent.
#[inline]
pub(crate) fn res_from_width(w: f32) -> i32 {
    127 - ((w.to_bits() >> 23) & 0xff) as i32
}

/// `1 / 2^power` as the reference's `reciprocalPow2` (power in -126..=127).
#[inline]
pub(crate) fn reciprocal_pow2(power: i32) -> f32 {
    f32::from_bits((((127 - power).clamp(1, 254)) as u32) << 23)
}
