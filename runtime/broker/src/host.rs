//! The host broker: a private directory with one socket, and the thread
//! that serves it.
//!
//! [`HostBroker::start`], in order:
//!
//! 1. the catalog must not be empty;
//! 2. the parent is canonicalized once, then opened `O_PATH | O_DIRECTORY`
//!    with `openat2(RESOLVE_NO_SYMLINKS)`; through that descriptor (`fstat`)
//!    it must be a directory owned by this process's effective uid and
//!    writable by neither its group nor others;
//! 3. a directory named `.splash-broker-` and 32 hex digits from the
//!    operating system's CSPRNG is made with `mkdirat(parent_fd, name,
//!    0700)` (a name that exists is retried with fresh bytes, at most 8
//!    times), opened with `openat(parent_fd, name, O_DIRECTORY |
//!    O_NOFOLLOW)`, set to `0700` with `fchmod` whatever the umask, and
//!    checked with `fstat` (a directory owned by this uid);
//! 4. the socket is bound at `/proc/self/fd/N/broker.sock`, where `N` is
//!    that directory's descriptor, so no path from the host root is looked
//!    up again, then set to `0600` with `fchmodat(dir_fd, "broker.sock")`;
//! 5. one thread serves the socket until [`HostBroker::shutdown`] or drop.
//!
//! Shutdown wakes the thread through a pipe, joins it, and removes the
//! socket and the directory with `unlinkat` relative to the retained
//! descriptors. Any failure in steps 2–5 removes what was made.
//!
//! A host killed by SIGKILL cannot remove its directory, so ownership is
//! proved by a lock, never guessed from a pid: the broker holds an
//! exclusive `flock(2)` on its directory from right after `mkdirat` (step
//! 3) for its whole life; a directory that a sweep removed in that instant
//! has a link count of 0 and is made again under a new name. Before step 3
//! every start sweeps the parent: a `.splash-broker-<32 hex>` directory of
//! this uid whose lock it can take has no living owner, and its socket and
//! the directory are removed (a directory holding anything else is left
//! alone). [`HostBroker::sweep`] does the same on its own.

use std::ffi::{CStr, CString};
use std::io::{self, BufReader, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use splash_protocol::Token;

use crate::catalog::{
    Catalog, CatalogKind, Entry, Method, Redirects, Rule, WORKER_RESPONSE_HEADERS, split_url,
};
use crate::http::{self, Incoming, Outgoing, WRITE_CHUNK};
use crate::sys;
use crate::wire::{
    Failure, Headers, MAX_HEADER_VALUE_BYTES, MAX_HEADERS, MAX_REQUEST_LINE_BYTES, Reply, Request,
    Response, SOCKET_NAME, read_line, well_formed, write_line,
};

/// How long the broker waits for a connection's whole request line.
pub const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the broker spends handing one whole reply to a slow reader:
/// one deadline for the reply, rechecked before each write.
pub const REPLY_WRITE_TIMEOUT: Duration = Duration::from_secs(5);

const NAME_PREFIX: &str = ".splash-broker-";
const CREATE_ATTEMPTS: usize = 8;
/// The most entries of the parent a sweep looks at.
const SWEEP_ENTRIES: usize = 4096;

/// Why a broker could not start or stop cleanly (host-side errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// The catalog is empty.
    #[error("the catalog is empty; a broker serves at least one id")]
    EmptyCatalog,
    /// The parent could not be resolved or opened.
    #[error("failed to open the broker parent `{}`", .path.display())]
    Parent {
        /// The parent as given.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The parent is not a safe place for the private directory.
    #[error("the broker parent `{}` is {problem}", .path.display())]
    UnsafeParent {
        /// The parent (canonical).
        path: PathBuf,
        /// What is wrong.
        problem: ParentDefect,
    },
    /// The private directory or its socket could not be made.
    #[error("failed to {step} in `{}`", .path.display())]
    Create {
        /// What failed.
        step: &'static str,
        /// The parent or the private directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The private directory does not have its required shape.
    #[error("the broker directory `{}` is {problem}", .path.display())]
    Shape {
        /// The private directory.
        path: PathBuf,
        /// What is wrong.
        problem: ShapeDefect,
    },
    /// The serving thread panicked or stopped on an error.
    #[error("the broker's serving thread {0}")]
    Thread(ThreadEnd),
    /// Removing the socket or the directory failed.
    #[error("failed to remove `{}`", .path.display())]
    Cleanup {
        /// What could not be removed.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// Counters of what the broker answered, for the host (never the worker).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerStats {
    /// Connections accepted.
    pub connections: u64,
    /// Requests answered with a response.
    pub served: u64,
    /// Requests answered `denied`.
    pub denied: u64,
    /// Requests answered `failed`.
    pub failed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    served: AtomicU64,
    denied: AtomicU64,
    failed: AtomicU64,
}

/// What the runtime's bind needs to pin and check the broker's private
/// directory: fresh duplicates of the directory and parent descriptors, the
/// paths, the catalog kind and the ids. Made by [`HostBroker::mount`].
#[derive(Debug)]
pub struct BrokerMount {
    directory: OwnedFd,
    parent: OwnedFd,
    name: CString,
    directory_path: PathBuf,
    parent_path: PathBuf,
    kind: CatalogKind,
    ids: std::collections::BTreeSet<Token>,
}

fn mode_of(st: &libc::stat) -> u32 {
    st.st_mode & 0o7777
}

fn file_type(st: &libc::stat) -> u32 {
    st.st_mode & libc::S_IFMT
}

impl BrokerMount {
    /// An `O_PATH` descriptor of the private directory (what bind pins).
    pub fn directory_fd(&self) -> BorrowedFd<'_> {
        self.directory.as_fd()
    }

    /// A fresh close-on-exec duplicate of [`Self::directory_fd`].
    pub fn duplicate_directory(&self) -> io::Result<OwnedFd> {
        self.directory.try_clone()
    }

    /// The private directory's host path (for messages; never looked up).
    pub fn directory_path(&self) -> &Path {
        &self.directory_path
    }

    /// The canonical parent path the broker was started in.
    pub fn parent_path(&self) -> &Path {
        &self.parent_path
    }

    /// The catalog kind.
    pub fn kind(&self) -> CatalogKind {
        self.kind
    }

    /// The catalog ids.
    pub fn ids(&self) -> &std::collections::BTreeSet<Token> {
        &self.ids
    }

    fn shape(&self, problem: ShapeDefect) -> BrokerError {
        BrokerError::Shape {
            path: self.directory_path.to_path_buf(),
            problem,
        }
    }

    /// Re-checks, through the descriptors only, that the private directory
    /// still has its shape: the parent is a directory owned by this uid and
    /// not group- or world-writable; the directory is still the parent's
    /// entry of that name, owned by this uid, mode `0700`, and holds exactly
    /// one entry, `broker.sock`, a socket owned by this uid with mode `0600`.
    pub fn verify(&self) -> Result<(), BrokerError> {
        let uid = sys::effective_uid();
        let io = |e: io::Error| self.shape(ShapeDefect::NotInspectable(e));
        let parent = sys::fstat(self.parent.as_fd()).map_err(io)?;
        check_parent(&parent, uid).map_err(|p| self.shape(ShapeDefect::Parent(p)))?;
        let dir = sys::fstat(self.directory.as_fd()).map_err(io)?;
        if file_type(&dir) != libc::S_IFDIR || dir.st_uid != uid || mode_of(&dir) != 0o700 {
            return Err(self.shape(ShapeDefect::NotPrivate));
        }
        let entry = sys::fstat_at(self.parent.as_fd(), &self.name).map_err(io)?;
        if (entry.st_dev, entry.st_ino) != (dir.st_dev, dir.st_ino) {
            return Err(self.shape(ShapeDefect::Replaced));
        }
        let readable = sys::open_at(
            self.directory.as_fd(),
            c".",
            libc::O_RDONLY | libc::O_DIRECTORY,
        )
        .map_err(io)?;
        let names = sys::list_directory(readable.as_fd(), 2).map_err(io)?;
        if names != [SOCKET_NAME.as_bytes()] {
            return Err(self.shape(ShapeDefect::Entries(names.len())));
        }
        let socket = sys::fstat_at(readable.as_fd(), &socket_name()).map_err(io)?;
        if file_type(&socket) != libc::S_IFSOCK || socket.st_uid != uid || mode_of(&socket) != 0o600
        {
            return Err(self.shape(ShapeDefect::Socket));
        }
        Ok(())
    }
}

/// Removes every `.splash-broker-<32 hex>` directory under `parent` whose
/// lock no living process holds; how many went.
fn sweep_parent(parent: BorrowedFd<'_>, uid: libc::uid_t) -> usize {
    let Ok(listing) = sys::open_at(parent, c".", libc::O_RDONLY | libc::O_DIRECTORY) else {
        return 0;
    };
    let Ok(names) = sys::list_directory(listing.as_fd(), SWEEP_ENTRIES) else {
        return 0;
    };
    names
        .iter()
        .filter(|name| {
            name.strip_prefix(NAME_PREFIX.as_bytes())
                .is_some_and(|hex| hex.len() == 32 && hex.iter().all(u8::is_ascii_hexdigit))
        })
        .filter_map(|name| CString::new(name.clone()).ok())
        .filter(|name| sweep_one(parent, name, uid).unwrap_or(false))
        .count()
}

/// Removes the directory `name` if its lock is free, it belongs to `uid`
/// and it holds nothing but the socket.
fn sweep_one(parent: BorrowedFd<'_>, name: &CStr, uid: libc::uid_t) -> io::Result<bool> {
    let dir = std::fs::File::from(sys::open_at(
        parent,
        name,
        libc::O_RDONLY | libc::O_DIRECTORY,
    )?);
    match dir.try_lock() {
        Ok(()) => {}
        // Its owner lives.
        Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    let st = sys::fstat(dir.as_fd())?;
    if file_type(&st) != libc::S_IFDIR || st.st_uid != uid {
        return Ok(false);
    }
    let entries = sys::list_directory(dir.as_fd(), 2)?;
    if entries.iter().any(|e| e != SOCKET_NAME.as_bytes()) {
        return Ok(false);
    }
    if !entries.is_empty() {
        let socket = sys::fstat_at(dir.as_fd(), &socket_name())?;
        if file_type(&socket) != libc::S_IFSOCK {
            return Ok(false);
        }
        sys::unlink_at(dir.as_fd(), &socket_name(), 0)?;
    }
    // Removed while still locked, so a creator that loses this race sees a
    // link count of 0.
    sys::unlink_at(parent, name, libc::AT_REMOVEDIR)?;
    Ok(true)
}

fn socket_name() -> CString {
    CString::new(SOCKET_NAME).unwrap_or_default()
}

fn check_parent(st: &libc::stat, uid: libc::uid_t) -> Result<(), ParentDefect> {
    if file_type(st) != libc::S_IFDIR {
        Err(ParentDefect::NotADirectory)
    } else if st.st_uid != uid {
        Err(ParentDefect::NotOwned)
    } else if mode_of(st) & 0o022 != 0 {
        Err(ParentDefect::Writable)
    } else {
        Ok(())
    }
}

/// Why a broker parent is not a safe place for the private directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParentDefect {
    /// It is not a directory.
    #[error("not a directory")]
    NotADirectory,
    /// Another user owns it.
    #[error("not owned by this process's user")]
    NotOwned,
    /// Its group or others may write to it.
    #[error("writable by its group or by others")]
    Writable,
}

/// How the broker's private directory lost (or never had) its shape.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeDefect {
    /// It, its parent or its socket cannot be inspected.
    #[error("not inspectable ({0})")]
    NotInspectable(#[source] io::Error),
    /// Its parent became unsafe.
    #[error("in a parent that is {0}")]
    Parent(ParentDefect),
    /// It is not a directory of this user with mode `0700`.
    #[error("not a 0700 directory owned by this user")]
    NotPrivate,
    /// It was made but is not a directory of this user with mode `0700`.
    #[error("not a 0700 directory owned by this user after creation")]
    NotPrivateAfterCreation,
    /// Its parent's entry of that name is another file now.
    #[error("no longer the entry of its parent")]
    Replaced,
    /// It holds another number of entries than one (the count).
    #[error("holding {0} entries; exactly one, `{SOCKET_NAME}`, is required")]
    Entries(usize),
    /// Its socket is not a socket of this user with mode `0600`.
    #[error("holding a socket that is not 0600 and owned by this user")]
    Socket,
}

/// How the broker's serving thread ended badly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadEnd {
    /// It panicked.
    #[error("panicked")]
    Panicked,
    /// It stopped on an accept error.
    #[error("stopped on an accept error")]
    AcceptError,
}

/// A running broker for one session: one private directory, one socket,
/// one serving thread. Keep it alive until the worker it serves has been
/// reaped; [`Self::shutdown`] (or drop) stops it and removes the directory.
#[derive(Debug)]
pub struct HostBroker {
    parent: OwnedFd,
    directory: OwnedFd,
    name: CString,
    parent_path: PathBuf,
    directory_path: PathBuf,
    kind: CatalogKind,
    ids: std::collections::BTreeSet<Token>,
    wake: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    thread_failed: Arc<AtomicBool>,
    removed: bool,
    /// The private directory, opened for its `flock(2)`: held as long as
    /// the broker, released only after the directory is removed.
    _lock: std::fs::File,
}

/// Removes what `start` made so far, on failure.
struct Partial<'a> {
    parent: BorrowedFd<'a>,
    name: &'a CStr,
    socket: bool,
}

impl Drop for Partial<'_> {
    fn drop(&mut self) {
        if self.socket {
            let _ = sys::open_at(self.parent, self.name, libc::O_PATH | libc::O_DIRECTORY)
                .and_then(|d| sys::unlink_at(d.as_fd(), &socket_name(), 0));
        }
        let _ = sys::unlink_at(self.parent, self.name, libc::AT_REMOVEDIR);
    }
}

impl HostBroker {
    /// Starts a broker for `catalog` in a fresh private directory under
    /// `parent`; see the module documentation for the steps.
    pub fn start(parent: impl AsRef<Path>, catalog: Catalog) -> Result<Self, BrokerError> {
        if catalog.is_empty() {
            return Err(BrokerError::EmptyCatalog);
        }
        let given = parent.as_ref();
        let parent_error = |source| BrokerError::Parent {
            path: given.to_path_buf(),
            source,
        };
        let parent_path = std::fs::canonicalize(given).map_err(parent_error)?;
        let parent = sys::open_directory_no_symlinks(&parent_path).map_err(parent_error)?;
        let st = sys::fstat(parent.as_fd()).map_err(parent_error)?;
        let uid = sys::effective_uid();
        check_parent(&st, uid).map_err(|problem| BrokerError::UnsafeParent {
            path: parent_path.to_path_buf(),
            problem,
        })?;
        let create = |step, source| BrokerError::Create {
            step,
            path: parent_path.to_path_buf(),
            source,
        };

        sweep_parent(parent.as_fd(), uid);
        let mut made = None;
        for _ in 0..CREATE_ATTEMPTS {
            let mut bytes = [0u8; 16];
            getrandom::fill(&mut bytes).map_err(|e| {
                create(
                    "draw the directory name from the CSPRNG",
                    io::Error::other(e.to_string()),
                )
            })?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let name = format!("{NAME_PREFIX}{hex}");
            let c_name = CString::new(name.clone()).unwrap_or_default();
            match sys::mkdir_at(parent.as_fd(), &c_name, 0o700) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(create("create the private directory", e)),
            }
            // The owner's lock, taken before anything is in the directory.
            // A sweep that removed it first held the lock only briefly and
            // left a link count of 0: made again under a new name.
            let dir =
                match sys::open_at(parent.as_fd(), &c_name, libc::O_RDONLY | libc::O_DIRECTORY) {
                    Ok(dir) => std::fs::File::from(dir),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        let _ = sys::unlink_at(parent.as_fd(), &c_name, libc::AT_REMOVEDIR);
                        return Err(create("open the private directory", e));
                    }
                };
            if let Err(e) = dir.lock() {
                let _ = sys::unlink_at(parent.as_fd(), &c_name, libc::AT_REMOVEDIR);
                return Err(create("lock the private directory", e));
            }
            match sys::fstat(dir.as_fd()) {
                Ok(st) if st.st_nlink == 0 => continue,
                Ok(_) => {
                    made = Some((name, c_name, dir));
                    break;
                }
                Err(e) => {
                    let _ = sys::unlink_at(parent.as_fd(), &c_name, libc::AT_REMOVEDIR);
                    return Err(create("inspect the private directory", e));
                }
            }
        }
        let (name, c_name, dir) = made.ok_or_else(|| {
            create(
                "create the private directory",
                io::Error::from(io::ErrorKind::AlreadyExists),
            )
        })?;
        let mut partial = Partial {
            parent: parent.as_fd(),
            name: &c_name,
            socket: false,
        };
        let directory_path = parent_path.join(&name);
        let dir_error = |step, source| BrokerError::Create {
            step,
            path: directory_path.to_path_buf(),
            source,
        };
        sys::fchmod(dir.as_fd(), 0o700).map_err(|e| dir_error("set mode 0700", e))?;
        let st = sys::fstat(dir.as_fd()).map_err(|e| dir_error("inspect", e))?;
        if file_type(&st) != libc::S_IFDIR || st.st_uid != uid || mode_of(&st) != 0o700 {
            return Err(BrokerError::Shape {
                path: directory_path.to_path_buf(),
                problem: ShapeDefect::NotPrivateAfterCreation,
            });
        }
        let directory = sys::open_at(dir.as_fd(), c".", libc::O_PATH | libc::O_DIRECTORY)
            .map_err(|e| dir_error("pin the private directory", e))?;

        let through_fd = PathBuf::from(format!("/proc/self/fd/{}/{SOCKET_NAME}", dir.as_raw_fd()));
        let listener =
            UnixListener::bind(&through_fd).map_err(|e| dir_error("bind the socket", e))?;
        partial.socket = true;
        sys::fchmod_at(dir.as_fd(), &socket_name(), 0o600)
            .map_err(|e| dir_error("set the socket to mode 0600", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| dir_error("configure the socket", e))?;
        let (wake_read, wake_write) = sys::pipe().map_err(|e| dir_error("make a wake pipe", e))?;

        let kind = catalog.kind();
        let ids = catalog.ids();
        let counters = Arc::new(Counters::default());
        let thread_failed = Arc::new(AtomicBool::new(false));
        let (c, f) = (Arc::clone(&counters), Arc::clone(&thread_failed));
        let thread = std::thread::Builder::new()
            .name("splash-broker".into())
            .spawn(move || serve(listener, wake_read, catalog, c, f))
            .map_err(|e| dir_error("start the serving thread", e))?;
        std::mem::forget(partial);
        Ok(Self {
            parent,
            directory,
            name: c_name,
            parent_path,
            directory_path,
            kind,
            ids,
            wake: Some(wake_write),
            thread: Some(thread),
            counters,
            thread_failed,
            removed: false,
            _lock: dir,
        })
    }

    /// Removes the private directories under `parent` whose owner is dead
    /// (their lock is free; see the module documentation); returns how
    /// many went. Best effort, like the sweep every start makes.
    pub fn sweep(parent: impl AsRef<Path>) -> Result<usize, BrokerError> {
        let given = parent.as_ref();
        let parent_error = |source| BrokerError::Parent {
            path: given.to_path_buf(),
            source,
        };
        let parent_path = std::fs::canonicalize(given).map_err(parent_error)?;
        let parent = sys::open_directory_no_symlinks(&parent_path).map_err(parent_error)?;
        Ok(sweep_parent(parent.as_fd(), sys::effective_uid()))
    }

    /// Fresh descriptors and facts for the runtime's bind
    /// (`BindOptions::with_network_broker`).
    pub fn mount(&self) -> io::Result<BrokerMount> {
        Ok(BrokerMount {
            directory: self.directory.try_clone()?,
            parent: self.parent.try_clone()?,
            name: self.name.clone(),
            directory_path: self.directory_path.clone(),
            parent_path: self.parent_path.clone(),
            kind: self.kind,
            ids: self.ids.clone(),
        })
    }

    /// The private directory's host path.
    pub fn directory_path(&self) -> &Path {
        &self.directory_path
    }

    /// The socket's host path (for a host-side client or a control run).
    pub fn socket_path(&self) -> PathBuf {
        self.directory_path.join(SOCKET_NAME)
    }

    /// The catalog kind.
    pub fn kind(&self) -> CatalogKind {
        self.kind
    }

    /// The catalog ids.
    pub fn ids(&self) -> &std::collections::BTreeSet<Token> {
        &self.ids
    }

    /// What the broker has answered so far.
    pub fn stats(&self) -> BrokerStats {
        BrokerStats {
            connections: self.counters.connections.load(Ordering::Relaxed),
            served: self.counters.served.load(Ordering::Relaxed),
            denied: self.counters.denied.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
        }
    }

    /// Stops serving (a request in progress finishes first, bounded by its
    /// entry's timeout), joins the thread and removes the socket and the
    /// directory.
    pub fn shutdown(mut self) -> Result<(), BrokerError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), BrokerError> {
        let mut result = Ok(());
        if let Some(wake) = self.wake.take() {
            let _ = std::fs::File::from(wake).write_all(b"x");
        }
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            result = Err(BrokerError::Thread(ThreadEnd::Panicked));
        }
        if self.thread_failed.load(Ordering::Acquire) && result.is_ok() {
            result = Err(BrokerError::Thread(ThreadEnd::AcceptError));
        }
        if !self.removed {
            self.removed = true;
            let dir = sys::open_at(
                self.parent.as_fd(),
                &self.name,
                libc::O_PATH | libc::O_DIRECTORY,
            );
            let unlink_socket = dir.and_then(|d| sys::unlink_at(d.as_fd(), &socket_name(), 0));
            let unlink_dir = sys::unlink_at(self.parent.as_fd(), &self.name, libc::AT_REMOVEDIR);
            if let Err(source) = unlink_socket.and(unlink_dir)
                && result.is_ok()
            {
                result = Err(BrokerError::Cleanup {
                    path: self.directory_path.to_path_buf(),
                    source,
                });
            }
        }
        result
    }
}

impl Drop for HostBroker {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn serve(
    listener: UnixListener,
    wake: OwnedFd,
    catalog: Catalog,
    counters: Arc<Counters>,
    failed: Arc<AtomicBool>,
) {
    loop {
        let (incoming, woken) = match sys::poll_two(listener.as_fd(), wake.as_fd()) {
            Ok(r) => r,
            Err(_) => {
                failed.store(true, Ordering::Release);
                return;
            }
        };
        if woken {
            return;
        }
        if !incoming {
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                counters.connections.fetch_add(1, Ordering::Relaxed);
                let reply = handle(&stream, &catalog);
                let counter = match reply.error {
                    None => &counters.served,
                    Some(Failure::Denied) => &counters.denied,
                    Some(Failure::Failed) => &counters.failed,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                let mut writer = DeadlineWriter {
                    stream: &stream,
                    deadline: Instant::now() + REPLY_WRITE_TIMEOUT,
                };
                let _ = write_line(&mut writer, &reply);
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(_) => {
                failed.store(true, Ordering::Release);
                return;
            }
        }
    }
}

/// Reads from a connection until one deadline for the whole request, so a
/// worker that sends a byte at a time cannot hold the broker longer.
struct DeadlineReader<'a> {
    stream: &'a UnixStream,
    deadline: Instant,
}

impl io::Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        io::Read::read(&mut stream, buf)
    }
}

/// Writes to a connection until one deadline for the whole reply, so a
/// worker that reads a byte at a time cannot hold the broker longer.
struct DeadlineWriter<'a> {
    stream: &'a UnixStream,
    deadline: Instant,
}

impl io::Write for DeadlineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.stream.set_write_timeout(Some(left))?;
        let mut stream = self.stream;
        // A socket timeout restarts with every bit of progress, so one
        // large write could outlast it many times over: small writes bring
        // the deadline check back often.
        io::Write::write(&mut stream, &buf[..buf.len().min(WRITE_CHUNK)])
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads one request from `stream` and decides the reply.
fn handle(stream: &UnixStream, catalog: &Catalog) -> Reply {
    let start = Instant::now();
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(REQUEST_READ_TIMEOUT)).is_err()
    {
        return Reply::error(Failure::Failed);
    }
    let mut reader = BufReader::new(DeadlineReader {
        stream,
        deadline: start + REQUEST_READ_TIMEOUT,
    });
    let Ok(line) = read_line(&mut reader, MAX_REQUEST_LINE_BYTES) else {
        return Reply::error(Failure::Denied);
    };
    let Ok(request) = serde_json::from_slice::<Request>(&line) else {
        return Reply::error(Failure::Denied);
    };
    let Some(entry) = catalog.get(&request.id) else {
        return Reply::error(Failure::Denied);
    };
    if !allowed(entry, &request) {
        return Reply::error(Failure::Denied);
    }
    let deadline = start + entry.limits.timeout;
    match execute(entry, &request, deadline) {
        Ok(response) => Reply::ok(response),
        Err(failure) => Reply::error(failure),
    }
}

/// The catalog's decision for a request naming `entry`.
fn allowed(entry: &Entry, request: &Request) -> bool {
    if !well_formed(request) || request.body.len() > entry.limits.max_request_bytes {
        return false;
    }
    if matches!(request.method, Method::Get | Method::Head) && !request.body.is_empty() {
        return false;
    }
    match &entry.rule {
        Rule::Endpoint { method, path } => request.method == *method && request.path == *path,
        Rule::Origin { methods } => methods.contains(&request.method),
    }
}

fn execute(entry: &Entry, request: &Request, deadline: Instant) -> Result<Response, Failure> {
    let mut method = request.method;
    let mut path = request.path.clone();
    let mut body = request.body.as_bytes();
    let max_hops = match entry.redirects {
        Redirects::Refuse => 0,
        Redirects::SameOrigin { max_hops } => max_hops,
    };
    let mut hops = 0u8;
    loop {
        let mut headers: Vec<(&str, &[u8])> = request
            .headers
            .0
            .iter()
            .filter(|(k, _)| !body.is_empty() || k.as_str() != "content-type")
            .map(|(k, v)| (k.as_str(), v.as_bytes()))
            .collect();
        if let Some(c) = &entry.credential {
            headers.push((c.header_name(), c.value()));
        }
        let outgoing = Outgoing {
            origin: &entry.origin,
            method,
            path: &path,
            headers,
            body,
        };
        let answer = http::exchange(&outgoing, entry.limits.max_response_bytes, deadline)
            .map_err(|_| Failure::Failed)?;
        let location = answer
            .header("location")
            .filter(|_| (300..=399).contains(&answer.status));
        let Some(location) = location else {
            return to_response(answer);
        };
        if hops == max_hops {
            return Err(Failure::Failed);
        }
        hops += 1;
        path = same_origin_target(entry, location).ok_or(Failure::Failed)?;
        let keep_method = matches!(answer.status, 307 | 308);
        if !keep_method && method != Method::Head {
            method = Method::Get;
            body = b"";
        }
    }
}

/// The path of a redirect target on the entry's own origin, or `None`.
fn same_origin_target(entry: &Entry, location: &str) -> Option<String> {
    let path = if location.starts_with('/') && !location.starts_with("//") {
        location.to_owned()
    } else {
        let (origin, path) = split_url(location).ok()?;
        if origin != entry.origin {
            return None;
        }
        if path.is_empty() {
            "/".to_owned()
        } else {
            path.to_owned()
        }
    };
    crate::catalog::check_path(&path).ok()?;
    Some(path)
}

fn to_response(answer: Incoming) -> Result<Response, Failure> {
    let body = String::from_utf8(answer.body).map_err(|_| Failure::Failed)?;
    let mut headers = Headers::default();
    for (name, value) in answer.headers {
        if WORKER_RESPONSE_HEADERS.contains(&name.as_str())
            && value.len() <= MAX_HEADER_VALUE_BYTES
            && headers.0.len() < MAX_HEADERS
            && crate::catalog::is_header_value(value.as_bytes())
        {
            // A repeated header keeps its first value.
            headers.0.entry(name).or_insert(value);
        }
    }
    Ok(Response {
        status: answer.status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    use super::*;

    /// A reader that takes 4 KiB every 20 ms: each write makes progress, so
    /// only a deadline for the whole reply ends it.
    fn slow_reader(mut stream: UnixStream) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    }

    #[test]
    fn one_deadline_bounds_a_whole_reply_to_a_slow_reader() {
        let reply = vec![b'x'; 8 << 20];
        let (ours, theirs) = UnixStream::pair().expect("pair");
        let reader = slow_reader(theirs);
        let started = Instant::now();
        let mut writer = DeadlineWriter {
            stream: &ours,
            deadline: started + Duration::from_millis(300),
        };
        let written = writer.write_all(&reply);
        let took = started.elapsed();
        assert!(written.is_err(), "an 8 MiB reply at 200 KiB/s cannot fit");
        assert!(took < Duration::from_secs(2), "{took:?}");
        drop(ours);
        reader.join().expect("reader");

        // Control: a per-write timeout of the same length is still writing
        // well after the whole-reply deadline would have ended it.
        let (ours, theirs) = UnixStream::pair().expect("pair");
        let reader = slow_reader(theirs);
        ours.set_write_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let started = Instant::now();
        let mut sent = 0;
        let mut plain = &ours;
        while started.elapsed() < Duration::from_secs(2) {
            match plain.write(&reply[sent..sent + 65536]) {
                Ok(n) => sent += n,
                Err(e) => panic!("control: a per-write timeout failed early: {e}"),
            }
        }
        drop(ours);
        reader.join().expect("reader");
    }
}
