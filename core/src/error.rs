//! The one error type of the crate.

use crate::ids::TextureId;

/// Everything that can go wrong in demandtex, with enough context to say which
/// texture, file or limit was involved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// An option or argument is out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A texture id that this loader never handed out.
    #[error("unknown texture {0:?}")]
    UnknownTexture(TextureId),
    /// A texture that was unloaded ([`crate::Engine::unload_texture`]): it samples as its
    /// fallback colour, and its id cannot be invalidated, replaced or reused.
    #[error("texture {0:?} was unloaded")]
    Unloaded(TextureId),
    /// The virtual page space or page table has no room for another allocation.
    #[error("out of virtual pages: {what} needs {needed} pages, {available} left")]
    OutOfPages {
        /// What asked for the pages.
        what: String,
        /// Pages asked for.
        needed: u64,
        /// Pages still free.
        available: u64,
    },
    /// An image source reported an error (a read failed, a file is corrupt, ...).
    #[error("texture {texture:?} ({source_name}): {message}")]
    Source {
        /// The texture whose source failed.
        texture: TextureId,
        /// The source's own description (file path, procedural kind).
        source_name: String,
        /// What went wrong.
        message: String,
    },
    /// An image's description is not something demandtex can page (size, format).
    #[error("unsupported image: {0}")]
    Unsupported(String),
    /// The memory budget cannot hold what must stay resident.
    #[error("texture memory budget of {budget_bytes} bytes cannot hold {needed_bytes} bytes of non-evictable data")]
    BudgetTooSmall {
        /// The budget asked for.
        budget_bytes: u64,
        /// Bytes that cannot be evicted.
        needed_bytes: u64,
    },
    /// A worker panicked while serving a request; the panic was contained.
    #[error("internal error: {0}")]
    Internal(String),
    /// An I/O error, with the path involved.
    #[error("{path}: {message}")]
    Io {
        /// The file involved.
        path: String,
        /// The system's message.
        message: String,
    },
    /// No usable CUDA driver: `libcuda.so.1` cannot be loaded (no NVIDIA driver installed),
    /// or it lacks a function demandtex calls (a driver too old). The message says which
    /// and what to do; the CPU backend still works in the same process.
    #[error("{0}")]
    NoCudaDriver(String),
    /// The CUDA driver is there but offers no usable device: it found none, or it failed to
    /// initialise or to describe one. Holds the driver's own message.
    #[error("no CUDA device: {0}")]
    NoCudaDevice(String),
}

/// The text of a caught panic's payload (`panic!` with a message gives a `&str` or a
/// `String`); other payloads say so.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-text payload".into())
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
