//! Four IEEE halves to `f32` at once: one F16C instruction (`vcvtph2ps`: x86-64 CPUs since
//! Intel's Ivy Bridge and AMD's Piledriver; detected at run time) instead of a feature check
//! and a call per value (the `half` crate's `to_f32`, which the other CPUs keep). The
//! conversion is exact either way, and F16C sets a NaN's quiet bit as `half` does, so the
//! results are the same bit for bit.

/// The four little-endian halves in `b` as `f32` where the CPU has F16C; `None` elsewhere
/// (the caller converts them one by one).
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
pub(crate) fn halves4(b: &[u8; 8]) -> Option<[f32; 4]> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") {
        let bits = i64::from_le_bytes(*b);
        // SAFETY: the CPU has F16C (just detected), the one feature `f16c4` enables.
        let v = unsafe { f16c4(bits) };
        let mut out = [0f32; 4];
        // SAFETY: `out` has room for the four floats an unaligned store writes (SSE, which
        // every x86-64 CPU has).
        unsafe { std::arch::x86_64::_mm_storeu_ps(out.as_mut_ptr(), v) };
        return Some(out);
    }
    None
}

/// `vcvtph2ps` of the four halves in `bits`, returned in a register.
///
/// # Safety
/// The CPU must have F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "f16c")]
unsafe fn f16c4(bits: i64) -> std::arch::x86_64::__m128 {
    use std::arch::x86_64::{_mm_cvtph_ps, _mm_cvtsi64_si128};
    _mm_cvtph_ps(_mm_cvtsi64_si128(bits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn every_half_converts_as_the_half_crate_does() {
        // Every bit pattern, in each lane position (where the CPU has F16C).
        for h in 0..=u16::MAX {
            let lanes = [h, h.rotate_left(3), !h, h ^ 0x8000];
            let mut b = [0u8; 8];
            for (i, l) in lanes.iter().enumerate() {
                b[2 * i..2 * i + 2].copy_from_slice(&l.to_le_bytes());
            }
            let Some(got) = halves4(&b) else {
                return;
            };
            let want = lanes.map(|l| f16::from_bits(l).to_f32().to_bits());
            assert_eq!(got.map(f32::to_bits), want, "{lanes:04x?}");
        }
    }
}
