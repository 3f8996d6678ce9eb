//! `splashc lsp` as an editor runs it: the real binary, JSON-RPC with
//! `Content-Length` framing over its standard input and output.

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
        let mut child = Command::new(env!("CARGO_BIN_EXE_splashc"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn splashc lsp");
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

    fn next(&self) -> Value {
        self.messages
            .recv_timeout(Duration::from_secs(30))
            .expect("a message from the server within 30 s")
    }

    /// Sends a request and returns its response's `result`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let message = self.next();
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    fn diagnostics(&self) -> Vec<Value> {
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
    for keyword in ["seccomp", "strict-allowlist", "bubblewrap", "limits"] {
        assert!(items.iter().any(|i| i == keyword), "{keyword} in {items:?}");
    }
    let items = labels(server.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": URI }, "position": lsp_position(VALID, "execve") }),
    ));
    assert!(items.iter().any(|i| i == "openat"), "{items:?}");
    assert!(!items.iter().any(|i| i == "bubblewrap"), "{items:?}");

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

/// The syscall number from the compiler's own tables, by architecture name.
fn splash_seccomp_number(arch: &str, name: &str) -> u32 {
    let arch = splash_seccomp::Arch::from_name(arch).expect("arch");
    splash_seccomp::syscall_number(arch, name).expect("syscall")
}
