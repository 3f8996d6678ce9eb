//! The reviewed escape-surface table shared by both profiles.
//!
//! [`DENIED`] lists the syscalls that always return `EPERM`, each marked as a
//! member of the specification's fixed deny set or as one of our reviewed
//! additions ([`Origin`]); `clone3` always returns `ENOSYS`; legacy `clone`
//! and `ioctl` are guarded on an argument (see [`CLONE_NAMESPACE_FLAGS`] and
//! [`DENIED_IOCTLS`]). Both profiles test all of these before anything else
//! but the architecture and x32 checks; a strict allowlist can lift only a
//! reviewed addition, by naming it. [`ALLOWED_REVIEWED`] records the members
//! of the same classes that were reviewed and left allowed, with the reason.
//! `docs/seccomp.md` publishes both tables; a test keeps the document in step
//! with them.

/// A class of escape surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Mounting and changing the mount tree.
    Mount,
    /// Opening files by handle, outside the mount tree.
    FilesystemHandle,
    /// Creating or entering namespaces.
    Namespace,
    /// Kernel interfaces with a history of escapes (bpf, perf events, userfaultfd, fanotify).
    KernelInterface,
    /// The io_uring interface, which bypasses syscall filtering.
    IoUring,
    /// Loading kernel modules.
    Module,
    /// Controlling the running kernel (kexec, reboot).
    KernelControl,
    /// Tracing other processes.
    Tracing,
    /// Reading or writing another process's memory.
    CrossProcessMemory,
    /// The kernel keyring.
    Keyring,
    /// Changing the execution domain.
    Personality,
    /// Host administration (quotas, swap, accounting, clock, hostname).
    HostAdmin,
    /// Direct hardware and segment access (I/O ports, LDT).
    Hardware,
}

impl Class {
    /// The class's name in the reviewed table.
    pub fn name(self) -> &'static str {
        match self {
            Class::Mount => "mount",
            Class::FilesystemHandle => "filesystem handle",
            Class::Namespace => "namespace",
            Class::KernelInterface => "kernel interface",
            Class::IoUring => "io_uring",
            Class::Module => "module loading",
            Class::KernelControl => "kernel control",
            Class::Tracing => "tracing",
            Class::CrossProcessMemory => "cross-process access",
            Class::Keyring => "keyring",
            Class::Personality => "personality",
            Class::HostAdmin => "host administration",
            Class::Hardware => "hardware access",
        }
    }
}

/// One reviewed syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reviewed {
    /// The syscall's name.
    pub name: &'static str,
    /// The escape surface it belongs to.
    pub class: Class,
    /// Why it is denied (or, in [`ALLOWED_REVIEWED`], why it is not).
    pub reason: &'static str,
}

const fn r(name: &'static str, class: Class, reason: &'static str) -> Reviewed {
    Reviewed {
        name,
        class,
        reason,
    }
}

/// Where the denial of a [`DENIED`] syscall comes from, which decides what a
/// strict allowlist may do with it. Both kinds are tested before the
/// allowlist, so an unlisted one answers `EPERM` under both profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// In the specification's fixed deny set (legacy and modern mount APIs,
    /// filesystem handles, `unshare`/`setns`, `bpf`, `perf_event_open`,
    /// `userfaultfd`, io_uring, module loading, kexec, reboot, tracing,
    /// cross-process memory access, keyrings, `personality`). The strict
    /// filter applies it before the allowlist, so listing it could never
    /// allow it: a strict list that names it is refused
    /// ([`crate::StrictRejection::FixedGuard`]).
    Specification,
    /// A reviewed addition of this project beyond the specification's set.
    /// A strict list may name it: listing it lifts the guard (the checker
    /// warns), unlisted it answers `EPERM` like the specification's set.
    Addition {
        /// When a worker may legitimately need it, or why listing it gives
        /// up little.
        listing: &'static str,
    },
}

/// One syscall the fixed guards deny with `EPERM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Denied {
    /// The syscall's name.
    pub name: &'static str,
    /// The escape surface it belongs to.
    pub class: Class,
    /// Why it is denied.
    pub reason: &'static str,
    /// The specification's fixed set, or a reviewed addition.
    pub origin: Origin,
}

impl Denied {
    /// Whether a strict allowlist may name it (only a reviewed addition).
    pub fn strict_listable(&self) -> bool {
        matches!(self.origin, Origin::Addition { .. })
    }

    /// For a reviewed addition, when a worker may need it.
    pub fn listing(&self) -> Option<&'static str> {
        match self.origin {
            Origin::Specification => None,
            Origin::Addition { listing } => Some(listing),
        }
    }
}

/// A member of the specification's fixed deny set.
const fn spec(name: &'static str, class: Class, reason: &'static str) -> Denied {
    Denied {
        name,
        class,
        reason,
        origin: Origin::Specification,
    }
}

/// A reviewed addition, with when a strict list may name it.
const fn add(
    name: &'static str,
    class: Class,
    reason: &'static str,
    listing: &'static str,
) -> Denied {
    Denied {
        name,
        class,
        reason,
        origin: Origin::Addition { listing },
    }
}

const MOUNT_QUERY: &str = "can address other mount namespaces by id; `/proc/self/mountinfo` covers the sandbox's own mounts";
const MOUNT_QUERY_LISTING: &str =
    "a read-only query; mount-listing tools may use it instead of `/proc/self/mountinfo`";
const QUOTA_LISTING: &str = "reading the caller's own quota needs no privilege (`quota`); every change needs `CAP_SYS_ADMIN`";
const SWAP_LISTING: &str = "needs `CAP_SYS_ADMIN`, which the worker does not hold";
const RAW_IO_LISTING: &str = "needs `CAP_SYS_RAWIO`, which the worker does not hold";

/// Syscalls that return `EPERM` unconditionally under both profiles, in table
/// order: under the strict profile too they are tested before the allowlist.
/// [`Denied::origin`] separates the specification's fixed set from our
/// reviewed additions. A name absent on an architecture is skipped for that
/// architecture.
pub static DENIED: &[Denied] = &[
    spec("mount", Class::Mount, "legacy mount API"),
    spec("umount2", Class::Mount, "legacy mount API"),
    spec("pivot_root", Class::Mount, "changes the root mount"),
    spec("open_tree", Class::Mount, "new mount API"),
    spec(
        "open_tree_attr",
        Class::Mount,
        "new mount API (`open_tree` with `mount_setattr`'s attributes, Linux 6.15)",
    ),
    spec("move_mount", Class::Mount, "new mount API"),
    spec("fsopen", Class::Mount, "new mount API"),
    spec("fsconfig", Class::Mount, "new mount API"),
    spec("fsmount", Class::Mount, "new mount API"),
    spec("fspick", Class::Mount, "new mount API"),
    spec("mount_setattr", Class::Mount, "new mount API"),
    add("listmount", Class::Mount, MOUNT_QUERY, MOUNT_QUERY_LISTING),
    add("statmount", Class::Mount, MOUNT_QUERY, MOUNT_QUERY_LISTING),
    spec(
        "name_to_handle_at",
        Class::FilesystemHandle,
        "filesystem-handle API",
    ),
    spec(
        "open_by_handle_at",
        Class::FilesystemHandle,
        "opens files by handle, bypassing path-based confinement",
    ),
    spec("unshare", Class::Namespace, "creates namespaces"),
    spec("setns", Class::Namespace, "enters namespaces"),
    spec("bpf", Class::KernelInterface, "eBPF programs and maps"),
    spec(
        "perf_event_open",
        Class::KernelInterface,
        "performance events",
    ),
    spec(
        "userfaultfd",
        Class::KernelInterface,
        "page-fault handling used to widen kernel races",
    ),
    spec(
        "io_uring_setup",
        Class::IoUring,
        "io_uring bypasses per-syscall filtering",
    ),
    spec(
        "io_uring_enter",
        Class::IoUring,
        "io_uring bypasses per-syscall filtering",
    ),
    spec(
        "io_uring_register",
        Class::IoUring,
        "io_uring bypasses per-syscall filtering",
    ),
    spec("init_module", Class::Module, "module loading"),
    spec("finit_module", Class::Module, "module loading"),
    spec("delete_module", Class::Module, "module unloading"),
    spec("kexec_load", Class::KernelControl, "loads a new kernel"),
    spec(
        "kexec_file_load",
        Class::KernelControl,
        "loads a new kernel",
    ),
    spec("reboot", Class::KernelControl, "reboots the machine"),
    spec("ptrace", Class::Tracing, "tracing other processes"),
    spec(
        "process_vm_readv",
        Class::CrossProcessMemory,
        "reads another process's memory",
    ),
    spec(
        "process_vm_writev",
        Class::CrossProcessMemory,
        "writes another process's memory",
    ),
    add(
        "pidfd_getfd",
        Class::CrossProcessMemory,
        "copies a descriptor out of another process",
        "needs ptrace access to the target, which the sandbox's pid namespace limits to the worker's own processes; supervisors use it to take over a child's descriptors",
    ),
    add(
        "process_madvise",
        Class::CrossProcessMemory,
        "advises on another process's memory",
        "on another process it needs `CAP_SYS_NICE`, which the worker does not hold; on itself it is only memory advice",
    ),
    add(
        "kcmp",
        Class::CrossProcessMemory,
        "compares kernel objects of other processes and orders kernel pointers",
        "needs ptrace access to both processes; checkpoint/restore tools compare descriptors with it",
    ),
    spec("add_key", Class::Keyring, "kernel keyring"),
    spec("request_key", Class::Keyring, "kernel keyring"),
    spec("keyctl", Class::Keyring, "kernel keyring"),
    spec(
        "personality",
        Class::Personality,
        "can disable address-space randomisation for later execs",
    ),
    add(
        "quotactl",
        Class::HostAdmin,
        "filesystem quota administration",
        QUOTA_LISTING,
    ),
    add(
        "quotactl_fd",
        Class::HostAdmin,
        "filesystem quota administration",
        QUOTA_LISTING,
    ),
    add(
        "swapon",
        Class::HostAdmin,
        "swap administration",
        SWAP_LISTING,
    ),
    add(
        "swapoff",
        Class::HostAdmin,
        "swap administration",
        SWAP_LISTING,
    ),
    add(
        "acct",
        Class::HostAdmin,
        "process accounting administration",
        "needs `CAP_SYS_PACCT`, which the worker does not hold",
    ),
    add(
        "syslog",
        Class::HostAdmin,
        "kernel log, which can leak kernel addresses",
        "`dmesg` reads the kernel log with it; the kernel requires `CAP_SYSLOG` unless `kernel.dmesg_restrict` is 0",
    ),
    add(
        "vhangup",
        Class::HostAdmin,
        "hangs up the controlling terminal",
        "needs `CAP_SYS_TTY_CONFIG`, which the worker does not hold",
    ),
    add(
        "lookup_dcookie",
        Class::HostAdmin,
        "profiling interface (removed in Linux 6.8)",
        "needs `CAP_SYS_ADMIN`; kernels since 6.8 answer ENOSYS",
    ),
    add(
        "uselib",
        Class::HostAdmin,
        "legacy library loader",
        "only libc5-era loaders use it; most kernels are built without it (`CONFIG_USELIB`)",
    ),
    add(
        "iopl",
        Class::Hardware,
        "raw I/O port access",
        RAW_IO_LISTING,
    ),
    add(
        "ioperm",
        Class::Hardware,
        "raw I/O port access",
        RAW_IO_LISTING,
    ),
    add(
        "modify_ldt",
        Class::Hardware,
        "segment descriptors, a history of kernel bugs and only needed for 16-bit code",
        "16-bit and segmented code (Wine, DOSEMU) needs it",
    ),
];

/// Members of the same classes that were reviewed and stay allowed.
pub static ALLOWED_REVIEWED: &[Reviewed] = &[
    r(
        "fork",
        Class::Namespace,
        "takes no flags and cannot create namespaces (also `vfork`)",
    ),
    r(
        "process_mrelease",
        Class::CrossProcessMemory,
        "only reaps a process that is already being killed and that the caller may signal",
    ),
    r(
        "move_pages",
        Class::CrossProcessMemory,
        "on another process needs `CAP_SYS_NICE` and ptrace access; NUMA programs use it on themselves (also `migrate_pages`)",
    ),
    r(
        "pidfd_open",
        Class::CrossProcessMemory,
        "a handle for signalling, with the same rules as `kill` (also `pidfd_send_signal`)",
    ),
    r(
        "seccomp",
        Class::KernelInterface,
        "a process may only add filters, which can only tighten this one",
    ),
    r(
        "landlock_create_ruleset",
        Class::KernelInterface,
        "Landlock can only restrict the caller (also `landlock_add_rule`, `landlock_restrict_self`)",
    ),
    r(
        "fanotify_init",
        Class::KernelInterface,
        "unprivileged use is limited to the caller's own marks; the rest needs `CAP_SYS_ADMIN`",
    ),
    r(
        "chroot",
        Class::Mount,
        "needs `CAP_SYS_CHROOT`, which the worker does not hold (Bubblewrap drops every capability)",
    ),
    r(
        "settimeofday",
        Class::HostAdmin,
        "needs `CAP_SYS_TIME` in the initial user namespace, which the worker never holds (also `clock_settime`, `clock_adjtime`, `adjtimex`, whose read-only forms programs use)",
    ),
    r(
        "sethostname",
        Class::HostAdmin,
        "only changes the sandbox's own UTS namespace (also `setdomainname`)",
    ),
    r(
        "lsm_set_self_attr",
        Class::KernelInterface,
        "the security module itself decides what the caller may set",
    ),
    r(
        "memfd_secret",
        Class::CrossProcessMemory,
        "hides the caller's own memory, grants nothing",
    ),
];

/// The namespace-creation flags of legacy `clone`: `CLONE_NEWTIME` (0x80),
/// `CLONE_NEWNS`, `CLONE_NEWCGROUP`, `CLONE_NEWUTS`, `CLONE_NEWIPC`,
/// `CLONE_NEWUSER`, `CLONE_NEWPID`, `CLONE_NEWNET`.
///
/// All lie in the low 32 bits. The kernel's legacy `clone` uses only the low
/// 32 bits of its `unsigned long` flags (`lower_32_bits(clone_flags)`), so the
/// guard tests only the low half of argument 0; high bits cannot create a
/// namespace.
pub const CLONE_NAMESPACE_FLAGS: u32 = 0x0000_0080
    | 0x0002_0000
    | 0x0200_0000
    | 0x0400_0000
    | 0x0800_0000
    | 0x1000_0000
    | 0x2000_0000
    | 0x4000_0000;

/// `TIOCSTI`: push a byte into a terminal's input queue.
pub const TIOCSTI: u32 = 0x5412;
/// `TIOCLINUX`: virtual-console services, including selection paste, which
/// injects input like `TIOCSTI`.
pub const TIOCLINUX: u32 = 0x541c;

/// `MFD_NOEXEC_SEAL` (Linux 6.3): the memfd is created without execute
/// permission and sealed so it can never gain it.
pub const MFD_NOEXEC_SEAL: u32 = 0x0008;

/// `ioctl` requests that return `EPERM`. Compared against the low 32 bits of
/// argument 1: the kernel declares the request `unsigned int`, so the high
/// half is ignored by the kernel and must be ignored by the filter too (a
/// request with junk high bits is still `TIOCSTI`). `TIOCSTI` is the
/// specification's guard; `TIOCLINUX` is our addition to the same guard.
/// Listing `ioctl` in a strict list never lifts either.
pub static DENIED_IOCTLS: &[(&str, u32)] = &[("TIOCSTI", TIOCSTI), ("TIOCLINUX", TIOCLINUX)];
