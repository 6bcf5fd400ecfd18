// oiio-environment: OpenImageIO's TextureSystem::environment over a list of directions, for
// cli/tests/environment.rs to set beside demandtex's lat-long lookups.
//
//   oiio-environment MAP QUERIES OUT
//
// QUERIES: little-endian f32, nine per query (R, dRdx, dRdy). OUT: four f32 per query
// (RGBA; a map of fewer channels is padded as OIIO pads: gray to RGB, alpha 1 is not
// added, so the test asks only for the map's channels). TextureOpt's defaults (anisotropic)
// but bilinear interpolation, a private TextureSystem. Exit status 1 on any error.
//
// Build: g++ -O2 -std=c++17 environment.cpp $(pkg-config --cflags --libs OpenImageIO)

#include <Imath/ImathVec.h>
#include <OpenImageIO/texture.h>
#include <OpenImageIO/ustring.h>

#include <cstdio>
#include <fstream>
#include <vector>

int
main(int argc, char** argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: oiio-environment MAP QUERIES OUT\n");
        return 1;
    }
    std::ifstream bytes(argv[2], std::ios::binary | std::ios::ate);
    std::streamsize size = bytes.tellg();
    bytes.seekg(0);
    std::vector<float> queries(size / sizeof(float));
    bytes.read(reinterpret_cast<char*>(queries.data()), size);
    if (queries.size() % 9 != 0) {
        std::fprintf(stderr, "oiio-environment: %s holds %zu floats, not nine per query\n",
                     argv[2], queries.size());
        return 1;
    }
    auto* ts = OIIO::TextureSystem::create(false);
    OIIO::ustring map(argv[1]);
    OIIO::TextureOpt opt;
    // demandtex filters bilinearly (OIIO's default is smart bicubic: bicubic on level 0).
    opt.interpmode = OIIO::TextureOpt::InterpBilinear;
    std::vector<float> out;
    out.reserve(queries.size() / 9 * 4);
    for (size_t i = 0; i < queries.size(); i += 9) {
        const float* v = &queries[i];
        Imath::V3f R(v[0], v[1], v[2]), dRdx(v[3], v[4], v[5]), dRdy(v[6], v[7], v[8]);
        float result[4] = { 0, 0, 0, 0 };
        if (!ts->environment(map, opt, R, dRdx, dRdy, 4, result)) {
            std::fprintf(stderr, "oiio-environment: %s\n", ts->geterror().c_str());
            return 1;
        }
        out.insert(out.end(), result, result + 4);
    }
    std::ofstream o(argv[3], std::ios::binary);
    o.write(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(float));
    OIIO::TextureSystem::destroy(ts);
    return o ? 0 : 1;
}
