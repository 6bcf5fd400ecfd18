//! `tex2d_grad_udim`: one lookup of a UDIM texture, through the ordinary sampler of the
//! tile or base texture it resolves to.
//!
//! # Semantics
//!
//! 1. **Unknown UDIM id** (not a resident resource page whose entry describes a grid of
//!    this loader's textures): [`DEFAULT_FALLBACK_COLOR`], resident; nothing is requested.
//! 2. **Bad input** (a NaN or infinite coordinate or gradient): with a base texture, the
//!    base texture's answer to the same input ([`tex2d_grad`]: its base colour, else its
//!    fallback colour); without, transparent black, resident.
//! 3. **Distant lookups.** With a base texture of `bw × bh` texels over a `gw × gh` grid,
//!    the gradients in base texels are `dx = (ddx.s · bw / gw, ddx.t · bh / gh)`, likewise
//!    `dy`; when `lod = log2(max(|dx|, |dy|)) ≥ 0` (the base is not magnified) the lookup
//!    is the base texture at `(s / gw, t / gh)` with gradients `ddx / (gw, gh)`,
//!    `ddy / (gw, gh)`. The base size comes from its sampler record; until that is
//!    resident the lookup samples the base (requesting its sampler) and the tile it falls
//!    in (requesting that too), and reports a miss. A base whose sampler entry is null (a
//!    failed texture) is not used for distant lookups.
//! 4. **Tiles.** Column `floor(s)`, row `floor(t)`; inside the grid and not a hole, the
//!    tile is sampled with [`tex2d_grad`] at `(s − col, t − row)` with the same gradients
//!    (a tile spans one unit), under its own address modes. With
//!    [`SampleOptions::fallback_to_coarser`], a tile lookup that missed (its sampler is
//!    not resident yet) is replaced by the base texture's lookup if that one is resident,
//!    reported resident and [`Sample::coarser`]; the tile's requests stand.
//! 5. **Holes and the outside of the grid**: the base texture (as in 3, whatever the
//!    footprint), else transparent black `[0, 0, 0, 0]`, resident. A tile is a hole when
//!    its sampler page is resident with entry 0 and its base-colour entry is
//!    [`HOLE_BASE_COLOR`] (a tile not opened yet is never one: holes are resident from
//!    creation).
//!
//! Every miss is recorded by the underlying lookups, so the function serves both the
//! multi-pass cycle (the requests are served at the next `process_requests`) and a
//! blocking cache that fills a view's misses and repeats the lookup.

use super::create::read_entry;
use super::{UdimEntry, UdimId};
use crate::ids::TextureId;
use crate::paging::HOLE_BASE_COLOR;
use crate::sampling::{
    tex2d_grad, tex2d_grad_with_derivatives, CpuView, Sample, SampleDerivatives, SampleOptions,
};
use crate::textures::{TextureSampler, DEFAULT_FALLBACK_COLOR};

/// The answer for an id that names no UDIM texture.
const UNKNOWN_UDIM: Sample = Sample::new(DEFAULT_FALLBACK_COLOR, true);

/// The answer for a hole or the outside of a grid without a base texture.
const EMPTY: Sample = Sample::new([0.0; 4], true);

/// Sample the UDIM texture `udim` at (s, t) over the footprint of the screen-space
/// gradients `ddx`, `ddy` (see the [module documentation](self)).
#[inline]
pub fn tex2d_grad_udim(
    view: CpuView<'_>,
    udim: UdimId,
    s: f32,
    t: f32,
    ddx: [f32; 2],
    ddy: [f32; 2],
    options: &SampleOptions,
) -> Sample {
    udim_lookup(view, udim, s, t, ddx, ddy, options, tex2d_grad)
}

/// [`tex2d_grad_udim`] with the derivatives of the value with respect to the UDIM
/// coordinates s and t ([`tex2d_grad_with_derivatives`] of the tile or base texture it
/// resolves to; a base texture's, spanning the grid, are divided by the grid's size). The
/// answers no texture gives (unknown id, holes and the outside without a base) have zero
/// derivatives.
#[inline]
pub fn tex2d_grad_udim_with_derivatives(
    view: CpuView<'_>,
    udim: UdimId,
    s: f32,
    t: f32,
    ddx: [f32; 2],
    ddy: [f32; 2],
    options: &SampleOptions,
) -> SampleDerivatives {
    udim_lookup(
        view,
        udim,
        s,
        t,
        ddx,
        ddy,
        options,
        tex2d_grad_with_derivatives,
    )
}

/// What a UDIM lookup returns: a [`Sample`], or one with its derivatives.
trait UdimResult: Copy {
    /// A sample no texture filtered (zero derivatives).
    fn unfiltered(sample: Sample) -> Self;
    /// The sample.
    fn sample(&self) -> Sample;
    /// The same result with its sample replaced (derivatives kept).
    fn with_sample(self, sample: Sample) -> Self;
    /// A base texture's result, whose coordinates are the UDIM ones divided by the
    /// grid's `(gw, gh)`, as a function of the UDIM coordinates.
    fn of_base(self, gw: f32, gh: f32) -> Self;
}

impl UdimResult for Sample {
    #[inline]
    fn unfiltered(sample: Sample) -> Sample {
        sample
    }
    #[inline]
    fn sample(&self) -> Sample {
        *self
    }
    #[inline]
    fn with_sample(self, sample: Sample) -> Sample {
        sample
    }
    #[inline]
    fn of_base(self, _: f32, _: f32) -> Sample {
        self
    }
}

impl UdimResult for SampleDerivatives {
    fn unfiltered(sample: Sample) -> SampleDerivatives {
        SampleDerivatives {
            sample,
            ds: [0.0; 4],
            dt: [0.0; 4],
        }
    }
    fn sample(&self) -> Sample {
        self.sample
    }
    fn with_sample(self, sample: Sample) -> SampleDerivatives {
        SampleDerivatives { sample, ..self }
    }
    fn of_base(self, gw: f32, gh: f32) -> SampleDerivatives {
        SampleDerivatives {
            ds: self.ds.map(|d| d / gw),
            dt: self.dt.map(|d| d / gh),
            ..self
        }
    }
}

/// [`tex2d_grad_udim`] with `lookup` as the lookup of one texture.
#[inline]
#[allow(clippy::too_many_arguments)]
fn udim_lookup<R: UdimResult>(
    view: CpuView<'_>,
    udim: UdimId,
    s: f32,
    t: f32,
    ddx: [f32; 2],
    ddy: [f32; 2],
    options: &SampleOptions,
    lookup: impl Fn(CpuView<'_>, TextureId, f32, f32, [f32; 2], [f32; 2], &SampleOptions) -> R,
) -> R {
    let Some(grid) = read_entry(view.pages(), udim) else {
        return R::unfiltered(UNKNOWN_UDIM);
    };
    if ![s, t, ddx[0], ddx[1], ddy[0], ddy[1]]
        .iter()
        .all(|v| v.is_finite())
    {
        return match grid.base {
            Some(base) => lookup(view, base, s, t, ddx, ddy, options),
            None => R::unfiltered(EMPTY),
        };
    }
    let base_lookup = |base: TextureId| {
        let (gw, gh) = (grid.width as f32, grid.height as f32);
        lookup(
            view,
            base,
            s / gw,
            t / gh,
            [ddx[0] / gw, ddx[1] / gh],
            [ddy[0] / gw, ddy[1] / gh],
            options,
        )
        .of_base(gw, gh)
    };

    let mut base_size_unknown = false;
    if let Some(base) = grid.base {
        match base_size(view, base) {
            BaseSize::Known { width, height } => {
                if base_is_minified(&grid, width, height, ddx, ddy) {
                    return base_lookup(base);
                }
            }
            BaseSize::Null => {}
            BaseSize::NotResident => base_size_unknown = true,
        }
    }

    let tile = tile_at(view, &grid, s, t);
    let Some((texture, col, row)) = tile else {
        return grid.base.map_or(R::unfiltered(EMPTY), base_lookup);
    };
    let result = lookup(view, texture, s - col, t - row, ddx, ddy, options);
    let sample = result.sample();
    match grid.base {
        Some(base) if base_size_unknown => {
            // Which of the two serves this lookup is known once the base sampler is
            // resident: request it (and the tile's pages, above) and report a miss.
            base_lookup(base);
            result.with_sample(Sample::new(sample.value, false))
        }
        Some(base) if !sample.resident && options.fallback_to_coarser => {
            let stand_in = base_lookup(base);
            if stand_in.sample().resident {
                stand_in.with_sample(Sample {
                    coarser: true,
                    ..stand_in.sample()
                })
            } else {
                result
            }
        }
        _ => result,
    }
}

/// The tile (s, t) falls in — its texture and (col, row) as floats — unless that is
/// outside the grid or a hole.
#[inline]
fn tile_at(view: CpuView<'_>, grid: &UdimEntry, s: f32, t: f32) -> Option<(TextureId, f32, f32)> {
    let (col, row) = (s.floor(), t.floor());
    if !(col >= 0.0 && col < grid.width as f32 && row >= 0.0 && row < grid.height as f32) {
        return None;
    }
    let texture = grid.tile(col as u32, row as u32)?;
    (!is_hole(view, texture)).then_some((texture, col, row))
}

/// Whether `texture` is a hole: a resident null sampler with [`HOLE_BASE_COLOR`]. (A tile
/// whose sampler is not resident yet is not a hole: holes are resident from creation.)
#[inline]
fn is_hole(view: CpuView<'_>, texture: TextureId) -> bool {
    let pages = view.pages();
    let layout = pages.layout();
    let sampler_page = layout.sampler_page(texture).0;
    pages.is_resident(sampler_page)
        && view.map_or_request(sampler_page) == Some(0)
        && view.map_or_request(layout.base_color_page(texture).0) == Some(HOLE_BASE_COLOR)
}

/// Whether the base texture (`width × height`) would not be magnified by the footprint:
/// the longer gradient, in base texels, spans at least one texel.
#[inline]
fn base_is_minified(
    grid: &UdimEntry,
    width: u32,
    height: u32,
    ddx: [f32; 2],
    ddy: [f32; 2],
) -> bool {
    let sx = width as f32 / grid.width as f32;
    let sy = height as f32 / grid.height as f32;
    let len2 = |g: [f32; 2]| (g[0] * sx) * (g[0] * sx) + (g[1] * sy) * (g[1] * sy);
    len2(ddx).max(len2(ddy)) >= 1.0
}

/// What the base texture's sampler page says about its size.
enum BaseSize {
    /// Level-0 size.
    Known { width: u32, height: u32 },
    /// A null (or unusable) sampler record: a failed texture.
    Null,
    /// The sampler page is not resident (a request was recorded).
    NotResident,
}

/// Read (and record a use of) the base texture's sampler page; a miss is also listed in
/// the view's miss list, if it has one.
#[inline]
fn base_size(view: CpuView<'_>, base: TextureId) -> BaseSize {
    let Some(entry) = view.map_or_request(view.pages().layout().sampler_page(base).0) else {
        return BaseSize::NotResident;
    };
    if entry == 0 || entry as usize % std::mem::align_of::<TextureSampler>() != 0 {
        return BaseSize::Null;
    }
    // SAFETY: the base's sampler page is resident with a non-zero entry, so by the contract
    // of `CpuView::new` the entry is the address of a valid `TextureSampler` that is
    // neither written nor freed while the view lives; only two fields are copied out.
    let sampler = unsafe { &*(entry as usize as *const TextureSampler) };
    match (sampler.width, sampler.height) {
        (0, _) | (_, 0) => BaseSize::Null,
        (width, height) => BaseSize::Known { width, height },
    }
}
