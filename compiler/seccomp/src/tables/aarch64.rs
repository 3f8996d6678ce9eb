//! aarch64: the generic table plus `renameat`, which riscv64 lacks.

/// Entries aarch64 has beyond [`super::generic::GENERIC`], sorted by name.
pub(crate) static EXTRA: &[(&str, u32)] = &[("renameat", 38)];
