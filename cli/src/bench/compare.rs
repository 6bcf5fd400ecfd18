//! `demandtex bench compare A.f32 B.f32`: how closely two replays' results agree, query by
//! query. Each file holds 4 × f32 (RGBA, little-endian) per query, in query order, as
//! `bench replay --out` and the OpenImageIO replayer write them.
//!
//! PSNR uses a peak of 1.0: `10 · log10(1 / MSE)`. With HDR values above 1 it stays the
//! absolute error against a unit range, so the same relative error on bright texels scores
//! lower; the report says when values exceed 1.

use crate::error::CliError;
use std::path::{Path, PathBuf};

/// Arguments of `demandtex bench compare`.
#[derive(clap::Args, Clone, Debug)]
pub struct CompareArgs {
    /// First result file (4 × f32 per query).
    pub a: PathBuf,
    /// Second result file (4 × f32 per query).
    pub b: PathBuf,
    /// A query differs when any channel differs by more than this.
    #[arg(long, default_value_t = 0.0)]
    pub tolerance: f32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How two result sets compare.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Queries compared.
    pub queries: u64,
    /// Mean squared error over R, G, B.
    pub mse_rgb: f64,
    /// Mean squared error over R, G, B, A.
    pub mse_rgba: f64,
    /// Largest absolute difference of any channel (NaN pairs excluded).
    pub max_abs_diff: f32,
    /// Queries where some channel differs by more than the tolerance (or only one side is
    /// NaN).
    pub differing_queries: u64,
    /// Queries with a NaN channel on either side (left out of the errors).
    pub nan_queries: u64,
    /// Largest absolute value on either side (> 1 means HDR data).
    pub max_abs_value: f32,
}

/// PSNR in dB for a mean squared error with a peak of 1.0 (infinite when equal).
pub fn psnr(mse: f64) -> f64 {
    if mse <= 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    }
}

impl Comparison {
    /// PSNR over R, G, B (peak 1.0).
    pub fn psnr_rgb(&self) -> f64 {
        psnr(self.mse_rgb)
    }

    /// PSNR over R, G, B, A (peak 1.0).
    pub fn psnr_rgba(&self) -> f64 {
        psnr(self.mse_rgba)
    }

    /// The comparison as one JSON object (infinite PSNR is written as `null`).
    pub fn to_json(&self) -> serde_json::Value {
        let num =
            |v: f64| serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into);
        serde_json::json!({
            "queries": self.queries,
            "psnr_rgb": num(self.psnr_rgb()),
            "psnr_rgba": num(self.psnr_rgba()),
            "mse_rgb": num(self.mse_rgb),
            "mse_rgba": num(self.mse_rgba),
            "max_abs_diff": num(self.max_abs_diff as f64),
            "differing_queries": self.differing_queries,
            "nan_queries": self.nan_queries,
            "max_abs_value": num(self.max_abs_value as f64),
        })
    }
}

/// Compare two result sets of equal length (a multiple of 4 floats).
pub fn compare(a: &[f32], b: &[f32], tolerance: f32) -> Comparison {
    debug_assert_eq!(a.len(), b.len());
    let (mut se_rgb, mut se_a) = (0.0f64, 0.0f64);
    let (mut max_diff, mut max_value) = (0.0f32, 0.0f32);
    let (mut differing, mut nans, mut counted) = (0u64, 0u64, 0u64);
    for (qa, qb) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let nan_a = qa.iter().any(|v| v.is_nan());
        let nan_b = qb.iter().any(|v| v.is_nan());
        if nan_a || nan_b {
            nans += 1;
            if nan_a != nan_b {
                differing += 1;
            }
            continue;
        }
        counted += 1;
        let mut differs = false;
        for c in 0..4 {
            let d = (qa[c] - qb[c]).abs();
            max_value = max_value.max(qa[c].abs()).max(qb[c].abs());
            max_diff = max_diff.max(d);
            differs |= d > tolerance || (d.is_nan() && qa[c] != qb[c]);
            let d2 = (qa[c] as f64 - qb[c] as f64).powi(2);
            if c < 3 {
                se_rgb += d2;
            } else {
                se_a += d2;
            }
        }
        differing += u64::from(differs);
    }
    let n = counted.max(1) as f64;
    Comparison {
        queries: (a.len() / 4) as u64,
        mse_rgb: se_rgb / (3.0 * n),
        mse_rgba: (se_rgb + se_a) / (4.0 * n),
        max_abs_diff: max_diff,
        differing_queries: differing,
        nan_queries: nans,
        max_abs_value: max_value,
    }
}

/// Read a result file: 4 × f32 little-endian per query.
pub fn read_results(path: &Path) -> Result<Vec<f32>, CliError> {
    let bytes =
        std::fs::read(path).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
    if bytes.len() % 16 != 0 {
        return Err(CliError::Demandtex(format!(
            "{}: {} bytes is not a whole number of results (16 bytes each)",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Compare the two files and print the figures.
pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    if args.tolerance.is_nan() || args.tolerance < 0.0 {
        return Err(CliError::Usage(format!(
            "--tolerance {} (must be >= 0)",
            args.tolerance
        )));
    }
    let a = read_results(&args.a)?;
    let b = read_results(&args.b)?;
    if a.len() != b.len() {
        return Err(CliError::Demandtex(format!(
            "{} holds {} results, {} holds {}",
            args.a.display(),
            a.len() / 4,
            args.b.display(),
            b.len() / 4
        )));
    }
    let c = compare(&a, &b, args.tolerance);
    if args.json {
        println!("{}", c.to_json());
        return Ok(());
    }
    println!("queries            {}", c.queries);
    println!("PSNR RGB           {:.2} dB (peak 1.0)", c.psnr_rgb());
    println!("PSNR RGBA          {:.2} dB (peak 1.0)", c.psnr_rgba());
    println!("max abs diff       {:.3e}", c.max_abs_diff);
    println!(
        "differing queries  {} (tolerance {})",
        c.differing_queries, args.tolerance
    );
    if c.nan_queries > 0 {
        println!(
            "NaN queries        {} (left out of the errors)",
            c.nan_queries
        );
    }
    if c.max_abs_value > 1.001 {
        println!(
            "note: values reach {:.3} (HDR); PSNR still uses a peak of 1.0",
            c.max_abs_value
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_results_have_infinite_psnr_and_no_differences() {
        let a = [0.1, 0.2, 0.3, 1.0, 0.5, 0.5, 0.5, 1.0];
        let c = compare(&a, &a, 0.0);
        assert_eq!(c.queries, 2);
        assert_eq!(c.differing_queries, 0);
        assert!(c.psnr_rgb().is_infinite());
        assert!(c.to_json()["psnr_rgb"].is_null());
    }

    #[test]
    fn psnr_and_counts_follow_the_definitions() {
        // One query off by 0.01 in R only: MSE_rgb = 1e-4 / 6 over two queries.
        let a = [0.1, 0.2, 0.3, 1.0, 0.5, 0.5, 0.5, 1.0];
        let mut b = a;
        b[0] += 0.01;
        let c = compare(&a, &b, 0.0);
        assert_eq!(c.differing_queries, 1);
        let expected = psnr((0.01f64 * 0.01) / 6.0);
        assert!((c.psnr_rgb() - expected).abs() < 0.01, "{}", c.psnr_rgb());
        assert!((c.max_abs_diff - 0.01).abs() < 1e-6);
        assert_eq!(compare(&a, &b, 0.02).differing_queries, 0);
        b[5] = f32::NAN;
        let c = compare(&a, &b, 0.0);
        assert_eq!((c.nan_queries, c.differing_queries), (1, 2));
        b[5] = 3.0;
        assert_eq!(compare(&a, &b, 0.0).max_abs_value, 3.0);
    }
}
