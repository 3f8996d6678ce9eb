//! Bootstrap preamble: exact layout, exact reads, every rejection.

use std::io::{Cursor, Read};

use splash_protocol::{
    BootstrapError, PrivatePipeWorkerBootstrap, SessionKey, SessionKeyError, Token,
};

fn bootstrap(id: &str, key: u8) -> PrivatePipeWorkerBootstrap {
    PrivatePipeWorkerBootstrap::new(
        Token::new(id).expect("token"),
        SessionKey::from_bytes([key; 32]).expect("key"),
    )
}

fn valid_bytes() -> Vec<u8> {
    bootstrap("s-1", 0x07).encode().to_vec()
}

#[test]
fn encodes_the_exact_layout() {
    let bytes = valid_bytes();
    assert_eq!(bytes.len(), 45);
    assert_eq!(&bytes[..8], b"SPLPBOOT");
    assert_eq!(bytes[8], 0x01);
    assert_eq!(bytes[9], 3);
    assert_eq!(&bytes[10..13], b"s-1");
    assert_eq!(&bytes[13..], &[0x07; 32]);
    let long = bootstrap(&"x".repeat(128), 1).encode();
    assert_eq!(long.len(), 42 + 128);
}

/// A reader that hands out one byte per call and records how many bytes
/// were taken, to prove nothing past the preamble is consumed.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.data.len() || buf.is_empty() {
            return Ok(0);
        }
        buf[0] = self.data[self.pos];
        self.pos += 1;
        Ok(1)
    }
}

#[test]
fn reads_exactly_the_preamble_and_nothing_more() {
    let mut data = valid_bytes();
    data.extend_from_slice(b"{\"next\":1}\n");
    let mut cursor = Cursor::new(data.clone());
    let decoded = PrivatePipeWorkerBootstrap::read_from(&mut cursor).expect("valid");
    assert_eq!(decoded.session_id().as_str(), "s-1");
    assert_eq!(cursor.position(), 45);
    let mut rest = String::new();
    cursor.read_to_string(&mut rest).expect("rest");
    assert_eq!(rest, "{\"next\":1}\n");

    let mut trickle = Trickle { data, pos: 0 };
    let decoded = PrivatePipeWorkerBootstrap::read_from(&mut trickle).expect("valid");
    assert_eq!(trickle.pos, 45);
    assert_eq!(decoded.encode().to_vec(), valid_bytes());
}

fn reject(bytes: &[u8]) -> BootstrapError {
    match PrivatePipeWorkerBootstrap::read_from(&mut Cursor::new(bytes.to_vec())) {
        Ok(b) => panic!("accepted a bad preamble for `{}`", b.session_id()),
        Err(e) => e,
    }
}

#[test]
fn rejects_a_bad_magic() {
    let mut b = valid_bytes();
    b[0] = b'X';
    assert!(matches!(reject(&b), BootstrapError::BadMagic));
}

#[test]
fn rejects_an_unknown_version() {
    for v in [0x00, 0x02, 0xff] {
        let mut b = valid_bytes();
        b[8] = v;
        assert!(matches!(reject(&b), BootstrapError::UnsupportedVersion(x) if x == v));
    }
}

#[test]
fn rejects_zero_and_oversized_id_lengths() {
    let mut b = valid_bytes();
    b[9] = 0;
    assert!(matches!(reject(&b), BootstrapError::ZeroIdLength));
    for len in [129u8, 200, 255] {
        let mut b = valid_bytes();
        b[9] = len;
        b.extend(vec![b'a'; 300]);
        assert!(matches!(reject(&b), BootstrapError::OversizedIdLength(x) if x == len));
    }
}

#[test]
fn rejects_an_invalid_token() {
    for bad in [b'S', b'/', 0x00, 0xff, b' '] {
        let mut b = valid_bytes();
        b[11] = bad;
        assert!(
            matches!(reject(&b), BootstrapError::InvalidSessionId(_)),
            "byte {bad:#04x}"
        );
    }
}

#[test]
fn rejects_an_all_zero_key() {
    let mut b = valid_bytes();
    for byte in &mut b[13..] {
        *byte = 0;
    }
    assert!(matches!(reject(&b), BootstrapError::ZeroKey));
    // One non-zero byte anywhere is a valid key.
    b[44] = 1;
    assert!(PrivatePipeWorkerBootstrap::read_from(&mut Cursor::new(b)).is_ok());
}

#[test]
fn rejects_each_short_read() {
    let b = valid_bytes();
    for cut in 0..b.len() {
        let expected = match cut {
            0..=9 => "header",
            10..=12 => "session id",
            _ => "session key",
        };
        match reject(&b[..cut]) {
            BootstrapError::Truncated { field } => {
                assert_eq!(field.as_str(), expected, "cut at {cut}");
            }
            other => panic!("cut at {cut}: {other}"),
        }
    }
}

#[test]
fn session_keys_are_redacted_random_and_never_zero() {
    assert!(matches!(
        SessionKey::from_bytes([0; 32]),
        Err(SessionKeyError::AllZero)
    ));
    assert!(matches!(
        SessionKey::from_slice(&[1; 31]),
        Err(SessionKeyError::Length(31))
    ));
    let key = SessionKey::from_bytes([0xab; 32]).expect("key");
    let shown = format!("{key:?}");
    assert_eq!(shown, "SessionKey(<redacted>)");
    let shown = format!("{:?}", bootstrap("s-1", 0xab));
    assert!(!shown.contains("171") && !shown.contains("ab, "), "{shown}");
    assert!(format!("{:?}", bootstrap("s-1", 0xab).encode()).contains("redacted"));

    let a = PrivatePipeWorkerBootstrap::new(
        Token::new("s").expect("t"),
        SessionKey::generate().expect("rng"),
    );
    let b = PrivatePipeWorkerBootstrap::new(
        Token::new("s").expect("t"),
        SessionKey::generate().expect("rng"),
    );
    assert_ne!(a.encode()[11..].to_vec(), b.encode()[11..].to_vec());
    assert_ne!(a.encode()[11..].to_vec(), vec![0; 32]);
}
