//! The syntax tree of a `.splashpol` file, as written (before checking).
//!
//! Values stay close to the source text (numbers as text, units as words) so
//! the checker can explain exactly what is wrong with them. Every node carries
//! its [`Span`]; spans do not take part in equality.

pub use crate::span::{Node, Span};

/// A parsed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The `splashpol N` header, if present (the number as written).
    pub version: Option<Node<NumberLit>>,
    pub policy: Policy,
}

/// `policy "name" { ... }`.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: Node<String>,
    /// Span of `policy "name"`, where missing-statement errors point.
    pub header: Span,
    pub statements: Vec<Stmt>,
}

impl PartialEq for Policy {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.statements == other.statements
    }
}

impl Eq for Policy {}

/// One statement with the span of the whole statement and of its keyword.
#[derive(Debug, Clone)]
pub struct Stmt {
    pub kind: Statement,
    pub span: Span,
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

/// A number as written: digits with optional `_` separators and, possibly, a
/// fraction (which the checker rejects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberLit(pub String);

/// A value: a number with an optional unit word, or `unlimited`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Quantity {
    Unlimited,
    Value {
        number: Node<NumberLit>,
        unit: Option<Node<String>>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `bubblewrap PATH`
    Bubblewrap { path: Node<String> },
    /// `worker PATH [args [STR, ...]]`
    Worker {
        path: Node<String>,
        args: Option<Node<Vec<Node<String>>>>,
    },
    /// `runtime SOURCE at DEST`
    Runtime {
        source: Node<String>,
        destination: Node<String>,
    },
    /// `root ID host SOURCE at DEST ACCESS [quota ...]` or
    /// `root ID tmpfs at DEST size Q`
    Root {
        id: Node<String>,
        destination: Node<String>,
        kind: RootKind,
    },
    /// `tmp off` / `tmp private [size Q]`
    Tmp(Tmp),
    /// `writes bounded`
    WritesBounded,
    /// `host-writes unbounded`
    HostWritesUnbounded,
    /// `user-namespaces none`
    UserNamespacesNone,
    /// `pin mounts[, executables]`
    Pin { items: Vec<Node<PinItem>> },
    /// `quota aggregate bytes Q inodes Q`
    QuotaAggregate {
        bytes: Node<Quantity>,
        inodes: Node<Quantity>,
    },
    /// `tmpfs aggregate Q`
    TmpfsAggregate { size: Node<Quantity> },
    /// `active-roots max N`
    ActiveRoots { max: Node<Quantity> },
    /// `seccomp off | deny-known-escape-surface | strict-allowlist { ... }`
    Seccomp(Seccomp),
    /// `limits [runner PATH] [required] { ... }`
    Limits {
        runner: Option<Node<String>>,
        required: Option<Node<()>>,
        entries: Vec<Node<LimitEntry>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
    /// `landlock [runner PATH] [{ allow-exec PATH ... }]`
    Landlock {
        runner: Option<Node<String>>,
        allow_exec: Vec<Node<String>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
    /// `runner combined PATH`
    CombinedRunner { path: Node<String> },
    /// `cgroup parent PATH runner PATH [required] { ... }`
    Cgroup {
        parent: Node<String>,
        runner: Node<String>,
        required: Option<Node<()>>,
        entries: Vec<Node<CgroupEntry>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
    /// `watchdog session Q [call Q]`
    Watchdog {
        session: Node<Quantity>,
        call: Option<Node<Quantity>>,
    },
    /// `network-broker CATALOG parent PATH at DEST ids [ID, ...]`
    NetworkBroker {
        catalog: Node<Catalog>,
        parent: Node<String>,
        destination: Node<String>,
        ids: Node<Vec<Node<String>>>,
    },
}

impl Statement {
    /// The statement's keyword as written (for duplicate reports).
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
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::large_enum_variant,
    reason = "a handful of AST nodes per policy; boxing buys nothing"
)]
pub enum RootKind {
    Host {
        source: Node<String>,
        access: Node<Access>,
        quota: Option<Node<Quota>>,
    },
    Tmpfs {
        size: Node<Quantity>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// `quota project N bytes Q inodes Q` on a host root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    pub project: Node<NumberLit>,
    pub bytes: Node<Quantity>,
    pub inodes: Node<Quantity>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tmp {
    Off,
    Private { size: Option<Node<Quantity>> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinItem {
    Mounts,
    Executables,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seccomp {
    Off,
    DenyKnownEscapeSurface,
    StrictAllowlist {
        syscalls: Vec<Node<String>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    Cpu,
    AddressSpace,
    Processes,
    OpenFiles,
    FileSize,
}

impl LimitKind {
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitEntry {
    pub kind: Node<LimitKind>,
    pub value: Node<Quantity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupKind {
    Cpu,
    Memory,
    Swap,
    Pids,
    JoinTimeout,
}

impl CgroupKind {
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupEntry {
    Value {
        kind: Node<CgroupKind>,
        value: Node<Quantity>,
    },
    /// `io MAJOR:MINOR { read Q; write Q }`
    Io {
        major: Node<NumberLit>,
        minor: Node<NumberLit>,
        limits: Vec<Node<IoLimit>>,
        /// Whether every entry of the block parsed.
        parsed: Parsed,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoDirection {
    Read,
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoLimit {
    pub direction: Node<IoDirection>,
    pub value: Node<Quantity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catalog {
    Endpoint,
    Origin,
}
