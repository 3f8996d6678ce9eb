//! `splash-probe`: a protocol-v5 worker that reports what it can see and do
//! from inside the sandbox.
//!
//! It reads the bootstrap preamble from stdin, authenticates `open_session`
//! and then answers the tools its manifest grants:
//!
//! | tool | input | result |
//! |---|---|---|
//! | `probe.report` | `{"statfs": [paths]}` (optional) | ids, maps, cwd, environment, capabilities, no_new_privs, seccomp, fds, mounts, interfaces, limits, namespaces, cgroup, hostname, statfs |
//! | `probe.path` | `{"path"}` | exists, type, readable, writable (create and remove a file for a directory), executable |
//! | `probe.write` | `{"path", "bytes", "remove"?}` | bytes written and the errno that stopped the write |
//! | `probe.create` | `{"dir", "count"}` | files created and the errno that stopped the creation |
//! | `probe.exec` | `{"argv"}` | exit status or signal, or the errno of the failed exec |
//! | `probe.try` | `{"op"}` | success or the failing step and errno of one escape attempt |
//! | `probe.syscall` | `{"nr"}` | one raw system call with zero arguments, in a child: success, errno or signal |
//! | `probe.http` | `{"socket", "id", "method", "path", ...}` | one request through the network broker's client |
//! | `probe.spin` | `{"seconds"}` | a busy loop (cancellable); wall and CPU time |
//! | `probe.fork` | `{"max"}` | how many waiting children could be forked, and the errno that stopped it |
//! | `probe.alloc` | `{"bytes"}` | whether a child could touch that much memory, or the signal that killed it |
//! | `probe.sleep` | `{"ms"}` | a sleep (cancellable) |
//! | `probe.echo` | `{"input"}` | `{"input"}`, unchanged |
//!
//! Two flags make it a hostile worker for the host's stop tests:
//! `--orphan` clears the parent-death signal Bubblewrap gave it (so killing
//! Bubblewrap alone no longer ends it), and `--linger` keeps it running
//! after the session ends (it ignores `close_session` and end of input).
//!
//! With `--journal DIR` the probe keeps an operation journal in `DIR` (a
//! read-write root of its policy) and serves `dispatch_operation` for the
//! tools in [`DURABLE`] and `reconcile_operation` from that journal; without
//! it every durable request ends the session.
//!
//! It works the same outside any sandbox, for control runs. Nothing but
//! protocol frames is written to stdout; diagnostics go to stderr.

mod errno;
mod report;
#[expect(
    unsafe_code,
    reason = "the probe's raw system calls: ids, statfs, fork, namespaces, mounts, sockets, keyctl, bpf, io_uring"
)]
mod sys;
mod tools;

use std::process::ExitCode;

use serde_json::Value;
use splash_protocol::{CancelSignal, CapabilityManifest, Journal, Token, ToolFailure, Worker};

/// The tools the probe has handlers for; a manifest that grants any other
/// tool is refused when the session opens.
const TOOLS: [&str; 13] = [
    "probe.report",
    "probe.path",
    "probe.write",
    "probe.create",
    "probe.exec",
    "probe.try",
    "probe.syscall",
    "probe.http",
    "probe.spin",
    "probe.fork",
    "probe.alloc",
    "probe.sleep",
    "probe.echo",
];

/// The tools served as durable operations when the probe keeps a journal.
const DURABLE: [&str; 2] = ["probe.sleep", "probe.echo"];

/// The tools that stop early when the host cancels them.
const CANCELLABLE: [&str; 2] = ["probe.spin", "probe.sleep"];

fn dispatch(
    tool: &Token,
    input: Value,
    manifest: &CapabilityManifest,
    cancel: &CancelSignal,
) -> Result<Value, ToolFailure> {
    let result = match tool.as_str() {
        "probe.report" => report::report(&input),
        "probe.path" => tools::path(&input),
        "probe.write" => tools::write(&input),
        "probe.create" => tools::create(&input),
        "probe.exec" => tools::exec(&input),
        "probe.try" => tools::try_op(&input),
        "probe.syscall" => tools::syscall(&input),
        "probe.http" => tools::http(&input, manifest),
        "probe.spin" => return tools::spin(&input, cancel),
        "probe.sleep" => return tools::sleep(&input, cancel),
        "probe.echo" => tools::echo(&input),
        "probe.fork" => tools::fork(&input),
        "probe.alloc" => tools::alloc(&input),
        other => Err(format!("the probe has no tool `{other}`")),
    };
    result.map_err(ToolFailure::Error)
}

fn main() -> ExitCode {
    if std::env::args_os().nth(1).is_some_and(|a| a == "--version") {
        eprintln!("splash-probe {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let mut args = std::env::args_os().skip(1);
    let mut journal = None;
    let mut linger = false;
    while let Some(arg) = args.next() {
        if arg == "--journal" && journal.is_none() {
            let Some(dir) = args.next() else {
                return usage();
            };
            match Journal::open(dir.as_ref()) {
                Ok(j) => journal = Some(j),
                Err(e) => {
                    eprintln!("splash-probe: {e}");
                    return ExitCode::from(2);
                }
            }
        } else if arg == "--orphan" {
            if let Err(e) = sys::clear_parent_death_signal() {
                eprintln!("splash-probe: PR_SET_PDEATHSIG: {e}");
                return ExitCode::from(2);
            }
        } else if arg == "--linger" {
            linger = true;
        } else {
            return usage();
        }
    }
    let worker = match Worker::from_stdio(&TOOLS) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("splash-probe: failed to start the session: {e}");
            return ExitCode::from(2);
        }
    };
    let worker = match journal {
        Some(journal) => worker.with_journal(journal, &DURABLE),
        None => worker,
    };
    let served = worker.serve_cancellable(&CANCELLABLE, dispatch);
    if linger {
        // Outlives its session for as long as nothing kills it.
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("splash-probe: session failed: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("splash-probe: usage: splash-probe [--journal DIR] [--orphan] [--linger]");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::{CANCELLABLE, DURABLE, TOOLS};

    /// Durable and cancellable tools are tools the probe serves.
    #[test]
    fn durable_and_cancellable_tools_are_declared() {
        for tool in DURABLE.iter().chain(&CANCELLABLE) {
            assert!(TOOLS.contains(tool), "{tool}");
        }
    }

    /// Every tool `dispatch` serves is declared, and nothing else is: a
    /// handler missing from `TOOLS` would make the probe refuse a manifest
    /// that grants it.
    #[test]
    fn declared_tools_are_exactly_the_dispatched_ones() {
        let source = include_str!("main.rs");
        let body = &source[source.find("fn dispatch(").expect("dispatch")..];
        let body = &body[..body.find("\n}\n").expect("end of dispatch")];
        let mut served: Vec<&str> = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"'))
            .filter_map(|l| l.split_once("\" =>").map(|(name, _)| name))
            .collect();
        served.sort_unstable();
        let mut declared = TOOLS.to_vec();
        declared.sort_unstable();
        assert_eq!(served, declared);
    }
}
