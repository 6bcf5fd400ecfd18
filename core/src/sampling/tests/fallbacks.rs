//! What lookups return when they cannot filter the level they want: coarser levels, base
//! colours, fallback colours, and bad input.

use super::fixture::{assert_close, Fixture, Spec, BASE, MAX_TEXTURES};
use crate::ids::TextureId;
use crate::paging::PageMapping;
use crate::sampling::{tex2d, tex2d_grad, tex2d_lod, SampleOptions};
use crate::textures::{TexelFormat, TextureDesc, DEFAULT_FALLBACK_COLOR, SAMPLER_FLAG_FAILED};
use crate::TILE_BYTES;

const OPTS: SampleOptions = SampleOptions {
    fallback_to_coarser: false,
    request_key: 0,
    stochastic: None,
};
const COARSER: SampleOptions = SampleOptions {
    fallback_to_coarser: true,
    request_key: 0,
    stochastic: None,
};

#[test]
fn fallback_to_coarser_uses_the_first_resident_coarser_level_and_requests_only_the_fine_one() {
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    fx.map_sampler(id);
    fx.map_level(id, 1);
    let tex = fx.tex(id);
    let (s, t) = (0.3, 0.6);
    let got = tex2d(fx.view(), id, s, t, &COARSER);
    assert!(got.resident && got.coarser && !got.full_detail());
    assert_close(got.value, tex.bilinear(1, s, t), 1e-5, "level 1 stands in");
    assert_eq!(fx.requests(), vec![fx.texel_page(id, 0, 299, 179)]);
    // Level 1 asked for: resident, no stand-in.
    let got = tex2d_lod(fx.view(), id, s, t, 1.0, &COARSER);
    assert!(got.full_detail() && !got.coarser);
    // Without the option: the base colour, non-resident, same request.
    let got = tex2d(fx.view(), id, s, t, &OPTS);
    assert_eq!((got.value, got.resident, got.coarser), (BASE, false, false));
    assert_eq!(fx.requests(), vec![fx.texel_page(id, 0, 299, 179)]);

    // Level 1 missing too: the tail (level 2) stands in; level 1 is not requested.
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    fx.map_sampler(id);
    let tex = fx.tex(id);
    let got = tex2d(fx.view(), id, s, t, &COARSER);
    assert!(got.resident);
    assert_close(got.value, tex.bilinear(2, s, t), 1e-5, "tail stands in");
    assert_eq!(fx.requests(), vec![fx.texel_page(id, 0, 299, 179)]);
    // Trilinear between levels 0 and 1, both missing: the walk starts at level 1 (the
    // first coarser than level 0), finds it missing and settles on the tail; both tiled
    // levels are requested (level 1 by the trilinear footprint, not by the walk).
    let got = tex2d_lod(fx.view(), id, s, t, 0.5, &COARSER);
    assert!(got.resident);
    assert_close(got.value, tex.bilinear(2, s, t), 1e-5, "trilinear miss");
    let mut want = vec![
        fx.texel_page(id, 0, 299, 179),
        fx.texel_page(id, 1, 149, 89),
    ];
    want.sort_unstable();
    assert_eq!(fx.requests(), want);
}

#[test]
fn with_no_coarser_resident_level_a_miss_gives_the_base_colour_or_zeros() {
    // 128×128 RGBA8 without mips: one tile, no tail level.
    let mut fx = Fixture::new();
    let with_base = fx.add(Spec {
        levels: 1,
        ..Spec::new(128, 128)
    });
    let without = fx.add(Spec {
        levels: 1,
        base: None,
        ..Spec::new(128, 128)
    });
    fx.map_sampler(with_base);
    fx.map_sampler(without);
    let got = tex2d(fx.view(), with_base, 0.5, 0.5, &COARSER);
    assert_eq!(got, crate::sampling::Sample::new(BASE, false));
    let got = tex2d(fx.view(), without, 0.5, 0.5, &COARSER);
    assert_eq!(got, crate::sampling::Sample::new([0.0; 4], false));
}

#[test]
fn missing_tiles_are_never_read() {
    // Float texels: the poison (all bits set) is NaN, which would show in any sum.
    let mut fx = Fixture::new();
    let id = fx.add(Spec {
        format: TexelFormat::RGBA32F,
        ..Spec::new(200, 200)
    });
    let poison = vec![0xFFu8; TILE_BYTES];
    fx.map_sampler(id);
    fx.map_level(id, 1);
    // Level-0 tiles (0,0) and (1,1) have poisoned data but are not resident; (1,0) and
    // (0,1) are resident with their real data.
    fx.tiles.set(fx.tile_page(id, 0, 0, 0), poison.as_ptr());
    fx.tiles.set(fx.tile_page(id, 0, 1, 1), poison.as_ptr());
    fx.map_tile(id, 0, 1, 0);
    fx.map_tile(id, 0, 0, 1);
    let tex = fx.tex(id);
    for (s, t) in [
        (0.1, 0.1),
        (64.0 / 200.0, 64.0 / 200.0),
        (0.4, 0.4),
        (0.45, 0.55),
    ] {
        let got = tex2d(fx.view(), id, s, t, &OPTS);
        assert!(!got.resident);
        assert_eq!(got.value, BASE, "({s}, {t})");
        let got = tex2d(fx.view(), id, s, t, &COARSER);
        assert!(got.resident);
        assert_close(
            got.value,
            tex.bilinear(1, s, t),
            1e-6,
            "coarser, not poison",
        );
    }
    // A resident page without data is a miss, not a crash.
    let page = fx.tile_page(id, 0, 2, 2);
    fx.pages.push_mapping(PageMapping {
        page,
        lru: 0,
        entry: 0,
    });
    assert!(fx.tiles.get(page).is_null());
    let got = tex2d(fx.view(), id, 0.9, 0.9, &OPTS);
    assert_eq!((got.value, got.resident), (BASE, false));
}

#[test]
fn huge_gradients_take_the_base_colour_without_touching_the_sampler() {
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    let no_base = fx.add(Spec {
        base: None,
        ..Spec::new(1000, 300)
    });
    fx.map_sampler(id);
    fx.map_sampler(no_base);
    for (ddx, ddy) in [
        ([1.0, 0.0], [0.0, 1.0]),
        ([2.0, 3.0], [0.0, -1.5]),
        ([1e20, 0.0], [0.0, 1e25]),
    ] {
        let got = tex2d_grad(fx.view(), id, 0.3, 0.6, ddx, ddy, &OPTS);
        assert_eq!((got.value, got.resident), (BASE, true), "{ddx:?} {ddy:?}");
        assert!(!fx.pages.is_referenced(id.0), "sampler untouched");
        assert!(fx
            .pages
            .is_referenced(fx.pages.layout().base_color_page(id).0));
        // Without a base colour: the coarsest level.
        let got = tex2d_grad(fx.view(), no_base, 0.3, 0.6, ddx, ddy, &OPTS);
        assert!(got.resident);
        assert_close(
            got.value,
            fx.tex(no_base).bilinear(9, 0.3, 0.6),
            1e-6,
            "coarsest level",
        );
    }
    assert_eq!(fx.requests(), Vec::<u32>::new());
    // One short gradient: normal sampling (lod log2(1000) → clamped to the last level).
    let got = tex2d_grad(fx.view(), id, 0.3, 0.6, [1.0, 0.0], [0.0, 0.5], &OPTS);
    assert!(got.resident);
    assert_close(
        got.value,
        fx.tex(id).bilinear(9, 0.3, 0.6),
        1e-6,
        "short gradient",
    );
    assert!(fx.pages.is_referenced(id.0));
    // Base-colour page not resident: zeros, requested.
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    let got = tex2d_grad(fx.view(), id, 0.3, 0.6, [1.0, 0.0], [0.0, 1.0], &OPTS);
    assert_eq!((got.value, got.resident), ([0.0; 4], false));
    assert_eq!(fx.requests(), vec![fx.pages.layout().base_color_page(id).0]);
}

#[test]
fn nan_and_infinite_inputs_never_panic() {
    let fallback = [0.125, 0.25, 0.375, 0.5];
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    let desc = TextureDesc {
        fallback_color: fallback,
        max_anisotropy: 16,
        ..TextureDesc::default()
    };
    let no_base = fx.add(Spec {
        base: None,
        desc,
        ..Spec::new(1000, 300)
    });
    let unmapped = fx.add(Spec {
        base: None,
        ..Spec::new(64, 64)
    });
    fx.map_all(id);
    fx.map_all(no_base);
    let odd = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.5];
    let mut checked = 0;
    for &a in &odd {
        for &b in &odd {
            for &c in &odd {
                let inputs = [
                    (a, b, [c, 0.0], [0.0, c]),
                    (c, 0.5, [a, b], [b, a]),
                    (0.5, a, [0.0, b], [c, 0.0]),
                ];
                for (s, t, ddx, ddy) in inputs {
                    if [s, t, ddx[0], ddx[1], ddy[0], ddy[1]]
                        .iter()
                        .all(|v| v.is_finite())
                    {
                        continue;
                    }
                    checked += 1;
                    let got = tex2d_grad(fx.view(), id, s, t, ddx, ddy, &COARSER);
                    assert_eq!((got.value, got.resident), (BASE, true));
                    let got = tex2d_grad(fx.view(), no_base, s, t, ddx, ddy, &COARSER);
                    assert_eq!((got.value, got.resident), (fallback, true));
                    let got = tex2d_grad(fx.view(), unmapped, s, t, ddx, ddy, &OPTS);
                    assert_eq!((got.value, got.resident), ([0.0; 4], false));
                }
            }
            let got = tex2d_lod(fx.view(), id, 0.5, 0.5, a + b, &OPTS);
            assert!(got.resident && got.value.iter().all(|c| c.is_finite()));
            let got = tex2d_lod(fx.view(), no_base, a, 0.5, b, &OPTS);
            assert!(got.resident && got.value.iter().all(|c| c.is_finite()));
            let got = tex2d(fx.view(), no_base, a, b, &OPTS);
            assert!(got.resident && got.value.iter().all(|c| c.is_finite()));
        }
    }
    assert!(checked > 100);
}

#[test]
fn unknown_texture_ids_give_the_default_fallback_colour_and_request_nothing() {
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(64, 64));
    fx.map_all(id);
    for bad in [MAX_TEXTURES, MAX_TEXTURES + 1, u32::MAX] {
        let bad = TextureId(bad);
        let want = (DEFAULT_FALLBACK_COLOR, true);
        let got = tex2d(fx.view(), bad, 0.5, 0.5, &OPTS);
        assert_eq!((got.value, got.resident), want);
        let got = tex2d_lod(fx.view(), bad, f32::NAN, 0.5, 2.0, &COARSER);
        assert_eq!((got.value, got.resident), want);
        let got = tex2d_grad(fx.view(), bad, 0.5, 0.5, [1.0, 0.0], [0.0, 1.0], &OPTS);
        assert_eq!((got.value, got.resident), want);
    }
    assert_eq!(fx.requests(), Vec::<u32>::new());
    // A valid id that was never created: its sampler and base-colour pages are requested.
    let got = tex2d(fx.view(), TextureId(5), 0.5, 0.5, &OPTS);
    assert_eq!((got.value, got.resident), ([0.0; 4], false));
    assert_eq!(fx.requests(), vec![5, MAX_TEXTURES + 5]);
}

#[test]
fn degenerate_and_failed_textures_give_their_stand_in_colours() {
    let fallback = [0.0, 1.0, 0.0, 1.0];
    let desc = TextureDesc {
        fallback_color: fallback,
        ..TextureDesc::default()
    };
    let mut fx = Fixture::new();
    let degenerate = fx.add(Spec::new(64, 64));
    let degenerate_no_base = fx.add(Spec {
        base: None,
        ..Spec::new(64, 64)
    });
    let failed = fx.add(Spec {
        desc,
        ..Spec::new(64, 64)
    });
    let malformed = fx.add(Spec {
        desc,
        ..Spec::new(64, 64)
    });
    let half_mapped = fx.add(Spec::new(64, 64));
    fx.textures[failed.0 as usize].sampler.flags |= SAMPLER_FLAG_FAILED;
    fx.textures[malformed.0 as usize].sampler.texel_type = 99;
    fx.map_null_sampler(degenerate);
    fx.map_null_sampler(degenerate_no_base);
    fx.map_sampler(failed);
    fx.map_sampler(malformed);
    fx.pages.push_mapping(PageMapping {
        page: half_mapped.0,
        lru: 15,
        entry: 0,
    });
    let cases = [
        (degenerate, (BASE, true)),
        (degenerate_no_base, (DEFAULT_FALLBACK_COLOR, true)),
        (failed, (fallback, true)),
        (malformed, (fallback, true)),
        (half_mapped, ([0.0; 4], false)),
    ];
    for (id, want) in cases {
        for got in [
            tex2d(fx.view(), id, 0.5, 0.5, &COARSER),
            tex2d_lod(fx.view(), id, 0.5, 0.5, 3.0, &OPTS),
            tex2d_grad(fx.view(), id, 0.5, 0.5, [0.01, 0.0], [0.0, 0.01], &OPTS),
        ] {
            assert_eq!((got.value, got.resident), want, "texture {id:?}");
        }
    }
    // Nothing but the half-mapped texture's base-colour page was missing.
    assert_eq!(
        fx.requests(),
        vec![fx.pages.layout().base_color_page(half_mapped).0]
    );
}

#[test]
fn the_coarser_walk_passes_over_levels_without_a_resident_page_and_looks_at_the_others() {
    // 2048² RGBA8: 128×128 tiles; levels 1–3 have 64, 16 and 4 pages.
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(2048, 2048));
    fx.map_sampler(id);
    // Level 1: nothing resident (passed over from the residence bits). Level 2: one tile,
    // away from the footprint (looked at, missed). Level 3: all resident (stands in).
    fx.map_tile(id, 2, 3, 3);
    fx.map_level(id, 3);
    let tex = fx.tex(id);
    let (s, t) = (0.2, 0.3);
    let got = tex2d(fx.view(), id, s, t, &COARSER);
    assert!(got.resident && got.coarser);
    assert_close(got.value, tex.bilinear(3, s, t), 1e-5, "level 3 stands in");
    // The footprint's own tile of level 2 made resident: level 2 stands in.
    let (x, y) = ((s * 512.0) as u32, (t * 512.0) as u32);
    fx.map_tile(id, 2, x / 128, y / 128);
    let got = tex2d(fx.view(), id, s, t, &COARSER);
    assert_close(got.value, tex.bilinear(2, s, t), 1e-5, "level 2 stands in");
    // Level 1 fully resident: it stands in.
    fx.map_level(id, 1);
    let got = tex2d(fx.view(), id, s, t, &COARSER);
    assert_close(got.value, tex.bilinear(1, s, t), 1e-5, "level 1 stands in");
}
