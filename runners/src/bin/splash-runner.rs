//! `splash-runner`: the one-hop runner. Applies any combination of resource
//! limits, the Landlock executable allowlist and the strict seccomp filter,
//! then executes the program in a single exec.
//!
//! ```text
//! splash-runner [--cpu-seconds N] [--address-space-bytes N]
//!     [--process-count N] [--open-files N] [--file-size-bytes N]
//!     [--allow PATH]... [--seccomp-fd N] -- PROGRAM [ARGS...]
//! ```
//!
//! At least one limit, `--allow` or `--seccomp-fd`. Landlock applies only
//! when at least one `--allow` is given, and then `PROGRAM` must be one of
//! the allowed paths. Every flag follows the rules of the two single-purpose
//! runners.
//!
//! Operation order before `execve`:
//!
//! 1. parse the command line (exit 64 on any usage error);
//! 2. with `--seccomp-fd N`: read, close and validate the program (exit 71
//!    for an unusable descriptor, 65 for a malformed program);
//! 3. with `--allow`: Landlock exactly as `splash-landlock-runner` (exit 71);
//! 4. mark every descriptor from 3 up close-on-exec (exit 71);
//! 5. with limits: `setrlimit` soft = hard in the order CPU, AS, NPROC,
//!    NOFILE, FSIZE, then `RLIMIT_CORE` = 0 (exit 71);
//! 6. with `--seccomp-fd`: set `no_new_privs` and install the filter (exit 71);
//! 7. `execv(PROGRAM, [PROGRAM, ARGS...])`, environment unchanged (exit 126,
//!    or 127 when `PROGRAM` does not exist).

fn main() {
    splash_runners::main(splash_runners::RunnerKind::Combined)
}
