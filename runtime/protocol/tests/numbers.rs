//! Numbers in payloads: the bytes both ends hash.
//!
//! A received number is decoded (integers without fraction or exponent in
//! `u64`/`i64` range stay integers, everything else becomes the nearest
//! double) and re-serialized in the canonical layout of
//! `splash_protocol::canonical`, which is the layout of the `serde_json`
//! that Splash protocol v5 builds with (1.0.150, `zmij` float formatter).

use proptest::prelude::*;
use serde_json::Value;
use splash_protocol::auth::signed_bytes;
use splash_protocol::canonical::{self, format_f64};
use splash_protocol::{
    Frame, Invocation, Message, Payload, SessionAuthenticator, SessionKey, SessionRole, Token,
    Version,
};

fn tok(s: &str) -> Token {
    Token::new(s).expect("token")
}

/// (as received, as hashed and re-sent)
const VECTORS: &[(&str, &str)] = &[
    ("1e3", "1000.0"),
    ("1E3", "1000.0"),
    ("1e+3", "1000.0"),
    ("1.50", "1.5"),
    ("0.5", "0.5"),
    ("1", "1"),
    ("1.0", "1.0"),
    ("100e-2", "1.0"),
    ("-0", "-0.0"),
    ("-0.0", "-0.0"),
    ("0", "0"),
    ("-7", "-7"),
    ("0.1", "0.1"),
    ("1e15", "1000000000000000.0"),
    ("1e16", "1e+16"),
    ("12345678901234567890e-3", "1.2345678901234568e+16"),
    ("0.00001", "0.00001"),
    ("0.000001", "1e-6"),
    ("1.5e-7", "1.5e-7"),
    ("18446744073709551615", "18446744073709551615"),
    ("18446744073709551616", "1.8446744073709552e+19"),
    ("-9223372036854775808", "-9223372036854775808"),
    ("-9223372036854775809", "-9.223372036854776e+18"),
    ("1.7976931348623157e308", "1.7976931348623157e+308"),
    ("2.5e-324", "5e-324"),
    ("943314908.9315741", "943314908.9315741"),
    // Exactly halfway between two shortest candidates: the even one.
    ("1658206780088562.25", "1658206780088562.2"),
    ("-26829767983277.3125", "-26829767983277.312"),
];

#[test]
fn numbers_are_rewritten_canonically() {
    for (received, hashed) in VECTORS {
        let v: Value = serde_json::from_str(&format!("[{received}]")).expect(received);
        let out = String::from_utf8(canonical::value_to_vec(&v).expect("encode")).expect("utf-8");
        assert_eq!(out, format!("[{hashed}]"), "{received}");
        // The canonical text is a fixed point.
        let again: Value = serde_json::from_str(&out).expect("reparse");
        assert_eq!(again, v, "{received}");
    }
}

#[test]
fn numbers_out_of_range_are_refused() {
    for text in [
        "[1e400]",
        "[-1e400]",
        "[NaN]",
        "[Infinity]",
        "[01]",
        "[1.]",
        "[.5]",
    ] {
        assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
    }
}

#[test]
fn the_tag_covers_the_canonical_numbers() {
    let key: [u8; 32] = core::array::from_fn(|i| u8::try_from(i + 1).expect("small"));
    let received = r#"{"type":"invoke","invocation":{"protocol_version":5,"session_id":"ctl-b","request_id":"r-1","tool":"interop.echo","payload":{"format":"json","value":{"n":[1e3,1.50,0.5,1,-0,1e16]}}}}"#;
    // Written by hand: what both ends hash for that message at sequence 2.
    let hashed = r#"{"domain":"splash-worker-auth-v5","protocol_version":5,"sender":"host","sequence":2,"session_id":"ctl-b","message":{"type":"invoke","invocation":{"protocol_version":5,"session_id":"ctl-b","request_id":"r-1","tool":"interop.echo","payload":{"format":"json","value":{"n":[1000.0,1.5,0.5,1,-0.0,1e+16]}}}}}"#;
    let message: Message = serde_json::from_str(received).expect("decode");
    let bytes = signed_bytes(SessionRole::Host, 2, &tok("ctl-b"), &message).expect("bytes");
    assert_eq!(String::from_utf8(bytes).expect("utf-8"), hashed);
    let tag = blake3::keyed_hash(&key, hashed.as_bytes());
    assert_eq!(
        tag.to_hex().as_str(),
        "10508d61be0ca123555d257da1fb9ac9f007e3510d288feb4ab2d29b9fb65762"
    );
    // A frame that carries the numbers as received authenticates.
    let line = format!(
        r#"{{"sequence":2,"message":{received},"auth_tag":"{}"}}"#,
        tag.to_hex()
    );
    let frame: Frame = serde_json::from_str(&line).expect("frame");
    let mut worker = SessionAuthenticator::new(
        tok("ctl-b"),
        SessionKey::from_bytes(key).expect("key"),
        SessionRole::Worker,
    );
    // Frame 1 (any host message; this test is about the tag of frame 2).
    let mut host = SessionAuthenticator::new(
        tok("ctl-b"),
        SessionKey::from_bytes(key).expect("key"),
        SessionRole::Host,
    );
    let first = host
        .seal(Message::CloseSession {
            protocol_version: Version,
            session_id: tok("ctl-b"),
        })
        .expect("seal");
    worker.open(first).expect("frame 1");
    assert_eq!(worker.open(frame).expect("authentic"), message);
    // Our own sender writes the canonical numbers on the wire.
    let sealed = host
        .seal(Message::Invoke {
            invocation: Invocation {
                protocol_version: Version,
                session_id: tok("ctl-b"),
                request_id: tok("r-1"),
                tool: tok("interop.echo"),
                payload: match message {
                    Message::Invoke { invocation } => invocation.payload,
                    _ => Payload::Text(String::new()),
                },
            },
        })
        .expect("seal");
    assert_eq!(sealed.auth_tag.to_hex(), tag.to_hex().as_str());
    let wire = String::from_utf8(canonical::to_vec(&sealed).expect("encode")).expect("utf-8");
    assert!(
        wire.contains(r#"{"n":[1000.0,1.5,0.5,1,-0.0,1e+16]}"#),
        "{wire}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 20_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The canonical layout is the one `serde_json` writes today (the
    /// formatter Splash's build uses), and reads back exactly.
    #[test]
    fn the_layout_matches_serde_json_and_round_trips(bits in any::<u64>()) {
        let v = f64::from_bits(bits);
        prop_assume!(v.is_finite());
        let ours = format_f64(v);
        prop_assert_eq!(&ours, &serde_json::to_string(&v).expect("encode"));
        prop_assert_eq!(ours.parse::<f64>().expect("parse").to_bits(), bits);
    }

    /// Decimal inputs of every scale, including exact ties.
    #[test]
    fn decimal_inputs_match_serde_json(m in 0u64..10_000_000, e in -330i32..310) {
        let v: f64 = format!("{m}e{e}").parse().expect("parse");
        prop_assume!(v.is_finite());
        prop_assert_eq!(format_f64(v), serde_json::to_string(&v).expect("encode"));
    }
}
