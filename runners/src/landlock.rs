//! The Landlock executable allowlist.
//!
//! Landlock is a hard requirement here: an unsupported or disabled Landlock,
//! a file that fails its checks, a rule the kernel refuses or a failed
//! `landlock_restrict_self` is an error, never a downgrade.
//!
//! "Fully enforced" means, and is all this module can establish before
//! `execve`: the running kernel reports Landlock ABI 1 or later (every ABI
//! supports `LANDLOCK_ACCESS_FS_EXECUTE`, the only handled right, so no right
//! is silently dropped); the kernel accepted one rule per allowed file;
//! `no_new_privs` reads back as set; and `landlock_restrict_self` returned
//! success. From then on the domain is in force for this process and every
//! descendant and cannot be removed.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

use crate::args::AllowedPath;
use crate::{Failure, sys};

/// Applies the allowlist to this process: after it returns, only the listed
/// files can be executed (directly or as an ELF interpreter) by this
/// process and its descendants.
pub fn enforce(allowed: &[AllowedPath]) -> Result<(), Failure> {
    // 1. Landlock must be there.
    let abi = sys::landlock_abi_version().map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel does not support landlock".to_owned(),
            Some(libc::EOPNOTSUPP) => "landlock is disabled on this kernel".to_owned(),
            _ => format!("failed to query the landlock abi: {e}"),
        };
        Failure::setup(why)
    })?;
    if abi < 1 {
        return Err(Failure::setup(format!(
            "landlock abi `{abi}` cannot enforce `LANDLOCK_ACCESS_FS_EXECUTE`"
        )));
    }

    // 2. Open and check every file before any rule exists.
    let files = allowed
        .iter()
        .map(open_executable)
        .collect::<Result<Vec<_>, _>>()?;

    // 3. A ruleset that handles only EXECUTE, one exact rule per file.
    let ruleset = sys::landlock_create_ruleset(sys::LANDLOCK_ACCESS_FS_EXECUTE)
        .map_err(|e| Failure::setup(format!("failed to create the landlock ruleset: {e}")))?;
    for (path, file) in allowed.iter().zip(&files) {
        sys::landlock_add_path_rule(
            ruleset.as_fd(),
            sys::LANDLOCK_ACCESS_FS_EXECUTE,
            file.as_fd(),
        )
        .map_err(|e| {
            Failure::setup(format!(
                "failed to add the landlock rule for `{}`: {e}",
                path.display()
            ))
        })?;
    }
    drop(files);

    // 4. no_new_privs, read back, then enforce.
    sys::set_no_new_privs()
        .map_err(|e| Failure::setup(format!("failed to set `no_new_privs`: {e}")))?;
    match sys::no_new_privs() {
        Ok(true) => {}
        Ok(false) => {
            return Err(Failure::setup(
                "`no_new_privs` is not set after setting it".to_owned(),
            ));
        }
        Err(e) => {
            return Err(Failure::setup(format!(
                "failed to read `no_new_privs`: {e}"
            )));
        }
    }
    sys::landlock_restrict_self(ruleset.as_fd())
        .map_err(|e| Failure::setup(format!("failed to enforce the landlock ruleset: {e}")))?;
    drop(ruleset);
    Ok(())
}

/// Opens `path` with `O_PATH | O_NOFOLLOW | O_CLOEXEC` and requires a
/// regular file with at least one execute bit, checked on the descriptor.
fn open_executable(path: &AllowedPath) -> Result<File, Failure> {
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path.as_os_str())
        .map_err(|e| Failure::setup(format!("failed to open allowed executable `{shown}`: {e}")))?;
    let meta = file.metadata().map_err(|e| {
        Failure::setup(format!(
            "failed to inspect allowed executable `{shown}`: {e}"
        ))
    })?;
    if meta.file_type().is_symlink() {
        return Err(Failure::setup(format!(
            "allowed executable `{shown}` is a symbolic link; list the file it resolves to"
        )));
    }
    if !meta.is_file() {
        return Err(Failure::setup(format!(
            "allowed executable `{shown}` is not a regular file"
        )));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(Failure::setup(format!(
            "allowed executable `{shown}` has no execute bit"
        )));
    }
    Ok(file)
}
