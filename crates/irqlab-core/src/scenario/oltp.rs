//! The `[oltp]` section: a TPC-C-like load in the storage guest
//! (`app.kind = "oltp"`, the vIC paper's §4.4): many users, each running
//! transactions back to back (the paper's "batch benchmark": no think
//! time) that compute, then read from the database's disks and wait; users
//! enough to saturate the guest's CPUs. The paper gives the shape, not
//! the numbers (users 80 without vIC and 90 with, a 4-way VM, a 45-disk
//! array, "periods of IO bursts"); every default here is an assumption,
//! stated in `docs/calibration.md` ("The vIC paper", TPC-C).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OltpCfg {
    /// Users (threads), user i on guest CPU i mod `vm.vcpus`.
    pub users: u32,
    /// A transaction's computation, cycles (exponentially distributed
    /// with this mean), in user mode.
    pub compute_cycles: u64,
    /// Reads a transaction issues together after computing, then waits for.
    pub reads_per_txn: u32,
    /// The database's checkpoints: every this many ms a writer thread
    /// writes `checkpoint_writes` pages, keeping up to `checkpoint_depth`
    /// writes outstanding (the paper's "periods of IO bursts"). No
    /// checkpoints while either is 0.
    pub checkpoint_interval_ms: u64,
    pub checkpoint_writes: u32,
    pub checkpoint_depth: u32,
}

impl Default for OltpCfg {
    fn default() -> Self {
        OltpCfg {
            users: 80,
            compute_cycles: 1_000_000,
            reads_per_txn: 1,
            checkpoint_interval_ms: 0,
            checkpoint_writes: 0,
            checkpoint_depth: 64,
        }
    }
}
