//! Ptex textures streamed by the engine (`docs/PTEX.md`): a `.ptx` file becomes a
//! [`PtexTexture`], whose units (a face at one resolution, or a tile of a large one) are
//! packed into 64 KiB pages of an ordinary paged texture ([`PtexPages`]) — so they share
//! the one budget with EXR textures and go through the same requests, fills, eviction,
//! second chance and statistics — and are filtered by [`crate::sampling::ptex`].
//!
//! - Multi-pass: [`Loader::create_ptex_texture`], then [`Launch::ptex_sample`] in launches
//!   (a missing unit records a request for its page; the value is the face's constant
//!   colour, non-resident) and `process_requests` between them.
//! - Blocking: [`TextureCache::create_ptex_texture`] and [`TextureCache::ptex_sample`]
//!   (missing pages are filled in the calling thread, as for tiled textures).
//!
//! Registration reads the file's header; the rest is parsed when the engine opens the
//! pages texture, at its first lookup ([`LazyPtexPages`]; docs/PTEX.md, "Open files").

use crate::cache::{blocking_batch, blocking_lookup, TextureCache};
use crate::error::{Error, Result};
use crate::ids::TextureId;
use crate::requests::Engine;
use crate::sampling::ptex::{ptex_sample, EnginePtex, PtexFilterOptions, PtexSampled};
use crate::sampling::{CpuView, Sample, SampleOptions};
use crate::sources::ptex::{
    LazyPtexPages, PtexError, PtexErrorKind, PtexOptions, PtexPages, UnitFill,
};
use crate::sources::FileHandles;
use crate::textures::{FilterMode, MipFilter, TextureDesc};
use crate::{Launch, Loader, TILE_BYTES};
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

/// A Ptex file registered with a loader: its pages texture and, once the file has been
/// parsed (at the texture's first lookup, or when [`PtexTexture::pages`] asks), the
/// packing of its units.
#[derive(Clone, Debug)]
pub struct PtexTexture {
    id: TextureId,
    source: Arc<LazyPtexPages>,
}

/// How well a Ptex texture's units fill the pages they are packed in.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PtexPacking {
    /// Pages counted.
    pub pages: u64,
    /// Bytes of unit data on them.
    pub unit_bytes: u64,
    /// `unit_bytes / (pages × 64 KiB)`: the useful share of the budget they take (1 when no
    /// page is counted).
    pub efficiency: f64,
}

impl PtexPacking {
    /// The packing of every unit of `pages` (without registering it anywhere: what a
    /// texture of that file would take).
    pub fn of_pages(pages: &PtexPages) -> PtexPacking {
        let layout = pages.layout();
        PtexPacking::new(layout.num_pages().into(), layout.unit_bytes())
    }

    fn new(pages: u64, unit_bytes: u64) -> PtexPacking {
        let efficiency = if pages == 0 {
            1.0
        } else {
            unit_bytes as f64 / (pages as f64 * TILE_BYTES as f64)
        };
        PtexPacking {
            pages,
            unit_bytes,
            efficiency,
        }
    }
}

impl PtexTexture {
    /// Register the pages texture of the Ptex file at `path` with `engine`, read through
    /// the process-wide bounded set of open files ([`FileHandles::default_shared`]). Only
    /// the header is read now: a file that cannot be read or whose header is corrupt is
    /// [`Error::Io`]; one that is not Ptex, or of a version or type the reader does not
    /// serve, [`Error::Unsupported`]; both name the file. The rest of the file is parsed
    /// when the engine opens the texture (its first lookup); a file that fails then is a
    /// failed texture, whose lookups give zeros, resident, and whose error
    /// [`PtexTexture::pages`] returns.
    pub fn create(engine: &Engine, path: impl AsRef<Path>) -> Result<PtexTexture> {
        Self::create_with_handles(engine, path, FileHandles::default_shared())
    }

    /// Register the Ptex file at `path`, read through `handles`, with `engine`: its header
    /// is read now, its structure when the texture is opened, its texels when pages are
    /// filled, the file held open only while the set keeps it (at most
    /// `handles.max_open_files()` files at once).
    pub fn create_with_handles(
        engine: &Engine,
        path: impl AsRef<Path>,
        handles: Arc<FileHandles>,
    ) -> Result<PtexTexture> {
        Self::create_filled(engine, path.as_ref(), handles, UnitFill::Eager)
    }

    /// Register the Ptex file at `path`, read through `handles`, its pages filled as
    /// `fill` says (lazily for blocking caches, whose lookups decode units in place).
    pub fn create_filled(
        engine: &Engine,
        path: &Path,
        handles: Arc<FileHandles>,
        fill: UnitFill,
    ) -> Result<PtexTexture> {
        let cache = engine.ptex_decode_cache();
        let source = LazyPtexPages::new(path, PtexOptions::default(), handles, fill, cache)
            .map_err(|e| error_of(path, e))?;
        Self::register(engine, Arc::new(source))
    }

    fn register(engine: &Engine, source: Arc<LazyPtexPages>) -> Result<PtexTexture> {
        // Point filtering: device code reads the packed bytes back from the pages
        // texture's texels (docs/PTEX.md, "On the device"); a linear filter would blend them.
        let desc = TextureDesc {
            filter: FilterMode::Point,
            mip_filter: MipFilter::Point,
            ..TextureDesc::default()
        };
        let id = engine.create_texture(source.clone(), desc)?;
        Ok(PtexTexture { id, source })
    }

    /// The id of the pages texture (its statistics, lifecycle and errors are the engine's).
    pub fn id(&self) -> TextureId {
        self.id
    }

    /// The file and the packing of its units: parsed now, in this thread, if no lookup has
    /// opened the texture yet. The parse's error (naming the file) if it fails, as
    /// [`PtexTexture::create`] maps it.
    pub fn pages(&self) -> Result<&Arc<PtexPages>> {
        let path = self.source.path();
        self.source.pages().map_err(|e| error_of(path, e))
    }

    /// The number of faces (from the header, read at registration: no parse).
    pub fn num_faces(&self) -> u32 {
        self.source.num_faces()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.source.path()
    }

    /// The file and the packing of its units if the file has been parsed (no parse now).
    pub fn pages_if_parsed(&self) -> Option<&Arc<PtexPages>> {
        self.source.pages_if_parsed()
    }

    /// The packing of every unit of the file (all pages), the file parsed now if needed
    /// ([`PtexTexture::pages`]).
    pub fn packing(&self) -> Result<PtexPacking> {
        Ok(PtexPacking::of_pages(self.pages()?))
    }

    /// The packing of the pages resident in `engine` now: the useful share of the budget
    /// this texture holds (none before the file is parsed).
    pub fn resident_packing(&self, engine: &Engine) -> PtexPacking {
        let Some(pages) = self.pages_if_parsed() else {
            return PtexPacking::new(0, 0);
        };
        let Some((start, _)) = engine.texture_pages(self.id) else {
            return PtexPacking::new(0, 0);
        };
        let Some(layout) = engine.texture_layout(self.id) else {
            return PtexPacking::new(0, 0);
        };
        let pack = pages.layout();
        let (mut pages, mut bytes) = (0u64, 0u64);
        for p in 0..pack.num_pages() {
            let (tx, ty) = PtexPages::tile_of_page(p);
            let page = start.0 + layout.tile_page_offset(0, tx, ty);
            if engine.page_table().is_resident(page) {
                pages += 1;
                bytes += u64::from(pack.page_useful_bytes(p));
            }
        }
        PtexPacking::new(pages, bytes)
    }
}

/// One lookup of [`TextureCache::ptex_sample_batch`]: a texture, a face, a point of it and
/// the footprint, as the arguments of [`TextureCache::ptex_sample`].
#[derive(Clone, Copy, Debug)]
pub struct PtexLookup<'a> {
    /// The texture.
    pub texture: &'a PtexTexture,
    /// The face.
    pub face: u32,
    /// (u, v) in the face.
    pub uv: [f32; 2],
    /// The footprint: (dudx, dvdx, dudy, dvdy).
    pub d: [f32; 4],
}

/// The answer of a lookup of a texture whose file has not been parsed (`sampled`, from
/// [`EnginePtex::opened`]): zeros.
fn unopened(out: &mut [f32], sampled: PtexSampled) -> PtexSampled {
    out.fill(0.0);
    sampled
}

/// The Error of a Ptex file's registration or parse: [`Error::Unsupported`] for a file that
/// is not Ptex or that the reader does not serve (or whose units need more pages than a
/// texture holds), else [`Error::Io`]; both name the file.
fn error_of(path: &Path, e: PtexError) -> Error {
    match e.kind {
        PtexErrorKind::NotPtex | PtexErrorKind::Unsupported => Error::Unsupported(e.to_string()),
        _ => Error::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        },
    }
}

/// Filter through `store`, writing `out`; a failed pages texture reads as constants,
/// resident.
#[allow(clippy::too_many_arguments)]
fn sample_store(
    store: &EnginePtex<'_>,
    face: u32,
    uv: [f32; 2],
    d: [f32; 4],
    options: &PtexFilterOptions,
    out: &mut [f32],
) -> PtexSampled {
    let s = ptex_sample(
        store, face, uv[0], uv[1], d[0], d[1], d[2], d[3], options, out,
    );
    PtexSampled {
        resident: s.resident || store.failed(),
        ..s
    }
}

impl Loader {
    /// Register the Ptex file at `path` (its header read now, the rest at its first lookup:
    /// [`PtexTexture::create`]).
    pub fn create_ptex_texture(&self, path: impl AsRef<Path>) -> Result<PtexTexture> {
        PtexTexture::create(self.engine(), path)
    }
}

impl Loader {
    /// Register the Ptex file at `path`, read through `handles` (see
    /// [`PtexTexture::create_with_handles`]).
    pub fn create_ptex_texture_with_handles(
        &self,
        path: impl AsRef<Path>,
        handles: Arc<FileHandles>,
    ) -> Result<PtexTexture> {
        PtexTexture::create_with_handles(self.engine(), path, handles)
    }
}

impl Launch {
    /// Filter `texture` at (`u`, `v`) of `face` over the footprint (`dudx`, `dvdx`),
    /// (`dudy`, `dvdy`) (see [`crate::sampling::ptex`]); a missing unit records a request
    /// for its page and the value is the face's constant colour, non-resident.
    #[allow(clippy::too_many_arguments)]
    pub fn ptex_sample(
        &self,
        texture: &PtexTexture,
        face: u32,
        u: f32,
        v: f32,
        dudx: f32,
        dvdx: f32,
        dudy: f32,
        dvdy: f32,
        options: &PtexFilterOptions,
        out: &mut [f32],
    ) -> PtexSampled {
        match EnginePtex::opened(self.view(), texture.id, &texture.source) {
            Ok(store) => sample_store(&store, face, [u, v], [dudx, dvdx, dudy, dvdy], options, out),
            Err(sampled) => unopened(out, sampled),
        }
    }

    /// Every lookup of `queries` as [`Launch::ptex_sample`] would give it, query `i`
    /// writing `out[i * stride ..][.. stride]` and reporting in `sampled[i]`; consecutive
    /// queries of one texture share its sampler and the unit and page they located last.
    ///
    /// Errors: [`Error::InvalidArgument`] if `out` holds fewer than `queries.len() ×
    /// stride` values or `sampled` fewer than `queries.len()` entries (nothing is looked up).
    pub fn ptex_sample_batch(
        &self,
        queries: &[PtexLookup<'_>],
        options: &PtexFilterOptions,
        stride: usize,
        out: &mut [f32],
        sampled: &mut [PtexSampled],
    ) -> Result<()> {
        check_batch(queries.len(), stride, out.len(), sampled.len())?;
        let which = 0..queries.len();
        let mut missed = Vec::new();
        sample_batch(
            self.view(),
            queries,
            which,
            options,
            stride,
            out,
            sampled,
            &mut missed,
        );
        Ok(())
    }
}

/// [`Error::InvalidArgument`] unless `values` floats and `results` entries hold `n`
/// queries of `stride` values.
fn check_batch(n: usize, stride: usize, values: usize, results: usize) -> Result<()> {
    if n.checked_mul(stride).is_none_or(|v| values < v) || results < n {
        return Err(Error::InvalidArgument(format!(
            "ptex_sample_batch: {n} queries of {stride} values need {} values and {n} \
             results; given {values} and {results}",
            n.saturating_mul(stride),
        )));
    }
    Ok(())
}

/// Sample the queries `which` lists through `view`, one store while consecutive queries
/// use the same texture; the queries that were not resident go onto `missed` (in order).
#[allow(clippy::too_many_arguments)]
fn sample_batch(
    view: CpuView<'_>,
    queries: &[PtexLookup<'_>],
    which: impl IntoIterator<Item = usize>,
    options: &PtexFilterOptions,
    stride: usize,
    out: &mut [f32],
    sampled: &mut [PtexSampled],
    missed: &mut Vec<usize>,
) {
    let mut store: Option<EnginePtex<'_>> = None;
    for i in which {
        let q = &queries[i];
        let out = &mut out[i * stride..][..stride];
        let store = match store.take() {
            Some(s) if s.texture_id() == q.texture.id => store.insert(s),
            _ => match EnginePtex::opened(view, q.texture.id, &q.texture.source) {
                Ok(s) => store.insert(s),
                Err(s) => {
                    sampled[i] = unopened(out, s);
                    if !s.resident {
                        missed.push(i);
                    }
                    continue;
                }
            },
        };
        let s = sample_store(store, q.face, q.uv, q.d, options, out);
        sampled[i] = s;
        if !s.resident {
            missed.push(i);
        }
    }
}

impl TextureCache {
    /// Register the Ptex file at `path` (its header read now, the rest at its first lookup:
    /// [`PtexTexture::create`]). Its pages are filled lazily: a page costs only the units
    /// lookups decode in it.
    pub fn create_ptex_texture(&self, path: impl AsRef<Path>) -> Result<PtexTexture> {
        self.create_ptex_texture_with_handles(path, FileHandles::default_shared())
    }

    /// Register the Ptex file at `path`, read through `handles` (see
    /// [`PtexTexture::create_with_handles`]), its pages filled lazily.
    pub fn create_ptex_texture_with_handles(
        &self,
        path: impl AsRef<Path>,
        handles: Arc<FileHandles>,
    ) -> Result<PtexTexture> {
        let engine = self.loader().engine();
        PtexTexture::create_filled(engine, path.as_ref(), handles, UnitFill::Lazy)
    }

    /// Filter `texture` as [`Launch::ptex_sample`], loading missing pages in this thread;
    /// if the budget cannot hold the footprint, the face's constant colour, non-resident.
    #[allow(clippy::too_many_arguments)]
    pub fn ptex_sample(
        &self,
        texture: &PtexTexture,
        face: u32,
        u: f32,
        v: f32,
        dudx: f32,
        dvdx: f32,
        dudy: f32,
        dvdy: f32,
        options: &PtexFilterOptions,
        out: &mut [f32],
    ) -> PtexSampled {
        let cell = RefCell::new((
            out,
            PtexSampled {
                channels: 0,
                resident: true,
            },
        ));
        blocking_lookup(self.loader(), &SampleOptions::default(), |view, _| {
            let mut guard = cell.borrow_mut();
            let (out, result) = &mut *guard;
            *result = match EnginePtex::opened(view, texture.id, &texture.source) {
                Ok(store) => {
                    sample_store(&store, face, [u, v], [dudx, dvdx, dudy, dvdy], options, out)
                }
                Err(sampled) => unopened(out, sampled),
            };
            Sample::new([0.0; 4], result.resident)
        });
        let (_, result) = cell.into_inner();
        result
    }

    /// Filter every lookup of `queries` as [`TextureCache::ptex_sample`] would one by one,
    /// with the same results: query `i` writes `out[i * stride ..][.. stride]` and reports
    /// in `sampled[i]`. Faster than a call per query: a chunk of queries shares one pinned
    /// view of the page table, and consecutive queries of one texture share its sampler and
    /// the unit and page they located last (a renderer's batch of shading points, or a
    /// coherent ray packet, gains most).
    ///
    /// Errors: [`Error::InvalidArgument`] if `out` holds fewer than `queries.len() ×
    /// stride` values or `sampled` fewer than `queries.len()` entries (nothing is looked up).
    pub fn ptex_sample_batch(
        &self,
        queries: &[PtexLookup<'_>],
        options: &PtexFilterOptions,
        stride: usize,
        out: &mut [f32],
        sampled: &mut [PtexSampled],
    ) -> Result<()> {
        let n = queries.len();
        check_batch(n, stride, out.len(), sampled.len())?;
        let results = RefCell::new((out, sampled));
        blocking_batch(
            self.loader(),
            &SampleOptions::default(),
            n,
            |view, _, pending, missed| {
                let mut guard = results.borrow_mut();
                let (out, sampled) = &mut *guard;
                let which = pending.iter().copied();
                sample_batch(view, queries, which, options, stride, out, sampled, missed);
            },
        );
        Ok(())
    }
}

pub mod device;

#[cfg(test)]
mod tests;
