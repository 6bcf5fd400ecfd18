#include "renderBuffer.h"

#include "pxr/base/gf/half.h"
#include "pxr/base/gf/vec2f.h"
#include "pxr/base/gf/vec3f.h"
#include "pxr/base/tf/diagnostic.h"

#include <algorithm>
#include <cmath>
#include <cstring>

PXR_NAMESPACE_OPEN_SCOPE

namespace {

// 1-4 components of UNorm8, SNorm8, Float16, Float32 or Int32: every colour format a host
// may bind (usdview's default color AOV, or a host that asks for half or 8-bit buffers).
bool _Supported(HdFormat format) {
    if (format == HdFormatInvalid || format >= HdFormatCount) return false;
    const size_t n = HdGetComponentCount(format);
    if (n < 1 || n > 4) return false;
    switch (HdGetComponentFormat(format)) {
    case HdFormatUNorm8:
    case HdFormatSNorm8:
    case HdFormatFloat16:
    case HdFormatFloat32:
    case HdFormatInt32:
        return true;
    default:
        return false;
    }
}

}  // namespace

bool HdDemandTexRenderBuffer::Allocate(GfVec3i const& dimensions, HdFormat format, bool multiSampled) {
    TF_UNUSED(multiSampled);  // one sample per pixel is stored; samples are accumulated upstream
    _Deallocate();
    if (dimensions[0] <= 0 || dimensions[1] <= 0 || dimensions[2] != 1) {
        TF_WARN("demandtex: render buffer %s: %dx%dx%d is not a 2D size", GetId().GetText(), dimensions[0],
                dimensions[1], dimensions[2]);
        return false;
    }
    if (!_Supported(format)) {
        TF_WARN("demandtex: render buffer %s: format %d not supported (1-4 components of UNorm8, SNorm8, "
                "Float16, Float32 or Int32 are)",
                GetId().GetText(), int(format));
        return false;
    }
    _width = unsigned(dimensions[0]);
    _height = unsigned(dimensions[1]);
    _format = format;
    _components = HdGetComponentCount(format);
    _componentFormat = HdGetComponentFormat(format);
    _pixelBytes = HdDataSizeOfFormat(format);
    _data.assign(size_t(_width) * _height * _pixelBytes, 0);
    _converged.store(false);
    return true;
}

void HdDemandTexRenderBuffer::_Deallocate() {
    _width = _height = 0;
    _format = HdFormatInvalid;
    _componentFormat = HdFormatInvalid;
    _components = 0;
    _pixelBytes = 0;
    _data.clear();
    _data.shrink_to_fit();
}

void HdDemandTexRenderBuffer::WriteColor(unsigned x, unsigned y, const GfVec4f& rgba) {
    if (x >= _width || y >= _height) return;
    unsigned char* p = _Pixel(x, y);
    for (size_t c = 0; c < _components; ++c) {
        switch (_componentFormat) {
        case HdFormatUNorm8:
            p[c] = (unsigned char)std::lround(std::clamp(rgba[c], 0.0f, 1.0f) * 255.0f);
            break;
        case HdFormatSNorm8: {
            const auto v = (signed char)std::lround(std::clamp(rgba[c], -1.0f, 1.0f) * 127.0f);
            std::memcpy(p + c, &v, 1);
            break;
        }
        case HdFormatFloat16: {
            const GfHalf h(rgba[c]);
            std::memcpy(p + 2 * c, &h, 2);
            break;
        }
        case HdFormatInt32: {
            // In range first: converting a NaN or an out-of-range float to int is undefined.
            const float f = std::isfinite(rgba[c]) ? std::clamp(rgba[c], -2147483520.0f, 2147483520.0f) : 0.0f;
            const int v = int(f);
            std::memcpy(p + 4 * c, &v, 4);
            break;
        }
        default:  // Float32
            std::memcpy(p + 4 * c, &rgba[c], 4);
            break;
        }
    }
}

void HdDemandTexRenderBuffer::WriteFloat(unsigned x, unsigned y, float value) {
    WriteColor(x, y, GfVec4f(value, value, value, value));
}

void HdDemandTexRenderBuffer::WriteInt(unsigned x, unsigned y, int value) {
    if (x >= _width || y >= _height) return;
    if (_componentFormat == HdFormatInt32) {
        for (size_t c = 0; c < _components; ++c) std::memcpy(_Pixel(x, y) + 4 * c, &value, 4);
    } else {
        WriteFloat(x, y, float(value));
    }
}

void HdDemandTexRenderBuffer::Clear(const VtValue& clearValue) {
    GfVec4f c(0.0f);
    if (clearValue.IsHolding<GfVec4f>()) {
        c = clearValue.UncheckedGet<GfVec4f>();
    } else if (clearValue.IsHolding<GfVec3f>()) {
        const GfVec3f& v = clearValue.UncheckedGet<GfVec3f>();
        c = GfVec4f(v[0], v[1], v[2], 1.0f);
    } else if (clearValue.IsHolding<GfVec2f>()) {
        const GfVec2f& v = clearValue.UncheckedGet<GfVec2f>();
        c = GfVec4f(v[0], v[1], 0.0f, 1.0f);
    } else if (clearValue.IsHolding<float>()) {
        c = GfVec4f(clearValue.UncheckedGet<float>());
    } else if (clearValue.IsHolding<int>()) {
        const int v = clearValue.UncheckedGet<int>();
        for (unsigned y = 0; y < _height; ++y)
            for (unsigned x = 0; x < _width; ++x) WriteInt(x, y, v);
        return;
    }
    for (unsigned y = 0; y < _height; ++y)
        for (unsigned x = 0; x < _width; ++x) WriteColor(x, y, c);
}

PXR_NAMESPACE_CLOSE_SCOPE
