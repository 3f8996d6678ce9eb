//! The worker side: read the bootstrap, authenticate `open_session`, then
//! answer requests with tool logic supplied by the worker author.
//!
//! ```no_run
//! use splash_protocol::worker::Worker;
//!
//! let worker = Worker::from_stdio(&["demo.echo"])?;
//! worker.serve(|tool, input, _manifest| match tool.as_str() {
//!     "demo.echo" => Ok(input),
//!     other => Err(format!("unknown tool `{other}`")),
//! })?;
//! # Ok::<(), splash_protocol::SessionError>(())
//! ```
//!
//! As in Splash, the protocol has no error frame: a request the worker
//! cannot serve ends the session. The worker sends nothing more, closes
//! its side and `serve` returns the reason ([`SessionError::Refused`] or
//! [`SessionError::ToolFailed`]); the host sees the session end with the
//! request unanswered. Requests that end the session:
//!
//! - an `invoke` of a tool the manifest does not grant, past `max_calls`,
//!   with a payload of the wrong format, over `max_input_bytes` or (JSON)
//!   not an object or array nested at most 32 levels, or with a request id
//!   the session already used (at most 1024 per session);
//! - an `invoke` whose handler fails, or whose output does not fit the
//!   grant (format, `max_output_bytes`);
//! - a `cancel` that names no call of this session, or a call already being
//!   cancelled;
//! - without an operation journal, any durable request
//!   (`dispatch_operation`, `compensate_operation`, `reconcile_operation`);
//! - with one ([`Worker::with_journal`]): a `compensate_operation`; a
//!   `dispatch_operation` of a tool not declared durable, that fails the
//!   checks of an `invoke`, that reuses an operation key for another tool or
//!   input, or whose key started earlier and has no recorded outcome; a
//!   `reconcile_operation` of an ungranted tool or of an operation key the
//!   journal has no record of (for that tool).
//!
//! A manifest that grants a tool the worker has no handler for is refused
//! when the session opens.
//!
//! # Durable operations
//!
//! A worker that enables a [`Journal`] serves `dispatch_operation` for the
//! tools it declares durable: the journal records `started` (and syncs it)
//! before the tool runs and the outcome after, before the answer is sent; a
//! repeated dispatch of a finished operation (same key, tool and input) gets
//! the recorded status and does not run the tool again. `reconcile_operation`
//! answers from the journal: the recorded status of a finished operation, or
//! `running` for one that started and has no recorded outcome (its effect is
//! unknown: the worker was stopped, the tool failed, or the record tore).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use serde_json::Value;

use crate::auth::SessionAuthenticator;
use crate::bootstrap::PrivatePipeWorkerBootstrap;
use crate::channel::{
    FrameChannel, FrameSender, PayloadSide, Refusal, SessionError, check_payload, payload_for,
};
use crate::journal::{Entry, Journal, input_fingerprint};
use crate::manifest::{CapabilityManifest, GrantFormat};
use crate::message::SessionRole;
use crate::message::{
    CancelOutcome, CancelRequest, CancelResult, DispatchRequest, Invocation,
    MAX_SESSION_REQUEST_IDS, Message, OperationResult, OperationStatus, Payload, ReconcileRequest,
    ToolResult, Version,
};
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
    ledger: Ledger,
    durable: Option<Durable>,
}

/// The operation journal of a worker and the tools it serves durably.
#[derive(Debug)]
struct Durable {
    journal: Journal,
    tools: Vec<String>,
}

/// What the session has admitted so far.
#[derive(Debug, Default)]
struct Ledger {
    calls: BTreeMap<Token, u32>,
    ids: BTreeSet<Token>,
    /// Answered calls: request id → tool.
    answered: BTreeMap<Token, Token>,
}

/// The limits of an admitted call that still apply to its output.
#[derive(Debug, Clone, Copy)]
struct Admitted {
    format: GrantFormat,
    max_output: u32,
}

impl Ledger {
    fn reserve_id(&mut self, id: &Token) -> Result<(), Refusal> {
        if self.ids.contains(id) {
            return Err(Refusal::IdReused(id.clone()));
        }
        if self.ids.len() >= MAX_SESSION_REQUEST_IDS {
            return Err(Refusal::IdsSpent);
        }
        self.ids.insert(id.clone());
        Ok(())
    }

    /// Checks one call against the manifest before the tool runs, and
    /// counts it.
    fn admit(
        &mut self,
        manifest: &CapabilityManifest,
        inv: &Invocation,
    ) -> Result<Admitted, Refusal> {
        self.admit_call(manifest, &inv.tool, &inv.payload, &inv.request_id)
    }

    /// [`Self::admit`] for any request that runs a tool (an `invoke` or a
    /// `dispatch_operation`).
    fn admit_call(
        &mut self,
        manifest: &CapabilityManifest,
        tool: &Token,
        payload: &Payload,
        request_id: &Token,
    ) -> Result<Admitted, Refusal> {
        let Some(grant) = manifest.grant(tool.as_str()) else {
            return Err(Refusal::grant(SessionError::NotGranted(tool.to_string())));
        };
        check_payload(
            tool,
            grant.format,
            PayloadSide::Input,
            payload,
            grant.max_input_bytes,
        )
        .map_err(Refusal::grant)?;
        let used = self.calls.get(tool).copied().unwrap_or(0);
        if used >= grant.max_calls {
            return Err(Refusal::grant(SessionError::CallLimit {
                tool: tool.clone(),
                max: grant.max_calls,
            }));
        }
        self.reserve_id(request_id)?;
        self.calls.insert(tool.clone(), used + 1);
        Ok(Admitted {
            format: grant.format,
            max_output: grant.max_output_bytes,
        })
    }

    /// Whether `request` names a call this session already answered.
    fn answered(&self, request: &CancelRequest) -> bool {
        self.answered.get(&request.request_id) == Some(&request.tool)
    }
}

fn refused(kind: &'static str, request: &Token, reason: Refusal) -> SessionError {
    SessionError::Refused {
        kind,
        request: request.clone(),
        reason: Box::new(reason),
    }
}

/// The request id of a host request, for error reports.
fn request_of(message: &Message) -> Token {
    match message {
        Message::DispatchOperation { request } => request.request_id.clone(),
        Message::CompensateOperation { request } => request.request_id.clone(),
        Message::ReconcileOperation { request } => request.request_id.clone(),
        Message::Cancel { request } => request.cancellation_id.clone(),
        Message::Invoke { invocation } => invocation.request_id.clone(),
        other => other.session_id().clone(),
    }
}

/// The answer to a request that ends the session: nothing is sent.
fn unservable(message: &Message) -> SessionError {
    let reason = match message {
        Message::DispatchOperation { .. } | Message::ReconcileOperation { .. } => {
            Refusal::NoJournal
        }
        Message::CompensateOperation { .. } => Refusal::NoCompensations,
        other => Refusal::NotARequest(other.kind()),
    };
    refused(message.kind(), &request_of(message), reason)
}

/// What to do with an admitted `dispatch_operation`.
enum DurableStep {
    /// The journal has its outcome already: answer with it, run nothing.
    Answer(Message),
    /// Recorded as started: run the tool.
    Run(Admitted),
}

fn operation_reply(reconciled: bool, base: OperationResult) -> Message {
    if reconciled {
        Message::ReconciledOperation { result: base }
    } else {
        Message::OperationResult { result: base }
    }
}

fn operation_result(
    session_id: &Token,
    request_id: &Token,
    tool: &Token,
    operation_key: &Token,
    status: OperationStatus,
) -> OperationResult {
    OperationResult {
        protocol_version: Version,
        session_id: session_id.clone(),
        request_id: request_id.clone(),
        tool: tool.clone(),
        operation_key: operation_key.clone(),
        status,
    }
}

impl Durable {
    /// Checks a `dispatch_operation` like an `invoke`, then against the
    /// journal; a new operation is durably recorded as started.
    fn admit(
        &mut self,
        ledger: &mut Ledger,
        manifest: &CapabilityManifest,
        request: &DispatchRequest,
    ) -> Result<DurableStep, SessionError> {
        let refuse = |reason| refused("dispatch_operation", &request.request_id, reason);
        let key = &request.operation_key;
        if !self.tools.iter().any(|t| t == request.tool.as_str()) {
            return Err(refuse(Refusal::NotDurable(request.tool.clone())));
        }
        let admitted = ledger
            .admit_call(
                manifest,
                &request.tool,
                &request.payload,
                &request.request_id,
            )
            .map_err(refuse)?;
        let input = input_fingerprint(&request.payload);
        match self.journal.entry(key) {
            Some(e) if e.tool != request.tool || e.input != input => {
                Err(refuse(Refusal::KeyReused(key.clone())))
            }
            Some(Entry {
                status: Some(status),
                ..
            }) => {
                ledger
                    .answered
                    .insert(request.request_id.clone(), request.tool.clone());
                Ok(DurableStep::Answer(operation_reply(
                    false,
                    operation_result(
                        &request.session_id,
                        &request.request_id,
                        &request.tool,
                        key,
                        status.clone(),
                    ),
                )))
            }
            Some(_) => Err(refuse(Refusal::Unsettled(key.clone()))),
            None => {
                self.journal
                    .start(&request.tool, key, &input)
                    .map_err(|e| refuse(Refusal::JournalStart(e)))?;
                Ok(DurableStep::Run(admitted))
            }
        }
    }

    /// Records the outcome of a dispatched operation that ran and builds
    /// its answer. A tool error or an output that does not fit the grant
    /// ends the session and leaves the operation recorded as started.
    fn finish(
        &mut self,
        done: &Done,
        operation_key: &Token,
        output: Result<Value, String>,
    ) -> Result<Message, SessionError> {
        let failed = |message: String| SessionError::ToolFailed {
            tool: done.tool.clone(),
            request: done.request_id.clone(),
            message: format!("{message}; operation `{operation_key}` stays recorded as started"),
        };
        let payload = output
            .and_then(|output| {
                payload_for(
                    &done.tool,
                    done.admitted.format,
                    PayloadSide::Output,
                    output,
                    done.admitted.max_output,
                )
                .map_err(|e| e.to_string())
            })
            .map_err(failed)?;
        let status = OperationStatus::Succeeded { payload };
        self.journal
            .finish(operation_key, &status)
            .map_err(|e| failed(format!("the journal cannot record the outcome: {e}")))?;
        Ok(operation_reply(
            false,
            operation_result(
                &done.session_id,
                &done.request_id,
                &done.tool,
                operation_key,
                status,
            ),
        ))
    }
}

/// Answers a `reconcile_operation` from the journal (if there is one).
fn reconcile(
    durable: Option<&Durable>,
    ledger: &mut Ledger,
    manifest: &CapabilityManifest,
    request: ReconcileRequest,
) -> Result<Message, SessionError> {
    let Some(durable) = durable else {
        return Err(unservable(&Message::ReconcileOperation { request }));
    };
    let refuse = |reason| refused("reconcile_operation", &request.request_id, reason);
    let Some(grant) = manifest.grant(request.tool.as_str()) else {
        return Err(refuse(Refusal::grant(SessionError::NotGranted(
            request.tool.to_string(),
        ))));
    };
    ledger.reserve_id(&request.request_id).map_err(refuse)?;
    let key = &request.operation_key;
    let status = match durable.journal.entry(key) {
        Some(e) if e.tool == request.tool => e.status.clone().unwrap_or(OperationStatus::Running),
        _ => {
            return Err(refuse(Refusal::NoRecord {
                key: key.clone(),
                tool: request.tool.clone(),
            }));
        }
    };
    if let OperationStatus::Succeeded { payload } = &status {
        check_payload(
            &request.tool,
            grant.format,
            PayloadSide::Output,
            payload,
            grant.max_output_bytes,
        )
        .map_err(|e| refuse(Refusal::grant(e)))?;
    }
    Ok(operation_reply(
        true,
        operation_result(
            &request.session_id,
            &request.request_id,
            &request.tool,
            key,
            status,
        ),
    ))
}

fn result_message(session_id: &Token, request_id: Token, payload: crate::Payload) -> Message {
    Message::Result {
        result: ToolResult {
            protocol_version: Version,
            session_id: session_id.clone(),
            request_id,
            payload,
        },
    }
}

fn cancel_result(request: CancelRequest, outcome: CancelOutcome) -> Message {
    Message::CancellationResult {
        result: CancelResult {
            protocol_version: Version,
            session_id: request.session_id,
            cancellation_id: request.cancellation_id,
            request_id: request.request_id,
            tool: request.tool,
            outcome,
        },
    }
}

impl Worker<File, File> {
    /// Takes over standard input and output. The preamble is read from a
    /// duplicate of descriptor 0 with no buffering in between, and frames are
    /// written unbuffered (one write per line) to a duplicate of descriptor 1.
    /// Nothing else in the process may write to standard output. `tools` are
    /// the tools this worker has handlers for.
    pub fn from_stdio(tools: &[&str]) -> Result<Self, SessionError> {
        let input = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(SessionError::Stdio)?;
        let output = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(SessionError::Stdio)?;
        Self::new(File::from(input), File::from(output), tools)
    }
}

impl<R: Read, W: Write> Worker<R, W> {
    /// Reads the bootstrap preamble from the raw `reader` (exactly once,
    /// before any buffering), then reads and authenticates the host's
    /// `open_session` frame. The session is refused (nothing is sent) if the
    /// manifest grants a tool that is not in `tools`, the tools this worker
    /// has handlers for.
    pub fn new(mut reader: R, writer: W, tools: &[&str]) -> Result<Self, SessionError> {
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
                bootstrap: session_id.clone(),
                manifest: manifest.session_id.clone(),
            });
        }
        if let Some(g) = manifest
            .grants
            .iter()
            .find(|g| !tools.contains(&g.tool.as_str()))
        {
            channel.poison();
            return Err(SessionError::UnhandledTool(g.tool.clone()));
        }
        Ok(Self {
            channel,
            manifest,
            ledger: Ledger::default(),
            durable: None,
        })
    }

    /// Enables durable operations: `journal` records them, and
    /// `dispatch_operation` is served for `durable_tools` (each must also be
    /// a tool the worker has a handler for; the same handler runs it).
    /// `reconcile_operation` is answered from the journal. Without a journal
    /// every durable request ends the session.
    pub fn with_journal(mut self, journal: Journal, durable_tools: &[&str]) -> Self {
        self.durable = Some(Durable {
            journal,
            tools: durable_tools.iter().map(|t| (*t).to_owned()).collect(),
        });
        self
    }

    /// The authenticated manifest of this session.
    pub fn manifest(&self) -> &CapabilityManifest {
        &self.manifest
    }

    /// Answers requests until `close_session` or end of input; a request it
    /// cannot serve ends the session with an error (see the module
    /// documentation).
    pub fn serve<F>(mut self, mut handler: F) -> Result<ServeEnd, SessionError>
    where
        F: FnMut(&Token, Value, &CapabilityManifest) -> Result<Value, String>,
    {
        loop {
            let Some(message) = self.channel.recv()? else {
                return Ok(ServeEnd::EndOfInput);
            };
            let reply = match message {
                Message::Invoke { invocation } => match self.call(invocation, &mut handler) {
                    Ok(reply) => reply,
                    Err(e) => return Err(self.end(e)),
                },
                Message::Cancel { request } => {
                    // Nothing runs between two reads: a cancel can only name
                    // an answered call.
                    let known = self.ledger.answered(&request);
                    if let Err(reason) = self.ledger.reserve_id(&request.cancellation_id) {
                        return Err(self.end(refused("cancel", &request.cancellation_id, reason)));
                    }
                    if !known {
                        let e = refused(
                            "cancel",
                            &request.cancellation_id,
                            Refusal::UnknownCall {
                                request: request.request_id.clone(),
                                tool: request.tool.clone(),
                            },
                        );
                        return Err(self.end(e));
                    }
                    cancel_result(request, CancelOutcome::TooLate)
                }
                Message::DispatchOperation { request } if self.durable.is_some() => {
                    match self.dispatch(request, &mut handler) {
                        Ok(reply) => reply,
                        Err(e) => return Err(self.end(e)),
                    }
                }
                Message::ReconcileOperation { request } => {
                    match reconcile(
                        self.durable.as_ref(),
                        &mut self.ledger,
                        &self.manifest,
                        request,
                    ) {
                        Ok(reply) => reply,
                        Err(e) => return Err(self.end(e)),
                    }
                }
                Message::CloseSession { .. } => return Ok(ServeEnd::Closed),
                other => return Err(self.end(unservable(&other))),
            };
            self.channel.send(reply)?;
        }
    }

    fn call<F>(&mut self, inv: Invocation, handler: &mut F) -> Result<Message, SessionError>
    where
        F: FnMut(&Token, Value, &CapabilityManifest) -> Result<Value, String>,
    {
        let admitted = self
            .ledger
            .admit(&self.manifest, &inv)
            .map_err(|reason| refused("invoke", &inv.request_id, reason))?;
        let Invocation {
            session_id,
            request_id,
            tool,
            payload,
            ..
        } = inv;
        let payload = handler(&tool, payload.into_value(), &self.manifest)
            .and_then(|output| {
                payload_for(
                    &tool,
                    admitted.format,
                    PayloadSide::Output,
                    output,
                    admitted.max_output,
                )
                .map_err(|e| e.to_string())
            })
            .map_err(|message| SessionError::ToolFailed {
                tool: tool.clone(),
                request: request_id.clone(),
                message,
            })?;
        self.ledger.answered.insert(request_id.clone(), tool);
        Ok(result_message(&session_id, request_id, payload))
    }

    fn dispatch<F>(
        &mut self,
        request: DispatchRequest,
        handler: &mut F,
    ) -> Result<Message, SessionError>
    where
        F: FnMut(&Token, Value, &CapabilityManifest) -> Result<Value, String>,
    {
        let Some(durable) = self.durable.as_mut() else {
            return Err(unservable(&Message::DispatchOperation { request }));
        };
        let admitted = match durable.admit(&mut self.ledger, &self.manifest, &request)? {
            DurableStep::Answer(reply) => return Ok(reply),
            DurableStep::Run(admitted) => admitted,
        };
        let DispatchRequest {
            session_id,
            request_id,
            tool,
            operation_key,
            payload,
            ..
        } = request;
        let output = handler(&tool, payload.into_value(), &self.manifest);
        let done = Done {
            session_id,
            request_id,
            tool,
            admitted,
            operation_key: None,
        };
        let reply = durable.finish(&done, &operation_key, output)?;
        self.ledger.answered.insert(done.request_id, done.tool);
        Ok(reply)
    }

    /// Ends the session: nothing more is read or written.
    fn end(&mut self, e: SessionError) -> SessionError {
        self.channel.poison();
        e
    }
}

/// How a cancellable tool call ended without a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolFailure {
    /// The tool failed; the worker ends the session.
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

/// Handed to a cancellable tool: becomes set when the host cancels the call
/// (or the session ends while it runs).
#[derive(Debug, Clone, Default)]
pub struct CancelSignal(Arc<AtomicBool>);

impl CancelSignal {
    /// Whether the host asked to cancel the call.
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
    tool: Token,
    cancellable: bool,
    /// The cancel the tool thread must answer.
    cancel: Option<CancelRequest>,
    signal: CancelSignal,
}

/// What the reader and the tool thread share: the sending half and the
/// call state, under one lock so every reply is ordered with the state
/// change it reports.
#[derive(Debug)]
struct Shared<W> {
    tx: FrameSender<W>,
    running: Option<Running>,
    ledger: Ledger,
    durable: Option<Durable>,
}

fn lock<W>(m: &Mutex<Shared<W>>) -> MutexGuard<'_, Shared<W>> {
    // A panic on the tool thread must not wedge the reader: the state is
    // still consistent (it is only changed under the lock, in one step).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the dispatcher of a cancellable session waits for.
enum Event {
    /// The reader thread read a frame, the end of input or an error.
    Frame(Result<Option<Message>, SessionError>),
    /// The tool thread finished a call (and answered it, unless it failed).
    Finished(Result<(), SessionError>),
}

impl<R: Read + Send + 'static, W: Write + Send> Worker<R, W> {
    /// Like [`Self::serve`], but each call runs on its own thread while the
    /// worker keeps reading, so the host can `cancel` it. One call runs at a
    /// time; an `invoke` that arrives while a call is running ends the
    /// session.
    ///
    /// For a `cancel` of the running call:
    /// - a tool listed in `cancellable` has its [`CancelSignal`] set. If it
    ///   then returns [`ToolFailure::Cancelled`], the worker answers
    ///   `acknowledged` and sends no result; if it returns a value, the
    ///   worker sends the result and then `too_late`;
    /// - any other tool: `unsupported` at once, and its result follows.
    ///
    /// A `cancel` of a call already answered gets `too_late`.
    ///
    /// Frames are read on a thread of their own, so a failed call ends the
    /// session at once, even while the host is still waiting for its answer;
    /// that thread ends when the input does.
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
            ledger,
            durable,
        } = self;
        let (mut rx, tx) = channel.split();
        let (events, inbox) = std::sync::mpsc::channel::<Event>();
        let reader_events = events.clone();
        thread::spawn(move || {
            loop {
                let frame = rx.recv();
                let last = !matches!(frame, Ok(Some(_)));
                if reader_events.send(Event::Frame(frame)).is_err() || last {
                    break;
                }
            }
        });
        let shared = Mutex::new(Shared {
            tx,
            running: None,
            ledger,
            durable,
        });
        let manifest = &manifest;
        let handler = &handler;
        let shared = &shared;
        thread::scope(|scope| {
            let end = loop {
                let Ok(event) = inbox.recv() else {
                    break Err(SessionError::Closed {
                        expected: "a host request",
                    });
                };
                let message = match event {
                    Event::Finished(Ok(())) => continue,
                    Event::Finished(Err(e)) | Event::Frame(Err(e)) => break Err(e),
                    Event::Frame(Ok(None)) => break Ok(ServeEnd::EndOfInput),
                    Event::Frame(Ok(Some(m))) => m,
                };
                let call = Call {
                    shared,
                    handler,
                    manifest,
                    events: events.clone(),
                };
                let step = match message {
                    Message::Invoke { invocation } => {
                        let cancellable = cancellable.contains(&invocation.tool.as_str());
                        call.invoke(scope, invocation, cancellable)
                    }
                    Message::DispatchOperation { request } => call.dispatch(scope, request),
                    Message::ReconcileOperation { request } => {
                        let mut st = lock(shared);
                        let st = &mut *st;
                        reconcile(st.durable.as_ref(), &mut st.ledger, manifest, request)
                            .and_then(|reply| st.tx.send(reply))
                    }
                    Message::Cancel { request } => on_cancel(shared, request),
                    Message::CloseSession { .. } => break Ok(ServeEnd::Closed),
                    other => Err(unservable(&other)),
                };
                if let Err(e) = step {
                    break Err(e);
                }
            };
            {
                let mut st = lock(shared);
                if end.is_err() {
                    // The session is over: nothing more is sent, and a
                    // running call is asked to stop early.
                    st.tx.poison();
                    if let Some(r) = &st.running {
                        r.signal.set();
                    }
                }
            }
            end
            // The scope joins a running call here; after `close_session` or
            // the end of input it still sends its answer.
        })
        .and_then(|end| {
            // A call that finished after the loop ended may have failed.
            match inbox.try_iter().find_map(|e| match e {
                Event::Finished(Err(e)) => Some(e),
                _ => None,
            }) {
                Some(e) => Err(e),
                None => Ok(end),
            }
        })
    }
}

/// What a call thread of a cancellable session needs.
struct Call<'env, W, F> {
    shared: &'env Mutex<Shared<W>>,
    handler: &'env F,
    manifest: &'env CapabilityManifest,
    events: std::sync::mpsc::Sender<Event>,
}

impl<'env, W, F> Call<'env, W, F>
where
    W: Write + Send,
    F: Fn(&Token, Value, &CapabilityManifest, &CancelSignal) -> Result<Value, ToolFailure> + Sync,
{
    /// Runs an admitted call on a thread of `scope`; the thread answers it
    /// through [`finish`].
    fn spawn<'scope>(
        self,
        scope: &'scope thread::Scope<'scope, 'env>,
        done: Done,
        payload: Payload,
        signal: CancelSignal,
    ) {
        scope.spawn(move || {
            let result = (self.handler)(&done.tool, payload.into_value(), self.manifest, &signal);
            let outcome = finish(self.shared, done, result);
            // The dispatcher may be gone already.
            let _ = self.events.send(Event::Finished(outcome));
        });
    }

    /// Handles an `invoke` in a cancellable session: one call at a time,
    /// admitted by the ledger, run on a thread of `scope`.
    fn invoke<'scope>(
        self,
        scope: &'scope thread::Scope<'scope, 'env>,
        invocation: Invocation,
        cancellable: bool,
    ) -> Result<(), SessionError> {
        let mut st = lock(self.shared);
        if st.running.is_some() {
            return Err(refused("invoke", &invocation.request_id, Refusal::Busy));
        }
        let admitted = match st.ledger.admit(self.manifest, &invocation) {
            Ok(admitted) => admitted,
            Err(reason) => return Err(refused("invoke", &invocation.request_id, reason)),
        };
        let signal = CancelSignal::default();
        st.running = Some(Running {
            request_id: invocation.request_id.clone(),
            tool: invocation.tool.clone(),
            cancellable,
            cancel: None,
            signal: signal.clone(),
        });
        drop(st);
        let Invocation {
            session_id,
            request_id,
            tool,
            payload,
            ..
        } = invocation;
        let done = Done {
            session_id,
            request_id,
            tool,
            admitted,
            operation_key: None,
        };
        self.spawn(scope, done, payload, signal);
        Ok(())
    }

    /// Handles a `dispatch_operation` in a cancellable session: one call at
    /// a time, like `invoke`; a durable call is never cancellable.
    fn dispatch<'scope>(
        self,
        scope: &'scope thread::Scope<'scope, 'env>,
        request: DispatchRequest,
    ) -> Result<(), SessionError> {
        let mut guard = lock(self.shared);
        let st = &mut *guard;
        if st.running.is_some() {
            return Err(refused(
                "dispatch_operation",
                &request.request_id,
                Refusal::Busy,
            ));
        }
        let Some(durable) = st.durable.as_mut() else {
            return Err(unservable(&Message::DispatchOperation { request }));
        };
        let admitted = match durable.admit(&mut st.ledger, self.manifest, &request)? {
            DurableStep::Answer(reply) => return st.tx.send(reply),
            DurableStep::Run(admitted) => admitted,
        };
        let signal = CancelSignal::default();
        st.running = Some(Running {
            request_id: request.request_id.clone(),
            tool: request.tool.clone(),
            cancellable: false,
            cancel: None,
            signal: signal.clone(),
        });
        drop(guard);
        let DispatchRequest {
            session_id,
            request_id,
            tool,
            operation_key,
            payload,
            ..
        } = request;
        let done = Done {
            session_id,
            request_id,
            tool,
            admitted,
            operation_key: Some(operation_key),
        };
        self.spawn(scope, done, payload, signal);
        Ok(())
    }
}

/// Handles a `cancel` in a cancellable session.
fn on_cancel<W: Write>(
    shared: &Mutex<Shared<W>>,
    request: CancelRequest,
) -> Result<(), SessionError> {
    let mut st = lock(shared);
    let st = &mut *st;
    if let Err(reason) = st.ledger.reserve_id(&request.cancellation_id) {
        return Err(refused("cancel", &request.cancellation_id, reason));
    }
    let outcome = match st.running.as_mut() {
        Some(r) if r.request_id == request.request_id && r.tool == request.tool => {
            if r.cancel.is_some() {
                return Err(refused(
                    "cancel",
                    &request.cancellation_id,
                    Refusal::AlreadyCancelling(request.request_id.clone()),
                ));
            }
            if r.cancellable {
                r.signal.set();
                r.cancel = Some(request);
                // Answered by the tool thread when the call ends.
                return Ok(());
            }
            CancelOutcome::Unsupported
        }
        _ if st.ledger.answered(&request) => CancelOutcome::TooLate,
        _ => {
            return Err(refused(
                "cancel",
                &request.cancellation_id,
                Refusal::UnknownCall {
                    request: request.request_id.clone(),
                    tool: request.tool.clone(),
                },
            ));
        }
    };
    st.tx.send(cancel_result(request, outcome))
}

/// The identity of a finished call.
struct Done {
    session_id: Token,
    request_id: Token,
    tool: Token,
    admitted: Admitted,
    /// The operation key of a durable call.
    operation_key: Option<Token>,
}

/// Sends the answer of a finished call from the tool thread, or ends the
/// session if the call failed.
fn finish<W: Write>(
    shared: &Mutex<Shared<W>>,
    done: Done,
    result: Result<Value, ToolFailure>,
) -> Result<(), SessionError> {
    let mut guard = lock(shared);
    let st = &mut *guard;
    let cancel = st.running.take().and_then(|r| r.cancel);
    if let Some(key) = &done.operation_key {
        let output = match result {
            Ok(output) => Ok(output),
            Err(ToolFailure::Error(e)) => Err(e),
            Err(ToolFailure::Cancelled) => Err("the tool stopped early".to_owned()),
        };
        let reply = match st.durable.as_mut() {
            Some(durable) => durable.finish(&done, key, output),
            // A durable call is only admitted with a journal.
            None => Err(SessionError::ToolFailed {
                tool: done.tool.clone(),
                request: done.request_id.clone(),
                message: "the worker has no operation journal".into(),
            }),
        };
        return match reply {
            Ok(reply) => {
                st.ledger
                    .answered
                    .insert(done.request_id.clone(), done.tool.clone());
                st.tx.send(reply)?;
                match cancel {
                    Some(request) => st.tx.send(cancel_result(request, CancelOutcome::TooLate)),
                    None => Ok(()),
                }
            }
            Err(e) => {
                st.tx.poison();
                Err(e)
            }
        };
    }
    let failed = |message: String| SessionError::ToolFailed {
        tool: done.tool.clone(),
        request: done.request_id.clone(),
        message,
    };
    let output = match result {
        Err(ToolFailure::Cancelled) => {
            return match cancel {
                Some(request) => st
                    .tx
                    .send(cancel_result(request, CancelOutcome::Acknowledged)),
                None => {
                    st.tx.poison();
                    Err(failed(
                        "the tool reported a cancellation nobody requested".into(),
                    ))
                }
            };
        }
        Err(ToolFailure::Error(e)) => {
            st.tx.poison();
            return Err(failed(e));
        }
        Ok(output) => output,
    };
    let payload = match payload_for(
        &done.tool,
        done.admitted.format,
        PayloadSide::Output,
        output,
        done.admitted.max_output,
    ) {
        Ok(p) => p,
        Err(e) => {
            st.tx.poison();
            return Err(failed(e.to_string()));
        }
    };
    st.ledger
        .answered
        .insert(done.request_id.clone(), done.tool.clone());
    st.tx
        .send(result_message(&done.session_id, done.request_id, payload))?;
    if let Some(request) = cancel {
        st.tx.send(cancel_result(request, CancelOutcome::TooLate))?;
    }
    Ok(())
}
