//! Point sampling: the reference's point filters (quads and triangles, full resolution)
//! and the stochastic two-level point filter.
//!
//! # Stochastic two-level point filter
//!
//! The footprint's width in face uv along each axis is `(|dudx| + |dudy|) · width + blur`
//! (likewise v); its level of detail is `lod = max(0, log2(w_u · 2^ulog2),
//! log2(w_v · 2^vlog2))`, clamped to the face's coarsest level, `max(ulog2, vlog2)`. Level
//! `k` is the face reduced by `k` in each direction, each log stopping at 0 (the level
//! where both reach 0 is the face's constant colour). The levels `floor(lod)` and the next
//! are read, one texel each, and blended by the fraction (a level of weight 0 is not
//! read). In each level of `res` texels the texel index is
//! `floor(u · res − 0.5 + jitter_u)` clamped into the face: with a uniform random jitter
//! the texel is chosen with its bilinear weight, so the average over many lookups is the
//! bilinear filter; jitter 0.5 picks the nearest texel. Triangles use the point rule of
//! triangles at the jittered point. A texel whose unit is missing counts as the face's
//! constant colour and the lookup is reported non-resident.

use super::{Channels, Lookup, PtexFaces, PtexFilterOptions, Texels};
use crate::sampling::rounding::floor;
use crate::sources::ptex::Res;

/// The texel (`u`, `v`) of `face` at `res` into `out`, normalised; false if missing.
fn texel<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    face: u32,
    res: Res,
    u: usize,
    v: usize,
    out: &mut [f32],
) -> bool {
    let constant = src.face_info(face).is_none_or(|f| f.is_constant());
    if constant || res == Res::new(0, 0) {
        ch.constant(src, face, out);
        return true;
    }
    let (tile, tu, tv, row) = match src.tiling(face, res) {
        Some(t) => {
            let (tu, tv) = (u >> t.tile_res.ulog2, v >> t.tile_res.vlog2);
            let tile = tv * t.ntiles_u + tu;
            let (lu, lv) = (u - (tu << t.tile_res.ulog2), v - (tv << t.tile_res.vlog2));
            (tile, lu, lv, t.tile_res.u())
        }
        None => (0, u, v, res.u()),
    };
    let inv = ch.data_type.one_value_inv();
    src.texels(face, res, tile, &mut |t| {
        let (bytes, at) = match t {
            Texels::Constant(b) => (b, 0),
            Texels::Packed(b) => (b, (tv * row + tu) * ch.pixel_size),
        };
        for (c, o) in out.iter_mut().enumerate() {
            *o = ch.raw(bytes, at, c) * inv;
        }
    })
}

/// The reference's `PtexPointFilter`: the texel containing (u, v) at full resolution.
pub(crate) fn quad<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    l: &Lookup,
    out: &mut [f32],
) -> bool {
    let Some(f) = src.face_info(l.face).copied() else {
        return true;
    };
    let (ru, rv) = (f.res.u(), f.res.v());
    let ui = ((l.u * ru as f32) as i64).clamp(0, ru as i64 - 1) as usize;
    let vi = ((l.v * rv as f32) as i64).clamp(0, rv as i64 - 1) as usize;
    texel(src, ch, l.face, f.res, ui, vi, out)
}

/// The texel of a triangle face at `res` holding (u, v): the even texel of the lower-left
/// half of its square, or the odd one of the upper-right half (stored flipped).
fn triangle_texel(res: Res, u: f32, v: f32) -> (usize, usize) {
    let r = res.u() as i64;
    let (ut, vt) = (u * r as f32, v * r as f32);
    let ui = (ut as i64).clamp(0, r - 1);
    let vi = (vt as i64).clamp(0, r - 1);
    let (uf, vf) = (ut - ui as f32, vt - vi as f32);
    if uf + vf <= 1.0 {
        (ui as usize, vi as usize)
    } else {
        ((r - 1 - vi) as usize, (r - 1 - ui) as usize)
    }
}

/// The reference's `PtexPointFilterTri`.
pub(crate) fn triangle<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    l: &Lookup,
    out: &mut [f32],
) -> bool {
    let Some(f) = src.face_info(l.face).copied() else {
        return true;
    };
    let (ui, vi) = triangle_texel(f.res, l.u, l.v);
    texel(src, ch, l.face, f.res, ui, vi, out)
}

/// The stochastic two-level point filter (module documentation); false if a texel was
/// missing.
pub(crate) fn stochastic<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    l: &Lookup,
    options: &PtexFilterOptions,
    out: &mut [f32],
) -> bool {
    let Some(f) = src.face_info(l.face).copied() else {
        return true;
    };
    let triangle = src.texture().mesh_type == crate::sources::ptex::MeshType::Triangle;
    let wu = (l.uw1.abs() + l.uw2.abs()) * options.width + options.blur;
    let wv = (l.vw1.abs() + l.vw2.abs()) * options.width + options.blur;
    let (ul, vl) = (i32::from(f.res.ulog2), i32::from(f.res.vlog2));
    let top = ul.max(vl);
    let lod_of = |w: f32, log2: i32| {
        if w > 0.0 {
            w.log2() + log2 as f32
        } else {
            f32::NEG_INFINITY
        }
    };
    let lod = lod_of(wu, ul).max(lod_of(wv, vl)).clamp(0.0, top as f32);
    let l0 = (floor(lod) as i32).min(top);
    let t = if l0 < top { lod - l0 as f32 } else { 0.0 };
    let (u, v) = (l.u.clamp(0.0, 1.0), l.v.clamp(0.0, 1.0));
    let mut resident = true;
    let mut level_value = |level: i32, dst: &mut [f32]| {
        let res = Res::new((ul - level).max(0) as i8, (vl - level).max(0) as i8);
        let (ru, rv) = (res.u() as f32, res.v() as f32);
        let pick = |x: f32, r: f32, j: f32| {
            (floor(x * r - 0.5 + j) as i64).clamp(0, r as i64 - 1) as usize
        };
        let (ui, vi) = if triangle {
            let (ju, jv) = (
                (options.jitter[0] - 0.5) / ru,
                (options.jitter[1] - 0.5) / rv,
            );
            triangle_texel(res, u + ju, v + jv)
        } else {
            (
                pick(u, ru, options.jitter[0]),
                pick(v, rv, options.jitter[1]),
            )
        };
        if !texel(src, ch, l.face, res, ui, vi, dst) {
            resident = false;
            ch.constant(src, l.face, dst);
        }
    };
    level_value(l0, out);
    if t > 0.0 {
        let mut next = vec![0f32; out.len()];
        level_value(l0 + 1, &mut next);
        for (o, n) in out.iter_mut().zip(&next) {
            *o = *o * (1.0 - t) + n * t;
        }
    }
    resident
}
