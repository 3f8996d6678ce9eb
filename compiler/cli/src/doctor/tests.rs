//! The doctor's own probes and fix hints against described hosts, with
//! preflights written out by hand (the real preflight is exercised on this
//! host by `tests/tests/runtime_preflight.rs` and `tests/doctor.rs`).

use std::collections::BTreeMap;

use super::*;

struct FakeHost {
    modes: BTreeMap<PathBuf, u32>,
    files: BTreeMap<PathBuf, String>,
    version: String,
    landlock: Result<i64, i32>,
    euid: u32,
    /// What starting Bubblewrap as a launch does here; `None`: untried.
    namespaces: Option<(splash_runtime::LaunchNamespaces, bool)>,
}

/// `/proc/self/mountinfo` of a hybrid host: a tmpfs of v1 hierarchies at
/// `/sys/fs/cgroup`, cgroup v2 at `/sys/fs/cgroup/unified`.
const HYBRID: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
    32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
    39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/// The same of a host with only cgroup v2, at `/sys/fs/cgroup`.
const UNIFIED: &str = "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";

impl FakeHost {
    fn good() -> FakeHost {
        let mut h = FakeHost {
            modes: BTreeMap::new(),
            files: BTreeMap::new(),
            version: "bubblewrap 0.8.0\n".into(),
            landlock: Ok(7),
            euid: 1000,
            namespaces: Some((splash_runtime::LaunchNamespaces::UserAndPid, true)),
        };
        h.modes.insert("/usr/bin/bwrap".into(), 0o755);
        h.text("/proc/sys/user/max_user_namespaces", "100\n");
        h.text(
            "/proc/sys/kernel/seccomp/actions_avail",
            "kill_process kill_thread trap errno user_notif trace log allow\n",
        );
        h.text("/proc/self/mountinfo", UNIFIED);
        h.text("/sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n");
        h
    }

    fn hybrid(unified_offers: &str) -> FakeHost {
        let mut h = FakeHost::good();
        h.files
            .remove(Path::new("/sys/fs/cgroup/cgroup.controllers"));
        h.text("/proc/self/mountinfo", HYBRID);
        h.text("/sys/fs/cgroup/unified/cgroup.controllers", unified_offers);
        h
    }

    fn text(&mut self, p: &str, t: &str) {
        self.files.insert(p.into(), t.into());
    }
}

fn not_found() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOENT)
}

impl Host for FakeHost {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.files.get(path).cloned().ok_or_else(not_found)
    }
    fn mode(&self, path: &Path) -> io::Result<u32> {
        self.modes.get(path).copied().ok_or_else(not_found)
    }
    fn output(&self, _program: &Path, _arg: &str) -> io::Result<String> {
        Ok(self.version.clone())
    }
    fn landlock_abi(&self) -> io::Result<i64> {
        self.landlock.map_err(io::Error::from_raw_os_error)
    }
    fn seccomp_mode(&self) -> io::Result<i32> {
        Ok(0)
    }
    fn euid(&self) -> u32 {
        self.euid
    }
    fn launch_namespaces(
        &self,
        _program: &Path,
        _args: &[&str],
    ) -> io::Result<(splash_runtime::LaunchNamespaces, bool)> {
        self.namespaces
            .ok_or_else(|| io::Error::from(io::ErrorKind::Unsupported))
    }
}

fn bundled(name: &str) -> LaunchPlan {
    let path = format!("{}/../../policies/{name}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(path).expect("policy");
    let outcome = splashpol::check_source(name, &source);
    assert!(!outcome.has_errors(), "{:?}", outcome.diagnostics);
    let policy = outcome.policy.expect("policy");
    let activation = splashpol::activate::activate(&policy, None).expect("activate");
    splashpol::lower::lower(&policy, &activation, Arch::X86_64, "0").expect("lower")
}

/// A preflight of the given outcomes (subjects as the runtime writes them).
fn preflight(checks: Vec<(Step, &str, Outcome)>) -> Preflight {
    Preflight {
        checks: checks
            .into_iter()
            .map(|(step, subject, outcome)| {
                (
                    Check {
                        step,
                        subject: subject.to_owned(),
                    },
                    outcome,
                )
            })
            .collect(),
    }
}

fn cgroup_failure(e: CgroupError) -> Preflight {
    preflight(vec![(
        Step::Cgroup,
        "/sys/fs/cgroup/splash-workers",
        Outcome::Failed(BindError::Cgroup(e)),
    )])
}

fn missing(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.status == Status::Missing)
        .collect()
}

#[test]
fn every_failure_of_the_preflight_is_a_finding_with_bind_s_reason() {
    let plan = bundled("cgroup-limits.splashpol");
    let not_there = || io::Error::from_raw_os_error(libc::ENOENT);
    let pf = preflight(vec![
        (Step::Plan, "hardening prefix", Outcome::Passed),
        (
            Step::Bubblewrap,
            "/usr/bin/bwrap",
            Outcome::Failed(BindError::Resolve {
                path: "/usr/bin/bwrap".into(),
                source: not_there(),
            }),
        ),
        (
            Step::BubblewrapOptions,
            "/usr/bin/bwrap",
            Outcome::NotRun {
                needs: Step::Bubblewrap,
            },
        ),
        (
            Step::PathSources,
            "/opt/splash/runtime",
            Outcome::Failed(BindError::Resolve {
                path: "/opt/splash/runtime".into(),
                source: not_there(),
            }),
        ),
    ]);
    let findings = diagnose(&FakeHost::good(), &plan, &pf);
    let m = missing(&findings);
    assert_eq!(m.len(), 2, "{m:#?}");
    for (finding, (_, e)) in m.iter().zip(pf.failures()) {
        assert_eq!(finding.detail, error_chain(e));
    }
    assert_eq!(
        m[0].detail,
        "failed to resolve source `/usr/bin/bwrap`: No such file or directory (os error 2)"
    );
    assert!(
        m[0].fix
            .as_deref()
            .is_some_and(|f| f.contains("install Bubblewrap 0.8.0 or later")),
        "{m:#?}"
    );
    assert!(
        m[1].fix
            .as_deref()
            .is_some_and(|f| f.contains("create `/opt/splash/runtime`")),
        "{m:#?}"
    );
    let skipped: Vec<_> = findings
        .iter()
        .filter(|f| f.status == Status::Skipped)
        .collect();
    assert_eq!(skipped.len(), 1, "{findings:#?}");
    assert_eq!(skipped[0].control, "bubblewrap options");
    assert!(
        findings
            .iter()
            .any(|f| f.control == "plan" && f.status == Status::Ok)
    );
}

#[test]
fn a_missing_controller_on_a_hybrid_host_names_the_cgroup_v2_mount_that_exists() {
    let plan = bundled("cgroup-limits.splashpol");
    let host = FakeHost::hybrid("cpu io memory pids hugetlb\n");
    let pf = preflight(vec![(
        Step::Cgroup,
        "/sys/fs/cgroup/unified/splash/w",
        Outcome::Failed(BindError::Cgroup(CgroupError::MissingController {
            path: "/sys/fs/cgroup/unified/splash/w".into(),
            controller: "pids",
        })),
    )]);
    let findings = diagnose(&host, &plan, &pf);
    let fix = missing(&findings)[0].fix.clone().expect("fix");
    assert_eq!(
        fix,
        "enable it from the cgroup-v2 root down to the parent: \
         `echo '+pids' > /sys/fs/cgroup/unified/cgroup.subtree_control`, then \
         `echo '+pids' > /sys/fs/cgroup/unified/splash/cgroup.subtree_control`, then \
         `echo '+pids' > /sys/fs/cgroup/unified/splash/w/cgroup.subtree_control`"
    );
    for f in &findings {
        let text = format!("{} {}", f.detail, f.fix.as_deref().unwrap_or(""));
        assert!(
            !text.contains("/sys/fs/cgroup/cgroup.subtree_control"),
            "the tmpfs has no cgroup files: {f:?}"
        );
    }

    // This machine's case: the v2 hierarchy offers no controller but
    // `hugetlb`; the rest are bound to v1.
    let host = FakeHost::hybrid("hugetlb\n");
    let findings = diagnose(&host, &plan, &pf);
    let m = missing(&findings);
    assert!(
        m[0].fix.as_deref().is_some_and(|f| f
            .contains("the cgroup-v2 hierarchy at `/sys/fs/cgroup/unified` does not offer `pids`")
            && f.contains("systemd.unified_cgroup_hierarchy=1")),
        "{m:#?}"
    );
}

#[test]
fn a_parent_outside_cgroup_v2_on_a_hybrid_host_is_sent_to_the_v2_mount() {
    let plan = bundled("cgroup-limits.splashpol");
    let host = FakeHost::hybrid("hugetlb\n");
    let pf = cgroup_failure(CgroupError::NotCgroup2 {
        path: "/sys/fs/cgroup/splash-workers".into(),
        magic: 0x0102_1994,
    });
    let findings = diagnose(&host, &plan, &pf);
    let m = missing(&findings);
    assert_eq!(m.len(), 2, "{m:#?}");
    assert_eq!(m[0].control, "cgroup");
    assert!(
        m[0].fix.as_deref().is_some_and(|f| f
            .contains("(mounted at `/sys/fs/cgroup/unified`), for example `/sys/fs/cgroup/unified/splash-workers`")),
        "{m:#?}"
    );
    // The probe of the hierarchy says why no parent there would do.
    assert_eq!(m[1].control, "cgroup v2");
    assert!(
        m[1].detail.contains(
            "`cpu`, `memory`, `pids`, `io` controllers, which the cgroup-v2 hierarchy at `/sys/fs/cgroup/unified` does not offer (it offers `hugetlb`)"
        ),
        "{}",
        m[1].detail
    );
}

#[test]
fn a_missing_controller_on_a_unified_host_is_enabled_from_the_root() {
    let plan = bundled("cgroup-limits.splashpol");
    let pf = cgroup_failure(CgroupError::MissingController {
        path: "/sys/fs/cgroup/splash-workers".into(),
        controller: "io",
    });
    let findings = diagnose(&FakeHost::good(), &plan, &pf);
    let m = missing(&findings);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_eq!(
        m[0].fix.as_deref(),
        Some(
            "enable it from the cgroup-v2 root down to the parent: \
             `echo '+io' > /sys/fs/cgroup/cgroup.subtree_control`, then \
             `echo '+io' > /sys/fs/cgroup/splash-workers/cgroup.subtree_control`"
        )
    );
    // The hierarchy offers them all: the probe says so.
    assert!(
        findings
            .iter()
            .any(|f| f.control == "cgroup v2" && f.status == Status::Ok),
        "{findings:#?}"
    );
}

#[test]
fn an_old_bubblewrap_version_is_a_warning_because_bind_decides_on_its_options() {
    let plan = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.version = "bubblewrap 0.6.1\n".into();
    let findings = diagnose(&host, &plan, &Preflight::default());
    assert!(missing(&findings).is_empty(), "{findings:#?}");
    let v = findings
        .iter()
        .find(|f| f.control == "bubblewrap version")
        .expect("version");
    assert_eq!(v.status, Status::Warning);
    assert!(
        v.detail
            .contains("is bubblewrap 0.6.1; the plan's options first appear in 0.8.0"),
        "{}",
        v.detail
    );
}

#[test]
fn user_namespace_restrictions_apply_to_unprivileged_launches_only() {
    let plan = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.text(
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "1\n",
    );
    host.text("/proc/sys/kernel/unprivileged_userns_clone", "0\n");
    let findings = diagnose(&host, &plan, &Preflight::default());
    let m = missing(&findings);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert_eq!(m[0].control, "user namespaces");
    assert!(
        m[0].detail
            .contains("`kernel.unprivileged_userns_clone` is 0")
    );
    assert!(m[0].detail.contains("AppArmor restricts"));
    assert!(
        m[0].fix
            .as_deref()
            .is_some_and(|f| f.contains("apparmor_restrict_unprivileged_userns=0"))
    );

    host.euid = 0;
    let findings = diagnose(&host, &plan, &Preflight::default());
    assert!(missing(&findings).is_empty(), "{findings:#?}");
    let root = findings
        .iter()
        .find(|f| f.control == "launch user")
        .expect("launch user");
    assert_eq!(root.status, Status::Warning);
    assert!(root.detail.contains("host uid 0 without capabilities"));

    host.text("/proc/sys/user/max_user_namespaces", "0\n");
    let findings = diagnose(&host, &plan, &Preflight::default());
    assert!(
        missing(&findings)[0]
            .detail
            .contains("`user.max_user_namespaces` is 0")
    );
}

#[test]
fn landlock_states_are_told_apart() {
    let plan = bundled("agent-worker.splashpol");
    for (state, needle) in [
        (Err(libc::EOPNOTSUPP), "`lsm=`"),
        (Err(libc::ENOSYS), "CONFIG_SECURITY_LANDLOCK"),
        (Ok(0), "ABI 1 or later"),
    ] {
        let mut host = FakeHost::good();
        host.landlock = state;
        let findings = diagnose(&host, &plan, &Preflight::default());
        let f = findings
            .iter()
            .find(|f| f.control == "landlock")
            .expect("landlock probed");
        assert_eq!(f.status, Status::Missing);
        assert!(
            f.fix.as_deref().is_some_and(|x| x.contains(needle)),
            "{f:?}"
        );
    }
    let findings = diagnose(&FakeHost::good(), &plan, &Preflight::default());
    let f = findings
        .iter()
        .find(|f| f.control == "landlock")
        .expect("landlock probed");
    assert_eq!(f.status, Status::Ok);
    // A plan without a Landlock runner does not ask.
    let plan = bundled("cgroup-limits.splashpol");
    let findings = diagnose(&FakeHost::good(), &plan, &Preflight::default());
    assert!(!findings.iter().any(|f| f.control == "landlock"));
}

#[test]
fn versions_parse() {
    assert_eq!(parse_version("bubblewrap 0.8.0\n"), Some((0, 8, 0)));
    assert_eq!(parse_version("bubblewrap 0.11.0-rc1"), Some((0, 11, 0)));
    assert_eq!(parse_version("0.7"), Some((0, 7, 0)));
    assert_eq!(parse_version("bubblewrap"), None);
}

/// Whether a killed host takes its sandboxes with it: every way a launch can
/// start, with and without a cgroup in the policy.
#[test]
fn a_killed_host_finding_names_what_this_host_gives_a_launch() {
    use splash_runtime::LaunchNamespaces::{Host as Shared, Pid, UserAndPid};

    let cases = [
        (
            "demo.splashpol",
            Some((Pid, true)),
            Status::Ok,
            "made with CAP_SYS_ADMIN",
        ),
        (
            "demo.splashpol",
            Some((UserAndPid, true)),
            Status::Ok,
            "user namespace",
        ),
        (
            "demo.splashpol",
            Some((Shared, true)),
            Status::Warning,
            "nothing finds it",
        ),
        (
            "cgroup-limits.splashpol",
            Some((Shared, true)),
            Status::Ok,
            "cgroup lets the next bind",
        ),
        (
            "demo.splashpol",
            Some((Pid, false)),
            Status::Missing,
            "failed",
        ),
        (
            "demo.splashpol",
            None,
            Status::Warning,
            "could not be tried",
        ),
    ];
    for (policy, namespaces, status, says) in cases {
        let mut host = FakeHost::good();
        host.namespaces = namespaces;
        let findings = diagnose(&host, &bundled(policy), &preflight(vec![]));
        let finding = findings
            .iter()
            .find(|f| f.control == "killed host")
            .expect("a killed-host finding");
        assert_eq!(
            finding.status, status,
            "{policy} {namespaces:?}: {finding:?}"
        );
        assert!(
            finding.detail.contains(says),
            "{policy} {namespaces:?}: {finding:?}"
        );
        assert_eq!(
            finding.fix.is_some(),
            status != Status::Ok,
            "{policy} {namespaces:?}: {finding:?}"
        );
    }
}
