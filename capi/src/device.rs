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
/// `DtexTextureSampler.flags` bit: the texture failed; every lookup returns its fallback.
pub const DTEX_SAMPLER_FLAG_FAILED: u32 = 1;
/// `DtexDeviceContext.array_lengths` index of the request count.
pub const DTEX_ARRAY_LENGTH_REQUESTS: u32 = 0;
/// `DtexDeviceContext.array_lengths` index of the stale-page count.
pub const DTEX_ARRAY_LENGTH_STALE: u32 = 1;

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
            reserved,
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
            reserved,
            fallback_color,
            levels,
        ]
    ),
    layout!("DtexLoader", crate::DtexLoader, [id]),
    layout!("DtexLaunch", crate::DtexLaunch, [id]),
    layout!("DtexTicket", crate::DtexTicket, [id]),
    layout!("DtexCache", crate::DtexCache, [id]),
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
            reserved,
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
        crate::options::DtexStats,
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
        [struct_size, fallback_to_coarser,]
    ),
    layout!(
        "DtexSample",
        crate::sampling::DtexSample,
        [value, resident, reserved]
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
