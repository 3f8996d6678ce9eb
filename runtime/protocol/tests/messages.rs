//! The wire shape of every message, pinned, and the integrity of a frame
//! against every single-byte change.

use serde_json::json;
use splash_protocol::{
    CancelDisposition, CapabilityManifest, Frame, Message, OperationState, Outcome,
    SessionAuthenticator, SessionKey, SessionRole, Token,
};

fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

#[test]
fn every_message_has_a_fixed_wire_shape() {
    let manifest =
        CapabilityManifest::from_json(br#"{"protocol_version":5,"session_id":"s","grants":[]}"#)
            .expect("manifest");
    let cases = [
        (
            Message::OpenSession { manifest },
            r#"{"type":"open_session","manifest":{"protocol_version":5,"session_id":"s","grants":[]}}"#,
        ),
        (
            Message::Invoke {
                request_id: tok("r-1"),
                tool: tok("t.x"),
                input: json!({"b": 1, "a": {"d": null, "c": [true]}}),
            },
            r#"{"type":"invoke","request_id":"r-1","tool":"t.x","input":{"a":{"c":[true],"d":null},"b":1}}"#,
        ),
        (
            Message::Result {
                request_id: tok("r-1"),
                outcome: Outcome::Ok(json!("text")),
            },
            r#"{"type":"result","request_id":"r-1","outcome":{"ok":"text"}}"#,
        ),
        (
            Message::Result {
                request_id: tok("r-1"),
                outcome: Outcome::Error("no".into()),
            },
            r#"{"type":"result","request_id":"r-1","outcome":{"error":"no"}}"#,
        ),
        (
            Message::DispatchOperation {
                operation_id: tok("op-1"),
                tool: tok("t.x"),
                input: json!([1, 2]),
            },
            r#"{"type":"dispatch_operation","operation_id":"op-1","tool":"t.x","input":[1,2]}"#,
        ),
        (
            Message::OperationResult {
                operation_id: tok("op-1"),
                outcome: Outcome::Ok(json!({})),
            },
            r#"{"type":"operation_result","operation_id":"op-1","outcome":{"ok":{}}}"#,
        ),
        (
            Message::CompensateOperation {
                operation_id: tok("op-1"),
                tool: tok("t.x"),
            },
            r#"{"type":"compensate_operation","operation_id":"op-1","tool":"t.x"}"#,
        ),
        (
            Message::CompensationResult {
                operation_id: tok("op-1"),
                outcome: Outcome::Error("gone".into()),
            },
            r#"{"type":"compensation_result","operation_id":"op-1","outcome":{"error":"gone"}}"#,
        ),
        (
            Message::ReconcileOperation {
                operation_id: tok("op-1"),
                tool: tok("t.x"),
            },
            r#"{"type":"reconcile_operation","operation_id":"op-1","tool":"t.x"}"#,
        ),
        (
            Message::ReconciledOperation {
                operation_id: tok("op-1"),
                state: OperationState::NotApplied,
            },
            r#"{"type":"reconciled_operation","operation_id":"op-1","state":"not_applied"}"#,
        ),
        (
            Message::Cancel {
                request_id: tok("r-1"),
            },
            r#"{"type":"cancel","request_id":"r-1"}"#,
        ),
        (
            Message::CancellationResult {
                request_id: tok("r-1"),
                disposition: CancelDisposition::TooLate,
            },
            r#"{"type":"cancellation_result","request_id":"r-1","disposition":"too_late"}"#,
        ),
        (Message::CloseSession {}, r#"{"type":"close_session"}"#),
    ];
    for (message, wire) in cases {
        assert_eq!(serde_json::to_string(&message).expect("encode"), wire);
        assert_eq!(
            serde_json::from_str::<Message>(wire).expect("decode"),
            message,
            "{wire}"
        );
        assert_eq!(
            message.kind(),
            wire.split('"').nth(3).expect("type value"),
            "{wire}"
        );
    }
}

#[test]
fn unknown_types_and_fields_are_refused() {
    for wire in [
        r#"{"type":"shell","argv":["sh"]}"#,
        r#"{"type":"cancel","request_id":"r-1","extra":1}"#,
        r#"{"type":"close_session","x":null}"#,
        r#"{"type":"result","request_id":"r-1","outcome":{"ok":1,"error":"x"}}"#,
        r#"{"type":"result","request_id":"r-1","outcome":{"maybe":1}}"#,
        r#"{"type":"cancel","request_id":"R-1"}"#,
        r#"{"request_id":"r-1"}"#,
    ] {
        assert!(serde_json::from_str::<Message>(wire).is_err(), "{wire}");
    }
}

#[test]
fn every_single_byte_change_of_a_frame_is_refused() {
    let key = SessionKey::from_bytes([0x11; 32]).expect("key");
    let mut host = SessionAuthenticator::new(tok("s-1"), key.clone(), SessionRole::Host);
    let frame = host
        .seal(Message::Invoke {
            request_id: tok("r-1"),
            tool: tok("demo.echo"),
            input: json!({"path": "/a", "n": 12, "ok": true, "list": [1.5, null]}),
        })
        .expect("seal");
    let line = serde_json::to_vec(&frame).expect("encode");
    let mut checked = 0;
    for i in 0..line.len() {
        for replacement in [line[i] ^ 0x01, line[i] ^ 0x20, b' ', b'0', b'"'] {
            if replacement == line[i] {
                continue;
            }
            let mut changed = line.clone();
            changed[i] = replacement;
            let mut worker =
                SessionAuthenticator::new(tok("s-1"), key.clone(), SessionRole::Worker);
            let accepted = serde_json::from_slice::<Frame>(&changed)
                .ok()
                .and_then(|f| worker.open(f).ok());
            assert!(
                accepted.is_none(),
                "byte {i} changed to {replacement:#04x} was accepted"
            );
            checked += 1;
        }
    }
    assert!(checked > 500);
}

/// Found by the property tests: without exact float parsing, a received
/// `943314908.9315741` re-serializes as `943314908.931574`, and a genuine
/// frame fails authentication.
#[test]
fn floats_survive_the_wire_exactly() {
    let key = SessionKey::from_bytes([0x11; 32]).expect("key");
    let mut host = SessionAuthenticator::new(tok("s-1"), key.clone(), SessionRole::Host);
    let mut worker = SessionAuthenticator::new(tok("s-1"), key, SessionRole::Worker);
    for v in [
        943314908.9315741,
        0.1,
        1e300,
        -2.5e-308,
        5e-324,
        123456789.12345679,
    ] {
        let frame = host
            .seal(Message::Invoke {
                request_id: tok("r-1"),
                tool: tok("t"),
                input: json!({"": v}),
            })
            .expect("seal");
        let line = serde_json::to_string(&frame).expect("encode");
        let decoded: Frame = serde_json::from_str(&line).expect("decode");
        assert_eq!(worker.open(decoded).expect("authentic {v}"), frame.message);
    }
}
