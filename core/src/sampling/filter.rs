//! Filtering across probes and mip levels (bilinear, trilinear, anisotropic), the miss
//! policy (fallback to a coarser resident level, else the base colour), and the one
//! dispatch on the texel format that specialises all of it.

use super::fetch::{Accum, Fetch, Touch};
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
    use TexelType::*;
    if sampler.block_codec != 0 {
        return sample_blocks(view, texture, sampler, s, t, fp, options);
    }
    let filter = match (TexelType::from_code(sampler.texel_type), sampler.channels) {
        (Some(U8), 1) => run::<Texels<Unorm8, 1>>,
        (Some(U8), 2) => run::<Texels<Unorm8, 2>>,
        (Some(U8), 4) => run::<Texels<Unorm8, 4>>,
        (Some(U16), 1) => run::<Texels<Unorm16, 1>>,
        (Some(U16), 2) => run::<Texels<Unorm16, 2>>,
        (Some(U16), 4) => run::<Texels<Unorm16, 4>>,
        (Some(F16), 1) => run::<Texels<Half, 1>>,
        (Some(F16), 2) => run::<Texels<Half, 2>>,
        (Some(F16), 4) => run::<Texels<Half, 4>>,
        (Some(F32), 1) => run::<Texels<Float, 1>>,
        (Some(F32), 2) => run::<Texels<Float, 2>>,
        (Some(F32), 4) => run::<Texels<Float, 4>>,
        // Rejected by `resolve::is_well_formed` before we get here.
        _ => return Sample::new(sampler.fallback_color, true),
    };
    filter(view, texture, sampler, s, t, fp, options)
}

/// [`sample`] for a texture whose pages hold blocks: one arm per codec
/// ([`BlockCodec::code`]), each decoding to the codec's served format.
#[inline(never)]
fn sample_blocks(
    view: CpuView<'_>,
    texture: TextureId,
    sampler: &TextureSampler,
    s: f32,
    t: f32,
    fp: &Footprint,
    options: &SampleOptions,
) -> Sample {
    type Rgba8 = Texels<Unorm8, 4>;
    let filter = match sampler.block_codec {
        1 => run::<Blocks<1, Rgba8>>,
        2 => run::<Blocks<2, Rgba8>>,
        3 => run::<Blocks<3, Rgba8>>,
        4 => run::<Blocks<4, Texels<Unorm8, 1>>>,
        5 => run::<Blocks<5, Texels<Float, 1>>>,
        6 => run::<Blocks<6, Texels<Unorm8, 2>>>,
        7 => run::<Blocks<7, Texels<Float, 2>>>,
        8 => run::<Blocks<8, Texels<Half, 4>>>,
        9 => run::<Blocks<9, Texels<Half, 4>>>,
        10 => run::<Blocks<10, Rgba8>>,
        // Rejected by `resolve::is_well_formed` before we get here.
        _ => return Sample::new(sampler.fallback_color, true),
    };
    filter(view, texture, sampler, s, t, fp, options)
}

/// [`sample`] for texel format `D`.
fn run<D: Texel>(
    view: CpuView<'_>,
    texture: TextureId,
    sampler: &TextureSampler,
    s: f32,
    t: f32,
    fp: &Footprint,
    options: &SampleOptions,
) -> Sample {
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
    let probe_weight = 1.0 / fp.probes as f32;
    let fine_weight = (1.0 - levels.coarse_weight) * probe_weight;
    let coarse_weight = levels.coarse_weight * probe_weight;
    for i in 0..fp.probes {
        let (ps, pt) = probe(s, t, fp, i);
        fetch.add(levels.fine, ps, pt, fine_weight, &mut acc);
        if coarse_weight > 0.0 {
            fetch.add(levels.fine + 1, ps, pt, coarse_weight, &mut acc);
        }
    }
    if acc.resident {
        return Sample::new(acc.value, true);
    }
    if options.fallback_to_coarser {
        if let Some(value) = coarser::<D>(&fetch, sampler, s, t, fp, levels.fine + 1) {
            return Sample::from_coarser(value);
        }
    }
    Sample::new(miss_color(view, texture), false)
}

/// The value of the first level from `first` on whose whole footprint is resident, found
/// without recording any request; `None` if there is none.
#[cold]
#[inline(never)]
fn coarser<D: Texel>(
    fetch: &Fetch<'_, D>,
    sampler: &TextureSampler,
    s: f32,
    t: f32,
    fp: &Footprint,
    first: u32,
) -> Option<[f32; 4]> {
    let peek = fetch.with_touch(Touch::Peek);
    let probe_weight = 1.0 / fp.probes as f32;
    for level in first..sampler.num_levels {
        // Levels with no resident page are passed over without computing a footprint: in
        // the first frames a miss walks every level down to the mip tail.
        if peek.level_surely_missing(level) {
            continue;
        }
        let mut acc = Accum::new();
        for i in 0..fp.probes {
            let (ps, pt) = probe(s, t, fp, i);
            peek.add(level, ps, pt, probe_weight, &mut acc);
            if !acc.resident {
                break;
            }
        }
        if acc.resident {
            return Some(acc.value);
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
