//! Pages that keep BC blocks (`LoaderOptions::keep_blocks`) against pages of the same
//! blocks decoded to texels, on DDS files the CLI's encoder writes (BC1 and BC7, 2048²,
//! full mip chains) from a synthetic painted image (smooth colour fields and 6% noise).
//!
//! Two measurements, each with blocks kept and decoded in the same run:
//! - resident lookups per second (bilinear at level 0, trilinear at lod 1.5; random
//!   coordinates, and rows of coordinates 0.8 texels apart as a camera makes them),
//!   everything resident, on each thread count: what decoding the texels a lookup reads
//!   costs;
//! - three multi-pass frames of the same 64K level-0 lookups over four textures in a
//!   budget of a quarter of their decoded level 0: launches, bytes read, evictions and the
//!   peak against the budget: what holding 4–8× the texels in the budget saves.

use super::coalescing::run_frames;
use super::lookups::measure;
use super::{Record, Rng};
use crate::convert::dds::{write_dds, DdsCompression, DdsWriteOptions};
use crate::error::CliError;
use demandtex::sources::{file_source, FloatImage};
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureDesc, TextureId, TILE_BYTES};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIDE: u32 = 2048;
const TEXTURES: usize = 4;
const COORDS: usize = 1 << 16;

/// A painted-looking RGBA image: smooth colour fields with 6% noise and an alpha ramp.
fn painted(seed: u32) -> FloatImage {
    let mut image = FloatImage::zeros(SIDE, SIDE, 4);
    let f = seed as f32 * 0.37 + 1.0;
    for y in 0..SIDE {
        for x in 0..SIDE {
            let (u, v) = (x as f32 / SIDE as f32, y as f32 / SIDE as f32);
            let h = (x.wrapping_mul(0x9E37_79B9) ^ y.wrapping_mul(0x85EB_CA6B) ^ seed) >> 8;
            let n = ((h & 0xffff) as f32 / 65535.0 - 0.5) * 0.12;
            let at = ((y * SIDE + x) * 4) as usize;
            image.data[at] = (0.5 + 0.4 * (u * 6.0 * f).sin() + n).clamp(0.0, 1.0);
            image.data[at + 1] = (0.5 + 0.4 * (v * 5.0 + u * 3.0 * f).cos() + n).clamp(0.0, 1.0);
            image.data[at + 2] =
                (0.5 + 0.4 * ((u + v) * 9.0).sin() * (v * 2.0 * f).cos() + n).clamp(0.0, 1.0);
            image.data[at + 3] = (0.25 + 0.75 * u).clamp(0.0, 1.0);
        }
    }
    image
}

/// The benchmark's DDS files, written once into `dir` (kept between runs).
fn files(dir: &Path, compression: DdsCompression) -> Result<Vec<PathBuf>, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Demandtex(format!("{}: {e}", dir.display())))?;
    (0..TEXTURES)
        .map(|i| {
            let path = dir.join(format!("painted-{i}-{}.dds", compression.name()));
            if !path.exists() {
                let options = DdsWriteOptions {
                    compression,
                    ..DdsWriteOptions::default()
                };
                write_dds(&path, &painted(i as u32 + 1), &options)?;
            }
            Ok(path)
        })
        .collect()
}

fn loader(keep_blocks: bool, budget: u64) -> Result<Loader, CliError> {
    Ok(Loader::new(LoaderOptions {
        max_texture_memory: budget,
        keep_blocks,
        ..LoaderOptions::default()
    })?)
}

/// Run both measurements for BC1 and BC7.
pub fn run(threads_list: &[usize], time: Duration) -> Result<Vec<Record>, CliError> {
    let dir = std::env::temp_dir().join("demandtex-bench-blocks");
    let mut records = Vec::new();
    for compression in [DdsCompression::Bc1, DdsCompression::Bc7] {
        let paths = files(&dir, compression)?;
        records.extend(lookups(&paths[0], compression, threads_list, time)?);
        records.extend(budget(&paths, compression)?);
    }
    Ok(records)
}

/// Make every page of `tex` resident: launch until lookups at every level's texels in a
/// grid are resident.
fn make_resident(loader: &Loader, tex: TextureId) -> Result<(), CliError> {
    let opts = SampleOptions::default();
    for _ in 0..64 {
        let launch = loader.launch_prepare();
        let mut all = true;
        for level in 0..12 {
            for i in 0..64 * 64 {
                let (s, t) = (
                    (i % 64) as f32 / 64.0 + 0.007,
                    (i / 64) as f32 / 64.0 + 0.007,
                );
                all &= launch.tex2d_lod(tex, s, t, level as f32, &opts).resident;
            }
        }
        loader.process_requests(launch).wait();
        if all {
            return Ok(());
        }
    }
    Err(CliError::Demandtex(
        "the texture did not become resident".into(),
    ))
}

fn lookups(
    path: &Path,
    compression: DdsCompression,
    threads_list: &[usize],
    time: Duration,
) -> Result<Vec<Record>, CliError> {
    let mut resident = Vec::new();
    for keep in [false, true] {
        let l = loader(keep, 1 << 30)?;
        let tex = l.create_texture(file_source(path), TextureDesc::default())?;
        make_resident(&l, tex)?;
        resident.push((l, tex));
    }
    let max_threads = threads_list.iter().copied().max().unwrap_or(1);
    let random: Vec<Vec<[f32; 2]>> = (0..max_threads)
        .map(|i| {
            let mut rng = Rng::new(i as u64 + 11);
            (0..COORDS)
                .map(|_| [rng.next_f32(), rng.next_f32()])
                .collect()
        })
        .collect();
    // A camera's order: rows of 256 lookups 0.8 level-0 texels apart, in a window of its
    // own for each thread.
    let coherent: Vec<Vec<[f32; 2]>> = (0..max_threads)
        .map(|i| {
            let step = 0.8 / SIDE as f32;
            let origin = (i as f32 * 0.37 + 0.1).fract();
            (0..COORDS)
                .map(|k| {
                    let (x, y) = ((k % 256) as f32, (k / 256) as f32);
                    [origin + x * step, origin + y * step]
                })
                .collect()
        })
        .collect();
    let mut records = Vec::new();
    for ((filter, g), (order, coords)) in [
        ("bilinear", 0.5 / SIDE as f32),
        ("trilinear lod 1.5", 2f32.powf(1.5) / SIDE as f32),
    ]
    .into_iter()
    .flat_map(|f| [("random", &random), ("coherent", &coherent)].map(|o| (f, o)))
    {
        let (ddx, ddy) = ([g, 0.0], [0.0, g]);
        // The two agree exactly: the same blocks through the same decoder.
        let (la, lb) = (
            resident[0].0.launch_prepare(),
            resident[1].0.launch_prepare(),
        );
        let mut same = true;
        for c in coords[0].iter().take(4096) {
            let o = SampleOptions::default();
            let a = la.tex2d_grad(resident[0].1, c[0], c[1], ddx, ddy, &o);
            let b = lb.tex2d_grad(resident[1].1, c[0], c[1], ddx, ddy, &o);
            same &= a.resident && b.resident && a.value == b.value;
        }
        for &threads in threads_list {
            let rate = |launch: &demandtex::Launch, tex| {
                measure(threads, time, coords, |s, t| {
                    let r = launch.tex2d_grad(tex, s, t, ddx, ddy, &SampleOptions::default());
                    (r.value, r.resident)
                })
            };
            let (decoded, _) = rate(&la, resident[0].1);
            let (kept, misses) = rate(&lb, resident[1].1);
            records.push(Record {
                bench: "blocks_lookups",
                case: format!("{filter} {order} {SIDE}² {}", compression.name()),
                threads,
                figures: vec![
                    ("decoded_lookups_per_second", decoded),
                    ("kept_blocks_lookups_per_second", kept),
                    ("ratio_kept_to_decoded", kept / decoded),
                    ("non_resident_lookups", misses as f64),
                    ("results_identical", f64::from(u8::from(same))),
                ],
            });
        }
        resident[0].0.process_requests(la).wait();
        resident[1].0.process_requests(lb).wait();
    }
    Ok(records)
}

fn budget(paths: &[PathBuf], compression: DdsCompression) -> Result<Vec<Record>, CliError> {
    // A quarter of the textures' level 0 decoded to RGBA8.
    let budget = (TEXTURES as u64 * SIDE as u64 * SIDE as u64 * 4 / 4).max(16 * TILE_BYTES as u64);
    let mut records = Vec::new();
    for keep in [false, true] {
        let l = loader(keep, budget)?;
        let textures: Vec<TextureId> = paths
            .iter()
            .map(|p| l.create_texture(file_source(p), TextureDesc::default()))
            .collect::<Result<_, _>>()?;
        let frames = run_frames(&l, &textures, SIDE)?;
        let s = l.stats();
        records.push(Record {
            bench: "blocks_budget",
            case: format!(
                "{TEXTURES} × {SIDE}² {}, budget ¼ of level 0 as RGBA8, blocks {}",
                compression.name(),
                if keep { "kept" } else { "decoded" }
            ),
            threads: 1,
            figures: vec![
                ("launches", frames.launches as f64),
                ("tiles_read", s.tiles_filled as f64),
                ("bytes_read", s.bytes_read as f64),
                (
                    "reread_after_frame_1_bytes",
                    (s.bytes_read - frames.after_first.bytes_read) as f64,
                ),
                ("evictions", s.evictions as f64),
                ("peak_resident_bytes", s.peak_resident_bytes as f64),
                ("budget_bytes", s.budget_bytes as f64),
                ("seconds", frames.seconds),
            ],
        });
    }
    Ok(records)
}
