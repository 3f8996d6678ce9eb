//! The checked policy: the typed output of `check` and the input of `activate`
//! and `lower`.
//!
//! The types mirror the specification's host configuration
//! (`BubblewrapWorkerPolicy` and its parts); each field's documentation names
//! the `.splashpol` statement that sets it and, where it has one, the
//! specification's name for it.
//!
//! Validation happens in two layers. Values that can be wrong on their own
//! are newtypes built only through validation: [`HostPath`] and
//! [`SandboxPath`] ([`AbsPath::new`]), [`SelectorId`] (the token rule),
//! [`SyscallName`] (a known syscall). Rules that relate several fields
//! (pinned executables need pinned mounts, no two mount destinations overlap,
//! the worker lies inside a runtime mount, ...) hold for every [`Policy`]:
//! a policy's fields become a [`Policy`] only through one validation,
//! whether the checker built them, [`crate::artifact::load`] read them or
//! they were deserialized from their JSON form (the `policy` object of a
//! compiled artifact). The rules the checker enforces but lowering does not rely on (for
//! example nonzero rlimits, or no control character in the policy name) are
//! [`check_rules`]: the checker asks it of every policy it builds and
//! [`crate::artifact::load`] of every artifact, so they hold for both (a
//! policy assembled in code is held to them only if it asks). Nothing in
//! this module touches the host.

use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
pub use splash_manifest::Token as SelectorId;
pub use splash_seccomp::SyscallName;

mod identity;
pub mod invariants;
mod rules;
pub use identity::{MAX_IDENTITY_ID, MIN_IDENTITY_ID, WorkerIdentity};
pub use rules::{RuleError, ValueDefect, check_rules};

/// An absolute, normalized path: starts with `/`, no empty, `.` or `..`
/// components, no trailing `/`, no NUL or other control or bidirectional
/// formatting character ([`crate::text::is_forbidden`]), and not `/` itself.
///
/// The side `S` says which filesystem the path names: [`HostPath`] (outside
/// the sandbox) and [`SandboxPath`] (worker-visible) are distinct types, so
/// one cannot be passed where the other is expected. Each is built from a
/// string through [`AbsPath::new`]; there is no conversion between them
/// (a host path behind a sandbox path is computed from the mounts, see
/// `lower`). Both serialize as the plain string.
///
/// ```
/// use splashpol::model::{HostPath, SandboxPath};
/// fn mounted_at(_: &SandboxPath) {}
/// let dest = SandboxPath::new("/opt/splash").expect("path");
/// mounted_at(&dest);
/// ```
///
/// A host path is not a sandbox path:
///
/// ```compile_fail
/// use splashpol::model::{HostPath, SandboxPath};
/// fn mounted_at(_: &SandboxPath) {}
/// let source = HostPath::new("/opt/splash").expect("path");
/// mounted_at(&source);
/// ```
pub struct AbsPath<S: Side> {
    path: String,
    side: PhantomData<S>,
}

/// A host path (outside the sandbox).
pub type HostPath = AbsPath<Host>;
/// A worker-visible path (inside the sandbox).
pub type SandboxPath = AbsPath<Sandbox>;

/// The filesystem an [`AbsPath`] names: [`Host`] or [`Sandbox`].
pub trait Side: sealed::Sealed + 'static {}

/// The host's filesystem (outside the sandbox).
#[derive(Debug)]
pub enum Host {}
/// The worker's filesystem (inside the sandbox).
#[derive(Debug)]
pub enum Sandbox {}

impl Side for Host {}
impl Side for Sandbox {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Host {}
    impl Sealed for super::Sandbox {}
}

/// Why a string is not an [`AbsPath`]. The text of a refused path is
/// shown with its control and bidirectional formatting characters escaped
/// ([`crate::text::escaped`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The string is empty.
    #[error("path is empty")]
    Empty,
    /// The path (carried here) does not start with `/`.
    #[error("path `{}` is not absolute", shown(.0))]
    Relative(PathBuf),
    /// The path is `/` itself: no mount source or destination may be the
    /// whole filesystem.
    #[error("path `/` is `/`; the whole filesystem cannot be used here")]
    Root,
    /// The path (carried here) has an empty (`//`), `.` or `..` component, or
    /// ends with `/`. A path has exactly one spelling, which the overlap and
    /// containment checks rely on (`/a/../proc` would otherwise slip past the
    /// `/proc` check).
    #[error("path `{}` is not normalized (empty, `.` or `..` component, or trailing `/`)", shown(.0))]
    NotNormalized(PathBuf),
    /// The path contains a NUL byte, which no Linux path can contain.
    #[error("path contains a NUL byte")]
    Nul,
    /// The path contains a control or bidirectional formatting character
    /// ([`crate::text::is_forbidden`]), which no string of the language may
    /// hold: a tab, a newline or U+202E makes a path read differently from
    /// what it is.
    #[error(
        "path `{}` contains {} U+{:04X} at byte {offset}",
        shown(.path),
        if .character.is_control() { "control character" } else { "bidirectional formatting character" },
        u32::from(*.character)
    )]
    ForbiddenCharacter {
        /// The path as written.
        path: PathBuf,
        /// The byte offset of the first such character.
        offset: usize,
        /// The character.
        character: char,
    },
}

/// A refused path as shown in a message.
fn shown(path: &std::path::Path) -> String {
    crate::text::escaped(&path.to_string_lossy()).to_string()
}

impl<S: Side> AbsPath<S> {
    /// Validates `s` as an absolute, normalized path. Purely textual: the
    /// file it names is not looked at (existence, type and symbolic links
    /// are the runtime's to check at bind).
    ///
    /// # Errors
    ///
    /// The first rule `s` breaks, checked in this order:
    /// [`PathError::Empty`], [`PathError::Nul`],
    /// [`PathError::ForbiddenCharacter`], [`PathError::Relative`],
    /// [`PathError::Root`], [`PathError::NotNormalized`].
    pub fn new(s: impl Into<String>) -> Result<Self, PathError> {
        let s = s.into();
        if s.is_empty() {
            return Err(PathError::Empty);
        }
        if s.contains('\0') {
            return Err(PathError::Nul);
        }
        if let Some((offset, character)) = crate::text::first_forbidden(&s) {
            return Err(PathError::ForbiddenCharacter {
                path: PathBuf::from(s),
                offset,
                character,
            });
        }
        if !s.starts_with('/') {
            return Err(PathError::Relative(PathBuf::from(s)));
        }
        if s == "/" {
            return Err(PathError::Root);
        }
        if s[1..]
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(PathError::NotNormalized(PathBuf::from(s)));
        }
        Ok(Self {
            path: s,
            side: PhantomData,
        })
    }

    /// The path, exactly as validated (starts with `/`, no trailing `/`).
    pub fn as_str(&self) -> &str {
        &self.path
    }

    /// Path components after the leading `/`.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.path[1..].split('/')
    }

    /// True when `self` equals `other` or lies below it.
    pub fn is_within(&self, other: &Self) -> bool {
        self.path == other.path
            || (self.path.starts_with(&other.path)
                && self.path.as_bytes().get(other.path.len()) == Some(&b'/'))
    }

    /// True when either path is within the other.
    pub fn overlaps(&self, other: &Self) -> bool {
        self.is_within(other) || other.is_within(self)
    }
}

impl<S: Side> Clone for AbsPath<S> {
    fn clone(&self) -> Self {
        Self {
            path: self.path.clone(),
            side: PhantomData,
        }
    }
}

impl<S: Side> PartialEq for AbsPath<S> {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl<S: Side> Eq for AbsPath<S> {}

impl<S: Side> PartialOrd for AbsPath<S> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<S: Side> Ord for AbsPath<S> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.path.cmp(&other.path)
    }
}

impl<S: Side> std::hash::Hash for AbsPath<S> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.path.hash(h);
    }
}

impl<S: Side> TryFrom<String> for AbsPath<S> {
    type Error = PathError;
    fn try_from(s: String) -> Result<Self, PathError> {
        Self::new(s)
    }
}

impl<S: Side> From<AbsPath<S>> for String {
    fn from(p: AbsPath<S>) -> String {
        p.path
    }
}

impl<S: Side> Serialize for AbsPath<S> {
    fn serialize<Z: serde::Serializer>(&self, z: Z) -> Result<Z::Ok, Z::Error> {
        z.serialize_str(&self.path)
    }
}

impl<'de, S: Side> Deserialize<'de> for AbsPath<S> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl<S: Side> fmt::Debug for AbsPath<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.path, f)
    }
}

impl<S: Side> fmt::Display for AbsPath<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)
    }
}

/// Largest tmpfs size Bubblewrap accepts for `--size` (2^63 - 1).
pub const MAX_TMPFS_BYTES: u64 = i64::MAX as u64;
/// Default bound on active file roots.
pub const DEFAULT_MAX_ACTIVE_FILE_ROOTS: u16 = 64;
/// Hard ceiling on the active file-root bound.
pub const MAX_ACTIVE_FILE_ROOTS_CEILING: u16 = 256;
/// Maximum explicit Landlock allowlist entries.
pub const MAX_LANDLOCK_TARGETS: usize = 32;
/// Maximum strict seccomp allowlist entries.
pub const MAX_STRICT_SYSCALLS: usize = 512;
/// Default cgroup join timeout in milliseconds.
pub const DEFAULT_CGROUP_JOIN_TIMEOUT_MS: u64 = 5_000;

/// The fields of a [`Policy`]: its serialized shape (the `policy` object of
/// a compiled artifact). They become a [`Policy`] only through
/// [`Policy::try_from`], which checks the invariants lowering relies on
/// ([`invariants::InvariantError`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    /// The policy's name (free text, for reports).
    pub name: String,
    /// Host path of the Bubblewrap executable (`bubblewrap`); executed
    /// through a pinned descriptor when [`Policy::pin_executables`] is
    /// set.
    pub bubblewrap: HostPath,
    /// Worker-visible path of the fixed worker program (`worker`): inside a
    /// runtime mount's destination, and distinct from every runner.
    pub worker: SandboxPath,
    /// Fixed worker arguments (`worker ... args [...]`), passed after the
    /// worker path; no argument contains a NUL byte. Nothing at run time
    /// adds to them.
    pub worker_args: Vec<String>,
    /// Read-only runtime mounts, in policy order.
    pub runtime_mounts: Vec<RuntimeMount>,
    /// Registered file roots (host-backed and ephemeral), in policy order.
    pub file_roots: Vec<FileRoot>,
    /// The private `/tmp` (`tmp`); when not [`PrivateTmp::Off`], `/tmp` is a
    /// reserved mount destination.
    pub tmp: PrivateTmp,
    /// See [`Policy::bounded_writes`].
    pub bounded_writes: bool,
    /// See [`Policy::no_further_user_namespaces`].
    pub no_further_user_namespaces: bool,
    /// See [`Policy::pin_mounts`].
    pub pin_mounts: bool,
    /// See [`Policy::pin_executables`].
    pub pin_executables: bool,
    /// See [`Policy::allow_unbounded_host_writes`].
    pub allow_unbounded_host_writes: bool,
    /// See [`Policy::aggregate_quota`].
    pub aggregate_quota: Option<AggregateQuota>,
    /// See [`Policy::aggregate_ephemeral_max_bytes`].
    pub aggregate_ephemeral_max_bytes: Option<u64>,
    /// See [`Policy::max_active_file_roots`].
    pub max_active_file_roots: u16,
    /// The seccomp profile (`seccomp`).
    pub seccomp: SeccompPolicy,
    /// See [`Policy::require_limit_runner`].
    pub require_limit_runner: bool,
    /// The runners that execute before the worker (`limits`, `landlock`,
    /// `one-hop`), each path written once.
    pub runners: Runners,
    /// The cgroup-v2 policy (`cgroup` block), if configured.
    pub cgroup: Option<CgroupPolicy>,
    /// See [`Policy::require_cgroup_v2`].
    pub require_cgroup_v2: bool,
    /// The host wall-clock watchdog, if configured.
    pub watchdog: Option<Watchdog>,
    /// The brokered network-origin mount, if configured.
    pub network_broker: Option<NetworkBroker>,
    /// The host identity the worker runs as (`identity`), if set.
    pub worker_identity: Option<WorkerIdentity>,
}

/// A checked policy: fields whose invariants hold, built by the checker,
/// read from a compiled artifact or deserialized from their JSON form (all
/// through the same validation).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawPolicy")]
pub struct Policy {
    raw: RawPolicy,
    identity: IdentityCache,
}

/// A policy's identity once computed (`activate` and `lower` both need it,
/// and a `Policy` never changes after it is built). A cache takes no part
/// in comparisons.
#[derive(Clone, Default)]
pub(crate) struct IdentityCache(std::sync::OnceLock<blake3::Hash>);

impl IdentityCache {
    /// The cached identity, computing it with `compute` the first time.
    /// A failure is returned and not cached.
    pub(crate) fn get_or_try<E>(
        &self,
        compute: impl FnOnce() -> Result<blake3::Hash, E>,
    ) -> Result<blake3::Hash, E> {
        if let Some(hash) = self.0.get() {
            return Ok(*hash);
        }
        let hash = compute()?;
        Ok(*self.0.get_or_init(|| hash))
    }
}

impl PartialEq for IdentityCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for IdentityCache {}

impl std::fmt::Debug for IdentityCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdentityCache")
    }
}

/// The runners that execute before the worker; serialized with a `mode`
/// tag (`none`, `separate`, `combined`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum Runners {
    /// No runner: Bubblewrap executes the worker.
    None,
    /// The separate runners: Landlock (optional) then limits (optional),
    /// at least one of them.
    Separate {
        /// The rlimit runner.
        limit: Option<LimitRunner>,
        /// The Landlock executable runner.
        landlock: Option<LandlockRunner>,
    },
    /// One-hop mode: one fixed runner applies rlimits, Landlock and the
    /// strict filter in a single exec.
    Combined {
        /// Worker-visible path of the combined runner.
        path: SandboxPath,
        /// The rlimits of the `limits { ... }` block, if present.
        limits: Option<ResourceLimits>,
        /// The explicit extra allowed executables of the `landlock { ... }`
        /// block, if present (an executable allowlist is configured exactly
        /// when this is `Some`).
        allow_exec: Option<Vec<SandboxPath>>,
    },
}

impl Runners {
    /// The rlimits the runners apply, if any.
    pub fn limits(&self) -> Option<&ResourceLimits> {
        match self {
            Runners::None => None,
            Runners::Separate { limit, .. } => limit.as_ref().map(|l| &l.limits),
            Runners::Combined { limits, .. } => limits.as_ref(),
        }
    }

    /// The explicit extra allowed executables when a Landlock executable
    /// allowlist is configured, `None` otherwise.
    pub fn landlock_allow(&self) -> Option<&[SandboxPath]> {
        match self {
            Runners::None => None,
            Runners::Separate { landlock, .. } => {
                landlock.as_ref().map(|l| l.allow_exec.as_slice())
            }
            Runners::Combined { allow_exec, .. } => allow_exec.as_deref(),
        }
    }
}

impl TryFrom<RawPolicy> for Policy {
    type Error = invariants::InvariantError;
    fn try_from(raw: RawPolicy) -> Result<Self, Self::Error> {
        invariants::check_invariants(&raw)?;
        Ok(Self {
            raw,
            identity: IdentityCache::default(),
        })
    }
}

impl Serialize for Policy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl Policy {
    /// The cache of the policy's identity (see `activate::PolicyIdentity`).
    pub(crate) fn identity_cache(&self) -> &IdentityCache {
        &self.identity
    }

    /// The policy's fields, for editing; [`Policy::try_from`] validates
    /// them again.
    #[cfg(test)]
    pub(crate) fn into_raw(self) -> RawPolicy {
        self.raw
    }

    /// The policy's fields.
    pub(crate) fn raw(&self) -> &RawPolicy {
        &self.raw
    }

    /// The runners that execute before the worker.
    pub fn runners(&self) -> &Runners {
        &self.raw.runners
    }

    /// The policy's name (free text, for reports).
    pub fn name(&self) -> &str {
        &self.raw.name
    }

    /// Host path of the Bubblewrap executable.
    pub fn bubblewrap(&self) -> &HostPath {
        &self.raw.bubblewrap
    }

    /// Worker-visible path of the fixed worker program.
    pub fn worker(&self) -> &SandboxPath {
        &self.raw.worker
    }

    /// Fixed worker arguments (no NUL byte).
    pub fn worker_args(&self) -> &[String] {
        &self.raw.worker_args
    }

    /// Read-only runtime mounts, in policy order.
    pub fn runtime_mounts(&self) -> &[RuntimeMount] {
        &self.raw.runtime_mounts
    }

    /// Registered file roots, in policy order, with distinct ids and
    /// non-overlapping destinations.
    pub fn file_roots(&self) -> &[FileRoot] {
        &self.raw.file_roots
    }

    /// The private `/tmp` setting.
    pub fn tmp(&self) -> PrivateTmp {
        self.raw.tmp
    }

    /// `writes bounded` (`require_bounded_file_root_writes`): every active
    /// read-write host root needs a verified quota, the private `/tmp` is
    /// not unbounded, and `/dev` and `/` are remounted read-only after the
    /// mounts. Implies [`Policy::no_further_user_namespaces`].
    pub fn bounded_writes(&self) -> bool {
        self.raw.bounded_writes
    }

    /// `user-namespaces none` (`require_no_further_user_namespaces`): the
    /// launch adds `--unshare-user --disable-userns`, so the worker cannot
    /// create user namespaces (and a launch where that cannot be enforced
    /// fails).
    pub fn no_further_user_namespaces(&self) -> bool {
        self.raw.no_further_user_namespaces
    }

    /// `pin mounts` (`MountSourceBinding::DescriptorPinned`): runtime mount
    /// sources, host root sources and the broker directory are opened once at
    /// bind and mounted from those descriptors.
    pub fn pin_mounts(&self) -> bool {
        self.raw.pin_mounts
    }

    /// `pin executables` (`ExecutableSourceBinding::DescriptorPinned`):
    /// Bubblewrap runs from a pinned descriptor, and the worker, the runners
    /// and the `allow-exec` targets are overlaid from pinned descriptors at
    /// their worker-visible paths. Implies [`Policy::pin_mounts`].
    pub fn pin_executables(&self) -> bool {
        self.raw.pin_executables
    }

    /// `host-writes unbounded` (`allow_unbounded_host_file_root_writes`, the
    /// weaker escape hatch): an active read-write host root without a quota
    /// is accepted, unless [`Policy::bounded_writes`] or
    /// [`Policy::aggregate_quota`] is set. Splash then bounds nothing
    /// about that root.
    pub fn allow_unbounded_host_writes(&self) -> bool {
        self.raw.allow_unbounded_host_writes
    }

    /// `quota aggregate` (`set_maximum_aggregate_linux_project_quota`):
    /// required by every active quota root.
    pub fn aggregate_quota(&self) -> Option<AggregateQuota> {
        self.raw.aggregate_quota
    }

    /// `tmpfs aggregate SIZE` in bytes
    /// (`set_maximum_aggregate_ephemeral_tmpfs_bytes`): ceiling on the sizes
    /// of the active ephemeral roots plus a bounded private `/tmp`, checked
    /// at activation; forbids an unbounded private `/tmp`. Nonzero.
    pub fn aggregate_ephemeral_max_bytes(&self) -> Option<u64> {
        self.raw.aggregate_ephemeral_max_bytes
    }

    /// `active-roots max` (`set_maximum_active_file_roots`): the most
    /// distinct file roots a manifest may select (default
    /// [`DEFAULT_MAX_ACTIVE_FILE_ROOTS`], at most
    /// [`MAX_ACTIVE_FILE_ROOTS_CEILING`]).
    pub fn max_active_file_roots(&self) -> u16 {
        self.raw.max_active_file_roots
    }

    /// The seccomp profile.
    pub fn seccomp(&self) -> &SeccompPolicy {
        &self.raw.seccomp
    }

    /// `limits ... required` (`require_resource_limit_runner`): a limit
    /// runner is configured, and a policy without one is refused.
    pub fn require_limit_runner(&self) -> bool {
        self.raw.require_limit_runner
    }

    /// The cgroup-v2 policy, if configured.
    pub fn cgroup(&self) -> Option<&CgroupPolicy> {
        self.raw.cgroup.as_ref()
    }

    /// `cgroup ... required` (`require_cgroup_v2`): a cgroup policy is
    /// configured, and the runtime refuses every launch path that would start
    /// the worker outside its cgroup.
    pub fn require_cgroup_v2(&self) -> bool {
        self.raw.require_cgroup_v2
    }

    /// The host wall-clock watchdog, if configured.
    pub fn watchdog(&self) -> Option<Watchdog> {
        self.raw.watchdog
    }

    /// The host identity the worker runs as (`identity`), if set.
    pub fn worker_identity(&self) -> Option<WorkerIdentity> {
        self.raw.worker_identity
    }

    /// The brokered network-origin mount, if configured.
    pub fn network_broker(&self) -> Option<&NetworkBroker> {
        self.raw.network_broker.as_ref()
    }
}

/// A read-only runtime mount (file or directory): `runtime SOURCE at DEST`.
///
/// The worker, every runner and every `allow-exec` target must lie inside
/// the destination of one of these, so what the worker can execute comes
/// from host trees mounted read-only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeMount {
    /// The host file or directory mounted. The runtime resolves it at bind
    /// and refuses a missing source or one that resolves to `/`.
    pub source: HostPath,
    /// Where the worker sees it; it does not equal, contain or lie inside
    /// any other mount destination, `/proc`, `/dev` or a private `/tmp`.
    pub destination: SandboxPath,
}

/// A registered file root, selected by opaque id from the manifest.
///
/// Registering a root grants nothing: only the roots a manifest selects
/// ([`crate::activate::Activation::roots`]) are mounted, and lowering
/// re-checks a root's access mode only when it is active
/// ([`invariants::check_active_root`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRoot {
    /// The selector id a manifest's `file_root` resource names; unique among
    /// the policy's roots of both kinds.
    pub id: SelectorId,
    /// Where the worker sees the root; it does not equal, contain or lie
    /// inside any other mount destination, `/proc`, `/dev` or a private
    /// `/tmp`.
    pub destination: SandboxPath,
    /// Host-backed or ephemeral.
    pub kind: FileRootKind,
}

/// What backs a file root: a host directory or an empty tmpfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FileRootKind {
    /// `root ID host SOURCE at DEST ACCESS [quota ...]`: a bind of a host
    /// directory.
    Host {
        /// The host directory bound (checked to be a directory at bind).
        source: HostPath,
        /// Read-only or read-write.
        access: Access,
        /// The project quota the runtime verifies at bind; the checker
        /// accepts one only on a [`Access::ReadWrite`] root, and an active
        /// quota root requires pinned mounts, `user-namespaces none` and an
        /// [`AggregateQuota`].
        quota: Option<ProjectQuota>,
    },
    /// `root ID tmpfs at DEST size SIZE`: an empty, writable tmpfs for the
    /// session, gone with the worker's mount namespace.
    Ephemeral {
        /// tmpfs `--size` in bytes, 1..=2^63-1.
        size_bytes: u64,
    },
}

/// How a host-backed root is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Bound read-only.
    ReadOnly,
    /// Bound writable. An active read-write root needs a verified
    /// [`ProjectQuota`], or [`Policy::allow_unbounded_host_writes`] with
    /// neither bounded writes nor an aggregate quota; otherwise lowering
    /// refuses it.
    ReadWrite,
}

/// A Linux project quota attached to a read-write host root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectQuota {
    /// Host-provisioned nonzero project id.
    pub project_id: u32,
    /// Maximum accepted hard block limit in bytes.
    pub max_bytes: u64,
    /// Maximum accepted hard inode limit.
    pub max_inodes: u64,
}

/// Aggregate ceiling over distinct (filesystem, project) quota pairs:
/// `quota aggregate bytes SIZE inodes COUNT`.
///
/// Activation sums the active quota roots' ceilings, each project id once;
/// the runtime repeats the sum at bind over the hard limits the kernel
/// reports, per (filesystem, project) pair. Both ceilings are nonzero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggregateQuota {
    /// Ceiling on the summed hard byte limits.
    pub max_bytes: u64,
    /// Ceiling on the summed hard inode limits.
    pub max_inodes: u64,
}

/// The private `/tmp`: the `tmp` statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrivateTmp {
    /// `tmp off` (the default): no tmpfs at `/tmp`, and `/tmp` is not a
    /// reserved destination.
    Off,
    /// `tmp private`: a tmpfs at `/tmp` without `--size`. Refused under
    /// bounded writes and with an aggregate ephemeral bound.
    Unbounded,
    /// `tmp private size SIZE`: a tmpfs at `/tmp` with `--size`.
    Bounded {
        /// The tmpfs `--size` in bytes, 1 to [`MAX_TMPFS_BYTES`].
        size_bytes: u64,
    },
}

/// The seccomp profile: the `seccomp` statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeccompPolicy {
    /// `seccomp off` (the default): no profile. A Landlock allowlist still
    /// gets a baseline filter carrying its `memfd_create` guard.
    Off,
    /// `seccomp deny-known-escape-surface`: the fixed default-allow
    /// compatibility profile, returning `EPERM` for a reviewed set of escape
    /// operations.
    DenyKnownEscapeSurface,
    /// `seccomp strict-allowlist { ... }`: the fixed escape-surface guards
    /// first (`EPERM`; `clone3` answers `ENOSYS`), then only the listed
    /// syscalls; every other syscall kills the process.
    StrictAllowlist {
        /// Syscalls by name, deduplicated and sorted; each a name
        /// `splash-seccomp` knows on at least one architecture, resolved to
        /// numbers per architecture when the filter is built. Never empty,
        /// at most [`MAX_STRICT_SYSCALLS`], always containing `execve`.
        syscalls: BTreeSet<SyscallName>,
    },
}

/// The five rlimits. `None` means not selected; selected values are finite
/// and nonzero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceLimits {
    /// `RLIMIT_CPU`: cumulative CPU time in whole seconds (not a wall-clock
    /// deadline).
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_AS`: virtual address space in bytes (not resident memory).
    pub address_space_bytes: Option<u64>,
    /// `RLIMIT_NPROC`: threads of the worker's real uid, counting unrelated
    /// processes of that uid too (not enforced for real uid 0).
    pub process_count: Option<u64>,
    /// `RLIMIT_NOFILE`: one more than the highest file descriptor number.
    pub open_files: Option<u64>,
    /// `RLIMIT_FSIZE`: the largest file the worker can write, in bytes (not
    /// total storage).
    pub file_size_bytes: Option<u64>,
}

impl ResourceLimits {
    /// True when no limit is selected (a `limits` block the checker accepts
    /// selects at least one).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The rlimit runner (`limits` block; the specification's
/// `ResourceLimitRunner`): a fixed program in a runtime mount that sets the
/// selected rlimits on itself and execs the next program of the launch
/// chain, which inherits them. See `docs/runners.md` for each step it takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRunner {
    /// Worker-visible path (inside a read-only runtime mount).
    pub path: SandboxPath,
    /// The rlimits the runner sets, each as both soft and hard limit.
    pub limits: ResourceLimits,
}

/// The Landlock executable runner (`landlock` statement; the specification's
/// `LandlockExecutableRunner`): a fixed program in a runtime mount that
/// allows Landlock's filesystem-execute right only on the worker, the limit
/// runner and [`LandlockRunner::allow_exec`], then execs the next program
/// of the launch chain. It mediates exec, not code loaded as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandlockRunner {
    /// Worker-visible path (inside a read-only runtime mount).
    pub path: SandboxPath,
    /// Explicit extra allowed executables (e.g. the resolved ELF loader), in
    /// policy order, at most 32, no duplicates.
    pub allow_exec: Vec<SandboxPath>,
}

/// The cgroup-v2 boundary (`cgroup` block; the specification's
/// `CgroupV2Policy`): each launch runs in a fresh child cgroup of
/// [`CgroupPolicy::parent`], which the runner joins before it execs
/// Bubblewrap, so the whole worker tree is limited and can be killed at once
/// (`cgroup.kill`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupPolicy {
    /// Host-owned delegated cgroup-v2 parent directory.
    pub parent: HostPath,
    /// Host path of the cgroup runner (never mounted).
    pub runner: HostPath,
    /// The controller values written into each launch's fresh child cgroup;
    /// at least one controller limit is selected.
    pub limits: CgroupLimits,
    /// How long the runtime waits, in milliseconds, for the runner to show
    /// up in the fresh cgroup's `cgroup.procs` before it kills the runner and
    /// the cgroup and fails the launch (nonzero; default
    /// [`DEFAULT_CGROUP_JOIN_TIMEOUT_MS`]).
    pub join_timeout_ms: u64,
}

/// The cgroup-v2 controller limits of a [`CgroupPolicy`]. `None` (or an
/// empty `io_max`) sets no limit of the worker's own on that control; the
/// parent's limits still apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupLimits {
    /// `cpu.max` quota in microseconds per fixed 100 ms period (at least
    /// 1000, the kernel's minimum).
    pub cpu_quota_micros: Option<u64>,
    /// `memory.max` in bytes (nonzero); selecting it also sets
    /// `memory.oom.group`, so an OOM kills the worker tree as one.
    pub memory_max_bytes: Option<u64>,
    /// `memory.swap.max` in bytes; `Some(0)` forbids swapping the worker's
    /// memory.
    pub memory_swap_max_bytes: Option<u64>,
    /// `pids.max`: tasks (threads included) in the worker's cgroup
    /// (nonzero).
    pub pids_max: Option<u64>,
    /// Per-device `io.max`, ordered by device, one entry per device.
    pub io_max: Vec<IoMax>,
}

/// One `io.max` line: limits for one block device, from an
/// `io MAJOR:MINOR { ... }` entry. `None` leaves that key unlimited; `Some(0)`
/// prohibits that class of I/O. The checker requires at least one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoMax {
    /// The block device's major number.
    pub major: u32,
    /// The block device's minor number.
    pub minor: u32,
    /// `rbps`: read bytes per second.
    pub rbps: Option<u64>,
    /// `wbps`: write bytes per second.
    pub wbps: Option<u64>,
    /// `riops`: read operations per second.
    pub riops: Option<u64>,
    /// `wiops`: write operations per second.
    pub wiops: Option<u64>,
}

/// Host wall-clock watchdog deadlines: `watchdog session D [call D]`. On
/// expiry the runtime force-stops and reaps the worker, and the session's
/// outcome is indeterminate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watchdog {
    /// Deadline for the whole worker lifetime, from spawn, in milliseconds
    /// (nonzero).
    pub session_deadline_ms: u64,
    /// Deadline for each invocation, in milliseconds (nonzero), if set.
    pub call_deadline_ms: Option<u64>,
}

/// Which catalog kind a network broker serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrokerCatalog {
    /// `endpoint`: a reviewed HTTP endpoint catalog, whose ids name
    /// endpoints (`HttpEndpointCatalog`).
    Endpoint,
    /// `origin`: a reviewed exact-origin catalog, whose ids name origins
    /// (`HttpOriginCatalog`).
    Origin,
}

/// The brokered network-origin mount (`network-broker` statement; the
/// specification's `LinuxNetworkBrokerMount`): a private directory holding
/// the broker's one Unix socket, created under [`NetworkBroker::parent`],
/// pinned, and mounted read-only at [`NetworkBroker::destination`]. The
/// worker keeps its own empty network namespace; the socket is its only way
/// to the reviewed HTTP catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkBroker {
    /// Existing host-owned parent of the private broker directory.
    pub parent: HostPath,
    /// Worker-visible read-only mount of the broker directory.
    pub destination: SandboxPath,
    /// The catalog kind the broker serves.
    pub catalog: BrokerCatalog,
    /// The exact network-origin ids this broker serves.
    pub ids: BTreeSet<SelectorId>,
}

/// The file name of the broker's socket in its private directory (the
/// broker's `splash_broker::SOCKET_NAME`).
pub const BROKER_SOCKET_NAME: &str = "broker.sock";

/// The longest path a Unix socket address holds: `sun_path` is 108 bytes on
/// Linux, the terminating NUL included.
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// The longest `network-broker` destination whose socket path,
/// `DESTINATION/broker.sock`, fits [`MAX_SOCKET_PATH_BYTES`]: 95 bytes.
pub const MAX_BROKER_DESTINATION_BYTES: usize =
    MAX_SOCKET_PATH_BYTES - 1 - BROKER_SOCKET_NAME.len();

/// The path the worker connects to for a broker mounted at `destination`.
pub fn broker_socket_path(destination: &SandboxPath) -> String {
    format!("{destination}/{BROKER_SOCKET_NAME}")
}

impl NetworkBroker {
    /// The worker-visible socket path ([`broker_socket_path`]).
    pub fn socket_path(&self) -> String {
        broker_socket_path(&self.destination)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_reject_what_is_not_absolute_and_normalized() {
        for side_ok in ["/a", "/opt/splash/bin", "/a.b/..c/c..", "/ü"] {
            assert!(HostPath::new(side_ok).is_ok(), "{side_ok}");
            assert!(SandboxPath::new(side_ok).is_ok(), "{side_ok}");
        }
        let cases: [(&str, PathError); 9] = [
            ("", PathError::Empty),
            ("a/b", PathError::Relative(PathBuf::from("a/b"))),
            ("./a", PathError::Relative(PathBuf::from("./a"))),
            ("/", PathError::Root),
            (
                "/a/../b",
                PathError::NotNormalized(PathBuf::from("/a/../b")),
            ),
            ("/a/..", PathError::NotNormalized(PathBuf::from("/a/.."))),
            ("/a/./b", PathError::NotNormalized(PathBuf::from("/a/./b"))),
            ("/a//b", PathError::NotNormalized(PathBuf::from("/a//b"))),
            ("/a/\0b", PathError::Nul),
        ];
        for (s, want) in cases {
            assert_eq!(HostPath::new(s), Err(want.clone()), "{s:?}");
            assert_eq!(SandboxPath::new(s), Err(want), "{s:?}");
        }
        assert_eq!(
            SandboxPath::new("/a/"),
            Err(PathError::NotNormalized(PathBuf::from("/a/")))
        );
    }

    #[test]
    fn paths_serialize_as_the_plain_string_and_deserialize_through_new() {
        let host = HostPath::new("/usr/bin/bwrap").expect("path");
        let json = serde_json::to_string(&host).expect("serialize");
        assert_eq!(json, r#""/usr/bin/bwrap""#);
        let back: HostPath = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, host);
        assert_eq!(serde_json::to_string(&back).expect("serialize"), json);
        // The same text read as a sandbox path is the same string.
        let sandbox: SandboxPath = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(sandbox.as_str(), host.as_str());
        for bad in [r#""relative""#, r#""/a/../b""#, r#""/a\u0000b""#, r#""/""#] {
            let e = serde_json::from_str::<SandboxPath>(bad).expect_err(bad);
            assert!(e.to_string().contains("path"), "{bad}: {e}");
        }
        assert_eq!(format!("{host:?}"), r#""/usr/bin/bwrap""#);
        assert_eq!(host.to_string(), "/usr/bin/bwrap");
    }

    #[test]
    fn within_and_overlap_compare_whole_components() {
        let p = |s: &str| SandboxPath::new(s).expect("path");
        assert!(p("/a/b").is_within(&p("/a")));
        assert!(p("/a").is_within(&p("/a")));
        assert!(!p("/ab").is_within(&p("/a")));
        assert!(!p("/a").is_within(&p("/a/b")));
        assert!(p("/a").overlaps(&p("/a/b")));
        assert!(!p("/a").overlaps(&p("/b")));
    }
}
