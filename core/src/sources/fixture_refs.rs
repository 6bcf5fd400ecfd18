//! Test support: the fixtures other tools wrote (`tests/fixtures/`), the reference texels
//! decoded from them by those tools (`NAME.ref`; for `tx/` and `exr/`, OpenImageIO's, made
//! by `tests/fixtures/oiio-ref.sh`), and a source's levels to compare them with.

use super::ImageSource;
use crate::textures::{mip_level_size, TexelType, TileRegion};
use std::path::{Path, PathBuf};

/// `tests/fixtures/DIR/NAME`.
pub(crate) fn fixture(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(dir)
        .join(name)
}

/// The `(level, x, y, values)` lines of the `.ref` file beside `file`.
pub(crate) fn reference(file: &Path) -> Vec<(u32, u32, u32, Vec<f32>)> {
    let text = std::fs::read_to_string(file.with_extension("ref")).unwrap();
    text.lines()
        .map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| v[i].parse::<u32>().unwrap();
            let values = v[3..].iter().map(|s| s.parse::<f32>().unwrap()).collect();
            (n(0), n(1), n(2), values)
        })
        .collect()
}

/// Level `level` of `src` as served, packed, read as one region (`src` is open and
/// described by `info`).
pub(crate) fn read_level(src: &dyn ImageSource, info: &super::ImageInfo, level: u32) -> Vec<u8> {
    let tb = info.format.texel_bytes();
    let region = TileRegion::whole_level(info.width, info.height, level);
    let row_bytes = region.width as usize * tb;
    let mut data = vec![0u8; row_bytes * region.height as usize];
    src.read_region(region, &mut data, row_bytes).unwrap();
    data
}

/// Every level of `src` as served, packed.
pub(crate) fn levels(src: &dyn ImageSource, info: &super::ImageInfo) -> Vec<Vec<u8>> {
    (0..info.num_levels)
        .map(|l| read_level(src, info, l))
        .collect()
}

/// Compare `src`'s texels (opened as `info`) with OIIO's in `file`'s `.ref`: integers
/// exactly after scaling, floats to the reference's nine printed decimals; RGB is served
/// with an opaque alpha; of more than four channels, the first four. Only level 0 when
/// `only_level0`. Returns how many texels were compared.
pub(crate) fn assert_matches_oiio(
    file: &Path,
    src: &dyn ImageSource,
    info: &super::ImageInfo,
    only_level0: bool,
) -> usize {
    let name = file.display();
    let data = levels(src, info);
    let tb = info.format.texel_bytes();
    let refs = reference(file);
    assert!(!refs.is_empty());
    let mut compared = 0;
    for (l, x, y, want) in refs {
        if only_level0 && l > 0 {
            continue;
        }
        let (w, _) = mip_level_size(info.width, info.height, l);
        let at = ((y * w + x) as usize) * tb;
        let got = info.format.decode(&data[l as usize][at..]);
        // A source serves up to four channels (the first four of more).
        let served = want.len().min(4);
        for (c, &v) in want.iter().enumerate().take(served) {
            let g = got[c];
            let ok = match info.format.texel_type {
                TexelType::U8 => (g * 255.0).round() == (v * 255.0).round(),
                TexelType::U16 => (g * 65535.0).round() == (v * 65535.0).round(),
                // The reference prints nine decimals, read back into the nearest f32: a
                // float within half of the last decimal, plus one ulp.
                _ => g == v || (g - v).abs() <= 5.000_001e-10 + v.abs() * f32::EPSILON,
            };
            assert!(
                ok,
                "{name} level {l} ({x}, {y}) channel {c}: {g} vs OIIO {v}"
            );
        }
        if want.len() == 3 {
            assert_eq!(got[3], 1.0, "{name}: RGB is served with an opaque alpha");
        }
        compared += 1;
    }
    assert!(compared > 0);
    compared
}
