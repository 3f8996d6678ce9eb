//! Cost of the protocol's hot paths, printed as mean time per operation:
//!
//! - seal + open of a small `invoke` frame, and of one with a 64 KiB payload
//!   (tag computation and canonical re-serialization on both ends);
//! - encode + decode of one frame line through the JSON-line codec;
//! - a full `invoke` round trip between a `HostSession` and a `Worker`
//!   thread over OS pipes.
//!
//! `SPLASH_BENCH_RUNS` sets the iteration count (default 20000; the 64 KiB
//! and round-trip cases use a tenth of it).

use std::hint::black_box;
use std::io::{Cursor, pipe};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splash_protocol::{
    CapabilityManifest, Frame, HostSession, Invocation, JsonLineReader, JsonLineWriter,
    MAX_SESSION_REQUEST_IDS, Message, Payload, PrivatePipeWorkerBootstrap, SessionAuthenticator,
    SessionKey, SessionRole, Token, Version, Worker,
};

fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

fn invoke(value: Value) -> Message {
    Message::Invoke {
        invocation: Invocation {
            protocol_version: Version,
            session_id: tok("s-1"),
            request_id: tok("r-1"),
            tool: tok("demo.echo"),
            payload: Payload::Json(value),
        },
    }
}

fn report(name: &str, runs: u32, elapsed: Duration) {
    let per = elapsed.as_nanos() / u128::from(runs.max(1));
    println!(
        "{name:<44} {runs:>7} runs  {:>10.2} us/op",
        per as f64 / 1000.0
    );
}

fn seal_open(input: Value, runs: u32) -> Duration {
    let key = SessionKey::from_bytes([7; 32]).expect("key");
    let mut host = SessionAuthenticator::new(tok("s-1"), key.clone(), SessionRole::Host);
    let mut worker = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Worker);
    let start = Instant::now();
    for _ in 0..runs {
        let frame = host.seal(invoke(input.clone())).expect("seal");
        black_box(worker.open(frame).expect("open"));
    }
    start.elapsed()
}

fn codec(runs: u32) -> Duration {
    let key = SessionKey::from_bytes([7; 32]).expect("key");
    let mut host = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Host);
    let frame = host
        .seal(invoke(
            json!({"path": "/workspace/project/src/main.rs", "n": 3}),
        ))
        .expect("seal");
    let start = Instant::now();
    for _ in 0..runs {
        let mut w = JsonLineWriter::new(Vec::with_capacity(512));
        w.write(&frame).expect("write");
        let mut r = JsonLineReader::new(Cursor::new(w.into_inner()));
        black_box(r.read::<Frame>().expect("read"));
    }
    start.elapsed()
}

/// `runs` invokes, in as many sessions as the per-session request-id budget
/// needs (session setup is not timed).
fn round_trip(runs: u32) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = runs;
    while left > 0 {
        let n = left.min(u32::try_from(MAX_SESSION_REQUEST_IDS).unwrap_or(u32::MAX));
        total += one_session(n);
        left -= n;
    }
    total
}

fn one_session(runs: u32) -> Duration {
    let manifest = CapabilityManifest::from_value(json!({
        "protocol_version": 5, "session_id": "s-1",
        "grants": [{"tool": "demo.echo", "format": "json", "max_calls": u32::MAX,
                    "max_input_bytes": 4096, "max_output_bytes": 4096}]
    }))
    .expect("manifest");
    let (worker_in, mut host_in) = pipe().expect("pipe");
    let (host_out, worker_out) = pipe().expect("pipe");
    let worker = thread::spawn(move || {
        Worker::new(worker_in, worker_out, &["demo.echo"])
            .and_then(|w| w.serve(|_, input, _| Ok(input)))
            .expect("worker")
    });
    let key = SessionKey::generate().expect("rng");
    PrivatePipeWorkerBootstrap::new(tok("s-1"), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    let mut host = HostSession::open(manifest, key, host_in, host_out).expect("open");
    let start = Instant::now();
    for i in 0..runs {
        black_box(host.invoke("demo.echo", json!({"i": i})).expect("invoke"));
    }
    let elapsed = start.elapsed();
    host.close().expect("close");
    worker.join().expect("worker thread");
    elapsed
}

fn main() {
    let runs: u32 = std::env::var("SPLASH_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let small = json!({"path": "/workspace/project/src/main.rs", "n": 3});
    report("seal + open, small invoke", runs, seal_open(small, runs));
    let big: Value = json!({"blob": "x".repeat(64 * 1024)});
    report(
        "seal + open, 64 KiB payload",
        runs / 10,
        seal_open(big, runs / 10),
    );
    report("codec write + read, small frame", runs, codec(runs));
    report(
        "host invoke round trip over pipes",
        runs / 10,
        round_trip(runs / 10),
    );
}
