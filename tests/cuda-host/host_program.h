/*
 * What the host programs of this directory share: failing with a message, reading their
 * whole input file, a cursor over it (little-endian, as the tests write it), a device
 * context over host arrays, the reference bits each lookup sets, and the lookup programs'
 * output. Each program includes this after the shim and the device
 * headers, having defined `kProgram`, its name for messages.
 */
#ifndef DTEX_HOST_PROGRAM_H
#define DTEX_HOST_PROGRAM_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

/// Print `message` after the program's name and exit with status 2.
[[noreturn]] inline void fail(const std::string& message)
{
    fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
    exit(2);
}

/// A cursor over the input file.
struct Reader {
    std::vector<unsigned char> bytes;
    size_t at = 0;

    /// The next `n` bytes (fails past the end).
    const unsigned char* take(size_t n, const char* what)
    {
        if (n > bytes.size() - at)
            fail(std::string("input ends inside ") + what);
        const unsigned char* p = bytes.data() + at;
        at += n;
        return p;
    }
    uint32_t u32(const char* what)
    {
        uint32_t v;
        memcpy(&v, take(4, what), 4);
        return v;
    }
    /// A section: a u32 count, then `count * sizeof(T)` bytes.
    template <class T>
    std::vector<T> array(const char* what)
    {
        const uint32_t n = u32(what);
        std::vector<T> out(n);
        if (n != 0)
            memcpy(out.data(), take(static_cast<size_t>(n) * sizeof(T), what), n * sizeof(T));
        return out;
    }
};

/// The whole of file `path`.
inline std::vector<unsigned char> readFile(const char* path)
{
    FILE* f = fopen(path, "rb");
    if (f == nullptr)
        fail(std::string("cannot open ") + path);
    std::vector<unsigned char> out;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        out.insert(out.end(), buf, buf + n);
    fclose(f);
    return out;
}

/// A context over host arrays: `pageTable`'s entries, the reference, residence and LRU
/// bits of `numPages` pages, the counters `lengths`; texture ids below `maxTextures`; the
/// lists null, flags 0, no rejection.
inline DtexDeviceContext hostContext(std::vector<uint64_t>& pageTable,
                                     std::vector<uint32_t>& reference,
                                     std::vector<uint32_t>& residence, std::vector<uint32_t>& lru,
                                     std::vector<uint32_t>& lengths, uint32_t numPages,
                                     uint32_t maxTextures)
{
    if (reference.size() != (numPages + 31u) / 32u || residence.size() != reference.size() ||
        lru.size() != (numPages + 7u) / 8u || lengths.size() != DTEX_ARRAY_LENGTHS)
        fail("the arrays do not match the page space");
    DtexDeviceContext ctx{};
    ctx.page_table = pageTable.data();
    ctx.reference_bits = reference.data();
    ctx.residence_bits = residence.data();
    ctx.lru_table = lru.data();
    ctx.array_lengths = lengths.data();
    ctx.page_table_entries = static_cast<uint32_t>(pageTable.size());
    ctx.num_pages = numPages;
    ctx.max_textures = maxTextures;
    return ctx;
}

/// The reference bits each lookup sets. Only the words of the watched page ranges (the
/// pages lookups can touch: the page space is large) are cleared and read per lookup; a
/// bit set anywhere else is counted once, at the end (`stray`).
struct ReferenceWatch {
    /// Watched words, [from, to).
    std::vector<std::pair<size_t, size_t>> spans;
    /// The reference words at the start, and before the current lookup.
    std::vector<uint32_t> initial, before;

    explicit ReferenceWatch(const std::vector<uint32_t>& reference)
        : initial(reference), before(reference.size())
    {
    }

    /// Watch pages [first, end).
    void watch(uint64_t first, uint64_t end)
    {
        spans.emplace_back(static_cast<size_t>(first / 32u),
                           static_cast<size_t>((end + 31u) / 32u));
    }

    /// Before a lookup: clear the watched words (unless the bits `accumulate` over the
    /// lookups, as over a launch) and remember them.
    void begin(std::vector<uint32_t>& reference, bool accumulate)
    {
        for (const auto& [from, to] : spans) {
            if (!accumulate)
                std::fill(reference.begin() + from, reference.begin() + to, 0u);
            std::copy(reference.begin() + from, reference.begin() + to, before.begin() + from);
        }
    }

    /// After a lookup: the pages whose bits it set, ascending.
    std::vector<uint32_t> newlySet(const std::vector<uint32_t>& reference) const
    {
        std::vector<uint32_t> pages;
        for (const auto& [from, to] : spans)
            for (size_t w = from; w < to; ++w) {
                const uint32_t set = reference[w] & ~before[w];
                for (uint32_t b = 0; set != 0u && b < 32u; ++b)
                    if ((set >> b) & 1u)
                        pages.push_back(static_cast<uint32_t>(w * 32u + b));
            }
        std::sort(pages.begin(), pages.end());
        pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
        return pages;
    }

    /// After every lookup: the bits set outside the watched words (which no lookup should
    /// set). Puts the watched words back as they were at the start.
    uint32_t stray(std::vector<uint32_t>& reference) const
    {
        for (const auto& [from, to] : spans)
            std::copy(initial.begin() + from, initial.begin() + to, reference.begin() + from);
        uint32_t n = 0;
        for (size_t w = 0; w < reference.size(); ++w)
            n += static_cast<uint32_t>(__builtin_popcount(reference[w] ^ initial[w]));
        return n;
    }
};

/// Write a lookup program's output to `path`: `magic`, the lookup count, the stray
/// reference bits, then `results`.
inline void writeLookupOutput(const char* path, const char* magic, size_t lookups,
                              uint32_t stray, const std::vector<unsigned char>& results)
{
    FILE* out = fopen(path, "wb");
    if (out == nullptr)
        fail(std::string("cannot create ") + path);
    const uint32_t header[2] = {static_cast<uint32_t>(lookups), stray};
    if (fwrite(magic, 1, 8, out) != 8 || fwrite(header, 4, 2, out) != 2 ||
        fwrite(results.data(), 1, results.size(), out) != results.size() || fclose(out) != 0)
        fail(std::string("cannot write ") + path);
}

#endif  // DTEX_HOST_PROGRAM_H
