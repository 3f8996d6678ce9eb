//! The asynchronous session (`splash-runtime`'s `tokio` feature) against
//! real workers under real bwrap, on a current-thread runtime, so any
//! step that blocked would stall everything else on it: calls and close,
//! a runtime thread that stays free while a call waits (control: the
//! blocking session on that thread stalls it), deadlines and a trusted
//! stop, cooperative cancellation after a dropped `next_event`, and a
//! dropped future, session or launch that leaves nothing running
//! (control: the same worker kept lives on).
//!
//! Times are asserted with generous margins only.

mod runtime_support;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use runtime_support::{
    TestPolicy, host_with_probe, live_children, open_fds, probe_policy, processes_running, serial,
};
use serde_json::json;
use splash_protocol::CapabilityManifest;
use splash_runtime::{
    AsyncSession, CallError, Deadlines, Event, Indeterminate, LaunchOptions, LoadedPolicy,
    StopReason, WorkerStatus,
};

fn manifest(session: &str) -> CapabilityManifest {
    runtime_support::manifest_granting(session, &["probe.echo", "probe.sleep", "probe.spin"])
}

fn loaded(policy: &TestPolicy) -> LoadedPolicy {
    LoadedPolicy::from_bytes("test.splashpol", policy.render().into_bytes()).expect("load")
}

fn options(deadlines: Deadlines) -> LaunchOptions {
    LaunchOptions::default().with_deadlines(deadlines)
}

/// `f` on a fresh current-thread runtime (its blocking pool included).
fn on_runtime<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

async fn launch(policy: &TestPolicy, deadlines: Deadlines) -> AsyncSession {
    loaded(policy)
        .launch_async(manifest("a-1"), options(deadlines))
        .await
        .expect("launch")
}

/// Ticks every 10 ms on the runtime until dropped; the count shows
/// whether the runtime thread was free meanwhile.
fn ticker() -> (Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    let ticks = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&ticks);
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(10)).await;
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    (ticks, task)
}

fn alive(pid: u32) -> bool {
    // A zombie is gone as far as the sandbox goes; only the parent's reap
    // is pending, and that is the session's to do.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// Waits up to 10 s for the sandbox of `pid` and every probe process to
/// be gone; how long that took.
async fn gone_within(pid: u32, probe: &Path) -> Duration {
    let started = Instant::now();
    while (alive(pid) || !processes_running(probe).is_empty())
        && started.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "bubblewrap {pid} is still running");
    assert!(
        processes_running(probe).is_empty(),
        "probe processes left: {:?}",
        processes_running(probe)
    );
    started.elapsed()
}

fn forced(e: &CallError) -> Option<StopReason> {
    match e {
        CallError::Indeterminate {
            reason: Indeterminate::ForceStopped(why),
            ..
        } => Some(*why),
        _ => None,
    }
}

fn probe_path(dir: &runtime_support::TempDir) -> PathBuf {
    dir.path().join("splash-probe")
}

#[test]
fn calls_and_close_leave_the_runtime_thread_free_and_nothing_behind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    on_runtime(async {
        let fds = open_fds();
        let (ticks, task) = ticker();
        let mut session = launch(&policy, Deadlines::session(Duration::from_secs(60))).await;
        let pid = session.pid();
        for n in [1, 2] {
            let out = session
                .call("probe.echo", json!({"input": {"n": n}}))
                .await
                .expect("echo");
            assert_eq!(out, json!({"input": {"n": n}}));
        }
        // A call that waits 600 ms on the worker: the runtime thread keeps
        // running other tasks meanwhile.
        let before = ticks.load(Ordering::Relaxed);
        session
            .call("probe.sleep", json!({"ms": 600}))
            .await
            .expect("sleep");
        let during = ticks.load(Ordering::Relaxed) - before;
        eprintln!("ticks of a 10 ms ticker during a 600 ms async call: {during}");
        assert!(
            during >= 20,
            "the runtime thread was blocked ({during} ticks)"
        );
        let status = session.close(Duration::from_secs(5)).await.expect("close");
        assert_eq!(status, WorkerStatus::Exited(0));
        gone_within(pid, &probe_path(&probe_dir)).await;
        task.abort();
        let _ = task.await;
        assert!(live_children().is_empty(), "{:?}", live_children());
        assert_eq!(open_fds(), fds, "a descriptor was left open");
    });

    // Control: the blocking session's call on the runtime thread stalls
    // the same ticker, so the count above measures what it claims.
    on_runtime(async {
        let (ticks, task) = ticker();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut session = loaded(&policy)
            .launch(
                manifest("a-2"),
                options(Deadlines::session(Duration::from_secs(60))),
            )
            .expect("launch");
        let before = ticks.load(Ordering::Relaxed);
        session
            .call("probe.sleep", json!({"ms": 600}))
            .expect("sleep");
        let during = ticks.load(Ordering::Relaxed) - before;
        eprintln!("ticks during the same call through the blocking session: {during}");
        assert!(during <= 2, "the control did not block ({during} ticks)");
        session.close(Duration::from_secs(5)).expect("close");
        task.abort();
    });
}

#[test]
fn deadlines_and_a_stop_release_an_awaiting_call() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let probe = probe_path(&probe_dir);
    on_runtime(async {
        // The call deadline.
        let deadlines =
            Deadlines::session(Duration::from_secs(60)).with_call(Duration::from_secs(1));
        let mut session = launch(&policy, deadlines).await;
        let pid = session.pid();
        let started = Instant::now();
        let err = session
            .call("probe.sleep", json!({"ms": 30_000}))
            .await
            .expect_err("the deadline ends the call");
        let elapsed = started.elapsed();
        eprintln!("call deadline 1 s: the future ended after {elapsed:?}");
        assert_eq!(forced(&err), Some(StopReason::CallDeadline), "{err}");
        assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
        assert!(session.is_poisoned());
        assert!(matches!(
            session.call("probe.echo", json!({})).await,
            Err(CallError::Poisoned)
        ));
        gone_within(pid, &probe).await;
        drop(session);

        // The session deadline, on a worker that spins without answering.
        let mut session = launch(&policy, Deadlines::session(Duration::from_secs(1))).await;
        let pid = session.pid();
        let err = session
            .call("probe.spin", json!({"seconds": 60}))
            .await
            .expect_err("the deadline ends the call");
        assert_eq!(forced(&err), Some(StopReason::SessionDeadline), "{err}");
        gone_within(pid, &probe).await;
        drop(session);

        // A trusted stop from another thread.
        let mut session = launch(&policy, Deadlines::none()).await;
        let pid = session.pid();
        let stop = session.stop_handle();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            (
                Instant::now(),
                stop.stop().expect("session alive").expect("reaped"),
            )
        });
        let err = session
            .call("probe.spin", json!({"seconds": 60}))
            .await
            .expect_err("stopped");
        let returned = Instant::now();
        let (stopped_at, status) = stopper.join().expect("stopper");
        assert_eq!(forced(&err), Some(StopReason::Stopped), "{err}");
        assert_eq!(status, WorkerStatus::Killed(9));
        let unblocked = returned.saturating_duration_since(stopped_at);
        eprintln!("stop(): the awaiting future ended {unblocked:?} after the stop began");
        assert!(unblocked < Duration::from_secs(5), "{unblocked:?}");
        gone_within(pid, &probe).await;
    });
}

#[test]
fn a_dropped_next_event_changes_nothing_and_cancellation_works() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    on_runtime(async {
        let mut session = launch(&policy, Deadlines::session(Duration::from_secs(60))).await;
        let id = session
            .start("probe.sleep", json!({"ms": 30_000}))
            .await
            .expect("start");
        // Nothing arrives within 200 ms: the dropped `next_event` leaves
        // the session as it was.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), session.next_event())
                .await
                .is_err()
        );
        assert!(!session.is_poisoned());
        session.cancel(&id).await.expect("cancel");
        assert_eq!(
            session.next_event().await.expect("answer"),
            Event::Cancelled {
                request_id: id.clone()
            }
        );
        // Too late: the result comes first, then `too_late`.
        let id = session
            .start("probe.echo", json!({"input": 1}))
            .await
            .expect("start");
        tokio::time::sleep(Duration::from_millis(200)).await;
        session.cancel(&id).await.expect("cancel");
        assert_eq!(
            session.next_event().await.expect("result"),
            Event::Finished {
                request_id: id.clone(),
                output: json!({"input": 1})
            }
        );
        assert_eq!(
            session.next_event().await.expect("too late"),
            Event::TooLate { request_id: id }
        );
        // Idle: refused without waiting, the session stays usable.
        assert!(matches!(
            session.next_event().await,
            Err(CallError::Refused(_))
        ));
        assert_eq!(
            session
                .call("probe.echo", json!({"input": 2}))
                .await
                .expect("usable"),
            json!({"input": 2})
        );
        assert_eq!(
            session.close(Duration::from_secs(5)).await.expect("close"),
            WorkerStatus::Exited(0)
        );
    });
}

#[test]
fn a_dropped_call_session_or_launch_leaves_nothing_running() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let probe = probe_path(&probe_dir);
    on_runtime(async {
        let fds = open_fds();
        // Control: a session that is kept keeps its worker, busy or not.
        // Its probe is another copy, so the two sandboxes' processes are
        // told apart.
        let kept_dir = runtime_support::TempDir::new("probe-kept");
        std::fs::copy(&probe, probe_path(&kept_dir)).expect("copy probe");
        let kept_probe = probe_path(&kept_dir);
        let kept_policy = probe_policy(&bwrap, &kept_dir);
        let mut kept = launch(&kept_policy, Deadlines::none()).await;
        let kept_pid = kept.pid();
        let id = kept
            .start("probe.sleep", json!({"ms": 30_000}))
            .await
            .expect("start");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(alive(kept_pid), "the kept worker died on its own");
        assert!(!processes_running(&kept_probe).is_empty());

        // A call future dropped by a timeout stops its sandbox.
        let mut session = launch(&policy, Deadlines::none()).await;
        let pid = session.pid();
        let call = session.call("probe.sleep", json!({"ms": 30_000}));
        assert!(
            tokio::time::timeout(Duration::from_millis(300), call)
                .await
                .is_err()
        );
        let took = gone_within(pid, &probe).await;
        eprintln!("a dropped call future: its sandbox was gone within {took:?}");
        assert!(!alive(pid));
        assert!(
            session.call("probe.echo", json!({})).await.is_err(),
            "a session whose call was dropped is not usable"
        );
        drop(session);
        assert!(alive(kept_pid), "only the dropped session's sandbox stops");
        assert!(!processes_running(&kept_probe).is_empty());

        // The kept session, dropped with its call in flight.
        let _ = id;
        drop(kept);
        gone_within(kept_pid, &kept_probe).await;

        // A launch future dropped at once: whatever it had started is
        // stopped when the spawn finishes.
        let dropped = loaded(&policy);
        for delay_ms in [0, 5, 50] {
            let launching = dropped.launch_async(manifest("a-3"), options(Deadlines::none()));
            let _ = tokio::time::timeout(Duration::from_millis(delay_ms), launching).await;
        }
        // The spawns the dropped futures started go on on the blocking
        // pool: let them finish (a whole launch takes tens of
        // milliseconds here) before counting, so an empty count cannot
        // come from a spawn that had not happened yet.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let started = Instant::now();
        while !processes_running(&probe).is_empty() && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            processes_running(&probe).is_empty(),
            "a dropped launch left {:?}",
            processes_running(&probe)
        );
        // The blocking pool drops what it held asynchronously; give it a
        // moment, then nothing may be left.
        let started = Instant::now();
        while (open_fds() != fds || !live_children().is_empty())
            && started.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(live_children().is_empty(), "{:?}", live_children());
        assert_eq!(open_fds(), fds, "a descriptor was left open");
    });
}

#[test]
fn an_idle_session_learns_of_its_deadline_as_it_passes() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let policy = probe_policy(&bwrap, &probe_dir);
    let probe = probe_path(&probe_dir);
    on_runtime(async {
        // Control: without a deadline nothing fires; the wait stays
        // pending (the runtime's other tasks run meanwhile), and the
        // session still answers afterwards.
        let mut session = launch(&policy, Deadlines::none()).await;
        assert_eq!(session.stopped(), None);
        let waited = tokio::time::timeout(Duration::from_millis(500), session.wait_stopped()).await;
        assert!(waited.is_err(), "nothing stopped the session: {waited:?}");
        assert_eq!(
            session
                .call("probe.echo", json!({"input": {"n": 1}}))
                .await
                .expect("echo"),
            json!({"input": {"n": 1}})
        );
        assert_eq!(session.stopped(), None);
        session.close(Duration::from_secs(5)).await.expect("close");

        // An idle session under a 0.8 s deadline: the wait ends as the
        // deadline passes, with its reason, and the sandbox is gone.
        let session = launch(&policy, Deadlines::session(Duration::from_millis(800))).await;
        let pid = session.pid();
        let (ticks, ticking) = ticker();
        let started = Instant::now();
        let reason = session.wait_stopped().await.expect("stopped");
        let elapsed = started.elapsed();
        ticking.abort();
        eprintln!(
            "idle 0.8 s deadline: reported after {elapsed:?}, {} ticks meanwhile",
            ticks.load(Ordering::Relaxed)
        );
        assert_eq!(reason, StopReason::SessionDeadline);
        assert_eq!(session.stopped(), Some(StopReason::SessionDeadline));
        assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert!(
            ticks.load(Ordering::Relaxed) > 10,
            "the runtime thread stayed free while waiting"
        );
        gone_within(pid, &probe).await;
        drop(session);
    });
}
