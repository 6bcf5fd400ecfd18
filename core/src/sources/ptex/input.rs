//! The bytes of one Ptex file: positioned, bounds-checked reads (from any number of threads
//! at once, with no lock on Unix and Windows) and zlib inflation with its size known and
//! checked before anything is allocated.
//!
//! A file is the one parsed for as long as it is read: its identity (inode, length,
//! modification time) is taken at open and checked after every read, as the EXR sources
//! do, so a file rewritten or replaced on disk gives an error, never texels of two versions.

use super::error::{Fail, PtexErrorKind, R};
use crate::sources::exr::handles::{FileHandles, FileIdentity};
use crate::sources::open_file;
use crate::sources::positioned::PositionedFile;
use flate2::{Decompress, FlushDecompress, Status};
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The most a zlib stream can expand: deflate's limit is 1032:1 (a 258-byte match coded in
/// two bits), plus room for the smallest streams' fixed overhead.
pub(crate) fn max_inflated(zip_size: u64) -> u64 {
    zip_size.saturating_mul(1032).saturating_add(64)
}

/// Where the bytes come from.
enum Backing {
    /// An open file, read by position.
    File(PositionedFile),
    /// The whole file in memory.
    Memory(Arc<[u8]>),
    /// The file at a path, opened when read through a bounded set of open files (closed
    /// least recently used first, reopened on demand).
    Shared {
        handles: Arc<FileHandles>,
        path: PathBuf,
    },
}

/// The bytes of one file and its length, fixed at open.
pub(crate) struct Input {
    backing: Backing,
    len: u64,
    /// The file read (`None` for bytes in memory).
    identity: Option<FileIdentity>,
    /// Bytes read so far (every read counted).
    bytes_read: AtomicU64,
}

impl Input {
    /// Open `path` for positioned reads.
    pub fn open(path: &Path) -> R<Input> {
        let io =
            |what: &str, e: std::io::Error| Fail::new(PtexErrorKind::Io, format!("{what}: {e}"));
        let file = open_file(path).map_err(|e| io("cannot open", e))?;
        let meta = file
            .metadata()
            .map_err(|e| io("cannot read the file's size", e))?;
        Ok(Input {
            backing: Backing::File(PositionedFile::new(file)),
            len: meta.len(),
            identity: Some(FileIdentity::of(&meta)),
            bytes_read: AtomicU64::new(0),
        })
    }

    /// The file at `path`, read through `handles` (opened now to learn its length; the
    /// set may close it and a later read reopens it).
    pub fn open_shared(path: &Path, handles: Arc<FileHandles>) -> R<Input> {
        let io =
            |what: &str, e: std::io::Error| Fail::new(PtexErrorKind::Io, format!("{what}: {e}"));
        // The file now at the path (the set may hold one that was replaced since).
        let file = handles
            .get_current(path)
            .map_err(|e| io("cannot open", e))?;
        let identity = file
            .identity()
            .map_err(|e| io("cannot read the file's size", e))?;
        Ok(Input {
            backing: Backing::Shared {
                handles,
                path: path.to_path_buf(),
            },
            len: identity.len,
            identity: Some(identity),
            bytes_read: AtomicU64::new(0),
        })
    }

    /// Serve `bytes` as the file.
    pub fn memory(bytes: Arc<[u8]>) -> Input {
        let len = bytes.len() as u64;
        Input {
            backing: Backing::Memory(bytes),
            len,
            identity: None,
            bytes_read: AtomicU64::new(0),
        }
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Bytes read from the file so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// Check that `len` bytes at `offset` lie inside the file.
    pub fn check_span(&self, offset: u64, len: u64, what: &dyn Display) -> R<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Fail::corrupt(format!(
                "{what} ({len} bytes at offset {offset}) runs past the end of the file ({} bytes)",
                self.len
            ))),
        }
    }

    /// Fill `buf` from `offset`; an error naming `what` if the file ends first.
    pub fn read_into(&self, offset: u64, buf: &mut [u8], what: &dyn Display) -> R<()> {
        self.check_span(offset, buf.len() as u64, what)?;
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        match &self.backing {
            Backing::Memory(bytes) => {
                // In range: checked above against the same length.
                let start = offset as usize;
                buf.copy_from_slice(&bytes[start..start + buf.len()]);
                Ok(())
            }
            Backing::Shared { handles, path } => {
                let file = handles.get(path).map_err(|e| {
                    Fail::new(PtexErrorKind::Io, format!("{what}: cannot reopen: {e}"))
                })?;
                file.read_exact_at(buf, offset).map_err(|e| {
                    let message = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                        format!("{what}: the file ended before offset {} (was it truncated while open?)", offset + buf.len() as u64)
                    } else {
                        format!("{what}: read failed at offset {offset}: {e}")
                    };
                    Fail::new(PtexErrorKind::Io, message)
                })?;
                self.check_unchanged(file.identity(), what)
            }
            Backing::File(file) => {
                let (mut done, mut at) = (0usize, offset);
                while done < buf.len() {
                    match file.read_at(&mut buf[done..], at) {
                        Ok(0) => {
                            return Err(Fail::new(
                                PtexErrorKind::Io,
                                format!("{what}: the file ended at offset {at} (was it truncated while open?)"),
                            ))
                        }
                        Ok(n) => {
                            done += n;
                            at += n as u64;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            return Err(Fail::new(
                                PtexErrorKind::Io,
                                format!("{what}: read failed at offset {at}: {e}"),
                            ))
                        }
                    }
                }
                self.check_unchanged(file.metadata().map(|m| FileIdentity::of(&m)), what)
            }
        }
    }

    /// After a read: an error if the file read (`now`) is no longer the one opened.
    fn check_unchanged(&self, now: std::io::Result<FileIdentity>, what: &dyn Display) -> R<()> {
        let now = now.map_err(|e| {
            Fail::new(
                PtexErrorKind::Io,
                format!("{what}: cannot read the file's status: {e}"),
            )
        })?;
        match &self.identity {
            Some(opened) => opened.check_unchanged(&now).map_err(|changed| {
                Fail::new(
                    PtexErrorKind::Io,
                    format!("{what}: {changed}: create the texture again to read the new contents"),
                )
            }),
            None => Ok(()),
        }
    }

    /// Read `len` bytes at `offset` (checked against the file's length before allocating).
    pub fn read(&self, offset: u64, len: u64, what: &dyn Display) -> R<Vec<u8>> {
        self.check_span(offset, len, what)?;
        let mut buf = vec![0u8; len as usize];
        self.read_into(offset, &mut buf, what)?;
        Ok(buf)
    }

    /// Read the zlib stream of `zip_size` bytes at `offset` and inflate it to exactly
    /// `size` bytes. `size` is checked against `limit`, against what `zip_size` bytes can
    /// inflate to and against the file's length before anything is allocated.
    pub fn read_zip(
        &self,
        offset: u64,
        zip_size: u64,
        size: u64,
        limit: u64,
        what: &dyn Display,
    ) -> R<Vec<u8>> {
        check_inflated_size(zip_size, size, limit, what)?;
        self.check_span(offset, zip_size, what)?;
        let zip = self.read(offset, zip_size, what)?;
        inflate(&zip, size as usize, what)
    }

    /// As [`read_zip`](Self::read_zip), handing the inflated bytes to `use_bytes` instead of
    /// returning them: the compressed and inflated bytes go through this thread's scratch
    /// buffers, reused from block to block (no allocation, and no zeroing of bytes that
    /// are about to be overwritten). Texel blocks are read this way: they are made into
    /// interleaved texels at once.
    pub fn read_zip_with<T>(
        &self,
        offset: u64,
        zip_size: u64,
        size: u64,
        limit: u64,
        what: &dyn Display,
        use_bytes: impl FnOnce(&mut [u8]) -> T,
    ) -> R<T> {
        check_inflated_size(zip_size, size, limit, what)?;
        self.check_span(offset, zip_size, what)?;
        SCRATCH.with(|scratch| {
            // Re-entered on this thread (never expected): fresh buffers (sizes checked above).
            let Ok(mut scratch) = scratch.try_borrow_mut() else {
                let zip = self.read(offset, zip_size, what)?;
                let mut bytes = inflate(&zip, size as usize, what)?;
                return Ok(use_bytes(&mut bytes));
            };
            let (zip, out) = &mut *scratch;
            let (zip_len, size) = (zip_size as usize, size as usize);
            // Grown bytes are zeroed once; after that, reuse costs nothing.
            if zip.len() < zip_len {
                zip.resize(zip_len, 0);
            }
            if out.len() < size {
                out.resize(size, 0);
            }
            let result = self
                .read_into(offset, &mut zip[..zip_len], what)
                .and_then(|()| inflate_into(&zip[..zip_len], &mut out[..size], what))
                .map(|()| use_bytes(&mut out[..size]));
            // A large block does not stay allocated to the thread.
            for buffer in [zip, out] {
                if buffer.len() > SCRATCH_KEPT_BYTES {
                    *buffer = Vec::new();
                }
            }
            result
        })
    }
}

/// The most bytes each scratch buffer keeps between blocks (one texel block of a 1024×1024
/// half RGBA face is 8 MiB).
const SCRATCH_KEPT_BYTES: usize = 8 << 20;

thread_local! {
    /// This thread's buffers for a block's compressed and inflated bytes.
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Check that a stream of `zip_size` bytes may inflate to `size` bytes, and that `size` is
/// within `limit`.
pub(crate) fn check_inflated_size(
    zip_size: u64,
    size: u64,
    limit: u64,
    what: &dyn Display,
) -> R<()> {
    if size > limit {
        return Err(Fail::corrupt(format!(
            "{what} claims {size} bytes uncompressed, over this reader's limit of {limit} bytes"
        )));
    }
    if size > max_inflated(zip_size) {
        return Err(Fail::corrupt(format!(
            "{what} claims {size} bytes uncompressed from {zip_size} compressed bytes, more than zlib can expand to"
        )));
    }
    Ok(())
}

/// Inflate the complete zlib stream `zip` to exactly `size` bytes.
pub(crate) fn inflate(zip: &[u8], size: usize, what: &dyn Display) -> R<Vec<u8>> {
    let mut out = vec![0u8; size];
    inflate_into(zip, &mut out, what)?;
    Ok(out)
}

/// Inflate the complete zlib stream `zip` to exactly `out.len()` bytes, into `out`.
fn inflate_into(zip: &[u8], out: &mut [u8], what: &dyn Display) -> R<()> {
    let size = out.len();
    // libdeflate takes a whole stream of known size 1.2–2× faster than a streaming
    // inflater (its tables are kept per thread, where each zlib-rs stream builds its own);
    // anything it refuses goes through flate2, which says what is wrong.
    if crate::sources::inflate::inflate_whole(zip, out) == Some(size) {
        return Ok(());
    }
    let mut z = Decompress::new(true);
    let status = z
        .decompress(zip, out, FlushDecompress::Finish)
        .map_err(|e| Fail::corrupt(format!("{what} is not a valid zlib stream ({e})")))?;
    let produced = z.total_out();
    match status {
        Status::StreamEnd if produced == size as u64 => Ok(()),
        Status::StreamEnd => Err(Fail::corrupt(format!(
            "{what} inflates to {produced} bytes, expected {size}"
        ))),
        _ if produced == size as u64 => Err(Fail::corrupt(format!(
            "{what} does not end after the expected {size} bytes (it holds more, or its end is missing)"
        ))),
        _ => Err(Fail::corrupt(format!(
            "{what} is a truncated zlib stream ({produced} of {size} bytes inflated)"
        ))),
    }
}
