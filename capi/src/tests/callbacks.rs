//! Callback sources: the C vtable over a Rust image, deferral, errors, bad descriptions,
//! and `close` exactly once.

use super::util::*;
use crate::callbacks::*;
use crate::loader::dtex_loader_destroy;
use crate::options::*;
use crate::pixels::*;
use crate::sampling::DtexGradQuery;
use crate::status::*;
use crate::textures::*;
use engine::sources::{ImageSource, InMemoryImage, Readiness};
use engine::textures::{TexelType, TileRegion};
use engine::TextureId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::ptr::null;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

const MAGIC: u64 = 0x6474_6578_6361_6c6c;

/// What the callbacks serve and count.
struct State {
    magic: u64,
    image: InMemoryImage,
    info: DtexImageInfo,
    open_code: i32,
    /// Each region answers NOT_YET this many times before READY.
    not_yet_first: usize,
    seen: Mutex<HashMap<(u32, u32, u32), usize>>,
    /// Reads answer this code (after setting `error`, if any) instead of reading.
    read_code: Option<i32>,
    error: Option<CString>,
    base_color: Option<[f32; 4]>,
    opens: AtomicUsize,
    reads: AtomicUsize,
    tails: AtomicUsize,
    base_colors: AtomicUsize,
    closes: AtomicUsize,
}

impl State {
    fn new(image: InMemoryImage) -> State {
        let (w, h, _) = image.level(0).unwrap();
        let f = image.format();
        State {
            magic: MAGIC,
            info: DtexImageInfo {
                width: w,
                height: h,
                texel_type: f.texel_type as u32,
                channels: f.channels,
                num_levels: image.num_levels(),
            },
            image,
            open_code: DTEX_SOURCE_READY,
            not_yet_first: 0,
            seen: Mutex::new(HashMap::new()),
            read_code: None,
            error: None,
            base_color: None,
            opens: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            tails: AtomicUsize::new(0),
            base_colors: AtomicUsize::new(0),
            closes: AtomicUsize::new(0),
        }
    }

    fn read(&self, region: TileRegion, dest: &mut [u8], row_bytes: usize) -> i32 {
        self.reads.fetch_add(1, SeqCst);
        if let Some(code) = self.read_code {
            if let Some(e) = &self.error {
                // SAFETY: a C string.
                unsafe { dtex_source_set_error(e.as_ptr()) };
            }
            return code;
        }
        let key = (region.level, region.x, region.y);
        let n = {
            let mut seen = self.seen.lock();
            let n = seen.entry(key).or_insert(0);
            *n += 1;
            *n
        };
        if n <= self.not_yet_first {
            return DTEX_SOURCE_NOT_YET;
        }
        match self.image.read_region(region, dest, row_bytes) {
            Ok(Readiness::Ready) => DTEX_SOURCE_READY,
            _ => DTEX_SOURCE_ERROR,
        }
    }
}

/// The state behind `user_data`, checking that it came back verbatim.
fn state<'a>(user: *mut c_void) -> &'a State {
    // SAFETY: the tests pass `Arc::as_ptr` of a State they keep alive.
    let s = unsafe { &*(user as *const State) };
    assert_eq!(s.magic, MAGIC, "user_data was not passed back verbatim");
    s
}

fn region(r: &DtexTileRegion) -> TileRegion {
    TileRegion {
        level: r.level,
        x: r.x,
        y: r.y,
        width: r.width,
        height: r.height,
    }
}

unsafe extern "C" fn open_cb(user: *mut c_void, out: *mut DtexImageInfo) -> i32 {
    let s = state(user);
    s.opens.fetch_add(1, SeqCst);
    // SAFETY: the library passes a writable DtexImageInfo.
    unsafe { *out = s.info };
    s.open_code
}

unsafe extern "C" fn read_cb(
    user: *mut c_void,
    r: *const DtexTileRegion,
    dest: *mut c_void,
    len: usize,
    row_bytes: usize,
) -> i32 {
    // SAFETY: the library passes a valid region and a destination of `len` bytes.
    let (r, dest) = unsafe { (&*r, std::slice::from_raw_parts_mut(dest as *mut u8, len)) };
    state(user).read(region(r), dest, row_bytes)
}

unsafe extern "C" fn tail_cb(
    user: *mut c_void,
    levels: *const DtexMipTailLevel,
    n: usize,
    dest: *mut c_void,
    len: usize,
) -> i32 {
    let s = state(user);
    s.tails.fetch_add(1, SeqCst);
    // SAFETY: the library passes `n` levels and a destination of `len` bytes.
    let (levels, dest) = unsafe {
        (
            std::slice::from_raw_parts(levels, n),
            std::slice::from_raw_parts_mut(dest as *mut u8, len),
        )
    };
    for l in levels {
        let bytes = l.row_bytes * l.region.height as usize;
        let code = s.read(
            region(&l.region),
            &mut dest[l.offset..l.offset + bytes],
            l.row_bytes,
        );
        if code != DTEX_SOURCE_READY {
            return code;
        }
    }
    DTEX_SOURCE_READY
}

unsafe extern "C" fn base_cb(user: *mut c_void, rgba: *mut f32) -> i32 {
    let s = state(user);
    s.base_colors.fetch_add(1, SeqCst);
    match s.base_color {
        Some(c) => {
            // SAFETY: four writable floats.
            unsafe { std::slice::from_raw_parts_mut(rgba, 4).copy_from_slice(&c) };
            DTEX_SOURCE_READY
        }
        None => DTEX_SOURCE_NOT_YET,
    }
}

unsafe extern "C" fn close_cb(user: *mut c_void) {
    state(user).closes.fetch_add(1, SeqCst);
}

fn vtable(s: &Arc<State>, with_tail: bool) -> DtexImageSourceCallbacks {
    DtexImageSourceCallbacks {
        struct_size: std::mem::size_of::<DtexImageSourceCallbacks>() as u32,
        reserved: 0,
        user_data: Arc::as_ptr(s) as *mut c_void,
        open: Some(open_cb),
        read_region: Some(read_cb),
        read_mip_tail: with_tail.then_some(tail_cb as _),
        read_base_color: Some(base_cb),
        close: Some(close_cb),
    }
}

fn create(
    loader: &TestLoader,
    cb: &DtexImageSourceCallbacks,
    desc: Option<&DtexTextureDesc>,
) -> Result<u32, DtexStatus> {
    let name = CString::new("test callbacks").unwrap();
    let mut tex = DTEX_NO_TEXTURE;
    let desc = desc.map_or(null(), |d| d as *const _);
    // SAFETY: valid pointers; the vtable honours its contract.
    let status =
        unsafe { dtex_texture_create_from_callbacks(loader.0, cb, name.as_ptr(), desc, &mut tex) };
    if status == DTEX_STATUS_OK {
        Ok(tex)
    } else {
        Err(status)
    }
}

fn image(width: u32, height: u32) -> InMemoryImage {
    let data: Vec<u8> = (0..width * height * 4)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    InMemoryImage::new(width, height, TexelType::U8, 4, data, true).unwrap()
}

fn texture_error(loader: &TestLoader, tex: u32) -> String {
    let entry = crate::loader::get(loader.0).unwrap();
    entry
        .engine
        .texture_error(TextureId(tex))
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// A copy of `img` through `dtex_texture_create_from_pixels`, for reference.
fn copied(loader: &TestLoader, img: &InMemoryImage) -> u32 {
    let (w, h, data) = img.level(0).unwrap();
    let info = DtexImageInfo {
        width: w,
        height: h,
        texel_type: DTEX_TEXEL_U8,
        channels: 4,
        num_levels: 0,
    };
    let mut tex = 0;
    // SAFETY: `data` holds the packed level 0.
    ok(unsafe {
        dtex_texture_create_from_pixels(
            loader.0,
            &info,
            data.as_ptr().cast(),
            0,
            DTEX_PIXELS_COPY,
            null(),
            &mut tex,
        )
    });
    tex
}

#[test]
fn a_callback_texture_samples_as_its_pixels_and_closes_once() {
    for with_tail in [true, false] {
        let img = image(300, 200);
        let s = Arc::new(State::new(img.clone()));
        let loader = TestLoader::new();
        let cb_tex = create(&loader, &vtable(&s, with_tail), None).unwrap();
        let px_tex = copied(&loader, &img);
        let queries = query_grid(cb_tex, 8, 300.0);
        let mut both = queries.clone();
        both.extend(queries.iter().map(|q| DtexGradQuery {
            texture: px_tex,
            ..*q
        }));
        let (got, _) = converge(&loader, &both);
        let (a, b) = got.split_at(queries.len());
        assert_eq!(a, b);
        assert_eq!(s.opens.load(SeqCst), 1);
        assert_eq!(s.tails.load(SeqCst), with_tail as usize);
        assert!(s.reads.load(SeqCst) > 0);
        assert!(s.base_colors.load(SeqCst) <= 1);
        assert_eq!(s.closes.load(SeqCst), 0, "the texture is alive");
        ok(dtex_loader_destroy(loader.0));
        assert_eq!(
            s.closes.load(SeqCst),
            1,
            "close runs once, before destroy returns"
        );
        drop(loader);
        assert_eq!(s.closes.load(SeqCst), 1);
    }
}

#[test]
fn not_yet_defers_the_fill_to_a_later_launch() {
    let img = image(256, 256);
    let immediate = Arc::new(State::new(img.clone()));
    let deferred = Arc::new(State {
        not_yet_first: 2,
        ..State::new(img)
    });
    let loader = TestLoader::new();
    let a = create(&loader, &vtable(&immediate, false), None).unwrap();
    let b = create(&loader, &vtable(&deferred, true), None).unwrap();
    let qa = query_grid(a, 6, 256.0);
    let qb: Vec<_> = qa
        .iter()
        .map(|q| DtexGradQuery { texture: b, ..*q })
        .collect();
    let (va, la) = converge(&loader, &qa);
    let before = loader.stats().deferred_not_yet;
    let (vb, lb) = converge(&loader, &qb);
    assert_eq!(va, vb);
    assert!(lb >= la + 2, "deferrals take extra launches ({la} vs {lb})");
    let stats = loader.stats();
    assert!(stats.deferred_not_yet > before, "{stats:?}");
    assert_eq!(stats.read_errors, 0);
    assert!(texture_error(&loader, b).is_empty());
}

#[test]
fn callback_errors_fail_the_texture_with_their_message() {
    let green = [0.0, 1.0, 0.0, 1.0];
    let desc = DtexTextureDesc {
        fallback_color: green,
        ..Default::default()
    };
    let cases = [
        (DTEX_SOURCE_ERROR, Some("disk on fire"), "disk on fire"),
        (DTEX_SOURCE_ERROR, None, "callback returned an error"),
        (7, None, "returned 7"),
    ];
    for (code, message, expected) in cases {
        let s = Arc::new(State {
            read_code: Some(code),
            error: message.map(|m| CString::new(m).unwrap()),
            ..State::new(image(64, 64))
        });
        let loader = TestLoader::new();
        let tex = create(&loader, &vtable(&s, true), Some(&desc)).unwrap();
        let (got, _) = converge(&loader, &query_grid(tex, 3, 64.0));
        assert!(got.iter().all(|g| g.value == green), "{got:?}");
        let err = texture_error(&loader, tex);
        assert!(
            err.contains(expected) && err.contains("test callbacks"),
            "{err}"
        );
        assert_eq!(loader.stats().failed_textures, 1);
        drop(loader);
        assert_eq!(
            s.closes.load(SeqCst),
            1,
            "a failed texture still closes once"
        );
    }
}

#[test]
fn bad_image_descriptions_from_open_are_source_errors() {
    let cases: [(Change<State>, &str); 7] = [
        (|s| s.info.channels = 3, "channels 3"),
        (|s| s.info.texel_type = 9, "texel_type 9"),
        (|s| s.info.width = 0, "size 0x"),
        (|s| s.info.height = 1 << 20, "size"),
        (|s| s.info.num_levels = 0, "num_levels 0"),
        (|s| s.info.num_levels = 30, "num_levels 30"),
        (|s| s.open_code = DTEX_SOURCE_NOT_YET, "NOT_YET"),
    ];
    for (change, expected) in cases {
        let mut state = State::new(image(32, 32));
        change(&mut state);
        let s = Arc::new(state);
        let loader = TestLoader::new();
        let tex = create(&loader, &vtable(&s, false), None).unwrap();
        let (got, _) = converge(&loader, &query_grid(tex, 2, 32.0));
        assert!(
            got.iter().all(|g| g.value == [1.0, 0.0, 1.0, 1.0]),
            "{expected}: {got:?}"
        );
        let err = texture_error(&loader, tex);
        assert!(err.contains(expected), "{expected}: {err}");
        assert_eq!(
            s.reads.load(SeqCst),
            0,
            "nothing is read from a bad description"
        );
    }
}

#[test]
fn close_is_not_called_when_creation_fails() {
    let s = Arc::new(State::new(image(16, 16)));
    let loader = TestLoader::new();
    let bad_desc = DtexTextureDesc {
        max_anisotropy: 99,
        ..Default::default()
    };
    assert_eq!(
        create(&loader, &vtable(&s, false), Some(&bad_desc)),
        Err(DTEX_STATUS_INVALID_ARGUMENT)
    );
    let mut cb = vtable(&s, false);
    cb.read_region = None;
    assert_eq!(
        create(&loader, &cb, None),
        Err(DTEX_STATUS_INVALID_ARGUMENT)
    );
    assert!(last_error().contains("open and read_region are required"));
    let mut cb = vtable(&s, false);
    cb.reserved = 1;
    assert_eq!(
        create(&loader, &cb, None),
        Err(DTEX_STATUS_INVALID_ARGUMENT)
    );
    let mut tex = 0;
    let bad_name = [0xffu8, 0];
    // SAFETY: a NUL-terminated (non-UTF-8) name.
    let status = unsafe {
        dtex_texture_create_from_callbacks(
            loader.0,
            &vtable(&s, false),
            bad_name.as_ptr().cast(),
            null(),
            &mut tex,
        )
    };
    fails(status, DTEX_STATUS_INVALID_ARGUMENT);
    // Two good textures over the same user data: one close each.
    create(&loader, &vtable(&s, false), None).unwrap();
    create(&loader, &vtable(&s, false), None).unwrap();
    drop(loader);
    assert_eq!(s.closes.load(SeqCst), 2);
    assert_eq!(s.opens.load(SeqCst), 0, "never sampled, never opened");
}

#[test]
fn a_known_base_colour_is_asked_for() {
    let s = Arc::new(State {
        base_color: Some([0.25, 0.5, 0.75, 1.0]),
        ..State::new(image(128, 128))
    });
    let loader = TestLoader::new();
    let tex = create(&loader, &vtable(&s, true), None).unwrap();
    let _ = converge(&loader, &query_grid(tex, 2, 128.0));
    assert_eq!(s.base_colors.load(SeqCst), 1);
    assert!(texture_error(&loader, tex).is_empty());
}
