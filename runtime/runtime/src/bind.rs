//! Bind: check a [`LaunchPlan`] against the host and retain its descriptors.
//!
//! Nothing is launched here, except `--help` of a Bubblewrap that is not an
//! ELF executable (see step 5). Steps 0 to 8 are the one list of checks in
//! [`preflight`](mod@crate::preflight): bind runs them until the first
//! failure, which is its error, and [`crate::preflight()`] runs them all and
//! reports every failure (what `splashc doctor` shows). The steps, in order:
//!
//! 0. the plan is re-verified ([`crate::verify`]): the fixed hardening
//!    prefix and this host's architecture for the plan and its seccomp
//!    program; a plan with a network broker needs the matching host broker
//!    ([`BindOptions::with_network_broker`]); otherwise bind fails (the
//!    plan's structure, such as a required cgroup's policy and every pin a
//!    slot names, is a [`LaunchPlan`] invariant checked when the plan was
//!    lowered or deserialized);
//! 1. the Bubblewrap program: canonicalized, a regular file with an execute
//!    bit; in executable-pinned mode the canonical file is opened and retained
//!    as one of the pins;
//! 2. every [`Pin`]: the configured path is canonicalized (symbolic links in
//!    the *configured* path are resolved here, once, and the resolved target is
//!    what gets pinned — except for executables, whose final component must not
//!    be a symbolic link at all); a canonical path of `/` is rejected; the
//!    canonical path is opened `O_PATH | O_NOFOLLOW | O_CLOEXEC` with
//!    `RESOLVE_NO_SYMLINKS`, so a link swapped in after canonicalization fails
//!    instead of being followed; the type is re-checked through the descriptor
//!    (`fstat`); the network broker's pin is instead the private directory
//!    of the host's broker (see [`crate::broker`]), never the policy's parent;
//! 3. every path-based mount source (unpinned mode): canonicalized, not `/`,
//!    the right type (a read-write source must be a directory);
//! 4. every program of the exec chain (the first program Bubblewrap
//!    executes and the program after each runner's `--`) and every Landlock
//!    target of its runners (`--allow`): reached through a read-only bind
//!    mount, and the host file behind it passes the same check as a pinned
//!    executable (not a symbolic link itself, a regular file with an execute
//!    bit), in path mode too; an error names the program or target by its
//!    worker-visible path ([`BindError::Executable`]);
//! 5. Bubblewrap's options: every option the plan's argument list uses must
//!    be one the build parses, read from the same file (the same pinned
//!    descriptor) that will be launched: the NUL-terminated `--option`
//!    literals its parser compares against (its read-only data sections
//!    first, the whole image before an option is refused), or, for a
//!    program that is not an ELF executable, the options its `--help`
//!    lists; an old build fails here with a named option;
//! 6. project quotas (see [`crate::quota`]) and their aggregate maximum;
//!    while an aggregate is set, a read-write mount that is not a verified
//!    quota root is refused;
//! 7. the cgroup-v2 boundary, when the plan has one: the parent is verified
//!    and the runner checked ([`crate::cgroup::CgroupBoundary::prepare`]);
//!    each spawn then creates a fresh child cgroup;
//! 8. the uid the worker will run as: when it is 0 (the host launches as
//!    root), every read-write host mount must be on a host mount that is
//!    `nosuid`, itself and every mount beneath it (see [`crate::nosuid`]), or
//!    bind fails naming the root and the fixes; and the device nodes (see
//!    [`crate::devices`]; the plan's binds of them are part of the prefix
//!    [`crate::verify`] checks): when that uid owns any of the host's nodes,
//!    launches get private nodes, and one directory of them is made here to
//!    prove that this host can (the first launch uses it);
//! 9. [`LaunchPreparation`] steps, which can wrap each launch (see
//!    [`crate::LaunchSpec`]); the cgroup runner always wraps outermost.

use std::collections::BTreeSet;
use std::fs::{self, File, Metadata};
use std::io::{self, Read, Seek};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use splashpol::model::{HostPath, PathError, SandboxPath, SelectorId};
use splashpol::plan::{Arch, BwrapOp, LaunchPlan, MountSource, Pin, PinKind, PinRole};

use crate::cgroup::{CgroupBoundary, CgroupError};
use crate::devices::{DEFAULT_DEVICE_PARENT, DeviceError, DeviceSources};
use crate::quota::{KernelQuotaInspector, QuotaError, QuotaInspector, VerifiedQuota};
use crate::spawn::LaunchSpec;
use crate::sys;

/// Why a plan could not be bound to this host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The plan does not start with the fixed hardening prefix: operation `position` should be `expected`, found `found`.
    #[error(
        "the plan does not start with the fixed hardening prefix: operation {position} should be `{expected}`, found {}; the launch is refused",
        found.as_deref().map_or_else(|| "nothing".to_owned(), |op| format!("{op:?}"))
    )]
    HardeningPrefix {
        /// The argument position.
        position: usize,
        /// What was expected.
        expected: &'static str,
        /// The operation found there; `None` when the plan ends before it.
        found: Option<Box<BwrapOp>>,
    },
    /// `what` is for `plan`, but this host is `host`.
    #[error(
        "{what} is for {}, but this host is {}; the launch is refused",
        .plan.name(),
        .host.name()
    )]
    ForeignArch {
        /// What is concerned.
        what: ForeignPart,
        /// The plan's architecture.
        plan: Arch,
        /// This host's architecture.
        host: Arch,
    },
    /// Failed to resolve source `path`.
    #[error("failed to resolve source `{}`", .path.display())]
    Resolve {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Source `path` resolves to `/`.
    #[error("source `{}` resolves to `/`; the host root is never mounted", .path.display())]
    ResolvesToRoot {
        /// The path involved.
        path: PathBuf,
    },
    /// Source `path` (resolved to `canonical`) is `found`.
    #[error("source `{}` (resolved to `{}`) is {found}; expected {expected}", .path.display(), .canonical.display())]
    WrongType {
        /// The path involved.
        path: PathBuf,
        /// Where the path resolves.
        canonical: PathBuf,
        /// What was expected.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
    /// Executable `path` is a symbolic link.
    #[error("executable `{}` is a symbolic link; name the file itself", .path.display())]
    SymlinkExecutable {
        /// The path involved.
        path: PathBuf,
    },
    /// Failed to pin source `path`.
    #[error("failed to pin source `{}`", .path.display())]
    Pin {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to inspect pinned source `path`.
    #[error("failed to inspect pinned source `{}`", .path.display())]
    Inspect {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A control this runtime cannot provide for the plan.
    #[error("this runtime cannot provide {what}; the launch is refused")]
    Unsupported {
        /// What it cannot provide.
        what: Unprovided,
    },
    /// The plan contradicts itself or breaks a rule of plans.
    #[error("launch plan is inconsistent: {0}")]
    Plan(#[source] PlanDefect),
    /// The `role` `program` is not reached through a read-only runtime mount.
    #[error(
        "{role} `{program}` is not reached through a read-only runtime mount; the launch is refused"
    )]
    NotInRuntimeMount {
        /// What the program is to the launch.
        role: ExecRole,
        /// The program's worker-visible path.
        program: SandboxPath,
    },
    /// The `role` `program`, the host file `host`, is not an executable the
    /// launch can run (`defect` says why).
    #[error(
        "{role} `{program}` (the host file `{}`) {defect}; the launch is refused",
        .host.display()
    )]
    Executable {
        /// What the program is to the launch.
        role: ExecRole,
        /// The program's worker-visible path.
        program: SandboxPath,
        /// The host path behind it, through the plan's mounts.
        host: PathBuf,
        /// What is wrong with it.
        defect: ExecDefect,
        /// The operating system's error, when there is one.
        #[source]
        source: Option<io::Error>,
    },
    /// Failed to query bubblewrap `path` for its options.
    #[error("failed to query bubblewrap `{}` for its options", .path.display())]
    BubblewrapQuery {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Bubblewrap `path` exited with `status` when asked for `--help`.
    #[error("bubblewrap `{}` exited with {status} when asked for `--help`", .path.display())]
    BubblewrapHelp {
        /// The path involved.
        path: PathBuf,
        /// How the process ended.
        status: crate::lifecycle::WorkerStatus,
    },
    /// Bubblewrap `path` does not support `option`, which this plan needs.
    #[error("bubblewrap `{}` does not support `{option}`, which this plan needs; the launch is refused (there is no fallback without it)", .path.display())]
    UnsupportedOption {
        /// The path involved.
        path: PathBuf,
        /// The Bubblewrap option.
        option: String,
    },
    /// Failed to verify the project quota of root `root` (`path`).
    #[error("failed to verify the project quota of root `{root}` (`{}`)", .path.display())]
    Quota {
        /// The policy's root id.
        root: SelectorId,
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: QuotaError,
    },
    /// Failed to verify the aggregate project quota.
    #[error("failed to verify the aggregate project quota")]
    AggregateQuota(#[source] QuotaError),
    /// Failed to prepare the cgroup-v2 boundary.
    #[error("failed to prepare the cgroup-v2 boundary")]
    Cgroup(#[source] CgroupError),
    /// Read-write mount at `destination` has no verified project quota, which the aggregate quota bound forbids.
    #[error(
        "read-write mount at `{destination}` has no verified project quota, which the aggregate quota bound forbids"
    )]
    UnverifiedWritableMount {
        /// The mount destination in the sandbox.
        destination: SandboxPath,
    },
    /// Launch preparation `step` failed.
    #[error("launch preparation `{step}` failed")]
    Preparation {
        /// The preparation step.
        step: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Cannot provide the sandbox's device nodes.
    #[error("cannot provide the sandbox's device nodes")]
    Devices(#[from] DeviceError),
    /// A read-write root of a root launch would honour set-user-ID bits.
    #[error(transparent)]
    SetId(#[from] crate::nosuid::SetIdError),
    /// The plan's worker identity cannot be used on this host.
    #[error(transparent)]
    Identity(#[from] crate::identity::IdentityError),
    /// Failed to bind the network broker.
    #[error("failed to bind the network broker")]
    Broker(#[from] crate::broker::BrokerBindError),
}

/// The part of a plan [`BindError::ForeignArch`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ForeignPart {
    /// The launch plan.
    Plan,
    /// The seccomp program's architecture field.
    SeccompProgram,
    /// The seccomp program's instructions: they allow no system call of
    /// this host.
    SeccompInstructions,
}

impl std::fmt::Display for ForeignPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plan => "the launch plan",
            Self::SeccompProgram => "the seccomp program",
            Self::SeccompInstructions => {
                "the seccomp program (it allows no system call of this host)"
            }
        })
    }
}

/// What a program is to the launch, in [`BindError::Executable`] and
/// [`BindError::NotInRuntimeMount`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExecRole {
    /// A runner of the exec chain: a program followed by its own `--` and
    /// the next program.
    Runner,
    /// The worker: the last program of the exec chain.
    Worker,
    /// A target of the Landlock allowlist (`--allow`, from `allow-exec`)
    /// that is not a program of the exec chain itself.
    AllowedTarget,
}

impl std::fmt::Display for ExecRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Runner => "runner",
            Self::Worker => "worker",
            Self::AllowedTarget => "Landlock `allow-exec` target",
        })
    }
}

/// Why a host file is not an executable the launch can run
/// ([`BindError::Executable`]). The check is the same in executable-pinned
/// and path mode: the file itself is not a symbolic link, and it is a
/// regular file with an execute bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecDefect {
    /// It does not exist, or its path cannot be resolved (the source says
    /// why).
    Unresolved,
    /// The file itself is a symbolic link.
    SymbolicLink,
    /// It resolves to `/`.
    ResolvesToRoot,
    /// Its canonical path could not be opened without following a symbolic
    /// link (the source says why).
    Open,
    /// Its type could not be read through the opened descriptor.
    Inspect,
    /// It is `found` (a directory, a file without an execute bit, a special
    /// file), not an executable regular file.
    WrongType {
        /// What was found.
        found: &'static str,
    },
}

impl std::fmt::Display for ExecDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unresolved => f.write_str("cannot be resolved"),
            Self::SymbolicLink => {
                f.write_str("is a symbolic link; name the file itself (the one it resolves to)")
            }
            Self::ResolvesToRoot => f.write_str("resolves to `/`"),
            Self::Open => f.write_str("cannot be opened without following a symbolic link"),
            Self::Inspect => f.write_str("cannot be inspected"),
            Self::WrongType { found } => {
                write!(f, "is {found}; expected an executable regular file")
            }
        }
    }
}

/// A control [`BindError::Unsupported`] names.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unprovided {
    /// A broker directory given as a pin; the broker binds its own.
    #[error("the network broker directory under `{}`", .path.display())]
    BrokerDirectoryPin {
        /// The pinned host path.
        path: PathBuf,
    },
    /// A host architecture without seccomp tables.
    #[error("launches on this host architecture (no seccomp tables for it)")]
    HostArch,
}

/// How a launch plan contradicts itself or the rules of plans. A plan made
/// by `splashpol::lower` never has one; a hand-edited or foreign plan can.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanDefect {
    /// The Bubblewrap pin does not hold the plan's Bubblewrap.
    #[error("bubblewrap pin {slot} does not hold `{}`", .bwrap.display())]
    BubblewrapPin {
        /// The slot.
        slot: u16,
        /// The plan's Bubblewrap path.
        bwrap: PathBuf,
    },
    /// A launched program that is not an absolute, normalized path.
    #[error("launched program `{program}`: {reason}")]
    ProgramPath {
        /// The program as the plan writes it.
        program: String,
        /// Why it is not a sandbox path.
        reason: PathError,
    },
    /// `--dev` or a device-node `--dev-bind` outside the hardening prefix.
    #[error(
        "`--dev` and the device-node `--dev-bind` operations may only appear in the hardening prefix"
    )]
    DeviceOutsidePrefix,
    /// A seccomp program the kernel would refuse.
    #[error("the seccomp program is not valid: {0}")]
    InvalidSeccomp(#[source] splash_seccomp::interp::InterpError),
    /// A program of the exec chain is a descriptor slot.
    #[error("a program of the exec chain is a descriptor slot")]
    ChainProgramIsSlot,
    /// The plan has no command.
    #[error("the plan has no command")]
    NoCommand,
    /// A quota check names pin `slot`, which is not a file root's directory
    /// (a validated plan never does).
    #[error("a quota check names pin {slot}, which is not a file root's directory")]
    QuotaOnOtherPin {
        /// The pin slot.
        slot: u16,
    },
    /// A runner's `--` without a program after it.
    #[error("a runner's `--` is not followed by a program")]
    RunnerWithoutProgram,
    /// A runner's `--allow` names a descriptor slot instead of a path.
    #[error("a runner's `--allow` target is a descriptor slot, not a path")]
    AllowedTargetIsSlot,
}

/// A descriptor retained at bind, duplicated fresh for every launch.
#[derive(Debug)]
pub struct PinnedSource {
    pub(crate) pin: Pin,
    pub(crate) canonical: PathBuf,
    pub(crate) fd: OwnedFd,
}

impl PinnedSource {
    /// The plan's pin this descriptor holds.
    pub fn pin(&self) -> &Pin {
        &self.pin
    }

    /// The canonical host path that was opened.
    pub fn canonical_path(&self) -> &Path {
        &self.canonical
    }

    /// A fresh close-on-exec duplicate (`F_DUPFD_CLOEXEC`, number ≥ 3).
    pub fn duplicate(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }
}

/// A step that runs at the end of bind and may change how the command is
/// launched (wrap the program with a prefix). The cgroup-v2 boundary is not
/// one of these: a plan's `cgroup` policy is always prepared by bind itself,
/// and its runner wraps outside every preparation.
pub trait LaunchPreparation: std::fmt::Debug + Send + Sync {
    /// Short name for error messages.
    fn name(&self) -> &str;
    /// Checks and prepares host state after every other bind step.
    fn prepare(&mut self, command: &BoundCommand) -> io::Result<()>;
    /// Adjusts one launch (e.g. wraps the program); called by spawn.
    fn wrap(&self, spec: &mut LaunchSpec) -> io::Result<()>;
    /// The host uid that Bubblewrap and the worker run as when this step's
    /// wrapper changes it (`None`: the wrapper keeps the runtime's uid). Bind
    /// uses it to decide whether the worker would own the host's device
    /// nodes ([`crate::devices`]); a wrapper that changes the uid without
    /// saying so gets private nodes it cannot reach, and the launch fails.
    fn launch_uid(&self) -> Option<u32> {
        None
    }
}

/// Options of [`BoundCommand::bind_with`].
#[derive(Debug)]
pub struct BindOptions {
    pub(crate) quota_inspector: Box<dyn QuotaInspectorDebug>,
    pub(crate) preparations: Vec<Box<dyn LaunchPreparation>>,
    pub(crate) device_parent: PathBuf,
    pub(crate) network_broker: Option<splash_broker::BrokerMount>,
    pub(crate) identities: crate::identity::DynamicIdentities,
}

/// A [`QuotaInspector`] that can be printed in debug output.
pub trait QuotaInspectorDebug: QuotaInspector + std::fmt::Debug + Send + Sync {}
impl<T: QuotaInspector + std::fmt::Debug + Send + Sync> QuotaInspectorDebug for T {}

impl Default for BindOptions {
    fn default() -> Self {
        Self {
            quota_inspector: Box::new(KernelQuotaInspector),
            preparations: Vec::new(),
            device_parent: PathBuf::from(DEFAULT_DEVICE_PARENT),
            network_broker: None,
            identities: crate::identity::DynamicIdentities::default(),
        }
    }
}

impl BindOptions {
    /// Replaces the project-quota inspector (the default reads the kernel).
    pub fn with_quota_inspector(mut self, inspector: impl QuotaInspectorDebug + 'static) -> Self {
        self.quota_inspector = Box::new(inspector);
        self
    }

    /// Replaces the parent directory of the per-launch private device
    /// directories (default `/dev`): owned by root, writable by nobody else
    /// (or sticky), on a filesystem not mounted `nodev`.
    pub fn with_device_directory(mut self, parent: impl Into<PathBuf>) -> Self {
        self.device_parent = parent.into();
        self
    }

    /// Replaces where `identity dynamic` leases its ids from (default
    /// [`crate::identity::IdentityRange::DEFAULT`] in
    /// [`crate::identity::DEFAULT_LEASE_DIRECTORY`]).
    pub fn with_dynamic_identities(
        mut self,
        identities: crate::identity::DynamicIdentities,
    ) -> Self {
        self.identities = identities;
        self
    }

    /// Adds a launch preparation step.
    pub fn with_preparation(mut self, step: impl LaunchPreparation + 'static) -> Self {
        self.preparations.push(Box::new(step));
        self
    }

    /// Supplies the host's network broker (`HostBroker::mount`). A plan with
    /// a `network_broker` binds only with one whose catalog kind and ids are
    /// the plan's; its private directory is what gets pinned. A broker for a
    /// plan without one is refused.
    pub fn with_network_broker(mut self, mount: splash_broker::BrokerMount) -> Self {
        self.network_broker = Some(mount);
        self
    }
}

/// How Bubblewrap itself is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BubblewrapLaunch {
    /// Through its canonical path.
    Path,
    /// Through `/proc/self/fd/N` of a fresh duplicate of the retained pin.
    Pinned(splashpol::plan::PinSlot),
}

/// A launch plan checked against this host, owning its pinned descriptors.
#[derive(Debug)]
pub struct BoundCommand {
    pub(crate) plan: LaunchPlan,
    pub(crate) bwrap_canonical: PathBuf,
    pub(crate) bwrap_launch: BubblewrapLaunch,
    pub(crate) pins: Vec<PinnedSource>,
    pub(crate) quotas: Vec<VerifiedQuota>,
    pub(crate) preparations: Vec<Box<dyn LaunchPreparation>>,
    pub(crate) cgroup: Option<CgroupBoundary>,
    pub(crate) devices: DeviceSources,
    pub(crate) identity: crate::identity::IdentitySwitch,
}

fn type_name(meta: &Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        "a directory"
    } else if ft.is_file() {
        if meta.permissions().mode() & 0o111 != 0 {
            "an executable file"
        } else {
            "a regular file"
        }
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

fn kind_matches(kind: PinKind, meta: &Metadata) -> bool {
    match kind {
        PinKind::Directory => meta.is_dir(),
        PinKind::RegularFile => meta.is_file(),
        PinKind::Executable => meta.is_file() && meta.permissions().mode() & 0o111 != 0,
        PinKind::FileOrDirectory => meta.is_dir() || meta.is_file(),
        PinKind::BrokerDirectory => false,
    }
}

fn kind_name(kind: PinKind) -> &'static str {
    match kind {
        PinKind::Directory => "a directory",
        PinKind::RegularFile => "a regular file",
        PinKind::Executable => "an executable regular file",
        PinKind::FileOrDirectory => "a directory or a regular file",
        PinKind::BrokerDirectory => "a private broker directory",
    }
}

fn is_executable_role(role: &PinRole) -> bool {
    matches!(
        role,
        PinRole::Bubblewrap
            | PinRole::Worker
            | PinRole::LimitRunner
            | PinRole::LandlockRunner
            | PinRole::CombinedRunner
            | PinRole::AllowedExecutable
    )
}

/// Canonicalizes `path`, rejecting `/`.
pub(crate) fn canonical(path: &str) -> Result<PathBuf, BindError> {
    let canonical = fs::canonicalize(path).map_err(|source| BindError::Resolve {
        path: PathBuf::from(path),
        source,
    })?;
    if canonical == Path::new("/") {
        return Err(BindError::ResolvesToRoot {
            path: PathBuf::from(path),
        });
    }
    Ok(canonical)
}

/// Opens `path` when it is already canonical: a [`HostPath`] is absolute,
/// not `/` and normalized (no `.`, `..` or empty component), and so is a
/// normalized sandbox path joined below one, so when `openat2` with
/// `RESOLVE_NO_SYMLINKS` succeeds (no component is a symbolic link) the path
/// is its own canonical form. The descriptor is `O_PATH | O_NOFOLLOW`; its
/// metadata is returned too (a symbolic link as the last component is
/// reported as one, not followed). `None` sends the caller to the full
/// resolution, which also gives every error its usual form.
fn open_canonical(path: &Path) -> Option<(OwnedFd, Metadata)> {
    let file = File::from(sys::open_path_no_symlinks(path).ok()?);
    let meta = file.metadata().ok()?;
    Some((OwnedFd::from(file), meta))
}

/// Why [`open_object`] refused a host path; the caller names the object.
#[derive(Debug)]
pub(crate) enum ObjectDefect {
    /// `lstat` or `realpath` failed.
    Unresolved(io::Error),
    /// The canonical path is `/`.
    ResolvesToRoot,
    /// The path itself is a symbolic link (refused for executables).
    SymbolicLink,
    /// `openat2` of the canonical path failed.
    Open(io::Error),
    /// `fstat` through the descriptor failed.
    Inspect(io::Error),
    /// The object is not of the required type.
    WrongType {
        /// Where the path resolves.
        canonical: PathBuf,
        /// What was found there.
        found: &'static str,
    },
}

impl ObjectDefect {
    /// The error for a pin or Bubblewrap, named by its configured `path`.
    pub(crate) fn for_source(self, path: &Path, kind: PinKind) -> BindError {
        let path = path.to_path_buf();
        match self {
            Self::Unresolved(source) => BindError::Resolve { path, source },
            Self::ResolvesToRoot => BindError::ResolvesToRoot { path },
            Self::SymbolicLink => BindError::SymlinkExecutable { path },
            Self::Open(source) => BindError::Pin { path, source },
            Self::Inspect(source) => BindError::Inspect { path, source },
            Self::WrongType { canonical, found } => BindError::WrongType {
                path,
                canonical,
                expected: kind_name(kind),
                found,
            },
        }
    }

    /// The error for a program the sandbox executes, named by its
    /// worker-visible path and the host file behind it.
    fn for_program(self, role: ExecRole, program: &SandboxPath, host: &Path) -> BindError {
        let (defect, source) = match self {
            Self::Unresolved(e) => (ExecDefect::Unresolved, Some(e)),
            Self::ResolvesToRoot => (ExecDefect::ResolvesToRoot, None),
            Self::SymbolicLink => (ExecDefect::SymbolicLink, None),
            Self::Open(e) => (ExecDefect::Open, Some(e)),
            Self::Inspect(e) => (ExecDefect::Inspect, Some(e)),
            Self::WrongType { found, .. } => (ExecDefect::WrongType { found }, None),
        };
        BindError::Executable {
            role,
            program: program.clone(),
            host: host.to_path_buf(),
            defect,
            source,
        }
    }
}

/// The one check of a host object bind relies on: every pin, Bubblewrap,
/// and (whatever the plan pins) each program of the exec chain and each
/// Landlock target. `path` is absolute and normalized.
///
/// With `executable`, the path itself must not be a symbolic link. The path
/// is canonicalized (a link in a directory component is resolved here,
/// once), must not be `/`, and is opened `O_PATH | O_NOFOLLOW | O_CLOEXEC`
/// with `RESOLVE_NO_SYMLINKS`, so a link swapped in after canonicalization
/// fails instead of being followed; the type is checked through the
/// descriptor (`fstat`). Returns the canonical path and the descriptor.
pub(crate) fn open_object(
    path: &Path,
    kind: PinKind,
    executable: bool,
) -> Result<(PathBuf, OwnedFd), ObjectDefect> {
    let (canonical, fd, meta) = match open_canonical(path) {
        // The common case: the path is canonical, opened once.
        Some((fd, meta)) if !meta.file_type().is_symlink() => (path.to_path_buf(), fd, meta),
        _ => {
            if executable {
                let meta = fs::symlink_metadata(path).map_err(ObjectDefect::Unresolved)?;
                if meta.file_type().is_symlink() {
                    return Err(ObjectDefect::SymbolicLink);
                }
            }
            let canonical = fs::canonicalize(path).map_err(ObjectDefect::Unresolved)?;
            if canonical == Path::new("/") {
                return Err(ObjectDefect::ResolvesToRoot);
            }
            let file =
                File::from(sys::open_path_no_symlinks(&canonical).map_err(ObjectDefect::Open)?);
            let meta = file.metadata().map_err(ObjectDefect::Inspect)?;
            (canonical, OwnedFd::from(file), meta)
        }
    };
    if !kind_matches(kind, &meta) {
        return Err(ObjectDefect::WrongType {
            canonical,
            found: type_name(&meta),
        });
    }
    Ok((canonical, fd))
}

/// What an executable pin is overlaid as, when the sandbox runs it: the
/// role and the worker-visible path of its overlay (`None` for Bubblewrap,
/// which runs on the host, and for every other pin).
fn overlay_of<'p>(
    plan: &'p LaunchPlan,
    slot: usize,
    pin: &Pin,
) -> Option<(ExecRole, &'p SandboxPath)> {
    let role = match pin.role {
        PinRole::Worker => ExecRole::Worker,
        PinRole::LimitRunner | PinRole::LandlockRunner | PinRole::CombinedRunner => {
            ExecRole::Runner
        }
        PinRole::AllowedExecutable => ExecRole::AllowedTarget,
        _ => return None,
    };
    plan.ops().iter().find_map(|op| match op {
        BwrapOp::RoBind {
            source: MountSource::Pinned(s),
            destination,
        } if usize::from(s.0) == slot => Some((role, destination)),
        _ => None,
    })
}

pub(crate) fn pin_source(
    plan: &LaunchPlan,
    slot: usize,
    pin: &Pin,
) -> Result<PinnedSource, BindError> {
    let path = Path::new(pin.host_path.as_str());
    if pin.kind == PinKind::BrokerDirectory {
        return Err(BindError::Unsupported {
            what: Unprovided::BrokerDirectoryPin {
                path: path.to_path_buf(),
            },
        });
    }
    let executable = pin.kind == PinKind::Executable || is_executable_role(&pin.role);
    let (canonical, fd) =
        open_object(path, pin.kind, executable).map_err(|defect| {
            match overlay_of(plan, slot, pin) {
                Some((role, program)) => defect.for_program(role, program, path),
                None => defect.for_source(path, pin.kind),
            }
        })?;
    Ok(PinnedSource {
        pin: pin.clone(),
        canonical,
        fd,
    })
}

pub(crate) fn check_path_source(path: &HostPath, directory: bool) -> Result<PathBuf, BindError> {
    let canonical = canonical(path.as_str())?;
    let meta = fs::metadata(&canonical).map_err(|source| BindError::Resolve {
        path: PathBuf::from(path.to_string()),
        source,
    })?;
    let ok = if directory {
        meta.is_dir()
    } else {
        meta.is_dir() || meta.is_file()
    };
    if !ok {
        return Err(BindError::WrongType {
            path: PathBuf::from(path.to_string()),
            canonical: canonical.to_path_buf(),
            expected: if directory {
                "a directory"
            } else {
                "a directory or a regular file"
            },
            found: type_name(&meta),
        });
    }
    Ok(canonical)
}

/// The host file behind a worker-visible path.
#[derive(Debug)]
enum Behind {
    /// A path on the host, below the source of the read-only mount that
    /// covers it last.
    Host(PathBuf),
    /// Exactly the overlay of an executable pin, checked through its
    /// descriptor when it was pinned (step 2).
    PinnedExecutable,
}

/// Where a worker-visible path comes from, following the mount operations in
/// order (a later mount over a covering destination wins); `Some(None)` when
/// the last mount covering it is writable (a read-write root or a tmpfs) or
/// no mount covers it; `None` when it is reached through a pin that was not
/// made.
fn host_file_behind(
    plan: &LaunchPlan,
    pins: &[Option<PinnedSource>],
    path: &SandboxPath,
) -> Option<Option<Behind>> {
    let mut found: Option<Option<Behind>> = None;
    let mut unpinned = false;
    for op in plan.ops() {
        match op {
            BwrapOp::RoBind {
                source,
                destination,
            } if path.is_within(destination) => {
                let rest = &path.as_str()[destination.as_str().len()..];
                unpinned = false;
                let base = match source {
                    MountSource::Pinned(slot) => {
                        let Some(pinned) = pins.get(usize::from(slot.0)).and_then(Option::as_ref)
                        else {
                            unpinned = true;
                            found = Some(None);
                            continue;
                        };
                        if rest.is_empty() && pinned.pin.kind == PinKind::Executable {
                            found = Some(Some(Behind::PinnedExecutable));
                            continue;
                        }
                        pinned.canonical.clone()
                    }
                    MountSource::Path(p) => PathBuf::from(p.as_str()),
                };
                let host = if rest.is_empty() {
                    base
                } else {
                    base.join(rest.trim_start_matches('/'))
                };
                found = Some(Some(Behind::Host(host)));
            }
            BwrapOp::Bind { destination, .. } | BwrapOp::Tmpfs { destination, .. }
                if path.is_within(destination) =>
            {
                unpinned = false;
                found = Some(None);
            }
            _ => {}
        }
    }
    (!unpinned).then(|| found.flatten())
}

/// Step 4 for one program or Landlock target: `program` must be reached
/// through a read-only mount, and the host file behind it must pass
/// [`open_object`] as an executable: the check a pinned executable gets, in
/// path mode too. `None` when it is reached through a pin that was not made
/// (a failure of step 2, which a preflight reports and goes on from).
pub(crate) fn check_exec_target(
    plan: &LaunchPlan,
    pins: &[Option<PinnedSource>],
    role: ExecRole,
    program: &str,
) -> Option<Result<(), BindError>> {
    let sandbox = match SandboxPath::new(program.to_owned()) {
        Ok(p) => p,
        Err(e) => {
            return Some(Err(BindError::Plan(PlanDefect::ProgramPath {
                program: program.to_owned(),
                reason: e,
            })));
        }
    };
    Some(match host_file_behind(plan, pins, &sandbox)? {
        None => Err(BindError::NotInRuntimeMount {
            role,
            program: sandbox,
        }),
        Some(Behind::PinnedExecutable) => Ok(()),
        Some(Behind::Host(host)) => open_object(&host, PinKind::Executable, true)
            .map(drop)
            .map_err(|defect| defect.for_program(role, &sandbox, &host)),
    })
}

/// The options (`--name`) the plan's argument list passes to Bubblewrap,
/// as the one argument builder reports them.
pub(crate) fn plan_options(plan: &LaunchPlan) -> BTreeSet<String> {
    splashpol::emit::options_used(plan)
        .into_iter()
        .map(|o| o.option.to_owned())
        .collect()
}

/// Whether the Bubblewrap build at `program` (a path, or `/proc/self/fd/N`
/// of the pinned descriptor, which reopens that file) understands every
/// option in `needed`; the first one it lacks is the error.
///
/// An ELF build is read, not run: Bubblewrap's parser compares each argument
/// with a NUL-terminated `--option` literal, so those literals are the
/// options it parses (on bubblewrap 0.8.0 exactly the set `--help` lists, a
/// test checks it). Its read-only data sections are read first (about a
/// fifth of the file); only when an option is not found there is the whole
/// image read, so the answer is the whole image's. Any other program (a
/// wrapper script) is asked with `--help`. A false positive cannot weaken a
/// launch: Bubblewrap refuses an option it does not parse, and the launch
/// fails.
pub(crate) fn check_supported_options(
    program: &Path,
    shown: &str,
    needed: &BTreeSet<String>,
) -> Result<(), BindError> {
    let query = |source| BindError::BubblewrapQuery {
        path: PathBuf::from(shown),
        source,
    };
    let lacking = |supported: &BTreeSet<String>| needed.difference(supported).next().cloned();
    let mut file = File::open(program).map_err(query)?;
    let mut magic = [0u8; 4];
    let elf = match file.read_exact(&mut magic) {
        Ok(()) => &magic == b"\x7fELF",
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => false,
        Err(e) => return Err(query(e)),
    };
    let missing = if !elf {
        lacking(&options_from_help(program, shown)?)
    } else if elf_rodata_literals(&file)
        .map_err(query)?
        .is_some_and(|found| lacking(&found).is_none())
    {
        None
    } else {
        file.rewind().map_err(query)?;
        lacking(&option_literals_read(&file).map_err(query)?)
    };
    match missing {
        Some(option) => Err(BindError::UnsupportedOption {
            path: PathBuf::from(shown),
            option,
        }),
        None => Ok(()),
    }
}

/// The option literals of the read-only data sections (`.rodata` and
/// `.rodata.*`) of a 64-bit little-endian ELF file, found through its
/// section headers. `None` when the file has no such section or its headers
/// are not what this reader expects (then the caller reads the whole image).
fn elf_rodata_literals(file: &File) -> io::Result<Option<BTreeSet<String>>> {
    let size = file.metadata()?.len();
    let Some(sections) = elf_rodata_sections(file, size)? else {
        return Ok(None);
    };
    let mut found = BTreeSet::new();
    let mut bytes = Vec::new();
    for (offset, len) in sections {
        bytes.resize(len, 0);
        std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, offset)?;
        scan_strings(&bytes, &mut found);
    }
    Ok(Some(found))
}

/// The most read-only data [`elf_rodata_literals`] reads into memory at once
/// (bubblewrap 0.8.0 has 14 KB); an image with more is scanned whole, a
/// chunk at a time.
const RODATA_READ_MAX: usize = 1 << 20;

/// The file ranges `(offset, length)` of the `SHT_PROGBITS` sections named
/// `.rodata` or `.rodata.*`; `None` for anything but a consistent 64-bit
/// little-endian ELF file of `size` bytes that has at least one, or when
/// they hold more than [`RODATA_READ_MAX`] bytes together.
fn elf_rodata_sections(file: &File, size: u64) -> io::Result<Option<Vec<(u64, usize)>>> {
    use std::os::unix::fs::FileExt;
    const SHT_PROGBITS: u32 = 1;
    const ENTRY: usize = 64;
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    // A range inside the file, as (offset, length).
    let within = |offset: u64, len: u64| {
        (offset.checked_add(len)? <= size)
            .then(|| usize::try_from(len).ok())
            .flatten()
            .map(|len| (offset, len))
    };

    let mut header = [0u8; 64];
    if size < 64 {
        return Ok(None);
    }
    file.read_exact_at(&mut header, 0)?;
    // ELFCLASS64, ELFDATA2LSB, 64-byte section header entries.
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return Ok(None);
    }
    let (shoff, shentsize) = (u64_at(&header, 0x28), usize::from(u16_at(&header, 0x3a)));
    let (shnum, shstrndx) = (
        usize::from(u16_at(&header, 0x3c)),
        usize::from(u16_at(&header, 0x3e)),
    );
    if shentsize != ENTRY || shnum == 0 || shstrndx >= shnum {
        return Ok(None);
    }
    let Some((table_at, table_len)) = within(shoff, (shnum * ENTRY) as u64) else {
        return Ok(None);
    };
    let mut table = vec![0u8; table_len];
    file.read_exact_at(&mut table, table_at)?;
    let entry = |i: usize| &table[i * ENTRY..(i + 1) * ENTRY];

    let names = entry(shstrndx);
    let Some((names_at, names_len)) =
        within(u64_at(names, 0x18), u64_at(names, 0x20)).filter(|&(_, len)| len <= RODATA_READ_MAX)
    else {
        return Ok(None);
    };
    let mut strtab = vec![0u8; names_len];
    file.read_exact_at(&mut strtab, names_at)?;

    let mut ranges = Vec::new();
    for i in 0..shnum {
        let section = entry(i);
        let name_at = u32_at(section, 0) as usize;
        let name = strtab
            .get(name_at..)
            .and_then(|rest| rest.split(|b| *b == 0).next())
            .unwrap_or_default();
        if u32_at(section, 4) != SHT_PROGBITS
            || !(name == b".rodata" || name.starts_with(b".rodata."))
        {
            continue;
        }
        match within(u64_at(section, 0x18), u64_at(section, 0x20)) {
            Some(range) => ranges.push(range),
            None => return Ok(None),
        }
    }
    let total = ranges.iter().map(|&(_, len)| len).sum::<usize>();
    Ok((!ranges.is_empty() && total <= RODATA_READ_MAX).then_some(ranges))
}

/// How much of a program image [`option_literals_read`] reads at a time.
const SCAN_CHUNK: usize = 16 * 1024;

/// [`option_literals`] of everything `image` yields, read a chunk at a
/// time: only the string still open at the end of a chunk is carried over,
/// so for a program image (short strings between NULs) the memory touched
/// stays about two chunks whatever its size; a fresh buffer for the whole
/// image costs a page fault per 4 KiB. (Input without NULs is held whole
/// until its end, as reading it at once would.)
pub fn option_literals_read(mut image: impl Read) -> io::Result<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    // `window` = the open string carried over, then the bytes just read.
    let mut window: Vec<u8> = Vec::with_capacity(2 * SCAN_CHUNK);
    loop {
        let kept = window.len();
        window.resize(kept + SCAN_CHUNK, 0);
        let n = loop {
            match image.read(&mut window[kept..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        window.truncate(kept + n);
        if n == 0 {
            // The end of the image ends the last string.
            scan_strings(&window, &mut found);
            return Ok(found);
        }
        // Every string up to the last NUL read is complete; without a NUL
        // in these bytes the open string just grows.
        if let Some(last_nul) = finder(0).rfind(&window[kept..]) {
            let complete = kept + last_nul + 1;
            scan_strings(&window[..complete], &mut found);
            window.drain(..complete);
        }
    }
}

/// A word-at-a-time search for `byte` that needs no run-time CPU feature
/// detection (which costs a trip to the hypervisor per `cpuid` instruction
/// on a virtual machine, more than this whole scan).
fn finder(byte: u8) -> memchr::arch::all::memchr::One {
    memchr::arch::all::memchr::One::new(byte)
}

/// Every NUL-terminated string of `image` that ends in `--` followed by an
/// option name (lowercase letters, digits and `-`), as that `--name`. The
/// name starts after the last `--` of its string.
///
/// Bubblewrap's image is mostly binary (NULs are dense, `--` is rare), so
/// the scan jumps to each string that holds a `--` (a word-at-a-time search
/// for `-`), takes the last `--` before the string's NUL and goes on after
/// that NUL: every byte is looked at a bounded number of times.
pub fn option_literals(image: &[u8]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    scan_strings(image, &mut found);
    found
}

/// [`option_literals`] into `found`. The end of `image` ends a string, so
/// `image` split after any NUL gives the same union.
fn scan_strings(image: &[u8], found: &mut BTreeSet<String>) {
    let (dash_finder, nul_finder) = (finder(b'-'), finder(0));
    let mut from = 0;
    while from < image.len() {
        let Some(dash) = dash_finder.find(&image[from..]).map(|i| from + i) else {
            return;
        };
        if image.get(dash + 1) != Some(&b'-') {
            from = dash + 1;
            continue;
        }
        let end = nul_finder
            .find(&image[dash..])
            .map_or(image.len(), |n| dash + n);
        let string = &image[dash..end];
        // `string` starts with `--`, so there is a last one.
        let last = string.windows(2).rposition(|w| w == b"--").unwrap_or(0);
        let name = &string[last + 2..];
        if !name.is_empty() && name.iter().copied().all(option_name_byte) {
            found.insert(String::from_utf8_lossy(&string[last..]).into_owned());
        }
        from = end + 1;
    }
}

/// A byte an option name may hold.
fn option_name_byte(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'
}

/// The options a program lists in `--help`.
fn options_from_help(program: &Path, shown: &str) -> Result<BTreeSet<String>, BindError> {
    let mut command = Command::new(program);
    command
        .arg("--help")
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    sys::install_child_descriptor_hook(&mut command, Vec::new());
    let output = command
        .output()
        .map_err(|source| BindError::BubblewrapQuery {
            path: PathBuf::from(shown),
            source,
        })?;
    if !output.status.success() {
        return Err(BindError::BubblewrapHelp {
            path: PathBuf::from(shown),
            status: crate::lifecycle::WorkerStatus::from_exit(output.status),
        });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("--"))
        .map(str::to_owned)
        .collect())
}

impl BoundCommand {
    /// Binds `plan` with the kernel quota inspector and no extra preparation.
    pub fn bind(plan: LaunchPlan) -> Result<Self, BindError> {
        Self::bind_with(plan, BindOptions::default())
    }

    /// Binds `plan`; see the module documentation for the steps. Steps 0
    /// to 8 are the checks of [`preflight`](mod@crate::preflight), run in
    /// its order until the first failure, which is the error.
    pub fn bind_with(plan: LaunchPlan, options: BindOptions) -> Result<Self, BindError> {
        let mut run = crate::preflight::Binding::new(&plan, &options, crate::preflight::Mode::Bind);
        let _ = run.run();
        let bound = run.into_bound()?;
        let mut bound = BoundCommand {
            plan,
            bwrap_canonical: bound.bwrap_canonical,
            bwrap_launch: bound.bwrap_launch,
            pins: bound.pins,
            quotas: bound.quotas,
            preparations: Vec::new(),
            cgroup: bound.cgroup,
            devices: bound.devices,
            identity: bound.identity,
        };

        // 9. Launch preparations.
        let mut preparations = options.preparations;
        for step in &mut preparations {
            step.prepare(&bound)
                .map_err(|source| BindError::Preparation {
                    step: step.name().to_owned(),
                    source,
                })?;
        }
        bound.preparations = preparations;
        Ok(bound)
    }

    /// Whether each launch gets private device nodes (the worker's uid owns
    /// the host's).
    pub fn private_device_nodes(&self) -> bool {
        self.devices.private()
    }

    /// What each launch does about the worker's identity.
    pub fn identity(&self) -> &crate::identity::IdentitySwitch {
        &self.identity
    }

    /// The plan this command was bound from.
    pub fn plan(&self) -> &LaunchPlan {
        &self.plan
    }

    /// The retained descriptors, indexed by [`splashpol::plan::PinSlot`].
    pub fn pins(&self) -> &[PinnedSource] {
        &self.pins
    }

    /// How Bubblewrap is started.
    pub fn bubblewrap_launch(&self) -> BubblewrapLaunch {
        self.bwrap_launch
    }

    /// The verified project quotas.
    pub fn verified_quotas(&self) -> &[VerifiedQuota] {
        &self.quotas
    }

    /// The prepared cgroup-v2 boundary, when the plan has one.
    pub fn cgroup(&self) -> Option<&CgroupBoundary> {
        self.cgroup.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain definition: split at every NUL, take the last `--` of each
    /// string, keep it when a non-empty option name follows.
    fn reference(image: &[u8]) -> BTreeSet<String> {
        image
            .split(|b| *b == 0)
            .filter_map(|s| {
                let start = s.windows(2).rposition(|w| w == b"--")?;
                let name = &s[start + 2..];
                (!name.is_empty() && name.iter().copied().all(option_name_byte))
                    .then(|| String::from_utf8_lossy(&s[start..]).into_owned())
            })
            .collect()
    }

    /// A reader that hands out at most `.1` bytes per `read`, so strings
    /// cross read boundaries everywhere.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// A 64-bit little-endian ELF image with the named sections (type,
    /// bytes) after a 64-byte header, then `.shstrtab`, then the section
    /// header table.
    fn elf_image(sections: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let mut image = vec![0u8; 64];
        image[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let mut names = b"\0".to_vec();
        let mut headers = vec![[0u8; 64]]; // SHN_UNDEF
        let all = sections
            .iter()
            .copied()
            .chain([(".shstrtab", 3, &[][..])])
            .collect::<Vec<_>>();
        let mut shstrtab_name = 0;
        for (name, kind, bytes) in &all {
            let name_at = names.len() as u32;
            names.extend_from_slice(name.as_bytes());
            names.push(0);
            if *name == ".shstrtab" {
                shstrtab_name = name_at;
                continue;
            }
            let mut h = [0u8; 64];
            h[0..4].copy_from_slice(&name_at.to_le_bytes());
            h[4..8].copy_from_slice(&kind.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(image.len() as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            image.extend_from_slice(bytes);
            headers.push(h);
        }
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&shstrtab_name.to_le_bytes());
        h[4..8].copy_from_slice(&3u32.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&(image.len() as u64).to_le_bytes());
        h[0x20..0x28].copy_from_slice(&(names.len() as u64).to_le_bytes());
        image.extend_from_slice(&names);
        headers.push(h);
        let shoff = image.len() as u64;
        for h in &headers {
            image.extend_from_slice(h);
        }
        image[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        image[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        image[0x3c..0x3e].copy_from_slice(&(headers.len() as u16).to_le_bytes());
        image[0x3e..0x40].copy_from_slice(&((headers.len() - 1) as u16).to_le_bytes());
        image
    }

    fn write_image(dir: &Path, name: &str, image: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, image).unwrap();
        path
    }

    fn needs(options: &[&str]) -> BTreeSet<String> {
        options.iter().map(|o| (*o).to_owned()).collect()
    }

    /// The read-only data sections are read first; an option found only
    /// elsewhere in the image still counts (the whole image is read then),
    /// and one found nowhere is refused by name.
    #[test]
    fn the_option_check_reads_the_read_only_data_first_and_the_whole_image_before_refusing() {
        let dir = tempfile::tempdir().unwrap();
        let image = elf_image(&[
            (".text", 1, b"\x90--in-text\0"),
            (".rodata", 1, b"usage\0--bind\0--ro-bind\0"),
            (".rodata.str1.1", 1, b"--tmpfs\0"),
            (".rodata.notes", 7, b"--in-a-note\0"),
            (".rodatax", 1, b"--in-rodatax\0"),
        ]);
        let path = write_image(dir.path(), "elf", &image);
        let file = File::open(&path).unwrap();
        assert_eq!(
            elf_rodata_literals(&file).unwrap(),
            Some(needs(&["--bind", "--ro-bind", "--tmpfs"])),
            "only PROGBITS sections named .rodata or .rodata.*"
        );
        assert_eq!(
            option_literals(&image),
            needs(&[
                "--bind",
                "--ro-bind",
                "--tmpfs",
                "--in-text",
                "--in-a-note",
                "--in-rodatax"
            ])
        );
        check_supported_options(&path, "elf", &needs(&["--bind", "--tmpfs"])).unwrap();
        // Outside the read-only data: found by the whole-image read.
        check_supported_options(&path, "elf", &needs(&["--bind", "--in-text"])).unwrap();
        match check_supported_options(&path, "elf", &needs(&["--bind", "--nowhere"])) {
            Err(BindError::UnsupportedOption { option, .. }) => assert_eq!(option, "--nowhere"),
            other => panic!("{other:?}"),
        }
    }

    /// Section headers that are not what the reader expects are not an
    /// error: the whole image is read, with the same answers.
    #[test]
    fn inconsistent_section_headers_fall_back_to_the_whole_image() {
        let dir = tempfile::tempdir().unwrap();
        let good = elf_image(&[(".rodata", 1, b"--bind\0"), (".data", 1, b"--data\0")]);
        let shoff = u64::from_le_bytes(good[0x28..0x30].try_into().unwrap()) as usize;
        let mut broken: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut edit = |what: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
            let mut image = good.clone();
            f(&mut image);
            broken.push((what, image));
        };
        edit("32-bit class", &|i| i[4] = 1);
        edit("big-endian", &|i| i[5] = 2);
        edit("table past the end", &|i| {
            i[0x28..0x30].copy_from_slice(&(u64::MAX - 8).to_le_bytes())
        });
        edit("entry size", &|i| i[0x3a] = 40);
        edit("no sections", &|i| i[0x3c..0x3e].fill(0));
        edit("names index", &|i| i[0x3e] = 200);
        edit("section past the end", &|i| {
            // The `.rodata` header is entry 1; its size field.
            let at = shoff + 64 + 0x20;
            i[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        });
        edit("names past the end", &|i| {
            let at = shoff + 3 * 64 + 0x18;
            i[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        });
        edit("truncated table", &|i| i.truncate(shoff + 70));
        edit("more read-only data than is read at once", &|i| {
            // `.rodata` claims the whole file from offset 0, which is more
            // than the limit once the file is padded past it.
            let at = shoff + 64;
            i[at + 0x18..at + 0x20].copy_from_slice(&0u64.to_le_bytes());
            let len = RODATA_READ_MAX as u64 + 1;
            i[at + 0x20..at + 0x28].copy_from_slice(&len.to_le_bytes());
            i.resize(RODATA_READ_MAX + 1, 0);
        });
        edit("short file", &|i| i.truncate(40));
        let path = write_image(dir.path(), "good", &good);
        let file = File::open(&path).unwrap();
        assert_eq!(
            elf_rodata_literals(&file).unwrap(),
            Some(needs(&["--bind"]))
        );
        for (what, image) in &broken {
            let path = write_image(dir.path(), "broken", image);
            let file = File::open(&path).unwrap();
            assert_eq!(elf_rodata_literals(&file).unwrap(), None, "{what}");
            let whole = option_literals(image);
            for option in ["--bind", "--data", "--nowhere"] {
                let answer = check_supported_options(&path, what, &needs(&[option]));
                assert_eq!(answer.is_ok(), whole.contains(option), "{what}: {option}");
            }
        }
    }

    /// On the installed Bubblewrap the read-only data hold every option
    /// literal of the image, so the whole image is never read for it.
    #[test]
    fn the_installed_bwrap_has_every_option_literal_in_its_read_only_data() {
        let Ok(file) = File::open("/usr/bin/bwrap") else {
            eprintln!(
                "NOTE: /usr/bin/bwrap not readable; the crafted images above cover the reader"
            );
            return;
        };
        let image = fs::read("/usr/bin/bwrap").unwrap();
        let rodata = elf_rodata_literals(&file)
            .unwrap()
            .expect("read-only data sections");
        assert!(rodata.contains("--unshare-all"), "{rodata:?}");
        assert_eq!(rodata, option_literals(&image));
    }

    /// Reading an image in pieces finds what scanning it whole finds: no
    /// string is lost or split at a read boundary, and a string the end of
    /// the image ends still counts.
    #[test]
    fn the_chunked_option_scan_agrees_with_the_whole_image_scan() {
        let mut images: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"--a".to_vec(),
            b"\0--a\0--b".to_vec(),
            b"usage --bind\0--ro-bind\0\0--Bad\0--dev-bind-try\0--".to_vec(),
            b"--a".repeat(20_000),
            vec![b'-'; 40_000],
        ];
        // A long image whose strings straddle every chunk boundary.
        let mut long = Vec::new();
        for i in 0..9000 {
            long.extend_from_slice(format!("x--opt{}\0\x01--\0", i % 97).as_bytes());
        }
        images.push(long);
        for image in &images {
            let whole = option_literals(image);
            assert_eq!(whole, reference(image));
            for step in [
                1,
                2,
                3,
                5,
                64,
                SCAN_CHUNK - 1,
                SCAN_CHUNK,
                SCAN_CHUNK + 3,
                usize::MAX,
            ] {
                let read = option_literals_read(Trickle(image, step)).unwrap();
                assert_eq!(read, whole, "{step}-byte reads of {} bytes", image.len());
            }
        }
    }

    #[test]
    fn the_option_scan_agrees_with_the_plain_definition() {
        let crafted: &[&[u8]] = &[
            b"",
            b"\0",
            b"--",
            b"--a",
            b"---a",
            b"x---",
            b"--a--",
            b"--a-",
            b"usage --bind\0--ro-bind\0\0--Bad\0--dev-bind-try\0--",
            b"\xff\xfe--unshare-all",
            b"--cap-drop\0--x y\0trailing--seccomp",
        ];
        let long_string = b"--a".repeat(20_000);
        let dash_run = [b'-'; 5000];
        for image in crafted
            .iter()
            .copied()
            .chain([long_string.as_slice(), dash_run.as_slice()])
        {
            assert_eq!(option_literals(image), reference(image), "{image:?}");
        }
        // Pseudo-random images over a small alphabet rich in the bytes that
        // matter (NUL, `-`, name bytes, others).
        let alphabet = b"\0--ab9Z -";
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut image = Vec::new();
            for _ in 0..(state % 300) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                image.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            assert_eq!(option_literals(&image), reference(&image), "{image:?}");
            state = state.wrapping_add(1);
        }
        let bwrap = fs::read("/usr/bin/bwrap");
        match bwrap {
            Ok(image) => {
                let found = option_literals(&image);
                assert_eq!(found, reference(&image));
                assert!(found.contains("--unshare-all"), "{found:?}");
                assert_eq!(option_literals_read(image.as_slice()).unwrap(), found);
                for step in [1, 7, 4096, SCAN_CHUNK - 1, SCAN_CHUNK + 1] {
                    let read = option_literals_read(Trickle(image.as_slice(), step)).unwrap();
                    assert_eq!(read, found, "{step}-byte reads");
                }
            }
            Err(e) => eprintln!(
                "NOTE: /usr/bin/bwrap not readable ({e}); compared the crafted images only"
            ),
        }
    }
}
