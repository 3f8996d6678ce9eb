//! A minimal HTTP/1.1 client for plain-HTTP origins, with strict bounds.
//!
//! One request per connection (`Connection: close`), no proxy (environment
//! variables are never read), no redirects (the caller decides), no
//! compression, no TLS. Every read and write runs against one deadline.
//! Response framing follows RFC 9112: a `Transfer-Encoding` other than
//! exactly `chunked`, both `Transfer-Encoding` and `Content-Length`, or
//! conflicting `Content-Length` values make the answer malformed.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use zeroize::Zeroize;

use crate::catalog::{Method, Origin};

/// The most one write hands a socket, so a deadline is rechecked between
/// writes (the broker's reply writer and the write to an origin).
pub(crate) const WRITE_CHUNK: usize = 16 * 1024;

/// The most bytes of status line and headers.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most response header lines.
pub const MAX_HEAD_LINES: usize = 100;

/// Why an exchange failed (host-side detail; workers see only `failed`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The name resolved to no address, or no address accepted.
    #[error("could not connect to the origin")]
    Connect(#[source] io::Error),
    /// The deadline passed.
    #[error("the exchange timed out")]
    Timeout,
    /// Reading or writing failed.
    #[error("i/o with the origin failed")]
    Io(#[source] io::Error),
    /// The answer is not valid HTTP/1.x.
    #[error("malformed answer: {0}")]
    Malformed(Malformation),
    /// The answer's head or body is over its bound.
    #[error("the answer is larger than allowed")]
    TooLarge,
}

/// How an origin's answer is not valid HTTP/1.x.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Malformation {
    /// A chunk ended before its size.
    #[error("a chunk ended early")]
    ChunkEndedEarly,
    /// A chunk without its CRLF.
    #[error("a chunk without its line end")]
    ChunkLineEnd,
    /// An obsolete folded header line.
    #[error("a folded header line")]
    FoldedHeader,
    /// A head line that is not UTF-8.
    #[error("a head line is not text")]
    HeadNotText,
    /// A header line without `:`.
    #[error("a header line without `:`")]
    HeaderWithoutColon,
    /// A status outside 200..=599 (informational or invalid).
    #[error("an informational or invalid status")]
    Status,
    /// A chunk size that is not at most 8 hex digits.
    #[error("an invalid chunk size")]
    ChunkSize,
    /// A `content-length` that is not a number of at most 19 digits, or
    /// several that differ.
    #[error("an invalid content-length")]
    ContentLength,
    /// A header name that is not a token.
    #[error("an invalid header name")]
    HeaderName,
    /// A transfer encoding other than one `chunked` (another coding, or
    /// more than one `transfer-encoding` header).
    #[error("an unsupported transfer encoding")]
    TransferEncoding,
    /// A first line that is not an HTTP/1.x status line.
    #[error("not an HTTP/1.x status line")]
    StatusLine,
    /// The connection ended inside the head.
    #[error("the answer ended inside its head")]
    HeadEndedEarly,
    /// The connection ended before the body's length.
    #[error("the body ended early")]
    BodyEndedEarly,
    /// A status code that is not a number.
    #[error("the status is not a number")]
    StatusNotANumber,
    /// A status code that is not three digits.
    #[error("the status is not three digits")]
    StatusDigits,
    /// Both `transfer-encoding` and `content-length`.
    #[error("both transfer-encoding and content-length")]
    LengthAndChunked,
}

/// An outgoing request.
#[derive(Debug)]
pub struct Outgoing<'a> {
    /// Where to.
    pub origin: &'a Origin,
    /// The method.
    pub method: Method,
    /// Origin-form target.
    pub path: &'a str,
    /// Extra headers (already validated), written in order.
    pub headers: Vec<(&'a str, &'a [u8])>,
    /// The body.
    pub body: &'a [u8],
}

/// An answer: status, every header (names lowercased), body.
#[derive(Debug)]
pub struct Incoming {
    /// The status code.
    pub status: u16,
    /// Header lines in order, names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Incoming {
    /// The single value of header `name`, or `None` when it is absent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn remaining(deadline: Instant) -> Result<Duration, HttpError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(HttpError::Timeout)
    } else {
        Ok(left)
    }
}

fn io_error(e: io::Error) -> HttpError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => HttpError::Timeout,
        _ => HttpError::Io(e),
    }
}

/// A stream whose every read and write is bounded by one deadline: a slow
/// peer cannot stretch the exchange by taking a byte at a time.
struct DeadlineStream {
    stream: TcpStream,
    deadline: Instant,
}

impl Write for DeadlineStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.stream.set_write_timeout(Some(left))?;
        // Small writes, so the deadline is checked again often (a socket
        // timeout restarts with every bit of progress).
        self.stream.write(&buf[..buf.len().min(WRITE_CHUNK)])
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

fn connect(origin: &Origin, deadline: Instant) -> Result<TcpStream, HttpError> {
    let addrs: Vec<SocketAddr> = (origin.connect_host(), origin.port())
        .to_socket_addrs()
        .map_err(HttpError::Connect)?
        .take(8)
        .collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in addrs {
        let left = remaining(deadline)?;
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(HttpError::Timeout),
            Err(e) => last = e,
        }
    }
    Err(HttpError::Connect(last))
}

/// Sends `request` and reads the answer, with a body of at most
/// `max_body` bytes, all before `deadline`.
pub fn exchange(
    request: &Outgoing<'_>,
    max_body: usize,
    deadline: Instant,
) -> Result<Incoming, HttpError> {
    let stream = connect(request.origin, deadline)?;
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(request.method.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(request.path.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    head.extend_from_slice(request.origin.authority().as_bytes());
    head.extend_from_slice(b"\r\nconnection: close\r\n");
    if !request.body.is_empty()
        || matches!(request.method, Method::Post | Method::Put | Method::Patch)
    {
        head.extend_from_slice(format!("content-length: {}\r\n", request.body.len()).as_bytes());
    }
    for (name, value) in &request.headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    remaining(deadline)?;
    let mut stream = DeadlineStream { stream, deadline };
    let written = stream
        .write_all(&head)
        .and_then(|()| stream.write_all(request.body))
        .and_then(|()| stream.flush());
    // The credential, if any, is in `head`: wipe it before anything else.
    head.zeroize();
    written.map_err(io_error)?;
    let mut reader = BufReader::new(stream);
    read_answer(&mut reader, request.method, max_body)
}

fn read_head_line(reader: &mut impl BufRead, budget: &mut usize) -> Result<String, HttpError> {
    let mut line = Vec::new();
    let limit = u64::try_from(*budget).unwrap_or(u64::MAX);
    reader
        .take(limit)
        .read_until(b'\n', &mut line)
        .map_err(io_error)?;
    if line.last() != Some(&b'\n') {
        return Err(if line.len() >= *budget {
            HttpError::TooLarge
        } else {
            HttpError::Malformed(Malformation::HeadEndedEarly)
        });
    }
    *budget -= line.len();
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| HttpError::Malformed(Malformation::HeadNotText))
}

/// Reads and parses one answer from `reader`.
pub fn read_answer(
    reader: &mut impl BufRead,
    method: Method,
    max_body: usize,
) -> Result<Incoming, HttpError> {
    let mut budget = MAX_HEAD_BYTES;
    let status_line = read_head_line(reader, &mut budget)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(HttpError::Malformed(Malformation::StatusLine));
    }
    let code = parts.next().unwrap_or_default();
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HttpError::Malformed(Malformation::StatusDigits));
    }
    let status: u16 = code
        .parse()
        .map_err(|_| HttpError::Malformed(Malformation::StatusNotANumber))?;
    if !(200..=599).contains(&status) {
        return Err(HttpError::Malformed(Malformation::Status));
    }
    let mut headers = Vec::new();
    loop {
        let line = read_head_line(reader, &mut budget)?;
        if line.is_empty() {
            break;
        }
        if headers.len() == MAX_HEAD_LINES {
            return Err(HttpError::TooLarge);
        }
        if line.starts_with([' ', '\t']) {
            return Err(HttpError::Malformed(Malformation::FoldedHeader));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or(HttpError::Malformed(Malformation::HeaderWithoutColon))?;
        let name = name.to_ascii_lowercase();
        if name.is_empty() || !name.bytes().all(crate::catalog::is_header_name_byte) {
            return Err(HttpError::Malformed(Malformation::HeaderName));
        }
        headers.push((name, value.trim_matches([' ', '\t']).to_owned()));
    }

    let mut answer = Incoming {
        status,
        headers,
        body: Vec::new(),
    };
    let no_body = method == Method::Head || status == 204 || status == 304;
    let encodings: Vec<&str> = answer
        .headers
        .iter()
        .filter(|(k, _)| k == "transfer-encoding")
        .map(|(_, v)| v.as_str())
        .collect();
    // Exactly one `chunked`, nothing else: a second header could be read
    // differently by another parser of the same bytes.
    let chunked = match encodings.as_slice() {
        [] => false,
        [v] if v.eq_ignore_ascii_case("chunked") => true,
        _ => return Err(HttpError::Malformed(Malformation::TransferEncoding)),
    };
    let lengths: Vec<&str> = answer
        .headers
        .iter()
        .filter(|(k, _)| k == "content-length")
        .map(|(_, v)| v.as_str())
        .collect();
    if chunked && !lengths.is_empty() {
        return Err(HttpError::Malformed(Malformation::LengthAndChunked));
    }
    let length = match lengths.split_first() {
        None => None,
        Some((first, rest)) => {
            if rest.iter().any(|v| v != first)
                || first.is_empty()
                || first.len() > 19
                || !first.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(HttpError::Malformed(Malformation::ContentLength));
            }
            Some(
                first
                    .parse::<u64>()
                    .map_err(|_| HttpError::Malformed(Malformation::ContentLength))?,
            )
        }
    };
    if no_body {
        return Ok(answer);
    }
    let body = if chunked {
        read_chunked(reader, max_body)?
    } else if let Some(length) = length {
        if length > max_body as u64 {
            return Err(HttpError::TooLarge);
        }
        let mut body = Vec::new();
        reader
            .take(length)
            .read_to_end(&mut body)
            .map_err(io_error)?;
        if (body.len() as u64) < length {
            return Err(HttpError::Malformed(Malformation::BodyEndedEarly));
        }
        body
    } else {
        let mut body = Vec::new();
        reader
            .take(max_body as u64 + 1)
            .read_to_end(&mut body)
            .map_err(io_error)?;
        if body.len() > max_body {
            return Err(HttpError::TooLarge);
        }
        body
    };
    answer.body = body;
    Ok(answer)
}

fn read_chunked(reader: &mut impl BufRead, max_body: usize) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    // Chunk-size lines and trailers share one budget.
    let mut budget = MAX_HEAD_BYTES;
    loop {
        let line = read_head_line(reader, &mut budget)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        if size.is_empty() || size.len() > 8 || !size.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(HttpError::Malformed(Malformation::ChunkSize));
        }
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| HttpError::Malformed(Malformation::ChunkSize))?;
        if size == 0 {
            break;
        }
        if body.len() + size > max_body {
            return Err(HttpError::TooLarge);
        }
        let before = body.len();
        reader
            .take(size as u64)
            .read_to_end(&mut body)
            .map_err(io_error)?;
        if body.len() - before < size {
            return Err(HttpError::Malformed(Malformation::ChunkEndedEarly));
        }
        if !read_head_line(reader, &mut budget)?.is_empty() {
            return Err(HttpError::Malformed(Malformation::ChunkLineEnd));
        }
    }
    loop {
        if read_head_line(reader, &mut budget)?.is_empty() {
            return Ok(body);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8], max: usize) -> Result<Incoming, HttpError> {
        read_answer(&mut BufReader::new(bytes), Method::Get, max)
    }

    #[test]
    fn content_length_chunked_and_close_delimited_bodies() {
        let a = parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello",
            10,
        )
        .expect("length");
        assert_eq!((a.status, a.body.as_slice()), (200, &b"hello"[..]));
        assert_eq!(a.header("x"), Some("y"));
        let a = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nhel\r\n2\r\nlo\r\n0\r\nT: 1\r\n\r\n",
            10,
        )
        .expect("chunked");
        assert_eq!(a.body, b"hello");
        let a = parse(b"HTTP/1.0 404 Not Found\r\n\r\ngone", 10).expect("close");
        assert_eq!((a.status, a.body.as_slice()), (404, &b"gone"[..]));
        let a = parse(b"HTTP/1.1 204 No Content\r\n\r\n", 10).expect("204");
        assert!(a.body.is_empty());
    }

    #[test]
    fn two_transfer_encoding_headers_are_refused() {
        let two = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            10,
        );
        assert!(
            matches!(
                two,
                Err(HttpError::Malformed(Malformation::TransferEncoding))
            ),
            "{two:?}"
        );
        // Control: the same answer with one header is read.
        let one = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            10,
        )
        .expect("one header");
        assert_eq!(one.body, b"hello");
    }

    #[test]
    fn bounds_and_malformed_answers_fail() {
        let too_large = |r: Result<Incoming, HttpError>| matches!(r, Err(HttpError::TooLarge));
        let malformed = |r: Result<Incoming, HttpError>| matches!(r, Err(HttpError::Malformed(_)));
        assert!(too_large(parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
            10
        )));
        assert!(too_large(parse(b"HTTP/1.1 200 OK\r\n\r\nhello world", 10)));
        assert!(too_large(parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nhello world\r\n0\r\n\r\n",
            10
        )));
        let mut long = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES));
        long.extend_from_slice(b"\r\n\r\n");
        assert!(too_large(parse(&long, 10)));
        assert!(malformed(parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi",
            10
        )));
        assert!(malformed(parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi",
            10
        )));
        assert!(malformed(parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nhi",
            10
        )));
        assert!(malformed(parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            10
        )));
        assert!(malformed(parse(b"HTTP/1.1 100 Continue\r\n\r\n", 10)));
        assert!(malformed(parse(b"SSH-2.0-x\r\n\r\n", 10)));
        assert!(malformed(parse(b"HTTP/1.1 200 OK\r\n folded\r\n\r\n", 10)));
        assert!(malformed(parse(b"HTTP/1.1 200 OK\r\nX-y", 10)));
    }
}
