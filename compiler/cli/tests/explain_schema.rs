//! `schemas/explain.schema.json` against `splashc explain --format json`:
//!
//! - the explanation of every bundled policy validates, with the host
//!   probed and with `--plan-only`, for every architecture;
//! - the schema's enum sets are exactly the Rust enums' strings
//!   (`splashpol::explain::json_enums`), so neither can drift;
//! - every object in the schema refuses unknown properties and requires
//!   every property it names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schema_value() -> Value {
    let path = workspace().join("schemas/explain.schema.json");
    serde_json::from_slice(&std::fs::read(path).expect("schema")).expect("schema JSON")
}

fn bundled_policies() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(workspace().join("policies"))
        .expect("policies/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    out.sort();
    assert!(!out.is_empty());
    out
}

#[test]
fn the_explanation_of_every_bundled_policy_validates() {
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema_value())
        .expect("a valid draft 2020-12 schema");
    let mut failures = Vec::new();
    for policy in bundled_policies() {
        let p = policy.to_str().expect("utf-8 path");
        for flags in [
            &[][..],
            &["--plan-only"][..],
            &["--plan-only", "--arch", "aarch64"][..],
            &["--plan-only", "--arch", "riscv64"][..],
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_splashc"))
                .args(["explain", p, "--format", "json"])
                .args(flags)
                .output()
                .expect("run splashc");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{p} {flags:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
            for e in validator.iter_errors(&doc) {
                failures.push(format!("{p} {flags:?}: {e} at {}", e.instance_path()));
            }
            // Control: a sentence where an enum belongs fails.
            doc["mounts"][0]["kind"] = Value::from("root tmpfs");
            assert!(!validator.is_valid(&doc), "{p}: a sentence passed");
            doc["mounts"][0]["kind"] = Value::from("root-tmpfs");
            doc["exec"]["extra"] = Value::from(true);
            assert!(!validator.is_valid(&doc), "{p}: an unknown field passed");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_schema_enums_are_the_rust_enums() {
    let schema = schema_value();
    let defs = schema["$defs"].as_object().expect("$defs");
    let in_schema: BTreeMap<&str, Vec<&str>> = defs
        .iter()
        .filter_map(|(name, d)| {
            let values = d.get("enum")?.as_array().expect("enum list");
            Some((
                name.as_str(),
                values
                    .iter()
                    .map(|v| v.as_str().expect("string enum"))
                    .collect(),
            ))
        })
        .collect();
    let in_rust: BTreeMap<&str, Vec<&str>> = splashpol::explain::json_enums().into_iter().collect();
    assert_eq!(in_schema, in_rust);
}

/// Every object schema under `v`, by its location.
fn objects<'v>(v: &'v Value, at: String, out: &mut Vec<(String, &'v Value)>) {
    match v {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("object") {
                out.push((at.clone(), v));
            }
            for (k, child) in map {
                objects(child, format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                objects(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_object_is_closed_and_requires_its_properties() {
    let schema = schema_value();
    let mut found = Vec::new();
    objects(&schema, String::new(), &mut found);
    assert!(found.len() > 20, "{}", found.len());
    for (at, o) in found {
        assert_eq!(o["additionalProperties"], false, "{at}");
        let mut props: Vec<&str> = o["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .map(String::as_str)
            .collect();
        let mut required: Vec<&str> = o["required"]
            .as_array()
            .expect("required")
            .iter()
            .map(|v| v.as_str().expect("name"))
            .collect();
        props.sort_unstable();
        required.sort_unstable();
        assert_eq!(props, required, "{at}");
    }
}
