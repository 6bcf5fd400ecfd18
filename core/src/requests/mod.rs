//! Requests: pulling a launch's requests, routing them to resources, making room, and
//! filling them on a worker pool; a [`Ticket`] tracks each batch. Also the texture
//! lifecycle (invalidate, replace, unload), which withdraws what fills published.

pub(crate) mod blocking;
pub(crate) mod engine;
pub(crate) mod fill;
pub(crate) mod host_state;
pub(crate) mod lifecycle;
pub(crate) mod process;
pub(crate) mod resource;
mod ticket;
pub(crate) mod workers;

pub use ticket::Ticket;
