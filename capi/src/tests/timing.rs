//! Overhead of the C entry points over direct engine calls (ignored by default; run with
//! `cargo test --release -p demandtex-capi timing -- --ignored --nocapture`).

use super::util::*;
use crate::sampling::*;
use crate::textures::*;
use std::ptr::null;
use std::time::Instant;

#[test]
#[ignore = "a measurement, not a check"]
fn timing_of_single_and_batched_lookups() {
    let loader = TestLoader::new();
    let p = DtexProceduralDesc {
        width: 1024,
        height: 1024,
        ..Default::default()
    };
    let mut tex = 0;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_create_procedural(loader.0, &p, null(), &mut tex) });
    let queries = query_grid(tex, 64, 1024.0);
    let _ = converge(&loader, &queries);
    let launch = loader.launch();
    let entry = crate::launch::get(launch).unwrap();
    let rounds = 200;
    let n = (queries.len() * rounds) as f64;
    let t = Instant::now();
    let mut sum = 0.0f32;
    for _ in 0..rounds {
        for q in &queries {
            let s = entry.launch.tex2d_grad(
                engine::TextureId(q.texture),
                q.s,
                q.t,
                [q.dsdx, q.dtdx],
                [q.dsdy, q.dtdy],
                &Default::default(),
            );
            sum += s.value[0];
        }
    }
    let direct = t.elapsed().as_secs_f64() * 1e9 / n;
    let t = Instant::now();
    for _ in 0..rounds {
        for q in &queries {
            let mut s = DtexSample::default();
            // SAFETY: valid pointers.
            ok(unsafe {
                dtex_launch_tex2d_grad(
                    launch,
                    q.texture,
                    q.s,
                    q.t,
                    q.dsdx,
                    q.dtdx,
                    q.dsdy,
                    q.dtdy,
                    null(),
                    &mut s,
                )
            });
            sum += s.value[0];
        }
    }
    let single = t.elapsed().as_secs_f64() * 1e9 / n;
    let t = Instant::now();
    for _ in 0..rounds {
        let (s, _) = batch(launch, &queries);
        sum += s[0].value[0];
    }
    let batched = t.elapsed().as_secs_f64() * 1e9 / n;
    eprintln!(
        "ns per lookup: engine {direct:.1}, dtex_launch_tex2d_grad {single:.1}, batch of {} {batched:.1} ({sum})",
        queries.len()
    );
    drop(entry);
    ok(crate::launch::dtex_launch_discard(launch));
}
