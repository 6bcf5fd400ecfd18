//! Filtering across probes and mip levels (bilinear, trilinear, anisotropic), the miss
//! policy (fallback to a coarser resident level, else the base colour), and the one
//! dispatch on the texel format that specialises all of it.

use super::fetch::{Accum, Fetch, Slopes, Touch};
use super::lod::{mip_levels, Footprint};
use super::resolve::miss_color;
use super::texel::{Blocks, Float, Half, Texel, Texels, Unorm16, Unorm8};
use super::{CpuView, Sample, SampleOptions};
use crate::ids::TextureId;
use crate::textures::{MipFilter, TexelType, TextureSampler};

/// Filter `texture` (whose resident, well-formed sampler is `sampler`) over footprint `fp`
/// centred at (s, t).
#[inline]
pub(crate) fn sample(
    view: CpuView<'_>,
    texture: TextureId,
    sampler: &TextureSampler,
    s: f32,
    t: f32,
    fp: &Footprint,
    options: &SampleOptions,
) -> Sample {
    let lookup = Lookup {
        view,
        texture,
        sampler,
        s,
        t,
        fp,
        options,
    };
    sample_as::<false>(&lookup, &mut Slopes::default())
}

/// One lookup to filter: `texture`, whose resident, well-formed sampler is `sampler`,
/// over footprint `fp` centred at (s, t).
pub(crate) struct Lookup<'a> {
    /// The view it reads through (keyed for the lookup).
    pub view: CpuView<'a>,
    /// The texture.
    pub texture: TextureId,
    /// Its sampler.
    pub sampler: &'a TextureSampler,
    /// s.
    pub s: f32,
    /// t.
    pub t: f32,
    /// The footprint.
    pub fp: &'a Footprint,
    /// The lookup's options.
    pub options: &'a SampleOptions,
}

/// A filter specialised for a texel format (and on whether it writes the derivatives).
type FilterFn = fn(&Lookup<'_>, &mut Slopes) -> Sample;

/// [`sample`]; if `SLOPES`, also the derivatives of the filtered value with respect to s
/// and t into `slopes` (left as they are where no filter produced the value: a miss, a
/// stand-in colour; the caller passes zeros). A derivative lookup filters with the
/// texture's own filter (see [`Fetch::add_with_slopes`]): the caller drops
/// `options.stochastic` for it.
#[inline]
pub(crate) fn sample_as<const SLOPES: bool>(lookup: &Lookup<'_>, slopes: &mut Slopes) -> Sample {
    use TexelType::*;
    let sampler = lookup.sampler;
    if sampler.block_codec != 0 {
        return sample_blocks::<SLOPES>(lookup, slopes);
    }
    let filter: FilterFn = match (TexelType::from_code(sampler.texel_type), sampler.channels) {
        (Some(U8), 1) => run::<Texels<Unorm8, 1>, SLOPES>,
        (Some(U8), 2) => run::<Texels<Unorm8, 2>, SLOPES>,
        (Some(U8), 4) => run::<Texels<Unorm8, 4>, SLOPES>,
        (Some(U16), 1) => run::<Texels<Unorm16, 1>, SLOPES>,
        (Some(U16), 2) => run::<Texels<Unorm16, 2>, SLOPES>,
        (Some(U16), 4) => run::<Texels<Unorm16, 4>, SLOPES>,
        (Some(F16), 1) => run::<Texels<Half, 1>, SLOPES>,
        (Some(F16), 2) => run::<Texels<Half, 2>, SLOPES>,
        (Some(F16), 4) => run::<Texels<Half, 4>, SLOPES>,
        (Some(F32), 1) => run::<Texels<Float, 1>, SLOPES>,
        (Some(F32), 2) => run::<Texels<Float, 2>, SLOPES>,
        (Some(F32), 4) => run::<Texels<Float, 4>, SLOPES>,
        // Rejected by `resolve::is_well_formed` before we get here.
        _ => return Sample::new(sampler.fallback_color, true),
    };
    filter(lookup, slopes)
}

/// [`sample_as`] for a texture whose pages hold blocks: one arm per codec
/// ([`BlockCodec::code`]), each decoding to the codec's served format.
#[inline(never)]
fn sample_blocks<const SLOPES: bool>(lookup: &Lookup<'_>, slopes: &mut Slopes) -> Sample {
    type Rgba8 = Texels<Unorm8, 4>;
    let filter: FilterFn = match lookup.sampler.block_codec {
        1 => run::<Blocks<1, Rgba8>, SLOPES>,
        2 => run::<Blocks<2, Rgba8>, SLOPES>,
        3 => run::<Blocks<3, Rgba8>, SLOPES>,
        4 => run::<Blocks<4, Texels<Unorm8, 1>>, SLOPES>,
        5 => run::<Blocks<5, Texels<Float, 1>>, SLOPES>,
        6 => run::<Blocks<6, Texels<Unorm8, 2>>, SLOPES>,
        7 => run::<Blocks<7, Texels<Float, 2>>, SLOPES>,
        8 => run::<Blocks<8, Texels<Half, 4>>, SLOPES>,
        9 => run::<Blocks<9, Texels<Half, 4>>, SLOPES>,
        10 => run::<Blocks<10, Rgba8>, SLOPES>,
        // Rejected by `resolve::is_well_formed` before we get here.
        _ => return Sample::new(lookup.sampler.fallback_color, true),
    };
    filter(lookup, slopes)
}

/// [`sample_as`] for texel format `D`.
fn run<D: Texel, const SLOPES: bool>(lookup: &Lookup<'_>, out_slopes: &mut Slopes) -> Sample {
    let &Lookup {
        view,
        texture,
        sampler,
        s,
        t,
        fp,
        options,
    } = lookup;
    let mip_filter = if sampler.mip_filter == MipFilter::Point as u32 {
        MipFilter::Point
    } else {
        MipFilter::Linear
    };
    let levels = mip_levels(fp.lod, sampler.num_levels, mip_filter);
    let mut fetch = Fetch::<D>::new(view, sampler, Touch::Record);
    if let Some(jitter) = options.stochastic {
        fetch = fetch.with_jitter(jitter);
    }
    let mut acc = Accum::new();
    let mut slopes = Slopes::default();
    let probe_weight = 1.0 / fp.probes as f32;
    let fine_weight = (1.0 - levels.coarse_weight) * probe_weight;
    let coarse_weight = levels.coarse_weight * probe_weight;
    for i in 0..fp.probes {
        let (ps, pt) = probe(s, t, fp, i);
        add::<D, SLOPES>(
            &fetch,
            levels.fine,
            ps,
            pt,
            fine_weight,
            &mut acc,
            &mut slopes,
        );
        if coarse_weight > 0.0 {
            let coarse = levels.fine + 1;
            add::<D, SLOPES>(&fetch, coarse, ps, pt, coarse_weight, &mut acc, &mut slopes);
        }
    }
    if acc.resident {
        if SLOPES {
            *out_slopes = slopes;
        }
        return Sample::new(acc.value, true);
    }
    if options.fallback_to_coarser {
        if let Some((value, slopes)) =
            coarser::<D, SLOPES>(&fetch, sampler, s, t, fp, levels.fine + 1)
        {
            if SLOPES {
                *out_slopes = slopes;
            }
            return Sample::from_coarser(value);
        }
    }
    Sample::new(miss_color(view, texture), false)
}

/// One level's footprint into `acc` (and its derivatives into `slopes` if `SLOPES`).
#[inline(always)]
fn add<D: Texel, const SLOPES: bool>(
    fetch: &Fetch<'_, D>,
    level: u32,
    s: f32,
    t: f32,
    weight: f32,
    acc: &mut Accum,
    slopes: &mut Slopes,
) {
    if SLOPES {
        fetch.add_with_slopes(level, s, t, weight, acc, slopes);
    } else {
        fetch.add(level, s, t, weight, acc);
    }
}

/// The value of the first level from `first` on whose whole footprint is resident, found
/// without recording any request (with its derivatives if `SLOPES`); `None` if there is
/// none.
#[cold]
#[inline(never)]
fn coarser<D: Texel, const SLOPES: bool>(
    fetch: &Fetch<'_, D>,
    sampler: &TextureSampler,
    s: f32,
    t: f32,
    fp: &Footprint,
    first: u32,
) -> Option<([f32; 4], Slopes)> {
    let peek = fetch.with_touch(Touch::Peek);
    let probe_weight = 1.0 / fp.probes as f32;
    for level in first..sampler.num_levels {
        // Levels with no resident page are passed over without computing a footprint: in
        // the first frames a miss walks every level down to the mip tail.
        if peek.level_surely_missing(level) {
            continue;
        }
        let mut acc = Accum::new();
        let mut slopes = Slopes::default();
        for i in 0..fp.probes {
            let (ps, pt) = probe(s, t, fp, i);
            add::<D, SLOPES>(&peek, level, ps, pt, probe_weight, &mut acc, &mut slopes);
            if !acc.resident {
                break;
            }
        }
        if acc.resident {
            return Some((acc.value, slopes));
        }
    }
    None
}

/// The centre of probe `i`.
#[inline(always)]
fn probe(s: f32, t: f32, fp: &Footprint, i: u32) -> (f32, f32) {
    if fp.probes == 1 {
        return (s, t);
    }
    let [ds, dt] = fp.probe_offset(i);
    (s + ds, t + dt)
}
