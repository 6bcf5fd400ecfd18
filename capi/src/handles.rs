//! Handles: `uint64_t` ids into global registries of `Arc`s.
//!
//! An id packs a slot index, a type tag and a generation:
//! `generation << 32 | kind << 28 | slot`. The generation (never 0) changes each time a
//! slot is freed, so a destroyed handle never names the object that reuses its slot; the
//! tag makes a launch id passed as a loader an invalid handle; id 0 is the null handle.
//! A lookup is a read lock, a `Vec` index, two compares and an `Arc` clone; the caller's
//! clone keeps the object alive for the rest of its call even if another thread destroys
//! the handle meanwhile ("completes its call first").

use crate::status::{ApiError, ApiResult};
use parking_lot::RwLock;
use std::sync::Arc;

/// A demand loader (multi-pass mode). `id == 0` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DtexLoader {
    /// Opaque; 0 = null.
    pub id: u64,
}

/// One launch of a loader: what samplers read between `dtex_launch_prepare` and
/// `dtex_process_requests` / `dtex_launch_discard`. `id == 0` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DtexLaunch {
    /// Opaque; 0 = null.
    pub id: u64,
}

/// The fills started by one `dtex_process_requests`. `id == 0` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DtexTicket {
    /// Opaque; 0 = null.
    pub id: u64,
}

/// A blocking texture cache (OIIO-style lookups). `id == 0` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DtexCache {
    /// Opaque; 0 = null.
    pub id: u64,
}

/// Bits of the slot index in an id.
const SLOT_BITS: u32 = 28;
/// Most slots of one registry (live handles of one kind).
const MAX_SLOTS: usize = 1 << SLOT_BITS;

struct Slot<T> {
    /// The generation of the current (or next) occupant; never 0.
    generation: u32,
    value: Option<Arc<T>>,
}

struct Slots<T> {
    entries: Vec<Slot<T>>,
    free: Vec<u32>,
}

/// A registry of one kind of handle.
pub struct Registry<T> {
    kind: u64,
    name: &'static str,
    slots: RwLock<Slots<T>>,
}

impl<T> Registry<T> {
    /// An empty registry for handles tagged `kind` (1..=15), called `name` in messages.
    pub const fn new(kind: u64, name: &'static str) -> Registry<T> {
        Registry {
            kind,
            name,
            slots: RwLock::new(Slots {
                entries: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    /// Register `value`; returns its id (never 0).
    pub fn insert(&self, value: Arc<T>) -> ApiResult<u64> {
        let mut slots = self.slots.write();
        let slot = match slots.free.pop() {
            Some(i) => i as usize,
            None => {
                if slots.entries.len() >= MAX_SLOTS {
                    return Err(ApiError::invalid_argument(format!(
                        "too many live {} handles ({MAX_SLOTS}); destroy some",
                        self.name
                    )));
                }
                slots.entries.push(Slot {
                    generation: 1,
                    value: None,
                });
                slots.entries.len() - 1
            }
        };
        let entry = &mut slots.entries[slot];
        entry.value = Some(value);
        Ok(((entry.generation as u64) << 32) | (self.kind << SLOT_BITS) | slot as u64)
    }

    /// Split an id into its slot and generation, if it is of this kind.
    #[inline]
    fn decode(&self, id: u64) -> Option<(usize, u32)> {
        let low = id as u32 as u64;
        let generation = (id >> 32) as u32;
        (generation != 0 && low >> SLOT_BITS == self.kind)
            .then_some(((low & (MAX_SLOTS as u64 - 1)) as usize, generation))
    }

    /// The object of `id`, or `DTEX_STATUS_INVALID_HANDLE`.
    #[inline]
    pub fn get(&self, id: u64) -> ApiResult<Arc<T>> {
        self.decode(id)
            .and_then(|(slot, generation)| {
                let slots = self.slots.read();
                let s = slots.entries.get(slot)?;
                (s.generation == generation).then(|| s.value.clone())?
            })
            .ok_or_else(|| ApiError::invalid_handle(self.name, id))
    }

    /// Unregister `id` and return its object (drop it outside any lock of the caller), or
    /// `DTEX_STATUS_INVALID_HANDLE`.
    pub fn remove(&self, id: u64) -> ApiResult<Arc<T>> {
        let removed = self.decode(id).and_then(|(slot, generation)| {
            let mut slots = self.slots.write();
            let s = slots.entries.get_mut(slot)?;
            if s.generation != generation {
                return None;
            }
            let value = s.value.take()?;
            s.generation = next_generation(s.generation);
            slots.free.push(slot as u32);
            Some(value)
        });
        removed.ok_or_else(|| ApiError::invalid_handle(self.name, id))
    }

    /// Unregister every object for which `pred` holds; returns them (drop them outside any
    /// lock of the caller).
    pub fn remove_where(&self, pred: impl Fn(&T) -> bool) -> Vec<Arc<T>> {
        let mut slots = self.slots.write();
        let mut removed = Vec::new();
        let mut freed = Vec::new();
        for (i, s) in slots.entries.iter_mut().enumerate() {
            if s.value.as_deref().is_some_and(&pred) {
                removed.extend(s.value.take());
                s.generation = next_generation(s.generation);
                freed.push(i as u32);
            }
        }
        slots.free.extend(freed);
        removed
    }

    /// Live handles in the registry.
    pub fn len(&self) -> usize {
        let slots = self.slots.read();
        slots.entries.len() - slots.free.len()
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The generation after `g`, skipping 0 (ids with generation 0 would be ambiguous with the
/// null handle's).
fn next_generation(g: u32) -> u32 {
    g.checked_add(1).unwrap_or(1)
}

/// Wait until `arc` is the only reference left (other threads finish the calls they are in
/// with their clones; no new clone can be made once the handle is unregistered), then
/// return the object.
pub fn into_unique<T>(mut arc: Arc<T>) -> T {
    // Calls are short (a lookup, a batch): yield at first, then sleep briefly so that a
    // long one (a blocking cache lookup reading a file) is not spun on.
    for attempt in 0u32.. {
        match Arc::try_unwrap(arc) {
            Ok(value) => return value,
            Err(shared) => {
                arc = shared;
                if attempt < 100 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
        }
    }
    unreachable!("the loop above only ends by returning")
}
