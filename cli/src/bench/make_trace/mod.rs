//! `demandtex bench make-trace --out DIR`: procedural tiled mip OpenEXR textures and a
//! `.dtxq` query trace over them (see `shared/bench/QUERIES.md`).
//!
//! - `coherent`: a pinhole camera flying down a textured corridor (floor, ceiling, two
//!   walls) past tilted panels, several frames of W × H pixels in pixel order; each
//!   pixel's derivatives are the exact ray differentials of its hit on its plane, so the
//!   level of detail varies across the frame and footprints are anisotropic.
//! - `incoherent`: random bounces: a random texture, random (s, t), a footprint whose size
//!   is spread evenly over the texture's levels, in a random direction with an anisotropy
//!   of 1 to 4.
//!
//! Both are deterministic for a seed. Textures are RGBA half, ZIP, box mips, alternately S
//! and S/2 texels square, in tiles of one demandtex page (128 × 64) unless `--tile` says
//! otherwise (`--tile 64` writes OIIO maketx's layout); an existing texture file of the
//! right size, seed and tile is reused (`--force` rewrites it). Paths in the trace are
//! relative to DIR.
//!
//! With `--ptex DIR` it writes a `.dtxp` Ptex trace over the `.ptx` files of DIR instead
//! ([`ptex`]).

mod coherent;
mod incoherent;
mod ptex;

use super::trace::Trace;
use crate::convert::{FloatImage, WriteOptions};
use crate::error::CliError;
use crate::table::format_bytes;
use demandtex::sources::{Checkerboard, ImageSource, Noise};
use demandtex::textures::{TexelFormat, TileRegion};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Rows of texels generated per parallel task.
const BAND_ROWS: u32 = 64;

/// Which kind of trace to write.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A camera sweeping over textured planes: pixel-ordered, coherent.
    Coherent,
    /// Random bounces: random texture, place and footprint.
    Incoherent,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Coherent => "coherent",
            Kind::Incoherent => "incoherent",
        }
    }
}

/// Arguments of `demandtex bench make-trace`.
#[derive(clap::Args, Clone, Debug)]
pub struct MakeTraceArgs {
    /// Directory for the textures and the trace (created if missing). With `--ptex`: where
    /// the trace goes (default: the Ptex directory; its paths are relative to that).
    #[arg(long, required_unless_present = "ptex")]
    pub out: Option<PathBuf>,
    /// Write a `.dtxp` Ptex trace (`coherent.dtxp` or `incoherent.dtxp`) over the `.ptx`
    /// files of this directory (`demandtex ptex gen` writes synthetic sets) instead of
    /// textures and a `.dtxq`.
    #[arg(long, value_name = "DIR")]
    pub ptex: Option<PathBuf>,
    /// Coherent (camera) or incoherent (random bounces).
    #[arg(long, value_enum, default_value = "coherent")]
    pub kind: Kind,
    /// Textures to write (up to 100,000: texture-count scaling).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub textures: u32,
    /// Side of the larger textures in texels (the others are half as large).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(2..=65536))]
    pub size: u32,
    /// Queries in the trace.
    #[arg(long, default_value_t = 8_000_000, value_parser = clap::value_parser!(u64).range(1..=(1 << 32)))]
    pub queries: u64,
    /// Seed of the textures and the trace.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Coherent: frame width in pixels.
    #[arg(long, default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub width: u32,
    /// Coherent: frame height in pixels.
    #[arg(long, default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub height: u32,
    /// Tile size of the textures: `page` (one demandtex page, 128x64 for half RGBA), N or
    /// WxH (64: the layout of OIIO's maketx).
    #[arg(long, value_name = "page|N|WxH", default_value = "page", value_parser = crate::convert::parse_tile)]
    pub tile: crate::convert::TileShape,
    /// Rewrite textures that already exist.
    #[arg(long)]
    pub force: bool,
}

/// One texture of the set: its file name (relative to the output directory) and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TextureFile {
    /// File name.
    pub name: String,
    /// Side in texels (square).
    pub size: u32,
}

/// The texture set for `args`: alternately S and S/2 texels square.
pub(crate) fn texture_set(count: u32, size: u32, seed: u64) -> Vec<TextureFile> {
    (0..count)
        .map(|i| {
            let side = if i % 2 == 0 { size } else { (size / 2).max(1) };
            TextureFile {
                name: format!("tex{i:02}_{side}_s{seed}.exr"),
                size: side,
            }
        })
        .collect()
}

/// The level-0 texels of texture `index`: noise with its own seed, every fourth a fine
/// checkerboard (sharp detail), RGBA.
fn texture_image(index: u32, size: u32, seed: u64) -> Result<FloatImage, CliError> {
    let source: Box<dyn ImageSource> = if index % 4 == 3 {
        Box::new(Checkerboard::new(size, size, 8, TexelFormat::RGBA32F))
    } else {
        let s = (seed as u32).wrapping_mul(7919).wrapping_add(index);
        Box::new(Noise::new(size, size, s, TexelFormat::RGBA32F))
    };
    source
        .open()
        .map_err(|e| CliError::Demandtex(format!("{}: {e}", source.name())))?;
    let row_floats = size as usize * 4;
    let mut data = vec![0.0f32; row_floats * size as usize];
    data.par_chunks_mut(row_floats * BAND_ROWS as usize)
        .enumerate()
        .try_for_each(|(band, out)| {
            let y = band as u32 * BAND_ROWS;
            let rows = (out.len() / row_floats) as u32;
            let mut bytes = vec![0u8; out.len() * 4];
            let region = TileRegion {
                level: 0,
                x: 0,
                y,
                width: size,
                height: rows,
            };
            source
                .read_region(region, &mut bytes, row_floats * 4)
                .map_err(|e| CliError::Demandtex(format!("{}: {e}", source.name())))?;
            for (v, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            Ok::<(), CliError>(())
        })?;
    Ok(FloatImage {
        width: size,
        height: size,
        channels: 4,
        data,
    })
}

/// Whether `path` is an OpenEXR file of `size × size` texels in `tile` tiles (a texture to
/// reuse), as core's EXR description reads it.
fn existing_texture_fits(path: &Path, size: u32, tile: (u32, u32)) -> bool {
    let auto = demandtex::sources::ChannelSelection::Auto;
    match demandtex::sources::exr::describe(path, 0, &auto) {
        Ok(d) => d.parts.first().is_some_and(|p| {
            (p.width, p.height) == (size as u64, size as u64)
                && p.tile == Some([tile.0 as u64, tile.1 as u64])
        }),
        Err(_) => false,
    }
}

/// Write (or reuse) the textures; returns their decoded bytes (all levels) and bytes on
/// disk.
fn write_textures(
    dir: &Path,
    set: &[TextureFile],
    seed: u64,
    tile: crate::convert::TileShape,
    force: bool,
) -> Result<(u64, u64), CliError> {
    let (mut decoded, mut on_disk) = (0u64, 0u64);
    let options = WriteOptions {
        tile: tile.resolve(4, crate::convert::SampleType::Half),
        ..WriteOptions::default()
    };
    for (i, t) in set.iter().enumerate() {
        let path = dir.join(&t.name);
        if !force && existing_texture_fits(&path, t.size, options.tile) {
            eprintln!("make-trace: reusing {}", path.display());
            on_disk += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            decoded += decoded_bytes(t.size);
            continue;
        }
        let start = Instant::now();
        let image = texture_image(i as u32, t.size, seed)?;
        let written = crate::convert::write(&path, &image, &options, None)?;
        eprintln!(
            "make-trace: wrote {} ({}×{}, {} levels, {} on disk) in {:.1} s",
            path.display(),
            t.size,
            t.size,
            written.levels,
            format_bytes(written.bytes_on_disk),
            start.elapsed().as_secs_f64()
        );
        decoded += written.decoded_bytes;
        on_disk += written.bytes_on_disk;
    }
    Ok((decoded, on_disk))
}

/// Decoded bytes of an RGBA half `size²` texture with its full mip chain.
fn decoded_bytes(size: u32) -> u64 {
    let mut total = 0u64;
    let mut s = size as u64;
    loop {
        total += s * s * 8;
        if s == 1 {
            return total;
        }
        s = (s / 2).max(1);
    }
}

/// Write the textures and the trace, and print what was written.
pub fn run(args: &MakeTraceArgs) -> Result<(), CliError> {
    if let Some(dir) = &args.ptex {
        return ptex::run(args, dir);
    }
    let Some(out) = &args.out else {
        return Err(CliError::Usage("--out DIR is required".into()));
    };
    std::fs::create_dir_all(out).map_err(|e| CliError::Io(format!("{}: {e}", out.display())))?;
    let set = texture_set(args.textures, args.size, args.seed);
    let start = Instant::now();
    let (decoded, on_disk) = write_textures(out, &set, args.seed, args.tile, args.force)?;
    let texture_seconds = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let sizes: Vec<u32> = set.iter().map(|t| t.size).collect();
    let queries = match args.kind {
        Kind::Coherent => {
            coherent::queries(&sizes, args.queries, args.width, args.height, args.seed)
        }
        Kind::Incoherent => incoherent::queries(&sizes, args.queries, args.seed),
    };
    let trace = Trace {
        textures: set.iter().map(|t| t.name.clone()).collect(),
        queries,
    };
    let trace_path: PathBuf = out.join(format!("{}.dtxq", args.kind.name()));
    trace.write(&trace_path)?;
    println!(
        "{}",
        serde_json::json!({
            "trace": trace_path.display().to_string(),
            "kind": args.kind.name(),
            "queries": trace.queries.len(),
            "textures": set.len(),
            "texture_decoded_bytes": decoded,
            "texture_bytes_on_disk": on_disk,
            "texture_seconds": texture_seconds,
            "trace_seconds": start.elapsed().as_secs_f64(),
        })
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texture_sets_alternate_sizes_and_name_the_seed() {
        let set = texture_set(3, 1024, 7);
        assert_eq!(
            set.iter().map(|t| t.size).collect::<Vec<_>>(),
            vec![1024, 512, 1024]
        );
        assert_eq!(set[1].name, "tex01_512_s7.exr");
        assert_eq!(decoded_bytes(2), (4 + 1) * 8);
    }

    #[test]
    fn texture_images_are_deterministic_and_in_range() {
        let a = texture_image(0, 64, 3).unwrap();
        assert_eq!(a, texture_image(0, 64, 3).unwrap());
        assert_ne!(a, texture_image(0, 64, 4).unwrap());
        assert!(a.data.iter().all(|v| (0.0..=1.0).contains(v)));
        let c = texture_image(3, 64, 3).unwrap();
        assert_eq!(c.data.len(), 64 * 64 * 4);
    }
}
