//! The 2:1 box filter that builds mip levels for in-memory images, for OpenEXR files
//! without a usable mip chain and for caller-owned pixels of the C ABI: each output texel
//! is the `f32` average of its 2×2 source texels (3 wide at the last texel of an odd side),
//! encoded back to the texel format. One implementation, so every path gives the same mips.
//!
//! [`box_span`] is the rule of which texels an output texel averages; the `f32` images of
//! [`crate::sources::mips`] (`demandtex convert`'s box filter) average the same spans.

use crate::textures::TexelFormat;

/// The source span `[start, end)` that output index `i` of `out_len` averages along a side
/// of `in_len`: two texels, three for the last output of an odd side, one for a side of 1.
#[inline]
pub fn box_span(i: usize, out_len: usize, in_len: usize) -> (usize, usize) {
    let start = 2 * i;
    let end = if i + 1 == out_len { in_len } else { start + 2 };
    (start, end)
}

/// Output row `j` of a `dw × dh` level made from a `sw × sh` one: each texel the `f32`
/// average of its 2×2 (or 3-wide at an odd edge) box of source texels. `src_row(y)` gives
/// source row `y` (at least `sw` texels of `format`); `sums` is scratch space.
pub fn filter_row<'a>(
    format: TexelFormat,
    (sw, sh): (usize, usize),
    (dw, dh): (usize, usize),
    j: usize,
    src_row: impl Fn(usize) -> &'a [u8],
    sums: &mut Vec<[f32; 4]>,
    out: &mut [u8],
) {
    let tb = format.texel_bytes();
    let src_row_bytes = sw * tb;
    sums.clear();
    sums.resize(dw, [0.0; 4]);
    let (y0, y1) = box_span(j, dh, sh);
    for y in y0..y1 {
        let row = &src_row(y)[..src_row_bytes];
        for (i, sum) in sums.iter_mut().enumerate() {
            let (x0, x1) = box_span(i, dw, sw);
            for texel in row[x0 * tb..x1 * tb].chunks_exact(tb) {
                let c = format.decode(texel);
                for k in 0..4 {
                    sum[k] += c[k];
                }
            }
        }
    }
    let rows = (y1 - y0) as f32;
    for (i, sum) in sums.iter_mut().enumerate() {
        let (x0, x1) = box_span(i, dw, sw);
        let n = rows * (x1 - x0) as f32;
        *sum = sum.map(|s| s / n);
    }
    format.encode_row(sums, out);
}
