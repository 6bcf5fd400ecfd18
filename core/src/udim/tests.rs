//! UDIM entries, creation and lookups through a real loader (multi-pass).

use super::*;
use crate::ids::PageId;
use crate::sources::InMemoryImage;
use crate::textures::{TexelFormat, DEFAULT_FALLBACK_COLOR};
use crate::{Launch, Loader, LoaderOptions, Sample, SampleOptions};

const MAX_TEXTURES: u32 = 64;

fn loader() -> Loader {
    Loader::new(LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: MAX_TEXTURES,
        fill_threads: 2,
        ..Default::default()
    })
    .unwrap()
}

/// A `size × size` RGBA32F image of one colour, with mips.
fn constant(color: [f32; 4], size: u32) -> Arc<dyn ImageSource> {
    let pixels = vec![color; (size * size) as usize];
    Arc::new(InMemoryImage::from_rgba_f32(size, size, TexelFormat::RGBA32F, &pixels, true).unwrap())
}

/// A `size × size` RGBA32F image: red `code`, green and blue the texel centre's x and y.
fn ramp(code: f32, size: u32) -> Arc<dyn ImageSource> {
    let pixels: Vec<[f32; 4]> = (0..size * size)
        .map(|i| {
            let (x, y) = ((i % size) as f32, (i / size) as f32);
            [code, (x + 0.5) / size as f32, (y + 0.5) / size as f32, 1.0]
        })
        .collect();
    Arc::new(InMemoryImage::from_rgba_f32(size, size, TexelFormat::RGBA32F, &pixels, true).unwrap())
}

/// Run launches until `lookup` is resident; its value and the launches it took.
fn converge(loader: &Loader, lookup: impl Fn(&Launch) -> Sample) -> ([f32; 4], usize) {
    for launches in 1..=8 {
        let launch = loader.launch_prepare();
        let s = lookup(&launch);
        if s.resident {
            return (s.value, launches);
        }
        loader.process_requests(launch).wait();
    }
    panic!("the lookup did not converge in 8 launches");
}

fn at(loader: &Loader, udim: UdimId, s: f32, t: f32, g: f32) -> [f32; 4] {
    converge(loader, |l| {
        l.tex2d_grad_udim(udim, s, t, [g, 0.0], [0.0, g], &SampleOptions::default())
    })
    .0
}

#[test]
fn entries_round_trip_with_the_documented_bits() {
    let e = UdimEntry {
        first: TextureId(5),
        base: Some(TextureId(77)),
        width: 3,
        height: 2,
    };
    assert_eq!(e.encode().unwrap(), 5 | 77 << 24 | 3 << 48 | 2 << 56);
    assert_eq!(UdimEntry::decode(e.encode().unwrap()), Some(e));
    let widest = UdimEntry {
        first: TextureId(UDIM_MAX_TEXTURE_ID),
        base: Some(TextureId(UDIM_MAX_TEXTURE_ID)),
        width: 255,
        height: 255,
    };
    assert_eq!(UdimEntry::decode(widest.encode().unwrap()), Some(widest));
    let no_base = UdimEntry { base: None, ..e };
    let bits = no_base.encode().unwrap();
    assert_eq!(bits >> 24 & 0xFF_FFFF, UDIM_NO_BASE as u64);
    assert_eq!(UdimEntry::decode(bits), Some(no_base));

    let refused = [
        UdimEntry {
            first: TextureId(UDIM_NO_BASE),
            ..e
        },
        UdimEntry {
            base: Some(TextureId(UDIM_NO_BASE)),
            ..e
        },
        UdimEntry {
            base: Some(TextureId(1 << 24)),
            ..e
        },
        UdimEntry { width: 0, ..e },
        UdimEntry { height: 256, ..e },
    ];
    for r in refused {
        assert!(
            matches!(r.encode(), Err(Error::InvalidArgument(_))),
            "{r:?}"
        );
    }
    assert_eq!(UdimEntry::decode(0), None, "a zero entry is no grid");
    assert_eq!(UdimEntry::decode(5 | 2 << 56), None, "width 0");
    assert!(e.fits(78) && !e.fits(77) && !e.fits(10));
    assert!(no_base.fits(11) && !no_base.fits(10));
    assert_eq!(e.tile(2, 1), Some(TextureId(10)));
    assert_eq!(e.tile(3, 0), None);
    assert_eq!(udim_number(2, 1), 1013);
    assert_eq!(udim_tile(1013), Some((2, 1)));
    assert_eq!((udim_tile(1000), udim_tile(2000)), (None, None));
}

#[test]
fn tiles_are_picked_by_floor_without_bleeding_across_boundaries() {
    let loader = loader();
    let mut tiles: Vec<Option<Arc<dyn ImageSource>>> = (0..6)
        .map(|i| Some(ramp((i + 1) as f32 / 8.0, 32)))
        .collect();
    tiles[4] = None; // tile (1, 1)
    let grid = UdimGrid {
        width: 3,
        height: 2,
        tiles,
        base: None,
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    let g = 1.0 / 1024.0; // magnified: level 0
    let code = |col: u32, row: u32| (row * 3 + col + 1) as f32 / 8.0;
    for (col, row) in [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1)] {
        let v = at(&loader, udim, col as f32 + 0.5, row as f32 + 0.5, g);
        assert_eq!(v, [code(col, row), 0.5, 0.5, 1.0], "tile ({col}, {row})");
    }
    // Across s = 1 and t = 1: the last and first texel columns/rows of the two tiles.
    let (last, first) = (31.5 / 32.0, 0.5 / 32.0);
    assert_eq!(
        at(&loader, udim, 0.999, 0.5, g),
        [code(0, 0), last, 0.5, 1.0]
    );
    assert_eq!(
        at(&loader, udim, 1.001, 0.5, g),
        [code(1, 0), first, 0.5, 1.0]
    );
    assert_eq!(
        at(&loader, udim, 1.0, 0.5, g),
        [code(1, 0), first, 0.5, 1.0]
    );
    assert_eq!(
        at(&loader, udim, 0.5, 0.999, g),
        [code(0, 0), 0.5, last, 1.0]
    );
    assert_eq!(
        at(&loader, udim, 0.5, 1.001, g),
        [code(0, 1), 0.5, first, 1.0]
    );
    // A hole and the outside of a grid without a base: transparent black, resident at once.
    let launch = loader.launch_prepare();
    let opts = SampleOptions::default();
    for (s, t) in [
        (1.5, 1.5),
        (-0.5, 0.5),
        (3.5, 0.5),
        (0.5, 2.5),
        (0.5, -0.01),
        (1e30, 0.5),
    ] {
        let r = launch.tex2d_grad_udim(udim, s, t, [g, 0.0], [0.0, g], &opts);
        assert_eq!(r, Sample::new([0.0; 4], true), "({s}, {t})");
    }
    drop(launch);
    // A large footprint without a base stays on its tile (its coarsest level).
    let v = at(&loader, udim, 2.5, 0.5, 4.0);
    assert_eq!(v[0], code(2, 0));
    assert_eq!(loader.stats().unowned_requests, 0);
}

#[test]
fn wrap_addressing_would_bleed_at_a_tile_edge() {
    // Why tiles want clamp: with wrap, s = 0.999 blends the tile's first column in.
    let loader = loader();
    let grid = UdimGrid {
        width: 2,
        height: 1,
        tiles: vec![Some(ramp(0.125, 32)), Some(ramp(0.25, 32))],
        base: None,
    };
    let udim = loader
        .create_udim_texture(grid, TextureDesc::default())
        .unwrap();
    let v = at(&loader, udim, 0.999, 0.5, 1.0 / 1024.0);
    assert_eq!(v[0], 0.125, "still tile 0");
    assert!(v[1] < 31.5 / 32.0 - 0.1, "{v:?}");
}

#[test]
fn holes_and_the_outside_use_the_base_texture() {
    let loader = loader();
    let base_color = [0.25, 0.5, 0.75, 1.0];
    let tile_color = [1.0, 0.0, 0.5, 1.0];
    let grid = UdimGrid {
        width: 2,
        height: 1,
        tiles: vec![Some(constant(tile_color, 64)), None],
        base: Some(constant(base_color, 16)),
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    let g = 1.0 / 4096.0;
    assert_eq!(at(&loader, udim, 0.5, 0.5, g), tile_color);
    assert_eq!(at(&loader, udim, 1.5, 0.5, g), base_color, "hole");
    assert_eq!(
        at(&loader, udim, -3.0, 0.5, g),
        base_color,
        "left of the grid"
    );
    assert_eq!(at(&loader, udim, 0.5, 7.0, g), base_color, "below the grid");
}

#[test]
fn distant_lookups_use_the_base_close_ones_the_tile() {
    let loader = loader();
    let base_color = [0.5, 0.5, 0.5, 1.0];
    let colors = [
        [1.0, 0.0, 0.0, 1.0],
        [0.0, 1.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, 1.0],
        [1.0, 1.0, 0.0, 1.0],
    ];
    let grid = UdimGrid {
        width: 2,
        height: 2,
        tiles: colors.iter().map(|&c| Some(constant(c, 64))).collect(),
        base: Some(constant(base_color, 128)),
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    // The base has 128 / 2 = 64 texels per unit: a gradient of 1/64 spans one base texel.
    let (close, far) = (0.9 / 64.0, 1.1 / 64.0);
    // The first lookup cannot tell until the base sampler is resident: a miss that
    // requests both samplers, then the tile's level 0.
    let (v, launches) = converge(&loader, |l| {
        l.tex2d_grad_udim(
            udim,
            1.5,
            0.5,
            [close, 0.0],
            [0.0, close],
            &Default::default(),
        )
    });
    assert_eq!(v, colors[1]);
    assert!(launches <= 3, "{launches}");
    assert_eq!(at(&loader, udim, 0.5, 1.5, close), colors[2]);
    assert_eq!(at(&loader, udim, 0.5, 1.5, far), base_color);
    assert_eq!(
        at(&loader, udim, 1.5, 1.5, 1.0 / 64.0),
        base_color,
        "lod exactly 0"
    );
    // Anisotropic: the longer gradient decides.
    let v = converge(&loader, |l| {
        l.tex2d_grad_udim(udim, 1.5, 1.5, [far, 0.0], [0.0, 1e-5], &Default::default())
    })
    .0;
    assert_eq!(v, base_color);
}

#[test]
fn with_fallback_to_coarser_the_base_stands_in_for_a_missing_tile() {
    let loader = loader();
    let base_color = [0.25, 0.25, 0.25, 1.0];
    let tile_color = [0.0, 0.75, 0.0, 1.0];
    let grid = UdimGrid {
        width: 2,
        height: 1,
        tiles: vec![
            Some(constant(tile_color, 64)),
            Some(constant(tile_color, 64)),
        ],
        base: Some(constant(base_color, 128)),
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    // Make the base resident through a distant lookup (which also opens tile 0, not 1).
    assert_eq!(at(&loader, udim, 0.5, 0.5, 0.5), base_color);
    let fallback = SampleOptions {
        fallback_to_coarser: true,
        request_key: 0,
        stochastic: None,
    };
    let g = 1.0 / 1024.0;
    let launch = loader.launch_prepare();
    let plain = launch.tex2d_grad_udim(udim, 1.5, 0.5, [g, 0.0], [0.0, g], &Default::default());
    assert!(!plain.resident);
    let stand_in = launch.tex2d_grad_udim(udim, 1.5, 0.5, [g, 0.0], [0.0, g], &fallback);
    assert_eq!(stand_in, Sample::from_coarser(base_color));
    assert!(!stand_in.full_detail());
    loader.process_requests(launch).wait();
    // The tile was requested all the same; it takes over once resident.
    let v = converge(&loader, |l| {
        l.tex2d_grad_udim(udim, 1.5, 0.5, [g, 0.0], [0.0, g], &fallback)
    })
    .0;
    assert_eq!(v, tile_color);
}

#[test]
fn non_finite_inputs_give_the_base_colour_or_black() {
    let loader = loader();
    let base_color = [0.5, 0.25, 0.125, 1.0];
    let with_base = UdimGrid {
        width: 1,
        height: 1,
        tiles: vec![Some(constant([1.0; 4], 16))],
        base: Some(constant(base_color, 16)),
    };
    let without = UdimGrid {
        base: None,
        ..with_base.clone()
    };
    let a = loader.create_udim_texture(with_base, tile_desc()).unwrap();
    let b = loader.create_udim_texture(without, tile_desc()).unwrap();
    let g = [0.01, 0.0];
    let bad: [(f32, f32, [f32; 2]); 4] = [
        (f32::NAN, 0.5, g),
        (0.5, f32::INFINITY, g),
        (0.5, 0.5, [f32::NAN, 0.0]),
        (0.5, 0.5, [0.0, f32::NEG_INFINITY]),
    ];
    for (s, t, ddx) in bad {
        let v = converge(&loader, |l| {
            l.tex2d_grad_udim(a, s, t, ddx, g, &Default::default())
        })
        .0;
        assert_eq!(v, base_color);
        let launch = loader.launch_prepare();
        let r = launch.tex2d_grad_udim(b, s, t, ddx, g, &Default::default());
        assert_eq!(r, Sample::new([0.0; 4], true));
    }
}

#[test]
fn unknown_udim_ids_give_the_fallback_colour_and_request_nothing() {
    let loader = loader();
    let grid = UdimGrid {
        width: 1,
        height: 1,
        tiles: vec![Some(constant([1.0; 4], 16))],
        base: None,
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    let tex = loader
        .create_texture(constant([0.5; 4], 16), TextureDesc::default())
        .unwrap();
    at(&loader, udim, 0.5, 0.5, 0.01);
    let _ = converge(&loader, |l| l.tex2d(tex, 0.5, 0.5, &Default::default()));
    let requests = loader.stats().requests;
    let unknown = [
        UdimId(0),                // a sampler page (resident: texture 0 is open)
        UdimId(MAX_TEXTURES + 1), // a base-colour page
        UdimId(udim.0 + 1),       // a resource page never handed out
        UdimId(1 << 10),          // the first tile page
        UdimId(u32::MAX),         // past the page space
    ];
    let launch = loader.launch_prepare();
    for id in unknown {
        let r = launch.tex2d_grad_udim(id, 0.5, 0.5, [0.01, 0.0], [0.0, 0.01], &Default::default());
        assert_eq!(r, Sample::new(DEFAULT_FALLBACK_COLOR, true), "{id:?}");
        assert_eq!(loader.udim_tiles(id), None);
        assert_eq!(loader.udim_tile(id, 0, 0), None);
    }
    loader.process_requests(launch).wait();
    let stats = loader.stats();
    assert_eq!(stats.requests, requests);
    assert_eq!(stats.unowned_requests, 0);
}

#[test]
fn bad_grids_are_refused_and_consume_nothing() {
    let loader = loader();
    let one = || Some(constant([1.0; 4], 4));
    let grid = |width, height, tiles: Vec<Option<Arc<dyn ImageSource>>>| UdimGrid {
        width,
        height,
        tiles,
        base: None,
    };
    let refused = [
        (grid(0, 1, vec![]), tile_desc()),
        (grid(256, 1, (0..256).map(|_| one()).collect()), tile_desc()),
        (grid(2, 2, vec![one(), one(), one()]), tile_desc()),
        (grid(2, 1, vec![None, None]), tile_desc()),
        (
            grid(1, 1, vec![one()]),
            TextureDesc {
                max_anisotropy: 0,
                ..tile_desc()
            },
        ),
        // 8 × 8 tiles and a base: 65 ids, max_textures is 64.
        (
            UdimGrid {
                base: one(),
                ..grid(8, 8, (0..64).map(|_| one()).collect())
            },
            tile_desc(),
        ),
    ];
    for (g, desc) in refused {
        let shown = format!("{g:?}");
        let e = loader.create_udim_texture(g, desc).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{shown}: {e}");
    }
    assert_eq!(loader.stats().textures, 0);
    // The same 64 tiles without a base fit exactly; then nothing more does.
    let udim = loader
        .create_udim_texture(grid(8, 8, (0..64).map(|_| one()).collect()), tile_desc())
        .unwrap();
    assert_eq!(udim.page(), PageId(2 * MAX_TEXTURES));
    assert_eq!(loader.stats().textures, 64);
    assert!(loader
        .create_udim_texture(grid(1, 1, vec![one()]), tile_desc())
        .is_err());
}

#[test]
fn tiles_get_consecutive_ids_and_holes_resolve_without_requests() {
    let loader = loader();
    let before = loader
        .create_texture(constant([0.5; 4], 8), TextureDesc::default())
        .unwrap();
    let grid = UdimGrid {
        width: 2,
        height: 2,
        tiles: vec![
            Some(constant([1.0; 4], 8)),
            None,
            None,
            Some(constant([1.0; 4], 8)),
        ],
        base: Some(constant([0.5; 4], 8)),
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    let tiles = loader.udim_tiles(udim).unwrap();
    let first = before.0 + 1;
    assert_eq!(
        tiles,
        UdimTiles {
            width: 2,
            height: 2,
            tiles: vec![
                Some(TextureId(first)),
                None,
                None,
                Some(TextureId(first + 3))
            ],
            base: Some(TextureId(first + 4)),
        }
    );
    assert_eq!(tiles.tile(1, 1), Some(TextureId(first + 3)));
    assert_eq!(tiles.tile(1, 0), None);
    // One tile at a time, the same (outside the grid: none).
    for (col, row) in [
        (0, 0),
        (1, 0),
        (0, 1),
        (1, 1),
        (2, 0),
        (0, 2),
        (u32::MAX, 1),
    ] {
        assert_eq!(loader.udim_tile(udim, col, row), Some(tiles.tile(col, row)));
    }
    assert_eq!(loader.stats().textures, 6);
    assert_eq!(loader.texture_count(), 6);
    // A hole sampled as a texture: resident at once, the default fallback colour.
    let launch = loader.launch_prepare();
    let r = launch.tex2d(TextureId(first + 1), 0.5, 0.5, &Default::default());
    assert_eq!(r, Sample::new(DEFAULT_FALLBACK_COLOR, true));
    loader.process_requests(launch).wait();
    assert_eq!(loader.stats().requests, 0);
    assert_eq!(loader.texture_error(TextureId(first + 1)), None);
}

#[test]
fn a_lookup_of_an_id_before_it_existed_does_not_stick() {
    let loader = loader();
    // Texture 0 does not exist yet: the miss publishes the unknown-texture fallback at the
    // next launch. Creating the grid in between must cancel it.
    let launch = loader.launch_prepare();
    let r = launch.tex2d(TextureId(0), 0.5, 0.5, &Default::default());
    assert!(!r.resident);
    loader.process_requests(launch).wait();
    let color = [0.0, 0.5, 1.0, 1.0];
    let grid = UdimGrid {
        width: 2,
        height: 1,
        tiles: vec![Some(constant(color, 16)), None],
        base: None,
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    assert_eq!(
        loader.udim_tiles(udim).unwrap().tile(0, 0),
        Some(TextureId(0))
    );
    assert_eq!(at(&loader, udim, 0.5, 0.5, 0.01), color);
}

#[test]
fn every_miss_is_listed_for_a_blocking_cache() {
    // A blocking cache fills the pages a view lists and looks up again; it gives up when a
    // lookup misses without listing anything. So: non-resident ⇒ something listed, and only
    // pages that are missing.
    let loader = loader();
    let grid = UdimGrid {
        width: 2,
        height: 2,
        tiles: vec![
            Some(ramp(0.25, 256)),
            None,
            Some(ramp(0.5, 64)),
            Some(ramp(0.75, 8)),
        ],
        base: Some(ramp(1.0, 128)),
    };
    let udim = loader.create_udim_texture(grid, tile_desc()).unwrap();
    // Open the tiles but not the base: the lookups must ask for the base's sampler.
    for tile in loader.udim_tiles(udim).unwrap().tiles.into_iter().flatten() {
        converge(&loader, |l| l.tex2d(tile, 0.5, 0.5, &Default::default()));
    }
    let lookups: Vec<(f32, f32, f32)> = (0..200)
        .map(|i| {
            let f = i as f32 / 200.0;
            (
                f * 2.6 - 0.3,
                (f * 7.3) % 2.4 - 0.2,
                (2f32).powf(-11.0 + 10.0 * f),
            )
        })
        .collect();
    let misses = crate::MissList::new();
    let mut pending = lookups.len();
    for _ in 0..8 {
        if pending == 0 {
            break;
        }
        pending = 0;
        let launch = loader.launch_prepare();
        for &(s, t, g) in &lookups {
            misses.clear();
            let view = launch.view().with_misses(&misses);
            let r = tex2d_grad_udim(view, udim, s, t, [g, 0.0], [0.0, g], &Default::default());
            if !r.resident {
                pending += 1;
                assert!(!misses.is_empty(), "({s}, {t}, {g}): a miss lists nothing");
            }
            for page in misses.pages() {
                assert!(!loader.engine().pages.is_resident(page.0), "page {page:?}");
            }
        }
        loader.process_requests(launch).wait();
    }
    assert_eq!(pending, 0, "converged");
}

#[test]
fn derivative_lookups_take_the_tiles_slopes_and_the_bases_over_the_grid() {
    // Green and blue ramp across each tile (∂/∂s of green and ∂/∂t of blue are 1 per
    // tile, one UDIM unit), and across the base, which spans the 3×1 grid: its green
    // slope is 1/3 per UDIM unit. The third tile is a hole.
    let cache = crate::TextureCache::from_loader(&loader());
    let grid = UdimGrid {
        width: 3,
        height: 1,
        tiles: vec![Some(ramp(0.125, 64)), Some(ramp(0.25, 64)), None],
        base: Some(ramp(0.5, 128)),
    };
    let udim = cache.create_udim_texture(grid, tile_desc()).unwrap();
    let o = SampleOptions::default();
    let near = |a: [f32; 4], b: [f32; 4], what: &str| {
        for k in 0..4 {
            assert!((a[k] - b[k]).abs() < 1e-3, "{what}: {a:?}, want {b:?}");
        }
    };
    for (g, ds, dt, what) in [
        (
            0.1 / 64.0,
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            "a tile",
        ),
        (
            0.05,
            [0.0, 1.0 / 3.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            "the base",
        ),
    ] {
        let (ddx, ddy) = ([g, 0.0], [0.0, g]);
        let d = cache.tex2d_grad_udim_with_derivatives(udim, 1.3, 0.45, ddx, ddy, &o);
        assert_eq!(
            d.sample,
            cache.tex2d_grad_udim(udim, 1.3, 0.45, ddx, ddy, &o),
            "{what}"
        );
        assert!(d.sample.resident, "{what}");
        near(d.ds, ds, what);
        near(d.dt, dt, what);
    }
    // A hole samples the base; an unknown id answers with no slope.
    let d = cache.tex2d_grad_udim_with_derivatives(udim, 2.5, 0.45, [1e-3, 0.0], [0.0, 1e-3], &o);
    near(d.ds, [0.0, 1.0 / 3.0, 0.0, 0.0], "a hole");
    let unknown = UdimId(udim.0 + 1); // a resource page never handed out
    let d = cache.tex2d_grad_udim_with_derivatives(unknown, 0.5, 0.5, [1e-3, 0.0], [0.0, 1e-3], &o);
    assert_eq!(
        (d.sample.value, d.ds, d.dt),
        (DEFAULT_FALLBACK_COLOR, [0.0; 4], [0.0; 4])
    );
}
