//! Properties of the filters over the fixtures' geometry (rotations, valence 5, subfaces,
//! triangles, tiled faces, every data type): a uniform texture filters to its value, a
//! missing unit is requested and the lookup falls back to the face's constant, every
//! lookup with bad input returns zeros or a finite value without panicking, and the
//! stochastic filter is the point filter at jitter ½ and averages to bilinear.

use super::*;
use proptest::prelude::*;

/// Every filter type.
const ALL: [PtexFilterType; 9] = [
    PtexFilterType::Point,
    PtexFilterType::Bilinear,
    PtexFilterType::Box,
    PtexFilterType::Gaussian,
    PtexFilterType::Bicubic,
    PtexFilterType::BSpline,
    PtexFilterType::CatmullRom,
    PtexFilterType::Mitchell,
    PtexFilterType::StochasticPoint,
];

/// The fixture's structure with every texel replaced by `texel`.
struct Uniform<'a> {
    inner: &'a ResidentPtex,
    texel: Vec<u8>,
    packed: Vec<u8>,
}

impl<'a> Uniform<'a> {
    fn new(inner: &'a ResidentPtex, texel: Vec<u8>) -> Self {
        // Enough texels for any unit of the fixtures (at most 512×256).
        let packed = texel.repeat(512 * 512);
        Uniform {
            inner,
            texel,
            packed,
        }
    }
}

impl PtexFaces for Uniform<'_> {
    fn texture(&self) -> &PtexTextureInfo {
        self.inner.texture()
    }
    fn face_info(&self, face: u32) -> Option<&FaceInfo> {
        self.inner.face_info(face)
    }
    fn constant(&self, _face: u32) -> Option<&[u8]> {
        Some(&self.texel)
    }
    fn tiling(&self, face: u32, res: Res) -> Option<Tiling> {
        self.inner.tiling(face, res)
    }
    fn texels(&self, face: u32, res: Res, tile: usize, visit: &mut dyn FnMut(Texels<'_>)) -> bool {
        let res = self.tiling(face, res).map_or(res, |t| t.tile_res);
        if (face + tile as u32) % 3 == 0 {
            visit(Texels::Constant(&self.texel));
        } else {
            visit(Texels::Packed(
                &self.packed[..res.texels() * self.texel.len()],
            ));
        }
        true
    }
}

/// A store that records the units asked for and hides those in `hidden` (all if `None`).
struct Recording<'a> {
    inner: &'a ResidentPtex,
    hide_all: bool,
    asked: RefCell<HashSet<(u32, Res, usize)>>,
}

impl PtexFaces for Recording<'_> {
    fn texture(&self) -> &PtexTextureInfo {
        self.inner.texture()
    }
    fn face_info(&self, face: u32) -> Option<&FaceInfo> {
        self.inner.face_info(face)
    }
    fn constant(&self, face: u32) -> Option<&[u8]> {
        self.inner.constant(face)
    }
    fn tiling(&self, face: u32, res: Res) -> Option<Tiling> {
        self.inner.tiling(face, res)
    }
    fn texels(&self, face: u32, res: Res, tile: usize, visit: &mut dyn FnMut(Texels<'_>)) -> bool {
        self.asked.borrow_mut().insert((face, res, tile));
        !self.hide_all && self.inner.texels(face, res, tile, visit)
    }
}

fn options(filter: PtexFilterType) -> PtexFilterOptions {
    PtexFilterOptions {
        filter,
        sharpness: 0.3,
        ..Default::default()
    }
}

struct Loaded {
    fx: Fixture,
    store: ResidentPtex,
}

fn loaded() -> Vec<Loaded> {
    fixtures::all()
        .into_iter()
        .map(|fx| {
            let store = store(&fx.path, false);
            Loaded { fx, store }
        })
        .collect()
}

/// A lookup: face index (taken modulo the face count), point and footprint.
fn lookup() -> impl Strategy<Value = (u32, f32, f32, f32, f32, f32, f32)> {
    (
        0u32..64,
        -0.3f32..1.3,
        -0.3f32..1.3,
        -0.6f32..0.6,
        -0.1f32..0.1,
        -0.1f32..0.1,
        -0.6f32..0.6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A texture whose every texel has one value filters to that value, across every edge,
    /// corner and resolution of the fixtures' meshes (not the black-border, tangent-vector
    /// fixture: there, a value is lost past a border and rotated across an edge).
    #[test]
    fn uniform_textures_filter_to_their_value(l in lookup(), lerp in any::<bool>()) {
        for ld in loaded() {
            let tex = *ld.store.texture();
            let texel: Vec<u8> = (0..tex.pixel_size()).map(|i| [0x55u8, 0x3c, 0x12, 0x3f][i % 4]).collect();
            let uniform = Uniform::new(&ld.store, texel.clone());
            let mut want = vec![0f32; tex.num_channels];
            Channels { first: 0, count: tex.num_channels, data_type: tex.data_type, pixel_size: tex.pixel_size() }
                .convert(&texel, &mut want);
            let face = l.0 % tex.num_faces as u32;
            if tex.u_border == BorderMode::Black || tex.edge_filter == EdgeFilterMode::TanVec {
                continue;
            }
            for filter in ALL {
                let o = PtexFilterOptions { lerp, ..options(filter) };
                let mut got = vec![0f32; tex.num_channels];
                let (mut u, mut v) = (l.1, l.2);
                if tex.mesh_type == MeshType::Triangle && u + v > 1.0 {
                    (u, v) = (1.0 - v, 1.0 - u);
                }
                let s = ptex_sample(&uniform, face, u, v, l.3, l.4, l.5, l.6, &o, &mut got);
                prop_assert!(s.resident);
                for (g, w) in got.iter().zip(&want) {
                    prop_assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{} {filter:?} face {face} {l:?}: {got:?} != {want:?}", ld.fx.name);
                }
            }
        }
    }

    /// With every unit missing, a lookup asks for exactly the units the resident lookup
    /// reads, and returns the face's constant colour, non-resident.
    #[test]
    fn missing_units_are_all_requested_and_fall_back(l in lookup()) {
        for ld in loaded() {
            let tex = *ld.store.texture();
            let face = l.0 % tex.num_faces as u32;
            for filter in ALL {
                let o = options(filter);
                let run = |hide_all| {
                    let rec = Recording { inner: &ld.store, hide_all, asked: RefCell::new(HashSet::new()) };
                    let mut out = vec![0f32; tex.num_channels];
                    let s = ptex_sample(&rec, face, l.1, l.2, l.3, l.4, l.5, l.6, &o, &mut out);
                    (s, out, rec.asked.into_inner())
                };
                let (full, _, read) = run(false);
                let (miss, value, asked) = run(true);
                prop_assert!(full.resident);
                if filter == PtexFilterType::StochasticPoint {
                    // It stops at nothing either: the same texels are asked for.
                    prop_assert_eq!(&asked, &read);
                    prop_assert_eq!(miss.resident, asked.is_empty());
                    continue;
                }
                prop_assert_eq!(&asked, &read, "{} {:?}", ld.fx.name, filter);
                prop_assert_eq!(miss.resident, asked.is_empty());
                if !asked.is_empty() {
                    let mut constant = vec![0f32; tex.num_channels];
                    Channels { first: 0, count: tex.num_channels, data_type: tex.data_type, pixel_size: tex.pixel_size() }
                        .constant(&ld.store, face, &mut constant);
                    prop_assert_eq!(value, constant);
                }
            }
        }
    }

    /// Any input — out-of-range faces and channels, huge, tiny, negative or non-finite
    /// coordinates and footprints — gives finite values or zeros, never a panic.
    #[test]
    fn bad_input_never_panics(
        face in 0u32..20,
        vals in proptest::collection::vec(prop_oneof![
            -1e30f32..1e30, -4f32..4.0, Just(f32::NAN), Just(f32::INFINITY), Just(0.0f32), Just(1e-30f32)
        ], 8),
        first in 0usize..6,
    ) {
        for ld in loaded() {
            for filter in ALL {
                let o = PtexFilterOptions { width: vals[6], blur: vals[7].abs().min(10.0), first_channel: first, ..options(filter) };
                let mut out = [0f32; 5];
                let s = ptex_sample(&ld.store, face, vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], &o, &mut out);
                prop_assert!(s.channels <= 5);
                if vals.iter().all(|x| x.is_finite()) && vals.iter().all(|x| x.abs() < 1e6) {
                    prop_assert!(out.iter().all(|x| x.is_finite()), "{} {filter:?}: {out:?}", ld.fx.name);
                }
            }
        }
    }
}

/// At jitter ½ and a zero footprint the stochastic filter is the point filter; averaged
/// over a uniform grid of jitters it is the bilinear filter inside the face.
#[test]
fn stochastic_point_is_point_and_averages_to_bilinear() {
    for ld in loaded() {
        let tex = *ld.store.texture();
        let n = tex.num_channels;
        for face in 0..tex.num_faces as u32 {
            let f = *ld.store.face_info(face).unwrap();
            for &(u, v) in &[(0.31f32, 0.42f32), (0.5, 0.25), (0.77, 0.13)] {
                let mut a = vec![0f32; n];
                let mut b = vec![0f32; n];
                let st = options(PtexFilterType::StochasticPoint);
                ptex_sample(&ld.store, face, u, v, 0.0, 0.0, 0.0, 0.0, &st, &mut a);
                ptex_sample(
                    &ld.store,
                    face,
                    u,
                    v,
                    0.0,
                    0.0,
                    0.0,
                    0.0,
                    &options(PtexFilterType::Point),
                    &mut b,
                );
                assert_eq!(a, b, "{} face {face} ({u}, {v})", ld.fx.name);
                if tex.mesh_type == MeshType::Triangle || f.is_subface() {
                    continue;
                }
                // Bilinear inside the face (away from edges, where bilinear blends across).
                let (ru, rv) = (f.res.u() as f32, f.res.v() as f32);
                if u * ru < 0.5 || u * ru > ru - 0.5 || v * rv < 0.5 || v * rv > rv - 0.5 {
                    continue;
                }
                let steps = 16;
                let mut mean = vec![0f64; n];
                for i in 0..steps {
                    for j in 0..steps {
                        let jitter = [
                            (i as f32 + 0.5) / steps as f32,
                            (j as f32 + 0.5) / steps as f32,
                        ];
                        let o = PtexFilterOptions { jitter, ..st };
                        ptex_sample(&ld.store, face, u, v, 0.0, 0.0, 0.0, 0.0, &o, &mut a);
                        for (m, x) in mean.iter_mut().zip(&a) {
                            *m += f64::from(*x) / f64::from(steps * steps);
                        }
                    }
                }
                let bil = options(PtexFilterType::Bilinear);
                ptex_sample(&ld.store, face, u, v, 0.0, 0.0, 0.0, 0.0, &bil, &mut b);
                for (m, x) in mean.iter().zip(&b) {
                    // The grid of jitters quantises the bilinear weights to 1/16.
                    let tol = 1.0 / 16.0 * f64::from(x.abs().max(1.0)) * 2.0;
                    assert!(
                        (m - f64::from(*x)).abs() <= tol,
                        "{} face {face}: {mean:?} vs {b:?}",
                        ld.fx.name
                    );
                }
            }
        }
    }
}

/// The stochastic filter blends two levels by the fraction of the level of detail, and a
/// footprint as large as the face reads its constant colour.
#[test]
fn stochastic_point_blends_two_levels() {
    let fx = Fixture::load("quad_uint8_rgb");
    let store = store(&fx.path, false);
    let face = 1; // 64×16
    let f = *store.face_info(face).unwrap();
    assert_eq!(f.res, Res::new(6, 4));
    let st = options(PtexFilterType::StochasticPoint);
    let (u, v) = (0.4f32, 0.6f32);
    let mut out = [0f32; 3];
    // lod 1.5 in u (the larger): half of level 1 (32×8), half of level 2 (16×4).
    let w = 2f32.powf(1.5) / 64.0;
    ptex_sample(&store, face, u, v, w, 0.0, 0.0, 0.0, &st, &mut out);
    let at = |res: Res| {
        let (ui, vi) = ((u * res.u() as f32) as usize, (v * res.v() as f32) as usize);
        fx.file.pixel(face, res, ui, vi).unwrap()
    };
    let (a, b) = (at(Res::new(5, 3)), at(Res::new(4, 2)));
    for c in 0..3 {
        let want = a[c] * 0.5 + b[c] * 0.5;
        assert!((out[c] - want).abs() < 1e-5, "{out:?} vs {a:?} / {b:?}");
    }
    // A footprint of the whole face: the face's constant.
    ptex_sample(&store, face, u, v, 1.0, 0.0, 0.0, 1.0, &st, &mut out);
    let mut constant = [0f32; 3];
    values::to_f32(DataType::U8, fx.file.constant(face).unwrap(), &mut constant);
    assert_eq!(out, constant);
}
