#include "renderBuffer.h"

#include "pxr/base/gf/vec3f.h"
#include "pxr/base/tf/diagnostic.h"

#include <algorithm>
#include <cmath>
#include <cstring>

PXR_NAMESPACE_OPEN_SCOPE

namespace {

bool _Supported(HdFormat format) {
    switch (format) {
    case HdFormatFloat32:
    case HdFormatFloat32Vec2:
    case HdFormatFloat32Vec3:
    case HdFormatFloat32Vec4:
    case HdFormatInt32:
    case HdFormatUNorm8Vec4:
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
        TF_WARN("demandtex: render buffer %s: format %d not supported (Float32 x1-4, Int32, UNorm8Vec4 are)",
                GetId().GetText(), int(format));
        return false;
    }
    _width = unsigned(dimensions[0]);
    _height = unsigned(dimensions[1]);
    _format = format;
    _pixelBytes = HdDataSizeOfFormat(format);
    _data.assign(size_t(_width) * _height * _pixelBytes, 0);
    _converged.store(false);
    return true;
}

void HdDemandTexRenderBuffer::_Deallocate() {
    _width = _height = 0;
    _format = HdFormatInvalid;
    _pixelBytes = 0;
    _data.clear();
    _data.shrink_to_fit();
}

void HdDemandTexRenderBuffer::WriteColor(unsigned x, unsigned y, const GfVec4f& rgba) {
    if (x >= _width || y >= _height) return;
    unsigned char* p = _Pixel(x, y);
    switch (_format) {
    case HdFormatUNorm8Vec4:
        for (int c = 0; c < 4; ++c) p[c] = (unsigned char)std::lround(std::clamp(rgba[c], 0.0f, 1.0f) * 255.0f);
        break;
    case HdFormatInt32: {
        const int v = int(rgba[0]);
        std::memcpy(p, &v, 4);
        break;
    }
    default:
        std::memcpy(p, rgba.data(), _pixelBytes);  // Float32 with 1-4 components
        break;
    }
}

void HdDemandTexRenderBuffer::WriteFloat(unsigned x, unsigned y, float value) {
    WriteColor(x, y, GfVec4f(value, value, value, value));
}

void HdDemandTexRenderBuffer::WriteInt(unsigned x, unsigned y, int value) {
    if (x >= _width || y >= _height) return;
    if (_format == HdFormatInt32) {
        std::memcpy(_Pixel(x, y), &value, 4);
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
