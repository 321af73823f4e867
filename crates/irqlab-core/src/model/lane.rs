//! The engine's FIFO lanes ([`crate::engine::queue`]) for the events the
//! model schedules at a fixed delay: each lane's events then come in time
//! order and skip the heap (one out of order goes to the heap).

use crate::engine::Lane;

/// A request on its way to the NIC's ring (the wire and DMA delay).
pub const TO_SERVER: Lane = 0;
/// A reply on the wire to its client.
pub const TO_CLIENT: Lane = 1;
/// A TX descriptor's DMA completion.
pub const TX_DONE: Lane = 2;
/// An interrupt-moderation timer (`rx-usecs` after a completion).
pub const MODERATION: Lane = 3;

