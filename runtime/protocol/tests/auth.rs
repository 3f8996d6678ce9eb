//! Frame authentication: tampering, replay, reflection, reordering and
//! direction are rejected, and a rejected frame changes no state.

mod common;

use serde_json::json;
use splash_protocol::{
    AuthError, AuthTag, Frame, Message, SessionAuthenticator, SessionKey, SessionRole,
};

use common::tok;

fn pair() -> (SessionAuthenticator, SessionAuthenticator) {
    let key = SessionKey::from_bytes([0x42; 32]).expect("key");
    (
        SessionAuthenticator::new(tok("s-1"), key.clone(), SessionRole::Host),
        SessionAuthenticator::new(tok("s-1"), key, SessionRole::Worker),
    )
}

fn invoke(n: u32) -> Message {
    common::invoke(
        "s-1",
        &format!("r-{n}"),
        "demo.echo",
        json!({"n": n, "b": [1, {"z": 1, "a": 2}]}),
    )
}

fn result(n: u32) -> Message {
    common::result("s-1", &format!("r-{n}"), json!({"n": n}))
}

/// Sends the frame over the wire form and back, as a receiver sees it.
fn wire(frame: &Frame) -> Frame {
    let line = serde_json::to_string(frame).expect("encode");
    serde_json::from_str(&line).expect("decode")
}

#[test]
fn frames_round_trip_in_both_directions() {
    let (mut host, mut worker) = pair();
    for n in 1..=3 {
        let frame = host.seal(invoke(n)).expect("seal");
        assert_eq!(frame.sequence, u64::from(n));
        assert_eq!(worker.open(wire(&frame)).expect("open"), invoke(n));
        let reply = worker.seal(result(n)).expect("seal");
        assert_eq!(reply.sequence, u64::from(n));
        assert_eq!(host.open(wire(&reply)).expect("open"), result(n));
    }
}

#[test]
fn frame_wire_shape_is_fixed() {
    let (mut host, _) = pair();
    let frame = host.seal(invoke(1)).expect("seal");
    let line = serde_json::to_string(&frame).expect("encode");
    let prefix = r#"{"sequence":1,"message":{"type":"invoke","invocation":{"protocol_version":5,"session_id":"s-1","request_id":"r-1","tool":"demo.echo","payload":{"format":"json","value":{"b":[1,{"a":2,"z":1}],"n":1}}}},"auth_tag":""#;
    assert!(line.starts_with(prefix), "{line}");
    let tag = &line[prefix.len()..line.len() - 2];
    assert_eq!(tag.len(), 64);
    assert!(
        tag.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
}

#[test]
fn tampered_frames_are_rejected_without_advancing() {
    let (mut host, mut worker) = pair();
    let frame = host.seal(invoke(1)).expect("seal");

    let mut changed_input = frame.clone();
    changed_input.message = common::invoke(
        "s-1",
        "r-1",
        "demo.echo",
        json!({"n": 2, "b": [1, {"z": 1, "a": 2}]}),
    );
    assert!(matches!(worker.open(changed_input), Err(AuthError::BadTag)));

    let mut changed_tag = frame.clone();
    let mut bytes = *frame.auth_tag.as_bytes();
    bytes[31] ^= 1;
    changed_tag.auth_tag = AuthTag::from_bytes(bytes);
    assert!(matches!(worker.open(changed_tag), Err(AuthError::BadTag)));

    let mut changed_sequence = frame.clone();
    changed_sequence.sequence = 2;
    assert!(matches!(
        worker.open(changed_sequence),
        Err(AuthError::BadTag)
    ));

    assert_eq!(worker.next_receive_sequence(), Some(1));
    assert_eq!(worker.open(frame).expect("the genuine frame"), invoke(1));
    assert_eq!(worker.next_receive_sequence(), Some(2));
}

#[test]
fn replayed_frames_are_rejected() {
    let (mut host, mut worker) = pair();
    let frame = host.seal(invoke(1)).expect("seal");
    worker.open(frame.clone()).expect("first delivery");
    assert!(matches!(
        worker.open(frame),
        Err(AuthError::Sequence {
            expected: 2,
            got: 1
        })
    ));
    let next = host.seal(invoke(2)).expect("seal");
    assert_eq!(worker.open(next).expect("next"), invoke(2));
}

#[test]
fn reflected_frames_are_rejected() {
    let (mut host, mut worker) = pair();
    // The host's own frame sent back to it: the tag binds sender `host`,
    // while the host verifies with the peer role `worker`.
    let frame = host.seal(invoke(1)).expect("seal");
    assert!(matches!(host.open(frame.clone()), Err(AuthError::BadTag)));
    let reply = worker.seal(result(1)).expect("seal");
    assert!(matches!(worker.open(reply.clone()), Err(AuthError::BadTag)));
    assert_eq!(host.next_receive_sequence(), Some(1));
    assert_eq!(host.open(reply).expect("genuine"), result(1));
}

#[test]
fn out_of_order_frames_are_rejected() {
    let (mut host, mut worker) = pair();
    let first = host.seal(invoke(1)).expect("seal");
    let second = host.seal(invoke(2)).expect("seal");
    assert!(matches!(
        worker.open(second.clone()),
        Err(AuthError::Sequence {
            expected: 1,
            got: 2
        })
    ));
    assert_eq!(worker.open(first).expect("first"), invoke(1));
    assert_eq!(worker.open(second).expect("second"), invoke(2));
}

#[test]
fn other_sessions_and_keys_are_rejected() {
    let (mut host, _) = pair();
    let frame = host.seal(invoke(1)).expect("seal");
    let key = SessionKey::from_bytes([0x42; 32]).expect("key");
    let mut other_session = SessionAuthenticator::new(tok("s-2"), key, SessionRole::Worker);
    assert!(matches!(
        other_session.open(frame.clone()),
        Err(AuthError::BadTag)
    ));
    let other_key = SessionKey::from_bytes([0x43; 32]).expect("key");
    let mut other = SessionAuthenticator::new(tok("s-1"), other_key, SessionRole::Worker);
    assert!(matches!(other.open(frame), Err(AuthError::BadTag)));
}

#[test]
fn each_role_seals_only_its_own_messages() {
    let (mut host, mut worker) = pair();
    assert!(matches!(
        host.seal(result(1)),
        Err(AuthError::Direction {
            role: SessionRole::Host,
            kind: "result"
        })
    ));
    assert!(matches!(
        worker.seal(invoke(1)),
        Err(AuthError::Direction {
            role: SessionRole::Worker,
            kind: "invoke"
        })
    ));
    assert_eq!(host.next_send_sequence(), Some(1));
    assert_eq!(worker.next_send_sequence(), Some(1));
}

#[test]
fn malformed_tags_do_not_decode() {
    let (mut host, _) = pair();
    let frame = host.seal(invoke(1)).expect("seal");
    let line = serde_json::to_string(&frame).expect("encode");
    let hex = frame.auth_tag.to_hex();
    for bad in [
        hex.to_uppercase(),
        hex[..63].to_string(),
        format!("{hex}0"),
        "".into(),
    ] {
        let tampered = line.replace(&hex, &bad);
        assert!(serde_json::from_str::<Frame>(&tampered).is_err(), "{bad}");
    }
    let extra = line.replacen('{', r#"{"extra":1,"#, 1);
    assert!(serde_json::from_str::<Frame>(&extra).is_err());
    let array = format!(
        r#"[1,{},"{hex}"]"#,
        serde_json::to_string(&frame.message).expect("m")
    );
    assert!(serde_json::from_str::<Frame>(&array).is_err());
}

#[test]
fn repeated_keys_do_not_decode() {
    let (mut host, _) = pair();
    let frame = host.seal(invoke(1)).expect("seal");
    let line = serde_json::to_string(&frame).expect("encode");
    assert!(serde_json::from_str::<Frame>(&line).is_ok());
    for (from, to) in [
        (r#"{"sequence":1,"#, r#"{"sequence":1,"sequence":1,"#),
        (r#""type":"invoke","#, r#""type":"invoke","type":"invoke","#),
        (r#""value":{"b""#, r#""value":{"n":1,"b""#),
        (
            r#""request_id":"r-1","#,
            r#""request_id":"r-1","request_id":"r-1","#,
        ),
        (r#"{"a":2,"#, r#"{"a":2,"a":2,"#),
    ] {
        assert!(line.contains(from), "{line}");
        let tampered = line.replacen(from, to, 1);
        let e = serde_json::from_str::<Frame>(&tampered).expect_err("repeated key");
        assert!(e.to_string().contains("duplicate"), "{e}");
    }
}

#[test]
fn a_message_must_name_the_session_it_is_sent_in() {
    let (mut host, mut worker) = pair();
    // Our sealer refuses to send it.
    assert!(matches!(
        host.seal(common::invoke("s-2", "r-1", "demo.echo", json!({}))),
        Err(AuthError::Session { .. })
    ));
    // A peer that tags it anyway: authentic, but for another session.
    let message = common::invoke("s-2", "r-1", "demo.echo", json!({}));
    let bytes = splash_protocol::auth::signed_bytes(SessionRole::Host, 1, &tok("s-1"), &message)
        .expect("bytes");
    let frame = Frame {
        sequence: 1,
        message,
        auth_tag: AuthTag::from_bytes(*blake3::keyed_hash(&[0x42; 32], &bytes).as_bytes()),
    };
    assert!(matches!(worker.open(frame), Err(AuthError::Session { .. })));
    assert_eq!(worker.next_receive_sequence(), Some(1));
}

#[test]
fn the_hashed_bytes_are_capped_at_one_mebibyte() {
    let (mut host, _) = pair();
    let big = |n: usize| Message::Invoke {
        invocation: splash_protocol::Invocation {
            protocol_version: splash_protocol::Version,
            session_id: tok("s-1"),
            request_id: tok("r-1"),
            tool: tok("demo.echo"),
            payload: splash_protocol::Payload::Text("a".repeat(n)),
        },
    };
    let overhead = splash_protocol::auth::signed_bytes(SessionRole::Host, 1, &tok("s-1"), &big(0))
        .expect("bytes")
        .len();
    let limit = splash_protocol::MAX_LINE_BYTES;
    assert!(matches!(
        host.seal(big(limit - overhead + 1)),
        Err(AuthError::TooLarge(n)) if n == limit + 1
    ));
    assert_eq!(
        host.next_send_sequence(),
        Some(1),
        "a refused seal uses no sequence"
    );
    let frame = host.seal(big(limit - overhead)).expect("exactly the bound");
    assert_eq!(frame.sequence, 1);
}
