//! UDIM textures end to end: a multi-pass render of lookups scattered over a grid (tile
//! boundaries, a hole, the outside, distant footprints) converges to the values of the same
//! lookups on the tiles and base as ordinary, fully resident textures; and a grid built
//! from `name.<UDIM>.exr` files.

mod common;

use common::{render, PatternSource, Query};
use demandtex::sources::ImageSource;
use demandtex::textures::TexelFormat;
use demandtex::udim::{tile_desc, UdimGrid, UdimId};
use demandtex::{Loader, LoaderOptions, SampleOptions, TILE_BYTES};
use std::sync::Arc;

const GRID_W: u32 = 3;
const GRID_H: u32 = 2;
const HOLE: (u32, u32) = (2, 1);
const BASE_SIZE: (u32, u32) = (768, 512);

/// One lookup: s, t, ddx, ddy.
type Lookup = (f32, f32, [f32; 2], [f32; 2]);
/// A grid slot: a source, or a hole.
type Tile = Option<Arc<dyn ImageSource>>;

fn options(budget: u64) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 20,
        page_table_entries: 1 << 12,
        max_textures: 256,
        max_texture_memory: budget,
        fill_threads: 2,
        ..Default::default()
    }
}

/// The tiles (row-major, `None` at the hole) and the base: distinct patterns, assorted
/// sizes and formats.
fn sources() -> (Vec<Tile>, Arc<dyn ImageSource>) {
    let sizes = [
        (512, 512),
        (300, 200),
        (1024, 256),
        (64, 64),
        (700, 900),
        (1, 1),
    ];
    let formats = [TexelFormat::RGBA8, TexelFormat::RGBA32F];
    let tiles = (0..GRID_W * GRID_H)
        .map(|i| {
            let (col, row) = (i % GRID_W, i / GRID_W);
            ((col, row) != HOLE).then(|| {
                let (w, h) = sizes[i as usize];
                let src = PatternSource::new(w, h, formats[i as usize % 2], 100 + i);
                Arc::new(src) as Arc<dyn ImageSource>
            })
        })
        .collect();
    let base = PatternSource::new(BASE_SIZE.0, BASE_SIZE.1, TexelFormat::RGBA8, 7);
    (tiles, Arc::new(base))
}

/// Lookups over and around the grid: random ones from magnified to minified, and pairs on
/// both sides of every tile boundary.
fn lookups(seed: u64, n: usize) -> Vec<Lookup> {
    let mut rng = seed.wrapping_mul(6364136223846793005) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut out = Vec::with_capacity(n + 64);
    for _ in 0..n {
        let scale = (2f64).powf(-13.0 + next() * 12.0) as f32;
        let aniso = 1.0 + (next() * 4.0) as f32;
        out.push((
            (next() * (GRID_W as f64 + 1.0) - 0.5) as f32,
            (next() * (GRID_H as f64 + 1.0) - 0.5) as f32,
            [scale * aniso, scale * 0.1],
            [-scale * 0.2, scale],
        ));
    }
    let g = [1.0 / 2048.0, 0.0];
    let h = [0.0, 1.0 / 2048.0];
    for edge in 0..=GRID_W {
        for d in [-0.001, 0.0, 0.001] {
            out.push((edge as f32 + d, 0.37, g, h));
            out.push((edge as f32 + d, 1.61, g, h));
        }
    }
    for edge in 0..=GRID_H {
        for d in [-0.001, 0.0, 0.001] {
            for s in [0.5, 1.5, 2.5] {
                out.push((s, edge as f32 + d, g, h));
            }
        }
    }
    out
}

/// Render UDIM lookups until each was resident once (as `common::render`).
fn render_udim(
    loader: &Loader,
    udim: UdimId,
    lookups: &[Lookup],
    max_launches: usize,
) -> (Vec<[f32; 4]>, bool) {
    let mut values = vec![[0.0f32; 4]; lookups.len()];
    let mut done = vec![false; lookups.len()];
    let opts = SampleOptions::default();
    for _ in 0..max_launches {
        if done.iter().all(|&d| d) {
            break;
        }
        let launch = loader.launch_prepare();
        let chunk = lookups.len().div_ceil(2);
        std::thread::scope(|scope| {
            for ((q, v), d) in lookups
                .chunks(chunk)
                .zip(values.chunks_mut(chunk))
                .zip(done.chunks_mut(chunk))
            {
                let launch = &launch;
                let opts = &opts;
                scope.spawn(move || {
                    for i in 0..q.len() {
                        if d[i] {
                            continue;
                        }
                        let (s, t, ddx, ddy) = q[i];
                        let r = launch.tex2d_grad_udim(udim, s, t, ddx, ddy, opts);
                        if r.resident {
                            v[i] = r.value;
                            d[i] = true;
                        }
                    }
                });
            }
        });
        loader.process_requests(launch).wait();
    }
    let converged = done.iter().all(|&d| d);
    (values, converged)
}

/// The same lookups as ordinary texture lookups on a loader holding the tiles and the base
/// as separate textures: the UDIM rules written out independently.
fn reference(lookups: &[Lookup]) -> Vec<[f32; 4]> {
    let loader = Loader::new(options(u64::MAX / 2)).unwrap();
    let (tiles, base) = sources();
    let tiles: Vec<_> = tiles
        .into_iter()
        .map(|t| t.map(|src| loader.create_texture(src, tile_desc()).unwrap()))
        .collect();
    let base = loader.create_texture(base, tile_desc()).unwrap();
    let (gw, gh) = (GRID_W as f32, GRID_H as f32);
    let queries: Vec<Query> = lookups
        .iter()
        .map(|&(s, t, ddx, ddy)| {
            let base_query = Query {
                texture: base,
                s: s / gw,
                t: t / gh,
                ddx: [ddx[0] / gw, ddx[1] / gh],
                ddy: [ddy[0] / gw, ddy[1] / gh],
            };
            let in_base_texels = |g: [f32; 2]| {
                let x = g[0] * BASE_SIZE.0 as f32 / gw;
                let y = g[1] * BASE_SIZE.1 as f32 / gh;
                x * x + y * y
            };
            if in_base_texels(ddx).max(in_base_texels(ddy)) >= 1.0 {
                return base_query;
            }
            let (col, row) = (s.floor(), t.floor());
            if col < 0.0 || row < 0.0 || col >= gw || row >= gh {
                return base_query;
            }
            match tiles[(row as u32 * GRID_W + col as u32) as usize] {
                Some(texture) => Query {
                    texture,
                    s: s - col,
                    t: t - row,
                    ddx,
                    ddy,
                },
                None => base_query,
            }
        })
        .collect();
    let r = render(&loader, &queries, 2, 100);
    assert!(r.converged, "an unlimited budget always converges");
    r.values
}

fn udim_loader(budget: u64) -> (Loader, UdimId) {
    let loader = Loader::new(options(budget)).unwrap();
    let (tiles, base) = sources();
    let grid = UdimGrid {
        width: GRID_W,
        height: GRID_H,
        tiles,
        base: Some(base),
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    (loader, udim)
}

#[test]
fn a_converged_udim_render_equals_the_render_of_its_textures() {
    let q = lookups(11, 1500);
    let expected = reference(&q);
    let (loader, udim) = udim_loader(u64::MAX / 2);
    let (values, converged) = render_udim(&loader, udim, &q, 100);
    assert!(converged);
    for (i, (a, b)) in values.iter().zip(&expected).enumerate() {
        assert_eq!(a, b, "lookup {i}: {:?}", q[i]);
    }
    let stats = loader.stats();
    assert_eq!(stats.unowned_requests, 0, "{stats:?}");
    assert_eq!(stats.failed_textures, 0, "{stats:?}");
}

#[test]
fn a_tight_budget_still_gives_the_same_texels() {
    let q = lookups(5, 800);
    let expected = reference(&q);
    let budget = 48 * TILE_BYTES as u64;
    let (loader, udim) = udim_loader(budget);
    let (values, converged) = render_udim(&loader, udim, &q, 200);
    assert!(converged);
    assert_eq!(values, expected);
    let stats = loader.stats();
    assert!(stats.peak_resident_bytes <= budget, "{stats:?}");
}

#[test]
fn a_grid_from_udim_files_with_a_hole_and_a_base() {
    let dir = std::env::temp_dir().join(format!("demandtex-udim-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, c: f32| {
        exr::prelude::write_rgba_file(dir.join(name), 16, 16, |_, _| (c, c, c, 1.0f32)).unwrap();
    };
    write("paint.1001.exr", 0.25);
    write("paint.1002.exr", 0.5);
    write("paint.1012.exr", 0.75); // (1, 1); (0, 1) is a hole
    write("base.exr", 0.125);
    std::fs::write(dir.join("paint.1013.tif"), b"not part of the pattern").unwrap();
    let loader = Loader::new(options(u64::MAX / 2)).unwrap();
    let udim = loader
        .create_udim_from_pattern(
            &dir.join("paint.<UDIM>.exr"),
            Some(&dir.join("base.exr")),
            tile_desc(),
        )
        .unwrap();
    let tiles = loader.udim_tiles(udim).unwrap();
    assert_eq!((tiles.width, tiles.height), (2, 2));
    assert_eq!(tiles.tiles.iter().flatten().count(), 3);
    assert!(tiles.tile(0, 1).is_none() && tiles.base.is_some());
    let g = [1.0 / 1024.0, 0.0];
    let h = [0.0, 1.0 / 1024.0];
    let q = [
        (0.5, 0.5, g, h),
        (1.5, 0.5, g, h),
        (1.5, 1.5, g, h),
        (0.5, 1.5, g, h),
        (5.0, 0.5, g, h),
    ];
    let (values, converged) = render_udim(&loader, udim, &q, 10);
    assert!(converged);
    let reds: Vec<f32> = values.iter().map(|v| v[0]).collect();
    assert_eq!(reds, [0.25, 0.5, 0.75, 0.125, 0.125]);
    assert_eq!(loader.stats().failed_textures, 0);
    let missing = loader
        .create_udim_from_pattern(&dir.join("none.<UDIM>.exr"), None, tile_desc())
        .unwrap_err();
    assert!(missing.to_string().contains("none.<UDIM>.exr"), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}
