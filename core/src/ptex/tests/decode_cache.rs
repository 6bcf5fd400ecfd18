//! An engine's Ptex decode cache: its own, within its share of the budget.

use super::*;

/// The sources of reductions go to the engine's cache, which holds at most its capacity:
/// the process-wide setting, at most an eighth of the budget, taken from the budget. Two
/// engines have two caches, and the budget (cache included) is never exceeded.
#[test]
fn an_engines_decode_cache_is_its_own_and_within_its_budget_share() {
    let fx = Fixture::load("quad_half_rgba");
    let ls = lookups(fx.file.num_faces(), 600);
    let want = reference(&fx, &ls);
    let mut caches = Vec::new();
    for pages in [16, 40] {
        let cache = TextureCache::new(options(pages)).unwrap();
        let tex = cache.create_ptex_texture(&fx.path).unwrap();
        let decode = cache.loader().engine().ptex_decode_cache();
        let share = pages * TILE_BYTES as u64 / 8;
        assert_eq!(
            decode.capacity() as u64,
            share.min(crate::sources::ptex::decode_cache_bytes() as u64)
        );
        for (l, want) in ls.iter().zip(&want) {
            let (face, [u, v], d, o) = l;
            let mut out = vec![0f32; want.len()];
            let s = cache.ptex_sample(&tex, *face, *u, *v, d[0], d[1], d[2], d[3], o, &mut out);
            if s.resident {
                assert_eq!(&out, want);
            }
            assert!(decode.bytes() <= decode.capacity());
        }
        assert!(decode.bytes() > 0, "{pages} pages: no source was kept");
        let stats = cache.loader().engine().stats();
        assert!(stats.peak_resident_bytes <= stats.budget_bytes, "{stats:?}");
        caches.push(decode);
    }
    assert!(!Arc::ptr_eq(&caches[0], &caches[1]));
}
