//! CUDA loaders: the demand loader on a GPU, for renderers whose kernels sample through the
//! device API of `include/demandtex/device/` (`dtex::tex2DGrad`, `dtex::mapOrRequest`, ...).
//!
//! A CUDA loader is a `DtexLoader` like a CPU one: textures, UDIM grids, user resources,
//! invalidate / replace / unload, budget and statistics are the same `dtex_*` calls. Only
//! the launch cycle differs:
//!
//! ```c
//! DtexLoader loader;
//! if (dtex_cuda_loader_create(0, NULL, &loader) == DTEX_STATUS_NO_CUDA) { ... use the CPU ... }
//! dtex_texture_create_from_file(loader, "wood.exr", NULL, &tex);
//! for (;;) {
//!     DtexCudaLaunch launch; DtexDeviceContext ctx; DtexTicket ticket;
//!     dtex_cuda_launch_prepare(loader, stream, &launch, &ctx);
//!     myKernel<<<grid, block, 0, stream>>>(ctx, ...);   // dtex::tex2DGrad(ctx, tex, ...)
//!     dtex_cuda_process_requests(launch, stream, &ticket);
//!     dtex_ticket_wait(ticket, DTEX_WAIT_FOREVER);
//!     dtex_ticket_destroy(ticket);
//!     if (every lookup was resident) break;
//! }
//! ```
//!
//! `stream` is the caller's `CUstream` (NULL: the default stream). The loader does its own
//! work — maps, uploads, the paging kernels — on a stream of its own, ordered with the
//! caller's by events on the device: the kernel sees what `dtex_cuda_launch_prepare`
//! published, and the pull of `dtex_cuda_process_requests` sees what the kernel requested.
//! Neither call waits for the GPU.

use crate::boundary::{c_str, entry, Out};
use crate::handles::{DtexLoader, DtexTicket};
use crate::launch::{TicketEntry, TICKETS};
use crate::loader::{self, LoaderEntry, LoaderKind, LOADERS};
use crate::options::DtexLoaderOptions;
use crate::status::{
    ApiError, DtexStatus, DTEX_STATUS_INVALID_ARGUMENT, DTEX_STATUS_UNKNOWN_TEXTURE,
};
use demandtex_cuda::{CudaLoader, TilePublication};
use engine::paging::DeviceContext;
use engine::ptex::device::PtexDeviceTexture;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// CUDA launches of one loader kept for `dtex_cuda_process_requests`: a launch prepared and
/// never processed (a renderer that stopped) is forgotten after this many newer ones.
const KEPT_LAUNCHES: usize = 8;

/// One launch of a CUDA loader, between `dtex_cuda_launch_prepare` and
/// `dtex_cuda_process_requests`. Plain data: a launch that is never processed needs no
/// clean-up (its requests are made again by a later launch).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtexCudaLaunch {
    /// The loader.
    pub loader: DtexLoader,
    /// The launch's number (1 for the first).
    pub number: u32,
    /// Zero.
    pub reserved: u32,
}

/// `dtex_cuda_loader_set_tile_publication`: filled tiles are published at
/// `dtex_cuda_launch_prepare`, so the launch about to run samples them (the default in
/// final mode).
pub const DTEX_TILE_PUBLICATION_BEFORE_LAUNCH: u32 = 0;
/// `dtex_cuda_loader_set_tile_publication`: filled tiles are published at
/// `dtex_cuda_process_requests`, on the host while the launch's kernel runs, and sampled
/// from the next launch on (the default in interactive mode).
pub const DTEX_TILE_PUBLICATION_DURING_LAUNCH: u32 = 1;

/// Create a demand loader on CUDA device `device` (0 = the first the driver lists).
/// `options` NULL means the defaults (`dtex_loader_options_default`); `max_texture_memory`
/// is the budget of the device's tile pool. The loader is a `DtexLoader`: every texture,
/// UDIM, resource, lifecycle, budget and statistics call takes it; its launches are
/// `dtex_cuda_launch_prepare` / `dtex_cuda_process_requests` (`dtex_launch_prepare` refuses
/// it).
///
/// Errors: NO_CUDA with the reason (no driver, no such device, a driver too old, a device
/// that fails to initialise) — the CPU loader (`dtex_loader_create`) works regardless;
/// INVALID_ARGUMENT for a NULL `out`, a bad `struct_size` or inconsistent options; INTERNAL
/// for a driver failure. Ownership: the caller owns the handle (`dtex_loader_destroy`).
/// Thread-safety: any thread.
///
/// # Safety
/// `options` is NULL or points to a `DtexLoaderOptions`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_cuda_loader_create(
    device: u32,
    options: *const DtexLoaderOptions,
    out: *mut DtexLoader,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out, "out") }?;
        // SAFETY: the caller's contract.
        let options = unsafe { DtexLoaderOptions::resolve(options) }?;
        let loader = CudaLoader::new(device, options)?;
        let kind = LoaderKind::Cuda(Box::new(loader));
        let id = LOADERS.insert(Arc::new(LoaderEntry::new(kind)))?;
        out.write(DtexLoader { id });
        Ok(())
    })
}

/// Choose when CUDA loader `loader` publishes filled tiles on the device, from its next
/// launch on: `DTEX_TILE_PUBLICATION_BEFORE_LAUNCH` (at `dtex_cuda_launch_prepare`: the
/// launch samples them; the frame pays for the maps and uploads) or
/// `DTEX_TILE_PUBLICATION_DURING_LAUNCH` (at `dtex_cuda_process_requests`, on the host
/// while the kernel runs: the frame does not pay, and tiles are sampled one launch later).
/// The default follows the loader's streaming mode: before the launch in final mode,
/// during it in interactive mode.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a CPU loader or an unknown value.
/// Ownership: none taken. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_cuda_loader_set_tile_publication(
    loader: DtexLoader,
    publication: u32,
) -> DtexStatus {
    entry(|| {
        let publication = match publication {
            DTEX_TILE_PUBLICATION_BEFORE_LAUNCH => TilePublication::BeforeLaunch,
            DTEX_TILE_PUBLICATION_DURING_LAUNCH => TilePublication::DuringLaunch,
            other => {
                return Err(ApiError::new(
                    DTEX_STATUS_INVALID_ARGUMENT,
                    format!(
                        "tile publication {other} (DTEX_TILE_PUBLICATION_BEFORE_LAUNCH = 0 or \
                         DTEX_TILE_PUBLICATION_DURING_LAUNCH = 1)"
                    ),
                ))
            }
        };
        let entry = loader::get(loader)?;
        entry.cuda()?.set_tile_publication(publication);
        Ok(())
    })
}

/// Start a launch of CUDA loader `loader`: make what finished since the last launch visible
/// on the device (textures built, tiles mapped and uploaded unless tiles are published
/// during launches, page-table entries and residence bits pushed), and fill `out_context` with the `DtexDeviceContext` to pass, by
/// value, to kernels launched on `stream` before `dtex_cuda_process_requests`. `stream`
/// (a `CUstream` of the device's primary context; NULL: the default stream) waits for the
/// publication on the device; the call does not wait for the GPU.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for NULL outputs or a CPU loader; INTERNAL for
/// a driver failure (the loader should then be destroyed). Ownership: `out_launch` and
/// `out_context` are plain data; the context's device addresses stay valid until the next
/// `dtex_cuda_launch_prepare` of the loader. Thread-safety: any thread; launches of one
/// loader should not overlap.
///
/// # Safety
/// `stream` is NULL or a live stream of device `loader`'s primary context; `out_launch`
/// and `out_context` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_cuda_launch_prepare(
    loader: DtexLoader,
    stream: *mut c_void,
    out_launch: *mut DtexCudaLaunch,
    out_context: *mut DeviceContext,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let (out_launch, out_context) = unsafe {
            (
                Out::new(out_launch, "out_launch")?,
                Out::new(out_context, "out_context")?,
            )
        };
        let entry = loader::get(loader)?;
        let cuda = entry.cuda()?;
        // SAFETY: the caller's contract on `stream`.
        let launch = unsafe { cuda.launch_prepare_on(stream.cast()) }?;
        let number = launch.launch_num();
        let context = launch.device_context();
        {
            let mut kept = entry.cuda_launches.lock();
            kept.push(launch);
            let excess = kept.len().saturating_sub(KEPT_LAUNCHES);
            kept.drain(..excess);
        }
        out_context.write(context);
        out_launch.write(DtexCudaLaunch {
            loader,
            number,
            reserved: 0,
        });
        Ok(())
    })
}

/// Serve the requests `launch` recorded: first publish what finished since
/// `dtex_cuda_launch_prepare` (and the tiles it held, under
/// `DTEX_TILE_PUBLICATION_DURING_LAUNCH`) — the host's work while the kernel runs, the
/// device's after the work enqueued on `stream` so far (the caller's kernel) — then pull
/// the requests on the device, and start the fills on the loader's fill threads.
/// `out_ticket` tracks them (`dtex_ticket_wait` / `dtex_ticket_poll`); the next
/// `dtex_cuda_launch_prepare` or `dtex_cuda_process_requests` publishes what has
/// finished. The launch ends here.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL `out_ticket`, a CPU loader, or a
/// launch that is not the loader's (already processed, or forgotten after 8 newer ones);
/// INTERNAL for a driver failure. Ownership: the caller owns the ticket
/// (`dtex_ticket_destroy`). Thread-safety: any thread.
///
/// # Safety
/// `stream` is NULL or a live stream of the loader's device context; `out_ticket` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_cuda_process_requests(
    launch: DtexCudaLaunch,
    stream: *mut c_void,
    out_ticket: *mut DtexTicket,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out_ticket, "out_ticket") }?;
        let entry = loader::get(launch.loader)?;
        let cuda = entry.cuda()?;
        let taken = {
            let mut kept = entry.cuda_launches.lock();
            let at = kept.iter().position(|l| l.launch_num() == launch.number);
            at.map(|i| kept.remove(i))
        };
        let Some(taken) = taken else {
            return Err(ApiError::new(
                DTEX_STATUS_INVALID_ARGUMENT,
                format!(
                    "launch {} is not a pending launch of this loader (processed already, or \
                     prepared more than {KEPT_LAUNCHES} launches ago)",
                    launch.number
                ),
            ));
        };
        // SAFETY: the caller's contract on `stream`.
        let ticket = unsafe { cuda.process_requests_after(taken, stream.cast()) }?;
        entry.track(&ticket);
        let id = TICKETS.insert(Arc::new(TicketEntry {
            loader_id: launch.loader.id,
            ticket,
        }))?;
        out.write(DtexTicket { id });
        Ok(())
    })
}

/// Open a Ptex file and register it with CUDA loader `loader`, as `dtex_ptex_create` does
/// (its units packed into 64 KiB pages in the loader's budget), parse it now (the tables
/// need the whole file), and copy its face table, unit table and per-face constant colours
/// to the device: `*out_device` is the
/// `DtexPtexDeviceTexture` that kernels pass, by value, to `dtex::ptexSample`
/// (`demandtex/device/ptex.cuh`, docs/PTEX.md "On the device"). The device tables never
/// change and live as long as the loader; the pages are published by the loader's launches
/// like every texture's tiles.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (a CPU loader, NULL `path`, `out_texture` or
/// `out_device`, a path not UTF-8); IO_ERROR (the file cannot be read, or is corrupt: the
/// message names the file and what is wrong); UNSUPPORTED (not a Ptex file, or a version or
/// type the reader does not serve); OUT_OF_PAGES; INTERNAL (the copy to the device failed).
/// Nothing is written on error. Ownership: the path is copied; the texture and its tables
/// belong to the loader. Thread-safety: any thread.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out_texture` is NULL or writable;
/// `out_device` is NULL or writable as a `DtexPtexDeviceTexture`.
#[no_mangle]
pub unsafe extern "C" fn dtex_cuda_ptex_create(
    loader: DtexLoader,
    path: *const c_char,
    out_texture: *mut u32,
    out_device: *mut PtexDeviceTexture,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (every pointer).
        let (out_texture, out_device, path) = unsafe {
            (
                Out::new(out_texture, "out_texture")?,
                Out::new(out_device, "out_device")?,
                c_str(path, "path")?,
            )
        };
        let entry = loader::get(loader)?;
        let (texture, device) = entry.cuda()?.create_ptex_texture(path)?;
        let table = device.device_texture();
        let id = entry.ptex.insert(texture);
        entry.cuda_ptex.lock().insert(id, device);
        out_texture.write(id);
        out_device.write(table);
        Ok(())
    })
}

/// The `DtexPtexDeviceTexture` of Ptex texture `texture` of CUDA loader `loader` (made by
/// `dtex_cuda_ptex_create`): the same value it wrote.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (a CPU loader, NULL `out_device`);
/// UNKNOWN_TEXTURE (not a Ptex texture made by `dtex_cuda_ptex_create` on this loader).
/// Ownership: `*out_device` is the caller's; the tables it points to are the loader's.
/// Thread-safety: any thread.
///
/// # Safety
/// `out_device` is NULL or writable as a `DtexPtexDeviceTexture`.
#[no_mangle]
pub unsafe extern "C" fn dtex_cuda_ptex_get_device_texture(
    loader: DtexLoader,
    texture: u32,
    out_device: *mut PtexDeviceTexture,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out_device, "out_device") }?;
        let entry = loader::get(loader)?;
        entry.cuda()?;
        let table = entry
            .cuda_ptex
            .lock()
            .get(&texture)
            .map(|d| d.device_texture())
            .ok_or_else(|| {
                ApiError::new(
                    DTEX_STATUS_UNKNOWN_TEXTURE,
                    format!(
                        "texture {texture} is not a Ptex texture made by dtex_cuda_ptex_create \
                         on this loader"
                    ),
                )
            })?;
        out.write(table);
        Ok(())
    })
}
