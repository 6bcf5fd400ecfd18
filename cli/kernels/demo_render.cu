/*
 * The CLI demo's render kernel (`demandtex demo --backend cuda`): one launch of the
 * multi-pass render of cli/src/demo/render.rs, shading through the device API. It mirrors
 * the CPU demo exactly -- the camera rays (camera.rs), the nearest textured rectangle and
 * its ray differentials (scene.rs), the base and detail lookups with `dtex::tex2DGrad`, and
 * the shading -- in the same precision (geometry in double, shading in float; the PTX is
 * built with `--fmad=false`, so no multiply-add is contracted where the CPU rounds twice).
 *
 *   dtex_demo_render(ctx, scene, pixels, done, first_pixel, end_pixel, newly_done)
 *   dtex_demo_frame(ctx, scene, pixels, untextured, full_detail)   (an interactive frame)
 *
 * One thread per pixel index in `[first_pixel, end_pixel)` (row-major; a 1D grid of any
 * shape). A pixel whose `done` byte is set is skipped; otherwise its colour is written to
 * `pixels` and, if every lookup was resident, `done` is set and `*newly_done` counts it.
 *
 * The structs below are the kernel's interface to the host (a `#[repr(C)]` mirror on the
 * Rust side); their sizes and offsets are asserted here.
 */
#include <demandtex/device/texture.cuh>

/// One texture layer of a rectangle: scene.rs's `Layer`, resolved on the host.
struct DtexDemoLayer {
    /// Texture repeats across the rectangle in u and v.
    double scale[2];
    /// Texture coordinates at the rectangle's origin.
    double offset[2];
    /// The loader's texture id; `DTEX_NO_TEXTURE` for "no layer".
    uint32_t texture;
    /// 1 if the texture's address mode is wrap (coordinates are reduced to one period).
    uint32_t wrap;
};

/// A textured rectangle: scene.rs's `Quad`.
struct DtexDemoQuad {
    /// One corner.
    double origin[3];
    /// The edge along texture u.
    double edge_u[3];
    /// The edge along texture v, orthogonal to `edge_u`.
    double edge_v[3];
    /// The base texture.
    DtexDemoLayer base;
    /// The detail texture multiplied onto the base (`texture == DTEX_NO_TEXTURE`: none).
    DtexDemoLayer detail;
};

/// camera.rs's `Camera`: the fields `look_at` computed, copied from the host.
struct DtexDemoCamera {
    /// Eye position.
    double eye[3];
    /// Unit view direction.
    double forward[3];
    /// Unit right vector.
    double right[3];
    /// Unit up vector.
    double up[3];
    /// Half the image plane's width at distance 1.
    double half_width;
    /// Half the image plane's height at distance 1.
    double half_height;
    /// Image width in pixels (at least 1).
    uint32_t width;
    /// Image height in pixels (at least 1).
    uint32_t height;
};

/// The scene: camera, light and rectangles (scene.rs's `Scene` with the textures resolved).
struct DtexDemoScene {
    /// The camera.
    DtexDemoCamera camera;
    /// Unit direction towards the light.
    double light[3];
    /// The rectangles, in scene order (device memory).
    const DtexDemoQuad* quads;
    /// Number of rectangles.
    uint32_t num_quads;
    /// Zero.
    uint32_t reserved;
};

static_assert(sizeof(DtexDemoLayer) == 40 && alignof(DtexDemoLayer) == 8, "DtexDemoLayer");
static_assert(DTEX_OFFSETOF(DtexDemoLayer, texture) == 32 &&
                  DTEX_OFFSETOF(DtexDemoLayer, wrap) == 36,
              "DtexDemoLayer fields");
static_assert(sizeof(DtexDemoQuad) == 152 && DTEX_OFFSETOF(DtexDemoQuad, base) == 72 &&
                  DTEX_OFFSETOF(DtexDemoQuad, detail) == 112,
              "DtexDemoQuad");
static_assert(sizeof(DtexDemoCamera) == 120 && DTEX_OFFSETOF(DtexDemoCamera, half_width) == 96 &&
                  DTEX_OFFSETOF(DtexDemoCamera, width) == 112,
              "DtexDemoCamera");
static_assert(sizeof(DtexDemoScene) == 160 && DTEX_OFFSETOF(DtexDemoScene, light) == 120 &&
                  DTEX_OFFSETOF(DtexDemoScene, quads) == 144 &&
                  DTEX_OFFSETOF(DtexDemoScene, num_quads) == 152,
              "DtexDemoScene");

namespace {

/// camera.rs's `Vec3` (double precision, the same operations in the same order).
struct Vec3 {
    double x, y, z;
};

__device__ __forceinline__ Vec3 vec3(const double v[3])
{
    return Vec3{v[0], v[1], v[2]};
}

__device__ __forceinline__ Vec3 operator+(Vec3 a, Vec3 b)
{
    return Vec3{a.x + b.x, a.y + b.y, a.z + b.z};
}

__device__ __forceinline__ Vec3 operator-(Vec3 a, Vec3 b)
{
    return Vec3{a.x - b.x, a.y - b.y, a.z - b.z};
}

__device__ __forceinline__ Vec3 operator*(Vec3 a, double k)
{
    return Vec3{a.x * k, a.y * k, a.z * k};
}

__device__ __forceinline__ double dot(Vec3 a, Vec3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

__device__ __forceinline__ Vec3 cross(Vec3 a, Vec3 b)
{
    return Vec3{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

/// `Vec3::normalized`: scaled by the reciprocal of the length (zero stays zero).
__device__ __forceinline__ Vec3 normalized(Vec3 a)
{
    const double l = sqrt(dot(a, a));
    return l > 0.0 ? a * (1.0 / l) : a;
}

/// A ray: origin and (not necessarily unit) direction.
struct Ray {
    Vec3 origin, dir;
};

/// `Camera::ray` through the continuous pixel position (x, y).
__device__ __forceinline__ Ray cameraRay(const DtexDemoCamera& c, double x, double y)
{
    const double sx = (2.0 * x / static_cast<double>(c.width) - 1.0) * c.half_width;
    const double sy = (1.0 - 2.0 * y / static_cast<double>(c.height)) * c.half_height;
    return Ray{vec3(c.eye), vec3(c.forward) + vec3(c.right) * sx + vec3(c.up) * sy};
}

/// `Quad::plane_hit`: where `ray` meets the rectangle's plane in front of its origin.
__device__ __forceinline__ bool planeHit(const DtexDemoQuad& q, const Ray& ray, double* t,
                                         double local[2])
{
    const Vec3 eu = vec3(q.edge_u), ev = vec3(q.edge_v);
    const Vec3 n = cross(eu, ev);
    const double denom = dot(ray.dir, n);
    if (denom == 0.0 || !isfinite(denom))
        return false;
    const double tt = dot(vec3(q.origin) - ray.origin, n) / denom;
    if (!(tt > 1e-9 && isfinite(tt)))
        return false;
    const Vec3 p = (ray.origin + ray.dir * tt) - vec3(q.origin);
    *t = tt;
    local[0] = dot(p, eu) / dot(eu, eu);
    local[1] = dot(p, ev) / dot(ev, ev);
    return true;
}

/// scene.rs's `SurfaceHit`.
struct Hit {
    uint32_t quad;
    double local[2], dlocalDx[2], dlocalDy[2];
    Vec3 normal;
};

/// `Scene::intersect`: the nearest hit of `rays[0]`, with the differentials of `rays[1]`
/// and `rays[2]` on the hit plane (a neighbour beyond the horizon gets the whole quad).
__device__ __forceinline__ bool intersect(const DtexDemoScene& scene, const Ray rays[3],
                                          Hit* hit)
{
    bool found = false;
    double bestT = 0.0;
    for (uint32_t i = 0; i < scene.num_quads; ++i) {
        double t, l[2];
        if (planeHit(scene.quads[i], rays[0], &t, l)) {
            const bool inside = l[0] >= 0.0 && l[0] <= 1.0 && l[1] >= 0.0 && l[1] <= 1.0;
            if (inside && (!found || t < bestT)) {
                found = true;
                bestT = t;
                hit->quad = i;
                hit->local[0] = l[0];
                hit->local[1] = l[1];
            }
        }
    }
    if (!found)
        return false;
    const DtexDemoQuad& q = scene.quads[hit->quad];
    for (int k = 1; k <= 2; ++k) {
        double t, l[2];
        double* d = k == 1 ? hit->dlocalDx : hit->dlocalDy;
        if (planeHit(q, rays[k], &t, l)) {
            d[0] = l[0] - hit->local[0];
            d[1] = l[1] - hit->local[1];
        } else {
            d[0] = 1.0;
            d[1] = 1.0;
        }
    }
    Vec3 normal = normalized(cross(vec3(q.edge_u), vec3(q.edge_v)));
    if (dot(normal, rays[0].dir) > 0.0)
        normal = Vec3{-normal.x, -normal.y, -normal.z};
    hit->normal = normal;
    return true;
}

/// `Scene::lookup` + the demo's `sample`: the lookup of `layer` at `hit`, through
/// `dtex::sampleGrad` with `options`. False if it was not at full detail (a page was
/// missing; with `fallbackToCoarser` a coarser level then stood in).
__device__ __forceinline__ bool lookup(const DtexDeviceContext& ctx, const DtexDemoLayer& layer,
                                       const Hit& hit, const dtex::SampleOptions& options,
                                       float4* value)
{
    float st[2];
    for (int k = 0; k < 2; ++k) {
        const double c = layer.offset[k] + hit.local[k] * layer.scale[k];
        st[k] = static_cast<float>(layer.wrap != 0u ? c - floor(c) : c);
    }
    const float2 ddx = make_float2(static_cast<float>(hit.dlocalDx[0] * layer.scale[0]),
                                   static_cast<float>(hit.dlocalDx[1] * layer.scale[1]));
    const float2 ddy = make_float2(static_cast<float>(hit.dlocalDy[0] * layer.scale[0]),
                                   static_cast<float>(hit.dlocalDy[1] * layer.scale[1]));
    const dtex::Sample sample = dtex::sampleGrad(ctx, layer.texture, st[0], st[1], ddx, ddy, options);
    *value = sample.value;
    return sample.resident && !sample.coarser;
}

/// `Scene::sky`: the colour along a ray that hits nothing.
__device__ __forceinline__ float4 sky(const Ray& ray)
{
    const Vec3 d = normalized(ray.dir);
    const float k = static_cast<float>(fmin(fmax(d.y * 3.0, 0.0), 1.0));
    const float horizon[3] = {0.78f, 0.84f, 0.92f};
    const float zenith[3] = {0.22f, 0.42f, 0.78f};
    float c[3];
    for (int i = 0; i < 3; ++i)
        c[i] = horizon[i] + (zenith[i] - horizon[i]) * k;
    return make_float4(c[0], c[1], c[2], 1.0f);
}

/// How `shadePixel` shades: the multi-pass render's exact lookups, the interactive
/// frame's (a coarser level stands in for a miss), or no texture at all.
enum class Shading { Exact, Coarser, Untextured };

/// `shade_pixel`: the colour of pixel (i, j) and whether every lookup was at full detail.
__device__ __forceinline__ bool shadePixel(const DtexDeviceContext& ctx,
                                           const DtexDemoScene& scene, uint32_t i, uint32_t j,
                                           Shading shading, float4* colour)
{
    const double x = static_cast<double>(i) + 0.5, y = static_cast<double>(j) + 0.5;
    const Ray rays[3] = {cameraRay(scene.camera, x, y), cameraRay(scene.camera, x + 1.0, y),
                         cameraRay(scene.camera, x, y + 1.0)};
    Hit hit;
    if (!intersect(scene, rays, &hit)) {
        *colour = sky(rays[0]);
        return true;
    }
    const DtexDemoQuad& q = scene.quads[hit.quad];
    dtex::SampleOptions options;
    options.fallbackToCoarser = shading == Shading::Coarser;
    // Untextured (interactive.rs `Shading::Untextured`): base 0.5, detail 1.
    float4 base = make_float4(0.5f, 0.5f, 0.5f, 0.5f);
    bool ok = shading == Shading::Untextured || lookup(ctx, q.base, hit, options, &base);
    // `Scene::shade`: base x detail x (ambient + N.L).
    float d = 1.0f;
    if (q.detail.texture != DTEX_NO_TEXTURE) {
        float4 c = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
        if (shading != Shading::Untextured)
            ok = lookup(ctx, q.detail, hit, options, &c) && ok;
        d = 0.55f + 0.9f * (c.x + c.y + c.z) / 3.0f;
    }
    const Vec3 light = vec3(scene.light);
    const float ndotl = static_cast<float>(fmax(dot(hit.normal, light), 0.0));
    const float k = d * (0.35f + 0.65f * ndotl);
    *colour = make_float4(base.x * k, base.y * k, base.z * k, 1.0f);
    return ok;
}

}  // namespace

/// Shade the pixels `[first_pixel, end_pixel)` of the demo frame that are not done yet
/// (see the file comment).
extern "C" __global__ void dtex_demo_render(DtexDeviceContext ctx, DtexDemoScene scene,
                                            float4* pixels, uint8_t* done, uint32_t first_pixel,
                                            uint32_t end_pixel, uint32_t* newly_done)
{
    const uint32_t width = scene.camera.width, height = scene.camera.height;
    if (width == 0u || height == 0u)
        return;
    const unsigned long long total = static_cast<unsigned long long>(width) * height;
    const uint32_t end = end_pixel < total ? end_pixel : static_cast<uint32_t>(total);
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t idx = first_pixel + blockIdx.x * blockDim.x + threadIdx.x; idx < end;
         idx += stride) {
        if (done[idx] != 0u)
            continue;
        float4 colour;
        const bool ok =
            shadePixel(ctx, scene, idx % width, idx / width, Shading::Exact, &colour);
        pixels[idx] = colour;
        if (ok) {
            done[idx] = 1u;
            atomicAdd(newly_done, 1u);
        }
    }
}

/// Shade every pixel of one interactive frame (`demandtex demo --interactive --backend
/// cuda`): `untextured` 0 samples with `fallbackToCoarser` (a miss shows the finest resident
/// coarser level and records its request) and counts in `*full_detail` the pixels whose
/// lookups were all at full detail; 1 shades without textures (the reference).
extern "C" __global__ void dtex_demo_frame(DtexDeviceContext ctx, DtexDemoScene scene,
                                           float4* pixels, uint32_t untextured,
                                           uint32_t* full_detail)
{
    const uint32_t width = scene.camera.width, height = scene.camera.height;
    if (width == 0u || height == 0u)
        return;
    const unsigned long long total = static_cast<unsigned long long>(width) * height;
    const uint32_t stride = gridDim.x * blockDim.x;
    const Shading shading = untextured != 0u ? Shading::Untextured : Shading::Coarser;
    for (uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        float4 colour;
        const bool full = shadePixel(ctx, scene, idx % width, idx / width, shading, &colour);
        pixels[idx] = colour;
        if (full)
            atomicAdd(full_detail, 1u);
    }
}
