//! The recording filter of a learning run (`splashc learn`).
//!
//! With `--learn-fd N` the runner installs, in the place where a production
//! launch installs the policy's own filter (after Landlock, the sweep and the
//! limits, just before the final `execve`), a filter that answers
//! `SECCOMP_RET_USER_NOTIF` for every system call of the native
//! architecture and kills any other. It is installed with
//! `SECCOMP_FILTER_FLAG_NEW_LISTENER`; the listener goes to the host over
//! the inherited Unix socket `N` with `SCM_RIGHTS`, and the runner closes
//! both before it executes the program, so nothing in the sandbox holds the
//! listener.
//!
//! The hand-over needs care: once the filter is in place every system call
//! of the filtered thread waits for an answer, and nobody can answer before
//! the host holds the listener. The filter is therefore installed on the
//! runner's main thread only (no `SECCOMP_FILTER_FLAG_TSYNC`), and a helper
//! thread started just before it, outside the filter, sends and closes the
//! listener while the main thread waits on an atomic flag without making a
//! system call. The main thread's first filtered call is the final `execve`,
//! which also ends the helper if it still exists.
//!
//! If the host goes away, the listener is closed and every later system
//! call of the program fails with `ENOSYS`: nothing runs unanswered.

use std::os::fd::{AsFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

use crate::{Failure, sys};

/// The inherited socket the listener is handed over on.
#[derive(Debug)]
pub struct LearnSocket(OwnedFd);

/// Takes the `--learn-fd` descriptor, which must be an open socket.
pub fn adopt_socket(fd: RawFd) -> Result<LearnSocket, Failure> {
    let owned = sys::adopt_inherited_fd(fd)
        .map_err(|e| Failure::setup(format!("learning descriptor `{fd}` is not usable: {e}")))?;
    match sys::is_socket(owned.as_fd()) {
        Ok(true) => Ok(LearnSocket(owned)),
        Ok(false) => Err(Failure::setup(format!(
            "learning descriptor `{fd}` is not a socket"
        ))),
        Err(e) => Err(Failure::setup(format!(
            "failed to inspect learning descriptor `{fd}`: {e}"
        ))),
    }
}

/// `AUDIT_ARCH_*` of the architecture this runner is built for.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
/// `AUDIT_ARCH_*` of the architecture this runner is built for.
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
/// `AUDIT_ARCH_*` of the architecture this runner is built for.
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xc000_00f3;

/// `SECCOMP_RET_USER_NOTIF`.
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
/// `SECCOMP_RET_KILL_PROCESS`.
const RET_KILL_PROCESS: u32 = 0x8000_0000;

/// The recording program: any other architecture is killed, as the
/// production filter's first check does; every native call is notified.
pub fn recording_program() -> [libc::sock_filter; 4] {
    let insn = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    [
        // ld [4]: seccomp_data.arch
        insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 4),
        insn(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            1,
            AUDIT_ARCH,
        ),
        insn(libc::BPF_RET | libc::BPF_K, 0, 0, RET_USER_NOTIF),
        insn(libc::BPF_RET | libc::BPF_K, 0, 0, RET_KILL_PROCESS),
    ]
}

/// No listener yet.
const WAITING: i32 = -1;
/// The filter could not be installed; the helper gives up.
const ABANDONED: i32 = -2;

/// Hand-over states.
const PENDING: u8 = 0;
const SENT: u8 = 1;
const FAILED: u8 = 2;

#[derive(Debug)]
struct Handoff {
    listener: AtomicI32,
    state: AtomicU8,
}

/// Installs the recording filter on this thread and hands its listener to
/// the host over `socket`; returns once the listener and the socket are
/// closed in this process.
pub fn install_and_hand_over(socket: LearnSocket) -> Result<(), Failure> {
    sys::set_no_new_privs()
        .map_err(|e| Failure::setup(format!("failed to set `no_new_privs`: {e}")))?;
    let shared = Arc::new(Handoff {
        listener: AtomicI32::new(WAITING),
        state: AtomicU8::new(PENDING),
    });
    let theirs = Arc::clone(&shared);
    let helper = std::thread::Builder::new()
        .name("handoff".to_owned())
        .spawn(move || hand_over(&theirs, socket))
        .map_err(|e| Failure::setup(format!("failed to start the hand-over thread: {e}")))?;
    let listener = match sys::seccomp_new_listener(&recording_program()) {
        Ok(fd) => fd,
        Err(e) => {
            shared.listener.store(ABANDONED, Ordering::Release);
            let _ = helper.join();
            return Err(Failure::setup(format!(
                "failed to install the recording filter: {e}"
            )));
        }
    };
    shared
        .listener
        .store(listener.into_raw_fd(), Ordering::Release);
    // From here every system call of this thread waits for the host; wait
    // for the helper without making one.
    loop {
        match shared.state.load(Ordering::Acquire) {
            PENDING => std::hint::spin_loop(),
            SENT => return Ok(()),
            _ => {
                return Err(Failure::setup(
                    "failed to hand the recording listener to the host".to_owned(),
                ));
            }
        }
    }
}

/// The helper thread: waits for the listener, sends it, closes it and the
/// socket, and reports.
fn hand_over(shared: &Handoff, socket: LearnSocket) {
    let raw = loop {
        match shared.listener.load(Ordering::Acquire) {
            WAITING => std::thread::yield_now(),
            ABANDONED => return,
            fd => break fd,
        }
    };
    let sent = sys::adopt_inherited_fd(raw).and_then(|listener| {
        let sent = sys::send_fd(socket.0.as_fd(), listener.as_fd());
        drop(listener);
        sent
    });
    drop(socket);
    let state = if sent.is_ok() { SENT } else { FAILED };
    shared.state.store(state, Ordering::Release);
}
