//! Every raw system call of the broker, behind one door.
//!
//! Each function is a thin, checked wrapper that turns a `-1` return into an
//! [`io::Error`] and hands out [`OwnedFd`]s. Kernel interfaces: `openat2(2)`
//! (the parent, without following links), `openat(2)`, `fstat(2)`,
//! `fstatat(2)`, `mkdirat(2)`, `fchmod(2)`, `fchmodat(2)`, `unlinkat(2)`,
//! `fdopendir(3)`/`readdir(3)` on a duplicate descriptor, `poll(2)`,
//! `pipe2(2)` and `geteuid(2)`.
#![expect(
    unsafe_code,
    reason = "the one module of this crate that makes raw system calls"
)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte"))
}

fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd)
        .map_err(|_| io::Error::other("the kernel returned an out-of-range descriptor"))?;
    // SAFETY: `fd` was just returned by the kernel, is open, and is owned by
    // nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the directory `path` with `O_PATH | O_DIRECTORY | O_NOFOLLOW |
/// O_CLOEXEC` through `openat2(2)` with `RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS`: no component may be a symbolic link.
pub fn open_directory_no_symlinks(path: &Path) -> io::Result<OwnedFd> {
    let c_path = cstring(path.as_os_str().as_bytes())?;
    // SAFETY: `open_how` is plain-old-data; all-zero is a valid value and it
    // is `#[non_exhaustive]`, so it cannot be built by a literal.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `c_path` is NUL-terminated and `how` is a valid `open_how`
    // whose exact size is passed; both outlive the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    owned(fd)
}

/// `openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW)`.
pub fn open_at(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `dir` is live for the call and `name` is NUL-terminated.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        )
    };
    owned(libc::c_long::from(fd))
}

/// `fstat(2)` of a descriptor (an `O_PATH` descriptor works too).
pub fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: `stat` is plain-old-data; all-zero is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is live and `st` is a writable `stat` that outlives the
    // call.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub fn fstat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: `stat` is plain-old-data; all-zero is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is live, `name` is NUL-terminated and `st` is writable;
    // all outlive the call.
    if unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    } < 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdir_at(dir: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `dir` is live and `name` is NUL-terminated.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `fchmod(fd, mode)` (not for `O_PATH` descriptors).
pub fn fchmod(fd: BorrowedFd<'_>, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `fd` is live; plain integer arguments.
    if unsafe { libc::fchmod(fd.as_raw_fd(), mode) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `fchmodat(dir, name, mode, 0)`.
pub fn fchmod_at(dir: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `dir` is live and `name` is NUL-terminated.
    if unsafe { libc::fchmodat(dir.as_raw_fd(), name.as_ptr(), mode, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `unlinkat(dir, name, flags)`.
pub fn unlink_at(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: `dir` is live and `name` is NUL-terminated.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The names in the directory `dir` (an `O_RDONLY | O_DIRECTORY`
/// descriptor), without `.` and `..`, read through `fdopendir(3)` of a
/// duplicate so that `dir` itself stays open; at most `limit` names.
pub fn list_directory(dir: BorrowedFd<'_>, limit: usize) -> io::Result<Vec<Vec<u8>>> {
    let dup = dir.try_clone_to_owned()?;
    // SAFETY: `dup` is a live descriptor we own; on success `fdopendir`
    // takes ownership of it (released by `closedir` below).
    let stream = unsafe { libc::fdopendir(dup.as_raw_fd()) };
    if stream.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(dup);
    let mut names = Vec::new();
    let mut result = Ok(());
    loop {
        // SAFETY: `stream` is a valid DIR* until closedir.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            break;
        }
        // SAFETY: `entry` points to a valid dirent whose `d_name` is
        // NUL-terminated, valid until the next readdir on `stream`.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if names.len() == limit {
            result = Err(io::Error::other("the directory has too many entries"));
            break;
        }
        names.push(name.to_vec());
    }
    // SAFETY: `stream` came from fdopendir and is closed exactly once; this
    // also closes the duplicate descriptor.
    unsafe { libc::closedir(stream) };
    result.map(|()| names)
}

/// `pipe2(O_CLOEXEC | O_NONBLOCK)`: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a writable array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both numbers were just returned by the kernel and are owned by
    // nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Waits until `first` or `second` is readable (or has an error/hangup).
/// Returns `(first_ready, second_ready)`. `EINTR` is retried.
pub fn poll_two(first: BorrowedFd<'_>, second: BorrowedFd<'_>) -> io::Result<(bool, bool)> {
    let mut fds = [
        libc::pollfd {
            fd: first.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: second.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd structures for the
        // call; both descriptors are live.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok((fds[0].revents != 0, fds[1].revents != 0));
    }
}

/// The effective uid of this process.
pub fn effective_uid() -> libc::uid_t {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}
