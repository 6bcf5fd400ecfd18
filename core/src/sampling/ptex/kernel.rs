//! The separable kernel of the reference's `PtexSeparableKernel`: weights in u and v over
//! a window of texels of one resolution, with the operations the filter needs to carry it
//! across edges (split, fold back, rotate, change of resolution, subface transitions).
//!
//! The weights live in fixed buffers with a start offset (the reference moves a pointer);
//! every operation keeps `start + width` within the buffer, and the widths the builders make
//! (at most 10, the reference's `kmax`) leave room for the doublings of `upres`.

use crate::sources::ptex::{BorderMode, Res};

/// Room for weights: the reference's `kmax` (10) doubled by up to two `upres`.
const CAP: usize = 40;

/// A separable kernel over texels `u..u+uw`, `v..v+vw` of resolution `res`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kernel {
    pub res: Res,
    pub u: i32,
    pub v: i32,
    pub uw: i32,
    pub vw: i32,
    ku_buf: [f32; CAP],
    kv_buf: [f32; CAP],
    ku0: usize,
    kv0: usize,
    /// Quarter turns applied so far (for tangent-vector data).
    pub rot: i32,
}

/// Sum of `w`, in order (the reference's `accumulate`).
#[inline]
pub(super) fn sum(w: &[f32]) -> f32 {
    w.iter().fold(0.0, |a, &x| a + x)
}

impl Kernel {
    /// An empty kernel at `res`.
    pub fn new(res: Res) -> Kernel {
        Kernel {
            res,
            u: 0,
            v: 0,
            uw: 0,
            vw: 0,
            ku_buf: [0.0; CAP],
            kv_buf: [0.0; CAP],
            ku0: 0,
            kv0: 0,
            rot: 0,
        }
    }

    /// The u weights (`uw` of them).
    pub fn ku(&self) -> &[f32] {
        &self.ku_buf[self.ku0..self.ku0 + self.uw.max(0) as usize]
    }

    /// The v weights (`vw` of them).
    pub fn kv(&self) -> &[f32] {
        &self.kv_buf[self.kv0..self.kv0 + self.vw.max(0) as usize]
    }

    /// Set the u weights (at most `CAP / 4`, which every builder respects).
    pub fn set_ku(&mut self, u: i32, w: &[f32]) {
        let n = w.len().min(CAP / 4);
        self.ku_buf[..n].copy_from_slice(&w[..n]);
        self.ku0 = 0;
        self.u = u;
        self.uw = n as i32;
    }

    /// Set the v weights (at most `CAP / 4`).
    pub fn set_kv(&mut self, v: i32, w: &[f32]) {
        let n = w.len().min(CAP / 4);
        self.kv_buf[..n].copy_from_slice(&w[..n]);
        self.kv0 = 0;
        self.v = v;
        self.vw = n as i32;
    }

    /// Set the u weights to the first `n` (at most 3) of `w`, and the v weights to the
    /// first `m` of `x`: a fixed-size copy (no call to copy a slice of unknown length).
    #[inline(always)]
    pub fn set_small(
        &mut self,
        (u, w, n): (i32, [f32; 3], usize),
        (v, x, m): (i32, [f32; 3], usize),
    ) {
        self.ku_buf[..3].copy_from_slice(&w);
        self.kv_buf[..3].copy_from_slice(&x);
        (self.ku0, self.kv0) = (0, 0);
        (self.u, self.v) = (u, v);
        (self.uw, self.vw) = (n.min(3) as i32, m.min(3) as i32);
    }

    /// The kernel's total weight, `sum(ku) * sum(kv)`.
    pub fn weight(&self) -> f32 {
        sum(self.ku()) * sum(self.kv())
    }

    /// Drop zero weights at both ends (a kernel of only zeros keeps one weight).
    pub fn strip_zeros(&mut self) {
        while self.uw > 1 && self.ku_buf[self.ku0] == 0.0 {
            self.ku0 += 1;
            self.u += 1;
            self.uw -= 1;
        }
        while self.uw > 1 && self.ku_buf[self.ku0 + self.uw as usize - 1] == 0.0 {
            self.uw -= 1;
        }
        while self.vw > 1 && self.kv_buf[self.kv0] == 0.0 {
            self.kv0 += 1;
            self.v += 1;
            self.vw -= 1;
        }
        while self.vw > 1 && self.kv_buf[self.kv0 + self.vw as usize - 1] == 0.0 {
            self.vw -= 1;
        }
    }

    /// Fold the part left of u = 0 back into the face (dropped for a black border).
    pub fn merge_l(&mut self, mode: BorderMode) {
        let w = (-self.u).clamp(0, self.uw.max(0));
        let s = sum(&self.ku_buf[self.ku0..self.ku0 + w as usize]);
        if mode != BorderMode::Black && w < self.uw {
            self.ku_buf[self.ku0 + w as usize] += s;
        }
        self.ku0 += w as usize;
        self.uw -= w;
        self.u = 0;
    }

    /// Fold the part right of the face back into it.
    pub fn merge_r(&mut self, mode: BorderMode) {
        let w = (self.uw + self.u - self.res.u() as i32).clamp(0, self.uw.max(0));
        let end = self.ku0 + self.uw.max(0) as usize;
        let s = sum(&self.ku_buf[end - w as usize..end]);
        if mode != BorderMode::Black && w > 0 && w < self.uw {
            self.ku_buf[end - w as usize - 1] += s;
        }
        self.uw -= w;
    }

    /// Fold the part below v = 0 back into the face.
    pub fn merge_b(&mut self, mode: BorderMode) {
        let w = (-self.v).clamp(0, self.vw.max(0));
        let s = sum(&self.kv_buf[self.kv0..self.kv0 + w as usize]);
        if mode != BorderMode::Black && w < self.vw {
            self.kv_buf[self.kv0 + w as usize] += s;
        }
        self.kv0 += w as usize;
        self.vw -= w;
        self.v = 0;
    }

    /// Fold the part above the face back into it.
    pub fn merge_t(&mut self, mode: BorderMode) {
        let w = (self.vw + self.v - self.res.v() as i32).clamp(0, self.vw.max(0));
        let end = self.kv0 + self.vw.max(0) as usize;
        let s = sum(&self.kv_buf[end - w as usize..end]);
        if mode != BorderMode::Black && w > 0 && w < self.vw {
            self.kv_buf[end - w as usize - 1] += s;
        }
        self.vw -= w;
    }

    /// A copy with new window and weights taken from this kernel's buffers.
    fn part(&self, u: i32, v: i32, ku0: usize, uw: i32, kv0: usize, vw: i32) -> Kernel {
        // The whole kernel copied (a fixed-size copy, cheaper than zeroing a new one and
        // copying two slices of unknown length) and its windows moved: the same weights.
        let mut k = *self;
        (k.u, k.v, k.uw, k.vw) = (u, v, uw.max(0), vw.max(0));
        (k.ku0, k.kv0, k.rot) = (ku0, kv0, 0);
        k
    }

    /// Split off the part left of u = 0 (in the left neighbour's texel range).
    pub fn split_l(&mut self) -> Kernel {
        let w = -self.u;
        let ru = self.res.u() as i32;
        if w < self.uw {
            let k = self.part(ru - w, self.v, self.ku0, w, self.kv0, self.vw);
            self.u = 0;
            self.uw -= w;
            self.ku0 += w as usize;
            k
        } else {
            let mut k = *self;
            k.u += ru;
            self.u = 0;
            self.uw = 0;
            k
        }
    }

    /// Split off the part right of the face.
    pub fn split_r(&mut self) -> Kernel {
        let ru = self.res.u() as i32;
        let w = self.u + self.uw - ru;
        if w < self.uw {
            let at = self.ku0 + (self.uw - w) as usize;
            let k = self.part(0, self.v, at, w, self.kv0, self.vw);
            self.uw -= w;
            k
        } else {
            let mut k = *self;
            k.u -= ru;
            self.u = 0;
            self.uw = 0;
            k
        }
    }

    /// Split off the part below v = 0.
    pub fn split_b(&mut self) -> Kernel {
        let w = -self.v;
        let rv = self.res.v() as i32;
        if w < self.vw {
            let k = self.part(self.u, rv - w, self.ku0, self.uw, self.kv0, w);
            self.v = 0;
            self.vw -= w;
            self.kv0 += w as usize;
            k
        } else {
            let mut k = *self;
            k.v += rv;
            self.v = 0;
            self.vw = 0;
            k
        }
    }

    /// Split off the part above the face.
    pub fn split_t(&mut self) -> Kernel {
        let rv = self.res.v() as i32;
        let w = self.v + self.vw - rv;
        if w < self.vw {
            let at = self.kv0 + (self.vw - w) as usize;
            let k = self.part(self.u, 0, self.ku0, self.uw, at, w);
            self.vw -= w;
            k
        } else {
            let mut k = *self;
            k.v -= rv;
            self.v = 0;
            self.vw = 0;
            k
        }
    }

    fn flip_u(&mut self) {
        self.u = self.res.u() as i32 - self.u - self.uw;
        let (a, n) = (self.ku0, self.uw.max(0) as usize);
        self.ku_buf[a..a + n].reverse();
    }

    fn flip_v(&mut self) {
        self.v = self.res.v() as i32 - self.v - self.vw;
        let (a, n) = (self.kv0, self.vw.max(0) as usize);
        self.kv_buf[a..a + n].reverse();
    }

    fn swap_uv(&mut self) {
        self.res = Res::new(self.res.vlog2, self.res.ulog2);
        std::mem::swap(&mut self.u, &mut self.v);
        std::mem::swap(&mut self.uw, &mut self.vw);
        std::mem::swap(&mut self.ku_buf, &mut self.kv_buf);
        std::mem::swap(&mut self.ku0, &mut self.kv0);
    }

    /// Rotate `turns` quarter turns counter-clockwise.
    pub fn rotate(&mut self, turns: i32) {
        match turns & 3 {
            1 => {
                self.flip_u();
                self.swap_uv();
            }
            2 => {
                self.flip_u();
                self.flip_v();
            }
            3 => {
                self.flip_v();
                self.swap_uv();
            }
            _ => return,
        }
        self.rot = (self.rot + turns) & 3;
    }

    /// Move from a main face across edge `eid` onto a subface (half resolution); whether
    /// the target is the primary subface (the one the main face points at).
    pub fn adjust_main_to_subface(&mut self, eid: i32) -> bool {
        if self.res.ulog2 == 0 {
            self.upres_u();
        }
        if self.res.vlog2 == 0 {
            self.upres_v();
        }
        if self.res.ulog2 > 0 {
            self.res.ulog2 -= 1;
        }
        if self.res.vlog2 > 0 {
            self.res.vlog2 -= 1;
        }
        let (ru, rv) = (self.res.u() as i32, self.res.v() as i32);
        match eid & 3 {
            0 => {
                let primary = self.u < ru;
                self.v -= rv;
                if !primary {
                    self.u -= ru;
                }
                primary
            }
            1 => {
                let primary = self.v < rv;
                if !primary {
                    self.v -= rv;
                }
                primary
            }
            2 => {
                let primary = self.u >= ru;
                if primary {
                    self.u -= ru;
                }
                primary
            }
            _ => {
                let primary = self.v >= rv;
                self.u -= ru;
                if primary {
                    self.v -= rv;
                }
                primary
            }
        }
    }

    /// Move from a subface across edge `eid` onto its main face (double resolution).
    pub fn adjust_subface_to_main(&mut self, eid: i32) {
        match eid & 3 {
            0 => self.v += self.res.v() as i32,
            1 => {}
            2 => self.u += self.res.u() as i32,
            _ => {
                self.u += self.res.u() as i32;
                self.v += self.res.v() as i32;
            }
        }
        self.res = Res::new(self.res.ulog2 + 1, self.res.vlog2 + 1);
    }

    /// Combine pairs of u weights: the kernel at half the u resolution.
    pub fn downres_u(&mut self) {
        let (u, uw, k0) = (self.u, self.uw, self.ku0);
        let new_w = downres(&mut self.ku_buf, k0, u, uw);
        self.u = u / 2;
        self.uw = new_w;
        self.res.ulog2 -= 1;
    }

    /// Combine pairs of v weights.
    pub fn downres_v(&mut self) {
        let (v, vw, k0) = (self.v, self.vw, self.kv0);
        let new_w = downres(&mut self.kv_buf, k0, v, vw);
        self.v = v / 2;
        self.vw = new_w;
        self.res.vlog2 -= 1;
    }

    /// Split every u weight in two: the kernel at twice the u resolution.
    pub fn upres_u(&mut self) {
        self.uw = upres(&mut self.ku_buf, &mut self.ku0, self.uw);
        self.u *= 2;
        self.res.ulog2 += 1;
    }

    /// Split every v weight in two.
    pub fn upres_v(&mut self) {
        self.vw = upres(&mut self.kv_buf, &mut self.kv0, self.vw);
        self.v *= 2;
        self.res.vlog2 += 1;
    }

    /// Make the kernel square and symmetric (for corners of valence 5 and more), keeping
    /// its weight where possible; returns the new weight.
    pub fn make_symmetric(&mut self, initial_weight: f32) -> f32 {
        while self.res.ulog2 > self.res.vlog2 {
            self.downres_u();
        }
        while self.res.vlog2 > self.res.ulog2 {
            self.downres_v();
        }
        let n = self.uw.min(self.vw).max(0);
        self.uw = n;
        self.vw = n;
        let mut new_weight = 0.0f32;
        for i in 0..n as usize {
            let s = self.ku_buf[self.ku0 + i] + self.kv_buf[self.kv0 + i];
            self.ku_buf[self.ku0 + i] = s;
            self.kv_buf[self.kv0 + i] = s;
            new_weight += s;
        }
        new_weight *= new_weight;
        let scale = if new_weight == 0.0 {
            1.0
        } else {
            initial_weight / new_weight
        };
        if scale < 1.0 {
            let (a, m) = (self.ku0, n as usize);
            if scale < -1.0 {
                self.ku_buf[a..a + m].iter_mut().for_each(|x| *x *= -1.0);
                new_weight = -new_weight;
            } else {
                self.ku_buf[a..a + m].iter_mut().for_each(|x| *x *= scale);
                new_weight = initial_weight;
            }
        }
        new_weight
    }
}

/// Combine pairs of the `w` weights at `k0` (a window starting at texel `start`) in place,
/// as the reference's `downresU`; the new width.
fn downres(buf: &mut [f32; CAP], k0: usize, start: i32, w: i32) -> i32 {
    let mut src = k0;
    let mut dst = k0;
    let mut w = w.max(0) as usize;
    if start & 1 != 0 && w > 0 {
        src += 1;
        dst += 1;
        w -= 1;
    }
    for _ in 0..w / 2 {
        buf[dst] = buf[src] + buf[src + 1];
        dst += 1;
        src += 2;
    }
    if w & 1 != 0 {
        buf[dst] = buf[src];
        dst += 1;
    }
    (dst - k0) as i32
}

/// Split each of the `w` weights at `*k0` in two halves, as the reference's `upresU`
/// (moving the window to the buffer's start if it would not fit); the new width.
fn upres(buf: &mut [f32; CAP], k0: &mut usize, w: i32) -> i32 {
    let w = (w.max(0) as usize).min(CAP / 2);
    if *k0 + 2 * w > CAP {
        buf.copy_within(*k0..*k0 + w, 0);
        *k0 = 0;
    }
    for i in (0..w).rev() {
        let x = buf[*k0 + i] / 2.0;
        buf[*k0 + 2 * i] = x;
        buf[*k0 + 2 * i + 1] = x;
    }
    (2 * w) as i32
}
