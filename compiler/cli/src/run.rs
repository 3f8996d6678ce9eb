//! `splashc run POLICY [--manifest FILE] [--invoke TOOL [--input JSON]]...
//! [--calls FILE]`.
//!
//! A thin user of the runtime's host API ([`splash_runtime::LoadedPolicy`],
//! [`splash_runtime::Session`]): check (or load a compiled artifact),
//! activate, lower for this host's architecture, bind, spawn under the
//! watchdog (the policy's `watchdog` block is enforced) with a fresh CSPRNG
//! session key, open the authenticated session, make the calls in order,
//! print each authenticated result as one JSON line on stdout, close, reap.
//!
//! The calls are repeated `--invoke TOOL --input JSON` pairs (an `--input`
//! belongs to the `--invoke` before it; without one the input is `{}`), or
//! `--calls FILE` (`-` for standard input): one JSON object per line,
//! `{"tool": TOOL, "input": JSON}`, `input` optional. The first call that
//! fails ends the run: a refusal decided before anything was sent leaves
//! the session usable, so it is still closed with `close_session`; a
//! poisoned session's worker is already stopped and reaped.
//!
//! Without `--manifest` a manifest is generated for a fresh session: a random
//! session id, one grant per tool called (allowing as many calls as the run
//! makes of it), and every file root the policy registers. The run says so
//! on stderr. Without any call the call is `probe.report` with input `{}`
//! (the bundled probe worker's report).
//!
//! With `--expect-digest HEX` the policy file must have that BLAKE3 digest
//! ([`LoadedPolicy::from_path_expecting`]), or the run is refused (exit 1)
//! naming both digests before the file is parsed.
//!
//! Exit status: 0 every call succeeded and the worker exited cleanly; 1 the
//! policy or manifest has errors or is not the pinned file; 2 usage or I/O
//! problems (a malformed `--calls` line included); 3 bind, launch, session
//! or tool failure.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use clap::ArgMatches;
use serde_json::Value;
use splash_protocol::{CapabilityManifest, Grant, GrantFormat, Resource, ResourceKind, Token};
use splash_runtime::{
    BindOptions, BoundCommand, CallError, Deadlines, LaunchError, LoadedPolicy, Session,
    SessionState, WorkerStatus,
};
use splashpol::model::Policy;

use crate::RunArgs;
use crate::emit::{load_manifest, read_bounded};
use crate::exit::Exit;

/// The default tool: the probe's report.
const DEFAULT_TOOL: &str = "probe.report";
/// The largest `--calls` file read.
const MAX_CALLS_BYTES: u64 = 16 * 1024 * 1024;
/// How long a closed worker is given to exit before it is force-stopped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// One call of a run, in order.
#[derive(Debug)]
pub struct Call {
    /// The tool.
    pub tool: Token,
    /// Its input.
    pub input: Value,
}

pub fn run(args: &RunArgs, matches: Option<&ArgMatches>) -> Exit {
    match run_main(args, matches) {
        Ok(()) => Exit::Success,
        Err(code) => code,
    }
}

/// `bytes` bytes of the operating system's CSPRNG (`getrandom(2)`), as hex.
pub fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| format!("cannot read the random source: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A manifest for a fresh session (its id prefixed `prefix`) granting each
/// of `tools` as many calls as given and every registered root.
pub fn generated_manifest(
    policy: &Policy,
    prefix: &str,
    tools: &BTreeMap<Token, u32>,
) -> Result<CapabilityManifest, String> {
    let session = Token::new(format!("{prefix}-{}", random_hex(8)?))
        .map_err(|e| format!("cannot make a session id: {e}"))?;
    let resources = policy
        .file_roots()
        .iter()
        .map(|r| Resource::new(ResourceKind::FileRoot, r.id.clone()))
        .collect::<BTreeSet<_>>();
    let grants = tools
        .iter()
        .map(|(tool, calls)| {
            let mut grant = Grant::new(tool.clone(), GrantFormat::Json);
            grant.max_calls = (*calls).max(1);
            grant.max_input_bytes = 64 * 1024;
            grant.max_output_bytes = 1024 * 1024;
            grant.resources = resources.clone();
            grant
        })
        .collect();
    Ok(CapabilityManifest {
        protocol_version: splash_protocol::PROTOCOL_VERSION,
        session_id: session,
        grants,
    })
}

fn launch_failed(e: &LaunchError) -> Exit {
    eprintln!("splashc run: {}", chain(e));
    launch_status(e)
}

/// The exit status of a launch error: 2 for a file that cannot be read, 1
/// for a policy or manifest problem, 3 for anything else.
pub fn launch_status(e: &LaunchError) -> Exit {
    match e {
        LaunchError::Read { .. } => Exit::Usage,
        LaunchError::Artifact { .. }
        | LaunchError::DigestMismatch { .. }
        | LaunchError::NotUtf8 { .. }
        | LaunchError::Check { .. }
        | LaunchError::Manifest(_)
        | LaunchError::Activation(_)
        | LaunchError::Lower(_) => Exit::Rejected,
        _ => Exit::Failed,
    }
}

fn usage(message: impl std::fmt::Display) -> Exit {
    eprintln!("splashc run: {message}");
    Exit::Usage
}

/// The `--invoke`/`--input` pairs in command-line order: each `--input`
/// belongs to the `--invoke` before it.
fn paired_calls(args: &RunArgs, matches: Option<&ArgMatches>) -> Result<Vec<Call>, Exit> {
    let invoke_at: Vec<usize> = matches
        .and_then(|m| m.indices_of("invoke"))
        .map(Iterator::collect)
        .unwrap_or_default();
    let input_at: Vec<usize> = matches
        .and_then(|m| m.indices_of("input"))
        .map(Iterator::collect)
        .unwrap_or_default();
    if invoke_at.len() != args.invoke.len() || input_at.len() != args.input.len() {
        return Err(usage(
            "cannot tell which `--input` belongs to which `--invoke`",
        ));
    }
    let mut inputs: Vec<Option<&str>> = vec![None; args.invoke.len()];
    for (at, text) in input_at.iter().zip(&args.input) {
        let Some(owner) = invoke_at.iter().rposition(|i| i < at) else {
            return Err(usage("`--input` must follow the `--invoke` it belongs to"));
        };
        if inputs[owner].replace(text).is_some() {
            return Err(usage(format_args!(
                "`--invoke {}` has more than one `--input`",
                splashpol::text::escaped(&args.invoke[owner])
            )));
        }
    }
    args.invoke
        .iter()
        .zip(inputs)
        .enumerate()
        .map(|(n, (tool, input))| {
            let tool = Token::new(tool.as_str()).map_err(|e| {
                usage(format_args!(
                    "`--invoke {}` is not a tool name: {e}",
                    splashpol::text::escaped(tool)
                ))
            })?;
            let input = match input {
                Some(text) => serde_json::from_str(text).map_err(|e| {
                    usage(format_args!(
                        "the `--input` of call {} is not JSON: {e}",
                        n + 1
                    ))
                })?,
                None => Value::Object(serde_json::Map::new()),
            };
            Ok(Call { tool, input })
        })
        .collect()
}

/// The calls of a `--calls` file: one `{"tool", "input"?}` object per line.
fn calls_from_file(path: &Path) -> Result<Vec<Call>, Exit> {
    let bytes = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_CALLS_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                usage(format_args!(
                    "cannot read the calls from standard input: {e}"
                ))
            })?;
        if bytes.len() as u64 > MAX_CALLS_BYTES {
            return Err(usage(format_args!(
                "the calls on standard input exceed {MAX_CALLS_BYTES} bytes"
            )));
        }
        bytes
    } else {
        read_bounded(path, "calls", MAX_CALLS_BYTES)?
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        usage(format_args!(
            "calls `{}` are not UTF-8: {e}",
            path.display()
        ))
    })?;
    let calls = text
        .lines()
        .enumerate()
        .map(|(n, line)| {
            parse_call(line).map_err(|why| {
                usage(format_args!(
                    "calls `{}` line {}: {why}",
                    path.display(),
                    n + 1
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if calls.is_empty() {
        return Err(usage(format_args!(
            "calls `{}` has no call",
            path.display()
        )));
    }
    Ok(calls)
}

/// One call line: a JSON object with a string `tool` and an optional
/// `input`, nothing else.
pub fn parse_call(line: &str) -> Result<Call, String> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| format!("not JSON: {}", splashpol::text::escaped(&e.to_string())))?;
    let Value::Object(mut fields) = value else {
        return Err("not a call object `{\"tool\": TOOL, \"input\": JSON}`".to_owned());
    };
    if let Some(key) = fields.keys().find(|k| *k != "tool" && *k != "input") {
        return Err(format!(
            "unknown field `{}`; a call has `tool` and `input`",
            splashpol::text::escaped(key)
        ));
    }
    let tool = match fields.remove("tool") {
        Some(Value::String(name)) => Token::new(name.as_str()).map_err(|e| {
            format!(
                "`{}` is not a tool name: {e}",
                splashpol::text::escaped(&name)
            )
        })?,
        Some(_) => return Err("`tool` must be a string".to_owned()),
        None => return Err("a call needs a `tool`".to_owned()),
    };
    let input = fields
        .remove("input")
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    Ok(Call { tool, input })
}

/// How many calls of each tool `calls` makes.
pub fn call_counts<'a>(calls: impl IntoIterator<Item = &'a Token>) -> BTreeMap<Token, u32> {
    let mut counts = BTreeMap::new();
    for tool in calls {
        let n: &mut u32 = counts.entry(tool.clone()).or_default();
        *n = n.saturating_add(1);
    }
    counts
}

fn run_main(args: &RunArgs, matches: Option<&ArgMatches>) -> Result<(), Exit> {
    let calls = requested_calls(args, matches)?;
    let loaded = load(args)?;
    let manifest = run_manifest(args, &loaded, &calls)?;

    // Activate, lower, bind; then spawn under the watchdog and open.
    let bound = loaded
        .bind(&manifest, BindOptions::default())
        .map_err(|e| launch_failed(&e))?;
    say_bound(&bound);
    let session_id = manifest.session_id.clone();
    let session =
        Session::open_owned(bound, manifest, Deadlines::none()).map_err(|e| launch_failed(&e))?;
    say(format_args!(
        "launched bubblewrap pid {}; session `{session_id}` open",
        session.pid()
    ));
    make_calls(session, calls)
}

/// The calls of `--calls`, or of the `--invoke`/`--input` pairs; the
/// bundled probe's report when there are none.
fn requested_calls(args: &RunArgs, matches: Option<&ArgMatches>) -> Result<Vec<Call>, Exit> {
    let mut calls = match &args.calls {
        Some(path) => calls_from_file(path)?,
        None => paired_calls(args, matches)?,
    };
    if calls.is_empty() {
        calls.push(Call {
            tool: Token::new(DEFAULT_TOOL).map_err(usage)?,
            input: Value::Object(serde_json::Map::new()),
        });
    }
    Ok(calls)
}

/// The policy, checked (a source) or validated (an artifact, against
/// `--expect-digest` when given); its diagnostics or warnings on stderr.
fn load(args: &RunArgs) -> Result<LoadedPolicy, Exit> {
    let loaded = match &args.expect_digest {
        Some(hex) if !splashpol::artifact::is_hex_digest(hex) => {
            eprintln!(
                "splashc run: `--expect-digest {}` is not a BLAKE3 digest: give 64 lowercase hex digits (`b3sum POLICY`)",
                splashpol::text::escaped(hex)
            );
            return Err(Exit::Usage);
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
            Exit::Rejected
        }
        _ => launch_failed(&e),
    })?;
    if !loaded.warnings.is_empty() {
        eprint!("{}", loaded.warnings);
    }
    Ok(loaded)
}

/// The manifest of `--manifest`, or one generated for the calls (said on
/// stderr); every call's tool must be granted.
fn run_manifest(
    args: &RunArgs,
    loaded: &LoadedPolicy,
    calls: &[Call],
) -> Result<CapabilityManifest, Exit> {
    let manifest = match &args.manifest {
        Some(path) => load_manifest(path)?,
        None => {
            let counts = call_counts(calls.iter().map(|c| &c.tool));
            let m = generated_manifest(&loaded.policy, "run", &counts).map_err(usage)?;
            let roots: Vec<String> = loaded
                .policy
                .file_roots()
                .iter()
                .map(|r| format!("`{}`", r.id))
                .collect();
            let tools: Vec<String> = counts.keys().map(|t| format!("`{t}`")).collect();
            say(format_args!(
                "note: no manifest given; generated session `{}` granting {} and activating every registered file root ({})",
                m.session_id,
                tools.join(", "),
                if roots.is_empty() {
                    "none".to_owned()
                } else {
                    roots.join(", ")
                }
            ));
            m
        }
    };
    if let Some(call) = calls
        .iter()
        .find(|c| manifest.grant(c.tool.as_str()).is_none())
    {
        eprintln!(
            "splashc run: the manifest does not grant `{}`; name a granted tool with `--invoke`",
            call.tool
        );
        return Err(Exit::Rejected);
    }
    Ok(manifest)
}

/// Says what bind decided: pins, how Bubblewrap is launched, the filter
/// and the deadlines.
fn say_bound(bound: &BoundCommand) {
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
}

/// Makes the calls in order, each result a line on stdout, and closes:
/// `close_session` goes out before the last result is written.
fn make_calls(mut session: Session, mut calls: Vec<Call>) -> Result<(), Exit> {
    let total = calls.len();
    let Some(last) = calls.pop() else {
        return Err(usage("there is no call to make"));
    };
    let mut out = std::io::stdout().lock();
    for (n, call) in calls.into_iter().enumerate() {
        let response = match session.call(call.tool.as_str(), call.input) {
            Ok(v) => v,
            Err(e) => return Err(call_failed(session, &e, n, total, &call.tool)),
        };
        if let Err(code) = write_response(&mut out, &response) {
            let _ = session.close(CLOSE_GRACE);
            return Err(code);
        }
    }
    let response = match session.call(last.tool.as_str(), last.input) {
        Ok(v) => v,
        Err(e) => return Err(call_failed(session, &e, total - 1, total, &last.tool)),
    };
    // `close_session` goes first: the worker exits while the last result
    // is written out (which happens whether or not the close went through).
    let closing = session.send_close();
    write_response(&mut out, &response)?;
    let status = closing
        .and_then(|closing| closing.wait(CLOSE_GRACE))
        .map_err(|e| {
            eprintln!("splashc run: closing the session: {}", chain(&e));
            Exit::Failed
        })?;
    say(format_args!(
        "worker closed; bubblewrap ended with {status}"
    ));
    match status {
        WorkerStatus::Exited(0) => Ok(()),
        _ => Err(Exit::Failed),
    }
}

/// Reports call `n` (0-based) of `total` failing and ends the session: a
/// refusal decided before anything was sent leaves it healthy, so it is
/// closed as any other; a poisoned session's worker is already reaped.
fn call_failed(session: Session, e: &CallError, n: usize, total: usize, tool: &Token) -> Exit {
    let which = if total == 1 {
        format!("`{tool}`")
    } else {
        format!("call {} of {total} (`{tool}`)", n + 1)
    };
    eprintln!("splashc run: {which}: {}", chain(e));
    if e.leaves_session() == SessionState::Usable {
        match session.close(CLOSE_GRACE) {
            Ok(status) => say(format_args!(
                "worker closed; bubblewrap ended with {status}"
            )),
            Err(e) => eprintln!("splashc run: closing the session: {}", chain(&e)),
        }
    }
    Exit::Failed
}

/// Writes `response` as one JSON line and flushes it.
fn write_response(out: &mut impl Write, response: &Value) -> Result<(), Exit> {
    let line = serde_json::to_string(response).map_err(|e| {
        eprintln!("splashc run: cannot render the response: {e}");
        Exit::Usage
    })?;
    write_line(out, &line).map_err(|e| {
        eprintln!("splashc run: cannot write the output: {e}");
        Exit::Usage
    })
}

fn write_line(out: &mut impl Write, line: &str) -> std::io::Result<()> {
    out.write_all(format!("{line}\n").as_bytes())?;
    out.flush()
}
/// Writes one status line to stderr with a single `write`: stderr is
/// unbuffered, so `eprintln!` would write each formatted piece separately.
pub fn say(line: std::fmt::Arguments<'_>) {
    let mut text = line.to_string();
    text.push('\n');
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// An error and its sources, `: `-separated.
/// `e` and its sources, each with control and bidirectional formatting
/// characters escaped (a source such as a JSON decoder's error may quote
/// the untrusted file).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = splashpol::text::escaped(&e.to_string()).to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&splashpol::text::escaped(&s.to_string()).to_string());
        source = s.source();
    }
    text
}
