//! `AddressMode::FromFile`: a texture samples with the wrap modes its file names (maketx's
//! `wrapmodes` in a `.tx` and in an OpenEXR file, files made by OpenImageIO's maketx in
//! tests/fixtures), and black where the file names none, as OpenImageIO's `WrapDefault`
//! and USD's `useMetadata` do. Lookups equal those of a texture given the same modes
//! explicitly, bit for bit, on both axes, inside and outside [0, 1).

mod common;

use common::TestDir;
use demandtex::sources::exr::{write_mip_exr, WriteOptions};
use demandtex::sources::FloatImage;
use demandtex::textures::{AddressMode, FilterMode, MipFilter, TextureDesc};
use demandtex::{LoaderOptions, SampleOptions, TextureCache};
use std::path::{Path, PathBuf};
use AddressMode::*;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(path)
}

fn desc(address: [AddressMode; 2]) -> TextureDesc {
    TextureDesc {
        address,
        filter: FilterMode::Linear,
        mip_filter: MipFilter::Linear,
        ..TextureDesc::default()
    }
}

/// Lookups over a grid from -0.6 to 1.6 on both axes at a few levels of detail, through a
/// cache of their own (`texture_for_path` keeps the first description of a path).
fn lookups(path: &Path, address: [AddressMode; 2]) -> Vec<[f32; 4]> {
    let cache = cache();
    let tex = cache.texture_for_path(path, desc(address)).unwrap();
    let o = SampleOptions::default();
    let mut out = Vec::new();
    for lod in [0.0, 1.5, 3.0] {
        for j in 0..23 {
            for i in 0..23 {
                let (s, t) = (-0.6 + i as f32 * 0.1 + 0.013, -0.6 + j as f32 * 0.1 + 0.007);
                let v = cache.tex2d_lod(tex, s, t, lod, &o);
                assert!(v.resident, "{} ({s}, {t}) lod {lod}", path.display());
                out.push(v.value);
            }
        }
    }
    out
}

fn cache() -> TextureCache {
    TextureCache::new(LoaderOptions {
        max_texture_memory: 64 << 20,
        ..LoaderOptions::default()
    })
    .unwrap()
}

/// `path` sampled with `FromFile` on both axes equals `expected` given explicitly, and
/// differs from `other` (so the file's modes, not a default, made the difference).
fn check(path: &Path, expected: [AddressMode; 2], other: [AddressMode; 2]) {
    let from_file = lookups(path, [FromFile, FromFile]);
    let explicit = lookups(path, expected);
    let bits = |v: &[[f32; 4]]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
    assert_eq!(bits(&from_file), bits(&explicit), "{}", path.display());
    assert_ne!(
        bits(&from_file),
        bits(&lookups(path, other)),
        "{}",
        path.display()
    );
}

#[test]
fn maketx_tx_files_sample_with_their_wrapmodes() {
    // maketx --swrap periodic --twrap clamp
    check(
        &fixture("tx/rgb8_lzw_wrap.tx"),
        [Wrap, Clamp],
        [Border, Border],
    );
    // maketx's default: black,black.
    check(&fixture("tx/rgb8_zip.tx"), [Border, Border], [Wrap, Wrap]);
}

#[test]
fn maketx_openexr_files_sample_with_their_wrapmodes() {
    // maketx --wrap periodic
    check(
        &fixture("exr/rgba_float_piz.exr"),
        [Wrap, Wrap],
        [Border, Border],
    );
    check(
        &fixture("exr/rgb_half_zip.exr"),
        [Border, Border],
        [Clamp, Clamp],
    );
}

#[test]
fn a_file_without_wrapmodes_samples_black_outside_and_one_axis_may_be_explicit() {
    let dir = TestDir::new("file-wrap-modes", "none");
    let path = dir.path("plain.exr");
    let mut img = FloatImage::zeros(64, 64, 4);
    for (i, v) in img.data.iter_mut().enumerate() {
        *v = (i % 251) as f32 / 250.0 + 0.1;
    }
    write_mip_exr(&path, &img, &WriteOptions::default(), None).unwrap();
    check(&path, [Border, Border], [Wrap, Wrap]);
    // One axis from the file (none: black), the other explicit.
    assert_eq!(
        lookups(&path, [FromFile, Mirror]),
        lookups(&path, [Border, Mirror])
    );
    // And with the fixture's periodic,clamp: s periodic, t as given.
    let tx = fixture("tx/rgb8_lzw_wrap.tx");
    assert_eq!(
        lookups(&tx, [FromFile, Mirror]),
        lookups(&tx, [Wrap, Mirror])
    );
    assert_eq!(
        lookups(&tx, [Border, FromFile]),
        lookups(&tx, [Border, Clamp])
    );
}

/// Lookups by path (`tex2d_grad_path`, OIIO's `texture(filename, ...)`) sample with the
/// file's modes, as OIIO's `WrapDefault` does: a periodic/clamp `.tx` by path equals the
/// same file registered with those modes explicitly, and not with the old default (wrap).
#[test]
fn lookups_by_path_sample_with_the_file_modes() {
    let path = fixture("tx/rgb8_lzw_wrap.tx");
    let grid = |sample: &dyn Fn(f32, f32, [f32; 2]) -> [f32; 4]| -> Vec<u32> {
        let mut out = Vec::new();
        for d in [0.002f32, 0.02, 0.1] {
            for j in 0..23 {
                for i in 0..23 {
                    let (s, t) = (-0.6 + i as f32 * 0.1 + 0.013, -0.6 + j as f32 * 0.1 + 0.007);
                    out.extend(sample(s, t, [d, 0.0]).map(f32::to_bits));
                }
            }
        }
        out
    };
    let o = SampleOptions::default();
    let by_path_cache = cache();
    let by_path = grid(&|s, t, dx| {
        let v = by_path_cache.tex2d_grad_path(&path, s, t, dx, [0.0, dx[0]], &o);
        assert!(v.resident);
        v.value
    });
    let explicit_with = |address: [AddressMode; 2]| {
        let cache = cache();
        let tex = cache.texture_for_path(&path, desc(address)).unwrap();
        grid(&|s, t, dx| cache.tex2d_grad(tex, s, t, dx, [0.0, dx[0]], &o).value)
    };
    assert_eq!(by_path, explicit_with([Wrap, Clamp]));
    assert_ne!(by_path, explicit_with([Wrap, Wrap]));
}
