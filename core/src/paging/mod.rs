//! The page layer: a flat virtual page space with residence, reference and LRU state per
//! page and 64-bit entries for the first pages. It knows page ids only — nothing of
//! textures — and its device-visible part is the `#[repr(C)]` [`DeviceContext`].

pub mod bits;
pub mod device_context;
pub mod lru;
pub mod page_layout;
pub mod page_space;
pub mod page_table;
pub mod rejection;
pub mod request_counts;
pub mod sharded_counter;

pub use device_context::{DeviceContext, PageMapping, CONTEXT_FLAG_REQUEST_IF_RESIDENT};
pub use lru::{MAX_LRU_AGE, NON_EVICTABLE};
pub use page_layout::{
    decode_base_color, encode_base_color, PageKind, PageLayout, HOLE_BASE_COLOR, NO_BASE_COLOR,
};
pub use page_space::PageSpace;
pub use page_table::{PageTable, PullResult, StalePage};
pub use rejection::{request_hash, RequestGate};
