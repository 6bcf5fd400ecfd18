//! Generic resources through the C ABI: entries filled on demand (NOT_YET, ERROR),
//! `dtex_launch_map_or_request`, and `close` exactly once (never after a failed create).

use super::util::*;
use crate::callbacks::*;
use crate::handles::{DtexLaunch, DtexLoader};
use crate::launch::dtex_launch_discard;
use crate::loader::dtex_loader_destroy;
use crate::options::DtexLoaderOptions;
use crate::resources::*;
use crate::status::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// A resource whose page `i` holds `1000 + i`: each page answers NOT_YET the first time;
/// `failing_page` answers ERROR.
struct Resource {
    calls: Mutex<HashMap<u32, usize>>,
    failing_page: u32,
    closes: AtomicUsize,
}

unsafe extern "C" fn resource_cb(user: *mut c_void, page: u32, out: *mut u64) -> i32 {
    // SAFETY: the tests pass `Arc::as_ptr` of a Resource they keep alive.
    let r = unsafe { &*(user as *const Resource) };
    let n = {
        let mut calls = r.calls.lock();
        let n = calls.entry(page).or_insert(0);
        *n += 1;
        *n
    };
    if page == r.failing_page {
        let m = cstring("no such page");
        // SAFETY: a C string.
        unsafe { dtex_source_set_error(m.as_ptr()) };
        return DTEX_SOURCE_ERROR;
    }
    if n == 1 {
        return DTEX_SOURCE_NOT_YET;
    }
    // SAFETY: the library passes a writable u64.
    unsafe { *out = 1000 + page as u64 };
    DTEX_SOURCE_READY
}

unsafe extern "C" fn resource_close(user: *mut c_void) {
    // SAFETY: as resource_cb.
    unsafe { &*(user as *const Resource) }
        .closes
        .fetch_add(1, SeqCst);
}

fn map(launch: DtexLaunch, page: u32) -> Option<u64> {
    let (mut entry, mut resident) = (7u64, 7u32);
    // SAFETY: valid pointers.
    ok(unsafe { dtex_launch_map_or_request(launch, page, &mut entry, &mut resident) });
    assert!(resident <= 1);
    (resident == 1).then_some(entry).or_else(|| {
        assert_eq!(entry, 0, "entry 0 when not resident");
        None
    })
}

#[test]
fn resources_fill_entries_on_demand_and_close_once() {
    let loader = TestLoader::new();
    let res = Arc::new(Resource {
        calls: Mutex::new(HashMap::new()),
        failing_page: 3,
        closes: AtomicUsize::new(0),
    });
    let user = Arc::as_ptr(&res) as *mut c_void;
    let mut first = u32::MAX;
    // SAFETY: valid pointers; the callbacks honour their contract.
    ok(unsafe {
        dtex_resource_create(
            loader.0,
            5,
            Some(resource_cb),
            user,
            Some(resource_close),
            &mut first,
        )
    });
    let pages: Vec<u32> = (0..5).map(|i| first + i).collect();
    let mut launches = 0;
    loop {
        launches += 1;
        assert!(launches <= 10, "did not converge");
        let launch = loader.launch();
        let entries: Vec<_> = pages.iter().map(|&p| map(launch, p)).collect();
        if entries
            .iter()
            .enumerate()
            .all(|(i, e)| (i == 3) != e.is_some())
        {
            for (i, e) in entries.iter().enumerate() {
                if i != 3 {
                    assert_eq!(*e, Some(1000 + i as u64));
                }
            }
            ok(dtex_launch_discard(launch));
            break;
        }
        process_and_wait(launch);
    }
    assert!(launches >= 3, "NOT_YET first: {launches} launches");
    // The failed page is never asked again, however often it is looked up.
    for _ in 0..2 {
        let launch = loader.launch();
        assert_eq!(map(launch, pages[3]), None);
        process_and_wait(launch);
    }
    assert_eq!(res.calls.lock()[&3], 1);
    assert_eq!(res.calls.lock()[&0], 2);
    assert!(loader.stats().read_errors >= 1);

    // A page past the page-table entries has no entry: not resident, no error.
    let launch = loader.launch();
    assert_eq!(map(launch, (1 << 20) - 1), None);
    let (mut e, mut r) = (0u64, 0u32);
    // SAFETY: NULL outputs are errors, not crashes.
    unsafe {
        fails(
            dtex_launch_map_or_request(launch, first, null_mut(), &mut r),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        fails(
            dtex_launch_map_or_request(launch, first, &mut e, null_mut()),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        fails(
            dtex_launch_map_or_request(DtexLaunch::default(), first, &mut e, &mut r),
            DTEX_STATUS_INVALID_HANDLE,
        );
    }
    ok(dtex_launch_discard(launch));

    assert_eq!(res.closes.load(SeqCst), 0);
    ok(dtex_loader_destroy(loader.0));
    assert_eq!(
        res.closes.load(SeqCst),
        1,
        "closed exactly once, at destroy"
    );
}

#[test]
fn a_failed_resource_create_does_not_close() {
    let loader = TestLoader::with(DtexLoaderOptions {
        page_table_entries: 1 << 12,
        max_textures: 64,
        ..small_options()
    });
    let res = Arc::new(Resource {
        calls: Mutex::new(HashMap::new()),
        failing_page: u32::MAX,
        closes: AtomicUsize::new(0),
    });
    let user = Arc::as_ptr(&res) as *mut c_void;
    let mut first = u32::MAX;
    let create = |l: DtexLoader, pages: u32, cb: DtexResourceCallback, out: *mut u32| {
        // SAFETY: the callbacks honour their contract; `out` is NULL or valid.
        unsafe { dtex_resource_create(l, pages, cb, user, Some(resource_close), out) }
    };
    fails(
        create(loader.0, 0, Some(resource_cb), &mut first),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    fails(
        create(loader.0, 4, None, &mut first),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    fails(
        create(loader.0, 4, Some(resource_cb), null_mut()),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    fails(
        create(DtexLoader::default(), 4, Some(resource_cb), &mut first),
        DTEX_STATUS_INVALID_HANDLE,
    );
    fails(
        create(loader.0, 1 << 20, Some(resource_cb), &mut first),
        DTEX_STATUS_OUT_OF_PAGES,
    );
    assert_eq!(first, u32::MAX, "outputs untouched on error");
    ok(dtex_loader_destroy(loader.0));
    assert_eq!(res.closes.load(SeqCst), 0);
    assert!(res.calls.lock().is_empty());
}
