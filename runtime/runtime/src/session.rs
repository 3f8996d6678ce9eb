//! An open, authenticated, watched worker session.
//!
//! A [`Session`] joins the protocol's [`HostSession`] (one authenticated
//! writer and one authenticated reader over the worker's private pipes,
//! both owned here) with the worker's [`Watchdog`]:
//!
//! - one call is in flight at a time; its deadline is armed before `invoke`
//!   is written;
//! - an answer is accepted only after the watchdog confirms, atomically,
//!   that termination did not win ([`Watchdog::settle_call`]), so a result
//!   that races a deadline or a stop is still reported as indeterminate;
//! - cooperative cancellation: [`Session::cancel`] sends an authenticated
//!   `cancel`; `acknowledged` ends the call without a result, `too_late` is
//!   accepted only after the result, and `unsupported` leaves the call (and
//!   its deadline) running;
//! - any deadline, stop, transport or protocol error poisons the session:
//!   the call's outcome is [`CallError::Indeterminate`], every later call
//!   fails with [`CallError::Poisoned`], and the host should discard the
//!   session and reconcile any durable effect in a fresh one.
//!
//! A refusal decided before anything was sent (an ungranted tool, the
//! grant's call limit or input bound) and a tool's own error result leave
//! the session usable.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::ChildStdin;
use std::time::Duration;

use serde_json::Value;
use splash_protocol::{
    CapabilityManifest, HostSession, OperationStatus, PrivatePipeWorkerBootstrap, SessionError,
    SessionKey, SessionState, Token,
};

use crate::bind::BoundCommand;
use crate::error::LaunchError;
use crate::status::WorkerStatus;
use crate::sys;
use crate::watchdog::{Deadlines, StopAwareStdout, StopHandle, StopReason, Watchdog};

/// Why the outcome of a call (or of the session) is unknown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Indeterminate {
    /// The watchdog force-stopped the worker (a deadline or a host stop).
    #[error("{0}; the worker was force-stopped and reaped")]
    ForceStopped(StopReason),
    /// The channel failed (end of input, a bad frame, a protocol violation).
    #[error("the session transport failed")]
    Transport(#[source] SessionError),
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// Refused before anything was sent; the session stays usable.
    #[error("the call was refused before it was sent")]
    Refused(#[source] SessionError),
    /// The session is poisoned now: whether the call's effect happened is
    /// unknown. `status` is the worker's status once the session knew it.
    #[error("the outcome is indeterminate and the session is poisoned ({status})")]
    Indeterminate {
        /// Why.
        #[source]
        reason: Indeterminate,
        /// The process's exit status.
        status: WorkerStatus,
    },
    /// An earlier error poisoned the session.
    #[error("the session is poisoned by an earlier error")]
    Poisoned,
    /// The worker ended, but its sandbox could not be torn down: the
    /// cgroup's `cgroup.kill` or removal failed
    /// ([`WorkerLifecycle::containment_failure`](crate::WorkerLifecycle::containment_failure)
    /// extracts the [`CgroupError`](crate::CgroupError)).
    #[error("the worker's sandbox could not be torn down")]
    Containment(#[source] io::Error),
}

impl CallError {
    /// What this error leaves of the session.
    pub fn leaves_session(&self) -> SessionState {
        match self {
            Self::Refused(_) => SessionState::Usable,
            Self::Indeterminate { .. } | Self::Poisoned | Self::Containment(_) => {
                SessionState::Poisoned
            }
        }
    }
}

/// One answer about the call in flight: the protocol's own event. Through
/// a [`Session`], `Cancelled` arrives only when termination did not win.
pub use splash_protocol::CallEvent as Event;

/// An open authenticated session with a watched worker.
#[derive(Debug)]
pub struct Session {
    core: Core<StopAwareStdout, ChildStdin>,
    /// A duplicate of the worker's stdout, only polled for readability.
    readable: OwnedFd,
}

/// A launched worker before its session is opened: the watchdog, the
/// worker's pipes and the session key its bootstrap carried.
pub(crate) struct Spawned {
    pub(crate) watchdog: Watchdog,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: StopAwareStdout,
    pub(crate) key: SessionKey,
}

/// Spawns `bound` with a fresh session key under the tighter of
/// `deadlines` and the plan's `watchdog` block. Both the blocking and the
/// asynchronous session start here.
pub(crate) fn spawn(
    bound: &BoundCommand,
    manifest: &CapabilityManifest,
    deadlines: Deadlines,
) -> Result<Spawned, LaunchError> {
    manifest.validate().map_err(LaunchError::Manifest)?;
    let key = SessionKey::generate().map_err(LaunchError::Key)?;
    let bootstrap = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
    let (watchdog, stdin, stdout) = bound
        .spawn_watched(&bootstrap, deadlines)
        .map_err(LaunchError::Spawn)?;
    Ok(Spawned {
        watchdog,
        stdin,
        stdout,
        key,
    })
}

impl Session {
    /// Spawns `bound` with a fresh session key under the tighter of
    /// `deadlines` and the plan's `watchdog` block, and opens the
    /// authenticated session with `manifest` (which must be the manifest
    /// the plan was activated with).
    pub fn open(
        bound: &BoundCommand,
        manifest: CapabilityManifest,
        deadlines: Deadlines,
    ) -> Result<Self, LaunchError> {
        let Spawned {
            watchdog,
            stdin,
            stdout,
            key,
        } = spawn(bound, &manifest, deadlines)?;
        let readable = match stdout.as_fd().try_clone_to_owned() {
            Ok(fd) => fd,
            Err(source) => {
                let _ = watchdog.stop();
                return Err(LaunchError::Descriptor(source));
            }
        };
        let host = HostSession::open(manifest, key, stdin, stdout).map_err(|source| {
            let failure = watchdog.startup_failure();
            LaunchError::Open { source, failure }
        })?;
        Ok(Self {
            core: Core::new(host, watchdog),
            readable,
        })
    }

    /// [`Session::open`] that keeps `bound` until the session is gone.
    pub fn open_owned(
        bound: BoundCommand,
        manifest: CapabilityManifest,
        deadlines: Deadlines,
    ) -> Result<Self, LaunchError> {
        let mut session = Self::open(&bound, manifest, deadlines)?;
        session.core.bound = Some(bound);
        Ok(session)
    }

    /// The manifest the session was opened with.
    pub fn manifest(&self) -> &CapabilityManifest {
        self.core.host.manifest()
    }

    /// The host pid of the Bubblewrap process.
    pub fn pid(&self) -> u32 {
        self.core.watchdog.pid()
    }

    /// A handle that force-stops the worker from any thread; a caller
    /// blocked in [`Session::call`] then gets [`CallError::Indeterminate`].
    pub fn stop_handle(&self) -> StopHandle {
        self.core.watchdog.stop_handle()
    }

    /// True once an error poisoned the session.
    pub fn is_poisoned(&self) -> bool {
        self.core.is_poisoned()
    }

    /// The request id of the call in flight.
    pub fn call_in_flight(&self) -> Option<&Token> {
        self.core.host.call_in_flight()
    }

    /// Why the watchdog force-stopped the worker (a deadline, a
    /// [`StopHandle`]), if it has: the session can then only be reaped. It
    /// never blocks, so an idle host can poll it.
    pub fn stopped(&self) -> Option<StopReason> {
        self.core.watchdog.fired()
    }

    /// Calls one granted tool and waits for its result (bounded by the
    /// deadlines).
    pub fn call(&mut self, tool: &str, input: Value) -> Result<Value, CallError> {
        self.start(tool, input)?;
        loop {
            let event = self.next_event()?;
            if let Some(done) = self.core.call_outcome(event) {
                return done;
            }
        }
    }

    /// Arms the call deadline, then sends one `invoke`; returns its request
    /// id. Collect answers with [`Session::next_event`] or
    /// [`Session::wait_event`].
    pub fn start(&mut self, tool: &str, input: Value) -> Result<Token, CallError> {
        self.core.start(tool, input)
    }

    /// Sends an authenticated `cancel` for the call in flight. The answer
    /// arrives as an [`Event`].
    pub fn cancel(&mut self, request_id: &Token) -> Result<(), CallError> {
        self.core.cancel(request_id)
    }

    /// Reads the next answer about the call in flight, blocking until one
    /// arrives or a deadline or stop ends the worker.
    pub fn next_event(&mut self) -> Result<Event, CallError> {
        self.core.next_event()
    }

    /// Like [`Session::next_event`], but returns `Ok(None)` when nothing
    /// arrived within `timeout`, so one thread can interleave waiting with
    /// [`Session::cancel`]. Only the first answer of a call is waited for
    /// this way; once one has been read (an `unsupported`, or a result
    /// before `too_late`) the rest may already be buffered, so this blocks
    /// like `next_event` (still bounded by the deadlines).
    pub fn wait_event(&mut self, timeout: Duration) -> Result<Option<Event>, CallError> {
        self.core.usable()?;
        if self.core.awaits_first_answer() {
            match sys::wait_either(
                self.readable.as_fd(),
                self.core.watchdog.stopped_fd(),
                Some(timeout),
            ) {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(None),
                Err(e) => {
                    return Err(self.core.transport_failed(SessionError::Stdio(e)));
                }
            }
        }
        self.next_event().map(Some)
    }

    /// Sends `close_session`, closes the worker's stdin and waits up to
    /// `grace` for the worker to exit; a worker still running then is
    /// force-stopped. Returns the final status. With a call in flight the
    /// call is abandoned: the worker is stopped and the outcome is
    /// [`CallError::Indeterminate`]. The same as [`Session::send_close`]
    /// followed by [`ClosingSession::wait`].
    pub fn close(self, grace: Duration) -> Result<WorkerStatus, CallError> {
        self.send_close()?.wait(grace)
    }

    /// The first half of [`Session::close`]: sends `close_session` and
    /// closes the worker's stdin, then returns without waiting, so the host
    /// can do its own work (say, write out the last result) while the
    /// worker exits. A poisoned session, or a call still in flight, is
    /// stopped here and the error returned, as `close` would.
    pub fn send_close(self) -> Result<ClosingSession, CallError> {
        drop(self.readable);
        self.core.send_close()
    }

    /// Dispatches one durable operation of a granted tool (counted against
    /// its `max_calls`) under the call deadline and returns the worker's
    /// status for it. As with [`Session::call`], a deadline, stop or
    /// transport error poisons the session and the operation's outcome is
    /// indeterminate: reconcile it in a fresh session
    /// ([`LoadedPolicy::reconcile`](crate::LoadedPolicy::reconcile)).
    pub fn dispatch(
        &mut self,
        tool: &str,
        operation_key: &Token,
        input: Value,
    ) -> Result<OperationStatus, CallError> {
        self.core
            .exchange(|host| host.dispatch(tool, operation_key, input))
    }

    /// One `reconcile_operation` exchange under the call deadline (the
    /// recovery path's only request).
    pub(crate) fn reconcile_once(
        &mut self,
        tool: &str,
        operation_id: &Token,
    ) -> Result<OperationStatus, CallError> {
        self.core
            .exchange(|host| host.reconcile(tool, operation_id))
    }

    /// Ends the session and reaps the worker: a healthy idle session is
    /// closed and given `grace` to exit, anything else is force-stopped.
    pub(crate) fn end(self, grace: Duration) -> io::Result<WorkerStatus> {
        drop(self.readable);
        self.core.end(grace)
    }

    /// Force-stops and reaps the worker and discards the session.
    pub fn stop(self) -> io::Result<WorkerStatus> {
        self.core.stop()
    }
}

/// The session's state machine over any transport: the blocking
/// [`Session`] reads and writes the worker's pipes through it directly;
/// the asynchronous session feeds it frames it has already read and
/// writes out what it sent. Every rule of a call (one in flight, the
/// deadline armed before `invoke`, an answer accepted only if termination
/// did not win, poisoning) lives here once.
#[derive(Debug)]
pub(crate) struct Core<R, W> {
    pub(crate) host: HostSession<R, W>,
    /// Whether an answer about the call in flight has been read.
    answered: bool,
    /// Whether the worker has answered at all: it runs, so Bubblewrap has
    /// made every mount, the private device nodes' binds included.
    worker_answered: bool,
    /// Whether an error poisoned the session.
    state: SessionState,
    pub(crate) watchdog: Watchdog,
    /// The bound command of a one-call launch, kept until the worker is
    /// gone (its launch preparations may own host state).
    pub(crate) bound: Option<BoundCommand>,
}

impl<R: Read, W: Write> Core<R, W> {
    pub(crate) fn new(host: HostSession<R, W>, watchdog: Watchdog) -> Self {
        Self {
            host,
            answered: false,
            worker_answered: false,
            state: SessionState::Usable,
            watchdog,
            bound: None,
        }
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.state == SessionState::Poisoned
    }

    /// Whether a call is in flight and nothing about it has been read yet.
    pub(crate) fn awaits_first_answer(&self) -> bool {
        !self.answered && self.host.call_in_flight().is_some()
    }

    /// What one event means to [`Session::call`]: its result, or, once
    /// the call settled without one, an indeterminate outcome; `None`
    /// while the call is still in flight.
    pub(crate) fn call_outcome(&mut self, event: Event) -> Option<Result<Value, CallError>> {
        match event {
            Event::Finished { output, .. } => Some(Ok(output)),
            // No cancel was sent, so nothing else can arrive; stay
            // defensive and keep reading until the call settles.
            _ if self.host.call_in_flight().is_some() => None,
            _ => Some(Err(self.indeterminate_now(SessionError::Idle))),
        }
    }

    pub(crate) fn start(&mut self, tool: &str, input: Value) -> Result<Token, CallError> {
        self.usable()?;
        if let Some(id) = self.host.call_in_flight() {
            return Err(CallError::Refused(SessionError::Busy(id.clone())));
        }
        if let Err(why) = self.watchdog.arm_call() {
            return Err(self.force_stopped(why));
        }
        match self.host.start(tool, input) {
            Ok(id) => {
                self.answered = false;
                Ok(id)
            }
            Err(e) if e.leaves_session() == SessionState::Usable => {
                match self.watchdog.settle_call(true) {
                    Ok(()) => Err(CallError::Refused(e)),
                    Err(why) => Err(self.force_stopped(why)),
                }
            }
            Err(e) => Err(self.transport_failed(e)),
        }
    }

    pub(crate) fn cancel(&mut self, request_id: &Token) -> Result<(), CallError> {
        self.usable()?;
        if let Some(why) = self.watchdog.fired() {
            return Err(self.force_stopped(why));
        }
        match self.host.cancel(request_id) {
            Ok(()) => Ok(()),
            Err(e) if e.leaves_session() == SessionState::Usable => Err(CallError::Refused(e)),
            Err(e) => Err(self.transport_failed(e)),
        }
    }

    pub(crate) fn next_event(&mut self) -> Result<Event, CallError> {
        self.usable()?;
        let event = match self.host.next_event() {
            Ok(event) => event,
            Err(e) if e.leaves_session() == SessionState::Usable => {
                return Err(CallError::Refused(e));
            }
            Err(e) => return Err(self.transport_failed(e)),
        };
        self.answered = true;
        self.worker_answered = true;
        let finished = self.host.call_in_flight().is_none();
        if let Err(why) = self.watchdog.settle_call(finished) {
            return Err(self.force_stopped(why));
        }
        Ok(event)
    }

    /// Sends `close_session` (closing the worker's stdin) and hands the
    /// exiting worker to a [`ClosingSession`].
    pub(crate) fn send_close(self) -> Result<ClosingSession, CallError> {
        let Self {
            host,
            state,
            watchdog,
            bound,
            worker_answered,
            ..
        } = self;
        if let Err(e) = Self::send_close_message(host, state, &watchdog) {
            // The worker is stopped; the bound command goes after it.
            drop(watchdog);
            drop(bound);
            return Err(e);
        }
        if worker_answered {
            // The nodes served only Bubblewrap's binds, made before the
            // worker started; removing them now overlaps with its exit.
            watchdog.release_devices();
        }
        Ok(ClosingSession { watchdog, bound })
    }

    fn send_close_message(
        host: HostSession<R, W>,
        state: SessionState,
        watchdog: &Watchdog,
    ) -> Result<(), CallError> {
        if state == SessionState::Poisoned {
            drop(host);
            // The sandbox is already stopped (poisoning stops it); a stop
            // that fails now is what the host must hear about.
            watchdog.stop().map_err(CallError::Containment)?;
            return Err(CallError::Poisoned);
        }
        host.close().map_err(|e| close_failed(watchdog, e))
    }

    /// One request and its answer under the call deadline; the answer is
    /// accepted only if termination did not win.
    pub(crate) fn exchange<T>(
        &mut self,
        request: impl FnOnce(&mut HostSession<R, W>) -> Result<T, SessionError>,
    ) -> Result<T, CallError> {
        self.usable()?;
        if let Some(id) = self.host.call_in_flight() {
            return Err(CallError::Refused(SessionError::Busy(id.clone())));
        }
        if let Err(why) = self.watchdog.arm_call() {
            return Err(self.force_stopped(why));
        }
        match request(&mut self.host) {
            Ok(answer) => match self.watchdog.settle_call(true) {
                Ok(()) => Ok(answer),
                Err(why) => Err(self.force_stopped(why)),
            },
            Err(e) if e.leaves_session() == SessionState::Usable => {
                match self.watchdog.settle_call(true) {
                    Ok(()) => Err(CallError::Refused(e)),
                    Err(why) => Err(self.force_stopped(why)),
                }
            }
            Err(e) => Err(self.transport_failed(e)),
        }
    }

    fn end(self, grace: Duration) -> io::Result<WorkerStatus> {
        let Self {
            host,
            state,
            watchdog,
            bound,
            ..
        } = self;
        let status = if state == SessionState::Usable
            && host.call_in_flight().is_none()
            && host.close().is_ok()
        {
            match watchdog.wait_exit(grace)? {
                WorkerStatus::Running => watchdog.stop_for(StopReason::CloseGrace)?,
                status => watchdog.release().map(|_| status)?,
            }
        } else {
            watchdog.stop()?
        };
        drop(watchdog);
        drop(bound);
        Ok(status)
    }

    /// Force-stops and reaps the worker and discards the session.
    pub(crate) fn stop(self) -> io::Result<WorkerStatus> {
        let Self {
            host,
            watchdog,
            bound,
            ..
        } = self;
        drop(host);
        let status = watchdog.stop();
        drop(watchdog);
        drop(bound);
        status
    }

    pub(crate) fn usable(&self) -> Result<(), CallError> {
        if self.state == SessionState::Poisoned {
            Err(CallError::Poisoned)
        } else {
            Ok(())
        }
    }

    /// Poisons the session after the watchdog won; the worker is reaped.
    fn force_stopped(&mut self, why: StopReason) -> CallError {
        self.state = SessionState::Poisoned;
        self.host.channel_mut().poison();
        // A sandbox that could not be killed or removed outranks the
        // deadline: the host must learn that containment failed.
        let status = match self.watchdog.stop() {
            Ok(status) => status,
            Err(e) => return CallError::Containment(e),
        };
        CallError::Indeterminate {
            reason: Indeterminate::ForceStopped(why),
            status,
        }
    }

    /// Poisons the session after a transport error. If the watchdog fired
    /// meanwhile, that is the reason; otherwise the worker is stopped.
    pub(crate) fn transport_failed(&mut self, e: SessionError) -> CallError {
        if let Some(why) = self.watchdog.fired() {
            return self.force_stopped(why);
        }
        self.indeterminate_now(e)
    }

    fn indeterminate_now(&mut self, e: SessionError) -> CallError {
        self.state = SessionState::Poisoned;
        self.host.channel_mut().poison();
        let status = match self.watchdog.stop() {
            Ok(status) => status,
            Err(e) => return CallError::Containment(e),
        };
        let reason = match self.watchdog.fired() {
            Some(why) if why != StopReason::Stopped => Indeterminate::ForceStopped(why),
            _ => Indeterminate::Transport(e),
        };
        CallError::Indeterminate { reason, status }
    }
}

/// `close_session` could not be sent: the worker is stopped, and the
/// outcome says whether a deadline or the transport ended it.
pub(crate) fn close_failed(watchdog: &Watchdog, e: SessionError) -> CallError {
    let status = match watchdog.stop() {
        Ok(status) => status,
        Err(e) => return CallError::Containment(e),
    };
    let reason = match watchdog.fired() {
        Some(why) if !matches!(e, SessionError::Abandoned(_)) => Indeterminate::ForceStopped(why),
        _ => Indeterminate::Transport(e),
    };
    CallError::Indeterminate { reason, status }
}

/// A session whose `close_session` was sent ([`Session::send_close`]): the
/// worker is exiting. [`ClosingSession::wait`] collects its status;
/// dropping this instead stops and reaps the worker. The session deadline
/// still holds until `wait` returns: a host that lets it pass first gets
/// [`CallError::Indeterminate`] from `wait`, as from a slow `close`.
#[derive(Debug)]
#[must_use = "wait for the worker to exit, or drop this to stop it"]
pub struct ClosingSession {
    watchdog: Watchdog,
    /// Kept until the worker is gone, as in [`Session`].
    bound: Option<BoundCommand>,
}

impl ClosingSession {
    /// The second half of [`Session::close`]: waits up to `grace` for the
    /// worker to exit (a worker still running then is force-stopped) and
    /// returns its final status; with a cgroup, whatever the worker left
    /// in it is killed and the cgroup removed.
    pub fn wait(self, grace: Duration) -> Result<WorkerStatus, CallError> {
        let Self { watchdog, bound } = self;
        let result = Self::finish(&watchdog, grace);
        drop(watchdog);
        drop(bound);
        result
    }

    /// `close_session` could not be written out after all (the
    /// asynchronous session writes it once `send_close` returned): the
    /// worker is stopped, as a failed `close` stops it.
    #[cfg(feature = "tokio")]
    pub(crate) fn failed(self, e: SessionError) -> CallError {
        let Self { watchdog, bound } = self;
        let error = close_failed(&watchdog, e);
        drop(watchdog);
        drop(bound);
        error
    }

    fn finish(watchdog: &Watchdog, grace: Duration) -> Result<WorkerStatus, CallError> {
        let status = match watchdog.wait_exit(grace) {
            // Still running after the grace period (or its exit could not
            // be observed): force-stopped, and a stop that fails is a
            // containment failure, never a status of `Running`.
            Ok(WorkerStatus::Running) | Err(_) => watchdog
                .stop_for(StopReason::CloseGrace)
                .map_err(CallError::Containment)?,
            Ok(status) => status,
        };
        if let Some(why) = watchdog.fired() {
            return Err(CallError::Indeterminate {
                reason: Indeterminate::ForceStopped(why),
                status,
            });
        }
        // Kills whatever the worker left in its cgroup and removes it.
        watchdog.release().map_err(CallError::Containment)?;
        Ok(status)
    }
}
