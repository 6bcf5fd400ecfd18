//! Sparse textures: a texture's pages as regions of a CUDA sparse mipmapped array.
//!
//! The engine cuts every level into 64 KiB tiles of the shapes CUDA sparse arrays use
//! ([`demandtex::textures::TexelFormat::tile_extent`]) and packs the levels smaller than one
//! tile in either dimension into one mip-tail page ([`TextureLayout`]). A sparse array has
//! the same two kinds of subresource: tiles of the levels that span at least one tile in
//! every dimension, and one mip tail holding the rest. [`check_sparse_layout`] checks that the
//! device's [`SparseProperties`] agree with the engine's layout, so each tile page maps to
//! exactly one array tile and the mip-tail page to the array's mip tail
//! ([`tile_region`], [`page_region`]). These are pure functions, tested without a GPU.
//!
//! With the `cuda` feature, `SparseTexture` creates the array and reads its properties.

use demandtex::error::{Error, Result};
use demandtex::ids::TILE_BYTES;
use demandtex::textures::{PageContent, TextureLayout};

/// What the driver reports for a sparse mipmapped array
/// (`CUDA_ARRAY_SPARSE_PROPERTIES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseProperties {
    /// Tile width in texels.
    pub tile_width: u32,
    /// Tile height in texels.
    pub tile_height: u32,
    /// First level of the mip tail (may exceed the array's levels: no tail).
    pub mip_tail_first_level: u32,
    /// Bytes of the mip tail (a multiple of the tile size; 0 without a tail).
    pub mip_tail_bytes: u64,
}

impl SparseProperties {
    /// The properties with the tile extent in texels: a BC array's extent as a driver
    /// reporting it in blocks gives it (a quarter of the engine's tile on each side, the
    /// tile being 64 KiB of blocks) is scaled to texels; any other is taken as texels, as
    /// OptiX Toolkit takes it.
    pub fn in_texels(self, layout: &TextureLayout) -> SparseProperties {
        let in_blocks = layout.blocks.is_some()
            && (self.tile_width * 4, self.tile_height * 4)
                == (layout.tile_width, layout.tile_height);
        if in_blocks {
            SparseProperties {
                tile_width: self.tile_width * 4,
                tile_height: self.tile_height * 4,
                ..self
            }
        } else {
            self
        }
    }
}

/// Where one page of a texture lives in its array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SparseRegion {
    /// One tile of a tiled level: its texel offset and extent within the level (the
    /// extent is clipped at the level's right and bottom edges).
    Tile {
        /// Mip level.
        level: u32,
        /// Left texel column (a multiple of the tile width).
        x: u32,
        /// Top texel row (a multiple of the tile height).
        y: u32,
        /// Columns.
        width: u32,
        /// Rows.
        height: u32,
    },
    /// The whole mip tail: `bytes` of tile memory (a multiple of [`TILE_BYTES`]).
    MipTail {
        /// Bytes to map.
        bytes: u64,
    },
}

impl SparseRegion {
    /// Bytes of tile memory the region needs mapped.
    pub fn memory_bytes(&self) -> u64 {
        match *self {
            SparseRegion::Tile { .. } => TILE_BYTES as u64,
            SparseRegion::MipTail { bytes } => bytes,
        }
    }
}

/// Check that a sparse array with `props` holds `layout` page for page: the same tile shape
/// (64 KiB of texels) and the same first mip-tail level, a tail that is whole tiles and
/// holds the engine's packed tail. The array may have more levels than the layout (the
/// extra ones are never mapped or sampled).
///
/// Errors: [`Error::Unsupported`] saying what differs (the texture can then use a dense
/// array instead).
pub fn check_sparse_layout(layout: &TextureLayout, props: &SparseProperties) -> Result<()> {
    let format = match layout.blocks {
        Some(codec) => codec.name(),
        None => layout.format.to_string(),
    };
    if (props.tile_width, props.tile_height) != (layout.tile_width, layout.tile_height) {
        return Err(Error::Unsupported(format!(
            "the device's sparse tiles for {format} are {}×{} texels, the engine's pages {}×{}",
            props.tile_width, props.tile_height, layout.tile_width, layout.tile_height
        )));
    }
    let tile_bytes = layout.region_bytes(props.tile_width, props.tile_height);
    if tile_bytes != TILE_BYTES as u64 {
        return Err(Error::Unsupported(format!(
            "sparse tiles of {tile_bytes} bytes for {format} ({TILE_BYTES} expected)"
        )));
    }
    let device_first = props.mip_tail_first_level.min(layout.num_levels());
    if device_first != layout.mip_tail_first_level {
        return Err(Error::Unsupported(format!(
            "a {}×{} {format} texture's mip tail starts at level {device_first} on the device and at level {} in the engine",
            layout.width, layout.height, layout.mip_tail_first_level
        )));
    }
    if props.mip_tail_bytes % TILE_BYTES as u64 != 0 {
        return Err(Error::Unsupported(format!(
            "a sparse mip tail of {} bytes (not whole {TILE_BYTES}-byte tiles)",
            props.mip_tail_bytes
        )));
    }
    if layout.mip_tail_bytes > 0 && props.mip_tail_bytes < layout.mip_tail_bytes {
        return Err(Error::Unsupported(format!(
            "the device's mip tail has {} bytes, the engine's {}",
            props.mip_tail_bytes, layout.mip_tail_bytes
        )));
    }
    Ok(())
}

/// The array region of tile (`tile_x`, `tile_y`) of tiled level `level`.
///
/// Errors: [`Error::InvalidArgument`] for a level in the mip tail or a tile past the
/// level's edge.
pub fn tile_region(
    layout: &TextureLayout,
    level: u32,
    tile_x: u32,
    tile_y: u32,
) -> Result<SparseRegion> {
    let tiled = level < layout.mip_tail_first_level;
    let l = layout.levels.get(level as usize).filter(|_| tiled);
    match l {
        Some(l) if tile_x < l.tiles_x && tile_y < l.tiles_y => {
            let r = layout.tile_region(level, tile_x, tile_y);
            Ok(SparseRegion::Tile {
                level,
                x: r.x,
                y: r.y,
                width: r.width,
                height: r.height,
            })
        }
        _ => Err(Error::InvalidArgument(format!(
            "tile ({tile_x}, {tile_y}) of level {level} is not a tile of a {}×{} texture with {} tiled levels",
            layout.width, layout.height, layout.mip_tail_first_level
        ))),
    }
}

/// The array region of the page at `offset` within the texture's page range: a tile, or
/// the mip tail (`props.mip_tail_bytes` to map). `None` past the range, and for the
/// mip-tail page of a texture without a tail.
pub fn page_region(
    layout: &TextureLayout,
    props: &SparseProperties,
    offset: u32,
) -> Option<SparseRegion> {
    match layout.page_content(offset)? {
        PageContent::MipTail => (layout.mip_tail_bytes > 0).then_some(SparseRegion::MipTail {
            bytes: props.mip_tail_bytes,
        }),
        PageContent::Tile {
            level,
            tile_x,
            tile_y,
        } => tile_region(layout, level, tile_x, tile_y).ok(),
    }
}

pub use gpu::SparseTexture;

mod gpu {
    use super::{check_sparse_layout, page_region, SparseProperties, SparseRegion};
    use crate::array::{MipmappedArray, TexelStorage};
    use crate::ops::{bind, drv};
    use cudarc::driver::sys;
    use cudarc::driver::CudaContext;
    use demandtex::error::Result;
    use demandtex::textures::{full_mip_levels, TextureLayout};
    use std::sync::Arc;

    /// A texture's sparse mipmapped array: no memory until tiles or the mip tail are
    /// mapped ([`crate::mapping::MapBatch`]), then filled through the copy
    /// path of [`crate::staging::StagingRing`].
    #[derive(Debug)]
    pub struct SparseTexture {
        array: Arc<MipmappedArray>,
        layout: TextureLayout,
        properties: SparseProperties,
    }

    impl SparseTexture {
        /// Create the sparse array of `layout` in `ctx` and check that its sparse
        /// properties match the layout ([`check_sparse_layout`]).
        ///
        /// The array gets the full mip chain of its size even when the layout has fewer
        /// levels (OptiX Toolkit's workaround for a driver read past the array when the
        /// levels stop before the mip tail would start); the texture object clamps
        /// sampling to the layout's levels, and nothing past them is ever mapped.
        ///
        /// Errors: [`crate::Error::Unsupported`] when the device's tiles or tail differ
        /// from the layout's (use [`crate::dense::DenseTexture`]), or the
        /// driver's error naming the call.
        pub fn new(ctx: &Arc<CudaContext>, layout: &TextureLayout) -> Result<SparseTexture> {
            Self::new_stored(ctx, layout, TexelStorage::of(layout, false))
        }

        /// [`Self::new`] with the texels stored as `storage`.
        pub fn new_stored(
            ctx: &Arc<CudaContext>,
            layout: &TextureLayout,
            storage: TexelStorage,
        ) -> Result<SparseTexture> {
            let levels = full_mip_levels(layout.width, layout.height);
            let array = MipmappedArray::new(
                ctx,
                layout.width,
                layout.height,
                levels,
                layout.format,
                storage,
                true,
            )?;
            bind(ctx)?;
            // SAFETY: an all-zero properties struct is valid plain data for the driver to
            // overwrite.
            let mut p: sys::CUDA_ARRAY_SPARSE_PROPERTIES = unsafe { std::mem::zeroed() };
            let raw = array.raw();
            // SAFETY: `raw` is a live sparse mipmapped array; the driver writes one struct.
            drv("cuMipmappedArrayGetSparseProperties", || unsafe {
                sys::cuMipmappedArrayGetSparseProperties(&mut p, raw)
            })?;
            let properties = SparseProperties {
                tile_width: p.tileExtent.width,
                tile_height: p.tileExtent.height,
                mip_tail_first_level: p.miptailFirstLevel,
                mip_tail_bytes: p.miptailSize,
            }
            .in_texels(layout);
            check_sparse_layout(layout, &properties)?;
            Ok(SparseTexture {
                array,
                layout: layout.clone(),
                properties,
            })
        }

        /// The array (shared with the texture objects over it).
        pub fn array(&self) -> &Arc<MipmappedArray> {
            &self.array
        }

        /// The engine's layout of the texture.
        pub fn layout(&self) -> &TextureLayout {
            &self.layout
        }

        /// What the driver reported.
        pub fn properties(&self) -> &SparseProperties {
            &self.properties
        }

        /// The array region of the page at `offset` within the texture's page range
        /// ([`page_region`]).
        pub fn page_region(&self, offset: u32) -> Option<SparseRegion> {
            page_region(&self.layout, &self.properties, offset)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use demandtex::textures::{full_mip_levels, TexelFormat, TexelType};

    /// The properties a driver following the documented rules reports: the standard tile
    /// shape, the tail at the first level smaller than a tile in either dimension (over the
    /// full chain), and whole tiles of tail.
    fn documented(layout: &TextureLayout) -> SparseProperties {
        let (tw, th) = layout.format.tile_extent();
        let full = full_mip_levels(layout.width, layout.height);
        let first = (0..full)
            .find(|&l| (layout.width >> l).max(1) < tw || (layout.height >> l).max(1) < th)
            .unwrap_or(full);
        let bytes: u64 = (first..full)
            .map(|l| {
                ((layout.width >> l).max(1) as u64)
                    * ((layout.height >> l).max(1) as u64)
                    * layout.format.texel_bytes() as u64
            })
            .sum();
        SparseProperties {
            tile_width: tw,
            tile_height: th,
            mip_tail_first_level: first,
            mip_tail_bytes: bytes.div_ceil(TILE_BYTES as u64) * TILE_BYTES as u64,
        }
    }

    fn layouts() -> Vec<TextureLayout> {
        let f = |t, c| TexelFormat::new(t, c).unwrap();
        [
            (1000, 300, TexelFormat::RGBA8),
            (4096, 4096, TexelFormat::RGBA32F),
            (257, 129, f(TexelType::U8, 1)),
            (4097, 33, f(TexelType::F16, 2)),
            (65536, 1, TexelFormat::RGBA8),
            (128, 128, TexelFormat::RGBA8),
            (512, 512, f(TexelType::U16, 4)),
        ]
        .into_iter()
        .flat_map(|(w, h, fmt)| {
            let full = full_mip_levels(w, h);
            [full, 1, full.div_ceil(2)]
                .into_iter()
                .map(move |n| TextureLayout::new(w, h, n, fmt).unwrap())
        })
        .collect()
    }

    #[test]
    fn the_documented_device_layout_matches_the_engine_for_every_format() {
        for layout in layouts() {
            let props = documented(&layout);
            check_sparse_layout(&layout, &props).unwrap_or_else(|e| panic!("{layout:?}: {e}"));
        }
    }

    #[test]
    fn a_different_tile_shape_or_tail_is_refused_with_the_reason() {
        let layout = TextureLayout::new(1000, 300, 10, TexelFormat::RGBA8).unwrap();
        let good = documented(&layout);
        let e = check_sparse_layout(
            &layout,
            &SparseProperties {
                tile_width: 64,
                tile_height: 64,
                ..good
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("64×64"), "{e}");
        let e = check_sparse_layout(
            &layout,
            &SparseProperties {
                mip_tail_first_level: 1,
                ..good
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("level 1 on the device"), "{e}");
        let e = check_sparse_layout(
            &layout,
            &SparseProperties {
                mip_tail_bytes: good.mip_tail_bytes - 1,
                ..good
            },
        )
        .unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
        let e = check_sparse_layout(
            &layout,
            &SparseProperties {
                mip_tail_bytes: 0,
                ..good
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("0 bytes"), "{e}");
    }

    #[test]
    fn every_page_maps_to_one_aligned_tile_or_the_tail() {
        for layout in layouts() {
            let props = documented(&layout);
            let mut seen = std::collections::HashSet::new();
            for offset in 0..layout.num_pages.min(5000) {
                let Some(region) = page_region(&layout, &props, offset) else {
                    assert_eq!(offset, 0, "only the page of an empty tail has no region");
                    assert_eq!(layout.mip_tail_bytes, 0);
                    continue;
                };
                assert!(seen.insert(region), "{region:?} twice");
                match region {
                    SparseRegion::Tile {
                        level,
                        x,
                        y,
                        width,
                        height,
                    } => {
                        let l = layout.levels[level as usize];
                        assert_eq!(x % layout.tile_width, 0);
                        assert_eq!(y % layout.tile_height, 0);
                        assert!(width >= 1 && width <= layout.tile_width && x + width <= l.width);
                        assert!(height >= 1 && height <= layout.tile_height);
                        assert!(y + height <= l.height);
                        // A clipped extent only at the level's right or bottom edge.
                        assert!(width == layout.tile_width || x + width == l.width);
                        assert!(height == layout.tile_height || y + height == l.height);
                        assert_eq!(region.memory_bytes(), TILE_BYTES as u64);
                    }
                    SparseRegion::MipTail { bytes } => {
                        assert_eq!(offset, 0);
                        assert_eq!(bytes, props.mip_tail_bytes);
                        assert!(bytes >= layout.mip_tail_bytes);
                    }
                }
            }
            assert_eq!(page_region(&layout, &props, layout.num_pages), None);
        }
    }

    #[test]
    fn tiles_outside_the_tiled_levels_are_errors() {
        let layout = TextureLayout::new(1000, 300, 10, TexelFormat::RGBA8).unwrap();
        assert_eq!(
            tile_region(&layout, 0, 7, 2).unwrap(),
            SparseRegion::Tile {
                level: 0,
                x: 896,
                y: 256,
                width: 104,
                height: 44
            }
        );
        assert!(tile_region(&layout, 0, 8, 0).is_err());
        assert!(tile_region(&layout, 0, 0, 3).is_err());
        assert!(
            tile_region(&layout, 2, 0, 0).is_err(),
            "level 2 is in the tail"
        );
        assert!(tile_region(&layout, 99, 0, 0).is_err());
    }

    /// A BC array's documented properties (64 KiB tiles of 8- or 16-byte blocks; the tail
    /// at the first level smaller than a tile, in whole blocks), whether the driver gives
    /// the tile extent in texels or in blocks, match the engine's layout of blocks.
    #[test]
    fn bc_arrays_hold_the_engines_layout_of_blocks() {
        use demandtex::textures::BLOCK_CODECS;
        for codec in BLOCK_CODECS {
            for (w, h) in [(1037, 601), (4096, 4096), (512, 512), (300, 5000), (3, 3)] {
                let full = full_mip_levels(w, h);
                let layout = TextureLayout::with_blocks(w, h, full, codec).unwrap();
                let (tw, th) = codec.tile_extent();
                let first = (0..full)
                    .find(|&l| (w >> l).max(1) < tw || (h >> l).max(1) < th)
                    .unwrap_or(full);
                let tail: u64 = (first..full)
                    .map(|l| codec.region_bytes((w >> l).max(1), (h >> l).max(1)))
                    .sum();
                let texels = SparseProperties {
                    tile_width: tw,
                    tile_height: th,
                    mip_tail_first_level: first,
                    mip_tail_bytes: tail.div_ceil(TILE_BYTES as u64) * TILE_BYTES as u64,
                };
                let blocks = SparseProperties {
                    tile_width: tw / 4,
                    tile_height: th / 4,
                    ..texels
                };
                assert_eq!(blocks.in_texels(&layout), texels);
                assert_eq!(texels.in_texels(&layout), texels);
                check_sparse_layout(&layout, &texels.in_texels(&layout))
                    .unwrap_or_else(|e| panic!("{codec:?} {w}×{h}: {e}"));
                assert!(check_sparse_layout(&layout, &blocks).is_err(), "not scaled");
            }
        }
        // A texel layout's extent is never scaled.
        let layout = TextureLayout::new(1000, 300, 10, TexelFormat::RGBA8).unwrap();
        let small = SparseProperties {
            tile_width: 32,
            tile_height: 32,
            ..documented(&layout)
        };
        assert_eq!(small.in_texels(&layout), small);
    }
}
