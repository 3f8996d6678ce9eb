//! A session for tokio hosts (the `tokio` feature).
//!
//! An [`AsyncSession`] is the same session as [`Session`](crate::Session):
//! the same state machine (`session::Core`: one call in flight, the call
//! deadline armed before `invoke` is written, an answer accepted only if
//! termination did not win, poisoning), the same watchdog and the same
//! error types. Only the transport differs:
//!
//! - the worker's pipes are non-blocking and registered with the host's
//!   runtime; a frame is read into a buffer until it is whole, and only
//!   then handed to the state machine, which therefore never waits on the
//!   worker;
//! - the watchdog's stop eventfd is registered too, so a deadline or a
//!   [`StopHandle`] releases a future waiting on the worker at once;
//! - the worker's exit is awaited on its pidfd during `close`;
//! - every step that can stop the sandbox (a kill and reap, a cgroup's
//!   removal: it can take up to seconds) runs on the runtime's blocking
//!   pool, never on a runtime thread;
//! - the deadlines are enforced by the watchdog's own thread, so they hold
//!   even while the host's runtime is busy or not polling the session.
//!
//! Dropping the session, or any of its futures except
//! [`AsyncSession::next_event`], stops and reaps the sandbox: nothing is
//! left running. `next_event` is cancel-safe: dropped while it waits for
//! the worker, nothing changes; dropped while an answer that already
//! arrived is being checked, that answer is returned by the next
//! `next_event` (any other method discards it).

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use splash_protocol::{CapabilityManifest, HostSession, MAX_LINE_BYTES, SessionError, Token};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::task::JoinHandle;

use crate::bind::BoundCommand;
use crate::error::LaunchError;
use crate::session::{self, CallError, ClosingSession, Core, Event, Spawned};
use crate::status::WorkerStatus;
use crate::sys;
use crate::watchdog::{Deadlines, StopHandle, StopReason, Watchdog};

type AsyncCore = Core<Inbox, Outbox>;

/// The largest single read from the worker's stdout.
const READ_CHUNK: usize = 64 * 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What has been read from the worker and not yet taken by the session.
#[derive(Debug, Default)]
struct Received {
    bytes: Vec<u8>,
    /// How much of `bytes` the session has taken.
    taken: usize,
    /// The worker closed its stdout.
    eof: bool,
}

impl Received {
    fn pending(&self) -> &[u8] {
        &self.bytes[self.taken..]
    }

    /// Whether the session's reader can take its next frame without
    /// waiting: a whole line, the end of input, or more than one line may
    /// hold (the reader then refuses it as too long).
    fn frame_ready(&self) -> bool {
        let pending = self.pending();
        self.eof || pending.len() > MAX_LINE_BYTES || memchr::memchr(b'\n', pending).is_some()
    }
}

/// The session's reader: hands out what was read, never more than through
/// the next newline, so the protocol's line reader takes exactly one frame
/// per step and the rest stays here for the next one.
#[derive(Debug)]
struct Inbox(Arc<Mutex<Received>>);

impl Read for Inbox {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut received = lock(&self.0);
        let pending = received.pending();
        if pending.is_empty() {
            if received.eof {
                return Ok(0);
            }
            // A step runs only once a frame is ready: reaching this is a
            // transport failure, never a wait.
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "no whole frame has arrived from the worker",
            ));
        }
        let line = memchr::memchr(b'\n', pending).map_or(pending.len(), |i| i + 1);
        let n = line.min(out.len());
        out[..n].copy_from_slice(&pending[..n]);
        received.taken += n;
        if received.taken == received.bytes.len() {
            received.bytes.clear();
            received.taken = 0;
        }
        Ok(n)
    }
}

/// What the session wrote and the worker's stdin has not taken yet.
#[derive(Debug, Default)]
struct Outgoing {
    bytes: Vec<u8>,
    /// The session closed its writer (`close_session` was its last frame).
    closed: bool,
}

/// The session's writer: collects frames, which the asynchronous session
/// then writes out to the worker's non-blocking stdin.
#[derive(Debug)]
struct Outbox(Arc<Mutex<Outgoing>>);

impl Write for Outbox {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        lock(&self.0).bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        lock(&self.0).closed = true;
    }
}

/// Why waiting on the worker's pipes ended without the data.
#[derive(Debug)]
enum Interrupted {
    /// The watchdog recorded a stop (a deadline, a [`StopHandle`]).
    Stopped,
    /// The pipe failed.
    Io(io::Error),
}

impl Interrupted {
    fn into_session_error(self) -> SessionError {
        SessionError::Stdio(match self {
            Self::Stopped => io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the worker was force-stopped",
            ),
            Self::Io(e) => e,
        })
    }
}

/// Where the state machine is.
#[derive(Debug)]
enum Slot {
    Ready(Box<AsyncCore>),
    /// A step of `next_event` on the blocking pool; kept so a dropped
    /// `next_event` loses nothing.
    Stepping(JoinHandle<(Box<AsyncCore>, Result<Event, CallError>)>),
    /// Ended, or lost with a dropped future (the sandbox was stopped).
    Gone,
}

/// Stops the sandbox when dropped before [`Armed::disarm`]: the guard of
/// every future that is not cancel-safe.
#[derive(Debug)]
struct Armed(Option<StopHandle>);

impl Armed {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            off_the_runtime(move || {
                let _ = stop.stop();
            });
        }
    }
}

/// A value whose drop may block (it stops a sandbox), held across an
/// await: dropped with a dropped future, it is dropped on the blocking
/// pool.
#[derive(Debug)]
struct Detached<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> Detached<T> {
    fn into_inner(mut self) -> Option<T> {
        self.0.take()
    }
}

impl<T: Send + 'static> Drop for Detached<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            off_the_runtime(move || drop(value));
        }
    }
}

/// Runs `f` on the runtime's blocking pool when there is a runtime, here
/// otherwise (a drop outside any runtime).
fn off_the_runtime(f: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            // A runtime that is shutting down drops `f` unrun; whatever it
            // owns is dropped then, which stops the sandbox as well.
            drop(runtime.spawn_blocking(f));
        }
        Err(_) => f(),
    }
}

/// `f` on the blocking pool. A panic in it is resumed here (whatever `f`
/// owned, the state machine included, was dropped, which stops the
/// sandbox); a runtime that shut down before running it is `None`.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    joined(tokio::task::spawn_blocking(f)).await
}

async fn joined<T>(handle: impl Future<Output = Result<T, tokio::task::JoinError>>) -> Option<T> {
    match handle.await {
        Ok(out) => Some(out),
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => None,
        },
    }
}

/// An open authenticated session with a watched worker, for a tokio host.
/// See the [module documentation](self) for what each future guarantees.
#[derive(Debug)]
pub struct AsyncSession {
    slot: Slot,
    /// An answer whose `next_event` was dropped after it arrived.
    undelivered: Option<Result<Event, CallError>>,
    received: Arc<Mutex<Received>>,
    outgoing: Arc<Mutex<Outgoing>>,
    stdout: AsyncFd<OwnedFd>,
    /// `None` once `close_session` was written and the pipe closed.
    stdin: Option<AsyncFd<OwnedFd>>,
    /// Readable once the watchdog recorded a stop.
    stopped: AsyncFd<OwnedFd>,
    /// Readable once the launched process exited.
    exited: Option<AsyncFd<OwnedFd>>,
    stop: StopHandle,
    pid: u32,
    manifest: CapabilityManifest,
    poisoned: bool,
}

/// The registered descriptors of a session being opened.
#[derive(Debug)]
struct Registered {
    stdout: AsyncFd<OwnedFd>,
    stdin: AsyncFd<OwnedFd>,
    stopped: AsyncFd<OwnedFd>,
    exited: Option<AsyncFd<OwnedFd>>,
}

/// Makes the worker's pipes non-blocking and registers them, the stop
/// eventfd and the pidfd with the runtime (this runs on the blocking
/// pool, inside the runtime's context).
fn register(watchdog: &Watchdog, stdout: OwnedFd, stdin: OwnedFd) -> io::Result<Registered> {
    sys::set_nonblocking(stdout.as_fd())?;
    sys::set_nonblocking(stdin.as_fd())?;
    let stopped = watchdog.stopped_fd().try_clone_to_owned()?;
    let exited = watchdog
        .exit_fd()
        .map(|fd| fd.try_clone_to_owned())
        .transpose()?;
    Ok(Registered {
        stdout: sys::register(stdout, Interest::READABLE)?,
        stdin: sys::register(stdin, Interest::WRITABLE)?,
        stopped: sys::register(stopped, Interest::READABLE)?,
        exited: exited
            .map(|fd| sys::register(fd, Interest::READABLE))
            .transpose()?,
    })
}

/// A spawned worker whose session is open but whose `open_session` frame
/// is not written out yet.
#[derive(Debug)]
struct Opened {
    core: Box<AsyncCore>,
    fds: Registered,
    received: Arc<Mutex<Received>>,
    outgoing: Arc<Mutex<Outgoing>>,
}

/// Spawns `bound` and opens its session over the buffers (blocking).
fn spawn_and_open(
    bound: BoundCommand,
    manifest: CapabilityManifest,
    deadlines: Deadlines,
) -> Result<Opened, LaunchError> {
    let Spawned {
        watchdog,
        stdin,
        stdout,
        key,
    } = session::spawn(&bound, &manifest, deadlines)?;
    // On any failure below, dropping the watchdog stops and reaps the
    // worker; `bound` goes after it.
    let fds = register(&watchdog, stdout.into_pipe().into(), stdin.into())
        .map_err(LaunchError::Descriptor)?;
    let received = Arc::new(Mutex::new(Received::default()));
    let outgoing = Arc::new(Mutex::new(Outgoing::default()));
    let host = HostSession::open(
        manifest,
        key,
        Outbox(Arc::clone(&outgoing)),
        Inbox(Arc::clone(&received)),
    )
    .map_err(|source| LaunchError::Open {
        source,
        failure: watchdog.startup_failure(),
    })?;
    let mut core = Box::new(Core::new(host, watchdog));
    core.bound = Some(bound);
    Ok(Opened {
        core,
        fds,
        received,
        outgoing,
    })
}

/// Why the runtime could not finish a step: it is shutting down.
fn runtime_gone() -> io::Error {
    io::Error::other("the tokio runtime shut down during the session")
}

impl AsyncSession {
    /// [`Session::open_owned`](crate::Session::open_owned) for a tokio
    /// host: spawns `bound` with a fresh session key under the tighter of
    /// `deadlines` and the plan's `watchdog` block, and opens the
    /// authenticated session with `manifest` (which must be the manifest
    /// the plan was activated with). The spawn runs on the blocking pool;
    /// dropping the future never leaves the worker running.
    pub async fn open(
        bound: BoundCommand,
        manifest: CapabilityManifest,
        deadlines: Deadlines,
    ) -> Result<Self, LaunchError> {
        Self::open_with(move || Ok(bound), manifest, deadlines).await
    }

    /// Binds with `bind`, then spawns and opens, on the blocking pool.
    pub(crate) async fn open_with(
        bind: impl FnOnce() -> Result<BoundCommand, LaunchError> + Send + 'static,
        manifest: CapabilityManifest,
        deadlines: Deadlines,
    ) -> Result<Self, LaunchError> {
        let session_manifest = manifest.clone();
        let Opened {
            core,
            fds,
            received,
            outgoing,
        } = blocking(move || spawn_and_open(bind()?, manifest, deadlines))
            .await
            .ok_or_else(|| LaunchError::Descriptor(runtime_gone()))??;
        let mut session = Self {
            stop: core.watchdog.stop_handle(),
            pid: core.watchdog.pid(),
            slot: Slot::Ready(core),
            undelivered: None,
            received,
            outgoing,
            stdout: fds.stdout,
            stdin: Some(fds.stdin),
            stopped: fds.stopped,
            exited: fds.exited,
            manifest: session_manifest,
            poisoned: false,
        };
        // Dropped while `open_session` is written out: the session (and
        // with it the sandbox) is dropped, and its drop stops it.
        if let Err(why) = session.flush().await {
            let core = session.take_core().await.ok();
            let failure = blocking(move || core.map(|c| c.watchdog.startup_failure()))
                .await
                .flatten();
            return Err(match failure {
                Some(failure) => LaunchError::Open {
                    source: why.into_session_error(),
                    failure,
                },
                None => LaunchError::Descriptor(runtime_gone()),
            });
        }
        Ok(session)
    }

    /// The manifest the session was opened with.
    pub fn manifest(&self) -> &CapabilityManifest {
        &self.manifest
    }

    /// The host pid of the Bubblewrap process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// A handle that force-stops the worker from any thread; a future
    /// waiting on the worker then ends with [`CallError::Indeterminate`].
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Why the watchdog force-stopped the worker (a deadline, a
    /// [`StopHandle`]), if it has: the session can then only be reaped.
    /// Never blocks, like [`Session::stopped`](crate::Session::stopped).
    pub fn stopped(&self) -> Option<StopReason> {
        self.stop.fired()
    }

    /// Waits, without a runtime thread, until the watchdog force-stops the
    /// worker, and returns why: an idle host learns that a deadline passed
    /// as it passes. Cancel-safe: dropping the future changes nothing.
    pub async fn wait_stopped(&self) -> io::Result<StopReason> {
        if let Some(reason) = self.stop.fired() {
            return Ok(reason);
        }
        // The reason is recorded before the eventfd is written, and the
        // counter is never read, so readiness stays set once a stop began.
        let _ready = self.stopped.readable().await?;
        self.stop
            .fired()
            .ok_or_else(|| io::Error::other("the session ended without a force-stop"))
    }

    /// True once an error poisoned the session (or a dropped future ended
    /// it).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned || matches!(self.slot, Slot::Gone)
    }

    /// Calls one granted tool and waits for its result (bounded by the
    /// deadlines). Not cancel-safe: dropping the future stops the sandbox.
    pub async fn call(&mut self, tool: &str, input: Value) -> Result<Value, CallError> {
        let armed = Armed(Some(self.stop.clone()));
        let outcome = self.call_inner(tool, input).await;
        armed.disarm();
        outcome
    }

    async fn call_inner(&mut self, tool: &str, input: Value) -> Result<Value, CallError> {
        self.start_inner(tool, input).await?;
        loop {
            let event = self.next_event().await;
            let outcome = match event {
                Ok(event) => self.step(move |core| core.call_outcome(event)).await?,
                Err(e) => Some(Err(e)),
            };
            if let Some(done) = outcome {
                return done;
            }
        }
    }

    /// Arms the call deadline, then sends one `invoke`; returns its request
    /// id once the frame is written. Collect answers with
    /// [`AsyncSession::next_event`]. Not cancel-safe: dropping the future
    /// stops the sandbox.
    pub async fn start(&mut self, tool: &str, input: Value) -> Result<Token, CallError> {
        let armed = Armed(Some(self.stop.clone()));
        let outcome = self.start_inner(tool, input).await;
        armed.disarm();
        outcome
    }

    async fn start_inner(&mut self, tool: &str, input: Value) -> Result<Token, CallError> {
        let name = tool.to_owned();
        let id = self.step(move |core| core.start(&name, input)).await??;
        let ended = Token::new(tool)
            .ok()
            .map(|tool| ("invoke", id.clone(), tool));
        self.written(ended).await?;
        Ok(id)
    }

    /// Sends an authenticated `cancel` for the call in flight; the answer
    /// arrives as an [`Event`]. Not cancel-safe: dropping the future stops
    /// the sandbox.
    pub async fn cancel(&mut self, request_id: &Token) -> Result<(), CallError> {
        let armed = Armed(Some(self.stop.clone()));
        let id = request_id.clone();
        let outcome = match self.step(move |core| core.cancel(&id)).await {
            Ok(Ok(())) => self.written(None).await,
            Ok(Err(e)) | Err(e) => Err(e),
        };
        armed.disarm();
        outcome
    }

    /// Reads the next answer about the call in flight, waiting until one
    /// arrives or a deadline or stop ends the worker. Cancel-safe (see the
    /// [module documentation](self)).
    pub async fn next_event(&mut self) -> Result<Event, CallError> {
        self.settle().await?;
        if let Some(answer) = self.undelivered.take() {
            return answer;
        }
        let waits = match &self.slot {
            Slot::Ready(core) => core.usable().is_ok() && core.host.call_in_flight().is_some(),
            _ => false,
        };
        // With nothing to wait for, the state machine answers at once
        // (poisoned, or idle).
        if waits && let Err(why) = self.wait_frame().await {
            let e = why.into_session_error();
            return self.step(move |core| Err(core.transport_failed(e))).await?;
        }
        let Slot::Ready(core) = std::mem::replace(&mut self.slot, Slot::Gone) else {
            return Err(CallError::Poisoned);
        };
        self.slot = Slot::Stepping(tokio::task::spawn_blocking(move || {
            let mut core = core;
            let answer = core.next_event();
            (core, answer)
        }));
        self.settle().await?;
        self.undelivered.take().unwrap_or(Err(CallError::Poisoned))
    }

    /// Sends `close_session`, closes the worker's stdin and waits up to
    /// `grace` (on the worker's pidfd) for the worker to exit; a worker
    /// still running then is force-stopped. As
    /// [`Session::close`](crate::Session::close): a call in flight is
    /// abandoned, the worker stopped and the outcome
    /// [`CallError::Indeterminate`]. Dropping the future stops the sandbox.
    pub async fn close(mut self, grace: Duration) -> Result<WorkerStatus, CallError> {
        let armed = Armed(Some(self.stop.clone()));
        let outcome = self.close_inner(grace).await;
        armed.disarm();
        outcome
    }

    async fn close_inner(&mut self, grace: Duration) -> Result<WorkerStatus, CallError> {
        let core = self.take_core().await?;
        let closing: ClosingSession = blocking(move || core.send_close())
            .await
            .ok_or(CallError::Poisoned)??;
        let closing = Detached(Some(closing));
        // The writer went with the protocol session: the last frame is
        // `close_session`, and the pipe closes once it is written.
        let written = self.flush().await;
        let left = match (&written, &self.exited) {
            (Ok(()), Some(exited)) => {
                // The session deadline still holds: a watchdog stop makes
                // the pidfd readable too.
                let _ = tokio::time::timeout(grace, exited.readable()).await;
                Duration::ZERO
            }
            _ => grace,
        };
        let closing = closing.into_inner();
        blocking(move || match (closing, written) {
            (Some(closing), Ok(())) => closing.wait(left),
            (Some(closing), Err(why)) => Err(closing.failed(why.into_session_error())),
            (None, _) => Err(CallError::Poisoned),
        })
        .await
        .unwrap_or(Err(CallError::Poisoned))
    }

    /// Force-stops and reaps the worker (on the blocking pool) and discards
    /// the session.
    pub async fn stop(mut self) -> io::Result<WorkerStatus> {
        let core = self
            .take_core()
            .await
            .map_err(|_| io::Error::other("the session's sandbox was already stopped"))?;
        blocking(move || core.stop())
            .await
            .unwrap_or_else(|| Err(runtime_gone()))
    }

    /// Finishes a `next_event` step left by a dropped future: its answer
    /// becomes `undelivered`.
    async fn settle(&mut self) -> Result<(), CallError> {
        if let Slot::Stepping(handle) = &mut self.slot {
            match joined(handle).await {
                Some((core, answer)) => {
                    self.poisoned = core.is_poisoned();
                    self.slot = Slot::Ready(core);
                    self.undelivered = Some(answer);
                }
                None => {
                    self.slot = Slot::Gone;
                    return Err(CallError::Poisoned);
                }
            }
        }
        Ok(())
    }

    /// The state machine, out of its slot.
    async fn take_core(&mut self) -> Result<Box<AsyncCore>, CallError> {
        self.settle().await?;
        self.undelivered = None;
        match std::mem::replace(&mut self.slot, Slot::Gone) {
            Slot::Ready(core) => Ok(core),
            _ => Err(CallError::Poisoned),
        }
    }

    /// One step of the state machine on the blocking pool. Dropped while
    /// it runs, the state machine is dropped with the step's output, which
    /// stops the sandbox.
    async fn step<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut AsyncCore) -> T + Send + 'static,
    ) -> Result<T, CallError> {
        let mut core = self.take_core().await?;
        let (core, out) = blocking(move || {
            let out = f(&mut core);
            (core, out)
        })
        .await
        .ok_or(CallError::Poisoned)?;
        self.poisoned = core.is_poisoned();
        self.slot = Slot::Ready(core);
        Ok(out)
    }

    /// Writes out what the last step sent; a failure poisons the session
    /// as a failed write does in the blocking session. `request` names
    /// the request just sent (its message type, id and tool): a worker
    /// that closed its stdin then ended the session instead of reading it.
    async fn written(
        &mut self,
        request: Option<(&'static str, Token, Token)>,
    ) -> Result<(), CallError> {
        let e = match (self.flush().await, request) {
            (Ok(()), _) => return Ok(()),
            (Err(Interrupted::Io(e)), Some((kind, request, tool)))
                if e.kind() == io::ErrorKind::BrokenPipe =>
            {
                SessionError::WorkerEnded {
                    kind,
                    request,
                    tool,
                }
            }
            (Err(why), _) => why.into_session_error(),
        };
        Err(self.step(move |core| core.transport_failed(e)).await?)
    }

    /// Writes the buffered frames to the worker's stdin, closing it after
    /// the last one once the session's writer is gone.
    async fn flush(&mut self) -> Result<(), Interrupted> {
        loop {
            let (empty, closed) = {
                let out = lock(&self.outgoing);
                (out.bytes.is_empty(), out.closed)
            };
            if empty {
                if closed {
                    self.stdin = None;
                }
                return Ok(());
            }
            let Some(stdin) = &self.stdin else {
                return Err(Interrupted::Io(io::ErrorKind::BrokenPipe.into()));
            };
            tokio::select! {
                biased;
                ready = self.stopped.readable() => {
                    // Readable for good: the readiness stays set.
                    let _ = ready.map_err(Interrupted::Io)?;
                    return Err(Interrupted::Stopped);
                }
                ready = stdin.writable() => {
                    let mut guard = ready.map_err(Interrupted::Io)?;
                    let outgoing = &self.outgoing;
                    let wrote = guard.try_io(|fd| {
                        let mut out = lock(outgoing);
                        let n = sys::write_some(fd.get_ref().as_fd(), &out.bytes)?;
                        out.bytes.drain(..n);
                        Ok(n)
                    });
                    if let Ok(Err(e)) = wrote {
                        return Err(Interrupted::Io(e));
                    }
                }
            }
        }
    }

    /// Reads from the worker's stdout until a whole frame is buffered (or
    /// the end of input, or more than a frame may hold).
    async fn wait_frame(&self) -> Result<(), Interrupted> {
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            if lock(&self.received).frame_ready() {
                return Ok(());
            }
            tokio::select! {
                biased;
                ready = self.stopped.readable() => {
                    // Readable for good: the readiness stays set.
                    let _ = ready.map_err(Interrupted::Io)?;
                    return Err(Interrupted::Stopped);
                }
                ready = self.stdout.readable() => {
                    let mut guard = ready.map_err(Interrupted::Io)?;
                    match guard.try_io(|fd| sys::read_some(fd.get_ref().as_fd(), &mut chunk)) {
                        Ok(Ok(0)) => lock(&self.received).eof = true,
                        Ok(Ok(n)) => lock(&self.received).bytes.extend_from_slice(&chunk[..n]),
                        Ok(Err(e)) => return Err(Interrupted::Io(e)),
                        Err(_would_block) => {}
                    }
                }
            }
        }
    }
}

impl Drop for AsyncSession {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.slot, Slot::Gone) {
            Slot::Ready(core) => off_the_runtime(move || drop(core)),
            Slot::Stepping(handle) => {
                // A step still running drops its output (the state machine)
                // on the blocking pool; one that finished hands it over.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    drop(runtime.spawn(async move {
                        if let Ok((core, _)) = handle.await {
                            off_the_runtime(move || drop(core));
                        }
                    }));
                }
            }
            Slot::Gone => {}
        }
    }
}
