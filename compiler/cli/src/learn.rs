//! `splashc learn POLICY [--manifest M] [--invoke TOOL --input JSON]...
//! [--runner PATH] [-o FILE]`: run the worker in the policy's own sandbox
//! under a recording filter, make the calls, and propose the narrowest
//! strict allowlist (and Landlock list) that lets the same run succeed
//! (`docs/learn.md`).
//!
//! The proposal is the input policy with its `seccomp` statement replaced
//! by a `strict-allowlist` of every call that ran (or would have run once
//! listed), each name commented with the first call that needed it, and,
//! when the policy has a `landlock` statement, its `allow-exec` list
//! replaced by the programs that ran (with their loaders), and, when it has
//! none, an `expect` block that `splashc test --allow-probe-syscalls` can
//! prove, formatted as `splashc fmt` formats it. It is written to `-o
//! FILE` (standard output without it), then compared with the input as
//! `splashc diff INPUT PROPOSAL` would, on standard output. What was denied, refused or has no
//! number on an architecture is reported on standard error.
//!
//! Exit status: 0 proposal written; 1 the policy or manifest has errors or
//! the proposal does not check; 2 usage or I/O problems; 3 bind, launch,
//! session or recording failure.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use splash_protocol::{CapabilityManifest, Token};
use splash_runtime::learn::{ExecResult, Recording, Verdict};
use splash_runtime::{BindOptions, Deadlines, LoadedPolicy, Session, SessionState};
use splash_seccomp::Arch;
use splashpol::model::{Policy, SandboxPath};
use splashpol::plan::LaunchPlan;
use splashpol::syntax::Outline;

use crate::LearnArgs;
use crate::exit::Exit;

/// How long the runner has to hand the listener over.
const LISTENER_TIMEOUT: Duration = Duration::from_secs(30);
/// A phase ends once no call was answered for this long: the worker waits
/// for its next request.
const QUIET: Duration = Duration::from_millis(100);
/// The longest wait for a phase to end.
const SETTLE_MAX: Duration = Duration::from_secs(10);

pub fn run(args: &LearnArgs) -> Exit {
    match learn_main(args) {
        Ok(()) => Exit::Success,
        Err(code) => code,
    }
}

/// What a phase number means: 0 start-up, `1..=n` the calls, `n + 1` the
/// close.
fn phase_label(phase: u32, calls: &[(Token, Value)]) -> String {
    match phase {
        0 => "start-up".to_owned(),
        p if (p as usize) <= calls.len() => {
            format!("call {p} `{}`", calls[p as usize - 1].0)
        }
        _ => "close".to_owned(),
    }
}

/// The `--invoke`/`--input` pairs, in order.
fn calls(args: &LearnArgs) -> Result<Vec<(Token, Value)>, Exit> {
    if args.input.len() > args.invoke.len() {
        eprintln!("splashc learn: each `--input` follows the `--invoke` it belongs to");
        return Err(Exit::Usage);
    }
    let mut out = Vec::new();
    for (i, name) in args.invoke.iter().enumerate() {
        let tool = Token::new(name.as_str()).map_err(|e| {
            eprintln!("splashc learn: `--invoke {name}` is not a tool name: {e}");
            Exit::Usage
        })?;
        let input = match args.input.get(i) {
            Some(text) => serde_json::from_str(text).map_err(|e| {
                eprintln!("splashc learn: `--input` of `{name}` is not JSON: {e}");
                Exit::Usage
            })?,
            None => Value::Object(serde_json::Map::new()),
        };
        out.push((tool, input));
    }
    Ok(out)
}

fn learn_main(args: &LearnArgs) -> Result<(), Exit> {
    let mut calls = calls(args)?;
    let (source, loaded) = load(&args.policy)?;
    let manifest = learning_manifest(args, &loaded, &mut calls)?;
    let recorder_path = recorder_path(args, &loaded)?;
    let plan = loaded.plan(&manifest).map_err(|e| {
        eprintln!("splashc learn: {}", crate::run::chain(&e));
        Exit::Rejected
    })?;
    let chain_programs = splash_runtime::verify::exec_chain(&plan)
        .map(|c| c.programs)
        .unwrap_or_default();
    let recording = record(plan, manifest, &recorder_path, &calls)?;
    let learned = Learned::from_recording(&recording, &calls, &chain_programs);
    learned.report(&loaded.policy);
    let proposal = propose(&source, &loaded.policy, &learned).map_err(|e| {
        eprintln!("splashc learn: cannot build the proposal: {e}");
        Exit::Rejected
    })?;
    let proposal = splashpol::format::format_source(&proposal).map_err(|e| {
        eprintln!("splashc learn: cannot format the proposal: {e}");
        Exit::Rejected
    })?;
    let outcome = splashpol::check_source("proposal", &proposal);
    if outcome.policy.is_none() {
        eprintln!("splashc learn: the proposal does not check:");
        eprint!("{proposal}");
        return Err(Exit::Rejected);
    }
    write_proposal(args, &proposal)
}

/// The policy's source and the runtime's loaded policy; the CLI's own
/// loader renders every diagnostic (and the warnings) the way `check` does.
fn load(path: &Path) -> Result<(String, LoadedPolicy), Exit> {
    let source_bytes = crate::emit::read_policy(path)?;
    let Ok(source) = String::from_utf8(source_bytes.clone()) else {
        eprintln!(
            "splashc learn: `{}` is not a UTF-8 policy source",
            path.display()
        );
        return Err(Exit::Usage);
    };
    crate::emit::policy_from_bytes(path, source_bytes.clone())?;
    let loaded =
        LoadedPolicy::from_bytes(&path.display().to_string(), source_bytes).map_err(|e| {
            eprintln!("splashc learn: {}", crate::run::chain(&e));
            Exit::Rejected
        })?;
    Ok((source, loaded))
}

/// The manifest of `--manifest` (whose grants are the calls when none was
/// given), or one generated for the calls.
fn learning_manifest(
    args: &LearnArgs,
    loaded: &LoadedPolicy,
    calls: &mut Vec<(Token, Value)>,
) -> Result<CapabilityManifest, Exit> {
    if let Some(path) = &args.manifest {
        let m = crate::emit::load_manifest(path)?;
        if calls.is_empty() {
            *calls = m
                .grants
                .iter()
                .map(|g| (g.tool.clone(), Value::Object(serde_json::Map::new())))
                .collect();
        }
        return Ok(m);
    }
    let mut tools: BTreeMap<Token, u32> = BTreeMap::new();
    for (tool, _) in calls.iter() {
        *tools.entry(tool.clone()).or_insert(0) += 1;
    }
    crate::run::generated_manifest(&loaded.policy, "learn", &tools).map_err(|e| {
        eprintln!("splashc learn: {e}");
        Exit::Usage
    })
}

/// Where the recording runner sits in the sandbox: `--runner`, or
/// `splash-runner` beside the worker.
fn recorder_path(args: &LearnArgs, loaded: &LoadedPolicy) -> Result<SandboxPath, Exit> {
    let recorder_path = match &args.runner {
        Some(p) => p.clone(),
        None => {
            let worker = loaded.policy.worker().as_str();
            let dir = worker.rsplit_once('/').map_or("", |(d, _)| d);
            format!("{dir}/splash-runner")
        }
    };
    SandboxPath::new(recorder_path.as_str()).map_err(|e| {
        eprintln!("splashc learn: `--runner {recorder_path}` is not a sandbox path: {e}");
        Exit::Usage
    })
}

/// Runs the calls in the policy's own sandbox with the recorder in front of
/// the worker, one phase per call, closes, and returns what it recorded.
fn record(
    plan: LaunchPlan,
    manifest: CapabilityManifest,
    recorder_path: &SandboxPath,
    calls: &[(Token, Value)],
) -> Result<Recording, Exit> {
    let learning = splashpol::learn::learning_plan(plan, recorder_path).map_err(|e| {
        eprintln!("splashc learn: {}", crate::run::chain(&e));
        Exit::Failed
    })?;
    eprintln!(
        "splashc learn: recording through `{}` (--learn-fd) in the policy's own sandbox; {} call(s)",
        learning.recorder,
        calls.len()
    );
    let (bound, recorder) =
        splash_runtime::learn::bind_learning(learning, BindOptions::default(), LISTENER_TIMEOUT)
            .map_err(|e| {
                eprintln!("splashc learn: {}", crate::run::chain(&e));
                Exit::Failed
            })?;
    let mut session = Session::open_owned(bound, manifest, Deadlines::none()).map_err(|e| {
        eprintln!("splashc learn: {}", crate::run::chain(&e));
        Exit::Failed
    })?;
    for (i, (tool, input)) in calls.iter().enumerate() {
        settle(&recorder);
        recorder.set_phase(i as u32 + 1);
        match session.call(tool.as_str(), input.clone()) {
            Ok(response) => eprintln!(
                "splashc learn: `{tool}` answered {}",
                splashpol::text::escaped(&response.to_string())
            ),
            Err(e) => {
                eprintln!("splashc learn: `{tool}`: {}", crate::run::chain(&e));
                if e.leaves_session() == SessionState::Usable {
                    let _ = session.stop();
                }
                return Err(Exit::Failed);
            }
        }
    }
    settle(&recorder);
    recorder.set_phase(calls.len() as u32 + 1);
    let status = session
        .send_close()
        .and_then(|closing| closing.wait(Duration::from_secs(5)))
        .map_err(|e| {
            eprintln!(
                "splashc learn: closing the session: {}",
                crate::run::chain(&e)
            );
            Exit::Failed
        })?;
    let recording = recorder.finish(Duration::from_secs(5)).map_err(|e| {
        eprintln!("splashc learn: {}", crate::run::chain(&e));
        Exit::Failed
    })?;
    eprintln!(
        "splashc learn: worker closed ({status}); {} notification(s), {} distinct system call(s), {} exec(s)",
        recording.notifications,
        recording.syscalls.len(),
        recording.execs.len()
    );
    Ok(recording)
}

/// The proposal to `--output` (then its diff against the input on standard
/// output), or to standard output.
fn write_proposal(args: &LearnArgs, proposal: &str) -> Result<(), Exit> {
    match &args.output {
        Some(path) => {
            std::fs::write(path, proposal.as_bytes()).map_err(|e| {
                eprintln!("splashc learn: cannot write `{}`: {e}", path.display());
                Exit::Usage
            })?;
            eprintln!("splashc learn: proposal written to `{}`", path.display());
            print_diff(&args.policy, path)
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(proposal.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| {
                    eprintln!("splashc learn: cannot write the output: {e}");
                    Exit::Usage
                })
        }
    }
}

/// Waits for the worker to go quiet, so the next phase starts clean.
fn settle(recorder: &splash_runtime::learn::Recorder) {
    if !recorder.settle(QUIET, SETTLE_MAX) {
        eprintln!(
            "splashc learn: the worker did not go quiet within {SETTLE_MAX:?}; later calls may be attributed to the next phase"
        );
    }
}

/// `splashc diff INPUT PROPOSAL` on standard output.
fn print_diff(input: &Path, proposal: &Path) -> Result<(), Exit> {
    let code = crate::diff::run(&crate::DiffArgs {
        a: input.to_path_buf(),
        b: PathBuf::from(proposal),
        arch: None,
        format: crate::Format::Human,
    });
    match code {
        Exit::Success | Exit::Rejected => Ok(()),
        other => Err(other),
    }
}

/// What the proposal is made of, in a deterministic order.
#[derive(Debug, Default, PartialEq, Eq)]
struct Learned {
    /// Names for the strict list with the comment of each: sorted by first
    /// phase, then name.
    syscalls: Vec<(String, String)>,
    /// Programs (and loaders) that ran outside the fixed exec chain, with
    /// the comment of each, in first-use order.
    allow_exec: Vec<(String, String)>,
    /// Lines for the report on standard error.
    notes: Vec<String>,
}

impl Learned {
    fn from_recording(
        recording: &Recording,
        calls: &[(Token, Value)],
        chain_programs: &[String],
    ) -> Learned {
        let mut learned = Learned::default();
        let mut listed: BTreeMap<(u32, &str), String> = BTreeMap::new();
        for (nr, usage) in &recording.syscalls {
            let Some(name) = usage.name else {
                learned.notes.push(format!(
                    "system call number {nr} has no name on {}; it was refused",
                    recording.arch.name()
                ));
                continue;
            };
            for (verdict, phase) in &usage.verdicts {
                let when = phase_label(*phase, calls);
                match verdict {
                    Verdict::Guarded(errno) => learned.notes.push(format!(
                        "`{name}` was denied by the fixed guards (errno {errno}), first in {when}; it never ran and is not listed"
                    )),
                    Verdict::Unknown => learned
                        .notes
                        .push(format!("`{name}` under a foreign ABI was refused ({when})")),
                    Verdict::Unexpected(ret) => learned.notes.push(format!(
                        "`{name}`: the input's filter returned {ret:#x}; refused with EPERM ({when})"
                    )),
                    Verdict::Unlisted => learned.notes.push(format!(
                        "`{name}` is not on the input's strict list; production kills it (first in {when})"
                    )),
                    Verdict::Allowed => {}
                }
            }
            if !usage.clone_flags.is_empty() {
                let flags: Vec<String> = usage
                    .clone_flags
                    .iter()
                    .map(|f| format!("{f:#x}"))
                    .collect();
                learned
                    .notes
                    .push(format!("`clone` flags seen: {}", flags.join(", ")));
            }
            if !usage.ioctl_requests.is_empty() {
                let reqs: Vec<String> = usage
                    .ioctl_requests
                    .iter()
                    .map(|f| format!("{f:#x}"))
                    .collect();
                learned
                    .notes
                    .push(format!("`ioctl` requests seen: {}", reqs.join(", ")));
            }
            if usage.needed() {
                let first = usage
                    .verdicts
                    .iter()
                    .filter(|(v, _)| matches!(v, Verdict::Allowed | Verdict::Unlisted))
                    .map(|(_, p)| *p)
                    .min()
                    .unwrap_or(usage.first_phase);
                let mut comment = phase_label(first, calls);
                if name == "execve" || name == "execveat" {
                    comment.push_str("; the exec chain");
                }
                listed.insert((first, name), comment);
            }
        }
        learned.syscalls = listed
            .into_iter()
            .map(|((_, name), comment)| (name.to_owned(), comment))
            .collect();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for (i, exec) in recording.execs.iter().enumerate() {
            let when = phase_label(exec.phase, calls);
            let target = exec.resolved.clone().unwrap_or_else(|| exec.named.clone());
            match exec.result {
                ExecResult::Ran => {}
                ExecResult::Failed => {
                    learned.notes.push(format!(
                        "exec of `{}` (resolved `{target}`) did not take effect ({when}): refused by Landlock when it is not on the input's allow-exec list, otherwise failed; not added",
                        exec.named
                    ));
                    continue;
                }
                ExecResult::Unknown => {
                    learned.notes.push(format!(
                        "exec of `{}` ({when}): the caller made no further call, so its result is unknown; not added",
                        exec.named
                    ));
                    continue;
                }
            }
            learned.notes.push(format!(
                "executed `{}` as `{target}`{} ({when})",
                exec.named,
                exec.loader
                    .as_deref()
                    .map(|l| format!(" through the loader `{l}`"))
                    .unwrap_or_default()
            ));
            // The first program of the chain runs before any Landlock
            // domain; the chain's own programs are listed by the compiler.
            let mut wanted = Vec::new();
            if !chain_programs.contains(&exec.named) && !chain_programs.contains(&target) {
                wanted.push((target.clone(), format!("{when}: `{}`", exec.named)));
            }
            if i > 0 {
                if let Some(l) = &exec.loader {
                    wanted.push((l.clone(), format!("{when}: loader of `{target}`")));
                }
                if let Some(s) = &exec.script_interpreter {
                    wanted.push((s.clone(), format!("{when}: interpreter of `{target}`")));
                }
            }
            for (path, comment) in wanted {
                if seen.insert(path.clone()) {
                    learned.allow_exec.push((path, comment));
                }
            }
        }
        learned
    }

    fn report(&self, policy: &Policy) {
        for note in &self.notes {
            eprintln!("splashc learn: {note}");
        }
        for arch in [Arch::X86_64, Arch::Aarch64, Arch::Riscv64] {
            let missing: Vec<&str> = self
                .syscalls
                .iter()
                .map(|(n, _)| n.as_str())
                .filter(|n| splash_seccomp::syscall_number(arch, n).is_none())
                .collect();
            if !missing.is_empty() {
                eprintln!(
                    "splashc learn: no number on {}: {}",
                    arch.name(),
                    missing
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if policy.runners().landlock_allow().is_none() && !self.allow_exec.is_empty() {
            eprintln!(
                "splashc learn: the policy has no `landlock` statement, so no allow-exec list is proposed; programs that ran: {}",
                self.allow_exec
                    .iter()
                    .map(|(p, _)| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
}

/// One comment line: no line break can reach the policy text.
fn comment(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A string literal of the language.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn seccomp_text(learned: &Learned) -> String {
    let mut text = String::from(
        "# learned: each name is followed by the first call that needed it\n  seccomp strict-allowlist {\n",
    );
    for (name, why) in &learned.syscalls {
        text.push_str(&format!("    {name} # {}\n", comment(why)));
    }
    text.push_str("  }");
    text
}

fn landlock_text(runner: Option<&str>, learned: &Learned) -> String {
    let mut text = String::from("landlock");
    if let Some(r) = runner {
        text.push_str(&format!(" runner {}", quoted(r)));
    }
    if learned.allow_exec.is_empty() {
        text.push_str(" {}");
        return text;
    }
    text.push_str(" {\n");
    for (path, why) in &learned.allow_exec {
        text.push_str(&format!(
            "    allow-exec {} # {}\n",
            quoted(path),
            comment(why)
        ));
    }
    text.push_str("  }");
    text
}

/// Escape syscalls a derived `expect` block says are denied when the run
/// did not need them. Each is one the probe's unfiltered attempt (every
/// argument zero) does not see refused the way a filter refuses (it runs,
/// or fails on its arguments: `EINVAL`, `EFAULT`, `ESRCH`, `EBADF`; measured
/// on Linux 6.18 as root and as uid 65534, and none is gated by a sysctl),
/// so `splashc test` has a control for each. A kernel that refuses one
/// with `EPERM` even without a filter makes it unproven there, never held.
const DENIED_EXPECTATIONS: &[&str] = &[
    "unshare",
    "setns",
    "mount",
    "open_tree",
    "ptrace",
    "process_vm_readv",
    "pidfd_getfd",
    "kcmp",
    "keyctl",
    "add_key",
    "request_key",
    "perf_event_open",
    "name_to_handle_at",
];

/// An `expect` block for a policy without one: what the proposal's
/// sandbox must show from inside (`splashc test --allow-probe-syscalls`
/// checks it; the probe's own start-up is not what the worker learned).
fn expect_text(policy: &Policy, learned: &Learned) -> String {
    let mut entries = Vec::new();
    if policy.no_further_user_namespaces() {
        entries.push("user-namespaces none".to_owned());
    }
    if policy.network_broker().is_none() {
        entries.push("network none".to_owned());
    }
    let denied: Vec<&str> = DENIED_EXPECTATIONS
        .iter()
        .copied()
        .filter(|n| !learned.syscalls.iter().any(|(l, _)| l == n))
        .collect();
    if !denied.is_empty() {
        entries.push(format!("syscall denied {}", denied.join(" ")));
    }
    let mut text = String::from(
        "# learned: what `splashc test --allow-probe-syscalls` checks from inside\n  expect {\n",
    );
    for entry in entries {
        text.push_str(&format!("    {entry}\n"));
    }
    text.push_str("  }");
    text
}

/// The input source with its `seccomp` and `landlock` statements replaced
/// (a missing `seccomp` statement is added after the last statement), and
/// an `expect` block derived from `policy` when the input has none.
fn propose(source: &str, policy: &Policy, learned: &Learned) -> Result<String, String> {
    let outline = Outline::parse(source).ok_or_else(|| "the policy does not parse".to_owned())?;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut has_seccomp = false;
    let mut has_expect = false;
    let mut last_end = 0;
    for stmt in outline.statements() {
        let span = stmt.span();
        last_end = last_end.max(span.end);
        match stmt.keyword() {
            "seccomp" => {
                has_seccomp = true;
                edits.push((span.start, span.end, seccomp_text(learned)));
            }
            "landlock" => {
                let runner = stmt.landlock_runner().map(|r| r.text);
                edits.push((span.start, span.end, landlock_text(runner, learned)));
            }
            "expect" => has_expect = true,
            _ => {}
        }
    }
    let mut appended = String::new();
    if !has_seccomp {
        appended.push_str(&format!("\n\n  {}", seccomp_text(learned)));
    }
    if !has_expect {
        appended.push_str(&format!("\n\n  {}", expect_text(policy, learned)));
    }
    if !appended.is_empty() {
        edits.push((last_end, last_end, appended));
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = source.to_owned();
    for (start, end, text) in edits {
        out.replace_range(start..end, &text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &str = "splashpol 1\n\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/worker\"\n  runtime \"/opt/w\" at \"/opt/w\"\n  seccomp deny-known-escape-surface\n  landlock runner \"/opt/w/splash-landlock-runner\" {\n    allow-exec \"/opt/w/tool\"\n    allow-exec \"/opt/w/unused\"\n  }\n}\n";

    fn learned() -> Learned {
        Learned {
            syscalls: vec![
                ("execve".into(), "start-up; the exec chain".into()),
                ("exit_group".into(), "close".into()),
            ],
            allow_exec: vec![("/opt/w/tool".into(), "call 1 `t.x`: `/opt/w/tool`".into())],
            notes: Vec::new(),
        }
    }

    fn policy(source: &str) -> Policy {
        splashpol::check_source("p", source)
            .policy
            .expect("the input checks")
    }

    #[test]
    fn a_policy_without_an_expect_block_gets_one_the_proposal_can_meet() {
        let input = INPUT.replace(
            "  seccomp deny-known-escape-surface\n",
            "  seccomp deny-known-escape-surface\n  user-namespaces none\n",
        );
        let mut learned = learned();
        // A reviewed addition the run needed is listed, so never expected
        // denied.
        learned.syscalls.push(("kcmp".into(), "call 1".into()));
        let text = propose(&input, &policy(&input), &learned).expect("proposal");
        let text = splashpol::format::format_source(&text).expect("formats");
        assert!(text.contains("  expect {\n    user-namespaces none\n    network none\n    syscall denied unshare setns mount open_tree ptrace process_vm_readv pidfd_getfd keyctl"), "{text}");
        let (_, expectations) = splashpol::expect::of_source(&text).expect("the proposal checks");
        assert_eq!(expectations.len(), 2 + DENIED_EXPECTATIONS.len() - 1);
        // Without `user-namespaces none` the block does not claim it.
        let text = propose(INPUT, &policy(INPUT), &learned).expect("proposal");
        assert!(!text.contains("user-namespaces none"), "{text}");
        assert!(splashpol::expect::of_source(&text).is_some(), "{text}");
    }

    #[test]
    fn an_expect_block_of_the_input_is_kept_and_no_second_is_added() {
        let input = INPUT.replace(
            "  seccomp deny-known-escape-surface\n",
            "  seccomp deny-known-escape-surface\n  expect {\n    hidden \"/etc\"\n  }\n",
        );
        let text = propose(&input, &policy(&input), &learned()).expect("proposal");
        assert_eq!(text.matches("expect {").count(), 1, "{text}");
        assert!(text.contains("hidden \"/etc\""), "{text}");
        assert!(!text.contains("network none"), "{text}");
    }

    #[test]
    fn the_proposal_replaces_the_filter_and_the_allowlist_and_checks() {
        let text = propose(INPUT, &policy(INPUT), &learned()).expect("proposal");
        let text = splashpol::format::format_source(&text).expect("formats");
        assert!(text.contains("seccomp strict-allowlist {\n    execve # start-up; the exec chain\n    exit_group # close\n  }"), "{text}");
        assert!(
            text.contains("allow-exec \"/opt/w/tool\" # call 1 `t.x`"),
            "{text}"
        );
        assert!(!text.contains("/opt/w/unused"), "{text}");
        assert!(!text.contains("deny-known-escape-surface"), "{text}");
        let outcome = splashpol::check_source("p", &text);
        assert!(outcome.policy.is_some(), "{text}");
        // Formatting is a fixed point: what is written is what fmt keeps.
        assert_eq!(
            splashpol::format::format_source(&text).expect("again"),
            text
        );
    }

    #[test]
    fn a_policy_without_a_filter_gets_one() {
        let input = INPUT.replace("  seccomp deny-known-escape-surface\n", "");
        let text = propose(&input, &policy(&input), &learned()).expect("proposal");
        let text = splashpol::format::format_source(&text).expect("formats");
        assert!(text.contains("seccomp strict-allowlist {"), "{text}");
        assert!(
            splashpol::check_source("p", &text).policy.is_some(),
            "{text}"
        );
    }

    #[test]
    fn comments_cannot_break_a_line() {
        assert_eq!(comment("a\nb\u{7}"), "a b ");
        assert_eq!(quoted("a\"b\\"), "\"a\\\"b\\\\\"");
    }
}
