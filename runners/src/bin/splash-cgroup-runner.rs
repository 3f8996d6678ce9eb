//! `splash-cgroup-runner`: joins the prepared child cgroup handed over as a
//! directory descriptor, then executes Bubblewrap with only the listed
//! descriptors.
//!
//! ```text
//! splash-cgroup-runner --cgroup-fd N [--keep-fd M]... -- PROGRAM [ARGS...]
//! ```
//!
//! Operation order before `execve` (see `splash_runners::cgroup`):
//!
//! 1. parse the command line (exit 64);
//! 2. `N` must be an open directory on cgroup v2, every `M` open (exit 71);
//! 3. write this pid to `N`'s `cgroup.procs`, close it and `N` (exit 71);
//! 4. mark every descriptor from 3 up close-on-exec (exit 71);
//! 5. clear close-on-exec on the `--keep-fd` descriptors (exit 71);
//! 6. `execv(PROGRAM, [PROGRAM, ARGS...])`, environment unchanged (exit 126,
//!    or 127 when `PROGRAM` does not exist).

fn main() {
    splash_runners::cgroup::main()
}
