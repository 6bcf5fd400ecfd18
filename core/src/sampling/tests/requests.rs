//! Which pages lookups record: exactly the footprint's, all of them even after a miss, and
//! never a page a resident lookup does not need.

use super::fixture::{Fixture, Spec, BASE};
use crate::ids::TextureId;
use crate::sampling::{tex2d, tex2d_grad, tex2d_lod, SampleOptions};
use crate::textures::{AddressMode, FilterMode, TextureDesc};

const OPTS: SampleOptions = SampleOptions {
    fallback_to_coarser: false,
    request_key: 0,
    stochastic: None,
};

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// A 1000×300 RGBA8 texture (128×128 tiles; levels 0 and 1 tiled) with only its sampler,
/// base colour and tail resident.
fn sampler_only(desc: TextureDesc) -> (Fixture, TextureId) {
    let mut fx = Fixture::new();
    let id = fx.add(Spec {
        desc,
        ..Spec::new(1000, 300)
    });
    fx.map_sampler(id);
    (fx, id)
}

#[test]
fn a_miss_requests_exactly_the_footprint_pages() {
    let (fx, id) = sampler_only(TextureDesc::default());
    let page = |level, tx, ty| fx.tile_page(id, level, tx, ty);
    let look = |s: f32, t: f32, lod: f32| {
        let got = tex2d_lod(fx.view(), id, s, t, lod, &OPTS);
        assert!(!got.resident, "({s}, {t}) lod {lod}");
        assert_eq!(got.value, BASE, "a miss gives the base colour");
        fx.requests()
    };
    // The corner where four level-0 tiles meet: texels 127 and 128 on both axes.
    let corner = (128.0 / 1000.0, 128.0 / 300.0);
    let want = sorted(vec![
        page(0, 0, 0),
        page(0, 1, 0),
        page(0, 0, 1),
        page(0, 1, 1),
    ]);
    assert_eq!(look(corner.0, corner.1, 0.0), want);
    // Inside one tile: one page.
    assert_eq!(look(0.05, 0.1, 0.0), vec![page(0, 0, 0)]);
    // Across the wrap seam: texels 999 and 0, rows 299 and 0.
    let want = sorted(vec![
        page(0, 7, 2),
        page(0, 0, 2),
        page(0, 7, 0),
        page(0, 0, 0),
    ]);
    assert_eq!(look(0.0, 0.0, 0.0), want);
    // Trilinear: both levels' tiles.
    assert_eq!(
        look(0.05, 0.1, 0.5),
        sorted(vec![page(0, 0, 0), page(1, 0, 0)])
    );
    // Level 1 and the (resident) tail: only the level-1 tile is missing.
    assert_eq!(look(0.05, 0.1, 1.5), vec![page(1, 0, 0)]);
    // A tail level alone is resident.
    let got = tex2d_lod(fx.view(), id, 0.05, 0.1, 3.0, &OPTS);
    assert!(got.resident);
    assert_eq!(fx.requests(), Vec::<u32>::new());
}

#[test]
fn clamp_and_point_footprints_request_fewer_pages() {
    let desc = TextureDesc {
        address: [AddressMode::Clamp; 2],
        ..TextureDesc::default()
    };
    let (fx, id) = sampler_only(desc);
    tex2d(fx.view(), id, 0.0, 0.0, &OPTS);
    assert_eq!(fx.requests(), vec![fx.tile_page(id, 0, 0, 0)]);
    let desc = TextureDesc {
        filter: FilterMode::Point,
        ..TextureDesc::default()
    };
    let (fx, id) = sampler_only(desc);
    tex2d(fx.view(), id, 128.0 / 1000.0, 128.0 / 300.0, &OPTS);
    assert_eq!(fx.requests(), vec![fx.tile_page(id, 0, 1, 1)]);
    // Exactly on texel centres a bilinear lookup needs one texel, hence one page.
    let (fx, id) = sampler_only(TextureDesc::default());
    tex2d(fx.view(), id, 127.5 / 1000.0, 127.5 / 300.0, &OPTS);
    assert_eq!(fx.requests(), vec![fx.tile_page(id, 0, 0, 0)]);
}

#[test]
fn every_page_is_recorded_even_after_a_miss() {
    let (fx, id) = sampler_only(TextureDesc::default());
    let page = |level, tx, ty| fx.tile_page(id, level, tx, ty);
    fx.map_tile(id, 0, 1, 0);
    fx.map_tile(id, 0, 0, 1);
    fx.map_tile(id, 0, 1, 1);
    fx.map_tile(id, 1, 0, 0);
    let got = tex2d_lod(fx.view(), id, 128.0 / 1000.0, 128.0 / 300.0, 0.5, &OPTS);
    assert!(!got.resident);
    for p in [
        page(0, 0, 0),
        page(0, 1, 0),
        page(0, 0, 1),
        page(0, 1, 1),
        page(1, 0, 0),
    ] {
        assert!(fx.pages.is_referenced(p), "page {p} used");
    }
    assert_eq!(fx.requests(), vec![page(0, 0, 0)]);
}

#[test]
fn anisotropic_misses_request_every_probe_tile() {
    let desc = TextureDesc {
        max_anisotropy: 16,
        ..TextureDesc::default()
    };
    let (fx, id) = sampler_only(desc);
    // 16 probes (the limit) along t over 33 level-0 texels: lod = log2(33 / 16) ≈ 1.04,
    // so levels 1 (tiled) and 2 (the resident tail). At level 1 the probes cover rows
    // 55..72, all in tile row 0.
    let (s, t) = (0.3, 128.0 / 300.0);
    let got = tex2d_grad(
        fx.view(),
        id,
        s,
        t,
        [1.0 / 1000.0, 0.0],
        [0.0, 33.0 / 300.0],
        &OPTS,
    );
    assert!(!got.resident);
    assert_eq!(fx.requests(), vec![fx.tile_page(id, 1, 1, 0)]);
    // 16 probes over 12 texels at lod log2(0.75) < 0: level 0, rows 122..134, which
    // straddle tile rows 0 and 1.
    let got = tex2d_grad(
        fx.view(),
        id,
        s,
        t,
        [0.75 / 1000.0, 0.0],
        [0.0, 12.0 / 300.0],
        &OPTS,
    );
    assert!(!got.resident);
    let want = sorted(vec![fx.tile_page(id, 0, 2, 0), fx.tile_page(id, 0, 2, 1)]);
    assert_eq!(fx.requests(), want);
}

#[test]
fn resident_lookups_mark_use_without_requesting() {
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    fx.map_all(id);
    let got = tex2d_lod(fx.view(), id, 0.05, 0.1, 1.5, &OPTS);
    assert!(got.resident);
    assert!(fx.pages.is_referenced(id.0), "sampler page");
    assert!(fx.pages.is_referenced(fx.tile_page(id, 1, 0, 0)));
    assert!(
        fx.pages.is_referenced(fx.tex(id).sampler.start_page),
        "mip tail page"
    );
    assert!(
        !fx.pages.is_referenced(fx.tile_page(id, 0, 0, 0)),
        "level 0 is not read"
    );
    assert_eq!(fx.requests(), Vec::<u32>::new());
}

#[test]
fn a_non_resident_sampler_requests_its_pages() {
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    let base_page = fx.pages.layout().base_color_page(id).0;
    let got = tex2d(fx.view(), id, 0.5, 0.5, &OPTS);
    assert_eq!((got.value, got.resident), ([0.0; 4], false));
    assert_eq!(fx.requests(), vec![id.0, base_page]);
    fx.map_base(id);
    let got = tex2d_grad(fx.view(), id, 0.5, 0.5, [0.001, 0.0], [0.0, 0.001], &OPTS);
    assert_eq!((got.value, got.resident), (BASE, false));
    assert_eq!(fx.requests(), vec![id.0]);
}

/// The pages requested by one lookup per key in `keys` at level 0 of a 1000×300 texture
/// (one point per key, spread over the image), in a launch rejecting with `threshold`.
fn keyed_requests(threshold: u32, keys: std::ops::Range<u32>) -> (Vec<u32>, u64) {
    use crate::paging::RequestGate;
    use crate::sampling::Rejection;
    let (fx, id) = sampler_only(TextureDesc::default());
    let gate = RequestGate::new();
    let n = keys.len() as f32;
    for key in keys.clone() {
        let view = fx.view().with_rejection(Rejection {
            gate: &gate,
            threshold,
            launch_num: 3,
            key: 0,
        });
        let k = (key - keys.start) as f32;
        let options = SampleOptions {
            request_key: key,
            ..OPTS
        };
        let got = tex2d_lod(view, id, (k + 0.5) / n, 0.5, 0.0, &options);
        assert!(!got.resident, "a rejected request is still a miss");
    }
    (fx.requests(), gate.rejected())
}

#[test]
fn rejection_drops_new_requests_by_a_deterministic_per_key_coin() {
    // No threshold: each of the 8 level-0 tiles of the middle row is requested.
    let (all, rejected) = keyed_requests(0, 0..64);
    assert_eq!(all.len(), 8);
    assert_eq!(rejected, 0);
    // Threshold 1/2: fewer pages, some rejections, the same decisions every time.
    let (half, rejected) = keyed_requests(u32::MAX / 2, 0..64);
    assert!(rejected > 0 && rejected < 64, "{rejected}");
    assert!(half.iter().all(|p| all.contains(p)));
    assert_eq!(
        keyed_requests(u32::MAX / 2, 0..64),
        (half.clone(), rejected)
    );
    // Other keys, other coins.
    assert_ne!(keyed_requests(u32::MAX / 2, 1000..1064).1, 0);
    // Everything rejected: nothing requested, one rejection per lookup.
    let (none, rejected) = keyed_requests(u32::MAX, 0..64);
    assert!(none.is_empty());
    assert!(rejected >= 64, "{rejected}");
}
