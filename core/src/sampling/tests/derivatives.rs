//! Lookups with the derivatives of their value ([`tex2d_grad_with_derivatives`]): the
//! value is `tex2d_grad`'s, the derivatives the analytic ones of the reference bilinear
//! filter, weighted across levels; zero where no filter produced the value.

use super::fixture::{assert_close, Fixture, Rng, Spec};
use crate::ids::TextureId;
use crate::sampling::{tex2d_grad, tex2d_grad_with_derivatives, SampleOptions};
use crate::textures::{AddressMode, FilterMode, TexelFormat, TexelType, TextureDesc};

const OPTS: SampleOptions = SampleOptions {
    fallback_to_coarser: false,
    request_key: 0,
    stochastic: None,
};

fn resident(spec: Spec) -> (Fixture, TextureId) {
    let mut fx = Fixture::new();
    let id = fx.add(spec);
    fx.map_all(id);
    (fx, id)
}

/// Gradients whose isotropic level of detail is `lod` on a `w × h` texture.
fn gradients(lod: f32, w: u32, h: u32) -> ([f32; 2], [f32; 2]) {
    let texels = lod.exp2();
    ([texels / w as f32, 0.0], [0.0, texels / h as f32])
}

/// `a·(1 − w) + b·w`, per channel of both derivatives.
fn mix2(a: ([f32; 4], [f32; 4]), b: ([f32; 4], [f32; 4]), w: f32) -> ([f32; 4], [f32; 4]) {
    let m = |x: [f32; 4], y: [f32; 4]| [0, 1, 2, 3].map(|k| x[k] * (1.0 - w) + y[k] * w);
    (m(a.0, b.0), m(a.1, b.1))
}

#[test]
fn derivatives_are_the_bilinear_slopes_at_every_level_and_address_mode() {
    let formats = [
        (300, 200, TexelFormat::RGBA8),
        (129, 65, TexelFormat::RGBA32F),
        (64, 96, TexelFormat::new(TexelType::F16, 2).unwrap()),
        (256, 128, TexelFormat::new(TexelType::U16, 1).unwrap()),
    ];
    for (w, h, format) in formats {
        for mode in [
            AddressMode::Wrap,
            AddressMode::Clamp,
            AddressMode::Mirror,
            AddressMode::Border,
        ] {
            let desc = TextureDesc {
                address: [mode; 2],
                ..TextureDesc::default()
            };
            let (fx, id) = resident(Spec {
                format,
                desc,
                ..Spec::new(w, h)
            });
            let tex = fx.tex(id);
            let levels = tex.layout.num_levels();
            let mut rng = Rng(u64::from(w) ^ mode as u64);
            for level in 0..levels {
                let l = tex.layout.levels[level as usize];
                for k in 0..60 {
                    // A grid of 1/4096 (exact in f32), and every fourth point on a texel
                    // centre, where the second texel of each pair has weight 0.
                    let (mut s, mut t) = (rng.f32(-0.5, 1.5), rng.f32(-0.5, 1.5));
                    (s, t) = ((s * 4096.0).round() / 4096.0, (t * 4096.0).round() / 4096.0);
                    if k % 4 == 0 {
                        // A centre where f32 and the f64 reference agree it is one (the
                        // derivative jumps there): exact for power-of-two sizes.
                        let centre = |c: f32, n: u32| {
                            let c2 = ((c * n as f32).floor() + 0.5) / n as f32;
                            let exact = c2 as f64 * n as f64 == (c2 * n as f32) as f64;
                            if exact {
                                c2
                            } else {
                                c
                            }
                        };
                        (s, t) = (centre(s, l.width), centre(t, l.height));
                    }
                    let (ddx, ddy) = gradients(level as f32, w, h);
                    let got = tex2d_grad_with_derivatives(fx.view(), id, s, t, ddx, ddy, &OPTS);
                    let plain = tex2d_grad(fx.view(), id, s, t, ddx, ddy, &OPTS);
                    let what = format!("{w}×{h} {format:?} {mode:?} level {level} ({s}, {t})");
                    assert_eq!(got.sample, plain, "{what}: the value is tex2d_grad's");
                    assert!(got.sample.resident, "{what}");
                    if ddx[0].min(ddy[1]) >= 1.0 {
                        // The whole texture: its base colour, no filter.
                        assert_eq!((got.ds, got.dt), ([0.0; 4], [0.0; 4]), "{what}");
                        continue;
                    }
                    let (ds, dt) = tex.bilinear_slopes(level, s, t);
                    // Slopes scale texel differences by the level's size: compare relative
                    // to it.
                    assert_close(got.ds, ds, 2e-5 * l.width as f32, &format!("{what} ds"));
                    assert_close(got.dt, dt, 2e-5 * l.height as f32, &format!("{what} dt"));
                }
            }
        }
    }
}

#[test]
fn trilinear_derivatives_blend_the_two_levels_like_the_value() {
    let (fx, id) = resident(Spec::new(256, 128));
    let tex = fx.tex(id);
    let mut rng = Rng(5);
    for _ in 0..200 {
        let lod = rng.f32(0.0, 6.0);
        let (s, t) = (rng.f32(0.0, 1.0), rng.f32(0.0, 1.0));
        let (ddx, ddy) = gradients(lod, 256, 128);
        let got = tex2d_grad_with_derivatives(fx.view(), id, s, t, ddx, ddy, &OPTS);
        let fine = lod.floor() as u32;
        let w = lod - lod.floor();
        let want = mix2(
            tex.bilinear_slopes(fine, s, t),
            tex.bilinear_slopes(fine + 1, s, t),
            w,
        );
        let tol = 1e-4 * 256.0 / (1u32 << fine) as f32;
        assert_close(got.ds, want.0, tol, &format!("lod {lod} ({s}, {t}) ds"));
        assert_close(got.dt, want.1, tol, &format!("lod {lod} ({s}, {t}) dt"));
    }
}

#[test]
fn point_filtering_misses_and_stand_ins_have_zero_derivatives() {
    let point = TextureDesc {
        filter: FilterMode::Point,
        ..TextureDesc::default()
    };
    let (fx, id) = resident(Spec {
        desc: point,
        ..Spec::new(128, 128)
    });
    let d = tex2d_grad_with_derivatives(fx.view(), id, 0.3, 0.6, [1e-3, 0.0], [0.0, 1e-3], &OPTS);
    assert!(d.sample.resident);
    assert_eq!((d.ds, d.dt), ([0.0; 4], [0.0; 4]));

    // A miss: zero derivatives, the same value and requests as tex2d_grad.
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(128, 128));
    fx.map_sampler(id);
    let plain = tex2d_grad(fx.view(), id, 0.3, 0.6, [1e-3, 0.0], [0.0, 1e-3], &OPTS);
    let plain_requests = fx.requests();
    let d = tex2d_grad_with_derivatives(fx.view(), id, 0.3, 0.6, [1e-3, 0.0], [0.0, 1e-3], &OPTS);
    assert_eq!(d.sample, plain);
    assert!(!d.sample.resident);
    assert_eq!((d.ds, d.dt), ([0.0; 4], [0.0; 4]));
    assert_eq!(fx.requests(), plain_requests);

    // The whole texture: the base colour, zero derivatives.
    let d = tex2d_grad_with_derivatives(fx.view(), id, 0.3, 0.6, [2.0, 0.0], [0.0, 2.0], &OPTS);
    assert!(d.sample.resident);
    assert_eq!((d.ds, d.dt), ([0.0; 4], [0.0; 4]));
}

#[test]
fn a_coarser_stand_in_gives_its_own_derivatives() {
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(256, 256));
    fx.map_sampler(id);
    fx.map_level(id, 2);
    let tex = fx.tex(id);
    let fallback = SampleOptions {
        fallback_to_coarser: true,
        ..OPTS
    };
    let (s, t) = (0.3137, 0.6813);
    let d = tex2d_grad_with_derivatives(
        fx.view(),
        id,
        s,
        t,
        [0.5 / 256.0, 0.0],
        [0.0, 0.5 / 256.0],
        &fallback,
    );
    assert!(d.sample.coarser);
    let (ds, dt) = tex.bilinear_slopes(2, s, t);
    assert_close(d.ds, ds, 1e-3, "ds");
    assert_close(d.dt, dt, 1e-3, "dt");
}

#[test]
fn a_stochastic_option_is_ignored_and_a_centre_reads_the_pair_it_slopes_to() {
    let (fx, id) = resident(Spec::new(256, 256));
    let jittered = SampleOptions {
        stochastic: Some([0.1, 0.9]),
        ..OPTS
    };
    let (ddx, ddy) = gradients(1.5, 256, 256);
    let a = tex2d_grad_with_derivatives(fx.view(), id, 0.4, 0.2, ddx, ddy, &jittered);
    let b = tex2d_grad_with_derivatives(fx.view(), id, 0.4, 0.2, ddx, ddy, &OPTS);
    assert_eq!(a, b);
    assert_eq!(
        a.sample,
        tex2d_grad(fx.view(), id, 0.4, 0.2, ddx, ddy, &OPTS)
    );

    // On the centre of the last texel of a tile, the slope needs the next tile's first
    // texel: a miss there is requested, where tex2d_grad reads one tile.
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1024, 1024));
    fx.map_sampler(id);
    let tile_w = fx.tex(id).layout.tile_width;
    fx.map_tile(id, 0, 0, 0);
    let s = (tile_w as f32 - 0.5) / 1024.0;
    let t = 10.5 / 1024.0;
    let tiny = ([1e-5, 0.0], [0.0, 1e-5]);
    assert!(tex2d_grad(fx.view(), id, s, t, tiny.0, tiny.1, &OPTS).resident);
    assert_eq!(fx.requests(), Vec::<u32>::new());
    let d = tex2d_grad_with_derivatives(fx.view(), id, s, t, tiny.0, tiny.1, &OPTS);
    assert!(!d.sample.resident);
    assert_eq!(fx.requests(), vec![fx.tile_page(id, 0, 1, 0)]);
    fx.map_tile(id, 0, 1, 0);
    let d = tex2d_grad_with_derivatives(fx.view(), id, s, t, tiny.0, tiny.1, &OPTS);
    assert!(d.sample.resident);
    let (ds, _) = fx.tex(id).bilinear_slopes(0, s, t);
    assert_close(d.ds, ds, 1e-2, "ds across the tile edge");
}
