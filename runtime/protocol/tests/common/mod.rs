//! Message constructors and pipe plumbing shared by the session tests.

#![allow(dead_code)]

use std::io::{BufReader, PipeReader, PipeWriter, pipe};

use serde_json::Value;
use splash_protocol::{
    CancelOutcome, CancelRequest, CancelResult, FrameChannel, Invocation, Message, Payload,
    PrivatePipeWorkerBootstrap, SessionAuthenticator, SessionKey, SessionRole, Token, ToolResult,
    Version,
};

pub fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

pub fn invoke(session: &str, id: &str, tool: &str, value: Value) -> Message {
    Message::Invoke {
        invocation: Invocation {
            protocol_version: Version,
            session_id: tok(session),
            request_id: tok(id),
            tool: tok(tool),
            payload: Payload::Json(value),
        },
    }
}

pub fn result(session: &str, id: &str, value: Value) -> Message {
    Message::Result {
        result: ToolResult {
            protocol_version: Version,
            session_id: tok(session),
            request_id: tok(id),
            payload: Payload::Json(value),
        },
    }
}

pub fn cancel(session: &str, cancellation: &str, id: &str, tool: &str) -> Message {
    Message::Cancel {
        request: CancelRequest {
            protocol_version: Version,
            session_id: tok(session),
            cancellation_id: tok(cancellation),
            request_id: tok(id),
            tool: tok(tool),
        },
    }
}

pub fn cancel_result(
    session: &str,
    cancellation: &str,
    id: &str,
    tool: &str,
    outcome: CancelOutcome,
) -> Message {
    Message::CancellationResult {
        result: CancelResult {
            protocol_version: Version,
            session_id: tok(session),
            cancellation_id: tok(cancellation),
            request_id: tok(id),
            tool: tok(tool),
            outcome,
        },
    }
}

pub fn close(session: &str) -> Message {
    Message::CloseSession {
        protocol_version: Version,
        session_id: tok(session),
    }
}

pub type Channel = FrameChannel<BufReader<PipeReader>, PipeWriter>;

/// Pipes for one worker: (worker stdin, worker stdout, host stdin, host
/// stdout).
pub fn pipes() -> (PipeReader, PipeWriter, PipeWriter, PipeReader) {
    let (worker_in, host_in) = pipe().expect("pipe");
    let (host_out, worker_out) = pipe().expect("pipe");
    (worker_in, worker_out, host_in, host_out)
}

/// A scripted worker end: reads the preamble, then speaks raw frames.
pub fn raw_worker(mut stdin: PipeReader, stdout: PipeWriter) -> Channel {
    let boot = PrivatePipeWorkerBootstrap::read_from(&mut stdin).expect("preamble");
    let (id, key) = boot.into_parts();
    let auth = SessionAuthenticator::new(id, key, SessionRole::Worker);
    FrameChannel::new(BufReader::new(stdin), stdout, auth)
}

/// A scripted host end: writes the preamble, then speaks raw frames.
pub fn raw_host(
    session: &str,
    key: SessionKey,
    mut stdin: PipeWriter,
    stdout: PipeReader,
) -> Channel {
    PrivatePipeWorkerBootstrap::new(tok(session), key.clone())
        .write_to(&mut stdin)
        .expect("preamble");
    let auth = SessionAuthenticator::new(tok(session), key, SessionRole::Host);
    FrameChannel::new(BufReader::new(stdout), stdin, auth)
}
