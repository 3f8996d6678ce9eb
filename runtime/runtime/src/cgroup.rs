//! The cgroup-v2 boundary: a fresh child of a host-delegated parent per
//! worker, the cgroup runner that joins it before Bubblewrap starts, and
//! teardown with `cgroup.kill`.
//!
//! # Bind ([`CgroupBoundary::prepare`])
//!
//! 1. The parent (`cgroup parent`) is canonicalized once and opened as a
//!    directory descriptor with `RESOLVE_NO_SYMLINKS`; its filesystem must be
//!    cgroup v2 (`fstatfs` magic `CGROUP2_SUPER_MAGIC`), and it must have
//!    `cgroup.procs`, `cgroup.controllers` and `cgroup.subtree_control`.
//! 2. The parent's `cgroup.subtree_control` is *read* and must enable every
//!    controller the limits need (`cpu`, `memory`, `pids`, `io`). It is never
//!    written: enabling controllers is the host's delegation decision.
//! 3. The runner (`cgroup ... runner`) must not be a symbolic link and must
//!    be an executable regular file; it is opened `O_PATH` and, when the plan
//!    pins executables, later executed through that descriptor.
//!
//! # Each launch ([`CgroupParent::create_child`], [`CgroupBoundary::wrap`])
//!
//! 1. `mkdirat(parent, "splash-<16 hex digits from the CSPRNG>", 0755)`; an
//!    existing name is an error, never reused;
//! 2. the child's `cgroup.controllers` must list every needed controller,
//!    so a missing one is named before any control file is touched;
//! 3. in this order, only for what the policy sets: `cpu.max`
//!    (`QUOTA 100000`), `memory.max`, `memory.oom.group` = `1` (with
//!    `memory.max`), `memory.swap.max`, `pids.max`, one `io.max` line per
//!    device with only the fields set;
//! 4. `cgroup.kill` = `1` on the still empty child: the kill interface works
//!    before anything depends on it;
//! 5. the launch is prefixed with the runner: `RUNNER --cgroup-fd N
//!    [--keep-fd M]... -- BWRAP ARGS...`, where `N` is a fresh descriptor of
//!    the child directory and each `M` is a descriptor Bubblewrap must
//!    inherit (its seccomp program, pinned mounts);
//! 6. after the start, the host waits for the direct child's pid in the
//!    child's `cgroup.procs` (the join timeout, 5 s by default); a runner that
//!    exits first or does not join in time is killed with the cgroup, reaped,
//!    and the cgroup removed ([`WorkerCgroup::await_join`]).
//!
//! Any failure in steps 1–5 removes the child again and fails the launch.
//!
//! # Teardown ([`WorkerCgroup::kill_and_remove`])
//!
//! `cgroup.kill` = `1` (SIGKILL to every process in the child, including
//! ones forked a moment before), then `rmdir`, retried while the kernel
//! answers `EBUSY` because processes are still exiting. A failure of either
//! step is a [`CgroupError`]: the host must treat it as a containment
//! failure.
//!
//! Every file operation goes through [`CgroupDir`], one directory handle.
//! The owner of a child cgroup holds an exclusive `flock(2)` on its
//! directory for the child's whole life (taken right after `mkdirat`), so a
//! host killed by SIGKILL is proved gone by a free lock, never guessed from
//! a pid: [`CgroupBoundary::prepare`] first sweeps the parent, killing and
//! removing every `splash-<16 hex>` child whose lock it can take
//! ([`CgroupParent::sweep`]).
//!
//! [`KernelCgroupDir`] is the real one (descriptors, `openat`, `mkdirat`,
//! `unlinkat`); unit tests hand in a recording fake to check the exact write
//! sequence. Enforcement is only ever shown against the real kernel.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::fs::OFlags;
use splashpol::model::{CgroupLimits, CgroupPolicy};

use crate::launch_spec::LaunchSpec;
use crate::status::WorkerStatus;
use crate::sys;

/// `CGROUP2_SUPER_MAGIC` from `<linux/magic.h>`.
pub const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// The fixed `cpu.max` period in microseconds (100 ms).
pub const CPU_PERIOD_MICROS: u64 = 100_000;

/// How long teardown retries `rmdir` while the killed processes exit.
pub const REMOVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Files a cgroup-v2 parent must have.
const CORE_FILES: [&str; 3] = [
    "cgroup.procs",
    "cgroup.controllers",
    "cgroup.subtree_control",
];

/// Why the cgroup boundary could not be prepared, joined or torn down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupError {
    /// Failed to open the cgroup parent `path`.
    #[error("failed to open the cgroup parent `{}`", .path.display())]
    OpenParent {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Cgroup parent `path` is not on a cgroup-v2 filesystem (filesystem magic `magic`).
    #[error("cgroup parent `{}` is not on a cgroup-v2 filesystem (filesystem magic {magic:#x}); name a directory of the cgroup2 mount", .path.display())]
    NotCgroup2 {
        /// The path involved.
        path: PathBuf,
        /// The filesystem magic found.
        magic: i64,
    },
    /// Cgroup parent `path` has no `file`.
    #[error("cgroup parent `{}` has no `{file}`; it is not a cgroup-v2 directory", .path.display())]
    MissingCoreFile {
        /// The path involved.
        path: PathBuf,
        /// The control file.
        file: &'static str,
    },
    /// Controller `controller` is not available to the children of `path`.
    #[error("controller `{controller}` is not available to the children of `{}`; the host must enable it in the parent's `cgroup.subtree_control` (this runtime never writes it)", .path.display())]
    MissingController {
        /// The path involved.
        path: PathBuf,
        /// The missing controller.
        controller: &'static str,
    },
    /// Failed to create the child cgroup `path`.
    #[error("failed to create the child cgroup `{}`", .path.display())]
    Create {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to read `file` of cgroup `path`.
    #[error("failed to read `{file}` of cgroup `{}`", .path.display())]
    Read {
        /// The path involved.
        path: PathBuf,
        /// The control file.
        file: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to write `value` to `file` of cgroup `path`.
    #[error("failed to write `{value}` to `{file}` of cgroup `{}`", .path.display())]
    Write {
        /// The path involved.
        path: PathBuf,
        /// The control file.
        file: String,
        /// The value written.
        value: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to remove cgroup `path`.
    #[error("failed to remove cgroup `{}`", .path.display())]
    Remove {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Creating or joining failed, and removing the child afterwards failed too.
    #[error("{first}; removing the child cgroup afterwards failed as well: {cleanup}")]
    CleanupAfter {
        /// The error that came first.
        first: Box<CgroupError>,
        /// The error of the removal afterwards.
        cleanup: Box<CgroupError>,
    },
    /// Cgroup runner `path` is unusable: `why`.
    #[error("cgroup runner `{}` is unusable: {why}", .path.display())]
    Runner {
        /// The path involved.
        path: PathBuf,
        /// Why it is unusable.
        why: RunnerDefect,
    },
    /// Failed to check cgroup runner `path`.
    #[error("failed to check cgroup runner `{}`", .path.display())]
    RunnerIo {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to hand cgroup `path` to the runner.
    #[error("failed to hand cgroup `{}` to the runner", .path.display())]
    Descriptor {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The cgroup runner (pid `pid`) did not join `path` within `timeout_ms` ms.
    #[error("the cgroup runner (pid {pid}) did not join `{}` within {timeout_ms} ms; it was killed and the cgroup removed", .path.display())]
    JoinTimeout {
        /// The path involved.
        path: PathBuf,
        /// The runner's process id.
        pid: u32,
        /// The wait in milliseconds.
        timeout_ms: u128,
    },
    /// The cgroup runner (pid `pid`) ended with `status` before the host saw it in `path`.
    #[error("the cgroup runner (pid {pid}) ended with {status} before the host saw it in `{}`; the cgroup was removed", .path.display())]
    RunnerExited {
        /// The path involved.
        path: PathBuf,
        /// The runner's process id.
        pid: u32,
        /// How the process ended.
        status: WorkerStatus,
    },
    /// Failed to observe the cgroup runner (pid `pid`).
    #[error("failed to observe the cgroup runner (pid {pid})")]
    Observe {
        /// The runner's process id.
        pid: u32,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// Why a configured cgroup runner cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerDefect {
    /// The path is a symbolic link.
    #[error("it is a symbolic link; name the file itself")]
    Symlink,
    /// The path is not a regular file with an execute bit.
    #[error("it is not an executable regular file")]
    NotExecutable,
}

impl CgroupError {
    /// Chains a failed cleanup onto the error that caused it.
    pub(crate) fn then_cleanup(self, cleanup: Result<(), CgroupError>) -> Self {
        match cleanup {
            Ok(()) => self,
            Err(c) => CgroupError::CleanupAfter {
                first: Box::new(self),
                cleanup: Box::new(c),
            },
        }
    }
}

/// One cgroup directory, as the boundary uses it. Every name is a single
/// component relative to the directory.
pub trait CgroupDir: fmt::Debug + Send + Sync {
    /// The filesystem magic of the directory (`fstatfs`).
    fn filesystem_magic(&self) -> io::Result<i64>;
    /// Whether `file` exists.
    fn has(&self, file: &str) -> io::Result<bool>;
    /// The whole content of `file`.
    fn read(&self, file: &str) -> io::Result<String>;
    /// Writes `value` to `file` in one `write(2)`.
    fn write(&self, file: &str, value: &str) -> io::Result<()>;
    /// Creates the child directory `name` (it must not exist) and opens it.
    fn make_child(&self, name: &str) -> io::Result<Box<dyn CgroupDir>>;
    /// Removes the child directory `name`.
    fn remove_child(&self, name: &str) -> io::Result<()>;
    /// A fresh close-on-exec descriptor of this directory, for the runner.
    fn descriptor(&self) -> io::Result<OwnedFd>;
    /// Takes an exclusive lock on this directory, held as long as this
    /// value lives (waiting for it when `wait`); `false` when another
    /// holder has it and `wait` is false. The default holds nothing.
    fn lock(&self, wait: bool) -> io::Result<bool> {
        let _ = wait;
        Ok(true)
    }
    /// The names of the child directories. The default lists none.
    fn children(&self) -> io::Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// Opens the existing child directory `name`.
    fn open_child(&self, name: &str) -> io::Result<Box<dyn CgroupDir>> {
        let _ = name;
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// The real [`CgroupDir`]: a directory descriptor; files are opened with
/// `openat(dir, name, O_NOFOLLOW | O_CLOEXEC)`.
#[derive(Debug)]
pub struct KernelCgroupDir {
    fd: OwnedFd,
}

impl KernelCgroupDir {
    /// Opens the directory `path` (no symbolic link in any component).
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(Self {
            fd: sys::open_directory_no_symlinks(path)?,
        })
    }
}

impl CgroupDir for KernelCgroupDir {
    fn filesystem_magic(&self) -> io::Result<i64> {
        sys::filesystem_magic(self.fd.as_fd())
    }

    fn has(&self, file: &str) -> io::Result<bool> {
        sys::exists_at(self.fd.as_fd(), file)
    }

    fn read(&self, file: &str) -> io::Result<String> {
        let mut f = File::from(sys::open_at(self.fd.as_fd(), file, OFlags::RDONLY)?);
        let mut text = String::new();
        f.read_to_string(&mut text)?;
        Ok(text)
    }

    fn write(&self, file: &str, value: &str) -> io::Result<()> {
        let mut f = File::from(sys::open_at(self.fd.as_fd(), file, OFlags::WRONLY)?);
        let n = f.write(value.as_bytes())?;
        if n != value.len() {
            return Err(io::Error::other(format!(
                "short write: {n} of {} bytes",
                value.len()
            )));
        }
        Ok(())
    }

    fn make_child(&self, name: &str) -> io::Result<Box<dyn CgroupDir>> {
        sys::make_directory_at(self.fd.as_fd(), name, 0o755)?;
        let fd = sys::open_at(self.fd.as_fd(), name, OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok(Box::new(KernelCgroupDir { fd }))
    }

    fn remove_child(&self, name: &str) -> io::Result<()> {
        sys::remove_directory_at(self.fd.as_fd(), name)
    }

    fn descriptor(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    fn lock(&self, wait: bool) -> io::Result<bool> {
        sys::lock_exclusive(self.fd.as_fd(), wait)
    }

    fn children(&self) -> io::Result<Vec<String>> {
        let listing = std::fs::read_dir(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))?;
        Ok(listing
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect())
    }

    fn open_child(&self, name: &str) -> io::Result<Box<dyn CgroupDir>> {
        let fd = sys::open_at(self.fd.as_fd(), name, OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok(Box::new(KernelCgroupDir { fd }))
    }
}

/// The name prefix of a worker's child cgroup (`splash-<16 hex digits>`).
pub const CHILD_PREFIX: &str = "splash-";

/// Whether `name` is a worker child cgroup's name.
fn is_child_name(name: &str) -> bool {
    name.strip_prefix(CHILD_PREFIX)
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The controllers `limits` need, in a fixed order.
pub fn needed_controllers(limits: &CgroupLimits) -> Vec<&'static str> {
    let mut out = Vec::new();
    if limits.cpu_quota_micros.is_some() {
        out.push("cpu");
    }
    if limits.memory_max_bytes.is_some() || limits.memory_swap_max_bytes.is_some() {
        out.push("memory");
    }
    if limits.pids_max.is_some() {
        out.push("pids");
    }
    if !limits.io_max.is_empty() {
        out.push("io");
    }
    out
}

/// The control-file writes for `limits`, in the order they are made.
pub fn limit_writes(limits: &CgroupLimits) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(q) = limits.cpu_quota_micros {
        out.push(("cpu.max", format!("{q} {CPU_PERIOD_MICROS}")));
    }
    if let Some(m) = limits.memory_max_bytes {
        out.push(("memory.max", m.to_string()));
        out.push(("memory.oom.group", "1".to_owned()));
    }
    if let Some(s) = limits.memory_swap_max_bytes {
        out.push(("memory.swap.max", s.to_string()));
    }
    if let Some(p) = limits.pids_max {
        out.push(("pids.max", p.to_string()));
    }
    for io in &limits.io_max {
        let mut line = format!("{}:{}", io.major, io.minor);
        for (key, value) in [
            ("rbps", io.rbps),
            ("wbps", io.wbps),
            ("riops", io.riops),
            ("wiops", io.wiops),
        ] {
            if let Some(v) = value {
                line.push_str(&format!(" {key}={v}"));
            }
        }
        out.push(("io.max", line));
    }
    out
}

fn listed(text: &str, name: &str) -> bool {
    text.split_whitespace().any(|c| c == name)
}

/// A verified cgroup-v2 parent directory.
#[derive(Debug, Clone)]
pub struct CgroupParent {
    path: PathBuf,
    dir: Arc<dyn CgroupDir>,
}

impl CgroupParent {
    /// Opens and verifies the parent at `path` on the real kernel: the
    /// configured path is canonicalized once, then opened without following
    /// any symbolic link.
    pub fn open(path: &Path) -> Result<Self, CgroupError> {
        let open_err = |source| CgroupError::OpenParent {
            path: path.to_path_buf(),
            source,
        };
        let canonical = std::fs::canonicalize(path).map_err(open_err)?;
        let dir = KernelCgroupDir::open(&canonical).map_err(open_err)?;
        Self::with_dir(path, Arc::new(dir))
    }

    /// Verifies `dir` as the parent shown as `path`: cgroup-v2 filesystem
    /// magic and the core files.
    pub fn with_dir(path: &Path, dir: Arc<dyn CgroupDir>) -> Result<Self, CgroupError> {
        let magic = dir
            .filesystem_magic()
            .map_err(|source| CgroupError::OpenParent {
                path: path.to_path_buf(),
                source,
            })?;
        if magic != CGROUP2_SUPER_MAGIC {
            return Err(CgroupError::NotCgroup2 {
                path: path.to_path_buf(),
                magic,
            });
        }
        for file in CORE_FILES {
            let present = dir.has(file).map_err(|source| CgroupError::Read {
                path: path.to_path_buf(),
                file: file.to_owned(),
                source,
            })?;
            if !present {
                return Err(CgroupError::MissingCoreFile {
                    path: path.to_path_buf(),
                    file,
                });
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            dir,
        })
    }

    /// The parent as configured.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads (never writes) the parent's `cgroup.subtree_control` and
    /// requires every controller `limits` need.
    pub fn check_delegated(&self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        let enabled =
            self.dir
                .read("cgroup.subtree_control")
                .map_err(|source| CgroupError::Read {
                    path: self.path.clone(),
                    file: "cgroup.subtree_control".into(),
                    source,
                })?;
        if let Some(controller) = needed_controllers(limits)
            .into_iter()
            .find(|c| !listed(&enabled, c))
        {
            return Err(CgroupError::MissingController {
                path: self.path.clone(),
                controller,
            });
        }
        Ok(())
    }

    /// Creates a fresh, uniquely named child with `limits` (module
    /// documentation, launch steps 1–4). On any failure the child is removed
    /// again.
    pub fn create_child(&self, limits: &CgroupLimits) -> Result<WorkerCgroup, CgroupError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.create_random_child(limits) {
                // A sweep removed it between `mkdir` and the lock.
                Err(CgroupError::Create { source, .. })
                    if source.kind() == io::ErrorKind::NotFound && attempt < 3 => {}
                other => return other,
            }
        }
    }

    /// Removes the worker child cgroups under this parent whose owner is
    /// dead: the lock every owner holds on its child for the child's whole
    /// life is free. Each is killed (`cgroup.kill`) and removed, waiting at
    /// most a second for its processes to exit; returns how many went. A
    /// child whose owner lives is never touched, and one that cannot be
    /// removed is left for the next sweep.
    pub fn sweep(&self) -> usize {
        let Ok(names) = self.dir.children() else {
            return 0;
        };
        let mut removed = 0;
        for name in names.into_iter().filter(|n| is_child_name(n)) {
            let Ok(child) = self.dir.open_child(&name) else {
                continue;
            };
            if !child.lock(false).unwrap_or(false) {
                continue;
            }
            let _ = child.write("cgroup.kill", "1");
            let until = std::time::Instant::now() + Duration::from_secs(1);
            loop {
                match self.dir.remove_child(&name) {
                    Ok(()) => {
                        removed += 1;
                        break;
                    }
                    Err(e)
                        if e.raw_os_error() == Some(libc::EBUSY)
                            && std::time::Instant::now() < until =>
                    {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(_) => break,
                }
            }
        }
        removed
    }

    fn create_random_child(&self, limits: &CgroupLimits) -> Result<WorkerCgroup, CgroupError> {
        let mut suffix = [0u8; 8];
        getrandom::fill(&mut suffix).map_err(|e| CgroupError::Create {
            path: self.path.to_path_buf(),
            source: io::Error::other(format!("the random source failed: {e}")),
        })?;
        let name = format!("{CHILD_PREFIX}{:016x}", u64::from_ne_bytes(suffix));
        self.create_named_child(name, limits)
    }

    fn create_named_child(
        &self,
        name: String,
        limits: &CgroupLimits,
    ) -> Result<WorkerCgroup, CgroupError> {
        let path = self.path.join(&name);
        let dir = self
            .dir
            .make_child(&name)
            .map_err(|source| CgroupError::Create {
                path: path.to_path_buf(),
                source,
            })?;
        // The owner's lock, held by `dir` for the child's life, taken before
        // anything runs in it; a sweep that removed the child first leaves
        // no `cgroup.procs`.
        let locked = dir.lock(true).and_then(|_| {
            if dir.has("cgroup.procs")? {
                Ok(())
            } else {
                Err(io::Error::from(io::ErrorKind::NotFound))
            }
        });
        if let Err(source) = locked {
            let _ = self.dir.remove_child(&name);
            return Err(CgroupError::Create { path, source });
        }
        let mut child = WorkerCgroup {
            parent: Arc::clone(&self.dir),
            name,
            path,
            dir,
            removed: false,
        };
        if let Err(e) = child.configure(limits) {
            let cleanup = child.remove(REMOVE_TIMEOUT);
            return Err(e.then_cleanup(cleanup));
        }
        Ok(child)
    }
}

/// One worker's child cgroup. Dropping it kills what is left inside and
/// removes it (best effort; [`WorkerCgroup::kill_and_remove`] reports).
#[derive(Debug)]
pub struct WorkerCgroup {
    parent: Arc<dyn CgroupDir>,
    name: String,
    path: PathBuf,
    dir: Box<dyn CgroupDir>,
    removed: bool,
}

impl WorkerCgroup {
    /// The child cgroup's path (under the configured parent).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the cgroup has been removed.
    pub fn is_removed(&self) -> bool {
        self.removed
    }

    /// Reads a file of the child (`memory.events`, `cpu.stat`, ...).
    pub fn read(&self, file: &str) -> Result<String, CgroupError> {
        self.dir.read(file).map_err(|source| CgroupError::Read {
            path: self.path.clone(),
            file: file.to_owned(),
            source,
        })
    }

    /// Writes one value to a file of the child.
    pub fn write(&self, file: &str, value: &str) -> Result<(), CgroupError> {
        self.dir
            .write(file, value)
            .map_err(|source| CgroupError::Write {
                path: self.path.clone(),
                file: file.to_owned(),
                value: value.to_owned(),
                source,
            })
    }

    fn configure(&self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        let available = self.read("cgroup.controllers")?;
        if let Some(controller) = needed_controllers(limits)
            .into_iter()
            .find(|c| !listed(&available, c))
        {
            return Err(CgroupError::MissingController {
                path: self.path.clone(),
                controller,
            });
        }
        for (file, value) in limit_writes(limits) {
            self.write(file, &value)?;
        }
        // The kill interface must work before anything relies on it; on the
        // still empty child the write kills nothing.
        self.kill()
    }

    /// The pids listed in the child's `cgroup.procs`.
    pub fn procs(&self) -> Result<Vec<u32>, CgroupError> {
        Ok(self
            .read("cgroup.procs")?
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect())
    }

    /// SIGKILL to every process in the cgroup (`cgroup.kill`).
    pub fn kill(&self) -> Result<(), CgroupError> {
        self.write("cgroup.kill", "1")
    }

    /// Removes the cgroup, retrying while it is busy (`EBUSY`: killed
    /// processes still exiting) for at most `timeout`.
    pub fn remove(&mut self, timeout: Duration) -> Result<(), CgroupError> {
        if self.removed {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.parent.remove_child(&self.name) {
                Ok(()) => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    return Err(CgroupError::Remove {
                        path: self.path.clone(),
                        source: io::Error::other(
                            "the cgroup disappeared before this runtime removed it",
                        ),
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(source) => {
                    return Err(CgroupError::Remove {
                        path: self.path.clone(),
                        source,
                    });
                }
            }
        }
    }

    /// Kills everything in the cgroup and removes it. Both steps run even if
    /// the first fails; the first failure is returned.
    pub fn kill_and_remove(&mut self) -> Result<(), CgroupError> {
        if self.removed {
            return Ok(());
        }
        let killed = self.kill();
        let removed = self.remove(REMOVE_TIMEOUT);
        match killed {
            Ok(()) => removed,
            Err(e) => Err(e.then_cleanup(removed)),
        }
    }

    /// A fresh descriptor of the child directory for the runner.
    pub fn descriptor(&self) -> Result<OwnedFd, CgroupError> {
        self.dir
            .descriptor()
            .map_err(|source| CgroupError::Descriptor {
                path: self.path.clone(),
                source,
            })
    }

    /// Waits until `pid` is listed in the child's `cgroup.procs`, at most
    /// `timeout`. `exited` reports (without blocking) how the process ended,
    /// if it did; an exit before the join is an error.
    pub fn await_join(
        &self,
        pid: u32,
        timeout: Duration,
        mut exited: impl FnMut() -> io::Result<Option<WorkerStatus>>,
    ) -> Result<(), CgroupError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.procs()?.contains(&pid) {
                return Ok(());
            }
            match exited() {
                Ok(Some(status)) => {
                    return Err(CgroupError::RunnerExited {
                        path: self.path.clone(),
                        pid,
                        status,
                    });
                }
                Ok(None) => {}
                Err(source) => return Err(CgroupError::Observe { pid, source }),
            }
            if Instant::now() >= deadline {
                return Err(CgroupError::JoinTimeout {
                    path: self.path.clone(),
                    pid,
                    timeout_ms: timeout.as_millis(),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for WorkerCgroup {
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.kill_and_remove();
        }
    }
}

/// How the runner is started.
#[derive(Debug)]
enum RunnerProgram {
    /// Through its canonical path.
    Path(PathBuf),
    /// Through `/proc/self/fd/N` of this retained `O_PATH` descriptor.
    Pinned(OwnedFd),
}

/// A cgroup runner that passed its check, as it will be started.
#[derive(Debug)]
pub(crate) struct CheckedRunner {
    program: RunnerProgram,
    shown: String,
}

/// The cgroup boundary of a bound command: the verified parent, the limits,
/// the checked runner and the join timeout.
#[derive(Debug)]
pub struct CgroupBoundary {
    parent: CgroupParent,
    limits: CgroupLimits,
    runner: RunnerProgram,
    runner_shown: String,
    join_timeout: Duration,
}

impl CgroupBoundary {
    /// Bind steps 1–3 of the module documentation. With `pin_runner` the
    /// runner is executed through its retained descriptor.
    pub fn prepare(policy: &CgroupPolicy, pin_runner: bool) -> Result<Self, CgroupError> {
        let parent = Self::check_parent(policy)?;
        // What a host killed by SIGKILL left under this parent goes first.
        parent.sweep();
        let runner = Self::check_runner(policy, pin_runner)?;
        Ok(Self::from_checked(policy, parent, runner))
    }

    /// The parent half of [`CgroupBoundary::prepare`]: opened, verified and
    /// delegating every controller the limits need. Changes nothing.
    pub(crate) fn check_parent(policy: &CgroupPolicy) -> Result<CgroupParent, CgroupError> {
        let parent = CgroupParent::open(Path::new(policy.parent.as_str()))?;
        parent.check_delegated(&policy.limits)?;
        Ok(parent)
    }

    /// The runner half of [`CgroupBoundary::prepare`].
    pub(crate) fn check_runner(
        policy: &CgroupPolicy,
        pin_runner: bool,
    ) -> Result<CheckedRunner, CgroupError> {
        let (program, shown) = check_runner(policy.runner.as_str(), pin_runner)?;
        Ok(CheckedRunner { program, shown })
    }

    /// The boundary from a checked parent and runner.
    pub(crate) fn from_checked(
        policy: &CgroupPolicy,
        parent: CgroupParent,
        runner: CheckedRunner,
    ) -> Self {
        Self {
            parent,
            limits: policy.limits.clone(),
            runner: runner.program,
            runner_shown: runner.shown,
            join_timeout: Duration::from_millis(policy.join_timeout_ms),
        }
    }

    /// The verified parent.
    pub fn parent(&self) -> &CgroupParent {
        &self.parent
    }

    /// How long spawn waits for the runner to join.
    pub fn join_timeout(&self) -> Duration {
        self.join_timeout
    }

    /// Creates this launch's child cgroup and prefixes `spec` with the
    /// runner (launch steps 1–5). Every descriptor the spec already passes
    /// on is listed with `--keep-fd`; the child directory's descriptor is
    /// added as `--cgroup-fd`. With `identity` (uid, gid) the runner
    /// switches to it after it joined (`--identity UID:GID`), so Bubblewrap
    /// starts as the identity inside the cgroup.
    pub fn wrap(
        &self,
        spec: &mut LaunchSpec,
        identity: Option<(u32, u32)>,
    ) -> Result<WorkerCgroup, CgroupError> {
        let child = self.parent.create_child(&self.limits)?;
        let fd = child.descriptor()?;
        let mut prefix = vec!["--cgroup-fd".to_owned(), fd.as_raw_fd().to_string()];
        for keep in spec.inherited() {
            prefix.push("--keep-fd".to_owned());
            prefix.push(keep.to_string());
        }
        if let Some((uid, gid)) = identity {
            prefix.push("--identity".to_owned());
            prefix.push(format!("{uid}:{gid}"));
        }
        prefix.push("--".to_owned());
        let program = match &self.runner {
            RunnerProgram::Path(p) => p.clone(),
            RunnerProgram::Pinned(fd) => crate::launch_spec::proc_fd_path(fd),
        };
        spec.wrap(program, prefix, vec![fd]);
        Ok(child)
    }

    /// The runner as configured, for messages.
    pub fn runner(&self) -> &str {
        &self.runner_shown
    }
}

fn check_runner(path: &str, pin: bool) -> Result<(RunnerProgram, String), CgroupError> {
    let io_err = |source| CgroupError::RunnerIo {
        path: PathBuf::from(path),
        source,
    };
    let bad = |why| CgroupError::Runner {
        path: PathBuf::from(path),
        why,
    };
    let link = std::fs::symlink_metadata(path).map_err(io_err)?;
    if link.file_type().is_symlink() {
        return Err(bad(RunnerDefect::Symlink));
    }
    let canonical = std::fs::canonicalize(path).map_err(io_err)?;
    let fd = sys::open_path_no_symlinks(&canonical).map_err(io_err)?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(bad(RunnerDefect::NotExecutable));
    }
    let program = if pin {
        RunnerProgram::Pinned(OwnedFd::from(file))
    } else {
        RunnerProgram::Path(canonical)
    };
    Ok((program, path.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use splashpol::model::IoMax;

    use super::*;

    /// A recording fake: every write and directory operation is logged.
    #[derive(Debug, Default)]
    struct FakeFs {
        log: Mutex<Vec<String>>,
        /// Per-directory files ("" is the parent).
        files: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
        /// `(file, errno)` writes that fail.
        fail_write: Mutex<Option<(String, i32)>>,
        busy_removals: Mutex<u32>,
        magic: i64,
    }

    #[derive(Debug)]
    struct FakeDir {
        fs: Arc<FakeFs>,
        name: String,
    }

    impl FakeFs {
        fn new(subtree: &str, child_controllers: &str) -> Arc<Self> {
            let fs = FakeFs {
                magic: CGROUP2_SUPER_MAGIC,
                ..FakeFs::default()
            };
            let mut parent = BTreeMap::new();
            for f in CORE_FILES {
                parent.insert(f.to_owned(), String::new());
            }
            parent.insert("cgroup.subtree_control".into(), subtree.to_owned());
            parent.insert("child.controllers".into(), child_controllers.to_owned());
            fs.files.lock().unwrap().insert(String::new(), parent);
            Arc::new(fs)
        }
        fn log(&self) -> Vec<String> {
            self.log.lock().unwrap().clone()
        }
    }

    impl CgroupDir for FakeDir {
        fn filesystem_magic(&self) -> io::Result<i64> {
            Ok(self.fs.magic)
        }
        fn has(&self, file: &str) -> io::Result<bool> {
            Ok(self.fs.files.lock().unwrap()[&self.name].contains_key(file))
        }
        fn read(&self, file: &str) -> io::Result<String> {
            self.fs.files.lock().unwrap()[&self.name]
                .get(file)
                .cloned()
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
        }
        fn write(&self, file: &str, value: &str) -> io::Result<()> {
            self.fs
                .log
                .lock()
                .unwrap()
                .push(format!("write {}/{file} {value}", self.name));
            if let Some((f, errno)) = &*self.fs.fail_write.lock().unwrap()
                && f == file
            {
                return Err(io::Error::from_raw_os_error(*errno));
            }
            Ok(())
        }
        fn make_child(&self, name: &str) -> io::Result<Box<dyn CgroupDir>> {
            self.fs.log.lock().unwrap().push(format!("mkdir {name}"));
            let mut files = self.fs.files.lock().unwrap();
            let controllers = files[""]["child.controllers"].clone();
            let mut child = BTreeMap::new();
            child.insert("cgroup.controllers".to_owned(), controllers);
            child.insert("cgroup.procs".to_owned(), String::new());
            files.insert(name.to_owned(), child);
            Ok(Box::new(FakeDir {
                fs: Arc::clone(&self.fs),
                name: name.to_owned(),
            }))
        }
        fn remove_child(&self, name: &str) -> io::Result<()> {
            self.fs.log.lock().unwrap().push(format!("rmdir {name}"));
            let mut busy = self.fs.busy_removals.lock().unwrap();
            if *busy > 0 {
                *busy -= 1;
                return Err(io::Error::from_raw_os_error(libc::EBUSY));
            }
            self.fs.files.lock().unwrap().remove(name);
            Ok(())
        }
        fn descriptor(&self) -> io::Result<OwnedFd> {
            Err(io::Error::other("a fake has no descriptor"))
        }
    }

    fn parent(fs: &Arc<FakeFs>) -> Result<CgroupParent, CgroupError> {
        CgroupParent::with_dir(
            Path::new("/cg/parent"),
            Arc::new(FakeDir {
                fs: Arc::clone(fs),
                name: String::new(),
            }),
        )
    }

    fn full_limits() -> CgroupLimits {
        CgroupLimits {
            cpu_quota_micros: Some(50_000),
            memory_max_bytes: Some(512 << 20),
            memory_swap_max_bytes: Some(0),
            pids_max: Some(64),
            io_max: vec![
                IoMax {
                    major: 8,
                    minor: 0,
                    rbps: None,
                    wbps: None,
                    riops: Some(0),
                    wiops: None,
                },
                IoMax {
                    major: 8,
                    minor: 16,
                    rbps: Some(2 << 20),
                    wbps: Some(0),
                    riops: None,
                    wiops: Some(120),
                },
            ],
        }
    }

    #[test]
    fn the_exact_write_sequence_then_the_kill_probe() {
        let fs = FakeFs::new("cpu io memory pids", "cpu io memory pids");
        let parent = parent(&fs).expect("parent");
        parent.check_delegated(&full_limits()).expect("delegated");
        let mut child = parent
            .create_named_child("splash-x".into(), &full_limits())
            .expect("child");
        assert_eq!(
            fs.log(),
            [
                "mkdir splash-x",
                "write splash-x/cpu.max 50000 100000",
                "write splash-x/memory.max 536870912",
                "write splash-x/memory.oom.group 1",
                "write splash-x/memory.swap.max 0",
                "write splash-x/pids.max 64",
                "write splash-x/io.max 8:0 riops=0",
                "write splash-x/io.max 8:16 rbps=2097152 wbps=0 wiops=120",
                "write splash-x/cgroup.kill 1",
            ]
        );
        assert!(
            !fs.log().iter().any(|l| l.contains("subtree_control")),
            "the parent's subtree_control is never written"
        );
        child.kill_and_remove().expect("teardown");
        assert_eq!(
            fs.log()[9..],
            ["write splash-x/cgroup.kill 1", "rmdir splash-x"]
        );
        drop(child);
        assert_eq!(fs.log().len(), 11, "drop after removal does nothing");
    }

    #[test]
    fn only_the_selected_limits_are_written() {
        let fs = FakeFs::new("pids", "pids");
        let limits = CgroupLimits {
            pids_max: Some(7),
            ..CgroupLimits::default()
        };
        let child = parent(&fs)
            .expect("parent")
            .create_named_child("c".into(), &limits)
            .expect("child");
        assert_eq!(
            fs.log(),
            ["mkdir c", "write c/pids.max 7", "write c/cgroup.kill 1"]
        );
        drop(child);
        assert_eq!(fs.log().last().map(String::as_str), Some("rmdir c"));
    }

    #[test]
    fn a_missing_controller_is_named_and_nothing_is_written() {
        let fs = FakeFs::new("cpu pids", "cpu pids");
        let parent = parent(&fs).expect("parent");
        let err = parent.check_delegated(&full_limits()).expect_err("memory");
        assert!(err.to_string().contains("controller `memory`"), "{err}");
        // The child is checked too (the parent could change in between).
        let err = parent
            .create_named_child("c".into(), &full_limits())
            .expect_err("memory");
        assert!(
            matches!(
                err,
                CgroupError::MissingController {
                    controller: "memory",
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(fs.log(), ["mkdir c", "rmdir c"]);
    }

    #[test]
    fn a_failed_write_removes_the_child() {
        let fs = FakeFs::new("memory", "memory");
        *fs.fail_write.lock().unwrap() = Some(("memory.swap.max".into(), libc::ENOENT));
        let limits = CgroupLimits {
            memory_max_bytes: Some(1 << 20),
            memory_swap_max_bytes: Some(0),
            ..CgroupLimits::default()
        };
        let err = parent(&fs)
            .expect("parent")
            .create_named_child("c".into(), &limits)
            .expect_err("swap");
        assert!(err.to_string().contains("`memory.swap.max`"), "{err}");
        assert_eq!(fs.log().last().map(String::as_str), Some("rmdir c"));
    }

    #[test]
    fn a_cgroup_without_kill_fails_before_launch() {
        let fs = FakeFs::new("pids", "pids");
        *fs.fail_write.lock().unwrap() = Some(("cgroup.kill".into(), libc::ENOENT));
        let limits = CgroupLimits {
            pids_max: Some(1),
            ..CgroupLimits::default()
        };
        let err = parent(&fs)
            .expect("parent")
            .create_named_child("c".into(), &limits)
            .expect_err("no kill");
        assert!(err.to_string().contains("`cgroup.kill`"), "{err}");
        assert_eq!(fs.log().last().map(String::as_str), Some("rmdir c"));
    }

    #[test]
    fn removal_retries_while_busy() {
        let fs = FakeFs::new("pids", "pids");
        *fs.busy_removals.lock().unwrap() = 3;
        let mut child = parent(&fs)
            .expect("parent")
            .create_named_child(
                "c".into(),
                &CgroupLimits {
                    pids_max: Some(1),
                    ..CgroupLimits::default()
                },
            )
            .expect("child");
        child.kill_and_remove().expect("removed after retries");
        assert_eq!(fs.log().iter().filter(|l| *l == "rmdir c").count(), 4);
    }

    #[test]
    fn a_parent_that_is_not_cgroup2_or_lacks_core_files_is_refused() {
        let fs = Arc::new(FakeFs {
            magic: 0x01021994,
            ..FakeFs::default()
        });
        fs.files
            .lock()
            .unwrap()
            .insert(String::new(), BTreeMap::new());
        let err = parent(&fs).expect_err("tmpfs");
        assert!(matches!(err, CgroupError::NotCgroup2 { .. }), "{err}");

        let fs = FakeFs::new("", "");
        fs.files
            .lock()
            .unwrap()
            .get_mut("")
            .unwrap()
            .remove("cgroup.procs");
        let err = parent(&fs).expect_err("no procs");
        assert!(err.to_string().contains("`cgroup.procs`"), "{err}");
    }

    #[test]
    fn join_waits_for_the_pid_and_reports_an_early_exit_or_timeout() {
        let fs = FakeFs::new("", "");
        let child = parent(&fs)
            .expect("parent")
            .create_named_child("c".into(), &CgroupLimits::default())
            .expect("child");
        let err = child
            .await_join(42, Duration::from_millis(20), || Ok(None))
            .expect_err("timeout");
        assert!(
            matches!(err, CgroupError::JoinTimeout { pid: 42, .. }),
            "{err}"
        );
        let err = child
            .await_join(42, Duration::from_secs(5), || {
                Ok(Some(WorkerStatus::Exited(1)))
            })
            .expect_err("exited");
        assert!(err.to_string().contains("exit status 1"), "{err}");
        fs.files
            .lock()
            .unwrap()
            .get_mut("c")
            .unwrap()
            .insert("cgroup.procs".into(), "7\n42\n".into());
        child
            .await_join(42, Duration::from_millis(20), || Ok(None))
            .expect("joined");
    }
}
