//! Duplicate-texture sharing (`LoaderOptions::share_duplicate_textures`) on a set of
//! files as shots reference them: four masks (the coalescing section's, at 2048², half
//! RGBA, tiled and mip-mapped OpenEXR written by demandtex) each referenced three times —
//! the file itself, a byte copy in another asset folder, and a hard link — so twelve
//! textures over eight files. Three multi-pass frames of the same 64K level-0 lookups in a
//! budget of a quarter of the twelve textures' level 0, constant-tile coalescing on, with
//! sharing off and on in the same run.
//!
//! Figures per case: launches, tiles and bytes read (over the three frames and in the last
//! two alone), evictions, peak resident bytes against the budget, textures sharing tiles,
//! bytes hashed to confirm copies, seconds; and the ratio of bytes read, on against off.

use super::coalescing::{run_frames, Mask};
use super::Record;
use crate::error::CliError;
use demandtex::sources::exr::{write_mip_exr, WriteOptions};
use demandtex::sources::{file_source, FloatImage};
use demandtex::{Loader, LoaderOptions, TextureDesc, TextureId, TILE_BYTES};
use std::path::{Path, PathBuf};

const SIDE: u32 = 2048;
const MASKS: u64 = 4;
/// Each mask's references: the file, a copy, a hard link.
const REFERENCES: u64 = 3;
/// Level-0 tiles of one texture (half RGBA: 128×64-texel tiles).
const LEVEL0_TILES: u64 = (SIDE as u64 / 128) * (SIDE as u64 / 64);

/// Write the set into a fresh directory under the system's temporary folder; returns the
/// texture paths (mask by mask: file, copy, link).
fn write_set(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let io = |e: std::io::Error| CliError::Demandtex(format!("{}: {e}", dir.display()));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("copies")).map_err(io)?;
    let mut paths = Vec::new();
    for m in 0..MASKS {
        let mask = Mask::new(m + 1);
        let mut img = FloatImage::zeros(SIDE, SIDE, 4);
        for y in 0..SIDE {
            for x in 0..SIDE {
                // Level 1 of the 4096² mask is a 2048² one.
                let t = mask.texel(1, x, y);
                let at = ((y * SIDE + x) * 4) as usize;
                img.data[at..at + 4].copy_from_slice(&t);
            }
        }
        let file = dir.join(format!("mask{m}.exr"));
        let options = WriteOptions {
            tile: (128, 64),
            ..WriteOptions::default()
        };
        write_mip_exr(&file, &img, &options, None)?;
        let copy = dir.join("copies").join(format!("mask{m}.exr"));
        std::fs::copy(&file, &copy).map_err(io)?;
        let link = dir.join(format!("mask{m}_link.exr"));
        if std::fs::hard_link(&file, &link).is_err() {
            std::fs::copy(&file, &link).map_err(io)?;
        }
        paths.extend([file, copy, link]);
    }
    Ok(paths)
}

/// Run the two cases.
pub fn run() -> Result<Vec<Record>, CliError> {
    let dir =
        std::env::temp_dir().join(format!("demandtex-bench-duplicates-{}", std::process::id()));
    let paths = write_set(&dir)?;
    let result = (|| {
        let mut off = case(&paths, false)?;
        let mut on = case(&paths, true)?;
        let bytes_read = |r: &Record| r.figure("bytes_read").unwrap_or(0.0);
        let ratio = bytes_read(&on) / bytes_read(&off).max(1.0);
        off.figures.push(("bytes_read_ratio_vs_off", 1.0));
        on.figures.push(("bytes_read_ratio_vs_off", ratio));
        Ok(vec![off, on])
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn case(paths: &[PathBuf], share: bool) -> Result<Record, CliError> {
    let budget = MASKS * REFERENCES * LEVEL0_TILES / 4 * TILE_BYTES as u64;
    let loader = Loader::new(LoaderOptions {
        num_pages: 1 << 20,
        max_textures: 64,
        page_table_entries: 1 << 12,
        max_texture_memory: budget,
        share_duplicate_textures: share,
        ..LoaderOptions::default()
    })?;
    let textures: Vec<TextureId> = paths
        .iter()
        .map(|p| loader.create_texture(file_source(p), TextureDesc::default()))
        .collect::<Result<_, _>>()?;
    let frames = run_frames(&loader, &textures, SIDE)?;
    let s = loader.stats();
    Ok(Record {
        bench: "duplicate textures",
        case: format!(
            "{MASKS} masks {SIDE}² × {REFERENCES} files (copy, link), budget ¼ of level 0, \
             sharing {}",
            if share { "on" } else { "off" }
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
            ("coalesced_pages", s.coalesced_pages as f64),
            ("textures_sharing_tiles", s.textures_sharing_tiles as f64),
            ("duplicate_bytes_hashed", s.duplicate_bytes_hashed as f64),
            ("seconds", frames.seconds),
        ],
    })
}
