//! `describe` and the source agree: the same file, the same options, the same answer
//! (the description's `served` is `open`'s result, error text included).

use super::fixtures::*;
use crate::sources::exr::{
    describe, ChannelSelection, ExrLevelMode, ExrOptions, ExrRounding, ExrSampleType, ExrSource,
    ExrStorage, ServedAs,
};
use crate::sources::ImageSource;
use crate::textures::TexelFormat;
use exr::math::RoundingMode;

fn options(channels: ChannelSelection, part: usize) -> ExrOptions {
    ExrOptions {
        channels,
        part,
        ..ExrOptions::default()
    }
}

/// Describes `f` with `o` and checks that `served` is what the source's `open` says.
fn described_as_opened(f: &TempFile, o: &ExrOptions) -> Result<ServedAs, String> {
    let d = describe(f.path(), o.part, &o.channels).unwrap();
    let opened = ExrSource::with_options(f.path(), o.clone()).open();
    match (&d.served, &opened) {
        (Ok(s), Ok(info)) => {
            assert_eq!(
                (s.width, s.height, s.format, s.levels),
                (info.width, info.height, info.format, info.num_levels)
            );
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "the same reason"),
        (a, b) => panic!("describe says {a:?}, open says {b:?}"),
    }
    d.served.map_err(|e| e.0)
}

#[test]
fn describe_and_open_agree_on_servable_files() {
    let scan = Spec::rgba_half(200, 150, 0).with(|s| {
        s.tiles = None;
        s.levels = LevelSpec::Single;
    });
    let up = Spec::rgba_half(200, 150, 32).with(|s| s.levels = LevelSpec::Mip(RoundingMode::Up));
    let rgb_float = Spec::rgba_half(300, 77, 64).with(|s| {
        s.channels = vec![("B", Kind::Float), ("G", Kind::Half), ("R", Kind::Half)];
    });
    let d = ExrOptions::default();

    let f = write("describe-mip", &Spec::rgba_half(300, 77, 64));
    let s = described_as_opened(&f, &d).unwrap();
    assert_eq!(s.channels, ["R", "G", "B", "A"]);
    assert!(!s.constant_alpha);
    assert_eq!(s.format, TexelFormat::RGBA16F);
    assert_eq!(
        (s.levels, s.levels_from_file, s.generated_because),
        (9, 9, None)
    );
    // 128x64 pages of 64x64 file tiles: two tiles each; on the CPU pages of one.
    assert_eq!((s.page_tile, s.blocks_per_page), ([128, 64], Some(2)));
    assert_eq!(s.cpu_page_tile, [64, 64]);

    let f = write("describe-scan", &scan);
    let s = described_as_opened(&f, &d).unwrap();
    assert_eq!((s.levels, s.levels_from_file), (8, 1));
    assert!(s.generated_because.unwrap().contains("scan-line"));
    assert_eq!(
        s.blocks_per_page, None,
        "200-texel lines do not divide pages"
    );
    assert_eq!(s.cpu_page_tile, s.page_tile, "no file tiles");

    let f = write("describe-up", &up);
    let s = described_as_opened(&f, &d).unwrap();
    assert!(s.levels_from_file < s.levels);
    assert!(s.generated_because.unwrap().contains("rounded up"));
    let desc = describe(f.path(), 0, &ChannelSelection::Auto).unwrap();
    assert_eq!(desc.parts[0].rounding, Some(ExrRounding::Up));

    let f = write("describe-rgb", &rgb_float);
    let s = described_as_opened(&f, &d).unwrap();
    assert_eq!(s.channels, ["R", "G", "B"]);
    assert!(s.constant_alpha);
    assert_eq!(
        s.format,
        TexelFormat::RGBA32F,
        "a float channel makes it float"
    );
    let s = described_as_opened(&f, &options(ChannelSelection::Names(vec!["G".into()]), 0));
    assert_eq!(s.unwrap().channels, ["G"]);

    let two = write_parts(
        "describe-parts",
        &Spec::rgba_half(64, 64, 32),
        &Spec::rgba_half(64, 64, 32).with(|s| s.channels = vec![("Y", Kind::Half)]),
    );
    let s = described_as_opened(&two, &options(ChannelSelection::Auto, 1)).unwrap();
    assert_eq!(
        (s.part, s.channels.as_slice()),
        (1, ["Y".to_string()].as_slice())
    );
    let desc = describe(two.path(), 0, &ChannelSelection::Auto).unwrap();
    assert!(desc.multipart);
    assert_eq!(desc.parts.len(), 2);
    assert_eq!(desc.parts[1].name.as_deref(), Some("second"));
}

#[test]
fn describe_gives_the_reason_open_gives() {
    let d = ExrOptions::default();
    let rip = write(
        "describe-rip",
        &Spec::rgba_half(64, 32, 16).with(|s| s.levels = LevelSpec::Rip),
    );
    // A rip map is served: its diagonal levels, every one from the file.
    let served = described_as_opened(&rip, &d).unwrap();
    assert_eq!((served.levels, served.levels_from_file), (7, 7));
    let desc = describe(rip.path(), 0, &ChannelSelection::Auto).unwrap();
    assert_eq!(desc.parts[0].level_mode, ExrLevelMode::Ripmap);
    assert!(desc.parts[0].levels.len() > 1);

    let f = write(
        "describe-rgb3",
        &Spec::rgba_half(64, 64, 32).with(|s| s.channels.truncate(3)),
    );
    let e = described_as_opened(&f, &options(ChannelSelection::Rgba, 0)).unwrap_err();
    assert!(e.contains("no channel A"), "{e}");
    let e = described_as_opened(&f, &options(ChannelSelection::Auto, 1)).unwrap_err();
    assert!(e.contains("part 1"), "{e}");

    let wide = write(
        "describe-wide",
        &Spec::rgba_half(65537, 1, 0).with(|s| {
            s.channels = vec![("Y", Kind::Uint)];
            s.tiles = None;
            s.levels = LevelSpec::Single;
            s.compression = Compression::Uncompressed;
        }),
    );
    let e = described_as_opened(&wide, &d).unwrap_err();
    assert!(e.contains("65537"), "{e}");
    let part = &describe(wide.path(), 0, &ChannelSelection::Auto)
        .unwrap()
        .parts[0];
    assert_eq!(part.channels[0].sample_type, ExrSampleType::Uint);
    assert_eq!(part.storage, ExrStorage::Scanline);
}

#[test]
fn describe_reports_structure_and_bytes() {
    let f = write("describe-bytes", &Spec::rgba_half(300, 77, 32));
    let desc = describe(f.path(), 0, &ChannelSelection::Auto).unwrap();
    let len = std::fs::metadata(f.path()).unwrap().len();
    assert_eq!(desc.file_bytes, len);
    assert!(!desc.multipart && !desc.deep);
    let p = &desc.parts[0];
    assert_eq!((p.width, p.height), (300, 77));
    assert_eq!(
        (p.storage, p.tile, p.level_mode, p.rounding),
        (
            ExrStorage::Tiled,
            Some([32, 32]),
            ExrLevelMode::Mipmap,
            Some(ExrRounding::Down)
        )
    );
    assert_eq!(p.levels.len(), 9);
    assert_eq!((p.levels[1].width, p.levels[1].height), (150, 38));
    assert_eq!(p.compression, "zip");
    assert!(p.bytes_on_disk > 0 && p.bytes_on_disk < len);
    let decoded: u64 = (0..9)
        .map(|l| ((300u64 >> l).max(1)) * ((77u64 >> l).max(1)) * 8)
        .sum();
    assert_eq!(p.decoded_bytes, Some(decoded));
}

#[test]
fn unreadable_files_are_errors_naming_the_file() {
    let good = write("describe-cut-src", &Spec::rgba_half(200, 150, 32));
    let bytes = std::fs::read(good.path()).unwrap();
    let f = TempFile::new("describe-cut");
    for cut in [0, 40, bytes.len() / 2] {
        std::fs::write(f.path(), &bytes[..cut]).unwrap();
        let e = describe(f.path(), 0, &ChannelSelection::Auto).unwrap_err();
        assert!(e.0.contains(&f.path().display().to_string()), "{e}");
    }
    let missing = TempFile::new("describe-missing");
    let e = describe(missing.path(), 0, &ChannelSelection::Auto).unwrap_err();
    assert!(e.0.contains("cannot open"), "{e}");
}
