//! `demandtex info file.ptx`: what a Ptex file holds, from its headers and level
//! headers (no texel is decoded): faces, a histogram of face resolutions, levels, tiled
//! faces, data type, bytes on disk against decoded bytes, meta data keys.

use crate::error::CliError;
use crate::info::{print_stdout, InfoArgs};
use crate::table::format_bytes;
use demandtex::sources::ptex::PtexFile;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Describe the Ptex file of `args` (text or JSON).
pub fn print_ptex(args: &InfoArgs) -> Result<(), CliError> {
    let file = PtexFile::open(&args.file).map_err(|e| CliError::Demandtex(e.to_string()))?;
    let ps = file.pixel_size() as u64;
    let mut histogram: BTreeMap<String, u64> = BTreeMap::new();
    let (mut constant, mut tiled, mut tiles, mut decoded) = (0u64, 0u64, 0u64, 0u64);
    for f in 0..file.num_faces() as u32 {
        let info = file
            .face_info(f)
            .map_err(|e| CliError::Demandtex(e.to_string()))?;
        *histogram.entry(info.res.to_string()).or_default() += 1;
        if info.is_constant() {
            constant += 1;
            decoded += ps;
            continue;
        }
        let levels = file
            .stored_levels(f)
            .map_err(|e| CliError::Demandtex(e.to_string()))?;
        for level in 0..levels {
            let b = file
                .block(f, level)
                .map_err(|e| CliError::Demandtex(e.to_string()))?;
            decoded += b.res.texels() as u64 * ps;
            if let Some(t) = &b.tiles {
                tiles += t.tiles.len() as u64;
                tiled += u64::from(level == 0);
            }
        }
    }
    let keys: Vec<&str> = file.meta().iter().map(|m| m.key.as_str()).collect();
    let on_disk = file.file_size();
    if args.json {
        let value = serde_json::json!({
            "file": args.file, "format": "Ptex", "mesh": format!("{:?}", file.mesh_type()),
            "faces": file.num_faces(), "constant_faces": constant, "levels": file.num_levels(),
            "data_type": format!("{:?}", file.data_type()), "channels": file.num_channels(),
            "alpha_channel": file.alpha_channel(), "resolutions": histogram,
            "tiled_faces": tiled, "tiles": tiles, "bytes_on_disk": on_disk,
            "bytes_decoded": decoded, "meta_keys": keys, "edits": file.edits().len(),
        });
        return print_stdout(&format!("{value:#}\n"));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: Ptex, {} {:?} faces ({constant} constant), {} x {:?}{}, {} levels",
        args.file.display(),
        file.num_faces(),
        file.mesh_type(),
        file.num_channels(),
        file.data_type(),
        file.alpha_channel()
            .map_or(String::new(), |a| format!(" (alpha {a})")),
        file.num_levels()
    );
    let _ = writeln!(
        out,
        "  bytes:       {} on disk, {} decoded (every stored level)",
        format_bytes(on_disk),
        format_bytes(decoded)
    );
    let _ = writeln!(
        out,
        "  tiled faces: {tiled} (level 0), {tiles} tiles in all levels"
    );
    let _ = writeln!(out, "  resolutions:");
    let mut sorted: Vec<_> = histogram.into_iter().collect();
    sorted.sort_by_key(|(r, _)| {
        let mut it = r.split('x').map(|n| n.parse::<u64>().unwrap_or(0));
        let (u, v) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
        (u * v, u)
    });
    for (res, count) in sorted {
        let _ = writeln!(out, "    {res:>11}  {count}");
    }
    let _ = writeln!(
        out,
        "  meta keys:   {}",
        if keys.is_empty() {
            "(none)".to_string()
        } else {
            keys.join(", ")
        }
    );
    if file.has_edits() {
        let _ = writeln!(out, "  edits:       {}", file.edits().len());
    }
    print_stdout(&out)
}
