//! `splashc doctor (POLICY [--manifest FILE] | --plan FILE) [--format json]`:
//! before any launch, prove on this host that every control the lowered plan
//! uses can be enforced, or name the missing piece and the fix.
//!
//! The plan is lowered for this host's architecture exactly as `splashc run`
//! lowers it (or read as a launch plan, `--plan`). Two kinds of finding:
//!
//! - **bind's own checks**, from [`splash_runtime::preflight()`]: every check
//!   `BoundCommand::bind` makes, with every failure rather than the first,
//!   and each failure's reason exactly bind's error. Doctor adds a fix for
//!   each and never checks any of these itself;
//! - **kernel features that bind does not ask about** (they are exercised
//!   only when the sandbox is set up, after bind): user namespaces and an
//!   AppArmor restriction of them, seccomp filters and their actions, the
//!   Landlock ABI, whether the cgroup-v2 hierarchy offers the controllers
//!   the limits need; plus the Bubblewrap version and setuid bit and the
//!   user the launch runs as.
//!
//! Exit status: 0 every control is enforceable (warnings allowed), 1 at least
//! one control cannot be enforced (or the policy, manifest or plan has
//! errors), 2 usage or I/O problems.
//!
//! The kernel probes go through the [`Host`] trait so that their decisions
//! and the fix hints can be tested against a described host; [`RealHost`]
//! asks this machine. The preflight always runs on this machine.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;
use splash_runtime::cgroup::needed_controllers;
use splash_runtime::{
    BindError, BindOptions, BrokerBindError, CgroupError, Check, Outcome, Preflight, SetIdError,
    Step,
};
use splash_seccomp::Arch;
use splashpol::emit;
use splashpol::plan::{BwrapOp, LaunchPlan};

use crate::exit::Exit;
use crate::{DoctorArgs, Format};

/// The most bytes a launch plan read with `--plan` may hold (JSON; the
/// emitted plans of the bundled policies are under 8 KB).
pub const MAX_PLAN_BYTES: u64 = 16 * 1024 * 1024;

/// How one control fares on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Enforceable.
    Ok,
    /// Enforceable, with a consequence the operator should know.
    Warning,
    /// Not checked: an earlier failure left the check without its input.
    Skipped,
    /// Cannot be enforced here; the launch would be refused.
    Missing,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Skipped => "skipped",
            Status::Missing => "missing",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which control (`bubblewrap`, `pins`, `seccomp`, `cgroup`, ...): for
    /// a check of bind, its step's name.
    pub control: &'static str,
    pub status: Status,
    /// What was found; for a failed check of bind, bind's error with its
    /// sources, joined with `: `.
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

/// Everything the doctor's own probes ask of a host.
pub trait Host {
    /// The contents of a small text file (`/proc/sys/...`,
    /// `/proc/self/mountinfo`, cgroup files).
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The permission bits (`st_mode & 07777`) of the file at `path`,
    /// following symbolic links.
    fn mode(&self, path: &Path) -> io::Result<u32>;
    /// Standard output of `program ARG` (no environment, stdin closed); an
    /// error when it cannot run or exits unsuccessfully.
    fn output(&self, program: &Path, arg: &str) -> io::Result<String>;
    /// The Landlock ABI version.
    fn landlock_abi(&self) -> io::Result<i64>;
    /// `prctl(PR_GET_SECCOMP)` of this process.
    fn seccomp_mode(&self) -> io::Result<i32>;
    /// The effective user id the launch runs as.
    fn euid(&self) -> u32;
    /// Whether `program ARGS...` exits with status 0 when started switched
    /// to `uid` and `gid` as a launch switches; an error when it cannot be
    /// tried.
    fn run_as(&self, program: &Path, args: &[&str], uid: u32, gid: u32) -> io::Result<bool> {
        let _ = (program, args, uid, gid);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    /// The namespaces `program ARGS...` gets when started as a launch
    /// starts Bubblewrap, and whether it exited with status 0; an error
    /// when it cannot be tried.
    fn launch_namespaces(
        &self,
        program: &Path,
        args: &[&str],
    ) -> io::Result<(splash_runtime::LaunchNamespaces, bool)> {
        let _ = (program, args);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// This machine.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealHost;

impl Host for RealHost {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn run_as(&self, program: &Path, args: &[&str], uid: u32, gid: u32) -> io::Result<bool> {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        splash_runtime::identity::try_as(program, &args, uid, gid)
    }

    fn launch_namespaces(
        &self,
        program: &Path,
        args: &[&str],
    ) -> io::Result<(splash_runtime::LaunchNamespaces, bool)> {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        splash_runtime::try_launch_namespaces(program, &args)
    }

    fn mode(&self, path: &Path) -> io::Result<u32> {
        use std::os::unix::fs::PermissionsExt;
        Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
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
}

/// An error and its sources, joined with `: ` (as `splashc run` prints a
/// bind error).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The plan `args` name: a policy lowered for `arch`, or a plan file.
fn load_plan(args: &DoctorArgs, arch: Arch) -> Result<(String, LaunchPlan), Exit> {
    if let Some(path) = &args.plan {
        let bytes = crate::emit::read_bounded(path, "launch plan", MAX_PLAN_BYTES)?;
        let plan = serde_json::from_slice::<LaunchPlan>(&bytes).map_err(|e| {
            eprintln!(
                "splashc doctor: `{}` is not a valid launch plan: {e}",
                path.display()
            );
            Exit::Rejected
        })?;
        return Ok((path.display().to_string(), plan));
    }
    let Some(policy) = &args.policy else {
        eprintln!("splashc doctor: name a policy or a launch plan (`--plan`)");
        return Err(Exit::Usage);
    };
    let (_, plan) = crate::emit::policy_and_plan(policy, args.manifest.as_deref(), arch)?;
    Ok((policy.display().to_string(), plan))
}

pub fn run(args: &DoctorArgs) -> Exit {
    let arch = match Arch::host() {
        Some(a) => a,
        None => {
            eprintln!("splashc doctor: this host's architecture has no seccomp support");
            return Exit::Rejected;
        }
    };
    let (name, plan) = match load_plan(args, arch) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let preflight = splash_runtime::preflight(&plan, &BindOptions::default());
    let findings = diagnose(&RealHost, &plan, &preflight);
    let enforceable = findings.iter().all(|f| f.status != Status::Missing);
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
        return Exit::Usage;
    }
    if enforceable {
        Exit::Success
    } else {
        Exit::Rejected
    }
}

/// Every finding for `plan`: the checks of `preflight` (bind's own, on this
/// host) with a fix for each failure, then the probes of what bind does not
/// ask about, on `host`.
pub fn diagnose(host: &dyn Host, plan: &LaunchPlan, preflight: &Preflight) -> Vec<Finding> {
    let mounts = cgroup2_mounts(host);
    let mut findings: Vec<Finding> = preflight
        .checks
        .iter()
        .map(|(check, outcome)| bind_finding(host, plan, &mounts, check, outcome))
        .collect();
    let setuid = bubblewrap_probe(host, plan, &mut findings);
    user_namespaces(host, plan, setuid, &mut findings);
    if let Some(seccomp) = plan.seccomp() {
        findings.push(seccomp_finding(host, seccomp.profile));
    }
    let landlock = splash_runtime::verify::exec_chain(plan).is_ok_and(|c| !c.allowed.is_empty());
    if landlock {
        findings.push(landlock_finding(host));
    }
    let parent_passed = preflight.checks.iter().any(|(c, o)| {
        c.step == Step::Cgroup
            && plan
                .cgroup()
                .is_some_and(|cg| c.subject == cg.parent.as_str())
            && matches!(o, Outcome::Passed)
    });
    if !parent_passed {
        cgroup_hierarchy(host, plan, &mounts, &mut findings);
    }
    findings.push(root_finding(host, plan));
    findings.push(killed_host_finding(host, plan));
    if let Some(f) = identity_switch_finding(host, plan) {
        findings.push(f);
    }
    findings
}

/// One check of bind as a finding.
fn bind_finding(
    host: &dyn Host,
    plan: &LaunchPlan,
    mounts: &[String],
    check: &Check,
    outcome: &Outcome,
) -> Finding {
    let control = check.step.name();
    match outcome {
        Outcome::Passed => Finding::ok(control, passed_detail(plan, check)),
        Outcome::Failed(e) => {
            Finding::missing(control, error_chain(e), fix_for(host, plan, mounts, e))
        }
        Outcome::NotRun { needs } => Finding {
            control,
            status: Status::Skipped,
            detail: format!(
                "`{}` was not checked: it needs what the failed `{needs}` check above would have provided",
                check.subject
            ),
            fix: None,
        },
    }
}

/// What a passed check of bind established.
fn passed_detail(plan: &LaunchPlan, check: &Check) -> String {
    let s = &check.subject;
    match check.step {
        Step::Plan if s == "architecture" => {
            format!(
                "the plan and its seccomp program are for this host ({})",
                plan.arch().name()
            )
        }
        Step::Plan => "the plan starts with the fixed hardening prefix".to_owned(),
        Step::NetworkBroker => "the plan's network broker matches the host's".to_owned(),
        Step::Bubblewrap => format!("`{s}` is an executable regular file, not a symbolic link"),
        Step::Pins if s == "bubblewrap pin" => {
            "the Bubblewrap pin holds the program that will run".to_owned()
        }
        Step::Pins => format!("`{s}` is pinned by descriptor and has the type the plan expects"),
        Step::PathSources => format!("`{s}` resolves and has the type the plan expects"),
        Step::ExecChain => {
            format!("`{s}` is reached through a read-only mount and is an executable regular file")
        }
        Step::BubblewrapOptions => {
            let used: Vec<&str> = emit::options_used(plan).iter().map(|o| o.option).collect();
            format!(
                "`{s}` parses all {} options the plan uses: {}",
                used.len(),
                used.join(" ")
            )
        }
        Step::Quotas if s == "aggregate" => {
            "the quota roots' hard limits fit the aggregate ceiling".to_owned()
        }
        Step::Quotas => format!("`{s}` is verified: an enforced project quota within the ceilings"),
        Step::Cgroup => match plan.cgroup() {
            Some(cg) if s == cg.parent.as_str() => {
                let needed = needed_controllers(&cg.limits);
                if needed.is_empty() {
                    format!("`{s}` is a cgroup-v2 directory (no controller limits)")
                } else {
                    format!(
                        "`{s}` is a cgroup-v2 directory delegating {}",
                        quoted(needed.iter().copied())
                    )
                }
            }
            _ => format!("cgroup runner `{s}` is an executable regular file"),
        },
        Step::WritableRoots => format!(
            "read-write root `{s}` is on `nosuid` host mounts only, so what the worker (host uid 0) makes there cannot gain privileges on the host"
        ),
        Step::DeviceNodes => format!("the sandbox's device nodes can be provided {s}"),
        Step::Identity if s == "none" => {
            "the policy sets no identity: the worker runs as the launching uid".to_owned()
        }
        Step::Identity => format!("the launch can run the worker as `identity {s}`"),
        _ => format!("`{s}` passed"),
    }
}

fn quoted<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The fix for a failed check of bind.
fn fix_for(host: &dyn Host, plan: &LaunchPlan, mounts: &[String], e: &BindError) -> String {
    let install = format!(
        "install Bubblewrap {} or later (Debian and Ubuntu: `apt-get install bubblewrap`) and point the policy's `bubblewrap` at it",
        emit::minimum_bwrap_version(plan)
    );
    match e {
        BindError::HardeningPrefix { .. }
        | BindError::ForeignArch { .. }
        | BindError::Plan(_)
        | BindError::Unsupported { .. } => {
            "lower the policy again for this host (`splashc emit --format json`); never edit a plan's hardening".to_owned()
        }
        BindError::Broker(BrokerBindError::Missing) => {
            "launch it from a host program that supplies the matching network broker (`BindOptions::with_network_broker`)".to_owned()
        }
        BindError::Broker(_) => {
            "supply the broker the plan names (same catalog kind and ids, started in the policy's parent)".to_owned()
        }
        BindError::SymlinkExecutable { path } => {
            let target = std::fs::canonicalize(path)
                .map(|p| format!(" (`{}`)", p.display()))
                .unwrap_or_default();
            format!("name the file itself in the policy{target}, not a symbolic link to it")
        }
        _ if plan_bwrap_failed(plan, e) => install,
        BindError::UnsupportedOption { .. }
        | BindError::BubblewrapQuery { .. }
        | BindError::BubblewrapHelp { .. } => install,
        BindError::Resolve { path, .. }
        | BindError::ResolvesToRoot { path }
        | BindError::Pin { path, .. }
        | BindError::Inspect { path, .. }
        | BindError::WrongType { path, .. } => format!(
            "create `{}` with the type the policy needs, or change the policy",
            path.display()
        ),
        BindError::Executable { host, .. } => format!(
            "install an executable regular file (mode 0755, not a symbolic link) at `{}`, or change the policy",
            host.display()
        ),
        BindError::NotInRuntimeMount { .. } => {
            "add a `runtime` mount (read-only) that contains it".to_owned()
        }
        BindError::Quota { root, path, .. } => {
            let id = plan
                .quota_checks()
                .iter()
                .find_map(|c| {
                    plan.pins()
                        .get(usize::from(c.slot.0))
                        .filter(|p| p.host_path.as_str() == path.to_string_lossy())
                        .map(|_| c.quota.project_id)
                })
                .map_or_else(|| "ID".to_owned(), |id| id.to_string());
            format!(
                "mount the filesystem of root `{root}` with enforced project quotas (ext4: `tune2fs -O project,quota` and the `prjquota` mount option; XFS: `prjquota`), then `chattr -p {id} +P {}` and `setquota -P {id} 0 <bytes/1024> 0 <inodes> <mount point>` within the policy's ceilings (docs/runtime.md, \"Provisioning a project quota\")",
                path.display()
            )
        }
        BindError::AggregateQuota(_) => {
            "lower the roots' hard limits (`setquota -P`) until their sum fits the policy's `quota aggregate`, or raise it".to_owned()
        }
        BindError::UnverifiedWritableMount { .. } => {
            "give the root a `quota project` statement, or drop `quota aggregate`".to_owned()
        }
        BindError::Cgroup(c) => cgroup_fix(host, mounts, c),
        BindError::SetId(
            SetIdError::HonoursSetId { mount, .. } | SetIdError::AlsoMounted { mount, .. },
        ) => format!(
            "`mount -o remount,nosuid {}` (or keep the root on a dedicated `-o nosuid` mount), or launch as an unprivileged user",
            mount.display()
        ),
        BindError::SetId(_) => "launch as an unprivileged user".to_owned(),
        BindError::Devices(_) => {
            "launch as a user that owns none of the host's `/dev` nodes, or as root with `CAP_MKNOD` on a `/dev` that is not mounted `nodev`".to_owned()
        }
        _ => "see the reason above".to_owned(),
    }
}

/// Whether `e` is the failure of the Bubblewrap program itself (step 1).
fn plan_bwrap_failed(plan: &LaunchPlan, e: &BindError) -> bool {
    match e {
        BindError::Resolve { path, .. }
        | BindError::ResolvesToRoot { path }
        | BindError::Pin { path, .. }
        | BindError::Inspect { path, .. }
        | BindError::WrongType { path, .. } => path == Path::new(plan.bwrap().as_str()),
        _ => false,
    }
}

/// The cgroup-v2 mount that holds `path`: the longest mount point that is
/// an ancestor of it.
fn v2_mount_of<'m>(mounts: &'m [String], path: &Path) -> Option<&'m str> {
    mounts
        .iter()
        .filter(|m| path.starts_with(m.as_str()))
        .max_by_key(|m| m.len())
        .map(String::as_str)
}

/// A directory of a cgroup-v2 mount to suggest as a parent.
fn suggested_parent(mounts: &[String]) -> String {
    mounts.first().map_or_else(
        || "a directory of a cgroup-v2 mount".to_owned(),
        |m| format!("`{}/splash-workers`", m.trim_end_matches('/')),
    )
}

fn cgroup_fix(host: &dyn Host, mounts: &[String], e: &CgroupError) -> String {
    let no_v2 = "no cgroup-v2 filesystem is mounted: mount one (`mount -t cgroup2 none DIR`) or boot with `systemd.unified_cgroup_hierarchy=1`";
    match e {
        CgroupError::OpenParent { .. }
        | CgroupError::NotCgroup2 { .. }
        | CgroupError::MissingCoreFile { .. } => {
            if mounts.is_empty() {
                return no_v2.to_owned();
            }
            format!(
                "create the parent in the cgroup-v2 hierarchy (mounted at {}), for example {}, owned by the launching user, and name it in `cgroup parent`",
                quoted(mounts.iter().map(String::as_str)),
                suggested_parent(mounts)
            )
        }
        CgroupError::MissingController { path, controller } => {
            delegation_fix(host, mounts, path, controller)
        }
        CgroupError::Runner { .. } | CgroupError::RunnerIo { .. } => {
            "install `splash-cgroup-runner` there as an executable regular file (mode 0755, not a symbolic link)".to_owned()
        }
        _ => "see the reason above".to_owned(),
    }
}

/// How to delegate `controller` down to the children of `parent`: enable it
/// in `cgroup.subtree_control` of every directory from the cgroup-v2 mount
/// holding `parent` down to `parent` itself, or, when the hierarchy does
/// not offer it at all, free it from cgroup v1.
fn delegation_fix(host: &dyn Host, mounts: &[String], parent: &Path, controller: &str) -> String {
    let Some(mount) = v2_mount_of(mounts, parent) else {
        return format!(
            "`{}` is not in a cgroup-v2 hierarchy; create the parent below {}",
            parent.display(),
            if mounts.is_empty() {
                "a cgroup-v2 mount".to_owned()
            } else {
                quoted(mounts.iter().map(String::as_str))
            }
        );
    };
    let offered = host
        .read(&Path::new(mount).join("cgroup.controllers"))
        .map(|t| t.split_whitespace().any(|c| c == controller))
        .unwrap_or(true);
    if !offered {
        return format!(
            "the cgroup-v2 hierarchy at `{mount}` does not offer `{controller}`: it is bound to a cgroup-v1 hierarchy on this host; boot with `systemd.unified_cgroup_hierarchy=1` (or `cgroup_no_v1={controller}`) so cgroup v2 owns it, then enable it down to the parent"
        );
    }
    let mut dirs: Vec<PathBuf> = parent
        .ancestors()
        .take_while(|d| d.starts_with(mount))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    let steps: Vec<String> = dirs
        .iter()
        .map(|d| {
            format!(
                "`echo '+{controller}' > {}`",
                d.join("cgroup.subtree_control").display()
            )
        })
        .collect();
    format!(
        "enable it from the cgroup-v2 root down to the parent: {}",
        steps.join(", then ")
    )
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

/// When the plan has cgroup limits and its parent did not pass: does the
/// cgroup-v2 hierarchy offer the controllers at all? (A controller bound to
/// a cgroup-v1 hierarchy cannot be delegated by any parent.)
fn cgroup_hierarchy(host: &dyn Host, plan: &LaunchPlan, mounts: &[String], out: &mut Vec<Finding>) {
    let Some(cg) = plan.cgroup() else {
        return;
    };
    let needed = needed_controllers(&cg.limits);
    if mounts.is_empty() {
        out.push(Finding::missing(
            "cgroup v2",
            "no cgroup-v2 filesystem is mounted on this host",
            "mount cgroup2 (`mount -t cgroup2 none /sys/fs/cgroup`) or boot with `systemd.unified_cgroup_hierarchy=1`",
        ));
        return;
    }
    let mount = v2_mount_of(mounts, Path::new(cg.parent.as_str())).unwrap_or(&mounts[0]);
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
        out.push(Finding::ok(
            "cgroup v2",
            format!(
                "the cgroup-v2 hierarchy at `{mount}` offers every controller the limits need{}",
                if needed.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", quoted(needed.iter().copied()))
                }
            ),
        ));
        return;
    }
    out.push(Finding::missing(
        "cgroup v2",
        format!(
            "the limits need the {} controller{}, which the cgroup-v2 hierarchy at `{mount}` does not offer (it offers {})",
            quoted(absent.iter().copied()),
            if absent.len() == 1 { "" } else { "s" },
            if offered.is_empty() {
                "none".to_owned()
            } else {
                quoted(offered.iter().copied())
            }
        ),
        "the controllers are bound to cgroup-v1 hierarchies on this host: boot with `systemd.unified_cgroup_hierarchy=1` (or `cgroup_no_v1=all`) so cgroup v2 owns them, then delegate them down to the parent through each `cgroup.subtree_control`",
    ));
}

/// Bubblewrap's version and setuid bit (what bind decides on is the options
/// the build parses, a check of bind). Returns whether it is setuid root.
fn bubblewrap_probe(host: &dyn Host, plan: &LaunchPlan, out: &mut Vec<Finding>) -> bool {
    let path = Path::new(plan.bwrap().as_str());
    let Ok(mode) = host.mode(path) else {
        return false; // bind's check of the program names the problem
    };
    let setuid = mode & 0o4000 != 0;
    let needed = emit::minimum_bwrap_version(plan);
    let shown = match host
        .output(path, "--version")
        .map(|t| (parse_version(&t), t))
    {
        Ok((Some(found), _)) => found,
        Ok((None, text)) => {
            out.push(Finding::warning(
                "bubblewrap version",
                format!(
                    "`{} --version` printed `{}`, not a bubblewrap version",
                    plan.bwrap(),
                    text.trim()
                ),
                "bind decides on the options the build parses (above); a build that prints no version is unusual",
            ));
            return setuid;
        }
        Err(e) => {
            out.push(Finding::warning(
                "bubblewrap version",
                format!("`{} --version` failed: {e}", plan.bwrap()),
                "bind decides on the options the build parses (above)",
            ));
            return setuid;
        }
    };
    let version = format!("{}.{}.{}", shown.0, shown.1, shown.2);
    let suid = if setuid { ", setuid root" } else { "" };
    if shown >= parse_version(needed).unwrap_or((0, 0, 0)) {
        out.push(Finding::ok(
            "bubblewrap version",
            format!(
                "`{}` is bubblewrap {version} (the plan's options first appear in {needed}){suid}",
                plan.bwrap()
            ),
        ));
    } else {
        out.push(Finding::warning(
            "bubblewrap version",
            format!(
                "`{}` is bubblewrap {version}; the plan's options first appear in {needed}{suid}",
                plan.bwrap()
            ),
            format!(
                "bind decides on the options the build parses (above); install Bubblewrap {needed} or later"
            ),
        ));
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
    // Under an identity a root host starts Bubblewrap unprivileged.
    let privileged = (host.euid() == 0 && plan.identity().is_none()) || setuid;
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

fn root_finding(host: &dyn Host, plan: &LaunchPlan) -> Finding {
    let uid = host.euid();
    match (uid, plan.identity()) {
        (0, None) => Finding::warning(
            "launch user",
            "the launch runs as root and the policy sets no `identity`: the worker is host uid 0 without capabilities, so it may write every root-owned file a read-write mount exposes and is treated as root by anything that checks only the uid; the launch defends with private device nodes, `nosuid` read-write roots and a read-only `/proc`",
            "add `identity user UID group GID` (or `identity dynamic`) to the policy, or launch from a dedicated unprivileged user (with unprivileged user namespaces or a setuid bubblewrap)",
        ),
        (0, Some(identity)) => Finding::ok(
            "launch user",
            format!(
                "the launch runs as root and switches to `identity {identity}` before Bubblewrap starts: no process of the sandbox is host root, and the sandbox's device nodes are the host's (the identity owns none)"
            ),
        ),
        (_, _) => Finding::ok(
            "launch user",
            format!(
                "the launch runs as uid {uid}; the worker is host uid {uid} without capabilities"
            ),
        ),
    }
}

/// Whether a host killed by SIGKILL takes its sandboxes with it: the
/// launch is pid 1 of a pid namespace of its own (`docs/runtime.md`, "A
/// host that dies"), tried by starting Bubblewrap the way a launch does.
fn killed_host_finding(host: &dyn Host, plan: &LaunchPlan) -> Finding {
    use splash_runtime::LaunchNamespaces;

    const CONTROL: &str = "killed host";
    let args = [
        "--unshare-all",
        "--die-with-parent",
        "--as-pid-1",
        "--ro-bind",
        "/",
        "/",
        "--",
        "/bin/true",
    ];
    let bwrap = Path::new(plan.bwrap().as_str());
    let cgroup = plan.cgroup().is_some();
    match host.launch_namespaces(bwrap, &args) {
        Ok((namespaces @ (LaunchNamespaces::Pid | LaunchNamespaces::UserAndPid), true)) => {
            let how = match namespaces {
                LaunchNamespaces::Pid => "made with CAP_SYS_ADMIN",
                _ => "made in a user namespace of the launch's own",
            };
            Finding::ok(
                CONTROL,
                format!(
                    "a launch is pid 1 of a pid namespace of its own ({how}): a host killed by SIGKILL takes every process of its sandboxes with it"
                ),
            )
        }
        Ok((_, false)) => Finding::missing(
            CONTROL,
            format!("`{}` started as a launch starts it failed", plan.bwrap()),
            "run the `bubblewrap` finding's fix first".to_owned(),
        ),
        Ok((LaunchNamespaces::Host, true)) if cgroup => Finding::ok(
            CONTROL,
            "this host lets a launch make no pid namespace of its own: a worker that clears its parent-death signal outlives a killed host, and the policy's cgroup lets the next bind kill it",
        ),
        Ok((LaunchNamespaces::Host, true)) => Finding::warning(
            CONTROL,
            "this host lets a launch make no pid namespace of its own: a worker that clears its parent-death signal, or a sandbox Bubblewrap was still setting up, outlives a host killed by SIGKILL, and nothing finds it afterwards",
            "allow the launching user unprivileged user namespaces, launch with CAP_SYS_ADMIN, or give the policy a `cgroup` block so that the next bind sweeps what a killed host left",
        ),
        Err(e) => Finding::warning(
            CONTROL,
            format!(
                "starting `{}` as a launch starts it could not be tried: {e}",
                plan.bwrap()
            ),
            "run `splashc doctor` as the user that launches".to_owned(),
        ),
    }
}

/// For a root launch under an identity: whether Bubblewrap starts in an
/// unprivileged user namespace once switched to the identity (the first id
/// of the default dynamic range stands for a dynamic one).
fn identity_switch_finding(host: &dyn Host, plan: &LaunchPlan) -> Option<Finding> {
    let identity = plan.identity()?;
    if host.euid() != 0 {
        return None;
    }
    let (uid, gid) = identity.fixed().unwrap_or({
        let first = splash_runtime::IdentityRange::DEFAULT.first();
        (first, first)
    });
    let args = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--ro-bind",
        "/",
        "/",
        "--",
        "/bin/true",
    ];
    let bwrap = Path::new(plan.bwrap().as_str());
    Some(match host.run_as(bwrap, &args, uid, gid) {
        Ok(true) => Finding::ok(
            "identity switch",
            format!(
                "switching to uid {uid} gid {gid} and starting `{}` in an unprivileged user namespace works",
                plan.bwrap()
            ),
        ),
        Ok(false) => Finding::missing(
            "identity switch",
            format!(
                "`{}` switched to uid {uid} gid {gid} could not make its sandbox: unprivileged user namespaces are forbidden here",
                plan.bwrap()
            ),
            "allow unprivileged user namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`, or an AppArmor profile for bubblewrap that allows `userns`)".to_owned(),
        ),
        Err(e) => Finding::missing(
            "identity switch",
            format!("switching to uid {uid} gid {gid} could not be tried: {e}"),
            "run `splashc doctor` as the root user that launches".to_owned(),
        ),
    })
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
