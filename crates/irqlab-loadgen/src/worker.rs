//! One worker thread: an edge-triggered epoll loop over its own
//! connections (no locks; the only shared state is the `--requests`
//! counter and the stop flag).
//!
//! Each turn of the loop: (1) issue requests on the connections that
//! changed (closed loop: refill to `depth`; open loop: send what is due,
//! at most `depth` outstanding) and on those whose send time came (a
//! min-heap of send times, woken by a timerfd), writing each connection's
//! output once; (2) wait; (3) read what arrived, parse and check every
//! reply against the oldest outstanding request, and count it.
//!
//! Every loop is bounded: the outer one by the phase deadline (checked at
//! least every 100 ms), a connection's read loop by its outstanding
//! replies, the parse loop by its buffer, issuing by `depth`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::config::{Config, Mode};
use crate::conn::{Conn, Pending, ReadResult, UNSENT};
use crate::keyspace::{KeyBuf, KeySpace};
use crate::protocol::{parse_reply, Expect, Op, Outcome, Parsed};
use crate::stats::Stats;
use crate::sys::{now_ns, set_timer_slack_ns, Epoll, Event, TimerFd};

const TIMER_TOKEN: u64 = u64::MAX;
/// Longest epoll wait, so that the stop flag and deadlines are seen.
const MAX_WAIT_MS: u64 = 100;
/// Most scheduled-but-unsent requests counted one by one as timeouts per
/// connection at the end (a bound on the final loop; the count is a lower
/// bound past it, which needs a server stalled for millions of requests).
const MAX_UNSENT_COUNT: u64 = 10_000_000;

/// The times of one phase, absolute monotonic ns.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    /// The phase starts (warm-up begins; open-loop schedules count from here).
    pub start: u64,
    /// Requests sent (or scheduled) in `[measure_start, measure_end)` are
    /// measured; none are issued from `measure_end` on.
    pub measure_start: u64,
    pub measure_end: u64,
    /// Hard end: the drain timeout after `measure_end`.
    pub deadline: u64,
}

/// State shared by the workers of one phase.
#[derive(Default)]
pub struct Shared {
    /// Set once the `--requests` bound is reached.
    pub stop: AtomicBool,
    /// Measured replies claimed so far (only with `--requests`).
    pub measured: AtomicU64,
    /// When the bound was reached (monotonic ns).
    pub stop_at: AtomicU64,
}

/// What a worker does in the phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Set every key of the key space once (connection `id` sets keys
    /// `id, id + C, id + 2C, …`).
    Preload,
    /// The timed phase, closed or open loop as the config says.
    Load,
}

pub struct Outcomes {
    pub conns: Vec<Conn>,
    pub stats: Stats,
    /// The phase's work finished before its deadline (all keys set, or
    /// every measured request answered, or every connection failed).
    pub finished: bool,
}

pub struct Worker<'a> {
    cfg: &'a Config,
    ks: &'a KeySpace,
    shared: &'a Shared,
    phase: Phase,
    task: Task,
    depth: usize,
    limit: Option<u64>,
    conns: Vec<Conn>,
    epoll: Epoll,
    timer: Option<TimerFd>,
    /// Open loop: (send time, connection) of connections waiting for time.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    touched: Vec<u32>,
    events: Vec<Event>,
    /// This turn's measured samples (latency ns, a get's miss or `None`
    /// for a store, answered after `--timeout-ms`), committed at the end of
    /// the turn against the `--requests` bound.
    batch: Vec<(u64, Option<bool>, bool)>,
    stats: Stats,
    kb: KeyBuf,
    /// Requests outstanding over all connections.
    outstanding: usize,
    /// Preload: keys still to be sent by this worker's connections.
    keys_left: u64,
    /// Open loop: poll instead of sleeping this close to a send time.
    spin_ns: u64,
    /// Open loop: when awake, also send what is due this soon (early, its
    /// latency then counted from its write), saving a wake-up for each.
    batch_ns: u64,
    /// Open loop: a send this much later than it could leave is late.
    late_ns: u64,
    /// A request unanswered this long after its write stalls its connection.
    timeout_ns: u64,
    /// Open loop: how late this turn of the loop woke after the deadline
    /// its wait was given (0 when events woke it first): time the thread was
    /// off its CPU (descheduled, throttled, a slow timer) past the work it
    /// had due. Replies read in such a turn freed their slots at the read,
    /// later than they arrived, so the slot wait cannot excuse it.
    wake_lag_ns: u64,
    /// When this turn's wait returned: the replies it reported had come by
    /// then, however long the thread then took to read them (preempted
    /// between the wait and the read, a starved generator's read time
    /// would make a prompt server look stalled).
    turn_ns: u64,
}

impl<'a> Worker<'a> {
    pub fn new(
        cfg: &'a Config,
        ks: &'a KeySpace,
        shared: &'a Shared,
        phase: Phase,
        task: Task,
        mut conns: Vec<Conn>,
    ) -> io::Result<Self> {
        let epoll = Epoll::new(conns.len() + 1)?;
        for (i, c) in conns.iter().enumerate() {
            epoll.add(c.fd(), i as u64, true)?;
        }
        let open = task == Task::Load && matches!(cfg.mode, Mode::Open { .. });
        let timer = if open && !epoll.has_ns_timeout() {
            let t = TimerFd::new()?;
            epoll.add(t.raw(), TIMER_TOKEN, false)?;
            Some(t)
        } else {
            None
        };
        let (depth, limit) = match task {
            Task::Preload => (cfg.preload_depth() as usize, None),
            Task::Load => (cfg.depth as usize, cfg.requests),
        };
        let stride = u64::from(cfg.connections);
        let mut keys_left = 0;
        for c in conns.iter_mut() {
            c.preload_next = u64::from(c.id);
            keys_left += keys_from(c.preload_next, ks.records(), stride);
        }
        let n = conns.len();
        Ok(Worker {
            cfg,
            ks,
            shared,
            phase,
            task,
            depth,
            limit,
            conns,
            epoll,
            timer,
            heap: BinaryHeap::with_capacity(n),
            touched: (0..n as u32).collect(),
            events: Vec::with_capacity(n + 1),
            batch: Vec::new(),
            stats: Stats::default(),
            kb: KeyBuf::new(),
            outstanding: 0,
            keys_left: if task == Task::Preload { keys_left } else { 0 },
            spin_ns: u64::from(cfg.spin_us) * 1000,
            batch_ns: u64::from(cfg.batch_us) * 1000,
            late_ns: u64::from(cfg.late_us) * 1000,
            timeout_ns: u64::from(cfg.timeout_ms) * 1_000_000,
            wake_lag_ns: 0,
            turn_ns: 0,
        })
    }

    pub fn run(mut self) -> io::Result<Outcomes> {
        if self.is_open() {
            // Sleep to a send time, not 50 us past it (see the function).
            set_timer_slack_ns(1);
        }
        let mut finished = false;
        loop {
            let now = now_ns();
            if self.shared.stop.load(Ordering::Relaxed) || now >= self.phase.deadline {
                break;
            }
            let mut touched = std::mem::take(&mut self.touched);
            for &i in &touched {
                self.service(i as usize, now);
            }
            touched.clear();
            self.touched = touched;
            while let Some(&Reverse((t, i))) = self.heap.peek() {
                if t > now.saturating_add(self.batch_ns) {
                    break;
                }
                self.heap.pop();
                self.conns[i as usize].in_heap = false;
                self.service(i as usize, now);
            }
            if self.is_done(now) {
                finished = true;
                break;
            }
            if self.conns.iter().all(|c| !c.alive) {
                // Nothing left that could still be done.
                finished = true;
                break;
            }
            let until = if now < self.phase.measure_end {
                self.phase.measure_end
            } else {
                self.phase.deadline
            };
            // Sleep until `spin_ns` before the next send time, then poll.
            let wake = self
                .heap
                .peek()
                .map(|&Reverse((t, _))| t.saturating_sub(self.spin_ns));
            let mut events = std::mem::take(&mut self.events);
            let cap = now.saturating_add(MAX_WAIT_MS * 1_000_000).min(until);
            let deadline = wake.map_or(cap, |w| w.min(cap));
            if self.epoll.has_ns_timeout() {
                self.epoll.wait_until(&mut events, deadline)?;
            } else {
                let mut spin = false;
                if let (Some(timer), Some(wake)) = (self.timer.as_mut(), wake) {
                    if wake <= now_ns() {
                        spin = true;
                    } else {
                        timer.arm_at(wake)?;
                    }
                }
                let timeout_ms = if spin {
                    0
                } else {
                    (until.saturating_sub(now))
                        .div_ceil(1_000_000)
                        .clamp(1, MAX_WAIT_MS) as i32
                };
                self.epoll.wait(&mut events, timeout_ms)?;
            }
            self.turn_ns = now_ns();
            self.wake_lag_ns = self.turn_ns.saturating_sub(deadline);
            for ev in &events {
                if ev.token == TIMER_TOKEN {
                    if let Some(t) = self.timer.as_mut() {
                        t.fired();
                    }
                    continue;
                }
                let i = ev.token as usize;
                if !self.conns[i].alive {
                    continue;
                }
                if ev.readable || ev.closed {
                    self.on_readable(i);
                }
                if ev.writable || ev.readable {
                    self.touched.push(i as u32);
                }
            }
            self.events = events;
            self.commit();
        }
        self.commit();
        if self.task == Task::Load && !self.shared.stop.load(Ordering::Relaxed) {
            self.count_timeouts();
        }
        Ok(Outcomes {
            conns: self.conns,
            stats: self.stats,
            finished,
        })
    }

    fn is_open(&self) -> bool {
        self.task == Task::Load && matches!(self.cfg.mode, Mode::Open { .. })
    }

    fn is_done(&self, now: u64) -> bool {
        match self.task {
            Task::Preload => self.keys_left == 0 && self.outstanding == 0,
            Task::Load => {
                now >= self.phase.measure_end && self.outstanding == 0 && self.heap.is_empty()
            }
        }
    }

    /// Issue what connection `i` may send now, then write its output.
    fn service(&mut self, i: usize, now: u64) {
        let open = self.is_open();
        let (ks, phase, depth, batch_ns) = (self.ks, self.phase, self.depth, self.batch_ns);
        let c = &mut self.conns[i];
        if !c.alive {
            return;
        }
        let before = c.outstanding();
        match self.task {
            Task::Preload => {
                let stride = u64::from(self.cfg.connections);
                while c.outstanding() < depth && c.preload_next < ks.records() {
                    c.push(ks, &mut self.kb, Op::Set, c.preload_next, UNSENT);
                    c.preload_next += stride;
                    self.keys_left -= 1;
                }
            }
            Task::Load if !open => {
                if now < phase.measure_end {
                    while c.outstanding() < depth {
                        let (op, key) = c.requests.next_request();
                        c.push(ks, &mut self.kb, op, key, UNSENT);
                    }
                }
            }
            Task::Load => {
                let mut sched = c.schedule.take().expect("open loop has a schedule");
                // Everything due is sent now, up to `depth` outstanding;
                // a late request keeps its scheduled time. With
                // `--batch-us`, what is due within it goes too, early: its
                // latency counts from its write, not from its schedule.
                let mut sent_at = None;
                let (late_ns, wake_lag_ns) = (self.late_ns, self.wake_lag_ns);
                while c.outstanding() < depth {
                    let t = phase.start.saturating_add(sched.peek());
                    if t > now.saturating_add(batch_ns) || t >= phase.measure_end {
                        break;
                    }
                    sched.advance();
                    let (op, key) = c.requests.next_request();
                    c.push(ks, &mut self.kb, op, key, if t <= now { t } else { UNSENT });
                    if t < phase.measure_start {
                        continue;
                    }
                    if t > now {
                        self.stats.sends += 1; // early, with `--batch-us`
                        continue;
                    }
                    // Its lateness splits into the wait for a free slot
                    // (the connection had all `depth` taken when it came
                    // due, until a reply gave one back: the server's pace)
                    // and the generator's own delay after that. Requests
                    // leave a connection in order, so the slot this one
                    // takes was free from the last full-to-free moment on.
                    // A turn that woke late read its replies late too: its
                    // own delay is at least its wake lag (but no more than
                    // the send's whole lag).
                    let at = *sent_at.get_or_insert_with(now_ns);
                    let could = t.max(c.slot_free_at);
                    let lag = at.saturating_sub(t);
                    let own = at.saturating_sub(could).max(wake_lag_ns.min(lag));
                    self.stats.record_send(lag, own, late_ns);
                    c.last_send_late = own > late_ns;
                }
                let next = phase.start.saturating_add(sched.peek());
                c.schedule = Some(sched);
                // At `depth`, the connection waits for a reply instead.
                if !c.in_heap && c.outstanding() < depth && next < phase.measure_end {
                    c.in_heap = true;
                    self.heap.push(Reverse((next, i as u32)));
                }
            }
        }
        self.outstanding += c.outstanding() - before;
        if c.has_output() {
            if let Err(e) = c.flush(now_ns) {
                self.fail(
                    i,
                    format!("connection {}: write failed: {e}", self.conns[i].id),
                );
            }
        }
    }

    /// Read everything connection `i` has (edge-triggered: until a short
    /// read), parsing after each read.
    fn on_readable(&mut self, i: usize) {
        loop {
            match self.conns[i].read_some() {
                Ok(ReadResult::Data { more }) => {
                    let t = now_ns();
                    self.parse(i, t);
                    if !self.conns[i].alive || !more {
                        return;
                    }
                }
                Ok(ReadResult::WouldBlock) => return,
                Ok(ReadResult::Eof) => {
                    let id = self.conns[i].id;
                    self.fail(
                        i,
                        format!("connection {id}: the server closed the connection"),
                    );
                    return;
                }
                Err(e) => {
                    let id = self.conns[i].id;
                    self.fail(i, format!("connection {id}: read failed: {e}"));
                    return;
                }
            }
        }
    }

    /// Match the replies in connection `i`'s buffer to its outstanding
    /// requests, oldest first; `t_recv` is when they were read.
    fn parse(&mut self, i: usize, t_recv: u64) {
        let ks = self.ks;
        loop {
            let c = &mut self.conns[i];
            let Some(&p) = c.pending.front() else {
                if !c.input().is_empty() {
                    let id = c.id;
                    self.fail(
                        i,
                        format!("connection {id}: bytes received with no request outstanding"),
                    );
                }
                return;
            };
            if p.t == UNSENT {
                let id = c.id;
                self.fail(
                    i,
                    format!("connection {id}: bytes received before the request was sent"),
                );
                return;
            }
            let key = ks.key(p.key, &mut self.kb);
            let expect = Expect {
                op: p.op,
                key,
                value: (p.op == Op::Get).then(|| ks.value(p.key)),
            };
            match parse_reply(c.input(), &expect) {
                Ok(Parsed::Incomplete) => return,
                Ok(Parsed::Complete { consumed, outcome }) => {
                    c.consume(consumed);
                    // When the reply had come by: a reply the wait reported
                    // had come by the wait's return, however long the
                    // thread then took to read it; one that came during the
                    // turn is dated at most the turn's length early.
                    let came_by = t_recv.min(self.turn_ns.max(p.sent));
                    if c.pending.len() == self.depth {
                        // The slot was the server's until its reply came,
                        // not until the generator got to read it.
                        c.slot_free_at = came_by;
                    }
                    c.pending.pop_front();
                    self.outstanding -= 1;
                    let id = c.id;
                    // Read in a turn that woke late, a reply's read time
                    // says when the generator got to it, not when it came;
                    // in a turn that woke in time the server is charged up
                    // to when the reply had come by.
                    // The same reading decides whether the reply came after
                    // `--timeout-ms`: a timeout although answered (it was
                    // counted only when never answered, so a server 3 s
                    // late under `--timeout-ms 1000` showed no timeout
                    // beside a 100 % stall; issue 62, item 6).
                    let timed_out = self.wake_lag_ns <= self.late_ns
                        && came_by.saturating_sub(p.sent) > self.timeout_ns;
                    if self.wake_lag_ns <= self.late_ns {
                        self.stall(i, p.sent, came_by);
                    }
                    self.account(id, p, outcome, t_recv, timed_out);
                }
                Err(e) => {
                    let id = c.id;
                    let what = describe(ks, &mut self.kb, &p);
                    self.fail(i, format!("connection {id}: {e} (reply to {what})"));
                    return;
                }
            }
        }
    }

    fn account(&mut self, id: u32, p: Pending, outcome: Outcome, t_recv: u64, timed_out: bool) {
        self.stats.replies += 1;
        let failure = match outcome {
            Outcome::Failed(f) => Some(f.describe()),
            Outcome::Hit | Outcome::Miss if self.task == Task::Preload => {
                Some("get reply during preload")
            }
            Outcome::Hit | Outcome::Miss | Outcome::Stored => None,
        };
        if let Some(why) = failure {
            let (ks, kb) = (self.ks, &mut self.kb);
            self.stats
                .error(|| format!("connection {id}: {why} (reply to {})", describe(ks, kb, &p)));
            return;
        }
        if self.task != Task::Load {
            return;
        }
        if t_recv >= self.phase.measure_start && t_recv < self.phase.measure_end {
            self.stats.window_replies += 1;
        }
        // The span the unanswered timeouts count over (see count_timeouts).
        let timed_out = timed_out && p.t < self.phase.measure_end;
        self.stats.timeouts_answered += u64::from(timed_out);
        if p.t >= self.phase.measure_start && p.t < self.phase.measure_end {
            let get = (p.op == Op::Get).then_some(outcome == Outcome::Miss);
            self.batch.push((t_recv.saturating_sub(p.t), get, timed_out));
        }
    }

    /// Connection `i`'s oldest request, written at `sent`, was answered (or
    /// given up) at `until`: if that took longer than `--timeout-ms`, the
    /// connection was stalled from the write on, and the part of that
    /// inside the measured window counts once however many pipelined
    /// requests shared the stall. A closed-loop connection issues nothing
    /// while stalled, so the stalled share of the window's connection-time
    /// is the share of requests the stall cost.
    fn stall(&mut self, i: usize, sent: u64, until: u64) {
        if self.task != Task::Load || until.saturating_sub(sent) <= self.timeout_ns {
            return;
        }
        let c = &mut self.conns[i];
        let from = sent.max(c.stall_to).max(self.phase.measure_start);
        let to = until.min(self.phase.measure_end);
        self.stats.stalled_ns += to.saturating_sub(from);
        c.stall_to = c.stall_to.max(until);
    }

    /// Record this turn's samples, claiming them against `--requests`.
    fn commit(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let take = match self.limit {
            None => self.batch.len(),
            Some(limit) => {
                let n = self.batch.len() as u64;
                let prev = self.shared.measured.fetch_add(n, Ordering::Relaxed);
                if prev + n >= limit && !self.shared.stop.swap(true, Ordering::Relaxed) {
                    self.shared.stop_at.store(now_ns(), Ordering::Relaxed);
                }
                limit.saturating_sub(prev).min(n) as usize
            }
        };
        for &(lat, get, timed_out) in &self.batch[..take] {
            self.stats.record(lat, get);
            self.stats.timeouts_answered_sampled += u64::from(timed_out);
        }
        self.batch.clear();
    }

    /// Drop connection `i`: every request it had outstanding is an error.
    fn fail(&mut self, i: usize, why: String) {
        let c = &mut self.conns[i];
        if !c.alive {
            return;
        }
        self.epoll.remove(c.fd());
        c.close();
        let lost = c.pending.len();
        c.pending.clear();
        self.outstanding -= lost;
        if self.task == Task::Preload {
            self.keys_left -= keys_from(
                c.preload_next,
                self.ks.records(),
                u64::from(self.cfg.connections),
            );
            c.preload_next = u64::MAX;
        }
        self.stats.connections_failed += 1;
        self.stats.error(|| why);
        self.stats.errors += lost.saturating_sub(1) as u64;
    }

    /// At the drain deadline: requests sent (closed loop) or scheduled
    /// (open loop) before the end of the measured window and still
    /// unanswered are timeouts; those scheduled and never written are
    /// `unsent`, and count as late too if their connection had had a free
    /// slot for longer than `--late-us` (the generator's backlog, not the
    /// server's). Those from before the
    /// measured window count too: a closed-loop request sent at the start
    /// (the first ones leave before `measure_start`, even without warm-up,
    /// as the phase starts 1 ms ahead) and never answered holds its slot
    /// through the whole window, so a server that never replies shows as
    /// timeouts, not as a clean run of 0 requests.
    fn count_timeouts(&mut self) {
        let (start, me) = (self.phase.start, self.phase.measure_end);
        // Replies already in the socket buffers were answered: read them
        // before anything counts as unanswered (a generator off its CPU
        // at the end would otherwise call them the server's timeouts).
        for i in 0..self.conns.len() {
            if self.conns[i].alive && !self.conns[i].pending.is_empty() {
                self.on_readable(i);
            }
        }
        self.commit();
        let end = now_ns();
        // The loop's last turn woke late, or the thread was off its CPU
        // after it (the drain ran long after the last wait returned): the
        // replies just read may have waited for the generator.
        let late_at_end = self.wake_lag_ns > self.late_ns || end.saturating_sub(self.turn_ns) > self.late_ns;
        for i in 0..self.conns.len() {
            if !self.conns[i].alive {
                continue;
            }
            if let Some(sent) = self.conns[i].pending.front().map(|p| p.sent) {
                if sent != UNSENT {
                    self.stall(i, sent, end);
                }
            }
            let (depth, late_ns) = (self.depth, self.late_ns);
            let c = &mut self.conns[i];
            // A timeout waited the whole --timeout-ms: a request the
            // generator wrote late, into the drain, and whose reply has not
            // come yet is its lateness (counted when it was sent), not the
            // server's failure.
            let timeout_ns = self.timeout_ns;
            self.stats.timeouts += c
                .pending
                .iter()
                .filter(|p| p.t < me && end.saturating_sub(p.sent) >= timeout_ns)
                .count() as u64;
            // The generator's backlog: a slot was free and had been for
            // longer than a late send may take, or the loop's last turn woke
            // late (the slot's reply waited for the generator to read it). A
            // slot a reply freed just before the end, read on time, is the
            // server's pace (its connection was full until then).
            let free = (c.pending.len() < depth
                && (late_at_end || end.saturating_sub(c.slot_free_at) > late_ns))
                || c.last_send_late;
            if let Some(s) = c.schedule.as_mut() {
                for _ in 0..MAX_UNSENT_COUNT {
                    let t = start.saturating_add(s.peek());
                    if t >= me {
                        break;
                    }
                    s.advance();
                    self.stats.unsent += 1;
                    self.stats.unsent_backlog += u64::from(free);
                    self.stats.late += u64::from(free);
                }
            }
        }
    }
}

/// How many of `next, next + stride, …` are below `records`.
fn keys_from(next: u64, records: u64, stride: u64) -> u64 {
    if next >= records {
        0
    } else {
        (records - next).div_ceil(stride)
    }
}

fn describe(ks: &KeySpace, kb: &mut KeyBuf, p: &Pending) -> String {
    let op = match p.op {
        Op::Get => "get",
        Op::Set => "set",
    };
    format!("{op} {}", String::from_utf8_lossy(ks.key(p.key, kb)))
}

#[cfg(test)]
mod tests {
    use super::keys_from;

    #[test]
    fn preload_key_counts() {
        assert_eq!(keys_from(0, 10, 3), 4); // 0 3 6 9
        assert_eq!(keys_from(2, 10, 3), 3); // 2 5 8
        assert_eq!(keys_from(10, 10, 3), 0);
        assert_eq!(keys_from(u64::MAX, 10, 3), 0);
        let total: u64 = (0..7).map(|id| keys_from(id, 100, 7)).sum();
        assert_eq!(total, 100);
    }
}
