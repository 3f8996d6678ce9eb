//! The JSON Schemas in `schemas/` against real files and the serde types:
//!
//! - every bundled manifest the decoder accepts, and the artifact `splashc
//!   compile` writes for every bundled policy and every valid corpus policy,
//!   validates;
//! - broken documents (a missing field, a wrong type, an unknown field, a bad
//!   token or path) fail, and the Rust decoders refuse them too;
//! - the schemas stay in sync with the types: a value that uses every field
//!   and every enum variant (built with struct literals and exhaustive
//!   matches, so a new field or variant does not compile until it is added
//!   here) validates, and the property names of each schema are exactly the
//!   keys such values serialize.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use splash_protocol::{CapabilityManifest, Grant, GrantFormat, Resource, ResourceKind, Token};
use splashpol::model::{
    AbsPath, Access, AggregateQuota, BrokerCatalog, CgroupLimits, CgroupPolicy, FileRoot,
    FileRootKind, IoMax, LandlockRunner, LimitRunner, NetworkBroker, PrivateTmp, ProjectQuota,
    RawPolicy, ResourceLimits, RuntimeMount, SeccompPolicy, Side, SyscallName, Watchdog,
};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = workspace().join("schemas").join(name);
    let value: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("schema")).expect("schema JSON");
    jsonschema::draft202012::new(&value).expect("a valid draft 2020-12 schema")
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| e.to_string()).collect()
}

fn files_with(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files_with(&p, suffix, out);
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
    out.sort();
}

// ------------------------------------------------------------ real files

#[test]
fn bundled_manifests_validate() {
    let v = schema("manifest.schema.json");
    let mut files = Vec::new();
    files_with(&workspace().join("compiler"), ".manifest.json", &mut files);
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let bytes = std::fs::read(&f).expect("read");
        assert!(
            CapabilityManifest::from_json(&bytes).is_ok(),
            "{} is not a manifest",
            f.display()
        );
        let doc: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{}", f.display());
    }
}

#[test]
fn compiled_artifacts_of_every_bundled_and_valid_corpus_policy_validate() {
    let v = schema("artifact.schema.json");
    let mut sources = Vec::new();
    files_with(&workspace().join("policies"), ".splashpol", &mut sources);
    let bundled = sources.len();
    files_with(
        &workspace().join("tests/corpus/valid"),
        ".splashpol",
        &mut sources,
    );
    assert!(bundled >= 8 && sources.len() > bundled + 20, "{sources:?}");
    let dir_guard = tempfile::Builder::new()
        .prefix("splashc-schemas-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    let out = dir.join("artifact.splashc");
    for source in &sources {
        let o = Command::new(env!("CARGO_BIN_EXE_splashc"))
            .args([
                "compile",
                &source.to_string_lossy(),
                "-o",
                &out.to_string_lossy(),
            ])
            .output()
            .expect("run splashc");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}",
            source.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let doc: Value =
            serde_json::from_slice(&std::fs::read(&out).expect("artifact")).expect("json");
        assert_eq!(
            errors(&v, &doc),
            Vec::<String>::new(),
            "{}",
            source.display()
        );
    }
}

// ------------------------------------------------------------ negative cases

/// What a case breaks, and how.
type Breakage = (&'static str, Box<dyn Fn(&mut Value)>);

fn good_manifest() -> Value {
    json!({
        "protocol_version": 5,
        "session_id": "s-1",
        "grants": [{
            "tool": "tool.call", "format": "json", "max_calls": 1,
            "max_input_bytes": 16, "max_output_bytes": 64, "max_compensations": 0,
            "resources": [{ "kind": "file_root", "id": "scratch" }]
        }]
    })
}

#[test]
fn broken_manifests_fail_the_schema_and_the_decoder() {
    let v = schema("manifest.schema.json");
    assert!(v.is_valid(&good_manifest()));
    let cases: Vec<Breakage> = vec![
        (
            "missing session_id",
            Box::new(|m| drop(m.as_object_mut().map(|o| o.remove("session_id")))),
        ),
        (
            "missing max_calls",
            Box::new(|m| {
                drop(
                    m["grants"][0]
                        .as_object_mut()
                        .map(|o| o.remove("max_calls")),
                )
            }),
        ),
        (
            "max_calls is a string",
            Box::new(|m| m["grants"][0]["max_calls"] = json!("1")),
        ),
        (
            "max_calls is zero",
            Box::new(|m| m["grants"][0]["max_calls"] = json!(0)),
        ),
        ("grants is an object", Box::new(|m| m["grants"] = json!({}))),
        (
            "protocol version 4",
            Box::new(|m| m["protocol_version"] = json!(4)),
        ),
        ("unknown field", Box::new(|m| m["extra"] = json!(true))),
        (
            "unknown grant field",
            Box::new(|m| m["grants"][0]["ttl"] = json!(1)),
        ),
        (
            "bad token",
            Box::new(|m| m["session_id"] = json!("Session 1")),
        ),
        (
            "unknown resource kind",
            Box::new(|m| m["grants"][0]["resources"][0]["kind"] = json!("device")),
        ),
        (
            "unknown format",
            Box::new(|m| m["grants"][0]["format"] = json!("xml")),
        ),
    ];
    for (what, break_it) in cases {
        let mut m = good_manifest();
        break_it(&mut m);
        assert!(!v.is_valid(&m), "the schema accepts a manifest with {what}");
        let bytes = serde_json::to_vec(&m).expect("json");
        assert!(
            CapabilityManifest::from_json(&bytes).is_err(),
            "the decoder accepts a manifest with {what}"
        );
    }
}

fn good_artifact() -> Value {
    let source = workspace().join("policies/agent-worker.splashpol");
    let text = std::fs::read_to_string(source).expect("read");
    let policy = splashpol::check_source("agent-worker.splashpol", &text)
        .policy
        .expect("agent-worker checks");
    let bytes = splashpol::artifact::write(&policy, text.as_bytes()).expect("artifact");
    serde_json::from_slice(&bytes).expect("json")
}

#[test]
fn broken_artifacts_fail_the_schema_and_the_loader() {
    let v = schema("artifact.schema.json");
    assert!(v.is_valid(&good_artifact()));
    let cases: Vec<Breakage> = vec![
        (
            "missing policy",
            Box::new(|a| drop(a.as_object_mut().map(|o| o.remove("policy")))),
        ),
        (
            "missing worker",
            Box::new(|a| drop(a["policy"].as_object_mut().map(|o| o.remove("worker")))),
        ),
        (
            "bounded_writes is a string",
            Box::new(|a| a["policy"]["bounded_writes"] = json!("yes")),
        ),
        (
            "relative worker path",
            Box::new(|a| a["policy"]["worker"] = json!("bin/worker")),
        ),
        (
            "worker path with ..",
            Box::new(|a| a["policy"]["worker"] = json!("/opt/../bin")),
        ),
        (
            "unknown policy field",
            Box::new(|a| a["policy"]["network"] = json!(true)),
        ),
        (
            "unknown tmp variant",
            Box::new(|a| a["policy"]["tmp"] = json!("shared")),
        ),
        ("version 2", Box::new(|a| a["version"] = json!(2))),
        (
            "short digest",
            Box::new(|a| a["source_digest"] = json!("abc")),
        ),
        (
            "negative size",
            Box::new(|a| {
                a["policy"]["file_roots"][1]["kind"]["ephemeral"]["size_bytes"] = json!(-1)
            }),
        ),
    ];
    for (what, break_it) in cases {
        let mut a = good_artifact();
        break_it(&mut a);
        assert!(
            !v.is_valid(&a),
            "the schema accepts an artifact with {what}"
        );
        let bytes = serde_json::to_vec(&a).expect("json");
        assert!(
            splashpol::artifact::load(&bytes).is_err(),
            "the loader accepts an artifact with {what}"
        );
    }
}

// ------------------------------------------------------------ in sync with the types

fn path<S: Side>(s: &str) -> AbsPath<S> {
    AbsPath::new(s).expect("path")
}

fn token(s: &str) -> Token {
    Token::new(s).expect("token")
}

/// Every variant of the enums a policy holds; the matches fail to compile
/// when a variant is added.
fn tmp_variants() -> Vec<PrivateTmp> {
    let all = vec![
        PrivateTmp::Off,
        PrivateTmp::Unbounded,
        PrivateTmp::Bounded { size_bytes: 1 },
    ];
    for t in &all {
        match t {
            PrivateTmp::Off | PrivateTmp::Unbounded | PrivateTmp::Bounded { .. } => {}
        }
    }
    all
}

fn seccomp_variants() -> Vec<SeccompPolicy> {
    let all = vec![
        SeccompPolicy::Off,
        SeccompPolicy::DenyKnownEscapeSurface,
        SeccompPolicy::StrictAllowlist {
            syscalls: ["read", "exit_group"]
                .map(|n| SyscallName::new(n).expect("known syscall"))
                .into(),
        },
    ];
    for s in &all {
        match s {
            SeccompPolicy::Off
            | SeccompPolicy::DenyKnownEscapeSurface
            | SeccompPolicy::StrictAllowlist { .. } => {}
        }
    }
    all
}

fn root_kinds() -> Vec<FileRootKind> {
    let all = vec![
        FileRootKind::Host {
            source: path("/srv/p"),
            access: Access::ReadOnly,
            quota: Some(ProjectQuota {
                project_id: 7,
                max_bytes: 1,
                max_inodes: 1,
            }),
        },
        FileRootKind::Host {
            source: path("/srv/q"),
            access: Access::ReadWrite,
            quota: None,
        },
        FileRootKind::Ephemeral { size_bytes: 1 },
    ];
    for k in &all {
        match k {
            FileRootKind::Host {
                access: Access::ReadOnly | Access::ReadWrite,
                ..
            }
            | FileRootKind::Ephemeral { .. } => {}
        }
    }
    all
}

/// Policies that together use every field with a value (not only `null`)
/// and every enum variant.
fn full_policies() -> Vec<RawPolicy> {
    let catalogs = [BrokerCatalog::Endpoint, BrokerCatalog::Origin];
    for c in &catalogs {
        match c {
            BrokerCatalog::Endpoint | BrokerCatalog::Origin => {}
        }
    }
    let tmps = tmp_variants();
    let seccomps = seccomp_variants();
    (0..3)
        .map(|i| RawPolicy {
            name: format!("full-{i}"),
            bubblewrap: path("/usr/bin/bwrap"),
            worker: path("/opt/w"),
            worker_args: vec!["--x".into()],
            runtime_mounts: vec![RuntimeMount {
                source: path("/opt/r"),
                destination: path("/opt/r"),
            }],
            file_roots: root_kinds()
                .into_iter()
                .enumerate()
                .map(|(k, kind)| FileRoot {
                    id: token(&format!("root-{k}")),
                    destination: path(&format!("/w/{k}")),
                    kind,
                })
                .collect(),
            tmp: tmps[i],
            bounded_writes: true,
            no_further_user_namespaces: true,
            pin_mounts: true,
            pin_executables: true,
            allow_unbounded_host_writes: false,
            aggregate_quota: Some(AggregateQuota {
                max_bytes: 1,
                max_inodes: 1,
            }),
            aggregate_ephemeral_max_bytes: Some(1),
            max_active_file_roots: 64,
            seccomp: seccomps[i].clone(),
            limit_runner: Some(LimitRunner {
                path: path("/opt/l"),
                limits: ResourceLimits {
                    cpu_seconds: Some(1),
                    address_space_bytes: Some(1),
                    process_count: Some(1),
                    open_files: Some(1),
                    file_size_bytes: Some(1),
                },
            }),
            require_limit_runner: true,
            landlock_runner: Some(LandlockRunner {
                path: path("/opt/ll"),
                allow_exec: vec![path("/opt/w")],
            }),
            combined_runner: Some(path("/opt/c")),
            cgroup: Some(CgroupPolicy {
                parent: path("/sys/fs/cgroup/p"),
                runner: path("/opt/cg"),
                limits: CgroupLimits {
                    cpu_quota_micros: Some(1),
                    memory_max_bytes: Some(1),
                    memory_swap_max_bytes: Some(0),
                    pids_max: Some(1),
                    io_max: vec![IoMax {
                        major: 8,
                        minor: 0,
                        rbps: Some(1),
                        wbps: Some(1),
                        riops: Some(1),
                        wiops: Some(1),
                    }],
                },
                join_timeout_ms: 1,
            }),
            require_cgroup_v2: true,
            watchdog: Some(Watchdog {
                session_deadline_ms: 1,
                call_deadline_ms: Some(1),
            }),
            network_broker: Some(NetworkBroker {
                parent: path("/run/b"),
                destination: path("/net"),
                catalog: catalogs[i % 2],
                ids: [token("a")].into(),
            }),
        })
        .collect()
}

fn full_manifest() -> CapabilityManifest {
    let kinds = [
        ResourceKind::FileRoot,
        ResourceKind::Executable,
        ResourceKind::NetworkOrigin,
        ResourceKind::Secret,
    ];
    for k in &kinds {
        match k {
            ResourceKind::FileRoot
            | ResourceKind::Executable
            | ResourceKind::NetworkOrigin
            | ResourceKind::Secret => {}
        }
    }
    let grants = [GrantFormat::Text, GrantFormat::Json]
        .into_iter()
        .map(|format| Grant {
            tool: token(match format {
                GrantFormat::Text => "tool.text",
                GrantFormat::Json => "tool.json",
            }),
            format,
            max_calls: 1,
            max_input_bytes: 1,
            max_output_bytes: 1,
            max_compensations: 1,
            resources: kinds
                .iter()
                .map(|k| Resource {
                    kind: *k,
                    id: token("r"),
                })
                .collect(),
        })
        .collect();
    CapabilityManifest {
        protocol_version: 5,
        session_id: token("s"),
        grants,
    }
}

/// Object keys anywhere in `v`.
fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

/// Property names anywhere in a schema, and where each `required` list
/// leaves a property out.
fn schema_properties(v: &Value, out: &mut BTreeSet<String>, optional: &mut BTreeMap<String, ()>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Object(props)) = o.get("properties") {
                let required: BTreeSet<&str> = o
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for k in props.keys() {
                    out.insert(k.clone());
                    if !required.contains(k.as_str()) {
                        optional.insert(k.clone(), ());
                    }
                }
                assert_eq!(
                    o.get("additionalProperties"),
                    Some(&Value::Bool(false)),
                    "every object schema is closed: {:?}",
                    props.keys().collect::<Vec<_>>()
                );
            }
            o.values().for_each(|x| schema_properties(x, out, optional));
        }
        Value::Array(a) => a.iter().for_each(|x| schema_properties(x, out, optional)),
        _ => {}
    }
}

fn schema_value(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(workspace().join("schemas").join(name)).expect("read"))
        .expect("json")
}

#[test]
fn the_artifact_schema_matches_the_policy_types() {
    let v = schema("artifact.schema.json");
    let mut serialized = BTreeSet::new();
    for policy in full_policies() {
        let policy_json = serde_json::to_value(&policy).expect("serialize");
        let doc = json!({
            "format": splashpol::artifact::FORMAT,
            "version": splashpol::artifact::VERSION,
            "source_digest": splashpol::artifact::digest(b""),
            "policy_digest": splashpol::artifact::digest(policy_json.to_string().as_bytes()),
            "policy": policy_json,
        });
        assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{doc:#}");
        keys(&doc, &mut serialized);
    }
    let mut in_schema = BTreeSet::new();
    let mut optional = BTreeMap::new();
    schema_properties(
        &schema_value("artifact.schema.json"),
        &mut in_schema,
        &mut optional,
    );
    assert_eq!(
        in_schema, serialized,
        "schema properties vs serialized keys"
    );
    // The artifact writer always writes every field.
    assert!(optional.is_empty(), "optional in the schema: {optional:?}");
}

#[test]
fn the_manifest_schema_matches_the_manifest_types() {
    let v = schema("manifest.schema.json");
    let manifest = full_manifest();
    manifest.validate().expect("a valid manifest");
    let doc = serde_json::to_value(&manifest).expect("serialize");
    assert_eq!(errors(&v, &doc), Vec::<String>::new(), "{doc:#}");
    let mut serialized = BTreeSet::new();
    keys(&doc, &mut serialized);
    let mut in_schema = BTreeSet::new();
    let mut optional = BTreeMap::new();
    schema_properties(
        &schema_value("manifest.schema.json"),
        &mut in_schema,
        &mut optional,
    );
    assert_eq!(
        in_schema, serialized,
        "schema properties vs serialized keys"
    );
    // Exactly the fields the decoder defaults are optional.
    assert_eq!(
        optional.keys().map(String::as_str).collect::<Vec<_>>(),
        ["max_compensations", "resources"]
    );
    // And the decoder reads back what the schema accepts.
    let bytes = serde_json::to_vec(&doc).expect("json");
    assert_eq!(
        CapabilityManifest::from_json(&bytes).expect("decode"),
        manifest
    );
}
