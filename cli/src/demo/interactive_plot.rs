//! `interactive.png`: three stacked panels over the frames of an interactive run — frame
//! time of the streaming (red), fully resident (green) and untextured (blue) runs; resident
//! MiB (orange); fraction of pixels at full detail (purple). Camera cuts are grey vertical
//! lines. Drawn into a [`Frame`] and written with the demo's PNG writer.

use super::interactive_io::FrameRecord;
use super::render::Frame;
use crate::error::CliError;
use std::path::Path;

const WIDTH: u32 = 960;
const PANEL: u32 = 180;
const MARGIN: u32 = 12;

const RED: [f32; 4] = [0.85, 0.1, 0.1, 1.0];
const GREEN: [f32; 4] = [0.1, 0.6, 0.2, 1.0];
const BLUE: [f32; 4] = [0.15, 0.3, 0.9, 1.0];
const ORANGE: [f32; 4] = [0.95, 0.55, 0.1, 1.0];
const PURPLE: [f32; 4] = [0.55, 0.2, 0.75, 1.0];
const GREY: [f32; 4] = [0.75, 0.75, 0.75, 1.0];
const AXIS: [f32; 4] = [0.2, 0.2, 0.2, 1.0];

struct Canvas {
    frame: Frame,
}

impl Canvas {
    fn new(width: u32, height: u32) -> Canvas {
        Canvas {
            frame: Frame {
                width,
                height,
                pixels: vec![[1.0; 4]; width as usize * height as usize],
            },
        }
    }

    fn put(&mut self, x: i64, y: i64, c: [f32; 4]) {
        let (w, h) = (self.frame.width as i64, self.frame.height as i64);
        if (0..w).contains(&x) && (0..h).contains(&y) {
            self.frame.pixels[(y * w + x) as usize] = c;
        }
    }

    /// A line from (x0, y0) to (x1, y1), two pixels thick.
    fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), c: [f32; 4]) {
        let steps = ((x1 - x0).abs().max((y1 - y0).abs()).ceil() as i64).max(1);
        for k in 0..=steps {
            let t = k as f64 / steps as f64;
            let (x, y) = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t);
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                self.put(x.round() as i64 + dx, y.round() as i64 + dy, c);
            }
        }
    }
}

/// One panel: `series` (value per frame, colour) scaled to `[0, top]`, at panel `index`.
fn panel(
    canvas: &mut Canvas,
    index: u32,
    n: usize,
    cuts: &[usize],
    series: &[(Vec<f64>, [f32; 4])],
) {
    let top = series
        .iter()
        .flat_map(|(v, _)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.05;
    let y0 = (index * (PANEL + MARGIN) + MARGIN) as f64;
    let (x0, x1) = (MARGIN as f64, (WIDTH - MARGIN) as f64);
    let x_of = |i: usize| x0 + (x1 - x0) * i as f64 / (n.max(2) - 1) as f64;
    let y_of = |v: f64| y0 + PANEL as f64 * (1.0 - (v / top).clamp(0.0, 1.0));
    for &c in cuts {
        canvas.line((x_of(c), y0), (x_of(c), y0 + PANEL as f64), GREY);
    }
    canvas.line((x0, y0 + PANEL as f64), (x1, y0 + PANEL as f64), AXIS);
    canvas.line((x0, y0), (x0, y0 + PANEL as f64), AXIS);
    for (values, colour) in series {
        for i in 1..values.len() {
            canvas.line(
                (x_of(i - 1), y_of(values[i - 1])),
                (x_of(i), y_of(values[i])),
                *colour,
            );
        }
    }
}

/// The plot of `records` as an image.
pub fn plot(records: &[FrameRecord]) -> Frame {
    let n = records.len();
    let height = 3 * (PANEL + MARGIN) + MARGIN;
    let mut canvas = Canvas::new(WIDTH, height);
    let cuts: Vec<usize> = (0..n).filter(|&i| records[i].cut).collect();
    let col = |f: fn(&FrameRecord) -> f64| records.iter().map(f).collect::<Vec<f64>>();
    panel(
        &mut canvas,
        0,
        n,
        &cuts,
        &[
            (col(|r| r.untextured_seconds * 1e3), BLUE),
            (col(|r| r.resident_seconds * 1e3), GREEN),
            (col(|r| r.seconds * 1e3), RED),
        ],
    );
    panel(
        &mut canvas,
        1,
        n,
        &cuts,
        &[(
            col(|r| r.resident_bytes as f64 / (1u64 << 20) as f64),
            ORANGE,
        )],
    );
    panel(
        &mut canvas,
        2,
        n,
        &cuts,
        &[(col(|r| r.full_detail), PURPLE)],
    );
    canvas.frame
}

/// Write the plot of `records` to `path` (PNG).
pub fn write(path: &Path, records: &[FrameRecord]) -> Result<(), CliError> {
    super::output::write_png(path, &plot(records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_draws_each_series_in_its_colour() {
        let records: Vec<FrameRecord> = (0..10)
            .map(|i| FrameRecord {
                frame: i,
                cut: i == 5,
                seconds: 0.01 * (1 + i % 3) as f64,
                requests: 0,
                rejected: 0,
                dropped: 0,
                fills_dropped: 0,
                published: 0,
                resident_bytes: (i as u64) << 20,
                full_detail: i as f64 / 10.0,
                resident_seconds: 0.01,
                untextured_seconds: 0.005,
                phases: Default::default(),
            })
            .collect();
        let img = plot(&records);
        assert_eq!(img.width, WIDTH);
        for c in [RED, GREEN, BLUE, ORANGE, PURPLE, GREY] {
            assert!(img.pixels.contains(&c), "{c:?}");
        }
    }
}
