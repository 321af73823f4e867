//! The modelled world around the engine: a bare-metal server's receive path.
//!
//! - [`kernel`]: what a kernel owns (cores, NAPIs, threads, epolls,
//!   sockets) and the NAPI ↔ device-queue maps;
//! - [`cpu`]: cores, contexts, preemption and time accounting;
//! - [`nic`]: the physical NIC: RSS, RX rings and interrupt moderation
//!   (static and DIM on a ConnectX-4; the 82599's throttled vector);
//! - [`napi`]: the NAPI state machine of Linux ≥ 6.13;
//! - [`server`]: assembly, the event loop glue and the summary;
//! - [`sched`]: what a core runs next (hard IRQ > softirq > threads);
//! - [`softirq`]: `net_rx_action`;
//! - [`epoll`] and [`app`]: `ep_poll` with busy polling and IRQ suspension,
//!   and the memcached-like event-loop thread;
//! - [`client`]: closed- and open-loop clients;
//! - [`forward`]: in-kernel forwarding inside NAPI (the ITR paper's DuT);
//! - [`bulk`], [`tcp_stream`], [`gro`]: the bulk TCP receiver (iperf3's
//!   streams), its senders and GRO;
//! - [`steering`], [`backlog`]: software packet steering (RPS, RFS, IAPS)
//!   through per-core backlogs and IPIs;
//! - [`vm`]: guests: vCPU threads, KVM's interrupt delivery and halt
//!   polling;
//! - [`storage`]: a guest's storage I/O through an emulated SCSI adapter,
//!   the hypervisor's storage stack and vIC (the vIC paper).

pub mod app;
pub mod backlog;
pub mod bulk;
pub mod client;
pub mod cpu;
pub mod epoll;
pub mod forward;
pub mod gro;
pub mod kernel;
pub mod napi;
pub mod napi_thread;
pub mod nic;
pub mod sched;
pub mod server;
pub mod softirq;
pub mod steering;
pub mod storage;
pub mod tcp_stream;
pub mod trace;
pub mod vm;
