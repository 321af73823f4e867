//! A restartable one-shot timer (like an hrtimer) that keeps at most one
//! event in the queue. Restarting it later than its pending event only moves
//! the deadline; when the event arrives early it is re-posted at the
//! deadline. Restarting it earlier posts a new event and makes the old one
//! stale (its generation no longer matches). This keeps the event queue
//! small when a timer is pushed back on every packet (CQE-mode moderation)
//! or every `epoll_wait` (IRQ suspension's 20 ms timer).

use super::Nanos;

#[derive(Clone, Copy, Debug, Default)]
pub struct LazyTimer {
    deadline: Option<Nanos>,
    /// Time of the event in the queue that carries the current generation.
    posted_at: Option<Nanos>,
    gen: u32,
}

/// What the owner must do after a timer operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerPost {
    /// Nothing to post.
    None,
    /// Post an event at this time carrying this generation.
    At(Nanos, u32),
}

/// What an arriving timer event means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerFire {
    /// Stale or cancelled: ignore.
    Ignore,
    /// The deadline moved: post again.
    Repost(Nanos, u32),
    /// The timer expires now.
    Expire,
}

impl LazyTimer {
    pub fn is_armed(&self) -> bool {
        self.deadline.is_some()
    }

    pub fn deadline(&self) -> Option<Nanos> {
        self.deadline
    }

    /// (Re)start the timer to expire at `at`.
    pub fn start(&mut self, at: Nanos) -> TimerPost {
        self.deadline = Some(at);
        match self.posted_at {
            Some(p) if p <= at => TimerPost::None,
            _ => {
                self.gen = self.gen.wrapping_add(1);
                self.posted_at = Some(at);
                TimerPost::At(at, self.gen)
            }
        }
    }

    /// Cancel; a posted event will be ignored.
    pub fn cancel(&mut self) {
        self.deadline = None;
    }

    /// A timer event with generation `gen` arrived at `now`.
    pub fn on_event(&mut self, now: Nanos, gen: u32) -> TimerFire {
        if gen != self.gen || self.posted_at.is_none() {
            return TimerFire::Ignore;
        }
        self.posted_at = None;
        match self.deadline {
            None => TimerFire::Ignore,
            Some(d) if d > now => {
                self.posted_at = Some(d);
                TimerFire::Repost(d, self.gen)
            }
            Some(_) => {
                self.deadline = None;
                TimerFire::Expire
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushing_back_reuses_the_posted_event() {
        let mut t = LazyTimer::default();
        assert_eq!(t.start(100), TimerPost::At(100, 1));
        assert_eq!(t.start(150), TimerPost::None);
        assert_eq!(t.on_event(100, 1), TimerFire::Repost(150, 1));
        assert_eq!(t.on_event(150, 1), TimerFire::Expire);
        assert!(!t.is_armed());
    }

    #[test]
    fn pulling_in_posts_anew_and_stales_the_old_event() {
        let mut t = LazyTimer::default();
        assert_eq!(t.start(100), TimerPost::At(100, 1));
        assert_eq!(t.start(50), TimerPost::At(50, 2));
        assert_eq!(t.on_event(50, 2), TimerFire::Expire);
        assert_eq!(t.on_event(100, 1), TimerFire::Ignore);
    }

    #[test]
    fn cancel_ignores_the_event_and_restart_after_it_works() {
        let mut t = LazyTimer::default();
        t.start(100);
        t.cancel();
        assert_eq!(t.on_event(100, 1), TimerFire::Ignore);
        assert_eq!(t.start(200), TimerPost::At(200, 2));
        assert_eq!(t.on_event(200, 2), TimerFire::Expire);
    }

    #[test]
    fn cancel_then_restart_before_the_event_reuses_it() {
        let mut t = LazyTimer::default();
        t.start(100);
        t.cancel();
        assert_eq!(t.start(120), TimerPost::None);
        assert_eq!(t.on_event(100, 1), TimerFire::Repost(120, 1));
        assert_eq!(t.on_event(120, 1), TimerFire::Expire);
    }
}
