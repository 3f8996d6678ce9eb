//! The syntax tree of a `.splashpol` file, as written (before checking).
//!
//! [`crate::parse::parse`] builds it; the checker ([`crate::check_source`])
//! turns it into a [`crate::model::Policy`]. The tree records what the file
//! *says*, not whether it is allowed: paths are unvalidated strings, ids are
//! not yet tokens, numbers are text and units are words, so the checker can
//! explain exactly what is wrong with each one (a relative path, a fraction,
//! `MB` for `MiB`, `unlimited`). Nothing here has been range-checked.
//!
//! Every node carries its [`Span`] (usually through [`Node`]); spans do not
//! take part in equality, so two trees parsed from differently laid-out
//! sources compare equal when they say the same thing.
//!
//! Strings ([`Node<String>`]) hold the text between the quotes with the
//! escapes `\"` and `\\` already resolved; their span covers the quotes.
//! A string the parser accepted can still contain a control or bidirectional
//! formatting character: the parser reports those separately
//! (`splash::parse::control-character`) but keeps the tree.
//!
//! Fields named `parsed` ([`Parsed`]) record whether some entry of a block
//! did not parse (and was already reported); the checker then does not also
//! report the block as empty or incomplete, since the missing entry may be
//! the one that failed.

pub use crate::span::{Node, Span};

/// A parsed file: the optional version header and the one policy it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The `splashpol N` header, if present (the number as written). The
    /// grammar accepts a file without it so that the checker can report
    /// `splash::parse::missing-version` alongside every other problem; any
    /// number other than `1` is `splash::parse::unsupported-version`.
    pub version: Option<Node<NumberLit>>,
    /// The file's `policy "NAME" { ... }` block; a file holds exactly one.
    pub policy: PolicyDecl,
}

/// `policy "NAME" { ... }`: the policy's name and its statements.
///
/// Equality compares the name and the statements, not [`PolicyDecl::header`].
#[derive(Debug, Clone)]
pub struct PolicyDecl {
    /// The policy's name: free text used in reports (it becomes
    /// [`crate::model::Policy::name`] unchanged).
    pub name: Node<String>,
    /// Span of `policy "NAME"`, where errors about the policy as a whole
    /// point (such as `splash::check::missing-statement` for a missing
    /// `bubblewrap` or `worker`).
    pub header: Span,
    /// The statements that parsed, in source order. A statement that did not
    /// parse was reported and is absent here, so duplicates and order are
    /// judged by the checker over what remains.
    pub statements: Vec<Stmt>,
}

impl PartialEq for PolicyDecl {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.statements == other.statements
    }
}

impl Eq for PolicyDecl {}

/// One statement with the span of the whole statement and of its keyword.
///
/// Equality compares [`Stmt::kind`] only.
#[derive(Debug, Clone)]
pub struct Stmt {
    /// What the statement says.
    pub kind: Statement,
    /// The whole statement, from its keyword to its last token (a block
    /// statement ends at its closing `}`).
    pub span: Span,
    /// The statement's first keyword (`root`, `limits`, ...), where
    /// statement-level diagnostics such as `splash::check::duplicate-statement`
    /// point.
    pub keyword: Span,
}

impl PartialEq for Stmt {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

impl Eq for Stmt {}

/// Whether every entry of a block (or word of a list) parsed.
///
/// An entry that did not parse is already reported by the parser and
/// dropped; the checker then stays silent about what the block lacks (an
/// empty block, a missing `execve`), since the dropped entry may have been
/// meant to supply it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// Every entry parsed.
    Clean,
    /// Some entry did not parse (already reported).
    Recovered,
}

/// A number as written: decimal digits with optional single `_` separators
/// between digits and, possibly, a `.` fraction (which the checker rejects:
/// numbers in the language are unsigned integers).
///
/// The grammar guarantees the shape, not the range: the text may stand for a
/// value of any size. [`crate::units::integer`] turns it into a `u64` or a
/// diagnostic (fraction, overflow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberLit(
    /// The source text of the number, exactly as written (separators and
    /// fraction included).
    pub String,
);

/// A value: a number with an optional unit word, or `unlimited`.
///
/// The parser accepts any unit word after any number; whether the unit fits
/// the setting (a byte size, a duration, a rate, a bare count) is decided by
/// [`crate::units::quantity`] and [`crate::units::scalar`] against the
/// setting's [`crate::units::Dimension`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quantity {
    /// The word `unlimited`. It is always rejected by the checker, which
    /// explains that every limit must be finite; it is in the grammar only
    /// so that the error can say so instead of "expected a number".
    Unlimited,
    /// A number with an optional unit, such as `64 MiB`, `30 s`, `2 MiB/s`
    /// or `64`. The space between them is optional (`64MiB`).
    Value {
        /// The number as written.
        number: Node<NumberLit>,
        /// The unit word as written (case-sensitive, possibly with a `/`
        /// such as `MiB/s`), or `None` for a bare number.
        unit: Option<Node<String>>,
    },
}

/// What one statement of a policy says, field by field as written.
///
/// Each variant is one statement of `docs/language.md`. Paths are the raw
/// string contents (the checker requires them to be absolute and normalized,
/// and decides whether each is a host path or a sandbox path); ids are raw
/// strings (the checker requires the token rule). Only `runtime` and `root`
/// may appear more than once in a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `bubblewrap HOSTPATH` (required): the Bubblewrap executable.
    Bubblewrap {
        /// Host path of the Bubblewrap executable, as written.
        path: Node<String>,
    },
    /// `worker SANDBOXPATH [args [STRING, ...]]` (required): the fixed worker
    /// program and its fixed arguments.
    Worker {
        /// Worker-visible path of the program, as written; the checker
        /// requires it to lie inside a `runtime` destination.
        path: Node<String>,
        /// The `args [...]` list, if written, with the span of the brackets.
        /// `args []` parses, and the checker rejects it (omit `args`).
        args: Option<Node<Vec<Node<String>>>>,
    },
    /// `runtime HOSTPATH at SANDBOXPATH` (repeatable): a read-only runtime
    /// mount, checked into a [`crate::model::RuntimeMount`].
    Runtime {
        /// Host path of the mounted file or directory, as written.
        source: Node<String>,
        /// Worker-visible destination, as written; part of the mount layout.
        destination: Node<String>,
    },
    /// `root ID host HOSTPATH at SANDBOXPATH ACCESS [quota ...]` or
    /// `root ID tmpfs at SANDBOXPATH size SIZE` (repeatable): a file root the
    /// manifest can select, checked into a [`crate::model::FileRoot`].
    Root {
        /// The selector id, as written; host and tmpfs roots share one id
        /// namespace.
        id: Node<String>,
        /// Worker-visible destination (the path after `at`), as written.
        destination: Node<String>,
        /// Host-backed or tmpfs, with what each kind adds.
        kind: RootKind,
    },
    /// `tmp off` / `tmp private [size SIZE]`: the private `/tmp`.
    Tmp(Tmp),
    /// `writes bounded`: `require_bounded_file_root_writes`.
    WritesBounded,
    /// `host-writes unbounded`: `allow_unbounded_host_file_root_writes`, the
    /// weaker escape hatch for read-write host roots without a quota.
    HostWritesUnbounded,
    /// `user-namespaces none`: `require_no_further_user_namespaces`.
    UserNamespacesNone,
    /// `pin mounts[, executables]`: descriptor-pinned mount sources and,
    /// optionally, executables.
    Pin {
        /// The items as written, in order, never empty (the grammar requires
        /// one). Repeats and `executables` without `mounts` parse; the
        /// checker rejects them.
        items: Vec<Node<PinItem>>,
    },
    /// `quota aggregate bytes SIZE inodes COUNT`:
    /// `set_maximum_aggregate_linux_project_quota`.
    QuotaAggregate {
        /// Ceiling on the summed hard byte limits of the quota roots.
        bytes: Node<Quantity>,
        /// Ceiling on the summed hard inode limits of the quota roots.
        inodes: Node<Quantity>,
    },
    /// `tmpfs aggregate SIZE`: `set_maximum_aggregate_ephemeral_tmpfs_bytes`.
    TmpfsAggregate {
        /// Ceiling on the summed sizes of the tmpfs roots and a bounded
        /// private `/tmp`.
        size: Node<Quantity>,
    },
    /// `active-roots max COUNT`: `set_maximum_active_file_roots`.
    ActiveRoots {
        /// The bound as written; the checker allows 0 to
        /// [`crate::model::MAX_ACTIVE_FILE_ROOTS_CEILING`].
        max: Node<Quantity>,
    },
    /// `seccomp off | deny-known-escape-surface | strict-allowlist { ... }`:
    /// the seccomp profile.
    Seccomp(Seccomp),
    /// `limits [runner SANDBOXPATH] [required] { ENTRY... }`: the rlimit
    /// runner (`ResourceLimitRunner`).
    Limits {
        /// The block's own `runner` path, as written; `None` when the block
        /// names none (it then needs `runner combined`).
        runner: Option<Node<String>>,
        /// The `required` keyword (`require_resource_limit_runner`), with its
        /// span, if written.
        required: Option<Node<()>>,
        /// The entries that parsed, in source order; repeats are judged by
        /// the checker.
        entries: Vec<Node<LimitEntry>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
    /// `landlock [runner SANDBOXPATH] [{ allow-exec SANDBOXPATH ... }]`: the
    /// Landlock executable runner (`LandlockExecutableRunner`).
    Landlock {
        /// The statement's own `runner` path, as written; `None` when it names
        /// none (it then needs `runner combined`).
        runner: Option<Node<String>>,
        /// The `allow-exec` targets that parsed, in source order (empty when
        /// the block is absent or empty).
        allow_exec: Vec<Node<String>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
    /// `runner combined SANDBOXPATH`: one-hop mode, one runner that applies
    /// the `limits` and `landlock` settings and a strict seccomp filter.
    CombinedRunner {
        /// Worker-visible path of the combined runner, as written.
        path: Node<String>,
    },
    /// `cgroup parent HOSTPATH runner HOSTPATH [required] { ENTRY... }`: the
    /// cgroup-v2 boundary (`CgroupV2Policy`).
    Cgroup {
        /// Host path of the delegated cgroup-v2 parent directory, as written.
        parent: Node<String>,
        /// Host path of the cgroup runner, as written (never mounted).
        runner: Node<String>,
        /// The `required` keyword (`require_cgroup_v2`), with its span, if
        /// written.
        required: Option<Node<()>>,
        /// The entries that parsed, in source order; repeats are judged by
        /// the checker.
        entries: Vec<Node<CgroupEntry>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
    /// `watchdog session DURATION [call DURATION]`: host wall-clock
    /// deadlines.
    Watchdog {
        /// The deadline for the whole worker lifetime.
        session: Node<Quantity>,
        /// The per-invocation deadline, if written.
        call: Option<Node<Quantity>>,
    },
    /// `network-broker CATALOG parent HOSTPATH at SANDBOXPATH ids [ID, ...]`:
    /// the brokered network-origin mount (`LinuxNetworkBrokerMount`).
    NetworkBroker {
        /// `endpoint` or `origin`.
        catalog: Node<Catalog>,
        /// Host path of the existing host-owned parent of the broker's
        /// private directory, as written.
        parent: Node<String>,
        /// Worker-visible read-only destination, as written; part of the
        /// mount layout.
        destination: Node<String>,
        /// The network-origin ids served, as written, with the span of the
        /// list; emptiness and duplicates are judged by the checker.
        ids: Node<Vec<Node<String>>>,
    },
    /// `expect { ENTRY... }`: what the author relies on, checked from inside
    /// the sandbox by `splashc test`; it has no effect on the sandbox.
    Expect {
        /// The entries that parsed, in source order.
        entries: Vec<Node<ExpectEntry>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
    /// `identity user UID group GID` / `identity dynamic`: the host identity
    /// the worker runs as.
    Identity(Identity),
}

/// The `identity` statement as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// `identity user UID group GID`: one fixed host uid and gid.
    Fixed {
        /// The uid as written; the checker requires 1 to 4294967294.
        user: Node<NumberLit>,
        /// The gid as written; the checker requires 1 to 4294967294.
        group: Node<NumberLit>,
    },
    /// `identity dynamic`: a fresh uid and gid leased for each session.
    Dynamic,
}

impl Statement {
    /// The statement's first keyword, as written in the source (`writes` for
    /// `writes bounded`, `runner` for `runner combined`). The checker uses it
    /// to find duplicate statements and to name them in diagnostics; it is
    /// always one of [`crate::parse::STATEMENT_KEYWORDS`].
    pub fn keyword(&self) -> &'static str {
        match self {
            Statement::Bubblewrap { .. } => "bubblewrap",
            Statement::Worker { .. } => "worker",
            Statement::Runtime { .. } => "runtime",
            Statement::Root { .. } => "root",
            Statement::Tmp(_) => "tmp",
            Statement::WritesBounded => "writes",
            Statement::HostWritesUnbounded => "host-writes",
            Statement::UserNamespacesNone => "user-namespaces",
            Statement::Pin { .. } => "pin",
            Statement::QuotaAggregate { .. } => "quota",
            Statement::TmpfsAggregate { .. } => "tmpfs",
            Statement::ActiveRoots { .. } => "active-roots",
            Statement::Seccomp(_) => "seccomp",
            Statement::Limits { .. } => "limits",
            Statement::Landlock { .. } => "landlock",
            Statement::CombinedRunner { .. } => "runner",
            Statement::Cgroup { .. } => "cgroup",
            Statement::Watchdog { .. } => "watchdog",
            Statement::NetworkBroker { .. } => "network-broker",
            Statement::Expect { .. } => "expect",
            Statement::Identity(_) => "identity",
        }
    }
}

/// The two kinds of `root`: a bind of a host directory or an empty tmpfs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::large_enum_variant,
    reason = "a handful of AST nodes per policy; boxing buys nothing"
)]
pub enum RootKind {
    /// `host HOSTPATH at SANDBOXPATH ACCESS [quota ...]`: a host-backed root.
    Host {
        /// Host path of the bound directory, as written.
        source: Node<String>,
        /// `read-only` or `read-write`.
        access: Node<AccessDecl>,
        /// The `quota project ...` clause, if written (the checker accepts it
        /// only on a `read-write` root).
        quota: Option<Node<Quota>>,
    },
    /// `tmpfs at SANDBOXPATH size SIZE`: an ephemeral root, empty at launch
    /// and gone with the session.
    Tmpfs {
        /// The tmpfs `--size` as written; the checker allows 1 B to 2^63 - 1
        /// bytes ([`crate::model::MAX_TMPFS_BYTES`]).
        size: Node<Quantity>,
    },
}

/// How a host-backed root is bound: the keyword after its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessDecl {
    /// `read-only`: bound read-only (`--ro-bind`).
    ReadOnly,
    /// `read-write`: bound writable (`--bind`); accepted by the checker only
    /// with a `quota` clause or under `host-writes unbounded`.
    ReadWrite,
}

/// `quota project N bytes SIZE inodes COUNT` on a host root: a Linux project
/// quota the runtime verifies at bind (checked into a
/// [`crate::model::ProjectQuota`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    /// The host-provisioned project id as written; the checker requires a
    /// nonzero 32-bit value.
    pub project: Node<NumberLit>,
    /// The largest hard byte limit the runtime accepts for the project.
    pub bytes: Node<Quantity>,
    /// The largest hard inode limit the runtime accepts for the project.
    pub inodes: Node<Quantity>,
}

/// The `tmp` statement: whether the worker gets a private `/tmp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tmp {
    /// `tmp off`: no private `/tmp` (the default when there is no `tmp`
    /// statement).
    Off,
    /// `tmp private [size SIZE]`: a private tmpfs at `/tmp`, which becomes a
    /// reserved destination.
    Private {
        /// The `size` bound as written, or `None` for an unbounded tmpfs.
        size: Option<Node<Quantity>>,
    },
}

/// One item of a `pin` statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinItem {
    /// `mounts`: `MountSourceBinding::DescriptorPinned`, mount sources bound
    /// through descriptors the runtime opened at bind.
    Mounts,
    /// `executables`: `ExecutableSourceBinding::DescriptorPinned`, the
    /// launch chain's executables run from pinned descriptors; requires
    /// `mounts`.
    Executables,
}

/// The `seccomp` statement: which profile filters the worker's syscalls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seccomp {
    /// `seccomp off`: no profile (the default). A `landlock` block still adds
    /// its `memfd_create` guard.
    Off,
    /// `seccomp deny-known-escape-surface`: the fixed default-allow
    /// compatibility profile.
    DenyKnownEscapeSurface,
    /// `seccomp strict-allowlist { NAME... }`: default-kill, allowing only the
    /// listed syscalls once the fixed escape-surface guards have answered.
    StrictAllowlist {
        /// The names that have the shape of a syscall name (ASCII letters,
        /// digits and `_`), in source order; whether each exists, and
        /// duplicates, are judged by the checker.
        syscalls: Vec<Node<String>>,
        /// Whether every word of the list is a syscall name
        /// ([`Parsed::Recovered`] after a `splash::parse::invalid-syscall-name`
        /// error).
        parsed: Parsed,
    },
}

/// The rlimit an entry of a `limits` block sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// `cpu DURATION`: `RLIMIT_CPU`, cumulative CPU time in whole seconds.
    Cpu,
    /// `address-space SIZE`: `RLIMIT_AS`, virtual address space in bytes.
    AddressSpace,
    /// `processes COUNT`: `RLIMIT_NPROC`.
    Processes,
    /// `open-files COUNT`: `RLIMIT_NOFILE`.
    OpenFiles,
    /// `file-size SIZE`: `RLIMIT_FSIZE`, the size of one created file in
    /// bytes.
    FileSize,
}

impl LimitKind {
    /// The entry's keyword as written (one of
    /// [`crate::parse::LIMIT_KEYWORDS`]), for diagnostics.
    pub fn keyword(self) -> &'static str {
        match self {
            LimitKind::Cpu => "cpu",
            LimitKind::AddressSpace => "address-space",
            LimitKind::Processes => "processes",
            LimitKind::OpenFiles => "open-files",
            LimitKind::FileSize => "file-size",
        }
    }
}

/// One entry of a `limits { ... }` block, such as `cpu 30 s`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitEntry {
    /// Which rlimit, with the span of its keyword.
    pub kind: Node<LimitKind>,
    /// The value as written; the checker requires the unit that fits `kind`
    /// and a finite nonzero value.
    pub value: Node<Quantity>,
}

/// The setting a single-value entry of a `cgroup` block sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupKind {
    /// `cpu DURATION`: the `cpu.max` quota per fixed 100 ms period, at
    /// least 1 ms.
    Cpu,
    /// `memory SIZE`: `memory.max`.
    Memory,
    /// `swap SIZE`: `memory.swap.max` (`0 B` forbids swap).
    Swap,
    /// `pids COUNT`: `pids.max`.
    Pids,
    /// `join-timeout DURATION`: how long the runtime waits for the cgroup
    /// runner to confirm it joined the fresh cgroup (default 5 s). Not a
    /// controller limit.
    JoinTimeout,
}

impl CgroupKind {
    /// The entry's keyword as written (one of
    /// [`crate::parse::CGROUP_KEYWORDS`]), for diagnostics.
    pub fn keyword(self) -> &'static str {
        match self {
            CgroupKind::Cpu => "cpu",
            CgroupKind::Memory => "memory",
            CgroupKind::Swap => "swap",
            CgroupKind::Pids => "pids",
            CgroupKind::JoinTimeout => "join-timeout",
        }
    }
}

/// One entry of a `cgroup { ... }` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupEntry {
    /// A single-value entry such as `memory 512 MiB`.
    Value {
        /// Which setting, with the span of its keyword.
        kind: Node<CgroupKind>,
        /// The value as written; the checker requires the unit that fits
        /// `kind`.
        value: Node<Quantity>,
    },
    /// `io MAJOR:MINOR { read RATE; write RATE }`: `io.max` for one block
    /// device.
    Io {
        /// The device's major number as written (digits only: the grammar's
        /// `device` rule admits no fraction), spanning just those digits.
        major: Node<NumberLit>,
        /// The device's minor number as written, spanning just those digits.
        minor: Node<NumberLit>,
        /// The `read` / `write` entries that parsed, in source order.
        limits: Vec<Node<IoLimit>>,
        /// Whether every entry of the `io` block parsed.
        parsed: Parsed,
    },
}

/// Which side of `io.max` an `io` entry limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoDirection {
    /// `read`: `rbps` with a byte rate, `riops` with `iops`.
    Read,
    /// `write`: `wbps` with a byte rate, `wiops` with `iops`.
    Write,
}

/// One entry of an `io` block, such as `read 2 MiB/s` or `write 120 iops`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoLimit {
    /// `read` or `write`, with the span of the keyword.
    pub direction: Node<IoDirection>,
    /// The rate as written; its unit (bytes per second or `iops`) selects
    /// which of the two `io.max` keys for `direction` it sets.
    pub value: Node<Quantity>,
}

/// The catalog kind a `network-broker` serves (checked into a
/// [`crate::model::BrokerCatalog`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catalog {
    /// `endpoint`: a reviewed HTTP endpoint catalog (`HttpEndpointCatalog`).
    Endpoint,
    /// `origin`: a reviewed exact-origin catalog (`HttpOriginCatalog`).
    Origin,
}

/// Whether an `exec` expectation says the program runs or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecVerdict {
    /// `exec denied PATH`: executing it fails.
    Denied,
    /// `exec allowed PATH`: executing it starts the program.
    Allowed,
}

/// One entry of an `expect { ... }` block, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectEntry {
    /// `read-only SANDBOXPATH`: visible, and every write fails.
    ReadOnly {
        /// The worker-visible path, as written.
        path: Node<String>,
    },
    /// `writable SANDBOXPATH [max SIZE]`: writes succeed (and stop at about
    /// `SIZE`).
    Writable {
        /// The worker-visible directory, as written.
        path: Node<String>,
        /// The bound after `max`, as written.
        max: Option<Node<Quantity>>,
    },
    /// `hidden SANDBOXPATH`: not visible.
    Hidden {
        /// The worker-visible path, as written.
        path: Node<String>,
    },
    /// `exec denied|allowed SANDBOXPATH`.
    Exec {
        /// `denied` or `allowed`, with the span of the word.
        verdict: Node<ExecVerdict>,
        /// The worker-visible program, as written.
        path: Node<String>,
    },
    /// `syscall denied NAME...`: each call fails with `EPERM` or `ENOSYS`,
    /// or is killed with `SIGSYS`.
    SyscallDenied {
        /// The names as written, in source order (never empty).
        names: Vec<Node<String>>,
    },
    /// `network none`: no interface but loopback, no route out.
    NetworkNone,
    /// `processes max COUNT`: at most this many processes at once.
    ProcessesMax {
        /// The bound as written.
        max: Node<Quantity>,
    },
    /// `user-namespaces none`: no further user namespace can be made.
    UserNamespacesNone,
}
