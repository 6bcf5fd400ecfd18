//! The fault plan is a pure function of (seed, site, attempt) with the rates asked for; the
//! wrapper applies it call by call, counts what it injected, and a short read poisons the
//! destination from a row boundary and fails.

use super::*;
use crate::sources::{Checkerboard, ImageSource, MipTailLevel};
use crate::textures::TexelFormat;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn region(level: u32, x: u32, y: u32) -> TileRegion {
    TileRegion {
        level,
        x,
        y,
        width: 16,
        height: 8,
    }
}

fn inner() -> Arc<dyn ImageSource> {
    Arc::new(Checkerboard::new(256, 256, 4, TexelFormat::RGBA8))
}

fn plan(seed: u64) -> FaultPlan {
    FaultPlan {
        seed,
        error_rate: 0.1,
        short_read_rate: 0.05,
        panic_rate: 0.05,
        not_yet_rate: 0.2,
        ..FaultPlan::default()
    }
}

#[test]
fn faults_follow_the_rates_and_depend_only_on_seed_site_and_attempt() {
    let p = plan(42);
    let mut counts = [0usize; 5];
    let n = 100_000;
    for i in 0..n {
        let site = FaultSite::Region(region(i % 7, i * 16, (i / 7) * 8));
        let f = p.fault(site, 0);
        assert_eq!(f, p.fault(site, 0), "a pure function");
        counts[match f {
            None => 0,
            Some(Fault::Error) => 1,
            Some(Fault::ShortRead) => 2,
            Some(Fault::Panic) => 3,
            Some(Fault::NotYet) => 4,
        }] += 1;
    }
    // The draws are fixed by the seed: these bounds hold or fail every time.
    let near = |count: usize, rate: f64| (count as f64 / n as f64 - rate).abs() < 0.01;
    assert!(near(counts[0], 0.6), "{counts:?}");
    assert!(near(counts[1], 0.1), "{counts:?}");
    assert!(near(counts[2], 0.05), "{counts:?}");
    assert!(near(counts[3], 0.05), "{counts:?}");
    assert!(near(counts[4], 0.2), "{counts:?}");

    let site = FaultSite::Region(region(0, 0, 0));
    let seq = |p: &FaultPlan| (0..64).map(|a| p.fault(site, a)).collect::<Vec<_>>();
    assert_eq!(seq(&plan(42)), seq(&plan(42)));
    assert_ne!(seq(&plan(42)), seq(&plan(43)), "another seed, other faults");
    let other = FaultSite::Region(region(0, 16, 0));
    assert_ne!(
        seq(&p),
        (0..64).map(|a| p.fault(other, a)).collect::<Vec<_>>(),
        "another tile, other faults"
    );
}

#[test]
fn not_yet_stops_at_max_not_yet_and_never_answers_an_open() {
    let p = FaultPlan {
        not_yet_rate: 1.0,
        max_not_yet: 2,
        ..FaultPlan::default()
    };
    let site = FaultSite::Region(region(1, 0, 0));
    assert_eq!(p.fault(site, 0), Some(Fault::NotYet));
    assert_eq!(p.fault(site, 1), Some(Fault::NotYet));
    assert_eq!(p.fault(site, 2), None);
    assert_eq!(p.fault(FaultSite::MipTail, 5), None);
    assert_eq!(p.fault(FaultSite::Open, 0), None);
    let s = FaultInjectingSource::new(inner(), p).unwrap();
    let mut dest = vec![0u8; 16 * 8 * 4];
    let r = region(1, 0, 0);
    let answers: Vec<_> = (0..3)
        .map(|_| s.read_tile(r, &mut dest, 64).unwrap())
        .collect();
    assert_eq!(
        answers,
        [Readiness::NotYet, Readiness::NotYet, Readiness::Ready]
    );
    assert!(s.open().is_ok());
    let got = s.injected();
    assert_eq!((got.not_yet, got.calls, got.failures()), (2, 4, 0));
}

#[test]
fn the_default_plan_passes_every_call_through() {
    let s = FaultInjectingSource::new(inner(), FaultPlan::default()).unwrap();
    assert_eq!(s.open().unwrap(), inner().open().unwrap());
    let r = region(0, 32, 64);
    let (mut a, mut b) = (vec![0u8; 16 * 8 * 4], vec![1u8; 16 * 8 * 4]);
    assert_eq!(s.read_tile(r, &mut a, 64).unwrap(), Readiness::Ready);
    inner().read_tile(r, &mut b, 64).unwrap();
    assert_eq!(a, b);
    let got = s.injected();
    assert_eq!((got.calls, got.failures(), got.not_yet), (2, 0, 0));
    assert!(s.name().contains("checkerboard") && s.name().contains("injected faults"));
}

#[test]
fn a_short_read_writes_whole_rows_then_poison_and_fails() {
    let p = FaultPlan {
        seed: 3,
        short_read_rate: 1.0,
        ..FaultPlan::default()
    };
    let s = FaultInjectingSource::new(inner(), p).unwrap();
    let row_bytes = 16 * 4;
    let mut cuts = std::collections::BTreeSet::new();
    for i in 0..40 {
        let r = region(0, (i % 16) * 16, (i / 16) * 8);
        let mut good = vec![0u8; 8 * row_bytes];
        inner().read_tile(r, &mut good, row_bytes).unwrap();
        let mut dest = vec![0u8; 8 * row_bytes];
        let e = s.read_tile(r, &mut dest, row_bytes).unwrap_err();
        assert!(e.0.contains("injected short read"), "{e}");
        let cut = dest.iter().position(|&b| b == POISON).unwrap();
        assert_eq!(cut % row_bytes, 0, "whole rows are written");
        assert_eq!(dest[..cut], good[..cut], "what was written is the data");
        assert!(dest[cut..].iter().all(|&b| b == POISON));
        cuts.insert(cut / row_bytes);
    }
    assert!(cuts.len() > 3, "the cut varies: {cuts:?}");
    // The mip tail: poisoned from some byte on.
    let levels = [MipTailLevel {
        region: TileRegion {
            level: 6,
            x: 0,
            y: 0,
            width: 4,
            height: 4,
        },
        offset: 0,
        row_bytes: 16,
    }];
    let mut tail = vec![0u8; 64];
    assert!(s.read_mip_tail(&levels, &mut tail).is_err());
    assert_eq!(*tail.last().unwrap(), POISON);
    let got = s.injected();
    assert_eq!((got.short_reads, got.read_failures()), (41, 41));
    // At the open, a short read is an error.
    let e = s.open().unwrap_err();
    assert!(e.0.contains("short read") && e.0.contains("open"), "{e}");
    assert_eq!(s.injected().open_failures, 1);
}

#[test]
fn errors_and_panics_are_what_the_plan_says_call_by_call() {
    let p = FaultPlan {
        seed: 11,
        error_rate: 0.3,
        panic_rate: 0.3,
        ..FaultPlan::default()
    };
    let s = FaultInjectingSource::new(inner(), p).unwrap();
    let r = region(0, 0, 0);
    let site = FaultSite::Region(r);
    for attempt in 0..50 {
        let mut dest = vec![0u8; 16 * 8 * 4];
        let got = catch_unwind(AssertUnwindSafe(|| s.read_tile(r, &mut dest, 64)));
        match p.fault(site, attempt) {
            None => assert_eq!(got.unwrap().unwrap(), Readiness::Ready),
            Some(Fault::Error) => {
                let e = got.unwrap().unwrap_err();
                assert!(e.0.contains("injected I/O error") && e.0.contains("level 0"));
            }
            Some(Fault::Panic) => {
                let payload = got.unwrap_err();
                let msg = crate::error::panic_message(&*payload);
                assert!(msg.contains("injected panic"), "{msg}");
            }
            other => panic!("not in the plan: {other:?}"),
        }
    }
    let got = s.injected();
    assert_eq!(got.calls, 50);
    assert!(got.errors > 5 && got.panics > 5, "{got:?}");
}

#[test]
fn concurrent_calls_get_the_faults_of_their_own_site_and_attempt() {
    let p = plan(9);
    let s = Arc::new(FaultInjectingSource::new(inner(), p).unwrap());
    // Each thread reads its own sites repeatedly; every answer must be the plan's for
    // that site's call number, however the threads interleave.
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let s = s.clone();
            scope.spawn(move || {
                for i in 0..8 {
                    let r = region(0, t * 64, i * 8);
                    for attempt in 0..20 {
                        let mut dest = vec![0u8; 16 * 8 * 4];
                        let got = catch_unwind(AssertUnwindSafe(|| s.read_tile(r, &mut dest, 64)));
                        let want = p.fault(FaultSite::Region(r), attempt);
                        let seen = match got {
                            Err(_) => Some(Fault::Panic),
                            Ok(Ok(Readiness::NotYet)) => Some(Fault::NotYet),
                            Ok(Ok(Readiness::Ready)) => None,
                            Ok(Err(e)) if e.0.contains("short read") => Some(Fault::ShortRead),
                            Ok(Err(_)) => Some(Fault::Error),
                        };
                        assert_eq!(seen, want, "{r:?} call {attempt}");
                    }
                }
            });
        }
    });
    assert_eq!(s.injected().calls, 4 * 8 * 20);
}

#[test]
fn sites_limit_what_the_plan_touches_and_bad_rates_are_refused() {
    let p = FaultPlan {
        error_rate: 1.0,
        sites: FaultSites::tiles_only(),
        ..FaultPlan::default()
    };
    let s = FaultInjectingSource::new(inner(), p).unwrap();
    assert!(s.open().is_ok());
    let levels = [MipTailLevel {
        region: TileRegion {
            level: 8,
            x: 0,
            y: 0,
            width: 1,
            height: 1,
        },
        offset: 0,
        row_bytes: 4,
    }];
    assert!(s.read_mip_tail(&levels, &mut [0u8; 4]).is_ok());
    assert!(s.read_tile(region(0, 0, 0), &mut [0u8; 512], 64).is_err());
    assert_eq!(s.injected().calls, 1, "only the tile read was covered");
    let open_only = FaultPlan {
        error_rate: 1.0,
        sites: FaultSites::open_only(),
        ..FaultPlan::default()
    };
    let s = FaultInjectingSource::new(inner(), open_only).unwrap();
    assert!(s
        .open()
        .unwrap_err()
        .0
        .contains("injected I/O error at open"));
    assert_eq!(s.injected().open_failures, 1);
    assert_eq!(s.injected().read_failures(), 0);

    for bad in [
        FaultPlan {
            error_rate: -0.1,
            ..FaultPlan::default()
        },
        FaultPlan {
            panic_rate: 1.5,
            ..FaultPlan::default()
        },
        FaultPlan {
            error_rate: 0.6,
            not_yet_rate: 0.6,
            ..FaultPlan::default()
        },
        FaultPlan {
            short_read_rate: f64::NAN,
            ..FaultPlan::default()
        },
    ] {
        assert!(FaultInjectingSource::new(inner(), bad).is_err(), "{bad:?}");
    }
}
