//! `demandtex convert`: any EXR, PNG, JPEG, TIFF, Radiance HDR, Targa or BMP to a tiled,
//! mip-mapped OpenEXR file
//! (the maketx equivalent), or to a mip-mapped DDS of BC1–BC7 blocks (`--format dds-…`,
//! [`dds::write_dds`], with the PSNR of level 0 in the summary).
//!
//! - `load`: decoding the input to a `FloatImage` (channel selection, sRGB linearisation).
//! - the mip chain (`demandtex::sources::mips`: box / triangle / lanczos3) and the tiled
//!   mip EXR writer (`demandtex::sources::exr::write_mip_exr`) are core's; [`write()`] calls
//!   the writer with the CLI's errors.

mod core_inputs;
pub mod dds;
pub mod load;

pub use dds::{DdsCompression, DdsWriteOptions, WrittenDds};
pub use demandtex::sources::exr::{Compression, SampleType, WriteOptions, WrittenFile};
pub use demandtex::sources::mips::DownsampleFilter;
pub use demandtex::sources::FloatImage;

use crate::error::CliError;
use crate::progress::Progress;
use crate::table::{format_bytes, format_seconds};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use demandtex::sources::exr::writer::MAX_TILE_SIDE;
use demandtex::textures::{TexelFormat, TexelType};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Arguments of `demandtex convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The image to convert: OpenEXR (scan-line or tiled), PNG, JPEG, TIFF, Radiance HDR,
    /// Targa or BMP.
    pub input: PathBuf,
    /// The tiled, mip-mapped OpenEXR file to write (written to OUT.tmp, then renamed).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Tile size: `page` (the default) writes tiles the shape of one demandtex page for
    /// the texel format written (half RGBA: 128x64, float RGBA: 64x64, half Y: 256x128), so
    /// each page read decodes exactly one file tile; N (square) or WxH for another size (64
    /// is what OIIO's maketx writes).
    #[arg(long, value_name = "page|N|WxH", default_value = "page", value_parser = parse_tile)]
    pub tile: TileShape,
    /// Compression of the tiles.
    #[arg(
        long,
        default_value_t = Compression::Zip,
        value_parser = choice(&Compression::ALL, Compression::name, Compression::description)
    )]
    pub compression: Compression,
    /// Sample type written.
    #[arg(
        long = "type",
        default_value_t = SampleType::Half,
        value_parser = choice(&SampleType::ALL, SampleType::name, SampleType::description)
    )]
    pub sample_type: SampleType,
    /// The filter computing each mip level from the one before.
    #[arg(
        long,
        default_value_t = DownsampleFilter::Box,
        value_parser = choice(
            &DownsampleFilter::ALL,
            DownsampleFilter::name,
            DownsampleFilter::description
        )
    )]
    pub filter: DownsampleFilter,
    /// Channels to convert: a layer (`diffuse` = diffuse.R,G,B,A), a channel, or a list
    /// (`R,G,B`). Default: R,G,B(,A), else Y(,A), else the only channel.
    #[arg(long, value_name = "SELECTION")]
    pub channels: Option<String>,
    /// Write level 0 only (still tiled).
    #[arg(long)]
    pub no_mips: bool,
    /// Treat 8/16-bit inputs as sRGB-encoded and convert them to linear (alpha unchanged).
    #[arg(long)]
    pub linearize: bool,
    /// Multiply colour by alpha (the OpenEXR convention; PNG stores straight alpha, and
    /// TIFF may). Off by default: samples are kept as stored. The engine serves a PNG (or a
    /// TIFF marked unassociated) with its alpha associated as OpenImageIO does; this flag
    /// multiplies in float, after --linearize.
    #[arg(long)]
    pub premultiply: bool,
    /// What to write: `exr` (tiled, mip-mapped OpenEXR) or a DDS encoding, `dds-bc7`,
    /// `dds-bc1`, `dds-bc3`, `dds-bc4`, `dds-bc5`, `dds-bc6h` or `dds-rgba8`. Default:
    /// `dds-bc7` when OUT ends in `.dds`, else `exr`. DDS ignores --tile, --compression and
    /// --type.
    #[arg(long, value_name = "FORMAT", value_parser = output_formats())]
    pub format: Option<OutputFormat>,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The file `convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Tiled, mip-mapped OpenEXR.
    Exr,
    /// DDS with this encoding.
    Dds(DdsCompression),
}

impl OutputFormat {
    /// The format `--format` asks for, else the one the output's extension suggests.
    pub fn resolve(asked: Option<OutputFormat>, output: &Path) -> OutputFormat {
        asked.unwrap_or_else(|| {
            let dds = output
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("dds"));
            if dds {
                OutputFormat::Dds(DdsCompression::Bc7)
            } else {
                OutputFormat::Exr
            }
        })
    }
}

impl OutputFormat {
    /// Every choice: `exr`, then `dds-NAME` for each DDS encoding.
    pub fn all() -> Vec<OutputFormat> {
        std::iter::once(OutputFormat::Exr)
            .chain(DdsCompression::ALL.into_iter().map(OutputFormat::Dds))
            .collect()
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Exr => "exr",
            OutputFormat::Dds(c) => c.format_name(),
        }
    }

    /// One line of help.
    pub fn description(self) -> &'static str {
        match self {
            OutputFormat::Exr => "tiled, mip-mapped OpenEXR",
            OutputFormat::Dds(c) => c.description(),
        }
    }
}

/// A clap parser for `--format`: the names of [`OutputFormat::all`], each with its help.
fn output_formats() -> impl TypedValueParser<Value = OutputFormat> {
    let values = OutputFormat::all()
        .into_iter()
        .map(|f| PossibleValue::new(f.name()).help(f.description()));
    PossibleValuesParser::new(values).map(|text: String| {
        OutputFormat::all()
            .into_iter()
            .find(|f| f.name() == text)
            .expect("clap accepts only the possible values")
    })
}

impl ConvertArgs {
    /// The writer's options these arguments ask for, for an image of `channels` channels.
    pub fn write_options(&self, channels: u32) -> WriteOptions {
        WriteOptions {
            tile: self.tile.resolve(channels, self.sample_type),
            compression: self.compression,
            sample_type: self.sample_type,
            filter: self.filter,
            mips: !self.no_mips,
        }
    }
}

/// A clap parser for one of core's named choices: `all`, each with its name and help line
/// (what each choice means and is called is defined once, in core).
fn choice<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
    help: fn(T) -> &'static str,
) -> impl TypedValueParser<Value = T> {
    let values = all
        .iter()
        .map(move |&v| PossibleValue::new(name(v)).help(help(v)));
    PossibleValuesParser::new(values).map(move |text: String| {
        all.iter()
            .copied()
            .find(|&v| name(v) == text)
            .expect("clap accepts only the possible values")
    })
}

/// The tile size asked for on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileShape {
    /// One demandtex page for the texel format written ([`page_tile`]).
    Page,
    /// A fixed width and height.
    Fixed(u32, u32),
}

impl TileShape {
    /// The tile width and height for an image of `channels` channels written as `sample_type`.
    pub fn resolve(self, channels: u32, sample_type: SampleType) -> (u32, u32) {
        match self {
            TileShape::Page => page_tile(channels, sample_type),
            TileShape::Fixed(w, h) => (w, h),
        }
    }
}

/// The extent of one demandtex page (64 KiB) for the texels demandtex serves from a file of
/// `channels` channels of `sample_type` (three channels are served as four).
pub fn page_tile(channels: u32, sample_type: SampleType) -> (u32, u32) {
    let texel_type = match sample_type {
        SampleType::Half => TexelType::F16,
        SampleType::Float => TexelType::F32,
    };
    let channels = match channels {
        0..=2 => channels.max(1),
        _ => 4,
    };
    TexelFormat {
        texel_type,
        channels,
    }
    .tile_extent()
}

/// Parses `page`, `N` or `WxH` (each 1 to `MAX_TILE_SIDE`).
pub fn parse_tile(text: &str) -> Result<TileShape, String> {
    if text.trim().eq_ignore_ascii_case("page") {
        return Ok(TileShape::Page);
    }
    parse_tile_size(text).map(|(w, h)| TileShape::Fixed(w, h))
}

/// Parses `N` or `WxH` (each 1 to `MAX_TILE_SIDE`).
pub fn parse_tile_size(text: &str) -> Result<(u32, u32), String> {
    let side = |s: &str| -> Result<u32, String> {
        let v: u32 = s
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not a tile side"))?;
        if (1..=MAX_TILE_SIDE).contains(&v) {
            Ok(v)
        } else {
            Err(format!("tile side {v} is not 1 to {MAX_TILE_SIDE}"))
        }
    };
    match text.split_once(['x', 'X']) {
        Some((w, h)) => Ok((side(w)?, side(h)?)),
        None => side(text).map(|s| (s, s)),
    }
}

/// Runs `demandtex convert`: load, build mips, write tiles, print a summary line.
pub fn run(args: &ConvertArgs) -> Result<(), CliError> {
    let start = Instant::now();
    check_paths(&args.input, &args.output)?;
    if crate::info_check::is_ptex(&args.input) {
        // A Ptex file is one image per face with no common uv space: it has no single
        // image to tile and mip-map. It is streamed as it is.
        return Err(CliError::Usage(format!(
            "{}: a Ptex file stores a texture per face with no shared uv layout, so it cannot become one tiled OpenEXR image; demandtex streams .ptx files directly (create_ptex_texture); use `demandtex info` to describe it",
            args.input.display()
        )));
    }
    let loaded = load::load(
        &args.input,
        &load::LoadOptions {
            channels: args.channels.clone(),
            linearize: args.linearize,
            premultiply: args.premultiply,
            ..Default::default()
        },
    )?;
    let image = &loaded.image;
    if let OutputFormat::Dds(compression) = OutputFormat::resolve(args.format, &args.output) {
        let options = DdsWriteOptions {
            compression,
            filter: args.filter,
            mips: !args.no_mips,
        };
        let written = dds::write_dds(&args.output, image, &options).map_err(|e| match e {
            demandtex::Error::InvalidArgument(m) => CliError::Usage(m),
            other => CliError::Io(other.to_string()),
        })?;
        if !args.quiet {
            let line = dds_summary(&written, &options, &loaded, start.elapsed().as_secs_f64());
            crate::info::print_stdout(&format!("{line}\n"))?;
        }
        return Ok(());
    }
    let options = args.write_options(image.channels);
    let show_progress =
        !args.quiet && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    let total = options.chunk_count(image.width, image.height);
    let bar = Progress::shown_if(show_progress, total, "tiles");
    bar.set_message("writing".to_string());
    let shown = AtomicU64::new(0);
    let on_progress = |done: u64, _total: u64| {
        let before = shown.fetch_max(done, Ordering::Relaxed);
        if done > before {
            bar.inc(done - before);
        }
    };
    let written = write(&args.output, image, &options, Some(&on_progress));
    bar.finish();
    let written = written?;
    if !args.quiet {
        let line = summary(&written, &options, &loaded, start.elapsed().as_secs_f64());
        crate::info::print_stdout(&format!("{line}\n"))?;
    }
    Ok(())
}

/// Writes `image` with core's [`demandtex::sources::exr::write_mip_exr`]; a bad image,
/// tile size or output name is a usage error (exit code 2), a failed write an I/O error.
pub fn write(
    path: &Path,
    image: &FloatImage,
    options: &WriteOptions,
    progress: Option<&dyn Fn(u64, u64)>,
) -> Result<WrittenFile, CliError> {
    demandtex::sources::exr::write_mip_exr(path, image, options, progress).map_err(|e| match e {
        demandtex::Error::InvalidArgument(m) => CliError::Usage(m),
        other => CliError::Io(other.to_string()),
    })
}

/// Refuses to overwrite the input or write over a directory.
fn check_paths(input: &Path, output: &Path) -> Result<(), CliError> {
    if !input.exists() {
        return Err(CliError::Io(format!(
            "cannot read {}: no such file",
            input.display()
        )));
    }
    if output.is_dir() {
        return Err(CliError::Usage(format!(
            "output {} is a directory",
            output.display()
        )));
    }
    let same = match (input.canonicalize(), output.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(CliError::Usage(format!(
            "output {} is the input; choose another file",
            output.display()
        )));
    }
    Ok(())
}

/// The one-line summary of a conversion.
fn summary(
    written: &WrittenFile,
    options: &WriteOptions,
    loaded: &load::Loaded,
    secs: f64,
) -> String {
    format!(
        "wrote {}: {}x{} {} {} from {}{}{}, {} level{}{}, tile {}x{}, {}{}, {} on disk ({} decoded), {}",
        written.path.display(),
        written.width,
        written.height,
        loaded.source_channels.join(","),
        options.sample_type.name(),
        loaded.format,
        if loaded.linearized { ", linearized" } else { "" },
        if loaded.premultiplied { ", premultiplied" } else { "" },
        written.levels,
        if written.levels == 1 { "" } else { "s" },
        if written.levels > 1 {
            format!(" ({})", options.filter.name())
        } else {
            String::new()
        },
        options.tile.0,
        options.tile.1,
        options.compression.name(),
        if options.compression.is_lossless() { "" } else { " (lossy)" },
        format_bytes(written.bytes_on_disk),
        format_bytes(written.decoded_bytes),
        format_seconds(secs),
    )
}

/// The one-line summary of a conversion to DDS, with its quality.
fn dds_summary(
    written: &WrittenDds,
    options: &DdsWriteOptions,
    loaded: &load::Loaded,
    secs: f64,
) -> String {
    let texels: u64 = u64::from(written.width) * u64::from(written.height);
    let psnr = if written.psnr_db.is_finite() {
        format!("{:.2} dB", written.psnr_db)
    } else {
        "exact".to_string()
    };
    format!(
        "wrote {}: {}x{} DDS {} from {} {}{}, {} level{}{}, {} on disk ({:.2} bits a level-0 texel with mips), PSNR {psnr} (max error {:.4}), {}",
        written.path.display(),
        written.width,
        written.height,
        options.compression.name().to_uppercase(),
        loaded.format,
        loaded.source_channels.join(","),
        if loaded.linearized { ", linearized" } else { "" },
        written.levels,
        if written.levels == 1 { "" } else { "s" },
        if written.levels > 1 {
            format!(" ({})", options.filter.name())
        } else {
            String::new()
        },
        format_bytes(written.bytes_on_disk),
        written.bytes_on_disk as f64 * 8.0 / texels as f64,
        written.max_error,
        format_seconds(secs),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_those_of_the_issue() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: ConvertArgs,
        }
        let cli = Cli::try_parse_from(["convert", "in.png", "-o", "out.exr"]).unwrap();
        assert_eq!(cli.args.tile, TileShape::Page);
        assert_eq!(
            cli.args.write_options(4),
            WriteOptions {
                tile: (128, 64),
                ..WriteOptions::default()
            }
        );
        assert_eq!(WriteOptions::default().tile, (64, 64));
        assert!(!cli.args.linearize && !cli.args.premultiply && !cli.args.quiet);
        let cli = Cli::try_parse_from([
            "convert",
            "in.exr",
            "-o",
            "o.exr",
            "--tile",
            "32x8",
            "--compression",
            "b44a",
            "--type",
            "float",
            "--filter",
            "lanczos3",
            "--no-mips",
        ])
        .unwrap();
        let o = cli.args.write_options(4);
        assert_eq!(
            (o.tile, o.compression, o.sample_type),
            ((32, 8), Compression::B44a, SampleType::Float)
        );
        assert_eq!((o.filter, o.mips), (DownsampleFilter::Lanczos3, false));
        assert!(
            Cli::try_parse_from(["convert", "in.png"]).is_err(),
            "-o is required"
        );
        assert!(Cli::try_parse_from(["convert", "a", "-o", "b", "--compression", "lzw"]).is_err());
        // Every name core gives parses to its value.
        for c in Compression::ALL {
            let cli = Cli::try_parse_from(["convert", "a", "-o", "b", "--compression", c.name()]);
            assert_eq!(cli.unwrap().args.compression, c);
        }
        for f in DownsampleFilter::ALL {
            let cli = Cli::try_parse_from(["convert", "a", "-o", "b", "--filter", f.name()]);
            assert_eq!(cli.unwrap().args.filter, f);
        }
    }

    #[test]
    fn page_tiles_are_one_page_of_the_served_format() {
        assert_eq!(page_tile(4, SampleType::Half), (128, 64));
        assert_eq!(
            page_tile(3, SampleType::Half),
            (128, 64),
            "RGB is served as RGBA"
        );
        assert_eq!(page_tile(4, SampleType::Float), (64, 64));
        assert_eq!(page_tile(1, SampleType::Half), (256, 128));
        assert_eq!(page_tile(2, SampleType::Float), (128, 64));
        for (c, t) in [
            (1, SampleType::Half),
            (3, SampleType::Float),
            (2, SampleType::Half),
        ] {
            let (w, h) = page_tile(c, t);
            let served = if c == 3 { 4 } else { c };
            let bytes = match t {
                SampleType::Half => 2,
                SampleType::Float => 4,
            };
            assert_eq!((w * h * served * bytes) as usize, demandtex::TILE_BYTES);
        }
    }

    #[test]
    fn tile_sizes_parse_square_and_rectangular() {
        assert_eq!(parse_tile("64"), Ok(TileShape::Fixed(64, 64)));
        assert_eq!(parse_tile("128x32"), Ok(TileShape::Fixed(128, 32)));
        assert_eq!(parse_tile("16X8"), Ok(TileShape::Fixed(16, 8)));
        assert_eq!(parse_tile("page"), Ok(TileShape::Page));
        assert!(parse_tile("0").is_err());
        assert!(parse_tile("64x").is_err());
        assert!(parse_tile("big").is_err());
        assert!(parse_tile("100000").is_err());
    }

    #[test]
    fn the_input_is_never_the_output() {
        let dir = std::env::temp_dir().join(format!("demandtex-conv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.exr");
        std::fs::write(&input, b"x").unwrap();
        let same = dir.join(".").join("in.exr");
        assert!(matches!(
            check_paths(&input, &same),
            Err(CliError::Usage(_))
        ));
        assert!(matches!(check_paths(&input, &dir), Err(CliError::Usage(_))));
        assert!(check_paths(&input, &dir.join("out.exr")).is_ok());
        assert!(check_paths(&dir.join("missing.png"), &dir.join("out.exr")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
