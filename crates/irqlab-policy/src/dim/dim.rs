//! Primitives shared by every DIM policy: the port of `include/linux/dim.h`
//! and `lib/dim/dim.c`.
//!
//! The kernel keeps one `struct dim` per completion queue. A driver feeds it
//! samples of its running counters (interrupts, packets, bytes) and the
//! policy (`net_dim()`, see [`crate::dim::net_dim`]) turns the rates measured
//! between two samples into a choice of moderation profile. This file holds
//! the pieces that do not depend on the policy: the sample and rate types,
//! the rate computation, the state enums and the four small tune-state
//! helpers of `dim.c`.
//!
//! Integer widths follow the kernel on purpose: counters are compared with
//! wrap-around on 16 bits (events) and 32 bits (packets, bytes, completions)
//! and rates are C `int`s, so the simulator sees the same rounding and the
//! same wrap-around as a real NIC driver would.

/// Interrupts (events) in one measurement window. Follows `DIM_NEVENTS`:
/// `net_dim()` only computes rates once this many events have been counted
/// since the window started, so the decision rate scales with the interrupt
/// rate and a single slow interrupt cannot swing the result.
pub const DIM_NEVENTS: u16 = 64;

/// A change counts as significant when it exceeds this many percent of the
/// reference value (strictly greater, after integer division). Follows the
/// `> 10` inside `IS_SIGNIFICANT_DIFF()`: smaller differences are treated as
/// measurement noise, so the tuner neither turns nor leaves its parking spot.
pub const DIM_SIGNIFICANT_DIFF_PERCENT: u64 = 10;

/// Microseconds per millisecond (`USEC_PER_MSEC`); every rate is "per ms".
pub const USEC_PER_MSEC: u64 = 1_000;

/// Nanoseconds per microsecond (`NSEC_PER_USEC`); sample time is in ns and
/// the kernel measures windows in whole µs (`ktime_us_delta()`).
pub const NSEC_PER_USEC: i64 = 1_000;

/// One snapshot of a queue's running counters. Mirrors `struct dim_sample`.
///
/// The counters are free-running and are expected to wrap: only the
/// difference between two samples is ever used, taken modulo 2^16 for
/// `event_ctr` and modulo 2^32 for `pkt_ctr` and `byte_ctr` (the kernel
/// stores bytes in a `u32`; here the field is `u64` so the caller can hand
/// over its own counter, but only its low 32 bits matter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimSample {
    /// Time the sample was taken, ns (the kernel's `ktime_t`).
    pub time_ns: u64,
    /// Packets received so far (wrapping, 32 bits).
    pub pkt_ctr: u32,
    /// Bytes received so far (only the low 32 bits are used).
    pub byte_ctr: u64,
    /// Interrupts (events) so far (wrapping, 16 bits).
    pub event_ctr: u16,
}

impl DimSample {
    /// Build a sample from wide counters, truncating them to the widths the
    /// kernel keeps. Follows `dim_update_sample()`, except that the time is
    /// passed in (the kernel calls `ktime_get()` itself).
    pub fn new(time_ns: u64, event_ctr: u16, packets: u64, bytes: u64) -> Self {
        DimSample {
            time_ns,
            // `dim_update_sample()` assigns a u64 to a u32 field: keep the
            // low 32 bits.
            pkt_ctr: packets as u32,
            byte_ctr: bytes,
            event_ctr,
        }
    }
}

/// Rates measured over one window. Mirrors `struct dim_stats`; the fields are
/// C `int`s in the kernel and stay `i32` here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimStats {
    /// Packets per ms.
    pub ppms: i32,
    /// Bytes per ms.
    pub bpms: i32,
    /// Events (interrupts) per ms, always computed from [`DIM_NEVENTS`].
    pub epms: i32,
    /// Completions per ms (only meaningful to RDMA DIM; 0 for net DIM).
    pub cpms: i32,
    /// Completions per event, in percent (`cpms * 100 / epms`).
    pub cpe_ratio: i32,
}

/// CQ period mode: when the NIC's moderation timer starts. Mirrors the
/// kernel's `DIM_CQ_PERIOD_MODE_*` (values 0 and 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DimCqPeriodMode {
    /// The timer starts at the first event after the interrupt was armed.
    #[default]
    StartFromEqe = 0,
    /// The timer restarts at every completion (CQE).
    StartFromCqe = 1,
}

/// A moderation profile: what DIM asks the NIC to program. Mirrors
/// `struct dim_cq_moder` (its `cq_period_mode` lives in the owning
/// [`Dim::mode`] here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DimCqModer {
    /// Moderation timer, µs (`rx-usecs` / `tx-usecs`).
    pub usec: u16,
    /// Packet-count threshold (`rx-frames` / `tx-frames`).
    pub pkts: u16,
    /// Completion-count threshold (unused by the net profiles, which leave
    /// it 0).
    pub comps: u16,
}

/// Where the measurement loop stands. Mirrors the kernel's `enum dim_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DimState {
    /// The next sample opens a new window (also right after a new profile
    /// was applied).
    #[default]
    StartMeasure,
    /// A window is open; samples are counted until [`DIM_NEVENTS`] events.
    MeasureInProgress,
    /// A new profile was chosen and the consumer has not applied it yet;
    /// samples are ignored meanwhile.
    ApplyNewProfile,
}

/// What the tuner is doing. Mirrors the kernel's `enum dim_tune_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DimTuneState {
    /// Resting on a local optimum; leaves on any significant change.
    #[default]
    ParkingOnTop,
    /// Resting after too many steps; leaves after as many windows as steps
    /// were taken, whatever the traffic does.
    ParkingTired,
    /// Trying profiles with more moderation (higher index).
    GoingRight,
    /// Trying profiles with less moderation (lower index).
    GoingLeft,
}

/// Verdict of comparing two windows. Mirrors the kernel's
/// `enum dim_stats_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DimStatsCompare {
    /// The current window performed significantly worse.
    Worse,
    /// No significant difference.
    Same,
    /// The current window performed significantly better.
    Better,
}

/// Outcome of one tuning step. Mirrors the kernel's `enum dim_step_result`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DimStepResult {
    /// Moved one profile in the current direction (or stayed, if parked).
    Stepped,
    /// Already took the maximum number of steps: time to park tired.
    TooTired,
    /// Already at the first/last profile in the current direction.
    OnEdge,
}

/// The per-queue DIM context. Mirrors `struct dim` minus the kernel-only
/// members (`work`, `priv`): scheduling the work item is modelled by the
/// policy's return value instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dim {
    /// Measurement-loop state.
    pub state: DimState,
    /// Rates of the previous window, the reference for the next comparison.
    pub prev_stats: DimStats,
    /// Counters at the start of the current window.
    pub start_sample: DimSample,
    /// Running sample kept by RDMA DIM (`rdma_dim()`); net DIM never uses
    /// it. Kept so that the struct matches the kernel's.
    pub measuring_sample: DimSample,
    /// Index of the current profile in the policy's table.
    pub profile_ix: u8,
    /// CQ period mode, i.e. which profile table applies.
    pub mode: DimCqPeriodMode,
    /// Tuning state.
    pub tune_state: DimTuneState,
    /// Steps taken towards more moderation since the last turn/park.
    pub steps_right: u8,
    /// Steps taken towards less moderation since the last turn/park.
    pub steps_left: u8,
    /// Steps taken since the last park on top; also the countdown while
    /// parked tired.
    pub tired: u8,
}

impl Dim {
    /// An all-zero context with the given mode, like a `kzalloc`ed
    /// `struct dim` whose driver only set `mode`: `StartMeasure`,
    /// `ParkingOnTop`, profile 0, zero history.
    pub fn new(mode: DimCqPeriodMode) -> Self {
        Dim {
            mode,
            ..Dim::default()
        }
    }

    /// Is the current profile a good place to stop? Follows `dim_on_top()`:
    /// always while parked; while moving, only when the tuner has just
    /// reversed after going more than one step the other way and this first
    /// step back was still an improvement.
    pub fn on_top(&self) -> bool {
        match self.tune_state {
            DimTuneState::ParkingOnTop | DimTuneState::ParkingTired => true,
            DimTuneState::GoingRight => self.steps_left > 1 && self.steps_right == 1,
            DimTuneState::GoingLeft => self.steps_right > 1 && self.steps_left == 1,
        }
    }

    /// Reverse the direction of travel. Follows `dim_turn()`: resets the step
    /// count of the new direction; does nothing while parked.
    pub fn turn(&mut self) {
        match self.tune_state {
            DimTuneState::ParkingOnTop | DimTuneState::ParkingTired => {}
            DimTuneState::GoingRight => {
                self.tune_state = DimTuneState::GoingLeft;
                self.steps_left = 0;
            }
            DimTuneState::GoingLeft => {
                self.tune_state = DimTuneState::GoingRight;
                self.steps_right = 0;
            }
        }
    }

    /// Park on a local optimum. Follows `dim_park_on_top()`: forgets all
    /// movement history, including tiredness.
    pub fn park_on_top(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tired = 0;
        self.tune_state = DimTuneState::ParkingOnTop;
    }

    /// Park because the tuner is tired. Follows `dim_park_tired()`: forgets
    /// the step counts but keeps `tired`, which then counts down one per
    /// window until the tuner starts moving again.
    pub fn park_tired(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tune_state = DimTuneState::ParkingTired;
    }
}

/// Difference between two free-running counters of `bits` width, taking
/// wrap-around into account. Follows the `BIT_GAP()` macro.
fn bit_gap(bits: u32, end: u64, start: u64) -> u64 {
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    end.wrapping_sub(start) & mask
}

/// Events between two 16-bit event counters, with wrap-around (the
/// `BIT_GAP(BITS_PER_TYPE(u16), ...)` in `net_dim()`).
pub fn dim_event_gap(end: u16, start: u16) -> u16 {
    bit_gap(16, u64::from(end), u64::from(start)) as u16
}

/// Is `val` more than [`DIM_SIGNIFICANT_DIFF_PERCENT`] away from
/// `reference`? Follows `IS_SIGNIFICANT_DIFF()`: `100 * |val - ref| / ref`
/// in unsigned long arithmetic, truncating, then `> 10`.
///
/// The kernel never calls it with `reference == 0` (the callers test for
/// zero first); here that case answers `false` instead of dividing by zero.
/// The subtraction is done in 64 bits, where C's `int` subtraction could
/// overflow; for rates that fit an `i32` the results are identical.
pub fn is_significant_diff(val: i32, reference: i32) -> bool {
    let abs_diff = (i64::from(val) - i64::from(reference)).unsigned_abs();
    // C converts a negative int reference to unsigned long by wrapping.
    let denom = i64::from(reference) as u64;
    if denom == 0 {
        return false;
    }
    100u64.saturating_mul(abs_diff) / denom > DIM_SIGNIFICANT_DIFF_PERCENT
}

/// `DIV_ROUND_UP()` on the kernel's `long` operands; `d` is never 0 here.
fn div_round_up(n: u64, d: u64) -> u64 {
    if d == 0 {
        return 0;
    }
    n / d + u64::from(n % d != 0)
}

/// Rates between two samples, per ms. Follows `dim_calc_stats()`.
///
/// * The window length is `ktime_us_delta(end, start)`: whole µs, truncated
///   toward zero, then stored in a `u32`.
/// * Packet and byte counts are 32-bit wrapping gaps.
/// * Every rate rounds up (`DIV_ROUND_UP(count * 1000, delta_us)`) and is
///   stored in a C `int`.
/// * `epms` is computed from [`DIM_NEVENTS`], not from the actual number of
///   events in the window, exactly as the kernel does.
///
/// Returns `None` when the window is shorter than 1 µs, as the kernel's
/// `dim_calc_stats()` returns `false` (and `net_dim()` then keeps
/// measuring). `DimSample` has no completion counter, so `cpms` and
/// `cpe_ratio` are 0, which is what net DIM's samples produce in the kernel
/// as well (see [`dim_calc_stats_with_comps`]).
pub fn dim_calc_stats(start: &DimSample, end: &DimSample) -> Option<DimStats> {
    dim_calc_stats_with_comps(start, end, 0, 0)
}

/// [`dim_calc_stats`] with completion counters (the `comp_ctr` of the
/// kernel's `struct dim_sample`, used by RDMA DIM), which fill `cpms` and
/// `cpe_ratio`. The completion gap wraps on 32 bits like the other counters.
pub fn dim_calc_stats_with_comps(
    start: &DimSample,
    end: &DimSample,
    start_comps: u32,
    end_comps: u32,
) -> Option<DimStats> {
    // ktime_us_delta(): signed ns difference, divided toward zero, then the
    // kernel keeps it in a u32 (enough for ~71 minutes).
    let delta_ns = end.time_ns.wrapping_sub(start.time_ns) as i64;
    let delta_us = u64::from((delta_ns / NSEC_PER_USEC) as u32);

    let npkts = bit_gap(32, u64::from(end.pkt_ctr), u64::from(start.pkt_ctr));
    let nbytes = bit_gap(32, end.byte_ctr, start.byte_ctr);
    let ncomps = bit_gap(32, u64::from(end_comps), u64::from(start_comps));

    if delta_us == 0 {
        return None;
    }

    // The `* 1000` is done in 64 bits (USEC_PER_MSEC is a long), so it
    // cannot overflow; the result is then truncated into an int like the
    // kernel's assignment does.
    let per_ms = |count: u64| div_round_up(count * USEC_PER_MSEC, delta_us) as i32;
    let ppms = per_ms(npkts);
    let bpms = per_ms(nbytes);
    let epms = per_ms(u64::from(DIM_NEVENTS));
    let cpms = per_ms(ncomps);

    // DIV_ROUND_DOWN_ULL(cpms * 100, epms): int product widened to u64,
    // divided by a u32 divisor.
    let cpe_ratio = if epms != 0 {
        let num = cpms.wrapping_mul(100) as i64 as u64;
        let den = u64::from(epms as u32);
        (num / den) as i32
    } else {
        0
    };

    Some(DimStats {
        ppms,
        bpms,
        epms,
        cpms,
        cpe_ratio,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(time_ns: u64, event_ctr: u16, pkt_ctr: u32, byte_ctr: u64) -> DimSample {
        DimSample {
            time_ns,
            pkt_ctr,
            byte_ctr,
            event_ctr,
        }
    }

    #[test]
    fn constants_match_the_kernel() {
        assert_eq!(DIM_NEVENTS, 64);
        assert_eq!(DIM_SIGNIFICANT_DIFF_PERCENT, 10);
        assert_eq!(DimCqPeriodMode::StartFromEqe as u8, 0);
        assert_eq!(DimCqPeriodMode::StartFromCqe as u8, 1);
    }

    #[test]
    fn sample_new_truncates_packets_like_dim_update_sample() {
        let s = DimSample::new(7, 3, (1u64 << 32) + 5, (1u64 << 40) + 9);
        assert_eq!(
            s,
            DimSample {
                time_ns: 7,
                pkt_ctr: 5,
                byte_ctr: (1u64 << 40) + 9,
                event_ctr: 3
            }
        );
    }

    #[test]
    fn calc_stats_basic_rates_per_ms() {
        // 640 µs window, 6400 packets, 9.6 MB.
        let start = sample(1_000_000, 0, 0, 0);
        let end = sample(1_640_000, 64, 6_400, 9_600_000);
        let s = dim_calc_stats(&start, &end).unwrap();
        assert_eq!(
            s,
            DimStats {
                ppms: 10_000,
                bpms: 15_000_000,
                epms: 100,
                cpms: 0,
                cpe_ratio: 0
            }
        );
    }

    #[test]
    fn calc_stats_rounds_up_and_truncates_time_to_us() {
        // 3999 ns -> 3 µs. 10 packets -> ceil(10000/3) = 3334.
        // 1 byte -> ceil(1000/3) = 334. epms = ceil(64000/3) = 21334.
        let start = sample(0, 0, 0, 0);
        let end = sample(3_999, 64, 10, 1);
        let s = dim_calc_stats(&start, &end).unwrap();
        assert_eq!(s.ppms, 3_334);
        assert_eq!(s.bpms, 334);
        assert_eq!(s.epms, 21_334);
    }

    #[test]
    fn calc_stats_epms_uses_dim_nevents_not_actual_events() {
        // 200 events happened but the kernel always uses DIM_NEVENTS.
        let start = sample(0, 0, 0, 0);
        let end = sample(1_000_000, 200, 0, 0);
        let s = dim_calc_stats(&start, &end).unwrap();
        assert_eq!(s.epms, 64);
        assert_eq!(s.ppms, 0);
        assert_eq!(s.bpms, 0);
    }

    #[test]
    fn calc_stats_counter_wrap_around() {
        // Packets wrap from near u32::MAX, bytes wrap on 32 bits even
        // though the field is 64 bits wide.
        let start = sample(0, 65_530, u32::MAX - 99, 0xFFFF_FF00);
        let end = sample(1_000_000, 58, 900, 0x1_0000_0100);
        let s = dim_calc_stats(&start, &end).unwrap();
        assert_eq!(s.ppms, 1_000); // 1000 packets over 1 ms
        assert_eq!(s.bpms, 512); // 0x200 bytes over 1 ms
        assert_eq!(dim_event_gap(58, 65_530), 64);
    }

    #[test]
    fn calc_stats_bytes_only_low_32_bits_count() {
        // A 64-bit difference of exactly 2^32 + 1000 is seen as 1000 bytes.
        let start = sample(0, 0, 0, 5);
        let end = sample(1_000_000, 64, 0, 5 + (1u64 << 32) + 1_000);
        assert_eq!(dim_calc_stats(&start, &end).unwrap().bpms, 1_000);
    }

    #[test]
    fn calc_stats_sub_microsecond_window_is_rejected() {
        let start = sample(10_000, 0, 0, 0);
        assert_eq!(dim_calc_stats(&start, &sample(10_000, 64, 5, 5)), None);
        assert_eq!(dim_calc_stats(&start, &sample(10_999, 64, 5, 5)), None);
        assert!(dim_calc_stats(&start, &sample(11_000, 64, 5, 5)).is_some());
    }

    #[test]
    fn calc_stats_time_going_backwards_wraps_like_the_kernel() {
        // -1 µs as s64, stored into a u32, becomes 2^32 - 1 µs.
        let start = sample(2_000, 0, 0, 0);
        let end = sample(1_000, 64, 0, 0);
        let s = dim_calc_stats(&start, &end).unwrap();
        assert_eq!(s.epms, 1); // ceil(64000 / 4294967295)
        assert_eq!(s.ppms, 0);
    }

    #[test]
    fn calc_stats_with_comps_fills_cpms_and_ratio() {
        let start = sample(0, 0, 0, 0);
        let end = sample(1_000_000, 64, 0, 0);
        // 96 completions per ms, 64 events per ms -> 150 %.
        let s = dim_calc_stats_with_comps(&start, &end, u32::MAX - 5, 90).unwrap();
        assert_eq!(s.cpms, 96);
        assert_eq!(s.epms, 64);
        assert_eq!(s.cpe_ratio, 150);
    }

    #[test]
    fn significant_diff_threshold_is_strictly_more_than_ten_percent() {
        let cases: &[(i32, i32, bool)] = &[
            (1_100, 1_000, false), // exactly 10 %
            (1_109, 1_000, false), // 10.9 % truncates to 10
            (1_110, 1_000, true),  // 11 %
            (891, 1_000, false),   // 10.9 % down
            (890, 1_000, true),    // 11 % down
            (5, 0, false),         // reference 0 is guarded
            (i32::MAX, 1, true),   // no overflow
            (i32::MIN, i32::MAX, true),
        ];
        for &(val, reference, expected) in cases {
            assert_eq!(
                is_significant_diff(val, reference),
                expected,
                "val={val} ref={reference}"
            );
        }
    }

    fn dim_with(tune_state: DimTuneState, steps_right: u8, steps_left: u8) -> Dim {
        Dim {
            tune_state,
            steps_right,
            steps_left,
            ..Dim::new(DimCqPeriodMode::StartFromEqe)
        }
    }

    #[test]
    fn on_top_table() {
        use DimTuneState::*;
        let cases: &[(DimTuneState, u8, u8, bool)] = &[
            (ParkingOnTop, 0, 0, true),
            (ParkingTired, 3, 3, true),
            (GoingRight, 1, 2, true),
            (GoingRight, 1, 1, false),
            (GoingRight, 2, 2, false),
            (GoingRight, 0, 5, false),
            (GoingLeft, 2, 1, true),
            (GoingLeft, 1, 1, false),
            (GoingLeft, 5, 0, false),
            (GoingLeft, 3, 2, false),
        ];
        for &(ts, r, l, expected) in cases {
            assert_eq!(dim_with(ts, r, l).on_top(), expected, "{ts:?} r={r} l={l}");
        }
    }

    #[test]
    fn turn_reverses_and_resets_new_direction_steps() {
        let mut d = dim_with(DimTuneState::GoingRight, 3, 2);
        d.turn();
        assert_eq!(
            (d.tune_state, d.steps_right, d.steps_left),
            (DimTuneState::GoingLeft, 3, 0)
        );
        d.steps_left = 4;
        d.turn();
        assert_eq!(
            (d.tune_state, d.steps_right, d.steps_left),
            (DimTuneState::GoingRight, 0, 4)
        );
        for parked in [DimTuneState::ParkingOnTop, DimTuneState::ParkingTired] {
            let mut d = dim_with(parked, 1, 2);
            d.turn();
            assert_eq!((d.tune_state, d.steps_right, d.steps_left), (parked, 1, 2));
        }
    }

    #[test]
    fn park_on_top_clears_tired_but_park_tired_keeps_it() {
        let mut d = dim_with(DimTuneState::GoingLeft, 2, 3);
        d.tired = 7;
        d.profile_ix = 3;
        let mut t = d;
        d.park_on_top();
        assert_eq!(
            (
                d.tune_state,
                d.steps_right,
                d.steps_left,
                d.tired,
                d.profile_ix
            ),
            (DimTuneState::ParkingOnTop, 0, 0, 0, 3)
        );
        t.park_tired();
        assert_eq!(
            (
                t.tune_state,
                t.steps_right,
                t.steps_left,
                t.tired,
                t.profile_ix
            ),
            (DimTuneState::ParkingTired, 0, 0, 7, 3)
        );
    }

    #[test]
    fn new_is_zeroed_like_kzalloc() {
        let d = Dim::new(DimCqPeriodMode::StartFromCqe);
        assert_eq!(d.state, DimState::StartMeasure);
        assert_eq!(d.tune_state, DimTuneState::ParkingOnTop);
        assert_eq!(d.profile_ix, 0);
        assert_eq!(d.mode, DimCqPeriodMode::StartFromCqe);
        assert_eq!(d.prev_stats, DimStats::default());
    }
}
