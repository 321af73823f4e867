//! A vhost-net worker's state, as the host kernel keeps it among its
//! threads (`Kernel::vhosts`); what the worker does is `vhost.rs`.

use crate::engine::Nanos;
use crate::model::devices::nic::RxPacket;

/// `VHOST_NET_BATCH`.
pub const VHOST_NET_BATCH: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    None,
    Tx,
    Rx,
    /// Busy polling for new work (`vm.vhost_poll_us`).
    Poll,
}

pub struct VhostWorker {
    pub core: u32,
    /// The guest queue pair it serves.
    pub queue: u32,
    /// Runnable or running (notifications from the guest are suppressed).
    pub awake: bool,
    pub work: Work,
    pub rx_batch: Vec<RxPacket>,
    pub tx_batch: Vec<(u32, Nanos, u32)>,
    /// It busy-polled since it last found work: next time it sleeps.
    pub polled: bool,
    /// Its poll was preempted and work (or another task) came meanwhile:
    /// the poll must not resume.
    pub poll_stale: bool,
}

impl VhostWorker {
    pub fn new(core: u32, queue: u32) -> Self {
        VhostWorker {
            core,
            queue,
            awake: false,
            work: Work::None,
            rx_batch: Vec::new(),
            tx_batch: Vec::new(),
            polled: false,
            poll_stale: false,
        }
    }
}
