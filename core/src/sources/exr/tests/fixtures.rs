//! EXR files written by the tests (with the exr crate's image API), and the reference
//! every read is compared with: the exr crate's own full-image reader of the same file.

use crate::sources::{ImageSource, InMemoryImage};
use crate::textures::{TexelFormat, TexelType, TextureLayout, TileRegion};
use exr::image::{
    AnyChannel, AnyChannels, Blocks, Encoding, FlatSamples, Image, Layer, Levels, RipMaps,
};
use exr::math::{RoundingMode, Vec2};
use exr::meta::attribute::LineOrder;
use exr::meta::header::LayerAttributes;
use exr::meta::{mip_map_levels, rip_map_levels};
use exr::prelude::{f16, SmallVec};
use exr::prelude::{ReadChannels as _, ReadLayers as _, WritableImage as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use exr::compression::Compression;

/// Every compression the crate writes and reads.
pub const COMPRESSIONS: [Compression; 10] = [
    Compression::Uncompressed,
    Compression::RLE,
    Compression::ZIP1,
    Compression::ZIP16,
    Compression::PIZ,
    Compression::PXR24,
    Compression::B44,
    Compression::B44A,
    Compression::DWAA(None),
    Compression::DWAB(None),
];

/// A channel's sample type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Half,
    Float,
    Uint,
}

/// How a test file stores levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelSpec {
    Single,
    Mip(RoundingMode),
    Rip,
}

/// A file to write.
#[derive(Clone, Debug)]
pub struct Spec {
    pub width: usize,
    pub height: usize,
    pub channels: Vec<(&'static str, Kind)>,
    /// `None`: scan lines; else the tile size.
    pub tiles: Option<usize>,
    pub levels: LevelSpec,
    pub compression: Compression,
}

impl Spec {
    /// RGBA half, tiled, mips rounded down, ZIP16.
    pub fn rgba_half(width: usize, height: usize, tile: usize) -> Spec {
        Spec {
            width,
            height,
            channels: vec![
                ("R", Kind::Half),
                ("G", Kind::Half),
                ("B", Kind::Half),
                ("A", Kind::Half),
            ],
            tiles: Some(tile),
            levels: LevelSpec::Mip(RoundingMode::Down),
            compression: Compression::ZIP16,
        }
    }

    pub fn with(mut self, f: impl FnOnce(&mut Spec)) -> Spec {
        f(&mut self);
        self
    }
}

/// A unique path in the temp dir (removed when dropped).
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(tag: &str) -> TempFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("demandtex-exr-test-{}-{tag}-{n}.exr", std::process::id());
        TempFile(std::env::temp_dir().join(name))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A smooth signal plus hashed noise, different per channel and level: adjacent tiles
/// differ, so a misplaced block shows.
fn value(channel: usize, level: usize, x: usize, y: usize) -> f32 {
    let mut h = (x as u32).wrapping_mul(0x9E37_79B9)
        ^ (y as u32).wrapping_mul(0x85EB_CA6B)
        ^ (channel as u32 * 7 + level as u32 * 131).wrapping_mul(0xC2B2_AE35);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^= h >> 12;
    let noise = (h & 0xFFFF) as f32 / 65535.0;
    let smooth = ((x as f32 * 0.05 + channel as f32).sin() + (y as f32 * 0.03).cos()) * 0.5 + 1.0;
    smooth + 0.25 * noise + level as f32 * 0.1
}

fn samples(kind: Kind, channel: usize, level: usize, (w, h): (usize, usize)) -> FlatSamples {
    let v = |i: usize| value(channel, level, i % w, i / w);
    match kind {
        Kind::Half => FlatSamples::F16((0..w * h).map(|i| f16::from_f32(v(i))).collect()),
        Kind::Float => FlatSamples::F32((0..w * h).map(|i| v(i) * 3.7).collect()),
        Kind::Uint => FlatSamples::U32((0..w * h).map(|i| (v(i) * 40_000.0) as u32).collect()),
    }
}

fn layer_of(spec: &Spec, name: Option<&str>) -> Layer<AnyChannels<Levels<FlatSamples>>> {
    let size = Vec2(spec.width, spec.height);
    let channels: Vec<AnyChannel<Levels<FlatSamples>>> = spec
        .channels
        .iter()
        .enumerate()
        .map(|(ci, &(name, kind))| {
            let levels = match spec.levels {
                LevelSpec::Single => {
                    Levels::Singular(samples(kind, ci, 0, (spec.width, spec.height)))
                }
                LevelSpec::Mip(rounding_mode) => Levels::Mip {
                    rounding_mode,
                    level_data: mip_map_levels(rounding_mode, size)
                        .map(|(l, s)| samples(kind, ci, l, (s.x(), s.y())))
                        .collect(),
                },
                LevelSpec::Rip => {
                    let round = RoundingMode::Down;
                    let map_data: Vec<FlatSamples> = rip_map_levels(round, size)
                        .map(|(l, s)| samples(kind, ci, l.x() + l.y(), (s.x(), s.y())))
                        .collect();
                    let count = |n: usize| exr::meta::compute_level_count(round, n);
                    Levels::Rip {
                        rounding_mode: round,
                        level_data: RipMaps {
                            map_data,
                            level_count: Vec2(count(spec.width), count(spec.height)),
                        },
                    }
                }
            };
            AnyChannel::new(name, levels)
        })
        .collect();
    let encoding = Encoding {
        compression: spec.compression,
        blocks: match spec.tiles {
            Some(t) => Blocks::Tiles(Vec2(t, t)),
            None => Blocks::ScanLines,
        },
        line_order: LineOrder::Increasing,
    };
    let attributes = match name {
        Some(n) => LayerAttributes::named(n),
        None => LayerAttributes::default(),
    };
    Layer::new(
        size,
        attributes,
        encoding,
        AnyChannels::sort(SmallVec::from_vec(channels)),
    )
}

/// Write `spec` to a new temp file.
pub fn write(tag: &str, spec: &Spec) -> TempFile {
    let f = TempFile::new(tag);
    Image::from_layer(layer_of(spec, None))
        .write()
        .to_file(f.path())
        .unwrap_or_else(|e| panic!("writing {spec:?}: {e}"));
    f
}

/// Write a two-part file: one layer per spec (named "first", "second").
pub fn write_parts(tag: &str, a: &Spec, b: &Spec) -> TempFile {
    let f = TempFile::new(tag);
    let layers = vec![layer_of(a, Some("first")), layer_of(b, Some("second"))];
    let bounds = exr::meta::attribute::IntegerBounds::from_dimensions(Vec2(a.width, a.height));
    Image::from_layers(exr::meta::header::ImageAttributes::new(bounds), layers)
        .write()
        .to_file(f.path())
        .unwrap();
    f
}

/// The exr crate's full reading of `path`: per part, per channel name, the levels' samples.
pub struct Reference {
    parts: Vec<Vec<(String, Vec<FlatSamples>)>>,
}

impl Reference {
    pub fn read(path: &Path) -> Reference {
        let image = exr::prelude::read()
            .no_deep_data()
            .all_resolution_levels()
            .all_channels()
            .all_layers()
            .all_attributes()
            .from_file(path)
            .unwrap();
        let parts = image
            .layer_data
            .into_iter()
            .map(|layer| {
                layer
                    .channel_data
                    .list
                    .into_iter()
                    .map(|c| {
                        let levels = match c.sample_data {
                            Levels::Singular(s) => vec![s],
                            Levels::Mip { level_data, .. } => level_data,
                            // A rip map's diagonal: the mip chain the source serves.
                            Levels::Rip { level_data, .. } => {
                                let Vec2(nx, ny) = level_data.level_count;
                                let mut maps: Vec<Option<FlatSamples>> =
                                    level_data.map_data.into_iter().map(Some).collect();
                                (0..nx.max(ny))
                                    .map(|l| {
                                        let i = l.min(ny - 1) * nx + l.min(nx - 1);
                                        maps[i].take().expect("a rip level, once")
                                    })
                                    .collect()
                            }
                        };
                        (c.name.to_string(), levels)
                    })
                    .collect()
            })
            .collect();
        Reference { parts }
    }

    /// Stored level `level` of `names` (three names: plus alpha 1) in `format`, packed.
    pub fn level(
        &self,
        part: usize,
        names: &[&str],
        format: TexelFormat,
        level: usize,
        (w, h): (usize, usize),
    ) -> Vec<u8> {
        let chans: Vec<&FlatSamples> = names
            .iter()
            .map(|n| {
                let (_, levels) = self.parts[part].iter().find(|(c, _)| c == n).unwrap();
                &levels[level]
            })
            .collect();
        let tb = format.texel_bytes();
        let b = format.texel_type.bytes();
        let mut out = vec![0u8; w * h * tb];
        for i in 0..w * h {
            let texel = &mut out[i * tb..(i + 1) * tb];
            for k in 0..format.channels as usize {
                let s = chans.get(k).map(|c| c.value_by_flat_index(i));
                let bytes = &mut texel[k * b..(k + 1) * b];
                match (format.texel_type, s) {
                    (TexelType::F16, Some(exr::block::samples::Sample::F16(v))) => {
                        bytes.copy_from_slice(&v.to_le_bytes())
                    }
                    (TexelType::F16, None) => bytes.copy_from_slice(&f16::ONE.to_le_bytes()),
                    (TexelType::F32, Some(exr::block::samples::Sample::U32(v))) => {
                        bytes.copy_from_slice(&(v as f32).to_le_bytes())
                    }
                    (TexelType::F32, Some(s)) => bytes.copy_from_slice(&s.to_f32().to_le_bytes()),
                    (TexelType::F32, None) => bytes.copy_from_slice(&1.0f32.to_le_bytes()),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        out
    }
}

/// Every level a source must serve: stored levels from the reference, the rest generated
/// from the last stored one by `InMemoryImage`'s filter.
pub fn expected_levels(
    reference: &Reference,
    part: usize,
    names: &[&str],
    format: TexelFormat,
    (width, height): (usize, usize),
    stored: usize,
    total: usize,
) -> Vec<(usize, usize, Vec<u8>)> {
    let size = |l: usize| ((width >> l).max(1), (height >> l).max(1));
    let mut levels: Vec<(usize, usize, Vec<u8>)> = (0..stored)
        .map(|l| {
            let (w, h) = size(l);
            (w, h, reference.level(part, names, format, l, (w, h)))
        })
        .collect();
    if stored < total {
        let (w, h, base) = levels[stored - 1].clone();
        let mem = InMemoryImage::new(
            w as u32,
            h as u32,
            format.texel_type,
            format.channels,
            base,
            true,
        )
        .unwrap();
        for l in stored..total {
            let (w, h, data) = mem.level((l - stored + 1) as u32).unwrap();
            levels.push((w as usize, h as usize, data.to_vec()));
        }
    }
    levels
}

/// Read every cache tile, the mip tail levels and a few odd regions of `src` (rows padded,
/// to check strides) and compare them byte for byte with `levels`.
pub fn check_reads(src: &dyn ImageSource, levels: &[(usize, usize, Vec<u8>)]) {
    let info = src.open().unwrap();
    assert_eq!(info.num_levels as usize, levels.len(), "{}", src.name());
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format).unwrap();
    let tb = info.format.texel_bytes();
    let mut regions = Vec::new();
    for level in 0..info.num_levels {
        let l = layout.levels[level as usize];
        if layout.in_mip_tail(level) {
            regions.push(layout.level_region(level));
        } else {
            for ty in 0..l.tiles_y {
                for tx in 0..l.tiles_x {
                    regions.push(layout.tile_region(level, tx, ty));
                }
            }
        }
        // An odd rectangle across block boundaries.
        let (x, y) = (l.width / 3, l.height / 5);
        regions.push(TileRegion {
            level,
            x,
            y,
            width: (l.width - x).min(77),
            height: (l.height - y).min(45),
        });
    }
    for r in regions {
        let (lw, _, data) = &levels[r.level as usize];
        let row_bytes = r.width as usize * tb + 12;
        let mut dest = vec![0xEEu8; row_bytes * r.height as usize];
        let ready = src.read_tile(r, &mut dest, row_bytes);
        assert!(ready.is_ok(), "{}: {r:?}: {ready:?}", src.name());
        for j in 0..r.height as usize {
            let got = &dest[j * row_bytes..j * row_bytes + r.width as usize * tb];
            let at = ((r.y as usize + j) * lw + r.x as usize) * tb;
            let want = &data[at..at + r.width as usize * tb];
            if got != want {
                let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap() / tb;
                panic!(
                    "{}: {r:?}: row {j} texel {i} differs: got {:?}, want {:?}",
                    src.name(),
                    &got[i * tb..(i + 1) * tb],
                    &want[i * tb..(i + 1) * tb]
                );
            }
            assert!(
                dest[j * row_bytes + r.width as usize * tb..(j + 1) * row_bytes]
                    .iter()
                    .all(|&b| b == 0xEE)
            );
        }
    }
}
