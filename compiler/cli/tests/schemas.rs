//! The JSON Schemas in `schemas/` against real files and the serde types:
//!
//! - every bundled manifest the decoder accepts, and the artifact `splashc
//!   compile` writes for every bundled policy and every valid corpus policy,
//!   validates;
//! - broken documents (a missing field, a wrong type, an unknown field, a bad
//!   token or path) fail, and the Rust decoders refuse them too;
//! - the schemas and the decoders agree on one shared corpus of valid and
//!   invalid documents, written as text so that `1.0`, `1e0` and escapes
//!   reach both as written: each is accepted by both or refused by both;
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
    ResourceLimits, Runners, RuntimeMount, SeccompPolicy, Side, SyscallName, Watchdog,
    WorkerIdentity,
};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The schemas' one keyword of their own, `x-integer-literal`: a number
/// written as an integer literal (no fraction, no exponent), which is what
/// the decoders accept. JSON Schema counts `1.0` and `1e0` as integers.
struct IntegerLiteral;

impl<'i> jsonschema::Keyword<'i> for IntegerLiteral {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(jsonschema::ValidationError::custom(format!(
                "{instance} is not written as an integer literal"
            )))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        // serde_json keeps a number with a fraction or an exponent as a
        // float, whatever its value.
        instance
            .as_number()
            .is_none_or(|n| n.is_u64() || n.is_i64())
    }
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = workspace().join("schemas").join(name);
    let value: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("schema")).expect("schema JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_keyword("x-integer-literal", |_, _, _| Ok(Box::new(IntegerLiteral)))
        .build(&value)
        .expect("a valid draft 2020-12 schema")
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
        ("version 1", Box::new(|a| a["version"] = json!(1))),
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

// ------------------------------------------------------------ one corpus, one verdict

/// A manifest as text, with `{calls}`, `{version}`, `{session}` and
/// `{tool}` substituted.
fn manifest_text(version: &str, session: &str, tool: &str, calls: &str) -> String {
    format!(
        r#"{{"protocol_version": {version}, "session_id": "{session}", "grants": [{{"tool": "{tool}", "format": "json", "max_calls": {calls}, "max_input_bytes": 16, "max_output_bytes": 64, "max_compensations": 0}}]}}"#
    )
}

#[test]
fn the_manifest_schema_and_decoder_agree_on_one_corpus() {
    let v = schema("manifest.schema.json");
    let long = "a".repeat(128);
    let too_long = "a".repeat(129);
    // (what, document, accepted)
    let corpus: Vec<(&str, String, bool)> = vec![
        ("plain", manifest_text("5", "s-1", "tool.call", "1"), true),
        (
            "largest count",
            manifest_text("5", "s-1", "t", "4294967295"),
            true,
        ),
        ("128-byte token", manifest_text("5", &long, "t", "1"), true),
        ("count 1.0", manifest_text("5", "s-1", "t", "1.0"), false),
        ("count 1e0", manifest_text("5", "s-1", "t", "1e0"), false),
        (
            "count 10E-1",
            manifest_text("5", "s-1", "t", "10E-1"),
            false,
        ),
        ("version 5.0", manifest_text("5.0", "s-1", "t", "1"), false),
        ("version 5e0", manifest_text("5e0", "s-1", "t", "1"), false),
        ("version 4", manifest_text("4", "s-1", "t", "1"), false),
        ("count 0", manifest_text("5", "s-1", "t", "0"), false),
        (
            "count 2^32",
            manifest_text("5", "s-1", "t", "4294967296"),
            false,
        ),
        ("count -1", manifest_text("5", "s-1", "t", "-1"), false),
        ("count 1.5", manifest_text("5", "s-1", "t", "1.5"), false),
        (
            "token ending in a newline",
            manifest_text("5", "s-1\\n", "t", "1"),
            false,
        ),
        (
            "token starting with a newline",
            manifest_text("5", "\\ns-1", "t", "1"),
            false,
        ),
        (
            "token with a tab",
            manifest_text("5", "s\\t1", "t", "1"),
            false,
        ),
        (
            "token with U+202E",
            manifest_text("5", "s-1", "t\\u202e", "1"),
            false,
        ),
        (
            "129-byte token",
            manifest_text("5", &too_long, "t", "1"),
            false,
        ),
        ("empty token", manifest_text("5", "", "t", "1"), false),
        (
            "upper-case token",
            manifest_text("5", "S-1", "t", "1"),
            false,
        ),
        (
            "unknown field",
            manifest_text("5", "s-1", "t", "1").replacen('{', r#"{"extra": 1, "#, 1),
            false,
        ),
    ];
    let mut disagreements = Vec::new();
    for (what, text, accepted) in &corpus {
        let doc: Value = serde_json::from_str(text).expect("JSON");
        let by_schema = v.is_valid(&doc);
        let by_decoder = CapabilityManifest::from_json(text.as_bytes()).is_ok();
        if by_schema != *accepted || by_decoder != *accepted {
            disagreements.push(format!(
                "{what}: expected {accepted}, schema {by_schema}, decoder {by_decoder}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// The artifact of a bundled policy as text.
fn artifact_text(policy: &str) -> String {
    let source = workspace().join("policies").join(policy);
    let text = std::fs::read_to_string(source).expect("read");
    let policy = splashpol::check_source(policy, &text)
        .policy
        .expect("a bundled policy checks");
    String::from_utf8(splashpol::artifact::write(&policy, text.as_bytes()).expect("artifact"))
        .expect("UTF-8")
}

/// `text` with its one `from` replaced by `to` and the policy digest
/// recomputed (when the edited policy still decodes), so that the loader's
/// verdict is about the edit, not the digest.
fn resealed(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "`{from}` occurs once");
    let edited = text.replacen(from, to, 1);
    let Ok(doc) = serde_json::from_str::<Value>(&edited) else {
        return edited;
    };
    let Ok(digest) = splashpol::artifact::stored_policy_digest(edited.as_bytes()) else {
        return edited;
    };
    let old = doc["policy_digest"].as_str().expect("digest").to_string();
    edited.replacen(&old, &digest, 1)
}

#[test]
fn the_artifact_schema_and_loader_agree_on_one_corpus() {
    let v = schema("artifact.schema.json");
    let agent = artifact_text("agent-worker.splashpol");
    let strict = artifact_text("strict-allowlist.splashpol");
    let broker = artifact_text("network-broker.splashpol");
    // (what, document, accepted); only edits the schema can see (shape,
    // characters, literals, duplicates), each resealed.
    let edit = |text: &str, from: &str, to: &str| resealed(text, from, to);
    let corpus: Vec<(&str, String, bool)> = vec![
        ("agent-worker", agent.clone(), true),
        ("strict-allowlist", strict.clone(), true),
        ("network-broker", broker.clone(), true),
        (
            "a path with a space and a non-ASCII letter",
            edit(
                &agent,
                r#""/workspace/project""#,
                r#""/workspace/my pröject""#,
            ),
            true,
        ),
        (
            "version 3.0",
            edit(&agent, r#""version": 3"#, r#""version": 3.0"#),
            false,
        ),
        (
            "version 3.0",
            edit(&agent, r#""version": 3"#, r#""version": 3e0"#),
            false,
        ),
        (
            "size 33554432.0",
            edit(
                &agent,
                r#""size_bytes": 33554432"#,
                r#""size_bytes": 33554432.0"#,
            ),
            false,
        ),
        (
            "count 64e0",
            edit(&agent, r#""open_files": 64"#, r#""open_files": 64e0"#),
            false,
        ),
        (
            "tab in a path",
            edit(
                &agent,
                r#""/workspace/project""#,
                r#""/workspace/pro\tject""#,
            ),
            false,
        ),
        (
            "newline ending a path",
            edit(&agent, r#""/usr/bin/bwrap""#, r#""/usr/bin/bwrap\n""#),
            false,
        ),
        (
            "U+202E in a path",
            edit(
                &agent,
                r#""/opt/splash/bin/worker""#,
                r#""/opt/splash/bin/\u202erekrow""#,
            ),
            false,
        ),
        (
            "DEL in a path",
            edit(
                &agent,
                r#""/srv/splash/project""#,
                r#""/srv/splash/\u007fproject""#,
            ),
            false,
        ),
        (
            "escape in the name",
            edit(
                &agent,
                r#""name": "agent-worker""#,
                r#""name": "agent\u001b[2J""#,
            ),
            false,
        ),
        (
            "newline in a worker argument",
            edit(&agent, r#""--json-lines""#, r#""--json-lines\n--x""#),
            false,
        ),
        (
            "root id ending in a newline",
            edit(&agent, r#""id": "scratch""#, r#""id": "scratch\n""#),
            false,
        ),
        (
            "duplicate syscall",
            edit(&strict, r#""pread64""#, r#""ppoll""#),
            false,
        ),
        (
            "duplicate broker id",
            edit(&broker, r#""api.search""#, r#""api.fetch""#),
            false,
        ),
        (
            "unknown field",
            edit(
                &agent,
                r#""pin_mounts": true,"#,
                r#""pin_mounts": true, "share_net": true,"#,
            ),
            false,
        ),
    ];
    let mut disagreements = Vec::new();
    for (what, text, accepted) in &corpus {
        let doc: Value = serde_json::from_str(text).expect("JSON");
        let by_schema = v.is_valid(&doc);
        let by_loader = splashpol::artifact::load(text.as_bytes());
        if by_schema != *accepted || by_loader.is_ok() != *accepted {
            disagreements.push(format!(
                "{what}: expected {accepted}, schema {by_schema}, loader {by_loader:?}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
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

/// Every runner mode, each field with a value.
fn runner_variants() -> Vec<Runners> {
    let limits = ResourceLimits {
        cpu_seconds: Some(1),
        address_space_bytes: Some(1),
        process_count: Some(1),
        open_files: Some(1),
        file_size_bytes: Some(1),
    };
    let all = vec![
        Runners::Separate {
            limit: Some(LimitRunner {
                path: path("/opt/l"),
                limits,
            }),
            landlock: Some(LandlockRunner {
                path: path("/opt/ll"),
                allow_exec: vec![path("/opt/w")],
            }),
        },
        Runners::Combined {
            path: path("/opt/c"),
            limits: Some(limits),
            allow_exec: Some(vec![path("/opt/w")]),
        },
        Runners::None,
    ];
    for r in &all {
        match r {
            Runners::None | Runners::Separate { .. } | Runners::Combined { .. } => {}
        }
    }
    all
}

/// Policies that together use every field with a value (not only `null`)
/// and every enum variant, in their JSON form (the artifact's `policy`
/// object); the test compares their keys with a policy the checker built.
fn full_policies() -> Vec<Value> {
    let catalogs = [BrokerCatalog::Endpoint, BrokerCatalog::Origin];
    for c in &catalogs {
        match c {
            BrokerCatalog::Endpoint | BrokerCatalog::Origin => {}
        }
    }
    let tmps = tmp_variants();
    let seccomps = seccomp_variants();
    let identities = [
        Some(WorkerIdentity::Fixed {
            uid: 64000,
            gid: 64001,
        }),
        Some(WorkerIdentity::Dynamic),
        None,
    ];
    (0..3)
        .map(|i| {
            json!({
                "name": format!("full-{i}"),
                "bubblewrap": "/usr/bin/bwrap",
                "worker": "/opt/w",
                "worker_args": ["--x"],
                "runtime_mounts": [RuntimeMount {
                    source: path("/opt/r"),
                    destination: path("/opt/r"),
                }],
                "file_roots": root_kinds()
                    .into_iter()
                    .enumerate()
                    .map(|(k, kind)| FileRoot {
                        id: token(&format!("root-{k}")),
                        destination: path(&format!("/w/{k}")),
                        kind,
                    })
                    .collect::<Vec<_>>(),
                "tmp": tmps[i],
                "bounded_writes": true,
                "no_further_user_namespaces": true,
                "pin_mounts": true,
                "pin_executables": true,
                "allow_unbounded_host_writes": false,
                "aggregate_quota": Some(AggregateQuota {
                    max_bytes: 1,
                    max_inodes: 1,
                }),
                "aggregate_ephemeral_max_bytes": Some(1),
                "max_active_file_roots": 64,
                "seccomp": seccomps[i].clone(),
                "require_limit_runner": true,
                "runners": runner_variants().swap_remove(i),
                "cgroup": Some(CgroupPolicy {
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
                "require_cgroup_v2": true,
                "watchdog": Some(Watchdog {
                    session_deadline_ms: 1,
                    call_deadline_ms: Some(1),
                }),
                "network_broker": Some(NetworkBroker {
                    parent: path("/run/b"),
                    destination: path("/net"),
                    catalog: catalogs[i % 2],
                    ids: [token("a")].into(),
                }),
                "worker_identity": identities[i],
            })
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
    // Every field of a policy the checker built is in every full policy
    // (and no other), so a new field cannot be missing from them.
    let built = serde_json::to_value(
        splashpol::check_source(
            "demo",
            &std::fs::read_to_string(workspace().join("policies/demo.splashpol"))
                .expect("demo policy"),
        )
        .policy
        .expect("the demo policy checks"),
    )
    .expect("serialize");
    let fields = |v: &Value| -> BTreeSet<String> {
        v.as_object().expect("an object").keys().cloned().collect()
    };
    for policy_json in full_policies() {
        assert_eq!(fields(&policy_json), fields(&built), "the policy's fields");
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
