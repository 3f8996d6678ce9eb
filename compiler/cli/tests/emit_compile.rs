//! `splashc emit` and `splashc compile` as a user runs them: outputs, exit
//! statuses (0 ok, 1 policy/manifest errors, 2 usage/I/O), determinism, and
//! the artifact round trip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn splashc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(args)
        .output()
        .expect("run splashc")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn policy(name: &str) -> String {
    workspace()
        .join("policies")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn golden_manifest(rel: &str) -> String {
    workspace()
        .join("compiler/splashpol/tests/golden")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn argv_is_quoted_and_says_when_every_root_is_active() {
    let out = splashc(&["emit", &policy("agent-worker.splashpol")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("'/proc/self/fd/{fd:pin:0:/usr/bin/bwrap}'"),
        "{stdout}"
    );
    assert!(stdout.contains("--unshare-all"));
    assert!(!stdout.contains("--share-net"));
    assert!(text(&out.stderr).contains("every registered file root is active"));

    let with_manifest = splashc(&[
        "emit",
        "--argv",
        &policy("agent-worker.splashpol"),
        "--manifest",
        &golden_manifest("agent-worker/scratch-only.manifest.json"),
    ]);
    assert_eq!(with_manifest.status.code(), Some(0));
    assert!(!text(&with_manifest.stderr).contains("every registered"));
    assert!(!text(&with_manifest.stdout).contains("/workspace/project"));
}

#[test]
fn null_separated_argv_matches_the_quoted_one() {
    let quoted = splashc(&["emit", "--argv", &policy("demo.splashpol")]);
    let nul = splashc(&["emit", "--argv", "--null", &policy("demo.splashpol")]);
    assert_eq!(nul.status.code(), Some(0));
    let args: Vec<&[u8]> = nul.stdout.split(|b| *b == 0).collect();
    assert_eq!(args.last(), Some(&&b""[..]), "every argument ends with NUL");
    let args = &args[..args.len() - 1];
    assert!(args.contains(&&b"{fd:seccomp}"[..]));
    let quoted = text(&quoted.stdout);
    for arg in args {
        assert!(quoted.contains(&*text(arg)), "{}", text(arg));
    }
}

#[test]
fn json_plan_reports_the_activation() {
    let all = splashc(&[
        "emit",
        "--format",
        "json",
        &policy("agent-worker.splashpol"),
    ]);
    assert_eq!(all.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).expect("json");
    assert_eq!(v["all_registered_roots_active"], true);
    assert_eq!(v["session_id"], serde_json::Value::Null);

    let one = splashc(&[
        "emit",
        "--format",
        "json",
        &policy("agent-worker.splashpol"),
        "--manifest",
        &golden_manifest("agent-worker/project-only.manifest.json"),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&one.stdout).expect("json");
    assert_eq!(v["all_registered_roots_active"], false);
    assert_eq!(v["session_id"], "s-1");
    assert_eq!(v["active_roots"].as_array().map(Vec::len), Some(1));
}

#[test]
fn output_is_byte_identical_across_runs() {
    for args in [
        vec!["emit"],
        vec!["emit", "--format", "json"],
        vec!["emit", "--bpf"],
    ] {
        let mut full = args.clone();
        let p = policy("demo.splashpol");
        full.push(&p);
        full.extend(["--arch", "aarch64"]);
        let a = splashc(&full);
        let b = splashc(&full);
        assert_eq!(a.status.code(), Some(0), "{args:?}: {}", text(&a.stderr));
        assert_eq!(a.stdout, b.stdout, "{args:?}");
    }
}

#[test]
fn bpf_is_raw_filter_bytes() {
    let out = splashc(&[
        "emit",
        "--bpf",
        &policy("demo.splashpol"),
        "--arch",
        "x86_64",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!out.stdout.is_empty() && out.stdout.len().is_multiple_of(8));
    let none = splashc(&["emit", "--bpf", &policy("minimal.splashpol")]);
    assert_eq!(
        none.status.code(),
        Some(1),
        "no seccomp profile is a policy error"
    );
}

#[test]
fn exit_statuses() {
    let bad_manifest = splashc(&[
        "emit",
        &policy("agent-worker.splashpol"),
        "--manifest",
        &golden_manifest("agent-worker/unknown-root.manifest.json"),
    ]);
    assert_eq!(bad_manifest.status.code(), Some(1));
    assert!(text(&bad_manifest.stderr).contains("`nope`"));
    assert!(
        bad_manifest.stdout.is_empty(),
        "nothing is printed for a refused plan"
    );

    let missing = splashc(&["emit", "/nonexistent/policy.splashpol"]);
    assert_eq!(missing.status.code(), Some(2));
    let conflict = splashc(&[
        "emit",
        "--argv",
        "--format",
        "json",
        &policy("demo.splashpol"),
    ]);
    assert_eq!(conflict.status.code(), Some(2));
    let arch = splashc(&["emit", &policy("demo.splashpol"), "--arch", "mips"]);
    assert_eq!(arch.status.code(), Some(2));
}

#[test]
fn compiled_artifact_emits_the_same_plan_and_refuses_tampering() {
    let scratch = tempfile::Builder::new()
        .prefix("splashc-emit-")
        .tempdir()
        .expect("temp dir");
    let art = scratch.path().join("agent.splashpolc");
    let out = splashc(&[
        "compile",
        &policy("agent-worker.splashpol"),
        "-o",
        &art.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let bytes = std::fs::read(&art).expect("artifact written");
    let head: serde_json::Value = serde_json::from_slice(&bytes).expect("json artifact");
    assert_eq!(head["format"], "splashpol-compiled");
    assert_eq!(head["version"], splashpol::artifact::VERSION);

    let from_source = splashc(&[
        "emit",
        "--format",
        "json",
        &policy("agent-worker.splashpol"),
    ]);
    let from_artifact = splashc(&["emit", "--format", "json", &art.to_string_lossy()]);
    assert_eq!(
        from_artifact.status.code(),
        Some(0),
        "{}",
        text(&from_artifact.stderr)
    );
    assert_eq!(from_source.stdout, from_artifact.stdout);

    // A hand edit that weakens the sandbox is refused at load.
    let tampered = text(&bytes).replace("\"pin_mounts\": true", "\"pin_mounts\": false");
    assert_ne!(tampered, text(&bytes));
    std::fs::write(&art, &tampered).expect("write");
    let refused = splashc(&["emit", &art.to_string_lossy()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("digest"),
        "{}",
        text(&refused.stderr)
    );

    let again = splashc(&[
        "compile",
        &art.to_string_lossy(),
        "-o",
        &art.to_string_lossy(),
    ]);
    assert_eq!(again.status.code(), Some(2), "an artifact is not source");
}
