//! The device nodes of the sandbox's `/dev`.
//!
//! Bubblewrap's `--dev` bind-mounts six nodes from the host's `/dev`
//! ([`DeviceNode::ALL`]). A worker that runs as their owner (host uid 0 when
//! the host launches as root) could `chmod`, `chown` (to its own groups),
//! `utimensat` with explicit times or give a POSIX ACL to the host's own
//! nodes without any capability. Every plan therefore binds each node again
//! from a [`Slot::Device`](splashpol::plan::Slot::Device) source, and bind
//! decides what that source is ([`DeviceSources`]):
//!
//! - when the worker's uid owns none of the host's nodes, the host's node
//!   itself (`/dev/NAME`, what `--dev` bound already);
//! - otherwise, for every launch, a private node: a fresh directory
//!   `.splash-dev-<random>` (mode `0700`, owned by root) under a parent on a
//!   filesystem that allows devices (default `/dev`), holding a character
//!   device per name with the fixed Linux major and minor, mode `0666`,
//!   owned by [`DEVICE_NODE_OWNER`]. The worker can read and write them but
//!   is not their owner and holds no `CAP_FOWNER` or `CAP_CHOWN`, so every
//!   change of their metadata is refused. The directory is removed when the
//!   launch fails or the worker is reaped ([`DeviceDirectory`]'s `Drop`).
//!
//! A host killed by SIGKILL cannot remove its directory, so ownership is
//! proved by a lock instead of a pid: the owner holds an exclusive
//! `flock(2)` on the directory for its whole life (taken right after
//! `mkdir`, before any node is made; a directory that a sweep removed in
//! that instant has a link count of 0 and is made again under a new name).
//! Every bind with private nodes first sweeps the parent: a
//! `.splash-dev-<hex>` directory whose lock it can take has no living
//! owner, and its nodes and the directory are removed (anything else in it
//! is left alone, and so is the directory then).

use std::ffi::CString;
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use splashpol::emit::DEVICE_SOURCE_MAX_BYTES;
use splashpol::plan::DeviceNode;

use crate::sys;

/// The owner (uid and gid) of private device nodes: the overflow id, never
/// a uid the worker runs as when private nodes are made.
pub const DEVICE_NODE_OWNER: u32 = 65534;
/// The default parent of the per-launch device directories: `/dev` allows
/// devices on every Linux host (`/run` and `/tmp` are often `nodev`).
pub const DEFAULT_DEVICE_PARENT: &str = "/dev";
/// The name prefix of a per-launch device directory.
pub const DEVICE_DIRECTORY_PREFIX: &str = ".splash-dev-";
/// Random bytes in a directory name (hex-encoded).
const RANDOM_BYTES: usize = 10;
/// The mode of a private node.
const NODE_MODE: u32 = 0o666;
/// How often a launch makes a directory again when a sweep removed the
/// one it had just made.
const CREATE_ATTEMPTS: usize = 3;

/// Why the device nodes of a launch cannot be provided.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// Failed to inspect the host's `path`.
    #[error("failed to inspect the host's `{}`", .path.display())]
    Host {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The host's `path` is not the character device `major`:`minor`.
    #[error("the host's `{}` is not the character device {major}:{minor}", .path.display())]
    NotTheDevice {
        /// The path involved.
        path: PathBuf,
        /// The expected device major number.
        major: u32,
        /// The expected device minor number.
        minor: u32,
    },
    /// The worker runs as uid `uid`, which would own both the host's `path` and the private device nodes.
    #[error("the worker runs as uid {uid}, which would own both the host's `{}` and the private device nodes", .path.display())]
    OwnerIsWorker {
        /// The path involved.
        path: PathBuf,
        /// The owning uid.
        uid: u32,
    },
    /// Device directory parent `path` cannot be inspected.
    #[error("device directory parent `{}`", .path.display())]
    ParentIo {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Device directory parent `path` is unfit: `reason`.
    #[error("device directory parent `{}`: {reason}", .path.display())]
    Parent {
        /// The path involved.
        path: PathBuf,
        /// Why it is unfit.
        reason: ParentDefect,
    },
    /// Failed to make the private device nodes under `path`.
    #[error("failed to make the private device nodes under `{}` (a worker that owns the host's device nodes needs them; the launch is refused)", .path.display())]
    Create {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// Why a device directory parent cannot hold a launch's private nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParentDefect {
    /// It is not a directory.
    #[error("not a directory")]
    NotADirectory,
    /// It is not owned by root, or others can write to it without the
    /// sticky bit.
    #[error("must be owned by root and writable by nobody else (it is uid {uid}, mode {mode:o})")]
    Unsafe {
        /// The owning uid.
        uid: u32,
        /// The permission bits.
        mode: u32,
    },
    /// Its filesystem is mounted `nodev`.
    #[error("its filesystem is mounted `nodev`, so nodes there cannot be used")]
    Nodev,
    /// The node paths under it would be too long.
    #[error("the node paths would be {bytes} bytes; at most {DEVICE_SOURCE_MAX_BYTES} are allowed")]
    TooLong {
        /// The longest node path's length in bytes.
        bytes: usize,
    },
}

/// Where the `--dev-bind` sources of one bound plan come from.
#[derive(Debug)]
pub enum DeviceSources {
    /// The host's own nodes: the worker owns none of them.
    Host,
    /// A private directory of nodes for every launch.
    Private(PrivateDevices),
}

/// The parent of the per-launch directories, pinned at bind.
#[derive(Debug)]
pub struct PrivateDevices {
    parent: PathBuf,
    parent_fd: OwnedFd,
    /// The directory made at bind to prove this host can make one; the
    /// first launch uses it instead of making another (it is removed with
    /// this value when no launch took it).
    proof: Mutex<Option<DeviceDirectory>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn host_path(node: DeviceNode) -> String {
    splashpol::emit::device_destination(node)
}

impl DeviceSources {
    /// Decides for a worker that runs as host uid `worker_uid`: private nodes
    /// when it owns any of the host's, made under `parent`. With private
    /// nodes, one directory is made here, so a host that cannot make them
    /// fails at bind rather than at the first launch; the first launch takes
    /// it, every later one makes its own.
    pub fn decide(worker_uid: u32, parent: &Path) -> Result<Self, DeviceError> {
        let mut owned = None;
        for node in DeviceNode::ALL {
            let path = host_path(node);
            let meta = fs::symlink_metadata(&path).map_err(|source| DeviceError::Host {
                path: PathBuf::from(path.clone()),
                source,
            })?;
            let (major, minor) = node.major_minor();
            let rdev = meta.rdev();
            if !meta.file_type().is_char_device()
                || (libc::major(rdev), libc::minor(rdev)) != (major, minor)
            {
                return Err(DeviceError::NotTheDevice {
                    path: PathBuf::from(path),
                    major,
                    minor,
                });
            }
            if meta.uid() == worker_uid && owned.is_none() {
                owned = Some(path);
            }
        }
        let Some(owned) = owned else {
            return Ok(Self::Host);
        };
        if worker_uid == DEVICE_NODE_OWNER {
            return Err(DeviceError::OwnerIsWorker {
                path: PathBuf::from(owned),
                uid: worker_uid,
            });
        }
        let private = PrivateDevices::open(parent)?;
        let proof = private.create()?;
        *lock(&private.proof) = Some(proof);
        Ok(Self::Private(private))
    }

    /// Makes the nodes of one launch (private sources only).
    pub fn prepare(&self) -> Result<Option<DeviceDirectory>, DeviceError> {
        match self {
            Self::Host => Ok(None),
            Self::Private(p) => match lock(&p.proof).take() {
                Some(made_at_bind) => Ok(Some(made_at_bind)),
                None => p.create().map(Some),
            },
        }
    }

    /// Whether launches get private nodes.
    pub fn private(&self) -> bool {
        matches!(self, Self::Private(_))
    }
}

/// The source path of `node` for one launch.
pub fn source(node: DeviceNode, directory: Option<&DeviceDirectory>) -> String {
    match directory {
        Some(d) => d.path.join(node.name()).display().to_string(),
        None => host_path(node),
    }
}

impl PrivateDevices {
    fn open(parent: &Path) -> Result<Self, DeviceError> {
        let refuse = |reason| DeviceError::Parent {
            path: parent.to_path_buf(),
            reason,
        };
        let io = |source| DeviceError::ParentIo {
            path: parent.to_path_buf(),
            source,
        };
        let canonical = fs::canonicalize(parent).map_err(io)?;
        let parent_fd = sys::open_path_no_symlinks(&canonical).map_err(io)?;
        let meta = File::from(parent_fd.try_clone().map_err(io)?)
            .metadata()
            .map_err(io)?;
        if !meta.is_dir() {
            return Err(refuse(ParentDefect::NotADirectory));
        }
        let mode = meta.permissions().mode();
        if meta.uid() != 0 || (mode & 0o022 != 0 && mode & 0o1000 == 0) {
            return Err(refuse(ParentDefect::Unsafe {
                uid: meta.uid(),
                mode: mode & 0o7777,
            }));
        }
        if sys::mounted_nodev(parent_fd.as_fd()).map_err(io)? {
            return Err(refuse(ParentDefect::Nodev));
        }
        // `PARENT/.splash-dev-HEX/urandom` must fit the length the argument
        // limits were checked with.
        let longest = canonical.as_os_str().len()
            + 1
            + DEVICE_DIRECTORY_PREFIX.len()
            + 2 * RANDOM_BYTES
            + 1
            + "urandom".len();
        if longest > DEVICE_SOURCE_MAX_BYTES {
            return Err(refuse(ParentDefect::TooLong { bytes: longest }));
        }
        let devices = Self {
            parent: canonical,
            parent_fd,
            proof: Mutex::new(None),
        };
        devices.sweep();
        Ok(devices)
    }

    /// Removes the directories under the parent whose owner is dead (their
    /// lock is free); returns how many went. Best effort: a directory that
    /// holds anything but the six nodes is left as it is.
    pub fn sweep(&self) -> usize {
        let Ok(entries) = fs::read_dir(&self.parent) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(hex) = name
                .to_str()
                .and_then(|n| n.strip_prefix(DEVICE_DIRECTORY_PREFIX))
            else {
                continue;
            };
            if hex.len() != 2 * RANDOM_BYTES || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let Ok(c_name) = CString::new(name.as_encoded_bytes()) else {
                continue;
            };
            if self.sweep_one(&c_name).unwrap_or(false) {
                removed += 1;
            }
        }
        removed
    }

    fn sweep_one(&self, name: &CString) -> io::Result<bool> {
        let dir = sys::open_directory_read_at(self.parent_fd.as_fd(), name)?;
        if !sys::lock_exclusive(dir.as_fd(), false)? {
            // Its owner lives.
            return Ok(false);
        }
        let (_, uid, _, _) = sys::stat_at(self.parent_fd.as_fd(), name)?;
        if uid != 0 {
            return Ok(false);
        }
        for node in DeviceNode::ALL {
            match sys::unlink_at(dir.as_fd(), &node_name(node), false) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        // Removed while still locked, so a creator that loses this race
        // sees a link count of 0.
        sys::unlink_at(self.parent_fd.as_fd(), name, true)?;
        Ok(true)
    }

    fn create(&self) -> Result<DeviceDirectory, DeviceError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.create_once() {
                Err(DeviceError::Create { source, .. })
                    if source.kind() == io::ErrorKind::NotFound && attempt < CREATE_ATTEMPTS => {}
                other => return other,
            }
        }
    }

    fn create_once(&self) -> Result<DeviceDirectory, DeviceError> {
        let fail = |source| DeviceError::Create {
            path: self.parent.to_path_buf(),
            source,
        };
        let mut random = [0u8; RANDOM_BYTES];
        getrandom::fill(&mut random)
            .map_err(|e| fail(io::Error::other(format!("the random source failed: {e}"))))?;
        let name: String = std::iter::once(DEVICE_DIRECTORY_PREFIX.to_owned())
            .chain(random.iter().map(|b| format!("{b:02x}")))
            .collect();
        let c_name =
            CString::new(name.clone()).map_err(|_| fail(io::ErrorKind::InvalidInput.into()))?;
        let parent_fd = self.parent_fd.try_clone().map_err(fail)?;
        sys::mkdir_at(parent_fd.as_fd(), &c_name, 0o700).map_err(fail)?;
        // From here on the guard removes whatever exists.
        let mut directory = DeviceDirectory {
            path: self.parent.join(&name),
            parent_fd,
            name: c_name,
            dir: None,
        };
        directory.fill().map_err(fail)?;
        Ok(directory)
    }
}

/// One launch's private device directory; removed (nodes first) on drop.
#[derive(Debug)]
pub struct DeviceDirectory {
    path: PathBuf,
    parent_fd: OwnedFd,
    name: CString,
    dir: Option<OwnedFd>,
}

fn node_name(node: DeviceNode) -> CString {
    CString::new(node.name()).unwrap_or_default()
}

impl DeviceDirectory {
    /// The host path of the directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fill(&mut self) -> io::Result<()> {
        let dir = sys::open_directory_read_at(self.parent_fd.as_fd(), &self.name)?;
        // The owner's lock, held as long as this descriptor: taken before
        // any node exists. A sweep that removed the directory first holds
        // it only briefly, and leaves a link count of 0.
        sys::lock_exclusive(dir.as_fd(), true)?;
        if sys::link_count(dir.as_fd())? == 0 {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        sys::chmod_at(self.parent_fd.as_fd(), &self.name, 0o700)?;
        let dir = self.dir.insert(dir);
        for node in DeviceNode::ALL {
            let name = node_name(node);
            sys::mknod_char_at(dir.as_fd(), &name, NODE_MODE, node.major_minor())?;
            sys::chown_at(dir.as_fd(), &name, DEVICE_NODE_OWNER, DEVICE_NODE_OWNER)?;
            // The umask may have cleared bits; chown never adds any.
            sys::chmod_at(dir.as_fd(), &name, NODE_MODE)?;
            let (mode, uid, gid, rdev) = sys::stat_at(dir.as_fd(), &name)?;
            if mode != libc::S_IFCHR | NODE_MODE
                || uid != DEVICE_NODE_OWNER
                || gid != DEVICE_NODE_OWNER
                || rdev != node.major_minor()
            {
                return Err(io::Error::other(format!(
                    "node `{}` came out as mode {mode:o}, owner {uid}:{gid}, device {}:{}",
                    node.name(),
                    rdev.0,
                    rdev.1
                )));
            }
        }
        let (mode, uid, _, _) = sys::stat_at(self.parent_fd.as_fd(), &self.name)?;
        if mode & 0o7777 != 0o700 || uid != 0 {
            return Err(io::Error::other(format!(
                "the directory came out as mode {:o}, owner {uid}",
                mode & 0o7777
            )));
        }
        Ok(())
    }
}

impl Drop for DeviceDirectory {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            for node in DeviceNode::ALL {
                let _ = sys::unlink_at(dir.as_fd(), &node_name(node), false);
            }
        }
        let _ = sys::unlink_at(self.parent_fd.as_fd(), &self.name, true);
    }
}
