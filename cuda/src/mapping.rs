//! Mapping tile memory into sparse arrays: `cuMemMapArrayAsync` batches of map and unmap
//! operations on one stream.
//!
//! A [`MapBatch`] collects operations (a tile of a level, or a texture's whole mip tail,
//! onto a block of the [`CudaTilePool`](crate::tile_pool::CudaTilePool), or unmapped) and
//! submits them with one driver call. It borrows the textures and the pool, so neither can
//! be dropped (or an arena released) while operations on them wait in the batch. Operations
//! are ordered on the stream: a copy into a tile enqueued after the batch's submission sees
//! the tile mapped; a launch after an unmap reads zeros there.

use crate::ops::{bind, drv};
use crate::sparse::{SparseRegion, SparseTexture};
use crate::tile_pool::TileMemory;
use cudarc::driver::sys;
use cudarc::driver::CudaStream;
use demandtex::error::{Error, Result};
use std::marker::PhantomData;

/// A batch of map / unmap operations (see the module comment).
pub struct MapBatch<'a> {
    infos: Vec<sys::CUarrayMapInfo>,
    device_mask: u32,
    _borrows: PhantomData<&'a SparseTexture>,
}

impl<'a> MapBatch<'a> {
    /// An empty batch for device `ordinal` (the device of the stream it will be submitted
    /// on and of the pool's memory).
    pub fn new(ordinal: u32) -> Result<MapBatch<'a>> {
        if ordinal >= 32 {
            return Err(Error::InvalidArgument(format!(
                "device {ordinal}: sparse mapping supports devices 0..32"
            )));
        }
        Ok(MapBatch {
            infos: Vec::new(),
            device_mask: 1 << ordinal,
            _borrows: PhantomData,
        })
    }

    /// Operations waiting.
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// One operation on `texture`'s region ([`map_info`]).
    fn info(
        &self,
        texture: &SparseTexture,
        region: SparseRegion,
        operation: sys::CUmemOperationType,
        memory: Option<(sys::CUmemGenericAllocationHandle, u64)>,
    ) -> sys::CUarrayMapInfo {
        map_info(
            texture.array().raw(),
            region,
            operation,
            memory,
            self.device_mask,
        )
    }

    /// Map `region` of `texture` onto `memory` (a block of at least the region's bytes).
    pub fn map(
        &mut self,
        texture: &'a SparseTexture,
        region: SparseRegion,
        memory: TileMemory<'a>,
    ) -> Result<()> {
        check_region(texture, &region)?;
        if memory.bytes < region.memory_bytes() {
            return Err(Error::InvalidArgument(format!(
                "mapping {region:?} ({} bytes) onto a block of {} bytes",
                region.memory_bytes(),
                memory.bytes
            )));
        }
        let info = self.info(
            texture,
            region,
            sys::CUmemOperationType::CU_MEM_OPERATION_TYPE_MAP,
            Some((memory.handle, memory.offset)),
        );
        self.infos.push(info);
        Ok(())
    }

    /// Unmap `region` of `texture` (it reads as zeros afterwards).
    pub fn unmap(&mut self, texture: &'a SparseTexture, region: SparseRegion) -> Result<()> {
        check_region(texture, &region)?;
        let info = self.info(
            texture,
            region,
            sys::CUmemOperationType::CU_MEM_OPERATION_TYPE_UNMAP,
            None,
        );
        self.infos.push(info);
        Ok(())
    }

    /// Enqueue every waiting operation on `stream`, in order, and empty the batch; returns
    /// how many were submitted. Each run of operations on the same kind of subresource
    /// (tiles of levels, or mip tails) is one `cuMemMapArrayAsync`: on an H200 (driver
    /// 580) a mip-tail operation in the same call as tile operations was silently not
    /// done. On error the batch is emptied; the runs before the failing one were
    /// submitted.
    pub fn submit(&mut self, stream: &CudaStream) -> Result<usize> {
        let n = self.infos.len();
        if n == 0 {
            return Ok(0);
        }
        let result = bind(stream.context()).and_then(|_| {
            for run in self
                .infos
                .chunk_by_mut(|a, b| a.subresourceType == b.subresourceType)
            {
                let count = u32::try_from(run.len()).map_err(|_| {
                    Error::InvalidArgument(format!("{} map operations in one batch", run.len()))
                })?;
                let list = run.as_mut_ptr();
                // SAFETY: `list` points to `count` fully initialised map infos whose arrays
                // and memory handles are alive (borrowed for 'a by this batch); the driver
                // reads them during the call.
                drv("cuMemMapArrayAsync", || unsafe {
                    sys::cuMemMapArrayAsync(list, count, stream.cu_stream())
                })?;
            }
            Ok(())
        });
        self.infos.clear();
        result.map(|_| n)
    }
}

/// The `CUarrayMapInfo` of one map (`memory` = the tile pool allocation and the byte offset
/// in it) or unmap (`memory` = `None`: null handle, offset 0) of `region` of the sparse
/// mipmapped array `mipmap`, for the devices of `device_mask`. A tile's offsets and extents
/// are in texels (elements) of its level, as `cuMemMapArrayAsync` takes them; the mip tail
/// is mapped from its offset 0 with its whole size.
///
/// Built field by field: the struct holds a `CUmemOperationType` enum, which has no zero
/// value, so `std::mem::zeroed` of it aborts the process (a non-unwinding panic).
pub fn map_info(
    mipmap: sys::CUmipmappedArray,
    region: SparseRegion,
    operation: sys::CUmemOperationType,
    memory: Option<(sys::CUmemGenericAllocationHandle, u64)>,
    device_mask: u32,
) -> sys::CUarrayMapInfo {
    use sys::CUarraySparseSubresourceType as Sub;
    // The sparse-level member spans the whole union: writing it first leaves no byte of
    // the union unset when the (smaller) mip-tail member is written over it.
    let mut subresource = sys::CUarrayMapInfo_st__bindgen_ty_2 {
        sparseLevel: sys::CUarrayMapInfo_st__bindgen_ty_2__bindgen_ty_1 {
            level: 0,
            layer: 0,
            offsetX: 0,
            offsetY: 0,
            offsetZ: 0,
            extentWidth: 0,
            extentHeight: 0,
            extentDepth: 0,
        },
    };
    let subresource_type = match region {
        SparseRegion::Tile {
            level,
            x,
            y,
            width,
            height,
        } => {
            subresource.sparseLevel = sys::CUarrayMapInfo_st__bindgen_ty_2__bindgen_ty_1 {
                level,
                layer: 0,
                offsetX: x,
                offsetY: y,
                offsetZ: 0,
                extentWidth: width,
                extentHeight: height,
                extentDepth: 1,
            };
            Sub::CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL
        }
        SparseRegion::MipTail { bytes } => {
            subresource.miptail = sys::CUarrayMapInfo_st__bindgen_ty_2__bindgen_ty_2 {
                layer: 0,
                offset: 0,
                size: bytes,
            };
            Sub::CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL
        }
    };
    let (handle, offset) = memory.unwrap_or((0, 0));
    sys::CUarrayMapInfo {
        resourceType: sys::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY,
        resource: sys::CUarrayMapInfo_st__bindgen_ty_1 { mipmap },
        subresourceType: subresource_type,
        subresource,
        memOperationType: operation,
        memHandleType: sys::CUmemHandleType::CU_MEM_HANDLE_TYPE_GENERIC,
        memHandle: sys::CUarrayMapInfo_st__bindgen_ty_3 { memHandle: handle },
        offset,
        deviceBitMask: device_mask,
        flags: 0,
        reserved: [0; 2],
    }
}

/// A region of a texture's array: a whole, tile-aligned tile of a sparse level, or the mip
/// tail with its whole size.
fn check_region(texture: &SparseTexture, region: &SparseRegion) -> Result<()> {
    let props = texture.properties();
    let ok = match *region {
        SparseRegion::Tile {
            level,
            x,
            y,
            width,
            height,
        } => match texture.array().level_size(level) {
            Some((w, h)) => {
                level < props.mip_tail_first_level
                    && x % props.tile_width == 0
                    && y % props.tile_height == 0
                    && width >= 1
                    && height >= 1
                    && (width == props.tile_width || x + width == w)
                    && (height == props.tile_height || y + height == h)
                    && x as u64 + width as u64 <= w as u64
                    && y as u64 + height as u64 <= h as u64
            }
            None => false,
        },
        SparseRegion::MipTail { bytes } => bytes > 0 && bytes == props.mip_tail_bytes,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{region:?} is not a sparse tile or the mip tail of {:?}",
            texture.array()
        )))
    }
}

impl std::fmt::Debug for MapBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapBatch")
            .field("operations", &self.infos.len())
            .field("device_mask", &self.device_mask)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_infos_follow_cu_mem_map_array_async() {
        use sys::CUarraySparseSubresourceType as Sub;
        use sys::CUmemOperationType as Op;
        // A fake, never dereferenced handle.
        let mipmap = 0x1000 as sys::CUmipmappedArray;
        let tile = SparseRegion::Tile {
            level: 1,
            x: 384,
            y: 128,
            width: 116,
            height: 22,
        };
        let m = map_info(
            mipmap,
            tile,
            Op::CU_MEM_OPERATION_TYPE_MAP,
            Some((77, 3 << 16)),
            4,
        );
        assert_eq!(
            m.resourceType,
            sys::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
        );
        assert_eq!(
            m.subresourceType,
            Sub::CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL
        );
        assert_eq!(m.memOperationType, Op::CU_MEM_OPERATION_TYPE_MAP);
        assert_eq!(
            m.memHandleType,
            sys::CUmemHandleType::CU_MEM_HANDLE_TYPE_GENERIC
        );
        assert_eq!(
            (m.offset, m.deviceBitMask, m.flags, m.reserved),
            (3 << 16, 4, 0, [0; 2])
        );
        // SAFETY: reading the union members this function wrote (all plain integers).
        unsafe {
            assert_eq!(m.resource.mipmap, mipmap);
            assert_eq!(m.memHandle.memHandle, 77);
            let l = m.subresource.sparseLevel;
            assert_eq!(
                (l.level, l.layer, l.offsetX, l.offsetY, l.offsetZ),
                (1, 0, 384, 128, 0)
            );
            assert_eq!((l.extentWidth, l.extentHeight, l.extentDepth), (116, 22, 1));
        }
        let u = map_info(
            mipmap,
            SparseRegion::MipTail { bytes: 2 << 16 },
            Op::CU_MEM_OPERATION_TYPE_UNMAP,
            None,
            1,
        );
        assert_eq!(
            u.subresourceType,
            Sub::CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL
        );
        assert_eq!(u.memOperationType, Op::CU_MEM_OPERATION_TYPE_UNMAP);
        assert_eq!((u.offset, u.deviceBitMask), (0, 1));
        // SAFETY: as above.
        unsafe {
            assert_eq!(u.memHandle.memHandle, 0, "an unmap names no memory");
            let t = u.subresource.miptail;
            assert_eq!((t.layer, t.offset, t.size), (0, 0, 2 << 16));
        }
    }
}
