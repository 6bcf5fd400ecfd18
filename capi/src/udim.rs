//! UDIM textures: a grid of texture files (tiles) addressed as one texture.

use crate::boundary::{c_str, entry, optional_c_str, optional_in, Out};
use crate::handles::DtexLoader;
use crate::loader;
use crate::options::DtexTextureDesc;
use crate::status::{ApiError, DtexStatus, DTEX_STATUS_UNKNOWN_TEXTURE};
use crate::textures::{texture_file_source, DTEX_NO_TEXTURE};
use engine::ids::UdimId;
use engine::sources::ImageSource;
use engine::udim::{find_tiles, tile_desc, UdimGrid, UDIM_MAX_GRID_SIDE};
use std::ffi::{c_char, c_void, CString};
use std::path::Path;
use std::sync::Arc;

/// `DtexUdimTileCallback` result: go on to the next tile.
pub const DTEX_UDIM_TILE_CONTINUE: i32 = 0;
/// `DtexUdimTileCallback` result: stop; no further tile is reported and
/// `dtex_udim_expand_pattern` returns OK.
pub const DTEX_UDIM_TILE_STOP: i32 = 1;

/// `udim` of a `DtexUdimTileCallback` for a tile that has no UDIM number (a `<UVTILE>`
/// tile in column 10 or beyond, or row 100 or beyond).
pub const DTEX_UDIM_NO_NUMBER: u32 = 0;

/// Receives one tile of a UDIM pattern from `dtex_udim_expand_pattern`: `user_data` as
/// given; the tile's UDIM number `1001 + column + 10 * row` (`DTEX_UDIM_NO_NUMBER` if it
/// has none); its 0-based `column` (s in [column, column+1)) and `row` (t in [row, row+1));
/// and `path`, the file: the pattern's directory (`.` when the pattern has none) joined with
/// the file name, NUL-terminated UTF-8, valid only during the call (copy it to keep it).
/// Returns `DTEX_UDIM_TILE_CONTINUE` or `DTEX_UDIM_TILE_STOP`. Called on the thread that
/// called `dtex_udim_expand_pattern`, before it returns; it may call other dtex functions
/// and must not unwind (no C++ exception may leave it).
pub type DtexUdimTileCallback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        udim: u32,
        column: u32,
        row: u32,
        path: *const c_char,
    ) -> i32,
>;

/// The source for `path`, after checking that the file is there and is a texture format.
fn tile_source(path: &str) -> Result<Arc<dyn ImageSource>, ApiError> {
    texture_file_source(path)
}

/// Create a UDIM texture from `grid_width x grid_height` tile paths (OpenEXR, TIFF/`.tx`,
/// DDS, PNG or JPEG files, as `dtex_texture_create_from_file` takes), row-major:
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
/// file that is not a texture format (the message names it); OUT_OF_PAGES. Ownership: the paths are
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
            tiles.push(path.map(tile_source).transpose()?);
        }
        let grid = UdimGrid {
            width: grid_width,
            height: grid_height,
            tiles,
            base: base.map(tile_source).transpose()?,
        };
        out.write(entry.engine.create_udim_texture(grid, desc)?.0);
        Ok(())
    })
}

/// Create a UDIM texture from the texture files matching `pattern`: a path whose file name
/// holds `<UDIM>` (four digits 1001..1999, Mari) or `<UVTILE>` (`u{U}_v{V}`, 1-based,
/// Mudbox), e.g. `/textures/color.<UDIM>.exr`. The directory is listed now; the grid is as
/// large as the tiles found need, and slots without a file are holes. `base_path`, `desc`,
/// sampling: as `dtex_udim_create`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL pointers, no token in the pattern, bad
/// `desc`); IO_ERROR (the directory cannot be listed, no file matches, `base_path` cannot
/// be read); UNSUPPORTED (`base_path` is not a texture format); OUT_OF_PAGES. Ownership: the
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
            texture_file_source(b)?;
        }
        let id =
            entry
                .engine
                .create_udim_from_pattern(Path::new(pattern), base.map(Path::new), desc)?;
        out.write(id.0);
        Ok(())
    })
}

/// The files a UDIM pattern names, by the rule `dtex_udim_create_from_pattern` uses: call
/// `callback` (NULL: only count) once per tile file that exists, row-major (by row, then
/// column; for `<UDIM>`: by UDIM number), and write to `*out_count` how many tiles were
/// reported (with `DTEX_UDIM_TILE_STOP`: up to and including the one that stopped). This is
/// how a front end asks whether a pattern names any file, or which, without spelling the
/// rule out again.
///
/// The rule: the file name (not a directory) of `pattern` holds exactly one token, `<UDIM>`
/// (four digits 1001..1999, Mari: column `(n - 1001) % 10`, row `(n - 1001) / 10`) or
/// `<UVTILE>` (`u{U}_v{V}`, 1-based decimal without leading zeros, each 1..255, Mudbox:
/// column `U - 1`, row `V - 1`). The directory is listed once; the regular files whose
/// names are the pattern's prefix, a well-formed tile and its suffix match. Malformed tiles
/// (`1000`, `2000`, `0999`, `10011`, `u0_v1`, `u01_v1`, `u256_v1`) do not.
///
/// No matching file is not an error: OK, with `*out_count` 0 and no callback
/// (`dtex_udim_create_from_pattern` refuses such a pattern with IO_ERROR, as a texture
/// needs a tile).
///
/// Errors: INVALID_ARGUMENT (NULL `pattern` or `out_count`, a pattern not UTF-8, no token in
/// the file name, more than one, or one in a directory: as `dtex_udim_create_from_pattern`;
/// a callback result other than CONTINUE or STOP, after which no further tile is
/// reported); IO_ERROR (the directory cannot be listed, e.g. it does not exist: as
/// `dtex_udim_create_from_pattern`). On error `*out_count` is not written, but the callback
/// may already have been called. Ownership: nothing is kept; `path` belongs to the library
/// and lives for one callback. Thread-safety: any thread; needs no loader.
///
/// # Safety
/// `pattern` is NULL or a NUL-terminated string; `callback` is NULL or honours its
/// contract; `out_count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_udim_expand_pattern(
    pattern: *const c_char,
    callback: DtexUdimTileCallback,
    user_data: *mut c_void,
    out_count: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (pattern, out_count).
        let (out, pattern) = unsafe {
            (
                Out::new(out_count, "out_count")?,
                c_str(pattern, "pattern")?,
            )
        };
        let tiles = find_tiles(Path::new(pattern))?;
        let mut count = 0u32;
        for tile in &tiles {
            count += 1;
            let Some(callback) = callback else {
                continue;
            };
            let path = CString::new(tile.path.to_string_lossy().into_owned()).map_err(|_| {
                ApiError::new(
                    crate::status::DTEX_STATUS_INTERNAL,
                    format!("UDIM tile path {} holds a NUL", tile.path.display()),
                )
            })?;
            let udim = tile.udim().unwrap_or(DTEX_UDIM_NO_NUMBER);
            // SAFETY: the callback's contract; `path` outlives the call.
            let code = unsafe { callback(user_data, udim, tile.col, tile.row, path.as_ptr()) };
            match code {
                DTEX_UDIM_TILE_CONTINUE => {}
                DTEX_UDIM_TILE_STOP => break,
                c => {
                    return Err(ApiError::invalid_argument(format!(
                        "UDIM pattern {pattern}: the tile callback returned {c} for {} \
                         (DTEX_UDIM_TILE_CONTINUE 0 or DTEX_UDIM_TILE_STOP 1)",
                        tile.path.display()
                    )))
                }
            }
        }
        out.write(count);
        Ok(())
    })
}

/// UNKNOWN_TEXTURE for an id that names no UDIM texture.
fn not_udim(udim: u32) -> ApiError {
    ApiError::new(
        DTEX_STATUS_UNKNOWN_TEXTURE,
        format!("{udim} is not a UDIM texture of this loader"),
    )
}

/// The grid of UDIM texture `udim`: its columns to `*out_width`, its rows to
/// `*out_height`, and its base texture to `*out_base` (`DTEX_NO_TEXTURE` without one).
/// With `dtex_udim_get_tile`, this is how a front end learns the texture of each tile, to
/// ask its image information (`dtex_texture_get_image_info`: an 8-bit file's colour space)
/// or its error (`dtex_texture_get_error`) as for any texture.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (a NULL pointer); UNKNOWN_TEXTURE (`udim` is
/// not a UDIM texture of this loader). Ownership: nothing is kept. Thread-safety: any
/// thread.
///
/// # Safety
/// Each `out_*` pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_udim_get_grid(
    loader: DtexLoader,
    udim: u32,
    out_width: *mut u32,
    out_height: *mut u32,
    out_base: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (the three pointers).
        let (width, height, base) = unsafe {
            (
                Out::new(out_width, "out_width")?,
                Out::new(out_height, "out_height")?,
                Out::new(out_base, "out_base")?,
            )
        };
        let tiles = loader::get(loader)?
            .engine
            .udim_tiles(UdimId(udim))
            .ok_or_else(|| not_udim(udim))?;
        width.write(tiles.width);
        height.write(tiles.height);
        base.write(tiles.base.map_or(DTEX_NO_TEXTURE, |b| b.0));
        Ok(())
    })
}

/// The texture of tile (`column`, `row`) of UDIM texture `udim` (UDIM number
/// `1001 + column + 10 * row`) to `*out_texture`: `DTEX_NO_TEXTURE` for a hole or a tile
/// outside the grid (`dtex_udim_get_grid`). Lookups through `dtex_launch_tex2d_grad_udim`
/// at s in [column, column + 1), t in [row, row + 1) read this texture (or the base, for
/// footprints wider than a tile).
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `out_texture`); UNKNOWN_TEXTURE (`udim`
/// is not a UDIM texture of this loader). Ownership: nothing is kept. Thread-safety: any
/// thread.
///
/// # Safety
/// `out_texture` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_udim_get_tile(
    loader: DtexLoader,
    udim: u32,
    column: u32,
    row: u32,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(out_texture, "out_texture")? };
        let tile = loader::get(loader)?
            .engine
            .udim_tile(UdimId(udim), column, row)
            .ok_or_else(|| not_udim(udim))?;
        out.write(tile.map_or(DTEX_NO_TEXTURE, |t| t.0));
        Ok(())
    })
}
