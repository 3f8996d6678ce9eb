//! Cost of the protocol's hot paths, printed as mean time per operation:
//!
//! - seal + open of a small `invoke` frame, and of one with a 64 KiB payload
//!   (tag computation and canonical re-serialization on both ends);
//! - encode + decode of one frame line through the JSON-line codec;
//! - a full `invoke` round trip between a `HostSession` and a `Worker`
//!   thread over OS pipes.
//!
//! Each is reported against a baseline measured in the same run: the same
//! message through plain `serde_json` (`to_vec` + `from_slice`, no tag, no
//! canonical form) for seal + open and the codec, and the same JSON lines
//! echoed by a thread over the same kind of pipes, with no session, for the
//! round trip.
//!
//! `SPLASH_BENCH_RUNS` sets the iteration count (default 20000; the 64 KiB
//! and round-trip cases use a tenth of it).

use std::hint::black_box;
use std::io::{BufRead, BufReader, Cursor, Write, pipe};
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

fn per_op(runs: u32, elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e6 / f64::from(runs.max(1))
}

/// One row: the operation, its baseline, and their ratio.
fn report(name: &str, runs: u32, elapsed: Duration, baseline: Duration) {
    let (ours, base) = (per_op(runs, elapsed), per_op(runs, baseline));
    println!(
        "| {name} | {runs} | {ours:.2} | {base:.2} | {:.2}x |",
        ours / base
    );
}

/// Baseline of seal + open and of the codec: the same message through
/// plain `serde_json`, without a tag or the canonical form.
fn plain_json(input: Value, runs: u32) -> Duration {
    let message = invoke(input);
    let start = Instant::now();
    for _ in 0..runs {
        let bytes = serde_json::to_vec(&message).expect("encode");
        black_box(serde_json::from_slice::<Message>(&bytes).expect("decode"));
    }
    start.elapsed()
}

/// Baseline of the round trip: a thread echoes each JSON line back over OS
/// pipes, with no session, tag or grant check.
fn plain_round_trip(runs: u32) -> Duration {
    let (echo_in, mut to_echo) = pipe().expect("pipe");
    let (from_echo, echo_out) = pipe().expect("pipe");
    let echo = thread::spawn(move || {
        let mut lines = BufReader::new(echo_in);
        let mut out = echo_out;
        let mut line = String::new();
        while lines.read_line(&mut line).expect("read") > 0 {
            let value: Value = serde_json::from_str(&line).expect("decode");
            let mut reply = serde_json::to_vec(&value).expect("encode");
            reply.push(b'\n');
            out.write_all(&reply).expect("write");
            line.clear();
        }
    });
    let mut replies = BufReader::new(from_echo);
    let mut line = String::new();
    let start = Instant::now();
    for i in 0..runs {
        let mut request = serde_json::to_vec(&invoke(json!({"i": i}))).expect("encode");
        request.push(b'\n');
        to_echo.write_all(&request).expect("write");
        line.clear();
        replies.read_line(&mut line).expect("read");
        black_box(serde_json::from_str::<Message>(&line).expect("decode"));
    }
    let elapsed = start.elapsed();
    drop(to_echo);
    echo.join().expect("echo thread");
    elapsed
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
    let big: Value = json!({"blob": "x".repeat(64 * 1024)});
    println!("| operation | runs | µs per op | baseline µs per op | ratio |");
    println!("|---|---:|---:|---:|---:|");
    report(
        "seal + open, small invoke (baseline: plain serde_json)",
        runs,
        seal_open(small.clone(), runs),
        plain_json(small.clone(), runs),
    );
    report(
        "seal + open, 64 KiB payload (baseline: plain serde_json)",
        runs / 10,
        seal_open(big.clone(), runs / 10),
        plain_json(big, runs / 10),
    );
    report(
        "codec write + read, small frame (baseline: plain serde_json)",
        runs,
        codec(runs),
        plain_json(small, runs),
    );
    report(
        "host invoke round trip over pipes (baseline: a JSON-line echo thread)",
        runs / 10,
        round_trip(runs / 10),
        plain_round_trip(runs / 10),
    );
}
