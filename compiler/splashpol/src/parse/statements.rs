//! The parse tree of each statement and block entry to the AST.
//!
//! Every builder returns `None` when the parse tree does not have the shape
//! the grammar promises (a bug in the parser, never in the policy); the
//! caller then reports `splash::parse::internal` and uses nothing of that
//! statement, so no policy is built from a tree that was only partly
//! understood. Bad entries inside a block are reported here, through
//! [`Parsing::bad`](super::Parsing), and mark the block
//! [`Parsed::Recovered`].

use pest::iterators::{Pair, Pairs};

use super::literals::{number, quantity, string, string_list};
use super::{Context, Parsing, Rule, inner, next, span};
use crate::ast::*;
use crate::diag::{Code, Diagnostic};
use crate::span::{Node, Span};

impl Parsing {
    pub(super) fn statement(&mut self, pair: Pair<'_, Rule>) -> Option<Stmt> {
        let sp = span(&pair);
        let rule = pair.as_rule();
        let mut it = pair.into_inner();
        let kw = next(&mut it)?;
        let keyword = span(&kw);
        let kind = match rule {
            Rule::bubblewrap_stmt => Statement::Bubblewrap {
                path: string(next(&mut it)?),
            },
            Rule::worker_stmt => worker(it)?,
            Rule::runtime_stmt => runtime(it)?,
            Rule::root_stmt => root(it)?,
            Rule::tmp_stmt => tmp(it)?,
            Rule::writes_stmt => Statement::WritesBounded,
            Rule::host_writes_stmt => Statement::HostWritesUnbounded,
            Rule::user_namespaces_stmt => Statement::UserNamespacesNone,
            Rule::pin_stmt => pin(it)?,
            Rule::quota_stmt => quota_aggregate(it)?,
            Rule::tmpfs_stmt => Statement::TmpfsAggregate {
                size: quantity(it.find(|p| p.as_rule() == Rule::quantity)?)?,
            },
            Rule::active_roots_stmt => Statement::ActiveRoots {
                max: quantity(it.find(|p| p.as_rule() == Rule::quantity)?)?,
            },
            Rule::seccomp_stmt => self.seccomp(it)?,
            Rule::limits_stmt => self.limits(it)?,
            Rule::landlock_stmt => self.landlock(it)?,
            Rule::runner_stmt => Statement::CombinedRunner {
                path: string(it.find(|p| p.as_rule() == Rule::path)?),
            },
            Rule::cgroup_stmt => self.cgroup(it)?,
            Rule::watchdog_stmt => watchdog(it)?,
            Rule::network_broker_stmt => network_broker(it)?,
            Rule::expect_stmt => self.expect(it)?,
            Rule::identity_stmt => Statement::Identity(identity(next(&mut it)?)?),
            _ => return None,
        };
        Some(Stmt {
            kind,
            span: sp,
            keyword,
        })
    }

    /// `seccomp off | deny-known-escape-surface | strict-allowlist { ... }`.
    fn seccomp(&mut self, mut it: Pairs<'_, Rule>) -> Option<Statement> {
        let mode = next(&mut it)?;
        match mode.as_rule() {
            Rule::kw_off => Some(Statement::Seccomp(Seccomp::Off)),
            Rule::kw_deny_known_escape_surface => {
                Some(Statement::Seccomp(Seccomp::DenyKnownEscapeSurface))
            }
            Rule::strict_allowlist => {
                let mut syscalls = Vec::new();
                let mut parsed = Parsed::Clean;
                if let Some(block) = mode
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::syscall_block)
                {
                    for s in inner(block) {
                        if s.as_rule() == Rule::syscall_name {
                            syscalls.push(Node::new(s.as_str().to_string(), span(&s)));
                        } else if s.as_rule() != Rule::bad_word {
                            return None;
                        } else {
                            parsed = Parsed::Recovered;
                            self.bad_syscall(&s);
                        }
                    }
                }
                Some(Statement::Seccomp(Seccomp::StrictAllowlist {
                    syscalls,
                    parsed,
                }))
            }
            _ => None,
        }
    }

    /// Reports a word in a strict allowlist that is not a syscall name.
    fn bad_syscall(&mut self, s: &Pair<'_, Rule>) {
        self.diagnostics.push(
            Diagnostic::error(
                Code::InvalidSyscallName,
                span(s),
                format!("`{}` is not a syscall name", s.as_str()),
            )
            .with_label("expected a name such as `openat`")
            .with_help(
                "separate names with spaces or newlines; names use \
                 letters, digits and `_` only",
            ),
        );
    }

    /// `limits [runner "PATH"] [required] { ... }`.
    fn limits(&mut self, it: Pairs<'_, Rule>) -> Option<Statement> {
        let mut runner = None;
        let mut required = None;
        let mut entries = Vec::new();
        let mut parsed = Parsed::Clean;
        for p in it {
            match p.as_rule() {
                Rule::path => runner = Some(string(p)),
                Rule::kw_required => required = Some(Node::new((), span(&p))),
                Rule::limits_block => {
                    for e in inner(p) {
                        if e.as_rule() == Rule::bad_entry {
                            parsed = Parsed::Recovered;
                            self.bad(&e, Context::Limits);
                        } else {
                            entries.push(limit_entry(e)?);
                        }
                    }
                }
                Rule::kw_runner => {}
                _ => return None,
            }
        }
        Some(Statement::Limits {
            runner,
            required,
            entries,
            parsed,
        })
    }

    /// `landlock [runner "PATH"] { allow-exec "PATH" ... }`.
    fn landlock(&mut self, it: Pairs<'_, Rule>) -> Option<Statement> {
        let mut runner = None;
        let mut allow_exec = Vec::new();
        let mut parsed = Parsed::Clean;
        for p in it {
            match p.as_rule() {
                Rule::path => runner = Some(string(p)),
                Rule::landlock_block => {
                    for e in inner(p) {
                        if e.as_rule() == Rule::bad_entry {
                            parsed = Parsed::Recovered;
                            self.bad(&e, Context::Landlock);
                        } else if e.as_rule() == Rule::allow_exec {
                            let path = e.into_inner().find(|p| p.as_rule() == Rule::path)?;
                            allow_exec.push(string(path));
                        } else {
                            return None;
                        }
                    }
                }
                Rule::kw_runner => {}
                _ => return None,
            }
        }
        Some(Statement::Landlock {
            runner,
            allow_exec,
            parsed,
        })
    }

    /// `cgroup parent "PATH" runner "PATH" [required] { ... }`.
    fn cgroup(&mut self, it: Pairs<'_, Rule>) -> Option<Statement> {
        let mut paths = Vec::new();
        let mut required = None;
        let mut entries = Vec::new();
        let mut parsed = Parsed::Clean;
        for p in it {
            match p.as_rule() {
                Rule::path => paths.push(string(p)),
                Rule::kw_required => required = Some(Node::new((), span(&p))),
                Rule::cgroup_block => {
                    for e in inner(p) {
                        match e.as_rule() {
                            Rule::bad_entry => {
                                parsed = Parsed::Recovered;
                                self.bad(&e, Context::Cgroup);
                            }
                            _ => entries.push(self.cgroup_entry(e)?),
                        }
                    }
                }
                Rule::kw_parent | Rule::kw_runner => {}
                _ => return None,
            }
        }
        let mut paths = paths.into_iter();
        Some(Statement::Cgroup {
            parent: paths.next()?,
            runner: paths.next()?,
            required,
            entries,
            parsed,
        })
    }

    /// `expect { ... }`.
    fn expect(&mut self, mut it: Pairs<'_, Rule>) -> Option<Statement> {
        let block = it.find(|p| p.as_rule() == Rule::expect_block)?;
        let mut entries = Vec::new();
        let mut parsed = Parsed::Clean;
        for e in inner(block) {
            if e.as_rule() == Rule::bad_entry {
                parsed = Parsed::Recovered;
                self.bad(&e, Context::Expect);
            } else {
                entries.push(expect_entry(e)?);
            }
        }
        Some(Statement::Expect { entries, parsed })
    }

    fn cgroup_entry(&mut self, pair: Pair<'_, Rule>) -> Option<Node<CgroupEntry>> {
        let sp = span(&pair);
        match pair.as_rule() {
            Rule::cgroup_value => {
                let mut it = pair.into_inner();
                let name = next(&mut it)?;
                let ns = span(&name);
                let kind = match name.into_inner().next().map(|k| k.as_rule()) {
                    Some(Rule::kw_cpu) => CgroupKind::Cpu,
                    Some(Rule::kw_memory) => CgroupKind::Memory,
                    Some(Rule::kw_swap) => CgroupKind::Swap,
                    Some(Rule::kw_pids) => CgroupKind::Pids,
                    Some(Rule::kw_join_timeout) => CgroupKind::JoinTimeout,
                    _ => return None,
                };
                let value = quantity(next(&mut it)?)?;
                Some(Node::new(
                    CgroupEntry::Value {
                        kind: Node::new(kind, ns),
                        value,
                    },
                    sp,
                ))
            }
            Rule::io_entry => {
                let mut major = None;
                let mut minor = None;
                let mut limits = Vec::new();
                let mut parsed = Parsed::Clean;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::device => {
                            let s = span(&p);
                            let text = p.as_str();
                            let colon = text.find(':')?;
                            major = Some(Node::new(
                                NumberLit(text[..colon].to_string()),
                                Span::new(s.start, s.start + colon),
                            ));
                            minor = Some(Node::new(
                                NumberLit(text[colon + 1..].to_string()),
                                Span::new(s.start + colon + 1, s.end),
                            ));
                        }
                        Rule::io_block => {
                            for e in inner(p) {
                                if e.as_rule() == Rule::bad_entry {
                                    parsed = Parsed::Recovered;
                                    self.bad(&e, Context::Io);
                                } else if e.as_rule() != Rule::io_limit {
                                    return None;
                                } else {
                                    let es = span(&e);
                                    let mut ei = e.into_inner();
                                    let dir = next(&mut ei)?;
                                    let ds = span(&dir);
                                    let direction =
                                        match dir.into_inner().next().map(|k| k.as_rule()) {
                                            Some(Rule::kw_write) => IoDirection::Write,
                                            Some(Rule::kw_read) => IoDirection::Read,
                                            _ => return None,
                                        };
                                    let value = quantity(next(&mut ei)?)?;
                                    limits.push(Node::new(
                                        IoLimit {
                                            direction: Node::new(direction, ds),
                                            value,
                                        },
                                        es,
                                    ));
                                }
                            }
                        }
                        Rule::kw_io => {}
                        _ => return None,
                    }
                }
                Some(Node::new(
                    CgroupEntry::Io {
                        major: major?,
                        minor: minor?,
                        limits,
                        parsed,
                    },
                    sp,
                ))
            }
            _ => None,
        }
    }
}

/// `worker "PATH" [args [...]]`.
fn worker(mut it: Pairs<'_, Rule>) -> Option<Statement> {
    let path = string(next(&mut it)?);
    let args = it
        .find(|p| p.as_rule() == Rule::string_list)
        .map(string_list);
    Some(Statement::Worker { path, args })
}

/// `runtime "SOURCE" at "DESTINATION"`.
fn runtime(mut it: Pairs<'_, Rule>) -> Option<Statement> {
    let source = string(next(&mut it)?);
    let _at = next(&mut it)?;
    let destination = string(next(&mut it)?);
    Some(Statement::Runtime {
        source,
        destination,
    })
}

/// `root "ID" host ... | tmpfs ...`.
fn root(mut it: Pairs<'_, Rule>) -> Option<Statement> {
    let id = string(next(&mut it)?);
    let body = next(&mut it)?;
    let (destination, kind) = match body.as_rule() {
        Rule::root_host => host_root(body.into_inner())?,
        Rule::root_tmpfs => tmpfs_root(body.into_inner())?,
        _ => return None,
    };
    Some(Statement::Root {
        id,
        destination,
        kind,
    })
}

/// The body of `root "ID" host "SOURCE" at "DESTINATION" ACCESS [quota ...]`.
fn host_root(mut b: Pairs<'_, Rule>) -> Option<(Node<String>, RootKind)> {
    let _host = next(&mut b)?;
    let source = string(next(&mut b)?);
    let _at = next(&mut b)?;
    let destination = string(next(&mut b)?);
    let access_pair = next(&mut b)?;
    let access_span = span(&access_pair);
    let access = match access_pair.into_inner().next().map(|p| p.as_rule()) {
        Some(Rule::kw_read_write) => AccessDecl::ReadWrite,
        Some(Rule::kw_read_only) => AccessDecl::ReadOnly,
        _ => return None,
    };
    let quota = match b.next() {
        Some(q) => Some(root_quota(q)?),
        None => None,
    };
    Some((
        destination,
        RootKind::Host {
            source,
            access: Node::new(access, access_span),
            quota,
        },
    ))
}

/// A host root's `quota project N bytes Q inodes Q`.
fn root_quota(q: Pair<'_, Rule>) -> Option<Node<Quota>> {
    let qs = span(&q);
    let mut qi = q
        .into_inner()
        .filter(|p| matches!(p.as_rule(), Rule::number | Rule::quantity));
    Some(Node::new(
        Quota {
            project: number(next(&mut qi)?),
            bytes: quantity(next(&mut qi)?)?,
            inodes: quantity(next(&mut qi)?)?,
        },
        qs,
    ))
}

/// The body of `root "ID" tmpfs "DESTINATION" size Q`.
fn tmpfs_root(b: Pairs<'_, Rule>) -> Option<(Node<String>, RootKind)> {
    let mut b = b.filter(|p| matches!(p.as_rule(), Rule::path | Rule::quantity));
    let destination = string(next(&mut b)?);
    let size = quantity(next(&mut b)?)?;
    Some((destination, RootKind::Tmpfs { size }))
}

/// `tmp off | private [size Q]`.
fn tmp(mut it: Pairs<'_, Rule>) -> Option<Statement> {
    let setting = next(&mut it)?;
    if setting.as_rule() == Rule::tmp_off {
        Some(Statement::Tmp(Tmp::Off))
    } else if setting.as_rule() != Rule::tmp_private {
        None
    } else {
        let size = match setting.into_inner().find(|p| p.as_rule() == Rule::quantity) {
            Some(q) => Some(quantity(q)?),
            None => None,
        };
        Some(Statement::Tmp(Tmp::Private { size }))
    }
}

/// `pin executables mounts`.
fn pin(it: Pairs<'_, Rule>) -> Option<Statement> {
    let mut items = Vec::new();
    for p in it {
        let s = span(&p);
        let item = match p.into_inner().next().map(|k| k.as_rule()) {
            Some(Rule::kw_executables) => PinItem::Executables,
            Some(Rule::kw_mounts) => PinItem::Mounts,
            _ => return None,
        };
        items.push(Node::new(item, s));
    }
    Some(Statement::Pin { items })
}

/// `quota aggregate bytes Q inodes Q`.
fn quota_aggregate(it: Pairs<'_, Rule>) -> Option<Statement> {
    let mut q = it.filter(|p| p.as_rule() == Rule::quantity);
    Some(Statement::QuotaAggregate {
        bytes: quantity(next(&mut q)?)?,
        inodes: quantity(next(&mut q)?)?,
    })
}

/// `watchdog session Q [call Q]`.
fn watchdog(it: Pairs<'_, Rule>) -> Option<Statement> {
    let mut q = it.filter(|p| p.as_rule() == Rule::quantity);
    Some(Statement::Watchdog {
        session: quantity(next(&mut q)?)?,
        call: match q.next() {
            Some(call) => Some(quantity(call)?),
            None => None,
        },
    })
}

/// `network-broker CATALOG parent "PATH" at "PATH" ids [...]`.
fn network_broker(it: Pairs<'_, Rule>) -> Option<Statement> {
    let mut catalog = None;
    let mut paths = Vec::new();
    let mut ids = None;
    for p in it {
        match p.as_rule() {
            Rule::catalog => {
                let s = span(&p);
                let c = match p.into_inner().next().map(|k| k.as_rule()) {
                    Some(Rule::kw_origin) => Catalog::Origin,
                    Some(Rule::kw_endpoint) => Catalog::Endpoint,
                    _ => return None,
                };
                catalog = Some(Node::new(c, s));
            }
            Rule::path => paths.push(string(p)),
            Rule::string_list => ids = Some(string_list(p)),
            Rule::kw_parent | Rule::kw_at | Rule::kw_ids => {}
            _ => return None,
        }
    }
    let mut paths = paths.into_iter();
    Some(Statement::NetworkBroker {
        catalog: catalog?,
        parent: paths.next()?,
        destination: paths.next()?,
        ids: ids?,
    })
}

fn limit_entry(pair: Pair<'_, Rule>) -> Option<Node<LimitEntry>> {
    let sp = span(&pair);
    let mut it = pair.into_inner();
    let name = next(&mut it)?;
    let ns = span(&name);
    let kind = match name.into_inner().next().map(|k| k.as_rule()) {
        Some(Rule::kw_cpu) => LimitKind::Cpu,
        Some(Rule::kw_address_space) => LimitKind::AddressSpace,
        Some(Rule::kw_processes) => LimitKind::Processes,
        Some(Rule::kw_open_files) => LimitKind::OpenFiles,
        Some(Rule::kw_file_size) => LimitKind::FileSize,
        _ => return None,
    };
    let value = quantity(next(&mut it)?)?;
    Some(Node::new(
        LimitEntry {
            kind: Node::new(kind, ns),
            value,
        },
        sp,
    ))
}

fn expect_entry(pair: Pair<'_, Rule>) -> Option<Node<ExpectEntry>> {
    let sp = span(&pair);
    let rule = pair.as_rule();
    let mut it = pair
        .into_inner()
        .filter(|p| !matches!(p.as_rule(), Rule::kw_max | Rule::kw_none));
    let _kw = next(&mut it)?;
    let entry = match rule {
        Rule::expect_read_only => ExpectEntry::ReadOnly {
            path: string(next(&mut it)?),
        },
        Rule::expect_writable => {
            let path = string(next(&mut it)?);
            let max = match it.next() {
                Some(q) => Some(quantity(q)?),
                None => None,
            };
            ExpectEntry::Writable { path, max }
        }
        Rule::expect_hidden => ExpectEntry::Hidden {
            path: string(next(&mut it)?),
        },
        Rule::expect_exec => {
            let v = next(&mut it)?;
            let vs = span(&v);
            let verdict = match v.into_inner().next().map(|k| k.as_rule()) {
                Some(Rule::kw_denied) => ExecVerdict::Denied,
                Some(Rule::kw_allowed) => ExecVerdict::Allowed,
                _ => return None,
            };
            ExpectEntry::Exec {
                verdict: Node::new(verdict, vs),
                path: string(next(&mut it)?),
            }
        }
        Rule::expect_syscall => {
            let mut names = Vec::new();
            for p in it {
                match p.as_rule() {
                    Rule::kw_denied => {}
                    Rule::expect_syscall_name => {
                        names.push(Node::new(p.as_str().to_string(), span(&p)));
                    }
                    _ => return None,
                }
            }
            if names.is_empty() {
                return None;
            }
            ExpectEntry::SyscallDenied { names }
        }
        Rule::expect_network => ExpectEntry::NetworkNone,
        Rule::expect_processes => ExpectEntry::ProcessesMax {
            max: quantity(next(&mut it)?)?,
        },
        Rule::expect_userns => ExpectEntry::UserNamespacesNone,
        _ => return None,
    };
    Some(Node::new(entry, sp))
}

/// The part of an `identity` statement after its keyword.
fn identity(pair: Pair<'_, Rule>) -> Option<Identity> {
    match pair.as_rule() {
        Rule::kw_dynamic => Some(Identity::Dynamic),
        Rule::identity_fixed => {
            let mut ids = pair.into_inner().filter(|p| p.as_rule() == Rule::number);
            Some(Identity::Fixed {
                user: number(next(&mut ids)?),
                group: number(next(&mut ids)?),
            })
        }
        _ => None,
    }
}
