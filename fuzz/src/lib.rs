//! What each fuzz target does with one input. The binaries in `src/bin/` hand afl.rs's
//! inputs to these functions; afl's dry run replays every checked-in seed and regression
//! input (`scripts/fuzz.sh`), and `core/tests/fuzz_regressions.rs` reads the regression
//! inputs through the same checks without afl, so a fixed crash stays fixed in a plain
//! `cargo test`.
//!
//! Every target drives the engine's own code for the format (the readers the fills use,
//! the whole-file walk of `demandtex info --check`, the filters, the C ABI), never a copy.
//! A panic anywhere is a finding: [`abort_on_panic`] turns every panic into an abort, even
//! one the library would catch and report (the walks of `sources::check` and the C ABI's
//! boundary contain panics; the fuzzer must see past that) — with one known exception,
//! upstream (see [`known_upstream_panic`]).

pub mod capi_ops;

/// Panics that are not demandtex's and are harmless in the builds users run: the `exr`
/// crate's B44 unpack (`compression/b44/mod.rs`) computes with 16/32-bit wraparound, as
/// OpenEXR's C++ does with unsigned arithmetic, and cargo-afl builds every crate with
/// overflow checks, so each corrupt B44 block panics there. Release builds (and this
/// workspace's debug profile, `[profile.dev.package.exr]`) wrap: a corrupt block decodes to
/// garbage texels, never a crash. Found by this fuzzer; kept in `fuzz/regressions/exr`.
pub fn known_upstream_panic(info: &std::panic::PanicHookInfo) -> bool {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
        .unwrap_or("");
    info.location()
        .is_some_and(|l| l.file().contains("/exr-") && l.file().ends_with("compression/b44/mod.rs"))
        && message.contains("with overflow")
}

/// Abort on every panic (afl.rs reports the abort as a crash) but the
/// [known upstream ones](known_upstream_panic), which the library's own containment
/// reports as a read error.
pub fn abort_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if known_upstream_panic(info) {
            return;
        }
        previous(info);
        std::process::abort();
    }));
}

use demandtex::sampling::ptex::{ptex_sample, PtexFilterOptions, PtexFilterType, ResidentPtex};
use demandtex::sources::check::{check_ptex, check_source};
use demandtex::sources::ptex::{PtexFile, PtexOptions};
use demandtex::sources::tiff::{TiffOptions, TiffSource};
use demandtex::sources::{
    DdsOptions, DdsSource, DecodedImageSource, ExrOptions, ExrSource, FileHandles, ImageSource,
    SizeLimits,
};
use demandtex::textures::TextureLayout;
use std::path::PathBuf;
use std::sync::Arc;

/// The limits the targets read under: smaller than a renderer's defaults, so that an
/// input cannot make a run allocate past afl's memory limit, nor spend seconds decoding
/// and generating mips for a legitimately large image (a 500-byte DWAB chunk declares
/// 62 MiB): the fuzzer's time goes to parsing and to the limit checks themselves (a file
/// declaring more is the clear error the limits promise), not to big, valid decodes.
pub fn fuzz_limits() -> SizeLimits {
    SizeLimits {
        max_image_bytes: 32 << 20,
        max_decoded_block_bytes: 16 << 20,
    }
}

/// A Ptex file from memory: parse it, walk every stored level of every face (the check),
/// then filter a few points of the first faces with every kernel.
pub fn ptex(data: &[u8]) {
    let options = PtexOptions {
        limits: fuzz_limits(),
        ..Default::default()
    };
    let Ok(file) = PtexFile::from_bytes("fuzz.ptx", data.to_vec(), options) else {
        return;
    };
    let _ = check_ptex(&file, true);
    let faces = file.num_faces().min(4) as u32;
    let Ok(texture) = ResidentPtex::new(Arc::new(file)) else {
        return;
    };
    let filters = [
        PtexFilterType::Point,
        PtexFilterType::Bilinear,
        PtexFilterType::Box,
        PtexFilterType::Bicubic,
        PtexFilterType::StochasticPoint,
    ];
    let mut out = [0f32; 4];
    for face in 0..faces {
        for (i, &filter) in filters.iter().enumerate() {
            let options = PtexFilterOptions {
                filter,
                lerp: i % 2 == 0,
                ..Default::default()
            };
            for (u, v, w) in [(0.5, 0.5, 0.0), (0.01, 0.99, 0.3), (0.99, 0.0, 1.5)] {
                ptex_sample(&texture, face, u, v, w, 0.0, 0.0, w, &options, &mut out);
            }
        }
    }
    let _ = texture.errors();
}

/// A scratch file for the sources that read by path (one per process, so parallel fuzzer
/// instances do not share it). Prefers a RAM-backed directory.
fn scratch(ext: &str) -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let dir = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("demandtex-fuzz-{}.{ext}", std::process::id()))
}

/// An OpenEXR file: write it where the source reads it, then walk every tile of every
/// level and the mip tail through `ExrSource` (tiled, scan-line with generated mips, every
/// compression the `exr` crate decodes), as `demandtex info --check` does.
pub fn exr(data: &[u8]) {
    let path = scratch("exr");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let options = ExrOptions {
        // Its own handles: the shared set would keep the previous input's file open.
        handles: Arc::new(FileHandles::new(4)),
        mip_threads: 1,
        limits: fuzz_limits(),
        ..Default::default()
    };
    let source = ExrSource::with_options(&path, options);
    let _ = check_source(&source, true);
    let _ = source.describe();
    let _ = std::fs::remove_file(&path);
}

/// A TIFF file (maketx `.tx`, tiled or strips, mip chains or SubIFDs): write it where the
/// source reads it, read its texture metadata, then walk every tile of every level and
/// the mip tail through `TiffSource`.
pub fn tiff(data: &[u8]) {
    let path = scratch("tx");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let options = TiffOptions {
        handles: Arc::new(FileHandles::new(4)),
        mip_threads: 1,
        limits: fuzz_limits(),
        warn_generated_levels: false,
    };
    let source = TiffSource::with_options(&path, options);
    let _ = source.metadata();
    let _ = check_source(&source, true);
    let _ = std::fs::remove_file(&path);
}

/// A DDS file (legacy or DX10 header, BC1–BC7 blocks or plain texels): write it where
/// the source reads it, then walk every block of every level (generated levels included)
/// and the mip tail through `DdsSource`.
pub fn dds(data: &[u8]) {
    let path = scratch("dds");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let options = DdsOptions {
        handles: Arc::new(FileHandles::new(4)),
        mip_threads: 1,
        limits: fuzz_limits(),
    };
    let source = DdsSource::with_options(&path, options);
    let _ = source.layout();
    let _ = check_source(&source, true);
    dds_blocks(&source);
    let _ = std::fs::remove_file(&path);
}

/// The blocks of a DDS storing every level in blocks, as a loader keeping blocks reads
/// them: every tile of a layout of blocks, and each level of its mip tail.
fn dds_blocks(source: &DdsSource) {
    let (Ok(info), Some(codec)) = (source.open(), source.block_codec()) else {
        return;
    };
    let Ok(layout) = TextureLayout::with_blocks(info.width, info.height, info.num_levels, codec)
    else {
        return;
    };
    let mut tile = vec![0u8; layout.tile_bytes()];
    for (level, l) in layout.levels.iter().enumerate() {
        let level = level as u32;
        if layout.in_mip_tail(level) {
            let region = layout.level_region(level);
            let mut dest = vec![0u8; layout.region_bytes(l.width, l.height) as usize];
            let _ = source.read_blocks(region, &mut dest, layout.row_bytes(l.width));
            continue;
        }
        for ty in 0..l.tiles_y {
            for tx in 0..l.tiles_x {
                let region = layout.tile_region(level, tx, ty);
                let _ = source.read_blocks(region, &mut tile, layout.row_bytes(layout.tile_width));
            }
        }
    }
}

/// A PNG, JPEG, Radiance HDR, BMP or Targa file: level 0 decoded once, mips generated,
/// every tile walked through `DecodedImageSource` (the header's size checked against the
/// limits first). Bytes with no magic number a decoder knows are a Targa file (which has
/// none: it is known by its extension).
pub fn image(data: &[u8]) {
    let known = demandtex::sources::FileFormat::from_magic(data).is_some();
    let path = scratch(if known { "img" } else { "tga" });
    if std::fs::write(&path, data).is_err() {
        return;
    }
    // Decoding fills the whole declared image even when the data ends early, so a
    // mutated header declaring the 32 MiB the other targets allow costs a tenth of a
    // second per execution (8 MiB still cost 10 ms); 1 MiB keeps every code path (the
    // seeds are a few bytes) at full speed.
    let limits = SizeLimits {
        max_image_bytes: 1 << 20,
        ..fuzz_limits()
    };
    let source = DecodedImageSource::with_limits(&path, limits);
    if check_source(&source, true).is_ok() {
        // The loader releases the decode after its fills: the next read decodes again.
        source.release_decoded();
        let info = source.whole_decode();
        let mut texel = [0u8; 16];
        let region = demandtex::textures::TileRegion {
            level: 0,
            x: 0,
            y: 0,
            width: 1,
            height: 1,
        };
        if info.is_some() && source.read_region(region, &mut texel, 16).is_ok() {
            // A texture decoded again is spilled to a file: every tile is then read from
            // there, the same as from the decode.
            let ledger = demandtex::sources::SpillLedger::new();
            let spilled = source.spill_decoded(&std::env::temp_dir(), &ledger);
            if spilled.is_ok_and(|n| n > 0) {
                let mut again = [0u8; 16];
                assert!(source.read_region(region, &mut again, 16).is_ok());
                assert_eq!(texel, again, "a spilled texel differs from the decode's");
                assert!(
                    ledger.held_bytes() > 0,
                    "a spill file's bytes are not counted"
                );
                let _ = check_source(&source, true);
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}
