//! The language's rules on a whole policy that lowering does not rely on:
//! what the checker guarantees for every policy it accepts beyond the
//! invariants of [`Policy::try_from`], stated once over the policy's fields.
//!
//! [`check_rules`] holds a policy to them. The checker asks it of every
//! policy it builds (a policy it accepted that breaks a rule is reported as
//! `splash::check::internal`), and [`crate::artifact::load`] asks it of
//! every artifact, so an artifact can hold nothing its source could not:
//! values in their ranges and units (no zero bound, no `2^64 - 1`, no
//! fraction of the unit the language counts in), no control or
//! bidirectional formatting character in the name or the arguments, no
//! duplicate Landlock target or `io` device, no guarded syscall in a strict
//! allowlist, every registered root acceptable were it activated, and the
//! aggregate quota and tmpfs bounds able to hold what they bound.

use std::collections::BTreeMap;

use super::invariants::{InvariantError, check_active_root};
use super::{
    Access, FileRootKind, Policy, PrivateTmp, Runners, SandboxPath, SeccompPolicy, SelectorId,
    SyscallName,
};

/// How a value breaks its setting's range or unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueDefect {
    /// Zero, which is no bound here.
    #[error("is zero, which is no bound")]
    Zero,
    /// `2^64 - 1`, the kernel's infinity, which the language refuses like
    /// `unlimited`.
    #[error("is 2^64 - 1, which means unlimited")]
    Infinite,
    /// Not a whole number of the unit the language writes it in (the
    /// cgroup `cpu` quota is written in milliseconds and stored in
    /// microseconds).
    #[error("is not a whole number of milliseconds")]
    Inexact,
    /// Larger than the language can write (the `cpu` rlimit in
    /// milliseconds does not fit 64 bits).
    #[error("is larger than the language can express")]
    TooLarge,
}

/// A language rule a policy breaks; see [`check_rules`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// A value outside its setting's range or unit; `field` names the
    /// field as an artifact spells it.
    #[error("`{field}` {defect} (the value is {value})")]
    Value {
        /// The field, as a path of the serialized policy.
        field: &'static str,
        /// The value.
        value: u64,
        /// What is wrong with it.
        defect: ValueDefect,
    },
    /// The policy name or a worker argument holds a control or
    /// bidirectional formatting character ([`crate::text::is_forbidden`]).
    #[error("{what} contains {} U+{:04X} at byte {offset}", char_kind(*.character), u32::from(*.character))]
    ForbiddenCharacter {
        /// `the policy name` or `worker argument N`.
        what: String,
        /// The byte offset of the first such character.
        offset: usize,
        /// The character.
        character: char,
    },
    /// A limit runner that sets no rlimit (the source's `limits` block
    /// must set one).
    #[error("the limit runner sets no limit")]
    EmptyLimits,
    /// An `io.max` entry that sets no key.
    #[error("the `io` entry of device {major}:{minor} sets no limit")]
    EmptyIo {
        /// The device's major number.
        major: u32,
        /// The device's minor number.
        minor: u32,
    },
    /// `io.max` entries not in strictly increasing device order: a device
    /// given twice, or the entries out of the order the checker sorts
    /// them in.
    #[error("the `io` entries are not one per device in device order (at device {major}:{minor})")]
    IoOrder {
        /// The device's major number.
        major: u32,
        /// The device's minor number.
        minor: u32,
    },
    /// A Landlock `allow-exec` target listed twice.
    #[error("landlock target `{0}` is listed more than once")]
    DuplicateLandlockTarget(SandboxPath),
    /// A strict allowlist naming `clone3` or a member of the fixed deny
    /// set, which the language refuses (the filter denies them before the
    /// list).
    #[error("the strict seccomp allowlist names `{0}`, which cannot be allowed")]
    GuardedSyscall(SyscallName),
    /// A read-only root with a project quota.
    #[error("read-only root `{0}` has a quota")]
    QuotaOnReadOnly(SelectorId),
    /// A registered root that would be refused if it were activated: the
    /// checker refuses registering it (an unbounded read-write root without
    /// the escape hatch, or a quota root without what a quota needs).
    #[error("registered root: {0}")]
    Root(InvariantError),
    /// The distinct project quotas allow more than the aggregate quota
    /// (`what` is `bytes` or `inodes`; `total` is `None` past 2^64).
    #[error("the project quotas allow {} {what} in total, above the aggregate {max}", total.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string()))]
    AggregateQuotaExceeded {
        /// `bytes` or `inodes`.
        what: &'static str,
        /// The sum of the distinct projects' ceilings.
        total: Option<u64>,
        /// The aggregate ceiling.
        max: u64,
    },
    /// An `identity` uid or gid of 0 (root) or `(uid_t) -1`.
    #[error("the worker identity's {what} {id} is not an unprivileged id (1 to 4294967294)")]
    IdentityId {
        /// `uid` or `gid`.
        what: &'static str,
        /// The id.
        id: u32,
    },
    /// `identity dynamic` with a read-write host root: a later session may
    /// get the same uid and own what this one wrote.
    #[error("a dynamic worker identity cannot have read-write host root `{0}`")]
    DynamicIdentityWritableRoot(SelectorId),
    /// An aggregate tmpfs bound with an unbounded private `/tmp`.
    #[error("an aggregate tmpfs bound requires a bounded private `/tmp`")]
    AggregateTmpfsUnboundedTmp,
    /// A tmpfs selection that can never be activated under the aggregate
    /// tmpfs bound: the private `/tmp` alone (`root` is `None`), or one
    /// ephemeral root with it.
    #[error("{} may hold {total} bytes, above the aggregate tmpfs bound of {max}", root.as_ref().map_or_else(|| "the private `/tmp`".to_string(), |r| format!("ephemeral root `{r}` with the private `/tmp`")))]
    AggregateTmpfsExceeded {
        /// The root, if the excess is not the private `/tmp` alone.
        root: Option<SelectorId>,
        /// What the selection may hold, in bytes.
        total: u128,
        /// The bound.
        max: u64,
    },
}

fn char_kind(c: char) -> &'static str {
    if c.is_control() {
        "control character"
    } else {
        "bidirectional formatting character"
    }
}

/// A value of a setting that the language writes as a finite bound.
fn finite(field: &'static str, value: u64) -> Result<(), RuleError> {
    if value == u64::MAX {
        return Err(RuleError::Value {
            field,
            value,
            defect: ValueDefect::Infinite,
        });
    }
    Ok(())
}

/// A finite value that must not be zero.
fn nonzero(field: &'static str, value: u64) -> Result<(), RuleError> {
    if value == 0 {
        return Err(RuleError::Value {
            field,
            value,
            defect: ValueDefect::Zero,
        });
    }
    finite(field, value)
}

fn text(what: impl FnOnce() -> String, s: &str) -> Result<(), RuleError> {
    match crate::text::first_forbidden(s) {
        Some((offset, character)) => Err(RuleError::ForbiddenCharacter {
            what: what(),
            offset,
            character,
        }),
        None => Ok(()),
    }
}

/// Holds `policy` to the language's rules beyond its invariants (see the
/// module documentation); the first rule broken is returned.
///
/// Every policy the checker accepts passes; [`crate::artifact::load`]
/// refuses an artifact whose policy does not.
///
/// # Errors
///
/// The first [`RuleError`], checked in the order of the policy's fields.
pub fn check_rules(policy: &Policy) -> Result<(), RuleError> {
    let raw = policy.raw();
    text(|| "the policy name".to_string(), &raw.name)?;
    for (i, arg) in raw.worker_args.iter().enumerate() {
        text(|| format!("worker argument {}", i + 1), arg)?;
    }
    roots(policy)?;
    if let Some(q) = raw.aggregate_quota {
        nonzero("aggregate_quota.max_bytes", q.max_bytes)?;
        nonzero("aggregate_quota.max_inodes", q.max_inodes)?;
        aggregate_quota(policy, q.max_bytes, q.max_inodes)?;
    }
    if let Some(max) = raw.aggregate_ephemeral_max_bytes {
        nonzero("aggregate_ephemeral_max_bytes", max)?;
        aggregate_tmpfs(policy, max)?;
    }
    if let SeccompPolicy::StrictAllowlist { syscalls } = &raw.seccomp
        && let Some(s) = syscalls
            .iter()
            .find(|s| splash_seccomp::strict_rejection(s.as_str()).is_some())
    {
        return Err(RuleError::GuardedSyscall(*s));
    }
    if let Some(l) = raw.runners.limits() {
        let fields = match raw.runners {
            Runners::Combined { .. } => &COMBINED_LIMIT_FIELDS,
            _ => &SEPARATE_LIMIT_FIELDS,
        };
        limits(l, fields)?;
    }
    if let Some(allow) = raw.runners.landlock_allow() {
        for (i, p) in allow.iter().enumerate() {
            if allow[..i].contains(p) {
                return Err(RuleError::DuplicateLandlockTarget(p.clone()));
            }
        }
    }
    if let Some(cg) = &raw.cgroup {
        cgroup(cg)?;
    }
    if let Some(w) = raw.watchdog {
        nonzero("watchdog.session_deadline_ms", w.session_deadline_ms)?;
        if let Some(call) = w.call_deadline_ms {
            nonzero("watchdog.call_deadline_ms", call)?;
        }
    }
    if let Some(identity) = raw.worker_identity {
        worker_identity(policy, identity)?;
    }
    Ok(())
}

/// A fixed identity names unprivileged ids; a dynamic one has no read-write
/// host root.
fn worker_identity(policy: &Policy, identity: super::WorkerIdentity) -> Result<(), RuleError> {
    match identity {
        super::WorkerIdentity::Fixed { uid, gid } => {
            for (what, id) in [("uid", uid), ("gid", gid)] {
                if !super::WorkerIdentity::valid_id(u64::from(id)) {
                    return Err(RuleError::IdentityId { what, id });
                }
            }
        }
        super::WorkerIdentity::Dynamic => {
            if let Some(root) = policy.file_roots().iter().find(|r| {
                matches!(
                    r.kind,
                    FileRootKind::Host {
                        access: super::Access::ReadWrite,
                        ..
                    }
                )
            }) {
                return Err(RuleError::DynamicIdentityWritableRoot(root.id.clone()));
            }
        }
    }
    Ok(())
}

/// Every registered root as the checker takes it: a quota only on a
/// read-write root, nonzero finite ceilings, and acceptable were it active.
fn roots(policy: &Policy) -> Result<(), RuleError> {
    for root in policy.file_roots() {
        if let FileRootKind::Host {
            access,
            quota: Some(q),
            ..
        } = &root.kind
        {
            if *access == Access::ReadOnly {
                return Err(RuleError::QuotaOnReadOnly(root.id.clone()));
            }
            finite("file_roots.kind.host.quota.max_bytes", q.max_bytes)?;
            finite("file_roots.kind.host.quota.max_inodes", q.max_inodes)?;
        }
        check_active_root(policy, root).map_err(RuleError::Root)?;
    }
    Ok(())
}

/// Each distinct project counted once, at its largest ceilings; the sums
/// fit the aggregate.
fn aggregate_quota(policy: &Policy, max_bytes: u64, max_inodes: u64) -> Result<(), RuleError> {
    let mut per_project: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for root in policy.file_roots() {
        if let FileRootKind::Host { quota: Some(q), .. } = &root.kind {
            let e = per_project.entry(q.project_id).or_insert((0, 0));
            e.0 = e.0.max(q.max_bytes);
            e.1 = e.1.max(q.max_inodes);
        }
    }
    let bytes = per_project
        .values()
        .try_fold(0u64, |s, (b, _)| s.checked_add(*b));
    let inodes = per_project
        .values()
        .try_fold(0u64, |s, (_, i)| s.checked_add(*i));
    for (total, max, what) in [(bytes, max_bytes, "bytes"), (inodes, max_inodes, "inodes")] {
        if total.is_none_or(|t| t > max) {
            return Err(RuleError::AggregateQuotaExceeded { what, total, max });
        }
    }
    Ok(())
}

/// No selection is refused by the aggregate tmpfs bound for certain: the
/// private `/tmp` is bounded and fits, and (when any root can be active)
/// each ephemeral root fits with it.
fn aggregate_tmpfs(policy: &Policy, max: u64) -> Result<(), RuleError> {
    let tmp = match policy.tmp() {
        PrivateTmp::Unbounded => return Err(RuleError::AggregateTmpfsUnboundedTmp),
        PrivateTmp::Bounded { size_bytes } => u128::from(size_bytes),
        PrivateTmp::Off => 0,
    };
    if tmp > u128::from(max) {
        return Err(RuleError::AggregateTmpfsExceeded {
            root: None,
            total: tmp,
            max,
        });
    }
    if policy.max_active_file_roots() == 0 {
        return Ok(());
    }
    for root in policy.file_roots() {
        if let FileRootKind::Ephemeral { size_bytes } = root.kind {
            let total = tmp + u128::from(size_bytes);
            if total > u128::from(max) {
                return Err(RuleError::AggregateTmpfsExceeded {
                    root: Some(root.id.clone()),
                    total,
                    max,
                });
            }
        }
    }
    Ok(())
}

/// The serialized paths of the rlimits, in the order of
/// [`super::ResourceLimits`]'s fields: CPU seconds, address space, process
/// count, open files, file size.
type LimitFields = [&'static str; 5];

const SEPARATE_LIMIT_FIELDS: LimitFields = [
    "runners.limit.limits.cpu_seconds",
    "runners.limit.limits.address_space_bytes",
    "runners.limit.limits.process_count",
    "runners.limit.limits.open_files",
    "runners.limit.limits.file_size_bytes",
];

const COMBINED_LIMIT_FIELDS: LimitFields = [
    "runners.limits.cpu_seconds",
    "runners.limits.address_space_bytes",
    "runners.limits.process_count",
    "runners.limits.open_files",
    "runners.limits.file_size_bytes",
];

/// The rlimits: at least one, each nonzero and finite; the CPU time fits
/// 64 bits in milliseconds, as the language writes it.
fn limits(l: &super::ResourceLimits, fields: &LimitFields) -> Result<(), RuleError> {
    if l.is_empty() {
        return Err(RuleError::EmptyLimits);
    }
    if let Some(s) = l.cpu_seconds {
        nonzero(fields[0], s)?;
        if s > u64::MAX / 1000 {
            return Err(RuleError::Value {
                field: fields[0],
                value: s,
                defect: ValueDefect::TooLarge,
            });
        }
    }
    for (field, v) in [
        (fields[1], l.address_space_bytes),
        (fields[2], l.process_count),
        (fields[3], l.open_files),
        (fields[4], l.file_size_bytes),
    ] {
        if let Some(v) = v {
            nonzero(field, v)?;
        }
    }
    Ok(())
}

/// The cgroup values in their ranges and units; `io.max` one entry per
/// device in device order, each setting a key.
fn cgroup(cg: &super::CgroupPolicy) -> Result<(), RuleError> {
    let l = &cg.limits;
    if let Some(micros) = l.cpu_quota_micros {
        nonzero("cgroup.limits.cpu_quota_micros", micros)?;
        if micros % 1000 != 0 {
            return Err(RuleError::Value {
                field: "cgroup.limits.cpu_quota_micros",
                value: micros,
                defect: ValueDefect::Inexact,
            });
        }
    }
    if let Some(v) = l.memory_max_bytes {
        nonzero("cgroup.limits.memory_max_bytes", v)?;
    }
    if let Some(v) = l.memory_swap_max_bytes {
        finite("cgroup.limits.memory_swap_max_bytes", v)?;
    }
    if let Some(v) = l.pids_max {
        nonzero("cgroup.limits.pids_max", v)?;
    }
    let mut previous: Option<(u32, u32)> = None;
    for io in &l.io_max {
        let device = (io.major, io.minor);
        if previous.is_some_and(|p| p >= device) {
            return Err(RuleError::IoOrder {
                major: io.major,
                minor: io.minor,
            });
        }
        previous = Some(device);
        let keys = [
            ("cgroup.limits.io_max.rbps", io.rbps),
            ("cgroup.limits.io_max.wbps", io.wbps),
            ("cgroup.limits.io_max.riops", io.riops),
            ("cgroup.limits.io_max.wiops", io.wiops),
        ];
        if keys.iter().all(|(_, v)| v.is_none()) {
            return Err(RuleError::EmptyIo {
                major: io.major,
                minor: io.minor,
            });
        }
        for (field, v) in keys {
            if let Some(v) = v {
                finite(field, v)?;
            }
        }
    }
    nonzero("cgroup.join_timeout_ms", cg.join_timeout_ms)?;
    Ok(())
}
