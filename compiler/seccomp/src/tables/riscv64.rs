//! riscv64: the generic table plus its two architecture-specific calls.

/// Entries riscv64 has beyond [`super::generic::GENERIC`], sorted by name.
pub(crate) static EXTRA: &[(&str, u32)] = &[("riscv_flush_icache", 259), ("riscv_hwprobe", 258)];
