//! The one error type of the Ptex reader: which file, what kind of failure, and what
//! exactly is wrong.

use crate::sources::SourceError;

/// What kind of failure a [`PtexError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtexErrorKind {
    /// The file could not be opened or read (the system's message follows).
    Io,
    /// The file does not start with the Ptex magic number.
    NotPtex,
    /// A well-formed file this reader does not serve (another major version, a mesh or
    /// data type the format does not define).
    Unsupported,
    /// The file contradicts itself or the format: a size past the end of the file, a
    /// count no file could hold, a block that does not inflate to its size, ...
    Corrupt,
    /// A request outside the file: a face, level, tile, resolution or texel it lacks.
    OutOfRange,
}

/// A failure of the Ptex reader, naming the file and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ptex file {file}: {message}")]
pub struct PtexError {
    /// The file (its path, or the name given to [`super::PtexFile::from_bytes`]).
    pub file: String,
    /// What kind of failure.
    pub kind: PtexErrorKind,
    /// What exactly is wrong, in words.
    pub message: String,
}

impl From<PtexError> for SourceError {
    fn from(e: PtexError) -> Self {
        SourceError(e.to_string())
    }
}

/// A failure found below [`super::PtexFile`], before the file's name is attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fail {
    pub kind: PtexErrorKind,
    pub message: String,
}

impl Fail {
    /// A [`PtexErrorKind::Corrupt`] failure.
    pub fn corrupt(message: impl Into<String>) -> Fail {
        Fail {
            kind: PtexErrorKind::Corrupt,
            message: message.into(),
        }
    }

    /// A [`PtexErrorKind::OutOfRange`] failure.
    pub fn range(message: impl Into<String>) -> Fail {
        Fail {
            kind: PtexErrorKind::OutOfRange,
            message: message.into(),
        }
    }

    /// A failure of another kind.
    pub fn new(kind: PtexErrorKind, message: impl Into<String>) -> Fail {
        Fail {
            kind,
            message: message.into(),
        }
    }

    /// The same failure with `context` put in front of its message.
    pub fn context(self, context: impl std::fmt::Display) -> Fail {
        Fail {
            kind: self.kind,
            message: format!("{context}: {}", self.message),
        }
    }

    /// Attach the file's name.
    pub fn in_file(self, file: &str) -> PtexError {
        PtexError {
            file: file.to_owned(),
            kind: self.kind,
            message: self.message,
        }
    }
}

/// `Result` of the reader's internals.
pub(crate) type R<T> = Result<T, Fail>;
