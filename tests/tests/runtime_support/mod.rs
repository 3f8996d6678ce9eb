//! Shared pieces of the real-bwrap runtime tests: test policies written as
//! `.splashpol` text and lowered through the real pipeline (check, activate,
//! lower), locating the probe binary, descriptor and child accounting.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};

use splash_seccomp::Arch;
use splashpol::model::{AbsPath, HostPath, Side};
use splashpol::plan::LaunchPlan;

/// A host or sandbox test path (the side follows from where it goes).
pub fn p<S: Side>(s: &str) -> AbsPath<S> {
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

/// A fresh directory under the temp dir, removed on drop.
///
/// Created by `tempfile` with mode 0755 (not its default 0700), so a worker
/// running as another uid can still traverse it, as with `mkdir`; the path
/// is canonical, as the bind phase compares canonical paths.
pub struct TempDir {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> Self {
        Self::create(&std::env::temp_dir(), &format!("splash-rt-{tag}-"))
    }

    /// A fresh directory under `parent`, removed on drop.
    pub fn new_in(parent: &Path, tag: &str) -> Self {
        Self::create(parent, &format!("{tag}-"))
    }

    fn create(parent: &Path, prefix: &str) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .permissions(std::fs::Permissions::from_mode(0o755))
            .tempdir_in(parent)
            .expect("create temp dir");
        let path = dir.path().canonicalize().expect("canonical temp dir");
        Self { dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether this process runs as root (every uid of `/proc/self/status`).
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|v| v.split_whitespace().all(|f| f == "0"))
        })
        .unwrap_or(false)
}

/// A place for read-write roots that a root launch accepts. Bind refuses a
/// read-write root of a worker that runs as host uid 0 unless the host
/// mount holding it is `nosuid`, so as root this is a fresh temp dir bound
/// onto itself and remounted `nosuid` (the same filesystem, so quota and
/// device checks see what they saw before; unmounted on drop); otherwise,
/// where the rule does not apply, the temp dir itself.
pub struct NosuidArea {
    dir: TempDir,
    mounted: bool,
}

impl NosuidArea {
    pub fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        let mounted = running_as_root();
        if mounted {
            let d = dir.path();
            for args in [
                vec!["--bind".as_ref(), d.as_os_str()],
                vec!["-o".as_ref(), "remount,bind,nosuid".as_ref()],
            ] {
                let status = std::process::Command::new("mount")
                    .args(&args)
                    .arg(d)
                    .status()
                    .expect("run mount");
                assert!(status.success(), "mount {args:?}: {status}");
            }
        }
        Self { dir, mounted }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for NosuidArea {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount")
                .arg("--lazy")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// The `pin` statement of a test policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// No `pin` statement: every source is mounted by path.
    Paths,
    /// `pin mounts`.
    PinnedMounts,
    /// `pin mounts, executables`.
    PinnedMountsAndExecutables,
}

/// The system library directories every dynamically linked worker needs,
/// as read-only runtime mounts at the same place.
pub fn system_mounts() -> Vec<HostPath> {
    ["/usr", "/lib", "/lib64", "/bin"]
        .iter()
        .filter(|d| Path::new(d).exists())
        .map(|d| p(d))
        .collect()
}

/// Where the worker's directory is mounted inside the sandbox.
pub const WORKER_DIR: &str = "/opt/worker";

/// A `.splashpol` policy for one worker, rendered as text and lowered
/// through the real pipeline (check, activate, lower). Each field is one
/// statement (or its absence); `roots` registers file roots, every one of
/// which the activation manifest of [`TestPolicy::plan`] selects.
#[derive(Debug, Clone)]
pub struct TestPolicy {
    /// `bubblewrap`.
    pub bwrap: PathBuf,
    /// The host directory holding the worker, a runtime mount at
    /// [`WORKER_DIR`].
    pub worker_dir: PathBuf,
    /// The worker's file name inside `worker_dir`.
    pub worker_name: String,
    /// The worker's fixed arguments (`worker ... args [...]`), if any.
    pub worker_args: Vec<String>,
    /// `pin ...`.
    pub binding: Binding,
    /// `(id, statement)` of each `root`, in policy order.
    pub roots: Vec<(String, String)>,
    /// The `tmp` statement's value (`private size 2 MiB`), if any.
    pub tmp: Option<String>,
    /// `writes bounded`.
    pub bounded_writes: bool,
    /// `host-writes unbounded`.
    pub unbounded_host_writes: bool,
    /// `user-namespaces none`.
    pub no_user_namespaces: bool,
    /// The `seccomp` statement's value (`deny-known-escape-surface`), if any.
    pub seccomp: Option<String>,
    /// Further statements (runners, `cgroup`, `quota aggregate`), verbatim.
    pub extra: Vec<String>,
}

fn text(path: &Path) -> String {
    let s = path.to_str().expect("utf-8 test path");
    assert!(
        !s.contains(['"', '\\']),
        "test path `{s}` needs escaping in a policy string"
    );
    s.to_owned()
}

impl TestPolicy {
    /// `worker_dir/worker_name` as the worker, with nothing else selected.
    pub fn new(bwrap: &Path, worker_dir: &Path, worker_name: &str) -> Self {
        Self {
            bwrap: bwrap.to_path_buf(),
            worker_dir: worker_dir.to_path_buf(),
            worker_name: worker_name.to_owned(),
            worker_args: Vec::new(),
            binding: Binding::Paths,
            roots: Vec::new(),
            tmp: None,
            bounded_writes: false,
            unbounded_host_writes: false,
            no_user_namespaces: false,
            seccomp: None,
            extra: Vec::new(),
        }
    }

    /// The worker's sandbox path.
    pub fn worker(&self) -> String {
        format!("{WORKER_DIR}/{}", self.worker_name)
    }

    /// Registers a host root `id` of `host` at `at`.
    pub fn host_root(&mut self, id: &str, host: &Path, at: &str, writable: bool) -> &mut Self {
        self.host_root_with(
            id,
            host,
            at,
            if writable { "read-write" } else { "read-only" },
        )
    }

    /// Registers a host root `id` of `host` at `at` with the statement's
    /// tail after `at` (`read-write quota project ...`) given verbatim.
    pub fn host_root_with(&mut self, id: &str, host: &Path, at: &str, tail: &str) -> &mut Self {
        let host = text(host);
        self.roots.push((
            id.to_owned(),
            format!(r#"root "{id}" host "{host}" at "{at}" {tail}"#),
        ));
        self
    }

    /// Registers a tmpfs root `id` at `at` of `size` (`4 MiB`).
    pub fn tmpfs_root(&mut self, id: &str, at: &str, size: &str) -> &mut Self {
        self.roots.push((
            id.to_owned(),
            format!(r#"root "{id}" tmpfs at "{at}" size {size}"#),
        ));
        self
    }

    /// The policy text.
    pub fn render(&self) -> String {
        let mut out = String::from("splashpol 1\npolicy \"runtime-test\" {\n");
        let mut line = |s: String| {
            out.push_str("  ");
            out.push_str(&s);
            out.push('\n');
        };
        line(format!(r#"bubblewrap "{}""#, text(&self.bwrap)));
        if self.worker_args.is_empty() {
            line(format!(r#"worker "{}""#, self.worker()));
        } else {
            let args: Vec<String> = self
                .worker_args
                .iter()
                .map(|a| format!(r#""{}""#, text(Path::new(a))))
                .collect();
            line(format!(
                r#"worker "{}" args [{}]"#,
                self.worker(),
                args.join(", ")
            ));
        }
        for dir in system_mounts() {
            line(format!(r#"runtime "{dir}" at "{dir}""#));
        }
        line(format!(
            r#"runtime "{}" at "{WORKER_DIR}""#,
            text(&self.worker_dir)
        ));
        for (_, root) in &self.roots {
            line(root.clone());
        }
        if let Some(tmp) = &self.tmp {
            line(format!("tmp {tmp}"));
        }
        if self.bounded_writes {
            line("writes bounded".into());
        }
        if self.unbounded_host_writes {
            line("host-writes unbounded".into());
        }
        if self.no_user_namespaces {
            line("user-namespaces none".into());
        }
        match self.binding {
            Binding::Paths => {}
            Binding::PinnedMounts => line("pin mounts".into()),
            Binding::PinnedMountsAndExecutables => line("pin mounts, executables".into()),
        }
        if let Some(seccomp) = &self.seccomp {
            line(format!("seccomp {seccomp}"));
        }
        for statement in &self.extra {
            line(statement.clone());
        }
        out.push_str("}\n");
        out
    }

    /// The manifest of session `s-1` granting the probe tools and selecting
    /// every registered root.
    pub fn manifest(&self) -> CapabilityManifest {
        let ids: Vec<&str> = self.roots.iter().map(|(id, _)| id.as_str()).collect();
        manifest_selecting(&ids)
    }

    /// The lowered plan, activated with [`TestPolicy::manifest`].
    pub fn plan(&self) -> LaunchPlan {
        lowered(&self.render(), &self.manifest())
    }
}

/// A probe policy: the probe in `probe_dir` as the worker.
pub fn probe_policy(bwrap: &Path, probe_dir: &TempDir) -> TestPolicy {
    probe_policy_in(bwrap, probe_dir.path())
}

/// [`probe_policy`] for a probe directory given by path.
pub fn probe_policy_in(bwrap: &Path, probe_dir: &Path) -> TestPolicy {
    TestPolicy::new(bwrap, probe_dir, "splash-probe")
}

/// [`probe_manifest`] of session `s-1` whose first grant selects the file
/// roots `ids`.
pub fn manifest_selecting(ids: &[&str]) -> CapabilityManifest {
    let mut manifest = probe_manifest("s-1");
    for id in ids {
        manifest.grants[0]
            .resources
            .insert(splash_protocol::Resource::new(
                splash_protocol::ResourceKind::FileRoot,
                Token::new(*id).expect("root id token"),
            ));
    }
    manifest
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

use std::process::ChildStdin;

use serde_json::Value;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, SessionKey,
    Token,
};
use splash_runtime::{BoundCommand, Deadlines, StopAwareStdout, Watchdog};

/// Every probe tool, granted generously.
pub const PROBE_TOOLS: &[&str] = &[
    "probe.report",
    "probe.path",
    "probe.write",
    "probe.exec",
    "probe.try",
    "probe.echo",
];

/// The manifest of `session` granting `tools` (16 calls each, 4 KiB in,
/// 1 MiB out).
pub fn manifest_granting(session: &str, tools: &[&str]) -> CapabilityManifest {
    let grants = tools
        .iter()
        .map(|t| {
            let mut g = Grant::new(Token::new(*t).expect("tool"), GrantFormat::Json);
            g.max_calls = 16;
            g.max_input_bytes = 4096;
            g.max_output_bytes = 1 << 20;
            g
        })
        .collect();
    CapabilityManifest {
        protocol_version: 5,
        session_id: Token::new(session).expect("session"),
        grants,
    }
}

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
    pub session: HostSession<StopAwareStdout, ChildStdin>,
    /// The worker's watchdog, without deadlines: status, stop, release.
    pub worker: Watchdog,
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
        let (worker, stdin, stdout) = bound
            .spawn_watched(&boot, Deadlines::none())
            .map_err(|e| e.to_string())?;
        let session = HostSession::open(manifest, key, stdin, stdout).map_err(|e| e.to_string())?;
        Ok(Self { session, worker })
    }

    /// Calls a tool; on a failure the launch is diagnosed.
    pub fn call(&mut self, tool: &str, input: Value) -> Result<Value, String> {
        match self.session.invoke(tool, input) {
            Ok(v) => Ok(v),
            Err(e) => Err(format!("{e}; {}", self.worker.startup_failure())),
        }
    }

    pub fn report(&mut self) -> Value {
        self.call("probe.report", serde_json::json!({}))
            .expect("probe.report")
    }

    pub fn close(self) -> splash_runtime::WorkerStatus {
        let Self { session, worker } = self;
        session.close().expect("close session");
        reaped(&worker)
    }
}

/// The status of a worker that is ending on its own (its session closed,
/// or killed), once it exited: at most 30 s.
pub fn reaped(worker: &Watchdog) -> splash_runtime::WorkerStatus {
    let status = worker
        .wait_exit(std::time::Duration::from_secs(30))
        .expect("status");
    assert_ne!(
        status,
        splash_runtime::WorkerStatus::Running,
        "the worker did not exit"
    );
    status
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

pub fn errno_name(v: &Value) -> Option<&str> {
    v.get("error")
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
}

/// Checks, activates with `manifest` and lowers policy text for this host.
pub fn lowered(text: &str, manifest: &CapabilityManifest) -> LaunchPlan {
    lowered_with(text, Some(manifest))
}

/// Checks, activates (with `manifest`, or every registered root and no
/// session when `None`) and lowers policy text for this host.
pub fn lowered_with(text: &str, manifest: Option<&CapabilityManifest>) -> LaunchPlan {
    let outcome = splashpol::check_source("test.splashpol", text);
    let policy = match outcome.policy {
        Some(p) if !outcome.has_errors() => p,
        _ => panic!("{}", outcome.render_human("test.splashpol", text)),
    };
    let activation = splashpol::activate::activate(&policy, manifest).expect("activate");
    splashpol::lower::lower(&policy, &activation, Arch::host().expect("arch"), "test")
        .expect("lower")
}

/// `plan` with the field `field` of its JSON form edited by `edit` (as a
/// `T`), as a host could edit a plan's JSON before bind; the edit must
/// leave a structurally valid plan (a [`LaunchPlan`] invariant), so what it
/// changes is what bind re-checks.
pub fn edited<T: serde::Serialize + serde::de::DeserializeOwned>(
    plan: LaunchPlan,
    field: &str,
    edit: impl FnOnce(&mut T),
) -> LaunchPlan {
    serde_json::from_value(edited_json(&plan, field, edit))
        .expect("the edited plan is structurally valid")
}

/// `plan` (lowered for `host`) carrying the seccomp program of `foreign`
/// (the same policy lowered for another architecture) labelled as `host`'s:
/// only the program is foreign.
pub fn with_foreign_program(plan: LaunchPlan, foreign: &LaunchPlan, host: Arch) -> LaunchPlan {
    let program = foreign.seccomp().cloned();
    edited(
        plan,
        "seccomp",
        |s: &mut Option<splashpol::plan::SeccompPlan>| {
            *s = program;
            if let Some(s) = s.as_mut() {
                s.arch = host;
            }
        },
    )
}

/// The JSON form of `plan` with its field `field` edited by `edit` (as a
/// `T`), for an edit that must not read back as a plan.
pub fn edited_json<T: serde::Serialize + serde::de::DeserializeOwned>(
    plan: &LaunchPlan,
    field: &str,
    edit: impl FnOnce(&mut T),
) -> serde_json::Value {
    let mut json = serde_json::to_value(plan).expect("the plan's JSON form");
    let slot = json
        .get_mut(field)
        .unwrap_or_else(|| panic!("the plan has no field `{field}`"));
    let mut value: T = serde_json::from_value(slot.take()).expect("the field's type");
    edit(&mut value);
    *slot = serde_json::to_value(value).expect("the field's JSON form");
    json
}

/// A parent for one test's private device-node directories, under `/dev`
/// (root-owned, on a filesystem that allows devices), so the test counts
/// its own launches' directories and not those of tests running beside it.
/// Removed (with anything left in it) when dropped.
pub struct DeviceParent(PathBuf);

impl DeviceParent {
    pub fn new(label: &str) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = PathBuf::from(format!(
            "/dev/.splash-test-{label}-{}-{n}",
            std::process::id()
        ));
        std::fs::create_dir(&path).expect("a device parent under /dev");
        DeviceParent(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The device directories in it.
    pub fn directories(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(&self.0)
            .expect("read the device parent")
            .flatten()
            .map(|e| e.path())
            .collect();
        out.sort();
        out
    }
}

impl Drop for DeviceParent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The private device-node directories (`/dev/.splash-dev-*`) bound into
/// the sandboxes of `pids`, read from each process's own mount table (the
/// root of a bind mount is its source's path on the source filesystem), so
/// a test counts its own launches' directories, not those of tests running
/// beside it.
pub fn device_directories_of(pids: &[u32]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pid in pids {
        let Ok(table) = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")) else {
            continue;
        };
        for line in table.lines() {
            let Some(root) = line.split(' ').nth(3) else {
                continue;
            };
            let mut parts = root.trim_start_matches('/').split('/');
            if let Some(dir) = parts.next()
                && dir.starts_with(".splash-dev-")
            {
                out.push(Path::new("/dev").join(dir));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Processes on the host that run `program` (a test's own probe copy),
/// wherever it is mounted inside their sandbox: the file behind
/// `/proc/PID/exe` is compared by device and inode, not by the path, which
/// is the sandbox's. A zombie runs nothing and has no `exe`, so it is not
/// counted.
pub fn processes_running(program: &Path) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;

    let Ok(target) = std::fs::metadata(program) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::metadata(entry.path().join("exe"))
            .is_ok_and(|exe| (exe.dev(), exe.ino()) == (target.dev(), target.ino()))
        {
            out.push(pid);
        }
    }
    out
}

/// A shell script standing in for an old bwrap: its `--help` omits
/// `missing` and a launch using it fails like an unknown option would;
/// everything else is forwarded to the real bwrap. With `hide_in_help =
/// false` the help lists the option, so only the launch can tell.
pub fn fake_bwrap(dir: &Path, real: &Path, missing: &str, hide_in_help: bool) -> PathBuf {
    let path = dir.join("bwrap");
    let help = if hide_in_help {
        format!("{} --help | grep -v -e '^ *{missing} '", real.display())
    } else {
        format!("{} --help", real.display())
    };
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --help ]; then {help}; exit 0; fi\nfor a in \"$@\"; do\n  if [ \"$a\" = {missing} ]; then echo \"bwrap: Unknown option {missing}\" >&2; exit 1; fi\ndone\nexec {} \"$@\"\n",
        real.display()
    );
    std::fs::write(&path, script).expect("fake bwrap");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    path
}

/// Who a host started by [`role_command`] runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAs {
    /// Root with every capability.
    Root,
    /// Root without `CAP_SYS_ADMIN` in its bounding and inheritable sets
    /// (through `setpriv`), so it cannot make a pid namespace by itself.
    RootWithoutSysAdmin,
    /// Uid and gid 65534 without supplementary groups (through `setpriv`).
    Nobody,
}

/// This test binary run as the ignored test `role` alone (a host a test
/// starts and kills), as `who`.
pub fn role_command(role: &str, who: HostAs) -> std::process::Command {
    let exe = std::env::current_exe().expect("test binary");
    let wrapper: &[&str] = match who {
        HostAs::Root => &[],
        HostAs::RootWithoutSysAdmin => &["--inh-caps=-sys_admin", "--bounding-set=-sys_admin"],
        HostAs::Nobody => &["--reuid=65534", "--regid=65534", "--clear-groups"],
    };
    let mut command = if wrapper.is_empty() {
        std::process::Command::new(&exe)
    } else {
        let mut c = std::process::Command::new("setpriv");
        c.args(wrapper).arg("--").arg(&exe);
        c
    };
    command.args([
        "--exact",
        role,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    command
}
