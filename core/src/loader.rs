//! `Loader`: the CPU demand loader — an [`Engine`] publishing through the
//! [`CpuBackend`], whose launches sample on the CPU.

use crate::backend::cpu::CpuBackend;
use crate::error::Result;
use crate::launch::Launch;
use crate::options::LoaderOptions;
use crate::requests::{Engine, Ticket};
use std::sync::Arc;

/// A demand loader on the CPU: one page table, tile pool and fill pool. `Send + Sync`;
/// cheap to clone (clones share the loader).
///
/// Everything that does not depend on where tiles live — textures, UDIM grids, user
/// resources, invalidate / replace / unload, the budget, statistics — is the [`Engine`]'s,
/// reached through `Deref` (`loader.create_texture(..)`); a GPU loader offers the same.
///
/// The multi-pass cycle: [`launch_prepare`](Self::launch_prepare) → sample through the
/// [`Launch`] → [`process_requests`](Self::process_requests) → [`Ticket::wait`] → repeat.
/// A launch whose lookups were all resident needs nothing more.
#[derive(Clone)]
pub struct Loader {
    engine: Arc<Engine>,
    cpu: Arc<CpuBackend>,
}

impl Loader {
    /// A loader with `options` (see [`LoaderOptions`] for defaults).
    ///
    /// Errors: invalid options, or fill threads that cannot be started.
    pub fn new(options: LoaderOptions) -> Result<Loader> {
        options.validate()?;
        let cpu = Arc::new(CpuBackend::new(options.num_pages));
        let engine = Engine::new(options, cpu.clone())?;
        Ok(Loader { engine, cpu })
    }

    /// Publish the fills finished since the last launch and start a new launch.
    pub fn launch_prepare(&self) -> Launch {
        // The CPU backend never fails a publication; should it, the launch starts with what
        // was published (the rest stays pending).
        if let Err(e) = self.engine.publish_pending() {
            tracing::error!("publishing before a launch: {e}");
        }
        Launch::new(self.engine.begin_launch(), self.cpu.clone())
    }

    /// Pull the requests `launch` recorded, and start filling them on the fill threads.
    /// The launch ends here (its tile memory may be reused). A launch of another loader is
    /// an error, reported in the log, with an empty ticket.
    pub fn process_requests(&self, launch: Launch) -> Ticket {
        if !Arc::ptr_eq(launch.engine(), &self.engine) {
            tracing::error!("process_requests got a launch of another loader");
            return Ticket::done();
        }
        let launch_num = launch.launch_num();
        drop(launch);
        self.engine.process_requests(launch_num, None)
    }

    /// The engine (shared with launches, blocking caches and the C ABI).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The CPU backend (its tile directory is what samplers read).
    pub fn cpu_backend(&self) -> &Arc<CpuBackend> {
        &self.cpu
    }
}

impl std::ops::Deref for Loader {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("options", self.engine.options())
            .finish()
    }
}
