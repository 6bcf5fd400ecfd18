//! Requests: the engine's request pipeline — pulling a launch's requests, routing them to
//! resources, making room, filling them on a worker pool ([`Ticket`] tracks each batch),
//! publishing the results through the backend, and the texture lifecycle (invalidate,
//! replace, unload), which withdraws what fills published.
//!
//! Module order, each using only those before it: `decode_hold` (a whole decode kept for
//! fills), `host_state` (the state behind the lock), `engine` (the [`Engine`] type),
//! `publish` (publication, launch start), `fill` (tile and texture fills),
//! `whole_decodes` (pages filled from one decode of the whole image), `file_tiles` (pages filled file tile by file tile, in place,
//! by lookups), `resource` (user resources), `process` (multi-pass requests), `blocking`
//! (fills in the calling thread), `lifecycle`.

pub(crate) mod blocking;
pub(crate) mod decode_hold;
pub(crate) mod duplicates;
pub(crate) mod engine;
pub(crate) mod file_tiles;
pub(crate) mod fill;
mod fill_throttle;
pub(crate) mod host_state;
pub(crate) mod lifecycle;
pub(crate) mod open_fill;
pub(crate) mod process;
pub(crate) mod publish;
pub(crate) mod resource;
pub(crate) mod spills;
mod thread_priority;
mod ticket;
pub(crate) mod whole_decodes;
pub(crate) mod workers;

pub use engine::Engine;
pub use publish::LaunchPin;
pub use ticket::Ticket;
