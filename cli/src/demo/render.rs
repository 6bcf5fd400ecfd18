//! Multi-pass rendering: every launch shades the pixels that are not done yet; a pixel is
//! done once all its lookups were resident, and keeps that value. Between launches the
//! loader fills what the launch requested.

use super::camera::Camera;
use super::scene::{Lookup, Scene};
use crate::progress::Progress;
use demandtex::{Launch, Loader, SampleOptions, TextureId};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A float RGBA image, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixels, row-major.
    pub pixels: Vec<[f32; 4]>,
}

impl Frame {
    /// The largest absolute difference of any channel of any pixel (infinite if the sizes
    /// differ; NaN counts as infinite).
    pub fn max_abs_diff(&self, other: &Frame) -> f32 {
        if (self.width, self.height) != (other.width, other.height) {
            return f32::INFINITY;
        }
        let mut worst = 0.0f32;
        for (a, b) in self.pixels.iter().zip(&other.pixels) {
            for c in 0..4 {
                let d = (a[c] - b[c]).abs();
                if d.is_nan() {
                    return f32::INFINITY;
                }
                worst = worst.max(d);
            }
        }
        worst
    }
}

/// What a render produced.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderOutcome {
    /// The image (pixels that never converged hold their last, non-resident value).
    pub frame: Frame,
    /// Whether every pixel converged.
    pub converged: bool,
    /// Launches used.
    pub launches: u32,
    /// Pixels done.
    pub pixels_done: usize,
}

/// What a render needs besides the loader.
pub struct RenderJob<'a> {
    /// The scene.
    pub scene: &'a Scene,
    /// Texture ids, in the order of `scene.textures`.
    pub textures: &'a [TextureId],
    /// The camera (its size is the image size).
    pub camera: &'a Camera,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Stop after this many launches even if not converged.
    pub max_launches: u32,
    /// Interactive shading: stochastic two-level point filtering, jittered per pixel.
    pub stochastic: bool,
}

fn sample(launch: &Launch, ids: &[TextureId], l: &Lookup) -> ([f32; 4], bool) {
    let opts = SampleOptions::default();
    let s = launch.tex2d_grad(ids[l.texture], l.st[0], l.st[1], l.ddx, l.ddy, &opts);
    (s.value, s.resident)
}

/// Shade pixel `(i, j)` in `launch`: its colour, and whether every lookup was resident.
pub fn shade_pixel(launch: &Launch, job: &RenderJob<'_>, i: u32, j: u32) -> ([f32; 4], bool) {
    let rays = job.camera.pixel_rays(i, j);
    let Some(hit) = job.scene.intersect(&rays) else {
        return (job.scene.sky(&rays[0]), true);
    };
    let (base, detail) = job.scene.lookups(&hit);
    let (b, b_ok) = sample(launch, job.textures, &base);
    let (d, d_ok) = match detail {
        Some(l) => {
            let (v, ok) = sample(launch, job.textures, &l);
            (Some(v), ok)
        }
        None => (None, true),
    };
    (job.scene.shade(&hit, b, d), b_ok && d_ok)
}

/// The pixels a launch shades: a window of the row-major pixel order. Everything before it
/// is done. It halves when a launch completes no pixel while requests were deferred (the
/// budget cannot hold what the window's pixels need together: without this, every pending
/// pixel would keep its tiles referenced and none could be evicted), and doubles again each
/// time it completes.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    start: usize,
    len: usize,
    total: usize,
}

impl Window {
    /// The whole frame of `total` pixels.
    pub fn new(total: usize) -> Window {
        Window {
            start: 0,
            len: total,
            total,
        }
    }

    /// The pixel indices to shade.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start..(self.start + self.len).min(self.total)
    }

    /// Move on after a launch: skip the done prefix, grow if the window completed, shrink
    /// if the launch finished nothing and requests were deferred.
    pub fn update(&mut self, done: &[bool], progressed: bool, deferred: bool) {
        let complete = done[self.range()].iter().all(|&d| d);
        while self.start < self.total && done[self.start] {
            self.start += 1;
        }
        if complete {
            self.len = self.len.saturating_mul(2).min(self.total.max(1));
        } else if !progressed && deferred {
            self.len = (self.len / 2).max(1);
        }
    }
}

/// Render until every pixel is done or `max_launches` launches have run, shading rows in
/// parallel on `pool`.
pub fn render(
    loader: &Loader,
    job: &RenderJob<'_>,
    pool: &rayon::ThreadPool,
    progress: &Progress,
) -> RenderOutcome {
    let (w, h) = (job.width as usize, job.height as usize);
    let mut pixels = vec![[0.0f32; 4]; w * h];
    let mut done = vec![false; w * h];
    let mut pixels_done = 0usize;
    let mut launches = 0u32;
    let mut window = Window::new(w * h);
    while pixels_done < w * h && launches < job.max_launches {
        let launch = loader.launch_prepare();
        launches += 1;
        progress.set_message(format!("launch {launches}"));
        let active = window.range();
        let newly = AtomicUsize::new(0);
        pool.install(|| {
            pixels
                .par_chunks_mut(w)
                .zip(done.par_chunks_mut(w))
                .enumerate()
                .for_each(|(j, (row, row_done))| {
                    let first = j * w;
                    let (lo, hi) = (active.start.max(first), active.end.min(first + w));
                    let mut n = 0;
                    for idx in lo..hi {
                        let i = idx - first;
                        if row_done[i] {
                            continue;
                        }
                        let (c, ok) = shade_pixel(&launch, job, i as u32, j as u32);
                        row[i] = c;
                        if ok {
                            row_done[i] = true;
                            n += 1;
                        }
                    }
                    if n > 0 {
                        newly.fetch_add(n, Ordering::Relaxed);
                        progress.inc(n as u64);
                    }
                });
        });
        let newly = newly.into_inner();
        pixels_done += newly;
        let deferred_before = loader.stats().deferred_no_memory;
        let ticket = loader.process_requests(launch);
        ticket.wait();
        let deferred = loader.stats().deferred_no_memory > deferred_before;
        window.update(&done, newly > 0, deferred);
        tracing::debug!(launches, pixels_done, tasks = ticket.tasks_total(), deferred, window = ?window.range(), "launch finished");
    }
    RenderOutcome {
        frame: Frame {
            width: job.width,
            height: job.height,
            pixels,
        },
        converged: pixels_done == w * h,
        launches,
        pixels_done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_shrinks_when_starved_and_grows_when_complete() {
        let mut done = vec![false; 8];
        let mut w = Window::new(8);
        w.update(&done, false, false);
        assert_eq!(w.range(), 0..8, "no deferral: keep the whole frame");
        w.update(&done, false, true);
        assert_eq!(w.range(), 0..4);
        w.update(&done, true, true);
        assert_eq!(w.range(), 0..4, "progress: keep the size");
        done[..4].fill(true);
        w.update(&done, true, false);
        assert_eq!(w.range(), 4..8, "complete: move on and grow");
        w.update(&done, false, true);
        w.update(&done, false, true);
        w.update(&done, false, true);
        assert_eq!(w.range(), 4..5, "never below one pixel");
        done[4..].fill(true);
        w.update(&done, true, false);
        assert!(w.range().is_empty());
    }

    #[test]
    fn frame_difference_is_the_worst_channel() {
        let a = Frame {
            width: 2,
            height: 1,
            pixels: vec![[0.0; 4], [0.5, 0.5, 0.5, 1.0]],
        };
        let mut b = a.clone();
        assert_eq!(a.max_abs_diff(&b), 0.0);
        b.pixels[1][2] = 0.25;
        assert_eq!(a.max_abs_diff(&b), 0.25);
        b.pixels[0][0] = f32::NAN;
        assert!(a.max_abs_diff(&b).is_infinite());
        let c = Frame {
            width: 1,
            height: 2,
            pixels: a.pixels.clone(),
        };
        assert!(a.max_abs_diff(&c).is_infinite());
    }
}
