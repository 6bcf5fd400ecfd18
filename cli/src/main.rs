//! `demandtex`: the demandtex command line.
//!
//! - `demandtex demo`: render a scene textured by over a tebibyte of procedural textures
//!   within a small memory budget, multi-pass until converged (`--verify` compares with a
//!   fully resident render).
//! - `demandtex bench`: lookup, request and fill throughput figures (CPU, or `--backend cuda`).
//! - `demandtex convert IN -o OUT.exr`: any EXR, PNG, JPEG, TIFF, HDR, Targa or BMP to a tiled, mip-mapped
//!   OpenEXR file (the maketx equivalent).
//! - `demandtex info FILE`: what an OpenEXR file holds (levels, tiles, compression, bytes);
//!   `--check` reads every tile of every level (exit code 1 on the first error), `--stats`
//!   adds per-channel statistics of level 0.
//! - `demandtex ptex gen DIR --files N --faces F [--seed S]`: a synthetic Ptex set.
//! - `demandtex cuda-info`: the CUDA driver and devices, or why there is no CUDA here.
//!
//! Logging goes to stderr, filtered by `RUST_LOG` (default `warn`).

mod bench;
mod convert;
mod cuda;
mod demo;
mod error;
mod info;
mod info_check;
mod info_dds;
mod info_ptex;
mod info_tiff;
mod progress;
mod ptex;
mod rss;
mod table;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Demand-loaded textures: demo and benchmarks.
#[derive(Parser, Debug)]
#[command(name = "demandtex", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Render the built-in 1 TiB scene within a memory budget, multi-pass until converged.
    Demo(demo::DemoArgs),
    /// Measure lookup, request and fill throughput, or the GPU with --backend cuda (figures only).
    Bench(bench::BenchArgs),
    /// Convert an EXR, PNG, JPEG, TIFF, Radiance HDR, Targa or BMP image to a tiled,
    /// mip-mapped OpenEXR file.
    Convert(convert::ConvertArgs),
    /// Describe a texture file (OpenEXR, TIFF / .tx, DDS, Ptex, PNG, JPEG, HDR, Targa, BMP)
    /// from its headers;
    /// --check reads every tile (exit 1 if damaged or not served).
    Info(info::InfoArgs),
    /// Ptex tools: `ptex gen` writes synthetic Ptex sets.
    Ptex(ptex::PtexArgs),
    /// Describe the CUDA driver and devices, or say why CUDA is unavailable (exit code 2).
    CudaInfo(cuda::CudaInfoArgs),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // A second initialisation (impossible in the binary) is not worth failing for.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let progress = std::io::stderr().is_terminal();
    let result = match &cli.command {
        Command::Demo(args) => demo::run(args, progress).map(|_| ()),
        Command::Bench(args) => bench::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Info(args) => info::run(args),
        Command::CudaInfo(args) => cuda::run(args),
        Command::Ptex(args) => ptex::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demandtex: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_well_formed_and_has_the_documented_defaults() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["demandtex", "demo"]).unwrap();
        let Command::Demo(d) = cli.command else {
            panic!("demo expected")
        };
        assert_eq!(
            (d.width, d.height, d.budget_mb, d.threads, d.max_launches),
            (960, 540, 256, 0, 64)
        );
        assert_eq!(d.out, std::path::PathBuf::from("demandtex-demo"));
        assert!(!d.verify);
        assert_eq!(d.backend, demo::Backend::Cpu);
        let cli = Cli::try_parse_from(["demandtex", "demo", "--backend", "cuda"]).unwrap();
        assert!(matches!(cli.command, Command::Demo(d) if d.backend == demo::Backend::Cuda));
        assert!(Cli::try_parse_from(["demandtex", "demo", "--backend", "gpu"]).is_err());
        let cli = Cli::try_parse_from(["demandtex", "cuda-info", "--device", "1"]).unwrap();
        assert!(matches!(cli.command, Command::CudaInfo(c) if c.device == Some(1) && !c.json));
        let cli = Cli::try_parse_from(["demandtex", "bench", "--threads-list", "1,2,4", "--json"])
            .unwrap();
        let Command::Bench(b) = cli.command else {
            panic!("bench expected")
        };
        assert_eq!(b.threads_list, vec![1, 2, 4]);
        assert!(b.json);
        assert!(Cli::try_parse_from(["demandtex", "bench", "--threads-list", "0"]).is_err());
    }
}
