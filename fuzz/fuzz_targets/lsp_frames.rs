//! The language server's standard input: `Content-Length` framing
//! (`FrameReader`) and JSON-RPC decoding (`decode`) from
//! `compiler/cli/src/lsp/transport.rs`, compiled here as a module of this
//! target (it is private to the `splashc` binary; this target uses its
//! `pub(crate)` items).
//!
//! The first input byte sets the capacity of the buffered reader the frames
//! are read through (1 to 255 bytes; 0 for 8 KiB), so frames and headers
//! split across reads are exercised.
//!
//! Invariants, besides not panicking:
//! - the reader ends, and the frames do not depend on how the input was
//!   split into reads;
//! - a decoded message re-encodes (as the server writes) to a frame that
//!   reads and decodes to the same encoding;
//! - a refused body gets a parse error or an invalid request with a null,
//!   integer or string id, and the error frame the server answers with is
//!   one frame holding a JSON-RPC error with that id, code and reason.

#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use lsp_server::Message;
use serde_json::Value;

#[path = "../../compiler/cli/src/lsp/transport.rs"]
#[expect(dead_code, reason = "the server's stdio threads are not run here")]
mod transport;

use transport::{Frame, FrameReader, decode, error_frame};

fuzz_target!(|data: &[u8]| {
    let Some((&capacity, input)) = data.split_first() else {
        return;
    };
    let capacity = if capacity == 0 {
        8192
    } else {
        usize::from(capacity)
    };
    let frames = read_all(input, capacity);
    if capacity != 8192 {
        assert_eq!(
            frames,
            read_all(input, 8192),
            "the frames depend on how the input was split into reads"
        );
    }
    for frame in &frames {
        if let Frame::Body(body) = frame {
            check_body(body);
        }
    }
});

/// Every frame until the end, which must come: each frame but the last
/// consumes input.
fn read_all(input: &[u8], capacity: usize) -> Vec<Frame> {
    let mut reader = FrameReader::new(BufReader::with_capacity(capacity, input));
    let mut frames = Vec::new();
    loop {
        let frame = reader.next_frame();
        let end = matches!(frame, Frame::End(_));
        frames.push(frame);
        if end {
            return frames;
        }
        assert!(
            frames.len() <= input.len() + 1,
            "more frames than input bytes"
        );
    }
}

fn encode(message: &Message) -> Vec<u8> {
    let mut out = Vec::new();
    message.write(&mut out).expect("a message encodes");
    out
}

/// The one body of the frame `bytes`.
fn body_of(bytes: &[u8]) -> Vec<u8> {
    let mut frames = read_all(bytes, 8192);
    match &mut frames[..] {
        [Frame::Body(body), Frame::End(None)] => std::mem::take(body),
        other => panic!("a frame the server writes reads as {other:?}"),
    }
}

fn check_body(body: &[u8]) {
    match decode(body) {
        Ok(message) => {
            let encoded = encode(&message);
            let again = decode(&body_of(&encoded)).expect("a re-encoded message decodes");
            assert_eq!(
                encode(&again),
                encoded,
                "re-encoding a decoded message is not a fixed point"
            );
        }
        Err((code, reason, id)) => {
            assert!(code == -32700 || code == -32600, "error code {code}");
            assert!(
                id.is_null() || id.is_i64() || id.is_string(),
                "error id {id}"
            );
            let reply = body_of(&error_frame(code, &reason, id.clone()));
            let reply: Value = serde_json::from_slice(&reply).expect("the error frame is JSON");
            assert_eq!(reply["jsonrpc"], "2.0");
            assert_eq!(reply["id"], id);
            assert_eq!(reply["error"]["code"], code);
            assert_eq!(reply["error"]["message"], reason.as_str());
        }
    }
}
