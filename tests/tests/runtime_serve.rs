//! `splashc serve --stdio` end to end: real `splashc` processes driving
//! real probe workers under the real bwrap. Every line either side writes
//! is held to `schemas/serve.schema.json`.

mod runtime_support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use runtime_support::{
    Binding, TempDir, bin_dir, device_directories_of, host_with_probe, probe_policy,
    processes_running, running_as_root, serial,
};
use serde_json::{Value, json};

/// How long any one event may take to arrive.
const PATIENCE: Duration = Duration::from_secs(20);

fn splashc() -> Option<PathBuf> {
    let path = bin_dir().join("splashc");
    splash_tests::require_host(
        path.is_file(),
        "the splashc binary (run `cargo build --workspace --bins` first)",
    )
    .then_some(path)
}

fn schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/serve.schema.json");
    let value: Value =
        serde_json::from_slice(&std::fs::read(path).expect("schema")).expect("schema JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&value)
        .expect("a valid draft 2020-12 schema")
}

/// A `splashc serve --stdio` process and the events it wrote.
struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Value>,
    schema: jsonschema::Validator,
    /// Events read but not yet asked for.
    pending: Vec<Value>,
}

impl Serve {
    fn start(splashc: &Path) -> Self {
        let mut child = Command::new(splashc)
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn splashc serve");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.expect("read an event");
                let event: Value = serde_json::from_str(&line).expect("an event is JSON");
                if tx.send(event).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            events,
            schema: schema(),
            pending: Vec::new(),
        }
    }

    /// Writes one control line, held to the schema unless `raw`.
    fn send(&mut self, request: &Value) {
        let errors: Vec<String> = self
            .schema
            .iter_errors(request)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{request}: {errors:?}");
        self.send_raw(&request.to_string());
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("write a control line");
        stdin.flush().expect("flush");
    }

    fn next(&mut self) -> Value {
        let event = self
            .events
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|e| panic!("no event within {PATIENCE:?}: {e}"));
        let errors: Vec<String> = self
            .schema
            .iter_errors(&event)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{event}: {errors:?}");
        event
    }

    /// The next event matching `want`; the others are kept for later.
    fn wait_for(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.pending.iter().position(&want) {
            return self.pending.remove(i);
        }
        loop {
            let event = self.next();
            if want(&event) {
                return event;
            }
            self.pending.push(event);
        }
    }

    fn wait_event(&mut self, kind: &str, session: &str) -> Value {
        self.wait_for(|e| e["event"] == kind && e["session"] == session)
    }

    /// Nothing more arrives within `quiet`.
    fn assert_quiet(&mut self, quiet: Duration) {
        assert!(self.pending.is_empty(), "{:?}", self.pending);
        match self.events.recv_timeout(quiet) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("unexpected: {other:?}"),
        }
    }

    /// Closes standard input; returns the remaining events and the status.
    fn finish(mut self) -> (Vec<Value>, std::process::ExitStatus) {
        drop(self.stdin.take());
        let mut rest = std::mem::take(&mut self.pending);
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self
                .events
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(e) => rest.push(e),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("splashc serve did not end: {rest:?}"),
            }
        }
        for e in &rest {
            let errors: Vec<String> = self.schema.iter_errors(e).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{e}: {errors:?}");
        }
        let status = self.child.wait().expect("reap splashc serve");
        (rest, status)
    }
}

/// The probe under the hardened controls.
fn policy(work: &TempDir, probe_dir: &TempDir, bwrap: &Path) -> PathBuf {
    let mut policy = probe_policy(bwrap, probe_dir);
    policy.tmpfs_root("scratch", "/workspace/scratch", "8 MiB");
    policy.tmp = Some("private size 16 MiB".into());
    policy.bounded_writes = true;
    policy.no_user_namespaces = true;
    policy.binding = Binding::PinnedMountsAndExecutables;
    policy.seccomp = Some("deny-known-escape-surface".into());
    let path = work.path().join("policy.splashpol");
    std::fs::write(&path, policy.render()).expect("policy");
    path
}

/// The number of sandboxes running `probe`, once it settles at `want`
/// (a launched worker may still be starting).
fn running(probe: &Path, want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = processes_running(probe).len();
        if n == want || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn manifest(session_id: &str) -> Value {
    let grant = |tool: &str| {
        json!({"tool": tool, "format": "json", "max_calls": 8,
               "max_input_bytes": 4096, "max_output_bytes": 65536})
    };
    json!({
        "protocol_version": 5,
        "session_id": session_id,
        "grants": [grant("probe.echo"), grant("probe.sleep")]
    })
}

fn launch(serve: &mut Serve, policy: &Path, session: &str) -> Value {
    serve.send(&json!({
        "op": "launch", "session": session,
        "policy": policy.to_str().expect("UTF-8 path"),
        "manifest": manifest(&format!("id-{session}")),
    }));
    let launched = serve.wait_for(|e| {
        e["session"] == session && (e["event"] == "launched" || e["event"] == "failed")
    });
    assert_eq!(launched["event"], "launched", "{launched}");
    launched
}

#[test]
fn two_sessions_at_once_call_cancel_refuse_and_close() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let work = TempDir::new("serve-two");
    let policy = policy(&work, &probe_dir, &bwrap);
    let mut serve = Serve::start(&splashc);
    launch(&mut serve, &policy, "a");
    launch(&mut serve, &policy, "b");
    assert_eq!(running(&probe_dir.path().join("splash-probe"), 2), 2);

    // A long call in `a`; `b` answers meanwhile: the sessions are apart.
    serve.send(
        &json!({"op": "start", "session": "a", "tool": "probe.sleep",
                       "input": {"ms": 30000}}),
    );
    let started = serve.wait_event("started", "a");
    let request = started["request"].as_str().expect("request id").to_owned();
    let began = Instant::now();
    for n in 1..=2 {
        serve.send(
            &json!({"op": "invoke", "session": "b", "tool": "probe.echo",
                           "input": {"input": n}}),
        );
        let result = serve.wait_event("result", "b");
        assert_eq!(result["output"], json!({"input": n}), "{result}");
    }
    // A second call while one is in flight is the API's refusal.
    serve.send(&json!({"op": "invoke", "session": "a", "tool": "probe.echo"}));
    let busy = serve.wait_event("failed", "a");
    assert_eq!(busy["outcome"], "refused", "{busy}");
    assert_eq!(busy["session_state"], "usable", "{busy}");
    // Cancel the sleep: acknowledged, and well before it would have ended.
    serve.send(&json!({"op": "cancel", "session": "a", "request": request}));
    let cancel = serve.wait_event("cancel", "a");
    assert_eq!(cancel["answer"], "acknowledged", "{cancel}");
    assert_eq!(cancel["request"], request.as_str());
    assert!(began.elapsed() < Duration::from_secs(15));

    // Refused before sending: the cause once, the session still usable.
    let deep = (0..33).fold(json!([]), |v, _| json!([v]));
    serve.send(&json!({"op": "invoke", "session": "a", "tool": "probe.echo", "input": deep}));
    let refused = serve.wait_event("failed", "a");
    assert_eq!(refused["outcome"], "refused", "{refused}");
    let error = refused["error"].as_str().expect("error");
    assert_eq!(
        error.matches("nested deeper than 32 levels").count(),
        1,
        "{error}"
    );
    serve.send(
        &json!({"op": "invoke", "session": "a", "tool": "probe.echo",
                       "input": {"input": "after"}}),
    );
    assert_eq!(
        serve.wait_event("result", "a")["output"],
        json!({"input": "after"})
    );

    // Close both: `close_session`, and each worker exits by itself.
    for s in ["a", "b"] {
        serve.send(&json!({"op": "close", "session": s}));
        let exited = serve.wait_event("exited", s);
        assert_eq!(exited["how"], "closed", "{exited}");
        assert_eq!(exited["status"], json!({"exited": 0}), "{exited}");
    }
    // A closed session's name takes no more requests.
    serve.send(&json!({"op": "invoke", "session": "a", "tool": "probe.echo"}));
    let gone = serve.wait_for(|e| e["event"] == "error");
    assert!(
        gone["error"]
            .as_str()
            .expect("text")
            .contains("no session `a`"),
        "{gone}"
    );
    serve.assert_quiet(Duration::from_millis(300));
    let (rest, status) = serve.finish();
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "{status}");
    assert!(processes_running(&probe_dir.path().join("splash-probe")).is_empty());
}

#[test]
fn a_malformed_line_gets_an_error_and_changes_nothing() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let work = TempDir::new("serve-malformed");
    let policy = policy(&work, &probe_dir, &bwrap);
    let mut serve = Serve::start(&splashc);
    launch(&mut serve, &policy, "a");
    let policy_text = policy.to_str().expect("UTF-8");
    let bad: Vec<(String, &str)> = vec![
        ("not json".into(), "not JSON"),
        ("[1,2]".into(), "a control line is a JSON object"),
        (r#"{"session":"a"}"#.into(), "needs `op`"),
        (r#"{"op":"explode","session":"a"}"#.into(), "unknown `op`"),
        (r#"{"op":"invoke","session":"a"}"#.into(), "needs `tool`"),
        (
            r#"{"op":"invoke","session":"a","tool":"probe.echo","extra":1}"#.into(),
            "has no field `extra`",
        ),
        (
            r#"{"op":"invoke","session":"A B","tool":"probe.echo"}"#.into(),
            "not a session name",
        ),
        (
            r#"{"op":"invoke","session":"zz","tool":"probe.echo"}"#.into(),
            "no session `zz`",
        ),
        (
            r#"{"op":"cancel","session":"a","request":7}"#.into(),
            "must be a string",
        ),
        (
            r#"{"op":"close","session":"a","grace_ms":-1}"#.into(),
            "milliseconds",
        ),
        (
            json!({"op": "launch", "session": "a", "policy": policy_text,
                   "manifest": manifest("id-again")})
            .to_string(),
            "already open",
        ),
        (
            json!({"op": "launch", "session": "c", "policy": policy_text,
                   "manifest": manifest("id-c"), "deadlines": {"wall_ms": 5}})
            .to_string(),
            "has no field `wall_ms`",
        ),
        ("".into(), "not JSON"),
    ];
    for (n, (line, says)) in bad.iter().enumerate() {
        serve.send_raw(line);
        let error = serve.next();
        assert_eq!(error["event"], "error", "{line}: {error}");
        assert_eq!(error["line"], n + 2, "{line}: {error}");
        let text = error["error"].as_str().expect("text");
        assert!(text.contains(says), "{line}: {text}");
    }
    // A policy with errors: the launch fails with its diagnostics, once,
    // and nothing runs under the name.
    let broken = work.path().join("broken.splashpol");
    std::fs::write(&broken, "splashpol 1\npolicy \"x\" {\n  bogus\n}\n").expect("policy");
    serve.send(&json!({"op": "launch", "session": "broken",
                       "policy": broken.to_str().expect("UTF-8"), "manifest": manifest("id-b")}));
    let failed = serve.wait_event("failed", "broken");
    assert_eq!(failed["outcome"], "launch_failed", "{failed}");
    let diagnostics = failed["diagnostics"].as_str().expect("diagnostics");
    assert!(
        diagnostics.contains("splash::parse::unknown-keyword"),
        "{diagnostics}"
    );
    assert!(
        !failed["error"]
            .as_str()
            .expect("error")
            .contains("splash::"),
        "{failed}"
    );
    serve.send(&json!({"op": "invoke", "session": "broken", "tool": "probe.echo"}));
    assert_eq!(serve.next()["event"], "error");

    // Nothing changed: one sandbox, and the session's first call is its
    // first request.
    assert_eq!(running(&probe_dir.path().join("splash-probe"), 1), 1);
    serve.send(&json!({"op": "start", "session": "a", "tool": "probe.echo"}));
    assert_eq!(serve.wait_event("started", "a")["request"], "r-1");
    assert_eq!(
        serve.wait_event("result", "a")["output"],
        json!({"input": null})
    );
    serve.send(&json!({"op": "close", "session": "a"}));
    assert_eq!(serve.wait_event("exited", "a")["how"], "closed");
    let (rest, status) = serve.finish();
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "{status}");
}

#[test]
fn the_end_of_the_control_stream_stops_and_reaps_every_sandbox() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let work = TempDir::new("serve-eof");
    let policy = policy(&work, &probe_dir, &bwrap);
    let probe = probe_dir.path().join("splash-probe");

    // Control: with the control stream open, the sandboxes keep running.
    let mut serve = Serve::start(&splashc);
    let mut bwrap_pids = Vec::new();
    for s in ["idle", "busy", "third"] {
        let launched = launch(&mut serve, &policy, s);
        bwrap_pids.push(launched["pid"].as_u64().expect("pid"));
    }
    serve.send(
        &json!({"op": "start", "session": "busy", "tool": "probe.sleep",
                       "input": {"ms": 60000}}),
    );
    serve.wait_event("started", "busy");
    assert_eq!(running(&probe, 3), 3);
    // As root each sandbox has its private device nodes; the directories
    // are this test's own, read from its sandboxes' mount tables.
    let devices = device_directories_of(&processes_running(&probe));
    if running_as_root() {
        assert_eq!(devices.len(), 3, "{devices:?}");
    }
    assert!(devices.iter().all(|d| d.is_dir()), "{devices:?}");
    // `stop` ends one session at once, and only that one.
    serve.send(&json!({"op": "stop", "session": "third"}));
    let stopped = serve.wait_event("exited", "third");
    assert_eq!(stopped["how"], "stopped", "{stopped}");
    assert_eq!(running(&probe, 2), 2);

    // The stream ends: every session left is stopped and reaped.
    let ended = Instant::now();
    let (rest, status) = serve.finish();
    assert!(
        ended.elapsed() < Duration::from_secs(10),
        "{:?}",
        ended.elapsed()
    );
    assert!(status.success(), "{status}");
    let exited: Vec<&Value> = rest.iter().filter(|e| e["event"] == "exited").collect();
    assert_eq!(exited.len(), 2, "{rest:?}");
    assert!(exited.iter().all(|e| e["how"] == "stopped"), "{rest:?}");
    // The call in flight has an indeterminate outcome, and says so.
    let busy = rest
        .iter()
        .find(|e| e["event"] == "failed" && e["session"] == "busy")
        .expect("the busy call failed");
    assert_eq!(busy["outcome"], "indeterminate", "{busy}");
    assert!(processes_running(&probe).is_empty());
    for pid in bwrap_pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "bubblewrap {pid} is still there"
        );
    }
    let left: Vec<_> = devices.iter().filter(|d| d.exists()).collect();
    assert!(left.is_empty(), "device directories left: {left:?}");
}

#[test]
fn an_idle_session_past_its_deadline_is_reported_as_it_passes() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let work = TempDir::new("serve-idle");
    let policy = policy(&work, &probe_dir, &bwrap);
    let probe = probe_dir.path().join("splash-probe");
    let mut serve = Serve::start(&splashc);
    // Control: a session without a deadline stays open while idle.
    launch(&mut serve, &policy, "open");
    serve.send(&json!({
        "op": "launch", "session": "timed",
        "policy": policy.to_str().expect("UTF-8 path"),
        "manifest": manifest("id-timed"),
        "deadlines": {"session_ms": 500},
    }));
    let launched = serve.wait_for(|e| e["session"] == "timed");
    assert_eq!(launched["event"], "launched", "{launched}");
    let since = Instant::now();
    // No request is sent: the deadline alone ends the session.
    let exited = serve.wait_event("exited", "timed");
    assert!(
        since.elapsed() < Duration::from_secs(2),
        "{:?}",
        since.elapsed()
    );
    assert_eq!(exited["how"], "stopped", "{exited}");
    assert!(
        exited["reason"]
            .as_str()
            .is_some_and(|r| r.contains("session deadline")),
        "{exited}"
    );
    assert_eq!(running(&probe, 1), 1, "only the control session runs");
    serve.send(
        &json!({"op": "invoke", "session": "open", "tool": "probe.echo",
                       "input": {"input": 1}}),
    );
    let result = serve.wait_event("result", "open");
    assert_eq!(result["output"], json!({"input": 1}), "{result}");
    // A request to the ended session is refused and changes nothing.
    serve.send(
        &json!({"op": "invoke", "session": "timed", "tool": "probe.echo",
                       "input": {"input": 2}}),
    );
    let refused = serve.wait_for(|e| e["event"] == "error");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("no session `timed`")),
        "{refused}"
    );
    let (_, status) = serve.finish();
    assert!(status.success(), "{status}");
    assert!(processes_running(&probe).is_empty());
}
