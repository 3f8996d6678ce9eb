//! Checking: the AST to a typed [`model::Policy`], reporting every problem at
//! once. Nothing here touches the host: paths are checked as text, and
//! everything about the host (existence, file types, quotas, cgroups) is left
//! to the runtime's bind step.
//!
//! The checks run in one pass over the statements (shape, units, ranges,
//! duplicates) followed by cross-statement rules (mount layout, executables in
//! runtime mounts, quota and write-bounding requirements, aggregates, runner
//! wiring). Every check has its own stable code, listed in
//! `docs/diagnostics.md`.

use std::collections::{BTreeMap, BTreeSet};

use splash_seccomp::{Arch, StrictRejection};

use crate::ast::{self, Quantity, Statement};
use crate::diag::{CheckOutcome, Diagnostic};
use crate::model::{
    self, AbsPath, Access, AggregateQuota, BrokerCatalog, CgroupLimits, CgroupPolicy, FileRoot,
    FileRootKind, IoMax, LandlockRunner, LimitRunner, NetworkBroker, PrivateTmp, ProjectQuota,
    ResourceLimits, RuntimeMount, SeccompPolicy, SelectorId, Watchdog,
};
use crate::parse;
use crate::span::{Node, Span};
use crate::units::{self, Dimension, Rate, Value};

/// The only language version.
pub const LANGUAGE_VERSION: &str = "1";

/// Parses and checks one policy source. `file_name` is only used by callers
/// for rendering; diagnostics carry byte spans into `source`.
pub fn check_source(file_name: &str, source: &str) -> CheckOutcome {
    let _ = file_name;
    let parsed = parse::parse(source);
    let mut diagnostics = parsed.diagnostics;
    let mut policy = None;
    if let Some(file) = &parsed.file {
        let parse_errors = diagnostics.iter().any(Diagnostic::is_error);
        let (p, d) = check_file(file, &parsed.failed_keywords, parse_errors);
        policy = p;
        diagnostics.extend(d);
    }
    diagnostics.sort_by(|a, b| {
        (a.span.start, a.span.end, a.severity, a.code).cmp(&(
            b.span.start,
            b.span.end,
            b.severity,
            b.code,
        ))
    });
    if diagnostics.iter().any(Diagnostic::is_error) {
        policy = None;
    }
    CheckOutcome {
        policy,
        diagnostics,
    }
}

/// Checks a policy file as read from disk: the bytes must be UTF-8. Returns
/// the text the diagnostics' spans point into (the file itself, or, when it
/// is not UTF-8, the file with each invalid sequence shown as U+FFFD) and the
/// outcome. A file that is not UTF-8 gets one `splash::parse::invalid-utf8`
/// error at its first invalid sequence and is not checked further: its
/// meaning is unknown.
pub fn check_bytes(file_name: &str, bytes: &[u8]) -> (String, CheckOutcome) {
    let first_invalid = match std::str::from_utf8(bytes) {
        Ok(source) => return (source.to_string(), check_source(file_name, source)),
        Err(e) => e,
    };
    let valid = first_invalid.valid_up_to();
    let bad_len = first_invalid.error_len().unwrap_or(bytes.len() - valid);
    let more = bytes
        .utf8_chunks()
        .filter(|c| !c.invalid().is_empty())
        .count()
        - 1;
    let shown = String::from_utf8_lossy(bytes).into_owned();
    let bad: Vec<String> = bytes[valid..valid + bad_len]
        .iter()
        .map(|b| format!("{b:#04x}"))
        .collect();
    let mut message = format!(
        "the file is not UTF-8: byte{} {} cannot be decoded",
        if bad.len() == 1 { "" } else { "s" },
        bad.join(" ")
    );
    if more > 0 {
        message.push_str(&format!(
            " ({more} more invalid sequence{} after this one)",
            if more == 1 { "" } else { "s" }
        ));
    }
    let diagnostic = Diagnostic::error(
        code("splash::parse::invalid-utf8"),
        // The U+FFFD the invalid bytes are shown as.
        Span::new(valid, valid + '\u{fffd}'.len_utf8()),
        message,
    )
    .with_label("not UTF-8")
    .with_help("save the policy as UTF-8 (for example `iconv -f latin1 -t utf-8`)");
    (
        shown,
        CheckOutcome {
            policy: None,
            diagnostics: vec![diagnostic],
        },
    )
}

/// Checks a parsed file. `failed` names statements that did not parse (and
/// were reported), so they are not also reported missing; `parse_errors`
/// says whether parsing reported any error. Returns the policy when there is
/// no error, and every diagnostic (unsorted).
pub fn check_file(
    file: &ast::File,
    failed: &BTreeSet<&'static str>,
    parse_errors: bool,
) -> (Option<model::Policy>, Vec<Diagnostic>) {
    let mut c = Checker::default();
    let policy = c.check(file, failed);
    let errors = c.diags.iter().any(Diagnostic::is_error);
    // A policy that breaks an invariant although nothing was reported is a
    // checker bug; with errors (or statements that did not parse) it is
    // only a consequence of them.
    if let Some((span, e)) = c.broken.take()
        && !errors
        && !parse_errors
        && failed.is_empty()
    {
        c.push(Diagnostic::error(
            code("splash::check::internal"),
            span,
            format!("internal error: the checked policy breaks an invariant: {e}"),
        ));
    }
    (if errors { None } else { policy }, c.diags)
}

// ------------------------------------------------------------------ helpers

fn code(name: &'static str) -> &'static str {
    name
}

/// Statement keywords that may appear more than once.
const REPEATABLE: &[&str] = &["runtime", "root"];

#[derive(Default)]
struct Checker {
    diags: Vec<Diagnostic>,
    /// A built policy that broke a `Policy` invariant, and the header span.
    broken: Option<(Span, crate::lower::InvariantError)>,
}

/// A path with where it was written and what it is, for cross-checks.
#[derive(Debug, Clone)]
struct Placed {
    path: AbsPath,
    span: Span,
    what: String,
}

#[derive(Debug)]
struct RootInfo {
    root: FileRoot,
    id_span: Span,
    dest_span: Span,
    quota_span: Option<Span>,
    access_span: Option<Span>,
}

#[derive(Debug)]
struct LimitsInfo {
    span: Span,
    keyword: Span,
    runner: Option<Placed>,
    /// `runner PATH` was written with an invalid path (already reported).
    runner_invalid: bool,
    required: Option<Span>,
    limits: ResourceLimits,
}

#[derive(Debug)]
struct LandlockInfo {
    span: Span,
    keyword: Span,
    runner: Option<Placed>,
    /// `runner PATH` was written with an invalid path (already reported).
    runner_invalid: bool,
    allow: Vec<Placed>,
}

#[derive(Debug, Default)]
struct Collected {
    bubblewrap: Option<AbsPath>,
    worker: Option<Placed>,
    worker_args: Vec<String>,
    runtime: Vec<(RuntimeMount, Span)>,
    roots: Vec<RootInfo>,
    tmp: Option<(PrivateTmp, Span)>,
    writes_bounded: Option<Span>,
    host_writes: Option<Span>,
    userns_none: Option<Span>,
    pin_mounts: Option<Span>,
    pin_executables: Option<Span>,
    aggregate_quota: Option<(Option<AggregateQuota>, Span)>,
    tmpfs_aggregate: Option<(Option<u64>, Span)>,
    active_roots: Option<(u16, Span)>,
    seccomp: Option<(SeccompPolicy, Span)>,
    limits: Option<LimitsInfo>,
    landlock: Option<LandlockInfo>,
    combined: Option<Placed>,
    cgroup: Option<(Option<CgroupPolicy>, bool)>,
    watchdog: Option<Watchdog>,
    broker: Option<(NetworkBroker, Span, Span)>,
    /// Destinations of runtime mounts whose source is invalid (already
    /// reported): they still count as covering executables.
    runtime_dests_unchecked: Vec<AbsPath>,
    /// A runtime mount destination was invalid (already reported): which
    /// executables it would cover is unknown, so none is reported outside.
    runtime_dest_invalid: bool,
    /// `runner combined` was written with an invalid path (already reported).
    combined_invalid: bool,
}

/// Compares paths so that a directory sorts immediately before everything
/// below it (`/` ranks lowest).
fn path_key(p: &AbsPath) -> impl Iterator<Item = u8> + '_ {
    p.as_str().bytes().map(|b| if b == b'/' { 0 } else { b })
}

impl Checker {
    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn path(&mut self, s: &Node<String>, what: &str) -> Option<AbsPath> {
        if s.node.chars().any(parse::is_forbidden_in_string) {
            // Already reported by the parser (`control-character`).
            return None;
        }
        match AbsPath::new(s.node.clone()) {
            Ok(p) => Some(p),
            Err(e) => {
                self.push(
                    Diagnostic::error(
                        code("splash::check::invalid-path"),
                        s.span,
                        format!("invalid {what}: {e}"),
                    )
                    .with_label("not an absolute normalized path")
                    .with_help(
                        "write an absolute path such as `/opt/splash/bin/worker`: no `.` or `..` \
                             components, no `//`, no trailing `/`, and not `/` itself",
                    ),
                );
                None
            }
        }
    }

    fn placed(&mut self, s: &Node<String>, what: &str) -> Option<Placed> {
        self.path(s, what).map(|path| Placed {
            path,
            span: s.span,
            what: what.to_string(),
        })
    }

    fn selector(&mut self, s: &Node<String>, what: &str) -> Option<SelectorId> {
        match SelectorId::new(s.node.clone()) {
            Ok(t) => Some(t),
            Err(e) => {
                self.push(
                    Diagnostic::error(
                        code("splash::check::invalid-selector-id"),
                        s.span,
                        format!("invalid {what} `{}`: {e}", s.node),
                    )
                    .with_label("not a selector token")
                    .with_help("ids are 1 to 128 bytes of `a-z`, `0-9`, `.`, `_` and `-`"),
                );
                None
            }
        }
    }

    fn value(&mut self, q: &Node<Quantity>, dim: Dimension, what: &str) -> Option<u64> {
        match units::scalar(q, dim, what) {
            Ok(v) => Some(v),
            Err(d) => {
                self.push(*d);
                None
            }
        }
    }

    /// A value that must not be zero.
    fn nonzero(&mut self, q: &Node<Quantity>, dim: Dimension, what: &str) -> Option<u64> {
        let v = self.value(q, dim, what)?;
        if v == 0 {
            self.push(
                Diagnostic::error(
                    code("splash::check::zero-value"),
                    q.span,
                    format!("{what} is zero"),
                )
                .with_label("zero is not a usable bound here")
                .with_help(format!("give a positive value, or remove {what}")),
            );
            return None;
        }
        Some(v)
    }

    fn duplicate(&mut self, code_: &'static str, span: Span, first: Span, what: &str) {
        self.push(
            Diagnostic::error(code_, span, format!("{what} is given more than once"))
                .with_label("repeated here")
                .with_related(first, "first given here")
                .with_help("keep exactly one; every setting has one place"),
        );
    }

    fn missing_runner(&mut self, keyword: Span, block: &str) {
        self.push(
            Diagnostic::error(
                code("splash::check::missing-runner"),
                keyword,
                format!("`{block}` has no runner to enforce it"),
            )
            .with_label("no runner")
            .with_help(format!(
                "name its runner (`{block} runner \"/opt/splash/bin/...\"`) or add `runner combined \"PATH\"`"
            )),
        );
    }

    // ------------------------------------------------------------- pass 1

    fn check(
        &mut self,
        file: &ast::File,
        failed: &BTreeSet<&'static str>,
    ) -> Option<model::Policy> {
        let policy = &file.policy;
        match &file.version {
            None => self.push(
                Diagnostic::error(
                    code("splash::parse::missing-version"),
                    Span::new(0, 0),
                    "missing `splashpol 1` header",
                )
                .with_label("the file should start here")
                .with_help("start the file with the line `splashpol 1`"),
            ),
            Some(v) if v.node.0 != LANGUAGE_VERSION => self.push(
                Diagnostic::error(
                    code("splash::parse::unsupported-version"),
                    v.span,
                    format!("unsupported language version `{}`", v.node.0),
                )
                .with_label("this compiler reads version 1")
                .with_help("write `splashpol 1`"),
            ),
            Some(_) => {}
        }

        let mut c = Collected::default();
        let mut first_seen: BTreeMap<&'static str, Span> = BTreeMap::new();
        for stmt in &policy.statements {
            let kw = stmt.kind.keyword();
            if !REPEATABLE.contains(&kw) {
                if let Some(&first) = first_seen.get(kw) {
                    self.duplicate(
                        code("splash::check::duplicate-statement"),
                        stmt.keyword,
                        first,
                        &format!("`{kw}`"),
                    );
                    continue;
                }
                first_seen.insert(kw, stmt.keyword);
            }
            self.statement(stmt, &mut c);
        }

        for (kw, example) in [
            ("bubblewrap", "bubblewrap \"/usr/bin/bwrap\""),
            ("worker", "worker \"/opt/splash/bin/worker\""),
        ] {
            if !first_seen.contains_key(kw) && !failed.contains(kw) {
                self.push(
                    Diagnostic::error(
                        code("splash::check::missing-statement"),
                        policy.header,
                        format!("policy has no `{kw}` statement"),
                    )
                    .with_label(format!("`{kw}` is required"))
                    .with_help(format!("add e.g. `{example}`")),
                );
            }
        }

        self.mount_layout(&c);
        self.executables(&c);
        self.runners(&c);
        self.storage(&c);
        self.ephemeral(&c);
        self.hardening(&c);

        self.build(policy, c)
    }

    fn statement(&mut self, stmt: &ast::Stmt, c: &mut Collected) {
        match &stmt.kind {
            Statement::Bubblewrap { path } => c.bubblewrap = self.path(path, "`bubblewrap` path"),
            Statement::Worker { path, args } => {
                c.worker = self.placed(path, "`worker`");
                if let Some(args) = args {
                    if args.node.is_empty() {
                        self.push(
                            Diagnostic::error(
                                code("splash::check::empty-list"),
                                args.span,
                                "`args` list is empty",
                            )
                            .with_label("no arguments")
                            .with_help(
                                "remove `args []`; without `args` the worker gets no arguments",
                            ),
                        );
                    }
                    // A NUL byte (which `execve` cannot pass) is a control
                    // character, reported by the parser.
                    c.worker_args = args.node.iter().map(|a| a.node.clone()).collect();
                }
            }
            Statement::Runtime {
                source,
                destination,
            } => {
                let s = self.path(source, "runtime mount source");
                let d = self.path(destination, "runtime mount destination");
                match (s, d) {
                    (Some(source), Some(dest)) => c.runtime.push((
                        RuntimeMount {
                            source,
                            destination: dest,
                        },
                        destination.span,
                    )),
                    (None, Some(dest)) => c.runtime_dests_unchecked.push(dest),
                    (_, None) => c.runtime_dest_invalid = true,
                }
            }
            Statement::Root {
                id,
                destination,
                kind,
            } => self.root(id, destination, kind, c),
            Statement::Tmp(t) => {
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
            Statement::WritesBounded => c.writes_bounded = Some(stmt.span),
            Statement::HostWritesUnbounded => c.host_writes = Some(stmt.span),
            Statement::UserNamespacesNone => c.userns_none = Some(stmt.span),
            Statement::Pin { items } => {
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
                        self.duplicate(
                            code("splash::check::duplicate-entry"),
                            item.span,
                            first,
                            what,
                        );
                    } else {
                        *slot = Some(item.span);
                    }
                }
            }
            Statement::QuotaAggregate { bytes, inodes } => {
                let b = self.nonzero(bytes, Dimension::Bytes, "the aggregate quota `bytes`");
                let i = self.nonzero(inodes, Dimension::Count, "the aggregate quota `inodes`");
                let q = match (b, i) {
                    (Some(max_bytes), Some(max_inodes)) => Some(AggregateQuota {
                        max_bytes,
                        max_inodes,
                    }),
                    _ => None,
                };
                c.aggregate_quota = Some((q, stmt.span));
            }
            Statement::TmpfsAggregate { size } => {
                let v = self.nonzero(size, Dimension::Bytes, "`tmpfs aggregate`");
                c.tmpfs_aggregate = Some((v, stmt.span));
            }
            Statement::ActiveRoots { max } => {
                if let Some(v) = self.value(max, Dimension::Count, "`active-roots max`") {
                    if v > u64::from(model::MAX_ACTIVE_FILE_ROOTS_CEILING) {
                        self.push(
                            Diagnostic::error(
                                code("splash::check::active-roots-too-large"),
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
            Statement::Seccomp(s) => {
                let p = match s {
                    ast::Seccomp::Off => Some(SeccompPolicy::Off),
                    ast::Seccomp::DenyKnownEscapeSurface => {
                        Some(SeccompPolicy::DenyKnownEscapeSurface)
                    }
                    ast::Seccomp::StrictAllowlist {
                        syscalls,
                        recovered,
                    } => self
                        .strict_allowlist(stmt.keyword, syscalls, *recovered)
                        .map(|syscalls| SeccompPolicy::StrictAllowlist { syscalls }),
                };
                if let Some(p) = p {
                    c.seccomp = Some((p, stmt.span));
                }
            }
            Statement::Limits {
                runner,
                required,
                entries,
                recovered,
            } => {
                let placed = runner.as_ref().map(|r| self.placed(r, "limit runner"));
                let runner_invalid = matches!(placed, Some(None));
                let runner = placed.flatten();
                let limits = self.limits(entries);
                if limits.is_empty() && entries.is_empty() && !recovered {
                    self.push(
                        Diagnostic::error(
                            code("splash::check::empty-limits"),
                            stmt.keyword,
                            "`limits` sets no limit",
                        )
                        .with_label("empty block")
                        .with_help("add a limit such as `cpu 30 s`, or remove the block"),
                    );
                }
                c.limits = Some(LimitsInfo {
                    span: stmt.span,
                    keyword: stmt.keyword,
                    runner,
                    runner_invalid,
                    required: required.as_ref().map(|r| r.span),
                    limits,
                });
            }
            Statement::Landlock {
                runner, allow_exec, ..
            } => {
                let placed = runner.as_ref().map(|r| self.placed(r, "Landlock runner"));
                let runner_invalid = matches!(placed, Some(None));
                let runner = placed.flatten();
                let allow = self.allow_exec(allow_exec);
                c.landlock = Some(LandlockInfo {
                    span: stmt.span,
                    keyword: stmt.keyword,
                    runner,
                    runner_invalid,
                    allow,
                });
            }
            Statement::CombinedRunner { path } => {
                c.combined = self.placed(path, "combined runner");
                c.combined_invalid = c.combined.is_none();
            }
            Statement::Cgroup {
                parent,
                runner,
                required,
                entries,
                recovered,
            } => {
                let parent = self.path(parent, "cgroup parent");
                let runner = self.path(runner, "cgroup runner");
                let limits = self.cgroup_limits(stmt.keyword, entries, *recovered);
                let policy = match (parent, runner, limits) {
                    (Some(parent), Some(runner), Some((limits, join_timeout_ms))) => {
                        Some(CgroupPolicy {
                            parent,
                            runner,
                            limits,
                            join_timeout_ms,
                        })
                    }
                    _ => None,
                };
                c.cgroup = Some((policy, required.is_some()));
            }
            Statement::Watchdog { session, call } => {
                let s = self.nonzero(
                    session,
                    Dimension::Duration,
                    "the watchdog `session` deadline",
                );
                let k = call.as_ref().map(|q| {
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
                            code("splash::check::call-deadline-exceeds-session"),
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
            Statement::NetworkBroker {
                catalog,
                parent,
                destination,
                ids,
            } => {
                let p = self.path(parent, "network broker parent");
                let d = self.path(destination, "network broker destination");
                let mut set = BTreeSet::new();
                let mut first: BTreeMap<&str, Span> = BTreeMap::new();
                if ids.node.is_empty() {
                    self.push(
                        Diagnostic::error(
                            code("splash::check::empty-list"),
                            ids.span,
                            "the network broker serves no ids",
                        )
                        .with_label("empty list")
                        .with_help(
                            "list the exact network-origin ids, e.g. `ids [\"api.search\"]`",
                        ),
                    );
                }
                for id in &ids.node {
                    if let Some(&f) = first.get(id.node.as_str()) {
                        self.duplicate(
                            code("splash::check::duplicate-entry"),
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
    }

    fn tmpfs_size(&mut self, q: &Node<Quantity>, what: &str) -> Option<u64> {
        let v = self.value(q, Dimension::Bytes, what)?;
        if v == 0 || v > model::MAX_TMPFS_BYTES {
            self.push(
                Diagnostic::error(
                    code("splash::check::tmpfs-size-out-of-range"),
                    q.span,
                    format!("{what} must be from 1 B to 2^63 - 1 bytes"),
                )
                .with_label(if v == 0 {
                    "zero would mean no bound"
                } else {
                    "larger than Bubblewrap accepts"
                })
                .with_help("give a positive size such as `64 MiB`"),
            );
            return None;
        }
        Some(v)
    }

    fn root(
        &mut self,
        id: &Node<String>,
        destination: &Node<String>,
        kind: &ast::RootKind,
        c: &mut Collected,
    ) {
        let sel = self.selector(id, "root id");
        let dest = self.path(destination, "root destination");
        let mut quota_span = None;
        let mut access_span = None;
        let kind = match kind {
            ast::RootKind::Host {
                source,
                access,
                quota,
            } => {
                let src = self.path(source, "root source");
                access_span = Some(access.span);
                let access_v = match access.node {
                    ast::Access::ReadOnly => Access::ReadOnly,
                    ast::Access::ReadWrite => Access::ReadWrite,
                };
                let mut q = None;
                let mut quota_ok = true;
                if let Some(quota) = quota {
                    quota_span = Some(quota.span);
                    if access_v == Access::ReadOnly {
                        self.push(
                            Diagnostic::error(
                                code("splash::check::quota-on-read-only"),
                                quota.span,
                                format!("read-only root `{}` has a quota", id.node),
                            )
                            .with_label("a quota bounds writes; this root cannot be written")
                            .with_related(access.span, "read-only here")
                            .with_help("remove the quota, or make the root `read-write`"),
                        );
                    }
                    q = self.project_quota(&quota.node);
                    quota_ok = q.is_some();
                }
                match (src, quota_ok) {
                    (Some(source), true) => Some(FileRootKind::Host {
                        source,
                        access: access_v,
                        quota: q,
                    }),
                    _ => None,
                }
            }
            ast::RootKind::Tmpfs { size } => self
                .tmpfs_size(size, "tmpfs root `size`")
                .map(|size_bytes| FileRootKind::Ephemeral { size_bytes }),
        };
        // Duplicate ids: one namespace for host and ephemeral roots.
        if let Some(prev) = c.roots.iter().find(|r| r.root.id.as_str() == id.node) {
            let first = prev.id_span;
            self.push(
                Diagnostic::error(
                    code("splash::check::duplicate-root-id"),
                    id.span,
                    format!("root id `{}` is registered twice", id.node),
                )
                .with_label("second registration")
                .with_related(first, "first registered here")
                .with_help("host-backed and tmpfs roots share one id namespace; give each root a distinct id"),
            );
            return;
        }
        if let (Some(id_t), Some(dest), Some(kind)) = (sel, dest, kind) {
            c.roots.push(RootInfo {
                root: FileRoot {
                    id: id_t,
                    destination: dest,
                    kind,
                },
                id_span: id.span,
                dest_span: destination.span,
                quota_span,
                access_span,
            });
        }
    }

    fn project_quota(&mut self, q: &ast::Quota) -> Option<ProjectQuota> {
        let project = match units::integer(&q.project) {
            Ok(v) => {
                match u32::try_from(v) {
                    Ok(0) => {
                        self.push(
                        Diagnostic::error(code("splash::check::zero-project-id"), q.project.span, "project id is 0")
                            .with_label("project 0 is the default project of every file")
                            .with_help("use the nonzero project id the host provisioned for this directory"),
                    );
                        None
                    }
                    Ok(v) => Some(v),
                    Err(_) => {
                        self.push(
                            Diagnostic::error(
                                code("splash::check::number-overflow"),
                                q.project.span,
                                format!("project id `{}` is too large", q.project.node.0),
                            )
                            .with_label("project ids are 32-bit")
                            .with_help("use a project id up to 4294967295"),
                        );
                        None
                    }
                }
            }
            Err(d) => {
                self.push(*d);
                None
            }
        };
        let bytes = self.nonzero(&q.bytes, Dimension::Bytes, "the quota `bytes` ceiling");
        let inodes = self.nonzero(&q.inodes, Dimension::Count, "the quota `inodes` ceiling");
        Some(ProjectQuota {
            project_id: project?,
            max_bytes: bytes?,
            max_inodes: inodes?,
        })
    }

    fn strict_allowlist(
        &mut self,
        keyword: Span,
        syscalls: &[Node<String>],
        recovered: bool,
    ) -> Option<BTreeSet<String>> {
        let mut ok = true;
        if syscalls.is_empty() {
            if !recovered {
                self.push(
                    Diagnostic::error(
                        code("splash::check::empty-allowlist"),
                        keyword,
                        "the strict allowlist is empty",
                    )
                    .with_label("no syscall allowed")
                    .with_help("list every syscall the worker needs, including `execve`"),
                );
            }
            return None;
        }
        if syscalls.len() > model::MAX_STRICT_SYSCALLS {
            self.push(
                Diagnostic::error(
                    code("splash::check::allowlist-too-long"),
                    syscalls[model::MAX_STRICT_SYSCALLS].span,
                    format!(
                        "the strict allowlist has {} entries; the maximum is 512",
                        syscalls.len()
                    ),
                )
                .with_label("the 513th entry")
                .with_help("remove entries the worker does not need"),
            );
            ok = false;
        }
        let mut first: BTreeMap<&str, Span> = BTreeMap::new();
        let mut set = BTreeSet::new();
        for s in syscalls {
            let name = s.node.as_str();
            if let Some(&f) = first.get(name) {
                self.duplicate(
                    code("splash::check::duplicate-syscall"),
                    s.span,
                    f,
                    &format!("syscall `{name}`"),
                );
                ok = false;
                continue;
            }
            first.insert(name, s.span);
            // Architectures without this syscall (no allocation on the common path).
            let mut missing = [false; Arch::ALL.len()];
            for (slot, &arch) in missing.iter_mut().zip(Arch::ALL.iter()) {
                *slot = splash_seccomp::syscall_number(arch, name).is_none();
            }
            if missing.iter().all(|&m| m) {
                let mut d = Diagnostic::error(
                    code("splash::check::unknown-syscall"),
                    s.span,
                    format!("unknown syscall `{name}`"),
                )
                .with_label("not a syscall on x86_64, aarch64 or riscv64");
                if let Some(sug) = splash_seccomp::suggest_syscall(name) {
                    d = d.with_help(format!("did you mean `{sug}`?"));
                }
                self.push(d);
                ok = false;
                continue;
            }
            match splash_seccomp::strict_rejection(name) {
                Some(StrictRejection::Clone3) => {
                    self.push(
                        Diagnostic::error(
                            code("splash::check::allowlist-clone3"),
                            s.span,
                            "`clone3` cannot be allowed in a strict allowlist",
                        )
                        .with_label("its flags are in memory the filter cannot inspect")
                        .with_help("remove `clone3`; the filter answers it with ENOSYS so libc falls back to `clone`"),
                    );
                    ok = false;
                    continue;
                }
                Some(StrictRejection::FixedGuard) => {
                    self.push(
                        Diagnostic::error(
                            code("splash::check::allowlist-denied-syscall"),
                            s.span,
                            format!("`{name}` is denied by a fixed escape-surface guard"),
                        )
                        .with_label("the strict filter always denies it")
                        .with_help(format!(
                            "remove `{name}`; mount, kernel-control, module, tracing, cross-process-memory, \
                             keyring and personality calls are never allowed"
                        )),
                    );
                    ok = false;
                    continue;
                }
                None => {}
            }
            if let Some(reviewed) = splash_seccomp::strict_listing_warning(name) {
                self.push(
                    Diagnostic::warning(
                        code("splash::check::allowlist-guarded-syscall"),
                        s.span,
                        format!(
                            "`{name}` is on the escape-surface guard list ({}); listing it allows it",
                            reviewed.class.name()
                        ),
                    )
                    .with_label(format!("guarded: {}", reviewed.reason))
                    .with_help(format!(
                        "keep `{name}` only if the worker needs it; unlisted, it kills the process"
                    )),
                );
            }
            if missing.iter().any(|&m| m) {
                let missing: Vec<&str> = Arch::ALL
                    .iter()
                    .zip(missing)
                    .filter(|&(_, m)| m)
                    .map(|(a, _)| a.name())
                    .collect();
                self.push(
                    Diagnostic::warning(
                        code("splash::check::syscall-missing-on-arch"),
                        s.span,
                        format!("`{name}` does not exist on {}", missing.join(", ")),
                    )
                    .with_label("skipped on those architectures")
                    .with_help("fine for a single-architecture deployment; otherwise list the equivalent call too"),
                );
            }
            set.insert(name.to_string());
        }
        // A word of the list that did not parse is already reported and may
        // have been meant as `execve` (`execve,`): no follow-on error.
        if !first.contains_key("execve") && !recovered {
            self.push(
                Diagnostic::error(
                    code("splash::check::allowlist-missing-execve"),
                    keyword,
                    "the strict allowlist does not contain `execve`",
                )
                .with_label("the fixed launch chain must exec the worker after the filter")
                .with_help("add `execve` to the list"),
            );
            ok = false;
        }
        ok.then_some(set)
    }

    fn limits(&mut self, entries: &[Node<ast::LimitEntry>]) -> ResourceLimits {
        let mut l = ResourceLimits::default();
        let mut first: BTreeMap<&'static str, Span> = BTreeMap::new();
        for e in entries {
            let kind = e.node.kind.node;
            let kw = kind.keyword();
            if let Some(&f) = first.get(kw) {
                self.duplicate(
                    code("splash::check::duplicate-entry"),
                    e.node.kind.span,
                    f,
                    &format!("`{kw}`"),
                );
                continue;
            }
            first.insert(kw, e.node.kind.span);
            let what = format!("`{kw}`");
            let q = &e.node.value;
            match kind {
                ast::LimitKind::Cpu => {
                    if let Some(ms) = self.nonzero(q, Dimension::Duration, &what) {
                        if ms % 1000 != 0 {
                            self.push(
                                Diagnostic::error(
                                    code("splash::check::inexact-duration"),
                                    q.span,
                                    "`cpu` is counted in whole seconds",
                                )
                                .with_label("not a whole number of seconds")
                                .with_help(
                                    "RLIMIT_CPU has one-second granularity; write e.g. `30 s`",
                                ),
                            );
                        } else {
                            l.cpu_seconds = Some(ms / 1000);
                        }
                    }
                }
                ast::LimitKind::AddressSpace => {
                    l.address_space_bytes = self.nonzero(q, Dimension::Bytes, &what)
                }
                ast::LimitKind::Processes => {
                    l.process_count = self.nonzero(q, Dimension::Count, &what)
                }
                ast::LimitKind::OpenFiles => {
                    l.open_files = self.nonzero(q, Dimension::Count, &what)
                }
                ast::LimitKind::FileSize => {
                    l.file_size_bytes = self.nonzero(q, Dimension::Bytes, &what)
                }
            }
        }
        l
    }

    fn allow_exec(&mut self, entries: &[Node<String>]) -> Vec<Placed> {
        let mut out: Vec<Placed> = Vec::new();
        let mut first: BTreeMap<&str, Span> = BTreeMap::new();
        for (i, e) in entries.iter().enumerate() {
            if i == model::MAX_LANDLOCK_TARGETS {
                self.push(
                    Diagnostic::error(
                        code("splash::check::too-many-landlock-targets"),
                        e.span,
                        format!(
                            "`landlock` lists {} `allow-exec` targets; the maximum is 32",
                            entries.len()
                        ),
                    )
                    .with_label("the 33rd target")
                    .with_help("keep the executable allowlist minimal"),
                );
            }
            if let Some(&f) = first.get(e.node.as_str()) {
                self.duplicate(
                    code("splash::check::duplicate-landlock-target"),
                    e.span,
                    f,
                    &format!("`allow-exec \"{}\"`", e.node),
                );
                continue;
            }
            first.insert(&e.node, e.span);
            if let Some(p) = self.placed(e, "`allow-exec` target") {
                out.push(p);
            }
        }
        out
    }

    /// Returns the limits and the join timeout, or `None` when something was wrong.
    fn cgroup_limits(
        &mut self,
        keyword: Span,
        entries: &[Node<ast::CgroupEntry>],
        recovered: bool,
    ) -> Option<(CgroupLimits, u64)> {
        let mut l = CgroupLimits::default();
        let mut join = None;
        let mut ok = true;
        let mut first: BTreeMap<&'static str, Span> = BTreeMap::new();
        let mut devices: BTreeMap<(u32, u32), Span> = BTreeMap::new();
        let mut any_io = false;
        for e in entries {
            match &e.node {
                ast::CgroupEntry::Value { kind, value } => {
                    let kw = kind.node.keyword();
                    if let Some(&f) = first.get(kw) {
                        self.duplicate(
                            code("splash::check::duplicate-entry"),
                            kind.span,
                            f,
                            &format!("`{kw}`"),
                        );
                        ok = false;
                        continue;
                    }
                    first.insert(kw, kind.span);
                    let what = format!("`{kw}`");
                    let v = match kind.node {
                        ast::CgroupKind::Cpu => self
                            .nonzero(value, Dimension::Duration, &what)
                            .and_then(|ms| {
                                let micros = ms.checked_mul(1000);
                                if micros.is_none() {
                                    self.push(
                                        Diagnostic::error(
                                            code("splash::check::number-overflow"),
                                            value.span,
                                            "`cpu` quota is too large",
                                        )
                                        .with_label("overflows in microseconds")
                                        .with_help("give a smaller quota"),
                                    );
                                }
                                micros
                            }),
                        ast::CgroupKind::Memory => self.nonzero(value, Dimension::Bytes, &what),
                        ast::CgroupKind::Swap => self.value(value, Dimension::Bytes, &what),
                        ast::CgroupKind::Pids => self.nonzero(value, Dimension::Count, &what),
                        ast::CgroupKind::JoinTimeout => {
                            self.nonzero(value, Dimension::Duration, &what)
                        }
                    };
                    let Some(v) = v else {
                        ok = false;
                        continue;
                    };
                    match kind.node {
                        ast::CgroupKind::Cpu => l.cpu_quota_micros = Some(v),
                        ast::CgroupKind::Memory => l.memory_max_bytes = Some(v),
                        ast::CgroupKind::Swap => l.memory_swap_max_bytes = Some(v),
                        ast::CgroupKind::Pids => l.pids_max = Some(v),
                        ast::CgroupKind::JoinTimeout => join = Some(v),
                    }
                }
                ast::CgroupEntry::Io {
                    major,
                    minor,
                    limits,
                    recovered: io_recovered,
                } => {
                    any_io = true;
                    let dev_span = major.span.join(minor.span);
                    let ma = self.device_number(major);
                    let mi = self.device_number(minor);
                    let io = self.io_limits(dev_span, limits, *io_recovered);
                    let (Some(major), Some(minor), Some((rbps, wbps, riops, wiops))) = (ma, mi, io)
                    else {
                        ok = false;
                        continue;
                    };
                    if let Some(&f) = devices.get(&(major, minor)) {
                        self.push(
                            Diagnostic::error(
                                code("splash::check::duplicate-io-device"),
                                dev_span,
                                format!("device `{major}:{minor}` has two `io` entries"),
                            )
                            .with_label("second entry")
                            .with_related(f, "first entry")
                            .with_help("put all limits for one device in one `io` block"),
                        );
                        ok = false;
                        continue;
                    }
                    devices.insert((major, minor), dev_span);
                    l.io_max.push(IoMax {
                        major,
                        minor,
                        rbps,
                        wbps,
                        riops,
                        wiops,
                    });
                }
            }
        }
        l.io_max.sort_by_key(|io| (io.major, io.minor));
        let has_limit = l.cpu_quota_micros.is_some()
            || l.memory_max_bytes.is_some()
            || l.memory_swap_max_bytes.is_some()
            || l.pids_max.is_some()
            || !l.io_max.is_empty();
        if !has_limit && ok && !recovered && !any_io {
            self.push(
                Diagnostic::error(
                    code("splash::check::cgroup-without-limit"),
                    keyword,
                    "the cgroup policy sets no controller limit",
                )
                .with_label("no `cpu`, `memory`, `swap`, `pids` or `io` limit")
                .with_help("add at least one finite limit such as `memory 512 MiB`"),
            );
            ok = false;
        }
        let join = join.unwrap_or(model::DEFAULT_CGROUP_JOIN_TIMEOUT_MS);
        ok.then_some((l, join))
    }

    fn device_number(&mut self, n: &Node<ast::NumberLit>) -> Option<u32> {
        let v = units::integer(n).map_err(|d| self.push(*d)).ok()?;
        match u32::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => {
                self.push(
                    Diagnostic::error(
                        code("splash::check::number-overflow"),
                        n.span,
                        format!("device number `{}` is too large", n.node.0),
                    )
                    .with_label("device numbers are 32-bit")
                    .with_help("use the `MAJOR:MINOR` numbers shown by `lsblk`"),
                );
                None
            }
        }
    }

    #[expect(
        clippy::type_complexity,
        reason = "the four io.max keys, in kernel order"
    )]
    fn io_limits(
        &mut self,
        dev_span: Span,
        limits: &[Node<ast::IoLimit>],
        recovered: bool,
    ) -> Option<(Option<u64>, Option<u64>, Option<u64>, Option<u64>)> {
        let (mut rbps, mut wbps, mut riops, mut wiops) = (None, None, None, None);
        let mut first: BTreeMap<&'static str, Span> = BTreeMap::new();
        let mut ok = true;
        for e in limits {
            let dir = e.node.direction.node;
            let dir_kw = match dir {
                ast::IoDirection::Read => "read",
                ast::IoDirection::Write => "write",
            };
            match units::quantity(&e.node.value, Dimension::Rate, &format!("`{dir_kw}`")) {
                Err(d) => {
                    self.push(*d);
                    ok = false;
                }
                Ok(Value::Rate(r)) => {
                    let (key, slot, v) = match (dir, r) {
                        (ast::IoDirection::Read, Rate::BytesPerSecond(v)) => ("rbps", &mut rbps, v),
                        (ast::IoDirection::Write, Rate::BytesPerSecond(v)) => {
                            ("wbps", &mut wbps, v)
                        }
                        (ast::IoDirection::Read, Rate::Iops(v)) => ("riops", &mut riops, v),
                        (ast::IoDirection::Write, Rate::Iops(v)) => ("wiops", &mut wiops, v),
                    };
                    if let Some(&f) = first.get(key) {
                        self.duplicate(
                            code("splash::check::duplicate-entry"),
                            e.span,
                            f,
                            &format!(
                                "the `{dir_kw}` {} limit",
                                if key.ends_with("iops") {
                                    "iops"
                                } else {
                                    "byte-rate"
                                }
                            ),
                        );
                        ok = false;
                        continue;
                    }
                    first.insert(key, e.span);
                    *slot = Some(v);
                }
                Ok(Value::Scalar(_)) => ok = false,
            }
        }
        if limits.is_empty() && !recovered {
            self.push(
                Diagnostic::error(
                    code("splash::check::empty-io"),
                    dev_span,
                    "this `io` entry sets no limit",
                )
                .with_label("empty block")
                .with_help("add e.g. `read 2 MiB/s` or `write 120 iops`, or remove the entry"),
            );
            ok = false;
        }
        ok.then_some((rbps, wbps, riops, wiops))
    }

    // ------------------------------------------------------------- pass 2

    /// Worker-visible destinations may not overlap each other, `/proc`,
    /// `/dev`, or an enabled private `/tmp`. Sorted with a stack of enclosing
    /// destinations: O(n log n) for n destinations.
    fn mount_layout(&mut self, c: &Collected) {
        struct Dest<'a> {
            path: &'a AbsPath,
            span: Option<Span>,
            what: String,
            order: usize,
        }
        let proc_ = AbsPath::new("/proc").ok();
        let dev = AbsPath::new("/dev").ok();
        let tmp = AbsPath::new("/tmp").ok();
        let mut dests: Vec<Dest<'_>> = Vec::new();
        for (p, what) in [(&proc_, "`/proc`"), (&dev, "`/dev`")] {
            if let Some(p) = p {
                dests.push(Dest {
                    path: p,
                    span: None,
                    what: format!("the sandbox's {what}"),
                    order: 0,
                });
            }
        }
        let mut tmp_span = None;
        if let (Some(t), Some((mode, span))) = (&tmp, &c.tmp)
            && *mode != PrivateTmp::Off
        {
            tmp_span = Some(*span);
            dests.push(Dest {
                path: t,
                span: None,
                what: "the private `/tmp`".to_string(),
                order: 0,
            });
        }
        for (i, (m, span)) in c.runtime.iter().enumerate() {
            dests.push(Dest {
                path: &m.destination,
                span: Some(*span),
                what: format!("runtime mount `{}`", m.destination),
                order: i + 1,
            });
        }
        for r in &c.roots {
            dests.push(Dest {
                path: &r.root.destination,
                span: Some(r.dest_span),
                what: format!("root `{}`", r.root.id),
                order: r.dest_span.start.saturating_add(1),
            });
        }
        if let Some((b, span, _)) = &c.broker {
            dests.push(Dest {
                path: &b.destination,
                span: Some(*span),
                what: "the network broker mount".to_string(),
                order: span.start.saturating_add(1),
            });
        }
        dests.sort_by(|a, b| {
            path_key(a.path)
                .cmp(path_key(b.path))
                .then(a.order.cmp(&b.order))
        });
        let mut stack: Vec<usize> = Vec::new();
        for i in 0..dests.len() {
            while let Some(&top) = stack.last() {
                if dests[i].path.is_within(dests[top].path) {
                    break;
                }
                stack.pop();
            }
            if let Some(&top) = stack.last() {
                let (outer, inner) = (&dests[top], &dests[i]);
                if let Some(span) = inner.span {
                    let relation = if inner.path == outer.path {
                        "is the same path as"
                    } else {
                        "lies inside"
                    };
                    let mut d = Diagnostic::error(
                        code("splash::check::overlapping-mount"),
                        span,
                        format!("destination `{}` {relation} {}", inner.path, outer.what),
                    )
                    .with_label(format!("{} here", inner.what))
                    .with_help("worker-visible destinations must not overlap; move one of them to a separate directory");
                    match outer.span {
                        Some(s) => d = d.with_related(s, outer.what.clone()),
                        None => {
                            if outer.path.as_str() == "/tmp"
                                && let Some(t) = tmp_span
                            {
                                d = d.with_related(t, "private `/tmp` enabled here");
                            }
                        }
                    }
                    self.push(d);
                }
            }
            stack.push(i);
        }
    }

    /// The worker, the limit, Landlock and combined runners and every Landlock
    /// target must lie inside a read-only runtime mount.
    fn executables(&mut self, c: &Collected) {
        let mut execs: Vec<&Placed> = Vec::new();
        execs.extend(c.worker.as_ref());
        if let Some(l) = &c.limits {
            execs.extend(l.runner.as_ref());
        }
        if let Some(l) = &c.landlock {
            execs.extend(l.runner.as_ref());
            execs.extend(l.allow.iter());
        }
        execs.extend(c.combined.as_ref());
        if c.runtime_dest_invalid {
            // The invalid destination is reported; whether it would cover
            // these paths is unknown, so reporting them would only repeat it.
            return;
        }
        for e in execs {
            if c.runtime
                .iter()
                .map(|(m, _)| &m.destination)
                .chain(&c.runtime_dests_unchecked)
                .any(|d| e.path.is_within(d))
            {
                continue;
            }
            let in_root = c
                .roots
                .iter()
                .find(|r| e.path.is_within(&r.root.destination));
            let mut d = Diagnostic::error(
                code("splash::check::executable-outside-runtime"),
                e.span,
                format!("{} `{}` is not inside a read-only runtime mount", e.what, e.path),
            )
            .with_help(
                "add a `runtime \"HOST\" at \"DIR\"` mount whose destination contains it; file roots and \
                 tmpfs cannot provide executables",
            );
            if let Some(r) = in_root {
                d = d
                    .with_label(format!("inside root `{}`", r.root.id))
                    .with_related(r.dest_span, format!("root `{}`", r.root.id));
            } else {
                d = d.with_label("no runtime mount covers this path");
            }
            self.push(d);
        }
    }

    fn runners(&mut self, c: &Collected) {
        // Distinct worker and runner paths.
        let mut named: Vec<&Placed> = Vec::new();
        named.extend(c.worker.as_ref());
        if let Some(l) = &c.limits {
            named.extend(l.runner.as_ref());
        }
        if let Some(l) = &c.landlock {
            named.extend(l.runner.as_ref());
        }
        named.extend(c.combined.as_ref());
        for i in 0..named.len() {
            if let Some(prev) = named[..i].iter().find(|p| p.path == named[i].path) {
                self.push(
                    Diagnostic::error(
                        code("splash::check::runner-path-conflict"),
                        named[i].span,
                        format!("{} uses the same path as {}", named[i].what, prev.what),
                    )
                    .with_label("same path")
                    .with_related(prev.span, prev.what.clone())
                    .with_help("the worker and each runner must be distinct executables"),
                );
            }
        }

        let combined = c.combined.is_some();
        if let Some(l) = &c.limits {
            match (&l.runner, combined) {
                (Some(r), true) => self.push(
                    Diagnostic::error(
                        code("splash::check::runner-conflict"),
                        r.span,
                        "`limits` names its own runner while `runner combined` is set",
                    )
                    .with_label("separate runner")
                    .with_related(
                        c.combined.as_ref().map_or(l.span, |p| p.span),
                        "combined runner",
                    )
                    .with_help(
                        "with `runner combined`, write `limits { ... }` without `runner PATH`",
                    ),
                ),
                (None, false) if !l.runner_invalid && !c.combined_invalid => {
                    self.missing_runner(
                        l.required.map_or(l.keyword, |r| l.keyword.join(r)),
                        "limits",
                    );
                }
                _ => {}
            }
        }
        if let Some(l) = &c.landlock {
            match (&l.runner, combined) {
                (Some(r), true) => self.push(
                    Diagnostic::error(
                        code("splash::check::runner-conflict"),
                        r.span,
                        "`landlock` names its own runner while `runner combined` is set",
                    )
                    .with_label("separate runner")
                    .with_related(
                        c.combined.as_ref().map_or(l.span, |p| p.span),
                        "combined runner",
                    )
                    .with_help(
                        "with `runner combined`, write `landlock { ... }` without `runner PATH`",
                    ),
                ),
                (None, false) if !l.runner_invalid && !c.combined_invalid => {
                    self.missing_runner(l.keyword, "landlock");
                }
                _ => {}
            }
            // Targets already on the list.
            let auto: Vec<&Placed> = c
                .worker
                .iter()
                .chain(c.limits.as_ref().and_then(|l| l.runner.as_ref()))
                .collect();
            // The runner that applies the allowlist does so before any exec,
            // so it never needs to be on it.
            let applier = l.runner.as_ref().or(c.combined.as_ref());
            for t in &l.allow {
                if let Some(a) = applier.filter(|a| a.path == t.path) {
                    self.push(
                        Diagnostic::warning(
                            code("splash::check::redundant-landlock-target"),
                            t.span,
                            format!(
                                "`{}` is the {}, which applies the allowlist and needs no `allow-exec`",
                                t.path, a.what
                            ),
                        )
                        .with_label("redundant")
                        .with_related(a.span, a.what.clone())
                        .with_help(
                            "remove this `allow-exec`: it only lets the worker execute the runner again",
                        ),
                    );
                } else if let Some(a) = auto.iter().find(|a| a.path == t.path) {
                    self.push(
                        Diagnostic::warning(
                            code("splash::check::redundant-landlock-target"),
                            t.span,
                            format!(
                                "`{}` is the {} and is allowed automatically",
                                t.path, a.what
                            ),
                        )
                        .with_label("redundant")
                        .with_related(a.span, a.what.clone())
                        .with_help("remove this `allow-exec`"),
                    );
                }
            }
        }
        if let Some(p) = &c.combined {
            let strict = matches!(c.seccomp, Some((SeccompPolicy::StrictAllowlist { .. }, _)));
            if c.limits.is_none() && c.landlock.is_none() && !strict {
                self.push(
                    Diagnostic::warning(
                        code("splash::check::idle-combined-runner"),
                        p.span,
                        "the combined runner has nothing to apply",
                    )
                    .with_label("no `limits`, `landlock` or strict seccomp allowlist")
                    .with_help("add the controls it should apply, or remove `runner combined`"),
                );
            }
        }
    }

    /// Project quotas, read-write roots, the aggregate quota.
    fn storage(&mut self, c: &Collected) {
        let quota_roots: Vec<&RootInfo> = c
            .roots
            .iter()
            .filter(|r| matches!(r.root.kind, FileRootKind::Host { quota: Some(_), .. }))
            .collect();
        if let Some(first) = quota_roots.first() {
            let at = first.quota_span.unwrap_or(first.dest_span);
            let requirements: [(bool, &'static str, &str, &str); 3] = [
                (
                    c.pin_mounts.is_some(),
                    "splash::check::quota-requires-pinned-mounts",
                    "a quota root needs `pin mounts`",
                    "add `pin mounts` so the checked directory is the one Bubblewrap mounts",
                ),
                (
                    c.userns_none.is_some(),
                    "splash::check::quota-requires-no-user-namespaces",
                    "a quota root needs `user-namespaces none`",
                    "add `user-namespaces none` so the worker cannot change the project id",
                ),
                (
                    c.aggregate_quota.is_some(),
                    "splash::check::quota-requires-aggregate",
                    "a quota root needs `quota aggregate`",
                    "add `quota aggregate bytes SIZE inodes COUNT` covering every quota root",
                ),
            ];
            for (present, code_, msg, help) in requirements {
                if !present {
                    self.push(
                        Diagnostic::error(code_, at, msg)
                            .with_label(format!("quota on root `{}`", first.root.id))
                            .with_help(help),
                    );
                }
            }
        }

        // Aggregate: each distinct project id counted once, at its largest ceiling.
        let mut per_project: BTreeMap<u32, (u64, u64, Span)> = BTreeMap::new();
        for r in &quota_roots {
            if let FileRootKind::Host { quota: Some(q), .. } = &r.root.kind {
                let span = r.quota_span.unwrap_or(r.dest_span);
                match per_project.get_mut(&q.project_id) {
                    Some((b, i, first)) => {
                        if *b != q.max_bytes || *i != q.max_inodes {
                            self.push(
                                Diagnostic::warning(
                                    code("splash::check::inconsistent-project-quota"),
                                    span,
                                    format!("project {} is given different ceilings", q.project_id),
                                )
                                .with_label("different ceilings for the same project")
                                .with_related(*first, "first ceilings here")
                                .with_help(
                                    "one project is one quota; give every root of the project the same \
                                     ceilings (the aggregate check uses the largest)",
                                ),
                            );
                        }
                        *b = (*b).max(q.max_bytes);
                        *i = (*i).max(q.max_inodes);
                    }
                    None => {
                        per_project.insert(q.project_id, (q.max_bytes, q.max_inodes, span));
                    }
                }
            }
        }
        if let Some((Some(agg), span)) = &c.aggregate_quota {
            let bytes = per_project
                .values()
                .try_fold(0u64, |s, (b, _, _)| s.checked_add(*b));
            let inodes = per_project
                .values()
                .try_fold(0u64, |s, (_, i, _)| s.checked_add(*i));
            for (sum, max, what) in [
                (bytes, agg.max_bytes, "bytes"),
                (inodes, agg.max_inodes, "inodes"),
            ] {
                let over = sum.is_none_or(|s| s > max);
                if over {
                    let total = sum.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string());
                    self.push(
                        Diagnostic::error(
                            code("splash::check::aggregate-quota-exceeded"),
                            *span,
                            format!("project quotas allow {total} {what} in total, above the aggregate {max}"),
                        )
                        .with_label(format!("aggregate `{what}` too small"))
                        .with_help(
                            "raise the aggregate or lower the per-root ceilings; each distinct project id \
                             counts once",
                        ),
                    );
                }
            }
        }

        // Read-write host roots without a quota.
        let mut any_raw = false;
        for r in &c.roots {
            let FileRootKind::Host {
                access: Access::ReadWrite,
                quota: None,
                ..
            } = &r.root.kind
            else {
                continue;
            };
            any_raw = true;
            let access = r.access_span.unwrap_or(r.dest_span);
            let id = &r.root.id;
            if let Some(wb) = c.writes_bounded {
                self.push(
                    Diagnostic::error(
                        code("splash::check::bounded-writes-unverified-root"),
                        access,
                        format!("`writes bounded` rejects read-write root `{id}` without a quota"),
                    )
                    .with_label("unverified persistent writes")
                    .with_related(wb, "`writes bounded` here")
                    .with_help("attach `quota project ID bytes SIZE inodes COUNT`, or make the root `read-only`"),
                );
            } else if c.host_writes.is_none() {
                self.push(
                    Diagnostic::error(
                        code("splash::check::unverified-write-root"),
                        access,
                        format!("read-write root `{id}` has no quota"),
                    )
                    .with_label("unbounded host writes are denied by default")
                    .with_help(
                        "attach `quota project ID bytes SIZE inodes COUNT`; only if a quota Splash cannot \
                         inspect is enforced elsewhere, add `host-writes unbounded`",
                    ),
                );
            } else if let Some((_, agg)) = &c.aggregate_quota {
                self.push(
                    Diagnostic::error(
                        code("splash::check::unverified-root-with-aggregate"),
                        access,
                        format!("read-write root `{id}` has no quota while `quota aggregate` is set"),
                    )
                    .with_label("not counted by the aggregate")
                    .with_related(*agg, "`quota aggregate` here")
                    .with_help("attach a project quota; `host-writes unbounded` does not apply under an aggregate"),
                );
            }
        }
        if let Some(hw) = c.host_writes {
            if let Some(wb) = c.writes_bounded {
                self.push(
                    Diagnostic::warning(
                        code("splash::check::escape-hatch-overridden"),
                        hw,
                        "`host-writes unbounded` has no effect under `writes bounded`",
                    )
                    .with_label("overridden")
                    .with_related(wb, "`writes bounded` here")
                    .with_help("remove `host-writes unbounded`"),
                );
            } else if !any_raw {
                self.push(
                    Diagnostic::warning(
                        code("splash::check::unused-escape-hatch"),
                        hw,
                        "`host-writes unbounded` is set but no root is read-write without a quota",
                    )
                    .with_label("unused")
                    .with_help("remove it; the escape hatch only weakens the policy"),
                );
            }
        }
    }

    /// The aggregate tmpfs bound and the active-root bound.
    fn ephemeral(&mut self, c: &Collected) {
        if let Some((Some(max), span)) = &c.tmpfs_aggregate {
            let mut sum: Option<u64> = Some(0);
            for r in &c.roots {
                if let FileRootKind::Ephemeral { size_bytes } = r.root.kind {
                    sum = sum.and_then(|s| s.checked_add(size_bytes));
                }
            }
            match c.tmp {
                Some((PrivateTmp::Unbounded, tmp_span)) => self.push(
                    Diagnostic::error(
                        code("splash::check::aggregate-tmpfs-unbounded-tmp"),
                        tmp_span,
                        "`tmpfs aggregate` requires a bounded private `/tmp`",
                    )
                    .with_label("unbounded private `/tmp`")
                    .with_related(*span, "aggregate bound here")
                    .with_help("write `tmp private size SIZE`, or `tmp off`"),
                ),
                Some((PrivateTmp::Bounded { size_bytes }, _)) => {
                    sum = sum.and_then(|s| s.checked_add(size_bytes))
                }
                _ => {}
            }
            if sum.is_none_or(|s| s > *max) {
                let total = sum.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string());
                self.push(
                    Diagnostic::error(
                        code("splash::check::aggregate-tmpfs-exceeded"),
                        *span,
                        format!("tmpfs roots and `/tmp` total {total} bytes, above the aggregate {max}"),
                    )
                    .with_label("aggregate too small")
                    .with_help(
                        "the sum over every registered tmpfs root plus a bounded `/tmp` must fit; raise the \
                         aggregate or shrink the sizes",
                    ),
                );
            }
        }
        if let Some((0, span)) = c.active_roots
            && !c.roots.is_empty()
        {
            self.push(
                Diagnostic::warning(
                    code("splash::check::no-active-roots"),
                    span,
                    "`active-roots max 0` but roots are registered",
                )
                .with_label("no root can ever be activated")
                .with_help("raise the bound, or remove the unused roots"),
            );
        }
    }

    fn hardening(&mut self, c: &Collected) {
        if let (Some(pe), None) = (c.pin_executables, c.pin_mounts) {
            self.push(
                Diagnostic::error(
                    code("splash::check::pin-executables-without-mounts"),
                    pe,
                    "`pin executables` requires `pin mounts`",
                )
                .with_label("executables pinned without pinned mounts")
                .with_help("write `pin mounts, executables`"),
            );
        }
        if let Some(wb) = c.writes_bounded {
            if c.userns_none.is_none() {
                self.push(
                    Diagnostic::error(
                        code("splash::check::bounded-writes-requires-no-user-namespaces"),
                        wb,
                        "`writes bounded` requires `user-namespaces none`",
                    )
                    .with_label("without it the remounts could be undone")
                    .with_help("add `user-namespaces none`"),
                );
            }
            if let Some((PrivateTmp::Unbounded, tmp_span)) = c.tmp {
                self.push(
                    Diagnostic::error(
                        code("splash::check::bounded-writes-unbounded-tmp"),
                        tmp_span,
                        "`writes bounded` rejects an unbounded private `/tmp`",
                    )
                    .with_label("unbounded")
                    .with_related(wb, "`writes bounded` here")
                    .with_help("write `tmp private size SIZE`, or `tmp off`"),
                );
            }
        }
        if let Some((_, _, kw)) = &c.broker
            && c.pin_mounts.is_none()
        {
            self.push(
                Diagnostic::error(
                    code("splash::check::broker-requires-pinned-mounts"),
                    *kw,
                    "`network-broker` requires `pin mounts`",
                )
                .with_label("broker directory would be mounted by path")
                .with_help("add `pin mounts`"),
            );
        }
    }

    // ------------------------------------------------------------- build

    fn build(&mut self, policy: &ast::Policy, c: Collected) -> Option<model::Policy> {
        let combined_path = c.combined.as_ref().map(|p| p.path.clone());
        let limit_runner = c.limits.as_ref().and_then(|l| {
            let path = l
                .runner
                .as_ref()
                .map(|r| r.path.clone())
                .or_else(|| combined_path.clone())?;
            Some(LimitRunner {
                path,
                limits: l.limits,
            })
        });
        let landlock_runner = c.landlock.as_ref().and_then(|l| {
            let path = l
                .runner
                .as_ref()
                .map(|r| r.path.clone())
                .or_else(|| combined_path.clone())?;
            Some(LandlockRunner {
                path,
                allow_exec: l.allow.iter().map(|p| p.path.clone()).collect(),
            })
        });
        let cgroup = match &c.cgroup {
            Some((Some(p), _)) => Some(p.clone()),
            Some((None, _)) => return None,
            None => None,
        };
        let raw = model::RawPolicy {
            name: policy.name.node.clone(),
            bubblewrap: c.bubblewrap?,
            worker: c.worker?.path,
            worker_args: c.worker_args,
            runtime_mounts: c.runtime.into_iter().map(|(m, _)| m).collect(),
            file_roots: c.roots.into_iter().map(|r| r.root).collect(),
            tmp: c.tmp.map_or(PrivateTmp::Off, |(t, _)| t),
            bounded_writes: c.writes_bounded.is_some(),
            no_further_user_namespaces: c.userns_none.is_some(),
            pin_mounts: c.pin_mounts.is_some(),
            pin_executables: c.pin_executables.is_some(),
            allow_unbounded_host_writes: c.host_writes.is_some(),
            aggregate_quota: match c.aggregate_quota {
                Some((q, _)) => Some(q?),
                None => None,
            },
            aggregate_ephemeral_max_bytes: match c.tmpfs_aggregate {
                Some((v, _)) => Some(v?),
                None => None,
            },
            max_active_file_roots: c
                .active_roots
                .map_or(model::DEFAULT_MAX_ACTIVE_FILE_ROOTS, |(v, _)| v),
            seccomp: c.seccomp.map_or(SeccompPolicy::Off, |(s, _)| s),
            require_limit_runner: c.limits.as_ref().is_some_and(|l| l.required.is_some()),
            limit_runner,
            landlock_runner,
            combined_runner: combined_path,
            require_cgroup_v2: c.cgroup.as_ref().is_some_and(|(_, r)| *r),
            cgroup,
            watchdog: c.watchdog,
            network_broker: c.broker.map(|(b, _, _)| b),
        };
        match model::Policy::try_from(raw) {
            Ok(checked) => Some(checked),
            Err(e) => {
                self.broken = Some((policy.header, e));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests;
