//! The host wall-clock watchdog of one worker.
//!
//! [`BoundCommand::spawn_watched`](crate::BoundCommand::spawn_watched) launches the worker and, before it hands
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
//! reading the worker's stdout: the session reads it through a
//! [`StopAwareStdout`], which returns an error as soon as the stop is
//! recorded, whoever still holds the pipe's other end, and the session
//! reports the outcome as indeterminate.
//!
//! A force-stop is not cancellation: nothing is written to the worker and
//! nothing establishes whether an effect began or completed.

use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{ChildStdin, ChildStdout};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use splashpol::plan::LaunchPlan;

use crate::lifecycle::{SpawnedWorker, WorkerLifecycle};
use crate::status::WorkerStatus;

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

    /// The longest deadline accepted: ten years. Anything longer is refused
    /// rather than risk `Instant` arithmetic overflowing after the worker
    /// started.
    pub const MAX: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

    /// Refuses a zero deadline (it would stop every worker at once) and one
    /// above [`Deadlines::MAX`]. [`BoundCommand::spawn_watched`](crate::BoundCommand::spawn_watched) checks the
    /// effective deadlines this way before anything is started.
    pub fn validate(&self) -> Result<(), DeadlineError> {
        for (kind, limit) in [("session", self.session), ("call", self.call)] {
            match limit {
                Some(d) if d.is_zero() => return Err(DeadlineError::Zero { kind }),
                Some(d) if d > Self::MAX => {
                    return Err(DeadlineError::TooLong {
                        kind,
                        requested: d,
                        max: Self::MAX,
                    });
                }
                _ => {}
            }
        }
        Ok(())
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

/// A deadline the watchdog refuses to enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeadlineError {
    /// A zero deadline.
    #[error("the {kind} deadline is zero")]
    Zero {
        /// `session` or `call`.
        kind: &'static str,
    },
    /// A deadline above [`Deadlines::MAX`].
    #[error("the {kind} deadline of {requested:?} is longer than the longest accepted, {max:?}")]
    TooLong {
        /// `session` or `call`.
        kind: &'static str,
        /// What was asked for.
        requested: Duration,
        /// [`Deadlines::MAX`].
        max: Duration,
    },
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
    /// The worker was sent `close_session` and did not exit within the
    /// close's grace period.
    CloseGrace,
    /// The watchdog's own thread failed (a panic): without it no deadline
    /// holds, so the worker was stopped.
    WatchdogFailed,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::SessionDeadline => "the session deadline passed",
            Self::CallDeadline => "the call deadline passed",
            Self::Stopped => "the host stopped the worker",
            Self::CloseGrace => "the worker did not exit within the close grace period",
            Self::WatchdogFailed => "the watchdog failed",
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
    /// Makes the watchdog's thread panic when it next wakes.
    #[cfg(test)]
    panic_next: bool,
}

impl State {
    /// The deadline that has passed by `now`, the earlier one first.
    fn passed(&self, now: Instant) -> Option<StopReason> {
        [
            (self.session_deadline, StopReason::SessionDeadline),
            (self.call_deadline, StopReason::CallDeadline),
        ]
        .into_iter()
        .filter_map(|(at, why)| at.filter(|at| *at <= now).map(|at| (at, why)))
        .min_by_key(|(at, _)| *at)
        .map(|(_, why)| why)
    }

    /// Whether termination has won by `now`: a stop already recorded, or a
    /// deadline that has passed, which is recorded here whether or not the
    /// watchdog's thread has woken for it yet. The clock decides, never
    /// the thread's scheduling. The error says why, and whether this call
    /// recorded it.
    fn check(&mut self, now: Instant) -> Result<(), (StopReason, bool)> {
        if let Some(why) = self.fired {
            return Err((why, false));
        }
        if let Some(why) = self.passed(now) {
            self.fired = Some(why);
            return Err((why, true));
        }
        Ok(())
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    lifecycle: Mutex<WorkerLifecycle>,
    /// An eventfd made readable once a stop is recorded: it releases a
    /// reader blocked on the worker's stdout ([`StopAwareStdout`]).
    stopped: Arc<OwnedFd>,
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
        self.release_reader();
        lock(&self.lifecycle).terminate()
    }

    /// Wakes a reader blocked on the worker's stdout. The read that wakes
    /// then waits for the stop itself (the lifecycle lock) before it reports.
    fn release_reader(&self) {
        // An eventfd write fails only when the counter would overflow,
        // which one write per stop cannot reach.
        let _ = crate::sys::eventfd_signal(self.stopped.as_fd());
    }

    fn run(self: &Arc<Self>) {
        let mut state = lock(&self.state);
        loop {
            #[cfg(test)]
            if state.panic_next {
                panic!("injected watchdog failure");
            }
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
                        self.release_reader();
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

/// The worker's stdout as a session reads it: each read waits for data or
/// for a stop of the worker, and after a stop fails with
/// [`io::ErrorKind::ConnectionAborted`], so a caller blocked on the pipe is
/// released when the watchdog fires, not when the last holder of the
/// pipe's write end closes it.
#[derive(Debug)]
pub struct StopAwareStdout {
    stdout: ChildStdout,
    stopped: Arc<OwnedFd>,
}

impl StopAwareStdout {
    /// Waits at most `timeout` for data (or end of input) on the pipe, or a
    /// stop; `true` when a read would not block.
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        Ok(
            crate::sys::wait_either(self.stdout.as_fd(), self.stopped.as_fd(), Some(timeout))?
                .is_some(),
        )
    }
}

impl StopAwareStdout {
    /// The pipe itself, for a reader that waits for the stop on its own.
    #[cfg_attr(not(feature = "tokio"), expect(dead_code))]
    pub(crate) fn into_pipe(self) -> ChildStdout {
        self.stdout
    }
}

impl AsFd for StopAwareStdout {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.stdout.as_fd()
    }
}

impl Read for StopAwareStdout {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match crate::sys::wait_either(self.stdout.as_fd(), self.stopped.as_fd(), None)? {
                Some(0) => return self.stdout.read(buf),
                Some(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the worker was force-stopped",
                    ));
                }
                None => {}
            }
        }
    }
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

    /// Why the worker was force-stopped, if it was (`None` also once the
    /// session is gone). Never blocks.
    pub fn fired(&self) -> Option<StopReason> {
        self.shared.upgrade().and_then(|s| lock(&s.state).fired)
    }
}

impl Watchdog {
    /// Takes over a spawned worker and arms the session deadline, measured
    /// from [`SpawnedWorker::started`]. Returns the watchdog and the pipes.
    pub(crate) fn watch(
        worker: SpawnedWorker,
        deadlines: Deadlines,
    ) -> io::Result<(Self, ChildStdin, StopAwareStdout)> {
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
        let stopped = Arc::new(crate::sys::eventfd()?);
        let stdout = StopAwareStdout {
            stdout,
            stopped: Arc::clone(&stopped),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                session_deadline: deadlines.session.and_then(|d| started.checked_add(d)),
                ..State::default()
            }),
            wake: Condvar::new(),
            lifecycle: Mutex::new(lifecycle),
            stopped,
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
                .spawn(move || {
                    let ran =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.run()));
                    if ran.is_err() {
                        // No deadline holds without this thread: the worker
                        // must not outlive it.
                        let _ = runner.force_stop(StopReason::WatchdogFailed);
                    }
                });
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

    /// Force-stops and reaps the worker now, recording `reason` unless an
    /// earlier stop already recorded its own.
    pub fn stop_for(&self, reason: StopReason) -> io::Result<WorkerStatus> {
        self.shared.force_stop(reason)
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

    /// Readable once a stop was recorded.
    pub(crate) fn stopped_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.shared.stopped.as_fd()
    }

    /// Readable once the launched process exited (its pidfd), if there is
    /// one.
    #[cfg_attr(not(feature = "tokio"), expect(dead_code))]
    pub(crate) fn exit_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.exited.as_ref().map(std::os::fd::AsFd::as_fd)
    }

    /// Why the worker was force-stopped, if it was.
    pub fn fired(&self) -> Option<StopReason> {
        lock(&self.shared.state).fired
    }

    /// Arms the call deadline (if one is configured) before a call is sent.
    /// Fails when termination already won.
    pub fn arm_call(&self) -> Result<(), StopReason> {
        let mut state = lock(&self.shared.state);
        let now = Instant::now();
        self.checked(&mut state, now)?;
        // Validated deadlines (at most `Deadlines::MAX`) cannot overflow.
        state.call_deadline = self.call.and_then(|d| now.checked_add(d));
        self.shared.wake.notify_all();
        Ok(())
    }

    /// [`State::check`] at `now`; a deadline it finds passed also releases
    /// a blocked reader (the caller then stops the worker).
    fn checked(&self, state: &mut State, now: Instant) -> Result<(), StopReason> {
        state.check(now).map_err(|(why, recorded)| {
            if recorded {
                self.shared.wake.notify_all();
                self.shared.release_reader();
            }
            why
        })
    }

    /// Checks, atomically with the watchdog, that termination did not win;
    /// when `finished`, also disarms the call deadline. An answer read from
    /// the worker may be accepted only after this returns `Ok`.
    /// A deadline that has passed by the clock counts even when the
    /// watchdog's thread has not woken for it yet.
    pub fn settle_call(&self, finished: bool) -> Result<(), StopReason> {
        let mut state = lock(&self.shared.state);
        self.checked(&mut state, Instant::now())?;
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

    /// The host pid of the sandbox's pid 1 (the worker), once Bubblewrap
    /// has reported it and while it runs.
    pub fn sandbox_pid(&self) -> Option<u32> {
        lock(&self.shared.lifecycle).sandbox_pid()
    }

    /// Whether a killed host takes the sandbox with it; see
    /// [`WorkerLifecycle::sandbox_dies_with_host`].
    pub fn sandbox_dies_with_host(&self) -> bool {
        lock(&self.shared.lifecycle).sandbox_dies_with_host()
    }

    /// The uid leased for this launch's dynamic identity, while it is held.
    pub fn leased_uid(&self) -> Option<u32> {
        lock(&self.shared.lifecycle).leased_uid()
    }

    /// Runs `read` with the worker's child cgroup (for `memory.events`,
    /// `cpu.stat`, ...), when the plan has a cgroup-v2 boundary. The
    /// lifecycle is held meanwhile, so a stop (a deadline's too) waits for
    /// `read` to return: keep it to reading or writing a control file.
    pub fn with_cgroup<R>(&self, read: impl FnOnce(&crate::WorkerCgroup) -> R) -> Option<R> {
        lock(&self.shared.lifecycle).cgroup().map(read)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The race of a result read just after its deadline, decided by the
    /// clock alone: with a deadline at `t + 100 ms` and the watchdog's
    /// thread never having run, an answer settled at `t + 100 ms` is refused
    /// and the deadline recorded; one settled a millisecond earlier is
    /// accepted (the control). No sleep, no thread.
    #[test]
    fn a_deadline_that_passed_by_the_clock_wins_without_the_watchdog_thread() {
        let t = Instant::now();
        let armed = || State {
            call_deadline: Some(t + Duration::from_millis(100)),
            ..State::default()
        };
        let mut early = armed();
        assert_eq!(early.check(t + Duration::from_millis(99)), Ok(()));
        assert_eq!(early.fired, None);
        let mut late = armed();
        assert_eq!(
            late.check(t + Duration::from_millis(100)),
            Err((StopReason::CallDeadline, true))
        );
        assert_eq!(late.fired, Some(StopReason::CallDeadline));
        // Recorded once: the next check reports it without recording again.
        assert_eq!(
            late.check(t + Duration::from_millis(200)),
            Err((StopReason::CallDeadline, false))
        );
        // Both passed: the earlier deadline is the reason.
        let mut both = State {
            session_deadline: Some(t + Duration::from_millis(50)),
            ..armed()
        };
        assert_eq!(
            both.check(t + Duration::from_secs(1)),
            Err((StopReason::SessionDeadline, true))
        );
    }

    #[test]
    fn zero_and_overflowing_deadlines_are_refused() {
        assert_eq!(
            Deadlines::session(Duration::ZERO).validate(),
            Err(DeadlineError::Zero { kind: "session" })
        );
        assert_eq!(
            Deadlines::none().with_call(Duration::ZERO).validate(),
            Err(DeadlineError::Zero { kind: "call" })
        );
        assert!(matches!(
            Deadlines::session(Duration::MAX).validate(),
            Err(DeadlineError::TooLong {
                kind: "session",
                ..
            })
        ));
        assert!(matches!(
            Deadlines::none()
                .with_call(Duration::from_secs(u64::MAX))
                .validate(),
            Err(DeadlineError::TooLong { kind: "call", .. })
        ));
        // Controls: no deadline, and the longest one, are fine.
        assert_eq!(Deadlines::none().validate(), Ok(()));
        assert_eq!(
            Deadlines::session(Deadlines::MAX)
                .with_call(Duration::from_millis(1))
                .validate(),
            Ok(())
        );
        assert!(Instant::now().checked_add(Deadlines::MAX).is_some());
    }

    /// A real child (`sleep 60`) under a watchdog whose thread panics: the
    /// child is killed and reaped, with the reason recorded. Control: the
    /// same watchdog without the injected panic leaves it running.
    #[test]
    fn a_panic_in_the_watchdog_thread_stops_the_worker() {
        let sleeping = || {
            let child = crate::sys::spawn_child(
                std::path::Path::new("/bin/sleep"),
                &["60".to_owned()],
                &[],
            )
            .expect("sleep");
            let (report, write) = crate::sys::pipe().expect("pipe");
            drop(write);
            let lifecycle = WorkerLifecycle::new(
                crate::lifecycle::WorkerProcess::new(child.pid, child.pidfd),
                None,
                None,
                crate::sandbox_init::SandboxInit::new(report),
            );
            SpawnedWorker {
                lifecycle,
                stdin: ChildStdin::from(child.stdin),
                stdout: ChildStdout::from(child.stdout),
                started: Instant::now(),
            }
        };
        let deadlines = Deadlines::session(Duration::from_secs(600));
        for inject in [false, true] {
            let (watchdog, _stdin, _stdout) =
                Watchdog::watch(sleeping(), deadlines).expect("watch");
            {
                let mut state = lock(&watchdog.shared.state);
                state.panic_next = inject;
                watchdog.shared.wake.notify_all();
            }
            let status = watchdog.wait_exit(Duration::from_secs(2)).expect("status");
            if inject {
                assert_eq!(status, WorkerStatus::Killed(libc::SIGKILL));
                assert_eq!(watchdog.fired(), Some(StopReason::WatchdogFailed));
            } else {
                assert_eq!(status, WorkerStatus::Running, "control");
                assert_eq!(watchdog.fired(), None);
            }
        }
    }

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
        let mut bare = serde_json::to_value(&plan).expect("the plan's JSON form");
        bare["watchdog"] = serde_json::Value::Null;
        let bare: splashpol::plan::LaunchPlan = serde_json::from_value(bare).expect("valid plan");
        assert_eq!(
            Deadlines::for_plan(&bare, Deadlines::none().with_call(s(5))),
            Deadlines::none().with_call(s(5))
        );
    }
}
