//! `demandtex cuda-info`: what the CUDA driver reports (driver version, and per device its
//! name, compute capability, memory and sparse-texture support), or why there is no CUDA
//! here; and the check behind `demandtex demo --backend cuda`.
//!
//! Every failure is a clean message with exit code 2: no driver, no device, a driver too
//! old, an ordinal past the last device.

use crate::error::CliError;
use crate::table::format_bytes;
use demandtex_cuda::{self as cuda, CudaDeviceInfo};
use std::fmt::Write as _;

/// Arguments of `demandtex cuda-info`.
#[derive(clap::Args, Debug)]
pub struct CudaInfoArgs {
    /// Describe only this device (default: every device).
    #[arg(long)]
    pub device: Option<u32>,
    /// Print JSON (an array of devices) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A library error about CUDA as the CLI reports it (exit code 2).
pub fn unavailable(e: demandtex::Error) -> CliError {
    CliError::Unavailable(e.to_string())
}

/// Probes `args.device`, or every device the driver reports.
pub fn probe(args: &CudaInfoArgs) -> Result<Vec<CudaDeviceInfo>, CliError> {
    let ordinals = match args.device {
        Some(d) => d..d + 1,
        // With no device at all, probing device 0 gives the driver's explanation.
        None => 0..cuda::device_count().map_err(unavailable)?.max(1),
    };
    ordinals
        .map(|d| cuda::probe_device(d).map_err(unavailable))
        .collect()
}

/// `devices` as text: the driver version, then one block per device.
pub fn describe(devices: &[CudaDeviceInfo]) -> String {
    let mut out = String::new();
    if let Some(first) = devices.first() {
        let _ = writeln!(out, "CUDA driver: {}", first.driver_version_text());
    }
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    for d in devices {
        let (major, minor) = d.compute_capability;
        let _ = writeln!(out, "device {}: {}", d.ordinal, d.name);
        let _ = writeln!(out, "  compute capability:        {major}.{minor}");
        let _ = writeln!(
            out,
            "  memory:                    {}",
            format_bytes(d.total_memory_bytes)
        );
        let _ = writeln!(out, "  multiprocessors:           {}", d.multiprocessors);
        let _ = writeln!(
            out,
            "  sparse CUDA arrays:        {}",
            yes_no(d.sparse_supported)
        );
        let _ = writeln!(
            out,
            "  virtual memory management: {}",
            yes_no(d.vmm_supported)
        );
        let (w, h) = d.max_mipmapped_texture;
        let _ = writeln!(out, "  largest mipmapped texture: {w}×{h}");
    }
    out
}

/// Run `demandtex cuda-info`.
pub fn run(args: &CudaInfoArgs) -> Result<(), CliError> {
    let devices = probe(args)?;
    if args.json {
        let json = serde_json::to_string_pretty(&devices)
            .map_err(|e| CliError::Io(format!("JSON: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", describe(&devices));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_reads_as_a_block_of_facts() {
        let d = CudaDeviceInfo {
            ordinal: 1,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            total_memory_bytes: 80 << 30,
            multiprocessors: 132,
            sparse_supported: true,
            vmm_supported: false,
            driver_version: 13000,
            max_mipmapped_texture: (32768, 32768),
        };
        let text = describe(&[d]);
        assert!(text.starts_with("CUDA driver: 13.0\ndevice 1: NVIDIA H100 80GB HBM3\n"));
        assert!(text.contains("compute capability:        9.0\n"), "{text}");
        assert!(
            text.contains("memory:                    80.0 GiB\n"),
            "{text}"
        );
        assert!(text.contains("sparse CUDA arrays:        yes\n"), "{text}");
        assert!(text.contains("virtual memory management: no\n"), "{text}");
        assert_eq!(describe(&[]), "");
    }
}
