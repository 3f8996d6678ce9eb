//! `splashc explain` end to end: with `--plan-only` the output is the golden
//! explanation of the library (the same bytes for JSON and `--dot`); without
//! it, the probes of this host are added and name what cannot be enforced.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn splashc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(args)
        .output()
        .expect("run splashc")
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn plan_only_output_is_the_golden_explanation() {
    let policy = repo("policies/demo.splashpol");
    let policy = policy.to_str().expect("utf-8 path");
    for (flags, golden) in [
        (&["--format", "json"][..], "demo.json"),
        (&["--dot"][..], "demo.dot"),
        (&[][..], "demo.txt"),
    ] {
        let mut args = vec!["explain", policy, "--arch", "x86_64", "--plan-only"];
        args.extend_from_slice(flags);
        let out = splashc(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let want =
            std::fs::read_to_string(repo(&format!("compiler/splashpol/tests/explain/{golden}")))
                .expect("golden file");
        assert_eq!(text(&out.stdout), want, "{flags:?}");
    }
}

#[test]
fn this_host_names_what_it_cannot_enforce() {
    let dir_guard = tempfile::Builder::new()
        .prefix("splashc-explain-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    let missing = dir.join("no-such-runtime");
    let policy = dir.join("p.splashpol");
    std::fs::write(
        &policy,
        format!(
            "splashpol 1\npolicy \"p\" {{\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/p/bin/w\"\n  runtime \"{}\" at \"/opt/p\"\n}}\n",
            missing.display()
        ),
    )
    .expect("write policy");
    let p = policy.to_str().expect("utf-8 path");
    let probed = splashc(&["explain", p, "--format", "json"]);
    let plan_only = splashc(&["explain", p, "--format", "json", "--plan-only"]);
    assert_eq!(probed.status.code(), Some(0), "{}", text(&probed.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&probed.stdout).expect("json");
    let gaps = doc["on_this_host"].as_array().expect("the host was probed");
    assert!(
        gaps.iter().any(|g| g["status"] == "missing"
            && g["detail"]
                .as_str()
                .is_some_and(|d| d.contains("no-such-runtime"))),
        "{gaps:?}"
    );
    // Control: the plan alone says nothing about this host.
    let doc: serde_json::Value = serde_json::from_slice(&plan_only.stdout).expect("json");
    assert!(doc["on_this_host"].is_null());
    assert_eq!(doc["policy"], "p");
}

#[test]
fn a_policy_with_errors_exits_1_and_a_bad_arch_exits_2() {
    let dir_guard = tempfile::Builder::new()
        .prefix("splashc-explain-bad-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    let policy = dir.join("bad.splashpol");
    std::fs::write(
        &policy,
        "splashpol 1\npolicy \"bad\" {\n  worker \"relative\"\n}\n",
    )
    .expect("write policy");
    let bad = splashc(&["explain", policy.to_str().expect("utf-8 path")]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    let demo = repo("policies/demo.splashpol");
    let arch = splashc(&["explain", demo.to_str().expect("utf-8"), "--arch", "vax"]);
    assert_eq!(arch.status.code(), Some(2), "{}", text(&arch.stderr));
}

#[test]
fn a_symlinked_source_shows_where_it_leads() {
    let dir_guard = tempfile::Builder::new()
        .prefix("splashc-explain-link-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    let link = dir.join("looks-harmless");
    std::os::unix::fs::symlink("/etc", &link).expect("symlink");
    let policy = dir.join("p.splashpol");
    std::fs::write(
        &policy,
        format!(
            "splashpol 1\npolicy \"p\" {{\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/p/bin/w\"\n  runtime \"{}\" at \"/opt/p\"\n  pin mounts\n}}\n",
            link.display()
        ),
    )
    .expect("write policy");
    let p = policy.to_str().expect("utf-8 path");
    let mount = |out: &Output| -> serde_json::Value {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        doc["mounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .find(|m| m["path"] == "/opt/p")
            .expect("the runtime mount")
            .clone()
    };
    let probed = mount(&splashc(&["explain", p, "--format", "json"]));
    assert_eq!(probed["resolution"], "differs", "{probed}");
    assert_eq!(probed["resolved"], "/etc");
    let human = text(&splashc(&["explain", p]).stdout);
    assert!(
        human.contains(&format!("<- {} (pinned) → /etc", link.display())),
        "{human}"
    );
    // Control: without probing, the source is unresolved and says so.
    let plan_only = mount(&splashc(&["explain", p, "--format", "json", "--plan-only"]));
    assert_eq!(plan_only["resolution"], "unresolved");
    assert!(plan_only["resolved"].is_null());
    let human = text(&splashc(&["explain", p, "--plan-only"]).stdout);
    assert!(human.contains("host sources unresolved"), "{human}");
    assert!(!human.contains("→"), "{human}");
}
