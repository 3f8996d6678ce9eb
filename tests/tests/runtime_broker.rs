//! The brokered network origin with the real Bubblewrap: a sandboxed probe
//! with no network stack makes exactly the HTTP requests the host broker's
//! catalog allows, through the one socket bind pinned and Bubblewrap
//! mounted read-only, and nothing else. The origin is a tiny HTTP server on
//! 127.0.0.1 in this process; the control runs the same probe outside the
//! sandbox.

mod runtime_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use runtime_support::{
    Binding, ProbeSession, TempDir, TestPolicy, edited, edited_json, host_with_probe, lowered,
    probe_manifest, probe_policy, serial,
};
use serde_json::{Value, json};
use splash_broker::{
    Catalog, CatalogKind, Credential, Entry, HostBroker, Limits, Method, Redirects,
};
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, Resource,
    ResourceKind, SessionKey, Token,
};
use splash_runtime::{BindError, BindOptions, BoundCommand, BrokerBindError, Deadlines};
use splashpol::plan::{BwrapOp, LaunchPlan, MountSource};

/// The worker-visible broker directory.
const DEST: &str = "/run/broker";
const SOCKET: &str = "/run/broker/broker.sock";
const SECRET: &str = "host-held-secret-7f3a";

/// A tiny HTTP origin on 127.0.0.1 that records the heads it receives and
/// answers at most `max` connections within 30 s.
struct Origin {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Origin {
    fn start(max: usize, respond: fn(&str, u16) -> String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind origin");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let heads = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new(AtomicBool::new(false));
        let (log, stop) = (Arc::clone(&heads), Arc::clone(&done));
        let thread = std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(30);
            let mut served = 0;
            while served < max && Instant::now() < end && !stop.load(Ordering::Relaxed) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                served += 1;
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(&stream);
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                if head.is_empty() {
                    continue; // a bare TCP connect (the control)
                }
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length.min(1 << 16)];
                let _ = reader.read_exact(&mut body);
                let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                log.lock().expect("log").push(head);
                let mut out = &stream;
                let _ = out.write_all(respond(&path, port).as_bytes());
            }
        });
        Self {
            port,
            heads,
            done,
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("log").clone()
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The port of the origin that no catalog holds.
static ELSEWHERE: AtomicU16 = AtomicU16::new(0);

fn routes(path: &str, _port: u16) -> String {
    match path {
        "/off" => format!(
            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{}/hello\r\ncontent-length: 0\r\n\r\n",
            ELSEWHERE.load(Ordering::Relaxed)
        ),
        "/hello" => "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nset-cookie: s=1\r\ncontent-length: 5\r\n\r\nhello".into(),
        "/same" => "HTTP/1.1 302 Found\r\nlocation: /hello\r\ncontent-length: 0\r\n\r\n".into(),
        _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".into(),
    }
}

/// A parent directory for the broker: owned by this user, mode 0700.
fn private_parent(tag: &str) -> TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new(tag);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    dir
}

fn token(s: &str) -> Token {
    Token::new(s).expect("token")
}

/// The probe's manifest plus a `probe.http` grant holding `http_ids`; the
/// `probe.echo` grant holds `other_ids`, so the session's network origins
/// are the union of both.
fn broker_manifest(http_ids: &[&str], other_ids: &[&str]) -> CapabilityManifest {
    let mut manifest = probe_manifest("s-1");
    let mut http = Grant::new(token("probe.http"), GrantFormat::Json);
    http.max_calls = 64;
    http.max_input_bytes = 64 * 1024;
    http.max_output_bytes = 1 << 20;
    for id in http_ids {
        http.resources
            .insert(Resource::new(ResourceKind::NetworkOrigin, token(id)));
    }
    manifest.grants.push(http);
    let echo = manifest
        .grants
        .iter_mut()
        .find(|g| g.tool.as_str() == "probe.echo")
        .expect("echo grant");
    for id in other_ids {
        echo.resources
            .insert(Resource::new(ResourceKind::NetworkOrigin, token(id)));
    }
    manifest
}

fn broker_policy(
    bwrap: &Path,
    probe_dir: &TempDir,
    kind: &str,
    parent: &Path,
    ids: &[&str],
) -> TestPolicy {
    let mut policy = probe_policy(bwrap, probe_dir);
    policy.binding = Binding::PinnedMounts;
    let ids: Vec<String> = ids.iter().map(|i| format!("\"{i}\"")).collect();
    policy.extra.push(format!(
        r#"network-broker {kind} parent "{}" at "{DEST}" ids [{}]"#,
        parent.display(),
        ids.join(", ")
    ));
    policy
}

/// Spawns `bound` and opens the session with `manifest` (session `s-1`).
fn start(bound: &BoundCommand, manifest: &CapabilityManifest) -> ProbeSession {
    let key = SessionKey::generate().expect("key");
    let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
    let (worker, stdin, stdout) = bound
        .spawn_watched(&boot, Deadlines::none())
        .expect("spawn");
    let session = HostSession::open(manifest.clone(), key, stdin, stdout).expect("open session");
    ProbeSession { session, worker }
}

/// The probe outside any sandbox, for the control runs.
struct Unsandboxed {
    child: Child,
    session: Option<HostSession<ChildStdout, ChildStdin>>,
}

impl Unsandboxed {
    fn start(probe: &Path, manifest: &CapabilityManifest) -> Self {
        let mut child = Command::new(probe)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the probe");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let key = SessionKey::generate().expect("key");
        PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone())
            .write_to(&mut stdin)
            .expect("preamble");
        let session = HostSession::open(manifest.clone(), key, stdin, stdout).expect("open");
        Self {
            child,
            session: Some(session),
        }
    }

    fn call(&mut self, tool: &str, input: Value) -> Value {
        self.session
            .as_mut()
            .expect("session")
            .invoke(tool, input)
            .expect("call")
    }
}

impl Drop for Unsandboxed {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.close();
        }
        let _ = self.child.wait();
    }
}

/// Every reply the sandboxed worker received from `probe.http`, so the test
/// can show the host-held credential is in none of them.
static WORKER_SAW: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn http(probe: &mut ProbeSession, input: Value) -> Value {
    let reply = probe.call("probe.http", input).expect("probe.http");
    WORKER_SAW
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(reply.to_string());
    reply
}

#[test]
fn a_sandboxed_worker_makes_exactly_the_catalogs_requests() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let origin = Origin::start(32, routes);
    // Never in any catalog: the target of the off-origin redirect.
    let elsewhere = Origin::start(8, routes);
    ELSEWHERE.store(elsewhere.port, Ordering::Relaxed);
    let parent = private_parent("broker-parent");

    let small = Limits {
        max_request_bytes: 64,
        ..Limits::default()
    };
    let catalog = Catalog::new(CatalogKind::Endpoint)
        .with(
            Entry::endpoint("api.hello", Method::Get, &origin.url("/hello"))
                .expect("hello")
                .with_credential(Credential::header("x-api-key", SECRET).expect("credential")),
        )
        .and_then(|c| {
            c.with(
                Entry::endpoint("api.post", Method::Post, &origin.url("/hello"))
                    .expect("post")
                    .with_limits(small)
                    .expect("limits"),
            )
        })
        .and_then(|c| {
            c.with(Entry::endpoint("api.refused", Method::Get, &origin.url("/same")).expect("same"))
        })
        .and_then(|c| {
            // An origin that redirects off-origin: the entry follows only
            // same-origin redirects.
            c.with(
                Entry::endpoint("api.off", Method::Get, &origin.url("/off"))
                    .expect("off")
                    .with_redirects(Redirects::SameOrigin { max_hops: 2 })
                    .expect("redirects"),
            )
        })
        .and_then(|c| {
            c.with(Entry::endpoint("api.other", Method::Get, &origin.url("/hello")).expect("other"))
        })
        .expect("catalog");
    let ids = [
        "api.hello",
        "api.off",
        "api.other",
        "api.post",
        "api.refused",
    ];
    let broker = HostBroker::start(parent.path(), catalog).expect("start the broker");

    let policy = broker_policy(&bwrap, &probe_dir, "endpoint", parent.path(), &ids);
    // `api.other` is a session origin, but not in the `probe.http` grant.
    let manifest = broker_manifest(
        &["api.hello", "api.off", "api.post", "api.refused"],
        &["api.other"],
    );
    let plan = lowered(&policy.render(), &manifest);
    let args = plan.bwrap_arguments(&mut |_| "FD".into());
    assert!(args.iter().any(|a| a == "--unshare-all"), "{args:?}");
    assert!(!args.iter().any(|a| a == "--share-net"), "{args:?}");
    let mount_at = args.iter().position(|a| a == DEST).expect("broker mount");
    assert_eq!(args[mount_at - 2], "--ro-bind-fd", "{args:?}");

    let bound = BoundCommand::bind_with(
        plan,
        BindOptions::default().with_network_broker(broker.mount().expect("mount")),
    )
    .expect("bind");
    let slot = bound
        .plan()
        .network_broker()
        .as_ref()
        .expect("broker plan")
        .slot;
    assert_eq!(
        bound.pins()[usize::from(slot.0)].canonical_path(),
        broker.directory_path(),
        "the private directory is pinned, never the parent"
    );

    let mut probe = start(&bound, &manifest);
    WORKER_SAW
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clear();

    // Allowed: the response arrives; the credential went to the origin only.
    let r = http(
        &mut probe,
        json!({"socket": SOCKET, "id": "api.hello", "method": "GET", "path": "/hello",
               "headers": {"accept": "text/plain"}}),
    );
    assert_eq!(r["ok"], json!(true), "{r:#}");
    assert_eq!(
        (r["status"].clone(), r["body"].clone()),
        (json!(200), json!("hello"))
    );
    assert_eq!(r["headers"], json!({"content-type": "text/plain"}));
    assert!(!r.to_string().contains(SECRET));
    let heads = origin.heads();
    assert_eq!(heads.len(), 1);
    assert!(
        heads[0].contains(&format!("x-api-key: {SECRET}\r\n")),
        "{}",
        heads[0]
    );

    // An id outside the grant: refused by the client before it connects.
    let connections = broker.stats().connections;
    let r = http(
        &mut probe,
        json!({"socket": SOCKET, "id": "api.other", "method": "GET", "path": "/hello"}),
    );
    assert_eq!(
        (r["ok"].clone(), r["kind"].clone()),
        (json!(false), json!("NotGranted")),
        "{r:#}"
    );
    assert_eq!(broker.stats().connections, connections);

    // An origin outside the catalog: an id the catalog does not hold, or a
    // request target that names another origin, sent by a worker that
    // skips the client. Both get the generic `denied`.
    for raw in [
        json!({"version": 1, "id": "api.nope", "method": "GET", "path": "/hello"}),
        json!({"version": 1, "id": "api.hello", "method": "GET",
               "path": elsewhere.url("/hello")}),
        json!({"version": 1, "id": "api.hello", "method": "GET", "path": "/hello",
               "headers": {"host": format!("127.0.0.1:{}", elsewhere.port)}}),
    ] {
        let r = http(
            &mut probe,
            json!({"socket": SOCKET, "raw": raw.to_string()}),
        );
        assert_eq!(
            r["reply"],
            json!("{\"version\":1,\"error\":\"denied\"}\n"),
            "{raw}: {r:#}"
        );
    }

    // An oversized request.
    let r = http(
        &mut probe,
        json!({"socket": SOCKET, "id": "api.post", "method": "POST", "path": "/hello",
               "body": "x".repeat(65)}),
    );
    assert_eq!(r["kind"], json!("Denied"), "{r:#}");
    let r = http(
        &mut probe,
        json!({"socket": SOCKET, "id": "api.post", "method": "POST", "path": "/hello",
               "body": "x".repeat(64)}),
    );
    assert_eq!(r["status"], json!(200), "at the bound: {r:#}");

    // Redirects: refused by default, and off-origin even when same-origin
    // redirects are followed.
    let r = http(
        &mut probe,
        json!({"socket": SOCKET, "id": "api.refused", "method": "GET", "path": "/same"}),
    );
    assert_eq!(r["kind"], json!("Failed"), "{r:#}");
    let r = http(
        &mut probe,
        json!({"socket": SOCKET, "id": "api.off", "method": "GET", "path": "/off"}),
    );
    assert_eq!(r["kind"], json!("Failed"), "{r:#}");
    assert!(
        elsewhere.heads().is_empty(),
        "nothing reached another origin"
    );

    // No direct path to host TCP: the loopback origin is unreachable.
    let r = probe
        .call(
            "probe.try",
            json!({"op": "socket-inet", "ip": "127.0.0.1", "port": origin.port}),
        )
        .expect("probe.try");
    assert_eq!(r["ok"], json!(false), "{r:#}");
    let report = probe.report();
    assert_eq!(report["network_interfaces"]["proc_net_dev"], json!(["lo"]));
    let mount = report["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["mount_point"] == json!(DEST))
        .cloned()
        .expect("the broker mount");
    assert_eq!(mount["read_only"], json!(true), "{mount:#}");
    let listing = probe
        .call("probe.exec", json!({"argv": ["/bin/ls", "-A", DEST]}))
        .expect("ls");
    assert_eq!(listing["stdout"], json!("broker.sock\n"), "{listing:#}");

    // The host-held credential never reaches the worker: it is in no reply
    // the worker received (allowed, denied or failed), and nowhere the
    // worker can read: the broker directory and the environment and command
    // line of every process it can see. Control: the origin received it.
    let saw = WORKER_SAW
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert_eq!(saw.len(), 9, "one per request above: {saw:?}");
    assert!(saw.iter().all(|r| !r.contains(SECRET)), "{saw:?}");
    // The pattern is a regular expression that matches the secret but not
    // its own spelling, so the search's command lines do not match it.
    let mut search = |pattern: &str| {
        let r = probe
            .call(
                "probe.exec",
                json!({"argv": ["/bin/sh", "-c", format!(
                    "/bin/grep -ra -D skip -e '{pattern}' {DEST} /proc/[0-9]*/environ /proc/[0-9]*/cmdline; echo \"status $?\""
                )]}),
            )
            .expect("search");
        format!(
            "{}{}",
            r["stderr"].as_str().unwrap_or_default(),
            r["stdout"].as_str().unwrap_or_default()
        )
    };
    let (head, last) = SECRET.split_at(SECRET.len() - 1);
    assert_eq!(search(&format!("{head}[{last}]")), "status 1\n");
    // Control: the same search finds the worker's own command line.
    assert!(
        search("splash-prob[e]").ends_with("status 0\n"),
        "the search reads the worker's processes"
    );
    assert!(
        origin
            .heads()
            .iter()
            .any(|h| h.contains(&format!("x-api-key: {SECRET}\r\n")))
    );
    assert_eq!(
        probe.close(),
        splash_runtime::WorkerStatus::Exited(0),
        "the worker exits cleanly"
    );

    // Control: the same probe outside the sandbox reaches the loopback
    // origin directly, and the same broker request succeeds there too.
    let before = origin.heads().len();
    let mut outside = Unsandboxed::start(&probe_dir.path().join("splash-probe"), &manifest);
    let r = outside.call(
        "probe.try",
        json!({"op": "socket-inet", "ip": "127.0.0.1", "port": origin.port}),
    );
    assert_eq!(r["ok"], json!(true), "control connect: {r:#}");
    let host_socket: PathBuf = broker.socket_path();
    let r = outside.call(
        "probe.http",
        json!({"socket": host_socket, "id": "api.hello", "method": "GET", "path": "/hello"}),
    );
    assert_eq!(r["status"], json!(200), "control request: {r:#}");
    drop(outside);
    assert_eq!(origin.heads().len(), before + 1);

    let dir = broker.directory_path().to_path_buf();
    broker.shutdown().expect("shutdown");
    assert!(!dir.exists(), "the private directory is removed");
    assert_eq!(std::fs::read_dir(parent.path()).expect("parent").count(), 0);
}

#[test]
fn bind_refuses_a_missing_foreign_or_mismatched_broker() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let parent = private_parent("broker-bind");
    let catalog = |kind, ids: &[&str]| {
        let mut c = Catalog::new(kind);
        for id in ids {
            let e = match kind {
                CatalogKind::Endpoint => Entry::endpoint(id, Method::Get, "http://127.0.0.1:9/x"),
                CatalogKind::Origin => Entry::origin(id, "http://127.0.0.1:9", &[Method::Get]),
            };
            c.insert(e.expect("entry")).expect("insert");
        }
        c
    };
    let ids = ["api.a", "api.b"];
    let manifest = broker_manifest(&ids, &[]);
    let policy = broker_policy(&bwrap, &probe_dir, "endpoint", parent.path(), &ids);
    let plan = lowered(&policy.render(), &manifest);
    let broker_error = |r: Result<BoundCommand, BindError>| match r {
        Err(BindError::Broker(e)) => e,
        other => panic!("expected a broker bind error, got {other:?}"),
    };

    // None supplied.
    let e = broker_error(BoundCommand::bind(plan.clone()));
    assert!(matches!(e, BrokerBindError::Missing), "{e}");

    // Other ids.
    let other = HostBroker::start(parent.path(), catalog(CatalogKind::Endpoint, &["api.a"]))
        .expect("broker");
    let e = broker_error(BoundCommand::bind_with(
        plan.clone(),
        BindOptions::default().with_network_broker(other.mount().expect("mount")),
    ));
    assert!(matches!(e, BrokerBindError::Ids { .. }), "{e}");
    drop(other);

    // Another catalog kind.
    let other =
        HostBroker::start(parent.path(), catalog(CatalogKind::Origin, &ids)).expect("broker");
    let e = broker_error(BoundCommand::bind_with(
        plan.clone(),
        BindOptions::default().with_network_broker(other.mount().expect("mount")),
    ));
    assert!(matches!(e, BrokerBindError::Kind { .. }), "{e}");
    drop(other);

    // Another parent.
    let elsewhere = private_parent("broker-elsewhere");
    let other =
        HostBroker::start(elsewhere.path(), catalog(CatalogKind::Endpoint, &ids)).expect("broker");
    let e = broker_error(BoundCommand::bind_with(
        plan.clone(),
        BindOptions::default().with_network_broker(other.mount().expect("mount")),
    ));
    assert!(matches!(e, BrokerBindError::Parent { .. }), "{e}");

    // A broker for a plan that mounts none.
    let plain = probe_policy(&bwrap, &probe_dir).plan();
    let e = broker_error(BoundCommand::bind_with(
        plain,
        BindOptions::default().with_network_broker(other.mount().expect("mount")),
    ));
    assert!(matches!(e, BrokerBindError::Unexpected), "{e}");
    drop(other);

    // A directory that no longer has its shape.
    let broker =
        HostBroker::start(parent.path(), catalog(CatalogKind::Endpoint, &ids)).expect("broker");
    let extra = broker.directory_path().join("extra");
    std::fs::write(&extra, b"x").expect("extra entry");
    let e = broker_error(BoundCommand::bind_with(
        plan.clone(),
        BindOptions::default().with_network_broker(broker.mount().expect("mount")),
    ));
    assert!(matches!(e, BrokerBindError::Directory(_)), "{e}");
    std::fs::remove_file(&extra).expect("remove extra");

    // A plan altered after lowering: the broker directory mounted
    // writable, mounted twice or mounted elsewhere is not a plan (it cannot
    // be built or read from JSON); without `--unshare-all` it is refused at
    // bind before anything on the host is looked at.
    let slot = plan.network_broker().expect("broker plan").slot;
    let is_broker_mount = |op: &BwrapOp| matches!(op, BwrapOp::RoBind { source: MountSource::Pinned(s), .. } if *s == slot);
    let at = plan
        .ops()
        .iter()
        .position(is_broker_mount)
        .expect("broker mount");
    let BwrapOp::RoBind {
        source,
        destination,
    } = plan.ops()[at].clone()
    else {
        unreachable!("matched above")
    };
    let writable = edited_json(&plan, "ops", |ops: &mut Vec<BwrapOp>| {
        ops[at] = BwrapOp::Bind {
            source: source.clone(),
            destination: destination.clone(),
        };
    });
    let twice = edited_json(&plan, "ops", |ops: &mut Vec<BwrapOp>| {
        ops.insert(at, ops[at].clone());
    });
    let elsewhere_mount = edited_json(&plan, "ops", |ops: &mut Vec<BwrapOp>| {
        ops[at] = BwrapOp::RoBind {
            source,
            destination: splashpol::model::SandboxPath::new("/run/other").expect("path"),
        };
    });
    // Each is refused as a broker defect (`PlanError::Broker`).
    for (what, altered) in [
        ("writable", writable),
        ("twice", twice),
        ("elsewhere", elsewhere_mount),
    ] {
        let e = serde_json::from_value::<LaunchPlan>(altered).expect_err(what);
        assert!(e.to_string().contains("the network broker"), "{what}: {e}");
    }
    let shared = edited(plan.clone(), "ops", |ops: &mut Vec<BwrapOp>| {
        ops.retain(|op| *op != BwrapOp::UnshareAll);
    });
    // Without `--unshare-all` the plan's hardening prefix is already broken,
    // which bind's re-verification refuses before the broker is looked at.
    match BoundCommand::bind_with(
        shared,
        BindOptions::default().with_network_broker(broker.mount().expect("mount")),
    ) {
        Err(BindError::HardeningPrefix { expected, .. }) => {
            assert_eq!(expected, "--unshare-all");
        }
        other => panic!("without --unshare-all: expected a refusal, got {other:?}"),
    }

    // Control: the matching broker binds.
    BoundCommand::bind_with(
        plan,
        BindOptions::default().with_network_broker(broker.mount().expect("mount")),
    )
    .expect("the matching broker binds");
    drop(broker);
    assert_eq!(std::fs::read_dir(parent.path()).expect("parent").count(), 0);

    // The policy itself needs descriptor-pinned mounts.
    let mut unpinned = broker_policy(&bwrap, &probe_dir, "endpoint", parent.path(), &ids);
    unpinned.binding = Binding::Paths;
    let outcome = splashpol::check_source("test.splashpol", &unpinned.render());
    assert!(
        outcome.has_errors(),
        "a broker without `pin mounts` is refused"
    );
}

#[test]
fn a_stopped_broker_fails_the_launch_closed() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let parent = private_parent("broker-stopped");
    let ids = ["api.a"];
    let catalog = Catalog::new(CatalogKind::Endpoint)
        .with(Entry::endpoint("api.a", Method::Get, "http://127.0.0.1:9/x").expect("entry"))
        .expect("catalog");
    let broker = HostBroker::start(parent.path(), catalog).expect("broker");
    let manifest = broker_manifest(&ids, &[]);
    let policy = broker_policy(&bwrap, &probe_dir, "endpoint", parent.path(), &ids);
    let bound = BoundCommand::bind_with(
        lowered(&policy.render(), &manifest),
        BindOptions::default().with_network_broker(broker.mount().expect("mount")),
    )
    .expect("bind");
    broker.shutdown().expect("shutdown");
    // The pinned directory was removed: Bubblewrap cannot mount it, and the
    // worker never starts.
    let key = SessionKey::generate().expect("key");
    let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
    let failed = match bound.spawn_watched(&boot, Deadlines::none()) {
        Err(_) => true,
        Ok((worker, stdin, stdout)) => {
            let outcome = HostSession::open(manifest.clone(), key, stdin, stdout)
                .and_then(|mut s| s.invoke("probe.echo", json!({"input": 1})));
            let status = runtime_support::reaped(&worker);
            outcome.is_err() && status != splash_runtime::WorkerStatus::Exited(0)
        }
    };
    assert!(failed, "a launch without the broker directory must fail");
}
