//! Textures from files and procedural textures, and the image descriptions shared by the
//! other kinds (pixels, callbacks).

use crate::boundary::{c_str, check_reserved, entry, entry_value, required_in, Out, Versioned};
use crate::handles::DtexLoader;
use crate::loader;
use crate::options::DtexTextureDesc;
use crate::status::{ApiError, ApiResult, DtexStatus, DTEX_STATUS_IO_ERROR};
use crate::status::{DTEX_STATUS_INVALID_ARGUMENT, DTEX_STATUS_UNSUPPORTED};
use engine::sources::{Checkerboard, ImageSource, Mandelbrot, Noise};
use engine::textures::{TexelFormat, TexelType, MAX_TEXTURE_SIZE};
use std::sync::Arc;

/// "No texture": never a valid texture id (`0xFFFFFFFF`).
pub const DTEX_NO_TEXTURE: u32 = 0xFFFF_FFFF_u32;

/// Texel component type: 8-bit unsigned, normalised.
pub const DTEX_TEXEL_U8: u32 = 0;
/// Texel component type: 16-bit unsigned, normalised.
pub const DTEX_TEXEL_U16: u32 = 1;
/// Texel component type: IEEE half float.
pub const DTEX_TEXEL_F16: u32 = 2;
/// Texel component type: IEEE single float.
pub const DTEX_TEXEL_F32: u32 = 3;

/// `DtexTextureSampler::block_codec`: pages hold texels.
pub const DTEX_BLOCK_NONE: u32 = 0;
/// `DtexTextureSampler::block_codec`: pages hold BC1 blocks (8 bytes), decoded to RGBA8.
pub const DTEX_BLOCK_BC1: u32 = 1;
/// `DtexTextureSampler::block_codec`: BC2 blocks (16 bytes), decoded to RGBA8.
pub const DTEX_BLOCK_BC2: u32 = 2;
/// `DtexTextureSampler::block_codec`: BC3 blocks (16 bytes), decoded to RGBA8.
pub const DTEX_BLOCK_BC3: u32 = 3;
/// `DtexTextureSampler::block_codec`: BC4 UNORM blocks (8 bytes), decoded to R8.
pub const DTEX_BLOCK_BC4: u32 = 4;
/// `DtexTextureSampler::block_codec`: BC4 SNORM blocks (8 bytes), decoded to R32F.
pub const DTEX_BLOCK_BC4_SNORM: u32 = 5;
/// `DtexTextureSampler::block_codec`: BC5 UNORM blocks (16 bytes), decoded to RG8.
pub const DTEX_BLOCK_BC5: u32 = 6;
/// `DtexTextureSampler::block_codec`: BC5 SNORM blocks (16 bytes), decoded to RG32F.
pub const DTEX_BLOCK_BC5_SNORM: u32 = 7;
/// `DtexTextureSampler::block_codec`: BC6H UF16 blocks (16 bytes), decoded to RGBA16F.
pub const DTEX_BLOCK_BC6H_UF16: u32 = 8;
/// `DtexTextureSampler::block_codec`: BC6H SF16 blocks (16 bytes), decoded to RGBA16F.
pub const DTEX_BLOCK_BC6H_SF16: u32 = 9;
/// `DtexTextureSampler::block_codec`: BC7 blocks (16 bytes), decoded to RGBA8.
pub const DTEX_BLOCK_BC7: u32 = 10;

/// Procedural kind: a checkerboard with one colour per mip level (`param` = square side in
/// level-0 texels; 0 is taken as 1).
pub const DTEX_PROCEDURAL_CHECKERBOARD: u32 = 0;
/// Procedural kind: tileable value noise (`param` = seed).
pub const DTEX_PROCEDURAL_NOISE: u32 = 1;
/// Procedural kind: the Mandelbrot set (`param` = max iterations; 0 is taken as 1; more
/// than 65,536 fails the texture at open, so that a fill's work stays bounded).
pub const DTEX_PROCEDURAL_MANDELBROT: u32 = 2;

/// An image's description: level-0 size, texel format and mip levels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtexImageInfo {
    /// Level-0 width in texels (1..=65536).
    pub width: u32,
    /// Level-0 height in texels (1..=65536).
    pub height: u32,
    /// `DTEX_TEXEL_*`.
    pub texel_type: u32,
    /// Components per texel: 1, 2 or 4 (3 only where a function says so).
    pub channels: u32,
    /// Mip levels (see each function for what 0 means).
    pub num_levels: u32,
}

/// A rectangle of texels within one mip level (level 0 = finest).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtexTileRegion {
    /// Mip level.
    pub level: u32,
    /// Left texel column.
    pub x: u32,
    /// Top texel row.
    pub y: u32,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

impl From<engine::textures::TileRegion> for DtexTileRegion {
    fn from(r: engine::textures::TileRegion) -> Self {
        DtexTileRegion {
            level: r.level,
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        }
    }
}

/// The engine's texel type for a `DTEX_TEXEL_*` code.
pub(crate) fn texel_type(code: u32) -> Result<TexelType, String> {
    TexelType::from_code(code)
        .ok_or_else(|| format!("texel_type {code} (DTEX_TEXEL_U8 0, U16 1, F16 2 or F32 3)"))
}

/// The `DTEX_TEXEL_*` code of the engine's texel type.
pub(crate) fn texel_type_code(t: TexelType) -> u32 {
    match t {
        TexelType::U8 => DTEX_TEXEL_U8,
        TexelType::U16 => DTEX_TEXEL_U16,
        TexelType::F16 => DTEX_TEXEL_F16,
        TexelType::F32 => DTEX_TEXEL_F32,
    }
}

/// The engine's texel format for a type code and 1, 2 or 4 channels.
pub(crate) fn texel_format(type_code: u32, channels: u32) -> Result<TexelFormat, String> {
    let t = texel_type(type_code)?;
    match channels {
        1 | 2 | 4 => Ok(TexelFormat {
            texel_type: t,
            channels,
        }),
        n => Err(format!("channels {n} (1, 2 or 4)")),
    }
}

/// Check a level-0 size.
pub(crate) fn check_size(width: u32, height: u32) -> Result<(), String> {
    if width == 0 || height == 0 || width > MAX_TEXTURE_SIZE || height > MAX_TEXTURE_SIZE {
        Err(format!(
            "size {width}x{height} (each side must be 1..={MAX_TEXTURE_SIZE})"
        ))
    } else {
        Ok(())
    }
}

/// Register `source` with the loader of `handle`; returns the texture id.
pub(crate) fn register(
    handle: DtexLoader,
    source: Arc<dyn ImageSource>,
    desc: Option<&DtexTextureDesc>,
) -> ApiResult<u32> {
    let entry = loader::get(handle)?;
    let desc = DtexTextureDesc::resolve(desc, Default::default())?;
    Ok(entry.engine.create_texture(source, desc)?.0)
}

/// The image source for `path` after checking that the file can be read and is a texture
/// format core serves (OpenEXR, TIFF/`.tx`, DDS, PNG, JPEG, Radiance HDR, Targa, BMP: core's
/// `sources::detect`).
pub(crate) fn texture_file_source(path: &str) -> ApiResult<Arc<dyn ImageSource>> {
    use engine::sources::detect::{detect_format, file_source, FileFormat};
    let io = |e: std::io::Error| ApiError::new(DTEX_STATUS_IO_ERROR, format!("{path}: {e}"));
    match detect_format(std::path::Path::new(path)).map_err(io)? {
        Some(f) if f.is_image() => Ok(file_source(std::path::Path::new(path))),
        Some(_) => Err(ApiError::new(
            DTEX_STATUS_UNSUPPORTED,
            format!("{path}: a Ptex file (create it with the Ptex entry points)"),
        )),
        None => Err(ApiError::new(
            DTEX_STATUS_UNSUPPORTED,
            format!(
                "{path}: not a texture file demandtex reads ({})",
                FileFormat::IMAGE_FORMATS
            ),
        )),
    }
}

/// Create a texture from an OpenEXR file (best: tiled and mip-mapped, as
/// `demandtex convert` writes), a TIFF (`maketx`'s `.tx`), DDS, PNG, JPEG, Radiance HDR,
/// Targa or BMP file (recognised by its magic number; Targa, which has none, by its `.tga`
/// extension). The file is checked to exist and be one of those now; its
/// header is read at the first launch that samples it; a file that turns out corrupt then
/// makes the texture sample its fallback colour (see `failed_textures` in the stats).
/// `desc` NULL means `dtex_texture_desc_default`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `path` or `out_texture`, path not UTF-8,
/// bad `desc`); IO_ERROR (cannot open or read the file); UNSUPPORTED (none of those);
/// OUT_OF_PAGES / INVALID_ARGUMENT when the loader has no room for another texture.
/// Ownership: the path is copied; the texture belongs to the loader. Thread-safety: any
/// thread.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `desc` is NULL or points to a
/// `DtexTextureDesc`; `out_texture` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_create_from_file(
    loader: DtexLoader,
    path: *const std::ffi::c_char,
    desc: *const DtexTextureDesc,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (all three pointers).
        let (out, path, desc) = unsafe {
            (
                Out::new(out_texture, "out_texture")?,
                c_str(path, "path")?,
                crate::boundary::optional_in(desc)?,
            )
        };
        loader::get(loader)?;
        out.write(register(loader, texture_file_source(path)?, desc)?);
        Ok(())
    })
}

/// A procedural texture: one of demandtex's built-in sources, at any virtual size, with
/// no file. Fill it with `dtex_procedural_desc_default`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtexProceduralDesc {
    /// `sizeof(DtexProceduralDesc)`.
    pub struct_size: u32,
    /// `DTEX_PROCEDURAL_*` (default CHECKERBOARD).
    pub kind: u32,
    /// Level-0 width, 1..=65536 (default 4096).
    pub width: u32,
    /// Level-0 height, 1..=65536 (default 4096).
    pub height: u32,
    /// `DTEX_TEXEL_*` (default U8).
    pub texel_type: u32,
    /// 1, 2 or 4 (default 4).
    pub channels: u32,
    /// Kind-specific (see `DTEX_PROCEDURAL_*`; default 16).
    pub param: u32,
    /// Must be 0.
    pub reserved: u32,
}

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexProceduralDesc {
    const NAME: &'static str = "DtexProceduralDesc";
}

impl Default for DtexProceduralDesc {
    fn default() -> Self {
        DtexProceduralDesc {
            struct_size: std::mem::size_of::<DtexProceduralDesc>() as u32,
            kind: DTEX_PROCEDURAL_CHECKERBOARD,
            width: 4096,
            height: 4096,
            texel_type: DTEX_TEXEL_U8,
            channels: 4,
            param: 16,
            reserved: 0,
        }
    }
}

impl DtexProceduralDesc {
    /// The source this describes, after checking every field.
    pub fn to_source(&self) -> ApiResult<Arc<dyn ImageSource>> {
        let bad = |m: String| {
            ApiError::new(
                DTEX_STATUS_INVALID_ARGUMENT,
                format!("DtexProceduralDesc: {m}"),
            )
        };
        check_reserved(self.reserved, "DtexProceduralDesc.reserved")?;
        check_size(self.width, self.height).map_err(bad)?;
        let format = texel_format(self.texel_type, self.channels).map_err(bad)?;
        let (w, h, p) = (self.width, self.height, self.param);
        Ok(match self.kind {
            DTEX_PROCEDURAL_CHECKERBOARD => Arc::new(Checkerboard::new(w, h, p, format)),
            DTEX_PROCEDURAL_NOISE => Arc::new(Noise::new(w, h, p, format)),
            DTEX_PROCEDURAL_MANDELBROT => Arc::new(Mandelbrot::new(w, h, p, format)),
            k => {
                return Err(bad(format!(
                    "kind {k} (DTEX_PROCEDURAL_CHECKERBOARD 0, NOISE 1 or MANDELBROT 2)"
                )))
            }
        })
    }
}

/// Fill `*out` with the default procedural description: a 4096x4096 RGBA8 checkerboard of
/// 16-texel squares. NULL: does nothing.
///
/// Ownership: `*out` is the caller's; nothing is kept. Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or valid for writing a `DtexProceduralDesc`.
#[no_mangle]
pub unsafe extern "C" fn dtex_procedural_desc_default(out: *mut DtexProceduralDesc) {
    entry_value((), || {
        // SAFETY: the caller's contract.
        if let Some(out) = unsafe { Out::optional(out) } {
            out.write(DtexProceduralDesc::default());
        }
    })
}

/// Create a procedural texture. `desc` NULL means `dtex_texture_desc_default`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `procedural` or `out_texture`, a bad
/// field: the message names it); OUT_OF_PAGES when the loader has no room. Ownership:
/// the descriptions are read during the call, not kept; the texture belongs to the
/// loader. Thread-safety: any thread.
///
/// # Safety
/// `procedural` and `desc` are NULL or point to their structs; `out_texture` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_create_procedural(
    loader: DtexLoader,
    procedural: *const DtexProceduralDesc,
    desc: *const DtexTextureDesc,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (all three pointers).
        let (out, procedural, desc) = unsafe {
            (
                Out::new(out_texture, "out_texture")?,
                required_in(procedural, "procedural")?,
                crate::boundary::optional_in(desc)?,
            )
        };
        let source = procedural.to_source()?;
        out.write(register(loader, source, desc)?);
        Ok(())
    })
}

#[cfg(test)]
mod block_codes {
    use super::*;
    use engine::textures::BlockCodec;

    #[test]
    fn the_block_codes_are_the_engines() {
        let c = [
            (DTEX_BLOCK_BC1, BlockCodec::Bc1),
            (DTEX_BLOCK_BC2, BlockCodec::Bc2),
            (DTEX_BLOCK_BC3, BlockCodec::Bc3),
            (DTEX_BLOCK_BC4, BlockCodec::Bc4 { signed: false }),
            (DTEX_BLOCK_BC4_SNORM, BlockCodec::Bc4 { signed: true }),
            (DTEX_BLOCK_BC5, BlockCodec::Bc5 { signed: false }),
            (DTEX_BLOCK_BC5_SNORM, BlockCodec::Bc5 { signed: true }),
            (DTEX_BLOCK_BC6H_UF16, BlockCodec::Bc6h { signed: false }),
            (DTEX_BLOCK_BC6H_SF16, BlockCodec::Bc6h { signed: true }),
            (DTEX_BLOCK_BC7, BlockCodec::Bc7),
        ];
        for (code, codec) in c {
            assert_eq!(codec.code(), code);
        }
        assert_eq!(BlockCodec::from_code(DTEX_BLOCK_NONE), None);
    }
}
