//! Every raw system call `splashc` makes itself, each behind a safe function
//! with a `// SAFETY:` note, and the process entry point. Besides the entry
//! point, only `splashc doctor` uses them: they ask the running kernel what
//! it supports and change nothing.

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

/// The process entry point, called by the C runtime (the crate is
/// `no_main`). It does what std's setup for a `main` function does that
/// `splashc` relies on, and skips the rest:
///
/// - descriptors 0, 1 and 2 that are closed are opened on `/dev/null`, so a
///   file `splashc` opens never lands on a standard stream;
/// - `SIGPIPE` is ignored, so a write to a closed pipe is an `EPIPE` error
///   (the worker's stdin, a closed stdout) rather than death by signal;
/// - a panic prints its message and exits with status 101;
/// - `std::process::exit` flushes stdout.
///
/// Skipped: the handler that reports a stack overflow by name (std finds
/// the main thread's stack by reading `/proc/self/maps`; an overflow still
/// hits the guard page and ends the process with `SIGSEGV`), and the main
/// thread's name in panic messages. Together that is about 0.07 ms of a
/// fresh process's start on this project's test machine, a tenth of what
/// `splashc run` adds to a launch (`docs/runtime.md`).
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    open_closed_standard_streams();
    // SAFETY: setting a signal's disposition to `SIG_IGN` touches no memory
    // of this process; no handler runs.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = std::panic::catch_unwind(crate::run_command_line).unwrap_or(101);
    std::process::exit(i32::from(code))
}

/// Opens `/dev/null` on each of descriptors 0–2 that is closed; aborts if
/// that cannot be done (as std does).
#[cfg(not(test))]
fn open_closed_standard_streams() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three `pollfd`s the kernel writes
    // `revents` into; a zero timeout does not block.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    for pfd in fds {
        let closed = if polled < 0 {
            // SAFETY: `F_GETFD` on any number only reads the descriptor table.
            let flags = unsafe { libc::fcntl(pfd.fd, libc::F_GETFD) };
            flags < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        } else {
            pfd.revents & libc::POLLNVAL != 0
        };
        // SAFETY: a NUL-terminated path and plain flags; the descriptor is
        // the lowest free one, which is `pfd.fd` since the lower ones are open.
        if closed && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } != pfd.fd {
            std::process::abort();
        }
    }
}
