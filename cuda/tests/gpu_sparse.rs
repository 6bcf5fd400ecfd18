//! GPU tests of sparse and dense textures: create, map a tile and the mip tail onto pool
//! memory, copy known bytes through the staging ring, read them back from the array,
//! unmap and remap, and sample mapped texels through a texture object. Each test skips
//! (printing `skipped: ...`) without a device with sparse arrays.

mod gpu_support;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use demandtex::textures::{full_mip_levels, AddressMode, FilterMode, TexelFormat, TextureLayout};
use demandtex::{TextureDesc, TILE_BYTES};
use demandtex_cuda::array::LevelRect;
use demandtex_cuda::dense::{page_copies, upload_page, DenseTexture};
use demandtex_cuda::mapping::MapBatch;
use demandtex_cuda::sparse::{SparseRegion, SparseTexture};
use demandtex_cuda::staging::StagingRing;
use demandtex_cuda::texture_object::TextureObject;
use demandtex_cuda::tile_pool::{CudaTilePool, DEFAULT_ARENA_BYTES};
use gpu_support::{pattern, rows, sparse_gpu, Gpu, SAMPLE_PTX};

/// Read `rect` of the array back and compare with `data` (rows `pitch` apart).
fn assert_array_holds(
    g: &Gpu,
    array: &demandtex_cuda::array::MipmappedArray,
    rect: &LevelRect,
    data: &[u8],
    pitch: usize,
) {
    g.stream.synchronize().unwrap();
    let row = rect.width as usize * array.format().texel_bytes();
    let mut back = vec![0u8; row * rect.height as usize];
    array.read(rect, &mut back, row).unwrap();
    assert!(
        back == rows(data, row, rect.height as usize, pitch),
        "{rect:?}: the array does not hold the bytes copied in"
    );
}

#[test]
fn a_mapped_tile_and_mip_tail_hold_what_was_copied_and_survive_unmap_and_remap() {
    let Some(g) = sparse_gpu("sparse tile map/copy/read/unmap") else {
        return;
    };
    let layout =
        TextureLayout::new(1000, 300, full_mip_levels(1000, 300), TexelFormat::RGBA8).unwrap();
    let tex = SparseTexture::new(g.ctx(), &layout).unwrap();
    println!(
        "sparse properties of 1000×300 RGBA8: {:?}",
        tex.properties()
    );
    let mut pool = CudaTilePool::new(g.ctx(), DEFAULT_ARENA_BYTES, 1 << 30).unwrap();
    let mut staging = StagingRing::new(g.ctx(), 4, TILE_BYTES).unwrap();

    // The clipped edge tile (7, 2) of level 0: 104×44 texels.
    let page = layout.tile_page_offset(0, 7, 2);
    let region = tex.page_region(page).unwrap();
    assert!(matches!(
        region,
        SparseRegion::Tile {
            width: 104,
            height: 44,
            ..
        }
    ));
    let block = pool.allocate(1).unwrap();
    let tile = pattern(TILE_BYTES, 1);
    let mut batch = MapBatch::new(g.ordinal()).unwrap();
    batch
        .map(&tex, region, pool.memory(&block).unwrap())
        .unwrap();
    assert_eq!(batch.submit(&g.stream).unwrap(), 1);
    let fence = upload_page(&mut staging, &g.stream, tex.array(), &layout, page, &tile).unwrap();
    staging.timeline().wait(fence).unwrap();
    let copy = page_copies(&layout, page).unwrap()[0];
    assert_array_holds(&g, tex.array(), &copy.rect, &tile, copy.pitch);

    // The mip tail: levels 2.. packed, mapped as one block.
    let tail_region = tex.page_region(0).unwrap();
    let tail_tiles = (tail_region.memory_bytes() / TILE_BYTES as u64) as u32;
    let tail_block = pool.allocate(tail_tiles).unwrap();
    let tail = pattern(layout.mip_tail_bytes as usize, 2);
    let mut batch = MapBatch::new(g.ordinal()).unwrap();
    batch
        .map(&tex, tail_region, pool.memory(&tail_block).unwrap())
        .unwrap();
    batch.submit(&g.stream).unwrap();
    upload_page(&mut staging, &g.stream, tex.array(), &layout, 0, &tail).unwrap();
    for c in page_copies(&layout, 0).unwrap() {
        assert_array_holds(&g, tex.array(), &c.rect, &tail[c.data_offset..], c.pitch);
    }

    // Unmap both, map them again onto the same memory: the bytes are still there (what a
    // second-chance restore relies on).
    let mut batch = MapBatch::new(g.ordinal()).unwrap();
    batch.unmap(&tex, region).unwrap();
    batch.unmap(&tex, tail_region).unwrap();
    assert_eq!(batch.submit(&g.stream).unwrap(), 2);
    g.stream.synchronize().unwrap();
    let mut batch = MapBatch::new(g.ordinal()).unwrap();
    batch
        .map(&tex, region, pool.memory(&block).unwrap())
        .unwrap();
    batch
        .map(&tex, tail_region, pool.memory(&tail_block).unwrap())
        .unwrap();
    batch.submit(&g.stream).unwrap();
    assert_array_holds(&g, tex.array(), &copy.rect, &tile, copy.pitch);
    let first_tail = page_copies(&layout, 0).unwrap()[0];
    assert_array_holds(&g, tex.array(), &first_tail.rect, &tail, first_tail.pitch);

    // Bad regions are refused before the driver sees them.
    let mut batch = MapBatch::new(g.ordinal()).unwrap();
    let shifted = SparseRegion::Tile {
        level: 0,
        x: 1,
        y: 0,
        width: 128,
        height: 128,
    };
    assert!(batch
        .map(&tex, shifted, pool.memory(&block).unwrap())
        .is_err());
    assert!(batch.is_empty());
}

#[test]
fn a_dense_texture_takes_tiles_and_tail_through_the_same_copies() {
    let Some(g) = gpu_support::gpu("dense texture fill") else {
        return;
    };
    let layout =
        TextureLayout::new(1000, 300, full_mip_levels(1000, 300), TexelFormat::RGBA8).unwrap();
    let tex = DenseTexture::new(g.ctx(), &layout).unwrap();
    let mut staging = StagingRing::new(g.ctx(), 2, TILE_BYTES).unwrap();
    for (seed, page) in [(3, layout.tile_page_offset(1, 3, 1)), (4, 0)] {
        let bytes = if page == 0 {
            layout.mip_tail_bytes as usize
        } else {
            TILE_BYTES
        };
        let data = pattern(bytes, seed);
        upload_page(&mut staging, &g.stream, tex.array(), &layout, page, &data).unwrap();
        for c in page_copies(&layout, page).unwrap() {
            assert_array_holds(&g, tex.array(), &c.rect, &data[c.data_offset..], c.pitch);
        }
    }
    assert_eq!(
        tex.bytes(),
        layout.level0_bytes() + 300_000 + layout.mip_tail_bytes
    );
}

/// Sample `tex` at `points` (normalised) and level `lod` with the test kernel.
fn sample(g: &Gpu, tex: u64, points: &[[f32; 2]], lod: f32) -> Vec<[f32; 4]> {
    let module = g.ctx().load_module(Ptx::from_src(SAMPLE_PTX)).unwrap();
    let f = module.load_function("dtex_test_sample").unwrap();
    let flat: Vec<f32> = points.iter().flatten().copied().collect();
    let d_points = g.stream.clone_htod(&flat).unwrap();
    let mut d_out = g.stream.alloc_zeros::<f32>(points.len() * 4).unwrap();
    let n = points.len() as u32;
    let mut b = g.stream.launch_builder(&f);
    b.arg(&tex).arg(&d_points).arg(&lod).arg(&mut d_out).arg(&n);
    // SAFETY: the arguments match dtex_test_sample's parameters; the buffers hold `n`
    // points and `n` float4s.
    unsafe { b.launch(LaunchConfig::for_num_elems(n)) }.unwrap();
    let out = g.stream.clone_dtoh(&d_out).unwrap();
    g.stream.synchronize().unwrap();
    out.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect()
}

#[test]
fn a_texture_object_samples_mapped_texels_exactly() {
    let Some(g) = sparse_gpu("texture object sampling") else {
        return;
    };
    // 256×256 RGBA32F: 64×64 tiles on levels 0..=2, the tail from level 3 (32×32) on.
    let layout = TextureLayout::new(256, 256, 9, TexelFormat::RGBA32F).unwrap();
    assert_eq!(layout.mip_tail_first_level, 3);
    let tex = SparseTexture::new(g.ctx(), &layout).unwrap();
    let desc = TextureDesc {
        address: [AddressMode::Clamp; 2],
        filter: FilterMode::Point,
        ..TextureDesc::default()
    };
    let object = TextureObject::new(tex.array(), &desc, layout.num_levels()).unwrap();
    let mut pool = CudaTilePool::new(g.ctx(), DEFAULT_ARENA_BYTES, 1 << 30).unwrap();
    let mut staging = StagingRing::new(g.ctx(), 4, TILE_BYTES).unwrap();

    // Tile (1, 2) of level 0 holds texel (x, y) = (x, y, 0, 1); every tail level l holds
    // (0, 0, l, 1).
    let texel = |v: [f32; 4]| v.iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<u8>>();
    let tile: Vec<u8> = (0..64u32 * 64)
        .flat_map(|i| texel([(64 + i % 64) as f32, (128 + i / 64) as f32, 0.0, 1.0]))
        .collect();
    let mut tail = vec![0u8; layout.mip_tail_bytes as usize];
    for l in 3..layout.num_levels() {
        let ll = layout.levels[l as usize];
        for i in 0..(ll.width * ll.height) as usize {
            let at = ll.offset as usize + i * 16;
            tail[at..at + 16].copy_from_slice(&texel([0.0, 0.0, l as f32, 1.0]));
        }
    }
    let page = layout.tile_page_offset(0, 1, 2);
    let b1 = pool.allocate(1).unwrap();
    let tail_region = tex.page_region(0).unwrap();
    let tail_block = pool
        .allocate((tail_region.memory_bytes() / TILE_BYTES as u64) as u32)
        .unwrap();
    let mut batch = MapBatch::new(g.ordinal()).unwrap();
    batch
        .map(
            &tex,
            tex.page_region(page).unwrap(),
            pool.memory(&b1).unwrap(),
        )
        .unwrap();
    batch
        .map(&tex, tail_region, pool.memory(&tail_block).unwrap())
        .unwrap();
    batch.submit(&g.stream).unwrap();
    upload_page(&mut staging, &g.stream, tex.array(), &layout, page, &tile).unwrap();
    upload_page(&mut staging, &g.stream, tex.array(), &layout, 0, &tail).unwrap();

    let centre = |x: u32, y: u32| [(x as f32 + 0.5) / 256.0, (y as f32 + 0.5) / 256.0];
    let points = [
        centre(64, 128),
        centre(127, 191),
        centre(100, 150),
        centre(0, 0),
    ];
    let got = sample(&g, object.raw(), &points, 0.0);
    assert_eq!(got[0], [64.0, 128.0, 0.0, 1.0]);
    assert_eq!(got[1], [127.0, 191.0, 0.0, 1.0]);
    assert_eq!(got[2], [100.0, 150.0, 0.0, 1.0]);
    println!("an unmapped texel samples as {:?}", got[3]);
    // The same tail in a dense array, sampled the same way.
    let dense = DenseTexture::new(g.ctx(), &layout).unwrap();
    let dense_object = TextureObject::new(dense.array(), &desc, layout.num_levels()).unwrap();
    upload_page(&mut staging, &g.stream, dense.array(), &layout, 0, &tail).unwrap();
    g.stream.synchronize().unwrap();
    let mut wrong = Vec::new();
    for l in 3..layout.num_levels() {
        let want = [0.0, 0.0, l as f32, 1.0];
        let got = sample(&g, object.raw(), &[centre(10, 10)], l as f32)[0];
        let dense_got = sample(&g, dense_object.raw(), &[centre(10, 10)], l as f32)[0];
        let ll = layout.levels[l as usize];
        let rect = LevelRect {
            level: l,
            x: 0,
            y: 0,
            width: ll.width,
            height: ll.height,
        };
        let mut back = vec![0u8; (ll.width * ll.height) as usize * 16];
        tex.array()
            .read(&rect, &mut back, ll.width as usize * 16)
            .unwrap();
        let first: Vec<f32> = back[..16]
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        println!(
            "tail level {l}: sparse samples {got:?}, dense samples {dense_got:?}, sparse reads back {first:?}"
        );
        if got != want || dense_got != want {
            wrong.push(l);
        }
    }
    assert!(wrong.is_empty(), "tail levels {wrong:?} sample wrongly");
}

/// Map and fill the mip tail of a sparse `side_w × side_h` RGBA32F texture (every tail
/// level `l` holds (0, 0, l, 1)) and sample each tail level's centre; returns the levels
/// that sample wrongly.
fn tail_levels_sampling_wrongly(g: &Gpu, side_w: u32, side_h: u32) -> Vec<u32> {
    let levels = full_mip_levels(side_w, side_h);
    let layout = TextureLayout::new(side_w, side_h, levels, TexelFormat::RGBA32F).unwrap();
    let tex = SparseTexture::new(g.ctx(), &layout).unwrap();
    let desc = TextureDesc {
        address: [AddressMode::Clamp; 2],
        filter: FilterMode::Point,
        ..TextureDesc::default()
    };
    let object = TextureObject::new(tex.array(), &desc, levels).unwrap();
    let mut pool = CudaTilePool::new(g.ctx(), DEFAULT_ARENA_BYTES, 1 << 30).unwrap();
    let mut staging = StagingRing::new(g.ctx(), 4, TILE_BYTES).unwrap();
    let mut tail = vec![0u8; layout.mip_tail_bytes as usize];
    for l in layout.mip_tail_first_level..levels {
        let ll = layout.levels[l as usize];
        for i in 0..(ll.width * ll.height) as usize {
            let at = ll.offset as usize + i * 16;
            for (c, v) in [0.0f32, 0.0, l as f32, 1.0].iter().enumerate() {
                tail[at + 4 * c..at + 4 * c + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    let region = tex.page_region(0).unwrap();
    let block = pool
        .allocate((region.memory_bytes() / TILE_BYTES as u64) as u32)
        .unwrap();
    let mut batch = MapBatch::new(g.ordinal()).unwrap();
    batch
        .map(&tex, region, pool.memory(&block).unwrap())
        .unwrap();
    batch.submit(&g.stream).unwrap();
    upload_page(&mut staging, &g.stream, tex.array(), &layout, 0, &tail).unwrap();
    g.stream.synchronize().unwrap();
    (layout.mip_tail_first_level..levels)
        .filter(|&l| {
            let got = sample(g, object.raw(), &[[0.5, 0.5]], l as f32)[0];
            got != [0.0, 0.0, l as f32, 1.0]
        })
        .collect()
}

#[test]
fn the_largest_texture_the_limits_allow_samples_its_tail_and_larger_ones_are_refused() {
    let Some(g) = sparse_gpu("texture size limits") else {
        return;
    };
    let info = g.info().clone();
    println!(
        "largest mipmapped texture on {}: {:?}",
        info.name, info.max_mipmapped_texture
    );
    let fits =
        |w: u32, h: u32| demandtex_cuda::check_texture_fits(&info, w, h, TexelFormat::RGBA32F);
    // 16384×8192 RGBA32F (2.7 GiB over its levels) is the largest allowed.
    fits(16384, 8192).unwrap();
    assert!(fits(16384, 16384).is_err());
    assert_eq!(
        tail_levels_sampling_wrongly(&g, 16384, 8192),
        Vec::<u32>::new()
    );
    // What the byte cap guards against: a 16384² RGBA32F array (5.3 GiB) is refused by
    // the check; print how its tail samples here.
    let past = tail_levels_sampling_wrongly(&g, 16384, 16384);
    println!("16384² RGBA32F (past the byte cap): tail levels sampling wrongly: {past:?}");
}
