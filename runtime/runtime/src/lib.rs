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
//!    chain, the Bubblewrap build's options, project quotas) and retains
//!    every pinned descriptor ([`bind`]);
//! 2. [`BoundCommand::spawn_watched`] launches Bubblewrap with fresh
//!    duplicates of those descriptors and the seccomp program, delivers the
//!    bootstrap preamble ([`spawn`]) and hands the lifecycle to a
//!    [`Watchdog`] before returning the worker's private pipes ([`watchdog`]);
//!    [`BoundCommand::spawn_with_bootstrap`] is the unwatched path for plans
//!    without a `watchdog` block;
//! 3. [`SpawnedWorker::into_lifecycle_parts`] hands the host a
//!    [`WorkerLifecycle`] (status, terminate, reap-on-drop) and the worker's
//!    private pipes ([`lifecycle`]).
//!
//! Every raw system call lives in the private `sys` module.

pub mod bind;
pub mod broker;
pub mod devices;
pub mod launch;
pub mod lifecycle;
pub mod quota;
pub mod recovery;
pub mod session;
pub mod spawn;
mod sys;
pub mod verify;
pub mod watchdog;

pub use bind::{
    BindError, BindOptions, BoundCommand, BubblewrapLaunch, LaunchPreparation, PinnedSource,
};
pub use broker::BrokerBindError;
pub use devices::{DeviceDirectory, DeviceError, DeviceSources};
pub use launch::{LaunchError, LaunchOptions, LoadedPolicy, launch};
pub use lifecycle::{LaunchFailure, WorkerLifecycle, WorkerStatus};
pub use quota::{KernelQuotaInspector, QuotaError, QuotaInspector};
pub use recovery::{Reaped, ReconcileError, Reconciled};
pub use session::{CallError, Event, Indeterminate, Session};
pub use spawn::{LaunchSpec, SpawnError, SpawnedWorker};
pub use watchdog::{Deadlines, StopHandle, StopReason, Watchdog};
