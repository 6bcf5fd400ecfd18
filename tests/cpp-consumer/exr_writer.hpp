// Writes a small uncompressed scan-line OpenEXR file (RGBA, 32-bit float), so that the
// blocking cache can be tested through dtex_cache_texture_for_path without any image library.
#ifndef DEMANDTEX_CPP_CONSUMER_EXR_WRITER_HPP
#define DEMANDTEX_CPP_CONSUMER_EXR_WRITER_HPP

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace exrw {

/// Little-endian byte buffer.
class Bytes {
public:
    void u8(std::uint8_t v) { b_.push_back(v); }
    void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
    void u32(std::uint32_t v) {
        for (int i = 0; i < 4; ++i) b_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void u64(std::uint64_t v) {
        for (int i = 0; i < 8; ++i) b_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void f32(float f) {
        std::uint32_t v = 0;
        std::memcpy(&v, &f, 4);
        u32(v);
    }
    void str(const std::string& s) {  // NUL-terminated
        b_.insert(b_.end(), s.begin(), s.end());
        b_.push_back(0);
    }
    void append(const Bytes& o) { b_.insert(b_.end(), o.b_.begin(), o.b_.end()); }
    std::size_t size() const { return b_.size(); }
    const std::vector<std::uint8_t>& data() const { return b_; }

private:
    std::vector<std::uint8_t> b_;
};

/// One header attribute: name, type, size, value.
inline void attribute(Bytes& out, const std::string& name, const std::string& type, const Bytes& value) {
    out.str(name);
    out.str(type);
    out.i32(static_cast<std::int32_t>(value.size()));
    out.append(value);
}

/// Write a `width × height` RGBA float scan-line EXR whose texel (x, y) is `texel(x, y)`.
/// Returns false if the file could not be written.
inline bool writeRgbaF32(const std::string& path, int width, int height,
                         const std::function<void(int x, int y, float rgba[4])>& texel) {
    Bytes file;
    for (std::uint8_t m : {0x76, 0x2f, 0x31, 0x01}) file.u8(m);
    file.u32(2);  // version 2, single-part scan-line

    Bytes chlist;  // channels in name order: A, B, G, R
    for (const char* name : {"A", "B", "G", "R"}) {
        chlist.str(name);
        chlist.i32(2);  // FLOAT
        for (int i = 0; i < 4; ++i) chlist.u8(0);  // pLinear + reserved
        chlist.i32(1);
        chlist.i32(1);
    }
    chlist.u8(0);
    attribute(file, "channels", "chlist", chlist);
    Bytes none;
    none.u8(0);
    attribute(file, "compression", "compression", none);
    Bytes window;
    for (std::int32_t v : {0, 0, width - 1, height - 1}) window.i32(v);
    attribute(file, "dataWindow", "box2i", window);
    attribute(file, "displayWindow", "box2i", window);
    attribute(file, "lineOrder", "lineOrder", none);  // increasing y
    Bytes one;
    one.f32(1.0f);
    attribute(file, "pixelAspectRatio", "float", one);
    Bytes centre;
    centre.f32(0.0f);
    centre.f32(0.0f);
    attribute(file, "screenWindowCenter", "v2f", centre);
    attribute(file, "screenWindowWidth", "float", one);
    file.u8(0);  // end of header

    // Offset table (one scan line per block without compression), then the blocks.
    const std::size_t lineBytes = static_cast<std::size_t>(width) * 4 * 4;
    const std::size_t blockBytes = 8 + lineBytes;
    const std::size_t firstBlock = file.size() + 8 * static_cast<std::size_t>(height);
    for (int y = 0; y < height; ++y) file.u64(firstBlock + static_cast<std::size_t>(y) * blockBytes);
    std::vector<float> row(static_cast<std::size_t>(width) * 4);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) texel(x, y, &row[static_cast<std::size_t>(x) * 4]);
        file.i32(y);
        file.i32(static_cast<std::int32_t>(lineBytes));
        for (int c : {3, 2, 1, 0}) {  // A, B, G, R planes
            for (int x = 0; x < width; ++x) file.f32(row[static_cast<std::size_t>(x) * 4 + static_cast<std::size_t>(c)]);
        }
    }
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(file.data().data()), static_cast<std::streamsize>(file.size()));
    return static_cast<bool>(f);
}

}  // namespace exrw

#endif
