//! `splashc test --battery` end to end: the escape probe in the bundled
//! demo policy's own sandbox under the real bwrap, where every attempt is
//! held, and the same policy with `/tmp` bounded above what the battery's
//! fill writes, where the fill escapes the `tmp-size` layer.

mod runtime_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use runtime_support::{TempDir, bin_dir, serial};
use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `splashc` and the escape probe beside it, and bwrap; `None` (a loud
/// skip) when the host lacks one.
fn tools() -> Option<PathBuf> {
    let bwrap = splash_tests::bwrap_path();
    if !splash_tests::require_host(bwrap.is_some(), "bubblewrap") {
        return None;
    }
    let splashc = bin_dir().join("splashc");
    let probe = bin_dir().join("splash-escape-probe");
    splash_tests::require_host(
        splashc.is_file() && probe.is_file(),
        "the splashc and splash-escape-probe binaries, statically linked (run `cargo build --workspace --bins` first)",
    )
    .then_some(splashc)
}

/// The demo policy with its runtime directory at `dir` (holding a stand-in
/// worker: the battery replaces the file anyway), `edit` applied.
fn demo(dir: &TempDir, edit: impl Fn(String) -> String) -> String {
    let demo = std::fs::read_to_string(workspace().join("policies/demo.splashpol")).expect("demo");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::fs::copy("/usr/bin/true", bin.join("splash-probe")).expect("stand-in worker");
    edit(demo.replace(
        "runtime \"/opt/splash-demo\" at",
        &format!("runtime \"{}\" at", dir.path().display()),
    ))
}

fn run(splashc: &Path, policy: &str, args: &[&str]) -> Output {
    let work = TempDir::new("battery-cmd");
    let path = work.path().join("policy.splashpol");
    std::fs::write(&path, policy).expect("policy");
    Command::new(splashc)
        .args(["test", "--battery"])
        .arg(&path)
        .args(args)
        .output()
        .expect("run splashc")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr)))
}

fn status<'a>(doc: &'a Value, attempt: &str) -> &'a str {
    doc["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .find(|a| a["attempt"] == attempt)
        .and_then(|a| a["status"].as_str())
        .unwrap_or_else(|| panic!("no attempt {attempt}: {doc}"))
}

#[test]
fn the_demo_holds_the_battery() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("battery-demo");
    let policy = demo(&dir, |p| p);
    let out = run(&splashc, &policy, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["escaped"], 0, "{doc}");
    // The probe reported who it ran as: it started in the sandbox.
    assert!(doc["ids"]["uid"].is_u64(), "{doc}");
    assert!(doc["held"].as_u64().is_some_and(|h| h >= 60), "{doc}");
    for attempt in [
        "unshare-user",
        "mount-tmpfs",
        "fsopen",
        "core-pattern-open-write",
        "keyctl",
        "ptrace-pid1",
        "proc-pid1-mem-open-write",
        "exec-dev-shm-copy",
        "capset-sys-admin",
        "fd-leak",
        "env-leak",
        "tcp-host-loopback",
        "abstract-socket-host",
        "kill-host-canary",
        "fill-tmp",
        "fill-scratch",
    ] {
        assert_eq!(status(&doc, attempt), "held", "{attempt}: {doc}");
    }
    // Without Landlock in the demo, the exec of a memfd copy works and is
    // allowed by design, not held: the probe's attempts really run.
    assert_eq!(status(&doc, "exec-memfd-fexecve"), "allowed", "{doc}");

    let out = run(&splashc, &policy, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(" 0 escaped, "),
        "{}",
        text(&out.stdout)
    );
    let out = run(&splashc, &policy, &["--format", "tap"]);
    assert!(
        text(&out.stdout).starts_with("1.."),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !text(&out.stdout).contains("not ok"),
        "{}",
        text(&out.stdout)
    );
    let out = run(&splashc, &policy, &["--format", "junit"]);
    assert!(text(&out.stdout).contains("failures=\"0\""));
}

/// A worker whose runtime directory is mounted at its own host path (as the
/// demo's `/opt/splash-demo` is): the worker's path in `/proc/1/cmdline` is
/// that host path too, and proves nothing, so the pid-1 check looks for the
/// escape probe's own directory instead, and the battery still holds.
#[test]
fn a_runtime_mount_at_its_own_host_path_is_no_escape() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    // Not under /tmp, which the demo's private /tmp reserves.
    let dir = TempDir::new_in(Path::new("/var/tmp"), "splash-battery-same-path");
    let shown = dir.path().display().to_string();
    let policy = demo(&dir, |p| p.replace("/opt/splash-demo", &shown));
    assert!(
        policy.contains(&format!("runtime \"{shown}\" at \"{shown}\"")),
        "{policy}"
    );
    let out = run(&splashc, &policy, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["escaped"], 0, "{doc}");
    assert_eq!(status(&doc, "pid1-cmdline-host-path"), "held", "{doc}");
}

#[test]
fn a_tmp_bound_above_the_fill_escapes() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("battery-weak");
    let weak = demo(&dir, |p| {
        p.replace("tmp private size 16 MiB", "tmp private size 1 GiB")
    });
    let out = run(&splashc, &weak, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(status(&doc, "fill-tmp"), "escaped", "{doc}");
    assert_eq!(doc["escaped"], 1, "{doc}");
    let out = run(&splashc, &weak, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout)
            .contains("| `fill-tmp` | write 128 MiB into /tmp | tmp-size, rlimits | **ESCAPE** |"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn without_an_escape_probe_it_cannot_run() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("battery-none");
    let out = run(
        &splashc,
        &demo(&dir, |p| p),
        &["--escape-probe", "/nonexistent/splash-escape-probe"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no escape probe at `/nonexistent/splash-escape-probe`"),
        "{}",
        text(&out.stderr)
    );
}
