//! `splash-landlock-runner`: restricts execution to a fixed list of files
//! with Landlock, optionally installs a strict seccomp filter, then executes
//! one of the listed files.
//!
//! ```text
//! splash-landlock-runner --allow PATH [--allow PATH]... [--seccomp-fd N]
//!     -- PROGRAM [ARGS...]
//! ```
//!
//! One to 34 distinct `--allow` paths (32 explicit policy targets plus the
//! worker and the limit runner), each absolute and normalized; `PROGRAM` must
//! equal one of them byte for byte. `N` is an inherited descriptor (3 or
//! higher) holding the raw cBPF program.
//!
//! Operation order before `execve`:
//!
//! 1. parse the command line (exit 64 on any usage error);
//! 2. with `--seccomp-fd N`: require a pipe or regular file, read it to end
//!    of file (at most 4096 instructions), close it, check it is non-empty
//!    and a whole number of 8-byte instructions (exit 71 for an unusable
//!    descriptor, 65 for a malformed program);
//! 3. require Landlock ABI 1 or later; open each path `O_PATH | O_NOFOLLOW |
//!    O_CLOEXEC` and require a regular file with an execute bit (via the
//!    descriptor); create a ruleset handling only `LANDLOCK_ACCESS_FS_EXECUTE`;
//!    add one path-beneath rule per file; close the files; set and read back
//!    `no_new_privs`; `landlock_restrict_self`; close the ruleset (exit 71);
//! 4. mark every descriptor from 3 up close-on-exec (exit 71);
//! 5. with `--seccomp-fd`: install the filter (exit 71);
//! 6. `execv(PROGRAM, [PROGRAM, ARGS...])`, environment unchanged (exit 126
//!    for a denied or failed exec, 127 when `PROGRAM` does not exist).

fn main() {
    splash_runners::main(splash_runners::RunnerKind::Landlock)
}
