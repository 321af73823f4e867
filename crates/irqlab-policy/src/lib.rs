//! irqlab-policy: the adaptive interrupt-handling algorithms as pure state
//! machines.
//!
//! Each policy observes a sample and decides (`observe(sample) -> decision`).
//! It has no engine, no I/O and no clock of its own: time arrives in the
//! sample, so the same code is driven by the simulator's statistics or by a
//! real host's counters.
//!
//! - [`cpuidle`]: which idle state a core enters (intel_idle's tables and
//!   the menu governor).
//! - [`dim`]: Linux dynamic interrupt moderation (`lib/dim`), the
//!   moderation profile of a completion queue from its packet, byte and
//!   event rates.
//! - [`itr`]: the interrupt throttling rate of an Intel 82599 vector
//!   (ixgbe): static, ixgbe's 3-state dynamic ITR, and the linear
//!   packet-rate ITR of Emmerich et al. (SPECTS 2015).
//! - [`sched`]: the core a woken task runs on (the fair class's
//!   `select_task_rq_fair`).
//! - [`search`]: the golden-section search of a knob's best value from
//!   measurements (the SR-IOV paper's interrupt throttle rate tuner).
//! - [`steering`]: which core processes a received packet: RSS in the
//!   NIC, Linux's RPS and RFS, and IAPS (Helbig & Kim, ICOIN 2025).
//! - [`suspend`]: IRQ suspension's `irq-suspend-timeout` from the
//!   application's observed batch times.
//! - [`vic`]: virtual interrupt coalescing for a VM's storage completions
//!   (Ahmad et al., USENIX ATC 2011): the delivery ratio, the per-completion
//!   decision and the IPI deferral.

pub mod cpuidle;
pub mod dim;
pub mod itr;
pub mod sched;
pub mod search;
pub mod steering;
pub mod suspend;
pub mod vic;
