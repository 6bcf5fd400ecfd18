//! Texture lifecycle through the C ABI (invalidate, unload, replace, errors): what lookups
//! see, which callbacks run, and `close` exactly once.

use super::util::*;
use crate::callbacks::*;
use crate::handles::{DtexLaunch, DtexLoader};
use crate::launch::dtex_launch_discard;
use crate::lifecycle::*;
use crate::loader::dtex_loader_destroy;
use crate::options::*;
use crate::pixels::*;
use crate::sampling::DtexSample;
use crate::status::*;
use crate::textures::*;
use engine::sources::{ImageSource, InMemoryImage, Readiness};
use engine::textures::{TexelType, TileRegion};
use std::ffi::{c_void, CString};
use std::ptr::null;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// RGBA8 texels that differ from texel to texel and with `seed`.
fn pattern(width: u32, height: u32, seed: u32) -> Vec<u8> {
    (0..width * height * 4)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed * 97) >> 13) as u8)
        .collect()
}

/// The value a point lookup of texel (x, y) of level 0 of `data` gives.
fn texel(data: &[u8], width: u32, x: u32, y: u32) -> [f32; 4] {
    let i = ((y * width + x) * 4) as usize;
    std::array::from_fn(|c| data[i + c] as f32 / 255.0)
}

/// Lookups of 8-bit texels equal the texel to within rounding of the 1/255 scale.
#[track_caller]
fn assert_close(got: [f32; 4], want: [f32; 4]) {
    let close = got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 1e-6);
    assert!(close, "got {got:?}, want {want:?}");
}

/// Point sampling of exact texels, clamped, with a recognisable fallback colour.
fn exact_desc() -> DtexTextureDesc {
    DtexTextureDesc {
        address_s: DTEX_ADDRESS_CLAMP,
        address_t: DTEX_ADDRESS_CLAMP,
        filter: DTEX_FILTER_POINT,
        mip_filter: DTEX_FILTER_POINT,
        fallback_color: [0.25, 0.5, 0.75, 1.0],
        ..Default::default()
    }
}

/// A callback source over an in-memory image, counting its calls.
struct Source {
    image: InMemoryImage,
    info: DtexImageInfo,
    data: Vec<u8>,
    /// `open` answers ERROR with this message.
    open_error: Option<CString>,
    opens: AtomicUsize,
    reads: AtomicUsize,
    closes: AtomicUsize,
}

impl Source {
    fn new(width: u32, height: u32, seed: u32) -> Arc<Source> {
        let data = pattern(width, height, seed);
        let image =
            InMemoryImage::new(width, height, TexelType::U8, 4, data.clone(), true).unwrap();
        Arc::new(Source {
            info: DtexImageInfo {
                width,
                height,
                texel_type: DTEX_TEXEL_U8,
                channels: 4,
                num_levels: image.num_levels(),
            },
            image,
            data,
            open_error: None,
            opens: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            closes: AtomicUsize::new(0),
        })
    }

    fn failing(message: &str) -> Arc<Source> {
        let mut s = Arc::into_inner(Source::new(8, 8, 0)).unwrap();
        s.open_error = Some(CString::new(message).unwrap());
        Arc::new(s)
    }

    fn texel(&self, x: u32, y: u32) -> [f32; 4] {
        texel(&self.data, self.info.width, x, y)
    }
}

fn source<'a>(user: *mut c_void) -> &'a Source {
    // SAFETY: the tests pass `Arc::as_ptr` of a Source they keep alive.
    unsafe { &*(user as *const Source) }
}

unsafe extern "C" fn open_cb(user: *mut c_void, out: *mut DtexImageInfo) -> i32 {
    let s = source(user);
    s.opens.fetch_add(1, SeqCst);
    if let Some(m) = &s.open_error {
        // SAFETY: a C string.
        unsafe { dtex_source_set_error(m.as_ptr()) };
        return DTEX_SOURCE_ERROR;
    }
    // SAFETY: the library passes a writable DtexImageInfo.
    unsafe { *out = s.info };
    DTEX_SOURCE_READY
}

unsafe extern "C" fn read_cb(
    user: *mut c_void,
    r: *const DtexTileRegion,
    dest: *mut c_void,
    len: usize,
    row_bytes: usize,
) -> i32 {
    let s = source(user);
    s.reads.fetch_add(1, SeqCst);
    // SAFETY: the library passes a valid region and a destination of `len` bytes.
    let (r, dest) = unsafe { (&*r, std::slice::from_raw_parts_mut(dest as *mut u8, len)) };
    let region = TileRegion {
        level: r.level,
        x: r.x,
        y: r.y,
        width: r.width,
        height: r.height,
    };
    match s.image.read_region(region, dest, row_bytes) {
        Ok(Readiness::Ready) => DTEX_SOURCE_READY,
        _ => DTEX_SOURCE_ERROR,
    }
}

unsafe extern "C" fn close_cb(user: *mut c_void) {
    source(user).closes.fetch_add(1, SeqCst);
}

fn vtable(s: &Arc<Source>) -> DtexImageSourceCallbacks {
    DtexImageSourceCallbacks {
        struct_size: std::mem::size_of::<DtexImageSourceCallbacks>() as u32,
        reserved: 0,
        user_data: Arc::as_ptr(s) as *mut c_void,
        open: Some(open_cb),
        read_region: Some(read_cb),
        read_mip_tail: None,
        read_base_color: None,
        close: Some(close_cb),
    }
}

fn create(loader: &TestLoader, s: &Arc<Source>) -> u32 {
    let mut tex = DTEX_NO_TEXTURE;
    let desc = exact_desc();
    // SAFETY: valid pointers; the vtable honours its contract.
    ok(unsafe {
        dtex_texture_create_from_callbacks(loader.0, &vtable(s), null(), &desc, &mut tex)
    });
    tex
}

fn replace(loader: DtexLoader, tex: u32, cb: &DtexImageSourceCallbacks) -> DtexStatus {
    let desc = exact_desc();
    let name = cstring("replacement");
    // SAFETY: valid pointers; the vtable honours its contract.
    unsafe { dtex_texture_replace_from_callbacks(loader, tex, cb, name.as_ptr(), &desc) }
}

/// Level-0 point lookups at texel centres.
fn lookup(
    launch: DtexLaunch,
    tex: u32,
    size: (u32, u32),
    texels: &[(u32, u32)],
) -> Vec<DtexSample> {
    let points: Vec<_> = texels
        .iter()
        .map(|&(x, y)| {
            (
                (x as f32 + 0.5) / size.0 as f32,
                (y as f32 + 0.5) / size.1 as f32,
                0.0,
            )
        })
        .collect();
    lod_lookups(launch, tex, &points)
}

/// Run the multi-pass loop until the texels are resident; returns their values and the
/// launches it took.
fn converge_texels(
    loader: &TestLoader,
    tex: u32,
    size: (u32, u32),
    texels: &[(u32, u32)],
) -> (Vec<[f32; 4]>, usize) {
    for n in 1..=20 {
        let launch = loader.launch();
        let samples = lookup(launch, tex, size, texels);
        if samples.iter().all(|s| s.resident == 1) {
            ok(dtex_launch_discard(launch));
            return (samples.iter().map(|s| s.value).collect(), n);
        }
        process_and_wait(launch);
    }
    panic!("texture {tex} did not converge: {}", last_error());
}

const TEXELS: [(u32, u32); 3] = [(0, 0), (5, 3), (31, 7)];

#[test]
fn invalidate_drops_the_contents_and_reopens_the_source() {
    let loader = TestLoader::new();
    let src = Source::new(32, 8, 1);
    let tex = create(&loader, &src);
    let (values, _) = converge_texels(&loader, tex, (32, 8), &TEXELS);
    for (v, &(x, y)) in values.iter().zip(&TEXELS) {
        assert_close(*v, src.texel(x, y));
    }
    assert_eq!(src.opens.load(SeqCst), 1);
    let reads = src.reads.load(SeqCst);

    // The live launch sees the texture non-resident from the call on.
    let live = loader.launch();
    assert!(lookup(live, tex, (32, 8), &TEXELS)
        .iter()
        .all(|s| s.resident == 1));
    ok(dtex_texture_invalidate(loader.0, tex));
    assert!(lookup(live, tex, (32, 8), &TEXELS)
        .iter()
        .all(|s| s.resident == 0));
    ok(dtex_launch_discard(live));

    let (values, launches) = converge_texels(&loader, tex, (32, 8), &TEXELS);
    assert!(launches >= 2, "reopened in {launches} launches");
    for (v, &(x, y)) in values.iter().zip(&TEXELS) {
        assert_close(*v, src.texel(x, y));
    }
    assert_eq!(src.opens.load(SeqCst), 2, "opened again after invalidate");
    assert!(
        src.reads.load(SeqCst) > reads,
        "read again after invalidate"
    );
    assert_eq!(src.closes.load(SeqCst), 0, "invalidate keeps the source");

    fails(
        dtex_texture_invalidate(loader.0, 999),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    fails(
        dtex_texture_invalidate(DtexLoader::default(), tex),
        DTEX_STATUS_INVALID_HANDLE,
    );
    ok(dtex_loader_destroy(loader.0));
    assert_eq!(src.closes.load(SeqCst), 1);
}

#[test]
fn unload_closes_the_source_and_samples_the_fallback_colour() {
    let loader = TestLoader::new();
    let src = Source::new(32, 8, 2);
    let tex = create(&loader, &src);
    converge_texels(&loader, tex, (32, 8), &TEXELS);
    ok(dtex_texture_get_error(loader.0, tex));

    let live = loader.launch();
    ok(dtex_texture_unload(loader.0, tex));
    assert_eq!(
        src.closes.load(SeqCst),
        1,
        "closed at once: no fill was running"
    );
    // Even the live launch sees the fallback colour, resident; and so do later ones.
    for n in 0..2 {
        let launch = if n == 0 { live } else { loader.launch() };
        for s in lookup(launch, tex, (32, 8), &TEXELS) {
            assert_eq!((s.resident, s.value), (1, exact_desc().fallback_color));
        }
        ok(dtex_launch_discard(launch));
    }
    let why = fails(
        dtex_texture_get_error(loader.0, tex),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    assert!(why.contains("unloaded"), "{why}");
    ok(dtex_texture_unload(loader.0, tex)); // twice is fine
    fails(
        dtex_texture_invalidate(loader.0, tex),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    // Replacing an unloaded texture fails, and the new callbacks are not closed.
    let other = Source::new(8, 8, 3);
    fails(
        replace(loader.0, tex, &vtable(&other)),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    fails(
        dtex_texture_unload(loader.0, 999),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    fails(
        dtex_texture_unload(DtexLoader { id: 7 }, tex),
        DTEX_STATUS_INVALID_HANDLE,
    );
    ok(dtex_loader_destroy(loader.0));
    assert_eq!(src.closes.load(SeqCst), 1, "closed exactly once");
    assert_eq!(other.closes.load(SeqCst), 0);
    assert_eq!(other.opens.load(SeqCst), 0);
}

#[test]
fn replace_from_callbacks_switches_the_source_and_closes_the_old_one() {
    let loader = TestLoader::new();
    let first = Source::new(32, 8, 4);
    let tex = create(&loader, &first);
    converge_texels(&loader, tex, (32, 8), &TEXELS);

    // Another size: 16 x 64.
    let second = Source::new(16, 64, 5);
    ok(replace(loader.0, tex, &vtable(&second)));
    assert_eq!(
        first.closes.load(SeqCst),
        1,
        "the old source is dropped at once"
    );
    let texels = [(0, 0), (15, 63), (3, 40)];
    let (values, launches) = converge_texels(&loader, tex, (16, 64), &texels);
    assert!(launches >= 2);
    for (v, &(x, y)) in values.iter().zip(&texels) {
        assert_close(*v, second.texel(x, y));
    }
    assert_eq!(second.opens.load(SeqCst), 1);

    // Failures leave the texture as it was and never close the new callbacks.
    let third = Source::new(8, 8, 6);
    let mut no_read = vtable(&third);
    no_read.read_region = None;
    fails(
        replace(loader.0, tex, &no_read),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    let mut bad_size = vtable(&third);
    bad_size.struct_size = 8;
    fails(
        replace(loader.0, tex, &bad_size),
        DTEX_STATUS_INVALID_ARGUMENT,
    );
    fails(
        replace(loader.0, 999, &vtable(&third)),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    fails(
        replace(DtexLoader::default(), tex, &vtable(&third)),
        DTEX_STATUS_INVALID_HANDLE,
    );
    let bad_desc = DtexTextureDesc {
        max_anisotropy: 0,
        ..Default::default()
    };
    // SAFETY: valid pointers.
    let status = unsafe {
        dtex_texture_replace_from_callbacks(loader.0, tex, &vtable(&third), null(), &bad_desc)
    };
    fails(status, DTEX_STATUS_INVALID_ARGUMENT);
    // SAFETY: NULL callbacks are an error, not a crash.
    let status =
        unsafe { dtex_texture_replace_from_callbacks(loader.0, tex, null(), null(), null()) };
    fails(status, DTEX_STATUS_INVALID_ARGUMENT);
    assert_eq!(third.closes.load(SeqCst), 0);
    let (values, _) = converge_texels(&loader, tex, (16, 64), &texels);
    assert_close(values[1], second.texel(15, 63)); // unchanged by the failures

    ok(dtex_loader_destroy(loader.0));
    assert_eq!(first.closes.load(SeqCst), 1);
    assert_eq!(second.closes.load(SeqCst), 1);
    assert_eq!(third.closes.load(SeqCst), 0);
}

#[test]
fn replace_from_file_reads_the_new_file() {
    let dir = TempDir::new("replace");
    let exr = dir.path().join("ramp.exr");
    write_exr(&exr, 24, 12, |x, y| [x as f32, y as f32, 0.5, 1.0]);
    let loader = TestLoader::new();
    let src = Source::new(32, 8, 7);
    let tex = create(&loader, &src);
    converge_texels(&loader, tex, (32, 8), &TEXELS);

    let path = cpath(&exr);
    let desc = exact_desc();
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_replace_from_file(loader.0, tex, path.as_ptr(), &desc) });
    assert_eq!(src.closes.load(SeqCst), 1);
    let texels = [(0, 0), (23, 11), (7, 4)];
    let (values, _) = converge_texels(&loader, tex, (24, 12), &texels);
    for (v, &(x, y)) in values.iter().zip(&texels) {
        assert_eq!(*v, [x as f32, y as f32, 0.5, 1.0]);
    }

    let not_exr = dir.path().join("not.exr");
    std::fs::write(&not_exr, b"P6 1 1 255 abc").unwrap();
    let missing = dir.path().join("missing.exr");
    for (p, status) in [
        (&not_exr, DTEX_STATUS_UNSUPPORTED),
        (&missing, DTEX_STATUS_IO_ERROR),
    ] {
        let c = cpath(p);
        // SAFETY: valid pointers.
        let s = unsafe { dtex_texture_replace_from_file(loader.0, tex, c.as_ptr(), null()) };
        fails(s, status);
    }
    // SAFETY: NULL path is an error, not a crash.
    let s = unsafe { dtex_texture_replace_from_file(loader.0, tex, null(), null()) };
    fails(s, DTEX_STATUS_INVALID_ARGUMENT);
    // SAFETY: valid pointers.
    let s = unsafe { dtex_texture_replace_from_file(loader.0, 999, path.as_ptr(), null()) };
    fails(s, DTEX_STATUS_UNKNOWN_TEXTURE);
    // The failures left the file's contents in place.
    let (values, _) = converge_texels(&loader, tex, (24, 12), &texels);
    assert_eq!(values[1], [23.0, 11.0, 0.5, 1.0]);
}

#[test]
fn get_error_reports_failed_unknown_and_healthy_textures() {
    let loader = TestLoader::new();
    let good = Source::new(8, 8, 8);
    let bad = Source::failing("boom: cannot open");
    let good_tex = create(&loader, &good);
    let bad_tex = create(&loader, &bad);
    // Healthy before anything was opened.
    ok(dtex_texture_get_error(loader.0, good_tex));
    ok(dtex_texture_get_error(loader.0, bad_tex));

    let launch = loader.launch();
    lookup(launch, good_tex, (8, 8), &[(1, 1)]);
    lookup(launch, bad_tex, (8, 8), &[(1, 1)]);
    process_and_wait(launch);
    ok(dtex_texture_get_error(loader.0, good_tex));
    let why = fails(
        dtex_texture_get_error(loader.0, bad_tex),
        DTEX_STATUS_SOURCE_ERROR,
    );
    assert!(why.contains("boom: cannot open"), "{why}");
    // A failed texture samples its fallback colour.
    let launch = loader.launch();
    let s = lookup(launch, bad_tex, (8, 8), &[(1, 1)]);
    assert_eq!(
        (s[0].resident, s[0].value),
        (1, exact_desc().fallback_color)
    );
    ok(dtex_launch_discard(launch));

    let why = fails(
        dtex_texture_get_error(loader.0, 2),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    assert!(why.contains("never created"), "{why}");
    fails(
        dtex_texture_get_error(loader.0, DTEX_NO_TEXTURE),
        DTEX_STATUS_UNKNOWN_TEXTURE,
    );
    fails(
        dtex_texture_get_error(DtexLoader::default(), good_tex),
        DTEX_STATUS_INVALID_HANDLE,
    );
    // Invalidate retries a failed texture: it fails again, as the source still does.
    ok(dtex_texture_invalidate(loader.0, bad_tex));
    ok(dtex_texture_get_error(loader.0, bad_tex));
    let launch = loader.launch();
    lookup(launch, bad_tex, (8, 8), &[(1, 1)]);
    process_and_wait(launch);
    fails(
        dtex_texture_get_error(loader.0, bad_tex),
        DTEX_STATUS_SOURCE_ERROR,
    );
    assert_eq!(bad.opens.load(SeqCst), 2);
}

#[test]
fn borrowed_pixels_are_released_by_unload() {
    // Unload drops a borrowed-pixel source at once when no fill runs: the caller may free
    // the pixels right after (valgrind / ASan in the consumer tests would catch a read).
    let loader = TestLoader::new();
    let pixels = pattern(16, 16, 9);
    let info = DtexImageInfo {
        width: 16,
        height: 16,
        texel_type: DTEX_TEXEL_U8,
        channels: 4,
        num_levels: 0,
    };
    let mut tex = 0;
    let desc = exact_desc();
    // SAFETY: `pixels` outlives the texture (unloaded below, before it is dropped).
    ok(unsafe {
        dtex_texture_create_from_pixels(
            loader.0,
            &info,
            pixels.as_ptr().cast(),
            0,
            DTEX_PIXELS_BORROW,
            &desc,
            &mut tex,
        )
    });
    let (values, _) = converge_texels(&loader, tex, (16, 16), &[(3, 9)]);
    assert_close(values[0], texel(&pixels, 16, 3, 9));
    ok(dtex_texture_unload(loader.0, tex));
    drop(pixels);
    let launch = loader.launch();
    let s = lookup(launch, tex, (16, 16), &[(3, 9)]);
    assert_eq!((s[0].resident, s[0].value), (1, desc.fallback_color));
    ok(dtex_launch_discard(launch));
}

/// `dtex_texture_get_image_info`: nothing before the texture opens, its size and format
/// once its first lookups were filled; UNKNOWN_TEXTURE for an id never handed out,
/// INVALID_ARGUMENT for NULL outputs.
#[test]
fn image_info_is_known_once_the_texture_opened() {
    let loader = TestLoader::new();
    let src = Source::new(32, 8, 3);
    let tex = create(&loader, &src);
    let mut info = DtexImageInfo::default();
    let mut opened = 7u32;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_get_image_info(loader.0, tex, &mut info, &mut opened) });
    assert_eq!((opened, info), (0, DtexImageInfo::default()));
    converge_texels(&loader, tex, (32, 8), &TEXELS);
    // SAFETY: as above.
    ok(unsafe { dtex_texture_get_image_info(loader.0, tex, &mut info, &mut opened) });
    assert_eq!(opened, 1);
    assert_eq!(
        (info.width, info.height, info.texel_type, info.channels),
        (32, 8, DTEX_TEXEL_U8, 4)
    );
    assert!(info.num_levels >= 1);
    // SAFETY: as above; the NULL outputs are what is checked.
    unsafe {
        fails(
            dtex_texture_get_image_info(loader.0, 999, &mut info, &mut opened),
            DTEX_STATUS_UNKNOWN_TEXTURE,
        );
        fails(
            dtex_texture_get_image_info(loader.0, tex, std::ptr::null_mut(), &mut opened),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        fails(
            dtex_texture_get_image_info(loader.0, tex, &mut info, std::ptr::null_mut()),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
    }
}
