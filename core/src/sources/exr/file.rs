//! The structure of one EXR file, parsed once: header and offset tables ([`RawFile`], what
//! the source and [`super::describe`] share), then the served part's block grid of every
//! stored level and each chunk's byte span ([`ExrFile`]). Reading a block afterwards is one
//! positioned read and one decompression, from any thread.

use super::handles::{OpenFile, ReadAt};
use crate::error::panic_message;
use crate::sources::SourceError;
use crate::textures::MAX_TEXTURE_SIZE;
use exr::block::chunk::{Chunk, CompressedBlock};
use exr::block::UncompressedBlock;
use exr::compression::Compression;
use exr::io::{PeekRead, Tracking};
use exr::math::{RoundingMode, Vec2};
use exr::meta::attribute::LevelMode;
use exr::meta::header::Header;
use exr::meta::{
    compute_block_count, compute_level_count, compute_level_size, BlockDescription, MetaData,
};
use std::io::BufReader;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Largest decoded block accepted (a sanity bound against absurd tile sizes).
const MAX_BLOCK_BYTES: usize = 1 << 30;

/// How the file stores its pixels, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// Tiles with a mip chain: levels rounded down (ours), or rounded up.
    TiledMip(RoundingMode),
    /// Tiles with a rip map: its diagonal levels (`(l, l)`, then `(l, last)` or
    /// `(last, l)` past the shorter side's last level) are the mip chain served.
    TiledRip(RoundingMode),
    /// Tiles, one level.
    TiledSingle,
    /// Scan-line blocks.
    ScanLines,
}

/// The blocks of one stored level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockGrid {
    /// Level width in texels.
    pub width: usize,
    /// Level height in texels.
    pub height: usize,
    /// Block width (the tile width, or the image width for scan lines).
    pub block_w: usize,
    /// Block height (the tile height, or the scan lines per block).
    pub block_h: usize,
    /// Blocks per row.
    pub blocks_x: usize,
    /// Block rows.
    pub blocks_y: usize,
    /// Index of the level's first chunk in the offset table.
    first_chunk: usize,
    /// The file's level index `(x, y)`: `(l, l)` for a mip level `l`, the diagonal's for
    /// a rip map.
    level_index: (usize, usize),
}

impl BlockGrid {
    /// Width and height of block (`bx`, `by`), clipped at the level's edges.
    pub fn block_size(&self, bx: usize, by: usize) -> (usize, usize) {
        let w = (self.width - bx * self.block_w).min(self.block_w);
        let h = (self.height - by * self.block_h).min(self.block_h);
        (w, h)
    }
}

/// Where a chunk lies in the file; `len` 0 marks an offset outside the file's data.
#[derive(Clone, Copy, Debug)]
struct Span {
    offset: u64,
    len: u32,
}

/// A decoded block: its texel size and its samples, per line then per channel (in the
/// header's channel order), native-endian.
#[derive(Debug)]
pub(crate) struct DecodedBlock {
    /// Texels per line.
    pub width: usize,
    /// Lines.
    pub height: usize,
    /// The samples.
    pub data: Vec<u8>,
}

/// The parsed structure of one EXR file (one part of it).
#[derive(Debug)]
pub(crate) struct ExrFile {
    path: PathBuf,
    meta: MetaData,
    part: usize,
    /// How the part stores its pixels.
    pub storage: Storage,
    /// Stored levels, finest first (tiled mip files: every level; else one).
    pub grids: Vec<BlockGrid>,
    spans: Vec<Span>,
    file_len: u64,
}

/// The header and offset tables of an EXR file, read once, unchecked beyond what the exr
/// crate validates: what both [`ExrFile::from_raw`] (the source) and
/// [`super::describe`] start from.
#[derive(Debug)]
pub(crate) struct RawFile {
    /// Every part's header.
    pub meta: MetaData,
    /// Every part's chunk offsets.
    pub tables: OffsetTables,
    /// Where the offset tables end (the first byte a chunk may start at).
    pub tables_end: u64,
    /// The file's size.
    pub file_len: u64,
}

impl RawFile {
    /// Read the header and offset tables of `file` (at `path`). Deep data is read too
    /// (described, not served). Errors name the file.
    pub fn read(path: &Path, file: &OpenFile) -> Result<RawFile, SourceError> {
        let fail = |reason: String| SourceError(format!("{}: {reason}", path.display()));
        let file_len = file
            .len()
            .map_err(|e| fail(format!("cannot read the file's size: {e}")))?;
        // The exr crate reads untrusted bytes; contain a panic as an error.
        let parsed = catch_unwind(AssertUnwindSafe(|| read_meta(file, file_len)))
            .unwrap_or_else(|p| Err(format!("the EXR decoder panicked: {}", panic_message(&*p))));
        let (meta, tables, tables_end) = parsed.map_err(fail)?;
        Ok(RawFile {
            meta,
            tables,
            tables_end,
            file_len,
        })
    }
}

impl ExrFile {
    /// Index part `part` of the file read into `raw` (at `path`), checking that it can be
    /// served. Errors name the file and the reason.
    pub fn from_raw(path: &Path, raw: RawFile, part: usize) -> Result<ExrFile, SourceError> {
        let fail = |reason: String| SourceError(format!("{}: {reason}", path.display()));
        let RawFile {
            meta,
            tables,
            tables_end,
            file_len,
        } = raw;
        if meta.requirements.has_deep_data || meta.headers.iter().any(|h| h.deep) {
            return Err(fail("deep data is not supported".into()));
        }
        let parts = meta.headers.len();
        let header = meta.headers.get(part).ok_or_else(|| {
            fail(format!(
                "part {part} requested from a file with {parts} part(s)"
            ))
        })?;
        let storage = check_header(header).map_err(fail)?;
        let (grids, chunks) = block_grids(header, storage);
        let table = &tables[part];
        if table.len() != chunks || header.chunk_count != chunks {
            return Err(fail(format!(
                "the offset table has {} entries (header: {}), the image needs {chunks}",
                table.len(),
                header.chunk_count
            )));
        }
        let max_chunk = max_chunk_bytes(header, parts > 1);
        let spans = chunk_spans(&tables, part, tables_end, file_len, max_chunk);
        Ok(ExrFile {
            path: path.to_path_buf(),
            meta,
            part,
            storage,
            grids,
            spans,
            file_len,
        })
    }

    /// The part's string attribute `name` (its own or the file's), if it has one.
    pub fn string_attribute(&self, name: &str) -> Option<String> {
        let h = self.header();
        let key = exr::meta::attribute::Text::from(name);
        let value = h
            .own_attributes
            .other
            .get(&key)
            .or_else(|| h.shared_attributes.other.get(&key))?;
        match value {
            exr::meta::attribute::AttributeValue::Text(t) => Some(t.to_string()),
            _ => None,
        }
    }

    /// The header of the part read.
    pub fn header(&self) -> &Header {
        &self.meta.headers[self.part]
    }

    /// Read and decode block (`bx`, `by`) of stored level `level` with one positioned read
    /// into `scratch`. Errors name the file, the level and the block.
    pub fn read_block(
        &self,
        file: &OpenFile,
        level: usize,
        bx: usize,
        by: usize,
        scratch: &mut Vec<u8>,
    ) -> Result<DecodedBlock, SourceError> {
        let g = &self.grids[level];
        let fail = |reason: String| {
            let what = match self.storage {
                Storage::ScanLines => format!(
                    "scan-line block {by} (rows {}..{})",
                    by * g.block_h,
                    ((by + 1) * g.block_h).min(g.height)
                ),
                _ => format!("level {level} tile ({bx}, {by})"),
            };
            SourceError(format!("{}: {what}: {reason}", self.path.display()))
        };
        let span = self.spans[g.first_chunk + by * g.blocks_x + bx];
        if span.len == 0 {
            return Err(fail(format!(
                "chunk offset {} lies outside the file's pixel data (the file has {} bytes): \
                 truncated or corrupt file",
                span.offset, self.file_len
            )));
        }
        scratch.resize(span.len as usize, 0);
        file.read_exact_at(scratch, span.offset).map_err(|e| {
            fail(format!(
                "reading {} bytes at {}: {e}",
                span.len, span.offset
            ))
        })?;
        let expected = g.block_size(bx, by);
        let decoded = catch_unwind(AssertUnwindSafe(|| {
            self.decode(scratch, level, bx, by, expected)
        }))
        .unwrap_or_else(|p| Err(format!("the EXR decoder panicked: {}", panic_message(&*p))));
        decoded.map_err(fail)
    }

    /// Parse and decompress one chunk, checking that it is the block asked for.
    fn decode(
        &self,
        bytes: &[u8],
        level: usize,
        bx: usize,
        by: usize,
        (w, h): (usize, usize),
    ) -> Result<DecodedBlock, String> {
        let chunk = Chunk::read(&mut &bytes[..], &self.meta).map_err(|e| match e {
            exr::error::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                "the chunk is cut short (truncated file, or a corrupt offset table)".to_string()
            }
            e => format!("unreadable chunk: {e}"),
        })?;
        if chunk.layer_index != self.part {
            return Err(format!(
                "the chunk belongs to part {}, not {}: corrupt offset table",
                chunk.layer_index, self.part
            ));
        }
        let header = self.header();
        let compressed = match &chunk.compressed_block {
            CompressedBlock::Tile(t) => {
                let c = t.coordinates;
                let (lx, ly) = self.grids[level].level_index;
                if c.tile_index != Vec2(bx, by) || c.level_index != Vec2(lx, ly) {
                    return Err(format!(
                        "the chunk holds tile ({}, {}) of level ({}, {}), not ({bx}, {by}) of \
                         level ({lx}, {ly}): corrupt offset table",
                        c.tile_index.x(),
                        c.tile_index.y(),
                        c.level_index.x(),
                        c.level_index.y()
                    ));
                }
                &t.compressed_pixels_le
            }
            CompressedBlock::ScanLine(s) => {
                let y = header.own_attributes.layer_position.y() as i64
                    + (by * header.compression.scan_lines_per_block()) as i64;
                if s.y_coordinate as i64 != y {
                    return Err(format!(
                        "the chunk starts at line {}, not {y}: corrupt offset table",
                        s.y_coordinate
                    ));
                }
                &s.compressed_pixels_le
            }
            _ => return Err("deep data is not supported".into()),
        };
        let expected = w * h * header.channels.bytes_per_pixel;
        if let Some(data) = super::zip::decode(header.compression, compressed, expected) {
            return Ok(DecodedBlock {
                width: w,
                height: h,
                data,
            });
        }
        let block = UncompressedBlock::decompress_chunk(chunk, &self.meta, true)
            .map_err(|e| format!("cannot decompress ({}): {e}", header.compression))?;
        if block.index.pixel_size != Vec2(w, h) || block.data.len() != expected {
            return Err(format!(
                "decoded {} bytes for {}×{} texels, expected {}×{w}×{h}",
                block.data.len(),
                block.index.pixel_size.x(),
                block.index.pixel_size.y(),
                header.channels.bytes_per_pixel
            ));
        }
        Ok(DecodedBlock {
            width: w,
            height: h,
            data: block.data,
        })
    }
}

type OffsetTables = exr::meta::OffsetTables;

/// Read the meta data and the offset tables; return them and where the tables end.
fn read_meta(file: &OpenFile, file_len: u64) -> Result<(MetaData, OffsetTables, u64), String> {
    let reader = BufReader::with_capacity(64 * 1024, ReadAt { file, position: 0 });
    let mut read = PeekRead::new(Tracking::new(reader));
    let meta = MetaData::read_from_buffered(&mut read, false)
        .map_err(|e| format!("not a readable EXR header: {e}"))?;
    MetaData::validate(&meta.headers, false).map_err(|e| format!("invalid EXR header: {e}"))?;
    // Bound the table sizes before reading them (a corrupt header could claim billions):
    // every chunk has an 8-byte entry, so the tables cannot be longer than the file.
    let entries: u64 = meta.headers.iter().map(|h| h.chunk_count as u64).sum();
    if entries.saturating_mul(8) > file_len {
        return Err(format!(
            "the headers declare {entries} chunks, whose offset tables alone would take {} \
             bytes of a {file_len}-byte file: corrupt header or truncated file",
            entries.saturating_mul(8)
        ));
    }
    let tables = MetaData::read_offset_tables(&mut read, &meta.headers).map_err(|e| match e {
        exr::error::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the file ends inside its offset table: truncated file".to_string()
        }
        e => format!("unreadable offset table: {e}"),
    })?;
    let end = read.byte_position() as u64;
    Ok((meta, tables, end))
}

/// Check what we can serve; return how the part stores its pixels.
fn check_header(h: &Header) -> Result<Storage, String> {
    if h.deep {
        return Err("deep data is not supported".into());
    }
    let Vec2(w, h_) = h.layer_size;
    if w == 0 || h_ == 0 || w > MAX_TEXTURE_SIZE as usize || h_ > MAX_TEXTURE_SIZE as usize {
        return Err(format!(
            "image size {w}×{h_} (each side must be 1..={MAX_TEXTURE_SIZE})"
        ));
    }
    if h.channels.list.is_empty() {
        return Err("the image has no channels".into());
    }
    if let Some(c) = h.channels.list.iter().find(|c| c.sampling != Vec2(1, 1)) {
        return Err(format!(
            "channel {} is subsampled ({}×{}); subsampled channels are not supported",
            c.name,
            c.sampling.x(),
            c.sampling.y()
        ));
    }
    if matches!(h.compression, Compression::HTJ2K32 | Compression::HTJ2K256) {
        return Err(format!(
            "{} is not supported by the EXR decoder (exr crate)",
            h.compression
        ));
    }
    let storage = match h.blocks {
        BlockDescription::ScanLines => Storage::ScanLines,
        BlockDescription::Tiles(t) => {
            let Vec2(tw, th) = t.tile_size;
            if tw == 0 || th == 0 || tw > 1 << 16 || th > 1 << 16 {
                return Err(format!("tile size {tw}×{th}"));
            }
            match t.level_mode {
                LevelMode::Singular => Storage::TiledSingle,
                LevelMode::MipMap => Storage::TiledMip(t.rounding_mode),
                LevelMode::RipMap => Storage::TiledRip(t.rounding_mode),
            }
        }
    };
    let block = h.max_block_pixel_size();
    if block.area().saturating_mul(h.channels.bytes_per_pixel) > MAX_BLOCK_BYTES {
        return Err(format!(
            "blocks of {}×{} texels are too large",
            block.x(),
            block.y()
        ));
    }
    Ok(storage)
}

/// The block grid of every stored level served, finest first — a mip chain's levels, a rip
/// map's diagonal (its other levels are skipped), one level otherwise — and the chunks of
/// every level the file stores.
fn block_grids(h: &Header, storage: Storage) -> (Vec<BlockGrid>, usize) {
    let Vec2(w, ht) = h.layer_size;
    let Vec2(bw, bh) = h.max_block_pixel_size();
    // Every level the offset table holds, in its order, as its level index; and the
    // served levels, finest first, as positions in that list.
    let (levels, served): (Vec<(usize, usize)>, Vec<usize>) = match storage {
        Storage::TiledMip(round) => {
            let n = compute_level_count(round, w.max(ht));
            ((0..n).map(|l| (l, l)).collect(), (0..n).collect())
        }
        // Rip levels are stored y-major: (0, 0), (1, 0), …, (0, 1), …; the diagonal is
        // served.
        Storage::TiledRip(round) => {
            let (nx, ny) = (
                compute_level_count(round, w),
                compute_level_count(round, ht),
            );
            (
                (0..ny)
                    .flat_map(|ly| (0..nx).map(move |lx| (lx, ly)))
                    .collect(),
                (0..nx.max(ny))
                    .map(|l| l.min(ny - 1) * nx + l.min(nx - 1))
                    .collect(),
            )
        }
        Storage::TiledSingle | Storage::ScanLines => (vec![(0, 0)], vec![0]),
    };
    let size = |side: usize, l: usize| match storage {
        Storage::TiledMip(round) | Storage::TiledRip(round) => compute_level_size(round, side, l),
        Storage::TiledSingle | Storage::ScanLines => side,
    };
    let mut first_chunk = 0;
    let all: Vec<BlockGrid> = levels
        .into_iter()
        .map(|(lx, ly)| {
            let (width, height) = (size(w, lx), size(ht, ly));
            let g = BlockGrid {
                width,
                height,
                block_w: bw,
                block_h: bh,
                blocks_x: compute_block_count(width, bw),
                blocks_y: compute_block_count(height, bh),
                first_chunk,
                level_index: (lx, ly),
            };
            first_chunk += g.blocks_x * g.blocks_y;
            g
        })
        .collect();
    (served.into_iter().map(|i| all[i]).collect(), first_chunk)
}

/// The most bytes a chunk of `h` can take: its header fields and a block of raw samples.
fn max_chunk_bytes(h: &Header, multipart: bool) -> u64 {
    let fields = match h.blocks {
        BlockDescription::Tiles(_) => 20, // 4 coordinates + size
        BlockDescription::ScanLines => 8, // y + size
    };
    (fields + if multipart { 4 } else { 0 }) + h.max_block_byte_size() as u64
}

/// Each chunk's span: from its offset to the next larger offset of any part (or the end of
/// the file), at most `max_chunk` bytes. Offsets inside the header or past the end of the
/// file get length 0.
fn chunk_spans(
    tables: &OffsetTables,
    part: usize,
    tables_end: u64,
    file_len: u64,
    max_chunk: u64,
) -> Vec<Span> {
    let valid = |o: u64| o >= tables_end && o < file_len;
    let mut sorted: Vec<u64> = tables
        .iter()
        .flatten()
        .copied()
        .filter(|&o| valid(o))
        .collect();
    sorted.sort_unstable();
    sorted.dedup();
    tables[part]
        .iter()
        .map(|&offset| {
            if !valid(offset) {
                return Span { offset, len: 0 };
            }
            let next_i = sorted.partition_point(|&o| o <= offset);
            let next = sorted.get(next_i).copied().unwrap_or(file_len);
            let len = (next - offset).min(max_chunk).min(u32::MAX as u64) as u32;
            Span { offset, len }
        })
        .collect()
}
