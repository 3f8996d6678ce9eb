//! Seccomp rule sets and their cBPF compiler.
//!
//! The crate knows the syscall tables of the three supported architectures
//! (`x86_64`, `aarch64`, `riscv64`), builds a per-architecture rule set from a
//! [`Profile`], and compiles it into a deterministic classic-BPF program that
//! the kernel's seccomp filter accepts. See `docs/seccomp.md` for the layout of
//! the generated program and the reviewed deny table.

#![warn(missing_docs)]

use serde::{Deserialize, Serialize};

mod tables;

pub mod bpf;
mod codegen;
pub mod doc;
mod error;
pub mod interp;
mod name;
mod program;
mod rules;
pub mod spelling;

pub use bpf::{SeccompData, SockFilter};
pub use codegen::{NrRange, compile, compile_launch, compile_rules, ranges};
pub use error::{CompileError, RuleError};
pub use name::{SyscallName, UnknownSyscall};
pub use program::{Program, ProgramStats};
pub use rules::{
    Action, ArgCond, Fallback, Guard, MAX_STRICT_SYSCALLS, NrDecision, Profile, RuleSet,
};

/// A target architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// 64-bit x86 (`AUDIT_ARCH_X86_64`).
    X86_64,
    /// 64-bit Arm (`AUDIT_ARCH_AARCH64`).
    Aarch64,
    /// 64-bit RISC-V (`AUDIT_ARCH_RISCV64`).
    Riscv64,
}

impl Arch {
    /// Every supported architecture.
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

    /// The architecture's name, as policies and `--arch` write it.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::Riscv64 => "riscv64",
        }
    }

    /// Parse an architecture name (`x86_64`, `aarch64`, `riscv64`; `amd64`
    /// and `arm64` are accepted as aliases).
    pub fn from_name(name: &str) -> Option<Arch> {
        match name {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            "riscv64" => Some(Arch::Riscv64),
            _ => None,
        }
    }

    /// The `AUDIT_ARCH_*` value the kernel puts in `seccomp_data.arch`.
    pub fn audit_arch(self) -> u32 {
        match self {
            Arch::X86_64 => 0xc000_003e,
            Arch::Aarch64 => 0xc000_00b7,
            Arch::Riscv64 => 0xc000_00f3,
        }
    }

    /// Every `(name, number)` pair of this architecture, sorted by name.
    pub fn syscalls(self) -> &'static [(&'static str, u32)] {
        tables::table(self)
    }

    /// The highest syscall number this crate knows for the architecture.
    pub fn max_syscall_number(self) -> u32 {
        self.syscalls().iter().map(|&(_, nr)| nr).max().unwrap_or(0)
    }
}

/// The x32 ABI marker bit in `seccomp_data.nr` on x86_64 (`__X32_SYSCALL_BIT`).
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;

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
    let table = tables::table(arch);
    table
        .binary_search_by(|&(n, _)| n.cmp(name))
        .ok()
        .map(|i| table[i].1)
}

/// The name of syscall number `nr` on `arch`, if the architecture has it.
pub fn syscall_name(arch: Arch, nr: u32) -> Option<&'static str> {
    tables::table(arch)
        .iter()
        .find(|&&(_, n)| n == nr)
        .map(|&(name, _)| name)
}

/// True when `name` is a syscall on at least one supported architecture.
pub fn is_known_syscall(name: &str) -> bool {
    Arch::ALL.iter().any(|&a| syscall_number(a, name).is_some())
}

/// The closest known syscall name, for "did you mean" help: the
/// [`spelling::suggest`] rules over every name of the three tables in
/// alphabetical order (so ties resolve to the alphabetically first name).
pub fn suggest_syscall(name: &str) -> Option<&'static str> {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    if name.is_empty() || is_known_syscall(name) {
        return None;
    }
    let names = NAMES.get_or_init(|| {
        let mut v: Vec<&'static str> = Arch::ALL
            .iter()
            .flat_map(|&a| tables::table(a).iter().map(|&(n, _)| n))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    });
    spelling::suggest(name, names.iter().copied())
}

/// Why `name` may not be listed in a strict allowlist, if it may not.
///
/// `clone`, `ioctl` and `memfd_create` are accepted: their argument guards
/// still apply in front of the allowlist. A guarded syscall outside the
/// classes the strict profile forbids (see [`guards::strict_listable`]) is
/// accepted too; [`strict_listing_warning`] says why listing it widens the
/// filter.
pub fn strict_rejection(name: &str) -> Option<StrictRejection> {
    if name == "clone3" {
        return Some(StrictRejection::Clone3);
    }
    if guards::DENIED
        .iter()
        .any(|d| d.name == name && !guards::strict_listable(d))
    {
        return Some(StrictRejection::FixedGuard);
    }
    None
}

/// The reviewed guard entry of `name` when a strict allowlist may list it
/// but listing it allows what both profiles otherwise deny (for a warning).
pub fn strict_listing_warning(name: &str) -> Option<&'static guards::Reviewed> {
    guards::DENIED
        .iter()
        .find(|d| d.name == name && guards::strict_listable(d))
}

pub mod guards;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_numbers() {
        let x = |n| syscall_number(Arch::X86_64, n);
        assert_eq!(x("read"), Some(0));
        assert_eq!(x("write"), Some(1));
        assert_eq!(x("execve"), Some(59));
        assert_eq!(x("clone"), Some(56));
        assert_eq!(x("clone3"), Some(435));
        assert_eq!(x("io_uring_setup"), Some(425));
        assert_eq!(x("exit_group"), Some(231));
        assert_eq!(x("getppid"), Some(110));
        assert_eq!(x("mseal"), Some(462));
        assert_eq!(x("uretprobe"), Some(335));
        for arch in [Arch::Aarch64, Arch::Riscv64] {
            let g = |n| syscall_number(arch, n);
            assert_eq!(g("execve"), Some(221));
            assert_eq!(g("clone"), Some(220));
            assert_eq!(g("clone3"), Some(435));
            assert_eq!(g("exit_group"), Some(94));
            assert_eq!(g("openat"), Some(56));
            assert_eq!(g("getppid"), Some(173));
            assert_eq!(g("listmount"), Some(458));
            assert_eq!(g("statmount"), Some(457));
            assert_eq!(g("lsm_list_modules"), Some(461));
            assert_eq!(g("mseal"), Some(462));
            assert_eq!(g("setxattrat"), Some(463));
            assert_eq!(g("getxattrat"), Some(464));
            assert_eq!(g("open_tree_attr"), Some(467));
            assert_eq!(g("file_setattr"), Some(469));
            assert_eq!(g("open"), None);
            assert_eq!(g("fork"), None);
        }
        assert_eq!(
            syscall_number(Arch::Riscv64, "riscv_flush_icache"),
            Some(259)
        );
        assert_eq!(syscall_number(Arch::Riscv64, "riscv_hwprobe"), Some(258));
        assert_eq!(syscall_number(Arch::Aarch64, "riscv_flush_icache"), None);
        assert_eq!(syscall_number(Arch::Aarch64, "renameat"), Some(38));
        assert_eq!(syscall_number(Arch::Riscv64, "renameat"), None);
        assert_eq!(syscall_name(Arch::X86_64, 59), Some("execve"));
    }

    #[test]
    fn known_and_suggestions() {
        assert!(is_known_syscall("open"));
        assert!(is_known_syscall("riscv_flush_icache"));
        assert!(!is_known_syscall("opne"));
        assert_eq!(suggest_syscall("opne"), Some("open"));
        assert_eq!(suggest_syscall("exceve"), Some("execve"));
        assert_eq!(suggest_syscall("getppdi"), Some("getppid"));
        assert_eq!(suggest_syscall("read"), None);
        assert_eq!(suggest_syscall("zzzzzzzzzzzz"), None);
        assert_eq!(suggest_syscall(""), None);
    }

    #[test]
    fn strict_rejections() {
        assert_eq!(strict_rejection("clone3"), Some(StrictRejection::Clone3));
        assert_eq!(strict_rejection("mount"), Some(StrictRejection::FixedGuard));
        assert_eq!(
            strict_rejection("ptrace"),
            Some(StrictRejection::FixedGuard)
        );
        assert_eq!(
            strict_rejection("personality"),
            Some(StrictRejection::FixedGuard)
        );
        assert_eq!(strict_rejection("clone"), None);
        assert_eq!(strict_rejection("ioctl"), None);
        assert_eq!(strict_rejection("read"), None);
    }
}
