//! The network broker's untrusted inputs: the request line a worker sends
//! (`splash_broker::wire`), the whole request path of a running
//! `HostBroker` over its socket, and the HTTP answer an origin sends
//! (`splash_broker::http::read_answer`).
//!
//! The first input byte picks the mode (its value modulo 4):
//!
//! 0. the rest is a request line: `read_line` with the broker's bound, then
//!    the `Request` decoder (and the `Reply` decoder a client uses);
//! 1. and 2. the rest up to and including its first newline is sent to a
//!    broker (1: an endpoint catalog, 2: an origin catalog with a
//!    credential and same-origin redirects) started once per process,
//!    whose entries point at an origin on 127.0.0.1 run by this target,
//!    which answers every request with the rest of the input;
//! 3. the rest, after one byte that picks the method and the body bound,
//!    is an HTTP answer for `read_answer`.
//!
//! Invariants, besides not panicking:
//! - a decoded request or reply encodes and decodes to itself;
//! - a broker answers every connection with one reply line holding exactly
//!   one of a response and an error; a line that is not a request, or a
//!   request for an id outside the catalog, is `denied`; a response carries
//!   a final status and only the headers a worker may see, within bounds;
//! - an accepted answer has a final status (200..=599), lowercase token
//!   header names with trimmed values, at most `MAX_HEAD_LINES` headers and
//!   a body within the bound, empty for `HEAD`, 204 and 304.

#![no_main]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use splash_broker::catalog::{MAX_BODY_BYTES, WORKER_RESPONSE_HEADERS};
use splash_broker::http::{self, MAX_HEAD_LINES};
use splash_broker::wire::{self, MAX_HEADER_VALUE_BYTES, MAX_HEADERS, MAX_REQUEST_LINE_BYTES};
use splash_broker::{
    Catalog, CatalogKind, Credential, Entry, Failure, HostBroker, Limits, Method, Redirects, Reply,
    Request,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => request_line(rest),
        1 | 2 => {
            let split = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1);
            let (request, answer) = rest.split_at(split);
            request_line(request);
            brokered(&brokers()[usize::from(mode % 4 - 1)], request, answer);
        }
        _ => {
            if let Some((&pick, answer)) = rest.split_first() {
                http_answer(pick, answer);
            }
        }
    }
});

/// What the broker does first with a connection: one bounded line, then
/// the request decoder.
fn request_line(bytes: &[u8]) {
    let Ok(line) = wire::read_line(&mut BufReader::new(bytes), MAX_REQUEST_LINE_BYTES) else {
        return;
    };
    if let Ok(request) = serde_json::from_slice::<Request>(&line) {
        let encoded = serde_json::to_vec(&request).expect("a request encodes");
        let back: Request = serde_json::from_slice(&encoded).expect("an encoded request decodes");
        assert_eq!(back, request, "a request does not round-trip");
    }
    if let Ok(reply) = serde_json::from_slice::<Reply>(&line) {
        let encoded = serde_json::to_vec(&reply).expect("a reply encodes");
        let back: Reply = serde_json::from_slice(&encoded).expect("an encoded reply decodes");
        assert_eq!(back, reply, "a reply does not round-trip");
    }
}

fn http_answer(pick: u8, answer: &[u8]) {
    const METHODS: [Method; 6] = [
        Method::Get,
        Method::Head,
        Method::Post,
        Method::Put,
        Method::Patch,
        Method::Delete,
    ];
    let method = METHODS[usize::from(pick % 6)];
    let max_body = [0, 16, 4096, MAX_BODY_BYTES][usize::from(pick / 6 % 4)];
    let Ok(a) = http::read_answer(&mut BufReader::new(answer), method, max_body) else {
        return;
    };
    assert!((200..=599).contains(&a.status), "status {}", a.status);
    assert!(
        a.headers.len() <= MAX_HEAD_LINES,
        "{} headers",
        a.headers.len()
    );
    for (name, value) in &a.headers {
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && !b.is_ascii_uppercase() && b != b':'),
            "header name {name:?}"
        );
        assert_eq!(value.trim_matches([' ', '\t']), value, "untrimmed value");
    }
    assert!(a.body.len() <= max_body, "a {}-byte body", a.body.len());
    if method == Method::Head || a.status == 204 || a.status == 304 {
        assert!(a.body.is_empty(), "a body where there is none");
    }
}

/// A broker and the ids of its catalog.
struct Brokered {
    broker: HostBroker,
    ids: Vec<&'static str>,
}

/// The origin's next answer, shared with its thread.
fn answer() -> &'static Mutex<Vec<u8>> {
    static ANSWER: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();
    ANSWER.get_or_init(|| Mutex::new(Vec::new()))
}

/// The two brokers, started on first use with an origin thread on
/// 127.0.0.1, in a private parent directory of this process.
fn brokers() -> &'static [Brokered; 2] {
    static BROKERS: OnceLock<[Brokered; 2]> = OnceLock::new();
    BROKERS.get_or_init(|| {
        let port = start_origin();
        let parent = private_parent();
        let origin = format!("http://127.0.0.1:{port}");
        let limits = Limits {
            max_request_bytes: 4096,
            max_response_bytes: 4096,
            timeout: Duration::from_secs(2),
        };
        let endpoints = Catalog::new(CatalogKind::Endpoint)
            .with(
                Entry::endpoint("api.status", Method::Get, &format!("{origin}/status"))
                    .and_then(|e| e.with_limits(limits))
                    .expect("entry"),
            )
            .and_then(|c| {
                c.with(
                    Entry::endpoint("api.submit", Method::Post, &format!("{origin}/submit?x=1"))
                        .and_then(|e| e.with_limits(limits))
                        .expect("entry"),
                )
            })
            .expect("endpoint catalog");
        let credential = Credential::bearer("fuzz-token").expect("credential");
        let origins = Catalog::new(CatalogKind::Origin)
            .with(
                Entry::origin(
                    "api.origin",
                    &origin,
                    &[Method::Get, Method::Head, Method::Post, Method::Delete],
                )
                .and_then(|e| e.with_limits(limits))
                .and_then(|e| e.with_redirects(Redirects::SameOrigin { max_hops: 2 }))
                .map(|e| e.with_credential(credential))
                .expect("entry"),
            )
            .expect("origin catalog");
        [
            Brokered {
                broker: HostBroker::start(&parent, endpoints).expect("endpoint broker"),
                ids: vec!["api.status", "api.submit"],
            },
            Brokered {
                broker: HostBroker::start(&parent, origins).expect("origin broker"),
                ids: vec!["api.origin"],
            },
        ]
    })
}

/// A 0700 directory for this process's brokers; those of processes that
/// are gone are removed first.
fn private_parent() -> PathBuf {
    let tmp = std::env::temp_dir();
    let prefix = "splash-fuzz-broker-";
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
                continue;
            };
            if !PathBuf::from(format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = tmp.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    dir
}

/// Serves the current answer to every connection: reads the request head
/// and its body, writes the answer, closes.
fn start_origin() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the origin");
    let port = listener.local_addr().expect("origin address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            serve_origin(stream);
        }
    });
    port
}

fn serve_origin(stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut reader = BufReader::new(&stream);
    let mut length = 0usize;
    loop {
        let mut line = Vec::new();
        match (&mut reader).take(8192).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line == b"\r\n" {
            break;
        }
        let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
        if let Some(v) = text.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let bytes = answer().lock().map(|a| a.clone()).unwrap_or_default();
    let mut writer = &stream;
    let _ = writer.write_all(&bytes);
    let _ = stream.shutdown(Shutdown::Both);
}

fn brokered(target: &Brokered, request: &[u8], origin_answer: &[u8]) {
    if let Ok(mut a) = answer().lock() {
        a.clear();
        a.extend_from_slice(origin_answer);
    }
    let stream = UnixStream::connect(target.broker.socket_path()).expect("connect to the broker");
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut writer = &stream;
    // The broker may answer (and close) before reading everything.
    let _ = writer.write_all(request);
    let _ = stream.shutdown(Shutdown::Write);
    let mut reply = Vec::new();
    (&stream)
        .read_to_end(&mut reply)
        .expect("the broker's reply is read");
    assert_eq!(reply.last(), Some(&b'\n'), "a reply is one line");
    let reply: Reply =
        serde_json::from_slice(&reply[..reply.len() - 1]).expect("the reply decodes");
    assert_eq!(reply.version, 1);
    assert!(
        reply.response.is_some() != reply.error.is_some(),
        "a reply holds exactly one of a response and an error"
    );
    let line = request.strip_suffix(b"\n");
    let decoded = line.and_then(|l| serde_json::from_slice::<Request>(l).ok());
    let known = decoded
        .as_ref()
        .is_some_and(|r| target.ids.contains(&r.id.as_str()));
    if !known {
        assert_eq!(
            reply.error,
            Some(Failure::Denied),
            "an unknown request was not denied"
        );
    }
    if let Some(response) = &reply.response {
        assert!((200..=599).contains(&response.status));
        assert!(response.headers.0.len() <= MAX_HEADERS);
        for (name, value) in &response.headers.0 {
            assert!(
                WORKER_RESPONSE_HEADERS.contains(&name.as_str()),
                "header {name}"
            );
            assert!(value.len() <= MAX_HEADER_VALUE_BYTES);
        }
        assert!(response.body.len() <= 4096, "a body over the entry's bound");
    }
}
