//! Real-kernel access (see the crate description).
