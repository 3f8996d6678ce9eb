//! The lifecycle of one launched Bubblewrap process.
//!
//! Bubblewrap runs with `--unshare-pid --as-pid-1`: the worker is the pid 1
//! of the sandbox's pid namespace, and a worker can clear the parent-death
//! signal `--die-with-parent` gives it, so killing Bubblewrap alone would not
//! end the sandbox. The lifecycle therefore holds that pid 1 by a pidfd
//! ([`crate::sandbox_init`]) and [`WorkerLifecycle::terminate`] kills it,
//! which ends every process of the namespace, then kills and reaps
//! Bubblewrap, and returns only once pid 1 has exited. A
//! [`WorkerLifecycle`] always reaps what it started: [`Drop`] kills and
//! waits if the host did not.
//!
//! With a cgroup-v2 boundary the lifecycle also owns the worker's child
//! cgroup. [`WorkerLifecycle::terminate`] is then the one function that
//! stops the whole tree: `cgroup.kill` first (every process in the cgroup,
//! including one forked a moment before), then SIGKILL to Bubblewrap if it
//! still runs, reap, and remove the cgroup, retrying while the killed
//! processes exit. A failed kill or removal is returned as an error that
//! wraps a [`CgroupError`]: a containment failure the host must not ignore.
//! Drop does the same and can only swallow that error.
//!
//! `--die-with-parent` is bound to the *thread* that spawned Bubblewrap
//! (`PR_SET_PDEATHSIG` fires when that thread exits): spawn from a thread
//! that lives as long as the worker should.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStdin, ChildStdout, ExitStatus};
use std::time::{Duration, Instant};

use crate::cgroup::{CgroupError, REMOVE_TIMEOUT, WorkerCgroup};
use crate::devices::DeviceDirectory;
use crate::sandbox_init::{self, SandboxInit, SandboxInitError};
use crate::status::{LaunchFailure, WorkerStatus};
use crate::sys;

/// The process a launch started (Bubblewrap, or the runner in front of
/// it): a child of this process, signalled and reaped through the pidfd
/// made with it, so no call can reach another process that reused its pid.
#[derive(Debug)]
pub(crate) struct WorkerProcess {
    pid: u32,
    pidfd: OwnedFd,
    /// Its status once reaped (the pid is gone from then on).
    reaped: Option<ExitStatus>,
}

impl WorkerProcess {
    /// The child [`sys::spawn_child`] started, with its pidfd.
    pub(crate) fn new(pid: u32, pidfd: OwnedFd) -> Self {
        Self {
            pid,
            pidfd,
            reaped: None,
        }
    }

    /// Its host pid.
    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    fn wait_with(&mut self, block: bool) -> io::Result<Option<ExitStatus>> {
        if self.reaped.is_none() {
            self.reaped = sys::wait_child(self.pidfd.as_fd(), block)?.map(ExitStatus::from_raw);
        }
        Ok(self.reaped)
    }

    /// Reaps it if it has exited; `None` while it runs.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.wait_with(false)
    }

    /// Blocks until it exits and reaps it.
    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        self.wait_with(true)?
            .ok_or_else(|| io::Error::other("waitid returned without a status"))
    }

    /// A duplicate of the pidfd the process was made with: readable once
    /// it exits.
    pub(crate) fn exit_notifier(&self) -> io::Result<OwnedFd> {
        self.pidfd.try_clone()
    }

    /// SIGKILL, unless it has already been reaped.
    pub(crate) fn kill(&mut self) -> io::Result<()> {
        if self.reaped.is_some() {
            return Ok(());
        }
        sys::kill_child(self.pidfd.as_fd())
    }
}

/// Owns the Bubblewrap child process and, with a cgroup-v2 boundary, its
/// child cgroup.
#[derive(Debug)]
pub struct WorkerLifecycle {
    child: WorkerProcess,
    reaped: Option<WorkerStatus>,
    cgroup: Option<WorkerCgroup>,
    /// The launch's private device nodes: removed once the worker is
    /// reaped, or sooner by [`Self::release_devices`].
    devices: Option<DeviceDirectory>,
    /// The sandbox's pid 1.
    init: SandboxInit,
    /// The launch's dynamic identity: given back once the worker is reaped.
    identity: Option<crate::identity::IdentityLease>,
}

impl WorkerLifecycle {
    /// A lifecycle for `child`, whose sandbox's pid 1 Bubblewrap reports on
    /// `init`, owning `cgroup` (which `child` is joining) if there is one.
    pub(crate) fn new(
        child: WorkerProcess,
        cgroup: Option<WorkerCgroup>,
        devices: Option<DeviceDirectory>,
        init: SandboxInit,
    ) -> Self {
        Self {
            child,
            reaped: None,
            cgroup,
            devices,
            init,
            identity: None,
        }
    }

    /// Keeps the launch's dynamic identity lease until the worker is reaped.
    pub(crate) fn hold_identity(&mut self, lease: Option<crate::identity::IdentityLease>) {
        self.identity = lease;
    }

    /// The uid leased for this launch's dynamic identity, while it is held.
    pub fn leased_uid(&self) -> Option<u32> {
        self.identity
            .as_ref()
            .map(crate::identity::IdentityLease::uid)
    }

    /// Reads Bubblewrap's report of the sandbox's pid 1 and holds it (step
    /// 6 of spawn); on failure the sandbox is stopped and the error says why
    /// the launch cannot go on.
    pub(crate) fn hold_sandbox_init(&mut self) -> Result<(), SandboxInitError> {
        let held = self.init.read_report(sandbox_init::REPORT_TIMEOUT);
        if held.is_err() {
            let _ = self.terminate();
        }
        held
    }

    /// True when Bubblewrap ended before it made the sandbox (it closed its
    /// report without a word), so no worker ever ran.
    pub(crate) fn sandbox_unmade(&self) -> bool {
        self.init.unmade()
    }

    /// The host pid of the sandbox's pid 1 (the worker), once Bubblewrap
    /// has reported it and while it runs.
    pub fn sandbox_pid(&self) -> Option<u32> {
        self.init.pid()
    }

    /// Whether the launch is pid 1 of a pid namespace of its own, the
    /// sandbox's nested in it, so that its death with a killed host takes
    /// every process of the sandbox with it (`false` where the host could
    /// make no such namespace: `docs/runtime.md`).
    pub fn sandbox_dies_with_host(&self) -> bool {
        self.init.in_own_namespace()
    }

    fn reaped(&mut self, status: WorkerStatus) -> WorkerStatus {
        self.reaped = Some(status);
        // Nothing in the sandbox uses the nodes any more.
        self.devices = None;
        self.identity = None;
        status
    }

    /// Removes the launch's private device nodes before the worker is
    /// reaped. Only for a caller that has proof the worker started (an
    /// authenticated answer from it): Bubblewrap binds the nodes before it
    /// starts the worker, and the binds stay when the host's nodes go.
    pub(crate) fn release_devices(&mut self) {
        self.devices = None;
    }

    /// The worker's child cgroup, when the plan has a cgroup-v2 boundary
    /// (for reading `memory.events`, `cpu.stat`, ...).
    pub fn cgroup(&self) -> Option<&WorkerCgroup> {
        self.cgroup.as_ref()
    }

    /// The [`CgroupError`] inside an error returned by
    /// [`terminate`](Self::terminate), if it is a cgroup containment
    /// failure.
    pub fn containment_failure(error: &io::Error) -> Option<&CgroupError> {
        error
            .get_ref()
            .and_then(|e| e.downcast_ref::<CgroupError>())
    }

    /// The [`SandboxInitError`] inside an error returned by
    /// [`terminate`](Self::terminate): the sandbox's pid 1 could not be
    /// confirmed or did not exit.
    pub fn sandbox_init_failure(error: &io::Error) -> Option<&SandboxInitError> {
        error
            .get_ref()
            .and_then(|e| e.downcast_ref::<SandboxInitError>())
    }

    /// A descriptor that becomes readable when the process exits (a
    /// duplicate of the pidfd it was made with).
    pub(crate) fn exit_notifier(&self) -> io::Result<OwnedFd> {
        self.child.exit_notifier()
    }

    /// The host pid of the Bubblewrap process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The current status without blocking.
    pub fn try_status(&mut self) -> io::Result<WorkerStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        match self.child.try_wait()? {
            Some(status) => Ok(self.reaped(WorkerStatus::from_exit(status))),
            None => Ok(WorkerStatus::Running),
        }
    }

    /// Blocks until Bubblewrap exits and reaps it.
    pub fn wait(&mut self) -> io::Result<WorkerStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        let s = WorkerStatus::from_exit(self.child.wait()?);
        Ok(self.reaped(s))
    }

    /// Waits at most `timeout` for an exit; `Running` when it did not come.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<WorkerStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.try_status()?;
            if s != WorkerStatus::Running || Instant::now() >= deadline {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Force-stops the sandbox and reaps it: with a cgroup, `cgroup.kill`
    /// first; SIGKILL to the sandbox's pid 1 (its whole pid namespace dies
    /// with it) and to Bubblewrap if it still runs; reap Bubblewrap; wait
    /// until pid 1 has exited; then remove the cgroup. Returns the final
    /// status; a worker that had already exited keeps its own status.
    ///
    /// A failed `cgroup.kill` or removal is an error wrapping a
    /// [`CgroupError`] ([`containment_failure`](Self::containment_failure));
    /// a pid 1 that could not be confirmed or did not exit, one wrapping a
    /// [`SandboxInitError`] ([`sandbox_init_failure`](Self::sandbox_init_failure)).
    /// Both are returned after every other step has still been tried.
    /// Calling it again after success does nothing more.
    pub fn terminate(&mut self) -> io::Result<WorkerStatus> {
        let (status, contained) = self.stop();
        contained?;
        status
    }

    /// The steps of [`terminate`](Self::terminate): the final status, and
    /// the containment failure, if any (a cgroup's first).
    fn stop(&mut self) -> (io::Result<WorkerStatus>, io::Result<()>) {
        let (status, cgroup, init) = self.stop_steps();
        let contained = match (cgroup, init) {
            (Err(e), _) => Err(io::Error::other(e)),
            (Ok(()), Err(e)) => Err(io::Error::other(e)),
            (Ok(()), Ok(())) => Ok(()),
        };
        (status, contained)
    }

    fn stop_steps(
        &mut self,
    ) -> (
        io::Result<WorkerStatus>,
        Result<(), CgroupError>,
        Result<(), SandboxInitError>,
    ) {
        let live = |c: &&mut WorkerCgroup| !c.is_removed();
        let killed = match self.cgroup.as_mut().filter(live) {
            Some(cg) => cg.kill(),
            None => Ok(()),
        };
        // Bubblewrap is sent SIGKILL before pid 1, so its status is its own
        // kill's and never pid 1's death passed on as an exit status (137)
        // in the instant between the two; pid 1 is held by its pidfd, so it
        // cannot get away in that instant. A failure here is met again, and
        // reported, by the reap below.
        if matches!(self.try_status(), Ok(WorkerStatus::Running)) {
            let _ = self.child.kill();
        }
        // Pid 1, from what Bubblewrap has reported so far: a report still on
        // its way is read once Bubblewrap is dead (below).
        let early = match self.init.kill(Duration::ZERO) {
            Err(SandboxInitError::NoReport(_)) => Ok(()),
            other => other,
        };
        let status = self.stop_and_reap();
        // Bubblewrap is gone, so its end of the report pipe is closed: the
        // report is complete, or there never was a sandbox.
        let init = early
            .and_then(|()| self.init.kill(Duration::from_secs(1)))
            .and_then(|()| self.init.await_exit(sandbox_init::EXIT_TIMEOUT));
        let contained = match self.cgroup.as_mut().filter(live) {
            Some(cg) => {
                let removed = cg.remove(REMOVE_TIMEOUT);
                match killed {
                    Ok(()) => removed,
                    Err(e) => Err(e.then_cleanup(removed)),
                }
            }
            None => killed,
        };
        (status, contained, init)
    }

    /// Waits at most `timeout` for the direct child (the cgroup runner) to
    /// appear in the cgroup's `cgroup.procs`. When it does not (it is still
    /// outside, or it exited), the sandbox is stopped the way
    /// [`terminate`](Self::terminate) stops it (`cgroup.kill` for what
    /// joined, SIGKILL to the runner, reap, removal) and the error carries
    /// any failure of that cleanup. Without a cgroup there is nothing to
    /// wait for.
    pub(crate) fn await_cgroup_join(&mut self, timeout: Duration) -> Result<(), CgroupError> {
        let Some(cg) = self.cgroup.as_ref() else {
            return Ok(());
        };
        let pid = self.child.id();
        let child = &mut self.child;
        let joined = cg.await_join(pid, timeout, || {
            child.try_wait().map(|s| s.map(WorkerStatus::from_exit))
        });
        joined.map_err(|e| {
            let (_, contained, _) = self.stop_steps();
            e.then_cleanup(contained)
        })
    }

    fn stop_and_reap(&mut self) -> io::Result<WorkerStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        if self.try_status()? == WorkerStatus::Running {
            self.child.kill()?;
        }
        self.wait()
    }

    /// Explains a session that could not start: waits briefly for the
    /// Bubblewrap process and reports how it ended. Bubblewrap's diagnostics
    /// go to `/dev/null`, so the exit status is what the host can report.
    pub fn startup_failure(&mut self) -> LaunchFailure {
        match self.wait_timeout(Duration::from_secs(2)) {
            Ok(WorkerStatus::Running) => {
                let _ = self.terminate();
                LaunchFailure::NoSession
            }
            Ok(status) => LaunchFailure::Exited(status),
            Err(e) => LaunchFailure::Unknown(e),
        }
    }
}

impl Drop for WorkerLifecycle {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

/// A launched worker before its watchdog takes it over.
#[derive(Debug)]
pub(crate) struct SpawnedWorker {
    pub(crate) lifecycle: WorkerLifecycle,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    /// Taken just before the process was created: the start of the
    /// session deadline.
    pub(crate) started: Instant,
}
