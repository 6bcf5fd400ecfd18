//! Colour samples narrower than 8 bits — 15/16-bit Targa pixels and palette entries, 16-bit
//! BMP pixels — as OpenImageIO 2.4 expands them. The `image` crate scales 5- and 6-bit
//! samples to 8 bits (`255 · v / max`, rounded); OpenImageIO replicates their bits
//! (`bit_range_convert`: `v << 3 | v >> 2` for 5 bits, `v << 2 | v >> 4` for 6), which
//! differs by one step for half the values. (For 1, 2, 3, 4 and 7 bits the two agree.)
//! [`targa_sample_bits`] and [`bmp_sample_bits`] read from a file's header how wide its
//! colour samples are, and [`replicate_bits`] turns the crate's values into OpenImageIO's.

use std::io::Read;

/// The widths of the red, green and blue samples of the Targa file read by `file`, where
/// they are 5 bits (a true-colour image of 15 or 16 bits a pixel, or a colour-mapped one with
/// 15- or 16-bit palette entries); `Ok(None)` otherwise. `None` when the header cannot be
/// read.
pub(crate) fn targa_sample_bits(mut file: impl Read) -> Option<Option<[u32; 3]>> {
    let mut header = [0u8; 18];
    file.read_exact(&mut header).ok()?;
    let (colour_map, image_type, entry_bits, pixel_bits) =
        (header[1], header[2], header[7], header[16]);
    let five = |bits: u8| bits == 15 || bits == 16;
    let narrow = match image_type {
        // True colour, plain or run-length.
        2 | 10 => five(pixel_bits),
        // Colour-mapped, plain or run-length.
        1 | 9 => colour_map == 1 && five(entry_bits),
        _ => false,
    };
    Some(narrow.then_some([5, 5, 5]))
}

/// The widths of the red, green and blue samples of the 16-bit BMP file read by `file`: its
/// BITFIELDS masks, or 5-5-5 without them (OpenImageIO's rule); `Ok(None)` for other pixel
/// sizes. `None` when the header cannot be read.
pub(crate) fn bmp_sample_bits(mut file: impl Read) -> Option<Option<[u32; 3]>> {
    // File header (14 bytes), then the info header: its size, ..., bits a pixel (u16 at
    // 14 + 14), compression (u32 at 14 + 16); BITFIELDS (3) masks follow a 40-byte info
    // header, or sit at the same place inside a larger one.
    let mut head = [0u8; 14 + 40 + 12];
    file.read_exact(&mut head[..14 + 40]).ok()?;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let bits = u16::from_le_bytes([head[28], head[29]]);
    if bits != 16 {
        return Some(None);
    }
    let masks = if u32_at(&head, 30) == 3 && file.read_exact(&mut head[54..66]).is_ok() {
        [u32_at(&head, 54), u32_at(&head, 58), u32_at(&head, 62)]
    } else {
        [0, 0, 0]
    };
    let masks = if masks.contains(&0) {
        [0x7c00, 0x03e0, 0x001f]
    } else {
        masks
    };
    Some(Some(masks.map(u32::count_ones)))
}

/// OpenImageIO's 8-bit value of the `bits`-bit sample the `image` crate expanded to `v`.
fn replicated(v: u8, bits: u32) -> u8 {
    if !(5..=6).contains(&bits) {
        // The crate replicates these too, or keeps the top 8 bits as OIIO does.
        return v;
    }
    let max = (1u32 << bits) - 1;
    // The crate's values are round(255 · x / max): x is recovered exactly.
    let x = (u32::from(v) * max + 127) / 255;
    ((x << (8 - bits)) | (x >> (2 * bits - 8))) as u8
}

/// Re-expand the colour samples (the first three channels: RGB or RGBA) of 8-bit `texels`
/// of `channels` channels, decoded from samples of `bits` (red, green, blue) bits.
pub(crate) fn replicate_bits(texels: &mut [u8], channels: usize, bits: [u32; 3]) {
    if channels < 3 {
        return;
    }
    for t in texels.chunks_exact_mut(channels) {
        for (v, &b) in t[..3].iter_mut().zip(&bits) {
            *v = replicated(*v, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_five_and_six_bit_value_becomes_its_replicated_bits() {
        for bits in [5u32, 6] {
            let max = (1u32 << bits) - 1;
            for x in 0..=max {
                // The image crate's expansion, then ours; OpenImageIO's bit_range_convert.
                let crate_value = (255.0 * x as f64 / max as f64).round() as u8;
                let want = ((x << (8 - bits)) | (x >> (2 * bits - 8))) as u8;
                assert_eq!(replicated(crate_value, bits), want, "{bits} bits, x = {x}");
            }
        }
        assert_eq!(replicated(77, 8), 77);
        assert_eq!(replicated(0x55, 2), 0x55);
    }

    #[test]
    fn headers_say_which_files_have_narrow_samples() {
        let targa = |map: u8, kind: u8, entry: u8, pixel: u8| {
            let mut h = [0u8; 18];
            (h[1], h[2], h[7], h[16]) = (map, kind, entry, pixel);
            targa_sample_bits(&h[..])
        };
        assert_eq!(targa(0, 2, 0, 16), Some(Some([5, 5, 5])));
        assert_eq!(targa(0, 10, 0, 15), Some(Some([5, 5, 5])));
        assert_eq!(targa(0, 2, 0, 24), Some(None));
        assert_eq!(targa(1, 9, 16, 8), Some(Some([5, 5, 5])));
        assert_eq!(targa(1, 1, 24, 8), Some(None));
        assert_eq!(targa(0, 3, 0, 16), Some(None)); // grey and alpha, 8 bits each
        assert_eq!(targa_sample_bits(&[0u8; 10][..]), None);

        let bmp = |bits: u16, compression: u32, masks: [u32; 3]| {
            let mut h = vec![0u8; 14 + 40];
            h[28..30].copy_from_slice(&bits.to_le_bytes());
            h[30..34].copy_from_slice(&compression.to_le_bytes());
            for m in masks {
                h.extend_from_slice(&m.to_le_bytes());
            }
            bmp_sample_bits(&h[..])
        };
        assert_eq!(bmp(16, 0, [0; 3]), Some(Some([5, 5, 5])));
        assert_eq!(bmp(16, 3, [0xf800, 0x07e0, 0x001f]), Some(Some([5, 6, 5])));
        assert_eq!(bmp(24, 0, [0; 3]), Some(None));
        assert_eq!(bmp_sample_bits(&[0u8; 20][..]), None);
    }
}
