//! `splashc doctor` on this host: the demo policy (with its runtime in a
//! temporary directory) is enforceable, the cgroup example names the missing
//! controllers, a missing Bubblewrap names the fix.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn splashc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(args)
        .output()
        .expect("run splashc")
}

fn policy_text(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../policies")
        .join(name);
    std::fs::read_to_string(p).expect("read policy")
}

fn temp_dir(tag: &str) -> tempfile::TempDir {
    // 0755, as `mkdir` makes it: the sandboxed worker may run as another uid.
    tempfile::Builder::new()
        .prefix(&format!("splashc-doctor-{tag}-"))
        .permissions(std::fs::Permissions::from_mode(0o755))
        .tempdir()
        .expect("temp dir")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The demo policy with the host side of its `/opt/splash-demo` runtime mount
/// replaced by a temporary directory holding an executable worker.
fn demo_in(dir: &Path, bwrap: &str) -> PathBuf {
    let bin = dir.join("runtime/bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    std::fs::copy(
        std::env::current_exe().expect("test binary"),
        bin.join("splash-probe"),
    )
    .expect("copy an executable");
    let runtime = dir.join("runtime").display().to_string();
    let source = policy_text("demo.splashpol")
        .replace(
            "runtime \"/opt/splash-demo\"",
            &format!("runtime \"{runtime}\""),
        )
        .replace("/usr/bin/bwrap", bwrap);
    let path = dir.join("demo.splashpol");
    std::fs::write(&path, source).expect("write policy");
    path
}

fn bwrap_present() -> bool {
    splash_require_host::require_host(
        Path::new("/usr/bin/bwrap").exists(),
        "bubblewrap at /usr/bin/bwrap",
    )
}

#[test]
fn the_demo_policy_is_enforceable_here() {
    if !bwrap_present() {
        return;
    }
    let scratch = temp_dir("demo");
    let dir = scratch.path();
    let policy = demo_in(dir, "/usr/bin/bwrap");
    let out = splashc(&["doctor", policy.to_str().expect("utf-8")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("every control of the plan can be enforced"),
        "{stdout}"
    );
    assert!(stdout.contains("ok      bubblewrap options"), "{stdout}");
    assert!(stdout.contains("ok      seccomp"), "{stdout}");
    assert!(
        stdout.contains(
            "splash-probe` is reached through a read-only mount and is an executable regular file"
        ),
        "{stdout}"
    );

    let json = splashc(&[
        "doctor",
        "--format",
        "json",
        policy.to_str().expect("utf-8"),
    ]);
    assert_eq!(json.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json report");
    assert_eq!(doc["enforceable"], true);
    assert_eq!(doc["policy"], "demo");
    let checks = doc["checks"].as_array().expect("checks");
    assert!(checks.iter().all(|c| c["status"] != "missing"), "{doc:#}");
}

#[test]
fn a_missing_bubblewrap_fails_with_the_fix() {
    let scratch = temp_dir("nobwrap");
    let dir = scratch.path();
    let policy = demo_in(dir, "/opt/splash-does-not-exist/bwrap");
    let out = splashc(&["doctor", policy.to_str().expect("utf-8")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "missing bubblewrap          failed to resolve source `/opt/splash-does-not-exist/bwrap`: No such file or directory"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("fix: install Bubblewrap"), "{stdout}");
    assert!(
        stdout.contains("cannot be enforced on this host"),
        "{stdout}"
    );
}

#[test]
fn the_cgroup_example_reports_what_is_missing() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/cgroup-limits.splashpol");
    let out = splashc(&["doctor", "--format", "json", p.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(doc["enforceable"], false);
    let cgroup: Vec<&serde_json::Value> = doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["control"] == "cgroup")
        .collect();
    assert!(cgroup.iter().all(|c| c["status"] == "missing"), "{doc:#}");
    // Whatever this host lacks, the report names controllers or the parent.
    assert!(
        cgroup.iter().any(|c| {
            let d = c["detail"].as_str().unwrap_or("");
            d.contains("controller") || d.contains("/sys/fs/cgroup/splash-workers")
        }),
        "{doc:#}"
    );
    assert!(cgroup.iter().all(|c| c["fix"].is_string()));
}

#[test]
fn usage_and_io_errors_exit_two() {
    let out = splashc(&["doctor", "/does/not/exist.splashpol"]);
    assert_eq!(out.status.code(), Some(2));
    let out = splashc(&["doctor"]);
    assert_eq!(out.status.code(), Some(2));
}
