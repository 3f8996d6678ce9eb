//! Compilation errors.

use thiserror::Error;

use crate::{Arch, StrictRejection};

/// Why a profile could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CompileError {
    /// A strict allowlist without any syscall.
    #[error("the strict allowlist is empty")]
    EmptyAllowlist,
    /// A strict allowlist larger than the compiler accepts.
    #[error("the strict allowlist resolves to {count} syscalls on {}, more than {max}", .arch.name())]
    TooManySyscalls {
        /// The architecture being compiled.
        arch: Arch,
        /// How many numbers the list resolves to there.
        count: usize,
        /// The limit ([`crate::MAX_STRICT_SYSCALLS`]).
        max: usize,
    },
    /// A syscall a strict allowlist may not list.
    #[error("syscall `{name}` may not be in a strict allowlist: {}", .reason.describe())]
    RejectedSyscall {
        /// The syscall.
        name: String,
        /// Why it is refused.
        reason: StrictRejection,
    },
    /// A strict allowlist that cannot start the worker.
    #[error("the strict allowlist has no `execve` on {}", .arch.name())]
    MissingExecve {
        /// The architecture being compiled.
        arch: Arch,
    },
    /// A program over the kernel's instruction limit.
    #[error("the program for {} needs {len} instructions, more than the kernel's limit of {max}", .arch.name())]
    ProgramTooLong {
        /// The architecture being compiled.
        arch: Arch,
        /// The program's length.
        len: usize,
        /// The kernel's limit ([`crate::bpf::BPF_MAXINSNS`]).
        max: usize,
    },
    /// The assembler could not encode a jump (an internal error: far
    /// targets are always routed through `ja`).
    #[error("the jump at instruction {at} of the program for {} cannot be encoded", .arch.name())]
    JumpOutOfRange {
        /// The architecture being compiled.
        arch: Arch,
        /// The jump's instruction index.
        at: usize,
    },
    /// A hand-built rule or rule set breaks a construction rule.
    #[error("invalid rule: {0}")]
    InvalidRule(#[source] RuleError),
}

/// Why a hand-built argument condition or rule set was refused
/// ([`crate::ArgCond`] constructors, [`crate::RuleSet::new`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RuleError {
    /// A syscall has six arguments, numbered 0 to 5.
    #[error("argument index `{arg}` is not below 6")]
    ArgumentIndex {
        /// The index given.
        arg: u8,
    },
    /// A bit test with mask 0 can never match.
    #[error("a bit test needs a nonzero mask")]
    ZeroMask,
    /// An equality test without values can never match.
    #[error("an equality test needs a value")]
    NoValues,
    /// A guard names a number the architecture does not have.
    #[error("guard for `{name}` uses number {nr} which {} does not have", .arch.name())]
    UnknownGuardNumber {
        /// The guard's syscall name.
        name: &'static str,
        /// The number it uses.
        nr: u32,
        /// The architecture of the rule set.
        arch: Arch,
    },
    /// Guards deny; an allowing guard would widen the filter.
    #[error("guard for `{name}` must deny")]
    AllowingGuard {
        /// The guard's syscall name.
        name: &'static str,
    },
    /// An unconditional guard for the same number comes first.
    #[error("guard for `{name}` is unreachable after an unconditional guard")]
    UnreachableGuard {
        /// The guard's syscall name.
        name: &'static str,
    },
    /// An allowed number is not a syscall of the architecture.
    #[error("allowed number {nr} is not a syscall on {}", .arch.name())]
    UnknownAllowedNumber {
        /// The number.
        nr: u32,
        /// The architecture of the rule set.
        arch: Arch,
    },
}
