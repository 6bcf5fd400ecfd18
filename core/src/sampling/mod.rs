//! CPU samplers over the page layer, with the semantics of the CUDA device API: every
//! lookup records the pages its footprint touches (misses become requests at the next
//! `process_requests`), and returns the filtered value plus whether it was resident.
//!
//! # Semantics
//!
//! [`tex2d`] samples level 0, [`tex2d_lod`] an explicit level of detail (isotropic), and
//! [`tex2d_grad`] the footprint of screen-space gradients `ddx`, `ddy` of (s, t). In order:
//!
//! 1. **Unknown texture** (`id ≥ max_textures`): [`DEFAULT_FALLBACK_COLOR`], resident;
//!    nothing is requested.
//! 2. **Base-colour shortcut** (as OTK): when the footprint covers the whole texture
//!    (`min(|ddx|², |ddy|²) ≥ 1` in UV), or any input is NaN or infinite, only the
//!    base-colour page is read: a colour → that colour, resident; page not resident →
//!    zeros, non-resident. A texture without a base colour is sampled normally at its
//!    coarsest level, or, for non-finite inputs, gives its sampler's `fallback_color`.
//! 3. **Sampler page.** Not resident → the miss value (below), non-resident. Entry 0 (a
//!    degenerate texture) → the base colour, resident ([`DEFAULT_FALLBACK_COLOR`] if the
//!    texture has none). A failed texture → its `fallback_color`, resident.
//! 4. **Level of detail** from the gradients in level-0 texels,
//!    `dx = (ddx.s · width, ddx.t · height)`, likewise `dy`. Isotropic (`max_anisotropy`
//!    1): `lod = log2(max(|dx|, |dy|))`. Anisotropic: `n = min(ceil(major / minor),
//!    max_anisotropy)` probes spread evenly along the major gradient (at
//!    `((i + 0.5) / n − 0.5) ×` that gradient) and averaged, at
//!    `lod = log2(max(major / n, minor))`. The lod is clamped to `[0, levels − 1]`.
//! 5. **Filtering.** Linear mip filtering blends levels `floor(lod)` and the next by the
//!    fraction (the next level is not touched when its weight is 0); point mip filtering
//!    reads the nearest level. Within a level, texel `i` has its centre at
//!    `(i + 0.5) / width`; bilinear reads the 2×2 texels around the point, point filtering
//!    the texel containing it. Address modes per axis: wrap, clamp, mirror (period two
//!    widths), border (texels outside are transparent black and touch no page). Texels
//!    with weight 0 are not read.
//! 6. **Pages.** Every page the footprint needs is recorded (reference bit), even after a
//!    miss was found, so one launch requests all of a lookup's tiles; each distinct page of
//!    a bilinear footprint is resolved once; levels in the mip tail touch the texture's
//!    mip-tail page. Missing tiles are never read.
//! 7. **Rejection.** In a launch that rejects requests (interactive mode), a miss of a
//!    tile or mip-tail page that no lookup has requested yet in the launch is dropped with
//!    the launch's probability, decided by a hash of [`SampleOptions::request_key`], the
//!    launch and the page ([`crate::paging::rejection`]). The lookup is a miss either way.
//! 8. **Misses.** With [`SampleOptions::fallback_to_coarser`], the first level coarser
//!    than the finest level read whose whole footprint is resident (tested without
//!    recording requests) stands in, reported resident. Otherwise — or if there is none —
//!    the value is the base colour if its page is resident, else zeros, non-resident.
//!
//! [`tex2d_grad_with_derivatives`] adds the derivatives of the value with respect to s and
//! t (OpenImageIO's `dresultds` / `dresultdt`): at each probe and level, the analytic
//! derivative of the bilinear interpolation (`∓width` times the texel pairs' differences,
//! weighted along the other axis), summed with the value's weights. It reads the texels
//! the slopes need even where their filter weight is 0 (on a texel centre), filters with
//! the texture's own filter (not stochastically), and gives 0 where no filter produced the
//! value (steps 1–3; a miss, unless a coarser level stands in) or the filter is point.
//! CPU only: the device API has no derivative lookup.
//!
//! The hot path allocates nothing, takes no lock and makes no dynamic call per texel: one
//! dispatch on the texel format per lookup selects a filter specialised for it (and, for
//! derivative lookups, a second specialisation of the same filter).

mod address;
pub mod environment;
mod fetch;
mod filter;
mod halves;
mod lod;
pub mod ptex;
mod resolve;
mod rounding;
#[cfg(test)]
mod tests;
mod texel;

use crate::backend::cpu::{FileTileFiller, TileDirectory};
use crate::ids::{PageId, TextureId};
use crate::paging::{PageTable, RequestGate};
use crate::textures::DEFAULT_FALLBACK_COLOR;
use lod::Footprint;
use resolve::BaseColor;
use std::cell::Cell;

/// What a sampler reads: the page layer and the CPU tile directory of one loader.
/// [`crate::Launch::view`] hands one out; building one by hand is `unsafe`.
#[derive(Clone, Copy)]
pub struct CpuView<'a> {
    pages: &'a PageTable,
    tiles: &'a TileDirectory,
    misses: Option<&'a MissList>,
    rejection: Option<Rejection<'a>>,
    file_tiles: Option<&'a dyn FileTileFiller>,
}

/// A launch's request rejection as a view applies it (see [`crate::paging::rejection`]).
#[derive(Clone, Copy, Debug)]
pub struct Rejection<'a> {
    /// Where rejections and standing requests are counted.
    pub gate: &'a RequestGate,
    /// The launch's threshold (`RP × 2^32`).
    pub threshold: u32,
    /// The launch number (part of the coin).
    pub launch_num: u32,
    /// The lookup's request key (pixel or sample id; set per lookup from
    /// [`SampleOptions::request_key`]).
    pub key: u32,
}

impl<'a> CpuView<'a> {
    /// A view over a page table and tile directory.
    ///
    /// # Safety
    /// While the view lives: every resident sampler page's entry is 0 or the address of a
    /// valid [`crate::textures::TextureSampler`] whose `mip_tail_data` (if its mip tail page
    /// is resident) addresses the packed tail its levels describe; every resident tile
    /// page's directory entry addresses [`crate::TILE_BYTES`] readable bytes of a tile
    /// buffer (writable memory, a [`crate::memory::TileBuffer`] with its trailer); and
    /// none of that memory is freed, nor written except by the Ptex in-place unit fill
    /// ([`crate::sources::ptex::PtexPages::fill_in_place`]) and the in-place file-tile
    /// fill ([`FileTileFiller`]), whose protocols keep readers off the bytes they write.
    pub unsafe fn new(pages: &'a PageTable, tiles: &'a TileDirectory) -> Self {
        CpuView {
            pages,
            tiles,
            misses: None,
            rejection: None,
            file_tiles: None,
        }
    }

    /// The same view, reading the missing file tiles of pages published before they were
    /// read through `filler` when a lookup needs their texels (without one, such a page
    /// is not resident for the texels it lacks).
    pub fn with_file_tiles(self, filler: &'a dyn FileTileFiller) -> Self {
        CpuView {
            file_tiles: Some(filler),
            ..self
        }
    }

    /// Read file tile `index` of `page` (at `tile`) in place, if the view can: whether its
    /// texels can now be read. When not, the page is listed as a miss, so a blocking
    /// lookup looks again (and finds, say, the fallback of a texture the read failed).
    #[cold]
    pub(crate) fn fill_file_tile(&self, page: u32, tile: *const u8, index: u32) -> bool {
        let written = self
            .file_tiles
            .is_some_and(|f| f.fill_file_tile(page, tile, index));
        if !written {
            if let Some(m) = self.misses {
                m.push(PageId(page));
            }
        }
        written
    }

    /// The same view, counting standing requests in `rejection.gate` and rejecting new
    /// requests as it says (the interactive mode's launches).
    pub fn with_rejection(self, rejection: Rejection<'a>) -> Self {
        CpuView {
            rejection: Some(rejection),
            ..self
        }
    }

    /// The same view with request key `key` (a no-op without rejection).
    #[inline]
    pub(crate) fn keyed(self, key: u32) -> Self {
        match self.rejection {
            Some(r) => CpuView {
                rejection: Some(Rejection { key, ..r }),
                ..self
            },
            None => self,
        }
    }

    /// The same view, also listing every page its lookups find missing in `misses` (the
    /// blocking cache fills them and looks up again).
    pub fn with_misses(self, misses: &'a MissList) -> Self {
        CpuView {
            misses: Some(misses),
            ..self
        }
    }

    /// The page layer.
    pub fn pages(&self) -> &'a PageTable {
        self.pages
    }

    /// The tile directory.
    pub fn tiles(&self) -> &'a TileDirectory {
        self.tiles
    }

    /// Record a use of `page` and say whether it is resident; a miss is also listed.
    #[inline]
    pub(crate) fn request(&self, page: u32) -> bool {
        let resident = match &self.rejection {
            None => self.pages.request_and_test(page),
            Some(r) => r
                .gate
                .request_and_test(self.pages, page, r.key, r.launch_num, r.threshold),
        };
        if !resident {
            if let Some(m) = self.misses {
                m.push(PageId(page));
            }
        }
        resident
    }

    /// Record a use of an entry page and return its entry if resident; a miss is also
    /// listed.
    #[inline]
    pub(crate) fn map_or_request(&self, page: u32) -> Option<u64> {
        let entry = self.pages.map_or_request(page);
        if entry.is_none() {
            if let Some(m) = self.misses {
                m.push(PageId(page));
            }
        }
        entry
    }
}

/// How many distinct missing pages one [`MissList`] holds; more are dropped (a lookup that
/// is filled and retried finds them again).
pub const MISS_LIST_CAPACITY: usize = 64;

/// The distinct pages a lookup found missing, in the order found. Single-threaded (the
/// blocking cache keeps one per lookup on the stack).
#[derive(Debug)]
pub struct MissList {
    pages: [Cell<PageId>; MISS_LIST_CAPACITY],
    len: Cell<usize>,
}

impl Default for MissList {
    fn default() -> Self {
        MissList {
            pages: std::array::from_fn(|_| Cell::new(PageId(0))),
            len: Cell::new(0),
        }
    }
}

impl MissList {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `page` unless it is listed or the list is full.
    #[inline]
    pub fn push(&self, page: PageId) {
        let n = self.len.get();
        if n == MISS_LIST_CAPACITY || self.pages[..n].iter().any(|p| p.get() == page) {
            return;
        }
        self.pages[n].set(page);
        self.len.set(n + 1);
    }

    /// Pages listed.
    pub fn len(&self) -> usize {
        self.len.get()
    }

    /// Whether no page is listed.
    pub fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// The listed pages.
    pub fn pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.pages[..self.len.get()].iter().map(Cell::get)
    }

    /// Forget every page.
    pub fn clear(&self) {
        self.len.set(0);
    }
}

/// Per-lookup options.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleOptions {
    /// On a miss, return the value of the finest coarser level whose footprint is resident
    /// (the mip tail always is once the sampler is) and report it as resident. The missing
    /// pages are still requested, so later launches sharpen.
    pub fallback_to_coarser: bool,
    /// The pixel or sample id of the lookup: the deterministic seed of request rejection
    /// (see [`crate::paging::rejection`]; unused when the launch rejects nothing). Lookups
    /// with the same key in one launch make the same decision for a page.
    pub request_key: u32,
    /// Stochastic two-level point filtering (Pharr et al. 2024, "filtering after
    /// shading"; Disney's GPU Ptex streaming): one texel from each of the two mip levels
    /// around the level of detail, blended by the fraction (one level where the texture's
    /// mip filter is point), instead of the texture's bilinear or point footprints; the
    /// footprint is isotropic (one probe, the level of detail of the longer gradient).
    /// In each level the texel is `floor(coord · size − 0.5 + jitter)` along each axis:
    /// with `jitter` (s, t) uniform random in [0, 1)², the caller's, each of the bilinear
    /// footprint's texels is picked with its bilinear weight, so averaging lookups over
    /// jitters (a pixel's samples) gives the trilinear filter; (0.5, 0.5) picks the nearest
    /// texel. A lookup reads (and requests) 1 or 2 texels instead of up to 8 per probe.
    /// Jitters are clamped into [0, 1); NaN is 0.5. `None`: the texture's filter.
    pub stochastic: Option<[f32; 2]>,
}

/// The result of one lookup.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// RGBA. One-channel textures give (c, c, c, 1), two-channel (c0, c1, 0, 1).
    pub value: [f32; 4],
    /// Whether every texel the filter needed was resident (or, with
    /// `fallback_to_coarser`, a coarser resident level stood in).
    pub resident: bool,
    /// With `fallback_to_coarser`: the value is that of a coarser resident level, standing
    /// in for the missing level of detail asked for (whose pages were requested). A
    /// viewport counts such lookups as not yet at full detail; see [`Sample::full_detail`].
    pub coarser: bool,
}

impl Sample {
    /// A value and its residency, at the level of detail asked for (not a coarser one).
    #[inline]
    pub const fn new(value: [f32; 4], resident: bool) -> Sample {
        Sample {
            value,
            resident,
            coarser: false,
        }
    }

    /// A coarser resident level's value standing in for a missing one: reported resident,
    /// and [`coarser`](Sample::coarser).
    #[inline]
    pub const fn from_coarser(value: [f32; 4]) -> Sample {
        Sample {
            value,
            resident: true,
            coarser: true,
        }
    }

    /// Resident at the level of detail asked for: no page was missing and no coarser level
    /// stood in.
    #[inline]
    pub const fn full_detail(&self) -> bool {
        self.resident && !self.coarser
    }
}

/// The answer for a texture id outside the page layout.
const UNKNOWN_TEXTURE: Sample = Sample::new(DEFAULT_FALLBACK_COLOR, true);

/// Sample level 0 of `texture` at (s, t): [`tex2d_lod`] at lod 0.
#[inline]
pub fn tex2d(
    view: CpuView<'_>,
    texture: TextureId,
    s: f32,
    t: f32,
    options: &SampleOptions,
) -> Sample {
    tex2d_lod(view, texture, s, t, 0.0, options)
}

/// Sample `texture` at (s, t) and an explicit level of detail (isotropic; see the module
/// documentation for misses, fallbacks and bad input).
#[inline]
pub fn tex2d_lod(
    view: CpuView<'_>,
    texture: TextureId,
    s: f32,
    t: f32,
    lod: f32,
    options: &SampleOptions,
) -> Sample {
    if texture.0 >= view.pages().layout().max_textures {
        return UNKNOWN_TEXTURE;
    }
    let view = view.keyed(options.request_key);
    if !(s.is_finite() && t.is_finite() && lod.is_finite()) {
        return non_finite(view, texture);
    }
    match resolve::sampler(view, texture) {
        Ok(sampler) => filter::sample(
            view,
            texture,
            sampler,
            s,
            t,
            &Footprint::isotropic(lod),
            options,
        ),
        Err(sample) => sample,
    }
}

/// Sample `texture` at (s, t) over the footprint of the screen-space gradients `ddx` =
/// ∂(s, t)/∂x and `ddy` = ∂(s, t)/∂y (trilinear, anisotropic up to the texture's
/// `max_anisotropy`; see the module documentation).
#[inline]
pub fn tex2d_grad(
    view: CpuView<'_>,
    texture: TextureId,
    s: f32,
    t: f32,
    ddx: [f32; 2],
    ddy: [f32; 2],
    options: &SampleOptions,
) -> Sample {
    match grad_footprint(view, texture, s, t, ddx, ddy, options) {
        GradLookup::Answered(sample) => sample,
        GradLookup::Filter(view, sampler, footprint) => {
            filter::sample(view, texture, sampler, s, t, &footprint, options)
        }
    }
}

/// A lookup's value with its derivatives with respect to the texture coordinates, as
/// OpenImageIO's `dresultds` / `dresultdt` give them: what a shader needs to
/// differentiate a texture result (bump mapping from a height texture, `Dx()` of a
/// lookup) without two more lookups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleDerivatives {
    /// The lookup, exactly as [`tex2d_grad`] gives it.
    pub sample: Sample,
    /// ∂value/∂s, per channel (1.0 of s is one texture width).
    pub ds: [f32; 4],
    /// ∂value/∂t, per channel.
    pub dt: [f32; 4],
}

/// [`tex2d_grad`] with the derivatives of the filtered value with respect to s and t:
/// the analytic derivative of the bilinear interpolation at each probe and level,
/// weighted as the value is (the footprint's own extent is held fixed). Point filtering
/// gives 0 (its value is piecewise constant), as do values no filter produced: a miss,
/// the base colour, a stand-in colour. With `fallback_to_coarser` they are the coarser
/// level's. The texture's own filter is used even when `options.stochastic` is set (a
/// single jittered texel has no useful derivative); otherwise the value is exactly
/// `tex2d_grad`'s. On a texel centre the bilinear pair's texel of weight 0 is read too
/// (its value sets the slope), so the footprint may touch one more tile than
/// `tex2d_grad`'s.
#[inline]
pub fn tex2d_grad_with_derivatives(
    view: CpuView<'_>,
    texture: TextureId,
    s: f32,
    t: f32,
    ddx: [f32; 2],
    ddy: [f32; 2],
    options: &SampleOptions,
) -> SampleDerivatives {
    let options = SampleOptions {
        stochastic: None,
        ..*options
    };
    let mut slopes = fetch::Slopes::default();
    let sample = match grad_footprint(view, texture, s, t, ddx, ddy, &options) {
        GradLookup::Answered(sample) => sample,
        GradLookup::Filter(view, sampler, fp) => {
            let lookup = filter::Lookup {
                view,
                texture,
                sampler,
                s,
                t,
                fp: &fp,
                options: &options,
            };
            filter::sample_as::<true>(&lookup, &mut slopes)
        }
    };
    SampleDerivatives {
        sample,
        ds: slopes.ds,
        dt: slopes.dt,
    }
}

/// Where a gradient lookup goes before filtering.
enum GradLookup<'a> {
    /// Answered without a filter (unknown texture, bad input, the base colour, a sampler
    /// miss or stand-in).
    Answered(Sample),
    /// To be filtered: the keyed view, the texture's sampler and the footprint.
    Filter(CpuView<'a>, &'a crate::textures::TextureSampler, Footprint),
}

/// The steps of [`tex2d_grad`] before filtering (the module documentation's 1 to 4).
#[inline(always)]
fn grad_footprint<'a>(
    view: CpuView<'a>,
    texture: TextureId,
    s: f32,
    t: f32,
    ddx: [f32; 2],
    ddy: [f32; 2],
    options: &SampleOptions,
) -> GradLookup<'a> {
    use GradLookup::Answered;
    if texture.0 >= view.pages().layout().max_textures {
        return Answered(UNKNOWN_TEXTURE);
    }
    let view = view.keyed(options.request_key);
    if ![s, t, ddx[0], ddx[1], ddy[0], ddy[1]]
        .iter()
        .all(|v| v.is_finite())
    {
        return Answered(non_finite(view, texture));
    }
    let len2 = |g: [f32; 2]| g[0] * g[0] + g[1] * g[1];
    let whole_texture = len2(ddx).min(len2(ddy)) >= 1.0;
    if whole_texture {
        match resolve::base_color(view, texture) {
            BaseColor::Color(value) => return Answered(Sample::new(value, true)),
            BaseColor::NotResident => return Answered(Sample::new([0.0; 4], false)),
            BaseColor::Absent => {}
        }
    }
    let sampler = match resolve::sampler(view, texture) {
        Ok(sampler) => sampler,
        Err(sample) => return Answered(sample),
    };
    let footprint = if whole_texture {
        Footprint::isotropic(f32::INFINITY) // the coarsest level
    } else {
        // Stochastic lookups read one point per level: an isotropic footprint.
        let max_anisotropy = match options.stochastic {
            Some(_) => 1,
            None => sampler.max_anisotropy,
        };
        Footprint::from_gradients(ddx, ddy, sampler.width, sampler.height, max_anisotropy)
    };
    GradLookup::Filter(view, sampler, footprint)
}

/// A lookup with a NaN or infinite input: the base colour, else the sampler's fallback.
#[cold]
fn non_finite(view: CpuView<'_>, texture: TextureId) -> Sample {
    match resolve::base_color(view, texture) {
        BaseColor::Color(value) => Sample::new(value, true),
        BaseColor::NotResident => Sample::new([0.0; 4], false),
        BaseColor::Absent => match resolve::sampler(view, texture) {
            Ok(sampler) => Sample::new(sampler.fallback_color, true),
            Err(sample) => sample,
        },
    }
}
