//! The effective sandbox of a lowered plan, for review (`splashc explain`).
//!
//! Everything here is read from the [`LaunchPlan`] and from the seccomp rule
//! sets the launch compiles, never from the policy's knobs alone: the visible
//! paths come from the plan's setup operations in mount order (a later
//! `--remount-ro` makes a mount read-only), the writable-bytes bound from the
//! writable mounts that remain, the exec surface from the runner command,
//! the denied syscalls from [`splash_seccomp::RuleSet::for_launch`] for each
//! architecture, the host-side programs from the plan's Bubblewrap, cgroup
//! runner and pins. Pure and deterministic: the same plan yields the same
//! text. Where a host source really leads is a fact of the host, not of the
//! plan: the caller probes it and hands it in
//! ([`Explanation::resolve_sources`]).
//!
//! Every field of an [`Explanation`] is a structured value for the JSON
//! output: enums are lowercase strings from a fixed set (listed by
//! [`json_enums`], which `schemas/explain.schema.json` must match), sizes
//! and durations are numbers. The few free-text fields are messages from
//! elsewhere (a filter that could not be built, the host probes' findings),
//! documented as such. The human rendering turns the values into sentences.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use splash_seccomp::guards::{self, Class};
use splash_seccomp::{Action, Arch, ArgCond, Fallback, RuleSet, compile_rules};

use crate::model::{
    BrokerCatalog, CgroupLimits, Policy, Runners, SeccompPolicy, Watchdog, WorkerIdentity,
};
use crate::plan::{
    BwrapOp, ExecArg, LaunchPlan, MountPoint, MountSource, PinRole, RootMode, SeccompDelivery,
    SeccompProfile,
};
use crate::text::escaped as esc;
use crate::units::{format_bytes, format_millis};

/// An enum that serializes as one lowercase string from a fixed set, with
/// [`ALL`](MountKind::ALL) listing every variant (so the schema test cannot
/// miss one) and `id` the string.
macro_rules! json_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => $id:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $id)] $variant,)+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)+];

            /// The variant's string in JSON.
            pub fn id(self) -> &'static str {
                match self {
                    $(Self::$variant => $id,)+
                }
            }
        }
    };
}

json_enum! {
    /// What kind of mount a visible path is.
    pub enum MountKind {
        /// Bubblewrap's new root.
        RootTmpfs => "root-tmpfs",
        /// A bind of a host object.
        Bind => "bind",
        /// An empty tmpfs.
        Tmpfs => "tmpfs",
        /// The sandbox's procfs.
        Proc => "proc",
        /// Bubblewrap's minimal `/dev`.
        Dev => "dev",
    }
}

impl MountKind {
    fn label(self) -> &'static str {
        match self {
            Self::RootTmpfs => "root tmpfs",
            Self::Bind => "bind",
            Self::Tmpfs => "tmpfs",
            Self::Proc => "proc",
            Self::Dev => "dev",
        }
    }
}

impl std::fmt::Display for MountKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.label())
    }
}

json_enum! {
    /// Whether the worker can write below a visible path.
    pub enum MountAccess {
        /// Read-only (after every `--remount-ro`).
        ReadOnly => "read-only",
        /// Read-write.
        ReadWrite => "read-write",
    }
}

impl std::fmt::Display for MountAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.id())
    }
}

json_enum! {
    /// What a mount is for.
    pub enum MountPurpose {
        /// Bubblewrap's new root.
        NewRoot => "new-root",
        /// The sandbox's own processes (`/proc`).
        Processes => "processes",
        /// Minimal device nodes (`/dev`).
        Devices => "devices",
        /// The private `/tmp`.
        PrivateTmp => "private-tmp",
        /// A tmpfs no root or `/tmp` names.
        Tmpfs => "tmpfs",
        /// A `runtime` mount.
        RuntimeMount => "runtime-mount",
        /// A file root (`root_id`, and `root_mode` when it is active).
        FileRoot => "file-root",
        /// The network broker's directory.
        NetworkBroker => "network-broker",
        /// The Bubblewrap program (never mounted; listed for completeness).
        Bubblewrap => "bubblewrap",
        /// The worker, overlaid from a pinned descriptor.
        PinnedWorker => "pinned-worker",
        /// The limit runner, overlaid from a pinned descriptor.
        PinnedLimitRunner => "pinned-limit-runner",
        /// The Landlock runner, overlaid from a pinned descriptor.
        PinnedLandlockRunner => "pinned-landlock-runner",
        /// The combined runner, overlaid from a pinned descriptor.
        PinnedRunner => "pinned-runner",
        /// An `allow-exec` target, overlaid from a pinned descriptor.
        PinnedAllowedExecutable => "pinned-allowed-executable",
    }
}

/// What a mount is for: the purpose, and the file root it mounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountRole {
    /// The purpose.
    pub purpose: MountPurpose,
    /// The file root's id, for [`MountPurpose::FileRoot`].
    pub root_id: Option<String>,
    /// How the file root is mounted, when it is active.
    pub root_mode: Option<RootMode>,
}

impl MountRole {
    fn of(purpose: MountPurpose) -> Self {
        Self {
            purpose,
            root_id: None,
            root_mode: None,
        }
    }

    fn root(id: String, mode: Option<RootMode>) -> Self {
        Self {
            purpose: MountPurpose::FileRoot,
            root_id: Some(id),
            root_mode: mode,
        }
    }
}

impl std::fmt::Display for MountRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use MountPurpose as P;
        let text = match self.purpose {
            P::NewRoot => "Bubblewrap's new root",
            P::Processes => "the sandbox's own processes",
            P::Devices => "minimal device nodes",
            P::PrivateTmp => "private /tmp",
            P::Tmpfs => "tmpfs",
            P::RuntimeMount => "runtime mount",
            P::FileRoot => {
                write!(f, "file root \"{}\"", self.root_id.as_deref().unwrap_or(""))?;
                if let Some(mode) = self.root_mode {
                    write!(f, " ({mode})")?;
                }
                return Ok(());
            }
            P::NetworkBroker => "network broker",
            P::Bubblewrap => "bubblewrap",
            P::PinnedWorker => "pinned worker",
            P::PinnedLimitRunner => "pinned limit runner",
            P::PinnedLandlockRunner => "pinned landlock runner",
            P::PinnedRunner => "pinned runner",
            P::PinnedAllowedExecutable => "pinned allowed executable",
        };
        f.write_str(text)
    }
}

json_enum! {
    /// What bounds the bytes written below a writable path.
    pub enum BoundKind {
        /// The tmpfs `--size`.
        TmpfsSize => "tmpfs-size",
        /// A verified project quota.
        ProjectQuota => "project-quota",
    }
}

/// The bound on bytes written below one writable path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WriteBound {
    /// What bounds it.
    pub kind: BoundKind,
    /// The ceiling in bytes.
    pub bytes: u64,
    /// The project id, for a project quota.
    pub project_id: Option<u32>,
    /// The inode ceiling, for a project quota.
    pub inodes: Option<u64>,
}

impl std::fmt::Display for WriteBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            BoundKind::TmpfsSize => write!(f, "tmpfs size {}", format_bytes(self.bytes)),
            BoundKind::ProjectQuota => write!(
                f,
                "project quota {}: at most {} and {} inodes",
                self.project_id.unwrap_or(0),
                format_bytes(self.bytes),
                self.inodes.unwrap_or(0)
            ),
        }
    }
}

json_enum! {
    /// Whether a bind source was resolved on this host, and what came of it.
    pub enum Resolution {
        /// The mount has no host source.
        NoSource => "no-source",
        /// The host was not probed (`--plan-only`, another architecture, or
        /// no host facts given): where the source leads is not known.
        Unresolved => "unresolved",
        /// The source is its own canonical path.
        Same => "same",
        /// The source leads elsewhere (a symbolic link in it): `resolved`.
        Differs => "differs",
        /// The source cannot be resolved on this host (bind would refuse it).
        Failed => "failed",
    }
}

/// What the worker sees at one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VisibleMount {
    /// Worker-visible path.
    pub path: String,
    /// The kind of mount.
    pub kind: MountKind,
    /// The access, after every `--remount-ro`.
    pub access: MountAccess,
    /// Host source of a bind mount, as the plan names it.
    pub source: Option<String>,
    /// Whether the source is a descriptor pinned at bind.
    pub pinned: bool,
    /// Whether the source was resolved on this host.
    pub resolution: Resolution,
    /// The canonical host path the source leads to, when resolved
    /// ([`Resolution::Same`] or [`Resolution::Differs`]); for a pinned
    /// source, the object bind would pin.
    pub resolved: Option<String>,
    /// What the mount is for.
    pub role: MountRole,
    /// The bound on bytes written here, when writable and bounded.
    pub bound: Option<WriteBound>,
}

impl VisibleMount {
    /// The bound in bytes (tmpfs size or project-quota ceiling).
    pub fn bound_bytes(&self) -> Option<u64> {
        self.bound.map(|b| b.bytes)
    }
}

json_enum! {
    /// Why writes below a path are not bounded.
    pub enum UnboundedReason {
        /// A tmpfs without `--size`.
        TmpfsWithoutSize => "tmpfs-without-size",
        /// Bubblewrap's root tmpfs stays writable.
        RootTmpfsWritable => "root-tmpfs-writable",
        /// The `/dev` tmpfs stays writable.
        DevWritable => "dev-writable",
        /// A read-write host directory without a project quota.
        NoProjectQuota => "no-project-quota",
    }
}

impl UnboundedReason {
    fn text(self) -> &'static str {
        match self {
            Self::TmpfsWithoutSize => "tmpfs without a size",
            Self::RootTmpfsWritable => "Bubblewrap's root tmpfs is not remounted read-only",
            Self::DevWritable => "the `/dev` tmpfs is not remounted read-only",
            Self::NoProjectQuota => "read-write host directory without a project quota",
        }
    }
}

/// A writable path without a bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unbounded {
    /// The worker-visible path.
    pub path: String,
    /// Why it is unbounded.
    pub reason: UnboundedReason,
}

/// The bound on bytes the worker can store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WritableBytes {
    /// Sum of the writable tmpfs sizes.
    pub tmpfs_bytes: u64,
    /// Sum of the quota ceilings of writable quota roots (capped by the
    /// aggregate maximum).
    pub quota_bytes: u64,
    /// `tmpfs_bytes + quota_bytes` when nothing writable is unbounded.
    pub bound_bytes: Option<u64>,
    /// Writable paths without a bound, each with the reason.
    pub unbounded: Vec<Unbounded>,
}

json_enum! {
    /// How an allowed program runs code it only reads.
    pub enum LoaderKind {
        /// An ELF dynamic loader (`ld.so`, `ld-linux-x86-64.so.2`, ...):
        /// `ld.so FILE` runs any readable ELF file.
        ElfLoader => "elf-loader",
        /// A shell or script interpreter (`sh`, `python3`, `perl`, ...):
        /// it runs any readable script.
        Interpreter => "interpreter",
    }
}

/// An allowed executable that runs code it reads from a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeLoader {
    /// The worker-visible path on the allowlist.
    pub path: String,
    /// What it is.
    pub kind: LoaderKind,
}

/// What the worker can execute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecSurface {
    /// The Landlock allowlist, when a runner enforces one.
    pub landlock_allowlist: Option<Vec<String>>,
    /// Without an allowlist: every executable file below these paths.
    pub any_file_in: Vec<String>,
    /// Writable paths whose new files could be executed.
    pub writable_and_executable: Vec<String>,
    /// Allowlist entries that run code they read (by file name): with one
    /// of them, the allowlist does not bound what code runs.
    pub code_loaders: Vec<CodeLoader>,
    /// With a code loader allowed: the writable paths whose files it can
    /// run (`ld.so /tmp/x`), which an execve-only allowlist never sees.
    pub loader_runs_writable: Vec<String>,
    /// Whether `memfd_create` without `MFD_NOEXEC_SEAL` is refused.
    pub memfd_guard: bool,
}

json_enum! {
    /// An escape-surface class of the reviewed syscall table
    /// ([`splash_seccomp::guards::Class`]).
    pub enum SyscallClass {
        /// Mounting and changing the mount tree.
        Mount => "mount",
        /// Opening files by handle.
        FilesystemHandle => "filesystem-handle",
        /// Creating or entering namespaces.
        Namespace => "namespace",
        /// Kernel interfaces with a history of escapes.
        KernelInterface => "kernel-interface",
        /// io_uring.
        IoUring => "io-uring",
        /// Loading kernel modules.
        Module => "module-loading",
        /// Controlling the running kernel.
        KernelControl => "kernel-control",
        /// Tracing other processes.
        Tracing => "tracing",
        /// Another process's memory.
        CrossProcessMemory => "cross-process-access",
        /// The kernel keyring.
        Keyring => "keyring",
        /// Changing the execution domain.
        Personality => "personality",
        /// Host administration.
        HostAdmin => "host-administration",
        /// Direct hardware access.
        Hardware => "hardware-access",
    }
}

impl SyscallClass {
    fn of(c: Class) -> Self {
        match c {
            Class::Mount => Self::Mount,
            Class::FilesystemHandle => Self::FilesystemHandle,
            Class::Namespace => Self::Namespace,
            Class::KernelInterface => Self::KernelInterface,
            Class::IoUring => Self::IoUring,
            Class::Module => Self::Module,
            Class::KernelControl => Self::KernelControl,
            Class::Tracing => Self::Tracing,
            Class::CrossProcessMemory => Self::CrossProcessMemory,
            Class::Keyring => Self::Keyring,
            Class::Personality => Self::Personality,
            Class::HostAdmin => Self::HostAdmin,
            Class::Hardware => Self::Hardware,
        }
    }

    /// The class's name in the reviewed table (`filesystem handle`).
    pub fn label(self) -> &'static str {
        let class = match self {
            Self::Mount => Class::Mount,
            Self::FilesystemHandle => Class::FilesystemHandle,
            Self::Namespace => Class::Namespace,
            Self::KernelInterface => Class::KernelInterface,
            Self::IoUring => Class::IoUring,
            Self::Module => Class::Module,
            Self::KernelControl => Class::KernelControl,
            Self::Tracing => Class::Tracing,
            Self::CrossProcessMemory => Class::CrossProcessMemory,
            Self::Keyring => Class::Keyring,
            Self::Personality => Class::Personality,
            Self::HostAdmin => Class::HostAdmin,
            Self::Hardware => Class::Hardware,
        };
        class.name()
    }
}

/// Syscalls of one class refused unconditionally with `EPERM`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeniedClass {
    /// The class.
    pub class: SyscallClass,
    /// The syscalls, in the table's order.
    pub syscalls: Vec<String>,
}

json_enum! {
    /// What a filter answers a syscall with.
    pub enum FilterAction {
        /// Run it.
        Allow => "allow",
        /// Fail with `EPERM`.
        Eperm => "eperm",
        /// Fail with `EACCES`.
        Eacces => "eacces",
        /// Fail with `ENOSYS`.
        Enosys => "enosys",
        /// Fail with another errno (no rule of the compiler answers so).
        OtherErrno => "other-errno",
        /// Kill the process.
        KillProcess => "kill-process",
    }
}

impl FilterAction {
    fn of(a: Action) -> Self {
        match a {
            Action::Allow => Self::Allow,
            Action::Errno(1) => Self::Eperm,
            Action::Errno(13) => Self::Eacces,
            Action::Errno(38) => Self::Enosys,
            Action::Errno(_) => Self::OtherErrno,
            Action::KillProcess => Self::KillProcess,
        }
    }
}

impl std::fmt::Display for FilterAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Allow => "allow",
            Self::Eperm => "EPERM",
            Self::Eacces => "EACCES",
            Self::Enosys => "ENOSYS",
            Self::OtherErrno => "another errno",
            Self::KillProcess => "kill the process",
        })
    }
}

json_enum! {
    /// How a guard tests an argument's low 32 bits.
    pub enum ArgTest {
        /// `(arg & mask) != 0`.
        AnyBits => "any-bits",
        /// `(arg & mask) == 0`.
        NoBits => "no-bits",
        /// The argument equals one of `values`.
        Equals => "equals",
    }
}

/// The argument condition of a guard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuardCondition {
    /// The argument index, 0 to 5.
    pub arg: u8,
    /// The test.
    pub test: ArgTest,
    /// The mask, for [`ArgTest::AnyBits`] and [`ArgTest::NoBits`].
    pub mask: Option<u32>,
    /// The values, for [`ArgTest::Equals`].
    pub values: Vec<u32>,
}

/// A guard on a syscall: a condition on its arguments, or another answer
/// than `EPERM`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guard {
    /// The syscall.
    pub syscall: String,
    /// The condition; `None` for every call.
    pub when: Option<GuardCondition>,
    /// The answer.
    pub action: FilterAction,
}

impl std::fmt::Display for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.when {
            None => write!(f, "{}: {}", self.syscall, self.action),
            Some(c) => write!(
                f,
                "{} when {}: {}",
                self.syscall,
                describe_cond(&self.syscall, c),
                self.action
            ),
        }
    }
}

/// Syscalls a filter refuses on one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchFilter {
    /// The architecture.
    pub arch: String,
    /// Unconditionally refused syscalls grouped by escape-surface class
    /// (`EPERM`); under a strict list these are tested before it.
    pub denied_classes: Vec<DeniedClass>,
    /// Guards on arguments or with another answer (`clone` with namespace
    /// flags, `ioctl` terminal injection, `clone3` `ENOSYS`, ...).
    pub guarded: Vec<Guard>,
    /// With a strict list: the allowed syscalls, by number (the rest get
    /// `otherwise`).
    pub allowed: Option<Vec<String>>,
    /// What every syscall no rule names gets.
    pub otherwise: FilterAction,
    /// Strict-list names this architecture lacks.
    pub skipped: Vec<String>,
    /// The program's length in instructions.
    pub instructions: usize,
    /// The most instructions any syscall executes.
    pub worst_case_executed: usize,
    /// Known syscalls answered from the kernel's action cache.
    pub cache_eligible: usize,
    /// How many syscalls the architecture's table knows.
    pub known_syscalls: usize,
}

/// The compiled filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilterSummary {
    /// The profile.
    pub profile: SeccompProfile,
    /// Who installs it.
    pub delivered_by: SeccompDelivery,
    /// The filter per architecture.
    pub per_arch: Vec<ArchFilter>,
    /// Messages of a rule set or program that could not be built (should
    /// not happen for a plan that lowered), `ARCH: ERROR`; reported rather
    /// than hidden.
    pub errors: Vec<String>,
}

/// How the filter's installer is named in reports.
pub(crate) fn delivery_text(d: &SeccompDelivery) -> &'static str {
    match d {
        SeccompDelivery::Bubblewrap => "bubblewrap `--seccomp`",
        SeccompDelivery::Runner => "the runner, after Landlock",
        SeccompDelivery::None => "nothing",
    }
}

json_enum! {
    /// A per-process rlimit a runner sets.
    pub enum RlimitName {
        /// `RLIMIT_CPU`, in seconds.
        Cpu => "cpu",
        /// `RLIMIT_AS`, in bytes.
        AddressSpace => "address-space",
        /// `RLIMIT_NPROC`, per uid.
        Processes => "processes",
        /// `RLIMIT_NOFILE`.
        OpenFiles => "open-files",
        /// `RLIMIT_FSIZE`, in bytes.
        FileSize => "file-size",
    }
}

/// One rlimit, soft and hard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rlimit {
    /// Which limit.
    pub name: RlimitName,
    /// Its value (seconds, bytes or a count).
    pub value: u64,
}

/// The cgroup-v2 child the whole worker tree joins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupView {
    /// The delegated parent the child is created under.
    pub parent: String,
    /// `cgroup ... required`: every launch path that would start the worker
    /// outside the cgroup is refused.
    pub required: bool,
    /// The controller values (`cpu_quota_micros` per 100 ms period).
    pub limits: CgroupLimits,
    /// How long the runtime waits for the runner to join, in milliseconds.
    pub join_timeout_ms: u64,
}

/// Resource limits and deadlines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Per-process rlimits applied by a runner.
    pub rlimits: Vec<Rlimit>,
    /// `limits ... required`: a policy without the limit runner is refused.
    pub rlimits_required: bool,
    /// The cgroup, if any.
    pub cgroup: Option<CgroupView>,
    /// The watchdog's deadlines, if any.
    pub watchdog: Option<Watchdog>,
}

json_enum! {
    /// How a program is found when it is started.
    pub enum Found {
        /// From a descriptor opened and checked at bind.
        PinnedDescriptor => "pinned-descriptor",
        /// By its path, when the launch starts it.
        PathAtLaunch => "path-at-launch",
    }
}

impl Found {
    fn text(self) -> &'static str {
        match self {
            Self::PinnedDescriptor => "pinned by descriptor at bind",
            Self::PathAtLaunch => "resolved by path at launch",
        }
    }
}

/// A program the host runs outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostProgram {
    /// The host path.
    pub path: String,
    /// How it is found.
    pub found: Found,
}

json_enum! {
    /// A program of the exec chain inside the sandbox.
    pub enum ChainRole {
        /// The one-hop runner.
        CombinedRunner => "combined-runner",
        /// The Landlock executable runner.
        LandlockRunner => "landlock-runner",
        /// The rlimit runner.
        LimitRunner => "limit-runner",
        /// The worker.
        Worker => "worker",
    }
}

impl ChainRole {
    fn text(self) -> &'static str {
        match self {
            Self::CombinedRunner => "runner",
            Self::LandlockRunner => "landlock runner",
            Self::LimitRunner => "limit runner",
            Self::Worker => "worker",
        }
    }
}

/// One program of the exec chain, in the order they run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainProgram {
    /// What it is.
    pub role: ChainRole,
    /// The worker-visible path executed.
    pub path: String,
    /// How the sandbox finds it: a pinned overlay, or its path in a
    /// runtime mount.
    pub found: Found,
    /// The host file behind a pinned overlay.
    pub pinned_from: Option<String>,
}

/// The programs a launch starts, outside and inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Programs {
    /// Bubblewrap.
    pub bubblewrap: HostProgram,
    /// The cgroup runner, which starts Bubblewrap inside the cgroup.
    pub cgroup_runner: Option<HostProgram>,
    /// The exec chain: the runners, then the worker.
    pub chain: Vec<ChainProgram>,
    /// The worker's fixed arguments.
    pub worker_args: Vec<String>,
}

json_enum! {
    /// One isolation property of the sandbox.
    pub enum Isolation {
        /// `--unshare-all`.
        NewNamespaces => "new-namespaces",
        /// `--disable-userns`.
        NoNestedUserNamespaces => "no-nested-user-namespaces",
        /// `--as-pid-1`.
        Pid1 => "pid-1",
        /// `--cap-drop ALL`.
        CapabilitiesDropped => "capabilities-dropped",
        /// `--clearenv` and no variable set.
        EmptyEnvironment => "empty-environment",
        /// `--new-session`.
        NewSession => "new-session",
    }
}

impl Isolation {
    /// The property in words.
    pub fn text(self) -> &'static str {
        match self {
            Self::NewNamespaces => "new user, mount, pid, ipc, uts, cgroup and network namespaces",
            Self::NoNestedUserNamespaces => {
                "no further user namespaces inside (`--disable-userns`)"
            }
            Self::Pid1 => "the command is pid 1 of its pid namespace",
            Self::CapabilitiesDropped => "every capability dropped",
            Self::EmptyEnvironment => "empty environment",
            Self::NewSession => "new terminal session (no TIOCSTI into the host terminal)",
        }
    }
}

json_enum! {
    /// What network the worker reaches.
    pub enum NetworkKind {
        /// An empty network namespace (loopback only).
        None => "none",
        /// No interfaces; selected ids through the host broker.
        Broker => "broker",
        /// The host's network.
        Host => "host",
    }
}

/// The network broker the worker reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokerView {
    /// The catalog kind it serves.
    pub catalog: BrokerCatalog,
    /// The ids it serves.
    pub ids: Vec<String>,
    /// The worker-visible directory of its socket.
    pub destination: String,
}

/// The network the worker reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Network {
    /// Which network.
    pub kind: NetworkKind,
    /// The broker, for [`NetworkKind::Broker`].
    pub broker: Option<BrokerView>,
}

json_enum! {
    /// Something the policy does not enforce.
    pub enum GapCode {
        /// No seccomp filter at all.
        NoSeccompFilter => "no-seccomp-filter",
        /// Only the baseline filter (architecture check, memfd guard).
        BaselineFilterOnly => "baseline-filter-only",
        /// The escape-surface profile allows everything else.
        EscapeSurfaceOnly => "escape-surface-only",
        /// Writes below `paths` (one) are unbounded.
        UnboundedWrites => "unbounded-writes",
        /// No Landlock allowlist.
        ExecUnrestricted => "exec-unrestricted",
        /// Files written below `paths` can be executed.
        WrittenFilesExecutable => "written-files-executable",
        /// An allowed loader or interpreter runs any file it reads,
        /// including those written below `paths`.
        LoaderRunsFiles => "loader-runs-files",
        /// Landlock restricts execution only.
        LandlockExecOnly => "landlock-exec-only",
        /// rlimits are per process.
        RlimitsPerProcess => "rlimits-per-process",
        /// No resource limits at all.
        NoResourceLimits => "no-resource-limits",
        /// rlimits without a cgroup.
        NoCgroup => "no-cgroup",
        /// No watchdog.
        NoWatchdog => "no-watchdog",
        /// Pinning freezes mount roots only.
        PinningRootsOnly => "pinning-roots-only",
        /// Mount sources are found by path.
        MountsByPath => "mounts-by-path",
        /// Executables are found by path.
        ExecutablesByPath => "executables-by-path",
    }
}

/// Something the policy does not enforce, with the paths it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotEnforced {
    /// What.
    pub code: GapCode,
    /// The worker-visible paths concerned (empty for most codes).
    pub paths: Vec<String>,
}

impl NotEnforced {
    fn of(code: GapCode) -> Self {
        Self {
            code,
            paths: Vec::new(),
        }
    }

    /// The gap in words; the reason an unbounded path is unbounded is read
    /// from `writable`.
    pub fn text(&self, writable: &WritableBytes) -> String {
        let quoted = || {
            self.paths
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        use GapCode as G;
        match self.code {
            G::NoSeccompFilter => "no seccomp filter: every syscall reaches the kernel".into(),
            G::BaselineFilterOnly => "no seccomp profile: the baseline filter only checks the architecture and guards memfds".into(),
            G::EscapeSurfaceOnly => "the escape-surface profile allows every syscall outside the reviewed escape surface".into(),
            G::UnboundedWrites => {
                let why = writable
                    .unbounded
                    .iter()
                    .find(|u| self.paths.first() == Some(&u.path))
                    .map_or("", |u| u.reason.text());
                format!("writes to {} are unbounded: {why}", quoted())
            }
            G::ExecUnrestricted => "execution is not restricted: any executable file in a visible mount runs".into(),
            G::WrittenFilesExecutable => format!("files the worker writes can be executed: {}", quoted()),
            G::LoaderRunsFiles if self.paths.is_empty() => "an allowed loader or interpreter runs any file it can read, not only the allowlist".into(),
            G::LoaderRunsFiles => format!("an allowed loader or interpreter runs any file it can read, including files the worker writes to {}", quoted()),
            G::LandlockExecOnly => "Landlock here restricts execution only; reads and writes are bounded by the mounts".into(),
            G::RlimitsPerProcess => "rlimits are per process, not per worker tree".into(),
            G::NoResourceLimits => "no resource limits: CPU, memory and processes are unbounded".into(),
            G::NoCgroup => "no cgroup: the worker tree's total memory, CPU and process count are not bounded".into(),
            G::NoWatchdog => "no wall-clock deadline (no watchdog)".into(),
            G::PinningRootsOnly => "pinning freezes mount roots, not their mutable descendants".into(),
            G::MountsByPath => "mount sources are looked up by path at launch, not pinned at bind".into(),
            G::ExecutablesByPath => "executables are looked up by path inside the sandbox, not pinned".into(),
        }
    }
}

json_enum! {
    /// How far this host falls short of a control.
    pub enum GapStatus {
        /// Enforceable, with a consequence to know.
        Warning => "warning",
        /// Not checked: an earlier failure left the check without input.
        Skipped => "skipped",
        /// Cannot be enforced here; the launch would be refused.
        Missing => "missing",
    }
}

/// A control this host cannot enforce as planned (or only with a caveat),
/// from the probes of `splashc doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostGap {
    /// The probe's name (`bubblewrap`, `seccomp`, `cgroup`, `path`, ...).
    pub control: String,
    /// How far the host falls short.
    pub status: GapStatus,
    /// The probe's finding, as a message.
    pub detail: String,
    /// How to fix it, as a message, when there is a fix.
    pub fix: Option<String>,
}

/// The effective sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The policy's name.
    pub policy: String,
    /// The policy's digest.
    pub policy_digest: String,
    /// The architecture explained.
    pub arch: String,
    /// True when no manifest was given and every registered root is shown.
    pub all_registered_roots_active: bool,
    /// What the worker sees in its mount tree.
    pub mounts: Vec<VisibleMount>,
    /// What the worker can write, and how much.
    pub writable: WritableBytes,
    /// What the worker can execute.
    pub exec: ExecSurface,
    /// The programs a launch starts and how each is found.
    pub programs: Programs,
    /// The seccomp filter, if any.
    pub seccomp: Option<FilterSummary>,
    /// Resource limits and deadlines.
    pub limits: Limits,
    /// The isolation properties of the sandbox.
    pub namespaces: Vec<Isolation>,
    /// The network the worker reaches.
    pub network: Network,
    /// The host identity the worker runs as (`identity`); `None` when the
    /// policy sets none (the worker runs as the launching uid).
    pub identity: Option<WorkerIdentity>,
    /// What the policy does not enforce.
    pub not_enforced: Vec<NotEnforced>,
    /// What this host cannot enforce; `None` when the host was not probed
    /// (a plan for another architecture, or `--plan-only`).
    pub on_this_host: Option<Vec<HostGap>>,
    /// The entries of the policy's `expect` block, in canonical form, for
    /// `splashc test` to check. The caller fills them in from the source
    /// ([`crate::expect::of_source`]): the plan does not carry them.
    pub expectations: Vec<String>,
}

impl Explanation {
    /// Records where each bind source leads on this host: `resolve` gets
    /// the source as the plan names it and returns its canonical path, or
    /// `None` when it cannot be resolved. The caller probes the host (bind
    /// canonicalizes every source, pinned or not, before it opens or pins
    /// it); mounts without a source are left alone.
    pub fn resolve_sources(&mut self, mut resolve: impl FnMut(&str) -> Option<String>) {
        for m in &mut self.mounts {
            let Some(src) = &m.source else { continue };
            match resolve(src) {
                Some(r) => {
                    m.resolution = if r == *src {
                        Resolution::Same
                    } else {
                        Resolution::Differs
                    };
                    m.resolved = Some(r);
                }
                None => {
                    m.resolution = Resolution::Failed;
                    m.resolved = None;
                }
            }
        }
    }
}

/// Every enum of the JSON output by its name in
/// `schemas/explain.schema.json`'s `$defs`, with its strings: the schema
/// test checks that each `$defs` entry lists exactly these.
pub fn json_enums() -> Vec<(&'static str, Vec<&'static str>)> {
    fn ids<T: Copy>(all: &[T], id: fn(T) -> &'static str) -> Vec<&'static str> {
        all.iter().map(|v| id(*v)).collect()
    }
    let root_modes = [
        RootMode::ReadOnly,
        RootMode::ReadWrite,
        RootMode::ReadWriteQuota,
        RootMode::Tmpfs,
    ];
    // Exhaustive inside this crate: a new mode fails to compile here.
    for m in root_modes {
        match m {
            RootMode::ReadOnly
            | RootMode::ReadWrite
            | RootMode::ReadWriteQuota
            | RootMode::Tmpfs => {}
        }
    }
    let profiles = [
        SeccompProfile::DenyKnownEscapeSurface,
        SeccompProfile::StrictAllowlist,
        SeccompProfile::Baseline,
    ];
    for p in profiles {
        match p {
            SeccompProfile::DenyKnownEscapeSurface
            | SeccompProfile::StrictAllowlist
            | SeccompProfile::Baseline => {}
        }
    }
    let delivery = |d: SeccompDelivery| match d {
        SeccompDelivery::None => "none",
        SeccompDelivery::Bubblewrap => "bubblewrap",
        SeccompDelivery::Runner => "runner",
    };
    let catalog = |c: BrokerCatalog| match c {
        BrokerCatalog::Endpoint => "endpoint",
        BrokerCatalog::Origin => "origin",
    };
    vec![
        ("MountKind", ids(MountKind::ALL, MountKind::id)),
        ("MountAccess", ids(MountAccess::ALL, MountAccess::id)),
        ("MountPurpose", ids(MountPurpose::ALL, MountPurpose::id)),
        ("BoundKind", ids(BoundKind::ALL, BoundKind::id)),
        ("Resolution", ids(Resolution::ALL, Resolution::id)),
        (
            "UnboundedReason",
            ids(UnboundedReason::ALL, UnboundedReason::id),
        ),
        ("LoaderKind", ids(LoaderKind::ALL, LoaderKind::id)),
        ("SyscallClass", ids(SyscallClass::ALL, SyscallClass::id)),
        ("FilterAction", ids(FilterAction::ALL, FilterAction::id)),
        ("ArgTest", ids(ArgTest::ALL, ArgTest::id)),
        ("RlimitName", ids(RlimitName::ALL, RlimitName::id)),
        ("Found", ids(Found::ALL, Found::id)),
        ("ChainRole", ids(ChainRole::ALL, ChainRole::id)),
        ("Isolation", ids(Isolation::ALL, Isolation::id)),
        ("NetworkKind", ids(NetworkKind::ALL, NetworkKind::id)),
        ("GapCode", ids(GapCode::ALL, GapCode::id)),
        ("GapStatus", ids(GapStatus::ALL, GapStatus::id)),
        ("RootMode", root_modes.iter().map(|m| m.as_str()).collect()),
        (
            "SeccompProfile",
            profiles.iter().map(|p| p.as_str()).collect(),
        ),
        (
            "SeccompDelivery",
            [
                SeccompDelivery::None,
                SeccompDelivery::Bubblewrap,
                SeccompDelivery::Runner,
            ]
            .into_iter()
            .map(delivery)
            .collect(),
        ),
        (
            "BrokerCatalog",
            [BrokerCatalog::Endpoint, BrokerCatalog::Origin]
                .into_iter()
                .map(catalog)
                .collect(),
        ),
        ("Arch", Arch::ALL.iter().map(|a| a.name()).collect()),
    ]
}

fn mount_point(p: &MountPoint) -> String {
    match p {
        MountPoint::Root => "/".into(),
        MountPoint::Path(p) => p.to_string(),
    }
}

/// Explain `plan`, which was lowered from `policy`. Bind sources are left
/// [`Resolution::Unresolved`] and the host gaps unset: both need the host.
pub fn explain(policy: &Policy, plan: &LaunchPlan) -> Explanation {
    let mounts = visible_mounts(plan);
    let writable = writable_bytes(plan, &mounts);
    let exec = exec_surface(policy, plan, &mounts);
    let programs = programs(policy, plan);
    let seccomp = filter_summary(policy, plan);
    let limits = limits(policy, plan);
    let (namespaces, network) = namespaces(plan);
    let not_enforced = not_enforced(policy, plan, &writable, &exec, &limits);
    Explanation {
        policy: plan.policy_name().to_string(),
        policy_digest: plan.policy_digest().to_string(),
        arch: plan.arch().name().to_string(),
        all_registered_roots_active: plan.all_registered_roots_active(),
        mounts,
        writable,
        exec,
        programs,
        seccomp,
        limits,
        namespaces,
        network,
        not_enforced,
        identity: plan.identity(),
        on_this_host: None,
        expectations: Vec::new(),
    }
}

fn mount(path: String, kind: MountKind, role: MountRole) -> VisibleMount {
    VisibleMount {
        path,
        kind,
        access: MountAccess::ReadWrite,
        source: None,
        pinned: false,
        resolution: Resolution::NoSource,
        resolved: None,
        role,
        bound: None,
    }
}

fn pinned_purpose(role: &PinRole) -> MountRole {
    use MountPurpose as P;
    MountRole::of(match role {
        PinRole::RuntimeMount => P::RuntimeMount,
        PinRole::FileRoot(id) => return MountRole::root(id.to_string(), None),
        PinRole::NetworkBroker => P::NetworkBroker,
        PinRole::Bubblewrap => P::Bubblewrap,
        PinRole::Worker => P::PinnedWorker,
        PinRole::LimitRunner => P::PinnedLimitRunner,
        PinRole::LandlockRunner => P::PinnedLandlockRunner,
        PinRole::CombinedRunner => P::PinnedRunner,
        PinRole::AllowedExecutable => P::PinnedAllowedExecutable,
    })
}

fn visible_mounts(plan: &LaunchPlan) -> Vec<VisibleMount> {
    let mut mounts = vec![mount(
        "/".into(),
        MountKind::RootTmpfs,
        MountRole::of(MountPurpose::NewRoot),
    )];
    let active_root = |dest: &str| {
        plan.active_roots()
            .iter()
            .find(|r| r.destination.as_str() == dest)
            .map(|r| MountRole::root(r.id.to_string(), Some(r.mode)))
    };
    let role_of = |dest: &str, source: &MountSource| -> MountRole {
        if let Some(r) = active_root(dest) {
            return r;
        }
        if let Some(b) = plan.network_broker()
            && b.destination.as_str() == dest
        {
            return MountRole::of(MountPurpose::NetworkBroker);
        }
        if let MountSource::Pinned(slot) = source
            && let Some(pin) = plan.pins().get(usize::from(slot.0))
        {
            return pinned_purpose(&pin.role);
        }
        MountRole::of(MountPurpose::RuntimeMount)
    };
    let bind = |source: &MountSource, destination: &str| -> VisibleMount {
        let (src, pinned) = match source {
            MountSource::Path(p) => (Some(p.to_string()), false),
            MountSource::Pinned(slot) => (
                plan.pins()
                    .get(usize::from(slot.0))
                    .map(|p| p.host_path.to_string()),
                true,
            ),
        };
        VisibleMount {
            resolution: if src.is_some() {
                Resolution::Unresolved
            } else {
                Resolution::NoSource
            },
            source: src,
            pinned,
            ..mount(
                destination.to_string(),
                MountKind::Bind,
                role_of(destination, source),
            )
        }
    };
    for op in plan.ops() {
        let m = match op {
            BwrapOp::Proc(p) => mount(
                p.to_string(),
                MountKind::Proc,
                MountRole::of(MountPurpose::Processes),
            ),
            BwrapOp::Dev(p) => mount(
                p.to_string(),
                MountKind::Dev,
                MountRole::of(MountPurpose::Devices),
            ),
            BwrapOp::Tmpfs {
                destination,
                size_bytes,
            } => {
                let dest = destination.as_str();
                let role = if dest == "/tmp" {
                    MountRole::of(MountPurpose::PrivateTmp)
                } else {
                    active_root(dest).unwrap_or_else(|| MountRole::of(MountPurpose::Tmpfs))
                };
                VisibleMount {
                    bound: size_bytes.map(|bytes| WriteBound {
                        kind: BoundKind::TmpfsSize,
                        bytes,
                        project_id: None,
                        inodes: None,
                    }),
                    ..mount(dest.to_string(), MountKind::Tmpfs, role)
                }
            }
            BwrapOp::RoBind {
                source,
                destination,
            } => VisibleMount {
                access: MountAccess::ReadOnly,
                ..bind(source, destination.as_str())
            },
            BwrapOp::Bind {
                source,
                destination,
            } => {
                let quota = match source {
                    MountSource::Pinned(slot) => {
                        plan.quota_checks().iter().find(|q| q.slot == *slot)
                    }
                    MountSource::Path(_) => None,
                };
                VisibleMount {
                    bound: quota.map(|q| WriteBound {
                        kind: BoundKind::ProjectQuota,
                        bytes: q.quota.max_bytes,
                        project_id: Some(q.quota.project_id),
                        inodes: Some(q.quota.max_inodes),
                    }),
                    ..bind(source, destination.as_str())
                }
            }
            BwrapOp::RemountRo(p) => {
                let path = mount_point(p);
                if let Some(m) = mounts.iter_mut().rev().find(|m| m.path == path) {
                    m.access = MountAccess::ReadOnly;
                    m.bound = None;
                }
                continue;
            }
            _ => continue,
        };
        mounts.push(m);
    }
    mounts
}

fn writable_bytes(plan: &LaunchPlan, mounts: &[VisibleMount]) -> WritableBytes {
    let mut tmpfs_bytes = 0u64;
    let mut quota_bytes = 0u64;
    let mut unbounded = Vec::new();
    let mut unbound = |path: &str, reason| {
        unbounded.push(Unbounded {
            path: path.to_string(),
            reason,
        });
    };
    for (m, op_size) in mounts
        .iter()
        .filter(|m| m.access == MountAccess::ReadWrite)
        .map(|m| (m, tmpfs_size(plan, &m.path)))
    {
        match m.kind {
            MountKind::Proc => {} // no file data is stored in procfs
            MountKind::Tmpfs => match op_size {
                Some(s) => tmpfs_bytes = tmpfs_bytes.saturating_add(s),
                None => unbound(&m.path, UnboundedReason::TmpfsWithoutSize),
            },
            MountKind::RootTmpfs => unbound(&m.path, UnboundedReason::RootTmpfsWritable),
            MountKind::Dev => unbound(&m.path, UnboundedReason::DevWritable),
            MountKind::Bind => match plan.quota_checks().iter().find(|q| {
                plan.pins()
                    .get(usize::from(q.slot.0))
                    .is_some_and(|p| Some(p.host_path.to_string()) == m.source)
            }) {
                Some(q) => quota_bytes = quota_bytes.saturating_add(q.quota.max_bytes),
                None => unbound(&m.path, UnboundedReason::NoProjectQuota),
            },
        }
    }
    if let Some(agg) = plan.aggregate_quota() {
        quota_bytes = quota_bytes.min(agg.max_bytes);
    }
    WritableBytes {
        tmpfs_bytes,
        quota_bytes,
        bound_bytes: unbounded
            .is_empty()
            .then(|| tmpfs_bytes.saturating_add(quota_bytes)),
        unbounded,
    }
}

fn tmpfs_size(plan: &LaunchPlan, path: &str) -> Option<u64> {
    plan.ops().iter().rev().find_map(|op| match op {
        BwrapOp::Tmpfs {
            destination,
            size_bytes,
        } if destination.as_str() == path => *size_bytes,
        _ => None,
    })
}

/// The roles of the runners in the plan's command, in the order they run:
/// the combined runner, or the Landlock runner before the limit runner.
fn runner_roles(policy: &Policy) -> Vec<ChainRole> {
    match policy.runners() {
        Runners::None => Vec::new(),
        Runners::Combined { .. } => vec![ChainRole::CombinedRunner],
        Runners::Separate { limit, landlock } => {
            let mut roles = Vec::new();
            if landlock.is_some() {
                roles.push(ChainRole::LandlockRunner);
            }
            if limit.is_some() {
                roles.push(ChainRole::LimitRunner);
            }
            roles
        }
    }
}

/// The plan's command split into the runners (each its path and its
/// arguments without the closing `--`) and the worker with its arguments.
/// Runner segments come first, each ended by `--`; the worker and its own
/// arguments follow.
fn command_parts<'a>(policy: &Policy, plan: &'a LaunchPlan) -> (Vec<Vec<&'a str>>, Vec<&'a str>) {
    let mut segments = Vec::new();
    let mut args = plan.command().iter().map(|a| match a {
        ExecArg::Literal(s) => s.as_str(),
        ExecArg::Slot(_) => "",
    });
    for _ in runner_roles(policy) {
        segments.push(args.by_ref().take_while(|a| *a != "--").collect());
    }
    (segments, args.collect())
}

/// The arguments of each runner in the plan's command, without the runner
/// path and the closing `--`; the worker's own arguments are never read
/// here.
fn runner_flags<'a>(policy: &Policy, plan: &'a LaunchPlan) -> Vec<Vec<&'a str>> {
    command_parts(policy, plan)
        .0
        .into_iter()
        .map(|seg| seg.into_iter().skip(1).collect())
        .collect()
}

/// Whether the file at `path` runs code it reads, judged by its name: an
/// ELF loader (`ld.so`, `ld-linux-x86-64.so.2`, `ld64.so.1`, `ld-musl-*.so.1`)
/// or a well-known interpreter (`sh`, `bash`, `python3.12`, `perl`, `node`,
/// ...). A renamed loader or interpreter is not recognized.
pub fn code_loader_kind(path: &str) -> Option<LoaderKind> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "ld.so"
        || name.starts_with("ld.so.")
        || name.starts_with("ld64.so")
        || (name.starts_with("ld-") && name.contains(".so"))
    {
        return Some(LoaderKind::ElfLoader);
    }
    // `python3.12` and `perl5.36` are `python` and `perl`.
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    const INTERPRETERS: [&str; 27] = [
        "sh", "ash", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "busybox",
        "python", "pypy", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit",
        "tclsh", "wish", "awk", "gawk", "java",
    ];
    INTERPRETERS
        .contains(&stem)
        .then_some(LoaderKind::Interpreter)
}

fn exec_surface(policy: &Policy, plan: &LaunchPlan, mounts: &[VisibleMount]) -> ExecSurface {
    let allow: Vec<String> = runner_flags(policy, plan)
        .iter()
        .flat_map(|seg| seg.windows(2))
        .filter(|w| w[0] == "--allow")
        .map(|w| w[1].to_string())
        .collect();
    let writable: Vec<String> = mounts
        .iter()
        .filter(|m| m.access == MountAccess::ReadWrite && m.kind != MountKind::Proc)
        .map(|m| m.path.clone())
        .collect();
    let landlock = !allow.is_empty();
    let code_loaders: Vec<CodeLoader> = allow
        .iter()
        .filter_map(|p| {
            code_loader_kind(p).map(|kind| CodeLoader {
                path: p.clone(),
                kind,
            })
        })
        .collect();
    ExecSurface {
        any_file_in: if landlock {
            Vec::new()
        } else {
            mounts
                .iter()
                .filter(|m| m.kind != MountKind::Proc)
                .map(|m| m.path.clone())
                .collect()
        },
        loader_runs_writable: if code_loaders.is_empty() {
            Vec::new()
        } else {
            writable.clone()
        },
        code_loaders,
        writable_and_executable: if landlock { Vec::new() } else { writable },
        landlock_allowlist: landlock.then_some(allow),
        memfd_guard: plan
            .seccomp()
            .as_ref()
            .is_some_and(|s| s.exec_allowlist_guard),
    }
}

/// The host-side programs and the exec chain, with how each is found.
fn programs(policy: &Policy, plan: &LaunchPlan) -> Programs {
    let host_found = if plan.bwrap_pin().is_some() {
        Found::PinnedDescriptor
    } else {
        Found::PathAtLaunch
    };
    // Executables overlaid from pinned descriptors, by worker-visible path.
    let overlays: BTreeMap<&str, &str> = plan
        .ops()
        .iter()
        .filter_map(|op| match op {
            BwrapOp::RoBind {
                source: MountSource::Pinned(slot),
                destination,
            } => plan
                .pins()
                .get(usize::from(slot.0))
                .filter(|p| {
                    matches!(
                        p.role,
                        PinRole::Worker
                            | PinRole::LimitRunner
                            | PinRole::LandlockRunner
                            | PinRole::CombinedRunner
                            | PinRole::AllowedExecutable
                    )
                })
                .map(|p| (destination.as_str(), p.host_path.as_str())),
            _ => None,
        })
        .collect();
    let (segments, worker) = command_parts(policy, plan);
    let step = |role, path: &str| {
        let pinned_from = overlays.get(path).map(|h| h.to_string());
        ChainProgram {
            role,
            path: path.to_string(),
            found: if pinned_from.is_some() {
                Found::PinnedDescriptor
            } else {
                Found::PathAtLaunch
            },
            pinned_from,
        }
    };
    let mut chain: Vec<ChainProgram> = runner_roles(policy)
        .into_iter()
        .zip(&segments)
        .filter_map(|(role, seg)| seg.first().map(|p| step(role, p)))
        .collect();
    let mut worker = worker.into_iter();
    if let Some(path) = worker.next() {
        chain.push(step(ChainRole::Worker, path));
    }
    Programs {
        bubblewrap: HostProgram {
            path: plan.bwrap().to_string(),
            found: host_found,
        },
        // The cgroup runner is opened `O_PATH` at bind and, when the plan
        // pins executables, executed through that descriptor.
        cgroup_runner: plan.cgroup().map(|c| HostProgram {
            path: c.runner.to_string(),
            found: host_found,
        }),
        chain,
        worker_args: worker.map(str::to_string).collect(),
    }
}

fn filter_summary(policy: &Policy, plan: &LaunchPlan) -> Option<FilterSummary> {
    let seccomp = plan.seccomp()?;
    let (profile, exec_allowlist) = crate::lower::launch_filter(policy)?;
    let classes: BTreeMap<&str, Class> = guards::DENIED.iter().map(|d| (d.name, d.class)).collect();
    let mut per_arch = Vec::new();
    let mut errors = Vec::new();
    for arch in Arch::ALL {
        let rules = match RuleSet::for_launch(&profile, arch, exec_allowlist) {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("{}: {e}", arch.name()));
                continue;
            }
        };
        let stats = match compile_rules(&rules) {
            Ok(p) => p.stats(),
            Err(e) => {
                errors.push(format!("{}: {e}", arch.name()));
                continue;
            }
        };
        let mut denied: BTreeMap<Class, Vec<String>> = BTreeMap::new();
        let mut guarded = Vec::new();
        for g in rules.guards() {
            match (&g.cond, classes.get(g.name)) {
                (None, Some(class)) if g.action == Action::Errno(1) => {
                    denied.entry(*class).or_default().push(g.name.to_string());
                }
                (cond, _) => guarded.push(Guard {
                    syscall: g.name.to_string(),
                    when: cond.as_ref().map(condition),
                    action: FilterAction::of(g.action),
                }),
            }
        }
        let allowed = match rules.fallback() {
            Fallback::AllowAll => None,
            Fallback::AllowOnly(set) => Some(
                set.iter()
                    .map(|nr| {
                        splash_seccomp::syscall_name(arch, *nr)
                            .map_or_else(|| format!("#{nr}"), str::to_string)
                    })
                    .collect(),
            ),
        };
        per_arch.push(ArchFilter {
            arch: arch.name().to_string(),
            denied_classes: denied
                .into_iter()
                .map(|(c, syscalls)| DeniedClass {
                    class: SyscallClass::of(c),
                    syscalls,
                })
                .collect(),
            guarded,
            allowed,
            otherwise: FilterAction::of(rules.default_action()),
            skipped: rules.skipped().to_vec(),
            instructions: stats.len,
            worst_case_executed: stats.worst_case_executed,
            cache_eligible: stats.cache_eligible_syscalls,
            known_syscalls: stats.known_syscalls,
        });
    }
    Some(FilterSummary {
        profile: seccomp.profile,
        delivered_by: seccomp.delivery.clone(),
        per_arch,
        errors,
    })
}

fn condition(c: &ArgCond) -> GuardCondition {
    match c {
        ArgCond::AnyBitsLow32 { arg, mask } => GuardCondition {
            arg: *arg,
            test: ArgTest::AnyBits,
            mask: Some(*mask),
            values: Vec::new(),
        },
        ArgCond::NoBitsLow32 { arg, mask } => GuardCondition {
            arg: *arg,
            test: ArgTest::NoBits,
            mask: Some(*mask),
            values: Vec::new(),
        },
        ArgCond::EqualsLow32 { arg, values } => GuardCondition {
            arg: *arg,
            test: ArgTest::Equals,
            mask: None,
            values: values.clone(),
        },
    }
}

fn describe_cond(name: &str, c: &GuardCondition) -> String {
    let arg = c.arg;
    let mask = c.mask.unwrap_or(0);
    match c.test {
        ArgTest::AnyBits if name == "clone" && mask == guards::CLONE_NAMESPACE_FLAGS => {
            format!("argument {arg} has a namespace flag")
        }
        ArgTest::Equals if name == "ioctl" => {
            let names: Vec<&str> = c
                .values
                .iter()
                .map(|v| {
                    guards::DENIED_IOCTLS
                        .iter()
                        .find(|(_, n)| n == v)
                        .map(|(s, _)| *s)
                        .unwrap_or("?")
                })
                .collect();
            format!("argument {arg} is {}", names.join(" or "))
        }
        ArgTest::NoBits if name == "memfd_create" && mask == guards::MFD_NOEXEC_SEAL => {
            format!("argument {arg} lacks MFD_NOEXEC_SEAL")
        }
        ArgTest::AnyBits => format!("argument {arg} has any of {mask:#x}"),
        ArgTest::Equals => format!(
            "argument {arg} is one of {}",
            c.values
                .iter()
                .map(|v| format!("{v:#x}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ArgTest::NoBits => format!("argument {arg} has none of {mask:#x}"),
    }
}

/// The rlimit flags the plan passes to a runner, read back from its command.
const RLIMIT_FLAGS: [(&str, RlimitName); 5] = [
    ("--cpu-seconds", RlimitName::Cpu),
    ("--address-space-bytes", RlimitName::AddressSpace),
    ("--process-count", RlimitName::Processes),
    ("--open-files", RlimitName::OpenFiles),
    ("--file-size-bytes", RlimitName::FileSize),
];

/// The rlimits the plan's runner command sets, by name (`cpu`,
/// `address-space`, `processes`, `open-files`, `file-size`), as written in
/// the command.
pub fn rlimit_values<'a>(policy: &Policy, plan: &'a LaunchPlan) -> Vec<(&'static str, &'a str)> {
    runner_flags(policy, plan)
        .iter()
        .flat_map(|seg| seg.windows(2))
        .filter_map(|w| {
            RLIMIT_FLAGS
                .iter()
                .find(|(f, _)| *f == w[0])
                .map(|(_, name)| (name.id(), w[1]))
        })
        .collect()
}

fn limits(policy: &Policy, plan: &LaunchPlan) -> Limits {
    // Lowering writes each value from a `u64`, so each parses.
    let rlimits = runner_flags(policy, plan)
        .iter()
        .flat_map(|seg| seg.windows(2))
        .filter_map(|w| {
            let name = RLIMIT_FLAGS.iter().find(|(f, _)| *f == w[0])?.1;
            Some(Rlimit {
                name,
                value: w[1].parse().ok()?,
            })
        })
        .collect();
    Limits {
        rlimits,
        rlimits_required: policy.require_limit_runner(),
        cgroup: plan.cgroup().map(|c| CgroupView {
            parent: c.parent.to_string(),
            required: plan.require_cgroup_v2(),
            limits: c.limits.clone(),
            join_timeout_ms: c.join_timeout_ms,
        }),
        watchdog: plan.watchdog(),
    }
}

fn identity_text(identity: WorkerIdentity) -> String {
    match identity {
        WorkerIdentity::Fixed { uid, gid } => format!(
            "uid {uid}, gid {gid}, no supplementary group (a root host switches to it before Bubblewrap starts)"
        ),
        WorkerIdentity::Dynamic => "a uid and equal gid leased from the host's dynamic range for each session, no supplementary group".to_string(),
    }
}

fn rlimit_text(r: &Rlimit) -> String {
    let v = r.value;
    match r.name {
        RlimitName::Cpu => format!("{v} s of CPU time"),
        RlimitName::AddressSpace | RlimitName::FileSize => format_bytes(v),
        RlimitName::Processes => format!("{v} (per uid)"),
        RlimitName::OpenFiles => v.to_string(),
    }
}

/// The cgroup's values as `(controller, value)` lines.
fn cgroup_lines(c: &CgroupView) -> Vec<(String, String)> {
    let l = &c.limits;
    let mut lines = Vec::new();
    if let Some(v) = l.cpu_quota_micros {
        let quota = if v % 1000 == 0 {
            format_millis(v / 1000)
        } else {
            format!("{v} us")
        };
        lines.push(("cpu.max".into(), format!("{quota} per 100 ms")));
    }
    if let Some(v) = l.memory_max_bytes {
        lines.push(("memory.max".into(), format_bytes(v)));
    }
    if let Some(v) = l.memory_swap_max_bytes {
        lines.push(("memory.swap.max".into(), format_bytes(v)));
    }
    if let Some(v) = l.pids_max {
        lines.push(("pids.max".into(), v.to_string()));
    }
    for io in &l.io_max {
        let mut parts = Vec::new();
        if let Some(v) = io.rbps {
            parts.push(format!("read {}/s", format_bytes(v)));
        }
        if let Some(v) = io.wbps {
            parts.push(format!("write {}/s", format_bytes(v)));
        }
        if let Some(v) = io.riops {
            parts.push(format!("read {v} iops"));
        }
        if let Some(v) = io.wiops {
            parts.push(format!("write {v} iops"));
        }
        lines.push((
            format!("io.max {}:{}", io.major, io.minor),
            parts.join(", "),
        ));
    }
    lines.push(("join timeout".into(), format_millis(c.join_timeout_ms)));
    lines
}

fn namespaces(plan: &LaunchPlan) -> (Vec<Isolation>, Network) {
    let ops = plan.ops();
    let all = ops.contains(&BwrapOp::UnshareAll);
    let ns = [
        (all, Isolation::NewNamespaces),
        (
            ops.contains(&BwrapOp::DisableUserns),
            Isolation::NoNestedUserNamespaces,
        ),
        (ops.contains(&BwrapOp::AsPid1), Isolation::Pid1),
        (
            ops.contains(&BwrapOp::CapDropAll),
            Isolation::CapabilitiesDropped,
        ),
        (
            ops.contains(&BwrapOp::ClearEnv) && plan.environment().is_empty(),
            Isolation::EmptyEnvironment,
        ),
        (ops.contains(&BwrapOp::NewSession), Isolation::NewSession),
    ]
    .into_iter()
    .filter_map(|(on, i)| on.then_some(i))
    .collect();
    let network = match (plan.network_broker(), all) {
        (Some(b), _) => Network {
            kind: NetworkKind::Broker,
            broker: Some(BrokerView {
                catalog: b.catalog,
                ids: b.ids.iter().map(|i| i.to_string()).collect(),
                destination: b.destination.to_string(),
            }),
        },
        (None, true) => Network {
            kind: NetworkKind::None,
            broker: None,
        },
        (None, false) => Network {
            kind: NetworkKind::Host,
            broker: None,
        },
    };
    (ns, network)
}

fn network_text(n: &Network) -> String {
    match (n.kind, &n.broker) {
        (NetworkKind::Broker, Some(b)) => format!(
            "no network interfaces; {} ids {} only through the host broker at `{}`",
            match b.catalog {
                BrokerCatalog::Endpoint => "endpoint",
                BrokerCatalog::Origin => "origin",
            },
            b.ids
                .iter()
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", "),
            b.destination
        ),
        (NetworkKind::Broker, None) => "no network interfaces; a host broker".to_string(),
        (NetworkKind::None, _) => "none: an empty network namespace (loopback only)".to_string(),
        (NetworkKind::Host, _) => "the host's network".to_string(),
    }
}

fn not_enforced(
    policy: &Policy,
    plan: &LaunchPlan,
    writable: &WritableBytes,
    exec: &ExecSurface,
    limits: &Limits,
) -> Vec<NotEnforced> {
    use GapCode as G;
    let mut v = Vec::new();
    match policy.seccomp() {
        SeccompPolicy::Off if plan.seccomp().is_none() => {
            v.push(NotEnforced::of(G::NoSeccompFilter))
        }
        SeccompPolicy::Off => v.push(NotEnforced::of(G::BaselineFilterOnly)),
        SeccompPolicy::DenyKnownEscapeSurface => v.push(NotEnforced::of(G::EscapeSurfaceOnly)),
        SeccompPolicy::StrictAllowlist { .. } => {}
    }
    for u in &writable.unbounded {
        v.push(NotEnforced {
            code: G::UnboundedWrites,
            paths: vec![u.path.clone()],
        });
    }
    if exec.landlock_allowlist.is_none() {
        v.push(NotEnforced::of(G::ExecUnrestricted));
        if !exec.writable_and_executable.is_empty() {
            v.push(NotEnforced {
                code: G::WrittenFilesExecutable,
                paths: exec.writable_and_executable.clone(),
            });
        }
    } else {
        if !exec.code_loaders.is_empty() {
            v.push(NotEnforced {
                code: G::LoaderRunsFiles,
                paths: exec.loader_runs_writable.clone(),
            });
        }
        v.push(NotEnforced::of(G::LandlockExecOnly));
    }
    if !limits.rlimits.is_empty() {
        v.push(NotEnforced::of(G::RlimitsPerProcess));
    } else if plan.cgroup().is_none() {
        v.push(NotEnforced::of(G::NoResourceLimits));
    }
    if plan.cgroup().is_none() && !limits.rlimits.is_empty() {
        v.push(NotEnforced::of(G::NoCgroup));
    }
    if plan.watchdog().is_none() {
        v.push(NotEnforced::of(G::NoWatchdog));
    }
    if policy.pin_mounts() {
        v.push(NotEnforced::of(G::PinningRootsOnly));
    } else {
        v.push(NotEnforced::of(G::MountsByPath));
    }
    if !policy.pin_executables() {
        v.push(NotEnforced::of(G::ExecutablesByPath));
    }
    v
}

/// The explanation as text for a terminal.
pub fn render_human(e: &Explanation) -> String {
    // Every text that comes from the policy is shown through `esc`: a
    // control or bidirectional formatting character (which no checked
    // policy holds) could otherwise forge or hide a line.
    let mut t = String::new();
    let _ = writeln!(
        t,
        "policy \"{}\" ({}), plan for {}",
        esc(&e.policy),
        short(&e.policy_digest),
        e.arch
    );
    if e.all_registered_roots_active {
        let _ = writeln!(t, "no manifest: every registered file root is active");
    }
    render_mounts(&mut t, e);
    let w = &e.writable;
    let _ = writeln!(t, "\nwritable bytes:");
    match w.bound_bytes {
        Some(b) => {
            let _ = writeln!(
                t,
                "  at most {} ({} of tmpfs + {} of project quota)",
                format_bytes(b),
                format_bytes(w.tmpfs_bytes),
                format_bytes(w.quota_bytes)
            );
        }
        None => {
            let _ = writeln!(t, "  unbounded:");
            for u in &w.unbounded {
                let _ = writeln!(t, "    {}: {}", esc(&u.path), u.reason.text());
            }
        }
    }
    render_exec(&mut t, &e.exec);
    render_programs(&mut t, &e.programs);
    render_seccomp(&mut t, e.seccomp.as_ref());
    render_limits(&mut t, &e.limits);
    let _ = writeln!(t, "\nisolation:");
    for n in &e.namespaces {
        let _ = writeln!(t, "  {}", n.text());
    }
    let _ = writeln!(t, "  network: {}", esc(&network_text(&e.network)));
    if let Some(identity) = e.identity {
        let _ = writeln!(t, "  host identity: {}", identity_text(identity));
    }
    let _ = writeln!(t, "\nnot enforced:");
    for n in &e.not_enforced {
        let _ = writeln!(t, "  - {}", esc(&n.text(&e.writable)));
    }
    if !e.expectations.is_empty() {
        let _ = writeln!(
            t,
            "\nexpected (`splashc test` checks each inside the sandbox):"
        );
        for x in &e.expectations {
            let _ = writeln!(t, "  - {}", esc(x));
        }
    }
    if let Some(gaps) = &e.on_this_host {
        let _ = writeln!(t, "\non this host:");
        if gaps.is_empty() {
            let _ = writeln!(t, "  every control of the plan can be enforced");
        }
        for g in gaps {
            let _ = writeln!(t, "  - {} {}: {}", g.status.id(), g.control, esc(&g.detail));
            if let Some(fix) = &g.fix {
                let _ = writeln!(t, "    fix: {}", esc(fix));
            }
        }
    }
    t
}

fn render_mounts(t: &mut String, e: &Explanation) {
    let unresolved = e
        .mounts
        .iter()
        .any(|m| m.resolution == Resolution::Unresolved);
    let _ = writeln!(
        t,
        "\nvisible paths (in mount order{}):",
        if unresolved {
            "; host sources unresolved: the host was not probed"
        } else {
            ""
        }
    );
    let paths: Vec<String> = e.mounts.iter().map(|m| esc(&m.path).to_string()).collect();
    let width = paths.iter().map(String::len).max().unwrap_or(1);
    for (m, path) in e.mounts.iter().zip(&paths) {
        let role = m.role.to_string();
        let _ = write!(
            t,
            "  {:<width$}  {:<10} {:<11} {}",
            path,
            m.access,
            m.kind,
            esc(&role)
        );
        if let Some(src) = &m.source {
            let _ = write!(
                t,
                " <- {}{}",
                esc(src),
                if m.pinned { " (pinned)" } else { "" }
            );
            match (m.resolution, &m.resolved) {
                (Resolution::Differs, Some(r)) => {
                    let _ = write!(t, " → {}", esc(r));
                }
                (Resolution::Failed, _) => {
                    let _ = write!(t, " (cannot be resolved on this host)");
                }
                _ => {}
            }
        }
        if let Some(b) = &m.bound {
            let _ = write!(t, "; {b}");
        }
        t.push('\n');
    }
}

fn render_exec(t: &mut String, x: &ExecSurface) {
    let _ = writeln!(t, "\nexecution:");
    match &x.landlock_allowlist {
        Some(list) => {
            let _ = writeln!(
                t,
                "  Landlock allowlist ({}):",
                if x.code_loaders.is_empty() {
                    "nothing else can be executed"
                } else {
                    "no other file can be executed, but see below"
                }
            );
            for p in list {
                let _ = writeln!(t, "    {}", esc(p));
            }
        }
        None => {
            let _ = writeln!(
                t,
                "  any executable file in: {}",
                esc(&x.any_file_in.join(" "))
            );
            if !x.writable_and_executable.is_empty() {
                let _ = writeln!(
                    t,
                    "  including files written to: {}",
                    esc(&x.writable_and_executable.join(" "))
                );
            }
        }
    }
    if !x.code_loaders.is_empty() {
        let _ = writeln!(
            t,
            "  code loaded as data: these allowed programs run any file they can read (`ld.so FILE`, `sh FILE`):"
        );
        for l in &x.code_loaders {
            let kind = match l.kind {
                LoaderKind::ElfLoader => "ELF loader",
                LoaderKind::Interpreter => "interpreter",
            };
            let _ = writeln!(t, "    {kind} {}", esc(&l.path));
        }
        if !x.loader_runs_writable.is_empty() {
            let _ = writeln!(
                t,
                "  so files written to these run too: {}",
                esc(&x.loader_runs_writable.join(" "))
            );
        }
    }
    if x.memfd_guard {
        let _ = writeln!(
            t,
            "  memfd_create without MFD_NOEXEC_SEAL fails with EACCES"
        );
    }
}

fn render_programs(t: &mut String, p: &Programs) {
    let _ = writeln!(t, "\nprograms:");
    let _ = writeln!(
        t,
        "  host: bubblewrap {}, {}",
        esc(&p.bubblewrap.path),
        p.bubblewrap.found.text()
    );
    if let Some(r) = &p.cgroup_runner {
        let _ = writeln!(
            t,
            "  host: cgroup runner {}, {}",
            esc(&r.path),
            r.found.text()
        );
    }
    for c in &p.chain {
        let _ = write!(
            t,
            "  sandbox: {} {}, {}",
            c.role.text(),
            esc(&c.path),
            c.found.text()
        );
        if let Some(h) = &c.pinned_from {
            let _ = write!(t, " (from {})", esc(h));
        }
        t.push('\n');
    }
    let args: Vec<String> = p.worker_args.iter().map(|a| format!("{a:?}")).collect();
    let _ = writeln!(
        t,
        "  worker arguments: {}",
        if args.is_empty() {
            "none".to_string()
        } else {
            esc(&args.join(" ")).to_string()
        }
    );
}

fn render_seccomp(t: &mut String, s: Option<&FilterSummary>) {
    let _ = writeln!(t, "\nseccomp:");
    let Some(s) = s else {
        let _ = writeln!(t, "  none");
        return;
    };
    let _ = writeln!(
        t,
        "  profile {}, installed by {}",
        s.profile,
        delivery_text(&s.delivered_by)
    );
    for a in &s.per_arch {
        let _ = writeln!(
            t,
            "  {}: {} instructions, at most {} run per syscall, {}/{} known syscalls cache-eligible ({}%)",
            a.arch,
            a.instructions,
            a.worst_case_executed,
            a.cache_eligible,
            a.known_syscalls,
            (a.cache_eligible * 100)
                .checked_div(a.known_syscalls)
                .unwrap_or(0)
        );
    }
    // Architectures with the same decisions are shown once.
    let mut groups: Vec<(Vec<&str>, &ArchFilter)> = Vec::new();
    for a in &s.per_arch {
        let same = |b: &ArchFilter| {
            b.denied_classes == a.denied_classes
                && b.guarded == a.guarded
                && b.allowed == a.allowed
                && b.otherwise == a.otherwise
                && b.skipped == a.skipped
        };
        match groups.iter_mut().find(|(_, b)| same(b)) {
            Some((names, _)) => names.push(&a.arch),
            None => groups.push((vec![&a.arch], a)),
        }
    }
    for (names, a) in groups {
        let _ = writeln!(t, "  on {}:", names.join(", "));
        // In the order the filter tests them: the guards, then a strict
        // list.
        for c in &a.denied_classes {
            let _ = writeln!(t, "    EPERM {}: {}", c.class.label(), c.syscalls.join(" "));
        }
        for g in &a.guarded {
            let _ = writeln!(t, "    {g}");
        }
        if let Some(list) = &a.allowed {
            let _ = writeln!(
                t,
                "    then allowed: the {} listed syscalls; every other syscall: {}",
                list.len(),
                a.otherwise
            );
        }
        if !a.skipped.is_empty() {
            let _ = writeln!(t, "    not on this architecture: {}", a.skipped.join(" "));
        }
    }
    for err in &s.errors {
        let _ = writeln!(t, "  error: {err}");
    }
}

fn render_limits(t: &mut String, l: &Limits) {
    let _ = writeln!(t, "\nlimits:");
    if l.rlimits.is_empty() && l.cgroup.is_none() && l.watchdog.is_none() {
        let _ = writeln!(t, "  none");
    }
    for r in &l.rlimits {
        let _ = writeln!(t, "  rlimit {}: {}", r.name.id(), rlimit_text(r));
    }
    if !l.rlimits.is_empty() {
        let _ = writeln!(
            t,
            "  rlimits {}",
            if l.rlimits_required {
                "required: a policy without the limit runner is refused"
            } else {
                "not required"
            }
        );
    }
    if let Some(c) = &l.cgroup {
        let _ = writeln!(
            t,
            "  cgroup child of {} ({}):",
            esc(&c.parent),
            if c.required {
                "required: a launch outside it is refused"
            } else {
                "not required"
            }
        );
        for (k, v) in cgroup_lines(c) {
            let _ = writeln!(t, "    {k}: {v}");
        }
    }
    if let Some(w) = l.watchdog {
        let _ = writeln!(
            t,
            "  watchdog session deadline: {}",
            format_millis(w.session_deadline_ms)
        );
        if let Some(c) = w.call_deadline_ms {
            let _ = writeln!(t, "  watchdog call deadline: {}", format_millis(c));
        }
    }
}

fn short(digest: &str) -> String {
    format!("blake3 {}", digest.get(..12).unwrap_or(digest))
}

/// `s` as a `dot` string, its forbidden characters escaped first (a
/// newline would end the statement).
fn dot_quote(s: &str) -> String {
    let s = esc(s).to_string();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The mount graph in Graphviz `dot`: each visible path is a node under the
/// mount that contains it; host sources are boxes with an edge to their
/// mount point; read-write mounts are red, read-only ones blue.
pub fn render_dot(e: &Explanation) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "digraph {} {{",
        dot_quote(&format!("splashpol {}", e.policy))
    );
    let _ = writeln!(t, "  rankdir=LR;");
    let _ = writeln!(t, "  node [fontname=\"monospace\"];");
    for (i, m) in e.mounts.iter().enumerate() {
        let color = match m.access {
            MountAccess::ReadWrite => "red",
            MountAccess::ReadOnly => "blue",
        };
        let mut label = format!("{}\\n{} {}", m.path, m.access, m.kind);
        if let Some(b) = &m.bound {
            label.push_str(&format!("\\n{b}"));
        }
        let _ = writeln!(
            t,
            "  m{i} [label={}, color={color}];",
            dot_quote(&label).replace("\\\\n", "\\n")
        );
    }
    for (i, m) in e.mounts.iter().enumerate() {
        if m.path == "/" {
            continue;
        }
        // The parent is the latest earlier mount whose path contains this one.
        let parent = e.mounts[..i].iter().enumerate().rev().find(|(_, p)| {
            p.path == "/"
                || (m.path.starts_with(&p.path)
                    && m.path.as_bytes().get(p.path.len()) == Some(&b'/'))
        });
        if let Some((j, _)) = parent {
            let _ = writeln!(t, "  m{j} -> m{i};");
        }
    }
    let mut sources: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in e.mounts.iter().enumerate() {
        if let Some(s) = &m.source {
            sources.entry(s.as_str()).or_default().push(i);
        }
    }
    for (k, (src, targets)) in sources.iter().enumerate() {
        let _ = writeln!(
            t,
            "  h{k} [label={}, shape=box, style=dashed];",
            dot_quote(src)
        );
        for i in targets {
            let pinned = e.mounts[*i].pinned;
            let _ = writeln!(
                t,
                "  h{k} -> m{i} [style=dashed, label={}];",
                dot_quote(if pinned { "pinned" } else { "path" })
            );
        }
    }
    let _ = writeln!(t, "}}");
    t
}

#[cfg(test)]
mod tests;
