//! The built-in demo scene: a long floor in three lanes, two long walls and four angled
//! billboards, textured by 22 procedural textures (1.06 TiB of level-0 texels at full size).

use super::camera::{Camera, Vec3};
use super::scene::{Layer, Pattern, Quad, Scene, TextureSpec};
use demandtex::textures::{AddressMode, TexelFormat};

/// Sizes of the built-in scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneSize {
    /// Texture side in texels (65536 for the film-scale demo).
    pub texture_size: u32,
    /// Iteration limit of the Mandelbrot textures.
    pub mandelbrot_iterations: u32,
}

impl SceneSize {
    /// The full demo: 65536² textures.
    pub const FULL: SceneSize = SceneSize {
        texture_size: 65536,
        mandelbrot_iterations: 96,
    };
}

/// The camera of the built-in scene for a `width × height` image.
pub fn camera(width: u32, height: u32) -> Camera {
    Camera::look_at(
        Vec3::new(0.0, 1.7, 0.0),
        Vec3::new(0.6, 1.3, 12.0),
        Vec3::new(0.0, 1.0, 0.0),
        50.0,
        width,
        height,
    )
}

fn textures(size: SceneSize) -> Vec<TextureSpec> {
    use Pattern::{Checker, Mandelbrot, Noise};
    let m = Mandelbrot {
        iterations: size.mandelbrot_iterations,
    };
    let (f32x4, f16x4, u8x4) = (
        TexelFormat::RGBA32F,
        TexelFormat::RGBA16F,
        TexelFormat::RGBA8,
    );
    let wrap8 = |pattern, format| TextureSpec {
        pattern,
        format,
        size: size.texture_size,
        address: AddressMode::Wrap,
        max_anisotropy: 8,
    };
    let clamp = |pattern, format, max_anisotropy| TextureSpec {
        pattern,
        format,
        size: size.texture_size,
        address: AddressMode::Clamp,
        max_anisotropy,
    };
    vec![
        // 0..=5: floor lanes, near then far.
        wrap8(Checker { square: 64 }, f32x4),
        wrap8(Noise { seed: 1 }, f32x4),
        wrap8(m, f32x4),
        wrap8(Checker { square: 256 }, f32x4),
        wrap8(Noise { seed: 2 }, f32x4),
        wrap8(Checker { square: 1024 }, f32x4),
        // 6..=11: walls, left then right.
        wrap8(m, f32x4),
        wrap8(Noise { seed: 3 }, f32x4),
        wrap8(Checker { square: 128 }, f32x4),
        wrap8(Noise { seed: 4 }, f32x4),
        wrap8(m, f32x4),
        wrap8(Checker { square: 32 }, f32x4),
        // 12..=15: billboards.
        clamp(m, f32x4, 4),
        clamp(Checker { square: 16 }, f32x4, 1),
        clamp(m, f16x4, 2),
        clamp(Checker { square: 512 }, f16x4, 1),
        // 16..=21: detail layers.
        wrap8(Noise { seed: 5 }, f16x4),
        wrap8(Noise { seed: 6 }, f16x4),
        wrap8(Noise { seed: 7 }, u8x4),
        wrap8(Checker { square: 8 }, u8x4),
        wrap8(Noise { seed: 8 }, u8x4),
        wrap8(m, u8x4),
    ]
}

fn layer(texture: usize, scale: [f64; 2], offset: [f64; 2]) -> Option<Layer> {
    Some(Layer {
        texture,
        scale,
        offset,
    })
}

/// Where a billboard stands: its bottom centre, size and turn about the vertical.
struct Placement {
    /// Bottom centre (x, y, z).
    at: [f64; 3],
    /// Width and height.
    size: [f64; 2],
    /// Turn about the vertical, in degrees.
    degrees: f64,
}

/// A billboard placed by `p`, its texture upright.
fn billboard(p: Placement, base: Layer, detail: Option<Layer>) -> Quad {
    let [w, h] = p.size;
    let (s, c) = p.degrees.to_radians().sin_cos();
    let edge_u = Vec3::new(w * c, 0.0, w * s);
    let origin = Vec3::new(p.at[0], p.at[1], p.at[2]) - edge_u * 0.5;
    // v runs down the panel so the texture is upright.
    Quad::new(
        origin + Vec3::new(0.0, h, 0.0),
        edge_u,
        Vec3::new(0.0, -h, 0.0),
        base,
        detail,
    )
}

fn quads() -> Vec<Quad> {
    let mut q = Vec::new();
    // Floor: three lanes across x ∈ [-8, 8], split at z = 60; the near half spans one texture
    // over 256 m (level 0 near the camera), the far half repeats every 16 m.
    let lane = 16.0 / 3.0;
    for i in 0..3 {
        let x0 = -8.0 + lane * i as f64;
        let near = Layer {
            texture: i,
            scale: [lane / 256.0, 60.0 / 256.0],
            offset: [0.1 + 0.2 * i as f64, 0.3],
        };
        let far = Layer {
            texture: 3 + i,
            scale: [lane / 16.0, 340.0 / 16.0],
            offset: [0.0, 0.0],
        };
        let detail_near = layer(16, [lane / 8.0, 60.0 / 8.0], [0.0, 0.0]);
        let detail_far = if i == 1 {
            layer(18, [lane / 4.0, 340.0 / 4.0], [0.0, 0.0])
        } else {
            None
        };
        let (u, v) = (Vec3::new(lane, 0.0, 0.0), Vec3::new(0.0, 0.0, 60.0));
        q.push(Quad::new(Vec3::new(x0, 0.0, 0.0), u, v, near, detail_near));
        let v = Vec3::new(0.0, 0.0, 340.0);
        q.push(Quad::new(Vec3::new(x0, 0.0, 60.0), u, v, far, detail_far));
    }
    // Walls at x = ±8, 10 m high, in three segments along z.
    let segments = [(0.0, 40.0, 64.0), (40.0, 120.0, 32.0), (120.0, 400.0, 16.0)];
    for (side, x) in [(0usize, -8.0), (1, 8.0)] {
        for (k, &(z0, z1, span)) in segments.iter().enumerate() {
            let len = z1 - z0;
            let base = Layer {
                texture: 6 + 3 * side + k,
                scale: [len / span, 10.0 / span],
                offset: [0.05 * k as f64, 0.0],
            };
            let detail = if k == 0 {
                layer(17, [len / 4.0, 10.0 / 4.0], [0.0, 0.0])
            } else {
                None
            };
            let origin = Vec3::new(x, 10.0, z0);
            q.push(Quad::new(
                origin,
                Vec3::new(0.0, 0.0, len),
                Vec3::new(0.0, -10.0, 0.0),
                base,
                detail,
            ));
        }
    }
    // Billboards: windows onto their textures at very different scales.
    let b = |texture, scale: f64, offset: [f64; 2]| Layer {
        texture,
        scale: [scale, scale],
        offset,
    };
    // Mandelbrot windows are centred on points of the set's boundary: texture u maps
    // [0, 1] to re ∈ [-2.25, 0.75], v to im ∈ [-1.5, 1.5].
    q.push(billboard(
        Placement {
            at: [-2.2, 0.5, 7.0],
            size: [2.4, 1.8],
            degrees: 35.0,
        },
        b(12, 1.0 / 64.0, [0.4939, 0.5289]),
        layer(19, [6.0, 4.5], [0.0, 0.0]),
    ));
    q.push(billboard(
        Placement {
            at: [3.2, 0.3, 15.0],
            size: [4.0, 3.0],
            degrees: -30.0,
        },
        b(13, 1.0 / 256.0, [0.5, 0.5]),
        None,
    ));
    q.push(billboard(
        Placement {
            at: [-4.5, 2.6, 32.0],
            size: [5.0, 3.6],
            degrees: 20.0,
        },
        b(14, 1.0 / 8.0, [0.7808, 0.4375]),
        layer(20, [12.0, 8.0], [0.0, 0.0]),
    ));
    q.push(billboard(
        Placement {
            at: [-1.0, 0.8, 75.0],
            size: [6.0, 4.5],
            degrees: -5.0,
        },
        b(15, 0.75, [0.1, 0.1]),
        layer(21, [3.0, 2.0], [0.0, 0.0]),
    ));
    q
}

/// The built-in scene with textures of `size`.
pub fn scene(size: SceneSize) -> Scene {
    Scene {
        textures: textures(size),
        quads: quads(),
        light: Vec3::new(0.45, 0.8, -0.4).normalized(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_texture_is_used_and_every_layer_is_valid() {
        let s = scene(SceneSize::FULL);
        let mut used = vec![false; s.textures.len()];
        for q in &s.quads {
            for l in std::iter::once(q.base).chain(q.detail) {
                assert!(l.texture < s.textures.len());
                used[l.texture] = true;
            }
            assert!(
                q.edge_u.dot(q.edge_v).abs() < 1e-9,
                "edges must be orthogonal"
            );
        }
        assert!(used.iter().all(|&u| u), "{used:?}");
    }

    #[test]
    fn full_scene_is_over_a_tebibyte_of_level_0_texels() {
        let s = scene(SceneSize::FULL);
        let bytes: u64 = s
            .textures
            .iter()
            .map(|t| t.size as u64 * t.size as u64 * t.format.texel_bytes() as u64)
            .sum();
        assert!(bytes >= 1 << 40, "{bytes}");
    }

    #[test]
    fn the_camera_sees_floor_walls_billboards_and_sky() {
        let (w, h) = (96, 54);
        let (s, cam) = (scene(SceneSize::FULL), camera(w, h));
        let mut hits = vec![0usize; s.quads.len()];
        let mut sky = 0;
        for j in 0..h {
            for i in 0..w {
                match s.intersect(&cam.pixel_rays(i, j)) {
                    Some(hit) => hits[hit.quad] += 1,
                    None => sky += 1,
                }
            }
        }
        assert!(sky > 0);
        assert!(
            hits.iter().all(|&n| n > 0),
            "every rectangle visible: {hits:?}"
        );
    }
}
