//! Checks every source shares: describing a full-chain image and validating a read's
//! region, row stride and destination before anything is written.

use super::{ImageInfo, SourceError};
use crate::textures::{full_mip_levels, mip_level_size, TexelFormat, TileRegion, MAX_TEXTURE_SIZE};

/// Describe a `width × height` image with a full mip chain, checking the size and format.
pub(crate) fn full_chain_info(
    width: u32,
    height: u32,
    format: TexelFormat,
) -> Result<ImageInfo, SourceError> {
    if width == 0 || height == 0 || width > MAX_TEXTURE_SIZE || height > MAX_TEXTURE_SIZE {
        return Err(SourceError(format!(
            "image size {width}×{height} (each side must be 1..={MAX_TEXTURE_SIZE})"
        )));
    }
    if TexelFormat::new(format.texel_type, format.channels).is_err() {
        return Err(SourceError(format!(
            "{} channels (1, 2 or 4 are supported)",
            format.channels
        )));
    }
    Ok(ImageInfo {
        width,
        height,
        format,
        num_levels: full_mip_levels(width, height),
    })
}

/// Check a read of `region` from an image described by `info` into a destination of
/// `dest_len` bytes with rows `row_bytes` apart. Returns the level's width and height.
///
/// Rejects a level the image does not have, a region that leaves its level, rows shorter
/// than the region's width and a destination too small for the last row. An empty region
/// inside its level passes whatever the stride and destination. Sources outside the crate
/// (the C ABI's borrowed pixels) use it too.
pub fn check_read(
    info: &ImageInfo,
    region: TileRegion,
    dest_len: usize,
    row_bytes: usize,
) -> Result<(u32, u32), SourceError> {
    let (lw, lh) = check_within(info, region)?;
    if region.width == 0 || region.height == 0 {
        return Ok((lw, lh));
    }
    // u128: a huge stride times 65535 rows must not overflow.
    let used_row = region.width as u128 * info.format.texel_bytes() as u128;
    check_rows(region, region.height, used_row, dest_len, row_bytes)?;
    Ok((lw, lh))
}

/// [`check_read`] for a read of the 4×4 blocks of `codec` covering `region`
/// ([`super::ImageSource::read_blocks`]): the region starts on a block (x and y multiples
/// of 4), and rows of blocks are `row_bytes` apart.
pub(crate) fn check_block_read(
    info: &ImageInfo,
    codec: crate::textures::BlockCodec,
    region: TileRegion,
    dest_len: usize,
    row_bytes: usize,
) -> Result<(u32, u32), SourceError> {
    let (lw, lh) = check_within(info, region)?;
    if region.x % 4 != 0 || region.y % 4 != 0 {
        return Err(SourceError(format!(
            "a read of blocks at ({}, {}), not on a 4×4 block",
            region.x, region.y
        )));
    }
    if region.width == 0 || region.height == 0 {
        return Ok((lw, lh));
    }
    let used_row = codec.row_bytes(region.width) as u128;
    check_rows(
        region,
        region.height.div_ceil(4),
        used_row,
        dest_len,
        row_bytes,
    )?;
    Ok((lw, lh))
}

/// The level exists and the region lies inside it; returns the level's size.
fn check_within(info: &ImageInfo, region: TileRegion) -> Result<(u32, u32), SourceError> {
    if region.level >= info.num_levels {
        return Err(SourceError(format!(
            "level {} requested from an image with {} levels",
            region.level, info.num_levels
        )));
    }
    let (lw, lh) = mip_level_size(info.width, info.height, region.level);
    if region.x as u64 + region.width as u64 > lw as u64
        || region.y as u64 + region.height as u64 > lh as u64
    {
        return Err(SourceError(format!(
            "region {}×{} at ({}, {}) leaves level {} ({lw}×{lh})",
            region.width, region.height, region.x, region.y, region.level
        )));
    }
    Ok((lw, lh))
}

/// `rows` rows of `used_row` bytes, `row_bytes` apart, fit a destination of `dest_len`.
fn check_rows(
    region: TileRegion,
    rows: u32,
    used_row: u128,
    dest_len: usize,
    row_bytes: usize,
) -> Result<(), SourceError> {
    if (row_bytes as u128) < used_row {
        return Err(SourceError(format!(
            "row stride of {row_bytes} bytes is shorter than a {}-texel row ({used_row} bytes)",
            region.width
        )));
    }
    let needed = (rows as u128 - 1) * row_bytes as u128 + used_row;
    if (dest_len as u128) < needed {
        return Err(SourceError(format!(
            "destination of {dest_len} bytes is too small for a {}×{} region \
             ({needed} bytes needed)",
            region.width, region.height
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_read_handles_extreme_strides_without_overflow() {
        let info = full_chain_info(65536, 65536, TexelFormat::RGBA32F).unwrap();
        let r = TileRegion {
            level: 0,
            x: 0,
            y: 0,
            width: 65536,
            height: 65536,
        };
        assert!(check_read(&info, r, 1024, usize::MAX).is_err());
        assert!(check_read(&info, r, usize::MAX, 65536 * 16).is_ok());
    }
}
