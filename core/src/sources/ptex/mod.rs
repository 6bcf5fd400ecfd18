//! Ptex (`.ptx`) files, read in pure Rust: per-face textures of Walt Disney Animation
//! Studios' format, as its reference library (v2.4.3) writes them.
//!
//! [`PtexFile::open`] reads, once, everything needed to find any texel: the header and
//! extended header, the face infos (resolution, adjacency, flags), the constant value of
//! every face, the level info, every level's face data headers, the edit records and the
//! meta data index. Each size is checked against the file's length and against what zlib
//! can expand before anything is allocated, so a corrupt or hostile file gives a
//! [`PtexError`] naming the file and what is wrong, never a panic or a huge allocation.
//!
//! Texels are then read on demand from any number of threads (positioned reads, no lock):
//! - [`PtexFile::read_tile`]: one tile of a tiled block, one read and one inflate;
//! - [`PtexFile::read_level`]: a face at one of its stored levels (full resolution or a
//!   stored reduction), tiles assembled;
//! - [`PtexFile::read_face`]: a face at any resolution up to its own, as the reference's
//!   `getData(face, res)`: stored data where the file has it, otherwise reduced on the fly
//!   with the reference's arithmetic, bit for bit;
//! - [`PtexFile::pixel`]: one texel as `f32`, as the reference's `getPixel`.
//!
//! Values are decoded to the file's data type ([`DataType`]: `u8`, `u16`, half or `f32`
//! per channel, little-endian, channels interleaved) and converted to `f32` by
//! [`values::to_f32`]. Level-0 data and constant values are stored as written
//! (unpremultiplied); stored reductions are premultiplied by alpha. Opened with
//! [`PtexOptions::premultiply`], level-0 data and constants are premultiplied on load too,
//! as the reference does.
//!
//! Edit records (incremental saves) are applied at open: an edited face's info, constant
//! value and level-0 block are replaced, its stored reductions are ignored (they are
//! stale) and reductions of it are computed from the new data; meta data edits replace or
//! add entries.
//!
//! `PtexWriter` (`write`) writes files as the reference writer lays them out (stored
//! reductions, tiles, constant faces, meta data), for tests and synthetic sets.
//!
//! The format itself is described in `shared/reference/ptex-format.md`; this module follows
//! its sections: [`header`] (§1, §2, §17), [`faces`] (§3, §6 rfaceids), [`levels`] (§5, §6,
//! §8), `decode` (§7), [`values`] (§9, §11, §12, §15), [`meta`] (§10), [`edits`] (§14).

mod checkpoints;
mod decode;
mod decode_cache;
pub use decode_cache::{
    decode_cache_bytes, set_decode_cache_bytes, DecodeCache,
    DEFAULT_CAPACITY as DEFAULT_DECODE_CACHE_BYTES,
};
pub mod edits;
mod error;
pub mod faces;
pub mod header;
pub(crate) mod input;
pub mod lazy_pages;
pub mod levels;
mod locate_cache;
pub mod meta;
pub mod pack;
pub mod pages;
mod planar;
mod read;
pub mod region;
mod units;
pub mod values;
pub mod write;

#[cfg(test)]
pub(crate) mod tests;

pub use decode::FaceData;
pub use edits::{EditKind, EditRecord};
pub use error::{PtexError, PtexErrorKind};
pub use faces::{face_flags, Adjacent, FaceInfo, Res};
pub use header::{BorderMode, DataType, EdgeFilterMode, ExtHeader, Header, MeshType, Sections};
pub use lazy_pages::LazyPtexPages;
pub use levels::{BlockSpan, Encoding, FaceDataHeader, LevelInfo, TileLayout};
pub use meta::{MetaEntry, MetaStorage, MetaType, MetaValue};
pub use pages::{PtexPages, PtexReadStats, UnitFill};
pub use read::BlockInfo;
pub use read::DecodedUnits;
pub use write::{PtexWriteOptions, PtexWriter};

use decode::Texels;
use error::{Fail, R};
use header::{Kinds, EXT_HEADER_SIZE, HEADER_SIZE};
use input::Input;
use levels::{Block, Level};
use meta::{Meta, MAX_META_BYTES};
use std::path::Path;
use std::sync::Arc;

/// How to open a Ptex file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtexOptions {
    /// Premultiply level-0 data and constant values by alpha when they are read (files
    /// with an alpha channel only), as the reference's `premultiply = true`: every
    /// resolution is then premultiplied. Off by default: level 0 and constants come
    /// back as written, stored reductions premultiplied.
    pub premultiply: bool,
    /// What the file may make the reader allocate: one decoded block
    /// (`max_decoded_block_bytes`), a face read whole (`max_image_bytes`).
    pub limits: crate::sources::limits::SizeLimits,
}

/// One open Ptex file: its structure, read at open, and texels on demand from any thread.
pub struct PtexFile {
    name: String,
    input: Input,
    header: Header,
    ext: ExtHeader,
    kinds: Kinds,
    sections: Sections,
    texels: Texels,
    faces: Vec<FaceInfo>,
    rfaceids: Vec<u32>,
    const_data: Vec<u8>,
    levels: Vec<Level>,
    meta: Meta,
    edits: Vec<EditRecord>,
    /// This open file's key in the decode cache.
    cache_id: u64,
    /// The decode cache its reductions' sources go to.
    decode_cache: Arc<DecodeCache>,
}

impl Drop for PtexFile {
    fn drop(&mut self) {
        self.decode_cache.forget(self.cache_id);
    }
}

impl std::fmt::Debug for PtexFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtexFile")
            .field("name", &self.name)
            .field("mesh_type", &self.kinds.mesh)
            .field("data_type", &self.kinds.data)
            .field("num_channels", &self.header.nchannels)
            .field("alpha_channel", &self.kinds.alpha)
            .field("num_faces", &self.faces.len())
            .field("num_levels", &self.levels.len())
            .field("edits", &self.edits.len())
            .finish_non_exhaustive()
    }
}

impl PtexFile {
    /// Open the file at `path` with the default options.
    pub fn open(path: impl AsRef<Path>) -> Result<PtexFile, PtexError> {
        Self::open_with(path, PtexOptions::default())
    }

    /// Open the file at `path`.
    pub fn open_with(path: impl AsRef<Path>, options: PtexOptions) -> Result<PtexFile, PtexError> {
        let name = path.as_ref().display().to_string();
        let input = Input::open(path.as_ref()).map_err(|e| e.in_file(&name))?;
        Self::parse(name, input, options)
    }

    /// Open the file at `path` for reading through `handles`, a bounded set of open files
    /// shared with other files (and EXR sources): the file is opened to read its structure,
    /// may then be closed by the set when others are used, and is reopened when read.
    pub fn open_shared(
        path: impl AsRef<Path>,
        options: PtexOptions,
        handles: Arc<crate::sources::FileHandles>,
    ) -> Result<PtexFile, PtexError> {
        let name = path.as_ref().display().to_string();
        let input = Input::open_shared(path.as_ref(), handles).map_err(|e| e.in_file(&name))?;
        Self::parse(name, input, options)
    }

    /// Read a file held in memory; `name` stands for it in messages.
    pub fn from_bytes(
        name: impl Into<String>,
        bytes: impl Into<Arc<[u8]>>,
        options: PtexOptions,
    ) -> Result<PtexFile, PtexError> {
        Self::parse(name.into(), Input::memory(bytes.into()), options)
    }

    fn parse(name: String, input: Input, options: PtexOptions) -> Result<PtexFile, PtexError> {
        Self::parse_inner(&name, input, options).map_err(|e| e.in_file(&name))
    }

    /// The header of the file at `path`, opened through `handles`, checked as a parse
    /// checks it (magic, version, mesh and data type, extended header, section sizes):
    /// reading only the header and extended header, as registering a texture does before
    /// its file is parsed at first use.
    pub fn read_header_shared(
        path: impl AsRef<Path>,
        handles: Arc<crate::sources::FileHandles>,
    ) -> Result<Header, PtexError> {
        let name = path.as_ref().display().to_string();
        let input = Input::open_shared(path.as_ref(), handles).map_err(|e| e.in_file(&name))?;
        read_header(&input)
            .map(|(header, ..)| header)
            .map_err(|e| e.in_file(&name))
    }

    fn parse_inner(name: &str, input: Input, options: PtexOptions) -> R<PtexFile> {
        let (header, ext, kinds, sections) = read_header(&input)?;
        let pixel_size = header.pixel_size(kinds.data);
        let texels = Texels {
            data_type: kinds.data,
            nchannels: usize::from(header.nchannels),
            pixel_size,
            premultiply: kinds.alpha.filter(|_| options.premultiply),
            limits: options.limits,
        };
        let nfaces = u64::from(header.nfaces);

        let mut faces = Vec::new();
        if nfaces > 0 {
            let block = input.read_zip(
                sections.faceinfo,
                header.faceinfosize.into(),
                20 * nfaces,
                u64::MAX,
                &"the face info block",
            )?;
            faces.reserve_exact(nfaces as usize);
            for (id, record) in block.chunks_exact(20).enumerate() {
                let info = FaceInfo::parse(record);
                info.check(kinds.mesh, header.nfaces)
                    .map_err(|e| e.context(format!("face {id}")))?;
                faces.push(FaceInfo {
                    // The writer never stores "has edits"; only edit records set it.
                    flags: info.flags & !face_flags::HAS_EDITS,
                    ..info
                });
            }
        }
        let mut const_data = if nfaces == 0 {
            Vec::new()
        } else {
            input.read_zip(
                sections.constdata,
                header.constdatasize.into(),
                pixel_size as u64 * nfaces,
                u64::MAX,
                &"the constant data block",
            )?
        };
        texels.premultiply_level0(&mut const_data, 0);
        let rfaceids = faces::rfaceids(&faces);
        let mut levels =
            levels::read_levels(&input, &header, sections.levelinfo, sections.leveldata)?;

        let scan = edits::Scan {
            start: sections.editdata,
            size: (ext.editdatapos != 0).then_some(ext.editdatasize),
            nfaces: header.nfaces,
            mesh: kinds.mesh,
            pixel_size,
        };
        let edits = edits::read_edits(&input, &scan)?;
        for e in &edits.faces {
            let f = e.face as usize;
            faces[f] = e.info;
            let value = &mut const_data[f * pixel_size..(f + 1) * pixel_size];
            value.copy_from_slice(&e.const_value);
            texels.premultiply_level0(value, 0);
            if !e.info.is_constant() {
                levels[0].blocks[f] = Block::new(e.block);
            }
        }

        let mut meta = Meta::default();
        if header.metadatamemsize != 0 {
            let block = input.read_zip(
                sections.metadata,
                header.metadatazipsize.into(),
                header.metadatamemsize.into(),
                MAX_META_BYTES,
                &"the meta data block",
            )?;
            meta.add_block(&block, MetaStorage::Small, "the meta data block")?;
        }
        if ext.lmdheadermemsize != 0 {
            let what = "the large meta data header";
            let block = input.read_zip(
                sections.lmdheader,
                ext.lmdheaderzipsize.into(),
                ext.lmdheadermemsize.into(),
                MAX_META_BYTES,
                &what,
            )?;
            input.check_span(sections.lmddata, ext.lmddatasize, &"the large meta data")?;
            meta.add_large(&block, sections.lmddata, ext.lmddatasize)?;
        }
        for m in &edits.metas {
            let what = format!("the meta data edit at offset {}", m.offset);
            let block = input.read_zip(
                m.offset,
                m.zip_size.into(),
                m.mem_size.into(),
                MAX_META_BYTES,
                &what,
            )?;
            meta.add_block(&block, MetaStorage::Edit, &what)?;
        }

        Ok(PtexFile {
            name: name.to_owned(),
            input,
            header,
            ext,
            kinds,
            sections,
            texels,
            faces,
            rfaceids,
            const_data,
            levels,
            meta,
            edits: edits.records,
            cache_id: decode_cache::unique_id(),
            decode_cache: decode_cache::shared(),
        })
    }

    /// Keep the sources of reductions in `cache` (an engine's) instead of the process-wide
    /// cache: called before the file is shared, so nothing was cached yet (there is
    /// nothing of this file in the cache it leaves to forget).
    pub(crate) fn use_decode_cache(&mut self, cache: Arc<DecodeCache>) {
        self.decode_cache = cache;
    }

    /// The file's path (or the name given to [`PtexFile::from_bytes`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes read from the file so far (header, tables, blocks; every read counted).
    pub fn file_bytes_read(&self) -> u64 {
        self.input.bytes_read()
    }

    /// The file's length in bytes.
    pub fn file_size(&self) -> u64 {
        self.input.len()
    }

    /// The header, as stored.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The extended header, as stored (zero-filled past a short one).
    pub fn ext_header(&self) -> &ExtHeader {
        &self.ext
    }

    /// Where each section of the file lies.
    pub fn sections(&self) -> &Sections {
        &self.sections
    }

    /// Triangle or quad faces.
    pub fn mesh_type(&self) -> MeshType {
        self.kinds.mesh
    }

    /// How channel values are stored.
    pub fn data_type(&self) -> DataType {
        self.kinds.data
    }

    /// Channels per texel.
    pub fn num_channels(&self) -> usize {
        usize::from(self.header.nchannels)
    }

    /// The alpha channel, if any.
    pub fn alpha_channel(&self) -> Option<usize> {
        self.kinds.alpha
    }

    /// Bytes per texel (channels × value size).
    pub fn pixel_size(&self) -> usize {
        self.texels.pixel_size
    }

    /// Whether level-0 data and constants are premultiplied on load
    /// ([`PtexOptions::premultiply`] on a file with alpha).
    pub fn premultiplied(&self) -> bool {
        self.texels.premultiply.is_some()
    }

    /// Number of faces.
    pub fn num_faces(&self) -> usize {
        self.faces.len()
    }

    /// Number of resolution levels in the file (1 + the most stored reductions).
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Whether the file stores reductions.
    pub fn has_mipmaps(&self) -> bool {
        self.levels.len() > 1
    }

    /// The level info block's entry for `level`.
    pub fn level_info(&self, level: usize) -> Option<&LevelInfo> {
        self.levels.get(level).map(|l| &l.info)
    }

    /// Where `level` starts (its compressed face data headers).
    pub fn level_offset(&self, level: usize) -> Option<u64> {
        self.levels.get(level).map(|l| l.offset)
    }

    /// Border mode in u.
    pub fn u_border_mode(&self) -> BorderMode {
        self.kinds.border_u
    }

    /// Border mode in v.
    pub fn v_border_mode(&self) -> BorderMode {
        self.kinds.border_v
    }

    /// How filters treat values across edges.
    pub fn edge_filter_mode(&self) -> EdgeFilterMode {
        self.kinds.edge_filter
    }

    /// Whether the file has edit records.
    pub fn has_edits(&self) -> bool {
        !self.edits.is_empty()
    }

    /// Every edit record, in file order.
    pub fn edits(&self) -> &[EditRecord] {
        &self.edits
    }

    /// Every face's info, after edits (edited faces carry [`face_flags::HAS_EDITS`]).
    pub fn faces(&self) -> &[FaceInfo] {
        &self.faces
    }

    /// The info of `face`.
    pub fn face_info(&self, face: u32) -> Result<&FaceInfo, PtexError> {
        self.face(face).map_err(|e| e.in_file(&self.name))
    }

    /// The position of `face` in the reduced levels (its rfaceid, from the face info as
    /// stored, before edits).
    pub fn rfaceid(&self, face: u32) -> Result<u32, PtexError> {
        self.face(face).map_err(|e| e.in_file(&self.name))?;
        Ok(self.rfaceids[face as usize])
    }

    /// The constant value of `face`: its value if it is constant, else the average of its
    /// smallest stored resolution (what `getData(face, Res(0, 0))` returns).
    pub fn constant(&self, face: u32) -> Result<&[u8], PtexError> {
        self.face(face).map_err(|e| e.in_file(&self.name))?;
        let ps = self.texels.pixel_size;
        let f = face as usize;
        Ok(&self.const_data[f * ps..(f + 1) * ps])
    }

    /// Bytes of the per-face constants held in memory (one texel per face).
    pub fn constant_bytes(&self) -> u64 {
        self.const_data.len() as u64
    }

    /// Every meta data entry, in the reference's index order.
    pub fn meta(&self) -> &[MetaEntry] {
        &self.meta.entries
    }

    /// The index of the meta data entry `key`.
    pub fn meta_index(&self, key: &str) -> Option<usize> {
        self.meta.find(key)
    }

    /// The value of meta data entry `index` (a large value is read at its first access and
    /// kept).
    pub fn meta_value(&self, index: usize) -> Result<MetaValue, PtexError> {
        let entry = self.meta.entries.get(index).ok_or_else(|| {
            Fail::range(format!(
                "no meta data entry {index} (the file has {})",
                self.meta.entries.len()
            ))
            .in_file(&self.name)
        })?;
        let data = entry.data(&self.input).map_err(|e| e.in_file(&self.name))?;
        Ok(MetaValue::decode(entry.meta_type, data))
    }

    /// The face's info, or an error for a face the file lacks.
    fn face(&self, face: u32) -> R<&FaceInfo> {
        self.faces.get(face as usize).ok_or_else(|| {
            Fail::range(format!(
                "no face {face} (the file has {} faces)",
                self.faces.len()
            ))
        })
    }
}

/// The header, extended header, kinds and section offsets of the file in `input`, each
/// checked (a file shorter than a header, or not starting with the magic, is named so).
fn read_header(input: &Input) -> R<(Header, ExtHeader, Kinds, Sections)> {
    let mut head = [0u8; 64];
    let n = input.len().min(HEADER_SIZE) as usize;
    input.read_into(0, &mut head[..n], &"the header")?;
    if n < 64 {
        let magic = header::MAGIC.to_le_bytes();
        if head[..n.min(4)] != magic[..n.min(4)] || n == 0 {
            return Err(Fail::new(
                PtexErrorKind::NotPtex,
                format!("not a Ptex file ({} bytes, not starting with \"Ptex\")", n),
            ));
        }
        return Err(Fail::corrupt(format!(
            "the file is {n} bytes, shorter than the 64-byte Ptex header"
        )));
    }
    let header = Header::parse(&head)?;
    let mut ext_bytes = [0u8; EXT_HEADER_SIZE];
    let ext_len = (header.extheadersize as usize).min(EXT_HEADER_SIZE);
    input.read_into(
        HEADER_SIZE,
        &mut ext_bytes[..ext_len],
        &"the extended header",
    )?;
    let ext = ExtHeader::parse(&ext_bytes);
    let kinds = header::kinds(&header, &ext)?;
    let sections = Sections::new(&header, &ext)?;
    Ok((header, ext, kinds, sections))
}
