//! Where the fair scheduling class puts a task (`kernel/sched/fair.c`),
//! and where Windows' dispatcher does.
//!
//! - [`fair`]: the core a woken task runs on (`select_task_rq_fair` for a
//!   wake-up within one last-level cache: `wake_affine`,
//!   `select_idle_sibling`).
//! - [`balance`]: the task an idle core pulls, about to go idle
//!   (`sched_balance_newidle`) or at its periodic balance
//!   (`sched_balance_domains`), and the periodic balance's interval and
//!   failures.
//! - [`nt_ready`]: the processor Windows Server 2003 runs a readied thread
//!   on (`KiDeferredReadyThread`), for a Windows guest.
//!
//! Pure decisions over a view of the cores; the caller moves the task and
//! counts the migration.

pub mod balance;
pub mod fair;
pub mod nt_ready;

pub use fair::{nr_idle_scan, select_task_rq_fair, wake_affine_weight, wake_wide, Flips, Loads, Wakeup};
