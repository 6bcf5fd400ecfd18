/*
 * demandtex device API: reading Ptex units (a face at one resolution, or a tile of it) from
 * the packed pages, for the Ptex filters of ptex.cuh, ptex_separable.cuh and
 * ptex_triangle.cuh.
 *
 * `DtexPtexDeviceTexture` (docs/PTEX.md "On the device"): the face table, the unit table
 * (where each face at each reduction lies in the packed 64 KiB pages) and the per-face
 * constant colours in device memory, and the id of the pages texture, whose tiles are the
 * pages (16-byte texels, 64x64 texels = one page; Ptex page `p` is tile
 * (p % DTEX_PTEX_PAGES_ACROSS, p / DTEX_PTEX_PAGES_ACROSS) of level 0), stored as four 32-bit
 * unsigned integers per texel and read back bit for bit through its texture object.
 *
 * A lookup keeps one `PtexUnits` (its context, texture, the pages texture's sampler once
 * resolved). `ptexUnitEntry` finds a face's unit at one resolution and `ptexOpenUnit` one
 * unit or tile of it, records its page as used (requests are de-duplicated per warp: the lanes asking
 * for the same page elect one lane, `__match_any_sync`, that records the request with the
 * launch's rejection, and all of them get its answer) and returns a `PtexUnitReader` over
 * its texels, or false when it is missing.
 */
#ifndef DEMANDTEX_DEVICE_PTEX_UNITS_CUH
#define DEMANDTEX_DEVICE_PTEX_UNITS_CUH

#include "texture.cuh"

#ifndef DTEX_NOINLINE
/// Keeps the large steps of the Ptex filters out of line: inlining every call site of the
/// edge and corner walks multiplies the code (and NVRTC's memory) many times over.
#define DTEX_NOINLINE __noinline__
#endif

namespace dtex {

/// The pages of one Ptex texture as a lookup sees them: the pages texture's sampler, or
/// why there is none; resolved at the first unit the lookup needs (core's `EnginePtex`).
struct PtexPages {
    /// The resident, well-formed sampler of the pages texture, or null.
    const DtexTextureSampler* sampler;
    /// Without a sampler: whether the pages texture failed (constants, resident).
    bool failed;
    /// Whether the sampler was looked up.
    bool resolved;
};

/// What one lookup reads through: the launch's context, the texture, its pages.
struct PtexUnits {
    const DtexDeviceContext* ctx;
    const DtexPtexDeviceTexture* ptex;
    PtexPages pages;
};

/// A lookup's `PtexUnits`, nothing resolved yet.
static __device__ __forceinline__ PtexUnits ptexUnits(const DtexDeviceContext& ctx,
                                                      const DtexPtexDeviceTexture& ptex)
{
    PtexUnits u;
    u.ctx = &ctx;
    u.ptex = &ptex;
    u.pages.sampler = nullptr;
    u.pages.failed = false;
    u.pages.resolved = false;
    return u;
}

/// Record (with the launch's rejection) a use of `page` once per warp for the lanes that
/// ask for the same page; every active lane gets whether it is resident.
static __device__ __forceinline__ bool ptexRequestOncePerWarp(const DtexDeviceContext& ctx,
                                                              uint32_t page)
{
    const unsigned int active = __activemask();
    const unsigned int peers = __match_any_sync(active, page);
    const int leader = __ffs(static_cast<int>(peers)) - 1;
    int resident = 0;
    if (static_cast<int>(laneId()) == leader)
        resident = request(ctx, page) ? 1 : 0;
    return __shfl_sync(active, resident, leader) != 0;
}

/// Look up the pages texture's sampler (its page recorded as used) once per lookup.
static __device__ __forceinline__ void ptexResolvePages(PtexUnits* u)
{
    if (u->pages.resolved)
        return;
    u->pages.resolved = true;
    const DtexTextureSampler* smp = nullptr;
    Sample answer;
    if (resolveSampler(*u->ctx, u->ptex->pages_texture, &smp, &answer))
        u->pages.sampler = smp;
    else
        u->pages.failed = answer.resident;
}

/// The 32-bit word at byte `offset` (a multiple of 4) of Ptex page `page`, read from the
/// pages texture's level 0 (integer texels, point-filtered, so the bits come back unchanged).
static __device__ __forceinline__ uint32_t ptexWord(const DtexTextureSampler& smp, uint32_t page,
                                                    uint32_t offset)
{
    const uint32_t texel = offset / 16u;
    const uint32_t x = (page % DTEX_PTEX_PAGES_ACROSS) * smp.tile_width + texel % smp.tile_width;
    const uint32_t y = (page / DTEX_PTEX_PAGES_ACROSS) * smp.tile_height + texel / smp.tile_width;
    const float s = __fdiv_rn(__fadd_rn(__uint2float_rn(x), 0.5f), __uint2float_rn(smp.width));
    const float t = __fdiv_rn(__fadd_rn(__uint2float_rn(y), 0.5f), __uint2float_rn(smp.height));
    // The pages texture stores 32-bit words read as integers (a float read would flush
    // denormal bit patterns to zero).
    const uint4 v =
        ::tex2DLod<uint4>(static_cast<cudaTextureObject_t>(smp.texture_object), s, t, 0.0f);
    switch ((offset / 4u) % 4u) {
    case 0: return v.x;
    case 1: return v.y;
    case 2: return v.z;
    default: return v.w;
    }
}

/// Channel `c` (absolute) of the texel at byte `at` of a run of bytes read by `word(o)`, as
/// stored (u8 0..255, u16 0..65535; core's `Channels::raw`).
template <class Word>
static __device__ __forceinline__ float ptexRaw(uint32_t data_type, Word& word, uint32_t at,
                                                uint32_t c)
{
    switch (data_type) {
    case DTEX_TEXEL_U8: {
        const uint32_t o = at + c;
        return __uint2float_rn((word(o & ~3u) >> ((o & 3u) * 8u)) & 0xFFu);
    }
    case DTEX_TEXEL_U16: {
        const uint32_t o = at + 2u * c;
        return __uint2float_rn((word(o & ~3u) >> ((o & 3u) * 8u)) & 0xFFFFu);
    }
    case DTEX_TEXEL_F16: {
        const uint32_t o = at + 2u * c;
        const uint32_t b = (word(o & ~3u) >> ((o & 3u) * 8u)) & 0xFFFFu;
        return halfBitsToFloat(static_cast<unsigned short>(b));
    }
    default: return __uint_as_float(word(at + 4u * c));
    }
}

/// `1 / one_value` of a data type (u8 1/255, u16 1/65535, else 1).
static __device__ __forceinline__ float ptexOneValueInv(uint32_t data_type)
{
    return data_type == DTEX_TEXEL_U8    ? 1.0f / 255.0f
           : data_type == DTEX_TEXEL_U16 ? 1.0f / 65535.0f
                                         : 1.0f;
}

/// `one_value` of a data type (u8 255, u16 65535, else 1).
static __device__ __forceinline__ float ptexOneValue(uint32_t data_type)
{
    return data_type == DTEX_TEXEL_U8 ? 255.0f : data_type == DTEX_TEXEL_U16 ? 65535.0f : 1.0f;
}

/// Channel `c` (absolute) normalised (u8 / 255, u16 / 65535), as core's `Channels::raw`
/// times `one_value_inv`.
template <class Word>
static __device__ __forceinline__ float ptexChannel(const DtexPtexDeviceTexture& ptex, Word word,
                                                    uint32_t at, uint32_t c)
{
    return __fmul_rn(ptexRaw(ptex.data_type, word, at, c), ptexOneValueInv(ptex.data_type));
}

/// The bytes of face `face`'s constant colour, as 32-bit words (only the `pixel_size`
/// bytes that exist are read).
struct PtexConstantWords {
    const unsigned char* bytes;
    uint32_t size;
    __device__ __forceinline__ uint32_t operator()(uint32_t o) const
    {
        uint32_t w = 0;
        for (uint32_t i = 0; i < 4u && o + i < size; ++i)
            w |= static_cast<uint32_t>(bytes[o + i]) << (8u * i);
        return w;
    }
};

/// The constant colour of `face` as words.
static __device__ __forceinline__ PtexConstantWords ptexConstantWords(
    const DtexPtexDeviceTexture& ptex, uint32_t face)
{
    PtexConstantWords w;
    w.bytes = ptex.constants + static_cast<size_t>(face) * ptex.pixel_size;
    w.size = ptex.pixel_size;
    return w;
}

/// The face's constant colour, channels `first .. first + n`, into `out`.
static __device__ __forceinline__ void ptexConstant(const DtexPtexDeviceTexture& ptex,
                                                    uint32_t face, uint32_t first, uint32_t n,
                                                    float* out)
{
    PtexConstantWords word = ptexConstantWords(ptex, face);
    for (uint32_t c = 0; c < n; ++c)
        out[c] = ptexChannel(ptex, word, 0u, first + c);
}

/// How a face at one resolution is cut into units: tiles across and each tile's log2 size
/// (`ntiles_u` 0: one unit).
struct PtexTiling {
    uint32_t ntiles_u;
    uint32_t tile_ulog2;
    uint32_t tile_vlog2;
};

/// The unit-table entry of `face` (whose face-table entry is `f`) at resolution (`ulog2`,
/// `vlog2`), each at most the face's; false if the table has none.
static __device__ __forceinline__ bool ptexUnitEntry(const DtexPtexDeviceTexture& ptex,
                                                     const DtexPtexDeviceFace& f,
                                                     uint32_t ulog2, uint32_t vlog2,
                                                     DtexPtexDeviceUnit* unit)
{
    if (ulog2 > f.ulog2 || vlog2 > f.vlog2)
        return false;
    const uint32_t redu = f.ulog2 - ulog2, redv = f.vlog2 - vlog2;
    const uint32_t index = f.units + redu * (f.vlog2 + 1u) + redv;
    if (index >= ptex.num_units)
        return false;
    *unit = ptex.units[index];
    return unit->page != DTEX_PTEX_NO_UNIT;
}

/// The tiling of a unit-table entry at (`ulog2`, `vlog2`) (core's `PtexFaces::tiling`):
/// `ntiles_u` 0 for one unit.
static __device__ __forceinline__ PtexTiling ptexTiling(const DtexPtexDeviceUnit& unit,
                                                        uint32_t ulog2, uint32_t vlog2)
{
    PtexTiling t;
    t.ntiles_u = unit.ntiles_u;
    t.tile_ulog2 = unit.ntiles_u != 0u ? unit.tile_ulog2 : ulog2;
    t.tile_vlog2 = unit.ntiles_u != 0u ? unit.tile_vlog2 : vlog2;
    return t;
}

/// The texels of one unit (or tile) in a resident page: a word reader that fetches each
/// 32-bit word of the page once while consecutive reads stay in it.
struct PtexUnitReader {
    const DtexTextureSampler* smp;
    /// The Ptex page of the unit.
    uint32_t page;
    /// Byte offset of the unit's first texel in the page.
    uint32_t base;
    /// The last word read (`last_offset` is its byte offset, 0xFFFFFFFF before any).
    uint32_t last_offset;
    uint32_t last_word;
    /// The word at byte `o` of the unit.
    __device__ __forceinline__ uint32_t operator()(uint32_t o)
    {
        const uint32_t at = base + o;
        if (at != last_offset) {
            last_word = ptexWord(*smp, page, at);
            last_offset = at;
        }
        return last_word;
    }
};

/// Open tile `tile` (0 for an untiled unit) of the unit whose entry (`ptexUnitEntry`) is
/// `unit`, at a resolution of 2^`vlog2` rows, for reading into `*reader`, recording its
/// page as used; false if it is missing (the page was requested) or does not exist. Core's
/// `EnginePtex::texels`.
static __device__ __forceinline__ bool ptexOpenUnitInline(PtexUnits* u,
                                                          const DtexPtexDeviceUnit& unit,
                                                          uint32_t vlog2, uint32_t tile,
                                                          PtexUnitReader* reader)
{
    const uint32_t ntiles_v =
        unit.tile_vlog2 < vlog2 ? 1u << (vlog2 - unit.tile_vlog2) : 1u;
    const uint32_t ntiles = unit.ntiles_u == 0u ? 1u : unit.ntiles_u * ntiles_v;
    if (tile >= ntiles)
        return false;
    ptexResolvePages(u);
    if (u->pages.sampler == nullptr)
        return false;
    // Core's `UnitLoc::tile`: tiles follow each other `stride` bytes apart within a page's
    // capacity (a whole page for a tile of more than DTEX_PTEX_UNIT_CAPACITY bytes), never
    // straddling a page.
    uint32_t page = unit.page, offset = unit.offset;
    if (tile != 0u) {
        const uint32_t bytes = unit.bytes > 0u ? unit.bytes : 1u;
        const bool whole = bytes > DTEX_PTEX_UNIT_CAPACITY;
        const uint32_t capacity = whole ? DTEX_TILE_BYTES : DTEX_PTEX_UNIT_CAPACITY;
        const uint32_t stride =
            whole ? bytes : (bytes + DTEX_PTEX_CHUNK_BYTES - 1u) / DTEX_PTEX_CHUNK_BYTES *
                                DTEX_PTEX_CHUNK_BYTES;
        if (bytes > capacity || unit.offset > capacity - bytes)
            return false;  // a table no layout makes
        const uint32_t first = (capacity - unit.offset - bytes) / stride + 1u;
        if (tile < first) {
            offset = unit.offset + tile * stride;
        } else {
            const uint32_t per = (capacity - bytes) / stride + 1u, rest = tile - first;
            page = unit.page + 1u + rest / per;
            offset = (rest % per) * stride;
        }
    }
    // The page's place in the page space (core's `EnginePtex::texels`).
    const DtexTextureSampler& smp = *u->pages.sampler;
    const DtexSamplerLevel& lv = smp.levels[0];
    const uint32_t px = page % DTEX_PTEX_PAGES_ACROSS, py = page / DTEX_PTEX_PAGES_ACROSS;
    if (px >= lv.tiles_x || py >= smp.num_pages)
        return false;
    const uint32_t global = smp.start_page + lv.offset + py * lv.tiles_x + px;
    if (global >= smp.start_page + smp.num_pages || !ptexRequestOncePerWarp(*u->ctx, global))
        return false;
    reader->smp = &smp;
    reader->page = page;
    reader->base = offset;
    reader->last_offset = 0xFFFFFFFFu;
    reader->last_word = 0u;
    return true;
}

/// `ptexOpenUnitInline` out of line, for the filters that open many units (the point
/// filters inline it: one unit per lookup, and no call frame).
static __device__ DTEX_NOINLINE bool ptexOpenUnit(PtexUnits* u, const DtexPtexDeviceUnit& unit,
                                                  uint32_t vlog2, uint32_t tile,
                                                  PtexUnitReader* reader)
{
    return ptexOpenUnitInline(u, unit, vlog2, tile, reader);
}

/// The face-table entry of `id`, or false for an id the texture lacks (a mesh boundary's
/// -1, or a corrupt adjacency).
static __device__ __forceinline__ bool ptexFaceInfo(const DtexPtexDeviceTexture& ptex, int id,
                                                    DtexPtexDeviceFace* f)
{
    if (id < 0 || static_cast<uint32_t>(id) >= ptex.num_faces)
        return false;
    *f = ptex.faces[id];
    return true;
}

/// The neighbour's edge shared with edge `e` of `f`.
static __device__ __forceinline__ int ptexAdjEdge(const DtexPtexDeviceFace& f, int e)
{
    return (f.adjedges >> (2 * (e & 3))) & 3;
}

/// Whether `f` is a subface of an n-gon.
static __device__ __forceinline__ bool ptexIsSubface(const DtexPtexDeviceFace& f)
{
    return (f.flags & DTEX_PTEX_FACE_SUBFACE) != 0u;
}

/// Whether every texel of `f` is its constant.
static __device__ __forceinline__ bool ptexIsConstant(const DtexPtexDeviceFace& f)
{
    return (f.flags & DTEX_PTEX_FACE_CONSTANT) != 0u;
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PTEX_UNITS_CUH
