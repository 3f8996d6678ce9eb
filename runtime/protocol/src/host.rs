//! The host side of a session, over pipes the caller already owns (the
//! runtime spawns the worker and writes the bootstrap preamble first).
//!
//! The host enforces the manifest on its own side as well: it refuses to
//! send a call for an ungranted tool, past `max_calls`, or with input over
//! `max_input_bytes` (these refusals do not poison the session), and it
//! treats a reply over `max_output_bytes`, for another request, or of an
//! unexpected type as a protocol violation that poisons the session.

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};

use serde_json::Value;

use crate::auth::{SessionAuthenticator, SessionRole};
use crate::bootstrap::SessionKey;
use crate::channel::{FrameChannel, SessionError, check_payload};
use crate::manifest::CapabilityManifest;
use crate::manifest::GrantFormat;
use crate::message::{CancelDisposition, Message, OperationState, Outcome};
use crate::token::Token;

/// An open, authenticated host session.
#[derive(Debug)]
pub struct HostSession<R, W> {
    channel: FrameChannel<BufReader<R>, W>,
    manifest: CapabilityManifest,
    calls: BTreeMap<Token, u32>,
    compensations: BTreeMap<Token, u32>,
    next_request: u64,
    pending: Option<Pending>,
}

/// The call in flight and what has been answered about it.
#[derive(Debug)]
struct Pending {
    request_id: Token,
    tool: Token,
    format: GrantFormat,
    max_output: u32,
    cancel_sent: bool,
    cancel_answered: bool,
    result_received: bool,
}

/// One answer about the call in flight.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// The call's result (a tool error is `Err`).
    Finished {
        request_id: Token,
        output: Result<Value, String>,
    },
    /// The worker acknowledged the cancel: the effect stopped and no result
    /// follows.
    Cancelled { request_id: Token },
    /// The cancel came after the result, which was reported first.
    TooLate { request_id: Token },
    /// The call cannot be cancelled; its result still follows.
    Unsupported { request_id: Token },
}

impl<R: Read, W: Write> HostSession<R, W> {
    /// Validates the manifest, then seals and sends `open_session` as the
    /// host's frame 1. The worker does not reply to it.
    pub fn open(
        manifest: CapabilityManifest,
        key: SessionKey,
        worker_stdin: W,
        worker_stdout: R,
    ) -> Result<Self, SessionError> {
        manifest.validate()?;
        let auth = SessionAuthenticator::new(manifest.session_id.clone(), key, SessionRole::Host);
        let mut channel = FrameChannel::new(BufReader::new(worker_stdout), worker_stdin, auth);
        channel.send(Message::OpenSession {
            manifest: manifest.clone(),
        })?;
        Ok(Self {
            channel,
            manifest,
            calls: BTreeMap::new(),
            compensations: BTreeMap::new(),
            next_request: 1,
            pending: None,
        })
    }

    pub fn manifest(&self) -> &CapabilityManifest {
        &self.manifest
    }

    pub fn is_poisoned(&self) -> bool {
        self.channel.is_poisoned()
    }

    /// Calls one granted tool and waits for its result.
    ///
    /// A tool's error result is returned as [`SessionError::Tool`] and
    /// leaves the session usable.
    pub fn invoke(&mut self, tool: &str, input: Value) -> Result<Value, SessionError> {
        let request_id = self.start(tool, input)?;
        match self.next_event()? {
            CallEvent::Finished {
                request_id: done,
                output,
            } if done == request_id => output.map_err(|message| SessionError::Tool {
                tool: tool.to_owned(),
                message,
            }),
            // `next_event` only reports events for the pending call, and no
            // cancel was sent, so only `Finished` can arrive.
            _ => Err(self.violation(SessionError::Unexpected {
                expected: "result",
                got: "cancellation_result",
            })),
        }
    }

    /// Sends one `invoke` and returns its request id without waiting; one
    /// call may be in flight at a time. Collect the answer with
    /// [`Self::next_event`]; [`Self::cancel`] may be sent in between.
    pub fn start(&mut self, tool: &str, input: Value) -> Result<Token, SessionError> {
        self.idle()?;
        let (tool, format, max_out) = self.admit(tool, &input)?;
        let request_id = self.next_request_id()?;
        self.channel.send(Message::Invoke {
            request_id: request_id.clone(),
            tool: tool.clone(),
            input,
        })?;
        self.pending = Some(Pending {
            request_id: request_id.clone(),
            tool,
            format,
            max_output: max_out,
            cancel_sent: false,
            cancel_answered: false,
            result_received: false,
        });
        Ok(request_id)
    }

    /// Asks the worker to cancel the call in flight. The answer arrives
    /// through [`Self::next_event`].
    pub fn cancel(&mut self, request_id: &Token) -> Result<(), SessionError> {
        if self.channel.is_poisoned() {
            return Err(SessionError::Poisoned);
        }
        match &mut self.pending {
            Some(p) if &p.request_id == request_id && !p.cancel_sent && !p.result_received => {
                p.cancel_sent = true;
            }
            _ => return Err(SessionError::NotCancellable(request_id.to_string())),
        }
        self.channel.send(Message::Cancel {
            request_id: request_id.clone(),
        })
    }

    /// Whether a call is in flight (started and not yet fully answered).
    pub fn call_in_flight(&self) -> Option<&Token> {
        self.pending.as_ref().map(|p| &p.request_id)
    }

    /// Reads the next answer about the call in flight.
    ///
    /// The worker's answers are checked against what was asked: a result
    /// only for the call in flight and only once; `acknowledged` only after
    /// a cancel and before any result (and then no result may follow);
    /// `too_late` only after a cancel and after the result; `unsupported`
    /// only after a cancel and before the result (which still follows).
    /// Anything else poisons the session.
    pub fn next_event(&mut self) -> Result<CallEvent, SessionError> {
        if self.channel.is_poisoned() {
            return Err(SessionError::Poisoned);
        }
        let Some(pending) = self.pending.as_ref() else {
            return Err(SessionError::Idle);
        };
        let expected = if pending.cancel_sent && !pending.cancel_answered {
            "result or cancellation_result"
        } else {
            "result"
        };
        let reply = self.channel.recv_expected(expected)?;
        let Some(p) = self.pending.as_mut() else {
            return Err(SessionError::Idle);
        };
        match reply {
            Message::Result {
                request_id,
                outcome,
            } if request_id == p.request_id && !p.result_received => {
                let output = match outcome {
                    Outcome::Ok(output) => {
                        if let Err(e) =
                            check_payload(&p.tool, p.format, "output", &output, p.max_output)
                        {
                            return Err(self.violation(e));
                        }
                        Ok(output)
                    }
                    Outcome::Error(message) => Err(message),
                };
                p.result_received = true;
                if !p.cancel_sent || p.cancel_answered {
                    self.pending = None;
                }
                Ok(CallEvent::Finished { request_id, output })
            }
            Message::CancellationResult {
                request_id,
                disposition,
            } if request_id == p.request_id && p.cancel_sent && !p.cancel_answered => {
                match (disposition, p.result_received) {
                    (CancelDisposition::Acknowledged, false) => {
                        self.pending = None;
                        Ok(CallEvent::Cancelled { request_id })
                    }
                    (CancelDisposition::TooLate, true) => {
                        self.pending = None;
                        Ok(CallEvent::TooLate { request_id })
                    }
                    (CancelDisposition::Unsupported, false) => {
                        p.cancel_answered = true;
                        Ok(CallEvent::Unsupported { request_id })
                    }
                    _ => Err(self.violation(SessionError::Unexpected {
                        expected,
                        got: "cancellation_result",
                    })),
                }
            }
            Message::Result { request_id, .. } | Message::CancellationResult { request_id, .. }
                if request_id != p.request_id =>
            {
                let expected_id = p.request_id.to_string();
                Err(self.violation(SessionError::RequestMismatch {
                    expected: expected_id,
                    got: request_id.to_string(),
                }))
            }
            other => Err(self.violation(SessionError::Unexpected {
                expected,
                got: other.kind(),
            })),
        }
    }

    /// Checks a call of `tool` with `input` against the manifest and counts
    /// it. Nothing is sent; a refusal does not poison the session.
    fn admit(
        &mut self,
        tool: &str,
        input: &Value,
    ) -> Result<(Token, GrantFormat, u32), SessionError> {
        let Some(grant) = self.manifest.grant(tool) else {
            return Err(SessionError::NotGranted(tool.to_owned()));
        };
        let tool = grant.tool.clone();
        let (format, max_calls, max_in, max_out) = (
            grant.format,
            grant.max_calls,
            grant.max_input_bytes,
            grant.max_output_bytes,
        );
        let used = self.calls.get(&tool).copied().unwrap_or(0);
        if used >= max_calls {
            return Err(SessionError::CallLimit {
                tool: tool.to_string(),
                max: max_calls,
            });
        }
        check_payload(&tool, format, "input", input, max_in)?;
        self.calls.insert(tool.clone(), used + 1);
        Ok((tool, format, max_out))
    }

    fn idle(&self) -> Result<(), SessionError> {
        if self.channel.is_poisoned() {
            return Err(SessionError::Poisoned);
        }
        match &self.pending {
            Some(p) => Err(SessionError::Busy(p.request_id.to_string())),
            None => Ok(()),
        }
    }

    /// Dispatches one durable operation of a granted tool (counted against
    /// its `max_calls`, like `invoke`) and waits for its outcome.
    pub fn dispatch(
        &mut self,
        tool: &str,
        operation_id: &Token,
        input: Value,
    ) -> Result<Value, SessionError> {
        self.idle()?;
        let (tool, format, max_out) = self.admit(tool, &input)?;
        self.channel.send(Message::DispatchOperation {
            operation_id: operation_id.clone(),
            tool: tool.clone(),
            input,
        })?;
        match self.channel.recv_expected("operation_result")? {
            Message::OperationResult {
                operation_id: got,
                outcome,
            } if &got == operation_id => self.outcome(&tool, format, max_out, outcome),
            other => Err(self.mismatch("operation_result", operation_id, other)),
        }
    }

    /// Asks the worker to compensate one operation of a granted tool; at
    /// most the grant's `max_compensations` per session.
    pub fn compensate(&mut self, tool: &str, operation_id: &Token) -> Result<Value, SessionError> {
        self.idle()?;
        let Some(grant) = self.manifest.grant(tool) else {
            return Err(SessionError::NotGranted(tool.to_owned()));
        };
        let (tool, format, max, max_out) = (
            grant.tool.clone(),
            grant.format,
            grant.max_compensations,
            grant.max_output_bytes,
        );
        let used = self.compensations.get(&tool).copied().unwrap_or(0);
        if used >= max {
            return Err(SessionError::CompensationLimit {
                tool: tool.to_string(),
                max,
            });
        }
        self.compensations.insert(tool.clone(), used + 1);
        self.channel.send(Message::CompensateOperation {
            operation_id: operation_id.clone(),
            tool: tool.clone(),
        })?;
        match self.channel.recv_expected("compensation_result")? {
            Message::CompensationResult {
                operation_id: got,
                outcome,
            } if &got == operation_id => self.outcome(&tool, format, max_out, outcome),
            other => Err(self.mismatch("compensation_result", operation_id, other)),
        }
    }

    /// Asks the worker what became of one operation of a granted tool (in a
    /// fresh session, after the session that dispatched it was stopped).
    pub fn reconcile(
        &mut self,
        tool: &str,
        operation_id: &Token,
    ) -> Result<OperationState, SessionError> {
        self.idle()?;
        let Some(grant) = self.manifest.grant(tool) else {
            return Err(SessionError::NotGranted(tool.to_owned()));
        };
        let tool = grant.tool.clone();
        self.channel.send(Message::ReconcileOperation {
            operation_id: operation_id.clone(),
            tool,
        })?;
        match self.channel.recv_expected("reconciled_operation")? {
            Message::ReconciledOperation {
                operation_id: got,
                state,
            } if &got == operation_id => Ok(state),
            other => Err(self.mismatch("reconciled_operation", operation_id, other)),
        }
    }

    /// Checks an outcome's value against the grant; a tool error does not
    /// poison, an oversized or mistyped value does.
    fn outcome(
        &mut self,
        tool: &Token,
        format: GrantFormat,
        max_out: u32,
        outcome: Outcome,
    ) -> Result<Value, SessionError> {
        match outcome {
            Outcome::Ok(output) => match check_payload(tool, format, "output", &output, max_out) {
                Ok(()) => Ok(output),
                Err(e) => Err(self.violation(e)),
            },
            Outcome::Error(message) => Err(SessionError::Tool {
                tool: tool.to_string(),
                message,
            }),
        }
    }

    /// The error for a reply of the wrong type or for another operation.
    fn mismatch(&mut self, expected: &'static str, id: &Token, got: Message) -> SessionError {
        let e = match &got {
            Message::OperationResult { operation_id, .. }
            | Message::CompensationResult { operation_id, .. }
            | Message::ReconciledOperation { operation_id, .. }
                if got.kind() == expected =>
            {
                SessionError::RequestMismatch {
                    expected: id.to_string(),
                    got: operation_id.to_string(),
                }
            }
            _ => SessionError::Unexpected {
                expected,
                got: got.kind(),
            },
        };
        self.violation(e)
    }

    /// Sends `close_session` and closes the worker's stdin. With a call
    /// still in flight nothing is sent: both pipes are closed, the call is
    /// abandoned and [`SessionError::Abandoned`] says so (its effect is
    /// indeterminate).
    pub fn close(mut self) -> Result<(), SessionError> {
        if let Some(p) = &self.pending {
            return Err(SessionError::Abandoned(p.request_id.to_string()));
        }
        self.channel.send(Message::CloseSession {})?;
        drop(self.channel.into_writer());
        Ok(())
    }

    /// Sends one raw request and returns the worker's authenticated reply,
    /// for message types [`Self::invoke`] does not cover.
    pub fn request(&mut self, message: Message) -> Result<Message, SessionError> {
        self.channel.send(message)?;
        self.channel.recv_expected("a reply")
    }

    /// The underlying channel, for callers that need another pattern.
    pub fn channel_mut(&mut self) -> &mut FrameChannel<BufReader<R>, W> {
        &mut self.channel
    }

    fn next_request_id(&mut self) -> Result<Token, SessionError> {
        let n = self.next_request;
        self.next_request = n.saturating_add(1);
        Token::new(format!("r-{n}")).map_err(|_| SessionError::Poisoned)
    }

    fn violation(&mut self, e: SessionError) -> SessionError {
        self.channel.poison();
        e
    }
}
