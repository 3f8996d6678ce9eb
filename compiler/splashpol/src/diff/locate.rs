//! Where a difference is decided: the token of each file that sets it.
//!
//! Each locator names the token that carries the value compared (a path, a
//! size, a syscall name, the `required` keyword) and falls back to the
//! statement's keyword where the value has no token of its own (`writes
//! bounded`, a profile word) or the file leaves it at its default.

use super::Location;
use crate::ast::{
    CgroupEntry, CgroupKind, IoDirection, LimitKind, PinItem, RootKind, Seccomp, Statement, Stmt,
    Tmp,
};
use crate::span::{Span, line_col};

/// The statements of one file, for locating what decides a layer.
pub(super) struct Statements<'a> {
    file: &'a str,
    source: &'a str,
    stmts: Vec<Stmt>,
}

impl<'a> Statements<'a> {
    pub(super) fn new(file: &'a str, source: &'a str) -> Self {
        let stmts = crate::parse::parse(source)
            .file
            .map(|f| f.policy.statements)
            .unwrap_or_default();
        Statements {
            file,
            source,
            stmts,
        }
    }

    /// The location of `span`, a token of `stmt`: its line and column, and
    /// the line of the statement that holds it, as written.
    fn at(&self, stmt: &Stmt, span: Span) -> Location {
        let (line, column) = line_col(self.source, span.start);
        let text = stmt
            .span
            .slice(self.source)
            .map(|t| {
                let mut rel = span.start.saturating_sub(stmt.span.start).min(t.len());
                while !t.is_char_boundary(rel) {
                    rel -= 1;
                }
                let begin = t[..rel].rfind(['\n', '\r']).map_or(0, |i| i + 1);
                let end = t[rel..].find(['\n', '\r']).map_or(t.len(), |i| rel + i);
                t[begin..end].trim().to_string()
            })
            .unwrap_or_default();
        Location {
            file: self.file.to_string(),
            line,
            column,
            start: span.start,
            end: span.end,
            text,
        }
    }

    /// The first statement for which `pick` names a token, at that token.
    pub(super) fn token(&self, pick: impl Fn(&Stmt) -> Option<Span>) -> Option<Location> {
        self.stmts
            .iter()
            .find_map(|s| pick(s).map(|span| self.at(s, span)))
    }

    /// The keyword of the statement that starts with `keyword`.
    pub(super) fn keyword(&self, keyword: &str) -> Option<Location> {
        self.token(|s| (s.kind.keyword() == keyword).then_some(s.keyword))
    }

    /// The token that puts something at sandbox path `path`.
    pub(super) fn path(&self, path: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Runtime { destination, .. } | Statement::Root { destination, .. } => {
                (destination.node == path).then_some(destination.span)
            }
            Statement::Tmp(_) => (path == "/tmp").then_some(s.keyword),
            Statement::Worker { path: p, .. } | Statement::CombinedRunner { path: p } => {
                (p.node == path).then_some(p.span)
            }
            Statement::Limits { runner, .. } => {
                runner.as_ref().filter(|r| r.node == path).map(|r| r.span)
            }
            Statement::Landlock {
                runner, allow_exec, ..
            } => runner
                .iter()
                .chain(allow_exec)
                .find(|r| r.node == path)
                .map(|r| r.span),
            Statement::NetworkBroker { destination, .. } => {
                (destination.node == path).then_some(destination.span)
            }
            _ => None,
        })
        .or_else(|| self.root_source(path))
        // `writes bounded` remounts the root and `/dev` read-only.
        .or_else(|| {
            matches!(path, "/" | "/dev")
                .then(|| self.keyword("writes"))
                .flatten()
        })
    }

    /// A host root whose source is `host`.
    fn root_source(&self, host: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Root {
                kind: RootKind::Host { source, .. },
                ..
            } => (source.node == host).then_some(source.span),
            _ => None,
        })
    }

    /// The host source of what is mounted at `path` (a runtime mount, a
    /// host root, the broker's parent).
    pub(super) fn source_at(&self, path: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Runtime {
                source,
                destination,
            }
            | Statement::Root {
                destination,
                kind: RootKind::Host { source, .. },
                ..
            }
            | Statement::NetworkBroker {
                parent: source,
                destination,
                ..
            } => (destination.node == path).then_some(source.span),
            _ => None,
        })
        .or_else(|| self.path(path))
    }

    /// The access word of the host root at `path`.
    pub(super) fn access_at(&self, path: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Root {
                destination,
                kind: RootKind::Host { access, .. },
                ..
            } => (destination.node == path).then_some(access.span),
            _ => None,
        })
        .or_else(|| self.path(path))
    }

    /// The value that bounds writes at `path`: a tmpfs size, or the byte
    /// ceiling of a root's quota.
    pub(super) fn bound_at(&self, path: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Root {
                destination, kind, ..
            } if destination.node == path => match kind {
                RootKind::Tmpfs { size } => Some(size.span),
                RootKind::Host { quota, .. } => quota.as_ref().map(|q| q.node.bytes.span),
            },
            Statement::Tmp(Tmp::Private { size: Some(size) }) if path == "/tmp" => Some(size.span),
            _ => None,
        })
        .or_else(|| self.path(path))
    }

    /// The project id or inode ceiling of the quota on the root at `path`.
    pub(super) fn quota_at(&self, path: &str, inodes: bool) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Root {
                destination,
                kind: RootKind::Host {
                    quota: Some(quota), ..
                },
                ..
            } if destination.node == path => Some(if inodes {
                quota.node.inodes.span
            } else {
                quota.node.project.span
            }),
            _ => None,
        })
        .or_else(|| self.path(path))
    }

    /// An item of the `pin` statement, or the statement.
    pub(super) fn pin(&self, item: PinItem) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Pin { items } => items.iter().find(|i| i.node == item).map(|i| i.span),
            _ => None,
        })
        .or_else(|| self.keyword("pin"))
    }

    /// The name `name` in a strict list, or the `seccomp` statement.
    pub(super) fn syscall(&self, name: Option<&str>) -> Option<Location> {
        name.and_then(|name| {
            self.token(|s| match &s.kind {
                Statement::Seccomp(Seccomp::StrictAllowlist { syscalls, .. }) => {
                    syscalls.iter().find(|n| n.node == name).map(|n| n.span)
                }
                _ => None,
            })
        })
        .or_else(|| self.keyword("seccomp"))
    }

    /// An `allow-exec` target (or a runner path) naming `path`, or the
    /// `landlock` statement.
    pub(super) fn exec_target(&self, path: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Landlock { allow_exec, .. } => {
                allow_exec.iter().find(|a| a.node == path).map(|a| a.span)
            }
            _ => None,
        })
        .or_else(|| self.path(path))
        .or_else(|| self.keyword("landlock"))
    }

    /// The value of the `limits` entry for rlimit `name` (`cpu`,
    /// `open-files`, ...), or the `limits` statement.
    pub(super) fn limit(&self, name: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Limits { entries, .. } => entries
                .iter()
                .find(|e| limit_name(e.node.kind.node) == name)
                .map(|e| e.node.value.span),
            _ => None,
        })
        .or_else(|| self.keyword("limits"))
    }

    /// The `required` keyword of the statement `keyword` (`limits` or
    /// `cgroup`), or the statement.
    pub(super) fn required(&self, keyword: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Limits { required, .. } | Statement::Cgroup { required, .. }
                if s.kind.keyword() == keyword =>
            {
                required.as_ref().map(|r| r.span)
            }
            _ => None,
        })
        .or_else(|| self.keyword(keyword))
    }

    /// The value of a single-value `cgroup` entry, or the statement.
    pub(super) fn cgroup_value(&self, kind: CgroupKind) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Cgroup { entries, .. } => entries.iter().find_map(|e| match &e.node {
                CgroupEntry::Value { kind: k, value } if k.node == kind => Some(value.span),
                _ => None,
            }),
            _ => None,
        })
        .or_else(|| self.keyword("cgroup"))
    }

    /// The rate of an `io` entry for device `major:minor` in `direction`,
    /// with a byte rate (`iops == false`) or `iops`, or the device, or the
    /// statement.
    pub(super) fn cgroup_io(
        &self,
        (major, minor): (u32, u32),
        direction: IoDirection,
        iops: bool,
    ) -> Option<Location> {
        let device = |m: &crate::ast::Node<crate::ast::NumberLit>| {
            crate::units::integer(m)
                .ok()
                .and_then(|v| u32::try_from(v).ok())
        };
        self.token(|s| match &s.kind {
            Statement::Cgroup { entries, .. } => entries.iter().find_map(|e| match &e.node {
                CgroupEntry::Io {
                    major: ma,
                    minor: mi,
                    limits,
                    ..
                } if device(ma) == Some(major) && device(mi) == Some(minor) => Some(
                    limits
                        .iter()
                        .find(|l| {
                            l.node.direction.node == direction
                                && is_iops(&l.node.value.node) == iops
                        })
                        .map_or(ma.span, |l| l.node.value.span),
                ),
                _ => None,
            }),
            _ => None,
        })
        .or_else(|| self.keyword("cgroup"))
    }

    /// The cgroup's `parent` (or `runner`) path, or the statement.
    pub(super) fn cgroup_path(&self, runner: bool) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Cgroup {
                parent, runner: r, ..
            } => Some(if runner { r.span } else { parent.span }),
            _ => None,
        })
    }

    /// The watchdog's `session` (or `call`) deadline, or the statement.
    pub(super) fn deadline(&self, call: bool) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Watchdog { session, call: c } => {
                if call {
                    c.as_ref().map(|c| c.span)
                } else {
                    Some(session.span)
                }
            }
            _ => None,
        })
        .or_else(|| self.keyword("watchdog"))
    }

    /// The broker id `id`, or the catalog word (`id == None`), or the
    /// statement.
    pub(super) fn broker(&self, id: Option<&str>) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::NetworkBroker { catalog, ids, .. } => match id {
                Some(id) => ids.node.iter().find(|i| i.node == id).map(|i| i.span),
                None => Some(catalog.span),
            },
            _ => None,
        })
        .or_else(|| self.keyword("network-broker"))
    }

    /// The `bubblewrap` path.
    pub(super) fn bubblewrap(&self) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Bubblewrap { path } => Some(path.span),
            _ => None,
        })
    }

    /// The worker's path, or its `args` list.
    pub(super) fn worker(&self, args: bool) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Worker { path, args: a } => Some(match (args, a) {
                (true, Some(a)) => a.span,
                _ => path.span,
            }),
            _ => None,
        })
    }

    /// A runner path (`limits runner`, `landlock runner`, `runner
    /// combined`) naming `path`.
    pub(super) fn runner(&self, path: &str) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::Limits {
                runner: Some(r), ..
            }
            | Statement::Landlock {
                runner: Some(r), ..
            }
            | Statement::CombinedRunner { path: r } => (r.node == path).then_some(r.span),
            _ => None,
        })
    }

    /// The value of `active-roots max`, `tmpfs aggregate`, or `quota
    /// aggregate` bytes (`inodes == false`) or inodes.
    pub(super) fn aggregate(&self, keyword: &str, inodes: bool) -> Option<Location> {
        self.token(|s| match &s.kind {
            Statement::ActiveRoots { max } if keyword == "active-roots" => Some(max.span),
            Statement::TmpfsAggregate { size } if keyword == "tmpfs" => Some(size.span),
            Statement::QuotaAggregate { bytes, inodes: i } if keyword == "quota" => {
                Some(if inodes { i.span } else { bytes.span })
            }
            _ => None,
        })
    }
}

/// The name the diff gives rlimit `kind`.
pub(super) fn limit_name(kind: LimitKind) -> &'static str {
    match kind {
        LimitKind::Cpu => "cpu",
        LimitKind::AddressSpace => "address-space",
        LimitKind::Processes => "processes",
        LimitKind::OpenFiles => "open-files",
        LimitKind::FileSize => "file-size",
    }
}

/// Whether an `io` rate is in `iops` (otherwise bytes per second).
fn is_iops(q: &crate::ast::Quantity) -> bool {
    match q {
        crate::ast::Quantity::Value { unit, .. } => unit.as_ref().is_some_and(|u| u.node == "iops"),
        crate::ast::Quantity::Unlimited => false,
    }
}
