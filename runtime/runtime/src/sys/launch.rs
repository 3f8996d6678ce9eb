//! The launch: `clone(2)` with `CLONE_VM | CLONE_VFORK | CLONE_PIDFD` and
//! `execve(2)`, and the descriptor hook of a `std::process::Command`.
#![expect(
    unsafe_code,
    reason = "the launch itself and the forked child's descriptor hook"
)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use rustix::fs::{self, Mode, OFlags};

use super::process::wait_child;

/// Installs the one `pre_exec` hook of the runtime on `command`.
///
/// In the forked child, after the standard streams are in place and
/// immediately before `execve`, the hook:
///
/// 1. marks every descriptor from 3 upward close-on-exec with
///    `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`, so a descriptor that some
///    other thread opened without `O_CLOEXEC` cannot leak into Bubblewrap;
/// 2. clears close-on-exec on exactly the descriptors in `inherit` with
///    `fcntl(fd, F_SETFD, 0)`.
///
/// Those are the only calls it makes; both are async-signal-safe. It does not
/// allocate: `inherit` is moved into the closure before the fork and only
/// read afterwards. The parent's copies of the `inherit` descriptors stay
/// close-on-exec, so another thread's concurrent launch can never receive
/// them. Any failure aborts the launch (`spawn` returns the error).
pub fn install_child_descriptor_hook(command: &mut Command, inherit: Vec<RawFd>) {
    let hook = move || -> io::Result<()> {
        // SAFETY: close_range only changes descriptor flags in this (child)
        // process; it is async-signal-safe.
        if unsafe {
            libc::close_range(
                3,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        for &fd in &inherit {
            // SAFETY: fcntl(F_SETFD) on a descriptor number is
            // async-signal-safe; a closed number yields EBADF, not UB.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the closure only calls close_range and fcntl (both
    // async-signal-safe), reads a vector allocated before the fork, and
    // builds `io::Error` values from errno without allocating.
    unsafe {
        command.pre_exec(hook);
    }
}

/// A process started by [`spawn_child`]: its pid, a pidfd made with the
/// process itself (`CLONE_PIDFD`, so it cannot name a reused pid), and the
/// parent's ends of its standard input and output pipes.
#[derive(Debug)]
pub struct SpawnedChild {
    /// The child's pid.
    pub pid: u32,
    /// A pidfd for the child (close-on-exec).
    pub pidfd: OwnedFd,
    /// The write end of the child's standard input (close-on-exec).
    pub stdin: OwnedFd,
    /// The read end of the child's standard output (close-on-exec).
    pub stdout: OwnedFd,
}

/// Everything the child of [`spawn_child`] reads and the one thing it
/// writes. It lives on the parent's stack; the parent is suspended
/// (`CLONE_VFORK`) for as long as the child uses it.
#[repr(C)]
struct ChildSetup {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    /// Sources of the child's descriptors 0, 1 and 2 (all at least 3).
    stdio: [libc::c_int; 3],
    inherit: *const RawFd,
    inherit_len: usize,
    /// The parent's pid: the child checks it still has that parent after
    /// it asked for its parent-death signal.
    parent: libc::pid_t,
    /// The `errno` of the step that failed, or 0 (written by the child).
    error: libc::c_int,
    /// The uid and gid to switch to before the exec, or `None`.
    identity: Option<(u32, u32)>,
    /// Set by the child when the identity switch failed.
    identity_failed: bool,
    /// The child is the first process of a new pid namespace
    /// (`CLONE_NEWPID`), where `getppid` answers 0 whoever the parent is:
    /// it then reads its parent from `/proc/self/status` instead.
    own_pid_namespace: bool,
    /// With a user namespace of its own: its `uid_map` and `gid_map` lines
    /// (the parent's ids mapped to themselves), written by the child.
    uid_map: *const u8,
    uid_map_len: usize,
    gid_map: *const u8,
    gid_map_len: usize,
    /// Set by the child when a step of making its namespaces failed.
    namespace_failed: bool,
    /// The parent's pid as `/proc` numbers it (`/proc/self`), compared with
    /// the `PPid:` the child reads there.
    parent_in_proc: libc::pid_t,
}

/// The bytes of the child's own stack (it runs until `execve`).
const CHILD_STACK_BYTES: usize = 64 * 1024;
/// Signal numbers the child resets (the kernel's `_NSIG` is 64).
const LAST_SIGNAL: libc::c_int = 64;

/// The child of [`spawn_child`], running in the parent's memory on its own
/// stack with every signal blocked. It makes only async-signal-safe calls,
/// allocates nothing and never returns: it `execve`s, or records `errno`
/// and `_exit`s with 127.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    let setup = arg.cast::<ChildSetup>();
    // SAFETY: `arg` is the parent's `ChildSetup`, alive and unchanged while
    // the parent is suspended; every pointer in it refers to memory the
    // parent keeps alive until `clone` returns. Every call below is
    // async-signal-safe and touches only this process's own state (its
    // signal dispositions, descriptor table, working directory and mask).
    unsafe {
        let fail = |setup: *mut ChildSetup| -> ! {
            let errno = *libc::__errno_location();
            std::ptr::write_volatile(&raw mut (*setup).error, errno.max(1));
            libc::_exit(127)
        };
        // A handler of the parent must never run in the child (it shares
        // the parent's memory until the exec): reset every caught signal
        // to its default, and SIGPIPE too, as `std::process` does.
        for signal in 1..=LAST_SIGNAL {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let caught = old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN;
            if caught || signal == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                if libc::sigaction(signal, &default, std::ptr::null_mut()) != 0 {
                    fail(setup);
                }
            }
        }
        for (target, &source) in (*setup).stdio.iter().enumerate() {
            let target = target as libc::c_int;
            if libc::dup2(source, target) < 0 {
                fail(setup);
            }
        }
        if libc::chdir(c"/".as_ptr()) != 0 {
            fail(setup);
        }
        // As the descriptor hook of `install_child_descriptor_hook`:
        // nothing but the named descriptors crosses the exec.
        if libc::close_range(
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        ) < 0
        {
            fail(setup);
        }
        let inherit = std::slice::from_raw_parts((*setup).inherit, (*setup).inherit_len);
        for &fd in inherit {
            if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                fail(setup);
            }
        }
        // Pid 1 of a pid namespace of its own (`CLONE_NEWPID`), and of a
        // mount namespace of its own (`CLONE_NEWNS`, receiving the host's
        // mounts and sending none back) whose `/proc` is that pid
        // namespace's: Bubblewrap reads `/proc/PID` of the pids its own
        // `clone` returns, which the host's `/proc` would not number.
        // The host's `/proc` stays reachable through a descriptor for the
        // parent check below (close-on-exec).
        // With a user namespace of its own (a host without
        // `CAP_SYS_ADMIN`), the child first maps the host's uid and gid to
        // themselves (`setgroups` denied, as an unprivileged map requires),
        // which gives it the namespace's capabilities for the mounts; its
        // exec as that (non-zero) uid drops them again.
        let mut host_proc = -1;
        if (*setup).own_pid_namespace {
            host_proc = libc::open(
                c"/proc".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            let mapped = (*setup).uid_map.is_null()
                || (host_proc >= 0
                    && write_proc(host_proc, c"self/setgroups", b"deny")
                    && write_proc(
                        host_proc,
                        c"self/uid_map",
                        std::slice::from_raw_parts((*setup).uid_map, (*setup).uid_map_len),
                    )
                    && write_proc(
                        host_proc,
                        c"self/gid_map",
                        std::slice::from_raw_parts((*setup).gid_map, (*setup).gid_map_len),
                    ));
            if host_proc < 0
                || !mapped
                || libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    std::ptr::null(),
                ) != 0
                || libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) != 0
            {
                (*setup).namespace_failed = true;
                fail(setup);
            }
        }
        // The identity switch comes before the parent-death signal, which
        // the kernel clears on a change of credentials.
        if let Some((uid, gid)) = (*setup).identity {
            let errno = super::identity::switch_task_identity(uid, gid);
            if errno != 0 {
                (*setup).identity_failed = true;
                *libc::__errno_location() = errno;
                fail(setup);
            }
        }
        // SIGKILL when the thread that spawned it exits, and so when the
        // host dies by SIGKILL: the signal is kept across the exec (the
        // programs are not set-user-ID). A parent already gone before the
        // request took effect is caught by the `getppid` check.
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            fail(setup);
        }
        let parent_lives = if (*setup).own_pid_namespace {
            proc_parent(host_proc) == Some((*setup).parent_in_proc)
        } else {
            libc::getppid() == (*setup).parent
        };
        if !parent_lives {
            *libc::__errno_location() = libc::ESRCH;
            fail(setup);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        if libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
            fail(setup);
        }
        libc::execve((*setup).program, (*setup).argv, (*setup).envp);
        fail(setup)
    }
}

/// Writes `bytes` to `path` under the `/proc` directory `proc` in one
/// `write(2)`, as `uid_map` requires: async-signal-safe and allocation-free.
///
/// # Safety
///
/// Only `openat`, `write` and `close` on this process's own descriptor table.
unsafe fn write_proc(proc: RawFd, path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: a NUL-terminated path; the descriptor is this function's own.
    let fd = unsafe { libc::openat(proc, path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    // SAFETY: writes `bytes.len()` bytes from `bytes`.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(fd) };
    usize::try_from(written) == Ok(bytes.len())
}

/// The bytes of `/proc/self/status` the child reads (about 1.5 KiB; `PPid:`
/// is its seventh line).
const STATUS_BYTES: usize = 4096;

/// The child's parent as `self/status` of the `/proc` directory `proc`
/// names it (`PPid:`), read into a buffer on the child's stack:
/// async-signal-safe and allocation-free.
///
/// # Safety
///
/// Only `openat`, `read` and `close` on this process's own descriptor table.
unsafe fn proc_parent(proc: RawFd) -> Option<libc::pid_t> {
    let mut buf = [0u8; STATUS_BYTES];
    // SAFETY: a NUL-terminated path; the descriptor is this function's own.
    let fd = unsafe {
        libc::openat(
            proc,
            c"self/status".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let mut len = 0;
    while len < buf.len() {
        let rest = buf.get_mut(len..)?;
        // SAFETY: reads at most `rest.len()` bytes into `rest`.
        let n = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match usize::try_from(n) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(_) if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(fd) };
    status_parent(buf.get(..len)?)
}

/// The `PPid:` value of a `/proc/PID/status` text, without allocating.
fn status_parent(status: &[u8]) -> Option<libc::pid_t> {
    let mut lines = status.split(|&b| b == b'\n');
    let value = lines.find_map(|line| line.strip_prefix(b"PPid:"))?;
    let mut pid: libc::pid_t = 0;
    let mut digits = 0;
    for &b in value.iter().skip_while(|b| b.is_ascii_whitespace()) {
        if !b.is_ascii_digit() {
            break;
        }
        pid = pid
            .checked_mul(10)?
            .checked_add(libc::pid_t::from(b - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(pid)
}

/// The namespaces a launch starts Bubblewrap in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchNamespaces {
    /// This process's own.
    Host,
    /// A pid namespace and a mount namespace of its own (`CLONE_NEWPID |
    /// CLONE_NEWNS`), which needs `CAP_SYS_ADMIN`.
    Pid,
    /// The same, owned by a user namespace of its own that maps only this
    /// process's effective uid and gid, each to itself: what a process
    /// without `CAP_SYS_ADMIN` can make where unprivileged user namespaces
    /// are allowed.
    UserAndPid,
}

/// Making a launch's own namespaces failed ([`spawn_child_as`]).
#[derive(Debug, thiserror::Error)]
#[error("making the launch's own pid namespace failed: {0}")]
pub struct NamespaceRefused(#[source] io::Error);

/// A failure to make a launch's own namespaces, kind
/// [`io::ErrorKind::Unsupported`], carrying [`NamespaceRefused`].
fn namespace_error(source: io::Error) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, NamespaceRefused(source))
}

/// Whether `error` is [`spawn_child_as`]'s failure to make the launch's
/// own namespaces.
pub fn namespace_refused(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<NamespaceRefused>())
}

/// This process's pid as `/proc` numbers it (the target of `/proc/self`).
fn proc_self() -> io::Result<libc::pid_t> {
    let link = std::fs::read_link("/proc/self")?;
    link.to_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("/proc/self names {}", link.display())))
}

/// `fd` itself when it is not a standard stream's number, otherwise a
/// close-on-exec duplicate at 3 or above (so the child's `dup2` onto 0, 1
/// and 2 can never overwrite a source it still needs).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

/// Starts `program` with `args` (`argv[0]` is `program`), an empty
/// environment, `/` as its working directory, piped standard input and
/// output, standard error on `/dev/null`, default signal dispositions and
/// an empty signal mask; of this process's descriptors from 3 upward only
/// `inherit` stay open across the exec.
///
/// This is `posix_spawn`'s technique with the runtime's descriptor rule:
/// `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)` runs the child on a
/// stack of its own in this process's memory until its `execve`, so the
/// launch copies no page tables and leaves no copy-on-write faults behind
/// (a `fork` of a large host does both). Every signal is blocked around the
/// `clone`. An `execve` (or earlier) failure is the returned error, and the
/// child is reaped before it is returned.
#[cfg(test)]
pub fn spawn_child(program: &Path, args: &[String], inherit: &[RawFd]) -> io::Result<SpawnedChild> {
    spawn_child_as(program, args, inherit, None, LaunchNamespaces::Host)
}

/// [`spawn_child`], switching the child to `identity` (uid, gid) before
/// its exec ([`super::identity::switch_task_identity`]); a failed switch is
/// an error of kind [`io::ErrorKind::PermissionDenied`] naming the ids, and
/// nothing is executed. With [`LaunchNamespaces::Pid`] or
/// [`LaunchNamespaces::UserAndPid`] the child is the first process, pid 1,
/// of a new pid namespace with a mount namespace whose `/proc` is that pid
/// namespace's: when it dies, the kernel kills every other process of that
/// namespace and of every namespace nested in it. A failure to make them
/// is an error of kind [`io::ErrorKind::Unsupported`].
pub fn spawn_child_as(
    program: &Path,
    args: &[String],
    inherit: &[RawFd],
    identity: Option<(u32, u32)>,
    namespaces: LaunchNamespaces,
) -> io::Result<SpawnedChild> {
    use std::os::unix::ffi::OsStrExt;

    let invalid = || io::Error::from(io::ErrorKind::InvalidInput);
    let program = CString::new(program.as_os_str().as_bytes()).map_err(|_| invalid())?;
    let mut strings = Vec::with_capacity(args.len() + 1);
    strings.push(program.clone());
    for a in args {
        strings.push(CString::new(a.as_bytes()).map_err(|_| invalid())?);
    }
    let mut argv: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
    argv.push(std::ptr::null());
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let own_pid_namespace = namespaces != LaunchNamespaces::Host;
    let (uid_map, gid_map) = match namespaces {
        LaunchNamespaces::UserAndPid => {
            let uid = rustix::process::geteuid().as_raw();
            let gid = rustix::process::getegid().as_raw();
            (format!("{uid} {uid} 1\n"), format!("{gid} {gid} 1\n"))
        }
        LaunchNamespaces::Host | LaunchNamespaces::Pid => (String::new(), String::new()),
    };
    let map = |m: &String| {
        if m.is_empty() {
            std::ptr::null()
        } else {
            m.as_ptr()
        }
    };

    let (stdin_read, stdin_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let (stdout_read, stdout_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let null = fs::open(
        c"/dev/null",
        OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stdio = [
        above_stdio(stdin_read)?,
        above_stdio(stdout_write)?,
        above_stdio(null)?,
    ];
    let mut setup = ChildSetup {
        program: program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        stdio: [
            stdio[0].as_raw_fd(),
            stdio[1].as_raw_fd(),
            stdio[2].as_raw_fd(),
        ],
        inherit: inherit.as_ptr(),
        inherit_len: inherit.len(),
        parent: rustix::process::getpid().as_raw_nonzero().get(),
        error: 0,
        identity,
        identity_failed: false,
        own_pid_namespace,
        parent_in_proc: if own_pid_namespace { proc_self()? } else { 0 },
        uid_map: map(&uid_map),
        uid_map_len: uid_map.len(),
        gid_map: map(&gid_map),
        gid_map_len: gid_map.len(),
        namespace_failed: false,
    };
    // Left uninitialized: only the child writes it, and only its top pages
    // (zeroing all of it would touch every page).
    let mut stack: Vec<u8> = Vec::with_capacity(CHILD_STACK_BYTES);
    // The stack grows down from its 16-byte-aligned top.
    let top = stack.as_mut_ptr().wrapping_add(CHILD_STACK_BYTES);
    let top = top.wrapping_sub(top as usize % 16);
    let mut pidfd: libc::c_int = -1;
    let namespace = match namespaces {
        LaunchNamespaces::Host => 0,
        LaunchNamespaces::Pid => libc::CLONE_NEWPID | libc::CLONE_NEWNS,
        LaunchNamespaces::UserAndPid => {
            libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS
        }
    };

    // SAFETY: an all-zero `sigset_t` is a valid (empty) set.
    let mut previous: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `sigfillset`/`pthread_sigmask` only change this thread's
    // signal mask, which is restored right after the `clone`.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
    }
    // SAFETY: the child runs `child_main` on `stack` (alive and unused by
    // anything else until this call returns, which `CLONE_VFORK` delays
    // until the child has exec'd or exited) with `setup` and everything it
    // points to alive for the same time. The kernel writes the pidfd to
    // `pidfd` (`CLONE_PIDFD`).
    let pid = unsafe {
        libc::clone(
            child_main,
            top.cast::<libc::c_void>(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | namespace | libc::SIGCHLD,
            (&raw mut setup).cast::<libc::c_void>(),
            &raw mut pidfd,
        )
    };
    let cloned = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
    }
    drop(stack);
    if pid < 0 {
        if own_pid_namespace {
            return Err(namespace_error(cloned));
        }
        return Err(cloned);
    }
    // SAFETY: the kernel returned a new descriptor in `pidfd` that nothing
    // else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // SAFETY: the child has exec'd or exited (`CLONE_VFORK`), so it no
    // longer writes `setup`.
    let error = unsafe { std::ptr::read_volatile(&raw const setup.error) };
    if error != 0 {
        // The child exited with 127: reap it so that it is not a zombie.
        let _ = wait_child(pidfd.as_fd(), true);
        // SAFETY: as `error` above.
        let switch_failed = unsafe { std::ptr::read_volatile(&raw const setup.identity_failed) };
        // SAFETY: as `error` above.
        if unsafe { std::ptr::read_volatile(&raw const setup.namespace_failed) } {
            return Err(namespace_error(io::Error::from_raw_os_error(error)));
        }
        if let (true, Some((uid, gid))) = (switch_failed, identity) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "switching to uid {uid} gid {gid} failed: {}",
                    io::Error::from_raw_os_error(error)
                ),
            ));
        }
        return Err(io::Error::from_raw_os_error(error));
    }
    Ok(SpawnedChild {
        pid: pid.unsigned_abs(),
        pidfd,
        stdin: stdin_write,
        stdout: stdout_read,
    })
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::Read;

    use super::super::process::kill_child;
    use super::*;

    /// Runs `script` under `/bin/sh -c` through [`spawn_child`]; its standard
    /// output and its `wait(2)` status.
    fn run_shell(script: &str, inherit: &[RawFd]) -> (String, ExitStatus) {
        let child = spawn_child(
            Path::new("/bin/sh"),
            &["-c".to_owned(), script.to_owned()],
            inherit,
        )
        .expect("spawn /bin/sh");
        drop(child.stdin);
        let mut out = String::new();
        File::from(child.stdout)
            .read_to_string(&mut out)
            .expect("read the child's output");
        let status = wait_child(child.pidfd.as_fd(), true)
            .expect("waitid")
            .expect("a status after a blocking wait");
        (out, ExitStatus::from_raw(status))
    }

    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    #[test]
    fn the_parent_is_read_from_a_status_text() {
        let status = b"Name:\tsh\nUmask:\t0022\nState:\tR (running)\nTgid:\t41\nNgid:\t0\nPid:\t41\nPPid:\t7731\nTracerPid:\t0\n";
        assert_eq!(status_parent(status), Some(7731));
        assert_eq!(status_parent(b"PPid:\t0\n"), Some(0));
        for bad in [
            &b""[..],
            b"Pid:\t41\n",
            b"PPid:\t\n",
            b"PPid:\tx1\n",
            b"PPid:\t99999999999999999999\n",
        ] {
            assert_eq!(status_parent(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    /// The child is pid 1 of a pid namespace of its own (as host root, or
    /// in a user namespace of its own), and its death takes a process it
    /// left running with it; the control, without the namespace, leaves that
    /// process running.
    #[test]
    fn a_child_in_its_own_pid_namespace_takes_its_descendants_with_it() {
        use std::io::BufRead;

        let mut modes = vec![LaunchNamespaces::UserAndPid, LaunchNamespaces::Host];
        if super::super::process::has_sys_admin() {
            modes.push(LaunchNamespaces::Pid);
        } else {
            eprintln!("SKIP: CAP_SYS_ADMIN is needed for a pid namespace without a user namespace");
            assert!(
                std::env::var_os("SPLASH_REQUIRE_HOST").is_none(),
                "SPLASH_REQUIRE_HOST is set"
            );
        }
        for mode in modes {
            let own = mode != LaunchNamespaces::Host;
            // The shell starts a sleeper, prints its own pid and waits for
            // the end of its input.
            let child = spawn_child_as(
                Path::new("/bin/sh"),
                &[
                    "-c".to_owned(),
                    "sleep 30 </dev/null >/dev/null 2>&1 & echo $$; read x".to_owned(),
                ],
                &[],
                None,
                mode,
            )
            .expect("spawn");
            let mut line = String::new();
            std::io::BufReader::new(File::from(child.stdout))
                .read_line(&mut line)
                .expect("read");
            let seen: u32 = line.trim().parse().expect("$$");
            assert_eq!(seen == 1, own, "pid 1 only in its own namespace: {line}");
            let children =
                std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.pid))
                    .expect("children");
            let sleeper: u32 = children.trim().parse().expect("one child");
            let sleeper = super::super::process::pidfd_open(sleeper).expect("pidfd");
            drop(child.stdin);
            wait_child(child.pidfd.as_fd(), true).expect("reap");
            let gone =
                crate::sys::wait_readable(sleeper.as_fd(), std::time::Duration::from_millis(500))
                    .expect("poll");
            assert_eq!(
                gone, own,
                "the sleeper dies with its namespace's pid 1 only"
            );
            if !gone {
                kill_child(sleeper.as_fd()).expect("kill the control's sleeper");
            }
        }
    }

    #[test]
    fn a_spawned_child_sees_only_its_streams_and_the_named_descriptors() {
        // Two descriptors without close-on-exec, as another thread of a host
        // might open them: only the one named in `inherit` crosses the exec.
        let leaky = rustix::io::dup(File::open("/dev/null").expect("open"))
            .expect("dup without close-on-exec");
        let named = rustix::io::dup(File::open("/dev/null").expect("open"))
            .expect("dup without close-on-exec");
        let script = "for f in /proc/self/fd/*; do echo \"${f##*/}\"; done";
        let (out, status) = run_shell(script, &[named.as_raw_fd()]);
        assert!(status.success(), "{status:?}");
        let mut fds: Vec<i32> = out.lines().map(|l| l.parse().expect("a number")).collect();
        fds.sort_unstable();
        // The glob is expanded by the shell, which may hold one descriptor of
        // its own for the directory listing; it is not one of ours.
        assert!(fds.starts_with(&[0, 1, 2]), "{fds:?}");
        assert!(fds.contains(&named.as_raw_fd()), "{fds:?}");
        assert!(!fds.contains(&leaky.as_raw_fd()), "{fds:?}");
        // Control: the same descriptor is visible when it is named.
        let (out, _) = run_shell(script, &[leaky.as_raw_fd()]);
        assert!(
            out.lines().any(|l| l == leaky.as_raw_fd().to_string()),
            "{out}"
        );
    }

    #[test]
    fn a_spawned_child_starts_clean() {
        // The shell's builtins only: the environment is empty (no PATH).
        let script = "echo \"cwd=$(pwd)\"; \
            while read -r k v; do case \"$k\" in SigBlk:|SigCgt:) echo \"$k$v\";; esac; done < /proc/self/status; \
            echo \"err=$(echo x 1>&2)\"";
        let (out, status) = run_shell(script, &[]);
        assert!(status.success(), "{status:?}");
        assert!(out.contains("cwd=/\n"), "{out}");
        // Nothing blocked; the shell catches what it catches itself, but no
        // handler of this test process (which ignores SIGPIPE, as every Rust
        // program does) survives.
        assert!(out.contains("SigBlk:0000000000000000"), "{out}");
        // Standard error went to /dev/null, not into the output pipe.
        assert!(out.contains("err=\n"), "{out}");
        let (env, _) = run_shell("for v in $(export -p); do echo \"$v\"; done", &[]);
        assert!(!env.contains("PATH="), "{env}");
    }

    #[test]
    fn exit_codes_and_signals_come_back_as_wait_statuses() {
        let (_, status) = run_shell("exit 7", &[]);
        assert_eq!(status.code(), Some(7));
        let (_, status) = run_shell("kill -9 $$", &[]);
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        // A killed child is reaped through its pidfd.
        let child = spawn_child(
            Path::new("/bin/sh"),
            &["-c".to_owned(), "read -r x".to_owned()],
            &[],
        )
        .expect("spawn");
        assert_eq!(wait_child(child.pidfd.as_fd(), false).expect("poll"), None);
        kill_child(child.pidfd.as_fd()).expect("kill");
        let status = wait_child(child.pidfd.as_fd(), true)
            .expect("wait")
            .expect("status");
        assert_eq!(ExitStatus::from_raw(status).signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn a_failed_exec_is_the_error_and_the_child_is_reaped() {
        let err =
            spawn_child(Path::new("/nonexistent/program"), &[], &[]).expect_err("no such program");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        let err = spawn_child(Path::new("/dev/null"), &[], &[]).expect_err("not executable");
        assert_eq!(err.raw_os_error(), Some(libc::EACCES));
        // The failed children never exec'd, so a zombie of theirs would carry
        // this test binary's name; other tests' children run `sh`.
        let me = std::process::id().to_string();
        let own_zombies = std::fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
            .filter(|stat| {
                let Some((comm, rest)) = stat.rsplit_once(") ") else {
                    return false;
                };
                let fields: Vec<&str> = rest.split(' ').collect();
                fields.first() == Some(&"Z")
                    && fields.get(1) == Some(&me.as_str())
                    && !comm.ends_with("(sh")
            })
            .count();
        assert_eq!(own_zombies, 0, "a failed launch left a zombie");
        let err = spawn_child(Path::new("/bin/sh"), &["\0".to_owned()], &[])
            .expect_err("an argument with NUL");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
