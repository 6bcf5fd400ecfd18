//! `demandtex info file.ptx`: what a Ptex file holds, from its headers and level
//! headers (no texel is decoded): faces, a histogram of face resolutions, levels, tiled
//! faces, data type, bytes on disk against decoded bytes, meta data keys, and how the
//! engine packs its units into pages (the tile headers of tiled faces are read for it).

use crate::error::CliError;
use crate::info::{print_stdout, InfoArgs};
use crate::table::format_bytes;
use demandtex::ptex::PtexPacking;
use demandtex::sources::ptex::{PtexFile, PtexPages};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

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
    let keys: Vec<String> = file.meta().iter().map(|m| m.key.clone()).collect();
    let on_disk = file.file_size();
    let (mesh, data_type, channels) = (file.mesh_type(), file.data_type(), file.num_channels());
    let (alpha, levels, faces) = (file.alpha_channel(), file.num_levels(), file.num_faces());
    let edits = file.edits().len();
    let pages = PtexPages::new(Arc::new(file)).map_err(|e| CliError::Demandtex(e.to_string()))?;
    let packing = PtexPacking::of_pages(&pages);
    if args.json {
        let value = serde_json::json!({
            "file": args.file, "format": "Ptex", "mesh": format!("{mesh:?}"),
            "faces": faces, "constant_faces": constant, "levels": levels,
            "data_type": format!("{data_type:?}"), "channels": channels,
            "alpha_channel": alpha, "resolutions": histogram,
            "tiled_faces": tiled, "tiles": tiles, "bytes_on_disk": on_disk,
            "bytes_decoded": decoded, "meta_keys": keys, "edits": edits,
            "pages": packing.pages, "unit_bytes": packing.unit_bytes,
            "packing_efficiency": packing.efficiency,
        });
        return print_stdout(&format!("{value:#}\n"));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: Ptex, {faces} {mesh:?} faces ({constant} constant), {channels} x {data_type:?}{}, \
         {levels} levels",
        args.file.display(),
        alpha.map_or(String::new(), |a| format!(" (alpha {a})")),
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
    let _ = writeln!(
        out,
        "  served as:   {} pages of 64 KiB holding {} of units (every resolution a filter \
         can ask for): packing efficiency {:.3}",
        packing.pages,
        format_bytes(packing.unit_bytes),
        packing.efficiency
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
    if edits > 0 {
        let _ = writeln!(out, "  edits:       {edits}");
    }
    print_stdout(&out)
}
