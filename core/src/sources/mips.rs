//! Mip chains of [`FloatImage`]s: each level from the one before by a separable 2:1
//! filter, sizes rounded down ([`mip_level_size`]: level `n` is `max(1, size >> n)` on each
//! side), down to 1×1 ([`full_mip_levels`] levels). `demandtex convert` builds its files'
//! levels here.
//!
//! - [`DownsampleFilter::Box`] is demandtex's box filter, the one of
//!   [`InMemoryImage`](crate::sources::InMemoryImage) and of the EXR source's generated
//!   levels: each texel averages the texels of [`box_span`] along each side (2×2; where a
//!   side is odd, the last texel along it also takes in the extra last column or row, 3
//!   taps of 1/3, so every texel contributes; a side of 1 stays 1).
//! - [`DownsampleFilter::Triangle`] (tent) and [`DownsampleFilter::Lanczos3`] are
//!   resampling filters: output texel `i` is centred at `(i + 0.5) * in / out` in the
//!   source, the kernel is stretched by that ratio, and taps outside the image are dropped
//!   (the weights renormalised). Lanczos3 has negative lobes, so it may ring (overshoot) at
//!   sharp edges, as in other texture tools.

use super::box_filter::box_span;
use super::FloatImage;
use crate::textures::{full_mip_levels, mip_level_size};
use rayon::prelude::*;

/// The filter that computes each mip level of a [`FloatImage`] from the one before.
///
/// Its names (`box`, `triangle`, `lanczos3`: [`name`](Self::name),
/// [`FromStr`](std::str::FromStr)) are those of `demandtex convert --filter`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DownsampleFilter {
    /// Average of the 2×2 texels covered (3 taps along an odd side), as `InMemoryImage`.
    #[default]
    Box,
    /// Tent filter of radius one output texel.
    Triangle,
    /// Lanczos windowed sinc with 3 lobes.
    Lanczos3,
}

impl DownsampleFilter {
    /// Every filter, in the order of their names in help texts.
    pub const ALL: [DownsampleFilter; 3] = [
        DownsampleFilter::Box,
        DownsampleFilter::Triangle,
        DownsampleFilter::Lanczos3,
    ];

    /// The filter's name: `box`, `triangle` or `lanczos3`.
    pub fn name(self) -> &'static str {
        match self {
            DownsampleFilter::Box => "box",
            DownsampleFilter::Triangle => "triangle",
            DownsampleFilter::Lanczos3 => "lanczos3",
        }
    }

    /// One line on what the filter does (for help texts).
    pub fn description(self) -> &'static str {
        match self {
            DownsampleFilter::Box => {
                "Average of the 2×2 texels covered (3 taps along an odd side), as InMemoryImage"
            }
            DownsampleFilter::Triangle => "Tent filter of radius one output texel",
            DownsampleFilter::Lanczos3 => "Lanczos windowed sinc with 3 lobes",
        }
    }
}

impl std::fmt::Display for DownsampleFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DownsampleFilter {
    type Err = String;

    /// Parses a [`name`](DownsampleFilter::name).
    fn from_str(s: &str) -> Result<Self, String> {
        DownsampleFilter::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown filter {s:?} (box, triangle or lanczos3)"))
    }
}

/// The coarser levels of `image`'s mip chain: element 0 is level 1 (half size), the last
/// is 1×1. Empty for a 1×1 image. Level 0 is `image` itself and is not copied.
///
/// Each level is computed from the one before, rows in parallel (rayon).
pub fn build_mips(image: &FloatImage, filter: DownsampleFilter) -> Vec<FloatImage> {
    let count = full_mip_levels(image.width, image.height) as usize;
    let mut levels: Vec<FloatImage> = Vec::with_capacity(count.saturating_sub(1));
    for _ in 1..count {
        let next = downsample(levels.last().unwrap_or(image), filter);
        levels.push(next);
    }
    levels
}

/// The next coarser level of `src`: [`mip_level_size`]`(w, h, 1)`, `max(1, side / 2)`.
pub fn downsample(src: &FloatImage, filter: DownsampleFilter) -> FloatImage {
    let c = src.channels as usize;
    let (sw, sh) = (src.width as usize, src.height as usize);
    let (dw, dh) = mip_level_size(src.width, src.height, 1);
    let (dw, dh) = (dw as usize, dh as usize);
    let wx = Weights::new(filter, sw, dw);
    let wy = Weights::new(filter, sh, dh);
    // About this many samples per rayon task.
    let per_task = |row_len: usize| (1 << 15) / row_len.max(1) + 1;

    // Horizontal pass: sh rows of dw texels.
    let horizontal: std::borrow::Cow<'_, [f32]> = if sw == dw {
        std::borrow::Cow::Borrowed(&src.data)
    } else {
        let mut tmp = vec![0.0f32; sh * dw * c];
        tmp.par_chunks_mut(dw * c)
            .zip(src.data.par_chunks(sw * c))
            .with_min_len(per_task(dw * c))
            .for_each(|(out, row)| match c {
                1 => wx.apply_row::<1>(row, out),
                2 => wx.apply_row::<2>(row, out),
                3 => wx.apply_row::<3>(row, out),
                _ => wx.apply_row::<4>(row, out),
            });
        std::borrow::Cow::Owned(tmp)
    };

    // Vertical pass: dh rows, each a weighted sum of source rows.
    let row_len = dw * c;
    let mut data = vec![0.0f32; dh * row_len];
    data.par_chunks_mut(row_len)
        .enumerate()
        .with_min_len(per_task(row_len))
        .for_each(|(j, out)| {
            let (first, taps) = wy.taps(j);
            for (k, &w) in taps.iter().enumerate() {
                let y = first + k;
                let row = &horizontal[y * row_len..(y + 1) * row_len];
                for (o, &v) in out.iter_mut().zip(row) {
                    *o += w * v;
                }
            }
        });
    FloatImage {
        width: dw as u32,
        height: dh as u32,
        channels: src.channels,
        data,
    }
}

/// The taps of a 1-D resampling from `in_len` to `out_len` samples: output `i` is the
/// weighted sum of inputs `first[i]..first[i] + len`, weights summing to 1.
#[derive(Debug)]
struct Weights {
    first: Vec<usize>,
    /// `starts[i]..starts[i + 1]` indexes `weights` for output `i`.
    starts: Vec<usize>,
    weights: Vec<f32>,
}

impl Weights {
    fn new(filter: DownsampleFilter, in_len: usize, out_len: usize) -> Weights {
        let mut w = Weights {
            first: Vec::with_capacity(out_len),
            starts: Vec::with_capacity(out_len + 1),
            weights: Vec::new(),
        };
        w.starts.push(0);
        if in_len == out_len {
            for i in 0..out_len {
                w.push(i, &[1.0]);
            }
            return w;
        }
        let mut taps = Vec::new();
        for i in 0..out_len {
            match filter {
                DownsampleFilter::Box => {
                    // The box filter's span, every texel in it weighted alike.
                    let (start, end) = box_span(i, out_len, in_len);
                    taps.clear();
                    taps.resize(end - start, 1.0 / (end - start) as f32);
                    w.push(start, &taps);
                }
                DownsampleFilter::Triangle | DownsampleFilter::Lanczos3 => {
                    let first = resampling_taps(filter, i, in_len, out_len, &mut taps);
                    w.push(first, &taps);
                }
            }
        }
        w
    }

    fn push(&mut self, first: usize, taps: &[f32]) {
        self.first.push(first);
        self.weights.extend_from_slice(taps);
        self.starts.push(self.weights.len());
    }

    #[inline]
    fn taps(&self, i: usize) -> (usize, &[f32]) {
        (
            self.first[i],
            &self.weights[self.starts[i]..self.starts[i + 1]],
        )
    }

    /// Resamples one row of `C`-channel texels.
    #[inline]
    fn apply_row<const C: usize>(&self, row: &[f32], out: &mut [f32]) {
        for (i, acc) in out.chunks_exact_mut(C).enumerate() {
            let (first, taps) = self.taps(i);
            let mut sum = [0.0f32; C];
            let texels = row[first * C..(first + taps.len()) * C].chunks_exact(C);
            for (&w, texel) in taps.iter().zip(texels) {
                for k in 0..C {
                    sum[k] += w * texel[k];
                }
            }
            acc.copy_from_slice(&sum);
        }
    }
}

/// The normalised taps of output `i` for a resampling filter (triangle, lanczos3) into
/// `taps`; returns the first input index.
fn resampling_taps(
    filter: DownsampleFilter,
    i: usize,
    in_len: usize,
    out_len: usize,
    taps: &mut Vec<f32>,
) -> usize {
    let scale = in_len as f64 / out_len as f64;
    let radius = match filter {
        DownsampleFilter::Box | DownsampleFilter::Triangle => 1.0,
        DownsampleFilter::Lanczos3 => 3.0,
    };
    let stretch = scale.max(1.0);
    let center = (i as f64 + 0.5) * scale;
    let support = radius * stretch;
    let lo = ((center - support).floor().max(0.0)) as usize;
    let hi = ((center + support).ceil() as usize).min(in_len);
    let mut raw: Vec<(usize, f64)> = (lo..hi)
        .map(|j| {
            let x = (j as f64 + 0.5 - center) / stretch;
            (j, kernel(filter, x))
        })
        .collect();
    // Trim zero weights at both ends (the kernel's support edges).
    while raw.len() > 1 && raw.last().is_some_and(|&(_, w)| w == 0.0) {
        raw.pop();
    }
    let skip = raw
        .iter()
        .take_while(|&&(_, w)| w == 0.0)
        .count()
        .min(raw.len() - 1);
    let raw = &raw[skip..];
    let total: f64 = raw.iter().map(|&(_, w)| w).sum();
    taps.clear();
    if total.abs() < 1e-12 {
        // Cannot happen for these kernels; fall back to the nearest texel.
        let nearest = (center as usize).min(in_len - 1);
        taps.push(1.0);
        return nearest;
    }
    taps.extend(raw.iter().map(|&(_, w)| (w / total) as f32));
    raw[0].0
}

/// The continuous kernel of a resampling filter at `x` (in output texels).
fn kernel(filter: DownsampleFilter, x: f64) -> f64 {
    let ax = x.abs();
    match filter {
        DownsampleFilter::Box => {
            if ax < 0.5 {
                1.0
            } else {
                0.0
            }
        }
        DownsampleFilter::Triangle => (1.0 - ax).max(0.0),
        DownsampleFilter::Lanczos3 => {
            if ax < 1e-9 {
                1.0
            } else if ax < 3.0 {
                let px = std::f64::consts::PI * x;
                3.0 * px.sin() * (px / 3.0).sin() / (px * px)
            } else {
                0.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::box_filter::filter_row;
    use crate::textures::{TexelFormat, TexelType};

    fn ramp(width: u32, height: u32, channels: u32) -> FloatImage {
        let mut img = FloatImage::zeros(width, height, channels);
        let c = channels as usize;
        for y in 0..height as usize {
            for x in 0..width as usize {
                for k in 0..c {
                    img.data[(y * width as usize + x) * c + k] =
                        (x * 7 + y * 13 + k * 3) as f32 % 17.0;
                }
            }
        }
        img
    }

    /// Channel `k` of `src`'s next level as `box_filter::filter_row` computes it (the
    /// filter of `InMemoryImage`, the EXR source's generated levels and the C ABI's pixels),
    /// on one-channel `f32` texels.
    fn box_filter_level(src: &FloatImage, k: usize) -> Vec<f32> {
        let format = TexelFormat::new(TexelType::F32, 1).unwrap();
        let (sw, sh) = (src.width as usize, src.height as usize);
        let (dw, dh) = mip_level_size(src.width, src.height, 1);
        let (dw, dh) = (dw as usize, dh as usize);
        let plane: Vec<u8> = src
            .data
            .iter()
            .skip(k)
            .step_by(src.channels as usize)
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut out = vec![0u8; dw * dh * 4];
        let mut sums = Vec::new();
        for (j, row) in out.chunks_exact_mut(dw * 4).enumerate() {
            let src_row = |y: usize| &plane[y * sw * 4..(y + 1) * sw * 4];
            filter_row(format, (sw, sh), (dw, dh), j, src_row, &mut sums, row);
        }
        out.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    #[test]
    fn build_mips_gives_every_coarser_level() {
        let img = ramp(300, 77, 3);
        let mips = build_mips(&img, DownsampleFilter::Box);
        assert_eq!(mips.len(), 8);
        for (l, m) in mips.iter().enumerate() {
            assert_eq!((m.width, m.height), mip_level_size(300, 77, l as u32 + 1));
            assert!(m.check().is_ok());
        }
        assert!(build_mips(&ramp(1, 1, 4), DownsampleFilter::Box).is_empty());
    }

    #[test]
    fn box_matches_the_in_memory_image_box_on_odd_sides() {
        for &(w, h, c) in &[
            (5u32, 3u32, 4u32),
            (7, 1, 2),
            (1, 9, 1),
            (3, 3, 3),
            (8, 5, 4),
            (37, 19, 3),
        ] {
            let src = ramp(w, h, c);
            let dst = downsample(&src, DownsampleFilter::Box);
            for k in 0..c as usize {
                let want = box_filter_level(&src, k);
                let got = dst.data.iter().skip(k).step_by(c as usize);
                assert_eq!(want.len(), (dst.width * dst.height) as usize);
                for (i, (got, want)) in got.zip(&want).enumerate() {
                    assert!(
                        (got - want).abs() < 1e-5,
                        "{w}x{h} texel {i} channel {k}: {got} {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_filter_preserves_a_constant_and_stays_near_the_mean() {
        for filter in DownsampleFilter::ALL {
            let mut img = FloatImage::zeros(37, 10, 2);
            img.data.iter_mut().for_each(|v| *v = 0.75);
            for level in build_mips(&img, filter) {
                assert!(
                    level.data.iter().all(|v| (v - 0.75).abs() < 1e-5),
                    "{filter:?}"
                );
            }
            let ramped = ramp(64, 64, 1);
            let mean0: f32 = ramped.data.iter().sum::<f32>() / ramped.data.len() as f32;
            let last = build_mips(&ramped, filter).pop().unwrap();
            assert!(
                (last.data[0] - mean0).abs() < 1.0,
                "{filter:?} {}",
                last.data[0]
            );
        }
    }

    #[test]
    fn triangle_weights_at_two_to_one_are_one_three_three_one() {
        let w = Weights::new(DownsampleFilter::Triangle, 8, 4);
        let (first, taps) = w.taps(1);
        assert_eq!(first, 1);
        let want = [0.125, 0.375, 0.375, 0.125];
        assert_eq!(taps.len(), 4);
        for (a, b) in taps.iter().zip(want) {
            assert!((a - b).abs() < 1e-6);
        }
        // At the border the outside taps are dropped and the rest renormalised.
        let (first, taps) = w.taps(0);
        assert_eq!(first, 0);
        assert!((taps.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn names_parse_back() {
        for filter in DownsampleFilter::ALL {
            assert_eq!(filter.name().parse(), Ok(filter));
            assert_eq!(filter.to_string(), filter.name());
        }
        assert!("gaussian".parse::<DownsampleFilter>().is_err());
    }
}
