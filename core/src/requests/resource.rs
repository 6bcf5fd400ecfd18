//! User resources (OTK's `createResource`): ranges of entry pages whose 64-bit page-table
//! entries a [`ResourceCallback`] produces when a launch requests them.
//!
//! Each request ends in one of three ways: an entry, published (non-evictable: resource
//! pages hold no tile memory) at the next launch; "not yet", deferred to the next
//! `process_requests`; or an error, counted in `Stats::read_errors`, after which the page
//! is marked failed — it stays non-resident, its requests are ignored, and
//! [`crate::Launch::map_or_request`] answers `None` for it without recording a request.

use super::engine::Engine;
use super::fill::contain;
use super::host_state::{Deferral, Pending};
use super::ticket::TaskGuard;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::resources::{ResourceCallback, ResourceFill};
use std::sync::Arc;
use std::time::Instant;

impl Engine {
    /// Register a user resource (OTK's `createResource`): `num_pages` consecutive pages
    /// with 64-bit page-table entries, which `callback` produces when a launch requests
    /// them (`map_or_request`); returns the first page. Entries are published at the next
    /// launch and never evicted; a "not yet" is asked again at the next `process_requests`;
    /// an error marks the page failed for good (see [`ResourceCallback`]).
    ///
    /// Errors: [`Error::InvalidArgument`] for 0 pages, [`Error::OutOfPages`] if the
    /// page-table-entry range (`page_table_entries`, shared with UDIM textures) has not
    /// `num_pages` pages left.
    pub fn create_resource(
        &self,
        num_pages: u32,
        callback: Arc<dyn ResourceCallback>,
    ) -> Result<PageId> {
        if num_pages == 0 {
            return Err(Error::InvalidArgument(
                "a resource needs at least one page".into(),
            ));
        }
        let mut host = self.host.lock();
        let start = host.space.allocate_resources(num_pages, "resource")?;
        host.resources.add_resource(start, num_pages, callback);
        Ok(PageId(start))
    }
}

/// One resource page to fill, with everything it needs (taken under the lock).
pub(crate) struct ResourceTask {
    pub page: PageId,
    pub page_index: u32,
    pub callback: Arc<dyn ResourceCallback>,
}

impl ResourceTask {
    /// Ask the callback and record the outcome (see the module docs).
    pub(crate) fn run(self, engine: &Engine, guard: Option<TaskGuard>) {
        self.fill_and_publish(engine);
        // The ticket completes once the task has let go of everything.
        drop(guard);
    }

    fn fill_and_publish(self, engine: &Engine) {
        let ResourceTask {
            page,
            page_index,
            callback,
        } = self;
        let start = Instant::now();
        let outcome = contain(|| callback.fill(page_index));
        let mut host = engine.host.lock();
        host.counters.fill_seconds += start.elapsed().as_secs_f64();
        match outcome {
            Ok(ResourceFill::Entry(entry)) => host.pending.push(Pending::Entry { page, entry }),
            Ok(ResourceFill::NotYet) => {
                host.in_flight.remove(&page);
                host.defer(page, Deferral::NotYet);
            }
            Err(e) => {
                host.in_flight.remove(&page);
                host.counters.read_errors += 1;
                engine.mark_resource_failed(page);
                tracing::error!(
                    page = page.0,
                    page_index = page_index,
                    "resource callback failed; the page stays non-resident: {e}"
                );
            }
        }
    }
}
