//! `convert`'s inputs read through core's sources: level 0 of any of them
//! ([`core_level_0`]: DDS and TIFF), and a TIFF input (maketx `.tx` or a plain TIFF)
//! through core's TIFF source ([`load_tiff`]). Level 0 is what the engine serves — signed
//! samples as float, JPEG chunks decoded, unassociated alpha associated, the first four of
//! more samples — so that `convert` and a texture of the same file agree (one home for the
//! rules: `demandtex::sources::tiff`). A TIFF the source does not serve (CCITT fax compression,
//! 32-bit integers, …) falls back to the `image` crate's decoder.

use super::load::{finish, LoadOptions, Loaded};
use crate::error::CliError;
use demandtex::sources::tiff::{TiffOptions, TiffSource};
use demandtex::sources::{ImageInfo, ImageSource, SizeLimits};
use demandtex::textures::{TexelType, TileRegion};
use std::path::Path;

/// Level 0 of the TIFF at `path` through core's source, or `Ok(Err(reason))` when the
/// source does not serve (or cannot open) the file, for the caller to try another decoder.
pub fn load_tiff(path: &Path, options: &LoadOptions) -> Result<Result<Loaded, String>, CliError> {
    let failed = |e: &dyn std::fmt::Display| CliError::Io(e.to_string());
    let source = TiffSource::with_options(
        path,
        TiffOptions {
            limits: options.limits,
            warn_generated_levels: false,
            ..TiffOptions::default()
        },
    );
    let info = match source.open() {
        Ok(info) => info,
        Err(e) => return Ok(Err(e.0)),
    };
    let samples = source.layout().map_err(|e| failed(&e))?.samples;
    // Three samples are served widened to four: keep three.
    let channels = samples.served_samples() as usize;
    let data = core_level_0(path, &source, &info, channels, &options.limits)?;
    let integer = matches!(info.format.texel_type, TexelType::U8 | TexelType::U16);
    let mut options = options.clone();
    if options.premultiply && samples.unassociated_alpha {
        tracing::warn!(
            "--premultiply ignored: {}'s unassociated alpha is associated when read",
            path.display()
        );
        options.premultiply = false;
    }
    finish(
        path,
        "TIFF",
        (info.width, info.height, channels as u32),
        data,
        integer,
        &options,
    )
    .map(Ok)
}

/// Level 0 of `source` (a core source of `path`, opened as `info`) as floats, the first
/// `channels` of each texel's RGBA, refused first if it could take more than
/// `limits.max_image_bytes` as floats. `convert`'s inputs read through core (DDS, TIFF).
pub(crate) fn core_level_0(
    path: &Path,
    source: &dyn ImageSource,
    info: &ImageInfo,
    channels: usize,
    limits: &SizeLimits,
) -> Result<Vec<f32>, CliError> {
    let (w, h) = (info.width, info.height);
    limits
        .check_image_size(
            format_args!("{}: the decoded image", path.display()),
            (w.into(), h.into()),
            16,
        )
        .map_err(CliError::Io)?;
    let tb = info.format.texel_bytes();
    let mut bytes = vec![0u8; w as usize * h as usize * tb];
    let level0 = TileRegion {
        level: 0,
        x: 0,
        y: 0,
        width: w,
        height: h,
    };
    source
        .read_region(level0, &mut bytes, w as usize * tb)
        .map_err(|e| CliError::Io(e.to_string()))?;
    let mut data = Vec::with_capacity(w as usize * h as usize * channels);
    for texel in bytes.chunks_exact(tb) {
        data.extend_from_slice(&info.format.decode(texel)[..channels]);
    }
    Ok(data)
}
