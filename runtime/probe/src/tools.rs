//! The probe's tools other than the report.

use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splash_protocol::{CancelSignal, CapabilityManifest, Token, ToolFailure};

use crate::errno::{self, io_error_json};
use crate::sys::{self, ChildOp, ChildOutcome};

/// The most output `probe.exec` keeps from each stream.
const EXEC_CAPTURE: usize = 4096;
/// The most bytes one `probe.write` will attempt.
const MAX_WRITE: u64 = 1 << 34;

fn str_field<'a>(input: &'a Value, key: &str) -> Result<&'a str, String> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("input needs a string `{key}`"))
}

fn u64_field(input: &Value, key: &str) -> Result<u64, String> {
    input
        .get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("input needs a non-negative integer `{key}`"))
}

fn c_path(path: &str) -> Result<CString, String> {
    CString::new(Path::new(path).as_os_str().as_bytes())
        .map_err(|_| format!("path `{path}` contains a NUL byte"))
}

fn unit_result<T>(r: std::io::Result<T>) -> Value {
    match r {
        Ok(_) => json!({"ok": true}),
        Err(e) => json!({"ok": false, "error": io_error_json(&e)}),
    }
}

/// `probe.path {path}`: existence, type, and whether it can be read,
/// written and executed, each with the errno of a failure.
pub fn path(input: &Value) -> Result<Value, String> {
    let path = str_field(input, "path")?;
    let c = c_path(path)?;
    let lmeta = fs::symlink_metadata(path);
    let meta = fs::metadata(path);
    let Ok(m) = &meta else {
        return Ok(json!({
            "path": path,
            "exists": lmeta.is_ok(),
            "dangling_symlink": lmeta.is_ok(),
            "error": meta.as_ref().err().map(io_error_json),
        }));
    };
    let ft = m.file_type();
    let kind = if ft.is_dir() {
        "dir"
    } else if ft.is_file() {
        "file"
    } else if ft.is_char_device() {
        "char_device"
    } else if ft.is_block_device() {
        "block_device"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else {
        "other"
    };
    let (readable, writable) = if ft.is_dir() {
        let readable = unit_result(fs::read_dir(path));
        let probe = Path::new(path).join(format!(".splash-probe-{}", std::process::id()));
        let writable = match OpenOptions::new().write(true).create_new(true).open(&probe) {
            Ok(f) => {
                drop(f);
                match fs::remove_file(&probe) {
                    Ok(()) => json!({"ok": true}),
                    Err(e) => json!({"ok": true, "remove_error": io_error_json(&e)}),
                }
            }
            Err(e) => json!({"ok": false, "error": io_error_json(&e)}),
        };
        (readable, writable)
    } else {
        let readable = unit_result(OpenOptions::new().read(true).open(path));
        // Opening for writing without truncating or writing changes nothing.
        let writable = unit_result(OpenOptions::new().write(true).open(path));
        (readable, writable)
    };
    let executable = match sys::access(&c, libc::X_OK) {
        Ok(()) => json!({"ok": true}),
        Err(e) => json!({"ok": false, "error": errno::json(e)}),
    };
    Ok(json!({
        "path": path,
        "exists": true,
        "symlink": lmeta.map(|l| l.file_type().is_symlink()).unwrap_or(false),
        "type": kind,
        "mode": format!("{:o}", m.mode() & 0o7777),
        "uid": m.uid(),
        "gid": m.gid(),
        "size": m.size(),
        "readable": readable,
        "writable": writable,
        "executable": executable,
    }))
}

/// `probe.write {path, bytes, remove?}`: writes `bytes` bytes in 1 MiB
/// chunks and reports how many were written and the errno that stopped it.
/// SIGXFSZ is ignored during the write, so RLIMIT_FSIZE shows as `EFBIG`.
pub fn write(input: &Value) -> Result<Value, String> {
    let path = str_field(input, "path")?;
    let bytes = u64_field(input, "bytes")?;
    if bytes > MAX_WRITE {
        return Err(format!(
            "`bytes` is over the probe's maximum of {MAX_WRITE}"
        ));
    }
    let remove = input
        .get("remove")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let previous = sys::set_sigxfsz(libc::SIG_IGN);
    let result = write_bytes(path, bytes);
    sys::set_sigxfsz(previous);
    let (written, error, stage) = result;
    let removed = if remove {
        Some(unit_result(fs::remove_file(path)))
    } else {
        None
    };
    Ok(json!({
        "path": path,
        "requested": bytes,
        "written": written,
        "ok": error.is_none(),
        "stage": stage,
        "error": error.as_ref().map(io_error_json),
        "removed": removed,
    }))
}

fn write_bytes(path: &str, bytes: u64) -> (u64, Option<std::io::Error>, Option<&'static str>) {
    let mut file = match OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => return (0, Some(e), Some("open")),
    };
    let chunk = vec![0x5a_u8; 1 << 20];
    let mut written = 0u64;
    while written < bytes {
        let want =
            usize::try_from((bytes - written).min(chunk.len() as u64)).unwrap_or(chunk.len());
        match file.write(&chunk[..want]) {
            Ok(0) => {
                return (
                    written,
                    Some(std::io::Error::from_raw_os_error(libc::ENOSPC)),
                    Some("write"),
                );
            }
            Ok(n) => written += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (written, Some(e), Some("write")),
        }
    }
    match file.sync_all() {
        Ok(()) => (written, None, None),
        Err(e) => (written, Some(e), Some("fsync")),
    }
}

/// The most files one `probe.create` will attempt.
const MAX_CREATE: u64 = 1 << 20;

/// `probe.create {dir, count}`: creates empty files `f0`, `f1`, ... in
/// `dir` until `count` exist or an error stops it, and reports how many were
/// created and the errno that stopped it (an inode limit shows as `EDQUOT`
/// or `ENOSPC`).
pub fn create(input: &Value) -> Result<Value, String> {
    let dir = Path::new(str_field(input, "dir")?);
    let count = u64_field(input, "count")?;
    if count > MAX_CREATE {
        return Err(format!(
            "`count` is over the probe's maximum of {MAX_CREATE}"
        ));
    }
    let mut created = 0u64;
    let mut error = None;
    while created < count {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(format!("f{created}")))
        {
            Ok(_) => created += 1,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Ok(json!({
        "dir": dir.display().to_string(),
        "requested": count,
        "created": created,
        "ok": error.is_none(),
        "error": error.as_ref().map(io_error_json),
    }))
}

/// `probe.exec {argv}`: spawns the program with no stdin, captures up to
/// 4 KiB of each output stream, and reports the exit status, the signal or
/// the errno of the failed exec.
pub fn exec(input: &Value) -> Result<Value, String> {
    let argv: Vec<&str> = input
        .get("argv")
        .and_then(Value::as_array)
        .ok_or("input needs a list `argv`")?
        .iter()
        .map(|v| v.as_str().ok_or("`argv` must hold strings"))
        .collect::<Result<_, _>>()?;
    let Some((program, args)) = argv.split_first() else {
        return Err("`argv` must not be empty".into());
    };
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Ok(json!({"argv": argv, "spawned": false, "error": io_error_json(&e)}));
        }
    };
    let stderr = child.stderr.take();
    let err_thread = std::thread::spawn(move || capture(stderr));
    let stdout = capture(child.stdout.take());
    let stderr = err_thread.join().unwrap_or_default();
    let status = child
        .wait()
        .map_err(|e| format!("failed to wait for `{program}`: {e}"))?;
    Ok(json!({
        "argv": argv,
        "spawned": true,
        "exit_code": status.code(),
        "signal": status.signal(),
        "stdout": stdout,
        "stderr": stderr,
    }))
}

fn capture(stream: Option<impl Read>) -> String {
    let Some(mut s) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = EXEC_CAPTURE.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The escape attempts `probe.try` knows.
pub const TRY_OPS: [&str; 11] = [
    "unshare-user",
    "unshare-net",
    "mount-tmpfs",
    "clone-newns",
    "ptrace-parent",
    "setns",
    "socket-inet",
    "chroot",
    "keyctl",
    "bpf",
    "io_uring",
];

/// `probe.try {op}`: attempts one escape and reports success or the step
/// and errno that stopped it (or the signal that killed the attempt).
pub fn try_op(input: &Value) -> Result<Value, String> {
    let op = str_field(input, "op")?;
    let outcome = match op {
        "unshare-user" => child(ChildOp::Unshare(libc::CLONE_NEWUSER))?,
        "unshare-net" => child(ChildOp::Unshare(libc::CLONE_NEWNET))?,
        "mount-tmpfs" => mount_tmpfs(input)?,
        "clone-newns" => sys::clone_newns().map_err(|e| format!("clone failed to run: {e}"))?,
        "ptrace-parent" => child(ChildOp::PtraceSeize {
            pid: sys::parent_pid(),
        })?,
        "setns" => {
            let path = input
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("/proc/self/ns/mnt");
            child(ChildOp::Setns {
                path: c_path(path)?,
            })?
        }
        "socket-inet" => {
            let (addr, port) = inet_target(input)?;
            child(ChildOp::SocketInet {
                addr,
                port,
                timeout_ms: 2000,
            })?
        }
        "chroot" => child(ChildOp::Chroot { path: c_path("/")? })?,
        "keyctl" => ChildOutcome::Reported(sys::keyctl_probe()),
        "bpf" => ChildOutcome::Reported(sys::bpf_probe()),
        "io_uring" => ChildOutcome::Reported(sys::io_uring_probe()),
        other => {
            return Err(format!(
                "unknown op `{other}`; known: {}",
                TRY_OPS.join(", ")
            ));
        }
    };
    Ok(describe(op, outcome))
}

/// The `socket-inet` target: `ip` (dotted IPv4) and `port`, or 1.1.1.1:53.
fn inet_target(input: &Value) -> Result<([u8; 4], u16), String> {
    let ip = match input.get("ip").and_then(Value::as_str) {
        None => [1, 1, 1, 1],
        Some(s) => s
            .parse::<std::net::Ipv4Addr>()
            .map_err(|_| format!("`ip` `{s}` is not an IPv4 address"))?
            .octets(),
    };
    let port = match input.get("port") {
        None => 53,
        Some(p) => p
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| "`port` is not a port number".to_owned())?,
    };
    Ok((ip, port))
}

/// `probe.http {socket, id, method, path, headers?, body?}`: one request
/// through the network broker's client, with the `probe.http` grant of the
/// session's manifest (the client refuses an id the grant does not hold
/// before it connects). `{socket, raw}` instead writes `raw` as one line
/// to the socket and returns the reply line, as a worker that skips the
/// client would.
pub fn http(input: &Value, manifest: &CapabilityManifest) -> Result<Value, String> {
    let socket = str_field(input, "socket")?;
    if let Some(raw) = input.get("raw").and_then(Value::as_str) {
        return Ok(raw_broker_exchange(socket, raw));
    }
    let grant = manifest
        .grant("probe.http")
        .ok_or_else(|| "the manifest has no `probe.http` grant".to_owned())?;
    let id = Token::new(str_field(input, "id")?).map_err(|e| format!("`id`: {e}"))?;
    let method: splash_broker::Method =
        serde_json::from_value(input.get("method").cloned().unwrap_or(json!("GET")))
            .map_err(|e| format!("`method`: {e}"))?;
    let mut request = splash_broker::Request::new(id, method, str_field(input, "path")?);
    if let Some(headers) = input.get("headers").and_then(Value::as_object) {
        for (k, v) in headers {
            request = request.header(k, v.as_str().unwrap_or_default());
        }
    }
    if let Some(body) = input.get("body").and_then(Value::as_str) {
        request = request.body(body);
    }
    let client = splash_broker::BrokerClient::new(socket).map_err(|e| e.to_string())?;
    Ok(match client.request(grant, &request) {
        Ok(r) => json!({"ok": true, "status": r.status, "headers": r.headers, "body": r.body}),
        Err(e) => json!({"ok": false, "error": e.to_string(), "kind": format!("{e:?}")}),
    })
}

fn raw_broker_exchange(socket: &str, raw: &str) -> Value {
    use std::io::BufRead;
    let attempt = || -> std::io::Result<String> {
        let stream = std::os::unix::net::UnixStream::connect(socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(70)))?;
        let mut w = &stream;
        w.write_all(raw.as_bytes())?;
        if !raw.ends_with('\n') {
            w.write_all(b"\n")?;
        }
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut reply = String::new();
        std::io::BufReader::new(&stream)
            .take(64 * 1024)
            .read_line(&mut reply)?;
        Ok(reply)
    };
    match attempt() {
        Ok(reply) => json!({"ok": true, "reply": reply}),
        Err(e) => json!({"ok": false, "error": io_error_json(&e)}),
    }
}

/// `probe.syscall {nr}`: one raw system call by number, every argument
/// zero, in a child: whether it returned, with which errno, or the signal
/// that killed the child (`SIGSYS` from a seccomp filter; `SIGKILL` when it
/// still ran after 2 s).
pub fn syscall(input: &Value) -> Result<Value, String> {
    let nr = u64_field(input, "nr")?;
    let nr = libc::c_long::try_from(nr).map_err(|_| format!("`nr` {nr} is too large"))?;
    let outcome = child(ChildOp::Syscall { nr })?;
    Ok(describe("syscall", outcome))
}

fn child(op: ChildOp) -> Result<ChildOutcome, String> {
    sys::in_child(&op).map_err(|e| format!("failed to run the attempt in a child: {e}"))
}

/// Mounts a 1 MiB tmpfs on a fresh directory (under the temporary
/// directory, or `path` from the input) and detaches it again, in a child.
fn mount_tmpfs(input: &Value) -> Result<ChildOutcome, String> {
    if let Some(p) = input.get("path").and_then(Value::as_str) {
        return child(ChildOp::MountTmpfs { target: c_path(p)? });
    }
    let dir = std::env::temp_dir().join(format!("splash-probe-mnt-{}", std::process::id()));
    match fs::create_dir(&dir) {
        Ok(()) => {
            let target = CString::new(dir.as_os_str().as_bytes())
                .map_err(|_| "temporary path contains a NUL byte".to_owned())?;
            let outcome = child(ChildOp::MountTmpfs { target });
            let _ = fs::remove_dir(&dir);
            outcome
        }
        // No writable scratch directory: try the mount over `/` of this
        // (sandboxed) mount namespace instead; the child detaches it at once.
        Err(_) => child(ChildOp::MountTmpfs {
            target: c_path("/")?,
        }),
    }
}

fn describe(op: &str, outcome: ChildOutcome) -> Value {
    match outcome {
        ChildOutcome::Reported(Ok(())) => json!({"op": op, "ok": true}),
        ChildOutcome::Reported(Err((stage, e))) => {
            json!({"op": op, "ok": false, "stage": stage, "error": errno::json(e)})
        }
        ChildOutcome::Signaled(sig) => {
            json!({"op": op, "ok": false, "stage": "killed", "signal": sig})
        }
        ChildOutcome::Exited(code) => {
            json!({"op": op, "ok": false, "stage": "exited", "exit_code": code})
        }
    }
}

/// `probe.spin {seconds}`: a busy loop for that long of wall time; stops
/// early when cancelled.
pub fn spin(input: &Value, cancel: &CancelSignal) -> Result<Value, ToolFailure> {
    let seconds = u64_field(input, "seconds")?;
    let start = Instant::now();
    let cpu_start = sys::thread_cpu_time();
    let limit = Duration::from_secs(seconds);
    let mut x: u64 = 0;
    while start.elapsed() < limit {
        if cancel.is_cancelled() {
            return Err(ToolFailure::Cancelled);
        }
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    Ok(json!({
        "seconds": seconds,
        "elapsed_ms": millis(start),
        "cpu_ms": u64::try_from(sys::thread_cpu_time().saturating_sub(cpu_start).as_millis()).unwrap_or(u64::MAX),
        "state": x & 0xff,
    }))
}

/// The most children one `probe.fork` starts.
const MAX_FORKS: u64 = 4096;

/// `probe.fork {max}`: forks up to `max` waiting children, stopping at the
/// first failed fork; reports how many started and the errno that stopped
/// it. Every child is released and reaped before the answer.
pub fn fork(input: &Value) -> Result<Value, String> {
    let max = u64_field(input, "max")?;
    if max > MAX_FORKS {
        return Err(format!("`max` is over the probe's maximum of {MAX_FORKS}"));
    }
    let max = u32::try_from(max).map_err(|_| "`max` is too large".to_owned())?;
    let (started, failure) =
        sys::fork_until_failure(max).map_err(|e| format!("fork loop failed: {e}"))?;
    Ok(json!({
        "max": max,
        "started": started,
        "error": failure.map(errno::json),
    }))
}

/// `probe.alloc {bytes}`: a child maps and touches `bytes` of anonymous
/// memory; reports whether it finished, or the signal that killed it.
pub fn alloc(input: &Value) -> Result<Value, String> {
    let bytes = u64_field(input, "bytes")?;
    if bytes > MAX_WRITE {
        return Err(format!(
            "`bytes` is over the probe's maximum of {MAX_WRITE}"
        ));
    }
    let bytes = usize::try_from(bytes).map_err(|_| "`bytes` is too large".to_owned())?;
    let outcome = sys::touch_in_child(bytes).map_err(|e| format!("fork failed: {e}"))?;
    Ok(describe("alloc", outcome))
}

/// `probe.sleep {ms}`: sleeps in steps of at most 5 ms; stops early when
/// cancelled.
pub fn sleep(input: &Value, cancel: &CancelSignal) -> Result<Value, ToolFailure> {
    let ms = u64_field(input, "ms")?;
    let start = Instant::now();
    let limit = Duration::from_millis(ms);
    loop {
        if cancel.is_cancelled() {
            return Err(ToolFailure::Cancelled);
        }
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(5)));
    }
    Ok(json!({"ms": ms, "elapsed_ms": millis(start)}))
}

fn millis(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// `probe.echo {input}`: returns `{"input": input}`, `input` unchanged (a
/// JSON payload must be an object or an array, so the value is wrapped).
pub fn echo(input: &Value) -> Result<Value, String> {
    let mut out = serde_json::Map::new();
    out.insert(
        "input".to_owned(),
        input.get("input").cloned().unwrap_or(Value::Null),
    );
    Ok(Value::Object(out))
}
