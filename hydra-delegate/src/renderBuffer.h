// A CPU render buffer in any format of 1-4 components of UNorm8, SNorm8, Float16, Float32 or
// Int32, which the renderer writes converted from float RGBA. Hosts read it through Map().
#ifndef HD_DEMANDTEX_RENDER_BUFFER_H
#define HD_DEMANDTEX_RENDER_BUFFER_H

#include "pxr/pxr.h"
#include "pxr/base/gf/vec4f.h"
#include "pxr/imaging/hd/renderBuffer.h"

#include <atomic>
#include <cstdint>
#include <vector>

PXR_NAMESPACE_OPEN_SCOPE

class HdDemandTexRenderBuffer final : public HdRenderBuffer {
public:
    explicit HdDemandTexRenderBuffer(SdfPath const& id) : HdRenderBuffer(id) {}
    ~HdDemandTexRenderBuffer() override = default;

    bool Allocate(GfVec3i const& dimensions, HdFormat format, bool multiSampled) override;
    unsigned int GetWidth() const override { return _width; }
    unsigned int GetHeight() const override { return _height; }
    unsigned int GetDepth() const override { return 1; }
    HdFormat GetFormat() const override { return _format; }
    bool IsMultiSampled() const override { return false; }
    void* Map() override {
        _mappers.fetch_add(1);
        return _data.data();
    }
    void Unmap() override { _mappers.fetch_sub(1); }
    bool IsMapped() const override { return _mappers.load() != 0; }
    void Resolve() override {}
    bool IsConverged() const override { return _converged.load(); }
    void SetConverged(bool converged) { _converged.store(converged); }

    /// Write pixel (x, y) (row 0 at the bottom, as Hydra's buffers are) from RGBA; formats
    /// with fewer components take the first ones.
    void WriteColor(unsigned x, unsigned y, const GfVec4f& rgba);
    /// Write a scalar (depth) or id (primId).
    void WriteFloat(unsigned x, unsigned y, float value);
    void WriteInt(unsigned x, unsigned y, int value);
    /// Fill every pixel with the binding's clear value.
    void Clear(const VtValue& clearValue);

private:
    void _Deallocate() override;
    unsigned char* _Pixel(unsigned x, unsigned y) { return _data.data() + (size_t(y) * _width + x) * _pixelBytes; }

    unsigned _width = 0;
    unsigned _height = 0;
    HdFormat _format = HdFormatInvalid;
    HdFormat _componentFormat = HdFormatInvalid;
    size_t _components = 0;
    size_t _pixelBytes = 0;
    std::vector<unsigned char> _data;
    std::atomic<int> _mappers{0};
    std::atomic<bool> _converged{false};
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
