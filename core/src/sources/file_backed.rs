//! The state every file-backed image source keeps ([`FileBacked`]): its path, a handle
//! from the shared [`FileHandles`] set, and the parse of the file's header with the
//! identity (inode, length, modification time) of the file it was parsed from.
//!
//! The rules, in one place for every format that uses it:
//! - the first caller's parse is kept; [`FileBacked::reopened`] (what
//!   [`ImageSource::open`](super::ImageSource::open) returns) hands that parse out once,
//!   then parses the file now at the path anew (an invalidated texture sees new contents);
//! - a read fetches its handle from the set (reopening a file the set closed) and, after
//!   reading, [`FileBacked::check_unchanged`] fails it if the file is no longer the one
//!   parsed: a file rewritten or replaced on disk never yields a torn tile.

use super::exr::handles::INVALIDATE_ADVICE;
use super::exr::{FileIdentity, OpenFile};
use super::{FileHandles, SourceError};
use parking_lot::RwLock;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// One parse of a file: what the format's parser made of it, and which file it was.
pub(crate) struct Parsed<P> {
    /// The file parsed.
    pub identity: FileIdentity,
    /// Whether an `open` has returned this parse.
    claimed: AtomicBool,
    /// The format's description of the file.
    pub value: P,
}

/// Path, handle and current parse of a file-backed source (see the module docs).
pub(crate) struct FileBacked<P> {
    path: PathBuf,
    handles: Arc<FileHandles>,
    parsed: RwLock<Option<Arc<Parsed<P>>>>,
    handle: RwLock<Weak<OpenFile>>,
}

/// A format's parser: the file's description from the open file and its length.
pub(crate) type Parse<'a, P> = &'a dyn Fn(&OpenFile, u64) -> Result<P, String>;

impl<P> FileBacked<P> {
    /// State for the file at `path`, opened through `handles`. Touches nothing yet.
    pub fn new(path: PathBuf, handles: Arc<FileHandles>) -> FileBacked<P> {
        FileBacked {
            path,
            handles,
            parsed: RwLock::new(None),
            handle: RwLock::new(Weak::new()),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current parse, if there is one.
    pub fn current(&self) -> Option<Arc<Parsed<P>>> {
        self.parsed.read().clone()
    }

    /// An error naming the file.
    pub fn error(&self, reason: impl std::fmt::Display) -> SourceError {
        SourceError(format!("{}: {reason}", self.path.display()))
    }

    /// `e`, naming the file unless it does already (errors of reads through this state
    /// name it; a generated level's own errors do not).
    pub fn named(&self, e: SourceError) -> SourceError {
        let prefix = format!("{}: ", self.path.display());
        if e.0.starts_with(&prefix) {
            e
        } else {
            SourceError(prefix + &e.0)
        }
    }

    /// The open file, from the last handle if the set still holds it.
    pub fn file(&self) -> Result<Arc<OpenFile>, SourceError> {
        if let Some(f) = self.handle.read().upgrade() {
            if !f.is_closed() {
                self.handles.touch(&f);
                return Ok(f);
            }
        }
        let f = self
            .handles
            .get(&self.path)
            .map_err(|e| self.error(format_args!("cannot open: {e}")))?;
        *self.handle.write() = Arc::downgrade(&f);
        Ok(f)
    }

    /// The current parse, parsing the file if there is none (the first caller's parse is
    /// kept; `on_new` sees the one kept, once).
    pub fn parsed(
        &self,
        parse: Parse<'_, P>,
        on_new: &dyn Fn(&P),
    ) -> Result<Arc<Parsed<P>>, SourceError> {
        if let Some(o) = self.parsed.read().as_ref() {
            return Ok(o.clone());
        }
        let fresh = Arc::new(self.parse(parse)?);
        let mut current = self.parsed.write();
        if let Some(o) = current.as_ref() {
            return Ok(o.clone());
        }
        on_new(&fresh.value);
        *current = Some(fresh.clone());
        Ok(fresh)
    }

    /// The parse an `open` returns: the current one if no `open` has returned it yet,
    /// else a new parse of the file now at the path, which replaces it.
    pub fn reopened(
        &self,
        parse: Parse<'_, P>,
        on_new: &dyn Fn(&P),
    ) -> Result<Arc<Parsed<P>>, SourceError> {
        let o = self.parsed(parse, on_new)?;
        if !o.claimed.swap(true, Ordering::AcqRel) {
            return Ok(o);
        }
        let fresh = Arc::new(self.parse(parse)?);
        fresh.claimed.store(true, Ordering::Release);
        on_new(&fresh.value);
        *self.parsed.write() = Some(fresh.clone());
        Ok(fresh)
    }

    /// Parse the file now at the path (a handle to a file replaced since is closed and the
    /// path opened anew). The parser's errors are prefixed with the path.
    fn parse(&self, parse: Parse<'_, P>) -> Result<Parsed<P>, SourceError> {
        let file = self
            .handles
            .get_current(&self.path)
            .map_err(|e| self.error(format_args!("cannot open: {e}")))?;
        *self.handle.write() = Arc::downgrade(&file);
        let identity = file
            .identity()
            .map_err(|e| self.error(format_args!("cannot read the file's status: {e}")))?;
        let value = parse(&file, identity.len).map_err(|e| self.error(e))?;
        Ok(Parsed {
            identity,
            claimed: AtomicBool::new(false),
            value,
        })
    }

    /// Fail if `file` is no longer the file `parsed` was made from.
    pub fn check_unchanged(&self, parsed: &Parsed<P>, file: &OpenFile) -> Result<(), SourceError> {
        parsed
            .identity
            .check_file(file, INVALIDATE_ADVICE)
            .map_err(|e| self.error(e))
    }
}
