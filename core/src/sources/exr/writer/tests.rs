//! The writer: files read back with the exr crate's own reader and with [`ExrSource`].

use super::*;
use crate::sources::mips::DownsampleFilter;
use crate::sources::{ExrSource, ImageSource};
use crate::textures::{TexelFormat, TileRegion};
use exr::prelude::{FlatSamples, Levels, ReadChannels, ReadLayers};

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn pattern(width: u32, height: u32, channels: u32) -> FloatImage {
    let mut img = FloatImage::zeros(width, height, channels);
    let c = channels as usize;
    for (i, v) in img.data.iter_mut().enumerate() {
        let (t, k) = (i / c, i % c);
        let (x, y) = (t % width as usize, t / width as usize);
        *v = ((x * 3 + y * 5) % 11) as f32 / 10.0 + k as f32;
    }
    img
}

/// Every level of every channel, as f32, by channel name.
fn read_levels(path: &Path) -> Vec<(String, Vec<Vec<f32>>)> {
    let image = exr::prelude::read()
        .no_deep_data()
        .all_resolution_levels()
        .all_channels()
        .first_valid_layer()
        .all_attributes()
        .from_file(path)
        .unwrap();
    let to_f32 = |s: &FlatSamples| s.values_as_f32().collect::<Vec<f32>>();
    image
        .layer_data
        .channel_data
        .list
        .iter()
        .map(|ch| {
            let levels = match &ch.sample_data {
                Levels::Singular(s) => vec![to_f32(s)],
                Levels::Mip { level_data, .. } => level_data.iter().map(to_f32).collect(),
                Levels::Rip { .. } => panic!("rip map"),
            };
            (ch.name.to_string(), levels)
        })
        .collect()
}

#[test]
fn writes_every_level_and_tile_and_reads_back() {
    let img = pattern(37, 19, 4);
    let path = temp_file("rgba.exr");
    let options = WriteOptions {
        tile: (16, 8),
        sample_type: SampleType::Float,
        ..WriteOptions::default()
    };
    let calls = std::sync::Mutex::new(Vec::new());
    let record = |done: u64, total: u64| calls.lock().unwrap().push((done, total));
    let written = write_mip_exr(&path, &img, &options, Some(&record)).unwrap();
    assert_eq!(written.levels, 6);
    assert_eq!(written.channels, ["A", "B", "G", "R"]);
    assert_eq!(written.chunks, options.chunk_count(37, 19));
    // 3x3 + 2x2 (18x9) + 1x1 (9x4) + 1x1 + 1x1 + 1x1
    assert_eq!(written.chunks, 9 + 4 + 1 + 1 + 1 + 1);
    assert_eq!(
        written.bytes_on_disk,
        std::fs::metadata(&path).unwrap().len()
    );
    let calls = calls.into_inner().unwrap();
    assert_eq!(calls.first(), Some(&(0, written.chunks)));
    assert_eq!(calls.last(), Some(&(written.chunks, written.chunks)));
    assert!(!tmp_path(&path).unwrap().exists());

    let mips = build_mips(&img, DownsampleFilter::Box);
    for (name, levels) in read_levels(&path) {
        let k = ["R", "G", "B", "A"]
            .iter()
            .position(|n| *n == name)
            .unwrap();
        assert_eq!(levels.len(), 6);
        for (l, got) in levels.iter().enumerate() {
            let src = if l == 0 { &img } else { &mips[l - 1] };
            let want: Vec<f32> = src.data.iter().skip(k).step_by(4).copied().collect();
            assert_eq!(got, &want, "channel {name} level {l}");
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_source_serves_every_written_level_from_the_file() {
    let img = pattern(150, 70, 3);
    let path = temp_file("rgb-served.exr");
    let options = WriteOptions {
        tile: (64, 64),
        sample_type: SampleType::Float,
        filter: DownsampleFilter::Lanczos3,
        ..WriteOptions::default()
    };
    write_mip_exr(&path, &img, &options, None).unwrap();
    let source = ExrSource::new(&path);
    let info = source.open().unwrap();
    assert_eq!((info.width, info.height, info.num_levels), (150, 70, 8));
    assert_eq!(info.format, TexelFormat::RGBA32F, "RGB is served as RGBA");
    let mips = build_mips(&img, options.filter);
    for level in 0..info.num_levels {
        let region = TileRegion::whole_level(150, 70, level);
        let (w, h) = (region.width, region.height);
        let row_bytes = w as usize * 16;
        let mut dest = vec![0u8; row_bytes * h as usize];
        source.read_region(region, &mut dest, row_bytes).unwrap();
        let src = if level == 0 {
            &img
        } else {
            &mips[level as usize - 1]
        };
        for (texel, want) in dest.chunks_exact(16).zip(src.data.chunks_exact(3)) {
            let got: Vec<f32> = texel
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            assert_eq!(&got[..3], want, "level {level}");
            assert_eq!(got[3], 1.0);
        }
    }
    let d = source.describe().unwrap();
    let served = d.served.unwrap();
    assert_eq!((served.levels_from_file, served.levels), (8, 8));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn every_compression_round_trips_in_half() {
    let img = pattern(40, 21, 3);
    for compression in Compression::ALL {
        let path = temp_file(&format!("rgb-{}.exr", compression.name()));
        let options = WriteOptions {
            compression,
            tile: (32, 32),
            ..WriteOptions::default()
        };
        write_mip_exr(&path, &img, &options, None).unwrap();
        let read = read_levels(&path);
        assert_eq!(read.len(), 3);
        // Half precision (2^-11 relative); B44 quantises high-contrast 4x4 blocks hard.
        let tolerance = if compression.is_lossless() {
            1e-3
        } else {
            0.15
        };
        for (name, levels) in read {
            let k = ["R", "G", "B"].iter().position(|n| *n == name).unwrap();
            let want = img.data.iter().skip(k).step_by(3);
            let worst = levels[0]
                .iter()
                .zip(want)
                .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
                .fold(0.0f32, f32::max);
            assert!(worst <= tolerance, "{compression:?} {name}: {worst}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn single_level_gray_and_gray_alpha_names() {
    for (channels, names) in [(1, vec!["Y"]), (2, vec!["A", "Y"])] {
        let img = pattern(5, 3, channels);
        let path = temp_file(&format!("gray{channels}.exr"));
        let options = WriteOptions {
            mips: false,
            ..WriteOptions::default()
        };
        let written = write_mip_exr(&path, &img, &options, None).unwrap();
        assert_eq!((written.levels, written.chunks), (1, 1));
        let read = read_levels(&path);
        let got: Vec<&str> = read.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, names);
        assert!(read.iter().all(|(_, levels)| levels.len() == 1));
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn bad_options_and_paths_are_errors_without_leftovers() {
    let img = pattern(4, 4, 4);
    let bad_tile = WriteOptions {
        tile: (0, 64),
        ..WriteOptions::default()
    };
    let path = temp_file("never.exr");
    assert!(matches!(
        write_mip_exr(&path, &img, &bad_tile, None),
        Err(Error::InvalidArgument(_))
    ));
    let missing_dir = temp_file("no-such-dir").join("x.exr");
    let err = write_mip_exr(&missing_dir, &img, &WriteOptions::default(), None).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err.to_string().contains("x.exr"), "{err}");
    let mut short = img.clone();
    short.data.pop();
    assert!(matches!(
        write_mip_exr(&path, &short, &WriteOptions::default(), None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(!path.exists() && !tmp_path(&path).unwrap().exists());
}
