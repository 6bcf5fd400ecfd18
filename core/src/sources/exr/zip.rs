//! OpenEXR's ZIP and ZIPS blocks decoded here rather than by the `exr` crate: libdeflate's
//! whole-buffer inflate (1.15× the crate's on maketx-layout tiles), then the predictor (a
//! running byte sum less 128, in registers: `byte_sums`) and the interleave of the two
//! byte halves. The result is the crate's decoded block: for each line, each channel's
//! samples, little-endian. Anything unusual (a stream libdeflate will not take whole, a
//! big-endian machine) is left to the crate, whose errors stay what they were.

use crate::sources::byte_sums::byte_prefix_sums;
use crate::sources::inflate::inflate_whole;
use exr::compression::Compression;
use std::cell::RefCell;

thread_local! {
    /// Each thread's scratch: the inflated, still predicted bytes.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The decoded bytes (`expected` of them) of a block stored with `compression` as
/// `compressed`, or `None` to let the `exr` crate decode it.
pub(super) fn decode(
    compression: Compression,
    compressed: &[u8],
    expected: usize,
) -> Option<Vec<u8>> {
    if !matches!(compression, Compression::ZIP1 | Compression::ZIP16) || cfg!(target_endian = "big")
    {
        return None;
    }
    if compressed.len() == expected {
        // Stored raw: compression did not make it smaller.
        return Some(compressed.to_vec());
    }
    SCRATCH.with_borrow_mut(|tmp| {
        tmp.resize(expected, 0);
        if inflate_whole(compressed, tmp) != Some(expected) {
            return None;
        }
        // Differences to samples: t[i] = t[i - 1] + t[i] - 128.
        for b in &mut tmp[1..] {
            *b = b.wrapping_sub(128);
        }
        byte_prefix_sums(tmp, 1);
        // The first half holds the even bytes, the second the odd ones.
        let (first, second) = tmp.split_at(expected.div_ceil(2));
        let mut out = vec![0u8; expected];
        for (pair, (&a, &b)) in out.chunks_exact_mut(2).zip(first.iter().zip(second)) {
            pair[0] = a;
            pair[1] = b;
        }
        if expected % 2 == 1 {
            out[expected - 1] = first[first.len() - 1];
        }
        Some(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What OpenEXR's ZIP compressor does: split even and odd bytes, difference, deflate.
    fn compress(data: &[u8]) -> Vec<u8> {
        let half = data.len().div_ceil(2);
        let mut t = vec![0u8; data.len()];
        for (i, &b) in data.iter().enumerate() {
            t[if i % 2 == 0 { i / 2 } else { half + i / 2 }] = b;
        }
        let mut p = t.clone();
        for i in 1..t.len() {
            p[i] = t[i].wrapping_sub(t[i - 1]).wrapping_add(128);
        }
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
        let mut out = vec![0u8; c.zlib_compress_bound(p.len())];
        let n = c.zlib_compress(&p, &mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn blocks_decode_to_what_was_compressed_and_the_rest_is_left_to_the_crate() {
        for len in [1usize, 2, 3, 17, 64, 1001, 32768] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 13) as u8).collect();
            let z = compress(&data);
            assert_eq!(
                decode(Compression::ZIP16, &z, len),
                Some(data.clone()),
                "{len}"
            );
            assert_eq!(decode(Compression::ZIP1, &z, len), Some(data.clone()));
            // Another size than the stream holds, or damage: the crate decides.
            assert_eq!(decode(Compression::ZIP16, &z, len + 1), None);
            assert_eq!(decode(Compression::ZIP16, &z[..z.len() / 2], len), None);
            assert_eq!(decode(Compression::PIZ, &z, len), None);
        }
        // Stored raw (no smaller compressed).
        assert_eq!(
            decode(Compression::ZIP1, &[1, 2, 3], 3),
            Some(vec![1, 2, 3])
        );
    }
}
