//! Host and worker over real OS pipes, the worker on its own thread.

use std::io::{BufReader, PipeReader, PipeWriter, Write, pipe};
use std::thread::{self, JoinHandle};

use serde_json::{Value, json};
use splash_protocol::{
    AuthError, CapabilityManifest, CodecError, FrameChannel, HostSession, Message, Outcome,
    PrivatePipeWorkerBootstrap, ServeEnd, SessionAuthenticator, SessionError, SessionKey,
    SessionRole, Token, Worker,
};

fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

fn manifest(session: &str) -> CapabilityManifest {
    CapabilityManifest::from_json(
        json!({
            "protocol_version": 5,
            "session_id": session,
            "grants": [
                {"tool": "demo.echo", "format": "json", "max_calls": 3, "max_input_bytes": 64, "max_output_bytes": 64, "max_compensations": 1},
                {"tool": "demo.fail", "format": "json", "max_calls": 5, "max_input_bytes": 64, "max_output_bytes": 64},
                {"tool": "demo.big", "format": "json", "max_calls": 5, "max_input_bytes": 64, "max_output_bytes": 8},
                {"tool": "demo.text", "format": "text", "max_calls": 5, "max_input_bytes": 5, "max_output_bytes": 64}
            ]
        })
        .to_string()
        .as_bytes(),
    )
    .expect("valid manifest")
}

fn tools(tool: &Token, input: Value, _: &CapabilityManifest) -> Result<Value, String> {
    match tool.as_str() {
        "demo.echo" => Ok(json!({"echo": input})),
        "demo.big" => Ok(json!("this is longer than eight bytes")),
        "demo.text" => Ok(json!(format!("<{}>", input.as_str().unwrap_or("")))),
        _ => Err("it failed".into()),
    }
}

type RawHost = FrameChannel<BufReader<PipeReader>, PipeWriter>;
type WorkerThread = JoinHandle<Result<ServeEnd, SessionError>>;

struct Spawned {
    host_in: PipeWriter,
    host_out: PipeReader,
    worker: JoinHandle<Result<ServeEnd, SessionError>>,
}

/// Starts a worker thread on fresh pipes; the caller writes the preamble.
fn spawn_worker() -> Spawned {
    let (worker_stdin, host_in) = pipe().expect("pipe");
    let (host_out, worker_stdout) = pipe().expect("pipe");
    let worker = thread::spawn(move || {
        let worker = Worker::new(worker_stdin, worker_stdout)?;
        worker.serve(tools)
    });
    Spawned {
        host_in,
        host_out,
        worker,
    }
}

fn start(
    session: &str,
    key: SessionKey,
) -> (
    HostSession<PipeReader, PipeWriter>,
    JoinHandle<Result<ServeEnd, SessionError>>,
) {
    let mut s = spawn_worker();
    PrivatePipeWorkerBootstrap::new(tok(session), key.clone())
        .write_to(&mut s.host_in)
        .expect("preamble");
    let host = HostSession::open(manifest(session), key, s.host_in, s.host_out).expect("open");
    (host, s.worker)
}

#[test]
fn host_and_worker_round_trip() {
    let key = SessionKey::generate().expect("rng");
    let (mut host, worker) = start("s-1", key);
    assert_eq!(
        host.invoke("demo.echo", json!({"b": 1, "a": [true, null]}))
            .expect("echo"),
        json!({"echo": {"a": [true, null], "b": 1}})
    );
    assert_eq!(
        host.invoke("demo.text", json!("hi")).expect("text"),
        json!("<hi>")
    );
    // A tool error is an answer, not a broken session.
    match host.invoke("demo.fail", json!({})) {
        Err(e @ SessionError::Tool { .. }) => assert!(!e.poisons_session()),
        other => panic!("{other:?}"),
    }
    // Host-side refusals send nothing and keep the session usable.
    assert!(matches!(
        host.invoke("demo.none", json!({})),
        Err(SessionError::NotGranted(_))
    ));
    assert!(matches!(
        host.invoke("demo.echo", json!({"x": "y".repeat(100)})),
        Err(SessionError::TooLarge { what: "input", .. })
    ));
    assert!(matches!(
        host.invoke("demo.text", json!({"not": "text"})),
        Err(SessionError::NotText { what: "input", .. })
    ));
    assert_eq!(
        host.invoke("demo.echo", json!(2)).expect("echo"),
        json!({"echo": 2})
    );
    assert_eq!(
        host.invoke("demo.echo", json!(3)).expect("echo"),
        json!({"echo": 3})
    );
    assert!(matches!(
        host.invoke("demo.echo", json!(4)),
        Err(SessionError::CallLimit { max: 3, .. })
    ));
    assert_eq!(
        host.request(Message::Cancel {
            request_id: tok("r-1")
        })
        .expect("reply"),
        Message::CancellationResult {
            request_id: tok("r-1"),
            disposition: splash_protocol::CancelDisposition::TooLate
        }
    );
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn oversized_tool_output_becomes_an_error_result() {
    let (mut host, worker) = start("s-1", SessionKey::generate().expect("rng"));
    // The worker replaces the oversized output with an error result.
    match host.invoke("demo.big", json!({})) {
        Err(SessionError::Tool { message, .. }) => {
            assert!(message.contains("output of tool `demo.big`"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    drop(host);
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::EndOfInput
    );
}

/// Drives a worker with a hand-held host channel, to send what a correct
/// host never would.
fn raw_host(session: &str) -> (RawHost, WorkerThread) {
    let key = SessionKey::generate().expect("rng");
    let mut s = spawn_worker();
    PrivatePipeWorkerBootstrap::new(tok(session), key.clone())
        .write_to(&mut s.host_in)
        .expect("preamble");
    let auth = SessionAuthenticator::new(tok(session), key, SessionRole::Host);
    let mut channel = FrameChannel::new(BufReader::new(s.host_out), s.host_in, auth);
    channel
        .send(Message::OpenSession {
            manifest: manifest(session),
        })
        .expect("open");
    (channel, s.worker)
}

#[test]
fn worker_enforces_the_manifest_itself() {
    let (mut host, worker) = raw_host("s-1");
    host.send(Message::Invoke {
        request_id: tok("r-1"),
        tool: tok("demo.secret"),
        input: json!({}),
    })
    .expect("send");
    match host.recv().expect("reply") {
        Some(Message::Result {
            outcome: Outcome::Error(e),
            ..
        }) => {
            assert_eq!(e, "tool `demo.secret` is not granted by the manifest")
        }
        other => panic!("{other:?}"),
    }
    host.send(Message::Invoke {
        request_id: tok("r-2"),
        tool: tok("demo.text"),
        input: json!("toolong"),
    })
    .expect("send");
    match host.recv().expect("reply") {
        Some(Message::Result {
            outcome: Outcome::Error(e),
            ..
        }) => {
            assert!(e.contains("input of tool `demo.text` is 7 bytes"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    host.send(Message::CloseSession {}).expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn worker_rejects_a_second_open_session() {
    let (mut host, worker) = raw_host("s-1");
    host.send(Message::OpenSession {
        manifest: manifest("s-1"),
    })
    .expect("send");
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Unexpected {
            got: "open_session",
            ..
        })
    ));
}

#[test]
fn worker_rejects_a_manifest_for_another_session() {
    let key = SessionKey::generate().expect("rng");
    let mut s = spawn_worker();
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut s.host_in)
        .expect("preamble");
    // Same key and the bootstrap's session in the tag, but the manifest
    // names another session.
    let auth = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Host);
    let mut channel = FrameChannel::new(BufReader::new(s.host_out), s.host_in, auth);
    channel
        .send(Message::OpenSession {
            manifest: manifest("s-2"),
        })
        .expect("send");
    assert!(matches!(
        s.worker.join().expect("thread"),
        Err(SessionError::SessionMismatch { .. })
    ));
}

#[test]
fn worker_rejects_an_open_session_under_another_key() {
    let mut s = spawn_worker();
    PrivatePipeWorkerBootstrap::new(tok("s-1"), SessionKey::generate().expect("rng"))
        .write_to(&mut s.host_in)
        .expect("preamble");
    let host = HostSession::open(
        manifest("s-1"),
        SessionKey::generate().expect("rng"),
        s.host_in,
        s.host_out,
    );
    assert!(host.is_ok(), "the host cannot know yet");
    assert!(matches!(
        s.worker.join().expect("thread"),
        Err(SessionError::Auth(AuthError::BadTag))
    ));
}

#[test]
fn worker_rejects_a_bad_preamble_and_a_missing_open_session() {
    let mut s = spawn_worker();
    s.host_in.write_all(b"SPLPBOOX\x01\x03s-1").expect("write");
    drop(s.host_in);
    assert!(matches!(
        s.worker.join().expect("thread"),
        Err(SessionError::Bootstrap(
            splash_protocol::BootstrapError::BadMagic
        ))
    ));

    let mut s = spawn_worker();
    PrivatePipeWorkerBootstrap::new(tok("s-1"), SessionKey::generate().expect("rng"))
        .write_to(&mut s.host_in)
        .expect("preamble");
    drop(s.host_in);
    assert!(matches!(
        s.worker.join().expect("thread"),
        Err(SessionError::Closed {
            expected: "open_session"
        })
    ));
}

#[test]
fn oversized_frames_poison_the_worker() {
    let (host, worker) = raw_host("s-1");
    let mut w = host.into_writer();
    let mut line = vec![b' '; splash_protocol::MAX_LINE_BYTES + 1];
    line.push(b'\n');
    // The worker stops reading at the bound, so the rest of this write may
    // fail with a broken pipe once it exits; either way it must refuse.
    let _ = w.write_all(&line);
    drop(w);
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Codec(CodecError::LineTooLong))
    ));
}

/// Records everything written, so a test can replay a line verbatim.
struct Tee {
    inner: PipeWriter,
    log: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.log.lock().expect("log").extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[test]
fn a_replayed_host_frame_poisons_the_worker() {
    let key = SessionKey::generate().expect("rng");
    let mut s = spawn_worker();
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut s.host_in)
        .expect("preamble");
    let mut raw = s.host_in.try_clone().expect("clone");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let tee = Tee {
        inner: s.host_in,
        log: log.clone(),
    };
    let auth = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Host);
    let mut host = FrameChannel::new(BufReader::new(s.host_out), tee, auth);
    host.send(Message::OpenSession {
        manifest: manifest("s-1"),
    })
    .expect("open");
    host.send(Message::Invoke {
        request_id: tok("r-1"),
        tool: tok("demo.echo"),
        input: json!(1),
    })
    .expect("send");
    assert!(matches!(host.recv(), Ok(Some(Message::Result { .. }))));
    let written = log.lock().expect("log").clone();
    let invoke_line = written
        .split_inclusive(|b| *b == b'\n')
        .nth(1)
        .expect("the invoke line")
        .to_vec();
    raw.write_all(&invoke_line).expect("replay");
    assert!(matches!(
        s.worker.join().expect("thread"),
        Err(SessionError::Auth(AuthError::Sequence {
            expected: 3,
            got: 2
        }))
    ));
}

/// A misbehaving worker: answers the first invoke with `reply(request_id)`.
fn rogue_worker(reply: fn(Token) -> Message) -> HostSession<PipeReader, PipeWriter> {
    let key = SessionKey::generate().expect("rng");
    let (mut worker_stdin, mut host_in) = pipe().expect("pipe");
    let (host_out, worker_stdout) = pipe().expect("pipe");
    thread::spawn(move || {
        let boot = PrivatePipeWorkerBootstrap::read_from(&mut worker_stdin).expect("preamble");
        let (id, key) = boot.into_parts();
        let auth = SessionAuthenticator::new(id, key, SessionRole::Worker);
        let mut ch = FrameChannel::new(BufReader::new(worker_stdin), worker_stdout, auth);
        assert!(matches!(ch.recv(), Ok(Some(Message::OpenSession { .. }))));
        if let Ok(Some(Message::Invoke { request_id, .. })) = ch.recv() {
            let _ = ch.send(reply(request_id));
        }
        let _ = ch.recv();
    });
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    HostSession::open(manifest("s-1"), key, host_in, host_out).expect("open")
}

#[test]
fn a_misbehaving_worker_poisons_the_host() {
    let mut host = rogue_worker(|_| Message::Result {
        request_id: Token::new("r-9").expect("token"),
        outcome: Outcome::Ok(json!(1)),
    });
    assert!(matches!(
        host.invoke("demo.echo", json!(1)),
        Err(SessionError::RequestMismatch { .. })
    ));
    assert!(host.is_poisoned());
    assert!(matches!(
        host.invoke("demo.echo", json!(1)),
        Err(SessionError::Poisoned)
    ));

    let mut host = rogue_worker(|request_id| Message::Result {
        request_id,
        outcome: Outcome::Ok(
            json!({"far": "more than sixty-four bytes of output ........................"}),
        ),
    });
    assert!(matches!(
        host.invoke("demo.echo", json!(1)),
        Err(SessionError::TooLarge { what: "output", .. })
    ));
    assert!(matches!(
        host.invoke("demo.echo", json!(1)),
        Err(SessionError::Poisoned)
    ));

    let mut host = rogue_worker(|request_id| Message::CancellationResult {
        request_id,
        disposition: splash_protocol::CancelDisposition::Acknowledged,
    });
    assert!(matches!(
        host.invoke("demo.echo", json!(1)),
        Err(SessionError::Unexpected {
            got: "cancellation_result",
            ..
        })
    ));
    assert!(matches!(
        host.invoke("demo.echo", json!(1)),
        Err(SessionError::Poisoned)
    ));
}

#[test]
fn durable_requests_are_checked_and_answered_honestly() {
    let (mut host, worker) = start("s-1", SessionKey::generate().expect("rng"));
    let op = tok("op-1");
    // A worker without a journal cannot tell what happened.
    assert_eq!(
        host.reconcile("demo.echo", &op).expect("reconcile"),
        splash_protocol::OperationState::Unknown
    );
    match host.dispatch("demo.echo", &op, json!({})) {
        Err(e @ SessionError::Tool { .. }) => {
            assert!(e.to_string().contains("not supported"), "{e}");
            assert!(!e.poisons_session());
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        host.compensate("demo.echo", &op),
        Err(SessionError::Tool { .. })
    ));
    // `max_compensations` is enforced before anything is sent.
    assert!(matches!(
        host.compensate("demo.echo", &op),
        Err(SessionError::CompensationLimit { max: 1, .. })
    ));
    assert!(matches!(
        host.compensate("demo.fail", &op),
        Err(SessionError::CompensationLimit { max: 0, .. })
    ));
    assert!(matches!(
        host.reconcile("demo.none", &op),
        Err(SessionError::NotGranted(_))
    ));
    assert!(!host.is_poisoned());
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn the_worker_checks_durable_grants_itself() {
    let (mut host, worker) = raw_host("s-1");
    for (tool, expected) in [
        ("demo.fail", "has used all 0 compensations"),
        ("demo.secret", "is not granted"),
    ] {
        host.send(Message::CompensateOperation {
            operation_id: tok("op-1"),
            tool: tok(tool),
        })
        .expect("send");
        match host.recv().expect("reply") {
            Some(Message::CompensationResult {
                outcome: Outcome::Error(e),
                ..
            }) => assert!(e.contains(expected), "{e}"),
            other => panic!("{other:?}"),
        }
    }
    host.send(Message::CloseSession {}).expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}
