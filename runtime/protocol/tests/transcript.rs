//! A recorded session, checked frame by frame in both roles.
//!
//! `data/session-ctl-b.txt` holds every frame of one full session under the
//! key `0x01 0x02 … 0x20`, session `ctl-b`, one per line, prefixed `H ` for
//! a host frame and `W ` for a worker frame, in the order they crossed the
//! pipes: `open_session`, an `invoke` of `interop.echo` and its `result`, an
//! `invoke` of `interop.sleep`, a `cancel` of it and the `acknowledged`
//! cancellation result, `close_session`. The host's `invoke` at sequence 2,
//! the worker's `result` at sequence 1 and the host's `close_session` at
//! sequence 5 are the frames of the real Splash exchange in the protocol
//! notes (same tags); the other tags were computed from hand-written
//! authenticated bytes, not with this crate.
//!
//! - Host role: our `HostSession` talks to a scripted worker that checks
//!   each host frame against the recording, byte for byte, and answers with
//!   the recorded worker frames.
//! - Worker role: our worker library is fed the recorded host frames and
//!   must write exactly the recorded worker frames.

use std::io::{BufRead, BufReader, Read, Write, pipe};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splash_protocol::{
    CallEvent, CancelSignal, CapabilityManifest, HostSession, PrivatePipeWorkerBootstrap, ServeEnd,
    SessionKey, Token, ToolFailure, Worker,
};

const TRANSCRIPT: &str = include_str!("data/session-ctl-b.txt");

fn key() -> SessionKey {
    SessionKey::from_bytes(core::array::from_fn(|i| {
        u8::try_from(i + 1).expect("small")
    }))
    .expect("key")
}

fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

/// The recorded frames: (`true` for a host frame, the line).
fn frames() -> Vec<(bool, &'static str)> {
    TRANSCRIPT
        .lines()
        .map(|l| match l.split_once(' ') {
            Some(("H", f)) => (true, f),
            Some(("W", f)) => (false, f),
            _ => panic!("bad transcript line: {l}"),
        })
        .collect()
}

fn manifest() -> CapabilityManifest {
    let (_, open) = frames()[0];
    let frame: Value = serde_json::from_str(open).expect("json");
    CapabilityManifest::from_value(frame["message"]["manifest"].clone()).expect("manifest")
}

#[test]
fn the_transcript_is_the_session_described() {
    let kinds: Vec<(bool, String)> = frames()
        .into_iter()
        .map(|(h, f)| {
            let v: Value = serde_json::from_str(f).expect("json");
            (h, v["message"]["type"].as_str().expect("type").to_owned())
        })
        .collect();
    let expected = [
        (true, "open_session"),
        (true, "invoke"),
        (false, "result"),
        (true, "invoke"),
        (true, "cancel"),
        (false, "cancellation_result"),
        (true, "close_session"),
    ];
    assert_eq!(
        kinds,
        expected
            .iter()
            .map(|(h, k)| (*h, (*k).to_owned()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn our_host_writes_the_recorded_host_frames() {
    let (mut worker_in, mut host_in) = pipe().expect("pipe");
    let (host_out, mut worker_out) = pipe().expect("pipe");
    let script = thread::spawn(move || {
        let mut preamble = [0u8; 42 + 5];
        worker_in.read_exact(&mut preamble).expect("preamble");
        let mut lines = BufReader::new(worker_in).lines();
        let mut checked = 0;
        for (host, recorded) in frames() {
            if host {
                let line = lines.next().expect("a host frame").expect("read");
                assert_eq!(line, recorded, "host frame {}", checked + 1);
                checked += 1;
            } else {
                worker_out
                    .write_all(format!("{recorded}\n").as_bytes())
                    .expect("write");
            }
        }
        assert!(lines.next().is_none(), "nothing after close_session");
        checked
    });
    PrivatePipeWorkerBootstrap::new(tok("ctl-b"), key())
        .write_to(&mut host_in)
        .expect("preamble");
    let mut host = HostSession::open(manifest(), key(), host_in, host_out).expect("open");
    // The recording's invoke went out with the keys in this order; the host
    // sends them sorted.
    let input: Value = serde_json::from_str(r#"{"b":1,"a":2}"#).expect("json");
    assert_eq!(
        host.invoke("interop.echo", input).expect("echo"),
        json!({"echo": {"a": 2, "b": 1}, "worker": "splash"})
    );
    let r2 = host
        .start("interop.sleep", json!({"ms": 60000}))
        .expect("start");
    assert_eq!(r2, tok("r-2"));
    host.cancel(&r2).expect("cancel");
    assert_eq!(
        host.next_event().expect("answer"),
        CallEvent::Cancelled { request_id: r2 }
    );
    host.close().expect("close");
    assert_eq!(script.join().expect("script"), 5);
}

#[test]
fn our_worker_writes_the_recorded_worker_frames() {
    let (worker_in, mut host_in) = pipe().expect("pipe");
    let (host_out, worker_out) = pipe().expect("pipe");
    let worker = thread::spawn(move || {
        Worker::new(worker_in, worker_out, &["interop.echo", "interop.sleep"])?.serve_cancellable(
            &["interop.sleep"],
            |tool: &Token, input: Value, _: &CapabilityManifest, cancel: &CancelSignal| match tool
                .as_str()
            {
                "interop.echo" => Ok(json!({"echo": input, "worker": "splash"})),
                _ => {
                    let start = Instant::now();
                    while !cancel.is_cancelled() {
                        if start.elapsed() > Duration::from_secs(10) {
                            return Err(ToolFailure::Error("never cancelled".into()));
                        }
                        thread::sleep(Duration::from_millis(2));
                    }
                    Err(ToolFailure::Cancelled)
                }
            },
        )
    });
    PrivatePipeWorkerBootstrap::new(tok("ctl-b"), key())
        .write_to(&mut host_in)
        .expect("preamble");
    let mut replies = BufReader::new(host_out).lines();
    let mut checked = 0;
    for (host, recorded) in frames() {
        if host {
            host_in
                .write_all(format!("{recorded}\n").as_bytes())
                .expect("write");
        } else {
            let line = replies.next().expect("a worker frame").expect("read");
            assert_eq!(line, recorded, "worker frame {}", checked + 1);
            checked += 1;
        }
    }
    drop(host_in);
    assert_eq!(checked, 2);
    assert_eq!(
        worker.join().expect("worker thread").expect("serve"),
        ServeEnd::Closed
    );
    assert!(replies.next().is_none(), "nothing after the last answer");
}

#[test]
fn our_worker_accepts_the_invoke_with_its_keys_as_they_went_on_the_wire() {
    // The recorded exchange carried `{"b":1,"a":2}`; the tag covers the
    // sorted form, so the unsorted line must verify too.
    let (worker_in, mut host_in) = pipe().expect("pipe");
    let (host_out, worker_out) = pipe().expect("pipe");
    let worker = thread::spawn(move || {
        Worker::new(worker_in, worker_out, &["interop.echo", "interop.sleep"])?.serve(
            |_: &Token, input: Value, _: &CapabilityManifest| {
                Ok(json!({"echo": input, "worker": "splash"}))
            },
        )
    });
    PrivatePipeWorkerBootstrap::new(tok("ctl-b"), key())
        .write_to(&mut host_in)
        .expect("preamble");
    let f = frames();
    let unsorted = f[1].1.replace(r#"{"a":2,"b":1}"#, r#"{"b":1,"a":2}"#);
    assert_ne!(unsorted, f[1].1);
    host_in
        .write_all(format!("{}\n{unsorted}\n", f[0].1).as_bytes())
        .expect("write");
    let mut replies = BufReader::new(host_out).lines();
    assert_eq!(replies.next().expect("result").expect("read"), f[2].1);
    drop(host_in);
    assert_eq!(
        worker.join().expect("worker thread").expect("serve"),
        ServeEnd::EndOfInput
    );
}
