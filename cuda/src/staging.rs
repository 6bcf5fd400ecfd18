//! The pinned host staging ring and the fences that say when the GPU is done with memory.
//!
//! Tile data goes host → pinned slot → (async copy on the loader's stream) → array. A slot
//! is reusable once its copy has run; a tile block being evicted is reusable once no launch
//! can still sample it. Both are tracked with *fences*: increasing numbers, each recorded as
//! a CUDA event on the stream after the work it covers, complete once the event has
//! completed (fence `n` complete implies every fence before it is).
//!
//! The bookkeeping is plain data, tested without a GPU: [`SlotRing`] (free / filling /
//! in-flight slots) and [`FenceQueue`] (items, e.g. tile blocks, released when their fence
//! completes). With the `cuda` feature, `FenceTimeline` records and polls the events and
//! `StagingRing` owns the pinned memory (`cuMemHostAlloc`) and enqueues the copies
//! (`cuMemcpy2DAsync` into a level of a mipmapped array).

use crate::array::{Elements, LevelRect};
use demandtex::error::{Error, Result};
use std::collections::VecDeque;

/// A fence: work recorded on a stream, complete once the GPU has run it. Fence 0 is
/// complete from the start.
pub type Fence = u64;

/// The state of one staging slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Free,
    /// Handed out, being written by the host.
    Filling,
    /// Its copy is enqueued; reusable once this fence completes.
    InFlight(Fence),
}

/// Which staging slots are free, being filled, or waiting for their copies.
#[derive(Clone, Debug)]
pub struct SlotRing {
    slots: Vec<Slot>,
    next: usize,
}

impl SlotRing {
    /// `count` free slots (at least one).
    pub fn new(count: usize) -> Result<SlotRing> {
        if count == 0 {
            return Err(Error::InvalidArgument("a staging ring of 0 slots".into()));
        }
        Ok(SlotRing {
            slots: vec![Slot::Free; count],
            next: 0,
        })
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Always false (a ring has at least one slot).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// A free slot, now being filled (round robin, so a slot's reuse is as late as can
    /// be); `None` if every slot is being filled or in flight.
    pub fn acquire(&mut self) -> Option<usize> {
        let n = self.slots.len();
        let i = (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&i| self.slots[i] == Slot::Free)?;
        self.slots[i] = Slot::Filling;
        self.next = (i + 1) % n;
        Some(i)
    }

    /// The copy out of `slot` (being filled) is enqueued; it is busy until `fence`.
    pub fn submit(&mut self, slot: usize, fence: Fence) -> Result<()> {
        self.expect_filling(slot)?;
        self.slots[slot] = Slot::InFlight(fence);
        Ok(())
    }

    /// Give back a slot being filled without a copy (the fill failed).
    pub fn cancel(&mut self, slot: usize) -> Result<()> {
        self.expect_filling(slot)?;
        self.slots[slot] = Slot::Free;
        Ok(())
    }

    /// Free every in-flight slot whose fence is at most `completed`; returns how many.
    pub fn retire(&mut self, completed: Fence) -> usize {
        let mut n = 0;
        for s in &mut self.slots {
            if matches!(*s, Slot::InFlight(f) if f <= completed) {
                *s = Slot::Free;
                n += 1;
            }
        }
        n
    }

    /// The oldest fence a slot waits for (wait for it when [`acquire`](Self::acquire)
    /// finds nothing); `None` if no slot is in flight.
    pub fn oldest_in_flight(&self) -> Option<Fence> {
        self.slots
            .iter()
            .filter_map(|s| match s {
                Slot::InFlight(f) => Some(*f),
                _ => None,
            })
            .min()
    }

    /// Slots free now.
    pub fn free_count(&self) -> usize {
        self.slots.iter().filter(|s| **s == Slot::Free).count()
    }

    fn expect_filling(&self, slot: usize) -> Result<()> {
        match self.slots.get(slot) {
            Some(Slot::Filling) => Ok(()),
            other => Err(Error::Internal(format!(
                "staging slot {slot} is {other:?}, not being filled"
            ))),
        }
    }
}

/// Items released in fence order: e.g. tile blocks of evicted pages, kept until no launch
/// can still sample them, or retired arrays.
#[derive(Clone, Debug)]
pub struct FenceQueue<T> {
    items: VecDeque<(Fence, T)>,
}

impl<T> Default for FenceQueue<T> {
    fn default() -> Self {
        FenceQueue {
            items: VecDeque::new(),
        }
    }
}

impl<T> FenceQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keep `item` until `fence` completes. Fences must not decrease from one push to the
    /// next (they come from one timeline).
    pub fn push(&mut self, fence: Fence, item: T) -> Result<()> {
        if self.items.back().is_some_and(|(f, _)| *f > fence) {
            return Err(Error::Internal(format!(
                "fence {fence} pushed after a later one"
            )));
        }
        self.items.push_back((fence, item));
        Ok(())
    }

    /// Every item whose fence is at most `completed`, oldest first.
    pub fn release(&mut self, completed: Fence) -> Vec<T> {
        let n = self
            .items
            .iter()
            .take_while(|(f, _)| *f <= completed)
            .count();
        self.items.drain(..n).map(|(_, item)| item).collect()
    }

    /// Items still held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// How a region of `width × height` texels of `texel_bytes` each is cut into pieces that
/// fit a slot of `slot_bytes`: whole rows when a row fits (as many as fit), else a row
/// in chunks. Returns `(piece_width, piece_height)`; errors if one texel does not fit.
pub fn piece_shape(
    width: u32,
    height: u32,
    texel_bytes: usize,
    slot_bytes: usize,
) -> Result<(u32, u32)> {
    if texel_bytes == 0 || slot_bytes < texel_bytes || width == 0 || height == 0 {
        return Err(Error::InvalidArgument(format!(
            "staging {width}×{height} texels of {texel_bytes} bytes through slots of {slot_bytes}"
        )));
    }
    let row = width as usize * texel_bytes;
    if row <= slot_bytes {
        let rows = (slot_bytes / row).min(height as usize) as u32;
        Ok((width, rows))
    } else {
        Ok(((slot_bytes / texel_bytes) as u32, 1))
    }
}

/// One piece of an upload ([`upload_pieces`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadPiece {
    /// The texels it fills (starting on an element: a 4×4 block for blocks).
    pub rect: LevelRect,
    /// Byte offset of its first row in the upload's data.
    pub data_offset: usize,
    /// Bytes of each of its rows (of texels, or of blocks).
    pub row_bytes: usize,
    /// Rows of elements.
    pub rows: usize,
}

/// How an upload of `rect` (data rows `pitch` bytes apart) of an array of elements `e`
/// is cut into pieces that fit a slot of `slot_bytes` ([`piece_shape`] in elements, so a
/// piece of blocks starts on a block): every element of `rect` in exactly one piece.
pub fn upload_pieces(
    rect: &LevelRect,
    e: Elements,
    pitch: usize,
    slot_bytes: usize,
) -> Result<Vec<UploadPiece>> {
    let (ew, eh) = (e.count(rect.width), e.count(rect.height));
    let (pw, ph) = piece_shape(ew, eh, e.bytes, slot_bytes)?;
    // Texels of the piece of `n` elements from element `at` along a side of `side` texels.
    let texels = |at: u32, n: u32, side: u32| {
        (((at + n) as u64) << e.shift).min(side as u64) as u32 - (at << e.shift)
    };
    let mut pieces = Vec::new();
    for y in (0..eh).step_by(ph as usize) {
        for x in (0..ew).step_by(pw as usize) {
            let piece = LevelRect {
                level: rect.level,
                x: rect.x + (x << e.shift),
                y: rect.y + (y << e.shift),
                width: texels(x, pw, rect.width),
                height: texels(y, ph, rect.height),
            };
            pieces.push(UploadPiece {
                rect: piece,
                data_offset: y as usize * pitch + x as usize * e.bytes,
                row_bytes: e.row_bytes(piece.width),
                rows: e.count(piece.height) as usize,
            });
        }
    }
    Ok(pieces)
}

pub use gpu::{FenceTimeline, StagingRing};

#[path = "staging_gpu.rs"]
mod gpu;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_cycle_through_filling_and_flight_and_free_by_fence() {
        let mut r = SlotRing::new(3).unwrap();
        let a = r.acquire().unwrap();
        let b = r.acquire().unwrap();
        let c = r.acquire().unwrap();
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(r.acquire(), None);
        r.submit(a, 5).unwrap();
        r.submit(b, 6).unwrap();
        r.cancel(c).unwrap();
        assert_eq!(r.oldest_in_flight(), Some(5));
        assert_eq!(r.free_count(), 1);
        assert_eq!(r.acquire(), Some(2), "the cancelled slot");
        assert_eq!(r.acquire(), None, "0 and 1 are in flight");
        assert_eq!(r.retire(4), 0);
        assert_eq!(r.retire(5), 1);
        assert_eq!(r.acquire(), Some(0));
        assert_eq!(r.retire(100), 1);
        assert_eq!(r.oldest_in_flight(), None);
        // Misuse is an error, not a corrupted ring.
        assert!(r.submit(1, 7).is_err(), "slot 1 is free, not being filled");
        assert!(r.cancel(9).is_err());
        assert!(SlotRing::new(0).is_err());
    }

    #[test]
    fn round_robin_delays_reuse_of_a_just_freed_slot() {
        let mut r = SlotRing::new(4).unwrap();
        let s = r.acquire().unwrap();
        r.cancel(s).unwrap();
        assert_eq!(r.acquire(), Some(1), "slot 0 is free but the ring moves on");
    }

    #[test]
    fn fence_queues_release_in_order_up_to_the_completed_fence() {
        let mut q = FenceQueue::new();
        q.push(1, "a").unwrap();
        q.push(3, "b").unwrap();
        q.push(3, "c").unwrap();
        q.push(7, "d").unwrap();
        assert!(q.push(5, "late").is_err());
        assert_eq!(q.release(0), Vec::<&str>::new());
        assert_eq!(q.release(3), vec!["a", "b", "c"]);
        assert_eq!(q.len(), 1);
        assert_eq!(q.release(6), Vec::<&str>::new());
        assert_eq!(q.release(7), vec!["d"]);
        assert!(q.is_empty());
    }

    #[test]
    fn pieces_are_whole_rows_when_they_fit_else_row_chunks() {
        // A 64 KiB tile of RGBA8 (128×128) is one piece.
        assert_eq!(piece_shape(128, 128, 4, 65536).unwrap(), (128, 128));
        // A clipped edge tile too.
        assert_eq!(piece_shape(104, 44, 4, 65536).unwrap(), (104, 44));
        // A tall level: as many rows as fit.
        assert_eq!(piece_shape(100, 1000, 4, 65536).unwrap(), (100, 163));
        // A 65536×1 RGBA32F row (1 MiB) in 4096-texel chunks.
        assert_eq!(piece_shape(65536, 1, 16, 65536).unwrap(), (4096, 1));
        assert!(piece_shape(1, 1, 16, 8).is_err());
        assert!(piece_shape(0, 1, 4, 65536).is_err());
    }

    /// Every element of an upload is in exactly one piece, each piece fits a slot and
    /// starts on an element (a block for blocks), and its data rows are the upload's.
    #[test]
    fn upload_pieces_cover_every_element_once_and_start_on_blocks() {
        let cases = [
            (Elements { shift: 0, bytes: 4 }, (1037, 601), 65536),
            (
                Elements {
                    shift: 0,
                    bytes: 16,
                },
                (65536, 3),
                65536,
            ),
            (Elements { shift: 2, bytes: 8 }, (1037, 601), 65536),
            (
                Elements {
                    shift: 2,
                    bytes: 16,
                },
                (1037, 601),
                4096,
            ),
            (
                Elements {
                    shift: 2,
                    bytes: 16,
                },
                (65536, 2),
                65536,
            ),
            (Elements { shift: 2, bytes: 8 }, (3, 1), 65536),
        ];
        for (e, (w, h), slot) in cases {
            let rect = LevelRect {
                level: 2,
                x: 512,
                y: 256,
                width: w,
                height: h,
            };
            let pitch = e.row_bytes(w) + 24;
            let pieces = upload_pieces(&rect, e, pitch, slot).unwrap();
            let (ew, eh) = (e.count(w) as usize, e.count(h) as usize);
            let mut seen = vec![0u8; ew * eh];
            for p in &pieces {
                assert_eq!(p.rect.level, 2);
                assert_eq!((p.rect.x | p.rect.y) & ((1 << e.shift) - 1), 0, "{p:?}");
                assert!(p.rect.x + p.rect.width <= rect.x + w);
                assert!(p.rect.y + p.rect.height <= rect.y + h);
                assert!((p.rows - 1) * p.row_bytes + p.row_bytes <= slot, "{p:?}");
                assert_eq!(p.row_bytes, e.row_bytes(p.rect.width));
                assert_eq!(p.rows, e.count(p.rect.height) as usize);
                let (ex, ey) = (
                    ((p.rect.x - rect.x) >> e.shift) as usize,
                    ((p.rect.y - rect.y) >> e.shift) as usize,
                );
                assert_eq!(p.data_offset, ey * pitch + ex * e.bytes);
                for r in 0..p.rows {
                    for c in 0..p.row_bytes / e.bytes {
                        seen[(ey + r) * ew + ex + c] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{e:?} {w}×{h}");
        }
    }
}
