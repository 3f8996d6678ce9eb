//! `seccomp strict-allowlist { ... }`: names, duplicates, guarded and
//! architecture-specific syscalls, and the required `execve`.
//!
//! Which guarded syscalls a list may name comes from the seccomp crate's
//! reviewed table (`splash_seccomp::guards::DENIED`), the same table the
//! compiler builds the filter from: a member of the specification's fixed
//! deny set is an error, a reviewed addition a warning.

use std::collections::{BTreeMap, BTreeSet};

use splash_seccomp::{Arch, StrictRejection, SyscallName};

use super::Checker;
use crate::ast::Parsed;
use crate::diag::{Code, Diagnostic};
use crate::model;
use crate::span::{Node, Span};

impl Checker {
    pub(super) fn strict_allowlist(
        &mut self,
        keyword: Span,
        syscalls: &[Node<String>],
        parsed: Parsed,
    ) -> Option<BTreeSet<SyscallName>> {
        let mut ok = true;
        if syscalls.is_empty() {
            if parsed == Parsed::Clean {
                self.push(
                    Diagnostic::error(
                        Code::EmptyAllowlist,
                        keyword,
                        "the strict allowlist is empty",
                    )
                    .with_label("no syscall allowed")
                    .with_help("list every syscall the worker needs, including `execve`"),
                );
            }
            return None;
        }
        if syscalls.len() > model::MAX_STRICT_SYSCALLS {
            self.push(
                Diagnostic::error(
                    Code::AllowlistTooLong,
                    syscalls[model::MAX_STRICT_SYSCALLS].span,
                    format!(
                        "the strict allowlist has {} entries; the maximum is 512",
                        syscalls.len()
                    ),
                )
                .with_label("the 513th entry")
                .with_help("remove entries the worker does not need"),
            );
            ok = false;
        }
        let mut first: BTreeMap<&str, Span> = BTreeMap::new();
        let mut set = BTreeSet::new();
        for s in syscalls {
            let name = s.node.as_str();
            if let Some(&f) = first.get(name) {
                self.duplicate(
                    Code::DuplicateSyscall,
                    s.span,
                    f,
                    &format!("syscall `{name}`"),
                );
                ok = false;
                continue;
            }
            first.insert(name, s.span);
            match self.strict_entry(name, s.span) {
                Some(syscall) => {
                    set.insert(syscall);
                }
                None => ok = false,
            }
        }
        // A word of the list that did not parse is already reported and may
        // have been meant as `execve` (`execve,`): no follow-on error.
        if !first.contains_key("execve") && parsed == Parsed::Clean {
            self.push(
                Diagnostic::error(
                    Code::AllowlistMissingExecve,
                    keyword,
                    "the strict allowlist does not contain `execve`",
                )
                .with_label("the fixed launch chain must exec the worker after the filter")
                .with_help("add `execve` to the list"),
            );
            ok = false;
        }
        ok.then_some(set)
    }

    /// A syscall name as written in a strict allowlist or an `expect`
    /// block; an unknown one is reported (with a suggestion when one is
    /// close) and gives `None`.
    pub(super) fn syscall_name(&mut self, name: &str, span: Span) -> Option<SyscallName> {
        match SyscallName::new(name) {
            Ok(syscall) => Some(syscall),
            Err(unknown) => {
                let mut d = Diagnostic::error(
                    Code::UnknownSyscall,
                    span,
                    format!("unknown syscall `{name}`"),
                )
                .with_label("not a syscall on x86_64, aarch64 or riscv64");
                if let Some(sug) = unknown.suggestion {
                    d = d.with_help(format!("did you mean `{sug}`?"));
                }
                self.push(d);
                None
            }
        }
    }

    /// One name of a strict allowlist (not a duplicate): the syscall, or
    /// `None` after an error (unknown, `clone3`, a fixed-deny member);
    /// warns when it lifts a reviewed guard or is missing on an
    /// architecture.
    fn strict_entry(&mut self, name: &str, span: Span) -> Option<SyscallName> {
        let syscall = self.syscall_name(name, span)?;
        match splash_seccomp::strict_rejection(name) {
            Some(StrictRejection::Clone3) => {
                self.push(
                    Diagnostic::error(
                        Code::AllowlistClone3,
                        span,
                        "`clone3` cannot be allowed in a strict allowlist",
                    )
                    .with_label("its flags are in memory the filter cannot inspect")
                    .with_help("remove `clone3`; the filter answers it with ENOSYS so libc falls back to `clone`"),
                );
                return None;
            }
            Some(StrictRejection::FixedGuard) => {
                let class = splash_seccomp::denied_syscall(name)
                    .map_or("escape surface", |d| d.class.name());
                self.push(
                    Diagnostic::error(
                        Code::AllowlistDeniedSyscall,
                        span,
                        format!(
                            "`{name}` is in the specification's fixed deny set ({class}) and cannot be allowed"
                        ),
                    )
                    .with_label("the strict filter answers it with EPERM before the allowlist")
                    .with_help(format!(
                        "remove `{name}`: the worker gets EPERM for it whether or not it is listed"
                    )),
                );
                return None;
            }
            None => {}
        }
        if let Some(denied) = splash_seccomp::strict_listing_warning(name) {
            self.push(
                Diagnostic::warning(
                    Code::AllowlistGuardedSyscall,
                    span,
                    format!(
                        "listing `{name}` lifts its escape-surface guard ({}) and allows it",
                        denied.class.name()
                    ),
                )
                .with_label(format!("guarded: {}", denied.reason))
                .with_help(format!(
                    "keep `{name}` only if the worker needs it; unlisted, the strict filter answers it with EPERM"
                )),
            );
        }
        // Architectures without this syscall (no allocation on the common path).
        let mut missing = [false; Arch::ALL.len()];
        for (slot, &arch) in missing.iter_mut().zip(Arch::ALL.iter()) {
            *slot = syscall.number(arch).is_none();
        }
        if missing.iter().any(|&m| m) {
            let missing: Vec<&str> = Arch::ALL
                .iter()
                .zip(missing)
                .filter(|&(_, m)| m)
                .map(|(a, _)| a.name())
                .collect();
            self.push(
                Diagnostic::warning(
                    Code::SyscallMissingOnArch,
                    span,
                    format!("`{name}` does not exist on {}", missing.join(", ")),
                )
                .with_label("skipped on those architectures")
                .with_help("fine for a single-architecture deployment; otherwise list the equivalent call too"),
            );
        }
        Some(syscall)
    }
}
