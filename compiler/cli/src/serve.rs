//! `splashc serve --stdio`: sessions driven by JSON lines on standard
//! input, answered by JSON lines on standard output (`docs/serve.md`,
//! `schemas/serve.schema.json`).
//!
//! The main thread reads and validates control lines. A line that is not
//! a well-formed request, or names no open session, gets one `error` event
//! and changes nothing. Each session runs on its own thread, which owns the
//! [`Session`] and takes its requests from a channel in order; while a call
//! is in flight it alternates between waiting for the call's answers and
//! taking a `cancel`. A session's [`StopHandle`] is kept by the main thread,
//! so a `stop`, or the end of standard input, ends even a call that blocks.
//!
//! At the end of standard input every open session is force-stopped and
//! reaped (an `exited` event each); then the command exits.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Map, Value, json};
use splash_protocol::{CapabilityManifest, Token};
use splash_runtime::{
    BindOptions, CallError, Deadlines, Event, LaunchError, LoadedPolicy, Session, SessionState,
    StopHandle, StopReason, WorkerStatus,
};

use crate::ServeArgs;
use crate::emit::MAX_MANIFEST_BYTES;
use crate::exit::Exit;
use crate::run::chain;

/// The longest control line read; a longer one is an error and skipped.
pub const MAX_CONTROL_LINE_BYTES: usize = 16 * 1024 * 1024;
/// How long a session thread waits for a call's answer before it looks at
/// its requests again (a `cancel` is sent at most this late).
const POLL: Duration = Duration::from_millis(10);
/// The default grace a closed worker gets to exit.
const DEFAULT_GRACE: Duration = Duration::from_secs(5);

pub fn run(args: &ServeArgs) -> Exit {
    // `--stdio` is the only transport; clap requires it.
    debug_assert!(args.stdio);
    let out = Output::default();
    let mut server = Server {
        out: out.clone(),
        sessions: BTreeMap::new(),
        ending: Vec::new(),
        failed: Arc::new(Mutex::new(false)),
    };
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut number = 0u64;
    let status = loop {
        number += 1;
        match read_line(&mut input, MAX_CONTROL_LINE_BYTES) {
            Ok(Line::End) => break Exit::Success,
            Ok(Line::TooLong) => out.error(
                number,
                &format!("the line exceeds {MAX_CONTROL_LINE_BYTES} bytes"),
            ),
            Ok(Line::Text(bytes)) => {
                if let Err(why) = server.handle(&bytes) {
                    out.error(number, &why);
                }
            }
            Err(e) => {
                eprintln!("splashc serve: cannot read standard input: {e}");
                break Exit::Usage;
            }
        }
    };
    server.shutdown();
    let failed = *server.failed.lock().unwrap_or_else(PoisonError::into_inner);
    if failed && status == Exit::Success {
        Exit::Failed
    } else {
        status
    }
}

/// One control line, or why there is none.
enum Line {
    Text(Vec<u8>),
    TooLong,
    End,
}

/// Reads one `\n`-terminated line of at most `max` bytes (a last line
/// without `\n` counts); a longer one is consumed up to its end.
fn read_line(input: &mut impl BufRead, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::End
            } else {
                Line::Text(line)
            });
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let text = &buf[..newline.unwrap_or(buf.len())];
        if !too_long {
            if line.len() + text.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(text);
            }
        }
        let consumed = newline.map_or(buf.len(), |i| i + 1);
        input.consume(consumed);
        if newline.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
    }
}

/// Standard output, shared by every session thread: one event per line,
/// each written whole and flushed.
#[derive(Debug, Clone, Default)]
struct Output {
    lock: Arc<Mutex<()>>,
}

impl Output {
    fn emit(&self, event: &Value) {
        let mut line = event.to_string();
        line.push('\n');
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = std::io::stdout().lock();
        // A reader that went away cannot be told anything; the sandboxes
        // still end when standard input does.
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }

    fn error(&self, line: u64, error: &str) {
        self.emit(&json!({"event": "error", "line": line, "error": error}));
    }
}

/// What a session thread is asked to do, in order.
#[derive(Debug)]
enum Request {
    Invoke { tool: String, input: Value },
    Start { tool: String, input: Value },
    Cancel { request: Token },
    Close { grace: Duration },
}

/// An open session as the main thread sees it.
#[derive(Debug)]
struct Handle {
    requests: Sender<Request>,
    /// Set, under its lock, once the session's thread takes no more
    /// requests; a request is sent only under this lock.
    ended: Arc<Mutex<bool>>,
    stop: Arc<Mutex<Option<StopHandle>>>,
    thread: JoinHandle<()>,
}

struct Server {
    out: Output,
    sessions: BTreeMap<String, Handle>,
    /// The threads of sessions closed or stopped, which may still be
    /// ending.
    ending: Vec<JoinHandle<()>>,
    /// Set when some sandbox could not be torn down.
    failed: Arc<Mutex<bool>>,
}

/// What `launch` needs, validated on the main thread.
#[derive(Debug)]
struct Launch {
    policy: PathBuf,
    expect_digest: Option<String>,
    manifest: ManifestSource,
    deadlines: Deadlines,
}

#[derive(Debug)]
enum ManifestSource {
    File(PathBuf),
    Inline(Value),
}

/// The fields of one request object, taken one by one; whatever is left
/// at the end is an unknown field.
struct Fields {
    op: &'static str,
    map: Map<String, Value>,
}

impl Fields {
    fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    fn string(&mut self, name: &str) -> Result<String, String> {
        match self.take(name) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(format!("`{}`: `{name}` must be a string", self.op)),
            None => Err(format!("`{}` needs `{name}`", self.op)),
        }
    }

    fn optional_string(&mut self, name: &str) -> Result<Option<String>, String> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("`{}`: `{name}` must be a string", self.op)),
        }
    }

    fn millis(&mut self, name: &str) -> Result<Option<Duration>, String> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(ms) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
                _ => Err(format!(
                    "`{}`: `{name}` must be a whole number of milliseconds above 0",
                    self.op
                )),
            },
        }
    }

    fn finish(self) -> Result<(), String> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(format!(
                "`{}` has no field `{}`",
                self.op,
                splashpol::text::escaped(key)
            )),
        }
    }
}

/// The request names, as the schema lists them.
const OPS: [&str; 6] = ["launch", "invoke", "start", "cancel", "close", "stop"];

impl Server {
    /// Validates one control line and carries it out; `Err` is the `error`
    /// event's text, and nothing changed.
    fn handle(&mut self, bytes: &[u8]) -> Result<(), String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("not JSON: {}", splashpol::text::escaped(&e.to_string())))?;
        let Value::Object(mut map) = value else {
            return Err("a control line is a JSON object".to_owned());
        };
        let op = match map.remove("op") {
            Some(Value::String(op)) => OPS.into_iter().find(|o| *o == op).ok_or_else(|| {
                format!(
                    "unknown `op` `{}`; one of {}",
                    splashpol::text::escaped(&op),
                    OPS.join(", ")
                )
            })?,
            Some(_) => return Err("`op` must be a string".to_owned()),
            None => return Err("a control line needs `op`".to_owned()),
        };
        let mut fields = Fields { op, map };
        let name = fields.string("session")?;
        Token::new(name.as_str()).map_err(|e| {
            format!(
                "`session` `{}` is not a session name: {e}",
                splashpol::text::escaped(&name)
            )
        })?;
        match op {
            "launch" => {
                let launch = parse_launch(&mut fields)?;
                fields.finish()?;
                if self.open(&name).is_ok() {
                    return Err(format!("session `{name}` is already open"));
                }
                if let Some(old) = self.sessions.remove(&name) {
                    let _ = old.thread.join();
                }
                self.reap_ended();
                let handle = self.spawn(name.clone(), launch)?;
                self.sessions.insert(name, handle);
                Ok(())
            }
            "invoke" | "start" => {
                let tool = fields.string("tool")?;
                let input = fields
                    .take("input")
                    .unwrap_or_else(|| Value::Object(Map::new()));
                fields.finish()?;
                let request = if op == "invoke" {
                    Request::Invoke { tool, input }
                } else {
                    Request::Start { tool, input }
                };
                self.send(&name, request)
            }
            "cancel" => {
                let request = fields.string("request")?;
                let request = Token::new(request.as_str()).map_err(|e| {
                    format!(
                        "`request` `{}` is not a request id: {e}",
                        splashpol::text::escaped(&request)
                    )
                })?;
                fields.finish()?;
                self.send(&name, Request::Cancel { request })
            }
            "close" => {
                let grace = fields.millis("grace_ms")?.unwrap_or(DEFAULT_GRACE);
                fields.finish()?;
                self.send(&name, Request::Close { grace })?;
                // The thread ends after the close (the other sessions do
                // not wait for it); the name is free again.
                if let Some(handle) = self.sessions.remove(&name) {
                    drop(handle.requests);
                    self.ending.push(handle.thread);
                }
                Ok(())
            }
            "stop" => {
                fields.finish()?;
                let handle = self.open(&name)?;
                let stop = handle
                    .stop
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let Some(handle) = self.sessions.remove(&name) else {
                    return Err(format!("no session `{name}` is open"));
                };
                // Force-stop (unblocking a call in flight); the thread then
                // sees the end of its requests and reports the exit.
                if let Some(stop) = stop {
                    let _ = stop.stop();
                }
                drop(handle.requests);
                self.ending.push(handle.thread);
                Ok(())
            }
            _ => Err(format!("unknown `op` `{op}`")),
        }
    }

    /// Joins the threads of sessions that have ended.
    fn reap_ended(&mut self) {
        let (done, running) = std::mem::take(&mut self.ending)
            .into_iter()
            .partition::<Vec<_>, _>(JoinHandle::is_finished);
        self.ending = running;
        for thread in done {
            let _ = thread.join();
        }
    }

    fn open(&self, name: &str) -> Result<&Handle, String> {
        self.sessions
            .get(name)
            .filter(|h| !*h.ended.lock().unwrap_or_else(PoisonError::into_inner))
            .ok_or_else(|| format!("no session `{name}` is open"))
    }

    fn send(&self, name: &str, request: Request) -> Result<(), String> {
        let handle = self.open(name)?;
        let ended = handle.ended.lock().unwrap_or_else(PoisonError::into_inner);
        if *ended {
            return Err(format!("no session `{name}` is open"));
        }
        handle
            .requests
            .send(request)
            .map_err(|_| format!("no session `{name}` is open"))
    }

    fn spawn(&self, name: String, launch: Launch) -> Result<Handle, String> {
        let (requests, receiver) = mpsc::channel();
        let stop = Arc::new(Mutex::new(None));
        let ended = Arc::new(Mutex::new(false));
        let worker = SessionThread {
            ended: Arc::clone(&ended),
            name: name.clone(),
            out: self.out.clone(),
            requests: receiver,
            stop: Arc::clone(&stop),
            failed: Arc::clone(&self.failed),
        };
        let thread = std::thread::Builder::new()
            .name(format!("session {name}"))
            .spawn(move || worker.run(launch))
            .map_err(|e| format!("cannot start a thread for session `{name}`: {e}"))?;
        Ok(Handle {
            requests,
            ended,
            stop,
            thread,
        })
    }

    /// Stops every open session and waits until each is reaped.
    fn shutdown(&mut self) {
        let sessions = std::mem::take(&mut self.sessions);
        for handle in sessions.values() {
            let stop = handle
                .stop
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(stop) = stop {
                let _ = stop.stop();
            }
        }
        for handle in sessions.into_values() {
            drop(handle.requests);
            let _ = handle.thread.join();
        }
        for thread in std::mem::take(&mut self.ending) {
            let _ = thread.join();
        }
    }
}

fn parse_launch(fields: &mut Fields) -> Result<Launch, String> {
    let policy = PathBuf::from(fields.string("policy")?);
    let expect_digest = fields.optional_string("expect_digest")?;
    if let Some(hex) = &expect_digest
        && !splashpol::artifact::is_hex_digest(hex)
    {
        return Err(
            "`launch`: `expect_digest` must be a BLAKE3 digest, 64 lowercase hex digits".to_owned(),
        );
    }
    let manifest = match fields.take("manifest") {
        Some(Value::String(path)) => ManifestSource::File(path.into()),
        Some(m @ Value::Object(_)) => ManifestSource::Inline(m),
        Some(_) => {
            return Err("`launch`: `manifest` must be a file name or a manifest object".to_owned());
        }
        None => return Err("`launch` needs `manifest`".to_owned()),
    };
    let mut deadlines = Deadlines::none();
    match fields.take("deadlines") {
        None => {}
        Some(Value::Object(map)) => {
            let mut d = Fields { op: "launch", map };
            deadlines.session = d.millis("session_ms")?;
            deadlines.call = d.millis("call_ms")?;
            d.finish()
                .map_err(|e| e.replace("`launch` has", "`launch`'s `deadlines` has"))?;
        }
        Some(_) => return Err("`launch`: `deadlines` must be an object".to_owned()),
    }
    Ok(Launch {
        policy,
        expect_digest,
        manifest,
        deadlines,
    })
}

/// A session's own thread.
struct SessionThread {
    /// Shared with the main thread's [`Handle`].
    ended: Arc<Mutex<bool>>,
    name: String,
    out: Output,
    requests: Receiver<Request>,
    stop: Arc<Mutex<Option<StopHandle>>>,
    failed: Arc<Mutex<bool>>,
}

/// Whether the session thread goes on.
enum Next {
    Continue,
    Ended,
}

impl SessionThread {
    fn event(&self, kind: &str, fields: Value) {
        let mut map = Map::new();
        map.insert("event".into(), kind.into());
        map.insert("session".into(), self.name.clone().into());
        if let Value::Object(rest) = fields {
            map.extend(rest);
        }
        self.out.emit(&Value::Object(map));
    }

    fn run(self, launch: Launch) {
        let policy = launch.policy.display().to_string();
        let mut session = match self.launch(launch) {
            Ok(session) => session,
            Err(LaunchFailure::Unreadable(error)) => {
                self.launch_failed(json!({
                    "op": "launch",
                    "outcome": "launch_failed",
                    "error": error,
                }));
                return;
            }
            Err(LaunchFailure::Launch(e)) => {
                let fields = match check_diagnostics(&e) {
                    // The diagnostics are the cause; they are given once.
                    Some(diagnostics) => json!({
                        "op": "launch",
                        "outcome": "launch_failed",
                        "error": format!(
                            "policy `{}` has errors",
                            splashpol::text::escaped(&policy)
                        ),
                        "diagnostics": diagnostics,
                    }),
                    None => json!({
                        "op": "launch",
                        "outcome": "launch_failed",
                        "error": chain(&e),
                    }),
                };
                self.launch_failed(fields);
                return;
            }
        };
        *self.stop.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.stop_handle());
        self.event(
            "launched",
            json!({
                "pid": session.pid(),
                "session_id": session.manifest().session_id.as_str(),
            }),
        );
        loop {
            if session.call_in_flight().is_some() && !session.is_poisoned() {
                // A call in flight: its answers, and a `cancel` meanwhile.
                match self.requests.try_recv() {
                    Ok(request) => match self.serve(session, request) {
                        (Next::Continue, Some(s)) => session = s,
                        _ => return,
                    },
                    Err(TryRecvError::Empty) => {
                        self.answers(&mut session);
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return self.stop_now(session),
                }
            } else {
                match self.requests.recv_timeout(POLL) {
                    Ok(request) => match self.serve(session, request) {
                        (Next::Continue, Some(s)) => session = s,
                        _ => return,
                    },
                    // Idle: a deadline that stopped the worker is reported
                    // now, not at the next request (a stop of serve's own,
                    // `stop` or the end of input, ends the requests next).
                    Err(RecvTimeoutError::Timeout) => {
                        if let Some(reason) =
                            session.stopped().filter(|r| *r != StopReason::Stopped)
                        {
                            return self.stopped_by_watchdog(session, reason);
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return self.stop_now(session),
                }
            }
        }
    }

    /// Reports a failed launch; requests written before the client could
    /// see it get a `failed` event each, and no more are taken.
    fn launch_failed(&self, fields: Value) {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.event("failed", fields);
        while let Ok(request) = self.requests.try_recv() {
            let op = match request {
                Request::Invoke { .. } => "invoke",
                Request::Start { .. } => "start",
                Request::Cancel { .. } => "cancel",
                Request::Close { .. } => "close",
            };
            self.event(
                "failed",
                json!({"op": op, "outcome": "launch_failed", "error": "the session did not launch"}),
            );
        }
    }

    fn launch(&self, launch: Launch) -> Result<Session, LaunchFailure> {
        let loaded = match &launch.expect_digest {
            Some(hex) => LoadedPolicy::from_path_expecting(&launch.policy, hex),
            None => LoadedPolicy::from_path(&launch.policy),
        }?;
        let manifest = match launch.manifest {
            ManifestSource::Inline(value) => {
                CapabilityManifest::from_json(value.to_string().as_bytes())
            }
            ManifestSource::File(path) => {
                let bytes = splash_runtime::launch::read_regular_file(&path, MAX_MANIFEST_BYTES)
                    .map_err(|e| {
                        LaunchFailure::Unreadable(format!(
                            "cannot read manifest `{}`: {}",
                            splashpol::text::escaped(&path.display().to_string()),
                            chain(&e)
                        ))
                    })?;
                CapabilityManifest::from_json(&bytes)
            }
        }
        .map_err(LaunchError::Manifest)?;
        let bound = loaded.bind(&manifest, BindOptions::default())?;
        Ok(Session::open_owned(bound, manifest, launch.deadlines)?)
    }

    /// Carries out one request; the session comes back unless it ended.
    fn serve(&self, mut session: Session, request: Request) -> (Next, Option<Session>) {
        match request {
            Request::Invoke { tool, input } => {
                match session.start(&tool, input) {
                    Ok(_) => {}
                    Err(e) => self.call_failed("invoke", &tool, &e),
                }
                (Next::Continue, Some(session))
            }
            Request::Start { tool, input } => {
                match session.start(&tool, input) {
                    Ok(request) => self.event(
                        "started",
                        json!({"tool": tool, "request": request.as_str()}),
                    ),
                    Err(e) => self.call_failed("start", &tool, &e),
                }
                (Next::Continue, Some(session))
            }
            Request::Cancel { request } => {
                if let Err(e) = session.cancel(&request) {
                    let mut fields = failure("cancel", &e);
                    fields["request"] = request.as_str().into();
                    self.event("failed", fields);
                    self.poisoned_by(&e);
                }
                (Next::Continue, Some(session))
            }
            Request::Close { grace } => {
                self.clear_stop();
                match session.close(grace) {
                    Ok(status) => self.event(
                        "exited",
                        json!({"how": "closed", "status": status_json(status)}),
                    ),
                    Err(e) => {
                        self.event("failed", failure("close", &e));
                        self.poisoned_by(&e);
                        if let CallError::Indeterminate { status, .. } = &e {
                            self.event(
                                "exited",
                                json!({"how": "stopped", "status": status_json(*status)}),
                            );
                        }
                    }
                }
                (Next::Ended, None)
            }
        }
    }

    /// Waits a little for an answer about the call in flight and reports it.
    fn answers(&self, session: &mut Session) {
        let request = session
            .call_in_flight()
            .map(|r| r.as_str().to_owned())
            .unwrap_or_default();
        match session.wait_event(POLL) {
            Ok(None) => {}
            Ok(Some(Event::Finished { request_id, output })) => {
                self.event(
                    "result",
                    json!({"request": request_id.as_str(), "output": output}),
                );
            }
            Ok(Some(Event::Cancelled { request_id })) => self.event(
                "cancel",
                json!({"request": request_id.as_str(), "answer": "acknowledged"}),
            ),
            Ok(Some(Event::TooLate { request_id })) => self.event(
                "cancel",
                json!({"request": request_id.as_str(), "answer": "too_late"}),
            ),
            Ok(Some(Event::Unsupported { request_id })) => self.event(
                "cancel",
                json!({"request": request_id.as_str(), "answer": "unsupported"}),
            ),
            Err(e) => {
                let mut fields = failure("call", &e);
                fields["request"] = request.into();
                self.event("failed", fields);
                self.poisoned_by(&e);
            }
        }
    }

    fn call_failed(&self, op: &str, tool: &str, e: &CallError) {
        let mut fields = failure(op, e);
        fields["tool"] = tool.into();
        self.event("failed", fields);
        self.poisoned_by(e);
    }

    /// The `poisoned` event, when `e` is what poisoned the session.
    fn poisoned_by(&self, e: &CallError) {
        match e {
            CallError::Indeterminate { status, .. } => self.event(
                "poisoned",
                json!({"status": status_json(*status), "error": chain(e)}),
            ),
            CallError::Containment(_) => {
                *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = true;
                self.event("poisoned", json!({"status": null, "error": chain(e)}));
            }
            _ => {}
        }
    }

    fn clear_stop(&self) {
        *self.stop.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The watchdog stopped the idle worker (its session deadline): the
    /// session is reaped and reported `stopped`, with the reason.
    fn stopped_by_watchdog(&self, session: Session, reason: StopReason) {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.clear_stop();
        match session.stop() {
            Ok(status) => self.event(
                "exited",
                json!({"how": "stopped", "reason": reason.to_string(), "status": status_json(status)}),
            ),
            Err(e) => self.containment_failed(&e),
        }
    }

    /// The requests ended (a `stop`, or the end of standard input): the
    /// worker is force-stopped and reaped.
    fn stop_now(&self, session: Session) {
        self.clear_stop();
        match session.stop() {
            Ok(status) => self.event(
                "exited",
                json!({"how": "stopped", "status": status_json(status)}),
            ),
            Err(e) => self.containment_failed(&e),
        }
    }

    /// A sandbox that could not be torn down: the command's status becomes 3.
    fn containment_failed(&self, e: &std::io::Error) {
        *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.event(
            "failed",
            json!({
                "op": "stop",
                "outcome": "containment",
                "session_state": "poisoned",
                "error": format!("the worker's sandbox could not be torn down: {}", chain(e)),
            }),
        );
    }
}

/// A policy's check diagnostics, rendered without colour, when they are
/// why the launch failed.
fn check_diagnostics(e: &LaunchError) -> Option<String> {
    match e {
        LaunchError::Check {
            name,
            text,
            outcome,
        } => Some(outcome.render_human(name, text)),
        _ => None,
    }
}

/// Why a launch failed.
#[derive(Debug)]
enum LaunchFailure {
    /// The manifest file cannot be read.
    Unreadable(String),
    /// The runtime refused the launch.
    Launch(LaunchError),
}

impl From<LaunchError> for LaunchFailure {
    fn from(e: LaunchError) -> Self {
        Self::Launch(e)
    }
}

/// The fields of a `failed` event for `e`: the API's typed outcome and
/// what it leaves of the session.
fn failure(op: &str, e: &CallError) -> Value {
    let outcome = match e {
        CallError::Refused(_) => "refused",
        CallError::Indeterminate { .. } => "indeterminate",
        CallError::Poisoned => "poisoned",
        CallError::Containment(_) => "containment",
        _ => "indeterminate",
    };
    let mut fields = json!({
        "op": op,
        "outcome": outcome,
        "session_state": match e.leaves_session() {
            SessionState::Usable => "usable",
            _ => "poisoned",
        },
        "error": chain(e),
    });
    if let CallError::Indeterminate { status, .. } = e {
        fields["status"] = status_json(*status);
    }
    fields
}

fn status_json(status: WorkerStatus) -> Value {
    match status {
        WorkerStatus::Running => json!({"running": true}),
        WorkerStatus::Exited(code) => json!({"exited": code}),
        WorkerStatus::Killed(signal) => json!({"killed": signal}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = std::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, max).expect("read") {
                Line::End => return out,
                Line::TooLong => out.push("<too long>".to_owned()),
                Line::Text(t) => out.push(String::from_utf8(t).expect("UTF-8")),
            }
        }
    }

    #[test]
    fn lines_are_bounded_and_a_long_one_is_skipped_to_its_end() {
        assert_eq!(lines(b"ab\ncdef\n\nxy", 4), ["ab", "cdef", "", "xy"]);
        assert_eq!(
            lines(b"abcdefghij\nok\nabcdefghij", 4),
            ["<too long>", "ok", "<too long>"]
        );
        assert!(lines(b"", 4).is_empty());
    }

    #[test]
    fn malformed_requests_are_refused_before_anything_happens() {
        let mut server = Server {
            out: Output::default(),
            sessions: BTreeMap::new(),
            ending: Vec::new(),
            failed: Arc::new(Mutex::new(false)),
        };
        for (line, says) in [
            ("1", "a control line is a JSON object"),
            (r#"{"op":1,"session":"a"}"#, "`op` must be a string"),
            (r#"{"op":"launch"}"#, "needs `session`"),
            (r#"{"op":"launch","session":"a"}"#, "needs `policy`"),
            (
                r#"{"op":"launch","session":"a","policy":"p"}"#,
                "needs `manifest`",
            ),
            (
                r#"{"op":"launch","session":"a","policy":"p","manifest":3}"#,
                "a file name or a manifest object",
            ),
            (
                r#"{"op":"launch","session":"a","policy":"p","manifest":"m","expect_digest":"x"}"#,
                "BLAKE3",
            ),
            (
                r#"{"op":"launch","session":"a","policy":"p","manifest":"m","deadlines":{"call_ms":0}}"#,
                "above 0",
            ),
            (r#"{"op":"stop","session":"a"}"#, "no session `a` is open"),
        ] {
            let e = server.handle(line.as_bytes()).expect_err(line);
            assert!(e.contains(says), "{line}: {e}");
        }
        assert!(server.sessions.is_empty());
    }
}
