//! The errors of a launch: why bind refused a plan, why a spawn failed,
//! and why the front door could not open a session.

use std::fmt;
use std::io;
use std::path::PathBuf;

use splash_protocol::{ManifestError, SessionError, SessionKeyError, Token};
use splashpol::CheckOutcome;
use splashpol::activate::ActivationError;
use splashpol::artifact::ArtifactError;
use splashpol::lower::LowerError;
use splashpol::model::{PathError, SandboxPath, SelectorId};
use splashpol::plan::{Arch, BwrapOp, Slot};

use crate::cgroup::CgroupError;
use crate::devices::DeviceError;
use crate::quota::QuotaError;
use crate::sandbox_init::SandboxInitError;
use crate::status::{LaunchFailure, WorkerStatus};

/// Why a plan could not be bound to this host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The plan is a learning plan
    /// ([`LaunchPlan::is_learning`](splashpol::plan::LaunchPlan::is_learning)).
    #[error(
        "the plan is a learning plan, whose filter only records system calls; it runs only under `splashc learn`, and a production launch refuses it"
    )]
    LearningPlan,
    /// The plan does not start with the fixed hardening prefix: operation `position` should be `expected`, found `found`.
    #[error(
        "the plan does not start with the fixed hardening prefix: operation {position} should be `{expected}`, found {}; the launch is refused",
        found.as_deref().map_or_else(|| "nothing".to_owned(), |op| format!("{op:?}"))
    )]
    HardeningPrefix {
        /// The argument position.
        position: usize,
        /// The operation expected there, as Bubblewrap arguments
        /// ([`splashpol::emit::display_op`]).
        expected: String,
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
        status: WorkerStatus,
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

/// Why a launch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// A deadline the watchdog cannot enforce; nothing was started.
    #[error("refused the deadlines before anything started")]
    Deadline(#[source] crate::watchdog::DeadlineError),
    /// Failed to start the watchdog.
    #[error("failed to start the watchdog; the worker was stopped and reaped")]
    Watchdog(#[source] io::Error),
    /// The plan was lowered without a manifest.
    #[error("the plan was lowered without a manifest; activate a manifest before launch")]
    NoSession,
    /// Bootstrap session id `bootstrap` does not match the manifest session id `manifest`.
    #[error(
        "bootstrap session id `{bootstrap}` does not match the manifest session id `{manifest}`"
    )]
    SessionMismatch {
        /// The bootstrap's session id.
        bootstrap: Token,
        /// The manifest's session id.
        manifest: Token,
    },
    /// Failed to duplicate pinned source `path` for the launch.
    #[error("failed to duplicate pinned source `{}` for the launch", .path.display())]
    Duplicate {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to make the pipe Bubblewrap reports the sandbox's pid 1 on.
    #[error("failed to make the pipe bubblewrap reports the sandbox's pid 1 on")]
    Supervision(#[source] io::Error),
    /// Failed to write the seccomp program to an anonymous descriptor.
    #[error("failed to write the seccomp program to an anonymous descriptor")]
    Seccomp(#[source] io::Error),
    /// Failed to make the launch's private device nodes.
    #[error("failed to make the launch's private device nodes")]
    Devices(#[from] crate::devices::DeviceError),
    /// The launch's identity could not be leased.
    #[error("the worker's identity could not be leased; nothing was started")]
    Identity(#[source] crate::identity::IdentityError),
    /// The plan's argument list uses a slot this launch did not prepare.
    #[error("the plan's argument list uses {0:?}, which this launch did not prepare")]
    UnpreparedSlot(Slot),
    /// This plan requires its cgroup-v2 boundary, and this path would
    /// start the worker outside it.
    #[error(
        "this plan requires its cgroup-v2 boundary, and this launch path would start the worker outside it; nothing was started (`BoundCommand::spawn_watched` joins the cgroup first)"
    )]
    Uncgrouped,
    /// The cgroup-v2 boundary failed.
    #[error("the cgroup-v2 boundary failed; nothing was left running")]
    Cgroup(#[source] CgroupError),
    /// Launch preparation `step` failed.
    #[error("launch preparation `{step}` failed")]
    Preparation {
        /// The preparation step.
        step: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to start bubblewrap `program`.
    #[error("failed to start bubblewrap `{}`", .program.display())]
    Exec {
        /// The program that could not be started.
        program: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The sandbox's pid 1 could not be held: without it a stop could not
    /// end the sandbox, so the launch was stopped.
    #[error("the sandbox's pid 1 could not be held; bubblewrap was stopped and reaped")]
    SandboxInit(#[source] SandboxInitError),
    /// Bubblewrap (or the cgroup runner in front of it) ended before it
    /// made the sandbox, so no worker ran; how it ended.
    #[error(transparent)]
    Unmade(LaunchFailure),
    /// Failed to write the bootstrap preamble to the worker.
    #[error(
        "failed to write the bootstrap preamble to the worker; bubblewrap was stopped and reaped, ending with {status}"
    )]
    Bootstrap {
        /// How Bubblewrap ended once stopped.
        status: Stopped,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// How a process the launch had to stop ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Stopped {
    /// It was reaped with this status.
    Reaped(WorkerStatus),
    /// Stopping or reaping it failed.
    NotReaped(io::Error),
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Reaped(status) => write!(f, "{status}"),
            Self::NotReaped(e) => write!(f, "reap failed: {e}"),
        }
    }
}

/// Why no session was opened. Nothing is left running.
///
/// [`LaunchError::is_refusal`] tells a refusal decided before any process
/// was created from a launch that started and failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The policy file could not be read: it could not be opened, is not
    /// a regular file, or is larger than [`MAX_POLICY_BYTES`](crate::launch::MAX_POLICY_BYTES).
    #[error("cannot read policy `{}`", .path.display())]
    Read {
        /// The path involved.
        path: PathBuf,
        /// Why.
        #[source]
        source: ReadError,
    },
    /// The policy file is not the one the host pinned: the BLAKE3 digest
    /// of its bytes ([`splashpol::artifact::digest`]) differs from the
    /// expected one ([`LoadedPolicy::from_path_expecting`](crate::LoadedPolicy::from_path_expecting)). Decided before
    /// the file is parsed. The digest detects any change to the file, not
    /// who made it.
    #[error(
        "policy `{name}` is not the pinned policy: its digest is `{found}`, expected `{}`",
        splashpol::text::escaped(.expected)
    )]
    DigestMismatch {
        /// The policy file name shown.
        name: String,
        /// The digest the host expects, as given.
        expected: String,
        /// The digest of the bytes read.
        found: String,
    },
    /// A compiled artifact failed its validation.
    #[error("policy artifact `{name}` is not valid")]
    Artifact {
        /// The policy file name shown.
        name: String,
        /// The operating system's error.
        #[source]
        source: ArtifactError,
    },
    /// Policy source that is not UTF-8.
    #[error("policy `{name}` is not UTF-8")]
    NotUtf8 {
        /// The policy file name shown.
        name: String,
    },
    /// The checker reported errors. The error carries every diagnostic with
    /// the source its spans point into; its `Display` renders them without
    /// colour, and [`CheckOutcome::render_human_with`] renders them otherwise.
    #[error("policy `{name}` has errors:\n{}", outcome.render_human(name, text))]
    Check {
        /// The policy file name shown.
        name: String,
        /// The policy source the diagnostics' spans point into.
        text: String,
        /// Every diagnostic (errors and warnings), in report order; its
        /// `policy` is `None`.
        outcome: Box<CheckOutcome>,
    },
    /// The manifest is not a valid protocol-v5 manifest.
    #[error("the manifest is invalid")]
    Manifest(#[source] ManifestError),
    /// The manifest cannot be activated against the policy.
    #[error("activation failed")]
    Activation(#[source] ActivationError),
    /// Lowering failed.
    #[error("cannot lower the policy")]
    Lower(#[source] LowerError),
    /// No seccomp tables for this host's architecture.
    #[error("this host's architecture is not supported")]
    UnsupportedHost,
    /// Bind refused the plan on this host.
    #[error("bind refused the plan")]
    Bind(#[source] BindError),
    /// No session key could be generated.
    #[error("cannot generate a session key")]
    Key(#[source] SessionKeyError),
    /// The launch failed (the worker, if started, was stopped and reaped).
    #[error("the launch failed")]
    Spawn(#[source] SpawnError),
    /// A descriptor for the session could not be made (the worker was
    /// stopped and reaped).
    #[error("cannot prepare the session's descriptors")]
    Descriptor(#[source] io::Error),
    /// The session could not be opened; `failure` says how the worker
    /// ended (it was stopped and reaped).
    #[error("cannot open the session ({failure})")]
    Open {
        /// The operating system's error.
        #[source]
        source: SessionError,
        /// What the watchdog observed.
        failure: LaunchFailure,
    },
}

impl LaunchError {
    /// True when the launch was refused before any process was created
    /// (load, check, manifest, activation, lowering, bind, key, or a spawn
    /// refusal such as a watchdog plan on the unwatched path).
    pub fn is_refusal(&self) -> bool {
        match self {
            Self::Spawn(e) => !matches!(
                e,
                SpawnError::Exec { .. } | SpawnError::Bootstrap { .. } | SpawnError::Watchdog(_)
            ),
            Self::Descriptor(_) | Self::Open { .. } => false,
            _ => true,
        }
    }
}

/// What a path that is not a regular file names (the type [`fstat`] of
/// the opened descriptor reports).
///
/// [`fstat`]: rustix::fs::fstat
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A named pipe (FIFO).
    NamedPipe,
    /// A character device, such as `/dev/zero` or a terminal.
    CharacterDevice,
    /// A block device.
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// A type the kernel reported that has no name here.
    Unknown,
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Directory => "a directory",
            Self::NamedPipe => "a named pipe (FIFO)",
            Self::CharacterDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::Socket => "a socket",
            Self::Unknown => "a file of unknown type",
        })
    }
}

/// Why [`read_regular_file`](crate::launch::read_regular_file) or
/// [`read_bounded`](crate::launch::read_bounded) returned no bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Opening, inspecting or reading failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The path names something other than a regular file.
    #[error("it is {0}, not a regular file")]
    NotRegular(FileKind),
    /// The input holds more than `bound` bytes.
    #[error("it holds more than {}, the most this input may hold", ShowBytes(*bound))]
    TooLarge {
        /// The bound, in bytes.
        bound: u64,
    },
}

/// A byte count as `N bytes`, with the binary unit when it is exact.
struct ShowBytes(u64);

impl fmt::Display for ShowBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MIB: u64 = 1024 * 1024;
        const KIB: u64 = 1024;
        match self.0 {
            n if n >= MIB && n % MIB == 0 => write!(f, "{} MiB ({n} bytes)", n / MIB),
            n if n >= KIB && n % KIB == 0 => write!(f, "{} KiB ({n} bytes)", n / KIB),
            n => write!(f, "{n} bytes"),
        }
    }
}
