//! `splashc run POLICY [--manifest FILE] [--invoke TOOL --input JSON]`.
//!
//! Check (or load a compiled artifact), activate, lower for this host's
//! architecture, bind, spawn with a fresh CSPRNG session key, open the
//! authenticated session, make one call, print the authenticated response
//! on stdout, close, reap.
//!
//! Without `--manifest` a manifest is generated for a fresh session: a random
//! session id, one grant for the tool to call, and every file root the policy
//! registers. The run says so on stderr. Without `--invoke` the call is
//! `probe.report` with input `{}` (the bundled probe worker's report).
//!
//! Exit status: 0 the call succeeded and the worker exited cleanly; 1 the
//! policy or manifest has errors; 2 usage or I/O problems; 3 bind, launch,
//! session or tool failure.

use std::collections::BTreeSet;
use std::io::{Read, Write};

use serde_json::Value;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, Resource,
    ResourceKind, SessionError, SessionKey, Token,
};
use splash_runtime::{BoundCommand, WorkerStatus};
use splashpol::model::Policy;
use splashpol::{activate, lower};

use crate::RunArgs;
use crate::emit::{arch, load_manifest, load_policy};

/// Exit status of a launch or session failure.
const LAUNCH_FAILED: u8 = 3;
/// The default tool: the probe's report.
const DEFAULT_TOOL: &str = "probe.report";

pub fn run(args: &RunArgs) -> u8 {
    match run_main(args) {
        Ok(()) => 0,
        Err(code) => code,
    }
}

fn random_hex(bytes: usize) -> Result<String, u8> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| {
            eprintln!("splashc run: cannot read the random source: {e}");
            2
        })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A manifest for a fresh session granting `tool` and every registered root.
fn generated_manifest(policy: &Policy, tool: &Token) -> Result<CapabilityManifest, u8> {
    let session = Token::new(format!("run-{}", random_hex(8)?)).map_err(|e| {
        eprintln!("splashc run: cannot make a session id: {e}");
        2
    })?;
    let mut grant = Grant::new(tool.clone(), GrantFormat::Json);
    grant.max_input_bytes = 64 * 1024;
    grant.max_output_bytes = 1024 * 1024;
    grant.resources = policy
        .file_roots
        .iter()
        .map(|r| Resource::new(ResourceKind::FileRoot, r.id.clone()))
        .collect::<BTreeSet<_>>();
    Ok(CapabilityManifest {
        protocol_version: splash_protocol::PROTOCOL_VERSION,
        session_id: session,
        grants: vec![grant],
    })
}

fn run_main(args: &RunArgs) -> Result<(), u8> {
    let tool_name = args.invoke.as_deref().unwrap_or(DEFAULT_TOOL);
    let tool = Token::new(tool_name).map_err(|e| {
        eprintln!("splashc run: `--invoke {tool_name}` is not a tool name: {e}");
        2
    })?;
    let input: Value = match &args.input {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            eprintln!("splashc run: `--input` is not JSON: {e}");
            2
        })?,
        None => Value::Object(serde_json::Map::new()),
    };

    // Check, activate, lower.
    let loaded = load_policy(&args.policy)?;
    let manifest = match &args.manifest {
        Some(path) => load_manifest(path)?,
        None => {
            let m = generated_manifest(&loaded.policy, &tool)?;
            let roots: Vec<String> = loaded
                .policy
                .file_roots
                .iter()
                .map(|r| format!("`{}`", r.id))
                .collect();
            eprintln!(
                "note: no manifest given; generated session `{}` granting `{tool}` and activating every registered file root ({})",
                m.session_id,
                if roots.is_empty() {
                    "none".to_owned()
                } else {
                    roots.join(", ")
                }
            );
            m
        }
    };
    if manifest.grant(tool.as_str()).is_none() {
        eprintln!(
            "splashc run: the manifest does not grant `{tool}`; name a granted tool with `--invoke`"
        );
        return Err(1);
    }
    let activation = activate::activate(&loaded.policy, Some(&manifest)).map_err(|e| {
        eprintln!("splashc run: activation failed: {e}");
        1
    })?;
    let arch = arch(None)?;
    let plan =
        lower::lower(&loaded.policy, &activation, arch, &loaded.source_digest).map_err(|e| {
            eprintln!("splashc run: cannot lower the policy: {e}");
            1
        })?;

    if let Some(w) = &plan.watchdog {
        eprintln!(
            "splashc run: the policy sets a watchdog ({} ms per session), which `splashc run` does not enforce; refusing to launch without it",
            w.session_deadline_ms
        );
        return Err(LAUNCH_FAILED);
    }

    // Bind, spawn, session.
    let bound = BoundCommand::bind(plan).map_err(|e| {
        eprintln!("splashc run: bind failed: {}", chain(&e));
        LAUNCH_FAILED
    })?;
    eprintln!(
        "bound `{}`: {} pinned descriptor(s), bubblewrap launched {}, seccomp {}",
        bound.plan().policy_name,
        bound.pins().len(),
        match bound.bubblewrap_launch() {
            splash_runtime::BubblewrapLaunch::Path => "by path",
            splash_runtime::BubblewrapLaunch::Pinned(_) => "through its pinned descriptor",
        },
        bound
            .plan()
            .seccomp
            .as_ref()
            .map_or("off", |s| s.profile.as_str()),
    );
    let key = SessionKey::generate().map_err(|e| {
        eprintln!("splashc run: {e}");
        LAUNCH_FAILED
    })?;
    let bootstrap = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
    let worker = bound.spawn_with_bootstrap(&bootstrap).map_err(|e| {
        eprintln!("splashc run: launch failed: {}", chain(&e));
        LAUNCH_FAILED
    })?;
    drop(bootstrap);
    let (mut lifecycle, stdin, stdout) = worker.into_lifecycle_parts();
    eprintln!(
        "launched bubblewrap pid {}; session `{}` opening",
        lifecycle.pid(),
        manifest.session_id
    );
    let mut session = HostSession::open(manifest, key, stdin, stdout).map_err(|e| {
        eprintln!(
            "splashc run: cannot open the session: {}; {}",
            chain(&e),
            lifecycle.startup_failure()
        );
        LAUNCH_FAILED
    })?;
    let response = match session.invoke(tool.as_str(), input) {
        Ok(v) => v,
        Err(e) => {
            let poisoned = session.is_poisoned();
            drop(session);
            let why = if let SessionError::WorkerEnded { .. } = e {
                // No error frame exists: the worker ended the session.
                match lifecycle.wait_timeout(std::time::Duration::from_secs(5)) {
                    Ok(WorkerStatus::Running) | Err(_) => {
                        let _ = lifecycle.terminate();
                        "the worker was stopped".to_owned()
                    }
                    Ok(status) => format!("bubblewrap ended with {status}"),
                }
            } else if poisoned {
                lifecycle.startup_failure().to_string()
            } else {
                let _ = lifecycle.terminate();
                "the session stays authenticated; the worker was stopped".to_owned()
            };
            eprintln!("splashc run: `{tool}` failed: {}; {why}", chain(&e));
            return Err(LAUNCH_FAILED);
        }
    };

    let text = serde_json::to_string_pretty(&response).map_err(|e| {
        eprintln!("splashc run: cannot render the response: {e}");
        2
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| {
            eprintln!("splashc run: cannot write the output: {e}");
            2
        })?;

    session.close().map_err(|e| {
        eprintln!("splashc run: cannot close the session: {}", chain(&e));
        LAUNCH_FAILED
    })?;
    let status = match lifecycle.wait_timeout(std::time::Duration::from_secs(5)) {
        Ok(WorkerStatus::Running) => lifecycle.terminate(),
        other => other,
    }
    .map_err(|e| {
        eprintln!("splashc run: cannot reap the worker: {e}");
        LAUNCH_FAILED
    })?;
    eprintln!("worker closed; bubblewrap ended with {status}");
    match status {
        WorkerStatus::Exited(0) => Ok(()),
        _ => Err(LAUNCH_FAILED),
    }
}

/// An error and its sources, `: `-separated.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
