//! Host side of a launch: bind, pin, spawn, supervise.
//!
//! Most hosts use the front door ([`launch()`]): [`LoadedPolicy::launch`]
//! validates and activates a manifest, lowers, binds, spawns under the
//! [`Watchdog`] and opens an authenticated [`Session`], or returns a typed
//! [`LaunchError`] with nothing left running. A [`Session`] enforces the
//! deadlines, one call at a time and cooperative cancellation; its
//! [`CallError`]s say whether the session was poisoned.
//!
//! Underneath, a [`splashpol::plan::LaunchPlan`] goes through a typestate:
//!
//! 1. [`BoundCommand::bind`] re-verifies the plan ([`verify`]) and checks it
//!    against this host (canonical sources, types, every program of the exec
//!    chain, the Bubblewrap build's options, project quotas, `nosuid` host
//!    mounts under read-write roots of a root launch) and retains every
//!    pinned descriptor ([`bind`]); a plan with a `cgroup` block gets its
//!    verified cgroup-v2 parent and runner ([`cgroup`]). Its checks are
//!    one list, [`preflight()`]: bind stops at the first failure, while a
//!    preflight runs them all and reports every failure ([`Preflight`],
//!    what `splashc doctor` shows);
//! 2. [`BoundCommand::spawn_watched`], the one launch, starts Bubblewrap
//!    with fresh duplicates of those descriptors and the seccomp program,
//!    delivers the bootstrap preamble ([`spawn`]) and hands the worker's
//!    [`WorkerLifecycle`] to a [`Watchdog`] before returning its private
//!    pipes ([`watchdog`]). With a cgroup, the launch starts through the
//!    cgroup runner in a fresh child cgroup and returns only once the host
//!    has seen it join;
//! 3. the [`Watchdog`] is the host's handle on the worker: status, stop and
//!    release (`cgroup.kill` and removal of the child cgroup when there is
//!    one), the sandbox's pid 1, reap-on-drop ([`lifecycle`]).
//!
//! Every raw system call lives in the private `sys` module.

#![warn(missing_docs)]

#[cfg(feature = "tokio")]
pub mod async_session;
pub mod bind;
pub mod broker;
pub mod bwrap_options;
pub mod cgroup;
pub mod devices;
pub mod error;
pub mod identity;
pub mod launch;
pub mod launch_spec;
pub mod learn;
pub mod lifecycle;
pub mod nosuid;
pub mod pin;
pub mod preflight;
pub mod quota;
pub mod recovery;
pub mod sandbox_init;
pub mod session;
pub mod spawn;
pub mod status;
mod sys;
pub mod verify;
pub mod watchdog;

#[cfg(feature = "tokio")]
pub use async_session::AsyncSession;
pub use bind::{BindOptions, BoundCommand, BubblewrapLaunch, LaunchPreparation, preflight};
pub use broker::{BrokerBindError, BrokerPlanDefect};
pub use cgroup::{CgroupBoundary, CgroupError, RunnerDefect, WorkerCgroup};
pub use devices::{DeviceDirectory, DeviceError, DeviceSources, ParentDefect};
pub use error::{
    BindError, ExecDefect, ExecRole, ForeignPart, LaunchError, PlanDefect, SpawnError, Stopped,
    Unprovided,
};
pub use identity::{
    DynamicIdentities, IdentityError, IdentityLease, IdentityRange, IdentitySwitch,
};
pub use launch::{LaunchOptions, LoadedPolicy, launch};
pub use launch_spec::LaunchSpec;
pub use lifecycle::WorkerLifecycle;
pub use nosuid::SetIdError;
pub use pin::PinnedSource;
pub use preflight::{Check, Outcome, Preflight, Step};
pub use quota::{KernelQuotaInspector, QuotaError, QuotaInspector, QuotaUnit};
pub use recovery::{Reaped, ReconcileError, Reconciled};
pub use sandbox_init::SandboxInitError;
pub use session::{CallError, ClosingSession, Event, Indeterminate, Session};
pub use spawn::try_launch_namespaces;
pub use splash_protocol::SessionState;
pub use status::{LaunchFailure, WorkerStatus};
pub use sys::LaunchNamespaces;
pub use watchdog::{DeadlineError, Deadlines, StopAwareStdout, StopHandle, StopReason, Watchdog};
