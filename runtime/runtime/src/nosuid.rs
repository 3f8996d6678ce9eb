//! Read-write host roots of a worker that runs as host uid 0.
//!
//! When the host launches as root, the worker is host uid 0 without any
//! capability. In a read-write host root it owns what it creates, mode bits
//! included: `chmod 4755`, `open(O_CREAT)` with mode `04755`, `mknod` of a
//! regular file with `S_ISUID`, or the same through `io_uring` all leave a
//! set-user-ID-root program on the host. Bubblewrap's mounts inside the
//! sandbox are `nosuid`; the host's own mount of the directory is what
//! decides whether a host user who reaches the file gains root.
//!
//! The kernel guarantee that covers every route (set-user-ID, set-group-ID
//! and file capabilities alike) is the host mount's `nosuid` flag
//! (`MNT_NOSUID`). So, when the worker would run as host uid 0, every
//! read-write host root must be on a `nosuid` mount: its pinned descriptor
//! (or, unpinned, its canonical path opened `O_PATH`) is asked with
//! `fstatvfs`, and every mount beneath it in `/proc/self/mountinfo` (a
//! read-write bind is recursive, so the worker writes into those too) must be
//! `nosuid` as well, and no other mount of the same filesystem without
//! `nosuid` may show the directory where it is not covered (the bits are on
//! the inode; `nosuid` is per mount). Otherwise bind fails with
//! [`SetIdError`]. Only this process's mount namespace is seen. tmpfs roots
//! live inside the sandbox; read-only roots refuse every write with `EROFS`.

use std::fs;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use crate::sys;

/// The host's mount table, as this process sees it.
const MOUNTINFO: &str = "/proc/self/mountinfo";

/// Why a read-write root cannot be granted to a worker that runs as host
/// uid 0.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetIdError {
    /// A read-write root of a root launch is on a mount without `nosuid`.
    #[error("read-write root `{root}` (`{}`) is on the host mount `{mount}`, which is not mounted `nosuid`, and the worker runs as host uid 0: a set-user-ID-root program it creates there would give root to any host user who can reach it. Mount the filesystem holding it `nosuid` (for example `mount -o remount,nosuid {mount}`, or a dedicated mount with `-o nosuid`), or launch as an unprivileged user; the launch is refused", .path.display(), mount = .mount.display())]
    HonoursSetId {
        /// The policy's root name.
        root: String,
        /// The path involved.
        path: PathBuf,
        /// The mount holding the path.
        mount: PathBuf,
    },
    /// A read-write root's filesystem is also mounted elsewhere without
    /// `nosuid`.
    #[error("read-write root `{root}` (`{}`) is on a `nosuid` mount, but its filesystem is also mounted at `{mount}` without `nosuid`, where the directory appears as `{appears}`, and the worker runs as host uid 0: a set-user-ID-root program it creates would give root to any host user who can reach it there. Mount that one `nosuid` too (`mount -o remount,nosuid {mount}`), or launch as an unprivileged user; the launch is refused", .path.display(), mount = .mount.display(), appears = .appears.display())]
    AlsoMounted {
        /// The policy's root name.
        root: String,
        /// The path involved.
        path: PathBuf,
        /// The mount holding the path.
        mount: PathBuf,
        /// Where else the filesystem is mounted.
        appears: PathBuf,
    },
    /// Failed to read the mount flags of read-write root `root` (`path`).
    #[error("failed to read the mount flags of read-write root `{root}` (`{}`); the launch is refused", .path.display())]
    Inspect {
        /// The policy's root name.
        root: String,
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// One line of `/proc/self/mountinfo`: the filesystem (`major:minor`), the
/// directory of it that is mounted, the mount point and whether its
/// per-mount options include `nosuid`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MountEntry {
    device: String,
    root: PathBuf,
    point: PathBuf,
    nosuid: bool,
}

/// Undoes the octal escapes (`\040` and the like) of a mountinfo field.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value = bytes[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let device = fields.nth(2)?;
            let root = fields.next()?;
            let point = fields.next()?;
            let options = fields.next()?;
            Some(MountEntry {
                device: device.to_owned(),
                root: PathBuf::from(unescape(root)),
                point: PathBuf::from(unescape(point)),
                nosuid: options.split(',').any(|o| o == "nosuid"),
            })
        })
        .collect()
}

/// The mount that holds `path`: the last (topmost) of the longest mount
/// points that are ancestors of it.
fn holding_mount<'a>(mounts: &'a [MountEntry], path: &Path) -> Option<&'a MountEntry> {
    let mut best: Option<&MountEntry> = None;
    for m in mounts.iter().filter(|m| path.starts_with(&m.point)) {
        if best.is_none_or(|b| m.point.as_os_str().len() >= b.point.as_os_str().len()) {
            best = Some(m);
        }
    }
    best
}

/// Checks one read-write root that the worker (host uid 0) will write
/// through `fd`, whose canonical host path is `path`.
pub fn check_root(root: &str, path: &Path, fd: BorrowedFd<'_>) -> Result<(), SetIdError> {
    let inspect = |source: io::Error| SetIdError::Inspect {
        root: root.to_owned(),
        path: path.to_path_buf(),
        source,
    };
    let table = fs::read_to_string(MOUNTINFO).map_err(inspect)?;
    let mounts = parse_mountinfo(&table);
    let holding = holding_mount(&mounts, path);
    if !sys::mounted_nosuid(fd).map_err(inspect)? {
        return Err(SetIdError::HonoursSetId {
            root: root.to_owned(),
            path: path.to_path_buf(),
            mount: holding.map_or_else(|| path.to_path_buf(), |m| m.point.clone()),
        });
    }
    // The same directory reached through another mount of its filesystem
    // that honours the bits (a second mount, or a bind of a parent, that is
    // not covered where the directory appears in it).
    if let Some(holding) = holding {
        let within = path.strip_prefix(&holding.point).unwrap_or(path);
        let on_fs = holding.root.join(within);
        for other in mounts
            .iter()
            .filter(|m| m.device == holding.device && !m.nosuid && !std::ptr::eq(*m, holding))
        {
            let Ok(rest) = on_fs.strip_prefix(&other.root) else {
                continue;
            };
            let appears = other.point.join(rest);
            if holding_mount(&mounts, &appears).is_some_and(|m| std::ptr::eq(m, other)) {
                return Err(SetIdError::AlsoMounted {
                    root: root.to_owned(),
                    path: path.to_path_buf(),
                    mount: other.point.clone(),
                    appears,
                });
            }
        }
    }
    if let Some(below) = mounts
        .iter()
        .find(|m| m.point != path && m.point.starts_with(path) && !m.nosuid)
    {
        return Err(SetIdError::HonoursSetId {
            root: root.to_owned(),
            path: path.to_path_buf(),
            mount: below.point.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_the_unescaped_point_and_the_nosuid_option() {
        let text = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    30 22 0:5 / /srv/a\\040b rw,nosuid,nodev - tmpfs tmpfs rw\n\
                    31 22 0:6 / /srv/c rw,nodev - tmpfs tmpfs rw,nosuid\n";
        assert_eq!(
            parse_mountinfo(text),
            vec![
                MountEntry {
                    device: "8:1".into(),
                    root: PathBuf::from("/"),
                    point: PathBuf::from("/"),
                    nosuid: false
                },
                MountEntry {
                    device: "0:5".into(),
                    root: PathBuf::from("/"),
                    point: PathBuf::from("/srv/a b"),
                    nosuid: true
                },
                // Only the per-mount options count: the superblock's
                // `nosuid` after the separator is not the mount's flag.
                MountEntry {
                    device: "0:6".into(),
                    root: PathBuf::from("/"),
                    point: PathBuf::from("/srv/c"),
                    nosuid: false
                },
            ]
        );
    }
}
