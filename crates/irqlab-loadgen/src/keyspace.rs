//! The key space: `records` keys, each with a fixed key string, value length
//! and value content, all derived from the key's index alone. A `get` can
//! therefore be checked byte for byte against what the preload stored, and
//! two runs (with any `--seed`) agree on what every key holds.
//!
//! Sizes follow mutilate's ETC generators (`fb_key`, `fb_value`, reused from
//! [`irqlab_core::workload`]) or are fixed. Like mutilate, which derives a
//! key's length from a hash of its index (`KeyGenerator::generate`,
//! Generator.h), a key's sizes do not depend on the run seed: they are drawn
//! once per key space from a stream with a fixed seed.

use irqlab_core::engine::RngStreams;
use irqlab_core::workload::{EtcKeySize, EtcValueSize, SizeDist};

/// Longest key memcached accepts (`KEY_MAX_LENGTH` in memcached.h). ETC
/// draws above it (probability below 1e-6) are cut to it.
pub const MAX_KEY_LEN: u32 = 250;

/// Largest value the generator stores: under memcached's default 1 MiB item
/// limit (`-I 1m`) once the item header and key are added. ETC draws above
/// it (probability about 1e-9) are cut to it.
pub const MAX_VALUE_LEN: u32 = 1_000_000;

/// Largest key space: the per-key size tables then take 50 MB.
pub const MAX_RECORDS: u64 = 10_000_000;

/// Seed of the key-size stream: fixed, so that a key means the same thing
/// in every run.
const KEYSPACE_SEED: u64 = 0x6B65_7973_7061_6365; // "keyspace"
/// Stream kind of the size draws (loadgen streams are numbered from 100 so
/// they never collide with the simulator's).
const KIND_SIZES: u32 = 100;

/// Values are windows of one pseudo-random printable buffer, starting at
/// one of this many offsets (a hash of the key index), so neighbouring keys
/// hold different bytes without storing a value per key.
const VALUE_OFFSETS: usize = 4096;

/// Number of decimal digits of `n` (1 for 0).
pub fn digits(n: u64) -> u32 {
    if n == 0 {
        1
    } else {
        n.ilog10() + 1
    }
}

/// Shortest fixed key length that keeps the keys of a `records`-key space
/// distinct: the digits of the largest index.
pub fn min_key_len(records: u64) -> u32 {
    digits(records.saturating_sub(1))
}

/// A key rendered on the stack (keys are at most [`MAX_KEY_LEN`] bytes).
pub struct KeyBuf {
    buf: [u8; MAX_KEY_LEN as usize],
    len: usize,
}

impl KeyBuf {
    pub fn new() -> Self {
        KeyBuf {
            buf: [0; MAX_KEY_LEN as usize],
            len: 0,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Default for KeyBuf {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug)]
pub struct KeySpace {
    records: u64,
    key_size: SizeDist,
    value_size: SizeDist,
    /// Per-key lengths when the size is ETC (empty when fixed).
    key_lens: Vec<u8>,
    value_lens: Vec<u32>,
    pattern: Vec<u8>,
}

impl KeySpace {
    /// The key space of `records` keys (1..=[`MAX_RECORDS`]). A fixed key
    /// size must be in `min_key_len(records)..=MAX_KEY_LEN`, a fixed value
    /// size at most [`MAX_VALUE_LEN`]; the caller has checked both.
    pub fn new(records: u64, key_size: SizeDist, value_size: SizeDist) -> Self {
        assert!((1..=MAX_RECORDS).contains(&records), "records out of range");
        if let SizeDist::Fixed(k) = key_size {
            assert!(
                (min_key_len(records)..=MAX_KEY_LEN).contains(&k),
                "key size out of range"
            );
        }
        if let SizeDist::Fixed(v) = value_size {
            assert!(v <= MAX_VALUE_LEN, "value size out of range");
        }
        let streams = RngStreams::new(KEYSPACE_SEED);
        let mut key_lens = Vec::new();
        if key_size == SizeDist::Etc {
            // The minimum is the digit count of `records`, as mutilate pads.
            let etc = EtcKeySize::for_records(records);
            let mut rng = streams.stream(KIND_SIZES, 0);
            key_lens = (0..records)
                .map(|_| etc.sample(&mut rng).min(MAX_KEY_LEN) as u8)
                .collect();
        }
        let mut value_lens = Vec::new();
        if value_size == SizeDist::Etc {
            let etc = EtcValueSize::new();
            let mut rng = streams.stream(KIND_SIZES, 1);
            value_lens = (0..records)
                .map(|_| etc.sample(&mut rng).min(MAX_VALUE_LEN))
                .collect();
        }
        let longest = match value_size {
            SizeDist::Fixed(v) => v as usize,
            SizeDist::Etc => value_lens.iter().copied().max().unwrap_or(0) as usize,
        };
        KeySpace {
            records,
            key_size,
            value_size,
            key_lens,
            value_lens,
            pattern: pattern(longest + VALUE_OFFSETS),
        }
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn key_size(&self) -> SizeDist {
        self.key_size
    }

    pub fn value_size(&self) -> SizeDist {
        self.value_size
    }

    /// Length in bytes of key `n`'s string.
    pub fn key_len(&self, n: u64) -> usize {
        match self.key_size {
            SizeDist::Fixed(k) => k as usize,
            SizeDist::Etc => self.key_lens[n as usize] as usize,
        }
    }

    /// Length in bytes of key `n`'s value.
    pub fn value_len(&self, n: u64) -> usize {
        match self.value_size {
            SizeDist::Fixed(v) => v as usize,
            SizeDist::Etc => self.value_lens[n as usize] as usize,
        }
    }

    /// Key `n` as a string of exactly `key_len(n)` bytes: `key:` and the
    /// index zero-padded to fill it (`key:00042`), or, when the length
    /// leaves no room for the prefix, the zero-padded index alone (`00042`).
    /// Different indexes always give different keys: prefixed keys hold a
    /// `:` and unprefixed ones do not, and within each form the digits give
    /// the index back.
    pub fn key<'b>(&self, n: u64, out: &'b mut KeyBuf) -> &'b [u8] {
        let len = self.key_len(n);
        let d = digits(n) as usize;
        debug_assert!(len >= d);
        let mut i = 0;
        if len >= 4 + d {
            out.buf[..4].copy_from_slice(b"key:");
            i = 4;
        }
        out.buf[i..len - d].fill(b'0');
        let mut m = n;
        for j in (len - d..len).rev() {
            out.buf[j] = b'0' + (m % 10) as u8;
            m /= 10;
        }
        out.len = len;
        out.as_bytes()
    }

    /// Key `n`'s value: `value_len(n)` printable bytes.
    pub fn value(&self, n: u64) -> &[u8] {
        let off = (mix(n) % VALUE_OFFSETS as u64) as usize;
        &self.pattern[off..off + self.value_len(n)]
    }
}

/// SplitMix64 finaliser: a cheap, well-spread hash of the key index.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `len` pseudo-random bytes from `a`–`z`, `A`–`Z`, `0`–`9` (printable, no
/// spaces or CRLF, though the protocol would carry any byte).
fn pattern(len: usize) -> Vec<u8> {
    const ALPHABET: &[u8; 62] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..len as u64)
        .map(|i| ALPHABET[(mix(i) % 62) as usize])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn digit_counts() {
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(10), 2);
        assert_eq!(digits(u64::MAX), 20);
        assert_eq!(min_key_len(1), 1);
        assert_eq!(min_key_len(10), 1);
        assert_eq!(min_key_len(11), 2);
        assert_eq!(min_key_len(10_000), 4);
    }

    #[test]
    fn fixed_keys_have_the_asked_length_and_are_distinct() {
        for (records, len) in [(1000u64, 3u32), (1000, 5), (1000, 8), (1000, 250), (1, 1)] {
            let ks = KeySpace::new(records, SizeDist::Fixed(len), SizeDist::Fixed(10));
            let mut seen = HashSet::new();
            let mut kb = KeyBuf::new();
            for n in 0..records {
                let k = ks.key(n, &mut kb).to_vec();
                assert_eq!(k.len(), len as usize);
                assert!(k.iter().all(|b| b.is_ascii_graphic()));
                assert!(seen.insert(k));
            }
        }
        let ks = KeySpace::new(100_000, SizeDist::Fixed(10), SizeDist::Fixed(1));
        let mut kb = KeyBuf::new();
        assert_eq!(ks.key(42, &mut kb), b"key:000042");
        assert_eq!(ks.key(99_999, &mut kb), b"key:099999");
        let ks = KeySpace::new(100_000, SizeDist::Fixed(5), SizeDist::Fixed(1));
        assert_eq!(ks.key(42, &mut kb), b"00042");
    }

    #[test]
    fn etc_sizes_are_deterministic_distinct_and_bounded() {
        let a = KeySpace::new(20_000, SizeDist::Etc, SizeDist::Etc);
        let b = KeySpace::new(20_000, SizeDist::Etc, SizeDist::Etc);
        let (mut ka, mut kb) = (KeyBuf::new(), KeyBuf::new());
        let mut seen = HashSet::new();
        let mut key_total = 0usize;
        let mut small_values = 0usize;
        for n in 0..20_000 {
            assert_eq!(a.key(n, &mut ka), b.key(n, &mut kb));
            assert_eq!(a.value(n), b.value(n));
            let k = a.key(n, &mut ka);
            assert!((5..=250).contains(&k.len()), "{}", k.len());
            assert!(seen.insert(k.to_vec()));
            key_total += k.len();
            assert!(a.value_len(n) <= MAX_VALUE_LEN as usize);
            assert_eq!(a.value(n).len(), a.value_len(n));
            if a.value_len(n) < 15 {
                small_values += 1;
            }
        }
        // fb_key's mean is about 36.2 bytes; 44 % of fb_value sizes come
        // from the 0–14 byte table.
        let mean = key_total as f64 / 20_000.0;
        assert!((mean - 36.2).abs() < 0.5, "mean key length {mean}");
        let frac = small_values as f64 / 20_000.0;
        assert!((frac - 0.4416).abs() < 0.02, "small value fraction {frac}");
    }

    #[test]
    fn values_differ_between_keys() {
        let ks = KeySpace::new(1000, SizeDist::Fixed(4), SizeDist::Fixed(32));
        let distinct: HashSet<&[u8]> = (0..1000).map(|n| ks.value(n)).collect();
        // 1000 keys over 4096 offsets: about 885 distinct windows.
        assert!(distinct.len() > 850, "{}", distinct.len());
        assert!(ks.value(3).iter().all(|b| b.is_ascii_alphanumeric()));
        let empty = KeySpace::new(10, SizeDist::Fixed(1), SizeDist::Fixed(0));
        assert_eq!(empty.value(3), b"");
    }
}
