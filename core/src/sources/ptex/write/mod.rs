//! Writing Ptex files that the reference library (v2.4.3) reads, laid out as its
//! `PtexMainWriter` lays them out (format note §1-§10): header and extended header, the
//! face info and constant data blocks, the level info, level 0 in face-id order and the
//! stored reductions in rfaceid order, then the meta data (small block, compatibility
//! barrier, large meta data).
//!
//! [`PtexWriter::write_face`] takes a face's texels (v-major, channels interleaved, values
//! little-endian in the file's data type) and encodes it at once: a uniform face becomes a
//! constant face; otherwise level 0 is stored as given (planar, difference-encoded for
//! `u8`/`u16`, zlib; tiled when it is 128 KiB or more, uniform tiles as one texel), and,
//! with mipmaps on, every reduction whose shorter side is at least 4 texels is made with
//! the reference's arithmetic (alpha-premultiplied; 2×2 quarters for quads, `reduceTri`
//! for triangles) and encoded the same way. The face's constant value is the average of
//! its smallest stored resolution, un-premultiplied. Only compressed blocks are kept, so
//! memory grows with the file, not with its decoded size.
//!
//! [`PtexWriter::finish`] assembles the file: faces never written are constant black, the
//! neighbourhood-constant flag is computed as the reference does, and levels are ordered
//! by rfaceid.

mod encode;
mod neighborhood;
pub mod synthetic;

use super::error::Fail;
use super::faces::{face_flags, rfaceids, FaceInfo, Res};
use super::header::{BorderMode, DataType, EdgeFilterMode, MeshType, EXT_HEADER_SIZE, MAGIC};
use super::meta::MetaValue;
use super::values::{average, premultiply, reduce, unpremultiply, Reduction};
use super::{PtexError, PtexErrorKind};
use encode::{encode_face, is_uniform, zip, Block, Format};
use std::path::Path;

pub use synthetic::{synthetic_file_name, write_synthetic_set, SyntheticSet, SyntheticTotals};

/// Meta data values larger than this go to the large-meta-data section
/// (`MetaDataThreshold`).
const META_DATA_THRESHOLD: usize = 1024;
/// The longest meta data key (its NUL must fit the `u8` key size).
const MAX_META_KEY: usize = 254;
/// The minor version current writers store.
const MINOR_VERSION: u32 = 4;

/// What a Ptex file holds: mesh, data type, channels and the modes filters use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtexWriteOptions {
    /// Triangle or quad faces.
    pub mesh: MeshType,
    /// How channel values are stored.
    pub data_type: DataType,
    /// Channels per texel (1 or more).
    pub nchannels: u16,
    /// The alpha channel, if any (below `nchannels`).
    pub alpha_channel: Option<usize>,
    /// Border mode in u.
    pub border_u: BorderMode,
    /// Border mode in v.
    pub border_v: BorderMode,
    /// Edge filter mode.
    pub edge_filter: EdgeFilterMode,
    /// Store reductions (the reference's `genmipmaps`, on by default).
    pub mipmaps: bool,
}

impl PtexWriteOptions {
    /// A file of `nchannels` channels of `data_type` on a `mesh`, clamp borders, no edge
    /// filter, mipmaps on.
    pub fn new(
        mesh: MeshType,
        data_type: DataType,
        nchannels: u16,
        alpha_channel: Option<usize>,
    ) -> PtexWriteOptions {
        PtexWriteOptions {
            mesh,
            data_type,
            nchannels,
            alpha_channel,
            border_u: BorderMode::Clamp,
            border_v: BorderMode::Clamp,
            edge_filter: EdgeFilterMode::None,
            mipmaps: true,
        }
    }
}

/// One meta data entry to write.
#[derive(Clone, Debug)]
struct MetaItem {
    key: String,
    type_code: u8,
    data: Vec<u8>,
}

/// A Ptex file being written: faces are encoded as they are given, the file is assembled
/// by [`PtexWriter::finish`].
#[derive(Debug)]
pub struct PtexWriter {
    options: PtexWriteOptions,
    format: Format,
    faces: Vec<FaceInfo>,
    written: Vec<bool>,
    const_data: Vec<u8>,
    /// Per face: its level-0 block and its stored reductions (none for a constant face).
    blocks: Vec<Vec<Block>>,
    meta: Vec<MetaItem>,
}

pub(crate) fn fail(message: impl Into<String>) -> PtexError {
    Fail::new(PtexErrorKind::OutOfRange, message).in_file("(writer)")
}

impl PtexWriter {
    /// A writer of `nfaces` faces.
    pub fn new(options: PtexWriteOptions, nfaces: u32) -> Result<PtexWriter, PtexError> {
        if options.nchannels == 0 {
            return Err(fail("a Ptex file needs at least one channel"));
        }
        if let Some(a) = options.alpha_channel {
            if a >= usize::from(options.nchannels) {
                return Err(fail(format!(
                    "alpha channel {a} is not one of the {} channels",
                    options.nchannels
                )));
            }
        }
        let nchannels = usize::from(options.nchannels);
        let pixel_size = nchannels * options.data_type.size();
        let n = nfaces as usize;
        Ok(PtexWriter {
            options,
            format: Format {
                data_type: options.data_type,
                nchannels,
                pixel_size,
            },
            faces: vec![unwritten_face(); n],
            written: vec![false; n],
            const_data: vec![0; n * pixel_size],
            blocks: (0..n).map(|_| Vec::new()).collect(),
            meta: Vec::new(),
        })
    }

    /// Bytes per texel.
    pub fn pixel_size(&self) -> usize {
        self.format.pixel_size
    }

    /// Write `face` with `info` (resolution, adjacency; of the flags only
    /// [`face_flags::SUBFACE`] on quads is kept) and its texels: `info.res` texels,
    /// v-major, channels interleaved. A uniform face is stored as a constant face.
    pub fn write_face(
        &mut self,
        face: u32,
        info: FaceInfo,
        texels: &[u8],
    ) -> Result<(), PtexError> {
        let f = self.check_face(face, &info)?;
        let ps = self.format.pixel_size;
        let expected = info.res.texels() * ps;
        if texels.len() != expected {
            return Err(fail(format!(
                "face {face} of resolution {} needs {expected} bytes of texels, not {}",
                info.res,
                texels.len()
            )));
        }
        if is_uniform(texels, ps) {
            return self.write_constant_face(face, info, &texels[..ps]);
        }
        let wrap = |e: String| fail(format!("face {face}: {e}"));
        let mut blocks = vec![encode_face(texels, info.res, self.format).map_err(wrap)?];
        let dt = self.format.data_type;
        let n = self.format.nchannels;
        let mut data = texels.to_vec();
        if let Some(a) = self.options.alpha_channel {
            premultiply(dt, &mut data, n, a);
        }
        let how = match self.options.mesh {
            MeshType::Quad => Reduction::Quad,
            MeshType::Triangle => Reduction::Triangle,
        };
        let mut res = info.res;
        while self.options.mipmaps && res.ulog2 > 2 && res.vlog2 > 2 {
            data = reduce(dt, how, &data, res.u(), res.v(), n);
            res = res.reduced(1);
            blocks.push(encode_face(&data, res, self.format).map_err(wrap)?);
        }
        let mut value = average(dt, &data, n);
        if let Some(a) = self.options.alpha_channel {
            unpremultiply(dt, &mut value, n, a);
        }
        self.const_data[f * ps..(f + 1) * ps].copy_from_slice(&value);
        self.faces[f] = self.clean(info, 0);
        self.blocks[f] = blocks;
        self.written[f] = true;
        Ok(())
    }

    /// Write `face` as a constant face of value `texel` (`pixel_size` bytes).
    pub fn write_constant_face(
        &mut self,
        face: u32,
        info: FaceInfo,
        texel: &[u8],
    ) -> Result<(), PtexError> {
        let f = self.check_face(face, &info)?;
        let ps = self.format.pixel_size;
        if texel.len() != ps {
            return Err(fail(format!(
                "constant face {face} needs one texel of {ps} bytes, not {}",
                texel.len()
            )));
        }
        self.const_data[f * ps..(f + 1) * ps].copy_from_slice(texel);
        self.faces[f] = self.clean(info, face_flags::CONSTANT);
        self.blocks[f] = Vec::new();
        self.written[f] = true;
        Ok(())
    }

    /// Add meta data entry `key` (a later value of the same key replaces the earlier one
    /// in place). Keys are 1 to 254 bytes without NUL.
    pub fn add_meta(&mut self, key: &str, value: &MetaValue) -> Result<(), PtexError> {
        if key.is_empty() || key.len() > MAX_META_KEY || key.contains('\0') {
            return Err(fail(format!(
                "meta data key {key:?} must be 1 to {MAX_META_KEY} bytes without NUL"
            )));
        }
        let (type_code, data) = encode_meta(value);
        if data.len() > u32::MAX as usize {
            return Err(fail(format!("meta data value {key:?} is too large")));
        }
        let item = MetaItem {
            key: key.to_owned(),
            type_code,
            data,
        };
        match self.meta.iter_mut().find(|m| m.key == key) {
            Some(m) => *m = item,
            None => self.meta.push(item),
        }
        Ok(())
    }

    /// The whole file.
    pub fn finish(mut self) -> Result<Vec<u8>, PtexError> {
        let ps = self.format.pixel_size;
        let o = self.options;
        neighborhood::flag_constant_neighborhoods(neighborhood::Mesh {
            faces: &mut self.faces,
            const_data: &self.const_data,
            pixel_size: ps,
            triangles: o.mesh == MeshType::Triangle,
            clamp_borders: o.border_u == BorderMode::Clamp && o.border_v == BorderMode::Clamp,
        });
        let nfaces = self.faces.len();
        let nlevels = self.blocks.iter().map(Vec::len).max().unwrap_or(0).max(1);
        if nlevels > usize::from(u16::MAX) {
            return Err(fail("too many levels"));
        }
        let rfaceids = rfaceids(&self.faces);
        let mut by_rfaceid = vec![0usize; nfaces];
        for (f, &r) in rfaceids.iter().enumerate() {
            by_rfaceid[r as usize] = f;
        }

        let mut face_info = Vec::with_capacity(20 * nfaces);
        for f in &self.faces {
            face_info.extend_from_slice(&face_bytes(f));
        }
        let face_info = zip(&face_info);
        let const_block = zip(&self.const_data);

        // Level data: level 0 in face-id order (constant faces: header 0, no bytes), level
        // i in rfaceid order over the faces that store it.
        let mut level_info = Vec::with_capacity(16 * nlevels);
        let mut level_data = Vec::new();
        for level in 0..nlevels {
            let faces: Vec<usize> = if level == 0 {
                (0..nfaces).collect()
            } else {
                by_rfaceid
                    .iter()
                    .copied()
                    .take_while(|&f| self.blocks[f].len() > level)
                    .collect()
            };
            let mut headers = Vec::with_capacity(4 * faces.len());
            for &f in &faces {
                let h = self.blocks[f].get(level).map_or(0, |b| b.header);
                headers.extend_from_slice(&h.to_le_bytes());
            }
            let headers = zip(&headers);
            let start = level_data.len();
            level_data.extend_from_slice(&headers);
            for &f in &faces {
                if let Some(b) = self.blocks[f].get(level) {
                    level_data.extend_from_slice(&b.bytes);
                }
            }
            level_info.extend_from_slice(&((level_data.len() - start) as u64).to_le_bytes());
            level_info.extend_from_slice(&(headers.len() as u32).to_le_bytes());
            level_info.extend_from_slice(&(faces.len() as u32).to_le_bytes());
        }

        // Meta data: small entries in one block, the barrier, large entries.
        let (mut small, mut lmd_header, mut lmd_data) = (Vec::new(), Vec::new(), Vec::new());
        for m in &self.meta {
            let record = |out: &mut Vec<u8>| {
                out.push(m.key.len() as u8 + 1);
                out.extend_from_slice(m.key.as_bytes());
                out.push(0);
                out.push(m.type_code);
                out.extend_from_slice(&(m.data.len() as u32).to_le_bytes());
            };
            if m.data.len() > META_DATA_THRESHOLD {
                let zipped = zip(&m.data);
                record(&mut lmd_header);
                lmd_header.extend_from_slice(&(zipped.len() as u32).to_le_bytes());
                lmd_data.extend_from_slice(&zipped);
            } else {
                record(&mut small);
                small.extend_from_slice(&m.data);
            }
        }
        let small_zip = if small.is_empty() {
            Vec::new()
        } else {
            zip(&small)
        };
        let lmd_header_zip = if lmd_header.is_empty() {
            Vec::new()
        } else {
            zip(&lmd_header)
        };

        let mut out = Vec::with_capacity(
            128 + face_info.len() + const_block.len() + level_info.len() + level_data.len(),
        );
        let header_at = out.len();
        out.resize(64 + EXT_HEADER_SIZE, 0);
        out.extend_from_slice(&face_info);
        out.extend_from_slice(&const_block);
        out.extend_from_slice(&level_info);
        out.extend_from_slice(&level_data);
        if !self.meta.is_empty() {
            out.extend_from_slice(&small_zip);
            out.extend_from_slice(&[0u8; 8]);
            out.extend_from_slice(&lmd_header_zip);
            out.extend_from_slice(&lmd_data);
        }
        let edit_pos = out.len() as u64;

        let mut h = Vec::with_capacity(64 + EXT_HEADER_SIZE);
        let u32s = |h: &mut Vec<u8>, vs: &[u32]| {
            for v in vs {
                h.extend_from_slice(&v.to_le_bytes());
            }
        };
        u32s(
            &mut h,
            &[
                MAGIC,
                1,
                match o.mesh {
                    MeshType::Triangle => 0,
                    MeshType::Quad => 1,
                },
                match o.data_type {
                    DataType::U8 => 0,
                    DataType::U16 => 1,
                    DataType::Half => 2,
                    DataType::F32 => 3,
                },
                o.alpha_channel.map_or(-1i32, |a| a as i32) as u32,
            ],
        );
        h.extend_from_slice(&o.nchannels.to_le_bytes());
        h.extend_from_slice(&(nlevels as u16).to_le_bytes());
        u32s(
            &mut h,
            &[
                nfaces as u32,
                EXT_HEADER_SIZE as u32,
                face_info.len() as u32,
                const_block.len() as u32,
                level_info.len() as u32,
                MINOR_VERSION,
            ],
        );
        h.extend_from_slice(&(level_data.len() as u64).to_le_bytes());
        u32s(&mut h, &[small_zip.len() as u32, small.len() as u32]);
        let border = |m: BorderMode| -> u16 {
            match m {
                BorderMode::Clamp => 0,
                BorderMode::Black => 1,
                BorderMode::Periodic => 2,
            }
        };
        for v in [
            border(o.border_u),
            0,
            border(o.border_v),
            match o.edge_filter {
                EdgeFilterMode::None => 0,
                EdgeFilterMode::TanVec => 1,
            },
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        u32s(
            &mut h,
            &[lmd_header_zip.len() as u32, lmd_header.len() as u32],
        );
        for v in [lmd_data.len() as u64, 0, edit_pos] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        out[header_at..header_at + h.len()].copy_from_slice(&h);
        Ok(out)
    }

    /// Assemble the file and write it to `path`.
    pub fn write_to(self, path: impl AsRef<Path>) -> Result<u64, PtexError> {
        let path = path.as_ref();
        let bytes = self.finish()?;
        std::fs::write(path, &bytes).map_err(|e| {
            Fail::new(PtexErrorKind::Io, format!("cannot write: {e}"))
                .in_file(&path.display().to_string())
        })?;
        Ok(bytes.len() as u64)
    }

    /// Check `face` and `info` for this file; the face's index.
    fn check_face(&self, face: u32, info: &FaceInfo) -> Result<usize, PtexError> {
        let n = self.faces.len();
        if face as usize >= n {
            return Err(fail(format!("no face {face} (the file has {n} faces)")));
        }
        if !info.res.is_valid() {
            return Err(fail(format!(
                "face {face}: invalid resolution {}",
                info.res
            )));
        }
        if self.options.mesh == MeshType::Triangle && info.res.ulog2 != info.res.vlog2 {
            return Err(fail(format!(
                "face {face}: triangle faces must be square, not {}",
                info.res
            )));
        }
        for (e, &a) in info.adjfaces.iter().enumerate() {
            if a < -1 || (a >= 0 && a as usize >= n) {
                return Err(fail(format!(
                    "face {face}: neighbour {a} across edge {e} is not -1 or one of the {n} faces"
                )));
            }
        }
        Ok(face as usize)
    }

    /// `info` with the flags and fields the reference writer keeps, plus `flags`.
    fn clean(&self, mut info: FaceInfo, flags: u8) -> FaceInfo {
        match self.options.mesh {
            MeshType::Triangle => {
                info.flags = 0;
                info.adjfaces[3] = -1;
                info.adjedges &= 0x3f;
            }
            MeshType::Quad => info.flags &= face_flags::SUBFACE,
        }
        info.flags |= flags;
        info
    }
}

/// A face the application never wrote: constant black, 1×1, no neighbours.
fn unwritten_face() -> FaceInfo {
    FaceInfo {
        res: Res::new(0, 0),
        adjedges: 0,
        flags: face_flags::CONSTANT,
        adjfaces: [-1; 4],
    }
}

/// The 20-byte face info record.
fn face_bytes(f: &FaceInfo) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[0] = f.res.ulog2 as u8;
    b[1] = f.res.vlog2 as u8;
    b[2] = f.adjedges;
    b[3] = f.flags;
    for (e, a) in f.adjfaces.iter().enumerate() {
        b[4 + 4 * e..8 + 4 * e].copy_from_slice(&a.to_le_bytes());
    }
    b
}

/// A meta data value's type code and little-endian bytes (a string with its NUL).
fn encode_meta(value: &MetaValue) -> (u8, Vec<u8>) {
    fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    match value {
        MetaValue::String(s) => {
            let mut b: Vec<u8> = s.bytes().take_while(|&c| c != 0).collect();
            b.push(0);
            (0, b)
        }
        MetaValue::Int8(v) => (1, le(v, i8::to_le_bytes)),
        MetaValue::Int16(v) => (2, le(v, i16::to_le_bytes)),
        MetaValue::Int32(v) => (3, le(v, i32::to_le_bytes)),
        MetaValue::Float(v) => (4, le(v, f32::to_le_bytes)),
        MetaValue::Double(v) => (5, le(v, f64::to_le_bytes)),
    }
}
