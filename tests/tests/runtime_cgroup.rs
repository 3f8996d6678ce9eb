//! The cgroup-v2 boundary on this host's real kernel: a fresh child cgroup
//! per worker, the runner's join, `cgroup.kill` of a whole tree, cleanup,
//! a missing controller named at bind, and runners that exit or never join.
//!
//! This host's cgroup-v2 mount has no controllers (they are bound to v1),
//! so these tests clear the plan's limits after lowering: what runs here is
//! the boundary itself (child, join, kill, removal). The limits are proven
//! with real controllers in the VM (`tests/vm/tests/cgroup.rs`).
//!
//! Every test works in its own parent cgroup below the one this process is
//! in, and removes it; nothing else of the hierarchy is touched.

mod runtime_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use runtime_support::{
    Binding, ProbeSession, TempDir, TestPolicy, bin_dir, edited, edited_json, host_with_probe,
    live_children, open_fds, probe_policy, reaped, serial,
};
use serde_json::json;
use splash_runtime::SessionState;
use splash_runtime::cgroup::{CgroupParent, REMOVE_TIMEOUT};
use splash_runtime::{
    BindError, BoundCommand, CallError, CgroupError, Deadlines, Session, SpawnError,
    WorkerLifecycle, WorkerStatus,
};
use splashpol::model::{CgroupLimits, CgroupPolicy};
use splashpol::plan::{LaunchPlan, PlanError};

/// A parent cgroup of our own, removed (with anything left in it) on drop.
struct TestParent(PathBuf);

impl TestParent {
    /// Creates `splash-test-<pid>-<n>` below this process's cgroup-v2
    /// cgroup, or skips when the host has no writable cgroup-v2 mount.
    fn new() -> Option<Self> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mount = mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 2 && f[2] == "cgroup2")
            .map(|f| PathBuf::from(f[1]));
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("0::").map(str::to_owned));
        let base = match (mount, own) {
            (Some(m), Some(o)) => m.join(o.trim_start_matches('/')),
            _ => PathBuf::new(),
        };
        let runner = bin_dir().join("splash-cgroup-runner");
        if !splash_tests::require_host(
            base.join("cgroup.procs").exists(),
            "a cgroup-v2 mount holding this process's cgroup",
        ) || !splash_tests::require_host(
            runner.is_file(),
            "the splash-cgroup-runner binary (run `cargo build --workspace --bins` first)",
        ) {
            return None;
        }
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = base.join(format!(
            "splash-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let made = std::fs::create_dir(&dir);
        if !splash_tests::require_host(made.is_ok(), "a writable cgroup-v2 hierarchy") {
            return None;
        }
        Some(Self(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// The child cgroups that exist below the parent.
    fn children(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .expect("read the test parent")
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for TestParent {
    fn drop(&mut self) {
        for child in self.children() {
            let dir = self.0.join(child);
            let _ = std::fs::write(dir.join("cgroup.kill"), "1");
            let deadline = Instant::now() + Duration::from_secs(5);
            while std::fs::remove_dir(&dir).is_err() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn runner() -> PathBuf {
    bin_dir().join("splash-cgroup-runner")
}

/// `policy` with a cgroup block under `parent`, run by `runner`.
fn with_cgroup(policy: &mut TestPolicy, parent: &Path, runner: &Path, entries: &str) {
    policy.extra.push(format!(
        r#"cgroup parent "{}" runner "{}" {{ {entries} }}"#,
        parent.display(),
        runner.display()
    ));
}

/// The plan with its cgroup limits cleared: this host has no controllers.
fn boundary_only(policy: &TestPolicy) -> LaunchPlan {
    edited(
        policy.plan(),
        "cgroup",
        |cgroup: &mut Option<CgroupPolicy>| {
            cgroup.as_mut().expect("cgroup policy").limits = CgroupLimits::default();
        },
    )
}

fn pids_of(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(") ").next().and_then(|rest| rest.chars().next()))
        .is_some_and(|state| state != 'Z' && state != 'X')
}

#[test]
fn the_worker_tree_runs_in_a_fresh_child_and_terminate_kills_and_removes_it() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let fds_before = open_fds();
    for binding in [Binding::Paths, Binding::PinnedMountsAndExecutables] {
        let mut policy = probe_policy(&bwrap, &probe_dir);
        policy.binding = binding;
        policy.seccomp = Some("deny-known-escape-surface".into());
        with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
        let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
        let mut probe = ProbeSession::start(&bound, None).expect("start");
        let cgroup = probe
            .worker
            .with_cgroup(|c| c.path().to_path_buf())
            .expect("a cgroup");
        assert_eq!(cgroup.parent(), Some(parent.path()));
        let name = cgroup
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(
            name.len() == "splash-".len() + 16 && name.starts_with("splash-"),
            "{name}"
        );
        assert_eq!(
            parent.children(),
            std::slice::from_ref(&name),
            "{binding:?}"
        );

        // Bubblewrap (the runner's pid, after its exec) is in the child.
        let bwrap_pid = probe.worker.pid();
        let cg_line = std::fs::read_to_string(format!("/proc/{bwrap_pid}/cgroup")).expect("cgroup");
        assert!(
            cg_line
                .lines()
                .any(|l| l.starts_with("0::") && l.ends_with(&format!("/{name}"))),
            "{cg_line}"
        );
        // The probe forks a background process that outlives its parent
        // shell; every process of the tree is in the child cgroup.
        let out = probe
            .call(
                "probe.exec",
                json!({"argv": ["/bin/sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 &"]}),
            )
            .expect("fork");
        assert_eq!(out["exit_code"], json!(0), "{out}");
        let report = probe.report();
        assert_eq!(
            report["seccomp"],
            json!(2),
            "the plan's filter still applies"
        );
        // The worker's cgroup namespace is rooted at its own child cgroup:
        // it sees `/`, never the host's path.
        let seen = report["cgroup"].as_str().unwrap_or_default();
        assert!(seen.lines().any(|l| l == "0::/"), "{seen}");
        let members = pids_of(&cgroup);
        assert!(members.contains(&bwrap_pid), "{members:?}");
        // bwrap, the probe (pid 1 of the sandbox) and the orphaned sleep.
        assert!(members.len() >= 3, "{members:?}");

        assert_eq!(
            probe.worker.release().expect("terminate"),
            WorkerStatus::Killed(libc::SIGKILL)
        );
        assert!(!cgroup.exists(), "the child cgroup was removed");
        assert!(parent.children().is_empty());
        for pid in members {
            let deadline = Instant::now() + Duration::from_secs(5);
            while running(pid) {
                assert!(Instant::now() < deadline, "pid {pid} survived cgroup.kill");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        // Terminate again: nothing more to do, same status.
        assert_eq!(
            probe.worker.release().expect("again"),
            WorkerStatus::Killed(libc::SIGKILL)
        );
        drop(probe);
        drop(bound);
    }
    assert_eq!(open_fds(), fds_before, "descriptors leaked");
    assert!(
        live_children().is_empty(),
        "children left: {:?}",
        live_children()
    );
}

#[test]
fn a_clean_exit_and_drop_also_remove_the_cgroup() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");

    // A session closed by the host: the worker exits 0; terminate then
    // keeps that status and removes the cgroup.
    let probe = ProbeSession::start(&bound, None).expect("start");
    let ProbeSession { session, worker } = probe;
    session.close().expect("close");
    assert_eq!(reaped(&worker), WorkerStatus::Exited(0));
    assert_eq!(
        parent.children().len(),
        1,
        "wait does not remove the cgroup"
    );
    assert_eq!(
        worker.release().expect("terminate"),
        WorkerStatus::Exited(0)
    );
    assert!(parent.children().is_empty());

    // Dropping a running worker kills the tree and removes the cgroup.
    let probe = ProbeSession::start(&bound, None).expect("start");
    assert_eq!(parent.children().len(), 1);
    drop(probe);
    assert!(parent.children().is_empty());
    assert!(
        live_children().is_empty(),
        "children left: {:?}",
        live_children()
    );
}

#[test]
fn cgroup_kill_stops_a_tree_that_forked_before_the_kill() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    // No sandbox and no pid namespace here: only the cgroup holds the tree
    // together. A shell joins the child cgroup and forks two sleepers.
    let p = CgroupParent::open(parent.path()).expect("parent");
    let mut child = p.create_child(&CgroupLimits::default()).expect("child");
    let procs = child.path().join("cgroup.procs");
    let script = format!(
        "echo $$ > {}; sleep 1000 & sleep 1000 & echo forked; wait",
        procs.display()
    );
    let mut shell = Command::new("/bin/sh")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("shell");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(shell.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("read");
    assert_eq!(line, "forked\n");
    let members = child.procs().expect("procs");
    assert_eq!(members.len(), 3, "shell and two sleepers: {members:?}");

    // Control: SIGKILL to the shell alone leaves the sleepers running.
    shell.kill().expect("kill shell");
    shell.wait().expect("reap shell");
    let survivors: Vec<u32> = members.iter().copied().filter(|&p| running(p)).collect();
    assert_eq!(survivors.len(), 2, "{survivors:?}");

    // cgroup.kill stops them; the cgroup is then removed.
    child.kill_and_remove().expect("kill and remove");
    for pid in survivors {
        let deadline = Instant::now() + Duration::from_secs(5);
        while running(pid) {
            assert!(Instant::now() < deadline, "pid {pid} survived cgroup.kill");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert!(parent.children().is_empty());
}

#[test]
fn a_missing_controller_is_named_and_nothing_is_created() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    // The real limits: this host's cgroup-v2 parent enables no controller.
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
    let err = BoundCommand::bind(policy.plan()).expect_err("no pids controller");
    let BindError::Cgroup(CgroupError::MissingController { controller, .. }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*controller, "pids");

    // The child's own check names it too, and removes the child again.
    let p = CgroupParent::open(parent.path()).expect("parent");
    let limits = CgroupLimits {
        memory_max_bytes: Some(1 << 20),
        ..CgroupLimits::default()
    };
    let err = p.create_child(&limits).expect_err("no memory controller");
    assert!(err.to_string().contains("controller `memory`"), "{err}");
    assert!(parent.children().is_empty());

    // Control: without a limit the same parent gives a child.
    let mut child = p.create_child(&CgroupLimits::default()).expect("child");
    assert_eq!(parent.children().len(), 1);
    child.kill_and_remove().expect("remove");
    assert!(parent.children().is_empty());
}

#[test]
fn a_parent_that_is_not_cgroup_v2_fails_to_bind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let not_cgroup = TempDir::new("not-cgroup");
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(&mut policy, not_cgroup.path(), &runner(), "pids 64");
    let err = BoundCommand::bind(policy.plan()).expect_err("tmp is not cgroup2");
    assert!(
        matches!(err, BindError::Cgroup(CgroupError::NotCgroup2 { .. })),
        "{err:?}"
    );
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(
        &mut policy,
        Path::new("/sys/fs/cgroup/no-such-parent"),
        &runner(),
        "pids 64",
    );
    let err = BoundCommand::bind(policy.plan()).expect_err("missing parent");
    assert!(
        matches!(err, BindError::Cgroup(CgroupError::OpenParent { .. })),
        "{err:?}"
    );
}

/// Spawns without opening a session, returning the launch error itself.
fn spawn_raw(bound: &BoundCommand) -> Result<splash_runtime::Watchdog, SpawnError> {
    let boot = splash_protocol::PrivatePipeWorkerBootstrap::new(
        splash_protocol::Token::new("s-1").expect("token"),
        splash_protocol::SessionKey::generate().expect("key"),
    );
    bound
        .spawn_watched(&boot, Deadlines::none())
        .map(|(worker, _, _)| worker)
}

/// A runner that is not the cgroup runner: a shell script.
fn fake_runner(dir: &TempDir, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write runner");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn a_runner_that_never_joins_or_exits_fails_the_launch_and_leaves_nothing() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let runners = TempDir::new("fake-runners");
    let sleeper = fake_runner(&runners, "sleeper", "exec sleep 1000");
    let quitter = fake_runner(&runners, "quitter", "exit 3");
    let fds_before = open_fds();

    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(
        &mut policy,
        parent.path(),
        &sleeper,
        "pids 64; join-timeout 300 ms",
    );
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    let started = Instant::now();
    let err = spawn_raw(&bound).expect_err("never joins");
    let waited = started.elapsed();
    assert!(
        matches!(
            err,
            SpawnError::Cgroup(CgroupError::JoinTimeout {
                timeout_ms: 300,
                ..
            })
        ),
        "{err:?}"
    );
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert!(
        parent.children().is_empty(),
        "cgroup left: {:?}",
        parent.children()
    );
    assert!(
        live_children().is_empty(),
        "runner left: {:?}",
        live_children()
    );
    drop(bound);

    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(&mut policy, parent.path(), &quitter, "pids 64");
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    let err = spawn_raw(&bound).expect_err("exits");
    let SpawnError::Cgroup(CgroupError::RunnerExited { status, .. }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(status.to_string(), "exit status 3");
    assert!(parent.children().is_empty());
    assert!(live_children().is_empty());
    drop(bound);
    assert_eq!(open_fds(), fds_before, "descriptors leaked");

    // Control: the real runner joins with the same policy.
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(
        &mut policy,
        parent.path(),
        &runner(),
        "pids 64; join-timeout 300 ms",
    );
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    let probe = ProbeSession::start(&bound, None).expect("joins");
    probe.worker.release().expect("terminate");
}

#[test]
fn a_required_boundary_refuses_every_uncgrouped_path() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.extra.push(format!(
        r#"cgroup parent "{}" runner "{}" required {{ pids 64 }}"#,
        parent.path().display(),
        runner().display()
    ));
    let plan = edited(
        policy.plan(),
        "cgroup",
        |cgroup: &mut Option<CgroupPolicy>| {
            cgroup.as_mut().expect("cgroup").limits = CgroupLimits::default();
        },
    );
    assert!(plan.require_cgroup_v2());

    // A required plan whose cgroup policy was removed is not a plan: it
    // cannot be read from JSON, so it never reaches bind.
    let stripped = edited_json(&plan, "cgroup", |cgroup: &mut Option<CgroupPolicy>| {
        *cgroup = None;
    });
    let err = serde_json::from_value::<LaunchPlan>(stripped).expect_err("required without policy");
    assert!(
        err.to_string()
            .contains(&PlanError::MissingCgroup.to_string()),
        "{err}"
    );

    // The uncgrouped launch spec is refused; spawn goes through the cgroup.
    let bound = BoundCommand::bind(plan).expect("bind");
    let err = bound.launch_spec().expect_err("uncgrouped");
    assert!(matches!(err, SpawnError::Uncgrouped), "{err}");
    let probe = ProbeSession::start(&bound, None).expect("cgrouped spawn");
    assert!(probe.worker.with_cgroup(|_| ()).is_some());
    probe.worker.release().expect("terminate");
    assert!(parent.children().is_empty());

    // Control: without `required` the spec (no runner) is available.
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    bound.launch_spec().expect("spec");
}

#[test]
fn a_failed_removal_is_a_containment_error_from_terminate() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    let probe = ProbeSession::start(&bound, None).expect("start");
    // A nested cgroup the runtime did not make keeps the child from being
    // removed (rmdir answers EBUSY for a cgroup with children).
    let cgroup = probe
        .worker
        .with_cgroup(|c| c.path().to_path_buf())
        .expect("cgroup");
    std::fs::create_dir(cgroup.join("nested")).expect("nested");
    let started = Instant::now();
    let err = probe.worker.release().expect_err("cannot remove");
    assert!(started.elapsed() >= REMOVE_TIMEOUT);
    let failure = WorkerLifecycle::containment_failure(&err).expect("a containment failure");
    assert!(matches!(failure, CgroupError::Remove { .. }), "{failure}");
    // The tree itself is dead and reaped.
    assert_eq!(
        probe.worker.try_status().expect("status"),
        WorkerStatus::Killed(libc::SIGKILL)
    );
    // Once the obstacle is gone, terminate finishes the removal.
    std::fs::remove_dir(cgroup.join("nested")).expect("remove nested");
    probe.worker.release().expect("removed now");
    assert!(parent.children().is_empty());
}

/// `cargo test -p splash-tests --test runtime_cgroup -- --ignored soak --nocapture`:
/// 1,000 spawn/call/terminate cycles (`SPLASH_SOAK_CYCLES` to change) leave
/// no cgroup, process or descriptor behind. The same cycles without the
/// cgroup block run first, as the baseline of the time per cycle.
#[test]
#[ignore = "soak profile: 1,000 launches; run explicitly"]
fn soak_spawn_terminate_cycles_leave_nothing() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let cycles: u32 = std::env::var("SPLASH_SOAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.binding = Binding::PinnedMountsAndExecutables;
    policy.seccomp = Some("deny-known-escape-surface".into());
    let plain = BoundCommand::bind(policy.plan()).expect("bind");
    with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
    let cgrouped = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    let fds_before = open_fds();
    for (name, bound) in [("without a cgroup", &plain), ("with the cgroup", &cgrouped)] {
        let started = Instant::now();
        for i in 0..cycles {
            let mut probe =
                ProbeSession::start(bound, None).unwrap_or_else(|e| panic!("cycle {i}: {e}"));
            probe
                .call("probe.echo", json!({"input": i}))
                .unwrap_or_else(|e| panic!("cycle {i}: {e}"));
            probe
                .worker
                .release()
                .unwrap_or_else(|e| panic!("cycle {i}: {e}"));
            drop(probe);
            assert!(parent.children().is_empty(), "cycle {i}: cgroup left");
        }
        let elapsed = started.elapsed();
        eprintln!(
            "soak {name}: {cycles} spawn/call/terminate cycles in {elapsed:?} ({:?} each)",
            elapsed / cycles.max(1)
        );
    }
    assert_eq!(open_fds(), fds_before, "descriptors leaked");
    assert!(
        live_children().is_empty(),
        "children left: {:?}",
        live_children()
    );
    assert!(parent.children().is_empty());
}

/// The host API ([`Session`]) stops through the same lifecycle: a clean
/// close and a watchdog deadline each remove the worker's cgroup, and a
/// cgroup that cannot be removed makes `close` return a containment error.
#[test]
fn a_host_api_session_removes_the_cgroup_on_close_and_on_a_deadline() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
    // Counted before bind: a root bind prepares the device directory that
    // the first launch takes over, so the bound command is dropped before
    // the count is compared.
    let fds_before = open_fds();
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");

    // A clean close: the probe exits, and its cgroup, with the background
    // process it started, is gone.
    let mut session =
        Session::open(&bound, policy.manifest(), Deadlines::none()).expect("open session");
    let out = session
        .call(
            "probe.exec",
            json!({"argv": ["/bin/sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 &"]}),
        )
        .expect("fork");
    assert_eq!(out["exit_code"], json!(0), "{out}");
    let children = parent.children();
    assert_eq!(children.len(), 1, "{children:?}");
    let members = pids_of(&parent.path().join(&children[0]));
    assert!(members.len() >= 3, "bwrap, the probe, sleep: {members:?}");
    let status = session.close(Duration::from_secs(5)).expect("close");
    assert_eq!(status, WorkerStatus::Exited(0));
    assert!(parent.children().is_empty(), "{:?}", parent.children());
    for pid in members {
        assert!(!running(pid), "{pid} survived the close");
    }

    // A session deadline force-stops the worker through the same path.
    let mut session = Session::open(
        &bound,
        policy.manifest(),
        Deadlines::session(Duration::from_millis(500)),
    )
    .expect("open session");
    assert_eq!(parent.children().len(), 1);
    let err = session
        .call("probe.exec", json!({"argv": ["/bin/sleep", "30"]}))
        .expect_err("the deadline ends the call");
    assert_eq!(err.leaves_session(), SessionState::Poisoned, "{err}");
    assert!(parent.children().is_empty(), "{:?}", parent.children());
    drop(session);

    // A cgroup that cannot be removed (a nested cgroup the runtime did not
    // make) turns a clean close into a containment error for the host.
    let session =
        Session::open(&bound, policy.manifest(), Deadlines::none()).expect("open session");
    let cgroup = parent.path().join(&parent.children()[0]);
    std::fs::create_dir(cgroup.join("nested")).expect("nested");
    let err = session
        .close(Duration::from_secs(5))
        .expect_err("cannot remove");
    let CallError::Containment(e) = &err else {
        panic!("{err}");
    };
    let failure = WorkerLifecycle::containment_failure(e).expect("a containment failure");
    assert!(matches!(failure, CgroupError::Remove { .. }), "{failure}");
    assert!(pids_of(&cgroup).is_empty(), "the tree itself is dead");
    std::fs::remove_dir(cgroup.join("nested")).expect("remove nested");
    std::fs::remove_dir(&cgroup).expect("remove the child");

    // The same failure on the force-stop path: a deadline that wins against
    // a cgroup that cannot be removed is a containment error too, not an
    // indeterminate outcome that hides it.
    let mut session = Session::open(
        &bound,
        policy.manifest(),
        Deadlines::session(Duration::from_millis(500)),
    )
    .expect("open session");
    let cgroup = parent.path().join(&parent.children()[0]);
    std::fs::create_dir(cgroup.join("nested")).expect("nested");
    let err = session
        .call("probe.exec", json!({"argv": ["/bin/sleep", "30"]}))
        .expect_err("the deadline ends the call");
    let CallError::Containment(e) = &err else {
        panic!("expected a containment error: {err}");
    };
    let failure = WorkerLifecycle::containment_failure(e).expect("a containment failure");
    assert!(matches!(failure, CgroupError::Remove { .. }), "{failure}");
    assert_eq!(err.leaves_session(), SessionState::Poisoned);
    assert!(pids_of(&cgroup).is_empty(), "the tree itself is dead");
    drop(session);
    std::fs::remove_dir(cgroup.join("nested")).expect("remove nested");
    std::fs::remove_dir(&cgroup).expect("remove the child");

    drop(bound);
    assert_eq!(open_fds(), fds_before, "a descriptor was left open");
    assert!(live_children().is_empty(), "{:?}", live_children());
}

/// With a cgroup as well: a worker that cleared its parent-death signal
/// (`--orphan`) and ignores `close_session` (`--linger`) is gone, with its
/// cgroup, when a session deadline's stop and a `close` return. (Without
/// the cgroup, and the control that such a worker outlives a kill of
/// Bubblewrap alone: `runtime_host`.)
#[test]
fn an_orphaned_lingering_worker_in_a_cgroup_is_gone_when_the_stop_returns() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let probe = probe_dir.path().join("splash-probe");
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.worker_args = vec!["--orphan".into(), "--linger".into()];
    with_cgroup(&mut policy, parent.path(), &runner(), "pids 64");
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    let probes = || runtime_support::processes_running(&probe);

    let mut session = Session::open(
        &bound,
        policy.manifest(),
        Deadlines::session(Duration::from_millis(500)),
    )
    .expect("open session");
    let err = session
        .call("probe.exec", json!({"argv": ["/bin/sleep", "60"]}))
        .expect_err("the deadline ends the call");
    assert_eq!(err.leaves_session(), SessionState::Poisoned, "{err}");
    assert!(probes().is_empty(), "{:?}", probes());
    assert!(parent.children().is_empty(), "{:?}", parent.children());
    drop(session);

    let mut session =
        Session::open(&bound, policy.manifest(), Deadlines::none()).expect("open session");
    session
        .call("probe.path", json!({"path": "/"}))
        .expect("a call");
    let closed = session.close(Duration::from_millis(300));
    assert!(
        matches!(
            &closed,
            Err(CallError::Indeterminate {
                reason: splash_runtime::Indeterminate::ForceStopped(
                    splash_runtime::StopReason::CloseGrace
                ),
                status: WorkerStatus::Killed(9),
            })
        ),
        "a worker that ignored close was force-stopped: {closed:?}"
    );
    assert!(probes().is_empty(), "{:?}", probes());
    assert!(parent.children().is_empty(), "{:?}", parent.children());

    // The same close when the cgroup cannot be removed (a nested cgroup the
    // runtime did not make): the force-stop's failure is a containment
    // error naming the cgroup, never a status of `Running`.
    let mut session =
        Session::open(&bound, policy.manifest(), Deadlines::none()).expect("open session");
    session
        .call("probe.path", json!({"path": "/"}))
        .expect("a call");
    let cgroup = parent.path().join(&parent.children()[0]);
    std::fs::create_dir(cgroup.join("nested")).expect("nested");
    let err = session
        .close(Duration::from_millis(300))
        .expect_err("cannot remove");
    let CallError::Containment(e) = &err else {
        panic!("expected a containment error: {err:?}");
    };
    let failure = WorkerLifecycle::containment_failure(e).expect("a cgroup failure");
    assert!(matches!(failure, CgroupError::Remove { .. }), "{failure}");
    assert!(
        failure.to_string().contains(&*cgroup.to_string_lossy()),
        "names what is left: {failure}"
    );
    assert!(
        probes().is_empty(),
        "the tree itself is dead: {:?}",
        probes()
    );
    std::fs::remove_dir(cgroup.join("nested")).expect("remove nested");
    std::fs::remove_dir(&cgroup).expect("remove the child");
    drop(bound);
    assert!(live_children().is_empty(), "{:?}", live_children());
}

/// The parent cgroup the killed host launches under.
const KILLED_HOST_PARENT: &str = "SPLASH_TEST_KILLED_HOST_CGROUP";
/// The probe directory the killed host launches from.
const KILLED_HOST_PROBE: &str = "SPLASH_TEST_KILLED_HOST_PROBE";

/// The policy both the killed host and the next bind use: a probe that
/// clears its parent-death signal and outlives the end of its session, so
/// it outlives its host's death.
fn orphan_cgroup_policy(bwrap: &Path, probe_dir: &Path, parent: &Path) -> TestPolicy {
    let mut policy = runtime_support::probe_policy_in(bwrap, probe_dir);
    policy.worker_args = vec!["--orphan".into(), "--linger".into()];
    with_cgroup(&mut policy, parent, &runner(), "pids 64");
    policy
}

/// Not a test of its own: the host that
/// [`a_host_killed_with_a_session_open_leaves_nothing_after_the_next_bind`]
/// starts as a child process and kills with SIGKILL once a session is open.
#[test]
#[ignore = "the child role of a_host_killed_with_a_session_open_leaves_nothing_after_the_next_bind"]
fn killed_cgroup_host_role() {
    let (Ok(parent), Ok(probe_dir)) = (
        std::env::var(KILLED_HOST_PARENT),
        std::env::var(KILLED_HOST_PROBE),
    ) else {
        panic!("run only by a_host_killed_with_a_session_open_leaves_nothing_after_the_next_bind");
    };
    let bwrap = splash_tests::bwrap_path().expect("bwrap");
    let policy = orphan_cgroup_policy(&bwrap, Path::new(&probe_dir), Path::new(&parent));
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("bind");
    // Open and idle: a call in flight would answer into a closed pipe
    // once the host is dead, and SIGPIPE would end the worker.
    let _session =
        Session::open(&bound, policy.manifest(), Deadlines::none()).expect("open session");
    println!("READY");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// A host killed by SIGKILL with a session open leaves its child cgroup,
/// and the next bind under that parent kills and removes it, since no
/// living process holds its lock. The sandbox died with its host (the
/// launch is pid 1 of a pid namespace of its own: as root, and as root
/// without `CAP_SYS_ADMIN` through a user namespace), although its worker
/// cleared its parent-death signal; a process the test then puts in the
/// child (what a host that could make no such namespace leaves running
/// there) is killed by the sweep. A child whose owner lives (a session of
/// the next bind) is left alone.
#[test]
fn a_host_killed_with_a_session_open_leaves_nothing_after_the_next_bind() {
    let _serial = serial();
    let Some(parent) = TestParent::new() else {
        return;
    };
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    for who in [
        runtime_support::HostAs::Root,
        runtime_support::HostAs::RootWithoutSysAdmin,
    ] {
        killed_cgroup_host(&bwrap, probe_dir.path(), &parent, who);
    }
}

fn killed_cgroup_host(
    bwrap: &Path,
    probe_dir: &Path,
    parent: &TestParent,
    who: runtime_support::HostAs,
) {
    use std::io::BufRead;

    let mut host = runtime_support::role_command("killed_cgroup_host_role", who)
        .env(KILLED_HOST_PARENT, parent.path())
        .env(KILLED_HOST_PROBE, probe_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("host");
    let stdout = host.stdout.take().expect("stdout");
    let ready = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.ends_with("READY"));
    assert!(ready, "the host did not open its session");
    let left = parent.children();
    assert_eq!(left.len(), 1, "the host's child cgroup: {left:?}");
    let child = parent.path().join(&left[0]);
    let sandbox: Vec<u32> = pids_of(&child);
    assert!(!sandbox.is_empty(), "the sandbox runs in the child");
    host.kill().expect("SIGKILL");
    host.wait().expect("reap");
    let until = std::time::Instant::now() + Duration::from_secs(1);
    while sandbox.iter().any(|p| running(*p)) {
        assert!(
            std::time::Instant::now() < until,
            "{who:?}: the sandbox outlived its killed host: {:?}",
            pids_of(&child)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(parent.children(), left, "the killed host's child is left");
    // What a launch in the host's namespaces would leave: a process still
    // running in the child.
    let mut survivor = Command::new("sleep").arg("60").spawn().expect("sleep");
    std::fs::write(child.join("cgroup.procs"), survivor.id().to_string())
        .expect("move the survivor into the child");
    let survivors = vec![survivor.id()];

    let policy = orphan_cgroup_policy(bwrap, probe_dir, parent.path());
    let bound = BoundCommand::bind(boundary_only(&policy)).expect("the next bind");
    assert!(parent.children().is_empty(), "{:?}", parent.children());
    let killed = survivor.wait().expect("reap the survivor");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(9),
        "swept with its cgroup: {survivors:?}"
    );
    // A live owner's child survives a sweep.
    let session =
        Session::open(&bound, policy.manifest(), Deadlines::none()).expect("open session");
    let _again = BoundCommand::bind(boundary_only(&policy)).expect("a third bind");
    assert_eq!(parent.children().len(), 1, "a held child is never swept");
    // It lingers after `close_session`: the close force-stops it.
    let closed = session.close(Duration::from_millis(300));
    assert!(closed.is_err(), "{closed:?}");
    assert!(parent.children().is_empty());
}
