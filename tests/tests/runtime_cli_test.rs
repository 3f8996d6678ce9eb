//! `splashc test` end to end: the bundled demo policy with an `expect`
//! block, its worker's file swapped for the test probe inside the demo's
//! own sandbox under the real bwrap, every denial against a control launch.

mod runtime_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use runtime_support::{TempDir, bin_dir, serial};
use serde_json::Value;

/// The demo's expectations of the acceptance bar.
const EXPECT: &str = r#"expect { read-only "/usr"  writable "/workspace/scratch" max 8 MiB  hidden "/etc"  syscall denied unshare }"#;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `splashc` and the probe beside it, and bwrap; `None` (a loud skip) when
/// the host lacks one.
fn tools() -> Option<PathBuf> {
    let bwrap = splash_tests::bwrap_path();
    if !splash_tests::require_host(bwrap.is_some(), "bubblewrap") {
        return None;
    }
    let splashc = bin_dir().join("splashc");
    let probe = bin_dir().join("splash-probe");
    splash_tests::require_host(
        splashc.is_file() && probe.is_file(),
        "the splashc and splash-probe binaries (run `cargo build --workspace --bins` first)",
    )
    .then_some(splashc)
}

/// The demo policy with its runtime directory at `dir` (holding a stand-in
/// worker: `splashc test` replaces the file anyway) and `block` added.
fn demo_with(dir: &TempDir, block: &str) -> String {
    let demo = std::fs::read_to_string(workspace().join("policies/demo.splashpol")).expect("demo");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::fs::copy("/usr/bin/true", bin.join("splash-probe")).expect("stand-in worker");
    let demo = demo.replace(
        "runtime \"/opt/splash-demo\" at",
        &format!("runtime \"{}\" at", dir.path().display()),
    );
    let demo = demo_without_expect(&demo);
    let end = demo.rfind('}').expect("closing brace");
    format!("{}\n  {block}\n}}\n", demo[..end].trim_end())
}

fn run(splashc: &Path, policy: &str, args: &[&str]) -> Output {
    let work = TempDir::new("test-cmd");
    let path = work.path().join("policy.splashpol");
    std::fs::write(&path, policy).expect("policy");
    let mut cmd = Command::new(splashc);
    cmd.arg("test").arg(&path).args(args);
    cmd.output().expect("run splashc")
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

#[test]
fn the_demo_holds_its_expectations_each_against_a_control() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("demo-runtime");
    let out = run(&splashc, &demo_with(&dir, EXPECT), &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for line in [
        r#"ok       read-only "/usr""#,
        r#"ok       writable "/workspace/scratch" max 8 MiB"#,
        r#"ok       hidden "/etc""#,
        "ok       syscall denied unshare",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    // Each denial names its control, which succeeded.
    assert!(
        stdout.contains("control: a write succeeded on a tmpfs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("control: visible once the host's object is bound"),
        "{stdout}"
    );
    assert!(
        stdout.contains("control: without the filter the call succeeded"),
        "{stdout}"
    );
    assert!(stdout.contains("4 held, 0 failed, 0 unproven"), "{stdout}");

    // The same as JSON, TAP and JUnit.
    let out = run(&splashc, &demo_with(&dir, EXPECT), &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let statuses: Vec<&str> = doc["expectations"]
        .as_array()
        .expect("list")
        .iter()
        .map(|e| e["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, ["held"; 4]);
    let out = run(&splashc, &demo_with(&dir, EXPECT), &["--format", "tap"]);
    assert!(text(&out.stdout).starts_with("1..4\nok 1 - read-only \"/usr\"\n"));
    let out = run(&splashc, &demo_with(&dir, EXPECT), &["--format", "junit"]);
    assert!(text(&out.stdout).contains("tests=\"4\" failures=\"0\""));
}

/// `read-only` of the runtime mount the worker lives in has a control: a
/// tmpfs in its place with the worker's file (the probe) bound back into
/// it, with pinned executables and without.
#[test]
fn the_workers_own_runtime_mount_is_proven_read_only() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("demo-runtime");
    let block = r#"expect { read-only "/opt/splash-demo" }"#;
    let pinned = demo_with(&dir, block);
    assert!(pinned.contains("pin mounts, executables"), "{pinned}");
    let unpinned = pinned.replace("pin mounts, executables", "pin mounts");
    for policy in [pinned, unpinned] {
        let out = run(&splashc, &policy, &[]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
        assert!(
            stdout.contains(r#"ok       read-only "/opt/splash-demo""#),
            "{stdout}"
        );
        assert!(
            stdout.contains("a write failed with EROFS; control: a write succeeded on a tmpfs"),
            "{stdout}"
        );
    }
}

/// A policy with a network broker is tested under a real broker started in
/// its parent: the broker mount is visible and read-only (against the tmpfs
/// control), and the broker's private directory is gone afterwards.
#[test]
fn a_brokered_policy_is_tested_under_a_real_broker_that_leaves_nothing() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("demo-runtime");
    let parent = TempDir::new("test-broker-parent");
    let block = format!(
        "network-broker endpoint parent \"{}\" at \"/run/splash/network\" ids [\"api.a\", \"api.b\"]\n  expect {{ read-only \"/run/splash/network\"  hidden \"/etc\" }}",
        parent.path().display()
    );
    let out = run(&splashc, &demo_with(&dir, &block), &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(r#"ok       read-only "/run/splash/network""#),
        "{stdout}"
    );
    assert!(
        stdout.contains("control: a write succeeded on a tmpfs"),
        "{stdout}"
    );
    let left: Vec<_> = std::fs::read_dir(parent.path())
        .expect("parent")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "the broker left {left:?} behind");
}

#[test]
fn writable_usr_fails_and_is_named() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("demo-runtime");
    let block = EXPECT.replace(r#"read-only "/usr""#, r#"writable "/usr""#);
    let out = run(&splashc, &demo_with(&dir, &block), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("splash::check::impossible-expectation"),
        "{stderr}"
    );
    assert!(stderr.contains(r#"expect { writable "/usr""#), "{stderr}");
}

/// What only the launch can show: a manifest that leaves the scratch root
/// out makes `writable` fail inside the sandbox.
#[test]
fn a_root_the_manifest_leaves_out_fails_writable_inside_the_sandbox() {
    let _serial = serial();
    let Some(splashc) = tools() else { return };
    let dir = TempDir::new("demo-runtime");
    let work = TempDir::new("test-manifest");
    let manifest = work.path().join("manifest.json");
    std::fs::write(
        &manifest,
        r#"{"protocol_version": 5, "session_id": "t-1", "grants": [{"tool": "probe.path", "format": "json", "max_calls": 1, "max_input_bytes": 1024, "max_output_bytes": 1024, "resources": []}]}"#,
    )
    .expect("manifest");
    let manifest = manifest.to_str().expect("utf-8");
    let out = run(
        &splashc,
        &demo_with(&dir, EXPECT),
        &["--manifest", manifest],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(r#"FAILED   writable "/workspace/scratch" max 8 MiB"#),
        "{stdout}"
    );
    assert!(stdout.contains("3 held, 1 failed"), "{stdout}");
}
