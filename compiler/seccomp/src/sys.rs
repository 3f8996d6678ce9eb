//! Raw system calls: installing a filter and running probes in a forked
//! child. Used by the real-kernel tests and the benchmark.
//!
//! The forked child must not allocate or take locks (the parent may have
//! other threads), so everything it needs is prepared before `fork` and the
//! child only makes raw syscalls, writes its result to a pipe and calls
//! `_exit`.
#![expect(
    unsafe_code,
    reason = "prctl, seccomp, fork, pipe and raw syscalls have no safe wrapper"
)]

use std::io;
use std::time::{Duration, Instant};

use crate::bpf::SockFilter;
use crate::program::Program;

/// `struct sock_fprog`.
#[repr(C)]
#[derive(Debug)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

const SECCOMP_SET_MODE_FILTER: libc::c_ulong = 1;

/// A prepared filter: the `sock_fprog` pointing into the program.
#[derive(Debug)]
pub struct Prepared<'a> {
    prog: SockFprog,
    _program: &'a Program,
}

impl<'a> Prepared<'a> {
    /// Prepare `program` for installation; fails if it is empty or too long.
    pub fn new(program: &'a Program) -> io::Result<Prepared<'a>> {
        let len = u16::try_from(program.insns.len())
            .ok()
            .filter(|&l| l > 0 && usize::from(l) <= crate::bpf::BPF_MAXINSNS)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(Prepared {
            prog: SockFprog {
                len,
                filter: program.insns.as_ptr(),
            },
            _program: program,
        })
    }

    /// Set no_new_privs and attach the filter to the calling thread.
    /// Returns 0 or a negative errno; makes no allocation.
    pub fn install_raw(&self) -> i64 {
        // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integer arguments.
        let r = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
        if r != 0 {
            return -i64::from(errno());
        }
        // SAFETY: `self.prog` points at `len` valid `struct sock_filter`
        // values (`SockFilter` is `repr(C)` with the kernel's layout) that
        // live as long as `self`; the kernel copies them during the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                0 as libc::c_ulong,
                &raw const self.prog,
            )
        };
        if r != 0 {
            return -i64::from(errno());
        }
        0
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Make syscall `nr` with `args`; returns the result or a negative errno.
pub fn raw_syscall(nr: i64, args: [u64; 6]) -> i64 {
    // SAFETY: the caller chooses the syscall; this crate only uses it with
    // arguments that are integers or null/invalid pointers the kernel
    // checks, so no Rust memory is touched.
    let r = unsafe {
        libc::syscall(
            nr as libc::c_long,
            args[0],
            args[1],
            args[2],
            args[3],
            args[4],
            args[5],
        )
    };
    if r == -1 { -i64::from(errno()) } else { r }
}

/// Terminate the calling process immediately, without running destructors.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` is async-signal-safe and never returns.
    unsafe { libc::_exit(code) }
}

/// Reap child `pid`; returns the raw wait status or a negative errno.
pub fn wait_pid(pid: i64) -> i64 {
    let mut status: libc::c_int = 0;
    // SAFETY: `status` is a valid out-pointer for the duration of the call.
    let r = unsafe { libc::waitpid(pid as libc::pid_t, &raw mut status, 0) };
    if r < 0 {
        -i64::from(errno())
    } else {
        i64::from(status)
    }
}

/// How a forked probe ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildOutcome {
    /// The probe returned this value (a result or a negative errno).
    Returned(i64),
    /// Installing the filter failed with this errno.
    InstallFailed(i32),
    /// The child was killed by this signal.
    Signaled(i32),
    /// The child exited with this status without reporting a result.
    Exited(i32),
}

/// Fork; in the child install `filter` (if any), run `probe` and report its
/// result. `probe` must not allocate.
pub fn fork_probe(filter: Option<&Prepared<'_>>, probe: fn() -> i64) -> io::Result<ChildOutcome> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [rd, wr] = fds;
    // SAFETY: the child only makes raw syscalls and `_exit`s (see the module
    // documentation); the parent continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = io::Error::last_os_error();
        close(rd);
        close(wr);
        return Err(e);
    }
    if pid == 0 {
        close(rd);
        let report = |tag: u8, value: i64| {
            let mut buf = [0u8; 9];
            buf[0] = tag;
            buf[1..].copy_from_slice(&value.to_le_bytes());
            // SAFETY: `buf` is valid for 9 bytes; `wr` is our pipe end.
            unsafe { libc::write(wr, buf.as_ptr().cast(), buf.len()) };
        };
        if let Some(f) = filter {
            let r = f.install_raw();
            if r != 0 {
                report(1, -r);
                exit_now(0);
            }
        }
        let value = probe();
        report(0, value);
        exit_now(0);
    }
    close(wr);
    let mut buf = [0u8; 9];
    let mut got = 0usize;
    while got < buf.len() {
        // SAFETY: the destination range lies inside `buf`.
        let n = unsafe { libc::read(rd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    close(rd);
    let status = wait_pid(i64::from(pid));
    if status < 0 {
        return Err(io::Error::from_raw_os_error(-status as i32));
    }
    let status = status as libc::c_int;
    if got == buf.len() {
        let mut v = [0u8; 8];
        v.copy_from_slice(&buf[1..]);
        let value = i64::from_le_bytes(v);
        return Ok(if buf[0] == 1 {
            ChildOutcome::InstallFailed(value as i32)
        } else {
            ChildOutcome::Returned(value)
        });
    }
    if libc::WIFSIGNALED(status) {
        Ok(ChildOutcome::Signaled(libc::WTERMSIG(status)))
    } else {
        Ok(ChildOutcome::Exited(libc::WEXITSTATUS(status)))
    }
}

fn close(fd: libc::c_int) {
    // SAFETY: closing a descriptor this module opened.
    unsafe { libc::close(fd) };
}

/// Time `calls` raw `getppid` calls in a forked child, under `filter` if
/// given. Returns the elapsed time.
pub fn time_getppid(filter: Option<&Prepared<'_>>, calls: u32) -> io::Result<Duration> {
    CALLS.store(calls, std::sync::atomic::Ordering::Relaxed);
    match fork_probe(filter, getppid_loop)? {
        ChildOutcome::Returned(ns) if ns >= 0 => Ok(Duration::from_nanos(ns as u64)),
        other => Err(io::Error::other(format!(
            "timing child ended with {other:?}"
        ))),
    }
}

static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn getppid_loop() -> i64 {
    let n = CALLS.load(std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(raw_syscall(libc::SYS_getppid, [0; 6]));
    }
    i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX)
}
