//! Targa files' 5-bit colour samples as OpenImageIO 2.4 expands them. A 15- or 16-bit
//! Targa pixel (or palette entry) holds 5 bits a channel; the `image` crate scales them to
//! 8 bits (`255 · v / 31`, rounded), OpenImageIO replicates their bits (`v << 3 | v >> 2`,
//! its `bit_range_convert<5, 8>`), which differs by one step for 16 of the 32 values.
//! [`five_bit_samples`] says from the header whether a file's colour samples are 5-bit, and
//! [`replicate_five_bit`] turns the crate's values into OpenImageIO's.

use std::io::Read;

/// Whether the colour samples of the Targa file read by `file` are 5 bits wide: a true-colour
/// image of 15 or 16 bits a pixel, or a colour-mapped one with 15- or 16-bit palette
/// entries. `None` when the header cannot be read.
pub(crate) fn five_bit_samples(mut file: impl Read) -> Option<bool> {
    let mut header = [0u8; 18];
    file.read_exact(&mut header).ok()?;
    let (colour_map, image_type, entry_bits, pixel_bits) =
        (header[1], header[2], header[7], header[16]);
    let five = |bits: u8| bits == 15 || bits == 16;
    Some(match image_type {
        // True colour, plain or run-length.
        2 | 10 => five(pixel_bits),
        // Colour-mapped, plain or run-length.
        1 | 9 => colour_map == 1 && five(entry_bits),
        _ => false,
    })
}

/// OpenImageIO's 8-bit value of the 5-bit sample the `image` crate expanded to `v`.
fn replicated(v: u8) -> u8 {
    // The crate's values are round(255 · x / 31): x is recovered exactly.
    let x = ((u32::from(v) * 31 + 127) / 255) as u8;
    (x << 3) | (x >> 2)
}

/// Re-expand the colour samples of 8-bit `texels` of `channels` channels (the first three of
/// RGB or RGBA; alpha, one bit in such files, is left alone) decoded from 5-bit ones.
pub(crate) fn replicate_five_bit(texels: &mut [u8], channels: usize) {
    if channels < 3 {
        return;
    }
    for t in texels.chunks_exact_mut(channels) {
        for v in &mut t[..3] {
            *v = replicated(*v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_five_bit_value_becomes_its_replicated_bits() {
        for x in 0u32..32 {
            // The image crate's expansion, then ours.
            let crate_value = ((255 * x) as f64 / 31.0).round() as u8;
            let want = ((x << 3) | (x >> 2)) as u8;
            assert_eq!(replicated(crate_value), want, "x = {x}");
        }
    }

    #[test]
    fn the_header_says_which_files_have_five_bit_samples() {
        let header = |map: u8, kind: u8, entry: u8, pixel: u8| {
            let mut h = [0u8; 18];
            (h[1], h[2], h[7], h[16]) = (map, kind, entry, pixel);
            five_bit_samples(&h[..])
        };
        assert_eq!(header(0, 2, 0, 16), Some(true));
        assert_eq!(header(0, 10, 0, 15), Some(true));
        assert_eq!(header(0, 2, 0, 24), Some(false));
        assert_eq!(header(1, 9, 16, 8), Some(true));
        assert_eq!(header(1, 1, 24, 8), Some(false));
        assert_eq!(header(0, 3, 0, 16), Some(false)); // grey and alpha, 8 bits each
        assert_eq!(five_bit_samples(&[0u8; 10][..]), None);
    }
}
