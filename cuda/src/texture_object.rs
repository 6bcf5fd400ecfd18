//! Texture objects (`cuTexObjectCreate`) over a texture's mipmapped array, set up as the
//! device headers assume (include/demandtex/device/texture.cuh): normalised coordinates,
//! the texture's address modes (border colour transparent black), its filter within a level,
//! a linear mip filter (the device passes exact integer levels where a point mip filter
//! wants one level), max anisotropy 1 (the device probes anisotropy itself), level clamps
//! 0 and `num_levels - 1`, integer formats read as normalised floats, no sRGB; trilinear
//! blends exact (`CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`, as OptiX Toolkit does). An
//! array of [`TexelStorage::Words`] is read as integers, point filtered.

use crate::array::{MipmappedArray, TexelStorage};
use crate::ops::{bind, drv};
use cudarc::driver::sys;
use demandtex::error::{Error, Result};
use demandtex::textures::{AddressMode, FilterMode, TextureDesc};
use std::sync::Arc;

/// The CUDA address mode of an engine address mode (same numbering). `FromFile` is
/// resolved when the texture opens (the engine publishes resolved modes); unresolved, it
/// reads as black, its fallback.
fn address_mode(m: AddressMode) -> sys::CUaddress_mode {
    match m {
        AddressMode::Wrap => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
        AddressMode::Clamp => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        AddressMode::Mirror => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
        AddressMode::Border | AddressMode::FromFile => {
            sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER
        }
    }
}

/// The CUDA filter mode of an engine filter mode.
fn filter_mode(m: FilterMode) -> sys::CUfilter_mode {
    match m {
        FilterMode::Point => sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT,
        FilterMode::Linear => sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
    }
}

/// The texture descriptor the device headers assume for `desc` over `num_levels` levels.
pub fn texture_desc(desc: &TextureDesc, num_levels: u32) -> sys::CUDA_TEXTURE_DESC {
    // SAFETY: all-zero is a valid value of this plain C struct (reserved fields must be 0).
    let mut td: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
    td.addressMode = [
        address_mode(desc.address[0]),
        address_mode(desc.address[1]),
        sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
    ];
    td.filterMode = filter_mode(desc.filter);
    // Exact trilinear blends (OptiX Toolkit's default too): the device asks for fractional
    // levels of detail and weights the two levels' footprints by the same fraction; the
    // "trilinear optimisation" may filter one level alone near integer levels.
    td.flags = sys::CU_TRSF_NORMALIZED_COORDINATES | sys::CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
    td.maxAnisotropy = 1;
    td.mipmapFilterMode = sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR;
    td.mipmapLevelBias = 0.0;
    td.minMipmapLevelClamp = 0.0;
    td.maxMipmapLevelClamp = num_levels.saturating_sub(1) as f32;
    td.borderColor = [0.0; 4];
    td
}

/// Make `td` read words back unchanged ([`TexelStorage::Words`]): integers, point filtered
/// within and between levels.
pub fn words_desc(td: &mut sys::CUDA_TEXTURE_DESC) {
    td.flags |= sys::CU_TRSF_READ_AS_INTEGER;
    td.filterMode = sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT;
    td.mipmapFilterMode = sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT;
}

/// The resource descriptor of a texture object over the mipmapped array `raw`.
pub fn resource_desc(raw: sys::CUmipmappedArray) -> sys::CUDA_RESOURCE_DESC {
    // SAFETY: all-zero is a valid value of this C struct: `resType`'s 0 is
    // CU_RESOURCE_TYPE_ARRAY (no field is an enum without a zero value; `res` is a union);
    // the union member for mipmapped arrays is set below and `flags` must be 0.
    let mut rd: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
    rd.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    rd.res.mipmap.hMipmappedArray = raw;
    rd
}

/// A texture object; destroyed on drop. Holds its array, which therefore outlives it.
pub struct TextureObject {
    raw: sys::CUtexObject,
    array: Arc<MipmappedArray>,
}

// SAFETY: a texture object is a plain 64-bit driver handle usable from any thread with the
// context bound; it is only read after creation.
unsafe impl Send for TextureObject {}
// SAFETY: as above.
unsafe impl Sync for TextureObject {}

impl TextureObject {
    /// A texture object sampling the first `num_levels` levels of `array` with `desc`.
    pub fn new(array: &Arc<MipmappedArray>, desc: &TextureDesc, num_levels: u32) -> Result<Self> {
        if num_levels == 0 || num_levels > array.num_levels() {
            return Err(Error::InvalidArgument(format!(
                "a texture object of {num_levels} levels over an array of {}",
                array.num_levels()
            )));
        }
        let mut td = texture_desc(desc, num_levels);
        if array.storage() == TexelStorage::Words {
            words_desc(&mut td);
        }
        let rd = resource_desc(array.raw());
        bind(array.context())?;
        let mut raw: sys::CUtexObject = 0;
        // SAFETY: the descriptors are fully initialised and the array is alive (and kept
        // alive by the object); no view descriptor. The driver writes one handle.
        drv("cuTexObjectCreate", || unsafe {
            sys::cuTexObjectCreate(&mut raw, &rd, &td, std::ptr::null())
        })?;
        Ok(TextureObject {
            raw,
            array: array.clone(),
        })
    }

    /// The handle, for `DtexTextureSampler::texture_object`.
    pub fn raw(&self) -> u64 {
        self.raw
    }

    /// The array it samples.
    pub fn array(&self) -> &Arc<MipmappedArray> {
        &self.array
    }
}

impl Drop for TextureObject {
    fn drop(&mut self) {
        let raw = self.raw;
        let r = bind(self.array.context()).and_then(|_| {
            // SAFETY: `raw` is destroyed once, here; no launch may sample it any more (the
            // owner drops it only after its last launch's fence).
            drv("cuTexObjectDestroy", || unsafe {
                sys::cuTexObjectDestroy(raw)
            })
        });
        if let Err(e) = r {
            tracing::warn!("destroying a CUDA texture object: {e}");
        }
    }
}

impl std::fmt::Debug for TextureObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextureObject")
            .field("raw", &self.raw)
            .field("array", &self.array)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use demandtex::textures::MipFilter;

    #[test]
    fn the_resource_is_the_mipmapped_array() {
        // A fake, never dereferenced handle.
        let raw = 0x1000 as sys::CUmipmappedArray;
        let rd = resource_desc(raw);
        assert_eq!(
            rd.resType,
            sys::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
        );
        assert_eq!(rd.flags, 0);
        // SAFETY: reading the union member `resource_desc` wrote.
        assert_eq!(unsafe { rd.res.mipmap.hMipmappedArray }, raw);
    }

    #[test]
    fn descriptors_follow_the_device_headers() {
        let desc = TextureDesc {
            address: [AddressMode::Mirror, AddressMode::Border],
            filter: FilterMode::Point,
            mip_filter: MipFilter::Point,
            max_anisotropy: 8,
            ..TextureDesc::default()
        };
        let td = texture_desc(&desc, 11);
        assert_eq!(
            td.addressMode[0],
            sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR
        );
        assert_eq!(
            td.addressMode[1],
            sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER
        );
        assert_eq!(td.filterMode, sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT);
        // The mip filter stays linear and anisotropy 1: the device does both in software.
        assert_eq!(
            td.mipmapFilterMode,
            sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR
        );
        assert_eq!(td.maxAnisotropy, 1);
        assert_eq!(
            td.flags,
            sys::CU_TRSF_NORMALIZED_COORDINATES | sys::CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION
        );
        assert_eq!(
            td.flags & sys::CU_TRSF_READ_AS_INTEGER,
            0,
            "normalised reads"
        );
        assert_eq!(
            (td.minMipmapLevelClamp, td.maxMipmapLevelClamp),
            (0.0, 10.0)
        );
        assert_eq!(td.borderColor, [0.0; 4]);
        // Engine codes equal CUDA's.
        for m in [
            AddressMode::Wrap,
            AddressMode::Clamp,
            AddressMode::Mirror,
            AddressMode::Border,
        ] {
            assert_eq!(address_mode(m) as u32, m as u32);
        }
    }

    #[test]
    fn words_are_read_as_integers_point_filtered() {
        let mut td = texture_desc(&TextureDesc::default(), 3);
        words_desc(&mut td);
        assert_eq!(
            td.flags,
            sys::CU_TRSF_NORMALIZED_COORDINATES
                | sys::CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION
                | sys::CU_TRSF_READ_AS_INTEGER
        );
        assert_eq!(td.filterMode, sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT);
        assert_eq!(
            td.mipmapFilterMode,
            sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT
        );
        assert_eq!(td.maxMipmapLevelClamp, 2.0);
    }
}
