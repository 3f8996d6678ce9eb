//! The launch plan: the one launch object that both `splashc emit` displays
//! and the runtime spawns. Pure data; produced by `lower`.
//!
//! Descriptor-backed values are typed [`Slot`]s, never strings: display code
//! renders them as placeholders, the runtime renders them as the descriptor
//! numbers it allocated for one launch. Both go through
//! [`LaunchPlan::bwrap_arguments`], so there is exactly one argv builder.

use serde::{Deserialize, Serialize};
pub use splash_seccomp::Arch;

use crate::model::{
    AggregateQuota, BrokerCatalog, CgroupPolicy, HostPath, ProjectQuota, SandboxPath, SelectorId,
    Watchdog,
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
    /// The host path of the device node bound at `/dev/NAME` for one launch
    /// (a path, not a descriptor: Bubblewrap has no descriptor form of
    /// `--dev-bind`).
    Device(DeviceNode),
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
    Null,
    Zero,
    Full,
    Random,
    Urandom,
    Tty,
}

impl DeviceNode {
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

    /// The file name under `/dev`.
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
    Directory,
    /// A regular file (runtime file mounts).
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
    /// `--seccomp FD` with [`Slot::BwrapSeccomp`]; only ever the first op,
    /// present exactly when the seccomp delivery is
    /// [`SeccompDelivery::Bubblewrap`].
    Seccomp,
    UnshareAll,
    UnshareUser,
    DisableUserns,
    CapDropAll,
    ClearEnv,
    NewSession,
    DieWithParent,
    /// `--as-pid-1`: the command is the sandbox's pid 1, so no Bubblewrap
    /// process runs inside the sandbox's pid namespace (an init without the
    /// worker's seccomp filter, rlimits and Landlock domain would otherwise
    /// share the worker's uid).
    AsPid1,
    Chdir(MountPoint),
    Proc(SandboxPath),
    Dev(SandboxPath),
    /// `--dev-bind SOURCE /dev/NAME` with [`Slot::Device`] as the source:
    /// emitted for every [`DeviceNode`] right after [`BwrapOp::Dev`].
    DevBind(DeviceNode),
    Tmpfs {
        destination: SandboxPath,
        size_bytes: Option<u64>,
    },
    RoBind {
        source: MountSource,
        destination: SandboxPath,
    },
    Bind {
        source: MountSource,
        destination: SandboxPath,
    },
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
    /// Profile name for reports (`deny-known-escape-surface`,
    /// `strict-allowlist`, or `baseline` when the filter exists only for the
    /// executable-allowlist guard).
    pub profile: String,
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

/// The worker's standard streams (fixed; not policy-selectable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stdio {
    /// `pipe`: a private pipe owned by the host.
    pub stdin: String,
    /// `pipe`: a private pipe owned by the host.
    pub stdout: String,
    /// `null`: `/dev/null`, so an undrained diagnostic pipe cannot block the
    /// worker.
    pub stderr: String,
}

impl Default for Stdio {
    fn default() -> Self {
        Self {
            stdin: "pipe".into(),
            stdout: "pipe".into(),
            stderr: "null".into(),
        }
    }
}

/// The brokered network-origin mount of an activated plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerPlan {
    /// The pin of the private broker directory.
    pub slot: PinSlot,
    pub destination: SandboxPath,
    pub catalog: BrokerCatalog,
    /// The exact network-origin ids (equal to the manifest's).
    pub ids: Vec<SelectorId>,
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
    /// True when no manifest was given and every registered root is active
    /// (for display and review).
    pub all_registered_roots_active: bool,
    /// Target architecture of the seccomp program and runner binaries.
    pub arch: Arch,
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
    pub network_broker: Option<BrokerPlan>,
    /// The worker environment: always empty (`--clearenv`, no `--setenv`).
    pub environment: Vec<(String, String)>,
    pub stdio: Stdio,
    pub aggregate_quota: Option<AggregateQuota>,
    pub cgroup: Option<CgroupPolicy>,
    pub require_cgroup_v2: bool,
    pub watchdog: Option<Watchdog>,
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
