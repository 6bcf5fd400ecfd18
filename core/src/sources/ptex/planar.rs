//! Stored blocks' layout (format note §7): difference decoding of integer data and the
//! interleaving of planar channels into texels.

use super::header::DataType;

/// Undo difference encoding (format note §7): a running wrapping sum over the whole
/// buffer, for `u8` and `u16`; other types are left as they are (the reference does the
/// same; its writer never difference-encodes them).
pub(crate) fn decode_difference(data_type: DataType, b: &mut [u8]) {
    match data_type {
        DataType::U8 => {
            let mut prev = 0u8;
            for x in b.iter_mut() {
                prev = prev.wrapping_add(*x);
                *x = prev;
            }
        }
        DataType::U16 => {
            let mut prev = 0u16;
            for pair in b.chunks_exact_mut(2) {
                prev = prev.wrapping_add(u16::from_le_bytes([pair[0], pair[1]]));
                pair.copy_from_slice(&prev.to_le_bytes());
            }
        }
        DataType::Half | DataType::F32 => {}
    }
}

/// Interleave planar data (all of channel 0, then channel 1, ...; each plane `texels`
/// values) into texels with their channels side by side.
pub(crate) fn interleave(
    planar: &[u8],
    texels: usize,
    nchannels: usize,
    value_size: usize,
) -> Vec<u8> {
    let mut out = vec![0u8; planar.len()];
    // Fixed-size copies: a `copy_from_slice` of a run-time length is a call to memcpy per
    // value, which dominated page fills.
    match value_size {
        1 => interleave_values::<1>(planar, &mut out, texels, nchannels),
        2 => interleave_values::<2>(planar, &mut out, texels, nchannels),
        4 => interleave_values::<4>(planar, &mut out, texels, nchannels),
        _ => {
            let pixel = nchannels * value_size;
            for c in 0..nchannels {
                let plane = &planar[c * texels * value_size..(c + 1) * texels * value_size];
                for (t, value) in plane.chunks_exact(value_size).enumerate() {
                    let at = t * pixel + c * value_size;
                    out[at..at + value_size].copy_from_slice(value);
                }
            }
        }
    }
    out
}

/// [`interleave`] for values of `N` bytes.
fn interleave_values<const N: usize>(
    planar: &[u8],
    out: &mut [u8],
    texels: usize,
    nchannels: usize,
) {
    match nchannels {
        1 => out.copy_from_slice(&planar[..out.len()]),
        2 => interleave_texels::<N, 2>(planar, out, texels),
        3 => interleave_texels::<N, 3>(planar, out, texels),
        4 => interleave_texels::<N, 4>(planar, out, texels),
        _ => interleave_planes::<N>(planar, out, texels, nchannels),
    }
}

/// [`interleave`] for `C` channels of `N` bytes, texel by texel: each texel is written
/// whole, from the `C` planes read side by side (one pass, sequential writes).
fn interleave_texels<const N: usize, const C: usize>(planar: &[u8], out: &mut [u8], texels: usize) {
    let plane = texels * N;
    let planes: [&[u8]; C] = std::array::from_fn(|c| &planar[c * plane..(c + 1) * plane]);
    for (t, texel) in out.chunks_exact_mut(C * N).enumerate().take(texels) {
        for (c, p) in planes.iter().enumerate() {
            let value: &[u8; N] = p[t * N..t * N + N].try_into().expect("N bytes");
            texel[c * N..c * N + N].copy_from_slice(value);
        }
    }
}

/// [`interleave`] for any channel count, plane by plane.
fn interleave_planes<const N: usize>(
    planar: &[u8],
    out: &mut [u8],
    texels: usize,
    nchannels: usize,
) {
    let pixel = nchannels * N;
    for c in 0..nchannels {
        let plane = &planar[c * texels * N..(c + 1) * texels * N];
        let values = plane.chunks_exact(N);
        for (texel, value) in out.chunks_exact_mut(pixel).zip(values) {
            let value: &[u8; N] = value.try_into().expect("chunks of N bytes");
            texel[c * N..c * N + N].copy_from_slice(value);
        }
    }
}
