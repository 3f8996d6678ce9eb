//! Golden explanations: for every policy in `policies/`, the human text, the
//! JSON document and the Graphviz mount graph of `splashpol::explain` for the plan with every
//! registered root active, lowered for `x86_64`. An input without its
//! expected output fails. To write or refresh the expected files, run with
//! `SPLASH_BLESS=1` and review the diff:
//!
//! ```text
//! SPLASH_BLESS=1 cargo test -p splashpol --test explain
//! ```

use std::path::{Path, PathBuf};

use splashpol::plan::Arch;
use splashpol::{activate, artifact, explain, lower};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/explain")
}

fn explanation(source: &str, name: &str) -> explain::Explanation {
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
    explain::explain(&policy, &plan)
}

#[test]
fn golden_explanations() {
    let bless = std::env::var("SPLASH_BLESS").as_deref() == Ok("1");
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
            if bless {
                std::fs::create_dir_all(expected_dir()).expect("create dir");
                std::fs::write(&file, &text).expect("write expected");
                continue;
            }
            match std::fs::read_to_string(&file) {
                Ok(want) if want == text => {}
                Ok(want) => failures.push(format!(
                    "{} differs:\n--- expected\n{want}\n--- produced\n{text}",
                    file.display()
                )),
                Err(_) => failures.push(format!(
                    "{} is missing (run with SPLASH_BLESS=1)",
                    file.display()
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
