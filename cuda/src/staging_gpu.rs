//! The driver half of [`super`]: CUDA events as a fence timeline, and the pinned staging
//! ring's memory and copies.

use super::{upload_pieces, Fence, SlotRing};
use crate::array::{LevelRect, MipmappedArray};
use crate::ops::{bind, drv, error_from, safe, status};
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaStream};
use demandtex::error::{Error, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// Fences as CUDA events: [`record`](Self::record) one after work enqueued on a stream,
/// [`poll`](Self::poll) to learn which completed. Events are reused once completed.
pub struct FenceTimeline {
    ctx: Arc<CudaContext>,
    pending: VecDeque<(Fence, sys::CUevent)>,
    spare: Vec<sys::CUevent>,
    last: Fence,
    completed: Fence,
}

// SAFETY: events are plain driver handles usable from any thread with the context bound
// (every method binds it); `&mut self` serialises their use.
unsafe impl Send for FenceTimeline {}

impl FenceTimeline {
    /// A timeline on `ctx` with nothing recorded (fence 0 is complete).
    pub fn new(ctx: &Arc<CudaContext>) -> FenceTimeline {
        FenceTimeline {
            ctx: ctx.clone(),
            pending: VecDeque::new(),
            spare: Vec::new(),
            last: 0,
            completed: 0,
        }
    }

    /// Record a new fence after the work enqueued so far on `stream`.
    pub fn record(&mut self, stream: &CudaStream) -> Result<Fence> {
        bind(&self.ctx)?;
        let event = match self.spare.pop() {
            Some(e) => e,
            None => {
                let mut e: sys::CUevent = std::ptr::null_mut();
                let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
                // SAFETY: writes one event handle.
                drv("cuEventCreate", || unsafe {
                    sys::cuEventCreate(&mut e, flags)
                })?;
                e
            }
        };
        // SAFETY: `event` is a live event of this context and `stream` a live stream.
        let recorded = drv("cuEventRecord", || unsafe {
            sys::cuEventRecord(event, stream.cu_stream())
        });
        if let Err(e) = recorded {
            self.spare.push(event);
            return Err(e);
        }
        self.last += 1;
        self.pending.push_back((self.last, event));
        Ok(self.last)
    }

    /// Learn which fences completed (without waiting); returns the newest complete one.
    pub fn poll(&mut self) -> Result<Fence> {
        bind(&self.ctx)?;
        while let Some(&(fence, event)) = self.pending.front() {
            // SAFETY: `event` is a live, recorded event of this context.
            match status("cuEventQuery", || unsafe { sys::cuEventQuery(event) })? {
                CUresult::CUDA_SUCCESS => {
                    self.pending.pop_front();
                    self.spare.push(event);
                    self.completed = fence;
                }
                CUresult::CUDA_ERROR_NOT_READY => break,
                r => return Err(error_from(r, "cuEventQuery")),
            }
        }
        Ok(self.completed)
    }

    /// Wait until `fence` (at most the last recorded) has completed.
    pub fn wait(&mut self, fence: Fence) -> Result<()> {
        if fence > self.last {
            return Err(Error::Internal(format!(
                "waiting for fence {fence}, only {} recorded",
                self.last
            )));
        }
        bind(&self.ctx)?;
        if let Some(&(_, event)) = self.pending.iter().find(|(f, _)| *f == fence) {
            // SAFETY: `event` is a live, recorded event of this context.
            drv("cuEventSynchronize", || unsafe {
                sys::cuEventSynchronize(event)
            })?;
        }
        self.poll()?;
        Ok(())
    }

    /// The newest fence known to be complete (as of the last poll).
    pub fn completed(&self) -> Fence {
        self.completed
    }

    /// The newest fence recorded.
    pub fn last(&self) -> Fence {
        self.last
    }
}

impl Drop for FenceTimeline {
    fn drop(&mut self) {
        // Destroying a recorded event that has not completed is allowed: the driver
        // releases it once it completes.
        let events: Vec<_> = self.pending.drain(..).map(|(_, e)| e).collect();
        for e in events.into_iter().chain(self.spare.drain(..)) {
            let r = bind(&self.ctx).and_then(|_| {
                // SAFETY: each event is destroyed once (drained out of the timeline).
                drv("cuEventDestroy_v2", || unsafe { sys::cuEventDestroy_v2(e) })
            });
            if let Err(e) = r {
                tracing::warn!("destroying a CUDA event: {e}");
            }
        }
    }
}

impl std::fmt::Debug for FenceTimeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FenceTimeline")
            .field("last", &self.last)
            .field("completed", &self.completed)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

/// A ring of pinned host slots (`cuMemHostAlloc`) through which tile data is copied
/// asynchronously into arrays; a slot is reused only after the copy out of it has run.
pub struct StagingRing {
    ctx: Arc<CudaContext>,
    host: *mut u8,
    slot_bytes: usize,
    ring: SlotRing,
    timeline: FenceTimeline,
}

// SAFETY: `host` is page-locked memory owned by the ring alone; `&mut self` serialises
// every access to it and to the driver handles.
unsafe impl Send for StagingRing {}

impl StagingRing {
    /// `slots` slots of `slot_bytes` each (64 KiB: one tile) of pinned host memory.
    pub fn new(ctx: &Arc<CudaContext>, slots: usize, slot_bytes: usize) -> Result<StagingRing> {
        let ring = SlotRing::new(slots)?;
        let bytes = slots
            .checked_mul(slot_bytes)
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("a staging ring of {slots} × {slot_bytes} bytes"))
            })?;
        bind(ctx)?;
        let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: allocates `bytes` of page-locked host memory and writes its address.
        drv("cuMemHostAlloc", || unsafe {
            sys::cuMemHostAlloc(&mut host, bytes, 0)
        })?;
        Ok(StagingRing {
            ctx: ctx.clone(),
            host: host.cast(),
            slot_bytes,
            ring,
            timeline: FenceTimeline::new(ctx),
        })
    }

    /// Bytes of one slot.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// The ring's fence timeline (also for fences of launches, so that one timeline
    /// orders everything on the loader's stream).
    pub fn timeline(&mut self) -> &mut FenceTimeline {
        &mut self.timeline
    }

    /// A slot to fill, waiting for the oldest copy in flight if none is free.
    pub fn acquire(&mut self) -> Result<usize> {
        let completed = self.timeline.poll()?;
        self.ring.retire(completed);
        if let Some(slot) = self.ring.acquire() {
            return Ok(slot);
        }
        let oldest = self
            .ring
            .oldest_in_flight()
            .ok_or_else(|| Error::Internal("every staging slot is being filled at once".into()))?;
        self.timeline.wait(oldest)?;
        self.ring.retire(self.timeline.completed());
        self.ring
            .acquire()
            .ok_or_else(|| Error::Internal("no staging slot after waiting".into()))
    }

    /// The bytes of `slot` (acquired, not yet submitted) to write tile data into.
    ///
    /// Errors: [`Error::InvalidArgument`] for a slot past the ring; [`Error::Internal`] for
    /// one not acquired (free, or in flight: a copy may be reading it).
    pub fn slot_mut(&mut self, slot: usize) -> Result<&mut [u8]> {
        if slot >= self.ring.len() {
            return Err(Error::InvalidArgument(format!(
                "staging slot {slot} of a ring of {}",
                self.ring.len()
            )));
        }
        self.ring.expect_filling(slot)?;
        // SAFETY: slot `slot` lies inside the allocation; the `&mut self` borrow keeps
        // every other access (and the copies' submission) out while the slice lives. A
        // slot in flight is never handed out by `acquire`, so the GPU is not reading it
        // while an acquired slot is written.
        Ok(unsafe {
            std::slice::from_raw_parts_mut(self.host.add(slot * self.slot_bytes), self.slot_bytes)
        })
    }

    /// Enqueue the copy of `slot` (rows `pitch` bytes apart) into `rect` of `array` on
    /// `stream`; returns the fence after which the slot is free again (and the data is in
    /// the array). On error the slot is given back.
    pub fn submit(
        &mut self,
        stream: &CudaStream,
        slot: usize,
        array: &MipmappedArray,
        rect: &LevelRect,
        pitch: usize,
    ) -> Result<Fence> {
        // Only an acquired slot: one in flight may still be read by its copy, and a copy
        // out of a slot the ring thinks free would go unfenced.
        self.ring.expect_filling(slot)?;
        let needed = array.host_bytes(rect, pitch);
        if needed > self.slot_bytes {
            let _ = self.ring.cancel(slot);
            return Err(Error::InvalidArgument(format!(
                "{rect:?} with a pitch of {pitch} does not fit staging slot {slot} of {} bytes",
                self.slot_bytes
            )));
        }
        // SAFETY: the slot holds `needed` bytes of pinned memory; it stays untouched until
        // the fence recorded below completes (the ring hands it out again only then, and
        // the ring's drop waits for every fence).
        let src = unsafe { self.host.add(slot * self.slot_bytes) };
        // SAFETY: as above.
        if let Err(e) = unsafe { array.write_async(stream, rect, src, pitch) } {
            let _ = self.ring.cancel(slot);
            return Err(e);
        }
        match self.timeline.record(stream) {
            Ok(fence) => {
                self.ring.submit(slot, fence)?;
                Ok(fence)
            }
            Err(e) => {
                // The copy is enqueued but has no fence: let it finish before the slot is
                // handed out again.
                let _ = safe("cuStreamSynchronize", || stream.synchronize());
                let _ = self.ring.cancel(slot);
                Err(e)
            }
        }
    }

    /// Give back an acquired slot without a copy.
    pub fn cancel(&mut self, slot: usize) -> Result<()> {
        self.ring.cancel(slot)
    }

    /// Copy `data` (rows `pitch` bytes apart) into `rect` of `array` through as many slots
    /// as it needs; returns the fence after which it is all in the array.
    pub fn upload(
        &mut self,
        stream: &CudaStream,
        array: &MipmappedArray,
        rect: &LevelRect,
        data: &[u8],
        pitch: usize,
    ) -> Result<Fence> {
        let e = array.elements();
        if pitch < e.row_bytes(rect.width) || data.len() < array.host_bytes(rect, pitch) {
            return Err(Error::InvalidArgument(format!(
                "{} bytes with a pitch of {pitch} for {rect:?}",
                data.len()
            )));
        }
        let mut fence = self.timeline.last();
        for p in upload_pieces(rect, e, pitch, self.slot_bytes)? {
            let slot = self.acquire()?;
            let dst = match self.slot_mut(slot) {
                Ok(d) => d,
                Err(e) => {
                    let _ = self.ring.cancel(slot);
                    return Err(e);
                }
            };
            for r in 0..p.rows {
                let src = p.data_offset + r * pitch;
                dst[r * p.row_bytes..(r + 1) * p.row_bytes]
                    .copy_from_slice(&data[src..src + p.row_bytes]);
            }
            fence = self.submit(stream, slot, array, &p.rect, p.row_bytes)?;
        }
        Ok(fence)
    }
}

impl Drop for StagingRing {
    fn drop(&mut self) {
        // Copies out of the slots may still be running: wait for them first.
        let last = self.timeline.last();
        if let Err(e) = self.timeline.wait(last) {
            tracing::warn!("waiting for staging copies: {e}");
        }
        let host = self.host;
        let r = bind(&self.ctx).and_then(|_| {
            // SAFETY: `host` came from cuMemHostAlloc and is freed once, after its copies.
            drv("cuMemFreeHost", || unsafe {
                sys::cuMemFreeHost(host.cast())
            })
        });
        if let Err(e) = r {
            tracing::warn!("freeing the staging ring: {e}");
        }
    }
}

impl std::fmt::Debug for StagingRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagingRing")
            .field("slots", &self.ring.len())
            .field("slot_bytes", &self.slot_bytes)
            .field("timeline", &self.timeline)
            .finish_non_exhaustive()
    }
}
