// ptex-replay: replay a `.dtxp` Ptex query trace with the reference Ptex library (wdas/ptex),
// as shared/bench/QUERIES.md ("Ptex query traces") specifies, so that its throughput, block
// reads and results can be set beside `demandtex bench replay` on the same files.
//
//   ptex-replay TRACE --textures DIR [--threads T] [--cache-mb N] [--filter point|bilinear|box|gaussian|bicubic|bspline|catmullrom|mitchell]
//               [--out FILE] [--json] [--max-files N] [--hold chunk|query]
//
// Build: scripts/build-ptex-replay.sh with PTEX_ROOT set to an install of the reference
// library, i.e.
//   g++ -O2 -std=c++17 -pthread replay.cpp -I$PTEX_ROOT/include -L$PTEX_ROOT/lib
//       -Wl,-rpath,$PTEX_ROOT/lib -lPtex -lz
// Written against Ptex v2.4.3. The library is not fetched or built by this repository: build
// it by hand from https://github.com/wdas/ptex (CMake, Release) and install it anywhere.
//
// Lookups. One PtexCache for the whole replay: PtexCache::create(--max-files (default 100),
// --cache-mb << 20 (0: unlimited), premultiply = false, a counting input handler). One
// PtexFilter per (thread, texture), PtexFilter::Options(the --filter type, lerp = true,
// sharpness = 0, noedgeblend = false), evaluated as
//   eval(result, 0, min(channels, 4), face, u, v, dudx, dvdx, dudy, dvdy)   (width 1, blur 0)
// i.e. the trace's (dudx, dvdx) is Ptex's (uw1, vw1) and (dudy, dvdy) its (uw2, vw2). The
// queries are cut into chunks of 4096 that the threads take in order from an atomic counter.
//
// Texture handles. With `--hold chunk` (the default) a thread gets a texture with
// cache->get() at its first query for that texture in a chunk and releases every texture it
// got at the end of the chunk; with `--hold query` it gets and releases the texture around
// every lookup. PtexCache only accounts memory and block reads, and only evicts (whole files'
// data, and only of files no thread holds at that moment), when textures are released: a
// handle held for the whole replay would make --cache-mb meaningless. When every chunk of
// every thread uses every file (an incoherent trace, T > 1), eviction rarely finds a file
// nobody holds and the cache can grow past --cache-mb; `--hold query` leaves it more chances.
// The first get() of a file opens it, inside the timed replay (with T > 1, threads that ask
// for a new file at the same moment may each open it; the library keeps one and closes the
// others, and both opens are counted). A released texture stays in the cache's table, so the
// same PtexTexture* comes back on the next get() and the thread's filter for it is kept.
//
// Validation (not timed). Before the replay every texture the queries use is opened once
// directly (PtexTexture::open, not through the cache or the counting handler) to read its
// face count and channel count, and released; a query whose face is out of range
// is an error before anything is timed. The trace itself is checked on reading: magic,
// version, truncation, path lengths, texture indices, trailing bytes, u and v in [0, 1] (the
// library crashes on a NaN u or v), finite footprint vectors.
//
// What the filters do in Ptex 2.4.3 (src/ptex/PtexFilters.cpp, PtexSeparableFilter.cpp):
// `lerp` only changes the Gaussian and cubic filters; point, bilinear and box ignore it.
// point: the level-0 texel (clamp(int(u·resu)), clamp(int(v·resv))), footprint ignored.
// bilinear and box: the footprint is the bounding box (|uw1| + |uw2|, |vw1| + |vw2|), clamped
// to [one level-0 texel, 1]; one resolution per axis, ulog2 = ceil(log2(1 / uw)) (from the
// float's exponent), so possibly an anisotropic reduction, with no blend between levels;
// bilinear: a 2 × 2 kernel at that resolution; box: the box over the footprint. Both are
// split across face edges through the adjacency (noedgeblend off). gaussian, bicubic
// (sharpness 0), bspline, catmullrom, mitchell: width-4 kernels at the footprint's level,
// blended towards the next lower one (lerp). On triangle meshes every
// type but point is the triangle filter. premultiply = false: level-0 data are read as
// stored (unpremultiplied), the file's reductions as stored (premultiplied by the writer).
//
// Channels. Ptex converts uint8 / uint16 / half to float (uint8 × 1/255, uint16 × 1/65535).
// QUERIES.md's rule gives RGBA: 1 channel (c, c, c, 1); 2 channels (c0, c0, c0, 1);
// 3 channels (r, g, b, 1); 4 or more: the first four as they are.
//
// Figures (one JSON line with --json): lookups, seconds (the replay itself: thread start,
// get/release, lazy opens, lookups), lookups_per_s, tiles_read (PtexCache::Stats::blockReads:
// the library counts one per seek before a read, i.e. per face block, tile, tile header,
// level header or other section it reads, re-reads after eviction counted), bytes_read and
// file_bytes_read (the same value: bytes the library read from files through the input
// handler — compressed file bytes, not decoded texels), files_opened (opens through the
// handler, re-opens after the open-file limit closed a file counted), peak_resident_bytes
// (Stats::peakMemUsed: the cache's own accounting, texel data plus per-file tables, updated
// when released textures are processed in batches of 50), checksum (f64 sum of r+g+b+a over
// all queries in query order). PtexCache accounts released textures in batches; after the
// timed replay the pending batch is flushed (gets and releases of an open texture, no I/O) so
// that the figures are complete. Also: ptex_version, filter, hold, threads, cache_mb,
// max_files, mem_used (at the end), peak_files_open, file_reopens (PtexCache's own count),
// failed_lookups (a file the library gave up on; its results stay 0 and the exit status is 3).

#include <Ptexture.h>
#include <PtexVersion.h>

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
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kChunk      = 4096;
constexpr size_t kQueryBytes = 32;
constexpr uint32_t kMaxTex   = 1u << 20;
constexpr uint32_t kMaxPath  = 1u << 16;
constexpr int kMruBatch      = 50;  // PtexReaderCache::numMruFiles in Ptex 2.4
constexpr size_t kIoBuffer   = 8192;  // Ptex's IBuffSize, as its default input handler

struct Query {
    uint32_t texture, face;
    float u, v, dudx, dvdx, dudy, dvdy;
};

struct Trace {
    std::vector<std::string> textures;
    std::vector<Query> queries;
};

[[noreturn]] void die(const std::string& msg, int code = 1)
{
    std::fprintf(stderr, "ptex-replay: %s\n", msg.c_str());
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
    std::streamoff size = in.tellg();
    if (size < 0)
        die(path + ": cannot read the trace");
    std::vector<unsigned char> b(static_cast<size_t>(size));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(b.data()), std::streamsize(b.size())))
        die(path + ": cannot read the trace");
    size_t pos = 0;
    auto need  = [&](size_t n, const std::string& what) {
        if (b.size() - pos < n)
            die("truncated Ptex query trace: " + what + " at byte " + std::to_string(pos)
                + " needs " + std::to_string(n) + " bytes, the file has "
                + std::to_string(b.size() - pos) + " left");
    };
    need(4, "the magic number");
    if (std::memcmp(b.data(), "DTXP", 4) != 0)
        die("not a Ptex query trace (no DTXP magic): " + path);
    pos = 4;
    need(4, "the version");
    uint32_t version = le32(&b[pos]);
    pos += 4;
    if (version != 1)
        die("Ptex query trace version " + std::to_string(version) + " (only 1 is supported)");
    need(4, "the texture count");
    uint32_t ntex = le32(&b[pos]);
    pos += 4;
    if (ntex > kMaxTex)
        die("corrupt Ptex query trace: " + std::to_string(ntex) + " textures");
    Trace tr;
    for (uint32_t i = 0; i < ntex; ++i) {
        need(4, "the path length of texture " + std::to_string(i));
        uint32_t len = le32(&b[pos]);
        pos += 4;
        if (len == 0 || len > kMaxPath)
            die("Ptex query trace texture " + std::to_string(i) + ": a path of "
                + std::to_string(len) + " bytes");
        need(len, "the path of texture " + std::to_string(i));
        std::string p(reinterpret_cast<const char*>(&b[pos]), len);
        if (p.find('\0') != std::string::npos)
            die("Ptex query trace texture " + std::to_string(i) + ": a NUL byte in its path");
        tr.textures.push_back(std::move(p));
        pos += len;
    }
    need(8, "the query count");
    uint64_t nq = uint64_t(le32(&b[pos])) | uint64_t(le32(&b[pos + 4])) << 32;
    pos += 8;
    uint64_t avail = b.size() - pos;
    if (nq > avail / kQueryBytes)
        die("truncated Ptex query trace: " + std::to_string(nq) + " queries declared, "
            + std::to_string(avail / kQueryBytes) + " present");
    if (nq * kQueryBytes != avail)
        die("corrupt Ptex query trace: " + std::to_string(avail - nq * kQueryBytes)
            + " bytes after the last query");
    tr.queries.resize(nq);
    for (uint64_t i = 0; i < nq; ++i, pos += kQueryBytes) {
        const unsigned char* p = &b[pos];
        Query q{ le32(p),       le32(p + 4),   lef32(p + 8),  lef32(p + 12),
                 lef32(p + 16), lef32(p + 20), lef32(p + 24), lef32(p + 28) };
        if (q.texture >= ntex)
            die("query " + std::to_string(i) + " names texture " + std::to_string(q.texture)
                + ", but the trace lists " + std::to_string(ntex) + " texture(s)");
        // QUERIES.md: u, v in [0, 1]. The library indexes out of bounds on a NaN u or v.
        if (!(q.u >= 0.0f && q.u <= 1.0f && q.v >= 0.0f && q.v <= 1.0f))
            die("query " + std::to_string(i) + ": (u, v) = (" + std::to_string(q.u) + ", "
                + std::to_string(q.v) + ") is not in [0, 1]");
        if (!std::isfinite(q.dudx) || !std::isfinite(q.dvdx) || !std::isfinite(q.dudy)
            || !std::isfinite(q.dvdy))
            die("query " + std::to_string(i) + ": a footprint vector that is not finite");
        tr.queries[i] = q;
    }
    return tr;
}

// The library's reads, through stdio with an 8 KiB buffer as its default handler does,
// counting what it reads and how often it opens a file.
class CountingInput : public PtexInputHandler {
public:
    std::atomic<uint64_t> bytes{ 0 };
    std::atomic<uint64_t> opens{ 0 };

    ~CountingInput() override = default;

    Handle open(const char* path) override
    {
        std::unique_ptr<File> f(new File);
        f->fp = std::fopen(path, "rb");
        if (!f->fp) {
            last_errno() = errno;
            return nullptr;
        }
        std::setvbuf(f->fp, f->buf, _IOFBF, kIoBuffer);
        opens.fetch_add(1, std::memory_order_relaxed);
        return f.release();
    }

    void seek(Handle handle, int64_t pos) override
    {
        if (fseeko(static_cast<File*>(handle)->fp, off_t(pos), SEEK_SET) != 0)
            last_errno() = errno;
    }

    size_t read(void* buffer, size_t size, Handle handle) override
    {
        File* f  = static_cast<File*>(handle);
        size_t n = std::fread(buffer, 1, size, f->fp);
        bytes.fetch_add(n, std::memory_order_relaxed);
        if (n < size)
            last_errno() = std::ferror(f->fp) ? errno : 0;
        return n;
    }

    bool close(Handle handle) override
    {
        File* f = static_cast<File*>(handle);
        bool ok = f && f->fp && std::fclose(f->fp) == 0;
        if (!ok)
            last_errno() = errno;
        delete f;
        return ok;
    }

    const char* lastError() override
    {
        int e = last_errno();
        return e ? std::strerror(e) : "unexpected end of file";
    }

private:
    struct File {
        std::FILE* fp = nullptr;
        char buf[kIoBuffer];
    };
    static int& last_errno()
    {
        thread_local int e = 0;
        return e;
    }
};

// A Ptex error message on one line (the library separates its parts with newlines).
std::string one_line(const char* msg)
{
    std::string s(msg);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
        s.pop_back();
    for (size_t i; (i = s.find('\n')) != std::string::npos;)
        s.replace(i, 1, ": ");
    return s;
}

// The filter type named on the command line.
PtexFilter::FilterType parse_filter(const std::string& s)
{
    static const struct {
        const char* name;
        PtexFilter::FilterType type;
    } filters[] = {
        {"point", PtexFilter::f_point},           {"bilinear", PtexFilter::f_bilinear},
        {"box", PtexFilter::f_box},               {"gaussian", PtexFilter::f_gaussian},
        {"bicubic", PtexFilter::f_bicubic},       {"bspline", PtexFilter::f_bspline},
        {"catmullrom", PtexFilter::f_catmullrom}, {"mitchell", PtexFilter::f_mitchell},
    };
    for (const auto& f : filters)
        if (s == f.name)
            return f.type;
    die("--filter " + s + " (point, bilinear, box, gaussian, bicubic, bspline, catmullrom or mitchell)", 2);
}

struct TexInfo {
    int faces    = 0;
    int channels = 0;  // evaluated: min(numChannels, 4)
};

struct Args {
    std::string trace, dir, out, filter = "bilinear";
    bool hold_query = false;  // --hold query: get/release around each lookup
    int threads     = 2;
    long long cache = 1024;  // MiB; 0: unlimited
    int max_files   = 100;
    bool json       = false;
};

const char* kUsage = "usage: ptex-replay TRACE --textures DIR [--threads T] [--cache-mb N] "
                     "[--filter point|bilinear|box|gaussian|bicubic|bspline|catmullrom|mitchell] [--out FILE] [--json] [--max-files N] "
                     "[--hold chunk|query]";

long long parse_int(const std::string& opt, const std::string& v, long long lo, long long hi)
{
    errno       = 0;
    char* end   = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
        die(opt + " " + v + " (an integer in " + std::to_string(lo) + "..="
                + std::to_string(hi) + ")",
            2);
    return x;
}

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
            a.threads = int(parse_int(s, value(i), 1, 1024));
        else if (s == "--cache-mb")
            a.cache = parse_int(s, value(i), 0, 1ll << 30);
        else if (s == "--max-files")
            a.max_files = int(parse_int(s, value(i), 1, 1 << 20));
        else if (s == "--filter") {
            a.filter = value(i);
            parse_filter(a.filter);
        } else if (s == "--hold") {
            std::string v = value(i);
            if (v != "chunk" && v != "query")
                die("--hold " + v + " (chunk or query)", 2);
            a.hold_query = v == "query";
        } else if (s == "--out")
            a.out = value(i);
        else if (s == "--json")
            a.json = true;
        else if (s == "-h" || s == "--help") {
            std::printf("%s\n", kUsage);
            std::exit(0);
        } else if (!s.empty() && s[0] == '-')
            die("unknown option " + s, 2);
        else if (a.trace.empty())
            a.trace = s;
        else
            die("unexpected argument " + s, 2);
    }
    if (a.trace.empty() || a.dir.empty())
        die(kUsage, 2);
    return a;
}

}  // namespace

int main(int argc, char** argv)
{
    Args args = parse_args(argc, argv);
    Trace tr  = read_trace(args.trace);
    const size_t ntex = tr.textures.size();
    const size_t nq   = tr.queries.size();
    std::vector<std::string> paths;
    for (auto& p : tr.textures)
        paths.push_back(args.dir + "/" + p);

    // Untimed: open each texture the queries use once, directly, for its face and channel
    // counts; then check every query's face.
    std::vector<char> used(ntex, 0);
    for (const Query& q : tr.queries)
        used[q.texture] = 1;
    std::vector<TexInfo> info(ntex);
    for (size_t t = 0; t < ntex; ++t) {
        if (!used[t])
            continue;
        Ptex::String err;
        PtexTexture* tx = PtexTexture::open(paths[t].c_str(), err, false);
        if (!tx)
            die("texture " + std::to_string(t) + " (" + paths[t] + "): " + one_line(err.c_str()));
        info[t].faces    = tx->numFaces();
        info[t].channels = std::min(tx->numChannels(), 4);
        tx->release();
        if (info[t].channels < 1)
            die("texture " + std::to_string(t) + " (" + paths[t] + ") has no channels");
    }
    for (size_t i = 0; i < nq; ++i) {
        const Query& q = tr.queries[i];
        if (q.face >= uint32_t(info[q.texture].faces))
            die("query " + std::to_string(i) + " names face " + std::to_string(q.face)
                + " of texture " + std::to_string(q.texture) + " (" + tr.textures[q.texture]
                + "), which has " + std::to_string(info[q.texture].faces) + " face(s)");
    }

    const PtexFilter::FilterType ftype = parse_filter(args.filter);
    const PtexFilter::Options opts(ftype, /*lerp*/ true, /*sharpness*/ 0.0f,
                                   /*noedgeblend*/ false);
    CountingInput io;
    PtexCache* cache = PtexCache::create(args.max_files, size_t(args.cache) << 20,
                                         /*premultiply*/ false, &io);

    std::vector<float> results(nq * 4, 0.0f);
    std::atomic<size_t> next_chunk{ 0 };
    std::atomic<uint64_t> failures{ 0 };
    std::mutex err_mutex;
    std::string first_error;
    const size_t nchunks = (nq + kChunk - 1) / kChunk;
    auto fail = [&](const std::string& what) {
        if (failures.fetch_add(1) == 0) {
            std::lock_guard<std::mutex> lock(err_mutex);
            first_error = what;
        }
    };

    auto worker = [&]() {
        std::vector<PtexFilter*> filters(ntex, nullptr);
        std::vector<PtexTexture*> filter_tex(ntex, nullptr);  // what each filter was made on
        std::vector<PtexTexture*> held(ntex, nullptr);        // got in this chunk
        std::vector<uint32_t> held_list;
        for (;;) {
            size_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
            if (c >= nchunks)
                break;
            size_t end = std::min(nq, (c + 1) * kChunk);
            for (size_t i = c * kChunk; i < end; ++i) {
                const Query& q = tr.queries[i];
                uint32_t t     = q.texture;
                float* r       = &results[i * 4];
                if (!held[t]) {
                    Ptex::String err;
                    PtexTexture* tx = cache->get(paths[t].c_str(), err);
                    if (!tx) {
                        fail(paths[t] + ": "
                             + (err.empty() ? "unusable after an earlier error (see above)"
                                           : one_line(err.c_str())));
                        continue;  // the result stays 0
                    }
                    held[t] = tx;
                    held_list.push_back(t);
                    if (filter_tex[t] != tx) {
                        if (filters[t])
                            filters[t]->release();
                        filters[t]    = PtexFilter::getFilter(tx, opts);
                        filter_tex[t] = tx;
                    }
                }
                const int nch = info[t].channels;
                float v[4]    = { 0.0f, 0.0f, 0.0f, 0.0f };
                filters[t]->eval(v, 0, nch, int(q.face), q.u, q.v, q.dudx, q.dvdx, q.dudy,
                                 q.dvdy);
                switch (nch) {
                case 1:
                case 2: r[0] = r[1] = r[2] = v[0], r[3] = 1.0f; break;
                case 3: r[0] = v[0], r[1] = v[1], r[2] = v[2], r[3] = 1.0f; break;
                default: r[0] = v[0], r[1] = v[1], r[2] = v[2], r[3] = v[3]; break;
                }
                if (args.hold_query) {
                    held[t]->release();
                    held[t] = nullptr;
                    held_list.clear();
                }
            }
            for (uint32_t t : held_list) {
                held[t]->release();
                held[t] = nullptr;
            }
            held_list.clear();
        }
        for (PtexFilter* f : filters)
            if (f)
                f->release();
    };

    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int i = 0; i < args.threads; ++i)
        pool.emplace_back(worker);
    for (auto& t : pool)
        t.join();
    double seconds
        = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // Flush PtexCache's batch of released textures (it accounts them 50 at a time) so the
    // statistics include the replay's last chunks: get and release an open texture.
    for (size_t t = 0; t < ntex; ++t) {
        if (!used[t])
            continue;
        Ptex::String err;
        bool flushed = true;
        for (int k = 0; k <= kMruBatch && flushed; ++k) {
            PtexTexture* tx = cache->get(paths[t].c_str(), err);
            if (tx)
                tx->release();
            else
                flushed = false;
        }
        if (flushed)
            break;
    }
    PtexCache::Stats stats;
    cache->getStats(stats);

    double checksum = 0.0;
    for (size_t i = 0; i < nq; ++i) {
        const float* r = &results[i * 4];
        checksum += double(r[0]) + double(r[1]) + double(r[2]) + double(r[3]);
    }

    if (!args.out.empty()) {
        std::FILE* f = std::fopen(args.out.c_str(), "wb");
        if (!f || std::fwrite(results.data(), sizeof(float), results.size(), f)
                      != results.size()
            || std::fclose(f) != 0)
            die(args.out + ": cannot write the results: " + std::strerror(errno));
    }
    if (failures.load() > 0)
        std::fprintf(stderr, "ptex-replay: %llu lookups failed; the first: %s\n",
                     (unsigned long long)failures.load(), first_error.c_str());

    const unsigned long long bytes = io.bytes.load(), opens = io.opens.load();
    double rate = seconds > 0.0 ? double(nq) / seconds : 0.0;
    if (args.json) {
        std::printf("{\"system\":\"ptex-reference\",\"ptex_version\":\"%d.%d\",\"filter\":\"%s\","
                    "\"hold\":\"%s\",\"threads\":%d,\"cache_mb\":%lld,\"max_files\":%d,"
                    "\"lookups\":%zu,\"seconds\":%.6f,\"lookups_per_s\":%.1f,\"tiles_read\":%llu,"
                    "\"bytes_read\":%llu,\"file_bytes_read\":%llu,\"files_opened\":%llu,"
                    "\"peak_resident_bytes\":%llu,\"mem_used\":%llu,\"peak_files_open\":%llu,"
                    "\"file_reopens\":%llu,\"failed_lookups\":%llu,\"checksum\":%.17g}\n",
                    PtexLibraryMajorVersion, PtexLibraryMinorVersion, args.filter.c_str(),
                    args.hold_query ? "query" : "chunk", args.threads, args.cache,
                    args.max_files, nq, seconds, rate,
                    (unsigned long long)stats.blockReads, bytes, bytes, opens,
                    (unsigned long long)stats.peakMemUsed, (unsigned long long)stats.memUsed,
                    (unsigned long long)stats.peakFilesOpen,
                    (unsigned long long)stats.fileReopens,
                    (unsigned long long)failures.load(), checksum);
    } else {
        std::printf("Ptex %d.%d reference PtexCache/PtexFilter (%s), %d thread(s), cache %lld MiB"
                    "%s, at most %d open files, hold per %s\n",
                    PtexLibraryMajorVersion, PtexLibraryMinorVersion, args.filter.c_str(),
                    args.threads, args.cache, args.cache == 0 ? " (unlimited)" : "",
                    args.max_files, args.hold_query ? "query" : "chunk");
        std::printf("  %zu lookups in %.3f s: %.3f M lookups/s\n", nq, seconds, rate / 1e6);
        std::printf("  blocks read %llu, file bytes read %.1f MiB, peak %.1f MiB\n",
                    (unsigned long long)stats.blockReads, bytes / 1048576.0,
                    stats.peakMemUsed / 1048576.0);
        std::printf("  files opened %llu (re-opens %llu), checksum %.17g\n", opens,
                    (unsigned long long)stats.fileReopens, checksum);
    }
    cache->release();
    return failures.load() > 0 ? 3 : 0;
}
