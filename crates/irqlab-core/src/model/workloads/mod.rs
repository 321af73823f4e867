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
