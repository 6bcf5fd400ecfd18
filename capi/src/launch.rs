//! The multi-pass cycle: launches (prepare, device context, process, discard) and tickets
//! (wait, poll, destroy).

use crate::boundary::{entry, Out};
use crate::handles::{into_unique, DtexLaunch, DtexLoader, DtexTicket, Registry};
use crate::loader::{self, LoaderEntry};
use crate::status::DTEX_STATUS_OK;
use crate::status::{ApiResult, DtexStatus, DTEX_STATUS_TIMEOUT};
use engine::paging::DeviceContext;
use engine::{Launch, Ticket};
use std::sync::Arc;
use std::time::Duration;

/// `dtex_ticket_wait` timeout meaning "no limit" (`UINT64_MAX`, written as a literal so
/// that the header needs no `<stdint.h>` macro: NVRTC has none).
pub const DTEX_WAIT_FOREVER: u64 = 0xFFFF_FFFF_FFFF_FFFF_u64;
const _: () = assert!(DTEX_WAIT_FOREVER == u64::MAX);

/// The live launches.
pub(crate) static LAUNCHES: Registry<LaunchEntry> = Registry::new(2, "launch");
/// The live tickets.
pub(crate) static TICKETS: Registry<TicketEntry> = Registry::new(3, "ticket");

/// A launch as the C API holds it.
pub struct LaunchEntry {
    /// The loader's handle id (its destruction ends the launch).
    pub loader_id: u64,
    /// The loader, to process the launch's requests.
    pub loader: Arc<LoaderEntry>,
    /// The engine's launch.
    pub launch: Launch,
}

/// A ticket as the C API holds it.
pub struct TicketEntry {
    /// The loader's handle id (its destruction invalidates the ticket).
    pub loader_id: u64,
    /// The engine's ticket.
    pub ticket: Ticket,
}

/// The launch of `handle`, or `DTEX_STATUS_INVALID_HANDLE`.
#[inline]
pub(crate) fn get(handle: DtexLaunch) -> ApiResult<Arc<LaunchEntry>> {
    LAUNCHES.get(handle.id)
}

/// Unregister a launch and wait for calls still sampling it.
fn take(handle: DtexLaunch) -> ApiResult<LaunchEntry> {
    Ok(into_unique(LAUNCHES.remove(handle.id)?))
}

/// Start a launch: publish the fills finished since the last one and return a handle that
/// samplers (CPU: `dtex_launch_tex2d*`; device: `dtex_launch_get_device_context`) use
/// until `dtex_process_requests` or `dtex_launch_discard` ends it.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL `out`. Ownership: the caller must
/// end the launch (process or discard); a live launch keeps the tile memory it can see from
/// being reused. Thread-safety: any thread; launches of one loader should not overlap
/// (the multi-pass cycle is sequential: prepare, sample, process).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_prepare(
    loader: DtexLoader,
    out: *mut DtexLaunch,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out, "out") }?;
        let entry = loader::get(loader)?;
        let launch = entry.cpu()?.launch_prepare();
        let id = LAUNCHES.insert(Arc::new(LaunchEntry {
            loader_id: loader.id,
            loader: entry,
            launch,
        }))?;
        out.write(DtexLaunch { id });
        Ok(())
    })
}

/// Write the launch's `DtexDeviceContext` (the page table, residence and reference bits a
/// device sampler reads) to `*out`. Its pointers stay valid while the launch lives.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL `out`. Ownership: the pointers
/// address the loader's memory: use them only while the launch lives, never free them.
/// Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_get_device_context(
    launch: DtexLaunch,
    out: *mut DeviceContext,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out, "out") }?;
        out.write(get(launch)?.launch.device_context());
        Ok(())
    })
}

/// Write the launch's number (1 for a loader's first launch) to `*out_launch_num`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL pointer. Ownership: a value.
/// Thread-safety: any thread.
///
/// # Safety
/// `out_launch_num` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_get_number(
    launch: DtexLaunch,
    out_launch_num: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out_launch_num, "out_launch_num") }?;
        out.write(get(launch)?.launch.launch_num());
        Ok(())
    })
}

/// End `launch` and start filling the pages it requested on the loader's fill threads;
/// `*out` tracks the fills. The launch handle is invalid afterwards, even on error.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL `out` (the launch is then still
/// ended, its requests dropped). Ownership: the caller owns the ticket
/// (`dtex_ticket_destroy`; destroying it does not cancel the fills). Thread-safety: any
/// thread, but not while other threads sample this launch (finish sampling first; a
/// sampler still inside a call is waited for).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_process_requests(
    launch: DtexLaunch,
    out: *mut DtexTicket,
) -> DtexStatus {
    entry(|| {
        let taken = take(launch)?;
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out, "out") }?;
        let LaunchEntry {
            loader_id,
            loader,
            launch,
        } = taken;
        let ticket = loader.cpu()?.process_requests(launch);
        loader.track(&ticket);
        let id = TICKETS.insert(Arc::new(TicketEntry { loader_id, ticket }))?;
        out.write(DtexTicket { id });
        Ok(())
    })
}

/// End `launch` without processing its requests (they are dropped; later launches request
/// the pages again). The handle is invalid afterwards.
///
/// Errors: INVALID_HANDLE. Ownership: ends the caller's ownership of the launch handle.
/// Thread-safety: as `dtex_process_requests`.
#[no_mangle]
pub extern "C" fn dtex_launch_discard(launch: DtexLaunch) -> DtexStatus {
    entry(|| {
        drop(take(launch)?);
        Ok(())
    })
}

/// The ticket of `handle`, or `DTEX_STATUS_INVALID_HANDLE`.
fn get_ticket(handle: DtexTicket) -> ApiResult<Arc<TicketEntry>> {
    TICKETS.get(handle.id)
}

/// Wait at most `timeout_ms` milliseconds (`DTEX_WAIT_FOREVER`: no limit) for the ticket's
/// fills to finish. Failed reads count as finished (the texture samples its fallback
/// colour; `dtex_loader_get_stats` counts them).
///
/// Returns OK when every fill has finished, TIMEOUT if time ran out first (not an error of
/// the ticket: wait again), INVALID_HANDLE. Ownership: the ticket stays the caller's.
/// Thread-safety: any thread; many threads may wait on one ticket.
#[no_mangle]
pub extern "C" fn dtex_ticket_wait(ticket: DtexTicket, timeout_ms: u64) -> DtexStatus {
    let mut done = true;
    let status = entry(|| {
        let t = get_ticket(ticket)?;
        // A limit past any representable instant is no limit.
        let deadline_ok = std::time::Instant::now()
            .checked_add(Duration::from_millis(timeout_ms))
            .is_some();
        if timeout_ms == DTEX_WAIT_FOREVER || !deadline_ok {
            t.ticket.wait();
        } else {
            done = t.ticket.wait_timeout(Duration::from_millis(timeout_ms));
        }
        Ok(())
    });
    if status == DTEX_STATUS_OK && !done {
        crate::status::set_last_error(&format!(
            "ticket {:#x}: fills still running after {timeout_ms} ms",
            ticket.id
        ));
        return DTEX_STATUS_TIMEOUT;
    }
    status
}

/// Without blocking: `*out_done` = 1 if every fill has finished, else 0; optionally the
/// tasks still running and the tasks in the batch.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL `out_done` (the other two may be
/// NULL). Ownership: the ticket stays the caller's. Thread-safety: any thread.
///
/// # Safety
/// Each pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_ticket_poll(
    ticket: DtexTicket,
    out_done: *mut u32,
    out_tasks_remaining: *mut u64,
    out_tasks_total: *mut u64,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (all three).
        let (done, remaining, total) = unsafe {
            (
                Out::new(out_done, "out_done")?,
                Out::optional(out_tasks_remaining),
                Out::optional(out_tasks_total),
            )
        };
        let t = get_ticket(ticket)?;
        let left = t.ticket.tasks_remaining();
        done.write((left == 0) as u32);
        if let Some(r) = remaining {
            r.write(left as u64);
        }
        if let Some(total) = total {
            total.write(t.ticket.tasks_total() as u64);
        }
        Ok(())
    })
}

/// Release a ticket handle. The fills go on (and the loader's destruction still waits for
/// them).
///
/// Errors: INVALID_HANDLE. Ownership: ends the caller's ownership of the ticket handle.
/// Thread-safety: any thread; a wait in progress on another thread completes normally.
#[no_mangle]
pub extern "C" fn dtex_ticket_destroy(ticket: DtexTicket) -> DtexStatus {
    entry(|| {
        TICKETS.remove(ticket.id)?;
        Ok(())
    })
}
