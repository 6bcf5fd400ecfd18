//! A TIFF input (maketx `.tx` or a plain TIFF) read through core's TIFF source: level 0 as
//! the engine serves it — signed samples as float, JPEG chunks decoded, unassociated alpha
//! associated, the first four of more samples — so that `convert` and a texture of the
//! same file agree (one home for the rules: `demandtex::sources::tiff`). A TIFF the source
//! does not serve (palette, CMYK, 1-bit, …) falls back to the `image` crate's decoder.

use super::load::{finish, LoadOptions, Loaded};
use crate::error::CliError;
use demandtex::sources::tiff::{TiffOptions, TiffSource};
use demandtex::sources::ImageSource;
use demandtex::textures::TexelType;
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
    let data = super::load::core_level_0(path, &source, &info, channels, &options.limits)?;
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
