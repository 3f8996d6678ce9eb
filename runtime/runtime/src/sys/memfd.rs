//! The sealed anonymous file that carries the seccomp program
//! (`memfd_create(2)`, `fcntl(F_ADD_SEALS)`).

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;

use rustix::fs::{self, MemfdFlags, SealFlags};

/// Writes `bytes` into a fresh `memfd_create(2)` descriptor (close-on-exec,
/// sealable), rewinds it to offset 0 (Bubblewrap reads from the current
/// offset), and seals it against any further change of size or content.
pub fn sealed_memfd(name: &str, bytes: &[u8]) -> io::Result<OwnedFd> {
    let owned = fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    let mut file = File::from(owned);
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    fs::fcntl_add_seals(
        &file,
        SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE,
    )?;
    Ok(OwnedFd::from(file))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn sealed_memfd_reads_from_the_start_and_refuses_changes() {
        let fd = sealed_memfd("splash-test", b"program").expect("memfd");
        let mut file = File::from(fd);
        let mut text = String::new();
        file.read_to_string(&mut text).expect("read");
        assert_eq!(text, "program");
        let err = file.write_all(b"x").expect_err("sealed against writes");
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
        let err = file.set_len(0).expect_err("sealed against shrinking");
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
    }
}
