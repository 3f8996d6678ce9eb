//! Shared helpers for this crate's integration tests.
#![allow(dead_code, reason = "each test binary uses a subset")]

pub mod sys;

use std::collections::BTreeSet;

use splash_seccomp::{Arch, StrictRejection, SyscallName, strict_rejection};

/// The first `n` names (alphabetically) of `arch`'s table that a strict list
/// may contain, plus `execve`.
pub fn strict_list(arch: Arch, n: usize) -> BTreeSet<SyscallName> {
    let mut out: BTreeSet<SyscallName> = arch
        .syscalls()
        .iter()
        .map(|&(name, _)| name)
        .filter(|name| strict_rejection(name).is_none())
        .take(n)
        .map(name)
        .collect();
    out.insert(name("execve"));
    out
}

/// Every other listable syscall number of `arch`, so the allowed numbers do
/// not merge into ranges (a program with many ranges and far jumps).
pub fn alternating_list(arch: Arch) -> BTreeSet<SyscallName> {
    let mut by_nr: Vec<(u32, &str)> = arch.syscalls().iter().map(|&(n, nr)| (nr, n)).collect();
    by_nr.sort_unstable();
    let mut out: BTreeSet<SyscallName> = by_nr
        .iter()
        .step_by(2)
        .filter(|(_, n)| strict_rejection(n).is_none())
        .map(|(_, n)| name(n))
        .collect();
    out.insert(name("execve"));
    out
}

/// A known syscall name (panics on an unknown one: a test's own mistake).
pub fn name(s: &str) -> SyscallName {
    SyscallName::new(s).expect("known syscall")
}

pub fn names(list: &[&str]) -> BTreeSet<SyscallName> {
    list.iter().map(|s| name(s)).collect()
}

pub fn is_rejected(name: &str) -> bool {
    matches!(
        strict_rejection(name),
        Some(StrictRejection::Clone3 | StrictRejection::FixedGuard)
    )
}
