//! The host wall-clock watchdog of one worker.
//!
//! [`BoundCommand::spawn_watched`] launches the worker and, before it hands
//! out either pipe, moves the [`WorkerLifecycle`] into a [`Watchdog`] whose
//! thread enforces two deadlines (both trusted host configuration, see
//! [`Deadlines`]; with neither, no thread is started, since a host stop
//! runs in the thread that asks for it):
//!
//! - the **session deadline**, measured from the instant taken just before
//!   the Bubblewrap process was created, active while the worker is idle or
//!   serving a call;
//! - the **call deadline**, armed by the session before each `invoke` is
//!   written ([`Watchdog::arm_call`]) and settled when the call's last answer
//!   has been read ([`Watchdog::settle_call`]).
//!
//! When a deadline passes, or a trusted host calls [`StopHandle::stop`], the
//! reason is recorded first (under the state lock: "termination won") and the
//! worker is force-stopped and reaped through [`WorkerLifecycle::terminate`],
//! the one function that stops the sandbox. The caller may still be blocked
//! reading the worker's stdout: the pipe reaches end of input when the
//! sandbox dies, and the session reports the outcome as indeterminate.
//!
//! A force-stop is not cancellation: nothing is written to the worker and
//! nothing establishes whether an effect began or completed.

use std::io;
use std::process::{ChildStdin, ChildStdout};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use splash_protocol::PrivatePipeWorkerBootstrap;
use splashpol::plan::LaunchPlan;

use crate::bind::BoundCommand;
use crate::lifecycle::{WorkerLifecycle, WorkerStatus};
use crate::spawn::{SpawnError, SpawnedWorker};

/// The deadlines of one session. `None` means no deadline of that kind.
///
/// The effective deadlines of a launch are the tighter of the host's and
/// the policy's `watchdog` block ([`Deadlines::for_plan`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// Wall-clock bound on the whole worker, from process creation.
    pub session: Option<Duration>,
    /// Wall-clock bound on each call, from just before `invoke` is written.
    pub call: Option<Duration>,
}

impl Deadlines {
    /// No deadlines (a policy's `watchdog` block still applies).
    pub fn none() -> Self {
        Self::default()
    }

    /// A session deadline.
    pub fn session(limit: Duration) -> Self {
        Self {
            session: Some(limit),
            call: None,
        }
    }

    /// Adds a per-call deadline.
    pub fn with_call(mut self, limit: Duration) -> Self {
        self.call = Some(limit);
        self
    }

    /// The tighter of `host` and the plan's `watchdog` block, per kind.
    pub fn for_plan(plan: &LaunchPlan, host: Deadlines) -> Self {
        let tighter = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let (session, call) = match plan.watchdog() {
            Some(w) => (
                Some(Duration::from_millis(w.session_deadline_ms)),
                w.call_deadline_ms.map(Duration::from_millis),
            ),
            None => (None, None),
        };
        Self {
            session: tighter(host.session, session),
            call: tighter(host.call, call),
        }
    }
}

/// Why the watchdog force-stopped the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The session deadline passed.
    SessionDeadline,
    /// The deadline of the call in flight passed.
    CallDeadline,
    /// A trusted host asked for the stop ([`StopHandle::stop`]).
    Stopped,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::SessionDeadline => "the session deadline passed",
            Self::CallDeadline => "the call deadline passed",
            Self::Stopped => "the host stopped the worker",
        })
    }
}

#[derive(Debug, Default)]
struct State {
    session_deadline: Option<Instant>,
    call_deadline: Option<Instant>,
    /// Set before the kill: termination won.
    fired: Option<StopReason>,
    shutdown: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    lifecycle: Mutex<WorkerLifecycle>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Records `reason` (the first reason wins), then stops and reaps the
    /// sandbox through [`WorkerLifecycle::terminate`].
    fn force_stop(&self, reason: StopReason) -> io::Result<WorkerStatus> {
        {
            let mut state = lock(&self.state);
            state.fired.get_or_insert(reason);
            self.wake.notify_all();
        }
        lock(&self.lifecycle).terminate()
    }

    fn run(self: Arc<Self>) {
        let mut state = lock(&self.state);
        loop {
            if state.shutdown || state.fired.is_some() {
                return;
            }
            let next = [
                (state.session_deadline, StopReason::SessionDeadline),
                (state.call_deadline, StopReason::CallDeadline),
            ]
            .into_iter()
            .filter_map(|(at, why)| at.map(|at| (at, why)))
            .min_by_key(|(at, _)| *at);
            match next {
                None => {
                    state = self
                        .wake
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Some((at, why)) => {
                    let now = Instant::now();
                    if now >= at {
                        state.fired = Some(why);
                        drop(state);
                        // The status is kept by the lifecycle; a failure to
                        // reap is seen by the next status query.
                        let _ = lock(&self.lifecycle).terminate();
                        return;
                    }
                    state = self
                        .wake
                        .wait_timeout(state, at - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }
}

/// The watchdog of one launched worker: owns its lifecycle and enforces the
/// deadlines. Dropping it stops and reaps the worker (if it has not exited)
/// and joins the watchdog thread, if one was started.
#[derive(Debug)]
pub struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    call: Option<Duration>,
    pid: u32,
    /// Readable once Bubblewrap exits, so [`Watchdog::wait_exit`] wakes on
    /// the exit instead of polling; `None` if duplicating it failed.
    exited: Option<std::os::fd::OwnedFd>,
}

/// A trusted host's handle to force-stop a watched worker from any thread.
///
/// It does not keep the worker alive: after the session is dropped,
/// [`StopHandle::stop`] does nothing.
#[derive(Debug, Clone)]
pub struct StopHandle {
    shared: Weak<Shared>,
}

impl StopHandle {
    /// Force-stops and reaps the worker (the same operation as a deadline),
    /// unblocking a caller blocked on its pipes. Returns the final status,
    /// or `None` when the session is already gone.
    pub fn stop(&self) -> Option<io::Result<WorkerStatus>> {
        self.shared
            .upgrade()
            .map(|s| s.force_stop(StopReason::Stopped))
    }
}

impl Watchdog {
    /// Takes over a spawned worker and arms the session deadline, measured
    /// from [`SpawnedWorker::started`]. Returns the watchdog and the pipes.
    pub fn watch(
        worker: SpawnedWorker,
        deadlines: Deadlines,
    ) -> io::Result<(Self, ChildStdin, ChildStdout)> {
        let SpawnedWorker {
            lifecycle,
            stdin,
            stdout,
            started,
        } = worker;
        let pid = lifecycle.pid();
        // The pidfd the launch made with the process, so it names that
        // process and no other.
        let exited = lifecycle.exit_notifier().ok();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                session_deadline: deadlines.session.map(|d| started + d),
                ..State::default()
            }),
            wake: Condvar::new(),
            lifecycle: Mutex::new(lifecycle),
        });
        // The thread only enforces deadlines: without any, a stop is the
        // caller's own `force_stop` (through `StopHandle` or `stop`), so no
        // thread is started.
        let thread = if deadlines.session.is_none() && deadlines.call.is_none() {
            None
        } else {
            let runner = Arc::clone(&shared);
            let thread = std::thread::Builder::new()
                .name("splash-watchdog".into())
                .spawn(move || runner.run());
            match thread {
                Ok(t) => Some(t),
                Err(e) => {
                    // Without its watchdog the worker must not run.
                    let _ = shared.force_stop(StopReason::Stopped);
                    return Err(e);
                }
            }
        };
        Ok((
            Self {
                shared,
                thread,
                call: deadlines.call,
                pid,
                exited,
            },
            stdin,
            stdout,
        ))
    }

    /// The host pid of the Bubblewrap process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// A handle that force-stops the worker from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Force-stops and reaps the worker now.
    pub fn stop(&self) -> io::Result<WorkerStatus> {
        self.shared.force_stop(StopReason::Stopped)
    }

    /// Tears the sandbox down without recording a stop, once the worker has
    /// exited or the caller is done with it: [`WorkerLifecycle::terminate`]
    /// (with a cgroup, `cgroup.kill` for anything the worker left running,
    /// then the removal). A worker that already exited keeps its status; a
    /// failed kill or removal is the error (a containment failure).
    pub fn release(&self) -> io::Result<WorkerStatus> {
        lock(&self.shared.lifecycle).terminate()
    }

    /// Removes the launch's private device nodes now; see
    /// [`WorkerLifecycle::release_devices`].
    pub(crate) fn release_devices(&self) {
        lock(&self.shared.lifecycle).release_devices();
    }

    /// Why the worker was force-stopped, if it was.
    pub fn fired(&self) -> Option<StopReason> {
        lock(&self.shared.state).fired
    }

    /// Arms the call deadline (if one is configured) before a call is sent.
    /// Fails when termination already won.
    pub fn arm_call(&self) -> Result<(), StopReason> {
        let mut state = lock(&self.shared.state);
        if let Some(why) = state.fired {
            return Err(why);
        }
        state.call_deadline = self.call.map(|d| Instant::now() + d);
        self.shared.wake.notify_all();
        Ok(())
    }

    /// Checks, atomically with the watchdog, that termination did not win;
    /// when `finished`, also disarms the call deadline. An answer read from
    /// the worker may be accepted only after this returns `Ok`.
    pub fn settle_call(&self, finished: bool) -> Result<(), StopReason> {
        let mut state = lock(&self.shared.state);
        if let Some(why) = state.fired {
            return Err(why);
        }
        if finished {
            state.call_deadline = None;
        }
        Ok(())
    }

    /// The worker's status without blocking.
    pub fn try_status(&self) -> io::Result<WorkerStatus> {
        lock(&self.shared.lifecycle).try_status()
    }

    /// Waits at most `timeout` for the worker to exit on its own (the
    /// deadlines stay in force meanwhile); `Running` when it did not.
    pub fn wait_exit(&self, timeout: Duration) -> io::Result<WorkerStatus> {
        let until = Instant::now() + timeout;
        // Without a pidfd: a worker that was just closed usually exits
        // within a millisecond, so poll quickly first, then back off to 2 ms.
        let mut pause = Duration::from_micros(50);
        loop {
            let status = self.try_status()?;
            let now = Instant::now();
            if status != WorkerStatus::Running || now >= until {
                return Ok(status);
            }
            match &self.exited {
                // Wakes on the exit itself: a pidfd is readable once the
                // process exited, whether or not it was reaped yet.
                Some(fd) => {
                    let left =
                        (until - now).clamp(Duration::from_millis(1), Duration::from_millis(50));
                    crate::sys::wait_readable(std::os::fd::AsFd::as_fd(fd), left)?;
                }
                None => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(2));
                }
            }
        }
    }

    /// Explains a session that could not start; see
    /// [`WorkerLifecycle::startup_failure`].
    pub fn startup_failure(&self) -> crate::LaunchFailure {
        lock(&self.shared.lifecycle).startup_failure()
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        {
            let mut state = lock(&self.shared.state);
            state.shutdown = true;
            self.shared.wake.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // A worker that exited keeps its status; one still running is
        // stopped and reaped, even while a `StopHandle` is alive.
        let _ = lock(&self.shared.lifecycle).terminate();
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
    ) -> Result<(Watchdog, ChildStdin, ChildStdout), SpawnError> {
        let deadlines = Deadlines::for_plan(&self.plan, host);
        let worker = self.spawn_unwatched(bootstrap)?;
        Watchdog::watch(worker, deadlines).map_err(SpawnError::Watchdog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tighter_deadline_of_host_and_policy_wins() {
        let path = format!(
            "{}/../../policies/cgroup-limits.splashpol",
            env!("CARGO_MANIFEST_DIR")
        );
        let source = std::fs::read_to_string(path).expect("policy");
        let policy = splashpol::check_source("p", &source)
            .policy
            .expect("valid policy");
        let activation = splashpol::activate::activate(&policy, None).expect("activate");
        let plan =
            splashpol::lower::lower(&policy, &activation, splashpol::plan::Arch::X86_64, "t")
                .expect("lower");
        // The policy says 300 s per session and 30 s per call.
        let s = Duration::from_secs;
        assert_eq!(
            Deadlines::for_plan(&plan, Deadlines::none()),
            Deadlines::session(s(300)).with_call(s(30))
        );
        assert_eq!(
            Deadlines::for_plan(&plan, Deadlines::session(s(10)).with_call(s(60))),
            Deadlines::session(s(10)).with_call(s(30))
        );
        let mut bare = plan.into_raw();
        bare.watchdog = None;
        let bare = splashpol::plan::LaunchPlan::try_from(bare).expect("valid plan");
        assert_eq!(
            Deadlines::for_plan(&bare, Deadlines::none().with_call(s(5))),
            Deadlines::none().with_call(s(5))
        );
    }
}
