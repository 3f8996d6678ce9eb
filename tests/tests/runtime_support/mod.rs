//! Shared pieces of the real-bwrap runtime tests: hand-built launch plans,
//! locating the probe binary, descriptor and child accounting.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};

use splash_seccomp::Arch;
use splashpol::model::AbsPath;
use splashpol::plan::{
    BwrapOp, ExecArg, LaunchPlan, MountPoint, MountSource, Pin, PinKind, PinRole, PinSlot, Stdio,
};

pub fn p(s: &str) -> AbsPath {
    AbsPath::new(s).expect("test path")
}

/// The directory holding the workspace binaries (`splash-probe`), built by
/// `cargo build --workspace --bins` before the tests (see `.ci/run`).
pub fn bin_dir() -> PathBuf {
    // target/<profile>/deps/<test> -> target/<profile>
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("target profile directory")
}

/// The probe worker, if built.
pub fn probe() -> Option<PathBuf> {
    let probe = bin_dir().join("splash-probe");
    probe.is_file().then_some(probe)
}

/// A fresh private directory under the temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "splash-rt-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir.canonicalize().expect("canonical temp dir"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn abs(&self) -> AbsPath {
        p(self.0.to_str().expect("utf-8 temp path"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Pinning choices of a hand-built plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    Paths,
    PinnedMounts,
    PinnedMountsAndExecutables,
}

/// The system library mounts every dynamically linked worker needs.
pub fn system_mounts() -> Vec<AbsPath> {
    ["/usr", "/lib", "/lib64", "/bin"]
        .iter()
        .filter(|d| Path::new(d).exists())
        .map(|d| p(d))
        .collect()
}

/// A plan builder mirroring what `lower` produces, for tests that need
/// precise control over one layer at a time.
pub struct PlanBuilder {
    pub bwrap: AbsPath,
    pub binding: Binding,
    /// (host dir, sandbox dir) runtime mounts, read-only.
    pub runtime: Vec<(AbsPath, AbsPath)>,
    /// (host dir, sandbox dir, writable) host file roots.
    pub roots: Vec<(AbsPath, AbsPath, bool)>,
    pub tmpfs: Vec<(AbsPath, Option<u64>)>,
    pub worker: AbsPath,
    pub worker_host: Option<AbsPath>,
    pub args: Vec<String>,
    pub disable_userns: bool,
    pub bounded_writes: bool,
    pub seccomp: Option<splashpol::plan::SeccompPlan>,
    pub session: Option<String>,
}

impl PlanBuilder {
    pub fn new(bwrap: &Path, worker_host_dir: &AbsPath, worker_name: &str) -> Self {
        let worker = p(&format!("/opt/worker/{worker_name}"));
        let worker_host = p(&format!("{worker_host_dir}/{worker_name}"));
        let mut runtime: Vec<(AbsPath, AbsPath)> = system_mounts()
            .into_iter()
            .map(|d| (d.clone(), d))
            .collect();
        runtime.push((worker_host_dir.clone(), p("/opt/worker")));
        Self {
            bwrap: p(bwrap.to_str().expect("utf-8 bwrap path")),
            binding: Binding::Paths,
            runtime,
            roots: Vec::new(),
            tmpfs: Vec::new(),
            worker,
            worker_host: Some(worker_host),
            args: Vec::new(),
            disable_userns: false,
            bounded_writes: false,
            seccomp: None,
            session: Some("s-1".into()),
        }
    }

    pub fn build(&self) -> LaunchPlan {
        let mut pins: Vec<Pin> = Vec::new();
        let pin = |host: &AbsPath, kind: PinKind, role: PinRole, pins: &mut Vec<Pin>| {
            pins.push(Pin {
                host_path: host.clone(),
                kind,
                role,
            });
            PinSlot(u16::try_from(pins.len() - 1).expect("pin count"))
        };
        let pinned = self.binding != Binding::Paths;
        let exec_pinned = self.binding == Binding::PinnedMountsAndExecutables;
        let bwrap_pin = exec_pinned.then(|| {
            pin(
                &self.bwrap,
                PinKind::Executable,
                PinRole::Bubblewrap,
                &mut pins,
            )
        });
        let mut ops = Vec::new();
        let mut active_roots = Vec::new();
        if self
            .seccomp
            .as_ref()
            .is_some_and(|s| s.delivery == splashpol::plan::SeccompDelivery::Bubblewrap)
        {
            ops.push(BwrapOp::Seccomp);
        }
        ops.push(BwrapOp::UnshareAll);
        if self.disable_userns {
            ops.push(BwrapOp::UnshareUser);
            ops.push(BwrapOp::DisableUserns);
        }
        ops.extend([
            BwrapOp::CapDropAll,
            BwrapOp::ClearEnv,
            BwrapOp::NewSession,
            BwrapOp::DieWithParent,
            BwrapOp::Chdir(MountPoint::Root),
            BwrapOp::Proc(p("/proc")),
            BwrapOp::Dev(p("/dev")),
        ]);
        for (host, dest) in &self.runtime {
            let source = if pinned {
                MountSource::Pinned(pin(
                    host,
                    PinKind::FileOrDirectory,
                    PinRole::RuntimeMount,
                    &mut pins,
                ))
            } else {
                MountSource::Path(host.clone())
            };
            ops.push(BwrapOp::RoBind {
                source,
                destination: dest.clone(),
            });
        }
        for (host, dest, writable) in &self.roots {
            let id = splashpol::model::SelectorId::new("root").expect("token");
            let source = if pinned {
                MountSource::Pinned(pin(
                    host,
                    PinKind::Directory,
                    PinRole::FileRoot(id),
                    &mut pins,
                ))
            } else {
                MountSource::Path(host.clone())
            };
            let destination = dest.clone();
            active_roots.push(splashpol::plan::ActiveRoot {
                id: splashpol::model::SelectorId::new("root").expect("token"),
                destination: dest.clone(),
                mode: if *writable { "read-write" } else { "read-only" }.into(),
            });
            ops.push(if *writable {
                BwrapOp::Bind {
                    source,
                    destination,
                }
            } else {
                BwrapOp::RoBind {
                    source,
                    destination,
                }
            });
        }
        for (dest, size) in &self.tmpfs {
            ops.push(BwrapOp::Tmpfs {
                destination: dest.clone(),
                size_bytes: *size,
            });
        }
        if let (true, Some(host)) = (exec_pinned, &self.worker_host) {
            let slot = pin(host, PinKind::Executable, PinRole::Worker, &mut pins);
            ops.push(BwrapOp::RoBind {
                source: MountSource::Pinned(slot),
                destination: self.worker.clone(),
            });
        }
        if self.bounded_writes {
            ops.push(BwrapOp::RemountRo(MountPoint::Path(p("/proc"))));
            ops.push(BwrapOp::RemountRo(MountPoint::Path(p("/dev"))));
            ops.push(BwrapOp::RemountRo(MountPoint::Root));
        }
        let mut command = vec![ExecArg::Literal(self.worker.to_string())];
        command.extend(self.args.iter().map(|a| ExecArg::Literal(a.clone())));
        LaunchPlan {
            format: 1,
            policy_name: "test".into(),
            policy_digest: String::new(),
            session_id: self
                .session
                .as_ref()
                .map(|s| splashpol::model::SelectorId::new(s.clone()).expect("token")),
            all_registered_roots_active: false,
            arch: Arch::host().expect("supported host arch"),
            bwrap: self.bwrap.clone(),
            bwrap_pin,
            pins,
            ops,
            command,
            seccomp: self.seccomp.clone(),
            active_roots,
            quota_checks: Vec::new(),
            network_broker: None,
            environment: Vec::new(),
            stdio: Stdio::default(),
            aggregate_quota: None,
            cgroup: None,
            require_cgroup_v2: false,
            watchdog: None,
        }
    }
}

/// Serializes the tests of one binary: descriptor and child accounting
/// look at the whole process.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Open descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Children of this process that still exist (zombies included).
pub fn live_children() -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(c.split_whitespace().filter_map(|s| s.parse::<u32>().ok()));
            }
        }
    }
    out
}

use std::process::{ChildStdin, ChildStdout};

use serde_json::Value;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, SessionKey,
    Token,
};
use splash_runtime::{BoundCommand, WorkerLifecycle};

/// Every probe tool, granted generously.
pub const PROBE_TOOLS: &[&str] = &[
    "probe.report",
    "probe.path",
    "probe.write",
    "probe.exec",
    "probe.try",
    "probe.echo",
];

pub fn probe_manifest(session: &str) -> CapabilityManifest {
    let grants = PROBE_TOOLS
        .iter()
        .map(|t| {
            let mut g = Grant::new(Token::new(*t).expect("tool token"), GrantFormat::Json);
            g.max_calls = 64;
            g.max_input_bytes = 64 * 1024;
            g.max_output_bytes = 1 << 20;
            g
        })
        .collect();
    CapabilityManifest {
        protocol_version: 5,
        session_id: Token::new(session).expect("session token"),
        grants,
    }
}

/// A probe worker with an open authenticated session.
pub struct ProbeSession {
    pub session: HostSession<ChildStdout, ChildStdin>,
    pub lifecycle: WorkerLifecycle,
}

impl ProbeSession {
    /// Spawns `bound` and opens the session with a key made of `key` bytes
    /// (fresh CSPRNG bytes when `None`).
    pub fn start(bound: &BoundCommand, key: Option<[u8; 32]>) -> Result<Self, String> {
        let key = match key {
            Some(k) => SessionKey::from_bytes(k).map_err(|e| e.to_string())?,
            None => SessionKey::generate().map_err(|e| e.to_string())?,
        };
        let manifest = probe_manifest("s-1");
        let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
        let worker = bound
            .spawn_with_bootstrap(&boot)
            .map_err(|e| e.to_string())?;
        let (lifecycle, stdin, stdout) = worker.into_lifecycle_parts();
        let session = HostSession::open(manifest, key, stdin, stdout).map_err(|e| e.to_string())?;
        Ok(Self { session, lifecycle })
    }

    /// Calls a tool; on a failure the launch is diagnosed.
    pub fn call(&mut self, tool: &str, input: Value) -> Result<Value, String> {
        match self.session.invoke(tool, input) {
            Ok(v) => Ok(v),
            Err(e) => Err(format!("{e}; {}", self.lifecycle.startup_failure())),
        }
    }

    pub fn report(&mut self) -> Value {
        self.call("probe.report", serde_json::json!({}))
            .expect("probe.report")
    }

    pub fn close(self) -> splash_runtime::WorkerStatus {
        let Self {
            session,
            mut lifecycle,
        } = self;
        session.close().expect("close session");
        lifecycle.wait().expect("reap")
    }
}

/// Skips (or fails under `SPLASH_REQUIRE_HOST=1`) unless bwrap and the probe
/// are available; returns (bwrap, probe directory as a runtime mount).
pub fn host_with_probe() -> Option<(PathBuf, TempDir)> {
    let bwrap = splash_tests::bwrap_path();
    if !splash_tests::require_host(bwrap.is_some(), "bubblewrap") {
        return None;
    }
    let probe = probe();
    if !splash_tests::require_host(
        probe.is_some(),
        "the splash-probe binary (run `cargo build --workspace --bins` first)",
    ) {
        return None;
    }
    let dir = TempDir::new("probe");
    std::fs::copy(probe.expect("checked"), dir.path().join("splash-probe")).expect("copy probe");
    Some((bwrap.expect("checked"), dir))
}

/// A probe plan over `probe_dir`.
pub fn probe_plan(bwrap: &Path, probe_dir: &TempDir) -> PlanBuilder {
    PlanBuilder::new(bwrap, &probe_dir.abs(), "splash-probe")
}

pub fn errno_name(v: &Value) -> Option<&str> {
    v.get("error")
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
}

/// Checks, activates with `manifest` and lowers policy text for this host.
pub fn lowered(text: &str, manifest: &CapabilityManifest) -> LaunchPlan {
    let outcome = splashpol::check_source("test.splashpol", text);
    let policy = match outcome.policy {
        Some(p) if !outcome.has_errors() => p,
        _ => panic!("{}", outcome.render_human("test.splashpol", text)),
    };
    let activation = splashpol::activate::activate(&policy, Some(manifest)).expect("activate");
    splashpol::lower::lower(&policy, &activation, Arch::host().expect("arch"), "test")
        .expect("lower")
}
