//! What loads the machine: memcached's clients, closed and open loop
//! ([`client`]); in-kernel forwarding of a packet generator's frames
//! ([`forward`]); iperf3's bulk TCP streams, their senders and readers
//! ([`bulk`], [`tcp_stream`]); and a guest's storage I/O: Iometer, OLTP and
//! CPU-bound background threads ([`storage`]).

pub mod bulk;
pub mod client;
pub mod forward;
pub mod storage;
pub mod tcp_stream;

use crate::engine::Scheduler;
use crate::model::devices::nic::PhysicalNic;
use crate::model::run::RunStats;

/// What a workload outside the machine (the clients, the bulk senders)
/// reaches: the engine's scheduler, the NIC's wire side and the run's window
/// and statistics. Nothing of the kernel: a workload talks to the machine
/// through the wire only.
pub struct WorkloadCx<'a, E> {
    pub sched: &'a mut Scheduler<E>,
    pub nic: &'a mut PhysicalNic,
    pub run: &'a mut RunStats,
}
