//! Reads of good files, compared texel for texel with the exr crate's full reader.

use super::fixtures::*;
use crate::sources::exr::{ChannelSelection, ExrOptions, ExrSource, FileHandles};
use crate::sources::ImageSource;
use crate::textures::{full_mip_levels, TexelFormat, TexelType, TextureLayout};
use exr::math::RoundingMode;
use std::sync::Arc;

const RGBA: [&str; 4] = ["R", "G", "B", "A"];

fn source(f: &TempFile, channels: ChannelSelection) -> ExrSource {
    ExrSource::with_options(
        f.path(),
        ExrOptions {
            channels,
            mip_threads: 2,
            ..ExrOptions::default()
        },
    )
}

/// Write `spec`, open it with `selection` and check every read against the reference.
/// Returns the source (for its statistics).
fn round_trip(
    tag: &str,
    spec: &Spec,
    selection: ChannelSelection,
    names: &[&str],
    format: TexelFormat,
    stored: usize,
) -> ExrSource {
    let f = write(tag, spec);
    let src = source(&f, selection);
    let info = src.open().unwrap();
    assert_eq!(info.format, format, "{spec:?}");
    assert_eq!(
        (info.width as usize, info.height as usize),
        (spec.width, spec.height)
    );
    let total = full_mip_levels(info.width, info.height) as usize;
    let reference = Reference::read(f.path());
    let levels = expected_levels(
        &reference,
        0,
        names,
        format,
        (spec.width, spec.height),
        stored.min(total),
        total,
    );
    check_reads(&src, &levels);
    assert_eq!(
        src.opened.read().as_ref().unwrap().stored_levels as usize,
        stored.min(total)
    );
    src
}

fn half(channels: u32) -> TexelFormat {
    TexelFormat::new(TexelType::F16, channels).unwrap()
}

fn float(channels: u32) -> TexelFormat {
    TexelFormat::new(TexelType::F32, channels).unwrap()
}

#[test]
fn every_compression_of_tiled_mips_reads_as_the_full_reader_does() {
    for c in COMPRESSIONS {
        // Half RGBA: 260×130 in 32² tiles (edge tiles partial, cache tiles span 4×2).
        let spec = Spec::rgba_half(260, 130, 32).with(|s| s.compression = c);
        let src = round_trip(
            "comp-half",
            &spec,
            ChannelSelection::Auto,
            &RGBA,
            half(4),
            99,
        );
        assert_eq!(
            src.opened
                .read()
                .as_ref()
                .unwrap()
                .file
                .header()
                .compression,
            c
        );
        // Float RGB (lossy PXR24 on float; B44 stores float raw), served as RGBA.
        let spec = Spec::rgba_half(90, 70, 16).with(|s| {
            s.compression = c;
            s.channels = vec![("R", Kind::Float), ("G", Kind::Float), ("B", Kind::Float)];
        });
        round_trip(
            "comp-float",
            &spec,
            ChannelSelection::Auto,
            &["R", "G", "B"],
            float(4),
            99,
        );
    }
}

#[test]
fn cache_tiles_spanning_many_file_tiles_or_part_of_one_are_assembled() {
    for tile in [16, 64, 256] {
        let spec = Spec::rgba_half(1000, 600, tile);
        let src = round_trip("tiles", &spec, ChannelSelection::Rgba, &RGBA, half(4), 99);
        let cached = src.opened.read().as_ref().unwrap().cache.is_some();
        assert_eq!(
            cached,
            tile == 256,
            "the block cache is for misaligned blocks only"
        );
    }
}

#[test]
fn large_file_tiles_are_decoded_once_for_their_cache_tiles() {
    let f = write("bigtiles", &Spec::rgba_half(1024, 512, 256));
    let src = source(&f, ChannelSelection::Auto);
    let info = src.open().unwrap();
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format).unwrap();
    let l0 = layout.levels[0];
    let mut dest = vec![0u8; crate::TILE_BYTES];
    let row_bytes = layout.tile_width as usize * 8;
    for ty in 0..l0.tiles_y {
        for tx in 0..l0.tiles_x {
            src.read_tile(layout.tile_region(0, tx, ty), &mut dest, row_bytes)
                .unwrap();
        }
    }
    let s = src.stats();
    // 4×2 file tiles serve 8×8 cache tiles of 128×64.
    assert_eq!(s.blocks_decoded, 8, "{s:?}");
    assert_eq!(s.block_cache_hits, 64 - 8, "{s:?}");
}

#[test]
fn odd_sizes_read_right() {
    for (w, h, tile) in [(37, 300, 16), (1, 1, 64), (300, 1, 32), (129, 65, 64)] {
        let spec = Spec::rgba_half(w, h, tile);
        round_trip("odd", &spec, ChannelSelection::Auto, &RGBA, half(4), 99);
    }
}

#[test]
fn mips_rounded_up_are_stored_where_sizes_match_and_generated_after() {
    let spec = Spec::rgba_half(1000, 600, 64).with(|s| s.levels = LevelSpec::Mip(RoundingMode::Up));
    // 1000×600 rounds up to 63×38 at level 4 (ours: 62×37): levels 0..=3 match.
    round_trip("up", &spec, ChannelSelection::Auto, &RGBA, half(4), 4);
    let spec = Spec::rgba_half(256, 128, 64).with(|s| s.levels = LevelSpec::Mip(RoundingMode::Up));
    round_trip("up-pow2", &spec, ChannelSelection::Auto, &RGBA, half(4), 99);
}

#[test]
fn files_without_mips_get_generated_levels() {
    let spec = Spec::rgba_half(300, 200, 64).with(|s| s.levels = LevelSpec::Single);
    round_trip("single", &spec, ChannelSelection::Auto, &RGBA, half(4), 1);
    for c in [
        Compression::Uncompressed,
        Compression::ZIP16,
        Compression::PIZ,
        Compression::DWAB(None),
    ] {
        let spec = Spec::rgba_half(500, 300, 0).with(|s| {
            s.tiles = None;
            s.levels = LevelSpec::Single;
            s.compression = c;
        });
        round_trip("scan", &spec, ChannelSelection::Auto, &RGBA, half(4), 1);
    }
}

#[test]
fn half_float_and_uint_channels_convert() {
    // Mixed types serve F32; uint converts with `as f32`.
    let spec = Spec::rgba_half(200, 100, 64).with(|s| {
        s.channels = vec![
            ("R", Kind::Half),
            ("G", Kind::Float),
            ("B", Kind::Uint),
            ("A", Kind::Half),
        ]
    });
    round_trip("mixed", &spec, ChannelSelection::Auto, &RGBA, float(4), 99);
    let spec = Spec::rgba_half(150, 90, 32).with(|s| {
        s.channels = vec![("Y", Kind::Uint)];
        s.levels = LevelSpec::Single;
        s.tiles = None;
    });
    round_trip("uint", &spec, ChannelSelection::Y, &["Y"], float(1), 1);
    let spec = Spec::rgba_half(150, 90, 32).with(|s| s.channels = vec![("Y", Kind::Float)]);
    round_trip(
        "float-y",
        &spec,
        ChannelSelection::Auto,
        &["Y"],
        float(1),
        99,
    );
}

#[test]
fn rip_maps_serve_their_diagonal_as_the_mip_chain() {
    // Levels (l, l), then (l, last) past the shorter side's last level; every other rip
    // level is skipped, never read.
    for (w, h) in [(64, 32), (100, 260), (48, 48)] {
        let spec = Spec::rgba_half(w, h, 16).with(|s| s.levels = LevelSpec::Rip);
        round_trip("rip", &spec, ChannelSelection::Auto, &RGBA, half(4), 99);
    }
}

#[test]
fn channels_are_selected_by_name_and_layer() {
    let spec = Spec::rgba_half(130, 70, 32).with(|s| {
        s.channels = vec![
            ("diffuse.R", Kind::Half),
            ("diffuse.G", Kind::Half),
            ("diffuse.B", Kind::Half),
            ("Z", Kind::Float),
            ("Y", Kind::Half),
            ("A", Kind::Half),
        ]
    });
    let layer = ["diffuse.R", "diffuse.G", "diffuse.B"];
    round_trip(
        "layer",
        &spec,
        ChannelSelection::Layer("diffuse".into()),
        &layer,
        half(4),
        99,
    );
    // Luminance beside alpha and depth: Y and A (Z named as not served); Y alone when
    // chosen.
    round_trip(
        "ya",
        &spec,
        ChannelSelection::Auto,
        &["Y", "A"],
        half(2),
        99,
    );
    round_trip("y", &spec, ChannelSelection::Y, &["Y"], half(1), 99);
    round_trip(
        "z",
        &spec,
        ChannelSelection::Layer("Z".into()),
        &["Z"],
        float(1),
        99,
    );
    let names = ChannelSelection::Names(vec!["Z".into(), "A".into()]);
    round_trip("names", &spec, names, &["Z", "A"], float(2), 99);
    // A file whose only layer is "diffuse": Auto finds its RGB.
    let spec = spec.with(|s| s.channels.truncate(3));
    round_trip(
        "auto-layer",
        &spec,
        ChannelSelection::Auto,
        &layer,
        half(4),
        99,
    );
    // No standard names at all: the first channels.
    let spec = spec.with(|s| s.channels = vec![("u", Kind::Half), ("v", Kind::Half)]);
    round_trip(
        "uv",
        &spec,
        ChannelSelection::Auto,
        &["u", "v"],
        half(2),
        99,
    );
}

#[test]
fn a_chosen_part_of_a_multi_part_file_is_served() {
    let a = Spec::rgba_half(120, 80, 32);
    let b = Spec::rgba_half(120, 80, 16).with(|s| s.channels = vec![("Y", Kind::Float)]);
    let f = write_parts("parts", &a, &b);
    let reference = Reference::read(f.path());
    for (part, names, format) in [(0, &RGBA[..], half(4)), (1, &["Y"][..], float(1))] {
        let src = ExrSource::with_options(
            f.path(),
            ExrOptions {
                part,
                ..ExrOptions::default()
            },
        );
        let total = full_mip_levels(120, 80) as usize;
        let levels = expected_levels(&reference, part, names, format, (120, 80), total, total);
        check_reads(&src, &levels);
    }
}

#[test]
fn many_threads_read_one_source_at_once() {
    let f = write("threads", &Spec::rgba_half(700, 500, 64));
    let src = Arc::new(source(&f, ChannelSelection::Auto));
    let reference = Reference::read(f.path());
    let total = full_mip_levels(700, 500) as usize;
    let levels = Arc::new(expected_levels(
        &reference,
        0,
        &RGBA,
        half(4),
        (700, 500),
        total,
        total,
    ));
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (src, levels) = (src.clone(), levels.clone());
            s.spawn(move || check_reads(&*src, &levels));
        }
    });
}

#[test]
fn open_files_stay_within_the_bound_and_reads_survive_closing() {
    let handles = Arc::new(FileHandles::new(2));
    let files: Vec<TempFile> = (0..4)
        .map(|i| write(&format!("lru{i}"), &Spec::rgba_half(100 + i * 10, 90, 32)))
        .collect();
    let sources: Vec<ExrSource> = files
        .iter()
        .map(|f| {
            ExrSource::with_options(
                f.path(),
                ExrOptions {
                    handles: handles.clone(),
                    ..ExrOptions::default()
                },
            )
        })
        .collect();
    for round in 0..3 {
        for (i, (src, f)) in sources.iter().zip(&files).enumerate() {
            let w = 100 + i * 10;
            let total = full_mip_levels(w as u32, 90) as usize;
            let reference = Reference::read(f.path());
            let levels = expected_levels(&reference, 0, &RGBA, half(4), (w, 90), total, total);
            check_reads(src, &levels);
            let s = handles.stats();
            assert!(s.open_now <= 2, "round {round}: {s:?}");
        }
    }
    let s = handles.stats();
    assert!(s.opens >= 12 && s.closes >= 10, "{s:?}");
    handles.close_all();
    assert_eq!(handles.stats().open_now, 0);
    // Reopened on demand.
    let mut dest = vec![0u8; 8 * 32 * 32];
    let region = crate::textures::TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: 32,
        height: 32,
    };
    sources[0].read_region(region, &mut dest, 8 * 32).unwrap();
    assert_eq!(handles.stats().open_now, 1);
}
