//! `splashc test POLICY [--manifest M] [--probe PATH] [--format F]`: checks
//! each entry of the policy's `expect` block from inside the sandbox the
//! policy produces on this host.
//!
//! The runtime library launches the static test probe (`splash-probe`,
//! found beside `splashc` or given with `--probe`) at the worker's path, in
//! the policy's own sandbox: the plan is the one `splashc run` would launch
//! with only the worker's file (and its fixed arguments) replaced, so every
//! mount, runner, Landlock list, seccomp filter, limit and cgroup is the
//! policy's. A second, control launch removes the layers that should stop
//! each denied or hidden attempt (the seccomp filter, `--disable-userns`,
//! the Landlock runner, the read-only mount or the missing mount) and makes
//! the same attempts: an expectation holds only when its attempt fails in
//! the sandbox and succeeds in the control, so none passes vacuously.
//!
//! Exit status: 0 every expectation held; 1 one failed (or the policy has
//! errors, such as an expectation it can never meet); 2 the test could not
//! run or could not prove an expectation on this host (the reason is
//! printed).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use splash_broker::{Catalog, CatalogKind, Entry, HostBroker, Method};
use splash_protocol::{CapabilityManifest, Grant, GrantFormat, Resource, ResourceKind, Token};
use splash_runtime::{BindOptions, BoundCommand, Deadlines, LaunchError, LoadedPolicy, Session};
use splashpol::expect::{ExpectKind, Expectation};
use splashpol::model::{BrokerCatalog, HostPath, Policy, SandboxPath};
use splashpol::plan::{BwrapOp, LaunchPlan, MountSource};

use crate::TestArgs;
use crate::emit::load_manifest;
use crate::exit::Exit;

/// The probe tools a test session is granted.
const PROBE_TOOLS: [&str; 6] = [
    "probe.path",
    "probe.write",
    "probe.exec",
    "probe.syscall",
    "probe.try",
    "probe.fork",
];

/// Output format of `splashc test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestFormat {
    Human,
    Tap,
    Junit,
    Json,
}

/// How one expectation came out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// The attempt came out as expected, and its control (if it needs one)
    /// shows that the layer under test is what made it so.
    Held,
    /// The attempt did not come out as expected.
    Failed,
    /// The attempt came out as expected, but the control did not show that
    /// the policy's layer is the reason: not proven on this host.
    Unproven,
}

#[derive(Debug)]
struct Outcome {
    text: String,
    line: usize,
    verdict: Verdict,
    /// What the attempt in the sandbox gave.
    detail: String,
    /// What the control attempt gave, when the expectation has one.
    control: Option<String>,
}

/// `splashc test` without `--battery` (`battery::run` has that one).
pub fn run(args: &TestArgs) -> Exit {
    match test_main(args) {
        Ok(code) => code,
        Err(code) => code,
    }
}

/// Reports why the test could not run and returns status 2.
pub(crate) fn cannot(reason: impl std::fmt::Display) -> Exit {
    eprintln!("splashc test: cannot run: {reason}");
    Exit::Usage
}

/// The probe: `--probe`, or `splash-probe` beside this `splashc`.
fn probe_path(args: &TestArgs) -> Result<PathBuf, Exit> {
    let path = match &args.probe {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| cannot(format_args!("cannot find this program's directory: {e}")))?
            .with_file_name("splash-probe"),
    };
    let canonical = std::fs::canonicalize(&path).map_err(|e| {
        cannot(format_args!(
            "no test probe at `{}` ({e}); build `splash-probe` beside `splashc` or pass `--probe PATH`",
            path.display()
        ))
    })?;
    Ok(canonical)
}

fn test_main(args: &TestArgs) -> Result<Exit, Exit> {
    // The policy, read once (to the policy bound, a regular file only): its
    // checked form (errors are exit 1) and its expectations come from the
    // same bytes.
    let bytes = crate::emit::read_policy(&args.policy)?;
    let name = args.policy.display().to_string();
    let loaded = LoadedPolicy::from_bytes(&name, bytes.clone()).map_err(|e| match &e {
        LaunchError::Check {
            name,
            text,
            outcome,
        } => {
            crate::check::eprint_diagnostics(name, text, outcome);
            eprintln!(
                "splashc test: the policy has errors (an `expect` entry it can never meet is `splash::check::impossible-expectation`)"
            );
            Exit::Rejected
        }
        LaunchError::Read { .. } => cannot(crate::run::chain(&e)),
        _ => {
            eprintln!("splashc test: {}", crate::run::chain(&e));
            Exit::Rejected
        }
    })?;
    let source = String::from_utf8(bytes).map_err(|_| {
        cannot("`splashc test` needs the policy's source (a compiled artifact carries no `expect` block)")
    })?;
    let Some((_, expectations)) = splashpol::expect::of_source(&source) else {
        return Err(cannot(
            "`splashc test` needs the policy's source (a compiled artifact carries no `expect` block)",
        ));
    };
    if expectations.is_empty() {
        return Err(cannot(
            "the policy has no `expect` block: nothing to test (docs/testing-policies.md)",
        ));
    }
    let probe = probe_path(args)?;
    let user_manifest = match &args.manifest {
        Some(p) => Some(load_manifest(p)?),
        None => None,
    };
    let manifest = probe_manifest(&loaded.policy, user_manifest.as_ref())?;
    // A strict allowlist that leaves out what the probe needs is refused,
    // or, when asked, widened by exactly that and said so.
    let (loaded, widened) = match missing_startup_syscalls(&loaded.policy) {
        None => (loaded, Vec::new()),
        Some(missing) if args.allow_probe_syscalls => {
            let text = widened_source(&source, &missing).map_err(cannot)?;
            let widened = LoadedPolicy::from_bytes(&name, text.into_bytes()).map_err(|e| {
                cannot(format_args!(
                    "the policy widened by `--allow-probe-syscalls`: {}",
                    crate::run::chain(&e)
                ))
            })?;
            (widened, missing)
        }
        Some(missing) => {
            return Err(cannot(format_args!(
                "the strict allowlist does not list {} that the test probe needs to start and make its attempts ({}); splashc never widens a policy to test it unless `--allow-probe-syscalls` asks, and then names what it added",
                if missing.len() == 1 {
                    "a syscall"
                } else {
                    "syscalls"
                },
                missing.join(" ")
            )));
        }
    };
    let plan = loaded.plan(&manifest).map_err(|e| {
        eprintln!("splashc test: {}", crate::run::chain(&e));
        Exit::Rejected
    })?;

    // The policy's own sandbox, with the probe at the worker's path.
    // As root without an identity, the worker is host uid 0.
    let worker_is_host_root = crate::sys::effective_uid() == 0 && plan.identity().is_none();
    let tested = with_probe(plan.clone(), &probe, loaded.policy.worker())?;
    let results = attempts(tested, &manifest, &expectations)
        .map_err(|reason| cannot(format_args!("the sandbox of the policy: {reason}")))?;
    // The control: the same sandbox without the layers under test.
    let controls = if expectations.iter().any(needs_control) {
        let (control_plan, notes) = control_plan(plan, &probe, &loaded.policy, &expectations)?;
        let found = attempts(control_plan, &manifest, &expectations)
            .map_err(|reason| cannot(format_args!("the control launch: {reason}")))?;
        Some((found, notes))
    } else {
        None
    };

    let outcomes: Vec<Outcome> = expectations
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let control = controls
                .as_ref()
                .map(|(found, notes)| (&found[i], &notes[i]));
            let mut outcome = judge(x, &source, &results[i], control);
            if matches!(x.kind, ExpectKind::ProcessesMax(_))
                && outcome.verdict == Verdict::Failed
                && worker_is_host_root
            {
                outcome.detail.push_str(
                    ": the worker ran as host uid 0, for which the kernel does not apply the `processes` rlimit (RLIMIT_NPROC); an `identity` statement or a cgroup `pids` limit bounds it",
                );
            }
            if let ExpectKind::SyscallDenied(n) = &x.kind
                && widened.contains(&n.as_str())
            {
                outcome.verdict = Verdict::Unproven;
                outcome.detail = format!(
                    "`{n}` was added to the strict allowlist by `--allow-probe-syscalls`, so this launch cannot show it denied"
                );
                outcome.control = None;
            }
            outcome
        })
        .collect();
    print_report(args.format, loaded.policy.name(), &widened, &outcomes);
    let code = if outcomes.iter().any(|o| o.verdict == Verdict::Failed) {
        Exit::Rejected
    } else if outcomes.iter().any(|o| o.verdict == Verdict::Unproven) {
        Exit::Usage
    } else {
        Exit::Success
    };
    Ok(code)
}

/// A manifest for the probe: the session and file roots of `user` (or,
/// without one, a fresh session with every registered root), granting the
/// probe's tools.
pub(crate) fn probe_manifest(
    policy: &Policy,
    user: Option<&CapabilityManifest>,
) -> Result<CapabilityManifest, Exit> {
    let (session_id, resources) = match user {
        Some(m) => (
            m.session_id.clone(),
            m.grants
                .iter()
                .flat_map(|g| g.resources.iter().cloned())
                .collect::<BTreeSet<_>>(),
        ),
        None => {
            let mut buf = [0u8; 8];
            getrandom::fill(&mut buf)
                .map_err(|e| cannot(format_args!("cannot read the random source: {e}")))?;
            let hex: String = buf.iter().map(|b| format!("{b:02x}")).collect();
            let id = Token::new(format!("test-{hex}"))
                .map_err(|e| cannot(format_args!("cannot make a session id: {e}")))?;
            let roots = policy
                .file_roots()
                .iter()
                .map(|r| Resource::new(ResourceKind::FileRoot, r.id.clone()));
            let origins = policy.network_broker().into_iter().flat_map(|b| {
                b.ids
                    .iter()
                    .map(|id| Resource::new(ResourceKind::NetworkOrigin, id.clone()))
            });
            (id, roots.chain(origins).collect())
        }
    };
    let mut grants = Vec::new();
    for tool in PROBE_TOOLS {
        let tool = Token::new(tool).map_err(|e| cannot(format_args!("tool name: {e}")))?;
        let mut g = Grant::new(tool, GrantFormat::Json);
        g.max_calls = 4096;
        g.max_input_bytes = 64 * 1024;
        g.max_output_bytes = 1024 * 1024;
        g.resources = resources.clone();
        grants.push(g);
    }
    Ok(CapabilityManifest {
        protocol_version: splash_protocol::PROTOCOL_VERSION,
        session_id,
        grants,
    })
}

/// The syscalls the probe makes to start, serve its session and make its
/// attempts (measured on x86_64 with `strace -f`), when a strict allowlist
/// leaves some of them out.
fn missing_startup_syscalls(policy: &Policy) -> Option<Vec<&'static str>> {
    let splashpol::model::SeccompPolicy::StrictAllowlist { syscalls } = policy.seccomp() else {
        return None;
    };
    let listed: BTreeSet<&str> = syscalls.iter().map(|s| s.as_str()).collect();
    let arch = splash_seccomp::Arch::host();
    let missing: Vec<&'static str> = PROBE_SYSCALLS
        .iter()
        .copied()
        .filter(|s| !listed.contains(s) && splash_seccomp::denied_syscall(s).is_none())
        .filter(|s| arch.is_some_and(|a| splash_seccomp::syscall_number(a, s).is_some()))
        .collect();
    (!missing.is_empty()).then_some(missing)
}

/// `source` with `missing` added to its strict allowlist, inserted before
/// the list's closing brace so every line keeps its number (the report names
/// the lines of the expectations).
fn widened_source(source: &str, missing: &[&str]) -> Result<String, String> {
    let outline = splashpol::syntax::Outline::parse(source)
        .ok_or_else(|| "the policy does not parse".to_owned())?;
    let end = outline
        .statements()
        .find_map(|stmt| stmt.strict_allowlist().map(|_| stmt.span().end))
        .filter(|&end| source[..end].ends_with('}'))
        .ok_or_else(|| "no strict allowlist to widen".to_owned())?;
    let mut out = source.to_owned();
    out.insert_str(end - 1, &format!(" {} ", missing.join(" ")));
    Ok(out)
}

/// What the probe calls from its start to its last attempt, measured on
/// x86_64 with `strace -f` over `splashc test` runs of every kind of
/// expectation: the attempts themselves (`unshare`, `socket`, `bpf`, ...)
/// are left out, since a filter that kills them answers the expectation.
const PROBE_SYSCALLS: &[&str] = &[
    "access",
    "arch_prctl",
    "brk",
    "clock_nanosleep",
    "clone",
    "close",
    "dup2",
    "execve",
    "exit",
    "exit_group",
    "fcntl",
    "fsync",
    "futex",
    "getdents64",
    "getegid",
    "geteuid",
    "getgid",
    "getpid",
    "getppid",
    "getrandom",
    "gettid",
    "getuid",
    "ioctl",
    "madvise",
    "mmap",
    "mprotect",
    "munmap",
    "newfstatat",
    "openat",
    "pipe2",
    "poll",
    "prctl",
    "pread64",
    "prlimit64",
    "read",
    "readlink",
    "rseq",
    "rt_sigaction",
    "rt_sigprocmask",
    "sched_getaffinity",
    "set_robust_list",
    "set_tid_address",
    "sigaltstack",
    "statx",
    "unlink",
    "wait4",
    "write",
];

/// The plan with the probe in place of the worker's file and no worker
/// arguments.
pub(crate) fn with_probe(
    plan: LaunchPlan,
    probe: &Path,
    worker: &SandboxPath,
) -> Result<LaunchPlan, Exit> {
    let probe_host = HostPath::new(probe.to_string_lossy().into_owned())
        .map_err(|e| cannot(format_args!("the probe's path `{}`: {e}", probe.display())))?;
    let mut edit = plan.edit();
    edit.replace_worker(probe_host, worker)
        .map_err(|e| cannot(format_args!("the test plan: {e}")))?;
    edit.finish()
        .map_err(|e| cannot(format_args!("the test plan: {e}")))
}

fn needs_control(x: &Expectation) -> bool {
    matches!(
        x.kind,
        ExpectKind::ReadOnly(_)
            | ExpectKind::Hidden(_)
            | ExpectKind::ExecDenied(_)
            | ExpectKind::SyscallDenied(_)
            | ExpectKind::UserNamespacesNone
    )
}

/// The control plan: the tested plan without the seccomp filter, without
/// `--disable-userns`, without the Landlock runner, with a tmpfs over each
/// `read-only` directory (the worker's and runners' files within it bound
/// back) and the host's object bound at each `hidden` path.
/// Also, per expectation, why it has no control (when it cannot have one).
fn control_plan(
    plan: LaunchPlan,
    probe: &Path,
    policy: &Policy,
    expectations: &[Expectation],
) -> Result<(LaunchPlan, Vec<Option<String>>), Exit> {
    // What each path is reached through in the tested sandbox (the probe
    // in the worker's place), before any control mount is added.
    let tested = with_probe(plan, probe, policy.worker())?;
    let mut notes = vec![None; expectations.len()];
    let mut edit = tested.clone().edit();
    // Seccomp: from Bubblewrap, or from a runner's descriptor handoff.
    edit.remove_seccomp();
    // `--disable-userns` comes only with a required user namespace.
    edit.remove_user_namespace_lockdown();
    let landlock = match policy.runners() {
        splashpol::model::Runners::Separate {
            landlock: Some(l), ..
        } => Some(&l.path),
        _ => None,
    };
    let combined = matches!(policy.runners(), splashpol::model::Runners::Combined { .. });
    if let Some(path) = landlock {
        edit.remove_runner(path);
    }
    for (n, x) in expectations.iter().enumerate() {
        match &x.kind {
            ExpectKind::ReadOnly(p) => {
                let is_dir = host_behind(&tested, p)
                    .is_some_and(|h| std::fs::metadata(h).is_ok_and(|m| m.is_dir()));
                if !is_dir {
                    notes[n] = Some(format!(
                        "no control: `{p}` is not a directory, so no tmpfs can stand in for its mount"
                    ));
                    continue;
                }
                // The programs the control still executes (the Landlock
                // runner is gone from it) are bound back into the tmpfs
                // from the host files behind them (the worker's is the
                // probe).
                // The one-hop runner keeps applying Landlock in the
                // control, so its allow-exec targets are bound back too.
                let one_hop_targets = policy
                    .runners()
                    .landlock_allow()
                    .into_iter()
                    .flatten()
                    .filter(|_| combined);
                let mut kept = Vec::new();
                for prog in launch_programs(policy).into_iter().chain(one_hop_targets) {
                    if !prog.is_within(p) || landlock == Some(prog) {
                        continue;
                    }
                    if prog == p {
                        notes[n] = Some(format!(
                            "no control: `{p}` is itself a program of the launch"
                        ));
                        break;
                    }
                    let host = host_behind(&tested, prog)
                        .ok_or_else(|| "no host file is behind it".to_owned())
                        .and_then(|h| {
                            HostPath::new(h.to_string_lossy().into_owned())
                                .map_err(|e| e.to_string())
                        });
                    match host {
                        Ok(h) => kept.push(BwrapOp::RoBind {
                            source: MountSource::Path(h),
                            destination: prog.clone(),
                        }),
                        Err(e) => {
                            notes[n] = Some(format!("no control: `{prog}`: {e}"));
                            break;
                        }
                    }
                }
                if notes[n].is_some() {
                    continue;
                }
                edit.mount_last(BwrapOp::Tmpfs {
                    destination: p.clone(),
                    size_bytes: Some(1 << 20),
                });
                for op in kept {
                    edit.mount_last(op);
                }
            }
            ExpectKind::Hidden(p) => {
                if std::fs::symlink_metadata(p.as_str()).is_err() {
                    notes[n] = Some(format!(
                        "no control: nothing at `{p}` on this host either, so its absence proves nothing"
                    ));
                    continue;
                }
                match HostPath::new(p.as_str().to_owned()) {
                    Ok(h) => edit.mount_last(BwrapOp::RoBind {
                        source: MountSource::Path(h),
                        destination: p.clone(),
                    }),
                    Err(e) => notes[n] = Some(format!("no control: {e}")),
                }
            }
            ExpectKind::ExecDenied(_) if combined => {
                notes[n] = Some(
                    "no control: the one-hop runner applies Landlock together with the limits"
                        .to_owned(),
                );
            }
            _ => {}
        }
    }
    let plan = edit
        .finish()
        .map_err(|e| cannot(format_args!("the control plan: {e}")))?;
    Ok((plan, notes))
}

/// The worker and the runners the sandbox executes.
fn launch_programs(policy: &Policy) -> Vec<&SandboxPath> {
    let mut out = vec![policy.worker()];
    match policy.runners() {
        splashpol::model::Runners::None => {}
        splashpol::model::Runners::Separate { limit, landlock } => {
            out.extend(limit.as_ref().map(|l| &l.path));
            out.extend(landlock.as_ref().map(|l| &l.path));
        }
        splashpol::model::Runners::Combined { path, .. } => out.push(path),
    }
    out
}

/// The host object behind a worker-visible path in the tested plan
/// ([`LaunchPlan::mount_behind`], the plan's one rule): a bind's source
/// (a pinned descriptor's host path) plus the path below its destination;
/// `None` for a synthetic or unmounted path.
fn host_behind(plan: &LaunchPlan, p: &SandboxPath) -> Option<PathBuf> {
    plan.mount_behind(p)
        .host_path(plan.pins())
        .map(PathBuf::from)
}

/// Launches `plan`, makes the attempt of every expectation and returns what
/// each gave.
fn attempts(
    plan: LaunchPlan,
    manifest: &CapabilityManifest,
    expectations: &[Expectation],
) -> Result<Vec<Value>, String> {
    let broker = test_broker(&plan)?;
    let mut options = BindOptions::default();
    if let Some(b) = &broker {
        let mount = b
            .mount()
            .map_err(|e| format!("the test broker's mount: {e}"))?;
        options = options.with_network_broker(mount);
    }
    let bound = BoundCommand::bind_with(plan, options)
        .map_err(|e| format!("bind refused: {}", crate::run::chain(&e)))?;
    let deadlines = Deadlines::session(Duration::from_secs(120)).with_call(Duration::from_secs(30));
    let mut session = Session::open_owned(bound, manifest.clone(), deadlines)
        .map_err(|e| format!("the launch failed: {}", crate::run::chain(&e)))?;
    let arch = splash_seccomp::Arch::host();
    let mut out = Vec::new();
    for (n, x) in expectations.iter().enumerate() {
        let mut call = |tool: &str, input: Value| -> Result<Value, String> {
            session
                .call(tool, input)
                .map_err(|e| format!("`{tool}` for `{}`: {}", x.text, crate::run::chain(&e)))
        };
        let v = match &x.kind {
            ExpectKind::ReadOnly(p) | ExpectKind::Hidden(p) => {
                call("probe.path", json!({"path": p.as_str()}))?
            }
            ExpectKind::Writable { path, max_bytes } => {
                let bytes = max_bytes.map_or(1 << 20, |m| m.saturating_add(1 << 20));
                call(
                    "probe.write",
                    json!({"path": format!("{}/.splash-test-{n}", path.as_str()), "bytes": bytes, "remove": true}),
                )?
            }
            ExpectKind::ExecDenied(p) | ExpectKind::ExecAllowed(p) => {
                call("probe.exec", json!({"argv": [p.as_str()]}))?
            }
            ExpectKind::SyscallDenied(name) => {
                match arch.and_then(|a| splash_seccomp::syscall_number(a, name)) {
                    Some(nr) => call("probe.syscall", json!({"nr": nr}))?,
                    None => json!({"absent": true}),
                }
            }
            ExpectKind::NetworkNone => call("probe.try", json!({"op": "socket-inet"}))?,
            ExpectKind::ProcessesMax(max) => {
                call("probe.fork", json!({"max": max.saturating_add(16)}))?
            }
            ExpectKind::UserNamespacesNone => call("probe.try", json!({"op": "unshare-user"}))?,
        };
        out.push(v);
    }
    let _ = session.close(Duration::from_secs(5));
    Ok(out)
}

/// A real host broker for a plan that mounts one, so the sandbox under test
/// has the broker mount its policy names: started in the policy's parent
/// directory with the plan's catalog kind and ids, every id routed to the
/// loopback discard port, so no request the worker makes leaves the host.
/// It stops when dropped, after the session.
fn test_broker(plan: &LaunchPlan) -> Result<Option<HostBroker>, String> {
    let Some(broker) = plan.network_broker() else {
        return Ok(None);
    };
    let parent = plan
        .pins()
        .get(usize::from(broker.slot.0))
        .map(|p| p.host_path.as_str().to_owned())
        .ok_or_else(|| "the plan's broker pin is missing".to_owned())?;
    let kind = match broker.catalog {
        BrokerCatalog::Endpoint => CatalogKind::Endpoint,
        BrokerCatalog::Origin => CatalogKind::Origin,
    };
    let mut catalog = Catalog::new(kind);
    for id in &broker.ids {
        let entry = match broker.catalog {
            BrokerCatalog::Endpoint => {
                Entry::endpoint(id.as_str(), Method::Get, "http://127.0.0.1:9/")
            }
            BrokerCatalog::Origin => {
                Entry::origin(id.as_str(), "http://127.0.0.1:9", &[Method::Get])
            }
        };
        catalog = entry
            .and_then(|e| catalog.with(e))
            .map_err(|e| format!("the test broker's catalog: {e}"))?;
    }
    HostBroker::start(&parent, catalog)
        .map(Some)
        .map_err(|e| format!("the test broker could not start in `{parent}`: {e}"))
}

fn errno_name(v: &Value) -> String {
    v.get("name")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| v.get("errno").map(|e| format!("errno {e}")))
        .unwrap_or_else(|| "an error".to_owned())
}

/// Whether a `probe.syscall` or `probe.try` result is a seccomp denial:
/// `EPERM`, `ENOSYS`, or death by `SIGSYS`.
fn denied(v: &Value) -> Option<String> {
    if v.get("ok").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    if let Some(sig) = v.get("signal").and_then(Value::as_i64) {
        return (sig == i64::from(libc::SIGSYS)).then(|| "killed by SIGSYS".to_owned());
    }
    let name = v.get("error").map(errno_name).unwrap_or_default();
    matches!(name.as_str(), "EPERM" | "ENOSYS").then(|| format!("failed with {name}"))
}

/// What a result did, in words.
fn said(v: &Value) -> String {
    if v.get("ok").and_then(Value::as_bool) == Some(true) {
        return "succeeded".to_owned();
    }
    if let Some(sig) = v.get("signal") {
        return format!("was killed by signal {sig}");
    }
    match v.get("error") {
        Some(e) if !e.is_null() => format!("failed with {}", errno_name(e)),
        _ => format!("gave {v}"),
    }
}

fn line_of(source: &str, x: &Expectation) -> usize {
    source[..x.span.start.min(source.len())]
        .matches('\n')
        .count()
        + 1
}

/// Decides one expectation from its attempt and its control.
fn judge(
    x: &Expectation,
    source: &str,
    v: &Value,
    control: Option<(&Value, &Option<String>)>,
) -> Outcome {
    let (held, detail) = attempt_held(x, v);
    let needs = needs_control(x);
    let (verdict, control_text) = match (held, needs, control) {
        (false, false, _) => (Verdict::Failed, None),
        (false, true, _) => (
            Verdict::Failed,
            control.and_then(|(c, note)| note.clone().or_else(|| Some(control_said(x, c)))),
        ),
        (true, false, _) => (Verdict::Held, None),
        (true, true, None) => (Verdict::Unproven, Some("no control launch".to_owned())),
        (true, true, Some((_, Some(note)))) => (Verdict::Unproven, Some(note.clone())),
        (true, true, Some((c, None))) => {
            let (ok, text) = control_succeeded(x, c);
            (
                if ok { Verdict::Held } else { Verdict::Unproven },
                Some(text),
            )
        }
    };
    Outcome {
        text: x.text.clone(),
        line: line_of(source, x),
        verdict,
        detail,
        control: control_text,
    }
}

fn exists(v: &Value) -> bool {
    v.get("exists").and_then(Value::as_bool) == Some(true)
}

fn writable(v: &Value) -> Option<&Value> {
    v.get("writable")
}

/// Whether the attempt in the policy's sandbox came out as expected, and
/// what it did.
fn attempt_held(x: &Expectation, v: &Value) -> (bool, String) {
    match &x.kind {
        ExpectKind::ReadOnly(_) => {
            if !exists(v) {
                return (false, "not visible in the sandbox".to_owned());
            }
            match writable(v) {
                Some(w) if w.get("ok").and_then(Value::as_bool) == Some(false) => {
                    (true, format!("visible; a write {}", said(w)))
                }
                _ => (false, "visible, and a write succeeded".to_owned()),
            }
        }
        ExpectKind::Hidden(_) => {
            if exists(v) {
                (false, "visible in the sandbox".to_owned())
            } else {
                (true, "not visible in the sandbox".to_owned())
            }
        }
        ExpectKind::Writable { max_bytes, .. } => {
            let written = v.get("written").and_then(Value::as_u64).unwrap_or(0);
            let stopped = v.get("error").filter(|e| !e.is_null());
            match max_bytes {
                None if written > 0 && stopped.is_none() => {
                    (true, format!("wrote {written} bytes"))
                }
                None => (false, format!("a write {}", said(v))),
                Some(max) => {
                    let slack = max / 100 + 64 * 1024;
                    match stopped {
                        Some(e) if written > 0 && written <= max.saturating_add(slack) => (
                            true,
                            format!("wrote {written} bytes, then {}", errno_name(e)),
                        ),
                        Some(e) => (
                            false,
                            format!(
                                "wrote {written} bytes before {} (bound {max})",
                                errno_name(e)
                            ),
                        ),
                        None => (
                            false,
                            format!("wrote {written} bytes without being stopped (bound {max})"),
                        ),
                    }
                }
            }
        }
        ExpectKind::ExecDenied(_) => {
            if v.get("spawned").and_then(Value::as_bool) == Some(false) {
                let e = v.get("error").map(errno_name).unwrap_or_default();
                (true, format!("the exec failed with {e}"))
            } else {
                (false, "the program started".to_owned())
            }
        }
        ExpectKind::ExecAllowed(_) => {
            if v.get("spawned").and_then(Value::as_bool) == Some(false) {
                let e = v.get("error").map(errno_name).unwrap_or_default();
                (false, format!("the exec failed with {e}"))
            } else {
                (true, "the program started".to_owned())
            }
        }
        ExpectKind::SyscallDenied(_) => {
            if v.get("absent").is_some() {
                return (false, "no such syscall on this architecture".to_owned());
            }
            match denied(v) {
                Some(how) => (true, how),
                None => (false, format!("the call {}", said(v))),
            }
        }
        ExpectKind::NetworkNone => {
            if v.get("ok").and_then(Value::as_bool) == Some(true) {
                (false, "a connection to 1.1.1.1:53 succeeded".to_owned())
            } else {
                (true, format!("a connection to 1.1.1.1:53 {}", said(v)))
            }
        }
        ExpectKind::ProcessesMax(max) => {
            let started = v.get("started").and_then(Value::as_u64).unwrap_or(0);
            // The probe itself is one process.
            if started < *max {
                (
                    true,
                    format!(
                        "{} processes at most (a fork then {})",
                        started + 1,
                        v.get("error").map(errno_name).unwrap_or_default()
                    ),
                )
            } else {
                (false, format!("{} processes ran at once", started + 1))
            }
        }
        ExpectKind::UserNamespacesNone => {
            if v.get("ok").and_then(Value::as_bool) == Some(true) {
                (false, "a user namespace was created".to_owned())
            } else {
                (true, format!("creating a user namespace {}", said(v)))
            }
        }
    }
}

fn control_said(x: &Expectation, c: &Value) -> String {
    control_succeeded(x, c).1
}

/// Whether the control attempt (without the layer) succeeded.
fn control_succeeded(x: &Expectation, c: &Value) -> (bool, String) {
    match &x.kind {
        ExpectKind::ReadOnly(_) => match writable(c) {
            Some(w) if w.get("ok").and_then(Value::as_bool) == Some(true) => (
                true,
                "control: a write succeeded on a tmpfs in its place".to_owned(),
            ),
            _ => (
                false,
                "control: a write failed on a tmpfs in its place too".to_owned(),
            ),
        },
        ExpectKind::Hidden(_) => {
            if exists(c) {
                (
                    true,
                    "control: visible once the host's object is bound there".to_owned(),
                )
            } else {
                (
                    false,
                    "control: not visible even when bound there".to_owned(),
                )
            }
        }
        ExpectKind::ExecDenied(_) => {
            if c.get("spawned").and_then(Value::as_bool) == Some(false) {
                (
                    false,
                    "control: the exec fails without Landlock too".to_owned(),
                )
            } else {
                (
                    true,
                    "control: the program starts without the Landlock runner".to_owned(),
                )
            }
        }
        ExpectKind::SyscallDenied(_) => match denied(c) {
            Some(how) => (
                false,
                format!(
                    "control: without the filter the call {how} too, so the filter's part cannot be told"
                ),
            ),
            None => (
                true,
                format!("control: without the filter the call {}", said(c)),
            ),
        },
        ExpectKind::UserNamespacesNone => {
            if c.get("ok").and_then(Value::as_bool) == Some(true) {
                (true, "control: a user namespace is created without `--disable-userns` and the filter".to_owned())
            } else {
                (
                    false,
                    format!(
                        "control: it {} without `--disable-userns` and the filter too",
                        said(c)
                    ),
                )
            }
        }
        _ => (true, String::new()),
    }
}

fn status_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Held => "held",
        Verdict::Failed => "failed",
        Verdict::Unproven => "unproven",
    }
}

/// `s` escaped for an XML attribute or text (the JUnit reports).
pub(crate) fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn print_report(format: TestFormat, policy: &str, widened: &[&str], outcomes: &[Outcome]) {
    let failed = outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Failed)
        .count();
    let unproven = outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Unproven)
        .count();
    let added = widened.join(" ");
    let mut text = String::new();
    match format {
        TestFormat::Human => {
            if !widened.is_empty() {
                text.push_str(&format!(
                    "note: tested with the strict allowlist widened by `--allow-probe-syscalls` by: {added}\n"
                ));
            }
            for o in outcomes {
                let word = match o.verdict {
                    Verdict::Held => "ok      ",
                    Verdict::Failed => "FAILED  ",
                    Verdict::Unproven => "UNPROVEN",
                };
                text.push_str(&format!(
                    "{word} {} (line {}): {}",
                    o.text, o.line, o.detail
                ));
                if let Some(c) = &o.control {
                    text.push_str(&format!("; {c}"));
                }
                text.push('\n');
            }
            text.push_str(&format!(
                "policy `{}`: {} held, {failed} failed, {unproven} unproven\n",
                splashpol::text::escaped(policy),
                outcomes.len() - failed - unproven
            ));
        }
        TestFormat::Tap => {
            text.push_str(&format!("1..{}\n", outcomes.len()));
            if !widened.is_empty() {
                text.push_str(&format!(
                    "# the strict allowlist was widened by `--allow-probe-syscalls` by: {added}\n"
                ));
            }
            for (i, o) in outcomes.iter().enumerate() {
                let ok = if o.verdict == Verdict::Held {
                    "ok"
                } else {
                    "not ok"
                };
                text.push_str(&format!("{ok} {} - {}", i + 1, o.text));
                if o.verdict == Verdict::Unproven {
                    text.push_str(" # unproven");
                }
                text.push('\n');
                text.push_str(&format!("  # {}\n", o.detail));
                if let Some(c) = &o.control {
                    text.push_str(&format!("  # {c}\n"));
                }
            }
        }
        TestFormat::Junit => {
            text.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            text.push_str(&format!(
                "<testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" skipped=\"{unproven}\">\n",
                xml(policy),
                outcomes.len()
            ));
            if !widened.is_empty() {
                text.push_str(&format!(
                    "  <properties><property name=\"allow-probe-syscalls\" value=\"{}\"/></properties>\n",
                    xml(&added)
                ));
            }
            for o in outcomes {
                let message = match &o.control {
                    Some(c) => format!("{}; {c}", o.detail),
                    None => o.detail.clone(),
                };
                text.push_str(&format!(
                    "  <testcase name=\"{}\" classname=\"expect\">",
                    xml(&o.text)
                ));
                match o.verdict {
                    Verdict::Held => {}
                    Verdict::Failed => {
                        text.push_str(&format!("<failure message=\"{}\"/>", xml(&message)))
                    }
                    Verdict::Unproven => {
                        text.push_str(&format!("<skipped message=\"{}\"/>", xml(&message)))
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
                        "expectation": o.text,
                        "line": o.line,
                        "status": status_word(&o.verdict),
                        "detail": o.detail,
                        "control": o.control,
                    })
                })
                .collect();
            let v = json!({
                "policy": policy,
                "allow_probe_syscalls": widened,
                "expectations": list,
                "held": outcomes.len() - failed - unproven,
                "failed": failed,
                "unproven": unproven,
            });
            text = format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
    }
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: &str = "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/w\"\n  runtime \"/opt/w\" at \"/opt/w\"\n  seccomp strict-allowlist {\n    execve\n    exit_group # close\n  }\n  expect {\n    syscall denied unshare\n  }\n}\n";

    #[test]
    fn widening_adds_exactly_the_names_and_keeps_every_line() {
        let text = widened_source(STRICT, &["prctl", "wait4"]).expect("widened");
        assert_eq!(text.lines().count(), STRICT.lines().count(), "{text}");
        assert!(text.contains("  prctl wait4 }\n"), "{text}");
        let before = splashpol::check_source("p", STRICT).policy.expect("checks");
        let after = splashpol::check_source("p", &text).policy.expect("checks");
        let names = |p: &Policy| match p.seccomp() {
            splashpol::model::SeccompPolicy::StrictAllowlist { syscalls } => syscalls
                .iter()
                .map(|s| s.as_str().to_owned())
                .collect::<BTreeSet<_>>(),
            _ => panic!("a strict list"),
        };
        let added: Vec<String> = names(&after).difference(&names(&before)).cloned().collect();
        assert_eq!(added, ["prctl", "wait4"]);
        // The expectation stays on its line.
        let line = |s: &str| {
            s.lines()
                .position(|l| l.contains("syscall denied"))
                .expect("line")
        };
        assert_eq!(line(&text), line(STRICT));
        // No strict list, nothing to widen.
        let compat = STRICT.replace(
            "seccomp strict-allowlist {\n    execve\n    exit_group # close\n  }",
            "seccomp deny-known-escape-surface",
        );
        assert!(widened_source(&compat, &["prctl"]).is_err());
    }
}
