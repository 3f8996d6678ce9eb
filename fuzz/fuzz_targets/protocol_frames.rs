//! Worker output as the host reads it: bounded JSON lines, frame decoding,
//! BLAKE3 frame authentication under a fixed key, and the host session's
//! checks of every reply (`splash_protocol::HostSession`).
//!
//! The key (bytes 0x01..=0x20) and session (`ctl-b`) are those of the test
//! vectors in the protocol specification, so the worker frames of its
//! transcript are valid seeds. The first input byte picks the mode:
//!
//! - bit 0 clear: the rest is the worker's standard output as is, so almost
//!   every mutation stops at the tag check;
//! - bit 0 set: each line that decodes as a worker frame is resealed (tag
//!   and sequence recomputed with the worker's half of the key) before the
//!   host reads it, so mutated messages get past authentication and reach
//!   the session's reply checks (`@echo-fingerprint` stands for the grant
//!   fingerprint a compensation result must repeat);
//! - bit 1 set: the rest is a bootstrap preamble instead (the worker's first
//!   read of its standard input).
//!
//! Invariants, besides not panicking:
//! - after an error, the session is poisoned exactly when the error says it
//!   leaves the session poisoned, and a poisoned session refuses the next
//!   call with `Poisoned`;
//! - a channel hands on only authenticated worker messages of this session,
//!   and is poisoned after its first error;
//! - a resealed frame encodes, decodes and opens to the message sealed;
//! - an accepted preamble encodes to exactly the bytes read.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use splash_protocol::{
    CallEvent, CapabilityManifest, Frame, FrameChannel, Grant, GrantFormat, HostSession,
    PrivatePipeWorkerBootstrap, SessionAuthenticator, SessionError, SessionKey, SessionRole,
    SessionState, Token,
};

const SESSION: &str = "ctl-b";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 2 != 0 {
        bootstrap(rest);
        return;
    }
    let stream = if mode & 1 != 0 {
        reseal(rest)
    } else {
        rest.to_vec()
    };
    channel(&stream);
    session(&stream);
});

fn key() -> SessionKey {
    let mut bytes = [0u8; 32];
    for (b, v) in bytes.iter_mut().zip(1u8..) {
        *b = v;
    }
    SessionKey::from_bytes(bytes).expect("a non-zero key")
}

fn token(s: &str) -> Token {
    Token::new(s).expect("a token")
}

fn manifest() -> CapabilityManifest {
    let mut echo = Grant::new(token("interop.echo"), GrantFormat::Json);
    echo.max_calls = 4;
    echo.max_compensations = 1;
    let sleep = Grant::new(token("interop.sleep"), GrantFormat::Json);
    let mut text = Grant::new(token("interop.text"), GrantFormat::Text);
    text.max_output_bytes = 64;
    CapabilityManifest {
        protocol_version: splash_protocol::PROTOCOL_VERSION,
        session_id: token(SESSION),
        grants: vec![echo, sleep, text],
    }
}

/// Stands for the `grant_fingerprint` of the `interop.echo` grant in
/// resealed input: a hash the fuzzer cannot find, like a tag.
const FINGERPRINT: &[u8] = b"@echo-fingerprint";

/// The input's lines, each worker frame among them resealed in order.
fn reseal(input: &[u8]) -> Vec<u8> {
    let echo = manifest().grants[0].clone();
    let fingerprint = splash_protocol::compensation_fingerprint(&echo).expect("fingerprint");
    let mut worker = SessionAuthenticator::new(token(SESSION), key(), SessionRole::Worker);
    let mut host = SessionAuthenticator::new(token(SESSION), key(), SessionRole::Host);
    let mut out = Vec::with_capacity(input.len() + 128);
    let mut lines = input.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let line = replace(line, FINGERPRINT, fingerprint.as_bytes());
        let line = &line[..];
        let sealed = serde_json::from_slice::<Frame>(line)
            .ok()
            .and_then(|f| worker.seal(f.message).ok());
        match sealed {
            Some(frame) => {
                let bytes = serde_json::to_vec(&frame).expect("a sealed frame encodes");
                let decoded: Frame =
                    serde_json::from_slice(&bytes).expect("a sealed frame decodes");
                assert_eq!(decoded, frame, "a sealed frame does not decode to itself");
                let opened = host.open(decoded).expect("a sealed frame opens");
                assert_eq!(opened, frame.message, "opening changed the message");
                out.extend_from_slice(&bytes);
            }
            None => out.extend_from_slice(line),
        }
        if lines.peek().is_some() {
            out.push(b'\n');
        }
    }
    out
}

fn replace(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(i) = rest.windows(needle.len()).position(|w| w == needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(with);
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// The host's channel alone: every frame until the end or the first error.
fn channel(stream: &[u8]) {
    let auth = SessionAuthenticator::new(token(SESSION), key(), SessionRole::Host);
    let mut channel = FrameChannel::new(stream, std::io::sink(), auth);
    loop {
        match channel.recv() {
            Ok(Some(message)) => {
                assert_eq!(message.sender(), SessionRole::Worker);
                assert_eq!(message.session_id().as_str(), SESSION);
            }
            Ok(None) => return,
            Err(_) => {
                assert!(channel.is_poisoned(), "an error leaves the channel usable");
                assert!(matches!(channel.recv(), Err(SessionError::Poisoned)));
                return;
            }
        }
    }
}

type Host<'a> = HostSession<&'a [u8], Vec<u8>>;

/// The outcome of one step: `None` when the session is poisoned and the
/// script stops.
fn settle<T>(session: &mut Host<'_>, result: Result<T, SessionError>) -> Option<Option<T>> {
    match result {
        Ok(value) => {
            assert!(!session.is_poisoned(), "a success on a poisoned session");
            Some(Some(value))
        }
        Err(e) => {
            let poisoned = e.leaves_session() == SessionState::Poisoned;
            assert_eq!(
                poisoned,
                session.is_poisoned(),
                "`{e}` says poisoned = {poisoned}, the session disagrees"
            );
            if poisoned {
                assert!(matches!(session.next_event(), Err(SessionError::Poisoned)));
                None
            } else {
                Some(None)
            }
        }
    }
}

fn assert_json(output: &Value) {
    assert!(
        output.is_object() || output.is_array(),
        "json output {output}"
    );
}

/// The transcript of the specification's test vectors, then one of each
/// durable request: every reply the worker's stream gives is checked.
fn session(stream: &[u8]) {
    let Ok(mut s) = HostSession::open(manifest(), key(), Vec::new(), stream) else {
        panic!("opening a session on a sink fails");
    };
    let r = s.invoke("interop.echo", json!({"a": 2, "b": 1}));
    let Some(out) = settle(&mut s, r) else { return };
    if let Some(output) = out {
        assert_json(&output);
    }

    let r = s.start("interop.sleep", json!({"ms": 60000}));
    let Some(started) = settle(&mut s, r) else {
        return;
    };
    if let Some(request_id) = started {
        let r = s.cancel(&request_id);
        if settle(&mut s, r).is_none() {
            return;
        }
        for _ in 0..3 {
            if s.call_in_flight().is_none() {
                break;
            }
            let r = s.next_event();
            let Some(event) = settle(&mut s, r) else {
                return;
            };
            match event {
                Some(CallEvent::Finished {
                    request_id: id,
                    output,
                }) => {
                    assert_eq!(id, request_id);
                    assert_json(&output);
                }
                Some(
                    CallEvent::Cancelled { request_id: id }
                    | CallEvent::TooLate { request_id: id }
                    | CallEvent::Unsupported { request_id: id },
                ) => assert_eq!(id, request_id),
                None => break,
            }
        }
    }
    if s.call_in_flight().is_some() {
        assert!(matches!(s.close(), Err(SessionError::Abandoned(_))));
        return;
    }

    let r = s.invoke("interop.text", json!("hi"));
    let Some(out) = settle(&mut s, r) else { return };
    if let Some(output) = out {
        let text = output.as_str().expect("text output is a string");
        assert!(text.len() <= 64, "text output over its bound");
    }

    let op = token("op-1");
    let r = s.dispatch("interop.echo", &op, json!({}));
    if settle(&mut s, r).is_none() {
        return;
    }
    let r = s.reconcile("interop.echo", &op);
    if settle(&mut s, r).is_none() {
        return;
    }
    let r = s.compensate(
        "interop.echo",
        &op,
        &token("cmp-1"),
        &token("tenant-a"),
        json!({}),
    );
    if settle(&mut s, r).is_none() {
        return;
    }
    let _ = s.close();
}

/// A preamble read from `input`: accepted only with exactly the bytes it
/// encodes to.
fn bootstrap(input: &[u8]) {
    let mut rest = input;
    let Ok(preamble) = PrivatePipeWorkerBootstrap::read_from(&mut rest) else {
        return;
    };
    let read = &input[..input.len() - rest.len()];
    assert_eq!(
        &preamble.encode()[..],
        read,
        "the preamble re-encodes differently"
    );
}
