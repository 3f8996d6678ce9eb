//! The protocol's published test vector, pinned byte for byte.

use std::collections::BTreeSet;

use splash_protocol::auth::signed_bytes;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, Message, Resource, ResourceKind, SessionAuthenticator,
    SessionKey, SessionRole, Token,
};

const SIGNED: &str = r#"{"domain":"splash-worker-auth-v5","protocol_version":5,"sender":"host","sequence":1,"session_id":"s-1","message":{"type":"open_session","manifest":{"protocol_version":5,"session_id":"s-1","grants":[{"tool":"tool.call","format":"json","max_calls":1,"max_input_bytes":16384,"max_output_bytes":65536,"max_compensations":0,"resources":[{"kind":"file_root","id":"a"},{"kind":"file_root","id":"b"},{"kind":"secret","id":"k"}]}]}}}"#;
const TAG: &str = "b0406a246c105d4e2bbe2fdfaa000e6725240180fa006c2645588dd7212bcf22";

fn tok(s: &str) -> Token {
    Token::new(s).expect("test token")
}

fn vector_manifest() -> CapabilityManifest {
    let mut grant = Grant::new(tok("tool.call"), GrantFormat::Json);
    // Inserted out of order: the set orders them.
    grant.resources = BTreeSet::from([
        Resource::new(ResourceKind::Secret, tok("k")),
        Resource::new(ResourceKind::FileRoot, tok("b")),
        Resource::new(ResourceKind::FileRoot, tok("a")),
    ]);
    CapabilityManifest {
        protocol_version: 5,
        session_id: tok("s-1"),
        grants: vec![grant],
    }
}

#[test]
fn signed_bytes_match_the_published_vector() {
    let message = Message::OpenSession {
        manifest: vector_manifest(),
    };
    let bytes = signed_bytes(SessionRole::Host, 1, &tok("s-1"), &message).expect("serialize");
    assert_eq!(String::from_utf8(bytes).expect("utf-8"), SIGNED);
}

#[test]
fn host_open_session_tag_matches_the_published_vector() {
    let key = SessionKey::from_bytes([0x07; 32]).expect("key");
    let mut host = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Host);
    let frame = host
        .seal(Message::OpenSession {
            manifest: vector_manifest(),
        })
        .expect("seal");
    assert_eq!(frame.sequence, 1);
    assert_eq!(frame.auth_tag.to_hex(), TAG);
    // The tag is the keyed hash of exactly the pinned bytes.
    assert_eq!(
        blake3::keyed_hash(&[0x07; 32], SIGNED.as_bytes())
            .to_hex()
            .as_str(),
        TAG
    );
}

#[test]
fn vector_manifest_round_trips_through_the_strict_decoder() {
    let start = SIGNED
        .find(r#"{"protocol_version":5,"session_id":"s-1","grants""#)
        .expect("manifest");
    let json = &SIGNED[start..SIGNED.len() - 2];
    let parsed = CapabilityManifest::from_json(json.as_bytes()).expect("valid manifest");
    assert_eq!(parsed, vector_manifest());
    assert_eq!(parsed.to_json_string().expect("serialize"), json);
}

#[test]
fn worker_accepts_the_vector_frame() {
    let key = SessionKey::from_bytes([0x07; 32]).expect("key");
    let mut worker = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Worker);
    let line = format!(
        r#"{{"sequence":1,"message":{},"auth_tag":"{TAG}"}}"#,
        &SIGNED[SIGNED.find(r#"{"type""#).expect("message")..SIGNED.len() - 1]
    );
    let frame = serde_json::from_str(&line).expect("frame decodes");
    let message = worker.open(frame).expect("authentic");
    assert_eq!(
        message,
        Message::OpenSession {
            manifest: vector_manifest()
        }
    );
}
