//! Every texel format, and lookups from several threads at once.

use super::fixture::{assert_close, Fixture, Rng, Spec};
use crate::sampling::{tex2d_grad, tex2d_lod, Sample, SampleOptions};
use crate::textures::{TexelFormat, TexelType};

const OPTS: SampleOptions = SampleOptions {
    fallback_to_coarser: false,
    request_key: 0,
    stochastic: None,
};

#[test]
fn every_texel_type_and_channel_count_decodes_and_filters() {
    for texel_type in [
        TexelType::U8,
        TexelType::U16,
        TexelType::F16,
        TexelType::F32,
    ] {
        for channels in [1, 2, 4] {
            let format = TexelFormat::new(texel_type, channels).unwrap();
            let mut fx = Fixture::new();
            // 300×270: level 0 is tiled even with 256×256 one-byte tiles.
            let id = fx.add(Spec {
                format,
                ..Spec::new(300, 270)
            });
            fx.map_all(id);
            let tex = fx.tex(id);
            assert!(tex.layout.mip_tail_first_level >= 1);
            let mut rng = Rng(channels as u64 * 10 + texel_type as u64);
            for level in 0..tex.layout.num_levels() {
                let l = tex.layout.levels[level as usize];
                // At texel centres a bilinear lookup returns the stored texel (up to the
                // rounding of the centre's coordinate).
                for (x, y) in [
                    (0, 0),
                    (l.width - 1, l.height - 1),
                    (l.width / 2, l.height / 3),
                ] {
                    let s = (x as f32 + 0.5) / l.width as f32;
                    let t = (y as f32 + 0.5) / l.height as f32;
                    let got = tex2d_lod(fx.view(), id, s, t, level as f32, &OPTS);
                    assert!(got.resident);
                    let want = tex.texel(level, x, y);
                    assert_close(
                        got.value,
                        want,
                        1e-4,
                        &format!("{format:?} level {level} texel ({x}, {y})"),
                    );
                    let [r, g, b, a] = got.value;
                    match channels {
                        1 => assert!(
                            r == g && g == b && (a - 1.0).abs() < 1e-6,
                            "{:?}",
                            got.value
                        ),
                        2 => assert!(b == 0.0 && (a - 1.0).abs() < 1e-6, "{:?}", got.value),
                        _ => {}
                    }
                }
                for _ in 0..40 {
                    let (s, t) = (rng.f32(-1.0, 2.0), rng.f32(-1.0, 2.0));
                    let got = tex2d_lod(fx.view(), id, s, t, level as f32, &OPTS);
                    let what = format!("{format:?} level {level} at ({s}, {t})");
                    assert_close(got.value, tex.bilinear(level, s, t), 2e-4, &what);
                }
            }
            assert_eq!(fx.requests(), Vec::<u32>::new());
        }
    }
}

#[test]
fn lookups_from_four_threads_agree_with_one() {
    let mut fx = Fixture::new();
    let id = fx.add(Spec::new(1000, 300));
    fx.map_sampler(id);
    fx.map_level(id, 1);
    for tx in 0..4 {
        fx.map_tile(id, 0, tx, 1);
    }
    let mut rng = Rng(2024);
    let queries: Vec<(f32, f32, f32)> = (0..3000)
        .map(|_| (rng.f32(-0.5, 1.5), rng.f32(-0.5, 1.5), rng.f32(-0.01, 0.01)))
        .collect();
    let options = SampleOptions {
        fallback_to_coarser: true,
        request_key: 0,
        stochastic: None,
    };
    let run = |q: &(f32, f32, f32)| -> Sample {
        let (s, t, g) = *q;
        tex2d_grad(
            fx.view(),
            id,
            s,
            t,
            [g, 0.0],
            [0.0, g.abs() * 0.5],
            &options,
        )
    };
    let want: Vec<Sample> = queries.iter().map(run).collect();
    assert!(want.iter().all(|s| s.resident), "every miss falls back");
    let single = fx.requests();
    assert!(!single.is_empty());
    std::thread::scope(|scope| {
        for k in 0..4 {
            let (queries, want, run) = (&queries, &want, &run);
            scope.spawn(move || {
                // Each thread walks the queries from a different start.
                let n = queries.len();
                for i in 0..n {
                    let j = (i + k * n / 4) % n;
                    assert_eq!(run(&queries[j]), want[j], "thread {k} query {j}");
                }
            });
        }
    });
    assert_eq!(fx.requests(), single, "the same pages requested, each once");
}
