//! The structs the device code reads, defined once in the engine (`#[repr(C)]`) and
//! exported verbatim to C, C++ and CUDA as `DtexDeviceContext`, `DtexPageMapping`,
//! `DtexTextureSampler` and `DtexSamplerLevel`, with their layouts asserted on both sides:
//! here by `const` asserts with the numbers the device code relies on, in the header by
//! `DTEX_STATIC_ASSERT`s generated from [`LAYOUTS`] (so C's layout must equal Rust's).

pub use engine::paging::{DeviceContext, PageMapping};
pub use engine::textures::sampler::{SamplerLevel, TextureSampler};

use std::mem::{align_of, offset_of, size_of};

/// Mip levels in a `DtexTextureSampler` (65536 down to 1).
pub const DTEX_MAX_LEVELS: u32 = 17;
/// `DtexDeviceContext.flags` bit: samplers set reference bits for resident pages too (set
/// while eviction is active).
pub const DTEX_CONTEXT_FLAG_REQUEST_IF_RESIDENT: u32 = 1;
/// `DtexDeviceContext.flags` bit: samplers count the misses whose request stood and the
/// requests they rejected in `array_lengths[DTEX_ARRAY_LENGTH_STANDING]` and
/// `[DTEX_ARRAY_LENGTH_REJECTED]` (`array_lengths` then holds `DTEX_ARRAY_LENGTHS` words).
pub const DTEX_CONTEXT_FLAG_COUNT_REQUESTS: u32 = 2;
/// `DtexTextureSampler.flags` bit: the texture failed; every lookup returns its fallback.
pub const DTEX_SAMPLER_FLAG_FAILED: u32 = 1;
/// `DtexDeviceContext.array_lengths` index of the request count.
pub const DTEX_ARRAY_LENGTH_REQUESTS: u32 = 0;
/// `DtexDeviceContext.array_lengths` index of the stale-page count.
pub const DTEX_ARRAY_LENGTH_STALE: u32 = 1;
/// `DtexDeviceContext.array_lengths` index of the count of misses whose request stood (not
/// rejected): the `total` of request rejection's `RP = 1 - unique / total`.
pub const DTEX_ARRAY_LENGTH_STANDING: u32 = 2;
/// `DtexDeviceContext.array_lengths` index of the count of rejected requests.
pub const DTEX_ARRAY_LENGTH_REJECTED: u32 = 3;
/// Words of `DtexDeviceContext.array_lengths` when `DTEX_CONTEXT_FLAG_COUNT_REQUESTS` is set.
pub const DTEX_ARRAY_LENGTHS: u32 = 4;

/// Bytes of a full tile page (`tile_width * tile_height * texel_bytes` of a
/// `DtexTextureSampler`): every tiled level of a texture on a CUDA loader is cut into tiles
/// of exactly this many bytes. On a CPU loader or cache, a texture whose file has smaller
/// power-of-two tiles gets tiles of that size, 4096 bytes or more (`full_pages` 0, the
/// default).
pub const DTEX_TILE_BYTES: u32 = 65536_u32;
/// `DtexDeviceContext.lru_table` age (4 bits per page): the oldest age of an evictable page
/// (0 = used in the last launch).
pub const DTEX_LRU_MAX_AGE: u32 = 14_u32;
/// `DtexDeviceContext.lru_table` age that marks a page as never evictable.
pub const DTEX_LRU_NON_EVICTABLE: u32 = 15_u32;
/// Base-colour page entry of a texture that has no base colour (`0xFFFFFFFFFFFFFFFF`: four
/// NaN halfs). A base-colour entry is otherwise four IEEE halfs, red in the low 16 bits.
pub const DTEX_NO_BASE_COLOR: u64 = 0xFFFF_FFFF_FFFF_FFFF_u64;
/// Base-colour page entry of a hole of a UDIM grid (`0x7C017C017C017C01`: four signalling-NaN
/// halfs, never produced by encoding a real colour); the hole's sampler entry is 0.
pub const DTEX_HOLE_BASE_COLOR: u64 = 0x7C01_7C01_7C01_7C01_u64;
/// Red component of the default fallback colour, opaque magenta: a texture's default
/// `fallback_color` (what it samples as once failed) and what device lookups of an unknown
/// texture or UDIM id return. The four components are plain (double) literals in C, each
/// exact as a `float`.
pub const DTEX_DEFAULT_FALLBACK_COLOR_R: f32 = 1.0;
/// Green component of the default fallback colour (see `DTEX_DEFAULT_FALLBACK_COLOR_R`).
pub const DTEX_DEFAULT_FALLBACK_COLOR_G: f32 = 0.0;
/// Blue component of the default fallback colour (see `DTEX_DEFAULT_FALLBACK_COLOR_R`).
pub const DTEX_DEFAULT_FALLBACK_COLOR_B: f32 = 1.0;
/// Alpha component of the default fallback colour (see `DTEX_DEFAULT_FALLBACK_COLOR_R`).
pub const DTEX_DEFAULT_FALLBACK_COLOR_A: f32 = 1.0;
/// UDIM entry (the 64-bit page-table entry of a UDIM id's resource page): mask of a texture
/// id field (24 bits, `0xFFFFFF`) after its shift.
pub const DTEX_UDIM_ID_MASK: u32 = 0xFF_FFFF_u32;
/// UDIM entry: bit position of the first tile's texture id (tile (col, row) is
/// `first + row * width + col`).
pub const DTEX_UDIM_FIRST_SHIFT: u32 = 0_u32;
/// UDIM entry: bit position of the base texture id (`DTEX_UDIM_NO_BASE`: none).
pub const DTEX_UDIM_BASE_SHIFT: u32 = 24_u32;
/// UDIM entry: bit position of the grid width (columns, 1..=255).
pub const DTEX_UDIM_WIDTH_SHIFT: u32 = 48_u32;
/// UDIM entry: bit position of the grid height (rows, 1..=255).
pub const DTEX_UDIM_HEIGHT_SHIFT: u32 = 56_u32;
/// UDIM entry: mask of the width and height fields (8 bits, `0xFF`) after their shift.
pub const DTEX_UDIM_SIDE_MASK: u32 = 0xFF_u32;
/// UDIM entry: the base texture field of a grid without a base texture (`0xFFFFFF`).
pub const DTEX_UDIM_NO_BASE: u32 = 0xFF_FFFF_u32;

// The header's literals (cbindgen cannot evaluate paths) equal the engine's values.
const _: () = assert!(DTEX_MAX_LEVELS as usize == engine::textures::MAX_LEVELS);
const _: () = assert!(
    DTEX_CONTEXT_FLAG_REQUEST_IF_RESIDENT == engine::paging::CONTEXT_FLAG_REQUEST_IF_RESIDENT
);
const _: () = assert!(DTEX_SAMPLER_FLAG_FAILED == engine::textures::sampler::SAMPLER_FLAG_FAILED);
const _: () = assert!(
    DTEX_ARRAY_LENGTH_REQUESTS as usize == engine::paging::device_context::ARRAY_LENGTH_REQUESTS
);
const _: () =
    assert!(DTEX_ARRAY_LENGTH_STALE as usize == engine::paging::device_context::ARRAY_LENGTH_STALE);
const _: () = assert!(
    DTEX_ARRAY_LENGTH_STANDING as usize == engine::paging::device_context::ARRAY_LENGTH_STANDING
);
const _: () = assert!(
    DTEX_ARRAY_LENGTH_REJECTED as usize == engine::paging::device_context::ARRAY_LENGTH_REJECTED
);
const _: () = assert!(DTEX_ARRAY_LENGTHS as usize == engine::paging::device_context::ARRAY_LENGTHS);
const _: () = assert!(
    DTEX_CONTEXT_FLAG_COUNT_REQUESTS == engine::paging::device_context::CONTEXT_FLAG_COUNT_REQUESTS
);
const _: () = assert!(DTEX_TILE_BYTES as usize == engine::TILE_BYTES);
const _: () = assert!(DTEX_LRU_MAX_AGE == engine::paging::MAX_LRU_AGE as u32);
const _: () = assert!(DTEX_LRU_NON_EVICTABLE == engine::paging::NON_EVICTABLE as u32);
const _: () = assert!(DTEX_NO_BASE_COLOR == engine::paging::NO_BASE_COLOR);
const _: () = assert!(DTEX_HOLE_BASE_COLOR == engine::paging::HOLE_BASE_COLOR);
const _: () = {
    let c = engine::textures::desc::DEFAULT_FALLBACK_COLOR;
    assert!(DTEX_DEFAULT_FALLBACK_COLOR_R.to_bits() == c[0].to_bits());
    assert!(DTEX_DEFAULT_FALLBACK_COLOR_G.to_bits() == c[1].to_bits());
    assert!(DTEX_DEFAULT_FALLBACK_COLOR_B.to_bits() == c[2].to_bits());
    assert!(DTEX_DEFAULT_FALLBACK_COLOR_A.to_bits() == c[3].to_bits());
};
// The UDIM entry: the engine names the no-base value and the limits; the shifts are checked
// against `UdimEntry::{encode, decode}` by a unit test below.
const _: () = assert!(DTEX_UDIM_NO_BASE == engine::udim::UDIM_NO_BASE);
const _: () = assert!(DTEX_UDIM_ID_MASK == engine::udim::UDIM_NO_BASE);
const _: () = assert!(engine::udim::UDIM_MAX_TEXTURE_ID == DTEX_UDIM_ID_MASK - 1);
const _: () = assert!(DTEX_UDIM_SIDE_MASK == engine::udim::UDIM_MAX_GRID_SIDE);
// The fields tile the 64 bits: 24 + 24 + 8 + 8.
const _: () = assert!(
    DTEX_UDIM_FIRST_SHIFT == 0
        && DTEX_UDIM_BASE_SHIFT == DTEX_UDIM_ID_MASK.count_ones()
        && DTEX_UDIM_WIDTH_SHIFT == DTEX_UDIM_BASE_SHIFT + DTEX_UDIM_ID_MASK.count_ones()
        && DTEX_UDIM_HEIGHT_SHIFT == DTEX_UDIM_WIDTH_SHIFT + DTEX_UDIM_SIDE_MASK.count_ones()
        && DTEX_UDIM_HEIGHT_SHIFT + DTEX_UDIM_SIDE_MASK.count_ones() == 64
);

// The numbers device code (and the header's asserts) rely on.
const _: () = assert!(size_of::<DeviceContext>() == 112 && align_of::<DeviceContext>() == 8);
const _: () = assert!(offset_of!(DeviceContext, page_table) == 0);
const _: () = assert!(offset_of!(DeviceContext, invalidated_pages) == 64);
const _: () = assert!(offset_of!(DeviceContext, page_table_entries) == 72);
const _: () = assert!(offset_of!(DeviceContext, launch_num) == 104);
const _: () = assert!(size_of::<PageMapping>() == 16 && offset_of!(PageMapping, entry) == 8);
const _: () = assert!(size_of::<SamplerLevel>() == 16 && offset_of!(SamplerLevel, tiles_x) == 12);
const _: () = assert!(size_of::<TextureSampler>() == 376 && align_of::<TextureSampler>() == 8);
const _: () = assert!(offset_of!(TextureSampler, fallback_color) == 88);
const _: () = assert!(offset_of!(TextureSampler, levels) == 104);

/// One struct's layout as Rust computes it.
pub struct StructLayout {
    /// The C name.
    pub c_name: &'static str,
    /// `sizeof`.
    pub size: usize,
    /// `alignof`.
    pub align: usize,
    /// Every field and its offset.
    pub fields: &'static [(&'static str, usize)],
}

macro_rules! layout {
    ($c:literal, $t:ty, [$($f:ident),* $(,)?]) => {
        StructLayout {
            c_name: $c,
            size: size_of::<$t>(),
            align: align_of::<$t>(),
            fields: &[$((stringify!($f), offset_of!($t, $f))),*],
        }
    };
}

/// The layout of every struct of the header, asserted by the header's trailer.
pub const LAYOUTS: &[StructLayout] = &[
    layout!(
        "DtexDeviceContext",
        DeviceContext,
        [
            page_table,
            reference_bits,
            residence_bits,
            lru_table,
            requested_pages,
            stale_pages,
            array_lengths,
            filled_pages,
            invalidated_pages,
            page_table_entries,
            num_pages,
            max_textures,
            flags,
            requested_capacity,
            stale_capacity,
            filled_capacity,
            invalidated_capacity,
            launch_num,
            reject_threshold,
        ]
    ),
    layout!("DtexPageMapping", PageMapping, [page, lru, entry]),
    layout!(
        "DtexSamplerLevel",
        SamplerLevel,
        [width, height, offset, tiles_x]
    ),
    layout!(
        "DtexTextureSampler",
        TextureSampler,
        [
            texture_object,
            mip_tail_data,
            start_page,
            num_pages,
            width,
            height,
            num_levels,
            mip_tail_first_level,
            tile_width,
            tile_height,
            texel_type,
            channels,
            texel_bytes,
            address_s,
            address_t,
            filter,
            mip_filter,
            max_anisotropy,
            flags,
            block_codec,
            fallback_color,
            levels,
        ]
    ),
    layout!("DtexLoader", crate::DtexLoader, [id]),
    layout!("DtexLaunch", crate::DtexLaunch, [id]),
    layout!("DtexTicket", crate::DtexTicket, [id]),
    layout!("DtexCache", crate::DtexCache, [id]),
    layout!(
        "DtexPtexDeviceFace",
        engine::ptex::device::PtexDeviceFace,
        [units, ulog2, vlog2, flags, adjedges, adjfaces]
    ),
    layout!(
        "DtexPtexDeviceUnit",
        engine::ptex::device::PtexDeviceUnit,
        [page, offset, bytes, ntiles_u, tile_ulog2, tile_vlog2]
    ),
    layout!(
        "DtexPtexDeviceTexture",
        engine::ptex::device::PtexDeviceTexture,
        [
            faces,
            units,
            constants,
            pages_texture,
            num_faces,
            mesh_type,
            data_type,
            num_channels,
            pixel_size,
            num_units,
            reserved,
        ]
    ),
    layout!(
        "DtexPtexFilterOptions",
        crate::ptex::DtexPtexFilterOptions,
        [
            struct_size,
            filter,
            lerp,
            sharpness,
            noedgeblend,
            width,
            blur,
            first_channel,
            jitter_u,
            jitter_v,
        ]
    ),
    layout!(
        "DtexPtexSampled",
        crate::ptex::DtexPtexSampled,
        [channels, resident]
    ),
    layout!(
        "DtexCudaLaunch",
        crate::cuda::DtexCudaLaunch,
        [loader, number, reserved]
    ),
    layout!(
        "DtexLoaderOptions",
        crate::options::DtexLoaderOptions,
        [
            struct_size,
            num_pages,
            page_table_entries,
            max_textures,
            max_texture_memory,
            max_requests_per_launch,
            eviction,
            fill_threads,
            lru_threshold,
            staged_reserve,
            interactive,
            max_fill_age,
            max_publications_per_launch,
            coalesce_constant_tiles,
            fill_by_file_tile,
            share_duplicate_textures,
            full_pages,
            fill_cpu_cores,
            decode_blocks,
            max_spill_bytes,
            spill_dir,
        ]
    ),
    layout!(
        "DtexTextureDesc",
        crate::options::DtexTextureDesc,
        [
            struct_size,
            address_s,
            address_t,
            filter,
            mip_filter,
            max_anisotropy,
            fallback_color,
        ]
    ),
    layout!(
        "DtexStats",
        crate::stats::DtexStats,
        [
            struct_size,
            reserved,
            virtual_bytes,
            textures,
            failed_textures,
            requests,
            requests_deferred,
            deferred_over_limit,
            deferred_no_memory,
            deferred_not_yet,
            tiles_filled,
            mip_tails_filled,
            bytes_read,
            unowned_requests,
            read_errors,
            second_chance_restores,
            pages_staged,
            evictions,
            resident_bytes,
            peak_resident_bytes,
            budget_bytes,
            bookkeeping_bytes,
            fill_seconds,
            launches,
            fill_waits,
            blocking_no_memory,
            clock_sweeps,
            blocking_fallbacks,
            host_tile_bytes,
            peak_host_tile_bytes,
            publications_deferred,
            requests_rejected,
            requests_dropped,
            fills_dropped_stale,
            publications_capped,
            tiles_published_unread,
            file_tiles_filled,
            tiles_coalesced,
            coalesced_pages,
            shared_constant_tiles,
            textures_sharing_tiles,
            duplicate_bytes_hashed,
            whole_decodes,
            whole_decodes_over_budget,
            pages_prefetched,
            whole_decode_bytes,
            decodes_spilled,
            spilled_bytes,
        ]
    ),
    layout!(
        "DtexImageInfo",
        crate::textures::DtexImageInfo,
        [width, height, texel_type, channels, num_levels,]
    ),
    layout!(
        "DtexTileRegion",
        crate::textures::DtexTileRegion,
        [level, x, y, width, height]
    ),
    layout!(
        "DtexProceduralDesc",
        crate::textures::DtexProceduralDesc,
        [
            struct_size,
            kind,
            width,
            height,
            texel_type,
            channels,
            param,
            reserved,
        ]
    ),
    layout!(
        "DtexMipTailLevel",
        crate::callbacks::DtexMipTailLevel,
        [region, offset, row_bytes]
    ),
    layout!(
        "DtexImageSourceCallbacks",
        crate::callbacks::DtexImageSourceCallbacks,
        [
            struct_size,
            reserved,
            user_data,
            open,
            read_region,
            read_mip_tail,
            read_base_color,
            close,
        ]
    ),
    layout!(
        "DtexSampleOptions",
        crate::sampling::DtexSampleOptions,
        [
            struct_size,
            fallback_to_coarser,
            request_key,
            stochastic,
            jitter
        ]
    ),
    layout!(
        "DtexSample",
        crate::sampling::DtexSample,
        [value, resident, coarser]
    ),
    layout!(
        "DtexGradQuery",
        crate::sampling::DtexGradQuery,
        [texture, s, t, dsdx, dtdx, dsdy, dtdy,]
    ),
];

/// The header's trailer: a `DTEX_STATIC_ASSERT` of the size, alignment and every field
/// offset of each struct in [`LAYOUTS`], in C11 / C++11 form.
pub fn static_assert_trailer() -> String {
    let mut t = String::from(
        "/* Layout checks, generated from the Rust definitions (capi/src/device.rs): the\n\
         \x20* compiler of every consumer (C, C++, CUDA) verifies that it lays these structs\n\
         \x20* out as the library does. (cbindgen puts this after the include guard: it has its\n\
         \x20* own.) */\n\
         #ifndef DEMANDTEX_H_LAYOUT_CHECKS\n\
         #define DEMANDTEX_H_LAYOUT_CHECKS\n\
         #if defined(__cplusplus)\n\
         #define DTEX_STATIC_ASSERT(cond, msg) static_assert(cond, msg)\n\
         #define DTEX_ALIGNOF(type) alignof(type)\n\
         #else\n\
         #define DTEX_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)\n\
         #define DTEX_ALIGNOF(type) _Alignof(type)\n\
         #endif\n\
         #if defined(__CUDACC_RTC__)\n\
         /* NVRTC has no <stddef.h>: its front end's own offsetof. */\n\
         #define DTEX_OFFSETOF(type, field) ((size_t)__INTADDR__(&((type *)0)->field))\n\
         #else\n\
         #define DTEX_OFFSETOF(type, field) offsetof(type, field)\n\
         #endif\n\
         DTEX_STATIC_ASSERT(sizeof(void *) == 8, \"demandtex needs a 64-bit target\");\n",
    );
    for l in LAYOUTS {
        let c = l.c_name;
        t += &format!(
            "DTEX_STATIC_ASSERT(sizeof({c}) == {}, \"sizeof({c})\");\n",
            l.size
        );
        t += &format!(
            "DTEX_STATIC_ASSERT(DTEX_ALIGNOF({c}) == {}, \"alignof({c})\");\n",
            l.align
        );
        for (f, off) in l.fields {
            t += &format!(
                "DTEX_STATIC_ASSERT(DTEX_OFFSETOF({c}, {f}) == {off}, \"offsetof({c}, {f})\");\n"
            );
        }
    }
    t += "#endif /* DEMANDTEX_H_LAYOUT_CHECKS */\n";
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::ids::TextureId;
    use engine::udim::UdimEntry;

    /// Decode a UDIM entry the way the device code does, with the header's constants.
    fn decode_as_device(entry: u64) -> (u32, u32, u32, u32) {
        let field = |shift: u32, mask: u32| ((entry >> shift) & mask as u64) as u32;
        (
            field(DTEX_UDIM_FIRST_SHIFT, DTEX_UDIM_ID_MASK),
            field(DTEX_UDIM_BASE_SHIFT, DTEX_UDIM_ID_MASK),
            field(DTEX_UDIM_WIDTH_SHIFT, DTEX_UDIM_SIDE_MASK),
            field(DTEX_UDIM_HEIGHT_SHIFT, DTEX_UDIM_SIDE_MASK),
        )
    }

    #[test]
    fn udim_entry_constants_decode_the_engines_encoding() {
        let grids = [
            (0xAB_CDEF, Some(0x12_3456), 255, 1),
            (0xFF_FFFE, None, 1, 255),
            (7, Some(0), 10, 3),
        ];
        for (first, base, width, height) in grids {
            let e = UdimEntry {
                first: TextureId(first),
                base: base.map(TextureId),
                width,
                height,
            };
            let entry = e.encode().expect("a valid grid");
            let base_field = base.unwrap_or(DTEX_UDIM_NO_BASE);
            assert_eq!(decode_as_device(entry), (first, base_field, width, height));
            assert_eq!(UdimEntry::decode(entry), Some(e));
        }
    }

    #[test]
    fn base_color_markers_are_no_colour_and_never_encoded() {
        assert_eq!(engine::paging::decode_base_color(DTEX_NO_BASE_COLOR), None);
        assert_eq!(
            engine::paging::decode_base_color(DTEX_HOLE_BASE_COLOR),
            None
        );
        let magenta = [
            DTEX_DEFAULT_FALLBACK_COLOR_R,
            DTEX_DEFAULT_FALLBACK_COLOR_G,
            DTEX_DEFAULT_FALLBACK_COLOR_B,
            DTEX_DEFAULT_FALLBACK_COLOR_A,
        ];
        let entry = engine::paging::encode_base_color(magenta);
        assert_ne!(entry, DTEX_NO_BASE_COLOR);
        assert_ne!(entry, DTEX_HOLE_BASE_COLOR);
        assert_eq!(engine::paging::decode_base_color(entry), Some(magenta));
    }
}
