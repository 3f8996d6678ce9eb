//! The doctor's decisions against described hosts.

use std::collections::BTreeMap;

use super::*;

const BWRAP_HELP: &str = "usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]\n\
    --seccomp FD\n    --unshare-all\n    --unshare-user\n    --disable-userns\n\
    --cap-drop CAP\n    --clearenv\n    --new-session\n    --die-with-parent\n\
    --as-pid-1\n    --chdir DIR\n    --proc DEST\n    --dev DEST\n    --size BYTES\n\
    --tmpfs DEST\n    --ro-bind SRC DEST\n    --bind SRC DEST\n    --ro-bind-fd FD DEST\n\
    --bind-fd FD DEST\n    --remount-ro DEST\n    --dev-bind SRC DEST\n";

struct FakeHost {
    entries: BTreeMap<PathBuf, Entry>,
    files: BTreeMap<PathBuf, String>,
    version: String,
    help: String,
    landlock: Result<i64, i32>,
    euid: u32,
    cgroup2: Vec<PathBuf>,
    quota: Result<(), String>,
}

impl FakeHost {
    /// A host where everything the bundled policies name exists.
    fn good() -> FakeHost {
        let mut h = FakeHost {
            entries: BTreeMap::new(),
            files: BTreeMap::new(),
            version: "bubblewrap 0.8.0\n".into(),
            help: BWRAP_HELP.into(),
            landlock: Ok(7),
            euid: 1000,
            cgroup2: vec![PathBuf::from("/sys/fs/cgroup")],
            quota: Ok(()),
        };
        h.file("/usr/bin/bwrap", 0o755);
        h.dir("/opt/splash/runtime");
        h.file("/opt/splash/runtime/bin/worker", 0o755);
        h.file("/opt/splash/host-bin/splash-cgroup-runner", 0o755);
        h.dir("/sys/fs/cgroup/splash-workers");
        h.text("/proc/sys/user/max_user_namespaces", "100\n");
        h.text(
            "/proc/sys/kernel/seccomp/actions_avail",
            "kill_process kill_thread trap errno user_notif trace log allow\n",
        );
        h.text(
            "/proc/self/mountinfo",
            "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        );
        h.text("/sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n");
        h.text(
            "/sys/fs/cgroup/splash-workers/cgroup.controllers",
            "cpu io memory pids\n",
        );
        h.text(
            "/sys/fs/cgroup/splash-workers/cgroup.subtree_control",
            "cpu io memory pids\n",
        );
        h
    }

    fn file(&mut self, p: &str, mode: u32) {
        self.entries.insert(
            p.into(),
            Entry {
                kind: EntryKind::File,
                mode,
                symlink: false,
            },
        );
    }

    fn dir(&mut self, p: &str) {
        self.entries.insert(
            p.into(),
            Entry {
                kind: EntryKind::Directory,
                mode: 0o755,
                symlink: false,
            },
        );
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
    fn entry(&self, path: &Path) -> io::Result<Entry> {
        self.entries.get(path).copied().ok_or_else(not_found)
    }
    fn canonical(&self, path: &Path) -> io::Result<PathBuf> {
        self.entries
            .get(path)
            .map(|_| path.to_path_buf())
            .ok_or_else(not_found)
    }
    fn output(&self, _program: &Path, arg: &str) -> io::Result<String> {
        Ok(if arg == "--version" {
            self.version.clone()
        } else {
            self.help.clone()
        })
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
    fn filesystem_magic(&self, path: &Path) -> io::Result<u64> {
        self.entry(path)?;
        Ok(if self.cgroup2.iter().any(|m| path.starts_with(m)) {
            CGROUP2_MAGIC
        } else {
            0x0102_1994
        })
    }
    fn verify_quota(&self, _path: &Path, _quota: &ProjectQuota) -> Result<(), String> {
        self.quota.clone()
    }
}

fn lowered(source: &str) -> (Policy, LaunchPlan) {
    let outcome = splashpol::check_source("t.splashpol", source);
    assert!(!outcome.has_errors(), "{:?}", outcome.diagnostics);
    let policy = outcome.policy.expect("policy");
    let activation = splashpol::activate::activate(&policy, None).expect("activate");
    let plan = splashpol::lower::lower(&policy, &activation, Arch::X86_64, "0").expect("lower");
    (policy, plan)
}

fn bundled(name: &str) -> (Policy, LaunchPlan) {
    let path = format!("{}/../../policies/{name}", env!("CARGO_MANIFEST_DIR"));
    lowered(&std::fs::read_to_string(path).expect("policy"))
}

fn missing(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.status == Status::Missing)
        .collect()
}

#[test]
fn a_complete_host_enforces_the_cgroup_policy() {
    let (policy, plan) = bundled("cgroup-limits.splashpol");
    let findings = diagnose(&FakeHost::good(), &policy, &plan);
    assert!(missing(&findings).is_empty(), "{findings:#?}");
    assert!(findings.iter().any(|f| {
        f.control == "cgroup"
            && f.detail
                .contains("delegating `cpu`, `io`, `memory`, `pids`")
    }));
    assert!(
        findings
            .iter()
            .any(|f| f.control == "launch user" && f.status == Status::Ok)
    );
}

#[test]
fn undelegated_and_unavailable_controllers_are_named_with_the_fix() {
    let (policy, plan) = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.text(
        "/sys/fs/cgroup/splash-workers/cgroup.controllers",
        "cpu memory pids\n",
    );
    host.text(
        "/sys/fs/cgroup/splash-workers/cgroup.subtree_control",
        "cpu\n",
    );
    let findings = diagnose(&host, &policy, &plan);
    let m = missing(&findings);
    assert_eq!(m.len(), 2, "{m:#?}");
    assert!(
        m[0].detail.contains("need the `io` controller"),
        "{}",
        m[0].detail
    );
    assert!(
        m[0].fix
            .as_deref()
            .is_some_and(|f| f.contains("echo '+io' > /sys/fs/cgroup/cgroup.subtree_control"))
    );
    assert!(
        m[1].detail.contains("does not delegate them"),
        "{}",
        m[1].detail
    );
    assert_eq!(
        m[1].fix.as_deref(),
        Some("`echo '+memory +pids' > /sys/fs/cgroup/splash-workers/cgroup.subtree_control`")
    );
}

#[test]
fn a_parent_outside_cgroup_v2_is_refused_and_the_v2_mount_is_named() {
    let (policy, plan) = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.cgroup2 = vec![PathBuf::from("/sys/fs/cgroup/unified")];
    host.text(
        "/proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
    );
    host.text("/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
    let findings = diagnose(&host, &policy, &plan);
    let m = missing(&findings);
    assert_eq!(m.len(), 2, "{m:#?}");
    assert!(
        m[0].detail
            .contains("`cpu`, `io`, `memory`, `pids` controllers"),
        "{}",
        m[0].detail
    );
    assert!(m[0].detail.contains("offers `hugetlb`"));
    assert!(
        m[1].detail.contains(
            "not on a cgroup-v2 filesystem; cgroup v2 is mounted at `/sys/fs/cgroup/unified`"
        ),
        "{}",
        m[1].detail
    );
    assert!(
        m[1].fix
            .as_deref()
            .is_some_and(|f| f.contains("/sys/fs/cgroup/unified/splash-workers"))
    );
}

#[test]
fn old_bubblewrap_and_absent_options_are_refused() {
    let (policy, plan) = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.version = "bubblewrap 0.6.1\n".into();
    host.help = BWRAP_HELP
        .replace("    --disable-userns\n", "")
        .replace("    --ro-bind-fd FD DEST\n", "");
    let findings = diagnose(&host, &policy, &plan);
    let m = missing(&findings);
    assert_eq!(m.len(), 2, "{m:#?}");
    assert!(
        m[0].detail
            .contains("is bubblewrap 0.6.1; the plan needs 0.8.0 or later")
    );
    assert!(
        m[0].fix
            .as_deref()
            .is_some_and(|f| f.contains("apt-get install bubblewrap"))
    );
    assert!(
        m[1].detail
            .contains("does not list `--disable-userns`, `--ro-bind-fd`"),
        "{}",
        m[1].detail
    );
}

#[test]
fn a_missing_or_linked_bubblewrap_names_the_fix() {
    let (policy, plan) = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.entries.remove(Path::new("/usr/bin/bwrap"));
    let m0 = diagnose(&host, &policy, &plan);
    let m = missing(&m0);
    assert!(
        m[0].detail.starts_with("`/usr/bin/bwrap` cannot be used"),
        "{}",
        m[0].detail
    );
    assert!(
        m[0].fix
            .as_deref()
            .is_some_and(|f| f.contains("install Bubblewrap 0.8.0 or later"))
    );
    host.entries.insert(
        "/usr/bin/bwrap".into(),
        Entry {
            kind: EntryKind::File,
            mode: 0o755,
            symlink: true,
        },
    );
    let m1 = diagnose(&host, &policy, &plan);
    assert!(missing(&m1)[0].detail.contains("is a symbolic link"));
}

#[test]
fn user_namespace_restrictions_apply_to_unprivileged_launches_only() {
    let (policy, plan) = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.text(
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "1\n",
    );
    host.text("/proc/sys/kernel/unprivileged_userns_clone", "0\n");
    let findings = diagnose(&host, &policy, &plan);
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
    let findings = diagnose(&host, &policy, &plan);
    assert!(missing(&findings).is_empty(), "{findings:#?}");
    let root = findings
        .iter()
        .find(|f| f.control == "launch user")
        .expect("launch user");
    assert_eq!(root.status, Status::Warning);
    assert!(root.detail.contains("host uid 0 without capabilities"));

    host.text("/proc/sys/user/max_user_namespaces", "0\n");
    let findings = diagnose(&host, &policy, &plan);
    assert!(
        missing(&findings)[0]
            .detail
            .contains("`user.max_user_namespaces` is 0")
    );
}

#[test]
fn landlock_states_are_told_apart() {
    let (policy, plan) = bundled("agent-worker.splashpol");
    for (state, needle) in [
        (Err(libc::EOPNOTSUPP), "`lsm=`"),
        (Err(libc::ENOSYS), "CONFIG_SECURITY_LANDLOCK"),
        (Ok(0), "ABI 1 or later"),
    ] {
        let mut host = FakeHost::good();
        host.landlock = state;
        let findings = diagnose(&host, &policy, &plan);
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
    let findings = diagnose(&FakeHost::good(), &policy, &plan);
    let f = findings
        .iter()
        .find(|f| f.control == "landlock")
        .expect("landlock probed");
    assert_eq!(f.status, Status::Ok);
    // The executables behind the runtime mount are resolved to host paths.
    assert!(findings.iter().any(|f| f.detail.contains("landlock runner (`/opt/splash/bin/splash-landlock-runner` in the sandbox): `/opt/splash/runtime/bin/splash-landlock-runner`")
        || f.detail.contains("landlock runner: `/opt/splash/runtime/bin/splash-landlock-runner`")), "{findings:#?}");
}

#[test]
fn paths_with_the_wrong_type_are_named() {
    let (policy, plan) = bundled("cgroup-limits.splashpol");
    let mut host = FakeHost::good();
    host.file("/opt/splash/runtime/bin/worker", 0o644);
    let findings = diagnose(&host, &policy, &plan);
    let m = missing(&findings);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(
        m[0].detail
            .contains("is a file without an execute bit; expected an executable regular file"),
        "{}",
        m[0].detail
    );
}

#[test]
fn quota_roots_are_verified() {
    let (policy, plan) = bundled("durable-output.splashpol");
    let mut host = FakeHost::good();
    for pin in plan.pins() {
        match pin.kind {
            PinKind::Directory | PinKind::FileOrDirectory | PinKind::BrokerDirectory => {
                host.dir(pin.host_path.as_str())
            }
            _ => host.file(pin.host_path.as_str(), 0o755),
        }
    }
    host.quota = Err("failed to read the project quota".into());
    let findings = diagnose(&host, &policy, &plan);
    let q: Vec<_> = findings.iter().filter(|f| f.control == "quota").collect();
    assert!(!q.is_empty());
    assert!(
        q.iter().all(|f| f.status == Status::Missing
            && f.fix.as_deref().is_some_and(|x| x.contains("prjquota")))
    );
}

#[test]
fn versions_parse() {
    assert_eq!(parse_version("bubblewrap 0.8.0\n"), Some((0, 8, 0)));
    assert_eq!(parse_version("bubblewrap 0.11.0-rc1"), Some((0, 11, 0)));
    assert_eq!(parse_version("0.7"), Some((0, 7, 0)));
    assert_eq!(parse_version("bubblewrap"), None);
}
