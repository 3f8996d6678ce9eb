//! The protocol's published test vector, pinned byte for byte.

use std::collections::BTreeSet;

use splash_protocol::auth::signed_bytes;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, Message, Resource, ResourceKind, SessionAuthenticator,
    SessionKey, SessionRole, Token, compensation_fingerprint,
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

/// The message-body vectors of the protocol notes (a real Splash exchange):
/// key `0x01 0x02 … 0x20`, session `ctl-b`. (sender, sequence, message,
/// tag); each message is pinned as it decodes and re-encodes, and each tag
/// over exactly the bytes written here.
const BODY_VECTORS: [(SessionRole, u64, &str, &str); 3] = [
    (
        SessionRole::Host,
        2,
        r#"{"type":"invoke","invocation":{"protocol_version":5,"session_id":"ctl-b","request_id":"r-1","tool":"interop.echo","payload":{"format":"json","value":{"a":2,"b":1}}}}"#,
        "ee3d4d29046e4fe8146e5e48ea7f4e21e609768db9d2f8e61474105b87275547",
    ),
    (
        SessionRole::Worker,
        1,
        r#"{"type":"result","result":{"protocol_version":5,"session_id":"ctl-b","request_id":"r-1","payload":{"format":"json","value":{"echo":{"a":2,"b":1},"worker":"splash"}}}}"#,
        "7a36d1aa54a10673c3bedc4bbc0b15f5af79cdd78f3dce65bef1067d911fb368",
    ),
    (
        SessionRole::Host,
        5,
        r#"{"type":"close_session","protocol_version":5,"session_id":"ctl-b"}"#,
        "ffea4a67ca106819601a1a4a9489d9a9fcef4fae62cbff794b4525cf0a832a78",
    ),
];

fn ctl_b_key() -> [u8; 32] {
    core::array::from_fn(|i| u8::try_from(i + 1).expect("small"))
}

#[test]
fn message_body_vectors_are_pinned_byte_for_byte() {
    for (sender, sequence, wire, tag) in BODY_VECTORS {
        let message: Message = serde_json::from_str(wire).expect(wire);
        let signed = signed_bytes(sender, sequence, &tok("ctl-b"), &message).expect("bytes");
        let expected = format!(
            r#"{{"domain":"splash-worker-auth-v5","protocol_version":5,"sender":"{}","sequence":{sequence},"session_id":"ctl-b","message":{wire}}}"#,
            sender.as_str()
        );
        assert_eq!(String::from_utf8(signed).expect("utf-8"), expected);
        assert_eq!(
            blake3::keyed_hash(&ctl_b_key(), expected.as_bytes())
                .to_hex()
                .as_str(),
            tag
        );
    }
}

#[test]
fn message_body_vectors_authenticate_as_they_went_on_the_wire() {
    let key = || SessionKey::from_bytes(ctl_b_key()).expect("key");
    let mut host = SessionAuthenticator::new(tok("ctl-b"), key(), SessionRole::Host);
    let mut worker = SessionAuthenticator::new(tok("ctl-b"), key(), SessionRole::Worker);
    let frame = |seq: u64, message: &str, tag: &str| -> splash_protocol::Frame {
        serde_json::from_str(&format!(
            r#"{{"sequence":{seq},"message":{message},"auth_tag":"{tag}"}}"#
        ))
        .expect("frame")
    };
    // The worker's view: host frames 2 and 5 (frames 1, 3 and 4 of that
    // exchange are not in the notes, so the authenticator is moved past
    // them with frames of our own).
    let filler = || Message::CloseSession {
        protocol_version: splash_protocol::Version,
        session_id: tok("ctl-b"),
    };
    worker
        .open(host.seal(filler()).expect("1"))
        .expect("frame 1");
    // As it went on the wire: keys unsorted. The tag covers the sorted form.
    let unsorted = BODY_VECTORS[0]
        .2
        .replace(r#"{"a":2,"b":1}"#, r#"{"b":1,"a":2}"#);
    let invoke = worker
        .open(frame(2, &unsorted, BODY_VECTORS[0].3))
        .expect("invoke authenticates");
    assert_eq!(invoke, serde_json::from_str(BODY_VECTORS[0].2).expect("m"));
    host.seal(invoke).expect("2");
    for n in 3..=4 {
        let frame = host.seal(filler()).expect("seal");
        assert_eq!(frame.sequence, n);
        worker.open(frame).expect("filler frame");
    }
    worker
        .open(frame(5, BODY_VECTORS[2].2, BODY_VECTORS[2].3))
        .expect("close authenticates");
    // The host's view: the worker's frame 1.
    host.open(frame(1, BODY_VECTORS[1].2, BODY_VECTORS[1].3))
        .expect("result authenticates");
}

/// The compensation fingerprint of the vector grant, over bytes written by
/// hand: the domain, the JSON length as 8 big-endian bytes, the JSON.
#[test]
fn the_compensation_fingerprint_binds_the_grant_json() {
    let grant_json = r#"{"tool":"tool.call","format":"json","max_calls":1,"max_input_bytes":16384,"max_output_bytes":65536,"max_compensations":0,"resources":[{"kind":"file_root","id":"a"},{"kind":"file_root","id":"b"},{"kind":"secret","id":"k"}]}"#;
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"splash-compensation-grant-v1");
    hasher.update(&u64::try_from(grant_json.len()).expect("len").to_be_bytes());
    hasher.update(grant_json.as_bytes());
    let grant = &vector_manifest().grants[0];
    assert_eq!(
        compensation_fingerprint(grant).expect("fingerprint"),
        hasher.finalize().to_hex().as_str()
    );
    let mut wider = grant.clone();
    wider.max_compensations = 1;
    assert_ne!(
        compensation_fingerprint(&wider).expect("fingerprint"),
        compensation_fingerprint(grant).expect("fingerprint")
    );
}
