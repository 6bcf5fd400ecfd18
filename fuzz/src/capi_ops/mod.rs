//! The C ABI target: an input is a program of C ABI calls, run the way a careless or
//! hostile C host would run it — creations, lookups, launches, tickets, invalidations,
//! replacements, unloads and destructions in any order; stale, forged and wrong-type
//! handles; bad enum values and struct sizes; sources (callbacks) that lie about their
//! image, fail or answer "not yet".
//!
//! Checked beyond "no crash": every status is a defined `DTEX_STATUS_*`, a panic caught at
//! the boundary is a finding (`DTEX_STATUS_INTERNAL`), a ticket waited on forever must end
//! (afl reports a hang otherwise), a callback source is never called after its `close`,
//! and every source a loader took is closed exactly once by the time its loader is
//! destroyed.

mod lying_source;

use capi::cache::*;
use capi::callbacks::*;
use capi::launch::*;
use capi::lifecycle::*;
use capi::loader::*;
use capi::options::*;
use capi::ptex::*;
use capi::sampling::*;
use capi::stats::DtexStats;
use capi::status::*;
use capi::textures::*;
use capi::udim::dtex_udim_expand_pattern;
use capi::{DtexCache, DtexLaunch, DtexLoader, DtexStatus, DtexTicket};
use lying_source::{close_cb, open_cb, read_cb, tail_cb, LyingSource};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Calls one input may make (bounds a run's time).
const MAX_CALLS: usize = 48;
/// Loaders alive at once (each has fill threads).
const MAX_LOADERS: usize = 3;

/// Reads the program's operands; past the end everything is 0.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// True one time in `n`.
    fn one_in(&mut self, n: u8) -> bool {
        self.u8().is_multiple_of(n)
    }
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    /// A float: mostly ordinary texture coordinates, sometimes an edge case.
    fn f32(&mut self) -> f32 {
        match self.u8() % 8 {
            0 => [
                0.0,
                -0.0,
                1.0,
                -1.0,
                f32::NAN,
                f32::INFINITY,
                -f32::INFINITY,
                1e30,
            ][self.u8() as usize % 8],
            1 => f32::from_bits(self.u32()),
            _ => self.u8() as f32 / 128.0 - 0.5,
        }
    }
    /// An index into `len` things, or (one time in 8) a made-up value.
    fn pick(&mut self, len: usize) -> Option<usize> {
        let b = self.u8();
        (len > 0 && b % 8 != 7).then(|| b as usize % len)
    }
    /// A struct size: right, or (one time in 16) wrong.
    fn struct_size(&mut self, right: usize) -> u32 {
        match self.u8() % 16 {
            0 => self.u32() % 512,
            _ => right as u32,
        }
    }
}

/// Files a program can name: the seeds (valid OpenEXR and Ptex), a missing path, a file
/// that is not an image, a directory.
pub struct Files {
    paths: Vec<CString>,
}

impl Files {
    /// Write the non-image file once and list the paths.
    pub fn new() -> Files {
        let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("seeds/exr");
        let junk = std::env::temp_dir().join("demandtex-fuzz-not-an-image.exr");
        let _ = std::fs::write(&junk, b"\x76\x2f\x31\x01 not really");
        let list = |dir: PathBuf| -> Vec<PathBuf> {
            std::fs::read_dir(dir)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default()
        };
        let mut paths = list(seeds.clone());
        paths.extend(list(seeds.with_file_name("ptex")));
        paths.sort();
        paths.extend([seeds.join("missing.exr"), junk, seeds.clone()]);
        let paths = paths
            .iter()
            .filter_map(|p| CString::new(p.to_string_lossy().as_bytes()).ok())
            .collect();
        Files { paths }
    }
}

impl Default for Files {
    fn default() -> Self {
        Files::new()
    }
}

/// Everything the program made, live or not (stale handles are kept on purpose).
#[derive(Default)]
struct World {
    loaders: Vec<DtexLoader>,
    live_loaders: usize,
    caches: Vec<DtexCache>,
    textures: Vec<u32>,
    launches: Vec<DtexLaunch>,
    tickets: Vec<DtexTicket>,
    /// Sources some texture took (close expected by the end).
    taken: Vec<Arc<LyingSource>>,
}

/// A status must be one the header defines, and never a caught panic.
fn checked(status: DtexStatus) -> DtexStatus {
    assert!(
        (DTEX_STATUS_OK..=DTEX_STATUS_INTERNAL).contains(&status),
        "undefined status {status}"
    );
    assert_ne!(
        status,
        DTEX_STATUS_INTERNAL,
        "internal error (a caught panic): {}",
        last_error()
    );
    status
}

fn texture_desc(b: &mut Bytes) -> DtexTextureDesc {
    let mut d = DtexTextureDesc::default();
    if b.one_in(2) {
        return d;
    }
    d.struct_size = b.struct_size(std::mem::size_of::<DtexTextureDesc>());
    d.address_s = b.u8() as u32 % 5;
    d.address_t = b.u8() as u32 % 5;
    d.filter = b.u8() as u32 % 3;
    d.mip_filter = b.u8() as u32 % 3;
    d.max_anisotropy = b.u8() as u32 % 20;
    d
}

fn loader_options(b: &mut Bytes) -> DtexLoaderOptions {
    let budgets = [0, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 64 << 20];
    let mut options = DtexLoaderOptions {
        struct_size: b.struct_size(std::mem::size_of::<DtexLoaderOptions>()),
        num_pages: [0, 1, 64, 4096, 1 << 20, b.u32() % (1 << 24)][b.u8() as usize % 6],
        max_textures: [0, 1, 4, 1000][b.u8() as usize % 4],
        max_texture_memory: budgets[b.u8() as usize % budgets.len()],
        max_requests_per_launch: [0, 1, 8, 4096][b.u8() as usize % 4],
        eviction: b.u8() as u32, // raw here: its high bits give the later switches below
        fill_threads: b.u8() as u32, // raw: its high bits give full_pages
        interactive: b.u8() as u32 % 3,
        ..Default::default()
    };
    // The switches added later take their values from the eviction byte's high bits, so
    // that inputs (the regression ones included) consume the bytes they always did.
    let raw = options.eviction;
    options.eviction = raw % 4;
    options.coalesce_constant_tiles = (raw >> 2) % 3;
    options.fill_by_file_tile = (raw >> 4) % 3;
    options.share_duplicate_textures = (raw >> 6) % 3;
    let threads = options.fill_threads;
    options.fill_threads = threads % 4;
    options.full_pages = (threads >> 2) % 3;
    // No limit (what older inputs get), a limit, and two the engine refuses.
    options.fill_cpu_cores = [0.0, 0.5, -1.0, f32::NAN][(threads >> 6) as usize];
    options
}

/// Run one program.
pub fn run(data: &[u8], files: &Files) {
    let mut b = Bytes { data, pos: 0 };
    let mut w = World::default();
    for _ in 0..MAX_CALLS {
        if b.done() {
            break;
        }
        step(&mut b, &mut w, files);
    }
    finish(w);
}

fn loader(b: &mut Bytes, w: &World) -> DtexLoader {
    match b.pick(w.loaders.len()) {
        Some(i) => w.loaders[i],
        None => DtexLoader {
            id: b.u32() as u64 | (b.u8() as u64) << 32,
        },
    }
}

fn texture(b: &mut Bytes, w: &World) -> u32 {
    match b.pick(w.textures.len()) {
        Some(i) => w.textures[i],
        None => [DTEX_NO_TEXTURE, 0, b.u32()][b.u8() as usize % 3],
    }
}

fn launch(b: &mut Bytes, w: &World) -> DtexLaunch {
    match b.pick(w.launches.len()) {
        Some(i) => w.launches[i],
        None => DtexLaunch { id: b.u32() as u64 },
    }
}

fn ticket(b: &mut Bytes, w: &World) -> DtexTicket {
    match b.pick(w.tickets.len()) {
        Some(i) => w.tickets[i],
        None => DtexTicket { id: b.u32() as u64 },
    }
}

fn path<'a>(b: &mut Bytes, files: &'a Files) -> &'a CString {
    &files.paths[b.u8() as usize % files.paths.len()]
}

fn query(b: &mut Bytes, w: &World) -> DtexGradQuery {
    DtexGradQuery {
        texture: texture(b, w),
        s: b.f32(),
        t: b.f32(),
        dsdx: b.f32(),
        dtdx: b.f32(),
        dsdy: b.f32(),
        dtdy: b.f32(),
    }
}

fn sample_options(b: &mut Bytes) -> DtexSampleOptions {
    DtexSampleOptions {
        struct_size: b.struct_size(std::mem::size_of::<DtexSampleOptions>()),
        fallback_to_coarser: b.u8() as u32 % 3,
        request_key: b.u32(),
        stochastic: b.u8() as u32 % 3,
        jitter: [b.f32(), b.f32()],
    }
}

fn step(b: &mut Bytes, w: &mut World, files: &Files) {
    let mut tex = DTEX_NO_TEXTURE;
    let op = b.u8() % 28;
    match op {
        0 if w.live_loaders < MAX_LOADERS => {
            let options = loader_options(b);
            let mut l = DtexLoader::default();
            // SAFETY: valid pointers.
            if checked(unsafe { dtex_loader_create(&options, &mut l) }) == DTEX_STATUS_OK {
                w.loaders.push(l);
                w.live_loaders += 1;
            }
        }
        1 => {
            if checked(dtex_loader_destroy(loader(b, w))) == DTEX_STATUS_OK {
                w.live_loaders -= 1;
            }
        }
        2 => {
            let p = DtexProceduralDesc {
                struct_size: b.struct_size(std::mem::size_of::<DtexProceduralDesc>()),
                kind: b.u8() as u32 % 4,
                width: [0, 1, 7, 64, 300, 4096, 70000][b.u8() as usize % 7],
                height: [0, 1, 5, 64, 513, 4096][b.u8() as usize % 6],
                texel_type: b.u8() as u32 % 5,
                channels: b.u8() as u32 % 6,
                param: b.u32(),
                reserved: b.one_in(8) as u32,
            };
            let (l, d) = (loader(b, w), texture_desc(b));
            // SAFETY: valid pointers.
            checked(unsafe { dtex_texture_create_procedural(l, &p, &d, &mut tex) });
        }
        3 => {
            let (l, p, d) = (loader(b, w), path(b, files), texture_desc(b));
            // SAFETY: valid pointers, NUL-terminated path.
            checked(unsafe { dtex_texture_create_from_file(l, p.as_ptr(), &d, &mut tex) });
        }
        4 => {
            let s = Arc::new(LyingSource {
                info: DtexImageInfo {
                    width: [0, 1, 3, 64, 129, 4096, 65537][b.u8() as usize % 7],
                    height: [0, 1, 2, 64, 200, 65536][b.u8() as usize % 6],
                    texel_type: b.u8() as u32 % 5,
                    channels: b.u8() as u32 % 6,
                    num_levels: b.u8() as u32 % 20,
                },
                mode: b.u8() as u32 % 6,
                fill: b.u8(),
                reads: AtomicU32::new(0),
                closes: AtomicU32::new(0),
            });
            let cb = DtexImageSourceCallbacks {
                struct_size: b.struct_size(std::mem::size_of::<DtexImageSourceCallbacks>()),
                reserved: 0,
                user_data: Arc::as_ptr(&s) as *mut c_void,
                open: Some(open_cb),
                read_region: Some(read_cb),
                read_mip_tail: b.one_in(2).then_some(tail_cb as _),
                read_base_color: None,
                close: Some(close_cb),
            };
            let (l, d) = (loader(b, w), texture_desc(b));
            // SAFETY: valid pointers; the source outlives the loader (kept in `w.taken`).
            let status = unsafe {
                dtex_texture_create_from_callbacks(l, &cb, c"fuzz".as_ptr(), &d, &mut tex)
            };
            if checked(status) == DTEX_STATUS_OK {
                w.taken.push(s);
            }
        }
        5 => {
            let mut launch = DtexLaunch::default();
            // SAFETY: valid pointer.
            if checked(unsafe { dtex_launch_prepare(loader(b, w), &mut launch) }) == DTEX_STATUS_OK
            {
                w.launches.push(launch);
            }
        }
        6 => {
            let (l, q, o) = (launch(b, w), query(b, w), sample_options(b));
            let mut out = DtexSample::default();
            // SAFETY: valid pointers.
            checked(unsafe {
                dtex_launch_tex2d_grad(
                    l, q.texture, q.s, q.t, q.dsdx, q.dtdx, q.dsdy, q.dtdy, &o, &mut out,
                )
            });
        }
        7 => {
            let l = launch(b, w);
            let n = b.u8() as usize % 17;
            let queries: Vec<DtexGradQuery> = (0..n).map(|_| query(b, w)).collect();
            let mut out = vec![DtexSample::default(); n];
            let mut resident = 0usize;
            // SAFETY: arrays of n elements.
            checked(unsafe {
                dtex_launch_tex2d_grad_batch(
                    l,
                    queries.as_ptr(),
                    n,
                    null(),
                    out.as_mut_ptr(),
                    &mut resident,
                )
            });
        }
        8 => {
            let mut t = DtexTicket::default();
            // SAFETY: valid pointer.
            if checked(unsafe { dtex_process_requests(launch(b, w), &mut t) }) == DTEX_STATUS_OK {
                w.tickets.push(t);
            }
        }
        9 => {
            let (t, forever) = (ticket(b, w), b.one_in(2));
            checked(dtex_ticket_wait(
                t,
                if forever { DTEX_WAIT_FOREVER } else { 0 },
            ));
        }
        10 => {
            let (mut done, mut left, mut total) = (0u32, 0u64, 0u64);
            // SAFETY: valid pointers.
            checked(unsafe { dtex_ticket_poll(ticket(b, w), &mut done, &mut left, &mut total) });
        }
        11 => {
            checked(dtex_ticket_destroy(ticket(b, w)));
        }
        12 => {
            checked(dtex_launch_discard(launch(b, w)));
        }
        13 => {
            checked(dtex_texture_invalidate(loader(b, w), texture(b, w)));
        }
        14 => {
            checked(dtex_texture_unload(loader(b, w), texture(b, w)));
        }
        15 => {
            let (l, t, p) = (loader(b, w), texture(b, w), path(b, files));
            // SAFETY: valid NUL-terminated path, NULL desc (the defaults).
            checked(unsafe { dtex_texture_replace_from_file(l, t, p.as_ptr(), null()) });
        }
        16 => {
            let bytes = [0, 1, 65536, 1 << 20, 64 << 20, u64::MAX][b.u8() as usize % 6];
            checked(dtex_loader_set_max_texture_memory(loader(b, w), bytes));
        }
        17 => {
            let mut s = DtexStats {
                struct_size: b.struct_size(std::mem::size_of::<DtexStats>()),
                ..Default::default()
            };
            // SAFETY: valid pointer; struct_size never exceeds the struct.
            s.struct_size = s.struct_size.min(std::mem::size_of::<DtexStats>() as u32);
            checked(unsafe { dtex_loader_get_stats(loader(b, w), &mut s) });
        }
        18 => {
            if b.one_in(2) && w.caches.len() < 2 {
                let options = loader_options(b);
                let mut c = DtexCache::default();
                // SAFETY: valid pointers.
                if checked(unsafe { dtex_cache_create(&options, &mut c) }) == DTEX_STATUS_OK {
                    w.caches.push(c);
                }
            } else if let Some(i) = b.pick(w.caches.len()) {
                checked(dtex_cache_destroy(w.caches[i]));
            }
        }
        19 => {
            let Some(i) = b.pick(w.caches.len()) else {
                return;
            };
            let (c, p) = (w.caches[i], path(b, files));
            // SAFETY: valid pointers.
            checked(unsafe { dtex_cache_texture_for_path(c, p.as_ptr(), null(), &mut tex) });
            let q = query(b, w);
            let q_tex = if b.one_in(2) { tex } else { q.texture };
            let mut out = DtexSample::default();
            // SAFETY: valid pointers.
            checked(unsafe {
                dtex_cache_tex2d_grad(
                    c,
                    q_tex,
                    q.s,
                    q.t,
                    q.dsdx,
                    q.dtdx,
                    q.dsdy,
                    q.dtdy,
                    null(),
                    &mut out,
                )
            });
            tex = DTEX_NO_TEXTURE; // a cache's texture ids are not a loader's
        }
        20 => {
            let n = b.u8() as usize % 24;
            let text: Vec<u8> = (0..n).map(|_| b.u8().max(1)).collect();
            let pattern = CString::new(text).expect("no NUL: every byte is at least 1");
            let mut count = 0u32;
            // SAFETY: valid pattern and out pointer; no callback.
            checked(unsafe {
                dtex_udim_expand_pattern(pattern.as_ptr(), None, null_mut(), &mut count)
            });
        }
        21 => {
            let (l, p) = (loader(b, w), path(b, files));
            // SAFETY: valid pointers, NUL-terminated path.
            checked(unsafe { dtex_ptex_create(l, p.as_ptr(), &mut tex) });
            if tex != DTEX_NO_TEXTURE {
                let mut info = DtexPtexInfo {
                    struct_size: b.struct_size(std::mem::size_of::<DtexPtexInfo>()),
                    ..Default::default()
                };
                info.struct_size = info
                    .struct_size
                    .min(std::mem::size_of::<DtexPtexInfo>() as u32);
                // SAFETY: valid pointer; struct_size never exceeds the struct.
                checked(unsafe { dtex_ptex_get_info(l, tex, &mut info) });
            }
        }
        22 | 23 => {
            let blocking = b.one_in(2);
            let (texture, face) = (texture(b, w), [0, 1, 3, b.u32()][b.u8() as usize % 4]);
            let o = DtexPtexFilterOptions {
                struct_size: b.struct_size(std::mem::size_of::<DtexPtexFilterOptions>()),
                filter: b.u8() as u32 % 12,
                lerp: b.u8() as u32 % 3,
                noedgeblend: b.u8() as u32 % 3,
                sharpness: b.f32(),
                width: b.f32(),
                blur: b.f32(),
                first_channel: b.u8() as u32 % 6,
                jitter_u: b.f32(),
                jitter_v: b.f32(),
            };
            let (u, v, d) = (b.f32(), b.f32(), b.f32());
            let channels = b.u8() as usize % 6;
            let mut out = [0f32; 8];
            let mut result = DtexPtexSampled::default();
            // SAFETY: `out` holds at least `channels` floats; valid pointers.
            checked(unsafe {
                if blocking {
                    let Some(i) = b.pick(w.caches.len()) else {
                        return;
                    };
                    let c = w.caches[i];
                    dtex_cache_ptex_sample(
                        c,
                        texture,
                        face,
                        u,
                        v,
                        d,
                        0.0,
                        0.0,
                        d,
                        &o,
                        out.as_mut_ptr(),
                        channels,
                        &mut result,
                    )
                } else {
                    dtex_launch_ptex_sample(
                        launch(b, w),
                        texture,
                        face,
                        u,
                        v,
                        d,
                        0.0,
                        0.0,
                        d,
                        &o,
                        out.as_mut_ptr(),
                        channels,
                        &mut result,
                    )
                }
            });
        }
        24 => {
            let Some(i) = b.pick(w.caches.len()) else {
                return;
            };
            let (c, p) = (w.caches[i], path(b, files));
            // SAFETY: valid pointers, NUL-terminated path.
            checked(unsafe { dtex_cache_ptex_create(c, p.as_ptr(), &mut tex) });
        }
        25 | 26 => {
            // An environment lookup: any direction and differentials, an up axis that may
            // be unknown, a NULL vector now and then; through a launch (25) or a cache (26).
            let (texture, o) = (texture(b, w), sample_options(b));
            let mut vec3 = || [b.f32(), b.f32(), b.f32()];
            let (r, drdx, drdy) = (vec3(), vec3(), vec3());
            let up = b.u32() % 3;
            let r_ptr = if b.one_in(8) { null() } else { r.as_ptr() };
            let mut out = DtexSample::default();
            if op == 25 {
                let l = launch(b, w);
                // SAFETY: valid pointers (or NULL, which the call checks).
                checked(unsafe {
                    dtex_launch_environment(
                        l,
                        texture,
                        r_ptr,
                        drdx.as_ptr(),
                        drdy.as_ptr(),
                        up,
                        &o,
                        &mut out,
                    )
                });
            } else if let Some(i) = b.pick(w.caches.len()) {
                let (c, p) = (w.caches[i], path(b, files));
                let mut cached = DTEX_NO_TEXTURE;
                // SAFETY: valid pointers.
                checked(unsafe { dtex_cache_texture_for_path(c, p.as_ptr(), null(), &mut cached) });
                // SAFETY: as above.
                checked(unsafe {
                    dtex_cache_environment(
                        c,
                        cached,
                        r_ptr,
                        drdx.as_ptr(),
                        drdy.as_ptr(),
                        up,
                        &o,
                        &mut out,
                    )
                });
            }
        }
        _ => {
            let s = dtex_status_string(b.u32() as i32);
            assert!(!s.is_null());
            assert!(!dtex_last_error_message().is_null());
        }
    }
    if tex != DTEX_NO_TEXTURE {
        w.textures.push(tex);
    }
}

/// Tear down as a host would at exit, then check the sources' closes.
fn finish(w: World) {
    for t in &w.tickets {
        let _ = checked(dtex_ticket_wait(*t, DTEX_WAIT_FOREVER));
        let _ = checked(dtex_ticket_destroy(*t));
    }
    for l in &w.launches {
        let _ = checked(dtex_launch_discard(*l));
    }
    for c in &w.caches {
        let _ = checked(dtex_cache_destroy(*c));
    }
    for l in &w.loaders {
        let _ = checked(dtex_loader_destroy(*l));
    }
    for s in &w.taken {
        assert_eq!(
            s.closes.load(Ordering::SeqCst),
            1,
            "a source its loader took was not closed exactly once by loader destruction"
        );
    }
}
