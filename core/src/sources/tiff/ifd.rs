//! TIFF directories (IFDs), read with positioned reads: the header (classic or BigTIFF,
//! either byte order), the chain of directories, and the values of the tags a texture
//! needs. Every count and offset a file declares is checked against the file's length
//! before anything is allocated for it, and chains that loop are cut.

use crate::sources::exr::OpenFile;
use std::collections::HashMap;

/// The most directories followed in one chain (a mip chain of a 2^20 image has 21).
pub(crate) const MAX_DIRECTORIES: usize = 64;
/// The most entries one directory may declare.
const MAX_ENTRIES: u64 = 4096;
/// The most bytes one tag's value may take (offset tables of a 64K² image of 64² tiles
/// take 8 MiB as LONG8).
const MAX_VALUE_BYTES: u64 = 64 << 20;

/// Byte order and offset width of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// `II` (little-endian) rather than `MM`.
    pub little: bool,
    /// BigTIFF (8-byte offsets and counts).
    pub big: bool,
    /// Offset of the first directory.
    pub first: u64,
}

/// One entry of a directory: its type, count and where its value is.
#[derive(Clone, Copy, Debug)]
struct Entry {
    kind: u16,
    count: u64,
    /// The value's bytes when they fit in the entry (`inline_len` of them), else unused.
    inline: [u8; 8],
    /// Offset of the value when it does not fit in the entry.
    offset: Option<u64>,
}

/// One directory: its entries by tag, and the offset of the next directory (0: none).
#[derive(Debug)]
pub(crate) struct Directory {
    entries: HashMap<u16, Entry>,
    /// Offset of the next directory in the chain (0 at the end).
    pub next: u64,
}

/// A file's header and how to read its values.
pub(crate) struct Reader<'a> {
    file: &'a OpenFile,
    /// The file's length: every declared range must end within it.
    len: u64,
    /// The header.
    pub header: Header,
}

fn type_size(kind: u16) -> Option<u64> {
    Some(match kind {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

impl<'a> Reader<'a> {
    /// Read the header of `file` (of `len` bytes).
    pub fn new(file: &'a OpenFile, len: u64) -> Result<Reader<'a>, String> {
        let mut head = [0u8; 16];
        let n = (len as usize).min(16);
        file.read_exact_at(&mut head[..n], 0)
            .map_err(|e| format!("cannot read the header: {e}"))?;
        let little = match &head[..2.min(n)] {
            b"II" => true,
            b"MM" => false,
            _ => return Err("not a TIFF file (bad byte-order mark)".into()),
        };
        if n < 8 {
            return Err("truncated TIFF header".into());
        }
        let u16_at = |i: usize| {
            let b = [head[i], head[i + 1]];
            if little {
                u16::from_le_bytes(b)
            } else {
                u16::from_be_bytes(b)
            }
        };
        let mut r = Reader {
            file,
            len,
            header: Header {
                little,
                big: false,
                first: 0,
            },
        };
        match u16_at(2) {
            42 => r.header.first = u64::from(r.u32_of(&head[4..8])),
            43 => {
                if n < 16 || u16_at(4) != 8 {
                    return Err("truncated or malformed BigTIFF header".into());
                }
                r.header.big = true;
                r.header.first = r.u64_of(&head[8..16]);
            }
            v => return Err(format!("not a TIFF file (version {v}, expected 42 or 43)")),
        }
        Ok(r)
    }

    fn u16_of(&self, b: &[u8]) -> u16 {
        let b = [b[0], b[1]];
        if self.header.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }

    fn u32_of(&self, b: &[u8]) -> u32 {
        let b = [b[0], b[1], b[2], b[3]];
        if self.header.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    }

    fn u64_of(&self, b: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        if self.header.little {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        }
    }

    /// Read `len` bytes at `offset`, which must lie inside the file.
    fn bytes(&self, offset: u64, len: u64, what: &str) -> Result<Vec<u8>, String> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(format!(
                "{what} ({len} bytes at offset {offset}) lies past the end of the file \
                 ({} bytes)",
                self.len
            ));
        }
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| format!("cannot read {what}: {e}"))?;
        Ok(buf)
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The directory at `offset`.
    pub fn directory(&self, offset: u64) -> Result<Directory, String> {
        let (count_len, entry_len, next_len) = if self.header.big {
            (8, 20, 8)
        } else {
            (2, 12, 4)
        };
        let head = self.bytes(offset, count_len, "a directory")?;
        let count = if self.header.big {
            self.u64_of(&head)
        } else {
            u64::from(self.u16_of(&head))
        };
        if count == 0 || count > MAX_ENTRIES {
            return Err(format!(
                "a directory at offset {offset} declares {count} entries (1..={MAX_ENTRIES})"
            ));
        }
        let body = self.bytes(
            offset + count_len,
            count * entry_len + next_len,
            "a directory's entries",
        )?;
        let mut entries = HashMap::with_capacity(count as usize);
        for e in body[..(count * entry_len) as usize].chunks_exact(entry_len as usize) {
            let tag = self.u16_of(&e[0..2]);
            let kind = self.u16_of(&e[2..4]);
            let (count, value) = if self.header.big {
                (self.u64_of(&e[4..12]), &e[12..20])
            } else {
                (u64::from(self.u32_of(&e[4..8])), &e[8..12])
            };
            let Some(size) = type_size(kind) else {
                continue; // an unknown type: the tag is not one we read
            };
            let bytes = size.saturating_mul(count);
            let mut inline = [0u8; 8];
            let offset = if bytes <= value.len() as u64 {
                inline[..value.len()].copy_from_slice(value);
                None
            } else if self.header.big {
                Some(self.u64_of(value))
            } else {
                Some(u64::from(self.u32_of(value)))
            };
            entries.insert(
                tag,
                Entry {
                    kind,
                    count,
                    inline,
                    offset,
                },
            );
        }
        let tail = &body[(count * entry_len) as usize..];
        let next = if self.header.big {
            self.u64_of(tail)
        } else {
            u64::from(self.u32_of(tail))
        };
        Ok(Directory { entries, next })
    }

    /// The raw bytes of `tag`'s value, if present.
    fn raw(&self, dir: &Directory, tag: u16) -> Result<Option<(Entry, Vec<u8>)>, String> {
        let Some(e) = dir.entries.get(&tag).copied() else {
            return Ok(None);
        };
        let bytes = type_size(e.kind).unwrap_or(1).saturating_mul(e.count);
        if bytes > MAX_VALUE_BYTES {
            return Err(format!(
                "tag {tag} declares {bytes} bytes of values (at most {MAX_VALUE_BYTES})"
            ));
        }
        let data = match e.offset {
            None => e.inline[..bytes as usize].to_vec(),
            Some(at) => self.bytes(at, bytes, &format!("the values of tag {tag}"))?,
        };
        Ok(Some((e, data)))
    }

    /// The unsigned integer values of `tag` (BYTE, SHORT, LONG, LONG8, IFD, IFD8).
    pub fn uints(&self, dir: &Directory, tag: u16) -> Result<Option<Vec<u64>>, String> {
        let Some((e, data)) = self.raw(dir, tag)? else {
            return Ok(None);
        };
        let values = match e.kind {
            1 | 7 => data.iter().map(|&b| u64::from(b)).collect(),
            3 => data
                .chunks_exact(2)
                .map(|b| u64::from(self.u16_of(b)))
                .collect(),
            4 | 13 => data
                .chunks_exact(4)
                .map(|b| u64::from(self.u32_of(b)))
                .collect(),
            16 | 18 => data.chunks_exact(8).map(|b| self.u64_of(b)).collect(),
            k => return Err(format!("tag {tag} has type {k}, not an unsigned integer")),
        };
        Ok(Some(values))
    }

    /// The one unsigned value of `tag` (the first, when a value per sample is given).
    pub fn uint(&self, dir: &Directory, tag: u16) -> Result<Option<u64>, String> {
        Ok(self.uints(dir, tag)?.and_then(|v| v.first().copied()))
    }

    /// The bytes of a BYTE or UNDEFINED `tag` (JPEGTables), if present.
    pub fn bytes_of(&self, dir: &Directory, tag: u16) -> Result<Option<Vec<u8>>, String> {
        let Some((e, data)) = self.raw(dir, tag)? else {
            return Ok(None);
        };
        match e.kind {
            1 | 7 => Ok(Some(data)),
            k => Err(format!("tag {tag} has type {k}, not bytes")),
        }
    }

    /// The text of an ASCII `tag` (up to its first NUL), if present.
    pub fn ascii(&self, dir: &Directory, tag: u16) -> Result<Option<String>, String> {
        let Some((e, data)) = self.raw(dir, tag)? else {
            return Ok(None);
        };
        if e.kind != 2 {
            return Ok(None);
        }
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        Ok(Some(String::from_utf8_lossy(&data[..end]).into_owned()))
    }

    /// The directories of the chain starting at `first`, in order (at most
    /// [`MAX_DIRECTORIES`]; a loop ends the chain with an error).
    pub fn chain(&self, first: u64) -> Result<Vec<Directory>, String> {
        let mut dirs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut at = first;
        while at != 0 && dirs.len() < MAX_DIRECTORIES {
            if !seen.insert(at) {
                return Err(format!("the directory chain loops (offset {at} again)"));
            }
            let d = self.directory(at)?;
            at = d.next;
            dirs.push(d);
        }
        if dirs.is_empty() {
            return Err("the file has no image directory".into());
        }
        Ok(dirs)
    }
}
