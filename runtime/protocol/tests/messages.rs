//! The wire shape of every message, pinned; what the decoder refuses; and
//! the integrity of a frame against every single-byte change.

use serde_json::json;
use splash_protocol::canonical;
use splash_protocol::{
    Frame, Invocation, Message, Payload, SessionAuthenticator, SessionKey, SessionRole, Token,
    Version,
};

fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// One wire form per message type (and per status, outcome and payload
/// format), exactly as Splash protocol v5 writes them.
fn shapes() -> Vec<String> {
    let s = r#""protocol_version":5,"session_id":"s""#;
    vec![
        r#"{"type":"open_session","manifest":{"protocol_version":5,"session_id":"s","grants":[]}}"#
            .to_owned(),
        format!(
            r#"{{"type":"invoke","invocation":{{{s},"request_id":"r-1","tool":"t.x","payload":{{"format":"json","value":{{"a":{{"c":[true],"d":null}},"b":1}}}}}}}}"#
        ),
        format!(
            r#"{{"type":"invoke","invocation":{{{s},"request_id":"r-1","tool":"t.x","payload":{{"format":"text","value":"hi"}}}}}}"#
        ),
        format!(
            r#"{{"type":"result","result":{{{s},"request_id":"r-1","payload":{{"format":"json","value":[1,"x"]}}}}}}"#
        ),
        format!(
            r#"{{"type":"dispatch_operation","request":{{{s},"request_id":"r-2","tool":"t.x","operation_key":"op-1","payload":{{"format":"json","value":[1,2]}}}}}}"#
        ),
        format!(
            r#"{{"type":"operation_result","result":{{{s},"request_id":"r-2","tool":"t.x","operation_key":"op-1","status":{{"state":"running"}}}}}}"#
        ),
        format!(
            r#"{{"type":"operation_result","result":{{{s},"request_id":"r-2","tool":"t.x","operation_key":"op-1","status":{{"state":"succeeded","payload":{{"format":"json","value":{{}}}}}}}}}}"#
        ),
        format!(
            r#"{{"type":"compensate_operation","request":{{{s},"request_id":"r-3","tool":"t.x","operation_key":"op-1","compensation_key":"cmp-1","tenant_scope":"tenant-a","grant_fingerprint":"{FP}","payload":{{"format":"text","value":"undo"}}}}}}"#
        ),
        format!(
            r#"{{"type":"compensation_result","result":{{{s},"request_id":"r-3","tool":"t.x","operation_key":"op-1","compensation_key":"cmp-1","tenant_scope":"tenant-a","grant_fingerprint":"{FP}","status":{{"state":"failed","message":"no"}}}}}}"#
        ),
        format!(
            r#"{{"type":"reconcile_operation","request":{{{s},"request_id":"r-4","tool":"t.x","operation_key":"op-1"}}}}"#
        ),
        format!(
            r#"{{"type":"reconciled_operation","result":{{{s},"request_id":"r-4","tool":"t.x","operation_key":"op-1","status":{{"state":"cancelled"}}}}}}"#
        ),
        format!(
            r#"{{"type":"cancel","request":{{{s},"cancellation_id":"c-2","request_id":"r-1","tool":"t.x"}}}}"#
        ),
        format!(
            r#"{{"type":"cancellation_result","result":{{{s},"cancellation_id":"c-2","request_id":"r-1","tool":"t.x","outcome":"acknowledged"}}}}"#
        ),
        format!(
            r#"{{"type":"cancellation_result","result":{{{s},"cancellation_id":"c-2","request_id":"r-1","tool":"t.x","outcome":"too_late"}}}}"#
        ),
        format!(
            r#"{{"type":"cancellation_result","result":{{{s},"cancellation_id":"c-2","request_id":"r-1","tool":"t.x","outcome":"unsupported"}}}}"#
        ),
        format!(r#"{{"type":"close_session",{s}}}"#),
    ]
}

#[test]
fn every_message_decodes_and_reencodes_to_its_exact_wire_form() {
    let mut kinds = std::collections::BTreeSet::new();
    for wire in shapes() {
        let message: Message = serde_json::from_str(&wire).expect(&wire);
        message.validate().expect(&wire);
        let encoded = canonical::to_vec(&message).expect("encode");
        assert_eq!(String::from_utf8(encoded).expect("utf-8"), wire);
        assert_eq!(
            message.kind(),
            wire.split('"').nth(3).expect("type value"),
            "{wire}"
        );
        assert_eq!(message.session_id().as_str(), "s", "{wire}");
        kinds.insert(message.kind());
    }
    assert_eq!(kinds.len(), 12, "every message type is pinned");
}

#[test]
fn a_message_built_in_code_has_the_wire_form() {
    let message = Message::Invoke {
        invocation: Invocation {
            protocol_version: Version,
            session_id: tok("s"),
            request_id: tok("r-1"),
            tool: tok("t.x"),
            payload: Payload::Json(json!({"b": 1, "a": {"d": null, "c": [true]}})),
        },
    };
    assert_eq!(
        String::from_utf8(canonical::to_vec(&message).expect("encode")).expect("utf-8"),
        shapes()[1]
    );
}

#[test]
fn the_decoder_refuses_what_splash_would_not_send() {
    let s = r#""protocol_version":5,"session_id":"s""#;
    for wire in [
        r#"{"type":"shell","argv":["sh"]}"#.to_owned(),
        // Another protocol version inside a body.
        r#"{"type":"close_session","protocol_version":4,"session_id":"s"}"#.to_owned(),
        // Missing and unknown fields.
        r#"{"type":"close_session"}"#.to_owned(),
        format!(r#"{{"type":"close_session",{s},"x":null}}"#),
        format!(r#"{{"type":"cancel","request":{{{s},"request_id":"r-1","tool":"t"}}}}"#),
        format!(
            r#"{{"type":"cancel","request":{{{s},"cancellation_id":"c","request_id":"r-1","tool":"t","why":1}}}}"#
        ),
        // A payload without its format, or of an unknown one.
        format!(r#"{{"type":"result","result":{{{s},"request_id":"r-1","payload":{{"a":1}}}}}}"#),
        format!(
            r#"{{"type":"result","result":{{{s},"request_id":"r-1","payload":{{"format":"yaml","value":"a"}}}}}}"#
        ),
        format!(
            r#"{{"type":"result","result":{{{s},"request_id":"r-1","payload":{{"format":"text","value":1}}}}}}"#
        ),
        // Not a token.
        format!(
            r#"{{"type":"invoke","invocation":{{{s},"request_id":"R-1","tool":"t","payload":{{"format":"text","value":""}}}}}}"#
        ),
        // An unknown status.
        format!(
            r#"{{"type":"reconciled_operation","result":{{{s},"request_id":"r","tool":"t","operation_key":"o","status":{{"state":"unknown"}}}}}}"#
        ),
        // The old shapes.
        r#"{"type":"invoke","request_id":"r-1","tool":"t","input":{}}"#.to_owned(),
        r#"{"type":"cancel","request_id":"r-1"}"#.to_owned(),
    ] {
        assert!(serde_json::from_str::<Message>(&wire).is_err(), "{wire}");
    }
}

#[test]
fn validation_refuses_what_the_types_cannot() {
    let s = r#""protocol_version":5,"session_id":"s""#;
    for wire in [
        // A cancellation id equal to the request it cancels.
        format!(
            r#"{{"type":"cancel","request":{{{s},"cancellation_id":"r-1","request_id":"r-1","tool":"t"}}}}"#
        ),
        // A compensation key outside `cmp-`, a malformed fingerprint.
        format!(
            r#"{{"type":"compensate_operation","request":{{{s},"request_id":"r","tool":"t","operation_key":"o","compensation_key":"undo-1","tenant_scope":"x","grant_fingerprint":"{FP}","payload":{{"format":"text","value":""}}}}}}"#
        ),
        format!(
            r#"{{"type":"compensate_operation","request":{{{s},"request_id":"r","tool":"t","operation_key":"o","compensation_key":"cmp-1","tenant_scope":"x","grant_fingerprint":"{}","payload":{{"format":"text","value":""}}}}}}"#,
            FP.to_uppercase()
        ),
        // An empty failure message; a succeeded status with a scalar value.
        format!(
            r#"{{"type":"operation_result","result":{{{s},"request_id":"r","tool":"t","operation_key":"o","status":{{"state":"failed","message":""}}}}}}"#
        ),
        format!(
            r#"{{"type":"operation_result","result":{{{s},"request_id":"r","tool":"t","operation_key":"o","status":{{"state":"succeeded","payload":{{"format":"json","value":1}}}}}}}}"#
        ),
    ] {
        let message: Message = serde_json::from_str(&wire).expect(&wire);
        assert!(message.validate().is_err(), "{wire}");
        // A frame carrying it does not decode.
        let frame = format!(r#"{{"sequence":1,"message":{wire},"auth_tag":"{FP}"}}"#);
        assert!(serde_json::from_str::<Frame>(&frame).is_err(), "{frame}");
    }
}

#[test]
fn every_single_byte_change_of_a_frame_is_refused() {
    let key = SessionKey::from_bytes([0x11; 32]).expect("key");
    let mut host = SessionAuthenticator::new(tok("s-1"), key.clone(), SessionRole::Host);
    let frame = host
        .seal(Message::Invoke {
            invocation: Invocation {
                protocol_version: Version,
                session_id: tok("s-1"),
                request_id: tok("r-1"),
                tool: tok("demo.echo"),
                payload: Payload::Json(
                    json!({"path": "/a", "n": 12, "ok": true, "list": [1.5, null]}),
                ),
            },
        })
        .expect("seal");
    let line = canonical::to_vec(&frame).expect("encode");
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
