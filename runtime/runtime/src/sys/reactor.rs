//! A tokio host's readiness: registering a descriptor with the runtime's
//! reactor (`epoll(7)`), and `read(2)`/`write(2)` on a non-blocking pipe
//! (`ioctl(FIONBIO)`).
#![expect(
    unsafe_code,
    reason = "tokio's registration of a raw descriptor is unsafe: it cannot know the descriptor stays open"
)]

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Registers `fd` with the current runtime's reactor for `interest`.
/// Must be called in a runtime's context (the blocking pool is one).
pub fn register(fd: OwnedFd, interest: Interest) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` owns `fd`: an `OwnedFd` stays open, and its
    // `as_raw_fd` returns the same descriptor, until it is dropped with the
    // `AsyncFd` or taken back by `into_inner`, as the registration needs.
    unsafe { AsyncFd::register_with_interest(fd, interest) }.map_err(io::Error::from)
}

/// Makes reads and writes on `fd` fail with `WouldBlock` instead of
/// waiting (`FIONBIO`); for a pipe end only this process holds.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::io::ioctl_fionbio(fd, true)?)
}

/// One `read(2)` on a non-blocking descriptor, retried when interrupted;
/// `WouldBlock` when nothing is there yet.
pub fn read_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match rustix::io::read(fd, &mut *buf) {
            Ok(n) => return Ok(n),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// One `write(2)` on a non-blocking descriptor, retried when interrupted;
/// `WouldBlock` when the pipe is full.
pub fn write_some(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    loop {
        match rustix::io::write(fd, buf) {
            Ok(n) => return Ok(n),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}
