//! `demandtex info file.dds`: what a DDS file holds, from its header alone (no texel is
//! decoded): the format as the file names it, its encoding, colour space and alpha mode,
//! every stored level with its bytes, and how demandtex serves it (texel format, levels
//! from the file or generated, bits per texel stored against served).

use crate::error::CliError;
use crate::info::{print_stdout, InfoArgs};
use crate::table::format_bytes;
use demandtex::sources::dds::{DdsEncoding, DdsLayout};
use demandtex::sources::{DdsSource, ImageSource};
use demandtex::textures::BlockCodec;
use demandtex::LoaderOptions;
use std::fmt::Write as _;

/// Describe the DDS file of `args` (text or JSON).
pub fn print_dds(args: &InfoArgs) -> Result<(), CliError> {
    let source = DdsSource::new(&args.file);
    let info = source
        .open()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let layout = source
        .layout()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let on_disk = crate::info::bytes_on_disk(&args.file)?;
    let served_bits = info.format.texel_bytes() as u32 * 8;
    let stored_bits = layout.encoding.bits_per_texel();
    // What a loader with the default options holds in its pages (CPU and CUDA loaders
    // both sample blocks).
    let kept = LoaderOptions::default().kept_block_codec(&source, true);
    let budget_bits = if kept.is_some() {
        stored_bits
    } else {
        served_bits
    };
    if args.json {
        let value = serde_json::json!({
            "file": args.file, "format": "DDS", "dds_format": layout.format_name,
            "encoding": layout.encoding.name(), "srgb": layout.srgb,
            "premultiplied": layout.premultiplied, "width": layout.width(),
            "height": layout.height(), "levels": layout.levels,
            "bytes_on_disk": on_disk, "texel_data_bytes": layout.data_bytes,
            "served_format": info.format.to_string(), "served_levels": info.num_levels,
            "stored_bits_per_texel": stored_bits, "served_bits_per_texel": served_bits,
            "blocks_kept": kept.is_some(), "budget_bits_per_texel": budget_bits,
        });
        return print_stdout(&format!("{value:#}\n"));
    }
    print_stdout(&render(
        &args.file.display().to_string(),
        &layout,
        on_disk,
        info,
        kept,
    ))
}

fn render(
    name: &str,
    layout: &DdsLayout,
    on_disk: u64,
    info: demandtex::sources::ImageInfo,
    kept: Option<BlockCodec>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: DDS, {}x{}, {} ({}){}{}",
        layout.width(),
        layout.height(),
        layout.encoding.name(),
        layout.format_name,
        if layout.srgb { ", sRGB" } else { "" },
        if layout.premultiplied {
            ", premultiplied alpha"
        } else {
            ""
        },
    );
    let _ = writeln!(
        out,
        "  {} stored level{}, {} of texel data, {} on disk",
        layout.levels.len(),
        if layout.levels.len() == 1 { "" } else { "s" },
        format_bytes(layout.data_bytes),
        format_bytes(on_disk)
    );
    for (i, l) in layout.levels.iter().enumerate() {
        let _ = writeln!(
            out,
            "    level {i:2}: {:>5} x {:<5} {:>10} at byte {}",
            l.width,
            l.height,
            format_bytes(l.bytes),
            l.offset
        );
    }
    let generated = info.num_levels as usize - layout.levels.len();
    let _ = writeln!(
        out,
        "  served as {} ({} bits a texel in the budget; {} stored), {} level{}{}",
        info.format,
        if kept.is_some() {
            layout.encoding.bits_per_texel() as usize
        } else {
            info.format.texel_bytes() * 8
        },
        layout.encoding.bits_per_texel(),
        info.num_levels,
        if info.num_levels == 1 { "" } else { "s" },
        if generated > 0 {
            format!(" ({generated} generated in memory when first read)")
        } else {
            String::new()
        }
    );
    match kept {
        Some(codec) => {
            let (w, h) = codec.tile_extent();
            let _ = writeln!(
                out,
                "  pages keep the {} blocks as stored ({w}x{h} texels a 64 KiB page; decoded \
                 when sampled on the CPU, by the texture unit on CUDA)",
                codec.name()
            );
        }
        None if matches!(layout.encoding, DdsEncoding::Blocks(_)) => {
            let _ = writeln!(
                out,
                "  pages hold decoded texels: the file lacks mip levels, whose generated levels \
                 are texels"
            );
        }
        None => {}
    }
    out
}
