//! Vectors, rays and a pinhole camera. Geometry is in `f64` so that ray differentials (small
//! differences of large coordinates) keep their precision far from the camera.

use std::ops::{Add, Mul, Neg, Sub};

/// A 3-vector.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Vec3 {
    /// x.
    pub x: f64,
    /// y (up).
    pub y: f64,
    /// z.
    pub z: f64,
}

impl Vec3 {
    /// A vector from its components.
    pub const fn new(x: f64, y: f64, z: f64) -> Vec3 {
        Vec3 { x, y, z }
    }

    /// Dot product.
    pub fn dot(self, o: Vec3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    /// Cross product.
    pub fn cross(self, o: Vec3) -> Vec3 {
        Vec3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }

    /// Euclidean length.
    pub fn length(self) -> f64 {
        self.dot(self).sqrt()
    }

    /// This vector scaled to unit length (zero stays zero).
    pub fn normalized(self) -> Vec3 {
        let l = self.length();
        if l > 0.0 {
            self * (1.0 / l)
        } else {
            self
        }
    }
}

impl Add for Vec3 {
    type Output = Vec3;
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl Sub for Vec3 {
    type Output = Vec3;
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f64> for Vec3 {
    type Output = Vec3;
    fn mul(self, k: f64) -> Vec3 {
        Vec3::new(self.x * k, self.y * k, self.z * k)
    }
}

impl Neg for Vec3 {
    type Output = Vec3;
    fn neg(self) -> Vec3 {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}

/// A ray: origin and (not necessarily unit) direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray {
    /// Where the ray starts.
    pub origin: Vec3,
    /// Where it goes.
    pub dir: Vec3,
}

impl Ray {
    /// The point at parameter `t`.
    pub fn at(&self, t: f64) -> Vec3 {
        self.origin + self.dir * t
    }
}

/// A pinhole camera producing rays through continuous pixel coordinates: pixel (x, y)
/// spans `[x, x + 1) × [y, y + 1)`, y growing downwards.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    eye: Vec3,
    forward: Vec3,
    right: Vec3,
    up: Vec3,
    /// Half the image plane's width at distance 1.
    half_width: f64,
    /// Half the image plane's height at distance 1.
    half_height: f64,
    width: u32,
    height: u32,
}

impl Camera {
    /// A camera at `eye` looking at `target`, with a vertical field of view in degrees, for
    /// an image of `width × height` pixels (square pixels).
    pub fn look_at(
        eye: Vec3,
        target: Vec3,
        world_up: Vec3,
        vfov_degrees: f64,
        width: u32,
        height: u32,
    ) -> Camera {
        let forward = (target - eye).normalized();
        let right = forward.cross(world_up).normalized();
        let up = right.cross(forward);
        let half_height = (vfov_degrees.to_radians() * 0.5).tan();
        let half_width = half_height * width.max(1) as f64 / height.max(1) as f64;
        Camera {
            eye,
            forward,
            right,
            up,
            half_width,
            half_height,
            width: width.max(1),
            height: height.max(1),
        }
    }

    /// What a device renderer needs of the camera: eye, forward, right and up vectors,
    /// the half extents of the image plane at distance 1, and the image size.
    pub fn parts(&self) -> ([Vec3; 4], [f64; 2], [u32; 2]) {
        (
            [self.eye, self.forward, self.right, self.up],
            [self.half_width, self.half_height],
            [self.width, self.height],
        )
    }

    /// The ray through the continuous pixel position `(x, y)`; the centre of pixel (i, j)
    /// is `(i + 0.5, j + 0.5)`.
    pub fn ray(&self, x: f64, y: f64) -> Ray {
        let sx = (2.0 * x / self.width as f64 - 1.0) * self.half_width;
        let sy = (1.0 - 2.0 * y / self.height as f64) * self.half_height;
        Ray {
            origin: self.eye,
            dir: self.forward + self.right * sx + self.up * sy,
        }
    }

    /// The rays through the centre of pixel `(i, j)` and through the centres of its right
    /// and lower neighbours: the primary ray and its two differentials.
    pub fn pixel_rays(&self, i: u32, j: u32) -> [Ray; 3] {
        let (x, y) = (i as f64 + 0.5, j as f64 + 0.5);
        [self.ray(x, y), self.ray(x + 1.0, y), self.ray(x, y + 1.0)]
    }

    /// The width of one pixel on a plane facing the camera at distance `d` along the view
    /// direction.
    #[cfg(test)]
    pub fn pixel_footprint(&self, d: f64) -> f64 {
        2.0 * self.half_width * d / self.width as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn centre_ray_looks_at_the_target() {
        let c = Camera::look_at(
            Vec3::new(1.0, 2.0, 3.0),
            Vec3::new(1.0, 2.0, 10.0),
            Vec3::new(0.0, 1.0, 0.0),
            60.0,
            100,
            50,
        );
        let r = c.ray(50.0, 25.0);
        let d = r.dir.normalized();
        assert!(
            close(d.x, 0.0) && close(d.y, 0.0) && close(d.z, 1.0),
            "{d:?}"
        );
    }

    #[test]
    fn image_top_is_up_and_edges_span_the_field_of_view() {
        let c = Camera::look_at(
            Vec3::default(),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(0.0, 1.0, 0.0),
            90.0,
            200,
            100,
        );
        let top = c.ray(100.0, 0.0).dir;
        assert!(close(top.y / top.z, 1.0), "{top:?}"); // tan(45°)
        let bottom = c.ray(100.0, 100.0).dir;
        assert!(close(bottom.y / bottom.z, -1.0));
        let side = c.ray(0.0, 50.0).dir;
        assert!(close(side.x.abs() / side.z, 2.0)); // aspect 2
    }

    #[test]
    fn neighbouring_rays_are_one_pixel_apart() {
        let c = Camera::look_at(
            Vec3::default(),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(0.0, 1.0, 0.0),
            50.0,
            64,
            36,
        );
        let [r, rx, ry] = c.pixel_rays(10, 20);
        // At distance 1 the rays' directions differ by one pixel footprint.
        assert!(close((rx.dir - r.dir).length(), c.pixel_footprint(1.0)));
        assert!(close((ry.dir - r.dir).length(), c.pixel_footprint(1.0)));
        assert!(close((rx.dir - r.dir).dot(ry.dir - r.dir), 0.0));
    }
}
