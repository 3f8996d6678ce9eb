//! Raw system calls: installing a filter and running probes in a forked
//! child. Used by the real-kernel tests and the benchmark (which includes
//! this file by path); not part of the library, which makes no syscall.
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

use splash_seccomp::Program;
use splash_seccomp::bpf::{BPF_MAXINSNS, SockFilter};

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
            .filter(|&l| l > 0 && usize::from(l) <= BPF_MAXINSNS)
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
/// Private: only the fixed probes below call it, with integer arguments,
/// null pointers, or pointers to live locals of the right size.
fn raw_syscall(nr: i64, args: [u64; 6]) -> i64 {
    // SAFETY: every caller in this module passes integers, null pointers
    // (which the kernel checks), or pointers to live locals large enough for
    // what the syscall may write; no caller passes CLONE_VM or other flags
    // that would share or write this process's memory.
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
fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` is async-signal-safe and never returns.
    unsafe { libc::_exit(code) }
}

/// Reap child `pid`; returns the raw wait status or a negative errno.
fn wait_pid(pid: i64) -> i64 {
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
/// result.
pub fn fork_probe(filter: Option<&Prepared<'_>>, probe: Probe) -> io::Result<ChildOutcome> {
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
        let value = probe.run();
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
    match fork_probe(filter, Probe::TimeGetppid { calls })? {
        ChildOutcome::Returned(ns) if ns >= 0 => Ok(Duration::from_nanos(ns as u64)),
        other => Err(io::Error::other(format!(
            "timing child ended with {other:?}"
        ))),
    }
}

/// The fixed set of syscall probes a forked child can run. Each makes raw
/// syscalls only (no allocation, no locks) and returns the result or a
/// negative errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Getpid,
    Getppid,
    /// `mount("none", "/nonexistent-splash-seccomp-test", "tmpfs", 0, NULL)`.
    MountNonexistent,
    /// `unshare(flags)`.
    Unshare {
        flags: u64,
    },
    /// Legacy `clone(flags)` without a new stack, like `fork`: the new
    /// process exits at once and is reaped; returns 0 on success. Flags that
    /// would share memory or write through pointers (`CLONE_VM`,
    /// `CLONE_SETTLS`, `CLONE_*SETTID`, `CLONE_CHILD_CLEARTID`,
    /// `CLONE_PIDFD`, `CLONE_THREAD`, `CLONE_SIGHAND`) are refused with
    /// `-EINVAL` before the call.
    Clone {
        flags: u64,
    },
    /// `clone3(NULL, 0)`.
    Clone3Null,
    /// `ioctl(-1, request, buf)` with a 64-byte local buffer: always EBADF
    /// from the kernel, since the descriptor is looked up first.
    IoctlBadFd {
        request: u64,
    },
    /// `bpf(0x7fffffff, NULL, 0)`.
    BpfInvalid,
    /// `io_uring_setup(0, NULL)`.
    IoUringSetupNull,
    /// A valid `io_uring_setup(1, &params)` (zeroed parameters in a local
    /// buffer), then `getppid`: returns the setup's result (a descriptor or
    /// a negative errno) when the process carried on and `getppid` returned
    /// a pid, otherwise [`CARRY_ON_FAILED`].
    IoUringSetupThenGetppid,
    /// `kcmp(self, self, KCMP_VM, 0, 0)` after `getpid`: 0 when allowed.
    KcmpSelf,
    /// `personality(0xffffffff)` (a query).
    PersonalityQuery,
    /// `keyctl(0x7fff, 0, ...)`.
    KeyctlInvalid,
    /// `ptrace(0x7fff, 0, ...)`.
    PtraceInvalid,
    /// x86_64 only: `getpid` through the x32 ABI (`0x40000000 | 39`).
    X32Getpid,
    /// `memfd_create("splash-probe", flags)`; the descriptor is left to the
    /// child's exit.
    MemfdCreate {
        flags: u32,
    },
    /// Time `calls` raw `getppid` calls; returns nanoseconds.
    TimeGetppid {
        calls: u32,
    },
}

/// What [`Probe::IoUringSetupThenGetppid`] returns when the call after
/// `io_uring_setup` did not return a pid.
pub const CARRY_ON_FAILED: i64 = i64::MIN;

/// `KCMP_VM`: whether two processes share an address space.
const KCMP_VM: u64 = 1;

const CLONE_REFUSED: u64 = (libc::CLONE_VM
    | libc::CLONE_SETTLS
    | libc::CLONE_PARENT_SETTID
    | libc::CLONE_CHILD_SETTID
    | libc::CLONE_CHILD_CLEARTID
    | libc::CLONE_PIDFD
    | libc::CLONE_THREAD
    | libc::CLONE_SIGHAND) as u64;

impl Probe {
    /// Run the probe in the calling process (the forked child).
    fn run(self) -> i64 {
        match self {
            Probe::Getpid => raw_syscall(libc::SYS_getpid, [0; 6]),
            Probe::Getppid => raw_syscall(libc::SYS_getppid, [0; 6]),
            Probe::MountNonexistent => raw_syscall(
                libc::SYS_mount,
                [
                    c"none".as_ptr() as u64,
                    c"/nonexistent-splash-seccomp-test".as_ptr() as u64,
                    c"tmpfs".as_ptr() as u64,
                    0,
                    0,
                    0,
                ],
            ),
            Probe::Unshare { flags } => raw_syscall(libc::SYS_unshare, [flags, 0, 0, 0, 0, 0]),
            Probe::Clone { flags } => {
                // Only the low 32 bits reach the kernel's flag checks; refuse
                // dangerous bits in either half to be safe.
                if flags & (CLONE_REFUSED | (CLONE_REFUSED << 32)) != 0 {
                    return -i64::from(libc::EINVAL);
                }
                let r = raw_syscall(libc::SYS_clone, [flags, 0, 0, 0, 0, 0]);
                if r == 0 {
                    exit_now(0);
                }
                if r > 0 {
                    wait_pid(r);
                    return 0;
                }
                r
            }
            Probe::Clone3Null => raw_syscall(libc::SYS_clone3, [0; 6]),
            Probe::IoctlBadFd { request } => {
                let mut buf = [0u8; 64];
                raw_syscall(
                    libc::SYS_ioctl,
                    [u64::MAX, request, buf.as_mut_ptr() as u64, 0, 0, 0],
                )
            }
            Probe::BpfInvalid => raw_syscall(libc::SYS_bpf, [0x7fff_ffff, 0, 0, 0, 0, 0]),
            Probe::IoUringSetupNull => raw_syscall(libc::SYS_io_uring_setup, [0; 6]),
            Probe::IoUringSetupThenGetppid => {
                // `struct io_uring_params` is 120 bytes; the kernel reads and
                // writes exactly that much.
                let mut params = [0u64; 16];
                let setup = raw_syscall(
                    libc::SYS_io_uring_setup,
                    [1, params.as_mut_ptr() as u64, 0, 0, 0, 0],
                );
                if raw_syscall(libc::SYS_getppid, [0; 6]) > 0 {
                    setup
                } else {
                    CARRY_ON_FAILED
                }
            }
            Probe::KcmpSelf => {
                let pid = raw_syscall(libc::SYS_getpid, [0; 6]) as u64;
                raw_syscall(libc::SYS_kcmp, [pid, pid, KCMP_VM, 0, 0, 0])
            }
            Probe::PersonalityQuery => {
                raw_syscall(libc::SYS_personality, [0xffff_ffff, 0, 0, 0, 0, 0])
            }
            Probe::KeyctlInvalid => raw_syscall(libc::SYS_keyctl, [0x7fff, 0, 0, 0, 0, 0]),
            Probe::PtraceInvalid => raw_syscall(libc::SYS_ptrace, [0x7fff, 0, 0, 0, 0, 0]),
            Probe::X32Getpid => {
                if cfg!(target_arch = "x86_64") {
                    raw_syscall(0x4000_0000 | libc::SYS_getpid, [0; 6])
                } else {
                    -i64::from(libc::ENOSYS)
                }
            }
            Probe::MemfdCreate { flags } => raw_syscall(
                libc::SYS_memfd_create,
                [
                    c"splash-probe".as_ptr() as u64,
                    u64::from(flags),
                    0,
                    0,
                    0,
                    0,
                ],
            ),
            Probe::TimeGetppid { calls } => {
                let start = Instant::now();
                for _ in 0..calls {
                    std::hint::black_box(raw_syscall(libc::SYS_getppid, [0; 6]));
                }
                i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX)
            }
        }
    }
}
