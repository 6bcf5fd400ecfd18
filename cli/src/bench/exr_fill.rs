//! EXR fill throughput: the same level-0 tiles of a tiled, mip-mapped EXR decoded
//! (a) with the bare exr API (one `pread` + `Chunk::read` + `decompress_chunk` per file
//! tile), (b) through `ExrSource::read_tile` (demandtex's fill path without the loader) and
//! (c) through a `Loader` filling requested tiles (multi-pass: rounds of process_requests +
//! wait) and (d) through the blocking `TextureCache` (each of the T threads misses on
//! level-0 tiles and fills them itself, evicting as the budget — three quarters of the
//! level — fills), each with T threads. Figures are MB/s of decoded texels and the ratios
//! to the bare rate (the goal is at least 0.90).
//!
//! The file (4096² RGBA half, ZIP16, 64² tiles, levels rounded down, a smooth signal plus
//! noise) is written to the temp dir first and removed afterwards. It stays in the page
//! cache, so the figures are of decoding, not of the disk.

use super::rounds::loader_fill_tallies;
use super::Record;
use crate::error::CliError;
use demandtex::sources::{ExrOptions, ExrSource, FileHandles, ImageSource};
use demandtex::textures::{TextureLayout, TileRegion};
use demandtex::{LoaderOptions, SampleOptions, TextureCache, TextureDesc, TILE_BYTES};
use exr::block::chunk::Chunk;
use exr::block::UncompressedBlock;
use exr::io::{PeekRead, Tracking};
use exr::math::RoundingMode;
use exr::meta::MetaData;
use exr::prelude::{
    f16, AnyChannel, AnyChannels, Blocks, Compression, Encoding, FlatSamples, Image, Layer,
    LayerAttributes, Levels, LineOrder, SmallVec, Vec2, WritableImage as _,
};
use rayon::prelude::*;
use std::cell::RefCell;
use std::fs::File;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SIZE: usize = 4096;
const FILE_TILE: usize = 64;
/// Cache tiles per loader round (and launch).
const K: usize = 512;
/// Measurements of each path per thread count; the best is reported.
const REPEATS: u32 = 3;

/// The temp file, removed on drop.
struct TempExr(PathBuf);

impl Drop for TempExr {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Write the benchmark file: level `l`, channel `c` is a smooth signal plus 1% noise.
fn write_file(path: &Path) -> Result<(), CliError> {
    let size = Vec2(SIZE, SIZE);
    let channel = |name: &'static str, c: usize| {
        let levels = exr::meta::mip_map_levels(RoundingMode::Down, size)
            .map(|(l, s)| {
                let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (c as u64 * 977 + l as u64);
                FlatSamples::F16(
                    (0..s.area())
                        .map(|i| {
                            let (x, y) = ((i % s.x()) as f32, (i / s.x()) as f32);
                            let k = (1 << l) as f32 / SIZE as f32;
                            let smooth = 0.5
                                + 0.25 * (x * k * 9.0 + c as f32).sin()
                                + 0.2 * (y * k * 7.0).cos();
                            state ^= state << 13;
                            state ^= state >> 7;
                            state ^= state << 17;
                            let noise = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                            f16::from_f32(smooth + 0.01 * noise)
                        })
                        .collect(),
                )
            })
            .collect();
        AnyChannel::new(
            name,
            Levels::Mip {
                rounding_mode: RoundingMode::Down,
                level_data: levels,
            },
        )
    };
    let channels = AnyChannels::sort(SmallVec::from_vec(vec![
        channel("R", 0),
        channel("G", 1),
        channel("B", 2),
        channel("A", 3),
    ]));
    let encoding = Encoding {
        compression: Compression::ZIP16,
        blocks: Blocks::Tiles(Vec2(FILE_TILE, FILE_TILE)),
        line_order: LineOrder::Increasing,
    };
    Image::from_layer(Layer::new(
        size,
        LayerAttributes::default(),
        encoding,
        channels,
    ))
    .write()
    .to_file(path)
    .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

/// The bare exr API: header and offset table parsed here, each tile one positioned read,
/// `Chunk::read` and `UncompressedBlock::decompress_chunk`.
struct Bare {
    meta: MetaData,
    file: File,
    /// Level-0 tiles, row-major: (offset, bytes up to the next chunk).
    spans: Vec<(u64, usize)>,
    tiles_x: usize,
}

impl Bare {
    fn open(path: &Path) -> Result<Bare, String> {
        let file = File::open(path).map_err(|e| e.to_string())?;
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        let mut read = PeekRead::new(Tracking::new(std::io::BufReader::new(&file)));
        let meta = MetaData::read_from_buffered(&mut read, false).map_err(|e| e.to_string())?;
        let tables =
            MetaData::read_offset_tables(&mut read, &meta.headers).map_err(|e| e.to_string())?;
        let offsets = &tables[0];
        let mut sorted = offsets.clone();
        sorted.sort_unstable();
        let tiles_x = SIZE.div_ceil(FILE_TILE);
        // Level 0 comes first in the table, row-major.
        let spans = offsets[..tiles_x * tiles_x]
            .iter()
            .map(|&o| {
                let next = sorted.partition_point(|&s| s <= o);
                (o, (sorted.get(next).copied().unwrap_or(len) - o) as usize)
            })
            .collect();
        Ok(Bare {
            meta,
            file,
            spans,
            tiles_x,
        })
    }

    /// Decode level-0 tile (`tx`, `ty`); returns its decoded bytes.
    fn decode(&self, tx: usize, ty: usize, scratch: &mut Vec<u8>) -> Result<usize, String> {
        let (offset, len) = self.spans[ty * self.tiles_x + tx];
        scratch.resize(len, 0);
        pread(&self.file, scratch, offset).map_err(|e| e.to_string())?;
        let chunk = Chunk::read(&mut &scratch[..], &self.meta).map_err(|e| e.to_string())?;
        let block = UncompressedBlock::decompress_chunk(chunk, &self.meta, true)
            .map_err(|e| e.to_string())?;
        Ok(black_box(block.data).len())
    }
}

#[cfg(unix)]
fn pread(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn pread(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_read(file, buf, offset)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn pread(_: &File, _: &[u8], _: u64) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "exr-fill needs positioned reads (unix or windows)",
    ))
}

/// Check that both paths decode the same texels: the first cache tile through the source
/// against its file tiles decoded bare and interleaved here (channels stored A, B, G, R).
fn check_same_texels(bare: &Bare, src: &ExrSource, layout: &TextureLayout) -> Result<(), String> {
    let r = layout.tile_region(0, 0, 0);
    let row_bytes = r.width as usize * 8;
    let mut got = vec![0u8; row_bytes * r.height as usize];
    src.read_tile(r, &mut got, row_bytes)
        .map_err(|e| e.to_string())?;
    let (mut scratch, mut want) = (Vec::new(), vec![0u8; got.len()]);
    for tx in 0..r.width as usize / FILE_TILE {
        let (offset, len) = bare.spans[tx];
        scratch.resize(len, 0);
        pread(&bare.file, &mut scratch, offset).map_err(|e| e.to_string())?;
        let chunk = Chunk::read(&mut &scratch[..], &bare.meta).map_err(|e| e.to_string())?;
        let block = UncompressedBlock::decompress_chunk(chunk, &bare.meta, true)
            .map_err(|e| e.to_string())?;
        for y in 0..FILE_TILE {
            let line = &block.data[y * FILE_TILE * 8..(y + 1) * FILE_TILE * 8];
            for x in 0..FILE_TILE {
                for (k, plane) in [3, 2, 1, 0].into_iter().enumerate() {
                    let s = &line[(plane * FILE_TILE + x) * 2..][..2];
                    let d = y * row_bytes + ((tx * FILE_TILE + x) * 4 + k) * 2;
                    want[d..d + 2].copy_from_slice(s);
                }
            }
        }
    }
    if got == want {
        Ok(())
    } else {
        Err("the source and the bare decoder disagree on the first tile".into())
    }
}

/// Run `pass` over and over for at least `time` (one pass at least); decoded bytes per second.
fn rate(time: Duration, mut pass: impl FnMut() -> Result<u64, String>) -> Result<f64, CliError> {
    let start = Instant::now();
    let mut bytes = 0;
    while bytes == 0 || start.elapsed() < time {
        bytes += pass().map_err(CliError::Demandtex)?;
    }
    Ok(bytes as f64 / start.elapsed().as_secs_f64())
}

thread_local! {
    static BUFFERS: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// (a) and (b): every level-0 cache tile of `layout`, on `pool`.
fn direct_rates(
    pool: &rayon::ThreadPool,
    bare: &Bare,
    src: &ExrSource,
    layout: &TextureLayout,
    time: Duration,
) -> Result<(f64, f64), CliError> {
    let l0 = layout.levels[0];
    let regions: Vec<TileRegion> = (0..l0.tiles_y)
        .flat_map(|ty| (0..l0.tiles_x).map(move |tx| (tx, ty)))
        .map(|(tx, ty)| layout.tile_region(0, tx, ty))
        .collect();
    let row_bytes = layout.tile_width as usize * layout.format.texel_bytes();
    let bare_pass = || -> Result<u64, String> {
        pool.install(|| {
            regions
                .par_iter()
                .map(|r| {
                    BUFFERS.with_borrow_mut(|(scratch, _)| {
                        let mut n = 0;
                        for ty in r.y as usize / FILE_TILE
                            ..(r.y + r.height).div_ceil(FILE_TILE as u32) as usize
                        {
                            for tx in r.x as usize / FILE_TILE
                                ..(r.x + r.width).div_ceil(FILE_TILE as u32) as usize
                            {
                                n += bare.decode(tx, ty, scratch)? as u64;
                            }
                        }
                        Ok(n)
                    })
                })
                .sum()
        })
    };
    let source_pass = || -> Result<u64, String> {
        pool.install(|| {
            regions
                .par_iter()
                .map(|r| {
                    BUFFERS.with_borrow_mut(|(_, dest)| {
                        dest.resize(TILE_BYTES, 0);
                        src.read_tile(*r, dest, row_bytes)
                            .map_err(|e| e.to_string())?;
                        black_box(&dest);
                        Ok(r.width as u64 * r.height as u64 * layout.format.texel_bytes() as u64)
                    })
                })
                .sum()
        })
    };
    let (mut best_bare, mut best_source) = (0f64, 0f64);
    for _ in 0..REPEATS {
        best_bare = best_bare.max(rate(time, bare_pass)?);
        best_source = best_source.max(rate(time, source_pass)?);
    }
    Ok((best_bare, best_source))
}

/// (c): rounds of K new level-0 tiles requested through a loader with `threads` fill
/// threads, as the `fill` benchmark times them (process_requests + wait).
fn loader_rate(path: &Path, threads: usize, time: Duration) -> Result<f64, CliError> {
    let tallies = loader_fill_tallies(Arc::new(ExrSource::new(path)), threads, K, time, REPEATS)?;
    Ok(tallies
        .iter()
        .map(|t| t.bytes_read as f64 / t.seconds.max(1e-9))
        .fold(0.0, f64::max))
}

/// (d): T threads take level-0 tiles in order from a shared counter and look each up
/// through a blocking cache whose budget holds three quarters of the level, so every pass
/// after the first evicts as it goes.
fn blocking_rate(path: &Path, threads: usize, time: Duration) -> Result<f64, CliError> {
    let src = Arc::new(ExrSource::new(path));
    let info = src.open().map_err(|e| CliError::Demandtex(e.to_string()))?;
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)?;
    let l0 = layout.levels[0];
    let tiles = (l0.tiles_x * l0.tiles_y) as usize;
    let cache = TextureCache::new(LoaderOptions {
        max_texture_memory: (tiles * 3 / 4 * TILE_BYTES) as u64 + layout.mip_tail_bytes,
        ..LoaderOptions::default()
    })?;
    let texture = cache.create_texture(src, TextureDesc::default())?;
    let opts = SampleOptions::default();
    // Open the texture (mip tail) outside the timing.
    cache.tex2d_lod(texture, 0.5, 0.5, 64.0, &opts);
    let tile_bytes =
        (layout.tile_width * layout.tile_height) as u64 * layout.format.texel_bytes() as u64;
    let (tw, th) = (layout.tile_width as f32, layout.tile_height as f32);
    let mut best = 0f64;
    for _ in 0..REPEATS {
        let before = cache.stats();
        let next = AtomicUsize::new(0);
        let start = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    if start.elapsed() >= time {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed) % tiles;
                    let (x, y) = (
                        (i as u32 % l0.tiles_x) as f32,
                        (i as u32 / l0.tiles_x) as f32,
                    );
                    let s = (x + 0.5) * tw / l0.width as f32;
                    let t = (y + 0.5) * th / l0.height as f32;
                    black_box(cache.tex2d_lod(texture, s, t, 0.0, &opts));
                });
            }
        });
        let seconds = start.elapsed().as_secs_f64();
        let filled = cache.stats().tiles_filled - before.tiles_filled;
        best = best.max((filled * tile_bytes) as f64 / seconds);
    }
    Ok(best)
}

/// Run the EXR fill benchmark.
pub fn run(threads_list: &[usize], time: Duration) -> Result<Vec<Record>, CliError> {
    let file = TempExr(std::env::temp_dir().join(format!(
        "demandtex-bench-exr-fill-{}.exr",
        std::process::id()
    )));
    let started = Instant::now();
    write_file(&file.0)?;
    let file_bytes = std::fs::metadata(&file.0).map_or(0, |m| m.len());
    eprintln!(
        "bench: wrote {} ({:.0} MB) in {:.1} s",
        file.0.display(),
        file_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let bare = Bare::open(&file.0).map_err(CliError::Demandtex)?;
    let src = ExrSource::with_options(
        &file.0,
        ExrOptions {
            handles: Arc::new(FileHandles::new(4)),
            ..ExrOptions::default()
        },
    );
    let info = src.open().map_err(|e| CliError::Demandtex(e.to_string()))?;
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)?;
    check_same_texels(&bare, &src, &layout).map_err(CliError::Demandtex)?;
    let mut records = Vec::new();
    for &threads in threads_list {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| CliError::Demandtex(e.to_string()))?;
        let (bare_rate, source_rate) = direct_rates(&pool, &bare, &src, &layout, time)?;
        let loader = loader_rate(&file.0, threads, time)?;
        let blocking = blocking_rate(&file.0, threads, time)?;
        records.push(Record {
            bench: "exr-fill",
            case: format!("{SIZE}² RGBA half ZIP16, {FILE_TILE}² tiles"),
            threads,
            figures: vec![
                ("bare_mb_per_second", bare_rate / 1e6),
                ("source_mb_per_second", source_rate / 1e6),
                ("loader_mb_per_second", loader / 1e6),
                ("source_ratio", source_rate / bare_rate),
                ("loader_ratio", loader / bare_rate),
                ("blocking_mb_per_second", blocking / 1e6),
                ("blocking_ratio", blocking / bare_rate),
            ],
        });
    }
    Ok(records)
}
