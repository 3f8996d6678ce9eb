//! Spawn and lifecycle with the real bwrap, using `cat` as a stand-in worker
//! that echoes its stdin (so the bootstrap preamble comes straight back):
//! a policy whose worker is a copy of `cat` in a runtime-mounted directory.

mod runtime_support;

use std::io::{Read, Write};

use runtime_support::{TempDir, TestPolicy, live_children, lowered_with, open_fds, reaped};
use splash_protocol::{PrivatePipeWorkerBootstrap, SessionKey, Token};
use splash_runtime::{BoundCommand, Deadlines, SpawnError, WorkerStatus};

fn bootstrap(session: &str) -> PrivatePipeWorkerBootstrap {
    PrivatePipeWorkerBootstrap::new(
        Token::new(session).expect("token"),
        SessionKey::generate().expect("csprng key"),
    )
}

/// A worker directory holding a copy of `cat`.
fn cat_worker() -> Option<(TempDir, std::path::PathBuf)> {
    let bwrap = splash_tests::bwrap_path();
    if !splash_tests::require_host(bwrap.is_some(), "bubblewrap") {
        return None;
    }
    let dir = TempDir::new("cat");
    std::fs::copy("/usr/bin/cat", dir.path().join("cat")).expect("copy cat");
    Some((dir, bwrap.expect("checked above")))
}

#[test]
fn bootstrap_preamble_reaches_the_worker_first_and_lifecycle_reaps() {
    let _serial = runtime_support::serial();
    let Some((dir, bwrap)) = cat_worker() else {
        return;
    };
    let fds_before = open_fds();
    for binding in [
        runtime_support::Binding::Paths,
        runtime_support::Binding::PinnedMounts,
        runtime_support::Binding::PinnedMountsAndExecutables,
    ] {
        let mut policy = TestPolicy::new(&bwrap, dir.path(), "cat");
        policy.binding = binding;
        let bound = BoundCommand::bind(policy.plan()).expect("bind");
        let boot = bootstrap("s-1");
        let (worker, mut stdin, mut stdout) = bound
            .spawn_watched(&boot, Deadlines::none())
            .expect("spawn");
        assert_eq!(worker.try_status().expect("status"), WorkerStatus::Running);
        let mut echoed = vec![0u8; 42 + 3];
        stdout
            .read_exact(&mut echoed)
            .expect("read echoed preamble");
        assert_eq!(&echoed[..], &boot.encode()[..], "{binding:?}");
        stdin.write_all(b"more\n").expect("write");
        let mut more = [0u8; 5];
        stdout.read_exact(&mut more).expect("read");
        drop(stdin);
        assert_eq!(reaped(&worker), WorkerStatus::Exited(0));
        drop(stdout);
        drop(worker);
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
fn terminate_kills_and_drop_reaps() {
    let _serial = runtime_support::serial();
    let Some((dir, bwrap)) = cat_worker() else {
        return;
    };
    let fds_before = open_fds();
    let mut policy = TestPolicy::new(&bwrap, dir.path(), "cat");
    policy.binding = runtime_support::Binding::PinnedMountsAndExecutables;
    let bound = BoundCommand::bind(policy.plan()).expect("bind");
    let (worker, stdin, mut stdout) = bound
        .spawn_watched(&bootstrap("s-1"), Deadlines::none())
        .expect("spawn");
    // Once the preamble comes back, the worker runs.
    let mut echoed = [0u8; 45];
    stdout.read_exact(&mut echoed).expect("worker running");
    // The sandboxed processes (bwrap's pid-namespace init and the worker)
    // die with bwrap. A dead process may linger as a zombie until the
    // host's init reaps it; it no longer runs.
    let children = |pid: &str| -> Vec<String> {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let mut inner = children(&worker.pid().to_string());
    assert!(!inner.is_empty(), "bwrap has no child");
    let grandchildren: Vec<String> = inner.iter().flat_map(|p| children(p)).collect();
    inner.extend(grandchildren);
    let running = |pid: &String| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(") ").next().and_then(|rest| rest.chars().next()))
            .is_some_and(|state| state != 'Z' && state != 'X')
    };
    assert_eq!(
        worker.stop().expect("stop"),
        WorkerStatus::Killed(libc::SIGKILL)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while inner.iter().any(running) {
        assert!(
            std::time::Instant::now() < deadline,
            "sandboxed processes outlived bwrap: {inner:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        worker.try_status().expect("status"),
        WorkerStatus::Killed(libc::SIGKILL)
    );

    // Dropping a running worker kills and reaps it.
    let running = bound
        .spawn_watched(&bootstrap("s-1"), Deadlines::none())
        .expect("spawn");
    drop(running);
    drop((worker, stdin, stdout));
    drop(bound);
    assert_eq!(open_fds(), fds_before, "descriptors leaked");
    assert!(
        live_children().is_empty(),
        "children left: {:?}",
        live_children()
    );
}

#[test]
fn a_bootstrap_for_another_session_fails_before_launch() {
    let _serial = runtime_support::serial();
    let Some((dir, bwrap)) = cat_worker() else {
        return;
    };
    let policy = TestPolicy::new(&bwrap, dir.path(), "cat");
    let bound = BoundCommand::bind(policy.plan()).expect("bind");
    let err = bound
        .spawn_watched(&bootstrap("s-2"), Deadlines::none())
        .expect_err("mismatch");
    assert!(matches!(err, SpawnError::SessionMismatch { .. }), "{err}");
    assert!(live_children().is_empty());

    // Activated without a manifest: every registered root, no session.
    let bound = BoundCommand::bind(lowered_with(&policy.render(), None)).expect("bind");
    let err = bound
        .spawn_watched(&bootstrap("s-1"), Deadlines::none())
        .expect_err("no session");
    assert!(matches!(err, SpawnError::NoSession), "{err}");
}
