//! The simulation kernel. It is deliberately small (in the spirit of SimPy's
//! `core.py`): absolute integer-nanosecond time, one event queue ordered by
//! `(time, sequence)`, and per-stream seeded random number generators. The
//! modelled world lives in [`crate::model`] and drives the kernel through the
//! [`Scheduler`] it is handed.

pub mod queue;
pub mod rng;
pub mod time;
pub mod timer;

pub use queue::EventQueue;
pub use rng::{RngStreams, StreamRng};
pub use time::Nanos;

/// What a model sees of the kernel while it handles an event: the clock and a
/// way to schedule its own future events.
pub struct Scheduler<E> {
    now: Nanos,
    queue: EventQueue<E>,
    processed: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Scheduler<E> {
    pub fn new() -> Self {
        Scheduler { now: 0, queue: EventQueue::new(), processed: 0 }
    }

    /// Current simulated time.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedule `event` at absolute time `at_ns` (never in the past).
    #[inline]
    pub fn at(&mut self, at_ns: Nanos, event: E) {
        debug_assert!(at_ns >= self.now, "event scheduled in the past");
        self.queue.push(at_ns.max(self.now), event);
    }

    /// Schedule `event` `delay_ns` after now.
    #[inline]
    pub fn after(&mut self, delay_ns: Nanos, event: E) {
        self.queue.push(self.now + delay_ns, event);
    }

    /// Number of events handled so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Events still waiting in the queue.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }
}

/// A modelled world: it reacts to one event at a time.
pub trait World {
    type Event;
    fn handle(&mut self, sched: &mut Scheduler<Self::Event>, event: Self::Event);
}

/// Pop events in `(time, sequence)` order and hand them to `world` until the
/// queue is empty or the next event lies beyond `end_ns`. Time then stands at
/// `end_ns` (or at the last event, if the queue ran dry first).
pub fn run_until<W: World>(world: &mut W, sched: &mut Scheduler<W::Event>, end_ns: Nanos) {
    while let Some(t) = sched.queue.peek_time() {
        if t > end_ns {
            break;
        }
        let (t, ev) = sched.queue.pop().expect("peeked");
        sched.now = t;
        sched.processed += 1;
        world.handle(sched, ev);
    }
    sched.now = sched.now.max(end_ns);
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
        run_until(&mut w, &mut s, 50);
        assert_eq!(w.0, vec![(3, 0), (5, 2), (5, 1), (5, 10), (5, 11)]);
        assert_eq!(s.now(), 50);
        assert_eq!(s.pending(), 1);
        assert_eq!(s.processed(), 5);
    }
}
