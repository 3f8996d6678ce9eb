//! One path component relative to a directory descriptor, as the cgroup-v2
//! boundary uses them (`openat(2)`, `fstatat(2)`, `mkdirat(2)`,
//! `unlinkat(2)`).

use std::ffi::CString;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{self, AtFlags, Mode, OFlags};

// ---------------------------------------------------------------- cgroup v2
//
// The cgroup boundary (`crate::cgroup`) works relative to directory
// descriptors: the parent is opened once, the child is created with
// `mkdirat`, every control file is opened with `openat` relative to the
// child's descriptor, and the child is removed with `unlinkat`.

fn c_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a name relative to a directory descriptor must be one non-empty component",
        ));
    }
    CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte"))
}

/// `openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW)`: one component
/// relative to `dir`, never following a symbolic link.
pub fn open_at(dir: BorrowedFd<'_>, name: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let c = c_name(name)?;
    Ok(fs::openat(
        dir,
        c.as_c_str(),
        flags | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?)
}

/// Whether `name` exists in `dir` (`fstatat(2)` without following a link).
pub fn exists_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<bool> {
    let c = c_name(name)?;
    match fs::statat(dir, c.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `mkdirat(dir, name, mode)`; fails with `EEXIST` if `name` exists.
pub fn make_directory_at(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()> {
    let c = c_name(name)?;
    Ok(fs::mkdirat(dir, c.as_c_str(), Mode::from_raw_mode(mode))?)
}

/// `unlinkat(dir, name, AT_REMOVEDIR)`: removes the (empty) directory.
pub fn remove_directory_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    let c = c_name(name)?;
    Ok(fs::unlinkat(dir, c.as_c_str(), AtFlags::REMOVEDIR)?)
}
