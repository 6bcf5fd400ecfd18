//! OpenEXR textures written by OpenImageIO's maketx (`tests/fixtures/exr`), compared with
//! OIIO's own decode of every level (`.ref`), and maketx's fingerprint (`oiio:SHA-1`).

use crate::sources::exr::ExrSource;
use crate::sources::fixture_refs::{assert_matches_oiio, fixture};
use crate::sources::ImageSource;
use crate::textures::TexelType;

const SHA_RGB: &str = "0C9FE3549F5E83E49B4B8557FFC652B5C3C0C62D";

#[test]
fn maketx_exr_files_decode_as_oiio_reads_them_at_every_level() {
    // (file, served type, channels, size, fingerprint)
    let cases = [
        (
            "rgb_half_zip.exr",
            TexelType::F16,
            4,
            (200, 136),
            Some(SHA_RGB),
        ),
        (
            "rgb_half_zips.exr",
            TexelType::F16,
            4,
            (200, 136),
            Some(SHA_RGB),
        ),
        // B44 is lossy: the same fingerprint, other texels, so none is taken.
        ("rgb_half_b44.exr", TexelType::F16, 4, (200, 136), None),
        (
            "rgba_float_piz.exr",
            TexelType::F32,
            4,
            (160, 96),
            Some("73423FB0E81BAA19072B103672D30A70695FA33A"),
        ),
        (
            "gray_half_tile32.exr",
            TexelType::F16,
            1,
            (130, 70),
            Some("AC0DBFEE2CE86888A621AB7953A5F3A94824C3BE"),
        ),
    ];
    for (name, texel_type, channels, size, fingerprint) in cases {
        let path = fixture("exr", name);
        let src = ExrSource::new(&path);
        let info = src.open().unwrap();
        assert_eq!((info.width, info.height), size, "{name}");
        assert_eq!(info.format.texel_type, texel_type, "{name}");
        assert_eq!(info.format.channels, channels, "{name}");
        assert_eq!(
            src.opened().unwrap().stored_levels,
            info.num_levels,
            "{name}: every level comes from the file"
        );
        let compared = assert_matches_oiio(&path, &src, &info, false);
        assert!(compared > 100, "{name}: {compared} texels");
        let identity = src.content_identity().unwrap();
        assert_eq!(identity.fingerprint.as_deref(), fingerprint, "{name}");
    }
}
