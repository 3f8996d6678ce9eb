//! The worker side: read the bootstrap, authenticate `open_session`, then
//! answer requests with tool logic supplied by the worker author.
//!
//! ```no_run
//! use splash_protocol::worker::Worker;
//!
//! let worker = Worker::from_stdio()?;
//! worker.serve(|tool, input, _manifest| match tool.as_str() {
//!     "demo.echo" => Ok(input),
//!     other => Err(format!("unknown tool `{other}`")),
//! })?;
//! # Ok::<(), splash_protocol::SessionError>(())
//! ```
//!
//! The library enforces the manifest before the tool runs: the tool must be
//! granted, its `max_calls` not used up, and its input of the grant's format
//! and within `max_input_bytes`. An output over `max_output_bytes` or of the
//! wrong format is replaced by an error result. Durable operations are not
//! supported by this library: `dispatch_operation` and
//! `compensate_operation` get an error outcome (after the grant checks:
//! the tool must be granted and a compensation within `max_compensations`)
//! and `reconcile_operation` gets state `unknown`. A synchronous worker has always answered a request
//! before it reads the next frame, so `cancel` gets `too_late` for a request
//! it answered and `unsupported` otherwise.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use serde_json::Value;

use crate::auth::{SessionAuthenticator, SessionRole};
use crate::bootstrap::PrivatePipeWorkerBootstrap;
use crate::channel::{FrameChannel, FrameSender, SessionError, check_payload};
use crate::manifest::{CapabilityManifest, GrantFormat};
use crate::message::{CancelDisposition, Message, OperationState, Outcome};
use crate::token::Token;

/// Why [`Worker::serve`] returned normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// The host sent `close_session`.
    Closed,
    /// The host closed the pipe at a frame boundary.
    EndOfInput,
}

/// An authenticated worker session.
#[derive(Debug)]
pub struct Worker<R, W> {
    channel: FrameChannel<BufReader<R>, W>,
    manifest: CapabilityManifest,
    calls: BTreeMap<Token, u32>,
    compensations: BTreeMap<Token, u32>,
    answered: BTreeSet<Token>,
}

impl Worker<File, File> {
    /// Takes over standard input and output. The preamble is read from a
    /// duplicate of descriptor 0 with no buffering in between, and frames are
    /// written unbuffered (one write per line) to a duplicate of descriptor 1.
    /// Nothing else in the process may write to standard output.
    pub fn from_stdio() -> Result<Self, SessionError> {
        let input = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(SessionError::Stdio)?;
        let output = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(SessionError::Stdio)?;
        Self::new(File::from(input), File::from(output))
    }
}

impl<R: Read, W: Write> Worker<R, W> {
    /// Reads the bootstrap preamble from the raw `reader` (exactly once,
    /// before any buffering), then reads and authenticates the host's
    /// `open_session` frame.
    pub fn new(mut reader: R, writer: W) -> Result<Self, SessionError> {
        let bootstrap = PrivatePipeWorkerBootstrap::read_from(&mut reader)?;
        let (session_id, key) = bootstrap.into_parts();
        let auth = SessionAuthenticator::new(session_id.clone(), key, SessionRole::Worker);
        let mut channel = FrameChannel::new(BufReader::new(reader), writer, auth);
        let manifest = match channel.recv_expected("open_session")? {
            Message::OpenSession { manifest } => manifest,
            other => {
                channel.poison();
                return Err(SessionError::Unexpected {
                    expected: "open_session",
                    got: other.kind(),
                });
            }
        };
        if manifest.session_id != session_id {
            channel.poison();
            return Err(SessionError::SessionMismatch {
                bootstrap: session_id.to_string(),
                manifest: manifest.session_id.to_string(),
            });
        }
        Ok(Self {
            channel,
            manifest,
            calls: BTreeMap::new(),
            compensations: BTreeMap::new(),
            answered: BTreeSet::new(),
        })
    }

    /// The authenticated manifest of this session.
    pub fn manifest(&self) -> &CapabilityManifest {
        &self.manifest
    }

    /// Answers requests until `close_session` or end of input.
    pub fn serve<F>(mut self, mut handler: F) -> Result<ServeEnd, SessionError>
    where
        F: FnMut(&Token, Value, &CapabilityManifest) -> Result<Value, String>,
    {
        loop {
            let Some(message) = self.channel.recv()? else {
                return Ok(ServeEnd::EndOfInput);
            };
            let reply = match message {
                Message::Invoke {
                    request_id,
                    tool,
                    input,
                } => {
                    let outcome = self.call(&tool, input, &mut handler);
                    self.answered.insert(request_id.clone());
                    Message::Result {
                        request_id,
                        outcome,
                    }
                }
                Message::Cancel { request_id } => {
                    let disposition = if self.answered.contains(&request_id) {
                        CancelDisposition::TooLate
                    } else {
                        CancelDisposition::Unsupported
                    };
                    Message::CancellationResult {
                        request_id,
                        disposition,
                    }
                }
                Message::CloseSession {} => return Ok(ServeEnd::Closed),
                other => match durable_reply(&self.manifest, &mut self.compensations, other) {
                    Ok(reply) => reply,
                    Err(e) => {
                        self.channel.poison();
                        return Err(e);
                    }
                },
            };
            self.channel.send(reply)?;
        }
    }

    fn call<F>(&mut self, tool: &Token, input: Value, handler: &mut F) -> Outcome
    where
        F: FnMut(&Token, Value, &CapabilityManifest) -> Result<Value, String>,
    {
        let admitted = match admit(&self.manifest, &mut self.calls, tool, &input) {
            Ok(a) => a,
            Err(e) => return Outcome::Error(e),
        };
        match handler(tool, input, &self.manifest) {
            Ok(output) => admitted.check_output(tool, output),
            Err(e) => Outcome::Error(e),
        }
    }
}

/// The limits of an admitted call that still apply to its output.
#[derive(Debug, Clone, Copy)]
struct Admitted {
    format: GrantFormat,
    max_output: u32,
}

impl Admitted {
    fn check_output(self, tool: &Token, output: Value) -> Outcome {
        match check_payload(tool, self.format, "output", &output, self.max_output) {
            Ok(()) => Outcome::Ok(output),
            Err(e) => Outcome::Error(e.to_string()),
        }
    }
}

/// Checks one call against the manifest before the tool runs and counts it.
fn admit(
    manifest: &CapabilityManifest,
    calls: &mut BTreeMap<Token, u32>,
    tool: &Token,
    input: &Value,
) -> Result<Admitted, String> {
    let Some(grant) = manifest.grant(tool.as_str()) else {
        return Err(SessionError::NotGranted(tool.to_string()).to_string());
    };
    let used = calls.entry(tool.clone()).or_insert(0);
    if *used >= grant.max_calls {
        return Err(SessionError::CallLimit {
            tool: tool.to_string(),
            max: grant.max_calls,
        }
        .to_string());
    }
    *used += 1;
    check_payload(tool, grant.format, "input", input, grant.max_input_bytes)
        .map_err(|e| e.to_string())?;
    Ok(Admitted {
        format: grant.format,
        max_output: grant.max_output_bytes,
    })
}

/// How a cancellable tool call ended without a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolFailure {
    /// The tool failed; the host gets an `{"error": ...}` result.
    Error(String),
    /// The tool stopped its effect after a cancellation request and
    /// guarantees no result follows; the host gets `acknowledged`.
    Cancelled,
}

impl From<String> for ToolFailure {
    fn from(e: String) -> Self {
        Self::Error(e)
    }
}

/// Handed to a cancellable tool: becomes set when the host cancels the call.
#[derive(Debug, Clone, Default)]
pub struct CancelSignal(Arc<AtomicBool>);

impl CancelSignal {
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The call in flight in a cancellable session.
#[derive(Debug)]
struct Running {
    request_id: Token,
    cancellable: bool,
    cancel_requested: bool,
    signal: CancelSignal,
}

/// What the reader and the tool thread share: the sending half and the
/// call state, under one lock so every reply is ordered with the state
/// change it reports.
#[derive(Debug)]
struct Shared<W> {
    tx: FrameSender<W>,
    running: Option<Running>,
    answered: BTreeSet<Token>,
}

fn lock<W>(m: &Mutex<Shared<W>>) -> MutexGuard<'_, Shared<W>> {
    // A panic on the tool thread must not wedge the reader: the state is
    // still consistent (it is only changed under the lock, in one step).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Read + Send, W: Write + Send> Worker<R, W> {
    /// Like [`Self::serve`], but a tool listed in `cancellable` runs on its
    /// own thread while the worker keeps reading, so the host can `cancel`
    /// it. One call runs at a time; an `invoke` that arrives while a call is
    /// running gets an error result.
    ///
    /// For a `cancel` of the running call:
    /// - a cancellable tool has its [`CancelSignal`] set. If it then returns
    ///   [`ToolFailure::Cancelled`], the worker answers `acknowledged` and
    ///   sends no result; if it returns anything else, the worker sends the
    ///   result and then `too_late`;
    /// - any other tool: `unsupported` at once, and its result follows.
    ///
    /// A `cancel` for a call already answered gets `too_late`; for an
    /// unknown request, `unsupported`.
    pub fn serve_cancellable<F>(
        self,
        cancellable: &[&str],
        handler: F,
    ) -> Result<ServeEnd, SessionError>
    where
        F: Fn(&Token, Value, &CapabilityManifest, &CancelSignal) -> Result<Value, ToolFailure>
            + Sync,
    {
        let Self {
            channel,
            manifest,
            mut calls,
            mut compensations,
            answered,
        } = self;
        let (mut rx, tx) = channel.split();
        let shared = Mutex::new(Shared {
            tx,
            running: None,
            answered,
        });
        let manifest = &manifest;
        let handler = &handler;
        let shared = &shared;
        thread::scope(|scope| {
            let mut call: Option<thread::ScopedJoinHandle<'_, Result<(), SessionError>>> = None;
            let end = loop {
                if let Some(h) = call.take_if(|h| h.is_finished())
                    && let Err(e) = h.join().unwrap_or(Err(SessionError::ToolPanicked))
                {
                    break Err(e);
                }
                let message = match rx.recv() {
                    Ok(Some(m)) => m,
                    Ok(None) => break Ok(ServeEnd::EndOfInput),
                    Err(e) => break Err(e),
                };
                let sent = match message {
                    Message::Invoke {
                        request_id,
                        tool,
                        input,
                    } => {
                        let mut st = lock(shared);
                        if st.running.is_some() {
                            st.answered.insert(request_id.clone());
                            st.tx.send(Message::Result {
                                request_id,
                                outcome: Outcome::Error(
                                    "another call is still running in this session".into(),
                                ),
                            })
                        } else {
                            match admit(manifest, &mut calls, &tool, &input) {
                                Err(e) => {
                                    st.answered.insert(request_id.clone());
                                    st.tx.send(Message::Result {
                                        request_id,
                                        outcome: Outcome::Error(e),
                                    })
                                }
                                Ok(admitted) => {
                                    let signal = CancelSignal::default();
                                    st.running = Some(Running {
                                        request_id: request_id.clone(),
                                        cancellable: cancellable.contains(&tool.as_str()),
                                        cancel_requested: false,
                                        signal: signal.clone(),
                                    });
                                    drop(st);
                                    call = Some(scope.spawn(move || {
                                        let result = handler(&tool, input, manifest, &signal);
                                        finish(shared, request_id, &tool, admitted, result)
                                    }));
                                    Ok(())
                                }
                            }
                        }
                    }
                    Message::Cancel { request_id } => {
                        let mut st = lock(shared);
                        let st = &mut *st;
                        let disposition = match st.running.as_mut() {
                            Some(r) if r.request_id == request_id => {
                                if r.cancellable && !r.cancel_requested {
                                    r.cancel_requested = true;
                                    r.signal.set();
                                    // Answered by the tool thread when the
                                    // call ends.
                                    None
                                } else {
                                    Some(CancelDisposition::Unsupported)
                                }
                            }
                            _ if st.answered.contains(&request_id) => {
                                Some(CancelDisposition::TooLate)
                            }
                            _ => Some(CancelDisposition::Unsupported),
                        };
                        match disposition {
                            Some(disposition) => st.tx.send(Message::CancellationResult {
                                request_id,
                                disposition,
                            }),
                            None => Ok(()),
                        }
                    }
                    Message::CloseSession {} => break Ok(ServeEnd::Closed),
                    other => match durable_reply(manifest, &mut compensations, other) {
                        Ok(reply) => lock(shared).tx.send(reply),
                        Err(e) => {
                            rx.poison();
                            break Err(e);
                        }
                    },
                };
                if let Err(e) = sent {
                    break Err(e);
                }
            };
            // Let a running call finish and send its answer.
            let tail = match call.take() {
                Some(h) => h.join().unwrap_or(Err(SessionError::ToolPanicked)),
                None => Ok(()),
            };
            match (end, tail) {
                (Err(e), _) => Err(e),
                (Ok(_), Err(e)) => Err(e),
                (Ok(end), Ok(())) => Ok(end),
            }
        })
    }
}

/// Sends the answer of a finished call from the tool thread.
fn finish<W: Write>(
    shared: &Mutex<Shared<W>>,
    request_id: Token,
    tool: &Token,
    admitted: Admitted,
    result: Result<Value, ToolFailure>,
) -> Result<(), SessionError> {
    let mut st = lock(shared);
    let cancel_requested = st.running.take().is_some_and(|r| r.cancel_requested);
    st.answered.insert(request_id.clone());
    let outcome = match result {
        Err(ToolFailure::Cancelled) if cancel_requested => {
            return st.tx.send(Message::CancellationResult {
                request_id,
                disposition: CancelDisposition::Acknowledged,
            });
        }
        Err(ToolFailure::Cancelled) => Outcome::Error(format!(
            "tool `{tool}` reported a cancellation nobody requested"
        )),
        Err(ToolFailure::Error(e)) => Outcome::Error(e),
        Ok(output) => admitted.check_output(tool, output),
    };
    st.tx.send(Message::Result {
        request_id: request_id.clone(),
        outcome,
    })?;
    if cancel_requested {
        st.tx.send(Message::CancellationResult {
            request_id,
            disposition: CancelDisposition::TooLate,
        })?;
    }
    Ok(())
}

/// The answer of a worker without a journal to the durable requests, after
/// the same grant checks a journaling worker would make; any other message
/// here is a protocol error.
fn durable_reply(
    manifest: &CapabilityManifest,
    compensations: &mut BTreeMap<Token, u32>,
    message: Message,
) -> Result<Message, SessionError> {
    let not_granted = |tool: &Token| SessionError::NotGranted(tool.to_string()).to_string();
    Ok(match message {
        Message::DispatchOperation {
            operation_id, tool, ..
        } => Message::OperationResult {
            operation_id,
            outcome: Outcome::Error(match manifest.grant(tool.as_str()) {
                None => not_granted(&tool),
                Some(_) => "durable operations are not supported by this worker".into(),
            }),
        },
        Message::CompensateOperation { operation_id, tool } => {
            let error = match manifest.grant(tool.as_str()) {
                None => not_granted(&tool),
                Some(g) => {
                    let used = compensations.entry(tool.clone()).or_insert(0);
                    if *used >= g.max_compensations {
                        SessionError::CompensationLimit {
                            tool: tool.to_string(),
                            max: g.max_compensations,
                        }
                        .to_string()
                    } else {
                        *used += 1;
                        "compensation is not supported by this worker".into()
                    }
                }
            };
            Message::CompensationResult {
                operation_id,
                outcome: Outcome::Error(error),
            }
        }
        Message::ReconcileOperation { operation_id, .. } => Message::ReconciledOperation {
            operation_id,
            state: OperationState::Unknown,
        },
        other => {
            return Err(SessionError::Unexpected {
                expected: "a host request",
                got: other.kind(),
            });
        }
    })
}
