//! The bounded JSON-line codec and its poisoning.

use std::io::{self, BufRead, BufReader, Cursor, Read};

use serde_json::{Value, json};
use splash_protocol::{CodecError, JsonLineReader, JsonLineWriter, MAX_LINE_BYTES};

#[test]
fn reads_objects_line_by_line_until_a_clean_end() {
    let mut r = JsonLineReader::new(Cursor::new(b"{\"a\":1}\n{\"b\":2}\n".to_vec()));
    assert_eq!(r.read::<Value>().expect("1"), Some(json!({"a": 1})));
    assert_eq!(r.read::<Value>().expect("2"), Some(json!({"b": 2})));
    assert_eq!(r.read::<Value>().expect("end"), None);
    assert_eq!(r.read::<Value>().expect("still end"), None);
}

#[test]
fn accepts_a_line_of_exactly_the_limit() {
    let filler = "x".repeat(MAX_LINE_BYTES - 8);
    let line = format!("{{\"a\":\"{filler}\"}}\n");
    assert_eq!(line.len(), MAX_LINE_BYTES + 1);
    let mut r = JsonLineReader::new(Cursor::new(line.into_bytes()));
    assert!(r.read::<Value>().expect("fits").is_some());
}

/// An endless stream without a newline that counts what was consumed.
struct Endless {
    consumed: usize,
    buf: Vec<u8>,
}

impl Read for Endless {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::other("use the BufRead side"))
    }
}

impl BufRead for Endless {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(&self.buf)
    }
    fn consume(&mut self, n: usize) {
        self.consumed += n;
    }
}

#[test]
fn rejects_an_oversized_line_while_reading() {
    let mut r = JsonLineReader::new(Endless {
        consumed: 0,
        buf: vec![b' '; 64 * 1024],
    });
    assert!(matches!(r.read::<Value>(), Err(CodecError::LineTooLong)));
    // It stopped at the bound instead of buffering the endless line.
    assert!(r.get_ref().consumed <= MAX_LINE_BYTES);

    let filler = "x".repeat(MAX_LINE_BYTES - 7);
    let line = format!("{{\"a\":\"{filler}\"}}\n");
    let mut r = JsonLineReader::new(BufReader::new(Cursor::new(line.into_bytes())));
    assert!(matches!(r.read::<Value>(), Err(CodecError::LineTooLong)));
}

type Check = fn(&CodecError) -> bool;

#[test]
fn any_error_poisons_the_reader() {
    let cases: Vec<(&[u8], Check)> = vec![
        (b"{\"a\":\n{\"b\":1}\n", |e| {
            matches!(e, CodecError::Decode(_))
        }),
        (b"[1,2]\n{\"b\":1}\n", |e| {
            matches!(e, CodecError::NotAnObject)
        }),
        (b"\n{\"b\":1}\n", |e| matches!(e, CodecError::NotAnObject)),
        (b"{\"a\":1} {\"c\":1}\n{\"b\":1}\n", |e| {
            matches!(e, CodecError::Decode(_))
        }),
        (b"{\"a\":1}", |e| matches!(e, CodecError::TruncatedLine)),
    ];
    for (input, first) in cases {
        let mut r = JsonLineReader::new(Cursor::new(input.to_vec()));
        let e = r.read::<Value>().expect_err("bad line");
        assert!(first(&e), "{e:?} for {:?}", String::from_utf8_lossy(input));
        assert!(r.is_poisoned());
        assert!(matches!(r.read::<Value>(), Err(CodecError::Poisoned)));
    }
}

#[test]
fn io_errors_poison_the_reader() {
    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("broken"))
        }
    }
    let mut r = JsonLineReader::new(BufReader::new(Failing));
    assert!(matches!(r.read::<Value>(), Err(CodecError::Io(_))));
    assert!(matches!(r.read::<Value>(), Err(CodecError::Poisoned)));
}

#[test]
fn writer_emits_one_line_and_poisons_on_error() {
    let mut w = JsonLineWriter::new(Vec::new());
    w.write(&json!({"text": "a\nb"})).expect("write");
    assert_eq!(w.get_ref().as_slice(), b"{\"text\":\"a\\nb\"}\n");

    let mut w = JsonLineWriter::new(Vec::new());
    let big = json!({"a": "x".repeat(MAX_LINE_BYTES)});
    assert!(matches!(w.write(&big), Err(CodecError::LineTooLong)));
    assert!(matches!(w.write(&json!({})), Err(CodecError::Poisoned)));
    assert!(w.get_ref().is_empty());

    let mut w = JsonLineWriter::new(Vec::new());
    assert!(matches!(w.write(&json!([1])), Err(CodecError::NotAnObject)));
    assert!(matches!(w.write(&json!({})), Err(CodecError::Poisoned)));

    struct Closed;
    impl io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut w = JsonLineWriter::new(Closed);
    assert!(matches!(w.write(&json!({})), Err(CodecError::Io(_))));
    assert!(matches!(w.write(&json!({})), Err(CodecError::Poisoned)));
}
