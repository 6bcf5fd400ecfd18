//! Decoded texels ([`FaceData`]) and the decoding of one stored block: a constant texel,
//! or zlib inflation, difference decoding and interleaving of planar data (format note
//! §7), with premultiplication where the file is opened premultiplied.

use super::error::{Fail, R};
use super::faces::Res;
use super::header::DataType;
use super::input::Input;
use super::levels::{BlockSpan, Encoding};
use super::planar::{decode_difference, interleave};
use super::values::premultiply;
use crate::sources::limits::SizeLimits;

/// The texels of a face or tile at one resolution: one value for all of them, or every
/// texel in v-major order with its channels side by side, each value little-endian in the
/// file's data type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaceData {
    res: Res,
    pixel_size: usize,
    constant: bool,
    bytes: Vec<u8>,
}

impl FaceData {
    /// All texels of `res` have the value `texel`.
    pub(crate) fn constant(res: Res, texel: Vec<u8>) -> FaceData {
        FaceData {
            res,
            pixel_size: texel.len(),
            constant: true,
            bytes: texel,
        }
    }

    /// `texels` holds every texel of `res`, `pixel_size` bytes each.
    pub(crate) fn packed(res: Res, pixel_size: usize, texels: Vec<u8>) -> FaceData {
        debug_assert_eq!(texels.len(), res.texels() * pixel_size);
        FaceData {
            res,
            pixel_size,
            constant: false,
            bytes: texels,
        }
    }

    /// The resolution.
    pub fn res(&self) -> Res {
        self.res
    }

    /// Whether one value stands for every texel.
    pub fn is_constant(&self) -> bool {
        self.constant
    }

    /// Bytes per texel.
    pub fn pixel_size(&self) -> usize {
        self.pixel_size
    }

    /// The stored bytes: the one texel of a constant, else every texel.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The texel at (`u`, `v`), or `None` outside the resolution.
    pub fn texel(&self, u: usize, v: usize) -> Option<&[u8]> {
        if u >= self.res.u() || v >= self.res.v() {
            return None;
        }
        let at = if self.constant {
            0
        } else {
            (v * self.res.u() + u) * self.pixel_size
        };
        Some(&self.bytes[at..at + self.pixel_size])
    }

    /// Every texel, a constant expanded.
    pub fn to_packed(&self) -> Vec<u8> {
        if self.constant {
            self.bytes.repeat(self.res.texels())
        } else {
            self.bytes.clone()
        }
    }

    /// Every texel, a constant expanded (no copy otherwise).
    pub fn into_packed(self) -> Vec<u8> {
        if self.constant {
            self.bytes.repeat(self.res.texels())
        } else {
            self.bytes
        }
    }

    /// Write every texel into `dest`, rows `row_bytes` apart (at least
    /// `res.u() * pixel_size`); an error if `dest` is too small.
    pub fn copy_to(&self, dest: &mut [u8], row_bytes: usize) -> Result<(), String> {
        let row = self.res.u() * self.pixel_size;
        let rows = self.res.v();
        if row_bytes < row || dest.len() < row_bytes * (rows - 1) + row {
            return Err(format!(
                "a buffer of {} bytes with rows {row_bytes} bytes apart cannot hold {} texels of {} bytes",
                dest.len(),
                self.res,
                self.pixel_size
            ));
        }
        for v in 0..rows {
            let d = &mut dest[v * row_bytes..v * row_bytes + row];
            if self.constant {
                for t in d.chunks_exact_mut(self.pixel_size) {
                    t.copy_from_slice(&self.bytes);
                }
            } else {
                d.copy_from_slice(&self.bytes[v * row..(v + 1) * row]);
            }
        }
        Ok(())
    }
}

/// What decoding needs to know about the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Texels {
    pub data_type: DataType,
    pub nchannels: usize,
    pub pixel_size: usize,
    /// The alpha channel to premultiply level-0 data by, when opened premultiplied.
    pub premultiply: Option<usize>,
    /// What a block may decode to, a face read whole may take.
    pub limits: SizeLimits,
}

impl Texels {
    /// Premultiply `texels` if the file is opened premultiplied and they are level-0 data.
    pub fn premultiply_level0(&self, texels: &mut [u8], level: usize) {
        if let (0, Some(alpha)) = (level, self.premultiply) {
            premultiply(self.data_type, texels, self.nchannels, alpha);
        }
    }

    /// Decode the untiled block `span` of resolution `res` stored in `level`.
    pub fn decode(&self, input: &Input, span: BlockSpan, res: Res, level: usize) -> R<FaceData> {
        let size = u64::from(span.header.block_size());
        let what = format!("the {res} block at offset {}", span.offset);
        match span.header.encoding() {
            Encoding::Constant => {
                if size < self.pixel_size as u64 {
                    return Err(Fail::corrupt(format!(
                        "{what} is constant but holds {size} bytes, less than a texel ({})",
                        self.pixel_size
                    )));
                }
                let mut texel = input.read(span.offset, self.pixel_size as u64, &what)?;
                self.premultiply_level0(&mut texel, level);
                Ok(FaceData::constant(res, texel))
            }
            enc @ (Encoding::Zipped | Encoding::DiffZipped) => {
                let bytes = res.texels() as u64 * self.pixel_size as u64;
                let mut texels = input.read_zip_with(
                    span.offset,
                    size,
                    bytes,
                    self.limits.max_decoded_block_bytes,
                    &what,
                    |planar| {
                        if enc == Encoding::DiffZipped {
                            decode_difference(self.data_type, planar);
                        }
                        interleave(planar, res.texels(), self.nchannels, self.data_type.size())
                    },
                )?;
                self.premultiply_level0(&mut texels, level);
                Ok(FaceData::packed(res, self.pixel_size, texels))
            }
            Encoding::Tiled => Err(Fail::corrupt(format!(
                "{what} is tiled where a tile was expected"
            ))),
        }
    }
}

/// Assemble the tiles of a face of `res` (tiles of `tile_res`, `ntiles_u` across, in
/// tile order) into one packed image.
pub(crate) fn assemble(
    res: Res,
    tile_res: Res,
    ntiles_u: usize,
    tiles: &[FaceData],
    pixel_size: usize,
) -> FaceData {
    let row_bytes = res.u() * pixel_size;
    let mut out = vec![0u8; res.texels() * pixel_size];
    for (k, tile) in tiles.iter().enumerate() {
        let (tu, tv) = (k % ntiles_u, k / ntiles_u);
        let at = tv * tile_res.v() * row_bytes + tu * tile_res.u() * pixel_size;
        // The destination was sized for every tile: cannot fail.
        let _ = tile.copy_to(&mut out[at..], row_bytes);
    }
    FaceData::packed(res, pixel_size, out)
}
