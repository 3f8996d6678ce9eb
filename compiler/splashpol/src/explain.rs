//! The effective sandbox of a lowered plan, for review (`splashc explain`).
//!
//! Everything here is read from the [`LaunchPlan`] and from the seccomp rule
//! sets the launch compiles, never from the policy's knobs alone: the visible
//! paths come from the plan's setup operations in mount order (a later
//! `--remount-ro` makes a mount read-only), the writable-bytes bound from the
//! writable mounts that remain, the exec surface from the runner command,
//! the denied syscalls from [`splash_seccomp::RuleSet::for_launch`] for each
//! architecture. Pure and deterministic: the same plan yields the same text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use splash_seccomp::guards::{self, Class};
use splash_seccomp::{Action, Arch, ArgCond, Fallback, RuleSet, compile_rules};

use crate::model::{Policy, Runners, SeccompPolicy};
use crate::plan::{BwrapOp, ExecArg, LaunchPlan, MountPoint, MountSource, SeccompDelivery};
use crate::text::escaped as esc;
use crate::units::{format_bytes, format_millis};

/// What the worker sees at one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VisibleMount {
    /// Worker-visible path.
    pub path: String,
    /// `root tmpfs`, `bind`, `tmpfs`, `proc` or `dev`.
    pub kind: String,
    /// `read-only` or `read-write`, after every `--remount-ro`.
    pub access: String,
    /// Host source of a bind mount.
    pub source: Option<String>,
    /// Whether the source is a descriptor pinned at bind.
    pub pinned: bool,
    /// What the mount is for (`runtime mount`, `file root "scratch"`, ...).
    pub role: String,
    /// The bound on bytes written here, when writable.
    pub bound: Option<String>,
    /// The same bound in bytes (tmpfs size or project-quota ceiling).
    pub bound_bytes: Option<u64>,
}

/// The bound on bytes the worker can store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WritableBytes {
    /// Sum of the writable tmpfs sizes.
    pub tmpfs_bytes: u64,
    /// Sum of the quota ceilings of writable quota roots (capped by the
    /// aggregate maximum).
    pub quota_bytes: u64,
    /// `tmpfs_bytes + quota_bytes` when nothing writable is unbounded.
    pub bound_bytes: Option<u64>,
    /// Writable paths without a bound, each with the reason.
    pub unbounded: Vec<(String, String)>,
}

/// What the worker can execute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecSurface {
    /// The Landlock allowlist, when a runner enforces one.
    pub landlock_allowlist: Option<Vec<String>>,
    /// Without an allowlist: every executable file below these paths.
    pub any_file_in: Vec<String>,
    /// Writable paths whose new files could be executed.
    pub writable_and_executable: Vec<String>,
    /// Whether `memfd_create` without `MFD_NOEXEC_SEAL` is refused.
    pub memfd_guard: bool,
}

/// Syscalls a filter refuses on one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchFilter {
    /// The architecture.
    pub arch: String,
    /// Unconditionally refused syscalls grouped by escape-surface class
    /// (`EPERM`); under a strict list these are tested before it.
    pub denied_classes: Vec<(String, Vec<String>)>,
    /// Guards on arguments or with another answer (`clone` with namespace
    /// flags, `ioctl` terminal injection, `clone3` `ENOSYS`, ...).
    pub guarded: Vec<String>,
    /// With a strict list: the allowed syscalls, by number (the rest get
    /// `otherwise`).
    pub allowed: Option<Vec<String>>,
    /// What every syscall no rule names gets.
    pub otherwise: String,
    /// Strict-list names this architecture lacks.
    pub skipped: Vec<String>,
    /// The program's length in instructions.
    pub instructions: usize,
    /// The most instructions any syscall executes.
    pub worst_case_executed: usize,
    /// Known syscalls answered from the kernel's action cache.
    pub cache_eligible: usize,
    /// How many syscalls the architecture's table knows.
    pub known_syscalls: usize,
}

/// The compiled filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilterSummary {
    /// The profile.
    pub profile: crate::plan::SeccompProfile,
    /// `bubblewrap` or `runner`.
    pub delivered_by: String,
    /// The filter per architecture.
    pub per_arch: Vec<ArchFilter>,
    /// A rule set or program that could not be built (should not happen for
    /// a plan that lowered); reported rather than hidden.
    pub errors: Vec<String>,
}

/// Resource limits and deadlines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Per-process rlimits applied by a runner.
    pub rlimits: Vec<(String, String)>,
    /// Limits of the cgroup-v2 child the whole worker tree joins.
    pub cgroup: Vec<(String, String)>,
    /// The cgroup-v2 parent the child is created under.
    pub cgroup_parent: Option<String>,
    /// The watchdog's deadlines, by name.
    pub watchdog: Vec<(String, String)>,
}

/// A control this host cannot enforce as planned (or only with a caveat),
/// from the probes of `splashc doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostGap {
    /// `bubblewrap`, `seccomp`, `cgroup`, `path`, ...
    pub control: String,
    /// `missing` (the launch would be refused) or `warning`.
    pub status: String,
    /// What is missing or limited.
    pub detail: String,
    /// How to fix it, when there is a fix.
    pub fix: Option<String>,
}

/// The effective sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The policy's name.
    pub policy: String,
    /// The policy's digest.
    pub policy_digest: String,
    /// The architecture explained.
    pub arch: String,
    /// True when no manifest was given and every registered root is shown.
    pub all_registered_roots_active: bool,
    /// What the worker sees in its mount tree.
    pub mounts: Vec<VisibleMount>,
    /// What the worker can write, and how much.
    pub writable: WritableBytes,
    /// What the worker can execute.
    pub exec: ExecSurface,
    /// The seccomp filter, if any.
    pub seccomp: Option<FilterSummary>,
    /// Resource limits and deadlines.
    pub limits: Limits,
    /// The namespaces the worker is isolated in.
    pub namespaces: Vec<String>,
    /// The network the worker reaches (none, or a broker).
    pub network: String,
    /// What the policy does not enforce.
    pub not_enforced: Vec<String>,
    /// What this host cannot enforce; `None` when the host was not probed
    /// (a plan for another architecture, or `--plan-only`).
    pub on_this_host: Option<Vec<HostGap>>,
}

fn mount_point(p: &MountPoint) -> String {
    match p {
        MountPoint::Root => "/".into(),
        MountPoint::Path(p) => p.to_string(),
    }
}

/// Explain `plan`, which was lowered from `policy`.
pub fn explain(policy: &Policy, plan: &LaunchPlan) -> Explanation {
    let mounts = visible_mounts(plan);
    let writable = writable_bytes(plan, &mounts);
    let exec = exec_surface(policy, plan, &mounts);
    let seccomp = filter_summary(policy, plan);
    let limits = limits(policy, plan);
    let (namespaces, network) = namespaces(plan);
    let not_enforced = not_enforced(policy, plan, &writable, &exec, &limits);
    Explanation {
        policy: plan.policy_name().to_string(),
        policy_digest: plan.policy_digest().to_string(),
        arch: plan.arch().name().to_string(),
        all_registered_roots_active: plan.all_registered_roots_active(),
        mounts,
        writable,
        exec,
        seccomp,
        limits,
        namespaces,
        network,
        not_enforced,
        on_this_host: None,
    }
}

fn visible_mounts(plan: &LaunchPlan) -> Vec<VisibleMount> {
    let rw = || "read-write".to_string();
    let mut mounts = vec![VisibleMount {
        path: "/".into(),
        kind: "root tmpfs".into(),
        access: rw(),
        source: None,
        pinned: false,
        role: "Bubblewrap's new root".into(),
        bound: None,
        bound_bytes: None,
    }];
    let role_of = |dest: &str, source: &MountSource| -> String {
        if let Some(r) = plan
            .active_roots()
            .iter()
            .find(|r| r.destination.as_str() == dest)
        {
            return format!("file root \"{}\" ({})", r.id, r.mode);
        }
        if let Some(b) = plan.network_broker()
            && b.destination.as_str() == dest
        {
            return "network broker".into();
        }
        if let MountSource::Pinned(slot) = source
            && let Some(pin) = plan.pins().get(usize::from(slot.0))
        {
            use crate::plan::PinRole as R;
            return match &pin.role {
                R::RuntimeMount => "runtime mount".into(),
                R::FileRoot(id) => format!("file root \"{id}\""),
                R::NetworkBroker => "network broker".into(),
                R::Bubblewrap => "bubblewrap".into(),
                R::Worker => "pinned worker".into(),
                R::LimitRunner => "pinned limit runner".into(),
                R::LandlockRunner => "pinned landlock runner".into(),
                R::CombinedRunner => "pinned runner".into(),
                R::AllowedExecutable => "pinned allowed executable".into(),
            };
        }
        "runtime mount".into()
    };
    let source_of = |source: &MountSource| -> (Option<String>, bool) {
        match source {
            MountSource::Path(p) => (Some(p.to_string()), false),
            MountSource::Pinned(slot) => (
                plan.pins()
                    .get(usize::from(slot.0))
                    .map(|p| p.host_path.to_string()),
                true,
            ),
        }
    };
    for op in plan.ops() {
        let mount = match op {
            BwrapOp::Proc(p) => VisibleMount {
                path: p.to_string(),
                kind: "proc".into(),
                access: rw(),
                source: None,
                pinned: false,
                role: "the sandbox's own processes".into(),
                bound: None,
                bound_bytes: None,
            },
            BwrapOp::Dev(p) => VisibleMount {
                path: p.to_string(),
                kind: "dev".into(),
                access: rw(),
                source: None,
                pinned: false,
                role: "minimal device nodes".into(),
                bound: None,
                bound_bytes: None,
            },
            BwrapOp::Tmpfs {
                destination,
                size_bytes,
            } => {
                let dest = destination.as_str();
                let role = if dest == "/tmp" {
                    "private /tmp".to_string()
                } else {
                    plan.active_roots()
                        .iter()
                        .find(|r| r.destination.as_str() == dest)
                        .map(|r| format!("file root \"{}\" ({})", r.id, r.mode))
                        .unwrap_or_else(|| "tmpfs".into())
                };
                VisibleMount {
                    path: dest.to_string(),
                    kind: "tmpfs".into(),
                    access: rw(),
                    source: None,
                    pinned: false,
                    role,
                    bound: size_bytes.map(|s| format!("tmpfs size {}", format_bytes(s))),
                    bound_bytes: *size_bytes,
                }
            }
            BwrapOp::RoBind {
                source,
                destination,
            } => {
                let (src, pinned) = source_of(source);
                VisibleMount {
                    path: destination.to_string(),
                    kind: "bind".into(),
                    access: "read-only".into(),
                    source: src,
                    pinned,
                    role: role_of(destination.as_str(), source),
                    bound: None,
                    bound_bytes: None,
                }
            }
            BwrapOp::Bind {
                source,
                destination,
            } => {
                let (src, pinned) = source_of(source);
                let quota = match source {
                    MountSource::Pinned(slot) => {
                        plan.quota_checks().iter().find(|q| q.slot == *slot)
                    }
                    MountSource::Path(_) => None,
                };
                VisibleMount {
                    path: destination.to_string(),
                    kind: "bind".into(),
                    access: rw(),
                    source: src,
                    pinned,
                    role: role_of(destination.as_str(), source),
                    bound: quota.map(|q| {
                        format!(
                            "project quota {}: at most {} and {} inodes",
                            q.quota.project_id,
                            format_bytes(q.quota.max_bytes),
                            q.quota.max_inodes
                        )
                    }),
                    bound_bytes: quota.map(|q| q.quota.max_bytes),
                }
            }
            BwrapOp::RemountRo(p) => {
                let path = mount_point(p);
                if let Some(m) = mounts.iter_mut().rev().find(|m| m.path == path) {
                    m.access = "read-only".into();
                    m.bound = None;
                    m.bound_bytes = None;
                }
                continue;
            }
            _ => continue,
        };
        mounts.push(mount);
    }
    mounts
}

fn writable_bytes(plan: &LaunchPlan, mounts: &[VisibleMount]) -> WritableBytes {
    let mut tmpfs_bytes = 0u64;
    let mut quota_bytes = 0u64;
    let mut unbounded = Vec::new();
    for (m, op_size) in mounts
        .iter()
        .filter(|m| m.access == "read-write")
        .map(|m| (m, tmpfs_size(plan, &m.path)))
    {
        match m.kind.as_str() {
            "proc" => {} // no file data is stored in procfs
            "tmpfs" => match op_size {
                Some(s) => tmpfs_bytes = tmpfs_bytes.saturating_add(s),
                None => unbounded.push((m.path.clone(), "tmpfs without a size".to_string())),
            },
            "root tmpfs" => unbounded.push((
                m.path.clone(),
                "Bubblewrap's root tmpfs is not remounted read-only".to_string(),
            )),
            "dev" => unbounded.push((
                m.path.clone(),
                "the `/dev` tmpfs is not remounted read-only".to_string(),
            )),
            _ => match plan.quota_checks().iter().find(|q| {
                plan.pins()
                    .get(usize::from(q.slot.0))
                    .is_some_and(|p| Some(p.host_path.to_string()) == m.source)
            }) {
                Some(q) => quota_bytes = quota_bytes.saturating_add(q.quota.max_bytes),
                None => unbounded.push((
                    m.path.clone(),
                    "read-write host directory without a project quota".to_string(),
                )),
            },
        }
    }
    if let Some(agg) = plan.aggregate_quota() {
        quota_bytes = quota_bytes.min(agg.max_bytes);
    }
    WritableBytes {
        tmpfs_bytes,
        quota_bytes,
        bound_bytes: unbounded
            .is_empty()
            .then(|| tmpfs_bytes.saturating_add(quota_bytes)),
        unbounded,
    }
}

fn tmpfs_size(plan: &LaunchPlan, path: &str) -> Option<u64> {
    plan.ops().iter().rev().find_map(|op| match op {
        BwrapOp::Tmpfs {
            destination,
            size_bytes,
        } if destination.as_str() == path => *size_bytes,
        _ => None,
    })
}

/// The arguments of each runner in the plan's command, without the runner
/// path and the closing `--`. Runner segments come first, each ended by
/// `--`; the worker and its own arguments follow and are never read here.
fn runner_flags<'a>(policy: &Policy, plan: &'a LaunchPlan) -> Vec<Vec<&'a str>> {
    let runners = match policy.runners() {
        Runners::Combined { .. } => 1,
        Runners::Separate { limit, landlock } => {
            usize::from(landlock.is_some()) + usize::from(limit.is_some())
        }
        _ => 0,
    };
    let mut segments = Vec::new();
    let mut args = plan.command().iter().map(|a| match a {
        ExecArg::Literal(s) => s.as_str(),
        ExecArg::Slot(_) => "",
    });
    for _ in 0..runners {
        let _runner = args.next();
        segments.push(args.by_ref().take_while(|a| *a != "--").collect());
    }
    segments
}

fn exec_surface(policy: &Policy, plan: &LaunchPlan, mounts: &[VisibleMount]) -> ExecSurface {
    let allow: Vec<String> = runner_flags(policy, plan)
        .iter()
        .flat_map(|seg| seg.windows(2))
        .filter(|w| w[0] == "--allow")
        .map(|w| w[1].to_string())
        .collect();
    let writable: Vec<String> = mounts
        .iter()
        .filter(|m| m.access == "read-write" && m.kind != "proc")
        .map(|m| m.path.clone())
        .collect();
    let landlock = !allow.is_empty();
    ExecSurface {
        any_file_in: if landlock {
            Vec::new()
        } else {
            mounts
                .iter()
                .filter(|m| m.kind != "proc")
                .map(|m| m.path.clone())
                .collect()
        },
        writable_and_executable: if landlock { Vec::new() } else { writable },
        landlock_allowlist: landlock.then_some(allow),
        memfd_guard: plan
            .seccomp()
            .as_ref()
            .is_some_and(|s| s.exec_allowlist_guard),
    }
}

fn action_text(a: Action) -> String {
    match a {
        Action::Allow => "allow".into(),
        Action::Errno(e) => match e {
            1 => "EPERM".into(),
            13 => "EACCES".into(),
            38 => "ENOSYS".into(),
            n => format!("errno {n}"),
        },
        Action::KillProcess => "kill the process".into(),
    }
}

fn filter_summary(policy: &Policy, plan: &LaunchPlan) -> Option<FilterSummary> {
    let seccomp = plan.seccomp()?;
    let (profile, exec_allowlist) = crate::lower::launch_filter(policy)?;
    let classes: BTreeMap<&str, Class> = guards::DENIED.iter().map(|d| (d.name, d.class)).collect();
    let mut per_arch = Vec::new();
    let mut errors = Vec::new();
    for arch in Arch::ALL {
        let rules = match RuleSet::for_launch(&profile, arch, exec_allowlist) {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("{}: {e}", arch.name()));
                continue;
            }
        };
        let stats = match compile_rules(&rules) {
            Ok(p) => p.stats(),
            Err(e) => {
                errors.push(format!("{}: {e}", arch.name()));
                continue;
            }
        };
        let mut denied: BTreeMap<Class, Vec<String>> = BTreeMap::new();
        let mut guarded = Vec::new();
        for g in rules.guards() {
            match (&g.cond, classes.get(g.name)) {
                (None, Some(class)) if g.action == Action::Errno(1) => {
                    denied.entry(*class).or_default().push(g.name.to_string());
                }
                (None, _) => guarded.push(format!("{}: {}", g.name, action_text(g.action))),
                (Some(c), _) => guarded.push(format!(
                    "{} when {}: {}",
                    g.name,
                    describe_cond(g.name, c),
                    action_text(g.action)
                )),
            }
        }
        let allowed = match rules.fallback() {
            Fallback::AllowAll => None,
            Fallback::AllowOnly(set) => Some(
                set.iter()
                    .map(|nr| {
                        splash_seccomp::syscall_name(arch, *nr)
                            .map_or_else(|| format!("#{nr}"), str::to_string)
                    })
                    .collect(),
            ),
        };
        per_arch.push(ArchFilter {
            arch: arch.name().to_string(),
            denied_classes: denied
                .into_iter()
                .map(|(c, names)| (c.name().to_string(), names))
                .collect(),
            guarded,
            allowed,
            otherwise: action_text(rules.default_action()),
            skipped: rules.skipped().to_vec(),
            instructions: stats.len,
            worst_case_executed: stats.worst_case_executed,
            cache_eligible: stats.cache_eligible_syscalls,
            known_syscalls: stats.known_syscalls,
        });
    }
    Some(FilterSummary {
        profile: seccomp.profile,
        delivered_by: match seccomp.delivery {
            SeccompDelivery::Bubblewrap => "bubblewrap `--seccomp`".into(),
            SeccompDelivery::Runner => "the runner, after Landlock".into(),
            SeccompDelivery::None => "nothing".into(),
        },
        per_arch,
        errors,
    })
}

fn describe_cond(name: &str, c: &ArgCond) -> String {
    match c {
        ArgCond::AnyBitsLow32 { arg, mask }
            if name == "clone" && *mask == guards::CLONE_NAMESPACE_FLAGS =>
        {
            format!("argument {arg} has a namespace flag")
        }
        ArgCond::EqualsLow32 { arg, values } if name == "ioctl" => {
            let names: Vec<&str> = values
                .iter()
                .map(|v| {
                    guards::DENIED_IOCTLS
                        .iter()
                        .find(|(_, n)| n == v)
                        .map(|(s, _)| *s)
                        .unwrap_or("?")
                })
                .collect();
            format!("argument {arg} is {}", names.join(" or "))
        }
        ArgCond::NoBitsLow32 { arg, mask }
            if name == "memfd_create" && *mask == guards::MFD_NOEXEC_SEAL =>
        {
            format!("argument {arg} lacks MFD_NOEXEC_SEAL")
        }
        ArgCond::AnyBitsLow32 { arg, mask } => format!("argument {arg} has any of {mask:#x}"),
        ArgCond::EqualsLow32 { arg, values } => format!(
            "argument {arg} is one of {}",
            values
                .iter()
                .map(|v| format!("{v:#x}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ArgCond::NoBitsLow32 { arg, mask } => format!("argument {arg} has none of {mask:#x}"),
    }
}

/// The rlimit flags the plan passes to a runner, read back from its command.
const RLIMIT_FLAGS: [(&str, &str); 5] = [
    ("--cpu-seconds", "cpu"),
    ("--address-space-bytes", "address-space"),
    ("--process-count", "processes"),
    ("--open-files", "open-files"),
    ("--file-size-bytes", "file-size"),
];

/// The rlimits the plan's runner command sets, by name (`cpu`,
/// `address-space`, `processes`, `open-files`, `file-size`), as written in
/// the command.
pub fn rlimit_values<'a>(policy: &Policy, plan: &'a LaunchPlan) -> Vec<(&'static str, &'a str)> {
    runner_flags(policy, plan)
        .iter()
        .flat_map(|seg| seg.windows(2))
        .filter_map(|w| {
            RLIMIT_FLAGS
                .iter()
                .find(|(f, _)| *f == w[0])
                .map(|(_, name)| (*name, w[1]))
        })
        .collect()
}

fn limits(policy: &Policy, plan: &LaunchPlan) -> Limits {
    let mut rlimits = Vec::new();
    for (name, raw) in rlimit_values(policy, plan) {
        let Ok(v) = raw.parse::<u64>() else {
            rlimits.push((name.to_string(), raw.to_string()));
            continue;
        };
        let text = match name {
            "cpu" => format!("{v} s of CPU time"),
            "address-space" | "file-size" => format_bytes(v),
            "processes" => format!("{v} (per uid)"),
            _ => v.to_string(),
        };
        rlimits.push((name.to_string(), text));
    }
    let mut cgroup = Vec::new();
    if let Some(c) = plan.cgroup() {
        let l = &c.limits;
        if let Some(v) = l.cpu_quota_micros {
            let quota = if v % 1000 == 0 {
                format_millis(v / 1000)
            } else {
                format!("{v} us")
            };
            cgroup.push(("cpu.max".into(), format!("{quota} per 100 ms")));
        }
        if let Some(v) = l.memory_max_bytes {
            cgroup.push(("memory.max".into(), format_bytes(v)));
        }
        if let Some(v) = l.memory_swap_max_bytes {
            cgroup.push(("memory.swap.max".into(), format_bytes(v)));
        }
        if let Some(v) = l.pids_max {
            cgroup.push(("pids.max".into(), v.to_string()));
        }
        for io in &l.io_max {
            let mut parts = Vec::new();
            if let Some(v) = io.rbps {
                parts.push(format!("read {}/s", format_bytes(v)));
            }
            if let Some(v) = io.wbps {
                parts.push(format!("write {}/s", format_bytes(v)));
            }
            if let Some(v) = io.riops {
                parts.push(format!("read {v} iops"));
            }
            if let Some(v) = io.wiops {
                parts.push(format!("write {v} iops"));
            }
            cgroup.push((
                format!("io.max {}:{}", io.major, io.minor),
                parts.join(", "),
            ));
        }
        cgroup.push(("join timeout".into(), format_millis(c.join_timeout_ms)));
    }
    let mut watchdog = Vec::new();
    if let Some(w) = plan.watchdog() {
        watchdog.push(("session".into(), format_millis(w.session_deadline_ms)));
        if let Some(c) = w.call_deadline_ms {
            watchdog.push(("call".into(), format_millis(c)));
        }
    }
    Limits {
        rlimits,
        cgroup,
        cgroup_parent: plan.cgroup().map(|c| c.parent.to_string()),
        watchdog,
    }
}

fn namespaces(plan: &LaunchPlan) -> (Vec<String>, String) {
    let mut ns = Vec::new();
    let all = plan.ops().contains(&BwrapOp::UnshareAll);
    if all {
        ns.push("new user, mount, pid, ipc, uts, cgroup and network namespaces".to_string());
    }
    if plan.ops().contains(&BwrapOp::DisableUserns) {
        ns.push("no further user namespaces inside (`--disable-userns`)".to_string());
    }
    if plan.ops().contains(&BwrapOp::AsPid1) {
        ns.push("the command is pid 1 of its pid namespace".to_string());
    }
    if plan.ops().contains(&BwrapOp::CapDropAll) {
        ns.push("every capability dropped".to_string());
    }
    if plan.ops().contains(&BwrapOp::ClearEnv) && plan.environment().is_empty() {
        ns.push("empty environment".to_string());
    }
    if plan.ops().contains(&BwrapOp::NewSession) {
        ns.push("new terminal session (no TIOCSTI into the host terminal)".to_string());
    }
    let network = match (plan.network_broker(), all) {
        (Some(b), _) => format!(
            "no network interfaces; {} ids {} only through the host broker at `{}`",
            match b.catalog {
                crate::model::BrokerCatalog::Endpoint => "endpoint",
                crate::model::BrokerCatalog::Origin => "origin",
            },
            b.ids
                .iter()
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", "),
            b.destination
        ),
        (None, true) => "none: an empty network namespace (loopback only)".to_string(),
        (None, false) => "the host's network".to_string(),
    };
    (ns, network)
}

fn not_enforced(
    policy: &Policy,
    plan: &LaunchPlan,
    writable: &WritableBytes,
    exec: &ExecSurface,
    limits: &Limits,
) -> Vec<String> {
    let mut v = Vec::new();
    match policy.seccomp() {
        SeccompPolicy::Off if plan.seccomp().is_none() => {
            v.push("no seccomp filter: every syscall reaches the kernel".into());
        }
        SeccompPolicy::Off => v.push(
            "no seccomp profile: the baseline filter only checks the architecture and guards memfds"
                .into(),
        ),
        SeccompPolicy::DenyKnownEscapeSurface => v.push(
            "the escape-surface profile allows every syscall outside the reviewed escape surface"
                .into(),
        ),
        SeccompPolicy::StrictAllowlist { .. } => {}
    }
    for (path, why) in &writable.unbounded {
        v.push(format!("writes to `{path}` are unbounded: {why}"));
    }
    if exec.landlock_allowlist.is_none() {
        v.push("execution is not restricted: any executable file in a visible mount runs".into());
        if !exec.writable_and_executable.is_empty() {
            v.push(format!(
                "files the worker writes can be executed: {}",
                exec.writable_and_executable
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    } else {
        v.push(
            "Landlock here restricts execution only; reads and writes are bounded by the mounts"
                .into(),
        );
    }
    if !limits.rlimits.is_empty() {
        v.push("rlimits are per process, not per worker tree".into());
    } else if plan.cgroup().is_none() {
        v.push("no resource limits: CPU, memory and processes are unbounded".into());
    }
    if plan.cgroup().is_none() && !limits.rlimits.is_empty() {
        v.push(
            "no cgroup: the worker tree's total memory, CPU and process count are not bounded"
                .into(),
        );
    }
    if plan.watchdog().is_none() {
        v.push("no wall-clock deadline (no watchdog)".into());
    }
    if policy.pin_mounts() {
        v.push("pinning freezes mount roots, not their mutable descendants".into());
    } else {
        v.push("mount sources are looked up by path at launch, not pinned at bind".into());
    }
    if !policy.pin_executables() {
        v.push("executables are looked up by path inside the sandbox, not pinned".into());
    }
    v
}

/// The explanation as text for a terminal.
pub fn render_human(e: &Explanation) -> String {
    // Every text that comes from the policy is shown through `esc`: a
    // control or bidirectional formatting character (which no checked
    // policy holds) could otherwise forge or hide a line.
    let mut t = String::new();
    let _ = writeln!(
        t,
        "policy \"{}\" ({}), plan for {}",
        esc(&e.policy),
        short(&e.policy_digest),
        e.arch
    );
    if e.all_registered_roots_active {
        let _ = writeln!(t, "no manifest: every registered file root is active");
    }
    let _ = writeln!(t, "\nvisible paths (in mount order):");
    let paths: Vec<String> = e.mounts.iter().map(|m| esc(&m.path).to_string()).collect();
    let width = paths.iter().map(String::len).max().unwrap_or(1);
    for (m, path) in e.mounts.iter().zip(&paths) {
        let _ = write!(
            t,
            "  {:<width$}  {:<10} {:<11} {}",
            path,
            m.access,
            m.kind,
            esc(&m.role)
        );
        if let Some(src) = &m.source {
            let _ = write!(
                t,
                " <- {}{}",
                esc(src),
                if m.pinned { " (pinned)" } else { "" }
            );
        }
        if let Some(b) = &m.bound {
            let _ = write!(t, "; {b}");
        }
        t.push('\n');
    }
    let w = &e.writable;
    let _ = writeln!(t, "\nwritable bytes:");
    match w.bound_bytes {
        Some(b) => {
            let _ = writeln!(
                t,
                "  at most {} ({} of tmpfs + {} of project quota)",
                format_bytes(b),
                format_bytes(w.tmpfs_bytes),
                format_bytes(w.quota_bytes)
            );
        }
        None => {
            let _ = writeln!(t, "  unbounded:");
            for (p, why) in &w.unbounded {
                let _ = writeln!(t, "    {}: {}", esc(p), esc(why));
            }
        }
    }
    let _ = writeln!(t, "\nexecution:");
    match &e.exec.landlock_allowlist {
        Some(list) => {
            let _ = writeln!(t, "  Landlock allowlist (nothing else can be executed):");
            for p in list {
                let _ = writeln!(t, "    {}", esc(p));
            }
        }
        None => {
            let _ = writeln!(
                t,
                "  any executable file in: {}",
                esc(&e.exec.any_file_in.join(" "))
            );
            if !e.exec.writable_and_executable.is_empty() {
                let _ = writeln!(
                    t,
                    "  including files written to: {}",
                    esc(&e.exec.writable_and_executable.join(" "))
                );
            }
        }
    }
    if e.exec.memfd_guard {
        let _ = writeln!(
            t,
            "  memfd_create without MFD_NOEXEC_SEAL fails with EACCES"
        );
    }
    let _ = writeln!(t, "\nseccomp:");
    match &e.seccomp {
        None => {
            let _ = writeln!(t, "  none");
        }
        Some(s) => {
            let _ = writeln!(
                t,
                "  profile {}, installed by {}",
                s.profile, s.delivered_by
            );
            for a in &s.per_arch {
                let _ = writeln!(
                    t,
                    "  {}: {} instructions, at most {} run per syscall, {}/{} known syscalls cache-eligible ({}%)",
                    a.arch,
                    a.instructions,
                    a.worst_case_executed,
                    a.cache_eligible,
                    a.known_syscalls,
                    (a.cache_eligible * 100)
                        .checked_div(a.known_syscalls)
                        .unwrap_or(0)
                );
            }
            // Architectures with the same decisions are shown once.
            let mut groups: Vec<(Vec<&str>, &ArchFilter)> = Vec::new();
            for a in &s.per_arch {
                let same = |b: &ArchFilter| {
                    b.denied_classes == a.denied_classes
                        && b.guarded == a.guarded
                        && b.allowed == a.allowed
                        && b.otherwise == a.otherwise
                        && b.skipped == a.skipped
                };
                match groups.iter_mut().find(|(_, b)| same(b)) {
                    Some((names, _)) => names.push(&a.arch),
                    None => groups.push((vec![&a.arch], a)),
                }
            }
            for (names, a) in groups {
                let _ = writeln!(t, "  on {}:", names.join(", "));
                // In the order the filter tests them: the guards, then a
                // strict list.
                for (class, names) in &a.denied_classes {
                    let _ = writeln!(t, "    EPERM {class}: {}", names.join(" "));
                }
                for g in &a.guarded {
                    let _ = writeln!(t, "    {g}");
                }
                if let Some(list) = &a.allowed {
                    let _ = writeln!(
                        t,
                        "    then allowed: the {} listed syscalls; every other syscall: {}",
                        list.len(),
                        a.otherwise
                    );
                }
                if !a.skipped.is_empty() {
                    let _ = writeln!(t, "    not on this architecture: {}", a.skipped.join(" "));
                }
            }
            for err in &s.errors {
                let _ = writeln!(t, "  error: {err}");
            }
        }
    }
    let l = &e.limits;
    let _ = writeln!(t, "\nlimits:");
    if l.rlimits.is_empty() && l.cgroup.is_empty() && l.watchdog.is_empty() {
        let _ = writeln!(t, "  none");
    }
    for (k, v) in &l.rlimits {
        let _ = writeln!(t, "  rlimit {k}: {v}");
    }
    if let Some(p) = &l.cgroup_parent {
        let _ = writeln!(t, "  cgroup child of {}:", esc(p));
        for (k, v) in &l.cgroup {
            let _ = writeln!(t, "    {k}: {v}");
        }
    }
    for (k, v) in &l.watchdog {
        let _ = writeln!(t, "  watchdog {k} deadline: {v}");
    }
    let _ = writeln!(t, "\nisolation:");
    for n in &e.namespaces {
        let _ = writeln!(t, "  {n}");
    }
    let _ = writeln!(t, "  network: {}", e.network);
    let _ = writeln!(t, "\nnot enforced:");
    for n in &e.not_enforced {
        let _ = writeln!(t, "  - {}", esc(n));
    }
    if let Some(gaps) = &e.on_this_host {
        let _ = writeln!(t, "\non this host:");
        if gaps.is_empty() {
            let _ = writeln!(t, "  every control of the plan can be enforced");
        }
        for g in gaps {
            let _ = writeln!(t, "  - {} {}: {}", g.status, g.control, esc(&g.detail));
            if let Some(fix) = &g.fix {
                let _ = writeln!(t, "    fix: {}", esc(fix));
            }
        }
    }
    t
}

fn short(digest: &str) -> String {
    format!("blake3 {}", digest.get(..12).unwrap_or(digest))
}

/// `s` as a `dot` string, its forbidden characters escaped first (a
/// newline would end the statement).
fn dot_quote(s: &str) -> String {
    let s = esc(s).to_string();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The mount graph in Graphviz `dot`: each visible path is a node under the
/// mount that contains it; host sources are boxes with an edge to their
/// mount point; read-write mounts are red, read-only ones blue.
pub fn render_dot(e: &Explanation) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "digraph {} {{",
        dot_quote(&format!("splashpol {}", e.policy))
    );
    let _ = writeln!(t, "  rankdir=LR;");
    let _ = writeln!(t, "  node [fontname=\"monospace\"];");
    for (i, m) in e.mounts.iter().enumerate() {
        let color = if m.access == "read-write" {
            "red"
        } else {
            "blue"
        };
        let mut label = format!("{}\\n{} {}", m.path, m.access, m.kind);
        if let Some(b) = &m.bound {
            label.push_str(&format!("\\n{b}"));
        }
        let _ = writeln!(
            t,
            "  m{i} [label={}, color={color}];",
            dot_quote(&label).replace("\\\\n", "\\n")
        );
    }
    for (i, m) in e.mounts.iter().enumerate() {
        if m.path == "/" {
            continue;
        }
        // The parent is the latest earlier mount whose path contains this one.
        let parent = e.mounts[..i].iter().enumerate().rev().find(|(_, p)| {
            p.path == "/"
                || (m.path.starts_with(&p.path)
                    && m.path.as_bytes().get(p.path.len()) == Some(&b'/'))
        });
        if let Some((j, _)) = parent {
            let _ = writeln!(t, "  m{j} -> m{i};");
        }
    }
    let mut sources: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in e.mounts.iter().enumerate() {
        if let Some(s) = &m.source {
            sources.entry(s.as_str()).or_default().push(i);
        }
    }
    for (k, (src, targets)) in sources.iter().enumerate() {
        let _ = writeln!(
            t,
            "  h{k} [label={}, shape=box, style=dashed];",
            dot_quote(src)
        );
        for i in targets {
            let pinned = e.mounts[*i].pinned;
            let _ = writeln!(
                t,
                "  h{k} -> m{i} [style=dashed, label={}];",
                dot_quote(if pinned { "pinned" } else { "path" })
            );
        }
    }
    let _ = writeln!(t, "}}");
    t
}

#[cfg(test)]
mod tests;
