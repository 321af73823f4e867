//! LD_PRELOAD shim (see the crate description).
