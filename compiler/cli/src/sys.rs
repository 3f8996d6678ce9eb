//! Every raw system call `splashc` makes itself, each behind a safe function
//! with a `// SAFETY:` note. Only `splashc doctor` uses them: they ask the
//! running kernel what it supports and change nothing.

#![expect(unsafe_code, reason = "the one module of raw kernel interfaces")]

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI number.
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;

/// The Landlock ABI version the running kernel supports.
///
/// Fails with `ENOSYS` when the kernel was built without Landlock and with
/// `EOPNOTSUPP` when it is built in but not enabled at boot.
pub fn landlock_abi_version() -> io::Result<i64> {
    // SAFETY: with a null attribute pointer, size 0 and only the VERSION flag
    // the kernel reads no memory and returns the ABI number or an error.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0_usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `prctl(PR_GET_SECCOMP)`: 0 when this process runs without seccomp, 2 when
/// it already runs under a filter. Fails with `EINVAL` when the kernel has no
/// seccomp support.
pub fn seccomp_mode() -> io::Result<i32> {
    // SAFETY: PR_GET_SECCOMP takes no pointers; the unused arguments are 0.
    let ret = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0_u64, 0_u64, 0_u64, 0_u64) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no arguments, cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// The filesystem type (`statfs.f_type`) of the filesystem holding `path`.
pub fn filesystem_magic(path: &Path) -> io::Result<u64> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let mut buf = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `c_path` is a live NUL-terminated string and `buf` points to
    // writable memory of the size of `struct statfs`, which the kernel fills.
    let ret = unsafe { libc::statfs(c_path.as_ptr(), buf.as_mut_ptr()) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statfs returned 0, so the kernel initialised the structure.
    let stat = unsafe { buf.assume_init() };
    // `f_type` is signed on some targets; the magic numbers are positive.
    Ok(u64::try_from(stat.f_type).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_answer_on_this_host() {
        assert!(filesystem_magic(Path::new("/proc")).is_ok());
        assert!(filesystem_magic(Path::new("/does/not/exist")).is_err());
        assert!(filesystem_magic(Path::new("/pro\0c")).is_err());
        let mode = seccomp_mode().expect("PR_GET_SECCOMP");
        assert!(mode == 0 || mode == 2, "{mode}");
        let _ = effective_uid();
    }
}
