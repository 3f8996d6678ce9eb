//! `splashc diff` end to end: exit status 1 on a widening (with the spans of
//! both files), 0 on a narrowing or identical policies, 3 on a policy with
//! errors, 2 on a missing file.

use std::path::Path;
use std::process::{Command, Output};

fn splashc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(args)
        .output()
        .expect("run splashc")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = tempfile::Builder::new()
            .prefix(&format!("splashc-diff-{tag}-"))
            .tempdir()
            .expect("temp dir");
        Dir(d)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.path().join(name);
        std::fs::write(&p, text).expect("write policy");
        p.to_str().expect("utf-8 path").to_string()
    }
}

fn demo() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/demo.splashpol");
    std::fs::read_to_string(p).expect("read demo policy")
}

#[test]
fn a_widening_exits_1_and_the_reverse_narrowing_exits_0() {
    let dir = Dir::new("wide");
    let a = dir.write("a.splashpol", &demo());
    let b = dir.write(
        "b.splashpol",
        // Without the filter, the demo cannot expect a denied syscall.
        &demo()
            .replace("seccomp deny-known-escape-surface", "")
            .replace("    syscall denied unshare\n", ""),
    );
    let wide = splashc(&["diff", &a, &b, "--arch", "x86_64", "--format", "json"]);
    assert_eq!(wide.status.code(), Some(1), "{}", text(&wide.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&wide.stdout).expect("json");
    let x = &doc["differences"][0];
    assert_eq!(x["layer"], "seccomp");
    assert_eq!(x["change"], "widened");
    assert_eq!(x["a"]["text"], "seccomp deny-known-escape-surface");
    assert_eq!(x["a"]["file"], a.as_str());
    assert!(x["b"].is_null(), "B leaves seccomp at its default");

    let narrow = splashc(&["diff", &b, &a, "--arch", "x86_64"]);
    assert_eq!(narrow.status.code(), Some(0), "{}", text(&narrow.stderr));
    let out = text(&narrow.stdout);
    assert!(out.contains("narrowed seccomp"), "{out}");
    assert!(out.ends_with("0 widened, 1 narrowed\n"), "{out}");
}

#[test]
fn identical_policies_exit_0() {
    let dir = Dir::new("same");
    let a = dir.write("a.splashpol", &demo());
    // Comments and layout do not change the sandbox.
    let b = dir.write(
        "b.splashpol",
        &demo().replace("  tmp private", "\n  # tmp\n  tmp private"),
    );
    let out = splashc(&["diff", &a, &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("the effective sandboxes are identical"));
}

#[test]
fn errors_exit_3_and_missing_files_exit_2() {
    let dir = Dir::new("bad");
    let a = dir.write("a.splashpol", &demo());
    let bad = dir.write("bad.splashpol", "splashpol 1\npolicy \"bad\" {\n}\n");
    let out = splashc(&["diff", &a, &bad]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let missing = dir.0.path().join("missing.splashpol");
    let out = splashc(&["diff", &a, missing.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn another_bubblewrap_is_a_widening_both_ways_at_its_path() {
    let dir = Dir::new("bwrap");
    let a = dir.write("a.splashpol", &demo());
    let b = dir.write(
        "b.splashpol",
        &demo().replace("\"/usr/bin/bwrap\"", "\"/tmp/evil/bwrap\""),
    );
    for (x, y) in [(&a, &b), (&b, &a)] {
        let out = splashc(&["diff", x, y, "--arch", "x86_64", "--format", "json"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let d = &doc["differences"];
        assert_eq!(d.as_array().map(Vec::len), Some(1), "{d}");
        assert_eq!(d[0]["layer"], "programs");
        assert_eq!(d[0]["change"], "widened");
        // Both sides point at the path token, not the statement start.
        for side in ["a", "b"] {
            let at = &d[0][side];
            assert_eq!(at["column"], 14, "{at}");
            let len = at["end"].as_u64().expect("end") - at["start"].as_u64().expect("start");
            assert!(len == 16 || len == 17, "{at}");
        }
    }
}
