//! `splash-limit-runner`: sets resource limits, then executes a fixed program.
//!
//! ```text
//! splash-limit-runner [--cpu-seconds N] [--address-space-bytes N]
//!     [--process-count N] [--open-files N] [--file-size-bytes N]
//!     -- PROGRAM [ARGS...]
//! ```
//!
//! At least one limit; each at most once; values are canonical decimals,
//! neither 0 nor `RLIM_INFINITY`; `PROGRAM` is absolute.
//!
//! Operation order before `execve`:
//!
//! 1. parse the command line (exit 64 on any usage error);
//! 2. mark every descriptor from 3 up close-on-exec: `close_range(3, ~0,
//!    CLOSE_RANGE_CLOEXEC)`, or, only when the kernel lacks it, every entry
//!    of `/proc/self/fd` (which must be on procfs) (exit 71);
//! 3. `setrlimit` soft = hard for each selected limit in the order CPU, AS,
//!    NPROC, NOFILE, FSIZE, then `RLIMIT_CORE` = 0 (exit 71);
//! 4. `execv(PROGRAM, [PROGRAM, ARGS...])`, environment unchanged (exit 127
//!    when `PROGRAM` does not exist, 126 for any other exec failure).

fn main() {
    splash_runners::main(splash_runners::RunnerKind::Limit)
}
