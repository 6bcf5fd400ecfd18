//! Fill throughput from procedural sources: rounds of K new level-0 tiles requested in one
//! launch, timing `process_requests` + `wait`, for each pattern, format and fill-thread count.
//! The pool is filled to its budget first (untimed, for at most the measuring time), so the
//! figures are of the source and the fill path, not of fresh memory being faulted in.

use super::rounds::{loader_fill_tallies, Tally};
use super::Record;
use crate::error::CliError;
use demandtex::sources::{Checkerboard, ImageSource, Mandelbrot, Noise};
use demandtex::textures::TexelFormat;
use std::sync::Arc;
use std::time::Duration;

const SIZE: u32 = 65536;
/// Tiles per round (and per launch).
const K: usize = 512;
const MANDELBROT_ITERATIONS: u32 = 256;

fn source(pattern: &str, format: TexelFormat) -> Arc<dyn ImageSource> {
    match pattern {
        "checkerboard" => Arc::new(Checkerboard::new(SIZE, SIZE, 16 as _, format)),
        "noise" => Arc::new(Noise::new(SIZE, SIZE, 1 as _, format)),
        _ => Arc::new(Mandelbrot::new(
            SIZE,
            SIZE,
            MANDELBROT_ITERATIONS as _,
            format,
        )),
    }
}

fn one_case(
    pattern: &str,
    format: TexelFormat,
    threads: usize,
    time: Duration,
) -> Result<Tally, CliError> {
    let tallies = loader_fill_tallies(source(pattern, format), threads, K, time, 1)?;
    Ok(tallies.into_iter().next().unwrap_or_default())
}

/// Run the fill benchmark.
pub fn run(threads_list: &[usize], time: Duration) -> Result<Vec<Record>, CliError> {
    let mut records = Vec::new();
    for pattern in ["checkerboard", "noise", "mandelbrot"] {
        for (fname, format) in [
            ("RGBA8", TexelFormat::RGBA8),
            ("RGBA32F", TexelFormat::RGBA32F),
        ] {
            for &threads in threads_list {
                let t = one_case(pattern, format, threads, time)?;
                let secs = t.seconds.max(1e-9);
                records.push(Record {
                    bench: "fill",
                    case: format!("{pattern} {fname}"),
                    threads,
                    figures: vec![
                        ("tiles_per_second", t.filled as f64 / secs),
                        ("mb_per_second", t.bytes_read as f64 / secs / 1e6),
                        ("us_per_tile", secs * 1e6 / t.filled.max(1) as f64),
                        ("tiles_filled", t.filled as f64),
                        ("evictions", t.evictions as f64),
                    ],
                });
            }
        }
    }
    Ok(records)
}
