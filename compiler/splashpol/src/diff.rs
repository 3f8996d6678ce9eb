//! What changes between two policies, layer by layer (`splashc diff`).
//!
//! Both sides are compared as effective sandboxes: every fact of the
//! lowered plan and of the checked policy that the plan does not carry has a
//! rule here, and the rules are written so that a new field or variant
//! without one does not compile (`facts` destructures the plan and the
//! policy without `..`; matches over their enums have no wildcard arm). The
//! effective sandbox as [`crate::explain`] reads it gives the visible paths,
//! the writable-bytes bound, the exec surface and the compiled filter per
//! architecture; the plan gives the rest: the host-side programs and how
//! they are found, the exec chain, rlimits, the cgroup, quotas, the watchdog
//! deadlines, the network broker and the namespaces.
//!
//! Each difference is either a widening (the worker of `B` can do something
//! the worker of `A` could not, or `B` trusts something `A` did not) or a
//! narrowing, and points at the token of both files that decides it (`None`
//! where a file leaves the layer at its default). A change that is neither
//! clearly wider nor narrower (a mount now shows another host directory, the
//! cgroup moves to another parent, another Bubblewrap or runner program)
//! counts as a widening: a reviewer has to look at it. Facts that change
//! nothing the worker can do (the policy's name, its digest, the filter's
//! size) are neutral and not reported. Pure and deterministic.

mod facts;
mod locate;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::ast::{CgroupKind, IoDirection, PinItem};
use crate::explain::{
    self, ArchFilter, ExecSurface, Explanation, FilterSummary, Isolation, MountAccess,
    VisibleMount, WritableBytes,
};
use crate::model::{CgroupLimits, CgroupPolicy, IoMax, Policy, Watchdog};
use crate::plan::{BrokerPlan, BwrapOp, LaunchPlan};
use crate::text::escaped as esc;
use crate::units::{format_bytes, format_millis};
use locate::Statements;

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

/// Where the token that decides a difference is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The file name.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// The 1-based column, in characters.
    pub column: usize,
    /// The byte offset where the token starts.
    pub start: usize,
    /// The byte offset where the token ends.
    pub end: usize,
    /// The line of the statement that holds the token, as written.
    pub text: String,
}

/// One difference between the two sandboxes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `paths`, `writes`, `exec`, `seccomp`, `rlimits`, `cgroup`,
    /// `deadlines`, `network`, `isolation` or `programs`.
    pub layer: &'static str,
    /// Whether the difference widens or narrows the sandbox.
    pub change: Change,
    /// What changed, in words.
    pub what: String,
    /// The deciding token in `A`, if `A` has one.
    pub a: Option<Location>,
    /// The deciding token in `B`, if `B` has one.
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

struct Differ<'a> {
    a: Statements<'a>,
    b: Statements<'a>,
    out: Vec<Difference>,
}

/// The layers in the order they are reported.
const LAYERS: [&str; 10] = [
    "paths",
    "writes",
    "exec",
    "seccomp",
    "rlimits",
    "cgroup",
    "deadlines",
    "network",
    "isolation",
    "programs",
];

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

    /// A numeric ceiling where `None` means `unlimited`: a higher or
    /// removed ceiling widens, a lower or new one narrows.
    fn ceiling(
        &mut self,
        (layer, name, unlimited): (&'static str, &str, &str),
        (a, b): (Option<u64>, Option<u64>),
        fmt: fn(u64) -> String,
        locate: impl Fn(&Statements<'_>) -> Option<Location>,
    ) {
        let Some(change) = direction(a, b) else {
            return;
        };
        let show = |v: Option<u64>| v.map_or_else(|| unlimited.to_string(), fmt);
        let what = format!("{name}: {} -> {}", show(a), show(b));
        self.push(layer, change, what, locate);
    }

    /// A boolean control: losing it widens, gaining it narrows.
    fn control(
        &mut self,
        layer: &'static str,
        (a, b): (bool, bool),
        (lost, gained): (&str, &str),
        locate: impl Fn(&Statements<'_>) -> Option<Location>,
    ) {
        match (a, b) {
            (true, false) => self.push(layer, Change::Widened, lost.to_string(), locate),
            (false, true) => self.push(layer, Change::Narrowed, gained.to_string(), locate),
            (true, true) | (false, false) => {}
        }
    }

    /// Whether a difference in `layer` was already found.
    fn reported(&self, layer: &str) -> bool {
        self.out.iter().any(|d| d.layer == layer)
    }
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
        a: Statements::new(a.file, a.source),
        b: Statements::new(b.file, b.source),
        out: Vec::new(),
    };
    effective(&mut d, (a, &ea), (b, &eb));
    facts::plan(&mut d, a, b);
    facts::policy(&mut d, a.policy, b.policy);
    facts::command(&mut d, a.plan, b.plan);
    // Stable: within a layer, differences keep the order they were found.
    d.out
        .sort_by_key(|x| LAYERS.iter().position(|l| *l == x.layer));
    PolicyDiff {
        a: a.file.to_string(),
        b: b.file.to_string(),
        arch: a.plan.arch().name().to_string(),
        differences: d.out,
    }
}

/// The layers read from the effective sandbox as `explain` sees it.
fn effective(
    d: &mut Differ<'_>,
    (a, ea): (&Side<'_>, &Explanation),
    (b, eb): (&Side<'_>, &Explanation),
) {
    let Explanation {
        policy: _,                      // neutral: the name, for reports
        policy_digest: _,               // neutral: which source the plan came from
        arch: _,                        // the plans' architecture (`facts::plan`)
        all_registered_roots_active: _, // neutral: diff activates every root
        mounts,
        writable,
        exec: exec_surface,
        programs: _, // read from the plan (`facts::plan`: `programs`, `cgroup`)
        seccomp: filter,
        limits: _, // read from the plan (rlimits, cgroup, deadlines)
        namespaces,
        network: _,      // read from the plan (`network`)
        not_enforced: _, // derived from the rest
        identity: _,     // read from the plan (`facts::plan`: `identity`)
        on_this_host: _, // never probed here
        expectations: _, // neutral: no effect on the sandbox
    } = ea;
    let skip_a = facts::overlays(a.plan);
    let skip_b = facts::overlays(b.plan);
    let ma = by_path(mounts, &skip_a);
    let mb = by_path(&eb.mounts, &skip_b);
    paths(d, &ma, &mb);
    writes(d, (&ma, writable), (&mb, &eb.writable));
    exec(d, exec_surface, &eb.exec);
    seccomp(d, filter.as_ref(), eb.seccomp.as_ref());
    rlimits(d, a, b);
    cgroup(d, a.plan.cgroup(), b.plan.cgroup());
    deadlines(d, a.plan.watchdog(), b.plan.watchdog());
    network(d, a.plan, b.plan);
    isolation(d, namespaces, &eb.namespaces);
}

/// The visible mounts by path, without the executable overlays of `pin
/// executables` (files already visible through their runtime mount; they
/// are compared as pinning, in `programs`).
fn by_path<'e>(
    mounts: &'e [VisibleMount],
    overlays: &BTreeMap<String, String>,
) -> BTreeMap<&'e str, &'e VisibleMount> {
    mounts
        .iter()
        .filter(|m| !overlays.contains_key(&m.path))
        .map(|m| (m.path.as_str(), m))
        .collect()
}

type Mounts<'e> = BTreeMap<&'e str, &'e VisibleMount>;

fn paths(d: &mut Differ<'_>, ma: &Mounts<'_>, mb: &Mounts<'_>) {
    for (path, m) in mb {
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
    for (path, m) in ma {
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
        mount(d, path, m, n);
    }
}

/// One path visible on both sides.
fn mount(d: &mut Differ<'_>, path: &str, m: &VisibleMount, n: &VisibleMount) {
    let VisibleMount {
        path: _, // the key
        kind,
        access,
        source,
        pinned,
        resolution: _, // neutral: diff never probes the host
        resolved: _,   // neutral: diff never probes the host
        role: _,       // the root's id is compared in `facts`
        bound: _,      // compared in `writes`
    } = m;
    if *access != n.access {
        let change = if n.access == MountAccess::ReadWrite {
            Change::Widened
        } else {
            Change::Narrowed
        };
        d.push(
            "paths",
            change,
            format!("`{path}`: {access} -> {}", n.access),
            |s| s.access_at(path).or_else(|| s.path(path)),
        );
    }
    if *source != n.source || *kind != n.kind {
        let show = |v: &VisibleMount| match &v.source {
            Some(s) => format!("{} of {s}", v.kind),
            None => v.kind.to_string(),
        };
        d.push(
            "paths",
            Change::Widened,
            format!("`{path}` shows {} instead of {}", show(n), show(m)),
            |s| s.source_at(path),
        );
    }
    if *pinned != n.pinned {
        let (change, what) = if n.pinned {
            (Change::Narrowed, "pinned at bind")
        } else {
            (
                Change::Widened,
                "looked up by path at launch, no longer pinned",
            )
        };
        d.push("paths", change, format!("`{path}` is {what}"), |s| {
            s.pin(PinItem::Mounts)
        });
    }
}

fn writes(
    d: &mut Differ<'_>,
    (ma, wa): (&Mounts<'_>, &WritableBytes),
    (mb, wb): (&Mounts<'_>, &WritableBytes),
) {
    for (path, n) in mb {
        let Some(m) = ma.get(path) else { continue };
        if m.access == MountAccess::ReadWrite && n.access == MountAccess::ReadWrite {
            let name = format!("bound on `{path}`");
            d.ceiling(
                ("writes", &name, "unbounded"),
                (m.bound_bytes(), n.bound_bytes()),
                format_bytes,
                |s| s.bound_at(path),
            );
        }
    }
    let WritableBytes {
        tmpfs_bytes: _, // part of `bound_bytes`
        quota_bytes: _, // part of `bound_bytes`
        bound_bytes,
        unbounded,
    } = wa;
    let ua: BTreeSet<&str> = unbounded.iter().map(|u| u.path.as_str()).collect();
    let ub: BTreeSet<&str> = wb.unbounded.iter().map(|u| u.path.as_str()).collect();
    let show = |v: Option<u64>| v.map_or_else(|| "unbounded".to_string(), format_bytes);
    let change = match (*bound_bytes, wb.bound_bytes) {
        (None, None) if ub.difference(&ua).next().is_some() => Some(Change::Widened),
        (None, None) if ua.difference(&ub).next().is_some() => Some(Change::Narrowed),
        (x, y) => direction(x, y),
    };
    if let Some(change) = change {
        let mut what = format!(
            "writable bytes: {} -> {}",
            show(*bound_bytes),
            show(wb.bound_bytes)
        );
        let newly: Vec<&str> = ub.difference(&ua).copied().collect();
        if !newly.is_empty() {
            let _ = write!(what, "; newly unbounded: {}", newly.join(" "));
        }
        d.push("writes", change, what, |s| s.keyword("writes"));
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

fn exec(d: &mut Differ<'_>, xa: &ExecSurface, xb: &ExecSurface) {
    let ExecSurface {
        landlock_allowlist,
        any_file_in: _, // the visible mounts, compared in `paths`
        writable_and_executable,
        code_loaders: _,         // allowlist entries, compared as the allowlist
        loader_runs_writable: _, // the writable mounts (`paths`) with a loader allowed
        memfd_guard,
    } = xa;
    match (landlock_allowlist, &xb.landlock_allowlist) {
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
                    |s| s.exec_target(p),
                );
            }
            for p in removed {
                d.push(
                    "exec",
                    Change::Narrowed,
                    format!("`{p}` may no longer be executed"),
                    |s| s.exec_target(p),
                );
            }
        }
        (None, None) => {
            let (added, removed) =
                set_changes(writable_and_executable, &xb.writable_and_executable);
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
    d.control(
        "exec",
        (*memfd_guard, xb.memfd_guard),
        (
            "memfd_create without MFD_NOEXEC_SEAL is no longer refused",
            "memfd_create without MFD_NOEXEC_SEAL is refused",
        ),
        |s| s.keyword("landlock"),
    );
}

fn denied(a: &ArchFilter) -> Vec<String> {
    a.denied_classes
        .iter()
        .flat_map(|c| c.syscalls.iter().cloned())
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

fn seccomp(d: &mut Differ<'_>, fa: Option<&FilterSummary>, fb: Option<&FilterSummary>) {
    let loc = |s: &Statements<'_>| s.keyword("seccomp");
    let (fa, fb) = match (fa, fb) {
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
    let FilterSummary {
        profile: _, // what the profile decides is compared per architecture
        delivered_by,
        per_arch,
        errors,
    } = fa;
    if *delivered_by != fb.delivered_by {
        let what = format!(
            "filter installed by {} instead of {}",
            explain::delivery_text(&fb.delivered_by),
            explain::delivery_text(delivered_by)
        );
        d.push("seccomp", Change::Widened, what, loc);
    }
    if *errors != fb.errors {
        let what = format!(
            "the filter cannot be compared: {}",
            errors
                .iter()
                .chain(&fb.errors)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        );
        d.push("seccomp", Change::Widened, what, loc);
    }
    for x in per_arch {
        match fb.per_arch.iter().find(|y| y.arch == x.arch) {
            Some(y) => arch_filter(d, x, y),
            None => {
                let what = format!("{}: no filter is compiled", x.arch);
                d.push("seccomp", Change::Widened, what, loc);
            }
        }
    }
}

/// The decisions of one architecture's filter on both sides.
fn arch_filter(d: &mut Differ<'_>, x: &ArchFilter, y: &ArchFilter) {
    let ArchFilter {
        arch,
        denied_classes: _, // through `denied`
        guarded,
        allowed,
        otherwise,
        skipped: _,      // names this architecture lacks: not in `allowed` either way
        instructions: _, // neutral: the program's size
        worst_case_executed: _, // neutral: its speed
        cache_eligible: _, // neutral: its speed
        known_syscalls: _, // neutral: the table's size
    } = x;
    let (dx, dy) = (denied(x), denied(y));
    // A syscall outside a strict list is refused either way: a refusal only
    // changes something for syscalls the other side lets through.
    let (mut now_denied, mut no_longer) = set_changes(&dx, &dy);
    now_denied.retain(|n| passes(x, n));
    no_longer.retain(|n| passes(y, n));
    if !no_longer.is_empty() {
        let what = format!("{arch}: no longer refused: {}", no_longer.join(" "));
        let first = no_longer.first().copied();
        d.push("seccomp", Change::Widened, what, |s| s.syscall(first));
    }
    if !now_denied.is_empty() {
        let what = format!("{arch}: now refused: {}", now_denied.join(" "));
        let first = now_denied.first().copied();
        d.push("seccomp", Change::Narrowed, what, |s| s.syscall(first));
    }
    let loc = |s: &Statements<'_>| s.keyword("seccomp");
    // The `memfd_create` guard comes with the Landlock allowlist and is
    // compared in `exec`.
    let texts = |g: &[explain::Guard]| -> Vec<String> { g.iter().map(|g| g.to_string()).collect() };
    let (gx, gy) = (texts(guarded), texts(&y.guarded));
    let (mut new_guards, mut dropped_guards) = set_changes(&gx, &gy);
    new_guards.retain(|g| passes(x, guard_syscall(g)) && guard_syscall(g) != "memfd_create");
    dropped_guards.retain(|g| passes(y, guard_syscall(g)) && guard_syscall(g) != "memfd_create");
    for g in dropped_guards {
        let what = format!("{arch}: guard dropped: {g}");
        d.push("seccomp", Change::Widened, what, loc);
    }
    for g in new_guards {
        let what = format!("{arch}: guard added: {g}");
        d.push("seccomp", Change::Narrowed, what, loc);
    }
    match (allowed, &y.allowed) {
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
            // A reviewed addition that a strict list names or stops naming
            // was already reported as no longer or now refused.
            let (mut added, mut removed) = set_changes(la, lb);
            added.retain(|n| !no_longer.contains(n));
            removed.retain(|n| !now_denied.contains(n));
            if !added.is_empty() {
                let what = format!("{arch}: newly allowed: {}", added.join(" "));
                let first = added.first().copied();
                d.push("seccomp", Change::Widened, what, |s| s.syscall(first));
            }
            if !removed.is_empty() {
                let what = format!("{arch}: no longer allowed: {}", removed.join(" "));
                let first = removed.first().copied();
                d.push("seccomp", Change::Narrowed, what, |s| s.syscall(first));
            }
            if *otherwise != y.otherwise {
                let what = format!(
                    "{arch}: unlisted syscalls get {} instead of {otherwise}",
                    y.otherwise
                );
                d.push("seccomp", Change::Widened, what, loc);
            }
        }
        (None, None) => {}
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
        d.ceiling(("rlimits", name, "unlimited"), (x, y), fmt, |s| {
            s.limit(name)
        });
    }
}

fn cpu(micros: u64) -> String {
    format!("{} per 100 ms", format_millis(micros / 1000))
}

fn count(v: u64) -> String {
    v.to_string()
}

fn cgroup(d: &mut Differ<'_>, a: Option<&CgroupPolicy>, b: Option<&CgroupPolicy>) {
    let loc = |s: &Statements<'_>| s.keyword("cgroup");
    let (x, y) = match (a, b) {
        (None, None) => return,
        (Some(_), None) => {
            let what = "no cgroup: the worker tree is not limited as a whole".into();
            return d.push("cgroup", Change::Widened, what, loc);
        }
        (None, Some(c)) => {
            let what = format!("the worker tree joins a cgroup under {}", c.parent);
            return d.push("cgroup", Change::Narrowed, what, loc);
        }
        (Some(x), Some(y)) => (x, y),
    };
    let CgroupPolicy {
        parent,
        runner: _, // a host-side program (`programs`)
        limits,
        join_timeout_ms,
    } = x;
    if *parent != y.parent {
        let what = format!("cgroup parent {} instead of {parent}", y.parent);
        d.push("cgroup", Change::Widened, what, |s| s.cgroup_path(false));
    }
    cgroup_limits(d, limits, &y.limits);
    d.ceiling(
        ("cgroup", "join timeout", "none"),
        (Some(*join_timeout_ms), Some(y.join_timeout_ms)),
        format_millis,
        |s| s.cgroup_value(CgroupKind::JoinTimeout),
    );
}

fn cgroup_limits(d: &mut Differ<'_>, la: &CgroupLimits, lb: &CgroupLimits) {
    let CgroupLimits {
        cpu_quota_micros,
        memory_max_bytes,
        memory_swap_max_bytes,
        pids_max,
        io_max,
    } = la;
    let scope = |name| ("cgroup", name, "unlimited");
    d.ceiling(
        scope("cpu.max"),
        (*cpu_quota_micros, lb.cpu_quota_micros),
        cpu,
        |s| s.cgroup_value(CgroupKind::Cpu),
    );
    d.ceiling(
        scope("memory.max"),
        (*memory_max_bytes, lb.memory_max_bytes),
        format_bytes,
        |s| s.cgroup_value(CgroupKind::Memory),
    );
    d.ceiling(
        scope("memory.swap.max"),
        (*memory_swap_max_bytes, lb.memory_swap_max_bytes),
        format_bytes,
        |s| s.cgroup_value(CgroupKind::Swap),
    );
    d.ceiling(scope("pids.max"), (*pids_max, lb.pids_max), count, |s| {
        s.cgroup_value(CgroupKind::Pids)
    });
    let devices: BTreeSet<(u32, u32)> = io_max
        .iter()
        .chain(&lb.io_max)
        .map(|io| (io.major, io.minor))
        .collect();
    for device in devices {
        let get = |l: &[IoMax]| l.iter().find(|io| (io.major, io.minor) == device).copied();
        io(d, device, get(io_max), get(&lb.io_max));
    }
}

/// One device's `io.max` on both sides (`None`: no entry for it).
fn io(d: &mut Differ<'_>, (major, minor): (u32, u32), x: Option<IoMax>, y: Option<IoMax>) {
    let fields = |io: Option<IoMax>| {
        let IoMax {
            major: _, // the key
            minor: _, // the key
            rbps,
            wbps,
            riops,
            wiops,
        } = io.unwrap_or(IoMax {
            major,
            minor,
            rbps: None,
            wbps: None,
            riops: None,
            wiops: None,
        });
        [rbps, wbps, riops, wiops]
    };
    let rate = |v: u64| format!("{}/s", format_bytes(v));
    let iops = |v: u64| format!("{v} iops");
    let keys: [(&str, IoDirection, bool, Format); 4] = [
        ("rbps", IoDirection::Read, false, rate),
        ("wbps", IoDirection::Write, false, rate),
        ("riops", IoDirection::Read, true, iops),
        ("wiops", IoDirection::Write, true, iops),
    ];
    for ((name, direction, is_iops, fmt), (a, b)) in
        keys.into_iter().zip(fields(x).into_iter().zip(fields(y)))
    {
        let name = format!("io.max {major}:{minor} {name}");
        d.ceiling(("cgroup", &name, "unlimited"), (a, b), fmt, |s| {
            s.cgroup_io((major, minor), direction, is_iops)
        });
    }
}

/// How a limit's value is shown.
type Format = fn(u64) -> String;

fn deadlines(d: &mut Differ<'_>, wa: Option<Watchdog>, wb: Option<Watchdog>) {
    let parts = |w: Option<Watchdog>| match w {
        Some(Watchdog {
            session_deadline_ms,
            call_deadline_ms,
        }) => (Some(session_deadline_ms), call_deadline_ms),
        None => (None, None),
    };
    let ((sa, ca), (sb, cb)) = (parts(wa), parts(wb));
    let scope = |name| ("deadlines", name, "none");
    d.ceiling(scope("session deadline"), (sa, sb), format_millis, |s| {
        s.deadline(false)
    });
    d.ceiling(scope("call deadline"), (ca, cb), format_millis, |s| {
        s.deadline(true)
    });
}

fn network(d: &mut Differ<'_>, a: &LaunchPlan, b: &LaunchPlan) {
    let loc = |s: &Statements<'_>| s.keyword("network-broker");
    let isolated = |p: &LaunchPlan| p.ops().contains(&BwrapOp::UnshareAll);
    d.control(
        "network",
        (isolated(a), isolated(b)),
        (
            "the host's network is reachable",
            "an empty network namespace",
        ),
        |_| None,
    );
    let (x, y) = match (a.network_broker(), b.network_broker()) {
        (None, Some(br)) => {
            let what = format!("a network broker at `{}`", br.destination);
            return d.push("network", Change::Widened, what, loc);
        }
        (Some(br), None) => {
            let what = format!("no network broker (was at `{}`)", br.destination);
            return d.push("network", Change::Narrowed, what, loc);
        }
        (Some(x), Some(y)) => (x, y),
        (None, None) => return,
    };
    let BrokerPlan {
        slot: _, // which descriptor: the source is compared as a visible mount
        destination,
        catalog,
        ids,
    } = x;
    if *catalog != y.catalog || *destination != y.destination {
        let what = format!(
            "the broker at `{}` serves another catalog or path",
            y.destination
        );
        let at_catalog = *catalog != y.catalog;
        d.push("network", Change::Widened, what, |s| {
            if at_catalog {
                s.broker(None)
            } else {
                s.path(y.destination.as_str())
                    .or_else(|| s.path(destination.as_str()))
            }
        });
    }
    let names = |ids: &[crate::model::SelectorId]| -> Vec<String> {
        ids.iter().map(|i| i.to_string()).collect()
    };
    let (ia, ib) = (names(ids), names(&y.ids));
    let (added, removed) = set_changes(&ia, &ib);
    if !added.is_empty() {
        let what = format!("broker ids added: {}", added.join(" "));
        let first = added.first().copied();
        d.push("network", Change::Widened, what, |s| s.broker(first));
    }
    if !removed.is_empty() {
        let what = format!("broker ids removed: {}", removed.join(" "));
        let first = removed.first().copied();
        d.push("network", Change::Narrowed, what, |s| s.broker(first));
    }
}

fn isolation(d: &mut Differ<'_>, na: &[Isolation], nb: &[Isolation]) {
    let texts =
        |v: &[Isolation]| -> Vec<String> { v.iter().map(|i| i.text().to_string()).collect() };
    let (ta, tb) = (texts(na), texts(nb));
    let (added, removed) = set_changes(&ta, &tb);
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
