//! Channel values: conversion to `f32` as the reference library's `getPixel` does it, its
//! own half-float rounding, premultiplication by alpha, and the on-the-fly reductions
//! (format note §9, §11, §12, §15), all with the reference's exact arithmetic so reduced
//! data matches it bit for bit.
//!
//! Texel buffers are bytes: texels in v-major order, channels interleaved, each value
//! little-endian.

use super::header::DataType;

/// Convert one half (binary16, as bits) to `f32` exactly.
///
/// Without branches (selects only), so the filters' loops over the channels of a texel
/// vectorise: zero or denormal is the magnitude × 2^-24 (exact); infinity or NaN keeps the
/// NaN's payload; a normal value moves its exponent from bias 15 to 127.
#[inline]
pub fn half_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let magnitude = u32::from(h & 0x7fff);
    let denormal = (magnitude as f32 * (1.0 / 16_777_216.0)).to_bits();
    // Bias 15 → 127 is + 112 << 23; infinity and NaN go to exponent 255: + 224 << 23.
    let rebias = if magnitude >= 0x7c00 {
        0x7000_0000
    } else {
        0x3800_0000
    };
    let bits = if magnitude < 0x0400 {
        denormal
    } else {
        (magnitude << 13) + rebias
    };
    f32::from_bits(sign | bits)
}

/// Convert `f32` to half bits as the reference library's `PtexHalf` does: normal results
/// round half-up on the magnitude (not ties-to-even), denormal results use
/// `int(|x| * 2^24 + 0.5)`, zero of either sign gives +0, overflow gives infinity.
pub fn f32_to_half(val: f32) -> u16 {
    if val == 0.0 {
        return 0;
    }
    let i = val.to_bits();
    let exponent = (i >> 23) & 0xff;
    let sign = (i >> 16) & 0x8000;
    if (113..=142).contains(&exponent) {
        // Normal in half: the mantissa's carry may step into the exponent (up to inf).
        let base = sign | ((exponent - 112) << 10);
        return (base + (((i & 0x007f_ffff) + 0x1000) >> 13)) as u16;
    }
    if exponent <= 112 {
        // Denormal (or rounds to the smallest normal): the reference's
        // `int(|x| * 2^24 + 0.5)`, in integers. |x| is the significand M times
        // 2^(exponent - 150), so |x| * 2^24 is M / 2^s with s = 126 - exponent >= 14; adding
        // a half and truncating is adding 2^(s-1) and shifting. From s = 26 on (and for f32
        // denormals) M / 2^s + 0.5 < 1: zero.
        let s = 126 - exponent;
        let significand = (i & 0x007f_ffff) | 0x0080_0000;
        let scaled = if s > 25 {
            0
        } else {
            (significand + (1 << (s - 1))) >> s
        };
        return (sign | scaled) as u16;
    }
    if exponent == 255 {
        // Infinity or NaN: keep the top mantissa bits.
        return (sign | 0x7c00 | ((i & 0x007f_ffff) >> 13)) as u16;
    }
    (sign | 0x7c00) as u16
}

/// [`f32_to_half`] of `val` without branches where the result is zero or a normal half
/// (then `true`); otherwise `false` and a value to throw away.
#[inline(always)]
fn f32_to_normal_half(val: f32) -> (u16, bool) {
    let i = val.to_bits();
    let exponent = (i >> 23) & 0xff;
    let sign = (i >> 16) & 0x8000;
    let zero = val == 0.0;
    let normal = exponent.wrapping_sub(113) <= 142 - 113;
    let base = sign | (exponent.wrapping_sub(112) << 10);
    let h = base.wrapping_add(((i & 0x007f_ffff) + 0x1000) >> 13) as u16;
    (if zero { 0 } else { h }, zero | normal)
}

/// One channel value of a data type, read from and written to little-endian bytes, with
/// the reference's arithmetic for reductions.
trait Value: Copy {
    const SIZE: usize;
    /// The value in `b`, which is `SIZE` bytes (a `chunks_exact(SIZE)` item: no bounds
    /// check survives inlining).
    fn load(b: &[u8]) -> Self;
    /// Write the value to `b`, which is `SIZE` bytes.
    fn store(self, b: &mut [u8]);
    /// Value `i` of `b`.
    #[inline(always)]
    fn get(b: &[u8], i: usize) -> Self {
        Self::load(&b[i * Self::SIZE..(i + 1) * Self::SIZE])
    }
    /// Write value `i` of `b`.
    #[inline(always)]
    fn put(self, b: &mut [u8], i: usize) {
        self.store(&mut b[i * Self::SIZE..(i + 1) * Self::SIZE])
    }
    /// `T(halve(a + b))`.
    fn halve(a: Self, b: Self) -> Self;
    /// [`Value::halve`] of the values of `a` and `b` side by side into `d` (slices of
    /// whole values, `d` no longer than `a` or `b`).
    #[inline(always)]
    fn halve_run(d: &mut [u8], a: &[u8], b: &[u8]) {
        let values = a.chunks_exact(Self::SIZE).zip(b.chunks_exact(Self::SIZE));
        for (d, (a, b)) in d.chunks_exact_mut(Self::SIZE).zip(values) {
            Self::halve(Self::load(a), Self::load(b)).store(d);
        }
    }
    /// Whether [`Value::halve_run`] over long runs is much cheaper than value by value (so
    /// a reduction in u gathers the texels it pairs into runs first).
    const RUNS: bool = false;
    /// `T(quarter(a + b + c + d))`, summed left to right.
    fn quarter(a: Self, b: Self, c: Self, d: Self) -> Self;
    /// `T(float(x) * factor)`: truncation for integers, the half rounding for half.
    fn scale(self, factor: f32) -> Self;
    fn to_f32(self) -> f32;
    /// `T(x)`: truncation for integers, the half rounding for half.
    fn from_f32(x: f32) -> Self;
}

impl Value for u8 {
    const SIZE: usize = 1;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        b[0]
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        b[0] = self;
    }
    fn halve(a: Self, b: Self) -> Self {
        ((u32::from(a) + u32::from(b)) >> 1) as u8
    }
    fn quarter(a: Self, b: Self, c: Self, d: Self) -> Self {
        ((u32::from(a) + u32::from(b) + u32::from(c) + u32::from(d)) >> 2) as u8
    }
    fn scale(self, factor: f32) -> Self {
        (f32::from(self) * factor) as u8
    }
    fn to_f32(self) -> f32 {
        f32::from(self)
    }
    fn from_f32(x: f32) -> Self {
        x as u8
    }
}

impl Value for u16 {
    const SIZE: usize = 2;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        u16::from_le_bytes([b[0], b[1]])
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        b[..2].copy_from_slice(&self.to_le_bytes());
    }
    fn halve(a: Self, b: Self) -> Self {
        ((u32::from(a) + u32::from(b)) >> 1) as u16
    }
    fn quarter(a: Self, b: Self, c: Self, d: Self) -> Self {
        ((u32::from(a) + u32::from(b) + u32::from(c) + u32::from(d)) >> 2) as u16
    }
    fn scale(self, factor: f32) -> Self {
        (f32::from(self) * factor) as u16
    }
    fn to_f32(self) -> f32 {
        f32::from(self)
    }
    fn from_f32(x: f32) -> Self {
        x as u16
    }
}

/// A half value as its bits.
#[derive(Clone, Copy)]
struct Half(u16);

impl Value for Half {
    const SIZE: usize = 2;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        Half(u16::load(b))
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        self.0.store(b)
    }
    fn halve(a: Self, b: Self) -> Self {
        Half(f32_to_half(0.5 * (a.to_f32() + b.to_f32())))
    }
    /// Eight values at a time without branches (they vectorise), each equal to
    /// [`Half::halve`]'s: where all eight averages are zero or normal halves; otherwise
    /// those eight value by value (as are runs not aligned to two bytes).
    fn halve_run(d: &mut [u8], a: &[u8], b: &[u8]) {
        const N: usize = 8;
        let n = d.len().min(a.len()).min(b.len()) / 2;
        let (d, a, b) = (&mut d[..2 * n], &a[..2 * n], &b[..2 * n]);
        // SAFETY: any two bytes are a valid `u16`; `align_to` reinterprets only the
        // aligned middle of each slice, and the runs are used only when that is all of it.
        let ((pd, d16, _), (pa, a16, _), (pb, b16, _)) = unsafe {
            (
                d.align_to_mut::<u16>(),
                a.align_to::<u16>(),
                b.align_to::<u16>(),
            )
        };
        if !(pd.is_empty() && pa.is_empty() && pb.is_empty())
            || d16.len() != n
            || a16.len() != n
            || b16.len() != n
        {
            let values = a.chunks_exact(2).zip(b.chunks_exact(2));
            for (d, (a, b)) in d.chunks_exact_mut(2).zip(values) {
                Half::halve(Half::load(a), Half::load(b)).store(d);
            }
            return;
        }
        let (mut d8, mut a8, mut b8) = (
            d16.chunks_exact_mut(N),
            a16.chunks_exact(N),
            b16.chunks_exact(N),
        );
        let halve = |a: u16, b: u16| Half::halve(Half(u16::from_le(a)), Half(u16::from_le(b))).0;
        for ((d, a), b) in (&mut d8).zip(&mut a8).zip(&mut b8) {
            // Arrays: no bounds check is left in the loop, so it vectorises.
            let a: &[u16; N] = a.try_into().expect("chunks of N values");
            let b: &[u16; N] = b.try_into().expect("chunks of N values");
            let (mut out, mut odd) = ([0u16; N], 0u32);
            for k in 0..N {
                let x = half_to_f32(u16::from_le(a[k]));
                let y = half_to_f32(u16::from_le(b[k]));
                let (h, normal) = f32_to_normal_half(0.5 * (x + y));
                out[k] = h.to_le();
                odd |= u32::from(!normal);
            }
            if odd == 0 {
                d.copy_from_slice(&out);
            } else {
                for ((d, &a), &b) in d.iter_mut().zip(a).zip(b) {
                    *d = halve(a, b).to_le();
                }
            }
        }
        let values = a8.remainder().iter().zip(b8.remainder());
        for (d, (&a, &b)) in d8.into_remainder().iter_mut().zip(values) {
            *d = halve(a, b).to_le();
        }
    }
    const RUNS: bool = true;
    fn quarter(a: Self, b: Self, c: Self, d: Self) -> Self {
        Half(f32_to_half(
            0.25 * (((a.to_f32() + b.to_f32()) + c.to_f32()) + d.to_f32()),
        ))
    }
    fn scale(self, factor: f32) -> Self {
        Half(f32_to_half(self.to_f32() * factor))
    }
    fn to_f32(self) -> f32 {
        half_to_f32(self.0)
    }
    fn from_f32(x: f32) -> Self {
        Half(f32_to_half(x))
    }
}

impl Value for f32 {
    const SIZE: usize = 4;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        b[..4].copy_from_slice(&self.to_le_bytes());
    }
    fn halve(a: Self, b: Self) -> Self {
        0.5 * (a + b)
    }
    fn quarter(a: Self, b: Self, c: Self, d: Self) -> Self {
        0.25 * (((a + b) + c) + d)
    }
    fn scale(self, factor: f32) -> Self {
        self * factor
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(x: f32) -> Self {
        x
    }
}

/// Call `$f::<T>` with `T` the value type of `$dt`.
macro_rules! by_type {
    ($dt:expr, $f:ident($($arg:expr),*)) => {
        match $dt {
            DataType::U8 => $f::<u8>($($arg),*),
            DataType::U16 => $f::<u16>($($arg),*),
            DataType::Half => $f::<Half>($($arg),*),
            DataType::F32 => $f::<f32>($($arg),*),
        }
    };
}

/// Convert the channel values in `src` to `f32` into `dst` (as many as fit in both): `u8`
/// and `u16` are multiplied by the `f32` constants `1/255` and `1/65535`, half is exact,
/// float is copied. This is `getPixel`'s conversion.
pub fn to_f32(data_type: DataType, src: &[u8], dst: &mut [f32]) {
    fn go<T: Value>(src: &[u8], dst: &mut [f32], inv: f32) {
        for (i, d) in dst.iter_mut().enumerate().take(src.len() / T::SIZE) {
            *d = T::get(src, i).to_f32() * inv;
        }
    }
    by_type!(data_type, go(src, dst, data_type.one_value_inv()))
}

/// Premultiply `texels` (whole texels of `nchannels`) by the alpha channel `alpha`: with
/// `alpha == 0` every other channel is multiplied, otherwise only the channels before the
/// alpha channel (those after it stay as they are), as the reference's `multalpha`.
pub(crate) fn premultiply(data_type: DataType, texels: &mut [u8], nchannels: usize, alpha: usize) {
    fn go<T: Value>(b: &mut [u8], nchannels: usize, alpha: usize, inv: f32) {
        let texels = b.len() / (T::SIZE * nchannels);
        let channels = if alpha == 0 { 1..nchannels } else { 0..alpha };
        for t in 0..texels {
            let base = t * nchannels;
            let a = inv * T::get(b, base + alpha).to_f32();
            for c in channels.clone() {
                T::get(b, base + c).scale(a).put(b, base + c);
            }
        }
    }
    by_type!(
        data_type,
        go(texels, nchannels, alpha, data_type.one_value_inv())
    )
}

/// Undo [`premultiply`] (the reference's `divalpha`): channels become
/// `T(float(x) * (one / float(alpha)))`, texels with a zero alpha are left alone. The
/// writer applies it to the constant value it averages from premultiplied data.
pub(crate) fn unpremultiply(
    data_type: DataType,
    texels: &mut [u8],
    nchannels: usize,
    alpha: usize,
) {
    fn go<T: Value>(b: &mut [u8], nchannels: usize, alpha: usize, one: f32) {
        let texels = b.len() / (T::SIZE * nchannels);
        let channels = if alpha == 0 { 1..nchannels } else { 0..alpha };
        for t in 0..texels {
            let base = t * nchannels;
            let a = T::get(b, base + alpha).to_f32();
            if a == 0.0 {
                continue;
            }
            let factor = one / a;
            for c in channels.clone() {
                T::get(b, base + c).scale(factor).put(b, base + c);
            }
        }
    }
    by_type!(
        data_type,
        go(texels, nchannels, alpha, data_type.one_value())
    )
}

/// The average texel of `texels` (whole texels of `nchannels`), as the reference's
/// `PtexUtils::average`: each channel summed in an `f32` in texel order, multiplied by the
/// `f32` `1 / count` and converted back with the type's conversion (truncation for
/// integers).
pub(crate) fn average(data_type: DataType, texels: &[u8], nchannels: usize) -> Vec<u8> {
    fn go<T: Value>(b: &[u8], n: usize) -> Vec<u8> {
        let count = b.len() / (T::SIZE * n);
        let mut sums = vec![0f32; n];
        for t in 0..count {
            for (c, sum) in sums.iter_mut().enumerate() {
                *sum += T::get(b, t * n + c).to_f32();
            }
        }
        let scale = 1.0 / count.max(1) as f32;
        let mut out = vec![0u8; n * T::SIZE];
        for (c, sum) in sums.iter().enumerate() {
            T::from_f32(sum * scale).put(&mut out, c);
        }
        out
    }
    by_type!(data_type, go(texels, nchannels))
}

/// Which on-the-fly reduction to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduction {
    /// Halve the width: `(a + b) / 2` of horizontal pairs (`reduceu`).
    U,
    /// Halve the height: `(a + b) / 2` of vertical pairs (`reducev`).
    V,
    /// Halve both sides: the quarter of each 2×2 block (`reduce`: the stored reductions
    /// the writer makes of quad faces).
    Quad,
    /// Halve a square triangle image (`reduceTri`): three texels of the upright
    /// sub-triangle plus the mirrored texel of the inverted one.
    Triangle,
}

/// Reduce the packed image `src` of `ures` × `vres` texels of `nchannels` values. The
/// caller checked that the halved sides are at least 1 (and, for triangles, that the
/// image is square).
pub(crate) fn reduce(
    data_type: DataType,
    how: Reduction,
    src: &[u8],
    ures: usize,
    vres: usize,
    nchannels: usize,
) -> Vec<u8> {
    fn go<T: Value>(how: Reduction, src: &[u8], ures: usize, vres: usize, n: usize) -> Vec<u8> {
        let (du, dv) = match how {
            Reduction::U => (ures / 2, vres),
            Reduction::V => (ures, vres / 2),
            Reduction::Quad | Reduction::Triangle => (ures / 2, vres / 2),
        };
        let mut dst = vec![0u8; du * dv * n * T::SIZE];
        // The one-direction reductions (the anisotropic resolutions a filter asks for),
        // row by row over slices, so the loops compile without per-value bounds checks.
        let row = ures * n * T::SIZE;
        match how {
            Reduction::V => {
                for (v, d) in dst.chunks_exact_mut(row.max(1)).enumerate().take(dv) {
                    let a = &src[2 * v * row..(2 * v + 1) * row];
                    let b = &src[(2 * v + 1) * row..(2 * v + 2) * row];
                    T::halve_run(d, a, b);
                }
                return dst;
            }
            Reduction::U if T::RUNS => {
                // Texels 2u and 2u + 1 gathered into two runs, halved run against run.
                let (out_row, texel) = (du * n * T::SIZE, n * T::SIZE);
                let (mut even, mut odd) = (vec![0u8; out_row], vec![0u8; out_row]);
                for (v, d) in dst.chunks_exact_mut(out_row.max(1)).enumerate().take(dv) {
                    let s = &src[v * row..(v + 1) * row];
                    let runs = even
                        .chunks_exact_mut(texel)
                        .zip(odd.chunks_exact_mut(texel));
                    for ((e, o), pair) in runs.zip(s.chunks_exact(2 * texel)) {
                        let (x, y) = pair.split_at(texel);
                        // Value by value: fixed-size copies, not a `memcpy` call a texel.
                        let values = x.chunks_exact(T::SIZE).zip(y.chunks_exact(T::SIZE));
                        let into = e.chunks_exact_mut(T::SIZE).zip(o.chunks_exact_mut(T::SIZE));
                        for ((e, o), (x, y)) in into.zip(values) {
                            e.copy_from_slice(x);
                            o.copy_from_slice(y);
                        }
                    }
                    T::halve_run(d, &even, &odd);
                }
                return dst;
            }
            Reduction::U => {
                let (out_row, texel) = (du * n * T::SIZE, n * T::SIZE);
                for (v, d) in dst.chunks_exact_mut(out_row.max(1)).enumerate().take(dv) {
                    let s = &src[v * row..(v + 1) * row];
                    // Texels 2u and 2u + 1 side by side make texel u.
                    for (d, pair) in d.chunks_exact_mut(texel).zip(s.chunks_exact(2 * texel)) {
                        let (x, y) = pair.split_at(texel);
                        let values = x.chunks_exact(T::SIZE).zip(y.chunks_exact(T::SIZE));
                        for (d, (x, y)) in d.chunks_exact_mut(T::SIZE).zip(values) {
                            T::halve(T::load(x), T::load(y)).store(d);
                        }
                    }
                }
                return dst;
            }
            Reduction::Quad | Reduction::Triangle => {}
        }
        let at = |u: usize, v: usize, c: usize| T::get(src, (v * ures + u) * n + c);
        for v in 0..dv {
            for u in 0..du {
                for c in 0..n {
                    let value = match how {
                        Reduction::U => T::halve(at(2 * u, v, c), at(2 * u + 1, v, c)),
                        Reduction::V => T::halve(at(u, 2 * v, c), at(u, 2 * v + 1, c)),
                        Reduction::Quad => T::quarter(
                            at(2 * u, 2 * v, c),
                            at(2 * u + 1, 2 * v, c),
                            at(2 * u, 2 * v + 1, c),
                            at(2 * u + 1, 2 * v + 1, c),
                        ),
                        Reduction::Triangle => T::quarter(
                            at(2 * u, 2 * v, c),
                            at(2 * u + 1, 2 * v, c),
                            at(2 * u, 2 * v + 1, c),
                            at(ures - 1 - 2 * v, ures - 1 - 2 * u, c),
                        ),
                    };
                    value.put(&mut dst, (v * du + u) * n + c);
                }
            }
        }
        dst
    }
    by_type!(data_type, go(how, src, ures, vres, nchannels))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run whose bytes are not aligned to two gives what an aligned one gives (it is
    /// halved value by value), and both equal `Half::halve` value by value.
    #[test]
    fn half_runs_aligned_or_not_equal_value_by_value() {
        let mut rng = crate::test_rng::xorshift32(77);
        let n = 37;
        let mut a = vec![0u8; 2 * n + 1];
        let mut b = vec![0u8; 2 * n + 1];
        for x in a.iter_mut().chain(b.iter_mut()) {
            *x = (rng() >> 13) as u8 & 0x3b; // mostly normal halves in [0, 1)
        }
        let want: Vec<u8> = (0..n)
            .flat_map(|i| {
                let (x, y) = (Half::get(&a[..2 * n], i), Half::get(&b[..2 * n], i));
                Half::halve(x, y).0.to_le_bytes()
            })
            .collect();
        let mut aligned = vec![0u8; 2 * n];
        Half::halve_run(&mut aligned, &a[..2 * n], &b[..2 * n]);
        assert_eq!(aligned, want);
        // The same values one byte further on.
        let (mut a1, mut b1) = (vec![0u8; 2 * n + 1], vec![0u8; 2 * n + 1]);
        a1[1..].copy_from_slice(&a[..2 * n]);
        b1[1..].copy_from_slice(&b[..2 * n]);
        let mut d1 = vec![0u8; 2 * n + 1];
        Half::halve_run(&mut d1[1..], &a1[1..], &b1[1..]);
        assert_eq!(&d1[1..], &want[..]);
    }
}
