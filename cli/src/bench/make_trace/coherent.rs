//! The coherent trace: a pinhole camera flying down a corridor — floor, ceiling and two
//! walls, each textured with a repeating texture — past tilted panels, one query per pixel
//! in pixel order, frame after frame. Derivatives are the exact ray differentials of the
//! pixel's hit on its plane (Igehy 1999), so the level of detail grows with distance and
//! footprints stretch on surfaces seen at grazing angles.

use super::super::trace::Query;
use crate::demo::camera::{Camera, Vec3};
use rayon::prelude::*;

/// Corridor half-width and height, in scene units.
const HALF_WIDTH: f64 = 4.0;
const HEIGHT: f64 = 5.0;
/// Scene units per texture repeat on the corridor's surfaces.
const REPEAT: [f64; 4] = [8.0, 8.0, 5.0, 5.0];
/// Camera travel per frame.
const STEP: f64 = 6.0;
/// Distance between panels along the corridor.
const PANEL_SPACING: f64 = 7.0;
/// Panel width and height.
const PANEL_SIZE: (f64, f64) = (1.6, 2.4);
/// Vertical field of view, degrees.
const VFOV: f64 = 60.0;

/// A textured plane, bounded (a panel) or not (the corridor).
struct Plane {
    origin: Vec3,
    normal: Vec3,
    /// Unit axes in the plane: s grows along `eu`, t along `ev`.
    eu: Vec3,
    ev: Vec3,
    /// Scene units per texture repeat.
    repeat: f64,
    /// Panels: the extent along `eu` and `ev` from `origin`.
    extent: Option<(f64, f64)>,
    texture: u32,
}

/// The corridor and its panels, far enough down the corridor for `frames` frames.
fn scene(num_textures: u32, frames: u32) -> Vec<Plane> {
    let n = num_textures;
    let tex = |i: u32| i % n;
    let x = Vec3::new(1.0, 0.0, 0.0);
    let y = Vec3::new(0.0, 1.0, 0.0);
    let z = Vec3::new(0.0, 0.0, 1.0);
    let mut planes = vec![
        // Floor, ceiling, left wall, right wall; t runs downwards on the walls.
        Plane {
            origin: Vec3::default(),
            normal: y,
            eu: x,
            ev: z,
            repeat: REPEAT[0],
            extent: None,
            texture: tex(0),
        },
        Plane {
            origin: y * HEIGHT,
            normal: -y,
            eu: x,
            ev: -z,
            repeat: REPEAT[1],
            extent: None,
            texture: tex(1),
        },
        Plane {
            origin: x * -HALF_WIDTH + y * HEIGHT,
            normal: x,
            eu: -z,
            ev: -y,
            repeat: REPEAT[2],
            extent: None,
            texture: tex(2),
        },
        Plane {
            origin: x * HALF_WIDTH + y * HEIGHT,
            normal: -x,
            eu: z,
            ev: -y,
            repeat: REPEAT[3],
            extent: None,
            texture: tex(3),
        },
    ];
    let panels = ((frames as f64 * STEP + 80.0) / PANEL_SPACING).ceil() as u32;
    let others = n.saturating_sub(4).max(1);
    for k in 0..panels {
        let side = if k % 2 == 0 { -1.0 } else { 1.0 };
        let theta = side * (0.4 + 0.25 * (k % 3) as f64);
        let lean = 0.15 + 0.1 * (k % 2) as f64;
        let eu = Vec3::new(theta.cos(), 0.0, -theta.sin());
        let n0 = Vec3::new(theta.sin(), 0.0, theta.cos());
        let normal = (n0 * lean.cos() + y * lean.sin()).normalized();
        let ev = eu.cross(normal);
        let centre = Vec3::new(side * 1.3, 1.6, -5.0 - k as f64 * PANEL_SPACING);
        let (w, h) = PANEL_SIZE;
        planes.push(Plane {
            origin: centre - eu * (0.5 * w) - ev * (0.5 * h),
            normal,
            eu,
            ev,
            repeat: 2.0 * w,
            extent: Some((w, h)),
            texture: if n > 4 { 4 + k % others } else { tex(k) },
        });
    }
    planes
}

/// The camera of frame `f`: moving down the corridor, swaying and looking around.
fn camera(f: u32, width: u32, height: u32, seed: u64) -> Camera {
    let phase = (seed % 1000) as f64 * 0.618;
    let f = f as f64;
    let eye = Vec3::new(
        0.8 * (0.37 * f + phase).sin(),
        1.6 + 0.25 * (0.53 * f + phase).sin(),
        2.0 - STEP * f,
    );
    let yaw = 0.45 * (0.29 * f + 0.5 + phase).sin();
    let pitch = -0.12 + 0.15 * (0.41 * f + phase).sin();
    let dir = Vec3::new(
        yaw.sin() * pitch.cos(),
        pitch.sin(),
        -yaw.cos() * pitch.cos(),
    );
    Camera::look_at(
        eye,
        eye + dir,
        Vec3::new(0.0, 1.0, 0.0),
        VFOV,
        width,
        height,
    )
}

/// The nearest plane the ray from `eye` along `d` hits, and the ray parameter there.
fn nearest_hit(planes: &[Plane], eye: Vec3, d: Vec3) -> Option<(f64, &Plane)> {
    let mut best: Option<(f64, &Plane)> = None;
    for p in planes {
        let denom = d.dot(p.normal);
        if denom.abs() < 1e-12 {
            continue;
        }
        let t = (p.origin - eye).dot(p.normal) / denom;
        if t.is_nan() || t <= 1e-6 || best.is_some_and(|(bt, _)| t >= bt) {
            continue;
        }
        if let Some((w, h)) = p.extent {
            let local = eye + d * t - p.origin;
            let (a, b) = (local.dot(p.eu), local.dot(p.ev));
            if !(0.0..=w).contains(&a) || !(0.0..=h).contains(&b) {
                continue;
            }
        }
        best = Some((t, p));
    }
    best
}

/// Texture coordinates (unreduced) of the offset `v` from a plane's origin.
fn plane_st(p: &Plane, v: Vec3) -> [f64; 2] {
    [v.dot(p.eu) / p.repeat, v.dot(p.ev) / p.repeat]
}

/// The query of the ray from `eye` along `d`, whose neighbours one pixel right and down
/// differ in direction by `ddx` and `ddy`.
fn pixel_query(planes: &[Plane], eye: Vec3, d: Vec3, ddx: Vec3, ddy: Vec3) -> Query {
    let Some((t, p)) = nearest_hit(planes, eye, d) else {
        // Unreachable inside the closed corridor; the whole first texture if it happens.
        return Query {
            texture: 0,
            s: 0.5,
            t: 0.5,
            ddx: [1.0, 0.0],
            ddy: [0.0, 1.0],
        };
    };
    let denom = d.dot(p.normal);
    // dP = t·dD − t·(dD·n / D·n)·D: the neighbour ray's hit on the same plane, to first order.
    let dp = |dd: Vec3| (dd - d * (dd.dot(p.normal) / denom)) * t;
    let [s, tt] = plane_st(p, eye + d * t - p.origin);
    let (gx, gy) = (plane_st(p, dp(ddx)), plane_st(p, dp(ddy)));
    Query {
        texture: p.texture,
        s: (s - s.floor()) as f32,
        t: (tt - tt.floor()) as f32,
        ddx: [gx[0] as f32, gx[1] as f32],
        ddy: [gy[0] as f32, gy[1] as f32],
    }
}

/// `count` queries: frames of `width × height` pixels in pixel order (the last frame cut
/// short), over textures of the given sizes.
pub(crate) fn queries(sizes: &[u32], count: u64, width: u32, height: u32, seed: u64) -> Vec<Query> {
    let per_frame = width as u64 * height as u64;
    let frames = count.div_ceil(per_frame) as u32;
    let planes = scene(sizes.len() as u32, frames);
    let mut out = Vec::with_capacity(count as usize);
    for f in 0..frames {
        let cam = camera(f, width, height, seed);
        let rows = ((count - out.len() as u64).div_ceil(width as u64)).min(height as u64) as u32;
        let frame: Vec<Query> = (0..rows)
            .into_par_iter()
            .flat_map_iter(|j| {
                let cam = &cam;
                let planes = &planes;
                (0..width).map(move |i| {
                    let (x, y) = (i as f64 + 0.5, j as f64 + 0.5);
                    let r = cam.ray(x, y);
                    let ddx = cam.ray(x + 1.0, y).dir - r.dir;
                    let ddy = cam.ray(x, y + 1.0).dir - r.dir;
                    pixel_query(planes, r.origin, r.dir, ddx, ddy)
                })
            })
            .collect();
        let take = (count as usize - out.len()).min(frame.len());
        out.extend_from_slice(&frame[..take]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_pixel_ordered_deterministic_and_textured_everywhere() {
        let sizes = [256, 128, 256, 128, 256, 128];
        let q = queries(&sizes, 2 * 40 * 30 + 70, 40, 30, 1);
        assert_eq!(q.len(), 2 * 40 * 30 + 70);
        assert_eq!(q, queries(&sizes, 2 * 40 * 30 + 70, 40, 30, 1));
        assert!(q.iter().all(|q| (q.texture as usize) < sizes.len()));
        assert!(q
            .iter()
            .all(|q| (0.0..=1.0).contains(&q.s) && (0.0..=1.0).contains(&q.t)));
        assert!(q
            .iter()
            .all(|q| q.ddx.iter().chain(&q.ddy).all(|v| v.is_finite())));
        // Every surface kind appears.
        for t in 0..sizes.len() as u32 {
            assert!(q.iter().any(|q| q.texture == t), "texture {t} unused");
        }
    }

    #[test]
    fn differentials_match_neighbouring_pixels() {
        // The hit of a ray a small step to the right (or down) differs from this pixel's hit
        // by the step times the differential, to first order.
        let planes = scene(6, 1);
        let cam = camera(0, 320, 180, 1);
        for (x, y) in [(100.5, 170.5), (20.5, 90.5), (300.5, 10.5), (160.5, 95.5)] {
            let r = cam.ray(x, y);
            let q = pixel_query(
                &planes,
                r.origin,
                r.dir,
                cam.ray(x + 1.0, y).dir - r.dir,
                cam.ray(x, y + 1.0).dir - r.dir,
            );
            let (t, p) = nearest_hit(&planes, r.origin, r.dir).unwrap();
            let st = plane_st(p, r.origin + r.dir * t - p.origin);
            let eps = 1e-4;
            for (k, (dx, dy)) in [(eps, 0.0), (0.0, eps)].into_iter().enumerate() {
                let r2 = cam.ray(x + dx, y + dy);
                let denom = r2.dir.dot(p.normal);
                let t2 = (p.origin - r2.origin).dot(p.normal) / denom;
                let st2 = plane_st(p, r2.origin + r2.dir * t2 - p.origin);
                let g = if k == 0 { q.ddx } else { q.ddy };
                for c in 0..2 {
                    let fd = (st2[c] - st[c]) / eps;
                    let tol = 1e-3 * (g[0].abs().max(g[1].abs()) as f64) + 1e-9;
                    assert!(
                        (fd - g[c] as f64).abs() < tol,
                        "({x}, {y}) {k} {c}: {fd} vs {g:?}"
                    );
                }
            }
        }
    }
}
