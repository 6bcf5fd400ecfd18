//! The incoherent trace: random bounces. Each query picks a random texture and a random
//! place on it, with a footprint whose level of detail is spread evenly from 1 to the
//! texture's coarsest level (bounced rays' footprints are wide: level 0 is left to the
//! coherent trace, which keeps the working set to a quarter of the textures' bytes),
//! pointing in a random direction with an anisotropy of 1 to 4 (the major axis sets the
//! level of detail, as QUERIES.md measures it).

use super::super::trace::Query;
use super::super::Rng;

/// Finest level of detail.
const MIN_LOD: f32 = 1.0;
/// Largest ratio of the footprint's major to minor axis.
const MAX_ANISOTROPY: f32 = 4.0;

/// `count` random queries over textures of the given sizes (square), for `seed`.
pub(crate) fn queries(sizes: &[u32], count: u64, seed: u64) -> Vec<Query> {
    let mut rng = Rng::new(seed ^ 0x1c0_4e7e_4e47);
    let n = sizes.len();
    (0..count)
        .map(|_| {
            let texture = ((rng.next_f32() * n as f32) as usize).min(n - 1);
            let size = sizes[texture].max(1) as f32;
            let top_level = size.log2().floor();
            let lod = MIN_LOD.min(top_level) + rng.next_f32() * (top_level - MIN_LOD).max(0.0);
            let major = lod.exp2(); // level-0 texels
            let minor = major / (1.0 + rng.next_f32() * (MAX_ANISOTROPY - 1.0));
            let angle = rng.next_f32() * std::f32::consts::TAU;
            let (sin, cos) = angle.sin_cos();
            Query {
                texture: texture as u32,
                s: rng.next_f32(),
                t: rng.next_f32(),
                ddx: [major * cos / size, major * sin / size],
                ddy: [-minor * sin / size, minor * cos / size],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprints_spread_over_the_levels_deterministically() {
        let sizes = [1024, 512];
        let q = queries(&sizes, 20_000, 5);
        assert_eq!(q, queries(&sizes, 20_000, 5));
        assert_ne!(q, queries(&sizes, 20_000, 6));
        let mut per_level = [0u32; 11];
        for q in &q {
            let size = sizes[q.texture as usize] as f32;
            let len = |g: [f32; 2]| (g[0] * size).hypot(g[1] * size);
            let (a, b) = (len(q.ddx), len(q.ddy));
            assert!(a >= b * 0.999 && a <= b * MAX_ANISOTROPY * 1.001, "{a} {b}");
            let lod = a.log2();
            assert!(lod >= MIN_LOD - 1e-4 && lod <= size.log2() + 1e-3, "{lod}");
            per_level[lod as usize] += 1;
            assert!((0.0..1.0).contains(&q.s) && (0.0..1.0).contains(&q.t));
        }
        // Every level gets its share.
        assert_eq!(per_level[0], 0);
        assert!(per_level[1] > 1500 && per_level[9] > 700, "{per_level:?}");
        let first = q.iter().filter(|q| q.texture == 0).count();
        assert!((9_500..10_500).contains(&first), "{first}");
    }
}
