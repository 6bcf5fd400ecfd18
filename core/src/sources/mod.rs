//! Image sources: where texel data comes from. A source describes its image once
//! ([`ImageSource::open`]) and then produces any tile on request, from many threads at once.
//!
//! Beside them: the one box filter of every generated mip level ([`box_filter`]), mip
//! chains of `f32` images ([`mips`], [`FloatImage`]) and the tiled, mip-mapped OpenEXR
//! writer ([`exr::write_mip_exr`]) that `demandtex convert` builds on.
//!
//! [`check`] reads every texel a source (or a Ptex file) can serve and reports the first
//! error, with level-0 statistics: what `demandtex info --check` runs.
//!
//! [`fault`] wraps any source to inject I/O errors, short reads, panics, "not yet" answers
//! and latency by a seeded plan, for reliability tests.
//!
//! [`tiff`] serves TIFF files (`maketx`'s `.tx` textures: tiled, mip-mapped) tile by tile;
//! [`dds`] serves DDS files (BC1–BC7 blocks or plain texels) tile by tile and writes them;
//! [`DecodedImageSource`] serves PNG, JPEG, Radiance HDR, Targa and BMP (decoded whole,
//! mips generated).
//! [`detect`] is the one home of format detection: [`file_source`] gives the source for
//! any texture path.
//!
//! [`ptex`] reads Ptex files (per-face textures) with random access to faces, levels and
//! tiles; [`ptex::PtexPages`] serves its units packed into 64 KiB pages as the tiles of
//! an [`ImageSource`] (`docs/PTEX.md`), and `crate::sampling::ptex` filters them.

mod associate;
pub mod box_filter;
pub(crate) mod byte_sums;
pub mod check;
pub mod dds;
mod decoded;
#[cfg(test)]
mod decoded_fixtures;
pub mod detect;
pub mod exr;
pub mod fault;
mod file_backed;
#[cfg(test)]
pub(crate) mod fixture_refs;
pub mod float_image;
pub mod identity;
pub(crate) mod inflate;
pub mod limits;
mod low_bits;
pub mod memory;
pub mod mips;
pub(crate) mod oiio_hints;
mod open;
mod positioned;
pub mod procedural;
pub mod ptex;
mod region;
pub(crate) mod remade;
pub(crate) mod spill;
pub use spill::{SpillHold, SpillLedger};
pub mod tiff;

pub use crate::textures::WholeDecode;
pub use dds::{DdsOptions, DdsSource};
pub use decoded::DecodedImageSource;
pub use detect::{file_source, FileFormat};
pub use exr::{ChannelSelection, ExrOptions, ExrSource, FileHandles};
pub use float_image::FloatImage;
pub use identity::ContentIdentity;
pub use limits::SizeLimits;
pub use memory::InMemoryImage;
pub use open::open_file;
pub use procedural::{Checkerboard, FunctionImage, Mandelbrot, Noise, LEVEL_COLORS};
pub use region::check_read;
pub use tiff::{TiffOptions, TiffSource};

use crate::textures::{TexelFormat, TileRegion};

/// What a source reports about its image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    /// Level-0 width in texels.
    pub width: u32,
    /// Level-0 height in texels.
    pub height: u32,
    /// Texel format of the data the source writes.
    pub format: TexelFormat,
    /// Mip levels the source can produce (1 for none; at most the full chain).
    pub num_levels: u32,
}

/// The answer to a read: done, or "not yet" (the request is deferred to a later launch,
/// as OTK's `ImageSource` does for rate-limited or streaming sources).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// The destination was filled.
    Ready,
    /// Nothing was written; ask again at a later launch.
    NotYet,
}

/// A failure of a source, in its own words. The loader adds which texture it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError(pub String);

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SourceError {}

impl From<String> for SourceError {
    fn from(s: String) -> Self {
        SourceError(s)
    }
}

impl From<&str> for SourceError {
    fn from(s: &str) -> Self {
        SourceError(s.to_owned())
    }
}

/// One level of a mip tail read: the whole level's region and where its packed rows go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MipTailLevel {
    /// The whole level.
    pub region: TileRegion,
    /// Byte offset of the level in the tail buffer.
    pub offset: usize,
    /// Bytes per row (width × texel bytes).
    pub row_bytes: usize,
}

/// The levels `first_level..` of `info`, held whole: their bytes in `info`'s format
/// ([`ImageSource::whole_decode`]).
pub fn whole_decode_of_levels(info: &ImageInfo, first_level: u32) -> Option<WholeDecode> {
    (first_level < info.num_levels).then(|| WholeDecode {
        first_level,
        bytes: (first_level..info.num_levels)
            .map(|l| {
                let (w, h) = crate::textures::mip_level_size(info.width, info.height, l);
                u64::from(w) * u64::from(h) * info.format.texel_bytes() as u64
            })
            .sum(),
    })
}

/// A thread-safe, random-access producer of texel data.
///
/// The loader calls [`open`](ImageSource::open) once, then reads tiles from many worker
/// threads at once. Texels are written row-major in the format `open` reported, with rows
/// `row_bytes` apart; a read never writes outside `region.width × region.height` texels.
pub trait ImageSource: Send + Sync {
    /// A short description for messages: a file path or the procedural kind and size.
    fn name(&self) -> String;

    /// Describe the image. Called before any read: once per texture, and again when its
    /// opening was deferred (a "not yet" from the mip tail or base colour) or its contents
    /// were dropped (`invalidate_texture`, `replace_texture`). Answers must agree with the
    /// data the reads produce; after an invalidation the size may change.
    fn open(&self) -> Result<ImageInfo, SourceError>;

    /// Write the texels of `region` into `dest` (rows `row_bytes` apart).
    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError>;

    /// Write one tile. The default reads the region; sources with native tiles override it.
    fn read_tile(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        self.read_region(region, dest, row_bytes)
    }

    /// Write every level of the mip tail, each at its own offset in `dest` with packed rows.
    /// The default reads each level as a region; a "not yet" from any level defers the tail.
    fn read_mip_tail(
        &self,
        levels: &[MipTailLevel],
        dest: &mut [u8],
    ) -> Result<Readiness, SourceError> {
        for l in levels {
            let bytes = l.row_bytes * l.region.height as usize;
            let end = l.offset + bytes;
            if end > dest.len() {
                return Err(SourceError(format!(
                    "mip tail level {} overruns the tail buffer",
                    l.region.level
                )));
            }
            if self.read_region(l.region, &mut dest[l.offset..end], l.row_bytes)?
                == Readiness::NotYet
            {
                return Ok(Readiness::NotYet);
            }
        }
        Ok(Readiness::Ready)
    }

    /// The tile size of the file at `level`, when reading a region of it decodes only the
    /// file tiles it covers (tiled files). A blocking cache then fills a page one file
    /// tile at a time, as lookups need them, when the file's tiles are smaller than a page
    /// (maketx's 64×64 tiles): the default, `None`, reads whole pages.
    fn file_tile(&self, level: u32) -> Option<(u32, u32)> {
        let _ = level;
        None
    }

    /// Whether a constant tile from this source may share one slot with other pages holding
    /// the same value (`LoaderOptions::coalesce_constant_tiles`). False for sources whose
    /// pages are written again after publication (Ptex pages, filled unit by unit).
    /// Default: true.
    fn tiles_coalescable(&self) -> bool {
        true
    }

    /// Whether the texels are packed words that device code reads back bit for bit, not
    /// colours (the Ptex pages texture, whose `RGBA32F` texels hold any bytes): a GPU
    /// backend then stores them as 32-bit integers, since a texture unit reading 32-bit
    /// floats flushes denormals to zero. Default: false.
    fn texels_are_words(&self) -> bool {
        false
    }

    /// Which file the texels come from and how they are read, when they come from a file
    /// unchanged ([`identity`]): textures whose identities hold the same content share
    /// their tiles (`LoaderOptions::share_duplicate_textures`). `None` (the default) for
    /// sources whose texels are not a file's alone (procedural, in memory, callbacks,
    /// fault injection): such a texture never shares.
    fn content_identity(&self) -> Option<ContentIdentity> {
        None
    }

    /// Bytes of texel data the source keeps in memory itself for as long as the texture is
    /// open, which lookups read without a page (a Ptex file's per-face constant colours).
    /// The loader charges them to the budget when the texture opens, non-evictable, beside
    /// its mip tail ([`TextureLayout::held_bytes`](crate::textures::TextureLayout::held_bytes)),
    /// so that the budget counts all texel memory. Default: 0.
    fn held_bytes(&self) -> u64 {
        0
    }

    /// The levels whose reads all come from one decode of the whole image, made at the
    /// first such read and held by the source until [`release_decoded`](Self::release_decoded):
    /// every level of a PNG or JPEG, the levels a file lacks and the source generates in
    /// memory. `None` (the default): each read reads its own part of the file. Asked after
    /// a successful [`open`](Self::open).
    ///
    /// The loader keeps that memory inside the texture budget: it fills the pages of these
    /// levels from one decode (a launch asking for one of them reads the others too, as
    /// far as a quarter of the budget), charges [`WholeDecode::bytes`] to the budget while
    /// those reads run, and then releases the decode.
    fn whole_decode(&self) -> Option<WholeDecode> {
        None
    }

    /// Drop what the whole decode made ([`whole_decode`](Self::whole_decode)); reads in
    /// progress keep what they use, and the next read of those levels decodes again.
    /// Default: nothing.
    fn release_decoded(&self) {}

    /// Write the whole decode held now ([`whole_decode`](Self::whole_decode)) to an
    /// unnamed file in `dir`, and serve every later read of those levels from that file
    /// (one positioned read a row) instead of decoding again; from then on
    /// [`whole_decode`](Self::whole_decode) is `None`. The file's bytes are counted in
    /// `ledger` ([`SpillLedger::hold`]) for as long as the file is kept. The bytes
    /// written: 0 when nothing was held or the source cannot spill (the default). The
    /// file goes when the source does, or at its next [`open`](Self::open).
    ///
    /// The loader spills a decode its texture will need again (a budget without room to
    /// keep it for the pages, which would otherwise decode the image at every miss), while
    /// its spill files hold at most `LoaderOptions::max_spill_bytes`.
    fn spill_decoded(
        &self,
        dir: &std::path::Path,
        ledger: &SpillLedger,
    ) -> Result<u64, SourceError> {
        let _ = (dir, ledger);
        Ok(0)
    }

    /// The texture's average colour, if the source knows it cheaply. `None` (the default)
    /// lets the loader use the 1×1 level of the mip tail.
    fn read_base_color(&self) -> Result<Option<[f32; 4]>, SourceError> {
        Ok(None)
    }

    /// The codec of the 4×4 blocks the file stores every level in, when the source can
    /// write them as stored ([`read_blocks`](ImageSource::read_blocks)); asked after a
    /// successful [`open`](ImageSource::open). A loader keeping blocks
    /// ([`crate::LoaderOptions::keep_blocks`]) then lays the texture out in blocks
    /// ([`crate::textures::TextureLayout::with_blocks`]). `None` (the default): texels only.
    fn block_codec(&self) -> Option<crate::textures::BlockCodec> {
        None
    }

    /// Write the 4×4 blocks covering `region` (x and y multiples of 4; partial blocks at
    /// a level's edges are whole blocks) into `dest`, rows of blocks `row_bytes` apart, as
    /// the file stores them. Asked only of a source whose
    /// [`block_codec`](ImageSource::block_codec) is `Some`; the default refuses.
    fn read_blocks(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let _ = (region, dest, row_bytes);
        Err(SourceError(format!(
            "{}: this source has no blocks",
            self.name()
        )))
    }

    /// The file's own wrap modes for s and t (maketx's `wrapmodes`), asked after a
    /// successful [`open`](ImageSource::open): what
    /// [`AddressMode::FromFile`](crate::textures::AddressMode::FromFile) resolves to.
    /// `None` (the default): the file says nothing.
    fn address_modes(&self) -> Option<[crate::textures::AddressMode; 2]> {
        None
    }
}

/// The levels of `layout`'s mip tail with their offsets in the packed tail buffer: what
/// [`ImageSource::read_mip_tail`] is given.
pub(crate) fn tail_levels(layout: &crate::textures::TextureLayout) -> Vec<MipTailLevel> {
    (layout.mip_tail_first_level..layout.num_levels())
        .map(|level| {
            let l = &layout.levels[level as usize];
            MipTailLevel {
                region: layout.level_region(level),
                offset: l.offset as usize,
                row_bytes: layout.row_bytes(l.width),
            }
        })
        .collect()
}

/// Read the mip tail of a texture laid out in blocks: every level's blocks
/// ([`ImageSource::read_blocks`]) at its offset in `dest`, rows of blocks packed. A "not
/// yet" from any level defers the tail.
pub(crate) fn read_tail_blocks(
    source: &dyn ImageSource,
    layout: &crate::textures::TextureLayout,
    dest: &mut [u8],
) -> Result<Readiness, SourceError> {
    for l in tail_levels(layout) {
        let end = l.offset as u64 + layout.region_bytes(l.region.width, l.region.height);
        if end > dest.len() as u64 {
            return Err(SourceError(format!(
                "mip tail level {} overruns the tail buffer",
                l.region.level
            )));
        }
        if source.read_blocks(l.region, &mut dest[l.offset..end as usize], l.row_bytes)?
            == Readiness::NotYet
        {
            return Ok(Readiness::NotYet);
        }
    }
    Ok(Readiness::Ready)
}
