//! The broker's wire format: one JSON object per line, one request and one
//! reply per connection.
//!
//! Request (worker → broker):
//!
//! ```json
//! {"version":1,"id":"api.status","method":"GET","path":"/status","headers":{"accept":"application/json"},"body":""}
//! ```
//!
//! Reply (broker → worker), either a response or a generic error:
//!
//! ```json
//! {"version":1,"response":{"status":200,"headers":{"content-type":"application/json"},"body":"{}"}}
//! {"version":1,"error":"denied"}
//! ```
//!
//! Unknown fields and repeated header names are refused. Bodies are UTF-8
//! text.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, Read, Write};

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use splash_protocol::Token;

use crate::catalog::{MAX_BODY_BYTES, MAX_PATH_BYTES, Method};

/// The version both ends write and accept.
pub const WIRE_VERSION: u8 = 1;
/// The socket's file name inside the private directory.
pub const SOCKET_NAME: &str = "broker.sock";
/// The most headers in a request or a reply.
pub const MAX_HEADERS: usize = 16;
/// The longest header value in a request or a reply.
pub const MAX_HEADER_VALUE_BYTES: usize = 1024;
/// The longest request line the broker reads (excluding the newline): a
/// body at the ceiling, escaped, plus the envelope. A longer line is refused
/// without being buffered.
pub const MAX_REQUEST_LINE_BYTES: usize = 6 * MAX_BODY_BYTES + 64 * 1024;
/// The longest reply line a client reads.
pub const MAX_REPLY_LINE_BYTES: usize = 6 * MAX_BODY_BYTES + 64 * 1024;

/// Header names (lowercase) to values, at most [`MAX_HEADERS`]; a repeated
/// name is refused when decoding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Headers(pub BTreeMap<String, String>);

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of header names to string values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    if out.len() == MAX_HEADERS {
                        return Err(serde::de::Error::custom("too many headers"));
                    }
                    if out.insert(k, v).is_some() {
                        return Err(serde::de::Error::custom("repeated header name"));
                    }
                }
                Ok(Headers(out))
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// One HTTP request, as a worker asks for it. The destination is only the
/// catalog id: the worker never names a host, port or scheme.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    version: u8,
    /// The catalog id (a `network_origin` id of the worker's grant).
    pub id: Token,
    /// The method.
    pub method: Method,
    /// The origin-form request target (`/path?query`).
    pub path: String,
    /// Request headers; only the names in
    /// [`crate::catalog::WORKER_REQUEST_HEADERS`] are accepted.
    #[serde(default)]
    pub headers: Headers,
    /// The body (UTF-8).
    #[serde(default)]
    pub body: String,
}

impl Request {
    /// A request without headers or body.
    pub fn new(id: Token, method: Method, path: impl Into<String>) -> Self {
        Self {
            version: WIRE_VERSION,
            id,
            method,
            path: path.into(),
            headers: Headers::default(),
            body: String::new(),
        }
    }

    /// Adds a header (the name is lowercased).
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers
            .0
            .insert(name.to_ascii_lowercase(), value.into());
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }

    /// The version the request was written with.
    pub fn version(&self) -> u8 {
        self.version
    }
}

/// The origin's answer, as the worker receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The headers in [`crate::catalog::WORKER_RESPONSE_HEADERS`] that the
    /// origin sent.
    pub headers: Headers,
    /// The body (UTF-8).
    pub body: String,
}

/// The only two errors a worker ever sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The request is not one the catalog allows (unknown id, method, path,
    /// header, size, or a malformed request).
    Denied,
    /// The request was allowed but did not produce a response the broker
    /// may return (connection, timeout, malformed or oversized answer,
    /// refused redirect).
    Failed,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Denied => "denied",
            Self::Failed => "failed",
        })
    }
}

/// A reply line: exactly one of `response` and `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// [`WIRE_VERSION`].
    pub version: u8,
    /// The response, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Response>,
    /// The generic error, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
}

impl Reply {
    pub(crate) fn ok(response: Response) -> Self {
        Self {
            version: WIRE_VERSION,
            response: Some(response),
            error: None,
        }
    }

    pub(crate) fn error(failure: Failure) -> Self {
        Self {
            version: WIRE_VERSION,
            response: None,
            error: Some(failure),
        }
    }
}

/// Reads one line of at most `max` bytes (the newline excluded) and never
/// buffers more than `max + 1` bytes of it. End of input before a newline
/// is an error.
pub fn read_line(reader: &mut impl BufRead, max: usize) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(limit).read_until(b'\n', &mut line)?;
    match line.pop() {
        Some(b'\n') => Ok(line),
        _ if line.len() >= max => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the line is too long",
        )),
        _ => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the input ended before the newline",
        )),
    }
}

/// Writes `value` as one compact JSON line and flushes.
pub fn write_line<T: Serialize>(writer: &mut impl Write, value: &T) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    writer.write_all(&bytes)?;
    writer.flush()
}

/// Checks a request's shape that does not depend on the catalog: version,
/// path, headers. Returns `false` for anything the broker must deny.
pub(crate) fn well_formed(request: &Request) -> bool {
    request.version == WIRE_VERSION
        && request.path.len() <= MAX_PATH_BYTES
        && crate::catalog::check_path(&request.path).is_ok()
        && request.headers.0.iter().all(|(k, v)| {
            crate::catalog::WORKER_REQUEST_HEADERS.contains(&k.as_str())
                && v.len() <= MAX_HEADER_VALUE_BYTES
                && (v.is_empty() || crate::catalog::is_header_value(v.as_bytes()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_refuse_unknown_fields() {
        let r = Request::new(Token::new("api.a").expect("token"), Method::Post, "/x")
            .header("Accept", "text/plain")
            .body("hi");
        let line = serde_json::to_string(&r).expect("encode");
        assert_eq!(
            line,
            r#"{"version":1,"id":"api.a","method":"POST","path":"/x","headers":{"accept":"text/plain"},"body":"hi"}"#
        );
        assert_eq!(serde_json::from_str::<Request>(&line).expect("decode"), r);
        assert!(
            serde_json::from_str::<Request>(
                r#"{"version":1,"id":"a","method":"GET","path":"/","url":"http://x"}"#
            )
            .is_err()
        );
        assert!(
            serde_json::from_str::<Request>(
                r#"{"version":1,"id":"a","method":"CONNECT","path":"/"}"#
            )
            .is_err()
        );
        assert!(
            serde_json::from_str::<Request>(
                r#"{"version":1,"id":"a","method":"GET","path":"/","headers":{"accept":"a","accept":"b"}}"#
            )
            .is_err()
        );
    }

    #[test]
    fn shape_checks_refuse_foreign_headers_and_paths() {
        let base = || Request::new(Token::new("a").expect("token"), Method::Get, "/ok");
        assert!(well_formed(&base()));
        assert!(!well_formed(&base().header("host", "evil")));
        assert!(!well_formed(&base().header("authorization", "x")));
        assert!(!well_formed(&base().header("accept", "a\r\nx: y")));
        let mut r = base();
        r.path = "http://127.0.0.1:1/".into();
        assert!(!well_formed(&r));
        r.path = "//evil/".into();
        assert!(!well_formed(&r));
        r = base();
        r.version = 2;
        assert!(!well_formed(&r));
    }

    #[test]
    fn replies_carry_one_of_response_or_error() {
        let line = serde_json::to_string(&Reply::error(Failure::Denied)).expect("encode");
        assert_eq!(line, r#"{"version":1,"error":"denied"}"#);
    }

    #[test]
    fn lines_are_bounded() {
        let mut ok = io::BufReader::new(&b"abc\n"[..]);
        assert_eq!(read_line(&mut ok, 3).expect("fits"), b"abc");
        let mut long = io::BufReader::new(&b"abcd\n"[..]);
        assert_eq!(
            read_line(&mut long, 3).expect_err("too long").kind(),
            io::ErrorKind::InvalidData
        );
        let mut cut = io::BufReader::new(&b"ab"[..]);
        assert_eq!(
            read_line(&mut cut, 3).expect_err("cut").kind(),
            io::ErrorKind::UnexpectedEof
        );
    }
}
