//! Pages that keep a DDS file's blocks (`LoaderOptions::keep_blocks`): lookups equal those
//! of the same file decoded into texel pages, bit for bit, for every codec, at tile edges,
//! in the mip tail and through eviction; the budget holds 4–8× the texels.

use super::tests::{random_blocks_file, temp};
use super::*;
use crate::cache::TextureCache;
use crate::ids::{TextureId, TILE_BYTES};
use crate::sampling::SampleOptions;
use crate::textures::{AddressMode, BlockCodec, FilterMode, MipFilter, TextureDesc};
use crate::LoaderOptions;
use ddsfile::DxgiFormat as D;

fn cache(keep_blocks: bool, budget_pages: u64) -> TextureCache {
    TextureCache::new(LoaderOptions {
        max_texture_memory: budget_pages * TILE_BYTES as u64,
        fill_threads: 1,
        keep_blocks,
        ..Default::default()
    })
    .unwrap()
}

fn desc() -> TextureDesc {
    TextureDesc {
        filter: FilterMode::Linear,
        mip_filter: MipFilter::Linear,
        address: [AddressMode::Wrap, AddressMode::Clamp],
        max_anisotropy: 8,
        ..TextureDesc::default()
    }
}

/// Lookups at pseudo-random places and footprints (magnified to past the coarsest level,
/// isotropic and anisotropic), each `(s, t, ddx, ddy)`.
fn lookups(n: u32) -> Vec<(f32, f32, [f32; 2], [f32; 2])> {
    let mut next = crate::test_rng::xorshift32(0x9e37_79b9);
    let mut unit = move || (next() >> 8) as f32 / (1u32 << 24) as f32;
    (0..n)
        .map(|_| {
            let (s, t) = (unit() * 1.2 - 0.1, unit() * 1.2 - 0.1);
            let scale = (2.0f32).powf(unit() * 14.0 - 12.0);
            let aniso = 1.0 + unit() * 6.0;
            (s, t, [scale * aniso, 0.0], [0.0, scale])
        })
        .collect()
}

fn sample_all(
    cache: &TextureCache,
    tex: TextureId,
    at: &[(f32, f32, [f32; 2], [f32; 2])],
) -> Vec<[f32; 4]> {
    let options = SampleOptions::default();
    at.iter()
        .map(|&(s, t, ddx, ddy)| {
            let got = cache.tex2d_grad(tex, s, t, ddx, ddy, &options);
            assert!(got.resident, "a blocking lookup is resident");
            got.value
        })
        .collect()
}

#[test]
fn kept_blocks_sample_as_the_decoded_texels_of_every_codec() {
    let cases = [
        (D::BC1_UNorm, BlockCodec::Bc1),
        (D::BC2_UNorm, BlockCodec::Bc2),
        (D::BC3_UNorm, BlockCodec::Bc3),
        (D::BC4_UNorm, BlockCodec::Bc4 { signed: false }),
        (D::BC4_SNorm, BlockCodec::Bc4 { signed: true }),
        (D::BC5_UNorm, BlockCodec::Bc5 { signed: false }),
        (D::BC5_SNorm, BlockCodec::Bc5 { signed: true }),
        (D::BC6H_UF16, BlockCodec::Bc6h { signed: false }),
        (D::BC6H_SF16, BlockCodec::Bc6h { signed: true }),
        (D::BC7_UNorm, BlockCodec::Bc7),
    ];
    let at = lookups(600);
    for (i, (dxgi, codec)) in cases.into_iter().enumerate() {
        // Not a multiple of 4 or of a tile: partial blocks and tiles at the edges, and
        // levels of 2×1 and 1×1 texels in one block each.
        let (w, h) = (1037, 601);
        let path = temp(&format!("kept-{i}.dds"));
        random_blocks_file(&path, dxgi, (w, h), full_mip_levels(w, h), 7 + i as u64);
        let (kept, decoded) = (cache(true, 64), cache(false, 64));
        let a = kept.texture_for_path(&path, desc()).unwrap();
        let b = decoded.texture_for_path(&path, desc()).unwrap();
        let got = sample_all(&kept, a, &at);
        let want = sample_all(&decoded, b, &at);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = g.iter().zip(w).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{codec:?} lookup {k} {:?}: {g:?} vs {w:?}", at[k]);
        }
        let layout = kept.loader().engine().texture_layout(a).unwrap();
        assert_eq!(layout.blocks, Some(codec));
        assert_eq!((layout.tile_width, layout.tile_height), codec.tile_extent());
        assert_eq!(layout.format, codec.served_format());
        let plain = decoded.loader().engine().texture_layout(b).unwrap();
        assert_eq!(plain.blocks, None);
        // A page holds as many more texels as a decoded texel has bytes more than a
        // texel's share of a block: 8× for BC1 and BC6H, 4× for BC7, 2× for 8-bit BC4.
        let ratio = layout.tile_width * layout.tile_height / (plain.tile_width * plain.tile_height);
        let want = plain.format.texel_bytes() * 16 / codec.block_bytes();
        assert_eq!(ratio as usize, want, "{codec:?}");
        assert_eq!(layout.tile_bytes(), TILE_BYTES);
        let (ks, ds) = (kept.stats(), decoded.stats());
        assert!(ks.bytes_read <= ds.bytes_read, "{codec:?}: {ks:?} {ds:?}");
        assert_eq!(ks.failed_textures + ds.failed_textures, 0);
    }
}

/// Files NVIDIA Texture Tools and `demandtex convert` wrote (`tests/fixtures/dds`), two of
/// them of several pages of blocks at level 0: kept blocks sample as decoded texels do,
/// through a budget of a few pages.
#[test]
fn files_other_tools_wrote_sample_the_same_kept_or_decoded() {
    let at = lookups(3000);
    for name in [
        "nv-bc1-tiled",
        "nv-bc3-tiled",
        "nv-bc1",
        "nv-bc1a",
        "nv-bc2",
        "nv-bc3",
        "nv-bc4",
        "nv-bc5",
        "dtx-bc7",
        "dtx-bc4",
    ] {
        let path = crate::sources::fixture_refs::fixture("dds", &format!("{name}.dds"));
        let (kept, decoded) = (cache(true, 6), cache(false, 64));
        let a = kept.texture_for_path(&path, desc()).unwrap();
        let b = decoded.texture_for_path(&path, desc()).unwrap();
        let got = sample_all(&kept, a, &at);
        let want = sample_all(&decoded, b, &at);
        assert!(got == want, "{name}");
        let layout = kept.loader().engine().texture_layout(a).unwrap();
        assert!(layout.blocks.is_some(), "{name}: a full chain of blocks");
        if name.ends_with("tiled") {
            let l0 = layout.levels[0];
            assert!(l0.tiles_x * l0.tiles_y >= 2, "{name}: {l0:?}");
        }
    }
}

#[test]
fn a_budget_of_blocks_holds_level_zero_where_decoded_texels_thrash() {
    // A 1024² BC1 texture: level 0 is 512 KiB of blocks (8 pages) but 4 MiB of RGBA8
    // (64 pages). In a budget of 16 pages, sweeping level 0 three times evicts nothing
    // when blocks are kept, and thrashes when they are decoded.
    let path = temp("budget-bc1.dds");
    random_blocks_file(&path, D::BC1_UNorm, (1024, 1024), 11, 3);
    let sweep: Vec<_> = (0..3)
        .flat_map(|_| {
            (0..64 * 64).map(|i| {
                (
                    (i % 64) as f32 / 64.0 + 0.004,
                    (i / 64) as f32 / 64.0 + 0.004,
                )
            })
        })
        .collect();
    let run = |keep: bool| {
        let c = cache(keep, 16);
        let tex = c.texture_for_path(&path, desc()).unwrap();
        let options = SampleOptions::default();
        let values: Vec<_> = sweep
            .iter()
            .map(|&(s, t)| c.tex2d_lod(tex, s, t, 0.0, &options).value)
            .collect();
        (values, c.stats())
    };
    let (kept, ks) = run(true);
    let (decoded, ds) = run(false);
    assert_eq!(kept, decoded);
    assert_eq!(ks.evictions, 0, "{ks:?}");
    assert_eq!(ks.tiles_filled, 8);
    assert!(ds.evictions > 100, "{ds:?}");
    assert!(ks.peak_resident_bytes <= ks.budget_bytes && ds.peak_resident_bytes <= ds.budget_bytes);
}

#[test]
fn a_dds_lacking_mips_or_a_loader_not_keeping_blocks_gets_texel_pages() {
    let path = temp("no-mips-bc7.dds");
    random_blocks_file(&path, D::BC7_UNorm, (300, 300), 1, 5);
    let c = cache(true, 64);
    let tex = c.texture_for_path(&path, desc()).unwrap();
    let s = c.tex2d_lod(tex, 0.5, 0.5, 3.0, &SampleOptions::default());
    assert!(s.resident);
    let layout = c.loader().engine().texture_layout(tex).unwrap();
    assert_eq!(layout.blocks, None, "generated levels are texels");
    let src = DdsSource::new(&path);
    src.open().unwrap();
    assert_eq!(src.block_codec(), None);
}

#[test]
fn block_reads_are_checked_before_anything_is_written() {
    let path = temp("reads-bc3.dds");
    let data = random_blocks_file(&path, D::BC3_UNorm, (64, 40), 7, 11);
    let src = DdsSource::new(&path);
    src.open().unwrap();
    assert_eq!(src.block_codec(), Some(BlockCodec::Bc3));
    let region = |level, x, y, width, height| TileRegion {
        level,
        x,
        y,
        width,
        height,
    };
    let mut dest = vec![0u8; 16 * 16 * 10];
    // Level 0 is 16×10 blocks of 16 bytes: a region's rows are the file's.
    assert_eq!(
        src.read_blocks(region(0, 8, 4, 20, 9), &mut dest, 100)
            .unwrap(),
        Readiness::Ready
    );
    for r in 0..3 {
        let file_row = &data[(1 + r) * 16 * 16 + 2 * 16..][..5 * 16];
        assert_eq!(&dest[r * 100..r * 100 + 80], file_row, "row {r}");
    }
    let err = |r, len, rb| src.read_blocks(r, &mut vec![0u8; len], rb).unwrap_err().0;
    assert!(err(region(0, 2, 0, 4, 4), 64, 16).contains("not on a 4×4 block"));
    assert!(err(region(0, 0, 0, 8, 8), 40, 32).contains("too small"));
    assert!(err(region(0, 0, 0, 8, 8), 64, 16).contains("shorter"));
    assert!(err(region(7, 0, 0, 1, 1), 16, 16).contains("levels"));
    assert!(err(region(1, 28, 0, 8, 4), 64, 32).contains("leaves level"));
}

use crate::textures::{full_mip_levels, TileRegion};
