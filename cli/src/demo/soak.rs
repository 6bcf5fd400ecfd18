//! `demandtex demo --interactive --soak-minutes M`: the interactive demo's streaming
//! frames, the camera path over and over for M minutes in the given budget, with the
//! process's resident memory sampled as it runs. Memory must level off once the budget is
//! full: what grows after that is a leak. Writes `soak.csv` (one row per sample) and
//! `soak.json` (the summary); figures, not a pass/fail test.

use super::interactive::{camera_path, job, scene_loader, shade_frame, streaming_options, Shading};
use super::scene::Scene;
use super::DemoArgs;
use crate::error::CliError;
use crate::rss::process_rss_bytes;
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Samples taken over a run (at least one a second).
const SAMPLES: u32 = 240;

/// The part of the run before memory is expected to level off: its first tenth.
const WARM_UP_FRACTION: f64 = 0.1;

/// One sample of a soak run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoakSample {
    /// Seconds since the run started.
    pub seconds: f64,
    /// Frames rendered so far.
    pub frames: u64,
    /// The process's resident set (VmRSS), bytes.
    pub rss_bytes: u64,
    /// Texture memory resident in the loader, bytes.
    pub resident_bytes: u64,
    /// Tiles evicted so far.
    pub evictions: u64,
}

/// Run the soak: stream frames until `args.soak_minutes` have passed.
pub fn run(args: &DemoArgs, scene: &Scene, pool: &rayon::ThreadPool) -> Result<(), CliError> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Io(format!("{}: {e}", args.out.display())))?;
    let duration = Duration::from_secs_f64(args.soak_minutes * 60.0);
    let every = (duration / SAMPLES).max(Duration::from_secs(1));
    println!(
        "soak: the {}-frame camera path over and over for {:.1} min, a sample every {:.1} s",
        args.frames,
        args.soak_minutes,
        every.as_secs_f64()
    );
    let latency = Duration::from_millis(args.io_latency_ms);
    let (loader, ids) = scene_loader(scene, streaming_options(args, !args.no_rejection), latency)?;
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut next_sample = start;
    let mut frames = 0u64;
    loop {
        let f = (frames % u64::from(args.frames)) as u32;
        let (camera, _) = camera_path(f, args.frames, args.width, args.height);
        let job = job(scene, &ids, &camera, args);
        loader.publish_pending()?;
        let launch = loader.launch_prepare();
        drop(shade_frame(&launch, &job, pool, Shading::Textured));
        drop(loader.process_requests(launch)); // never waited for
        frames += 1;
        let now = Instant::now();
        if now >= next_sample {
            let stats = loader.stats();
            samples.push(SoakSample {
                seconds: (now - start).as_secs_f64(),
                frames,
                rss_bytes: process_rss_bytes()?,
                resident_bytes: stats.resident_bytes,
                evictions: stats.evictions,
            });
            next_sample += every;
        }
        if now - start >= duration {
            break;
        }
    }
    loader.cancel_queued_fills();
    let stats = loader.stats();
    let mut summary = summarize(&samples);
    summary.insert("frames".into(), frames.into());
    summary.insert("budget_bytes".into(), stats.budget_bytes.into());
    summary.insert(
        "peak_resident_bytes".into(),
        stats.peak_resident_bytes.into(),
    );
    summary.insert("evictions".into(), stats.evictions.into());
    summary.insert("failed_textures".into(), stats.failed_textures.into());
    summary.insert("io_latency_ms".into(), args.io_latency_ms.into());
    write_csv(&args.out.join("soak.csv"), &samples)?;
    super::output::write_json(&args.out.join("soak.json"), &summary)?;
    print!("{}", crate::table::object_table(&summary).render());
    println!("wrote {}/soak.csv, soak.json", args.out.display());
    Ok(())
}

/// The summary of a run's samples: resident memory at the end of the warm-up, at the end,
/// its largest value after the warm-up, and its trend after the warm-up (least squares,
/// MiB per hour).
pub fn summarize(samples: &[SoakSample]) -> Map<String, Value> {
    let mut m = Map::new();
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return m;
    };
    let warm_up_end = first.seconds + (last.seconds - first.seconds) * WARM_UP_FRACTION;
    let after: Vec<&SoakSample> = samples
        .iter()
        .filter(|s| s.seconds >= warm_up_end)
        .collect();
    let start_rss = after.first().map_or(last.rss_bytes, |s| s.rss_bytes);
    let max_rss = after.iter().map(|s| s.rss_bytes).max().unwrap_or(start_rss);
    let mib = |b: f64| b / f64::from(1u32 << 20);
    m.insert("seconds".into(), json_f64(last.seconds));
    m.insert("samples".into(), (samples.len() as u64).into());
    m.insert(
        "rss_mib_after_warm_up".into(),
        json_f64(mib(start_rss as f64)),
    );
    m.insert(
        "rss_mib_at_end".into(),
        json_f64(mib(last.rss_bytes as f64)),
    );
    m.insert(
        "rss_mib_max_after_warm_up".into(),
        json_f64(mib(max_rss as f64)),
    );
    m.insert(
        "rss_growth_mib_after_warm_up".into(),
        json_f64(mib(last.rss_bytes as f64 - start_rss as f64)),
    );
    m.insert(
        "rss_trend_mib_per_hour".into(),
        json_f64(mib(slope(&after) * 3600.0)),
    );
    m
}

/// Least-squares slope of resident memory over time, bytes per second (0 with fewer than
/// two samples).
fn slope(samples: &[&SoakSample]) -> f64 {
    let n = samples.len() as f64;
    if samples.len() < 2 {
        return 0.0;
    }
    let mt = samples.iter().map(|s| s.seconds).sum::<f64>() / n;
    let mr = samples.iter().map(|s| s.rss_bytes as f64).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for s in samples {
        num += (s.seconds - mt) * (s.rss_bytes as f64 - mr);
        den += (s.seconds - mt).powi(2);
    }
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

fn json_f64(x: f64) -> Value {
    serde_json::Number::from_f64((x * 1000.0).round() / 1000.0).map_or(Value::Null, Value::Number)
}

fn write_csv(path: &std::path::Path, samples: &[SoakSample]) -> Result<(), CliError> {
    let mut csv = String::from("seconds,frames,rss_bytes,resident_bytes,evictions\n");
    for s in samples {
        let _ = writeln!(
            csv,
            "{:.3},{},{},{},{}",
            s.seconds, s.frames, s.rss_bytes, s.resident_bytes, s.evictions
        );
    }
    std::fs::write(path, csv).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seconds: f64, rss_mib: u64) -> SoakSample {
        SoakSample {
            seconds,
            frames: 0,
            rss_bytes: rss_mib << 20,
            resident_bytes: 0,
            evictions: 0,
        }
    }

    #[test]
    fn the_summary_separates_warm_up_from_growth() {
        // Grows 100 MiB during the warm-up, then 1 MiB per 100 s (36 MiB/h).
        let mut samples = vec![sample(0.0, 10), sample(5.0, 110)];
        samples.extend((1..=10).map(|i| sample(100.0 * i as f64, 110 + i as u64)));
        let m = summarize(&samples);
        assert_eq!(m["rss_mib_after_warm_up"], 111.0);
        assert_eq!(m["rss_mib_at_end"], 120.0);
        assert_eq!(m["rss_growth_mib_after_warm_up"], 9.0);
        assert_eq!(m["rss_trend_mib_per_hour"], 36.0);
        assert!(summarize(&[]).is_empty());
    }

    #[test]
    fn a_short_soak_writes_its_outputs_and_stays_in_budget() {
        let dir = std::env::temp_dir().join(format!("dtx-soak-{}", std::process::id()));
        let args = DemoArgs {
            interactive: true,
            frames: 8,
            soak_minutes: 0.02,
            budget_mb: 8,
            ..DemoArgs::for_test(dir.clone())
        };
        super::super::run(&args, false).unwrap();
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("soak.json")).unwrap()).unwrap();
        assert!(json["frames"].as_u64().unwrap() >= 8, "{json}");
        assert!(json["peak_resident_bytes"].as_u64() <= json["budget_bytes"].as_u64());
        assert_eq!(json["failed_textures"], 0);
        assert!(json["rss_mib_at_end"].as_f64().unwrap() > 0.0);
        let csv = std::fs::read_to_string(dir.join("soak.csv")).unwrap();
        assert!(csv.lines().count() >= 2, "{csv}");
        std::fs::remove_dir_all(dir).ok();
    }
}
