//! Generic resources (OTK's `createResource`): ranges of pages whose 64-bit page-table
//! entries a caller callback produces on demand, and `dtex_launch_map_or_request`.

use crate::boundary::{entry, Out};
use crate::callbacks::DTEX_SOURCE_READY;
use crate::callbacks::{take_source_error, DTEX_SOURCE_ERROR, DTEX_SOURCE_NOT_YET};
use crate::handles::{DtexLaunch, DtexLoader};
use crate::loader::{self, LifeToken};
use crate::status::{ApiError, DtexStatus};
use engine::sources::SourceError;
use engine::{PageId, ResourceCallback, ResourceFill};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Produces the 64-bit page-table entry of page `page_index` (0-based within its
/// resource) into `*out_entry`, and returns `DTEX_SOURCE_READY` (entry written),
/// `DTEX_SOURCE_NOT_YET` (nothing written; the request is deferred and asked again at the
/// next `dtex_process_requests`) or `DTEX_SOURCE_ERROR`
/// (call `dtex_source_set_error` first to say why; the page fails for good). Called on the
/// loader's fill threads, several at once for different pages: it must be thread-safe and
/// must not unwind. It is called at most once at a time per page, and never again for a
/// page once its entry was published or it failed.
pub type DtexResourceCallback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, page_index: u32, out_entry: *mut u64) -> i32,
>;

/// A resource's callbacks as the engine sees them.
struct CallbackResource {
    callback: unsafe extern "C" fn(*mut c_void, u32, *mut u64) -> i32,
    user_data: *mut c_void,
    close: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Set once the resource exists: from then on, dropping it calls `close`.
    armed: AtomicBool,
    /// Keeps the loader's destruction waiting until `close` has run.
    _life: LifeToken,
}

// SAFETY: the callback's contract (documented on DtexResourceCallback and
// dtex_resource_create) is that it is thread-safe and that `user_data` may be used from any
// thread; the rest is Send + Sync.
unsafe impl Send for CallbackResource {}
// SAFETY: as for Send.
unsafe impl Sync for CallbackResource {}

impl ResourceCallback for CallbackResource {
    fn fill(&self, page_index: u32) -> Result<ResourceFill, SourceError> {
        take_source_error();
        let mut entry = 0u64;
        // SAFETY: the callback's contract; `entry` is a valid u64 to write.
        let code = unsafe { (self.callback)(self.user_data, page_index, &mut entry) };
        match code {
            DTEX_SOURCE_READY => Ok(ResourceFill::Entry(entry)),
            DTEX_SOURCE_NOT_YET => Ok(ResourceFill::NotYet),
            DTEX_SOURCE_ERROR => {
                let message =
                    take_source_error().unwrap_or_else(|| "callback returned an error".into());
                Err(SourceError(format!(
                    "resource page {page_index}: {message}"
                )))
            }
            c => Err(SourceError(format!(
                "resource page {page_index}: the callback returned {c} \
                 (DTEX_SOURCE_READY 0, NOT_YET 1 or ERROR 2)"
            ))),
        }
    }
}

impl Drop for CallbackResource {
    fn drop(&mut self) {
        if let (true, Some(close)) = (self.armed.load(Ordering::Acquire), self.close) {
            // SAFETY: the contract: close is called once, with user_data.
            unsafe { close(self.user_data) };
        }
    }
}

/// Register a generic resource of `num_pages` consecutive pages whose 64-bit page-table
/// entries `callback` produces when a launch requests them (`dtex_launch_map_or_request`,
/// or a device `pagingMapOrRequest`); writes its first page to `*out_first_page` (its pages
/// are `first .. first + num_pages - 1`; `page_index` 0 is the first). Entries are
/// published at the next launch after the fill and are never evicted. A NOT_YET is
/// deferred: asked again at the next `dtex_process_requests`. An ERROR is
/// final for that page: it is counted in the stats' `read_errors`, the page stays
/// non-resident, and it is never requested or asked for again
/// (`dtex_launch_map_or_request` answers non-resident without requesting it).
///
/// `close` (NULL: none) is called exactly once, with `user_data`, when the loader drops the
/// resource: when the loader is destroyed, before `dtex_loader_destroy` returns (on that
/// thread or on a fill thread). It is not called when this function fails.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `callback` or `out_first_page`, 0
/// pages); OUT_OF_PAGES if the page-table-entry range (`page_table_entries`, shared with
/// samplers, base colours and UDIM textures) has not `num_pages` pages left. On failure
/// the caller still owns `user_data`. Ownership: on success the library owns `user_data`
/// until it calls `close`. Thread-safety: any thread; `callback` is then called on fill
/// threads, concurrently for different pages.
///
/// # Safety
/// `callback` and `close` honour their contracts; `out_first_page` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_resource_create(
    loader: DtexLoader,
    num_pages: u32,
    callback: DtexResourceCallback,
    user_data: *mut c_void,
    close: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
    out_first_page: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out_first_page, "out_first_page") }?;
        let callback = callback.ok_or_else(|| ApiError::invalid_argument("callback is NULL"))?;
        let entry = loader::get(loader)?;
        let resource = Arc::new(CallbackResource {
            callback,
            user_data,
            close,
            armed: AtomicBool::new(false),
            _life: entry.life.token(),
        });
        let first = entry.engine.create_resource(num_pages, resource.clone())?;
        resource.arm();
        out.write(first.0);
        Ok(())
    })
}

impl CallbackResource {
    /// From now on, dropping the resource calls `close`.
    fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }
}

/// The CPU side of the device's `pagingMapOrRequest`: if `page` is resident, write its
/// 64-bit entry to `*out_entry` and 1 to `*out_resident`; otherwise write 0 to both and
/// record a request for the page (filled by its resource's callback at the next
/// `dtex_process_requests`; resident from the launch after that fill). Pages without an
/// entry (`page >= page_table_entries`) and resource pages whose callback failed answer
/// non-resident and record nothing. Not for texture tiles: sample textures with
/// `dtex_launch_tex2d*`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT for a NULL pointer. Ownership: values.
/// Thread-safety: any thread; many threads may call it on one launch at once (as
/// sampling).
///
/// # Safety
/// `out_entry` and `out_resident` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_launch_map_or_request(
    launch: DtexLaunch,
    page: u32,
    out_entry: *mut u64,
    out_resident: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (both pointers).
        let (out_entry, out_resident) = unsafe {
            (
                Out::new(out_entry, "out_entry")?,
                Out::new(out_resident, "out_resident")?,
            )
        };
        let mapped = crate::launch::get(launch)?
            .launch
            .map_or_request(PageId(page));
        out_entry.write(mapped.unwrap_or(0));
        out_resident.write(mapped.is_some() as u32);
        Ok(())
    })
}
