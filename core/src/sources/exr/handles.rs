//! A bounded set of open files shared by EXR sources, closed least recently used first
//! (OpenImageIO's `max_open_files`).
//!
//! Reads are positioned (`pread` on Unix, `seek_read` on Windows), so one open file serves
//! any number of threads at once without a seek lock. A reader holds an `Arc` of the file
//! for the length of its read: closing a file (dropping it from the set) never breaks a
//! read in flight; the descriptor is released when the last reader lets go.
//!
//! A file's [`FileIdentity`] (device, inode, length, modification time) tells a source
//! whether the file it parsed is still the one it reads: a file rewritten in place changes
//! its length or modification time, a file replaced by a rename is another inode.

use crate::sources::open_file;
use crate::sources::positioned::PositionedFile;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// Files kept open by [`FileHandles::default_shared`].
pub const DEFAULT_MAX_OPEN_FILES: usize = 100;

/// One open file and when it was last used (a stamp of its [`FileHandles`]' clock).
#[derive(Debug)]
pub(crate) struct OpenFile {
    file: PositionedFile,
    last_used: AtomicU64,
    /// Set when the set drops the file: holders finish their reads, then ask again.
    closed: AtomicBool,
}

impl OpenFile {
    fn new(file: File) -> OpenFile {
        OpenFile {
            file: PositionedFile::new(file),
            last_used: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Open `path` outside any [`FileHandles`] set (closed when dropped).
    pub(crate) fn open(path: &Path) -> io::Result<OpenFile> {
        Ok(OpenFile::new(open_file(path)?))
    }

    /// Whether the set has closed (dropped) this file.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// The file's length in bytes.
    pub(crate) fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// The identity of the open file now (one `fstat`).
    pub(crate) fn identity(&self) -> io::Result<FileIdentity> {
        Ok(FileIdentity::of(&self.file.metadata()?))
    }

    /// Read up to `buf.len()` bytes at `offset` (fewer only at the end of the file).
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }

    /// Fill `buf` from `offset`; `UnexpectedEof` where the file ends first.
    pub(crate) fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the file ends before the data",
                    ))
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// What a texture whose file changed on disk says to do: a source that can read the new
/// file (reopening it) does so once the texture is invalidated.
pub(crate) const INVALIDATE_ADVICE: &str = "invalidate the texture to read the new contents";

/// What tells one version of a file from another: its device and inode (Unix), length
/// and modification time. A rewrite in place changes the length or the modification time
/// (unless it keeps the length and lands within the file system's timestamp granularity
/// of the previous write); a replacement by rename is another inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    /// Device and inode numbers (0, 0 where the platform has none).
    pub node: (u64, u64),
    /// Length in bytes.
    pub len: u64,
    /// Last modification, where the file system records it.
    pub modified: Option<SystemTime>,
}

impl FileIdentity {
    /// The identity `meta` describes.
    pub(crate) fn of(meta: &std::fs::Metadata) -> FileIdentity {
        #[cfg(unix)]
        let node = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let node = (0, 0);
        FileIdentity {
            node,
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }

    /// Whether `self` and `other` are the same file, whatever its contents (Unix: the same
    /// inode; elsewhere the same length and modification time, as close as one can tell).
    pub(crate) fn same_file(&self, other: &FileIdentity) -> bool {
        if cfg!(unix) {
            self.node == other.node
        } else {
            self.len == other.len && self.modified == other.modified
        }
    }

    /// `Ok` while `now` is still the file as it was opened (`self`); else the message every
    /// file-backed source gives, saying what changed ("the file changed on disk since it
    /// was opened (…)"), for the caller to add what to do about it.
    pub(crate) fn check_unchanged(&self, now: &FileIdentity) -> Result<(), String> {
        if self == now {
            return Ok(());
        }
        Err(format!(
            "the file changed on disk since it was opened ({})",
            self.change(now)
        ))
    }

    /// `Ok` while `file` is still the file as it was opened (`self`); else why not, as
    /// [`check_unchanged`](Self::check_unchanged) says it, followed by `advice` (what to do
    /// to read the new contents), or why its status cannot be read.
    pub(crate) fn check_file(&self, file: &OpenFile, advice: &str) -> Result<(), String> {
        let now = file
            .identity()
            .map_err(|e| format!("cannot read the file's status: {e}"))?;
        self.check_unchanged(&now)
            .map_err(|changed| format!("{changed}: {advice}"))
    }

    /// In words, for messages: what differs between `self` (before) and `now`.
    pub(crate) fn change(&self, now: &FileIdentity) -> String {
        let mut what = Vec::new();
        if self.node != now.node {
            what.push("it was replaced by another file".to_string());
        }
        if self.len != now.len {
            what.push(format!(
                "its length went from {} to {} bytes",
                self.len, now.len
            ));
        }
        if self.modified != now.modified {
            what.push("its modification time changed".to_string());
        }
        what.join(", ")
    }
}

/// A `Read` over an [`OpenFile`] from a position, by positioned reads (the file's own
/// cursor is never used, so readers of one file do not disturb each other).
pub(crate) struct ReadAt<'a> {
    pub(crate) file: &'a OpenFile,
    pub(crate) position: u64,
}

impl io::Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.position)?;
        self.position += n as u64;
        Ok(n)
    }
}

/// Counters of a [`FileHandles`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub struct FileHandleStats {
    /// Files opened (each open of a path not in the set counts).
    pub opens: u64,
    /// Files closed to stay within the bound (or by [`FileHandles::close_all`]).
    pub closes: u64,
    /// Files in the set now.
    pub open_now: usize,
    /// The bound.
    pub max_open_files: usize,
}

/// A bounded set of open files keyed by path: at most `max_open_files` are kept open, the
/// least recently used is closed first. Shared by every [`super::ExrSource`] given the same
/// `Arc` (by default the process-wide [`FileHandles::default_shared`]).
///
/// The lock is held only to look a path up or insert it; opening, reading and closing
/// happen outside it.
#[derive(Debug)]
pub struct FileHandles {
    max_open_files: usize,
    /// Advanced at every use; a file's `last_used` is the clock when it was last used.
    clock: AtomicU64,
    open: Mutex<HashMap<PathBuf, Arc<OpenFile>>>,
    opens: AtomicU64,
    closes: AtomicU64,
}

impl FileHandles {
    /// A set that keeps at most `max_open_files` files open (0 is taken as 1).
    pub fn new(max_open_files: usize) -> FileHandles {
        FileHandles {
            max_open_files: max_open_files.max(1),
            clock: AtomicU64::new(1),
            open: Mutex::new(HashMap::new()),
            opens: AtomicU64::new(0),
            closes: AtomicU64::new(0),
        }
    }

    /// The process-wide set ([`DEFAULT_MAX_OPEN_FILES`] files) that
    /// [`super::ExrOptions::default`] uses.
    pub fn default_shared() -> Arc<FileHandles> {
        static SHARED: OnceLock<Arc<FileHandles>> = OnceLock::new();
        SHARED
            .get_or_init(|| Arc::new(FileHandles::new(DEFAULT_MAX_OPEN_FILES)))
            .clone()
    }

    /// The bound on open files.
    pub fn max_open_files(&self) -> usize {
        self.max_open_files
    }

    /// Opens, closes and the files open now.
    pub fn stats(&self) -> FileHandleStats {
        FileHandleStats {
            opens: self.opens.load(Ordering::Relaxed),
            closes: self.closes.load(Ordering::Relaxed),
            open_now: self.open.lock().len(),
            max_open_files: self.max_open_files,
        }
    }

    /// Close every file of the set (reads in flight finish on their own handle).
    pub fn close_all(&self) {
        let drained: Vec<Arc<OpenFile>> = self.open.lock().drain().map(|(_, f)| f).collect();
        for f in &drained {
            f.closed.store(true, Ordering::Relaxed);
        }
        self.closes
            .fetch_add(drained.len() as u64, Ordering::Relaxed);
        drop(drained);
    }

    /// Mark `file` used now.
    pub(crate) fn touch(&self, file: &OpenFile) {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        file.last_used.store(now, Ordering::Relaxed);
    }

    /// The open file for `path`, opening it (and closing the least recently used files
    /// beyond the bound) if it is not open.
    pub(crate) fn get(&self, path: &Path) -> io::Result<Arc<OpenFile>> {
        if let Some(f) = self.open.lock().get(path).cloned() {
            self.touch(&f);
            return Ok(f);
        }
        let opened = Arc::new(OpenFile::new(open_file(path)?));
        self.touch(&opened);
        let (file, closed) = {
            let mut open = self.open.lock();
            if let Some(existing) = open.get(path).cloned() {
                // Another thread opened it meanwhile: use theirs, close ours.
                (existing, Vec::new())
            } else {
                self.opens.fetch_add(1, Ordering::Relaxed);
                open.insert(path.to_path_buf(), opened.clone());
                (opened, evict_beyond(&mut open, self.max_open_files, path))
            }
        };
        self.closes
            .fetch_add(closed.len() as u64, Ordering::Relaxed);
        // `closed` (and a redundant `opened`) are dropped here, outside the lock.
        Ok(file)
    }
}

impl FileHandles {
    /// The open file for `path`, as [`get`](Self::get), but if the set holds a file that
    /// is no longer the one at `path` (replaced by a rename, or deleted and recreated), it
    /// is closed and `path` opened anew. A source calls this when it (re)opens its file.
    pub(crate) fn get_current(&self, path: &Path) -> io::Result<Arc<OpenFile>> {
        let file = self.get(path)?;
        let at_path = FileIdentity::of(&std::fs::metadata(path)?);
        if file.identity()?.same_file(&at_path) {
            return Ok(file);
        }
        let stale = {
            let mut open = self.open.lock();
            match open.get(path) {
                Some(f) if Arc::ptr_eq(f, &file) => open.remove(path),
                _ => None,
            }
        };
        if let Some(f) = &stale {
            f.closed.store(true, Ordering::Relaxed);
            self.closes.fetch_add(1, Ordering::Relaxed);
        }
        drop((stale, file));
        self.get(path)
    }
}

/// Remove least recently used files (never `keep`) until at most `max` remain.
fn evict_beyond(
    open: &mut HashMap<PathBuf, Arc<OpenFile>>,
    max: usize,
    keep: &Path,
) -> Vec<Arc<OpenFile>> {
    let mut closed = Vec::new();
    while open.len() > max {
        let oldest = open
            .iter()
            .filter(|(p, _)| p.as_path() != keep)
            .min_by_key(|(_, f)| f.last_used.load(Ordering::Relaxed))
            .map(|(p, _)| p.clone());
        match oldest.and_then(|p| open.remove(&p)) {
            Some(f) => {
                f.closed.store(true, Ordering::Relaxed);
                closed.push(f);
            }
            None => break,
        }
    }
    closed
}
