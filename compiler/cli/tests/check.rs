//! `splashc check` as CI runs it: standard input, `--quiet`,
//! `--deny-warnings`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_splashc"))
        .arg("check")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run splashc");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        input.write_all(bytes).expect("write stdin");
    }
    drop(input);
    child.wait_with_output().expect("wait")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_dash_reads_the_policy_from_standard_input() {
    let demo = std::fs::read(workspace().join("policies/demo.splashpol")).expect("demo");
    let o = check(&["-"], Some(&demo));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "<stdin>: ok\n");

    let bad = b"splashpol 1\npolicy \"x\" {\n  wroker \"/a\"\n}\n";
    let o = check(&["-", "--format", "json"], Some(bad));
    assert_eq!(o.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(doc["files"][0]["file"], "<stdin>");

    // More than the bound is refused like a large file.
    let big = vec![b'#'; 1024 * 1024 + 1];
    let o = check(&["-"], Some(&big));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("holds more than 1 MiB"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn quiet_prints_errors_only_and_denied_warnings_fail() {
    let strict = workspace().join("policies/strict-allowlist.splashpol");
    let strict = strict.to_string_lossy();
    // Control: the policy checks with a warning, which is shown.
    let o = check(&[&strict], None);
    assert_eq!(o.status.code(), Some(0));
    let shown = text(&o.stderr);
    assert!(
        shown.contains("arch_prctl") && shown.contains("0 errors and"),
        "{shown}"
    );

    let o = check(&["--quiet", &strict], None);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));

    let o = check(&["--deny-warnings", &strict], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("(warnings denied)"),
        "{}",
        text(&o.stderr)
    );

    let o = check(&["--quiet", "--deny-warnings", &strict], None);
    assert_eq!(o.status.code(), Some(1));
    let shown = text(&o.stderr);
    assert!(
        shown.contains("arch_prctl") && !shown.contains("errors and"),
        "{shown}"
    );

    // Errors are printed under `--quiet`.
    let o = check(
        &["--quiet", "-"],
        Some(b"splashpol 1\npolicy \"x\" {\n  wroker \"/a\"\n}\n"),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("wroker"), "{}", text(&o.stderr));
}
