//! What registering Ptex files costs, against parsing them: a synthetic set (written with
//! the project's own writer into a temporary directory: 1,000 files of 500 faces, sides 1
//! to 32) registered with a blocking cache, which reads each file's header only; then
//! every file parsed ([`PtexTexture::pages`]: face table, constants, level info, packing),
//! which is what registration cost before files were parsed at first use, and what a shot
//! pays for the files its lookups reach, spread over the threads that reach them.
//!
//! Both steps are timed from files in the OS page cache (the set was just written), so the
//! figures are the reader's, not the disk's.

use super::Record;
use crate::error::CliError;
use demandtex::ptex::PtexTexture;
use demandtex::sources::ptex::write::{synthetic_file_name, write_synthetic_set, SyntheticSet};
use demandtex::{LoaderOptions, TextureCache};
use std::time::Instant;

/// The set measured.
const SET: SyntheticSet = SyntheticSet {
    files: 1000,
    faces: 500,
    seed: 11,
    max_log2: 5,
};

/// Register, then parse, the set; one record each.
pub fn run() -> Result<Vec<Record>, CliError> {
    let dir =
        std::env::temp_dir().join(format!("demandtex-bench-ptex-open-{}", std::process::id()));
    let result = measure(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn measure(dir: &std::path::Path) -> Result<Vec<Record>, CliError> {
    let totals = write_synthetic_set(dir, &SET).map_err(|e| CliError::Demandtex(e.to_string()))?;
    let cache = TextureCache::new(LoaderOptions::default())?;
    let start = Instant::now();
    let textures: Vec<PtexTexture> = (0..SET.files)
        .map(|i| cache.create_ptex_texture(dir.join(synthetic_file_name(i))))
        .collect::<Result<_, _>>()?;
    let register = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut faces = 0u64;
    for t in &textures {
        faces += t.pages()?.file().num_faces() as u64;
    }
    let parse = start.elapsed().as_secs_f64();
    let record = |case: &str, seconds: f64, ratio: f64| Record {
        bench: "ptex-open",
        case: format!(
            "{case}: {} files, {faces} faces, {} MB",
            SET.files,
            totals.bytes / 1_000_000
        ),
        threads: 1,
        figures: vec![
            ("seconds", seconds),
            ("files_per_second", SET.files as f64 / seconds.max(1e-9)),
            ("faces_per_second", faces as f64 / seconds.max(1e-9)),
            ("ratio_vs_register", ratio),
        ],
    };
    Ok(vec![
        record("register (header)", register, 1.0),
        record(
            "parse (face tables, constants, packing)",
            parse,
            parse / register.max(1e-9),
        ),
    ])
}
