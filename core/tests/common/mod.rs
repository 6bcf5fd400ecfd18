//! Test fixtures shared by the integration tests: image sources with a distinct value per
//! texel (so a wrong tile shows), sources that fail or defer, and a multi-pass driver.

#![allow(dead_code)]

use demandtex::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use demandtex::textures::{full_mip_levels, TexelFormat, TileRegion};
use demandtex::{Loader, SampleOptions, TextureId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Every texel of every level has its own value, a hash of (seed, level, x, y) — or, with
/// `constant_blocks`, half of the 256×256 blocks of each level hold one of three values
/// (so their tiles are constant, in any format, and textures share those values).
pub struct PatternSource {
    pub width: u32,
    pub height: u32,
    pub format: TexelFormat,
    pub seed: u32,
    pub reads: AtomicUsize,
    pub constant_blocks: bool,
}

impl PatternSource {
    pub fn new(width: u32, height: u32, format: TexelFormat, seed: u32) -> Self {
        PatternSource {
            width,
            height,
            format,
            seed,
            reads: AtomicUsize::new(0),
            constant_blocks: false,
        }
    }

    /// The same, with constant blocks (see the type's docs).
    pub fn with_constant_blocks(self) -> Self {
        PatternSource {
            constant_blocks: true,
            ..self
        }
    }

    pub fn texel(&self, level: u32, x: u32, y: u32) -> [f32; 4] {
        if self.constant_blocks && ((x >> 8) + (y >> 8) + level) % 2 == 0 {
            let v = [0.0, 128.0 / 255.0, 1.0][((x >> 8) + level) as usize % 3];
            return [v, v, v, 1.0];
        }
        let mut h = self.seed
            ^ level.wrapping_mul(0x9E37_79B9)
            ^ x.wrapping_mul(0x85EB_CA6B)
            ^ y.wrapping_mul(0xC2B2_AE35);
        let mut c = [0.0; 4];
        for v in c.iter_mut() {
            h ^= h >> 15;
            h = h.wrapping_mul(0x2C1B_3C6D);
            h ^= h >> 12;
            *v = (h & 0xFF) as f32 / 255.0;
        }
        c
    }
}

impl ImageSource for PatternSource {
    fn name(&self) -> String {
        format!("pattern {}×{}", self.width, self.height)
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        Ok(ImageInfo {
            width: self.width,
            height: self.height,
            format: self.format,
            num_levels: full_mip_levels(self.width, self.height),
        })
    }
    fn read_region(
        &self,
        r: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let tb = self.format.texel_bytes();
        for y in 0..r.height {
            for x in 0..r.width {
                let at = y as usize * row_bytes + x as usize * tb;
                self.format.encode(
                    self.texel(r.level, r.x + x, r.y + y),
                    &mut dest[at..at + tb],
                );
            }
        }
        Ok(Readiness::Ready)
    }
}

/// How a [`FaultySource`] misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    FailOpen,
    PanicOpen,
    /// Fail reads of tiles at this level.
    FailTilesAtLevel(u32),
    /// Panic reading tiles at this level.
    PanicTilesAtLevel(u32),
    /// Answer "not yet" to the first N reads of each region.
    NotYet(usize),
    /// Claim an absurd size.
    HugeSize,
}

pub struct FaultySource {
    pub inner: PatternSource,
    pub fault: Fault,
    pub attempts: Mutex<HashMap<(u32, u32, u32), usize>>,
}

impl FaultySource {
    pub fn new(inner: PatternSource, fault: Fault) -> Self {
        FaultySource {
            inner,
            fault,
            attempts: Mutex::new(HashMap::new()),
        }
    }
}

impl ImageSource for FaultySource {
    fn name(&self) -> String {
        format!("faulty ({:?})", self.fault)
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        match self.fault {
            Fault::FailOpen => Err("cannot open: no such file".into()),
            Fault::PanicOpen => panic!("source exploded while opening"),
            Fault::HugeSize => Ok(ImageInfo {
                width: 1 << 20,
                height: 3,
                ..self.inner.open()?
            }),
            _ => self.inner.open(),
        }
    }
    fn read_region(
        &self,
        r: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        match self.fault {
            Fault::FailTilesAtLevel(l) if l == r.level && r.width > 1 => {
                return Err("checksum mismatch in tile".into())
            }
            Fault::PanicTilesAtLevel(l) if l == r.level && r.width > 1 => panic!("decoder bug"),
            Fault::NotYet(n) => {
                let mut a = self.attempts.lock().unwrap();
                let k = a.entry((r.level, r.x, r.y)).or_default();
                *k += 1;
                if *k <= n {
                    return Ok(Readiness::NotYet);
                }
            }
            _ => {}
        }
        self.inner.read_region(r, dest, row_bytes)
    }
}

/// One lookup of a test render.
#[derive(Clone, Copy, Debug)]
pub struct Query {
    pub texture: TextureId,
    pub s: f32,
    pub t: f32,
    pub ddx: [f32; 2],
    pub ddy: [f32; 2],
}

/// How long a test waits for a ticket before it calls the wait a hang and fails (a
/// watchdog, not a timing assumption: a ticket that completes at all completes far sooner).
pub const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(120);

/// The outcome of a multi-pass render of a query list.
pub struct Render {
    pub values: Vec<[f32; 4]>,
    pub converged: bool,
    pub launches: usize,
    /// Tickets waited for (each completed within [`WATCHDOG`]).
    pub tickets: usize,
    /// Lookups made, over all launches.
    pub lookups: usize,
    /// Highest resident bytes seen after any launch or fill.
    pub peak_resident_bytes: u64,
}

/// Run launches until every query was resident once (keeping the value it had then), or
/// `max_launches`. `threads` sampling threads split the queries.
pub fn render(loader: &Loader, queries: &[Query], threads: usize, max_launches: usize) -> Render {
    let mut values = vec![[0.0f32; 4]; queries.len()];
    let mut done = vec![false; queries.len()];
    let mut launches = 0;
    let mut lookups = 0;
    let mut peak = 0;
    let opts = SampleOptions::default();
    while launches < max_launches && done.iter().any(|d| !d) {
        let launch = loader.launch_prepare();
        launches += 1;
        lookups += done.iter().filter(|d| !**d).count();
        let chunk = queries.len().div_ceil(threads.max(1)).max(1);
        std::thread::scope(|s| {
            for ((q, v), d) in queries
                .chunks(chunk)
                .zip(values.chunks_mut(chunk))
                .zip(done.chunks_mut(chunk))
            {
                let launch = &launch;
                s.spawn(move || {
                    for i in 0..q.len() {
                        if d[i] {
                            continue;
                        }
                        let r = launch.tex2d_grad(
                            q[i].texture,
                            q[i].s,
                            q[i].t,
                            q[i].ddx,
                            q[i].ddy,
                            &opts,
                        );
                        if r.resident {
                            v[i] = r.value;
                            d[i] = true;
                        }
                    }
                });
            }
        });
        let ticket = loader.process_requests(launch);
        assert!(
            ticket.wait_timeout(WATCHDOG),
            "launch {launches}: a ticket did not complete within {WATCHDOG:?} ({ticket:?})"
        );
        peak = peak.max(loader.stats().peak_resident_bytes);
    }
    Render {
        values,
        converged: done.iter().all(|&d| d),
        launches,
        tickets: launches,
        lookups,
        peak_resident_bytes: peak,
    }
}

/// A directory of its own for one test, under the system's temporary folder, named by the
/// suite, the process and the test's tag (removed when dropped).
pub struct TestDir(pub std::path::PathBuf);

impl TestDir {
    /// A fresh, empty directory for test `tag` of `suite`.
    pub fn new(suite: &str, tag: &str) -> TestDir {
        let d =
            std::env::temp_dir().join(format!("demandtex-{suite}-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TestDir(d)
    }

    /// `name` inside it.
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file in this test process's temporary folder `demandtex-{group}-{pid}`.
pub fn temp_file(group: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-{group}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Write a 700×500 RGBA image, every texel distinct, as half OpenEXR with `tile`-sized
/// tiles and its mip levels, to `path`.
pub fn distinct_exr(path: &std::path::Path, tile: (u32, u32)) {
    use demandtex::sources::exr::{write_mip_exr, WriteOptions};
    let (w, h) = (700u32, 500u32);
    let mut image = demandtex::sources::FloatImage::zeros(w, h, 4);
    for (i, t) in image.data.chunks_exact_mut(4).enumerate() {
        let (x, y) = (i as u32 % w, i as u32 / w);
        t.copy_from_slice(&[
            (x % 256) as f32 / 256.0,
            (y % 256) as f32 / 256.0,
            ((x * 3 + y * 5) % 251) as f32 / 251.0,
            0.5 + (x ^ y) as f32 / 4096.0,
        ]);
    }
    let options = WriteOptions {
        tile,
        ..WriteOptions::default()
    };
    write_mip_exr(path, &image, &options, None).unwrap();
}

/// Deterministic lookups over a 700-texel-wide texture: (s, t, ddx, ddy) with small
/// footprints (level 0–2), positions spread so that pages are touched in parts.
pub fn spread_queries(n: u32) -> Vec<(f32, f32, [f32; 2], [f32; 2])> {
    (0..n)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761).rotate_left(11) ^ i.wrapping_mul(40_503);
            let s = (h & 0xffff) as f32 / 65536.0;
            let t = (h >> 16) as f32 / 65536.0;
            let d = 2f32.powi((i % 3) as i32) / 700.0;
            (s, t, [d, 0.0], [0.0, d * 0.8])
        })
        .collect()
}

/// One multi-pass lookup, launched again after each pass's fills until it is resident.
pub fn converged_grad(
    loader: &Loader,
    texture: TextureId,
    (s, t, ddx, ddy): (f32, f32, [f32; 2], [f32; 2]),
    options: &SampleOptions,
) -> demandtex::sampling::Sample {
    loop {
        let launch = loader.launch_prepare();
        let r = launch.tex2d_grad(texture, s, t, ddx, ddy, options);
        if r.resident {
            return r;
        }
        loader.process_requests(launch).wait();
    }
}
