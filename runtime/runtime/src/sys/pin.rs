//! Pinning: opening host paths without following symbolic links (`openat2(2)`
//! with `RESOLVE_NO_SYMLINKS`) and directories relative to a pin.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self, Mode, OFlags, ResolveFlags};

/// Opens `path` with `O_PATH | O_NOFOLLOW | O_CLOEXEC` through `openat2(2)`
/// with `RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`: no directory component
/// of the path may be a symbolic link (`ELOOP`), and a link as the last
/// component is not followed (with `O_PATH | O_NOFOLLOW` the descriptor then
/// refers to the link itself, which the caller's `fstat` type check refuses).
/// A canonical path that was swapped for a link after canonicalization is
/// therefore never followed.
/// There is no fallback to `openat(2)`: a kernel without `openat2` fails.
pub fn open_path_no_symlinks(path: &Path) -> io::Result<OwnedFd> {
    openat2_no_symlinks(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)
}

/// `openat2(AT_FDCWD, path, flags)` with `RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS`, the one door for both path openings here.
fn openat2_no_symlinks(path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    Ok(fs::openat2(
        fs::CWD,
        path,
        flags,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?)
}

/// Opens the directory that `pin` (an `O_PATH` descriptor) refers to for
/// reading: `openat(pin, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
/// O_CLOEXEC)`. The result is the same inode as the pin, never a path lookup
/// from the host root.
pub fn open_directory_at(pin: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(fs::openat(
        pin,
        c".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens the directory `path` for reading (`O_RDONLY | O_DIRECTORY |
/// O_NOFOLLOW | O_CLOEXEC`) through `openat2(2)` with `RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS`: no component of `path` may be a symbolic link.
pub fn open_directory_no_symlinks(path: &Path) -> io::Result<OwnedFd> {
    openat2_no_symlinks(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
    )
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;

    #[test]
    fn pinning_refuses_any_symbolic_link_component() {
        let dir_guard = tempfile::Builder::new()
            .prefix("splash-sys-")
            .tempdir()
            .expect("create a temporary directory");
        let dir = dir_guard.path();
        std::fs::create_dir_all(dir.join("real")).expect("dir");
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).expect("link");
        let dir = dir.canonicalize().expect("canonical");
        assert!(open_path_no_symlinks(&dir.join("real")).is_ok());
        // A link as the last component is not followed: the descriptor
        // refers to the link itself, and bind's type check refuses it.
        let leaf = File::from(open_path_no_symlinks(&dir.join("link")).expect("leaf link"));
        assert!(leaf.metadata().expect("fstat").file_type().is_symlink());
        std::fs::create_dir(dir.join("real/sub")).expect("sub");
        let err = open_path_no_symlinks(&dir.join("link/sub")).expect_err("inner link");
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
    }
}
