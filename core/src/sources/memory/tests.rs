//! Tests of the in-memory image source.

use super::*;
use crate::textures::TextureLayout;

const TYPES: [TexelType; 4] = [
    TexelType::U8,
    TexelType::U16,
    TexelType::F16,
    TexelType::F32,
];

/// A smooth, varied test pattern in [0, 1].
fn pattern(w: u32, h: u32) -> Vec<[f32; 4]> {
    (0..h)
        .flat_map(|y| {
            (0..w).map(move |x| {
                let (u, v) = (x as f32 / w as f32, y as f32 / h as f32);
                [
                    u,
                    v,
                    (u * 7.0 + v * 3.0).sin() * 0.5 + 0.5,
                    1.0 - 0.5 * u * v,
                ]
            })
        })
        .collect()
}

/// Encode `pixels` with `channels` components of `t` each (3 allowed).
fn encode(t: TexelType, channels: u32, pixels: &[[f32; 4]]) -> Vec<u8> {
    let four = TexelFormat {
        texel_type: t,
        channels: 4,
    };
    let keep = channels as usize * t.bytes();
    let mut out = Vec::new();
    for p in pixels {
        let mut texel = [0u8; 16];
        four.encode(*p, &mut texel);
        out.extend_from_slice(&texel[..keep]);
    }
    out
}

fn read(img: &InMemoryImage, region: TileRegion) -> Vec<u8> {
    let row = region.width as usize * img.format().texel_bytes();
    let mut buf = vec![0u8; row * region.height as usize];
    assert_eq!(
        img.read_region(region, &mut buf, row).unwrap(),
        Readiness::Ready
    );
    buf
}

fn decode_level(img: &InMemoryImage, level: u32) -> (u32, u32, Vec<[f32; 4]>) {
    let (w, h, data) = img.level(level).unwrap();
    let f = img.format();
    (
        w,
        h,
        data.chunks_exact(f.texel_bytes())
            .map(|t| f.decode(t))
            .collect(),
    )
}

/// The box filter written the plain way: for each output texel, the source texels whose
/// index maps to it (`min(i / 2, out - 1)`).
fn reference_downsample(w: u32, h: u32, src: &[[f32; 4]]) -> Vec<[f32; 4]> {
    let (dw, dh) = ((w / 2).max(1), (h / 2).max(1));
    let mut sum = vec![[0.0f64; 5]; (dw * dh) as usize];
    for y in 0..h {
        for x in 0..w {
            let o = ((y / 2).min(dh - 1) * dw + (x / 2).min(dw - 1)) as usize;
            for k in 0..4 {
                sum[o][k] += src[(y * w + x) as usize][k] as f64;
            }
            sum[o][4] += 1.0;
        }
    }
    sum.iter()
        .map(|s| [0, 1, 2, 3].map(|k| (s[k] / s[4]) as f32))
        .collect()
}

#[test]
fn images_are_send_and_sync() {
    fn check<T: Send + Sync + 'static>() {}
    check::<InMemoryImage>();
}

#[test]
fn every_type_and_channel_count_round_trips() {
    let (w, h) = (7, 5);
    let pixels = pattern(w, h);
    for t in TYPES {
        for channels in 1..=4u32 {
            let data = encode(t, channels, &pixels);
            let img = InMemoryImage::new(w, h, t, channels, data.clone(), false).unwrap();
            let stored_channels = if channels == 3 { 4 } else { channels };
            assert_eq!(img.format(), TexelFormat::new(t, stored_channels).unwrap());
            let info = img.open().unwrap();
            assert_eq!((info.width, info.height, info.num_levels), (w, h, 1));
            let bytes = read(
                &img,
                TileRegion {
                    level: 0,
                    x: 0,
                    y: 0,
                    width: w,
                    height: h,
                },
            );
            if channels != 3 {
                assert_eq!(bytes, data, "{t:?} × {channels}");
            }
            let tol = if t == TexelType::U8 {
                0.5 / 255.0 + 1e-6
            } else {
                1e-3
            };
            for (texel, p) in bytes.chunks_exact(img.format().texel_bytes()).zip(&pixels) {
                let d = img.format().decode(texel);
                let want = match channels {
                    1 => [p[0], p[0], p[0], 1.0],
                    2 => [p[0], p[1], 0.0, 1.0],
                    3 => [p[0], p[1], p[2], 1.0],
                    _ => *p,
                };
                for k in 0..4 {
                    assert!(
                        (d[k] - want[k]).abs() <= tol,
                        "{t:?} × {channels}: {d:?} vs {want:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn three_channels_get_an_exact_opaque_alpha() {
    for t in TYPES {
        let data = encode(t, 3, &pattern(2, 1));
        let img = InMemoryImage::new(2, 1, t, 3, data, true).unwrap();
        for level in 0..img.num_levels() {
            let (_, _, texels) = decode_level(&img, level);
            assert!(texels.iter().all(|c| c[3] == 1.0), "{t:?}");
        }
    }
}

#[test]
fn from_rgba_f32_encodes_every_format() {
    let (w, h) = (9, 4);
    let pixels = pattern(w, h);
    for t in TYPES {
        for channels in [1, 2, 4] {
            let f = TexelFormat::new(t, channels).unwrap();
            let img = InMemoryImage::from_rgba_f32(w, h, f, &pixels, true).unwrap();
            let (_, _, data) = img.level(0).unwrap();
            assert_eq!(data, encode(t, channels, &pixels).as_slice());
            assert_eq!(img.num_levels(), 4);
        }
    }
}

#[test]
fn mip_chain_has_every_level_down_to_one_texel() {
    let img =
        InMemoryImage::from_rgba_f32(1000, 300, TexelFormat::RGBA8, &pattern(1000, 300), true)
            .unwrap();
    assert_eq!(img.num_levels(), 10);
    assert_eq!(img.open().unwrap().num_levels, 10);
    for l in 0..10 {
        let (w, h, data) = img.level(l).unwrap();
        assert_eq!((w, h), ((1000 >> l).max(1), (300 >> l).max(1)));
        assert_eq!(data.len(), (w * h * 4) as usize);
    }
    assert!(img.level(10).is_none());
    let no_mips =
        InMemoryImage::from_rgba_f32(1000, 300, TexelFormat::RGBA8, &pattern(1000, 300), false)
            .unwrap();
    assert_eq!(no_mips.num_levels(), 1);
    assert!(no_mips.level(1).is_none());
    let mut buf = [0u8; 4];
    let r = TileRegion {
        level: 1,
        x: 0,
        y: 0,
        width: 1,
        height: 1,
    };
    assert!(no_mips.read_region(r, &mut buf, 4).is_err());
}

#[test]
fn three_by_three_averages_to_the_mean_of_all_nine() {
    let pixels: Vec<[f32; 4]> = (0..9)
        .map(|i| [i as f32, (i * i) as f32, -(i as f32), 0.5])
        .collect();
    let img = InMemoryImage::from_rgba_f32(3, 3, TexelFormat::RGBA32F, &pixels, true).unwrap();
    assert_eq!(img.num_levels(), 2);
    let (w, h, t) = decode_level(&img, 1);
    assert_eq!((w, h), (1, 1));
    let mean = |k: usize| pixels.iter().map(|p| p[k]).sum::<f32>() / 9.0;
    for (k, &got) in t[0].iter().enumerate() {
        assert!((got - mean(k)).abs() < 1e-5, "{k}: {got} vs {}", mean(k));
    }
}

#[test]
fn odd_edges_use_three_tap_boxes() {
    // 5×2 → 2×1: columns {0, 1} and {2, 3, 4}, both rows.
    let pixels: Vec<[f32; 4]> = (0..10).map(|i| [i as f32; 4]).collect();
    let img = InMemoryImage::from_rgba_f32(5, 2, TexelFormat::RGBA32F, &pixels, true).unwrap();
    let (w, h, t) = decode_level(&img, 1);
    assert_eq!((w, h), (2, 1));
    assert_eq!(t[0][0], (0.0 + 1.0 + 5.0 + 6.0) / 4.0);
    assert_eq!(t[1][0], (2.0 + 3.0 + 4.0 + 7.0 + 8.0 + 9.0) / 6.0);
    // 1×4 → 1×2 → 1×1 and 4×1 → 2×1 → 1×1: a side of 1 stays 1.
    let column: Vec<[f32; 4]> = (0..4).map(|i| [i as f32; 4]).collect();
    for (w, h) in [(1, 4), (4, 1)] {
        let img = InMemoryImage::from_rgba_f32(w, h, TexelFormat::RGBA32F, &column, true).unwrap();
        assert_eq!(img.num_levels(), 3);
        assert_eq!(decode_level(&img, 1).2, vec![[0.5; 4], [2.5; 4]]);
        assert_eq!(decode_level(&img, 2).2, vec![[1.5; 4]]);
    }
}

#[test]
fn every_source_texel_contributes_to_every_level() {
    for (w, h) in [(5u32, 5u32), (7, 3), (2, 9)] {
        for hot in 0..(w * h) as usize {
            let mut pixels = vec![[0.0f32; 4]; (w * h) as usize];
            pixels[hot] = [1.0; 4];
            let img =
                InMemoryImage::from_rgba_f32(w, h, TexelFormat::RGBA32F, &pixels, true).unwrap();
            for level in 1..img.num_levels() {
                let (_, _, t) = decode_level(&img, level);
                assert!(
                    t.iter().any(|c| c[0] > 0.0),
                    "{w}×{h} texel {hot} lost at level {level}"
                );
            }
        }
    }
}

#[test]
fn mips_match_a_plain_box_filter_of_the_stored_level() {
    // Each level is computed from the stored (encoded) level above it, so a plain
    // reference filter of the decoded level above reproduces it to within rounding.
    for (w, h) in [(1024u32, 512u32), (333, 77), (6, 1)] {
        for f in [
            TexelFormat::RGBA8,
            TexelFormat::new(TexelType::F16, 2).unwrap(),
            TexelFormat::RGBA32F,
        ] {
            let img = InMemoryImage::from_rgba_f32(w, h, f, &pattern(w, h), true).unwrap();
            for level in 1..img.num_levels() {
                let (pw, ph, above) = decode_level(&img, level - 1);
                let (_, _, got) = decode_level(&img, level);
                let want = reference_downsample(pw, ph, &above);
                for (g, r) in got.iter().zip(&want) {
                    let mut enc = [0u8; 16];
                    f.encode(*r, &mut enc);
                    let r = f.decode(&enc);
                    for k in 0..4 {
                        let tol = if f.texel_type == TexelType::U8 {
                            1.0 / 255.0 + 1e-6
                        } else {
                            1e-3
                        };
                        assert!(
                            (g[k] - r[k]).abs() <= tol,
                            "{w}×{h} {f:?} level {level}: {g:?} vs {r:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn tiles_at_edges_and_tail_levels_read_the_stored_texels() {
    for f in [
        TexelFormat::RGBA8,
        TexelFormat::new(TexelType::U8, 1).unwrap(),
        TexelFormat::RGBA32F,
    ] {
        let (w, h) = (300, 200);
        let img = InMemoryImage::from_rgba_f32(w, h, f, &pattern(w, h), true).unwrap();
        let layout = TextureLayout::new(w, h, img.num_levels(), f).unwrap();
        let tb = f.texel_bytes();
        for level in 0..img.num_levels() {
            let (lw, _, data) = img.level(level).unwrap();
            let regions: Vec<TileRegion> = if layout.in_mip_tail(level) {
                vec![layout.level_region(level)]
            } else {
                let ll = layout.levels[level as usize];
                (0..ll.tiles_y)
                    .flat_map(|ty| (0..ll.tiles_x).map(move |tx| (tx, ty)))
                    .map(|(tx, ty)| layout.tile_region(level, tx, ty))
                    .collect()
            };
            for r in regions {
                let got = read(&img, r);
                let n = r.width as usize * tb;
                for j in 0..r.height as usize {
                    let src = ((r.y as usize + j) * lw as usize + r.x as usize) * tb;
                    assert_eq!(&got[j * n..(j + 1) * n], &data[src..src + n], "{f:?} {r:?}");
                }
            }
        }
        let last = img.num_levels() - 1;
        assert_eq!(img.level(last).unwrap().0, 1);
        assert_eq!(read(&img, layout.level_region(last)).len(), tb);
        // Reads are repeatable.
        let r = layout.tile_region(0, 1, 0);
        assert_eq!(read(&img, r), read(&img, r));
    }
}

#[test]
fn strided_reads_write_only_their_texels() {
    let img =
        InMemoryImage::from_rgba_f32(40, 30, TexelFormat::RGBA8, &pattern(40, 30), true).unwrap();
    let r = TileRegion {
        level: 1,
        x: 13,
        y: 9,
        width: 7,
        height: 6,
    };
    let stride = 7 * 4 + 5;
    let mut buf = vec![0xEEu8; stride * 5 + 7 * 4 + 3];
    img.read_region(r, &mut buf, stride).unwrap();
    let packed = read(&img, r);
    for j in 0..6 {
        assert_eq!(
            &buf[j * stride..j * stride + 28],
            &packed[j * 28..(j + 1) * 28]
        );
        let gap_end = ((j + 1) * stride).min(buf.len());
        assert!(buf[j * stride + 28..gap_end].iter().all(|&b| b == 0xEE));
    }
}

#[test]
fn bad_regions_and_small_buffers_are_source_errors() {
    let img =
        InMemoryImage::from_rgba_f32(40, 30, TexelFormat::RGBA8, &pattern(40, 30), true).unwrap();
    let mut buf = vec![0u8; 40 * 30 * 4];
    for r in [
        TileRegion {
            level: 6,
            x: 0,
            y: 0,
            width: 1,
            height: 1,
        },
        TileRegion {
            level: 0,
            x: 39,
            y: 0,
            width: 2,
            height: 1,
        },
        TileRegion {
            level: 0,
            x: 0,
            y: 29,
            width: 1,
            height: 2,
        },
        TileRegion {
            level: 5,
            x: 0,
            y: 0,
            width: 2,
            height: 1,
        },
        TileRegion {
            level: 0,
            x: 0,
            y: u32::MAX,
            width: 1,
            height: 2,
        },
    ] {
        assert!(img.read_region(r, &mut buf, 160).is_err(), "{r:?}");
    }
    let r = TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: 40,
        height: 30,
    };
    let e = img
        .read_region(r, &mut buf[..40 * 30 * 4 - 1], 160)
        .unwrap_err();
    assert!(e.0.contains("too small"), "{e}");
    assert!(img.read_region(r, &mut buf, 159).is_err());
    assert!(img.read_region(r, &mut buf, 160).is_ok());
    assert_eq!(img.read_base_color().unwrap(), None);
    // Empty regions inside the level write nothing, whatever the stride.
    for empty in [
        TileRegion {
            level: 0,
            x: 40,
            y: 0,
            width: 0,
            height: 5,
        },
        TileRegion {
            level: 0,
            x: 0,
            y: 30,
            width: 5,
            height: 0,
        },
    ] {
        assert_eq!(
            img.read_region(empty, &mut [], 1 << 20).unwrap(),
            Readiness::Ready
        );
    }
}

#[test]
fn invalid_inputs_are_errors_not_panics() {
    let u8x4 = |w: u32, h: u32| vec![0u8; (w * h * 4) as usize];
    let invalid = |r: Result<InMemoryImage>| matches!(r, Err(Error::InvalidArgument(_)));
    let unsupported = |r: Result<InMemoryImage>| matches!(r, Err(Error::Unsupported(_)));
    assert!(invalid(InMemoryImage::new(
        0,
        4,
        TexelType::U8,
        4,
        vec![],
        true
    )));
    assert!(invalid(InMemoryImage::new(
        4,
        0,
        TexelType::U8,
        4,
        vec![],
        true
    )));
    assert!(invalid(InMemoryImage::new(
        65537,
        1,
        TexelType::U8,
        1,
        vec![0; 65537],
        true
    )));
    assert!(invalid(InMemoryImage::new(
        1,
        u32::MAX,
        TexelType::U8,
        1,
        vec![0; 4],
        true
    )));
    assert!(unsupported(InMemoryImage::new(
        2,
        2,
        TexelType::U8,
        0,
        vec![],
        true
    )));
    assert!(unsupported(InMemoryImage::new(
        2,
        2,
        TexelType::U8,
        5,
        vec![0; 20],
        true
    )));
    let mut short = u8x4(4, 4);
    short.pop();
    assert!(invalid(InMemoryImage::new(
        4,
        4,
        TexelType::U8,
        4,
        short,
        true
    )));
    let mut long = u8x4(4, 4);
    long.push(0);
    assert!(invalid(InMemoryImage::new(
        4,
        4,
        TexelType::U8,
        4,
        long,
        true
    )));
    assert!(invalid(InMemoryImage::new(
        4,
        4,
        TexelType::F32,
        4,
        u8x4(4, 4),
        true
    )));
    assert!(InMemoryImage::new(4, 4, TexelType::U8, 4, u8x4(4, 4), true).is_ok());

    let px = vec![[0.5f32; 4]; 16];
    assert!(invalid(InMemoryImage::from_rgba_f32(
        4,
        4,
        TexelFormat::RGBA8,
        &px[..15],
        true
    )));
    assert!(invalid(InMemoryImage::from_rgba_f32(
        0,
        4,
        TexelFormat::RGBA8,
        &[],
        true
    )));
    let rgb = TexelFormat {
        texel_type: TexelType::U8,
        channels: 3,
    };
    assert!(unsupported(InMemoryImage::from_rgba_f32(
        4, 4, rgb, &px, true
    )));
    let e = InMemoryImage::new(4, 4, TexelType::U8, 4, vec![1, 2, 3], true).unwrap_err();
    assert!(e.to_string().contains("64 bytes"), "{e}");
}

#[test]
fn one_texel_and_thin_images_work() {
    let img = InMemoryImage::new(1, 1, TexelType::U16, 2, vec![1, 2, 3, 4], true).unwrap();
    assert_eq!(img.num_levels(), 1);
    let r = TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: 1,
        height: 1,
    };
    assert_eq!(read(&img, r), vec![1, 2, 3, 4]);
    let img = InMemoryImage::from_rgba_f32(65536, 1, TexelFormat::RGBA8, &pattern(65536, 1), true)
        .unwrap();
    assert_eq!(img.num_levels(), 17);
    assert_eq!(img.level(16).unwrap().0, 1);
}

#[test]
fn names_and_debug_are_short() {
    let img =
        InMemoryImage::from_rgba_f32(1000, 300, TexelFormat::RGBA8, &pattern(1000, 300), false)
            .unwrap();
    assert_eq!(img.name(), "in-memory 1000×300 RGBA8");
    let dbg = format!("{img:?}");
    assert!(dbg.len() < 200, "{dbg}");
    let img = InMemoryImage::new(2, 1, TexelType::F16, 3, vec![0; 12], false).unwrap();
    assert_eq!(img.name(), "in-memory 2×1 RGBA16F");
}
