//! `splashc test --battery POLICY [--manifest M] [--escape-probe PATH]
//! [--format F]`: runs the escape battery inside the sandbox a policy
//! produces on this host.
//!
//! The static escape probe (`splash-escape-probe`, found beside `splashc`
//! or given with `--escape-probe`) takes the worker's place in the policy's
//! own sandbox, exactly as `splashc test` places its test probe, and makes
//! every attempt it lists. The host side provides what the host attempts
//! aim at: a loopback TCP listener, an abstract unix socket and a canary
//! process. Each attempt names the layers that must stop it; the policy's
//! layers come from its checked model, and the verdict is the suite's
//! (`splash_escape_probe::verdict`): an attempt that works although one of
//! its layers is present is an escape.
//!
//! Exit status: 0 nothing escaped; 1 an attempt escaped (or the policy has
//! errors); 2 the battery could not run (the reason is printed).

use std::io::Read;
use std::os::linux::net::SocketAddrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use splash_escape_probe::verdict::{ALWAYS_ON, Line, Seen, Verdict, verdict};
use splash_protocol::{PrivatePipeWorkerBootstrap, SessionKey};
use splash_runtime::{
    BindOptions, BoundCommand, Deadlines, LaunchError, LoadedPolicy, WorkerStatus,
};
use splashpol::model::{FileRootKind, Policy, PrivateTmp, SeccompPolicy};
use splashpol::plan::LaunchPlan;

use crate::TestArgs;
use crate::emit::load_manifest;
use crate::exit::Exit;
use crate::test::{TestFormat, cannot, probe_manifest, with_probe};

/// A whole battery run takes at most this.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// One attempt as the probe lists it.
#[derive(Debug)]
struct Attempt {
    name: String,
    what: String,
    layers: Vec<String>,
}

/// One attempt's result in the policy's sandbox.
#[derive(Debug)]
struct Outcome {
    attempt: Attempt,
    seen: Seen,
    verdict: Verdict,
}

/// The escape probe: `--escape-probe`, or `splash-escape-probe` beside this
/// `splashc`.
fn escape_probe_path(args: &TestArgs) -> Result<PathBuf, Exit> {
    let path = match &args.escape_probe {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| cannot(format_args!("cannot find this program's directory: {e}")))?
            .with_file_name("splash-escape-probe"),
    };
    std::fs::canonicalize(&path).map_err(|e| {
        cannot(format_args!(
            "no escape probe at `{}` ({e}); build `splash-escape-probe` (statically linked) beside `splashc` or pass `--escape-probe PATH`",
            path.display()
        ))
    })
}

/// The layers of the sandbox `policy` produces, named as the probe's
/// attempts name them.
fn layers(policy: &Policy) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = ALWAYS_ON.to_vec();
    match policy.seccomp() {
        SeccompPolicy::Off => {}
        SeccompPolicy::DenyKnownEscapeSurface | SeccompPolicy::StrictAllowlist { .. } => {
            out.push("seccomp");
        }
    }
    if policy.runners().landlock_allow().is_some() {
        out.push("landlock");
    }
    if policy.runners().limits().is_some() {
        out.push("rlimits");
    }
    if policy.no_further_user_namespaces() {
        out.push("userns-lockdown");
    }
    if policy.bounded_writes() {
        out.push("bounded-writes");
    }
    match policy.tmp() {
        PrivateTmp::Bounded { .. } => out.push("tmp-size"),
        PrivateTmp::Off | PrivateTmp::Unbounded => {}
    }
    if scratch(policy).is_some() {
        out.push("tmpfs-size");
    }
    if policy.worker_identity().is_some() {
        out.push("identity");
    }
    out
}

/// The first tmpfs root, which the fill attempt writes into.
fn scratch(policy: &Policy) -> Option<String> {
    policy.file_roots().iter().find_map(|r| match r.kind {
        FileRootKind::Ephemeral { .. } => Some(r.destination.as_str().to_owned()),
        FileRootKind::Host { .. } => None,
    })
}

/// A host path `/proc/1/cmdline` must not name: the host directory the
/// worker comes from, else the escape probe's own directory. A path the
/// sandbox itself shows under the same name proves nothing when named (a
/// runtime mount at its own host path, as `runtime "/opt/x" at "/opt/x"`,
/// or one enclosing it or enclosed by it), so such a candidate is passed
/// over; with none left the attempt is not applicable.
fn host_path(policy: &Policy, probe: &Path) -> Option<String> {
    let worker = policy.worker().as_str();
    let worker_source = policy
        .runtime_mounts()
        .iter()
        .find(|m| {
            let d = m.destination.as_str();
            worker == d || worker.starts_with(&format!("{}/", d.trim_end_matches('/')))
        })
        .map(|m| m.source.as_str().to_owned());
    let probe_dir = probe.parent().map(|p| p.display().to_string());
    let shown: Vec<&str> = policy
        .runtime_mounts()
        .iter()
        .map(|m| m.destination.as_str())
        .chain(policy.file_roots().iter().map(|r| r.destination.as_str()))
        .chain(["/tmp", "/proc", "/dev", worker])
        .collect();
    [worker_source, probe_dir]
        .into_iter()
        .flatten()
        .find(|host| {
            !host.is_empty()
                && !shown
                    .iter()
                    .any(|d| d.starts_with(host.as_str()) || host.starts_with(d))
        })
}

fn list_attempts(probe: &Path) -> Result<Vec<Attempt>, Exit> {
    let out = Command::new(probe)
        .arg("list")
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .map_err(|e| cannot(format_args!("run `{} list`: {e}", probe.display())))?;
    if !out.status.success() {
        return Err(cannot(format_args!(
            "`{} list` failed ({})",
            probe.display(),
            out.status
        )));
    }
    let mut attempts = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            cannot(format_args!(
                "`{} list` printed a line that is not JSON ({e})",
                probe.display()
            ))
        })?;
        let (Some(name), Some(layers)) = (v["attempt"].as_str(), v["layers"].as_array()) else {
            return Err(cannot(format_args!(
                "`{} list` printed an entry without a name or layers: {v}",
                probe.display()
            )));
        };
        attempts.push(Attempt {
            name: name.to_owned(),
            what: v["what"].as_str().unwrap_or_default().to_owned(),
            layers: layers
                .iter()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect(),
        });
    }
    if attempts.is_empty() {
        return Err(cannot(format_args!(
            "`{} list` lists no attempt",
            probe.display()
        )));
    }
    Ok(attempts)
}

/// A host process the signal attempt must not reach: the probe itself,
/// waiting for its standard input to end.
struct Canary(Child);

impl Canary {
    fn start(probe: &Path) -> Result<Self, Exit> {
        Command::new(probe)
            .args(["all", "--only", "-"])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(Self)
            .map_err(|e| cannot(format_args!("start the host canary: {e}")))
    }

    fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The plan with the escape probe at the worker's path, making every
/// attempt with `options`.
fn battery_plan(
    plan: LaunchPlan,
    probe: &Path,
    policy: &Policy,
    options: &[String],
) -> Result<LaunchPlan, Exit> {
    let mut edit = with_probe(plan, probe, policy.worker())?.edit();
    edit.append_arguments(std::iter::once("all".to_owned()).chain(options.iter().cloned()));
    edit.finish()
        .map_err(|e| cannot(format_args!("the battery plan: {e}")))
}

pub fn run(args: &TestArgs) -> Exit {
    match battery_main(args) {
        Ok(code) | Err(code) => code,
    }
}

fn battery_main(args: &TestArgs) -> Result<Exit, Exit> {
    let loaded = LoadedPolicy::from_path(&args.policy).map_err(|e| match &e {
        LaunchError::Check {
            name,
            text,
            outcome,
        } => {
            crate::check::eprint_diagnostics(name, text, outcome);
            Exit::Rejected
        }
        LaunchError::Read { .. } => cannot(crate::run::chain(&e)),
        _ => {
            eprintln!("splashc test: {}", crate::run::chain(&e));
            Exit::Rejected
        }
    })?;
    let policy = &loaded.policy;
    if let SeccompPolicy::StrictAllowlist { .. } = policy.seccomp() {
        return Err(cannot(
            "the policy's strict allowlist does not list what the escape probe needs to start and fork one child per attempt; splashc never widens a policy to test it (the suite runs strict policies one launch per attempt, docs/escape-battery.md)",
        ));
    }
    let probe = escape_probe_path(args)?;
    let attempts = list_attempts(&probe)?;
    let user_manifest = match &args.manifest {
        Some(p) => Some(load_manifest(p)?),
        None => None,
    };
    let manifest = probe_manifest(policy, user_manifest.as_ref())?;
    let plan = loaded.plan(&manifest).map_err(|e| {
        eprintln!("splashc test: {}", crate::run::chain(&e));
        Exit::Rejected
    })?;

    // What the host attempts aim at.
    let tcp = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| cannot(format_args!("a loopback listener: {e}")))?;
    let port = tcp
        .local_addr()
        .map_err(|e| cannot(format_args!("the loopback listener's address: {e}")))?
        .port();
    let abstract_name = format!("splash-battery-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
        .map_err(|e| cannot(format_args!("an abstract socket address: {e}")))?;
    let _abstract = std::os::unix::net::UnixListener::bind_addr(&addr)
        .map_err(|e| cannot(format_args!("an abstract unix listener: {e}")))?;
    let mut canary = Canary::start(&probe)?;
    let mut options = vec![
        "--port".to_owned(),
        port.to_string(),
        "--abstract".into(),
        abstract_name,
        "--canary".into(),
        canary.0.id().to_string(),
    ];
    if let Some(host) = host_path(policy, &probe) {
        options.extend(["--host-hex".into(), hex(&host)]);
    }
    if let Some(s) = scratch(policy) {
        options.extend(["--scratch".into(), s]);
    }

    let tested = battery_plan(plan, &probe, policy, &options)?;
    let bound = BoundCommand::bind_with(tested, BindOptions::default()).map_err(|e| {
        cannot(format_args!(
            "bind refused the policy's sandbox: {}",
            crate::run::chain(&e)
        ))
    })?;
    let (lines, status) = launch(&bound, &manifest)?;
    let Some(ids) = lines.iter().find_map(|l| l.get("ids")).cloned() else {
        return Err(cannot(format_args!(
            "the escape probe did not start in the policy's sandbox ({status}); it must be linked statically, and the policy must let it run"
        )));
    };
    let present = layers(policy);
    let outcomes: Vec<Outcome> = attempts
        .into_iter()
        .map(|a| {
            let mut seen = lines
                .iter()
                .find(|l| l["attempt"] == a.name.as_str())
                .map_or_else(
                    || Seen::Refused(format!("no result ({status})")),
                    |v| {
                        Seen::from_line(&Line {
                            result: v["result"].as_str().unwrap_or_default(),
                            errno: v["errno"].as_str(),
                            signal: v["signal"].as_str(),
                            code: v["code"].as_i64(),
                            detail: v["detail"].as_str(),
                        })
                    },
                );
            if a.name == "kill-host-canary" && !matches!(seen, Seen::NotApplicable(_)) {
                seen = Seen::of_canary(canary.alive());
            }
            let verdict = verdict(&a.layers, &present, &seen);
            Outcome {
                attempt: a,
                seen,
                verdict,
            }
        })
        .collect();
    drop(tcp);
    print_report(args.format, policy.name(), &ids, &present, &outcomes);
    if outcomes.iter().any(|o| o.verdict == Verdict::Escaped) {
        Ok(Exit::Rejected)
    } else {
        Ok(Exit::Success)
    }
}

/// Launches `bound` (the probe reads its bootstrap to the end and ignores
/// it), collects its JSON lines and its exit status.
fn launch(
    bound: &BoundCommand,
    manifest: &splash_protocol::CapabilityManifest,
) -> Result<(Vec<Value>, WorkerStatus), Exit> {
    let key = SessionKey::generate()
        .map_err(|e| cannot(format_args!("cannot make a session key: {e}")))?;
    let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key);
    let (watchdog, stdin, mut stdout) = bound
        .spawn_watched(&boot, Deadlines::none())
        .map_err(|e| cannot(format_args!("launch: {}", crate::run::chain(&e))))?;
    drop(stdin);
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let status = match watchdog.wait_exit(RUN_TIMEOUT) {
        Ok(WorkerStatus::Running) => watchdog
            .stop()
            .map_err(|e| cannot(format_args!("stop the escape probe: {e}")))?,
        Ok(s) => s,
        Err(e) => return Err(cannot(format_args!("wait for the escape probe: {e}"))),
    };
    let out = reader.join().unwrap_or_default();
    let lines = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Ok((lines, status))
}

fn word(v: Verdict) -> &'static str {
    match v {
        Verdict::Held => "held",
        Verdict::Escaped => "escaped",
        Verdict::Allowed => "allowed",
        Verdict::NotApplicable => "n/a",
    }
}

/// The cell `docs/escape-battery.md` shows for the attempt.
fn cell(o: &Outcome) -> String {
    match (&o.seen, o.verdict) {
        (_, Verdict::Escaped) => "**ESCAPE**".to_owned(),
        (_, Verdict::Allowed) => "allowed".to_owned(),
        (_, Verdict::NotApplicable) => "n/a".to_owned(),
        (Seen::Worked(s) | Seen::Refused(s) | Seen::NotApplicable(s), Verdict::Held) => s.clone(),
    }
}

fn print_report(
    format: TestFormat,
    policy: &str,
    ids: &Value,
    present: &[&str],
    outcomes: &[Outcome],
) {
    let count = |v: Verdict| outcomes.iter().filter(|o| o.verdict == v).count();
    let (held, escaped, allowed, na) = (
        count(Verdict::Held),
        count(Verdict::Escaped),
        count(Verdict::Allowed),
        count(Verdict::NotApplicable),
    );
    let policy_layers: Vec<&str> = present
        .iter()
        .copied()
        .filter(|l| !ALWAYS_ON.contains(l))
        .collect();
    let mut text = String::new();
    match format {
        TestFormat::Human => {
            text.push_str(&format!(
                "policy `{}`: layers {}; the probe ran as uid {} gid {}\n\n| attempt | what | layers | result |\n|---|---|---|---|\n",
                splashpol::text::escaped(policy),
                if policy_layers.is_empty() {
                    "always-on only".to_owned()
                } else {
                    policy_layers.join(", ")
                },
                ids["uid"],
                ids["gid"]
            ));
            for o in outcomes {
                text.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    o.attempt.name,
                    o.attempt.what.replace('|', "\\|"),
                    if o.attempt.layers.is_empty() {
                        "none (accepted)".to_owned()
                    } else {
                        o.attempt.layers.join(", ")
                    },
                    cell(o)
                ));
            }
            text.push_str(&format!(
                "\n{} attempts: {held} held, {escaped} escaped, {allowed} allowed (none of their layers in the policy), {na} n/a\n",
                outcomes.len()
            ));
        }
        TestFormat::Tap => {
            text.push_str(&format!("1..{}\n", outcomes.len()));
            for (i, o) in outcomes.iter().enumerate() {
                let ok = if o.verdict == Verdict::Escaped {
                    "not ok"
                } else {
                    "ok"
                };
                text.push_str(&format!("{ok} {} - {}", i + 1, o.attempt.name));
                match o.verdict {
                    Verdict::Allowed => {
                        text.push_str(" # skip allowed: none of its layers in the policy")
                    }
                    Verdict::NotApplicable => text.push_str(" # skip n/a"),
                    Verdict::Held | Verdict::Escaped => {}
                }
                text.push('\n');
                text.push_str(&format!("  # {}: {}\n", o.attempt.what, cell(o)));
            }
        }
        TestFormat::Junit => {
            text.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            text.push_str(&format!(
                "<testsuite name=\"{}\" tests=\"{}\" failures=\"{escaped}\" skipped=\"{}\">\n",
                crate::test::xml(policy),
                outcomes.len(),
                allowed + na
            ));
            for o in outcomes {
                text.push_str(&format!(
                    "  <testcase name=\"{}\" classname=\"battery\">",
                    crate::test::xml(&o.attempt.name)
                ));
                let message = crate::test::xml(&format!("{}: {}", o.attempt.what, cell(o)));
                match o.verdict {
                    Verdict::Held => {}
                    Verdict::Escaped => text.push_str(&format!("<failure message=\"{message}\"/>")),
                    Verdict::Allowed | Verdict::NotApplicable => {
                        text.push_str(&format!("<skipped message=\"{message}\"/>"))
                    }
                }
                text.push_str("</testcase>\n");
            }
            text.push_str("</testsuite>\n");
        }
        TestFormat::Json => {
            let list: Vec<Value> = outcomes
                .iter()
                .map(|o| {
                    json!({
                        "attempt": o.attempt.name,
                        "what": o.attempt.what,
                        "layers": o.attempt.layers,
                        "status": word(o.verdict),
                        "result": cell(o),
                    })
                })
                .collect();
            let v = json!({
                "policy": policy,
                "layers": present,
                "ids": ids,
                "attempts": list,
                "held": held,
                "escaped": escaped,
                "allowed": allowed,
                "not_applicable": na,
            });
            text = format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
    }
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
