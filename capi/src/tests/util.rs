//! Helpers shared by the tests: status checks, loaders, the multi-pass loop, temp files,
//! a blocking cache.

use crate::cache::{
    dtex_cache_create, dtex_cache_destroy, dtex_cache_tex2d_grad, dtex_cache_texture_for_path,
};
use crate::handles::{DtexCache, DtexLaunch, DtexLoader};
use crate::launch::{dtex_launch_discard, dtex_launch_prepare, dtex_process_requests};
use crate::launch::{dtex_ticket_destroy, dtex_ticket_wait, DTEX_WAIT_FOREVER};
use crate::loader::{dtex_loader_create, dtex_loader_destroy};
use crate::options::{DtexLoaderOptions, DtexTextureDesc};
use crate::sampling::{dtex_launch_tex2d_grad_batch, DtexGradQuery, DtexSample};
use crate::stats::DtexStats;
use crate::status::{last_error, DtexStatus, DTEX_STATUS_OK};
use crate::textures::DTEX_NO_TEXTURE;
use crate::DtexTicket;
use std::path::{Path, PathBuf};
use std::ptr::null;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Assert that a call succeeded, showing the last error message if not.
#[track_caller]
pub fn ok(status: DtexStatus) {
    assert_eq!(status, DTEX_STATUS_OK, "failed: {}", last_error());
}

/// Assert a failure status and return the message.
#[track_caller]
pub fn fails(status: DtexStatus, expected: DtexStatus) -> String {
    assert_eq!(status, expected, "message: {}", last_error());
    last_error()
}

/// Small loader options for tests: 1M pages, 2 fill threads, 64 MiB.
pub fn small_options() -> DtexLoaderOptions {
    DtexLoaderOptions {
        num_pages: 1 << 20,
        max_texture_memory: 64 << 20,
        fill_threads: 2,
        ..Default::default()
    }
}

/// A loader, destroyed on drop.
pub struct TestLoader(pub DtexLoader);

impl TestLoader {
    pub fn new() -> TestLoader {
        TestLoader::with(small_options())
    }

    pub fn with(options: DtexLoaderOptions) -> TestLoader {
        let mut l = DtexLoader::default();
        // SAFETY: valid pointers.
        ok(unsafe { dtex_loader_create(&options, &mut l) });
        TestLoader(l)
    }

    pub fn stats(&self) -> DtexStats {
        let mut s = DtexStats {
            struct_size: std::mem::size_of::<DtexStats>() as u32,
            ..Default::default()
        };
        // SAFETY: valid pointer with struct_size set.
        ok(unsafe { crate::loader::dtex_loader_get_stats(self.0, &mut s) });
        s
    }

    pub fn launch(&self) -> DtexLaunch {
        let mut l = DtexLaunch::default();
        // SAFETY: valid pointer.
        ok(unsafe { dtex_launch_prepare(self.0, &mut l) });
        l
    }
}

impl Drop for TestLoader {
    fn drop(&mut self) {
        // Already destroyed by the test is fine.
        let _ = dtex_loader_destroy(self.0);
    }
}

/// Process a launch's requests and wait for the fills.
pub fn process_and_wait(launch: DtexLaunch) {
    let mut t = DtexTicket::default();
    // SAFETY: valid pointer.
    ok(unsafe { dtex_process_requests(launch, &mut t) });
    ok(dtex_ticket_wait(t, DTEX_WAIT_FOREVER));
    ok(dtex_ticket_destroy(t));
}

/// Sample `queries` in one batch on `launch`.
pub fn batch(launch: DtexLaunch, queries: &[DtexGradQuery]) -> (Vec<DtexSample>, usize) {
    let mut out = vec![DtexSample::default(); queries.len()];
    let mut resident = 0usize;
    // SAFETY: arrays of queries.len() elements.
    ok(unsafe {
        dtex_launch_tex2d_grad_batch(
            launch,
            queries.as_ptr(),
            queries.len(),
            std::ptr::null(),
            out.as_mut_ptr(),
            &mut resident,
        )
    });
    (out, resident)
}

/// Run the multi-pass loop until every query is resident; returns the final samples and
/// the number of launches it took.
pub fn converge(loader: &TestLoader, queries: &[DtexGradQuery]) -> (Vec<DtexSample>, usize) {
    for launches in 1..=40 {
        let launch = loader.launch();
        let (samples, resident) = batch(launch, queries);
        if resident == queries.len() {
            ok(dtex_launch_discard(launch));
            return (samples, launches);
        }
        process_and_wait(launch);
    }
    panic!("did not converge in 40 launches: {}", last_error());
}

/// A grid of `n × n` queries of `texture` over [0, 1)², with footprints from fine to
/// coarse (texel-sized for a `size`-texel texture at the first row, 64 texels at the last).
pub fn query_grid(texture: u32, n: usize, size: f32) -> Vec<DtexGradQuery> {
    let mut q = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            let g = (1.0 + 63.0 * j as f32 / (n - 1).max(1) as f32) / size;
            q.push(DtexGradQuery {
                texture,
                s: (i as f32 + 0.37) / n as f32,
                t: (j as f32 + 0.61) / n as f32,
                dsdx: g,
                dtdx: 0.0,
                dsdy: 0.0,
                dtdy: g * 0.7,
            });
        }
    }
    q
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!(
            "demandtex-capi-test-{}-{tag}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Write a scan-line RGBA float OpenEXR file of `width × height` with texels `f(x, y)`.
pub fn write_exr(
    path: &Path,
    width: usize,
    height: usize,
    f: impl Fn(usize, usize) -> [f32; 4] + Sync,
) {
    exr::prelude::write_rgba_file(path, width, height, |x, y| {
        let [r, g, b, a] = f(x, y);
        (r, g, b, a)
    })
    .unwrap();
}

/// A NUL-terminated copy of `s`.
pub fn cstring(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap()
}

/// A NUL-terminated path.
pub fn cpath(p: &Path) -> std::ffi::CString {
    cstring(p.to_str().unwrap())
}

/// Run the multi-pass loop with any lookups until every sample is resident.
pub fn converge_with(
    loader: &TestLoader,
    lookups: impl Fn(DtexLaunch) -> Vec<DtexSample>,
) -> Vec<DtexSample> {
    for _ in 0..40 {
        let launch = loader.launch();
        let samples = lookups(launch);
        if samples.iter().all(|s| s.resident == 1) {
            ok(dtex_launch_discard(launch));
            return samples;
        }
        process_and_wait(launch);
    }
    panic!("did not converge in 40 launches: {}", last_error());
}

/// `tex2d_lod` of every (s, t, lod) on `launch`.
pub fn lod_lookups(
    launch: DtexLaunch,
    texture: u32,
    points: &[(f32, f32, f32)],
) -> Vec<DtexSample> {
    points
        .iter()
        .map(|&(s, t, lod)| {
            let mut out = DtexSample::default();
            // SAFETY: valid pointers.
            ok(unsafe {
                crate::sampling::dtex_launch_tex2d_lod(
                    launch,
                    texture,
                    s,
                    t,
                    lod,
                    std::ptr::null(),
                    &mut out,
                )
            });
            out
        })
        .collect()
}

/// Points over [0, 1)² at every level of detail from 0 to `max_lod`.
pub fn lod_points(n: usize, max_lod: u32) -> Vec<(f32, f32, f32)> {
    let mut p = Vec::new();
    for lod in 0..=max_lod {
        for j in 0..n {
            for i in 0..n {
                p.push((
                    (i as f32 + 0.31) / n as f32,
                    (j as f32 + 0.77) / n as f32,
                    lod as f32 + 0.25,
                ));
            }
        }
    }
    p
}

/// A change to a description, for tables of bad cases.
pub type Change<T> = fn(&mut T);

/// A smooth RGBA pattern: red x / 97, green y / 61 (ramps on a 97 × 61 texture).
pub fn smooth_texel(x: usize, y: usize) -> [f32; 4] {
    [
        x as f32 / 97.0,
        y as f32 / 61.0,
        ((x * 7 + y * 3) % 13) as f32 / 13.0,
        1.0,
    ]
}

/// A blocking cache with small options, destroyed on drop.
pub struct Cache(pub DtexCache);

impl Cache {
    pub fn new() -> Cache {
        let mut c = DtexCache::default();
        let o = small_options();
        // SAFETY: valid pointers.
        ok(unsafe { dtex_cache_create(&o, &mut c) });
        Cache(c)
    }

    pub fn texture(&self, path: &std::path::Path) -> u32 {
        self.texture_with(path, null())
    }

    /// The texture of `path` sampled with `desc` (NULL: the defaults).
    pub fn texture_with(&self, path: &std::path::Path, desc: *const DtexTextureDesc) -> u32 {
        let mut tex = DTEX_NO_TEXTURE;
        // SAFETY: valid pointers.
        ok(unsafe { dtex_cache_texture_for_path(self.0, cpath(path).as_ptr(), desc, &mut tex) });
        tex
    }

    pub fn lookup(&self, q: &DtexGradQuery) -> DtexSample {
        let mut out = DtexSample::default();
        // SAFETY: valid pointers.
        ok(unsafe {
            dtex_cache_tex2d_grad(
                self.0,
                q.texture,
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
        out
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        let _ = dtex_cache_destroy(self.0);
    }
}
