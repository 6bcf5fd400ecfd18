//! Memory: tile buffers (64 KiB, or a texture's smaller tile size), the budgeted pool that hands them out, epochs that say when
//! no reader can still see memory made invisible, and [`Residency`] — the one owner of every
//! tile slot's state (filling, publishing, resident, staged for a second chance, retired)
//! and of eviction; constant tiles stored once per value ([`constant_tiles`]).

pub mod constant_tiles;
pub mod epoch;
pub mod pool;
pub mod raw_box;
pub mod residency;
pub mod retired;
pub mod tile_buffer;

pub use constant_tiles::{ConstantKey, TileShape};
pub use epoch::Epochs;
pub use pool::{TilePool, TileSlot};
pub use raw_box::RawBox;
pub use residency::{Publishing, Residency, ResidencyCounts, TileEvent};
pub use retired::RetiredQueue;
pub use tile_buffer::{SubTiles, TileBuffer, TileTrailer};
