//! The escape battery: `splash-escape-probe` (static, `tests/escape-probe`)
//! runs every attempt it knows inside the real sandbox of every bundled
//! policy, as host root and as uid 65534, and beside each attempt a control
//! run shows the attempt working where the layer that must stop it is
//! absent. An attempt that works where one of its layers is present is an
//! escape; the test asserts there are none, that every control worked (or
//! is unavailable on this kernel, said so in the table), and that
//! `docs/escape-battery.md` is the table it measured
//! (`SPLASH_BLESS=1` rewrites it).
//!
//! Bundled policies are adapted for this host the way the other runtime
//! tests do it: the real bwrap, a runtime directory holding only the static
//! probe (under the worker's name) and static copies of the runners, host
//! roots in temporary directories. Controls this host cannot enforce (cgroup
//! limits, the network broker, project quotas) make bind fail; the test
//! asserts that refusal for the unmodified policy and runs the battery with
//! that block removed, which the table states.

mod runtime_support;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use runtime_support::{TempDir, bin_dir, lowered, manifest_selecting, serial};
use serde_json::Value;
use splash_escape_probe::verdict::{ALWAYS_ON, Line, Seen, Verdict, verdict};
use splash_protocol::{PrivatePipeWorkerBootstrap, Resource, ResourceKind, SessionKey, Token};
use splash_require_host::bless_command;
use splash_require_host::snapshot::check_snapshot;
use splash_runtime::{
    BindError, BindOptions, BoundCommand, Deadlines, LaunchPreparation, LaunchSpec, WorkerStatus,
};

const UNPRIVILEGED: u32 = 65534;
const SETPRIV: &str = "/usr/bin/setpriv";
const PROBE: &str = "splash-escape-probe";
const RUNNERS: [&str; 3] = [
    "splash-limit-runner",
    "splash-landlock-runner",
    "splash-runner",
];
/// Exit status of the probe's `marker` mode, the program exec attempts run.
const MARKER_EXIT: i32 = 42;
/// A whole battery run (or one attempt of a strict policy) takes at most this.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);
const ONE_TIMEOUT: Duration = Duration::from_secs(60);

/// One attempt as the probe lists it.
#[derive(Debug, Clone)]
struct AttemptInfo {
    name: String,
    what: String,
    layers: Vec<String>,
    /// `contained`, `host-shared`, `cap-dropped` or `unsandboxed`.
    control: String,
}

/// True when the tests run from a `--target` build for this host (the
/// workspace default, `.cargo/config.toml`), whose binaries are the static
/// ones.
fn built_for_host_target() -> bool {
    bin_dir()
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n.to_string_lossy() == host_triple())
}

/// The static binaries, built for the host's target triple with the C
/// runtime linked in: the binaries beside the tests when the workspace
/// builds for the host's target (the default), otherwise a separate
/// `--target` build.
fn static_dir() -> PathBuf {
    let profile_dir = bin_dir();
    if built_for_host_target() {
        return profile_dir;
    }
    let profile = profile_dir
        .file_name()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| "debug".into());
    let target = profile_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    target.join(host_triple()).join(profile)
}

fn host_triple() -> String {
    format!("{}-unknown-linux-gnu", std::env::consts::ARCH)
}

/// Builds (or brings up to date) the static probe and runners with an
/// explicit `--target` and `+crt-static`; a no-op when they are current, and
/// not run when the workspace's own build is already that build (the probe
/// is then built by `cargo build --workspace --bins` like every binary).
fn build_static() -> Result<(), String> {
    if built_for_host_target() {
        return Ok(());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let release = bin_dir().ends_with("release");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(splash_tests::workspace_root())
        .args([
            "build",
            "--locked",
            "--bins",
            "-p",
            PROBE,
            "-p",
            "splash-runners",
        ])
        .args(["--target", &host_triple()])
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if release {
        cmd.arg("--release");
    }
    let out = cmd.output().map_err(|e| format!("run cargo: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// True when `path` is an ELF executable without a program interpreter
/// (statically linked).
fn is_static(path: &Path) -> bool {
    let Ok(out) = Command::new("readelf").arg("-lW").arg(path).output() else {
        // Without readelf, fall back to running it in an empty mount below.
        return path.is_file();
    };
    out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("INTERP")
}

fn list_attempts(probe: &Path) -> Vec<AttemptInfo> {
    let out = Command::new(probe)
        .arg("list")
        .env_clear()
        .output()
        .expect("run the probe's list");
    assert!(out.status.success(), "probe list: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("list line");
            AttemptInfo {
                name: v["attempt"].as_str().expect("name").to_owned(),
                what: v["what"].as_str().unwrap_or_default().to_owned(),
                layers: v["layers"]
                    .as_array()
                    .expect("layers")
                    .iter()
                    .map(|l| l.as_str().expect("layer").to_owned())
                    .collect(),
                control: v["control"].as_str().expect("control").to_owned(),
            }
        })
        .collect()
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The host side of the battery: the runtime directory, host roots, the
/// listeners and the canary.
struct Host {
    bwrap: PathBuf,
    runtime: TempDir,
    project: TempDir,
    output: TempDir,
    attempts: Vec<AttemptInfo>,
    tcp: std::net::TcpListener,
    abstract_name: String,
    _abstract: std::os::unix::net::UnixListener,
}

impl Host {
    fn new(bwrap: PathBuf, statics: &Path) -> Self {
        let runtime = TempDir::new("battery-runtime");
        let rt = runtime.path();
        let probe = statics.join(PROBE);
        for d in ["bin", "lib"] {
            std::fs::create_dir_all(rt.join(d)).expect("runtime dir");
            chmod(&rt.join(d), 0o755);
        }
        chmod(rt, 0o755);
        // The worker of every bundled policy, the demo's worker name, and
        // the allow-exec targets the policies name.
        for name in [
            "bin/worker",
            "bin/splash-probe",
            "bin/reviewed-interpreter",
            "lib/ld-linux-aarch64.so.1",
            "lib/ld-linux-x86-64.so.2",
        ] {
            std::fs::copy(&probe, rt.join(name)).expect("copy probe");
            chmod(&rt.join(name), 0o755);
        }
        for runner in RUNNERS {
            std::fs::copy(statics.join(runner), rt.join("bin").join(runner)).expect("copy runner");
            chmod(&rt.join("bin").join(runner), 0o755);
        }
        let project = TempDir::new("battery-project");
        std::fs::write(project.path().join("README"), "read-only project\n").expect("project");
        chmod(project.path(), 0o755);
        let output = TempDir::new("battery-output");
        chmod(output.path(), 0o777);
        let tcp = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("loopback listener");
        let abstract_name = format!("splash-battery-{}", std::process::id());
        let addr = {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
                .expect("abstract address")
        };
        let abstract_listener =
            std::os::unix::net::UnixListener::bind_addr(&addr).expect("abstract listener");
        let attempts = list_attempts(&rt.join("bin/worker"));
        Self {
            bwrap,
            runtime,
            project,
            output,
            attempts,
            tcp,
            abstract_name,
            _abstract: abstract_listener,
        }
    }

    fn rt(&self) -> String {
        self.runtime.path().display().to_string()
    }

    fn port(&self) -> u16 {
        self.tcp.local_addr().expect("listener address").port()
    }

    /// Probe options for a run: host listeners, the canary, the host path to
    /// look for, the tmpfs root to fill.
    fn options(&self, canary: u32, scratch: Option<&str>, control: bool) -> Vec<String> {
        let mut o = vec![
            "--port".into(),
            self.port().to_string(),
            "--abstract".into(),
            self.abstract_name.clone(),
            "--host-hex".into(),
            hex(&self.rt()),
            "--canary".into(),
            canary.to_string(),
        ];
        if let Some(s) = scratch {
            o.extend(["--scratch".into(), s.into()]);
        }
        if control {
            o.extend(["--control".into(), "--lower-nofile".into()]);
        }
        o
    }
}

/// A host process the signal attempt must not reach.
struct Canary(Child);

impl Canary {
    fn start(uid: u32) -> Self {
        let mut cmd = if uid == 0 {
            Command::new("sleep")
        } else {
            let mut c = Command::new(SETPRIV);
            c.args([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".into(),
                "sleep".into(),
            ]);
            c
        };
        let child = cmd
            .arg("600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the canary");
        // setpriv execs sleep in place: the pid stays the canary's.
        std::thread::sleep(Duration::from_millis(50));
        Self(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A policy as bundled and as run here.
struct PolicyRun {
    /// File stem (`agent-worker`).
    name: String,
    /// What was removed, and why, for the table.
    adapted: Option<String>,
    /// Policy text for this host, with `WORKER_ARGS` standing for the worker's
    /// argument list.
    text: String,
    layers: Vec<String>,
    strict: bool,
    scratch: Option<String>,
    root_ids: Vec<String>,
    /// The network broker's ids, granted by the manifest.
    origins: Vec<String>,
    /// The uid of the policy's `identity user U group G`, which the root run
    /// keeps.
    identity: Option<u32>,
}

/// Removes the statement starting with `prefix` (a trimmed line), and its
/// block when it opens one.
fn remove_statement(text: &str, prefix: &str) -> String {
    let mut out = String::new();
    let mut depth: i32 = 0;
    let mut removing = false;
    for line in text.lines() {
        if !removing && line.trim_start().starts_with(prefix) {
            removing = true;
            depth = 0;
        }
        if removing {
            depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
            if depth <= 0 {
                removing = false;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn adapt(host: &Host, source: &str) -> String {
    let rt = host.rt();
    let mut out = String::new();
    for line in source.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("worker \"") {
            let path = rest.split('"').next().expect("worker path");
            out.push_str(&format!("  worker \"{path}\" args [WORKER_ARGS]\n"));
            continue;
        }
        let line = line
            .replace(
                "\"/usr/bin/bwrap\"",
                &format!("\"{}\"", host.bwrap.display()),
            )
            .replace(
                "runtime \"/opt/splash/runtime\"",
                &format!("runtime \"{rt}\""),
            )
            .replace("runtime \"/opt/splash-demo\"", &format!("runtime \"{rt}\""))
            .replace(
                "\"/srv/splash/project\"",
                &format!("\"{}\"", host.project.path().display()),
            )
            .replace(
                "\"/srv/splash/worker-output\"",
                &format!("\"{}\"", host.output.path().display()),
            );
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn policy_layers(text: &str) -> (Vec<String>, bool, Option<String>, Vec<String>) {
    let mut layers: Vec<String> = ALWAYS_ON.iter().map(|s| (*s).to_owned()).collect();
    let mut strict = false;
    let mut scratch = None;
    let mut ids = Vec::new();
    for line in text.lines().map(str::trim) {
        let mut add = |l: &str| {
            if !layers.iter().any(|x| x == l) {
                layers.push(l.to_owned());
            }
        };
        if line.starts_with("seccomp deny-known-escape-surface") {
            add("seccomp");
        }
        if line.starts_with("seccomp strict-allowlist") {
            add("seccomp");
            strict = true;
        }
        if line.starts_with("landlock") {
            add("landlock");
        }
        if line.starts_with("limits") {
            add("rlimits");
        }
        if line == "user-namespaces none" {
            add("userns-lockdown");
        }
        if line == "writes bounded" {
            add("bounded-writes");
        }
        if line.starts_with("tmp private size") {
            add("tmp-size");
        }
        if line.starts_with("identity ") {
            add("identity");
        }

        if let Some(rest) = line.strip_prefix("root \"") {
            let id = rest.split('"').next().expect("root id").to_owned();
            if let Some(at) = rest.split(" tmpfs at \"").nth(1) {
                add("tmpfs-size");
                scratch.get_or_insert_with(|| at.split('"').next().expect("at").to_owned());
            }
            ids.push(id);
        }
    }
    (layers, strict, scratch, ids)
}

impl PolicyRun {
    fn new(name: &str, text: String, adapted: Option<String>) -> Self {
        let (layers, strict, scratch, root_ids) = policy_layers(&text);
        let origins = text
            .lines()
            .filter(|l| l.trim_start().starts_with("network-broker "))
            .flat_map(|l| {
                let ids = l.split("ids [").nth(1).unwrap_or_default();
                ids.split('"')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        let identity = text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("identity user ")?;
            Some(
                rest.split_whitespace()
                    .next()?
                    .parse()
                    .expect("identity uid"),
            )
        });
        Self {
            identity,
            origins,
            name: name.to_owned(),
            adapted,
            text,
            layers,
            strict,
            scratch,
            root_ids,
        }
    }

    /// The layers of the run as host `uid`: only the root run keeps the
    /// `identity`.
    fn layers_for(&self, uid: u32) -> Vec<String> {
        self.layers
            .iter()
            .filter(|l| uid == 0 || *l != "identity")
            .cloned()
            .collect()
    }

    /// The host uid the worker runs as when the host side is `uid`.
    fn worker_uid(&self, uid: u32) -> u32 {
        match self.identity {
            Some(id) if uid == 0 => id,
            _ => uid,
        }
    }

    fn plan(&self, args: &[String]) -> splashpol::plan::LaunchPlan {
        self.plan_for(args, 0)
    }

    /// The plan for a run as host `uid`. The root run keeps the policy's
    /// `identity`, so the launcher switches to it before Bubblewrap; a run
    /// as another user drops it, since its wrapper already is the worker's
    /// identity (and bind refuses any other).
    fn plan_for(&self, args: &[String], uid: u32) -> splashpol::plan::LaunchPlan {
        let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
        let mut text = self.text.replace("WORKER_ARGS", &quoted.join(", "));
        if uid != 0 {
            text = remove_statement(&text, "identity ");
        }
        // The expectations do not change the sandbox, and the battery drops
        // layers this host cannot provide (a cgroup) that they may rely on.
        text = remove_statement(&text, "expect ");
        let ids: Vec<&str> = self.root_ids.iter().map(String::as_str).collect();
        let mut manifest = manifest_selecting(&ids);
        for origin in &self.origins {
            manifest.grants[0].resources.insert(Resource::new(
                ResourceKind::NetworkOrigin,
                Token::new(origin.as_str()).expect("origin token"),
            ));
        }
        lowered(&text, &manifest)
    }
}

/// Wraps the launch in the probe's `exec-as` so that bwrap and the worker
/// run as another host user. (`setpriv` would leave the pinned bwrap's
/// descriptor open in the sandbox; the launcher's contract is that a wrapper
/// marks it close-on-exec.)
#[derive(Debug)]
struct AsUser(u32, PathBuf);

impl LaunchPreparation for AsUser {
    fn name(&self) -> &str {
        "setpriv"
    }
    fn prepare(&mut self, _: &BoundCommand) -> std::io::Result<()> {
        Ok(())
    }
    fn launch_uid(&self) -> Option<u32> {
        Some(self.0)
    }
    fn wrap(&self, spec: &mut LaunchSpec) -> std::io::Result<()> {
        spec.wrap(
            self.1.clone(),
            vec!["exec-as".into(), self.0.to_string()],
            Vec::new(),
        );
        Ok(())
    }
}

fn bind(
    host: &Host,
    plan: splashpol::plan::LaunchPlan,
    uid: u32,
) -> Result<BoundCommand, BindError> {
    let options = if uid == 0 {
        BindOptions::default()
    } else {
        BindOptions::default().with_preparation(AsUser(uid, host.runtime.path().join("bin/worker")))
    };
    BoundCommand::bind_with(plan, options)
}

/// Launches `bound` (the probe reads nothing), collects its stdout lines and
/// its exit status.
fn launch(bound: &BoundCommand, timeout: Duration) -> (Vec<Value>, WorkerStatus) {
    let key = SessionKey::generate().expect("key");
    let boot = PrivatePipeWorkerBootstrap::new(Token::new("s-1").expect("token"), key);
    // Watched, so a plan with a `watchdog` block launches under it.
    let (watchdog, stdin, mut stdout) = bound
        .spawn_watched(&boot, Deadlines::none())
        .expect("spawn");
    drop(stdin);
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let status = match watchdog.wait_exit(timeout).expect("wait") {
        WorkerStatus::Running => watchdog.stop().expect("terminate"),
        s => s,
    };
    let out = reader.join().expect("reader");
    let lines = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (lines, status)
}

/// Attempt name -> what it did, for one policy and user.
type Results = BTreeMap<String, Seen>;

/// What a result line says (the shared reading of the probe's output).
fn seen_of(v: &Value) -> Seen {
    Seen::from_line(&Line {
        result: v["result"].as_str().unwrap_or_default(),
        errno: v["errno"].as_str(),
        signal: v["signal"].as_str(),
        code: v["code"].as_i64(),
        detail: v["detail"].as_str(),
    })
}

/// A strict-allowlist launch of one attempt that printed nothing.
fn seen_of_status(status: WorkerStatus) -> Seen {
    match status {
        WorkerStatus::Exited(MARKER_EXIT) => Seen::Worked("ok".into()),
        WorkerStatus::Exited(c) if c > 128 => Seen::Refused(signal_name(c - 128)),
        WorkerStatus::Killed(s) => Seen::Refused(signal_name(s)),
        other => Seen::Refused(format!("{other}")),
    }
}

fn signal_name(s: i32) -> String {
    match s {
        libc::SIGSYS => "SIGSYS".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        other => format!("signal {other}"),
    }
}

/// The signal attempt's result is whether the host canary survived.
fn judge_canary(name: &str, s: Seen, canary: &mut Canary) -> Seen {
    if name != "kill-host-canary" || matches!(s, Seen::NotApplicable(_)) {
        return s;
    }
    Seen::of_canary(canary.alive())
}

/// Runs the battery under `policy` as `uid`: attempt name -> what it did.
fn run_policy(
    host: &Host,
    policy: &PolicyRun,
    uid: u32,
    canary: &mut Canary,
) -> (BTreeMap<String, Seen>, BTreeMap<String, String>) {
    let opts = host.options(canary.pid(), policy.scratch.as_deref(), false);
    let mut seen = BTreeMap::new();
    let mut details = BTreeMap::new();
    let mut printed = 0;
    let worker = policy.worker_uid(uid);
    let check_ids = |lines: &[Value]| {
        if let Some(ids) = lines.iter().find_map(|l| l.get("ids")) {
            assert_eq!(
                ids["uid"], worker,
                "{} as uid {uid}: the probe ran as {ids}",
                policy.name
            );
        }
        // The worker owns none of its device nodes, and they work. (In a
        // user namespace an unmapped owner shows as the overflow uid 65534,
        // so the owner check is meaningful for the root runs; the
        // `dev-node-*` attempts prove the refusal for both users.)
        if let Some(devices) = lines.iter().find_map(|l| l.get("devices")) {
            for name in ["null", "zero", "full", "random", "urandom", "tty"] {
                let node = &devices[name];
                assert!(
                    uid == UNPRIVILEGED
                        || node["uid"].as_u64().is_some_and(|o| o != u64::from(worker)),
                    "{} as uid {uid}: the worker owns /dev/{name}: {devices}",
                    policy.name
                );
                if name != "tty" {
                    assert_eq!(
                        node["works"], true,
                        "{} as uid {uid}: /dev/{name} does not work: {devices}",
                        policy.name
                    );
                }
            }
        }
    };
    if policy.strict {
        // fork is not on a strict list: one launch per attempt, the attempt
        // in the probe's own process.
        for a in &host.attempts {
            let mut args = vec!["one".to_owned(), a.name.clone()];
            args.extend(opts.iter().cloned());
            let bound = bind(host, policy.plan_for(&args, uid), uid).expect("bind");
            let (lines, status) = launch(&bound, ONE_TIMEOUT);
            check_ids(&lines);
            if std::env::var("SPLASH_BATTERY_DEBUG").is_ok() {
                eprintln!(
                    "DEBUG {} uid {uid} {}: {status} {lines:?}",
                    policy.name, a.name
                );
            }
            let s = match lines.iter().find(|l| l["attempt"] == a.name.as_str()) {
                Some(l) => {
                    printed += 1;
                    details.insert(a.name.clone(), l.to_string());
                    seen_of(l)
                }
                None => seen_of_status(status),
            };
            seen.insert(a.name.clone(), judge_canary(&a.name, s, canary));
        }
    } else {
        let mut args = vec!["all".to_owned()];
        args.extend(opts.iter().cloned());
        let bound = bind(host, policy.plan_for(&args, uid), uid).expect("bind");
        let (lines, status) = launch(&bound, RUN_TIMEOUT);
        check_ids(&lines);
        assert!(
            lines.iter().any(|l| l.get("ids").is_some()),
            "{} as uid {uid}: the probe did not start",
            policy.name
        );
        assert!(
            lines.iter().any(|l| l.get("devices").is_some()),
            "{} as uid {uid}: the probe reported no device nodes",
            policy.name
        );
        for a in &host.attempts {
            let s = match lines.iter().find(|l| l["attempt"] == a.name.as_str()) {
                Some(l) => {
                    printed += 1;
                    details.insert(a.name.clone(), l.to_string());
                    seen_of(l)
                }
                None => Seen::Refused(format!("no result ({status})")),
            };
            seen.insert(a.name.clone(), judge_canary(&a.name, s, canary));
        }
    }
    assert!(
        printed > 0,
        "{} as uid {uid}: the probe reported nothing; it did not run",
        policy.name
    );
    (seen, details)
}

/// The raw bwrap argv of the contained control: host root with every
/// capability in fresh namespaces, no seccomp, no Landlock, no rlimits, a
/// writable root, runtime and `/sys`, unbounded tmpfs.
/// With `caps` false, the same without any capability (`--cap-drop ALL`):
/// host uid 0 and nothing else, as a root host's worker is.
fn contained_control(host: &Host, caps: bool) -> Vec<String> {
    let rt = host.rt();
    [
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup",
        if caps { "--cap-add" } else { "--cap-drop" },
        "ALL",
        "--die-with-parent",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/scratch",
        "--bind",
        &rt,
        "/opt/splash",
        "--bind",
        "/sys",
        "/sys",
        "--",
        "/opt/splash/bin/worker",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// Runs the controls as host root; attempt name -> what it did.
fn run_controls(host: &Host) -> BTreeMap<String, Seen> {
    let mut seen = BTreeMap::new();
    let mut canary = Canary::start(0);
    // `command` is the program and its arguments (Bubblewrap's, or the
    // probe's own for the unsandboxed control).
    let run = |command: Vec<String>, only: Vec<&str>, opts: Vec<String>| -> Vec<Value> {
        let mut args = command;
        args.push("all".into());
        args.push("--only".into());
        args.push(only.join(","));
        args.extend(opts);
        // Descriptor 7 is inherited and a variable is set: the launch
        // hygiene the real launcher provides is absent.
        let out = Command::new("sh")
            .arg("-c")
            .arg("exec 7</dev/null; exec \"$@\"")
            .arg("sh")
            .args(&args)
            .env("SPLASH_BATTERY_CONTROL", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run a control");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let of_kind = |kind: &str| -> Vec<&str> {
        host.attempts
            .iter()
            .filter(|a| a.control == kind)
            .map(|a| a.name.as_str())
            .collect()
    };
    let (contained, shared, dropped, unsandboxed) = (
        of_kind("contained"),
        of_kind("host-shared"),
        of_kind("cap-dropped"),
        of_kind("unsandboxed"),
    );
    let bwrap = |args: Vec<String>| -> Vec<String> {
        let mut command = vec![host.bwrap.display().to_string()];
        command.extend(args);
        command
    };
    let worker = host.runtime.path().join("bin/worker");
    let mut lines = run(
        bwrap(contained_control(host, true)),
        contained,
        host.options(canary.pid(), Some("/scratch"), true),
    );
    // Host root without capabilities, with bwrap's own `--dev`.
    lines.extend(run(
        bwrap(contained_control(host, false)),
        dropped,
        host.options(canary.pid(), Some("/scratch"), true),
    ));
    // Sharing the host's pid and network namespaces, as host root.
    lines.extend(run(
        bwrap(vec![
            "--dev-bind".into(),
            "/".into(),
            "/".into(),
            "--die-with-parent".into(),
            "--".into(),
            worker.display().to_string(),
        ]),
        shared,
        host.options(canary.pid(), None, true),
    ));
    // No sandbox at all (Bubblewrap always sets no_new_privs), as host root.
    lines.extend(run(
        vec![worker.display().to_string()],
        unsandboxed,
        host.options(canary.pid(), None, true),
    ));
    for a in &host.attempts {
        let mut s = lines
            .iter()
            .find(|l| l["attempt"] == a.name.as_str())
            .map_or_else(|| Seen::Refused("no result".into()), seen_of);
        if a.name == "kill-host-canary" {
            s = Seen::of_canary(canary.alive());
        }
        seen.insert(a.name.clone(), s);
    }
    seen
}

/// Why a control that did not work is still acceptable: the kernel (or
/// every process on this host) lacks what the attempt needs, so there is
/// nothing for the layer to stop here.
fn control_unavailable(name: &str, control: &Seen) -> Option<String> {
    match control {
        Seen::NotApplicable(why) => Some(why.clone()),
        Seen::Refused(e) if e == "ENOSYS" => Some("the kernel has no such system call".into()),
        Seen::Refused(e)
            if e == "EPERM" && name == "raise-hard-rlimit" && !host_has_sys_resource() =>
        {
            Some("no process on this host holds CAP_SYS_RESOURCE".into())
        }
        _ => None,
    }
}

fn host_has_sys_resource() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapBnd:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|bnd| bnd & (1 << 24) != 0)
}

/// The bundled policies, adapted; each with whether its unmodified form was
/// refused at bind.
fn policies(host: &Host) -> Vec<PolicyRun> {
    let dir = splash_tests::workspace_root().join("policies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("policies dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let name = file
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let text = adapt(host, &std::fs::read_to_string(&file).expect("policy"));
        // What this host cannot enforce: the statement to remove, and what
        // bind must say about the unmodified policy.
        let unenforceable: &[(&str, &str)] = &[
            ("cgroup ", "cgroup-v2 boundary"),
            ("network-broker ", "network broker"),
            ("root \"durable-output\"", "project quota"),
        ];
        let mut adapted_text = text.clone();
        let mut notes = Vec::new();
        for (prefix, refusal) in unenforceable {
            if !text.lines().any(|l| l.trim_start().starts_with(prefix)) {
                continue;
            }
            let run = PolicyRun::new(&name, text.clone(), None);
            let err = bind(host, run.plan(&["list".into()]), 0)
                .expect_err("this host cannot enforce it: bind must refuse");
            let shown = format!("{err}");
            assert!(
                shown.contains(refusal),
                "{name}: bind refused for another reason: {shown}"
            );
            adapted_text = remove_statement(&adapted_text, prefix);
            if *prefix == "root \"durable-output\"" {
                adapted_text = remove_statement(&adapted_text, "quota aggregate");
            }
            let removed = if *prefix == "root \"durable-output\"" {
                "`root \"durable-output\"` and `quota aggregate`".to_owned()
            } else {
                format!("`{}`", prefix.trim_end())
            };
            notes.push(format!(
                "{removed} removed (bind refuses the unmodified policy: {refusal})"
            ));
        }
        if adapted_text
            .lines()
            .any(|l| l.trim_start().starts_with("seccomp strict-allowlist {"))
        {
            let (added, why) = strict_additions(&adapted_text);
            if !added.is_empty() {
                adapted_text = adapted_text.replace(
                    "seccomp strict-allowlist {\n",
                    &format!("seccomp strict-allowlist {{\n    {}\n", added.join(" ")),
                );
                notes.push(format!(
                    "added to the strict list: {} ({why})",
                    added
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        let adapted = (!notes.is_empty()).then(|| notes.join("; "));
        out.push(PolicyRun::new(&name, adapted_text.clone(), adapted));
        if adapted_text
            .lines()
            .any(|l| l.trim_start().starts_with("identity "))
        {
            // The identity's control: the same policy as root without it.
            let mut control_notes = notes.clone();
            control_notes.push(format!(
                "`identity` removed (the control for `{name}`'s identity layer)"
            ));
            out.push(PolicyRun::new(
                &format!("{name} without identity"),
                remove_statement(&adapted_text, "identity "),
                Some(control_notes.join("; ")),
            ));
        }
    }
    out
}

/// What a strict list needs beyond the policy's own so that the battery
/// runs at all (otherwise every attempt would be a vacuous SIGSYS at
/// start-up), and why.
fn strict_additions(text: &str) -> (Vec<&'static str>, String) {
    // What the policy lists already (its checked model's list) needs no
    // adding.
    let checked = splashpol::check_source(
        "battery.splashpol",
        &text.replace("WORKER_ARGS", "\"list\""),
    );
    let listed: Vec<String> = match checked.policy.as_ref().map(|p| p.seccomp()) {
        Some(splashpol::model::SeccompPolicy::StrictAllowlist { syscalls }) => {
            syscalls.iter().map(|s| s.as_str().to_owned()).collect()
        }
        _ => Vec::new(),
    };
    let mut added = Vec::new();
    let mut why = Vec::new();
    let mut add = |names: &[&'static str], reason: &str| {
        let missing: Vec<&'static str> = names
            .iter()
            .copied()
            .filter(|n| !listed.iter().any(|l| l == n) && !added.contains(n))
            .collect();
        if !missing.is_empty() {
            added.extend(missing);
            why.push(reason.to_owned());
        }
    };
    if cfg!(target_arch = "x86_64") {
        // glibc's static start-up reads /proc/self/exe with the legacy
        // `readlink` before `main`.
        add(
            &["readlink"],
            "the static C start-up reads `/proc/self/exe` before `main`",
        );
    }
    let probe = PolicyRun::new("probe", text.to_owned(), None);
    let plan = probe.plan(&["list".into()]);
    let bwrap_delivered = plan
        .seccomp()
        .as_ref()
        .is_some_and(|s| s.delivery == splashpol::plan::SeccompDelivery::Bubblewrap);
    let runner_first = plan.command().len() > 1
        && plan
            .command()
            .iter()
            .any(|a| matches!(a, splashpol::plan::ExecArg::Literal(l) if l == "--"));
    if bwrap_delivered && runner_first {
        // bwrap applies the filter before the runner starts; the runner's
        // Rust start-up polls the standard descriptors and it closes the
        // rest with close_range.
        add(
            &["poll", "close_range"],
            "bwrap applies the filter before the runner, whose start-up needs them",
        );
    }
    (added, why.join("; "))
}

/// One table cell for root and the unprivileged user.
fn cell(root: &Seen, user: &Seen, escaped: (bool, bool), present: (bool, bool)) -> String {
    let one = |s: &Seen, escaped: bool, layer_present: bool| match s {
        _ if escaped => "**ESCAPE**".to_owned(),
        Seen::Worked(_) if !layer_present => "allowed".to_owned(),
        Seen::Worked(w) => w.clone(),
        Seen::Refused(r) => r.clone(),
        Seen::NotApplicable(_) => "n/a".to_owned(),
    };
    let (a, b) = (
        one(root, escaped.0, present.0),
        one(user, escaped.1, present.1),
    );
    if a == b { a } else { format!("{a} / {b}") }
}

fn control_cell(name: &str, control: &Seen) -> String {
    match control {
        Seen::Worked(w) => w.clone(),
        other => match control_unavailable(name, other) {
            Some(why) => format!("unavailable: {why}"),
            None => format!("FAILED ({other:?})"),
        },
    }
}

#[test]
fn no_attempt_escapes_any_bundled_policy_as_root_or_unprivileged() {
    let _serial = serial();
    let Some(bwrap) = splash_tests::bwrap_path() else {
        splash_tests::require_host(false, "bubblewrap");
        return;
    };
    if !splash_tests::require_host(
        Path::new(SETPRIV).is_file() && runtime_support::running_as_root(),
        "setpriv and host root (the battery runs as root and as uid 65534)",
    ) {
        return;
    }
    let built = build_static();
    let statics = static_dir();
    let all_static = std::iter::once(PROBE)
        .chain(RUNNERS)
        .all(|b| is_static(&statics.join(b)));
    if !splash_tests::require_host(
        built.is_ok() && all_static,
        &format!(
            "static builds of the probe and runners in {} (RUSTFLAGS='-C target-feature=+crt-static' cargo build -p {PROBE} -p splash-runners --bins --target {}): {}",
            statics.display(),
            host_triple(),
            built.err().unwrap_or_default()
        ),
    ) {
        return;
    }
    let host = Host::new(bwrap, &statics);
    assert!(
        host.attempts.len() >= 60,
        "the battery has {} attempts",
        host.attempts.len()
    );

    let controls = run_controls(&host);
    let mut failed_controls = Vec::new();
    for a in &host.attempts {
        let c = &controls[&a.name];
        if !matches!(c, Seen::Worked(_)) && control_unavailable(&a.name, c).is_none() {
            failed_controls.push(format!("{}: {c:?}", a.name));
        }
    }

    let runs = policies(&host);
    let mut results: Vec<(Results, Results)> = Vec::new();
    let mut escapes = Vec::new();
    for policy in &runs {
        let mut per_uid = Vec::new();
        for uid in [0, UNPRIVILEGED] {
            let mut canary = Canary::start(uid);
            let (seen, details) = run_policy(&host, policy, uid, &mut canary);
            for a in &host.attempts {
                if verdict(&a.layers, &policy.layers_for(uid), &seen[&a.name]) == Verdict::Escaped {
                    escapes.push(format!(
                        "{} under {} as uid {uid}: {:?} (layers {:?}): {}",
                        a.name,
                        policy.name,
                        seen[&a.name],
                        a.layers,
                        details.get(&a.name).map_or("", String::as_str)
                    ));
                }
            }
            per_uid.push(seen);
        }
        let user = per_uid.pop().expect("unprivileged run");
        let root = per_uid.pop().expect("root run");
        results.push((root, user));
    }

    let table = render(&host, &runs, &results, &controls);
    let doc = splash_tests::workspace_root().join("docs/escape-battery.md");
    // Written under `SPLASH_BLESS=1` even when the assertions below fail, so
    // the table shows what was measured.
    let published = check_snapshot(&doc, &table, bless_command!());
    assert!(
        failed_controls.is_empty(),
        "controls that did not work without their layer (the attempt proves nothing):\n{}",
        failed_controls.join("\n")
    );
    assert!(escapes.is_empty(), "escapes:\n{}", escapes.join("\n"));
    if let Err(message) = published {
        panic!("this run's results are not the published table: {message}");
    }
}

fn render(
    host: &Host,
    runs: &[PolicyRun],
    results: &[(Results, Results)],
    controls: &BTreeMap<String, Seen>,
) -> String {
    let mut t = String::new();
    t.push_str("# Escape battery results\n\n");
    t.push_str(
        "Generated by `tests/tests/escape_battery.rs`; do not edit. The test runs \
`splash-escape-probe` (`tests/escape-probe`, statically linked) as the worker of \
every bundled policy under the real bwrap, once with the host side as root and \
once as uid 65534 (a policy's `identity` is kept in the root run, so the \
launcher switches to it before Bubblewrap starts, and dropped in the other, \
whose host user already is the worker's identity; the same policy run \
without its `identity` is a column of its own, the identity layer's \
control), and fails when an attempt escapes, when a control does not \
work, or when this file differs from what it measured. To rewrite it after a \
reviewed change:\n\n```\nSPLASH_BLESS=1 cargo test -p splash-tests --test escape_battery\n```\n\n",
    );
    t.push_str(
        "Each attempt names the layers that must stop it; it must be refused whenever \
one of them is present. Always-on layers (every plan): `namespaces` (pid, network, \
mount and the rest; read-only runtime mounts), `no-new-privs` (`NoNewPrivs 1` in \
the worker's `/proc/self/status`), `cap-drop`, `read-only-proc`, \
`pid1-is-worker` (the worker chain is pid 1), `launcher-hygiene` (empty \
environment, no inherited descriptors), `private-device-nodes` (the worker owns \
no node in `/dev`; checked with every run, which also shows the nodes work). Policy layers: `seccomp` (either \
profile), `landlock` (executable allowlist), `rlimits`, `userns-lockdown`, \
`bounded-writes`, `tmp-size` (`tmp private size`), `tmpfs-size` (a tmpfs root), \
`identity` (the worker is the policy's unprivileged host user; root run only).\n\n",
    );
    t.push_str(
        "Cells: the errno or signal that refused the attempt (`SIGSYS`: killed by the \
strict allowlist; `denied`: refused without an errno, e.g. nothing leaked); \
`allowed`: it worked and none of its layers is in the policy (allowed by design); \
`**ESCAPE**`: it worked although one of its layers is present; `n/a`: nothing to \
try (no tmpfs root, no such file on this kernel). `A / B` is root / uid 65534 when \
they differ. The control ran as host root in a raw bwrap sandbox without the \
layers (every capability, writable root and runtime, a fresh `/proc` without \
read-only covers, an inherited descriptor and a variable, no seccomp, Landlock, \
rlimits or size limits; the host attempts share the host's pid and network \
namespaces instead, and the signal control kills the canary by pid rather than \
with `kill(-1)`; the device-node controls run as host root without any \
capability, with bwrap's own `--dev`, and change nothing: each sets a node's own \
mode, times or owner; the `no_new_privs` control runs the probe as host root \
outside any sandbox, since Bubblewrap always sets it). `reached (E...)`: the kernel passed its permission checks and \
failed on the purposely invalid arguments. `unavailable`: this kernel or host \
cannot do it at all, so there is nothing to stop here.\n\n",
    );
    t.push_str("## Policies\n\n| policy | layers | adapted for this host |\n|---|---|---|\n");
    for p in runs {
        let extra: Vec<&str> = p
            .layers
            .iter()
            .map(String::as_str)
            .filter(|l| !ALWAYS_ON.contains(l))
            .collect();
        let mode = if p.strict {
            " (strict allowlist: one launch per attempt, run in the probe's own process)"
        } else {
            ""
        };
        t.push_str(&format!(
            "| `{}` | {} | {}{mode} |\n",
            p.name,
            if extra.is_empty() {
                "always-on only".to_owned()
            } else {
                extra.join(", ")
            },
            p.adapted.as_deref().unwrap_or("paths only")
        ));
    }
    t.push_str("\n## Results\n\n| attempt | what | layers | control |");
    for p in runs {
        t.push_str(&format!(" {} |", p.name));
    }
    t.push_str("\n|---|---|---|---|");
    for _ in runs {
        t.push_str("---|");
    }
    t.push('\n');
    let mut escapes = 0;
    for a in &host.attempts {
        t.push_str(&format!(
            "| `{}` | {} | {} | {} |",
            a.name,
            a.what.replace('|', "\\|"),
            if a.layers.is_empty() {
                "none (accepted, `docs/runtime.md`)".to_owned()
            } else {
                a.layers.join(", ")
            },
            control_cell(&a.name, &controls[&a.name])
        ));
        for (p, (root, user)) in runs.iter().zip(results) {
            let present = |uid: u32| {
                splash_escape_probe::verdict::layer_present(&a.layers, &p.layers_for(uid))
            };
            let present = (present(0), present(UNPRIVILEGED));
            let e = (
                verdict(&a.layers, &p.layers_for(0), &root[&a.name]) == Verdict::Escaped,
                verdict(&a.layers, &p.layers_for(UNPRIVILEGED), &user[&a.name]) == Verdict::Escaped,
            );
            escapes += usize::from(e.0) + usize::from(e.1);
            t.push_str(&format!(
                " {} |",
                cell(&root[&a.name], &user[&a.name], e, present)
            ));
        }
        t.push('\n');
    }
    t.push_str(&format!(
        "\n{} attempts × {} policies × 2 users; escapes: {escapes}.\n",
        host.attempts.len(),
        runs.len()
    ));
    t
}
