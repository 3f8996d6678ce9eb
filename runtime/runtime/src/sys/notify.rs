//! Seccomp user notifications and the listener hand-over of a learning run
//! ([`crate::learn`]): `socketpair(2)` and `recvmsg(2)` with `SCM_RIGHTS`,
//! `poll(2)`, and the `SECCOMP_IOCTL_NOTIF_RECV`, `SECCOMP_IOCTL_NOTIF_SEND`
//! and `SECCOMP_IOCTL_NOTIF_ID_VALID` requests of `ioctl(2)`.
#![expect(
    unsafe_code,
    reason = "seccomp user notifications and `SCM_RIGHTS` have no safe binding"
)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// A Unix `SOCK_SEQPACKET` pair, both ends close-on-exec.
pub(crate) fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: `fds` is a writable array of two descriptors.
    let ret = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: on success the kernel returned two new descriptors nobody else
    // owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// What a wait for a descriptor saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Something to read.
    Readable,
    /// The other side is gone and nothing is left to read.
    Hangup,
    /// Nothing within the timeout.
    Timeout,
}

/// Waits up to `timeout_ms` for `fd` to become readable.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, timeout_ms: i32) -> io::Result<Readiness> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid, writable `pollfd`.
    let ret = unsafe { libc::poll(&raw mut pfd, 1, timeout_ms) };
    if ret < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(Readiness::Timeout);
        }
        return Err(e);
    }
    if ret == 0 {
        return Ok(Readiness::Timeout);
    }
    if pfd.revents & libc::POLLIN != 0 {
        Ok(Readiness::Readable)
    } else {
        Ok(Readiness::Hangup)
    }
}

/// Receives exactly one descriptor sent with `SCM_RIGHTS` on `socket`.
/// Any other message shape is an error (every descriptor received is
/// closed).
pub(crate) fn recv_fd(socket: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = [0u64; 8];
    // SAFETY: an all-zero `msghdr` is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at live buffers of the sizes it states.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &raw mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut received: Vec<OwnedFd> = Vec::new();
    // SAFETY: the kernel filled `msg.msg_control` with `msg_controllen`
    // bytes of well-formed control messages; the CMSG macros walk them
    // within that length, and each `SCM_RIGHTS` payload holds
    // `(cmsg_len - CMSG_LEN(0)) / 4` descriptors now owned by this process.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let payload = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..payload / std::mem::size_of::<RawFd>() {
                    received.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&raw const msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 || n != 1 || received.len() != 1 {
        return Err(io::Error::other(format!(
            "expected one descriptor in one byte, got {} descriptor(s) in {n} byte(s)",
            received.len()
        )));
    }
    Ok(received.remove(0))
}

/// One seccomp notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Notification {
    /// The notification's cookie.
    pub id: u64,
    /// The calling thread, in this process's pid namespace.
    pub pid: u32,
    /// The system call number.
    pub nr: i32,
    /// `AUDIT_ARCH_*` of the call.
    pub arch: u32,
    /// The instruction pointer at the call.
    pub ip: u64,
    /// The six arguments.
    pub args: [u64; 6],
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: the next notification.
pub(crate) fn notif_recv(listener: BorrowedFd<'_>) -> io::Result<Notification> {
    // SAFETY: the kernel requires a zeroed `seccomp_notif`; all-zero is a
    // valid value of this plain C structure.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: `n` is a writable `seccomp_notif`, the type this request
    // fills.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &raw mut n,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Notification {
        id: n.id,
        pid: n.pid,
        nr: n.data.nr,
        arch: n.data.arch,
        ip: n.data.instruction_pointer,
        args: n.data.args,
    })
}

/// How a notified call is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// `SECCOMP_USER_NOTIF_FLAG_CONTINUE`: the call runs.
    Continue,
    /// The call does not run and fails with this errno.
    Fail(i32),
}

/// `SECCOMP_IOCTL_NOTIF_SEND`.
pub(crate) fn notif_send(listener: BorrowedFd<'_>, id: u64, answer: Answer) -> io::Result<()> {
    let (error, flags) = match answer {
        Answer::Continue => (0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
        Answer::Fail(errno) => (-errno, 0),
    };
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error,
        flags,
    };
    // SAFETY: `resp` is a valid `seccomp_notif_resp`, the type this request
    // reads.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &raw mut resp,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: whether the notification `id` is still
/// pending (its thread still waits in that call).
pub(crate) fn notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the request reads one `u64` through the pointer.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &raw mut id,
        )
    };
    ret == 0
}

/// Opens `path` (absolute, as a sandbox sees it) for reading, resolved
/// entirely inside the directory tree of `root` (`/proc/PID/root`):
/// `openat2(2)` with `RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS`, so neither a
/// symbolic link nor `..` can lead the host outside the sandbox's root,
/// however the sandbox changes its files meanwhile. Only a regular file is
/// returned.
pub(crate) fn open_in_root(root: &std::path::Path, path: &str) -> io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let fd = rustix::fs::openat2(
        &dir,
        path.trim_start_matches('/'),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
    )?;
    let file = std::fs::File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}
