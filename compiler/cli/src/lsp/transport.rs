//! The language server's standard input and output: `Content-Length`
//! framing read strictly and within fixed bounds, so that no input can make
//! the server block on a frame it cannot delimit, allocate what a header
//! asks for, or stop serving.
//!
//! A frame is a header block and a body. The header block is at most
//! [`MAX_HEADER_LINES`] lines of at most [`MAX_HEADER_LINE_BYTES`] bytes
//! each (CR LF included), each `Name: value`, ended by an empty line; it
//! must give `Content-Length` exactly once, as decimal digits.
//! `Content-Type` and other headers are accepted and ignored. The body is
//! read as it arrives: its buffer grows with the bytes received, never
//! with the length a header announces.
//!
//! Every frame that cannot be used is answered with a JSON-RPC error
//! response whose `id` is `null` (the request it held, if any, cannot be
//! known), and the server carries on:
//!
//! - a header block with a valid `Content-Length` but another defect (a
//!   malformed line, a repeated `Content-Length`, a bare LF), or a
//!   `Content-Length` above [`MAX_CONTENT_LENGTH`]: `-32700`; exactly that
//!   many body bytes are read and discarded in small pieces, so the next
//!   frame is found where the client put it;
//! - a header block without a usable `Content-Length` (missing, not a
//!   number, too large for 64 bits), a header line that is too long, or too
//!   many lines: `-32700`; the body cannot be delimited, so the input is
//!   discarded up to the next `Content-Length:` (ASCII case ignored), which
//!   starts the next frame;
//! - a body that is not UTF-8 JSON: `-32700`; JSON that is not a request,
//!   response or notification: `-32600` (with the message's `id` when it
//!   has a valid one).
//!
//! Only the end of the input (or a read error) ends the reader; the server
//! then ends as when the client closes the connection.
//!
//! The `lsp_frames` fuzz target (`fuzz/`) compiles this file as a module of
//! its own and uses the `pub(crate)` items, so it imports only external
//! crates.

use std::io::{self, BufRead, Write};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Connection, Message};
use serde_json::{Value, json};

/// The largest body a frame may have: 8 MiB. A policy is at most 1 MiB
/// (`splash_runtime::launch::MAX_POLICY_BYTES`), and a document of that
/// size fits in a `didOpen` or `didChange` even if every byte of it needed
/// a six-byte JSON escape.
pub const MAX_CONTENT_LENGTH: u64 = 8 * 1024 * 1024;
/// The longest header line, its CR LF included: 1 KiB.
pub const MAX_HEADER_LINE_BYTES: usize = 1024;
/// The most lines in one header block, the empty line that ends it
/// included.
pub const MAX_HEADER_LINES: usize = 16;

/// JSON-RPC `Parse error`.
const PARSE_ERROR: i32 = -32700;
/// JSON-RPC `Invalid Request`.
const INVALID_REQUEST: i32 = -32600;

/// The header that starts every frame the reader resynchronizes on.
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// Starts the reader and writer threads on standard input and output; the
/// connection is the server's end. Join the writer after the connection is
/// dropped, so that every response is written; the reader is not joined
/// (it may be blocked reading an input that stays open).
pub fn stdio() -> (Connection, JoinHandle<io::Result<()>>) {
    let (to_server, from_client) = crossbeam_channel::bounded::<Message>(0);
    let (to_client, from_server) = crossbeam_channel::bounded::<Message>(0);
    std::thread::spawn(move || {
        let stdin = io::stdin();
        read_messages(stdin.lock(), &to_server, |reply| {
            let mut out = io::stdout().lock();
            // A client that no longer reads is noticed by the writer.
            let _ = out.write_all(&reply).and_then(|()| out.flush());
        });
    });
    let writer = std::thread::spawn(move || write_messages(&from_server));
    (
        Connection {
            sender: to_client,
            receiver: from_client,
        },
        writer,
    )
}

fn write_messages(from_server: &Receiver<Message>) -> io::Result<()> {
    for message in from_server {
        message.write(&mut io::stdout().lock())?;
    }
    Ok(())
}

/// Reads frames from `input` until it ends (or the server stops taking
/// messages, or an `exit` notification was passed on), passing each message
/// to `to_server` and each error response to `reply`, framed.
fn read_messages(input: impl BufRead, to_server: &Sender<Message>, mut reply: impl FnMut(Vec<u8>)) {
    let mut frames = FrameReader::new(input);
    loop {
        let refusal = match frames.next_frame() {
            Frame::End(None) => return,
            Frame::End(Some(reason)) => {
                eprintln!("splashc lsp: {reason}");
                return;
            }
            Frame::Refused(reason) => (PARSE_ERROR, reason, Value::Null),
            Frame::Body(body) => match decode(&body) {
                Ok(message) => {
                    let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
                    if to_server.send(message).is_err() || exit {
                        return;
                    }
                    continue;
                }
                Err(refusal) => refusal,
            },
        };
        let (code, reason, id) = refusal;
        eprintln!("splashc lsp: refused a frame: {reason}");
        reply(error_frame(code, &reason, id));
    }
}

/// The message in `body`, or the error response's code, message and id.
pub(crate) fn decode(body: &[u8]) -> Result<Message, (i32, String, Value)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            PARSE_ERROR,
            format!("the body is not JSON: {e}"),
            Value::Null,
        )
    })?;
    if !value.is_object() {
        return Err((
            INVALID_REQUEST,
            "the body is not a JSON-RPC request, response or notification: not an object"
                .to_string(),
            Value::Null,
        ));
    }
    let id = value
        .get("id")
        .filter(|id| id.is_i64() || id.is_string())
        .cloned()
        .unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| {
        (
            INVALID_REQUEST,
            format!("the body is not a JSON-RPC request, response or notification: {e}"),
            id,
        )
    })
}

/// A framed JSON-RPC error response.
pub(crate) fn error_frame(code: i32, message: &str, id: Value) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    })
    .to_string();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body.as_bytes());
    frame
}

/// What [`FrameReader::next_frame`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole body.
    Body(Vec<u8>),
    /// A frame that cannot be used, and why. Its body, when its length is
    /// known, is discarded before the next frame is read; otherwise the
    /// input is resynchronized on the next `Content-Length:`.
    Refused(String),
    /// The end of the input: `None` at a frame boundary, or why it ended
    /// inside a frame (or could not be read).
    End(Option<String>),
}

/// One header line as read.
enum Line {
    /// The line without its LF, and whether a CR preceded the LF (removed).
    Complete { crlf: bool },
    /// [`MAX_HEADER_LINE_BYTES`] bytes without an LF.
    TooLong,
    /// The input ended; `true` when part of a line had been read.
    End(bool),
}

pub(crate) struct FrameReader<R> {
    input: R,
    /// The current header line (without its line end).
    line: Vec<u8>,
    /// Discard input up to the next `Content-Length:` before the next
    /// frame.
    resync: bool,
    /// The length of a refused frame's body, to discard before the next
    /// frame.
    skip_body: u64,
}

impl<R: BufRead> FrameReader<R> {
    pub(crate) fn new(input: R) -> Self {
        Self {
            input,
            line: Vec::with_capacity(MAX_HEADER_LINE_BYTES),
            resync: false,
            skip_body: 0,
        }
    }

    pub(crate) fn next_frame(&mut self) -> Frame {
        match self.frame() {
            Ok(frame) => frame,
            Err(e) => Frame::End(Some(format!("cannot read standard input: {e}"))),
        }
    }

    fn frame(&mut self) -> io::Result<Frame> {
        if self.skip_body > 0 {
            let length = std::mem::take(&mut self.skip_body);
            let skipped = self.skip(length)?;
            if skipped < length {
                return Ok(Frame::End(Some(format!(
                    "the input ended {skipped} bytes into a {length}-byte body"
                ))));
            }
        }
        self.line.clear();
        if self.resync {
            if !self.skip_to_content_length()? {
                return Ok(Frame::End(None));
            }
            self.resync = false;
            // The header name found is the start of the first line.
            self.line.extend_from_slice(b"Content-Length:");
        }
        let mut length: Option<Result<u64, String>> = None;
        let mut defect: Option<String> = None;
        let mut lines = 0;
        loop {
            lines += 1;
            let crlf = match self.read_line()? {
                Line::Complete { crlf } => crlf,
                Line::TooLong => {
                    self.resync = true;
                    return Ok(Frame::Refused(format!(
                        "a header line is longer than {MAX_HEADER_LINE_BYTES} bytes"
                    )));
                }
                Line::End(false) if lines == 1 => return Ok(Frame::End(None)),
                Line::End(_) => {
                    return Ok(Frame::End(Some(
                        "the input ended inside a frame's header".to_string(),
                    )));
                }
            };
            if lines > MAX_HEADER_LINES {
                self.resync = true;
                return Ok(Frame::Refused(format!(
                    "a frame's header has more than {MAX_HEADER_LINES} lines"
                )));
            }
            if !crlf {
                defect.get_or_insert_with(|| "a header line ends with LF, not CR LF".to_string());
            }
            if self.line.is_empty() {
                break;
            }
            match parse_header(&self.line) {
                Err(why) => {
                    defect.get_or_insert(why);
                }
                Ok(Header::ContentLength(value)) => {
                    if length.is_some() {
                        defect.get_or_insert_with(|| "`Content-Length` is given twice".to_string());
                        length = Some(Err("`Content-Length` is given twice".to_string()));
                    } else {
                        length = Some(value);
                    }
                }
                Ok(Header::Other) => {}
            }
            self.line.clear();
        }
        let length = match length {
            Some(Ok(n)) => n,
            Some(Err(why)) => {
                self.resync = true;
                return Ok(Frame::Refused(why));
            }
            None => {
                self.resync = true;
                return Ok(Frame::Refused(defect.unwrap_or_else(|| {
                    "the frame has no `Content-Length` header".into()
                })));
            }
        };
        let refusal = match defect {
            Some(why) => Some(why),
            None if length > MAX_CONTENT_LENGTH => Some(format!(
                "`Content-Length: {length}` is above the bound of {MAX_CONTENT_LENGTH} bytes"
            )),
            None => None,
        };
        if let Some(why) = refusal {
            // Answered first; the body is skipped before the next frame.
            self.skip_body = length;
            return Ok(Frame::Refused(format!(
                "{why}; its {length}-byte body is skipped"
            )));
        }
        let mut body = Vec::new();
        while (body.len() as u64) < length {
            if fill(&mut self.input)? == 0 {
                return Ok(Frame::End(Some(format!(
                    "the input ended {} bytes into a {length}-byte body",
                    body.len()
                ))));
            }
            let available = self.input.fill_buf()?;
            let want = usize::try_from(length - body.len() as u64).unwrap_or(usize::MAX);
            let take = available.len().min(want);
            body.extend_from_slice(&available[..take]);
            self.input.consume(take);
        }
        Ok(Frame::Body(body))
    }

    /// Appends one line to [`Self::line`], at most
    /// [`MAX_HEADER_LINE_BYTES`] bytes with its line end, and removes the
    /// line end.
    fn read_line(&mut self) -> io::Result<Line> {
        loop {
            let room = MAX_HEADER_LINE_BYTES - self.line.len();
            if fill(&mut self.input)? == 0 {
                return Ok(Line::End(!self.line.is_empty()));
            }
            let available = self.input.fill_buf()?;
            let window = &available[..available.len().min(room)];
            if let Some(i) = memchr(b'\n', window) {
                self.line.extend_from_slice(&window[..i]);
                self.input.consume(i + 1);
                let crlf = self.line.last() == Some(&b'\r');
                if crlf {
                    self.line.pop();
                }
                return Ok(Line::Complete { crlf });
            }
            let n = window.len();
            self.line.extend_from_slice(window);
            self.input.consume(n);
            if self.line.len() == MAX_HEADER_LINE_BYTES {
                return Ok(Line::TooLong);
            }
        }
    }

    /// Reads and discards `length` bytes; returns how many there were
    /// before the input ended.
    fn skip(&mut self, length: u64) -> io::Result<u64> {
        let mut skipped = 0;
        while skipped < length {
            let available = fill(&mut self.input)?;
            if available == 0 {
                break;
            }
            let take = usize::try_from(length - skipped)
                .unwrap_or(usize::MAX)
                .min(available);
            self.input.consume(take);
            skipped += take as u64;
        }
        Ok(skipped)
    }

    /// Discards input up to and including the next `Content-Length:`
    /// (ASCII case ignored); `false` when the input ended first.
    fn skip_to_content_length(&mut self) -> io::Result<bool> {
        // `c` occurs only at the start of the needle, so after a mismatch
        // the match can only restart at the mismatched byte.
        let mut matched = 0;
        loop {
            if fill(&mut self.input)? == 0 {
                return Ok(false);
            }
            let available = self.input.fill_buf()?;
            for (i, &b) in available.iter().enumerate() {
                let b = b.to_ascii_lowercase();
                if b == CONTENT_LENGTH[matched] {
                    matched += 1;
                } else {
                    matched = usize::from(b == CONTENT_LENGTH[0]);
                }
                if matched == CONTENT_LENGTH.len() {
                    self.input.consume(i + 1);
                    return Ok(true);
                }
            }
            let n = available.len();
            self.input.consume(n);
        }
    }
}

/// How many bytes `input` has buffered, reading more when it has none
/// (`fill_buf`, retried when interrupted); 0 at the end of the input. The
/// bytes are then `input.fill_buf()`, which does not read again.
fn fill<R: BufRead>(input: &mut R) -> io::Result<usize> {
    loop {
        match input.fill_buf() {
            Ok(buffered) => return Ok(buffered.len()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

enum Header {
    /// `Content-Length` with its value, or why the value is not usable.
    ContentLength(Result<u64, String>),
    /// Another header (`Content-Type` or one this server does not know).
    Other,
}

/// One `Name: value` header line (without its line end).
fn parse_header(line: &[u8]) -> Result<Header, String> {
    let shown = || format!("{:?}", String::from_utf8_lossy(line));
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return Err(format!("header line {} has no `:`", shown()));
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    if name.is_empty() || !name.iter().all(token) {
        return Err(format!("header line {} has no valid name", shown()));
    }
    if !name.eq_ignore_ascii_case(b"content-length") {
        return Ok(Header::Other);
    }
    let value = value.trim_ascii();
    let number = std::str::from_utf8(value)
        .ok()
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("`Content-Length` {} is not a decimal number", shown()))?;
    Ok(Header::ContentLength(number.parse::<u64>().map_err(|_| {
        format!("`Content-Length` {number} does not fit in 64 bits")
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = FrameReader::new(io::BufReader::with_capacity(7, input));
        let mut out = Vec::new();
        loop {
            let frame = reader.next_frame();
            let end = matches!(frame, Frame::End(_));
            out.push(frame);
            if end {
                return out;
            }
        }
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    fn body(text: &str) -> Frame {
        Frame::Body(text.as_bytes().to_vec())
    }

    fn refused(frame: &Frame, needle: &str) {
        match frame {
            Frame::Refused(why) => assert!(why.contains(needle), "{why:?} lacks {needle:?}"),
            other => panic!("expected a refusal with {needle:?}, got {other:?}"),
        }
    }

    #[test]
    fn valid_frames_are_read_whole_in_order() {
        let input = format!(
            "{}Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\n\r\n{{}}",
            frame("[1]")
        );
        assert_eq!(
            frames(input.as_bytes()),
            vec![body("[1]"), body("{}"), Frame::End(None)]
        );
    }

    #[test]
    fn a_frame_without_a_usable_length_is_refused_and_the_next_one_found() {
        for (header, why) in [
            ("Content-Type: x\r\n\r\n", "no `Content-Length`"),
            ("Content-Length: abc\r\n\r\n", "not a decimal number"),
            ("Content-Length: -1\r\n\r\n", "not a decimal number"),
            ("Content-Length: 99999999999999999999999\r\n\r\n", "64 bits"),
            ("Content-Length: 2\r\nContent-Length: 2\r\n\r\n", "twice"),
        ] {
            let input = format!("{header}{{\"lost\":true}}{}", frame("{}"));
            let got = frames(input.as_bytes());
            assert_eq!(got.len(), 3, "{header:?}: {got:?}");
            refused(&got[0], why);
            assert_eq!(got[1], body("{}"), "{header:?}");
            assert_eq!(got[2], Frame::End(None));
        }
    }

    #[test]
    fn a_defective_header_with_a_length_skips_exactly_its_body() {
        for (header, why) in [
            ("Content-Length: 4\n\n", "LF, not CR LF"),
            ("no colon here\r\nContent-Length: 4\r\n\r\n", "has no `:`"),
            (" bad: name\r\nContent-Length: 4\r\n\r\n", "no valid name"),
        ] {
            let input = format!("{header}junk{}", frame("{}"));
            let got = frames(input.as_bytes());
            refused(&got[0], why);
            refused(&got[0], "4-byte body is skipped");
            assert_eq!(&got[1..], &[body("{}"), Frame::End(None)], "{header:?}");
        }
    }

    #[test]
    fn an_oversized_length_is_skipped_without_being_allocated() {
        let over = MAX_CONTENT_LENGTH + 1;
        let mut input = format!("Content-Length: {over}\r\n\r\n").into_bytes();
        input.resize(input.len() + usize::try_from(over).expect("usize"), b'x');
        input.extend_from_slice(frame("{}").as_bytes());
        let got = frames(&input);
        refused(&got[0], "above the bound");
        assert_eq!(&got[1..], &[body("{}"), Frame::End(None)]);

        // A length the input never delivers: refused, then the end.
        let got = frames(b"Content-Length: 100000000000\r\n\r\nabc");
        refused(&got[0], "above the bound");
        match &got[1] {
            Frame::End(Some(why)) => assert!(why.contains("ended 3 bytes into"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn long_lines_and_long_headers_are_bounded() {
        let long = format!(
            "X-Long: {}\r\n\r\n{}",
            "a".repeat(4 * MAX_HEADER_LINE_BYTES),
            frame("{}")
        );
        let got = frames(long.as_bytes());
        refused(&got[0], "longer than");
        assert_eq!(&got[1..], &[body("{}"), Frame::End(None)]);

        let many = format!(
            "{}\r\n{}",
            "X-A: b\r\n".repeat(MAX_HEADER_LINES),
            frame("{}")
        );
        let got = frames(many.as_bytes());
        refused(&got[0], "more than");
        assert_eq!(&got[1..], &[body("{}"), Frame::End(None)]);

        // Exactly at the line bound is fine.
        let name = "X-Fill: ";
        let fill = "f".repeat(MAX_HEADER_LINE_BYTES - name.len() - 2);
        let at_bound = format!("{name}{fill}\r\n{}", frame("{}"));
        assert_eq!(frames(at_bound.as_bytes())[0], body("{}"));
    }

    #[test]
    fn the_input_ending_inside_a_frame_is_reported() {
        for (input, why) in [
            (&b"Content-Len"[..], "inside a frame's header"),
            (
                &b"Content-Length: 10\r\n\r\n{}"[..],
                "ended 2 bytes into a 10-byte body",
            ),
        ] {
            match &frames(input)[..] {
                [Frame::End(Some(got))] => assert!(got.contains(why), "{got}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(frames(b""), vec![Frame::End(None)]);
        // Nothing that looks like a frame: discarded to the end.
        let got = frames(b"garbage without any header\r\n\r\n");
        refused(&got[0], "has no `:`");
        assert_eq!(got[1], Frame::End(None));
    }

    #[test]
    fn bodies_are_decoded_or_answered_with_json_rpc_errors() {
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#),
            Ok(Message::Request(_))
        ));
        let (code, _, id) = decode(b"{not json").expect_err("bad JSON");
        assert_eq!((code, id), (PARSE_ERROR, Value::Null));
        let (code, _, _) = decode(b"\xff\xfe").expect_err("not UTF-8");
        assert_eq!(code, PARSE_ERROR);
        for not_a_message in [&br#"{"method":12}"#[..], b"[1]", b"7"] {
            let (code, _, id) = decode(not_a_message).expect_err("not a message");
            assert_eq!((code, id), (INVALID_REQUEST, Value::Null));
        }
        let reply = error_frame(PARSE_ERROR, "why", Value::Null);
        let text = String::from_utf8(reply).expect("UTF-8");
        let (header, body) = text.split_once("\r\n\r\n").expect("frame");
        assert_eq!(header, format!("Content-Length: {}", body.len()));
        let value: Value = serde_json::from_str(body).expect("JSON");
        assert_eq!(
            value,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "why"}})
        );
    }
}
