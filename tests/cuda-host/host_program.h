/*
 * What the host programs of this directory share: failing with a message, reading their
 * whole input file, a cursor over it (little-endian, as the tests write it), and a device
 * context over host arrays. Each program includes this after the shim and the device
 * headers, having defined `kProgram`, its name for messages.
 */
#ifndef DTEX_HOST_PROGRAM_H
#define DTEX_HOST_PROGRAM_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

#endif  // DTEX_HOST_PROGRAM_H
