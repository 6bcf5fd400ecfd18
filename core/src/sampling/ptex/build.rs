//! Building the separable kernels of the reference's quad filters (`PtexFilters.cpp`): box,
//! bilinear, and the width-4 family (Gaussian and the general cubic), with their choice of
//! resolution from the filter width and the `lerp` blend towards the next lower one.

use super::kernel::Kernel;
use super::{reciprocal_pow2, res_from_width, PtexFilterType};
use crate::sampling::rounding::{ceil, floor};
use crate::sources::ptex::Res;

/// The most weights a builder makes along one axis (the reference's `kmax`).
const KMAX: usize = 10;

/// A kernel builder for one filter type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Builder {
    Box,
    Bilinear,
    Width4 { kernel: Width4, lerp: bool },
}

/// The kernel function of a width-4 filter.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Width4 {
    Gaussian,
    /// General cubic with the reference's seven coefficients.
    Cubic([f32; 7]),
}

impl Width4 {
    /// The general cubic of `sharpness` (B = 1 − sharpness, C = (1 − B) / 2).
    fn cubic(sharpness: f32) -> Width4 {
        let b = 1.0 - sharpness;
        Width4::Cubic([
            1.5 - b,
            1.5 * b - 2.5,
            1.0 - (1.0f64 / 3.0) as f32 * b,
            (1.0f64 / 3.0) as f32 * b - 0.5,
            2.5 - 1.5 * b,
            2.0 * b - 4.0,
            2.0 - (2.0f64 / 3.0) as f32 * b,
        ])
    }

    fn eval(self, x: f32) -> f32 {
        match self {
            Width4::Gaussian => f64::from(-2.0 * x * x).exp() as f32,
            Width4::Cubic(c) => {
                let x = x.abs();
                if x < 1.0 {
                    (c[0] * x + c[1]) * x * x + c[2]
                } else if x < 2.0 {
                    ((c[3] * x + c[4]) * x + c[5]) * x + c[6]
                } else {
                    0.0
                }
            }
        }
    }
}

impl Builder {
    /// The builder of `filter` (a quad filter other than point).
    pub fn new(filter: PtexFilterType, lerp: bool, sharpness: f32) -> Builder {
        let w4 = |kernel| Builder::Width4 { kernel, lerp };
        match filter {
            PtexFilterType::Bilinear => Builder::Bilinear,
            PtexFilterType::Gaussian => w4(Width4::Gaussian),
            PtexFilterType::Bicubic => w4(Width4::cubic(sharpness)),
            PtexFilterType::BSpline => w4(Width4::cubic(0.0)),
            PtexFilterType::CatmullRom => w4(Width4::cubic(1.0)),
            PtexFilterType::Mitchell => w4(Width4::cubic(2.0 / 3.0)),
            _ => Builder::Box,
        }
    }

    /// The kernel at (`u`, `v`) of widths `uw`, `vw` on a face of `face_res`.
    pub fn build(self, u: f32, v: f32, uw: f32, vw: f32, face_res: Res) -> Kernel {
        match self {
            Builder::Box => kernel_of(box_axes(u, v, uw, vw, face_res)),
            Builder::Bilinear => kernel_of(bilinear_axes(u, v, uw, vw, face_res)),
            Builder::Width4 { kernel, lerp } => {
                let mut k = Kernel::new(Res::new(0, 0));
                let mut w = [0f32; KMAX];
                let (ul, uk, un) = width4_axis(kernel, lerp, u, uw, face_res.ulog2, &mut w);
                k.set_ku(uk, &w[..un]);
                let mut w = [0f32; KMAX];
                let (vl, vk, vn) = width4_axis(kernel, lerp, v, vw, face_res.vlog2, &mut w);
                k.set_kv(vk, &w[..vn]);
                k.res = Res::new(ul, vl);
                k
            }
        }
    }
}

/// The resolution log2 (0..=face) for filter width `w` clamped to [1 texel, 1].
fn clamped_res(w: f32, face_log2: i8) -> (f32, i8) {
    let w = w.min(1.0).max(reciprocal_pow2(face_log2.into()));
    (w, res_from_width(w).clamp(0, i32::from(face_log2)) as i8)
}

/// The two axes of the box kernel at (`u`, `v`) of widths `uw`, `vw`.
#[inline(always)]
fn box_axes(u: f32, v: f32, uw: f32, vw: f32, face_res: Res) -> [SmallAxis; 2] {
    [
        box_axis(u, uw, face_res.ulog2),
        box_axis(v, vw, face_res.vlog2),
    ]
}

/// The two axes of the bilinear kernel at (`u`, `v`) of widths `uw`, `vw`.
#[inline(always)]
fn bilinear_axes(u: f32, v: f32, uw: f32, vw: f32, face_res: Res) -> [SmallAxis; 2] {
    [
        bilinear_axis(u, uw, face_res.ulog2),
        bilinear_axis(v, vw, face_res.vlog2),
    ]
}

/// One axis of a kernel of at most three weights (box and bilinear): its resolution
/// log2, first texel, and weights, with no zero weight at either end (as
/// [`Kernel::strip_zeros`] leaves them).
#[derive(Clone, Copy, Debug)]
pub(super) struct SmallAxis {
    pub log2: i8,
    pub start: i32,
    weights: [f32; 3],
    n: u8,
}

impl SmallAxis {
    /// The weights.
    #[inline(always)]
    pub fn weights(&self) -> &[f32] {
        &self.weights[..usize::from(self.n)]
    }
}

/// The kernel of two small axes.
#[inline(always)]
pub(super) fn kernel_of([u, v]: [SmallAxis; 2]) -> Kernel {
    let mut k = Kernel::new(Res::new(u.log2, v.log2));
    let n = |a: &SmallAxis| usize::from(a.n);
    k.set_small((u.start, u.weights, n(&u)), (v.start, v.weights, n(&v)));
    k
}

impl Builder {
    /// The two axes of a box or bilinear kernel (`None` for the width-4 kernels), as
    /// [`Builder::build`] makes them.
    #[inline]
    pub fn small_axes(
        self,
        u: f32,
        v: f32,
        uw: f32,
        vw: f32,
        face_res: Res,
    ) -> Option<[SmallAxis; 2]> {
        match self {
            Builder::Box => Some(box_axes(u, v, uw, vw, face_res)),
            Builder::Bilinear => Some(bilinear_axes(u, v, uw, vw, face_res)),
            Builder::Width4 { .. } => None,
        }
    }
}

/// One axis of the box kernel at `c` (face uv) for filter width `w` on a face of
/// `face_log2`: the texels the footprint covers, each weighted by the part covered.
#[inline(always)]
fn box_axis(c: f32, w: f32, face_log2: i8) -> SmallAxis {
    let (w, log2) = clamped_res(w, face_log2);
    let r = Res::new(log2, 0).u() as f32;
    let (c, w) = (c * r, w * r);
    let (c1, c2) = (c - 0.5 * w, c + 0.5 * w);
    let (f, cl) = (floor(c1), ceil(c2));
    let start = f as i32;
    let n = ((cl as i32) - start).clamp(1, 3) as usize;
    let (f1, f2) = (1.0 - (c1 - f), 1.0 - (cl - c2));
    let mut weights = [0f32; 3];
    if n == 1 {
        weights[0] = f1 + f2 - 1.0;
    } else {
        weights[0] = f1;
        weights[1..n - 1].iter_mut().for_each(|x| *x = 1.0);
        weights[n - 1] = f2;
    }
    // Never a zero weight to strip ([`Kernel::strip_zeros`]): f1 and f2 are 1 minus a
    // fraction below 1, and a single weight is kept whatever it is.
    SmallAxis {
        log2,
        start,
        weights,
        n: n as u8,
    }
}

/// One axis of the bilinear kernel at `c` (face uv) for filter width `w` on a face of
/// `face_log2`: the two texels around `c`, weighted `[1 − frac, frac]`.
#[inline(always)]
fn bilinear_axis(c: f32, w: f32, face_log2: i8) -> SmallAxis {
    let (_, log2) = clamped_res(w, face_log2);
    let pix = c * Res::new(log2, 0).u() as f32 - 0.5;
    let first = floor(pix);
    let frac = pix - first;
    // `Kernel::strip_zeros` drops a zero second weight (at a texel centre); the first,
    // 1 − frac, is never 0.
    SmallAxis {
        log2,
        start: first as i32,
        weights: [1.0 - frac, frac, 0.0],
        n: if frac == 0.0 { 1 } else { 2 },
    }
}

/// The reference's 2-unit cubic Hermite blur.
fn blur(x: f32) -> f32 {
    let x = x.abs();
    if x < 1.0 {
        (2.0 * x - 3.0) * x * x + 1.0
    } else {
        0.0
    }
}

/// One axis of a width-4 kernel (`buildKernelAxis`): (resolution log2, first texel, number
/// of weights written to `k`).
fn width4_axis(
    f: Width4,
    lerp: bool,
    u: f32,
    uw: f32,
    face_log2: i8,
    k: &mut [f32; KMAX],
) -> (i8, i32, usize) {
    let uw = uw.max(reciprocal_pow2(face_log2.into()));
    let mut log2 = res_from_width(uw).clamp(0, i32::from(face_log2));
    let resu = (1u32 << log2) as f32;
    let uwlo = 1.0 / resu;
    let lerp2 = if lerp { (uw - uwlo) / uwlo } else { 0.0 };
    let lerp1 = 1.0 - lerp2;

    if uw >= 0.25 {
        if uw < 0.5 {
            log2 = 2;
            let upix = u * 4.0 - 0.5;
            let u1 = (ceil(upix - 2.0) as i32) & !1;
            let u2 = (ceil(upix + 2.0) as i32 + 1) & !1;
            let n = ((u2 - u1).clamp(0, KMAX as i32)) as usize;
            let x1 = u1 as f32 - upix;
            let s = 1.0 / (uw + 0.75);
            for i in (0..n).step_by(2) {
                let xa = x1 + i as f32;
                let xb = xa + 1.0;
                let xc = (xa + xb) * 0.25;
                let (ka, kb, kc) = (f.eval(xa), f.eval(xb), blur(xc * s));
                k[i] = ka * lerp1 + kc * lerp2;
                k[i + 1] = kb * lerp1 + kc * lerp2;
            }
            return (log2 as i8, u1, n);
        } else if uw < 1.0 {
            let upix = u * 2.0 - 0.5;
            let start = floor(u - 0.5) as i32 * 2;
            let x1 = start as f32 - upix;
            let s = 1.0 / (uw * 1.5 + 0.5);
            for i in (0..4).step_by(2) {
                let xa = x1 + i as f32;
                let xb = xa + 1.0;
                let xc = (xa + xb) * 0.5;
                let (ka, kb, kc) = (blur(xa * s), blur(xb * s), blur(xc * s));
                k[i] = ka * lerp1 + kc * lerp2;
                k[i + 1] = kb * lerp1 + kc * lerp2;
            }
            return (1, start, 4);
        } else {
            let upix = u - 0.5;
            let ui = floor(upix);
            k[0] = blur(upix - ui);
            k[1] = 1.0 - k[0];
            return (0, ui as i32, 2);
        }
    }

    let upix = u * resu - 0.5;
    let uwpix = uw * resu;
    let dupix = 2.0 * uwpix;
    let mut u1 = ceil(upix - dupix) as i32;
    let mut u2 = ceil(upix + dupix) as i32;
    if lerp2 != 0.0 {
        u1 &= !1;
        u2 = (u2 + 1) & !1;
        let n = ((u2 - u1).clamp(0, KMAX as i32)) as usize;
        let step = 1.0 / uwpix;
        let x1 = (u1 as f32 - upix) * step;
        for i in (0..n).step_by(2) {
            let xa = x1 + i as f32 * step;
            let xb = xa + step;
            let xc = (xa + xb) * 0.5;
            let (ka, kb, kc) = (f.eval(xa), f.eval(xb), f.eval(xc));
            k[i] = ka * lerp1 + kc * lerp2;
            k[i + 1] = kb * lerp1 + kc * lerp2;
        }
        (log2 as i8, u1, n)
    } else {
        let n = ((u2 - u1).clamp(0, KMAX as i32)) as usize;
        let x1 = (u1 as f32 - upix) / uwpix;
        let step = 1.0 / uwpix;
        for (i, w) in k.iter_mut().enumerate().take(n) {
            *w = f.eval(x1 + i as f32 * step);
        }
        (log2 as i8, u1, n)
    }
}
