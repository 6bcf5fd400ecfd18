//! The TIFF source against files `maketx` and `oiiotool` wrote (`tests/fixtures/tx`, with
//! OIIO's own decode of every level as reference texels), and against crafted bad files.

use super::*;
use crate::sources::check::check_source;
use crate::sources::fixture_refs::{self, levels};
use crate::textures::{AddressMode, TexelFormat, TexelType};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    fixture_refs::fixture("tx", name)
}

/// Compare the served texels with OIIO's (integers exactly after scaling, floats to the
/// nine decimals the reference prints).
fn assert_matches_oiio(name: &str, only_level0: bool) -> (TiffSource, ImageInfo) {
    let src = TiffSource::new(fixture(name));
    let info = src.open().unwrap();
    fixture_refs::assert_matches_oiio(&fixture(name), &src, &info, only_level0);
    (src, info)
}

#[test]
fn maketx_files_decode_as_oiio_reads_them_at_every_level() {
    let cases = [
        ("rgb8_zip.tx", TexelType::U8, 4, (200, 136)),
        ("rgb8_lzw_wrap.tx", TexelType::U8, 4, (100, 68)),
        ("rgba16_lzw.tx", TexelType::U16, 4, (160, 96)),
        ("rgb_half_separate.tx", TexelType::F32, 4, (64, 40)),
        ("gray_float.tx", TexelType::F32, 1, (130, 70)),
        ("rgba_float.tx", TexelType::F32, 4, (60, 40)),
        ("rgba8_none_tile32.tx", TexelType::U8, 4, (60, 40)),
        ("rgba8_packbits.tx", TexelType::U8, 4, (60, 40)),
        ("const.tx", TexelType::U8, 4, (64, 64)),
        // Signed integers, served as float v / max: `maketx --prman -d uint16` writes
        // signed 16-bit separate planes; `-d int8`.
        ("signed16_prman.tx", TexelType::F32, 4, (64, 40)),
        ("signed8.tx", TexelType::F32, 4, (64, 40)),
        // `maketx --bumpslopes`: six float channels, the first four served.
        ("bump6.tx", TexelType::F32, 4, (32, 32)),
    ];
    for (name, texel_type, channels, size) in cases {
        let (src, info) = assert_matches_oiio(name, false);
        assert_eq!((info.width, info.height), size, "{name}");
        assert_eq!(info.format.texel_type, texel_type, "{name}");
        assert_eq!(info.format.channels, channels, "{name}");
        assert_eq!(
            src.stored_levels().unwrap(),
            info.num_levels,
            "{name}: every level comes from the file"
        );
    }
}

#[test]
fn strip_tiffs_serve_level_0_from_the_file_and_generate_the_rest() {
    for name in ["strips8.tif", "strips16.tif"] {
        let (src, info) = assert_matches_oiio(name, true);
        assert_eq!(src.stored_levels().unwrap(), 1, "{name}");
        assert!(info.num_levels > 1);
        // The coarsest generated level is the mean of level 0, near OIIO's average.
        let data = levels(&src, &info);
        let last = info.format.decode(&data[info.num_levels as usize - 1]);
        assert!(last.iter().all(|v| (0.0..=1.0).contains(v)), "{last:?}");
    }
}

#[test]
fn palette_and_white_is_zero_files_decode_as_oiio_reads_them() {
    // ImageMagick's 8-bit palette TIFF: RGBA8 from the colour map (entry / 257).
    let (src, info) = assert_matches_oiio("palette8.tif", true);
    assert_eq!(info.format, TexelFormat::RGBA8);
    assert_eq!(src.stored_levels().unwrap(), 1);
    // White-is-zero grey (libtiff's `tiffset` on ImageMagick's grey): inverted.
    let (_, info) = assert_matches_oiio("minwhite8.tif", true);
    assert_eq!(info.format, TexelFormat::new(TexelType::U8, 1).unwrap());
    let first = TiffSource::new(fixture("minwhite8.tif"));
    let info = first.open().unwrap();
    let level0 = &levels(&first, &info)[0];
    assert_eq!(level0[0], 255, "a stored 0 is white");
}

#[test]
fn samples_of_fewer_than_8_bits_decode_as_oiio_reads_them() {
    // ImageMagick's 4-bit palette (served as RGBA8), 1-bit bilevel (LZW), 2-bit grey
    // (ZIP); libtiff's copies of the bilevel file with its bits reversed (FillOrder 2,
    // `tiffcp -f lsb2msb`) and of a 4-bit grey file in 16×16 tiles; and `tiffset`'s
    // white-is-zero bilevel file: every texel as OIIO reads it (grey `v · 255 / max`).
    let cases = [
        ("palette4.tif", TexelFormat::RGBA8),
        ("mono1.tif", TexelFormat::new(TexelType::U8, 1).unwrap()),
        ("mono1_lsb.tif", TexelFormat::new(TexelType::U8, 1).unwrap()),
        (
            "mono1_white.tif",
            TexelFormat::new(TexelType::U8, 1).unwrap(),
        ),
        ("grey2.tif", TexelFormat::new(TexelType::U8, 1).unwrap()),
        (
            "grey4_tiled.tif",
            TexelFormat::new(TexelType::U8, 1).unwrap(),
        ),
    ];
    for (name, format) in cases {
        let (src, info) = assert_matches_oiio(name, true);
        assert_eq!(info.format, format, "{name}");
        assert!(src.layout().unwrap().samples.bits < 8, "{name}");
    }
    let lsb = TiffSource::new(fixture("mono1_lsb.tif"));
    assert!(lsb.layout().unwrap().samples.lsb_first);
    // Both polarities and both bit orders hold the same image.
    let level0 = |name: &str| {
        let src = TiffSource::new(fixture(name));
        let info = src.open().unwrap();
        levels(&src, &info).swap_remove(0)
    };
    let mono = level0("mono1.tif");
    assert!(mono.iter().all(|&v| v == 0 || v == 255));
    assert!(mono.contains(&0) && mono.contains(&255));
    assert_eq!(level0("mono1_lsb.tif"), mono);
    let inverted: Vec<u8> = mono.iter().map(|v| 255 - v).collect();
    assert_eq!(level0("mono1_white.tif"), inverted);
}

#[test]
fn cmyk_files_are_served_as_rgb_as_oiio_converts_them() {
    // ImageMagick's CMYK (four 8-bit inks, ZIP), and libtiff's copy of it in separate
    // planes: RGB as OIIO reads them, (1 − C)(1 − K) rounded.
    for name in ["cmyk8.tif", "cmyk8_planes.tif"] {
        let (src, info) = assert_matches_oiio(name, true);
        assert_eq!(info.format, TexelFormat::RGBA8, "{name}");
        assert_eq!(src.layout().unwrap().samples.colour, StoredColour::Cmyk);
    }
    // Four 16-bit inks and unassociated alpha (ImageMagick). OIIO 2.4 serves such a file's
    // five samples as raw inks (its reference values here); demandtex converts the inks
    // as for four and associates the alpha, as for any unassociated alpha.
    let file = fixture("cmyka16.tif");
    let src = TiffSource::new(&file);
    let info = src.open().unwrap();
    assert_eq!(info.format, TexelFormat::new(TexelType::U16, 4).unwrap());
    let data = levels(&src, &info);
    let tb = info.format.texel_bytes();
    let mut kept_colour = 0;
    for (l, x, y, inks) in fixture_refs::reference(&file) {
        assert_eq!((l, inks.len()), (0, 5));
        let at = ((y * info.width + x) as usize) * tb;
        let got: Vec<u16> = data[0][at..at + tb]
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        let stored = |v: f32| (v * 65535.0).round() as u32;
        let ink = |c: usize| stored(inks[c]) as f32 * (1.0 / 65535.0);
        let alpha = stored(inks[4]);
        let want: Vec<u16> = (0..3)
            .map(|c| {
                let rgb = ((1.0 - ink(c)) * (1.0 - ink(3)) * 65535.0 + 0.5) as u32;
                ((rgb * alpha + 32767) / 65535) as u16
            })
            .chain([alpha as u16])
            .collect();
        assert_eq!(got, want, "({x}, {y}): inks {inks:?}");
        kept_colour += usize::from(want[..3].iter().any(|&v| v > 0) && alpha < 65535);
    }
    assert!(
        kept_colour > 10,
        "the fixture mixes colour and partial alpha"
    );
    // Other separations are refused, by name.
    let path = temp("separations_not_cmyk.tif");
    let tags = |ink_set: u32| {
        vec![
            (256, 3, vec![2]),
            (257, 3, vec![2]),
            (258, 3, vec![8; 4]),
            (259, 3, vec![1]),
            (262, 3, vec![5]),
            (273, 4, vec![8]),
            (277, 3, vec![4]),
            (278, 3, vec![2]),
            (279, 4, vec![16]),
            (332, 3, vec![ink_set]),
        ]
    };
    let inks = [255u8, 0, 0, 0, 0, 255, 0, 0, 0, 0, 255, 0, 0, 0, 0, 255];
    write_tiff(&path, &tags(2), &inks);
    let e = TiffSource::new(&path).open().unwrap_err().0;
    assert!(e.contains("separations"), "{e}");
    // The CMYK ink set: cyan, magenta, yellow, black.
    write_tiff(&path, &tags(1), &inks);
    let src = TiffSource::new(&path);
    let info = src.open().unwrap();
    let rgba: [u8; 16] = [
        0, 255, 255, 255, 255, 0, 255, 255, 255, 255, 0, 255, 0, 0, 0, 255,
    ];
    assert_eq!(levels(&src, &info)[0], rgba);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn every_page_and_the_mip_tail_pass_the_whole_file_check() {
    for name in [
        "rgb8_zip.tx",
        "rgba16_lzw.tx",
        "rgb_half_separate.tx",
        "gray_float.tx",
        "rgba8_none_tile32.tx",
        "strips8.tif",
        "palette8.tif",
        "minwhite8.tif",
    ] {
        let report = check_source(&TiffSource::new(fixture(name)), true)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(report.reads > 0 && report.stats.is_some(), "{name}");
    }
}

#[test]
fn oiio_metadata_gives_wrap_modes_and_the_base_colour_without_a_read() {
    let src = TiffSource::new(fixture("rgb8_lzw_wrap.tx"));
    let m = src.metadata().unwrap();
    assert_eq!(m.wrap, Some([AddressMode::Wrap, AddressMode::Clamp]));
    assert_eq!(m.texture_format.as_deref(), Some("Plain Texture"));
    let c = TiffSource::new(fixture("const.tx"));
    assert_eq!(c.read_base_color().unwrap(), Some([0.25, 0.5, 0.75, 1.0]));
    assert_eq!(c.stats().chunks_decoded, 0, "the base colour reads no tile");
    assert_eq!(
        c.metadata().unwrap().wrap,
        Some([AddressMode::Border, AddressMode::Border])
    );
    let avg = TiffSource::new(fixture("rgb8_zip.tx"))
        .read_base_color()
        .unwrap();
    assert!(avg.is_some_and(|a| a[3] == 1.0 && a[0] > 0.0));
}

#[test]
fn a_page_reads_only_the_tiles_it_covers_with_adjacent_tiles_in_one_read() {
    let src = TiffSource::new(fixture("rgb8_zip.tx"));
    let info = src.open().unwrap();
    // One 128×128 page of RGBA8 at the origin: 2×2 file tiles of 64×64.
    let mut page = vec![0u8; 128 * 128 * 4];
    let region = TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: 128,
        height: 128,
    };
    src.read_tile(region, &mut page, 128 * 4).unwrap();
    let s = src.stats();
    assert_eq!(s.chunks_decoded, 4);
    assert_eq!(s.reads, 2, "each row of tiles is one read");
    let l0 = &src.layout().unwrap().levels[0];
    let bytes: u64 = [0usize, 1, 4, 5].iter().map(|&i| l0.byte_counts[i]).sum();
    assert_eq!(s.compressed_bytes_read, bytes, "only those tiles' bytes");
    assert_eq!(info.format.tile_extent(), (128, 128));
}

/// A little-endian classic TIFF: one directory of `entries` (tag, type, values), with
/// `data` after the header; values that do not fit inline are placed after the data.
fn write_tiff(path: &Path, entries: &[(u16, u16, Vec<u32>)], data: &[u8]) {
    let mut out = b"II*\0".to_vec();
    let ifd_at = 8 + data.len() as u32;
    out.extend_from_slice(&ifd_at.to_le_bytes());
    out.extend_from_slice(data);
    let mut extra: Vec<u8> = Vec::new();
    let extra_at = ifd_at + 2 + 12 * entries.len() as u32 + 4;
    let mut ifd = (entries.len() as u16).to_le_bytes().to_vec();
    for (tag, kind, values) in entries {
        ifd.extend_from_slice(&tag.to_le_bytes());
        ifd.extend_from_slice(&kind.to_le_bytes());
        ifd.extend_from_slice(&(values.len() as u32).to_le_bytes());
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|&v| match kind {
                3 => (v as u16).to_le_bytes().to_vec(),
                _ => v.to_le_bytes().to_vec(),
            })
            .collect();
        if bytes.len() <= 4 {
            let mut b = bytes.clone();
            b.resize(4, 0);
            ifd.extend_from_slice(&b);
        } else {
            ifd.extend_from_slice(&(extra_at + extra.len() as u32).to_le_bytes());
            extra.extend_from_slice(&bytes);
        }
    }
    ifd.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&ifd);
    out.extend_from_slice(&extra);
    std::fs::write(path, out).unwrap();
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dtex-tiff-{}-{name}", std::process::id()))
}

#[test]
fn half_float_tiles_decode() {
    let path = temp("half.tif");
    let values: Vec<half::f16> = (0..16)
        .map(|i| half::f16::from_f32(i as f32 * 0.25))
        .collect();
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_tiff(
        &path,
        &[
            (256, 3, vec![4]),
            (257, 3, vec![4]),
            (258, 3, vec![16]),
            (259, 3, vec![1]),
            (262, 3, vec![1]),
            (277, 3, vec![1]),
            (322, 3, vec![4]),
            (323, 3, vec![4]),
            (324, 4, vec![8]),
            (325, 4, vec![32]),
            (339, 3, vec![3]),
        ],
        &data,
    );
    let src = TiffSource::new(&path);
    let info = src.open().unwrap();
    assert_eq!(info.format.texel_type, TexelType::F16);
    let l = levels(&src, &info);
    assert_eq!(l[0], data);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn unassociated_alpha_is_associated_as_openimageio_reads_it() {
    // 4×1 RGBA strips with ExtraSamples 2 (unassociated), 1 (associated) and 0
    // (unspecified). The expected texels are OpenImageIO 2.4.7's (`oiiotool --dumpdata`)
    // of the same files: `c · a / max` rounded for unassociated alpha; as stored otherwise.
    let path = temp("alpha.tif");
    let write = |extra: u32, bits: u32, data: &[u8]| {
        let (n, sb) = (4, bits / 8);
        let w = data.len() as u32 / (n * sb);
        write_tiff(
            &path,
            &[
                (256, 3, vec![w]),
                (257, 3, vec![1]),
                (258, 3, vec![bits; 4]),
                (259, 3, vec![1]),
                (262, 3, vec![2]),
                (273, 4, vec![8]),
                (277, 3, vec![4]),
                (278, 3, vec![1]),
                (279, 4, vec![data.len() as u32]),
                (338, 3, vec![extra]),
            ],
            data,
        );
    };
    let stored = [
        200u8, 100, 50, 128, 255, 255, 255, 1, 77, 180, 3, 254, 10, 20, 30, 0,
    ];
    let level_0 = || {
        let src = TiffSource::new(&path);
        let info = src.open().unwrap();
        levels(&src, &info).swap_remove(0)
    };
    write(2, 8, &stored);
    let associated = [100u8, 50, 25, 128, 1, 1, 1, 1, 77, 179, 3, 254, 0, 0, 0, 0];
    assert_eq!(level_0(), associated);
    for extra in [0, 1] {
        write(extra, 8, &stored);
        assert_eq!(level_0(), stored, "ExtraSamples {extra}");
    }
    let stored16: Vec<u8> = [60000u16, 30000, 100, 40000, 65535, 1, 2, 65535]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write(2, 16, &stored16);
    let want: Vec<u8> = [36622u16, 18311, 61, 40000, 65535, 1, 2, 65535]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(level_0(), want);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn jpeg_chunks_decode_as_openimageio_reads_them_to_the_decoders_rounding() {
    // JPEG strips (oiiotool) and tiles (libtiff's tiffcp), YCbCr with JPEGTables. Two JPEG
    // decoders (zune-jpeg here, libjpeg-turbo in OIIO) differ by a few levels at most.
    for name in ["jpeg_strips.tif", "jpeg_tiled.tif"] {
        let src = TiffSource::new(fixture(name));
        let info = src.open().unwrap();
        assert_eq!(info.format, TexelFormat::RGBA8, "{name}");
        assert_eq!((info.width, info.height), (100, 68), "{name}");
        let data = levels(&src, &info);
        let (mut worst, mut squares, mut count) = (0i32, 0f64, 0u32);
        for (l, x, y, want) in fixture_refs::reference(&fixture(name)) {
            if l > 0 {
                continue;
            }
            let at = ((y * info.width + x) * 4) as usize;
            for (c, &v) in want.iter().enumerate().take(3) {
                let d = i32::from(data[0][at + c]) - (v * 255.0).round() as i32;
                worst = worst.max(d.abs());
                squares += f64::from(d * d);
                count += 1;
            }
            assert_eq!(data[0][at + 3], 255, "{name}: opaque");
        }
        let psnr = 10.0 * (255.0f64 * 255.0 / (squares / f64::from(count))).log10();
        assert!(
            count > 0 && worst <= 4 && psnr >= 45.0,
            "{name}: worst {worst}, {psnr} dB"
        );
    }
}

#[test]
fn bad_files_are_errors_naming_the_file_never_panics_or_huge_allocations() {
    let path = temp("bad.tif");
    std::fs::write(&path, b"hello, not a tiff").unwrap();
    let e = TiffSource::new(&path).open().unwrap_err().0;
    assert!(e.contains("bad.tif") && e.contains("not a TIFF"), "{e}");
    // A header declaring a 65536² image of 65536² tiles: refused by the block limit.
    write_tiff(
        &path,
        &[
            (256, 4, vec![65536]),
            (257, 4, vec![65536]),
            (258, 3, vec![8]),
            (277, 3, vec![1]),
            (322, 4, vec![65536]),
            (323, 4, vec![65536]),
            (324, 4, vec![8]),
            (325, 4, vec![1]),
        ],
        &[0],
    );
    let e = TiffSource::new(&path).open().unwrap_err().0;
    assert!(e.contains("max_decoded_block_bytes"), "{e}");
    // Offsets past the end of the file.
    write_tiff(
        &path,
        &[
            (256, 3, vec![4]),
            (257, 3, vec![4]),
            (258, 3, vec![8]),
            (322, 3, vec![16]),
            (323, 3, vec![16]),
            (324, 4, vec![1 << 30]),
            (325, 4, vec![256]),
        ],
        &[0],
    );
    let e = TiffSource::new(&path).open().unwrap_err().0;
    assert!(e.contains("past the end"), "{e}");
    // Unsupported samples: 32-bit signed integers; more samples than are read.
    write_tiff(
        &path,
        &[
            (256, 3, vec![4]),
            (257, 3, vec![4]),
            (258, 3, vec![32]),
            (339, 3, vec![2]),
        ],
        &[0],
    );
    let e = TiffSource::new(&path).open().unwrap_err().0;
    assert!(e.contains("32-bit signed"), "{e}");
    write_tiff(
        &path,
        &[
            (256, 3, vec![4]),
            (257, 3, vec![4]),
            (258, 3, vec![8]),
            (277, 3, vec![65535]),
        ],
        &[0],
    );
    let e = TiffSource::new(&path).open().unwrap_err().0;
    assert!(e.contains("65535 samples per pixel"), "{e}");
    // Every truncation of a real file: an error or a served image, never a panic.
    let whole = std::fs::read(fixture("rgba8_packbits.tx")).unwrap();
    for cut in (0..whole.len()).step_by(97) {
        std::fs::write(&path, &whole[..cut]).unwrap();
        let src = TiffSource::new(&path);
        if let Ok(info) = src.open() {
            let _ = check_source(&src, false);
            assert!(info.width > 0);
        }
    }
    // JPEG chunks and tables cut short or overwritten: errors naming the chunk.
    let whole = std::fs::read(fixture("jpeg_tiled.tif")).unwrap();
    let mut damaged_reads = 0;
    for at in (8..whole.len()).step_by(61) {
        for damage in [0u8, 1] {
            let mut bytes = whole.clone();
            match damage {
                0 => bytes.truncate(at),
                _ => bytes[at..(at + 16).min(whole.len())].fill(0xA5),
            }
            std::fs::write(&path, &bytes).unwrap();
            let src = TiffSource::new(&path);
            if src.open().is_ok() {
                if let Err(e) = check_source(&src, false) {
                    assert!(e.to_string().contains("bad.tif"), "{e}");
                    damaged_reads += 1;
                }
            }
        }
    }
    assert!(damaged_reads > 0);
    std::fs::remove_file(&path).unwrap();
}
