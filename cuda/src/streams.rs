//! Ordering a caller's stream with the loader's: one event, recorded on the stream that
//! must finish first and waited on by the other (`cuEventRecord` + `cuStreamWaitEvent`), so
//! that a renderer launching on its own stream sees what `launch_prepare` published, and
//! the pull of `process_requests` sees what the renderer's kernel requested — without a
//! host synchronisation.
//!
//! Streams are raw `CUstream` handles: a caller from C or C++ owns its stream, and the
//! null handle is the legacy default stream.

use crate::ops::{bind, drv};
use cudarc::driver::sys;
use cudarc::driver::CudaContext;
use demandtex::error::Result;
use std::sync::Arc;

/// An event of one context used to order two streams (see the module docs).
pub(crate) struct StreamOrder {
    ctx: Arc<CudaContext>,
    event: sys::CUevent,
}

// SAFETY: a CUevent is a driver handle usable from any thread whose current context is the
// event's (every use binds `ctx` first); the owner serialises uses (`&mut self`).
unsafe impl Send for StreamOrder {}

impl StreamOrder {
    /// An event on `ctx`.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<StreamOrder> {
        bind(ctx)?;
        let mut event: sys::CUevent = std::ptr::null_mut();
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        // SAFETY: writes one event handle.
        drv("cuEventCreate", || unsafe {
            sys::cuEventCreate(&mut event, flags)
        })?;
        Ok(StreamOrder {
            ctx: ctx.clone(),
            event,
        })
    }

    /// Work enqueued on `later` from now on runs after the work enqueued on `earlier` so
    /// far.
    ///
    /// # Safety
    /// `earlier` and `later` are live streams of this context (or null, the default
    /// stream).
    pub unsafe fn order(&mut self, earlier: sys::CUstream, later: sys::CUstream) -> Result<()> {
        if earlier == later {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe {
            self.record(earlier)?;
            self.wait(later)
        }
    }

    /// Mark the work enqueued on `stream` so far (see [`wait`](Self::wait)).
    ///
    /// # Safety
    /// `stream` is a live stream of this context (or null, the default stream).
    pub unsafe fn record(&mut self, stream: sys::CUstream) -> Result<()> {
        bind(&self.ctx)?;
        // SAFETY: the event is live; the caller vouches for the stream.
        drv("cuEventRecord", || unsafe {
            sys::cuEventRecord(self.event, stream)
        })
    }

    /// Work enqueued on `later` from now on runs after the work marked by the last
    /// [`record`](Self::record) (at once if it was never recorded).
    ///
    /// # Safety
    /// `later` is a live stream of this context (or null, the default stream).
    pub unsafe fn wait(&mut self, later: sys::CUstream) -> Result<()> {
        bind(&self.ctx)?;
        // SAFETY: the event is live; the caller vouches for the stream. The wait captures
        // the event's state now, so re-recording it later does not change what `later`
        // waits for; an event never recorded is complete.
        drv("cuStreamWaitEvent", || unsafe {
            sys::cuStreamWaitEvent(later, self.event, 0)
        })
    }
}

impl Drop for StreamOrder {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: the event is ours and destroyed once; pending waits on it keep
            // working (the driver defers the destruction until they complete).
            let _ = drv("cuEventDestroy", || unsafe {
                sys::cuEventDestroy_v2(self.event)
            });
        }
    }
}
