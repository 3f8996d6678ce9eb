//! Every raw system call `splashc` makes itself, each behind a safe function
//! with a `// SAFETY:` note. Only `splashc doctor` uses them: they ask the
//! running kernel what it supports and change nothing.

#![expect(unsafe_code, reason = "the one module of raw kernel interfaces")]

use std::io;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_answer_on_this_host() {
        let mode = seccomp_mode().expect("PR_GET_SECCOMP");
        assert!(mode == 0 || mode == 2, "{mode}");
        let _ = effective_uid();
    }
}
