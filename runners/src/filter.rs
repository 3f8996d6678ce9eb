//! The strict seccomp handoff: a raw cBPF program read from an inherited
//! descriptor and installed as the last step before `execve`.
//!
//! Encoding: an array of `struct sock_filter` (8 bytes each: `code: u16`,
//! `jt: u8`, `jf: u8`, `k: u32`) in native endianness, read from the
//! descriptor's current offset to end of file. The descriptor must be a pipe
//! or a regular file (a memfd); it is closed as soon as it has been read.

use std::fs::File;
use std::io::Read;
use std::os::fd::RawFd;
use std::os::unix::fs::FileTypeExt;

use crate::{Failure, sys};

/// The kernel's `BPF_MAXINSNS`.
pub const MAX_INSTRUCTIONS: usize = 4096;

/// Bytes of one `struct sock_filter`.
const INSTRUCTION_BYTES: usize = 8;

/// Bytes read at most: one more than the largest valid program, so an
/// oversize input is detected without reading all of it.
const BOUND_PLUS_ONE: u64 = (MAX_INSTRUCTIONS * INSTRUCTION_BYTES + 1) as u64;

/// A validated program, ready to install.
#[derive(Debug)]
pub struct Program(Vec<libc::sock_filter>);

/// Reads, validates and closes the program descriptor `fd`.
pub fn read_program(fd: RawFd) -> Result<Program, Failure> {
    let owned = sys::adopt_inherited_fd(fd)
        .map_err(|e| Failure::setup(format!("seccomp descriptor `{fd}` is not usable: {e}")))?;
    let mut file = File::from(owned);
    let kind = file
        .metadata()
        .map_err(|e| Failure::setup(format!("failed to inspect seccomp descriptor `{fd}`: {e}")))?
        .file_type();
    if !(kind.is_file() || kind.is_fifo()) {
        return Err(Failure::setup(format!(
            "seccomp descriptor `{fd}` is neither a pipe nor a regular file"
        )));
    }
    let mut bytes = Vec::with_capacity(MAX_INSTRUCTIONS * INSTRUCTION_BYTES + 1);
    (&mut file)
        .take(BOUND_PLUS_ONE)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::setup(format!("failed to read seccomp descriptor `{fd}`: {e}")))?;
    drop(file);
    decode(&bytes)
}

/// Checks the size rules and decodes native-endian instructions.
pub fn decode(bytes: &[u8]) -> Result<Program, Failure> {
    if bytes.is_empty() {
        return Err(Failure::data("the seccomp program is empty".to_owned()));
    }
    if bytes.len() > MAX_INSTRUCTIONS * INSTRUCTION_BYTES {
        return Err(Failure::data(format!(
            "the seccomp program has more than {MAX_INSTRUCTIONS} instructions"
        )));
    }
    if !bytes.len().is_multiple_of(INSTRUCTION_BYTES) {
        return Err(Failure::data(format!(
            "the seccomp program is `{}` bytes, not a whole number of 8-byte instructions",
            bytes.len()
        )));
    }
    let program = bytes
        .chunks_exact(INSTRUCTION_BYTES)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect();
    Ok(Program(program))
}

/// Sets `no_new_privs` (a no-op when Landlock already set it) and installs
/// the filter. Nothing but `execve` may follow.
pub fn install(program: &Program) -> Result<(), Failure> {
    sys::set_no_new_privs()
        .map_err(|e| Failure::setup(format!("failed to set `no_new_privs`: {e}")))?;
    sys::seccomp_set_filter(&program.0)
        .map_err(|e| Failure::setup(format!("failed to install the seccomp filter: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_rules() {
        assert_eq!(
            decode(&[]).map(drop).map_err(|f| f.code),
            Err(crate::exit::DATA)
        );
        assert!(decode(&[0; 7]).is_err());
        assert!(decode(&[0; 12]).is_err());
        assert!(decode(&vec![0; 4097 * 8]).is_err());
        assert_eq!(
            decode(&vec![0; 4096 * 8]).map(|p| p.0.len()).ok(),
            Some(4096)
        );
    }
}
