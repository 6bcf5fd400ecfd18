// The procedural checkerboard's texels (core's LEVEL_COLORS and dark shade), for the tests
// that check sampled values against them (main.cpp, interactive.cpp).
#ifndef DEMANDTEX_CPP_CONSUMER_CHECKER_HPP
#define DEMANDTEX_CPP_CONSUMER_CHECKER_HPP

#include <algorithm>
#include <array>
#include <cstdint>

namespace checker {

/// The checkerboard's level colours (core's LEVEL_COLORS).
constexpr float kLevelColors[17][3] = {
    {0.90f, 0.10f, 0.10f}, {0.95f, 0.50f, 0.05f}, {0.95f, 0.90f, 0.10f}, {0.55f, 0.90f, 0.10f},
    {0.10f, 0.70f, 0.20f}, {0.10f, 0.90f, 0.60f}, {0.10f, 0.85f, 0.95f}, {0.15f, 0.45f, 0.95f},
    {0.20f, 0.15f, 0.85f}, {0.55f, 0.15f, 0.90f}, {0.90f, 0.15f, 0.85f}, {0.95f, 0.45f, 0.65f},
    {0.97f, 0.97f, 0.97f}, {0.50f, 0.50f, 0.50f}, {0.55f, 0.30f, 0.10f}, {0.50f, 0.55f, 0.05f},
    {0.05f, 0.40f, 0.45f},
};
/// The dark squares' shade factor.
constexpr float kDark = 0.4f;

/// The checkerboard texel at (x, y) of `level` for squares of `square` level-0 texels.
inline std::array<float, 4> texel(std::uint32_t level, std::uint32_t x, std::uint32_t y, std::uint32_t square) {
    const std::uint32_t side = std::max(1u, square >> level);
    const float* c = kLevelColors[level % 17];
    if ((((x / side) ^ (y / side)) & 1u) == 0) return {c[0], c[1], c[2], 1.0f};
    return {c[0] * kDark, c[1] * kDark, c[2] * kDark, 1.0f};
}

}  // namespace checker

#endif
