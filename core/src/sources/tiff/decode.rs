//! One TIFF chunk from its compressed bytes to samples, and from samples to texels:
//! decompression (none, ZIP, LZW, PackBits, JPEG), samples of fewer than 8 bits unpacked,
//! the predictors (horizontal differencing, floating-point byte planes), byte order, and
//! the copy of a rectangle into a destination of the served format (three samples widened
//! to four, planes interleaved, unassociated alpha associated, CMYK as RGB).

use super::layout::{SampleLayout, StoredColour, TiffCompression, TiffPredictor};
use crate::sources::associate;
use crate::sources::byte_sums::byte_prefix_sums;
use crate::sources::inflate::inflate_whole;
use crate::textures::TexelType;
use half::f16;
use std::cell::RefCell;

thread_local! {
    /// Each thread's zlib inflater, for the ZIP chunks libdeflate will not take whole
    /// (`inflate_whole`: a stream that holds more than the chunk, or one damaged after its
    /// last needed byte).
    static INFLATE: RefCell<Option<flate2::Decompress>> = const { RefCell::new(None) };
}

/// What a chunk decodes to: `width × height` pixels of `samples` samples (one plane's
/// chunk: one sample), and, for JPEG chunks, the level's JPEGTables stream.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkShape<'a> {
    /// Pixels across (the tile width, or the image width for strips).
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Samples a pixel in this chunk.
    pub samples: usize,
    /// The tables JPEG chunks' abbreviated streams omit; empty for other compressions.
    pub jpeg_tables: &'a [u8],
}

/// Decode the JPEG chunk `input` (an abbreviated stream: its tables are `shape`'s, a
/// JPEGTables stream) of 8-bit samples into `out` (`width · height · samples` bytes):
/// grey, or RGB (YCbCr converted by the decoder, as libtiff's JPEGCOLORMODE_RGB gives
/// OpenImageIO).
fn decompress_jpeg(input: &[u8], shape: ChunkShape<'_>, out: &mut [u8]) -> Result<(), String> {
    let ChunkShape {
        width,
        height,
        samples,
        jpeg_tables: tables,
    } = shape;
    use image::ImageDecoder;
    // The tables stream without its EOI, then the chunk without its SOI: one whole JPEG.
    let tables = match tables {
        [body @ .., 0xFF, 0xD9] if tables.starts_with(&[0xFF, 0xD8]) => body,
        [] => &[0xFF, 0xD8][..],
        _ => return Err("the JPEGTables tag is not a JPEG stream (SOI … EOI)".into()),
    };
    let Some(body) = input.strip_prefix(&[0xFF, 0xD8]) else {
        return Err("a JPEG chunk does not start with SOI (corrupt)".into());
    };
    let mut stream = Vec::with_capacity(tables.len() + body.len());
    stream.extend_from_slice(tables);
    stream.extend_from_slice(body);
    let decoder = image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(stream))
        .map_err(|e| format!("a JPEG chunk is corrupt: {e}"))?;
    let (w, h) = decoder.dimensions();
    let want = match samples {
        1 => image::ColorType::L8,
        _ => image::ColorType::Rgb8,
    };
    if (w as usize, h as usize) != (width, height) || decoder.color_type() != want {
        return Err(format!(
            "a JPEG chunk holds {w}×{h} {:?} pixels, {width}×{height} {want:?} expected",
            decoder.color_type()
        ));
    }
    if out.len() != width * height * samples {
        return Err("a JPEG chunk's buffer has the wrong size".into());
    }
    decoder
        .read_image(out)
        .map_err(|e| format!("a JPEG chunk is corrupt: {e}"))
}

/// [`decompress_jpeg`], with a panic of the JPEG decoder (a crate outside this one, fed
/// the file's bytes) turned into an error.
fn decompress_jpeg_contained(
    input: &[u8],
    shape: ChunkShape<'_>,
    out: &mut [u8],
) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        decompress_jpeg(input, shape, out)
    }))
    .unwrap_or_else(|p| {
        Err(format!(
            "the JPEG decoder panicked: {}",
            crate::error::panic_message(&*p)
        ))
    })
}

/// Decompress `input`, a chunk of `shape`, into exactly `out.len()` bytes. A chunk that
/// decodes to fewer bytes is an error; extra bytes are ignored (JPEG: a chunk of another
/// size is an error).
pub(crate) fn decompress(
    compression: TiffCompression,
    input: &[u8],
    shape: ChunkShape<'_>,
    out: &mut [u8],
) -> Result<(), String> {
    let want = out.len();
    let short = |got: usize| {
        Err(format!(
            "a chunk decodes to {got} bytes, {want} expected (truncated or corrupt)"
        ))
    };
    match compression {
        TiffCompression::None => {
            if input.len() < out.len() {
                return short(input.len());
            }
            out.copy_from_slice(&input[..out.len()]);
        }
        TiffCompression::Zip => {
            if let Some(got) = inflate_whole(input, out) {
                return if got < want { short(got) } else { Ok(()) };
            }
            // One inflater per thread, reset per chunk (its state and window are reused):
            // it stops when `out` is full and reports what it could decode of the rest.
            let got = INFLATE
                .with_borrow_mut(|z| {
                    let z = z.get_or_insert_with(|| flate2::Decompress::new(true));
                    z.reset(true);
                    z.decompress(input, out, flate2::FlushDecompress::Finish)
                        .map(|_| z.total_out() as usize)
                })
                .map_err(|e| format!("a ZIP chunk is corrupt: {e}"))?;
            if got < want {
                return short(got);
            }
        }
        TiffCompression::Lzw => {
            let mut d = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
            let (mut inp, mut got) = (input, 0usize);
            while got < out.len() {
                let r = d.decode_bytes(inp, &mut out[got..]);
                got += r.consumed_out;
                inp = &inp[r.consumed_in..];
                match r.status {
                    Ok(weezl::LzwStatus::Ok) if r.consumed_in + r.consumed_out > 0 => {}
                    Ok(_) => break,
                    Err(e) => return Err(format!("an LZW chunk is corrupt: {e}")),
                }
            }
            if got < out.len() {
                return short(got);
            }
        }
        TiffCompression::Jpeg => return decompress_jpeg_contained(input, shape, out),
        TiffCompression::PackBits => {
            let (mut i, mut o) = (0usize, 0usize);
            while o < out.len() && i < input.len() {
                let n = input[i] as i8;
                i += 1;
                if n >= 0 {
                    let len = n as usize + 1;
                    let len = len.min(out.len() - o);
                    if i + len > input.len() {
                        break;
                    }
                    out[o..o + len].copy_from_slice(&input[i..i + len]);
                    (i, o) = (i + len, o + len);
                } else if n != -128 {
                    let len = (1 - n as isize) as usize;
                    let len = len.min(out.len() - o);
                    let Some(&v) = input.get(i) else { break };
                    out[o..o + len].fill(v);
                    (i, o) = (i + 1, o + len);
                }
            }
            if o < out.len() {
                return short(o);
            }
        }
    }
    Ok(())
}

/// Turn decompressed chunk bytes (rows of `width` pixels of `per_pixel` samples) into
/// little-endian samples: undo the predictor and the file's byte order, in place.
pub(crate) fn unpredict(s: &SampleLayout, data: &mut [u8], width: usize, per_pixel: usize) {
    let sb = s.sample_bytes();
    let row = width * per_pixel * sb;
    if row == 0 {
        return;
    }
    match s.predictor {
        TiffPredictor::FloatingPoint => {
            let mut tmp = vec![0u8; row];
            for r in data.chunks_exact_mut(row) {
                byte_prefix_sums(r, per_pixel);
                tmp.copy_from_slice(r);
                // Byte plane j holds byte j (most significant first) of every sample.
                let n = width * per_pixel;
                match sb {
                    4 => {
                        let (p0, rest) = tmp.split_at(n);
                        let (p1, rest) = rest.split_at(n);
                        let (p2, p3) = rest.split_at(n);
                        let planes = p0.iter().zip(p1).zip(p2.iter().zip(p3));
                        for (out, ((&b3, &b2), (&b1, &b0))) in r.chunks_exact_mut(4).zip(planes) {
                            out.copy_from_slice(&[b0, b1, b2, b3]);
                        }
                    }
                    2 => {
                        let (p0, p1) = tmp.split_at(n);
                        for (out, (&b1, &b0)) in r.chunks_exact_mut(2).zip(p0.iter().zip(p1)) {
                            out.copy_from_slice(&[b0, b1]);
                        }
                    }
                    _ => {
                        for k in 0..n {
                            for j in 0..sb {
                                r[k * sb + (sb - 1 - j)] = tmp[j * n + k];
                            }
                        }
                    }
                }
            }
        }
        TiffPredictor::Horizontal | TiffPredictor::None => {
            if !s.little && sb > 1 {
                for v in data.chunks_exact_mut(sb) {
                    v.reverse();
                }
            }
            if s.predictor == TiffPredictor::None {
                return;
            }
            // 8-bit samples through the SSE2 byte sums; wider ones with one running sum
            // per sample of a pixel.
            let mut acc = vec![0u32; per_pixel];
            for r in data.chunks_exact_mut(row) {
                match sb {
                    1 => byte_prefix_sums(r, per_pixel),
                    2 => sample_sums::<2>(r, &mut acc),
                    _ => sample_sums::<4>(r, &mut acc),
                }
            }
        }
    }
}

/// Undo the horizontal predictor on one row of `SB`-byte little-endian samples (2 or 4),
/// `acc.len()` samples a pixel: each becomes the wrapping sum of itself and the samples of
/// its channel before it. (`SB` is a constant so that the copies below are moves, not
/// calls to `memcpy`.)
fn sample_sums<const SB: usize>(row: &mut [u8], acc: &mut [u32]) {
    let mask = if SB == 2 { 0xffff } else { u32::MAX };
    acc.fill(0);
    for pixel in row.chunks_exact_mut(SB * acc.len()) {
        for (a, v) in acc.iter_mut().zip(pixel.chunks_exact_mut(SB)) {
            let mut b = [0u8; 4];
            b[..SB].copy_from_slice(v);
            *a = a.wrapping_add(u32::from_le_bytes(b)) & mask;
            v.copy_from_slice(&a.to_le_bytes()[..SB]);
        }
    }
}

/// The value of one (opaque) alpha sample of the served type, little-endian.
fn one(t: TexelType) -> [u8; 4] {
    match t {
        TexelType::U8 => [255, 0, 0, 0],
        TexelType::U16 => [0xff, 0xff, 0, 0],
        TexelType::F16 => {
            let b = f16::ONE.to_le_bytes();
            [b[0], b[1], 0, 0]
        }
        TexelType::F32 => 1.0f32.to_le_bytes(),
    }
}

/// A signed integer sample (1 or 2 little-endian bytes) as OpenImageIO converts it to
/// float: `v · (1 / max)`, little-endian.
fn signed_to_float(sample: &[u8]) -> [u8; 4] {
    let (v, max) = match *sample {
        [b] => (f32::from(b as i8), 127.0f64),
        [lo, hi] => (f32::from(i16::from_le_bytes([lo, hi])), 32767.0f64),
        // The layout admits 8- and 16-bit signed samples only.
        _ => (0.0, 1.0),
    };
    (v * (1.0 / max) as f32).to_le_bytes()
}

/// Unpack rows of `per_row` samples of fewer than 8 bits (`packed`: each row ending on a
/// byte boundary, filled from the most significant bit) into a byte each in `out`: palette
/// indices as they are, grey scaled to 0–255 as OpenImageIO's `bit_range_convert` scales
/// it (`v · 255 / (2^bits − 1)`).
pub(crate) fn unpack(s: &SampleLayout, packed: &[u8], per_row: usize, out: &mut [u8]) {
    let bits = s.bits as usize;
    let row_bytes = s.stored_row_bytes(per_row, 1);
    if per_row == 0 || row_bytes == 0 {
        return;
    }
    let max = (1u32 << bits) - 1;
    let scale = s.colour != StoredColour::Palette;
    for (src, dst) in packed
        .chunks_exact(row_bytes)
        .zip(out.chunks_exact_mut(per_row))
    {
        for (k, o) in dst.iter_mut().enumerate() {
            let (at, shift) = (k * bits / 8, k * bits % 8);
            let v = u32::from(src[at] >> (8 - bits - shift)) & max;
            *o = if scale {
                (v * 255 / max) as u8
            } else {
                v as u8
            };
        }
    }
}

/// Where a copy goes: a rectangle of a chunk into the destination.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rect {
    /// Chunk width in pixels.
    pub chunk_w: usize,
    /// First column and row inside the chunk.
    pub sx: usize,
    /// First row inside the chunk.
    pub sy: usize,
    /// Width and height of the rectangle.
    pub w: usize,
    /// Height of the rectangle.
    pub h: usize,
    /// Byte offset of its first texel in the destination.
    pub dest_at: usize,
    /// Destination row stride.
    pub row_bytes: usize,
}

/// Copy `rect` of a decoded chunk (`planes`: one buffer for interleaved samples, one per
/// sample for separate planes) into `dest` as texels of the served format: palette
/// indices looked up in `palette` ([`TiffLayout::palette`](super::layout::TiffLayout)),
/// white-is-zero grey inverted ([`StoredColour`]), and unassociated alpha
/// ([`SampleLayout::unassociated_alpha`]) associated.
pub(crate) fn copy(
    s: &SampleLayout,
    palette: &[[u8; 3]],
    planes: &[&[u8]],
    rect: Rect,
    dest: &mut [u8],
) {
    match s.colour {
        StoredColour::Palette => return copy_palette(palette, planes[0], rect, dest),
        StoredColour::AsStored => copy_as_stored(s, planes, rect, dest),
        StoredColour::MinIsWhite => {
            copy_as_stored(s, planes, rect, dest);
            invert_stored(s, rect, dest);
        }
        StoredColour::Cmyk => copy_cmyk(s, planes, rect, dest),
    }
    if s.unassociated_alpha {
        let format = s.format();
        let tb = format.texel_bytes();
        for j in 0..rect.h {
            let d = rect.dest_at + j * rect.row_bytes;
            associate::associate_rounded(&mut dest[d..d + rect.w * tb], format);
        }
    }
}

/// [`copy`] of 8-bit palette indices: each texel the index's colour, alpha 1 (RGBA8).
fn copy_palette(palette: &[[u8; 3]], indices: &[u8], rect: Rect, dest: &mut [u8]) {
    for j in 0..rect.h {
        let src = (rect.sy + j) * rect.chunk_w + rect.sx;
        let d = rect.dest_at + j * rect.row_bytes;
        let row = dest[d..d + rect.w * 4].chunks_exact_mut(4);
        for (texel, &i) in row.zip(&indices[src..src + rect.w]) {
            let [r, g, b] = palette.get(usize::from(i)).copied().unwrap_or_default();
            texel.copy_from_slice(&[r, g, b, 255]);
        }
    }
}

/// [`copy`] of CMYK separations (8/16-bit unsigned, a fifth sample alpha) as RGB(A) of the
/// same type: OpenImageIO's `cmyk_to_rgb`, in its arithmetic (a sample `v` is `v · (1 /
/// max)` in f32, `R = (1 − C)(1 − K)`, stored as `R · max + 0.5` truncated); alpha as
/// stored, else 1.
fn copy_cmyk(s: &SampleLayout, planes: &[&[u8]], rect: Rect, dest: &mut [u8]) {
    let sb = s.sample_bytes();
    let read = s.read_samples() as usize;
    let max = if sb == 1 { 255.0f32 } else { 65535.0 };
    let sample = |px: usize, c: usize| -> u32 {
        let at = stored_sample(s, planes, px, c);
        if sb == 1 {
            u32::from(at[0])
        } else {
            u32::from(u16::from_le_bytes([at[0], at[1]]))
        }
    };
    let tb = 4 * sb;
    for j in 0..rect.h {
        let d0 = rect.dest_at + j * rect.row_bytes;
        for i in 0..rect.w {
            let px = (rect.sy + j) * rect.chunk_w + rect.sx + i;
            let ink = |c: usize| sample(px, c) as f32 * (1.0 / max);
            let k = 1.0 - ink(3);
            let rgb = [0, 1, 2].map(|c| (((1.0 - ink(c)) * k) * max + 0.5).clamp(0.0, max) as u32);
            let alpha = if read == 5 { sample(px, 4) } else { max as u32 };
            let texel = &mut dest[d0 + i * tb..d0 + (i + 1) * tb];
            for (out, v) in texel
                .chunks_exact_mut(sb)
                .zip(rgb.into_iter().chain([alpha]))
            {
                if sb == 1 {
                    out[0] = v as u8;
                } else {
                    out.copy_from_slice(&(v as u16).to_le_bytes());
                }
            }
        }
    }
}

/// The bytes of sample `c` of pixel `px` of a decoded chunk (`planes`: one buffer for
/// interleaved samples, one per sample for separate planes).
fn stored_sample<'a>(s: &SampleLayout, planes: &[&'a [u8]], px: usize, c: usize) -> &'a [u8] {
    let sb = s.sample_bytes();
    if s.separate {
        &planes[c][px * sb..px * sb + sb]
    } else {
        let at = (px * s.samples as usize + c) * sb;
        &planes[0][at..at + sb]
    }
}

/// Invert the stored samples of white-is-zero grey in `dest` (`max - v`, unsigned
/// integers): every stored sample, alpha included, as OpenImageIO's `invert_photometric`.
fn invert_stored(s: &SampleLayout, rect: Rect, dest: &mut [u8]) {
    let format = s.format();
    let (tb, ob) = (format.texel_bytes(), format.texel_type.bytes());
    let stored = s.served_samples() as usize;
    for j in 0..rect.h {
        let d = rect.dest_at + j * rect.row_bytes;
        for texel in dest[d..d + rect.w * tb].chunks_exact_mut(tb) {
            for v in texel[..stored * ob].chunks_exact_mut(ob) {
                match format.texel_type {
                    TexelType::U8 => v[0] = 255 - v[0],
                    _ => {
                        let x = u16::from_le_bytes([v[0], v[1]]);
                        v.copy_from_slice(&(65535 - x).to_le_bytes());
                    }
                }
            }
        }
    }
}

/// [`copy`] of the first four samples of each pixel (signed integers as float), three
/// widened to four.
fn copy_as_stored(s: &SampleLayout, planes: &[&[u8]], rect: Rect, dest: &mut [u8]) {
    let sb = s.sample_bytes();
    let n = s.samples as usize;
    let served = s.served_samples() as usize;
    let format = s.format();
    let (out_c, ob) = (format.channels as usize, format.texel_type.bytes());
    let tb = out_c * ob;
    if !s.separate && n == out_c && !s.signed {
        let src_px = n * sb;
        for j in 0..rect.h {
            let src = ((rect.sy + j) * rect.chunk_w + rect.sx) * src_px;
            let d = rect.dest_at + j * rect.row_bytes;
            dest[d..d + rect.w * tb].copy_from_slice(&planes[0][src..src + rect.w * src_px]);
        }
        return;
    }
    let alpha = one(format.texel_type);
    for j in 0..rect.h {
        let d0 = rect.dest_at + j * rect.row_bytes;
        for i in 0..rect.w {
            let px = (rect.sy + j) * rect.chunk_w + rect.sx + i;
            let d = d0 + i * tb;
            for c in 0..served {
                let src = stored_sample(s, planes, px, c);
                let out = &mut dest[d + c * ob..d + (c + 1) * ob];
                if s.signed {
                    out.copy_from_slice(&signed_to_float(src));
                } else {
                    out.copy_from_slice(src);
                }
            }
            if served == 3 {
                dest[d + 3 * ob..d + 4 * ob].copy_from_slice(&alpha[..ob]);
            }
        }
    }
}

#[cfg(test)]
mod tests;
