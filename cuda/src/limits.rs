//! What one texture may be on a CUDA device: the device's largest mipmapped 2D texture
//! (`CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH` / `_HEIGHT`, 32768² on
//! compute capability 5.0 and later) and at most [`MAX_MIPMAPPED_ARRAY_BYTES`] of texels
//! over all its levels. The backend refuses a larger texture with
//! [`Error::Unsupported`] before asking the driver (which answers only "invalid
//! argument"), so the texture fails with a message that says why; the engine then samples
//! it as its fallback colour.

use crate::CudaDeviceInfo;
use demandtex::error::{Error, Result};
use demandtex::textures::{full_mip_levels, TexelFormat};

/// The most texel bytes, over all levels, of one mipmapped array. OptiX Toolkit found that
/// the coarse levels of a larger mipmapped array sample as black
/// (`DemandLoading/src/Util/MipmappedArrayCheck.cpp`): float4 textures stop at 16384×8192,
/// half4 at 16384², ubyte4 at 32768×16384.
pub const MAX_MIPMAPPED_ARRAY_BYTES: u64 = 1 << 32;

/// The texel bytes of a `width × height` texture of `levels` levels (each level
/// `max(1, size >> l)` on each side).
pub fn mipmapped_bytes(width: u32, height: u32, levels: u32, format: TexelFormat) -> u64 {
    let texel = format.texel_bytes() as u64;
    (0..levels)
        .map(|l| {
            let w = (u64::from(width) >> l).max(1);
            let h = (u64::from(height) >> l).max(1);
            w * h * texel
        })
        .sum()
}

/// Whether a `width × height` texture in `format` can be one texture on `device`; the
/// error says which limit it passes. Its bytes are counted over the full mip chain, which a
/// sparse array holds whatever levels the texture uses (`SparseTexture::new`); a dense one
/// with fewer levels is at most a few texels smaller.
pub fn check_texture_fits(
    device: &CudaDeviceInfo,
    width: u32,
    height: u32,
    format: TexelFormat,
) -> Result<()> {
    let levels = full_mip_levels(width, height);
    let (max_w, max_h) = device.max_mipmapped_texture;
    if width > max_w || height > max_h {
        return Err(Error::Unsupported(format!(
            "a {width}×{height} texture is larger than {} takes as one mipmapped texture \
             ({max_w}×{max_h}); split it into UDIM tiles",
            device.name
        )));
    }
    let bytes = mipmapped_bytes(width, height, levels, format);
    if bytes > MAX_MIPMAPPED_ARRAY_BYTES {
        return Err(Error::Unsupported(format!(
            "a {width}×{height} {format} texture of {levels} levels holds {bytes} bytes of \
             texels, more than the {MAX_MIPMAPPED_ARRAY_BYTES} one CUDA mipmapped array samples \
             correctly; split it into UDIM tiles"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> CudaDeviceInfo {
        CudaDeviceInfo {
            ordinal: 0,
            name: "NVIDIA H100".into(),
            compute_capability: (9, 0),
            total_memory_bytes: 80 << 30,
            multiprocessors: 132,
            sparse_supported: true,
            vmm_supported: true,
            driver_version: 13000,
            max_mipmapped_texture: (32768, 32768),
        }
    }

    #[test]
    fn the_sizes_optix_toolkit_found_fit_and_the_next_ones_do_not() {
        let d = h100();
        let fits = |w: u32, h: u32, f| check_texture_fits(&d, w, h, f);
        assert!(fits(16384, 8192, TexelFormat::RGBA32F).is_ok());
        assert!(fits(16384, 16384, TexelFormat::RGBA32F).is_err());
        assert!(fits(16384, 16384, TexelFormat::RGBA16F).is_ok());
        assert!(fits(32768, 16384, TexelFormat::RGBA16F).is_err());
        assert!(fits(32768, 16384, TexelFormat::RGBA8).is_ok());
        assert!(fits(32768, 32768, TexelFormat::RGBA8).is_err());
        let e = fits(65536, 65536, TexelFormat::RGBA8).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
        assert!(e.to_string().contains("32768×32768"), "{e}");
        let e = fits(32768, 32768, TexelFormat::RGBA8).unwrap_err();
        assert!(e.to_string().contains("4294967296"), "{e}");
    }

    #[test]
    fn packed_bytes_count_every_level() {
        // 4×2 RGBA8: 8 + 2 + 1 texels.
        assert_eq!(mipmapped_bytes(4, 2, 3, TexelFormat::RGBA8), 11 * 4);
        assert_eq!(mipmapped_bytes(1, 1, 1, TexelFormat::RGBA32F), 16);
    }
}
