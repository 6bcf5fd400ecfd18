//! EXR files through the loader: a good file converges to the file's texel values at every
//! level asked; a missing or corrupt file gives the texture's fallback colour and an error
//! naming the file.

mod common;

use common::{render, Query};
use demandtex::sources::{ExrSource, InMemoryImage};
use demandtex::textures::{FilterMode, MipFilter, TexelFormat, TextureDesc};
use demandtex::{Loader, LoaderOptions, TextureId};
use exr::math::RoundingMode;
use exr::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

fn options() -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 18,
        page_table_entries: 1 << 10,
        max_textures: 64,
        max_texture_memory: 256 << 20,
        fill_threads: 2,
        ..Default::default()
    }
}

fn temp_path(tag: &str) -> PathBuf {
    let name = format!("demandtex-exr-loader-{}-{tag}.exr", std::process::id());
    std::env::temp_dir().join(name)
}

/// RGBA half with a distinct value per texel and level (exactly representable in half).
fn texel(level: usize, x: usize, y: usize, c: usize) -> f32 {
    let v = (x * 7 + y * 13 + c * 101 + level * 37) % 1024;
    v as f32 / 256.0
}

/// Write a `w × h` RGBA half file: tiled mip-mapped (64² tiles) or scan lines (no mips).
fn write(path: &PathBuf, (w, h): (usize, usize), tiled: bool) {
    let size = Vec2(w, h);
    let channel = |name: &'static str, c: usize| {
        let level = |l: usize, s: Vec2<usize>| {
            FlatSamples::F16(
                (0..s.area())
                    .map(|i| f16::from_f32(texel(l, i % s.x(), i / s.x(), c)))
                    .collect(),
            )
        };
        let data = if tiled {
            Levels::Mip {
                rounding_mode: RoundingMode::Down,
                level_data: exr::meta::mip_map_levels(RoundingMode::Down, size)
                    .map(|(l, s)| level(l, s))
                    .collect(),
            }
        } else {
            Levels::Singular(level(0, size))
        };
        AnyChannel::new(name, data)
    };
    let channels = AnyChannels::sort(SmallVec::from_vec(vec![
        channel("R", 0),
        channel("G", 1),
        channel("B", 2),
        channel("A", 3),
    ]));
    let encoding = Encoding {
        compression: Compression::ZIP16,
        blocks: if tiled {
            Blocks::Tiles(Vec2(64, 64))
        } else {
            Blocks::ScanLines
        },
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
    .unwrap();
}

fn point() -> TextureDesc {
    TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        fallback_color: [0.0, 1.0, 0.0, 1.0],
        ..Default::default()
    }
}

/// Lookups at texel centres of `level`, with a footprint that selects exactly that level.
fn queries(texture: TextureId, (w, h): (usize, usize), level: usize, n: usize) -> Vec<Query> {
    let (lw, lh) = ((w >> level).max(1), (h >> level).max(1));
    (0..n)
        .map(|i| {
            let (x, y) = ((i * 37 + 11) % lw, (i * 53 + 5) % lh);
            Query {
                texture,
                s: (x as f32 + 0.5) / lw as f32,
                t: (y as f32 + 0.5) / lh as f32,
                ddx: [(1 << level) as f32 / w as f32, 0.0],
                ddy: [0.0, (1 << level) as f32 / h as f32],
            }
        })
        .collect()
}

fn texel_at(q: &Query, (w, h): (usize, usize), level: usize) -> (usize, usize) {
    let (lw, lh) = ((w >> level).max(1), (h >> level).max(1));
    ((q.s * lw as f32) as usize, (q.t * lh as f32) as usize)
}

#[test]
fn a_tiled_mip_mapped_exr_converges_to_the_files_texels() {
    let path = temp_path("tiled");
    let size = (1000, 600);
    write(&path, size, true);
    let loader = Loader::new(options()).unwrap();
    let tex = loader
        .create_texture(Arc::new(ExrSource::new(&path)), point())
        .unwrap();
    for level in [0, 1, 3, 9] {
        let q = queries(tex, size, level, 300);
        let r = render(&loader, &q, 2, 20);
        assert!(r.converged, "level {level}");
        for (q, v) in q.iter().zip(&r.values) {
            let (x, y) = texel_at(q, size, level);
            let want: Vec<f32> = (0..4).map(|c| texel(level, x, y, c)).collect();
            assert_eq!(v[..], want[..], "level {level} texel ({x}, {y})");
        }
    }
    assert!(loader.texture_error(tex).is_none());
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_scan_line_exr_converges_with_generated_mips() {
    let path = temp_path("scan");
    let size = (300, 200);
    write(&path, size, false);
    let loader = Loader::new(options()).unwrap();
    let tex = loader
        .create_texture(Arc::new(ExrSource::new(&path)), point())
        .unwrap();
    // Level 2 as InMemoryImage filters level 0.
    let level0: Vec<[f32; 4]> = (0..size.0 * size.1)
        .map(|i| std::array::from_fn(|c| texel(0, i % size.0, i / size.0, c)))
        .collect();
    let mem = InMemoryImage::from_rgba_f32(300, 200, TexelFormat::RGBA16F, &level0, true).unwrap();
    for level in [0, 2] {
        let q = queries(tex, size, level, 200);
        let r = render(&loader, &q, 2, 20);
        assert!(r.converged);
        let (lw, _, data) = mem.level(level as u32).unwrap();
        for (q, v) in q.iter().zip(&r.values) {
            let (x, y) = texel_at(q, size, level);
            let at = (y * lw as usize + x) * 8;
            let want = TexelFormat::RGBA16F.decode(&data[at..at + 8]);
            assert_eq!(*v, want, "level {level} texel ({x}, {y})");
        }
    }
    let _ = std::fs::remove_file(path);
}

#[test]
fn missing_and_corrupt_exrs_give_the_fallback_and_name_the_file() {
    let missing = temp_path("does-not-exist");
    let truncated = temp_path("truncated");
    let good = temp_path("good-for-truncation");
    write(&good, (256, 256), true);
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let loader = Loader::new(options()).unwrap();
    let fallback = point().fallback_color;
    for path in [&missing, &truncated] {
        let tex = loader
            .create_texture(Arc::new(ExrSource::new(path)), point())
            .unwrap();
        let q = queries(tex, (256, 256), 0, 50);
        let r = render(&loader, &q, 2, 20);
        assert!(r.converged, "failures resolve");
        assert!(r.values.iter().all(|v| *v == fallback), "{path:?}");
        let e = loader.texture_error(tex).expect("the texture failed");
        assert!(
            e.to_string().contains(&path.display().to_string()),
            "the error names the file: {e}"
        );
    }
    let _ = std::fs::remove_file(good);
    let _ = std::fs::remove_file(truncated);
}
