//! `TextureCache`: the blocking CPU texture cache, in the spirit of OpenImageIO's
//! `TextureSystem::texture`. A lookup whose footprint is not resident loads the missing
//! tiles in the calling thread and returns the filtered value; concurrent misses on one
//! tile cause one read, the other threads wait for it. It runs on the same page table,
//! tile pool, eviction and statistics as the multi-pass [`Loader`] — it can even share one
//! ([`TextureCache::from_loader`]).
//!
//! ```
//! use demandtex::{LoaderOptions, SampleOptions, TextureCache, TextureDesc};
//! use demandtex::sources::Checkerboard;
//! use demandtex::textures::TexelFormat;
//! use std::sync::Arc;
//!
//! let cache = TextureCache::new(LoaderOptions {
//!     num_pages: 1 << 20,
//!     max_texture_memory: 64 << 20,
//!     ..Default::default()
//! })
//! .unwrap();
//! let tex = cache
//!     .create_texture(Arc::new(Checkerboard::new(4096, 4096, 16, TexelFormat::RGBA8)), TextureDesc::default())
//!     .unwrap();
//! let s = cache.tex2d_grad(tex, 0.3, 0.7, [1.0 / 512.0, 0.0], [0.0, 1.0 / 512.0], &SampleOptions::default());
//! assert!(s.resident);
//! ```
//!
//! # Lookups by file
//! [`texture_for_path`](TextureCache::texture_for_path) registers an OpenEXR file once (the
//! same path gives the same id) and opens it lazily, at its first lookup;
//! [`tex2d_grad_path`](TextureCache::tex2d_grad_path) looks up by path directly (a
//! per-thread map from path to id keeps it off shared locks). Ids are faster: hold them,
//! as OIIO's `TextureHandle`.
//!
//! # The rest of the API
//! Everything that is not a lookup — registering textures and UDIM grids, invalidate /
//! replace / unload, user resources, the cache size, statistics, errors — is the
//! [`Engine`]'s, reached through `Deref` (`cache.create_texture(..)`). Invalidating,
//! replacing or unloading a texture while other threads look it up is safe: a lookup in
//! progress may still return old texels, a fill of the old contents publishes nothing, and
//! memory is reused only once the lookups that could read it are done. A texture registered
//! by path keeps its path when replaced, and gives its fallback colour once unloaded.
//!
//! # When memory runs out
//! A lookup needs its whole footprint resident at once. A fill that must reuse memory
//! another thread's lookup still reads waits for that lookup (bounded), and a lookup that
//! keeps losing its pages to other lookups' fills takes a turn alone, so that, memory
//! allowing, results do not depend on scheduling. If the budget is smaller than the
//! footprints of the lookups in flight, or a read fails, the lookup returns the finest
//! resident coarser level (or the base colour) reported non-resident, and counts it in
//! [`crate::Stats::blocking_fallbacks`]; it never waits forever.

mod lookup;
pub(crate) use lookup::{blocking_batch, blocking_lookup};
#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::ids::{TextureId, UdimId};
use crate::loader::Loader;
use crate::options::LoaderOptions;
use crate::requests::Engine;
use crate::sampling::{self, Sample, SampleDerivatives, SampleOptions};
use crate::sources::file_source;
use crate::textures::{TextureDesc, DEFAULT_FALLBACK_COLOR};
use crate::udim;
pub use lookup::GradLookup;
use parking_lot::RwLock;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What [`TextureCache::texture_info`] says of an opened texture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextureInfo {
    /// Level-0 width in texels.
    pub width: u32,
    /// Level-0 height in texels.
    pub height: u32,
    /// Channels served: 1, 2 or 4 (three-channel files are served as RGBA, alpha 1).
    pub channels: u32,
    /// The texel type served (8- and 16-bit unsigned are normalised by lookups).
    pub texel_type: crate::textures::TexelType,
    /// Mip levels, stored or generated.
    pub num_levels: u32,
    /// The texture's average colour as lookups of the whole texture give it (one channel:
    /// (c, c, c, 1)): the file's hint where it has one (maketx's `oiio:AverageColor` or
    /// constant colour), else its 1×1 level, in half precision. `None` if the lookup
    /// could not be made resident (a budget smaller than the lookups in flight).
    pub average_color: Option<[f32; 4]>,
}

/// A blocking texture cache. `Send + Sync`; clones share the cache.
#[derive(Clone)]
pub struct TextureCache {
    loader: Loader,
    paths: Arc<PathIds>,
}

/// Registered files: path → texture id.
struct PathIds {
    /// Tells caches apart in the per-thread maps.
    uid: u64,
    ids: RwLock<HashMap<PathBuf, TextureId>>,
}

static NEXT_CACHE_UID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Per thread and cache: path → id, so lookups by path take no shared lock.
    static THREAD_PATH_IDS: RefCell<HashMap<u64, HashMap<PathBuf, TextureId>>> =
        RefCell::new(HashMap::new());
}

impl TextureCache {
    /// A cache with its own loader (see [`LoaderOptions`]; `max_texture_memory` is the
    /// cache size). Blocking lookups do not use fill threads, so `fill_threads: 0` (one
    /// per core) means a single one here, for multi-pass launches on [`loader`](Self::loader).
    pub fn new(mut options: LoaderOptions) -> Result<TextureCache> {
        if options.fill_threads == 0 {
            options.fill_threads = 1;
        }
        Ok(TextureCache::from_loader(&Loader::new(options)?))
    }

    /// A blocking cache over an existing loader: the same textures, pool and statistics.
    /// Multi-pass launches and blocking lookups may run at the same time; blocking fills
    /// publish at once, and memory a live launch can see is not reused until it ends.
    pub fn from_loader(loader: &Loader) -> TextureCache {
        TextureCache {
            loader: loader.clone(),
            paths: Arc::new(PathIds {
                uid: NEXT_CACHE_UID.fetch_add(1, Ordering::Relaxed),
                ids: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// The loader underneath (for multi-pass launches, UDIM creation, layouts, errors).
    pub fn loader(&self) -> &Loader {
        &self.loader
    }

    /// The texture of a file (OpenEXR, TIFF/`.tx`, DDS, PNG, JPEG, Radiance HDR, Targa, BMP:
    /// [`file_source`]), registered at the first call for `path` (with
    /// `desc`; later calls return the same id and ignore `desc`). The file is opened at the
    /// first lookup; a missing or bad file gives its fallback colour and
    /// [`Engine::texture_error`] says why.
    pub fn texture_for_path(&self, path: impl AsRef<Path>, desc: TextureDesc) -> Result<TextureId> {
        let path = path.as_ref();
        if let Some(&id) = self.paths.ids.read().get(path) {
            return Ok(id);
        }
        let mut ids = self.paths.ids.write();
        if let Some(&id) = ids.get(path) {
            return Ok(id);
        }
        let id = self.loader.create_texture(file_source(path), desc)?;
        ids.insert(path.to_path_buf(), id);
        Ok(id)
    }

    /// A texture's description, opening it in this thread if no lookup has yet (blocking,
    /// as OpenImageIO's `get_texture_info` answers `resolution`, `channels`, `miplevels`
    /// and `averagecolor`).
    ///
    /// Errors: [`Error::UnknownTexture`](crate::Error::UnknownTexture) for an id this
    /// cache never handed out; the texture's own error ([`Engine::texture_error`]) if its
    /// file is missing or cannot be served (it samples its fallback colour) or it was
    /// unloaded.
    pub fn texture_info(&self, texture: TextureId) -> Result<TextureInfo> {
        if u64::from(texture.0) >= self.texture_count() {
            return Err(crate::Error::UnknownTexture(texture));
        }
        // The whole texture's footprint: the base colour, whose page the open fills.
        let whole = ([1.0, 0.0], [0.0, 1.0]);
        let base = self.tex2d_grad(
            texture,
            0.5,
            0.5,
            whole.0,
            whole.1,
            &SampleOptions::default(),
        );
        if let Some(e) = self.texture_error(texture) {
            return Err(e);
        }
        let Some(layout) = self.texture_layout(texture) else {
            // Opening publishes the layout before the lookup can be resident, and a failed
            // open leaves an error: not expected.
            return Err(crate::Error::Internal(format!(
                "texture {} did not open for its blocking lookup",
                texture.0
            )));
        };
        Ok(TextureInfo {
            width: layout.width,
            height: layout.height,
            channels: layout.format.channels,
            texel_type: layout.format.texel_type,
            num_levels: layout.num_levels(),
            average_color: base.resident.then_some(base.value),
        })
    }

    /// Sample level 0 (blocking).
    pub fn tex2d(&self, texture: TextureId, s: f32, t: f32, options: &SampleOptions) -> Sample {
        self.lookup(options, |view, o| sampling::tex2d(view, texture, s, t, o))
    }

    /// Sample at an explicit level of detail (blocking).
    pub fn tex2d_lod(
        &self,
        texture: TextureId,
        s: f32,
        t: f32,
        lod: f32,
        options: &SampleOptions,
    ) -> Sample {
        self.lookup(options, |view, o| {
            sampling::tex2d_lod(view, texture, s, t, lod, o)
        })
    }

    /// Sample the footprint of the screen-space gradients `ddx`, `ddy` of (s, t)
    /// (blocking; trilinear and anisotropic as the texture's [`TextureDesc`] says).
    #[allow(clippy::too_many_arguments)]
    pub fn tex2d_grad(
        &self,
        texture: TextureId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> Sample {
        self.lookup(options, |view, o| {
            sampling::tex2d_grad(view, texture, s, t, ddx, ddy, o)
        })
    }

    /// [`tex2d_grad`](Self::tex2d_grad) with the derivatives of the value with respect to
    /// s and t, as OpenImageIO's `dresultds` / `dresultdt` (blocking;
    /// [`crate::sampling::tex2d_grad_with_derivatives`]). The derivatives are those of the
    /// value returned: when the footprint could not be made resident and a coarser level
    /// stood in, they are that level's.
    #[allow(clippy::too_many_arguments)]
    pub fn tex2d_grad_with_derivatives(
        &self,
        texture: TextureId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> SampleDerivatives {
        self.lookup(options, |view, o| {
            sampling::tex2d_grad_with_derivatives(view, texture, s, t, ddx, ddy, o)
        })
    }

    /// Sample lat-long environment map `texture` in direction `r` with its screen-space
    /// differentials `drdx`, `drdy` (blocking; [`crate::sampling::environment`]:
    /// OpenImageIO's mapping and filter, periodic in s and clamped in t).
    pub fn environment(
        &self,
        texture: TextureId,
        r: [f32; 3],
        drdx: [f32; 3],
        drdy: [f32; 3],
        up: crate::sampling::environment::UpAxis,
        options: &SampleOptions,
    ) -> Sample {
        self.lookup(options, |view, o| {
            sampling::environment::environment(view, texture, r, drdx, drdy, up, o)
        })
    }

    /// Every lookup of `queries` as [`tex2d_grad`](Self::tex2d_grad) would give it, into
    /// `out[i]`: the same results, faster (a chunk of queries shares one pinned view of
    /// the page table; a query that misses is then looked up on its own).
    ///
    /// Errors: [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `out` is
    /// shorter than `queries` (nothing is looked up).
    pub fn tex2d_grad_batch(
        &self,
        queries: &[GradLookup],
        options: &SampleOptions,
        out: &mut [Sample],
    ) -> Result<()> {
        if out.len() < queries.len() {
            return Err(crate::Error::InvalidArgument(format!(
                "tex2d_grad_batch: {} queries, room for {} results",
                queries.len(),
                out.len()
            )));
        }
        let out = RefCell::new(out);
        lookup::blocking_batch(
            &self.loader,
            options,
            queries.len(),
            |view, o, pending, missed| {
                let mut out = out.borrow_mut();
                for &i in pending {
                    let q = &queries[i];
                    let s = sampling::tex2d_grad(view, q.texture, q.s, q.t, q.ddx, q.ddy, o);
                    out[i] = s;
                    if !s.resident {
                        missed.push(i);
                    }
                }
            },
        );
        Ok(())
    }

    /// [`tex2d_grad`](Self::tex2d_grad) by file path (as OIIO's `texture(filename, ...)`):
    /// the file is registered with [`TextureDesc::file_modes`] at its first use, so it
    /// samples with the wrap modes its file names (maketx's `wrapmodes`), black where it
    /// names none, as OIIO does. A path registered earlier through
    /// [`texture_for_path`](Self::texture_for_path) keeps that description. If it cannot
    /// be registered (too many textures) the result is [`DEFAULT_FALLBACK_COLOR`],
    /// resident.
    #[allow(clippy::too_many_arguments)]
    pub fn tex2d_grad_path(
        &self,
        path: impl AsRef<Path>,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> Sample {
        match self.thread_path_id(path.as_ref()) {
            Ok(texture) => self.tex2d_grad(texture, s, t, ddx, ddy, options),
            Err(e) => {
                tracing::error!("{e}");
                Sample::new(DEFAULT_FALLBACK_COLOR, true)
            }
        }
    }

    /// [`crate::udim::tex2d_grad_udim`], blocking: the tile (or base texture) the
    /// coordinates select is loaded in the calling thread.
    #[allow(clippy::too_many_arguments)]
    pub fn tex2d_grad_udim(
        &self,
        udim: UdimId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> Sample {
        self.lookup(options, |view, o| {
            udim::tex2d_grad_udim(view, udim, s, t, ddx, ddy, o)
        })
    }

    /// [`tex2d_grad_udim`](Self::tex2d_grad_udim) with the derivatives of the value with
    /// respect to the UDIM coordinates (blocking;
    /// [`crate::udim::tex2d_grad_udim_with_derivatives`]).
    #[allow(clippy::too_many_arguments)]
    pub fn tex2d_grad_udim_with_derivatives(
        &self,
        udim: UdimId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> SampleDerivatives {
        self.lookup(options, |view, o| {
            udim::tex2d_grad_udim_with_derivatives(view, udim, s, t, ddx, ddy, o)
        })
    }

    /// The entry of an entry page (a user resource's, say), blocking: if it is not
    /// resident, its callback runs in the calling thread now and the entry is published
    /// at once. `None` if the callback answered "not yet" (ask again later) or failed
    /// (the page is marked failed and never asked again), and for pages without an entry
    /// (`page ≥ page_table_entries`). Concurrent calls for one page cause one callback.
    pub fn map_or_request(&self, page: crate::ids::PageId) -> Option<u64> {
        let engine = self.loader.engine();
        if page.0 >= engine.layout.page_table_entries || engine.is_resource_failed(page) {
            return None;
        }
        if let Some(entry) = engine.pages.map_or_request(page.0) {
            return Some(entry);
        }
        crate::requests::blocking::fill_page(engine, page);
        engine.pages.map_or_request(page.0)
    }

    /// A blocking lookup through `sample`.
    #[inline]
    fn lookup<R: lookup::LookupResult>(
        &self,
        options: &SampleOptions,
        sample: impl Fn(sampling::CpuView<'_>, &SampleOptions) -> R,
    ) -> R {
        lookup::blocking_lookup(&self.loader, options, sample)
    }

    /// The id of `path`, from this thread's map if it is there.
    fn thread_path_id(&self, path: &Path) -> Result<TextureId> {
        let uid = self.paths.uid;
        let cached = THREAD_PATH_IDS
            .try_with(|m| {
                m.try_borrow()
                    .ok()
                    .and_then(|m| m.get(&uid).and_then(|ids| ids.get(path).copied()))
            })
            .ok()
            .flatten();
        if let Some(id) = cached {
            return Ok(id);
        }
        let id = self.texture_for_path(path, TextureDesc::file_modes())?;
        let _ = THREAD_PATH_IDS.try_with(|m| {
            if let Ok(mut m) = m.try_borrow_mut() {
                m.entry(uid).or_default().insert(path.to_path_buf(), id);
            }
        });
        Ok(id)
    }
}

impl std::ops::Deref for TextureCache {
    type Target = Engine;

    /// The engine underneath: textures, UDIM grids, user resources, invalidate / replace
    /// / unload, the cache size ([`Engine::set_max_texture_memory`]), statistics and
    /// errors, shared with [`TextureCache::loader`].
    fn deref(&self) -> &Engine {
        self.loader.engine()
    }
}

impl std::fmt::Debug for TextureCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextureCache")
            .field("loader", &self.loader)
            .finish()
    }
}
