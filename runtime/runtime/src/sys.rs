//! Every raw system call of the runtime, behind one door.
//!
//! Each function is a thin, checked wrapper: it turns a failure into an
//! [`io::Error`] and hands out [`OwnedFd`]s so that descriptor lifetimes are
//! tracked by the type system from the moment the kernel returns them. Callers
//! outside this module never write `unsafe`. Where `rustix` has a safe
//! binding (the `*at` calls, `openat2`, `memfd_create` and its seals,
//! `fstatfs`/`fstatvfs`, `poll`, `pipe2`, `waitid`, `pidfd_send_signal`,
//! `getuid`) this module uses it;
//! `unsafe` remains only for what it does not cover: the project-quota
//! `ioctl` and `quotactl_fd(2)`, the launch itself ([`spawn_child`]) and
//! the forked child's descriptor hook of the `--help` fallback.
//!
//! Kernel interfaces used here: `openat2(2)` (pinning), `openat(2)` (a
//! read-only directory relative to a pin), `memfd_create(2)` and
//! `fcntl(F_ADD_SEALS)` (the seccomp program), `ioctl(FS_IOC_FSGETXATTR)` and
//! `quotactl_fd(2)` with `Q_XGETQSTATV` and `Q_GETQUOTA` (project quotas),
//! `poll(2)` (a session waiting for the worker's first answer), `mkdirat(2)`,
//! `mknodat(2)`, `fchownat(2)`, `fchmodat(2)`, `fstatat(2)`, `unlinkat(2)`,
//! `fstatvfs(3)` (private device nodes, read-write roots of a root launch),
//! `fstatfs(2)`, `openat(2)`,
//! `fstatat(2)`, `mkdirat(2)` and `unlinkat(2)` relative to directory
//! descriptors (the cgroup-v2 boundary), `clone(2)` with `CLONE_VM |
//! CLONE_VFORK | CLONE_PIDFD`, `pipe2(2)`, and in that child `sigaction(2)`,
//! `prctl(PR_SET_PDEATHSIG)`, `getppid(2)`, `dup2(2)`, `chdir(2)`, `close_range(2)`, `fcntl(F_SETFD)`,
//! `pthread_sigmask(3)` and `execve(2)` (the launch), `waitid(P_PIDFD)` and
//! `pidfd_send_signal(2)` (reaping and killing it), `pidfd_open(2)` (the
//! sandbox's pid 1, [`crate::sandbox_init`]), `eventfd(2)` and `poll(2)`
//! (a reader released by a stop), `flock(2)` and `fstat(2)` (the lock a
//! device directory's owner holds, [`crate::devices`]), and — only in the
//! forked child of [`install_child_descriptor_hook`] — `close_range(2)` and
//! `fcntl(F_SETFD)`.
#![expect(
    unsafe_code,
    reason = "the one module of this crate that makes raw system calls"
)]

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{
    self, AtFlags, FileType, Gid, MemfdFlags, Mode, OFlags, ResolveFlags, SealFlags,
    StatVfsMountFlags, Uid,
};

/// Opens `path` with `O_PATH | O_NOFOLLOW | O_CLOEXEC` through `openat2(2)`
/// with `RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`: no directory component
/// of the path may be a symbolic link (`ELOOP`), and a link as the last
/// component is not followed (with `O_PATH | O_NOFOLLOW` the descriptor then
/// refers to the link itself, which the caller's `fstat` type check refuses).
/// A canonical path that was swapped for a link after canonicalization is
/// therefore never followed.
/// There is no fallback to `openat(2)`: a kernel without `openat2` fails.
pub fn open_path_no_symlinks(path: &Path) -> io::Result<OwnedFd> {
    openat2_no_symlinks(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)
}

/// `openat2(AT_FDCWD, path, flags)` with `RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS`, the one door for both path openings here.
fn openat2_no_symlinks(path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    Ok(fs::openat2(
        fs::CWD,
        path,
        flags,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?)
}

/// Opens the directory that `pin` (an `O_PATH` descriptor) refers to for
/// reading: `openat(pin, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
/// O_CLOEXEC)`. The result is the same inode as the pin, never a path lookup
/// from the host root.
pub fn open_directory_at(pin: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(fs::openat(
        pin,
        c".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Writes `bytes` into a fresh `memfd_create(2)` descriptor (close-on-exec,
/// sealable), rewinds it to offset 0 (Bubblewrap reads from the current
/// offset), and seals it against any further change of size or content.
pub fn sealed_memfd(name: &str, bytes: &[u8]) -> io::Result<OwnedFd> {
    let owned = fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    let mut file = File::from(owned);
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    fs::fcntl_add_seals(
        &file,
        SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE,
    )?;
    Ok(OwnedFd::from(file))
}

/// `struct fsxattr` from `<linux/fs.h>`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct FsXattr {
    pub xflags: u32,
    pub extsize: u32,
    pub nextents: u32,
    pub projid: u32,
    pub cowextsize: u32,
    pub pad: [u8; 8],
}

/// `FS_XFLAG_PROJINHERIT`: new entries inherit the directory's project id.
pub const FS_XFLAG_PROJINHERIT: u32 = 0x0000_0200;

/// `FS_IOC_FSGETXATTR` = `_IOR('X', 31, struct fsxattr)`.
const FS_IOC_FSGETXATTR: libc::c_ulong = (2 << 30)
    | ((std::mem::size_of::<FsXattr>() as libc::c_ulong) << 16)
    | ((b'X' as libc::c_ulong) << 8)
    | 31;

/// Reads the filesystem extended attributes (project id, flags) of the open
/// directory `dir` with `ioctl(FS_IOC_FSGETXATTR)`.
pub fn fs_get_xattr(dir: BorrowedFd<'_>) -> io::Result<FsXattr> {
    let mut attr = FsXattr::default();
    // SAFETY: `dir` is live; the request reads into exactly one `FsXattr`,
    // which is `repr(C)` with the kernel's layout and outlives the call.
    let rc = unsafe {
        libc::ioctl(
            dir.as_raw_fd(),
            FS_IOC_FSGETXATTR,
            &mut attr as *mut FsXattr,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(attr)
}

/// `PRJQUOTA` from `<linux/quota.h>`.
const PRJQUOTA: u32 = 2;

/// `QCMD(Q_GETQUOTA, PRJQUOTA)`: `(cmd << 8) | (type & 0xff)`, computed
/// unsigned (`Q_GETQUOTA << 8` does not fit an `int`).
const Q_GETQUOTA_PRJQUOTA: u32 = ((libc::Q_GETQUOTA as u32) << 8) | (PRJQUOTA & 0xff);

/// Project quota of `project_id` on the filesystem holding `dir`, through
/// `quotactl_fd(dir, QCMD(Q_GETQUOTA, PRJQUOTA), project_id, &dqblk)`
/// (Linux 5.14 or later; `ENOSYS` before). The result is the kernel's
/// `struct if_dqblk` as returned: block limits in 1 KiB units, space in
/// bytes, and the `dqb_valid` mask saying which fields it filled in.
pub fn project_quota(dir: BorrowedFd<'_>, project_id: u32) -> io::Result<libc::dqblk> {
    // SAFETY: `dqblk` is plain-old-data; all-zero is a valid value.
    let mut block: libc::dqblk = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is live for the duration of the call; every integer
    // argument is passed at full register width (the kernel takes them as
    // `unsigned int`/`qid_t`); the kernel writes at most one
    // `struct if_dqblk` (the layout of `libc::dqblk`) into `block`, which
    // outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_quotactl_fd,
            libc::c_ulong::from(dir.as_raw_fd().unsigned_abs()),
            libc::c_ulong::from(Q_GETQUOTA_PRJQUOTA),
            libc::c_ulong::from(project_id),
            &mut block as *mut libc::dqblk,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(block)
}

/// `struct fs_qfilestatv` from `<linux/dqblk_xfs.h>`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct FsQfilestatv {
    pub qfs_ino: u64,
    pub qfs_nblks: u64,
    pub qfs_nextents: u32,
    pub qfs_pad: u32,
}

/// `struct fs_quota_statv` from `<linux/dqblk_xfs.h>` (version 1).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct FsQuotaStatv {
    pub qs_version: i8,
    pub qs_pad1: u8,
    pub qs_flags: u16,
    pub qs_incoredqs: u32,
    pub qs_uquota: FsQfilestatv,
    pub qs_gquota: FsQfilestatv,
    pub qs_pquota: FsQfilestatv,
    pub qs_btimelimit: i32,
    pub qs_itimelimit: i32,
    pub qs_rtbtimelimit: i32,
    pub qs_bwarnlimit: u16,
    pub qs_iwarnlimit: u16,
    pub qs_rtbwarnlimit: u16,
    pub qs_pad3: u16,
    pub qs_pad4: u32,
    pub qs_pad2: [u64; 7],
}

/// `FS_QSTATV_VERSION1`.
const FS_QSTATV_VERSION1: i8 = 1;
/// `FS_QUOTA_PDQ_ACCT`: project quota accounting is on.
pub const FS_QUOTA_PDQ_ACCT: u16 = 1 << 4;
/// `FS_QUOTA_PDQ_ENFD`: project quota limits are enforced.
pub const FS_QUOTA_PDQ_ENFD: u16 = 1 << 5;
/// `QCMD(Q_XGETQSTATV, PRJQUOTA)`; `Q_XGETQSTATV` is `XQM_CMD(8)`.
const Q_XGETQSTATV_PRJQUOTA: u32 = (((b'X' as u32) << 8 | 8) << 8) | (PRJQUOTA & 0xff);

/// The quota state of the filesystem holding `dir`, through
/// `quotactl_fd(dir, QCMD(Q_XGETQSTATV, PRJQUOTA), 0, &fs_quota_statv)`.
/// For every quota filesystem (the generic VFS quota code answers it too),
/// `qs_flags` says whether project accounting is on and whether its limits
/// are enforced; the kernel answers `ENOSYS` when no quota is enabled at all.
pub fn quota_state(dir: BorrowedFd<'_>) -> io::Result<FsQuotaStatv> {
    let mut state = FsQuotaStatv {
        qs_version: FS_QSTATV_VERSION1,
        ..FsQuotaStatv::default()
    };
    // SAFETY: `dir` is live for the duration of the call; the kernel reads
    // `qs_version` from and writes at most one `struct fs_quota_statv` (the
    // `repr(C)` layout of `FsQuotaStatv`) into `state`, which outlives the
    // call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_quotactl_fd,
            libc::c_ulong::from(dir.as_raw_fd().unsigned_abs()),
            libc::c_ulong::from(Q_XGETQSTATV_PRJQUOTA),
            0 as libc::c_ulong,
            &mut state as *mut FsQuotaStatv,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(state)
}

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

/// The process's real user id (the uid Bubblewrap gives the worker).
pub fn real_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdir_at(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> io::Result<()> {
    Ok(fs::mkdirat(dir, name, Mode::from_raw_mode(mode))?)
}

/// `mknodat(dir, name, S_IFCHR | mode, makedev(major, minor))`.
pub fn mknod_char_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    mode: u32,
    (major, minor): (u32, u32),
) -> io::Result<()> {
    Ok(fs::mknodat(
        dir,
        name,
        FileType::CharacterDevice,
        Mode::from_raw_mode(mode),
        fs::makedev(major, minor),
    )?)
}

/// `fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW)`.
pub fn chown_at(dir: BorrowedFd<'_>, name: &CStr, uid: u32, gid: u32) -> io::Result<()> {
    Ok(fs::chownat(
        dir,
        name,
        Some(Uid::from_raw(uid)),
        Some(Gid::from_raw(gid)),
        AtFlags::SYMLINK_NOFOLLOW,
    )?)
}

/// `fchmodat(dir, name, mode, 0)`.
pub fn chmod_at(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> io::Result<()> {
    Ok(fs::chmodat(
        dir,
        name,
        Mode::from_raw_mode(mode),
        AtFlags::empty(),
    )?)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: (mode, uid, gid, rdev major, minor).
pub fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<(u32, u32, u32, (u32, u32))> {
    let st = fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    let rdev = (fs::major(st.st_rdev), fs::minor(st.st_rdev));
    Ok((st.st_mode, st.st_uid, st.st_gid, rdev))
}

/// `unlinkat(dir, name, AT_REMOVEDIR when directory)`.
pub fn unlink_at(dir: BorrowedFd<'_>, name: &CStr, directory: bool) -> io::Result<()> {
    let flags = if directory {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    Ok(fs::unlinkat(dir, name, flags)?)
}

/// The mount flags (`f_flag`) of the filesystem mount holding `fd`, from
/// `fstatvfs` (which works on an `O_PATH` descriptor).
fn mount_flags(fd: BorrowedFd<'_>) -> io::Result<StatVfsMountFlags> {
    Ok(fs::fstatvfs(fd)?.f_flag)
}

/// Whether the filesystem mount holding `fd` forbids device access
/// (`ST_NODEV` from `fstatvfs`).
pub fn mounted_nodev(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(mount_flags(fd)?.contains(StatVfsMountFlags::NODEV))
}

/// Whether the filesystem mount holding `fd` ignores set-user-ID and
/// set-group-ID bits and file capabilities (`ST_NOSUID` from `fstatvfs`).
pub fn mounted_nosuid(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(mount_flags(fd)?.contains(StatVfsMountFlags::NOSUID))
}

// ---------------------------------------------------------------- cgroup v2
//
// The cgroup boundary (`crate::cgroup`) works relative to directory
// descriptors: the parent is opened once, the child is created with
// `mkdirat`, every control file is opened with `openat` relative to the
// child's descriptor, and the child is removed with `unlinkat`.

fn c_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a name relative to a directory descriptor must be one non-empty component",
        ));
    }
    CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte"))
}

/// Opens the directory `path` for reading (`O_RDONLY | O_DIRECTORY |
/// O_NOFOLLOW | O_CLOEXEC`) through `openat2(2)` with `RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS`: no component of `path` may be a symbolic link.
pub fn open_directory_no_symlinks(path: &Path) -> io::Result<OwnedFd> {
    openat2_no_symlinks(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
    )
}

/// The filesystem magic (`f_type` of `fstatfs(2)`) of the filesystem that
/// holds `fd`.
pub fn filesystem_magic(fd: BorrowedFd<'_>) -> io::Result<i64> {
    Ok(fs::fstatfs(fd)?.f_type)
}

/// `openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW)`: one component
/// relative to `dir`, never following a symbolic link.
pub fn open_at(dir: BorrowedFd<'_>, name: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let c = c_name(name)?;
    Ok(fs::openat(
        dir,
        c.as_c_str(),
        flags | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?)
}

/// Whether `name` exists in `dir` (`fstatat(2)` without following a link).
pub fn exists_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<bool> {
    let c = c_name(name)?;
    match fs::statat(dir, c.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `mkdirat(dir, name, mode)`; fails with `EEXIST` if `name` exists.
pub fn make_directory_at(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()> {
    let c = c_name(name)?;
    Ok(fs::mkdirat(dir, c.as_c_str(), Mode::from_raw_mode(mode))?)
}

/// `unlinkat(dir, name, AT_REMOVEDIR)`: removes the (empty) directory.
pub fn remove_directory_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    let c = c_name(name)?;
    Ok(fs::unlinkat(dir, c.as_c_str(), AtFlags::REMOVEDIR)?)
}

/// Waits at most `timeout` for `fd` to become readable (data, end of input
/// or an error condition) with `poll(2)`; `false` when the time ran out.
/// An interrupted wait is reported as not yet readable.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: std::time::Duration) -> io::Result<bool> {
    let timeout = Timespec {
        tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
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
        // The identity switch comes before the parent-death signal, which
        // the kernel clears on a change of credentials.
        if let Some((uid, gid)) = (*setup).identity {
            let errno = switch_task_identity(uid, gid);
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
        if libc::getppid() != (*setup).parent {
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
    spawn_child_as(program, args, inherit, None)
}

/// [`spawn_child`], switching the child to `identity` (uid, gid) before
/// its exec ([`switch_task_identity`]); a failed switch is an error of kind
/// [`io::ErrorKind::PermissionDenied`] naming the ids, and nothing is
/// executed.
pub fn spawn_child_as(
    program: &Path,
    args: &[String],
    inherit: &[RawFd],
    identity: Option<(u32, u32)>,
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
    };
    // Left uninitialized: only the child writes it, and only its top pages
    // (zeroing all of it would touch every page).
    let mut stack: Vec<u8> = Vec::with_capacity(CHILD_STACK_BYTES);
    // The stack grows down from its 16-byte-aligned top.
    let top = stack.as_mut_ptr().wrapping_add(CHILD_STACK_BYTES);
    let top = top.wrapping_sub(top as usize % 16);
    let mut pidfd: libc::c_int = -1;

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
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
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

/// Reaps the child behind `pidfd` (`waitid(P_PIDFD, WEXITED)`), blocking
/// until it exits when `block`; `None` when it still runs. The result is in
/// the `wait(2)` status encoding ([`std::process::ExitStatus::from_raw`]).
pub fn wait_child(pidfd: BorrowedFd<'_>, block: bool) -> io::Result<Option<i32>> {
    use rustix::process::{WaitId, WaitIdOptions, waitid};

    let mut options = WaitIdOptions::EXITED;
    if !block {
        options |= WaitIdOptions::NOHANG;
    }
    let status = loop {
        match waitid(WaitId::PidFd(pidfd), options) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    Ok(status.map(|s| {
        if let Some(code) = s.exit_status() {
            (code & 0xff) << 8
        } else {
            let signal = s.terminating_signal().unwrap_or(0) & 0x7f;
            if s.dumped() { signal | 0x80 } else { signal }
        }
    }))
}

/// Sends SIGKILL to the process behind `pidfd` (`pidfd_send_signal(2)`).
pub fn kill_child(pidfd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::process::pidfd_send_signal(
        pidfd,
        rustix::process::Signal::KILL,
    )?)
}

/// A pidfd for `pid` (`pidfd_open(2)`), close-on-exec. Unlike the pidfd
/// [`spawn_child`] makes, this one is opened by number: the caller must
/// confirm it names the process it means ([`pidfd_info`]).
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let raw = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let pid = rustix::process::Pid::from_raw(raw)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    Ok(rustix::process::pidfd_open(
        pid,
        rustix::process::PidfdFlags::empty(),
    )?)
}

/// What `/proc/self/fdinfo/N` says of a pidfd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidfdInfo {
    /// `Pid:` in this process's pid namespace; `None` once reaped (`-1`).
    pub pid: Option<u32>,
    /// The last `NSpid:` field: its pid in its own innermost namespace.
    pub innermost: Option<u32>,
    /// How many `NSpid:` fields there are (namespace levels from ours).
    pub levels: usize,
}

/// Reads the `Pid:` and `NSpid:` lines of a pidfd's fdinfo.
pub fn pidfd_info(pidfd: BorrowedFd<'_>) -> io::Result<PidfdInfo> {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd()))?;
    let mut info = PidfdInfo {
        pid: None,
        innermost: None,
        levels: 0,
    };
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("Pid:") {
            info.pid = v.trim().parse::<u32>().ok();
        } else if let Some(v) = line.strip_prefix("NSpid:") {
            let fields: Vec<&str> = v.split_whitespace().collect();
            info.levels = fields.len();
            info.innermost = fields.last().and_then(|f| f.parse::<u32>().ok());
        }
    }
    Ok(info)
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// A close-on-exec `eventfd(2)` that starts at 0.
pub fn eventfd() -> io::Result<OwnedFd> {
    Ok(rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC,
    )?)
}

/// Adds 1 to an eventfd, making it readable for good (nothing reads it).
pub fn eventfd_signal(fd: BorrowedFd<'_>) -> io::Result<()> {
    let one = 1u64.to_ne_bytes();
    loop {
        match rustix::io::write(fd, &one) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits (at most `timeout`, or without bound for `None`) until `first` or
/// `second` is readable; `Some(0)` or `Some(1)` names which (`second` wins
/// when both are), `None` when the time ran out or the wait was
/// interrupted.
pub fn wait_either(
    first: BorrowedFd<'_>,
    second: BorrowedFd<'_>,
    timeout: Option<std::time::Duration>,
) -> io::Result<Option<usize>> {
    let timeout = timeout.map(|t| Timespec {
        tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: t.subsec_nanos().into(),
    });
    let mut fds = [
        PollFd::from_borrowed_fd(first, PollFlags::IN),
        PollFd::from_borrowed_fd(second, PollFlags::IN),
    ];
    match rustix::event::poll(&mut fds, timeout.as_ref()) {
        Ok(0) | Err(rustix::io::Errno::INTR) => Ok(None),
        Ok(_) if !fds[1].revents().is_empty() => Ok(Some(1)),
        Ok(_) => Ok(Some(0)),
        Err(e) => Err(e.into()),
    }
}

/// `openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`: a
/// directory descriptor that can also hold a `flock(2)` lock (an `O_PATH`
/// one cannot).
pub fn open_directory_read_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    Ok(fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `flock(fd, LOCK_EX)`, waiting for it when `wait`; `false` when another
/// open file description holds it and `wait` is false. The lock lasts as
/// long as this open file description: a process that dies releases it.
pub fn lock_exclusive(fd: BorrowedFd<'_>, wait: bool) -> io::Result<bool> {
    let operation = if wait {
        fs::FlockOperation::LockExclusive
    } else {
        fs::FlockOperation::NonBlockingLockExclusive
    };
    loop {
        match fs::flock(fd, operation) {
            Ok(()) => return Ok(true),
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(false),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// The link count of the file behind `fd` (`fstat(2)`): 0 once a directory
/// was removed.
pub fn link_count(fd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(fs::fstat(fd)?.st_nlink)
}

// ---- identity ----

/// The process's real group id.
pub fn real_gid() -> u32 {
    rustix::process::getgid().as_raw()
}

/// Switches the calling task to `uid` and `gid` with no supplementary group
/// (`setgroups(0)`, `setresgid`, then `setresuid`, each as a raw system call
/// so that only this task changes: the C library's wrappers would signal
/// every thread of the process to change too, which in the launch's
/// `CLONE_VM` child means the host's own threads), then reads back the
/// real, effective and saved ids and the group list. Returns 0, or the
/// `errno` of the failed step (`EPERM` when a read-back differs).
///
/// Async-signal-safe and allocation-free: the child of [`spawn_child_as`]
/// calls it between `clone` and `execve`. Called anywhere else it changes
/// the calling thread's credentials.
pub(crate) fn switch_task_identity(uid: u32, gid: u32) -> libc::c_int {
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EPERM)
    };
    // SAFETY: `setgroups` with a count of 0 reads no memory; `setresgid`
    // and `setresuid` take plain integers. Each changes only the calling
    // task's credentials.
    unsafe {
        if libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) != 0 {
            return errno();
        }
        if libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0 {
            return errno();
        }
        if libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0 {
            return errno();
        }
    }
    let ([ru, eu, su], [rg, eg, sg], groups) = task_identity();
    if [ru, eu, su] != [uid; 3] || [rg, eg, sg] != [gid; 3] || groups != 0 {
        return libc::EPERM;
    }
    0
}

/// The calling task's real, effective and saved uids and gids and its
/// number of supplementary groups (raw system calls; async-signal-safe).
/// A failed read reports `u32::MAX` ids and `usize::MAX` groups, which
/// match no identity.
pub(crate) fn task_identity() -> ([u32; 3], [u32; 3], usize) {
    let mut u: [libc::uid_t; 3] = [u32::MAX; 3];
    let mut g: [libc::gid_t; 3] = [u32::MAX; 3];
    // SAFETY: each pointer names a live, writable `uid_t`/`gid_t` of this
    // frame; `getgroups` with a size of 0 writes nothing and returns the
    // count.
    let groups = unsafe {
        let up = u.as_mut_ptr();
        if libc::syscall(libc::SYS_getresuid, up, up.add(1), up.add(2)) != 0 {
            u = [u32::MAX; 3];
        }
        let gp = g.as_mut_ptr();
        if libc::syscall(libc::SYS_getresgid, gp, gp.add(1), gp.add(2)) != 0 {
            g = [u32::MAX; 3];
        }
        libc::syscall(
            libc::SYS_getgroups,
            0usize,
            std::ptr::null_mut::<libc::gid_t>(),
        )
    };
    (u, g, usize::try_from(groups).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn quota_request_numbers_match_the_kernel_headers() {
        // <linux/fs.h>: _IOR('X', 31, struct fsxattr), a 28-byte struct.
        assert_eq!(std::mem::size_of::<FsXattr>(), 28);
        assert_eq!(FS_IOC_FSGETXATTR, 0x801c_581f);
        // <linux/quota.h>: QCMD(Q_GETQUOTA 0x800007, PRJQUOTA 2).
        assert_eq!(Q_GETQUOTA_PRJQUOTA, 0x8000_0702);
        assert_eq!(libc::SYS_quotactl_fd, 443);
        // <linux/dqblk_xfs.h>: a 160-byte struct; QCMD(XQM_CMD(8), PRJQUOTA).
        assert_eq!(std::mem::size_of::<FsQuotaStatv>(), 160);
        assert_eq!(Q_XGETQSTATV_PRJQUOTA, 0x0058_0802);
    }

    #[test]
    fn sealed_memfd_reads_from_the_start_and_refuses_changes() {
        let fd = sealed_memfd("splash-test", b"program").expect("memfd");
        let mut file = File::from(fd);
        let mut text = String::new();
        file.read_to_string(&mut text).expect("read");
        assert_eq!(text, "program");
        let err = file.write_all(b"x").expect_err("sealed against writes");
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
        let err = file.set_len(0).expect_err("sealed against shrinking");
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
    }

    #[test]
    fn pinning_refuses_any_symbolic_link_component() {
        let dir_guard = tempfile::Builder::new()
            .prefix("splash-sys-")
            .tempdir()
            .expect("create a temporary directory");
        let dir = dir_guard.path();
        std::fs::create_dir_all(dir.join("real")).expect("dir");
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).expect("link");
        let dir = dir.canonicalize().expect("canonical");
        assert!(open_path_no_symlinks(&dir.join("real")).is_ok());
        // A link as the last component is not followed: the descriptor
        // refers to the link itself, and bind's type check refuses it.
        let leaf = File::from(open_path_no_symlinks(&dir.join("link")).expect("leaf link"));
        assert!(leaf.metadata().expect("fstat").file_type().is_symlink());
        std::fs::create_dir(dir.join("real/sub")).expect("sub");
        let err = open_path_no_symlinks(&dir.join("link/sub")).expect_err("inner link");
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
    }

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
