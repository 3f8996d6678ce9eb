//! Golden explanations and diffs: for every policy in `policies/`, the human text, the
//! JSON document and the Graphviz mount graph of `splashpol::explain` for the plan with every
//! registered root active, lowered for `x86_64`. An input without its
//! expected output fails. To write or refresh the expected files, run with
//! `SPLASH_BLESS=1` and review the diff:
//!
//! ```text
//! SPLASH_BLESS=1 cargo test -p splashpol --test explain
//! ```

use std::path::{Path, PathBuf};

use splash_require_host::bless_command;
use splash_require_host::snapshot::check_snapshot;
use splashpol::model::Policy;
use splashpol::plan::{Arch, LaunchPlan};
use splashpol::{activate, artifact, diff, explain, lower};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/explain")
}

/// The checked policy and its plan for `x86_64` with every root active.
fn lowered(source: &str, name: &str) -> (Policy, LaunchPlan) {
    let outcome = splashpol::check_source(name, source);
    assert!(!outcome.has_errors(), "{name} has errors");
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

fn explanation(source: &str, name: &str) -> explain::Explanation {
    let (policy, plan) = lowered(source, name);
    let mut e = explain::explain(&policy, &plan);
    // As `splashc explain` does: the `expect` entries come from the source.
    if let Some((_, xs)) = splashpol::expect::of_source(source) {
        e.expectations = xs.into_iter().map(|x| x.text).collect();
    }
    e
}

/// Compares `text` with the expected file, or writes it under `SPLASH_BLESS=1`.
fn compare_or_bless(file: &Path, text: &str, failures: &mut Vec<String>) {
    if let Err(f) = check_snapshot(file, text, bless_command!()) {
        failures.push(f);
    }
}

#[test]
fn golden_explanations() {
    let mut policies: Vec<PathBuf> = std::fs::read_dir(root().join("policies"))
        .expect("read policies/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    policies.sort();
    assert!(!policies.is_empty());
    let mut failures = Vec::new();
    for path in &policies {
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("utf-8");
        let source = std::fs::read_to_string(path).expect("read policy");
        let e = explanation(&source, &format!("policies/{stem}.splashpol"));
        // Deterministic: the same plan explains to the same text.
        assert_eq!(
            explain::render_human(&e),
            explain::render_human(&explanation(&source, stem))
        );
        let json = serde_json::to_string_pretty(&e).expect("json") + "\n";
        for (ext, text) in [
            ("txt", explain::render_human(&e)),
            ("json", json),
            ("dot", explain::render_dot(&e)),
        ] {
            let file = expected_dir().join(format!("{stem}.{ext}"));
            compare_or_bless(&file, &text, &mut failures);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Golden diffs between bundled policies, both directions: the human text
/// and the exit-relevant verdict.
#[test]
fn golden_diffs() {
    let mut failures = Vec::new();
    for (a, b) in [
        ("minimal", "demo"),
        ("demo", "minimal"),
        ("strict-allowlist", "agent-worker"),
        ("demo", "demo"),
    ] {
        let load = |stem: &str| {
            let file = format!("policies/{stem}.splashpol");
            let source = std::fs::read_to_string(root().join(&file)).expect("read policy");
            let (policy, plan) = lowered(&source, &file);
            (file, source, policy, plan)
        };
        let (fa, sa, pa, la) = load(a);
        let (fb, sb, pb, lb) = load(b);
        let side = |file, source, policy, plan| diff::Side {
            file,
            source,
            policy,
            plan,
        };
        let d = diff::diff(&side(&fa, &sa, &pa, &la), &side(&fb, &sb, &pb, &lb));
        let mut text = diff::render_human(&d);
        text.push_str(&format!("widened: {}\n", d.widened()));
        let file = expected_dir().join(format!("diff-{a}-{b}.txt"));
        compare_or_bless(&file, &text, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
