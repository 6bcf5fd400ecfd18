//! The reference's `PtexSeparableFilter` for quad meshes: border modes, subfaces, the kernel
//! split across edges and corners, and its application to face data (constant, packed or
//! tiled), summed in the reference's order.

use super::apply::{apply_texels, apply_window, Window};
use super::build::{kernel_of, Builder, SmallAxis};
use super::kernel::Kernel;
use super::{Channels, Lookup, PtexFaces, PtexFilterOptions, Texels};
use crate::sampling::rounding::floor;
use crate::sources::ptex::{BorderMode, EdgeFilterMode, FaceInfo, Res};

/// How deep subface transitions may nest (a valid mesh needs two; a hostile adjacency
/// could loop).
const MAX_DEPTH: u32 = 8;

/// The state of one evaluation.
/// Per-channel sums: on the stack for up to 16 channels (every file in practice; a lookup
/// allocates nothing then), on the heap beyond.
enum Sums {
    Small([f32; 16], usize),
    Big(Vec<f32>),
}

impl Sums {
    fn new(n: usize) -> Sums {
        if n <= 16 {
            Sums::Small([0.0; 16], n)
        } else {
            Sums::Big(vec![0.0; n])
        }
    }
}

impl Default for Sums {
    fn default() -> Self {
        Sums::Small([0.0; 16], 0)
    }
}

impl std::ops::Deref for Sums {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        match self {
            Sums::Small(a, n) => &a[..*n],
            Sums::Big(v) => v,
        }
    }
}

impl std::ops::DerefMut for Sums {
    fn deref_mut(&mut self) -> &mut [f32] {
        match self {
            Sums::Small(a, n) => &mut a[..*n],
            Sums::Big(v) => v,
        }
    }
}

struct Eval<'a, F: PtexFaces + ?Sized> {
    src: &'a F,
    ch: &'a Channels,
    noedgeblend: bool,
    u_mode: BorderMode,
    v_mode: BorderMode,
    tanvec: bool,
    result: Sums,
    weight: f32,
    resident: bool,
}

/// Evaluate a separable filter; false if a unit was missing.
pub(crate) fn eval<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    l: &Lookup,
    options: &PtexFilterOptions,
    out: &mut [f32],
) -> bool {
    let tex = *src.texture();
    let Some(f) = src.face_info(l.face).copied() else {
        return true;
    };
    let (mut u, mut v) = (l.u, l.v);
    let uw = l.uw1.abs() + l.uw2.abs();
    let vw = l.vw1.abs() + l.vw2.abs();
    let mut black = false;
    match tex.u_border {
        BorderMode::Clamp => u = u.clamp(0.0, 1.0),
        BorderMode::Periodic => u -= floor(u),
        BorderMode::Black => black |= u <= -1.0 || u >= 2.0,
    }
    match tex.v_border {
        BorderMode::Clamp => v = v.clamp(0.0, 1.0),
        BorderMode::Periodic => v -= floor(v),
        BorderMode::Black => black |= v <= -1.0 || v >= 2.0,
    }
    if black {
        out.iter_mut().for_each(|x| *x = 0.0);
        return true;
    }
    let builder = Builder::new(options.filter, options.lerp, options.sharpness);
    if !f.is_subface() {
        let (uw, vw) = (
            uw * options.width + options.blur,
            vw * options.width + options.blur,
        );
        if let Some(axes) = builder.small_axes(u, v, uw, vw, f.res) {
            if let Some(resident) = small_inside(src, ch, l.face, &f, axes, out) {
                return resident;
            }
            return apply_kernel(src, ch, l.face, &f, &mut kernel_of(axes), options, out);
        }
    }
    eval_kernel(src, ch, l.face, &f, [u, v, uw, vw], options, out)
}

/// The box and bilinear filters' common case without a [`Kernel`]: a face (not a subface)
/// whose window (at most 3×3 texels, no zero weight at its ends) lies inside it, in
/// one unit. `None` where the general path must run (the window crosses an edge, or the
/// unit is tiled). The sums are the general path's to the bit: the same weights, products
/// and order.
pub(super) fn small_inside<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    face: u32,
    f: &FaceInfo,
    [au, av]: [SmallAxis; 2],
    out: &mut [f32],
) -> Option<bool> {
    let ((u0, ku), (v0, kv)) = ((au.start, au.weights()), (av.start, av.weights()));
    let res = Res::new(au.log2, av.log2);
    let inside = |start: i32, n: usize, texels: usize| start >= 0 && start as usize + n <= texels;
    if !inside(u0, ku.len(), res.u()) || !inside(v0, kv.len(), res.v()) {
        return None;
    }
    let w = Window {
        row_texels: res.u(),
        u: u0,
        v: v0,
        ku,
        kv,
    };
    let mut acc = Sums::new(ch.count);
    let resident = if f.is_constant() {
        apply_constant(src, ch, face, w.weight(), &mut acc)
    } else {
        src.untiled_texels(face, res, &mut |t| apply_window(ch, &w, t, &mut acc))?
    };
    normalise(ch, &acc, w.weight(), out);
    Some(resident)
}

/// `acc += constant(face) × weight`; false if the store lacks the face's constant.
#[inline(always)]
fn apply_constant<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    face: u32,
    weight: f32,
    acc: &mut [f32],
) -> bool {
    match src.constant(face) {
        Some(texel) => {
            ch.accumulate(acc, texel, 0, weight);
            true
        }
        None => false,
    }
}

/// The filtered values: the sums divided by the kernel's weight, normalised as stored.
#[inline(always)]
fn normalise(ch: &Channels, sums: &[f32], weight: f32, out: &mut [f32]) {
    let scale = 1.0 / (weight * ch.data_type.one_value());
    for (o, r) in out.iter_mut().zip(sums) {
        *o = r * scale;
    }
}

/// The general separable filter (`PtexSeparableFilter::eval` after the border modes): the
/// kernel built, split across edges and corners, and applied.
pub(super) fn eval_kernel<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    face: u32,
    f: &FaceInfo,
    [u, v, mut uw, mut vw]: [f32; 4],
    options: &PtexFilterOptions,
    out: &mut [f32],
) -> bool {
    let builder = Builder::new(options.filter, options.lerp, options.sharpness);
    let mut k = if f.is_subface() {
        uw = uw * options.width + options.blur * 2.0;
        vw = vw * options.width + options.blur * 2.0;
        let res = Res::new(f.res.ulog2 + 1, f.res.vlog2 + 1);
        let mut k = builder.build(u * 0.5, v * 0.5, uw * 0.5, vw * 0.5, res);
        if k.res.ulog2 == 0 {
            k.upres_u();
        }
        if k.res.vlog2 == 0 {
            k.upres_v();
        }
        k.res = Res::new(k.res.ulog2 - 1, k.res.vlog2 - 1);
        k
    } else {
        uw = uw * options.width + options.blur;
        vw = vw * options.width + options.blur;
        builder.build(u, v, uw, vw, f.res)
    };
    apply_kernel(src, ch, face, f, &mut k, options, out)
}

/// Apply kernel `k` at `face`: its zero weights dropped, split across edges and corners.
fn apply_kernel<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    face: u32,
    f: &FaceInfo,
    k: &mut Kernel,
    options: &PtexFilterOptions,
    out: &mut [f32],
) -> bool {
    let tex = *src.texture();
    k.strip_zeros();
    let mut e = Eval {
        src,
        ch,
        noedgeblend: options.noedgeblend,
        u_mode: tex.u_border,
        v_mode: tex.v_border,
        tanvec: tex.edge_filter == EdgeFilterMode::TanVec,
        result: Sums::new(ch.count),
        weight: k.weight(),
        resident: true,
    };
    e.split_and_apply(k, face, f, 0);
    normalise(ch, &e.result, e.weight, out);
    e.resident
}

impl<F: PtexFaces + ?Sized> Eval<'_, F> {
    fn info(&self, face: i32) -> Option<FaceInfo> {
        u32::try_from(face)
            .ok()
            .and_then(|f| self.src.face_info(f).copied())
    }

    fn split_and_apply(&mut self, k: &mut Kernel, face: u32, f: &FaceInfo, depth: u32) {
        let (ru, rv) = (k.res.u() as i32, k.res.v() as i32);
        let split_r = k.u + k.uw > ru;
        let split_l = k.u < 0;
        let split_t = k.v + k.vw > rv;
        let split_b = k.v < 0;
        let adj = |e: usize| f.adjfaces[e] >= 0;
        if self.noedgeblend || depth >= MAX_DEPTH {
            if split_r {
                k.merge_r(self.u_mode);
            }
            if split_l {
                k.merge_l(self.u_mode);
            }
            if split_t {
                k.merge_t(self.v_mode);
            }
            if split_b {
                k.merge_b(self.v_mode);
            }
            self.apply(k, face, f);
            return;
        }
        if split_r {
            if adj(1) {
                let mut ka = k.split_r();
                if split_t {
                    if adj(2) {
                        let mut kc = ka.split_t();
                        self.apply_to_corner(&mut kc, face, f, 2, depth);
                    } else {
                        ka.merge_t(self.v_mode);
                    }
                }
                if split_b {
                    if adj(0) {
                        let mut kc = ka.split_b();
                        self.apply_to_corner(&mut kc, face, f, 1, depth);
                    } else {
                        ka.merge_b(self.v_mode);
                    }
                }
                self.apply_across_edge(&mut ka, face, f, 1, depth);
            } else {
                k.merge_r(self.u_mode);
            }
        }
        if split_l {
            if adj(3) {
                let mut ka = k.split_l();
                if split_t {
                    if adj(2) {
                        let mut kc = ka.split_t();
                        self.apply_to_corner(&mut kc, face, f, 3, depth);
                    } else {
                        ka.merge_t(self.v_mode);
                    }
                }
                if split_b {
                    if adj(0) {
                        let mut kc = ka.split_b();
                        self.apply_to_corner(&mut kc, face, f, 0, depth);
                    } else {
                        ka.merge_b(self.v_mode);
                    }
                }
                self.apply_across_edge(&mut ka, face, f, 3, depth);
            } else {
                k.merge_l(self.u_mode);
            }
        }
        if split_t {
            if adj(2) {
                let mut ka = k.split_t();
                self.apply_across_edge(&mut ka, face, f, 2, depth);
            } else {
                k.merge_t(self.v_mode);
            }
        }
        if split_b {
            if adj(0) {
                let mut ka = k.split_b();
                self.apply_across_edge(&mut ka, face, f, 0, depth);
            } else {
                k.merge_b(self.v_mode);
            }
        }
        self.apply(k, face, f);
    }

    fn apply_across_edge(&mut self, k: &mut Kernel, face: u32, f: &FaceInfo, eid: i32, depth: u32) {
        let mut afid = f.adjfaces[eid as usize];
        let mut aeid = i32::from(f.adj_edge(eid as u8));
        let Some(mut af) = self.info(afid) else {
            return;
        };
        let mut rot = eid - aeid + 2;
        if f.is_subface() != af.is_subface() {
            if af.is_subface() {
                let primary = k.adjust_main_to_subface(eid);
                if !primary {
                    let neid = (aeid + 3) % 4;
                    afid = af.adjfaces[neid as usize];
                    aeid = i32::from(af.adj_edge(neid as u8));
                    let Some(next) = self.info(afid) else {
                        return;
                    };
                    af = next;
                    rot += neid - aeid + 2;
                }
            } else {
                let primary = af.adjfaces[aeid as usize] == face as i32;
                k.adjust_subface_to_main(eid - i32::from(primary));
            }
        }
        k.rotate(rot);
        if af.is_subface() {
            self.split_and_apply(k, afid as u32, &af, depth + 1);
        } else {
            self.apply(k, afid as u32, &af);
        }
    }

    fn apply_to_corner(&mut self, k: &mut Kernel, face: u32, f: &FaceInfo, eid: i32, depth: u32) {
        const MAX_VALENCE: usize = 10;
        let mut afid = face as i32;
        let mut aeid = eid;
        let mut af = *f;
        let mut prev_sub = af.is_subface();
        let mut corners: [(i32, i32, Option<FaceInfo>); MAX_VALENCE] = [(0, 0, None); MAX_VALENCE];
        let mut num = 0i32;
        for (i, corner) in corners.iter_mut().enumerate() {
            let prev_face = afid;
            afid = af.adjfaces[(aeid & 3) as usize];
            aeid = (i32::from(af.adj_edge(aeid as u8)) + 1) % 4;
            if afid < 0 || (afid == face as i32 && aeid == eid) {
                num = i as i32 - 2;
                break;
            }
            let Some(next) = self.info(afid) else {
                return;
            };
            af = next;
            *corner = (afid, aeid, Some(af));
            let sub = af.is_subface();
            if prev_sub && !sub && af.adjfaces[((aeid + 3) % 4) as usize] == prev_face {
                let primary = i32::from(i == 1);
                k.adjust_subface_to_main(eid + primary * 2);
                k.rotate(eid - aeid + 3 - primary);
                self.split_and_apply(k, afid as u32, &af, depth + 1);
                return;
            }
            prev_sub = sub;
        }
        if num == 1 {
            if let (cf, ce, Some(cinfo)) = corners[1] {
                self.apply_to_corner_face(k, f, eid, cf as u32, &cinfo, ce, depth);
            }
        } else if num > 1 {
            k.rotate(eid + 2);
            let initial = k.weight();
            let new_weight = k.make_symmetric(initial);
            for &(cf, ce, cinfo) in &corners[1..=num as usize] {
                if let Some(cinfo) = cinfo {
                    let mut kc = *k;
                    self.apply_to_corner_face(&mut kc, f, 2, cf as u32, &cinfo, ce, depth);
                }
            }
            self.weight += new_weight * num as f32 - initial;
        } else {
            self.weight -= k.weight();
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn apply_to_corner_face(
        &mut self,
        k: &mut Kernel,
        f: &FaceInfo,
        eid: i32,
        cfid: u32,
        cf: &FaceInfo,
        ceid: i32,
        depth: u32,
    ) {
        if f.is_subface() != cf.is_subface() {
            if cf.is_subface() {
                k.adjust_main_to_subface(eid + 3);
            } else {
                k.adjust_subface_to_main(eid + 3);
            }
        }
        k.rotate(eid - ceid + 2);
        if cf.is_subface() {
            self.split_and_apply(k, cfid, cf, depth + 1);
        } else {
            self.apply(k, cfid, cf);
        }
    }

    /// Apply the kernel (now inside the face) to `face`'s data.
    fn apply(&mut self, k: &mut Kernel, face: u32, f: &FaceInfo) {
        if k.uw <= 0 || k.vw <= 0 {
            return;
        }
        while k.res.ulog2 > f.res.ulog2.max(0) {
            k.downres_u();
        }
        while k.res.vlog2 > f.res.vlog2.max(0) {
            k.downres_v();
        }
        // A kernel outside the face (only from a corrupt adjacency) is clipped, never read
        // out of bounds.
        let (ru, rv) = (k.res.u() as i32, k.res.v() as i32);
        if k.u < 0
            || k.v < 0
            || k.u + k.uw > ru
            || k.v + k.vw > rv
            || k.res.ulog2 < 0
            || k.res.vlog2 < 0
        {
            return;
        }
        let tanvec = self.tanvec && self.ch.count >= 2 && k.rot > 0;
        let mut local = Sums::new(if tanvec { self.ch.count } else { 0 });
        let acc = &mut self.result[..];
        let res = if f.is_constant() {
            Res::new(0, 0)
        } else {
            k.res
        };
        self.resident &= Self::apply_data(
            self.src,
            self.ch,
            k,
            face,
            res,
            acc,
            tanvec.then_some(&mut local[..]),
        );
        if tanvec {
            let (r0, r1) = (local[0], local[1]);
            match k.rot {
                1 => {
                    acc[0] -= r1;
                    acc[1] += r0;
                }
                2 => {
                    acc[0] -= r0;
                    acc[1] -= r1;
                }
                3 => {
                    acc[0] += r1;
                    acc[1] -= r0;
                }
                _ => {
                    acc[0] += r0;
                    acc[1] += r1;
                }
            }
            for i in 2..self.ch.count {
                acc[i] += local[i];
            }
        }
    }

    /// Apply `k` to `face` at `res` (tile by tile where the store tiles it), into `acc`,
    /// or into `rotated` (tangent vectors, rotated afterwards) for data that is not one
    /// constant: as the reference, a constant face or reduction is not rotated.
    fn apply_data(
        src: &F,
        ch: &Channels,
        k: &Kernel,
        face: u32,
        res: Res,
        acc: &mut [f32],
        mut rotated: Option<&mut [f32]>,
    ) -> bool {
        let ch = *ch;
        if res == Res::new(0, 0) {
            return apply_constant(src, &ch, face, k.weight(), acc);
        }
        let untiled = src.untiled_texels(face, res, &mut |t| match (t, &mut rotated) {
            (Texels::Packed(_), Some(dst)) => apply_texels(&ch, k, t, dst),
            _ => apply_texels(&ch, k, t, acc),
        });
        if let Some(resident) = untiled {
            return resident;
        }
        let Some(tiling) = src.tiling(face, res) else {
            return false; // not tiled after all: only a store contradicting itself
        };
        let dst: &mut [f32] = match rotated {
            Some(r) => r,
            None => acc,
        };
        let (tru, trv) = (tiling.tile_res.u() as i32, tiling.tile_res.v() as i32);
        let mut kt = Kernel::new(tiling.tile_res);
        let mut resident = true;
        let (ku, kv) = (k.ku(), k.kv());
        let (mut v, mut vw) = (k.v, k.vw);
        while vw > 0 {
            let tile_v = v / trv;
            let tv0 = v % trv;
            let tvw = vw.min(trv - tv0);
            let kv_part = &kv[(v - k.v) as usize..(v - k.v + tvw) as usize];
            let (mut u, mut uw) = (k.u, k.uw);
            while uw > 0 {
                let tile_u = u / tru;
                let tu0 = u % tru;
                let tuw = uw.min(tru - tu0);
                kt.set_ku(tu0, &ku[(u - k.u) as usize..(u - k.u + tuw) as usize]);
                kt.set_kv(tv0, kv_part);
                let tile = tile_v as usize * tiling.ntiles_u + tile_u as usize;
                resident &= src.texels(face, res, tile, &mut |t| apply_texels(&ch, &kt, t, dst));
                uw -= tuw;
                u += tuw;
            }
            vw -= tvw;
            v += tvw;
        }
        resident
    }
}
