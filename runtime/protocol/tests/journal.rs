//! The worker library's operation journal: durable operations recorded
//! across worker instances (each a fresh session over real OS pipes, the
//! worker on its own thread), torn records that never read as completed,
//! corruption and the single-writer lock.

mod common;

use std::io::{PipeReader, PipeWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};

use common::{pipes, tok};
use serde_json::{Value, json};
use splash_protocol::{
    CapabilityManifest, HostSession, JOURNAL_FILE, Journal, JournalError, OperationStatus, Payload,
    PrivatePipeWorkerBootstrap, ServeEnd, SessionError, SessionKey, Token, ToolFailure, Worker,
};

const TOOLS: [&str; 3] = ["demo.echo", "demo.fail", "demo.plain"];
const DURABLE: [&str; 2] = ["demo.echo", "demo.fail"];

/// How many times a handler ran with the input `{"x": 1}` (only one test
/// uses it, so tests running in parallel do not disturb the count).
static RUNS: AtomicUsize = AtomicUsize::new(0);

fn manifest(session: &str) -> CapabilityManifest {
    CapabilityManifest::from_json(
        json!({
            "protocol_version": 5,
            "session_id": session,
            "grants": [
                {"tool": "demo.echo", "format": "json", "max_calls": 8, "max_input_bytes": 64, "max_output_bytes": 64, "max_compensations": 1},
                {"tool": "demo.fail", "format": "json", "max_calls": 8, "max_input_bytes": 64, "max_output_bytes": 64},
                {"tool": "demo.plain", "format": "json", "max_calls": 8, "max_input_bytes": 64, "max_output_bytes": 64}
            ]
        })
        .to_string()
        .as_bytes(),
    )
    .expect("valid manifest")
}

fn tools(tool: &Token, input: Value, _: &CapabilityManifest) -> Result<Value, String> {
    if input == json!({"x": 1}) {
        RUNS.fetch_add(1, Ordering::SeqCst);
    }
    match tool.as_str() {
        "demo.echo" | "demo.plain" => Ok(json!({"echo": input})),
        _ => Err("it failed".into()),
    }
}

type WorkerThread = JoinHandle<Result<ServeEnd, SessionError>>;

/// A fresh directory for one journal, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("splash-journal-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create dir");
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn file(&self) -> PathBuf {
        self.0.join(JOURNAL_FILE)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A worker session; `journal` enables durable operations, `cancellable`
/// serves with `serve_cancellable`.
fn start(
    session: &str,
    journal: Option<&Path>,
    cancellable: bool,
) -> (HostSession<PipeReader, PipeWriter>, WorkerThread) {
    let (worker_in, worker_out, mut host_in, host_out) = pipes();
    let journal = journal.map(|d| Journal::open(d).expect("open journal"));
    let worker = thread::spawn(move || {
        let worker = Worker::new(worker_in, worker_out, &TOOLS)?;
        let worker = match journal {
            Some(j) => worker.with_journal(j, &DURABLE),
            None => worker,
        };
        if cancellable {
            worker.serve_cancellable(&[], |tool, input, manifest, _| {
                tools(tool, input, manifest).map_err(ToolFailure::Error)
            })
        } else {
            worker.serve(tools)
        }
    });
    let key = SessionKey::generate().expect("rng");
    PrivatePipeWorkerBootstrap::new(tok(session), key.clone())
        .write_to(&mut host_in)
        .expect("preamble");
    let host = HostSession::open(manifest(session), key, host_in, host_out).expect("open");
    (host, worker)
}

fn succeeded(value: Value) -> OperationStatus {
    OperationStatus::Succeeded {
        payload: Payload::Json(value),
    }
}

/// The session ended on a request of `kind`, and the worker says why.
fn ended(e: &SessionError, kind: &'static str, worker: WorkerThread, reason: &str) -> SessionError {
    assert!(
        matches!(e, SessionError::WorkerEnded { kind: k, .. } if *k == kind),
        "{e:?}"
    );
    let why = worker
        .join()
        .expect("thread")
        .expect_err("the worker ended the session");
    assert!(why.to_string().contains(reason), "{why} / {reason}");
    why
}

#[test]
fn operations_are_recorded_and_reconciled_in_later_sessions() {
    for cancellable in [false, true] {
        let dir = Dir::new(if cancellable { "rec-c" } else { "rec-s" });
        let op = tok("op-1");
        let (mut host, worker) = start("s-1", Some(dir.path()), cancellable);
        let before = RUNS.load(Ordering::SeqCst);
        let status = host
            .dispatch("demo.echo", &op, json!({"x": 1}))
            .expect("dispatch");
        assert_eq!(status, succeeded(json!({"echo": {"x": 1}})));
        // A repeat of the finished operation gets the recorded status and
        // does not run the tool again.
        let again = host
            .dispatch("demo.echo", &op, json!({"x": 1}))
            .expect("repeat");
        assert_eq!(again, status);
        assert_eq!(RUNS.load(Ordering::SeqCst), before + 1);
        // In the same session, reconciliation reads the journal too.
        assert_eq!(host.reconcile("demo.echo", &op).expect("reconcile"), status);
        host.close().expect("close");
        assert!(matches!(
            worker.join().expect("thread"),
            Ok(ServeEnd::Closed)
        ));

        // A later worker (a fresh journal instance, a fresh session).
        let (mut host, worker) = start("s-2", Some(dir.path()), cancellable);
        assert_eq!(host.reconcile("demo.echo", &op).expect("reconcile"), status);
        host.close().expect("close");
        worker.join().expect("thread").expect("served");

        // The same key for another input ends the session.
        let (mut host, worker) = start("s-3", Some(dir.path()), cancellable);
        let e = host
            .dispatch("demo.echo", &op, json!({"x": 2}))
            .expect_err("key reused");
        ended(&e, "dispatch_operation", worker, "another tool or input");
        // An operation key the journal has no record of ends the session:
        // the protocol has no state for it (as in Splash).
        let (mut host, worker) = start("s-4", Some(dir.path()), cancellable);
        let e = host
            .reconcile("demo.echo", &tok("op-never"))
            .expect_err("unknown");
        ended(
            &e,
            "reconcile_operation",
            worker,
            "no record of operation `op-never`",
        );
        // So does a known key under another tool.
        let (mut host, worker) = start("s-5", Some(dir.path()), cancellable);
        let e = host.reconcile("demo.plain", &op).expect_err("other tool");
        ended(&e, "reconcile_operation", worker, "no record");
        // A tool not declared durable is not dispatched.
        let (mut host, worker) = start("s-6", Some(dir.path()), cancellable);
        let e = host
            .dispatch("demo.plain", &tok("op-2"), json!({}))
            .expect_err("not durable");
        ended(
            &e,
            "dispatch_operation",
            worker,
            "not served as a durable operation",
        );
        // Control: an ordinary call of that tool is served.
        let (mut host, worker) = start("s-7", Some(dir.path()), cancellable);
        host.invoke("demo.plain", json!({})).expect("invoke");
        host.close().expect("close");
        worker.join().expect("thread").expect("served");
    }
}

#[test]
fn an_operation_without_an_outcome_reconciles_as_running() {
    let dir = Dir::new("started");
    let op = tok("op-f");
    // The tool fails: the session ends and the operation stays started.
    let (mut host, worker) = start("s-1", Some(dir.path()), false);
    let e = host
        .dispatch("demo.fail", &op, json!({}))
        .expect_err("tool failed");
    ended(
        &e,
        "dispatch_operation",
        worker,
        "stays recorded as started",
    );
    let (mut host, worker) = start("s-2", Some(dir.path()), false);
    assert_eq!(
        host.reconcile("demo.fail", &op).expect("reconcile"),
        OperationStatus::Running
    );
    host.close().expect("close");
    worker.join().expect("thread").expect("served");
    // A repeated dispatch cannot know whether the effect happened: it is
    // refused rather than run twice.
    let (mut host, worker) = start("s-3", Some(dir.path()), false);
    let e = host
        .dispatch("demo.fail", &op, json!({}))
        .expect_err("started earlier");
    ended(&e, "dispatch_operation", worker, "started earlier");
}

/// Writes one finished operation and returns the journal's bytes.
fn one_finished(dir: &Dir) -> Vec<u8> {
    let (mut host, worker) = start("s-1", Some(dir.path()), false);
    host.dispatch("demo.echo", &tok("op-t"), json!({"t": 1}))
        .expect("dispatch");
    host.close().expect("close");
    worker.join().expect("thread").expect("served");
    let bytes = std::fs::read(dir.file()).expect("journal");
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 2);
    bytes
}

fn reconcile_t(dir: &Dir, session: &str) -> OperationStatus {
    let (mut host, worker) = start(session, Some(dir.path()), false);
    let status = host
        .reconcile("demo.echo", &tok("op-t"))
        .expect("reconcile");
    host.close().expect("close");
    worker.join().expect("thread").expect("served");
    status
}

#[test]
fn a_torn_outcome_reads_as_started_never_as_completed() {
    let dir = Dir::new("torn");
    let bytes = one_finished(&dir);
    let first = bytes.iter().position(|&b| b == b'\n').expect("line") + 1;
    // Control: the whole journal reads as completed.
    assert_eq!(
        reconcile_t(&dir, "s-2"),
        succeeded(json!({"echo": {"t": 1}}))
    );
    // Every cut inside the outcome record: started, not completed.
    for cut in [first + 1, first + 40, bytes.len() - 1] {
        std::fs::write(dir.file(), &bytes[..cut]).expect("tear");
        assert_eq!(
            reconcile_t(&dir, "s-3"),
            OperationStatus::Running,
            "cut {cut}"
        );
        // The torn tail was dropped, so later records append cleanly.
        assert_eq!(std::fs::read(dir.file()).expect("journal"), &bytes[..first]);
    }
    // A complete last line whose hash does not match (a changed byte) is a
    // torn record too.
    let mut flipped = bytes.clone();
    let at = bytes.len() - 10;
    flipped[at] ^= 0x01;
    std::fs::write(dir.file(), &flipped).expect("flip");
    assert_eq!(reconcile_t(&dir, "s-4"), OperationStatus::Running);
    // A torn start record: the operation never started.
    std::fs::write(dir.file(), &bytes[..first - 5]).expect("tear");
    let (mut host, worker) = start("s-5", Some(dir.path()), false);
    let e = host
        .reconcile("demo.echo", &tok("op-t"))
        .expect_err("no record");
    ended(&e, "reconcile_operation", worker, "no record");
    assert!(std::fs::read(dir.file()).expect("journal").is_empty());
}

#[test]
fn a_corrupt_record_before_good_ones_is_refused() {
    let dir = Dir::new("corrupt");
    let mut bytes = one_finished(&dir);
    bytes[3] ^= 0x01;
    std::fs::write(dir.file(), &bytes).expect("corrupt");
    match Journal::open(dir.path()) {
        Err(JournalError::Corrupt { record: 1, .. }) => {}
        other => panic!("expected corruption at record 1: {other:?}"),
    }
}

#[test]
fn one_journal_has_one_writer() {
    let dir = Dir::new("lock");
    let held = Journal::open(dir.path()).expect("open");
    assert!(matches!(
        Journal::open(dir.path()),
        Err(JournalError::Locked(_))
    ));
    drop(held);
    Journal::open(dir.path()).expect("free again");
}

#[test]
fn without_a_journal_durable_requests_end_the_session() {
    for cancellable in [false, true] {
        let (mut host, worker) = start("s-1", None, cancellable);
        let e = host
            .reconcile("demo.echo", &tok("op-1"))
            .expect_err("no journal");
        ended(&e, "reconcile_operation", worker, "no operation journal");
        let (mut host, worker) = start("s-2", None, cancellable);
        let e = host
            .dispatch("demo.echo", &tok("op-1"), json!({}))
            .expect_err("no journal");
        ended(&e, "dispatch_operation", worker, "no operation journal");
    }
}

#[test]
fn a_journaling_worker_serves_no_compensation() {
    let dir = Dir::new("compensate");
    let op = tok("op-1");
    let (mut host, worker) = start("s-1", Some(dir.path()), true);
    host.dispatch("demo.echo", &op, json!({"c": 1}))
        .expect("dispatch");
    let e = host
        .compensate("demo.echo", &op, &tok("cmp-1"), &tok("tenant"), json!({}))
        .expect_err("no compensation");
    ended(
        &e,
        "compensate_operation",
        worker,
        "no compensating operations",
    );
}
