//! Host and worker over real OS pipes, the worker on its own thread; and
//! each end against a scripted peer that sends what a correct one never
//! would.

mod common;

use std::io::{PipeReader, PipeWriter, Write};
use std::thread::{self, JoinHandle};

use common::{cancel, invoke, pipes, raw_host, raw_worker, result, tok};
use serde_json::{Value, json};
use splash_protocol::auth::signed_bytes;
use splash_protocol::{
    AuthError, CapabilityManifest, CodecError, CompensationResult, HostSession, Message,
    OperationResult, OperationStatus, Payload, PayloadError, PrivatePipeWorkerBootstrap, ServeEnd,
    SessionError, SessionKey, SessionRole, Token, Version, Worker,
};
use splash_protocol::{PayloadSide, SessionState};

const TOOLS: [&str; 5] = [
    "demo.echo",
    "demo.fail",
    "demo.big",
    "demo.text",
    "demo.many",
];

fn manifest(session: &str) -> CapabilityManifest {
    CapabilityManifest::from_json(
        json!({
            "protocol_version": 5,
            "session_id": session,
            "grants": [
                {"tool": "demo.echo", "format": "json", "max_calls": 3, "max_input_bytes": 64, "max_output_bytes": 64, "max_compensations": 1},
                {"tool": "demo.fail", "format": "json", "max_calls": 5, "max_input_bytes": 64, "max_output_bytes": 64},
                {"tool": "demo.big", "format": "json", "max_calls": 5, "max_input_bytes": 64, "max_output_bytes": 8},
                {"tool": "demo.text", "format": "text", "max_calls": 5, "max_input_bytes": 5, "max_output_bytes": 64},
                {"tool": "demo.many", "format": "json", "max_calls": 2000, "max_input_bytes": 1024, "max_output_bytes": 1024}
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
        "demo.many" => Ok(input),
        "demo.big" => Ok(json!(["this is longer than eight bytes"])),
        "demo.text" => Ok(json!(format!("<{}>", input.as_str().unwrap_or("")))),
        _ => Err("it failed".into()),
    }
}

type WorkerThread = JoinHandle<Result<ServeEnd, SessionError>>;

fn spawn_worker(handled: &'static [&'static str]) -> (PipeWriter, PipeReader, WorkerThread) {
    let (worker_in, worker_out, host_in, host_out) = pipes();
    let worker = thread::spawn(move || Worker::new(worker_in, worker_out, handled)?.serve(tools));
    (host_in, host_out, worker)
}

fn start(session: &str) -> (HostSession<PipeReader, PipeWriter>, WorkerThread) {
    let key = SessionKey::generate().expect("rng");
    let (mut host_in, host_out, worker) = spawn_worker(&TOOLS);
    PrivatePipeWorkerBootstrap::new(tok(session), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    let host = HostSession::open(manifest(session), key, host_in, host_out).expect("open");
    (host, worker)
}

/// A value nested `depth` levels (the root counts as 1).
/// No error in `e`'s chain repeats the message of its source: printed as
/// `error: source: ...`, each cause appears once.
fn assert_cause_stated_once(e: &dyn std::error::Error) {
    let mut outer = e;
    while let Some(inner) = outer.source() {
        assert!(
            !outer.to_string().contains(&inner.to_string()),
            "`{outer}` repeats its source `{inner}`"
        );
        outer = inner;
    }
}

fn nested(depth: usize) -> Value {
    let mut v = json!([]);
    for _ in 1..depth {
        v = json!([v]);
    }
    v
}

#[test]
fn host_and_worker_round_trip_and_host_refusals_send_nothing() {
    let (mut host, worker) = start("s-1");
    assert_eq!(
        host.invoke("demo.echo", json!({"b": 1, "a": [true, null]}))
            .expect("echo"),
        json!({"echo": {"a": [true, null], "b": 1}})
    );
    assert_eq!(
        host.invoke("demo.text", json!("hi")).expect("text"),
        json!("<hi>")
    );
    // Refused before anything is sent; the session stays usable.
    let refusals = [
        host.invoke("demo.none", json!({})),
        host.invoke("demo.echo", json!({"x": "y".repeat(100)})),
        host.invoke("demo.text", json!({"not": "text"})),
        host.invoke("demo.echo", json!(2)),
        host.invoke("demo.many", nested(33)),
    ];
    for r in refusals {
        let e = r.expect_err("refused");
        assert_eq!(e.leaves_session(), SessionState::Usable, "{e}");
        assert_cause_stated_once(&e);
        assert!(
            matches!(
                e,
                SessionError::NotGranted(_)
                    | SessionError::TooLarge {
                        what: PayloadSide::Input,
                        ..
                    }
                    | SessionError::Payload {
                        what: PayloadSide::Input,
                        ..
                    }
            ),
            "{e:?}"
        );
    }
    assert!(matches!(
        host.invoke("demo.echo", json!(2)),
        Err(SessionError::Payload {
            error: PayloadError::NotContainer,
            ..
        })
    ));
    // 32 levels are fine.
    assert_eq!(
        host.invoke("demo.many", nested(32)).expect("deep"),
        nested(32)
    );
    host.invoke("demo.echo", json!([2])).expect("echo");
    host.invoke("demo.echo", json!([3])).expect("echo");
    assert!(matches!(
        host.invoke("demo.echo", json!([4])),
        Err(SessionError::CallLimit { max: 3, .. })
    ));
    assert!(!host.is_poisoned());
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn a_failing_tool_ends_the_session_and_the_host_says_which_request() {
    let (mut host, worker) = start("s-1");
    let e = host.invoke("demo.fail", json!({})).expect_err("no answer");
    assert!(
        matches!(&e, SessionError::WorkerEnded { kind: "invoke", request, tool }
            if request.as_str() == "r-1" && tool.as_str() == "demo.fail"),
        "{e:?}"
    );
    assert_eq!(e.leaves_session(), SessionState::Poisoned);
    assert!(matches!(
        host.invoke("demo.echo", json!({})),
        Err(SessionError::Poisoned)
    ));
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::ToolFailed { message, .. }) if message == "it failed"
    ));
}

#[test]
fn an_output_that_does_not_fit_the_grant_ends_the_session() {
    let (mut host, worker) = start("s-1");
    assert!(matches!(
        host.invoke("demo.big", json!({})),
        Err(SessionError::WorkerEnded { .. })
    ));
    match worker.join().expect("thread") {
        Err(SessionError::ToolFailed { message, .. }) => {
            assert!(message.contains("output of tool `demo.big`"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_worker_ends_the_session_on_requests_it_cannot_serve() {
    let cases: Vec<(Vec<Message>, &str)> = vec![
        (
            vec![invoke("s-1", "r-1", "demo.secret", json!({}))],
            "is not granted",
        ),
        (
            vec![invoke("s-1", "r-1", "demo.echo", json!(1))],
            "object or an array",
        ),
        (
            vec![invoke("s-1", "r-1", "demo.many", nested(33))],
            "deeper than 32",
        ),
        (
            vec![
                invoke("s-1", "r-1", "demo.echo", json!({})),
                invoke("s-1", "r-1", "demo.echo", json!({})),
            ],
            "already used",
        ),
        (
            vec![cancel("s-1", "c-1", "r-7", "demo.echo")],
            "not a call of this session",
        ),
        (
            vec![Message::OpenSession {
                manifest: manifest("s-1"),
            }],
            "not a request a worker answers",
        ),
        (
            vec![Message::ReconcileOperation {
                request: splash_protocol::ReconcileRequest {
                    protocol_version: Version,
                    session_id: tok("s-1"),
                    request_id: tok("r-1"),
                    tool: tok("demo.echo"),
                    operation_key: tok("op-1"),
                },
            }],
            "no operation journal",
        ),
    ];
    for (requests, reason) in cases {
        let (host_in, host_out, worker) = spawn_worker(&TOOLS);
        let key = SessionKey::generate().expect("rng");
        let mut host = raw_host("s-1", key, host_in, host_out);
        host.send(Message::OpenSession {
            manifest: manifest("s-1"),
        })
        .expect("open");
        let last = requests.len() - 1;
        for (i, m) in requests.into_iter().enumerate() {
            host.send(m).expect("send");
            if i < last {
                assert!(matches!(host.recv(), Ok(Some(Message::Result { .. }))));
            }
        }
        // No error frame: the session just ends.
        assert!(matches!(host.recv(), Ok(None)), "{reason}");
        match worker.join().expect("thread") {
            Err(e @ SessionError::Refused { .. }) => {
                assert!(e.to_string().contains(reason), "{e} / {reason}")
            }
            other => panic!("{reason}: {other:?}"),
        }
    }
}

#[test]
fn a_manifest_granting_a_tool_without_a_handler_is_refused_at_open() {
    let (mut host_in, host_out, worker) = spawn_worker(&["demo.echo"]);
    let key = SessionKey::generate().expect("rng");
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    let mut host = HostSession::open(manifest("s-1"), key, host_in, host_out).expect("open");
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::UnhandledTool(t)) if t.as_str() == "demo.fail"
    ));
    assert!(matches!(
        host.invoke("demo.echo", json!({})),
        Err(SessionError::WorkerEnded { .. })
    ));
}

#[test]
fn the_session_request_id_budget_is_enforced_by_the_host() {
    let (mut host, worker) = start("s-1");
    for i in 0..splash_protocol::MAX_SESSION_REQUEST_IDS {
        host.invoke("demo.many", json!([i])).expect("call");
    }
    let e = host.invoke("demo.many", json!([0])).expect_err("budget");
    assert!(matches!(e, SessionError::RequestLimit(1024)), "{e:?}");
    assert_eq!(e.leaves_session(), SessionState::Usable);
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn worker_rejects_a_manifest_for_another_session() {
    let (worker_in, worker_out, mut host_in, _host_out) = pipes();
    let worker = thread::spawn(move || Worker::new(worker_in, worker_out, &TOOLS).map(|_| ()));
    let key_bytes = [0x3c; 32];
    let key = SessionKey::from_bytes(key_bytes).expect("key");
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key)
        .write_to(&mut host_in)
        .expect("preamble");
    // Tagged correctly for session `s-1`, but the manifest names `s-2`
    // (our sealer refuses to build this frame, so it is built by hand).
    let message = Message::OpenSession {
        manifest: manifest("s-2"),
    };
    let bytes = signed_bytes(SessionRole::Host, 1, &tok("s-1"), &message).expect("bytes");
    let tag = blake3::keyed_hash(&key_bytes, &bytes);
    let line = format!(
        r#"{{"sequence":1,"message":{},"auth_tag":"{}"}}"#,
        serde_json::to_string(&message).expect("encode"),
        tag.to_hex()
    );
    host_in
        .write_all(format!("{line}\n").as_bytes())
        .expect("write");
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Auth(AuthError::Session { .. }))
    ));
}

#[test]
fn worker_rejects_an_open_session_under_another_key() {
    let (mut host_in, host_out, worker) = spawn_worker(&TOOLS);
    PrivatePipeWorkerBootstrap::new(tok("s-1"), SessionKey::generate().expect("rng"))
        .write_to(&mut host_in)
        .expect("preamble");
    let host = HostSession::open(
        manifest("s-1"),
        SessionKey::generate().expect("rng"),
        host_in,
        host_out,
    );
    assert!(host.is_ok(), "the host cannot know yet");
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Auth(AuthError::BadTag))
    ));
}

#[test]
fn worker_rejects_a_bad_preamble_and_a_missing_open_session() {
    let (mut host_in, _host_out, worker) = spawn_worker(&TOOLS);
    host_in.write_all(b"SPLPBOOX\x01\x03s-1").expect("write");
    drop(host_in);
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Bootstrap(
            splash_protocol::BootstrapError::BadMagic
        ))
    ));

    let (mut host_in, _host_out, worker) = spawn_worker(&TOOLS);
    PrivatePipeWorkerBootstrap::new(tok("s-1"), SessionKey::generate().expect("rng"))
        .write_to(&mut host_in)
        .expect("preamble");
    drop(host_in);
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Closed {
            expected: "open_session"
        })
    ));
}

#[test]
fn oversized_frames_poison_the_worker() {
    let (host_in, host_out, worker) = spawn_worker(&TOOLS);
    let mut host = raw_host(
        "s-1",
        SessionKey::generate().expect("rng"),
        host_in,
        host_out,
    );
    host.send(Message::OpenSession {
        manifest: manifest("s-1"),
    })
    .expect("open");
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

#[test]
fn a_replayed_host_frame_poisons_the_worker() {
    let (host_in, host_out, worker) = spawn_worker(&TOOLS);
    let mut raw = host_in.try_clone().expect("clone");
    let key = || SessionKey::from_bytes([0x5a; 32]).expect("key");
    let mut host = raw_host("s-1", key(), host_in, host_out);
    // A second sealer with the same key makes byte-identical copies of the
    // host's frames, so frame 2 can be written again.
    let mut copier =
        splash_protocol::SessionAuthenticator::new(tok("s-1"), key(), SessionRole::Host);
    let open = Message::OpenSession {
        manifest: manifest("s-1"),
    };
    let request = invoke("s-1", "r-1", "demo.echo", json!({}));
    copier.seal(open.clone()).expect("seal");
    let copy = copier.seal(request.clone()).expect("seal");
    host.send(open).expect("open");
    host.send(request).expect("send");
    assert!(matches!(host.recv(), Ok(Some(Message::Result { .. }))));
    let mut line = splash_protocol::canonical::to_vec(&copy).expect("encode");
    line.push(b'\n');
    raw.write_all(&line).expect("replay");
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Auth(AuthError::Sequence {
            expected: 3,
            got: 2
        }))
    ));
}

/// A scripted worker that answers the first request with `reply(request)`.
fn rogue_worker(reply: fn(&Message) -> Message) -> HostSession<PipeReader, PipeWriter> {
    let (worker_in, worker_out, mut host_in, host_out) = pipes();
    thread::spawn(move || {
        let mut ch = raw_worker(worker_in, worker_out);
        assert!(matches!(ch.recv(), Ok(Some(Message::OpenSession { .. }))));
        if let Ok(Some(m)) = ch.recv() {
            let _ = ch.send(reply(&m));
        }
        let _ = ch.recv();
    });
    let key = SessionKey::generate().expect("rng");
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    HostSession::open(manifest("s-1"), key, host_in, host_out).expect("open")
}

#[test]
fn a_misbehaving_worker_poisons_the_host() {
    type Case = (fn(&Message) -> Message, fn(&SessionError) -> bool);
    let cases: [Case; 4] = [
        (
            |_| result("s-1", "r-9", json!([1])),
            |e| matches!(e, SessionError::RequestMismatch { .. }),
        ),
        (
            |_| {
                result(
                    "s-1",
                    "r-1",
                    json!({"far": "more than sixty-four bytes of output ........................"}),
                )
            },
            |e| {
                matches!(
                    e,
                    SessionError::TooLarge {
                        what: PayloadSide::Output,
                        ..
                    }
                )
            },
        ),
        (
            |_| result("s-1", "r-1", json!("a scalar")),
            |e| {
                matches!(
                    e,
                    SessionError::Payload {
                        what: PayloadSide::Output,
                        ..
                    }
                )
            },
        ),
        (
            |_| {
                common::cancel_result(
                    "s-1",
                    "c-2",
                    "r-1",
                    "demo.echo",
                    splash_protocol::CancelOutcome::Acknowledged,
                )
            },
            |e| {
                matches!(
                    e,
                    SessionError::Unexpected {
                        got: "cancellation_result",
                        ..
                    }
                )
            },
        ),
    ];
    for (reply, expected) in cases {
        let mut host = rogue_worker(reply);
        let e = host.invoke("demo.echo", json!({})).expect_err("violation");
        assert!(expected(&e), "{e:?}");
        assert!(host.is_poisoned());
        assert!(matches!(
            host.invoke("demo.echo", json!({})),
            Err(SessionError::Poisoned)
        ));
    }
}

fn op_result(request: &Message, status: OperationStatus, key: &str) -> OperationResult {
    let (request_id, tool) = match request {
        Message::DispatchOperation { request } => {
            (request.request_id.clone(), request.tool.clone())
        }
        Message::ReconcileOperation { request } => {
            (request.request_id.clone(), request.tool.clone())
        }
        other => panic!("{other:?}"),
    };
    OperationResult {
        protocol_version: Version,
        session_id: tok("s-1"),
        request_id,
        tool,
        operation_key: tok(key),
        status,
    }
}

#[test]
fn durable_requests_have_the_splash_shape_and_their_answers_are_checked() {
    let mut host = rogue_worker(|m| Message::OperationResult {
        result: op_result(
            m,
            OperationStatus::Succeeded {
                payload: Payload::Json(json!({"done": true})),
            },
            "op-1",
        ),
    });
    assert_eq!(
        host.dispatch("demo.echo", &tok("op-1"), json!({"x": 1}))
            .expect("dispatch"),
        OperationStatus::Succeeded {
            payload: Payload::Json(json!({"done": true}))
        }
    );

    let mut host = rogue_worker(|m| Message::ReconciledOperation {
        result: op_result(m, OperationStatus::Running, "op-1"),
    });
    assert_eq!(
        host.reconcile("demo.echo", &tok("op-1"))
            .expect("reconcile"),
        OperationStatus::Running
    );

    // An answer about another operation poisons the session.
    let mut host = rogue_worker(|m| Message::ReconciledOperation {
        result: op_result(m, OperationStatus::Cancelled, "op-2"),
    });
    assert!(matches!(
        host.reconcile("demo.echo", &tok("op-1")),
        Err(SessionError::ReplyMismatch {
            field: "operation key",
            ..
        })
    ));
    assert!(host.is_poisoned());

    let mut host = rogue_worker(|m| {
        let Message::CompensateOperation { request } = m else {
            panic!("{m:?}");
        };
        assert_eq!(request.compensation_key, tok("cmp-1"));
        assert_eq!(request.grant_fingerprint.len(), 64);
        Message::CompensationResult {
            result: CompensationResult {
                protocol_version: Version,
                session_id: request.session_id.clone(),
                request_id: request.request_id.clone(),
                tool: request.tool.clone(),
                operation_key: request.operation_key.clone(),
                compensation_key: request.compensation_key.clone(),
                tenant_scope: request.tenant_scope.clone(),
                grant_fingerprint: request.grant_fingerprint.clone(),
                status: OperationStatus::Failed {
                    message: "nothing to undo".into(),
                },
            },
        }
    });
    // Refused before anything is sent: no compensations for `demo.fail`,
    // a key outside `cmp-`.
    assert!(matches!(
        host.compensate(
            "demo.fail",
            &tok("op-1"),
            &tok("cmp-1"),
            &tok("t"),
            json!({})
        ),
        Err(SessionError::CompensationNotGranted(_))
    ));
    assert!(matches!(
        host.compensate(
            "demo.echo",
            &tok("op-1"),
            &tok("undo-1"),
            &tok("t"),
            json!({})
        ),
        Err(SessionError::InvalidRequest(_))
    ));
    assert_eq!(
        host.compensate(
            "demo.echo",
            &tok("op-1"),
            &tok("cmp-1"),
            &tok("t"),
            json!({})
        )
        .expect("compensate"),
        OperationStatus::Failed {
            message: "nothing to undo".into()
        }
    );
    assert!(matches!(
        host.compensate(
            "demo.echo",
            &tok("op-1"),
            &tok("cmp-2"),
            &tok("t"),
            json!({})
        ),
        Err(SessionError::CompensationLimit { max: 1, .. })
    ));
}

#[test]
fn our_worker_ends_the_session_on_a_dispatch() {
    let (mut host, worker) = start("s-1");
    let e = host
        .dispatch("demo.echo", &tok("op-1"), json!({}))
        .expect_err("unserved");
    assert!(
        matches!(
            e,
            SessionError::WorkerEnded {
                kind: "dispatch_operation",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Refused {
            kind: "dispatch_operation",
            ..
        })
    ));
}
