//! Resident lookups per second: a 4096² RGBA8 noise texture made fully resident, sampled at
//! random coordinates through the loader (a multi-pass launch, and the blocking cache on the
//! same loader), against the same filter over flat arrays.

use super::baseline::FlatTexture;
use super::{Record, Rng};
use crate::error::CliError;
use demandtex::sources::{ImageSource, Noise};
use demandtex::textures::{TexelFormat, TextureLayout};
use demandtex::{
    Launch, Loader, LoaderOptions, SampleOptions, TextureCache, TextureDesc, TextureId,
};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SIZE: u32 = 4096;
const COORDS_PER_THREAD: usize = 1 << 16;
/// Lookups between clock reads.
const BATCH: usize = 4096;

/// Launch until one lookup at every tile centre of every level is resident.
fn make_resident(loader: &Loader, tex: TextureId, layout: &TextureLayout) -> Result<(), CliError> {
    let opts = SampleOptions::default();
    for _ in 0..64 {
        let launch = loader.launch_prepare();
        let mut all = true;
        for (level, l) in layout.levels.iter().enumerate() {
            let (tw, th) = (
                layout.tile_width.min(l.width),
                layout.tile_height.min(l.height),
            );
            for y in (0..l.height).step_by(th as usize) {
                for x in (0..l.width).step_by(tw as usize) {
                    let s = (x as f32 + 0.5 * tw as f32) / l.width as f32;
                    let t = (y as f32 + 0.5 * th as f32) / l.height as f32;
                    all &= launch.tex2d_lod(tex, s, t, level as f32, &opts).resident;
                }
            }
        }
        loader.process_requests(launch).wait();
        if all {
            return Ok(());
        }
    }
    Err(CliError::Demandtex(
        "the lookup texture did not become resident in 64 launches".into(),
    ))
}

/// Lookups per second over `threads` threads for `time`, each thread cycling through its own
/// coordinates; and the lookups that were not resident.
pub(super) fn measure<F>(
    threads: usize,
    time: Duration,
    coords: &[Vec<[f32; 2]>],
    lookup: F,
) -> (f64, u64)
where
    F: Fn(f32, f32) -> ([f32; 4], bool) + Sync,
{
    let results: Vec<(u64, f64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = coords[..threads]
            .iter()
            .map(|cs| {
                let lookup = &lookup;
                scope.spawn(move || {
                    let (mut n, mut misses, mut acc) = (0u64, 0u64, 0.0f32);
                    let start = Instant::now();
                    loop {
                        for chunk in cs.chunks(BATCH) {
                            for c in chunk {
                                let (v, ok) = lookup(c[0], c[1]);
                                acc += v[0];
                                misses += u64::from(!ok);
                            }
                            n += chunk.len() as u64;
                            if start.elapsed() >= time {
                                black_box(acc);
                                return (n, start.elapsed().as_secs_f64(), misses);
                            }
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread"))
            .collect()
    });
    let n: u64 = results.iter().map(|r| r.0).sum();
    let secs = results.iter().map(|r| r.1).fold(0.0, f64::max);
    (n as f64 / secs, results.iter().map(|r| r.2).sum())
}

fn demand(
    launch: &Launch,
    tex: TextureId,
    ddx: [f32; 2],
    ddy: [f32; 2],
) -> impl Fn(f32, f32) -> ([f32; 4], bool) + Sync + '_ {
    let opts = SampleOptions::default();
    move |s, t| {
        let r = launch.tex2d_grad(tex, s, t, ddx, ddy, &opts);
        (r.value, r.resident)
    }
}

/// Run the lookup benchmark for each thread count.
pub fn run(threads_list: &[usize], time: Duration) -> Result<Vec<Record>, CliError> {
    let source: Arc<dyn ImageSource> = Arc::new(Noise::new(SIZE, SIZE, 7 as _, TexelFormat::RGBA8));
    let info = source
        .open()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)?;
    let flat = FlatTexture::read(source.as_ref()).map_err(CliError::Demandtex)?;
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: 1 << 30,
        ..LoaderOptions::default()
    })?;
    let tex = loader.create_texture(source, TextureDesc::default())?;
    make_resident(&loader, tex, &layout)?;
    let launch = loader.launch_prepare();

    let max_threads = threads_list.iter().copied().max().unwrap_or(1);
    let coords: Vec<Vec<[f32; 2]>> = (0..max_threads)
        .map(|i| {
            let mut rng = Rng::new(i as u64 + 1);
            (0..COORDS_PER_THREAD)
                .map(|_| [rng.next_f32(), rng.next_f32()])
                .collect()
        })
        .collect();
    // Bilinear: gradients of half a texel (magnification: level 0). Trilinear: lod 1.5.
    let tiny = 0.5 / SIZE as f32;
    let tri = 2f32.powf(1.5) / SIZE as f32;
    let mut records = Vec::new();
    for (filter, g) in [("bilinear", tiny), ("trilinear lod 1.5", tri)] {
        let (ddx, ddy) = ([g, 0.0], [0.0, g]);
        // How closely the two implementations agree, on the first thread's coordinates.
        let mut max_abs_diff = 0.0f32;
        for c in coords[0].iter().take(4096) {
            let a = launch
                .tex2d_grad(tex, c[0], c[1], ddx, ddy, &SampleOptions::default())
                .value;
            let b = flat.grad(c[0], c[1], ddx, ddy);
            for i in 0..4 {
                max_abs_diff = max_abs_diff.max((a[i] - b[i]).abs());
            }
        }
        let cache = TextureCache::from_loader(&loader);
        for &threads in threads_list {
            let (demand_rate, misses) =
                measure(threads, time, &coords, demand(&launch, tex, ddx, ddy));
            let (blocking_rate, _) = measure(threads, time, &coords, |s, t| {
                let r = cache.tex2d_grad(tex, s, t, ddx, ddy, &SampleOptions::default());
                (r.value, r.resident)
            });
            let (base_rate, _) = measure(threads, time, &coords, |s, t| {
                (flat.grad(s, t, ddx, ddy), true)
            });
            records.push(Record {
                bench: "lookups",
                case: format!("{filter} 4096² RGBA8"),
                threads,
                figures: vec![
                    ("demand_lookups_per_second", demand_rate),
                    ("baseline_lookups_per_second", base_rate),
                    ("ratio_demand_to_baseline", demand_rate / base_rate),
                    ("blocking_lookups_per_second", blocking_rate),
                    ("ratio_blocking_to_baseline", blocking_rate / base_rate),
                    ("non_resident_lookups", misses as f64),
                    ("max_abs_diff_to_baseline", max_abs_diff as f64),
                ],
            });
        }
    }
    records.extend(stochastic_records(
        &launch,
        tex,
        threads_list,
        time,
        &coords,
    )?);
    loader.process_requests(launch).wait();
    Ok(records)
}

/// A jitter in [0, 1) from a coordinate's bits (a renderer's per-sample random numbers).
fn jitter_of(x: f32) -> f32 {
    let h = x.to_bits().wrapping_mul(0x9E37_79B9);
    (h >> 8) as f32 / (1u32 << 24) as f32
}

/// Stochastic two-level point lookups (`SampleOptions::stochastic`) at lod 1.5 against the
/// trilinear ones of the same launch and coordinates.
fn stochastic_records(
    launch: &Launch,
    tex: TextureId,
    threads_list: &[usize],
    time: Duration,
    coords: &[Vec<[f32; 2]>],
) -> Result<Vec<Record>, CliError> {
    let g = 2f32.powf(1.5) / SIZE as f32;
    let (ddx, ddy) = ([g, 0.0], [0.0, g]);
    let mut records = Vec::new();
    for &threads in threads_list {
        let (trilinear_rate, _) = measure(threads, time, coords, demand(launch, tex, ddx, ddy));
        let (rate, misses) = measure(threads, time, coords, |s, t| {
            let opts = SampleOptions {
                stochastic: Some([jitter_of(s), jitter_of(t)]),
                ..SampleOptions::default()
            };
            let r = launch.tex2d_grad(tex, s, t, ddx, ddy, &opts);
            (r.value, r.resident)
        });
        records.push(Record {
            bench: "stochastic lookups",
            case: "two-level point lod 1.5 4096² RGBA8".into(),
            threads,
            figures: vec![
                ("demand_lookups_per_second", rate),
                ("trilinear_lookups_per_second", trilinear_rate),
                ("ratio_stochastic_to_trilinear", rate / trilinear_rate),
                ("non_resident_lookups", misses as f64),
            ],
        });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_lookups_agree_with_the_flat_baseline() {
        let source: Arc<dyn ImageSource> = Arc::new(Noise::new(512, 512, 3, TexelFormat::RGBA8));
        let info = source.open().unwrap();
        let layout =
            TextureLayout::new(info.width, info.height, info.num_levels, info.format).unwrap();
        let flat = FlatTexture::read(source.as_ref()).unwrap();
        let loader = Loader::new(LoaderOptions::default()).unwrap();
        let tex = loader
            .create_texture(source, TextureDesc::default())
            .unwrap();
        make_resident(&loader, tex, &layout).unwrap();
        let launch = loader.launch_prepare();
        let mut rng = Rng::new(9);
        let coords = vec![(0..1000)
            .map(|_| [rng.next_f32(), rng.next_f32()])
            .collect::<Vec<_>>()];
        for g in [0.5 / 512.0, 2f32.powf(1.5) / 512.0, 5.0 / 512.0] {
            let (ddx, ddy) = ([g, 0.0], [0.0, g]);
            for c in &coords[0] {
                let s = launch.tex2d_grad(tex, c[0], c[1], ddx, ddy, &SampleOptions::default());
                assert!(s.resident);
                let b = flat.grad(c[0], c[1], ddx, ddy);
                for i in 0..4 {
                    assert!(
                        (s.value[i] - b[i]).abs() < 1e-4,
                        "{c:?} g={g}: {:?} vs {b:?}",
                        s.value
                    );
                }
            }
            let (rate, misses) = measure(
                1,
                Duration::from_millis(1),
                &coords,
                demand(&launch, tex, ddx, ddy),
            );
            assert!(rate > 0.0);
            assert_eq!(misses, 0);
        }
        loader.process_requests(launch).wait();
    }
}
