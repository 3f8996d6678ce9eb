//! Properties over generated input: the codec and the frame decoder never
//! panic on arbitrary bytes, and the canonical serialization of payloads is
//! a fixed point (which needs exact float parsing: serde_json's
//! `float_roundtrip`, enabled by this crate).

use std::io::Cursor;

use proptest::prelude::*;
use serde_json::{Map, Value};
use splash_protocol::canonical;
use splash_protocol::{
    CapabilityManifest, CodecError, Frame, Invocation, JsonLineReader, Message, Payload,
    SessionAuthenticator, SessionKey, SessionRole, Token, Version,
};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e9f64..1.0e9).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((".{0,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_lines_never_panic_and_errors_poison(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut r = JsonLineReader::new(Cursor::new(bytes));
        for _ in 0..8 {
            match r.read::<Frame>() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => {
                    prop_assert!(matches!(r.read::<Frame>(), Err(CodecError::Poisoned)));
                    break;
                }
            }
        }
    }

    #[test]
    fn arbitrary_manifests_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = CapabilityManifest::from_json(&bytes);
    }

    #[test]
    fn canonical_payloads_are_a_fixed_point(v in json_value()) {
        let once = canonical::value_to_vec(&v).expect("encode");
        let parsed: Value = serde_json::from_slice(&once).expect("decode");
        prop_assert_eq!(canonical::value_to_vec(&parsed).expect("encode"), once);
    }

    #[test]
    fn any_payload_survives_the_wire_and_authenticates(v in json_value()) {
        let key = SessionKey::from_bytes([3; 32]).expect("key");
        let mut host = SessionAuthenticator::new(Token::new("s").expect("t"), key.clone(), SessionRole::Host);
        let mut worker = SessionAuthenticator::new(Token::new("s").expect("t"), key, SessionRole::Worker);
        let frame = host.seal(Message::Invoke {
            invocation: Invocation {
                protocol_version: Version,
                session_id: Token::new("s").expect("t"),
                request_id: Token::new("r-1").expect("t"),
                tool: Token::new("t").expect("t"),
                payload: Payload::Json(v),
            },
        }).expect("seal");
        let line = canonical::to_vec(&frame).expect("encode");
        let decoded: Frame = serde_json::from_slice(&line).expect("decode");
        prop_assert_eq!(worker.open(decoded).expect("authentic"), frame.message);
    }
}
