//! The device memory behind one `DtexDeviceContext`: the page table, reference, residence
//! and LRU arrays sized from the engine's page space (the same word layout as the host's
//! [`PageTable`](demandtex::paging::PageTable)), the request / stale / filled / invalidated
//! lists and their counts, with upload and download helpers and the page-layer steps as
//! kernel launches ([`PagingKernels`]).
//!
//! The steps here are synchronous where they return results (they read them back); the
//! buffers are plain cudarc [`CudaSlice`]s on one stream.

use crate::kernels::PagingKernels;
use crate::ops::safe;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};
use demandtex::error::{Error, Result};
use demandtex::ids::PageId;
use demandtex::paging::bits::words_for_bits;
use demandtex::paging::{DeviceContext, PageLayout, PageMapping, StalePage};
use std::sync::Arc;

/// A [`PageMapping`] in device memory (the kernels' `DtexPageMapping`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct DeviceMapping(PageMapping);

// SAFETY: `PageMapping` is `#[repr(C)]` plain data (u32, u32, u64), the kernels'
// `DtexPageMapping` (size asserted on both sides); the wrapper is transparent.
unsafe impl DeviceRepr for DeviceMapping {}
// SAFETY: all-zero bits are a valid `PageMapping` (page 0, age 0, entry 0).
unsafe impl ValidAsZeroBits for DeviceMapping {}

/// Capacities of the per-launch lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListCapacities {
    /// Requested pages one pull can return.
    pub requested: u32,
    /// Stale pages one pull can return.
    pub stale: u32,
    /// Mappings one push can apply.
    pub filled: u32,
    /// Pages one invalidation can clear.
    pub invalidated: u32,
}

impl Default for ListCapacities {
    fn default() -> Self {
        ListCapacities {
            requested: 1 << 14,
            stale: 1 << 14,
            filled: 1 << 14,
            invalidated: 1 << 14,
        }
    }
}

/// One of the per-page word arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageWords {
    /// One bit per page: used in this launch.
    Reference,
    /// One bit per page: resident.
    Residence,
    /// Four bits per page: LRU age.
    Lru,
}

/// What one pull found on the device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevicePull {
    /// Requested pages (referenced, not resident), ascending; at most the capacity.
    pub requested: Vec<PageId>,
    /// How many pages were requested (may exceed `requested.len()`: the list overflowed).
    pub requested_total: u32,
    /// Stale pages with their ages, ascending by page; at most the capacity.
    pub stale: Vec<StalePage>,
    /// How many pages were stale (may exceed `stale.len()`).
    pub stale_total: u32,
    /// Stale pages per age (16 counters).
    pub stale_age_counts: [u32; 16],
}

/// Device buffers for one context (see the module comment).
pub struct DeviceContextBuffers {
    stream: Arc<CudaStream>,
    layout: PageLayout,
    capacities: ListCapacities,
    page_table: CudaSlice<u64>,
    reference: CudaSlice<u32>,
    residence: CudaSlice<u32>,
    lru: CudaSlice<u32>,
    requested: CudaSlice<u32>,
    stale: CudaSlice<u32>,
    stale_ages: CudaSlice<u8>,
    stale_age_counts: CudaSlice<u32>,
    array_lengths: CudaSlice<u32>,
    filled: CudaSlice<DeviceMapping>,
    invalidated: CudaSlice<u32>,
}

impl DeviceContextBuffers {
    /// Zeroed buffers for `layout` and `capacities` on `stream`'s device (every list at
    /// least one entry).
    pub fn new(
        stream: &Arc<CudaStream>,
        layout: PageLayout,
        capacities: ListCapacities,
    ) -> Result<DeviceContextBuffers> {
        let n = layout.num_pages as u64;
        let zeros = |len: usize, what: &str| -> Result<CudaSlice<u32>> {
            safe(&format!("allocating {what}"), || {
                stream.alloc_zeros::<u32>(len.max(1))
            })
        };
        let cap = |c: u32| c.max(1) as usize;
        Ok(DeviceContextBuffers {
            page_table: safe("allocating the page table", || {
                stream.alloc_zeros::<u64>((layout.page_table_entries as usize).max(1))
            })?,
            reference: zeros(words_for_bits(n), "reference bits")?,
            residence: zeros(words_for_bits(n), "residence bits")?,
            lru: zeros(words_for_bits(n * 4), "the LRU table")?,
            requested: zeros(cap(capacities.requested), "the request list")?,
            stale: zeros(cap(capacities.stale), "the stale list")?,
            stale_ages: safe("allocating stale ages", || {
                stream.alloc_zeros::<u8>(cap(capacities.stale))
            })?,
            stale_age_counts: zeros(16, "the stale histogram")?,
            array_lengths: zeros(2, "the list lengths")?,
            filled: safe("allocating the mapping list", || {
                stream.alloc_zeros::<DeviceMapping>(cap(capacities.filled))
            })?,
            invalidated: zeros(cap(capacities.invalidated), "the invalidation list")?,
            stream: stream.clone(),
            layout,
            capacities,
        })
    }

    /// The page space the buffers cover.
    pub fn layout(&self) -> &PageLayout {
        &self.layout
    }

    /// The list capacities.
    pub fn capacities(&self) -> &ListCapacities {
        &self.capacities
    }

    /// The stream every copy and launch of these buffers runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The `DtexDeviceContext` a kernel receives: device addresses of these buffers. It is
    /// a plain value: valid while `self` lives.
    pub fn context(&self, launch_num: u32, flags: u32) -> DeviceContext {
        let s = &*self.stream;
        fn ptr<T>(slice: &CudaSlice<T>, s: &CudaStream) -> u64 {
            slice.device_ptr(s).0
        }
        DeviceContext {
            page_table: ptr(&self.page_table, s) as *mut u64,
            reference_bits: ptr(&self.reference, s) as *mut u32,
            residence_bits: ptr(&self.residence, s) as *mut u32,
            lru_table: ptr(&self.lru, s) as *mut u32,
            requested_pages: ptr(&self.requested, s) as *mut u32,
            stale_pages: ptr(&self.stale, s) as *mut u32,
            array_lengths: ptr(&self.array_lengths, s) as *mut u32,
            filled_pages: ptr(&self.filled, s) as *mut PageMapping,
            invalidated_pages: ptr(&self.invalidated, s) as *mut u32,
            page_table_entries: self.layout.page_table_entries,
            num_pages: self.layout.num_pages,
            max_textures: self.layout.max_textures,
            flags,
            requested_capacity: self.capacities.requested.max(1),
            stale_capacity: self.capacities.stale.max(1),
            filled_capacity: self.capacities.filled.max(1),
            invalidated_capacity: self.capacities.invalidated.max(1),
            launch_num,
            reject_threshold: 0,
        }
    }

    fn words(&self, which: PageWords) -> &CudaSlice<u32> {
        match which {
            PageWords::Reference => &self.reference,
            PageWords::Residence => &self.residence,
            PageWords::Lru => &self.lru,
        }
    }

    /// Words in `which` (bits: 32 pages a word; LRU: 8).
    pub fn word_count(&self, which: PageWords) -> usize {
        self.words(which).len()
    }

    /// Overwrite words `[first, first + words.len())` of `which`.
    pub fn upload_words(&mut self, which: PageWords, first: usize, words: &[u32]) -> Result<()> {
        let stream = self.stream.clone();
        let dst = match which {
            PageWords::Reference => &mut self.reference,
            PageWords::Residence => &mut self.residence,
            PageWords::Lru => &mut self.lru,
        };
        let end = first.checked_add(words.len()).filter(|&e| e <= dst.len());
        let Some(end) = end else {
            return Err(Error::InvalidArgument(format!(
                "words {first}..+{} of a {which:?} array of {}",
                words.len(),
                dst.len()
            )));
        };
        let mut view = dst.slice_mut(first..end);
        safe("cuMemcpyHtoDAsync", || stream.memcpy_htod(words, &mut view))
    }

    /// Every word of `which`.
    pub fn download_words(&self, which: PageWords) -> Result<Vec<u32>> {
        self.download(self.words(which))
    }

    /// Overwrite page-table entries `[first, first + entries.len())`.
    pub fn upload_page_table(&mut self, first: u32, entries: &[u64]) -> Result<()> {
        let first = first as usize;
        let end = first
            .checked_add(entries.len())
            .filter(|&e| e <= self.layout.page_table_entries as usize);
        let Some(end) = end else {
            return Err(Error::InvalidArgument(format!(
                "page-table entries {first}..+{} of {}",
                entries.len(),
                self.layout.page_table_entries
            )));
        };
        let stream = self.stream.clone();
        let mut view = self.page_table.slice_mut(first..end);
        safe("cuMemcpyHtoDAsync", || {
            stream.memcpy_htod(entries, &mut view)
        })
    }

    /// Every page-table entry.
    pub fn download_page_table(&self) -> Result<Vec<u64>> {
        let mut v = self.download(&self.page_table)?;
        v.truncate(self.layout.page_table_entries as usize);
        Ok(v)
    }

    /// A synchronous copy of a whole buffer to the host.
    fn download<T: DeviceRepr + Default + Clone>(&self, src: &CudaSlice<T>) -> Result<Vec<T>> {
        self.download_first(src, src.len())
    }

    /// Zero the list counts (and the stale histogram) before a pull or collection.
    fn reset_lengths(&mut self) -> Result<()> {
        let stream = self.stream.clone();
        safe("cuMemsetD8Async", || {
            stream.memset_zeros(&mut self.array_lengths)
        })?;
        safe("cuMemsetD8Async", || {
            stream.memset_zeros(&mut self.stale_age_counts)
        })
    }

    /// A synchronous copy of the first `n` elements of `src` to the host (none when `n` is
    /// 0: no copy, no synchronisation).
    fn download_first<T: DeviceRepr + Default + Clone>(
        &self,
        src: &CudaSlice<T>,
        n: usize,
    ) -> Result<Vec<T>> {
        let n = n.min(src.len());
        if n == 0 {
            return Ok(Vec::new());
        }
        let v = safe("cuMemcpyDtoHAsync", || {
            self.stream.clone_dtoh(&src.slice(0..n))
        })?;
        safe("cuStreamSynchronize", || self.stream.synchronize())?;
        Ok(v)
    }

    /// Read back the lists a pull or collection wrote: their lengths, then only the entries
    /// written (a launch that requested nothing reads back two words and the histogram).
    fn read_lists(&self, with_requests: bool) -> Result<DevicePull> {
        let lengths = self.download(&self.array_lengths)?;
        let (requested_total, stale_total) = (lengths[0], lengths[1]);
        let mut out = DevicePull {
            requested_total,
            stale_total,
            ..DevicePull::default()
        };
        if with_requests {
            let n = requested_total.min(self.capacities.requested.max(1)) as usize;
            let mut requested = self.download_first(&self.requested, n)?;
            requested.sort_unstable();
            out.requested = requested.into_iter().map(PageId).collect();
        }
        let n = stale_total.min(self.capacities.stale.max(1)) as usize;
        let pages = self.download_first(&self.stale, n)?;
        let ages = self.download_first(&self.stale_ages, n)?;
        out.stale = pages
            .iter()
            .zip(&ages)
            .map(|(&page, &age)| StalePage {
                page: PageId(page),
                age,
            })
            .collect();
        out.stale.sort_unstable_by_key(|s| s.page);
        let counts = self.download(&self.stale_age_counts)?;
        out.stale_age_counts.copy_from_slice(&counts[..16]);
        Ok(out)
    }

    /// The pull of launch `launch_num` over pages `[0, end_page)`
    /// (`dtex_pull_requests`): requests, LRU ageing, stale pages of age ≥ `lru_threshold`.
    pub fn pull(
        &mut self,
        kernels: &PagingKernels,
        launch_num: u32,
        end_page: u32,
        lru_threshold: u32,
    ) -> Result<DevicePull> {
        self.reset_lengths()?;
        let ctx = self.context(launch_num, 0);
        let ages = self.stale_ages.device_ptr(&self.stream).0;
        let counts = self.stale_age_counts.device_ptr(&self.stream).0;
        // SAFETY: `ctx` addresses these buffers, sized for the layout and capacities it
        // states; the counts were zeroed above on the same stream.
        unsafe {
            kernels.pull_requests(&self.stream, &ctx, end_page, lru_threshold, ages, counts)
        }?;
        self.read_lists(true)
    }

    /// The stale pages of age ≥ `min_age` over `[0, end_page)`, without ageing
    /// (`dtex_collect_stale`; `requested` stays empty).
    pub fn collect_stale(
        &mut self,
        kernels: &PagingKernels,
        launch_num: u32,
        end_page: u32,
        min_age: u32,
    ) -> Result<DevicePull> {
        self.reset_lengths()?;
        let ctx = self.context(launch_num, 0);
        let ages = self.stale_ages.device_ptr(&self.stream).0;
        // SAFETY: as in `pull`.
        unsafe { kernels.collect_stale(&self.stream, &ctx, end_page, min_age, ages) }?;
        self.read_lists(false)
    }

    /// Clear the reference bits of `[0, end_page)` (`dtex_clear_references`).
    pub fn clear_references(&mut self, kernels: &PagingKernels, end_page: u32) -> Result<()> {
        let ctx = self.context(0, 0);
        // SAFETY: as in `pull`.
        unsafe { kernels.clear_references(&self.stream, &ctx, end_page) }
    }

    /// Make `mappings` resident (`dtex_push_mappings`, in chunks of the list capacity).
    pub fn push_mappings(
        &mut self,
        kernels: &PagingKernels,
        mappings: &[PageMapping],
    ) -> Result<()> {
        let stream = self.stream.clone();
        for chunk in mappings.chunks(self.capacities.filled.max(1) as usize) {
            let chunk: Vec<DeviceMapping> = chunk.iter().copied().map(DeviceMapping).collect();
            let mut view = self.filled.slice_mut(0..chunk.len());
            safe("cuMemcpyHtoDAsync", || {
                stream.memcpy_htod(&chunk, &mut view)
            })?;
            let ctx = self.context(0, 0);
            // SAFETY: the list holds `chunk.len()` ≤ capacity mappings, copied above on the
            // same stream; the rest of `ctx` as in `pull`.
            unsafe { kernels.push_mappings(&stream, &ctx, chunk.len() as u32) }?;
        }
        Ok(())
    }

    /// Make `pages` non-resident (`dtex_invalidate_pages`, in chunks of the capacity).
    pub fn invalidate(&mut self, kernels: &PagingKernels, pages: &[u32]) -> Result<()> {
        let stream = self.stream.clone();
        for chunk in pages.chunks(self.capacities.invalidated.max(1) as usize) {
            let mut view = self.invalidated.slice_mut(0..chunk.len());
            safe("cuMemcpyHtoDAsync", || stream.memcpy_htod(chunk, &mut view))?;
            let ctx = self.context(0, 0);
            // SAFETY: as in `push_mappings`.
            unsafe { kernels.invalidate_pages(&stream, &ctx, chunk.len() as u32) }?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for DeviceContextBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceContextBuffers")
            .field("layout", &self.layout)
            .field("capacities", &self.capacities)
            .finish_non_exhaustive()
    }
}
