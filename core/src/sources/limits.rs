//! Bounded allocation: the one rule every reader applies to the sizes a file declares
//! before it allocates for them. A corrupt or hostile header (a PNG claiming 100000²
//! pixels, an EXR scan-line file whose generated mip levels would take tens of GiB, a Ptex
//! face of 2^30 texels) gives a clear error naming the file, the size and the limit,
//! never an abort on a failed allocation.
//!
//! Two limits ([`SizeLimits`]), carried by the readers' options
//! ([`ExrOptions::limits`](super::ExrOptions::limits),
//! [`PtexOptions::limits`](super::ptex::PtexOptions::limits)) and used by
//! `demandtex convert` for its inputs:
//! - [`max_image_bytes`](SizeLimits::max_image_bytes): anything held whole in memory — the
//!   mip levels an EXR source generates, a Ptex face read whole, an image `convert` decodes;
//! - [`max_decoded_block_bytes`](SizeLimits::max_decoded_block_bytes): one block decoded at
//!   a time — an EXR tile or scan-line block, a Ptex data block or tile.

/// Default [`SizeLimits::max_image_bytes`]: 16 GiB.
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 16 << 30;
/// Default [`SizeLimits::max_decoded_block_bytes`]: 256 MiB.
pub const DEFAULT_MAX_DECODED_BLOCK_BYTES: u64 = 256 << 20;

/// The most bytes a reader allocates for what a file declares (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeLimits {
    /// Bytes of one image, level or face held whole in memory.
    pub max_image_bytes: u64,
    /// Bytes of one decoded block (tile, scan-line block, Ptex data block).
    pub max_decoded_block_bytes: u64,
}

impl Default for SizeLimits {
    fn default() -> Self {
        SizeLimits {
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_decoded_block_bytes: DEFAULT_MAX_DECODED_BLOCK_BYTES,
        }
    }
}

impl SizeLimits {
    /// Check `what` (e.g. "the generated mip levels"), `bytes` in all, against
    /// `max_image_bytes`. The error says what, how large, and which limit.
    pub fn check_image(&self, what: impl std::fmt::Display, bytes: u64) -> Result<(), String> {
        check(what, bytes, self.max_image_bytes, "max_image_bytes")
    }

    /// A `width × height` image of `bytes_per_texel` bytes, checked as
    /// [`check_image`](Self::check_image) (the product cannot overflow).
    pub fn check_image_size(
        &self,
        what: impl std::fmt::Display,
        (width, height): (u64, u64),
        bytes_per_texel: u64,
    ) -> Result<(), String> {
        let bytes = u128::from(width) * u128::from(height) * u128::from(bytes_per_texel);
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        self.check_image(
            format_args!("{what} ({width}×{height}, {bytes_per_texel} bytes per texel)"),
            bytes,
        )
    }

    /// Check one decoded block of `bytes` against `max_decoded_block_bytes`.
    pub fn check_block(&self, what: impl std::fmt::Display, bytes: u64) -> Result<(), String> {
        check(
            what,
            bytes,
            self.max_decoded_block_bytes,
            "max_decoded_block_bytes",
        )
    }
}

fn check(what: impl std::fmt::Display, bytes: u64, limit: u64, name: &str) -> Result<(), String> {
    if bytes <= limit {
        return Ok(());
    }
    Err(format!(
        "{what} would take {bytes} bytes, over the {name} limit of {limit} bytes (a corrupt \
         header, or raise SizeLimits::{name})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_within_the_limits_pass_and_others_say_what_and_which_limit() {
        let l = SizeLimits {
            max_image_bytes: 1000,
            max_decoded_block_bytes: 100,
        };
        assert!(l.check_image("x", 1000).is_ok());
        let e = l.check_image("the levels", 1001).unwrap_err();
        assert!(e.contains("the levels would take 1001 bytes") && e.contains("max_image_bytes"));
        assert!(l.check_block("a tile", 100).is_ok());
        assert!(l
            .check_block("a tile", 101)
            .unwrap_err()
            .contains("max_decoded_block_bytes"));
        // No overflow: 2^40 × 2^40 × 16 is refused, not wrapped to something small.
        let e = SizeLimits::default()
            .check_image_size("png", (1 << 40, 1 << 40), 16)
            .unwrap_err();
        assert!(e.contains(&u64::MAX.to_string()), "{e}");
        assert!(SizeLimits::default()
            .check_image_size("ok", (16384, 16384), 16)
            .is_ok());
    }
}
