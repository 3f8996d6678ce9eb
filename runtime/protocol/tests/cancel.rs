//! Cooperative cancellation between a host session and a cancellable
//! worker over real pipes.

use std::io::{BufReader, PipeReader, PipeWriter, pipe};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splash_protocol::{
    CallEvent, CancelDisposition, CancelSignal, CapabilityManifest, FrameChannel, HostSession,
    Message, Outcome, PrivatePipeWorkerBootstrap, ServeEnd, SessionAuthenticator, SessionError,
    SessionKey, SessionRole, Token, ToolFailure, Worker,
};

fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

fn manifest() -> CapabilityManifest {
    let grants: Vec<Value> = ["demo.wait", "demo.quick", "demo.slow", "demo.stubborn"]
        .iter()
        .map(|t| {
            json!({"tool": t, "format": "json", "max_calls": 10,
                   "max_input_bytes": 64, "max_output_bytes": 64})
        })
        .collect();
    CapabilityManifest::from_value(json!({
        "protocol_version": 5, "session_id": "s-1", "grants": grants
    }))
    .expect("manifest")
}

/// `demo.wait` stops when cancelled (and fails after 5 s otherwise);
/// `demo.quick` returns at once; `demo.slow` (not cancellable) and
/// `demo.stubborn` (cancellable, but ignores the signal) take 300 ms.
fn tools(
    tool: &Token,
    input: Value,
    _: &CapabilityManifest,
    cancel: &CancelSignal,
) -> Result<Value, ToolFailure> {
    let start = Instant::now();
    match tool.as_str() {
        "demo.wait" => loop {
            if cancel.is_cancelled() {
                return Err(ToolFailure::Cancelled);
            }
            if start.elapsed() > Duration::from_secs(5) {
                return Err(ToolFailure::Error("never cancelled".into()));
            }
            thread::sleep(Duration::from_millis(2));
        },
        "demo.quick" => Ok(input),
        _ => {
            thread::sleep(Duration::from_millis(300));
            Ok(json!("done"))
        }
    }
}

type WorkerThread = JoinHandle<Result<ServeEnd, SessionError>>;

fn spawn_worker() -> (PipeWriter, PipeReader, WorkerThread) {
    let (worker_in, host_in) = pipe().expect("pipe");
    let (host_out, worker_out) = pipe().expect("pipe");
    let worker = thread::spawn(move || {
        Worker::new(worker_in, worker_out)?
            .serve_cancellable(&["demo.wait", "demo.quick", "demo.stubborn"], tools)
    });
    (host_in, host_out, worker)
}

fn start() -> (HostSession<PipeReader, PipeWriter>, WorkerThread) {
    let (mut host_in, host_out, worker) = spawn_worker();
    let key = SessionKey::generate().expect("rng");
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    let host = HostSession::open(manifest(), key, host_in, host_out).expect("open");
    (host, worker)
}

#[test]
fn a_cancellable_call_is_acknowledged_and_sends_no_result() {
    let (mut host, worker) = start();
    let id = host.start("demo.wait", json!({})).expect("start");
    assert!(matches!(
        host.start("demo.quick", json!(1)),
        Err(SessionError::Busy(_))
    ));
    host.cancel(&id).expect("cancel");
    assert_eq!(
        host.next_event().expect("event"),
        CallEvent::Cancelled {
            request_id: id.clone()
        }
    );
    assert!(host.call_in_flight().is_none());
    // The session goes on: the next call is answered normally.
    assert_eq!(
        host.invoke("demo.quick", json!([1])).expect("quick"),
        json!([1])
    );
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn a_cancel_after_the_result_is_too_late() {
    let (mut host, worker) = start();
    let id = host.start("demo.quick", json!(7)).expect("start");
    // Give the worker time to answer before the cancel is written.
    thread::sleep(Duration::from_millis(100));
    host.cancel(&id).expect("cancel");
    assert_eq!(
        host.next_event().expect("result"),
        CallEvent::Finished {
            request_id: id.clone(),
            output: Ok(json!(7))
        }
    );
    assert_eq!(
        host.next_event().expect("disposition"),
        CallEvent::TooLate { request_id: id }
    );
    assert!(matches!(host.next_event(), Err(SessionError::Idle)));
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn a_tool_that_ignores_the_signal_reports_its_result_then_too_late() {
    let (mut host, worker) = start();
    let id = host.start("demo.stubborn", json!({})).expect("start");
    host.cancel(&id).expect("cancel");
    assert_eq!(
        host.next_event().expect("result"),
        CallEvent::Finished {
            request_id: id.clone(),
            output: Ok(json!("done"))
        }
    );
    assert_eq!(
        host.next_event().expect("disposition"),
        CallEvent::TooLate { request_id: id }
    );
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn a_call_that_cannot_be_cancelled_stays_active() {
    let (mut host, worker) = start();
    let id = host.start("demo.slow", json!({})).expect("start");
    host.cancel(&id).expect("cancel");
    assert!(matches!(
        host.cancel(&id),
        Err(SessionError::NotCancellable(_))
    ));
    assert_eq!(
        host.next_event().expect("disposition"),
        CallEvent::Unsupported {
            request_id: id.clone()
        }
    );
    assert_eq!(
        host.next_event().expect("result"),
        CallEvent::Finished {
            request_id: id,
            output: Ok(json!("done"))
        }
    );
    assert!(host.call_in_flight().is_none());
    host.close().expect("close");
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn closing_with_a_call_in_flight_abandons_it() {
    let (mut host, worker) = start();
    let id = host.start("demo.slow", json!(1)).expect("start");
    let Err(SessionError::Abandoned(abandoned)) = host.close() else {
        panic!("close with a call in flight must report the abandoned call");
    };
    assert_eq!(abandoned, id.to_string());
    // The worker finds both pipes closed: its answer cannot be delivered.
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Codec(splash_protocol::CodecError::Io(_)))
    ));
}

#[test]
fn the_worker_answers_a_second_invoke_and_stray_cancels_itself() {
    let (mut host_in, host_out, worker) = spawn_worker();
    let key = SessionKey::generate().expect("rng");
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    let auth = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Host);
    let mut ch = FrameChannel::new(BufReader::new(host_out), host_in, auth);
    ch.send(Message::OpenSession {
        manifest: manifest(),
    })
    .expect("open");
    let invoke = |id: &str, tool: &str| Message::Invoke {
        request_id: tok(id),
        tool: tok(tool),
        input: json!({}),
    };
    ch.send(invoke("r-1", "demo.wait")).expect("send");
    ch.send(invoke("r-2", "demo.quick")).expect("send");
    match ch.recv().expect("reply") {
        Some(Message::Result {
            request_id,
            outcome: Outcome::Error(e),
        }) => {
            assert_eq!(request_id, tok("r-2"));
            assert!(e.contains("still running"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    ch.send(Message::Cancel {
        request_id: tok("r-9"),
    })
    .expect("send");
    assert_eq!(
        ch.recv().expect("reply"),
        Some(Message::CancellationResult {
            request_id: tok("r-9"),
            disposition: CancelDisposition::Unsupported
        })
    );
    ch.send(Message::Cancel {
        request_id: tok("r-1"),
    })
    .expect("send");
    assert_eq!(
        ch.recv().expect("reply"),
        Some(Message::CancellationResult {
            request_id: tok("r-1"),
            disposition: CancelDisposition::Acknowledged
        })
    );
    ch.send(Message::Cancel {
        request_id: tok("r-1"),
    })
    .expect("send");
    assert_eq!(
        ch.recv().expect("reply"),
        Some(Message::CancellationResult {
            request_id: tok("r-1"),
            disposition: CancelDisposition::TooLate
        })
    );
    // close_session while a call runs: the worker answers it, then ends.
    ch.send(invoke("r-3", "demo.slow")).expect("send");
    ch.send(Message::CloseSession {}).expect("close");
    assert!(matches!(
        ch.recv().expect("reply"),
        Some(Message::Result { request_id, outcome: Outcome::Ok(_) }) if request_id == tok("r-3")
    ));
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );
}

#[test]
fn the_host_refuses_dispositions_that_contradict_the_call() {
    let (mut worker_in, mut host_in) = pipe().expect("pipe");
    let (host_out, worker_out) = pipe().expect("pipe");
    // A worker that sends the result and then claims it stopped the effect.
    let rogue = thread::spawn(move || {
        let boot = PrivatePipeWorkerBootstrap::read_from(&mut worker_in).expect("preamble");
        let (id, key) = boot.into_parts();
        let auth = SessionAuthenticator::new(id, key, SessionRole::Worker);
        let mut ch = FrameChannel::new(BufReader::new(worker_in), worker_out, auth);
        assert!(matches!(ch.recv(), Ok(Some(Message::OpenSession { .. }))));
        let Ok(Some(Message::Invoke { request_id, .. })) = ch.recv() else {
            panic!("expected invoke");
        };
        assert!(matches!(ch.recv(), Ok(Some(Message::Cancel { .. }))));
        ch.send(Message::Result {
            request_id: request_id.clone(),
            outcome: Outcome::Ok(json!(1)),
        })
        .expect("send");
        ch.send(Message::CancellationResult {
            request_id,
            disposition: CancelDisposition::Acknowledged,
        })
        .expect("send");
        let _ = ch.recv();
    });
    let key = SessionKey::generate().expect("rng");
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    let mut host = HostSession::open(manifest(), key, host_in, host_out).expect("open");
    let id = host.start("demo.wait", json!({})).expect("start");
    host.cancel(&id).expect("cancel");
    assert!(matches!(host.next_event(), Ok(CallEvent::Finished { .. })));
    assert!(matches!(
        host.next_event(),
        Err(SessionError::Unexpected {
            got: "cancellation_result",
            ..
        })
    ));
    assert!(host.is_poisoned());
    assert!(matches!(host.next_event(), Err(SessionError::Poisoned)));
    drop(host);
    rogue.join().expect("rogue worker");
}
