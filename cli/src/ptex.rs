//! `demandtex ptex`: Ptex tools. `gen DIR --files N --faces F [--seed S]` writes a
//! synthetic set with the project's own writer (core's
//! [`demandtex::sources::ptex::write::synthetic`]) and prints its totals.

use crate::error::CliError;
use demandtex::sources::ptex::write::{write_synthetic_set, SyntheticSet};
use std::path::PathBuf;

/// Arguments of `demandtex ptex`.
#[derive(clap::Args, Clone, Debug)]
pub struct PtexArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: PtexCommand,
}

/// `demandtex ptex` subcommands.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum PtexCommand {
    /// Write a synthetic Ptex set: quad grids of mixed resolutions (1×1 to 1024×1024, tiled
    /// big faces), constant faces, u8 RGB and half RGBA files; deterministic for a seed.
    Gen(GenArgs),
}

/// Arguments of `demandtex ptex gen`.
#[derive(clap::Args, Clone, Debug)]
pub struct GenArgs {
    /// Directory to write the `.ptx` files into (created if missing).
    pub dir: PathBuf,
    /// Number of files.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub files: u32,
    /// Faces per file.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub faces: u32,
    /// Seed (the same seed writes the same files).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// log2 of the largest face side (10: 1024×1024).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i8).range(0..=10))]
    pub max_log2: i8,
    /// Print the totals as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Run `demandtex ptex`.
pub fn run(args: &PtexArgs) -> Result<(), CliError> {
    match &args.command {
        PtexCommand::Gen(g) => gen(g),
    }
}

fn gen(args: &GenArgs) -> Result<(), CliError> {
    let set = SyntheticSet {
        files: args.files as usize,
        faces: args.faces,
        seed: args.seed,
        max_log2: args.max_log2,
    };
    let start = std::time::Instant::now();
    let totals = write_synthetic_set(&args.dir, &set).map_err(|e| CliError::Io(e.to_string()))?;
    if args.json {
        let json = serde_json::to_string(&totals).map_err(|e| CliError::Io(e.to_string()))?;
        println!("{json}");
    } else {
        println!(
            "wrote {} files to {} in {:.1} s: {} faces ({} constant), {} texels, {} bytes on disk",
            totals.files,
            args.dir.display(),
            start.elapsed().as_secs_f64(),
            totals.faces,
            totals.constant_faces,
            totals.texels,
            totals.bytes
        );
    }
    Ok(())
}
