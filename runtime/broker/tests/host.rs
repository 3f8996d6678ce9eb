//! The broker on the host, without a sandbox: directory and socket shape,
//! parent checks, cleanup, and every catalog decision against a local HTTP
//! origin on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use splash_broker::{
    BrokerClient, BrokerError, Catalog, CatalogKind, ClientError, Credential, Entry, HostBroker,
    Limits, Method, Redirects, Request,
};
use splash_protocol::{Grant, GrantFormat, Resource, ResourceKind, Token};

/// One request as the origin received it.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Vec<u8>,
}

/// A tiny HTTP origin on 127.0.0.1: answers at most `max` connections,
/// each with `respond(path)`, and stops after `life`.
struct TestOrigin {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    done: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestOrigin {
    fn start(max: usize, respond: fn(&str, u16) -> Vec<u8>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind origin");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(20);
            let mut served = 0;
            while served < max
                && Instant::now() < end
                && !stop.load(std::sync::atomic::Ordering::Relaxed)
            {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                served += 1;
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(&stream);
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length.min(1 << 20)];
                let _ = reader.read_exact(&mut body);
                let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                log.lock().expect("log").push(Seen { head, body });
                let mut out = &stream;
                let _ = out.write_all(&respond(&path, port));
            }
        });
        Self {
            port,
            seen,
            done,
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }

    /// Wakes a waiting accept loop and joins it.
    fn stop(mut self) -> Vec<Seen> {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = self.seen();
        if let Some(t) = self.thread.take() {
            t.join().expect("origin thread");
        }
        seen
    }
}

fn ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nset-cookie: s=1\r\nx-internal: 1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn routes(path: &str, port: u16) -> Vec<u8> {
    match path {
        "/hello" => ok("hello"),
        "/big" => ok(&"x".repeat(4096)),
        "/same" => b"HTTP/1.1 302 Found\r\nlocation: /hello\r\ncontent-length: 0\r\n\r\n".to_vec(),
        "/same-abs" => format!(
            "HTTP/1.1 301 Moved\r\nlocation: http://127.0.0.1:{port}/hello\r\ncontent-length: 0\r\n\r\n"
        )
        .into_bytes(),
        "/off" => format!(
            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{}/hello\r\ncontent-length: 0\r\n\r\n",
            port.wrapping_add(1)
        )
        .into_bytes(),
        "/slow" => {
            std::thread::sleep(Duration::from_millis(600));
            ok("late")
        }
        "/binary" => b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n\xff\xfe".to_vec(),
        _ => b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_vec(),
    }
}

/// A private parent directory (0700) under the temp dir.
struct Parent(tempfile::TempDir);

impl Parent {
    fn new(tag: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(&format!("splash-broker-{tag}-"))
            .tempdir()
            .expect("parent");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .expect("chmod");
        Self(dir)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn entries(&self) -> usize {
        std::fs::read_dir(self.path()).expect("list").count()
    }
}

fn token(s: &str) -> Token {
    Token::new(s).expect("token")
}

fn grant(ids: &[&str]) -> Grant {
    let mut g = Grant::new(token("net.fetch"), GrantFormat::Json);
    for id in ids {
        g.resources
            .insert(Resource::new(ResourceKind::NetworkOrigin, token(id)));
    }
    g
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn endpoint_catalog(origin: &TestOrigin) -> Catalog {
    let small = Limits {
        max_request_bytes: 64,
        max_response_bytes: 1024,
        timeout: Duration::from_millis(300),
    };
    Catalog::new(CatalogKind::Endpoint)
        .with(
            Entry::endpoint("api.hello", Method::Get, &origin.url("/hello"))
                .expect("hello")
                .with_credential(Credential::header("x-api-key", "host-secret-1").expect("cred")),
        )
        .and_then(|c| {
            c.with(
                Entry::endpoint("api.post", Method::Post, &origin.url("/hello"))
                    .expect("post")
                    .with_limits(small)
                    .expect("limits"),
            )
        })
        .and_then(|c| {
            c.with(
                Entry::endpoint("api.big", Method::Get, &origin.url("/big"))
                    .expect("big")
                    .with_limits(small)
                    .expect("limits"),
            )
        })
        .and_then(|c| {
            c.with(Entry::endpoint("api.same", Method::Get, &origin.url("/same")).expect("same"))
        })
        .and_then(|c| {
            c.with(
                Entry::endpoint("api.follow", Method::Get, &origin.url("/same-abs"))
                    .expect("follow")
                    .with_redirects(Redirects::SameOrigin { max_hops: 1 })
                    .expect("redirects"),
            )
        })
        .and_then(|c| {
            c.with(
                Entry::endpoint("api.off", Method::Get, &origin.url("/off"))
                    .expect("off")
                    .with_redirects(Redirects::SameOrigin { max_hops: 3 })
                    .expect("redirects"),
            )
        })
        .and_then(|c| {
            c.with(
                Entry::endpoint("api.slow", Method::Get, &origin.url("/slow"))
                    .expect("slow")
                    .with_limits(small)
                    .expect("limits"),
            )
        })
        .and_then(|c| {
            c.with(Entry::endpoint("api.binary", Method::Get, &origin.url("/binary")).expect("bin"))
        })
        .expect("catalog")
}

const ALL: &[&str] = &[
    "api.hello",
    "api.post",
    "api.big",
    "api.same",
    "api.follow",
    "api.off",
    "api.slow",
    "api.binary",
];

#[test]
fn the_private_directory_has_its_shape_and_is_removed() {
    let _g = serial();
    let fds = open_fds();
    let parent = Parent::new("shape");
    let catalog = Catalog::new(CatalogKind::Origin)
        .with(Entry::origin("api.o", "http://127.0.0.1:9", &[Method::Get]).expect("entry"))
        .expect("catalog");
    let broker = HostBroker::start(parent.path(), catalog).expect("start");
    let dir = broker.directory_path().to_path_buf();
    let name = dir.file_name().and_then(|n| n.to_str()).expect("name");
    let hex = name.strip_prefix(".splash-broker-").expect("prefix");
    assert_eq!(hex.len(), 32);
    assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    let meta = std::fs::symlink_metadata(&dir).expect("dir");
    assert_eq!(meta.mode() & 0o7777, 0o700);
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(entries, ["broker.sock"]);
    let sock = std::fs::symlink_metadata(broker.socket_path()).expect("socket");
    assert_eq!(sock.mode() & 0o170000, 0o140000, "a socket");
    assert_eq!(sock.mode() & 0o7777, 0o600);
    let mount = broker.mount().expect("mount");
    mount.verify().expect("verified shape");
    assert_eq!(mount.kind(), CatalogKind::Origin);
    assert_eq!(mount.ids().len(), 1);

    // A second entry breaks the shape.
    std::fs::write(dir.join("extra"), b"x").expect("extra file");
    assert!(matches!(mount.verify(), Err(BrokerError::Shape { .. })));
    std::fs::remove_file(dir.join("extra")).expect("remove extra");
    mount.verify().expect("shape again");
    drop(mount);

    broker.shutdown().expect("shutdown");
    assert!(!dir.exists(), "the directory is removed");
    assert_eq!(parent.entries(), 0);
    assert_eq!(open_fds(), fds, "no descriptor is left open");

    // Drop cleans up too.
    let catalog = Catalog::new(CatalogKind::Origin)
        .with(Entry::origin("api.o", "http://127.0.0.1:9", &[Method::Get]).expect("entry"))
        .expect("catalog");
    let broker = HostBroker::start(parent.path(), catalog).expect("start");
    let dir = broker.directory_path().to_path_buf();
    drop(broker);
    assert!(!dir.exists());
    assert_eq!(open_fds(), fds);
}

#[test]
fn unsafe_parents_are_refused() {
    let _g = serial();
    let catalog = || {
        Catalog::new(CatalogKind::Origin)
            .with(Entry::origin("api.o", "http://127.0.0.1:9", &[Method::Get]).expect("entry"))
            .expect("catalog")
    };
    for mode in [0o777, 0o770, 0o702, 0o1777] {
        let parent = Parent::new("mode");
        std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
        let err = HostBroker::start(parent.path(), catalog()).expect_err("writable parent");
        assert!(
            matches!(err, BrokerError::UnsafeParent { .. }),
            "{mode:o}: {err}"
        );
        assert_eq!(parent.entries(), 0);
    }
    let parent = Parent::new("file");
    let file = parent.path().join("f");
    std::fs::write(&file, b"").expect("file");
    assert!(matches!(
        HostBroker::start(&file, catalog()),
        Err(BrokerError::Parent { .. })
    ));
    assert!(matches!(
        HostBroker::start(parent.path().join("missing"), catalog()),
        Err(BrokerError::Parent { .. })
    ));
    assert!(matches!(
        HostBroker::start(parent.path(), Catalog::new(CatalogKind::Origin)),
        Err(BrokerError::EmptyCatalog)
    ));
    // A parent owned by another user: as root, a private directory handed
    // to uid 65534; otherwise a root-owned directory that is not group- or
    // world-writable, so ownership is the only thing wrong with it.
    let owned_by_other = Parent::new("owner");
    let other: PathBuf = if std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0) {
        std::os::unix::fs::chown(owned_by_other.path(), Some(65534), None).expect("chown");
        owned_by_other.path().to_path_buf()
    } else {
        PathBuf::from("/")
    };
    let meta = std::fs::metadata(&other).expect("other parent");
    assert_eq!(meta.mode() & 0o022, 0, "{}", other.display());
    let err = HostBroker::start(&other, catalog()).expect_err("foreign parent");
    assert!(matches!(err, BrokerError::UnsafeParent { .. }), "{err}");
    assert_eq!(owned_by_other.entries(), 0);
}

#[test]
fn the_catalog_decides_every_request() {
    let _g = serial();
    let origin = TestOrigin::start(64, routes);
    let parent = Parent::new("catalog");
    let broker = HostBroker::start(parent.path(), endpoint_catalog(&origin)).expect("start");
    let client = BrokerClient::new(broker.socket_path()).expect("client");
    let all = grant(ALL);
    let req = |id: &str, method, path: &str| Request::new(token(id), method, path);

    // Allowed: the credential reaches the origin, never the worker.
    let r = client
        .request(
            &all,
            &req("api.hello", Method::Get, "/hello").header("accept", "text/plain"),
        )
        .expect("allowed request");
    assert_eq!((r.status, r.body.as_str()), (200, "hello"));
    assert_eq!(
        r.headers.0.keys().collect::<Vec<_>>(),
        ["content-type"],
        "only listed response headers"
    );
    let seen = origin.seen();
    let head = &seen.last().expect("one request").head;
    assert!(head.starts_with("GET /hello HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("x-api-key: host-secret-1\r\n"));
    assert!(head.contains("accept: text/plain\r\n"));
    assert!(!format!("{r:?}").contains("host-secret"));

    // A POST body within its bound.
    let r = client
        .request(
            &all,
            &req("api.post", Method::Post, "/hello").body("{\"a\":1}"),
        )
        .expect("post");
    assert_eq!(r.status, 200);
    assert_eq!(origin.seen().last().expect("post").body, b"{\"a\":1}");

    let before = origin.seen().len();
    // Denied: every decision the catalog makes, each without reaching the
    // origin.
    let denied = [
        req("api.hello", Method::Post, "/hello"),
        req("api.hello", Method::Get, "/other"),
        req("api.hello", Method::Get, "/hello").header("x-api-key", "forged"),
        req("api.hello", Method::Get, "/hello").header("host", "elsewhere"),
        req("api.hello", Method::Get, "/hello").body("x"),
        req("api.post", Method::Post, "/hello").body("y".repeat(65)),
        req("api.nope", Method::Get, "/hello"),
    ];
    let mut denied_grant = all.clone();
    denied_grant.resources.insert(Resource::new(
        ResourceKind::NetworkOrigin,
        token("api.nope"),
    ));
    for r in &denied {
        assert_eq!(
            client.request(&denied_grant, r),
            Err(ClientError::Denied),
            "{r:?}"
        );
    }
    assert_eq!(
        origin.seen().len(),
        before,
        "no denied request reached the origin"
    );

    // Failed: oversized, slow, non-text answers and refused redirects.
    for id in ["api.big", "api.slow", "api.binary", "api.same", "api.off"] {
        let path = match id {
            "api.big" => "/big",
            "api.slow" => "/slow",
            "api.binary" => "/binary",
            "api.same" => "/same",
            _ => "/off",
        };
        assert_eq!(
            client.request(&all, &req(id, Method::Get, path)),
            Err(ClientError::Failed),
            "{id}"
        );
    }
    // The off-origin redirect target was never contacted: the only
    // requests for `/hello` since are none.
    assert!(
        origin.seen()[before..]
            .iter()
            .all(|s| !s.head.starts_with("GET /hello ")),
        "a refused redirect was followed"
    );

    // A same-origin redirect is followed when the entry allows it.
    let r = client
        .request(&all, &req("api.follow", Method::Get, "/same-abs"))
        .expect("followed");
    assert_eq!((r.status, r.body.as_str()), (200, "hello"));

    // The grant is checked before connecting.
    let connections = broker.stats().connections;
    assert_eq!(
        client.request(
            &grant(&["api.post"]),
            &req("api.hello", Method::Get, "/hello")
        ),
        Err(ClientError::NotGranted)
    );
    assert_eq!(broker.stats().connections, connections);

    // A hostile worker that skips the client gets the same generic answers.
    for raw in [
        "garbage\n".to_owned(),
        "{\"version\":1,\"id\":\"api.hello\",\"method\":\"GET\",\"path\":\"/hello\",\"url\":\"http://127.0.0.1:1/\"}\n".into(),
        "{\"version\":1,\"id\":\"api.hello\",\"method\":\"GET\",\"path\":\"http://127.0.0.1:1/\"}\n".into(),
        format!("{}\n", "x".repeat(7 << 20)),
    ] {
        let mut s = UnixStream::connect(broker.socket_path()).expect("connect");
        let _ = s.write_all(raw.as_bytes());
        let mut reply = String::new();
        BufReader::new(&s).read_line(&mut reply).expect("reply");
        assert_eq!(reply, "{\"version\":1,\"error\":\"denied\"}\n");
    }
    let stats = broker.stats();
    assert!(
        stats.served >= 3 && stats.denied >= 11 && stats.failed >= 5,
        "{stats:?}"
    );
    broker.shutdown().expect("shutdown");
    origin.stop();
}

#[test]
fn origin_catalogs_let_the_worker_choose_the_path_only() {
    let _g = serial();
    let origin = TestOrigin::start(8, routes);
    let parent = Parent::new("origin");
    let catalog = Catalog::new(CatalogKind::Origin)
        .with(
            Entry::origin("api.site", &origin.url(""), &[Method::Get, Method::Head])
                .expect("origin entry"),
        )
        .expect("catalog");
    let broker = HostBroker::start(parent.path(), catalog).expect("start");
    let client = BrokerClient::new(broker.socket_path()).expect("client");
    let g = grant(&["api.site"]);
    let r = client
        .request(&g, &Request::new(token("api.site"), Method::Get, "/hello"))
        .expect("get");
    assert_eq!(r.body, "hello");
    let r = client
        .request(
            &g,
            &Request::new(token("api.site"), Method::Get, "/missing"),
        )
        .expect("404 is a response");
    assert_eq!(r.status, 404);
    let r = client
        .request(&g, &Request::new(token("api.site"), Method::Head, "/hello"))
        .expect("head");
    assert_eq!((r.status, r.body.as_str()), (200, ""));
    for path in ["//127.0.0.1:1/x", "/a b", "/a#b"] {
        assert_eq!(
            client.request(&g, &Request::new(token("api.site"), Method::Get, path)),
            Err(ClientError::Denied),
            "{path}"
        );
    }
    assert_eq!(
        client.request(
            &g,
            &Request::new(token("api.site"), Method::Delete, "/hello")
        ),
        Err(ClientError::Denied)
    );
    drop(broker);
    assert_eq!(origin.stop().len(), 3);
}

/// Sends `line` over a fresh connection one byte every `pace`, and returns
/// the reply line and how long after connecting it arrived. The sender stops
/// at the first failed write (the broker has closed the connection).
fn trickle(socket: &Path, line: &str, pace: Duration) -> (String, Duration) {
    let stream = UnixStream::connect(socket).expect("connect");
    let start = Instant::now();
    let writer = stream.try_clone().expect("clone");
    let bytes = line.as_bytes().to_vec();
    let sender = std::thread::spawn(move || {
        let mut w = &writer;
        for b in bytes {
            if w.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(pace);
        }
    });
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut reply = String::new();
    let _ = BufReader::new(&stream).read_line(&mut reply);
    let elapsed = start.elapsed();
    let _ = stream.shutdown(std::net::Shutdown::Both);
    sender.join().expect("sender");
    (reply, elapsed)
}

#[test]
fn a_slow_sender_is_cut_off_at_the_request_deadline() {
    use splash_broker::host::REQUEST_READ_TIMEOUT;
    let _g = serial();
    let origin = TestOrigin::start(8, routes);
    let parent = Parent::new("slow");
    let broker = HostBroker::start(parent.path(), endpoint_catalog(&origin)).expect("start");
    let line = serde_json::to_string(&Request::new(token("api.hello"), Method::Get, "/hello"))
        .expect("encode")
        + "\n";

    // Control: the same valid request, sent a byte at a time but finishing
    // well inside the deadline, is served.
    let quick = Duration::from_millis(2);
    let (reply, _) = trickle(&broker.socket_path(), &line, quick);
    assert!(reply.contains("\"status\":200"), "{reply}");

    // Paced so that every byte arrives well inside a per-read timeout but
    // the whole line would take about twice the request deadline: the
    // broker answers `denied` at the deadline and never reaches the origin.
    let pace = REQUEST_READ_TIMEOUT * 2 / u32::try_from(line.len()).expect("short line");
    assert!(pace < Duration::from_millis(500), "{pace:?}");
    let before = origin.seen().len();
    let (reply, elapsed) = trickle(&broker.socket_path(), &line, pace);
    assert_eq!(reply, "{\"version\":1,\"error\":\"denied\"}\n");
    assert!(
        elapsed >= REQUEST_READ_TIMEOUT - Duration::from_millis(100)
            && elapsed < REQUEST_READ_TIMEOUT + Duration::from_millis(1500),
        "cut off after {elapsed:?}, deadline {REQUEST_READ_TIMEOUT:?}"
    );
    assert_eq!(origin.seen().len(), before, "the cut-off request was sent");

    // The broker serves the next connection at once.
    let client = BrokerClient::new(broker.socket_path()).expect("client");
    let started = Instant::now();
    let r = client
        .request(
            &grant(&["api.hello"]),
            &Request::new(token("api.hello"), Method::Get, "/hello"),
        )
        .expect("served after the cut-off");
    assert_eq!(r.status, 200);
    assert!(started.elapsed() < Duration::from_secs(2));
    let stats = broker.stats();
    assert_eq!((stats.served, stats.denied), (2, 1), "{stats:?}");
    broker.shutdown().expect("shutdown");
    origin.stop();
}
