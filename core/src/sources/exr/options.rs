//! How an [`ExrSource`](super::ExrSource) reads its file: which channels it serves, its
//! cache of decoded blocks, the file handles it draws from and the sizes it may allocate;
//! and its counters.

use super::FileHandles;
use crate::sources::limits::SizeLimits;
use std::sync::Arc;

/// Default byte budget of each source's cache of decoded blocks.
pub const DEFAULT_DECODED_BLOCK_CACHE_BYTES: usize = 8 << 20;

/// Which channels of the file a source serves, and in what order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ChannelSelection {
    /// R, G, B, A if all are present, else R, G, B (alpha 1), else luminance, Y (two
    /// channels, Y and A, if there is an A) — unless an X beside Y makes it a vector's;
    /// then the same within the file's one layer if every channel is `layer.X`; else the
    /// first (up to four) channels in name order (X, Y, Z, W is served as W, X, Y, Z, as
    /// OpenImageIO orders it). A warning names the channels left out. Luminance-chroma files
    /// (Y, RY, BY) are an error: their chroma would be lost.
    #[default]
    Auto,
    /// R, G, B, A (all required).
    Rgba,
    /// R, G, B, served with an alpha of 1 (all three required).
    Rgb,
    /// Y, one component.
    Y,
    /// A named layer: `name.R/G/B/A`, `name.R/G/B` or `name.Y` as for [`Auto`](Self::Auto),
    /// else the first (up to four) `name.*` channels, else a channel called `name`.
    Layer(String),
    /// These channels, in this order (one to four; three are widened with an alpha of 1).
    Names(Vec<String>),
}

/// How an [`ExrSource`](super::ExrSource) reads its file.
#[derive(Clone, Debug)]
pub struct ExrOptions {
    /// Which channels to serve.
    pub channels: ChannelSelection,
    /// The set of open files this source draws from.
    pub handles: Arc<FileHandles>,
    /// The part of a multi-part file to serve (0 = the first).
    pub part: usize,
    /// Byte budget of the source's cache of recently decoded blocks, used where file blocks
    /// do not line up with cache tiles (0 disables it). Outside the texture budget.
    pub decoded_block_cache_bytes: usize,
    /// Threads that generate missing mip levels (0 = one per core).
    pub mip_threads: usize,
    /// What the file may make the source allocate: one decoded block, the levels generated
    /// in memory (see [`SizeLimits`]).
    pub limits: SizeLimits,
}

impl Default for ExrOptions {
    fn default() -> Self {
        ExrOptions {
            channels: ChannelSelection::Auto,
            handles: FileHandles::default_shared(),
            part: 0,
            decoded_block_cache_bytes: DEFAULT_DECODED_BLOCK_CACHE_BYTES,
            mip_threads: 0,
            limits: SizeLimits::default(),
        }
    }
}

/// Counters of one [`ExrSource`](super::ExrSource).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExrSourceStats {
    /// File blocks (tiles or scan-line blocks) read and decoded.
    pub blocks_decoded: u64,
    /// Compressed bytes read for them.
    pub compressed_bytes_read: u64,
    /// Block reads served by the cache of decoded blocks instead.
    pub block_cache_hits: u64,
}
