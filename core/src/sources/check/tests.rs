//! Whole-file checks: every read counted, statistics against values computed here, the
//! first error of a failing, panicking or "not yet" source, EXR files whole, truncated and
//! with a corrupted chunk, and every Ptex fixture.

use super::*;
use crate::sources::exr::{write_mip_exr, WriteOptions};
use crate::sources::fault::{FaultInjectingSource, FaultPlan, FaultSites};
use crate::sources::ptex::PtexFile;
use crate::sources::{ExrSource, FloatImage, InMemoryImage};
use crate::textures::TexelType;
use std::path::PathBuf;
use std::sync::Arc;

/// A `w × h` RGBA8 image whose texel `(x, y)` is `(x % 256, y % 256, (x + y) % 256, 255)`.
fn image(w: u32, h: u32) -> InMemoryImage {
    let mut data = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h {
        for x in 0..w {
            data.extend_from_slice(&[(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8, 255]);
        }
    }
    InMemoryImage::new(w, h, TexelType::U8, 4, data, true).unwrap()
}

/// Tiles of the tiled levels of a `w × h` RGBA8 texture, plus one read for the tail.
fn expected_reads(w: u32, h: u32) -> u64 {
    let layout = TextureLayout::new(
        w,
        h,
        crate::textures::full_mip_levels(w, h),
        TexelFormat::RGBA8,
    )
    .unwrap();
    let tiles: u64 = layout.levels[..layout.mip_tail_first_level as usize]
        .iter()
        .map(|l| u64::from(l.tiles_x * l.tiles_y))
        .sum();
    tiles + u64::from(layout.mip_tail_bytes > 0)
}

#[test]
fn every_tile_is_read_once_and_the_statistics_are_those_of_level_0() {
    for (w, h) in [(700, 300), (64, 32), (1, 1)] {
        let src = image(w, h);
        let r = check_source(&src, true).unwrap();
        assert_eq!(r.reads, expected_reads(w, h), "{w}×{h}");
        assert_eq!(r.level0_texels, u64::from(w * h));
        assert_eq!(r.levels, crate::textures::full_mip_levels(w, h));
        let s = r.stats.unwrap();
        assert_eq!(s.len(), 4);
        // Channel 0 is x % 256 / 255 averaged over every texel.
        let mean_x: f64 = (0..w)
            .map(|x| f64::from((x % 256) as f32 / 255.0))
            .sum::<f64>()
            / f64::from(w);
        assert!((s[0].mean - mean_x).abs() < 1e-7, "{w}×{h}: {:?}", s[0]);
        assert_eq!(s[0].min, 0.0);
        assert!((s[0].max - f64::from((w - 1).min(255)) / 255.0).abs() < 1e-7);
        assert_eq!(
            (s[3].min, s[3].max, s[3].mean, s[3].non_finite),
            (1.0, 1.0, 1.0, 0)
        );
        assert!(check_source(&src, false).unwrap().stats.is_none());
    }
}

#[test]
fn non_finite_values_are_counted_apart() {
    let mut data = Vec::new();
    for v in [1.0f32, f32::NAN, 3.0, f32::INFINITY] {
        data.extend_from_slice(&v.to_le_bytes());
    }
    let src = InMemoryImage::new(2, 2, TexelType::F32, 1, data, true).unwrap();
    let s = check_source(&src, true).unwrap().stats.unwrap();
    assert_eq!(
        (s[0].min, s[0].max, s[0].mean, s[0].non_finite),
        (1.0, 3.0, 2.0, 2)
    );
}

#[test]
fn the_first_failure_is_reported_with_what_was_read() {
    let faulty = |plan: FaultPlan| {
        let inner: Arc<dyn ImageSource> = Arc::new(image(700, 300));
        FaultInjectingSource::new(inner, plan).unwrap()
    };
    let cases = [
        (
            FaultPlan {
                error_rate: 1.0,
                sites: FaultSites::open_only(),
                ..FaultPlan::default()
            },
            "injected",
        ),
        (
            FaultPlan {
                panic_rate: 1.0,
                sites: FaultSites {
                    open: false,
                    mip_tail: true,
                    tiles: false,
                },
                ..FaultPlan::default()
            },
            "reading the mip tail: panicked: injected panic",
        ),
        (
            FaultPlan {
                short_read_rate: 1.0,
                sites: FaultSites::tiles_only(),
                ..FaultPlan::default()
            },
            "reading level 0 tile (0, 0): injected short read",
        ),
        (
            FaultPlan {
                not_yet_rate: 1.0,
                max_not_yet: 10,
                sites: FaultSites::tiles_only(),
                ..FaultPlan::default()
            },
            "reading level 0 tile (0, 0): the source answered \"not yet\"",
        ),
    ];
    for (i, (plan, needle)) in cases.into_iter().enumerate() {
        let e = check_source(&faulty(plan), true).unwrap_err();
        // The first case fails at open, the others at a read.
        assert_eq!(matches!(e, CheckError::Open(_)), i == 0, "{e:?}");
        let e = e.to_string();
        assert!(e.contains(needle), "{e:?} should contain {needle:?}");
        assert!(e.contains("with injected faults"), "names the source: {e}");
    }
    // One bad tile among many: found, named, and nothing after it is read.
    let plan = FaultPlan {
        seed: 3,
        error_rate: 0.05,
        sites: FaultSites::tiles_only(),
        ..FaultPlan::default()
    };
    let src = faulty(plan);
    let e = check_source(&src, false).unwrap_err().to_string();
    assert!(e.contains("injected I/O error at level"), "{e}");
    assert_eq!(
        src.injected().errors,
        1,
        "the walk stops at the first error"
    );
}

/// A fresh temporary path (removed when dropped).
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn exr(tag: &str, w: u32, h: u32) -> Temp {
    let path =
        std::env::temp_dir().join(format!("demandtex-check-{}-{tag}.exr", std::process::id()));
    let mut img = FloatImage::zeros(w, h, 4);
    for (i, v) in img.data.iter_mut().enumerate() {
        *v = (i % 97) as f32 / 8.0;
    }
    let options = WriteOptions {
        tile: (32, 32),
        ..WriteOptions::default()
    };
    write_mip_exr(&path, &img, &options, None).unwrap();
    Temp(path)
}

#[test]
fn exr_files_whole_truncated_and_with_a_corrupt_chunk() {
    let f = exr("whole", 300, 200);
    let r = check_source(&ExrSource::new(&f.0), true).unwrap();
    assert_eq!(r.level0_texels, 300 * 200);
    let s = r.stats.unwrap();
    assert_eq!((s[0].min, s[0].max), (0.0, 96.0 / 8.0));

    let len = std::fs::metadata(&f.0).unwrap().len();
    let bytes = std::fs::read(&f.0).unwrap();
    let cut = exr("cut", 1, 1);
    std::fs::write(&cut.0, &bytes[..(len * 3 / 4) as usize]).unwrap();
    let e = check_source(&ExrSource::new(&cut.0), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("truncated") || e.contains("cut short"), "{e}");

    // Zero a stretch in the middle of the pixel data: some chunk no longer decodes (or no
    // longer is the chunk its offset names).
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid..mid + 64].fill(0xFF);
    let corrupt = exr("corrupt", 1, 1);
    std::fs::write(&corrupt.0, &bad).unwrap();
    let e = check_source(&ExrSource::new(&corrupt.0), false).unwrap_err();
    assert!(matches!(e, CheckError::Read(_)), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("level") && e.contains("tile"), "{e}");
}

#[test]
fn every_ptex_fixture_is_whole_and_its_statistics_match_the_faces() {
    let dir = ptex_fixtures();
    for name in [
        "quad_uint8_rgb",
        "quad_half_rgba",
        "tri_uint8_rgb",
        "quad_uint8_edits",
    ] {
        let file = PtexFile::open(dir.join(format!("{name}.ptx"))).unwrap();
        let r = check_ptex(&file, true).unwrap();
        let faces = file.num_faces() as u32;
        let texels: u64 = (0..faces)
            .map(|f| file.face_info(f).unwrap().res.texels() as u64)
            .sum();
        assert_eq!(r.level0_texels, texels, "{name}");
        assert!(r.reads >= u64::from(faces), "{name}");
        // Channel 0's mean, from every face read whole at full resolution.
        let (mut sum, mut n) = (0.0f64, 0u64);
        let mut texel = vec![0f32; file.num_channels()];
        for f in 0..faces {
            let res = file.face_info(f).unwrap().res;
            let data = file.read_face(f, res).unwrap();
            for v in 0..res.v() {
                for u in 0..res.u() {
                    let t = data.texel(u, v).unwrap();
                    values::to_f32(file.data_type(), t, &mut texel);
                    sum += f64::from(texel[0]);
                    n += 1;
                }
            }
        }
        let s = r.stats.unwrap();
        assert_eq!(s.len(), file.num_channels());
        assert!(
            (s[0].mean - sum / n as f64).abs() < 1e-6,
            "{name}: {:?}",
            s[0]
        );
    }
}

#[test]
fn a_damaged_ptex_file_reports_the_face() {
    let dir = ptex_fixtures();
    let bytes = std::fs::read(dir.join("quad_uint8_rgb.ptx")).unwrap();
    // Overwrite 16 bytes at points through the second half (face data): the open checks
    // sizes, not contents, so the damage is found by the check, naming the face.
    let mut failed = 0;
    for at in (bytes.len() / 2..bytes.len() - 16).step_by(bytes.len() / 80) {
        let mut bad = bytes.clone();
        bad[at..at + 16].fill(0x5A);
        let Ok(file) = PtexFile::from_bytes("bad.ptx", bad, Default::default()) else {
            continue;
        };
        if let Err(e) = check_ptex(&file, true) {
            assert!(
                e.0.contains("bad.ptx") && e.0.contains("checking face"),
                "{e}"
            );
            failed += 1;
        }
    }
    assert!(
        failed > 10,
        "damaged face data is found ({failed} of 40 cases)"
    );
}

/// The reference Ptex fixtures (`tests/fixtures/ptex/` of the repository).
fn ptex_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ptex")
}
