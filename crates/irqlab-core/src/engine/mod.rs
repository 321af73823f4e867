//! The simulation kernel. It is deliberately small (in the spirit of SimPy's
//! `core.py`): absolute integer-nanosecond time, one event queue ordered by
//! `(time, sequence)`, and per-stream seeded random number generators. The
//! modelled world lives in [`crate::model`] and drives the kernel through the
//! [`Scheduler`] it is handed.

pub mod chain;
pub mod prefetch;
pub mod queue;
pub mod rng;
pub mod time;
pub mod timer;
pub mod tournament;

pub use chain::Chained;
pub use queue::{EventQueue, Lane, LANES};
pub use rng::{RngStreams, StreamRng};
pub use time::Nanos;

/// What a model sees of the kernel while it handles an event: the clock and a
/// way to schedule its own future events.
pub struct Scheduler<E> {
    now: Nanos,
    queue: EventQueue<E>,
    processed: u64,
    /// The end of the run in progress ([`run_until`]'s `end_ns`; 0 before
    /// it starts): a superseded event due by then counts as handled.
    horizon_ns: Nanos,
    /// Times of superseded events due after [`Scheduler::horizon_ns`] when
    /// they were superseded (before a run, or beyond its end).
    superseded_later: Vec<Nanos>,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Scheduler<E> {
    pub fn new() -> Self {
        Scheduler { now: 0, queue: EventQueue::new(), processed: 0, horizon_ns: 0, superseded_later: Vec::new() }
    }

    /// Current simulated time.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedule `event` at absolute time `at_ns` (never in the past).
    #[inline(always)]
    pub fn at(&mut self, at_ns: Nanos, event: E) {
        debug_assert!(at_ns >= self.now, "event scheduled in the past");
        self.queue.push(at_ns.max(self.now), event);
    }

    /// Schedule `event` at `at_ns` in FIFO lane `lane`: for events a model
    /// schedules at a fixed delay after now, hence in time order (see
    /// [`queue`]). The order in which events are handled is the same as
    /// with [`Scheduler::at`]; only the cost differs.
    #[inline(always)]
    pub fn at_fifo(&mut self, lane: Lane, at_ns: Nanos, event: E) {
        debug_assert!(at_ns >= self.now, "event scheduled in the past");
        self.queue.push_fifo(lane, at_ns.max(self.now), event);
    }

    /// Schedule `event` at `at_ns` in `owner`'s slot: for an owner with at
    /// most one live event at a time (see [`queue`]). An event already in
    /// the slot stays pending (in the heap); the order in which events are
    /// handled is the same as with [`Scheduler::at`].
    #[inline(always)]
    pub fn at_owned(&mut self, owner: usize, at_ns: Nanos, event: E) {
        debug_assert!(at_ns >= self.now, "event scheduled in the past");
        self.queue.push_owned(owner, at_ns.max(self.now), event);
    }

    /// Schedule `event` at `at_ns` in `owner`'s slot, where an event already
    /// there is void: its owner would ignore it when handled (a core's
    /// segment end superseded by its next segment's, `gen` no longer the
    /// core's). It is dropped rather than handled, and counted as handled
    /// if it falls due by the end of the run, as it would have been: the
    /// events handled, their order and every other event's key are the
    /// same as with [`Scheduler::at_owned`].
    #[inline(always)]
    pub fn at_owned_superseding(&mut self, owner: usize, at_ns: Nanos, event: E) {
        debug_assert!(at_ns >= self.now, "event scheduled in the past");
        if let Some(t) = self.queue.push_owned_superseding(owner, at_ns.max(self.now), event) {
            if t <= self.horizon_ns {
                self.processed += 1;
            } else {
                self.superseded_later.push(t);
            }
        }
    }

    /// Give the queue `n` owner slots for [`Scheduler::at_owned`].
    pub fn set_owners(&mut self, n: usize) {
        self.queue.set_owners(n);
    }

    /// No owner hints from now on ([`EventQueue::stop_hints`]).
    pub fn stop_owner_hints(&mut self) {
        self.queue.stop_hints();
    }

    /// Owner slots available to [`Scheduler::at_owned`].
    #[inline(always)]
    pub fn owners(&self) -> usize {
        self.queue.owners()
    }

    /// A key for an event at `at_ns` that the model keeps to itself rather
    /// than scheduling (see [`EventQueue::reserve`]): it orders among all
    /// events as one scheduled now would. The model counts it with
    /// [`Scheduler::count_handled`] when it applies it, or schedules it
    /// with [`Scheduler::at_key`].
    #[inline(always)]
    pub fn reserve(&mut self, at_ns: Nanos) -> u128 {
        self.queue.reserve(at_ns.max(self.now))
    }

    /// Schedule `event` with a key from [`Scheduler::reserve`].
    pub fn at_key(&mut self, key: u128, event: E) {
        self.queue.push_key(key, event);
    }

    /// The key of the event being handled.
    #[inline(always)]
    pub fn current_key(&self) -> u128 {
        self.queue.current_key()
    }

    /// `n` events the model kept to itself were applied: they count as
    /// handled.
    #[inline(always)]
    pub fn count_handled(&mut self, n: u64) {
        self.processed += n;
    }

    /// Schedule `event` `delay_ns` after now.
    #[inline(always)]
    pub fn after(&mut self, delay_ns: Nanos, event: E) {
        self.queue.push(self.now + delay_ns, event);
    }

    /// Number of events handled so far (those chains passed included).
    pub fn processed(&self) -> u64 {
        self.processed + self.queue.passed()
    }

    /// Of [`Scheduler::processed`], the events chains passed without the
    /// world (see [`chain`]).
    pub fn passed(&self) -> u64 {
        self.queue.passed()
    }

    /// Let the queue pass `owner`'s events from its pending one on (see
    /// [`chain`] and [`EventQueue::chain_owned`]).
    /// False, changing nothing, if chains with other durations run.
    #[inline]
    pub fn chain_owned(&mut self, owner: usize, durations_ns: [Nanos; 2], end_key: u128, watch: usize) -> bool {
        self.queue.chain_owned(owner, durations_ns, end_key, watch)
    }

    /// End `owner`'s chain and say what it did.
    #[inline]
    pub fn unchain_owned(&mut self, owner: usize) -> Chained {
        self.queue.unchain_owned(owner)
    }

    /// Whether any chain runs.
    #[inline(always)]
    pub fn chains_running(&self) -> bool {
        self.queue.chains_running()
    }

    /// The owner whose chain resource `watch` ends, if one runs.
    #[inline(always)]
    pub fn chain_watcher(&self, watch: usize) -> Option<usize> {
        self.queue.chain_watcher(watch)
    }

    /// Resource `watch` deferred an event with `key`: a chain it ends stops
    /// before that key.
    #[inline(always)]
    pub fn lower_chain_end(&mut self, watch: usize, key: u128) {
        self.queue.lower_chain_end(watch, key);
    }

    /// Events still waiting in the queue, and superseded events due after
    /// the run's end (those due by it already count as handled).
    pub fn pending(&self) -> usize {
        self.queue.len() + self.superseded_later.len()
    }
}

/// A modelled world: it reacts to one event at a time.
pub trait World {
    type Event;
    fn handle(&mut self, sched: &mut Scheduler<Self::Event>, event: Self::Event);
    /// `owner`'s event is likely the next one, or the one after
    /// ([`EventQueue::owner_hint`]): fetch into the cache what its handling
    /// will read, while the current one is handled. A hint: it must change
    /// nothing.
    #[inline(always)]
    fn prefetch_owner(&self, _owner: usize) {}
}

/// Events handled between two calls of a run's interruption check: often
/// enough that Ctrl-C stops a run within a fraction of a second, rarely
/// enough that the check costs nothing measurable.
pub const CHECK_EVERY_EVENTS: u32 = 1 << 21;

/// Consecutive checks ([`CHECK_EVERY_EVENTS`] events apart) that find the
/// clock where it was before a run is declared stalled: about ten million
/// events at one simulated instant. A legitimate instant sees at most a few
/// hundred thousand (every client connection starting, a zero-cost poll of
/// a full ring); ten million means the modelled world loops without letting
/// time advance.
pub const STALL_CHECKS: u32 = 5;

/// Why [`run_until`] stopped before `end_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The interruption check asked to stop (Ctrl-C).
    Interrupted { at_ns: Nanos },
    /// [`STALL_CHECKS`] × [`CHECK_EVERY_EVENTS`] events were handled without
    /// time advancing.
    Stalled { at_ns: Nanos },
}

/// Pop events in `(time, sequence)` order and hand them to `world` until the
/// queue is empty or the next event lies beyond `end_ns`. Time then stands at
/// `end_ns` (or at the last event, if the queue ran dry first).
///
/// Every [`CHECK_EVERY_EVENTS`] events `interrupted` is asked whether to stop,
/// and the clock is compared with the last check's: a run whose clock stood
/// still for [`STALL_CHECKS`] checks in a row stops as stalled. Either way
/// the world is left as it was after the last event. Between checks the
/// loop pays one decrement per event.
pub fn run_until<W: World>(
    world: &mut W,
    sched: &mut Scheduler<W::Event>,
    end_ns: Nanos,
    interrupted: &mut dyn FnMut() -> bool,
) -> Result<(), Stopped> {
    // Superseded events due by the end count as handled now (those due
    // later stay counted as pending: `superseded_later`).
    sched.horizon_ns = end_ns;
    let before = sched.superseded_later.len();
    sched.superseded_later.retain(|&t| t > end_ns);
    sched.processed += (before - sched.superseded_later.len()) as u64;
    let mut countdown = CHECK_EVERY_EVENTS;
    let mut still = 0;
    let mut last_check_ns = Nanos::MAX;
    // Asked once: the owner hint's code stays out of the loop below
    // `queue::HINT_MIN_OWNERS` owners.
    let hints = sched.queue.hints();
    while let Some((t, ev)) = sched.queue.pop_until(end_ns) {
        sched.now = t;
        sched.processed += 1;
        if hints {
            prefetch_next(world, &sched.queue);
        }
        world.handle(sched, ev);
        countdown -= 1;
        if countdown == 0 {
            countdown = CHECK_EVERY_EVENTS;
            if interrupted() {
                return Err(Stopped::Interrupted { at_ns: sched.now });
            }
            // Time never goes back, so an unchanged clock means every event
            // since the last check happened at this one instant.
            still = if sched.now == last_check_ns { still + 1 } else { 0 };
            if still >= STALL_CHECKS {
                return Err(Stopped::Stalled { at_ns: sched.now });
            }
            last_check_ns = sched.now;
        }
    }
    sched.now = sched.now.max(end_ns);
    Ok(())
}

/// The owner hint and its fetches, out of line: the loop's code stays laid
/// out as without them.
#[inline(never)]
fn prefetch_next<W: World>(world: &W, queue: &EventQueue<W::Event>) {
    if let Some(owner) = queue.owner_hint() {
        world.prefetch_owner(owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Recorder(Vec<(Nanos, u32)>);
    impl World for Recorder {
        type Event = u32;
        fn handle(&mut self, s: &mut Scheduler<u32>, e: u32) {
            self.0.push((s.now(), e));
            if e == 1 {
                // Same-time events leave in scheduling order.
                s.after(0, 10);
                s.after(0, 11);
            }
        }
    }

    #[test]
    fn same_time_events_leave_in_schedule_order() {
        let mut w = Recorder(vec![]);
        let mut s = Scheduler::new();
        s.at(5, 2);
        s.at(5, 1);
        s.at(3, 0);
        s.at(100, 99);
        run_until(&mut w, &mut s, 50, &mut || false).unwrap();
        assert_eq!(w.0, vec![(3, 0), (5, 2), (5, 1), (5, 10), (5, 11)]);
        assert_eq!(s.now(), 50);
        assert_eq!(s.pending(), 1);
        assert_eq!(s.processed(), 5);
    }

    /// Each event at `t` supersedes its owner's slot event with one at `t +
    /// 3`, and (at `t` < 20) first puts one at `t + 10` there: the one at
    /// `t + 10` is void and dropped.
    struct Superseder;
    impl World for Superseder {
        type Event = u32;
        fn handle(&mut self, s: &mut Scheduler<u32>, e: u32) {
            let now = s.now();
            if now < 20 {
                s.at_owned_superseding(0, now + 10, e + 100);
            }
            s.at_owned_superseding(0, now + 3, e + 1);
        }
    }

    #[test]
    fn superseded_events_count_as_handled_when_due_by_the_end() {
        // Before the run, a superseded event at 30 (beyond a first run's
        // end) waits; the events at 0, 3, ..., 24 run; each voids one at
        // t + 10 until t reaches 20.
        let mut s = Scheduler::new();
        s.set_owners(1);
        s.at_owned_superseding(0, 30, 7);
        s.at_owned_superseding(0, 0, 0);
        run_until(&mut Superseder, &mut s, 25, &mut || false).unwrap();
        // Handled: 0, 3, ..., 24 (9); void: t + 10 for t = 0, ..., 18
        // (7, all due by 25 but the one at 28), pending: 27 and 28, 30.
        assert_eq!(s.processed(), 9 + 6);
        assert_eq!(s.pending(), 3);
        // A second run to 40 handles 27, 30, ..., 39 and counts 28 and 30.
        run_until(&mut Superseder, &mut s, 40, &mut || false).unwrap();
        assert_eq!(s.processed(), 9 + 6 + 5 + 2);
    }

    /// Reschedules itself at the same instant forever.
    struct Spinner;
    impl World for Spinner {
        type Event = ();
        fn handle(&mut self, s: &mut Scheduler<()>, _: ()) {
            s.after(0, ());
        }
    }

    #[test]
    fn a_world_that_never_lets_time_advance_is_stopped_as_stalled() {
        let mut s = Scheduler::new();
        s.at(7, ());
        assert_eq!(run_until(&mut Spinner, &mut s, 100, &mut || false), Err(Stopped::Stalled { at_ns: 7 }));
        // The first check sees the instant; each of the next STALL_CHECKS finds it unchanged.
        assert_eq!(s.processed(), (STALL_CHECKS as u64 + 1) * CHECK_EVERY_EVENTS as u64);
    }

    /// One event per nanosecond, forever.
    struct Ticker;
    impl World for Ticker {
        type Event = ();
        fn handle(&mut self, s: &mut Scheduler<()>, _: ()) {
            s.after(1, ());
        }
    }

    #[test]
    fn the_interruption_check_runs_every_few_million_events_and_stops_the_run() {
        let mut s = Scheduler::new();
        s.at(0, ());
        let mut calls = 0;
        let r = run_until(&mut Ticker, &mut s, u64::MAX, &mut || {
            calls += 1;
            calls == 3
        });
        assert_eq!(r, Err(Stopped::Interrupted { at_ns: 3 * CHECK_EVERY_EVENTS as u64 - 1 }));
        assert_eq!(s.processed(), 3 * CHECK_EVERY_EVENTS as u64);
        // Time advancing by one nanosecond per event is progress, not a stall.
    }
}
