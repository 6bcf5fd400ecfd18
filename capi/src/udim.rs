//! UDIM textures: a grid of OpenEXR tiles addressed as one texture.

use crate::boundary::{c_str, entry, optional_c_str, optional_in, Out};
use crate::handles::DtexLoader;
use crate::loader;
use crate::options::DtexTextureDesc;
use crate::status::{ApiError, DtexStatus};
use crate::textures::check_exr_file;
use engine::sources::{ExrSource, ImageSource};
use engine::udim::{tile_desc, UdimGrid, UDIM_MAX_GRID_SIDE};
use std::ffi::c_char;
use std::path::Path;
use std::sync::Arc;

/// An OpenEXR source for `path`, after checking that the file is there and is OpenEXR.
fn exr(path: &str) -> Result<Arc<dyn ImageSource>, ApiError> {
    check_exr_file(path)?;
    Ok(Arc::new(ExrSource::new(path)))
}

/// Create a UDIM texture from `grid_width x grid_height` OpenEXR tile paths, row-major:
/// `tile_paths[row * grid_width + col]` is tile (col, row), UDIM number
/// `1001 + col + 10 * row`, covering s in [col, col+1), t in [row, row+1); NULL is a hole
/// (at least one tile is needed). `base_path` (NULL: none) is a texture of the whole grid
/// used for distant lookups, holes and outside the grid. Sample it with
/// `dtex_launch_tex2d_grad_udim` and the id written to `*out_udim`. `desc` NULL means
/// clamp addressing (the right choice for tiles), otherwise as given, for every tile and
/// the base.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL pointers, a side outside 1..=255, no
/// tile, a path not UTF-8, bad `desc`); IO_ERROR / UNSUPPORTED for a missing or
/// non-OpenEXR file (the message names it); OUT_OF_PAGES. Ownership: the paths are
/// copied; the UDIM texture belongs to the loader. Thread-safety: any thread.
///
/// # Safety
/// `tile_paths` is NULL or points to `grid_width * grid_height` pointers, each NULL or a
/// NUL-terminated string; `base_path` is NULL or a NUL-terminated string; `desc` is NULL
/// or points to a `DtexTextureDesc`; `out_udim` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_udim_create(
    loader: DtexLoader,
    tile_paths: *const *const c_char,
    grid_width: u32,
    grid_height: u32,
    base_path: *const c_char,
    desc: *const DtexTextureDesc,
    out_udim: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (out, base, desc).
        let (out, base, desc) = unsafe {
            (
                Out::new(out_udim, "out_udim")?,
                optional_c_str(base_path, "base_path")?,
                optional_in(desc)?,
            )
        };
        let sides = 1..=UDIM_MAX_GRID_SIDE;
        if !sides.contains(&grid_width) || !sides.contains(&grid_height) {
            return Err(ApiError::invalid_argument(format!(
                "a UDIM grid of {grid_width}x{grid_height} tiles (each side 1..={UDIM_MAX_GRID_SIDE})"
            )));
        }
        let n = (grid_width * grid_height) as usize;
        // SAFETY: the caller's contract: `n` pointers.
        let paths = unsafe { crate::boundary::slice_in(tile_paths, n, "tile_paths") }?;
        let entry = loader::get(loader)?;
        let desc = DtexTextureDesc::resolve(desc, tile_desc())?;
        let mut tiles = Vec::with_capacity(n);
        for (i, &p) in paths.iter().enumerate() {
            let what = format!("tile_paths[{i}]");
            // SAFETY: the caller's contract: each entry NULL or a C string.
            let path = unsafe { optional_c_str(p, &what) }?;
            tiles.push(path.map(exr).transpose()?);
        }
        let grid = UdimGrid {
            width: grid_width,
            height: grid_height,
            tiles,
            base: base.map(exr).transpose()?,
        };
        out.write(entry.engine.create_udim_texture(grid, desc)?.0);
        Ok(())
    })
}

/// Create a UDIM texture from the OpenEXR files matching `pattern`: a path whose file name
/// holds `<UDIM>` (four digits 1001..1999, Mari) or `<UVTILE>` (`u{U}_v{V}`, 1-based,
/// Mudbox), e.g. `/textures/color.<UDIM>.exr`. The directory is listed now; the grid is as
/// large as the tiles found need, and slots without a file are holes. `base_path`, `desc`,
/// sampling: as `dtex_udim_create`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL pointers, no token in the pattern, bad
/// `desc`); IO_ERROR (the directory cannot be listed, no file matches, `base_path` cannot
/// be read); UNSUPPORTED (`base_path` is not OpenEXR); OUT_OF_PAGES. Ownership: the
/// paths are copied; the UDIM texture belongs to the loader. Thread-safety: any thread.
///
/// # Safety
/// `pattern` and `base_path` are NULL or NUL-terminated strings; `desc` is NULL or points
/// to a `DtexTextureDesc`; `out_udim` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_udim_create_from_pattern(
    loader: DtexLoader,
    pattern: *const c_char,
    base_path: *const c_char,
    desc: *const DtexTextureDesc,
    out_udim: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (all four pointers).
        let (out, pattern, base, desc) = unsafe {
            (
                Out::new(out_udim, "out_udim")?,
                c_str(pattern, "pattern")?,
                optional_c_str(base_path, "base_path")?,
                optional_in(desc)?,
            )
        };
        let entry = loader::get(loader)?;
        let desc = DtexTextureDesc::resolve(desc, tile_desc())?;
        if let Some(b) = base {
            check_exr_file(b)?;
        }
        let id =
            entry
                .engine
                .create_udim_from_pattern(Path::new(pattern), base.map(Path::new), desc)?;
        out.write(id.0);
        Ok(())
    })
}
