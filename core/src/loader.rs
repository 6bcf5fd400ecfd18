//! `Loader` (TEMPORARY SKELETON — being implemented).

use crate::error::Result;
use crate::ids::TextureId;
use crate::launch::Launch;
use crate::options::LoaderOptions;
use crate::requests::Ticket;
use crate::sources::ImageSource;
use crate::stats::Stats;
use crate::textures::TextureDesc;
use std::sync::Arc;

/// The demand loader.
pub struct Loader {
    _private: (),
}

impl Loader {
    /// A loader with `options`.
    pub fn new(options: LoaderOptions) -> Result<Loader> {
        let _ = options;
        todo!()
    }
    /// Register a texture; nothing is read until a launch samples it.
    pub fn create_texture(&self, source: Arc<dyn ImageSource>, desc: TextureDesc) -> Result<TextureId> {
        let _ = (source, desc);
        todo!()
    }
    /// Publish finished fills and start a launch.
    pub fn launch_prepare(&self) -> Launch {
        todo!()
    }
    /// Pull the launch's requests and start filling them.
    pub fn process_requests(&self, launch: Launch) -> Ticket {
        let _ = launch;
        todo!()
    }
    /// Change the texture memory budget.
    pub fn set_max_texture_memory(&self, bytes: u64) -> Result<()> {
        let _ = bytes;
        todo!()
    }
    /// A statistics snapshot.
    pub fn stats(&self) -> Stats {
        todo!()
    }
}
