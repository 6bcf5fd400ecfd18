//! Textures from caller pixels: copied and borrowed give the same texels, at every level.

use super::util::*;
use crate::options::*;
use crate::pixels::*;
use crate::status::*;
use crate::textures::*;
use std::ptr::null;

/// A deterministic byte pattern of `rows` rows of `row_bytes` bytes (padding included).
fn pattern(rows: usize, row_bytes: usize, seed: u32) -> Vec<u8> {
    (0..rows * row_bytes)
        .map(|i| {
            let mut h = (i as u32 ^ seed).wrapping_mul(0x9E37_79B9);
            h ^= h >> 13;
            (h.wrapping_mul(0x85EB_CA6B) >> 24) as u8
        })
        .collect()
}

/// Float pixels in [0, 1] as bytes.
fn float_pattern(count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|i| ((i as f32 * 0.618).fract()).to_le_bytes())
        .collect()
}

fn create(
    loader: &TestLoader,
    info: &DtexImageInfo,
    pixels: &[u8],
    row_bytes: usize,
    ownership: u32,
) -> Result<u32, (DtexStatus, String)> {
    let mut tex = DTEX_NO_TEXTURE;
    let desc = DtexTextureDesc {
        filter: DTEX_FILTER_POINT,
        ..Default::default()
    };
    // SAFETY: `pixels` holds the described rows (the tests size it so).
    let status = unsafe {
        dtex_texture_create_from_pixels(
            loader.0,
            info,
            pixels.as_ptr().cast(),
            row_bytes,
            ownership,
            &desc,
            &mut tex,
        )
    };
    if status == DTEX_STATUS_OK {
        Ok(tex)
    } else {
        assert_eq!(tex, DTEX_NO_TEXTURE, "untouched on error");
        Err((status, last_error()))
    }
}

fn check_copy_equals_borrow(info: DtexImageInfo, texel_bytes: usize, pad: usize, pixels: &[u8]) {
    let loader = TestLoader::new();
    let row_bytes = info.width as usize * texel_bytes + pad;
    assert!(pixels.len() >= row_bytes * info.height as usize);
    let copied = create(&loader, &info, pixels, row_bytes, DTEX_PIXELS_COPY).unwrap();
    let borrowed = create(&loader, &info, pixels, row_bytes, DTEX_PIXELS_BORROW).unwrap();
    let levels = 32 - info.width.max(info.height).leading_zeros() - 1;
    let points = lod_points(9, levels);
    let got = converge_with(&loader, |launch| {
        let mut v = lod_lookups(launch, copied, &points);
        v.extend(lod_lookups(launch, borrowed, &points));
        v
    });
    let (a, b) = got.split_at(points.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.value, y.value, "lookup {i} {:?} of {info:?}", points[i]);
    }
    // Not all the same colour (the test would prove nothing).
    assert!(a.iter().any(|s| s.value != a[0].value));
}

#[test]
fn borrowed_pixels_sample_exactly_as_copied_pixels() {
    // Odd sizes exercise the 3-wide boxes of the mip filter; padding exercises row_bytes.
    let info = DtexImageInfo {
        width: 333,
        height: 257,
        texel_type: DTEX_TEXEL_U8,
        channels: 4,
        num_levels: 0,
    };
    check_copy_equals_borrow(info, 4, 12, &pattern(257, 333 * 4 + 12, 1));
    let info = DtexImageInfo {
        width: 300,
        height: 45,
        texel_type: DTEX_TEXEL_F32,
        channels: 1,
        num_levels: 0,
    };
    check_copy_equals_borrow(info, 4, 0, &float_pattern(300 * 45));
    let info = DtexImageInfo {
        width: 1,
        height: 77,
        texel_type: DTEX_TEXEL_U16,
        channels: 2,
        num_levels: 0,
    };
    check_copy_equals_borrow(info, 4, 2, &pattern(77, 6, 2));
}

#[test]
fn copied_pixels_may_be_freed_at_once() {
    let loader = TestLoader::new();
    let info = DtexImageInfo {
        width: 64,
        height: 64,
        texel_type: DTEX_TEXEL_U8,
        channels: 1,
        num_levels: 1,
    };
    let pixels = pattern(64, 64, 3);
    let expected = pixels[64 * 10 + 20] as f32 * (1.0 / 255.0);
    let tex = create(&loader, &info, &pixels, 0, DTEX_PIXELS_COPY).unwrap();
    drop(pixels);
    let points = [
        ((20.5) / 64.0, (10.5) / 64.0, 0.0),
        (20.5 / 64.0, 10.5 / 64.0, 3.0),
    ];
    let got = converge_with(&loader, |l| lod_lookups(l, tex, &points));
    // One channel reads as (c, c, c, 1); without mips every lod reads level 0.
    assert_eq!(got[0].value, [expected, expected, expected, 1.0]);
    assert_eq!(got[1].value, got[0].value);
}

#[test]
fn three_channels_are_copied_with_alpha_one_but_not_borrowed() {
    let loader = TestLoader::new();
    let info = DtexImageInfo {
        width: 16,
        height: 8,
        texel_type: DTEX_TEXEL_U8,
        channels: 3,
        num_levels: 0,
    };
    let pixels = pattern(8, 48, 4);
    let tex = create(&loader, &info, &pixels, 0, DTEX_PIXELS_COPY).unwrap();
    let got = converge_with(&loader, |l| {
        lod_lookups(l, tex, &[(0.5 / 16.0, 0.5 / 8.0, 0.0)])
    });
    let p = &pixels[..3];
    assert_eq!(
        got[0].value,
        [
            p[0] as f32 * (1.0 / 255.0),
            p[1] as f32 * (1.0 / 255.0),
            p[2] as f32 * (1.0 / 255.0),
            1.0
        ]
    );
    let (status, msg) = create(&loader, &info, &pixels, 0, DTEX_PIXELS_BORROW).unwrap_err();
    assert_eq!(status, DTEX_STATUS_UNSUPPORTED, "{msg}");
    assert!(msg.contains("3 channels cannot be borrowed"), "{msg}");
}

#[test]
fn bad_pixel_descriptions_are_refused() {
    let loader = TestLoader::new();
    let pixels = pattern(64, 256, 5);
    let good = DtexImageInfo {
        width: 64,
        height: 64,
        texel_type: DTEX_TEXEL_U8,
        channels: 4,
        num_levels: 0,
    };
    let cases: [(Change<DtexImageInfo>, usize, u32, &str); 8] = [
        (|i| i.num_levels = 4, 0, DTEX_PIXELS_COPY, "num_levels 4"),
        (|i| i.channels = 5, 0, DTEX_PIXELS_COPY, "channels 5"),
        (|i| i.channels = 0, 0, DTEX_PIXELS_BORROW, "channels 0"),
        (|i| i.texel_type = 4, 0, DTEX_PIXELS_COPY, "texel_type 4"),
        (|i| i.width = 0, 0, DTEX_PIXELS_COPY, "size 0x64"),
        (|i| i.height = 65537, 0, DTEX_PIXELS_BORROW, "size"),
        (|_| {}, 255, DTEX_PIXELS_COPY, "row_bytes 255"),
        (|_| {}, 0, 2, "ownership 2"),
    ];
    for (change, row_bytes, ownership, what) in cases {
        let mut info = good;
        change(&mut info);
        let (status, msg) = create(&loader, &info, &pixels, row_bytes, ownership).unwrap_err();
        assert_eq!(status, DTEX_STATUS_INVALID_ARGUMENT, "{what}: {msg}");
        assert!(msg.contains(what), "{what}: {msg}");
    }
    // An absurd stride is refused before anything is read.
    let (status, msg) =
        create(&loader, &good, &pixels, usize::MAX / 8, DTEX_PIXELS_COPY).unwrap_err();
    assert_eq!(status, DTEX_STATUS_INVALID_ARGUMENT, "{msg}");
    let mut tex = 0;
    // SAFETY: NULL pixels and info are refused.
    unsafe {
        let s = dtex_texture_create_from_pixels(loader.0, &good, null(), 0, 0, null(), &mut tex);
        assert!(fails(s, DTEX_STATUS_INVALID_ARGUMENT).contains("pixels is NULL"));
        let s = dtex_texture_create_from_pixels(
            loader.0,
            null(),
            pixels.as_ptr().cast(),
            0,
            0,
            null(),
            &mut tex,
        );
        assert!(fails(s, DTEX_STATUS_INVALID_ARGUMENT).contains("info is NULL"));
    }
    assert_eq!(loader.stats().textures, 0);
    // The full count is accepted as "generate the chain".
    let info = DtexImageInfo {
        num_levels: 7,
        ..good
    };
    create(&loader, &info, &pixels, 0, DTEX_PIXELS_BORROW).unwrap();
}
