//! Open-loop send times. Each connection carries its own arrival stream at
//! `qps / connections` requests per second, as mutilate does (each
//! `Connection` draws its gaps from the `--iadist` generator after
//! `set_lambda(qps / connections)`; Connection.cc, mutilate.cc). The
//! superposition of the streams has the target rate.
//!
//! A connection's send times are fixed in advance: the `k`-th is the sum of
//! the first `k` gaps of its seeded stream, a pure function of `(seed,
//! connection, k)` that nothing the server does can move. They are generated
//! lazily, one ahead, only so that memory does not grow with the run's
//! length. A request's latency is counted from this scheduled time, so a
//! request sent late because the connection was behind (its `--depth` slots
//! all taken, or the generator busy) is charged for the wait: no
//! coordinated omission.

use irqlab_core::engine::{RngStreams, StreamRng};
use irqlab_core::workload::{InterArrival, InterArrivalKind};

/// Stream kind of the arrival gaps (see `keyspace::KIND_SIZES`).
const KIND_ARRIVALS: u32 = 101;

/// The send times of one connection, in nanoseconds from the start of the
/// run's timed phase (warm-up included).
#[derive(Clone, Debug)]
pub struct Schedule {
    ia: InterArrival,
    rng: StreamRng,
    next: u64,
}

impl Schedule {
    /// Connection `conn`'s schedule when `connections` connections share
    /// `qps` requests per second (`qps > 0`, finite; `conn < connections`).
    pub fn new(kind: InterArrivalKind, qps: f64, connections: u32, seed: u64, conn: u32) -> Self {
        let ia = InterArrival::new(kind, qps / f64::from(connections))
            .expect("the caller checked qps > 0");
        let mut rng = RngStreams::new(seed).stream(KIND_ARRIVALS, u64::from(conn));
        let next = ia.sample_ns(&mut rng);
        Schedule { ia, rng, next }
    }

    /// The next send time (offset in ns).
    pub fn peek(&self) -> u64 {
        self.next
    }

    /// Move past the next send time and return it.
    pub fn advance(&mut self) -> u64 {
        let t = self.next;
        self.next = t.saturating_add(self.ia.sample_ns(&mut self.rng));
        t
    }
}

/// The first `n` send times of connection `conn` (for tests and tools).
pub fn send_times(
    kind: InterArrivalKind,
    qps: f64,
    connections: u32,
    seed: u64,
    conn: u32,
    n: usize,
) -> Vec<u64> {
    let mut s = Schedule::new(kind, qps, connections, seed, conn);
    (0..n).map(|_| s.advance()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [InterArrivalKind; 2] = [InterArrivalKind::Exponential, InterArrivalKind::FbIa];

    #[test]
    fn send_times_are_fixed_by_the_seed() {
        for kind in KINDS {
            let a = send_times(kind, 50_000.0, 8, 7, 3, 5_000);
            assert_eq!(a, send_times(kind, 50_000.0, 8, 7, 3, 5_000));
            assert_ne!(a, send_times(kind, 50_000.0, 8, 8, 3, 5_000), "other seed");
            assert_ne!(
                a,
                send_times(kind, 50_000.0, 8, 7, 4, 5_000),
                "other connection"
            );
            assert!(a.windows(2).all(|w| w[0] <= w[1]), "non-decreasing");
            // Peeking does not move the schedule; the times do not depend on
            // when they are asked for (nothing but the seed feeds them).
            let mut s = Schedule::new(kind, 50_000.0, 8, 7, 3);
            let mut got = Vec::new();
            for i in 0..5_000 {
                assert_eq!(s.peek(), s.peek());
                if i % 3 == 0 {
                    let _ = s.peek();
                }
                got.push(s.advance());
            }
            assert_eq!(got, a);
        }
    }

    #[test]
    fn mean_rate_matches_the_target() {
        // Over all connections, the number of sends in [0, T) is the target
        // rate times T within 4 standard deviations of a Poisson count
        // (fb_ia gaps have a coefficient of variation of about 1.2; the
        // count's relative spread is about that over sqrt(n)).
        for kind in KINDS {
            for (qps, conns) in [(5_000.0, 1u32), (20_000.0, 4), (1_000_000.0, 32)] {
                let horizon_ns = 2_000_000_000u64;
                let mut count = 0u64;
                for c in 0..conns {
                    let mut s = Schedule::new(kind, qps, conns, 1, c);
                    while s.advance() < horizon_ns {
                        count += 1;
                    }
                }
                let want = qps * 2.0;
                let tol = 4.0 * 1.25 * want.sqrt();
                assert!(
                    (count as f64 - want).abs() < tol,
                    "{kind:?} {qps} qps over {conns}: {count} sends in 2 s, want {want} ± {tol}"
                );
            }
        }
    }

    #[test]
    fn gaps_have_the_distribution_mean() {
        // Mean gap of one connection: connections / qps.
        for kind in KINDS {
            let t = send_times(kind, 100_000.0, 10, 3, 0, 200_000);
            let mean_gap = *t.last().unwrap() as f64 / t.len() as f64;
            let want = 1e9 * 10.0 / 100_000.0;
            assert!(
                (mean_gap / want - 1.0).abs() < 0.015,
                "{kind:?}: {mean_gap} vs {want}"
            );
        }
    }
}
