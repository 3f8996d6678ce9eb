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
//!
//! One file per pass or statement family: `statements` runs pass 1 and hands
//! each family to its file (`roots`, `seccomp`, `limits`, `landlock`,
//! `cgroup`); the cross-statement rules are `mounts`, `runners`, `storage`
//! and `hardening`; `build` makes the policy.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::ast::{self, Quantity};
use crate::diag::{CheckOutcome, Code, Diagnostic};
use crate::model::{
    self, AbsPath, AggregateQuota, CgroupPolicy, FileRoot, HostPath, NetworkBroker, PrivateTmp,
    ResourceLimits, RuntimeMount, SandboxPath, SeccompPolicy, SelectorId, Side, Watchdog,
};
use crate::parse;
use crate::span::{Node, Span};
use crate::units::{self, Dimension};

pub(crate) use expect::expectations;
// The model types the unit tests (`tests.rs`, through `super::*`) name.
#[cfg(test)]
use crate::model::{BrokerCatalog, FileRootKind, IoMax};

mod build;
mod cgroup;
mod expect;
mod hardening;
mod identity;
mod landlock;
mod limits;
mod mounts;
mod roots;
mod runners;
mod seccomp;
mod statements;
mod storage;

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
        Code::InvalidUtf8,
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
    // A policy that breaks an invariant or a language rule although nothing
    // was reported is a checker bug; with errors (or statements that did not parse) it is
    // only a consequence of them.
    if let Some((span, e)) = c.broken.take()
        && !errors
        && !parse_errors
        && failed.is_empty()
    {
        c.push(Diagnostic::error(
            Code::CheckInternal,
            span,
            format!("internal error: the checked policy breaks an invariant: {e}"),
        ));
    }
    (if errors { None } else { policy }, c.diags)
}

// ------------------------------------------------------------------ helpers

/// Statement keywords that may appear more than once.
const REPEATABLE: &[&str] = &["runtime", "root"];

#[derive(Default)]
struct Checker {
    diags: Vec<Diagnostic>,
    /// Why a built policy broke a `Policy` invariant or a language rule
    /// ([`model::check_rules`]), and the header span.
    broken: Option<(Span, String)>,
}

/// A path with where it was written and what it is, for cross-checks.
#[derive(Debug, Clone)]
struct Placed {
    path: SandboxPath,
    span: Span,
    what: String,
}

#[derive(Debug)]
struct RootInfo {
    root: FileRoot,
    dest_span: Span,
    quota_span: Option<Span>,
    access_span: Option<Span>,
    /// The `size` of a tmpfs root.
    size_span: Option<Span>,
}

/// Marks what was written with an error that is already reported. Rules
/// that depend on it stay silent instead of reporting a follow-on error
/// about the same mistake (the policy is not built either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reported;

/// What a statement wrote: its checked value, or [`Reported`] when it is
/// invalid.
type Checked<T> = Result<T, Reported>;

/// A setting that may be absent: `None` when not written.
type Written<T> = Option<Checked<T>>;

/// The checked value of a setting, when it was written and is valid.
fn valid<T>(w: &Written<T>) -> Option<&T> {
    w.as_ref().and_then(|v| v.as_ref().ok())
}

/// True when a setting was written with an error already reported.
fn reported<T>(w: &Written<T>) -> bool {
    matches!(w, Some(Err(Reported)))
}

#[derive(Debug)]
struct LimitsInfo {
    keyword: Span,
    /// `runner PATH`.
    runner: Written<Placed>,
    required: Option<Span>,
    limits: ResourceLimits,
}

#[derive(Debug)]
struct LandlockInfo {
    keyword: Span,
    /// `runner PATH`.
    runner: Written<Placed>,
    allow: Vec<Placed>,
}

#[derive(Debug, Default)]
struct Collected {
    bubblewrap: Option<HostPath>,
    worker: Option<Placed>,
    worker_args: Vec<String>,
    runtime: Vec<(RuntimeMount, Span)>,
    roots: Vec<RootInfo>,
    /// The id span of each registered root (those in `roots`), by id: the
    /// duplicate-id check looks ids up here instead of scanning `roots`.
    root_ids: HashMap<String, Span>,
    tmp: Option<(PrivateTmp, Span)>,
    writes_bounded: Option<Span>,
    host_writes: Option<Span>,
    userns_none: Option<Span>,
    pin_mounts: Option<Span>,
    pin_executables: Option<Span>,
    aggregate_quota: Option<(Checked<AggregateQuota>, Span)>,
    tmpfs_aggregate: Option<(Checked<u64>, Span)>,
    active_roots: Option<(u16, Span)>,
    seccomp: Option<(SeccompPolicy, Span)>,
    limits: Option<LimitsInfo>,
    landlock: Option<LandlockInfo>,
    /// `runner combined PATH`.
    combined: Written<Placed>,
    /// The cgroup policy and whether it is `required`.
    cgroup: Option<(Checked<CgroupPolicy>, bool)>,
    watchdog: Option<Watchdog>,
    broker: Option<(NetworkBroker, Span, Span)>,
    /// The checked `identity` and the statement's span.
    identity: Option<(Checked<model::WorkerIdentity>, Span)>,
    /// The destination of every runtime mount, also of those whose source
    /// is invalid (they still count as covering executables). Where one is
    /// [`Reported`], which executables it would cover is unknown, so none is
    /// reported outside.
    runtime_dests: Vec<Checked<SandboxPath>>,
}

/// Compares paths so that a directory sorts immediately before everything
/// below it (`/` ranks lowest).
fn path_key<S: Side>(p: &AbsPath<S>) -> impl Iterator<Item = u8> + '_ {
    p.as_str().bytes().map(|b| if b == b'/' { 0 } else { b })
}

impl Checker {
    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn path<S: Side>(&mut self, s: &Node<String>, what: &str) -> Option<AbsPath<S>> {
        if crate::text::first_forbidden(&s.node).is_some() {
            // Already reported by the parser (`control-character`).
            return None;
        }
        match AbsPath::new(s.node.clone()) {
            Ok(p) => Some(p),
            Err(e) => {
                self.push(
                    Diagnostic::error(
                        Code::InvalidPath,
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
                        Code::InvalidSelectorId,
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
                Diagnostic::error(Code::ZeroValue, q.span, format!("{what} is zero"))
                    .with_label("zero is not a usable bound here")
                    .with_help(format!("give a positive value, or remove {what}")),
            );
            return None;
        }
        Some(v)
    }

    fn duplicate(&mut self, code: Code, span: Span, first: Span, what: &str) {
        self.push(
            Diagnostic::error(code, span, format!("{what} is given more than once"))
                .with_label("repeated here")
                .with_related(first, "first given here")
                .with_help("keep exactly one; every setting has one place"),
        );
    }

    fn check(
        &mut self,
        file: &ast::File,
        failed: &BTreeSet<&'static str>,
    ) -> Option<model::Policy> {
        let policy = &file.policy;
        match &file.version {
            None => self.push(
                Diagnostic::error(
                    Code::MissingVersion,
                    Span::new(0, 0),
                    "missing `splashpol 1` header",
                )
                .with_label("the file should start here")
                .with_help("start the file with the line `splashpol 1`"),
            ),
            Some(v) if v.node.0 != LANGUAGE_VERSION => self.push(
                Diagnostic::error(
                    Code::UnsupportedVersion,
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
                        Code::DuplicateStatement,
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
                        Code::MissingStatement,
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
        self.identity_roots(&c);

        let built = self.build(policy, c);
        if let Some(p) = &built {
            let (_, diagnostics) = expectations(file, p);
            self.diags.extend(diagnostics);
        }
        built
    }
}

#[cfg(test)]
mod tests;
