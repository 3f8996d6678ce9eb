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
//! `compensate_operation` get an error outcome and `reconcile_operation`
//! gets state `unknown`. A synchronous worker has always answered a request
//! before it reads the next frame, so `cancel` gets `too_late` for a request
//! it answered and `unsupported` otherwise.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::fd::AsFd;

use serde_json::Value;

use crate::auth::{SessionAuthenticator, SessionRole};
use crate::bootstrap::PrivatePipeWorkerBootstrap;
use crate::channel::{FrameChannel, SessionError, check_payload};
use crate::manifest::CapabilityManifest;
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
                Message::DispatchOperation { operation_id, .. } => Message::OperationResult {
                    operation_id,
                    outcome: Outcome::Error(
                        "durable operations are not supported by this worker".into(),
                    ),
                },
                Message::CompensateOperation { operation_id } => Message::CompensationResult {
                    operation_id,
                    outcome: Outcome::Error("compensation is not supported by this worker".into()),
                },
                Message::ReconcileOperation { operation_id } => Message::ReconciledOperation {
                    operation_id,
                    state: OperationState::Unknown,
                },
                Message::CloseSession {} => return Ok(ServeEnd::Closed),
                other => {
                    self.channel.poison();
                    return Err(SessionError::Unexpected {
                        expected: "a host request",
                        got: other.kind(),
                    });
                }
            };
            self.channel.send(reply)?;
        }
    }

    fn call<F>(&mut self, tool: &Token, input: Value, handler: &mut F) -> Outcome
    where
        F: FnMut(&Token, Value, &CapabilityManifest) -> Result<Value, String>,
    {
        match self.checked_call(tool, input, handler) {
            Ok(v) => Outcome::Ok(v),
            Err(e) => Outcome::Error(e),
        }
    }

    fn checked_call<F>(
        &mut self,
        tool: &Token,
        input: Value,
        handler: &mut F,
    ) -> Result<Value, String>
    where
        F: FnMut(&Token, Value, &CapabilityManifest) -> Result<Value, String>,
    {
        let Some(grant) = self.manifest.grant(tool.as_str()) else {
            return Err(SessionError::NotGranted(tool.to_string()).to_string());
        };
        let (format, max_calls, max_in, max_out) = (
            grant.format,
            grant.max_calls,
            grant.max_input_bytes,
            grant.max_output_bytes,
        );
        let used = self.calls.entry(tool.clone()).or_insert(0);
        if *used >= max_calls {
            return Err(SessionError::CallLimit {
                tool: tool.to_string(),
                max: max_calls,
            }
            .to_string());
        }
        *used += 1;
        check_payload(tool, format, "input", &input, max_in).map_err(|e| e.to_string())?;
        let output = handler(tool, input, &self.manifest)?;
        check_payload(tool, format, "output", &output, max_out).map_err(|e| e.to_string())?;
        Ok(output)
    }
}
