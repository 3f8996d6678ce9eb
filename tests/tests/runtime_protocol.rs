//! The host side rejects tampered, replayed, reflected and oversized frames
//! coming from a real worker in a real sandbox. The worker's stdout passes
//! through an interposer that changes exactly one thing per case; the
//! control case changes nothing and the same calls succeed.

mod runtime_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::ChildStdin;
use std::sync::{Arc, Mutex};

use runtime_support::{Binding, host_with_probe, probe_manifest, probe_policy, serial};
use serde_json::json;
use splash_protocol::{HostSession, PrivatePipeWorkerBootstrap, SessionError, SessionKey};
use splash_runtime::{BoundCommand, Deadlines, StopAwareStdout};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Untouched,
    /// One hex digit of the first reply's tag changed.
    Tampered,
    /// The first reply delivered again in place of the second.
    Replayed,
    /// The host's own `open_session` frame handed back as the reply.
    Reflected,
    /// A reply line one byte over the 1 MiB frame limit.
    Oversized,
}

/// Records every line the host writes to the worker.
struct Tee {
    inner: ChildStdin,
    lines: Arc<Mutex<Vec<String>>>,
    partial: Vec<u8>,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.partial.extend_from_slice(&buf[..n]);
        while let Some(pos) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=pos).collect();
            if let Ok(mut lines) = self.lines.lock() {
                lines.push(String::from_utf8_lossy(&line).into_owned());
            }
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Delivers the worker's lines to the host, changed according to `mode`.
struct Interposer {
    inner: BufReader<StopAwareStdout>,
    mode: Mode,
    host_lines: Arc<Mutex<Vec<String>>>,
    first: Option<String>,
    count: usize,
    pending: Vec<u8>,
}

impl Interposer {
    fn next_line(&mut self) -> std::io::Result<Vec<u8>> {
        let mut line = String::new();
        if self.inner.read_line(&mut line)? == 0 {
            return Ok(Vec::new());
        }
        self.count += 1;
        let out = match (self.mode, self.count) {
            (Mode::Tampered, 1) => {
                let at = line.find("\"auth_tag\":\"").expect("tag") + 12;
                let mut bytes = line.into_bytes();
                bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
                return Ok(bytes);
            }
            (Mode::Replayed, 1) => {
                self.first = Some(line.clone());
                line
            }
            (Mode::Replayed, 2) => self.first.clone().expect("first reply"),
            (Mode::Reflected, 1) => self.host_lines.lock().expect("host lines")[0].clone(),
            (Mode::Oversized, 1) => {
                let filler = "a".repeat(splash_protocol::MAX_LINE_BYTES);
                format!("{{\"x\":\"{filler}\"}}\n")
            }
            _ => line,
        };
        Ok(out.into_bytes())
    }
}

impl Read for Interposer {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            self.pending = self.next_line()?;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

fn run_case(bound: &BoundCommand, mode: Mode) -> (Result<(), SessionError>, bool) {
    let manifest = probe_manifest("s-1");
    let key = SessionKey::generate().expect("key");
    let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
    let (worker, stdin, stdout) = bound
        .spawn_watched(&boot, Deadlines::none())
        .expect("spawn");
    let host_lines = Arc::new(Mutex::new(Vec::new()));
    let tee = Tee {
        inner: stdin,
        lines: host_lines.clone(),
        partial: Vec::new(),
    };
    let reader = Interposer {
        inner: BufReader::new(stdout),
        mode,
        host_lines,
        first: None,
        count: 0,
        pending: Vec::new(),
    };
    let mut session = HostSession::open(manifest, key, tee, reader).expect("open");
    let result = session
        .invoke("probe.echo", json!({"input": 1}))
        .and_then(|_| session.invoke("probe.echo", json!({"input": 2})))
        .map(|_| ());
    let poisoned = session.is_poisoned();
    if result.is_err() {
        // A poisoned session refuses every later call.
        assert!(matches!(
            session.invoke("probe.echo", json!({"input": 3})),
            Err(SessionError::Poisoned)
        ));
    }
    drop(session);
    worker.release().expect("terminate");
    (result, poisoned)
}

#[test]
fn tampered_replayed_reflected_and_oversized_frames_are_rejected() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.binding = Binding::PinnedMountsAndExecutables;
    let bound = BoundCommand::bind(policy.plan()).expect("bind");

    let (control, poisoned) = run_case(&bound, Mode::Untouched);
    assert!(control.is_ok(), "control: {control:?}");
    assert!(!poisoned);

    for (mode, expected) in [
        (Mode::Tampered, "frame authentication tag does not match"),
        (Mode::Replayed, "frame has sequence 1; expected 2"),
        (Mode::Reflected, "frame authentication tag does not match"),
        (Mode::Oversized, "line exceeds 1048576 bytes"),
    ] {
        let (result, poisoned) = run_case(&bound, mode);
        let err = result.expect_err("must be rejected").to_string();
        assert!(err.contains(expected), "{mode:?}: {err}");
        assert!(poisoned, "{mode:?} did not poison the session");
    }
    assert!(runtime_support::live_children().is_empty());
}

/// The protocol has no error frame: a sandboxed worker that cannot serve a
/// request ends the session, and the host names the unanswered request.
#[test]
fn a_sandboxed_worker_ends_the_session_on_a_request_it_cannot_serve() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let bound = BoundCommand::bind(policy.plan()).expect("bind");
    let mut probe = runtime_support::ProbeSession::start(&bound, None).expect("start");
    assert_eq!(
        probe
            .session
            .invoke("probe.echo", json!({"input": [1.50, 1e3]}))
            .expect("echo"),
        json!({"input": [1.5, 1000.0]})
    );
    match probe.session.invoke("probe.try", json!({"op": "nonsense"})) {
        Err(SessionError::WorkerEnded {
            kind,
            request,
            tool,
        }) => {
            assert_eq!(
                (kind, request.as_str(), tool.as_str()),
                ("invoke", "r-2", "probe.try")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(probe.session.is_poisoned());
    let status = runtime_support::reaped(&probe.worker);
    assert_eq!(status, splash_runtime::WorkerStatus::Exited(1));
    assert!(runtime_support::live_children().is_empty());
}
