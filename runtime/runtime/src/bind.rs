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

use std::fs::{self, File, Metadata};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

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
