//! The static invariants of a [`Policy`]: what every policy the checker
//! accepts holds, and what a hand-edited compiled artifact is held to as
//! well. [`Policy::try_from`] runs `check_invariants`; lowering checks each
//! active root with [`check_active_root`]. They are deliberately much smaller
//! than the checker and report only the first violation; the checker maps
//! the defects it can meet to diagnostics (`model/rules.rs`).

use crate::model::{
    Access, FileRoot, FileRootKind, MAX_ACTIVE_FILE_ROOTS_CEILING, MAX_LANDLOCK_TARGETS,
    MAX_SOCKET_PATH_BYTES, MAX_STRICT_SYSCALLS, MAX_TMPFS_BYTES, Policy, PrivateTmp, RawPolicy,
    Runners, SandboxPath, SeccompPolicy, SelectorId,
};

/// A policy invariant that lowering relies on does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvariantError {
    /// Descriptor-pinned executables require descriptor-pinned mounts.
    #[error("descriptor-pinned executables require descriptor-pinned mounts")]
    PinExecutablesWithoutPinMounts,
    /// A network broker requires descriptor-pinned mounts.
    #[error("a network broker requires descriptor-pinned mounts")]
    BrokerWithoutPinMounts,
    /// A network broker must serve at least one network_origin id.
    #[error("a network broker must serve at least one network_origin id")]
    BrokerWithoutIds,
    /// The worker-visible broker socket path is longer than a Unix socket
    /// address holds.
    #[error(
        "the network broker socket `{0}` is longer than the {MAX_SOCKET_PATH_BYTES} bytes a Unix socket path holds"
    )]
    BrokerSocketPathTooLong(String),
    /// Bounded writes require no further user namespaces.
    #[error("bounded writes require no further user namespaces")]
    BoundedWritesWithoutUserns,
    /// Bounded writes forbid an unbounded private `/tmp`.
    #[error("bounded writes forbid an unbounded private `/tmp`")]
    BoundedWritesUnboundedTmp,
    /// A tmpfs size outside 1 byte to [`MAX_TMPFS_BYTES`].
    #[error("{what} size {size} is outside 1..={MAX_TMPFS_BYTES} bytes")]
    TmpfsSize {
        /// The tmpfs concerned.
        what: Tmpfs,
        /// The size.
        size: u64,
    },
    /// An active file-root maximum above [`MAX_ACTIVE_FILE_ROOTS_CEILING`].
    #[error(
        "the active file-root maximum {0} is above the ceiling {MAX_ACTIVE_FILE_ROOTS_CEILING}"
    )]
    ActiveRootCeiling(u16),
    /// A file root id registered more than once.
    #[error("file root id `{0}` is registered more than once")]
    DuplicateRoot(SelectorId),
    /// Two mounts overlap.
    #[error("{a} and {b} overlap")]
    Overlap {
        /// The first mount (boxed: this error is rare and keeps the
        /// others small).
        a: Box<Destination>,
        /// The second mount.
        b: Box<Destination>,
    },
    /// A program outside every read-only runtime mount.
    #[error("{what} `{path}` is not inside a read-only runtime mount")]
    OutsideRuntime {
        /// The program concerned.
        what: Program,
        /// The path involved.
        path: SandboxPath,
    },
    /// Two controls use the same sandbox path.
    #[error("{a} and {b} use the same path `{path}`")]
    SamePath {
        /// The first program.
        a: Program,
        /// The second program.
        b: Program,
        /// The path involved.
        path: SandboxPath,
    },
    /// A limit runner is required but none is configured.
    #[error("a limit runner is required but none is configured")]
    MissingLimitRunner,
    /// Cgroup v2 is required but no cgroup policy is configured.
    #[error("cgroup v2 is required but no cgroup policy is configured")]
    MissingCgroup,
    /// The cgroup policy selects no finite controller limit.
    #[error("the cgroup policy selects no finite controller limit")]
    EmptyCgroup,
    /// Separate runners with neither a limit runner nor a Landlock runner
    /// (a policy without runners has the mode `none`).
    #[error("the separate runners hold neither a limit runner nor a Landlock runner")]
    NoSeparateRunner,
    /// A strict seccomp allowlist that breaks a rule (which one).
    #[error("the strict seccomp allowlist {0}")]
    StrictAllowlist(AllowlistDefect),
    /// More Landlock targets than [`MAX_LANDLOCK_TARGETS`] (the count).
    #[error(
        "the landlock runner lists {0} explicit targets; at most {MAX_LANDLOCK_TARGETS} are allowed"
    )]
    TooManyLandlockTargets(usize),
    /// A worker argument with a NUL byte.
    #[error("a worker argument contains a NUL byte")]
    WorkerArgumentNul,
    /// An active read-write host root without a project quota, and the
    /// policy does not allow unbounded host writes.
    #[error(
        "active read-write host root `{0}` has no project quota and the policy does not allow unbounded host writes"
    )]
    UnboundedWritableRoot(SelectorId),
    /// An active read-write host root without a project quota under
    /// bounded writes.
    #[error("active read-write host root `{0}` has no project quota, which bounded writes forbid")]
    UnverifiedRootUnderBoundedWrites(SelectorId),
    /// An active read-write host root without a project quota under an
    /// aggregate quota bound.
    #[error(
        "active read-write host root `{0}` has no project quota, which an aggregate quota bound forbids"
    )]
    RawRootUnderAggregateQuota(SelectorId),
    /// A quota root that breaks a quota rule.
    #[error("quota root `{id}` {reason}")]
    QuotaRoot {
        /// The root's id.
        id: SelectorId,
        /// Why.
        reason: QuotaRootDefect,
    },
}

/// A program a policy names: the worker, a runner or an allowed target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Program {
    /// The worker.
    Worker,
    /// The combined runner.
    CombinedRunner,
    /// The limit runner.
    LimitRunner,
    /// The Landlock runner.
    LandlockRunner,
    /// An executable the Landlock runner allows.
    AllowedExecutable,
    /// A descriptor-pinned executable.
    Executable,
}

impl std::fmt::Display for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Worker => "the worker",
            Self::CombinedRunner => "the combined runner",
            Self::LimitRunner => "the limit runner",
            Self::LandlockRunner => "the landlock runner",
            Self::AllowedExecutable => "the allowed executable",
            Self::Executable => "an executable",
        })
    }
}

/// Which rule a strict seccomp allowlist breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllowlistDefect {
    /// It lists no system call.
    #[error("is empty")]
    Empty,
    /// It lists more than [`MAX_STRICT_SYSCALLS`] system calls.
    #[error("has more than {MAX_STRICT_SYSCALLS} entries")]
    TooLong,
    /// It does not allow `execve`.
    #[error("does not allow `execve`")]
    NoExecve,
}

/// Which quota rule a quota root breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuotaRootDefect {
    /// The policy does not pin mounts by descriptor.
    #[error("requires descriptor-pinned mounts")]
    NeedsPinMounts,
    /// The policy allows further user namespaces.
    #[error("requires no further user namespaces")]
    NeedsNoUserNamespaces,
    /// The policy sets no aggregate quota bound.
    #[error("requires an aggregate quota bound")]
    NeedsAggregate,
    /// The root's project id is 0.
    #[error("has project id 0")]
    ProjectZero,
    /// The root's byte or inode ceiling is 0.
    #[error("has a zero byte or inode ceiling")]
    ZeroCeiling,
}

/// What the storage rules of a file root look at in the rest of a policy:
/// the one statement of each rule, shared by the checker (which has these
/// facts before it has a policy) and [`check_active_root`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageFacts {
    /// `pin mounts`.
    pub pin_mounts: bool,
    /// `user-namespaces none`.
    pub no_further_user_namespaces: bool,
    /// `quota aggregate`.
    pub aggregate_quota: bool,
    /// `writes bounded`.
    pub bounded_writes: bool,
    /// `host-writes unbounded`.
    pub allow_unbounded_host_writes: bool,
}

impl StorageFacts {
    /// The facts of `policy`.
    pub(crate) fn of(policy: &RawPolicy) -> Self {
        StorageFacts {
            pin_mounts: policy.pin_mounts,
            no_further_user_namespaces: policy.no_further_user_namespaces,
            aggregate_quota: policy.aggregate_quota.is_some(),
            bounded_writes: policy.bounded_writes,
            allow_unbounded_host_writes: policy.allow_unbounded_host_writes,
        }
    }

    /// What a root with a project quota lacks of the rest of the policy,
    /// every defect in the order the checker reports them.
    pub fn quota_root_defects(&self) -> impl Iterator<Item = QuotaRootDefect> {
        [
            (self.pin_mounts, QuotaRootDefect::NeedsPinMounts),
            (
                self.no_further_user_namespaces,
                QuotaRootDefect::NeedsNoUserNamespaces,
            ),
            (self.aggregate_quota, QuotaRootDefect::NeedsAggregate),
        ]
        .into_iter()
        .filter_map(|(present, defect)| (!present).then_some(defect))
    }

    /// Why a read-write host root without a quota is refused, if it is:
    /// `writes bounded` refuses it first, then the default without
    /// `host-writes unbounded`, then an aggregate it would escape.
    pub fn unquoted_writable_root_defect(&self) -> Option<UnquotedRootDefect> {
        if self.bounded_writes {
            Some(UnquotedRootDefect::UnderBoundedWrites)
        } else if !self.allow_unbounded_host_writes {
            Some(UnquotedRootDefect::Unbounded)
        } else if self.aggregate_quota {
            Some(UnquotedRootDefect::UnderAggregate)
        } else {
            None
        }
    }
}

/// Why a read-write host root without a quota is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnquotedRootDefect {
    /// `writes bounded` refuses unverified persistent writes.
    UnderBoundedWrites,
    /// Unbounded host writes are refused unless `host-writes unbounded`.
    Unbounded,
    /// The aggregate quota would not count it.
    UnderAggregate,
}

/// A tmpfs whose size a policy sets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Tmpfs {
    /// The private `/tmp`.
    PrivateTmp,
    /// The ephemeral root with this id.
    EphemeralRoot(SelectorId),
}

impl std::fmt::Display for Tmpfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PrivateTmp => f.write_str("private `/tmp`"),
            Self::EphemeralRoot(id) => write!(f, "ephemeral root `{id}`"),
        }
    }
}

/// A worker-visible mount destination, as an overlap names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Destination {
    /// The sandbox's `/proc`.
    Proc,
    /// The sandbox's `/dev`.
    Dev,
    /// The private `/tmp`.
    PrivateTmp,
    /// A runtime mount at this destination.
    RuntimeMount(SandboxPath),
    /// A file root.
    FileRoot {
        /// The root's id.
        id: SelectorId,
        /// Where it is mounted.
        destination: SandboxPath,
    },
    /// The network broker's directory at this destination.
    NetworkBroker(SandboxPath),
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Proc => f.write_str("`/proc`"),
            Self::Dev => f.write_str("`/dev`"),
            Self::PrivateTmp => f.write_str("the private `/tmp`"),
            Self::RuntimeMount(d) => write!(f, "runtime mount `{d}`"),
            Self::FileRoot { id, destination } => {
                write!(f, "file root `{id}` at `{destination}`")
            }
            Self::NetworkBroker(d) => write!(f, "the network broker at `{d}`"),
        }
    }
}

pub(crate) fn fixed(path: &str) -> SandboxPath {
    SandboxPath::new(path).expect("fixed sandbox paths are valid absolute paths")
}

/// The static invariants lowering relies on, checked whenever a [`Policy`]
/// is built (the checker guarantees all of these for a policy it accepted;
/// a hand-edited compiled artifact is held to them too).
pub(crate) fn check_invariants(policy: &RawPolicy) -> Result<(), InvariantError> {
    if policy.pin_executables && !policy.pin_mounts {
        return Err(InvariantError::PinExecutablesWithoutPinMounts);
    }
    if let Some(broker) = &policy.network_broker {
        if !policy.pin_mounts {
            return Err(InvariantError::BrokerWithoutPinMounts);
        }
        if broker.ids.is_empty() {
            return Err(InvariantError::BrokerWithoutIds);
        }
        let socket = broker.socket_path();
        if socket.len() > MAX_SOCKET_PATH_BYTES {
            return Err(InvariantError::BrokerSocketPathTooLong(socket));
        }
    }
    if policy.bounded_writes {
        if !policy.no_further_user_namespaces {
            return Err(InvariantError::BoundedWritesWithoutUserns);
        }
        if policy.tmp == PrivateTmp::Unbounded {
            return Err(InvariantError::BoundedWritesUnboundedTmp);
        }
    }
    let size_ok = |s: u64| (1..=MAX_TMPFS_BYTES).contains(&s);
    if let PrivateTmp::Bounded { size_bytes } = policy.tmp
        && !size_ok(size_bytes)
    {
        return Err(InvariantError::TmpfsSize {
            what: Tmpfs::PrivateTmp,
            size: size_bytes,
        });
    }
    if policy.max_active_file_roots > MAX_ACTIVE_FILE_ROOTS_CEILING {
        return Err(InvariantError::ActiveRootCeiling(
            policy.max_active_file_roots,
        ));
    }
    let mut ids = std::collections::HashSet::with_capacity(policy.file_roots.len());
    for root in &policy.file_roots {
        if !ids.insert(&root.id) {
            return Err(InvariantError::DuplicateRoot(root.id.clone()));
        }
        if let FileRootKind::Ephemeral { size_bytes } = root.kind
            && !size_ok(size_bytes)
        {
            return Err(InvariantError::TmpfsSize {
                what: Tmpfs::EphemeralRoot(root.id.clone()),
                size: size_bytes,
            });
        }
    }
    check_destinations(policy)?;
    check_executables(policy)?;
    if matches!(
        policy.runners,
        Runners::Separate {
            limit: None,
            landlock: None
        }
    ) {
        return Err(InvariantError::NoSeparateRunner);
    }
    if policy.require_limit_runner && policy.runners.limits().is_none() {
        return Err(InvariantError::MissingLimitRunner);
    }
    if policy.require_cgroup_v2 && policy.cgroup.is_none() {
        return Err(InvariantError::MissingCgroup);
    }
    if let Some(cg) = &policy.cgroup {
        let l = &cg.limits;
        if l.cpu_quota_micros.is_none()
            && l.memory_max_bytes.is_none()
            && l.memory_swap_max_bytes.is_none()
            && l.pids_max.is_none()
            && l.io_max.is_empty()
        {
            return Err(InvariantError::EmptyCgroup);
        }
    }
    if let SeccompPolicy::StrictAllowlist { syscalls } = &policy.seccomp {
        if syscalls.is_empty() {
            return Err(InvariantError::StrictAllowlist(AllowlistDefect::Empty));
        }
        if syscalls.len() > MAX_STRICT_SYSCALLS {
            return Err(InvariantError::StrictAllowlist(AllowlistDefect::TooLong));
        }
        if !syscalls.contains("execve") {
            return Err(InvariantError::StrictAllowlist(AllowlistDefect::NoExecve));
        }
    }
    if policy.worker_args.iter().any(|a| a.contains('\0')) {
        return Err(InvariantError::WorkerArgumentNul);
    }
    Ok(())
}

/// No two worker-visible mount destinations overlap, so mounting in policy
/// order can never hide an earlier mount. Linear in the number of path
/// components: each destination looks up itself and its ancestors.
fn check_destinations(policy: &RawPolicy) -> Result<(), InvariantError> {
    /// What a destination belongs to; made into a [`Destination`] only
    /// for the error.
    enum Owner<'a> {
        Proc,
        Dev,
        Tmp,
        Runtime,
        Root(&'a SelectorId),
        Broker,
    }
    let mut dests: Vec<(Owner<'_>, &SandboxPath)> = Vec::new();
    let proc_ = fixed("/proc");
    let dev = fixed("/dev");
    let tmp = fixed("/tmp");
    dests.push((Owner::Proc, &proc_));
    dests.push((Owner::Dev, &dev));
    if policy.tmp != PrivateTmp::Off {
        dests.push((Owner::Tmp, &tmp));
    }
    for m in &policy.runtime_mounts {
        dests.push((Owner::Runtime, &m.destination));
    }
    for r in &policy.file_roots {
        dests.push((Owner::Root(&r.id), &r.destination));
    }
    if let Some(b) = &policy.network_broker {
        dests.push((Owner::Broker, &b.destination));
    }
    let named = |i: usize| {
        let (owner, path) = &dests[i];
        let path = (*path).clone();
        match owner {
            Owner::Proc => Destination::Proc,
            Owner::Dev => Destination::Dev,
            Owner::Tmp => Destination::PrivateTmp,
            Owner::Runtime => Destination::RuntimeMount(path),
            Owner::Root(id) => Destination::FileRoot {
                id: (*id).clone(),
                destination: path,
            },
            Owner::Broker => Destination::NetworkBroker(path),
        }
    };
    // The first index of each destination; a repeated one overlaps it.
    let mut first: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(dests.len());
    // The earliest-reported overlapping pair `(later, earlier)`, as a
    // pairwise scan in order would find it.
    let mut worst: Option<(usize, usize)> = None;
    let mut note = |pair: (usize, usize)| {
        if worst.is_none_or(|w| pair < w) {
            worst = Some(pair);
        }
    };
    for (i, (_, path)) in dests.iter().enumerate() {
        match first.entry(path.as_str()) {
            std::collections::hash_map::Entry::Occupied(e) => note((i, *e.get())),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i);
            }
        }
    }
    for (i, (_, path)) in dests.iter().enumerate() {
        let s = path.as_str();
        for (at, _) in s.match_indices('/').skip(1) {
            if let Some(&j) = first.get(&s[..at]) {
                note((i.max(j), i.min(j)));
            }
        }
    }
    match worst {
        Some((later, earlier)) => Err(InvariantError::Overlap {
            a: Box::new(named(earlier)),
            b: Box::new(named(later)),
        }),
        None => Ok(()),
    }
}

/// The worker and every runner or allowed target is a distinct path inside
/// a read-only runtime mount.
fn check_executables(policy: &RawPolicy) -> Result<(), InvariantError> {
    let mut named: Vec<(Program, &SandboxPath)> = vec![(Program::Worker, &policy.worker)];
    match &policy.runners {
        Runners::None => {}
        // One-hop mode: only the combined runner executes; the `limits` and
        // `landlock` blocks contribute their settings, not their paths.
        Runners::Combined { path, .. } => named.push((Program::CombinedRunner, path)),
        Runners::Separate { limit, landlock } => {
            if let Some(l) = limit {
                named.push((Program::LimitRunner, &l.path));
            }
            if let Some(l) = landlock {
                named.push((Program::LandlockRunner, &l.path));
            }
        }
    }
    for (i, (what, path)) in named.iter().enumerate() {
        if let Some((other, _)) = named[..i].iter().find(|(_, p)| p == path) {
            return Err(InvariantError::SamePath {
                a: *other,
                b: *what,
                path: (*path).clone(),
            });
        }
    }
    if let Some(allow) = policy.runners.landlock_allow() {
        if allow.len() > MAX_LANDLOCK_TARGETS {
            return Err(InvariantError::TooManyLandlockTargets(allow.len()));
        }
        named.extend(allow.iter().map(|p| (Program::AllowedExecutable, p)));
    }
    for (what, path) in named {
        if !policy
            .runtime_mounts
            .iter()
            .any(|m| path.is_within(&m.destination))
        {
            return Err(InvariantError::OutsideRuntime {
                what,
                path: path.clone(),
            });
        }
    }
    Ok(())
}

/// Re-validate the invariants for one *active* root (inactive roots may be
/// registered with modes that would be refused if they were selected).
pub fn check_active_root(policy: &Policy, root: &FileRoot) -> Result<(), InvariantError> {
    let FileRootKind::Host { access, quota, .. } = &root.kind else {
        return Ok(());
    };
    let facts = StorageFacts::of(policy.raw());
    match (access, quota) {
        (Access::ReadWrite, None) => {
            let id = root.id.clone();
            return match facts.unquoted_writable_root_defect() {
                Some(UnquotedRootDefect::UnderBoundedWrites) => {
                    Err(InvariantError::UnverifiedRootUnderBoundedWrites(id))
                }
                Some(UnquotedRootDefect::Unbounded) => {
                    Err(InvariantError::UnboundedWritableRoot(id))
                }
                Some(UnquotedRootDefect::UnderAggregate) => {
                    Err(InvariantError::RawRootUnderAggregateQuota(id))
                }
                None => Ok(()),
            };
        }
        (_, Some(q)) => {
            let fail = |reason| {
                Err(InvariantError::QuotaRoot {
                    id: root.id.clone(),
                    reason,
                })
            };
            if let Some(defect) = facts.quota_root_defects().next() {
                return fail(defect);
            }
            if q.project_id == 0 {
                return fail(QuotaRootDefect::ProjectZero);
            }
            if q.max_bytes == 0 || q.max_inodes == 0 {
                return fail(QuotaRootDefect::ZeroCeiling);
            }
        }
        (Access::ReadOnly, None) => {}
    }
    Ok(())
}
