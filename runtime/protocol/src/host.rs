//! The host side of a session, over pipes the caller already owns (the
//! runtime spawns the worker and writes the bootstrap preamble first).
//!
//! The host enforces the manifest on its own side as well: it refuses to
//! send a call for an ungranted tool, past `max_calls`, with a payload of
//! the wrong format or over `max_input_bytes`, or past the session's
//! [`MAX_SESSION_REQUEST_IDS`] (these refusals do not poison the session),
//! and it treats a reply over `max_output_bytes`, of the wrong format, for
//! another request, or of an unexpected type as a protocol violation that
//! poisons the session.
//!
//! The protocol has no error frame: a worker that cannot serve a request
//! ends the session. The host reports that as
//! [`SessionError::WorkerEnded`], naming the request that went unanswered.

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};

use serde_json::Value;

use crate::auth::SessionAuthenticator;
use crate::bootstrap::SessionKey;
use crate::channel::{FrameChannel, PayloadSide, SessionError, check_payload, payload_for};
use crate::manifest::{CapabilityManifest, Grant, GrantFormat};
use crate::message::SessionRole;
use crate::message::{
    CancelOutcome, CancelRequest, CompensationRequest, DispatchRequest, Invocation,
    MAX_SESSION_REQUEST_IDS, Message, OperationResult, OperationStatus, ReconcileRequest, Version,
};
use crate::token::Token;

/// An open, authenticated host session.
#[derive(Debug)]
pub struct HostSession<R, W> {
    channel: FrameChannel<BufReader<R>, W>,
    manifest: CapabilityManifest,
    calls: BTreeMap<Token, u32>,
    compensations: BTreeMap<Token, u32>,
    next_id: u64,
    ids_used: usize,
    pending: Option<Pending>,
}

/// The call in flight and what has been answered about it.
#[derive(Debug)]
struct Pending {
    request_id: Token,
    tool: Token,
    format: GrantFormat,
    max_output: u32,
    cancel: Option<CancelRequest>,
    cancel_answered: bool,
    result_received: bool,
}

/// One answer about the call in flight.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// The call's result: the payload value (a JSON string for a `text`
    /// grant).
    Finished {
        /// The call's request id.
        request_id: Token,
        /// The output payload's value.
        output: Value,
    },
    /// The worker acknowledged the cancel: the effect stopped and no result
    /// follows.
    Cancelled {
        /// The call's request id.
        request_id: Token,
    },
    /// The cancel came after the result, which was reported first.
    TooLate {
        /// The call's request id.
        request_id: Token,
    },
    /// The call cannot be cancelled; its result still follows.
    Unsupported {
        /// The call's request id.
        request_id: Token,
    },
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
            next_id: 1,
            ids_used: 0,
            pending: None,
        })
    }

    /// The manifest the session was opened with.
    pub fn manifest(&self) -> &CapabilityManifest {
        &self.manifest
    }

    /// The session's id.
    pub fn session_id(&self) -> &Token {
        &self.manifest.session_id
    }

    /// Whether an earlier error poisoned the session.
    pub fn is_poisoned(&self) -> bool {
        self.channel.is_poisoned()
    }

    /// Calls one granted tool and waits for its result. For a `json` grant
    /// the input must be a JSON object or array; for a `text` grant, a JSON
    /// string.
    pub fn invoke(&mut self, tool: &str, input: Value) -> Result<Value, SessionError> {
        let request_id = self.start(tool, input)?;
        match self.next_event()? {
            CallEvent::Finished {
                request_id: done,
                output,
            } if done == request_id => Ok(output),
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
        let grant = self.grant(tool)?;
        let payload = payload_for(
            &grant.tool,
            grant.format,
            PayloadSide::Input,
            input,
            grant.max_input_bytes,
        )?;
        self.spend_call(&grant)?;
        let request_id = self.next_id("r")?;
        self.send_request(
            Message::Invoke {
                invocation: Invocation {
                    protocol_version: Version,
                    session_id: self.manifest.session_id.clone(),
                    request_id: request_id.clone(),
                    tool: grant.tool.clone(),
                    payload,
                },
            },
            &request_id,
            &grant.tool,
        )?;
        self.pending = Some(Pending {
            request_id: request_id.clone(),
            tool: grant.tool,
            format: grant.format,
            max_output: grant.max_output_bytes,
            cancel: None,
            cancel_answered: false,
            result_received: false,
        });
        Ok(request_id)
    }

    /// Asks the worker to cancel the call in flight, under a fresh
    /// cancellation id. The answer arrives through [`Self::next_event`].
    pub fn cancel(&mut self, request_id: &Token) -> Result<(), SessionError> {
        if self.channel.is_poisoned() {
            return Err(SessionError::Poisoned);
        }
        let tool = match &self.pending {
            Some(p) if &p.request_id == request_id && p.cancel.is_none() && !p.result_received => {
                p.tool.clone()
            }
            _ => return Err(SessionError::NotCancellable(request_id.clone())),
        };
        let request = CancelRequest {
            protocol_version: Version,
            session_id: self.manifest.session_id.clone(),
            cancellation_id: self.next_id("c")?,
            request_id: request_id.clone(),
            tool,
        };
        if let Some(p) = self.pending.as_mut() {
            p.cancel = Some(request.clone());
        }
        let (id, tool) = (request.cancellation_id.clone(), request.tool.clone());
        self.send_request(Message::Cancel { request }, &id, &tool)
    }

    /// Whether a call is in flight (started and not yet fully answered).
    pub fn call_in_flight(&self) -> Option<&Token> {
        self.pending.as_ref().map(|p| &p.request_id)
    }

    /// Reads the next answer about the call in flight.
    ///
    /// The worker's answers are checked against what was asked: a result
    /// only for the call in flight and only once; a cancellation result
    /// only for the cancel that was sent, repeating its ids and tool, with
    /// `acknowledged` only before any result (and then no result may
    /// follow), `too_late` only after the result, `unsupported` only before
    /// the result (which still follows). Anything else poisons the session.
    pub fn next_event(&mut self) -> Result<CallEvent, SessionError> {
        if self.channel.is_poisoned() {
            return Err(SessionError::Poisoned);
        }
        let Some(pending) = self.pending.as_ref() else {
            return Err(SessionError::Idle);
        };
        let expected = if pending.cancel.is_some() && !pending.cancel_answered {
            "result or cancellation_result"
        } else {
            "result"
        };
        let (kind, request, tool) = ("invoke", pending.request_id.clone(), pending.tool.clone());
        let reply = self.recv_reply(kind, request, tool)?;
        let Some(p) = self.pending.as_mut() else {
            return Err(SessionError::Idle);
        };
        match reply {
            Message::Result { result }
                if result.request_id == p.request_id && !p.result_received =>
            {
                if let Err(e) = check_payload(
                    &p.tool,
                    p.format,
                    PayloadSide::Output,
                    &result.payload,
                    p.max_output,
                ) {
                    return Err(self.violation(e));
                }
                p.result_received = true;
                if p.cancel.is_none() || p.cancel_answered {
                    self.pending = None;
                }
                Ok(CallEvent::Finished {
                    request_id: result.request_id,
                    output: result.payload.into_value(),
                })
            }
            Message::CancellationResult { result }
                if p.cancel.as_ref().is_some_and(|c| result.matches(c)) && !p.cancel_answered =>
            {
                let request_id = result.request_id;
                match (result.outcome, p.result_received) {
                    (CancelOutcome::Acknowledged, false) => {
                        self.pending = None;
                        Ok(CallEvent::Cancelled { request_id })
                    }
                    (CancelOutcome::TooLate, true) => {
                        self.pending = None;
                        Ok(CallEvent::TooLate { request_id })
                    }
                    (CancelOutcome::Unsupported, false) => {
                        p.cancel_answered = true;
                        Ok(CallEvent::Unsupported { request_id })
                    }
                    _ => Err(self.violation(SessionError::Unexpected {
                        expected,
                        got: "cancellation_result",
                    })),
                }
            }
            Message::Result { result } if result.request_id != p.request_id => {
                let expected_id = p.request_id.clone();
                Err(self.violation(SessionError::RequestMismatch {
                    expected: expected_id,
                    got: result.request_id.clone(),
                }))
            }
            Message::CancellationResult { .. } if p.cancel.is_some() && !p.cancel_answered => {
                Err(self.violation(SessionError::ReplyMismatch {
                    kind: "cancellation_result",
                    field: "cancellation id, request id or tool",
                }))
            }
            other => Err(self.violation(SessionError::Unexpected {
                expected,
                got: other.kind(),
            })),
        }
    }

    /// Dispatches one durable operation of a granted tool (counted against
    /// its `max_calls`, like `invoke`) and waits for its status.
    pub fn dispatch(
        &mut self,
        tool: &str,
        operation_key: &Token,
        input: Value,
    ) -> Result<OperationStatus, SessionError> {
        self.idle()?;
        let grant = self.grant(tool)?;
        let payload = payload_for(
            &grant.tool,
            grant.format,
            PayloadSide::Input,
            input,
            grant.max_input_bytes,
        )?;
        self.spend_call(&grant)?;
        let request = DispatchRequest {
            protocol_version: Version,
            session_id: self.manifest.session_id.clone(),
            request_id: self.next_id("r")?,
            tool: grant.tool.clone(),
            operation_key: operation_key.clone(),
            payload,
        };
        self.send_request(
            Message::DispatchOperation {
                request: request.clone(),
            },
            &request.request_id,
            &grant.tool,
        )?;
        let reply = self.recv_reply(
            "dispatch_operation",
            request.request_id.clone(),
            grant.tool.clone(),
        )?;
        match reply {
            Message::OperationResult { result } => {
                self.operation_status(&grant, &request.request_id, operation_key, result)
            }
            other => Err(self.violation(SessionError::Unexpected {
                expected: "operation_result",
                got: other.kind(),
            })),
        }
    }

    /// Asks the worker for the status of one operation of a granted tool
    /// (for example in a fresh session, after the session that dispatched
    /// it was stopped). Spends a request id but no call.
    pub fn reconcile(
        &mut self,
        tool: &str,
        operation_key: &Token,
    ) -> Result<OperationStatus, SessionError> {
        self.idle()?;
        let grant = self.grant(tool)?;
        let request = ReconcileRequest {
            protocol_version: Version,
            session_id: self.manifest.session_id.clone(),
            request_id: self.next_id("r")?,
            tool: grant.tool.clone(),
            operation_key: operation_key.clone(),
        };
        self.send_request(
            Message::ReconcileOperation {
                request: request.clone(),
            },
            &request.request_id,
            &grant.tool,
        )?;
        let reply = self.recv_reply(
            "reconcile_operation",
            request.request_id.clone(),
            grant.tool.clone(),
        )?;
        match reply {
            Message::ReconciledOperation { result } => {
                self.operation_status(&grant, &request.request_id, operation_key, result)
            }
            other => Err(self.violation(SessionError::Unexpected {
                expected: "reconciled_operation",
                got: other.kind(),
            })),
        }
    }

    /// Asks the worker to run the compensating effect `compensation_key`
    /// (which must start with `cmp-`) for one operation of a granted tool,
    /// within the worker's `tenant_scope`. At most the grant's
    /// `max_compensations` per session; the request carries the grant's
    /// fingerprint.
    pub fn compensate(
        &mut self,
        tool: &str,
        operation_key: &Token,
        compensation_key: &Token,
        tenant_scope: &Token,
        input: Value,
    ) -> Result<OperationStatus, SessionError> {
        self.idle()?;
        let grant = self.grant(tool)?;
        if !compensation_key
            .as_str()
            .starts_with(crate::message::COMPENSATION_KEY_PREFIX)
        {
            return Err(SessionError::InvalidRequest(
                crate::message::MessageError::CompensationKey(compensation_key.clone()),
            ));
        }
        if grant.max_compensations == 0 {
            return Err(SessionError::CompensationNotGranted(grant.tool.clone()));
        }
        let used = self.compensations.get(&grant.tool).copied().unwrap_or(0);
        if used >= grant.max_compensations {
            return Err(SessionError::CompensationLimit {
                tool: grant.tool.clone(),
                max: grant.max_compensations,
            });
        }
        let payload = payload_for(
            &grant.tool,
            grant.format,
            PayloadSide::Input,
            input,
            grant.max_input_bytes,
        )?;
        let grant_fingerprint = crate::message::compensation_fingerprint(&grant)
            .map_err(|e| SessionError::Codec(crate::codec::CodecError::Encode(e)))?;
        let request = CompensationRequest {
            protocol_version: Version,
            session_id: self.manifest.session_id.clone(),
            request_id: self.next_id("r")?,
            tool: grant.tool.clone(),
            operation_key: operation_key.clone(),
            compensation_key: compensation_key.clone(),
            tenant_scope: tenant_scope.clone(),
            grant_fingerprint,
            payload,
        };
        self.compensations.insert(grant.tool.clone(), used + 1);
        self.send_request(
            Message::CompensateOperation {
                request: request.clone(),
            },
            &request.request_id,
            &grant.tool,
        )?;
        let reply = self.recv_reply(
            "compensate_operation",
            request.request_id.clone(),
            grant.tool.clone(),
        )?;
        match reply {
            Message::CompensationResult { result } if result.matches(&request) => {
                self.checked_status(&grant, result.status)
            }
            Message::CompensationResult { .. } => {
                Err(self.violation(SessionError::ReplyMismatch {
                    kind: "compensation_result",
                    field: "request id, tool, keys, scope or fingerprint",
                }))
            }
            other => Err(self.violation(SessionError::Unexpected {
                expected: "compensation_result",
                got: other.kind(),
            })),
        }
    }

    /// Sends `close_session` and closes the worker's stdin. With a call
    /// still in flight nothing is sent: both pipes are closed, the call is
    /// abandoned and [`SessionError::Abandoned`] says so (its effect is
    /// indeterminate).
    pub fn close(mut self) -> Result<(), SessionError> {
        if let Some(p) = &self.pending {
            return Err(SessionError::Abandoned(p.request_id.clone()));
        }
        self.channel.send(Message::CloseSession {
            protocol_version: Version,
            session_id: self.manifest.session_id.clone(),
        })?;
        drop(self.channel.into_writer());
        Ok(())
    }

    /// Sends one raw request and returns the worker's authenticated reply,
    /// for patterns the methods above do not cover. No manifest check is
    /// made and no request id is counted.
    pub fn request(&mut self, message: Message) -> Result<Message, SessionError> {
        self.channel.send(message)?;
        self.channel.recv_expected("a reply")
    }

    /// The underlying channel, for callers that need another pattern.
    pub fn channel_mut(&mut self) -> &mut FrameChannel<BufReader<R>, W> {
        &mut self.channel
    }

    /// The grant for `tool`; refused without poisoning if there is none.
    fn grant(&self, tool: &str) -> Result<Grant, SessionError> {
        self.manifest
            .grant(tool)
            .cloned()
            .ok_or_else(|| SessionError::NotGranted(tool.to_owned()))
    }

    /// Counts one call against the grant's `max_calls`.
    fn spend_call(&mut self, grant: &Grant) -> Result<(), SessionError> {
        let used = self.calls.get(&grant.tool).copied().unwrap_or(0);
        if used >= grant.max_calls {
            return Err(SessionError::CallLimit {
                tool: grant.tool.clone(),
                max: grant.max_calls,
            });
        }
        if self.ids_used >= MAX_SESSION_REQUEST_IDS {
            return Err(SessionError::RequestLimit(MAX_SESSION_REQUEST_IDS));
        }
        self.calls.insert(grant.tool.clone(), used + 1);
        Ok(())
    }

    /// A fresh request id (`r-N`) or cancellation id (`c-N`); both share the
    /// session's request-id budget.
    fn next_id(&mut self, prefix: &str) -> Result<Token, SessionError> {
        if self.ids_used >= MAX_SESSION_REQUEST_IDS {
            return Err(SessionError::RequestLimit(MAX_SESSION_REQUEST_IDS));
        }
        let n = self.next_id;
        self.next_id = n.saturating_add(1);
        self.ids_used += 1;
        Token::new(format!("{prefix}-{n}")).map_err(|_| SessionError::Poisoned)
    }

    fn idle(&self) -> Result<(), SessionError> {
        if self.channel.is_poisoned() {
            return Err(SessionError::Poisoned);
        }
        match &self.pending {
            Some(p) => Err(SessionError::Busy(p.request_id.clone())),
            None => Ok(()),
        }
    }

    /// Sends one request. A worker that already ended the session shows as
    /// a closed pipe: that is reported as [`SessionError::WorkerEnded`].
    fn send_request(
        &mut self,
        message: Message,
        request: &Token,
        tool: &Token,
    ) -> Result<(), SessionError> {
        let kind = message.kind();
        match self.channel.send(message) {
            Err(SessionError::Codec(crate::codec::CodecError::Io(e)))
                if e.kind() == std::io::ErrorKind::BrokenPipe =>
            {
                Err(SessionError::WorkerEnded {
                    kind,
                    request: request.clone(),
                    tool: tool.clone(),
                })
            }
            other => other,
        }
    }

    /// Reads the reply to an outstanding request. End of input means the
    /// worker ended the session instead of answering.
    fn recv_reply(
        &mut self,
        kind: &'static str,
        request: Token,
        tool: Token,
    ) -> Result<Message, SessionError> {
        match self.channel.recv()? {
            Some(m) => Ok(m),
            None => Err(self.violation(SessionError::WorkerEnded {
                kind,
                request,
                tool,
            })),
        }
    }

    /// Checks an operation result against its request and grant.
    fn operation_status(
        &mut self,
        grant: &Grant,
        request_id: &Token,
        operation_key: &Token,
        result: OperationResult,
    ) -> Result<OperationStatus, SessionError> {
        let field = if &result.request_id != request_id {
            Some("request id")
        } else if result.tool != grant.tool {
            Some("tool")
        } else if &result.operation_key != operation_key {
            Some("operation key")
        } else {
            None
        };
        if let Some(field) = field {
            return Err(self.violation(SessionError::ReplyMismatch {
                kind: "operation_result",
                field,
            }));
        }
        self.checked_status(grant, result.status)
    }

    /// A `succeeded` payload must fit the grant's format and output bound.
    fn checked_status(
        &mut self,
        grant: &Grant,
        status: OperationStatus,
    ) -> Result<OperationStatus, SessionError> {
        if let OperationStatus::Succeeded { payload } = &status
            && let Err(e) = check_payload(
                &grant.tool,
                grant.format,
                PayloadSide::Output,
                payload,
                grant.max_output_bytes,
            )
        {
            return Err(self.violation(e));
        }
        Ok(status)
    }

    fn violation(&mut self, e: SessionError) -> SessionError {
        self.channel.poison();
        e
    }
}
