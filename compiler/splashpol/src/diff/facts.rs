//! Every field of the launch plan and of the checked policy, each with its
//! rule: the plan and the policy are destructured without `..` and their
//! enums matched without a wildcard arm, so a field or variant added later
//! does not compile until this module says what a change of it means.
//!
//! Fields that the effective sandbox already shows (the mounts, the filter's
//! decisions, the limits) are named here with the layer that compares them;
//! the rest are compared here: the host-side programs and how they are
//! found, the exec chain, descriptor pinning of executables, quotas, the
//! `required` controls, the process flags Bubblewrap is given and the
//! policy-level bounds the plan does not carry.

use std::collections::BTreeMap;

use super::{Change, Differ, Side, Statements};
use crate::ast::PinItem;
use crate::model::{
    AggregateQuota, Policy, ProjectQuota, RawPolicy, Runners, SandboxPath, WorkerIdentity,
};
use crate::plan::{
    ActiveRoot, BwrapOp, DeviceNode, ExecArg, LaunchPlan, MountPoint, MountSource, Pin, PinRole,
    PinSlot, QuotaCheck, RawPlan, SeccompDelivery, SeccompPlan, Stdio,
};
use crate::units::format_bytes;

/// Whether a pin of `role` is an executable overlaid at its worker-visible
/// path (`pin executables`), as opposed to a mount source or Bubblewrap.
fn overlaid(role: &PinRole) -> bool {
    match role {
        PinRole::RuntimeMount
        | PinRole::FileRoot(_)
        | PinRole::NetworkBroker
        | PinRole::Bubblewrap => false,
        PinRole::Worker
        | PinRole::LimitRunner
        | PinRole::LandlockRunner
        | PinRole::CombinedRunner
        | PinRole::AllowedExecutable => true,
    }
}

/// The pin at `slot`, if the plan has it.
fn pin(plan: &LaunchPlan, slot: PinSlot) -> Option<&Pin> {
    plan.pins().get(usize::from(slot.0))
}

/// The executables `pin executables` overlays from pinned descriptors: the
/// worker-visible path and the host file pinned behind it.
pub(super) fn overlays(plan: &LaunchPlan) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for op in plan.ops() {
        let BwrapOp::RoBind {
            source: MountSource::Pinned(slot),
            destination,
        } = op
        else {
            continue;
        };
        if let Some(Pin {
            host_path,
            kind: _, // fixed by the role
            role,
        }) = pin(plan, *slot)
            && overlaid(role)
        {
            out.insert(destination.to_string(), host_path.to_string());
        }
    }
    out
}

/// The plan's facts that the effective sandbox does not show.
pub(super) fn plan(d: &mut Differ<'_>, a: &Side<'_>, b: &Side<'_>) {
    let RawPlan {
        format: _,                      // neutral: the layout version
        policy_name: _,                 // neutral: free text for reports
        policy_digest: _,               // neutral: which source the plan came from
        session_id: _,                  // neutral: diff lowers without a manifest
        all_registered_roots_active: _, // neutral: diff activates every root
        arch,
        bwrap,
        bwrap_pin,
        pins: _, // mount sources: `paths`; executables: `overlays` below
        ops,
        command: _, // the programs: `chain`; rlimit flags: `rlimits`; `--allow`:
        // `exec`; `--seccomp-fd`: `seccomp`; whatever else: `command`
        seccomp,
        active_roots,
        quota_checks,
        network_broker: _, // `network`; its source directory: `paths`
        environment,
        stdio,
        aggregate_quota,
        cgroup,
        require_cgroup_v2,
        watchdog: _, // `deadlines`
        identity,
    } = a.plan.raw();
    let pb = b.plan.raw();
    identity_change(d, *identity, pb.identity);
    if *arch != pb.arch {
        let what = format!("plans for {} instead of {}", pb.arch.name(), arch.name());
        d.push("seccomp", Change::Widened, what, |_| None);
    }
    program_bytes(d, seccomp.as_ref(), pb.seccomp.as_ref());
    bubblewrap(
        d,
        a.plan,
        b.plan,
        (bwrap_pin.is_some(), pb.bwrap_pin.is_some()),
    );
    if *bwrap != pb.bwrap {
        let what = format!("bubblewrap `{}` instead of `{bwrap}`", pb.bwrap);
        d.push("programs", Change::Widened, what, |s| s.bubblewrap());
    }
    pinned_executables(d, &overlays(a.plan), &overlays(b.plan));
    if let (Some(x), Some(y)) = (cgroup, &pb.cgroup)
        && x.runner != y.runner
    {
        let what = format!("cgroup runner `{}` instead of `{}`", y.runner, x.runner);
        d.push("programs", Change::Widened, what, |s| s.cgroup_path(true));
    }
    if cgroup.is_some() && pb.cgroup.is_some() {
        d.control(
            "cgroup",
            (*require_cgroup_v2, pb.require_cgroup_v2),
            (
                "the cgroup is no longer required: a launch outside it is not refused",
                "the cgroup is required: every launch outside it is refused",
            ),
            |s| s.required("cgroup"),
        );
    }
    flags(d, ops, &pb.ops);
    process(d, (environment, stdio), (&pb.environment, &pb.stdio));
    roots(d, active_roots, &pb.active_roots);
    quotas(d, (a.plan, quota_checks), (b.plan, &pb.quota_checks));
    aggregate(d, *aggregate_quota, pb.aggregate_quota);
}

/// The command after `--`: a difference that no rule of the layers that
/// read it named is a widening.
pub(super) fn command(d: &mut Differ<'_>, a: &LaunchPlan, b: &LaunchPlan) {
    let shown = |p: &LaunchPlan| -> Vec<String> {
        p.command()
            .iter()
            .map(|arg| match arg {
                ExecArg::Literal(s) => s.clone(),
                ExecArg::Slot(slot) => format!("{slot:?}"),
            })
            .collect()
    };
    let (ca, cb) = (shown(a), shown(b));
    let read_by = ["programs", "rlimits", "exec", "seccomp"];
    if ca != cb && !read_by.iter().any(|l| d.reported(l)) {
        let what = format!(
            "the command differs in a way no rule names: {}",
            cb.join(" ")
        );
        d.push("programs", Change::Widened, what, |s| s.worker(false));
    }
}

/// The compiled program for the plan's architecture: any change that no
/// rule of the `seccomp` layer named is a widening.
fn program_bytes(d: &mut Differ<'_>, a: Option<&SeccompPlan>, b: Option<&SeccompPlan>) {
    let (Some(x), Some(y)) = (a, b) else {
        return; // a filter gained or lost is reported by `seccomp`
    };
    let SeccompPlan {
        delivery,
        arch,
        profile: _,           // its decisions are compared per architecture
        exec_allowlist_guard, // `exec` (the memfd guard), which changes the program too
        program,
    } = x;
    let delivered = |s: &SeccompDelivery| match s {
        SeccompDelivery::None => "nobody",
        SeccompDelivery::Bubblewrap => "bubblewrap",
        SeccompDelivery::Runner => "runner",
    };
    let changed = delivered(delivery) != delivered(&y.delivery) || *program != y.program;
    if changed && !d.reported("seccomp") && *exec_allowlist_guard == y.exec_allowlist_guard {
        let what = format!(
            "{}: the compiled filter differs in a way no rule names",
            arch.name()
        );
        d.push("seccomp", Change::Widened, what, |s| s.keyword("seccomp"));
    }
}

/// How Bubblewrap (and the cgroup runner, which follows it) is found.
fn bubblewrap(d: &mut Differ<'_>, a: &LaunchPlan, b: &LaunchPlan, pinned: (bool, bool)) {
    let (what, is, runs, a_descriptor) = if a.cgroup().is_some() && b.cgroup().is_some() {
        (
            "bubblewrap and the cgroup runner",
            "are",
            "run",
            "descriptors",
        )
    } else {
        ("bubblewrap", "is", "runs", "a descriptor")
    };
    d.control(
        "programs",
        pinned,
        (
            &format!(
                "{what} {is} resolved by path at launch, no longer run from {a_descriptor} pinned at bind"
            ),
            &format!("{what} {runs} from {a_descriptor} pinned at bind"),
        ),
        |s| s.pin(PinItem::Executables),
    );
}

/// The executables overlaid from pinned descriptors on both sides.
fn pinned_executables(
    d: &mut Differ<'_>,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) {
    let dropped: Vec<&str> = a
        .keys()
        .filter(|p| !b.contains_key(*p))
        .map(String::as_str)
        .collect();
    let added: Vec<&str> = b
        .keys()
        .filter(|p| !a.contains_key(*p))
        .map(String::as_str)
        .collect();
    let loc = |s: &Statements<'_>| s.pin(PinItem::Executables);
    if !dropped.is_empty() {
        let what = format!(
            "resolved by path at launch, no longer from descriptors pinned at bind: {}",
            dropped.join(" ")
        );
        d.push("programs", Change::Widened, what, loc);
    }
    if !added.is_empty() {
        let what = format!("run from descriptors pinned at bind: {}", added.join(" "));
        d.push("programs", Change::Narrowed, what, loc);
    }
    for (path, host) in a {
        if let Some(other) = b.get(path)
            && other != host
        {
            let what = format!("`{path}` is pinned from {other} instead of {host}");
            d.push("programs", Change::Widened, what, |s| s.source_at(path));
        }
    }
}

/// Process flags Bubblewrap is given that `explain` does not list; mounts,
/// `--seccomp` and the namespaces it lists are compared by their layers.
fn flag(op: &BwrapOp) -> Option<String> {
    match op {
        BwrapOp::Proc(_)
        | BwrapOp::Dev(_)
        | BwrapOp::Tmpfs {
            destination: _,
            size_bytes: _,
        }
        | BwrapOp::RoBind {
            source: _,
            destination: _,
        }
        | BwrapOp::Bind {
            source: _,
            destination: _,
        }
        | BwrapOp::RemountRo(_) => None, // visible mounts: `paths`, `writes`, `exec`
        BwrapOp::Seccomp => None, // who installs the filter: `seccomp`
        BwrapOp::UnshareAll
        | BwrapOp::DisableUserns
        | BwrapOp::CapDropAll
        | BwrapOp::ClearEnv
        | BwrapOp::NewSession
        | BwrapOp::AsPid1 => None, // listed by `explain`: `isolation`, `network`
        BwrapOp::UnshareUser => Some("a required user namespace (`--unshare-user`)".into()),
        BwrapOp::DieWithParent => {
            Some("killed when its launcher dies (`--die-with-parent`)".into())
        }
        BwrapOp::Chdir(p) => Some(format!(
            "starts in `{}`",
            match p {
                MountPoint::Root => "/".to_string(),
                MountPoint::Path(p) => p.to_string(),
            }
        )),
        BwrapOp::DevBind(node) => Some(format!(
            "`/dev/{}` bound from a node chosen per launch",
            device(*node)
        )),
    }
}

fn device(node: DeviceNode) -> &'static str {
    match node {
        DeviceNode::Null
        | DeviceNode::Zero
        | DeviceNode::Full
        | DeviceNode::Random
        | DeviceNode::Urandom
        | DeviceNode::Tty => node.name(),
    }
}

fn flags(d: &mut Differ<'_>, a: &[BwrapOp], b: &[BwrapOp]) {
    let set = |ops: &[BwrapOp]| -> Vec<String> { ops.iter().filter_map(flag).collect() };
    let (fa, fb) = (set(a), set(b));
    let (added, removed) = super::set_changes(&fa, &fb);
    // `--unshare-user` comes with `--disable-userns`, which `isolation`
    // already compared.
    let userns = a.contains(&BwrapOp::DisableUserns) != b.contains(&BwrapOp::DisableUserns);
    let keep = |f: &&&str| !(userns && f.contains("--unshare-user"));
    let loc = |s: &Statements<'_>| s.keyword("user-namespaces");
    for f in removed.iter().filter(keep) {
        d.push("isolation", Change::Widened, format!("no longer: {f}"), loc);
    }
    for f in added.iter().filter(keep) {
        d.push("isolation", Change::Narrowed, format!("now: {f}"), loc);
    }
}

/// The worker's environment and standard streams (fixed for every plan).
fn process(
    d: &mut Differ<'_>,
    (env, stdio): (&[(String, String)], &Stdio),
    (env_b, stdio_b): (&[(String, String)], &Stdio),
) {
    let Stdio {
        stdin,
        stdout,
        stderr,
    } = stdio;
    if (stdin, stdout, stderr) != (&stdio_b.stdin, &stdio_b.stdout, &stdio_b.stderr) {
        let what = format!("standard streams {stdio_b:?} instead of {stdio:?}");
        d.push("isolation", Change::Widened, what, |_| None);
    }
    if env != env_b {
        let names: Vec<&str> = env_b.iter().map(|(k, _)| k.as_str()).collect();
        let what = format!("worker environment: [{}]", names.join(" "));
        d.push("isolation", Change::Widened, what, |_| None);
    }
}

/// The id a manifest selects each root by, per destination.
fn roots(d: &mut Differ<'_>, a: &[ActiveRoot], b: &[ActiveRoot]) {
    for root in a {
        let ActiveRoot {
            id,
            destination,
            mode: _, // the mount's access and bound: `paths`, `writes`
        } = root;
        if let Some(other) = b.iter().find(|r| r.destination == *destination)
            && other.id != *id
        {
            let what = format!(
                "`{destination}` is the root \"{}\" instead of \"{id}\"",
                other.id
            );
            let path = destination.as_str();
            d.push("paths", Change::Widened, what, |s| s.path(path));
        }
    }
}

/// The project quotas, by the destination of the root they bound.
fn quota_by_path(plan: &LaunchPlan, checks: &[QuotaCheck]) -> BTreeMap<String, ProjectQuota> {
    let mut out = BTreeMap::new();
    for QuotaCheck { slot, quota } in checks {
        let destination = plan.ops().iter().find_map(|op| match op {
            BwrapOp::Bind {
                source: MountSource::Pinned(s),
                destination,
            } if s == slot => Some(destination.to_string()),
            _ => None,
        });
        if let Some(path) = destination {
            out.insert(path, *quota);
        }
    }
    out
}

fn quotas(
    d: &mut Differ<'_>,
    (pa, a): (&LaunchPlan, &[QuotaCheck]),
    (pb, b): (&LaunchPlan, &[QuotaCheck]),
) {
    let (qa, qb) = (quota_by_path(pa, a), quota_by_path(pb, b));
    for (path, x) in &qa {
        let Some(y) = qb.get(path) else {
            continue; // a bound gained or lost: `writes`
        };
        let ProjectQuota {
            project_id,
            max_bytes: _, // the path's bound: `writes`
            max_inodes,
        } = x;
        if *project_id != y.project_id {
            let what = format!(
                "`{path}` is bounded by project {} instead of {project_id}",
                y.project_id
            );
            d.push("writes", Change::Widened, what, |s| s.quota_at(path, false));
        }
        let name = format!("inodes on `{path}`");
        d.ceiling(
            ("writes", &name, "unbounded"),
            (Some(*max_inodes), Some(y.max_inodes)),
            |v| v.to_string(),
            |s| s.quota_at(path, true),
        );
    }
}

fn aggregate(d: &mut Differ<'_>, a: Option<AggregateQuota>, b: Option<AggregateQuota>) {
    let parts = |q: Option<AggregateQuota>| match q {
        Some(AggregateQuota {
            max_bytes,
            max_inodes,
        }) => (Some(max_bytes), Some(max_inodes)),
        None => (None, None),
    };
    let ((ba, ia), (bb, ib)) = (parts(a), parts(b));
    d.ceiling(
        ("writes", "quota aggregate bytes", "none"),
        (ba, bb),
        format_bytes,
        |s| s.aggregate("quota", false),
    );
    d.ceiling(
        ("writes", "quota aggregate inodes", "none"),
        (ia, ib),
        |v| v.to_string(),
        |s| s.aggregate("quota", true),
    );
}

/// Which program of the exec chain applies what: the rlimits, the Landlock
/// allowlist, or (a combined runner with neither) the one-hop runner itself.
fn chain(policy: &Policy) -> BTreeMap<&'static str, &SandboxPath> {
    let mut out = BTreeMap::new();
    match policy.runners() {
        Runners::None => {}
        Runners::Separate { limit, landlock } => {
            if let Some(l) = limit {
                out.insert("rlimit", &l.path);
            }
            if let Some(l) = landlock {
                out.insert("Landlock", &l.path);
            }
        }
        Runners::Combined {
            path,
            limits,
            allow_exec,
        } => {
            if limits.is_some() {
                out.insert("rlimit", path);
            }
            if allow_exec.is_some() {
                out.insert("Landlock", path);
            }
            if out.is_empty() {
                out.insert("one-hop", path);
            }
        }
    }
    out
}

/// The worker's host identity: dropping one, or changing it, widens (the
/// worker runs as host root, or as a uid that may own other files); adding
/// one narrows.
fn identity_change(d: &mut Differ<'_>, a: Option<WorkerIdentity>, b: Option<WorkerIdentity>) {
    let shown = |i: Option<WorkerIdentity>| {
        i.map_or_else(
            || "the launching uid".to_string(),
            |i| format!("`identity {i}`"),
        )
    };
    let change = match (a, b) {
        _ if a == b => return,
        (None, Some(_)) => Change::Narrowed,
        (Some(_), None) | (Some(_), Some(_)) => Change::Widened,
        (None, None) => return,
    };
    let what = format!("the worker runs as {} instead of {}", shown(b), shown(a));
    d.push("isolation", change, what, |s| s.keyword("identity"));
}

/// The policy's facts that the plan does not carry, and the exec chain.
pub(super) fn policy(d: &mut Differ<'_>, a: &Policy, b: &Policy) {
    let RawPolicy {
        name: _,       // neutral: free text for reports
        bubblewrap: _, // the plan's `bwrap`
        worker,
        worker_args,
        runtime_mounts: _,             // the plan's mounts
        file_roots: _,                 // the plan's mounts and active roots (every root is active)
        tmp: _,                        // the plan's mounts
        bounded_writes: _,             // the plan's remounts
        no_further_user_namespaces: _, // the plan's namespaces
        pin_mounts: _,                 // the plan's pins
        pin_executables: _,            // the plan's pins
        allow_unbounded_host_writes,
        aggregate_quota: _, // the plan's
        aggregate_ephemeral_max_bytes,
        max_active_file_roots,
        seccomp: _, // the plan's filter
        require_limit_runner,
        runners: _,           // `chain` and the plan's command (`rlimits`, `exec`)
        cgroup: _,            // the plan's
        require_cgroup_v2: _, // the plan's
        watchdog: _,          // the plan's
        network_broker: _,    // the plan's
        worker_identity: _,   // the plan's `identity`
    } = a.raw();
    let rb = b.raw();
    if *worker != rb.worker {
        let what = format!("worker `{}` instead of `{worker}`", rb.worker);
        d.push("programs", Change::Widened, what, |s| s.worker(false));
    }
    if *worker_args != rb.worker_args {
        let show = |v: &[String]| {
            let quoted: Vec<String> = v.iter().map(|a| format!("{a:?}")).collect();
            format!("[{}]", quoted.join(", "))
        };
        let what = format!(
            "worker arguments: {} -> {}",
            show(worker_args),
            show(&rb.worker_args)
        );
        d.push("programs", Change::Widened, what, |s| s.worker(true));
    }
    let (ca, cb) = (chain(a), chain(b));
    for (role, p) in &ca {
        if let Some(q) = cb.get(role)
            && p != q
        {
            let what = format!("the {role} runner is `{q}` instead of `{p}`");
            d.push("programs", Change::Widened, what, |s| {
                s.runner(q.as_str()).or_else(|| s.runner(p.as_str()))
            });
        }
    }
    // A runner that applies rlimits or Landlock is judged by what it
    // applies (`rlimits`, `exec`); one that applies neither is a program
    // the chain runs for nothing a layer shows.
    let idle = |c: &BTreeMap<&str, &SandboxPath>| c.get("one-hop").map(|p| p.to_string());
    match (idle(&ca), idle(&cb)) {
        (None, Some(p)) => {
            let what =
                format!("the exec chain runs the one-hop runner `{p}`, which applies no limit");
            d.push("programs", Change::Widened, what, |s| s.runner(&p));
        }
        (Some(p), None) => {
            let what = format!("the exec chain no longer runs the idle one-hop runner `{p}`");
            d.push("programs", Change::Narrowed, what, |s| s.runner(&p));
        }
        (None, None) | (Some(_), Some(_)) => {}
    }
    if a.runners().limits().is_some() && b.runners().limits().is_some() {
        d.control(
            "rlimits",
            (*require_limit_runner, rb.require_limit_runner),
            (
                "the limit runner is no longer required",
                "the limit runner is required",
            ),
            |s| s.required("limits"),
        );
    }
    // `host-writes unbounded` only takes effect without `writes bounded`
    // and `quota aggregate`.
    let escape =
        |allowed: bool, p: &RawPolicy| allowed && !p.bounded_writes && p.aggregate_quota.is_none();
    d.control(
        "writes",
        (
            !escape(*allow_unbounded_host_writes, a.raw()),
            !escape(rb.allow_unbounded_host_writes, rb),
        ),
        (
            "read-write host roots without a quota are accepted (`host-writes unbounded`)",
            "read-write host roots without a quota are refused",
        ),
        |s| s.keyword("host-writes"),
    );
    d.ceiling(
        ("writes", "tmpfs aggregate", "none"),
        (
            *aggregate_ephemeral_max_bytes,
            rb.aggregate_ephemeral_max_bytes,
        ),
        format_bytes,
        |s| s.aggregate("tmpfs", false),
    );
    d.ceiling(
        ("paths", "active roots at most", "unlimited"),
        (
            Some(u64::from(*max_active_file_roots)),
            Some(u64::from(rb.max_active_file_roots)),
        ),
        |v| v.to_string(),
        |s| s.aggregate("active-roots", false),
    );
}
