//! The rule-set IR: what a filter decides, per architecture, independent of
//! how it is encoded.

use std::collections::BTreeSet;

use crate::bpf::{
    EACCES, ENOSYS, EPERM, SECCOMP_RET_ALLOW, SECCOMP_RET_DATA, SECCOMP_RET_ERRNO,
    SECCOMP_RET_KILL_PROCESS, SeccompData,
};
use crate::error::{CompileError, RuleError};
use crate::guards::{CLONE_NAMESPACE_FLAGS, DENIED, DENIED_IOCTLS, MFD_NOEXEC_SEAL};
use crate::{
    Arch, StrictRejection, SyscallName, X32_SYSCALL_BIT, strict_listing_warning, strict_rejection,
    syscall_number,
};

/// Maximum number of syscalls a strict allowlist may name (per architecture).
pub const MAX_STRICT_SYSCALLS: usize = 512;

/// A seccomp profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Profile {
    /// Default allow; the reviewed escape surface is denied.
    DenyKnownEscapeSurface,
    /// The fixed escape-surface guards first (the specification's deny set,
    /// the `clone` namespace-flag and `ioctl` terminal guards, and every
    /// reviewed addition the list does not name: `EPERM`; `clone3`:
    /// `ENOSYS`), then only the listed syscalls; everything else kills the
    /// process.
    StrictAllowlist(BTreeSet<SyscallName>),
    /// Default allow with only the architecture and x32 checks: the base of
    /// a filter whose only purpose is the launch's extra guards (an
    /// executable allowlist without a seccomp profile).
    Baseline,
}

impl Profile {
    /// The profile's name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Profile::DenyKnownEscapeSurface => "deny-known-escape-surface",
            Profile::StrictAllowlist(_) => "strict-allowlist",
            Profile::Baseline => "baseline",
        }
    }
}

/// What the filter returns for a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Run the syscall.
    Allow,
    /// Fail the syscall with this errno without running it.
    Errno(u16),
    /// `SECCOMP_RET_KILL_PROCESS`.
    KillProcess,
}

impl Action {
    /// The `SECCOMP_RET_*` value.
    pub fn to_ret(self) -> u32 {
        match self {
            Action::Allow => SECCOMP_RET_ALLOW,
            Action::Errno(e) => SECCOMP_RET_ERRNO | u32::from(e),
            Action::KillProcess => SECCOMP_RET_KILL_PROCESS,
        }
    }

    /// The action of a `SECCOMP_RET_*` value, if it is one of ours.
    pub fn from_ret(ret: u32) -> Option<Action> {
        match ret {
            SECCOMP_RET_ALLOW => Some(Action::Allow),
            SECCOMP_RET_KILL_PROCESS => Some(Action::KillProcess),
            r if r & !SECCOMP_RET_DATA == SECCOMP_RET_ERRNO => {
                Some(Action::Errno((r & SECCOMP_RET_DATA) as u16))
            }
            _ => None,
        }
    }
}

/// A condition on one syscall argument. Only the low 32 bits of the argument
/// are inspected (see [`crate::guards`] for why that is exact for `clone` and
/// `ioctl`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArgCond {
    /// `(arg & mask) != 0` on the low 32 bits.
    AnyBitsLow32 {
        /// The argument index, 0 to 5.
        arg: u8,
        /// The bits tested, never 0.
        mask: u32,
    },
    /// The low 32 bits equal one of `values` (sorted, no duplicates).
    EqualsLow32 {
        /// The argument index, 0 to 5.
        arg: u8,
        /// The values compared, at least one.
        values: Vec<u32>,
    },
    /// `(arg & mask) == 0` on the low 32 bits.
    NoBitsLow32 {
        /// The argument index, 0 to 5.
        arg: u8,
        /// The bits that must all be clear.
        mask: u32,
    },
}

impl ArgCond {
    /// `(arg & mask) != 0`; `mask` must be nonzero and `arg` below 6.
    pub fn any_bits_low32(arg: u8, mask: u32) -> Result<ArgCond, CompileError> {
        if arg >= 6 {
            return Err(CompileError::InvalidRule(RuleError::ArgumentIndex { arg }));
        }
        if mask == 0 {
            return Err(CompileError::InvalidRule(RuleError::ZeroMask));
        }
        Ok(ArgCond::AnyBitsLow32 { arg, mask })
    }

    /// The low 32 bits equal one of `values`; at least one value, `arg`
    /// below 6.
    pub fn equals_low32(arg: u8, values: &[u32]) -> Result<ArgCond, CompileError> {
        if arg >= 6 {
            return Err(CompileError::InvalidRule(RuleError::ArgumentIndex { arg }));
        }
        let set: BTreeSet<u32> = values.iter().copied().collect();
        if set.is_empty() {
            return Err(CompileError::InvalidRule(RuleError::NoValues));
        }
        Ok(ArgCond::EqualsLow32 {
            arg,
            values: set.into_iter().collect(),
        })
    }

    /// The argument index the condition reads.
    pub fn arg(&self) -> u8 {
        match self {
            ArgCond::AnyBitsLow32 { arg, .. }
            | ArgCond::EqualsLow32 { arg, .. }
            | ArgCond::NoBitsLow32 { arg, .. } => *arg,
        }
    }

    /// Whether the condition holds for `data`.
    pub fn holds(&self, data: &SeccompData) -> bool {
        let low = |arg: u8| data.args[usize::from(arg)] as u32;
        match self {
            ArgCond::AnyBitsLow32 { arg, mask } => low(*arg) & mask != 0,
            ArgCond::EqualsLow32 { arg, values } => values.contains(&low(*arg)),
            ArgCond::NoBitsLow32 { arg, mask } => low(*arg) & mask == 0,
        }
    }
}

/// A fixed guard: when syscall `nr` is made and `cond` holds (or there is no
/// condition), the filter returns `action`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The syscall's name.
    pub name: &'static str,
    /// The syscall's number on the rule set's architecture.
    pub nr: u32,
    /// The argument condition; `None` guards every call.
    pub cond: Option<ArgCond>,
    /// What the filter returns when the guard applies (never `Allow`).
    pub action: Action,
}

/// What happens to a syscall no guard decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// Allow everything else.
    AllowAll,
    /// Allow these numbers; kill the process for everything else.
    AllowOnly(BTreeSet<u32>),
}

/// The decision procedure for one syscall number once the architecture and
/// x32 checks have passed: the conditional guards to test in order, then the
/// action if none matched. Equal decisions for neighbouring numbers merge
/// into one range in the generated program.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NrDecision {
    /// The argument conditions tested in order, each with its action.
    pub conditional: Vec<(ArgCond, Action)>,
    /// The action when no condition matches.
    pub otherwise: Action,
}

/// A validated rule set for one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSet {
    arch: Arch,
    kill_x32: bool,
    guards: Vec<Guard>,
    fallback: Fallback,
    skipped: Vec<String>,
}

impl RuleSet {
    /// Build and validate a rule set. On x86_64 the x32 ABI is always killed.
    ///
    /// Errors: a guard for a number the architecture does not have, a guard
    /// that allows, a guard after an unconditional guard for the same number
    /// (unreachable), an empty allow set, an allowed number the architecture
    /// does not have, more than [`MAX_STRICT_SYSCALLS`] allowed numbers, or
    /// an allow set without `execve`.
    pub fn new(
        arch: Arch,
        guards: Vec<Guard>,
        fallback: Fallback,
    ) -> Result<RuleSet, CompileError> {
        let mut closed = BTreeSet::new();
        for g in &guards {
            // The number must be one the architecture has. A guard made from
            // the tables names its syscall, which confirms that with a binary
            // search by name; only otherwise are the numbers scanned.
            let known = crate::syscall_number(arch, g.name) == Some(g.nr)
                || crate::syscall_name(arch, g.nr).is_some();
            if !known {
                return Err(CompileError::InvalidRule(RuleError::UnknownGuardNumber {
                    name: g.name,
                    nr: g.nr,
                    arch,
                }));
            }
            if g.action == Action::Allow {
                return Err(CompileError::InvalidRule(RuleError::AllowingGuard {
                    name: g.name,
                }));
            }
            if closed.contains(&g.nr) {
                return Err(CompileError::InvalidRule(RuleError::UnreachableGuard {
                    name: g.name,
                }));
            }
            if g.cond.is_none() {
                closed.insert(g.nr);
            }
        }
        if let Fallback::AllowOnly(set) = &fallback {
            if set.is_empty() {
                return Err(CompileError::EmptyAllowlist);
            }
            if set.len() > MAX_STRICT_SYSCALLS {
                return Err(CompileError::TooManySyscalls {
                    arch,
                    count: set.len(),
                    max: MAX_STRICT_SYSCALLS,
                });
            }
            if let Some(nr) = set
                .iter()
                .find(|&&nr| crate::syscall_name(arch, nr).is_none())
            {
                return Err(CompileError::InvalidRule(RuleError::UnknownAllowedNumber {
                    nr: *nr,
                    arch,
                }));
            }
            let execve = syscall_number(arch, "execve");
            if !execve.is_some_and(|nr| set.contains(&nr)) {
                return Err(CompileError::MissingExecve { arch });
            }
        }
        Ok(RuleSet {
            arch,
            kill_x32: arch == Arch::X86_64,
            guards,
            fallback,
            skipped: Vec::new(),
        })
    }

    /// The fixed guards of both profiles for `arch`, in order: the `clone`
    /// namespace-flag guard, `clone3` (ENOSYS), the `ioctl` request guard,
    /// then every [`DENIED`] syscall the architecture has (EPERM).
    pub fn fixed_guards(arch: Arch) -> Vec<Guard> {
        let mut guards = Vec::new();
        let mut push = |name: &'static str, cond: Option<ArgCond>, action: Action| {
            if let Some(nr) = syscall_number(arch, name) {
                guards.push(Guard {
                    name,
                    nr,
                    cond,
                    action,
                });
            }
        };
        push(
            "clone",
            Some(ArgCond::AnyBitsLow32 {
                arg: 0,
                mask: CLONE_NAMESPACE_FLAGS,
            }),
            Action::Errno(EPERM),
        );
        push("clone3", None, Action::Errno(ENOSYS));
        let mut requests: Vec<u32> = DENIED_IOCTLS.iter().map(|&(_, v)| v).collect();
        requests.sort_unstable();
        push(
            "ioctl",
            Some(ArgCond::EqualsLow32 {
                arg: 1,
                values: requests,
            }),
            Action::Errno(EPERM),
        );
        for d in DENIED {
            push(d.name, None, Action::Errno(EPERM));
        }
        guards
    }

    /// The guard a launch adds whenever it selects an executable allowlist:
    /// `memfd_create` without `MFD_NOEXEC_SEAL` fails with `EACCES` (as the
    /// kernel's own `vm.memfd_noexec = 2` answers), so no memfd can ever be
    /// executed. Landlock's execute right does not cover memfds, which live
    /// on an internal mount outside every path rule.
    pub fn exec_allowlist_guard(arch: Arch) -> Option<Guard> {
        syscall_number(arch, "memfd_create").map(|nr| Guard {
            name: "memfd_create",
            nr,
            cond: Some(ArgCond::NoBitsLow32 {
                arg: 1,
                mask: MFD_NOEXEC_SEAL,
            }),
            action: Action::Errno(EACCES),
        })
    }

    /// The rule set of `profile` on `arch`, without launch extras.
    pub fn for_profile(profile: &Profile, arch: Arch) -> Result<RuleSet, CompileError> {
        RuleSet::for_launch(profile, arch, false)
    }

    /// The rule set of `profile` on `arch`; with `exec_allowlist`, plus
    /// [`RuleSet::exec_allowlist_guard`].
    ///
    /// For a strict list, a name that exists on another supported
    /// architecture but not on `arch` is skipped for `arch` and reported by
    /// [`RuleSet::skipped`] (every [`SyscallName`] exists on some supported
    /// architecture); `clone3` or a syscall of the specification's fixed
    /// deny set ([`crate::strict_rejection`]) is an error, as is a list that
    /// resolves to no `execve` or to more than [`MAX_STRICT_SYSCALLS`]
    /// numbers on `arch`.
    ///
    /// The strict rule set keeps the fixed guards in front of the list: the
    /// specification's deny set answers `EPERM`, `clone` with a namespace
    /// flag and `ioctl(TIOCSTI/TIOCLINUX)` answer `EPERM` whether or not
    /// `clone` or `ioctl` is listed, and `clone3` answers `ENOSYS`. A
    /// reviewed addition ([`crate::guards::Origin::Addition`]) answers
    /// `EPERM` unless the list names it, which lifts its guard. The
    /// executable-allowlist guard applies only to a listed `memfd_create`.
    /// Every other syscall is allowed when listed and kills the process
    /// otherwise.
    pub fn for_launch(
        profile: &Profile,
        arch: Arch,
        exec_allowlist: bool,
    ) -> Result<RuleSet, CompileError> {
        let extra: Vec<Guard> = if exec_allowlist {
            RuleSet::exec_allowlist_guard(arch).into_iter().collect()
        } else {
            Vec::new()
        };
        match profile {
            Profile::Baseline => RuleSet::new(arch, extra, Fallback::AllowAll),
            Profile::DenyKnownEscapeSurface => {
                let mut guards = RuleSet::fixed_guards(arch);
                guards.extend(extra);
                RuleSet::new(arch, guards, Fallback::AllowAll)
            }
            Profile::StrictAllowlist(names) => {
                if names.is_empty() {
                    return Err(CompileError::EmptyAllowlist);
                }
                let mut allow = BTreeSet::new();
                let mut skipped = Vec::new();
                for &name in names {
                    if let Some(why) = strict_rejection(name.as_str()) {
                        return Err(CompileError::RejectedSyscall {
                            name: name.to_string(),
                            reason: why,
                        });
                    }
                    // A `SyscallName` is known on some architecture.
                    match name.number(arch) {
                        Some(nr) => {
                            allow.insert(nr);
                        }
                        None => skipped.push(name.to_string()),
                    }
                }
                // Checked before `RuleSet::new`, so a list whose names all
                // lack a number here reports the missing `execve` rather
                // than an empty list.
                if !syscall_number(arch, "execve").is_some_and(|nr| allow.contains(&nr)) {
                    return Err(CompileError::MissingExecve { arch });
                }
                // The fixed guards stay in front of the list; a listed
                // reviewed addition lifts its own guard. The launch's
                // memfd guard narrows a listed `memfd_create` only (an
                // unlisted one is killed like any unlisted syscall).
                let guards: Vec<Guard> = RuleSet::fixed_guards(arch)
                    .into_iter()
                    .filter(|g| {
                        !(names.contains(g.name) && strict_listing_warning(g.name).is_some())
                    })
                    .chain(extra.into_iter().filter(|g| allow.contains(&g.nr)))
                    .collect();
                let mut rules = RuleSet::new(arch, guards, Fallback::AllowOnly(allow))?;
                rules.skipped = skipped;
                Ok(rules)
            }
        }
    }

    /// The architecture the rule set is for.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Whether x32 syscall numbers are killed (x86_64 only).
    pub fn kills_x32(&self) -> bool {
        self.kill_x32
    }

    /// The fixed guards, in the order they are tested.
    pub fn guards(&self) -> &[Guard] {
        &self.guards
    }

    /// What happens to a syscall no guard decides.
    pub fn fallback(&self) -> &Fallback {
        &self.fallback
    }

    /// Strict-list names skipped because `arch` lacks them.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// The action for syscall numbers with no guard and not in an allow set.
    pub fn default_action(&self) -> Action {
        match self.fallback {
            Fallback::AllowAll => Action::Allow,
            Fallback::AllowOnly(_) => Action::KillProcess,
        }
    }

    /// How syscall `nr` is decided once the architecture and x32 checks
    /// have passed.
    pub fn nr_decision(&self, nr: u32) -> NrDecision {
        let mut conditional = Vec::new();
        for g in self.guards.iter().filter(|g| g.nr == nr) {
            match &g.cond {
                Some(c) => conditional.push((c.clone(), g.action)),
                None => {
                    return NrDecision {
                        conditional,
                        otherwise: g.action,
                    };
                }
            }
        }
        let otherwise = match &self.fallback {
            Fallback::AllowAll => Action::Allow,
            Fallback::AllowOnly(set) if set.contains(&nr) => Action::Allow,
            Fallback::AllowOnly(_) => Action::KillProcess,
        };
        NrDecision {
            conditional,
            otherwise,
        }
    }

    /// Syscall numbers whose decision differs from the default, ascending.
    pub fn special_numbers(&self) -> BTreeSet<u32> {
        let mut s: BTreeSet<u32> = self.guards.iter().map(|g| g.nr).collect();
        if let Fallback::AllowOnly(set) = &self.fallback {
            s.extend(set.iter().copied());
        }
        s
    }

    /// The reference semantics: what the filter must return for `data`.
    pub fn decide(&self, data: &SeccompData) -> Action {
        if data.arch != self.arch.audit_arch() {
            return Action::KillProcess;
        }
        if self.kill_x32 && data.nr & X32_SYSCALL_BIT != 0 {
            return Action::KillProcess;
        }
        for g in self.guards.iter().filter(|g| g.nr == data.nr) {
            if g.cond.as_ref().is_none_or(|c| c.holds(data)) {
                return g.action;
            }
        }
        match &self.fallback {
            Fallback::AllowAll => Action::Allow,
            Fallback::AllowOnly(set) if set.contains(&data.nr) => Action::Allow,
            Fallback::AllowOnly(_) => Action::KillProcess,
        }
    }
}

impl StrictRejection {
    /// Why the name is refused, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            StrictRejection::Clone3 => {
                "`clone3` carries its flags in memory the filter cannot inspect; it always returns ENOSYS so libc falls back to `clone`"
            }
            StrictRejection::FixedGuard => {
                "it is in the specification's fixed deny set, which the strict filter answers with EPERM before the allowlist"
            }
        }
    }
}
