//! The launch plan: the one launch object that both `splashc emit` displays
//! and the runtime spawns. Pure data; produced by [`crate::lower::lower`]
//! from a checked policy and its [`crate::activate::Activation`].
//!
//! A plan is Bubblewrap's command line as data: an ordered list of setup
//! operations ([`BwrapOp`], in the emission order of
//! `docs/launch-plan.md`), the command after `--` ([`ExecArg`]: the runner
//! segments, then the worker and its fixed arguments), the descriptors to
//! pin at bind ([`Pin`]), the seccomp program and its installer
//! ([`SeccompPlan`]), and what the runtime must verify or enforce around the
//! process (quota checks, the cgroup policy, the watchdog). Only active roots
//! appear in it.
//!
//! Descriptor-backed values are typed [`Slot`]s, never strings: display code
//! renders them as placeholders, the runtime renders them as the descriptor
//! numbers it allocated for one launch. Both go through
//! [`LaunchPlan::bwrap_arguments`], so there is exactly one argv builder.
//!
//! A [`LaunchPlan`]'s structural invariants ([`PlanError`]) always hold: it
//! is built by lowering, read from its JSON form, or edited through a
//! [`PlanEdit`], and all three go through the same validation.

use serde::{Deserialize, Serialize};
pub use splash_seccomp::Arch;

use crate::model::{
    AggregateQuota, BrokerCatalog, CgroupPolicy, HostPath, ProjectQuota, SandboxPath, SelectorId,
    Watchdog, WorkerIdentity,
};

/// Index into [`LaunchPlan::pins`]: names one descriptor the runtime opens at
/// bind. In a [`LaunchPlan`] every slot names an existing pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PinSlot(
    /// The index into [`LaunchPlan::pins`].
    pub u16,
);

/// A value that only exists at spawn time: where the plan holds a `Slot`,
/// the argv holds whatever the renderer passed to
/// [`LaunchPlan::bwrap_arguments`] makes of it (a placeholder for review, a
/// descriptor number or device path for a launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// A fresh duplicate of a descriptor retained at bind.
    Pin(PinSlot),
    /// The anonymous descriptor holding the cBPF program for bwrap `--seccomp`.
    BwrapSeccomp,
    /// The anonymous descriptor holding the cBPF program for the runner handoff.
    RunnerSeccomp,
    /// The host path of the device node bound at `/dev/NAME` for one launch
    /// (a path, not a descriptor: Bubblewrap has no descriptor form of
    /// `--dev-bind`).
    Device(DeviceNode),
    /// The host's end of a learning run's listener socket, after a runner's
    /// `--learn-fd` ([`crate::learn`]). A plan holding it is a learning
    /// plan ([`LaunchPlan::is_learning`]), which only the learning launch
    /// accepts.
    LearnListener,
}

/// A device node that Bubblewrap's `--dev` binds from the host's `/dev`.
///
/// A host that launches as root runs the worker as host uid 0, the owner of
/// the host's nodes: without a capability it could still `chmod`, `chown`,
/// `utimensat` them or set an ACL on them, changing the host's own
/// `/dev/null`. Every plan therefore binds each of these again with
/// `--dev-bind` right after `--dev`; the runtime renders the source as a
/// private node the worker does not own when the worker would own the
/// host's node, and as the host's node otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceNode {
    /// `/dev/null` (character device 1:3).
    Null,
    /// `/dev/zero` (1:5).
    Zero,
    /// `/dev/full` (1:7).
    Full,
    /// `/dev/random` (1:8).
    Random,
    /// `/dev/urandom` (1:9).
    Urandom,
    /// `/dev/tty` (5:0).
    Tty,
}

impl DeviceNode {
    /// Its sandbox path, `/dev/NAME`.
    pub fn destination(self) -> String {
        format!("/dev/{}", self.name())
    }

    /// Every node Bubblewrap 0.8's `--dev` binds from the host, in its order.
    /// (`--dev` also creates `/dev/pts` as a new devpts instance, `/dev/ptmx`,
    /// `/dev/fd`, `/dev/stdin`, `/dev/stdout`, `/dev/stderr` and `/dev/core`
    /// as symbolic links and `/dev/shm` as a directory, all inside the
    /// sandbox's own tmpfs; `/dev/console` only when its stdout is a
    /// terminal, which a launch's private pipe never is.)
    pub const ALL: [DeviceNode; 6] = [
        DeviceNode::Null,
        DeviceNode::Zero,
        DeviceNode::Full,
        DeviceNode::Random,
        DeviceNode::Urandom,
        DeviceNode::Tty,
    ];

    /// The file name under `/dev` (`null` for [`DeviceNode::Null`]); also
    /// the node's name in JSON and in the `{dev:NAME}` display placeholder.
    pub fn name(self) -> &'static str {
        match self {
            DeviceNode::Null => "null",
            DeviceNode::Zero => "zero",
            DeviceNode::Full => "full",
            DeviceNode::Random => "random",
            DeviceNode::Urandom => "urandom",
            DeviceNode::Tty => "tty",
        }
    }

    /// The character device's fixed Linux major and minor numbers
    /// (`Documentation/admin-guide/devices.txt`).
    pub fn major_minor(self) -> (u32, u32) {
        match self {
            DeviceNode::Null => (1, 3),
            DeviceNode::Zero => (1, 5),
            DeviceNode::Full => (1, 7),
            DeviceNode::Random => (1, 8),
            DeviceNode::Urandom => (1, 9),
            DeviceNode::Tty => (5, 0),
        }
    }
}

/// What kind of object a pinned descriptor must refer to (re-checked through
/// the descriptor at bind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinKind {
    /// A directory (host-backed file roots).
    Directory,
    /// A regular file. Lowering makes no pin of this kind: a runtime mount
    /// source may be either type and is pinned as
    /// [`PinKind::FileOrDirectory`].
    RegularFile,
    /// A regular file with an execute bit.
    Executable,
    /// A runtime mount source, which may be a regular file or a directory
    /// (the runtime records which one it found and bwrap mounts it as such).
    FileOrDirectory,
    /// The network broker: `host_path` is the existing host-owned parent;
    /// the runtime creates the private `0700` broker directory inside it and
    /// pins that directory (never the parent itself).
    BrokerDirectory,
}

/// Why a descriptor is pinned: what the policy calls the object behind it,
/// for reports and for the runtime's error messages. Each role comes with a
/// fixed [`PinKind`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinRole {
    /// The source of a `runtime` mount ([`PinKind::FileOrDirectory`]),
    /// mounted with `--ro-bind-fd`.
    RuntimeMount,
    /// The source directory of the active host-backed file root with this id
    /// ([`PinKind::Directory`]), mounted with `--ro-bind-fd` or `--bind-fd`.
    FileRoot(SelectorId),
    /// The network broker's private directory
    /// ([`PinKind::BrokerDirectory`]), mounted read-only once.
    NetworkBroker,
    /// The bwrap executable, launched through `/proc/self/fd/N`.
    Bubblewrap,
    /// The fixed worker program, overlaid read-only at its worker-visible
    /// path.
    Worker,
    /// The rlimit runner, overlaid read-only at its worker-visible path.
    LimitRunner,
    /// The Landlock executable runner, overlaid read-only at its
    /// worker-visible path.
    LandlockRunner,
    /// The combined (one-hop) runner, overlaid read-only at its
    /// worker-visible path.
    CombinedRunner,
    /// An explicit `allow-exec` target of the Landlock allowlist, overlaid
    /// read-only at its worker-visible path.
    AllowedExecutable,
}

/// A descriptor to open at bind and duplicate at each spawn.
///
/// A pin is what makes `pin mounts` / `pin executables` hold: the runtime
/// opens the object once, checks its type through the descriptor, and hands
/// Bubblewrap a fresh duplicate per launch, so replacing the host path after
/// bind cannot substitute another object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Host path opened `O_PATH | O_NOFOLLOW | O_CLOEXEC` (after the runtime
    /// resolves it; for executable overlays this is the host path behind the
    /// worker-visible path through its runtime mount).
    pub host_path: HostPath,
    /// The type the object must have, checked through the descriptor at
    /// bind.
    pub kind: PinKind,
    /// What the object is in the policy.
    pub role: PinRole,
}

/// A bind-mount source: a host path Bubblewrap opens itself, or a pinned
/// descriptor (with `pin mounts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountSource {
    /// The host path, rendered as `--ro-bind PATH` / `--bind PATH`;
    /// Bubblewrap resolves it at launch.
    Path(HostPath),
    /// A pinned descriptor, rendered as `--ro-bind-fd FD` / `--bind-fd FD`.
    Pinned(PinSlot),
}

/// A worker-visible mount point for `--chdir` and `--remount-ro`, which,
/// unlike a [`SandboxPath`], may be `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MountPoint {
    /// The sandbox's `/`.
    Root,
    /// Any other worker-visible path.
    Path(SandboxPath),
}

/// One Bubblewrap setup operation. Modifiers (`--size`) are fields of the
/// operation they modify, so a dangling modifier cannot be built.
///
/// Each variant renders as the Bubblewrap arguments named in its
/// documentation ([`LaunchPlan::bwrap_arguments`]); Bubblewrap applies them
/// in order, so a later mount covers an earlier one at the same path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BwrapOp {
    /// `--seccomp FD` with [`Slot::BwrapSeccomp`]; only ever the first op,
    /// present exactly when the seccomp delivery is
    /// [`SeccompDelivery::Bubblewrap`].
    Seccomp,
    /// `--unshare-all`: new namespaces of every kind, the network namespace
    /// included (every plan; no plan ever shares the host network).
    UnshareAll,
    /// `--unshare-user`: a user namespace is required, not best-effort
    /// (`user-namespaces none`; always followed by [`BwrapOp::DisableUserns`]).
    UnshareUser,
    /// `--disable-userns`: the worker cannot create further user namespaces
    /// (`user-namespaces none`).
    DisableUserns,
    /// `--cap-drop ALL`: no capability reaches the worker, even when the
    /// host launches as root (every plan).
    CapDropAll,
    /// `--clearenv`: the worker inherits no environment variable (every
    /// plan; no plan sets one).
    ClearEnv,
    /// `--new-session`: the worker is in a new session, without the host's
    /// controlling terminal (every plan).
    NewSession,
    /// `--die-with-parent`: the command is killed when Bubblewrap's parent
    /// (the launching process) dies (every plan).
    DieWithParent,
    /// `--as-pid-1`: the command is the sandbox's pid 1, so no Bubblewrap
    /// process runs inside the sandbox's pid namespace (an init without the
    /// worker's seccomp filter, rlimits and Landlock domain would otherwise
    /// share the worker's uid).
    AsPid1,
    /// `--chdir PATH`: the command starts in this directory, never the
    /// host's current directory (every plan: `/`).
    Chdir(MountPoint),
    /// `--proc PATH`: a fresh procfs for the sandbox's pid namespace (every
    /// plan: `/proc`, remounted read-only right after).
    Proc(SandboxPath),
    /// `--dev PATH`: a minimal tmpfs `/dev` (every plan: `/dev`), whose host
    /// nodes are bound again by the [`BwrapOp::DevBind`]s that follow.
    Dev(SandboxPath),
    /// `--dev-bind SOURCE /dev/NAME` with [`Slot::Device`] as the source:
    /// emitted for every [`DeviceNode`] right after [`BwrapOp::Dev`].
    DevBind(DeviceNode),
    /// `[--size BYTES] --tmpfs DEST`: an empty tmpfs (the private `/tmp`, or
    /// an ephemeral file root).
    Tmpfs {
        /// Where the tmpfs is mounted.
        destination: SandboxPath,
        /// The `--size` bound in bytes, 1 to
        /// [`MAX_TMPFS_BYTES`](crate::model::MAX_TMPFS_BYTES). Lowering
        /// leaves it `None` only for an unbounded private `/tmp` (ephemeral
        /// roots are always bounded).
        size_bytes: Option<u64>,
    },
    /// `--ro-bind SRC DEST` or `--ro-bind-fd FD DEST`: a read-only bind
    /// (runtime mounts, read-only roots, the broker directory, executable
    /// overlays).
    RoBind {
        /// The host object bound.
        source: MountSource,
        /// Where the worker sees it.
        destination: SandboxPath,
    },
    /// `--bind SRC DEST` or `--bind-fd FD DEST`: a writable bind (read-write
    /// host roots only).
    Bind {
        /// The host directory bound.
        source: MountSource,
        /// Where the worker sees it.
        destination: SandboxPath,
    },
    /// `--remount-ro PATH`: makes an existing mount read-only
    /// (non-recursively): `/proc` in every plan, then `/dev` and `/` under
    /// `writes bounded`.
    RemountRo(MountPoint),
}

/// One argument of the command bwrap executes after `--`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecArg {
    /// A fixed argument from the policy: a runner or worker path, a runner
    /// flag and its value, `--`, or a fixed worker argument.
    Literal(String),
    /// A value known only at spawn. Lowering puts only
    /// [`Slot::RunnerSeccomp`] here (after a runner's `--seccomp-fd`); a
    /// [`LaunchPlan`] never passes [`Slot::BwrapSeccomp`] to the command.
    Slot(Slot),
}

/// Who installs the seccomp program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeccompDelivery {
    /// Nobody. Never the delivery of a [`SeccompPlan`] in a [`LaunchPlan`]
    /// (a plan without a filter has no `SeccompPlan`).
    None,
    /// `--seccomp FD` as bwrap's first arguments.
    Bubblewrap,
    /// Through the Landlock or combined runner's descriptor handoff.
    Runner,
}

/// The compiled seccomp program for one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompPlan {
    /// Who installs the program: Bubblewrap (before the first runner) or the
    /// Landlock / combined runner (after Landlock, just before its final
    /// exec; strict profiles only).
    pub delivery: SeccompDelivery,
    /// The architecture the program was compiled for; equal to
    /// [`LaunchPlan::arch`]. The program starts with an architecture check
    /// that kills a syscall made under any other ABI.
    pub arch: Arch,
    /// The profile, for reports.
    pub profile: SeccompProfile,
    /// Whether the executable-allowlist guard is part of the program: with a
    /// Landlock allowlist, `memfd_create` without `MFD_NOEXEC_SEAL` fails
    /// with `EACCES`.
    #[serde(default)]
    pub exec_allowlist_guard: bool,
    /// Raw `struct sock_filter` bytes in native endianness for `arch`
    /// (lowercase hex in JSON).
    #[serde(with = "hex_bytes")]
    pub program: Vec<u8>,
}

/// Which seccomp profile a plan's program implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SeccompProfile {
    /// `deny-known-escape-surface`.
    DenyKnownEscapeSurface,
    /// `strict-allowlist`.
    StrictAllowlist,
    /// `baseline`: the filter exists only for the executable-allowlist guard.
    Baseline,
}

impl SeccompProfile {
    /// The profile of a [`splash_seccomp::Profile`].
    pub fn of(profile: &splash_seccomp::Profile) -> Self {
        match profile {
            splash_seccomp::Profile::DenyKnownEscapeSurface => Self::DenyKnownEscapeSurface,
            splash_seccomp::Profile::StrictAllowlist(_) => Self::StrictAllowlist,
            splash_seccomp::Profile::Baseline => Self::Baseline,
        }
    }

    /// The stable name in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DenyKnownEscapeSurface => "deny-known-escape-surface",
            Self::StrictAllowlist => "strict-allowlist",
            Self::Baseline => "baseline",
        }
    }
}

impl std::fmt::Display for SeccompProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an active file root is mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RootMode {
    /// A read-only bind of a host directory.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// A read-write bind of a host directory without a project quota.
    #[serde(rename = "read-write")]
    ReadWrite,
    /// A read-write bind of a host directory under a verified project quota.
    #[serde(rename = "read-write+quota")]
    ReadWriteQuota,
    /// An ephemeral tmpfs.
    #[serde(rename = "tmpfs")]
    Tmpfs,
}

impl RootMode {
    /// The stable name in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::ReadWrite => "read-write",
            Self::ReadWriteQuota => "read-write+quota",
            Self::Tmpfs => "tmpfs",
        }
    }
}

impl std::fmt::Display for RootMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An active file root after activation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveRoot {
    /// The root's selector id, as registered by the policy and selected by
    /// the manifest.
    pub id: SelectorId,
    /// Where the worker sees the root.
    pub destination: SandboxPath,
    /// How the root is mounted.
    pub mode: RootMode,
}

/// A project-quota verification the runtime performs at bind on a pinned root.
///
/// Through the pinned descriptor (the very directory Bubblewrap will mount),
/// the runtime checks that the directory carries the project id with
/// inheritance, that the kernel enforces nonzero hard limits no larger than
/// the ceilings, and that usage is within them; any failure refuses the
/// launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaCheck {
    /// The pin of the root's directory: a [`PinKind::Directory`] of a
    /// [`PinRole::FileRoot`], mounted read-write by a [`BwrapOp::Bind`].
    pub slot: PinSlot,
    /// The project id and the largest hard limits accepted.
    pub quota: ProjectQuota,
}

/// Where one of the worker's standard streams goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamMode {
    /// A private pipe owned by the host.
    Pipe,
    /// `/dev/null`.
    Null,
}

/// The worker's standard streams (fixed; not policy-selectable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stdio {
    /// [`StreamMode::Pipe`].
    pub stdin: StreamMode,
    /// [`StreamMode::Pipe`].
    pub stdout: StreamMode,
    /// [`StreamMode::Null`], so an undrained diagnostic pipe cannot block
    /// the worker.
    pub stderr: StreamMode,
}

impl Default for Stdio {
    fn default() -> Self {
        Self {
            stdin: StreamMode::Pipe,
            stdout: StreamMode::Pipe,
            stderr: StreamMode::Null,
        }
    }
}

/// The brokered network-origin mount of an activated plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerPlan {
    /// The pin of the private broker directory.
    pub slot: PinSlot,
    /// Where the worker sees the broker directory (mounted read-only there,
    /// exactly once).
    pub destination: SandboxPath,
    /// The catalog kind the broker serves.
    pub catalog: BrokerCatalog,
    /// The exact network-origin ids, in sorted order (equal to the
    /// manifest's).
    pub ids: Vec<SelectorId>,
}

/// The fields of a [`LaunchPlan`]: its serialized shape. It becomes a
/// [`LaunchPlan`] only through [`LaunchPlan::new`], which checks every
/// structural invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RawPlan {
    /// Launch-plan format version.
    pub format: u32,
    /// The policy's name (for reports).
    pub policy_name: String,
    /// Hex digest of the policy source (or artifact) this plan came from.
    pub policy_digest: String,
    /// Session id of the manifest, or `None` when every registered root was
    /// activated because no manifest was given (display only).
    pub session_id: Option<SelectorId>,
    /// True when no manifest was given and every registered root is active
    /// (for display and review).
    pub all_registered_roots_active: bool,
    /// Target architecture of the seccomp program and runner binaries.
    pub arch: Arch,
    /// Host path of bwrap; with `bwrap_pin`, launched via `/proc/self/fd/N`.
    pub bwrap: HostPath,
    /// The pin of the Bubblewrap executable, when executables are pinned.
    pub bwrap_pin: Option<PinSlot>,
    /// Descriptors to retain at bind; index is [`PinSlot`].
    pub pins: Vec<Pin>,
    /// Setup operations in emission order (before `--`).
    pub ops: Vec<BwrapOp>,
    /// The command after `--`: runner segments, then the worker and its
    /// fixed arguments.
    pub command: Vec<ExecArg>,
    /// The seccomp program and how it is installed, if any.
    pub seccomp: Option<SeccompPlan>,
    /// The active file roots, in policy order.
    pub active_roots: Vec<ActiveRoot>,
    /// Project-quota verifications performed at bind.
    pub quota_checks: Vec<QuotaCheck>,
    /// The brokered network-origin mount, if active.
    pub network_broker: Option<BrokerPlan>,
    /// The worker environment: always empty (`--clearenv`, no `--setenv`).
    pub environment: Vec<(String, String)>,
    /// The worker's standard streams (always [`Stdio::default`]).
    pub stdio: Stdio,
    /// The aggregate project-quota ceiling over the quota roots.
    pub aggregate_quota: Option<AggregateQuota>,
    /// The cgroup-v2 policy, if configured.
    pub cgroup: Option<CgroupPolicy>,
    /// Whether the launch must run inside its cgroup-v2 boundary.
    pub require_cgroup_v2: bool,
    /// The host wall-clock watchdog, if configured.
    pub watchdog: Option<Watchdog>,
    /// The host identity Bubblewrap and the worker run as (`identity`), if
    /// set.
    pub identity: Option<WorkerIdentity>,
}

/// The complete launch object, whose structural invariants hold.
///
/// A plan is built by [`crate::lower::lower`], read from its JSON form or
/// edited ([`LaunchPlan::edit`]); all go through the same validation ([`PlanError`] names each rule), so
/// every slot a plan names exists, the seccomp program reaches exactly the
/// installer its delivery names, and the fixed parts of the launch (standard
/// streams, empty environment, a required cgroup's policy) are present.
/// What only the host can answer (the hardening prefix Bubblewrap must see,
/// the architecture, the files behind the paths) is re-checked by the
/// runtime at bind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawPlan")]
pub struct LaunchPlan {
    raw: RawPlan,
}

/// A structural invariant of a [`LaunchPlan`] does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The plan is in another layout version.
    #[error("launch-plan format {0} is not the supported format {PLAN_FORMAT}")]
    Format(u32),
    /// A slot names a pin the plan does not have.
    #[error("{what} names missing pin {slot}")]
    MissingPin {
        /// What names the pin.
        what: SlotUser,
        /// The slot index.
        slot: u16,
    },
    /// More pins than a [`PinSlot`] can index.
    #[error("the plan has {0} descriptor pins; at most 65536 are possible")]
    TooManyPins(usize),
    /// A slot names a pin of the wrong kind or role.
    #[error("{what} names pin {slot}, which is not {expected}")]
    WrongPin {
        /// What names the pin.
        what: SlotUser,
        /// The slot index.
        slot: u16,
        /// The pin it must be.
        expected: PinExpectation,
    },
    /// The Bubblewrap pin holds another path than the plan's Bubblewrap.
    #[error("bubblewrap pin {slot} does not hold `{bwrap}`")]
    BubblewrapPin {
        /// The slot index.
        slot: u16,
        /// The plan's Bubblewrap path.
        bwrap: HostPath,
    },
    /// The seccomp program does not reach its installer, or a descriptor
    /// slot for it appears where it is not delivered.
    #[error("{0}")]
    SeccompDelivery(DeliveryDefect),
    /// The seccomp program is not a whole, nonempty number of instructions.
    #[error("the seccomp program is {0} bytes, not a whole nonzero number of instructions")]
    SeccompProgram(usize),
    /// The seccomp program is for another architecture than the plan.
    #[error(
        "the seccomp program is for {}, the plan for {}",
        .program.name(),
        .plan.name()
    )]
    SeccompArch {
        /// The program's architecture.
        program: Arch,
        /// The plan's architecture.
        plan: Arch,
    },
    /// Standard streams other than the fixed ones, or an environment.
    #[error(
        "worker standard streams other than a stdin pipe, a stdout pipe and stderr on `/dev/null`, or a worker environment"
    )]
    Streams,
    /// A required cgroup-v2 boundary without its policy.
    #[error("the plan requires a cgroup-v2 boundary but carries no cgroup policy")]
    MissingCgroup,
    /// Quota roots without an aggregate ceiling.
    #[error("quota roots without an aggregate maximum")]
    QuotaWithoutAggregate,
    /// The network broker's pin and mounts are inconsistent.
    #[error("the network broker {0}")]
    Broker(BrokerDefect),
}

/// What in a plan names a descriptor pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SlotUser {
    /// The Bubblewrap pin.
    Bubblewrap,
    /// A mount operation.
    Mount,
    /// The worker command.
    Command,
    /// A quota check.
    QuotaCheck,
}

impl std::fmt::Display for SlotUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Bubblewrap => "bubblewrap",
            Self::Mount => "a mount",
            Self::Command => "the command",
            Self::QuotaCheck => "a quota check",
        })
    }
}

/// What the pin a slot names must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PinExpectation {
    /// The Bubblewrap executable.
    BubblewrapExecutable,
    /// A file-root directory.
    FileRootDirectory,
    /// A pin mounted read-write.
    MountedReadWrite,
}

impl std::fmt::Display for PinExpectation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::BubblewrapExecutable => "the bubblewrap executable",
            Self::FileRootDirectory => "a file-root directory",
            Self::MountedReadWrite => "mounted read-write",
        })
    }
}

/// How a plan's seccomp program fails to reach its installer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryDefect {
    /// The command passes Bubblewrap's seccomp descriptor.
    #[error("the command passes bubblewrap's seccomp descriptor")]
    BwrapSlotInCommand,
    /// Bubblewrap delivers it but `--seccomp` is not exactly the first
    /// operation.
    #[error(
        "the seccomp program is delivered by bubblewrap but `--seccomp` is not exactly its first operation"
    )]
    NotFirst,
    /// A runner delivers it but the command does not pass it exactly once.
    #[error(
        "the seccomp program is delivered by a runner, but the command does not pass it exactly once"
    )]
    RunnerSlot,
    /// A program without a delivery.
    #[error("the plan names a seccomp program without a way to install it")]
    Undelivered,
    /// `--seccomp` without Bubblewrap delivery.
    #[error("the plan passes `--seccomp` but its seccomp program is not delivered by bubblewrap")]
    StrayBwrapOption,
    /// A runner descriptor without runner delivery.
    #[error("the command passes a runner seccomp descriptor the plan does not deliver")]
    StrayRunnerSlot,
}

/// How a plan's network broker pin and mounts are inconsistent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerDefect {
    /// A broker pin without a broker plan.
    #[error("has a pin but no broker plan")]
    PinWithoutPlan,
    /// Not exactly one broker directory pin, at the broker's slot.
    #[error("does not pin exactly one broker directory at the broker's slot")]
    Pin,
    /// The directory is mounted at another destination.
    #[error("directory is mounted somewhere other than its destination")]
    Destination,
    /// The directory is mounted writable.
    #[error("directory is mounted writable")]
    Writable,
    /// The directory is not mounted exactly once read-only.
    #[error("directory is not mounted exactly once read-only")]
    MountCount,
}

mod edit;
pub use edit::{EditError, PlanEdit};

/// Version of the [`LaunchPlan`] layout.
pub const PLAN_FORMAT: u32 = 1;

impl LaunchPlan {
    /// Validates `raw`; the one constructor (lowering and deserialization
    /// both use it).
    pub(crate) fn new(raw: RawPlan) -> Result<Self, PlanError> {
        validate(&raw)?;
        Ok(Self { raw })
    }

    /// The plan's fields, for editing; [`LaunchPlan::new`] validates them
    /// again.
    pub(crate) fn into_raw(self) -> RawPlan {
        self.raw
    }

    /// The plan's fields.
    pub(crate) fn raw(&self) -> &RawPlan {
        &self.raw
    }

    /// Launch-plan format version ([`PLAN_FORMAT`]).
    pub fn format(&self) -> u32 {
        self.raw.format
    }

    /// The policy's name (for reports).
    pub fn policy_name(&self) -> &str {
        &self.raw.policy_name
    }

    /// Hex digest of the policy source (or artifact) this plan came from.
    pub fn policy_digest(&self) -> &str {
        &self.raw.policy_digest
    }

    /// Session id of the manifest, or `None` when no manifest was given.
    pub fn session_id(&self) -> Option<&SelectorId> {
        self.raw.session_id.as_ref()
    }

    /// True when no manifest was given and every registered root is active.
    pub fn all_registered_roots_active(&self) -> bool {
        self.raw.all_registered_roots_active
    }

    /// Target architecture of the seccomp program and runner binaries.
    pub fn arch(&self) -> Arch {
        self.raw.arch
    }

    /// Host path of bwrap.
    pub fn bwrap(&self) -> &HostPath {
        &self.raw.bwrap
    }

    /// The pin of the Bubblewrap executable, when executables are pinned
    /// (it names a pin of [`PinRole::Bubblewrap`] holding [`Self::bwrap`]).
    pub fn bwrap_pin(&self) -> Option<PinSlot> {
        self.raw.bwrap_pin
    }

    /// Descriptors to retain at bind; index is [`PinSlot`].
    pub fn pins(&self) -> &[Pin] {
        &self.raw.pins
    }

    /// The pin at `slot` (every slot a plan names exists).
    pub fn pin(&self, slot: PinSlot) -> &Pin {
        &self.raw.pins[usize::from(slot.0)]
    }

    /// Setup operations in emission order (before `--`).
    pub fn ops(&self) -> &[BwrapOp] {
        &self.raw.ops
    }

    /// The command after `--`: runner segments, then the worker and its
    /// fixed arguments.
    pub fn command(&self) -> &[ExecArg] {
        &self.raw.command
    }

    /// The seccomp program and how it is installed, if any.
    pub fn seccomp(&self) -> Option<&SeccompPlan> {
        self.raw.seccomp.as_ref()
    }

    /// The active file roots, in policy order.
    pub fn active_roots(&self) -> &[ActiveRoot] {
        &self.raw.active_roots
    }

    /// Project-quota verifications performed at bind (each names a file-root
    /// directory pin).
    pub fn quota_checks(&self) -> &[QuotaCheck] {
        &self.raw.quota_checks
    }

    /// The brokered network-origin mount, if active.
    pub fn network_broker(&self) -> Option<&BrokerPlan> {
        self.raw.network_broker.as_ref()
    }

    /// The worker environment: always empty.
    pub fn environment(&self) -> &[(String, String)] {
        &self.raw.environment
    }

    /// The worker's standard streams: always [`Stdio::default`].
    pub fn stdio(&self) -> &Stdio {
        &self.raw.stdio
    }

    /// The aggregate project-quota ceiling (present whenever the plan has
    /// quota checks).
    pub fn aggregate_quota(&self) -> Option<AggregateQuota> {
        self.raw.aggregate_quota
    }

    /// The cgroup-v2 policy (present whenever [`Self::require_cgroup_v2`]).
    pub fn cgroup(&self) -> Option<&CgroupPolicy> {
        self.raw.cgroup.as_ref()
    }

    /// Whether the launch must run inside its cgroup-v2 boundary.
    pub fn require_cgroup_v2(&self) -> bool {
        self.raw.require_cgroup_v2
    }

    /// The host wall-clock watchdog, if configured.
    pub fn watchdog(&self) -> Option<Watchdog> {
        self.raw.watchdog
    }

    /// The host identity Bubblewrap and the worker run as, if set.
    pub fn identity(&self) -> Option<WorkerIdentity> {
        self.raw.identity
    }

    /// Whether this is a learning plan: its command hands a recording
    /// filter's listener to the host ([`Slot::LearnListener`]). Only
    /// `splashc learn` makes and launches one; a production launch refuses
    /// it.
    pub fn is_learning(&self) -> bool {
        self.raw
            .command
            .contains(&ExecArg::Slot(Slot::LearnListener))
    }

    /// What the worker-visible `path` is reached through in this plan's
    /// sandbox: Bubblewrap applies the operations in order and a later mount
    /// hides an earlier one, so the last operation whose destination covers
    /// `path` (the path itself or an ancestor, [`SandboxPath::is_within`])
    /// decides; `--remount-ro` and `--chdir` mount nothing and are passed
    /// over.
    pub fn mount_behind<'a>(&'a self, path: &'a SandboxPath) -> Behind<'a> {
        mount_behind(self.ops(), path)
    }
}

/// The fixed hardening prefix: the operations every plan starts with, after
/// an optional `--seccomp`. With `lockdown` (the policy's
/// `no-further-user-namespaces`), `--unshare-user --disable-userns` follow
/// `--unshare-all`. Lowering emits exactly these, bind re-verifies a plan
/// against them, and their text is what [`LaunchPlan::bwrap_arguments`]
/// renders.
pub fn hardening_prefix(lockdown: bool) -> Vec<BwrapOp> {
    let fixed = |path: &str| SandboxPath::new(path).expect("a fixed sandbox path");
    let mut ops = vec![BwrapOp::UnshareAll];
    if lockdown {
        ops.extend([BwrapOp::UnshareUser, BwrapOp::DisableUserns]);
    }
    ops.extend([
        BwrapOp::CapDropAll,
        BwrapOp::ClearEnv,
        BwrapOp::NewSession,
        BwrapOp::DieWithParent,
        BwrapOp::AsPid1,
        BwrapOp::Chdir(MountPoint::Root),
        BwrapOp::Proc(fixed("/proc")),
        // Every kernel knob under `/proc` (`sys`, `sysrq-trigger`, `irq`,
        // `bus`, `fs`, other processes' `mem`) is read-only whatever the
        // policy says: a worker launched by a root host is host uid 0, and
        // sysctl and `/proc/PID/mem` writes check the uid, not capabilities.
        BwrapOp::RemountRo(MountPoint::Path(fixed("/proc"))),
        BwrapOp::Dev(fixed("/dev")),
    ]);
    // `--dev` binds the host's own nodes, which a worker launched by a root
    // host owns; each is bound again from a source the runtime picks per
    // launch (a private node the worker does not own, when it would own the
    // host's).
    ops.extend(DeviceNode::ALL.map(BwrapOp::DevBind));
    ops
}

/// What a worker-visible path is reached through: the last mount operation
/// that covers it ([`LaunchPlan::mount_behind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behind<'a> {
    /// No mount operation covers the path.
    Unmounted,
    /// A read-only bind of `source`. `below` is the rest of the path under
    /// the mount's destination: empty for the destination itself, otherwise
    /// starting with `/`.
    ReadOnly {
        /// The mount's source.
        source: &'a MountSource,
        /// The path below the mount's destination.
        below: &'a str,
    },
    /// A read-write bind of `source`, `below` as for [`Behind::ReadOnly`].
    ReadWrite {
        /// The mount's source.
        source: &'a MountSource,
        /// The path below the mount's destination.
        below: &'a str,
    },
    /// A mount with no host file behind it: a tmpfs, `/proc`, `/dev` or a
    /// device node.
    Synthetic,
}

impl Behind<'_> {
    /// The host path behind a bind: its source (a pinned source's recorded
    /// host path, from `pins`) followed by the path below its destination;
    /// `None` for an unmounted or synthetic path, or a slot `pins` lacks.
    pub fn host_path(&self, pins: &[Pin]) -> Option<String> {
        let (source, below) = match self {
            Behind::ReadOnly { source, below } | Behind::ReadWrite { source, below } => {
                (source, below)
            }
            Behind::Unmounted | Behind::Synthetic => return None,
        };
        let base = match source {
            MountSource::Path(p) => p,
            MountSource::Pinned(slot) => &pins.get(usize::from(slot.0))?.host_path,
        };
        Some(format!("{base}{below}"))
    }
}

/// [`LaunchPlan::mount_behind`] over `ops` (lowering asks it while the
/// operations are built).
pub(crate) fn mount_behind<'a>(ops: &'a [BwrapOp], path: &'a SandboxPath) -> Behind<'a> {
    let below = |destination: &SandboxPath| &path.as_str()[destination.as_str().len()..];
    let mut found = Behind::Unmounted;
    for op in ops {
        found = match op {
            BwrapOp::RoBind {
                source,
                destination,
            } if path.is_within(destination) => Behind::ReadOnly {
                source,
                below: below(destination),
            },
            BwrapOp::Bind {
                source,
                destination,
            } if path.is_within(destination) => Behind::ReadWrite {
                source,
                below: below(destination),
            },
            BwrapOp::Tmpfs { destination, .. }
            | BwrapOp::Proc(destination)
            | BwrapOp::Dev(destination)
                if path.is_within(destination) =>
            {
                Behind::Synthetic
            }
            BwrapOp::DevBind(node) if path.as_str() == node.destination() => Behind::Synthetic,
            _ => continue,
        };
    }
    found
}

impl TryFrom<RawPlan> for LaunchPlan {
    type Error = PlanError;
    fn try_from(raw: RawPlan) -> Result<Self, PlanError> {
        Self::new(raw)
    }
}

impl Serialize for LaunchPlan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

/// The structural invariants of a plan (see [`PlanError`]).
fn validate(plan: &RawPlan) -> Result<(), PlanError> {
    if plan.format != PLAN_FORMAT {
        return Err(PlanError::Format(plan.format));
    }
    if plan.pins.len() > usize::from(u16::MAX) + 1 {
        return Err(PlanError::TooManyPins(plan.pins.len()));
    }
    let pin = |what: SlotUser, slot: PinSlot| {
        plan.pins
            .get(usize::from(slot.0))
            .ok_or(PlanError::MissingPin { what, slot: slot.0 })
    };
    if let Some(slot) = plan.bwrap_pin {
        let p = pin(SlotUser::Bubblewrap, slot)?;
        if p.kind != PinKind::Executable || p.role != PinRole::Bubblewrap {
            return Err(PlanError::WrongPin {
                what: SlotUser::Bubblewrap,
                slot: slot.0,
                expected: PinExpectation::BubblewrapExecutable,
            });
        }
        if p.host_path != plan.bwrap {
            return Err(PlanError::BubblewrapPin {
                slot: slot.0,
                bwrap: plan.bwrap.clone(),
            });
        }
    }
    for op in &plan.ops {
        if let BwrapOp::RoBind {
            source: MountSource::Pinned(slot),
            ..
        }
        | BwrapOp::Bind {
            source: MountSource::Pinned(slot),
            ..
        } = op
        {
            pin(SlotUser::Mount, *slot)?;
        }
    }
    for arg in &plan.command {
        if let ExecArg::Slot(Slot::Pin(slot)) = arg {
            pin(SlotUser::Command, *slot)?;
        }
    }
    for check in &plan.quota_checks {
        let p = pin(SlotUser::QuotaCheck, check.slot)?;
        if p.kind != PinKind::Directory || !matches!(p.role, PinRole::FileRoot(_)) {
            return Err(PlanError::WrongPin {
                what: SlotUser::QuotaCheck,
                slot: check.slot.0,
                expected: PinExpectation::FileRootDirectory,
            });
        }
        let mounted_writable = plan.ops.iter().any(|op| {
            matches!(op, BwrapOp::Bind { source: MountSource::Pinned(s), .. } if *s == check.slot)
        });
        if !mounted_writable {
            return Err(PlanError::WrongPin {
                what: SlotUser::QuotaCheck,
                slot: check.slot.0,
                expected: PinExpectation::MountedReadWrite,
            });
        }
    }
    if !plan.quota_checks.is_empty() && plan.aggregate_quota.is_none() {
        return Err(PlanError::QuotaWithoutAggregate);
    }
    validate_broker(plan)?;
    validate_seccomp(plan)?;
    if plan.stdio != Stdio::default() || !plan.environment.is_empty() {
        return Err(PlanError::Streams);
    }
    if plan.require_cgroup_v2 && plan.cgroup.is_none() {
        return Err(PlanError::MissingCgroup);
    }
    Ok(())
}

/// Exactly one broker pin exists when a broker is planned, at its slot, and
/// it is mounted once, read-only, at the broker's destination.
fn validate_broker(plan: &RawPlan) -> Result<(), PlanError> {
    let broker_pins: Vec<usize> = plan
        .pins
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind == PinKind::BrokerDirectory || p.role == PinRole::NetworkBroker)
        .map(|(i, _)| i)
        .collect();
    let Some(broker) = &plan.network_broker else {
        if broker_pins.is_empty() {
            return Ok(());
        }
        return Err(PlanError::Broker(BrokerDefect::PinWithoutPlan));
    };
    let slot = usize::from(broker.slot.0);
    if broker_pins != [slot]
        || plan.pins[slot].kind != PinKind::BrokerDirectory
        || plan.pins[slot].role != PinRole::NetworkBroker
    {
        return Err(PlanError::Broker(BrokerDefect::Pin));
    }
    let mut read_only = 0;
    for op in &plan.ops {
        match op {
            BwrapOp::RoBind {
                source: MountSource::Pinned(s),
                destination,
            } if *s == broker.slot => {
                if *destination != broker.destination {
                    return Err(PlanError::Broker(BrokerDefect::Destination));
                }
                read_only += 1;
            }
            BwrapOp::Bind {
                source: MountSource::Pinned(s),
                ..
            } if *s == broker.slot => {
                return Err(PlanError::Broker(BrokerDefect::Writable));
            }
            _ => {}
        }
    }
    if read_only != 1 {
        return Err(PlanError::Broker(BrokerDefect::MountCount));
    }
    Ok(())
}

/// The seccomp program reaches its installer: a leading `--seccomp`
/// operation exactly when Bubblewrap installs it, one runner `--seccomp-fd`
/// slot exactly when a runner does; no profile without a delivery; the
/// program is whole instructions for the plan's architecture.
fn validate_seccomp(plan: &RawPlan) -> Result<(), PlanError> {
    let delivery = plan.seccomp.as_ref().map(|s| &s.delivery);
    let bwrap_ops = plan
        .ops
        .iter()
        .filter(|op| **op == BwrapOp::Seccomp)
        .count();
    let runner_slots = plan
        .command
        .iter()
        .filter(|a| **a == ExecArg::Slot(Slot::RunnerSeccomp))
        .count();
    if plan.command.contains(&ExecArg::Slot(Slot::BwrapSeccomp)) {
        return Err(PlanError::SeccompDelivery(
            DeliveryDefect::BwrapSlotInCommand,
        ));
    }
    match delivery {
        Some(SeccompDelivery::Bubblewrap)
            if bwrap_ops != 1 || plan.ops.first() != Some(&BwrapOp::Seccomp) =>
        {
            return Err(PlanError::SeccompDelivery(DeliveryDefect::NotFirst));
        }
        Some(SeccompDelivery::Runner) if runner_slots != 1 => {
            return Err(PlanError::SeccompDelivery(DeliveryDefect::RunnerSlot));
        }
        Some(SeccompDelivery::None) => {
            return Err(PlanError::SeccompDelivery(DeliveryDefect::Undelivered));
        }
        _ => {}
    }
    if bwrap_ops > 0 && delivery != Some(&SeccompDelivery::Bubblewrap) {
        return Err(PlanError::SeccompDelivery(DeliveryDefect::StrayBwrapOption));
    }
    if runner_slots > 0 && delivery != Some(&SeccompDelivery::Runner) {
        return Err(PlanError::SeccompDelivery(DeliveryDefect::StrayRunnerSlot));
    }
    if let Some(seccomp) = &plan.seccomp {
        let len = seccomp.program.len();
        if len == 0 || !len.is_multiple_of(8) {
            return Err(PlanError::SeccompProgram(len));
        }
        if seccomp.arch != plan.arch {
            return Err(PlanError::SeccompArch {
                program: seccomp.arch,
                plan: plan.arch,
            });
        }
    }
    Ok(())
}

/// Byte strings as lowercase hex in JSON.
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            out.push_str(&format!("{b:02x}"));
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() % 2 != 0 {
            return Err(D::Error::custom("hex string has an odd length"));
        }
        (0..text.len())
            .step_by(2)
            .map(|i| {
                text.get(i..i + 2)
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                    .ok_or_else(|| D::Error::custom("invalid hex digit"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activate::activate;
    use crate::lower::lower;
    use crate::lower::tests::{checked, sample_raw};
    use crate::model::SeccompPolicy;

    fn sandbox(path: &str) -> SandboxPath {
        SandboxPath::new(path).expect("sandbox path")
    }

    fn ro(source: &str, destination: &str) -> BwrapOp {
        BwrapOp::RoBind {
            source: MountSource::Path(HostPath::new(source).expect("host path")),
            destination: sandbox(destination),
        }
    }

    /// The cases on which the earlier rules disagreed (lowering took the
    /// first covering runtime mount and passed over writable mounts; an
    /// earlier diagnosis took the longest destination; bind the last
    /// covering mount): Bubblewrap applies the operations in order, so the
    /// last covering mount decides, whatever its kind or length.
    #[test]
    fn the_last_mount_covering_a_path_is_what_is_behind_it() {
        let source = |p: &str| MountSource::Path(HostPath::new(p).expect("host path"));
        let (a, b) = (source("/host/a"), source("/host/b"));
        let path = sandbox("/usr/lib/tool");
        let behind = |ops: &[BwrapOp]| match mount_behind(ops, &path) {
            Behind::ReadOnly { source, below } => Some((source.clone(), below.to_owned())),
            _ => None,
        };
        // A shorter destination mounted later hides the longer one.
        let ops = [ro("/host/a", "/usr/lib"), ro("/host/b", "/usr")];
        assert_eq!(behind(&ops), Some((b.clone(), "/lib/tool".to_owned())));
        // Control: in the other order the inner mount is on top.
        let ops = [ro("/host/b", "/usr"), ro("/host/a", "/usr/lib")];
        assert_eq!(behind(&ops), Some((a.clone(), "/tool".to_owned())));
        // A writable mount or a tmpfs over a read-only one decides.
        let rw = BwrapOp::Bind {
            source: a.clone(),
            destination: sandbox("/usr/lib"),
        };
        let ops = [ro("/host/b", "/usr"), rw];
        assert_eq!(
            mount_behind(&ops, &path),
            Behind::ReadWrite {
                source: &a,
                below: "/tool"
            }
        );
        let tmpfs = BwrapOp::Tmpfs {
            destination: sandbox("/usr"),
            size_bytes: None,
        };
        let ops = [ro("/host/b", "/usr"), tmpfs];
        assert_eq!(mount_behind(&ops, &path), Behind::Synthetic);
        // `--remount-ro` mounts nothing.
        let ops = [
            ro("/host/b", "/usr"),
            BwrapOp::RemountRo(MountPoint::Root),
            BwrapOp::RemountRo(MountPoint::Path(sandbox("/usr"))),
        ];
        assert_eq!(behind(&ops), Some((b.clone(), "/lib/tool".to_owned())));
        // A destination covers whole components only; the destination itself
        // has nothing below it.
        assert_eq!(
            mount_behind(&[ro("/host/a", "/usr/li")], &path),
            Behind::Unmounted
        );
        assert_eq!(
            mount_behind(&[ro("/host/a", "/usr/lib/tool")], &path),
            Behind::ReadOnly {
                source: &a,
                below: ""
            }
        );
        // The kernel's mounts and a device node have no host file behind.
        let dev = sandbox("/dev/null");
        let ops = hardening_prefix(false);
        assert_eq!(mount_behind(&ops, &dev), Behind::Synthetic);
        assert_eq!(
            mount_behind(&ops, &sandbox("/proc/self")),
            Behind::Synthetic
        );
        assert_eq!(mount_behind(&ops, &path), Behind::Unmounted);
    }

    #[test]
    fn the_hardening_prefix_renders_as_its_bubblewrap_text() {
        let text: Vec<String> = hardening_prefix(true)
            .iter()
            .map(crate::emit::display_op)
            .collect();
        assert_eq!(
            text,
            [
                "--unshare-all",
                "--unshare-user",
                "--disable-userns",
                "--cap-drop ALL",
                "--clearenv",
                "--new-session",
                "--die-with-parent",
                "--as-pid-1",
                "--chdir /",
                "--proc /proc",
                "--remount-ro /proc",
                "--dev /dev",
                "--dev-bind {dev:null} /dev/null",
                "--dev-bind {dev:zero} /dev/zero",
                "--dev-bind {dev:full} /dev/full",
                "--dev-bind {dev:random} /dev/random",
                "--dev-bind {dev:urandom} /dev/urandom",
                "--dev-bind {dev:tty} /dev/tty",
            ]
        );
        // A lowered plan starts with it, after its `--seccomp` (the sample
        // policy forbids further user namespaces).
        let plan = bubblewrap_delivered();
        let prefix = hardening_prefix(true);
        assert_eq!(plan.ops().first(), Some(&BwrapOp::Seccomp));
        assert_eq!(&plan.ops()[1..=prefix.len()], prefix.as_slice());
    }

    /// The sample policy with a strict list behind its Landlock runner, so
    /// the runner installs the filter.
    fn runner_delivered() -> LaunchPlan {
        let mut raw = sample_raw();
        raw.seccomp = SeccompPolicy::StrictAllowlist {
            syscalls: crate::lower::tests::names(&["execve", "exit_group", "read", "write"]),
        };
        let policy = checked(&raw);
        let activation = activate(&policy, None).expect("activate");
        lower(&policy, &activation, Arch::X86_64, "d").expect("lower")
    }

    fn bubblewrap_delivered() -> LaunchPlan {
        let mut raw = sample_raw();
        raw.seccomp = SeccompPolicy::DenyKnownEscapeSurface;
        let policy = checked(&raw);
        let activation = activate(&policy, None).expect("activate");
        lower(&policy, &activation, Arch::X86_64, "d").expect("lower")
    }

    fn rebuilt(
        plan: &LaunchPlan,
        edit: impl FnOnce(&mut RawPlan),
    ) -> Result<LaunchPlan, PlanError> {
        let mut raw = plan.clone().into_raw();
        edit(&mut raw);
        LaunchPlan::try_from(raw)
    }

    #[test]
    fn json_round_trips_through_the_same_validation() {
        for plan in [runner_delivered(), bubblewrap_delivered()] {
            let json = serde_json::to_string(&plan).expect("json");
            assert_eq!(json, serde_json::to_string(plan.raw()).expect("raw json"));
            let back: LaunchPlan = serde_json::from_str(&json).expect("valid plan");
            assert_eq!(back, plan);
        }
        // An edited plan that breaks an invariant is refused on read.
        let mut raw = bubblewrap_delivered().into_raw();
        raw.format = 2;
        let json = serde_json::to_string(&raw).expect("json");
        let err = serde_json::from_str::<LaunchPlan>(&json).expect_err("format 2");
        assert!(err.to_string().contains("launch-plan format 2"), "{err}");
    }

    #[test]
    fn a_seccomp_program_must_reach_its_installer() {
        let plan = runner_delivered();
        assert_eq!(
            plan.seccomp().map(|s| &s.delivery),
            Some(&SeccompDelivery::Runner)
        );
        // The runner's descriptor dropped from the command, or passed twice.
        let slot = ExecArg::Slot(Slot::RunnerSeccomp);
        let dropped = rebuilt(&plan, |p| p.command.retain(|a| *a != slot));
        assert!(matches!(dropped, Err(PlanError::SeccompDelivery(_))));
        let twice = rebuilt(&plan, |p| p.command.push(slot.clone()));
        assert!(matches!(twice, Err(PlanError::SeccompDelivery(_))));
        // A profile without a delivery.
        let undelivered = rebuilt(&plan, |p| {
            if let Some(s) = p.seccomp.as_mut() {
                s.delivery = SeccompDelivery::None;
            }
        });
        assert!(matches!(undelivered, Err(PlanError::SeccompDelivery(_))));
        // A `--seccomp` for a program Bubblewrap does not deliver.
        let stray = rebuilt(&plan, |p| p.ops.insert(0, BwrapOp::Seccomp));
        assert!(matches!(stray, Err(PlanError::SeccompDelivery(_))));

        let plan = bubblewrap_delivered();
        assert_eq!(plan.ops().first(), Some(&BwrapOp::Seccomp));
        let moved = rebuilt(&plan, |p| {
            let op = p.ops.remove(0);
            p.ops.push(op);
        });
        assert!(matches!(moved, Err(PlanError::SeccompDelivery(_))));
        let removed = rebuilt(&plan, |p| p.seccomp = None);
        assert!(matches!(removed, Err(PlanError::SeccompDelivery(_))));
        let truncated = rebuilt(&plan, |p| {
            if let Some(s) = p.seccomp.as_mut() {
                s.program.pop();
            }
        });
        assert!(matches!(truncated, Err(PlanError::SeccompProgram(_))));
        let foreign = rebuilt(&plan, |p| {
            if let Some(s) = p.seccomp.as_mut() {
                s.arch = Arch::Aarch64;
            }
        });
        assert!(matches!(foreign, Err(PlanError::SeccompArch { .. })));
        // Controls: both plans as lowered rebuild.
        rebuilt(&plan, |_| {}).expect("bubblewrap delivery");
        rebuilt(&runner_delivered(), |_| {}).expect("runner delivery");
    }

    #[test]
    fn every_slot_names_a_pin_of_its_kind() {
        let plan = bubblewrap_delivered();
        let last = u16::try_from(plan.pins().len()).expect("pins");
        let missing = rebuilt(&plan, |p| p.bwrap_pin = Some(PinSlot(last)));
        assert!(matches!(missing, Err(PlanError::MissingPin { .. })));
        let mounted = rebuilt(&plan, |p| {
            for op in &mut p.ops {
                if let BwrapOp::RoBind {
                    source: MountSource::Pinned(s),
                    ..
                } = op
                {
                    *s = PinSlot(last);
                }
            }
        });
        assert!(matches!(mounted, Err(PlanError::MissingPin { .. })));
        // The Bubblewrap slot names the worker's pin.
        let worker = plan
            .pins()
            .iter()
            .position(|p| p.role == PinRole::Worker)
            .expect("worker pin");
        let wrong = rebuilt(&plan, |p| {
            p.bwrap_pin = Some(PinSlot(u16::try_from(worker).expect("slot")));
        });
        assert!(matches!(wrong, Err(PlanError::WrongPin { .. })));
        let moved = rebuilt(&plan, |p| {
            p.bwrap = crate::lower::tests::p("/usr/local/bin/bwrap");
        });
        assert!(matches!(moved, Err(PlanError::BubblewrapPin { .. })));
    }

    #[test]
    fn fixed_parts_of_the_launch_are_fixed() {
        let plan = bubblewrap_delivered();
        let env = rebuilt(&plan, |p| p.environment.push(("A".into(), "B".into())));
        assert_eq!(env, Err(PlanError::Streams));
        let streams = rebuilt(&plan, |p| p.stdio.stderr = StreamMode::Pipe);
        assert_eq!(streams, Err(PlanError::Streams));
        let cgroup = rebuilt(&plan, |p| p.require_cgroup_v2 = true);
        assert_eq!(cgroup, Err(PlanError::MissingCgroup));
    }
}
