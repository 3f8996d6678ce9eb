//! Seccomp rule sets and their cBPF compiler.
//!
//! Interface skeleton; see the crate README for the design.

use serde::{Deserialize, Serialize};

/// A target architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    X86_64,
    Aarch64,
    Riscv64,
}

impl Arch {
    pub const ALL: [Arch; 3] = [Arch::X86_64, Arch::Aarch64, Arch::Riscv64];

    /// The architecture this binary runs on, if supported.
    pub fn host() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else if cfg!(target_arch = "riscv64") {
            Some(Arch::Riscv64)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::Riscv64 => "riscv64",
        }
    }
}

/// Why a syscall may not appear in a strict allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrictRejection {
    /// `clone3` carries its flags in memory the filter cannot inspect.
    Clone3,
    /// Denied by a fixed escape-surface guard (mount, kernel control,
    /// tracing, cross-process memory, keyring, personality, ...).
    FixedGuard,
}

/// Syscall number of `name` on `arch`, if the architecture has it.
pub fn syscall_number(arch: Arch, name: &str) -> Option<u32> {
    let _ = (arch, name);
    None
}

/// True when `name` is a syscall on at least one supported architecture.
pub fn is_known_syscall(name: &str) -> bool {
    Arch::ALL.iter().any(|&a| syscall_number(a, name).is_some())
}

/// The closest known syscall name, for "did you mean" help.
pub fn suggest_syscall(name: &str) -> Option<&'static str> {
    let _ = name;
    None
}

/// Why `name` may not be listed in a strict allowlist, if it may not.
pub fn strict_rejection(name: &str) -> Option<StrictRejection> {
    match name {
        "clone3" => Some(StrictRejection::Clone3),
        _ => None,
    }
}
