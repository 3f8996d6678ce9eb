//! Every raw system call of the probe, each behind a safe function.
//!
//! Calls that could change the probe's own state if they succeeded (new
//! namespaces, mounts, chroot, setns, ptrace) run in a forked child that
//! reports the failing step and errno over a pipe and exits; the probe
//! itself stays exactly as it was, so later probes see the same process.
//! The forked child holds only the forking thread (so `unshare` of a user
//! namespace is allowed there) and, because another thread of the probe may
//! hold a lock at the time of the fork, it only makes async-signal-safe raw
//! system calls on memory prepared before the fork, never allocates, and
//! leaves through `_exit`.

use std::ffi::{CStr, CString};
use std::io::{self, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};

/// The real and effective ids of the probe.
#[derive(Debug, Clone, Copy)]
pub struct Ids {
    pub uid: u32,
    pub euid: u32,
    pub gid: u32,
    pub egid: u32,
}

pub fn ids() -> Ids {
    // SAFETY: these calls take no arguments, cannot fail and touch no memory
    // of ours.
    unsafe {
        Ids {
            uid: libc::getuid(),
            euid: libc::geteuid(),
            gid: libc::getgid(),
            egid: libc::getegid(),
        }
    }
}

pub fn parent_pid() -> i32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::getppid() }
}

/// Clears this process's parent-death signal (`prctl(PR_SET_PDEATHSIG, 0)`),
/// the signal Bubblewrap's `--die-with-parent` set.
pub fn clear_parent_death_signal() -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG with 0 only changes this process's
    // parent-death signal; the trailing arguments are unused.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 0, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The UTS node name (the hostname in this UTS namespace).
pub fn nodename() -> io::Result<String> {
    let mut uts = MaybeUninit::<libc::utsname>::zeroed();
    // SAFETY: `uts` points to writable memory of the right size and type.
    let rc = unsafe { libc::uname(uts.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: uname succeeded, so the struct is initialized and `nodename`
    // is NUL-terminated within its array.
    let name = unsafe { CStr::from_ptr(uts.assume_init_ref().nodename.as_ptr()) };
    Ok(name.to_string_lossy().into_owned())
}

/// The fields of `statfs(2)` the probe reports.
#[derive(Debug, Clone, Copy)]
pub struct FsStat {
    pub fs_type: i64,
    pub block_size: u64,
    pub blocks: u64,
    pub blocks_free: u64,
    pub blocks_available: u64,
    pub files: u64,
    pub files_free: u64,
    pub flags: u64,
}

/// `statfs(2)` for the filesystem type and `statvfs(3)` for sizes and the
/// mount flags (`ST_RDONLY` is bit 0).
pub fn statfs(path: &CStr) -> io::Result<FsStat> {
    let mut st = MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `path` is NUL-terminated and `st` is writable memory of the
    // right type.
    if unsafe { libc::statfs(path.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statfs succeeded and filled the struct.
    let st = unsafe { st.assume_init() };
    let mut vfs = MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: as above, for statvfs.
    if unsafe { libc::statvfs(path.as_ptr(), vfs.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs succeeded and filled the struct.
    let vfs = unsafe { vfs.assume_init() };
    #[expect(
        clippy::unnecessary_cast,
        clippy::useless_conversion,
        reason = "the statfs and statvfs field types differ between architectures and libcs"
    )]
    Ok(FsStat {
        fs_type: st.f_type as i64,
        block_size: vfs.f_frsize as u64,
        blocks: u64::from(vfs.f_blocks),
        blocks_free: u64::from(vfs.f_bfree),
        blocks_available: u64::from(vfs.f_bavail),
        files: u64::from(vfs.f_files),
        files_free: u64::from(vfs.f_ffree),
        flags: vfs.f_flag as u64,
    })
}

/// `access(2)` with the given mode; the errno on failure.
pub fn access(path: &CStr, mode: libc::c_int) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated; access only reads it.
    let rc = unsafe { libc::access(path.as_ptr(), mode) };
    if rc == 0 { Ok(()) } else { Err(errno()) }
}

/// Sets the disposition of SIGXFSZ and returns the previous one, so a write
/// past RLIMIT_FSIZE reports EFBIG instead of killing the probe.
pub fn set_sigxfsz(handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: SIG_IGN and SIG_DFL (or a value returned by an earlier call)
    // are valid dispositions; no handler code runs.
    unsafe { libc::signal(libc::SIGXFSZ, handler) }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The result of an attempt: `Ok` or the failing step and its errno.
pub type Attempt = Result<(), (&'static str, i32)>;

/// What happened to a forked attempt.
#[derive(Debug, Clone, Copy)]
pub enum ChildOutcome {
    /// The child ran to the end and reported.
    Reported(Attempt),
    /// The child was killed by a signal (for example SIGSYS from seccomp).
    Signaled(i32),
    /// The child exited without a report.
    Exited(i32),
}

/// An operation run in a forked child. Every string is prepared before the
/// fork so the child does not allocate.
#[derive(Debug)]
pub enum ChildOp {
    Unshare(libc::c_int),
    MountTmpfs {
        target: CString,
    },
    Setns {
        path: CString,
    },
    Chroot {
        path: CString,
    },
    PtraceSeize {
        pid: i32,
    },
    /// One raw system call by number with every argument zero.
    Syscall {
        nr: libc::c_long,
    },
    /// A TCP connection attempt ([`socket_inet_connect`]), in a child so a
    /// filter that kills `socket` ends the child, not the probe.
    SocketInet {
        addr: [u8; 4],
        port: u16,
        timeout_ms: i32,
    },
}

/// Step names, indexed by the byte the child reports.
const STEPS: [&str; 12] = [
    "unshare",
    "mount",
    "umount",
    "open",
    "setns",
    "chroot",
    "ptrace",
    "syscall",
    "socket",
    "connect",
    "poll",
    "getsockopt",
];

fn step_index(step: &str) -> u8 {
    STEPS
        .iter()
        .position(|s| *s == step)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(u8::MAX)
}

/// What the child reports when `op` succeeded (never a step's index).
const CHILD_OK: u8 = u8::MAX - 1;

/// Runs `op` in a forked child and collects its report.
pub fn in_child(op: &ChildOp) -> io::Result<ChildOutcome> {
    let (mut reader, writer) = io::pipe()?;
    let write_fd = writer.as_raw_fd();
    // SAFETY: the child below only makes async-signal-safe raw system calls
    // on memory prepared before the fork and leaves through `_exit`, so no
    // lock another thread held at the fork is ever touched.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        let (step, err) = match child_op(op) {
            Ok(()) => (CHILD_OK, 0),
            Err((step, err)) => (step_index(step), err),
        };
        let b = err.to_le_bytes();
        let msg = [step, b[0], b[1], b[2], b[3]];
        // SAFETY: `msg` is a live 5-byte buffer and `write_fd` is the
        // pipe's write end inherited from the parent; `_exit` never
        // returns and runs no destructors or atexit handlers.
        unsafe {
            libc::write(write_fd, msg.as_ptr().cast(), msg.len());
            libc::_exit(0)
        }
    }
    drop(writer);
    let status = match op {
        ChildOp::SocketInet { timeout_ms, .. } => {
            let ms = u64::try_from(*timeout_ms).unwrap_or(0).saturating_add(2000);
            wait_deadline(pid, std::time::Duration::from_millis(ms))?
        }
        ChildOp::Syscall { .. } => wait_deadline(pid, std::time::Duration::from_secs(2))?,
        _ => wait(pid)?,
    };
    let mut msg = Vec::new();
    reader.read_to_end(&mut msg)?;
    if let [step, a, b, c, d] = msg[..] {
        let err = i32::from_le_bytes([a, b, c, d]);
        if step == CHILD_OK {
            return Ok(ChildOutcome::Reported(Ok(())));
        }
        let name = STEPS.get(usize::from(step)).copied().unwrap_or("unknown");
        return Ok(ChildOutcome::Reported(Err((name, err))));
    }
    Ok(status)
}

/// `op` itself, in the forked child: raw system calls on memory prepared
/// before the fork, nothing that allocates or locks. The step that failed
/// (one of [`STEPS`]) and its errno.
fn child_op(op: &ChildOp) -> Attempt {
    let check =
        |failed: bool, step: &'static str| if failed { Err((step, errno())) } else { Ok(()) };
    match op {
        ChildOp::Unshare(flags) => {
            // SAFETY: unshare takes a flag word only.
            check(unsafe { libc::unshare(*flags) } != 0, "unshare")
        }
        ChildOp::MountTmpfs { target } => {
            // SAFETY: every pointer is a NUL-terminated string that
            // outlives the call.
            let rc = unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    c"size=1m".as_ptr().cast(),
                )
            };
            check(rc != 0, "mount")?;
            // SAFETY: `target` is NUL-terminated; detaching our own fresh
            // mount.
            check(
                unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0,
                "umount",
            )
        }
        ChildOp::Setns { path } => {
            // SAFETY: `path` is NUL-terminated.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
            check(fd < 0, "open")?;
            // SAFETY: `fd` is the descriptor just opened; nstype 0 accepts
            // any namespace type.
            check(unsafe { libc::setns(fd, 0) } != 0, "setns")
        }
        ChildOp::Chroot { path } => {
            // SAFETY: `path` is NUL-terminated.
            check(unsafe { libc::chroot(path.as_ptr()) } != 0, "chroot")
        }
        ChildOp::PtraceSeize { pid } => {
            // PTRACE_SEIZE does not stop the tracee, and the tracee is
            // detached automatically when this child exits.
            // SAFETY: PTRACE_SEIZE with addr and data 0 reads and writes no
            // memory of ours.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_ptrace,
                    0x4206 as libc::c_long,
                    libc::c_long::from(*pid),
                    0 as libc::c_long,
                    0 as libc::c_long,
                )
            };
            check(rc != 0, "ptrace")
        }
        ChildOp::SocketInet {
            addr,
            port,
            timeout_ms,
        } => socket_inet_connect(*addr, *port, *timeout_ms),
        ChildOp::Syscall { nr } => {
            // SAFETY: every argument is zero, so a call that takes pointers
            // gets NULL, which the kernel rejects with EFAULT instead of
            // touching memory; a call that blocks is ended by the parent's
            // deadline (the child is killed).
            let rc = unsafe { libc::syscall(*nr, 0usize, 0usize, 0usize, 0usize, 0usize, 0usize) };
            check(rc < 0, "syscall")
        }
    }
}

/// Waits up to `limit` for `pid`; a child still running then is killed
/// (and reported as killed by `SIGKILL`).
fn wait_deadline(pid: libc::pid_t, limit: std::time::Duration) -> io::Result<ChildOutcome> {
    let start = std::time::Instant::now();
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid out pointer; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            return Ok(if libc::WIFSIGNALED(status) {
                ChildOutcome::Signaled(libc::WTERMSIG(status))
            } else {
                ChildOutcome::Exited(libc::WEXITSTATUS(status))
            });
        }
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        if start.elapsed() >= limit {
            // SAFETY: `pid` is our unreaped child, so the number cannot
            // name another process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return wait(pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Waits for `pid` and describes how it ended.
fn wait(pid: libc::pid_t) -> io::Result<ChildOutcome> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid out pointer; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    if libc::WIFSIGNALED(status) {
        Ok(ChildOutcome::Signaled(libc::WTERMSIG(status)))
    } else {
        Ok(ChildOutcome::Exited(libc::WEXITSTATUS(status)))
    }
}

/// Forks up to `max` children, stopping at the first failed `fork`.
/// Each child closes the pipe's write end and blocks reading it; once every
/// child exists, the write end is closed here, every child sees end of file
/// and exits, and all are reaped. Returns how many started and the errno
/// of the fork that failed, if one did.
pub fn fork_until_failure(max: u32) -> io::Result<(u32, Option<i32>)> {
    let (reader, writer) = io::pipe()?;
    let (read_fd, write_fd) = (reader.as_raw_fd(), writer.as_raw_fd());
    let mut pids: Vec<libc::pid_t> = Vec::with_capacity(usize::try_from(max).unwrap_or(0));
    let mut failure = None;
    for _ in 0..max {
        // SAFETY: the child only makes the async-signal-safe calls close,
        // read and _exit on descriptors and a stack byte that exist before
        // the fork, so no lock held by another thread is touched.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            failure = Some(errno());
            break;
        }
        if pid == 0 {
            let mut byte = 0u8;
            // SAFETY: see above; `byte` is a live one-byte buffer.
            unsafe {
                libc::close(write_fd);
                libc::read(read_fd, (&raw mut byte).cast(), 1);
                libc::_exit(0)
            }
        }
        pids.push(pid);
    }
    drop(writer);
    drop(reader);
    for pid in &pids {
        wait(*pid)?;
    }
    let started = u32::try_from(pids.len()).unwrap_or(u32::MAX);
    Ok((started, failure))
}

/// In a forked child, maps `bytes` of private anonymous memory and writes
/// one byte to every page. Reports `Ok` when the child touched it all, the
/// failing step (`mmap`) and errno, or the signal that killed the child
/// (SIGKILL from the memory cgroup's OOM killer).
pub fn touch_in_child(bytes: usize) -> io::Result<ChildOutcome> {
    // SAFETY: the child only calls mmap, writes to the fresh mapping and
    // leaves through _exit; all are async-signal-safe and use no memory
    // allocated after the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: an anonymous private mapping of `bytes` bytes; nothing
        // else refers to the address range.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            // SAFETY: leaves the child; the exit code carries the errno.
            unsafe { libc::_exit(100) }
        }
        let base = base.cast::<u8>();
        let mut offset = 0;
        while offset < bytes {
            // SAFETY: `offset < bytes`, inside the mapping just created.
            unsafe { std::ptr::write_volatile(base.add(offset), 1) };
            offset += 4096;
        }
        // SAFETY: leaves the child without running any Rust code.
        unsafe { libc::_exit(0) }
    }
    match wait(pid)? {
        ChildOutcome::Exited(0) => Ok(ChildOutcome::Reported(Ok(()))),
        ChildOutcome::Exited(100) => Ok(ChildOutcome::Reported(Err(("mmap", libc::ENOMEM)))),
        other => Ok(other),
    }
}

/// CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out pointer for the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// `clone(CLONE_NEWNS | SIGCHLD)`: the child exits at once; reports whether
/// the kernel allowed the new mount namespace.
pub fn clone_newns() -> io::Result<ChildOutcome> {
    let flags = libc::c_long::from(libc::CLONE_NEWNS | libc::SIGCHLD);
    // SAFETY: with a null stack the raw clone behaves like fork, and the
    // child only calls `_exit`. The remaining arguments are zero on every
    // architecture's argument order.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0, 0, 0, 0) };
    if pid < 0 {
        return Ok(ChildOutcome::Reported(Err(("clone", errno()))));
    }
    if pid == 0 {
        // SAFETY: leaves the child without running any Rust code.
        unsafe { libc::_exit(0) }
    }
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::other("clone returned a bad pid"))?;
    match wait(pid)? {
        ChildOutcome::Exited(0) => Ok(ChildOutcome::Reported(Ok(()))),
        other => Ok(other),
    }
}

fn owned(fd: libc::c_int) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by a successful system call and is owned
    // by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `socket(AF_INET, SOCK_STREAM)` then a non-blocking connect to
/// `addr:port`, waiting at most `timeout_ms`.
pub fn socket_inet_connect(addr: [u8; 4], port: u16, timeout_ms: i32) -> Attempt {
    // SAFETY: plain integer arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    let Some(sock) = owned(fd) else {
        return Err(("socket", errno()));
    };
    let sa = libc::sockaddr_in {
        sin_family: libc::sa_family_t::try_from(libc::AF_INET).unwrap_or(2),
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(addr),
        },
        sin_zero: [0; 8],
    };
    let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_in>()).unwrap_or(16);
    // SAFETY: `sa` is a valid sockaddr_in of `len` bytes for the call.
    let rc = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&raw const sa).cast::<libc::sockaddr>(),
            len,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = errno();
    if e != libc::EINPROGRESS {
        return Err(("connect", e));
    }
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if n < 0 {
        return Err(("poll", errno()));
    }
    if n == 0 {
        return Err(("connect", libc::ETIMEDOUT));
    }
    let mut so_error: libc::c_int = 0;
    let mut so_len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: `so_error` and `so_len` are valid out pointers of the sizes
    // given.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&raw mut so_error).cast(),
            &mut so_len,
        )
    };
    if rc != 0 {
        return Err(("getsockopt", errno()));
    }
    if so_error != 0 {
        return Err(("connect", so_error));
    }
    Ok(())
}

/// `keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0)`: a read-only
/// keyring lookup that shows whether the keyring syscalls are reachable.
pub fn keyctl_probe() -> Attempt {
    const KEYCTL_GET_KEYRING_ID: libc::c_long = 0;
    const KEY_SPEC_USER_KEYRING: libc::c_long = -4;
    // SAFETY: integer arguments only; no memory is passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_GET_KEYRING_ID,
            KEY_SPEC_USER_KEYRING,
            0 as libc::c_long,
        )
    };
    if rc < 0 {
        Err(("keyctl", errno()))
    } else {
        Ok(())
    }
}

/// `bpf(BPF_MAP_CREATE)` for a one-entry array map; closes it on success.
pub fn bpf_probe() -> Attempt {
    const BPF_MAP_CREATE: libc::c_long = 0;
    const BPF_MAP_TYPE_ARRAY: u32 = 2;
    // The first fields of `union bpf_attr` for BPF_MAP_CREATE: map_type,
    // key_size, value_size, max_entries; the rest must be zero.
    let mut attr = [0u32; 32];
    attr[0] = BPF_MAP_TYPE_ARRAY;
    attr[1] = 4;
    attr[2] = 4;
    attr[3] = 1;
    let size = libc::c_long::try_from(std::mem::size_of_val(&attr)).unwrap_or(128);
    // SAFETY: `attr` is a readable buffer of `size` bytes for the call.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, BPF_MAP_CREATE, attr.as_ptr(), size) };
    if rc < 0 {
        return Err(("bpf", errno()));
    }
    drop(owned(libc::c_int::try_from(rc).unwrap_or(-1)));
    Ok(())
}

/// `io_uring_setup(1, params)`; closes the ring on success.
pub fn io_uring_probe() -> Attempt {
    // struct io_uring_params is 120 bytes; zero asks for the defaults.
    let mut params = [0u32; 30];
    // SAFETY: `params` is a writable, zeroed io_uring_params-sized buffer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            1 as libc::c_long,
            params.as_mut_ptr(),
        )
    };
    if rc < 0 {
        return Err(("io_uring_setup", errno()));
    }
    drop(owned(libc::c_int::try_from(rc).unwrap_or(-1)));
    Ok(())
}
