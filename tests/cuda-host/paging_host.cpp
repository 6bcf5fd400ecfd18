/*
 * Host run of the paging kernels (cuda/kernels/paging.cu: dtex_pull_requests,
 * dtex_collect_stale, dtex_invalidate_pages, dtex_push_mappings, dtex_clear_references),
 * compiled by a host C++ compiler after dtex_host_shim.h, each launched over a grid of
 * one-thread blocks run one after the other (`dtexHostLaunch`). Driven by
 * cuda/tests/host_paging.rs:
 *
 *   c++ -std=c++17 -ffp-contract=off -O1 -Wno-unknown-pragmas -I include \
 *       -I tests/cuda-host tests/cuda-host/paging_host.cpp -o paging_host
 *   paging_host input.bin output.bin
 *
 * The input (little-endian; written by host_paging.rs) is a page table's arrays and one
 * cycle's work:
 *
 *   "DTXPAG01"
 *   u32 x 9   num_pages page_table_entries launch_num end_page lru_threshold blocks
 *             requested_capacity stale_capacity collect_min_age
 *   u32 n, n x 4 B    reference bits      u32 n, n x 4 B    residence bits
 *   u32 n, n x 4 B    LRU nibbles         u32 n, n x 8 B    page-table entries
 *   u32 n, n x 16 B   mappings to push (DtexPageMapping)
 *   u32 n, n x 4 B    pages to invalidate
 *
 * It runs, in order: the pull (`end_page`, `lru_threshold`, stale ages and the age
 * histogram); `dtex_collect_stale` (`collect_min_age`, into fresh lists); the
 * invalidations; the pushes; `dtex_clear_references` (`end_page`), and writes:
 *
 *   "DTXPOUT1"
 *   pull:     u32 requests, u32 n, n x u32 requested pages (n = min(requests, capacity)),
 *             u32 stale, u32 n, n x (u32 page, u32 age), u32 x 16 stale age histogram,
 *             u32 n, n x u32 LRU words after the pull
 *   collect:  u32 stale, u32 n, n x (u32 page, u32 age)
 *   end:      u32 n, n x u32 residence words; u32 n, n x u32 reference words;
 *             u32 n, n x u32 LRU words; u32 n, n x u64 entries
 */
#include "dtex_host_shim.h"


#include "../../cuda/kernels/paging.cu"

/// This program's name, for `fail`.
static constexpr const char* kProgram = "paging_host";
#include "host_program.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

static_assert(sizeof(DtexPageMapping) == 16, "DtexPageMapping");

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 3)
        fail("usage: paging_host INPUT OUTPUT");
    Reader in{readFile(argv[1])};
    if (memcmp(in.take(8, "the magic"), "DTXPAG01", 8) != 0)
        fail("not a paging_host input");
    const uint32_t numPages = in.u32("the header"), entries = in.u32("the header");
    const uint32_t launchNum = in.u32("the header"), endPage = in.u32("the header");
    const uint32_t lruThreshold = in.u32("the header"), blocks = in.u32("the header");
    const uint32_t requestedCapacity = in.u32("the header");
    const uint32_t staleCapacity = in.u32("the header"), minAge = in.u32("the header");
    auto reference = in.array<uint32_t>("the reference bits");
    auto residence = in.array<uint32_t>("the residence bits");
    auto lru = in.array<uint32_t>("the LRU nibbles");
    auto table = in.array<uint64_t>("the entries");
    auto mappings = in.array<DtexPageMapping>("the mappings");
    auto invalidated = in.array<uint32_t>("the invalidations");
    if (in.at != in.bytes.size())
        fail("bytes after the invalidations");
    const size_t words = (numPages + 31u) / 32u;
    if (reference.size() != words || residence.size() != words ||
        lru.size() != (numPages + 7u) / 8u || table.size() != entries || blocks == 0u)
        fail("the arrays do not match the page space");

    std::vector<uint32_t> requested(requestedCapacity), stale(staleCapacity);
    std::vector<uint8_t> staleAges(staleCapacity);
    std::vector<uint32_t> lengths(DTEX_ARRAY_LENGTHS, 0u), histogram(16, 0u);
    DtexDeviceContext ctx = hostContext(table, reference, residence, lru, lengths, numPages, 0u);
    ctx.requested_pages = requested.data();
    ctx.stale_pages = stale.data();
    ctx.filled_pages = mappings.data();
    ctx.invalidated_pages = invalidated.data();
    ctx.requested_capacity = requestedCapacity;
    ctx.stale_capacity = staleCapacity;
    ctx.filled_capacity = static_cast<uint32_t>(mappings.size());
    ctx.invalidated_capacity = static_cast<uint32_t>(invalidated.size());
    ctx.launch_num = launchNum;

    std::vector<uint32_t> out;
    auto list = [&out](const uint32_t* p, size_t n) {
        out.push_back(static_cast<uint32_t>(n));
        out.insert(out.end(), p, p + n);
    };
    auto staleList = [&](uint32_t count) {
        const uint32_t n = count < staleCapacity ? count : staleCapacity;
        out.push_back(count);
        out.push_back(n);
        for (uint32_t i = 0; i < n; ++i) {
            out.push_back(stale[i]);
            out.push_back(staleAges[i]);
        }
    };

    dtexHostLaunch(blocks, dtex_pull_requests, ctx, endPage, lruThreshold, staleAges.data(),
                   histogram.data());
    const uint32_t requests = lengths[DTEX_ARRAY_LENGTH_REQUESTS];
    out.push_back(requests);
    list(requested.data(), requests < requestedCapacity ? requests : requestedCapacity);
    staleList(lengths[DTEX_ARRAY_LENGTH_STALE]);
    out.insert(out.end(), histogram.begin(), histogram.end());
    list(lru.data(), lru.size());

    lengths.assign(DTEX_ARRAY_LENGTHS, 0u);
    dtexHostLaunch(blocks, dtex_collect_stale, ctx, endPage, minAge, staleAges.data());
    staleList(lengths[DTEX_ARRAY_LENGTH_STALE]);

    dtexHostLaunch(blocks, dtex_invalidate_pages, ctx, ctx.invalidated_capacity);
    dtexHostLaunch(blocks, dtex_push_mappings, ctx, ctx.filled_capacity);
    dtexHostLaunch(blocks, dtex_clear_references, ctx, endPage);
    list(residence.data(), residence.size());
    list(reference.data(), reference.size());
    list(lru.data(), lru.size());
    out.push_back(static_cast<uint32_t>(table.size()));
    for (const uint64_t e : table) {
        out.push_back(static_cast<uint32_t>(e));
        out.push_back(static_cast<uint32_t>(e >> 32));
    }

    FILE* f = fopen(argv[2], "wb");
    if (f == nullptr)
        fail(std::string("cannot create ") + argv[2]);
    if (fwrite("DTXPOUT1", 1, 8, f) != 8 || fwrite(out.data(), 4, out.size(), f) != out.size() ||
        fclose(f) != 0)
        fail(std::string("cannot write ") + argv[2]);
    return 0;
}
