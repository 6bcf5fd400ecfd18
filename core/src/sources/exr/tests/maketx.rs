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

#[test]
fn maketx_colour_hints_are_the_base_colour_when_every_channel_is_served_in_oiio_order() {
    use crate::sources::exr::{ChannelSelection, ExrOptions};
    // (file, base colour: `oiio:AverageColor` as the served format decodes it)
    let cases = [
        ("rgb_half_zip.exr", Some([0.699765, 0.649882, 0.6, 1.0])),
        ("rgba_float_piz.exr", Some([0.275, 0.125, 0.225, 0.375])),
        ("gray_half_tile32.exr", Some([1.425, 1.425, 1.425, 1.0])),
    ];
    for (name, want) in cases {
        let src = ExrSource::new(fixture("exr", name));
        src.open().unwrap();
        assert_eq!(src.read_base_color().unwrap(), want, "{name}");
    }
    // Channels in another order than the hint's, or only some of them: no hint.
    let path = fixture("exr", "rgba_float_piz.exr");
    for names in [vec!["B", "G", "R", "A"], vec!["R", "G", "B"]] {
        let options = ExrOptions {
            channels: ChannelSelection::Names(names.iter().map(|s| s.to_string()).collect()),
            ..ExrOptions::default()
        };
        let src = ExrSource::with_options(&path, options);
        src.open().unwrap();
        assert_eq!(src.read_base_color().unwrap(), None, "{names:?}");
    }
}
