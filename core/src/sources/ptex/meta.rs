//! Meta data (format note §10, §14): the small block, the large-meta-data header (whose
//! payloads are read at their first access) and meta data edits, merged in the reference
//! reader's order: small entries, then large ones, then edits, where an edit of an existing
//! key replaces its value in place and a new key is appended.

use super::error::{Fail, R};
use super::header::u32_at;
use super::input::Input;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The most bytes this reader inflates for one meta data block or value.
pub const MAX_META_BYTES: u64 = 1 << 30;

/// The type of a meta data value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaType {
    /// A NUL-terminated string.
    String,
    /// `i8` values.
    Int8,
    /// `i16` values.
    Int16,
    /// `i32` values.
    Int32,
    /// `f32` values.
    Float,
    /// `f64` values.
    Double,
}

impl MetaType {
    fn from_u8(t: u8) -> Option<MetaType> {
        Some(match t {
            0 => MetaType::String,
            1 => MetaType::Int8,
            2 => MetaType::Int16,
            3 => MetaType::Int32,
            4 => MetaType::Float,
            5 => MetaType::Double,
            _ => return None,
        })
    }
}

/// A decoded meta data value.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaValue {
    /// The string up to its first NUL (invalid UTF-8 replaced).
    String(String),
    /// `i8` values.
    Int8(Vec<i8>),
    /// `i16` values.
    Int16(Vec<i16>),
    /// `i32` values.
    Int32(Vec<i32>),
    /// `f32` values.
    Float(Vec<f32>),
    /// `f64` values.
    Double(Vec<f64>),
}

impl MetaValue {
    /// Decode `data` as values of `t` (a trailing partial value is ignored, as the
    /// reference counts `datasize / sizeof(value)`).
    pub fn decode(t: MetaType, data: &[u8]) -> MetaValue {
        fn each<const N: usize, T>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
            data.chunks_exact(N)
                .map(|c| {
                    let mut a = [0u8; N];
                    a.copy_from_slice(c);
                    f(a)
                })
                .collect()
        }
        match t {
            MetaType::String => {
                let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
                MetaValue::String(String::from_utf8_lossy(&data[..end]).into_owned())
            }
            MetaType::Int8 => MetaValue::Int8(each(data, i8::from_le_bytes)),
            MetaType::Int16 => MetaValue::Int16(each(data, i16::from_le_bytes)),
            MetaType::Int32 => MetaValue::Int32(each(data, i32::from_le_bytes)),
            MetaType::Float => MetaValue::Float(each(data, f32::from_le_bytes)),
            MetaType::Double => MetaValue::Double(each(data, f64::from_le_bytes)),
        }
    }
}

/// Where a meta data entry's value was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaStorage {
    /// The small meta data block.
    Small,
    /// Its own zlib stream in the large-meta-data section.
    Large,
    /// A meta data edit record.
    Edit,
}

/// One meta data entry: its key, type, size and where its value lies.
#[derive(Debug)]
pub struct MetaEntry {
    /// The key (without its NUL).
    pub key: String,
    /// The value's type.
    pub meta_type: MetaType,
    /// Bytes of the value (a string's NUL included).
    pub data_size: u32,
    /// Where the value was found.
    pub storage: MetaStorage,
    payload: Payload,
}

/// A value in memory, or a large one still in the file.
#[derive(Debug)]
enum Payload {
    Inline(Vec<u8>),
    Large {
        offset: u64,
        zip_size: u32,
        data: OnceLock<Vec<u8>>,
    },
}

impl MetaEntry {
    /// Offset and compressed size of a large value's zlib stream (`None` for other values).
    pub fn large_span(&self) -> Option<(u64, u32)> {
        match &self.payload {
            Payload::Large {
                offset, zip_size, ..
            } => Some((*offset, *zip_size)),
            Payload::Inline(_) => None,
        }
    }

    /// The value's bytes, reading (and keeping) a large value at its first access.
    pub(crate) fn data(&self, input: &Input) -> R<&[u8]> {
        match &self.payload {
            Payload::Inline(d) => Ok(d),
            Payload::Large {
                offset,
                zip_size,
                data,
            } => {
                if let Some(d) = data.get() {
                    return Ok(d);
                }
                let what = format!("large meta data value \"{}\"", self.key);
                let d = input.read_zip(
                    *offset,
                    u64::from(*zip_size),
                    u64::from(self.data_size),
                    MAX_META_BYTES,
                    &what,
                )?;
                Ok(data.get_or_init(|| d))
            }
        }
    }
}

/// Every meta data entry in index order, and the index of each key.
#[derive(Debug, Default)]
pub(crate) struct Meta {
    pub entries: Vec<MetaEntry>,
    by_key: HashMap<String, usize>,
}

impl Meta {
    /// The index of `key`.
    pub fn find(&self, key: &str) -> Option<usize> {
        self.by_key.get(key).copied()
    }

    /// Add an entry: a new key is appended, an existing one replaced in place.
    fn add(&mut self, entry: MetaEntry) {
        match self.by_key.get(&entry.key) {
            Some(&i) => self.entries[i] = entry,
            None => {
                self.by_key.insert(entry.key.clone(), self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// Add the entries of an inflated small block (or meta data edit).
    pub fn add_block(&mut self, block: &[u8], storage: MetaStorage, what: &str) -> R<()> {
        let mut r = Cursor::new(block, what);
        while !r.done() {
            let (key, meta_type, data_size) = r.entry_head()?;
            let data = r.take(data_size as usize, &key)?.to_vec();
            self.add(MetaEntry {
                key,
                meta_type,
                data_size,
                storage,
                payload: Payload::Inline(data),
            });
        }
        Ok(())
    }

    /// Add the entries of the inflated large-meta-data header, whose payloads follow each
    /// other from `data_offset`, `data_size` bytes in all.
    pub fn add_large(&mut self, header: &[u8], data_offset: u64, data_size: u64) -> R<()> {
        let what = "the large meta data header";
        let mut r = Cursor::new(header, what);
        let (mut at, end) = (data_offset, data_offset.saturating_add(data_size));
        while !r.done() {
            let (key, meta_type, size) = r.entry_head()?;
            let zip_size = r.u32(&key)?;
            if at.saturating_add(u64::from(zip_size)) > end {
                return Err(Fail::corrupt(format!(
                    "{what}: the value of \"{key}\" ({zip_size} bytes at offset {at}) runs past the large meta data, which ends at {end}"
                )));
            }
            self.add(MetaEntry {
                key,
                meta_type,
                data_size: size,
                storage: MetaStorage::Large,
                payload: Payload::Large {
                    offset: at,
                    zip_size,
                    data: OnceLock::new(),
                },
            });
            at += u64::from(zip_size);
        }
        Ok(())
    }
}

/// A reader over an inflated meta data block that names the block in its errors.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
    what: &'a str,
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8], what: &'a str) -> Self {
        Cursor { b, at: 0, what }
    }

    fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    fn take(&mut self, n: usize, item: &str) -> R<&'a [u8]> {
        match self.at.checked_add(n) {
            Some(end) if end <= self.b.len() => {
                let s = &self.b[self.at..end];
                self.at = end;
                Ok(s)
            }
            _ => Err(Fail::corrupt(format!(
                "{}: {item} ({n} bytes at {}) runs past the block's {} bytes",
                self.what,
                self.at,
                self.b.len()
            ))),
        }
    }

    fn u32(&mut self, item: &str) -> R<u32> {
        Ok(u32_at(self.take(4, item)?, 0))
    }

    /// Key size, key, type and data size of the next entry.
    fn entry_head(&mut self) -> R<(String, MetaType, u32)> {
        let key_size = usize::from(self.take(1, "an entry's key size")?[0]);
        if key_size == 0 {
            return Err(Fail::corrupt(format!(
                "{}: an entry at byte {} has an empty key (no NUL)",
                self.what,
                self.at - 1
            )));
        }
        let key_bytes = self.take(key_size, "an entry's key")?;
        let key = String::from_utf8_lossy(&key_bytes[..key_size - 1]).into_owned();
        let t = self.take(1, &key)?[0];
        let meta_type = MetaType::from_u8(t).ok_or_else(|| {
            Fail::corrupt(format!(
                "{}: entry \"{key}\" has unknown type {t} (0..=5: string, int8, int16, int32, float, double)",
                self.what
            ))
        })?;
        let size = self.u32(&key)?;
        Ok((key, meta_type, size))
    }
}
