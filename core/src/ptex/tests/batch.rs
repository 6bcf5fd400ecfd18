//! Batches of Ptex lookups (`TextureCache::ptex_sample_batch`, `Launch::ptex_sample_batch`)
//! give each query what it gets alone.

use super::*;

/// Batches (`ptex_sample_batch`): every fixture's lookups, each filter in one batch that
/// alternates between two files, under budgets of 6 and 12 pages; each query's values equal
/// the resident reader's bit for bit (and so a call per query's), the budget holds, pages
/// are evicted on the way, and a batch whose arrays are too small is refused.
#[test]
fn batches_under_tiny_budgets_equal_resident_query_by_query() {
    let names = fixtures::FIXTURES;
    let mut evictions = 0;
    for (k, name) in names.iter().enumerate() {
        let (a, b) = (
            Fixture::load(name),
            Fixture::load(names[(k + 1) % names.len()]),
        );
        for pages in [6, 12] {
            let cache = TextureCache::new(options(pages)).unwrap();
            let (ta, tb) = (
                cache.create_ptex_texture(&a.path).unwrap(),
                cache.create_ptex_texture(&b.path).unwrap(),
            );
            let (la, lb) = (
                lookups(a.file.num_faces(), 300),
                lookups(b.file.num_faces(), 300),
            );
            for filter in FILTERS {
                // One options for the whole batch.
                let options = PtexFilterOptions {
                    filter,
                    lerp: true,
                    jitter: [0.25, 0.75],
                    ..Default::default()
                };
                let with = |ls: &[Lookup]| -> Vec<Lookup> {
                    ls.iter()
                        .map(|&(f, uv, d, _)| (f, uv, d, options))
                        .collect()
                };
                let (la, lb) = (with(&la), with(&lb));
                let (wa, wb) = (reference(&a, &la), reference(&b, &lb));
                // Runs of four queries of one file, then three of the other.
                let order: Vec<(bool, usize)> = (0..la.len()).map(|i| (i % 7 < 4, i)).collect();
                let queries: Vec<PtexLookup<'_>> = order
                    .iter()
                    .map(|&(first, i)| {
                        let (texture, (face, uv, d, _)) =
                            if first { (&ta, la[i]) } else { (&tb, lb[i]) };
                        PtexLookup {
                            texture,
                            face,
                            uv,
                            d,
                        }
                    })
                    .collect();
                const STRIDE: usize = 5;
                let mut out = vec![f32::NAN; queries.len() * STRIDE];
                let mut sampled = vec![PtexSampled::default(); queries.len()];
                cache
                    .ptex_sample_batch(&queries, &options, STRIDE, &mut out, &mut sampled)
                    .unwrap();
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                for (q, &(first, i)) in order.iter().enumerate() {
                    let want = if first { &wa[i] } else { &wb[i] };
                    let n = want.len().min(STRIDE);
                    let what = format!("{name} {pages} pages {filter:?} query {q}");
                    assert!(sampled[q].resident, "{what}");
                    assert_eq!(sampled[q].channels, n, "{what}");
                    assert_eq!(bits(&out[q * STRIDE..][..n]), bits(&want[..n]), "{what}");
                }
            }
            let stats = cache.loader().engine().stats();
            assert!(
                stats.peak_resident_bytes <= stats.budget_bytes,
                "{name}: {stats:?}"
            );
            evictions += stats.evictions;
            // Arrays too small for the batch: refused, nothing looked up.
            let q = [PtexLookup {
                texture: &ta,
                face: 0,
                uv: [0.5, 0.5],
                d: [0.0; 4],
            }; 2];
            let mut out = [0f32; 7];
            let mut sampled = [PtexSampled::default(); 2];
            let e = cache.ptex_sample_batch(
                &q,
                &PtexFilterOptions::default(),
                4,
                &mut out,
                &mut sampled,
            );
            assert!(matches!(e, Err(Error::InvalidArgument(_))), "{e:?}");
            let e = cache.ptex_sample_batch(
                &q,
                &PtexFilterOptions::default(),
                3,
                &mut out[..6],
                &mut sampled[..1],
            );
            assert!(matches!(e, Err(Error::InvalidArgument(_))), "{e:?}");
        }
    }
    assert!(evictions > 0, "the budgets forced no eviction");
}

/// `Launch::ptex_sample_batch`: launch by launch, each query's values and residency equal
/// `Launch::ptex_sample`'s on an identical loader fed the same requests, and the batch
/// converges to the resident values.
#[test]
fn multipass_batches_equal_the_calls_one_by_one_launch_by_launch() {
    for name in fixtures::FIXTURES {
        let fx = Fixture::load(name);
        let n = fx.file.num_channels();
        let (batched, single) = (
            Loader::new(options(64)).unwrap(),
            Loader::new(options(64)).unwrap(),
        );
        let (tb, ts) = (
            batched.create_ptex_texture(&fx.path).unwrap(),
            single.create_ptex_texture(&fx.path).unwrap(),
        );
        let options = PtexFilterOptions {
            filter: PtexFilterType::Bilinear,
            ..Default::default()
        };
        let ls: Vec<Lookup> = lookups(fx.file.num_faces(), 120)
            .into_iter()
            .map(|(f, uv, d, _)| (f, uv, d, options))
            .collect();
        let want = reference(&fx, &ls);
        let queries: Vec<PtexLookup<'_>> = ls
            .iter()
            .map(|&(face, uv, d, _)| PtexLookup {
                texture: &tb,
                face,
                uv,
                d,
            })
            .collect();
        let mut converged = false;
        for launch_no in 0..12 {
            let (lb, lsg) = (batched.launch_prepare(), single.launch_prepare());
            let mut out = vec![f32::NAN; ls.len() * n];
            let mut sampled = vec![PtexSampled::default(); ls.len()];
            lb.ptex_sample_batch(&queries, &options, n, &mut out, &mut sampled)
                .unwrap();
            for (i, (face, uv, d, o)) in ls.iter().enumerate() {
                let mut one = vec![0f32; n];
                let s = lsg.ptex_sample(
                    &ts, *face, uv[0], uv[1], d[0], d[1], d[2], d[3], o, &mut one,
                );
                assert_eq!(sampled[i], s, "{name} launch {launch_no} query {i}");
                assert_eq!(
                    &out[i * n..][..n],
                    &one[..],
                    "{name} launch {launch_no} query {i}"
                );
            }
            converged = sampled.iter().all(|s| s.resident);
            batched.process_requests(lb).wait();
            single.process_requests(lsg).wait();
            if converged {
                for (i, w) in want.iter().enumerate() {
                    assert_eq!(&out[i * n..][..n], &w[..], "{name} query {i}");
                }
                break;
            }
        }
        assert!(converged, "{name}: did not converge");
    }
}
