//! The reference's `PtexTriangleFilter`: a Gaussian over the elliptical footprint in a
//! triangle's barycentric frame, split across the three edges and reoriented into each
//! neighbour's frame; texels are the "even" (lower-left) and "odd" (upper-right, stored
//! flipped) triangles of each square texel.

use super::{res_from_width, Channels, Lookup, PtexFaces, PtexFilterOptions, Texels};
use crate::sources::ptex::{FaceInfo, Res};

/// Kernel width as a multiple of the filter width (the reference's
/// `PtexTriangleKernelWidth`).
const KERNEL_WIDTH: f32 = 3.5;

/// How many edges a kernel may cross (it shrinks at each; this only bounds a corrupt
/// adjacency).
const MAX_DEPTH: u32 = 16;

/// The kernel in normalised triangle coordinates.
#[derive(Clone, Copy, Debug)]
struct Kernel {
    res: Res,
    u: f32,
    v: f32,
    u1: f32,
    v1: f32,
    w1: f32,
    u2: f32,
    v2: f32,
    w2: f32,
    a: f32,
    b: f32,
    c: f32,
}

/// The kernel over one half (even or odd) of the texels, in texel units.
#[derive(Clone, Copy, Debug)]
struct Iter {
    rowlen: i32,
    u: f32,
    v: f32,
    u1: i32,
    v1: i32,
    w1: i32,
    u2: i32,
    v2: i32,
    w2: i32,
    a: f32,
    b: f32,
    c: f32,
    valid: bool,
    wscale: f32,
}

#[inline]
fn gaussian(x_squared: f32) -> f32 {
    f64::from(-0.5 * KERNEL_WIDTH * KERNEL_WIDTH * x_squared).exp() as f32
}

/// Evaluate the triangle filter; false if a unit was missing.
pub(crate) fn eval<F: PtexFaces + ?Sized>(
    src: &F,
    ch: &Channels,
    l: &Lookup,
    options: &PtexFilterOptions,
    out: &mut [f32],
) -> bool {
    let Some(f) = src.face_info(l.face).copied() else {
        return true;
    };
    let (u, v) = (l.u.clamp(0.0, 1.0), l.v.clamp(0.0, 1.0));
    let k = build(u, v, l, options.width, options.blur, f.res);
    let mut e = Eval {
        src,
        ch,
        result: vec![0.0; ch.count],
        weight: 0.0,
        resident: true,
    };
    e.split_and_apply(k, l.face, &f, 0);
    let scale = 1.0 / (e.weight * ch.data_type.one_value());
    for (o, r) in out.iter_mut().zip(&e.result) {
        *o = r * scale;
    }
    if !out.iter().all(|x| x.is_finite()) {
        // No texel weighed (the reference divides by zero, e.g. at u + v > 1): the face's
        // constant colour instead.
        ch.constant(src, l.face, out);
    }
    e.resident
}

fn build(u: f32, v: f32, l: &Lookup, width: f32, blur: f32, face_res: Res) -> Kernel {
    let sqrt3 = 1.732_050_8_f32;
    let sq = |x: f32| x * x;
    let scale_ac = 0.25 * width * width;
    let scale_b = -2.0 * scale_ac;
    let a = (l.vw1 * l.vw1 + l.vw2 * l.vw2) * scale_ac;
    let b = (l.uw1 * l.vw1 + l.uw2 * l.vw2) * scale_b;
    let c = (l.uw1 * l.uw1 + l.uw2 * l.uw2) * scale_ac;
    let mut ac = 0.75 * a;
    let bc = (sqrt3 / 2.0) * (b - a);
    let mut cc = 0.25 * a - 0.5 * b + c;
    let max_ecc = 15.0f32;
    let ecc_ratio = (max_ecc * max_ecc + 1.0) / (max_ecc * max_ecc - 1.0);
    let x = (sq(ac - cc) + sq(bc)).sqrt();
    let b_e = 0.5 * (ecc_ratio * x - (ac + cc));
    let b_t = sq(0.5 / face_res.u() as f32);
    let b_b = 0.25 * blur * blur;
    let bl = b_b.max(b_e.max(b_t));
    ac += bl;
    cc += bl;
    let m = (2.0 * (ac * cc - 0.25 * bc * bc) / (ac + cc + x)).sqrt();
    let reslog2 = res_from_width(2.0 * m).clamp(0, 30) as i8;
    let a = (4.0f64 / 3.0) as f32 * ac;
    let b = (2.0 / sqrt3) * bc + a;
    let c = -0.25 * a + 0.5 * b + cc;
    let s = KERNEL_WIDTH * KERNEL_WIDTH;
    let (a, b, c) = (a * s, b * s, c * s);
    let uw = c.sqrt().min(1.0);
    let vw = a.sqrt().min(1.0);
    let ww = (a - b + c).sqrt().min(1.0);
    let w = 1.0 - u - v;
    Kernel {
        res: Res::new(reslog2, reslog2),
        u,
        v,
        u1: u - uw,
        v1: v - vw,
        w1: w - ww,
        u2: u + uw,
        v2: v + vw,
        w2: w + ww,
        a,
        b,
        c,
    }
}

impl Kernel {
    #[allow(clippy::too_many_arguments)]
    fn set(&mut self, u: f32, v: f32, u1: f32, v1: f32, w1: f32, u2: f32, v2: f32, w2: f32) {
        (self.u, self.v) = (u, v);
        (self.u1, self.v1, self.w1) = (u1, v1, w1);
        (self.u2, self.v2, self.w2) = (u2, v2, w2);
    }

    /// u' = w, v' = u, w' = v.
    fn rotate1(&mut self) {
        let (a, b, c) = (self.a, self.b, self.c);
        (self.a, self.b, self.c) = (c, 2.0 * c - b, a + c - b);
    }

    /// u' = v, v' = w, w' = u.
    fn rotate2(&mut self) {
        let (a, b, c) = (self.a, self.b, self.c);
        (self.a, self.b, self.c) = (a + c - b, 2.0 * a - b, a);
    }

    /// Into the frame of the neighbour whose edge `aeid` is this face's edge `eid`.
    fn reorient(&mut self, eid: u8, aeid: u8) {
        let (u, v, w) = (self.u, self.v, 1.0 - self.u - self.v);
        let (u1, v1, w1, u2, v2, w2) = (self.u1, self.v1, self.w1, self.u2, self.v2, self.w2);
        match (eid, aeid) {
            (0, 0) => self.set(
                1.0 - u,
                -v,
                1.0 - u2,
                -v2,
                1.0 - w2,
                1.0 - u1,
                -v1,
                1.0 - w1,
            ),
            (0, 1) => {
                self.set(
                    1.0 - w,
                    1.0 - u,
                    1.0 - w2,
                    1.0 - u2,
                    -v2,
                    1.0 - w1,
                    1.0 - u1,
                    -v1,
                );
                self.rotate1();
            }
            (0, 2) => {
                self.set(
                    -v,
                    1.0 - w,
                    -v2,
                    1.0 - w2,
                    1.0 - u2,
                    -v1,
                    1.0 - w1,
                    1.0 - u1,
                );
                self.rotate2();
            }
            (1, 0) => {
                self.set(
                    1.0 - v,
                    -w,
                    1.0 - v2,
                    -w2,
                    1.0 - u2,
                    1.0 - v1,
                    -w1,
                    1.0 - u1,
                );
                self.rotate2();
            }
            (1, 1) => self.set(
                1.0 - u,
                1.0 - v,
                1.0 - u2,
                1.0 - v2,
                -w2,
                1.0 - u1,
                1.0 - v1,
                -w1,
            ),
            (1, 2) => {
                self.set(
                    -w,
                    1.0 - u,
                    -w2,
                    1.0 - u2,
                    1.0 - v2,
                    -w1,
                    1.0 - u1,
                    1.0 - v1,
                );
                self.rotate1();
            }
            (2, 0) => {
                self.set(
                    1.0 - w,
                    -u,
                    1.0 - w2,
                    -u2,
                    1.0 - v2,
                    1.0 - w1,
                    -u1,
                    1.0 - v1,
                );
                self.rotate1();
            }
            (2, 1) => {
                self.set(
                    1.0 - v,
                    1.0 - w,
                    1.0 - v2,
                    1.0 - w2,
                    -u2,
                    1.0 - v1,
                    1.0 - w1,
                    -u1,
                );
                self.rotate2();
            }
            (2, 2) => self.set(
                -u,
                1.0 - v,
                -u2,
                1.0 - v2,
                1.0 - w2,
                -u1,
                1.0 - v1,
                1.0 - w1,
            ),
            _ => {}
        }
    }

    fn iterators(&self) -> (Iter, Iter) {
        let resu = self.res.u() as f32;
        let finv = 1.0 / (resu * resu * (self.a * self.c - 0.25 * self.b * self.b));
        let (ak, bk, ck) = (self.a * finv, self.b * finv, self.c * finv);
        let third = (1.0f64 / 3.0) as f32;
        let at = |x: f32| (x * resu - third).ceil() as i32;
        let mut ke = Iter {
            rowlen: self.res.u() as i32,
            u: self.u * resu - third,
            v: self.v * resu - third,
            u1: at(self.u1),
            v1: at(self.v1),
            w1: at(self.w1),
            u2: at(self.u2),
            v2: at(self.v2),
            w2: at(self.w2),
            a: ak,
            b: bk,
            c: ck,
            valid: false,
            wscale: 1.0 / (resu * resu),
        };
        ke.valid = ke.u2 > ke.u1 && ke.v2 > ke.v1 && ke.w2 > ke.w1;
        let mut ko = Iter {
            u: (1.0 - self.v) * resu - third,
            v: (1.0 - self.u) * resu - third,
            u1: at(1.0 - self.v2),
            v1: at(1.0 - self.u2),
            w1: at(-self.w2),
            u2: at(1.0 - self.v1),
            v2: at(1.0 - self.u1),
            w2: at(-self.w1),
            a: ck,
            b: bk,
            c: ak,
            ..ke
        };
        ko.valid = ko.u2 > ko.u1 && ko.v2 > ko.v1 && ko.w2 > ko.w1;
        (ke, ko)
    }
}

impl Iter {
    /// Visit every texel of the footprint with its weight; the total weight.
    fn each(&self, mut visit: impl FnMut(usize, f32)) -> f32 {
        let ddq = 2.0 * self.a;
        let mut total = 0.0f32;
        for vi in self.v1..self.v2 {
            let xw = self.rowlen - vi;
            let x1 = self.u1.max(xw - self.w2);
            let x2 = self.u2.min(xw - self.w1);
            let uu = x1 as f32 - self.u;
            let vv = vi as f32 - self.v;
            let mut dq = self.a * (2.0 * uu + 1.0) + self.b * vv;
            let mut q = self.a * uu * uu + (self.b * uu + self.c * vv) * vv;
            for x in x1..x2 {
                if q < 1.0 {
                    let w = gaussian(q) * self.wscale;
                    total += w;
                    if vi >= 0 && x >= 0 {
                        visit((vi * self.rowlen + x) as usize, w);
                    }
                }
                q += dq;
                dq += ddq;
            }
        }
        total
    }
}

struct Eval<'a, F: PtexFaces + ?Sized> {
    src: &'a F,
    ch: &'a Channels,
    result: Vec<f32>,
    weight: f32,
    resident: bool,
}

impl<F: PtexFaces + ?Sized> Eval<'_, F> {
    fn split_and_apply(&mut self, mut k: Kernel, face: u32, f: &FaceInfo, depth: u32) {
        let adj = |e: usize| f.adjfaces[e] >= 0 && depth < MAX_DEPTH;
        if k.u1 < 0.0 && adj(2) {
            let mut ka = k;
            k.u1 = 0.0;
            ka.u2 = 0.0;
            self.across_edge(ka, f, 2, depth);
        }
        if k.v1 < 0.0 && adj(0) {
            let mut ka = k;
            k.v1 = 0.0;
            ka.v2 = 0.0;
            self.across_edge(ka, f, 0, depth);
        }
        if k.w1 < 0.0 && adj(1) {
            let mut ka = k;
            k.w1 = 0.0;
            ka.w2 = 0.0;
            self.across_edge(ka, f, 1, depth);
        }
        self.apply(k, face, f);
    }

    fn across_edge(&mut self, mut k: Kernel, f: &FaceInfo, eid: u8, depth: u32) {
        let afid = f.adjfaces[usize::from(eid)] as u32;
        let aeid = f.adj_edge(eid);
        let Some(af) = self.src.face_info(afid).copied() else {
            return;
        };
        k.reorient(eid, aeid);
        self.split_and_apply(k, afid, &af, depth + 1);
    }

    fn apply(&mut self, mut k: Kernel, face: u32, f: &FaceInfo) {
        let l = k.res.ulog2.min(f.res.ulog2);
        k.res = Res::new(l, l);
        k.u1 = k.u1.max(0.0);
        k.v1 = k.v1.max(0.0);
        k.w1 = k.w1.max(0.0);
        k.u2 = k.u2.min(1.0 - (k.v1 + k.w1));
        k.v2 = k.v2.min(1.0 - (k.w1 + k.u1));
        k.w2 = k.w2.min(1.0 - (k.u1 + k.v1));
        let (ke, ko) = k.iterators();
        if !ke.valid && !ko.valid {
            return;
        }
        let res = if f.is_constant() {
            Res::new(0, 0)
        } else {
            k.res
        };
        for it in [ke, ko] {
            if it.valid {
                self.apply_iter(&it, face, res);
            }
        }
    }

    fn apply_iter(&mut self, k: &Iter, face: u32, res: Res) {
        let ch = *self.ch;
        let mut acc = std::mem::take(&mut self.result);
        if res == Res::new(0, 0) {
            match self.src.constant(face) {
                Some(texel) => {
                    let w = k.each(|_, _| {});
                    ch.accumulate(&mut acc, texel, 0, w);
                    self.weight += w;
                }
                None => self.resident = false,
            }
        } else if let Some(tiling) = self.src.tiling(face, res) {
            let (tru, trv) = (tiling.tile_res.u() as i32, tiling.tile_res.v() as i32);
            let wbase = k.rowlen - tru;
            for tv in k.v1 / trv..=(k.v2 - 1) / trv {
                let voff = tv * trv;
                for tu in k.u1 / tru..=(k.u2 - 1) / tru {
                    let uoff = tu * tru;
                    let woff = wbase - uoff - voff;
                    let kt = Iter {
                        rowlen: tru,
                        u: k.u - uoff as f32,
                        v: k.v - voff as f32,
                        u1: (k.u1 - uoff).max(0),
                        u2: (k.u2 - uoff).min(tru),
                        v1: (k.v1 - voff).max(0),
                        v2: (k.v2 - voff).min(trv),
                        w1: k.w1 - woff,
                        w2: k.w2 - woff,
                        ..*k
                    };
                    let tile = tv as usize * tiling.ntiles_u + tu as usize;
                    let mut w = 0.0;
                    let ok = self.src.texels(face, res, tile, &mut |t| {
                        w = apply_texels(&ch, &kt, t, &mut acc);
                    });
                    self.weight += w;
                    self.resident &= ok;
                }
            }
        } else {
            let mut w = 0.0;
            let ok = self
                .src
                .texels(face, res, 0, &mut |t| w = apply_texels(&ch, k, t, &mut acc));
            self.weight += w;
            self.resident &= ok;
        }
        self.result = acc;
    }
}

/// Apply one iterator to `texels`; its weight.
fn apply_texels(ch: &Channels, k: &Iter, texels: Texels<'_>, acc: &mut [f32]) -> f32 {
    match texels {
        Texels::Constant(texel) => {
            let w = k.each(|_, _| {});
            ch.accumulate(acc, texel, 0, w);
            w
        }
        Texels::Packed(bytes) => {
            let ps = ch.pixel_size;
            k.each(|i, w| ch.accumulate(acc, bytes, i * ps, w))
        }
    }
}
