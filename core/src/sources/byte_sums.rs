//! Running sums of bytes with a stride, in place: undoing the byte differencing that TIFF's
//! floating-point predictor and OpenEXR's ZIP predictor apply before compressing. The plain
//! loop is bound by store-to-load forwarding; these keep the sums in registers (SSE2 on
//! x86-64 for the strides the formats use most).

/// Undo byte differencing with stride `stride` in place: `r[i] += r[i - stride]` for every
/// `i` from `stride` on, in order (the floating-point predictor's first step). The plain
/// loop reads back each byte it stored `stride` bytes earlier, so it runs at the latency of
/// store-to-load forwarding; these keep the running sums in registers.
pub(crate) fn byte_prefix_sums(r: &mut [u8], stride: usize) {
    if stride == 0 || stride >= r.len() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    match stride {
        1 => return prefix_sums_stride1_sse2(r),
        4 => return prefix_sums_stride4_sse2(r),
        _ => {}
    }
    if stride <= 16 {
        // One running sum per byte of a pixel, in registers.
        let mut acc = [0u8; 16];
        acc[..stride].copy_from_slice(&r[..stride]);
        let mut k = 0;
        for b in &mut r[stride..] {
            acc[k] = acc[k].wrapping_add(*b);
            *b = acc[k];
            k += 1;
            if k == stride {
                k = 0;
            }
        }
        return;
    }
    for i in stride..r.len() {
        r[i] = r[i].wrapping_add(r[i - stride]);
    }
}

/// [`byte_prefix_sums`] with stride 4 (RGBA float, the common `.tx`): 16 bytes a step, the
/// prefix sums of the 4 interleaved sequences formed in an SSE2 register (x86-64's
/// baseline) by two shifted adds, plus the last pixel of the step before.
#[cfg(target_arch = "x86_64")]
fn prefix_sums_stride4_sse2(r: &mut [u8]) {
    use std::arch::x86_64::*;
    let blocks = r.len() / 16;
    // SAFETY: SSE2 is part of x86-64, so these intrinsics are always available; every
    // load and store is unaligned and covers bytes [16 b, 16 b + 16) with b < blocks, all
    // inside `r`.
    let carry = unsafe {
        let mut carry = _mm_setzero_si128();
        for b in 0..blocks {
            let p = r.as_mut_ptr().add(16 * b) as *mut __m128i;
            let mut v = _mm_loadu_si128(p);
            v = _mm_add_epi8(v, _mm_slli_si128::<4>(v));
            v = _mm_add_epi8(v, _mm_slli_si128::<8>(v));
            v = _mm_add_epi8(v, carry);
            _mm_storeu_si128(p, v);
            // The last pixel's running sums, to every pixel of the next step.
            carry = _mm_shuffle_epi32::<0xFF>(v);
        }
        let mut last = [0u8; 16];
        _mm_storeu_si128(last.as_mut_ptr() as *mut __m128i, carry);
        last
    };
    // The tail (fewer than 16 bytes) continues from the last full step's sums.
    let mut acc = [carry[0], carry[1], carry[2], carry[3]];
    for (i, b) in r[16 * blocks..].iter_mut().enumerate() {
        let k = i % 4;
        acc[k] = acc[k].wrapping_add(*b);
        *b = acc[k];
    }
}

/// [`byte_prefix_sums`] with stride 1 (OpenEXR's ZIP predictor): 16 bytes a step, prefix
/// sums formed in an SSE2 register by four shifted adds, plus the last byte of the step
/// before.
#[cfg(target_arch = "x86_64")]
fn prefix_sums_stride1_sse2(r: &mut [u8]) {
    use std::arch::x86_64::*;
    let blocks = r.len() / 16;
    let mut last = 0u8;
    // SAFETY: SSE2 is part of x86-64, so these intrinsics are always available; every
    // load and store is unaligned and covers bytes [16 b, 16 b + 16) with b < blocks, all
    // inside `r`.
    unsafe {
        for b in 0..blocks {
            let p = r.as_mut_ptr().add(16 * b) as *mut __m128i;
            let mut v = _mm_loadu_si128(p);
            v = _mm_add_epi8(v, _mm_slli_si128::<1>(v));
            v = _mm_add_epi8(v, _mm_slli_si128::<2>(v));
            v = _mm_add_epi8(v, _mm_slli_si128::<4>(v));
            v = _mm_add_epi8(v, _mm_slli_si128::<8>(v));
            v = _mm_add_epi8(v, _mm_set1_epi8(last as i8));
            _mm_storeu_si128(p, v);
            last = (_mm_extract_epi16::<7>(v) >> 8) as u8;
        }
    }
    for b in &mut r[16 * blocks..] {
        last = last.wrapping_add(*b);
        *b = last;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_prefix_sums_match_the_plain_loop_for_every_stride_and_length() {
        let mut rng = crate::test_rng::xorshift32(0x9E37_79B9);
        let mut next = || rng() as u8;
        for stride in 0..=20 {
            for len in [0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 64, 100, 1024, 1027] {
                let data: Vec<u8> = (0..len).map(|_| next()).collect();
                let mut want = data.clone();
                if stride > 0 {
                    for i in stride..len {
                        want[i] = want[i].wrapping_add(want[i - stride]);
                    }
                }
                let mut got = data;
                byte_prefix_sums(&mut got, stride);
                assert_eq!(got, want, "stride {stride}, {len} bytes");
            }
        }
    }
}
