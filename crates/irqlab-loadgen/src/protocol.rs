//! The memcached text protocol, as much of it as the load generator speaks:
//! `get` and `set` requests, and an incremental parser for their replies
//! (memcached `doc/protocol.txt`, "Storage commands" and "Retrieval command").
//!
//! The parser never allocates and never blocks: it is handed the bytes read
//! so far and what the oldest outstanding request expects, and answers
//! "need more bytes", "one reply of `n` bytes, with this outcome", or "the
//! stream is broken". Replies arrive in request order (memcached answers a
//! connection's requests in order, so pipelining needs no request ids); the
//! caller pops its oldest outstanding request per reply.
//!
//! Two kinds of failure are kept apart:
//! - [`Outcome::Failed`]: a well-formed reply that is wrong (an `ERROR`
//!   family reply, `NOT_STORED`, the wrong key, length or data). Its length
//!   is known, so the stream stays in step; the request counts as an error.
//! - [`ProtocolError`]: bytes that are not a reply to the request (garbage, a
//!   missing CRLF, a reply of the wrong kind). Where the next reply starts is
//!   unknown, so the connection cannot be trusted any more.

use std::fmt;

/// Longest reply line accepted (`VALUE <key> <flags> <bytes>` with a
/// 250-byte key is under 300 bytes; error replies carry a short message).
/// A longer line is garbage, not a reply to wait for.
pub const MAX_LINE: usize = 2048;

/// Largest `<bytes>` a `VALUE` line may announce. memcached's item size
/// limit (`-I`) defaults to 1 MiB; the generator never stores more than
/// [`crate::keyspace::MAX_VALUE_LEN`]. Anything above this bound is taken as
/// garbage rather than buffered.
pub const MAX_REPLY_VALUE: u64 = 8 << 20;

/// A request kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Get,
    Set,
}

/// What the oldest outstanding request expects of its reply.
#[derive(Clone, Copy, Debug)]
pub struct Expect<'a> {
    pub op: Op,
    /// The key the request named.
    pub key: &'a [u8],
    /// For a `get`, the value the key holds if the generator knows it; a hit
    /// must then carry exactly these bytes. `None` accepts any data.
    pub value: Option<&'a [u8]>,
}

/// Why a well-formed reply counts as an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// `ERROR` (the server did not understand the command).
    Error,
    /// `CLIENT_ERROR <message>`.
    ClientError,
    /// `SERVER_ERROR <message>` (e.g. out of memory, object too large).
    ServerError,
    /// `NOT_STORED`, `EXISTS` or `NOT_FOUND` in reply to a `set`.
    NotStored,
    /// A `VALUE` for another key than the one asked for.
    WrongKey,
    /// A `VALUE` whose flags are not the 0 the generator stores.
    WrongFlags,
    /// A `VALUE` whose length differs from the expected value's.
    WrongLength,
    /// A `VALUE` whose data differs from the expected value.
    WrongData,
}

impl Failure {
    pub fn describe(&self) -> &'static str {
        match self {
            Failure::Error => "ERROR reply",
            Failure::ClientError => "CLIENT_ERROR reply",
            Failure::ServerError => "SERVER_ERROR reply",
            Failure::NotStored => "set not stored",
            Failure::WrongKey => "VALUE for the wrong key",
            Failure::WrongFlags => "VALUE with unexpected flags",
            Failure::WrongLength => "VALUE of the wrong length",
            Failure::WrongData => "VALUE with the wrong data",
        }
    }
}

/// The meaning of one complete, well-formed reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `get` found the key with the expected data.
    Hit,
    /// `get` answered `END` alone: the key is not there.
    Miss,
    /// `set` answered `STORED`.
    Stored,
    /// A well-formed reply that counts as an error (see [`Failure`]).
    Failed(Failure),
}

/// Result of [`parse_reply`] when the bytes are not (yet) broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// The buffer holds a prefix of a reply; read more.
    Incomplete,
    /// The first `consumed` bytes are one reply.
    Complete { consumed: usize, outcome: Outcome },
}

/// The bytes are not a reply to the expected request; the stream is out of
/// step and the connection must be dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub &'static str);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for ProtocolError {}

// -- encoding ---------------------------------------------------------------

/// Append `get <key>\r\n` to `out`.
pub fn encode_get(out: &mut Vec<u8>, key: &[u8]) {
    out.reserve(key.len() + 6);
    out.extend_from_slice(b"get ");
    out.extend_from_slice(key);
    out.extend_from_slice(b"\r\n");
}

/// Append `set <key> 0 0 <bytes>\r\n<data>\r\n` to `out` (flags 0, no
/// expiry).
pub fn encode_set(out: &mut Vec<u8>, key: &[u8], data: &[u8]) {
    out.reserve(key.len() + data.len() + 32);
    out.extend_from_slice(b"set ");
    out.extend_from_slice(key);
    out.extend_from_slice(b" 0 0 ");
    push_decimal(out, data.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Append the decimal digits of `n` (no allocation, unlike `format!`).
pub fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

// -- parsing ----------------------------------------------------------------

/// One line: the bytes before `\r\n`, and the offset just past it.
enum Line<'a> {
    Incomplete,
    Complete(&'a [u8], usize),
}

/// The line starting at `buf[0]`. A `\n` not preceded by `\r`, or no line
/// end within [`MAX_LINE`] bytes, is a protocol error.
fn line(buf: &[u8]) -> Result<Line<'_>, ProtocolError> {
    let window = &buf[..buf.len().min(MAX_LINE)];
    match window.iter().position(|&b| b == b'\n') {
        Some(0) => Err(ProtocolError("reply line not terminated by CRLF")),
        Some(nl) if window[nl - 1] != b'\r' => {
            Err(ProtocolError("reply line not terminated by CRLF"))
        }
        Some(nl) => Ok(Line::Complete(&window[..nl - 1], nl + 1)),
        None if buf.len() >= MAX_LINE => Err(ProtocolError("reply line too long")),
        None => Ok(Line::Incomplete),
    }
}

/// A decimal number of at most 20 digits fitting `u64`.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(n)
}

/// Failures common to every command: `ERROR`, `CLIENT_ERROR …`,
/// `SERVER_ERROR …` (protocol.txt, "Error strings").
fn error_line(l: &[u8]) -> Option<Failure> {
    if l == b"ERROR" {
        Some(Failure::Error)
    } else if l.starts_with(b"CLIENT_ERROR") && (l.len() == 12 || l[12] == b' ') {
        Some(Failure::ClientError)
    } else if l.starts_with(b"SERVER_ERROR") && (l.len() == 12 || l[12] == b' ') {
        Some(Failure::ServerError)
    } else {
        None
    }
}

/// Parse the reply at the start of `buf` to the request described by
/// `expect`. Never reads past `buf`; a truncated reply is
/// [`Parsed::Incomplete`], whatever byte it is cut at.
pub fn parse_reply(buf: &[u8], expect: &Expect<'_>) -> Result<Parsed, ProtocolError> {
    let (l, after) = match line(buf)? {
        Line::Complete(l, after) => (l, after),
        Line::Incomplete => return Ok(Parsed::Incomplete),
    };
    let done = |outcome| {
        Ok(Parsed::Complete {
            consumed: after,
            outcome,
        })
    };
    if let Some(f) = error_line(l) {
        return done(Outcome::Failed(f));
    }
    match expect.op {
        Op::Set => match l {
            b"STORED" => done(Outcome::Stored),
            b"NOT_STORED" | b"EXISTS" | b"NOT_FOUND" => done(Outcome::Failed(Failure::NotStored)),
            _ => Err(ProtocolError("unexpected reply to set")),
        },
        Op::Get => {
            if l == b"END" {
                return done(Outcome::Miss);
            }
            if !l.starts_with(b"VALUE ") {
                return Err(ProtocolError("unexpected reply to get"));
            }
            parse_value(buf, &l[6..], after, expect)
        }
    }
}

/// The rest of a hit: `header` is the `VALUE` line after `"VALUE "`, and
/// the data block starts at `buf[start]`.
fn parse_value(
    buf: &[u8],
    header: &[u8],
    start: usize,
    expect: &Expect<'_>,
) -> Result<Parsed, ProtocolError> {
    // VALUE <key> <flags> <bytes>  (a fourth field, <cas unique>, only
    // follows `gets`, which the generator never sends).
    let mut fields = header.split(|&b| b == b' ');
    let (key, flags, bytes) = match (fields.next(), fields.next(), fields.next(), fields.next()) {
        (Some(k), Some(f), Some(b), None) if !k.is_empty() => (k, f, b),
        _ => return Err(ProtocolError("malformed VALUE line")),
    };
    let flags = parse_u64(flags)
        .filter(|&f| f <= u64::from(u32::MAX))
        .ok_or(ProtocolError("malformed flags in VALUE line"))?;
    let len = parse_u64(bytes).ok_or(ProtocolError("malformed length in VALUE line"))?;
    if len > MAX_REPLY_VALUE {
        return Err(ProtocolError("VALUE length too large"));
    }
    let len = len as usize;
    // <data>\r\nEND\r\n, checked byte by byte as far as the buffer goes so
    // that a broken frame is reported as soon as it is visible.
    let data_end = start + len;
    let tail = b"\r\nEND\r\n";
    let have = buf.len().saturating_sub(data_end).min(tail.len());
    if buf.len() > data_end && buf[data_end..data_end + have] != tail[..have] {
        return Err(ProtocolError("VALUE data not followed by CRLF END CRLF"));
    }
    if have < tail.len() {
        return Ok(Parsed::Incomplete);
    }
    let data = &buf[start..data_end];
    let outcome = if key != expect.key {
        Outcome::Failed(Failure::WrongKey)
    } else if flags != 0 {
        Outcome::Failed(Failure::WrongFlags)
    } else {
        match expect.value {
            Some(v) if v.len() != len => Outcome::Failed(Failure::WrongLength),
            Some(v) if v != data => Outcome::Failed(Failure::WrongData),
            _ => Outcome::Hit,
        }
    };
    Ok(Parsed::Complete {
        consumed: data_end + tail.len(),
        outcome,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"key:000042";
    const VAL: &[u8] = b"hello world";

    fn get() -> Expect<'static> {
        Expect {
            op: Op::Get,
            key: KEY,
            value: Some(VAL),
        }
    }

    fn set() -> Expect<'static> {
        Expect {
            op: Op::Set,
            key: KEY,
            value: None,
        }
    }

    fn hit_bytes() -> Vec<u8> {
        let mut v = b"VALUE key:000042 0 11\r\n".to_vec();
        v.extend_from_slice(VAL);
        v.extend_from_slice(b"\r\nEND\r\n");
        v
    }

    /// Parse `reply` whole, and also every proper prefix of it: a prefix
    /// must be Incomplete or fail with the same error as the whole (never
    /// complete, never a different error). Returns the whole's result.
    fn parse_all_splits(reply: &[u8], e: &Expect<'_>) -> Result<Parsed, ProtocolError> {
        let whole = parse_reply(reply, e);
        for cut in 0..reply.len() {
            match parse_reply(&reply[..cut], e) {
                Ok(Parsed::Incomplete) => {}
                Err(err) => assert_eq!(Err(err), whole, "prefix of {cut} bytes"),
                other => panic!("prefix of {cut} bytes of {reply:?} gave {other:?}"),
            }
        }
        whole
    }

    /// Feed `stream` as it could arrive from a socket: split into two reads
    /// at every byte boundary, parsing after each read as the connection
    /// does; returns the outcomes in order.
    fn feed_split(stream: &[u8], expects: &[Expect<'_>]) -> Vec<Outcome> {
        let mut reference = None;
        for cut in 0..=stream.len() {
            let mut buf: Vec<u8> = Vec::new();
            let mut outcomes = Vec::new();
            let mut next = 0;
            for chunk in [&stream[..cut], &stream[cut..]] {
                buf.extend_from_slice(chunk);
                while next < expects.len() {
                    match parse_reply(&buf, &expects[next]).unwrap() {
                        Parsed::Incomplete => break,
                        Parsed::Complete { consumed, outcome } => {
                            buf.drain(..consumed);
                            outcomes.push(outcome);
                            next += 1;
                        }
                    }
                }
            }
            assert!(buf.is_empty(), "cut {cut}: {} bytes left over", buf.len());
            match &reference {
                None => reference = Some(outcomes),
                Some(r) => assert_eq!(r, &outcomes, "cut at {cut}"),
            }
        }
        reference.unwrap()
    }

    #[test]
    fn encodes_requests() {
        let mut out = Vec::new();
        encode_get(&mut out, b"key:1");
        assert_eq!(out, b"get key:1\r\n");
        out.clear();
        encode_set(&mut out, b"key:1", b"abc");
        assert_eq!(out, b"set key:1 0 0 3\r\nabc\r\n");
        out.clear();
        encode_set(&mut out, b"k", b"");
        assert_eq!(out, b"set k 0 0 0\r\n\r\n");
        out.clear();
        for n in [0u64, 7, 10, 99, 1_000_000, u64::MAX] {
            out.clear();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }

    #[test]
    fn parses_hit_miss_stored() {
        let hit = hit_bytes();
        assert_eq!(
            parse_all_splits(&hit, &get()),
            Ok(Parsed::Complete {
                consumed: hit.len(),
                outcome: Outcome::Hit
            })
        );
        assert_eq!(
            parse_all_splits(b"END\r\n", &get()),
            Ok(Parsed::Complete {
                consumed: 5,
                outcome: Outcome::Miss
            })
        );
        assert_eq!(
            parse_all_splits(b"STORED\r\n", &set()),
            Ok(Parsed::Complete {
                consumed: 8,
                outcome: Outcome::Stored
            })
        );
        // Trailing bytes (the next reply) are left alone.
        let mut two = hit.clone();
        two.extend_from_slice(b"END\r\n");
        assert_eq!(
            parse_reply(&two, &get()),
            Ok(Parsed::Complete {
                consumed: hit.len(),
                outcome: Outcome::Hit
            })
        );
        // Empty values, and values that contain CRLF and "END".
        let e = Expect {
            op: Op::Get,
            key: b"k",
            value: Some(b""),
        };
        assert_eq!(
            parse_all_splits(b"VALUE k 0 0\r\n\r\nEND\r\n", &e),
            Ok(Parsed::Complete {
                consumed: 20,
                outcome: Outcome::Hit
            })
        );
        let tricky = b"a\r\nEND\r\nb";
        let e = Expect {
            op: Op::Get,
            key: b"k",
            value: Some(tricky),
        };
        let mut r = b"VALUE k 0 9\r\n".to_vec();
        r.extend_from_slice(tricky);
        r.extend_from_slice(b"\r\nEND\r\n");
        assert_eq!(
            parse_all_splits(&r, &e),
            Ok(Parsed::Complete {
                consumed: r.len(),
                outcome: Outcome::Hit
            })
        );
        // Unknown value: any data is a hit.
        let e = Expect {
            op: Op::Get,
            key: KEY,
            value: None,
        };
        assert_eq!(
            parse_reply(&hit, &e),
            Ok(Parsed::Complete {
                consumed: hit.len(),
                outcome: Outcome::Hit
            })
        );
    }

    #[test]
    fn error_replies_are_failures_in_step() {
        for (reply, f) in [
            (&b"ERROR\r\n"[..], Failure::Error),
            (b"CLIENT_ERROR bad data chunk\r\n", Failure::ClientError),
            (b"CLIENT_ERROR\r\n", Failure::ClientError),
            (
                b"SERVER_ERROR out of memory storing object\r\n",
                Failure::ServerError,
            ),
        ] {
            for e in [get(), set()] {
                assert_eq!(
                    parse_all_splits(reply, &e),
                    Ok(Parsed::Complete {
                        consumed: reply.len(),
                        outcome: Outcome::Failed(f)
                    }),
                    "{:?}",
                    String::from_utf8_lossy(reply)
                );
            }
        }
        for reply in [&b"NOT_STORED\r\n"[..], b"EXISTS\r\n", b"NOT_FOUND\r\n"] {
            assert_eq!(
                parse_all_splits(reply, &set()),
                Ok(Parsed::Complete {
                    consumed: reply.len(),
                    outcome: Outcome::Failed(Failure::NotStored)
                })
            );
        }
    }

    #[test]
    fn wrong_key_length_flags_data_are_failures_in_step() {
        let cases: [(&[u8], Failure); 4] = [
            (
                b"VALUE key:000043 0 11\r\nhello world\r\nEND\r\n",
                Failure::WrongKey,
            ),
            (
                b"VALUE key:000042 5 11\r\nhello world\r\nEND\r\n",
                Failure::WrongFlags,
            ),
            (
                b"VALUE key:000042 0 5\r\nhello\r\nEND\r\n",
                Failure::WrongLength,
            ),
            (
                b"VALUE key:000042 0 11\r\nhello World\r\nEND\r\n",
                Failure::WrongData,
            ),
        ];
        for (reply, f) in cases {
            assert_eq!(
                parse_all_splits(reply, &get()),
                Ok(Parsed::Complete {
                    consumed: reply.len(),
                    outcome: Outcome::Failed(f)
                }),
                "{:?}",
                String::from_utf8_lossy(reply)
            );
        }
    }

    #[test]
    fn malformed_replies_are_protocol_errors() {
        let bad_get: &[&[u8]] = &[
            // Announced length longer than the data: the frame runs into END.
            b"VALUE key:000042 0 12\r\nhello world\r\nEND\r\n",
            // Announced length shorter than the data.
            b"VALUE key:000042 0 10\r\nhello world\r\nEND\r\n",
            // Missing CRLF after the data, or after the header, or after END.
            b"VALUE key:000042 0 11\r\nhello worldEND\r\n",
            b"VALUE key:000042 0 11\nhello world\r\nEND\r\n",
            b"VALUE key:000042 0 11\r\nhello world\r\nEND\n",
            b"VALUE key:000042 0 11\r\nhello world\r\nEXD\r\n",
            b"END\n",
            b"\n",
            // Garbage, and replies of the wrong kind.
            b"HTTP/1.1 400 Bad Request\r\n",
            b"STORED\r\n",
            b"VALUE\r\n",
            b"VALUE  0 11\r\nhello world\r\nEND\r\n",
            b"VALUE key:000042 0\r\n",
            b"VALUE key:000042 0 11 7\r\nhello world\r\nEND\r\n",
            b"VALUE key:000042 x 11\r\nhello world\r\nEND\r\n",
            b"VALUE key:000042 0 -1\r\n",
            b"VALUE key:000042 0 1x\r\n",
            b"VALUE key:000042 0 99999999999999999999999\r\n",
            b"VALUE key:000042 0 999999999\r\n",
            b"VALUE key:000042 4294967296 11\r\nhello world\r\nEND\r\n",
            b"ERRORS\r\n",
            b"SERVER_ERRORx\r\n",
        ];
        for reply in bad_get {
            let r = parse_all_splits(reply, &get());
            assert!(
                r.is_err(),
                "{:?} gave {r:?}",
                String::from_utf8_lossy(reply)
            );
        }
        for reply in [
            &b"END\r\n"[..],
            b"VALUE k 0 1\r\nx\r\nEND\r\n",
            b"STORED\n",
            b"\x00\x01\r\n",
        ] {
            let r = parse_all_splits(reply, &set());
            assert!(
                r.is_err(),
                "{:?} gave {r:?}",
                String::from_utf8_lossy(reply)
            );
        }
        // A line that never ends is an error once MAX_LINE bytes are in.
        let long = vec![b'x'; MAX_LINE];
        assert_eq!(
            parse_reply(&long[..MAX_LINE - 1], &get()),
            Ok(Parsed::Incomplete)
        );
        assert!(parse_reply(&long, &get()).is_err());
    }

    #[test]
    fn truncated_replies_are_incomplete() {
        assert_eq!(parse_reply(b"", &get()), Ok(Parsed::Incomplete));
        let hit = hit_bytes();
        for cut in 0..hit.len() {
            assert_eq!(
                parse_reply(&hit[..cut], &get()),
                Ok(Parsed::Incomplete),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn pipelined_replies_split_at_every_byte() {
        // Three pipelined requests (get hit, set, get miss) then an error
        // reply, arriving in two reads cut at every possible byte.
        let mut stream = hit_bytes();
        stream.extend_from_slice(b"STORED\r\nEND\r\nSERVER_ERROR out of memory\r\n");
        stream.extend_from_slice(b"VALUE key:000042 0 11\r\nhello wxrld\r\nEND\r\n");
        let expects = [get(), set(), get(), set(), get()];
        let outcomes = feed_split(&stream, &expects);
        assert_eq!(
            outcomes,
            vec![
                Outcome::Hit,
                Outcome::Stored,
                Outcome::Miss,
                Outcome::Failed(Failure::ServerError),
                Outcome::Failed(Failure::WrongData),
            ]
        );
    }

    #[test]
    fn replies_are_matched_to_requests_in_order() {
        // The same bytes answer differently depending on which request is
        // oldest: a hit for key A is a wrong-key failure for key B.
        let a = Expect {
            op: Op::Get,
            key: b"a",
            value: Some(b"1"),
        };
        let b = Expect {
            op: Op::Get,
            key: b"b",
            value: Some(b"2"),
        };
        let stream = b"VALUE a 0 1\r\n1\r\nEND\r\nVALUE b 0 1\r\n2\r\nEND\r\n";
        assert_eq!(
            feed_split(stream, &[a, b]),
            vec![Outcome::Hit, Outcome::Hit]
        );
        assert_eq!(
            feed_split(stream, &[b, a]),
            vec![
                Outcome::Failed(Failure::WrongKey),
                Outcome::Failed(Failure::WrongKey)
            ]
        );
    }
}
