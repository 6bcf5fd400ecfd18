//! The fill pool: a rayon pool whose threads are joined when it is dropped, so that a
//! process that drops its last loader has no demandtex thread left running.
//!
//! Dropping a rayon `ThreadPool` only tells its threads to stop. Here the pool is built
//! with a spawn handler that keeps every thread's `JoinHandle`, and dropping the pool
//! waits for them — except when the drop runs on one of the pool's own threads (a fill
//! task holding the last reference to the engine), which cannot wait for itself: the
//! threads are then left to finish on their own, as rayon does.

use super::fill_throttle::FillThrottle;
use super::thread_priority;
use crate::error::{Error, Result};
use crate::options::BACKGROUND_FILL_NICENESS;
use std::thread::JoinHandle;

/// A fill thread pool joined on drop (see the module docs).
pub(crate) struct FillPool {
    /// Declared first: dropped (its threads told to stop) before they are joined.
    pool: rayon::ThreadPool,
    threads: JoinOnDrop,
    /// The fills' CPU-time limit, if any ([`crate::LoaderOptions::fill_cpu_cores`]).
    throttle: Option<FillThrottle>,
}

/// The pool's threads; dropping this joins them, unless `on_own_thread` was set.
struct JoinOnDrop {
    handles: Vec<JoinHandle<()>>,
    /// Set by [`FillPool`]'s drop when it runs on one of the pool's threads.
    on_own_thread: bool,
}

impl FillPool {
    /// A pool of `threads` threads named `demandtex-fill-<i>`; with `background`, each
    /// raises its niceness by [`BACKGROUND_FILL_NICENESS`] when it starts. With
    /// `cpu_cores`, the work run by [`FillPool::within_limit`] takes that many cores of CPU
    /// time on average at most.
    pub(crate) fn new(
        threads: usize,
        background: bool,
        cpu_cores: Option<f32>,
    ) -> Result<FillPool> {
        let mut handles = Vec::with_capacity(threads);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("demandtex-fill-{i}"))
            .panic_handler(|_| tracing::error!("a demandtex fill task panicked outside its guard"))
            .spawn_handler(|thread| {
                let mut builder = std::thread::Builder::new();
                if let Some(name) = thread.name() {
                    builder = builder.name(name.to_owned());
                }
                if let Some(size) = thread.stack_size() {
                    builder = builder.stack_size(size);
                }
                handles.push(builder.spawn(move || {
                    if background
                        && thread_priority::lower_current_thread(BACKGROUND_FILL_NICENESS).is_none()
                    {
                        tracing::debug!("fill threads keep their priority (not supported here)");
                    }
                    thread.run()
                })?);
                Ok(())
            })
            .build();
        // On failure the threads already started stop once the half-built registry is
        // dropped: join them too.
        let threads = JoinOnDrop {
            handles,
            on_own_thread: false,
        };
        let pool = pool.map_err(|e| Error::Internal(format!("cannot start fill threads: {e}")))?;
        Ok(FillPool {
            pool,
            threads,
            throttle: cpu_cores.map(FillThrottle::new),
        })
    }

    /// Run `task` on a fill thread.
    pub(crate) fn spawn(&self, task: impl FnOnce() + Send + 'static) {
        self.pool.spawn(task);
    }

    /// Run `work` (a fill's read, on one of the pool's threads) within the pool's CPU-time
    /// limit, if it has one: it waits its turn first, and its CPU time is counted.
    pub(crate) fn within_limit<R>(&self, work: impl FnOnce() -> R) -> R {
        match &self.throttle {
            None => work(),
            Some(throttle) => {
                let charge = throttle.start();
                let result = work();
                throttle.finish(charge);
                result
            }
        }
    }

    /// Threads in the pool.
    #[cfg(test)]
    pub(crate) fn num_threads(&self) -> usize {
        self.threads.handles.len()
    }
}

impl Drop for FillPool {
    fn drop(&mut self) {
        // Runs before the fields drop (the pool first, then the threads are joined). Asking
        // rayon (a thread-local read) rather than `std::thread::current()` allocates nothing
        // on the caller's thread.
        self.threads.on_own_thread = self.pool.current_thread_index().is_some();
    }
}

impl Drop for JoinOnDrop {
    fn drop(&mut self) {
        if self.on_own_thread {
            // Dropped by one of our own threads: it cannot join itself, and joining the
            // others from inside a task is not worth the risk. They stop on their own.
            return;
        }
        for handle in self.handles.drain(..) {
            // A thread that panicked has already been reported by the panic handler.
            let _ = handle.join();
        }
    }
}

impl std::fmt::Debug for FillPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FillPool")
            .field("threads", &self.threads.handles.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    #[test]
    fn dropping_the_pool_joins_its_threads() {
        let pool = FillPool::new(3, false, None).unwrap();
        assert_eq!(pool.num_threads(), 3);
        // Thread-local destructors run when a thread exits: count them.
        struct Exit(Arc<AtomicUsize>);
        impl Drop for Exit {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        thread_local! {
            static EXIT: std::cell::RefCell<Option<Exit>> = const { std::cell::RefCell::new(None) };
        }
        let exited = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        // One task per thread, each blocking until all three run, so every thread gets one.
        let barrier = Arc::new(std::sync::Barrier::new(3));
        for _ in 0..3 {
            let (exited, tx, barrier) = (exited.clone(), tx.clone(), barrier.clone());
            pool.spawn(move || {
                EXIT.with(|e| *e.borrow_mut() = Some(Exit(exited)));
                barrier.wait();
                tx.send(()).unwrap();
            });
        }
        for _ in 0..3 {
            rx.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        drop(pool);
        // Joined: every thread has exited, its thread-locals destroyed, when drop returns.
        assert_eq!(exited.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn dropping_a_loader_after_its_fills_joins_its_fill_threads() {
        use crate::sources::{Checkerboard, ImageInfo, ImageSource, Readiness, SourceError};
        use crate::textures::{TexelFormat, TileRegion};
        use crate::{Loader, LoaderOptions, SampleOptions, TextureDesc};

        /// Counts the fill threads that read, and those of them that have exited.
        struct Counting {
            inner: Checkerboard,
            started: Arc<AtomicUsize>,
            exited: Arc<AtomicUsize>,
        }
        struct Exit(Arc<AtomicUsize>);
        impl Drop for Exit {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        thread_local! {
            static EXIT: std::cell::RefCell<Option<Exit>> = const { std::cell::RefCell::new(None) };
        }
        impl ImageSource for Counting {
            fn name(&self) -> String {
                "counting".into()
            }
            fn open(&self) -> std::result::Result<ImageInfo, SourceError> {
                self.inner.open()
            }
            fn read_region(
                &self,
                region: TileRegion,
                dest: &mut [u8],
                row_bytes: usize,
            ) -> std::result::Result<Readiness, SourceError> {
                EXIT.with(|e| {
                    if e.borrow().is_none() {
                        self.started.fetch_add(1, Ordering::SeqCst);
                        *e.borrow_mut() = Some(Exit(self.exited.clone()));
                    }
                });
                self.inner.read_region(region, dest, row_bytes)
            }
        }

        let (started, exited) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let loader = Loader::new(LoaderOptions {
            num_pages: 1 << 16,
            page_table_entries: 1 << 12,
            max_textures: 16,
            max_texture_memory: 32 << 20,
            fill_threads: 2,
            ..Default::default()
        })
        .unwrap();
        let source = Counting {
            inner: Checkerboard::new(1024, 1024, 8, TexelFormat::RGBA8),
            started: started.clone(),
            exited: exited.clone(),
        };
        let tex = loader
            .create_texture(Arc::new(source), TextureDesc::default())
            .unwrap();
        for _ in 0..4 {
            let launch = loader.launch_prepare();
            for i in 0..16 {
                let s = (i as f32 + 0.5) / 16.0;
                launch.tex2d(tex, s, 1.0 - s, &SampleOptions::default());
            }
            loader.process_requests(launch).wait();
        }
        assert!(started.load(Ordering::SeqCst) >= 1, "no fill thread read");
        // The fill tasks let go of the engine before completing the ticket: this drop is
        // the last one, and it joins the threads.
        drop(loader);
        assert_eq!(
            exited.load(Ordering::SeqCst),
            started.load(Ordering::SeqCst)
        );
    }

    #[test]
    fn dropping_the_pool_on_its_own_thread_does_not_deadlock() {
        let pool = Arc::new(FillPool::new(2, false, None).unwrap());
        let (tx, rx) = mpsc::channel();
        let inner = pool.clone();
        pool.spawn(move || {
            // The last reference goes on a fill thread.
            std::thread::sleep(Duration::from_millis(20));
            drop(inner);
            tx.send(()).unwrap();
        });
        drop(pool);
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the drop on a fill thread returned");
    }

    #[test]
    fn background_fill_threads_run_at_a_lower_priority_than_their_creator() {
        let Some(creator) = thread_priority::current_niceness() else {
            return; // not Linux: nothing to check
        };
        let niceness_on = |background: bool| {
            let pool = FillPool::new(1, background, None).unwrap();
            let (tx, rx) = mpsc::channel();
            pool.spawn(move || tx.send(thread_priority::current_niceness()).unwrap());
            rx.recv_timeout(Duration::from_secs(30)).unwrap()
        };
        assert_eq!(niceness_on(false), Some(creator));
        assert_eq!(
            niceness_on(true),
            Some((creator + BACKGROUND_FILL_NICENESS).min(19))
        );
        assert_eq!(
            thread_priority::current_niceness(),
            Some(creator),
            "the creator keeps its own"
        );
    }
}
