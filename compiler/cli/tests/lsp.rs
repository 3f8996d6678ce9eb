//! `splashc lsp` as an editor runs it: the real binary, JSON-RPC with
//! `Content-Length` framing over its standard input and output.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

const URI: &str = "file:///work/policy.splashpol";

/// A valid policy; a path with multi-byte characters sits before the size
/// that the invalid variant misspells.
const VALID: &str = r#"splashpol 1
policy "p" {
  bubblewrap "/usr/bin/bwrap"
  worker "/opt/splash/bin/worker"
  runtime "/opt/splash/runtime" at "/opt/splash"
  root "scratch" tmpfs at "/workspace/é😀" size 16 MiB
  tmp private size 16 MiB
  writes bounded
  user-namespaces none
  pin mounts, executables
  seccomp strict-allowlist {
    execve read write exit_group
  }
}
"#;

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    /// The server's standard error, when it is captured.
    stderr: Option<std::thread::JoinHandle<String>>,
    /// Messages read while waiting for a response, in arrival order.
    pending: VecDeque<Value>,
    next_id: i64,
}

impl Drop for Server {
    fn drop(&mut self) {
        // Leave no process behind when an assertion fails midway.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn read_frame(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Server {
    fn start() -> Server {
        Self::spawn(false)
    }

    /// [`Server::start`], with its standard error kept for
    /// [`Server::end`].
    fn start_capturing() -> Server {
        Self::spawn(true)
    }

    fn spawn(capture: bool) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_splashc"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if capture {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("spawn splashc lsp");
        let stderr = child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = std::io::Read::read_to_string(&mut e, &mut text);
                text
            })
        });
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_frame(&mut reader) {
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        Server {
            child,
            stdin,
            messages: rx,
            stderr,
            pending: VecDeque::new(),
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("json");
        let stdin = self.stdin.as_mut().expect("stdin open");
        write!(stdin, "Content-Length: {}\r\n\r\n", body.len()).expect("header");
        stdin.write_all(&body).expect("body");
        stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    fn next(&mut self) -> Value {
        self.pending.pop_front().unwrap_or_else(|| {
            self.messages
                .recv_timeout(Duration::from_secs(30))
                .expect("a message from the server within 30 s")
        })
    }

    /// Sends a request and returns its whole response; other messages that
    /// arrive first stay queued for [`Server::next`].
    fn exchange(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let mut skipped = VecDeque::new();
        loop {
            let message = self.next();
            if message["id"] == json!(id) && message.get("method").is_none() {
                skipped.append(&mut self.pending);
                self.pending = skipped;
                return message;
            }
            skipped.push_back(message);
        }
    }

    /// Sends a request and returns its response's `result`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let message = self.exchange(method, params);
        assert!(message.get("error").is_none(), "{method}: {message}");
        message["result"].clone()
    }

    /// Sends a request that must fail; returns its `error`.
    fn request_error(&mut self, method: &str, params: Value) -> Value {
        let message = self.exchange(method, params);
        assert!(message.get("result").is_none(), "{method}: {message}");
        message["error"].clone()
    }

    fn diagnostics(&mut self) -> Vec<Value> {
        loop {
            let message = self.next();
            if message["method"] == "textDocument/publishDiagnostics" {
                assert_eq!(message["params"]["uri"], URI);
                return message["params"]["diagnostics"]
                    .as_array()
                    .expect("diagnostics array")
                    .clone();
            }
        }
    }
}

/// LSP position of the first `needle` in `text`: zero-based line and UTF-16
/// column.
fn lsp_position(text: &str, needle: &str) -> Value {
    let at = text.find(needle).expect("needle");
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..at].matches('\n').count();
    let character = text[line_start..at].encode_utf16().count();
    json!({ "line": line, "character": character })
}

#[test]
fn diagnostics_hover_completion_and_shutdown_over_stdio() {
    let mut server = Server::start();
    let init = server.request(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
    );
    let caps = &init["capabilities"];
    assert_eq!(caps["textDocumentSync"], 1, "full sync: {init}");
    assert_eq!(caps["hoverProvider"], true);
    assert!(caps["completionProvider"].is_object());
    server.notify("initialized", json!({}));

    // An unknown unit after `é😀`: the column counts `😀` as two UTF-16 units.
    let invalid = VALID.replacen("\" size 16 MiB", "\" size 16 MB", 1);
    assert_ne!(invalid, VALID);
    server.notify(
        "textDocument/didOpen",
        json!({ "textDocument": {
            "uri": URI, "languageId": "splashpol", "version": 1, "text": invalid } }),
    );
    let diags = server.diagnostics();
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(d["code"], "splash::check::unknown-unit");
    assert_eq!(d["severity"], 1, "error");
    let start = lsp_position(&invalid, "MB");
    assert_eq!(start, json!({ "line": 5, "character": 51 }));
    assert_eq!(d["range"]["start"], start);
    assert_eq!(d["range"]["end"], json!({ "line": 5, "character": 53 }));
    let message = d["message"].as_str().expect("message");
    assert!(message.contains("unknown unit `MB`"), "{message}");
    assert!(message.contains("help: did you mean `MiB`?"), "{message}");
    // The same code and position as `splashc check --format json`.
    let dir_guard = tempfile::Builder::new()
        .prefix("splashc-lsp-test-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    let file = dir.join("invalid.splashpol");
    std::fs::write(&file, &invalid).expect("write");
    let check = Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(["check", "--format", "json"])
        .arg(&file)
        .output()
        .expect("run splashc check");
    let report: Value = serde_json::from_slice(&check.stdout).expect("check json");
    let checked = &report["files"][0]["diagnostics"][0];
    assert_eq!(checked["code"], d["code"], "{report}");

    // A valid document clears the diagnostics.
    server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 },
                "contentChanges": [{ "text": VALID }] }),
    );
    assert_eq!(server.diagnostics(), Vec::<Value>::new());

    // Hover on a syscall of the allowlist: its number on every architecture.
    let hover = server.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": URI }, "position": lsp_position(VALID, "write ") }),
    );
    let text = hover["contents"]["value"].as_str().expect("hover text");
    for (arch, nr) in [("x86_64", 1), ("aarch64", 64), ("riscv64", 64)] {
        assert_eq!(
            splash_seccomp_number(arch, "write"),
            nr,
            "the table agrees with the kernel's number"
        );
        assert!(text.contains(&format!("{arch}: {nr}")), "{text}");
    }
    // Hover on a size: its value in bytes.
    let hover = server.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": URI }, "position": lsp_position(VALID, "16 MiB") }),
    );
    let text = hover["contents"]["value"].as_str().expect("hover text");
    assert!(text.contains("16777216 bytes"), "{text}");
    // Nothing to say about a keyword.
    let hover = server.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": URI }, "position": lsp_position(VALID, "writes") }),
    );
    assert_eq!(hover, Value::Null);

    // Completion: keywords at a statement, syscall names in the allowlist.
    let labels = |result: Value| -> Vec<String> {
        result
            .as_array()
            .expect("completion items")
            .iter()
            .map(|i| i["label"].as_str().expect("label").to_string())
            .collect()
    };
    let items = labels(server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": URI }, "position": lsp_position(VALID, "writes") }),
    ));
    for keyword in ["seccomp", "bubblewrap", "limits"] {
        assert!(items.iter().any(|i| i == keyword), "{keyword} in {items:?}");
    }
    // Only statement keywords start a statement.
    assert!(!items.iter().any(|i| i == "strict-allowlist"), "{items:?}");
    let items = labels(server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": URI }, "position": lsp_position(VALID, "execve") }),
    ));
    assert!(items.iter().any(|i| i == "openat"), "{items:?}");
    assert!(!items.iter().any(|i| i == "bubblewrap"), "{items:?}");
    // Never a syscall the checker refuses in a strict list.
    assert!(
        !items.iter().any(|i| i == "unshare" || i == "clone3"),
        "{items:?}"
    );

    // Closing a document with errors clears them.
    server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 3 },
                "contentChanges": [{ "text": invalid }] }),
    );
    assert_eq!(server.diagnostics().len(), 1);
    server.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": URI } }),
    );
    assert_eq!(server.diagnostics(), Vec::<Value>::new());

    // Shutdown, then exit: the process ends with status 0.
    assert_eq!(server.request("shutdown", Value::Null), Value::Null);
    server.notify("exit", Value::Null);
    server.stdin = None;
    let status = server.child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
}

/// Root ids: the second `cache` repeats the first (a duplicate the checker
/// reports); the first sits after multi-byte characters on its line.
const ROOTS: &str = "splashpol 1
policy \"roots\" {
  bubblewrap \"/usr/bin/bwrap\"
  worker \"/opt/splash/bin/worker\"
  runtime \"/opt/splash/runtime\" at \"/opt/splash\"
  runtime \"/opt/é😀\" at \"/opt/é😀\"; root \"cache\" tmpfs at \"/workspace/cache\" size 1 MiB
  root \"project\" host \"/srv/project\" at \"/workspace/project\" read-only
  root \"cache\" tmpfs at \"/workspace/other\" size 2 MiB
}
";

fn range(line: u32, start: u32, end: u32) -> Value {
    json!({ "start": { "line": line, "character": start },
            "end": { "line": line, "character": end } })
}

fn at(line: u32, character: u32) -> Value {
    json!({ "textDocument": { "uri": URI }, "position": { "line": line, "character": character } })
}

/// The byte offset of an LSP position (UTF-16 column) in `text`.
fn byte_offset(text: &str, position: &Value) -> usize {
    let line = position["line"].as_u64().expect("line") as usize;
    let mut units = position["character"].as_u64().expect("character") as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    let mut offset = start;
    for c in text[start..].chars() {
        if units == 0 {
            break;
        }
        units -= c.len_utf16();
        offset += c.len_utf8();
    }
    offset
}

/// Applies LSP text edits (non-overlapping) to `text`.
fn apply(text: &str, edits: &[Value]) -> String {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                byte_offset(text, &e["range"]["start"]),
                byte_offset(text, &e["range"]["end"]),
                e["newText"].as_str().expect("newText"),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (start, end, new) in spans {
        out.replace_range(start..end, new);
    }
    out
}

#[test]
fn root_ids_definition_references_and_rename_over_stdio() {
    let mut server = Server::start();
    let init = server.request(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
    );
    let caps = &init["capabilities"];
    assert_eq!(caps["definitionProvider"], true, "{init}");
    assert_eq!(caps["referencesProvider"], true, "{init}");
    assert_eq!(caps["renameProvider"]["prepareProvider"], true, "{init}");
    server.notify("initialized", json!({}));
    server.notify(
        "textDocument/didOpen",
        json!({ "textDocument": {
            "uri": URI, "languageId": "splashpol", "version": 1, "text": ROOTS } }),
    );
    let diags = server.diagnostics();
    assert!(
        diags
            .iter()
            .any(|d| d["code"] == "splash::check::duplicate-root-id"),
        "the repeated id is reported: {diags:?}"
    );

    // `cache` on line 5 starts at UTF-16 column 42 (`é` is one unit, `😀`
    // two; in bytes it would be 48, in characters 40).
    let declaration = json!({ "uri": URI, "range": range(5, 42, 47) });
    assert_eq!(
        lsp_position(ROOTS, "cache\" tmpfs"),
        json!({ "line": 5, "character": 42 })
    );
    let repeat = json!({ "uri": URI, "range": range(7, 8, 13) });

    // Definition: from the repeat, from inside the declaration and from its
    // opening quote, to the declaration.
    for (line, character) in [(7, 10), (5, 44), (5, 41), (7, 13)] {
        let found = server.request("textDocument/definition", at(line, character));
        assert_eq!(found, declaration, "definition from {line}:{character}");
    }
    let project = server.request("textDocument/definition", at(6, 10));
    assert_eq!(project, json!({ "uri": URI, "range": range(6, 8, 15) }));
    // Control: no definition for a keyword, a path or a number.
    for (line, character) in [(7, 20), (7, 30), (5, 74), (3, 3)] {
        let found = server.request("textDocument/definition", at(line, character));
        assert_eq!(found, Value::Null, "no root id at {line}:{character}");
    }

    // References, with and without the declaration.
    let mut params = at(7, 9);
    params["context"] = json!({ "includeDeclaration": true });
    let refs = server.request("textDocument/references", params.clone());
    assert_eq!(refs, json!([declaration, repeat]));
    params["context"] = json!({ "includeDeclaration": false });
    let refs = server.request("textDocument/references", params);
    assert_eq!(refs, json!([repeat]));

    // prepareRename: the id's range between the quotes, and its text.
    let prepared = server.request("textDocument/prepareRename", at(5, 45));
    assert_eq!(
        prepared,
        json!({ "range": range(5, 42, 47), "placeholder": "cache" })
    );
    // Control: a path, a keyword and the policy name cannot be renamed.
    for (line, character) in [(5, 60), (6, 3), (1, 10)] {
        let prepared = server.request("textDocument/prepareRename", at(line, character));
        assert_eq!(prepared, Value::Null, "no rename at {line}:{character}");
    }

    // Rename: both declarations, in UTF-16 ranges.
    let mut params = at(7, 9);
    params["newName"] = json!("scratch-1");
    let edit = server.request("textDocument/rename", params);
    let edits = edit["changes"][URI]
        .as_array()
        .expect("edits for the document");
    assert_eq!(
        edit["changes"].as_object().map(|m| m.len()),
        Some(1),
        "{edit}"
    );
    assert_eq!(
        edits,
        &vec![
            json!({ "range": range(5, 42, 47), "newText": "scratch-1" }),
            json!({ "range": range(7, 8, 13), "newText": "scratch-1" }),
        ]
    );
    let renamed = apply(ROOTS, edits);
    assert_eq!(renamed, ROOTS.replace("\"cache\"", "\"scratch-1\""));
    // The user is told that manifests were not edited.
    let note = server.next();
    assert_eq!(note["method"], "window/showMessage", "{note}");
    let message = note["params"]["message"].as_str().expect("message");
    assert!(
        message.contains("`cache` to `scratch-1`") && message.contains("2 places"),
        "{message}"
    );
    assert!(
        message.contains("manifests") && message.contains("not edited"),
        "{message}"
    );
    assert!(message.contains(r#""id": "cache""#), "{message}");

    // The renamed document: the new id resolves.
    server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 },
                "contentChanges": [{ "text": renamed }] }),
    );
    server.diagnostics();
    let found = server.request("textDocument/definition", at(7, 9));
    assert_eq!(found, json!({ "uri": URI, "range": range(5, 42, 51) }));

    // Refused: a collision with another root, an invalid id, and a rename
    // away from a root id.
    let refuse = |server: &mut Server, line, character, name: &str| {
        let mut params = at(line, character);
        params["newName"] = json!(name);
        server.request_error("textDocument/rename", params)
    };
    let error = refuse(&mut server, 7, 9, "project");
    assert_eq!(error["code"], -32803, "RequestFailed: {error}");
    let text = error["message"].as_str().expect("message");
    assert!(
        text.contains("`project` is already declared on line 7"),
        "{text}"
    );
    for bad in ["Scratch", "", "a b", "é", &"x".repeat(129)] {
        let error = refuse(&mut server, 7, 9, bad);
        assert_eq!(error["code"], -32602, "InvalidParams for `{bad}`: {error}");
        let text = error["message"].as_str().expect("message");
        assert!(text.contains("is not a valid root id"), "{text}");
    }
    let error = refuse(&mut server, 6, 3, "other");
    assert_eq!(error["code"], -32803, "{error}");
    // A valid 128-byte id is accepted (the control for the length limit).
    let mut params = at(6, 10);
    params["newName"] = json!("p".repeat(128));
    let edit = server.request("textDocument/rename", params);
    assert_eq!(edit["changes"][URI][0]["range"], range(6, 8, 15));
    assert_eq!(server.next()["method"], "window/showMessage");

    assert_eq!(server.request("shutdown", Value::Null), Value::Null);
    server.notify("exit", Value::Null);
    server.stdin = None;
    assert_eq!(server.child.wait().expect("wait").code(), Some(0));
}

#[test]
fn exit_without_shutdown_is_status_one() {
    let mut server = Server::start();
    server.request(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
    );
    server.notify("initialized", json!({}));
    server.stdin = None;
    let status = server.child.wait().expect("wait");
    assert_eq!(status.code(), Some(1));
}

impl Server {
    /// Writes `bytes` to the server's standard input as they are.
    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("raw bytes");
        stdin.flush().expect("flush");
    }

    /// The next message, which must be a JSON-RPC error with `id` null and
    /// `code`; returns its message.
    fn frame_error(&mut self, code: i64) -> String {
        let message = self.next();
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        assert_eq!(message["id"], Value::Null, "{message}");
        assert_eq!(message["error"]["code"], code, "{message}");
        message["error"]["message"]
            .as_str()
            .expect("error message")
            .to_string()
    }

    fn initialized(&mut self) {
        self.request(
            "initialize",
            json!({ "processId": null, "rootUri": null, "capabilities": {} }),
        );
        self.notify("initialized", json!({}));
    }

    /// A hover request that must still be answered (with `null`: the
    /// document is not open).
    fn still_serving(&mut self) {
        let hover = json!({
            "textDocument": { "uri": URI },
            "position": { "line": 0, "character": 0 },
        });
        assert_eq!(self.request("textDocument/hover", hover), Value::Null);
    }

    /// Closes the server's standard input and waits: its exit status and
    /// what it wrote to standard error (when captured).
    fn end(&mut self) -> (Option<i32>, String) {
        self.stdin = None;
        let status = self.child.wait().expect("wait for the server");
        let text = self
            .stderr
            .take()
            .map(|t| t.join().expect("stderr reader"))
            .unwrap_or_default();
        (status.code(), text)
    }

    /// Peak resident memory of the server, in KiB (`VmHWM`).
    fn peak_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM")
    }
}

/// The bound on a frame's body (`docs/cli.md`).
const MAX_CONTENT_LENGTH: usize = 8 * 1024 * 1024;

#[test]
fn malformed_frames_are_answered_and_the_server_carries_on() {
    let mut server = Server::start_capturing();
    server.initialized();

    // A frame without `Content-Length`: its body cannot be delimited, and
    // is discarded up to the next frame.
    server.send_raw(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{\"lost\":1}");
    assert!(server.frame_error(-32700).contains("no `Content-Length`"));
    server.still_serving();

    // A length that is not a number.
    server.send_raw(b"Content-Length: twelve\r\n\r\n{\"lost\":2}");
    assert!(server.frame_error(-32700).contains("not a decimal number"));
    server.still_serving();

    // A header line without `:`, with a valid length: exactly its body is
    // skipped.
    server.send_raw(b"garbage\r\nContent-Length: 3\r\n\r\n[1]");
    assert!(server.frame_error(-32700).contains("has no `:`"));
    server.still_serving();

    // A body that is not JSON, and JSON that is not a message.
    server.send_raw(b"Content-Length: 9\r\n\r\n{not json");
    assert!(server.frame_error(-32700).contains("not JSON"));
    server.send_raw(b"Content-Length: 3\r\n\r\n[1]");
    assert!(server.frame_error(-32600).contains("not a JSON-RPC"));
    server.still_serving();

    // A body one byte over the bound: refused, skipped without being held.
    let over = MAX_CONTENT_LENGTH + 1;
    let mut frame = format!("Content-Length: {over}\r\n\r\n").into_bytes();
    frame.resize(frame.len() + over, b' ');
    server.send_raw(&frame);
    assert!(server.frame_error(-32700).contains("above the bound"));
    server.still_serving();

    // A header line longer than the bound.
    let mut long = b"X-Long: ".to_vec();
    long.resize(64 * 1024, b'a');
    long.extend_from_slice(b"\r\n\r\n");
    server.send_raw(&long);
    assert!(server.frame_error(-32700).contains("longer than"));
    server.still_serving();

    assert_eq!(server.request("shutdown", Value::Null), Value::Null);
    server.notify("exit", Value::Null);
    let (code, stderr) = server.end();
    assert_eq!(code, Some(0), "{stderr}");
    // Each refusal is also logged, once.
    assert_eq!(stderr.matches("refused a frame").count(), 7, "{stderr}");
}

#[test]
fn a_huge_content_length_is_answered_at_once_and_never_allocated() {
    let mut server = Server::start_capturing();
    server.initialized();
    server.still_serving();
    let before = server.peak_kib();
    server.send_raw(b"Content-Length: 100000000000\r\n\r\n");
    // Answered before a single body byte arrived.
    assert!(server.frame_error(-32700).contains("above the bound"));
    // 32 MiB of the announced body arrive; they are discarded as they come.
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..32 {
        server.send_raw(&chunk);
    }
    // The process stays alive and small while it skips.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        matches!(server.child.try_wait(), Ok(None)),
        "the server ended"
    );
    let grown = server.peak_kib().saturating_sub(before);
    assert!(grown < 16 * 1024, "peak memory grew by {grown} KiB");
    // Only the real end of the input ends the server.
    let (code, stderr) = server.end();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("the input ended 33554432 bytes into a 100000000000-byte body"),
        "{stderr}"
    );
    assert!(stderr.contains("closed the connection"), "{stderr}");
}

/// The syscall number from the compiler's own tables, by architecture name.
fn splash_seccomp_number(arch: &str, name: &str) -> u32 {
    let arch = splash_seccomp::Arch::from_name(arch).expect("arch");
    splash_seccomp::syscall_number(arch, name).expect("syscall")
}
