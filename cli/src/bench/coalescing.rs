//! Constant-tile coalescing (`LoaderOptions::coalesce_constant_tiles`) on a set of masks
//! as painters make them: eight 4096² RGBA8 textures, each black or white outside three
//! painted discs (about an eighth of each texture), the same two constant values in
//! every texture. Three multi-pass frames of the same 64K level-0 lookups (a static camera
//! rendered progressively) in a budget of a quarter of level 0, with coalescing on and
//! off in the same run.
//!
//! Figures per case: launches, tiles read and bytes read over the three frames and in
//! the last two alone (what the budget failed to keep), evictions, peak resident bytes
//! against the budget, pages served by shared slots and the slots themselves, seconds;
//! and the ratio of bytes read, on against off.

use super::{Record, Rng};
use crate::error::CliError;
use demandtex::sources::FunctionImage;
use demandtex::textures::TexelFormat;
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureDesc, TextureId, TILE_BYTES};
use std::sync::Arc;
use std::time::Instant;

const SIDE: u32 = 4096;
const TEXTURES: u32 = 8;
const LOOKUPS: usize = 1 << 16;
const FRAMES: usize = 3;
/// Level-0 tiles of one texture (RGBA8: 128×128-texel tiles).
const LEVEL0_TILES: u64 = (SIDE as u64 / 128) * (SIDE as u64 / 128);

/// A mask: detail inside three discs, black left of a diagonal and white right of it.
pub(super) struct Mask {
    discs: [(f32, f32, f32); 3],
}

impl Mask {
    pub(super) fn new(seed: u64) -> Mask {
        let mut rng = Rng::new(seed);
        let mut disc = || {
            let side = SIDE as f32;
            let r = side * (0.07 + 0.05 * rng.next_f32());
            (
                r + rng.next_f32() * (side - 2.0 * r),
                r + rng.next_f32() * (side - 2.0 * r),
                r,
            )
        };
        Mask {
            discs: [disc(), disc(), disc()],
        }
    }

    /// The texel `(x, y)` of `level` of a `SIDE`² mask.
    pub(super) fn texel(&self, level: u32, x: u32, y: u32) -> [f32; 4] {
        let scale = (1u32 << level) as f32;
        let (fx, fy) = ((x as f32 + 0.5) * scale, (y as f32 + 0.5) * scale);
        let inside = self.discs.iter().any(|&(cx, cy, r)| {
            let (dx, dy) = (fx - cx, fy - cy);
            dx * dx + dy * dy < r * r
        });
        if inside {
            let h = (x.wrapping_mul(0x9E37_79B9) ^ y.wrapping_mul(0x85EB_CA6B) ^ level) >> 9;
            let v = (h & 0xff) as f32 / 255.0;
            return [v, 1.0 - v, 0.5, 1.0];
        }
        let v = if fx + fy < SIDE as f32 { 0.0 } else { 1.0 };
        [v, v, v, 1.0]
    }
}

/// Run the two cases.
pub fn run() -> Result<Vec<Record>, CliError> {
    let mut off = case(false)?;
    let mut on = case(true)?;
    let bytes_read = |r: &Record| r.figure("bytes_read").unwrap_or(0.0);
    let ratio = bytes_read(&on) / bytes_read(&off).max(1.0);
    off.figures.push(("bytes_read_ratio_vs_off", 1.0));
    on.figures.push(("bytes_read_ratio_vs_off", ratio));
    Ok(vec![off, on])
}

fn case(coalesce: bool) -> Result<Record, CliError> {
    let budget = TEXTURES as u64 * LEVEL0_TILES / 4 * TILE_BYTES as u64;
    let loader = Loader::new(LoaderOptions {
        num_pages: 1 << 20,
        max_textures: 64,
        page_table_entries: 1 << 12,
        max_texture_memory: budget,
        coalesce_constant_tiles: coalesce,
        ..LoaderOptions::default()
    })?;
    let textures: Vec<TextureId> = (0..TEXTURES)
        .map(|i| {
            let mask = Mask::new(i as u64 + 1);
            let image =
                FunctionImage::new("mask", SIDE, SIDE, TexelFormat::RGBA8, move |l, x, y| {
                    mask.texel(l, x, y)
                });
            loader.create_texture(Arc::new(image), TextureDesc::default())
        })
        .collect::<Result<_, _>>()?;
    let frames = run_frames(&loader, &textures, SIDE)?;
    let (launches, first, seconds) = (frames.launches, frames.after_first, frames.seconds);
    let s = loader.stats();
    Ok(Record {
        bench: "coalescing",
        case: format!(
            "{TEXTURES} masks {SIDE}², budget ¼ of level 0, coalescing {}",
            if coalesce { "on" } else { "off" }
        ),
        threads: 1,
        figures: vec![
            ("launches", launches as f64),
            ("tiles_read", s.tiles_filled as f64),
            ("bytes_read", s.bytes_read as f64),
            (
                "reread_after_frame_1_bytes",
                (s.bytes_read - first.bytes_read) as f64,
            ),
            ("evictions", s.evictions as f64),
            ("peak_resident_bytes", s.peak_resident_bytes as f64),
            ("budget_bytes", s.budget_bytes as f64),
            ("coalesced_pages", s.coalesced_pages as f64),
            ("shared_constant_tiles", s.shared_constant_tiles as f64),
            ("seconds", seconds),
        ],
    })
}

/// What [`run_frames`] measured.
pub(super) struct Frames {
    pub launches: u64,
    /// The statistics after the first frame.
    pub after_first: demandtex::Stats,
    pub seconds: f64,
}

/// Render `FRAMES` multi-pass frames of the same `LOOKUPS` level-0 lookups over
/// `textures` (`side`² each), each to convergence.
pub(super) fn run_frames(
    loader: &Loader,
    textures: &[TextureId],
    side: u32,
) -> Result<Frames, CliError> {
    let mut rng = Rng::new(42);
    let d = 1.0 / side as f32;
    let queries: Vec<(TextureId, f32, f32)> = (0..LOOKUPS)
        .map(|i| (textures[i % textures.len()], rng.next_f32(), rng.next_f32()))
        .collect();
    let start = Instant::now();
    let mut launches = 0u64;
    let mut after_first = None;
    for _ in 0..FRAMES {
        let mut done = vec![false; queries.len()];
        while done.iter().any(|d| !d) {
            if launches > 10_000 {
                return Err(CliError::Demandtex("the frame did not converge".into()));
            }
            let launch = loader.launch_prepare();
            launches += 1;
            for (q, d_) in queries.iter().zip(done.iter_mut()) {
                if !*d_ {
                    let s = launch.tex2d_grad(
                        q.0,
                        q.1,
                        q.2,
                        [d, 0.0],
                        [0.0, d],
                        &SampleOptions::default(),
                    );
                    *d_ = s.resident;
                }
            }
            loader.process_requests(launch).wait();
        }
        after_first.get_or_insert(loader.stats());
    }
    Ok(Frames {
        launches,
        after_first: after_first.unwrap_or_else(|| loader.stats()),
        seconds: start.elapsed().as_secs_f64(),
    })
}
