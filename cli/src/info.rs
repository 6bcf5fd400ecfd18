//! `demandtex info FILE`: what an OpenEXR file holds, from its headers and offset tables
//! only (no pixel is decoded, so it is instant on a huge file), and how demandtex serves it.
//!
//! The description is core's [`demandtex::sources::exr::describe`], read by the same code
//! as the loader's EXR source: per part, data window, channels, line order, compression,
//! storage (scan lines or tiles), level mode and rounding, every level's size, chunk
//! count, bytes on disk (from the offset tables), decoded bytes and their ratio, and the
//! attributes that are not structure (owner, comments, software, wrap modes, custom ones);
//! then what the loader serves (part, channels, texel format, levels from the file or
//! generated, pages against file tiles) or the error it gives. This module only formats it
//! (text, `--json`). Ptex files get their faces, data type and levels (`info_ptex`); DDS
//! files their encoding and levels (`info_dds`); TIFF (maketx `.tx`) files their samples,
//! compression, levels and texture metadata (`info_tiff`); other image formats their kind
//! and size. `--check` and `--stats` read every texel (`info_check`).

use crate::convert::load::{detect_format, format_name, guarded, InputFormat};
use crate::error::CliError;
use crate::table::{format_bytes, format_count};
use demandtex::sources::exr::{
    describe, ExrDescription, ExrLevelMode, ExrStorage, LevelDescription, ServedAs,
};
use demandtex::sources::ChannelSelection;
use demandtex::textures::TexelType;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `demandtex info`.
#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// The file to describe (OpenEXR, Ptex, DDS, TIFF / maketx .tx; other images get their
    /// format and size).
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Read every tile (Ptex: face) of every level through the engine's reader: exit code
    /// 0 when the file is whole, 1 with the first error otherwise (OpenEXR, Ptex, DDS,
    /// PNG, JPEG, TIFF, Radiance HDR, Targa, BMP).
    #[arg(long)]
    pub check: bool,
    /// With --check (implied): min, max and mean per channel of level 0.
    #[arg(long)]
    pub stats: bool,
}

/// The JSON report of an OpenEXR file: the description's fields, the format, and either
/// `served_as` or `not_served` (the loader's error).
#[derive(Serialize)]
struct ExrJson<'a> {
    #[serde(flatten)]
    description: &'a ExrDescription,
    /// Always "OpenEXR".
    format: &'static str,
    served_as: Option<&'a ServedAs>,
    not_served: Option<&'a str>,
}

/// The JSON text of `info` (pretty-printed).
pub fn to_json(info: &ExrDescription) -> Result<String, CliError> {
    let json = ExrJson {
        description: info,
        format: "OpenEXR",
        served_as: info.served.as_ref().ok(),
        not_served: info.served.as_ref().err().map(|e| e.0.as_str()),
    };
    serde_json::to_string_pretty(&json)
        .map_err(|e| CliError::Io(format!("cannot format JSON: {e}")))
}

/// Runs `demandtex info`.
pub fn run(args: &InfoArgs) -> Result<(), CliError> {
    if args.check || args.stats {
        return crate::info_check::run(&args.file, args.stats, args.json);
    }
    if crate::info_check::is_ptex(&args.file) {
        return crate::info_ptex::print_ptex(args);
    }
    match detect_format(&args.file)? {
        InputFormat::Exr => {
            let info = describe(&args.file, 0, &ChannelSelection::Auto)
                .map_err(|e| CliError::Io(e.to_string()))?;
            if args.json {
                print_stdout(&format!("{}\n", to_json(&info)?))?;
            } else {
                print_stdout(&render(&info))?;
            }
        }
        InputFormat::Dds => crate::info_dds::print_dds(args)?,
        InputFormat::Image(image::ImageFormat::Tiff) => crate::info_tiff::print_tiff(args)?,
        InputFormat::Image(format) => {
            let (width, height) = guarded(&args.file, || {
                let reader = image::ImageReader::open(&args.file).map_err(|e| {
                    CliError::Io(format!("cannot read {}: {e}", args.file.display()))
                })?;
                let mut reader = reader;
                reader.set_format(format);
                reader.into_dimensions().map_err(|e| {
                    CliError::Io(format!("cannot decode {}: {e}", args.file.display()))
                })
            })?;
            let name = format_name(format);
            if args.json {
                let value = serde_json::json!({
                    "file": args.file, "format": name, "width": width, "height": height,
                });
                print_stdout(&format!("{value:#}\n"))?;
            } else {
                print_stdout(&format!(
                    "{}: {name} image, {width}x{height}: no tiles or mip levels (decoded whole \
                     inside the budget; `demandtex convert` makes a tiled, mip-mapped texture)\n",
                    args.file.display()
                ))?;
            }
        }
    }
    Ok(())
}

/// The size of `path` on disk.
pub fn bytes_on_disk(path: &std::path::Path) -> Result<u64, CliError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| CliError::Io(format!("cannot read {}: {e}", path.display())))
}

/// Writes `text` to stdout; a closed pipe (`demandtex info x.exr | head`) is not an error.
pub fn print_stdout(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::Io(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// The text report: every part, then how demandtex serves the file.
pub fn render(info: &ExrDescription) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: OpenEXR, {} part{}{}, {}",
        info.file.display(),
        info.parts.len(),
        if info.parts.len() == 1 { "" } else { "s" },
        if info.deep { ", deep" } else { "" },
        format_bytes(info.file_bytes),
    );
    for (i, p) in info.parts.iter().enumerate() {
        let title = match &p.name {
            Some(n) => format!("part {i} \"{n}\""),
            None => format!("part {i}"),
        };
        let _ = writeln!(out, "{title}:");
        let origin = if p.origin != [0, 0] {
            format!(" at ({}, {})", p.origin[0], p.origin[1])
        } else {
            String::new()
        };
        let _ = writeln!(out, "  resolution:  {}x{}{origin}", p.width, p.height);
        let [dx, dy, dw, dh] = p.display_window;
        if [dx, dy, dw, dh]
            != [
                p.origin[0] as i64,
                p.origin[1] as i64,
                p.width as i64,
                p.height as i64,
            ]
        {
            let _ = writeln!(out, "  display:     {dw}x{dh} at ({dx}, {dy})");
        }
        let channels: Vec<String> = p
            .channels
            .iter()
            .map(|c| {
                if c.sampling == [1, 1] {
                    format!("{} {}", c.name, c.sample_type)
                } else {
                    format!(
                        "{} {} ({}x{} sampling)",
                        c.name, c.sample_type, c.sampling[0], c.sampling[1]
                    )
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "  channels:    {} ({})",
            p.channels.len(),
            channels.join(", ")
        );
        let _ = writeln!(out, "  compression: {}", p.compression);
        let _ = writeln!(out, "  line order:  {}", p.line_order);
        let storage = match p.tile {
            Some([w, h]) => format!("tiled {w}x{h}"),
            None => "scanline".to_string(),
        };
        let _ = writeln!(out, "  storage:     {storage}");
        let levels = match p.rounding {
            Some(r) if p.level_mode != ExrLevelMode::Single => {
                format!("{} (rounding {r})", p.level_mode)
            }
            _ => p.level_mode.to_string(),
        };
        let _ = writeln!(out, "  levels:      {} {levels}", p.levels.len());
        if p.level_mode == ExrLevelMode::Ripmap {
            // Every width with every height: list each side once.
            let side = |pick: fn(&LevelDescription) -> (u64, u64)| {
                let mut seen: Vec<(u64, u64)> = p.levels.iter().map(pick).collect();
                seen.sort_unstable();
                seen.dedup();
                seen.iter()
                    .map(|(_, s)| s.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let _ = writeln!(out, "  widths:      {}", side(|l| (l.level[0], l.width)));
            let _ = writeln!(out, "  heights:     {}", side(|l| (l.level[1], l.height)));
        } else {
            let sizes: Vec<String> = p
                .levels
                .iter()
                .map(|l| format!("{}x{}", l.width, l.height))
                .collect();
            let _ = writeln!(out, "  level sizes: {}", sizes.join(" "));
        }
        let _ = writeln!(out, "  chunks:      {}", format_count(p.chunks));
        let decoded = match (p.decoded_bytes, p.ratio) {
            (Some(d), Some(r)) => format!(", decoded {} (ratio {r:.2}:1)", format_bytes(d)),
            (Some(d), None) => format!(", decoded {}", format_bytes(d)),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  bytes:       {} on disk{decoded}",
            format_bytes(p.bytes_on_disk)
        );
        for (k, v) in &p.attributes {
            let one_line = v.lines().collect::<Vec<_>>().join(" / ");
            let _ = writeln!(out, "  {k}: {one_line}");
        }
    }
    render_served(&mut out, info);
    out
}

/// The "served as" lines: what the loader's EXR source serves from the file, or why it
/// cannot.
fn render_served(out: &mut String, info: &ExrDescription) {
    let s = match &info.served {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(out, "served as:     not servable: {e}");
            return;
        }
    };
    let _ = writeln!(out, "served as (part {}):", s.part);
    let alpha = if s.constant_alpha { " + alpha 1" } else { "" };
    let _ = writeln!(out, "  channels:    {}{alpha}", s.channels.join(", "));
    let _ = writeln!(
        out,
        "  texels:      {} x {} ({} bytes), {}x{}",
        s.format.channels,
        texel_type_name(s.format.texel_type),
        s.format.texel_bytes(),
        s.width,
        s.height
    );
    let generated = s.levels - s.levels_from_file;
    let levels = match s.generated_because {
        None => format!("{}, all from the file", s.levels),
        Some(why) => format!(
            "{}: {} from the file, {generated} generated in memory when first read ({why}; \
             slow: convert it with `demandtex convert`)",
            s.levels, s.levels_from_file
        ),
    };
    let _ = writeln!(out, "  levels:      {levels}");
    let storage = info.parts.get(s.part).map(|p| p.storage);
    let block = if storage == Some(ExrStorage::Scanline) {
        "scan-line block"
    } else {
        "file tile"
    };
    let per_page = match s.blocks_per_page {
        Some(n) => format!("{n} {block}{} each", if n == 1 { "" } else { "s" }),
        None => format!("not aligned with the {block}s (decoded {block}s are cached)"),
    };
    let [pw, ph] = s.page_tile;
    let _ = writeln!(out, "  pages:       {pw}x{ph} texels, {per_page}");
    if s.cpu_page_tile != s.page_tile {
        let [cw, ch] = s.cpu_page_tile;
        let _ = writeln!(
            out,
            "               on the CPU {cw}x{ch} texels, one file tile each (the GPU's above)"
        );
    }
}

/// `half`, `float`, ... as `info` prints channel types.
fn texel_type_name(t: TexelType) -> &'static str {
    match t {
        TexelType::U8 => "u8",
        TexelType::U16 => "u16",
        TexelType::F16 => "half",
        TexelType::F32 => "float",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::{FloatImage, WriteOptions};

    #[test]
    fn describes_what_the_writer_wrote_as_text_and_json() {
        let dir = std::env::temp_dir().join(format!("demandtex-info-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.exr");
        let img = FloatImage::zeros(300, 77, 4);
        let options = WriteOptions {
            tile: (32, 16),
            ..WriteOptions::default()
        };
        let written = crate::convert::write(&path, &img, &options, None).unwrap();
        let info = describe(&path, 0, &ChannelSelection::Auto).unwrap();
        assert_eq!(info.file_bytes, written.bytes_on_disk);
        let p = &info.parts[0];
        assert_eq!(p.chunks, written.chunks);
        assert_eq!(p.decoded_bytes, Some(written.decoded_bytes));
        assert_eq!(
            p.attributes.get("software").map(String::as_str),
            Some("demandtex convert")
        );
        let text = render(&info);
        for needle in [
            "300x77",
            "tiled 32x16",
            "9 mipmap (rounding down)",
            "served as (part 0):",
            "channels:    R, G, B, A\n",
            "4 x half (8 bytes)",
            "9, all from the file",
            "128x64 texels, 16 file tiles each",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
        }
        let json: serde_json::Value = serde_json::from_str(&to_json(&info).unwrap()).unwrap();
        assert_eq!(json["format"], "OpenEXR");
        assert_eq!(json["parts"][0]["storage"], "tiled");
        assert_eq!(json["parts"][0]["rounding"], "down");
        assert_eq!(json["parts"][0]["line_order"], "increasing");
        assert_eq!(json["served_as"]["levels_from_file"], 9);
        assert_eq!(json["served_as"]["format"]["texel_type"], "F16");
        assert!(json["not_served"].is_null());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
