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
use crate::message::{Message, Outcome};
use crate::token::Token;

/// An open, authenticated host session.
#[derive(Debug)]
pub struct HostSession<R, W> {
    channel: FrameChannel<BufReader<R>, W>,
    manifest: CapabilityManifest,
    calls: BTreeMap<Token, u32>,
    next_request: u64,
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
            next_request: 1,
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
        if self.channel.is_poisoned() {
            return Err(SessionError::Poisoned);
        }
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
        check_payload(&tool, format, "input", &input, max_in)?;
        let request_id = self.next_request_id()?;
        self.calls.insert(tool.clone(), used + 1);
        self.channel.send(Message::Invoke {
            request_id: request_id.clone(),
            tool: tool.clone(),
            input,
        })?;
        let reply = self.channel.recv_expected("result")?;
        let (got_id, outcome) = match reply {
            Message::Result {
                request_id,
                outcome,
            } => (request_id, outcome),
            other => {
                return Err(self.violation(SessionError::Unexpected {
                    expected: "result",
                    got: other.kind(),
                }));
            }
        };
        if got_id != request_id {
            return Err(self.violation(SessionError::RequestMismatch {
                expected: request_id.to_string(),
                got: got_id.to_string(),
            }));
        }
        match outcome {
            Outcome::Ok(output) => {
                if let Err(e) = check_payload(&tool, format, "output", &output, max_out) {
                    return Err(self.violation(e));
                }
                Ok(output)
            }
            Outcome::Error(message) => Err(SessionError::Tool {
                tool: tool.to_string(),
                message,
            }),
        }
    }

    /// Sends `close_session` and closes the worker's stdin.
    pub fn close(mut self) -> Result<(), SessionError> {
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
