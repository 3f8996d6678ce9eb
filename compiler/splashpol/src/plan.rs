//! The launch plan: the one launch object that both `splashc emit` displays
//! and the runtime spawns. Pure data; produced by `lower`.
//!
//! Descriptor-backed values are typed [`Slot`]s, never strings: display code
//! renders them as placeholders, the runtime renders them as the descriptor
//! numbers it allocated for one launch. Both go through
//! [`LaunchPlan::bwrap_arguments`], so there is exactly one argv builder.

use serde::{Deserialize, Serialize};
use splash_seccomp::Arch;

use crate::model::{
    AggregateQuota, CgroupPolicy, HostPath, ProjectQuota, SandboxPath, SelectorId, Watchdog,
};

/// Index into [`LaunchPlan::pins`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PinSlot(pub u16);

/// A value that only exists at spawn time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// A fresh duplicate of a descriptor retained at bind.
    Pin(PinSlot),
    /// The anonymous descriptor holding the cBPF program for bwrap `--seccomp`.
    BwrapSeccomp,
    /// The anonymous descriptor holding the cBPF program for the runner handoff.
    RunnerSeccomp,
}

/// What kind of object a pinned descriptor must refer to (re-checked through
/// the descriptor at bind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinKind {
    Directory,
    /// A regular file (runtime file mounts).
    RegularFile,
    /// A regular file with an execute bit.
    Executable,
}

/// Why a descriptor is pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinRole {
    RuntimeMount,
    FileRoot(SelectorId),
    NetworkBroker,
    /// The bwrap executable, launched through `/proc/self/fd/N`.
    Bubblewrap,
    Worker,
    LimitRunner,
    LandlockRunner,
    CombinedRunner,
    AllowedExecutable,
}

/// A descriptor to open at bind and duplicate at each spawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Host path opened `O_PATH | O_NOFOLLOW | O_CLOEXEC` (after the runtime
    /// resolves it; for executable overlays this is the host path behind the
    /// worker-visible path through its runtime mount).
    pub host_path: HostPath,
    pub kind: PinKind,
    pub role: PinRole,
}

/// A bind-mount source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountSource {
    Path(HostPath),
    Pinned(PinSlot),
}

/// A mount point for `--remount-ro`, which may be `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountPoint {
    Root,
    Path(SandboxPath),
}

/// One Bubblewrap setup operation. Modifiers (`--size`) are fields of the
/// operation they modify, so a dangling modifier cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BwrapOp {
    UnshareAll,
    UnshareUser,
    DisableUserns,
    CapDropAll,
    ClearEnv,
    NewSession,
    DieWithParent,
    Chdir(MountPoint),
    Proc(SandboxPath),
    Dev(SandboxPath),
    Tmpfs { destination: SandboxPath, size_bytes: Option<u64> },
    RoBind { source: MountSource, destination: SandboxPath },
    Bind { source: MountSource, destination: SandboxPath },
    RemountRo(MountPoint),
}

/// One argument of the command bwrap executes after `--`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecArg {
    Literal(String),
    Slot(Slot),
}

/// Where the seccomp program goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeccompDelivery {
    None,
    /// `--seccomp FD` as bwrap's first arguments.
    Bubblewrap,
    /// Through the Landlock or combined runner's descriptor handoff.
    Runner,
}

/// The compiled seccomp program for one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompPlan {
    pub delivery: SeccompDelivery,
    pub arch: Arch,
    /// Profile name for reports (`deny-known-escape-surface`, `strict-allowlist`).
    pub profile: String,
    /// Raw `struct sock_filter` bytes in native endianness for `arch`.
    pub program: Vec<u8>,
}

/// An active file root after activation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveRoot {
    pub id: SelectorId,
    pub destination: SandboxPath,
    /// `read-only`, `read-write`, `read-write+quota`, `tmpfs`.
    pub mode: String,
}

/// A project-quota verification the runtime performs at bind on a pinned root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaCheck {
    pub slot: PinSlot,
    pub quota: ProjectQuota,
}

/// The complete launch object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchPlan {
    /// Launch-plan format version.
    pub format: u32,
    pub policy_name: String,
    /// Hex digest of the policy source (or artifact) this plan came from.
    pub policy_digest: String,
    /// Session id of the manifest, or `None` when every registered root was
    /// activated because no manifest was given (display only).
    pub session_id: Option<SelectorId>,
    /// Host path of bwrap; with `bwrap_pin`, launched via `/proc/self/fd/N`.
    pub bwrap: HostPath,
    pub bwrap_pin: Option<PinSlot>,
    /// Descriptors to retain at bind; index is [`PinSlot`].
    pub pins: Vec<Pin>,
    /// Setup operations in emission order (before `--`).
    pub ops: Vec<BwrapOp>,
    /// The command after `--`: runner segments, then the worker and its
    /// fixed arguments.
    pub command: Vec<ExecArg>,
    pub seccomp: Option<SeccompPlan>,
    pub active_roots: Vec<ActiveRoot>,
    pub quota_checks: Vec<QuotaCheck>,
    pub aggregate_quota: Option<AggregateQuota>,
    pub cgroup: Option<CgroupPolicy>,
    pub require_cgroup_v2: bool,
    pub watchdog: Option<Watchdog>,
}
