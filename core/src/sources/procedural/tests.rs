//! Tests every procedural source must pass (sizes, errors, strides, formats, tiling,
//! determinism), and the read helpers the per-source tests share.

use super::{Checkerboard, Mandelbrot, Noise};
use crate::sources::{ImageSource, Readiness};
use crate::textures::{full_mip_levels, TexelFormat, TexelType, TextureLayout, TileRegion};

const TYPES: [TexelType; 4] = [
    TexelType::U8,
    TexelType::U16,
    TexelType::F16,
    TexelType::F32,
];

fn all_formats() -> Vec<TexelFormat> {
    let mut v = Vec::new();
    for t in TYPES {
        for ch in [1, 2, 4] {
            v.push(TexelFormat::new(t, ch).unwrap());
        }
    }
    v
}

/// Read a region into a packed buffer.
pub(super) fn read(src: &dyn ImageSource, region: TileRegion) -> Vec<u8> {
    let tb = src.open().unwrap().format.texel_bytes();
    let row = region.width as usize * tb;
    let mut buf = vec![0u8; row * region.height as usize];
    assert_eq!(
        src.read_region(region, &mut buf, row).unwrap(),
        Readiness::Ready
    );
    buf
}

/// Read a whole level as decoded RGBA.
pub(super) fn read_level(src: &dyn ImageSource, level: u32) -> (u32, u32, Vec<[f32; 4]>) {
    let info = src.open().unwrap();
    let w = (info.width >> level).max(1);
    let h = (info.height >> level).max(1);
    let bytes = read(
        src,
        TileRegion {
            level,
            x: 0,
            y: 0,
            width: w,
            height: h,
        },
    );
    let tb = info.format.texel_bytes();
    (
        w,
        h,
        bytes
            .chunks_exact(tb)
            .map(|t| info.format.decode(t))
            .collect(),
    )
}

fn sources(w: u32, h: u32, f: TexelFormat) -> Vec<Box<dyn ImageSource>> {
    vec![
        Box::new(Checkerboard::new(w, h, 16, f)),
        Box::new(Noise::new(w, h, 7, f)),
        Box::new(Mandelbrot::new(w, h, 64, f)),
    ]
}

pub(super) fn dist(a: [f32; 4], b: [f32; 4]) -> f32 {
    (0..3).map(|i| (a[i] - b[i]).powi(2)).sum::<f32>().sqrt()
}

#[test]
fn sources_are_send_and_sync() {
    fn check<T: Send + Sync + 'static>() {}
    check::<Checkerboard>();
    check::<Noise>();
    check::<Mandelbrot>();
}

#[test]
fn open_reports_format_and_full_chain() {
    for (w, h) in [(65536, 65536), (1000, 300), (1, 1), (3, 65536)] {
        for s in sources(w, h, TexelFormat::RGBA16F) {
            let info = s.open().unwrap();
            assert_eq!(info.width, w);
            assert_eq!(info.height, h);
            assert_eq!(info.format, TexelFormat::RGBA16F);
            assert_eq!(info.num_levels, full_mip_levels(w, h));
            assert!(s.read_base_color().unwrap().is_none());
        }
    }
}

#[test]
fn names_say_kind_size_and_format() {
    assert_eq!(
        Checkerboard::new(65536, 65536, 64, TexelFormat::RGBA8).name(),
        "checkerboard 65536×65536 RGBA8"
    );
    let f = TexelFormat::new(TexelType::F16, 2).unwrap();
    assert_eq!(Noise::new(8, 4, 3, f).name(), "noise 8×4 RG16F (seed 3)");
    let f = TexelFormat::new(TexelType::U16, 1).unwrap();
    assert_eq!(
        Mandelbrot::new(8, 4, 0, f).name(),
        "mandelbrot 8×4 R16 (1 iterations)"
    );
}

#[test]
fn absurd_sizes_and_formats_are_errors_not_panics() {
    let bad_three = TexelFormat {
        texel_type: TexelType::U8,
        channels: 3,
    };
    let bad_zero = TexelFormat {
        texel_type: TexelType::F32,
        channels: 0,
    };
    for (w, h, f) in [
        (0, 16, TexelFormat::RGBA8),
        (16, 0, TexelFormat::RGBA8),
        (65537, 16, TexelFormat::RGBA8),
        (16, u32::MAX, TexelFormat::RGBA8),
        (16, 16, bad_three),
        (16, 16, bad_zero),
    ] {
        for s in sources(w, h, f) {
            let e = s.open().unwrap_err();
            assert!(!e.0.is_empty());
            let region = TileRegion {
                level: 0,
                x: 0,
                y: 0,
                width: 1,
                height: 1,
            };
            let mut buf = [0u8; 64];
            assert!(s.read_region(region, &mut buf, 16).is_err(), "{}", s.name());
            let _ = s.name();
        }
    }
    // Degenerate parameters are clamped.
    assert!(Checkerboard::new(4, 4, 0, TexelFormat::RGBA8)
        .open()
        .is_ok());
    assert!(Mandelbrot::new(4, 4, 0, TexelFormat::RGBA8).open().is_ok());
}

#[test]
fn bad_regions_and_small_buffers_are_source_errors() {
    for s in sources(100, 50, TexelFormat::RGBA8) {
        let mut buf = vec![0u8; 100 * 50 * 4];
        let bad = [
            TileRegion {
                level: 7,
                x: 0,
                y: 0,
                width: 1,
                height: 1,
            }, // 7 levels: 0..=6
            TileRegion {
                level: 0,
                x: 99,
                y: 0,
                width: 2,
                height: 1,
            },
            TileRegion {
                level: 0,
                x: 0,
                y: 50,
                width: 1,
                height: 1,
            },
            TileRegion {
                level: 1,
                x: 0,
                y: 0,
                width: 51,
                height: 1,
            }, // level 1 is 50×25
            TileRegion {
                level: 0,
                x: u32::MAX,
                y: 0,
                width: 2,
                height: 1,
            },
            TileRegion {
                level: u32::MAX,
                x: 0,
                y: 0,
                width: 1,
                height: 1,
            },
        ];
        for r in bad {
            assert!(s.read_region(r, &mut buf, 400).is_err(), "{r:?}");
        }
        let r = TileRegion {
            level: 0,
            x: 0,
            y: 0,
            width: 10,
            height: 10,
        };
        // Row stride shorter than a row.
        assert!(s.read_region(r, &mut buf, 39).is_err());
        // Exactly big enough: the last row needs only its own texels, not the stride.
        let mut exact = vec![0u8; 9 * 64 + 40];
        assert!(s.read_region(r, &mut exact, 64).is_ok());
        let mut short = vec![0u8; 9 * 64 + 39];
        let e = s.read_region(r, &mut short, 64).unwrap_err();
        assert!(e.0.contains("too small"), "{e}");
        // Empty regions inside the level are fine and write nothing.
        for empty in [
            TileRegion {
                level: 0,
                x: 100,
                y: 50,
                width: 0,
                height: 0,
            },
            TileRegion {
                level: 0,
                x: 100,
                y: 0,
                width: 0,
                height: 5,
            },
            TileRegion {
                level: 0,
                x: 0,
                y: 50,
                width: 5,
                height: 0,
            },
        ] {
            assert_eq!(
                s.read_region(empty, &mut [], 1 << 20).unwrap(),
                Readiness::Ready
            );
        }
    }
}

#[test]
fn reads_respect_the_row_stride_and_write_nothing_else() {
    for f in all_formats() {
        for s in sources(300, 200, f) {
            let tb = f.texel_bytes();
            let r = TileRegion {
                level: 0,
                x: 17,
                y: 23,
                width: 33,
                height: 5,
            };
            let stride = 33 * tb + 7;
            let mut buf = vec![0xAAu8; stride * 5 + 11];
            s.read_region(r, &mut buf, stride).unwrap();
            let packed = read(s.as_ref(), r);
            for j in 0..5 {
                let row = &buf[j * stride..];
                assert_eq!(&row[..33 * tb], &packed[j * 33 * tb..(j + 1) * 33 * tb]);
                assert!(row[33 * tb..stride.min(row.len())]
                    .iter()
                    .all(|&b| b == 0xAA));
            }
            assert!(buf[4 * stride + 33 * tb..].iter().all(|&b| b == 0xAA));
        }
    }
}

#[test]
fn every_format_matches_the_rgba_shading() {
    // The same texel in every format decodes to (nearly) the same RGBA, keeping the
    // first channels.
    let reference: Vec<Vec<[f32; 4]>> = sources(97, 61, TexelFormat::RGBA32F)
        .iter()
        .map(|s| read_level(s.as_ref(), 0).2)
        .collect();
    for f in all_formats() {
        let tol = match f.texel_type {
            TexelType::U8 => 0.5 / 255.0 + 1e-6,
            TexelType::F16 => 1e-3,
            _ => 1e-4,
        };
        for (s, reference) in sources(97, 61, f).iter().zip(&reference) {
            let (_, _, got) = read_level(s.as_ref(), 0);
            for (g, r) in got.iter().zip(reference) {
                let want = match f.channels {
                    1 => [r[0], r[0], r[0], 1.0],
                    2 => [r[0], r[1], 0.0, 1.0],
                    _ => *r,
                };
                for c in 0..4 {
                    assert!(
                        (g[c] - want[c]).abs() <= tol,
                        "{} {f:?}: {g:?} vs {want:?}",
                        s.name()
                    );
                }
            }
        }
    }
}

#[test]
fn tiles_agree_with_whole_levels_at_edges_and_in_the_tail() {
    // Non-tile-multiple size: every tile (and every tail level) read on its own equals
    // the same texels of the whole level read at once.
    for f in [
        TexelFormat::RGBA8,
        TexelFormat::new(TexelType::F16, 2).unwrap(),
    ] {
        for s in sources(1000, 300, f) {
            let info = s.open().unwrap();
            let layout = TextureLayout::new(1000, 300, info.num_levels, f).unwrap();
            let tb = f.texel_bytes();
            for level in 0..info.num_levels {
                let whole = read(s.as_ref(), layout.level_region(level));
                let lw = layout.levels[level as usize].width as usize;
                if layout.in_mip_tail(level) {
                    continue;
                }
                let ll = layout.levels[level as usize];
                for ty in 0..ll.tiles_y {
                    for tx in 0..ll.tiles_x {
                        let r = layout.tile_region(level, tx, ty);
                        let tile = read(s.as_ref(), r);
                        for j in 0..r.height as usize {
                            let src = ((r.y as usize + j) * lw + r.x as usize) * tb;
                            let n = r.width as usize * tb;
                            assert_eq!(&tile[j * n..(j + 1) * n], &whole[src..src + n]);
                        }
                    }
                }
            }
            // The 1×1 level reads as one texel.
            let last = info.num_levels - 1;
            assert_eq!(read(s.as_ref(), layout.level_region(last)).len(), tb);
            let r = TileRegion {
                level: last,
                x: 0,
                y: 0,
                width: 1,
                height: 1,
            };
            assert_eq!(layout.level_region(last), r);
        }
    }
}

#[test]
fn reads_are_deterministic() {
    for s in sources(65536, 65536, TexelFormat::RGBA8) {
        for level in [0, 5, 10, 16] {
            let lw = 65536u32 >> level;
            let r = TileRegion {
                level,
                x: lw / 3,
                y: lw / 2,
                width: (lw - lw / 3).min(64),
                height: lw.min(64).div_ceil(2),
            };
            assert_eq!(read(s.as_ref(), r), read(s.as_ref(), r));
            let again = sources(65536, 65536, TexelFormat::RGBA8);
            let other = again.iter().find(|o| o.name() == s.name()).unwrap();
            assert_eq!(read(s.as_ref(), r), read(other.as_ref(), r));
        }
    }
}

#[test]
fn huge_textures_read_at_their_far_corner() {
    for s in sources(65536, 65536, TexelFormat::RGBA32F) {
        let r = TileRegion {
            level: 0,
            x: 65536 - 64,
            y: 65536 - 64,
            width: 64,
            height: 64,
        };
        let bytes = read(s.as_ref(), r);
        assert!(bytes
            .chunks_exact(16)
            .all(|t| TexelFormat::RGBA32F.decode(t).iter().all(|v| v.is_finite())));
    }
}

#[test]
fn shading_is_finite_everywhere() {
    for s in sources(333, 77, TexelFormat::RGBA32F) {
        for level in 0..full_mip_levels(333, 77) {
            let (_, _, t) = read_level(s.as_ref(), level);
            assert!(
                t.iter()
                    .flatten()
                    .all(|v| v.is_finite() && (0.0..=1.0).contains(v)),
                "{}",
                s.name()
            );
        }
    }
}
