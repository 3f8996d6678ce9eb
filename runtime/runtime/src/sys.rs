//! Every raw system call of the runtime, behind one door.
//!
//! Each function is a thin, checked wrapper: it turns a failure into an
//! [`io::Error`] and hands out [`OwnedFd`]s so that descriptor lifetimes are
//! tracked by the type system from the moment the kernel returns them. Callers
//! outside this module never write `unsafe`. Where `rustix` has a safe
//! binding (the `*at` calls, `openat2`, `memfd_create` and its seals,
//! `fstatfs`/`fstatvfs`, `poll`, `pidfd_open`, `getuid`) this module uses it;
//! `unsafe` remains only for what it does not cover: the project-quota
//! `ioctl` and `quotactl_fd(2)`, and the forked child's descriptor hook.
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
//! descriptors (the cgroup-v2 boundary), and — only in
//! the forked child, through [`install_child_descriptor_hook`] —
//! `close_range(2)` and `fcntl(F_SETFD)`.
#![expect(
    unsafe_code,
    reason = "the one module of this crate that makes raw system calls"
)]

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{
    self, AtFlags, FileType, Gid, MemfdFlags, Mode, OFlags, ResolveFlags, SealFlags,
    StatVfsMountFlags, Uid,
};
use rustix::process::{Pid, PidfdFlags};

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

/// `openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`.
pub fn open_directory_path_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    Ok(fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
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

/// A descriptor that becomes readable when process `pid` exits
/// (`pidfd_open(2)`). `pid` must be an unreaped child of this process, so
/// the number cannot have been reused.
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    Ok(rustix::process::pidfd_open(pid, PidfdFlags::empty())?)
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
}
