//! User resources (OTK's `createResource`) end to end: map_or_request → request → callback
//! on a fill thread → entry visible at the next launch; "not yet" deferral; the failure
//! rule; non-evictable entries; running out of entry pages; the blocking cache.

use demandtex::sources::{Checkerboard, SourceError};
use demandtex::textures::{TexelFormat, TextureDesc};
use demandtex::{
    Error, Loader, LoaderOptions, PageId, ResourceCallback, ResourceFill, SampleOptions,
    TextureCache, TILE_BYTES,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Page 0 → 100; page 1 → "not yet" twice, then 101; page 2 → an error; page 3 → a
/// panic; others → 1000 + index. Counts calls per page.
#[derive(Default)]
struct Scripted {
    calls: Mutex<HashMap<u32, usize>>,
}

impl Scripted {
    fn calls(&self, page_index: u32) -> usize {
        self.calls
            .lock()
            .unwrap()
            .get(&page_index)
            .copied()
            .unwrap_or(0)
    }
}

impl ResourceCallback for Scripted {
    fn fill(&self, page_index: u32) -> Result<ResourceFill, SourceError> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            let n = calls.entry(page_index).or_default();
            *n += 1;
            *n
        };
        match page_index {
            0 => Ok(ResourceFill::Entry(100)),
            1 if n <= 2 => Ok(ResourceFill::NotYet),
            1 => Ok(ResourceFill::Entry(101)),
            2 => Err("the proxy's geometry file is corrupt".into()),
            3 => panic!("callback bug"),
            i => Ok(ResourceFill::Entry(1000 + i as u64)),
        }
    }
}

fn options() -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 64,
        max_texture_memory: 16 * TILE_BYTES as u64,
        fill_threads: 2,
        ..Default::default()
    }
}

fn page(first: PageId, index: u32) -> PageId {
    PageId(first.0 + index)
}

#[test]
fn requested_pages_are_filled_by_the_callback_and_visible_at_the_next_launch() {
    let loader = Loader::new(options()).unwrap();
    let cb = Arc::new(Scripted::default());
    let first = loader.create_resource(8, cb.clone()).unwrap();
    assert_eq!(
        first,
        PageId(2 * 64),
        "the first page after the texture entries"
    );

    let launch = loader.launch_prepare();
    for i in [0, 1, 5] {
        assert_eq!(launch.map_or_request(page(first, i)), None);
    }
    let ticket = loader.process_requests(launch);
    ticket.wait();
    assert_eq!(ticket.tasks_total(), 3);
    assert_eq!(
        (cb.calls(0), cb.calls(1), cb.calls(5), cb.calls(4)),
        (1, 1, 1, 0)
    );

    let launch = loader.launch_prepare();
    assert_eq!(launch.map_or_request(page(first, 0)), Some(100));
    assert_eq!(launch.map_or_request(page(first, 5)), Some(1005));
    // "Not yet": deferred, asked again at each process_requests without a new lookup.
    assert_eq!(launch.map_or_request(page(first, 1)), None);
    loader.process_requests(launch).wait();
    assert_eq!(cb.calls(1), 2);
    let launch = loader.launch_prepare();
    loader.process_requests(launch).wait();
    assert_eq!(cb.calls(1), 3);
    let launch = loader.launch_prepare();
    assert_eq!(launch.map_or_request(page(first, 1)), Some(101));
    drop(launch);
    let stats = loader.stats();
    assert_eq!(stats.deferred_not_yet, 2);
    assert_eq!(stats.read_errors, 0);
    assert_eq!(
        (cb.calls(0), cb.calls(5)),
        (1, 1),
        "never asked again once published"
    );

    // Pages without an entry, or past the space: nothing, and no request.
    let launch = loader.launch_prepare();
    assert_eq!(launch.map_or_request(PageId(1 << 10)), None);
    assert_eq!(launch.map_or_request(PageId(u32::MAX)), None);
    let t = loader.process_requests(launch);
    assert_eq!(t.tasks_total(), 0);
}

#[test]
fn a_failed_page_stays_non_resident_and_is_never_requested_again() {
    let loader = Loader::new(options()).unwrap();
    let cb = Arc::new(Scripted::default());
    let first = loader.create_resource(4, cb.clone()).unwrap();
    for _ in 0..2 {
        let launch = loader.launch_prepare();
        assert_eq!(launch.map_or_request(page(first, 2)), None);
        assert_eq!(launch.map_or_request(page(first, 3)), None);
        loader.process_requests(launch).wait();
    }
    assert_eq!((cb.calls(2), cb.calls(3)), (1, 1));
    assert_eq!(
        loader.stats().read_errors,
        2,
        "an error and a contained panic"
    );

    let requests = loader.stats().requests;
    for _ in 0..5 {
        let launch = loader.launch_prepare();
        assert_eq!(launch.map_or_request(page(first, 2)), None);
        assert_eq!(launch.map_or_request(page(first, 3)), None);
        let t = loader.process_requests(launch);
        assert_eq!(t.tasks_total(), 0);
    }
    assert_eq!(loader.stats().requests, requests, "no request was recorded");
    assert_eq!((cb.calls(2), cb.calls(3)), (1, 1));
    // The other pages of the resource still work.
    let launch = loader.launch_prepare();
    assert_eq!(launch.map_or_request(page(first, 0)), None);
    loader.process_requests(launch).wait();
    assert_eq!(
        loader.launch_prepare().map_or_request(page(first, 0)),
        Some(100)
    );
}

#[test]
fn resource_entries_are_never_evicted() {
    // A budget of 16 tiles and a texture of 256 level-0 tiles: eviction runs every launch.
    let loader = Loader::new(options()).unwrap();
    let cb = Arc::new(Scripted::default());
    let first = loader.create_resource(1, cb.clone()).unwrap();
    let tex = loader
        .create_texture(
            Arc::new(Checkerboard::new(2048, 2048, 16, TexelFormat::RGBA8)),
            TextureDesc::default(),
        )
        .unwrap();
    let launch = loader.launch_prepare();
    assert_eq!(launch.map_or_request(first), None);
    loader.process_requests(launch).wait();
    for frame in 0..30u32 {
        let launch = loader.launch_prepare();
        for i in 0..8 {
            let s = ((frame * 8 + i) % 16) as f32 / 16.0 + 0.01;
            launch.tex2d(tex, s, s, &SampleOptions::default());
        }
        loader.process_requests(launch).wait();
    }
    let stats = loader.stats();
    assert!(stats.pages_staged > 0, "eviction ran: {stats:?}");
    assert_eq!(loader.launch_prepare().map_or_request(first), Some(100));
    assert_eq!(cb.calls(0), 1);
}

#[test]
fn resources_take_entry_pages_until_none_are_left() {
    let loader = Loader::new(options()).unwrap();
    let cb: Arc<dyn ResourceCallback> = Arc::new(Scripted::default());
    // Entry pages [128, 1024): 896 for resources (and UDIM textures).
    assert!(matches!(
        loader.create_resource(0, cb.clone()),
        Err(Error::InvalidArgument(_))
    ));
    let a = loader.create_resource(4, cb.clone()).unwrap();
    assert_eq!(
        loader.create_resource(893, cb.clone()),
        Err(Error::OutOfPages {
            what: "resource".into(),
            needed: 893,
            available: 892
        })
    );
    let b = loader.create_resource(892, cb.clone()).unwrap();
    assert_eq!((a, b), (PageId(128), PageId(132)));
    assert!(matches!(
        loader.create_resource(1, cb),
        Err(Error::OutOfPages { .. })
    ));
}

#[test]
fn the_blocking_cache_asks_the_callback_in_the_calling_thread() {
    let cache = TextureCache::new(options()).unwrap();
    let cb = Arc::new(Scripted::default());
    let first = cache.create_resource(6, cb.clone()).unwrap();
    assert_eq!(cache.map_or_request(page(first, 0)), Some(100));
    assert_eq!(cache.map_or_request(page(first, 0)), Some(100));
    assert_eq!(cb.calls(0), 1);
    // "Not yet" twice: None until the third call.
    assert_eq!(cache.map_or_request(page(first, 1)), None);
    assert_eq!(cache.map_or_request(page(first, 1)), None);
    assert_eq!(cache.map_or_request(page(first, 1)), Some(101));
    // Failures: asked once, then never again.
    for _ in 0..3 {
        assert_eq!(cache.map_or_request(page(first, 2)), None);
        assert_eq!(cache.map_or_request(page(first, 3)), None);
    }
    assert_eq!((cb.calls(2), cb.calls(3)), (1, 1));
    assert_eq!(cache.stats().read_errors, 2);
    assert_eq!(cache.map_or_request(PageId(1 << 10)), None, "no entry");
    // Concurrent misses on one page: one callback.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(cache.map_or_request(page(first, 5)), Some(1005)));
        }
    });
    assert_eq!(cb.calls(5), 1);
    // Multi-pass launches of the same loader see the published entries.
    let launch = cache.loader().launch_prepare();
    assert_eq!(launch.map_or_request(page(first, 1)), Some(101));
}
