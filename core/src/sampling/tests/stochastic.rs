//! Stochastic two-level point filtering (`SampleOptions::stochastic`): one texel per level,
//! picked by the caller's jitter with its bilinear weight; averaged over jitters, the
//! trilinear filter.

use super::fixture::{assert_close, mix, Fixture, Spec};
use crate::ids::TextureId;
use crate::sampling::{tex2d_grad, tex2d_lod, SampleOptions};
use crate::textures::{FilterMode, MipFilter, TextureDesc};

fn stochastic(jitter: [f32; 2]) -> SampleOptions {
    SampleOptions {
        stochastic: Some(jitter),
        ..SampleOptions::default()
    }
}

fn texture(w: u32, h: u32, filter: FilterMode, mip_filter: MipFilter) -> (Fixture, TextureId) {
    let mut fx = Fixture::new();
    let id = fx.add(Spec {
        desc: TextureDesc {
            filter,
            mip_filter,
            max_anisotropy: 8,
            ..TextureDesc::default()
        },
        ..Spec::new(w, h)
    });
    fx.map_all(id);
    (fx, id)
}

#[test]
fn the_middle_jitter_blends_the_nearest_texel_of_two_levels() {
    for filter in [FilterMode::Point, FilterMode::Linear] {
        let (fx, id) = texture(1000, 300, filter, MipFilter::Linear);
        let tex = fx.tex(id);
        for (s, t) in [(0.3, 0.6), (0.01, 0.99), (0.777, 0.123)] {
            let got = tex2d_lod(fx.view(), id, s, t, 1.25, &stochastic([0.5, 0.5]));
            assert!(got.resident && !got.coarser);
            let want = mix(tex.point(1, s, t), tex.point(2, s, t), 0.25);
            assert_close(got.value, want, 1e-5, &format!("{filter:?} at ({s}, {t})"));
        }
    }
    // A point mip filter reads the nearest level only.
    let (fx, id) = texture(1000, 300, FilterMode::Linear, MipFilter::Point);
    let got = tex2d_lod(fx.view(), id, 0.3, 0.6, 1.25, &stochastic([0.5, 0.5]));
    assert_close(got.value, fx.tex(id).point(1, 0.3, 0.6), 1e-5, "point mip");
}

#[test]
fn averaged_over_jitters_it_is_the_trilinear_filter() {
    // 256²: levels 1 and 2 are 128 and 64 texels wide. Coordinates on a 1/8192 grid put
    // every bilinear fraction of both levels on a multiple of 1/128, so 128 strata a side
    // pick each texel exactly as often as its weight.
    let (fx, id) = texture(256, 256, FilterMode::Linear, MipFilter::Linear);
    let n = 128;
    for (s, t) in [
        (1001.0 / 8192.0, 5003.0 / 8192.0),
        (77.0 / 8192.0, 8100.0 / 8192.0),
    ] {
        let mut sum = [0.0f64; 4];
        for j in 0..n {
            for i in 0..n {
                let jitter = [(i as f32 + 0.5) / n as f32, (j as f32 + 0.5) / n as f32];
                let v = tex2d_lod(fx.view(), id, s, t, 1.25, &stochastic(jitter)).value;
                for k in 0..4 {
                    sum[k] += f64::from(v[k]);
                }
            }
        }
        let mean = sum.map(|x| (x / f64::from(n * n)) as f32);
        let trilinear = tex2d_lod(fx.view(), id, s, t, 1.25, &SampleOptions::default()).value;
        assert_close(mean, trilinear, 1e-4, &format!("({s}, {t})"));
    }
}

#[test]
fn a_lookup_requests_one_page_per_level() {
    // A point where the bilinear footprint of level 0 spans four tiles.
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1024, 1024));
    fx.map_sampler(id);
    let tile = 1024 / fx.tex(id).sampler.tile_width;
    let s = 1.0 / tile as f32; // on the boundary between tiles 0 and 1
    let got = tex2d_lod(fx.view(), id, s, s, 0.0, &stochastic([0.9, 0.1]));
    assert!(!got.resident);
    assert_eq!(
        fx.requests(),
        vec![fx.texel_page(id, 0, 1024 / tile, 1024 / tile - 1)]
    );
    // The plain bilinear lookup asks for all four.
    let bilinear = tex2d_lod(fx.view(), id, s, s, 0.0, &SampleOptions::default());
    assert!(!bilinear.resident);
    assert_eq!(fx.requests().len(), 4);
}

#[test]
fn the_footprint_is_isotropic() {
    let (fx, id) = texture(1024, 1024, FilterMode::Linear, MipFilter::Linear);
    let (s, t) = (0.4, 0.7);
    // 8 texels along x, 1 along y: level 3 for a stochastic lookup (the longer gradient),
    // 8 probes at level 0 for the anisotropic filter.
    let (ddx, ddy) = ([8.0 / 1024.0, 0.0], [0.0, 1.0 / 1024.0]);
    let j = stochastic([0.5, 0.5]);
    let got = tex2d_grad(fx.view(), id, s, t, ddx, ddy, &j);
    assert_eq!(got, tex2d_lod(fx.view(), id, s, t, 3.0, &j));
    assert_close(got.value, fx.tex(id).point(3, s, t), 1e-5, "level 3");
}
