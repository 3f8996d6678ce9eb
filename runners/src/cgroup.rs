//! `splash-cgroup-runner`: joins a prepared cgroup-v2 child, then executes
//! Bubblewrap. It runs on the host side only (it is never mounted into the
//! worker) and is started by the runtime as the first program of a launch.
//!
//! ```text
//! splash-cgroup-runner --cgroup-fd N [--keep-fd M]... [--identity UID:GID] -- PROGRAM [ARGS...]
//! ```
//!
//! The cgroup is handed over as an inherited *directory descriptor* `N` of
//! the child cgroup, not as a path: the runner never looks a cgroup path up,
//! and no cgroup path appears on any command line or in any environment.
//! Each `M` is a descriptor the program must inherit (Bubblewrap's
//! `--seccomp` program and its `--ro-bind-fd`/`--bind-fd` sources).
//!
//! # Operation order
//!
//! 1. parse the command line: `--cgroup-fd` exactly once, `--keep-fd` any
//!    number of times (at most [`MAX_KEEP`]), every number 3 or higher,
//!    no number twice, `PROGRAM` absolute (exit 64);
//! 2. check the descriptors: `N` is an open directory on a cgroup-v2
//!    filesystem (`fstatfs` magic `CGROUP2_SUPER_MAGIC`), and every `M` is
//!    open (exit 71);
//! 3. join: `openat(N, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOFOLLOW)`,
//!    write this process's pid in one `write`, close it, close `N` (exit 71);
//! 4. with `--identity`: switch to it (supplementary groups cleared,
//!    `setresgid`, `setresuid`, every real, effective and saved id read
//!    back), then ask again for the parent-death signal (`SIGKILL`), which
//!    the switch cleared, and check the parent is still the one it had
//!    (exit 71);
//! 5. mark every descriptor from 3 up close-on-exec (exit 71);
//! 6. clear close-on-exec on exactly the `--keep-fd` descriptors (exit 71);
//! 7. `execv(PROGRAM, [PROGRAM, ARGS...])`, environment unchanged (exit 127
//!    when `PROGRAM` does not exist, 126 otherwise).
//!
//! After step 3 every process the runner becomes or starts is in the cgroup:
//! Bubblewrap and every descendant are limited from their first instruction.
//! `PROGRAM` may be `/proc/self/fd/K` (a pinned Bubblewrap): `K` is not
//! kept, so it is closed by the exec that runs it.

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::args::{flag_value, parse_decimal};
use crate::{Failure, exit, fds, sys};

/// The binary name used in diagnostics.
pub const BINARY: &str = "splash-cgroup-runner";

/// The most `--keep-fd` descriptors accepted.
pub const MAX_KEEP: usize = 256;

/// `CGROUP2_SUPER_MAGIC`.
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// A parsed `splash-cgroup-runner` command line.
#[derive(Debug)]
pub struct CgroupInvocation {
    /// The child cgroup's directory descriptor.
    pub cgroup_fd: RawFd,
    /// Descriptors the program inherits, in command-line order.
    pub keep: Vec<RawFd>,
    /// The uid and gid to switch to after the join (`--identity UID:GID`).
    pub identity: Option<(u32, u32)>,
    /// The program (absolute).
    pub program: CString,
    /// The complete argument vector, `argv[0]` included.
    pub argv: Vec<CString>,
}

fn parse_fd(flag: &str, raw: &std::ffi::OsStr) -> Result<RawFd, Failure> {
    let value = parse_decimal(flag, raw)?;
    if value < 3 {
        return Err(Failure::usage(format!(
            "`{flag}` value `{value}` is a standard stream"
        )));
    }
    RawFd::try_from(value)
        .map_err(|_| Failure::usage(format!("`{flag}` value `{value}` is too large")))
}

/// Parses the arguments that follow the binary name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<CgroupInvocation, Failure> {
    let mut args = args.into_iter();
    let mut cgroup_fd = None;
    let mut keep: Vec<RawFd> = Vec::new();
    let mut identity = None;
    let mut saw_separator = false;
    while let Some(arg) = args.next() {
        if arg == "--" {
            saw_separator = true;
            break;
        }
        let flag = arg.display().to_string();
        match flag.as_str() {
            "--cgroup-fd" => {
                let fd = parse_fd(&flag, &flag_value(&mut args, &flag)?)?;
                if cgroup_fd.replace(fd).is_some() {
                    return Err(Failure::usage(format!("`{flag}` is given more than once")));
                }
            }
            "--keep-fd" => {
                let fd = parse_fd(&flag, &flag_value(&mut args, &flag)?)?;
                if keep.contains(&fd) {
                    return Err(Failure::usage(format!(
                        "`--keep-fd` descriptor `{fd}` is given more than once"
                    )));
                }
                if keep.len() == MAX_KEEP {
                    return Err(Failure::usage(format!(
                        "more than {MAX_KEEP} `--keep-fd` descriptors"
                    )));
                }
                keep.push(fd);
            }
            "--identity" => {
                let raw = flag_value(&mut args, &flag)?;
                let ids = parse_identity(&raw)?;
                if identity.replace(ids).is_some() {
                    return Err(Failure::usage(format!("`{flag}` is given more than once")));
                }
            }
            f if f.starts_with('-') => {
                return Err(Failure::usage(format!("unknown flag `{f}`")));
            }
            f => {
                return Err(Failure::usage(format!(
                    "unexpected argument `{f}` before `--`"
                )));
            }
        }
    }
    if !saw_separator {
        return Err(Failure::usage("missing `--` before the program".to_owned()));
    }
    let Some(cgroup_fd) = cgroup_fd else {
        return Err(Failure::usage("missing `--cgroup-fd`".to_owned()));
    };
    if keep.contains(&cgroup_fd) {
        return Err(Failure::usage(format!(
            "the cgroup descriptor `{cgroup_fd}` is also given to `--keep-fd`"
        )));
    }
    let Some(program) = args.next() else {
        return Err(Failure::usage("missing program after `--`".to_owned()));
    };
    if !program.as_bytes().starts_with(b"/") {
        return Err(Failure::usage(format!(
            "program `{}` is not an absolute path",
            program.display()
        )));
    }
    let mut argv = Vec::new();
    for arg in std::iter::once(program).chain(args) {
        let shown = arg.display().to_string();
        argv.push(
            CString::new(arg.into_vec())
                .map_err(|_| Failure::usage(format!("argument `{shown}` contains a NUL byte")))?,
        );
    }
    Ok(CgroupInvocation {
        cgroup_fd,
        keep,
        identity,
        program: argv[0].clone(),
        argv,
    })
}

/// `UID:GID`, both decimal, from 1 to 4294967294.
fn parse_identity(raw: &std::ffi::OsStr) -> Result<(u32, u32), Failure> {
    let text = raw.to_string_lossy();
    let bad = || {
        Failure::usage(format!(
            "`--identity` value `{text}` is not `UID:GID` of unprivileged ids"
        ))
    };
    let (u, g) = text.split_once(':').ok_or_else(bad)?;
    let id = |s: &str| -> Result<u32, Failure> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match s.parse::<u32>() {
            Ok(v) if v != 0 && v != u32::MAX => Ok(v),
            _ => Err(bad()),
        }
    };
    Ok((id(u)?, id(g)?))
}

/// Step 4: become `uid`/`gid` and keep the parent-death signal.
fn switch(uid: u32, gid: u32) -> Result<(), Failure> {
    let parent = sys::parent_pid();
    sys::switch_identity(uid, gid)
        .map_err(|e| Failure::setup(format!("switching to uid {uid} gid {gid} failed: {e}")))?;
    sys::set_parent_death_kill()
        .map_err(|e| Failure::setup(format!("failed to keep the parent-death signal: {e}")))?;
    if sys::parent_pid() != parent {
        return Err(Failure::setup("the launching process is gone".to_owned()));
    }
    Ok(())
}

/// Steps 2 and 3: check the cgroup descriptor, write this pid to its
/// `cgroup.procs`, close it.
fn join(cgroup_fd: RawFd) -> Result<(), Failure> {
    let fail = |what: String| Failure::setup(what);
    let dir: OwnedFd = sys::adopt_inherited_fd(cgroup_fd)
        .map_err(|e| fail(format!("cgroup descriptor `{cgroup_fd}` is not open: {e}")))?;
    let is_dir = sys::is_directory(dir.as_fd()).map_err(|e| {
        fail(format!(
            "failed to inspect cgroup descriptor `{cgroup_fd}`: {e}"
        ))
    })?;
    if !is_dir {
        return Err(fail(format!(
            "cgroup descriptor `{cgroup_fd}` is not a directory"
        )));
    }
    let magic = sys::fstatfs_type(dir.as_fd()).map_err(|e| {
        fail(format!(
            "failed to inspect cgroup descriptor `{cgroup_fd}`: {e}"
        ))
    })?;
    if magic != CGROUP2_SUPER_MAGIC {
        return Err(fail(format!(
            "cgroup descriptor `{cgroup_fd}` is not on a cgroup-v2 filesystem (magic {magic:#x})"
        )));
    }
    let procs = sys::open_for_write_at(dir.as_fd(), c"cgroup.procs")
        .map_err(|e| fail(format!("failed to open `cgroup.procs`: {e}")))?;
    let pid = format!("{}\n", std::process::id());
    let mut file = std::fs::File::from(procs);
    let written = file
        .write(pid.as_bytes())
        .map_err(|e| fail(format!("failed to join the cgroup: {e}")))?;
    if written != pid.len() {
        return Err(fail("failed to join the cgroup: short write".to_owned()));
    }
    drop(file);
    drop(dir);
    Ok(())
}

/// The pipeline documented at the top of this module.
pub fn run(args: impl IntoIterator<Item = OsString>) -> Result<Infallible, Failure> {
    let invocation = parse(args)?;
    for &fd in &invocation.keep {
        if !sys::fd_is_open(fd) {
            return Err(Failure::setup(format!(
                "`--keep-fd` descriptor `{fd}` is not open"
            )));
        }
    }
    join(invocation.cgroup_fd)?;
    if let Some((uid, gid)) = invocation.identity {
        switch(uid, gid)?;
    }
    fds::mark_inherited_cloexec()?;
    for &fd in &invocation.keep {
        sys::clear_cloexec(fd)
            .map_err(|e| Failure::setup(format!("failed to pass descriptor `{fd}` on: {e}")))?;
    }
    let exec = sys::ExecVector::new(invocation.program, invocation.argv);
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

/// Runs the cgroup runner with this process's arguments; never returns.
pub fn main() -> ! {
    let failure = match run(std::env::args_os().skip(1)) {
        Err(failure) => failure,
        Ok(never) => match never {},
    };
    eprintln!("{BINARY}: error: {}", failure.message);
    std::process::exit(failure.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<CgroupInvocation, Failure> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn a_full_command_line() {
        let inv = p(&[
            "--cgroup-fd",
            "9",
            "--keep-fd",
            "4",
            "--keep-fd",
            "12",
            "--",
            "/proc/self/fd/5",
            "--unshare-all",
        ])
        .expect("valid");
        assert_eq!(inv.cgroup_fd, 9);
        assert_eq!(inv.keep, [4, 12]);
        assert_eq!(inv.program.as_bytes(), b"/proc/self/fd/5");
        assert_eq!(inv.argv.len(), 2);
        assert_eq!(inv.identity, None);
    }

    #[test]
    fn an_identity() {
        let inv = p(&["--cgroup-fd", "9", "--identity", "64000:64001", "--", "/x"]).expect("valid");
        assert_eq!(inv.identity, Some((64000, 64001)));
        for bad in [
            "0:1",
            "1:0",
            "4294967295:1",
            "1",
            "a:1",
            "1:",
            "+1:1",
            "1:2:3",
        ] {
            let err = p(&["--cgroup-fd", "9", "--identity", bad, "--", "/x"]).expect_err(bad);
            assert!(err.message.contains("UID:GID"), "{bad}: {}", err.message);
        }
        let err = p(&[
            "--cgroup-fd",
            "9",
            "--identity",
            "1:1",
            "--identity",
            "2:2",
            "--",
            "/x",
        ])
        .expect_err("twice");
        assert!(err.message.contains("more than once"), "{}", err.message);
    }

    #[test]
    fn malformed_command_lines() {
        for (args, why) in [
            (&["--", "/bin/true"][..], "missing `--cgroup-fd`"),
            (&["--cgroup-fd", "2", "--", "/x"], "standard stream"),
            (
                &["--cgroup-fd", "3", "--cgroup-fd", "4", "--", "/x"],
                "more than once",
            ),
            (
                &["--cgroup-fd", "3", "--keep-fd", "3", "--", "/x"],
                "also given",
            ),
            (
                &[
                    "--cgroup-fd",
                    "3",
                    "--keep-fd",
                    "4",
                    "--keep-fd",
                    "4",
                    "--",
                    "/x",
                ],
                "more than once",
            ),
            (&["--cgroup-fd", "3", "--", "x"], "not an absolute path"),
            (&["--cgroup-fd", "3", "/x"], "before `--`"),
            (&["--cgroup-fd", "3"], "missing `--`"),
            (&["--cgroup-fd", "03", "--", "/x"], "not a decimal"),
            (&["--allow", "/x", "--", "/x"], "unknown flag"),
            (&["--cgroup-fd", "3", "--"], "missing program"),
        ] {
            let err = p(args).expect_err(why);
            assert_eq!(err.code, exit::USAGE);
            assert!(err.message.contains(why), "{args:?}: {}", err.message);
        }
    }
}
