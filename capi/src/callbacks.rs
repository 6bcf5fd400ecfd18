//! Callback sources: the C form of `ImageSource`, a vtable of C functions and a
//! `user_data` pointer passed back verbatim.

use crate::boundary::{check_reserved, Versioned};
use crate::boundary::{entry, entry_value, optional_c_str, optional_in, required_in, Out};
use crate::handles::DtexLoader;
use crate::loader::{self, LifeToken};
use crate::options::DtexTextureDesc;
use crate::status::{ApiError, ApiResult, DtexStatus};
use crate::textures::{check_size, texel_format, DtexImageInfo, DtexTileRegion};
use engine::sources::{ImageInfo, ImageSource, MipTailLevel, Readiness, SourceError};
use engine::textures::{full_mip_levels, TileRegion};
use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Callback result: done (the destination was filled).
pub const DTEX_SOURCE_READY: i32 = 0;
/// Callback result: not yet; nothing was written, ask again at a later launch.
pub const DTEX_SOURCE_NOT_YET: i32 = 1;
/// Callback result: failed; call `dtex_source_set_error` first to say why.
pub const DTEX_SOURCE_ERROR: i32 = 2;

/// One level of a mip-tail read: the whole level and where its packed rows go in `dest`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtexMipTailLevel {
    /// The whole level.
    pub region: DtexTileRegion,
    /// Byte offset of the level in the destination.
    pub offset: usize,
    /// Bytes per row (width * texel bytes).
    pub row_bytes: usize,
}

/// A caller-implemented image source. Every callback receives `user_data` verbatim,
/// returns `DTEX_SOURCE_*` and must not unwind (no C++ exception may leave it).
/// Callbacks other than `open` and `close` are called from the loader's fill threads,
/// concurrently: they must be thread-safe.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DtexImageSourceCallbacks {
    /// `sizeof(DtexImageSourceCallbacks)`.
    pub struct_size: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Required. Describe the image (width, height 1..=65536, `DTEX_TEXEL_*`, channels 1, 2
    /// or 4, num_levels 1..=full chain: the levels `read_region` can produce). Called on a
    /// fill thread before any read: at the first launch that samples the texture, and again
    /// when the texture's opening was deferred (its mip-tail or base-colour read answered
    /// NOT_YET: it is opened anew at a later launch) and after `dtex_texture_invalidate`
    /// (the size and format may then change; reads of the earlier contents may still be
    /// running on other threads). Keep it cheap and idempotent. READY or ERROR.
    pub open:
        Option<unsafe extern "C" fn(user_data: *mut c_void, out_info: *mut DtexImageInfo) -> i32>,
    /// Required. Write the texels of `region` to `dest` (`dest_bytes` long), rows
    /// `row_bytes` apart, in the format `open` reported. Any thread, concurrently.
    pub read_region: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            region: *const DtexTileRegion,
            dest: *mut c_void,
            dest_bytes: usize,
            row_bytes: usize,
        ) -> i32,
    >,
    /// Optional (NULL: `read_region` per level). Write every level of the mip tail at its
    /// offset in `dest`, packed rows.
    pub read_mip_tail: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            levels: *const DtexMipTailLevel,
            num_levels: usize,
            dest: *mut c_void,
            dest_bytes: usize,
        ) -> i32,
    >,
    /// Optional. The texture's average colour; NOT_YET means "unknown, use the mip tail".
    pub read_base_color:
        Option<unsafe extern "C" fn(user_data: *mut c_void, out_rgba: *mut f32) -> i32>,
    /// Optional. Called exactly once, when the texture's source is dropped (the texture is
    /// unloaded or replaced, or the loader destroyed: at the latest before
    /// `dtex_loader_destroy` returns). Not called when creating the texture (or replacing
    /// one) with these callbacks fails.
    pub close: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexImageSourceCallbacks {
    const NAME: &'static str = "DtexImageSourceCallbacks";
}

thread_local! {
    /// The message a callback set with `dtex_source_set_error` on this thread.
    static SOURCE_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Called by a callback, before it returns `DTEX_SOURCE_ERROR`, to say why (the message is
/// copied; it ends up in the texture's error and the log). NULL clears it.
///
/// Ownership: the message is copied. Thread-safety: per thread: call it on the thread
/// running the callback.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string (invalid UTF-8 is replaced).
#[no_mangle]
pub unsafe extern "C" fn dtex_source_set_error(message: *const c_char) {
    entry_value((), || {
        let text = if message.is_null() {
            None
        } else {
            // SAFETY: the caller's contract.
            Some(
                unsafe { std::ffi::CStr::from_ptr(message) }
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        SOURCE_ERROR.with(|e| *e.borrow_mut() = text);
    })
}

/// Take (and clear) the message a callback set on this thread with `dtex_source_set_error`.
pub(crate) fn take_source_error() -> Option<String> {
    SOURCE_ERROR.with(|e| e.borrow_mut().take())
}

/// A callback source.
pub(crate) struct CallbackSource {
    callbacks: DtexImageSourceCallbacks,
    name: String,
    /// Set once the texture exists: from then on, dropping the source calls `close`.
    armed: AtomicBool,
    /// Keeps the loader's destruction waiting until `close` has run.
    _life: LifeToken,
}

// SAFETY: the callbacks' contract (documented on DtexImageSourceCallbacks) is that they are
// thread-safe and that `user_data` may be used from any thread; the rest is Send + Sync.
unsafe impl Send for CallbackSource {}
// SAFETY: as for Send.
unsafe impl Sync for CallbackSource {}

impl CallbackSource {
    /// Run one callback and turn its code into a readiness or an error.
    fn call(&self, what: &str, f: impl FnOnce() -> i32) -> Result<Readiness, SourceError> {
        take_source_error();
        let code = f();
        match code {
            DTEX_SOURCE_READY => Ok(Readiness::Ready),
            DTEX_SOURCE_NOT_YET => Ok(Readiness::NotYet),
            DTEX_SOURCE_ERROR => {
                let message =
                    take_source_error().unwrap_or_else(|| "callback returned an error".into());
                Err(SourceError(format!("{what}: {message}")))
            }
            c => Err(SourceError(format!(
                "{what} returned {c} (DTEX_SOURCE_READY 0, NOT_YET 1 or ERROR 2)"
            ))),
        }
    }
}

impl ImageSource for CallbackSource {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn open(&self) -> Result<ImageInfo, SourceError> {
        let open = self
            .callbacks
            .open
            .ok_or_else(|| SourceError("no open callback".into()))?;
        let mut raw = DtexImageInfo::default();
        // SAFETY: the vtable's contract; `raw` is a valid DtexImageInfo to write.
        match self.call("open", || unsafe {
            open(self.callbacks.user_data, &mut raw)
        })? {
            Readiness::Ready => {}
            Readiness::NotYet => {
                return Err(SourceError(
                    "open answered NOT_YET (it must be READY or ERROR)".into(),
                ))
            }
        }
        let bad = |m: String| SourceError(format!("open returned an invalid DtexImageInfo: {m}"));
        check_size(raw.width, raw.height).map_err(bad)?;
        let format = texel_format(raw.texel_type, raw.channels).map_err(bad)?;
        let full = full_mip_levels(raw.width, raw.height);
        if !(1..=full).contains(&raw.num_levels) {
            return Err(bad(format!("num_levels {} (1..={full})", raw.num_levels)));
        }
        Ok(ImageInfo {
            width: raw.width,
            height: raw.height,
            format,
            num_levels: raw.num_levels,
        })
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let read = self
            .callbacks
            .read_region
            .ok_or_else(|| SourceError("no read_region callback".into()))?;
        let r = DtexTileRegion::from(region);
        let (ptr, len) = (dest.as_mut_ptr() as *mut c_void, dest.len());
        // SAFETY: the vtable's contract; `r` and `dest` are valid for the call.
        self.call("read_region", || unsafe {
            read(self.callbacks.user_data, &r, ptr, len, row_bytes)
        })
    }

    fn read_mip_tail(
        &self,
        levels: &[MipTailLevel],
        dest: &mut [u8],
    ) -> Result<Readiness, SourceError> {
        let Some(read) = self.callbacks.read_mip_tail else {
            // The trait's default: one read_region per level.
            return default_read_mip_tail(self, levels, dest);
        };
        let c_levels: Vec<DtexMipTailLevel> = levels
            .iter()
            .map(|l| DtexMipTailLevel {
                region: l.region.into(),
                offset: l.offset,
                row_bytes: l.row_bytes,
            })
            .collect();
        let (ptr, len) = (dest.as_mut_ptr() as *mut c_void, dest.len());
        let user = self.callbacks.user_data;
        // SAFETY: the vtable's contract; the level array and `dest` are valid for the call.
        self.call("read_mip_tail", || unsafe {
            read(user, c_levels.as_ptr(), c_levels.len(), ptr, len)
        })
    }

    fn read_base_color(&self) -> Result<Option<[f32; 4]>, SourceError> {
        let Some(read) = self.callbacks.read_base_color else {
            return Ok(None);
        };
        let mut rgba = [0.0f32; 4];
        let user = self.callbacks.user_data;
        // SAFETY: the vtable's contract; `rgba` holds four floats.
        let r = self.call("read_base_color", || unsafe {
            read(user, rgba.as_mut_ptr())
        })?;
        Ok((r == Readiness::Ready).then_some(rgba))
    }
}

/// `ImageSource::read_mip_tail`'s default behaviour, for a vtable without `read_mip_tail`.
fn default_read_mip_tail(
    src: &CallbackSource,
    levels: &[MipTailLevel],
    dest: &mut [u8],
) -> Result<Readiness, SourceError> {
    for l in levels {
        let end = l
            .row_bytes
            .checked_mul(l.region.height as usize)
            .and_then(|b| b.checked_add(l.offset))
            .filter(|&e| e <= dest.len())
            .ok_or_else(|| {
                SourceError(format!(
                    "mip tail level {} overruns the tail buffer",
                    l.region.level
                ))
            })?;
        if src.read_region(l.region, &mut dest[l.offset..end], l.row_bytes)? == Readiness::NotYet {
            return Ok(Readiness::NotYet);
        }
    }
    Ok(Readiness::Ready)
}

impl Drop for CallbackSource {
    fn drop(&mut self) {
        if let (true, Some(close)) = (self.armed.load(Ordering::Acquire), self.callbacks.close) {
            // SAFETY: the vtable's contract: close is called once, with user_data.
            unsafe { close(self.callbacks.user_data) };
        }
    }
}

/// Check a vtable and build its (unarmed) source.
pub(crate) fn make_source(
    callbacks: &DtexImageSourceCallbacks,
    name: Option<&str>,
    life: LifeToken,
) -> ApiResult<Arc<CallbackSource>> {
    check_reserved(callbacks.reserved, "DtexImageSourceCallbacks.reserved")?;
    if callbacks.open.is_none() || callbacks.read_region.is_none() {
        return Err(ApiError::invalid_argument(
            "DtexImageSourceCallbacks: open and read_region are required",
        ));
    }
    Ok(Arc::new(CallbackSource {
        callbacks: *callbacks,
        name: name.map_or_else(|| "callback source".to_string(), str::to_string),
        armed: AtomicBool::new(false),
        _life: life,
    }))
}

impl CallbackSource {
    /// From now on, dropping the source calls `close`.
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }
}

/// Create a texture whose texels come from caller callbacks (see
/// `DtexImageSourceCallbacks`). Nothing is called until a launch samples the texture;
/// `open` then runs (again if the opening is deferred or the texture invalidated), reads
/// run on fill threads, and a read answering NOT_YET is asked again at a later launch. A callback answering ERROR makes the texture sample its
/// fallback colour (`dtex_source_set_error` gives the message). `name` (NULL: "callback
/// source") appears in messages; it is copied. `desc` NULL means the default.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL pointer, bad `struct_size`, missing
/// `open` or `read_region`, bad `desc`, name not UTF-8); OUT_OF_PAGES. On failure `close`
/// is NOT called: the caller still owns `user_data`. Ownership: on success the library owns
/// `user_data` until it calls `close`. Thread-safety: any thread.
///
/// # Safety
/// `callbacks` is NULL or points to a `DtexImageSourceCallbacks` whose functions honour
/// its contract; `name` is NULL or a NUL-terminated string; `desc` is NULL or points to a
/// `DtexTextureDesc`; `out_texture` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_create_from_callbacks(
    loader: DtexLoader,
    callbacks: *const DtexImageSourceCallbacks,
    name: *const c_char,
    desc: *const DtexTextureDesc,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (all four pointers).
        let (out, callbacks, name, desc) = unsafe {
            (
                Out::new(out_texture, "out_texture")?,
                required_in(callbacks, "callbacks")?,
                optional_c_str(name, "name")?,
                optional_in(desc)?,
            )
        };
        let entry = loader::get(loader)?;
        let desc = DtexTextureDesc::resolve(desc, Default::default())?;
        let source = make_source(callbacks, name, entry.life.token())?;
        let id = entry.engine.create_texture(source.clone(), desc)?;
        source.arm();
        out.write(id.0);
        Ok(())
    })
}
