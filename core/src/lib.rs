//! # demandtex
//!
//! Demand-loaded, paged textures. A [`Loader`] keeps a page table of every texture tile;
//! samplers record which tiles a launch needs (a miss records a request), the loader reads
//! just those tiles between launches, and stale tiles are evicted to stay within a memory
//! budget. The multi-pass cycle:
//!
//! ```
//! use demandtex::{Loader, LoaderOptions, TextureDesc, TextureId};
//! use demandtex::sources::Checkerboard;
//! use demandtex::textures::TexelFormat;
//! use std::sync::Arc;
//!
//! let loader = Loader::new(LoaderOptions { num_pages: 1 << 20, ..Default::default() }).unwrap();
//! let tex = loader
//!     .create_texture(Arc::new(Checkerboard::new(4096, 4096, 16, TexelFormat::RGBA8)), TextureDesc::default())
//!     .unwrap();
//! loop {
//!     let launch = loader.launch_prepare();
//!     let s = launch.tex2d_grad(tex, 0.3, 0.7, [1.0 / 512.0, 0.0], [0.0, 1.0 / 512.0], &Default::default());
//!     if s.resident {
//!         break;
//!     }
//!     loader.process_requests(launch).wait();
//! }
//! ```
//!
//! Textures can be invalidated, replaced or unloaded while in use
//! ([`Engine::invalidate_texture`], [`Engine::replace_texture`], [`Engine::unload_texture`]);
//! user resources ([`Engine::create_resource`]) page 64-bit entries that a callback produces.
//!
//! # Layers
//! Bottom up, each using only those below it: `paging` (page ids and bits), `textures` and
//! `resources` (what pages hold), `sources` (where texels come from), `memory` (tile slots
//! and eviction: [`memory::Residency`]), `backend` (the publish seam, [`backend::Backend`],
//! and the CPU backend), `requests` (the [`Engine`]: requests, fills, publication,
//! lifecycle), `sampling` (CPU samplers), and the front ends [`Loader`], [`Launch`],
//! [`TextureCache`] and [`udim`]. GPU backends live in their own crates (`demandtex-cuda`)
//! and build on [`Engine`] and [`backend::Backend`]. See `docs/ARCHITECTURE.md`.

#![warn(missing_docs)]

pub mod backend;
pub mod cache;
pub mod error;
pub mod ids;
mod launch;
mod loader;
pub mod memory;
pub mod options;
pub mod paging;
pub mod ptex;
pub mod requests;
pub mod resources;
pub mod sampling;
pub mod sources;
pub mod stats;
mod sync;
#[cfg(test)]
mod test_rng;

#[cfg(all(test, loom))]
mod loom_models;
pub mod textures;
pub mod udim;

pub use cache::{GradLookup, TextureCache, TextureInfo};
pub use error::{Error, Result};
pub use ids::{PageId, TextureId, TILE_BYTES};
pub use launch::Launch;
pub use loader::Loader;
pub use options::{LoaderOptions, StreamingMode, CPU_RENDERER_FILL_CPU_CORES, MIN_FILL_CPU_CORES};
pub use requests::{Engine, LaunchPin, Ticket};
pub use resources::{ResourceCallback, ResourceFill};
pub use sampling::environment::UpAxis;
pub use sampling::{MissList, Sample, SampleDerivatives, SampleOptions};
pub use stats::Stats;
pub use textures::TextureDesc;
