//! The DDS source against files NVIDIA Texture Tools, Pillow and `demandtex convert` wrote
//! (`tests/fixtures/dds`, with Pillow's decode of level 0 as reference texels), against
//! files of random blocks (every codec, addressing checked block by block), and against
//! damaged headers and truncated files.

use super::*;
use crate::sources::check::check_source;
use crate::sources::fixture_refs::{self, read_level};
use crate::textures::{mip_level_size, TexelType};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    fixture_refs::fixture("dds", name)
}

pub(super) fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-dds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const FIXTURES: [&str; 16] = [
    "nv-bc1", "nv-bc1a", "nv-bc2", "nv-bc3", "nv-bc4", "nv-bc5", "nv-rgba", "pil-dxt1", "pil-dxt5",
    "pil-bc3", "pil-bc5", "pil-rgba", "pil-rgb", "pil-l", "dtx-bc7", "dtx-bc4",
];

#[test]
fn files_other_tools_wrote_decode_as_pillow_decodes_them() {
    for name in FIXTURES {
        let src = DdsSource::new(fixture(&format!("{name}.dds")));
        let info = src.open().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((info.width, info.height), (37, 22), "{name}");
        assert_eq!(info.format.texel_type, TexelType::U8, "{name}");
        let data = read_level(&src, &info, 0);
        let reference = std::fs::read_to_string(fixture(&format!("{name}.ref"))).unwrap();
        let tb = info.format.texel_bytes();
        // BC1–BC5: the formats leave the rounding of interpolated colours and alphas to
        // the decoder (D3D allows 1/255 and more), and Pillow's differs from bcdec's by
        // one step at some texels; BC7 (exactly specified) and plain texels are exact.
        let colour_step = match src.layout().unwrap().encoding {
            DdsEncoding::Blocks(BlockCodec::Bc7) | DdsEncoding::Plain(_) => 0,
            DdsEncoding::Blocks(_) => 1,
        };
        let mut texels = 0;
        for (i, line) in reference.lines().enumerate() {
            let want: Vec<u8> = line.split(' ').map(|v| v.parse().unwrap()).collect();
            let got = &data[i * tb..(i + 1) * tb];
            // Pillow's bands: RGBA, RGB (BC5: blue 0; 24-bit RGB: no alpha), or L.
            let n = want.len().min(tb);
            for c in 0..n {
                let step = colour_step;
                let d = got[c].abs_diff(want[c]);
                assert!(
                    d <= step,
                    "{name} texel {i}: {got:?} against Pillow's {want:?}"
                );
            }
            if tb == 4 && want.len() == 3 {
                assert_eq!(got[3], 255, "{name} texel {i}: alpha of an RGB file");
            }
            texels += 1;
        }
        assert_eq!(texels, 37 * 22, "{name}");
    }
}

#[test]
fn mip_chains_of_other_tools_are_read_and_missing_levels_generated() {
    for name in FIXTURES {
        let src = DdsSource::new(fixture(&format!("{name}.dds")));
        let info = src.open().unwrap();
        let layout = src.layout().unwrap();
        assert_eq!(info.num_levels, 6, "{name}: 37x22 has six levels");
        let stored = if name.starts_with("pil-") { 1 } else { 6 };
        assert_eq!(layout.levels.len(), stored, "{name}");
        let report = check_source(&src, true).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(report.levels, 6, "{name}");
        // The coarsest level is one texel, whatever made it.
        assert_eq!(read_level(&src, &info, 5).len(), info.format.texel_bytes());
    }
    let layout = DdsSource::new(fixture("nv-bc1.dds")).layout().unwrap();
    assert_eq!(layout.format_name, "FourCC DXT1");
    assert_eq!(layout.encoding, DdsEncoding::Blocks(BlockCodec::Bc1));
    let layout = DdsSource::new(fixture("pil-rgba.dds")).layout().unwrap();
    assert!(matches!(layout.encoding, DdsEncoding::Plain(p) if p.bgr && !p.padded));
    let layout = DdsSource::new(fixture("dtx-bc7.dds")).layout().unwrap();
    assert_eq!(layout.format_name, "DXGI_FORMAT_BC7_UNORM");
}

/// A DDS of random blocks (any bits are a valid block) with a DX10 header.
pub(super) fn random_blocks_file(
    path: &Path,
    format: ddsfile::DxgiFormat,
    (w, h): (u32, u32),
    levels: u32,
    seed: u64,
) -> Vec<u8> {
    let mut dds = ddsfile::Dds::new_dxgi(ddsfile::NewDxgiParams {
        height: h,
        width: w,
        depth: None,
        format,
        mipmap_levels: Some(levels),
        array_layers: None,
        caps2: None,
        is_cubemap: false,
        resource_dimension: ddsfile::D3D10ResourceDimension::Texture2D,
        alpha_mode: ddsfile::AlphaMode::Straight,
    })
    .unwrap();
    let mut state = seed;
    for b in dds.data.iter_mut() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *b = (state >> 56) as u8;
    }
    let data = dds.data.clone();
    let mut out = Vec::new();
    dds.write(&mut out).unwrap();
    std::fs::write(path, &out).unwrap();
    data
}

#[test]
fn every_codec_serves_each_block_where_the_format_puts_it() {
    use ddsfile::DxgiFormat as D;
    let cases = [
        (D::BC1_UNorm, BlockCodec::Bc1),
        (D::BC2_UNorm, BlockCodec::Bc2),
        (D::BC3_UNorm_sRGB, BlockCodec::Bc3),
        (D::BC4_UNorm, BlockCodec::Bc4 { signed: false }),
        (D::BC4_SNorm, BlockCodec::Bc4 { signed: true }),
        (D::BC5_UNorm, BlockCodec::Bc5 { signed: false }),
        (D::BC5_SNorm, BlockCodec::Bc5 { signed: true }),
        (D::BC6H_UF16, BlockCodec::Bc6h { signed: false }),
        (D::BC6H_SF16, BlockCodec::Bc6h { signed: true }),
        (D::BC7_UNorm, BlockCodec::Bc7),
    ];
    let (w, h) = (301u32, 157u32);
    for (i, (format, codec)) in cases.into_iter().enumerate() {
        let path = temp(&format!("random-{i}.dds"));
        let data = random_blocks_file(&path, format, (w, h), 4, i as u64 + 1);
        let src = DdsSource::new(&path);
        let info = src.open().unwrap();
        assert_eq!(info.format, codec.served_format(), "{format:?}");
        assert_eq!(src.layout().unwrap().srgb, format == D::BC3_UNorm_sRGB);
        let tb = info.format.texel_bytes();
        let bb = codec.block_bytes();
        let mut level_at = 0usize;
        for level in 0..4 {
            let (lw, lh) = mip_level_size(w, h, level);
            let served = read_level(&src, &info, level);
            let bw = lw.div_ceil(4) as usize;
            let mut texels = [0u8; 256];
            for by in 0..lh.div_ceil(4) as usize {
                for bx in 0..bw {
                    let at = level_at + (by * bw + bx) * bb;
                    codec.decode_block(&data[at..at + bb], &mut texels[..16 * tb]);
                    for k in 0..16 {
                        let (x, y) = (bx * 4 + k % 4, by * 4 + k / 4);
                        if x < lw as usize && y < lh as usize {
                            let s = &served[(y * lw as usize + x) * tb..][..tb];
                            assert_eq!(
                                s,
                                &texels[k * tb..][..tb],
                                "{format:?} level {level} ({x}, {y})"
                            );
                        }
                    }
                }
            }
            // Any rectangle reads as the same texels as the whole level.
            for (x, y, rw, rh) in [
                (0, 0, 1, 1),
                (3, 5, 9, 2),
                (lw / 3, lh / 2, lw - lw / 3, 1),
                (lw - 1, lh - 1, 1, 1),
            ] {
                let mut part = vec![0u8; (rw * rh) as usize * tb];
                let region = TileRegion {
                    level,
                    x,
                    y,
                    width: rw,
                    height: rh,
                };
                src.read_region(region, &mut part, rw as usize * tb)
                    .unwrap();
                for j in 0..rh as usize {
                    let whole = &served[((y as usize + j) * lw as usize + x as usize) * tb..]
                        [..rw as usize * tb];
                    assert_eq!(
                        &part[j * rw as usize * tb..][..rw as usize * tb],
                        whole,
                        "{format:?} level {level}"
                    );
                }
            }
            level_at += lh.div_ceil(4) as usize * bw * bb;
        }
        // Levels 4.. are generated from level 3.
        assert_eq!(info.num_levels, 9);
        check_source(&src, false).unwrap();
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn signed_and_hdr_codecs_serve_floats() {
    let f = BlockCodec::Bc4 { signed: true }.served_format();
    assert_eq!((f.texel_type, f.channels), (TexelType::F32, 1));
    let f = BlockCodec::Bc6h { signed: false }.served_format();
    assert_eq!((f.texel_type, f.channels), (TexelType::F16, 4));
    // A BC4 SNORM block with both endpoints at -127 decodes to -1 everywhere.
    let mut out = [0u8; 64];
    BlockCodec::Bc4 { signed: true }.decode_block(&[0x81, 0x81, 0, 0, 0, 0, 0, 0], &mut out);
    for t in out.chunks_exact(4) {
        assert_eq!(f32::from_le_bytes(t.try_into().unwrap()), -1.0);
    }
}

#[test]
fn plain_texels_are_reordered_and_widened() {
    let bgrx = PlainTexels {
        texel_type: TexelType::U8,
        channels: 4,
        bgr: true,
        padded: true,
    };
    let mut out = [0u8; 8];
    bgrx.convert_row(&[1, 2, 3, 4, 5, 6, 7, 8], &mut out, 2);
    assert_eq!(out, [3, 2, 1, 255, 7, 6, 5, 255]);
    let bgr = PlainTexels {
        texel_type: TexelType::U8,
        channels: 3,
        bgr: true,
        padded: false,
    };
    bgr.convert_row(&[1, 2, 3, 4, 5, 6], &mut out, 2);
    assert_eq!(out, [3, 2, 1, 255, 6, 5, 4, 255]);
    let rgb32f = PlainTexels {
        texel_type: TexelType::F32,
        channels: 3,
        bgr: false,
        padded: false,
    };
    let src: Vec<u8> = [0.5f32, 2.0, -1.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut out = [0u8; 16];
    rgb32f.convert_row(&src, &mut out, 1);
    let got: Vec<f32> = out
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [0.5, 2.0, -1.0, 1.0]);
}

/// The header of `fixture`, with `edit` applied to its bytes, as a new file.
fn edited(fixture_name: &str, out: &str, edit: impl Fn(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(fixture(fixture_name)).unwrap();
    edit(&mut bytes);
    let path = temp(out);
    std::fs::write(&path, &bytes).unwrap();
    path
}

fn open_error(path: &Path) -> String {
    let e = DdsSource::new(path).open().unwrap_err().0;
    assert!(
        e.contains(&*path.display().to_string()),
        "names the file: {e}"
    );
    e
}

fn put(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn damaged_headers_are_clear_errors() {
    // Offsets in the file: magic 0, size 4, flags 8, height 12, width 16, pitch 20,
    // depth 24, mips 28, pixel format 76 (fourcc 84), caps2 112, DX10 header 128.
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("nv-bc1.dds", Box::new(|b| put(b, 28, 20)), "mip levels"),
        ("nv-bc1.dds", Box::new(|b| put(b, 16, 0)), "image size"),
        (
            "nv-bc1.dds",
            Box::new(|b| put(b, 16, 1 << 20)),
            "image size",
        ),
        ("nv-bc1.dds", Box::new(|b| put(b, 112, 0x200)), "cube map"),
        ("nv-bc1.dds", Box::new(|b| put(b, 112, 0x200000)), "volume"),
        (
            "nv-bc1.dds",
            Box::new(|b| put(b, 84, u32::from_le_bytes(*b"DXT9"))),
            "DXT9",
        ),
        ("nv-bc1.dds", Box::new(|b| put(b, 4, 100)), "bad header"),
        ("nv-bc1.dds", Box::new(|b| b[0] = b'X'), "not a DDS file"),
        ("nv-bc1.dds", Box::new(|b| b.truncate(700)), "truncated"),
        ("dtx-bc7.dds", Box::new(|b| put(b, 128, 0)), "not served"),
        ("dtx-bc7.dds", Box::new(|b| put(b, 128, 100_000)), "DX10"),
        ("dtx-bc7.dds", Box::new(|b| put(b, 140, 6)), "array"),
        ("dtx-bc7.dds", Box::new(|b| put(b, 132, 4)), "volume"),
        ("dtx-bc7.dds", Box::new(|b| put(b, 136, 4)), "cube map"),
        ("dtx-bc7.dds", Box::new(|b| b.truncate(140)), "truncated"),
        ("pil-rgba.dds", Box::new(|b| put(b, 88, 17)), "pixel format"),
    ];
    for (i, (name, edit, expect)) in cases.into_iter().enumerate() {
        let path = edited(name, &format!("bad-{i}.dds"), edit);
        let e = open_error(&path);
        assert!(e.contains(expect), "case {i}: {e}");
    }
}

#[test]
fn the_size_limits_bound_what_a_header_can_make_it_allocate() {
    // 16384×16384 BC1 declares 128 MiB of blocks and 1 GiB served: the header alone is
    // refused (the file is far too short anyway, but the limit is checked first).
    let path = edited("nv-bc1.dds", "huge.dds", |b| {
        put(b, 12, 16384);
        put(b, 16, 16384);
        put(b, 28, 1);
    });
    let options = DdsOptions {
        limits: SizeLimits {
            max_image_bytes: 64 << 20,
            ..SizeLimits::default()
        },
        ..DdsOptions::default()
    };
    let e = DdsSource::with_options(&path, options)
        .open()
        .unwrap_err()
        .0;
    assert!(e.contains("max_image_bytes"), "{e}");
    // With the default limits the header is within them and the file is too short.
    let e = open_error(&path);
    assert!(e.contains("truncated"), "{e}");
    // A DDS without mips whose generated levels would pass the limit is refused at open.
    let path = edited("pil-rgba.dds", "nomips-limit.dds", |_| {});
    let options = DdsOptions {
        limits: SizeLimits {
            max_image_bytes: 1000,
            ..SizeLimits::default()
        },
        ..DdsOptions::default()
    };
    let e = DdsSource::with_options(&path, options)
        .open()
        .unwrap_err()
        .0;
    assert!(e.contains("max_image_bytes"), "{e}");
}

#[test]
fn truncation_at_any_length_is_an_error_never_a_panic() {
    let whole = std::fs::read(fixture("nv-bc3.dds")).unwrap();
    let path = temp("cut.dds");
    for len in 0..whole.len() {
        std::fs::write(&path, &whole[..len]).unwrap();
        let src = DdsSource::new(&path);
        assert!(src.open().is_err(), "{len} bytes opened");
    }
}

#[test]
fn a_file_changed_on_disk_is_never_torn_and_an_open_sees_the_new_one() {
    let path = temp("changing.dds");
    std::fs::copy(fixture("nv-bc3.dds"), &path).unwrap();
    let src = DdsSource::new(&path);
    let info = src.open().unwrap();
    let before = read_level(&src, &info, 0);
    // Replaced by rename: reads go on serving the file opened, whole.
    let next = temp("changing.next");
    std::fs::copy(fixture("nv-bc1.dds"), &next).unwrap();
    std::fs::rename(&next, &path).unwrap();
    assert_eq!(read_level(&src, &info, 0), before);
    // A new open (what invalidate_texture does) serves the new file.
    let info = src.open().unwrap();
    assert_eq!(
        src.layout().unwrap().encoding,
        DdsEncoding::Blocks(BlockCodec::Bc1)
    );
    let bc1 = read_level(&src, &info, 0);
    assert_ne!(bc1, before);
    // Rewritten in place (shorter): reads fail, saying why, until the next open.
    let bytes = std::fs::read(fixture("nv-bc1.dds")).unwrap();
    std::fs::write(&path, &bytes[..600]).unwrap();
    let mut buf = vec![0u8; bc1.len()];
    let region = TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: 37,
        height: 22,
    };
    let e = src.read_region(region, &mut buf, 37 * 4).unwrap_err().0;
    assert!(e.contains("changed on disk"), "{e}");
    assert!(src.open().unwrap_err().0.contains("truncated"));
}

#[test]
fn the_engine_samples_a_dds_texture_in_a_budget_of_a_few_pages() {
    use crate::cache::TextureCache;
    use crate::sampling::SampleOptions;
    use crate::textures::{FilterMode, MipFilter, TextureDesc};
    use crate::LoaderOptions;
    let path = temp("engine-bc7.dds");
    random_blocks_file(&path, ddsfile::DxgiFormat::BC7_UNorm, (517, 300), 3, 99);
    let src = DdsSource::new(&path);
    let info = src.open().unwrap();
    let cache = TextureCache::new(LoaderOptions {
        max_texture_memory: 8 * crate::ids::TILE_BYTES as u64,
        fill_threads: 1,
        ..Default::default()
    })
    .unwrap();
    let desc = TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        ..TextureDesc::default()
    };
    let tex = cache.texture_for_path(&path, desc).unwrap();
    let options = SampleOptions::default();
    let mut lookups = 0;
    for level in 0..info.num_levels {
        let data = read_level(&src, &info, level);
        let (w, h) = mip_level_size(info.width, info.height, level);
        for i in 0..97u32 {
            let (x, y) = ((i * 131 + level * 7) % w, (i * 71 + level * 3) % h);
            let s = (x as f32 + 0.5) / w as f32;
            let t = (y as f32 + 0.5) / h as f32;
            let got = cache.tex2d_lod(tex, s, t, level as f32, &options);
            let want = info.format.decode(&data[((y * w + x) * 4) as usize..]);
            assert!(got.resident);
            assert_eq!(got.value, want, "level {level} ({x}, {y})");
            lookups += 1;
        }
    }
    assert!(lookups > 900);
    let stats = cache.stats();
    assert!(
        stats.evictions > 0,
        "the budget of 8 pages thrashed: {stats:?}"
    );
    assert_eq!(stats.failed_textures, 0);
}
