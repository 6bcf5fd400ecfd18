//! Radiance HDR, Targa and BMP files other tools wrote (`tests/fixtures/img/`: oiiotool,
//! ImageMagick, and Targa files made byte by byte for OpenImageIO's alpha rules), served
//! as OpenImageIO 2.4.7 reads them: level 0 equals its decode texel for texel, alpha
//! associated as it associates it.

use super::detect::{detect_format, file_source, FileFormat};
use super::fixture_refs::{assert_matches_oiio, fixture};

/// Every fixture of `tests/fixtures/img` with its expected format.
const FIXTURES: &[(&str, FileFormat)] = &[
    ("oiio.hdr", FileFormat::Hdr),
    ("im_rle.hdr", FileFormat::Hdr),
    ("oiio_rle.tga", FileFormat::Tga),
    ("oiio_rgb.tga", FileFormat::Tga),
    ("im_bottomup.tga", FileFormat::Tga),
    ("im_grey.tga", FileFormat::Tga),
    ("im_grey_rle.tga", FileFormat::Tga),
    ("im_palette.tga", FileFormat::Tga),
    ("im_rgb16.tga", FileFormat::Tga),
    ("im_palette16.tga", FileFormat::Tga),
    ("crafted_premultiplied.tga", FileFormat::Tga),
    ("crafted_gamma.tga", FileFormat::Tga),
    ("crafted_zero_alpha.tga", FileFormat::Tga),
    ("crafted_zero_alpha_useful.tga", FileFormat::Tga),
    ("crafted_bottom_up.tga", FileFormat::Tga),
    ("im_rgba.bmp", FileFormat::Bmp),
    ("im_rgb.bmp", FileFormat::Bmp),
    ("im_palette4.bmp", FileFormat::Bmp),
    ("im_rgb565.bmp", FileFormat::Bmp),
];

#[test]
fn hdr_targa_and_bmp_files_serve_what_openimageio_reads() {
    for &(name, format) in FIXTURES {
        let path = fixture("img", name);
        assert_eq!(detect_format(&path).unwrap(), Some(format), "{name}");
        let src = file_source(&path);
        let info = src.open().unwrap_or_else(|e| panic!("{name}: {e}"));
        let compared = assert_matches_oiio(&path, &*src, &info, true);
        assert!(compared > 0, "{name}");
    }
}

#[test]
fn a_targa_file_is_known_by_its_extension_only() {
    let dir = std::env::temp_dir().join(format!("dtex-tga-ext-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(fixture("img", "oiio_rle.tga")).unwrap();
    let (tga, other) = (dir.join("a.tga"), dir.join("a.bin"));
    std::fs::write(&tga, &bytes).unwrap();
    std::fs::write(&other, &bytes).unwrap();
    assert_eq!(detect_format(&tga).unwrap(), Some(FileFormat::Tga));
    assert_eq!(detect_format(&other).unwrap(), None);
    let _ = std::fs::remove_dir_all(&dir);
}
