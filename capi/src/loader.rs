//! Loaders: create, destroy, budget, statistics.

use crate::boundary::{entry, versioned_out, Out};
use crate::handles::{into_unique, DtexLoader, Registry};
use crate::launch::{LAUNCHES, TICKETS};
use crate::options::DtexLoaderOptions;
use crate::ptex::PtexTable;
use crate::stats::DtexStats;
use crate::status::{ApiError, ApiResult, DtexStatus, DTEX_STATUS_INVALID_ARGUMENT};
use demandtex_cuda::ptex::DevicePtex;
use demandtex_cuda::{CudaLaunch, CudaLoader};
use engine::{Engine, Loader, Ticket};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::Arc;

/// The live loaders.
pub(crate) static LOADERS: Registry<LoaderEntry> = Registry::new(1, "loader");

/// Where a loader's tiles live.
pub enum LoaderKind {
    /// The CPU: launches sample through `dtex_launch_*`.
    Cpu(Loader),
    /// A CUDA device: launches through `dtex_cuda_launch_prepare`.
    Cuda(Box<CudaLoader>),
}

/// A loader as the C API holds it.
pub struct LoaderEntry {
    /// The engine: textures, UDIM grids, resources, lifecycle, budget, statistics.
    pub engine: Arc<Engine>,
    /// The device tables of a CUDA loader's Ptex textures (`dtex_cuda_ptex_create`), by
    /// texture id: kept as long as the loader (dropped before the device loader).
    pub cuda_ptex: Mutex<HashMap<u32, DevicePtex>>,
    /// The backend-specific half.
    pub kind: LoaderKind,
    /// CUDA launches prepared and not yet processed, oldest first (a few at most).
    pub cuda_launches: Mutex<Vec<CudaLaunch>>,
    /// Tickets of fills not known to be finished (destroy waits for them, even for those
    /// whose ticket handle was destroyed).
    pub tickets: Mutex<Vec<Ticket>>,
    /// Caller-owned state (callback sources) still referenced by the engine.
    pub life: Arc<Life>,
    /// Its Ptex textures (`dtex_ptex_create`).
    pub ptex: PtexTable,
}

impl LoaderEntry {
    /// A new entry over `kind`.
    pub fn new(kind: LoaderKind) -> LoaderEntry {
        let engine = match &kind {
            LoaderKind::Cpu(l) => l.engine().clone(),
            LoaderKind::Cuda(l) => l.engine().clone(),
        };
        LoaderEntry {
            engine,
            cuda_ptex: Mutex::new(HashMap::new()),
            kind,
            cuda_launches: Mutex::new(Vec::new()),
            tickets: Mutex::new(Vec::new()),
            life: Arc::new(Life::default()),
            ptex: PtexTable::default(),
        }
    }

    /// The CPU loader, or INVALID_ARGUMENT for a CUDA loader (whose launches are
    /// `dtex_cuda_*`).
    pub fn cpu(&self) -> ApiResult<&Loader> {
        match &self.kind {
            LoaderKind::Cpu(l) => Ok(l),
            LoaderKind::Cuda(_) => Err(ApiError::new(
                DTEX_STATUS_INVALID_ARGUMENT,
                "a CUDA loader: its launches are dtex_cuda_launch_prepare / dtex_cuda_process_requests",
            )),
        }
    }

    /// The CUDA loader, or INVALID_ARGUMENT for a CPU loader.
    pub fn cuda(&self) -> ApiResult<&CudaLoader> {
        match &self.kind {
            LoaderKind::Cuda(l) => Ok(l),
            LoaderKind::Cpu(_) => Err(ApiError::new(
                DTEX_STATUS_INVALID_ARGUMENT,
                "a CPU loader (dtex_loader_create): dtex_cuda_* calls need one from dtex_cuda_loader_create",
            )),
        }
    }

    /// Remember a ticket until its fills finish; forgets the finished ones.
    pub fn track(&self, ticket: &Ticket) {
        let mut tickets = self.tickets.lock();
        tickets.retain(|t| !t.is_done());
        if !ticket.is_done() {
            tickets.push(ticket.clone());
        }
    }

    /// Wait for every tracked ticket.
    pub fn wait_all(&self) {
        let tickets = std::mem::take(&mut *self.tickets.lock());
        for t in tickets {
            t.wait();
        }
    }
}

/// Counts the objects holding caller-owned state (callback sources) that the engine still
/// owns, so that destroying a loader can wait until every `close` callback has run: after
/// `dtex_loader_destroy` returns, the library never calls back into the caller.
#[derive(Default)]
pub struct Life {
    live: Mutex<usize>,
    gone: Condvar,
}

/// Held by one object with caller-owned state; dropping it counts the object gone.
pub struct LifeToken(Arc<Life>);

impl Life {
    /// A token for one more object.
    pub fn token(self: &Arc<Self>) -> LifeToken {
        *self.live.lock() += 1;
        LifeToken(self.clone())
    }

    /// Block until every token has been dropped.
    pub fn wait_all_gone(&self) {
        let mut live = self.live.lock();
        while *live > 0 {
            self.gone.wait(&mut live);
        }
    }
}

impl Drop for LifeToken {
    fn drop(&mut self) {
        let mut live = self.0.live.lock();
        *live -= 1;
        if *live == 0 {
            self.0.gone.notify_all();
        }
    }
}

/// The loader of `handle`, or `DTEX_STATUS_INVALID_HANDLE`.
pub(crate) fn get(handle: DtexLoader) -> ApiResult<Arc<LoaderEntry>> {
    LOADERS.get(handle.id)
}

/// Create a loader. `options` NULL means the defaults (`dtex_loader_options_default`).
///
/// Errors: INVALID_ARGUMENT for a NULL `out`, a bad `struct_size` or inconsistent options
/// (the message names the field). Ownership: the caller owns the new handle and must
/// destroy it with `dtex_loader_destroy`. Thread-safety: any thread; the loader may then be
/// used from many threads at once.
///
/// # Safety
/// `options` is NULL or points to a `DtexLoaderOptions`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_loader_create(
    options: *const DtexLoaderOptions,
    out: *mut DtexLoader,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: the caller's contract.
        let options = unsafe { DtexLoaderOptions::resolve(options) }?;
        let loader = Loader::new(options)?;
        let id = LOADERS.insert(Arc::new(LoaderEntry::new(LoaderKind::Cpu(loader))))?;
        out.write(DtexLoader { id });
        Ok(())
    })
}

/// Destroy a loader: its launches and tickets become invalid handles, the fills it started
/// are waited for, and every texture's source is dropped (callback sources' `close` runs
/// before this returns; borrowed pixels may be freed afterwards). Texture ids of the loader
/// mean nothing afterwards.
///
/// Errors: INVALID_HANDLE. Ownership: ends the caller's ownership of the handle; the
/// library releases everything the loader held and stops using borrowed pixels and
/// callback user data. Thread-safety: any thread, but not from inside one of the
/// loader's own callbacks (it would wait for itself). Calls that other threads are making
/// on the loader, its launches or tickets at the same time either complete first (destroy
/// waits for them) or fail with INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn dtex_loader_destroy(loader: DtexLoader) -> DtexStatus {
    entry(|| {
        let entry = LOADERS.remove(loader.id)?;
        let launches = LAUNCHES.remove_where(|l| l.loader_id == loader.id);
        let tickets = TICKETS.remove_where(|t| t.loader_id == loader.id);
        // Launches end (their epoch pins go) once calls still using them have finished.
        for l in launches {
            drop(into_unique(l));
        }
        drop(tickets);
        entry.wait_all();
        let life = entry.life.clone();
        // Other threads' calls on this loader finish; then the engine and its sources go.
        drop(into_unique(entry));
        life.wait_all_gone();
        Ok(())
    })
}

/// Change the texture memory budget, in bytes. Shrinking evicts the oldest tiles (memory a
/// live launch may still read is freed when it ends).
///
/// Errors: INVALID_HANDLE; BUDGET_TOO_SMALL when the budget cannot hold the mip tails that
/// must stay resident (the budget is then unchanged). Ownership: nothing is passed.
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_loader_set_max_texture_memory(loader: DtexLoader, bytes: u64) -> DtexStatus {
    entry(|| {
        let entry = get(loader)?;
        match &entry.kind {
            LoaderKind::Cpu(l) => l.set_max_texture_memory(bytes)?,
            // The device tile pool follows the budget.
            LoaderKind::Cuda(l) => l.set_max_texture_memory(bytes)?,
        }
        Ok(())
    })
}

/// Write a statistics snapshot to `*out`. The caller sets `out->struct_size =
/// sizeof(DtexStats)` first.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL `out` or a bad `struct_size`.
/// Ownership: `*out` is the caller's; nothing is kept. Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or readable and writable as a `DtexStats`.
#[no_mangle]
pub unsafe extern "C" fn dtex_loader_get_stats(
    loader: DtexLoader,
    out: *mut DtexStats,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { versioned_out(out, "out") }?;
        let stats = get(loader)?.engine.stats();
        out.write(DtexStats::from_engine(&stats));
        Ok(())
    })
}
