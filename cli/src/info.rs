//! `demandtex info FILE`: what an OpenEXR file holds, from its headers and offset tables
//! only (no pixel is decoded, so it is instant on a huge file).
//!
//! Per part: data window, channels, line order, compression, storage (scan lines or tiles),
//! level mode and rounding, every level's size, chunk count, bytes on disk (from the
//! offset tables), decoded bytes and their ratio, and the attributes that are not structure
//! (owner, comments, software, wrap modes, custom ones). Other image formats get their kind
//! and size.

use crate::convert::load::{detect_format, format_name, guarded, InputFormat};
use crate::error::CliError;
use crate::table::{format_bytes, format_count};
use exr::io::{PeekRead, Tracking};
use exr::math::RoundingMode;
use exr::meta::attribute::{AttributeValue, LevelMode, LineOrder, SampleType};
use exr::meta::header::Header;
use exr::meta::{mip_map_levels, rip_map_levels, BlockDescription, MetaData};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// Arguments of `demandtex info`.
#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// The file to describe (OpenEXR; other images get their format and size).
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `info` found in an OpenEXR file.
#[derive(Clone, Debug, Serialize)]
pub struct ExrInfo {
    /// The file described.
    pub file: PathBuf,
    /// Always "OpenEXR".
    pub format: &'static str,
    /// Size of the file.
    pub file_bytes: u64,
    /// Whether the file has several parts.
    pub multipart: bool,
    /// Whether some part holds deep data.
    pub deep: bool,
    /// The parts, in file order.
    pub parts: Vec<PartInfo>,
}

/// One part (layer) of an OpenEXR file.
#[derive(Clone, Debug, Serialize)]
pub struct PartInfo {
    /// The part name, when set.
    pub name: Option<String>,
    /// Data window width.
    pub width: u64,
    /// Data window height.
    pub height: u64,
    /// Data window top-left corner.
    pub origin: [i32; 2],
    /// Display window `[x, y, width, height]`.
    pub display_window: [i64; 4],
    /// Channels, in file order.
    pub channels: Vec<ChannelInfo>,
    /// `increasing`, `decreasing` or `unspecified`.
    pub line_order: &'static str,
    /// `none`, `rle`, `zips`, `zip`, `piz`, `pxr24`, `b44`, `b44a`, `dwaa`, `dwab`, ...
    pub compression: &'static str,
    /// `scanline` or `tiled`.
    pub storage: &'static str,
    /// Tile width and height (tiled parts).
    pub tile: Option<[u64; 2]>,
    /// `single`, `mipmap` or `ripmap`.
    pub level_mode: &'static str,
    /// `down` or `up` (mip and rip maps).
    pub rounding: Option<&'static str>,
    /// Every level, finest first.
    pub levels: Vec<LevelInfo>,
    /// Chunks (tiles or scan-line blocks).
    pub chunks: u64,
    /// Bytes of this part's chunks in the file.
    pub bytes_on_disk: u64,
    /// Bytes of all levels' samples, uncompressed (none for deep data).
    pub decoded_bytes: Option<u64>,
    /// `decoded_bytes / bytes_on_disk`.
    pub ratio: Option<f64>,
    /// Whether the part holds deep data.
    pub deep: bool,
    /// Attributes beyond the structural ones (owner, comments, software, custom ...).
    pub attributes: BTreeMap<String, String>,
}

/// One channel of a part.
#[derive(Clone, Debug, Serialize)]
pub struct ChannelInfo {
    /// The channel name.
    pub name: String,
    /// `half`, `float` or `uint`.
    #[serde(rename = "type")]
    pub sample_type: &'static str,
    /// x and y sampling (1 1 unless subsampled).
    pub sampling: [u64; 2],
}

/// One resolution level.
#[derive(Clone, Debug, Serialize)]
pub struct LevelInfo {
    /// Level index (x and y; equal except in rip maps).
    pub level: [u64; 2],
    /// Width in texels.
    pub width: u64,
    /// Height in texels.
    pub height: u64,
}

/// Runs `demandtex info`.
pub fn run(args: &InfoArgs) -> Result<(), CliError> {
    match detect_format(&args.file)? {
        InputFormat::Exr => {
            let info = inspect(&args.file)?;
            if args.json {
                let text = serde_json::to_string_pretty(&info)
                    .map_err(|e| CliError::Io(format!("cannot format JSON: {e}")))?;
                print_stdout(&format!("{text}\n"))?;
            } else {
                print_stdout(&render(&info))?;
            }
        }
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
                    "{}: not an OpenEXR file: {name} image, {width}x{height}\n",
                    args.file.display()
                ))?;
            }
        }
    }
    Ok(())
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

/// Reads the headers and offset tables of the OpenEXR file `path`.
pub fn inspect(path: &Path) -> Result<ExrInfo, CliError> {
    let corrupt = |m: &dyn std::fmt::Display| {
        CliError::Io(format!("{}: not a valid OpenEXR file: {m}", path.display()))
    };
    guarded(path, || {
        let file = std::fs::File::open(path)
            .map_err(|e| CliError::Io(format!("cannot read {}: {e}", path.display())))?;
        let file_bytes = file
            .metadata()
            .map_err(|e| CliError::Io(format!("cannot read {}: {e}", path.display())))?
            .len();
        let mut read = PeekRead::new(Tracking::new(BufReader::new(file)));
        let meta = MetaData::read_from_buffered(&mut read, false).map_err(|e| corrupt(&e))?;
        MetaData::validate(&meta.headers, false).map_err(|e| corrupt(&e))?;
        let tables =
            MetaData::read_offset_tables(&mut read, &meta.headers).map_err(|e| corrupt(&e))?;
        let chunks_start = read.byte_position() as u64;
        let sizes = chunk_sizes(&tables, chunks_start, file_bytes).map_err(|m| corrupt(&m))?;
        let parts = meta
            .headers
            .iter()
            .zip(sizes)
            .map(|(h, bytes)| part_info(h, bytes))
            .collect();
        Ok(ExrInfo {
            file: path.to_path_buf(),
            format: "OpenEXR",
            file_bytes,
            multipart: meta.requirements.has_multiple_layers,
            deep: meta.requirements.has_deep_data,
            parts,
        })
    })
}

/// Each part's chunk bytes: a chunk runs from its offset to the next chunk's (or the end
/// of the file). Offsets before the chunks, past the end or repeated mean a corrupt or
/// truncated file.
fn chunk_sizes(
    tables: &[Vec<u64>],
    chunks_start: u64,
    file_bytes: u64,
) -> Result<Vec<u64>, String> {
    let mut all: Vec<(u64, usize)> = Vec::new();
    for (part, table) in tables.iter().enumerate() {
        for &offset in table {
            if offset < chunks_start || offset >= file_bytes {
                return Err(format!(
                    "a chunk offset ({offset}) lies outside the file's chunks \
                     (bytes {chunks_start} to {file_bytes}); the file is truncated or corrupt"
                ));
            }
            all.push((offset, part));
        }
    }
    all.sort_unstable();
    if all.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err("two chunks share an offset".to_string());
    }
    let mut sizes = vec![0u64; tables.len()];
    for (i, &(offset, part)) in all.iter().enumerate() {
        let end = all.get(i + 1).map_or(file_bytes, |next| next.0);
        sizes[part] += end - offset;
    }
    Ok(sizes)
}

fn part_info(h: &Header, bytes_on_disk: u64) -> PartInfo {
    let size = h.layer_size;
    let (storage, tile, level_mode, rounding) = match h.blocks {
        BlockDescription::ScanLines => ("scanline", None, LevelMode::Singular, None),
        BlockDescription::Tiles(t) => (
            "tiled",
            Some([t.tile_size.x() as u64, t.tile_size.y() as u64]),
            t.level_mode,
            Some(t.rounding_mode),
        ),
    };
    let round = rounding.unwrap_or(RoundingMode::Down);
    let levels: Vec<LevelInfo> = match level_mode {
        LevelMode::Singular => vec![level(0, 0, size.x(), size.y())],
        LevelMode::MipMap => mip_map_levels(round, size)
            .map(|(l, s)| level(l, l, s.x(), s.y()))
            .collect(),
        LevelMode::RipMap => rip_map_levels(round, size)
            .map(|(l, s)| level(l.x(), l.y(), s.x(), s.y()))
            .collect(),
    };
    let channels: Vec<ChannelInfo> = h
        .channels
        .list
        .iter()
        .map(|c| ChannelInfo {
            name: c.name.to_string(),
            sample_type: match c.sample_type {
                SampleType::F16 => "half",
                SampleType::F32 => "float",
                SampleType::U32 => "uint",
            },
            sampling: [c.sampling.x() as u64, c.sampling.y() as u64],
        })
        .collect();
    let decoded_bytes = (!h.deep).then(|| {
        levels
            .iter()
            .map(|l| {
                h.channels
                    .list
                    .iter()
                    .map(|c| {
                        let (sx, sy) = (c.sampling.x().max(1) as u64, c.sampling.y().max(1) as u64);
                        (l.width / sx) * (l.height / sy) * c.sample_type.bytes_per_sample() as u64
                    })
                    .sum::<u64>()
            })
            .sum::<u64>()
    });
    let display = h.shared_attributes.display_window;
    PartInfo {
        name: h.own_attributes.layer_name.as_ref().map(|n| n.to_string()),
        width: size.x() as u64,
        height: size.y() as u64,
        origin: [
            h.own_attributes.layer_position.x(),
            h.own_attributes.layer_position.y(),
        ],
        display_window: [
            display.position.x() as i64,
            display.position.y() as i64,
            display.size.x() as i64,
            display.size.y() as i64,
        ],
        channels,
        line_order: match h.line_order {
            LineOrder::Increasing => "increasing",
            LineOrder::Decreasing => "decreasing",
            LineOrder::Unspecified => "unspecified",
        },
        compression: compression_name(h.compression),
        storage,
        tile,
        level_mode: match level_mode {
            LevelMode::Singular => "single",
            LevelMode::MipMap => "mipmap",
            LevelMode::RipMap => "ripmap",
        },
        rounding: rounding.map(|r| match r {
            RoundingMode::Down => "down",
            RoundingMode::Up => "up",
        }),
        levels,
        chunks: h.chunk_count as u64,
        bytes_on_disk,
        decoded_bytes,
        ratio: decoded_bytes
            .filter(|_| bytes_on_disk > 0)
            .map(|d| d as f64 / bytes_on_disk as f64),
        deep: h.deep,
        attributes: interesting_attributes(h),
    }
}

fn level(lx: usize, ly: usize, width: usize, height: usize) -> LevelInfo {
    LevelInfo {
        level: [lx as u64, ly as u64],
        width: width as u64,
        height: height as u64,
    }
}

/// The command-line name of an exr compression.
pub fn compression_name(c: exr::compression::Compression) -> &'static str {
    use exr::compression::Compression as C;
    match c {
        C::Uncompressed => "none",
        C::RLE => "rle",
        C::ZIP1 => "zips",
        C::ZIP16 => "zip",
        C::PIZ => "piz",
        C::PXR24 => "pxr24",
        C::B44 => "b44",
        C::B44A => "b44a",
        C::DWAA(_) => "dwaa",
        C::DWAB(_) => "dwab",
        C::HTJ2K32 => "htj2k32",
        C::HTJ2K256 => "htj2k256",
    }
}

/// The attributes that describe content rather than structure, as text.
fn interesting_attributes(h: &Header) -> BTreeMap<String, String> {
    const STRUCTURAL: &[&str] = &[
        "channels",
        "compression",
        "dataWindow",
        "displayWindow",
        "lineOrder",
        "pixelAspectRatio",
        "screenWindowCenter",
        "screenWindowWidth",
        "tiles",
        "type",
        "name",
        "chunkCount",
        "version",
        "maxSamplesPerPixel",
    ];
    h.all_named_attributes()
        .filter_map(|(name, value)| {
            let name = String::from_utf8_lossy(name).into_owned();
            if STRUCTURAL.contains(&name.as_str()) {
                return None;
            }
            let text = match value {
                AttributeValue::Text(t) => t.to_string(),
                AttributeValue::TextVector(v) => v
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                AttributeValue::F32(v) => v.to_string(),
                AttributeValue::F64(v) => v.to_string(),
                AttributeValue::I32(v) => v.to_string(),
                AttributeValue::Preview(p) => format!("{}x{} preview", p.size.x(), p.size.y()),
                other => {
                    let mut s = format!("{other:?}");
                    if s.len() > 120 {
                        let cut = (0..=117)
                            .rev()
                            .find(|&i| s.is_char_boundary(i))
                            .unwrap_or(0);
                        s.truncate(cut);
                        s.push_str("...");
                    }
                    s
                }
            };
            Some((name, text))
        })
        .collect()
}

/// The text report.
pub fn render(info: &ExrInfo) -> String {
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
            Some(r) if p.level_mode != "single" => format!("{} (rounding {r})", p.level_mode),
            _ => p.level_mode.to_string(),
        };
        let _ = writeln!(out, "  levels:      {} {levels}", p.levels.len());
        if p.level_mode == "ripmap" {
            // Every width with every height: list each side once.
            let side = |pick: fn(&LevelInfo) -> (u64, u64)| {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_split_the_file_by_offsets_and_reject_bad_tables() {
        let tables = vec![vec![100, 150], vec![120]];
        assert_eq!(chunk_sizes(&tables, 100, 200).unwrap(), vec![20 + 50, 30]);
        assert!(
            chunk_sizes(&[vec![100, 250]], 100, 200).is_err(),
            "past the end"
        );
        assert!(chunk_sizes(&[vec![0]], 100, 200).is_err(), "unwritten");
        assert!(
            chunk_sizes(&[vec![120, 120]], 100, 200).is_err(),
            "repeated"
        );
    }

    #[test]
    fn inspect_reports_what_write_mip_exr_wrote() {
        use crate::convert::{FloatImage, WriteOptions};
        let dir = std::env::temp_dir().join(format!("demandtex-info-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.exr");
        let img = FloatImage::zeros(300, 77, 4);
        let options = WriteOptions {
            tile: (32, 16),
            ..WriteOptions::default()
        };
        let written = crate::convert::write(&path, &img, &options, None).unwrap();
        let info = inspect(&path).unwrap();
        assert_eq!(info.file_bytes, written.bytes_on_disk);
        let p = &info.parts[0];
        assert_eq!((p.width, p.height), (300, 77));
        assert_eq!(
            (p.storage, p.tile, p.level_mode, p.rounding),
            ("tiled", Some([32, 16]), "mipmap", Some("down"))
        );
        assert_eq!(p.levels.len(), 9);
        assert_eq!((p.levels[1].width, p.levels[1].height), (150, 38));
        assert_eq!(p.chunks, written.chunks);
        assert_eq!(p.decoded_bytes, Some(written.decoded_bytes));
        assert_eq!(p.compression, "zip");
        assert!(p.bytes_on_disk < info.file_bytes);
        assert_eq!(
            p.attributes.get("software").map(String::as_str),
            Some("demandtex convert")
        );
        let text = render(&info);
        assert!(
            text.contains("300x77") && text.contains("tiled 32x16"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
