//! The close-on-exec sweep: every inherited descriptor from 3 up is marked
//! close-on-exec, so only standard input, output and error reach the
//! program.
//!
//! The sweep uses `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`. Only when the
//! kernel lacks that call (`ENOSYS`) or that flag (`EINVAL`, kernels 5.9 and
//! 5.10) does it fall back to listing `/proc/self/fd`; the fallback is still
//! complete or an error: the directory must be on procfs (checked with
//! `fstatfs`), it is read to its end, and every listed descriptor from 3 up
//! is marked. The process is single-threaded, so no descriptor can appear
//! while the list is read. Any failure stops the runner.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::{Failure, sys};

/// `PROC_SUPER_MAGIC`.
const PROC_SUPER_MAGIC: i64 = 0x9fa0;

/// Marks every descriptor from 3 up close-on-exec.
pub fn mark_inherited_cloexec() -> Result<(), Failure> {
    match sys::close_range_cloexec(3) {
        Ok(()) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) => {
            sweep_proc_self_fd()
        }
        Err(e) => Err(Failure::setup(format!(
            "failed to mark inherited descriptors close-on-exec: {e}"
        ))),
    }
}

fn sweep_proc_self_fd() -> Result<(), Failure> {
    let fail = |what: &str, e: std::io::Error| {
        Failure::setup(format!(
            "failed to {what} (close_range is unavailable): {e}"
        ))
    };
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open("/proc/self/fd")
        .map_err(|e| fail("open `/proc/self/fd`", e))?;
    let magic = sys::fstatfs_type(dir.as_fd()).map_err(|e| fail("inspect `/proc/self/fd`", e))?;
    if magic != PROC_SUPER_MAGIC {
        return Err(Failure::setup(
            "`/proc/self/fd` is not on procfs (close_range is unavailable)".to_owned(),
        ));
    }
    let fds = list_fds(&dir).map_err(|e| fail("list `/proc/self/fd`", e))?;
    for fd in fds {
        if fd >= 3 && fd != dir.as_raw_fd() {
            sys::set_cloexec(fd)
                .map_err(|e| fail(&format!("mark descriptor `{fd}` close-on-exec"), e))?;
        }
    }
    Ok(())
}

/// Reads the whole directory; every entry other than `.` and `..` must be a
/// descriptor number.
fn list_fds(dir: &File) -> std::io::Result<Vec<RawFd>> {
    let mut fds = Vec::new();
    let mut buf = vec![0_u8; 4096];
    loop {
        let filled = sys::getdents64(dir.as_fd(), &mut buf)?;
        if filled == 0 {
            return Ok(fds);
        }
        parse_dirents(&buf[..filled], &mut fds)?;
    }
}

/// Parses `struct linux_dirent64` records: `d_ino: u64`, `d_off: i64`,
/// `d_reclen: u16`, `d_type: u8`, then the NUL-terminated name.
fn parse_dirents(mut bytes: &[u8], out: &mut Vec<RawFd>) -> std::io::Result<()> {
    let bad = || std::io::Error::other("malformed directory entry");
    while !bytes.is_empty() {
        let reclen = bytes
            .get(16..18)
            .map(|b| usize::from(u16::from_ne_bytes([b[0], b[1]])))
            .ok_or_else(bad)?;
        let record = bytes
            .get(..reclen)
            .filter(|_| reclen > 19)
            .ok_or_else(bad)?;
        let name_area = &record[19..];
        let len = name_area.iter().position(|&b| b == 0).ok_or_else(bad)?;
        let name = &name_area[..len];
        if name != b"." && name != b".." {
            let fd = std::str::from_utf8(name)
                .ok()
                .and_then(|s| s.parse::<RawFd>().ok())
                .ok_or_else(|| std::io::Error::other("unexpected entry in `/proc/self/fd`"))?;
            out.push(fd);
        }
        bytes = &bytes[reclen..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &[u8]) -> Vec<u8> {
        // 19 header bytes + name + NUL, padded to 8.
        let reclen = (19 + name.len() + 1).div_ceil(8) * 8;
        let mut r = vec![0_u8; reclen];
        r[16..18].copy_from_slice(&u16::try_from(reclen).expect("small").to_ne_bytes());
        r[19..19 + name.len()].copy_from_slice(name);
        r
    }

    #[test]
    fn dirents_parse_numbers_and_skip_dots() {
        let mut buf = Vec::new();
        for name in [&b"."[..], b"..", b"0", b"3", b"200"] {
            buf.extend(record(name));
        }
        let mut out = Vec::new();
        parse_dirents(&buf, &mut out).expect("parse");
        assert_eq!(out, vec![0, 3, 200]);
    }

    #[test]
    fn unexpected_or_truncated_entries_are_errors() {
        let mut out = Vec::new();
        assert!(parse_dirents(&record(b"x"), &mut out).is_err());
        let mut truncated = record(b"12");
        truncated.truncate(10);
        assert!(parse_dirents(&truncated, &mut out).is_err());
        let mut zero_len = record(b"5");
        zero_len[16..18].copy_from_slice(&0_u16.to_ne_bytes());
        assert!(parse_dirents(&zero_len, &mut out).is_err());
    }
}
