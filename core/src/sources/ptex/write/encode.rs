//! One face (or reduction) of a level as a stored block, as the reference writer makes it
//! (format note §6-§8): planar, difference-encoded for `u8` and `u16`, one zlib stream;
//! split into near-square tiles when the face is 128 KiB or more, a uniform tile stored
//! as its one texel.

use super::super::faces::Res;
use super::super::header::DataType;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use std::io::Write;

/// The uncompressed bytes a tile aims at (`TileSize`).
const TILE_SIZE: usize = 65536;
/// The largest block size a face data header can record (30 bits).
pub(crate) const MAX_BLOCK_SIZE: usize = (1 << 30) - 1;

/// Encodings of a face data header (bits 30-31).
const ENC_CONSTANT: u32 = 0;
const ENC_ZIPPED: u32 = 1;
const ENC_DIFFZIPPED: u32 = 2;
const ENC_TILED: u32 = 3;

/// One encoded block: its face data header and its bytes.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    /// `blocksize | encoding << 30`.
    pub header: u32,
    /// The block as stored.
    pub bytes: Vec<u8>,
}

/// What every block of a file shares.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Format {
    pub data_type: DataType,
    pub nchannels: usize,
    pub pixel_size: usize,
}

/// `data` as one complete zlib stream at the default level (zlib's 6).
pub(crate) fn zip(data: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(
        Vec::with_capacity(data.len() / 2 + 64),
        Compression::default(),
    );
    // Writing into a Vec cannot fail.
    let _ = z.write_all(data);
    z.finish().unwrap_or_default()
}

/// Whether every texel of `texels` (`pixel_size` bytes each) equals the first.
pub(crate) fn is_uniform(texels: &[u8], pixel_size: usize) -> bool {
    let first = &texels[..pixel_size.min(texels.len())];
    texels.chunks_exact(pixel_size).all(|t| t == first)
}

/// The tile resolution of a face of `res` (format note §8; the face's own when it is not
/// tiled).
pub(crate) fn tile_res(res: Res, pixel_size: usize) -> Res {
    let face_size = res.texels() * pixel_size;
    let ntiles_log2 = floor_log2(face_size / TILE_SIZE);
    if ntiles_log2 == 0 {
        return res;
    }
    let n = i32::from(res.ulog2) + i32::from(res.vlog2) - ntiles_log2;
    let ulog2 = ((n + 1) / 2).min(i32::from(res.ulog2));
    let vlog2 = (n - ulog2).min(i32::from(res.vlog2));
    Res::new(ulog2 as i8, vlog2 as i8)
}

fn floor_log2(x: usize) -> i32 {
    if x == 0 {
        0
    } else {
        (usize::BITS - 1 - x.leading_zeros()) as i32
    }
}

/// Encode `texels` (every texel of `res`, channels interleaved) as a level's block:
/// tiled if the face is large, else one zlib block. An error if a block outgrows the
/// 30-bit size of its header.
pub(crate) fn encode_face(texels: &[u8], res: Res, f: Format) -> Result<Block, String> {
    let tres = tile_res(res, f.pixel_size);
    if tres == res {
        return encode_block(texels, res, f);
    }
    let (tu, tv) = (tres.u(), tres.v());
    let (ntu, ntv) = (res.u() / tu, res.v() / tv);
    let row = res.u() * f.pixel_size;
    let trow = tu * f.pixel_size;
    let mut headers = Vec::with_capacity(ntu * ntv * 4);
    let mut data = Vec::new();
    let mut tile = vec![0u8; tu * tv * f.pixel_size];
    for ty in 0..ntv {
        for tx in 0..ntu {
            for y in 0..tv {
                let at = (ty * tv + y) * row + tx * trow;
                tile[y * trow..(y + 1) * trow].copy_from_slice(&texels[at..at + trow]);
            }
            let block = if is_uniform(&tile, f.pixel_size) {
                Block {
                    header: f.pixel_size as u32 | ENC_CONSTANT << 30,
                    bytes: tile[..f.pixel_size].to_vec(),
                }
            } else {
                encode_block(&tile, tres, f)?
            };
            headers.extend_from_slice(&block.header.to_le_bytes());
            data.extend_from_slice(&block.bytes);
        }
    }
    let zipped_headers = zip(&headers);
    let mut bytes = Vec::with_capacity(6 + zipped_headers.len() + data.len());
    bytes.push(tres.ulog2 as u8);
    bytes.push(tres.vlog2 as u8);
    bytes.extend_from_slice(&(zipped_headers.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&zipped_headers);
    bytes.extend_from_slice(&data);
    header(bytes, ENC_TILED)
}

/// One untiled block: planar, differenced for integer types, zipped.
fn encode_block(texels: &[u8], res: Res, f: Format) -> Result<Block, String> {
    let mut planar = deinterleave(texels, res.texels(), f.nchannels, f.data_type.size());
    let encoding = match f.data_type {
        DataType::U8 => {
            let mut prev = 0u8;
            for x in planar.iter_mut() {
                let v = *x;
                *x = v.wrapping_sub(prev);
                prev = v;
            }
            ENC_DIFFZIPPED
        }
        DataType::U16 => {
            let mut prev = 0u16;
            for pair in planar.chunks_exact_mut(2) {
                let v = u16::from_le_bytes([pair[0], pair[1]]);
                pair.copy_from_slice(&v.wrapping_sub(prev).to_le_bytes());
                prev = v;
            }
            ENC_DIFFZIPPED
        }
        DataType::Half | DataType::F32 => ENC_ZIPPED,
    };
    header(zip(&planar), encoding)
}

fn header(bytes: Vec<u8>, encoding: u32) -> Result<Block, String> {
    if bytes.len() > MAX_BLOCK_SIZE {
        return Err(format!(
            "a face block of {} bytes is larger than a face data header can record ({MAX_BLOCK_SIZE})",
            bytes.len()
        ));
    }
    Ok(Block {
        header: bytes.len() as u32 | encoding << 30,
        bytes,
    })
}

/// Interleaved texels to planes (all of channel 0, then channel 1, ...).
fn deinterleave(texels: &[u8], count: usize, nchannels: usize, value_size: usize) -> Vec<u8> {
    let mut out = vec![0u8; texels.len()];
    let pixel = nchannels * value_size;
    for c in 0..nchannels {
        let plane = &mut out[c * count * value_size..(c + 1) * count * value_size];
        for (t, value) in plane.chunks_exact_mut(value_size).enumerate() {
            let at = t * pixel + c * value_size;
            value.copy_from_slice(&texels[at..at + value_size]);
        }
    }
    out
}
