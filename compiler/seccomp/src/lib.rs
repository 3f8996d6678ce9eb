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
#[cfg(test)]
mod doc;
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
    /// In the specification's fixed deny set ([`guards::Origin::Specification`]):
    /// the strict filter denies it before the allowlist, so listing it could
    /// never allow it (mount, filesystem handles, namespaces, kernel
    /// interfaces, io_uring, module loading, kernel control, tracing,
    /// cross-process memory, keyrings, personality).
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

/// The [`guards::DENIED`] row of `name`, if the fixed guards deny it.
pub fn denied_syscall(name: &str) -> Option<&'static guards::Denied> {
    guards::DENIED.iter().find(|d| d.name == name)
}

/// Why `name` may not be listed in a strict allowlist, if it may not.
///
/// `clone`, `ioctl` and `memfd_create` are accepted: their argument guards
/// still apply in front of the allowlist. A reviewed addition to the fixed
/// deny set is accepted too; [`strict_listing_warning`] says why listing it
/// widens the filter.
pub fn strict_rejection(name: &str) -> Option<StrictRejection> {
    if name == "clone3" {
        return Some(StrictRejection::Clone3);
    }
    match denied_syscall(name) {
        Some(d) if !d.strict_listable() => Some(StrictRejection::FixedGuard),
        _ => None,
    }
}

/// The reviewed addition `name`, when a strict allowlist may list it but
/// listing it lifts a guard that otherwise answers `EPERM` (for a warning).
pub fn strict_listing_warning(name: &str) -> Option<&'static guards::Denied> {
    denied_syscall(name).filter(|d| d.strict_listable())
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
        for name in [
            "unshare",
            "setns",
            "bpf",
            "io_uring_setup",
            "open_tree_attr",
        ] {
            assert_eq!(strict_rejection(name), Some(StrictRejection::FixedGuard));
            assert_eq!(strict_listing_warning(name), None);
        }
        assert_eq!(strict_rejection("clone"), None);
        assert_eq!(strict_rejection("ioctl"), None);
        assert_eq!(strict_rejection("read"), None);
        for name in ["kcmp", "statmount", "listmount", "syslog", "pidfd_getfd"] {
            assert_eq!(strict_rejection(name), None, "{name}");
            assert!(strict_listing_warning(name).is_some(), "{name}");
        }
        assert_eq!(strict_listing_warning("read"), None);
    }

    /// The specification's fixed deny set, exactly: the members of the
    /// classes its compatibility profile names (see `docs/seccomp.md`).
    #[test]
    fn the_specification_set_is_exactly_these() {
        let spec: Vec<&str> = guards::DENIED
            .iter()
            .filter(|d| d.origin == guards::Origin::Specification)
            .map(|d| d.name)
            .collect();
        assert_eq!(
            spec,
            [
                "mount",
                "umount2",
                "pivot_root",
                "open_tree",
                "open_tree_attr",
                "move_mount",
                "fsopen",
                "fsconfig",
                "fsmount",
                "fspick",
                "mount_setattr",
                "name_to_handle_at",
                "open_by_handle_at",
                "unshare",
                "setns",
                "bpf",
                "perf_event_open",
                "userfaultfd",
                "io_uring_setup",
                "io_uring_enter",
                "io_uring_register",
                "init_module",
                "finit_module",
                "delete_module",
                "kexec_load",
                "kexec_file_load",
                "reboot",
                "ptrace",
                "process_vm_readv",
                "process_vm_writev",
                "add_key",
                "request_key",
                "keyctl",
                "personality",
            ]
        );
        // Every row is named once, and every row exists somewhere.
        let mut names: Vec<&str> = guards::DENIED.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), guards::DENIED.len());
        assert!(names.iter().all(|n| is_known_syscall(n)));
    }
}
