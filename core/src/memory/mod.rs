//! Memory: 64 KiB tile buffers, the budgeted pool that hands them out, epochs that say when
//! no launch can still see a buffer, and the staging area where evicted tiles wait for a
//! second chance before their memory is reused, and the retired memory of textures whose
//! contents were dropped.

pub mod epoch;
pub mod pool;
pub mod raw_box;
pub mod retired;
pub mod staging;
pub mod tile_buffer;

pub use epoch::Epochs;
pub use pool::TilePool;
pub use raw_box::RawBox;
pub use retired::RetiredQueue;
pub use staging::StagedTiles;
pub use tile_buffer::TileBuffer;
