//! One connection to the server: its socket, its read and write buffers,
//! and the requests it has outstanding, oldest first (memcached answers in
//! order, so the oldest is the one the next reply belongs to).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use crate::keyspace::{KeyBuf, KeySpace};
use crate::protocol::{encode_get, encode_set, Op};
use crate::requests::RequestStream;
use crate::schedule::Schedule;

/// Bytes asked of each `read`; the buffer grows past this only to hold a
/// reply larger than it.
const READ_CHUNK: usize = 64 * 1024;

/// Time of a request queued but not yet handed to the kernel: stamped at
/// the write ([`Conn::flush`]).
pub const UNSENT: u64 = u64::MAX;

/// How long one TCP connect may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// When the request was sent (closed loop) or scheduled (open loop),
    /// monotonic ns; latency is counted from here.
    pub t: u64,
    /// When it was handed to the kernel (the write), monotonic ns: a
    /// timeout and a stall count from here, so that the generator's own
    /// lateness is never charged to the server.
    pub sent: u64,
    pub key: u64,
    pub op: Op,
}

pub struct Conn {
    pub id: u32,
    stream: TcpStream,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    pub pending: VecDeque<Pending>,
    /// How many requests at the back of `pending` have no write time yet.
    unstamped: usize,
    pub alive: bool,
    pub requests: RequestStream,
    /// Open loop: this connection's send times.
    pub schedule: Option<Schedule>,
    /// Whether an entry for this connection is in the worker's timer heap.
    pub in_heap: bool,
    /// Preload: the next key index this connection sets.
    pub preload_next: u64,
    /// Open loop: when a reply last gave a slot back to a connection that
    /// had all `--depth` slots taken (monotonic ns, 0: never). A request
    /// due before this waited for the server, not for the generator.
    pub slot_free_at: u64,
    /// Open loop: its latest request left later than `--late-us` after it
    /// could (the generator's delay, not a wait for a slot): a slot it
    /// holds at the end is the generator's backlog.
    pub last_send_late: bool,
    /// Stalled time is counted up to here already (monotonic ns), so that
    /// the pipelined requests of one stall count it once.
    pub stall_to: u64,
}

/// What a read produced.
pub enum ReadResult {
    /// New bytes are in the buffer; `more` if the socket may hold more (the
    /// read filled the space offered).
    Data { more: bool },
    /// Nothing to read now.
    WouldBlock,
    /// The server closed the connection.
    Eof,
}

impl Conn {
    /// Connect within `timeout` (at most [`CONNECT_TIMEOUT`]).
    pub fn connect(
        id: u32,
        addr: SocketAddr,
        requests: RequestStream,
        timeout: Duration,
    ) -> io::Result<Conn> {
        if timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connecting took too long",
            ));
        }
        let stream = TcpStream::connect_timeout(&addr, timeout.min(CONNECT_TIMEOUT))?;
        // Requests are batched into one write per wake-up already; Nagle
        // would only delay them (mutilate sets TCP_NODELAY too).
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(Conn {
            id,
            stream,
            rbuf: vec![0; READ_CHUNK],
            rstart: 0,
            rend: 0,
            wbuf: Vec::with_capacity(4096),
            wpos: 0,
            pending: VecDeque::new(),
            unstamped: 0,
            alive: true,
            requests,
            schedule: None,
            in_heap: false,
            preload_next: 0,
            slot_free_at: 0,
            last_send_late: false,
            stall_to: 0,
        })
    }

    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Queue a request for key `key`, sent (or scheduled) at `t` ([`UNSENT`]
    /// to stamp it at the next flush).
    pub fn push(&mut self, ks: &KeySpace, kb: &mut KeyBuf, op: Op, key: u64, t: u64) {
        let k = ks.key(key, kb);
        match op {
            Op::Get => encode_get(&mut self.wbuf, k),
            Op::Set => encode_set(&mut self.wbuf, k, ks.value(key)),
        }
        self.pending.push_back(Pending {
            t,
            sent: UNSENT,
            key,
            op,
        });
        self.unstamped += 1;
    }

    pub fn has_output(&self) -> bool {
        self.wpos < self.wbuf.len()
    }

    /// Stamp the new requests with their write time (and those without a
    /// time to count latency from with it too) and write as much of the
    /// output as the socket takes.
    pub fn flush(&mut self, now: impl FnOnce() -> u64) -> io::Result<()> {
        if self.unstamped > 0 {
            let t = now();
            let n = self.pending.len();
            for p in self.pending.range_mut(n - self.unstamped..) {
                p.sent = t;
                if p.t == UNSENT {
                    p.t = t;
                }
            }
            self.unstamped = 0;
        }
        while self.wpos < self.wbuf.len() {
            match (&self.stream).write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0")),
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        Ok(())
    }

    /// One `read` into the free end of the buffer, compacting or growing
    /// it first if little space is left.
    pub fn read_some(&mut self) -> io::Result<ReadResult> {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        }
        if self.rbuf.len() - self.rend < READ_CHUNK / 4 {
            if self.rstart > 0 {
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
            }
            if self.rbuf.len() - self.rend < READ_CHUNK / 4 {
                // A reply larger than the buffer: grow (bounded by the
                // parser, which rejects announced lengths above
                // MAX_REPLY_VALUE and lines above MAX_LINE).
                let grown = (self.rbuf.len() * 2).max(self.rend + READ_CHUNK);
                self.rbuf.resize(grown, 0);
            }
        }
        let space = self.rbuf.len() - self.rend;
        loop {
            match (&self.stream).read(&mut self.rbuf[self.rend..]) {
                Ok(0) => return Ok(ReadResult::Eof),
                Ok(n) => {
                    self.rend += n;
                    return Ok(ReadResult::Data { more: n == space });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(ReadResult::WouldBlock)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The unparsed input.
    pub fn input(&self) -> &[u8] {
        &self.rbuf[self.rstart..self.rend]
    }

    pub fn consume(&mut self, n: usize) {
        self.rstart += n;
    }

    /// Stop using this connection (its socket closes when it is dropped).
    pub fn close(&mut self) {
        self.alive = false;
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}
