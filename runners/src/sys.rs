//! Every raw system call the runners make, behind one door.
//!
//! Each function wraps exactly one kernel interface, converts the C return
//! convention into an [`io::Result`], and documents in a `SAFETY:` comment
//! why its `unsafe` block is sound. Nothing outside this module uses
//! `unsafe`.
//!
//! The runners are single-threaded for their whole life (nothing spawns a
//! thread before the final `execve`), which several notes below rely on;
//! the one exception is the learning hand-over thread ([`crate::learn`]),
//! started after every step those notes concern.
#![expect(
    unsafe_code,
    reason = "the one place where the runners call the kernel directly"
)]

use std::ffi::{CStr, CString, c_char, c_int, c_long};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version instead of
/// creating a ruleset.
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1 << 0;

/// `LANDLOCK_RULE_PATH_BENEATH`.
const LANDLOCK_RULE_PATH_BENEATH: c_int = 1;

/// `LANDLOCK_ACCESS_FS_EXECUTE`: execute a file.
pub const LANDLOCK_ACCESS_FS_EXECUTE: u64 = 1 << 0;

/// The first field of `struct landlock_ruleset_attr`.
///
/// The kernel reads the structure with `copy_struct_from_user`, so passing
/// only its leading `handled_access_fs` field (size 8) is valid on every
/// Landlock ABI and leaves network and scope handling unset.
#[repr(C)]
struct LandlockRulesetAttr {
    handled_access_fs: u64,
}

/// `struct landlock_path_beneath_attr`, which the kernel declares packed.
#[repr(C, packed)]
struct LandlockPathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

fn check(ret: c_long) -> io::Result<c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_int(ret: c_int) -> io::Result<c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The Landlock ABI version of the running kernel.
///
/// Fails with `ENOSYS` when the kernel lacks Landlock and with `EOPNOTSUPP`
/// when it was built in but is disabled at boot.
pub fn landlock_abi_version() -> io::Result<i64> {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the
    // kernel reads no memory and only returns the ABI number.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<LandlockRulesetAttr>(),
            0_usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    check(ret)
}

/// Creates a Landlock ruleset that handles exactly `handled_access_fs`.
pub fn landlock_create_ruleset(handled_access_fs: u64) -> io::Result<OwnedFd> {
    let attr = LandlockRulesetAttr { handled_access_fs };
    // SAFETY: `attr` is a live, initialised structure of the size we pass;
    // the kernel only reads it during the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            std::mem::size_of::<LandlockRulesetAttr>(),
            0_u32,
        )
    };
    let fd =
        RawFd::try_from(check(ret)?).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: on success the kernel returned a new descriptor (created with
    // O_CLOEXEC) that nothing else in this process owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds one path-beneath rule granting `allowed_access` on the object that
/// `object` refers to (an `O_PATH` descriptor is fine).
pub fn landlock_add_path_rule(
    ruleset: BorrowedFd<'_>,
    allowed_access: u64,
    object: BorrowedFd<'_>,
) -> io::Result<()> {
    let attr = LandlockPathBeneathAttr {
        allowed_access,
        parent_fd: object.as_raw_fd(),
    };
    // SAFETY: `attr` is a live, initialised packed structure matching the
    // kernel's `struct landlock_path_beneath_attr`; both descriptors are
    // borrowed and stay open for the duration of the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &raw const attr,
            0_u32,
        )
    };
    check(ret).map(drop)
}

/// Enforces `ruleset` on the calling thread (the only thread) and every
/// future descendant.
pub fn landlock_restrict_self(ruleset: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: plain integer arguments; the descriptor is borrowed and open.
    let ret =
        unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0_u32) };
    check(ret).map(drop)
}

/// Sets `no_new_privs` on the calling thread; it cannot be cleared again.
pub fn set_no_new_privs() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    let ret = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1_u64, 0_u64, 0_u64, 0_u64) };
    check_int(ret).map(drop)
}

/// Whether `no_new_privs` is set on the calling thread.
pub fn no_new_privs() -> io::Result<bool> {
    // SAFETY: prctl with integer arguments only.
    let ret = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0_u64, 0_u64, 0_u64, 0_u64) };
    check_int(ret).map(|v| v == 1)
}

/// Sets `resource` to `value` as both the soft and the hard limit.
pub fn set_rlimit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `limit` is a live, initialised structure read by the kernel
    // during the call.
    let ret = unsafe { libc::setrlimit(resource, &raw const limit) };
    check_int(ret).map(drop)
}

/// `close_range(first, ~0, CLOSE_RANGE_CLOEXEC)`: marks every descriptor
/// from `first` up close-on-exec without closing any.
pub fn close_range_cloexec(first: u32) -> io::Result<()> {
    // SAFETY: integer arguments only; CLOSE_RANGE_CLOEXEC changes flags and
    // closes nothing, so no owned descriptor of this process is invalidated.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    check(ret).map(drop)
}

/// Sets `FD_CLOEXEC` on an arbitrary (possibly unowned) descriptor number.
pub fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFD/F_SETFD only read and change the descriptor flags of
    // `fd`; an invalid number yields EBADF, never undefined behaviour.
    let flags = check_int(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    // SAFETY: as above.
    let ret = unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
    check_int(ret).map(drop)
}

/// Whether descriptor number `fd` is open in this process.
pub fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only reads the descriptor flags; an unused number
    // yields EBADF.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Takes ownership of an inherited descriptor number handed over on the
/// command line. The caller must not use the number again.
pub fn adopt_inherited_fd(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 0 || !fd_is_open(fd) {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: the descriptor is open, and the runner's own code never opened
    // it (it was inherited and is named only by the command line, which is
    // consumed once), so this is the sole owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The filesystem magic (`f_type`) of the filesystem holding `fd`.
pub fn fstatfs_type(fd: BorrowedFd<'_>) -> io::Result<i64> {
    let mut buf = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `buf` is writable memory of the size of `struct statfs`; the
    // kernel fills it on success.
    let ret = unsafe { libc::fstatfs(fd.as_raw_fd(), buf.as_mut_ptr()) };
    check_int(ret)?;
    // SAFETY: fstatfs succeeded, so the structure is initialised (and it was
    // zeroed before the call in any case).
    let stat = unsafe { buf.assume_init() };
    Ok(stat.f_type)
}

/// Reads directory entries of `dir` into `buf` with `getdents64`; returns
/// the number of bytes filled (0 at the end of the directory).
pub fn getdents64(dir: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid writable memory of the length we pass.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            dir.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    usize::try_from(check(ret)?).map_err(|_| io::Error::other("getdents64 length out of range"))
}

/// Installs a classic BPF seccomp filter with `SECCOMP_FILTER_FLAG_TSYNC`.
/// `no_new_privs` must already be set.
pub fn seccomp_set_filter(program: &[libc::sock_filter]) -> io::Result<()> {
    let len =
        u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fprog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `program`, which is live and `len`
    // instructions long; the kernel copies the program during the call and
    // never writes through the pointer.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_TSYNC,
            &raw const fprog,
        )
    };
    // With TSYNC, a positive value names a thread that could not be
    // synchronised; the runners have no other threads, but refuse anyway.
    match check(ret)? {
        0 => Ok(()),
        tid => Err(io::Error::other(format!(
            "thread {tid} could not be synchronised"
        ))),
    }
}

/// Installs `program` on the calling thread only (no
/// `SECCOMP_FILTER_FLAG_TSYNC`) with `SECCOMP_FILTER_FLAG_NEW_LISTENER`,
/// and returns the listener (opened close-on-exec by the kernel).
/// `no_new_privs` must already be set.
pub fn seccomp_new_listener(program: &[libc::sock_filter]) -> io::Result<OwnedFd> {
    let len =
        u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fprog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `program`, which is live and `len`
    // instructions long; the kernel copies it during the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &raw const fprog,
        )
    };
    let fd = RawFd::try_from(check(ret)?).map_err(|_| io::Error::other("listener out of range"))?;
    // SAFETY: on success the kernel returned a new descriptor that nothing
    // else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `fd` is a socket (`fstat`).
pub fn is_socket(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut buf = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `buf` is a writable `struct stat`; `fd` is a live descriptor.
    check_int(unsafe { libc::fstat(fd.as_raw_fd(), buf.as_mut_ptr()) })?;
    // SAFETY: `fstat` succeeded and filled `buf`.
    let stat = unsafe { buf.assume_init() };
    Ok(stat.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// Sends `fd` over the Unix socket `socket` with `SCM_RIGHTS` and a
/// one-byte payload.
pub fn send_fd(socket: BorrowedFd<'_>, fd: BorrowedFd<'_>) -> io::Result<()> {
    let mut byte = [b'L'];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // Room for one `cmsghdr` carrying one descriptor, aligned for it.
    let mut control = [0u64; 4];
    // SAFETY: `CMSG_SPACE` only computes a size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    if space > std::mem::size_of_val(&control) {
        return Err(io::Error::other("control buffer too small"));
    }
    // SAFETY: an all-zero `msghdr` is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` points at a control buffer of `space` bytes, enough for
    // one header and one descriptor, so `CMSG_FIRSTHDR` is non-null and
    // `CMSG_DATA` has room for a `RawFd`; the buffer is 8-byte aligned.
    let ret = unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd.as_raw_fd());
        libc::sendmsg(socket.as_raw_fd(), &raw const msg, libc::MSG_NOSIGNAL)
    };
    match ret {
        1 => Ok(()),
        n if n < 0 => Err(io::Error::last_os_error()),
        _ => Err(io::Error::other("short send of the listener")),
    }
}

/// An `execv` argument vector prepared in advance, so that the exec itself
/// allocates nothing (it runs after the seccomp filter is in place).
#[derive(Debug)]
pub struct ExecVector {
    program: CString,
    // Keeps the strings that `pointers` refer to alive.
    _strings: Vec<CString>,
    /// Null-terminated array of pointers into `_strings`.
    pointers: Vec<*const c_char>,
}

impl ExecVector {
    /// `argv` is the complete argument vector, `argv[0]` included.
    pub fn new(program: CString, argv: Vec<CString>) -> Self {
        let mut pointers: Vec<*const c_char> = argv.iter().map(|s| s.as_ptr()).collect();
        pointers.push(std::ptr::null());
        Self {
            program,
            _strings: argv,
            pointers,
        }
    }

    /// The program path.
    pub fn program(&self) -> &CStr {
        &self.program
    }

    /// Replaces the process image, passing the environment through
    /// unchanged. Returns only on failure.
    pub fn exec(&self) -> io::Error {
        // SAFETY: `program` is a NUL-terminated string and `pointers` is a
        // null-terminated array of pointers to NUL-terminated strings owned
        // by `self`, all alive for the call; the environment is the process's
        // own `environ`.
        unsafe { libc::execv(self.program.as_ptr(), self.pointers.as_ptr()) };
        io::Error::last_os_error()
    }
}

/// Whether `fd` refers to a directory (`fstat`).
pub fn is_directory(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut buf = std::mem::MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `buf` is writable memory of the size of `struct stat`; the
    // descriptor is borrowed and open.
    check_int(unsafe { libc::fstat(fd.as_raw_fd(), buf.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so the (zeroed) structure is initialised.
    let stat = unsafe { buf.assume_init() };
    Ok(stat.st_mode & libc::S_IFMT == libc::S_IFDIR)
}

/// Opens `name` (one component) relative to `dir` for writing, with
/// `O_CLOEXEC | O_NOFOLLOW`.
pub fn open_for_write_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `dir` is borrowed and open; `name` is NUL-terminated and
    // outlives the call.
    let fd = check_int(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        )
    })?;
    // SAFETY: a fresh descriptor from the kernel, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Clears `FD_CLOEXEC` on an inherited descriptor number, so the program
/// inherits it.
pub fn clear_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFD/F_SETFD only read and change the descriptor flags of
    // `fd`; an invalid number yields EBADF, never undefined behaviour.
    let flags = check_int(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    // SAFETY: as above.
    let ret = unsafe { libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) };
    check_int(ret).map(drop)
}

/// Switches this (single-threaded) process to `uid` and `gid` with no
/// supplementary group: `setgroups(0)`, `setresgid`, `setresuid`, then reads
/// every real, effective and saved id and the group count back; a
/// difference is `EPERM`.
pub fn switch_identity(uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: a group count of 0 reads no memory; the other calls take
    // plain integers.
    unsafe {
        check_int(libc::setgroups(0, std::ptr::null()))?;
        check_int(libc::setresgid(gid, gid, gid))?;
        check_int(libc::setresuid(uid, uid, uid))?;
    }
    let (mut ru, mut eu, mut su) = (u32::MAX, u32::MAX, u32::MAX);
    let (mut rg, mut eg, mut sg) = (u32::MAX, u32::MAX, u32::MAX);
    // SAFETY: each pointer names a live local; `getgroups` with a size of 0
    // writes nothing and returns the count.
    let groups = unsafe {
        check_int(libc::getresuid(&raw mut ru, &raw mut eu, &raw mut su))?;
        check_int(libc::getresgid(&raw mut rg, &raw mut eg, &raw mut sg))?;
        check_int(libc::getgroups(0, std::ptr::null_mut()))?
    };
    if [ru, eu, su] != [uid; 3] || [rg, eg, sg] != [gid; 3] || groups != 0 {
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    }
    Ok(())
}

/// `prctl(PR_SET_PDEATHSIG, SIGKILL)`.
pub fn set_parent_death_kill() -> io::Result<()> {
    // SAFETY: plain integer arguments.
    let ret = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    check_int(ret).map(|_| ())
}

/// `getppid()`.
pub fn parent_pid() -> i32 {
    // SAFETY: no arguments; always succeeds.
    unsafe { libc::getppid() }
}
