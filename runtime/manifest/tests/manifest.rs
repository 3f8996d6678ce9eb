//! Strict manifest decoding and deterministic serialization.

use serde_json::{Value, json};
use splash_manifest::{CapabilityManifest, ManifestError, ResourceKind};

fn grant(tool: &str) -> Value {
    json!({"tool": tool, "format": "json", "max_calls": 1, "max_input_bytes": 10, "max_output_bytes": 10})
}

fn manifest(grants: Vec<Value>) -> Value {
    json!({"protocol_version": 5, "session_id": "s-1", "grants": grants})
}

fn decode(v: &Value) -> Result<CapabilityManifest, ManifestError> {
    CapabilityManifest::from_json(v.to_string().as_bytes())
}

fn err(v: &Value) -> ManifestError {
    decode(v).expect_err("must be rejected")
}

#[test]
fn applies_defaults_and_orders_resources() {
    let mut g = grant("t");
    g["resources"] = json!([
        {"kind": "secret", "id": "a"},
        {"kind": "network_origin", "id": "n"},
        {"kind": "file_root", "id": "z"},
        {"kind": "executable", "id": "e"},
        {"kind": "file_root", "id": "b"}
    ]);
    let mut h = grant("u");
    h["resources"] = json!([{"id": "b", "kind": "file_root"}]);
    h["max_compensations"] = json!(3);
    let m = decode(&manifest(vec![g, grant("v"), h])).expect("valid");
    assert_eq!(m.grants[1].max_compensations, 0);
    assert!(m.grants[1].resources.is_empty());
    assert_eq!(
        m.to_json_string().expect("json"),
        concat!(
            r#"{"protocol_version":5,"session_id":"s-1","grants":["#,
            r#"{"tool":"t","format":"json","max_calls":1,"max_input_bytes":10,"max_output_bytes":10,"max_compensations":0,"resources":["#,
            r#"{"kind":"file_root","id":"b"},{"kind":"file_root","id":"z"},{"kind":"executable","id":"e"},"#,
            r#"{"kind":"network_origin","id":"n"},{"kind":"secret","id":"a"}]},"#,
            r#"{"tool":"v","format":"json","max_calls":1,"max_input_bytes":10,"max_output_bytes":10,"max_compensations":0,"resources":[]},"#,
            r#"{"tool":"u","format":"json","max_calls":1,"max_input_bytes":10,"max_output_bytes":10,"max_compensations":3,"resources":[{"kind":"file_root","id":"b"}]}]}"#
        )
    );
    let active: Vec<_> = m
        .active_resources()
        .into_iter()
        .map(|r| format!("{}:{}", r.kind.as_str(), r.id))
        .collect();
    assert_eq!(
        active,
        [
            "file_root:b",
            "file_root:z",
            "executable:e",
            "network_origin:n",
            "secret:a"
        ]
    );
    assert_eq!(m.active_ids(ResourceKind::FileRoot).len(), 2);
    // Serialization is stable: decode, encode, decode, encode.
    let again = CapabilityManifest::from_json(&m.to_json_bytes().expect("json")).expect("valid");
    assert_eq!(again, m);
    assert_eq!(
        again.to_json_bytes().expect("json"),
        m.to_json_bytes().expect("json")
    );
}

#[test]
fn rejects_other_versions() {
    let mut m = manifest(vec![grant("t")]);
    m["protocol_version"] = json!(4);
    assert!(matches!(err(&m), ManifestError::Version(4)));
    m["protocol_version"] = json!(70000);
    assert!(matches!(err(&m), ManifestError::Decode(_)));
}

#[test]
fn rejects_unknown_fields_at_every_level() {
    let mut m = manifest(vec![grant("t")]);
    m["extra"] = json!(1);
    assert!(matches!(err(&m), ManifestError::Decode(_)));
    let mut g = grant("t");
    g["extra"] = json!(1);
    assert!(matches!(err(&manifest(vec![g])), ManifestError::Decode(_)));
    let mut g = grant("t");
    g["resources"] = json!([{"kind": "secret", "id": "a", "path": "/etc"}]);
    assert!(matches!(err(&manifest(vec![g])), ManifestError::Decode(_)));
}

#[test]
fn rejects_missing_fields_bad_kinds_formats_and_tokens() {
    let mut g = grant("t");
    g.as_object_mut().expect("object").remove("max_calls");
    assert!(matches!(err(&manifest(vec![g])), ManifestError::Decode(_)));
    let mut g = grant("t");
    g["format"] = json!("binary");
    assert!(matches!(err(&manifest(vec![g])), ManifestError::Decode(_)));
    let mut g = grant("t");
    g["resources"] = json!([{"kind": "device", "id": "a"}]);
    assert!(matches!(err(&manifest(vec![g])), ManifestError::Decode(_)));
    let mut g = grant("t");
    g["resources"] = json!([{"kind": "secret", "id": "../a"}]);
    assert!(matches!(err(&manifest(vec![g])), ManifestError::Decode(_)));
    assert!(matches!(
        err(&manifest(vec![grant("Tool")])),
        ManifestError::Decode(_)
    ));
    let mut m = manifest(vec![]);
    m["session_id"] = json!("");
    assert!(matches!(err(&m), ManifestError::Decode(_)));
    let mut g = grant("t");
    g["max_compensations"] = Value::Null;
    assert!(matches!(err(&manifest(vec![g])), ManifestError::Decode(_)));
    assert!(matches!(
        CapabilityManifest::from_json(b"{\"protocol_version\":5"),
        Err(ManifestError::Decode(_))
    ));
}

#[test]
fn rejects_the_array_form_of_objects() {
    assert!(matches!(
        err(&json!([5, "s-1", []])),
        ManifestError::NotAnObject { path } if path == "$"
    ));
    let m = manifest(vec![json!(["t", "json", 1, 1, 1])]);
    assert!(matches!(err(&m), ManifestError::NotAnObject { path } if path == "grants[0]"));
    let mut g = grant("t");
    g["resources"] = json!([["secret", "a"]]);
    assert!(matches!(
        err(&manifest(vec![g])),
        ManifestError::NotAnObject { path } if path == "grants[0].resources[0]"
    ));
}

#[test]
fn rejects_more_than_128_grants() {
    let ok: Vec<Value> = (0..128).map(|i| grant(&format!("t{i}"))).collect();
    assert_eq!(
        decode(&manifest(ok)).expect("128 is allowed").grants.len(),
        128
    );
    let over: Vec<Value> = (0..129).map(|i| grant(&format!("t{i}"))).collect();
    assert!(matches!(
        err(&manifest(over)),
        ManifestError::TooManyGrants(129)
    ));
}

#[test]
fn rejects_duplicate_tools() {
    let e = err(&manifest(vec![grant("t"), grant("u"), grant("t")]));
    assert!(matches!(&e, ManifestError::DuplicateTool(t) if t.as_str() == "t"));
    assert_eq!(e.to_string(), "manifest grants tool `t` more than once");
}

#[test]
fn rejects_zero_bounds() {
    for field in ["max_calls", "max_input_bytes", "max_output_bytes"] {
        let mut g = grant("t");
        g[field] = json!(0);
        match err(&manifest(vec![g])) {
            ManifestError::ZeroBound { tool, field: f } => {
                assert_eq!(tool.as_str(), "t");
                assert_eq!(f.as_str(), field);
            }
            other => panic!("{field}: {other}"),
        }
    }
    let mut g = grant("t");
    g["max_compensations"] = json!(0);
    assert!(decode(&manifest(vec![g])).is_ok());
}

#[test]
fn rejects_more_than_64_resources() {
    let resources = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"kind": "file_root", "id": format!("r{i}")}))
            .collect()
    };
    let mut g = grant("t");
    g["resources"] = resources(64);
    assert!(decode(&manifest(vec![g])).is_ok());
    let mut g = grant("t");
    g["resources"] = resources(65);
    assert!(matches!(
        err(&manifest(vec![g])),
        ManifestError::TooManyResources { count: 65, .. }
    ));
}

#[test]
fn rejects_duplicate_resources_in_one_grant() {
    let mut g = grant("t");
    g["resources"] = json!([
        {"kind": "file_root", "id": "a"},
        {"kind": "secret", "id": "a"},
        {"kind": "file_root", "id": "a"}
    ]);
    let e = err(&manifest(vec![g]));
    assert!(matches!(
        &e,
        ManifestError::DuplicateResource { tool, kind: ResourceKind::FileRoot, id } if tool.as_str() == "t" && id.as_str() == "a"
    ));
    assert_eq!(
        e.to_string(),
        "grant `t` lists resource file_root `a` more than once"
    );
    // The same resource in two grants is fine: activation is a union.
    let mut g = grant("t");
    g["resources"] = json!([{"kind": "file_root", "id": "a"}]);
    let mut h = grant("u");
    h["resources"] = json!([{"kind": "file_root", "id": "a"}]);
    assert_eq!(
        decode(&manifest(vec![g, h]))
            .expect("valid")
            .active_resources()
            .len(),
        1
    );
}

#[test]
fn serde_deserialization_is_just_as_strict() {
    let mut g = grant("t");
    g["resources"] = json!([{"kind": "file_root", "id": "a"}, {"kind": "file_root", "id": "a"}]);
    let e = serde_json::from_value::<CapabilityManifest>(manifest(vec![g])).expect_err("dup");
    assert!(e.to_string().contains("more than once"), "{e}");
}

#[test]
fn validate_checks_manifests_built_in_code() {
    let mut m = decode(&manifest(vec![grant("t")])).expect("valid");
    m.validate().expect("valid");
    m.grants.push(m.grants[0].clone());
    assert!(matches!(m.validate(), Err(ManifestError::DuplicateTool(_))));
    m.grants.pop();
    m.grants[0].max_output_bytes = 0;
    assert!(matches!(m.validate(), Err(ManifestError::ZeroBound { .. })));
    m.grants[0].max_output_bytes = 1;
    m.protocol_version = 6;
    assert!(matches!(m.validate(), Err(ManifestError::Version(6))));
}

#[test]
fn rejects_repeated_keys_at_every_level() {
    let docs = [
        r#"{"protocol_version":5,"protocol_version":5,"session_id":"s","grants":[]}"#,
        r#"{"protocol_version":5,"session_id":"s","grants":[],"grants":[]}"#,
        r#"{"protocol_version":5,"session_id":"s","grants":[{"tool":"t","tool":"u","format":"json","max_calls":1,"max_input_bytes":1,"max_output_bytes":1}]}"#,
        r#"{"protocol_version":5,"session_id":"s","grants":[{"tool":"t","format":"json","max_calls":1,"max_input_bytes":1,"max_output_bytes":1,"resources":[{"kind":"secret","id":"a","id":"b"}]}]}"#,
    ];
    for doc in docs {
        match CapabilityManifest::from_json(doc.as_bytes()) {
            Err(ManifestError::Decode(e)) => {
                assert!(e.to_string().contains("duplicate object key"), "{e}")
            }
            other => panic!("{doc}: {other:?}"),
        }
        assert!(serde_json::from_str::<CapabilityManifest>(doc).is_err());
    }
}

#[test]
fn token_errors_name_the_field_and_the_position() {
    let text = "{\"protocol_version\": 5,\n \"session_id\": \"Bad Id\",\n \"grants\": []}";
    let e = CapabilityManifest::from_json(text.as_bytes()).expect_err("bad session id");
    let msg = e.to_string();
    assert!(msg.contains("`session_id`"), "{msg}");
    assert!(msg.contains("line 2 column"), "{msg}");

    let text = "{\"protocol_version\": 5, \"session_id\": \"s\", \"grants\": [\n  {\"tool\": \"t\", \"format\": \"json\", \"max_calls\": 1, \"max_input_bytes\": 1,\n   \"max_output_bytes\": 1, \"resources\": [\n    {\"kind\": \"file_root\", \"id\": \"../x\"}]}]}";
    let msg = CapabilityManifest::from_json(text.as_bytes())
        .expect_err("bad resource id")
        .to_string();
    assert!(msg.contains("`resources[].id`"), "{msg}");
    assert!(msg.contains("line 4 column"), "{msg}");

    let msg = err(&manifest(vec![grant("Tool")])).to_string();
    assert!(msg.contains("`grants[].tool`"), "{msg}");
    assert!(msg.contains("line 1 column"), "{msg}");
}
