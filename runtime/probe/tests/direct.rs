//! Runs the real `splash-probe` binary as a child process, with no sandbox,
//! through the host session: the control run for every sandboxed probe.

use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use splash_protocol::{
    CapabilityManifest, HostSession, PrivatePipeWorkerBootstrap, SessionError, SessionKey, Token,
};

const TOOLS: [&str; 8] = [
    "probe.report",
    "probe.path",
    "probe.write",
    "probe.exec",
    "probe.try",
    "probe.spin",
    "probe.sleep",
    "probe.echo",
];

use splash_require_host::require_host as host_has;

fn manifest(session: &str) -> CapabilityManifest {
    let grants: Vec<Value> = TOOLS
        .iter()
        .map(|t| {
            json!({"tool": t, "format": "json", "max_calls": 100,
                   "max_input_bytes": 4096, "max_output_bytes": 1 << 20})
        })
        .collect();
    CapabilityManifest::from_value(json!({
        "protocol_version": 5, "session_id": session, "grants": grants
    }))
    .expect("valid manifest")
}

struct Probe {
    child: Child,
    host: Option<HostSession<ChildStdout, ChildStdin>>,
}

impl Probe {
    fn start(extra_env: &[(&str, &str)]) -> Self {
        Self::start_command(Command::new(env!("CARGO_BIN_EXE_splash-probe")), extra_env)
    }

    fn start_command(mut cmd: Command, extra_env: &[(&str, &str)]) -> Self {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn the probe");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let key = SessionKey::generate().expect("rng");
        PrivatePipeWorkerBootstrap::new(Token::new("probe-1").expect("token"), key.clone())
            .write_to(&mut stdin)
            .expect("preamble");
        let host = HostSession::open(manifest("probe-1"), key, stdin, stdout).expect("open");
        Self {
            child,
            host: Some(host),
        }
    }

    fn call(&mut self, tool: &str, input: Value) -> Value {
        self.host
            .as_mut()
            .expect("open")
            .invoke(tool, input)
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    }

    fn finish(mut self) {
        self.host.take().expect("open").close().expect("close");
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "probe exited with {status}");
    }
}

#[test]
fn report_comes_back_authenticated() {
    let mut p = Probe::start(&[("SPLASH_PROBE_MARK", "visible")]);
    let r = p.call(
        "probe.report",
        json!({"statfs": ["/", "/nonexistent-splash"]}),
    );
    let size = serde_json::to_vec(&r).expect("json").len();
    eprintln!("probe.report is {size} bytes here");
    assert_eq!(r["pid"], json!(p.child.id()));
    assert_eq!(r["environment"]["SPLASH_PROBE_MARK"], json!("visible"));
    for cap in [
        "inheritable",
        "permitted",
        "effective",
        "bounding",
        "ambient",
    ] {
        let v = r["capabilities"][cap].as_str().expect("capability set");
        assert_eq!(v.len(), 16, "{cap}: {v}");
    }
    assert!(r["no_new_privs"].is_u64());
    assert!(r["seccomp"].is_u64());
    let mounts = r["mounts"].as_array().expect("mounts");
    assert!(mounts.iter().any(|m| m["mount_point"] == json!("/")));
    let fds = r["fds"].as_array().expect("fds");
    for fd in [0, 1, 2] {
        assert!(
            fds.iter().any(|f| f["fd"] == json!(fd)),
            "fd {fd} in {fds:?}"
        );
    }
    assert!(r["limits"]["Max open files"]["soft"].is_string());
    assert!(r["uid_map"].is_string());
    assert!(r["hostname"].is_string());
    assert!(r["statfs"][0]["size_bytes"].as_u64().expect("size") > 0);
    assert_eq!(r["statfs"][1]["error"]["name"], json!("ENOENT"));
    assert!(
        r["namespaces"]["mnt"]
            .as_str()
            .expect("mnt ns")
            .starts_with("mnt:[")
    );
    p.finish();
}

#[test]
fn path_write_exec_echo_sleep_and_spin() {
    let dir_guard = tempfile::Builder::new()
        .prefix("splash-probe-test-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    let dir_s = dir.to_str().expect("utf-8").to_owned();
    let mut p = Probe::start(&[]);

    let d = p.call("probe.path", json!({"path": dir_s}));
    assert_eq!(d["type"], json!("dir"));
    assert_eq!(d["writable"]["ok"], json!(true));
    let missing = p.call("probe.path", json!({"path": format!("{dir_s}/none")}));
    assert_eq!(missing["exists"], json!(false));
    assert_eq!(missing["error"]["name"], json!("ENOENT"));

    let file = format!("{dir_s}/data");
    let w = p.call("probe.write", json!({"path": file, "bytes": 3_000_000}));
    assert_eq!(w["written"], json!(3_000_000));
    assert_eq!(w["ok"], json!(true));
    assert_eq!(std::fs::metadata(&file).expect("file").len(), 3_000_000);
    let f = p.call("probe.path", json!({"path": file}));
    assert_eq!(f["type"], json!("file"));
    assert_eq!(f["size"], json!(3_000_000));
    let w = p.call(
        "probe.write",
        json!({"path": format!("{dir_s}/no/such"), "bytes": 1}),
    );
    assert_eq!(w["stage"], json!("open"));
    assert_eq!(w["error"]["name"], json!("ENOENT"));

    let e = p.call(
        "probe.exec",
        json!({"argv": ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"]}),
    );
    assert_eq!(e["exit_code"], json!(3));
    assert_eq!(e["stdout"], json!("out\n"));
    assert_eq!(e["stderr"], json!("err\n"));
    let e = p.call("probe.exec", json!({"argv": [format!("{dir_s}/data")]}));
    assert_eq!(e["spawned"], json!(false));
    assert_eq!(e["error"]["name"], json!("EACCES"));

    assert_eq!(
        p.call("probe.echo", json!({"input": {"z": 1, "a": [2]}})),
        json!({"input": {"a": [2], "z": 1}})
    );
    assert!(
        p.call("probe.sleep", json!({"ms": 20}))["elapsed_ms"]
            .as_u64()
            .expect("ms")
            >= 20
    );
    assert!(p.call("probe.spin", json!({"seconds": 0}))["elapsed_ms"].is_u64());

    p.finish();
}

#[test]
fn a_request_the_probe_cannot_serve_ends_the_session() {
    let mut p = Probe::start(&[]);
    let host = p.host.as_mut().expect("open");
    match host.invoke("probe.try", json!({"op": "nonsense"})) {
        Err(SessionError::WorkerEnded { request, tool, .. }) => {
            assert_eq!((request.as_str(), tool.as_str()), ("r-1", "probe.try"));
        }
        other => panic!("{other:?}"),
    }
    assert!(host.is_poisoned());
    drop(p.host.take());
    // The probe says why on stderr and exits with 1.
    let status = p.child.wait().expect("wait");
    assert_eq!(status.code(), Some(1));
}

#[test]
fn every_escape_attempt_answers_and_privileged_ones_succeed_without_a_sandbox() {
    let mut p = Probe::start(&[]);
    let ops = [
        "unshare-user",
        "unshare-net",
        "mount-tmpfs",
        "clone-newns",
        "ptrace-parent",
        "setns",
        "socket-inet",
        "chroot",
        "keyctl",
        "bpf",
        "io_uring",
    ];
    let mut results = std::collections::BTreeMap::new();
    for op in ops {
        let r = p.call("probe.try", json!({"op": op}));
        assert_eq!(r["op"], json!(op));
        let ok = r["ok"].as_bool().expect("ok flag");
        if !ok {
            assert!(r["stage"].is_string(), "{r}");
        }
        results.insert(op, r);
    }
    let report = p.call("probe.report", json!({}));
    p.finish();
    eprintln!("{}", serde_json::to_string_pretty(&results).expect("json"));
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    const CAP_SYS_CHROOT: u64 = 1 << 18;
    let effective = report["capabilities"]["effective"]
        .as_str()
        .and_then(|c| u64::from_str_radix(c, 16).ok())
        .unwrap_or(0);
    let root = report["ids"]["euid"] == json!(0)
        && effective & (CAP_SYS_ADMIN | CAP_SYS_CHROOT) == CAP_SYS_ADMIN | CAP_SYS_CHROOT;
    if !host_has(
        root,
        "a privileged uid with full capabilities (for the control assertions)",
    ) {
        return;
    }
    // The same attempts a sandbox must stop all succeed here: this is the
    // control that makes each sandboxed denial meaningful.
    for op in [
        "unshare-user",
        "unshare-net",
        "mount-tmpfs",
        "clone-newns",
        "chroot",
        "setns",
    ] {
        assert_eq!(results[op]["ok"], json!(true), "{op}: {}", results[op]);
    }
}

/// A smoke run under a plain Bubblewrap sandbox: the probe starts, the
/// session authenticates through bwrap's stdio, and the escapes that the
/// control run above shows succeeding are refused.
#[test]
fn under_bubblewrap_the_same_escapes_are_refused() {
    let bwrap = std::path::Path::new("/usr/bin/bwrap");
    if !host_has(bwrap.exists(), "bubblewrap at /usr/bin/bwrap") {
        return;
    }
    let probe = env!("CARGO_BIN_EXE_splash-probe");
    let mut cmd = Command::new(bwrap);
    cmd.args([
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ])
    .args([
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        // The build tree may itself lie below `/tmp`, which the private
        // tmpfs hides: bind the probe at a fixed place on top of it.
        "--ro-bind",
        probe,
        "/tmp/splash-probe",
    ])
    .args([
        "--chdir",
        "/",
        "--clearenv",
        "--setenv",
        "SPLASH_IN",
        "bwrap",
        "--",
        "/tmp/splash-probe",
    ]);
    let mut p = Probe::start_command(cmd, &[]);
    let report = p.call("probe.report", json!({"statfs": ["/tmp"]}));
    // bwrap sets `PWD` itself after `--clearenv`.
    assert_eq!(
        report["environment"],
        json!({"PWD": "/", "SPLASH_IN": "bwrap"})
    );
    assert_eq!(
        report["capabilities"]["effective"],
        json!("0000000000000000")
    );
    let root = report["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["mount_point"] == json!("/"))
        .cloned()
        .expect("root mount");
    assert_eq!(root["read_only"], json!(true), "{root}");
    let ifaces = report["network_interfaces"]["proc_net_dev"].clone();
    assert_eq!(ifaces, json!(["lo"]));
    for op in [
        "unshare-net",
        "mount-tmpfs",
        "chroot",
        "setns",
        "socket-inet",
    ] {
        let r = p.call("probe.try", json!({"op": op}));
        eprintln!("{r}");
        assert_eq!(r["ok"], json!(false), "{op}: {r}");
    }
    let w = p.call(
        "probe.write",
        json!({"path": "/etc/splash-probe-ro", "bytes": 1}),
    );
    assert_eq!(w["error"]["name"], json!("EROFS"), "{w}");
    p.finish();
}

#[test]
fn sleep_and_spin_stop_when_cancelled() {
    use splash_protocol::CallEvent;
    let mut p = Probe::start(&[]);
    let host = p.host.as_mut().expect("open");
    for (tool, input) in [
        ("probe.sleep", json!({"ms": 20_000})),
        ("probe.spin", json!({"seconds": 20})),
    ] {
        let started = std::time::Instant::now();
        let id = host.start(tool, input).expect("start");
        std::thread::sleep(std::time::Duration::from_millis(50));
        host.cancel(&id).expect("cancel");
        assert_eq!(
            host.next_event().expect("event"),
            CallEvent::Cancelled { request_id: id }
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
    // Other tools cannot be cancelled: the answer is `unsupported`, then the
    // result.
    let id = host
        .start("probe.exec", json!({"argv": ["/bin/sleep", "0.2"]}))
        .expect("start");
    host.cancel(&id).expect("cancel");
    assert_eq!(
        host.next_event().expect("event"),
        CallEvent::Unsupported {
            request_id: id.clone()
        }
    );
    assert!(matches!(
        host.next_event().expect("event"),
        CallEvent::Finished { request_id, output: _ } if request_id == id
    ));
    p.finish();
}
