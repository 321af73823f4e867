//! The names the model's parts share: which kernel (the host's or a
//! guest's) a thing belongs to. A leaf: it names no other part.

/// Index of a kernel in `Machine::kernels`.
pub type KernelId = usize;

/// The host kernel: the only one of a bare-metal machine.
pub const HOST: KernelId = 0;
