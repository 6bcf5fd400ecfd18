//! Applying a separable kernel to one unit's texels, as the reference's `apply` /
//! `applyConst`: each row's weighted sum (in u, from the first texel), then the rows
//! weighted by `kv`, added to the sums. The sums are the reference's to the bit: the same
//! products, added in the same order.
//!
//! The loop is made once per stored type and for 1 to 4 channels (the reference's
//! `ApplyS<T, nChan>` templates), reading each row of the window as one slice; a window
//! the bytes do not hold (only from a corrupt file's unit) and other channel counts take the
//! general loop, which reads a texel it cannot find as 0.

use super::kernel::{sum, Kernel};
use super::{Channels, Texels};
use crate::sources::ptex::{values, DataType};

/// A separable kernel's window as the loops read it: weights `ku` over texels `u..` of
/// rows `row_texels` wide, and `kv` over rows `v..` (a [`Kernel`]'s, or the box and
/// bilinear fast path's own).
#[derive(Clone, Copy, Debug)]
pub(super) struct Window<'a> {
    /// Texels per row of the unit (its resolution in u).
    pub row_texels: usize,
    pub u: i32,
    pub v: i32,
    pub ku: &'a [f32],
    pub kv: &'a [f32],
}

impl Window<'_> {
    /// `sum(ku) * sum(kv)`, each summed in order from 0 (the reference's `weight()`).
    pub fn weight(&self) -> f32 {
        sum(self.ku) * sum(self.kv)
    }
}

impl Kernel {
    /// The kernel's window.
    pub(super) fn window(&self) -> Window<'_> {
        Window {
            row_texels: self.res.u(),
            u: self.u,
            v: self.v,
            ku: self.ku(),
            kv: self.kv(),
        }
    }
}

/// Apply `k` (within `texels`' resolution) to `texels`, adding to `dst` (one sum per
/// channel).
pub(super) fn apply_texels(ch: &Channels, k: &Kernel, texels: Texels<'_>, dst: &mut [f32]) {
    apply_window(ch, &k.window(), texels, dst);
}

/// Apply the window `k` (within `texels`' resolution) to `texels`, adding to `dst`.
#[inline]
pub(super) fn apply_window(ch: &Channels, k: &Window<'_>, texels: Texels<'_>, dst: &mut [f32]) {
    match texels {
        Texels::Constant(texel) => ch.accumulate(dst, texel, 0, k.weight()),
        Texels::Packed(bytes) => {
            let done = match ch.data_type {
                DataType::U8 => by_channels::<U8>(ch, k, bytes, dst),
                DataType::U16 => by_channels::<U16>(ch, k, bytes, dst),
                DataType::Half => by_channels::<Half>(ch, k, bytes, dst),
                DataType::F32 => by_channels::<F32>(ch, k, bytes, dst),
            };
            if !done {
                apply_general(ch, k, bytes, dst);
            }
        }
    }
}

/// A stored channel type: its size and how one value is read (unscaled, as the
/// reference's `(float)*val`).
trait Stored {
    const SIZE: usize;
    /// The value in the first `SIZE` bytes of `b` (which has at least that many).
    fn load(b: &[u8]) -> f32;
}

struct U8;
struct U16;
struct Half;
struct F32;

impl Stored for U8 {
    const SIZE: usize = 1;
    #[inline(always)]
    fn load(b: &[u8]) -> f32 {
        f32::from(b[0])
    }
}

impl Stored for U16 {
    const SIZE: usize = 2;
    #[inline(always)]
    fn load(b: &[u8]) -> f32 {
        f32::from(u16::from_le_bytes([b[0], b[1]]))
    }
}

impl Stored for Half {
    const SIZE: usize = 2;
    #[inline(always)]
    fn load(b: &[u8]) -> f32 {
        values::half_to_f32(u16::from_le_bytes([b[0], b[1]]))
    }
}

impl Stored for F32 {
    const SIZE: usize = 4;
    #[inline(always)]
    fn load(b: &[u8]) -> f32 {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

/// The typed loop for 1 to 4 channels; false (nothing added) for other counts or a window
/// outside `bytes`.
fn by_channels<T: Stored>(ch: &Channels, k: &Window<'_>, bytes: &[u8], dst: &mut [f32]) -> bool {
    match ch.count {
        1 => typed::<T, 1>(ch, k, bytes, dst),
        2 => typed::<T, 2>(ch, k, bytes, dst),
        3 => typed::<T, 3>(ch, k, bytes, dst),
        4 => typed::<T, 4>(ch, k, bytes, dst),
        _ => false,
    }
}

/// The loop for `N` channels of type `T`; false (nothing added) if the window is not
/// within `bytes` or the channels not within a texel.
#[inline(always)]
fn typed<T: Stored, const N: usize>(
    ch: &Channels,
    k: &Window<'_>,
    bytes: &[u8],
    dst: &mut [f32],
) -> bool {
    let ps = ch.pixel_size;
    let (ku, kv) = (k.ku, k.kv);
    let first = ch.first * T::SIZE;
    if ku.is_empty() || kv.is_empty() || first + N * T::SIZE > ps || dst.len() < N {
        return ku.is_empty() || kv.is_empty();
    }
    let (u0, v0) = (k.u.max(0) as usize, k.v.max(0) as usize);
    let row = k.row_texels * ps;
    let width = ku.len() * ps;
    let last = (v0 + kv.len() - 1) * row + u0 * ps + width;
    if k.u < 0 || k.v < 0 || u0 * ps + width > row || last > bytes.len() {
        return false;
    }
    let dst: &mut [f32; N] = (&mut dst[..N]).try_into().expect("N sums");
    let texel = |at: usize| load_texel::<T, N>(bytes, at);
    let (&wu0, ku_rest) = ku.split_first().expect("ku is not empty");
    for (j, &wv) in kv.iter().enumerate() {
        let base = (v0 + j) * row + u0 * ps + first;
        // The first product starts the row's sum (not 0 + it: the sign of a zero counts).
        let mut r = texel(base).map(|x| x * wu0);
        for (i, &wu) in ku_rest.iter().enumerate() {
            let x = texel(base + (i + 1) * ps);
            for (r, x) in r.iter_mut().zip(x) {
                *r += x * wu;
            }
        }
        for (d, r) in dst.iter_mut().zip(r) {
            *d += r * wv;
        }
    }
    true
}

/// The `N` channels of type `T` at byte `at` of `bytes`: slicing their bytes once lets
/// every load go unchecked by construction.
#[inline(always)]
fn load_texel<T: Stored, const N: usize>(bytes: &[u8], at: usize) -> [f32; N] {
    let t = &bytes[at..at + N * T::SIZE];
    std::array::from_fn(|c| T::load(&t[c * T::SIZE..(c + 1) * T::SIZE]))
}

/// Any channel count, every read checked (a texel outside `bytes` reads as 0).
fn apply_general(ch: &Channels, k: &Window<'_>, bytes: &[u8], dst: &mut [f32]) {
    let ps = ch.pixel_size;
    let row = k.row_texels * ps;
    let n = ch.count;
    let mut row_result = [0f32; 64];
    let mut row_vec;
    let rr: &mut [f32] = if n <= 64 {
        &mut row_result[..n]
    } else {
        row_vec = vec![0f32; n];
        &mut row_vec
    };
    for (j, &wv) in k.kv.iter().enumerate() {
        let base = (k.v as usize + j) * row + k.u as usize * ps;
        for (i, &wu) in k.ku.iter().enumerate() {
            let at = base + i * ps;
            for (c, r) in rr.iter_mut().enumerate() {
                let x = ch.raw(bytes, at, c) * wu;
                *r = if i == 0 { x } else { *r + x };
            }
        }
        for (d, r) in dst.iter_mut().zip(rr.iter()) {
            *d += r * wv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::ptex::Res;

    fn kernel(res: Res, u: i32, ku: &[f32], v: i32, kv: &[f32]) -> Kernel {
        let mut k = Kernel::new(res);
        k.set_ku(u, ku);
        k.set_kv(v, kv);
        k
    }

    /// Bytes of `n` texels whose every byte differs, with values a half reads as finite.
    fn texels(n: usize, pixel_size: usize) -> Vec<u8> {
        (0..n * pixel_size)
            .map(|i| (i * 37 % 251) as u8 & 0x3f)
            .collect()
    }

    #[test]
    fn typed_loops_sum_as_the_general_one_to_the_bit() {
        let res = Res::new(3, 2); // 8×4 texels
        let kernels = [
            kernel(res, 0, &[0.25, 0.75], 0, &[0.5, 0.5]),
            kernel(res, 6, &[0.1, 0.9], 2, &[0.3, 0.7]),
            kernel(res, 3, &[0.2, 0.3, 0.5], 1, &[1.0, 0.25, 0.125]),
            kernel(res, 7, &[1.0], 3, &[0.6]),
        ];
        for dt in [DataType::U8, DataType::U16, DataType::Half, DataType::F32] {
            for nchan in 1..=6 {
                for first in 0..2 {
                    let ps = (nchan + first) * dt.size();
                    let ch = Channels {
                        first,
                        count: nchan,
                        data_type: dt,
                        pixel_size: ps,
                    };
                    let bytes = texels(res.texels(), ps);
                    for k in &kernels {
                        let mut fast = vec![1.5f32; nchan];
                        let mut general = fast.clone();
                        apply_texels(&ch, k, Texels::Packed(&bytes), &mut fast);
                        apply_general(&ch, &k.window(), &bytes, &mut general);
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&fast), bits(&general), "{dt:?} {nchan}+{first}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_unit_cut_short_reads_zeros_past_its_end() {
        let res = Res::new(2, 2);
        let ch = Channels {
            first: 0,
            count: 3,
            data_type: DataType::U8,
            pixel_size: 3,
        };
        // A unit cut short (a corrupt file's): the last row is missing.
        let bytes = vec![10u8; 4 * 3 * 3];
        let k = kernel(res, 2, &[0.5, 0.5], 2, &[0.5, 0.5]);
        let mut sums = vec![0f32; 3];
        apply_texels(&ch, &k, Texels::Packed(&bytes), &mut sums);
        // Row 2 reads 10s, row 3 reads zeros: 0.5 × 10.
        assert_eq!(sums, vec![5.0; 3]);
    }
}
