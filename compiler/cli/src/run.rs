//! `splashc run POLICY [--manifest FILE] [--invoke TOOL --input JSON]`.
//!
//! A thin user of the runtime's host API ([`splash_runtime::LoadedPolicy`],
//! [`splash_runtime::Session`]): check (or load a compiled artifact),
//! activate, lower for this host's architecture, bind, spawn under the
//! watchdog (the policy's `watchdog` block is enforced) with a fresh CSPRNG
//! session key, open the authenticated session, make one call, print the
//! authenticated response on stdout, close, reap.
//!
//! Without `--manifest` a manifest is generated for a fresh session: a random
//! session id, one grant for the tool to call, and every file root the policy
//! registers. The run says so on stderr. Without `--invoke` the call is
//! `probe.report` with input `{}` (the bundled probe worker's report).
//!
//! With `--expect-digest HEX` the policy file must have that BLAKE3 digest
//! ([`LoadedPolicy::from_path_expecting`]), or the run is refused (exit 1)
//! naming both digests before the file is parsed.
//!
//! Exit status: 0 the call succeeded and the worker exited cleanly; 1 the
//! policy or manifest has errors or is not the pinned file; 2 usage or I/O problems; 3 bind, launch,
//! session or tool failure.

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

use serde_json::Value;
use splash_protocol::{CapabilityManifest, Grant, GrantFormat, Resource, ResourceKind, Token};
use splash_runtime::{
    BindOptions, Deadlines, LaunchError, LoadedPolicy, Session, SessionState, WorkerStatus,
};
use splashpol::model::Policy;

use crate::RunArgs;
use crate::emit::load_manifest;

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

/// `bytes` bytes of the operating system's CSPRNG (`getrandom(2)`), as hex.
fn random_hex(bytes: usize) -> Result<String, u8> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| {
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
        .file_roots()
        .iter()
        .map(|r| Resource::new(ResourceKind::FileRoot, r.id.clone()))
        .collect::<BTreeSet<_>>();
    Ok(CapabilityManifest {
        protocol_version: splash_protocol::PROTOCOL_VERSION,
        session_id: session,
        grants: vec![grant],
    })
}

fn launch_failed(e: &LaunchError) -> u8 {
    eprintln!("splashc run: {}", chain(e));
    match e {
        LaunchError::Read { .. } => 2,
        LaunchError::Artifact { .. }
        | LaunchError::DigestMismatch { .. }
        | LaunchError::NotUtf8 { .. }
        | LaunchError::Check { .. }
        | LaunchError::Manifest(_)
        | LaunchError::Activation(_)
        | LaunchError::Lower(_) => 1,
        _ => LAUNCH_FAILED,
    }
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

    // Load (check or validate), then the manifest.
    let loaded = match &args.expect_digest {
        Some(hex) if !splashpol::artifact::is_hex_digest(hex) => {
            eprintln!(
                "splashc run: `--expect-digest {}` is not a BLAKE3 digest: give 64 lowercase hex digits (`b3sum POLICY`)",
                splashpol::text::escaped(hex)
            );
            return Err(2);
        }
        Some(hex) => LoadedPolicy::from_path_expecting(&args.policy, hex),
        None => LoadedPolicy::from_path(&args.policy),
    };
    let loaded = loaded.map_err(|e| match &e {
        LaunchError::Check {
            name,
            text,
            outcome,
        } => {
            crate::check::eprint_diagnostics(name, text, outcome);
            1
        }
        _ => launch_failed(&e),
    })?;
    if !loaded.warnings.is_empty() {
        eprint!("{}", loaded.warnings);
    }
    let manifest = match &args.manifest {
        Some(path) => load_manifest(path)?,
        None => {
            let m = generated_manifest(&loaded.policy, &tool)?;
            let roots: Vec<String> = loaded
                .policy
                .file_roots()
                .iter()
                .map(|r| format!("`{}`", r.id))
                .collect();
            say(format_args!(
                "note: no manifest given; generated session `{}` granting `{tool}` and activating every registered file root ({})",
                m.session_id,
                if roots.is_empty() {
                    "none".to_owned()
                } else {
                    roots.join(", ")
                }
            ));
            m
        }
    };
    if manifest.grant(tool.as_str()).is_none() {
        eprintln!(
            "splashc run: the manifest does not grant `{tool}`; name a granted tool with `--invoke`"
        );
        return Err(1);
    }

    // Activate, lower, bind; then spawn under the watchdog and open.
    let bound = loaded
        .bind(&manifest, BindOptions::default())
        .map_err(|e| launch_failed(&e))?;
    let plan = bound.plan();
    let deadlines = Deadlines::for_plan(plan, Deadlines::none());
    say(format_args!(
        "bound `{}`: {} pinned descriptor(s), bubblewrap launched {}, seccomp {}, watchdog {}",
        plan.policy_name(),
        bound.pins().len(),
        match bound.bubblewrap_launch() {
            splash_runtime::BubblewrapLaunch::Path => "by path",
            splash_runtime::BubblewrapLaunch::Pinned(_) => "through its pinned descriptor",
        },
        plan.seccomp().map_or("off", |s| s.profile.as_str()),
        match (deadlines.session, deadlines.call) {
            (None, None) => "off".to_owned(),
            (s, c) => format!(
                "session {} call {}",
                s.map_or("none".into(), |d| format!("{} ms", d.as_millis())),
                c.map_or("none".into(), |d| format!("{} ms", d.as_millis()))
            ),
        },
    ));
    let session_id = manifest.session_id.clone();
    let mut session =
        Session::open_owned(bound, manifest, Deadlines::none()).map_err(|e| launch_failed(&e))?;
    say(format_args!(
        "launched bubblewrap pid {}; session `{session_id}` open",
        session.pid()
    ));
    let response = match session.call(tool.as_str(), input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("splashc run: `{tool}`: {}", chain(&e));
            if e.leaves_session() == SessionState::Usable {
                let _ = session.stop();
            }
            return Err(LAUNCH_FAILED);
        }
    };

    // `close_session` goes first: the worker exits while the result is
    // written out (which happens whether or not the close went through).
    let closing = session.send_close();
    let text = serde_json::to_string_pretty(&response).map_err(|e| {
        eprintln!("splashc run: cannot render the response: {e}");
        2
    })?;
    let mut out = std::io::stdout().lock();
    out.write_all(format!("{text}\n").as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| {
            eprintln!("splashc run: cannot write the output: {e}");
            2
        })?;

    let status = closing
        .and_then(|closing| closing.wait(Duration::from_secs(5)))
        .map_err(|e| {
            eprintln!("splashc run: closing the session: {}", chain(&e));
            LAUNCH_FAILED
        })?;
    say(format_args!(
        "worker closed; bubblewrap ended with {status}"
    ));
    match status {
        WorkerStatus::Exited(0) => Ok(()),
        _ => Err(LAUNCH_FAILED),
    }
}

/// Writes one status line to stderr with a single `write`: stderr is
/// unbuffered, so `eprintln!` would write each formatted piece separately.
fn say(line: std::fmt::Arguments<'_>) {
    let mut text = line.to_string();
    text.push('\n');
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// An error and its sources, `: `-separated.
/// `e` and its sources, each with control and bidirectional formatting
/// characters escaped (a source such as a JSON decoder's error may quote
/// the untrusted file).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = splashpol::text::escaped(&e.to_string()).to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&splashpol::text::escaped(&s.to_string()).to_string());
        source = s.source();
    }
    text
}
