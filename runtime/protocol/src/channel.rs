//! An authenticated frame channel: the JSON-line codec plus one
//! [`SessionAuthenticator`], poisoned as a whole by any error.
//!
//! Both the host session and the worker library are built on it; hosts that
//! need another request pattern can use it directly.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::auth::{AuthError, Frame, FrameOpener, FrameSealer, SessionAuthenticator};
use crate::bootstrap::BootstrapError;
use crate::codec::{CodecError, JsonLineReader, JsonLineWriter};
use crate::manifest::{GrantFormat, ManifestError};
use crate::message::{MAX_SESSION_REQUEST_IDS, Message, MessageError, Payload, PayloadError};
use crate::token::Token;

/// Why a session operation failed.
///
/// Unless [`SessionError::leaves_session`] says otherwise, the channel is
/// poisoned and every later call fails with [`SessionError::Poisoned`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// An earlier error poisoned the channel; nothing more is sent or read.
    #[error("the session is poisoned by an earlier error")]
    Poisoned,
    /// Reading or writing a line failed.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A frame failed authentication.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The bootstrap preamble was refused.
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
    /// The manifest was refused.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The worker could not take over its standard streams.
    #[error("failed to take over the standard streams: {0}")]
    Stdio(std::io::Error),
    /// The peer closed the channel early.
    #[error("the peer closed the channel while `{expected}` was expected")]
    Closed {
        /// The message type the exchange was waiting for.
        expected: &'static str,
    },
    /// A message of another type than the one the exchange needs.
    #[error("expected `{expected}`, got `{got}`")]
    Unexpected {
        /// The message type the exchange needs.
        expected: &'static str,
        /// The message type that came.
        got: &'static str,
    },
    /// The manifest and the bootstrap name different sessions.
    #[error("manifest session `{manifest}` does not match bootstrap session `{bootstrap}`")]
    SessionMismatch {
        /// The bootstrap's session id.
        bootstrap: Token,
        /// The manifest's session id.
        manifest: Token,
    },
    /// A reply names another request than the one in flight.
    #[error("reply is for request `{got}`; expected `{expected}`")]
    RequestMismatch {
        /// The request in flight.
        expected: Token,
        /// The request the reply names.
        got: Token,
    },
    /// A call of a tool the manifest does not grant (refused before sending);
    /// the name as the caller gave it, which need not be a valid token.
    #[error("tool `{0}` is not granted by the manifest")]
    NotGranted(String),
    /// The grant's call budget is spent (refused before sending).
    #[error("tool `{tool}` has used all {max} calls its grant allows")]
    CallLimit {
        /// The tool.
        tool: Token,
        /// The grant's `max_calls`.
        max: u32,
    },
    /// The grant's compensation budget is spent (refused before sending).
    #[error("tool `{tool}` has used all {max} compensations its grant allows")]
    CompensationLimit {
        /// The tool.
        tool: Token,
        /// The grant's `max_compensations`.
        max: u32,
    },
    /// A payload over the grant's size bound.
    #[error("{what} of tool `{tool}` is {size} bytes; the grant allows {max}")]
    TooLarge {
        /// The tool.
        tool: Token,
        /// Whether the input or the output is too large.
        what: PayloadSide,
        /// The payload's size in bytes.
        size: usize,
        /// The grant's bound.
        max: u32,
    },
    /// A payload that does not fit the grant's format or shape.
    #[error("{what} of tool `{tool}` does not fit its grant: {error}")]
    Payload {
        /// The tool.
        tool: Token,
        /// Whether the input or the output does not fit.
        what: PayloadSide,
        /// What is wrong with it.
        error: PayloadError,
    },
    /// A request that breaks a message rule (refused before sending).
    #[error("invalid request: {0}")]
    InvalidRequest(MessageError),
    /// A compensation for a tool whose grant allows none.
    #[error("tool `{0}` is not granted any compensations")]
    CompensationNotGranted(Token),
    /// The session's request-id space is spent (the limit).
    #[error("the session has used all {0} request ids a session allows; open a new session")]
    RequestLimit(usize),
    /// The worker ended the session with a request unanswered.
    #[error(
        "the worker ended the session without answering `{kind}` request `{request}` of tool `{tool}`; a worker ends the session on a request it cannot serve, so its effect is indeterminate"
    )]
    WorkerEnded {
        /// The request's message type.
        kind: &'static str,
        /// The request id.
        request: Token,
        /// The tool.
        tool: Token,
    },
    /// A reply whose echoed fields differ from its request.
    #[error("the `{kind}` reply does not match its request ({field} differs)")]
    ReplyMismatch {
        /// The reply's message type.
        kind: &'static str,
        /// The first field that differs.
        field: &'static str,
    },
    /// The manifest grants a tool the worker cannot serve.
    #[error("the manifest grants tool `{0}`, which this worker has no handler for")]
    UnhandledTool(Token),
    /// The worker refused a request and ended the session.
    #[error("ended the session on `{kind}` request `{request}`: {reason}")]
    Refused {
        /// The request's message type.
        kind: &'static str,
        /// The request id.
        request: Token,
        /// Why the worker refused it (boxed: the other errors stay small).
        reason: Box<Refusal>,
    },
    /// A tool handler failed; the worker ends the session.
    #[error("tool `{tool}` failed on request `{request}`, so the session ends: {message}")]
    ToolFailed {
        /// The tool.
        tool: Token,
        /// The request id.
        request: Token,
        /// The handler's failure message.
        message: String,
    },
    /// A tool handler panicked.
    #[error("a tool thread panicked")]
    ToolPanicked,
    /// A call is already in flight (its request id).
    #[error("call `{0}` is still in flight; collect its answer first")]
    Busy(Token),
    /// There is no call in flight to wait for.
    #[error("no call is in flight")]
    Idle,
    /// The session closed with a call in flight (its request id).
    #[error("the session was closed with call `{0}` in flight; its effect is indeterminate")]
    Abandoned(Token),
    /// The request id names no call that can still be cancelled.
    #[error("request `{0}` is not a call in flight that can still be cancelled")]
    NotCancellable(Token),
}

/// Why a worker refused a request and ended the session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The request breaks its grant: the tool is not granted, the payload
    /// does not fit, or the call budget is spent.
    #[error("{0}")]
    Grant(Box<SessionError>),
    /// The request id was used before in this session.
    #[error("request id `{0}` was already used in this session")]
    IdReused(Token),
    /// The session's request ids are spent.
    #[error("the session has used all {MAX_SESSION_REQUEST_IDS} request ids it allows")]
    IdsSpent,
    /// Another call is still running.
    #[error("another call is still running in this session")]
    Busy,
    /// A cancel names no call of this session.
    #[error("call `{request}` of tool `{tool}` is not a call of this session")]
    UnknownCall {
        /// The request id it names.
        request: Token,
        /// The tool it names.
        tool: Token,
    },
    /// A second cancel of the call (its request id).
    #[error("call `{0}` is already being cancelled")]
    AlreadyCancelling(Token),
    /// A durable operation of a tool this worker does not serve durably.
    #[error("tool `{0}` is not served as a durable operation by this worker")]
    NotDurable(Token),
    /// An operation key used before for another tool or input.
    #[error("operation key `{0}` was used for another tool or input")]
    KeyReused(Token),
    /// An operation that started earlier without a recorded outcome.
    #[error("operation `{0}` started earlier and has no recorded outcome; reconcile it")]
    Unsettled(Token),
    /// The journal could not record the operation's start.
    #[error("the journal cannot record the start: {0}")]
    JournalStart(std::io::Error),
    /// A reconciliation of an operation the journal has no record of.
    #[error("the operation journal has no record of operation `{key}` of tool `{tool}`")]
    NoRecord {
        /// The operation key.
        key: Token,
        /// The tool.
        tool: Token,
    },
    /// A durable request to a worker without an operation journal.
    #[error("this worker keeps no operation journal, so it serves no durable operations")]
    NoJournal,
    /// A compensation request to a worker that serves none.
    #[error("this worker serves no compensating operations")]
    NoCompensations,
    /// A message a worker never answers (its type).
    #[error("`{0}` is not a request a worker answers")]
    NotARequest(&'static str),
}

impl Refusal {
    pub(crate) fn grant(error: SessionError) -> Self {
        Self::Grant(Box::new(error))
    }
}

/// Which payload of a call an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PayloadSide {
    /// The request's input (checked before sending).
    Input,
    /// The worker's output.
    Output,
}

impl PayloadSide {
    /// `input` or `output`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Output => "output",
        }
    }
}

impl std::fmt::Display for PayloadSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an error leaves of the session it happened in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// The session can be used again: the error was a refusal decided
    /// before anything was sent.
    Usable,
    /// The session can no longer be used: whether the call's effect
    /// happened is unknown, or the channel is broken.
    Poisoned,
}

impl SessionError {
    /// What this error leaves of the session. Refusals decided before
    /// anything was sent leave it usable; everything else poisons it.
    pub fn leaves_session(&self) -> SessionState {
        let refused = matches!(
            self,
            Self::NotGranted(_)
                | Self::Busy(_)
                | Self::Idle
                | Self::NotCancellable(_)
                | Self::CallLimit { .. }
                | Self::CompensationLimit { .. }
                | Self::CompensationNotGranted(_)
                | Self::RequestLimit(_)
                | Self::InvalidRequest(_)
                | Self::TooLarge {
                    what: PayloadSide::Input,
                    ..
                }
                | Self::Payload {
                    what: PayloadSide::Input,
                    ..
                }
        );
        if refused {
            SessionState::Usable
        } else {
            SessionState::Poisoned
        }
    }
}

/// Checks a payload against its grant's format and byte bound (see
/// [`Payload::measure`]).
pub(crate) fn check_payload(
    tool: &Token,
    format: GrantFormat,
    what: PayloadSide,
    payload: &Payload,
    max: u32,
) -> Result<(), SessionError> {
    let size = payload
        .measure(format)
        .map_err(|error| SessionError::Payload {
            tool: tool.clone(),
            what,
            error,
        })?;
    if u64::try_from(size).unwrap_or(u64::MAX) > u64::from(max) {
        return Err(SessionError::TooLarge {
            tool: tool.clone(),
            what,
            size,
            max,
        });
    }
    Ok(())
}

/// Builds the payload of a grant from a JSON value and checks it.
pub(crate) fn payload_for(
    tool: &Token,
    format: GrantFormat,
    what: PayloadSide,
    value: Value,
    max: u32,
) -> Result<Payload, SessionError> {
    let payload = Payload::from_value(format, value).map_err(|error| SessionError::Payload {
        tool: tool.clone(),
        what,
        error,
    })?;
    check_payload(tool, format, what, &payload, max)?;
    Ok(payload)
}

/// A poison flag shared by the two halves of one channel: an error on
/// either side stops both.
#[derive(Debug, Clone, Default)]
struct Poison(Arc<AtomicBool>);

impl Poison {
    fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The receiving half: the JSON-line reader and the frame opener.
#[derive(Debug)]
pub struct FrameReceiver<R> {
    reader: JsonLineReader<R>,
    opener: FrameOpener,
    poison: Poison,
}

/// The sending half: the JSON-line writer and the frame sealer.
#[derive(Debug)]
pub struct FrameSender<W> {
    writer: JsonLineWriter<W>,
    sealer: FrameSealer,
    poison: Poison,
}

impl<R: BufRead> FrameReceiver<R> {
    /// Whether an earlier error poisoned this half.
    pub fn is_poisoned(&self) -> bool {
        self.poison.is_set()
    }

    /// Marks both halves unusable.
    pub fn poison(&mut self) {
        self.poison.set();
        self.reader.poison();
    }

    /// The sequence the next accepted frame must carry.
    pub fn next_sequence(&self) -> Option<u64> {
        self.opener.next_sequence()
    }

    /// Reads and opens one frame; `Ok(None)` at a clean end of input.
    pub fn recv(&mut self) -> Result<Option<Message>, SessionError> {
        if self.poison.is_set() {
            return Err(SessionError::Poisoned);
        }
        let result = self.recv_inner();
        if result.is_err() {
            self.poison();
        }
        result
    }

    fn recv_inner(&mut self) -> Result<Option<Message>, SessionError> {
        let Some(frame) = self.reader.read::<Frame>()? else {
            return Ok(None);
        };
        Ok(Some(self.opener.open(frame)?))
    }

    /// Reads one frame and requires it; end of input is an error.
    pub fn recv_expected(&mut self, expected: &'static str) -> Result<Message, SessionError> {
        match self.recv()? {
            Some(m) => Ok(m),
            None => {
                self.poison();
                Err(SessionError::Closed { expected })
            }
        }
    }
}

impl<W: Write> FrameSender<W> {
    /// Whether an earlier error poisoned this half.
    pub fn is_poisoned(&self) -> bool {
        self.poison.is_set()
    }

    /// Marks both halves unusable.
    pub fn poison(&mut self) {
        self.poison.set();
        self.writer.poison();
    }

    /// The sequence the next sealed frame will carry.
    pub fn next_sequence(&self) -> Option<u64> {
        self.sealer.next_sequence()
    }

    /// Seals and writes one message.
    pub fn send(&mut self, message: Message) -> Result<(), SessionError> {
        if self.poison.is_set() {
            return Err(SessionError::Poisoned);
        }
        let result = self.send_inner(message);
        if result.is_err() {
            self.poison();
        }
        result
    }

    fn send_inner(&mut self, message: Message) -> Result<(), SessionError> {
        let frame = self.sealer.seal(message)?;
        self.writer.write(&frame)?;
        Ok(())
    }

    /// Gives the writer back (dropping it closes the peer's input).
    pub fn into_writer(self) -> W {
        self.writer.into_inner()
    }
}

/// The codec pair and the authenticator of one end, poisoned as a whole.
#[derive(Debug)]
pub struct FrameChannel<R, W> {
    rx: FrameReceiver<R>,
    tx: FrameSender<W>,
}

impl<R: BufRead, W: Write> FrameChannel<R, W> {
    /// A channel over `reader` and `writer`, authenticated by `auth`.
    pub fn new(reader: R, writer: W, auth: SessionAuthenticator) -> Self {
        let (sealer, opener) = auth.split();
        let poison = Poison::default();
        Self {
            rx: FrameReceiver {
                reader: JsonLineReader::new(reader),
                opener,
                poison: poison.clone(),
            },
            tx: FrameSender {
                writer: JsonLineWriter::new(writer),
                sealer,
                poison,
            },
        }
    }

    /// Whether an earlier error poisoned the channel.
    pub fn is_poisoned(&self) -> bool {
        self.rx.is_poisoned()
    }

    /// Marks the channel unusable.
    pub fn poison(&mut self) {
        self.rx.poison();
        self.tx.poison();
    }

    /// The sequence the next sealed frame will carry.
    pub fn next_send_sequence(&self) -> Option<u64> {
        self.tx.next_sequence()
    }

    /// The sequence the next accepted frame must carry.
    pub fn next_receive_sequence(&self) -> Option<u64> {
        self.rx.next_sequence()
    }

    /// Seals and writes one message.
    pub fn send(&mut self, message: Message) -> Result<(), SessionError> {
        self.tx.send(message)
    }

    /// Reads and opens one frame; `Ok(None)` at a clean end of input.
    pub fn recv(&mut self) -> Result<Option<Message>, SessionError> {
        self.rx.recv()
    }

    /// Reads one frame and requires it; end of input is an error.
    pub fn recv_expected(&mut self, expected: &'static str) -> Result<Message, SessionError> {
        self.rx.recv_expected(expected)
    }

    /// The two halves, for one reader owner and one writer owner (they
    /// still share one poison flag).
    pub fn split(self) -> (FrameReceiver<R>, FrameSender<W>) {
        (self.rx, self.tx)
    }

    /// Gives the writer back (dropping it closes the peer's input).
    pub fn into_writer(self) -> W {
        self.tx.into_writer()
    }
}
