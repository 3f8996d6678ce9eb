//! The worker's host identity (`identity`): whether and to what a launch
//! switches, dynamic leases, and what the identity must be able to reach.
//!
//! A plan with an identity never runs Bubblewrap as host root. When this
//! process is root, the launched child switches to the identity after
//! everything that needs root (pinning, quota inspection, the cgroup
//! boundary) and just before it executes Bubblewrap (with a cgroup, the
//! cgroup runner switches right after it joined the child cgroup, with
//! `--identity UID:GID`): supplementary groups
//! cleared, then `setresgid`, then `setresuid`, then every real, effective
//! and saved id read back; a failed or partial switch ends the child before
//! its exec, and the launch fails. Pinned descriptors opened as root keep
//! working: they are already open. When this process is not root, an
//! identity equal to its own uid and gid needs no switch, and any other is
//! a bind error ([`IdentityError::Unswitchable`]).
//!
//! # Dynamic identities
//!
//! `identity dynamic` gets a uid (and the equal gid) per launch from a
//! range the host sets ([`IdentityRange`], default
//! [`IdentityRange::DEFAULT`]: the 65536 ids from 2147352576 = `0x7FFE0000`,
//! clear of systemd's dynamic users (61184–65519), of `nobody` and of the
//! usual subordinate-id ranges, which `useradd` hands out upwards from
//! 100000 and systemd's container ranges below `0x70000000`). A lease is a
//! file named after the uid in the lease directory (default
//! [`DEFAULT_LEASE_DIRECTORY`], a root-owned directory no one else may
//! write) on which this process holds an exclusive `flock` for the life of
//! the worker: the kernel drops the lock when the launch reaps the worker
//! or when this process dies, however it dies, so a lease a killed host
//! left behind is free again by construction. A uid whose lock is free but
//! that some process still runs as is skipped. The files stay (at most one
//! per id of the range); the lock, not the file, is the lease.

use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};
use splashpol::model::WorkerIdentity;
use splashpol::plan::LaunchPlan;

/// Where dynamic leases are kept unless the host says otherwise.
pub const DEFAULT_LEASE_DIRECTORY: &str = "/run/splash/identities";

/// The ids `identity dynamic` leases from: `count` ids from `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdentityRange {
    first: u32,
    count: u32,
}

impl IdentityRange {
    /// The default range: 65536 ids from `0x7FFE0000` (module
    /// documentation).
    pub const DEFAULT: IdentityRange = IdentityRange {
        first: 0x7FFE_0000,
        count: 0x1_0000,
    };

    /// A range of `count` ids from `first`. Refused: an empty range, one
    /// that reaches below 65536 (root, system users, systemd's dynamic
    /// users and `nobody` live there) or up to 4294967295 (`(uid_t) -1`).
    pub fn new(first: u32, count: u32) -> Result<Self, IdentityError> {
        let bad = |why| IdentityError::Range { first, count, why };
        if count == 0 {
            return Err(bad("it is empty"));
        }
        if first < 0x1_0000 {
            return Err(bad("it starts below 65536"));
        }
        match first.checked_add(count - 1) {
            Some(last) if last < u32::MAX => Ok(Self { first, count }),
            _ => Err(bad("it reaches 4294967295")),
        }
    }

    /// The first id.
    pub fn first(&self) -> u32 {
        self.first
    }

    /// How many ids.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether `id` is in the range.
    pub fn contains(&self, id: u32) -> bool {
        id >= self.first && id - self.first < self.count
    }
}

impl Default for IdentityRange {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The host's settings for dynamic identities (part of
/// [`crate::BindOptions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicIdentities {
    pub(crate) range: IdentityRange,
    pub(crate) directory: PathBuf,
}

impl Default for DynamicIdentities {
    fn default() -> Self {
        Self {
            range: IdentityRange::DEFAULT,
            directory: PathBuf::from(DEFAULT_LEASE_DIRECTORY),
        }
    }
}

impl DynamicIdentities {
    /// Leases from `range` in `directory`.
    pub fn new(range: IdentityRange, directory: impl Into<PathBuf>) -> Self {
        Self {
            range,
            directory: directory.into(),
        }
    }

    /// The range.
    pub fn range(&self) -> IdentityRange {
        self.range
    }

    /// The lease directory.
    pub fn directory(&self) -> &Path {
        &self.directory
    }
}

/// Why a plan's identity cannot be used on this host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// This process is not root and the identity is not its own.
    #[error(
        "the policy's identity is uid {uid} gid {gid}, but this host runs as uid {host_uid} gid {host_gid} and only a host running as root can switch to another identity"
    )]
    Unswitchable {
        /// The identity's uid.
        uid: u32,
        /// The identity's gid.
        gid: u32,
        /// This process's uid.
        host_uid: u32,
        /// This process's gid.
        host_gid: u32,
    },
    /// `identity dynamic` from a host that is not root.
    #[error(
        "`identity dynamic` needs a host running as root to switch to a leased uid; this host runs as uid {host_uid}"
    )]
    DynamicUnprivileged {
        /// This process's uid.
        host_uid: u32,
    },
    /// A read-write host root the identity cannot write.
    #[error(
        "read-write root `{root}` (`{}`) is not writable by the worker's identity uid {uid} gid {gid} (owner {owner}:{group}, mode {mode:04o})", .path.display()
    )]
    RootNotWritable {
        /// The root id (or its destination).
        root: String,
        /// The host directory.
        path: PathBuf,
        /// The identity's uid.
        uid: u32,
        /// The identity's gid.
        gid: u32,
        /// The directory's owner.
        owner: u32,
        /// The directory's group.
        group: u32,
        /// The directory's permission bits.
        mode: u32,
    },
    /// A launch preparation runs the launch as `wrapper_uid` while the
    /// plan has an identity: the two cannot both hold.
    #[error(
        "the policy's identity `{identity}` and the launch preparation `{preparation}`, which launches as uid {wrapper_uid}, cannot both apply; drop one of them"
    )]
    PreparationUid {
        /// The plan's identity, as written.
        identity: String,
        /// The preparation's name.
        preparation: String,
        /// The uid it launches as.
        wrapper_uid: u32,
    },
    /// An unusable dynamic range.
    #[error("the dynamic identity range of {count} ids from {first} is refused: {why}")]
    Range {
        /// Its first id.
        first: u32,
        /// Its size.
        count: u32,
        /// Why.
        why: &'static str,
    },
    /// The lease directory cannot be made or opened.
    #[error("the identity lease directory `{}` cannot be used", .path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The lease directory is not a safe place for leases.
    #[error("the identity lease directory `{}` is refused: {why}", .path.display())]
    UnsafeDirectory {
        /// The directory.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A lease file cannot be opened or locked.
    #[error("the identity lease `{}` cannot be taken", .path.display())]
    Lease {
        /// The lease file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Every id of the range is leased or in use.
    #[error(
        "every id of the dynamic identity range ({count} ids from {first}) is leased or in use"
    )]
    Exhausted {
        /// The first id.
        first: u32,
        /// The size.
        count: u32,
    },
}

/// What a launch does about the identity, decided at bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentitySwitch {
    /// No identity, or this process already is the identity.
    Unchanged,
    /// Switch to this fixed uid and gid.
    Fixed {
        /// The uid.
        uid: u32,
        /// The gid.
        gid: u32,
    },
    /// Lease a uid per launch and switch to it.
    Dynamic(DynamicIdentities),
}

impl IdentitySwitch {
    /// Decides for `identity` on a host running as `host` (uid, gid).
    pub fn decide(
        identity: Option<WorkerIdentity>,
        host: (u32, u32),
        dynamic: &DynamicIdentities,
    ) -> Result<Self, IdentityError> {
        let (host_uid, host_gid) = host;
        match identity {
            None => Ok(Self::Unchanged),
            Some(WorkerIdentity::Fixed { uid, gid }) if (uid, gid) == host => Ok(Self::Unchanged),
            Some(WorkerIdentity::Fixed { uid, gid }) if host_uid == 0 => {
                Ok(Self::Fixed { uid, gid })
            }
            Some(WorkerIdentity::Fixed { uid, gid }) => Err(IdentityError::Unswitchable {
                uid,
                gid,
                host_uid,
                host_gid,
            }),
            Some(WorkerIdentity::Dynamic) if host_uid == 0 => {
                open_directory(&dynamic.directory)?;
                Ok(Self::Dynamic(dynamic.clone()))
            }
            Some(WorkerIdentity::Dynamic) => Err(IdentityError::DynamicUnprivileged { host_uid }),
        }
    }

    /// The uid Bubblewrap and the worker run as, for the decisions that
    /// depend on it (device nodes, `nosuid` roots): for a dynamic identity
    /// the range's first id stands for every id of the range (none owns
    /// anything of the host's).
    pub fn worker_uid(&self, host_uid: u32) -> u32 {
        match self {
            Self::Unchanged => host_uid,
            Self::Fixed { uid, .. } => *uid,
            Self::Dynamic(d) => d.range.first,
        }
    }

    /// Checks that the identity can write a read-write root's directory
    /// (`meta`): owner, group or other write and search permission bits.
    pub fn check_writable(
        &self,
        root: &str,
        path: &Path,
        meta: &Metadata,
    ) -> Result<(), IdentityError> {
        let Self::Fixed { uid, gid } = *self else {
            return Ok(());
        };
        let mode = meta.permissions().mode() & 0o7777;
        let writable = if meta.uid() == uid {
            mode & 0o300 == 0o300
        } else if meta.gid() == gid {
            mode & 0o030 == 0o030
        } else {
            mode & 0o003 == 0o003
        };
        if writable {
            return Ok(());
        }
        Err(IdentityError::RootNotWritable {
            root: root.to_owned(),
            path: path.to_path_buf(),
            uid,
            gid,
            owner: meta.uid(),
            group: meta.gid(),
            mode,
        })
    }

    /// The ids one launch switches to, leasing a dynamic one.
    pub(crate) fn for_launch(&self) -> Result<Option<LaunchIdentity>, IdentityError> {
        match self {
            Self::Unchanged => Ok(None),
            Self::Fixed { uid, gid } => Ok(Some(LaunchIdentity {
                uid: *uid,
                gid: *gid,
                lease: None,
            })),
            Self::Dynamic(d) => {
                let lease = IdentityLease::take(d)?;
                Ok(Some(LaunchIdentity {
                    uid: lease.uid,
                    gid: lease.uid,
                    lease: Some(lease),
                }))
            }
        }
    }
}

/// The ids of one launch and the lease that holds a dynamic one.
#[derive(Debug)]
pub(crate) struct LaunchIdentity {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) lease: Option<IdentityLease>,
}

/// A held dynamic identity: the uid is this launch's until the value is
/// dropped (the launch drops it when it reaps the worker).
#[derive(Debug)]
pub struct IdentityLease {
    uid: u32,
    path: PathBuf,
    /// Holds the `flock`.
    _file: File,
}

impl IdentityLease {
    /// The leased uid (the gid is equal).
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The lease file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the lowest id of the range whose lease is free and that no
    /// process runs as.
    pub fn take(dynamic: &DynamicIdentities) -> Result<Self, IdentityError> {
        let dir = open_directory(&dynamic.directory)?;
        let range = dynamic.range;
        let running = running_uids();
        for offset in 0..range.count {
            let uid = range.first + offset;
            if running.contains(&uid) {
                continue;
            }
            let path = dynamic.directory.join(uid.to_string());
            let lease_err = |source: io::Error| IdentityError::Lease {
                path: path.clone(),
                source,
            };
            let fd = rustix::fs::openat(
                &dir,
                uid.to_string(),
                OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| lease_err(e.into()))?;
            match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => continue,
                Err(e) => return Err(lease_err(e.into())),
            }
            // A process that started as the uid since the scan keeps it.
            if running_uids().contains(&uid) {
                continue;
            }
            let mut file = File::from(fd);
            file.set_len(0).map_err(lease_err)?;
            writeln!(file, "{}", std::process::id()).map_err(lease_err)?;
            return Ok(Self {
                uid,
                path,
                _file: file,
            });
        }
        Err(IdentityError::Exhausted {
            first: range.first,
            count: range.count,
        })
    }
}

/// Whether the lease file of `uid` in `directory` is locked by someone
/// (another open of the file cannot take the lock).
pub fn leased(directory: &Path, uid: u32) -> io::Result<bool> {
    let path = directory.join(uid.to_string());
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => Ok(false),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Makes (mode 0700, its missing parents 0755) and opens the lease
/// directory, refusing one that is a
/// symbolic link, not owned by this process's uid, or writable by others.
fn open_directory(path: &Path) -> Result<OwnedFd, IdentityError> {
    let dir_err = |source| IdentityError::Directory {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(dir_err)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(dir_err(e)),
    }
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| dir_err(e.into()))?;
    let st = rustix::fs::fstat(fd.as_fd()).map_err(|e| dir_err(e.into()))?;
    let me = crate::sys::real_uid();
    let unsafe_dir = |why: String| IdentityError::UnsafeDirectory {
        path: path.to_path_buf(),
        why,
    };
    if st.st_uid != me {
        return Err(unsafe_dir(format!(
            "it is owned by uid {}, not uid {me}",
            st.st_uid
        )));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(unsafe_dir(format!(
            "its mode {:04o} lets others write it",
            st.st_mode & 0o7777
        )));
    }
    Ok(fd)
}

/// The uids (real, effective or saved) some process of this host runs as.
fn running_uids() -> std::collections::BTreeSet<u32> {
    let mut out = std::collections::BTreeSet::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        if !name.as_encoded_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        if let Some(ids) = process_uids(&entry.path()) {
            out.extend(ids);
        }
    }
    out
}

/// The real, effective, saved and filesystem uids of the process whose
/// `/proc` directory is `dir` (its `status` file's `Uid:` line).
pub fn process_uids(dir: &Path) -> Option<[u32; 4]> {
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    ids_line(&status, "Uid:")
}

/// The real, effective, saved and filesystem gids, as [`process_uids`].
pub fn process_gids(dir: &Path) -> Option<[u32; 4]> {
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    ids_line(&status, "Gid:")
}

fn ids_line(status: &str, key: &str) -> Option<[u32; 4]> {
    let line = status.lines().find_map(|l| l.strip_prefix(key))?;
    let mut ids = line.split_whitespace().map(|v| v.parse::<u32>().ok());
    Some([ids.next()??, ids.next()??, ids.next()??, ids.next()??])
}

/// Runs `program args...` switched to `uid` and `gid` exactly as a launch
/// switches (this process must be root), waits for it, and says whether it
/// exited with status 0. `splashc doctor` starts Bubblewrap this way to show
/// that the switch and an unprivileged user namespace work on this host.
pub fn try_as(program: &Path, args: &[String], uid: u32, gid: u32) -> io::Result<bool> {
    let child = crate::sys::spawn_child_as(
        program,
        args,
        &[],
        Some((uid, gid)),
        crate::sys::LaunchNamespaces::Host,
    )?;
    drop(child.stdin);
    let status = crate::sys::wait_child(child.pidfd.as_fd(), true)?;
    Ok(status == Some(0))
}

/// The identity decision of a plan for this process.
pub(crate) fn decide_for(
    plan: &LaunchPlan,
    dynamic: &DynamicIdentities,
) -> Result<IdentitySwitch, IdentityError> {
    let switch = IdentitySwitch::decide(
        plan.identity(),
        (crate::sys::real_uid(), crate::sys::real_gid()),
        dynamic,
    )?;
    Ok(switch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert!(IdentityRange::new(0x7FFE_0000, 0x1_0000).is_ok());
        assert!(IdentityRange::new(65536, 1).is_ok());
        assert!(IdentityRange::new(65535, 1).is_err());
        assert!(IdentityRange::new(100_000, 0).is_err());
        assert!(IdentityRange::new(u32::MAX - 1, 2).is_err());
        assert!(IdentityRange::new(u32::MAX - 1, 1).is_ok());
        let r = IdentityRange::DEFAULT;
        assert!(r.contains(0x7FFE_0000) && r.contains(0x7FFE_FFFF) && !r.contains(0x7FFF_0000));
        assert!(!(61184..=65519).any(|id| r.contains(id)));
    }

    #[test]
    fn decisions() {
        let d = DynamicIdentities::default();
        let fixed = Some(WorkerIdentity::Fixed {
            uid: 64000,
            gid: 64001,
        });
        assert_eq!(
            IdentitySwitch::decide(None, (0, 0), &d).expect("none"),
            IdentitySwitch::Unchanged
        );
        assert_eq!(
            IdentitySwitch::decide(fixed, (64000, 64001), &d).expect("same"),
            IdentitySwitch::Unchanged
        );
        assert_eq!(
            IdentitySwitch::decide(fixed, (0, 0), &d).expect("root"),
            IdentitySwitch::Fixed {
                uid: 64000,
                gid: 64001
            }
        );
        let e = IdentitySwitch::decide(fixed, (1000, 1000), &d).expect_err("other");
        let text = e.to_string();
        assert!(
            text.contains("uid 64000 gid 64001") && text.contains("uid 1000 gid 1000"),
            "{text}"
        );
        assert!(matches!(
            IdentitySwitch::decide(Some(WorkerIdentity::Dynamic), (1000, 1000), &d),
            Err(IdentityError::DynamicUnprivileged { host_uid: 1000 })
        ));
    }

    #[test]
    fn status_lines() {
        let s = "Name:\tx\nUid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\n";
        assert_eq!(ids_line(s, "Uid:"), Some([1, 2, 3, 4]));
        assert_eq!(ids_line(s, "Gid:"), Some([5, 6, 7, 8]));
        assert_eq!(ids_line("Uid:\t1\n", "Uid:"), None);
    }
}
