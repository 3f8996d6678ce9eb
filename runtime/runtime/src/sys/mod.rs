//! Every raw system call of the runtime, behind one door.
//!
//! Each function is a thin, checked wrapper: it turns a failure into an
//! [`io::Error`] and hands out [`OwnedFd`]s so that descriptor lifetimes are
//! tracked by the type system from the moment the kernel returns them. Callers
//! outside this module never write `unsafe`. Where `rustix` has a safe
//! binding (the `*at` calls, `openat2`, `memfd_create` and its seals,
//! `fstatfs`/`fstatvfs`, `poll`, `pipe2`, `waitid`, `pidfd_send_signal`,
//! `getuid`) this module uses it;
//! `unsafe` remains only for what it does not cover: the project-quota
//! `ioctl` and `quotactl_fd(2)`, the launch itself ([`spawn_child`]) and
//! the forked child's descriptor hook of the `--help` fallback.
//!
//! One file per kernel interface, each re-exported here:
//!
//! - `pin`: `openat2(2)` with `RESOLVE_NO_SYMLINKS` (pinning) and `openat(2)`
//!   of a read-only directory relative to a pin;
//! - `memfd`: `memfd_create(2)` and `fcntl(F_ADD_SEALS)` (the seccomp
//!   program);
//! - `quota`: `ioctl(FS_IOC_FSGETXATTR)` and `quotactl_fd(2)` with
//!   `Q_XGETQSTATV` and `Q_GETQUOTA` (project quotas);
//! - `launch`: `clone(2)` with `CLONE_VM | CLONE_VFORK | CLONE_PIDFD` (and
//!   `CLONE_NEWPID | CLONE_NEWNS`, perhaps `CLONE_NEWUSER`, for a launch in
//!   a pid namespace of its own), `pipe2(2)`, and in that child
//!   `sigaction(2)`, `prctl(PR_SET_PDEATHSIG)`, `getppid(2)` (or `PPid:` of
//!   the host's `/proc/self/status`), the user namespace's `uid_map`,
//!   `gid_map` and `setgroups`, `mount(2)` of that namespace's `/proc`,
//!   `dup2(2)`, `chdir(2)`, `close_range(2)`, `fcntl(F_SETFD)`,
//!   `pthread_sigmask(3)` and `execve(2)`; and the descriptor hook
//!   ([`install_child_descriptor_hook`]: `close_range(2)` and
//!   `fcntl(F_SETFD)` in the forked child of a `std::process::Command`);
//! - `process`: `waitid(P_PIDFD)` and `pidfd_send_signal(2)` (reaping and
//!   killing a launch), `pidfd_open(2)` and its fdinfo (the sandbox's pid 1,
//!   [`crate::sandbox_init`]), `getuid(2)` and the effective
//!   capabilities (`CapEff:`);
//! - `devnode`: `mkdirat(2)`, `mknodat(2)`, `fchownat(2)`, `fchmodat(2)`,
//!   `fstatat(2)`, `unlinkat(2)` (private device nodes), `flock(2)` and
//!   `fstat(2)` (the lock a device directory's owner holds,
//!   [`crate::devices`]);
//! - `statfs`: `fstatfs(2)` and `fstatvfs(3)` (the cgroup-v2 boundary,
//!   `nodev` and `nosuid` mounts);
//! - `dirfd`: `openat(2)`, `fstatat(2)`, `mkdirat(2)` and `unlinkat(2)` of
//!   one component relative to a directory descriptor (the cgroup-v2
//!   boundary);
//! - `poll`: `pipe2(2)`, `eventfd(2)` and `poll(2)` (a session waiting for
//!   the worker's first answer, a reader released by a stop).
//!
//! - `notify`: seccomp user notifications of a learning run (`splashc
//!   learn`): receiving, validating and answering them, and the listener's
//!   hand-over from the runner.
//!
//! - `identity`: the worker identity switch of the launch child and the
//!   calling task's ids.
//!
//! - `reactor` (the `tokio` feature): registering a descriptor with the
//!   runtime's reactor, `ioctl(FIONBIO)`, and `read(2)`/`write(2)` on the
//!   non-blocking pipes of an [`crate::AsyncSession`].
//!
//! Only `quota`, `launch`, `identity`, `notify` and `reactor` hold `unsafe`, each block with a
//! `SAFETY` note.

mod devnode;
mod dirfd;
mod identity;
mod launch;
mod memfd;
pub(crate) mod notify;
mod pin;
mod poll;
mod process;
mod quota;
#[cfg(feature = "tokio")]
mod reactor;
mod statfs;

pub use devnode::*;
pub use dirfd::*;
pub use identity::*;
pub use launch::*;
pub use memfd::*;
pub use pin::*;
pub use poll::*;
pub use process::*;
pub use quota::*;
#[cfg(feature = "tokio")]
pub use reactor::*;
pub use statfs::*;
