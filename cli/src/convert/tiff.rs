//! A TIFF input (maketx `.tx` or a plain TIFF) read through core's TIFF source: level 0 as
//! the engine serves it — signed samples as float, JPEG chunks decoded, unassociated alpha
//! associated, the first four of more samples — so that `convert` and a texture of the
//! same file agree (one home for the rules: `demandtex::sources::tiff`). A TIFF the source
//! does not serve (palette, CMYK, 1-bit, …) falls back to the `image` crate's decoder.

use super::load::{finish, LoadOptions, Loaded};
use crate::error::CliError;
use demandtex::sources::tiff::{TiffOptions, TiffSource};
use demandtex::sources::ImageSource;
use demandtex::textures::{TexelType, TileRegion};
use std::path::Path;

/// Level 0 of the TIFF at `path` through core's source, or `Ok(None)` (with core's reason
/// logged) when the source does not serve the file, for the caller to try another decoder.
pub fn load_tiff(path: &Path, options: &LoadOptions) -> Result<Option<Loaded>, CliError> {
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
        Err(e) => {
            tracing::debug!("{e}: trying the image crate's TIFF decoder");
            return Ok(None);
        }
    };
    let samples = source.layout().map_err(|e| failed(&e))?.samples;
    let (w, h) = (info.width, info.height);
    options
        .limits
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
        .map_err(|e| failed(&e))?;
    // Three samples are served widened to four: keep three.
    let channels = samples.served_samples() as usize;
    let mut data = Vec::with_capacity(w as usize * h as usize * channels);
    for texel in bytes.chunks_exact(tb) {
        data.extend_from_slice(&info.format.decode(texel)[..channels]);
    }
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
        (w, h, channels as u32),
        data,
        integer,
        &options,
    )
    .map(Some)
}
