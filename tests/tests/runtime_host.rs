//! The host library against real workers under real bwrap: the one-call
//! launch, the watchdog (session and call deadlines, a trusted stop from
//! another thread), cooperative cancellation, every refusal of bind and
//! activation with a control that passes, and post-stop reconciliation of
//! durable operations from the probe's operation journal.
//!
//! Times are asserted with generous margins only.

mod runtime_support;

use std::path::Path;
use std::time::{Duration, Instant};

use runtime_support::{
    TestPolicy, edited, host_with_probe, live_children, open_fds, probe_policy, processes_running,
    running_as_root, serial, with_foreign_program,
};
use serde_json::{Value, json};
use splash_protocol::{CapabilityManifest, SessionState, Token};
use splash_runtime::{
    BindError, BindOptions, BoundCommand, CallError, Deadlines, Event, Indeterminate, LaunchError,
    LaunchOptions, LoadedPolicy, Session, StopReason,
};
use splashpol::plan::{Arch, BwrapOp, ExecArg, LaunchPlan};

/// The probe tools these tests call.
const TOOLS: &[&str] = &["probe.echo", "probe.sleep", "probe.spin", "probe.exec"];

fn manifest(session: &str) -> CapabilityManifest {
    runtime_support::manifest_granting(session, TOOLS)
}

fn loaded(policy: &TestPolicy) -> LoadedPolicy {
    LoadedPolicy::from_bytes("test.splashpol", policy.render().into_bytes()).expect("load")
}

fn launch(policy: &TestPolicy, deadlines: Deadlines) -> Session {
    loaded(policy)
        .launch(
            manifest("h-1"),
            LaunchOptions::default().with_deadlines(deadlines),
        )
        .expect("launch")
}

fn assert_gone(pid: u32, probe: &Path) {
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "bubblewrap {pid} is still there"
    );
    assert!(live_children().is_empty(), "{:?}", live_children());
    assert!(
        processes_running(probe).is_empty(),
        "probe processes left: {:?}",
        processes_running(probe)
    );
}

fn indeterminate(e: &CallError) -> Option<StopReason> {
    match e {
        CallError::Indeterminate {
            reason: Indeterminate::ForceStopped(why),
            ..
        } => Some(*why),
        _ => None,
    }
}

#[test]
fn one_call_launch_calls_a_tool_and_closes_cleanly() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let mut session = launch(&policy, Deadlines::session(Duration::from_secs(60)));
    let out = session
        .call("probe.echo", json!({"input": {"n": 7}}))
        .expect("echo");
    assert_eq!(out, json!({"input": {"n": 7}}));
    let pid = session.pid();
    let status = session.close(Duration::from_secs(5)).expect("close");
    assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));
    assert_gone(pid, &probe_dir.path().join("splash-probe"));
}

/// The state letter of process `pid` (`Z` for a zombie), if it exists.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// `close` in two steps: after `send_close` the worker exits by itself
/// while the host still holds the session (Bubblewrap becomes a zombie no
/// one has reaped yet), and `wait` reaps it with its status. Control: a
/// session that was not sent `close_session` keeps its worker running.
#[test]
fn send_close_lets_the_worker_exit_while_the_host_works_and_wait_reaps_it() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let probe = probe_dir.path().join("splash-probe");

    let mut open = launch(&policy, Deadlines::none());
    open.call("probe.echo", json!({"input": 1})).expect("echo");
    let open_pid = open.pid();
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(
        process_state(open_pid),
        Some('Z'),
        "control: a worker not sent close_session keeps running"
    );

    let mut session = launch(&policy, Deadlines::none());
    session
        .call("probe.echo", json!({"input": 2}))
        .expect("echo");
    let pid = session.pid();
    let closing = session.send_close().expect("send close");
    let until = Instant::now() + Duration::from_secs(10);
    while process_state(pid) != Some('Z') {
        assert!(
            Instant::now() < until,
            "bubblewrap {pid} did not exit after close_session: {:?}",
            process_state(pid)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = closing.wait(Duration::from_secs(5)).expect("wait");
    assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));
    assert!(process_state(pid).is_none(), "reaped by wait");

    open.close(Duration::from_secs(5))
        .expect("close the control");
    assert_gone(pid, &probe);
    assert_gone(open_pid, &probe);
}

/// A `ClosingSession` dropped without `wait` leaves nothing behind; and
/// `send_close` with a call in flight stops the worker and reports the
/// call's outcome as indeterminate, as `close` does.
#[test]
fn a_dropped_closing_session_and_a_refused_send_close_leave_nothing_behind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let probe = probe_dir.path().join("splash-probe");

    let mut session = launch(&policy, Deadlines::none());
    session
        .call("probe.echo", json!({"input": 1}))
        .expect("echo");
    let pid = session.pid();
    drop(session.send_close().expect("send close"));
    assert_gone(pid, &probe);

    let mut session = launch(&policy, Deadlines::none());
    session
        .start("probe.sleep", json!({"ms": 30_000}))
        .expect("start");
    let pid = session.pid();
    match session.send_close() {
        Err(CallError::Indeterminate {
            reason: Indeterminate::Transport(splash_protocol::SessionError::Abandoned(_)),
            ..
        }) => {}
        other => panic!("a call in flight is abandoned: {other:?}"),
    }
    assert_gone(pid, &probe);
}

/// A root launch's private device nodes go at `send_close` once the worker
/// has answered (a running worker proves Bubblewrap made the nodes' binds),
/// before the exit is waited for. Control: a session whose worker never
/// answered keeps them until the worker is reaped.
#[test]
fn private_device_nodes_go_at_send_close_once_the_worker_has_answered() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    // Private nodes are made for a worker that runs as host root.
    if !splash_tests::require_host(
        running_as_root(),
        "host root (private device nodes are made by root)",
    ) {
        return;
    }
    let policy = probe_policy(&bwrap, &probe_dir);
    // This test's own parent: launches of tests beside it do not count.
    let parent = runtime_support::DeviceParent::new("host");
    let launch_here = || {
        loaded(&policy)
            .launch(
                manifest("h-1"),
                LaunchOptions::default()
                    .with_bind(BindOptions::default().with_device_directory(parent.path())),
            )
            .expect("launch")
    };

    let mut session = launch_here();
    session
        .call("probe.echo", json!({"input": 1}))
        .expect("echo");
    let made = parent.directories();
    assert_eq!(made.len(), 1, "the launch's directory: {made:?}");
    let closing = session.send_close().expect("send close");
    assert_eq!(
        parent.directories(),
        Vec::<std::path::PathBuf>::new(),
        "removed at send_close"
    );
    let status = closing.wait(Duration::from_secs(5)).expect("wait");
    assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));

    let session = launch_here();
    let made = parent.directories();
    assert_eq!(made.len(), 1, "the launch's directory: {made:?}");
    let closing = session.send_close().expect("send close");
    assert_eq!(
        parent.directories(),
        made,
        "kept: the worker never answered"
    );
    let status = closing.wait(Duration::from_secs(5)).expect("wait");
    assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));
    assert!(parent.directories().is_empty(), "removed once reaped");
}

#[test]
fn session_deadline_stops_and_reaps_a_sleeping_worker() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let fds = open_fds();
    let started = Instant::now();
    let mut session = launch(&policy, Deadlines::session(Duration::from_secs(1)));
    let pid = session.pid();
    let err = session
        .call("probe.sleep", json!({"ms": 30_000}))
        .expect_err("the deadline ends the call");
    let elapsed = started.elapsed();
    assert_eq!(
        indeterminate(&err),
        Some(StopReason::SessionDeadline),
        "{err}"
    );
    assert_eq!(err.leaves_session(), SessionState::Poisoned);
    eprintln!("session deadline 1 s: caller unblocked after {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_gone(pid, &probe_dir.path().join("splash-probe"));
    assert!(matches!(
        session.call("probe.echo", json!({})),
        Err(CallError::Poisoned)
    ));
    drop(session);
    assert_eq!(open_fds(), fds, "a descriptor was left open");
}

#[test]
fn policy_watchdog_block_is_enforced() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.extra.push("watchdog session 1 s".into());
    let started = Instant::now();
    let mut session = launch(&policy, Deadlines::none());
    let err = session
        .call("probe.sleep", json!({"ms": 30_000}))
        .expect_err("the policy deadline ends the call");
    assert_eq!(
        indeterminate(&err),
        Some(StopReason::SessionDeadline),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn call_deadline_poisons_and_a_racing_result_is_still_indeterminate() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let probe = probe_dir.path().join("splash-probe");

    // A call past its deadline.
    let mut session = launch(
        &policy,
        Deadlines::none().with_call(Duration::from_millis(500)),
    );
    let pid = session.pid();
    let started = Instant::now();
    let err = session
        .call("probe.sleep", json!({"ms": 30_000}))
        .expect_err("call deadline");
    assert_eq!(indeterminate(&err), Some(StopReason::CallDeadline), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_gone(pid, &probe);

    // The result is in the pipe before the deadline, but is read after the
    // watchdog won: still indeterminate.
    let mut session = launch(
        &policy,
        Deadlines::none().with_call(Duration::from_millis(300)),
    );
    session
        .start("probe.sleep", json!({"ms": 0}))
        .expect("start");
    std::thread::sleep(Duration::from_millis(1500));
    let err = session.next_event().expect_err("termination won");
    assert_eq!(indeterminate(&err), Some(StopReason::CallDeadline), "{err}");
    assert!(matches!(session.next_event(), Err(CallError::Poisoned)));

    // The same for a cancel acknowledgement that is in the pipe when the
    // deadline wins: not accepted.
    let mut session = launch(
        &policy,
        Deadlines::none().with_call(Duration::from_millis(300)),
    );
    let id = session
        .start("probe.sleep", json!({"ms": 30_000}))
        .expect("start");
    session.cancel(&id).expect("cancel");
    std::thread::sleep(Duration::from_millis(1500));
    let err = session.next_event().expect_err("termination won");
    assert_eq!(indeterminate(&err), Some(StopReason::CallDeadline), "{err}");
}

#[test]
fn stop_from_another_thread_unblocks_a_blocked_reader() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let mut session = launch(&policy, Deadlines::none());
    let pid = session.pid();
    let stop = session.stop_handle();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        let status = stop.stop().expect("session alive").expect("reaped");
        (at, status)
    });
    let err = session
        .call("probe.spin", json!({"seconds": 60}))
        .expect_err("stopped");
    let returned = Instant::now();
    let (stopped_at, status) = stopper.join().expect("stopper");
    assert_eq!(indeterminate(&err), Some(StopReason::Stopped), "{err}");
    assert_eq!(status, splash_runtime::WorkerStatus::Killed(9));
    let unblocked = returned.saturating_duration_since(stopped_at);
    eprintln!("stop(): blocked caller unblocked {unblocked:?} after the stop began");
    assert!(unblocked < Duration::from_secs(5), "{unblocked:?}");
    assert_gone(pid, &probe_dir.path().join("splash-probe"));
}

#[test]
fn cooperative_cancellation_acknowledged_too_late_unsupported() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let mut session = launch(&policy, Deadlines::session(Duration::from_secs(60)));

    // Acknowledged: the cancellable sleep stops, no result follows, and the
    // session stays usable.
    let id = session
        .start("probe.sleep", json!({"ms": 30_000}))
        .expect("start");
    assert_eq!(
        session
            .wait_event(Duration::from_millis(200))
            .expect("wait"),
        None
    );
    session.cancel(&id).expect("cancel");
    assert_eq!(
        session.next_event().expect("answer"),
        Event::Cancelled {
            request_id: id.clone()
        }
    );

    // Too late: the result was written before the cancel arrived; it is
    // reported first, then `too_late`.
    let id = session
        .start("probe.echo", json!({"input": 1}))
        .expect("start");
    std::thread::sleep(Duration::from_millis(200));
    session.cancel(&id).expect("cancel");
    assert_eq!(
        session.next_event().expect("result"),
        Event::Finished {
            request_id: id.clone(),
            output: json!({"input": 1})
        }
    );
    assert_eq!(
        session.next_event().expect("too late"),
        Event::TooLate {
            request_id: id.clone()
        }
    );

    // Unsupported: a tool that cannot be cancelled keeps running and its
    // result still follows.
    let id = session
        .start("probe.exec", json!({"argv": ["/bin/sleep", "1"]}))
        .expect("start");
    std::thread::sleep(Duration::from_millis(100));
    session.cancel(&id).expect("cancel");
    assert_eq!(
        session.next_event().expect("unsupported"),
        Event::Unsupported {
            request_id: id.clone()
        }
    );
    match session.next_event().expect("result") {
        Event::Finished { request_id, .. } => assert_eq!(request_id, id),
        other => panic!("expected the result, got {other:?}"),
    }
    assert_eq!(
        session
            .call("probe.echo", json!({"input": 2}))
            .expect("usable"),
        json!({"input": 2})
    );
    session.close(Duration::from_secs(5)).expect("close");
}

// ---- refusals, each with a control ----

fn plan(policy: &TestPolicy, arch: Arch) -> LaunchPlan {
    let loaded = loaded(policy);
    let m = manifest("h-1");
    let activation = splashpol::activate::activate(&loaded.policy, Some(&m)).expect("activate");
    splashpol::lower::lower(&loaded.policy, &activation, arch, &loaded.source_digest)
        .expect("lower")
}

#[test]
fn bind_refuses_a_plan_for_another_architecture() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.seccomp = Some("deny-known-escape-surface".into());
    let host = Arch::host().expect("host arch");
    BoundCommand::bind(plan(&policy, host)).expect("control: this host's plan binds");
    let other = Arch::ALL
        .into_iter()
        .find(|a| *a != host)
        .expect("another arch");
    let err = BoundCommand::bind(plan(&policy, other)).expect_err("foreign plan");
    assert!(matches!(err, BindError::ForeignArch { .. }), "{err}");

    // Only the seccomp program is foreign: the plan says this host.
    let mixed = with_foreign_program(plan(&policy, host), &plan(&policy, other), host);
    let err = BoundCommand::bind(mixed).expect_err("foreign program");
    assert!(
        err.to_string()
            .contains("allows no system call of this host"),
        "{err}"
    );
}

#[test]
fn bind_refuses_a_plan_without_the_hardening_prefix() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let host = Arch::host().expect("host arch");
    for drop_op in [
        BwrapOp::UnshareAll,
        BwrapOp::CapDropAll,
        BwrapOp::ClearEnv,
        BwrapOp::NewSession,
        BwrapOp::DieWithParent,
        BwrapOp::AsPid1,
    ] {
        let p = edited(plan(&policy, host), "ops", |ops: &mut Vec<BwrapOp>| {
            ops.retain(|op| *op != drop_op);
        });
        let err = BoundCommand::bind(p).expect_err("no prefix");
        assert!(
            matches!(err, BindError::HardeningPrefix { .. }),
            "{drop_op:?}: {err}"
        );
    }
    // The read-only /proc right after `--proc /proc`.
    let p = edited(plan(&policy, host), "ops", |ops: &mut Vec<BwrapOp>| {
        let at = ops
            .iter()
            .position(|op| matches!(op, BwrapOp::RemountRo(_)))
            .expect("remount /proc");
        ops.remove(at);
    });
    let err = BoundCommand::bind(p).expect_err("writable /proc");
    assert!(err.to_string().contains("--remount-ro /proc"), "{err}");
}

#[test]
fn bind_checks_every_program_of_the_exec_chain() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let host = Arch::host().expect("host arch");
    // A hand-built runner segment whose next program does not exist.
    let worker = plan(&policy, host).command().to_vec();
    // The worker as a runner segment, then `next`.
    let chained = |next: Vec<ExecArg>| {
        edited(
            plan(&policy, host),
            "command",
            |command: &mut Vec<ExecArg>| {
                *command = vec![
                    ExecArg::Literal(policy.worker()),
                    ExecArg::Literal("--".into()),
                ];
                command.extend(next);
            },
        )
    };
    let p = chained(vec![ExecArg::Literal("/opt/worker/missing-program".into())]);
    let err = BoundCommand::bind(p).expect_err("second program missing");
    assert!(err.to_string().contains("missing-program"), "{err}");
    // Control: the same chain ending in the worker binds.
    let p = chained(worker);
    BoundCommand::bind(p).expect("every program exists");
}

/// A Landlock `allow-exec` target is checked at bind like every program of
/// the exec chain, in path mode as in executable-pinned mode: a missing
/// target, a directory, a file without an execute bit and a symbolic link
/// are each refused before anything runs, by an error naming the target
/// (not the worker, and not the runner's setup failure at launch). Control:
/// the same policy with an executable file there binds and launches.
#[test]
fn bind_checks_every_landlock_allow_exec_target() {
    use splash_runtime::{ExecDefect, ExecRole};
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let runner = runtime_support::bin_dir().join("splash-landlock-runner");
    if !splash_tests::require_host(
        runner.is_file(),
        "the splash-landlock-runner binary (run `cargo build --workspace --bins` first)",
    ) {
        return;
    }
    let dir = probe_dir.path();
    std::fs::copy(&runner, dir.join("splash-landlock-runner")).expect("copy runner");
    let target = dir.join("tool");
    let sandbox_target = format!("{}/tool", runtime_support::WORKER_DIR);
    let remove = || {
        let _ = std::fs::remove_file(&target);
        let _ = std::fs::remove_dir(&target);
    };
    let executable = |mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::copy(dir.join("splash-probe"), &target).expect("copy tool");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    type Setup<'a> = Box<dyn Fn() + 'a>;
    let cases: [(&str, Setup, ExecDefect); 4] = [
        ("missing", Box::new(|| {}), ExecDefect::Unresolved),
        (
            "directory",
            Box::new(|| std::fs::create_dir(&target).expect("mkdir")),
            ExecDefect::WrongType {
                found: "a directory",
            },
        ),
        (
            "not executable",
            Box::new(|| executable(0o644)),
            ExecDefect::WrongType {
                found: "a regular file",
            },
        ),
        (
            "symbolic link",
            Box::new(|| {
                std::os::unix::fs::symlink("splash-probe", &target).expect("symlink");
            }),
            ExecDefect::SymbolicLink,
        ),
    ];
    for binding in [
        runtime_support::Binding::Paths,
        runtime_support::Binding::PinnedMountsAndExecutables,
    ] {
        let mut policy = probe_policy(&bwrap, &probe_dir);
        policy.binding = binding;
        policy.extra.push(format!(
            "landlock runner \"{}/splash-landlock-runner\" {{\n    allow-exec \"{sandbox_target}\"\n  }}",
            runtime_support::WORKER_DIR
        ));
        let loaded = loaded(&policy);
        for (name, setup, defect) in &cases {
            remove();
            setup();
            let err = loaded
                .launch(manifest("h-1"), LaunchOptions::default())
                .expect_err(name);
            assert!(err.is_refusal(), "{binding:?} {name}: {err}");
            let LaunchError::Bind(bind) = &err else {
                panic!("{binding:?} {name}: not a bind error: {err}");
            };
            match bind {
                BindError::Executable {
                    role: ExecRole::AllowedTarget,
                    program,
                    host,
                    defect: found,
                    ..
                } => {
                    assert_eq!(program.as_str(), sandbox_target, "{binding:?} {name}");
                    assert_eq!(host, &target, "{binding:?} {name}");
                    assert_eq!(found, defect, "{binding:?} {name}: {bind}");
                }
                other => panic!("{binding:?} {name}: {other}"),
            }
            let text = bind.to_string();
            assert!(
                text.starts_with(&format!("Landlock `allow-exec` target `{sandbox_target}`")),
                "{binding:?} {name}: {text}"
            );
            assert!(live_children().is_empty(), "{:?}", live_children());
        }
        // Control: the same policy with an executable file at the target.
        remove();
        executable(0o755);
        let mut session = loaded
            .launch(manifest("h-1"), LaunchOptions::default())
            .unwrap_or_else(|e| panic!("{binding:?}: control launch: {e}"));
        let out = session
            .call("probe.echo", json!({"input": "allowed"}))
            .expect("echo");
        assert_eq!(out, json!({"input": "allowed"}));
        let status = session.close(Duration::from_secs(5)).expect("close");
        assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));
    }
    remove();
}

#[test]
fn invalid_manifests_are_refused_before_launch() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let loaded = loaded(&policy);
    loaded
        .plan(&manifest("h-1"))
        .expect("control: a valid manifest");
    let mut version = manifest("h-1");
    version.protocol_version = 4;
    let mut duplicate = manifest("h-1");
    duplicate.grants.push(duplicate.grants[0].clone());
    let mut zero = manifest("h-1");
    zero.grants[0].max_calls = 0;
    for m in [version, duplicate, zero] {
        let err = loaded
            .launch(m.clone(), LaunchOptions::default())
            .expect_err("refused");
        assert!(matches!(err, LaunchError::Manifest(_)), "{m:?}: {err}");
        assert!(err.is_refusal());
        // Activation alone refuses it too.
        assert!(splashpol::activate::activate(&loaded.policy, Some(&m)).is_err());
    }
    assert!(live_children().is_empty());
}

#[test]
fn a_call_error_names_the_worker_status_after_a_good_open() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let mut session = launch(&policy, Deadlines::none());
    // A refused call does not poison.
    let err = session
        .call("probe.report", json!({}))
        .expect_err("not granted");
    assert!(matches!(err, CallError::Refused(_)), "{err}");
    assert_eq!(err.leaves_session(), SessionState::Usable);
    let v: Value = session
        .call("probe.echo", json!({"input": "ok"}))
        .expect("still usable");
    assert_eq!(v, json!({"input": "ok"}));
    session.close(Duration::from_secs(5)).expect("close");
}

#[test]
fn reconciliation_needs_a_reaped_worker_a_fresh_session_and_one_grant() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let probe = probe_dir.path().join("splash-probe");
    let loaded = loaded(&policy);

    // A call past its deadline: indeterminate, then the proof of reaping.
    let mut session = launch(
        &policy,
        Deadlines::none().with_call(Duration::from_millis(300)),
    );
    let err = session
        .call("probe.sleep", json!({"ms": 30_000}))
        .expect_err("deadline");
    assert_eq!(err.leaves_session(), SessionState::Poisoned);
    let old = session.into_reaped(Duration::from_secs(1)).expect("reaped");
    assert_eq!(old.session_id().as_str(), "h-1");
    assert_eq!(old.status(), splash_runtime::WorkerStatus::Killed(9));

    let op = Token::new("op-1").expect("op id");
    let one_grant = |session: &str| {
        let mut m = manifest(session);
        m.grants.retain(|g| g.tool.as_str() == "probe.sleep");
        m
    };
    // The old session id is refused.
    let err = loaded
        .reconcile(
            &old,
            one_grant("h-1"),
            "probe.sleep",
            &op,
            LaunchOptions::default(),
        )
        .expect_err("reused id");
    assert!(
        matches!(err, splash_runtime::ReconcileError::SessionReused(_)),
        "{err}"
    );
    // A broad manifest is refused, and so is one for another tool.
    for (m, tool) in [
        (manifest("h-2"), "probe.sleep"),
        (one_grant("h-2"), "probe.echo"),
    ] {
        let err = loaded
            .reconcile(&old, m, tool, &op, LaunchOptions::default())
            .expect_err("scope");
        assert!(
            matches!(err, splash_runtime::ReconcileError::ManifestScope { .. }),
            "{err}"
        );
    }
    assert!(live_children().is_empty());
    // A fresh id and exactly one grant: one exchange is sent. This probe
    // was given no operation journal, so (as in Splash) it ends the session
    // on the request; the outcome is reported as indeterminate and only
    // after the worker was reaped. (With a journal it answers: see
    // `durable_operations_are_reconciled_from_the_journal`.)
    let err = loaded
        .reconcile(
            &old,
            one_grant("h-2"),
            "probe.sleep",
            &op,
            LaunchOptions::default().with_deadlines(Deadlines::session(Duration::from_secs(30))),
        )
        .expect_err("the probe serves no durable operations");
    match &err {
        splash_runtime::ReconcileError::Call(splash_runtime::CallError::Indeterminate {
            reason: splash_runtime::Indeterminate::Transport(why),
            status,
        }) => {
            assert!(
                matches!(why, splash_protocol::SessionError::WorkerEnded { kind, .. } if *kind == "reconcile_operation"),
                "{why}"
            );
            assert_ne!(*status, splash_runtime::WorkerStatus::Running, "{err}");
        }
        other => panic!("expected the worker to end the session: {other:?}"),
    }
    assert!(live_children().is_empty());
    assert!(processes_running(&probe).is_empty());
}

/// Where the probe's operation journal is inside the sandbox.
const JOURNAL_AT: &str = "/journal";

/// Runs Bubblewrap and the worker as host uid 65534 (through `setpriv`;
/// the test policies run Bubblewrap by path, so no pinned descriptor is
/// involved).
#[derive(Debug)]
struct AsNobody;

impl splash_runtime::LaunchPreparation for AsNobody {
    fn name(&self) -> &str {
        "setpriv"
    }
    fn prepare(&mut self, _: &BoundCommand) -> std::io::Result<()> {
        Ok(())
    }
    fn launch_uid(&self) -> Option<u32> {
        Some(NOBODY)
    }
    fn wrap(&self, spec: &mut splash_runtime::LaunchSpec) -> std::io::Result<()> {
        spec.wrap(
            SETPRIV.into(),
            vec![
                format!("--reuid={NOBODY}"),
                format!("--regid={NOBODY}"),
                "--clear-groups".into(),
                "--".into(),
            ],
            Vec::new(),
        );
        Ok(())
    }
}

const NOBODY: u32 = 65534;
const SETPRIV: &str = "/usr/bin/setpriv";

/// Launch options for a worker that runs as `uid` (0 or [`NOBODY`]).
fn options_as(uid: u32, deadlines: Deadlines) -> LaunchOptions {
    let options = LaunchOptions::default().with_deadlines(deadlines);
    if uid == 0 {
        options
    } else {
        options.with_bind(splash_runtime::BindOptions::default().with_preparation(AsNobody))
    }
}

/// The probe with a read-write root `journal` at [`JOURNAL_AT`]; with
/// `journal`, the probe keeps its operation journal there.
fn journal_policy(
    bwrap: &Path,
    probe_dir: &runtime_support::TempDir,
    area: &Path,
    journal: bool,
) -> TestPolicy {
    let mut policy = probe_policy(bwrap, probe_dir);
    policy.host_root("journal", area, JOURNAL_AT, true);
    // A few hundred bytes of journal; quotas are tested elsewhere.
    policy.unbounded_host_writes = true;
    if journal {
        policy.worker_args = vec!["--journal".into(), JOURNAL_AT.into()];
    }
    policy
}

/// A manifest of session `session` granting `tools`, each selecting the
/// journal root.
fn durable_manifest(session: &str, tools: &[&str]) -> CapabilityManifest {
    let mut m = manifest(session);
    m.grants.retain(|g| tools.contains(&g.tool.as_str()));
    for g in &mut m.grants {
        g.resources.insert(splash_protocol::Resource::new(
            splash_protocol::ResourceKind::FileRoot,
            Token::new("journal").expect("root id"),
        ));
    }
    m
}

/// The worker ended the session on a request of `kind`: indeterminate, and
/// the worker was stopped.
fn worker_ended(err: &CallError, kind: &str) -> bool {
    matches!(
        err,
        CallError::Indeterminate {
            reason: Indeterminate::Transport(splash_protocol::SessionError::WorkerEnded { kind: k, .. }),
            status,
        } if *k == kind && *status != splash_runtime::WorkerStatus::Running
    )
}

fn reconcile_ended(err: &splash_runtime::ReconcileError) -> bool {
    matches!(err, splash_runtime::ReconcileError::Call(e) if worker_ended(e, "reconcile_operation"))
}

/// The whole recovery path with a real worker under real bwrap, run by
/// `uid`: a durable call killed by its deadline reconciles as `running`
/// (started, no recorded outcome), a completed one as `succeeded` with the
/// very status the worker sent, and an operation never dispatched ends the
/// session; the control without a journal ends the session every time.
fn reconcile_from_the_journal(uid: u32) {
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let probe = probe_dir.path().join("splash-probe");
    let area = runtime_support::NosuidArea::new("journal");
    if uid != 0 {
        std::os::unix::fs::chown(area.path(), Some(uid), Some(uid)).expect("chown journal area");
    }
    let loaded = loaded(&journal_policy(&bwrap, &probe_dir, area.path(), true));
    let both = ["probe.sleep", "probe.echo"];
    let long = || Deadlines::session(Duration::from_secs(60));
    // One reconciliation in session `id` with one grant, for `tool`.
    let reconcile =
        |policy: &LoadedPolicy, old: &splash_runtime::Reaped, id: &str, tool: &str, op: &Token| {
            policy.reconcile(
                old,
                durable_manifest(id, &[tool]),
                tool,
                op,
                options_as(uid, long()),
            )
        };

    // (a) A durable call killed by its call deadline.
    let mut session = loaded
        .launch(
            durable_manifest("d-1", &both),
            options_as(uid, long().with_call(Duration::from_millis(800))),
        )
        .expect("launch");
    let op_a = Token::new("op-a").expect("op");
    let err = session
        .dispatch("probe.sleep", &op_a, json!({"ms": 30_000}))
        .expect_err("call deadline");
    assert_eq!(indeterminate(&err), Some(StopReason::CallDeadline), "{err}");
    let old = session.into_reaped(Duration::from_secs(1)).expect("reaped");
    assert_eq!(old.status(), splash_runtime::WorkerStatus::Killed(9));
    // The refusals still come first.
    let err = reconcile(&loaded, &old, "d-1", "probe.sleep", &op_a).expect_err("reused id");
    assert!(
        matches!(err, splash_runtime::ReconcileError::SessionReused(_)),
        "{err}"
    );
    let err = loaded
        .reconcile(
            &old,
            durable_manifest("d-2", &both),
            "probe.sleep",
            &op_a,
            options_as(uid, long()),
        )
        .expect_err("two grants");
    assert!(
        matches!(err, splash_runtime::ReconcileError::ManifestScope { .. }),
        "{err}"
    );
    // A fresh worker reads the journal: started, no outcome.
    let rec = reconcile(&loaded, &old, "d-2", "probe.sleep", &op_a).expect("reconciled");
    assert_eq!(rec.state, splash_protocol::OperationStatus::Running);
    assert_eq!(rec.reaped.status(), splash_runtime::WorkerStatus::Exited(0));
    assert!(live_children().is_empty(), "{:?}", live_children());
    assert!(processes_running(&probe).is_empty());

    // (b) A durable call that completed; its answer is then lost with the
    // session (the host closes without keeping it).
    let mut session = loaded
        .launch(durable_manifest("d-3", &both), options_as(uid, long()))
        .expect("launch");
    let op_b = Token::new("op-b").expect("op");
    let sent = session
        .dispatch("probe.sleep", &op_b, json!({"ms": 20}))
        .expect("dispatch");
    let splash_protocol::OperationStatus::Succeeded { payload } = &sent else {
        panic!("{sent:?}");
    };
    assert_eq!(payload.clone().into_value()["ms"], 20);
    let old = session.into_reaped(Duration::from_secs(5)).expect("reaped");
    assert_eq!(old.status(), splash_runtime::WorkerStatus::Exited(0));
    let rec = reconcile(&loaded, &old, "d-4", "probe.sleep", &op_b).expect("reconciled");
    // The recorded status, byte for byte (its `elapsed_ms` too: the tool
    // did not run again).
    assert_eq!(rec.state, sent);

    // (c) An operation never dispatched: the protocol has no state for it,
    // so the worker ends the session (as in Splash); indeterminate.
    let op_c = Token::new("op-never").expect("op");
    let err = reconcile(&loaded, &old, "d-5", "probe.sleep", &op_c).expect_err("unknown operation");
    assert!(reconcile_ended(&err), "{err:?}");
    // A known operation under another tool is no record either.
    let err = reconcile(&loaded, &old, "d-6", "probe.echo", &op_b).expect_err("other tool");
    assert!(reconcile_ended(&err), "{err:?}");

    // The journal is the worker's file in the root it was given.
    let journal = std::fs::read_to_string(area.path().join(splash_protocol::JOURNAL_FILE))
        .expect("journal on the host");
    assert_eq!(journal.lines().count(), 3, "{journal}");
    let owner = std::os::unix::fs::MetadataExt::uid(
        &std::fs::metadata(area.path().join(splash_protocol::JOURNAL_FILE)).expect("meta"),
    );
    if uid == 0 {
        assert_eq!(owner, 0);
    } else {
        // Written by the worker's user (seen on the host as its uid).
        assert_eq!(owner, uid);
    }

    // Control: the same policy and root without `--journal`. The journal
    // is still there, but this worker keeps none and ends the session on
    // every durable request.
    let plain = loaded_plain(&bwrap, &probe_dir, area.path());
    let mut session = plain
        .launch(durable_manifest("d-7", &both), options_as(uid, long()))
        .expect("launch");
    let err = session
        .dispatch(
            "probe.echo",
            &Token::new("op-d").expect("op"),
            json!({"input": 1}),
        )
        .expect_err("no journal");
    assert!(worker_ended(&err, "dispatch_operation"), "{err:?}");
    let old = session.into_reaped(Duration::from_secs(1)).expect("reaped");
    let err = reconcile(&plain, &old, "d-8", "probe.sleep", &op_b).expect_err("no journal");
    assert!(reconcile_ended(&err), "{err:?}");
    assert!(live_children().is_empty(), "{:?}", live_children());
    assert!(processes_running(&probe).is_empty());
}

fn loaded_plain(bwrap: &Path, probe_dir: &runtime_support::TempDir, area: &Path) -> LoadedPolicy {
    loaded(&journal_policy(bwrap, probe_dir, area, false))
}

#[test]
fn durable_operations_are_reconciled_from_the_journal() {
    let _serial = serial();
    reconcile_from_the_journal(0);
}

#[test]
fn durable_operations_are_reconciled_from_the_journal_as_uid_65534() {
    let _serial = serial();
    if !splash_tests::require_host(
        Path::new(SETPRIV).is_file() && runtime_support::running_as_root(),
        "setpriv and host root (the worker runs as uid 65534)",
    ) {
        return;
    }
    reconcile_from_the_journal(NOBODY);
}

/// The probe as a hostile worker: `--orphan` clears the parent-death signal
/// Bubblewrap gave it; with `linger` it also ignores `close_session`.
fn orphan_policy(bwrap: &Path, probe_dir: &runtime_support::TempDir, linger: bool) -> TestPolicy {
    let mut policy = probe_policy(bwrap, probe_dir);
    policy.worker_args.push("--orphan".into());
    if linger {
        policy.worker_args.push("--linger".into());
    }
    policy
}

/// Control: a worker that cleared its parent-death signal outlives a
/// SIGKILL of Bubblewrap alone (what a stop did before it held the
/// sandbox's pid 1), while the same worker without `--orphan` dies with it.
/// Returns whether the orphan survived; the survivor is killed afterwards.
fn orphan_survives_a_bubblewrap_only_kill(bwrap: &Path, probe: &Path, orphan: bool) -> bool {
    let mut command = std::process::Command::new(bwrap);
    command.args([
        "--unshare-all",
        "--die-with-parent",
        "--as-pid-1",
        "--ro-bind",
        "/",
        "/",
    ]);
    command.arg(probe);
    if orphan {
        command.arg("--orphan");
    }
    // The probe waits for its bootstrap on this pipe, which stays open.
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("raw bwrap");
    // `wait` would close it: keep it open until the end.
    let stdin = child.stdin.take();
    let until = Instant::now() + Duration::from_secs(5);
    while processes_running(probe).is_empty() {
        assert!(Instant::now() < until, "the control's probe never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Give it time to clear the signal before Bubblewrap dies.
    std::thread::sleep(Duration::from_millis(200));
    child.kill().expect("kill bwrap");
    child.wait().expect("reap bwrap");
    std::thread::sleep(Duration::from_millis(500));
    let survivors = processes_running(probe);
    for pid in &survivors {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let until = Instant::now() + Duration::from_secs(5);
    while !processes_running(probe).is_empty() {
        assert!(Instant::now() < until, "the control's survivor did not die");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(stdin);
    !survivors.is_empty()
}

/// A worker that clears its parent-death signal and then stays silent, or
/// ignores `close_session`, is gone when each kind of stop returns: the
/// session deadline, the call deadline, a `StopHandle` from another thread,
/// `close` past its grace period, and dropping the session. Run as root and,
/// through `setpriv`, as uid 65534 (Bubblewrap then makes a user namespace).
fn a_worker_without_a_parent_death_signal_dies_with_every_stop(uid: u32) {
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let probe = probe_dir.path().join("splash-probe");
    assert!(
        orphan_survives_a_bubblewrap_only_kill(&bwrap, &probe, true),
        "control: the orphan should outlive a kill of Bubblewrap alone"
    );
    assert!(
        !orphan_survives_a_bubblewrap_only_kill(&bwrap, &probe, false),
        "control: without --orphan the probe dies with Bubblewrap"
    );
    let silent = loaded(&orphan_policy(&bwrap, &probe_dir, false));
    let lingering = loaded(&orphan_policy(&bwrap, &probe_dir, true));
    let launch_as = |policy: &LoadedPolicy, deadlines: Deadlines| {
        policy
            .launch(manifest("h-1"), options_as(uid, deadlines))
            .expect("launch")
    };
    let sleep = || json!({"ms": 60_000});
    let bound = Duration::from_secs(5);

    // The session deadline.
    let started = Instant::now();
    let mut session = launch_as(&silent, Deadlines::session(Duration::from_secs(1)));
    let pid = session.pid();
    let err = session.call("probe.sleep", sleep()).expect_err("deadline");
    assert_eq!(
        indeterminate(&err),
        Some(StopReason::SessionDeadline),
        "{err}"
    );
    let elapsed = started.elapsed();
    eprintln!("uid {uid}: session deadline 1 s, orphan gone after {elapsed:?}");
    assert!(elapsed < Duration::from_secs(1) + bound, "{elapsed:?}");
    assert_gone(pid, &probe);
    drop(session);

    // The call deadline.
    let mut session = launch_as(
        &silent,
        Deadlines::none().with_call(Duration::from_millis(500)),
    );
    let pid = session.pid();
    let started = Instant::now();
    let err = session.call("probe.sleep", sleep()).expect_err("deadline");
    assert_eq!(indeterminate(&err), Some(StopReason::CallDeadline), "{err}");
    let elapsed = started.elapsed();
    eprintln!("uid {uid}: call deadline 500 ms, orphan gone after {elapsed:?}");
    assert!(elapsed < Duration::from_millis(500) + bound, "{elapsed:?}");
    assert_gone(pid, &probe);
    drop(session);

    // A trusted stop from another thread.
    let mut session = launch_as(&silent, Deadlines::none());
    let pid = session.pid();
    let stop = session.stop_handle();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stop.stop().expect("session alive").expect("stopped")
    });
    let err = session.call("probe.sleep", sleep()).expect_err("stopped");
    let status = stopper.join().expect("stopper");
    assert_eq!(indeterminate(&err), Some(StopReason::Stopped), "{err}");
    assert_eq!(status, splash_runtime::WorkerStatus::Killed(libc::SIGKILL));
    assert_gone(pid, &probe);
    drop(session);

    // `close` of a worker that ignores `close_session`.
    let mut session = launch_as(&lingering, Deadlines::none());
    let pid = session.pid();
    session
        .call("probe.echo", json!({"input": 1}))
        .expect("echo");
    let started = Instant::now();
    let closed = session.close(Duration::from_millis(300));
    eprintln!(
        "uid {uid}: close of a lingering orphan returned after {:?}: {closed:?}",
        started.elapsed()
    );
    assert_gone(pid, &probe);

    // Dropping a session whose worker runs.
    let mut session = launch_as(&lingering, Deadlines::none());
    let pid = session.pid();
    session
        .call("probe.echo", json!({"input": 2}))
        .expect("echo");
    drop(session);
    assert_gone(pid, &probe);
}

#[test]
fn a_worker_without_a_parent_death_signal_dies_with_every_stop_as_root() {
    let _serial = serial();
    if !splash_tests::require_host(running_as_root(), "host root") {
        return;
    }
    a_worker_without_a_parent_death_signal_dies_with_every_stop(0);
}

#[test]
fn a_worker_without_a_parent_death_signal_dies_with_every_stop_as_uid_65534() {
    let _serial = serial();
    if !splash_tests::require_host(
        Path::new(SETPRIV).is_file() && running_as_root(),
        "setpriv and host root (the worker runs as uid 65534)",
    ) {
        return;
    }
    a_worker_without_a_parent_death_signal_dies_with_every_stop(NOBODY);
}
