//! Scene description: textured rectangles, ray intersection and the
//! texture coordinates and gradients a hit gives (from ray differentials).

use super::camera::{Ray, Vec3};
pub use super::textures::{Pattern, TextureSpec};
use demandtex::textures::AddressMode;

/// A texture applied to a rectangle: texture coordinates are `offset + (a, b) × scale` for
/// the rectangle's local coordinates `(a, b)` in `[0, 1]²`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layer {
    /// Index into [`Scene::textures`].
    pub texture: usize,
    /// Texture repeats across the rectangle in u and v (below 1 shows a window).
    pub scale: [f64; 2],
    /// Texture coordinates at the rectangle's origin.
    pub offset: [f64; 2],
}

/// The inputs of one texture lookup.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lookup {
    /// Texture index in the scene.
    pub texture: usize,
    /// Coordinates (reduced to one period for wrapping textures).
    pub st: [f32; 2],
    /// Change of (s, t) one pixel to the right.
    pub ddx: [f32; 2],
    /// Change of (s, t) one pixel down.
    pub ddy: [f32; 2],
}

/// A textured rectangle with orthogonal edges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quad {
    /// One corner.
    pub origin: Vec3,
    /// The edge along local a (texture u).
    pub edge_u: Vec3,
    /// The edge along local b (texture v), orthogonal to `edge_u`.
    pub edge_v: Vec3,
    /// The base texture.
    pub base: Layer,
    /// An optional detail texture multiplied onto the base.
    pub detail: Option<Layer>,
}

impl Quad {
    /// A rectangle from a corner and two orthogonal edges.
    pub fn new(
        origin: Vec3,
        edge_u: Vec3,
        edge_v: Vec3,
        base: Layer,
        detail: Option<Layer>,
    ) -> Quad {
        Quad {
            origin,
            edge_u,
            edge_v,
            base,
            detail,
        }
    }

    /// The unit normal (`edge_u × edge_v`).
    pub fn normal(&self) -> Vec3 {
        self.edge_u.cross(self.edge_v).normalized()
    }

    /// Where `ray` meets the rectangle's (unbounded) plane in front of its origin: the ray
    /// parameter and the local coordinates.
    pub fn plane_hit(&self, ray: &Ray) -> Option<(f64, [f64; 2])> {
        let n = self.edge_u.cross(self.edge_v);
        let denom = ray.dir.dot(n);
        if denom == 0.0 || !denom.is_finite() {
            return None;
        }
        let t = (self.origin - ray.origin).dot(n) / denom;
        if !(t > 1e-9 && t.is_finite()) {
            return None;
        }
        let p = ray.at(t) - self.origin;
        let a = p.dot(self.edge_u) / self.edge_u.dot(self.edge_u);
        let b = p.dot(self.edge_v) / self.edge_v.dot(self.edge_v);
        Some((t, [a, b]))
    }
}

/// Where a primary ray hit the scene, with the local-coordinate differentials of its
/// neighbouring pixels' rays on the same plane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfaceHit {
    /// Index of the rectangle hit.
    pub quad: usize,
    /// Ray parameter.
    pub t: f64,
    /// Local coordinates in `[0, 1]²`.
    pub local: [f64; 2],
    /// Change of local coordinates one pixel right.
    pub dlocal_dx: [f64; 2],
    /// Change of local coordinates one pixel down.
    pub dlocal_dy: [f64; 2],
    /// Unit normal facing the ray.
    pub normal: Vec3,
}

/// Textures, rectangles and a light.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// The textures, referenced by index from the layers.
    pub textures: Vec<TextureSpec>,
    /// The geometry.
    pub quads: Vec<Quad>,
    /// Unit direction towards the light.
    pub light: Vec3,
}

/// A neighbour ray that misses the plane (beyond the horizon) gets this local-coordinate
/// difference: the whole rectangle, i.e. the coarsest useful level.
const MISSED_DIFFERENTIAL: f64 = 1.0;

impl Scene {
    /// The nearest hit of the primary ray `rays[0]`; `rays[1]` and `rays[2]` are the rays of
    /// the pixels to the right and below, intersected with the hit plane.
    pub fn intersect(&self, rays: &[Ray; 3]) -> Option<SurfaceHit> {
        let mut best: Option<(usize, f64, [f64; 2])> = None;
        for (i, q) in self.quads.iter().enumerate() {
            if let Some((t, [a, b])) = q.plane_hit(&rays[0]) {
                let inside = (0.0..=1.0).contains(&a) && (0.0..=1.0).contains(&b);
                let closer = match best {
                    Some((_, bt, _)) => t < bt,
                    None => true,
                };
                if inside && closer {
                    best = Some((i, t, [a, b]));
                }
            }
        }
        let (quad, t, local) = best?;
        let q = &self.quads[quad];
        let diff = |r: &Ray| match q.plane_hit(r) {
            Some((_, l)) => [l[0] - local[0], l[1] - local[1]],
            None => [MISSED_DIFFERENTIAL, MISSED_DIFFERENTIAL],
        };
        let mut normal = q.normal();
        if normal.dot(rays[0].dir) > 0.0 {
            normal = -normal;
        }
        Some(SurfaceHit {
            quad,
            t,
            local,
            dlocal_dx: diff(&rays[1]),
            dlocal_dy: diff(&rays[2]),
            normal,
        })
    }

    /// The lookup a layer makes at a hit.
    pub fn lookup(&self, layer: &Layer, hit: &SurfaceHit) -> Lookup {
        let wrap = self.textures[layer.texture].address == AddressMode::Wrap;
        let coord = |k: usize| {
            let c = layer.offset[k] + hit.local[k] * layer.scale[k];
            (if wrap { c - c.floor() } else { c }) as f32
        };
        let grad = |d: [f64; 2]| {
            [
                (d[0] * layer.scale[0]) as f32,
                (d[1] * layer.scale[1]) as f32,
            ]
        };
        Lookup {
            texture: layer.texture,
            st: [coord(0), coord(1)],
            ddx: grad(hit.dlocal_dx),
            ddy: grad(hit.dlocal_dy),
        }
    }

    /// The lookups of a hit: the base layer and the optional detail layer.
    pub fn lookups(&self, hit: &SurfaceHit) -> (Lookup, Option<Lookup>) {
        let q = &self.quads[hit.quad];
        (
            self.lookup(&q.base, hit),
            q.detail.map(|d| self.lookup(&d, hit)),
        )
    }

    /// Colour seen along a ray that hits nothing.
    pub fn sky(&self, ray: &Ray) -> [f32; 4] {
        let d = ray.dir.normalized();
        let k = (d.y * 3.0).clamp(0.0, 1.0) as f32;
        let horizon = [0.78, 0.84, 0.92];
        let zenith = [0.22, 0.42, 0.78];
        let mix = |i: usize| horizon[i] + (zenith[i] - horizon[i]) * k;
        [mix(0), mix(1), mix(2), 1.0]
    }

    /// The shaded colour of a hit from its texture values: base × detail × (ambient + N·L).
    pub fn shade(&self, hit: &SurfaceHit, base: [f32; 4], detail: Option<[f32; 4]>) -> [f32; 4] {
        let d = detail.map_or(1.0, |c| 0.55 + 0.9 * (c[0] + c[1] + c[2]) / 3.0);
        let ndotl = hit.normal.dot(self.light).max(0.0) as f32;
        let k = d * (0.35 + 0.65 * ndotl);
        [base[0] * k, base[1] * k, base[2] * k, 1.0]
    }
}

#[cfg(test)]
mod tests {
    use super::super::camera::Camera;
    use super::*;
    use demandtex::textures::TexelFormat;

    fn one_texture_scene(quad: Quad) -> Scene {
        Scene {
            textures: vec![TextureSpec {
                pattern: Pattern::Checker { square: 8 },
                format: TexelFormat::RGBA8,
                size: 1024,
                address: AddressMode::Wrap,
                max_anisotropy: 1,
            }],
            quads: vec![quad],
            light: Vec3::new(0.0, 0.0, -1.0),
        }
    }

    fn layer(scale: f64) -> Layer {
        Layer {
            texture: 0,
            scale: [scale, scale],
            offset: [0.0, 0.0],
        }
    }

    #[test]
    fn facing_plane_gradients_equal_the_pixel_footprint_in_uv() {
        // A 4 × 4 plane at distance 5 facing the camera, texture repeated twice.
        let (w, h) = (64, 36);
        let cam = Camera::look_at(
            Vec3::default(),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(0.0, 1.0, 0.0),
            60.0,
            w,
            h,
        );
        let quad = Quad::new(
            Vec3::new(-2.0, -2.0, 5.0),
            Vec3::new(4.0, 0.0, 0.0),
            Vec3::new(0.0, 4.0, 0.0),
            layer(2.0),
            None,
        );
        let scene = one_texture_scene(quad);
        let hit = scene
            .intersect(&cam.pixel_rays(w / 2, h / 2))
            .expect("centre pixel hits");
        let (l, detail) = scene.lookups(&hit);
        assert!(detail.is_none());
        // One pixel is footprint(5) world units; the quad maps 4 units to 2 texture periods.
        let expect = (cam.pixel_footprint(5.0) * 2.0 / 4.0) as f32;
        // The camera's right is world -x, so a step right moves u the other way.
        assert!(
            (l.ddx[0].abs() - expect).abs() < 1e-6 * expect.max(1.0),
            "{l:?} {expect}"
        );
        assert!(l.ddx[1].abs() < 1e-9);
        assert!(
            (l.ddy[1].abs() - expect).abs() < 1e-6 * expect.max(1.0),
            "{l:?}"
        );
        assert!(l.ddy[0].abs() < 1e-9);
        assert!((0.0..1.0).contains(&l.st[0]) && (0.0..1.0).contains(&l.st[1]));
        // The normal faces the camera.
        assert!(hit.normal.z < 0.0);
    }

    #[test]
    fn gradients_grow_with_distance_on_a_receding_floor() {
        let (w, h) = (64, 36);
        let cam = Camera::look_at(
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 1.0, 1.0),
            Vec3::new(0.0, 1.0, 0.0),
            60.0,
            w,
            h,
        );
        let floor = Quad::new(
            Vec3::new(-50.0, 0.0, 0.0),
            Vec3::new(100.0, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 1000.0),
            layer(1.0),
            None,
        );
        let scene = one_texture_scene(floor);
        let near = scene.intersect(&cam.pixel_rays(w / 2, h - 1)).unwrap();
        let far = scene.intersect(&cam.pixel_rays(w / 2, h / 2 + 1)).unwrap();
        assert!(far.t > near.t);
        assert!(far.dlocal_dy[1].abs() > near.dlocal_dy[1].abs());
        // Stepping down the image comes nearer on the floor.
        assert!(near.dlocal_dy[1] < 0.0);
    }

    #[test]
    fn rays_above_the_horizon_miss_and_see_sky() {
        let cam = Camera::look_at(
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 1.0, 1.0),
            Vec3::new(0.0, 1.0, 0.0),
            60.0,
            64,
            36,
        );
        let floor = Quad::new(
            Vec3::new(-50.0, 0.0, 0.0),
            Vec3::new(100.0, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 1000.0),
            layer(1.0),
            None,
        );
        let scene = one_texture_scene(floor);
        let rays = cam.pixel_rays(32, 0);
        assert!(scene.intersect(&rays).is_none());
        let sky = scene.sky(&rays[0]);
        assert!(sky.iter().all(|c| (0.0..=1.0).contains(c)));
    }

    #[test]
    fn nearest_rectangle_wins() {
        let cam = Camera::look_at(
            Vec3::default(),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(0.0, 1.0, 0.0),
            60.0,
            8,
            8,
        );
        let mk = |z: f64| {
            Quad::new(
                Vec3::new(-1.0, -1.0, z),
                Vec3::new(2.0, 0.0, 0.0),
                Vec3::new(0.0, 2.0, 0.0),
                layer(1.0),
                None,
            )
        };
        let mut scene = one_texture_scene(mk(9.0));
        scene.quads.push(mk(3.0));
        let hit = scene.intersect(&cam.pixel_rays(4, 4)).unwrap();
        assert_eq!(hit.quad, 1);
        assert!((hit.t - 3.0).abs() < 0.1);
    }
}
