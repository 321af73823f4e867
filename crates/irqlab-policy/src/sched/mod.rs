//! Where the fair scheduling class puts a task (`kernel/sched/fair.c`).
//!
//! - [`fair`]: the core a woken task runs on (`select_task_rq_fair` for a
//!   wake-up within one last-level cache: `wake_affine`,
//!   `select_idle_sibling`).
//! - [`balance`]: the task a core about to go idle pulls
//!   (`sched_balance_newidle`).
//!
//! Pure decisions over a view of the cores; the caller moves the task and
//! counts the migration.

pub mod balance;
pub mod fair;

pub use fair::{nr_idle_scan, select_task_rq_fair, wake_wide, Flips, Wakeup};
