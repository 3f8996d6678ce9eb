//! What changes between two policies, layer by layer (`splashc diff`).
//!
//! Both sides are compared as effective sandboxes ([`crate::explain`]):
//! visible paths, the writable-bytes bound, the exec surface, the compiled
//! filter per architecture, rlimits, the cgroup, the watchdog deadlines, the
//! network and the namespaces. Each difference is either a widening (the
//! worker of `B` can do something the worker of `A` could not) or a
//! narrowing, and points at the statements of both files that decide it
//! (`None` where a file leaves the layer at its default). A change that is
//! neither clearly wider nor narrower (a mount now shows another host
//! directory, the cgroup moves to another parent) counts as a widening: a
//! reviewer has to look at it. Pure and deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::ast::{RootKind, Statement, Stmt};
use crate::explain::{self, ArchFilter, Explanation, VisibleMount};
use crate::model::{CgroupLimits, IoMax, Policy, Watchdog};
use crate::plan::{BwrapOp, LaunchPlan};
use crate::span::line_col;
use crate::text::escaped as esc;
use crate::units::{format_bytes, format_millis};

/// One policy as compared: its file name and source (for spans), the checked
/// policy and the plan lowered from it.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The file name shown in locations.
    pub file: &'a str,
    /// The policy's source text.
    pub source: &'a str,
    /// The checked policy.
    pub policy: &'a Policy,
    /// The plan lowered from it.
    pub plan: &'a LaunchPlan,
}

/// Which way a difference goes, from `A` to `B`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// `B` allows something `A` does not.
    Widened,
    /// `B` allows less than `A`.
    Narrowed,
}

/// Where a statement is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The file name.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// The 1-based column, in characters.
    pub column: usize,
    /// The byte offset where the statement starts.
    pub start: usize,
    /// The byte offset where it ends.
    pub end: usize,
    /// The statement's first line as written.
    pub text: String,
}

/// One difference between the two sandboxes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `paths`, `writes`, `exec`, `seccomp`, `rlimits`, `cgroup`,
    /// `deadlines`, `network` or `isolation`.
    pub layer: &'static str,
    /// Whether the difference widens or narrows the sandbox.
    pub change: Change,
    /// What changed, in words.
    pub what: String,
    /// The deciding statement in `A`, if `A` has one.
    pub a: Option<Location>,
    /// The deciding statement in `B`, if `B` has one.
    pub b: Option<Location>,
}

/// Every difference between two policies' sandboxes, for one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyDiff {
    /// The file name of `A`.
    pub a: String,
    /// The file name of `B`.
    pub b: String,
    /// The architecture the plans are for.
    pub arch: String,
    /// The differences, layer by layer.
    pub differences: Vec<Difference>,
}

impl PolicyDiff {
    /// Whether any difference widens the sandbox.
    pub fn widened(&self) -> bool {
        self.differences.iter().any(|d| d.change == Change::Widened)
    }

    fn count(&self, c: Change) -> usize {
        self.differences.iter().filter(|d| d.change == c).count()
    }
}

/// The statements of one file, for locating what decides a layer.
struct Statements<'a> {
    file: &'a str,
    source: &'a str,
    stmts: Vec<Stmt>,
}

impl<'a> Statements<'a> {
    fn new(side: &Side<'a>) -> Self {
        let stmts = crate::parse::parse(side.source)
            .file
            .map(|f| f.policy.statements)
            .unwrap_or_default();
        Statements {
            file: side.file,
            source: side.source,
            stmts,
        }
    }

    fn find(&self, pred: impl Fn(&Statement) -> bool) -> Option<Location> {
        let s = self.stmts.iter().find(|s| pred(&s.kind))?;
        let (line, column) = line_col(self.source, s.span.start);
        let text = s
            .span
            .slice(self.source)
            .and_then(|t| t.lines().next())
            .unwrap_or("")
            .trim()
            .to_string();
        Some(Location {
            file: self.file.to_string(),
            line,
            column,
            start: s.span.start,
            end: s.span.end,
            text,
        })
    }

    fn keyword(&self, keyword: &str) -> Option<Location> {
        self.find(|s| s.keyword() == keyword)
    }

    /// The statement that puts something at sandbox path `path`.
    fn path(&self, path: &str) -> Option<Location> {
        self.find(|s| match s {
            Statement::Runtime { destination, .. } | Statement::Root { destination, .. } => {
                destination.node == path
            }
            Statement::Tmp(_) => path == "/tmp",
            Statement::Worker { path: p, .. } | Statement::CombinedRunner { path: p } => {
                p.node == path
            }
            Statement::Limits { runner, .. } => runner.as_ref().is_some_and(|r| r.node == path),
            Statement::Landlock {
                runner, allow_exec, ..
            } => {
                runner.as_ref().is_some_and(|r| r.node == path)
                    || allow_exec.iter().any(|a| a.node == path)
            }
            Statement::NetworkBroker { destination, .. } => destination.node == path,
            _ => false,
        })
        .or_else(|| self.root_source(path))
        // `writes bounded` remounts the root and `/dev` read-only.
        .or_else(|| {
            matches!(path, "/" | "/dev")
                .then(|| self.keyword("writes"))
                .flatten()
        })
    }

    /// A host root whose source is `path` (for a changed mount source).
    fn root_source(&self, host: &str) -> Option<Location> {
        self.find(|s| {
            matches!(s, Statement::Root { kind: RootKind::Host { source, .. }, .. } if source.node == host)
        })
    }
}

struct Differ<'a> {
    a: Statements<'a>,
    b: Statements<'a>,
    out: Vec<Difference>,
}

impl Differ<'_> {
    fn push(
        &mut self,
        layer: &'static str,
        change: Change,
        what: String,
        locate: impl Fn(&Statements<'_>) -> Option<Location>,
    ) {
        let (a, b) = (locate(&self.a), locate(&self.b));
        self.out.push(Difference {
            layer,
            change,
            what,
            a,
            b,
        });
    }

    /// A numeric ceiling of `scope` where `None` means unlimited.
    fn ceiling(
        &mut self,
        scope: Scope,
        name: &str,
        (a, b): (Option<u64>, Option<u64>),
        fmt: fn(u64) -> String,
    ) {
        let Some(change) = direction(a, b) else {
            return;
        };
        let show = |v: Option<u64>| v.map_or_else(|| scope.unlimited.to_string(), fmt);
        let what = format!("{name}: {} -> {}", show(a), show(b));
        self.push(scope.layer, change, what, |s| s.keyword(scope.keyword));
    }
}

/// The layer of a limit, the statement that sets it, and what its absence
/// means.
#[derive(Clone, Copy)]
struct Scope {
    layer: &'static str,
    keyword: &'static str,
    unlimited: &'static str,
}

/// Whether going from ceiling `a` to ceiling `b` widens or narrows, with
/// `None` meaning no ceiling.
fn direction(a: Option<u64>, b: Option<u64>) -> Option<Change> {
    match (a, b) {
        (Some(x), Some(y)) if y > x => Some(Change::Widened),
        (Some(_), None) => Some(Change::Widened),
        (Some(x), Some(y)) if y < x => Some(Change::Narrowed),
        (None, Some(_)) => Some(Change::Narrowed),
        _ => None,
    }
}

/// Compare `a` and `b`, both lowered for the same architecture.
pub fn diff(a: &Side<'_>, b: &Side<'_>) -> PolicyDiff {
    let ea = explain::explain(a.policy, a.plan);
    let eb = explain::explain(b.policy, b.plan);
    let mut d = Differ {
        a: Statements::new(a),
        b: Statements::new(b),
        out: Vec::new(),
    };
    paths(&mut d, &ea, &eb);
    writes(&mut d, &ea, &eb);
    exec(&mut d, &ea, &eb);
    seccomp(&mut d, &ea, &eb);
    rlimits(&mut d, a, b);
    cgroup(&mut d, a.plan, b.plan);
    deadlines(&mut d, a.plan, b.plan);
    network(&mut d, a.plan, b.plan);
    isolation(&mut d, &ea, &eb);
    PolicyDiff {
        a: a.file.to_string(),
        b: b.file.to_string(),
        arch: a.plan.arch().name().to_string(),
        differences: d.out,
    }
}

fn by_path(e: &Explanation) -> BTreeMap<&str, &VisibleMount> {
    e.mounts.iter().map(|m| (m.path.as_str(), m)).collect()
}

fn paths(d: &mut Differ<'_>, ea: &Explanation, eb: &Explanation) {
    let (ma, mb) = (by_path(ea), by_path(eb));
    for (path, m) in &mb {
        if !ma.contains_key(path) {
            let src = m
                .source
                .as_deref()
                .map(|s| format!(" <- {s}"))
                .unwrap_or_default();
            d.push(
                "paths",
                Change::Widened,
                format!("`{path}` becomes visible ({} {}{src})", m.access, m.kind),
                |s| s.path(path),
            );
        }
    }
    for (path, m) in &ma {
        let Some(n) = mb.get(path) else {
            d.push(
                "paths",
                Change::Narrowed,
                format!(
                    "`{path}` is no longer visible (was {} {})",
                    m.access, m.kind
                ),
                |s| s.path(path),
            );
            continue;
        };
        if m.access != n.access {
            let change = if n.access == "read-write" {
                Change::Widened
            } else {
                Change::Narrowed
            };
            d.push(
                "paths",
                change,
                format!("`{path}`: {} -> {}", m.access, n.access),
                |s| s.path(path),
            );
        }
        if m.source != n.source || m.kind != n.kind {
            let show = |v: &VisibleMount| match &v.source {
                Some(s) => format!("{} of {s}", v.kind),
                None => v.kind.clone(),
            };
            d.push(
                "paths",
                Change::Widened,
                format!("`{path}` shows {} instead of {}", show(n), show(m)),
                |s| s.path(path),
            );
        }
        if m.pinned != n.pinned {
            let (change, what) = if n.pinned {
                (Change::Narrowed, "pinned at bind")
            } else {
                (
                    Change::Widened,
                    "looked up by path at launch, no longer pinned",
                )
            };
            d.push("paths", change, format!("`{path}` is {what}"), |s| {
                s.keyword("pin")
            });
        }
    }
}

fn writes(d: &mut Differ<'_>, ea: &Explanation, eb: &Explanation) {
    let (ma, mb) = (by_path(ea), by_path(eb));
    for (path, n) in &mb {
        let Some(m) = ma.get(path) else { continue };
        if m.access == "read-write" && n.access == "read-write" {
            let name = format!("bound on `{path}`");
            d.ceiling_at(&name, m.bound_bytes, n.bound_bytes, path);
        }
    }
    let (wa, wb) = (&ea.writable, &eb.writable);
    let ua: BTreeSet<&str> = wa.unbounded.iter().map(|(p, _)| p.as_str()).collect();
    let ub: BTreeSet<&str> = wb.unbounded.iter().map(|(p, _)| p.as_str()).collect();
    let show = |v: Option<u64>| v.map_or_else(|| "unbounded".to_string(), format_bytes);
    let change = match (wa.bound_bytes, wb.bound_bytes) {
        (None, None) if ub.difference(&ua).next().is_some() => Some(Change::Widened),
        (None, None) if ua.difference(&ub).next().is_some() => Some(Change::Narrowed),
        (x, y) => direction(x, y),
    };
    if let Some(change) = change {
        let mut what = format!(
            "writable bytes: {} -> {}",
            show(wa.bound_bytes),
            show(wb.bound_bytes)
        );
        let newly: Vec<&str> = ub.difference(&ua).copied().collect();
        if !newly.is_empty() {
            let _ = write!(what, "; newly unbounded: {}", newly.join(" "));
        }
        d.push("writes", change, what, |s| s.keyword("writes"));
    }
}

impl Differ<'_> {
    fn ceiling_at(&mut self, name: &str, a: Option<u64>, b: Option<u64>, path: &str) {
        let Some(change) = direction(a, b) else {
            return;
        };
        let show = |v: Option<u64>| v.map_or_else(|| "unbounded".to_string(), format_bytes);
        let what = format!("{name}: {} -> {}", show(a), show(b));
        self.push("writes", change, what, |s| s.path(path));
    }
}

fn set_changes<'s>(a: &'s [String], b: &'s [String]) -> (Vec<&'s str>, Vec<&'s str>) {
    let sa: BTreeSet<&str> = a.iter().map(String::as_str).collect();
    let sb: BTreeSet<&str> = b.iter().map(String::as_str).collect();
    (
        sb.difference(&sa).copied().collect(),
        sa.difference(&sb).copied().collect(),
    )
}

fn exec(d: &mut Differ<'_>, ea: &Explanation, eb: &Explanation) {
    let (xa, xb) = (&ea.exec, &eb.exec);
    match (&xa.landlock_allowlist, &xb.landlock_allowlist) {
        (Some(_), None) => d.push(
            "exec",
            Change::Widened,
            "no Landlock allowlist: any executable file in a visible mount runs".into(),
            |s| s.keyword("landlock"),
        ),
        (None, Some(list)) => d.push(
            "exec",
            Change::Narrowed,
            format!("only the Landlock allowlist runs: {}", list.join(" ")),
            |s| s.keyword("landlock"),
        ),
        (Some(la), Some(lb)) => {
            let (added, removed) = set_changes(la, lb);
            for p in added {
                d.push(
                    "exec",
                    Change::Widened,
                    format!("`{p}` may be executed"),
                    |s| s.path(p).or_else(|| s.keyword("landlock")),
                );
            }
            for p in removed {
                d.push(
                    "exec",
                    Change::Narrowed,
                    format!("`{p}` may no longer be executed"),
                    |s| s.path(p).or_else(|| s.keyword("landlock")),
                );
            }
        }
        (None, None) => {
            let (added, removed) =
                set_changes(&xa.writable_and_executable, &xb.writable_and_executable);
            for p in added {
                d.push(
                    "exec",
                    Change::Widened,
                    format!("files written to `{p}` can be executed"),
                    |s| s.path(p),
                );
            }
            for p in removed {
                d.push(
                    "exec",
                    Change::Narrowed,
                    format!("files written to `{p}` can no longer be executed"),
                    |s| s.path(p),
                );
            }
        }
    }
    if xa.memfd_guard != xb.memfd_guard {
        let (change, what) = if xb.memfd_guard {
            (
                Change::Narrowed,
                "memfd_create without MFD_NOEXEC_SEAL is refused",
            )
        } else {
            (
                Change::Widened,
                "memfd_create without MFD_NOEXEC_SEAL is no longer refused",
            )
        };
        d.push("exec", change, what.into(), |s| s.keyword("landlock"));
    }
}

fn denied(a: &ArchFilter) -> Vec<String> {
    a.denied_classes
        .iter()
        .flat_map(|(_, names)| names.iter().cloned())
        .collect()
}

/// Whether filter `f` lets syscall `name` past its strict list (every
/// syscall passes a default-allow filter).
fn passes(f: &ArchFilter, name: &str) -> bool {
    f.allowed
        .as_ref()
        .is_none_or(|list| list.iter().any(|a| a == name))
}

/// The syscall a guard description starts with (`clone when ...: EPERM`).
fn guard_syscall(guard: &str) -> &str {
    guard.split([' ', ':']).next().unwrap_or(guard)
}

fn seccomp(d: &mut Differ<'_>, ea: &Explanation, eb: &Explanation) {
    let loc = |s: &Statements<'_>| s.keyword("seccomp");
    let (fa, fb) = match (&ea.seccomp, &eb.seccomp) {
        (None, None) => return,
        (Some(f), None) => {
            let what = format!("no seccomp filter (was {})", f.profile);
            return d.push("seccomp", Change::Widened, what, loc);
        }
        (None, Some(f)) => {
            let what = format!("a seccomp filter ({}) where there was none", f.profile);
            return d.push("seccomp", Change::Narrowed, what, loc);
        }
        (Some(a), Some(b)) => (a, b),
    };
    if fa.delivered_by != fb.delivered_by {
        let what = format!(
            "filter installed by {} instead of {}",
            fb.delivered_by, fa.delivered_by
        );
        d.push("seccomp", Change::Widened, what, loc);
    }
    for x in &fa.per_arch {
        let Some(y) = fb.per_arch.iter().find(|y| y.arch == x.arch) else {
            continue;
        };
        let arch = &x.arch;
        let (dx, dy) = (denied(x), denied(y));
        // A syscall outside a strict list is refused either way: a refusal
        // only changes something for syscalls the other side lets through.
        let (mut now_denied, mut no_longer) = set_changes(&dx, &dy);
        now_denied.retain(|n| passes(x, n));
        no_longer.retain(|n| passes(y, n));
        if !no_longer.is_empty() {
            let what = format!("{arch}: no longer refused: {}", no_longer.join(" "));
            d.push("seccomp", Change::Widened, what, loc);
        }
        if !now_denied.is_empty() {
            let what = format!("{arch}: now refused: {}", now_denied.join(" "));
            d.push("seccomp", Change::Narrowed, what, loc);
        }
        let (mut new_guards, mut dropped_guards) = set_changes(&x.guarded, &y.guarded);
        new_guards.retain(|g| passes(x, guard_syscall(g)));
        dropped_guards.retain(|g| passes(y, guard_syscall(g)));
        for g in dropped_guards {
            d.push(
                "seccomp",
                Change::Widened,
                format!("{arch}: guard dropped: {g}"),
                loc,
            );
        }
        for g in new_guards {
            d.push(
                "seccomp",
                Change::Narrowed,
                format!("{arch}: guard added: {g}"),
                loc,
            );
        }
        match (&x.allowed, &y.allowed) {
            (Some(_), None) => d.push(
                "seccomp",
                Change::Widened,
                format!("{arch}: no strict list: every unlisted syscall is allowed"),
                loc,
            ),
            (None, Some(list)) => d.push(
                "seccomp",
                Change::Narrowed,
                format!(
                    "{arch}: strict list of {} syscalls, {} for the rest",
                    list.len(),
                    y.otherwise
                ),
                loc,
            ),
            (Some(la), Some(lb)) => {
                // A reviewed addition that a strict list names or stops
                // naming was already reported as no longer or now refused.
                let (mut added, mut removed) = set_changes(la, lb);
                added.retain(|n| !no_longer.contains(n));
                removed.retain(|n| !now_denied.contains(n));
                if !added.is_empty() {
                    let what = format!("{arch}: newly allowed: {}", added.join(" "));
                    d.push("seccomp", Change::Widened, what, loc);
                }
                if !removed.is_empty() {
                    let what = format!("{arch}: no longer allowed: {}", removed.join(" "));
                    d.push("seccomp", Change::Narrowed, what, loc);
                }
            }
            (None, None) => {}
        }
    }
}

fn rlimits(d: &mut Differ<'_>, a: &Side<'_>, b: &Side<'_>) {
    let values = |s: &Side<'_>| -> BTreeMap<&'static str, Option<u64>> {
        explain::rlimit_values(s.policy, s.plan)
            .into_iter()
            .map(|(n, v)| (n, v.parse().ok()))
            .collect()
    };
    let (va, vb) = (values(a), values(b));
    let names: BTreeSet<&str> = va.keys().chain(vb.keys()).copied().collect();
    for name in names {
        let fmt: fn(u64) -> String = match name {
            "address-space" | "file-size" => format_bytes,
            "cpu" => |v| format!("{v} s"),
            _ => |v| v.to_string(),
        };
        let (x, y) = (
            va.get(name).copied().flatten(),
            vb.get(name).copied().flatten(),
        );
        let scope = Scope {
            layer: "rlimits",
            keyword: "limits",
            unlimited: "unlimited",
        };
        d.ceiling(scope, name, (x, y), fmt);
    }
}

fn cpu(micros: u64) -> String {
    format!("{} per 100 ms", format_millis(micros / 1000))
}

fn count(v: u64) -> String {
    v.to_string()
}

fn cgroup(d: &mut Differ<'_>, a: &LaunchPlan, b: &LaunchPlan) {
    let loc = |s: &Statements<'_>| s.keyword("cgroup");
    match (a.cgroup(), b.cgroup()) {
        (None, None) => return,
        (Some(_), None) => d.push(
            "cgroup",
            Change::Widened,
            "no cgroup: the worker tree is not limited as a whole".into(),
            loc,
        ),
        (None, Some(c)) => d.push(
            "cgroup",
            Change::Narrowed,
            format!("the worker tree joins a cgroup under {}", c.parent),
            loc,
        ),
        (Some(x), Some(y)) if x.parent != y.parent => d.push(
            "cgroup",
            Change::Widened,
            format!("cgroup parent {} instead of {}", y.parent, x.parent),
            loc,
        ),
        _ => {}
    }
    let none = Default::default();
    let la = a.cgroup().map_or(&none, |c| &c.limits);
    let lb = b.cgroup().map_or(&none, |c| &c.limits);
    let scope = Scope {
        layer: "cgroup",
        keyword: "cgroup",
        unlimited: "unlimited",
    };
    let both = |f: fn(&CgroupLimits) -> Option<u64>| (f(la), f(lb));
    d.ceiling(scope, "cpu.max", both(|l| l.cpu_quota_micros), cpu);
    d.ceiling(
        scope,
        "memory.max",
        both(|l| l.memory_max_bytes),
        format_bytes,
    );
    let swap = both(|l| l.memory_swap_max_bytes);
    d.ceiling(scope, "memory.swap.max", swap, format_bytes);
    d.ceiling(scope, "pids.max", both(|l| l.pids_max), count);
    let devices: BTreeSet<(u32, u32)> = la
        .io_max
        .iter()
        .chain(&lb.io_max)
        .map(|io| (io.major, io.minor))
        .collect();
    let rate = |v: u64| format!("{}/s", format_bytes(v));
    let iops = |v: u64| format!("{v} iops");
    let fields: [(&str, IoField, Format); 4] = [
        ("rbps", |i| i.rbps, rate),
        ("wbps", |i| i.wbps, rate),
        ("riops", |i| i.riops, iops),
        ("wiops", |i| i.wiops, iops),
    ];
    for (major, minor) in devices {
        let get = |l: &CgroupLimits| {
            l.io_max
                .iter()
                .find(|io| (io.major, io.minor) == (major, minor))
                .copied()
        };
        let (x, y) = (get(la), get(lb));
        for (name, field, fmt) in fields {
            let values = (x.as_ref().and_then(field), y.as_ref().and_then(field));
            d.ceiling(
                scope,
                &format!("io.max {major}:{minor} {name}"),
                values,
                fmt,
            );
        }
    }
}

/// One field of an `io.max` entry.
type IoField = fn(&IoMax) -> Option<u64>;

/// How a limit's value is shown.
type Format = fn(u64) -> String;

fn deadlines(d: &mut Differ<'_>, a: &LaunchPlan, b: &LaunchPlan) {
    let (wa, wb) = (a.watchdog(), b.watchdog());
    let scope = Scope {
        layer: "deadlines",
        keyword: "watchdog",
        unlimited: "none",
    };
    let session = |w: Option<Watchdog>| w.map(|w| w.session_deadline_ms);
    let call = |w: Option<Watchdog>| w.and_then(|w| w.call_deadline_ms);
    let values = (session(wa), session(wb));
    d.ceiling(scope, "session deadline", values, format_millis);
    d.ceiling(scope, "call deadline", (call(wa), call(wb)), format_millis);
}

fn network(d: &mut Differ<'_>, a: &LaunchPlan, b: &LaunchPlan) {
    let loc = |s: &Statements<'_>| s.keyword("network-broker");
    let isolated = |p: &LaunchPlan| p.ops().contains(&BwrapOp::UnshareAll);
    if isolated(a) && !isolated(b) {
        d.push(
            "network",
            Change::Widened,
            "the host's network is reachable".into(),
            |_| None,
        );
    } else if !isolated(a) && isolated(b) {
        d.push(
            "network",
            Change::Narrowed,
            "an empty network namespace".into(),
            |_| None,
        );
    }
    let ids = |p: &LaunchPlan| -> Vec<String> {
        p.network_broker()
            .iter()
            .flat_map(|b| b.ids.iter().map(|i| i.to_string()))
            .collect()
    };
    match (a.network_broker(), b.network_broker()) {
        (None, Some(br)) => d.push(
            "network",
            Change::Widened,
            format!("a network broker at `{}`", br.destination),
            loc,
        ),
        (Some(br), None) => d.push(
            "network",
            Change::Narrowed,
            format!("no network broker (was at `{}`)", br.destination),
            loc,
        ),
        (Some(x), Some(y)) => {
            if x.catalog != y.catalog || x.destination != y.destination {
                d.push(
                    "network",
                    Change::Widened,
                    format!(
                        "the broker at `{}` serves another catalog or path",
                        y.destination
                    ),
                    loc,
                );
            }
            let (ia, ib) = (ids(a), ids(b));
            let (added, removed) = set_changes(&ia, &ib);
            if !added.is_empty() {
                d.push(
                    "network",
                    Change::Widened,
                    format!("broker ids added: {}", added.join(" ")),
                    loc,
                );
            }
            if !removed.is_empty() {
                d.push(
                    "network",
                    Change::Narrowed,
                    format!("broker ids removed: {}", removed.join(" ")),
                    loc,
                );
            }
        }
        (None, None) => {}
    }
}

fn isolation(d: &mut Differ<'_>, ea: &Explanation, eb: &Explanation) {
    let (added, removed) = set_changes(&ea.namespaces, &eb.namespaces);
    for n in removed {
        d.push(
            "isolation",
            Change::Widened,
            format!("no longer: {n}"),
            |s| s.keyword("user-namespaces"),
        );
    }
    for n in added {
        d.push("isolation", Change::Narrowed, format!("now: {n}"), |s| {
            s.keyword("user-namespaces")
        });
    }
}

fn at(l: &Option<Location>) -> String {
    match l {
        Some(l) => format!("{}:{}:{}: {}", esc(&l.file), l.line, l.column, esc(&l.text)),
        None => "(default)".to_string(),
    }
}

/// The differences as text for a terminal; text from the policies is shown
/// through [`crate::text::escaped`].
pub fn render_human(diff: &PolicyDiff) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} -> {} (plans for {})",
        esc(&diff.a),
        esc(&diff.b),
        diff.arch
    );
    if diff.differences.is_empty() {
        let _ = writeln!(t, "the effective sandboxes are identical");
        return t;
    }
    for x in &diff.differences {
        let change = match x.change {
            Change::Widened => "widened ",
            Change::Narrowed => "narrowed",
        };
        let _ = writeln!(t, "{change} {:<9} {}", x.layer, esc(&x.what));
        let _ = writeln!(t, "    a: {}", at(&x.a));
        let _ = writeln!(t, "    b: {}", at(&x.b));
    }
    let _ = writeln!(
        t,
        "{} widened, {} narrowed",
        diff.count(Change::Widened),
        diff.count(Change::Narrowed)
    );
    t
}

#[cfg(test)]
mod tests;
