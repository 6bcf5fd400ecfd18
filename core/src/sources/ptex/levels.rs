//! Where every stored block is: the level info block, each level's face data headers
//! (read once, at open) and, for tiled blocks, the tile headers (read at the first access
//! to the block and kept). Format note §5, §6 and §8.
//!
//! Level 0 lists every face by face id; level `k ≥ 1` lists the faces whose reduction by
//! `k` is stored, by rfaceid. A block's bytes follow its level's compressed header, back to
//! back, so its offset is a prefix sum of the sizes before it.

use super::error::{Fail, R};
use super::faces::Res;
use super::header::{u32_at, u64_at, Header};
use super::input::{check_inflated_size, Input};
use std::sync::{Arc, OnceLock};

/// The most bytes this reader inflates for one face or tile block: far above what the
/// reference writer produces (it tiles any face over 128 KiB), far below what a corrupt
/// size could make it allocate.
pub const MAX_BLOCK_BYTES: u64 = 256 << 20;

/// How a block stores its texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// One texel for the whole block (`pixel_size` raw bytes; a constant face's level-0
    /// block is empty and its value is in the constant data block).
    Constant,
    /// zlib of the planar texels.
    Zipped,
    /// zlib of the planar texels after difference encoding (`u8` and `u16` only).
    DiffZipped,
    /// Tiles, each block encoded like a face.
    Tiled,
}

/// One stored block header: size (bits 0..29) and encoding (bits 30..31).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FaceDataHeader(pub u32);

impl FaceDataHeader {
    /// Bytes of the block.
    pub fn block_size(self) -> u32 {
        self.0 & 0x3fff_ffff
    }

    /// How the block is encoded.
    pub fn encoding(self) -> Encoding {
        match self.0 >> 30 {
            0 => Encoding::Constant,
            1 => Encoding::Zipped,
            2 => Encoding::DiffZipped,
            _ => Encoding::Tiled,
        }
    }
}

/// One entry of the level info block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelInfo {
    /// Bytes of the level, its compressed header included.
    pub leveldatasize: u64,
    /// Compressed bytes of the level's face data headers.
    pub levelheadersize: u32,
    /// Faces stored in the level.
    pub nfaces: u32,
}

/// The tiles of a tiled block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileLayout {
    /// Resolution of every tile.
    pub tile_res: Res,
    /// Tiles across (u).
    pub ntiles_u: usize,
    /// Tiles down (v).
    pub ntiles_v: usize,
    /// Compressed bytes of the tile headers.
    pub header_size: u32,
    /// Each tile's block, in tile order (`tv * ntiles_u + tu`).
    pub tiles: Vec<BlockSpan>,
}

/// Where one block lies and how it is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockSpan {
    /// Absolute file offset.
    pub offset: u64,
    /// The block's header.
    pub header: FaceDataHeader,
}

/// One stored block of a level and, once read, its tile layout.
#[derive(Debug)]
pub(crate) struct Block {
    /// Where the block lies (checked to be inside its level, or its edit record).
    pub span: BlockSpan,
    tiles: OnceLock<Arc<TileLayout>>,
}

impl Block {
    pub fn new(span: BlockSpan) -> Block {
        Block {
            span,
            tiles: OnceLock::new(),
        }
    }

    /// The tile layout of this tiled block of resolution `res` (read once and kept).
    pub fn tiles(&self, input: &Input, res: Res) -> R<Arc<TileLayout>> {
        if let Some(t) = self.tiles.get() {
            return Ok(t.clone());
        }
        let layout = Arc::new(read_tile_layout(input, self.span, res)?);
        // A racing reader may have stored an identical layout first; either is fine.
        Ok(self.tiles.get_or_init(|| layout).clone())
    }
}

/// One level: where it starts, its info, and its blocks in level order.
#[derive(Debug)]
pub(crate) struct Level {
    pub offset: u64,
    pub info: LevelInfo,
    pub blocks: Vec<Block>,
}

/// Read the level info block and every level's face data headers.
pub(crate) fn read_levels(
    input: &Input,
    h: &Header,
    levelinfo: u64,
    leveldata: u64,
) -> R<Vec<Level>> {
    let nlevels = usize::from(h.nlevels);
    let info = input.read(levelinfo, 16 * nlevels as u64, &"the level info block")?;
    let data_end = leveldata
        .checked_add(h.leveldatasize)
        .ok_or_else(|| Fail::corrupt("the level data size overflows a file offset"))?;
    input.check_span(leveldata, h.leveldatasize, &"the level data")?;
    let mut levels = Vec::with_capacity(nlevels);
    let mut pos = leveldata;
    for (i, b) in info.chunks_exact(16).enumerate() {
        let li = LevelInfo {
            leveldatasize: u64_at(b, 0),
            levelheadersize: u32_at(b, 8),
            nfaces: u32_at(b, 12),
        };
        let what = format!("level {i}");
        if (i == 0 && li.nfaces != h.nfaces) || li.nfaces > h.nfaces {
            return Err(Fail::corrupt(format!(
                "{what} stores {} faces, but the file has {}",
                li.nfaces, h.nfaces
            )));
        }
        let end = match pos.checked_add(li.leveldatasize) {
            Some(end) if end <= data_end => end,
            _ => {
                return Err(Fail::corrupt(format!(
                    "{what} ({} bytes at offset {pos}) runs past the level data, which ends at {data_end}",
                    li.leveldatasize
                )))
            }
        };
        if u64::from(li.levelheadersize) > li.leveldatasize {
            return Err(Fail::corrupt(format!(
                "{what}'s face data headers ({} bytes) are larger than the level ({} bytes)",
                li.levelheadersize, li.leveldatasize
            )));
        }
        let headers = if li.nfaces == 0 {
            Vec::new()
        } else {
            let hw = format!("{what}'s face data headers");
            input.read_zip(
                pos,
                li.levelheadersize.into(),
                4 * u64::from(li.nfaces),
                u64::MAX,
                &hw,
            )?
        };
        let mut at = pos + u64::from(li.levelheadersize);
        let mut blocks = Vec::with_capacity(li.nfaces as usize);
        for (k, fdh) in headers.chunks_exact(4).enumerate() {
            let header = FaceDataHeader(u32_at(fdh, 0));
            let span = BlockSpan { offset: at, header };
            at += u64::from(header.block_size());
            if at > end {
                return Err(Fail::corrupt(format!(
                    "{what}: block {k} ends at offset {at}, past the level's end at {end}"
                )));
            }
            blocks.push(Block::new(span));
        }
        levels.push(Level {
            offset: pos,
            info: li,
            blocks,
        });
        pos = end;
    }
    Ok(levels)
}

/// Read the pre-header and the tile headers of the tiled block `span` of resolution `res`.
fn read_tile_layout(input: &Input, span: BlockSpan, res: Res) -> R<TileLayout> {
    let size = u64::from(span.header.block_size());
    if size < 6 {
        return Err(Fail::corrupt(format!(
            "tiled block at offset {} is {size} bytes, too small for its 6-byte tile header",
            span.offset
        )));
    }
    let mut pre = [0u8; 6];
    input.read_into(span.offset, &mut pre, &"a tiled block's header")?;
    let tile_res = Res::new(pre[0] as i8, pre[1] as i8);
    let header_size = u32_at(&pre, 2);
    if tile_res.ulog2 < 0
        || tile_res.vlog2 < 0
        || tile_res.ulog2 > res.ulog2
        || tile_res.vlog2 > res.vlog2
    {
        return Err(Fail::corrupt(format!(
            "tiled block at offset {} has tiles of log2 ({}, {}), not within its resolution {res}",
            span.offset, tile_res.ulog2, tile_res.vlog2
        )));
    }
    let ntiles_u = res.u() >> tile_res.ulog2;
    let ntiles_v = res.v() >> tile_res.vlog2;
    let ntiles = (ntiles_u * ntiles_v) as u64;
    let what = format!("the tile headers of the block at offset {}", span.offset);
    if 6 + u64::from(header_size) > size {
        return Err(Fail::corrupt(format!(
            "{what} ({header_size} bytes) run past the block ({size} bytes)"
        )));
    }
    check_inflated_size(header_size.into(), 4 * ntiles, MAX_BLOCK_BYTES, &what)?;
    let headers = input.read_zip(
        span.offset + 6,
        header_size.into(),
        4 * ntiles,
        MAX_BLOCK_BYTES,
        &what,
    )?;
    let end = span.offset + size;
    let mut at = span.offset + 6 + u64::from(header_size);
    let mut tiles = Vec::with_capacity(ntiles as usize);
    for (k, fdh) in headers.chunks_exact(4).enumerate() {
        let header = FaceDataHeader(u32_at(fdh, 0));
        if header.encoding() == Encoding::Tiled {
            return Err(Fail::corrupt(format!("{what}: tile {k} is itself tiled")));
        }
        tiles.push(BlockSpan { offset: at, header });
        at += u64::from(header.block_size());
        if at > end {
            return Err(Fail::corrupt(format!(
                "{what}: tile {k} ends at offset {at}, past the block's end at {end}"
            )));
        }
    }
    Ok(TileLayout {
        tile_res,
        ntiles_u,
        ntiles_v,
        header_size,
        tiles,
    })
}
