//! Pass 1: each statement on its own (shape, units, ranges, duplicates),
//! collected for the cross-statement rules.

use std::collections::{BTreeMap, BTreeSet};

use super::{Checker, Collected, LandlockInfo, LimitsInfo, Reported};
use crate::ast::{self, Parsed, Statement};
use crate::diag::{Code, Diagnostic};
use crate::model::{
    self, AggregateQuota, BrokerCatalog, CgroupPolicy, NetworkBroker, PrivateTmp, RuntimeMount,
    SeccompPolicy, Watchdog,
};
use crate::span::{Node, Span};
use crate::units::Dimension;

impl Checker {
    pub(super) fn statement(&mut self, stmt: &ast::Stmt, c: &mut Collected) {
        match &stmt.kind {
            Statement::Bubblewrap { path } => c.bubblewrap = self.path(path, "`bubblewrap` path"),
            Statement::Worker { path, args } => self.worker_statement(path, args.as_ref(), c),
            Statement::Runtime {
                source,
                destination,
            } => self.runtime_statement(source, destination, c),
            Statement::Root {
                id,
                destination,
                kind,
            } => self.root(id, destination, kind, c),
            Statement::Tmp(t) => self.tmp_statement(stmt, t, c),
            Statement::WritesBounded => c.writes_bounded = Some(stmt.span),
            Statement::HostWritesUnbounded => c.host_writes = Some(stmt.span),
            Statement::UserNamespacesNone => c.userns_none = Some(stmt.span),
            Statement::Pin { items } => self.pin_statement(items, c),
            Statement::QuotaAggregate { bytes, inodes } => {
                self.quota_statement(stmt, bytes, inodes, c);
            }
            Statement::TmpfsAggregate { size } => {
                let v = self.nonzero(size, Dimension::Bytes, "`tmpfs aggregate`");
                c.tmpfs_aggregate = Some((v.ok_or(Reported), stmt.span));
            }
            Statement::ActiveRoots { max } => self.active_roots_statement(max, c),
            Statement::Seccomp(s) => self.seccomp_statement(stmt, s, c),
            Statement::Limits {
                runner,
                required,
                entries,
                parsed,
            } => self.limits_statement(
                stmt,
                runner.as_ref(),
                required.as_ref(),
                entries,
                *parsed,
                c,
            ),
            Statement::Landlock {
                runner, allow_exec, ..
            } => self.landlock_statement(stmt, runner.as_ref(), allow_exec, c),
            Statement::CombinedRunner { path } => {
                c.combined = Some(self.placed(path, "combined runner").ok_or(Reported));
            }
            Statement::Cgroup {
                parent,
                runner,
                required,
                entries,
                parsed,
            } => {
                let policy = self.cgroup_statement(stmt.keyword, parent, runner, entries, *parsed);
                c.cgroup = Some((policy.ok_or(Reported), required.is_some()));
            }
            Statement::Watchdog { session, call } => {
                self.watchdog_statement(session, call.as_ref(), c);
            }
            // Judged against the built policy (`expect.rs`).
            Statement::Expect { .. } => {}
            Statement::Identity(identity) => {
                c.identity = Some((self.identity(identity).ok_or(super::Reported), stmt.span));
            }
            Statement::NetworkBroker {
                catalog,
                parent,
                destination,
                ids,
            } => self.network_broker_statement(stmt, catalog, parent, destination, ids, c),
        }
    }

    /// `worker`: the program and its arguments.
    fn worker_statement(
        &mut self,
        path: &Node<String>,
        args: Option<&Node<Vec<Node<String>>>>,
        c: &mut Collected,
    ) {
        c.worker = self.placed(path, "`worker`");
        if let Some(args) = args {
            if args.node.is_empty() {
                self.push(
                    Diagnostic::error(Code::EmptyList, args.span, "`args` list is empty")
                        .with_label("no arguments")
                        .with_help("remove `args []`; without `args` the worker gets no arguments"),
                );
            }
            // A NUL byte (which `execve` cannot pass) is a control
            // character, reported by the parser.
            c.worker_args = args.node.iter().map(|a| a.node.clone()).collect();
        }
    }

    /// `runtime`: one read-only mount of the host's runtime files.
    fn runtime_statement(
        &mut self,
        source: &Node<String>,
        destination: &Node<String>,
        c: &mut Collected,
    ) {
        let s = self.path(source, "runtime mount source");
        let d = self.path(destination, "runtime mount destination");
        c.runtime_dests.push(d.clone().ok_or(Reported));
        if let (Some(source), Some(dest)) = (s, d) {
            c.runtime.push((
                RuntimeMount {
                    source,
                    destination: dest,
                },
                destination.span,
            ));
        }
    }

    /// `tmp`: the worker's private `/tmp`.
    fn tmp_statement(&mut self, stmt: &ast::Stmt, t: &ast::Tmp, c: &mut Collected) {
        let tmp = match t {
            ast::Tmp::Off => Some(PrivateTmp::Off),
            ast::Tmp::Private { size: None } => Some(PrivateTmp::Unbounded),
            ast::Tmp::Private { size: Some(q) } => self
                .tmpfs_size(q, "`tmp private size`")
                .map(|size_bytes| PrivateTmp::Bounded { size_bytes }),
        };
        if let Some(t) = tmp {
            c.tmp = Some((t, stmt.span));
        }
    }

    /// `pin`: what is pinned, each item once.
    fn pin_statement(&mut self, items: &[Node<ast::PinItem>], c: &mut Collected) {
        for item in items {
            let slot = match item.node {
                ast::PinItem::Mounts => &mut c.pin_mounts,
                ast::PinItem::Executables => &mut c.pin_executables,
            };
            if let Some(first) = *slot {
                let what = match item.node {
                    ast::PinItem::Mounts => "`mounts`",
                    ast::PinItem::Executables => "`executables`",
                };
                self.duplicate(Code::DuplicateEntry, item.span, first, what);
            } else {
                *slot = Some(item.span);
            }
        }
    }

    /// `quota aggregate`: the bound over every quota-backed root.
    fn quota_statement(
        &mut self,
        stmt: &ast::Stmt,
        bytes: &Node<ast::Quantity>,
        inodes: &Node<ast::Quantity>,
        c: &mut Collected,
    ) {
        let b = self.nonzero(bytes, Dimension::Bytes, "the aggregate quota `bytes`");
        let i = self.nonzero(inodes, Dimension::Count, "the aggregate quota `inodes`");
        let q = match (b, i) {
            (Some(max_bytes), Some(max_inodes)) => Some(AggregateQuota {
                max_bytes,
                max_inodes,
            }),
            _ => None,
        };
        c.aggregate_quota = Some((q.ok_or(Reported), stmt.span));
    }

    /// `active-roots max`: at most the ceiling.
    fn active_roots_statement(&mut self, max: &Node<ast::Quantity>, c: &mut Collected) {
        if let Some(v) = self.value(max, Dimension::Count, "`active-roots max`") {
            if v > u64::from(model::MAX_ACTIVE_FILE_ROOTS_CEILING) {
                self.push(
                    Diagnostic::error(
                        Code::ActiveRootsTooLarge,
                        max.span,
                        format!("`active-roots max {v}` is above the ceiling of 256"),
                    )
                    .with_label("at most 256")
                    .with_help("choose a bound from 0 to 256 (the default is 64)"),
                );
            } else {
                c.active_roots = Some((u16::try_from(v).unwrap_or(u16::MAX), max.span));
            }
        }
    }

    /// `seccomp`: the filter mode.
    fn seccomp_statement(&mut self, stmt: &ast::Stmt, s: &ast::Seccomp, c: &mut Collected) {
        let p = match s {
            ast::Seccomp::Off => Some(SeccompPolicy::Off),
            ast::Seccomp::DenyKnownEscapeSurface => Some(SeccompPolicy::DenyKnownEscapeSurface),
            ast::Seccomp::StrictAllowlist { syscalls, parsed } => self
                .strict_allowlist(stmt.keyword, syscalls, *parsed)
                .map(|syscalls| SeccompPolicy::StrictAllowlist { syscalls }),
        };
        if let Some(p) = p {
            c.seccomp = Some((p, stmt.span));
        }
    }

    /// `limits`: the runner and its resource limits.
    fn limits_statement(
        &mut self,
        stmt: &ast::Stmt,
        runner: Option<&Node<String>>,
        required: Option<&Node<()>>,
        entries: &[Node<ast::LimitEntry>],
        parsed: Parsed,
        c: &mut Collected,
    ) {
        let runner = runner.map(|r| self.placed(r, "limit runner").ok_or(Reported));
        let limits = self.limits(entries);
        if limits.is_empty() && entries.is_empty() && parsed == Parsed::Clean {
            self.push(
                Diagnostic::error(Code::EmptyLimits, stmt.keyword, "`limits` sets no limit")
                    .with_label("empty block")
                    .with_help("add a limit such as `cpu 30 s`, or remove the block"),
            );
        }
        c.limits = Some(LimitsInfo {
            keyword: stmt.keyword,
            runner,
            required: required.map(|r| r.span),
            limits,
        });
    }

    /// `landlock`: the runner and the executable allowlist.
    fn landlock_statement(
        &mut self,
        stmt: &ast::Stmt,
        runner: Option<&Node<String>>,
        allow_exec: &[Node<String>],
        c: &mut Collected,
    ) {
        let runner = runner.map(|r| self.placed(r, "Landlock runner").ok_or(Reported));
        let allow = self.allow_exec(allow_exec);
        c.landlock = Some(LandlockInfo {
            keyword: stmt.keyword,
            runner,
            allow,
        });
    }

    /// `cgroup`: the parent, the runner and the controller limits.
    fn cgroup_statement(
        &mut self,
        keyword: Span,
        parent: &Node<String>,
        runner: &Node<String>,
        entries: &[Node<ast::CgroupEntry>],
        parsed: Parsed,
    ) -> Option<CgroupPolicy> {
        let parent = self.path(parent, "cgroup parent");
        let runner = self.path(runner, "cgroup runner");
        let limits = self.cgroup_limits(keyword, entries, parsed);
        match (parent, runner, limits) {
            (Some(parent), Some(runner), Some((limits, join_timeout_ms))) => Some(CgroupPolicy {
                parent,
                runner,
                limits,
                join_timeout_ms,
            }),
            _ => None,
        }
    }

    /// `watchdog`: the session and call deadlines.
    fn watchdog_statement(
        &mut self,
        session: &Node<ast::Quantity>,
        call: Option<&Node<ast::Quantity>>,
        c: &mut Collected,
    ) {
        let s = self.nonzero(
            session,
            Dimension::Duration,
            "the watchdog `session` deadline",
        );
        let k = call.map(|q| {
            (
                self.nonzero(q, Dimension::Duration, "the watchdog `call` deadline"),
                q.span,
            )
        });
        if let (Some(s), Some((Some(k), ks))) = (s, k)
            && k > s
        {
            self.push(
                Diagnostic::warning(
                    Code::CallDeadlineExceedsSession,
                    ks,
                    "the `call` deadline is longer than the `session` deadline",
                )
                .with_label("can never fire before the session deadline")
                .with_related(session.span, "session deadline")
                .with_help("make the call deadline shorter than the session deadline"),
            );
        }
        if let Some(session_deadline_ms) = s {
            let call_deadline_ms = match k {
                Some((Some(v), _)) => Some(v),
                Some((None, _)) => return,
                None => None,
            };
            c.watchdog = Some(Watchdog {
                session_deadline_ms,
                call_deadline_ms,
            });
        }
    }

    /// `network-broker`: where the broker's socket goes and the ids it serves.
    fn network_broker_statement(
        &mut self,
        stmt: &ast::Stmt,
        catalog: &Node<ast::Catalog>,
        parent: &Node<String>,
        destination: &Node<String>,
        ids: &Node<Vec<Node<String>>>,
        c: &mut Collected,
    ) {
        let p = self.path(parent, "network broker parent");
        let d = self.path(destination, "network broker destination");
        if let Some(socket) = d.as_ref().map(model::broker_socket_path)
            && socket.len() > model::MAX_SOCKET_PATH_BYTES
        {
            self.push(
                Diagnostic::error(
                    Code::BrokerSocketPathTooLong,
                    destination.span,
                    format!(
                        "the broker socket `{socket}` is {} bytes long; a Unix socket path holds at most {}",
                        socket.len(),
                        model::MAX_SOCKET_PATH_BYTES
                    ),
                )
                .with_label("the worker connects to `broker.sock` in this directory")
                .with_help(format!(
                    "choose a destination of at most {} bytes, such as `/run/splash/network`",
                    model::MAX_BROKER_DESTINATION_BYTES
                )),
            );
        }
        let mut set = BTreeSet::new();
        let mut first: BTreeMap<&str, Span> = BTreeMap::new();
        if ids.node.is_empty() {
            self.push(
                Diagnostic::error(
                    Code::EmptyList,
                    ids.span,
                    "the network broker serves no ids",
                )
                .with_label("empty list")
                .with_help("list the exact network-origin ids, e.g. `ids [\"api.search\"]`"),
            );
        }
        for id in &ids.node {
            if let Some(&f) = first.get(id.node.as_str()) {
                self.duplicate(
                    Code::DuplicateEntry,
                    id.span,
                    f,
                    &format!("network-origin id `{}`", id.node),
                );
                continue;
            }
            first.insert(&id.node, id.span);
            if let Some(t) = self.selector(id, "network-origin id") {
                set.insert(t);
            }
        }
        if let (Some(parent), Some(dest)) = (p, d) {
            c.broker = Some((
                NetworkBroker {
                    parent,
                    destination: dest,
                    catalog: match catalog.node {
                        ast::Catalog::Endpoint => BrokerCatalog::Endpoint,
                        ast::Catalog::Origin => BrokerCatalog::Origin,
                    },
                    ids: set,
                },
                destination.span,
                stmt.keyword,
            ));
        }
    }
}
