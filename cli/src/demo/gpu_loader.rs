//! GPU tests of the CUDA loader: the multi-pass cycle on the device with
//! cli/kernels/demo_render.cu's kernel over one textured rectangle — convergence under
//! eviction (with second chance) equal to the fully resident render, bit for bit; and
//! agreement with the CPU samplers. Each test skips (printing `skipped: ...`) without a
//! device.

use super::cuda_kernel::{DemoCamera, DemoLayer, DemoQuad};
use super::cuda_render::DemoRenderer;
use demandtex::sources::exr::{write_mip_exr, WriteOptions};
use demandtex::sources::{file_source, Checkerboard, FloatImage, FunctionImage};
use demandtex::textures::{AddressMode, TexelFormat};
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureDesc, TextureId};
use demandtex_cuda::device_pool_bytes;
use demandtex_cuda::{CudaLoader, TilePublication};
use std::sync::Arc;

/// Whether device 0 can be used; otherwise print why and skip — or, with
/// `DEMANDTEX_REQUIRE_GPU=1` (the GPU suite), fail.
fn gpu(test: &str) -> Option<()> {
    match demandtex_cuda::probe_device(0) {
        Ok(_) => Some(()),
        Err(e) if std::env::var_os("DEMANDTEX_REQUIRE_GPU").is_some_and(|v| v == "1") => {
            panic!("{test}: no usable GPU ({e}) but DEMANDTEX_REQUIRE_GPU=1")
        }
        Err(e) => {
            println!("skipped: {test}: {e}");
            None
        }
    }
}

/// Frame side in pixels.
const SIDE: u32 = 256;
/// Texture side in texels (16×16 tiles of RGBA8 at level 0).
const TEXTURE: u32 = 2048;
/// Texture repeats across the frame: about one texel per pixel (level ~0), so a view
/// covers 3×3 tiles of level 0 and views half a texture apart share no tile of level 0.
const SCALE: f64 = 0.125;

/// A camera at the origin looking down +z, the image plane spanning [-0.5, 0.5]² at z = 1.
fn camera() -> DemoCamera {
    DemoCamera {
        eye: [0.0; 3],
        forward: [0.0, 0.0, 1.0],
        right: [1.0, 0.0, 0.0],
        up: [0.0, 1.0, 0.0],
        half_width: 0.5,
        half_height: 0.5,
        width: SIDE,
        height: SIDE,
    }
}

/// The light: straight back at the camera (N·L = 1 on the rectangle).
const LIGHT: [f64; 3] = [0.0, 0.0, -1.0];

/// The rectangle filling the frame at z = 1, showing texture `texture` from `offset`.
fn quad(texture: TextureId, offset: [f64; 2]) -> DemoQuad {
    DemoQuad {
        origin: [-0.5, 0.5, 1.0],
        edge_u: [1.0, 0.0, 0.0],
        edge_v: [0.0, -1.0, 0.0],
        base: DemoLayer {
            scale: [SCALE, SCALE],
            offset,
            texture: texture.0,
            wrap: 1,
        },
        detail: DemoLayer {
            texture: u32::MAX,
            ..DemoLayer::default()
        },
    }
}

fn options(budget: u64) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 20,
        page_table_entries: 1 << 12,
        max_textures: 64,
        max_texture_memory: budget,
        fill_threads: 2,
        // Stage every stale tile when memory is needed, so that tiles come back by
        // second chance.
        staged_reserve: 1.0,
        ..LoaderOptions::default()
    }
}

fn checker() -> Arc<Checkerboard> {
    Arc::new(Checkerboard::new(TEXTURE, TEXTURE, 48, TexelFormat::RGBA8))
}

/// Render the rectangle at `offset` until every pixel is done (full frame each launch).
fn render(loader: &CudaLoader, texture: TextureId, offset: [f64; 2]) -> Vec<[f32; 4]> {
    let mut frame = DemoRenderer::new(loader, camera(), LIGHT, &[quad(texture, offset)]).unwrap();
    let total = frame.pixel_count();
    let mut done = 0usize;
    for _ in 0..200 {
        let launch = loader.launch_prepare().unwrap();
        done += frame.render(&launch, 0, total as u32).unwrap() as usize;
        loader.process_requests(launch).unwrap().wait();
        if done == total {
            return frame.pixels().unwrap();
        }
    }
    panic!("no convergence in 200 launches ({done} of {total} pixels)");
}

#[test]
fn convergence_under_eviction_with_second_chance_equals_the_resident_render() {
    if gpu("CUDA loader eviction").is_none() {
        return;
    }
    let (a, b) = ([0.0, 0.0], [0.5, 0.5]);
    // The reference: no budget limit. It stays alive beside the budgeted loader (two
    // loaders on one device, independent).
    let full = CudaLoader::new(0, options(1 << 34)).unwrap();
    let tf = full
        .create_texture(checker(), TextureDesc::default())
        .unwrap();
    let ref_a = render(&full, tf, a);
    let ref_b = render(&full, tf, b);
    let both = full.stats().peak_resident_bytes;
    // Each view's own working set, on a loader that saw only it.
    let view_alone = |offset| {
        let l = CudaLoader::new(0, options(1 << 34)).unwrap();
        let t = l.create_texture(checker(), TextureDesc::default()).unwrap();
        render(&l, t, offset);
        l.stats().peak_resident_bytes
    };
    let one_view = view_alone(a).max(view_alone(b));
    println!(
        "CUDA loader: one view needs {one_view} bytes, both {both}; sparse = {}",
        full.is_sparse()
    );

    // A budget that holds either view and half of what the other one adds, not both:
    // switching views evicts, and some of what it evicts stays staged for a second chance.
    let budget = one_view + (both - one_view) / 2;
    assert!(
        budget < both,
        "the views share too much for a budget to hold one and not both"
    );
    let tight = CudaLoader::new(0, options(budget)).unwrap();
    let tt = tight
        .create_texture(checker(), TextureDesc::default())
        .unwrap();
    let got_a = render(&tight, tt, a);
    let got_b = render(&tight, tt, b);
    let again_a = render(&tight, tt, a);
    assert!(got_a == ref_a, "view A differs from the resident render");
    assert!(got_b == ref_b, "view B differs from the resident render");
    assert!(again_a == ref_a, "view A after eviction differs");

    let s = tight.stats();
    let c = tight.cuda_stats();
    println!("CUDA loader under eviction: {s:?}\n{c:?}");
    assert!(
        s.evictions > 0 || s.pages_staged > 0,
        "switching views evicted nothing"
    );
    assert!(s.second_chance_restores > 0, "no second chance");
    assert!(s.peak_resident_bytes <= budget);
    if c.sparse {
        assert!(c.device_restores > 0, "restores copied the tiles again");
        assert!(c.blocks_released > 0);
        assert!(c.pool_peak_bytes <= device_pool_bytes(budget));
    }
}

#[test]
fn tiles_published_during_a_launch_are_sampled_from_the_next_one() {
    if gpu("CUDA tile publication during the launch").is_none() {
        return;
    }
    let (a, b) = ([0.0, 0.0], [0.5, 0.5]);
    let before = CudaLoader::new(0, options(1 << 34)).unwrap();
    assert_eq!(before.tile_publication(), TilePublication::BeforeLaunch);
    let tb = before
        .create_texture(checker(), TextureDesc::default())
        .unwrap();
    let ref_a = render(&before, tb, a);
    let ref_b = render(&before, tb, b);

    let during = CudaLoader::new(0, options(1 << 34)).unwrap();
    during.set_tile_publication(TilePublication::DuringLaunch);
    assert_eq!(during.tile_publication(), TilePublication::DuringLaunch);
    let td = during
        .create_texture(checker(), TextureDesc::default())
        .unwrap();
    assert!(render(&during, td, a) == ref_a, "view A differs");

    // View B: its first launch asks for its tiles; once they are filled, the next
    // launch_prepare holds them (none uploaded) and its process_requests publishes them.
    let mut frame = DemoRenderer::new(&during, camera(), LIGHT, &[quad(td, b)]).unwrap();
    let total = frame.pixel_count() as u32;
    let launch = during.launch_prepare().unwrap();
    frame.render(&launch, 0, total).unwrap();
    during.process_requests(launch).unwrap().wait();
    let filled = during.cuda_stats();
    let launch = during.launch_prepare().unwrap();
    assert_eq!(
        during.cuda_stats().tiles_uploaded,
        filled.tiles_uploaded,
        "launch_prepare published tiles"
    );
    frame.render(&launch, 0, total).unwrap();
    during.process_requests(launch).unwrap().wait();
    let published = during.cuda_stats();
    assert!(
        published.tiles_uploaded > filled.tiles_uploaded,
        "process_requests published no tile"
    );
    assert!(published.publications_during_launch > filled.publications_during_launch);
    assert!(render(&during, td, b) == ref_b, "view B differs");
}

/// A mask as painters make one: black left of x = 128, white right of it, detail inside a
/// disc in level-0 tile (1, 1). View A (offset 0) sees three black tiles, five white ones
/// and the disc's; view B (offset 0.5) only white ones.
fn mask() -> Arc<FunctionImage<impl Fn(u32, u32, u32) -> [f32; 4] + Send + Sync>> {
    Arc::new(FunctionImage::new(
        "mask",
        TEXTURE,
        TEXTURE,
        TexelFormat::RGBA8,
        |level, x, y| {
            let scale = (1u32 << level) as f32;
            let (fx, fy) = ((x as f32 + 0.5) * scale, (y as f32 + 0.5) * scale);
            let (dx, dy) = (fx - 200.0, fy - 200.0);
            if dx * dx + dy * dy < 30.0 * 30.0 {
                let v = ((x ^ y.wrapping_mul(7) ^ level) & 0xff) as f32 / 255.0;
                return [v, 1.0 - v, 0.5, 1.0];
            }
            let v = if fx < 128.0 { 0.0 } else { 1.0 };
            [v, v, v, 1.0]
        },
    ))
}

#[test]
fn constant_tiles_share_one_device_block_per_value() {
    if gpu("CUDA constant-tile sharing").is_none() {
        return;
    }
    let run = |coalesce: bool| {
        let loader = CudaLoader::new(
            0,
            LoaderOptions {
                coalesce_constant_tiles: coalesce,
                ..options(1 << 30)
            },
        )
        .unwrap();
        let t = loader
            .create_texture(mask(), TextureDesc::default())
            .unwrap();
        let views = [
            render(&loader, t, [0.0, 0.0]),
            render(&loader, t, [0.5, 0.5]),
        ];
        (views, loader.stats(), loader.cuda_stats())
    };
    let (off, off_stats, off_cuda) = run(false);
    let (on, on_stats, on_cuda) = run(true);
    println!("constant tiles, sharing off: {off_stats:?}\n{off_cuda:?}");
    println!("constant tiles, sharing on: {on_stats:?}\n{on_cuda:?}");
    assert!(on == off, "sharing blocks changed the render");
    assert_eq!(off_cuda.tiles_shared, 0);
    assert_eq!(off_cuda.shared_blocks, 0);
    assert_eq!(on_stats.tiles_filled, off_stats.tiles_filled);
    if !on_cuda.sparse {
        println!("dense arrays: nothing to share");
        return;
    }
    // Black and white, at every level (one format, one tile shape): two blocks, and every
    // other constant tile mapped onto one of them with no copy.
    assert!(on_cuda.tiles_shared >= 4, "{on_cuda:?}");
    assert!((1..=2).contains(&on_cuda.shared_blocks), "{on_cuda:?}");
    assert_eq!(
        on_cuda.tiles_uploaded + on_cuda.tiles_shared,
        off_cuda.tiles_uploaded,
        "every published tile is uploaded or shared"
    );
    assert!(on_cuda.pool_peak_bytes < off_cuda.pool_peak_bytes);
    assert!(
        on_stats.coalesced_pages > 0,
        "the engine shared no host slot"
    );
}

#[test]
fn a_copy_of_a_texture_samples_its_owners_array() {
    if gpu("CUDA duplicate-texture sharing").is_none() {
        return;
    }
    // A 1024² half RGBA OpenEXR file and a byte copy of it.
    let dir = std::env::temp_dir().join(format!("dtex-gpu-dup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.exr"), dir.join("b.exr"));
    let mut image = FloatImage::zeros(1024, 1024, 4);
    for (i, v) in image.data.iter_mut().enumerate() {
        *v = ((i * 7919) % 1021) as f32 / 1021.0;
    }
    write_mip_exr(&a, &image, &WriteOptions::default(), None).unwrap();
    std::fs::copy(&a, &b).unwrap();
    let run = |share: bool| {
        let loader = CudaLoader::new(
            0,
            LoaderOptions {
                share_duplicate_textures: share,
                ..options(1 << 30)
            },
        )
        .unwrap();
        let ta = loader
            .create_texture(file_source(&a), TextureDesc::default())
            .unwrap();
        // The copy under another address mode: its own texture object over the array.
        let desc = TextureDesc {
            address: [AddressMode::Clamp, AddressMode::Mirror],
            ..TextureDesc::default()
        };
        let tb = loader.create_texture(file_source(&b), desc).unwrap();
        let views = [
            render(&loader, ta, [0.1, 0.2]),
            render(&loader, tb, [0.1, 0.2]),
            render(&loader, tb, [0.6, 0.7]),
        ];
        (views, loader.stats(), loader.cuda_stats())
    };
    let (off, off_stats, off_cuda) = run(false);
    let (on, on_stats, on_cuda) = run(true);
    let _ = std::fs::remove_dir_all(&dir);
    println!("duplicate textures, sharing off: {off_stats:?}\n{off_cuda:?}");
    println!("duplicate textures, sharing on: {on_stats:?}\n{on_cuda:?}");
    assert!(on == off, "sharing the array changed the render");
    assert_eq!(on_stats.textures_sharing_tiles, 1, "{on_stats:?}");
    assert_eq!(on_cuda.textures_sharing_arrays, 1, "{on_cuda:?}");
    assert_eq!(off_cuda.textures_sharing_arrays, 0);
    assert!(on_stats.tiles_filled < off_stats.tiles_filled);
    assert!(on_cuda.tiles_uploaded < off_cuda.tiles_uploaded);
}

#[test]
fn the_gpu_render_agrees_with_the_cpu_samplers() {
    if gpu("CUDA/CPU agreement").is_none() {
        return;
    }
    let offset = [0.1, 0.3];
    let desc = TextureDesc {
        address: [AddressMode::Wrap, AddressMode::Wrap],
        ..TextureDesc::default()
    };
    let gpu = CudaLoader::new(0, options(1 << 30)).unwrap();
    let t = gpu.create_texture(checker(), desc).unwrap();
    let got = render(&gpu, t, offset);

    // The same lookups on the CPU: the rectangle's local coordinates are the image-plane
    // position (a = x + 0.5, b = 0.5 - y), their pixel differentials 1/SIDE.
    let cpu = Loader::new(options(1 << 30)).unwrap();
    let tc = cpu.create_texture(checker(), desc).unwrap();
    let step = 1.0 / SIDE as f64;
    let k = 0.35f32 + 0.65f32;
    let mut want = vec![[0.0f32; 4]; (SIDE * SIDE) as usize];
    for _ in 0..200 {
        let launch = cpu.launch_prepare();
        let mut all = true;
        for j in 0..SIDE {
            for i in 0..SIDE {
                let sx = (2.0 * (i as f64 + 0.5) / SIDE as f64 - 1.0) * 0.5;
                let sy = (1.0 - 2.0 * (j as f64 + 0.5) / SIDE as f64) * 0.5;
                let c = |o: f64, l: f64| {
                    let v = o + l * SCALE;
                    (v - v.floor()) as f32
                };
                let (s, tt) = (c(offset[0], sx + 0.5), c(offset[1], 0.5 - sy));
                let d = (step * SCALE) as f32;
                let r = launch.tex2d_grad(tc, s, tt, [d, 0.0], [0.0, d], &SampleOptions::default());
                all &= r.resident;
                want[(j * SIDE + i) as usize] =
                    [r.value[0] * k, r.value[1] * k, r.value[2] * k, 1.0];
            }
        }
        cpu.process_requests(launch).wait();
        if all {
            break;
        }
    }
    let (mut max, mut sq) = (0.0f32, 0.0f64);
    for (p, q) in got.iter().zip(&want) {
        for ch in 0..3 {
            let d = (p[ch] - q[ch]).abs();
            max = max.max(d);
            sq += (d as f64).powi(2);
        }
    }
    let mse = sq / (got.len() * 3) as f64;
    let psnr = if mse == 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    };
    println!("CPU/GPU agreement: max abs diff {max}, PSNR {psnr:.1} dB");
    // Hardware filtering weights are 8-bit fixed point: see the demo's MIN_PSNR_DB.
    assert!(psnr >= 40.0, "PSNR {psnr:.1} dB, max abs diff {max}");
}

#[test]
fn bc_blocks_are_filtered_by_the_texture_unit_in_a_quarter_of_the_memory() {
    use crate::convert::dds::{write_dds, DdsCompression, DdsWriteOptions};
    if gpu("CUDA BC sparse arrays").is_none() {
        return;
    }
    // A 2048² image with detail at every scale, as BC1 and BC7 DDS files with mips.
    let dir = std::env::temp_dir().join(format!("dtex-gpu-bc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut image = FloatImage::zeros(TEXTURE, TEXTURE, 4);
    for (i, v) in image.data.iter_mut().enumerate() {
        let (x, y) = ((i / 4) as u32 % TEXTURE, (i / 4) as u32 / TEXTURE);
        let c = (i % 4) as f32;
        *v = 0.5 + 0.4 * ((x as f32 * (0.01 + 0.003 * c)).sin() * (y as f32 * 0.013).cos());
    }
    for compression in [DdsCompression::Bc1, DdsCompression::Bc7] {
        let path = dir.join(format!("{}.dds", compression.name()));
        let written = DdsWriteOptions {
            compression,
            ..DdsWriteOptions::default()
        };
        write_dds(&path, &image, &written).unwrap();
        let run = |keep_blocks: bool| {
            let loader = CudaLoader::new(
                0,
                LoaderOptions {
                    keep_blocks,
                    ..options(1 << 30)
                },
            )
            .unwrap();
            let t = loader
                .create_texture(file_source(&path), TextureDesc::default())
                .unwrap();
            let views = [
                render(&loader, t, [0.1, 0.2]),
                render(&loader, t, [0.6, 0.7]),
            ];
            let layout = loader.engine().texture_layout(t).unwrap();
            (views, layout.blocks, loader.stats(), loader.cuda_stats())
        };
        let (kept, kept_codec, ks, kc) = run(true);
        let (decoded, decoded_codec, ds, dc) = run(false);
        println!("{compression:?} blocks kept: {ks:?}\n{kc:?}");
        println!("{compression:?} blocks decoded: {ds:?}\n{dc:?}");
        assert!(kept_codec.is_some() && decoded_codec.is_none());
        // The texture unit's BC decode and the CPU's (bcdec) may round interpolated
        // colours differently by a step; filtering weights are 8-bit fixed point.
        let psnr = psnr(&kept.concat(), &decoded.concat());
        println!("{compression:?}: kept against decoded PSNR {psnr:.1} dB");
        assert!(psnr >= 40.0, "{compression:?}: PSNR {psnr:.1} dB");
        assert!(ks.tiles_filled < ds.tiles_filled, "{ks:?} {ds:?}");
        assert!(
            ks.peak_resident_bytes < ds.peak_resident_bytes,
            "{ks:?} {ds:?}"
        );
        assert_eq!(ks.failed_textures + ds.failed_textures, 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// PSNR of RGB between two renders (peak 1).
fn psnr(a: &[[f32; 4]], b: &[[f32; 4]]) -> f64 {
    let sq: f64 = a
        .iter()
        .zip(b)
        .flat_map(|(p, q)| (0..3).map(move |c| ((p[c] - q[c]) as f64).powi(2)))
        .sum();
    let mse = sq / (a.len() * 3) as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    }
}
