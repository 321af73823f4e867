//! The devices that raise a kernel's interrupts: the physical NIC with its
//! queues and moderation ([`nic`]: a ConnectX-4's completion queues, the
//! 82599's throttled vector, an SR-IOV virtual function), the guest's
//! virtio-net device ([`virtio_net`]), and a storage guest's emulated SCSI
//! adapter ([`lsilogic`]) and the array behind it ([`array`]); and a source
//! of periodic interrupts ([`periodic`]), the smallest component added to
//! the machine from outside (`model/component.rs`).

pub mod array;
pub mod lsilogic;
pub mod nic;
pub mod periodic;
pub mod virtio_net;
