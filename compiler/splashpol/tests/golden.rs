//! Golden launch plans: for every policy in `policies/`, the argv and the
//! JSON plan with every registered root active (case `all`), and the same
//! for every test manifest in `tests/golden/<policy>/<case>.manifest.json`.
//! A failing activation or lowering is recorded as `<case>.err`.
//!
//! An input without its expected output fails. To write or refresh the
//! expected files, run with `SPLASH_BLESS=1` and review the diff:
//!
//! ```text
//! SPLASH_BLESS=1 cargo test -p splashpol --test golden
//! ```
//!
//! The architecture is fixed (`x86_64`) so the files are the same on every
//! host. In the JSON files the seccomp program is replaced by its length and
//! BLAKE3 digest (the program itself is covered by the seccomp crate's own
//! tests), so a code-generation change shows up as one line.

use std::path::{Path, PathBuf};

use splash_manifest::CapabilityManifest;
use splash_require_host::bless_command;
use splash_require_host::snapshot::{check_no_snapshot, check_snapshot};
use splashpol::plan::{Arch, LaunchPlan};
use splashpol::{activate, artifact, emit, lower};

/// The command that (re)writes the expected files.
const BLESS: &str = bless_command!();

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The argv text: one argument per line, shell-quoted, program first.
fn argv_text(plan: &LaunchPlan) -> String {
    let mut text = String::new();
    if plan.all_registered_roots_active() {
        text.push_str("# no manifest: every registered file root is active\n");
    }
    for arg in plan.display_command_line() {
        text.push_str(&emit::shell_quote(&arg));
        text.push('\n');
    }
    text
}

fn json_text(plan: &LaunchPlan) -> String {
    let mut value = serde_json::to_value(plan).expect("plan to json");
    if let Some(seccomp) = plan.seccomp() {
        value["seccomp"]["program"] = serde_json::Value::String(format!(
            "<{} bytes, blake3 {}>",
            seccomp.program.len(),
            artifact::digest(&seccomp.program)
        ));
    }
    let mut text = serde_json::to_string_pretty(&value).expect("json text");
    text.push('\n');
    text
}

/// Produce the outputs of one case as (extension, text) pairs.
fn outputs(
    source: &str,
    name: &str,
    manifest: Option<&CapabilityManifest>,
) -> Vec<(&'static str, String)> {
    let outcome = splashpol::check_source(name, source);
    let failed = outcome.has_errors();
    let Some(policy) = outcome.policy.clone().filter(|_| !failed) else {
        return vec![(
            "err",
            format!("check failed:\n{}", outcome.render_human(name, source)),
        )];
    };
    let result = activate::activate(&policy, manifest)
        .map_err(|e| format!("activation: {e}\n"))
        .and_then(|a| {
            lower::lower(
                &policy,
                &a,
                Arch::X86_64,
                &artifact::digest(source.as_bytes()),
            )
            .map_err(|e| format!("lowering: {e}\n"))
        });
    match result {
        Ok(plan) => vec![("argv", argv_text(&plan)), ("json", json_text(&plan))],
        Err(e) => vec![("err", e)],
    }
}

#[test]
fn golden_plans() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut policies: Vec<PathBuf> = std::fs::read_dir(root().join("policies"))
        .expect("read policies/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    policies.sort();
    assert!(!policies.is_empty(), "no policies found");

    for policy_path in &policies {
        let stem = policy_path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8 name");
        let source = std::fs::read_to_string(policy_path).expect("read policy");
        let name = format!("policies/{stem}.splashpol");
        let dir = golden_dir().join(stem);

        // Cases: `all` (no manifest) and every manifest in the policy's dir.
        let mut cases: Vec<(String, Option<CapabilityManifest>)> = vec![("all".into(), None)];
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut manifests: Vec<PathBuf> = entries
                .map(|e| e.expect("dir entry").path())
                .filter(|p| p.to_string_lossy().ends_with(".manifest.json"))
                .collect();
            manifests.sort();
            for m in manifests {
                let file = m.file_name().and_then(|s| s.to_str()).expect("utf-8 name");
                let case = file.trim_end_matches(".manifest.json").to_string();
                let bytes = std::fs::read(&m).expect("read manifest");
                let manifest = CapabilityManifest::from_json(&bytes)
                    .unwrap_or_else(|e| panic!("test manifest {}: {e}", m.display()));
                cases.push((case, Some(manifest)));
            }
        }

        for (case, manifest) in &cases {
            let produced = outputs(&source, &name, manifest.as_ref());
            for ext in ["argv", "json", "err"] {
                let path = dir.join(format!("{case}.{ext}"));
                let want = produced.iter().find(|(e, _)| *e == ext).map(|(_, t)| t);
                checked += 1;
                let result = match want {
                    Some(text) => check_snapshot(&path, text, BLESS),
                    None => check_no_snapshot(&path, BLESS),
                };
                if let Err(f) = result {
                    failures.push(f);
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden mismatch(es) over {checked} files:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Every file in the golden directory belongs to a policy and a case.
#[test]
fn no_orphan_golden_files() {
    let Ok(entries) = std::fs::read_dir(golden_dir()) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        let stem = path
            .file_name()
            .and_then(|s| s.to_str())
            .expect("utf-8 name")
            .to_string();
        assert!(
            root()
                .join("policies")
                .join(format!("{stem}.splashpol"))
                .exists(),
            "golden dir `{stem}` has no policy `policies/{stem}.splashpol`"
        );
        for file in std::fs::read_dir(&path).expect("read golden dir") {
            let file = file.expect("dir entry").path();
            let name = file
                .file_name()
                .and_then(|s| s.to_str())
                .expect("utf-8")
                .to_string();
            if name.ends_with(".manifest.json") {
                continue;
            }
            let (case, _) = name.rsplit_once('.').expect("extension");
            assert!(
                case == "all" || path.join(format!("{case}.manifest.json")).exists(),
                "`{}` has no manifest `{case}.manifest.json`",
                file.display()
            );
        }
    }
}

/// Emitting twice gives byte-identical output, and an artifact round trip
/// gives the same plan as the source.
#[test]
fn deterministic_and_artifact_equivalent() {
    let source = std::fs::read_to_string(root().join("policies/agent-worker.splashpol"))
        .expect("read policy");
    let outcome = splashpol::check_source("agent-worker.splashpol", &source);
    let policy = outcome.policy.expect("policy checks");
    let digest = artifact::digest(source.as_bytes());
    let a = activate::activate(&policy, None).expect("activate");
    let one = json_text(&lower::lower(&policy, &a, Arch::X86_64, &digest).expect("lower"));
    let two = json_text(&lower::lower(&policy, &a, Arch::X86_64, &digest).expect("lower"));
    assert_eq!(one, two);

    let bytes = artifact::write(&policy, source.as_bytes()).expect("write artifact");
    assert_eq!(
        bytes,
        artifact::write(&policy, source.as_bytes()).expect("again")
    );
    let loaded = artifact::load(&bytes).expect("load artifact");
    assert_eq!(loaded.policy, policy);
    let from_artifact = lower::lower(&loaded.policy, &a, Arch::X86_64, &loaded.source_digest)
        .expect("lower artifact");
    assert_eq!(json_text(&from_artifact), one);
}
