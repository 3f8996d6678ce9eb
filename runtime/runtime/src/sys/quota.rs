//! Project quotas: `ioctl(FS_IOC_FSGETXATTR)` and `quotactl_fd(2)` with
//! `Q_GETQUOTA` and `Q_XGETQSTATV`.
#![expect(
    unsafe_code,
    reason = "the project-quota `ioctl` and `quotactl_fd(2)` have no safe binding"
)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

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

#[cfg(test)]
mod tests {
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
}
