//! Compilation errors.

use thiserror::Error;

use crate::{Arch, StrictRejection};

/// Why a profile could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompileError {
    #[error("the strict allowlist is empty")]
    EmptyAllowlist,
    #[error("the strict allowlist resolves to {count} syscalls on {}, more than {max}", .arch.name())]
    TooManySyscalls {
        arch: Arch,
        count: usize,
        max: usize,
    },
    #[error("unknown syscall `{name}`{}", .suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownSyscall {
        name: String,
        suggestion: Option<&'static str>,
    },
    #[error("syscall `{name}` may not be in a strict allowlist: {}", .reason.describe())]
    RejectedSyscall {
        name: String,
        reason: StrictRejection,
    },
    #[error("the strict allowlist has no `execve` on {}", .arch.name())]
    MissingExecve { arch: Arch },
    #[error("the program for {} needs {len} instructions, more than the kernel's limit of {max}", .arch.name())]
    ProgramTooLong { arch: Arch, len: usize, max: usize },
    /// The assembler could not encode a jump (an internal error: far
    /// targets are always routed through `ja`).
    #[error("the jump at instruction {at} of the program for {} cannot be encoded", .arch.name())]
    JumpOutOfRange { arch: Arch, at: usize },
    #[error("invalid rule: {0}")]
    InvalidRule(String),
}
