//! Differential test of `splashpol::diff` against a small model of its own.
//!
//! A generator draws a pair of policies from the language: each is a
//! [`Spec`], a choice for every statement this test covers (runtime mounts,
//! roots of each kind and access, `tmp`, `writes bounded`, `host-writes`,
//! `user-namespaces`, `pin`, the aggregates, `active-roots`, the three
//! seccomp profiles and strict lists, separate and combined runners with
//! `limits` and `landlock`, `cgroup` (with `io`), `watchdog` and a network
//! broker, and
//! the Bubblewrap, worker and runner paths), rendered as `.splashpol` text.
//! `B` is `A` with a few of those choices drawn again, so pairs are close.
//!
//! The oracle is [`Model`]: what the worker can see, write, execute and
//! call, and which programs the host trusts, computed from the `Spec`
//! alone — not from the checker, the plan or `explain`. [`wider`] decides
//! whether `B` is wider than `A` on any axis. The property is that `diff`
//! agrees on every pair: it reports a widening exactly when the model says
//! `B` is wider, and no difference at all exactly when the two models are
//! equal. Spellings that change nothing (`tmp off` or no `tmp`, `seccomp
//! off` or no `seccomp`, the default `active-roots` and `join-timeout`
//! written out, the policy's name) are drawn independently on each side.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use splashpol::model::Policy;
use splashpol::plan::{Arch, LaunchPlan};
use splashpol::{activate, diff, lower};

const BWRAPS: [&str; 2] = ["/usr/bin/bwrap", "/tmp/evil/bwrap"];
const WORKERS: [&str; 2] = ["/opt/w/bin/worker", "/opt/w/bin/worker2"];
const RUNTIMES: [&str; 2] = ["/srv/rt", "/srv/rt2"];
const DATA_SOURCES: [&str; 2] = ["/srv/data", "/srv/other"];
const LIMIT_RUNNERS: [&str; 2] = ["/opt/w/bin/lr", "/opt/w/bin/lr2"];
const LANDLOCK_RUNNERS: [&str; 2] = ["/opt/w/bin/ll", "/opt/w/bin/ll2"];
const COMBINED_RUNNERS: [&str; 2] = ["/opt/w/bin/cr", "/opt/w/bin/cr2"];
const ALLOW_EXEC: [&str; 2] = ["/opt/w/lib/ld.so", "/opt/w/bin/sh"];
const CGROUP_PARENTS: [&str; 2] = ["/sys/fs/cgroup/w", "/sys/fs/cgroup/other"];
const CGROUP_RUNNERS: [&str; 2] = ["/usr/libexec/cg", "/tmp/evil/cg"];
const STRICT_BASE: [&str; 4] = ["execve", "read", "write", "exit_group"];
/// Extra names a strict list may carry; `kcmp` is a reviewed addition
/// that both profiles refuse unless a strict list names it.
const STRICT_EXTRA: [&str; 4] = ["socket", "connect", "getpid", "kcmp"];
const ESCAPE: [&str; 1] = ["kcmp"];
const BROKER_IDS: [&str; 2] = ["api.a", "api.b"];
const MIB: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tmp {
    Off,
    Unbounded,
    Bounded(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seccomp {
    Off,
    DenyKnown,
    Strict(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pin {
    None,
    Mounts,
    Executables,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Limits {
    runner: usize,
    required: bool,
    cpu: Option<u64>,
    open_files: Option<u64>,
    file_size_mib: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cgroup {
    parent: usize,
    runner: usize,
    required: bool,
    memory_mib: Option<u64>,
    pids: Option<u64>,
    join_s: Option<u64>,
    cpu_ms: Option<u64>,
    swap_mib: Option<u64>,
    /// `io 8:16 { read N MiB/s }`.
    io_read_mib: Option<u64>,
}

/// One policy: a choice per statement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Spec {
    name: usize,
    bwrap: usize,
    worker: usize,
    args: Vec<&'static str>,
    runtime: usize,
    usr: bool,
    /// `root "data" host ...`: source and whether read-write.
    data: Option<(usize, bool)>,
    /// `root ID tmpfs at "/w/scratch" size N MiB`: id and size.
    scratch: Option<(&'static str, u64)>,
    /// `root "out" host "/srv/out" ... quota project P bytes B MiB inodes I`.
    out: Option<(u32, u64, u64)>,
    tmp: Tmp,
    tmp_off_written: bool,
    writes_bounded: bool,
    host_writes: bool,
    userns_none: bool,
    pin: Pin,
    quota_aggregate: Option<(u64, u64)>,
    tmpfs_aggregate_mib: Option<u64>,
    active_roots: Option<u64>,
    seccomp: Seccomp,
    seccomp_off_written: bool,
    combined: Option<usize>,
    landlock: Option<(usize, u8)>,
    limits: Option<Limits>,
    cgroup: Option<Cgroup>,
    watchdog: Option<(u64, Option<u64>)>,
    broker: Option<(bool, u8)>,
}

/// The byte positions of `decode` that only change how a policy is
/// written, drawn independently for each side.
const SPELLING: [usize; 2] = [46, 47];
const BYTES: usize = 52;

fn pick<T: Copy>(b: u8, options: &[T]) -> T {
    options[usize::from(b) % options.len()]
}

/// A valid policy from `b`: each byte chooses one statement's form, then
/// the combinations the checker refuses are repaired.
fn decode(b: &[u8]) -> Spec {
    let mut s = Spec {
        name: usize::from(b[47] % 2),
        bwrap: usize::from(b[0] % 2),
        worker: usize::from(b[1] % 2),
        args: pick(
            b[2],
            &[
                &[][..],
                &["--json-lines"][..],
                &["--json-lines", "--verbose"][..],
                &["--verbose"][..],
            ],
        )
        .to_vec(),
        runtime: usize::from(b[3] % 2),
        usr: b[4] % 2 == 1,
        data: match b[5] % 3 {
            0 => None,
            n => Some((usize::from(b[6] % 2), n == 2)),
        },
        scratch: match b[7] % 4 {
            0 => None,
            n => Some((
                pick(b[8], &["scratch", "tmp2"]),
                [8, 16, 32][usize::from(n - 1)],
            )),
        },
        out: (b[9] % 2 == 1).then(|| {
            (
                pick(b[10], &[1, 2]),
                pick(b[11], &[64, 128]),
                pick(b[12], &[1000, 2000]),
            )
        }),
        tmp: pick(
            b[13],
            &[Tmp::Off, Tmp::Unbounded, Tmp::Bounded(16), Tmp::Bounded(32)],
        ),
        tmp_off_written: b[46] & 1 == 1,
        writes_bounded: b[14] % 2 == 1,
        host_writes: b[15] % 2 == 1,
        userns_none: b[16] % 2 == 1,
        pin: pick(b[17], &[Pin::None, Pin::Mounts, Pin::Executables]),
        quota_aggregate: pick(b[18], &[None, Some((256, 5000)), Some((512, 10000))]),
        tmpfs_aggregate_mib: pick(b[19], &[None, Some(64), Some(128)]),
        active_roots: pick(b[20], &[None, Some(3), Some(8), Some(64)]),
        seccomp: match b[21] % 3 {
            0 => Seccomp::Off,
            1 => Seccomp::DenyKnown,
            _ => Seccomp::Strict(b[22] % 16),
        },
        seccomp_off_written: b[46] & 2 == 2,
        combined: (b[23] % 2 == 1).then(|| usize::from(b[24] % 2)),
        landlock: (b[25] % 2 == 1).then(|| (usize::from(b[26] % 2), b[27] % 4)),
        limits: (b[28] % 2 == 1).then(|| Limits {
            runner: usize::from(b[29] % 2),
            required: b[30] % 2 == 1,
            cpu: pick(b[31], &[None, Some(30), Some(60)]),
            open_files: pick(b[32], &[None, Some(64), Some(128)]),
            file_size_mib: pick(b[50], &[None, Some(16), Some(32)]),
        }),
        cgroup: (b[33] % 2 == 1).then(|| Cgroup {
            parent: usize::from(b[34] % 2),
            runner: usize::from(b[35] % 2),
            required: b[36] % 2 == 1,
            memory_mib: pick(b[37], &[None, Some(64), Some(128)]),
            pids: pick(b[38], &[None, Some(16), Some(32)]),
            join_s: pick(b[39], &[None, Some(5), Some(10)]),
            cpu_ms: pick(b[48], &[None, Some(10), Some(20)]),
            swap_mib: pick(b[49], &[None, Some(0), Some(64)]),
            io_read_mib: pick(b[51], &[None, Some(2), Some(4)]),
        }),
        watchdog: (b[40] % 2 == 1).then(|| {
            (
                pick(b[41], &[300, 600]),
                pick(b[42], &[None, Some(30), Some(60)]),
            )
        }),
        broker: (b[43] % 2 == 1).then(|| (b[44] % 2 == 1, 1 + b[45] % 3)),
    };
    repair(&mut s);
    s
}

/// The checker's rules that relate statements, applied to `s`.
fn repair(s: &mut Spec) {
    if let Some((_, true)) = s.data
        && (s.writes_bounded || s.out.is_some() || s.quota_aggregate.is_some())
    {
        s.data = s.data.map(|(src, _)| (src, false));
    }
    if let Some((_, true)) = s.data {
        s.host_writes = true;
    }
    if s.out.is_some() {
        s.userns_none = true;
        if s.pin == Pin::None {
            s.pin = Pin::Mounts;
        }
        s.quota_aggregate.get_or_insert((256, 5000));
    }
    if s.broker.is_some() && s.pin == Pin::None {
        s.pin = Pin::Mounts;
    }
    if s.writes_bounded {
        s.userns_none = true;
    }
    if (s.writes_bounded || s.tmpfs_aggregate_mib.is_some()) && s.tmp == Tmp::Unbounded {
        s.tmp = Tmp::Bounded(16);
    }
    if let Some(l) = &mut s.limits
        && l.cpu.is_none()
        && l.open_files.is_none()
        && l.file_size_mib.is_none()
    {
        l.cpu = Some(30);
    }
    if let Some(c) = &mut s.cgroup
        && c.memory_mib.is_none()
        && c.pids.is_none()
        && c.cpu_ms.is_none()
        && c.swap_mib.is_none()
        && c.io_read_mib.is_none()
    {
        c.memory_mib = Some(64);
    }
}

fn allow_exec(mask: u8) -> Vec<&'static str> {
    (0..ALLOW_EXEC.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| ALLOW_EXEC[i])
        .collect()
}

fn strict_names(mask: u8) -> Vec<&'static str> {
    let extra = (0..STRICT_EXTRA.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| STRICT_EXTRA[i]);
    STRICT_BASE.into_iter().chain(extra).collect()
}

fn broker_ids(mask: u8) -> Vec<&'static str> {
    (0..BROKER_IDS.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| BROKER_IDS[i])
        .collect()
}

/// The `.splashpol` source of `s`.
fn render(s: &Spec) -> String {
    let mut t = format!(
        "splashpol 1\n\npolicy \"{}\" {{\n",
        ["first", "second"][s.name]
    );
    let mut line = |l: String| {
        t.push_str("  ");
        t.push_str(&l);
        t.push('\n');
    };
    line(format!("bubblewrap \"{}\"", BWRAPS[s.bwrap]));
    let args = if s.args.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = s.args.iter().map(|a| format!("\"{a}\"")).collect();
        format!(" args [{}]", quoted.join(", "))
    };
    line(format!("worker \"{}\"{args}", WORKERS[s.worker]));
    line(format!("runtime \"{}\" at \"/opt/w\"", RUNTIMES[s.runtime]));
    if s.usr {
        line("runtime \"/usr\" at \"/usr\"".into());
    }
    if let Some((src, rw)) = s.data {
        let access = if rw { "read-write" } else { "read-only" };
        line(format!(
            "root \"data\" host \"{}\" at \"/w/data\" {access}",
            DATA_SOURCES[src]
        ));
    }
    if let Some((id, size)) = s.scratch {
        line(format!(
            "root \"{id}\" tmpfs at \"/w/scratch\" size {size} MiB"
        ));
    }
    if let Some((project, bytes, inodes)) = s.out {
        line(format!(
            "root \"out\" host \"/srv/out\" at \"/w/out\" read-write quota project {project} bytes {bytes} MiB inodes {inodes}"
        ));
    }
    match s.tmp {
        Tmp::Off if s.tmp_off_written => line("tmp off".into()),
        Tmp::Off => {}
        Tmp::Unbounded => line("tmp private".into()),
        Tmp::Bounded(n) => line(format!("tmp private size {n} MiB")),
    }
    if s.writes_bounded {
        line("writes bounded".into());
    }
    if s.host_writes {
        line("host-writes unbounded".into());
    }
    if s.userns_none {
        line("user-namespaces none".into());
    }
    match s.pin {
        Pin::None => {}
        Pin::Mounts => line("pin mounts".into()),
        Pin::Executables => line("pin mounts, executables".into()),
    }
    if let Some((bytes, inodes)) = s.quota_aggregate {
        line(format!("quota aggregate bytes {bytes} MiB inodes {inodes}"));
    }
    if let Some(n) = s.tmpfs_aggregate_mib {
        line(format!("tmpfs aggregate {n} MiB"));
    }
    if let Some(n) = s.active_roots {
        line(format!("active-roots max {n}"));
    }
    match s.seccomp {
        Seccomp::Off if s.seccomp_off_written => line("seccomp off".into()),
        Seccomp::Off => {}
        Seccomp::DenyKnown => line("seccomp deny-known-escape-surface".into()),
        Seccomp::Strict(mask) => line(format!(
            "seccomp strict-allowlist {{\n    {}\n  }}",
            strict_names(mask).join(" ")
        )),
    }
    if let Some(c) = s.combined {
        line(format!("runner combined \"{}\"", COMBINED_RUNNERS[c]));
    }
    if let Some(l) = &s.limits {
        let runner = match s.combined {
            Some(_) => String::new(),
            None => format!(" runner \"{}\"", LIMIT_RUNNERS[l.runner]),
        };
        let required = if l.required { " required" } else { "" };
        let mut entries = Vec::new();
        if let Some(v) = l.cpu {
            entries.push(format!("cpu {v} s"));
        }
        if let Some(v) = l.open_files {
            entries.push(format!("open-files {v}"));
        }
        if let Some(v) = l.file_size_mib {
            entries.push(format!("file-size {v} MiB"));
        }
        line(format!(
            "limits{runner}{required} {{\n    {}\n  }}",
            entries.join("; ")
        ));
    }
    if let Some((runner, mask)) = s.landlock {
        let runner = match s.combined {
            Some(_) => String::new(),
            None => format!(" runner \"{}\"", LANDLOCK_RUNNERS[runner]),
        };
        let targets: String = allow_exec(mask)
            .iter()
            .map(|t| format!("    allow-exec \"{t}\"\n"))
            .collect();
        line(format!("landlock{runner} {{\n{targets}  }}"));
    }
    if let Some(c) = &s.cgroup {
        let required = if c.required { " required" } else { "" };
        let mut entries = Vec::new();
        if let Some(v) = c.memory_mib {
            entries.push(format!("memory {v} MiB"));
        }
        if let Some(v) = c.pids {
            entries.push(format!("pids {v}"));
        }
        if let Some(v) = c.join_s {
            entries.push(format!("join-timeout {v} s"));
        }
        if let Some(v) = c.cpu_ms {
            entries.push(format!("cpu {v} ms"));
        }
        if let Some(v) = c.swap_mib {
            entries.push(format!("swap {v} MiB"));
        }
        if let Some(v) = c.io_read_mib {
            entries.push(format!("io 8:16 {{ read {v} MiB/s }}"));
        }
        line(format!(
            "cgroup parent \"{}\" runner \"{}\"{required} {{\n    {}\n  }}",
            CGROUP_PARENTS[c.parent],
            CGROUP_RUNNERS[c.runner],
            entries.join("; ")
        ));
    }
    if let Some((session, call)) = s.watchdog {
        let call = call.map(|c| format!(" call {c} s")).unwrap_or_default();
        line(format!("watchdog session {session} s{call}"));
    }
    if let Some((origin, mask)) = s.broker {
        let catalog = if origin { "origin" } else { "endpoint" };
        let ids: Vec<String> = broker_ids(mask)
            .iter()
            .map(|i| format!("\"{i}\""))
            .collect();
        line(format!(
            "network-broker {catalog} parent \"/run/b\" at \"/run/net\" ids [{}]",
            ids.join(", ")
        ));
    }
    t.push_str("}\n");
    t
}

/// What the worker can call, as a set of syscalls.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Calls {
    /// Every syscall (no filter, or the baseline filter).
    All,
    /// Every syscall but the reviewed escape surface and its guarded forms.
    AllButEscape,
    /// Exactly these.
    Only(BTreeSet<&'static str>),
}

impl Calls {
    /// Whether every syscall `self` allows, `other` allows too.
    fn within(&self, other: &Calls) -> bool {
        match (self, other) {
            (_, Calls::All) => true,
            (Calls::All, _) => false,
            (Calls::AllButEscape, Calls::AllButEscape) => true,
            (Calls::AllButEscape, Calls::Only(_)) => false,
            (Calls::Only(s), Calls::AllButEscape) => s.iter().all(|n| !ESCAPE.contains(n)),
            (Calls::Only(s), Calls::Only(t)) => s.is_subset(t),
        }
    }
}

/// What the worker can execute.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Exec {
    /// Only the Landlock allowlist.
    Only(BTreeSet<String>),
    /// Any executable file; files written to these paths too.
    Anything { writable: BTreeSet<String> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    kind: &'static str,
    source: Option<String>,
    writable: bool,
    pinned: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CgroupModel {
    parent: &'static str,
    memory: Option<u64>,
    pids: Option<u64>,
    join_ms: u64,
    required: bool,
    cpu_micros: Option<u64>,
    swap: Option<u64>,
    io_rbps: Option<u64>,
}

/// The effective sandbox of a [`Spec`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Model {
    /// Host-side and chain programs by what they do.
    programs: BTreeMap<&'static str, String>,
    args: Vec<&'static str>,
    bwrap_pinned: bool,
    /// Executables overlaid from pinned descriptors, with the host file.
    pinned_exec: BTreeMap<String, String>,
    visible: BTreeMap<String, Mount>,
    /// The bound on each writable path (`None`: unbounded).
    bounds: BTreeMap<String, Option<u64>>,
    total: Option<u64>,
    exec: Exec,
    memfd_guard: bool,
    calls: Calls,
    /// Who installs the filter, if there is one.
    filter: Option<&'static str>,
    rlimits: BTreeMap<&'static str, u64>,
    limits_required: Option<bool>,
    cgroup: Option<CgroupModel>,
    session: Option<u64>,
    call: Option<u64>,
    broker: Option<(bool, BTreeSet<&'static str>)>,
    userns_locked: bool,
    root_ids: BTreeMap<&'static str, &'static str>,
    quotas: BTreeMap<&'static str, (u32, u64)>,
    quota_aggregate: (Option<u64>, Option<u64>),
    tmpfs_aggregate: Option<u64>,
    active_roots: u64,
    unverified_writes_accepted: bool,
}

fn model(s: &Spec) -> Model {
    let runtime = RUNTIMES[s.runtime];
    let host_of = |p: &str| format!("{runtime}{}", p.trim_start_matches("/opt/w"));
    let pin_mounts = s.pin != Pin::None;
    let pin_exec = s.pin == Pin::Executables;
    let wb = s.writes_bounded;

    let mut programs = BTreeMap::new();
    programs.insert("bubblewrap", BWRAPS[s.bwrap].to_string());
    programs.insert("worker", WORKERS[s.worker].to_string());
    if let Some(c) = &s.cgroup {
        programs.insert("cgroup runner", CGROUP_RUNNERS[c.runner].to_string());
    }
    // The chain: which program applies the rlimits and the allowlist.
    let limit_runner = s.limits.as_ref().map(|l| match s.combined {
        Some(c) => COMBINED_RUNNERS[c],
        None => LIMIT_RUNNERS[l.runner],
    });
    let landlock_runner = s.landlock.map(|(r, _)| match s.combined {
        Some(c) => COMBINED_RUNNERS[c],
        None => LANDLOCK_RUNNERS[r],
    });
    if let Some(p) = limit_runner {
        programs.insert("rlimit runner", p.to_string());
    }
    if let Some(p) = landlock_runner {
        programs.insert("Landlock runner", p.to_string());
    }
    if let (Some(c), None, None) = (s.combined, limit_runner, landlock_runner) {
        programs.insert("one-hop runner", COMBINED_RUNNERS[c].to_string());
    }
    let targets = s.landlock.map(|(_, m)| allow_exec(m)).unwrap_or_default();

    let mut pinned_exec = BTreeMap::new();
    if pin_exec {
        let mut exes = vec![WORKERS[s.worker]];
        match s.combined {
            Some(c) => exes.push(COMBINED_RUNNERS[c]),
            None => exes.extend(limit_runner.iter().chain(&landlock_runner)),
        }
        exes.extend(&targets);
        for e in exes {
            pinned_exec.insert(e.to_string(), host_of(e));
        }
    }

    let mut visible = BTreeMap::new();
    let mut bounds = BTreeMap::new();
    let mut add = |path: &str, kind, source: Option<&str>, writable, pinned, bound| {
        visible.insert(
            path.to_string(),
            Mount {
                kind,
                source: source.map(str::to_string),
                writable,
                pinned,
            },
        );
        if writable {
            bounds.insert(path.to_string(), bound);
        }
    };
    add("/", "root tmpfs", None, !wb, false, None);
    add("/proc", "proc", None, false, false, None);
    add("/dev", "dev", None, !wb, false, None);
    match s.tmp {
        Tmp::Off => {}
        Tmp::Unbounded => add("/tmp", "tmpfs", None, true, false, None),
        Tmp::Bounded(n) => add("/tmp", "tmpfs", None, true, false, Some(n * MIB)),
    }
    add("/opt/w", "bind", Some(runtime), false, pin_mounts, None);
    if s.usr {
        add("/usr", "bind", Some("/usr"), false, pin_mounts, None);
    }
    if let Some((src, rw)) = s.data {
        add(
            "/w/data",
            "bind",
            Some(DATA_SOURCES[src]),
            rw,
            pin_mounts,
            None,
        );
    }
    if let Some((_, size)) = s.scratch {
        add("/w/scratch", "tmpfs", None, true, false, Some(size * MIB));
    }
    if let Some((_, bytes, _)) = s.out {
        add(
            "/w/out",
            "bind",
            Some("/srv/out"),
            true,
            pin_mounts,
            Some(bytes * MIB),
        );
    }
    if s.broker.is_some() {
        add("/run/net", "bind", Some("/run/b"), false, true, None);
    }

    let aggregate_bytes = s.quota_aggregate.map(|(b, _)| b * MIB);
    let total = if bounds.values().any(Option::is_none) {
        None
    } else {
        let quota: u64 = s.out.map_or(0, |(_, b, _)| b * MIB);
        let quota = aggregate_bytes.map_or(quota, |a| quota.min(a));
        let tmpfs: u64 = bounds
            .iter()
            .filter(|(p, _)| p.as_str() != "/w/out")
            .filter_map(|(_, b)| *b)
            .sum();
        Some(tmpfs + quota)
    };

    let exec = match s.landlock {
        Some(_) => {
            let mut allowed = vec![WORKERS[s.worker].to_string()];
            if s.combined.is_none()
                && let Some(p) = limit_runner
            {
                allowed.push(p.to_string());
            }
            allowed.extend(targets.iter().map(|t| t.to_string()));
            Exec::Only(allowed.into_iter().collect())
        }
        None => Exec::Anything {
            writable: bounds.keys().cloned().collect(),
        },
    };

    let calls = match s.seccomp {
        Seccomp::Off => Calls::All,
        Seccomp::DenyKnown => Calls::AllButEscape,
        Seccomp::Strict(mask) => Calls::Only(strict_names(mask).into_iter().collect()),
    };
    let exec_runner = s.combined.is_some() || s.landlock.is_some();
    let filter = match s.seccomp {
        Seccomp::Off if s.landlock.is_none() => None,
        Seccomp::Strict(_) if exec_runner => Some("runner"),
        Seccomp::Off | Seccomp::DenyKnown | Seccomp::Strict(_) => Some("bubblewrap"),
    };

    let mut rlimits = BTreeMap::new();
    if let Some(l) = &s.limits {
        if let Some(v) = l.cpu {
            rlimits.insert("cpu", v);
        }
        if let Some(v) = l.open_files {
            rlimits.insert("open-files", v);
        }
        if let Some(v) = l.file_size_mib {
            rlimits.insert("file-size", v * MIB);
        }
    }

    let mut root_ids = BTreeMap::new();
    if s.data.is_some() {
        root_ids.insert("/w/data", "data");
    }
    if let Some((id, _)) = s.scratch {
        root_ids.insert("/w/scratch", id);
    }
    if s.out.is_some() {
        root_ids.insert("/w/out", "out");
    }
    let mut quotas = BTreeMap::new();
    if let Some((project, _, inodes)) = s.out {
        quotas.insert("/w/out", (project, inodes));
    }

    Model {
        programs,
        args: s.args.clone(),
        bwrap_pinned: pin_exec,
        pinned_exec,
        visible,
        bounds,
        total,
        exec,
        memfd_guard: s.landlock.is_some(),
        calls,
        filter,
        rlimits,
        limits_required: s.limits.as_ref().map(|l| l.required),
        cgroup: s.cgroup.as_ref().map(|c| CgroupModel {
            parent: CGROUP_PARENTS[c.parent],
            memory: c.memory_mib.map(|m| m * MIB),
            pids: c.pids,
            join_ms: c.join_s.unwrap_or(5) * 1000,
            required: c.required,
            cpu_micros: c.cpu_ms.map(|m| m * 1000),
            swap: c.swap_mib.map(|m| m * MIB),
            io_rbps: c.io_read_mib.map(|m| m * MIB),
        }),
        session: s.watchdog.map(|(v, _)| v),
        call: s.watchdog.and_then(|(_, c)| c),
        broker: s
            .broker
            .map(|(origin, mask)| (origin, broker_ids(mask).into_iter().collect())),
        userns_locked: s.userns_none,
        root_ids,
        quotas,
        quota_aggregate: (aggregate_bytes, s.quota_aggregate.map(|(_, i)| i)),
        tmpfs_aggregate: s.tmpfs_aggregate_mib.map(|m| m * MIB),
        active_roots: s.active_roots.unwrap_or(64),
        unverified_writes_accepted: s.host_writes
            && !s.writes_bounded
            && s.quota_aggregate.is_none(),
    }
}

/// A ceiling where `None` is no ceiling: is `b` above `a`?
fn above(a: Option<u64>, b: Option<u64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => y > x,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The axes on which `b` lets the worker (or the host's trust) go
/// anywhere `a` does not, named as `diff` names its layers. A change that is
/// neither wider nor narrower (another program, another source, another
/// catalog, another installer) counts.
fn wider_axes(a: &Model, b: &Model) -> BTreeSet<&'static str> {
    // A program that changes is a widening; so is a one-hop runner that
    // joins the chain applying nothing (what the others apply is judged by
    // its own axis).
    let programs = a
        .programs
        .iter()
        .any(|(k, v)| b.programs.get(k).is_some_and(|w| w != v))
        || (b.programs.contains_key("one-hop runner")
            && !a.programs.contains_key("one-hop runner"));
    let pinning = (a.bwrap_pinned && !b.bwrap_pinned)
        || a.pinned_exec
            .iter()
            .any(|(p, h)| b.pinned_exec.get(p) != Some(h));
    let visible = b.visible.iter().any(|(path, n)| match a.visible.get(path) {
        None => true,
        Some(m) => {
            (n.writable && !m.writable)
                || n.kind != m.kind
                || n.source != m.source
                || (m.pinned && !n.pinned)
        }
    });
    let bounds = b
        .bounds
        .iter()
        .any(|(p, y)| a.bounds.get(p).is_some_and(|x| above(*x, *y)));
    let unbounded = |m: &Model| -> BTreeSet<String> {
        m.bounds
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(p, _)| p.clone())
            .collect()
    };
    let total = above(a.total, b.total)
        || (a.total.is_none() && b.total.is_none() && !unbounded(b).is_subset(&unbounded(a)));
    let exec = match (&a.exec, &b.exec) {
        (Exec::Only(_), Exec::Anything { .. }) => true,
        (Exec::Anything { .. }, Exec::Only(_)) => false,
        (Exec::Only(x), Exec::Only(y)) => !y.is_subset(x),
        (Exec::Anything { writable: x }, Exec::Anything { writable: y }) => !y.is_subset(x),
    };
    let calls = !b.calls.within(&a.calls)
        || match (a.filter, b.filter) {
            (Some(_), None) => true,
            (Some(x), Some(y)) => x != y,
            (None, _) => false,
        };
    let rlimits = a
        .rlimits
        .iter()
        .any(|(k, v)| above(Some(*v), b.rlimits.get(k).copied()))
        || a.limits_required == Some(true) && b.limits_required == Some(false);
    let cgroup = match (&a.cgroup, &b.cgroup) {
        (Some(_), None) => true,
        (Some(x), Some(y)) => {
            x.parent != y.parent
                || above(x.memory, y.memory)
                || above(x.pids, y.pids)
                || above(x.cpu_micros, y.cpu_micros)
                || above(x.swap, y.swap)
                || above(x.io_rbps, y.io_rbps)
                || y.join_ms > x.join_ms
                || (x.required && !y.required)
        }
        (None, _) => false,
    };
    let deadlines = above(a.session, b.session) || above(a.call, b.call);
    let network = match (&a.broker, &b.broker) {
        (None, Some(_)) => true,
        (Some((ca, ia)), Some((cb, ib))) => ca != cb || !ib.is_subset(ia),
        (_, None) => false,
    };
    let isolation = a.userns_locked && !b.userns_locked;
    let roots = a
        .root_ids
        .iter()
        .any(|(d, id)| b.root_ids.get(d).is_some_and(|other| other != id))
        || b.active_roots > a.active_roots;
    let storage = a
        .quotas
        .iter()
        .any(|(d, (p, i))| b.quotas.get(d).is_some_and(|(q, j)| q != p || j > i))
        || above(a.quota_aggregate.0, b.quota_aggregate.0)
        || above(a.quota_aggregate.1, b.quota_aggregate.1)
        || above(a.tmpfs_aggregate, b.tmpfs_aggregate)
        || (b.unverified_writes_accepted && !a.unverified_writes_accepted);
    [
        ("programs", programs || a.args != b.args || pinning),
        ("paths", visible || roots),
        ("writes", bounds || total || storage),
        ("exec", exec || (a.memfd_guard && !b.memfd_guard)),
        ("seccomp", calls),
        ("rlimits", rlimits),
        ("cgroup", cgroup),
        ("deadlines", deadlines),
        ("network", network),
        ("isolation", isolation),
    ]
    .into_iter()
    .filter(|(_, w)| *w)
    .map(|(l, _)| l)
    .collect()
}

/// Whether `b` is wider than `a` on any axis.
fn wider(a: &Model, b: &Model) -> bool {
    !wider_axes(a, b).is_empty()
}

fn lowered(source: &str) -> (Policy, LaunchPlan) {
    let outcome = splashpol::check_source("p.splashpol", source);
    assert!(
        !outcome.has_errors(),
        "the generator wrote an invalid policy:\n{source}\n{}",
        outcome.render_human("p.splashpol", source)
    );
    let policy = outcome.policy.expect("policy");
    let activation = activate::activate(&policy, None).expect("activate");
    let plan = lower::lower(&policy, &activation, Arch::X86_64, "00").expect("lower");
    (policy, plan)
}

fn run_diff(a: &str, b: &str) -> diff::PolicyDiff {
    let (pa, la) = lowered(a);
    let (pb, lb) = lowered(b);
    let side = |file, source, policy, plan| diff::Side {
        file,
        source,
        policy,
        plan,
    };
    diff::diff(&side("a", a, &pa, &la), &side("b", b, &pb, &lb))
}

/// Two close specs: `B` redraws each choice of `A` with probability about
/// 1/32, and the spelling choices always.
fn pair() -> impl Strategy<Value = (Spec, Spec)> {
    (
        proptest::collection::vec(any::<u8>(), BYTES),
        proptest::collection::vec(any::<u8>(), BYTES),
        proptest::collection::vec(0u8..32, BYTES),
    )
        .prop_map(|(a, mut b, keep)| {
            for i in 0..BYTES {
                if keep[i] != 0 && !SPELLING.contains(&i) {
                    b[i] = a[i];
                }
            }
            (decode(&a), decode(&b))
        })
}

fn check(a: &Spec, b: &Spec) -> Result<(), TestCaseError> {
    let (sa, sb) = (render(a), render(b));
    let d = run_diff(&sa, &sb);
    let (ma, mb) = (model(a), model(b));
    let shown = || format!("A:\n{sa}\nB:\n{sb}\n{}", diff::render_human(&d));
    let layers: BTreeSet<&str> = d
        .differences
        .iter()
        .filter(|x| x.change == diff::Change::Widened)
        .map(|x| x.layer)
        .collect();
    prop_assert_eq!(
        wider_axes(&ma, &mb),
        layers,
        "the model and diff disagree on what widens\n{}",
        shown()
    );
    prop_assert_eq!(wider(&ma, &mb), d.widened());
    prop_assert_eq!(
        ma == mb,
        d.differences.is_empty(),
        "the model and diff disagree on whether anything changed\n{}\nmodel A: {:#?}\nmodel B: {:#?}",
        shown(),
        ma,
        mb
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn diff_agrees_with_the_model_both_ways((a, b) in pair()) {
        check(&a, &b)?;
        check(&b, &a)?;
    }
}

/// The generator reaches every statement form it claims to, and the
/// oracle sees both answers, over a fixed sample.
#[test]
fn the_generator_covers_the_grammar() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = pair();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let (mut wide, mut same) = (0, 0);
    for _ in 0..400 {
        let (a, b) = strategy.new_tree(&mut runner).expect("value").current();
        let source = render(&a);
        for (needle, name) in [
            ("read-write quota", "quota root"),
            ("\" read-write\n", "unverified root"),
            ("tmpfs at", "tmpfs root"),
            ("tmp private size", "bounded tmp"),
            ("tmp private\n", "unbounded tmp"),
            ("strict-allowlist", "strict"),
            ("deny-known", "deny-known"),
            ("runner combined", "combined"),
            ("landlock runner", "landlock"),
            ("limits runner", "limits"),
            ("cgroup parent", "cgroup"),
            ("watchdog", "watchdog"),
            ("network-broker", "broker"),
            ("pin mounts, executables", "pin executables"),
            ("writes bounded", "writes bounded"),
            ("active-roots", "active-roots"),
            ("tmpfs aggregate", "tmpfs aggregate"),
            ("io 8:16", "io.max"),
            ("file-size", "file-size"),
        ] {
            if source.contains(needle) {
                seen.insert(name);
            }
        }
        let (ma, mb) = (model(&a), model(&b));
        wide += usize::from(wider(&ma, &mb));
        same += usize::from(ma == mb);
    }
    assert_eq!(seen.len(), 19, "{seen:?}");
    assert!(wide > 40 && wide < 360, "{wide} of 400 pairs widen");
    assert!(same > 10, "only {same} of 400 pairs are identical");
}
