//! `splashc run` end to end: a policy file naming a temporary copy of the
//! probe, launched under the real bwrap.

mod runtime_support;

use std::process::Command;

use runtime_support::{Binding, TempDir, bin_dir, host_with_probe, probe_policy, serial};
use serde_json::Value;

/// The probe under the hardened controls, with two tmpfs roots. `splashc
/// run` checks, activates and lowers it itself.
fn policy(probe_dir: &TempDir) -> String {
    let mut policy = probe_policy(std::path::Path::new("/usr/bin/bwrap"), probe_dir);
    policy.tmpfs_root("scratch", "/workspace/scratch", "8 MiB");
    policy.tmpfs_root("unused", "/workspace/unused", "8 MiB");
    policy.tmp = Some("private size 16 MiB".into());
    policy.bounded_writes = true;
    policy.no_user_namespaces = true;
    policy.binding = Binding::PinnedMountsAndExecutables;
    policy.seccomp = Some("deny-known-escape-surface".into());
    policy.render()
}

fn splashc() -> Option<std::path::PathBuf> {
    let path = bin_dir().join("splashc");
    splash_tests::require_host(
        path.is_file(),
        "the splashc binary (run `cargo build --workspace --bins` first)",
    )
    .then_some(path)
}

#[test]
fn run_launches_the_probe_and_prints_its_authenticated_report() {
    let _serial = serial();
    let Some((_bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let work = TempDir::new("cli");
    let policy_path = work.path().join("policy.splashpol");
    std::fs::write(&policy_path, policy(&probe_dir)).expect("policy");

    // Without a manifest: a generated session activating every root.
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .output()
        .expect("run splashc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no manifest given; generated session `run-"),
        "{stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["capabilities"]["effective"], "0000000000000000");
    assert_eq!(report["seccomp"], 2);
    let mounts = report["mounts"].to_string();
    assert!(
        mounts.contains("/workspace/unused"),
        "generated manifest activates every root"
    );

    // With a manifest selecting one root and granting `probe.path`.
    let manifest = serde_json::json!({
        "protocol_version": 5,
        "session_id": "cli-1",
        "grants": [{
            "tool": "probe.path", "format": "json", "max_calls": 1,
            "max_input_bytes": 1024, "max_output_bytes": 65536,
            "resources": [{"kind": "file_root", "id": "scratch"}]
        }]
    });
    let manifest_path = work.path().join("manifest.json");
    std::fs::write(&manifest_path, manifest.to_string()).expect("manifest");
    for (path, exists) in [("/workspace/scratch", true), ("/workspace/unused", false)] {
        let out = Command::new(&splashc)
            .arg("run")
            .arg(&policy_path)
            .arg("--manifest")
            .arg(&manifest_path)
            .args(["--invoke", "probe.path", "--input"])
            .arg(serde_json::json!({"path": path}).to_string())
            .output()
            .expect("run splashc");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let seen: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(seen["exists"], exists, "{path}: {seen}");
    }

    // A tool the manifest does not grant is refused before launch.
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .arg("--manifest")
        .arg(&manifest_path)
        .output()
        .expect("run splashc");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not grant `probe.report`"));

    // A request the worker cannot serve: it ends the session (there is no
    // error frame), and the run says which request went unanswered.
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .args(["--invoke", "probe.try", "--input", r#"{"op":"nonsense"}"#])
        .output()
        .expect("run splashc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the worker ended the session without answering `invoke` request `r-1` of tool `probe.try`"),
        "{stderr}"
    );
    // The worker was reaped and its status is named.
    assert!(
        stderr.contains("the session is poisoned (exit status"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn run_works_with_the_host_side_as_an_unprivileged_user() {
    let _serial = serial();
    let Some((_bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if !splash_tests::require_host(setpriv.is_file(), "setpriv") {
        return;
    }
    // Everything the unprivileged user needs lives in world-readable copies.
    let work = TempDir::new("cli-unpriv");
    let own_splashc = work.path().join("splashc");
    std::fs::copy(&splashc, &own_splashc).expect("copy splashc");
    let policy_path = work.path().join("policy.splashpol");
    std::fs::write(&policy_path, policy(&probe_dir)).expect("policy");
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&own_splashc)
        .arg("run")
        .arg(&policy_path)
        .output()
        .expect("run splashc through setpriv");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["ids"]["euid"], 65534, "{report}");
    assert_eq!(report["capabilities"]["effective"], "0000000000000000");
    assert_eq!(report["seccomp"], 2);
}

#[test]
fn run_enforces_the_policy_watchdog_and_names_what_happened() {
    let _serial = serial();
    let Some((_bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let work = TempDir::new("cli-watchdog");
    let policy_path = work.path().join("policy.splashpol");
    let mut text = policy(&probe_dir);
    text = text.replacen("\n}\n", "\n  watchdog session 1 s\n}\n", 1);
    std::fs::write(&policy_path, text).expect("policy");
    let started = std::time::Instant::now();
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .args(["--invoke", "probe.sleep", "--input", r#"{"ms":30000}"#])
        .output()
        .expect("run splashc");
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("watchdog session 1000 ms"), "{stderr}");
    assert!(stderr.contains("the session deadline passed"), "{stderr}");
    assert!(!stderr.contains("before the session started"), "{stderr}");
    assert!(elapsed < std::time::Duration::from_secs(10), "{elapsed:?}");
    // Control: a call that fits in the deadline succeeds.
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .args(["--invoke", "probe.sleep", "--input", r#"{"ms":10}"#])
        .output()
        .expect("run splashc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_makes_several_calls_in_order_and_closes_the_session_after_a_refusal() {
    let _serial = serial();
    let Some((_bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let Some(splashc) = splashc() else { return };
    let work = TempDir::new("cli-calls");
    let policy_path = work.path().join("policy.splashpol");
    std::fs::write(&policy_path, policy(&probe_dir)).expect("policy");
    let lines = |stdout: &[u8]| -> Vec<Value> {
        String::from_utf8_lossy(stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON value per line"))
            .collect()
    };

    // Pairs in order; a call without `--input` gets `{}`.
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .args(["--invoke", "probe.echo", "--input", r#"{"input":1}"#])
        .args([
            "--invoke",
            "probe.path",
            "--input",
            r#"{"path":"/workspace/scratch"}"#,
        ])
        .args(["--invoke", "probe.echo", "--input", r#"{"input":2}"#])
        .args(["--invoke", "probe.echo"])
        .output()
        .expect("run splashc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let results = lines(&out.stdout);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(results[0], serde_json::json!({"input": 1}));
    assert_eq!(results[1]["exists"], true);
    assert_eq!(results[2], serde_json::json!({"input": 2}));
    assert_eq!(results[3], serde_json::json!({"input": null}));

    // The same calls from a file.
    let calls = work.path().join("calls.jsonl");
    std::fs::write(
        &calls,
        "{\"tool\":\"probe.echo\",\"input\":{\"input\":\"a\"}}\n{\"tool\":\"probe.echo\",\"input\":{\"input\":\"b\"}}\n",
    )
    .expect("calls");
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .arg("--calls")
        .arg(&calls)
        .output()
        .expect("run splashc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        lines(&out.stdout),
        [
            serde_json::json!({"input": "a"}),
            serde_json::json!({"input": "b"})
        ]
    );

    // A call refused before it was sent: the results before it are out,
    // the refusal states its cause once, and the session is still closed
    // with `close_session` (the worker exits by itself with status 0; a
    // stopped worker would end with a signal).
    let deep = format!("{}{}", "[".repeat(33), "]".repeat(33));
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .args(["--invoke", "probe.echo", "--input", r#"{"input":1}"#])
        .args(["--invoke", "probe.echo", "--input", &deep])
        .args(["--invoke", "probe.echo", "--input", r#"{"input":3}"#])
        .output()
        .expect("run splashc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(lines(&out.stdout), [serde_json::json!({"input": 1})]);
    assert!(
        stderr.contains("call 2 of 3 (`probe.echo`): the call was refused before it was sent"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("nested deeper than 32 levels").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("worker closed; bubblewrap ended with exit status 0"),
        "{stderr}"
    );

    // Malformed call lists are usage errors, before anything launches.
    for (args, says) in [
        (
            vec!["--input", "{}", "--invoke", "probe.echo"],
            "must follow",
        ),
        (
            vec!["--invoke", "probe.echo", "--input", "{}", "--input", "{}"],
            "more than one `--input`",
        ),
        (
            vec!["--invoke", "probe.echo", "--input", "{"],
            "is not JSON",
        ),
    ] {
        let out = Command::new(&splashc)
            .arg("run")
            .arg(&policy_path)
            .args(&args)
            .output()
            .expect("run splashc");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("launched"), "{stderr}");
    }
    std::fs::write(&calls, "{\"tool\":\"probe.echo\"}\n{\"tool\":7}\n").expect("calls");
    let out = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .arg("--calls")
        .arg(&calls)
        .output()
        .expect("run splashc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 2: `tool` must be a string"),
        "{stderr}"
    );
}
