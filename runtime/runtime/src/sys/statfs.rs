//! What the filesystem holding a descriptor is and how it is mounted
//! (`fstatfs(2)`, `fstatvfs(3)`).

use std::io;
use std::os::fd::BorrowedFd;

use rustix::fs::{self, StatVfsMountFlags};

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

/// The filesystem magic (`f_type` of `fstatfs(2)`) of the filesystem that
/// holds `fd`.
pub fn filesystem_magic(fd: BorrowedFd<'_>) -> io::Result<i64> {
    Ok(fs::fstatfs(fd)?.f_type)
}
