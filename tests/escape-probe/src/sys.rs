//! Every raw system call of the escape probe, each behind a safe function
//! that takes Rust values and returns the result or the errno.
//!
//! The probe is single-threaded: every fork below happens with one thread
//! alive, so the child may allocate and use the standard library.

use std::ffi::{CStr, CString, c_int, c_long, c_uint, c_ulong};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// The return value of a system call, or its errno.
pub type Sys = Result<i64, i32>;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn check(rc: c_long) -> Sys {
    if rc < 0 { Err(errno()) } else { Ok(rc) }
}

fn owned(rc: c_long) -> Result<OwnedFd, i32> {
    let rc = check(rc)?;
    let fd = RawFd::try_from(rc).map_err(|_| libc::EBADF)?;
    // SAFETY: `fd` was just returned by a successful system call that creates
    // a descriptor, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The C entry point. The probe does not use the Rust runtime's start-up
/// (which polls the standard descriptors and installs signal stacks) so that
/// it starts under a strict seccomp allowlist that lists only what a small
/// static worker needs; `std::env::args` still works on glibc.
#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const libc::c_char) -> c_int {
    crate::run()
}

/// Writes all of `bytes` to `fd`, ignoring failures (there is nobody to
/// report them to).
pub fn write_all(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live buffer of the given length.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
        bytes = &bytes[usize::try_from(n).unwrap_or(bytes.len()).min(bytes.len())..];
    }
}

/// Leaves the process at once, without destructors or atexit handlers.
pub fn exit_now(code: c_int) -> ! {
    // SAFETY: `_exit` never returns and touches no memory of ours.
    unsafe { libc::_exit(code) }
}

pub fn getpid() -> i32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::getpid() }
}

pub fn getppid() -> i32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::getppid() }
}

/// (real uid, real gid).
pub fn ids() -> (u32, u32) {
    // SAFETY: no arguments; cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// Either side of a fork.
#[derive(Debug)]
pub enum Fork {
    Child,
    Parent(i32),
}

pub fn fork() -> Result<Fork, i32> {
    // SAFETY: the probe is single-threaded (module documentation), so the
    // child is a complete copy and may run any code.
    let pid = unsafe { libc::fork() };
    match pid {
        p if p < 0 => Err(errno()),
        0 => Ok(Fork::Child),
        p => Ok(Fork::Parent(p)),
    }
}

/// How a waited-for child ended.
#[derive(Debug, Clone, Copy)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
}

fn decode(status: c_int) -> Ended {
    if libc::WIFSIGNALED(status) {
        Ended::Signaled(libc::WTERMSIG(status))
    } else {
        Ended::Exited(libc::WEXITSTATUS(status))
    }
}

/// `waitpid` with or without `WNOHANG`; `None` while the child runs.
pub fn wait(pid: i32, block: bool) -> Result<Option<Ended>, i32> {
    let mut status: c_int = 0;
    loop {
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: `status` is a valid out pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, flags) };
        if rc == pid {
            return Ok(Some(decode(status)));
        }
        if rc == 0 {
            return Ok(None);
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

pub fn kill(pid: i32, signal: c_int) -> Sys {
    // SAFETY: plain integer arguments.
    check(c_long::from(unsafe { libc::kill(pid, signal) }))
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> Result<(OwnedFd, OwnedFd), i32> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` is a writable array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno());
    }
    // SAFETY: pipe2 succeeded and returned two fresh descriptors we own.
    unsafe { Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))) }
}

/// Waits until `fd` is readable (or hung up); false on timeout.
pub fn poll_readable(fd: BorrowedFd<'_>, timeout_ms: c_int) -> Result<bool, i32> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid pollfd.
    let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    check(c_long::from(rc)).map(|n| n > 0)
}

/// Standard input.
pub fn stdin() -> BorrowedFd<'static> {
    // SAFETY: descriptor 0 stays open for the life of the process (the
    // probe never closes it); at worst reads from it fail with EBADF.
    unsafe { BorrowedFd::borrow_raw(0) }
}

/// Reads what is available into `buf`; 0 at end of file.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Sys {
    // SAFETY: `buf` is a live writable buffer of the given length.
    check(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } as c_long)
}

/// Sets SIGXFSZ to ignored, so a write past RLIMIT_FSIZE fails with EFBIG.
pub fn ignore_sigxfsz() {
    // SAFETY: SIG_IGN is a valid disposition; no handler code runs.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

pub fn open(path: &CStr, flags: c_int, mode: libc::mode_t) -> Result<OwnedFd, i32> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    owned(c_long::from(unsafe {
        libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, mode)
    }))
}

pub fn setsid() -> Sys {
    // SAFETY: no arguments.
    check(c_long::from(unsafe { libc::setsid() }))
}

pub fn unshare(flags: c_int) -> Sys {
    // SAFETY: a flag word only.
    check(c_long::from(unsafe { libc::unshare(flags) }))
}

fn reap_raw_child(pid: c_long) -> Sys {
    let pid = check(pid)?;
    if pid == 0 {
        exit_now(0);
    }
    let pid = i32::try_from(pid).map_err(|_| libc::ESRCH)?;
    match wait(pid, true) {
        Ok(Some(Ended::Exited(0))) => Ok(0),
        Ok(_) => Err(libc::ECHILD),
        Err(e) => Err(e),
    }
}

/// Raw `clone(flags | SIGCHLD)` with a null stack (fork-like); the child
/// exits at once and is reaped.
pub fn clone_and_reap(flags: c_int) -> Sys {
    let flags = c_long::from(flags | libc::SIGCHLD);
    // SAFETY: with a null stack the raw clone behaves like fork; the child
    // only calls `_exit` (in `reap_raw_child`). On x86_64 and aarch64 the
    // remaining arguments are zero pointers in any order.
    reap_raw_child(unsafe { libc::syscall(libc::SYS_clone, flags, 0, 0, 0, 0) })
}

/// `clone3` with `flags` and SIGCHLD, no stack; the child exits at once.
pub fn clone3_and_reap(flags: u64) -> Sys {
    // struct clone_args (CLONE_ARGS_SIZE_VER2, 88 bytes): flags, pidfd,
    // child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
    // set_tid_size, cgroup.
    let mut args = [0u64; 11];
    args[0] = flags;
    args[4] = libc::SIGCHLD as u64;
    // SAFETY: `args` is a live, correctly sized clone_args; with no stack
    // the child continues like a fork child and only calls `_exit`.
    reap_raw_child(unsafe {
        libc::syscall(
            libc::SYS_clone3,
            args.as_mut_ptr(),
            std::mem::size_of_val(&args),
        )
    })
}

pub fn setns(fd: BorrowedFd<'_>, nstype: c_int) -> Sys {
    // SAFETY: integer arguments; the descriptor is open.
    check(c_long::from(unsafe { libc::setns(fd.as_raw_fd(), nstype) }))
}

pub fn mount(
    source: &CStr,
    target: &CStr,
    fstype: &CStr,
    flags: c_ulong,
    data: Option<&CStr>,
) -> Sys {
    let data = data.map_or(std::ptr::null(), |d| d.as_ptr().cast());
    // SAFETY: every pointer is a NUL-terminated string (or null data) that
    // outlives the call.
    check(c_long::from(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data,
        )
    }))
}

pub fn umount2(target: &CStr, flags: c_int) -> Sys {
    // SAFETY: `target` is NUL-terminated.
    check(c_long::from(unsafe {
        libc::umount2(target.as_ptr(), flags)
    }))
}

pub fn pivot_root(new_root: &CStr, put_old: &CStr) -> Sys {
    // SAFETY: both paths are NUL-terminated.
    check(unsafe { libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()) })
}

pub fn chroot(path: &CStr) -> Sys {
    // SAFETY: `path` is NUL-terminated.
    check(c_long::from(unsafe { libc::chroot(path.as_ptr()) }))
}

pub fn fsopen(fstype: &CStr) -> Result<OwnedFd, i32> {
    // SAFETY: `fstype` is NUL-terminated; FSOPEN_CLOEXEC is 1.
    owned(unsafe { libc::syscall(libc::SYS_fsopen, fstype.as_ptr(), 1 as c_uint) })
}

pub fn open_tree_clone(path: &CStr) -> Result<OwnedFd, i32> {
    // OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE.
    let flags: c_uint = 1 | libc::O_CLOEXEC as c_uint | 0x8000;
    // SAFETY: `path` is NUL-terminated.
    owned(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) })
}

/// `move_mount` of an invalid descriptor onto `target`: the permission check
/// comes before the descriptor is looked at.
pub fn move_mount_invalid(target: &CStr) -> Sys {
    // MOVE_MOUNT_F_EMPTY_PATH.
    let flags: c_uint = 0x4;
    // SAFETY: both paths are NUL-terminated.
    check(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            -1 as c_int,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            flags,
        )
    })
}

/// `mount_setattr(path, attr_set)` on one mount.
pub fn mount_setattr(path: &CStr, attr_set: u64) -> Sys {
    // struct mount_attr: attr_set, attr_clr, propagation, userns_fd.
    let attr = [attr_set, 0u64, 0, 0];
    // SAFETY: `path` is NUL-terminated and `attr` is a live mount_attr of
    // the size passed.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            0 as c_uint,
            attr.as_ptr(),
            std::mem::size_of_val(&attr),
        )
    })
}

/// `open_by_handle_at` with a made-up handle relative to `/`.
pub fn open_by_handle_invalid(mount_fd: BorrowedFd<'_>) -> Sys {
    // struct file_handle: handle_bytes, handle_type, then 8 bytes of handle.
    let mut handle = [0u32; 4];
    handle[0] = 8;
    handle[1] = 1;
    handle[2] = 2;
    // SAFETY: `handle` is a live file_handle with 8 handle bytes.
    check(unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            mount_fd.as_raw_fd(),
            handle.as_mut_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    })
}

/// `bpf(BPF_MAP_CREATE)` of a one-entry array map.
pub fn bpf_map_create() -> Result<OwnedFd, i32> {
    // union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size,
    // max_entries, then zeros.
    let mut attr = [0u32; 32];
    attr[0] = 2; // BPF_MAP_TYPE_ARRAY
    attr[1] = 4;
    attr[2] = 4;
    attr[3] = 1;
    // SAFETY: `attr` is a live, zero-padded bpf_attr of the size passed.
    owned(unsafe {
        libc::syscall(
            libc::SYS_bpf,
            0 as c_int,
            attr.as_mut_ptr(),
            std::mem::size_of_val(&attr) as c_uint,
        )
    })
}

/// `perf_event_open` of the software CPU clock of this process, user space
/// only (what `perf_event_paranoid` 2 still allows).
pub fn perf_event_open_self() -> Result<OwnedFd, i32> {
    // struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): type, size,
    // config, sample_period, sample_type, read_format, flag bits.
    let mut attr = [0u64; 8];
    attr[0] = 1 | (64u64 << 32); // PERF_TYPE_SOFTWARE, size 64
    attr[1] = 0; // PERF_COUNT_SW_CPU_CLOCK
    attr[5] = 1 | (1 << 5) | (1 << 6); // disabled, exclude_kernel, exclude_hv
    // SAFETY: `attr` is a live perf_event_attr of the declared size.
    owned(unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_mut_ptr(),
            0 as c_int,
            -1 as c_int,
            -1 as c_int,
            8 as c_ulong, /* PERF_FLAG_FD_CLOEXEC */
        )
    })
}

/// `userfaultfd(O_CLOEXEC | UFFD_USER_MODE_ONLY)`.
pub fn userfaultfd() -> Result<OwnedFd, i32> {
    // SAFETY: a flag word only.
    owned(unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | 1) })
}

/// `io_uring_setup` with one entry.
pub fn io_uring_setup() -> Result<OwnedFd, i32> {
    // struct io_uring_params is 120 bytes; zero asks for the defaults.
    let mut params = [0u64; 15];
    // SAFETY: `params` is a live, zeroed io_uring_params.
    owned(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1 as c_uint, params.as_mut_ptr()) })
}

/// `kexec_load` with no segments and an invalid architecture in the flags:
/// after the permission check it can only fail with EINVAL.
pub fn kexec_load_invalid() -> Sys {
    let flags: c_ulong = 0x00ff_0000;
    // SAFETY: no segments, so the null segment pointer is never read.
    check(unsafe {
        libc::syscall(
            libc::SYS_kexec_load,
            0 as c_ulong,
            0 as c_ulong,
            std::ptr::null::<u8>(),
            flags,
        )
    })
}

/// `init_module` of an empty image.
pub fn init_module_empty() -> Sys {
    let image = [0u8; 1];
    // SAFETY: a zero-length image (the pointer is valid) and an empty
    // NUL-terminated parameter string.
    check(unsafe {
        libc::syscall(
            libc::SYS_init_module,
            image.as_ptr(),
            0 as c_ulong,
            c"".as_ptr(),
        )
    })
}

/// `finit_module` of an invalid descriptor.
pub fn finit_module_invalid() -> Sys {
    // SAFETY: an empty NUL-terminated parameter string; integer arguments.
    check(unsafe {
        libc::syscall(
            libc::SYS_finit_module,
            -1 as c_int,
            c"".as_ptr(),
            0 as c_int,
        )
    })
}

/// `delete_module` of a name no module has.
pub fn delete_module_missing() -> Sys {
    // SAFETY: a NUL-terminated name and a flag word.
    check(unsafe {
        libc::syscall(
            libc::SYS_delete_module,
            c"splash_battery_none".as_ptr(),
            libc::O_NONBLOCK,
        )
    })
}

/// `reboot` with the first magic number right and an invalid second one:
/// after the permission check it can only fail with EINVAL, so it never
/// reboots anything.
pub fn reboot_invalid_magic() -> Sys {
    let magic1: c_long = 0xfee1_dead;
    // SAFETY: integer arguments; the argument pointer is never read for an
    // invalid magic.
    check(unsafe {
        libc::syscall(
            libc::SYS_reboot,
            magic1,
            0 as c_long,
            0 as c_long,
            std::ptr::null::<u8>(),
        )
    })
}

/// `keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, create)`.
pub fn keyctl_session_keyring() -> Sys {
    // SAFETY: integer arguments.
    check(unsafe { libc::syscall(libc::SYS_keyctl, 0 as c_int, -3 as c_int, 1 as c_int) })
}

/// `add_key("user", ...)` into the process keyring (gone with the process).
pub fn add_key_process() -> Sys {
    let payload = b"x";
    // SAFETY: NUL-terminated strings and a live payload of the given length.
    check(unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            c"splash-battery".as_ptr(),
            payload.as_ptr(),
            payload.len(),
            -2 as c_int,
        )
    })
}

/// `request_key("user", ...)` for a key nobody has.
pub fn request_key_missing() -> Sys {
    // SAFETY: NUL-terminated strings; no callout info (null).
    check(unsafe {
        libc::syscall(
            libc::SYS_request_key,
            c"user".as_ptr(),
            c"splash-battery-none".as_ptr(),
            std::ptr::null::<u8>(),
            0 as c_int,
        )
    })
}

pub fn personality(persona: c_ulong) -> Sys {
    // SAFETY: an integer argument.
    check(unsafe { libc::syscall(libc::SYS_personality, persona) })
}

/// `syslog(SYSLOG_ACTION_SIZE_BUFFER)`: reads nothing.
pub fn syslog_size() -> Sys {
    // SAFETY: the size action reads no buffer.
    check(unsafe { libc::syscall(libc::SYS_syslog, 10 as c_int, std::ptr::null::<u8>(), 0) })
}

pub fn swapon(path: &CStr) -> Sys {
    // SAFETY: `path` is NUL-terminated.
    check(unsafe { libc::syscall(libc::SYS_swapon, path.as_ptr(), 0 as c_int) })
}

#[cfg(target_arch = "x86_64")]
pub fn iopl(level: c_int) -> Sys {
    // SAFETY: an integer argument.
    check(unsafe { libc::syscall(libc::SYS_iopl, level) })
}

#[cfg(not(target_arch = "x86_64"))]
pub fn iopl(_level: c_int) -> Sys {
    Err(libc::ENOSYS)
}

/// `PTRACE_SEIZE` (does not stop the tracee; detached when we exit).
pub fn ptrace_seize(pid: i32) -> Sys {
    // SAFETY: addr and data are zero; no memory of ours is read or written.
    check(unsafe {
        libc::syscall(
            libc::SYS_ptrace,
            0x4206 as c_long,
            c_long::from(pid),
            0 as c_long,
            0 as c_long,
        )
    })
}

/// A word at the same address in the probe and every fork of it.
static SHARED_WORD: AtomicU64 = AtomicU64::new(0x5eed_5eed_5eed_5eed);

/// Reads the probe's shared word from `pid` and writes the same bytes back:
/// a cross-process write that changes nothing.
pub fn process_vm_write_same(pid: i32) -> Sys {
    SHARED_WORD.fetch_add(0, Ordering::SeqCst);
    let addr = SHARED_WORD.as_ptr() as usize;
    let mut buf = [0u8; 8];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` describes our live 8-byte buffer; `remote` is only
    // dereferenced by the kernel in the other process.
    let n = check(unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) } as c_long)?;
    if n != 8 {
        return Err(libc::EFAULT);
    }
    // SAFETY: as above; the kernel reads our buffer and writes the other
    // process.
    check(unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) } as c_long)
}

/// `pidfd_open(pid)` then `pidfd_getfd(that, fd)`.
pub fn pidfd_getfd(pid: i32, fd: c_int) -> Result<OwnedFd, i32> {
    // SAFETY: integer arguments.
    let pidfd = owned(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as c_uint) })?;
    // SAFETY: integer arguments; `pidfd` is open.
    owned(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0 as c_uint) })
}

/// A raw `ioctl` with a full 64-bit request word (the kernel uses its low
/// 32 bits) and a pointer to `arg`.
pub fn ioctl_raw(fd: BorrowedFd<'_>, request: u64, arg: &mut c_int) -> Sys {
    // SAFETY: `arg` is a live int; the terminal ioctls used read or write at
    // most one int (TIOCSTI reads one byte of it).
    check(unsafe {
        libc::syscall(
            libc::SYS_ioctl,
            fd.as_raw_fd(),
            request,
            std::ptr::from_mut(arg),
        )
    })
}

/// A new session with a fresh pseudo-terminal as its controlling terminal:
/// (master, slave), or the failing step and errno.
pub fn own_pty() -> Result<(OwnedFd, OwnedFd), (&'static str, i32)> {
    setsid().map_err(|e| ("setsid", e))?;
    let master = open(c"/dev/ptmx", libc::O_RDWR | libc::O_NOCTTY, 0).map_err(|e| ("ptmx", e))?;
    let mut unlock: c_int = 0;
    ioctl_raw(master.as_fd(), libc::TIOCSPTLCK, &mut unlock).map_err(|e| ("unlockpt", e))?;
    let mut n: c_int = 0;
    ioctl_raw(master.as_fd(), libc::TIOCGPTN, &mut n).map_err(|e| ("ptsname", e))?;
    let path = CString::new(format!("/dev/pts/{n}")).map_err(|_| ("ptsname", libc::EINVAL))?;
    // Without O_NOCTTY: a session leader without a terminal acquires it.
    let slave = open(&path, libc::O_RDWR, 0).map_err(|e| ("pts", e))?;
    Ok((master, slave))
}

/// A system call number with the x32 ABI bit set, integer arguments only.
pub fn x32_syscall(nr: c_long, arg: c_long) -> Sys {
    // SAFETY: the calls used take integer arguments only (getpid, unshare).
    check(unsafe { libc::syscall(nr | 0x4000_0000, arg) })
}

pub fn memfd_create(name: &CStr, flags: c_uint) -> Result<OwnedFd, i32> {
    // SAFETY: `name` is NUL-terminated.
    owned(unsafe { libc::syscall(libc::SYS_memfd_create, name.as_ptr(), flags) })
}

fn argv_pointers(argv: &[&CStr]) -> Vec<*const libc::c_char> {
    argv.iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// `execveat(fd, path, argv, [], flags)`; returns only on failure, with the
/// errno.
pub fn execveat(fd: c_int, path: &CStr, argv: &[&CStr], flags: c_int) -> i32 {
    let argv = argv_pointers(argv);
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: `path` is NUL-terminated; `argv` and `envp` are null-terminated
    // arrays of NUL-terminated strings that outlive the call.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            fd,
            path.as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            flags,
        );
    }
    errno()
}

/// `execve(path, argv, environ)` keeping this process's environment;
/// returns only on failure, with the errno.
pub fn execve_with_environment(path: &CStr, argv: &[&CStr]) -> i32 {
    let argv = argv_pointers(argv);
    // SAFETY: `path` is NUL-terminated, `argv` a null-terminated array of
    // NUL-terminated strings that outlive the call; `execv` passes glibc's
    // own `environ`.
    unsafe {
        libc::execv(path.as_ptr(), argv.as_ptr());
    }
    errno()
}

/// Marks `fd` close-on-exec.
pub fn set_cloexec(fd: c_int) -> Sys {
    // SAFETY: integer arguments; F_GETFD/F_SETFD touch no memory.
    let flags = check(c_long::from(unsafe { libc::fcntl(fd, libc::F_GETFD) }))?;
    let flags = c_int::try_from(flags).map_err(|_| libc::EINVAL)? | libc::FD_CLOEXEC;
    // SAFETY: as above.
    check(c_long::from(unsafe {
        libc::fcntl(fd, libc::F_SETFD, flags)
    }))
}

/// Drops every supplementary group, then sets the real, effective and
/// saved gid and uid to `id`.
pub fn drop_to(id: u32) -> Result<(), (&'static str, i32)> {
    // SAFETY: an empty group list (the pointer is not read for size 0).
    check(unsafe { libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) })
        .map_err(|e| ("setgroups", e))?;
    // SAFETY: integer arguments.
    check(unsafe { libc::syscall(libc::SYS_setresgid, id, id, id) })
        .map_err(|e| ("setresgid", e))?;
    // SAFETY: integer arguments.
    check(unsafe { libc::syscall(libc::SYS_setresuid, id, id, id) })
        .map_err(|e| ("setresuid", e))?;
    Ok(())
}

/// `fexecve(fd, argv, [])` through glibc; returns only on failure.
pub fn fexecve(fd: BorrowedFd<'_>, argv: &[&CStr]) -> i32 {
    let argv = argv_pointers(argv);
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: as for `execveat`.
    unsafe {
        libc::fexecve(fd.as_raw_fd(), argv.as_ptr(), envp.as_ptr());
    }
    errno()
}

pub fn getrlimit(resource: c_int) -> Result<(u64, u64), i32> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid out pointer. The resource type differs between
    // libcs, hence the cast.
    if unsafe { libc::getrlimit(resource as _, &mut r) } != 0 {
        return Err(errno());
    }
    Ok((r.rlim_cur, r.rlim_max))
}

pub fn setrlimit(resource: c_int, soft: u64, hard: u64) -> Sys {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `r` is a valid rlimit.
    check(c_long::from(unsafe { libc::setrlimit(resource as _, &r) }))
}

/// Raw `setuid` (this thread only; the probe is single-threaded).
pub fn setuid(uid: u32) -> Sys {
    // SAFETY: an integer argument.
    check(unsafe { libc::syscall(libc::SYS_setuid, uid) })
}

/// Raw `setgid`.
pub fn setgid(gid: u32) -> Sys {
    // SAFETY: an integer argument.
    check(unsafe { libc::syscall(libc::SYS_setgid, gid) })
}

/// `capset` asking for the capabilities in `mask`, effective and permitted.
pub fn capset(mask: u64) -> Sys {
    let (low, high) = (mask as u32, (mask >> 32) as u32);
    // struct __user_cap_header_struct (version 3, this process) and two
    // __user_cap_data_struct (effective, permitted, inheritable).
    let header = [0x2008_0522u32, 0];
    let data = [low, low, 0, high, high, 0];
    // SAFETY: `header` and `data` are live and sized for version 3.
    check(unsafe { libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) })
}

/// `mknod(path, S_IFCHR | 0600, 1:3)` (the null device's numbers).
pub fn mknod_char(path: &CStr) -> Sys {
    let dev = libc::makedev(1, 3);
    // SAFETY: `path` is NUL-terminated.
    check(c_long::from(unsafe {
        libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o600, dev)
    }))
}

/// `lstat(path)`.
pub fn lstat(path: &CStr) -> Result<libc::stat, i32> {
    // SAFETY: `stat` is plain-old-data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated; the kernel writes one `struct stat`.
    check(c_long::from(unsafe { libc::lstat(path.as_ptr(), &mut st) }))?;
    Ok(st)
}

pub fn chmod(path: &CStr, mode: libc::mode_t) -> Sys {
    // SAFETY: `path` is NUL-terminated.
    check(c_long::from(unsafe { libc::chmod(path.as_ptr(), mode) }))
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)` on an `O_PATH` descriptor of
/// `path` (the file itself, never a link it names).
pub fn fchown_path(path: &CStr, uid: u32, gid: u32) -> Sys {
    let fd = open(path, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
    // SAFETY: `fd` is live and the empty path is a static NUL-terminated string.
    check(c_long::from(unsafe {
        libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH)
    }))
}

/// `utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW)` with explicit times.
pub fn utimensat(path: &CStr, times: [libc::timespec; 2]) -> Sys {
    // SAFETY: `path` is NUL-terminated and `times` two live timespecs.
    check(c_long::from(unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            path.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    }))
}

/// `lsetxattr(path, name, value, 0)`.
pub fn lsetxattr(path: &CStr, name: &CStr, value: &[u8]) -> Sys {
    // SAFETY: both strings are NUL-terminated and `value` is a live buffer
    // of the given length.
    check(c_long::from(unsafe {
        libc::lsetxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    }))
}

pub fn sethostname(name: &[u8]) -> Sys {
    // SAFETY: `name` is a live buffer of the given length.
    check(c_long::from(unsafe {
        libc::sethostname(name.as_ptr().cast(), name.len())
    }))
}

/// `setpriority(PRIO_PROCESS, self, nice)`.
pub fn setpriority_self(nice: c_int) -> Sys {
    // SAFETY: integer arguments.
    check(c_long::from(unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice)
    }))
}

pub fn socket(domain: c_int, ty: c_int, protocol: c_int) -> Result<OwnedFd, i32> {
    // SAFETY: integer arguments.
    owned(c_long::from(unsafe {
        libc::socket(domain, ty | libc::SOCK_CLOEXEC, protocol)
    }))
}
