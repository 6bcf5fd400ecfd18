//! `demandtex info file.tx` (or any TIFF): what a TIFF file holds, from its directories
//! alone (no chunk is decompressed), read by the engine's TIFF source: sample layout
//! (channels, bits, integer or float, contiguous or separate planes), compression and
//! predictor, every stored level with its chunks (tiles or strips) and bytes on disk,
//! OIIO's texture metadata as `maketx` writes it (`textureformat`, wrap modes, constant and
//! average colour), and how demandtex serves it (texel format, levels from the file or
//! generated, file tiles against pages).

use crate::error::CliError;
use crate::info::{print_stdout, InfoArgs};
use crate::table::format_bytes;
use demandtex::sources::tiff::{StoredColour, TiffCompression, TiffLayout, TiffPredictor};
use demandtex::sources::{ImageInfo, ImageSource, TiffSource};
use demandtex::textures::{file_tile_pages, AddressMode};
use std::fmt::Write as _;

/// Describe the TIFF file of `args` (text or JSON).
pub fn print_tiff(args: &InfoArgs) -> Result<(), CliError> {
    let source = TiffSource::new(&args.file);
    let info = source
        .open()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let layout = source
        .layout()
        .map_err(|e| CliError::Demandtex(e.to_string()))?;
    let on_disk = crate::info::bytes_on_disk(&args.file)?;
    if args.json {
        return print_stdout(&format!("{:#}\n", to_json(args, &layout, on_disk, &info)));
    }
    print_stdout(&render(
        &args.file.display().to_string(),
        &layout,
        on_disk,
        &info,
    ))
}

fn compression_name(c: TiffCompression) -> &'static str {
    match c {
        TiffCompression::None => "uncompressed",
        TiffCompression::Lzw => "LZW",
        TiffCompression::Zip => "ZIP (deflate)",
        TiffCompression::PackBits => "PackBits",
        TiffCompression::Jpeg => "JPEG",
    }
}

fn predictor_name(p: TiffPredictor) -> Option<&'static str> {
    match p {
        TiffPredictor::None => None,
        TiffPredictor::Horizontal => Some("horizontal predictor"),
        TiffPredictor::FloatingPoint => Some("floating-point predictor"),
    }
}

fn sample_kind(layout: &TiffLayout) -> String {
    let s = &layout.samples;
    format!(
        "{} channel{}, {}-bit {}, {}{}",
        s.samples,
        if s.samples == 1 { "" } else { "s" },
        s.bits,
        match (s.float, s.signed) {
            (true, _) => "float",
            (false, true) => "signed",
            (false, false) => "unsigned",
        },
        if s.separate {
            "separate planes"
        } else {
            "contiguous"
        },
        if s.unassociated_alpha {
            ", unassociated alpha (associated when read)"
        } else {
            ""
        },
    ) + match s.colour {
        StoredColour::AsStored => "",
        StoredColour::MinIsWhite => ", white-is-zero grey (inverted when read)",
        StoredColour::Palette => ", palette indices (RGB from the colour map when read)",
        StoredColour::Cmyk => ", CMYK inks (RGB when read)",
    }
}

fn colors(c: &Option<Vec<f32>>) -> Option<String> {
    c.as_ref().map(|v| {
        v.iter()
            .map(|x| format!("{x}"))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn render(name: &str, layout: &TiffLayout, on_disk: u64, info: &ImageInfo) -> String {
    let mut out = String::new();
    let meta = &layout.metadata;
    let kind = match &meta.texture_format {
        Some(f) => format!("TIFF texture (\"{f}\")"),
        None => "TIFF".to_string(),
    };
    let mut codec = compression_name(layout.samples.compression).to_string();
    if let Some(p) = predictor_name(layout.samples.predictor) {
        let _ = write!(codec, ", {p}");
    }
    let _ = writeln!(
        out,
        "{name}: {kind}, {}x{}, {}, {codec}, {}",
        info.width,
        info.height,
        sample_kind(layout),
        format_bytes(on_disk)
    );
    let stored: u64 = layout
        .levels
        .iter()
        .flat_map(|l| l.byte_counts.iter())
        .sum();
    let _ = writeln!(
        out,
        "  {} stored level{}, {} of compressed chunks",
        layout.levels.len(),
        if layout.levels.len() == 1 { "" } else { "s" },
        format_bytes(stored),
    );
    let texel = layout.samples.sample_bytes() as u64 * layout.samples.samples as u64;
    for (i, l) in layout.levels.iter().enumerate() {
        let (cx, cy) = l.chunks();
        let chunk = if l.tiled {
            format!("{}x{} tiles", l.chunk_w, l.chunk_h)
        } else {
            format!("strips of {} rows", l.chunk_h)
        };
        let bytes: u64 = l.byte_counts.iter().sum();
        let decoded = l.width as u64 * l.height as u64 * texel;
        let _ = writeln!(
            out,
            "    level {i:2}: {:>5} x {:<5} {chunk:>18}, {:>6} chunks, {:>10} on disk, {:>10} decoded",
            l.width,
            l.height,
            cx as u64 * cy as u64 * if layout.samples.separate { layout.samples.samples as u64 } else { 1 },
            format_bytes(bytes),
            format_bytes(decoded),
        );
    }
    if let Some([s, t]) = meta.wrap {
        let _ = writeln!(
            out,
            "  wrap modes: {},{}",
            AddressMode::oiio_name(s),
            AddressMode::oiio_name(t)
        );
    }
    if let Some(c) = colors(&meta.constant_color) {
        let _ = writeln!(out, "  constant colour: {c}");
    }
    if let Some(c) = colors(&meta.average_color) {
        let _ = writeln!(out, "  average colour: {c}");
    }
    if let Some(f) = &meta.fingerprint {
        let _ = writeln!(
            out,
            "  fingerprint: {f} (maketx's oiio:SHA-1: files that share it share tiles)"
        );
    }
    let generated = info.num_levels as usize - layout.levels.len().min(info.num_levels as usize);
    let (pw, ph) = info.format.tile_extent();
    let file_tile = layout
        .levels
        .first()
        .filter(|l| l.tiled)
        .map(|l| {
            let (w, h) = (l.chunk_w, l.chunk_h);
            if file_tile_pages(info.format, Some((w, h))).is_some() {
                format!("; file tiles {w}x{h}, a page each on the CPU ({pw}x{ph} on the GPU)")
            } else {
                format!("; file tiles {w}x{h} in pages of {pw}x{ph}")
            }
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  served as {}, {} level{}{}{file_tile}",
        info.format,
        info.num_levels,
        if info.num_levels == 1 { "" } else { "s" },
        if generated > 0 {
            format!(" ({generated} generated in memory when first read)")
        } else {
            String::new()
        }
    );
    out
}

fn to_json(
    args: &InfoArgs,
    layout: &TiffLayout,
    on_disk: u64,
    info: &ImageInfo,
) -> serde_json::Value {
    let s = &layout.samples;
    let meta = &layout.metadata;
    let levels: Vec<_> = layout
        .levels
        .iter()
        .map(|l| {
            serde_json::json!({
                "width": l.width, "height": l.height, "tiled": l.tiled,
                "chunk_width": l.chunk_w, "chunk_height": l.chunk_h,
                "chunks": l.byte_counts.len(),
                "bytes_on_disk": l.byte_counts.iter().sum::<u64>(),
            })
        })
        .collect();
    serde_json::json!({
        "file": args.file, "format": "TIFF", "width": info.width, "height": info.height,
        "channels": s.samples, "bits_per_sample": s.bits, "float": s.float, "signed": s.signed,
        "separate_planes": s.separate, "unassociated_alpha": s.unassociated_alpha,
        "compression": compression_name(s.compression),
        "predictor": predictor_name(s.predictor),
        "bytes_on_disk": on_disk, "levels": levels,
        "texture_format": meta.texture_format,
        "wrap_modes": meta.wrap.map(|[a, b]| [AddressMode::oiio_name(a), AddressMode::oiio_name(b)]),
        "constant_color": meta.constant_color, "average_color": meta.average_color,
        "fingerprint": meta.fingerprint,
        "served_format": info.format.to_string(), "served_levels": info.num_levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/tx")
            .join(name)
    }

    fn text(name: &str) -> String {
        let path = fixture(name);
        let source = TiffSource::new(&path);
        let info = source.open().unwrap();
        let layout = source.layout().unwrap();
        render(name, &layout, 1234, &info)
    }

    #[test]
    fn describes_maketx_files_from_their_directories() {
        let t = text("rgb8_lzw_wrap.tx");
        assert!(t.starts_with("rgb8_lzw_wrap.tx: TIFF texture (\"Plain Texture\"), 100x68, 3 channels, 8-bit unsigned, contiguous, LZW"), "{t}");
        assert!(t.contains("level  0:   100 x 68"), "{t}");
        assert!(t.contains("64x64 tiles"), "{t}");
        assert!(t.contains("wrap modes: "), "{t}");
        assert!(
            t.contains("fingerprint: 7BED6B7B0DD1086CC9A8138E80C37422875A2431"),
            "{t}"
        );
        let t = text("gray_float.tx");
        assert!(t.contains("1 channel, 32-bit float"), "{t}");
        let t = text("rgb_half_separate.tx");
        assert!(t.contains("32-bit float, separate planes"), "{t}"); // OIIO 2.4 writes `-d half` as float
        let t = text("const.tx");
        assert!(t.contains("constant colour: "), "{t}");
    }

    #[test]
    fn strips_are_described_and_their_levels_generated() {
        let t = text("strips8.tif");
        assert!(t.contains("strips of"), "{t}");
        assert!(t.contains("generated in memory"), "{t}");
    }
}
