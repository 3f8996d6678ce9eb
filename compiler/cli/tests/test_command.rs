//! `splashc test` before anything is launched: an expectation the policy can
//! never meet fails the test (exit 1) naming it, a policy without
//! expectations or a missing probe cannot be tested (exit 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled demo policy without its own `expect` block.
fn demo_without_expect(demo: &str) -> String {
    match demo.find("\n  # What `splashc test` checks") {
        Some(at) => {
            let end = at + demo[at..].find("\n  }\n").map_or(0, |e| e + 4);
            format!("{}{}", &demo[..at], &demo[end..])
        }
        None => demo.to_string(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bundled demo policy with `block` added as its last statement.
fn demo_with(block: &str) -> String {
    let demo = std::fs::read_to_string(workspace().join("policies/demo.splashpol")).expect("demo");
    let demo = demo_without_expect(&demo);
    let end = demo.rfind('}').expect("closing brace");
    format!("{}\n  {block}\n}}\n", demo[..end].trim_end())
}

fn test(policy: &str, extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("policy.splashpol");
    std::fs::write(&path, policy).expect("policy");
    Command::new(env!("CARGO_BIN_EXE_splashc"))
        .arg("test")
        .arg(&path)
        .args(extra)
        .output()
        .expect("run splashc")
}

#[test]
fn writable_usr_in_the_demo_fails_naming_that_expectation() {
    let policy = demo_with(
        r#"expect { writable "/usr"  writable "/workspace/scratch" max 8 MiB  hidden "/etc"  syscall denied unshare }"#,
    );
    let out = test(&policy, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("splash::check::impossible-expectation"),
        "{stderr}"
    );
    assert!(stderr.contains(r#"expect { writable "/usr""#), "{stderr}");
    assert!(
        stderr.contains("`/usr` is read-only in this sandbox"),
        "{stderr}"
    );
    // Only that entry is wrong: nothing else is reported.
    assert_eq!(stderr.matches("  × ").count(), 1, "{stderr}");
}

#[test]
fn a_policy_without_expectations_cannot_be_tested() {
    let demo = std::fs::read_to_string(workspace().join("policies/demo.splashpol")).expect("demo");
    let out = test(&demo_without_expect(&demo), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no `expect` block"), "{stderr}");
}

#[test]
fn a_missing_probe_is_named() {
    let policy = demo_with(r#"expect { hidden "/etc" }"#);
    let out = test(&policy, &["--probe", "/nonexistent/splash-probe"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no test probe at `/nonexistent/splash-probe`"),
        "{stderr}"
    );
}
