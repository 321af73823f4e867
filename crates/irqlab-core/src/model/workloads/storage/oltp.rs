//! A TPC-C-like load in the storage guest (`app.kind = "oltp"`, the vIC
//! paper's §4.4): `oltp.users` threads run transactions back to back, each
//! computing (`oltp.compute_cycles`, exponential, user mode), then issuing
//! `oltp.reads_per_txn` reads through the adapter and waiting for all of
//! them; a transaction ends when its last read is completed. With
//! checkpoints, a writer thread writes `oltp.checkpoint_writes` pages every
//! `oltp.checkpoint_interval_ms`, up to `oltp.checkpoint_depth` at a time:
//! the paper's "periods of IO bursts", during which the commands in
//! flight, and so vIC's ratio, swing. Threads that are ready share their guest CPU
//! first come, first served; each blocks at its I/O.

use crate::engine::Scheduler;
use crate::model::kernel::app::Phase;
use crate::model::workloads::storage::StoragePhase;
use crate::model::kernel::cpu::{CpuClass, ThreadId};
use crate::model::kernel::sched::Seg;
use crate::model::kernel::Kernel;
use crate::model::workloads::storage::StorageEv;
use rand::Rng;
use crate::model::workloads::storage::StorageHost;
use crate::model::workloads::storage::iometer::scsi_doorbell;
use crate::model::workloads::storage::iometer::storage_thread_wake;

/// A user's (or the writer's) next step, or None when it waits.
pub(crate) fn oltp_next<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) -> Option<Seg> {
    let writer = t >= k.cfg.oltp.users;
    // A user issues its transaction's reads together; the writer keeps
    // at most `checkpoint_depth` writes outstanding.
    let depth = if writer { k.cfg.oltp.checkpoint_depth } else { u32::MAX };
    let (issue, complete, mean) =
        (k.cfg.storage.guest_issue_cycles, k.cfg.storage.guest_complete_cycles, k.cfg.oltp.compute_cycles);
    let st = m.storage();
    let th = &mut st.threads[t as usize];
    let (phase, class, cycles) = if let Some(io) = th.done.pop_front() {
        th.completing = io;
        (StoragePhase::InTxnComplete, CpuClass::System, complete)
    } else if th.to_issue > 0 && th.outstanding < depth {
        (StoragePhase::InTxnIssue, CpuClass::System, issue)
    } else if th.outstanding > 0 || writer {
        // Waiting for its reads, for room under its depth, or for the
        // next checkpoint.
        k.threads[t as usize].phase = Phase::Sleeping;
        m.tr(sched.now(), crate::model::trace::TraceEvent::Sleep { thread: t });
        return None;
    } else {
        let u: f64 = st.compute_rng.gen::<f64>();
        (StoragePhase::InTxnCompute, CpuClass::User, (-(1.0 - u).ln() * mean as f64).round() as u64)
    };
    th.phase = phase;
    k.threads[t as usize].phase = Phase::InWorkload;
    Some(Seg { class, ns: k.ns(cycles), bh_disabled: false })
}

/// A step of a user or the writer ended.
pub(crate) fn oltp_step_done<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId, phase: StoragePhase) {
    k.threads[t as usize].phase = Phase::Workload;
    m.storage().threads[t as usize].phase = StoragePhase::TxnNext;
    let reads = k.cfg.oltp.reads_per_txn;
    let writer = t >= k.cfg.oltp.users;
    let measuring = m.run().measuring;
    match phase {
        StoragePhase::InTxnCompute => m.storage().threads[t as usize].to_issue = reads,
        StoragePhase::InTxnIssue => {
            m.storage().threads[t as usize].to_issue -= 1;
            scsi_doorbell(m, k, sched, t);
        }
        StoragePhase::InTxnComplete => {
            let st = m.storage();
            let th = &mut st.threads[t as usize];
            th.outstanding -= 1;
            let sent = th.completing.sent_ns;
            if th.outstanding == 0 && th.to_issue == 0 && !writer && measuring {
                st.counters.transactions += 1;
            }
            m.run().record_reply(sched.now(), sent);
        }
        p => unreachable!("an OLTP step in phase {p:?}"),
    }
}

/// The checkpoint is due: the writer issues its burst.
pub(crate) fn oltp_checkpoint<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>) {
    let (writer, writes) = (k.cfg.oltp.users, k.cfg.oltp.checkpoint_writes);
    let guest = m.storage().guest;
    m.storage().threads[writer as usize].to_issue += writes;
    m.in_kernel(k, guest, |k, m| storage_thread_wake(m, k, sched, writer));
    sched.at(sched.now() + k.cfg.oltp.checkpoint_interval_ms * 1_000_000, M::Ev::from(StorageEv::Checkpoint));
}

