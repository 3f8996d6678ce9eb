//! Spawn: turn a [`BoundCommand`] into a running, bootstrapped worker.
//!
//! One launch, in order:
//!
//! 1. the bootstrap's session id must equal the session id of the manifest
//!    the plan was activated with (checked before any descriptor is made);
//! 2. a [`LaunchSpec`] is prepared: a fresh close-on-exec duplicate of every
//!    retained pin, the seccomp program in a sealed `memfd`, the launch's
//!    private device nodes when bind chose them ([`crate::devices`]), and the
//!    argument list from the plan's one builder
//!    ([`LaunchPlan::bwrap_arguments`]) with each descriptor [`Slot`]
//!    rendered as the number of the descriptor made for it and each device
//!    slot as the node's host path;
//! 3. launch preparations may wrap the spec; with a cgroup policy, a fresh
//!    child cgroup is created and the cgroup runner wraps outermost
//!    ([`crate::cgroup`]);
//! 4. Bubblewrap is started (`sys::spawn_child`: `clone` with `CLONE_VM |
//!    CLONE_VFORK | CLONE_PIDFD`, then `execve`) with an empty environment,
//!    cwd `/`, private stdin/stdout pipes, stderr on `/dev/null`, default
//!    signal handling and an empty signal mask; in the child, every
//!    descriptor from 3 up is marked close-on-exec and only the spec's
//!    descriptors are made inheritable; the process is then signalled and
//!    reaped only through the pidfd made with it; `CLONE_NEWPID |
//!    CLONE_NEWNS` (and `CLONE_NEWUSER` for a host without
//!    `CAP_SYS_ADMIN`) make the launched process pid 1 of a pid namespace of
//!    its own (with that namespace's `/proc`), so its death, with the host,
//!    takes the whole sandbox; a host that may make no user namespace
//!    launches in its own namespaces;
//!    in executable-pinned mode the program is `/proc/self/fd/N` of a fresh
//!    duplicate of the pinned Bubblewrap (itself close-on-exec: the kernel
//!    opens the file before it closes the descriptor);
//! 5. the parent's copies of the launch descriptors are closed; with a
//!    cgroup, the host waits (the policy's join timeout) until the direct
//!    child's pid is listed in the child cgroup's `cgroup.procs`; a runner
//!    that exits first or does not join in time is killed with the cgroup,
//!    reaped, the cgroup removed, and the launch fails;
//! 6. the bootstrap preamble is written and flushed to the worker's stdin
//!    before any JSON; a failure kills and reaps Bubblewrap;
//! 7. Bubblewrap's `--info-fd` report (a private pipe the launch adds ahead
//!    of the plan's options) is read and the sandbox's pid 1 is held by a
//!    pidfd ([`crate::sandbox_init`]), so a stop ends the whole sandbox even
//!    when the worker cleared its parent-death signal; a missing or
//!    unconfirmable report stops the launch, and a pipe closed without a
//!    report (Bubblewrap ended before it made the sandbox) is
//!    [`SpawnError::Unmade`] with Bubblewrap's exit status;
//! 8. a [`Watchdog`] takes the worker over, enforcing the tighter of the
//!    host's deadlines and the plan's, before either pipe is returned.
//!
//! [`BoundCommand::spawn_watched`] is the one launch: there is no path that
//! hands out a worker without its watchdog. The private device directory
//! lives as long as the launch: it is removed when the launch fails or when
//! the [`WorkerLifecycle`] reaps the worker.
//!
//! Nothing is retried: a failed exec, an unsupported option or an
//! undeliverable filter is a launch failure.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{ChildStdin, ChildStdout};
use std::time::Instant;

use splash_protocol::PrivatePipeWorkerBootstrap;
use splashpol::plan::{LaunchPlan, SeccompDelivery, Slot};

use crate::bind::{BoundCommand, BubblewrapLaunch};
use crate::devices;
use crate::error::{SpawnError, Stopped};
use crate::launch_spec::{LaunchSpec, proc_fd_path};
use crate::lifecycle::{SpawnedWorker, WorkerLifecycle, WorkerProcess};
use crate::sandbox_init::SandboxInit;
use crate::sys::{self, LaunchNamespaces};
use crate::watchdog::{Deadlines, StopAwareStdout, Watchdog};

fn seccomp_slot(plan: &LaunchPlan) -> Option<Slot> {
    match plan.seccomp().map(|s| &s.delivery) {
        Some(SeccompDelivery::Bubblewrap) => Some(Slot::BwrapSeccomp),
        Some(SeccompDelivery::Runner) => Some(Slot::RunnerSeccomp),
        Some(SeccompDelivery::None) | None => None,
    }
}

/// Starts `program` as every launch starts its first program, in the
/// namespaces [`LaunchNamespaces`] names, and says which it got.
///
/// The launch starts as pid 1 of a pid namespace of its own, which the
/// sandbox's is nested in: when the launch dies (with its host, by the
/// parent-death signal), the kernel kills every process of the sandbox,
/// whatever they did to their own parent-death signals and wherever
/// Bubblewrap was in its set-up. A host without `CAP_SYS_ADMIN` makes it in
/// a user namespace of its own; where the host may make none (a sysctl, a
/// security module), the launch runs in the host's namespaces, as Bubblewrap
/// alone would (`docs/runtime.md`, "A host that dies").
fn start(
    program: &std::path::Path,
    args: &[String],
    inherit: &[std::os::fd::RawFd],
    ids: Option<(u32, u32)>,
) -> (LaunchNamespaces, io::Result<sys::SpawnedChild>) {
    let wanted = if sys::has_sys_admin() {
        LaunchNamespaces::Pid
    } else {
        LaunchNamespaces::UserAndPid
    };
    let launch = |namespaces| sys::spawn_child_as(program, args, inherit, ids, namespaces);
    match launch(wanted) {
        Err(e) if wanted == LaunchNamespaces::UserAndPid && sys::namespace_refused(&e) => {
            (LaunchNamespaces::Host, launch(LaunchNamespaces::Host))
        }
        other => (wanted, other),
    }
}

/// Runs `program args` with no descriptor but its standard streams, the way
/// a launch starts Bubblewrap: the namespaces it got and
/// whether it exited with status 0. `splashc doctor` asks it whether a
/// killed host takes its sandboxes with it on this host.
pub fn try_launch_namespaces(
    program: &std::path::Path,
    args: &[String],
) -> io::Result<(LaunchNamespaces, bool)> {
    let (namespaces, child) = start(program, args, &[], None);
    let child = child?;
    drop(child.stdin);
    drop(child.stdout);
    let status = sys::wait_child(std::os::fd::AsFd::as_fd(&child.pidfd), true)?;
    Ok((namespaces, status == Some(0)))
}

impl BoundCommand {
    /// Prepares one launch (step 2 of the module documentation) without
    /// starting anything. Every call makes fresh descriptors. The spec has
    /// no cgroup runner (spawn adds it), so a plan with `require_cgroup_v2`
    /// refuses: it must never be started outside its cgroup.
    pub fn launch_spec(&self) -> Result<LaunchSpec, SpawnError> {
        if self.plan.require_cgroup_v2() {
            return Err(SpawnError::Uncgrouped);
        }
        self.uncgrouped_spec()
    }

    fn uncgrouped_spec(&self) -> Result<LaunchSpec, SpawnError> {
        let mut fresh: Vec<Option<OwnedFd>> = Vec::with_capacity(self.pins.len());
        for p in &self.pins {
            let fd = p.duplicate().map_err(|source| SpawnError::Duplicate {
                path: PathBuf::from(p.pin().host_path.to_string()),
                source,
            })?;
            fresh.push(Some(fd));
        }
        let seccomp = match (seccomp_slot(&self.plan), self.plan.seccomp()) {
            // A plan's program is never empty (a `LaunchPlan` invariant).
            (Some(slot), Some(plan)) => Some((
                slot,
                sys::sealed_memfd("splash-seccomp", &plan.program).map_err(SpawnError::Seccomp)?,
            )),
            _ => None,
        };

        let device_directory = self.devices.prepare()?;

        let mut missing = None;
        let mut render = |slot: Slot| -> String {
            let fd = match slot {
                Slot::Device(node) => return devices::source(node, device_directory.as_ref()),
                // Filled by the learning launch's preparation, or refused
                // after the preparations ran.
                Slot::LearnListener => return crate::launch_spec::LISTENER_PLACEHOLDER.to_owned(),
                Slot::Pin(p) => fresh.get(usize::from(p.0)).and_then(Option::as_ref),
                other => seccomp
                    .as_ref()
                    .filter(|(s, _)| *s == other)
                    .map(|(_, fd)| fd),
            };
            match fd {
                Some(fd) => fd.as_raw_fd().to_string(),
                None => {
                    missing.get_or_insert(slot);
                    String::from("-1")
                }
            }
        };
        // The launcher's own supervision channel, ahead of the plan's
        // options: Bubblewrap reports the sandbox's pid 1 on it.
        let (init_report, init_write) = sys::pipe().map_err(SpawnError::Supervision)?;
        let mut args = vec!["--info-fd".to_owned(), init_write.as_raw_fd().to_string()];
        args.extend(self.plan.bwrap_arguments(&mut render));
        if let Some(slot) = missing {
            return Err(SpawnError::UnpreparedSlot(slot));
        }

        let mut keep_open = Vec::new();
        let program = match self.bwrap_launch {
            BubblewrapLaunch::Path => self.bwrap_canonical.clone(),
            BubblewrapLaunch::Pinned(slot) => {
                // The Bubblewrap descriptor is not inherited: it only has to
                // exist until the exec.
                let fd = fresh
                    .get_mut(usize::from(slot.0))
                    .and_then(Option::take)
                    .ok_or(SpawnError::UnpreparedSlot(Slot::Pin(slot)))?;
                let path = proc_fd_path(&fd);
                keep_open.push(fd);
                path
            }
        };
        let mut inherit: Vec<OwnedFd> = fresh.into_iter().flatten().collect();
        if let Some((_, fd)) = seccomp {
            inherit.push(fd);
        }
        inherit.push(init_write);
        Ok(LaunchSpec {
            program,
            shown: self.plan.bwrap().to_string(),
            args,
            inherit,
            keep_open,
            devices: device_directory,
            init_report: Some(init_report),
        })
    }

    /// The launch itself, which only [`BoundCommand::spawn_watched`] calls:
    /// the watchdog takes the worker over before anything is returned.
    fn spawn_unwatched(
        &self,
        bootstrap: &PrivatePipeWorkerBootstrap,
    ) -> Result<SpawnedWorker, SpawnError> {
        let manifest = self.plan.session_id().ok_or(SpawnError::NoSession)?;
        if bootstrap.session_id() != manifest {
            return Err(SpawnError::SessionMismatch {
                bootstrap: bootstrap.session_id().clone(),
                manifest: manifest.clone(),
            });
        }
        if (self.plan.require_cgroup_v2() || self.plan.cgroup().is_some()) && self.cgroup.is_none()
        {
            return Err(SpawnError::Uncgrouped);
        }
        let mut spec = self.uncgrouped_spec()?;
        for step in &self.preparations {
            step.wrap(&mut spec)
                .map_err(|source| SpawnError::Preparation {
                    step: step.name().to_owned(),
                    source,
                })?;
        }
        if spec
            .args
            .iter()
            .any(|a| a == crate::launch_spec::LISTENER_PLACEHOLDER)
        {
            return Err(SpawnError::UnpreparedSlot(Slot::LearnListener));
        }
        let identity = self.identity.for_launch().map_err(SpawnError::Identity)?;
        let ids = identity.as_ref().map(|i| (i.uid, i.gid));
        // The cgroup runner wraps last, so it is the first program to run;
        // it joins as root and then switches to the identity.
        let mut cgroup = match &self.cgroup {
            Some(boundary) => Some(boundary.wrap(&mut spec, ids).map_err(SpawnError::Cgroup)?),
            None => None,
        };
        let child_ids = if cgroup.is_some() { None } else { ids };
        let devices = spec.devices.take();
        let mut init = spec
            .init_report
            .take()
            .map(SandboxInit::new)
            .ok_or_else(|| {
                SpawnError::Supervision(io::Error::other("the report pipe was already taken"))
            })?;
        let inherited = spec.inherited();
        let started = Instant::now();
        let (namespaces, spawned) = start(&spec.program, &spec.args, &inherited, child_ids);
        // The child has its copies (or never started): close the parent's.
        let shown = spec.shown.clone();
        drop(spec);
        let child = match spawned {
            Ok(child) => child,
            Err(source) => {
                if let Some(cg) = cgroup.as_mut() {
                    cg.kill_and_remove().map_err(SpawnError::Cgroup)?;
                }
                return Err(SpawnError::Exec {
                    program: PathBuf::from(shown),
                    source,
                });
            }
        };
        if namespaces != LaunchNamespaces::Host {
            init.launched_in_own_namespace(child.pid);
        }
        let process = WorkerProcess::new(child.pid, child.pidfd);
        let mut stdin = ChildStdin::from(child.stdin);
        let stdout = ChildStdout::from(child.stdout);
        // From here every stop goes through `WorkerLifecycle::terminate`.
        let mut lifecycle = WorkerLifecycle::new(process, cgroup, devices, init);
        lifecycle.hold_identity(identity.and_then(|i| i.lease));
        if let Some(boundary) = self.cgroup.as_ref() {
            lifecycle
                .await_cgroup_join(boundary.join_timeout())
                .map_err(SpawnError::Cgroup)?;
        }
        if let Err(source) = bootstrap.write_to(&mut stdin).and_then(|()| stdin.flush()) {
            let status = lifecycle
                .terminate()
                .map_or_else(Stopped::NotReaped, Stopped::Reaped);
            return Err(SpawnError::Bootstrap { status, source });
        }
        // The worker cannot answer before Bubblewrap made the sandbox, so
        // waiting for its report here costs the launch nothing.
        lifecycle
            .hold_sandbox_init()
            .map_err(SpawnError::SandboxInit)?;
        if lifecycle.sandbox_unmade() {
            return Err(SpawnError::Unmade(lifecycle.startup_failure()));
        }
        Ok(SpawnedWorker {
            lifecycle,
            stdin,
            stdout,
            started,
        })
    }
}

impl BoundCommand {
    /// Launches the worker, delivers `bootstrap`, and hands it to a
    /// [`Watchdog`] enforcing the tighter of `host` and the plan's
    /// `watchdog` block before either pipe is returned.
    pub fn spawn_watched(
        &self,
        bootstrap: &PrivatePipeWorkerBootstrap,
        host: Deadlines,
    ) -> Result<(Watchdog, ChildStdin, StopAwareStdout), SpawnError> {
        let deadlines = Deadlines::for_plan(&self.plan, host);
        deadlines.validate().map_err(SpawnError::Deadline)?;
        let worker = self.spawn_unwatched(bootstrap)?;
        Watchdog::watch(worker, deadlines).map_err(SpawnError::Watchdog)
    }
}
