//! Host side of a launch: bind, pin, spawn, supervise.
//!
//! A [`splashpol::plan::LaunchPlan`] goes through a typestate:
//!
//! 1. [`BoundCommand::bind`] checks the plan against this host (canonical
//!    sources, types, the Bubblewrap build's options, project quotas) and
//!    retains every pinned descriptor ([`bind`]); a plan with a `cgroup`
//!    block gets its verified cgroup-v2 parent and runner ([`cgroup`]);
//! 2. [`BoundCommand::spawn_with_bootstrap`] launches Bubblewrap with fresh
//!    duplicates of those descriptors and the seccomp program, and delivers
//!    the bootstrap preamble ([`spawn`]); with a cgroup, the launch starts
//!    through the cgroup runner in a fresh child cgroup and returns only once
//!    the host has seen it join;
//! 3. [`SpawnedWorker::into_lifecycle_parts`] hands the host a
//!    [`WorkerLifecycle`] (status, terminate — `cgroup.kill` and removal of
//!    the child cgroup when there is one — reap-on-drop) and the worker's
//!    private pipes ([`lifecycle`]).
//!
//! Every raw system call lives in the private `sys` module.

pub mod bind;
pub mod cgroup;
pub mod lifecycle;
pub mod quota;
pub mod spawn;
mod sys;

pub use bind::{
    BindError, BindOptions, BoundCommand, BubblewrapLaunch, LaunchPreparation, PinnedSource,
};
pub use cgroup::{CgroupBoundary, CgroupError, WorkerCgroup};
pub use lifecycle::{LaunchFailure, WorkerLifecycle, WorkerStatus};
pub use quota::{KernelQuotaInspector, QuotaError, QuotaInspector};
pub use spawn::{LaunchSpec, SpawnError, SpawnedWorker};
