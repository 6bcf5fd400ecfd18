//! The interactive demo's records and outputs: one [`FrameRecord`] per frame, `frames.csv`,
//! and the summary of `interactive.json`.

use crate::error::CliError;
use serde_json::{Map, Value};
use std::path::Path;

/// Where a streaming frame's time went, in seconds (0 where not measured).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FramePhases {
    /// Publication and `launch_prepare` (the host's, on the frame's path).
    pub prepare: f64,
    /// Shading: the kernel's device time on a GPU (timing events around it), the samplers'
    /// wall time on the CPU.
    pub shade: f64,
    /// `process_requests` (on a GPU it waits for the kernel, and publishes tiles while it
    /// runs under `TilePublication::DuringLaunch`).
    pub process: f64,
}

/// What one frame of the streaming run did, and how long its resident counterparts took.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRecord {
    /// Frame index.
    pub frame: u32,
    /// Whether the camera cut to a new view at this frame.
    pub cut: bool,
    /// Seconds the streaming frame took (publish, launch, shade, hand requests over).
    pub seconds: f64,
    /// Distinct pages requested.
    pub requests: u64,
    /// New requests rejected (probabilistic rejection).
    pub rejected: u64,
    /// Requests dropped (over the per-launch cap or the fill queue's bound).
    pub dropped: u64,
    /// Queued fills dropped because their launch was too old when they came up.
    pub fills_dropped: u64,
    /// Publications made at the frame's start.
    pub published: u64,
    /// Texture memory held after the frame.
    pub resident_bytes: u64,
    /// Fraction of pixels whose every lookup was at full detail.
    pub full_detail: f64,
    /// Seconds of the same frame with every needed tile resident.
    pub resident_seconds: f64,
    /// Seconds of the same frame without texturing.
    pub untextured_seconds: f64,
    /// Where the streaming frame's time went.
    pub phases: FramePhases,
}

impl FrameRecord {
    /// A streaming frame's record: frame `frame` (a cut or not) took `seconds`, made
    /// `published` publications at its start and had `full_detail` of its pixels at full
    /// detail; the counts are the loader's statistics `after` the frame less those
    /// `before` it. The reference times are filled in later.
    pub fn streaming(
        (frame, cut): (u32, bool),
        seconds: f64,
        published: u64,
        full_detail: f64,
        before: &demandtex::Stats,
        after: &demandtex::Stats,
    ) -> FrameRecord {
        FrameRecord {
            frame,
            cut,
            seconds,
            requests: after.requests - before.requests,
            rejected: after.requests_rejected - before.requests_rejected,
            dropped: after.requests_dropped - before.requests_dropped,
            fills_dropped: after.fills_dropped_stale - before.fills_dropped_stale,
            published,
            resident_bytes: after.resident_bytes,
            full_detail,
            resident_seconds: 0.0,
            untextured_seconds: 0.0,
            phases: FramePhases::default(),
        }
    }

    /// This record with its frame's `phases`.
    pub fn with_phases(self, phases: FramePhases) -> FrameRecord {
        FrameRecord { phases, ..self }
    }

    /// Streaming time over resident time (1 when the resident time is 0).
    pub fn ratio(&self) -> f64 {
        if self.resident_seconds > 0.0 {
            self.seconds / self.resident_seconds
        } else {
            1.0
        }
    }
}

/// Write `frames.csv`.
pub fn write_csv(path: &Path, records: &[FrameRecord]) -> Result<(), CliError> {
    let mut s = String::from(
        "frame,cut,frame_ms,resident_ms,untextured_ms,ratio_vs_resident,requests,rejected,\
         dropped,fills_dropped,published,resident_mib,full_detail,prepare_ms,shade_ms,process_ms\n",
    );
    for r in records {
        s += &format!(
            "{},{},{:.3},{:.3},{:.3},{:.4},{},{},{},{},{},{:.2},{:.5},{:.3},{:.3},{:.3}\n",
            r.frame,
            r.cut as u8,
            r.seconds * 1e3,
            r.resident_seconds * 1e3,
            r.untextured_seconds * 1e3,
            r.ratio(),
            r.requests,
            r.rejected,
            r.dropped,
            r.fills_dropped,
            r.published,
            r.resident_bytes as f64 / (1u64 << 20) as f64,
            r.full_detail,
            r.phases.prepare * 1e3,
            r.phases.shade * 1e3,
            r.phases.process * 1e3
        );
    }
    std::fs::write(path, s).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

/// The median of `v` (0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Frames from the cut until every pixel is at full detail (counting the cut frame as 1);
/// `None` without a cut or if it never gets there.
pub fn frames_to_full_detail_after_cut(records: &[FrameRecord]) -> Option<u32> {
    let cut = records.iter().position(|r| r.cut)?;
    records[cut..]
        .iter()
        .position(|r| r.full_detail >= 1.0)
        .map(|k| k as u32 + 1)
}

/// The summary of `interactive.json`.
pub fn frame_stats_json(records: &[FrameRecord], stall_ratio: f64) -> Map<String, Value> {
    let ratios: Vec<f64> = records.iter().map(FrameRecord::ratio).collect();
    let untextured: Vec<f64> = records
        .iter()
        .filter(|r| r.untextured_seconds > 0.0)
        .map(|r| r.seconds / r.untextured_seconds)
        .collect();
    let num = |x: f64| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number);
    let mut m = Map::new();
    m.insert("frames".into(), (records.len() as u64).into());
    m.insert(
        "median_frame_ratio_vs_resident".into(),
        num(median(ratios.clone())),
    );
    m.insert(
        "max_frame_ratio_vs_resident".into(),
        num(ratios.iter().copied().fold(0.0, f64::max)),
    );
    m.insert(
        "stalled_frames".into(),
        (ratios.iter().filter(|&&r| r > stall_ratio).count() as u64).into(),
    );
    m.insert(
        "median_frame_ratio_vs_untextured".into(),
        num(median(untextured)),
    );
    m.insert(
        "median_frame_ms".into(),
        num(median(records.iter().map(|r| r.seconds * 1e3).collect())),
    );
    m.insert(
        "median_resident_frame_ms".into(),
        num(median(
            records.iter().map(|r| r.resident_seconds * 1e3).collect(),
        )),
    );
    let phase = |f: fn(&FramePhases) -> f64| {
        num(median(records.iter().map(|r| f(&r.phases) * 1e3).collect()))
    };
    m.insert("median_prepare_ms".into(), phase(|p| p.prepare));
    m.insert("median_shade_ms".into(), phase(|p| p.shade));
    m.insert("median_process_ms".into(), phase(|p| p.process));
    m.insert(
        "frames_to_full_detail_after_cut".into(),
        frames_to_full_detail_after_cut(records).map_or(Value::Null, Value::from),
    );
    m.insert(
        "final_full_detail".into(),
        num(records.last().map_or(0.0, |r| r.full_detail)),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(frame: u32, cut: bool, full: f64, ratio: f64) -> FrameRecord {
        FrameRecord {
            frame,
            cut,
            seconds: ratio,
            requests: 0,
            rejected: 0,
            dropped: 0,
            fills_dropped: 0,
            published: 0,
            resident_bytes: 0,
            full_detail: full,
            resident_seconds: 1.0,
            untextured_seconds: 0.5,
            phases: FramePhases {
                prepare: 0.1,
                shade: 0.2 * ratio,
                process: 0.3,
            },
        }
    }

    #[test]
    fn summary_counts_stalls_and_frames_after_the_cut() {
        let r = vec![
            record(0, false, 1.0, 1.0),
            record(1, true, 0.2, 1.6),
            record(2, false, 0.9, 1.0),
            record(3, false, 1.0, 1.1),
        ];
        let m = frame_stats_json(&r, 1.5);
        assert_eq!(m["frames"], 4);
        assert_eq!(m["stalled_frames"], 1);
        assert_eq!(m["frames_to_full_detail_after_cut"], 3);
        assert_eq!(m["max_frame_ratio_vs_resident"], 1.6);
        assert_eq!(m["median_frame_ratio_vs_resident"], 1.05);
        assert_eq!(frames_to_full_detail_after_cut(&r[..3]), None);
        // The phases' medians, in ms: shade is 0.2 × 1.0, 1.0, 1.1, 1.6.
        assert!((m["median_shade_ms"].as_f64().unwrap() - 210.0).abs() < 1e-9);
        assert!((m["median_prepare_ms"].as_f64().unwrap() - 100.0).abs() < 1e-9);
        assert!((m["median_process_ms"].as_f64().unwrap() - 300.0).abs() < 1e-9);
    }

    #[test]
    fn the_csv_has_a_column_for_each_phase() {
        let dir = std::env::temp_dir().join(format!("dtex-frames-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("frames.csv");
        write_csv(&path, &[record(0, true, 0.5, 2.0)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header.len(), row.len());
        let at = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(at("prepare_ms"), "100.000");
        assert_eq!(at("shade_ms"), "400.000");
        assert_eq!(at("process_ms"), "300.000");
    }
}
