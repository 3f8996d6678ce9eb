//! Cooperative cancellation between a host session and a cancellable
//! worker over real pipes.

mod common;

use std::io::{PipeReader, PipeWriter};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{cancel, cancel_result, close, invoke, pipes, raw_host, raw_worker, result, tok};
use serde_json::{Value, json};
use splash_protocol::{
    CallEvent, CancelOutcome, CancelSignal, CapabilityManifest, HostSession, Message,
    PrivatePipeWorkerBootstrap, ServeEnd, SessionError, SessionKey, Token, ToolFailure, Worker,
};

const TOOLS: [&str; 5] = [
    "demo.wait",
    "demo.quick",
    "demo.slow",
    "demo.stubborn",
    "demo.broken",
];

fn manifest() -> CapabilityManifest {
    let grants: Vec<Value> = TOOLS
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
/// `demo.stubborn` (cancellable, but ignores the signal) take 300 ms;
/// `demo.broken` fails after 100 ms.
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
        "demo.broken" => {
            thread::sleep(Duration::from_millis(100));
            Err(ToolFailure::Error("broken".into()))
        }
        _ => {
            thread::sleep(Duration::from_millis(300));
            Ok(json!(["done"]))
        }
    }
}

type WorkerThread = JoinHandle<Result<ServeEnd, SessionError>>;

fn spawn_worker() -> (PipeWriter, PipeReader, WorkerThread) {
    let (worker_in, worker_out, host_in, host_out) = pipes();
    let worker = thread::spawn(move || {
        Worker::new(worker_in, worker_out, &TOOLS)?
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
        host.start("demo.quick", json!([1])),
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
    let id = host.start("demo.quick", json!([7])).expect("start");
    // Give the worker time to answer before the cancel is written.
    thread::sleep(Duration::from_millis(100));
    host.cancel(&id).expect("cancel");
    assert_eq!(
        host.next_event().expect("result"),
        CallEvent::Finished {
            request_id: id.clone(),
            output: json!([7])
        }
    );
    assert_eq!(
        host.next_event().expect("outcome"),
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
            output: json!(["done"])
        }
    );
    assert_eq!(
        host.next_event().expect("outcome"),
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
        host.next_event().expect("outcome"),
        CallEvent::Unsupported {
            request_id: id.clone()
        }
    );
    assert_eq!(
        host.next_event().expect("result"),
        CallEvent::Finished {
            request_id: id,
            output: json!(["done"])
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
fn a_call_that_fails_while_the_host_waits_ends_the_session_at_once() {
    let (mut host, worker) = start();
    let began = Instant::now();
    let e = host.invoke("demo.broken", json!({})).expect_err("ended");
    assert!(
        matches!(&e, SessionError::WorkerEnded { request, .. } if request.as_str() == "r-1"),
        "{e:?}"
    );
    assert!(began.elapsed() < Duration::from_secs(3));
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::ToolFailed { message, .. }) if message == "broken"
    ));
}

#[test]
fn closing_with_a_call_in_flight_abandons_it() {
    let (mut host, worker) = start();
    let id = host.start("demo.slow", json!([1])).expect("start");
    let Err(SessionError::Abandoned(abandoned)) = host.close() else {
        panic!("close with a call in flight must report the abandoned call");
    };
    assert_eq!(abandoned, id);
    // The worker finds both pipes closed: its answer cannot be delivered.
    assert!(matches!(
        worker.join().expect("thread"),
        Err(SessionError::Codec(splash_protocol::CodecError::Io(_)))
    ));
}

#[test]
fn the_worker_checks_cancels_itself() {
    let (host_in, host_out, worker) = spawn_worker();
    let mut ch = raw_host(
        "s-1",
        SessionKey::generate().expect("rng"),
        host_in,
        host_out,
    );
    ch.send(Message::OpenSession {
        manifest: manifest(),
    })
    .expect("open");
    ch.send(invoke("s-1", "r-1", "demo.wait", json!({})))
        .expect("send");
    ch.send(cancel("s-1", "c-2", "r-1", "demo.wait"))
        .expect("send");
    assert_eq!(
        ch.recv().expect("reply"),
        Some(cancel_result(
            "s-1",
            "c-2",
            "r-1",
            "demo.wait",
            CancelOutcome::Acknowledged
        ))
    );
    // A cancel of an answered call is too late.
    ch.send(invoke("s-1", "r-3", "demo.quick", json!([3])))
        .expect("send");
    assert_eq!(
        ch.recv().expect("reply"),
        Some(result("s-1", "r-3", json!([3])))
    );
    ch.send(cancel("s-1", "c-4", "r-3", "demo.quick"))
        .expect("send");
    assert_eq!(
        ch.recv().expect("reply"),
        Some(cancel_result(
            "s-1",
            "c-4",
            "r-3",
            "demo.quick",
            CancelOutcome::TooLate
        ))
    );
    // close_session while a call runs: the worker answers it, then ends.
    ch.send(invoke("s-1", "r-5", "demo.slow", json!({})))
        .expect("send");
    ch.send(close("s-1")).expect("close");
    assert_eq!(
        ch.recv().expect("reply"),
        Some(result("s-1", "r-5", json!(["done"])))
    );
    assert_eq!(
        worker.join().expect("thread").expect("serve"),
        ServeEnd::Closed
    );

    // A cancel that names the running call under another tool ends the
    // session; so does a second invoke while a call runs.
    for second in [
        cancel("s-1", "c-2", "r-1", "demo.quick"),
        invoke("s-1", "r-2", "demo.quick", json!({})),
    ] {
        let (host_in, host_out, worker) = spawn_worker();
        let mut ch = raw_host(
            "s-1",
            SessionKey::generate().expect("rng"),
            host_in,
            host_out,
        );
        ch.send(Message::OpenSession {
            manifest: manifest(),
        })
        .expect("open");
        ch.send(invoke("s-1", "r-1", "demo.wait", json!({})))
            .expect("send");
        ch.send(second).expect("send");
        assert!(matches!(
            worker.join().expect("thread"),
            Err(SessionError::Refused { .. })
        ));
        assert_eq!(ch.recv().expect("end"), None);
    }
}

#[test]
fn the_host_refuses_answers_that_contradict_the_call() {
    type Rogue = fn(&mut common::Channel, Token);
    let rogues: [(Rogue, &str); 2] = [
        // The result, then a claim that the effect was stopped.
        (
            |ch, id| {
                ch.send(result("s-1", id.as_str(), json!([1])))
                    .expect("send");
                ch.send(cancel_result(
                    "s-1",
                    "c-2",
                    id.as_str(),
                    "demo.wait",
                    CancelOutcome::Acknowledged,
                ))
                .expect("send");
            },
            "contradiction",
        ),
        // A cancellation result under another cancellation id.
        (
            |ch, id| {
                ch.send(cancel_result(
                    "s-1",
                    "c-9",
                    id.as_str(),
                    "demo.wait",
                    CancelOutcome::Acknowledged,
                ))
                .expect("send");
            },
            "mismatch",
        ),
    ];
    for (rogue, name) in rogues {
        let (worker_in, worker_out, mut host_in, host_out) = pipes();
        let script = thread::spawn(move || {
            let mut ch = raw_worker(worker_in, worker_out);
            assert!(matches!(ch.recv(), Ok(Some(Message::OpenSession { .. }))));
            let Ok(Some(Message::Invoke { invocation })) = ch.recv() else {
                panic!("expected invoke");
            };
            assert!(matches!(ch.recv(), Ok(Some(Message::Cancel { .. }))));
            rogue(&mut ch, invocation.request_id);
            let _ = ch.recv();
        });
        let key = SessionKey::generate().expect("rng");
        PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
            .write_to(&mut host_in)
            .expect("preamble");
        let mut host = HostSession::open(manifest(), key, host_in, host_out).expect("open");
        let id = host.start("demo.wait", json!({})).expect("start");
        host.cancel(&id).expect("cancel");
        let mut last = host.next_event();
        if name == "contradiction" {
            assert!(matches!(last, Ok(CallEvent::Finished { .. })));
            last = host.next_event();
            assert!(
                matches!(
                    last,
                    Err(SessionError::Unexpected {
                        got: "cancellation_result",
                        ..
                    })
                ),
                "{last:?}"
            );
        } else {
            assert!(
                matches!(last, Err(SessionError::ReplyMismatch { .. })),
                "{last:?}"
            );
        }
        assert!(host.is_poisoned());
        assert!(matches!(host.next_event(), Err(SessionError::Poisoned)));
        drop(host);
        script.join().expect("rogue worker");
    }
}
