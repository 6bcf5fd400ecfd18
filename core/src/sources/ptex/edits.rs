//! Edit records appended by incremental saves (format note §14): a face edit replaces a
//! face's info, constant value and level-0 block (its stored reductions are then stale and
//! ignored); a meta data edit adds or replaces entries.

use super::error::{Fail, R};
use super::faces::{face_flags, FaceInfo, Res};
use super::header::{u32_at, MeshType};
use super::input::Input;
use super::levels::{BlockSpan, FaceDataHeader};

/// One edit record, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditRecord {
    /// Offset of the record (its one-byte type).
    pub offset: u64,
    /// What it changes.
    pub kind: EditKind,
}

/// What an edit record changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditKind {
    /// A face's data.
    Face {
        /// The face.
        face: u32,
        /// Its new resolution.
        res: Res,
        /// Whether it is now constant.
        constant: bool,
        /// Its new level-0 block.
        block: BlockSpan,
    },
    /// Meta data entries.
    Meta {
        /// Compressed bytes of the entries.
        zip_size: u32,
        /// Uncompressed bytes of the entries.
        mem_size: u32,
    },
    /// A record of a type this reader does not know (skipped, as the reference does).
    Unknown {
        /// The record's type byte.
        edit_type: u8,
    },
}

/// A face edit, with what applying it needs.
#[derive(Clone, Debug)]
pub(crate) struct FaceEdit {
    pub face: u32,
    pub info: FaceInfo,
    pub const_value: Vec<u8>,
    /// The new level-0 block (checked to lie inside the record).
    pub block: BlockSpan,
}

/// A meta data edit: its zlib block's place and sizes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MetaEdit {
    pub offset: u64,
    pub zip_size: u32,
    pub mem_size: u32,
}

/// Every edit record of a file.
#[derive(Debug, Default)]
pub(crate) struct Edits {
    pub records: Vec<EditRecord>,
    pub faces: Vec<FaceEdit>,
    pub metas: Vec<MetaEdit>,
}

/// What the scan needs to know about the file.
pub(crate) struct Scan {
    pub start: u64,
    /// The region's size, or `None` (files before format 1.3) to scan to the end.
    pub size: Option<u64>,
    pub nfaces: u32,
    pub mesh: MeshType,
    pub pixel_size: usize,
}

/// Read every edit record of the region.
pub(crate) fn read_edits(input: &Input, s: &Scan) -> R<Edits> {
    let end = match s.size {
        Some(size) => {
            let end = s.start.checked_add(size).filter(|&e| e <= input.len());
            end.ok_or_else(|| {
                Fail::corrupt(format!(
                    "the edit records ({size} bytes at offset {}) run past the end of the file ({} bytes)",
                    s.start,
                    input.len()
                ))
            })?
        }
        None => input.len(),
    };
    let mut edits = Edits::default();
    let mut pos = s.start;
    while pos < end {
        if end - pos < 5 {
            if s.size.is_none() {
                break; // an old file's scan stops at a partial header, as the reference's
            }
            return Err(Fail::corrupt(format!(
                "the edit record at offset {pos} has a header past the edit region's end at {end}"
            )));
        }
        let mut head = [0u8; 5];
        input.read_into(pos, &mut head, &"an edit record header")?;
        let (edit_type, size) = (head[0], u64::from(u32_at(&head, 1)));
        if size == 0 {
            break;
        }
        let body = pos + 5;
        let record_end = body + size;
        if record_end > end {
            return Err(Fail::corrupt(format!(
                "the edit record at offset {pos} ({size} bytes) runs past the edit region's end at {end}"
            )));
        }
        let kind = match edit_type {
            0 => face_edit(input, s, pos, body, record_end, &mut edits)?,
            1 => meta_edit(input, pos, body, record_end, &mut edits)?,
            t => EditKind::Unknown { edit_type: t },
        };
        edits.records.push(EditRecord { offset: pos, kind });
        pos = record_end;
    }
    Ok(edits)
}

fn face_edit(
    input: &Input,
    s: &Scan,
    pos: u64,
    body: u64,
    end: u64,
    edits: &mut Edits,
) -> R<EditKind> {
    let what = format!("the face edit record at offset {pos}");
    let head_size = 28 + s.pixel_size as u64;
    if end - body < head_size {
        return Err(Fail::corrupt(format!(
            "{what} holds {} bytes, less than its {head_size}-byte header",
            end - body
        )));
    }
    let head = input.read(body, head_size, &what)?;
    let face = u32_at(&head, 0);
    if face >= s.nfaces {
        return Err(Fail::corrupt(format!(
            "{what} edits face {face}, but the file has {} faces",
            s.nfaces
        )));
    }
    let mut info = FaceInfo::parse(&head[4..24]);
    info.check(s.mesh, s.nfaces)
        .map_err(|e| e.context(format!("{what} (face {face})")))?;
    info.flags |= face_flags::HAS_EDITS;
    let header = FaceDataHeader(u32_at(&head, 24));
    let block = BlockSpan {
        offset: body + head_size,
        header,
    };
    if !info.is_constant() && block.offset + u64::from(header.block_size()) > end {
        return Err(Fail::corrupt(format!(
            "{what}: face {face}'s block ({} bytes) runs past the record's end at {end}",
            header.block_size()
        )));
    }
    edits.faces.push(FaceEdit {
        face,
        info,
        const_value: head[28..].to_vec(),
        block,
    });
    Ok(EditKind::Face {
        face,
        res: info.res,
        constant: info.is_constant(),
        block,
    })
}

fn meta_edit(input: &Input, pos: u64, body: u64, end: u64, edits: &mut Edits) -> R<EditKind> {
    let what = format!("the meta data edit record at offset {pos}");
    if end - body < 8 {
        return Err(Fail::corrupt(format!(
            "{what} is shorter than its 8-byte header"
        )));
    }
    let head = input.read(body, 8, &what)?;
    let (zip_size, mem_size) = (u32_at(&head, 0), u32_at(&head, 4));
    if body + 8 + u64::from(zip_size) > end {
        return Err(Fail::corrupt(format!(
            "{what}: its {zip_size} compressed bytes run past the record's end at {end}"
        )));
    }
    edits.metas.push(MetaEdit {
        offset: body + 8,
        zip_size,
        mem_size,
    });
    Ok(EditKind::Meta { zip_size, mem_size })
}
