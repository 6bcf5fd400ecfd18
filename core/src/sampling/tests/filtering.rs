//! Values of resident lookups against the reference: point, bilinear, trilinear,
//! anisotropic, every level, every address mode.

use super::fixture::{assert_close, mix, Fixture, Rng, Spec};
use crate::ids::TextureId;
use crate::sampling::{tex2d, tex2d_grad, tex2d_lod, SampleOptions};
use crate::textures::{AddressMode, FilterMode, MipFilter, TexelFormat, TexelType, TextureDesc};

const OPTS: SampleOptions = SampleOptions {
    fallback_to_coarser: false,
    request_key: 0,
    stochastic: None,
};

/// A coordinate in [lo, hi) on a 1/4096 grid, so `s · width` is exact in `f32` and the
/// sampler's arithmetic matches the f64 reference.
fn coord(rng: &mut Rng, lo: f32, hi: f32) -> f32 {
    (rng.f32(lo, hi) * 4096.0).round() / 4096.0
}

fn resident_texture(spec: Spec) -> (Fixture, TextureId) {
    let mut fx = Fixture::new();
    let id = fx.add(spec);
    fx.map_all(id);
    (fx, id)
}

#[test]
fn every_level_matches_the_reference_down_to_one_texel() {
    let formats = [
        (1000, 300, TexelFormat::RGBA8),
        (300, 517, TexelFormat::new(TexelType::U8, 1).unwrap()),
        (129, 65, TexelFormat::RGBA32F),
    ];
    for (w, h, format) in formats {
        for filter in [FilterMode::Point, FilterMode::Linear] {
            let desc = TextureDesc {
                filter,
                ..TextureDesc::default()
            };
            let (fx, id) = resident_texture(Spec {
                format,
                desc,
                ..Spec::new(w, h)
            });
            let tex = fx.tex(id);
            let levels = tex.layout.num_levels();
            let last = tex.layout.levels[levels as usize - 1];
            assert_eq!((last.width, last.height), (1, 1));
            assert!(tex.layout.mip_tail_first_level >= 1, "level 0 is tiled");
            let mut rng = Rng(u64::from(w) * 31 + filter as u64);
            for level in 0..levels {
                for _ in 0..150 {
                    let (s, t) = (coord(&mut rng, -0.5, 1.5), coord(&mut rng, -0.5, 1.5));
                    let got = tex2d_lod(fx.view(), id, s, t, level as f32, &OPTS);
                    assert!(got.resident);
                    let what = format!("{w}×{h} {format:?} {filter:?} level {level} at ({s}, {t})");
                    assert_close(got.value, tex.level(level, s, t), 1e-5, &what);
                }
            }
            assert_eq!(
                fx.requests(),
                Vec::<u32>::new(),
                "resident lookups request nothing"
            );
        }
    }
}

#[test]
fn tex2d_samples_level_zero_and_touches_no_other_level() {
    let (fx, id) = resident_texture(Spec::new(1000, 300));
    let tex = fx.tex(id);
    let got = tex2d(fx.view(), id, 0.3, 0.6, &OPTS);
    assert_eq!(got, tex2d_lod(fx.view(), id, 0.3, 0.6, 0.0, &OPTS));
    assert_close(got.value, tex.bilinear(0, 0.3, 0.6), 1e-4, "tex2d");
    let level1 = fx.tile_page(id, 1, 0, 0);
    fx.pages.clear_references(1 << 16);
    tex2d(fx.view(), id, 0.01, 0.01, &OPTS);
    assert!(fx.pages.is_referenced(fx.tile_page(id, 0, 0, 0)));
    assert!(!fx.pages.is_referenced(level1));
    assert!(
        !fx.pages.is_referenced(tex.sampler.start_page),
        "no tail page at lod 0"
    );
}

#[test]
fn trilinear_blends_adjacent_levels_including_into_the_tail() {
    let (fx, id) = resident_texture(Spec::new(1000, 300));
    let tex = fx.tex(id);
    assert_eq!(tex.layout.mip_tail_first_level, 2);
    let last = tex.layout.num_levels() - 1;
    let mut rng = Rng(7);
    for _ in 0..100 {
        let (s, t) = (coord(&mut rng, -0.2, 1.2), coord(&mut rng, -0.2, 1.2));
        for (lod, fine, frac) in [
            (0.25, 0, 0.25),
            (1.5, 1, 0.5),
            (2.75, 2, 0.75),
            (8.5, 8, 0.5),
        ] {
            let got = tex2d_lod(fx.view(), id, s, t, lod, &OPTS);
            let want = mix(tex.bilinear(fine, s, t), tex.bilinear(fine + 1, s, t), frac);
            assert!(got.resident);
            assert_close(got.value, want, 1e-5, &format!("lod {lod} at ({s}, {t})"));
        }
        // Magnification reads level 0; past the last level reads the last.
        assert_close(
            tex2d_lod(fx.view(), id, s, t, -4.0, &OPTS).value,
            tex.bilinear(0, s, t),
            1e-5,
            "lod < 0",
        );
        assert_close(
            tex2d_lod(fx.view(), id, s, t, 99.0, &OPTS).value,
            tex.bilinear(last, s, t),
            1e-5,
            "lod > last",
        );
    }
    // Point mip filtering: the nearest level.
    let desc = TextureDesc {
        mip_filter: MipFilter::Point,
        ..TextureDesc::default()
    };
    let (fx, id) = resident_texture(Spec {
        desc,
        ..Spec::new(1000, 300)
    });
    let tex = fx.tex(id);
    for (lod, level) in [(1.4, 1), (1.6, 2), (0.49, 0), (3.5, 4)] {
        let got = tex2d_lod(fx.view(), id, 0.37, 0.61, lod, &OPTS);
        assert_close(
            got.value,
            tex.bilinear(level, 0.37, 0.61),
            1e-4,
            &format!("point mip lod {lod}"),
        );
    }
}

#[test]
fn address_modes_hold_at_edges_and_across_the_wrap_seam() {
    use AddressMode::*;
    let q = 1.0 / 4096.0;
    let coords = [
        -1.25,
        -0.5,
        -q,
        0.0,
        q,
        0.5,
        1.0 - q,
        1.0,
        1.0 + q,
        1.5,
        2.75,
    ];
    for ms in [Wrap, Clamp, Mirror, Border] {
        for mt in [Wrap, Clamp, Mirror, Border] {
            for filter in [FilterMode::Linear, FilterMode::Point] {
                let desc = TextureDesc {
                    address: [ms, mt],
                    filter,
                    ..TextureDesc::default()
                };
                let (fx, id) = resident_texture(Spec {
                    desc,
                    ..Spec::new(300, 200)
                });
                let tex = fx.tex(id);
                for level in [0, 1, 2] {
                    for &s in &coords {
                        for &t in &coords {
                            let got = tex2d_lod(fx.view(), id, s, t, level as f32, &OPTS);
                            let what =
                                format!("{ms:?}/{mt:?} {filter:?} level {level} at ({s}, {t})");
                            assert!(got.resident, "{what}");
                            assert_close(got.value, tex.level(level, s, t), 1e-5, &what);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn border_texels_are_transparent_black_and_touch_no_page() {
    let desc = TextureDesc {
        address: [AddressMode::Border; 2],
        ..TextureDesc::default()
    };
    let mut fx = Fixture::new();
    let id = fx.add(Spec {
        desc,
        ..Spec::new(300, 200)
    });
    fx.map_sampler(id);
    for (s, t) in [
        (-2.0, 0.5),
        (0.5, 1.5),
        (1.01, 1.01),
        (-1e30, 0.5),
        (0.5, 3e38),
    ] {
        let got = tex2d(fx.view(), id, s, t, &OPTS);
        assert_eq!(got.value, [0.0; 4], "({s}, {t})");
        assert!(got.resident);
    }
    assert_eq!(fx.requests(), Vec::<u32>::new());
    // Half outside: the inside texels count, the outside ones are black.
    fx.map_tile(id, 0, 0, 0);
    let got = tex2d(fx.view(), id, 0.0, 0.25, &OPTS);
    assert!(got.resident);
    assert_close(
        got.value,
        fx.tex(id).bilinear(0, 0.0, 0.25),
        1e-5,
        "half outside",
    );
    assert!(got.value[3] > 0.0 && got.value[3] < 1.0);
}

#[test]
fn huge_coordinates_stay_in_range_in_every_mode() {
    let huge = [1e30, -1e30, f32::MAX, f32::MIN, 1e10, -16777216.5, 4e9];
    for mode in [
        AddressMode::Wrap,
        AddressMode::Clamp,
        AddressMode::Mirror,
        AddressMode::Border,
    ] {
        for filter in [FilterMode::Point, FilterMode::Linear] {
            let desc = TextureDesc {
                address: [mode; 2],
                filter,
                max_anisotropy: 16,
                ..TextureDesc::default()
            };
            let (fx, id) = resident_texture(Spec {
                desc,
                ..Spec::new(1000, 300)
            });
            for &s in &huge {
                for &t in &[0.5, s] {
                    for lod in [0.0, 1.5, 5.0] {
                        let got = tex2d_lod(fx.view(), id, s, t, lod, &OPTS);
                        assert!(got.resident, "{mode:?} {s} {t}");
                        assert!(
                            got.value.iter().all(|c| (-1e-5..=1.00001).contains(c)),
                            "{mode:?} {s} {t} {got:?}"
                        );
                    }
                    let got = tex2d_grad(fx.view(), id, s, t, [s, 0.0], [0.0, 0.0], &OPTS);
                    assert!(
                        got.value.iter().all(|c| c.is_finite()),
                        "{mode:?} {s} {got:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn anisotropic_lookups_average_probes_along_the_stretched_axis() {
    let spec = |max_anisotropy| Spec {
        desc: TextureDesc {
            max_anisotropy,
            ..TextureDesc::default()
        },
        ..Spec::new(512, 512)
    };
    let (fx, id) = resident_texture(spec(8));
    let tex = fx.tex(id);
    let probes = |level: u32, s: f32, t: f32, axis: [f32; 2], n: u32| {
        let mut sum = [0.0f32; 4];
        for i in 0..n {
            let f = (i as f32 + 0.5) / n as f32 - 0.5;
            let v = tex.bilinear(level, s + f * axis[0], t + f * axis[1]);
            for k in 0..4 {
                sum[k] += v[k] / n as f32;
            }
        }
        sum
    };
    let mut rng = Rng(99);
    let p = 1.0 / 512.0;
    for _ in 0..50 {
        let (s, t) = (coord(&mut rng, 0.0, 1.0), coord(&mut rng, 0.0, 1.0));
        // 8:1 along s: 8 probes at level 0.
        let got = tex2d_grad(fx.view(), id, s, t, [8.0 * p, 0.0], [0.0, p], &OPTS);
        assert!(got.resident);
        assert_close(
            got.value,
            probes(0, s, t, [8.0 * p, 0.0], 8),
            1e-5,
            "8:1 along s",
        );
        // 6:1 along t (the major gradient is ddy): 6 probes.
        let got = tex2d_grad(fx.view(), id, s, t, [p, 0.0], [0.0, 6.0 * p], &OPTS);
        assert_close(
            got.value,
            probes(0, s, t, [0.0, 6.0 * p], 6),
            1e-5,
            "6:1 along t",
        );
        // Diagonal, |major| = 4√2 texels, |minor| = √2/2: 8 probes, lod −0.5 → level 0.
        let (ddx, ddy) = ([4.0 * p, 4.0 * p], [-0.5 * p, 0.5 * p]);
        let got = tex2d_grad(fx.view(), id, s, t, ddx, ddy, &OPTS);
        assert_close(got.value, probes(0, s, t, ddx, 8), 1e-5, "diagonal");
    }
    // Limited to 4 probes: 8:1 becomes 4 probes of 2 texels each, at level 1.
    let (fx4, id4) = resident_texture(spec(4));
    let got = tex2d_grad(fx4.view(), id4, 0.3, 0.7, [8.0 * p, 0.0], [0.0, p], &OPTS);
    assert_close(
        got.value,
        probes(1, 0.3, 0.7, [8.0 * p, 0.0], 4),
        1e-5,
        "4 probes",
    );
    // Isotropic filtering of the same footprint blurs at lod 3 instead.
    let (fx1, id1) = resident_texture(spec(1));
    let iso = tex2d_grad(fx1.view(), id1, 0.3, 0.7, [8.0 * p, 0.0], [0.0, p], &OPTS);
    assert_close(iso.value, tex.bilinear(3, 0.3, 0.7), 1e-5, "isotropic");
    assert_ne!(
        iso.value,
        tex2d_grad(fx.view(), id, 0.3, 0.7, [8.0 * p, 0.0], [0.0, p], &OPTS).value
    );
}

#[test]
fn gradients_pick_the_level_of_detail_in_texels_of_level_zero() {
    let (fx, id) = resident_texture(Spec::new(1000, 300));
    let (w, h) = (1000.0, 300.0);
    for (ddx, ddy, lod) in [
        ([4.0 / w, 0.0], [0.0, 4.0 / h], 2.0f32),
        ([3.0 / w, 0.0], [0.0, 1.0 / h], 3f32.log2()),
        ([0.25 / w, 0.0], [0.0, 0.25 / h], 0.0),
        ([0.0, 0.0], [0.0, 0.0], 0.0),
        ([0.0, 64.0 / h], [0.5 / w, 0.0], 6.0),
    ] {
        for (s, t) in [(0.3, 0.6), (0.99, 0.01), (-0.2, 1.7)] {
            let got = tex2d_grad(fx.view(), id, s, t, ddx, ddy, &OPTS);
            let want = tex2d_lod(fx.view(), id, s, t, lod, &OPTS);
            assert!(got.resident);
            assert_close(got.value, want.value, 1e-5, &format!("{ddx:?} {ddy:?}"));
        }
    }
}
