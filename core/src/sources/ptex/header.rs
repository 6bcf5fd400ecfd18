//! The 64-byte header, the extended header and where each section of the file lies
//! (format note §1, §2, §17). Section positions are not stored: they are the running sum
//! of the sizes the headers give.

use super::error::{Fail, PtexErrorKind, R};

/// Size of the fixed header in bytes.
pub const HEADER_SIZE: u64 = 64;
/// Size of the extended header this reader knows (longer ones are skipped, shorter ones
/// from old files zero-filled).
pub const EXT_HEADER_SIZE: usize = 40;
/// The magic number: the bytes `Ptex` read as a little-endian `u32`.
pub const MAGIC: u32 = 0x7865_7450;

/// Little-endian field readers over a byte slice whose length the caller checked.
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
pub(crate) fn i32_at(b: &[u8], at: usize) -> i32 {
    u32_at(b, at) as i32
}
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | (u64::from(u32_at(b, at + 4)) << 32)
}

/// Which kind of mesh the faces belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeshType {
    /// Triangle faces (square texel images covering the lower-left triangle and, mirrored,
    /// the upper-right one; edges 0..2).
    Triangle,
    /// Quad faces (rectangular texel images; edges 0..3).
    Quad,
}

/// How each channel of a texel is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// Unsigned 8-bit integer; 255 means 1.0.
    U8,
    /// Unsigned 16-bit integer; 65535 means 1.0.
    U16,
    /// IEEE binary16 ("half").
    Half,
    /// IEEE binary32.
    F32,
}

impl DataType {
    /// Bytes per channel value.
    pub fn size(self) -> usize {
        match self {
            DataType::U8 => 1,
            DataType::U16 | DataType::Half => 2,
            DataType::F32 => 4,
        }
    }

    /// The stored value that means 1.0 (255, 65535, 1, 1).
    pub fn one_value(self) -> f32 {
        match self {
            DataType::U8 => 255.0,
            DataType::U16 => 65535.0,
            DataType::Half | DataType::F32 => 1.0,
        }
    }

    /// The factor that converts a stored value to a normalised one (`1/255` and `1/65535`
    /// as `f32`, or 1): what `getPixel` multiplies by.
    pub fn one_value_inv(self) -> f32 {
        match self {
            DataType::U8 => 1.0 / 255.0,
            DataType::U16 => 1.0 / 65535.0,
            DataType::Half | DataType::F32 => 1.0,
        }
    }
}

/// What filtering does beyond a mesh boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BorderMode {
    /// Texel access is clamped to the border.
    Clamp,
    /// Texels beyond the border are black.
    Black,
    /// Access wraps to the other side of the face.
    Periodic,
}

/// How values are transformed across an edge when filtering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeFilterMode {
    /// Values are used as they are.
    None,
    /// The first two channels are a tangent-space vector, rotated with the neighbour.
    TanVec,
}

/// The fixed 64-byte header, every field as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: u32,
    /// Major format version (1).
    pub version: u32,
    /// 0 triangle, 1 quad.
    pub meshtype: u32,
    /// 0 u8, 1 u16, 2 half, 3 float.
    pub datatype: u32,
    /// Index of the alpha channel, or -1.
    pub alphachan: i32,
    /// Channels per texel.
    pub nchannels: u16,
    /// Resolution levels stored (level 0 is full resolution).
    pub nlevels: u16,
    /// Number of faces.
    pub nfaces: u32,
    /// Bytes of the extended header.
    pub extheadersize: u32,
    /// Compressed bytes of the face info block.
    pub faceinfosize: u32,
    /// Compressed bytes of the constant data block.
    pub constdatasize: u32,
    /// Bytes of the level info block.
    pub levelinfosize: u32,
    /// Minor format version (the reader ignores it; 4 today).
    pub minorversion: u32,
    /// Bytes of all level data.
    pub leveldatasize: u64,
    /// Compressed bytes of the small meta data block (0: none).
    pub metadatazipsize: u32,
    /// Uncompressed bytes of the small meta data block (0: none).
    pub metadatamemsize: u32,
}

/// The extended header, zero-filled where a file's is shorter than 40 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtHeader {
    /// Border mode in u: 0 clamp, 1 black, 2 periodic.
    pub ubordermode: u16,
    /// Padding (zero).
    pub pad: u16,
    /// Border mode in v.
    pub vbordermode: u16,
    /// 0 none, 1 tanvec.
    pub edgefiltermode: u16,
    /// Compressed bytes of the large-meta-data header.
    pub lmdheaderzipsize: u32,
    /// Uncompressed bytes of the large-meta-data header (0: no large meta data).
    pub lmdheadermemsize: u32,
    /// Bytes of all large-meta-data payloads.
    pub lmddatasize: u64,
    /// Bytes of the edit records.
    pub editdatasize: u64,
    /// Where the edit records start (0 in files older than format 1.3).
    pub editdatapos: u64,
}

/// The header fields decoded and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kinds {
    pub mesh: MeshType,
    pub data: DataType,
    pub alpha: Option<usize>,
    pub border_u: BorderMode,
    pub border_v: BorderMode,
    pub edge_filter: EdgeFilterMode,
}

impl Header {
    /// Parse the 64 header bytes and check what the rest of the reader relies on.
    pub(crate) fn parse(b: &[u8; 64]) -> R<Header> {
        let h = Header {
            magic: u32_at(b, 0),
            version: u32_at(b, 4),
            meshtype: u32_at(b, 8),
            datatype: u32_at(b, 12),
            alphachan: i32_at(b, 16),
            nchannels: u16_at(b, 20),
            nlevels: u16_at(b, 22),
            nfaces: u32_at(b, 24),
            extheadersize: u32_at(b, 28),
            faceinfosize: u32_at(b, 32),
            constdatasize: u32_at(b, 36),
            levelinfosize: u32_at(b, 40),
            minorversion: u32_at(b, 44),
            leveldatasize: u64_at(b, 48),
            metadatazipsize: u32_at(b, 56),
            metadatamemsize: u32_at(b, 60),
        };
        if h.magic != MAGIC {
            return Err(Fail::new(
                PtexErrorKind::NotPtex,
                format!(
                    "not a Ptex file (magic number {:#010x}, expected {MAGIC:#010x} \"Ptex\")",
                    h.magic
                ),
            ));
        }
        if h.version != 1 {
            return Err(Fail::new(
                PtexErrorKind::Unsupported,
                format!(
                    "unsupported Ptex format version {} (this reader reads version 1)",
                    h.version
                ),
            ));
        }
        if h.nchannels == 0 {
            return Err(Fail::corrupt("the header gives 0 channels"));
        }
        if h.nlevels == 0 {
            return Err(Fail::corrupt("the header gives 0 resolution levels"));
        }
        if h.nfaces > i32::MAX as u32 {
            return Err(Fail::corrupt(format!(
                "the header claims {} faces, more than a face id (i32) can name",
                h.nfaces
            )));
        }
        if u64::from(h.levelinfosize) < 16 * u64::from(h.nlevels) {
            return Err(Fail::corrupt(format!(
                "the level info block is {} bytes, too small for {} levels of 16 bytes",
                h.levelinfosize, h.nlevels
            )));
        }
        Ok(h)
    }

    /// The mesh and data types and the alpha channel, checked.
    fn kinds(&self) -> R<(MeshType, DataType, Option<usize>)> {
        let mesh = match self.meshtype {
            0 => MeshType::Triangle,
            1 => MeshType::Quad,
            t => {
                return Err(Fail::corrupt(format!(
                    "invalid mesh type {t} (0 triangle, 1 quad)"
                )))
            }
        };
        let data = match self.datatype {
            0 => DataType::U8,
            1 => DataType::U16,
            2 => DataType::Half,
            3 => DataType::F32,
            t => {
                return Err(Fail::corrupt(format!(
                    "invalid data type {t} (0 uint8, 1 uint16, 2 half, 3 float)"
                )))
            }
        };
        let alpha = match self.alphachan {
            -1 => None,
            a if a >= 0 && (a as u32) < u32::from(self.nchannels) => Some(a as usize),
            a => {
                return Err(Fail::corrupt(format!(
                    "alpha channel {a} is neither -1 nor one of the {} channels",
                    self.nchannels
                )))
            }
        };
        Ok((mesh, data, alpha))
    }

    /// Bytes of one texel.
    pub(crate) fn pixel_size(&self, data: DataType) -> usize {
        data.size() * usize::from(self.nchannels)
    }
}

impl ExtHeader {
    /// Parse an extended header from `b` (40 bytes, zero-filled past the file's own size).
    pub(crate) fn parse(b: &[u8; EXT_HEADER_SIZE]) -> ExtHeader {
        ExtHeader {
            ubordermode: u16_at(b, 0),
            pad: u16_at(b, 2),
            vbordermode: u16_at(b, 4),
            edgefiltermode: u16_at(b, 6),
            lmdheaderzipsize: u32_at(b, 8),
            lmdheadermemsize: u32_at(b, 12),
            lmddatasize: u64_at(b, 16),
            editdatasize: u64_at(b, 24),
            editdatapos: u64_at(b, 32),
        }
    }
}

/// Decode the enumerations of both headers.
pub(crate) fn kinds(h: &Header, x: &ExtHeader) -> R<Kinds> {
    let (mesh, data, alpha) = h.kinds()?;
    let border = |m: u16, axis: &str| match m {
        0 => Ok(BorderMode::Clamp),
        1 => Ok(BorderMode::Black),
        2 => Ok(BorderMode::Periodic),
        m => Err(Fail::corrupt(format!(
            "invalid {axis} border mode {m} (0 clamp, 1 black, 2 periodic)"
        ))),
    };
    let edge_filter = match x.edgefiltermode {
        0 => EdgeFilterMode::None,
        1 => EdgeFilterMode::TanVec,
        m => {
            return Err(Fail::corrupt(format!(
                "invalid edge filter mode {m} (0 none, 1 tanvec)"
            )))
        }
    };
    Ok(Kinds {
        mesh,
        data,
        alpha,
        border_u: border(x.ubordermode, "u")?,
        border_v: border(x.vbordermode, "v")?,
        edge_filter,
    })
}

/// Absolute offsets of the file's sections (format note §17).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sections {
    /// The compressed face info block.
    pub faceinfo: u64,
    /// The compressed constant data block.
    pub constdata: u64,
    /// The level info block.
    pub levelinfo: u64,
    /// The level data (level 0 first).
    pub leveldata: u64,
    /// The small meta data block.
    pub metadata: u64,
    /// The 8-byte compatibility barrier (only present when the file has meta data).
    pub compat_barrier: u64,
    /// The large-meta-data header.
    pub lmdheader: u64,
    /// The large-meta-data payloads.
    pub lmddata: u64,
    /// The first edit record: `editdatapos` where it is set, else (files older than format
    /// 1.3) the end of the large meta data.
    pub editdata: u64,
}

impl Sections {
    /// Lay the sections out from the header sizes; an error on arithmetic overflow.
    pub(crate) fn new(h: &Header, x: &ExtHeader) -> R<Sections> {
        let overflow = || Fail::corrupt("the header's section sizes overflow a 64-bit file offset");
        let add = |a: u64, b: u64| a.checked_add(b).ok_or_else(overflow);
        let faceinfo = add(HEADER_SIZE, u64::from(h.extheadersize))?;
        let constdata = add(faceinfo, u64::from(h.faceinfosize))?;
        let levelinfo = add(constdata, u64::from(h.constdatasize))?;
        let leveldata = add(levelinfo, u64::from(h.levelinfosize))?;
        let metadata = add(leveldata, h.leveldatasize)?;
        let compat_barrier = add(metadata, u64::from(h.metadatazipsize))?;
        let lmdheader = add(compat_barrier, 8)?;
        let lmddata = add(lmdheader, u64::from(x.lmdheaderzipsize))?;
        let lmd_end = add(lmddata, x.lmddatasize)?;
        // The reference reader takes max(editdatapos, lmd_end), and lmd_end always counts
        // the barrier, present or not: wrong for a file without meta data that received
        // edits (format note §14). The position the writer recorded is the truth.
        let editdata = if x.editdatapos != 0 {
            x.editdatapos
        } else {
            lmd_end
        };
        Ok(Sections {
            faceinfo,
            constdata,
            levelinfo,
            leveldata,
            metadata,
            compat_barrier,
            lmdheader,
            lmddata,
            editdata,
        })
    }
}
