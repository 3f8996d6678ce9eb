//! `splashc learn` end to end under the real Bubblewrap and kernel: the
//! bundled probe is learned, its proposal checks and runs the same calls,
//! an unexpected system call under the proposal kills the worker (control:
//! the input policy allows it), learning twice gives the same proposal, the
//! worker never holds the recording listener, fixed guards stay in force
//! while learning, and a production bind refuses a learning plan.

mod runtime_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use runtime_support::{
    Binding, TempDir, WORKER_DIR, bin_dir, host_with_probe, probe_policy, serial,
};
use serde_json::{Value, json};
use splash_runtime::{BindError, BindOptions, BoundCommand, Deadlines, Session};
use splashpol::model::SandboxPath;

fn splashc() -> Option<PathBuf> {
    let path = bin_dir().join("splashc");
    splash_tests::require_host(
        path.is_file(),
        "the splashc binary (run `cargo build --workspace --bins` first)",
    )
    .then_some(path)
}

/// The probe and the recording runner beside it, and the probe policy
/// under the compatibility profile.
struct Setup {
    _probe_dir: TempDir,
    work: TempDir,
    policy: PathBuf,
    text: String,
    splashc: PathBuf,
}

fn setup() -> Option<Setup> {
    setup_with(&[])
}

fn setup_with(extra: &[&str]) -> Option<Setup> {
    let (bwrap, probe_dir) = host_with_probe()?;
    let splashc = splashc()?;
    let runner = bin_dir().join("splash-runner");
    if !splash_tests::require_host(
        runner.is_file(),
        "the splash-runner binary (run `cargo build --workspace --bins` first)",
    ) {
        return None;
    }
    std::fs::copy(&runner, probe_dir.path().join("splash-runner")).expect("copy runner");
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.tmpfs_root("scratch", "/workspace/scratch", "8 MiB");
    policy.tmp = Some("private size 16 MiB".into());
    policy.bounded_writes = true;
    policy.no_user_namespaces = true;
    policy.binding = Binding::PinnedMountsAndExecutables;
    policy.seccomp = Some("deny-known-escape-surface".into());
    policy.extra = extra.iter().map(|e| (*e).to_owned()).collect();
    let text = policy.render();
    let work = TempDir::new("learn");
    let path = work.path().join("input.splashpol");
    std::fs::write(&path, &text).expect("policy");
    Some(Setup {
        _probe_dir: probe_dir,
        work,
        policy: path,
        text,
        splashc,
    })
}

fn splashc_out(splashc: &Path, args: &[&str], paths: &[&Path]) -> Output {
    let mut cmd = Command::new(splashc);
    cmd.arg(args[0]);
    for p in paths {
        cmd.arg(p);
    }
    cmd.args(&args[1..]);
    cmd.output().expect("run splashc")
}

fn learn(s: &Setup, out: &Path, calls: &[(&str, Value)]) -> (String, String) {
    let mut cmd = Command::new(&s.splashc);
    cmd.arg("learn").arg(&s.policy);
    for (tool, input) in calls {
        cmd.args(["--invoke", tool, "--input"])
            .arg(input.to_string());
    }
    cmd.arg("-o").arg(out);
    let output = cmd.output().expect("run splashc learn");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "learn failed: {stderr}");
    let proposal = std::fs::read_to_string(out).expect("proposal written");
    (proposal, stderr)
}

fn run(s: &Setup, policy: &Path, tool: &str, input: &Value) -> Output {
    splashc_out(
        &s.splashc,
        &["run", "--invoke", tool, "--input", &input.to_string()],
        &[policy],
    )
}

#[test]
fn the_learned_proposal_checks_and_runs_the_same_calls_and_is_deterministic() {
    let _serial = serial();
    let Some(s) = setup() else { return };
    let calls = [
        ("probe.echo", json!({"input": 1})),
        ("probe.path", json!({"path": "/workspace/scratch"})),
    ];
    let first = s.work.path().join("first.splashpol");
    let (proposal, stderr) = learn(&s, &first, &calls);
    assert!(
        proposal.contains("seccomp strict-allowlist {"),
        "{proposal}"
    );
    assert!(
        !proposal.contains("deny-known-escape-surface"),
        "{proposal}"
    );
    assert!(
        proposal.contains("execve # start-up; the exec chain"),
        "{proposal}"
    );
    assert!(proposal.contains("exit_group # close"), "{proposal}");
    assert!(
        stderr.contains("`probe.echo` answered {\"input\":1}"),
        "{stderr}"
    );
    // The probe's threads use `clone3` first; the guard answered ENOSYS and
    // it was never listed.
    assert!(!proposal.contains("clone3"), "{proposal}");

    let check = splashc_out(&s.splashc, &["check"], &[&first]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    for (tool, input) in &calls {
        let out = run(&s, &first, tool, input);
        assert!(
            out.status.success(),
            "{tool} under the proposal: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let echoed: Value = serde_json::from_slice(&run(&s, &first, "probe.echo", &calls[0].1).stdout)
        .expect("JSON answer");
    assert_eq!(echoed, json!({"input": 1}));

    let second = s.work.path().join("second.splashpol");
    let (again, _) = learn(&s, &second, &calls);
    assert_eq!(proposal, again, "learning twice gives the same proposal");

    // The input has no `expect` block: the proposal gets one, and
    // `splashc test` proves it from inside the proposal's sandbox.
    assert!(
        proposal.contains(
            "  expect {\n    user-namespaces none\n    network none\n    syscall denied unshare setns mount"
        ),
        "{proposal}"
    );
    test_the_proposal(&s, &first);
}

/// `splashc test` of a learned proposal: the probe's own start-up is not on
/// the strict list, so the test refuses to run naming what is missing, and
/// with `--allow-probe-syscalls` adds exactly that, says so, and every
/// expectation holds with its control.
fn test_the_proposal(s: &Setup, proposal: &Path) {
    let probe = bin_dir().join("splash-probe");
    let probe = probe.to_str().expect("utf-8 path");
    let refused = splashc_out(&s.splashc, &["test", "--probe", probe], &[proposal]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("that the test probe needs to start") && stderr.contains("prctl"),
        "{stderr}"
    );
    let tested = splashc_out(
        &s.splashc,
        &[
            "test",
            "--probe",
            probe,
            "--allow-probe-syscalls",
            "--format",
            "json",
        ],
        &[proposal],
    );
    let report: Value = serde_json::from_slice(&tested.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON report ({e}): {}{}",
            String::from_utf8_lossy(&tested.stdout),
            String::from_utf8_lossy(&tested.stderr)
        )
    });
    assert_eq!(tested.status.code(), Some(0), "{report:#}");
    let added: Vec<&str> = report["allow_probe_syscalls"]
        .as_array()
        .expect("the added syscalls are named")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(added.contains(&"prctl"), "{report:#}");
    // Nothing the probe's attempts are about was added.
    for escape in ["unshare", "socket", "ptrace", "mount"] {
        assert!(!added.contains(&escape), "{report:#}");
    }
    let expectations = report["expectations"].as_array().expect("expectations");
    assert!(expectations.len() > 10, "{report:#}");
    for x in expectations {
        assert_eq!(x["status"], "held", "{report:#}");
    }
    let unshare = expectations
        .iter()
        .find(|x| x["expectation"] == "syscall denied unshare")
        .expect("unshare is expected denied");
    // The control shows the filter is what denies it.
    assert_eq!(
        unshare["control"], "control: without the filter the call succeeded",
        "{report:#}"
    );
}

#[test]
fn an_unexpected_system_call_under_the_proposal_kills_the_worker() {
    let _serial = serial();
    let Some(s) = setup() else { return };
    let proposal = s.work.path().join("echo.splashpol");
    let (text, _) = learn(&s, &proposal, &[("probe.echo", json!({"input": 1}))]);
    assert!(text.contains("seccomp strict-allowlist {"), "{text}");
    // `probe.path` inspects a path in the probe's own process, with calls
    // the echo run never made.
    let attempt = json!({"path": "/workspace/scratch"});

    // Control: the input policy lets the call run and answer.
    let out = run(&s, &s.policy, "probe.path", &attempt);
    assert!(
        out.status.success(),
        "control: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Under the proposal the same call kills the worker with `SIGSYS` (exit
    // status 128 + 31): the session ends without an answer.
    let out = run(&s, &proposal, "probe.path", &attempt);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("(exit status 159)"), "{stderr}");
    assert!(stderr.contains("without answering"), "{stderr}");
}

#[test]
fn guards_stay_in_force_while_learning_and_are_reported() {
    let _serial = serial();
    let Some(s) = setup() else { return };
    let out = s.work.path().join("guarded.splashpol");
    let (proposal, stderr) = learn(&s, &out, &[("probe.try", json!({"op": "keyctl"}))]);
    assert!(
        stderr.contains("`keyctl` was denied by the fixed guards (errno 1)"),
        "{stderr}"
    );
    assert!(!proposal.contains("keyctl #"), "{proposal}");
    // The probe saw EPERM, as under the production filter.
    assert!(stderr.contains("EPERM"), "{stderr}");
}

#[test]
fn the_worker_never_holds_the_listener_and_production_refuses_a_learning_plan() {
    let _serial = serial();
    let Some(s) = setup() else { return };
    let policy = splashpol::check_source("input", &s.text)
        .policy
        .expect("valid policy");
    let manifest = runtime_support::manifest_selecting(&["scratch"]);
    let activation = splashpol::activate::activate(&policy, Some(&manifest)).expect("activate");
    let arch = splash_seccomp::Arch::host().expect("supported host");
    let plan = splashpol::lower::lower(&policy, &activation, arch, "test").expect("lower");
    let recorder = SandboxPath::new(format!("{WORKER_DIR}/splash-runner")).expect("path");
    let learning = splashpol::learn::learning_plan(plan.clone(), &recorder).expect("learning plan");

    // A production bind refuses the learning plan; the production plan
    // binds (control).
    let refused = BoundCommand::bind(learning.plan.clone());
    assert!(
        matches!(refused, Err(BindError::LearningPlan)),
        "{refused:?}"
    );
    BoundCommand::bind(plan).expect("the production plan binds");

    let (bound, recorder) = splash_runtime::learn::bind_learning(
        learning,
        BindOptions::default(),
        Duration::from_secs(30),
    )
    .expect("learning bind");
    let mut session =
        Session::open_owned(bound, manifest, Deadlines::none()).expect("learning launch");
    recorder.set_phase(1);
    let report = session
        .call("probe.report", json!({}))
        .expect("report under the recording filter");
    let fds = report["fds"].to_string();
    assert!(
        !fds.contains("seccomp"),
        "the worker holds no listener: {fds}"
    );
    assert!(
        !fds.contains("socket"),
        "the worker holds no hand-over socket: {fds}"
    );
    // The recording filter is in force on the worker.
    assert_eq!(report["seccomp"], 2, "{report}");
    let closing = session.send_close().expect("close");
    closing.wait(Duration::from_secs(5)).expect("worker exits");
    let recording = recorder
        .finish(Duration::from_secs(5))
        .expect("recording ends when the worker is gone");
    let names: Vec<&str> = recording.syscalls.values().filter_map(|u| u.name).collect();
    assert!(names.contains(&"execve"), "{names:?}");
    assert_eq!(recording.execs.len(), 1, "{:?}", recording.execs);
    assert_eq!(
        recording.execs[0].named,
        format!("{WORKER_DIR}/splash-probe")
    );
}

/// The dynamic loader as the sandbox resolves `/lib64/ld-linux-x86-64.so.2`
/// on this host, if the host has the usual layout.
fn loader() -> Option<String> {
    let resolved = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").ok()?;
    Some(resolved.display().to_string())
}

#[test]
fn programs_that_ran_become_the_allow_exec_list_and_a_refused_one_is_reported() {
    let _serial = serial();
    let Some(ld) = loader() else {
        splash_tests::require_host(false, "an x86_64 loader at /lib64/ld-linux-x86-64.so.2");
        return;
    };
    let landlock = format!(
        "landlock runner \"{WORKER_DIR}/splash-runner\" {{ allow-exec \"/usr/bin/true\"; allow-exec \"/usr/bin/false\"; allow-exec \"{ld}\" }}"
    );
    let extra = [landlock.as_str()];
    let Some(s) = setup_with(&extra) else { return };
    let out = s.work.path().join("exec.splashpol");
    let (proposal, stderr) = learn(
        &s,
        &out,
        &[
            ("probe.exec", json!({"argv": ["/usr/bin/true"]})),
            ("probe.exec", json!({"argv": ["/usr/bin/ls"]})),
        ],
    );
    assert!(
        proposal.contains("allow-exec \"/usr/bin/true\" # call 1 `probe.exec`"),
        "{proposal}"
    );
    // `false` never ran: it leaves the list.
    assert!(!proposal.contains("/usr/bin/false"), "{proposal}");
    // The loader `true` needs is listed.
    assert!(proposal.contains("loader of `/usr/bin/true`"), "{proposal}");
    // `ls` is not on the input's list: Landlock refused it, it is reported
    // and not added.
    assert!(
        stderr.contains("exec of `/usr/bin/ls` (resolved `/usr/bin/ls`) did not take effect"),
        "{stderr}"
    );
    assert!(!proposal.contains("/usr/bin/ls"), "{proposal}");
    let ran = run(&s, &out, "probe.exec", &json!({"argv": ["/usr/bin/true"]}));
    let answer: Value = serde_json::from_slice(&ran.stdout).unwrap_or(Value::Null);
    assert_eq!(
        answer["exit_code"],
        0,
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}
