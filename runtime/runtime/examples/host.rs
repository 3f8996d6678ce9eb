//! A Rust host embedding the runtime: load a compiled `.splashc` artifact,
//! launch the probe worker under it, call a tool, and handle a deadline.
//!
//! ```sh
//! cargo build --bins                      # the probe worker
//! cargo run -p splash-runtime --example host [ARTIFACT.splashc]
//! ```
//!
//! With an artifact argument the artifact must grant nothing itself (an
//! artifact is a policy; grants come from the manifest built below) and
//! name a probe worker. Without one, the example compiles a small hardened
//! policy for the probe built next to it (`target/<profile>/splash-probe`)
//! into a temporary artifact first, the way `splashc compile` would.
//!
//! Exit status 0 when every step behaved as expected.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use splash_runtime::{
    CallError, Deadlines, Indeterminate, LaunchOptions, LoadedPolicy, StopReason,
};

mod common;

use common::{chain, compile_example_artifact, manifest};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    // Removed on drop. Mode 0755, as `mkdir` makes it: the sandboxed worker
    // may run as another uid and must reach the probe copied in here.
    let scratch = tempfile::Builder::new()
        .prefix("splash-host-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .map_err(|e| e.to_string())?;
    let artifact = match std::env::args_os().nth(1) {
        Some(path) => PathBuf::from(path),
        None => compile_example_artifact(scratch.path())?,
    };

    // 1. Load the artifact once; it is re-validated (digest, invariants).
    let policy = LoadedPolicy::from_path(&artifact).map_err(|e| e.to_string())?;
    println!(
        "loaded `{}` from {}",
        policy.policy.name(),
        artifact.display()
    );

    // 2. Launch: activate the manifest, lower, bind (every control is
    //    enforced or the launch is refused), spawn under the watchdog, open
    //    the authenticated session. The host's per-call deadline (1 s) is
    //    tighter than the policy's (5 s), so it wins.
    let deadlines = Deadlines::session(Duration::from_secs(60)).with_call(Duration::from_secs(1));
    let mut session = policy
        .launch(
            manifest("example-1")?,
            LaunchOptions::default().with_deadlines(deadlines),
        )
        .map_err(|e| format!("launch refused or failed: {}", chain(&e)))?;
    println!("session open, bubblewrap pid {}", session.pid());

    // 3. One ordinary call.
    let out = session
        .call("probe.echo", json!({"input": {"hello": "sandbox"}}))
        .map_err(|e| chain(&e))?;
    println!("probe.echo answered {out}");

    // 4. A call that outlives its deadline: the watchdog force-stops and
    //    reaps the worker, and the outcome is indeterminate.
    match session.call("probe.sleep", json!({"ms": 10_000})) {
        Err(CallError::Indeterminate {
            reason: Indeterminate::ForceStopped(StopReason::CallDeadline),
            status,
        }) => println!(
            "probe.sleep passed its 1 s deadline: worker stopped ({status}); outcome indeterminate, session discarded"
        ),
        other => return Err(format!("expected a call deadline, got {other:?}")),
    }
    if !session.is_poisoned() {
        return Err("a deadline must poison the session".into());
    }
    drop(session);

    // 5. Recovery is a fresh session with a fresh id and key.
    let mut fresh = policy
        .launch(
            manifest("example-2")?,
            LaunchOptions::default().with_deadlines(deadlines),
        )
        .map_err(|e| chain(&e))?;
    let out = fresh
        .call("probe.echo", json!({"input": "again"}))
        .map_err(|e| chain(&e))?;
    let status = fresh.close(Duration::from_secs(5)).map_err(|e| chain(&e))?;
    println!("fresh session answered {out}; worker ended with {status}");
    Ok(())
}
