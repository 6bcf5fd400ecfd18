//! Texture lifecycle: invalidate (the source's content changed), replace (the id reads
//! another source), unload (dropped for good), and a texture's error.

use crate::boundary::{c_str, entry, optional_c_str, optional_in, required_in, Out};
use crate::callbacks::{make_source, DtexImageSourceCallbacks};
use crate::handles::DtexLoader;
use crate::loader::{self, LoaderEntry};
use crate::options::DtexTextureDesc;
use crate::status::{ApiError, ApiResult, DtexStatus, DTEX_STATUS_UNKNOWN_TEXTURE};
use crate::textures::{texel_type_code, texture_file_source, DtexImageInfo};
use engine::TextureId;
use std::ffi::c_char;

/// Drop every tile of `texture` (resident, staged, being filled or waiting to be
/// published), its mip tail, sampler and base colour: its source's content changed. The
/// next lookup requests it again; the source is then opened anew (its size and format may
/// have changed) and the tiles are read again on demand. A failed texture is retried.
///
/// What lookups see: lookups after this call, in a launch prepared later or in the launch
/// that is live now, find the texture non-resident (`resident` 0, zero value) until the
/// reopened sampler is published, which is the launch after the next
/// `dtex_process_requests`; its tiles follow as they are read again. So it takes at least
/// two rounds of prepare / sample / process to converge again. Lookups made before the
/// call saw the old contents. Memory that a live launch or a lookup in progress may still
/// read is returned to the pool only once they end; fills of the old contents still
/// running publish nothing.
///
/// Errors: INVALID_HANDLE; UNKNOWN_TEXTURE (never created by this loader, or unloaded);
/// INVALID_ARGUMENT for an empty slot (hole) of a UDIM grid. Ownership: nothing is
/// passed; the texture keeps its source. Thread-safety: any thread, also while other
/// threads sample a live launch of the loader or run its fills.
#[no_mangle]
pub extern "C" fn dtex_texture_invalidate(loader: DtexLoader, texture: u32) -> DtexStatus {
    entry(|| {
        loader::get(loader)?
            .engine
            .invalidate_texture(TextureId(texture))?;
        Ok(())
    })
}

/// Drop `texture` for good: its tiles, mip tail and sampler (freed once no launch can see
/// them) and its source (dropped once no fill of it runs; at once if none does: a callback
/// source's `close` then runs before this returns; borrowed pixels are no longer read
/// once the fills have ended). From this call on, lookups of the id return the fallback
/// colour of its `DtexTextureDesc`, resident (as a failed texture), also in the launch
/// that is live now; `dtex_texture_get_error` reports UNKNOWN_TEXTURE with "was
/// unloaded". The id is never reused. Unloading twice is not an error.
///
/// Errors: INVALID_HANDLE; UNKNOWN_TEXTURE (never created by this loader);
/// INVALID_ARGUMENT for an empty slot (hole) of a UDIM grid. Ownership: the library lets
/// go of the texture's source (and of borrowed pixels, once fills still reading them end;
/// at the latest when the loader is destroyed). Thread-safety: any thread, also while
/// other threads sample a live launch of the loader or run its fills.
#[no_mangle]
pub extern "C" fn dtex_texture_unload(loader: DtexLoader, texture: u32) -> DtexStatus {
    entry(|| {
        loader::get(loader)?
            .engine
            .unload_texture(TextureId(texture))?;
        Ok(())
    })
}

/// The texture description for a replacement: `desc`, or the default when NULL.
fn replacement_desc(desc: Option<&DtexTextureDesc>) -> ApiResult<engine::TextureDesc> {
    DtexTextureDesc::resolve(desc, Default::default())
}

/// The same id now reads the OpenEXR file at `path`, sampled with `desc` (NULL: the
/// default description, as `dtex_texture_create_from_file`; the old description is not
/// kept). The texture's contents are dropped as by `dtex_texture_invalidate` (same
/// convergence: lookups find it non-resident until the new file's sampler is published),
/// and the file is opened at the next lookup; size and format may differ from the old
/// source. The file is checked to exist and be OpenEXR now. The old source is dropped once
/// no fill of it runs (at once if none does: a callback source's `close` runs before this
/// returns).
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL or non-UTF-8 `path`, bad `desc`, a UDIM
/// hole); IO_ERROR / UNSUPPORTED (missing, unreadable or not OpenEXR); UNKNOWN_TEXTURE
/// (never created by this loader, or unloaded). On error the texture is unchanged.
/// Ownership: the path is copied. Thread-safety: as `dtex_texture_invalidate`.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `desc` is NULL or points to a
/// `DtexTextureDesc`.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_replace_from_file(
    loader: DtexLoader,
    texture: u32,
    path: *const c_char,
    desc: *const DtexTextureDesc,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (both pointers).
        let (path, desc) = unsafe { (c_str(path, "path")?, optional_in(desc)?) };
        let entry = loader::get(loader)?;
        let desc = replacement_desc(desc)?;
        let source = texture_file_source(path)?;
        entry
            .engine
            .replace_texture(TextureId(texture), source, desc)?;
        Ok(())
    })
}

/// The same id now reads the caller's callbacks (see `DtexImageSourceCallbacks`), sampled
/// with `desc` (NULL: the default description; the old one is not kept). The texture's
/// contents are dropped as by `dtex_texture_invalidate`, and the new source is opened at
/// the next lookup (size and format may differ). The old source is dropped once no fill of
/// it runs (at once if none does: its `close`, for a callback source, runs before this
/// returns). `name` (NULL: "callback source") is copied.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `callbacks`, bad `struct_size` or
/// `reserved`, missing `open` or `read_region`, bad `desc`, name not UTF-8, a UDIM hole);
/// UNKNOWN_TEXTURE (never created by this loader, or unloaded). On failure the texture is
/// unchanged and the new `close` is NOT called: the caller still owns the new
/// `user_data`. Ownership: on success the library owns the new `user_data` until it calls
/// its `close`. Thread-safety: as `dtex_texture_invalidate`; the new callbacks may be
/// called from fill threads as soon as this returns.
///
/// # Safety
/// `callbacks` is NULL or points to a `DtexImageSourceCallbacks` whose functions honour
/// its contract; `name` is NULL or a NUL-terminated string; `desc` is NULL or points to a
/// `DtexTextureDesc`.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_replace_from_callbacks(
    loader: DtexLoader,
    texture: u32,
    callbacks: *const DtexImageSourceCallbacks,
    name: *const c_char,
    desc: *const DtexTextureDesc,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (all three pointers).
        let (callbacks, name, desc) = unsafe {
            (
                required_in(callbacks, "callbacks")?,
                optional_c_str(name, "name")?,
                optional_in(desc)?,
            )
        };
        let entry = loader::get(loader)?;
        let desc = replacement_desc(desc)?;
        let source = make_source(callbacks, name, entry.life.token())?;
        // Our clone keeps the source alive until it is armed, even if another thread
        // replaces or unloads the texture meanwhile: `close` runs only once it is armed.
        entry
            .engine
            .replace_texture(TextureId(texture), source.clone(), desc)?;
        source.arm();
        Ok(())
    })
}

/// Why `texture` does not give its texels: OK if it is healthy (created, not failed,
/// not unloaded; also before it was first opened), otherwise the status of the failure
/// and `dtex_last_error_message()` says why: SOURCE_ERROR / IO_ERROR / UNSUPPORTED / ...
/// with the source's message for a failed texture (it samples its fallback colour),
/// UNKNOWN_TEXTURE for an unloaded texture ("was unloaded") or an id the loader never
/// handed out. A texture whose source failed is retried by `dtex_texture_invalidate` or
/// `dtex_texture_replace_*`; failures are known only once the texture was opened by a
/// launch's fills.
///
/// Errors: INVALID_HANDLE, and the texture's failure as above. Ownership: nothing is
/// passed. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_texture_get_error(loader: DtexLoader, texture: u32) -> DtexStatus {
    entry(|| {
        let entry = loader::get(loader)?;
        texture_error(&entry, TextureId(texture))
    })
}

/// The description of `texture` as its source opened it: level-0 size, stored texel type
/// (`DTEX_TEXEL_*`), channels (1, 2 or 4) and mip levels. A texture opens at its first
/// lookup's fills (or soon after creation in interactive mode): until then, and for a
/// texture that failed to open or was unloaded, `*out_opened` is 0 and `*out_info` is left
/// as it was; once open, `*out_opened` is 1 and `*out_info` written. A host that treats
/// 8-bit colour differently (UsdUVTexture's `auto` colour space decodes 8-bit RGB(A) as
/// sRGB) asks this rather than reading the file itself.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `out_info` or `out_opened`);
/// UNKNOWN_TEXTURE (an id the loader never handed out). Nothing is written on error.
/// Ownership: the outputs are the caller's. Thread-safety: any thread.
///
/// # Safety
/// `out_info` is NULL or writable as a `DtexImageInfo`; `out_opened` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_get_image_info(
    loader: DtexLoader,
    texture: u32,
    out_info: *mut DtexImageInfo,
    out_opened: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (both pointers).
        let (info, opened) = unsafe {
            (
                Out::new(out_info, "out_info")?,
                Out::new(out_opened, "out_opened")?,
            )
        };
        let entry = loader::get(loader)?;
        if u64::from(texture) >= entry.engine.texture_count() {
            return Err(never_created(texture));
        }
        let failed = entry.engine.texture_error(TextureId(texture)).is_some();
        match entry.engine.texture_layout(TextureId(texture)) {
            Some(layout) if !failed => {
                info.write(DtexImageInfo {
                    width: layout.width,
                    height: layout.height,
                    texel_type: texel_type_code(layout.format.texel_type),
                    channels: layout.format.channels,
                    num_levels: layout.levels.len() as u32,
                });
                opened.write(1);
            }
            _ => opened.write(0),
        }
        Ok(())
    })
}

/// UNKNOWN_TEXTURE for an id the loader never handed out.
fn never_created(texture: u32) -> ApiError {
    ApiError::new(
        DTEX_STATUS_UNKNOWN_TEXTURE,
        format!("texture {texture} was never created by this loader"),
    )
}

/// The error of `texture` (see `dtex_texture_get_error`).
fn texture_error(entry: &LoaderEntry, texture: TextureId) -> ApiResult<()> {
    if let Some(e) = entry.engine.texture_error(texture) {
        return Err(ApiError::from(e));
    }
    // Ids are handed out in order from 0: an id below the count names a texture.
    if u64::from(texture.0) >= entry.engine.texture_count() {
        return Err(never_created(texture.0));
    }
    Ok(())
}
