//! The reviewed escape-surface table shared by both profiles.
//!
//! [`DENIED`] lists the syscalls that always return `EPERM`; `clone3` always
//! returns `ENOSYS`; legacy `clone` and `ioctl` are guarded on an argument
//! (see [`CLONE_NAMESPACE_FLAGS`] and [`DENIED_IOCTLS`]). [`ALLOWED_REVIEWED`]
//! records the members of the same classes that were reviewed and left
//! allowed, with the reason. `docs/seccomp.md` publishes both tables; a test
//! keeps the document in step with them.

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
    /// Why it is denied.
    pub reason: &'static str,
}

const fn r(name: &'static str, class: Class, reason: &'static str) -> Reviewed {
    Reviewed {
        name,
        class,
        reason,
    }
}

/// Syscalls that return `EPERM` unconditionally under both profiles, in table
/// order. A name absent on an architecture is skipped for that architecture.
pub static DENIED: &[Reviewed] = &[
    r("mount", Class::Mount, "legacy mount API"),
    r("umount2", Class::Mount, "legacy mount API"),
    r("pivot_root", Class::Mount, "changes the root mount"),
    r("open_tree", Class::Mount, "new mount API"),
    r("open_tree_attr", Class::Mount, "new mount API"),
    r("move_mount", Class::Mount, "new mount API"),
    r("fsopen", Class::Mount, "new mount API"),
    r("fsconfig", Class::Mount, "new mount API"),
    r("fsmount", Class::Mount, "new mount API"),
    r("fspick", Class::Mount, "new mount API"),
    r("mount_setattr", Class::Mount, "new mount API"),
    r(
        "listmount",
        Class::Mount,
        "can address other mount namespaces by id; `/proc/self/mountinfo` covers the sandbox's own mounts",
    ),
    r(
        "statmount",
        Class::Mount,
        "can address other mount namespaces by id; `/proc/self/mountinfo` covers the sandbox's own mounts",
    ),
    r(
        "name_to_handle_at",
        Class::FilesystemHandle,
        "filesystem-handle API",
    ),
    r(
        "open_by_handle_at",
        Class::FilesystemHandle,
        "opens files by handle, bypassing path-based confinement",
    ),
    r("unshare", Class::Namespace, "creates namespaces"),
    r("setns", Class::Namespace, "enters namespaces"),
    r("bpf", Class::KernelInterface, "eBPF programs and maps"),
    r(
        "perf_event_open",
        Class::KernelInterface,
        "performance events",
    ),
    r(
        "userfaultfd",
        Class::KernelInterface,
        "page-fault handling used to widen kernel races",
    ),
    r(
        "io_uring_setup",
        Class::IoUring,
        "io_uring bypasses per-syscall filtering",
    ),
    r(
        "io_uring_enter",
        Class::IoUring,
        "io_uring bypasses per-syscall filtering",
    ),
    r(
        "io_uring_register",
        Class::IoUring,
        "io_uring bypasses per-syscall filtering",
    ),
    r("init_module", Class::Module, "module loading"),
    r("finit_module", Class::Module, "module loading"),
    r("delete_module", Class::Module, "module unloading"),
    r("kexec_load", Class::KernelControl, "loads a new kernel"),
    r(
        "kexec_file_load",
        Class::KernelControl,
        "loads a new kernel",
    ),
    r("reboot", Class::KernelControl, "reboots the machine"),
    r("ptrace", Class::Tracing, "tracing other processes"),
    r(
        "process_vm_readv",
        Class::CrossProcessMemory,
        "reads another process's memory",
    ),
    r(
        "process_vm_writev",
        Class::CrossProcessMemory,
        "writes another process's memory",
    ),
    r(
        "pidfd_getfd",
        Class::CrossProcessMemory,
        "copies a descriptor out of another process",
    ),
    r(
        "process_madvise",
        Class::CrossProcessMemory,
        "advises on another process's memory",
    ),
    r(
        "kcmp",
        Class::CrossProcessMemory,
        "compares kernel objects of other processes and orders kernel pointers",
    ),
    r("add_key", Class::Keyring, "kernel keyring"),
    r("request_key", Class::Keyring, "kernel keyring"),
    r("keyctl", Class::Keyring, "kernel keyring"),
    r(
        "personality",
        Class::Personality,
        "can disable address-space randomisation for later execs",
    ),
    r(
        "quotactl",
        Class::HostAdmin,
        "filesystem quota administration",
    ),
    r(
        "quotactl_fd",
        Class::HostAdmin,
        "filesystem quota administration",
    ),
    r("swapon", Class::HostAdmin, "swap administration"),
    r("swapoff", Class::HostAdmin, "swap administration"),
    r(
        "acct",
        Class::HostAdmin,
        "process accounting administration",
    ),
    r(
        "syslog",
        Class::HostAdmin,
        "kernel log, which can leak kernel addresses",
    ),
    r(
        "vhangup",
        Class::HostAdmin,
        "hangs up the controlling terminal",
    ),
    r(
        "lookup_dcookie",
        Class::HostAdmin,
        "profiling interface (removed in Linux 6.8)",
    ),
    r("uselib", Class::HostAdmin, "legacy library loader"),
    r("iopl", Class::Hardware, "raw I/O port access"),
    r("ioperm", Class::Hardware, "raw I/O port access"),
    r(
        "modify_ldt",
        Class::Hardware,
        "segment descriptors, a history of kernel bugs and only needed for 16-bit code",
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

/// Whether a strict allowlist may name the guarded syscall `d`.
///
/// A strict list never names a call that changes mounts, controls the
/// kernel (module loading, kexec, reboot), traces, reads or writes another
/// process's memory or descriptors, uses a keyring, or changes the
/// personality. The other guarded calls (read-only mount queries, `kcmp`,
/// filesystem handles, namespaces, kernel interfaces, io_uring, host
/// administration, hardware access) may be listed by a host that needs them:
/// listing one allows it, and the checker warns.
pub fn strict_listable(d: &Reviewed) -> bool {
    match d.class {
        Class::Mount => matches!(d.name, "listmount" | "statmount"),
        Class::CrossProcessMemory => d.name == "kcmp",
        Class::KernelControl
        | Class::Module
        | Class::Tracing
        | Class::Keyring
        | Class::Personality => false,
        Class::FilesystemHandle
        | Class::Namespace
        | Class::KernelInterface
        | Class::IoUring
        | Class::HostAdmin
        | Class::Hardware => true,
    }
}

/// `MFD_NOEXEC_SEAL` (Linux 6.3): the memfd is created without execute
/// permission and sealed so it can never gain it.
pub const MFD_NOEXEC_SEAL: u32 = 0x0008;

/// `ioctl` requests that return `EPERM`. Compared against the low 32 bits of
/// argument 1: the kernel declares the request `unsigned int`, so the high
/// half is ignored by the kernel and must be ignored by the filter too (a
/// request with junk high bits is still `TIOCSTI`).
pub static DENIED_IOCTLS: &[(&str, u32)] = &[("TIOCSTI", TIOCSTI), ("TIOCLINUX", TIOCLINUX)];
