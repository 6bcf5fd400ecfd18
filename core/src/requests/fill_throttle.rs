//! A limit on the CPU time fills take ([`crate::LoaderOptions::fill_cpu_cores`]): a token
//! bucket that fill threads draw on in CPU time, refilled at `cores` CPU-seconds per
//! second of wall time.
//!
//! A CPU renderer whose shading threads use every core loses to each fill the cycles the
//! fill computes (decoding, inflating, procedural texels): on a 2-core VM a burst of fills
//! beside a frame made it 1.5–2.5× slower than the same frame with everything resident,
//! whatever the fill threads' niceness (docs/INTERACTIVE.md). Bounding the fill threads'
//! CPU time to a fraction of a core bounds what any frame loses to them, whatever the
//! scheduler does. Time a fill spends waiting on storage is not CPU time and is not
//! counted: reads on a slow store still overlap.
//!
//! A fill starts once the bucket is not in debt, charged up front with the CPU time recent
//! fills took (so that threads starting together do not all pass at once), and the
//! difference is settled when it ends, measured on the thread's own CPU clock. The bucket
//! holds at most [`BURST`] of wall time's worth of tokens, so an idle spell does not buy a
//! burst later. Fills that must wait queue: one sleeps until the bucket is out of debt, the
//! others wait their turn asleep (all sleeping on the clock and waking together to find
//! the bucket in debt again cost the frame being shaded about a tenth more on the demo's
//! first frames). The wait is bounded: by the debt and the CPU time of the fills queued
//! ahead, repaid at `cores`, so a ticket waited on completes.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// Most wall time's worth of tokens the bucket keeps (the longest burst after idling).
pub(crate) const BURST: Duration = Duration::from_millis(10);

/// The CPU time a fill is first charged before any fill was measured.
const FIRST_ESTIMATE_NS: f64 = 200_000.0;

/// The token bucket (see the module docs).
#[derive(Debug)]
pub(crate) struct FillThrottle {
    /// CPU nanoseconds per wall nanosecond.
    cores: f64,
    state: Mutex<Bucket>,
    /// Held by the one fill that waits for the bucket (sleeping): the others queue on it
    /// asleep rather than all waking to find the bucket still in debt.
    turn: Mutex<()>,
}

#[derive(Debug)]
struct Bucket {
    /// CPU nanoseconds fills may still take; negative: a debt being repaid.
    tokens: f64,
    /// When `tokens` was last refilled.
    refilled: Instant,
    /// Moving average of a fill's CPU time (the up-front charge).
    estimate: f64,
}

/// A fill under way: settle it with [`FillThrottle::finish`].
#[must_use]
#[derive(Debug)]
pub(crate) struct FillCharge {
    charged: f64,
    cpu_start: Duration,
}

impl FillThrottle {
    /// A throttle allowing `cores` cores of fill CPU time on average (> 0).
    pub(crate) fn new(cores: f32) -> FillThrottle {
        let cores = f64::from(cores);
        FillThrottle {
            cores,
            state: Mutex::new(Bucket {
                tokens: cores * BURST.as_nanos() as f64,
                refilled: Instant::now(),
                estimate: FIRST_ESTIMATE_NS,
            }),
            turn: Mutex::new(()),
        }
    }

    /// Wait (sleeping) until the bucket is out of debt, then charge a fill's estimated
    /// CPU time.
    pub(crate) fn start(&self) -> FillCharge {
        let _turn = self.turn.lock();
        loop {
            let wait = {
                let mut b = self.state.lock();
                self.refill(&mut b);
                if b.tokens >= 0.0 {
                    let charged = b.estimate;
                    b.tokens -= charged;
                    drop(b);
                    return FillCharge {
                        charged,
                        cpu_start: thread_cpu_time(),
                    };
                }
                Duration::from_nanos((-b.tokens / self.cores).ceil() as u64)
            };
            std::thread::sleep(wait.max(Duration::from_micros(50)));
        }
    }

    /// Settle a fill: charge what it took beyond its estimate (or give back the rest).
    pub(crate) fn finish(&self, charge: FillCharge) {
        let used = thread_cpu_time()
            .saturating_sub(charge.cpu_start)
            .as_nanos() as f64;
        let mut b = self.state.lock();
        b.tokens -= used - charge.charged;
        b.estimate += (used - b.estimate) / 8.0;
    }

    fn refill(&self, b: &mut Bucket) {
        let now = Instant::now();
        let elapsed = now.duration_since(b.refilled).as_nanos() as f64;
        b.refilled = now;
        let cap = self.cores * BURST.as_nanos() as f64;
        b.tokens = (b.tokens + elapsed * self.cores).min(cap);
    }
}

/// The CPU time the calling thread has used (its wall time where the system has no
/// per-thread CPU clock: waits then count as CPU time, which only makes the limit
/// stricter).
pub(crate) fn thread_cpu_time() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's duration;
        // CLOCK_THREAD_CPUTIME_ID reads the calling thread's own clock.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    wall_clock()
}

/// Wall time since the first call (the fallback clock).
fn wall_clock() -> Duration {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(d: Duration) {
        let start = thread_cpu_time();
        while thread_cpu_time() - start < d {
            std::hint::black_box(0u64);
        }
    }

    #[test]
    fn the_thread_cpu_clock_counts_work_and_not_sleep() {
        let a = thread_cpu_time();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu_time() - a;
        spin(Duration::from_millis(5));
        let worked = thread_cpu_time() - a - slept;
        assert!(slept < Duration::from_millis(10), "sleep counted {slept:?}");
        assert!(
            worked >= Duration::from_millis(5),
            "work counted {worked:?}"
        );
    }

    #[test]
    fn fills_are_held_to_the_cpu_share() {
        // Fills of 2 ms each at a quarter of a core: 20 of them (40 ms of CPU) take at
        // least 160 ms of wall time less what the first burst and the last fill's debt
        // (never repaid) allow, however fast they could run (unlimited: 40 ms).
        let throttle = FillThrottle::new(0.25);
        let start = Instant::now();
        for _ in 0..20 {
            let c = throttle.start();
            spin(Duration::from_millis(2));
            throttle.finish(c);
        }
        let wall = start.elapsed();
        let floor = Duration::from_millis(160) - BURST - Duration::from_millis(20);
        assert!(wall >= floor, "{wall:?} < {floor:?}");
    }

    #[test]
    fn fills_that_wait_on_storage_are_not_charged_for_it() {
        // Fills that sleep 2 ms use next to no CPU: after 40 of them the bucket is not in
        // debt and the up-front charge is a small part of the 2 ms of wall time each took
        // (counting wall time would bring it near 2 ms). The bound leaves room for what a
        // busy machine charges a sleep in CPU time (a CI run measured 70 µs a fill).
        let throttle = FillThrottle::new(0.25);
        for _ in 0..40 {
            let c = throttle.start();
            std::thread::sleep(Duration::from_millis(2));
            throttle.finish(c);
        }
        let b = throttle.state.lock();
        assert!(b.tokens > 0.0, "in debt: {}", b.tokens);
        assert!(b.estimate < 500_000.0, "estimate {} ns", b.estimate);
    }
}
