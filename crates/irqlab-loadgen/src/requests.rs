//! What each request is: which key, and `get` or `set`. Each connection has
//! its own seeded stream, so the sequence a connection sends depends only on
//! `(seed, connection)`, never on timing or on the other connections. Keys
//! are drawn uniformly from the key space, as mutilate does with its default
//! `--keydist`.

use irqlab_core::engine::{RngStreams, StreamRng};
use rand::Rng;

use crate::protocol::Op;

/// Stream kind of the request draws (see `keyspace::KIND_SIZES`).
const KIND_REQUESTS: u32 = 102;

#[derive(Clone, Debug)]
pub struct RequestStream {
    rng: StreamRng,
    records: u64,
    get_fraction: f64,
}

impl RequestStream {
    pub fn new(seed: u64, conn: u32, records: u64, get_fraction: f64) -> Self {
        RequestStream {
            rng: RngStreams::new(seed).stream(KIND_REQUESTS, u64::from(conn)),
            records,
            get_fraction,
        }
    }

    /// The next request: its kind and key index.
    pub fn next_request(&mut self) -> (Op, u64) {
        let key = self.rng.gen_range(0..self.records);
        let op = if self.get_fraction >= 1.0 || self.rng.gen::<f64>() < self.get_fraction {
            Op::Get
        } else {
            Op::Set
        };
        (op, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_uniform_and_mixed() {
        let draw = |seed, conn, gf| {
            let mut s = RequestStream::new(seed, conn, 1000, gf);
            (0..100_000).map(|_| s.next_request()).collect::<Vec<_>>()
        };
        let a = draw(1, 0, 0.9);
        assert_eq!(a, draw(1, 0, 0.9));
        assert_ne!(a, draw(2, 0, 0.9));
        assert_ne!(a, draw(1, 1, 0.9));
        let gets = a.iter().filter(|r| r.0 == Op::Get).count() as f64 / 1e5;
        assert!((gets - 0.9).abs() < 0.005, "{gets}");
        assert!(a.iter().all(|r| r.1 < 1000));
        let mean_key = a.iter().map(|r| r.1 as f64).sum::<f64>() / 1e5;
        assert!((mean_key - 499.5).abs() < 5.0, "{mean_key}");
        assert!(draw(1, 0, 1.0).iter().all(|r| r.0 == Op::Get));
        assert!(draw(1, 0, 0.0).iter().all(|r| r.0 == Op::Set));
    }
}
