// oiio-replay: replay a `.dtxq` texture query trace with OpenImageIO's TextureSystem, as
// shared/bench/QUERIES.md specifies, so that its throughput, tile reads and results can be
// set beside `demandtex bench replay` on the same files.
//
//   oiio-replay TRACE --textures DIR [--threads T] [--cache-mb N] [--out FILE] [--json]
//               [--lod exact|native] [--derivatives FILE]
//
// Build: scripts/build-oiio-replay.sh, i.e.
//   g++ -O2 -std=c++17 -pthread replay.cpp $(pkg-config --cflags --libs OpenImageIO)
// (Debian/Ubuntu: libopenimageio-dev; written against OpenImageIO 2.4).
//
// Lookups: a private TextureSystem (not the shared one), trilinear (MipModeTrilinear,
// InterpBilinear), periodic wrap, 4 channels. Each thread has its own Perthread and gets a
// TextureHandle per texture once (the fast path a renderer uses); the queries are cut into
// chunks of 4096 that the threads take in order from an atomic counter.
//
// Level of detail. QUERIES.md asks for lod = log2(max(|dx|, |dy|)) (gradient lengths in
// level-0 texels) and a blend linear in the lod's fraction. OIIO's trilinear mode measures
// the footprint as max(|dsdx|, |dsdy|, |dtdx|, |dtdy|) times the smaller side of each level
// and blends by 2^f - 1 instead of f. With `--lod exact` (the default) each query's
// derivatives are replaced by an axis-aligned isotropic pair whose OIIO level choice and
// blend weight equal the trace's lod, so both systems compute the same filter; the work OIIO
// does per lookup (two bilinear levels) is unchanged. `--lod native` passes the trace's
// derivatives through untouched.
//
// Channels. A texture has the channels demandtex's EXR reader serves: R G B A; R G B (alpha
// 1); Y when there is no R G B (a `Y A` file is served as Y, its alpha dropped); otherwise
// the first channels. Then QUERIES.md's rule: 1 channel gives (c, c, c, 1), 2 channels
// (c0, c1, c0, 1). OIIO is asked for 4 channels and its answer is rearranged to match.
//
// --derivatives FILE: also ask texture() for dresultds and dresultdt and write them, mapped
// to the channels as the results are (a constant alpha's derivatives are 0), 8 floats per
// query (d/ds RGBA, then d/dt RGBA), as `demandtex bench replay --derivatives` writes them.
//
// Figures (one JSON line with --json): lookups, seconds (the replay itself: thread start,
// handles, lazy opens, lookups), lookups_per_s, tiles_read (stat:tiles_created),
// bytes_read (stat:bytes_read: OIIO counts each tile read from a file as its uncompressed
// size in the file's data type, a whole tile even at a level's edge), peak_resident_bytes
// (stat:tiles_peak × the bytes one tile takes in the cache; OIIO keeps no peak of its
// memory figure), checksum (f64 sum of r+g+b+a over all queries in query order).

#include <OpenImageIO/imagecache.h>
#include <OpenImageIO/oiioversion.h>
#include <OpenImageIO/texture.h>
#include <OpenImageIO/ustring.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using OIIO::TextureOpt;
using OIIO::TextureSystem;
using OIIO::TypeDesc;
using OIIO::ustring;

constexpr size_t kChunk       = 4096;
constexpr size_t kQueryBytes  = 28;
constexpr uint32_t kMaxTex    = 1u << 20;
constexpr uint32_t kMaxPath   = 1u << 16;

struct Query {
    uint32_t texture;
    float s, t, dsdx, dtdx, dsdy, dtdy;
};

struct Trace {
    std::vector<std::string> textures;
    std::vector<Query> queries;
};

[[noreturn]] void die(const std::string& msg, int code = 1)
{
    std::fprintf(stderr, "oiio-replay: %s\n", msg.c_str());
    std::exit(code);
}

uint32_t le32(const unsigned char* p)
{
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

float lef32(const unsigned char* p)
{
    uint32_t u = le32(p);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Read and check a whole trace (one read): magic, version, truncation, paths, indices.
Trace read_trace(const std::string& path)
{
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
        die(path + ": cannot open: " + std::strerror(errno));
    std::vector<unsigned char> b(size_t(in.tellg()));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(b.data()), std::streamsize(b.size())))
        die(path + ": cannot read the trace");
    size_t pos  = 0;
    auto need   = [&](size_t n, const std::string& what) {
        if (b.size() - pos < n)
            die("truncated query trace: " + what + " at byte " + std::to_string(pos)
                + " needs " + std::to_string(n) + " bytes, the file has "
                + std::to_string(b.size() - pos) + " left");
    };
    need(4, "the magic number");
    if (std::memcmp(b.data(), "DTXQ", 4) != 0)
        die("not a query trace (no DTXQ magic): " + path);
    pos = 4;
    need(4, "the version");
    uint32_t version = le32(&b[pos]);
    pos += 4;
    if (version != 1)
        die("query trace version " + std::to_string(version) + " (only 1 is supported)");
    need(4, "the texture count");
    uint32_t ntex = le32(&b[pos]);
    pos += 4;
    if (ntex > kMaxTex)
        die("corrupt query trace: " + std::to_string(ntex) + " textures");
    Trace tr;
    for (uint32_t i = 0; i < ntex; ++i) {
        need(4, "the path length of texture " + std::to_string(i));
        uint32_t len = le32(&b[pos]);
        pos += 4;
        if (len == 0 || len > kMaxPath)
            die("query trace texture " + std::to_string(i) + ": a path of "
                + std::to_string(len) + " bytes");
        need(len, "the path of texture " + std::to_string(i));
        tr.textures.emplace_back(reinterpret_cast<const char*>(&b[pos]), len);
        pos += len;
    }
    need(8, "the query count");
    uint64_t nq = uint64_t(le32(&b[pos])) | uint64_t(le32(&b[pos + 4])) << 32;
    pos += 8;
    uint64_t avail = b.size() - pos;
    if (nq > avail / kQueryBytes)
        die("truncated query trace: " + std::to_string(nq) + " queries declared, "
            + std::to_string(avail / kQueryBytes) + " present");
    if (nq * kQueryBytes != avail)
        die("corrupt query trace: " + std::to_string(avail - nq * kQueryBytes)
            + " bytes after the last query");
    tr.queries.resize(nq);
    for (uint64_t i = 0; i < nq; ++i, pos += kQueryBytes) {
        const unsigned char* p = &b[pos];
        Query q{ le32(p),         lef32(p + 4),  lef32(p + 8), lef32(p + 12),
                 lef32(p + 16),   lef32(p + 20), lef32(p + 24) };
        if (q.texture >= ntex)
            die("query " + std::to_string(i) + " names texture " + std::to_string(q.texture)
                + ", but the trace lists " + std::to_string(ntex) + " texture(s)");
        tr.queries[i] = q;
    }
    return tr;
}

// How OIIO's 4-channel answer becomes the RGBA result.
enum class Map { Rgba, Rgb, Gray, Two };

struct TexInfo {
    int width = 0, height = 0, levels = 1;
    Map map   = Map::Rgba;
    int gray  = 0;  // Map::Gray: the channel to replicate
};

// The channels demandtex would serve from a file with these channel names: by name for
// OpenEXR (its reader's rule), by count for other formats (PNG's grey and alpha, named
// Y and A by OIIO, are served as two channels).
void choose_map(const std::vector<std::string>& names, bool openexr, TexInfo& ti)
{
    auto find = [&](const char* n) {
        auto it = std::find(names.begin(), names.end(), n);
        return it == names.end() ? -1 : int(it - names.begin());
    };
    int r = find("R"), g = find("G"), b = find("B"), a = find("A"), y = find("Y");
    if (!openexr) {
        r = g = b = a = y = -1;
    }
    if (r == 0 && g == 1 && b == 2) {
        ti.map = a == 3 ? Map::Rgba : Map::Rgb;
    } else if (r < 0 && y == 0 && a == 1 && find("X") < 0) {
        // Luminance and alpha, which OIIO orders Y, A: served as two channels.
        ti.map = Map::Two;
    } else if (r < 0 && y >= 0 && y < 4 && find("X") < 0) {
        // Luminance (a Y beside an X is a vector's, served in name order below).
        ti.map  = Map::Gray;
        ti.gray = y;
    } else {
        switch (names.size()) {
        case 1: ti.map = Map::Gray, ti.gray = 0; break;
        case 2: ti.map = Map::Two; break;
        case 3: ti.map = Map::Rgb; break;
        default: ti.map = Map::Rgba; break;
        }
    }
}

// The smaller side of level m of a width × height chain (as OIIO's `minwh`).
inline float minwh(const TexInfo& ti, int m)
{
    int w = std::max(1, ti.width >> std::min(m, 30));
    int h = std::max(1, ti.height >> std::min(m, 30));
    return float(std::min(w, h));
}

// Replace the derivatives by an isotropic pair for which OIIO's trilinear level choice and
// blend equal QUERIES.md's: levels floor(lod) and the next, weight frac(lod) for the next.
// OIIO blends levels m-1, m by 2·F·minwh[m] - 1 at the first m with F·minwh[m] <= 1, so
// F = (1 + f) / (2 · minwh[k + 1]) for lod = k + f.
inline void exact_derivs(const TexInfo& ti, const Query& q, float& dsdx, float& dtdx,
                         float& dsdy, float& dtdy)
{
    float ax = q.dsdx * ti.width, ay = q.dtdx * ti.height;
    float bx = q.dsdy * ti.width, by = q.dtdy * ti.height;
    float len2 = std::max(ax * ax + ay * ay, bx * bx + by * by);
    float F;
    if (!(len2 > 1.0f)) {
        F = 0.5f / minwh(ti, 0);  // lod <= 0: level 0 alone
    } else {
        float lod = 0.5f * std::log2(len2);
        if (!std::isfinite(lod) || lod > 30.0f)
            lod = 30.0f;
        int k   = int(std::floor(lod));
        float f = lod - float(k);
        if (k >= ti.levels - 1)
            F = 1.0e6f;  // beyond the coarsest level: OIIO clamps to it
        else
            F = (1.0f + f) / (2.0f * minwh(ti, k + 1));
    }
    dsdx = F;
    dtdx = 0.0f;
    dsdy = 0.0f;
    dtdy = F;
}

struct Args {
    std::string trace, dir, out, derivs;
    int threads    = 2;
    double cache   = 1024.0;
    bool json      = false;
    bool exact_lod = true;
};

Args parse_args(int argc, char** argv)
{
    Args a;
    auto value = [&](int& i) -> std::string {
        if (i + 1 >= argc)
            die(std::string(argv[i]) + " needs a value", 2);
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        std::string s = argv[i];
        if (s == "--textures")
            a.dir = value(i);
        else if (s == "--threads")
            a.threads = std::atoi(value(i).c_str());
        else if (s == "--cache-mb")
            a.cache = std::atof(value(i).c_str());
        else if (s == "--out")
            a.out = value(i);
        else if (s == "--derivatives")
            a.derivs = value(i);
        else if (s == "--json")
            a.json = true;
        else if (s == "--lod") {
            std::string v = value(i);
            if (v != "exact" && v != "native")
                die("--lod " + v + " (exact or native)", 2);
            a.exact_lod = v == "exact";
        } else if (s == "-h" || s == "--help") {
            std::printf("usage: oiio-replay TRACE --textures DIR [--threads T] "
                        "[--cache-mb N] [--out FILE] [--json] [--lod exact|native] "
                        "[--derivatives FILE]\n");
            std::exit(0);
        } else if (!s.empty() && s[0] == '-')
            die("unknown option " + s, 2);
        else if (a.trace.empty())
            a.trace = s;
        else
            die("unexpected argument " + s, 2);
    }
    if (a.trace.empty() || a.dir.empty())
        die("usage: oiio-replay TRACE --textures DIR [--threads T] [--cache-mb N] "
            "[--out FILE] [--json] [--lod exact|native] [--derivatives FILE]",
            2);
    if (a.threads < 1 || a.threads > 1024)
        die("--threads " + std::to_string(a.threads) + " (1..=1024)", 2);
    if (!(a.cache > 0.0))
        die("--cache-mb must be positive", 2);
    return a;
}

}  // namespace

int main(int argc, char** argv)
{
    Args args = parse_args(argc, argv);
    Trace tr  = read_trace(args.trace);
    std::vector<ustring> names;
    for (auto& p : tr.textures)
        names.emplace_back(args.dir + "/" + p);
    const size_t nq = tr.queries.size();

    TextureSystem* ts = TextureSystem::create(false);  // private, not the shared one
    ts->attribute("max_memory_MB", float(args.cache));
    ts->attribute("autotile", 0);
    ts->attribute("automip", 0);
    ts->attribute("gray_to_rgb", 0);

    TextureOpt base;
    base.swrap      = TextureOpt::WrapPeriodic;
    base.twrap      = TextureOpt::WrapPeriodic;
    base.mipmode    = TextureOpt::MipModeTrilinear;
    base.interpmode = TextureOpt::InterpBilinear;
    base.anisotropic = 1;
    base.fill       = 1.0f;

    std::vector<float> results(nq * 4);
    const bool want_derivs = !args.derivs.empty();
    std::vector<float> derivs(want_derivs ? nq * 8 : 0);
    std::atomic<size_t> next_chunk{ 0 };
    std::atomic<uint64_t> failures{ 0 };
    std::mutex err_mutex;
    std::string first_error;
    const size_t nchunks = (nq + kChunk - 1) / kChunk;

    // Perthread records live until the statistics are read: OIIO 2.4 keeps its I/O counts
    // (stat:bytes_read among them) per thread, and after destroy_thread_info() its
    // statistics merge dereferences the emptied slot and crashes.
    std::vector<TextureSystem::Perthread*> perthread(args.threads, nullptr);
    auto worker = [&](int index) {
        TextureSystem::Perthread* pt = ts->create_thread_info();
        perthread[index]             = pt;
        std::vector<TextureSystem::TextureHandle*> handles(names.size(), nullptr);
        std::vector<TexInfo> info(names.size());
        std::vector<char> known(names.size(), 0);
        for (;;) {
            size_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
            if (c >= nchunks)
                break;
            size_t end = std::min(nq, (c + 1) * kChunk);
            for (size_t i = c * kChunk; i < end; ++i) {
                const Query& q = tr.queries[i];
                uint32_t tex   = q.texture;
                if (!known[tex]) {  // once per texture per thread
                    known[tex]   = 1;
                    handles[tex] = ts->get_texture_handle(names[tex], pt);
                    OIIO::ImageSpec spec;
                    int levels = 1;
                    if (ts->get_imagespec(handles[tex], pt, 0, spec)) {
                        info[tex].width  = spec.width;
                        info[tex].height = spec.height;
                        ustring format;
                        ts->get_texture_info(handles[tex], pt, 0, ustring("fileformat"),
                                             TypeDesc::STRING, &format);
                        choose_map(spec.channelnames, format == "openexr", info[tex]);
                    }
                    if (ts->get_texture_info(handles[tex], pt, 0, ustring("miplevels"),
                                             TypeDesc::INT, &levels))
                        info[tex].levels = levels;
                }
                float dsdx = q.dsdx, dtdx = q.dtdx, dsdy = q.dsdy, dtdy = q.dtdy;
                const TexInfo& ti = info[tex];
                if (args.exact_lod && ti.width > 0)
                    exact_derivs(ti, q, dsdx, dtdx, dsdy, dtdy);
                TextureOpt opt = base;  // texture() rewrites the wrap modes it is given
                float* r       = &results[i * 4];
                float* ds      = want_derivs ? &derivs[i * 8] : nullptr;
                float* dt      = want_derivs ? &derivs[i * 8 + 4] : nullptr;
                if (!ts->texture(handles[tex], pt, opt, q.s, q.t, dsdx, dtdx, dsdy, dtdy, 4,
                                 r, ds, dt)) {
                    if (failures.fetch_add(1) == 0) {
                        std::lock_guard<std::mutex> lock(err_mutex);
                        first_error = ts->geterror();
                    }
                }
                auto map = [&](float* v, float one) {
                    switch (ti.map) {
                    case Map::Rgba: break;
                    case Map::Rgb: v[3] = one; break;
                    case Map::Two: v[2] = v[0], v[3] = one; break;
                    case Map::Gray: v[0] = v[1] = v[2] = v[ti.gray], v[3] = one; break;
                    }
                };
                map(r, 1.0f);
                if (want_derivs) {
                    map(ds, 0.0f);
                    map(dt, 0.0f);
                }
            }
        }
    };

    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int i = 0; i < args.threads; ++i)
        pool.emplace_back(worker, i);
    for (auto& t : pool)
        t.join();
    double seconds
        = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    double checksum = 0.0;
    for (size_t i = 0; i < nq; ++i) {
        const float* r = &results[i * 4];
        checksum += double(r[0]) + double(r[1]) + double(r[2]) + double(r[3]);
    }

    OIIO::ImageCache* ic = ts->imagecache();
    long long bytes_read = 0, mem_used = 0;
    int tiles_created = 0, tiles_peak = 0, tiles_current = 0, files = 0;
    ic->getattribute("stat:bytes_read", TypeDesc::INT64, &bytes_read);
    ic->getattribute("stat:cache_memory_used", TypeDesc::INT64, &mem_used);
    ic->getattribute("stat:tiles_created", TypeDesc::INT, &tiles_created);
    ic->getattribute("stat:tiles_peak", TypeDesc::INT, &tiles_peak);
    ic->getattribute("stat:tiles_current", TypeDesc::INT, &tiles_current);
    ic->getattribute("stat:open_files_created", TypeDesc::INT, &files);
    // Every tile of these files takes the same memory (a whole tile plus OIIO's SIMD pad).
    double bytes_per_tile = tiles_current > 0 ? double(mem_used) / tiles_current : 0.0;
    long long peak = (long long)std::llround(bytes_per_tile * tiles_peak);

    if (!args.out.empty()) {
        std::FILE* f = std::fopen(args.out.c_str(), "wb");
        if (!f || std::fwrite(results.data(), sizeof(float), results.size(), f)
                      != results.size()
            || std::fclose(f) != 0)
            die(args.out + ": cannot write the results: " + std::strerror(errno));
    }
    if (want_derivs) {
        std::FILE* f = std::fopen(args.derivs.c_str(), "wb");
        if (!f || std::fwrite(derivs.data(), sizeof(float), derivs.size(), f) != derivs.size()
            || std::fclose(f) != 0)
            die(args.derivs + ": cannot write the derivatives: " + std::strerror(errno));
    }
    if (failures.load() > 0)
        std::fprintf(stderr, "oiio-replay: %llu lookups failed; the first: %s\n",
                     (unsigned long long)failures.load(), first_error.c_str());

    double rate = seconds > 0.0 ? double(nq) / seconds : 0.0;
    if (args.json) {
        std::printf("{\"system\":\"oiio\",\"oiio_version\":\"%s\",\"mode\":\"texturesystem\","
                    "\"lod\":\"%s\",\"threads\":%d,\"cache_mb\":%g,\"lookups\":%zu,"
                    "\"seconds\":%.6f,\"lookups_per_s\":%.1f,\"tiles_read\":%d,"
                    "\"bytes_read\":%lld,\"peak_resident_bytes\":%lld,"
                    "\"cache_memory_used\":%lld,\"tiles_peak\":%d,\"files_opened\":%d,"
                    "\"failed_lookups\":%llu,\"checksum\":%.17g}\n",
                    OIIO_VERSION_STRING, args.exact_lod ? "exact" : "native", args.threads,
                    args.cache, nq, seconds, rate, tiles_created, bytes_read, peak,
                    mem_used, tiles_peak, files, (unsigned long long)failures.load(),
                    checksum);
    } else {
        std::printf("OpenImageIO %s TextureSystem, %d thread(s), cache %g MB, lod %s\n",
                    OIIO_VERSION_STRING, args.threads, args.cache,
                    args.exact_lod ? "exact" : "native");
        std::printf("  %zu lookups in %.3f s: %.3f M lookups/s\n", nq, seconds, rate / 1e6);
        std::printf("  tiles read %d, bytes read %.1f MiB, peak %.1f MiB (%d tiles)\n",
                    tiles_created, bytes_read / 1048576.0, peak / 1048576.0, tiles_peak);
        std::printf("  files opened %d, checksum %.17g\n", files, checksum);
    }
    for (TextureSystem::Perthread* pt : perthread)
        ts->destroy_thread_info(pt);
    TextureSystem::destroy(ts, true);
    return failures.load() > 0 ? 3 : 0;
}
