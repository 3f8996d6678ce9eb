//! The private device nodes of a root launch, with the real bwrap: what the
//! runtime makes on the host, and that nothing of it is left behind. (What
//! the worker can do with its nodes is proven from inside the sandbox by the
//! escape battery's `dev-node-*` attempts and its device report.)

mod runtime_support;

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use runtime_support::{DeviceParent, TempDir, TestPolicy, edited, running_as_root};
use splash_protocol::{PrivatePipeWorkerBootstrap, SessionKey, Token};
use splash_runtime::{
    BindError, BindOptions, BoundCommand, Deadlines, LaunchPreparation, LaunchSpec, PlanDefect,
    SpawnError, WorkerStatus,
};
use splashpol::plan::{BwrapOp, DeviceNode};

const NODES: [(&str, u32, u32); 6] = [
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
];

/// Bind options that make the private nodes under this test's own parent,
/// so launches of tests running beside it do not count.
fn in_parent(parent: &DeviceParent) -> BindOptions {
    BindOptions::default().with_device_directory(parent.path())
}

/// A root host with bwrap and a copy of `cat` as the worker.
fn root_host() -> Option<(TempDir, PathBuf)> {
    let bwrap = splash_tests::bwrap_path();
    if !splash_tests::require_host(bwrap.is_some(), "bubblewrap") {
        return None;
    }
    // The worker gets this process's real uid.
    if !splash_tests::require_host(
        running_as_root(),
        "host root (private device nodes are made by root)",
    ) {
        return None;
    }
    let dir = TempDir::new("devices");
    std::fs::copy("/usr/bin/cat", dir.path().join("cat")).expect("copy cat");
    Some((dir, bwrap.expect("checked above")))
}

fn bootstrap() -> PrivatePipeWorkerBootstrap {
    PrivatePipeWorkerBootstrap::new(
        Token::new("s-1").expect("token"),
        SessionKey::generate().expect("csprng key"),
    )
}

fn assert_private_nodes(dir: &Path) {
    let meta = std::fs::symlink_metadata(dir).expect("device directory");
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o700, "{dir:?}");
    assert_eq!((meta.uid(), meta.gid()), (0, 0), "{dir:?}");
    for (name, major, minor) in NODES {
        let node = std::fs::symlink_metadata(dir.join(name)).expect("node");
        assert!(node.file_type().is_char_device(), "{name}");
        assert_eq!(
            (libc::major(node.rdev()), libc::minor(node.rdev())),
            (major, minor),
            "{name}"
        );
        assert_eq!(node.permissions().mode() & 0o7777, 0o666, "{name}");
        assert_eq!((node.uid(), node.gid()), (65534, 65534), "{name}");
    }
    let entries = std::fs::read_dir(dir).expect("list").count();
    assert_eq!(entries, NODES.len(), "nothing but the nodes");
}

#[test]
fn a_root_launch_gets_private_nodes_that_are_removed_when_the_worker_is_reaped() {
    let _serial = runtime_support::serial();
    let Some((dir, bwrap)) = root_host() else {
        return;
    };
    let parent = DeviceParent::new("devices");
    let bound = BoundCommand::bind_with(
        TestPolicy::new(&bwrap, dir.path(), "cat").plan(),
        in_parent(&parent),
    )
    .expect("bind");
    assert!(bound.private_device_nodes());
    // Bind proved it can make the nodes with one directory, which the first
    // launch takes.
    let made_at_bind = parent.directories();
    assert_eq!(made_at_bind.len(), 1, "bind's directory: {made_at_bind:?}");
    assert_private_nodes(&made_at_bind[0]);

    // A prepared launch names its directory in the arguments.
    let spec = bound.launch_spec().expect("launch spec");
    let private = spec
        .device_directory()
        .expect("private nodes")
        .path()
        .to_path_buf();
    assert_eq!(private, made_at_bind[0], "the first launch takes it");
    assert_private_nodes(&private);
    for (name, _, _) in NODES {
        let source = private.join(name).display().to_string();
        let at = spec
            .args()
            .windows(3)
            .position(|w| w[0] == "--dev-bind" && w[1] == source && w[2] == format!("/dev/{name}"));
        assert!(
            at.is_some(),
            "--dev-bind {source} /dev/{name} in {:?}",
            spec.args()
        );
    }
    drop(spec);
    assert!(!private.exists(), "a dropped launch spec removes its nodes");

    // A real launch: the nodes exist while the worker runs, and go with it.
    let (worker, stdin, _stdout) = bound
        .spawn_watched(&bootstrap(), Deadlines::none())
        .expect("spawn");
    let during = parent.directories();
    assert_eq!(during.len(), 1, "one directory for the launch: {during:?}");
    assert_private_nodes(&during[0]);
    assert_eq!(worker.try_status().expect("status"), WorkerStatus::Running);
    drop(stdin);
    let status = runtime_support::reaped(&worker);
    assert_eq!(status, WorkerStatus::Exited(0), "cat ends at end of input");
    assert!(!during[0].exists(), "removed once the worker is reaped");
    drop(worker);
    assert!(parent.directories().is_empty());

    // A bound command that never launches removes bind's directory with
    // itself.
    let unused = BoundCommand::bind_with(
        TestPolicy::new(&bwrap, dir.path(), "cat").plan(),
        in_parent(&parent),
    )
    .expect("bind");
    assert_eq!(parent.directories().len(), 1);
    drop(unused);
    assert!(
        parent.directories().is_empty(),
        "removed with the bound command"
    );
}

/// A preparation that launches nothing itself: it may fail every launch
/// after the launch spec was made, and may say the launch runs as another
/// user.
#[derive(Debug)]
struct Step {
    fail: bool,
    uid: Option<u32>,
}

impl LaunchPreparation for Step {
    fn name(&self) -> &str {
        "test-step"
    }
    fn prepare(&mut self, _: &BoundCommand) -> std::io::Result<()> {
        Ok(())
    }
    fn wrap(&self, _: &mut LaunchSpec) -> std::io::Result<()> {
        if self.fail {
            return Err(std::io::Error::other("refused on purpose"));
        }
        Ok(())
    }
    fn launch_uid(&self) -> Option<u32> {
        self.uid
    }
}

#[test]
fn a_failed_launch_leaves_no_nodes_and_another_uid_gets_the_host_nodes() {
    let _serial = runtime_support::serial();
    let Some((dir, bwrap)) = root_host() else {
        return;
    };
    let parent = DeviceParent::new("failed");
    let plan = TestPolicy::new(&bwrap, dir.path(), "cat").plan();
    let bound = BoundCommand::bind_with(
        plan.clone(),
        in_parent(&parent).with_preparation(Step {
            fail: true,
            uid: None,
        }),
    )
    .expect("bind");
    assert!(bound.private_device_nodes());
    let err = bound
        .spawn_watched(&bootstrap(), Deadlines::none())
        .expect_err("the preparation fails");
    assert!(matches!(err, SpawnError::Preparation { .. }), "{err}");
    assert!(
        parent.directories().is_empty(),
        "nothing left after the failure"
    );

    // Control: a worker that runs as 65534 owns none of the host's nodes, so
    // its launches bind the host's own.
    let bound = BoundCommand::bind_with(
        plan,
        BindOptions::default().with_preparation(Step {
            fail: false,
            uid: Some(65534),
        }),
    )
    .expect("bind");
    assert!(!bound.private_device_nodes());
    let spec = bound.launch_spec().expect("launch spec");
    assert!(spec.device_directory().is_none());
    assert!(
        spec.args()
            .windows(3)
            .any(|w| w == ["--dev-bind", "/dev/null", "/dev/null"]),
        "{:?}",
        spec.args()
    );
}

#[test]
fn bind_refuses_a_device_parent_others_could_change() {
    let _serial = runtime_support::serial();
    let Some((dir, bwrap)) = root_host() else {
        return;
    };
    let plan = TestPolicy::new(&bwrap, dir.path(), "cat").plan();
    let parent = TempDir::new("device-parent");
    let refused = |why: &str| {
        let err = BoundCommand::bind_with(
            plan.clone(),
            BindOptions::default().with_device_directory(parent.path()),
        )
        .expect_err(why);
        assert!(matches!(err, BindError::Devices(_)), "{why}: {err}");
        let text = format!("{}", std::error::Error::source(&err).expect("source"));
        assert!(
            text.contains(&parent.path().display().to_string()),
            "{text}"
        );
    };
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    refused("world-writable without the sticky bit");
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::chown(parent.path(), Some(65534), None).expect("chown");
    refused("not owned by root");
    // Control: the same directory owned by root and writable by root only
    // is accepted; it holds bind's one directory until the bound command
    // goes.
    std::os::unix::fs::chown(parent.path(), Some(0), None).expect("chown");
    let bound = BoundCommand::bind_with(
        plan.clone(),
        BindOptions::default().with_device_directory(parent.path()),
    )
    .expect("a root-owned 0755 parent on this filesystem is accepted");
    assert!(bound.private_device_nodes());
    assert_eq!(std::fs::read_dir(parent.path()).expect("list").count(), 1);
    drop(bound);
    assert_eq!(std::fs::read_dir(parent.path()).expect("list").count(), 0);
}

#[test]
fn bind_refuses_a_plan_without_every_device_bind_after_dev() {
    let _serial = runtime_support::serial();
    let Some(bwrap) = splash_tests::bwrap_path() else {
        splash_tests::require_host(false, "bubblewrap");
        return;
    };
    let dir = TempDir::new("devices-plan");
    std::fs::copy("/usr/bin/cat", dir.path().join("cat")).expect("copy cat");
    let plan = TestPolicy::new(&bwrap, dir.path(), "cat").plan();
    let is_device = |op: &BwrapOp| matches!(op, BwrapOp::DevBind(_));
    let first = plan.ops().iter().position(is_device).expect("device binds");

    let missing = edited(plan.clone(), "ops", |ops: &mut Vec<BwrapOp>| {
        ops.retain(|op| *op != BwrapOp::DevBind(DeviceNode::Null));
    });
    let moved = edited(plan.clone(), "ops", |ops: &mut Vec<BwrapOp>| {
        let op = ops.remove(first);
        ops.push(op);
    });
    let repeated = edited(plan.clone(), "ops", |ops: &mut Vec<BwrapOp>| {
        ops.push(BwrapOp::DevBind(DeviceNode::Tty));
    });
    for (what, bad) in [
        ("missing", missing),
        ("moved", moved),
        ("repeated", repeated),
    ] {
        let err = BoundCommand::bind(bad).expect_err(what);
        assert!(
            matches!(&err, BindError::HardeningPrefix { expected, .. } if expected.starts_with("--dev-bind"))
                || matches!(&err, BindError::Plan(PlanDefect::DeviceOutsidePrefix)),
            "{what}: {err}"
        );
    }
    // Control: the plan as lowered binds.
    BoundCommand::bind(plan).expect("the lowered plan binds");
}

/// The step a killed host stops at ([`killed_host_role`]).
const KILLED_HOST_STEP: &str = "SPLASH_TEST_KILLED_HOST_STEP";
/// The probe directory the killed host launches from.
const KILLED_HOST_PROBE: &str = "SPLASH_TEST_KILLED_HOST_PROBE";
/// The environment variable naming the parent of its device directories.
const KILLED_HOST_DEVICES: &str = "SPLASH_TEST_KILLED_HOST_DEVICES";

/// Not a test of its own: the host that [`a_host_killed_at_any_step_leaves_nothing_after_the_next_bind`]
/// starts as a child process and kills with SIGKILL. It goes as far as the
/// step it is given, says `READY` on stdout, and waits to be killed.
#[test]
#[ignore = "the child role of a_host_killed_at_any_step_leaves_nothing_after_the_next_bind"]
fn killed_host_role() {
    let (Ok(step), Ok(probe_dir), Ok(parent)) = (
        std::env::var(KILLED_HOST_STEP),
        std::env::var(KILLED_HOST_PROBE),
        std::env::var(KILLED_HOST_DEVICES),
    ) else {
        panic!("run only by a_host_killed_at_any_step_leaves_nothing_after_the_next_bind");
    };
    let bwrap = splash_tests::bwrap_path().expect("bwrap");
    let policy = runtime_support::probe_policy_in(&bwrap, Path::new(&probe_dir));
    let bound = BoundCommand::bind_with(
        policy.plan(),
        BindOptions::default().with_device_directory(parent),
    )
    .expect("bind");
    let _held = match step.as_str() {
        "bind" => None,
        "session" => {
            let mut session = splash_runtime::Session::open(
                &bound,
                policy.manifest(),
                splash_runtime::Deadlines::none(),
            )
            .expect("open");
            // Hold the session open with a call in flight.
            session
                .start("probe.path", serde_json::json!({"path": "/"}))
                .expect("start");
            Some(session)
        }
        other => panic!("unknown step {other}"),
    };
    println!("READY");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// A root host killed by SIGKILL after bind (its device directory made) and
/// with a session open (the directory in use by a running sandbox) leaves
/// its directory behind (the control: the kill really did), its sandbox
/// dies with it, and the next bind on the host sweeps the directory, whose
/// lock no living process holds. A directory whose owner lives is never
/// swept (the next bind's own one, checked while it is held).
#[test]
fn a_host_killed_at_any_step_leaves_nothing_after_the_next_bind() {
    use std::io::BufRead;

    let _serial = runtime_support::serial();
    let Some((_cat, _)) = root_host() else {
        return;
    };
    let Some((bwrap, probe_dir)) = runtime_support::host_with_probe() else {
        return;
    };
    let probe = probe_dir.path().join("splash-probe");
    let parent = DeviceParent::new("killed");
    let bind_here = || {
        BoundCommand::bind_with(
            runtime_support::probe_policy_in(&bwrap, probe_dir.path()).plan(),
            in_parent(&parent),
        )
    };
    for step in ["bind", "session"] {
        let mut host = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "killed_host_role",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(KILLED_HOST_STEP, step)
            .env(KILLED_HOST_PROBE, probe_dir.path())
            .env(KILLED_HOST_DEVICES, parent.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("host");
        let stdout = host.stdout.take().expect("stdout");
        let ready = std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|line| line.ends_with("READY"));
        assert!(ready, "the host did not reach step {step}");
        host.kill().expect("SIGKILL");
        host.wait().expect("reap");

        let left = parent.directories();
        assert_eq!(
            left.len(),
            1,
            "{step}: the killed host's directory: {left:?}"
        );
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !runtime_support::processes_running(&probe).is_empty() {
            assert!(
                std::time::Instant::now() < until,
                "{step}: the sandbox outlived its host"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }

        let next = bind_here().expect("the next bind");
        assert!(!left[0].exists(), "{step}: swept by the next bind");
        let own = parent.directories();
        assert_eq!(own.len(), 1, "{step}: only the next bind's own: {own:?}");
        // A live owner's directory survives a sweep.
        let again = bind_here().expect("a third bind");
        assert!(own[0].exists(), "{step}: a held directory is never swept");
        drop(again);
        drop(next);
        assert!(parent.directories().is_empty(), "{step}");
    }
}
