//! A CPU-bound guest load at idle priority beside the I/O (the paper's
//! §4.5: SMP Hyper Pi at Windows' idle priority class, so that Iometer
//! runs first and the guest never halts). `storage.background_threads`
//! threads, thread i on guest CPU i mod vCPUs, compute in chunks of
//! [`CHUNK_NS`]; at each chunk's end a thread gives way to any other
//! runnable thread of its CPU (Iometer's worker, the only one). Windows
//! preempts a lower-priority thread at once; the chunk bounds the extra
//! wait this model gives the worker (10 µs, against reads of hundreds).
//! Their progress (chunks completed) gives Hyper Pi's run time: inversely
//! proportional to it.

use crate::engine::{Nanos, Scheduler};
use crate::model::kernel::app::Phase;
use crate::model::workloads::storage::StoragePhase;
use crate::model::kernel::cpu::{CpuClass, ThreadId};
use crate::model::kernel::sched::Seg;
use crate::model::kernel::Kernel;
use crate::model::workloads::storage::StorageHost;

/// The background threads' unit of work, ns of one guest CPU.
pub const CHUNK_NS: Nanos = 10_000;

/// A background thread's next chunk, or None when it gives way.
pub(crate) fn background_next<M: StorageHost>(m: &mut M, k: &mut Kernel, t: ThreadId) -> Option<Seg> {
    let core = k.threads[t as usize].core as usize;
    if !k.cores[core].runqueue.is_empty() {
        // Idle priority: whoever else is runnable goes first.
        k.cores[core].runqueue.push_back(t);
        return None;
    }
    k.threads[t as usize].phase = Phase::InWorkload;
    m.storage().threads[t as usize].phase = StoragePhase::InSpin;
    Some(Seg { class: CpuClass::User, ns: CHUNK_NS, bh_disabled: false })
}

/// A chunk completed.
pub(crate) fn background_done<M: StorageHost>(m: &mut M, k: &mut Kernel, _sched: &mut Scheduler<M::Ev>, t: ThreadId) {
    k.threads[t as usize].phase = Phase::Workload;
    m.storage().threads[t as usize].phase = StoragePhase::Spin;
    if m.run().measuring {
        m.storage().counters.background_chunks += 1;
    }
}

