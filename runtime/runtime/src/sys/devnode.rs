//! Device nodes relative to a directory descriptor (`mkdirat(2)`,
//! `mknodat(2)`, `fchownat(2)`, `fchmodat(2)`, `fstatat(2)`, `unlinkat(2)`)
//! and the lock a device directory's owner holds (`flock(2)`, `fstat(2)`).

use std::ffi::CStr;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{self, AtFlags, FileType, Gid, Mode, OFlags, Uid};

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
