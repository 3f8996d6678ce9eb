//! The diff corpus: each directory under `tests/diff/` holds a pair of
//! policies, `a.splashpol` and `b.splashpol`, and the expected output of
//! `splashpol::diff` both ways round (`a-b.txt`, `b-a.txt`), each ending with
//! the verdict a CI job acts on (`widened: true|false`). The cases are the
//! changes a review must not miss: another Bubblewrap or cgroup runner,
//! a dropped `required`, another worker argument, a longer join timeout,
//! more active roots, dropped executable pinning, quota and aggregate
//! ceilings; and one that changes nothing.
//!
//! A pair without its expected output fails. To write or refresh the
//! expected files, run with `SPLASH_BLESS=1` and review the diff:
//!
//! ```text
//! SPLASH_BLESS=1 cargo test -p splashpol --test diff
//! ```

use std::path::{Path, PathBuf};

use splash_require_host::bless_command;
use splash_require_host::snapshot::check_snapshot;
use splashpol::model::Policy;
use splashpol::plan::{Arch, LaunchPlan};
use splashpol::{activate, artifact, diff, lower};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff")
}

/// The checked policy and its plan for `x86_64` with every root active.
fn lowered(source: &str, name: &str) -> (Policy, LaunchPlan) {
    let outcome = splashpol::check_source(name, source);
    assert!(
        !outcome.has_errors(),
        "{}",
        outcome.render_human(name, source)
    );
    let policy = outcome.policy.expect("checked policy");
    let activation = activate::activate(&policy, None).expect("activate");
    let plan = lower::lower(
        &policy,
        &activation,
        Arch::X86_64,
        &artifact::digest(source.as_bytes()),
    )
    .expect("lower");
    (policy, plan)
}

/// The human diff from `a` to `b` with its verdict.
fn rendered(a: (&str, &str), b: (&str, &str)) -> String {
    let (pa, la) = lowered(a.1, a.0);
    let (pb, lb) = lowered(b.1, b.0);
    let sa = diff::Side {
        file: a.0,
        source: a.1,
        policy: &pa,
        plan: &la,
    };
    let sb = diff::Side {
        file: b.0,
        source: b.1,
        policy: &pb,
        plan: &lb,
    };
    let d = diff::diff(&sa, &sb);
    let mut text = diff::render_human(&d);
    text.push_str(&format!("widened: {}\n", d.widened()));
    text
}

#[test]
fn corpus_pairs_diff_as_expected_both_ways() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("read tests/diff")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().and_then(|n| n.to_str()).expect("utf-8");
        let read = |f: &str| {
            std::fs::read_to_string(case.join(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e}"))
        };
        let (a, b) = (read("a.splashpol"), read("b.splashpol"));
        let (fa, fb) = (format!("{name}/a.splashpol"), format!("{name}/b.splashpol"));
        for (expected, x, y) in [
            (
                "a-b.txt",
                (fa.as_str(), a.as_str()),
                (fb.as_str(), b.as_str()),
            ),
            (
                "b-a.txt",
                (fb.as_str(), b.as_str()),
                (fa.as_str(), a.as_str()),
            ),
        ] {
            let text = rendered(x, y);
            if let Err(f) = check_snapshot(&case.join(expected), &text, bless_command!()) {
                failures.push(f);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
