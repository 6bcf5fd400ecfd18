//! Ptex textures: a `.ptx` file registered with a loader or a cache as one texture id
//! (docs/PTEX.md), its description and face info, and per-face filtering through core's
//! `ptex_sample` (multi-pass on a launch, blocking on a cache). The filter rules are core's
//! alone; this module checks arguments and converts.

use crate::boundary::{c_bool, c_str, entry, entry_value};
use crate::boundary::{versioned_out, Out, Versioned};
use crate::handles::{DtexCache, DtexLoader};
use crate::status::{ApiError, ApiResult, DtexStatus, DTEX_STATUS_UNKNOWN_TEXTURE};
use crate::textures::{DTEX_TEXEL_F16, DTEX_TEXEL_F32, DTEX_TEXEL_U16, DTEX_TEXEL_U8};
use crate::{cache, loader};
use engine::ptex::PtexTexture;
use engine::sampling::ptex::{PtexFilterOptions, PtexFilterType, PtexSampled};
use engine::sources::ptex::{BorderMode, DataType, EdgeFilterMode, MeshType};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::ffi::c_char;

/// Ptex filter: the texel containing the point, full resolution.
pub const DTEX_PTEX_FILTER_POINT: u32 = 0;
/// Ptex filter: bilinear interpolation of the 2x2 texels around the point (at the
/// resolution of the footprint), blended across edges.
pub const DTEX_PTEX_FILTER_BILINEAR: u32 = 1;
/// Ptex filter: box filter over the footprint, blended across edges.
pub const DTEX_PTEX_FILTER_BOX: u32 = 2;
/// Ptex filter: separable Gaussian.
pub const DTEX_PTEX_FILTER_GAUSSIAN: u32 = 3;
/// Ptex filter: general cubic with `DtexPtexFilterOptions.sharpness`.
pub const DTEX_PTEX_FILTER_BICUBIC: u32 = 4;
/// Ptex filter: cubic B-spline.
pub const DTEX_PTEX_FILTER_BSPLINE: u32 = 5;
/// Ptex filter: Catmull-Rom.
pub const DTEX_PTEX_FILTER_CATMULL_ROM: u32 = 6;
/// Ptex filter: Mitchell.
pub const DTEX_PTEX_FILTER_MITCHELL: u32 = 7;
/// Ptex filter: stochastic two-level point sampling (one texel from each of the two
/// resolutions around the footprint's level of detail, picked by `jitter_u/v`, blended);
/// a missing texel reads as the face's constant colour.
pub const DTEX_PTEX_FILTER_STOCHASTIC: u32 = 8;

/// `DtexPtexDeviceUnit.page` of a resolution without a unit (a constant face, 1x1, or a
/// reduction a triangle lacks): the face's constant colour stands for it.
pub const DTEX_PTEX_NO_UNIT: u32 = 0xFFFF_FFFF_u32;
const _: () = assert!(DTEX_PTEX_NO_UNIT == engine::ptex::device::PTEX_NO_UNIT);

/// Pages across the virtual image of a Ptex pages texture: Ptex page `p` is its tile
/// (`p % DTEX_PTEX_PAGES_ACROSS`, `p / DTEX_PTEX_PAGES_ACROSS`) of level 0.
pub const DTEX_PTEX_PAGES_ACROSS: u32 = 1024;
const _: () = assert!(DTEX_PTEX_PAGES_ACROSS == engine::sources::ptex::pages::PAGES_ACROSS);

/// Bytes of a Ptex page that units (or tiles) smaller than this may fill; the rest of
/// such a page holds its validity bitmap. A unit larger than this has a page to itself.
pub const DTEX_PTEX_UNIT_CAPACITY: u32 = 65024;
const _: () =
    assert!(DTEX_PTEX_UNIT_CAPACITY as usize == engine::sources::ptex::pack::UNIT_CAPACITY);

/// On a page of units of at most `DTEX_PTEX_UNIT_CAPACITY` bytes, each unit (or tile)
/// starts at a multiple of this many bytes.
pub const DTEX_PTEX_CHUNK_BYTES: u32 = 16;
const _: () = assert!(DTEX_PTEX_CHUNK_BYTES as usize == engine::sources::ptex::pack::CHUNK_BYTES);

/// Ptex mesh type: triangles.
pub const DTEX_PTEX_MESH_TRIANGLE: u32 = 0;
/// Ptex mesh type: quads.
pub const DTEX_PTEX_MESH_QUAD: u32 = 1;

/// Ptex border mode: clamp to the edge.
pub const DTEX_PTEX_BORDER_CLAMP: u32 = 0;
/// Ptex border mode: black outside.
pub const DTEX_PTEX_BORDER_BLACK: u32 = 1;
/// Ptex border mode: periodic.
pub const DTEX_PTEX_BORDER_PERIODIC: u32 = 2;

/// Ptex edge filter mode: none.
pub const DTEX_PTEX_EDGE_FILTER_NONE: u32 = 0;
/// Ptex edge filter mode: tangent vectors (the first two channels rotate across edges).
pub const DTEX_PTEX_EDGE_FILTER_TANVEC: u32 = 1;

/// `DtexPtexFaceInfo.flags`: every texel has the face's constant value.
pub const DTEX_PTEX_FACE_CONSTANT: u32 = 1;
/// `DtexPtexFaceInfo.flags`: the face was replaced by an edit record.
pub const DTEX_PTEX_FACE_HAS_EDITS: u32 = 2;
/// `DtexPtexFaceInfo.flags`: a constant face whose whole neighbourhood has its value.
pub const DTEX_PTEX_FACE_NEIGHBORHOOD_CONSTANT: u32 = 4;
/// `DtexPtexFaceInfo.flags`: one of the quad subfaces of an n-gon (n != 4).
pub const DTEX_PTEX_FACE_SUBFACE: u32 = 8;

/// How to filter a Ptex lookup: the reference library's `PtexFilter::Options` and the
/// `eval` arguments that are not the lookup's own. Fill it with
/// `dtex_ptex_filter_options_default`; NULL means those defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DtexPtexFilterOptions {
    /// `sizeof(DtexPtexFilterOptions)`.
    pub struct_size: u32,
    /// `DTEX_PTEX_FILTER_*` (default BOX).
    pub filter: u32,
    /// Boolean (default 0): blend the width-4 kernels (Gaussian, cubics) towards the next
    /// lower resolution.
    pub lerp: u32,
    /// Sharpness of `DTEX_PTEX_FILTER_BICUBIC`, 0..=1 (default 0).
    pub sharpness: f32,
    /// Boolean (default 0): filter each face alone (no blending across edges).
    pub noedgeblend: u32,
    /// Multiplier of the footprint (default 1).
    pub width: f32,
    /// Added to the footprint, in face uv (default 0).
    pub blur: f32,
    /// The first channel to filter (default 0).
    pub first_channel: u32,
    /// Random number in [0, 1) choosing the stochastic filter's texel in u (default 0.5:
    /// the nearest).
    pub jitter_u: f32,
    /// As `jitter_u`, in v.
    pub jitter_v: f32,
}

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexPtexFilterOptions {
    const NAME: &'static str = "DtexPtexFilterOptions";
}

impl Default for DtexPtexFilterOptions {
    fn default() -> Self {
        let o = PtexFilterOptions::default();
        DtexPtexFilterOptions {
            struct_size: std::mem::size_of::<DtexPtexFilterOptions>() as u32,
            filter: DTEX_PTEX_FILTER_BOX,
            lerp: o.lerp as u32,
            sharpness: o.sharpness,
            noedgeblend: o.noedgeblend as u32,
            width: o.width,
            blur: o.blur,
            first_channel: o.first_channel as u32,
            jitter_u: o.jitter[0],
            jitter_v: o.jitter[1],
        }
    }
}

impl DtexPtexFilterOptions {
    /// Core's options, after checking the enum and the booleans (NULL: the defaults).
    pub fn resolve(options: Option<&DtexPtexFilterOptions>) -> ApiResult<PtexFilterOptions> {
        let o = options.copied().unwrap_or_default();
        let filter = match o.filter {
            DTEX_PTEX_FILTER_POINT => PtexFilterType::Point,
            DTEX_PTEX_FILTER_BILINEAR => PtexFilterType::Bilinear,
            DTEX_PTEX_FILTER_BOX => PtexFilterType::Box,
            DTEX_PTEX_FILTER_GAUSSIAN => PtexFilterType::Gaussian,
            DTEX_PTEX_FILTER_BICUBIC => PtexFilterType::Bicubic,
            DTEX_PTEX_FILTER_BSPLINE => PtexFilterType::BSpline,
            DTEX_PTEX_FILTER_CATMULL_ROM => PtexFilterType::CatmullRom,
            DTEX_PTEX_FILTER_MITCHELL => PtexFilterType::Mitchell,
            DTEX_PTEX_FILTER_STOCHASTIC => PtexFilterType::StochasticPoint,
            f => {
                return Err(ApiError::invalid_argument(format!(
                    "DtexPtexFilterOptions.filter is {f} (DTEX_PTEX_FILTER_POINT 0 .. \
                     DTEX_PTEX_FILTER_STOCHASTIC 8)"
                )))
            }
        };
        Ok(PtexFilterOptions {
            filter,
            lerp: c_bool(o.lerp, "DtexPtexFilterOptions.lerp")?,
            sharpness: o.sharpness,
            noedgeblend: c_bool(o.noedgeblend, "DtexPtexFilterOptions.noedgeblend")?,
            width: o.width,
            blur: o.blur,
            first_channel: o.first_channel as usize,
            jitter: [o.jitter_u, o.jitter_v],
        })
    }
}

/// A Ptex texture's description (`dtex_ptex_get_info`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DtexPtexInfo {
    /// `sizeof(DtexPtexInfo)`, set by the caller.
    pub struct_size: u32,
    /// `DTEX_PTEX_MESH_*`.
    pub mesh_type: u32,
    /// How values are stored: `DTEX_TEXEL_U8`, `U16`, `F16` or `F32`.
    pub data_type: u32,
    /// Channels per texel.
    pub num_channels: u32,
    /// The alpha channel, or -1 for none.
    pub alpha_channel: i32,
    /// Faces (valid face ids are 0..num_faces).
    pub num_faces: u32,
    /// `DTEX_PTEX_BORDER_*` in u.
    pub u_border: u32,
    /// `DTEX_PTEX_BORDER_*` in v.
    pub v_border: u32,
    /// `DTEX_PTEX_EDGE_FILTER_*`.
    pub edge_filter: u32,
    /// Boolean: the file stores reductions (mip maps).
    pub has_mipmaps: u32,
    /// 64 KiB pages the units (a face at one resolution, or a tile of it) are packed in.
    pub num_pages: u64,
    /// Bytes of unit data on those pages (`unit_bytes / (num_pages * 65536)` is the
    /// packing efficiency).
    pub unit_bytes: u64,
}

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexPtexInfo {
    const NAME: &'static str = "DtexPtexInfo";
}

/// One face of a Ptex texture (`dtex_ptex_get_face_info`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtexPtexFaceInfo {
    /// `sizeof(DtexPtexFaceInfo)`, set by the caller.
    pub struct_size: u32,
    /// log2 of the face's full resolution in u.
    pub ulog2: u32,
    /// log2 of the face's full resolution in v.
    pub vlog2: u32,
    /// `DTEX_PTEX_FACE_*` bits.
    pub flags: u32,
    /// The neighbour across each edge (bottom, right, top, left; a triangle's three), -1 at
    /// a mesh boundary.
    pub adj_faces: [i32; 4],
    /// The neighbour's edge (0..=3) shared with each edge.
    pub adj_edges: [u32; 4],
}

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexPtexFaceInfo {
    const NAME: &'static str = "DtexPtexFaceInfo";
}

/// What a Ptex lookup reports beside its values.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtexPtexSampled {
    /// Channels written: `min(channels, num_channels - first_channel)`.
    pub channels: u32,
    /// Boolean: every unit the filter needed was resident. 0: the values are the face's
    /// constant colour (the stochastic filter: only the missing texel is) and the missing
    /// pages were requested.
    pub resident: u32,
}

impl From<PtexSampled> for DtexPtexSampled {
    fn from(s: PtexSampled) -> Self {
        DtexPtexSampled {
            channels: s.channels as u32,
            resident: s.resident as u32,
        }
    }
}

/// The Ptex textures of one loader or cache, by texture id.
#[derive(Default)]
pub struct PtexTable(RwLock<HashMap<u32, PtexTexture>>);

impl PtexTable {
    /// Remember `texture`; returns its id.
    pub fn insert(&self, texture: PtexTexture) -> u32 {
        let id = texture.id().0;
        self.0.write().insert(id, texture);
        id
    }

    /// The Ptex texture `id`, or UNKNOWN_TEXTURE.
    pub fn get(&self, id: u32) -> ApiResult<PtexTexture> {
        self.0.read().get(&id).cloned().ok_or_else(|| {
            ApiError::new(
                DTEX_STATUS_UNKNOWN_TEXTURE,
                format!("texture {id} is not a Ptex texture of this loader or cache"),
            )
        })
    }
}

/// `face` of `texture`, or INVALID_ARGUMENT naming the face count.
fn check_face(texture: &PtexTexture, face: u32) -> ApiResult<()> {
    // From the header: a lookup never parses the file here.
    let n = texture.num_faces();
    if face < n {
        Ok(())
    } else {
        Err(ApiError::invalid_argument(format!(
            "face {face} of a Ptex texture of {n} faces ({})",
            texture.path().display()
        )))
    }
}

/// The description of `texture`, its file parsed now if no lookup has (a file that fails
/// to parse: its error).
fn info_of(texture: &PtexTexture) -> ApiResult<DtexPtexInfo> {
    let file = texture.pages()?.file();
    let packing = texture.packing()?;
    let border = |b: BorderMode| match b {
        BorderMode::Clamp => DTEX_PTEX_BORDER_CLAMP,
        BorderMode::Black => DTEX_PTEX_BORDER_BLACK,
        BorderMode::Periodic => DTEX_PTEX_BORDER_PERIODIC,
    };
    Ok(DtexPtexInfo {
        struct_size: std::mem::size_of::<DtexPtexInfo>() as u32,
        mesh_type: match file.mesh_type() {
            MeshType::Triangle => DTEX_PTEX_MESH_TRIANGLE,
            MeshType::Quad => DTEX_PTEX_MESH_QUAD,
        },
        data_type: match file.data_type() {
            DataType::U8 => DTEX_TEXEL_U8,
            DataType::U16 => DTEX_TEXEL_U16,
            DataType::Half => DTEX_TEXEL_F16,
            DataType::F32 => DTEX_TEXEL_F32,
        },
        num_channels: file.num_channels() as u32,
        alpha_channel: file.alpha_channel().map_or(-1, |a| a as i32),
        num_faces: file.num_faces() as u32,
        u_border: border(file.u_border_mode()),
        v_border: border(file.v_border_mode()),
        edge_filter: match file.edge_filter_mode() {
            EdgeFilterMode::None => DTEX_PTEX_EDGE_FILTER_NONE,
            EdgeFilterMode::TanVec => DTEX_PTEX_EDGE_FILTER_TANVEC,
        },
        has_mipmaps: file.has_mipmaps() as u32,
        num_pages: packing.pages,
        unit_bytes: packing.unit_bytes,
    })
}

fn face_info_of(texture: &PtexTexture, face: u32) -> ApiResult<DtexPtexFaceInfo> {
    check_face(texture, face)?;
    let f = texture.pages()?.file().faces()[face as usize];
    Ok(DtexPtexFaceInfo {
        struct_size: std::mem::size_of::<DtexPtexFaceInfo>() as u32,
        ulog2: f.res.ulog2.max(0) as u32,
        vlog2: f.res.vlog2.max(0) as u32,
        flags: u32::from(f.flags),
        adj_faces: f.adjfaces,
        adj_edges: [0, 1, 2, 3].map(|e| u32::from(f.adj_edge(e))),
    })
}

/// Fill `*out` with the default filter options (box, no lerp, width 1, nearest jitter).
/// NULL: does nothing.
///
/// Ownership: `*out` is the caller's; nothing is kept. Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or valid for writing a `DtexPtexFilterOptions`.
#[no_mangle]
pub unsafe extern "C" fn dtex_ptex_filter_options_default(out: *mut DtexPtexFilterOptions) {
    entry_value((), || {
        // SAFETY: the caller's contract.
        if let Some(out) = unsafe { Out::optional(out) } {
            out.write(DtexPtexFilterOptions::default());
        }
    })
}

/// Set the most bytes of decoded Ptex face data a decode cache holds: the sources that
/// reductions (a face at a resolution the file does not store) are made from, first in
/// first out (docs/PTEX.md, "The decode cache"). Default 64 MiB; 0 keeps nothing. Each
/// loader or cache takes its own from its texture budget when its first Ptex texture is
/// registered: this many bytes, but at most an eighth of the budget, for its life (so set
/// this before registering Ptex textures). Files read outside a loader share a
/// process-wide one of this size, where a smaller value takes effect as entries are next
/// added.
///
/// Ownership: a value. Thread-safety: any thread (lookups in progress are unaffected).
#[no_mangle]
pub extern "C" fn dtex_ptex_set_decode_cache_bytes(bytes: u64) {
    entry_value((), || {
        engine::sources::ptex::set_decode_cache_bytes(usize::try_from(bytes).unwrap_or(usize::MAX))
    })
}

/// The most bytes of decoded Ptex face data a decode cache holds
/// (`dtex_ptex_set_decode_cache_bytes`).
///
/// Ownership: a value. Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn dtex_ptex_decode_cache_bytes() -> u64 {
    entry_value(0, || engine::sources::ptex::decode_cache_bytes() as u64)
}

/// Open a Ptex file and register it with `loader` as one texture: its units (a face at one
/// resolution, or a tile of a large one) are packed into 64 KiB pages that share the
/// loader's budget and are requested, filled and evicted like tiles (docs/PTEX.md). Only
/// the header is read now; the face table, per-face constant colours and packing are read
/// when the texture is opened, at its first lookup (or by `dtex_ptex_get_info` /
/// `dtex_ptex_get_face_info`, in the calling thread), so registering thousands of files
/// costs a header read each. A file that fails then is a failed texture (lookups give
/// zeros, resident; `dtex_ptex_get_info` returns the error). Sample it with
/// `dtex_launch_ptex_sample`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL `path` or `out_texture`, path not
/// UTF-8); IO_ERROR (the file cannot be read, or its header is corrupt: the message names
/// the file and what is wrong); UNSUPPORTED (not a Ptex file, or a version or type the
/// reader does not serve); OUT_OF_PAGES. Ownership: the path is copied; the texture belongs to the
/// loader. Thread-safety: any thread.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out_texture` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_ptex_create(
    loader: DtexLoader,
    path: *const c_char,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (both pointers).
        let (out, path) = unsafe { (Out::new(out_texture, "out_texture")?, c_str(path, "path")?) };
        let entry = loader::get(loader)?;
        let texture = PtexTexture::create(&entry.engine, path)?;
        out.write(entry.ptex.insert(texture));
        Ok(())
    })
}

/// The description of the Ptex texture `texture` of `loader` (the caller sets
/// `out->struct_size` first). The file is parsed now, in this thread, if no lookup has
/// opened the texture yet.
///
/// Errors: INVALID_HANDLE; UNKNOWN_TEXTURE (not a Ptex texture of this loader);
/// INVALID_ARGUMENT (NULL `out`, bad `struct_size`); IO_ERROR or UNSUPPORTED (the file
/// failed to parse: the message names it and what is wrong). Ownership: `*out` is the caller's.
/// Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or readable and writable as a `DtexPtexInfo`.
#[no_mangle]
pub unsafe extern "C" fn dtex_ptex_get_info(
    loader: DtexLoader,
    texture: u32,
    out: *mut DtexPtexInfo,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { versioned_out(out, "out") }?;
        out.write(info_of(&loader::get(loader)?.ptex.get(texture)?)?);
        Ok(())
    })
}

/// The info of face `face` of the Ptex texture `texture` of `loader` (the caller sets
/// `out->struct_size` first).
///
/// Errors: as `dtex_ptex_get_info`, and INVALID_ARGUMENT for a face id the texture lacks.
/// Ownership: `*out` is the caller's. Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or readable and writable as a `DtexPtexFaceInfo`.
#[no_mangle]
pub unsafe extern "C" fn dtex_ptex_get_face_info(
    loader: DtexLoader,
    texture: u32,
    face: u32,
    out: *mut DtexPtexFaceInfo,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { versioned_out(out, "out") }?;
        out.write(face_info_of(
            &loader::get(loader)?.ptex.get(texture)?,
            face,
        )?);
        Ok(())
    })
}

/// Open a Ptex file and register it with `cache` (as `dtex_ptex_create` does with a
/// loader). Sample it with `dtex_cache_ptex_sample`.
///
/// Errors: as `dtex_ptex_create`. Ownership: the path is copied; the texture belongs to
/// the cache. Thread-safety: any thread.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out_texture` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_ptex_create(
    cache: DtexCache,
    path: *const c_char,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (both pointers).
        let (out, path) = unsafe { (Out::new(out_texture, "out_texture")?, c_str(path, "path")?) };
        let c = cache::get(cache)?;
        let texture = c.cache.create_ptex_texture(path)?;
        out.write(c.ptex.insert(texture));
        Ok(())
    })
}

/// `dtex_ptex_get_info` for a Ptex texture of `cache`.
///
/// Errors: as `dtex_ptex_get_info` (UNKNOWN_TEXTURE: not a Ptex texture of this cache).
/// Ownership: `*out` is the caller's. Thread-safety: any thread.
///
/// # Safety
/// As `dtex_ptex_get_info`.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_ptex_get_info(
    cache: DtexCache,
    texture: u32,
    out: *mut DtexPtexInfo,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { versioned_out(out, "out") }?;
        out.write(info_of(&cache::get(cache)?.ptex.get(texture)?)?);
        Ok(())
    })
}

/// `dtex_ptex_get_face_info` for a Ptex texture of `cache`.
///
/// Errors: as `dtex_ptex_get_face_info`. Ownership: `*out` is the caller's.
/// Thread-safety: any thread.
///
/// # Safety
/// As `dtex_ptex_get_face_info`.
#[no_mangle]
pub unsafe extern "C" fn dtex_cache_ptex_get_face_info(
    cache: DtexCache,
    texture: u32,
    face: u32,
    out: *mut DtexPtexFaceInfo,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { versioned_out(out, "out") }?;
        out.write(face_info_of(&cache::get(cache)?.ptex.get(texture)?, face)?);
        Ok(())
    })
}

mod sample;

pub use sample::{
    dtex_cache_ptex_sample, dtex_cache_ptex_sample_batch, dtex_launch_ptex_sample,
    dtex_launch_ptex_sample_batch, DtexPtexQuery,
};
