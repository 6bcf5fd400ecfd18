//! Bounded caches of decoded face data: the sources that reductions are computed from. A
//! unit of an anisotropic resolution is reduced on the fly from the next larger
//! resolution, recursively down to a stored level (format note §15); the units of one face
//! at neighbouring resolutions share that chain, and a lookup that needs one usually needs
//! the others soon. The reference library keeps every resolution it made in its cache;
//! demandtex keeps the units themselves in the page budget and the chain's sources here,
//! first in first out.
//!
//! Each engine that has Ptex textures has one ([`DecodeCache::with_capacity`]), taken from
//! its texture budget (`Engine::ptex_decode_cache`); files opened on their own
//! ([`super::PtexFile::open`]) share a process-wide one ([`shared`]) of
//! [`decode_cache_bytes`] ([`DEFAULT_CAPACITY`] unless [`set_decode_cache_bytes`] says
//! otherwise; 0 turns it off), which is also the most an engine's takes.

use super::decode::FaceData;
use super::faces::Res;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Bytes of decoded data a cache holds at most by default, for all its files together.
pub const DEFAULT_CAPACITY: usize = 64 << 20;

static CAPACITY: AtomicUsize = AtomicUsize::new(DEFAULT_CAPACITY);

/// The most bytes of decoded face data the process-wide decode cache holds, and the most
/// an engine's takes from its budget (when its first Ptex texture is registered).
pub fn decode_cache_bytes() -> usize {
    CAPACITY.load(Ordering::Relaxed)
}

/// Set the most bytes of decoded face data the process-wide decode cache holds (0: keep
/// nothing; entries beyond it go at the next insertion), and the most an engine that
/// registers its first Ptex texture after this call takes from its budget.
pub fn set_decode_cache_bytes(bytes: usize) {
    CAPACITY.store(bytes, Ordering::Relaxed);
}

/// Largest entry kept (larger faces are read by tiles or regions, not whole).
const MAX_ENTRY: usize = 1 << 20;

/// An entry's key: the file (a number unique to each open file), the face, the resolution.
type Key = (u64, u32, Res);

#[derive(Default)]
struct Entries {
    map: HashMap<Key, (Arc<FaceData>, bool)>,
    order: VecDeque<Key>,
    bytes: usize,
}

/// A cache of decoded face data (see the module documentation).
pub struct DecodeCache {
    entries: Mutex<Entries>,
    /// `None`: the process-wide setting ([`decode_cache_bytes`]); else its own, which an
    /// engine raises as it takes more of its budget ([`grow`](Self::grow)).
    capacity: Option<AtomicUsize>,
}

impl std::fmt::Debug for DecodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeCache")
            .field("capacity", &self.capacity())
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// A number unique in this process, never 0: a newly opened file's key here, a packing's
/// key in the per-thread memo of unit locations (`locate_cache`).
pub(crate) fn unique_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The process-wide cache, of files opened on their own.
pub(crate) fn shared() -> Arc<DecodeCache> {
    static CACHE: OnceLock<Arc<DecodeCache>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            Arc::new(DecodeCache {
                entries: Mutex::new(Entries::default()),
                capacity: None,
            })
        })
        .clone()
}

impl DecodeCache {
    /// An empty cache of at most `bytes` (0 keeps nothing).
    pub fn with_capacity(bytes: usize) -> DecodeCache {
        DecodeCache {
            entries: Mutex::new(Entries::default()),
            capacity: Some(AtomicUsize::new(bytes)),
        }
    }

    /// The most bytes it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
            .as_ref()
            .map_or_else(decode_cache_bytes, |c| c.load(Ordering::Relaxed))
    }

    /// Hold up to `bytes` more (a cache of its own; the process-wide one follows its
    /// setting).
    pub(crate) fn grow(&self, bytes: usize) {
        if let Some(c) = &self.capacity {
            c.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.entries.lock().bytes
    }

    /// The data of `face` at `res` of file `file`, and whether it is uniform, if cached
    /// (shared, not copied: a hit costs no copy of the texels, under the lock or after).
    pub(crate) fn get(&self, file: u64, face: u32, res: Res) -> Option<(Arc<FaceData>, bool)> {
        self.entries.lock().map.get(&(file, face, res)).cloned()
    }

    /// Keep `data` (dropping the oldest entries beyond the capacity); too large an entry is
    /// not kept.
    pub(crate) fn insert(
        &self,
        file: u64,
        face: u32,
        res: Res,
        data: &Arc<FaceData>,
        uniform: bool,
    ) {
        let size = data.bytes().len();
        let capacity = self.capacity();
        if size > MAX_ENTRY.min(capacity) {
            return;
        }
        let mut e = self.entries.lock();
        let key = (file, face, res);
        if e.map.contains_key(&key) {
            return;
        }
        while e.bytes + size > capacity {
            let Some(old) = e.order.pop_front() else {
                break;
            };
            if let Some((d, _)) = e.map.remove(&old) {
                e.bytes -= d.bytes().len();
            }
        }
        e.map.insert(key, (data.clone(), uniform));
        e.order.push_back(key);
        e.bytes += size;
    }

    /// Drop every entry of `file` (it is closing).
    pub(crate) fn forget(&self, file: u64) {
        let mut e = self.entries.lock();
        let Entries { map, order, bytes } = &mut *e;
        order.retain(|k| {
            if k.0 != file {
                return true;
            }
            if let Some((d, _)) = map.remove(k) {
                *bytes -= d.bytes().len();
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_at_most_its_capacity_first_in_first_out() {
        let cache = DecodeCache::with_capacity(DEFAULT_CAPACITY);
        let file = unique_id();
        let res = Res::new(9, 9); // 512 × 512 × 3 bytes = 768 KiB
        let data = Arc::new(FaceData::packed(res, 3, vec![7; res.texels() * 3]));
        for face in 0..100 {
            cache.insert(file, face, res, &data, false);
            assert!(cache.bytes() <= cache.capacity());
        }
        assert!(cache.get(file, 0, res).is_none(), "the oldest went first");
        let hit = cache.get(file, 39, res).unwrap().0;
        assert!(
            Arc::ptr_eq(&hit, &data),
            "a hit shares the entry, it copies nothing"
        );
        let big = Res::new(10, 10);
        cache.insert(
            file,
            99,
            big,
            &Arc::new(FaceData::packed(big, 3, vec![0; big.texels() * 3])),
            false,
        );
        assert!(
            cache.get(file, 99, big).is_none(),
            "entries over 1 MiB are not kept"
        );
        cache.forget(file);
        assert_eq!(cache.bytes(), 0);
        assert!(cache.get(file, 39, res).is_none());
    }
}
