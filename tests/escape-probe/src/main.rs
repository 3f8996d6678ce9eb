//! `splash-escape-probe`: tries every known way out of a Splash sandbox and
//! prints one JSON line per attempt on stdout. It speaks no protocol and
//! needs nothing but itself (it is linked statically for the battery), so it
//! runs as the worker of any policy.
//!
//! ```text
//! splash-escape-probe list                 # the attempts, their layers and controls
//! splash-escape-probe all [OPTIONS]        # every attempt, each in its own forked child
//! splash-escape-probe one NAME [OPTIONS]   # one attempt in this process (for
//!                                          # strict allowlists, where fork is not listed)
//! splash-escape-probe marker               # exits 42: the program the exec attempts run
//! splash-escape-probe exec-as UID PROGRAM ARGS...
//!                                          # a launch wrapper: drops to UID (and the
//!                                          # same gid, no groups) and executes PROGRAM
//! ```
//!
//! `exec-as` is how the battery launches a sandbox as an unprivileged user:
//! it runs on the host before bwrap, never inside a sandbox. When PROGRAM is
//! `/proc/self/fd/N` (the launcher's pinned bwrap) it marks N close-on-exec
//! first, so neither bwrap nor the worker inherits it.
//!
//! Options: `--only A,B` (with `all`), `--canary PID` (the host process the
//! signal attempt aims at), `--port N` (a host loopback TCP listener),
//! `--abstract NAME` (a host abstract unix socket), `--host-hex HEX` (a host
//! path, hex-encoded so it never appears in the probe's own command line),
//! `--scratch PATH` (a tmpfs root to fill), `--control` (control mode: the
//! signal attempt signals the canary by pid instead of `kill(-1)`),
//! `--lower-nofile` (lower this process's own open-file limit first, so a
//! control can show a pid 1 with weaker limits than the worker).
//!
//! `all` first prints `{"ids": {"uid", "gid"}}`, then `{"devices": {NAME:
//! {"uid", "gid", "rdev", "works"}}}` for the `/dev` nodes bwrap binds. A result line is `{"attempt", "result", "errno"?, "signal"?, "code"?,
//! "detail"?}` with `result` one of `ok` (it worked), `reached` (the kernel
//! got past its permission checks and failed later, on purpose-invalid
//! arguments), `denied`, `n/a`, `sent` (a signal; the host decides),
//! `killed`, `exit` or `timeout`. Nothing is written to stderr. `all` and
//! `one` first read stdin to its end (a launcher's bootstrap preamble, which
//! the probe ignores).

#![no_main]

mod attempts;
mod json;
#[expect(
    unsafe_code,
    reason = "the probe's raw system calls and its C entry point"
)]
mod sys;

use std::ffi::c_int;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use attempts::{ATTEMPTS, Attempt, Outcome};

/// Exit status of `marker`, the program the exec attempts try to run.
pub const MARKER_EXIT: c_int = 42;

/// How long one forked attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// Options shared by every attempt.
#[derive(Debug, Default)]
pub struct Ctx {
    pub canary: Option<i32>,
    pub port: Option<u16>,
    pub abstract_name: Option<String>,
    pub host_path: Option<String>,
    pub scratch: Option<String>,
    pub control: bool,
    /// The descriptor the forked child reports through (not a leak).
    pub report_fd: Option<c_int>,
}

fn parse(args: &[String]) -> Result<(Ctx, Option<Vec<String>>, bool), String> {
    let mut ctx = Ctx::default();
    let mut only = None;
    let mut lower = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--canary" => ctx.canary = Some(value()?.parse().map_err(|_| "bad --canary")?),
            "--port" => ctx.port = Some(value()?.parse().map_err(|_| "bad --port")?),
            "--abstract" => ctx.abstract_name = Some(value()?),
            "--host-hex" => ctx.host_path = Some(unhex(&value()?).ok_or("bad --host-hex")?),
            "--scratch" => ctx.scratch = Some(value()?),
            "--only" => only = Some(value()?.split(',').map(str::to_owned).collect()),
            "--control" => ctx.control = true,
            "--lower-nofile" => lower = true,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok((ctx, only, lower))
}

fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn print_line(line: &str) {
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    sys::write_all(1, &bytes);
}

/// The program: called from the C `main` in `sys`.
pub fn run() -> c_int {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(mode) = args.first() else {
        print_line(r#"{"error":"usage: splash-escape-probe list|all|one NAME|marker"}"#);
        return 2;
    };
    match mode.as_str() {
        "marker" => MARKER_EXIT,
        "exec-as" => exec_as(&args[1..]),
        "list" => {
            for a in ATTEMPTS {
                print_line(&json::attempt_entry(a));
            }
            0
        }
        "all" | "one" => {
            let (name, rest) = if mode == "one" {
                match args.get(1) {
                    Some(n) => (Some(n.as_str()), &args[2..]),
                    None => return usage_error("one needs an attempt name"),
                }
            } else {
                (None, &args[1..])
            };
            let (ctx, only, lower) = match parse(rest) {
                Ok(p) => p,
                Err(e) => return usage_error(&e),
            };
            // The launcher writes its bootstrap preamble to stdin and closes
            // it; read it to the end (and ignore it) so that the launcher
            // never writes into a pipe whose reader already exited.
            let mut buf = [0u8; 4096];
            while matches!(sys::read(sys::stdin(), &mut buf), Ok(n) if n > 0) {}
            // Who the probe is, so the host can check the run's user (not
            // in `one`: a strict list need not allow getuid).
            if name.is_none() {
                let (uid, gid) = sys::ids();
                print_line(&format!("{{\"ids\":{{\"uid\":{uid},\"gid\":{gid}}}}}"));
                print_line(&attempts::device_report());
            }
            if lower {
                // Best effort: the control then shows the pid 1 comparison.
                let _ = sys::setrlimit(libc::RLIMIT_NOFILE as c_int, 64, 64);
            }
            match name {
                Some(n) => match ATTEMPTS.iter().find(|a| a.name == n) {
                    Some(a) => {
                        let outcome = (a.run)(&ctx);
                        print_line(&json::result(a.name, &outcome));
                        0
                    }
                    None => usage_error(&format!("no attempt `{n}`")),
                },
                None => {
                    for a in ATTEMPTS {
                        if only
                            .as_ref()
                            .is_some_and(|o| !o.iter().any(|n| n == a.name))
                        {
                            continue;
                        }
                        print_line(&run_forked(a, &ctx));
                    }
                    0
                }
            }
        }
        other => usage_error(&format!("unknown mode `{other}`")),
    }
}

fn exec_as(args: &[String]) -> c_int {
    let (Some(uid), Some(program)) = (
        args.first().and_then(|u| u.parse::<u32>().ok()),
        args.get(1),
    ) else {
        return usage_error("exec-as UID PROGRAM ARGS...");
    };
    if let Some(fd) = program
        .strip_prefix("/proc/self/fd/")
        .and_then(|n| n.parse::<c_int>().ok())
        && let Err(e) = sys::set_cloexec(fd)
    {
        return usage_error(&format!("close-on-exec {fd}: {}", json::errno_name(e)));
    }
    if let Err((step, e)) = sys::drop_to(uid) {
        return usage_error(&format!("{step}: {}", json::errno_name(e)));
    }
    let Ok(argv) = args[1..]
        .iter()
        .map(|a| std::ffi::CString::new(a.as_str()))
        .collect::<Result<Vec<_>, _>>()
    else {
        return usage_error("an argument contains NUL");
    };
    let argv: Vec<&std::ffi::CStr> = argv.iter().map(|a| a.as_c_str()).collect();
    let e = sys::execve_with_environment(argv[0], &argv);
    usage_error(&format!("exec {program}: {}", json::errno_name(e)))
}

fn usage_error(msg: &str) -> c_int {
    print_line(&format!("{{\"error\":{}}}", json::string(msg)));
    2
}

/// Runs `a` in a forked child with a timeout; the child reports its JSON
/// line through a pipe, and a kill or an exit without a report is described
/// by the parent.
fn run_forked(a: &Attempt, ctx: &Ctx) -> String {
    let (reader, writer) = match sys::pipe() {
        Ok(p) => p,
        Err(e) => return json::result(a.name, &Outcome::Denied(e, "pipe".into())),
    };
    let pid = match sys::fork() {
        Ok(sys::Fork::Child) => {
            drop(reader);
            if ctx.control {
                // The control has every capability: a private mount
                // namespace per attempt keeps a mount that worked from
                // changing what the next attempts see.
                let _ = sys::unshare(libc::CLONE_NEWNS);
                let _ = sys::mount(
                    c"none",
                    c"/",
                    c"none",
                    libc::MS_REC | libc::MS_PRIVATE,
                    None,
                );
                // A fresh procfs without Bubblewrap's read-only covers: the
                // control for the read-only /proc layer.
                let _ = sys::mount(c"proc", c"/proc", c"proc", 0, None);
            }
            let child_ctx = Ctx {
                report_fd: Some(writer.as_raw_fd()),
                canary: ctx.canary,
                port: ctx.port,
                abstract_name: ctx.abstract_name.clone(),
                host_path: ctx.host_path.clone(),
                scratch: ctx.scratch.clone(),
                control: ctx.control,
            };
            let outcome = (a.run)(&child_ctx);
            sys::write_all(
                writer.as_raw_fd(),
                json::result(a.name, &outcome).as_bytes(),
            );
            sys::exit_now(0);
        }
        Ok(sys::Fork::Parent(pid)) => pid,
        Err(e) => return json::result(a.name, &Outcome::Denied(e, "fork".into())),
    };
    drop(writer);
    let deadline = Instant::now() + ATTEMPT_TIMEOUT;
    let mut report = Vec::new();
    let mut buf = [0u8; 4096];
    let mut timed_out = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = c_int::try_from(left.as_millis()).unwrap_or(c_int::MAX);
        if ms == 0 {
            timed_out = true;
            break;
        }
        match sys::poll_readable(reader.as_fd(), ms) {
            Ok(true) => match sys::read(reader.as_fd(), &mut buf) {
                Ok(0) => break,
                Ok(n) => report.extend_from_slice(&buf[..usize::try_from(n).unwrap_or(0)]),
                Err(libc::EINTR) => {}
                Err(_) => break,
            },
            Ok(false) => {
                timed_out = true;
                break;
            }
            Err(libc::EINTR) => {}
            Err(_) => break,
        }
    }
    if timed_out {
        let _ = sys::kill(pid, libc::SIGKILL);
    }
    let ended = loop {
        match sys::wait(pid, false) {
            Ok(Some(e)) => break Some(e),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(None) => {
                timed_out = true;
                let _ = sys::kill(pid, libc::SIGKILL);
                let _ = sys::wait(pid, true);
                break None;
            }
            Err(_) => break None,
        }
    };
    attempts::remove_copies(pid);
    if timed_out {
        return json::status(a.name, "timeout", None);
    }
    if !report.is_empty() {
        return String::from_utf8_lossy(&report).into_owned();
    }
    match ended {
        Some(sys::Ended::Exited(MARKER_EXIT)) => json::result(
            a.name,
            &Outcome::Ok("the copied program ran (exit 42)".into()),
        ),
        Some(sys::Ended::Exited(code)) => json::status(a.name, "exit", Some(("code", code))),
        Some(sys::Ended::Signaled(sig)) => json::status(a.name, "killed", Some(("signal", sig))),
        None => json::status(a.name, "exit", None),
    }
}
