//! Host side of a launch: bind, pin, spawn, supervise.
//!
//! A [`splashpol::plan::LaunchPlan`] goes through a typestate:
//!
//! 1. [`BoundCommand::bind`] checks the plan against this host (canonical
//!    sources, types, the Bubblewrap build's options, project quotas) and
//!    retains every pinned descriptor ([`bind`]);
//! 2. [`BoundCommand::spawn_with_bootstrap`] launches Bubblewrap with fresh
//!    duplicates of those descriptors and the seccomp program, and delivers
//!    the bootstrap preamble ([`spawn`]);
//! 3. [`SpawnedWorker::into_lifecycle_parts`] hands the host a
//!    [`WorkerLifecycle`] (status, terminate, reap-on-drop) and the worker's
//!    private pipes ([`lifecycle`]).
//!
//! Every raw system call lives in the private `sys` module.

pub mod bind;
pub mod devices;
pub mod lifecycle;
pub mod quota;
pub mod spawn;
mod sys;

pub use bind::{
    BindError, BindOptions, BoundCommand, BubblewrapLaunch, LaunchPreparation, PinnedSource,
};
pub use devices::{DeviceDirectory, DeviceError, DeviceSources};
pub use lifecycle::{LaunchFailure, WorkerLifecycle, WorkerStatus};
pub use quota::{KernelQuotaInspector, QuotaError, QuotaInspector};
pub use spawn::{LaunchSpec, SpawnError, SpawnedWorker};
