//! The host library against real workers under real bwrap: the one-call
//! launch, the watchdog (session and call deadlines, a trusted stop from
//! another thread), cooperative cancellation, and every refusal of bind and
//! activation with a control that passes.
//!
//! Times are asserted with generous margins only.

mod runtime_support;

use std::path::Path;
use std::time::{Duration, Instant};

use runtime_support::{
    TestPolicy, edited, host_with_probe, live_children, open_fds, probe_policy, serial,
};
use serde_json::{Value, json};
use splash_protocol::{CapabilityManifest, Grant, GrantFormat, SessionState, Token};
use splash_runtime::{
    BindError, BoundCommand, CallError, Deadlines, Event, Indeterminate, LaunchError,
    LaunchOptions, LoadedPolicy, Session, SpawnError, StopReason,
};
use splashpol::plan::{Arch, BwrapOp, LaunchPlan};

/// The probe tools these tests call.
const TOOLS: &[&str] = &["probe.echo", "probe.sleep", "probe.spin", "probe.exec"];

fn manifest(session: &str) -> CapabilityManifest {
    let grants = TOOLS
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

/// Processes on the host running `program` (the probe copy of this test).
fn processes_running(program: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe == program) {
            out.push(pid);
        }
    }
    out
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

    // The unwatched spawn path refuses such a plan instead of dropping it.
    let bound = loaded(&policy)
        .bind(&manifest("h-1"), splash_runtime::BindOptions::default())
        .expect("bind");
    let boot = splash_protocol::PrivatePipeWorkerBootstrap::new(
        Token::new("h-1").expect("id"),
        splash_protocol::SessionKey::generate().expect("key"),
    );
    assert!(matches!(
        bound.spawn_with_bootstrap(&boot),
        Err(SpawnError::WatchdogRequired { session_ms: 1000 })
    ));
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
    let foreign = plan(&policy, other).seccomp().cloned();
    let mixed = edited(plan(&policy, host), |p| {
        p.seccomp = foreign;
        if let Some(s) = p.seccomp.as_mut() {
            s.arch = host;
        }
    });
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
        let p = edited(plan(&policy, host), |p| p.ops.retain(|op| *op != drop_op));
        let err = BoundCommand::bind(p).expect_err("no prefix");
        assert!(
            matches!(err, BindError::HardeningPrefix { .. }),
            "{drop_op:?}: {err}"
        );
    }
    // The read-only /proc right after `--proc /proc`.
    let p = edited(plan(&policy, host), |p| {
        let at = p
            .ops
            .iter()
            .position(|op| matches!(op, BwrapOp::RemountRo(_)))
            .expect("remount /proc");
        p.ops.remove(at);
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
    let p = edited(plan(&policy, host), |p| {
        p.command = vec![
            splashpol::plan::ExecArg::Literal(policy.worker()),
            splashpol::plan::ExecArg::Literal("--".into()),
            splashpol::plan::ExecArg::Literal("/opt/worker/missing-program".into()),
        ];
    });
    let err = BoundCommand::bind(p).expect_err("second program missing");
    assert!(err.to_string().contains("missing-program"), "{err}");
    // Control: the same chain ending in the worker binds.
    let p = edited(plan(&policy, host), |p| {
        p.command = vec![
            splashpol::plan::ExecArg::Literal(policy.worker()),
            splashpol::plan::ExecArg::Literal("--".into()),
        ];
        p.command.extend(worker);
    });
    BoundCommand::bind(p).expect("every program exists");
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
    // A fresh id and exactly one grant: one exchange is sent. The probe,
    // like every worker built on the worker library, keeps no operation
    // journal, so (as in Splash) it ends the session on the request; the
    // outcome is reported as indeterminate and only after the worker was
    // reaped.
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
