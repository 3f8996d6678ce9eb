//! Shared code of the fixed pre-exec runners.
//!
//! Three binaries run the same pipeline, [`main`], with a different
//! [`RunnerKind`] deciding which flags they accept:
//!
//! - `splash-limit-runner`: rlimits, core dumps off, close-on-exec sweep, exec;
//! - `splash-landlock-runner`: Landlock executable allowlist, sweep, optional
//!   strict seccomp filter, exec;
//! - `splash-runner`: any combination of the above in one exec.
//!
//! A fourth, `splash-cgroup-runner`, runs on the host side before
//! Bubblewrap: it joins a prepared cgroup-v2 child and executes Bubblewrap
//! ([`cgroup`], which documents its own operation order).
//!
//! # Operation order
//!
//! Every step before `execve`, in order; a step that is not selected is
//! skipped, a step that fails ends the runner with the listed exit code and
//! one diagnostic line on standard error:
//!
//! 1. parse the command line ([`args`]); usage error: exit 64;
//! 2. with `--seccomp-fd N`: check that `N` is an open pipe or regular file,
//!    read it to end of file (at most 4096 instructions), close it, and
//!    validate the size rules ([`filter`]); bad descriptor: 71, malformed
//!    program: 65;
//! 3. with `--allow`: query the Landlock ABI (must be at least 1), open every
//!    allowed path `O_PATH | O_NOFOLLOW | O_CLOEXEC` and require a regular file
//!    with an execute bit, create a ruleset handling only
//!    `LANDLOCK_ACCESS_FS_EXECUTE`, add one rule per file, close the files, set
//!    `no_new_privs` and read it back, `landlock_restrict_self`, close the
//!    ruleset ([`landlock`]); failure: 71;
//! 4. mark every descriptor from 3 up close-on-exec ([`fds`]); failure: 71;
//! 5. with at least one limit: set each selected `RLIMIT_*` (CPU, AS, NPROC,
//!    NOFILE, FSIZE, in that order) as soft and hard limit, then
//!    `RLIMIT_CORE` to 0 ([`limits`]); failure: 71;
//! 6. build the `execv` argument vector (no allocation happens after this);
//! 7. with `--seccomp-fd`: set `no_new_privs` and install the filter
//!    ([`filter`]); failure: 71;
//!
//!    or, with `--learn-fd N` instead (a learning run, [`learn`]; `N` was
//!    checked to be a socket right after step 2): install the recording
//!    filter with a new listener, hand the listener to the host over `N`
//!    and close both; failure: 71;
//! 8. `execv(PROGRAM, [PROGRAM, ARGS...])` with the environment unchanged;
//!    failure: 127 when the program does not exist, 126 otherwise.
//!
//! After step 7 the filter applies to the runner itself: if the final exec
//! fails, the diagnostic and exit may be stopped by the filter (the runner is
//! then killed by it). Either way the program does not start.

#![warn(missing_docs)]
pub mod args;
pub mod cgroup;
pub mod fds;
pub mod filter;
pub mod landlock;
pub mod learn;
pub mod limits;
mod sys;

use std::convert::Infallible;

pub use args::{Invocation, MAX_ALLOWED, RunnerKind};

/// Exit codes of the runners.
pub mod exit {
    /// Malformed command line (`EX_USAGE`).
    pub const USAGE: i32 = 64;
    /// Malformed seccomp program handed over through `--seccomp-fd`
    /// (`EX_DATAERR`).
    pub const DATA: i32 = 65;
    /// A setup step failed: limits, Landlock, descriptor sweep, filter install
    /// (`EX_OSERR`).
    pub const SETUP: i32 = 71;
    /// The program exists but could not be executed (includes a Landlock
    /// denial, `EACCES`).
    pub const EXEC_FAILED: i32 = 126;
    /// The program (or its ELF interpreter) does not exist (`ENOENT`).
    pub const NOT_FOUND: i32 = 127;
}

/// Why a runner stopped before its program started.
#[derive(Debug)]
pub struct Failure {
    /// The exit code, one of [`exit`].
    pub code: i32,
    /// One-line diagnostic.
    pub message: String,
}

impl Failure {
    pub(crate) fn usage(message: String) -> Self {
        Failure {
            code: exit::USAGE,
            message,
        }
    }
    fn data(message: String) -> Self {
        Failure {
            code: exit::DATA,
            message,
        }
    }
    pub(crate) fn setup(message: String) -> Self {
        Failure {
            code: exit::SETUP,
            message,
        }
    }
}

/// Runs the whole pipeline for `kind` with this process's arguments and
/// never returns: the process is replaced by the program or exits with a
/// code from [`exit`].
pub fn main(kind: RunnerKind) -> ! {
    let failure = match run(kind, std::env::args_os().skip(1)) {
        Err(failure) => failure,
        Ok(never) => match never {},
    };
    eprintln!("{}: error: {}", kind.binary_name(), failure.message);
    std::process::exit(failure.code)
}

/// The pipeline documented at the top of this crate.
fn run(
    kind: RunnerKind,
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<Infallible, Failure> {
    let invocation = args::parse(kind, args)?;
    let program = invocation
        .seccomp_fd
        .map(filter::read_program)
        .transpose()?;
    let learn = invocation.learn_fd.map(learn::adopt_socket).transpose()?;
    if !invocation.allowed.is_empty() {
        landlock::enforce(&invocation.allowed)?;
    }
    fds::mark_inherited_cloexec()?;
    if !invocation.limits.is_empty() {
        limits::apply(&invocation.limits)?;
    }
    let exec = sys::ExecVector::new(invocation.program, invocation.argv);
    if let Some(program) = &program {
        filter::install(program)?;
    }
    if let Some(socket) = learn {
        learn::install_and_hand_over(socket)?;
    }
    let error = exec.exec();
    let code = match error.raw_os_error() {
        Some(libc::ENOENT) => exit::NOT_FOUND,
        _ => exit::EXEC_FAILED,
    };
    Err(Failure {
        code,
        message: format!(
            "failed to execute `{}`: {error}",
            exec.program().to_string_lossy()
        ),
    })
}
