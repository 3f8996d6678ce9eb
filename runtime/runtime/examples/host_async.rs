//! The async twin of the `host` example: a tokio host on one
//! current-thread runtime loads a compiled `.splashc` artifact, launches
//! the probe worker under it, calls a tool, cancels a sleep, handles a
//! deadline and closes, without ever blocking its runtime thread.
//!
//! ```sh
//! cargo build --bins                      # the probe worker
//! cargo run -p splash-runtime --features tokio --example host_async [ARTIFACT.splashc]
//! ```
//!
//! The artifact is as for the `host` example (without one, a small
//! hardened policy for the probe built next to it is compiled first).
//!
//! Exit status 0 when every step behaved as expected.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use splash_runtime::{
    CallError, Deadlines, Event, Indeterminate, LaunchOptions, LoadedPolicy, StopReason,
};

mod common;

use common::{chain, compile_example_artifact, manifest};

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("host_async: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host_async: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let scratch = tempfile::Builder::new()
        .prefix("splash-host-async-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .map_err(|e| e.to_string())?;
    let artifact = match std::env::args_os().nth(1) {
        Some(path) => PathBuf::from(path),
        None => compile_example_artifact(scratch.path())?,
    };
    let policy = LoadedPolicy::from_path(&artifact).map_err(|e| e.to_string())?;
    println!(
        "loaded `{}` from {}",
        policy.policy.name(),
        artifact.display()
    );

    // 1. Launch: bind and spawn run on the runtime's blocking pool.
    let deadlines = Deadlines::session(Duration::from_secs(60)).with_call(Duration::from_secs(1));
    let mut session = policy
        .launch_async(
            manifest("example-async-1")?,
            LaunchOptions::default().with_deadlines(deadlines),
        )
        .await
        .map_err(|e| format!("launch refused or failed: {}", chain(&e)))?;
    println!("session open, bubblewrap pid {}", session.pid());

    // 2. One ordinary call.
    let out = session
        .call("probe.echo", json!({"input": {"hello": "async sandbox"}}))
        .await
        .map_err(|e| chain(&e))?;
    println!("probe.echo answered {out}");

    // 3. Start a sleep, wait a little (a dropped `next_event` changes
    //    nothing), then cancel it cooperatively.
    let id = session
        .start("probe.sleep", json!({"ms": 10_000}))
        .await
        .map_err(|e| chain(&e))?;
    if tokio::time::timeout(Duration::from_millis(100), session.next_event())
        .await
        .is_ok()
    {
        return Err("the sleep answered before it was cancelled".into());
    }
    session.cancel(&id).await.map_err(|e| chain(&e))?;
    match session.next_event().await.map_err(|e| chain(&e))? {
        Event::Cancelled { .. } => println!("probe.sleep cancelled; the session stays usable"),
        other => return Err(format!("expected a cancellation, got {other:?}")),
    }

    // 4. A call that outlives its 1 s deadline: the watchdog force-stops
    //    and reaps the worker, and the outcome is indeterminate.
    match session.call("probe.sleep", json!({"ms": 10_000})).await {
        Err(CallError::Indeterminate {
            reason: Indeterminate::ForceStopped(StopReason::CallDeadline),
            status,
        }) => println!(
            "probe.sleep passed its deadline: worker stopped ({status}); session discarded"
        ),
        other => return Err(format!("expected a call deadline, got {other:?}")),
    }
    drop(session);

    // 5. A fresh session, closed: the exit is awaited on the worker's pidfd.
    let mut fresh = policy
        .launch_async(
            manifest("example-async-2")?,
            LaunchOptions::default().with_deadlines(deadlines),
        )
        .await
        .map_err(|e| chain(&e))?;
    let out = fresh
        .call("probe.echo", json!({"input": "again"}))
        .await
        .map_err(|e| chain(&e))?;
    let status = fresh
        .close(Duration::from_secs(5))
        .await
        .map_err(|e| chain(&e))?;
    println!("fresh session answered {out}; worker ended with {status}");
    Ok(())
}
