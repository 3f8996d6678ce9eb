//! `splashc doctor POLICY [--manifest FILE] [--format json]`: before any
//! launch, prove on this host that every control the lowered plan uses can be
//! enforced, or name the missing piece and the fix.
//!
//! The plan is lowered for this host's architecture exactly as `splashc run`
//! lowers it; then each control it uses is probed: the Bubblewrap binary
//! (type, version, every option, setuid), user namespaces, seccomp, the
//! Landlock ABI, the cgroup-v2 parent and its controllers, project quotas,
//! every host path with its expected type, and the user the launch runs as.
//! Nothing is changed on the host.
//!
//! Exit status: 0 every control is enforceable (warnings allowed), 1 at least
//! one control cannot be enforced (or the policy or manifest has errors), 2
//! usage or I/O problems.
//!
//! The probes go through the [`Host`] trait so that the decisions can be
//! tested against a described host; [`RealHost`] asks this machine.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;
use splash_seccomp::Arch;
use splashpol::emit;
use splashpol::model::{CgroupLimits, Policy, ProjectQuota, Runners};
use splashpol::plan::{BwrapOp, LaunchPlan, MountSource, PinKind, PinRole};

use crate::{DoctorArgs, Format};

/// `CGROUP2_SUPER_MAGIC`.
const CGROUP2_MAGIC: u64 = 0x6367_7270;

/// How one control fares on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Enforceable.
    Ok,
    /// Enforceable, with a consequence the operator should know.
    Warning,
    /// Cannot be enforced here; the launch would be refused.
    Missing,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Missing => "missing",
        }
    }
}

/// One probed control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which control (`bubblewrap`, `seccomp`, `cgroup`, `path`, ...).
    pub control: &'static str,
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// How to make the control enforceable (for `Missing`) or what to
    /// consider (for `Warning`).
    pub fix: Option<String>,
}

impl Finding {
    fn ok(control: &'static str, detail: impl Into<String>) -> Self {
        Finding {
            control,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn missing(control: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding {
            control,
            status: Status::Missing,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn warning(control: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding {
            control,
            status: Status::Warning,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// The type of a host filesystem entry (after following symbolic links).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Directory,
    File,
    Other,
}

/// What [`Host::entry`] reports about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// `st_mode` permission bits (including setuid).
    pub mode: u32,
    /// Whether the path itself is a symbolic link.
    pub symlink: bool,
}

/// Everything the doctor asks of a host.
pub trait Host {
    /// The contents of a small text file (`/proc/sys/...`, cgroup files).
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The entry at `path`, following symbolic links for its type.
    fn entry(&self, path: &Path) -> io::Result<Entry>;
    /// The canonical form of `path`.
    fn canonical(&self, path: &Path) -> io::Result<PathBuf>;
    /// Standard output of `program ARG` (no environment, stdin closed); an
    /// error when it cannot run or exits unsuccessfully.
    fn output(&self, program: &Path, arg: &str) -> io::Result<String>;
    /// The Landlock ABI version.
    fn landlock_abi(&self) -> io::Result<i64>;
    /// `prctl(PR_GET_SECCOMP)` of this process.
    fn seccomp_mode(&self) -> io::Result<i32>;
    /// The effective user id the launch runs as.
    fn euid(&self) -> u32;
    /// `statfs.f_type` of the filesystem holding `path`.
    fn filesystem_magic(&self, path: &Path) -> io::Result<u64>;
    /// Verify a project quota exactly as bind does; the error is the reason.
    fn verify_quota(&self, path: &Path, quota: &ProjectQuota) -> Result<(), String>;
}

/// This machine.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealHost;

impl Host for RealHost {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn entry(&self, path: &Path) -> io::Result<Entry> {
        use std::os::unix::fs::PermissionsExt;
        let symlink = std::fs::symlink_metadata(path)?.file_type().is_symlink();
        let meta = std::fs::metadata(path)?;
        let kind = if meta.is_dir() {
            EntryKind::Directory
        } else if meta.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        Ok(Entry {
            kind,
            mode: meta.permissions().mode(),
            symlink,
        })
    }

    fn canonical(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn output(&self, program: &Path, arg: &str) -> io::Result<String> {
        let out = Command::new(program)
            .arg(arg)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!("exited with {}", out.status)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn landlock_abi(&self) -> io::Result<i64> {
        crate::sys::landlock_abi_version()
    }

    fn seccomp_mode(&self) -> io::Result<i32> {
        crate::sys::seccomp_mode()
    }

    fn euid(&self) -> u32 {
        crate::sys::effective_uid()
    }

    fn filesystem_magic(&self, path: &Path) -> io::Result<u64> {
        crate::sys::filesystem_magic(path)
    }

    fn verify_quota(&self, path: &Path, quota: &ProjectQuota) -> Result<(), String> {
        use std::os::fd::AsFd;
        let dir = std::fs::File::open(path).map_err(|e| format!("cannot open it: {e}"))?;
        splash_runtime::quota::verify(&splash_runtime::KernelQuotaInspector, dir.as_fd(), quota)
            .map(|_| ())
            .map_err(|e| error_chain(&e))
    }
}

/// An error and its sources, joined with `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

pub fn run(args: &DoctorArgs) -> u8 {
    let arch = match Arch::host() {
        Some(a) => a,
        None => {
            eprintln!("splashc doctor: this host's architecture has no seccomp support");
            return 1;
        }
    };
    let (policy, plan) =
        match crate::emit::policy_and_plan(&args.policy, args.manifest.as_deref(), arch) {
            Ok(p) => p,
            Err(code) => return code,
        };
    let findings = diagnose(&RealHost, &policy, &plan);
    let enforceable = findings.iter().all(|f| f.status != Status::Missing);
    let name = args.policy.display().to_string();
    let text = match args.format {
        Format::Human => render_human(&name, &plan, &findings),
        Format::Json => {
            let doc = to_json(&name, &plan, &findings);
            let mut t = serde_json::to_string_pretty(&doc).unwrap_or_default();
            t.push('\n');
            t
        }
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        eprintln!("splashc doctor: cannot write the report: {e}");
        return 2;
    }
    if enforceable { 0 } else { 1 }
}

/// Probe every control `plan` (lowered from `policy`) uses.
pub fn diagnose(host: &dyn Host, policy: &Policy, plan: &LaunchPlan) -> Vec<Finding> {
    let mut findings = Vec::new();
    let setuid = bubblewrap(host, plan, &mut findings);
    user_namespaces(host, plan, setuid, &mut findings);
    if let Some(seccomp) = plan.seccomp() {
        findings.push(seccomp_finding(host, seccomp.profile));
    }
    if policy.runners().landlock_allow().is_some() {
        findings.push(landlock_finding(host));
    }
    cgroup(host, plan, &mut findings);
    for check in plan.quota_checks() {
        if let Some(pin) = plan.pins().get(usize::from(check.slot.0)) {
            findings.push(quota_finding(host, pin.host_path.as_str(), &check.quota));
        }
    }
    paths(host, policy, plan, &mut findings);
    findings.push(root_finding(host));
    findings
}

/// Bubblewrap: the file, its version, every option, setuid. Returns whether
/// it is setuid root (when it could be inspected).
fn bubblewrap(host: &dyn Host, plan: &LaunchPlan, out: &mut Vec<Finding>) -> bool {
    let path = Path::new(plan.bwrap().as_str());
    let needed = emit::minimum_bwrap_version(plan);
    let install = format!(
        "install Bubblewrap {needed} or later (Debian and Ubuntu: `apt-get install bubblewrap`) or point the policy's `bubblewrap` at it"
    );
    let entry = match host.entry(path) {
        Ok(e) => e,
        Err(e) => {
            out.push(Finding::missing(
                "bubblewrap",
                format!("`{}` cannot be used: {e}", plan.bwrap()),
                install.clone(),
            ));
            return false;
        }
    };
    if entry.symlink {
        let target = host
            .canonical(path)
            .map(|p| format!("`{}`", p.display()))
            .unwrap_or_else(|_| "its target".to_string());
        out.push(Finding::missing(
            "bubblewrap",
            format!(
                "`{}` is a symbolic link; the launch refuses to execute through one",
                plan.bwrap()
            ),
            format!("name the file itself in the policy: `bubblewrap` {target}"),
        ));
        return false;
    }
    if entry.kind != EntryKind::File || entry.mode & 0o111 == 0 {
        out.push(Finding::missing(
            "bubblewrap",
            format!("`{}` is not an executable regular file", plan.bwrap()),
            install.clone(),
        ));
        return false;
    }
    let setuid = entry.mode & 0o4000 != 0;
    match host.output(path, "--version") {
        Ok(text) => match parse_version(&text) {
            Some(found) if found >= parse_version(needed).unwrap_or((0, 0, 0)) => {
                out.push(Finding::ok(
                    "bubblewrap",
                    format!(
                        "`{}` is bubblewrap {}.{}.{} (the plan needs {needed} or later){}",
                        plan.bwrap(),
                        found.0,
                        found.1,
                        found.2,
                        if setuid { ", setuid root" } else { "" }
                    ),
                ));
            }
            Some(found) => out.push(Finding::missing(
                "bubblewrap",
                format!(
                    "`{}` is bubblewrap {}.{}.{}; the plan needs {needed} or later",
                    plan.bwrap(),
                    found.0,
                    found.1,
                    found.2
                ),
                install.clone(),
            )),
            None => out.push(Finding::missing(
                "bubblewrap",
                format!(
                    "`{} --version` printed `{}`, not a bubblewrap version",
                    plan.bwrap(),
                    text.trim()
                ),
                install.clone(),
            )),
        },
        Err(e) => out.push(Finding::missing(
            "bubblewrap",
            format!("`{} --version` failed: {e}", plan.bwrap()),
            install.clone(),
        )),
    }
    let used: Vec<&str> = emit::options_used(plan).iter().map(|o| o.option).collect();
    match host.output(path, "--help") {
        Ok(text) => {
            let supported: BTreeSet<&str> = text
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .filter(|w| w.starts_with("--"))
                .collect();
            let absent: Vec<&str> = used
                .iter()
                .copied()
                .filter(|o| !supported.contains(o))
                .collect();
            if absent.is_empty() {
                out.push(Finding::ok(
                    "bubblewrap options",
                    format!(
                        "all {} options the plan uses are in `bwrap --help`: {}",
                        used.len(),
                        used.join(" ")
                    ),
                ));
            } else {
                out.push(Finding::missing(
                    "bubblewrap options",
                    format!(
                        "`{} --help` does not list {}",
                        plan.bwrap(),
                        absent
                            .iter()
                            .map(|o| format!("`{o}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    install.clone(),
                ));
            }
        }
        Err(e) => out.push(Finding::missing(
            "bubblewrap options",
            format!("`{} --help` failed: {e}", plan.bwrap()),
            install.clone(),
        )),
    }
    setuid
}

/// `bubblewrap X.Y.Z` (or just `X.Y[.Z]`) as a comparable triple.
fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let word = text
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let mut parts = word.split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

fn read_number(host: &dyn Host, path: &str) -> Option<i64> {
    host.read(Path::new(path))
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

/// User namespaces: a non-setuid Bubblewrap always needs one, a setuid one
/// only for `--unshare-user`; root needs only a nonzero namespace budget.
fn user_namespaces(host: &dyn Host, plan: &LaunchPlan, setuid: bool, out: &mut Vec<Finding>) {
    let unshare_user = plan.ops().contains(&BwrapOp::UnshareUser);
    if setuid && !unshare_user {
        out.push(Finding::ok(
            "user namespaces",
            "not needed: bubblewrap is setuid root and the plan does not ask for `--unshare-user`",
        ));
        return;
    }
    let privileged = host.euid() == 0 || setuid;
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    match read_number(host, "/proc/sys/user/max_user_namespaces") {
        Some(0) => {
            problems.push("`user.max_user_namespaces` is 0".to_string());
            fixes.push("`sysctl -w user.max_user_namespaces=15000`".to_string());
        }
        Some(_) => {}
        None => {
            problems.push("`/proc/sys/user/max_user_namespaces` cannot be read; the kernel may lack user namespaces".to_string());
            fixes.push("a kernel built with `CONFIG_USER_NS`".to_string());
        }
    }
    if !privileged {
        if read_number(host, "/proc/sys/kernel/unprivileged_userns_clone") == Some(0) {
            problems.push("`kernel.unprivileged_userns_clone` is 0".to_string());
            fixes.push("`sysctl -w kernel.unprivileged_userns_clone=1`".to_string());
        }
        if read_number(
            host,
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ) == Some(1)
        {
            problems.push(
                "AppArmor restricts unprivileged user namespaces (`kernel.apparmor_restrict_unprivileged_userns` is 1)"
                    .to_string(),
            );
            fixes.push(format!(
                "an AppArmor profile for `{}` that allows `userns`, or `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`",
                plan.bwrap()
            ));
        }
    }
    if problems.is_empty() {
        out.push(Finding::ok(
            "user namespaces",
            if privileged {
                "available (the launch is privileged, so only the namespace budget matters)"
            } else {
                "unprivileged user namespaces are available"
            },
        ));
    } else {
        out.push(Finding::missing(
            "user namespaces",
            format!("bubblewrap needs a user namespace: {}", problems.join("; ")),
            fixes.join(", and "),
        ));
    }
}

fn seccomp_finding(host: &dyn Host, profile: splashpol::plan::SeccompProfile) -> Finding {
    let mode = match host.seccomp_mode() {
        Ok(m) => m,
        Err(e) => {
            return Finding::missing(
                "seccomp",
                format!(
                    "the `{profile}` filter cannot be installed: prctl(PR_GET_SECCOMP) failed: {e}"
                ),
                "a kernel built with `CONFIG_SECCOMP` and `CONFIG_SECCOMP_FILTER`",
            );
        }
    };
    // Every filter kills a foreign architecture; the escape-surface guards
    // answer with errno; every other syscall is allowed or (strict) killed.
    let needed = ["kill_process", "errno", "allow"];
    if let Ok(avail) = host.read(Path::new("/proc/sys/kernel/seccomp/actions_avail")) {
        let have: BTreeSet<&str> = avail.split_whitespace().collect();
        let absent: Vec<&str> = needed
            .iter()
            .copied()
            .filter(|a| !have.contains(a))
            .collect();
        if !absent.is_empty() {
            return Finding::missing(
                "seccomp",
                format!(
                    "the kernel lacks the seccomp actions {} the `{profile}` filter returns",
                    absent.join(", ")
                ),
                "a kernel of Linux 4.14 or later (`SECCOMP_RET_KILL_PROCESS`)",
            );
        }
    }
    let already = if mode == 2 {
        "; this process already runs under a filter, which the worker's filter stacks on"
    } else {
        ""
    };
    Finding::ok(
        "seccomp",
        format!(
            "filters with kill-process, errno and allow actions are available for the `{profile}` filter{already}"
        ),
    )
}

fn landlock_finding(host: &dyn Host) -> Finding {
    match host.landlock_abi() {
        Ok(abi) if abi >= 1 => Finding::ok(
            "landlock",
            format!(
                "Landlock ABI {abi} (the executable allowlist needs ABI 1 or later for `LANDLOCK_ACCESS_FS_EXECUTE`)"
            ),
        ),
        Ok(abi) => Finding::missing(
            "landlock",
            format!("Landlock ABI {abi} cannot restrict execution"),
            "a kernel with Landlock ABI 1 or later (Linux 5.13)",
        ),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Finding::missing(
            "landlock",
            "Landlock is built into the kernel but not enabled",
            "add `landlock` to the `lsm=` kernel command line (see `/sys/kernel/security/lsm`) and reboot",
        ),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => Finding::missing(
            "landlock",
            "the kernel has no Landlock support",
            "a kernel built with `CONFIG_SECURITY_LANDLOCK` (Linux 5.13 or later)",
        ),
        Err(e) => Finding::missing(
            "landlock",
            format!("the Landlock ABI cannot be queried: {e}"),
            "a kernel with Landlock enabled",
        ),
    }
}

/// Mount points of cgroup-v2 filesystems, from `/proc/self/mountinfo`.
fn cgroup2_mounts(host: &dyn Host) -> Vec<String> {
    let Ok(text) = host.read(Path::new("/proc/self/mountinfo")) else {
        return Vec::new();
    };
    let mut mounts: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fstype = right.split_whitespace().next()?;
            let point = left.split_whitespace().nth(4)?;
            (fstype == "cgroup2").then(|| point.replace("\\040", " "))
        })
        .collect();
    mounts.sort();
    mounts.dedup();
    mounts
}

/// The controllers a cgroup policy needs, in a fixed order.
fn needed_controllers(limits: &CgroupLimits) -> Vec<&'static str> {
    let mut v = Vec::new();
    if limits.cpu_quota_micros.is_some() {
        v.push("cpu");
    }
    if !limits.io_max.is_empty() {
        v.push("io");
    }
    if limits.memory_max_bytes.is_some() || limits.memory_swap_max_bytes.is_some() {
        v.push("memory");
    }
    if limits.pids_max.is_some() {
        v.push("pids");
    }
    v
}

fn cgroup(host: &dyn Host, plan: &LaunchPlan, out: &mut Vec<Finding>) {
    let mounts = cgroup2_mounts(host);
    let where_v2 = if mounts.is_empty() {
        "no cgroup-v2 filesystem is mounted on this host".to_string()
    } else {
        format!(
            "cgroup v2 is mounted at {}",
            mounts
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let Some(cg) = plan.cgroup() else {
        if plan.require_cgroup_v2() {
            out.push(if mounts.is_empty() {
                Finding::missing(
                    "cgroup",
                    "the policy requires cgroup v2, and no cgroup-v2 filesystem is mounted",
                    "mount cgroup2 (`mount -t cgroup2 none /sys/fs/cgroup`) or boot with `systemd.unified_cgroup_hierarchy=1`",
                )
            } else {
                Finding::ok("cgroup", where_v2)
            });
        }
        return;
    };
    let parent = Path::new(cg.parent.as_str());
    let below = mounts
        .first()
        .map(|m| format!("`{m}/splash-workers`"))
        .unwrap_or_else(|| "a directory of a cgroup-v2 mount".to_string());
    let parent_usable = host
        .entry(parent)
        .is_ok_and(|e| e.kind == EntryKind::Directory)
        && host
            .filesystem_magic(parent)
            .is_ok_and(|m| m == CGROUP2_MAGIC);
    if let (false, Some(mount)) = (parent_usable, mounts.first()) {
        candidate_controllers(host, mount, &cg.limits, out);
    }
    match host.entry(parent) {
        Err(e) => {
            out.push(Finding::missing(
                "cgroup",
                format!("the cgroup parent `{}` cannot be used: {e}; {where_v2}", cg.parent),
                format!(
                    "create a delegated cgroup-v2 directory (for example {below}), owned by the launching user, and name it in `cgroup parent`"
                ),
            ));
        }
        Ok(entry) if entry.kind != EntryKind::Directory => {
            out.push(Finding::missing(
                "cgroup",
                format!("the cgroup parent `{}` is not a directory", cg.parent),
                format!("name a cgroup-v2 directory (for example {below}) in `cgroup parent`"),
            ));
        }
        Ok(_) => match host.filesystem_magic(parent) {
            Ok(CGROUP2_MAGIC) => controllers(host, &cg.parent.to_string(), &cg.limits, out),
            Ok(_) => out.push(Finding::missing(
                "cgroup",
                format!("the cgroup parent `{}` is not on a cgroup-v2 filesystem; {where_v2}", cg.parent),
                format!("create the parent below a cgroup-v2 mount (for example {below}) and name it in `cgroup parent`"),
            )),
            Err(e) => out.push(Finding::missing(
                "cgroup",
                format!("the filesystem of `{}` cannot be inspected: {e}", cg.parent),
                "name a cgroup-v2 directory in `cgroup parent`",
            )),
        },
    }
    let runner = Path::new(cg.runner.as_str());
    out.push(match host.entry(runner) {
        Ok(e) if e.kind == EntryKind::File && e.mode & 0o111 != 0 => Finding::ok(
            "path",
            format!("cgroup runner `{}` is an executable file", cg.runner),
        ),
        Ok(_) => Finding::missing(
            "path",
            format!(
                "cgroup runner `{}` is not an executable regular file",
                cg.runner
            ),
            "install the cgroup runner there with mode 0755",
        ),
        Err(e) => Finding::missing(
            "path",
            format!("cgroup runner `{}` cannot be used: {e}", cg.runner),
            "install the cgroup runner there with mode 0755",
        ),
    });
}

/// When the parent cannot be used: would a parent created below the
/// cgroup-v2 mount `mount` get the controllers the limits need?
fn candidate_controllers(
    host: &dyn Host,
    mount: &str,
    limits: &CgroupLimits,
    out: &mut Vec<Finding>,
) {
    let needed = needed_controllers(limits);
    let Ok(text) = host.read(&Path::new(mount).join("cgroup.controllers")) else {
        return;
    };
    let offered: BTreeSet<&str> = text.split_whitespace().collect();
    let absent: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|c| !offered.contains(c))
        .collect();
    if absent.is_empty() {
        return;
    }
    out.push(Finding::missing(
        "cgroup",
        format!(
            "the limits need the {} controller{}, which the cgroup-v2 hierarchy at `{mount}` does not offer (it offers {})",
            absent.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "),
            if absent.len() == 1 { "" } else { "s" },
            if offered.is_empty() {
                "none".to_string()
            } else {
                offered.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            }
        ),
        "the controllers are bound to cgroup-v1 hierarchies on this host: boot with `systemd.unified_cgroup_hierarchy=1` (or `cgroup_no_v1=all`) so cgroup v2 owns them, then delegate them down to the parent through each `cgroup.subtree_control`",
    ));
}

fn controllers(host: &dyn Host, parent: &str, limits: &CgroupLimits, out: &mut Vec<Finding>) {
    let needed = needed_controllers(limits);
    let read_list = |file: &str| -> Option<BTreeSet<String>> {
        host.read(&Path::new(parent).join(file))
            .ok()
            .map(|t| t.split_whitespace().map(str::to_owned).collect())
    };
    let (Some(available), Some(enabled)) = (
        read_list("cgroup.controllers"),
        read_list("cgroup.subtree_control"),
    ) else {
        out.push(Finding::missing(
            "cgroup",
            format!("`{parent}/cgroup.controllers` or `cgroup.subtree_control` cannot be read"),
            "name a cgroup-v2 directory the launching user can read in `cgroup parent`",
        ));
        return;
    };
    let unavailable: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|c| !available.contains(*c))
        .collect();
    let not_enabled: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|c| available.contains(*c) && !enabled.contains(*c))
        .collect();
    let list = |v: &[&str]| {
        v.iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let plus = |v: &[&str]| {
        v.iter()
            .map(|c| format!("+{c}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !unavailable.is_empty() {
        let grand = Path::new(parent)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "/".to_string());
        out.push(Finding::missing(
            "cgroup",
            format!(
                "the limits need the {} controller{} in `{parent}`, which offers {}",
                list(&unavailable),
                if unavailable.len() == 1 { "" } else { "s" },
                if available.is_empty() {
                    "none".to_string()
                } else {
                    available.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                }
            ),
            format!(
                "enable them for the parent: `echo '{}' > {grand}/cgroup.subtree_control` (and so on up to the root); a controller the cgroup-v2 root does not offer is bound to a cgroup-v1 hierarchy: boot with `systemd.unified_cgroup_hierarchy=1` or `cgroup_no_v1=all`",
                plus(&unavailable)
            ),
        ));
    }
    if !not_enabled.is_empty() {
        out.push(Finding::missing(
            "cgroup",
            format!(
                "`{parent}` offers {} but does not delegate {} to its children",
                list(&not_enabled),
                if not_enabled.len() == 1 { "it" } else { "them" }
            ),
            format!(
                "`echo '{}' > {parent}/cgroup.subtree_control`",
                plus(&not_enabled)
            ),
        ));
    }
    if unavailable.is_empty() && not_enabled.is_empty() {
        out.push(Finding::ok(
            "cgroup",
            if needed.is_empty() {
                format!("`{parent}` is a cgroup-v2 directory (no controller limits)")
            } else {
                format!(
                    "`{parent}` is a cgroup-v2 directory delegating {}",
                    list(&needed)
                )
            },
        ));
    }
}

fn quota_finding(host: &dyn Host, path: &str, quota: &ProjectQuota) -> Finding {
    match host.verify_quota(Path::new(path), quota) {
        Ok(()) => Finding::ok(
            "quota",
            format!(
                "`{path}` carries project {} with hard limits within {} bytes and {} inodes",
                quota.project_id, quota.max_bytes, quota.max_inodes
            ),
        ),
        Err(reason) => Finding::missing(
            "quota",
            format!(
                "the project quota of `{path}` (project {}) cannot be verified: {reason}",
                quota.project_id
            ),
            format!(
                "mount its filesystem with project quotas (ext4: `tune2fs -O project,quota` and the `prjquota` mount option; XFS: `prjquota`), then `chattr -p {id} +P {path}` and `setquota -P {id} 0 <bytes/1024> 0 <inodes> <mount point>` within the policy's maximums",
                id = quota.project_id
            ),
        ),
    }
}

/// What a host path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Directory,
    File,
    Executable,
    FileOrDirectory,
}

impl Want {
    fn from_kind(kind: PinKind) -> Want {
        match kind {
            PinKind::Directory | PinKind::BrokerDirectory => Want::Directory,
            PinKind::RegularFile => Want::File,
            PinKind::Executable => Want::Executable,
            PinKind::FileOrDirectory => Want::FileOrDirectory,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Want::Directory => "a directory",
            Want::File => "a regular file",
            Want::Executable => "an executable regular file",
            Want::FileOrDirectory => "a regular file or a directory",
        }
    }

    fn accepts(self, e: &Entry) -> bool {
        match self {
            Want::Directory => e.kind == EntryKind::Directory,
            Want::File => e.kind == EntryKind::File,
            Want::Executable => e.kind == EntryKind::File && e.mode & 0o111 != 0,
            Want::FileOrDirectory => e.kind != EntryKind::Other,
        }
    }
}

/// The host path behind worker-visible `path`, through the plan's bind
/// mounts (the one with the longest destination that contains it).
fn host_path_behind(plan: &LaunchPlan, path: &str) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for op in plan.ops() {
        let (BwrapOp::RoBind {
            source,
            destination,
        }
        | BwrapOp::Bind {
            source,
            destination,
        }) = op
        else {
            continue;
        };
        let dest = destination.as_str();
        let rest = if path == dest {
            ""
        } else if let Some(r) = path.strip_prefix(dest).filter(|r| r.starts_with('/')) {
            r
        } else {
            continue;
        };
        let source = match source {
            MountSource::Path(p) => p.to_string(),
            MountSource::Pinned(slot) => {
                plan.pins().get(usize::from(slot.0))?.host_path.to_string()
            }
        };
        if best.as_ref().is_none_or(|(len, _)| dest.len() > *len) {
            best = Some((dest.len(), format!("{source}{rest}")));
        }
    }
    best.map(|(_, p)| p)
}

fn role_name(role: &PinRole) -> String {
    match role {
        PinRole::RuntimeMount => "runtime mount".into(),
        PinRole::FileRoot(id) => format!("file root `{id}`"),
        PinRole::NetworkBroker => "network-broker parent".into(),
        PinRole::Bubblewrap => "bubblewrap".into(),
        PinRole::Worker => "worker".into(),
        PinRole::LimitRunner => "limit runner".into(),
        PinRole::LandlockRunner => "landlock runner".into(),
        PinRole::CombinedRunner => "combined runner".into(),
        PinRole::AllowedExecutable => "allowed executable".into(),
    }
}

/// Every host path the launch opens, mounts or executes, with its type.
fn paths(host: &dyn Host, policy: &Policy, plan: &LaunchPlan, out: &mut Vec<Finding>) {
    let mut wanted: Vec<(String, String, Want)> = Vec::new();
    for pin in plan.pins() {
        if pin.role == PinRole::Bubblewrap {
            continue; // probed with its version and options
        }
        wanted.push((
            role_name(&pin.role),
            pin.host_path.to_string(),
            Want::from_kind(pin.kind),
        ));
    }
    let roots: BTreeSet<&str> = plan
        .active_roots()
        .iter()
        .map(|r| r.destination.as_str())
        .collect();
    for op in plan.ops() {
        match op {
            BwrapOp::RoBind {
                source: MountSource::Path(p),
                destination,
            } => {
                let (role, want) = if roots.contains(destination.as_str()) {
                    ("file root".to_string(), Want::Directory)
                } else {
                    ("runtime mount".to_string(), Want::FileOrDirectory)
                };
                wanted.push((role, p.to_string(), want));
            }
            BwrapOp::Bind {
                source: MountSource::Path(p),
                ..
            } => wanted.push(("file root".into(), p.to_string(), Want::Directory)),
            _ => {}
        }
    }
    let mut executables: Vec<(&str, String)> = vec![("worker", policy.worker().to_string())];
    match policy.runners() {
        Runners::Combined { path, .. } => {
            executables.push(("combined runner", path.to_string()));
        }
        Runners::Separate { limit, landlock } => {
            if let Some(r) = limit {
                executables.push(("limit runner", r.path.to_string()));
            }
            if let Some(r) = landlock {
                executables.push(("landlock runner", r.path.to_string()));
            }
        }
        _ => {}
    }
    for p in policy.runners().landlock_allow().into_iter().flatten() {
        executables.push(("allowed executable", p.to_string()));
    }
    for (role, inside) in executables {
        match host_path_behind(plan, &inside) {
            Some(host_path) if host_path != inside => wanted.push((
                format!("{role} (`{inside}` in the sandbox)"),
                host_path,
                Want::Executable,
            )),
            Some(host_path) => wanted.push((role.to_string(), host_path, Want::Executable)),
            None => out.push(Finding::missing(
                "path",
                format!("{role} `{inside}` is not inside any mount of the sandbox"),
                "add a `runtime` mount that contains it",
            )),
        }
    }
    let mut seen = BTreeSet::new();
    for (role, path, want) in wanted {
        if !seen.insert((path.clone(), want.name())) {
            continue;
        }
        out.push(path_finding(host, &role, &path, want));
    }
}

fn path_finding(host: &dyn Host, role: &str, path: &str, want: Want) -> Finding {
    let p = Path::new(path);
    let fix = format!("create `{path}` as {} or change the policy", want.name());
    let entry = match host.entry(p) {
        Ok(e) => e,
        Err(e) => {
            return Finding::missing("path", format!("{role}: `{path}`: {e}"), fix);
        }
    };
    if want == Want::Executable && entry.symlink {
        return Finding::missing(
            "path",
            format!(
                "{role}: `{path}` is a symbolic link; executables are named by the file itself"
            ),
            "name the link's target in the policy",
        );
    }
    if host.canonical(p).is_ok_and(|c| c == Path::new("/")) {
        return Finding::missing(
            "path",
            format!("{role}: `{path}` resolves to `/`; the host root is never mounted"),
            "name a directory below `/`",
        );
    }
    if !want.accepts(&entry) {
        let found = match entry.kind {
            EntryKind::Directory => "a directory",
            EntryKind::File if entry.mode & 0o111 == 0 => "a file without an execute bit",
            EntryKind::File => "a regular file",
            EntryKind::Other => "neither a regular file nor a directory",
        };
        return Finding::missing(
            "path",
            format!("{role}: `{path}` is {found}; expected {}", want.name()),
            fix,
        );
    }
    let found = match (want, entry.kind) {
        (Want::FileOrDirectory, EntryKind::Directory) => "a directory",
        (Want::FileOrDirectory, _) => "a regular file",
        _ => want.name(),
    };
    Finding::ok("path", format!("{role}: `{path}` is {found}"))
}

fn root_finding(host: &dyn Host) -> Finding {
    let uid = host.euid();
    if uid == 0 {
        Finding::warning(
            "launch user",
            "the launch runs as root: the worker is host uid 0 without capabilities, so it may write every root-owned file a read-write mount exposes and is treated as root by anything that checks only the uid",
            "launch from a dedicated unprivileged user (with unprivileged user namespaces or a setuid bubblewrap)",
        )
    } else {
        Finding::ok(
            "launch user",
            format!(
                "the launch runs as uid {uid}; the worker is host uid {uid} without capabilities"
            ),
        )
    }
}

fn render_human(name: &str, plan: &LaunchPlan, findings: &[Finding]) -> String {
    let mut t = format!(
        "splashc doctor: `{name}` (policy \"{}\") on this host ({})\n",
        plan.policy_name(),
        plan.arch().name()
    );
    if plan.all_registered_roots_active() {
        t.push_str("note: no manifest given; every registered file root is checked\n");
    }
    for f in findings {
        t.push_str(&format!(
            "  {:<8}{:<20}{}\n",
            f.status.name(),
            f.control,
            f.detail
        ));
        if let Some(fix) = &f.fix {
            let label = if f.status == Status::Missing {
                "fix"
            } else {
                "consider"
            };
            t.push_str(&format!("  {:<28}{label}: {fix}\n", ""));
        }
    }
    let missing = findings
        .iter()
        .filter(|f| f.status == Status::Missing)
        .count();
    let warnings = findings
        .iter()
        .filter(|f| f.status == Status::Warning)
        .count();
    if missing == 0 {
        t.push_str(&format!(
            "every control of the plan can be enforced on this host ({warnings} warning{})\n",
            if warnings == 1 { "" } else { "s" }
        ));
    } else {
        t.push_str(&format!(
            "{missing} control{} cannot be enforced on this host; a launch would be refused\n",
            if missing == 1 { "" } else { "s" }
        ));
    }
    t
}

fn to_json(name: &str, plan: &LaunchPlan, findings: &[Finding]) -> serde_json::Value {
    json!({
        "file": name,
        "policy": plan.policy_name(),
        "arch": plan.arch().name(),
        "all_registered_roots_active": plan.all_registered_roots_active(),
        "enforceable": findings.iter().all(|f| f.status != Status::Missing),
        "checks": findings.iter().map(|f| json!({
            "control": f.control,
            "status": f.status.name(),
            "detail": f.detail,
            "fix": f.fix,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests;
