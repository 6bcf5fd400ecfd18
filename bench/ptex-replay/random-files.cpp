// ptex-random-files OUTDIR SEED NFILES NQUERIES
//
// Writes NFILES random .ptx files with the reference library's own writer (PtexWriter::open,
// then, for some, PtexWriter::edit incremental or applied) and a `.dtxp` trace of NQUERIES
// lookups over them (OUTDIR/rSEED.dtxp), for scripts/crosscheck-ptex.sh: files as another tool
// writes them, read and filtered by demandtex and by the reference, results compared.
//
// Random per file: mesh (a quad mesh from a grid of quads, triangles and hexagons, n-gons as
// subfaces, every polygon's vertex order rotated, sometimes closed into a torus; or a
// triangle mesh, a grid of triangle pairs, vertex order rotated), data type, 1-4 channels,
// alpha channel, border modes, edge filter mode, mip maps or not, small and large meta data.
// Per face: resolution (1x1 to 512x256; faces of 128 KiB or more are tiled by the writer),
// constant (writeConstantFace, or uniform data the writer detects), a uniform quarter (a
// constant tile of a tiled face), or a smooth pattern with noise. Edits rewrite a quarter of
// the faces at new resolutions. Queries: random faces, points inside and near edges and
// corners, footprints from none to larger than a face, anisotropic and rotated.
//
// Deterministic for a seed. Avoids what Ptex 2.4.3 itself gets wrong: an incremental edit of a
// file without meta data (its reader misplaces the edit records; ptex-format.md section 14) and
// black-border kernels beyond a boundary edge (it crashes).
//
// Built by scripts/build-ptex-replay.sh against PTEX_ROOT.
#include <Ptexture.h>
#include <PtexHalf.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <string>
#include <vector>

using namespace Ptex;

static uint64_t s_state;
static uint64_t next_u64()
{
    uint64_t z = (s_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rnd(int n) { return int(next_u64() % uint64_t(n)); }
static float frand() { return float(next_u64() >> 40) / float(1 << 24); }

struct Mesh {
    bool tri;
    int nfaces;
    std::vector<FaceInfo> faces;
};

// A quad mesh for Ptex from a control mesh on a W×H grid of cells (optionally closed into a
// torus): each cell a quad, two triangles, or with its right neighbour a hexagon; every
// polygon's vertex order starts at a random corner. Quads are one face each; an n-gon is n
// subfaces, as OpenSubdiv and ptex.us lay them out: subface i at vertex i, its edge 0 the half
// of polygon edge i next to vertex i, edge 1 towards subface i + 1, edge 2 towards subface
// i - 1, edge 3 the half of edge i - 1 next to vertex i. A quad next to an n-gon points at
// the subface at the quad's own edge's first vertex, whose edge 3 it meets.
static Mesh quad_mesh(int w, int h, bool wrap, bool nonquads)
{
    auto vid = [&](int x, int y) {
        if (wrap) return (y % h) * w + (x % w);
        return y * (w + 1) + x;
    };
    std::vector<std::vector<int>> polys;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int a = vid(x, y), b = vid(x + 1, y), c = vid(x + 1, y + 1), d = vid(x, y + 1);
            int kind = nonquads ? rnd(10) : 0;
            if (kind >= 8 && x + 1 < w && !(wrap && w < 3)) {
                int b2 = vid(x + 2, y), c2 = vid(x + 2, y + 1);
                polys.push_back({a, b, b2, c2, c, d});
                x++;
            } else if (kind >= 6) {
                if (rnd(2)) {
                    polys.push_back({a, b, c});
                    polys.push_back({a, c, d});
                } else {
                    polys.push_back({a, b, d});
                    polys.push_back({b, c, d});
                }
            } else
                polys.push_back({a, b, c, d});
        }
    for (auto& p : polys) {
        int r = rnd(int(p.size()));
        std::vector<int> q(p.size());
        for (size_t i = 0; i < p.size(); i++) q[i] = p[(i + r) % p.size()];
        p = q;
    }
    // Ptex face ids: a quad one, an n-gon n (its subfaces).
    std::vector<int> base(polys.size());
    int n = 0;
    for (size_t i = 0; i < polys.size(); i++) {
        base[i] = n;
        n += polys[i].size() == 4 ? 1 : int(polys[i].size());
    }
    // directed edge (from, to) -> (polygon, edge index)
    auto key = [](int a, int b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); };
    std::vector<std::pair<uint64_t, std::pair<int, int>>> edges;
    for (size_t p = 0; p < polys.size(); p++)
        for (size_t e = 0; e < polys[p].size(); e++)
            edges.push_back({key(polys[p][e], polys[p][(e + 1) % polys[p].size()]), {int(p), int(e)}});
    auto across = [&](int from, int to, int& q, int& j) {
        for (auto& e : edges)
            if (e.first == key(to, from)) {
                q = e.second.first;
                j = e.second.second;
                return true;
            }
        return false;
    };
    Mesh m;
    m.tri = false;
    m.nfaces = n;
    m.faces.resize(n);
    for (size_t p = 0; p < polys.size(); p++) {
        const auto& v = polys[p];
        int np = int(v.size());
        if (np == 4) {
            int af[4], ae[4];
            for (int k = 0; k < 4; k++) {
                int q, j;
                af[k] = -1;
                ae[k] = 0;
                if (!across(v[k], v[(k + 1) % 4], q, j)) continue;
                int nq = int(polys[q].size());
                if (nq == 4) af[k] = base[q], ae[k] = j;
                else af[k] = base[q] + (j + 1) % nq, ae[k] = 3;
            }
            m.faces[base[p]] = FaceInfo(Res(0, 0), af, ae);
            continue;
        }
        for (int i = 0; i < np; i++) {
            int af[4] = {-1, base[p] + (i + 1) % np, base[p] + (i + np - 1) % np, -1};
            int ae[4] = {0, 2, 1, 0};
            int q, j;
            if (across(v[i], v[(i + 1) % np], q, j)) {
                int nq = int(polys[q].size());
                if (nq == 4) af[0] = base[q], ae[0] = j;
                else af[0] = base[q] + (j + 1) % nq, ae[0] = 3;
            }
            if (across(v[(i + np - 1) % np], v[i], q, j)) {
                int nq = int(polys[q].size());
                if (nq == 4) af[3] = base[q], ae[3] = j;
                else af[3] = base[q] + j, ae[3] = 0;
            }
            m.faces[base[p] + i] = FaceInfo(Res(0, 0), af, ae, true);
        }
    }
    return m;
}

// A W×H grid of cells, each two triangles (A,B,C) and (A,C,D), vertex order rotated.
static Mesh tri_grid(int w, int h)
{
    Mesh m;
    m.tri = true;
    m.nfaces = w * h * 2;
    std::vector<int> rot(m.nfaces);
    for (int& r : rot) r = rnd(3);
    m.faces.resize(m.nfaces);
    // global edges: T0: 0 AB (down), 1 BC (right), 2 CA (diagonal); T1: 0 AC (diag), 1 CD (up), 2 DA (left)
    auto neighbour = [&](int x, int y, int t, int g, int& nf, int& ng) {
        nf = -1;
        ng = 0;
        if (t == 0) {
            if (g == 0) { if (y > 0) { nf = ((y - 1) * w + x) * 2 + 1; ng = 1; } }
            else if (g == 1) { if (x + 1 < w) { nf = (y * w + x + 1) * 2 + 1; ng = 2; } }
            else { nf = (y * w + x) * 2 + 1; ng = 0; }
        } else {
            if (g == 0) { nf = (y * w + x) * 2; ng = 2; }
            else if (g == 1) { if (y + 1 < h) { nf = ((y + 1) * w + x) * 2; ng = 0; } }
            else { if (x > 0) { nf = (y * w + x - 1) * 2; ng = 1; } }
        }
    };
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int t = 0; t < 2; t++) {
                int f = (y * w + x) * 2 + t;
                int af[4] = {-1, -1, -1, -1}, ae[4] = {0, 0, 0, 0};
                for (int e = 0; e < 3; e++) {
                    int g = (e + rot[f]) % 3, nf, ng;
                    neighbour(x, y, t, g, nf, ng);
                    if (nf < 0) continue;
                    af[e] = nf;
                    ae[e] = (ng - rot[nf] + 3) % 3;
                }
                m.faces[f] = FaceInfo(Res(0, 0), af, ae);
            }
    return m;
}

static void pattern(void* buf, DataType dt, int nch, int alpha, int ures, int vres, int fid,
                    int seed)
{
    int n = ures * vres;
    float a = frand() * 6, b = frand() * 6, c0 = frand();
    for (int i = 0; i < n; i++) {
        int u = i % ures, v = i / ures;
        float fu = (u + 0.5f) / ures, fv = (v + 0.5f) / vres;
        for (int c = 0; c < nch; c++) {
            float x = 0.5f + 0.4f * std::sin(a * fu + b * fv + c * 1.7f + fid + c0)
                      + 0.1f * (frand() - 0.5f);
            if (c == alpha) x = (seed & 1) ? frand() : std::fmod(fu + fv, 1.0f);
            if (x < 0) x = 0;
            if (x > 1) x = 1;
            switch (dt) {
            case dt_uint8: ((uint8_t*)buf)[i * nch + c] = uint8_t(x * 255 + 0.5f); break;
            case dt_uint16: ((uint16_t*)buf)[i * nch + c] = uint16_t(x * 65535 + 0.5f); break;
            case dt_half: ((PtexHalf*)buf)[i * nch + c] = PtexHalf(c == alpha ? x : x * 4 - 1); break;
            case dt_float: ((float*)buf)[i * nch + c] = c == alpha ? x : x * 8 - 2; break;
            }
        }
    }
}

static Res random_res(bool tri)
{
    int r = rnd(100);
    int ul, vl;
    if (r < 8) ul = 0, vl = 0;
    else if (r < 70) ul = 1 + rnd(5), vl = 1 + rnd(5);
    else if (r < 92) ul = rnd(8), vl = rnd(8);
    else ul = 7 + rnd(3), vl = 7 + rnd(2);
    if (tri) vl = ul;
    return Res(ul, vl);
}

static bool write_faces(PtexWriter* w, Mesh& m, DataType dt, int nch, int alpha, int seed,
                        bool only_some)
{
    int psize = DataSize(dt) * nch;
    for (int f = 0; f < m.nfaces; f++) {
        if (only_some && rnd(4) != 0) continue;
        FaceInfo fi = m.faces[f];
        fi.res = random_res(m.tri);
        m.faces[f].res = fi.res;
        int ures = fi.res.u(), vres = fi.res.v();
        std::vector<uint8_t> buf(size_t(ures) * vres * psize);
        int kind = rnd(10);
        if (kind == 0) {
            pattern(buf.data(), dt, nch, alpha, 1, 1, f, seed);
            if (!w->writeConstantFace(f, fi, buf.data())) return false;
            continue;
        }
        if (kind == 1) {
            std::vector<uint8_t> one(psize);
            pattern(one.data(), dt, nch, alpha, 1, 1, f, seed);
            for (size_t i = 0; i < buf.size(); i += psize) std::memcpy(&buf[i], one.data(), psize);
        } else {
            pattern(buf.data(), dt, nch, alpha, ures, vres, f, seed);
            if (kind == 2 && ures * vres >= 64) {
                // a uniform block (a constant tile of a tiled face)
                for (int v = 0; v < vres / 2; v++)
                    for (int u = 0; u < ures / 2; u++)
                        std::memcpy(&buf[(size_t(v) * ures + u) * psize], &buf[0], psize);
            }
        }
        if (!w->writeFace(f, fi, buf.data())) return false;
    }
    return true;
}

static void put32(FILE* f, uint32_t x) { fwrite(&x, 4, 1, f); }

int main(int argc, char** argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: random-files OUTDIR SEED NFILES NQUERIES\n");
        return 2;
    }
    std::string dir = argv[1];
    int seed = std::atoi(argv[2]), nfiles = std::atoi(argv[3]);
    long nq = std::atol(argv[4]);
    s_state = uint64_t(seed) * 7919 + 1;
    struct FileDesc {
        std::string name;
        Mesh mesh;
        bool black;
    };
    std::vector<FileDesc> files;
    for (int i = 0; i < nfiles; i++) {
        char name[64];
        std::snprintf(name, sizeof name, "r%d_%03d.ptx", seed, i);
        std::string path = dir + "/" + name;
        bool tri = rnd(4) == 0;
        int gw = 1 + rnd(6), gh = 1 + rnd(6);
        Mesh m = tri ? tri_grid(1 + rnd(5), 1 + rnd(5))
                     : quad_mesh(gw, gh, gw >= 3 && gh >= 3 && rnd(3) == 0, rnd(2) == 0);
        DataType dt = DataType(rnd(4));
        int nch = 1 + rnd(4);
        int alpha = (nch > 1 && rnd(2)) ? rnd(nch) : -1;
        bool mip = rnd(5) != 0;
        String err;
        PtexWriter* w = PtexWriter::open(path.c_str(), tri ? mt_triangle : mt_quad, dt, nch, alpha,
                                         m.nfaces, err, mip);
        if (!w) {
            std::fprintf(stderr, "open %s: %s\n", path.c_str(), err.c_str());
            return 1;
        }
        BorderMode bu = BorderMode(rnd(3)), bv = BorderMode(rnd(3));
        w->setBorderModes(bu, bv);
        if (rnd(3) == 0) w->setEdgeFilterMode(efm_tanvec);
        int edits = rnd(4);  // 0: incremental edit, 1: applied edit, else none
        // Ptex 2.4.3 misreads incremental edits of a file without meta data (its known bug)
        if (edits == 0 || rnd(2)) w->writeMeta("name", name);
        if (rnd(2)) {
            std::vector<int32_t> big(300 + rnd(2000));
            for (auto& x : big) x = rnd(1000);
            w->writeMeta("big", big.data(), int(big.size()));
        }
        if (!write_faces(w, m, dt, nch, alpha, seed + i, false) || !w->close(err)) {
            std::fprintf(stderr, "write %s: %s\n", path.c_str(), err.c_str());
            return 1;
        }
        w->release();
        if (edits < 2) {
            PtexWriter* e = PtexWriter::edit(path.c_str(), edits == 0, tri ? mt_triangle : mt_quad,
                                             dt, nch, alpha, m.nfaces, err, mip);
            if (!e) {
                std::fprintf(stderr, "edit %s: %s\n", path.c_str(), err.c_str());
                return 1;
            }
            if (rnd(2)) e->writeMeta("edited", "yes");
            if (!write_faces(e, m, dt, nch, alpha, seed + i + 1000, true) || !e->close(err)) {
                std::fprintf(stderr, "edit %s: %s\n", path.c_str(), err.c_str());
                return 1;
            }
            e->release();
        }
        std::printf("%s: %s %d faces, dt %d, %d ch, alpha %d, mip %d, borders %d/%d, edit %d\n",
                    name, tri ? "tri" : "quad", m.nfaces, int(dt), nch, alpha, int(mip), int(bu),
                    int(bv), edits);
        files.push_back({name, m, bu == m_black || bv == m_black});
    }
    std::string tpath = dir + "/r" + std::to_string(seed) + ".dtxp";
    FILE* t = std::fopen(tpath.c_str(), "wb");
    fwrite("DTXP", 4, 1, t);
    put32(t, 1);
    put32(t, uint32_t(files.size()));
    for (auto& f : files) {
        put32(t, uint32_t(f.name.size()));
        fwrite(f.name.data(), f.name.size(), 1, t);
    }
    uint64_t n = uint64_t(nq);
    fwrite(&n, 8, 1, t);
    for (long q = 0; q < nq; q++) {
        uint32_t ti = uint32_t(rnd(int(files.size())));
        const FileDesc& fd = files[ti];
        uint32_t face = uint32_t(rnd(fd.mesh.nfaces));
        float u, v;
        int where = rnd(10);
        if (where < 5) u = frand(), v = frand();
        else if (where < 9) {
            u = rnd(2) ? frand() * 0.03f : 1 - frand() * 0.03f;
            v = rnd(2) ? frand() : (rnd(2) ? frand() * 0.03f : 1 - frand() * 0.03f);
            if (rnd(2)) std::swap(u, v);
        } else {
            u = float(rnd(3)) * 0.5f;
            v = rnd(2) ? frand() : float(rnd(3)) * 0.5f;
        }
        if (fd.mesh.tri && u + v > 1) {
            u = 1 - u;
            v = 1 - v;
        }
        float f[4] = {0, 0, 0, 0};
        int size = rnd(10);
        if (size > 0) {
            float mag = std::pow(10.0f, -4.0f + frand() * (size < 9 ? 3.5f : 4.0f));
            float ang = frand() * 6.2831853f, an = 0.2f + frand();
            f[0] = mag * std::cos(ang);
            f[1] = mag * std::sin(ang);
            f[2] = -mag * an * std::sin(ang);
            f[3] = mag * an * std::cos(ang);
        }
        if (fd.black) {
            // Ptex 2.4.3 crashes when a black-border kernel lies beyond a boundary edge
            for (float& x : f) x = std::fmin(std::fmax(x, -0.02f), 0.02f);
            u = 0.1f + 0.8f * u;
            v = 0.1f + 0.8f * v;
            if (fd.mesh.tri && u + v > 1) {
                u *= 0.5f;
                v *= 0.5f;
            }
        }
        put32(t, ti);
        put32(t, face);
        fwrite(&u, 4, 1, t);
        fwrite(&v, 4, 1, t);
        fwrite(f, 4, 4, t);
    }
    std::fclose(t);
    return 0;
}
