//! The machine's events: one variant per component, whose sub-enum is
//! defined beside the code that handles it; the components schedule them
//! through bounds on the event type (`From<TheirEvent>`), so none of them
//! names this file.

use crate::model::component::ComponentId;
use crate::model::devices::nic::events::{NicEv, ReplyOnWire};
use crate::model::kernel::events::KernelEv;
use crate::model::workloads::client::ClientEv;
use crate::model::workloads::storage::StorageEv;
use crate::model::workloads::tcp_stream::TcpEv;

/// Every event of the model: one variant per component, whose sub-enum is
/// defined beside the code that handles it.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A kernel's cores, NAPI watchdogs and NAPI threads (`kernel/events.rs`).
    Kernel(KernelEv),
    /// The physical NIC's rings, moderation and TX completions
    /// (`devices/nic/events.rs`).
    Nic(NicEv),
    /// memcached's clients (`workloads/client.rs`).
    Client(ClientEv),
    /// The bulk TCP senders (`workloads/tcp_stream.rs`).
    Tcp(TcpEv),
    /// A storage guest's I/O path (`workloads/storage/mod.rs`).
    Storage(StorageEv),
    /// A component added to the machine (`model/component.rs`): its id
    /// and the event it chose.
    Component { id: ComponentId, ev: u64 },
    /// Warm-up ends: statistics restart.
    WarmupEnd,
}

impl From<KernelEv> for Ev {
    #[inline]
    fn from(e: KernelEv) -> Self {
        Ev::Kernel(e)
    }
}

pub use crate::model::lane;

impl From<StorageEv> for Ev {
    #[inline]
    fn from(e: StorageEv) -> Self {
        Ev::Storage(e)
    }
}

impl From<ReplyOnWire> for Ev {
    /// A reply on the wire reaches its client.
    #[inline]
    fn from(r: ReplyOnWire) -> Self {
        Ev::Client(ClientEv::ReplyArrive { conn: r.conn, sent_ns: r.sent_ns })
    }
}

impl From<ClientEv> for Ev {
    #[inline]
    fn from(e: ClientEv) -> Self {
        Ev::Client(e)
    }
}

impl From<TcpEv> for Ev {
    #[inline]
    fn from(e: TcpEv) -> Self {
        Ev::Tcp(e)
    }
}

impl From<NicEv> for Ev {
    #[inline]
    fn from(e: NicEv) -> Self {
        Ev::Nic(e)
    }
}
