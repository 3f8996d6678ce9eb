//! Pipes, eventfds and waiting on them (`pipe2(2)`, `eventfd(2)`, `poll(2)`).

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, Timespec};

/// Waits at most `timeout` for `fd` to become readable (data, end of input
/// or an error condition) with `poll(2)`; `false` when the time ran out.
/// An interrupted wait is reported as not yet readable.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: std::time::Duration) -> io::Result<bool> {
    let timeout = Timespec {
        tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// A close-on-exec `eventfd(2)` that starts at 0.
pub fn eventfd() -> io::Result<OwnedFd> {
    Ok(rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC,
    )?)
}

/// Adds 1 to an eventfd, making it readable for good (nothing reads it).
pub fn eventfd_signal(fd: BorrowedFd<'_>) -> io::Result<()> {
    let one = 1u64.to_ne_bytes();
    loop {
        match rustix::io::write(fd, &one) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits (at most `timeout`, or without bound for `None`) until `first` or
/// `second` is readable; `Some(0)` or `Some(1)` names which (`second` wins
/// when both are), `None` when the time ran out or the wait was
/// interrupted.
pub fn wait_either(
    first: BorrowedFd<'_>,
    second: BorrowedFd<'_>,
    timeout: Option<std::time::Duration>,
) -> io::Result<Option<usize>> {
    let timeout = timeout.map(|t| Timespec {
        tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: t.subsec_nanos().into(),
    });
    let mut fds = [
        PollFd::from_borrowed_fd(first, PollFlags::IN),
        PollFd::from_borrowed_fd(second, PollFlags::IN),
    ];
    match rustix::event::poll(&mut fds, timeout.as_ref()) {
        Ok(0) | Err(rustix::io::Errno::INTR) => Ok(None),
        Ok(_) if !fds[1].revents().is_empty() => Ok(Some(1)),
        Ok(_) => Ok(Some(0)),
        Err(e) => Err(e.into()),
    }
}
