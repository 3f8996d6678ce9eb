//! Project quotas on real quota filesystems: the ext4 `prjquota` mount the
//! guest prepared, and XFS and ext4 on loop devices made here. Each project
//! is provisioned exactly as `docs/runtime.md` tells an operator (`chattr +P
//! -p ID DIR` and `setquota -P ID ...`, or `xfs_io` and `xfs_quota`), the
//! plan is lowered from `.splashpol` text, and bind runs the kernel
//! inspector through the pinned descriptor. A provisioned root binds; each
//! misprovisioning, and limits that are not enforced, fail with their own
//! error; a non-root worker's writes stop at the byte and at the inode
//! limit, where the same writes into a root without the quota go further,
//! and so do those of a worker a root host runs under a policy `identity`,
//! whose files are then the identity's; the worker cannot retag its root; the aggregate counts each (filesystem,
//! project) pair once.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command};
use std::time::Duration;

use serde_json::{Value, json};
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, Resource,
    ResourceKind, SessionKey, Token,
};
use splash_runtime::quota::{QuotaUnit, VerifiedQuota};
use splash_runtime::{
    BindError, BindOptions, BoundCommand, Deadlines, LaunchPreparation, LaunchSpec, QuotaError,
    StopAwareStdout, Watchdog, WorkerStatus,
};
use splash_seccomp::Arch;
use splashpol::plan::LaunchPlan;

/// The unprivileged identity the worker runs as: root ignores quotas.
const NOBODY: u32 = 65534;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

const BWRAP: &str = "/usr/bin/bwrap";
const SETPRIV: &str = "/usr/bin/setpriv";
const WORKER_DIR: &str = "/opt/worker";

fn run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fresh directory `name` on the quota filesystem, owned by [`NOBODY`].
fn quota_dir(name: &str) -> PathBuf {
    let dir = splash_vm_tests::guest().quota_mount.join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir(&dir).expect("create quota dir");
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).expect("chown");
    dir
}

/// `chattr +P -p ID DIR`: the project id and its inheritance flag.
fn assign_project(dir: &Path, id: u32) {
    run("chattr", &["+P", "-p", &id.to_string(), path_str(dir)]);
}

/// `chattr -p ID DIR` alone: the project id without inheritance.
fn assign_project_without_inheritance(dir: &Path, id: u32) {
    run("chattr", &["-P", "-p", &id.to_string(), path_str(dir)]);
}

/// `setquota -P ID 0 BLOCKS 0 INODES MOUNT`: hard limits, no soft limits
/// (`BLOCKS` in 1 KiB units).
fn set_limits(id: u32, bytes: u64, inodes: u64) {
    let mount = splash_vm_tests::guest().quota_mount;
    run(
        "setquota",
        &[
            "-P",
            &id.to_string(),
            "0",
            &(bytes / KIB).to_string(),
            "0",
            &inodes.to_string(),
            path_str(&mount),
        ],
    );
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A private copy of the probe, readable and executable by [`NOBODY`].
struct ProbeDir(PathBuf);

impl ProbeDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("splash-vm-probe-{tag}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).expect("probe dir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        let probe = dir.join("splash-probe");
        fs::copy(
            splash_vm_tests::guest().bin_dir.join("splash-probe"),
            &probe,
        )
        .expect("copy the probe");
        fs::set_permissions(&probe, fs::Permissions::from_mode(0o755)).expect("chmod");
        Self(dir)
    }
}

impl Drop for ProbeDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One host root of a test policy.
#[derive(Clone, Copy)]
struct Root<'a> {
    id: &'a str,
    host: &'a Path,
    /// `None`: a raw read-write root under `host-writes unbounded`.
    quota: Option<(u32, &'a str)>,
}

/// A probe policy with `roots` at `/workspace/ID`, pinned mounts and no
/// further user namespaces; with quota roots, `quota aggregate` of
/// `aggregate`.
fn policy(probe: &ProbeDir, roots: &[Root<'_>], aggregate: &str) -> String {
    policy_as(probe, roots, aggregate, None)
}

/// [`policy`], with `identity` (the words after `identity`) when given.
fn policy_as(
    probe: &ProbeDir,
    roots: &[Root<'_>],
    aggregate: &str,
    identity: Option<&str>,
) -> String {
    let mut out = String::from("splashpol 1\npolicy \"vm-quota\" {\n");
    let mut line = |s: String| {
        out.push_str("  ");
        out.push_str(&s);
        out.push('\n');
    };
    line(format!(r#"bubblewrap "{BWRAP}""#));
    line(format!(r#"worker "{WORKER_DIR}/splash-probe""#));
    for dir in ["/usr", "/lib", "/lib64", "/bin"] {
        if Path::new(dir).exists() {
            line(format!(r#"runtime "{dir}" at "{dir}""#));
        }
    }
    line(format!(
        r#"runtime "{}" at "{WORKER_DIR}""#,
        path_str(&probe.0)
    ));
    for root in roots {
        let tail = match root.quota {
            Some((id, ceilings)) => format!("read-write quota project {id} {ceilings}"),
            None => "read-write".to_owned(),
        };
        line(format!(
            r#"root "{}" host "{}" at "/workspace/{}" {tail}"#,
            root.id,
            path_str(root.host),
            root.id
        ));
    }
    if roots.iter().any(|r| r.quota.is_some()) {
        line(format!("quota aggregate {aggregate}"));
    } else {
        line("host-writes unbounded".into());
    }
    line("user-namespaces none".into());
    line("pin mounts".into());
    if let Some(identity) = identity {
        line(format!("identity {identity}"));
    }
    out.push_str("}\n");
    out
}

const TOOLS: &[&str] = &["probe.report", "probe.write", "probe.create", "probe.exec"];

fn manifest(roots: &[Root<'_>]) -> CapabilityManifest {
    let mut grants: Vec<Grant> = TOOLS
        .iter()
        .map(|t| {
            let mut g = Grant::new(Token::new(*t).expect("tool token"), GrantFormat::Json);
            g.max_calls = 16;
            g.max_input_bytes = 4096;
            g.max_output_bytes = 1 << 20;
            g
        })
        .collect();
    for root in roots {
        grants[0].resources.insert(Resource::new(
            ResourceKind::FileRoot,
            Token::new(root.id).expect("root token"),
        ));
    }
    CapabilityManifest {
        protocol_version: 5,
        session_id: Token::new("s-1").expect("session token"),
        grants,
    }
}

/// The policy checked, activated with [`manifest`] and lowered.
fn plan(probe: &ProbeDir, roots: &[Root<'_>], aggregate: &str) -> LaunchPlan {
    lower_text(&policy(probe, roots, aggregate), roots)
}

/// `text` checked, activated with [`manifest`] and lowered.
fn lower_text(text: &str, roots: &[Root<'_>]) -> LaunchPlan {
    let outcome = splashpol::check_source("vm.splashpol", text);
    let checked = match outcome.policy {
        Some(p) if !outcome.has_errors() => p,
        _ => panic!("{}", outcome.render_human("vm.splashpol", text)),
    };
    let activation =
        splashpol::activate::activate(&checked, Some(&manifest(roots))).expect("activate");
    splashpol::lower::lower(&checked, &activation, Arch::host().expect("arch"), "vm")
        .expect("lower")
}

/// Binds with the kernel inspector and the launch wrapped in `setpriv`, so
/// Bubblewrap and the worker run as [`NOBODY`] with no capabilities.
fn bind(plan: LaunchPlan) -> Result<BoundCommand, BindError> {
    BoundCommand::bind_with(plan, BindOptions::default().with_preparation(AsNobody))
}

#[derive(Debug)]
struct AsNobody;

impl LaunchPreparation for AsNobody {
    fn name(&self) -> &str {
        "setpriv"
    }
    fn prepare(&mut self, _: &BoundCommand) -> std::io::Result<()> {
        Ok(())
    }
    fn launch_uid(&self) -> Option<u32> {
        Some(NOBODY)
    }
    fn wrap(&self, spec: &mut LaunchSpec) -> std::io::Result<()> {
        let id = NOBODY.to_string();
        spec.wrap(
            PathBuf::from(SETPRIV),
            vec![
                "--reuid".into(),
                id.clone(),
                "--regid".into(),
                id,
                "--clear-groups".into(),
                "--".into(),
            ],
            Vec::new(),
        );
        Ok(())
    }
}

fn quota_error(err: BindError) -> QuotaError {
    match err {
        BindError::Quota { source, .. } => source,
        other => panic!("expected a quota error, got {other:?}"),
    }
}

struct Session {
    session: HostSession<StopAwareStdout, ChildStdin>,
    worker: Watchdog,
}

impl Session {
    fn start(bound: &BoundCommand) -> Self {
        let key = SessionKey::generate().expect("key");
        let manifest = manifest(&[]);
        let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
        let (worker, stdin, stdout) = bound
            .spawn_watched(&boot, Deadlines::none())
            .expect("spawn");
        let session = match HostSession::open(manifest, key, stdin, stdout) {
            Ok(s) => s,
            Err(e) => panic!("open session: {e}; {}", worker.startup_failure()),
        };
        Self { session, worker }
    }

    fn call(&mut self, tool: &str, input: Value) -> Value {
        match self.session.invoke(tool, input) {
            Ok(v) => v,
            Err(e) => panic!("{tool}: {e}; {}", self.worker.startup_failure()),
        }
    }

    fn close(self) {
        let Self { session, worker } = self;
        session.close().expect("close session");
        let status = worker.wait_exit(Duration::from_secs(30)).expect("reap");
        assert_ne!(status, WorkerStatus::Running, "the worker did not exit");
    }
}

fn errno(v: &Value) -> Option<&str> {
    v.get("error")
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no `{key}` in {v}"))
}

const CEILINGS: &str = "bytes 16 MiB inodes 128";
const AGGREGATE: &str = "bytes 64 MiB inodes 512";

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn provisioned_root_binds_with_its_kernel_limits() {
    let probe = ProbeDir::new("binds");
    let dir = quota_dir("binds");
    assign_project(&dir, 101);
    set_limits(101, 8 * MIB, 64);
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((101, CEILINGS)),
    }];
    let bound = bind(plan(&probe, &roots, AGGREGATE)).expect("a provisioned root binds");
    let device = fs::metadata(&dir).expect("stat").dev();
    assert_eq!(
        bound.verified_quotas(),
        &[VerifiedQuota {
            project_id: 101,
            device,
            hard_bytes: 8 * MIB,
            hard_inodes: 64,
        }]
    );
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn roots_in_one_project_share_one_budget() {
    let probe = ProbeDir::new("shared");
    let (a, b, c) = (
        quota_dir("shared-a"),
        quota_dir("shared-b"),
        quota_dir("other"),
    );
    assign_project(&a, 102);
    assign_project(&b, 102);
    assign_project(&c, 103);
    set_limits(102, 8 * MIB, 64);
    set_limits(103, 8 * MIB, 64);
    let shared = [
        Root {
            id: "a",
            host: &a,
            quota: Some((102, CEILINGS)),
        },
        Root {
            id: "b",
            host: &b,
            quota: Some((102, CEILINGS)),
        },
    ];
    // The checker bounds the policy's ceilings; the runtime sums the hard
    // limits the kernel reports. A smaller aggregate set on the lowered plan
    // shows which: 8 MiB counted once fits 12 MiB, counted twice it would not.
    let tight = |plan: LaunchPlan| {
        let mut json = serde_json::to_value(&plan).expect("the plan's JSON form");
        json["aggregate_quota"] = serde_json::to_value(splashpol::model::AggregateQuota {
            max_bytes: 12 * MIB,
            max_inodes: 512,
        })
        .expect("JSON");
        serde_json::from_value::<LaunchPlan>(json).expect("a structurally valid plan")
    };
    let bound = bind(tight(plan(&probe, &shared, AGGREGATE))).expect("one shared budget");
    assert_eq!(bound.verified_quotas().len(), 2);

    let three = [
        shared[0],
        shared[1],
        Root {
            id: "c",
            host: &c,
            quota: Some((103, CEILINGS)),
        },
    ];
    let err = bind(tight(plan(&probe, &three, AGGREGATE))).expect_err("two projects, 16 MiB");
    assert!(
        matches!(
            err,
            BindError::AggregateQuota(QuotaError::AggregateExceeded {
                what: QuotaUnit::Byte,
                total: 16_777_216,
                ..
            })
        ),
        "{err:?}"
    );
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn each_misprovisioning_fails_with_its_error() {
    let probe = ProbeDir::new("misprovisioned");
    let check = |name: &str, expected: u32, provision: &dyn Fn(&Path)| -> QuotaError {
        let dir = quota_dir(name);
        provision(&dir);
        let roots = [Root {
            id: "out",
            host: &dir,
            quota: Some((expected, CEILINGS)),
        }];
        let err = bind(plan(&probe, &roots, AGGREGATE)).expect_err(name);
        eprintln!("{name}: {err}: {}", quota_error_text(&err));
        quota_error(err)
    };

    let e = check("wrong-id", 111, &|d| {
        assign_project(d, 110);
        set_limits(110, 8 * MIB, 64);
        set_limits(111, 8 * MIB, 64);
    });
    assert!(
        matches!(
            e,
            QuotaError::ProjectMismatch {
                expected: 111,
                found: 110
            }
        ),
        "{e:?}"
    );

    let e = check("no-inherit", 112, &|d| {
        assign_project_without_inheritance(d, 112);
        set_limits(112, 8 * MIB, 64);
    });
    assert!(matches!(e, QuotaError::NoInheritance), "{e:?}");

    let e = check("no-limit", 113, &|d| assign_project(d, 113));
    assert!(
        matches!(
            e,
            QuotaError::NoHardLimit {
                project: 113,
                what: QuotaUnit::Byte
            }
        ),
        "{e:?}"
    );
    let e = check("no-inode-limit", 114, &|d| {
        assign_project(d, 114);
        set_limits(114, 8 * MIB, 0);
    });
    assert!(
        matches!(
            e,
            QuotaError::NoHardLimit {
                project: 114,
                what: QuotaUnit::Inode
            }
        ),
        "{e:?}"
    );

    let e = check("over-ceiling", 115, &|d| {
        assign_project(d, 115);
        set_limits(115, 32 * MIB, 64);
    });
    assert!(
        matches!(
            e,
            QuotaError::AboveCeiling {
                what: QuotaUnit::Byte,
                limit: 33_554_432,
                ceiling: 16_777_216,
                ..
            }
        ),
        "{e:?}"
    );
    let e = check("over-inode-ceiling", 116, &|d| {
        assign_project(d, 116);
        set_limits(116, 8 * MIB, 1000);
    });
    assert!(
        matches!(
            e,
            QuotaError::AboveCeiling {
                what: QuotaUnit::Inode,
                limit: 1000,
                ceiling: 128,
                ..
            }
        ),
        "{e:?}"
    );

    // Usage over a limit: data written (as root) before the limit is set.
    let e = check("over-usage", 117, &|d| {
        assign_project(d, 117);
        fs::write(d.join("data"), vec![0x5a; 2 * MIB as usize]).expect("write");
        run("sync", &[]);
        set_limits(117, MIB, 64);
    });
    assert!(
        matches!(e, QuotaError::OverLimit { project: 117, what: QuotaUnit::Byte, used, limit: 1_048_576 } if used >= 2 * MIB),
        "{e:?}"
    );
    let e = check("over-inode-usage", 118, &|d| {
        assign_project(d, 118);
        for i in 0..10 {
            fs::write(d.join(format!("f{i}")), b"").expect("create");
        }
        set_limits(118, 8 * MIB, 5);
    });
    assert!(
        matches!(
            e,
            QuotaError::OverLimit {
                project: 118,
                what: QuotaUnit::Inode,
                used: 11,
                limit: 5
            }
        ),
        "{e:?}"
    );
}

fn quota_error_text(err: &BindError) -> String {
    match err {
        BindError::Quota { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// The worker as [`NOBODY`] writes `bytes` into `/workspace/out/data` (and
/// removes it again when `remove`), then creates `files` empty files in
/// `/workspace/out/files`.
fn worker_writes(bound: &BoundCommand, bytes: u64, remove: bool, files: u64) -> (Value, Value) {
    let mut s = Session::start(bound);
    let report = s.call("probe.report", json!({}));
    assert_eq!(
        report["ids"]["euid"],
        json!(NOBODY),
        "the worker runs as {NOBODY}: {}",
        report["ids"]
    );
    let write = s.call(
        "probe.write",
        json!({"path": "/workspace/out/data", "bytes": bytes, "remove": remove}),
    );
    let create = s.call(
        "probe.create",
        json!({"dir": "/workspace/out/files", "count": files}),
    );
    s.close();
    (write, create)
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn a_non_root_worker_stops_at_the_byte_and_inode_limits() {
    let probe = ProbeDir::new("edquot");

    // 4 MiB and 16 inodes for project 120.
    let dir = quota_dir("edquot");
    assign_project(&dir, 120);
    let files = dir.join("files");
    fs::create_dir(&files).expect("files dir");
    std::os::unix::fs::chown(&files, Some(NOBODY), Some(NOBODY)).expect("chown");
    set_limits(120, 4 * MIB, 16);
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((120, CEILINGS)),
    }];
    let bound = bind(plan(&probe, &roots, AGGREGATE)).expect("binds");
    let (write, create) = worker_writes(&bound, 16 * MIB, false, 64);
    eprintln!("quota: {write}\n{create}");
    assert_eq!(errno(&write), Some("EDQUOT"), "{write}");
    let written = u64_of(&write, "written");
    assert!(
        (3 * MIB..=4 * MIB).contains(&written),
        "stops at the 4 MiB limit: {write}"
    );
    assert_eq!(errno(&create), Some("EDQUOT"), "{create}");
    // The root, `files` and `data` are three of the 16 inodes.
    assert_eq!(u64_of(&create, "created"), 13, "{create}");

    // Control: the same writes into a root of the same filesystem without
    // the quota go to the end.
    let free = quota_dir("no-quota");
    let free_files = free.join("files");
    fs::create_dir(&free_files).expect("files dir");
    std::os::unix::fs::chown(&free_files, Some(NOBODY), Some(NOBODY)).expect("chown");
    let roots = [Root {
        id: "out",
        host: &free,
        quota: None,
    }];
    let bound = bind(plan(&probe, &roots, AGGREGATE)).expect("binds");
    let (write, create) = worker_writes(&bound, 16 * MIB, false, 64);
    eprintln!("control: {write}\n{create}");
    assert_eq!(write["ok"], json!(true), "{write}");
    assert_eq!(u64_of(&write, "written"), 16 * MIB);
    assert_eq!(create["ok"], json!(true), "{create}");
    assert_eq!(u64_of(&create, "created"), 64);

    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_dir_all(&free);
}

/// Turns project-quota enforcement back on when dropped.
struct EnforcementOff(PathBuf);

impl EnforcementOff {
    /// `quotaoff -P MOUNT`: accounting continues and `Q_GETQUOTA` still
    /// reports the limits, but the kernel no longer enforces them.
    fn new() -> Self {
        let mount = splash_vm_tests::guest().quota_mount;
        run("quotaoff", &["-P", path_str(&mount)]);
        Self(mount)
    }
}

impl Drop for EnforcementOff {
    fn drop(&mut self) {
        run("quotaon", &["-P", path_str(&self.0)]);
    }
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn limits_that_are_not_enforced_fail_closed() {
    let probe = ProbeDir::new("unenforced");
    let dir = quota_dir("unenforced");
    assign_project(&dir, 130);
    set_limits(130, 4 * MIB, 16);
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((130, CEILINGS)),
    }];
    {
        let _off = EnforcementOff::new();
        let err = bind(plan(&probe, &roots, AGGREGATE)).expect_err("limits not enforced");
        assert!(
            matches!(quota_error(err), QuotaError::NotEnforced),
            "project limits are readable but off"
        );
    }
    // Control: with enforcement back on, the same root binds.
    bind(plan(&probe, &roots, AGGREGATE)).expect("enforced again");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn an_unprivileged_host_cannot_verify_a_project_quota() {
    // Reading a project's quota needs CAP_SYS_ADMIN: `splashc run` as
    // uid 65534 fails at bind with the permission error, where the same
    // policy run as root launches.
    let probe = ProbeDir::new("unprivileged");
    let dir = quota_dir("unprivileged");
    assign_project(&dir, 140);
    set_limits(140, 4 * MIB, 16);
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((140, CEILINGS)),
    }];
    let splashc = probe.0.join("splashc");
    fs::copy(splash_vm_tests::guest().bin_dir.join("splashc"), &splashc).expect("copy splashc");
    let policy_path = probe.0.join("quota.splashpol");
    fs::write(&policy_path, policy(&probe, &roots, AGGREGATE)).expect("policy");
    fs::set_permissions(&policy_path, fs::Permissions::from_mode(0o644)).expect("chmod");

    let unprivileged = Command::new(SETPRIV)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&splashc)
        .arg("run")
        .arg(&policy_path)
        .output()
        .expect("splashc through setpriv");
    let stderr = String::from_utf8_lossy(&unprivileged.stderr);
    eprintln!("unprivileged: {stderr}");
    assert_eq!(unprivileged.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "permission to read the project quota (quotactl_fd Q_GETQUOTA PRJQUOTA) is missing"
        ),
        "{stderr}"
    );

    // Control: as root, the same policy binds and the worker runs.
    let root = Command::new(&splashc)
        .arg("run")
        .arg(&policy_path)
        .output()
        .expect("splashc as root");
    let stderr = String::from_utf8_lossy(&root.stderr);
    assert!(root.status.success(), "{stderr}");
    let _ = fs::remove_dir_all(&dir);
}

/// A further filesystem on a loop device over a sparse file in the guest's
/// tmpfs, made with `mkfs` and mounted with `options`. Unmounted and
/// detached when dropped.
struct LoopMount {
    mount: PathBuf,
    device: String,
    image: PathBuf,
}

impl LoopMount {
    fn new(name: &str, module: &str, mkfs: &[&str], options: &str) -> Self {
        let kroot = std::env::var("VMTEST_KROOT").expect("the guest's module tree");
        run("modprobe", &["-a", "-d", &kroot, "loop", module]);
        let image = PathBuf::from(format!("/run/{name}.img"));
        let mount = PathBuf::from(format!("/run/{name}"));
        let file = fs::File::create(&image).expect("image");
        file.set_len(512 * MIB).expect("sparse image");
        drop(file);
        let mut args = mkfs[1..].to_vec();
        args.push(path_str(&image));
        run(mkfs[0], &args);
        let out = Command::new("losetup")
            .args(["-f", "--show", path_str(&image)])
            .output()
            .expect("losetup");
        assert!(out.status.success(), "losetup: {out:?}");
        let device = String::from_utf8(out.stdout)
            .expect("device name")
            .trim()
            .to_owned();
        fs::create_dir_all(&mount).expect("mount point");
        let mut args = Vec::new();
        if !options.is_empty() {
            args.extend(["-o", options]);
        }
        args.extend([device.as_str(), path_str(&mount)]);
        run("mount", &args);
        Self {
            mount,
            device,
            image,
        }
    }

    /// XFS mounted with `prjquota`: enforced project quotas (and `nosuid`,
    /// which bind requires of a root launch's read-write roots).
    fn xfs() -> Self {
        Self::new(
            "splash-xfs",
            "xfs",
            &["mkfs.xfs", "-q", "-f"],
            "prjquota,nosuid",
        )
    }

    /// A fresh directory owned by [`NOBODY`] in project `id` with
    /// inheritance (`xfs_io -c 'chproj ID' -c 'chattr +P'`) and hard limits
    /// (`xfs_quota -x -c 'limit -p bhard=.. ihard=.. ID'`).
    fn project_dir(&self, name: &str, id: u32, bytes: u64, inodes: u64) -> PathBuf {
        let dir = self.mount.join(name);
        fs::create_dir(&dir).expect("create dir");
        std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).expect("chown");
        run(
            "xfs_io",
            &[
                "-c",
                &format!("chproj {id}"),
                "-c",
                "chattr +P",
                path_str(&dir),
            ],
        );
        run(
            "xfs_quota",
            &[
                "-x",
                "-c",
                &format!("limit -p bhard={}k ihard={inodes} {id}", bytes / KIB),
                path_str(&self.mount),
            ],
        );
        dir
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
        let _ = fs::remove_file(&self.image);
        let _ = fs::remove_dir(&self.mount);
    }
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn xfs_project_quota_binds_and_stops_the_worker() {
    let xfs = LoopMount::xfs();
    let probe = ProbeDir::new("xfs");
    let dir = xfs.project_dir("out", 150, 4 * MIB, 16);
    let files = dir.join("files");
    fs::create_dir(&files).expect("files dir");
    std::os::unix::fs::chown(&files, Some(NOBODY), Some(NOBODY)).expect("chown");
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((150, CEILINGS)),
    }];
    let bound = bind(plan(&probe, &roots, AGGREGATE)).expect("an XFS project root binds");
    assert_eq!(bound.verified_quotas()[0].hard_bytes, 4 * MIB);
    assert_eq!(bound.verified_quotas()[0].hard_inodes, 16);
    // XFS reports an exceeded project quota as ENOSPC (ext4: EDQUOT). The
    // data file is removed again so that the file creation meets the inode
    // limit, not the byte limit.
    let (write, create) = worker_writes(&bound, 16 * MIB, true, 64);
    eprintln!("xfs: {write}\n{create}");
    assert_eq!(errno(&write), Some("ENOSPC"), "{write}");
    let written = u64_of(&write, "written");
    assert!(
        (3 * MIB..=4 * MIB).contains(&written),
        "stops at the 4 MiB limit: {write}"
    );
    assert_eq!(write["removed"]["ok"], json!(true), "{write}");
    assert_eq!(errno(&create), Some("ENOSPC"), "{create}");
    // The root and `files` are two of the 16 inodes.
    assert_eq!(u64_of(&create, "created"), 14, "{create}");

    // Control: the same writes into a directory of the same filesystem
    // without a project go to the end.
    let free = xfs.mount.join("no-quota");
    fs::create_dir_all(free.join("files")).expect("files dir");
    for d in [&free, &free.join("files")] {
        std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).expect("chown");
    }
    let roots = [Root {
        id: "out",
        host: &free,
        quota: None,
    }];
    let bound = bind(plan(&probe, &roots, AGGREGATE)).expect("binds");
    let (write, create) = worker_writes(&bound, 16 * MIB, true, 64);
    assert_eq!(write["ok"], json!(true), "{write}");
    assert_eq!(u64_of(&write, "written"), 16 * MIB);
    assert_eq!(u64_of(&create, "created"), 64, "{create}");
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn one_project_on_two_filesystems_is_two_budgets() {
    // Project 160 on the ext4 mount and on XFS. The checker counts the
    // project id once (8 MiB fits the 8 MiB aggregate); the runtime counts
    // each (filesystem, project) pair, 16 MiB, and refuses the launch.
    let xfs = LoopMount::xfs();
    let probe = ProbeDir::new("two-fs");
    let on_ext4 = quota_dir("two-fs");
    assign_project(&on_ext4, 160);
    set_limits(160, 8 * MIB, 64);
    let on_xfs = xfs.project_dir("two-fs", 160, 8 * MIB, 64);
    let ceilings = "bytes 8 MiB inodes 64";
    let aggregate = "bytes 8 MiB inodes 128";
    let one = [Root {
        id: "ext4",
        host: &on_ext4,
        quota: Some((160, ceilings)),
    }];
    bind(plan(&probe, &one, aggregate)).expect("one filesystem fits");
    let two = [
        one[0],
        Root {
            id: "xfs",
            host: &on_xfs,
            quota: Some((160, ceilings)),
        },
    ];
    let err = bind(plan(&probe, &two, aggregate)).expect_err("two filesystems");
    assert!(
        matches!(
            err,
            BindError::AggregateQuota(QuotaError::AggregateExceeded {
                what: QuotaUnit::Byte,
                total: 16_777_216,
                maximum: 8_388_608
            })
        ),
        "{err:?}"
    );
    let _ = fs::remove_dir_all(&on_ext4);
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn ext4_mounted_without_prjquota_only_accounts_and_fails_closed() {
    // The project quota feature without the `prjquota` mount option: the
    // kernel accounts usage and reports the limits, but does not enforce
    // them.
    let ext4 = LoopMount::new(
        "splash-ext4-accounting",
        "ext4",
        &[
            "mkfs.ext4",
            "-q",
            "-F",
            "-O",
            "quota,project",
            "-E",
            "quotatype=prjquota",
        ],
        "nosuid",
    );
    let probe = ProbeDir::new("accounting");
    let dir = ext4.mount.join("out");
    fs::create_dir(&dir).expect("create dir");
    assign_project(&dir, 170);
    run(
        "setquota",
        &["-P", "170", "0", "4096", "0", "16", path_str(&ext4.mount)],
    );
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((170, CEILINGS)),
    }];
    let err = bind(plan(&probe, &roots, AGGREGATE)).expect_err("limits only accounted");
    assert!(
        matches!(quota_error(err), QuotaError::NotEnforced),
        "accounting without enforcement"
    );
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn the_worker_cannot_retag_its_root() {
    // The kernel refuses project-id and inheritance changes from any user
    // namespace but the initial one, even by the directory's owner: inside
    // the sandbox both `chattr` calls fail with EINVAL.
    let probe = ProbeDir::new("retag");
    let dir = quota_dir("retag");
    assign_project(&dir, 180);
    set_limits(180, 4 * MIB, 16);
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((180, CEILINGS)),
    }];
    let bound = bind(plan(&probe, &roots, AGGREGATE)).expect("binds");
    let mut s = Session::start(&bound);
    for argv in [
        vec!["/usr/bin/chattr", "-p", "0", "/workspace/out"],
        vec!["/usr/bin/chattr", "-P", "/workspace/out"],
    ] {
        let r = s.call("probe.exec", json!({ "argv": argv }));
        assert_eq!(r["exit_code"], json!(1), "{r}");
        assert!(
            r["stderr"]
                .as_str()
                .is_some_and(|e| e.contains("Invalid argument")),
            "{r}"
        );
    }
    s.close();
    bind(plan(&probe, &roots, AGGREGATE)).expect("the project is intact");

    // Control: the same owner in the initial user namespace can retag the
    // directory, and bind then refuses it.
    run(
        SETPRIV,
        &[
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/chattr",
            "-p",
            "0",
            path_str(&dir),
        ],
    );
    let err = bind(plan(&probe, &roots, AGGREGATE)).expect_err("retagged");
    assert!(
        matches!(
            quota_error(err),
            QuotaError::ProjectMismatch {
                expected: 180,
                found: 0
            }
        ),
        "retagged outside the sandbox"
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn a_worker_launched_by_root_is_bounded_too() {
    // Bubblewrap drops every capability, so a worker launched by a root
    // host (uid 0 in its own user namespace) has no CAP_SYS_RESOURCE to
    // ignore the limit with.
    let probe = ProbeDir::new("root-host");
    let dir = quota_dir("root-host");
    std::os::unix::fs::chown(&dir, Some(0), Some(0)).expect("chown");
    assign_project(&dir, 190);
    set_limits(190, 4 * MIB, 16);
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((190, CEILINGS)),
    }];
    let bound = BoundCommand::bind(plan(&probe, &roots, AGGREGATE)).expect("binds");
    let mut s = Session::start(&bound);
    let report = s.call("probe.report", json!({}));
    assert_eq!(report["ids"]["euid"], json!(0), "{}", report["ids"]);
    assert_eq!(
        report["capabilities"]["effective"],
        json!("0000000000000000"),
        "{}",
        report["capabilities"]
    );
    let write = s.call(
        "probe.write",
        json!({"path": "/workspace/out/data", "bytes": 16 * MIB}),
    );
    s.close();
    assert_eq!(errno(&write), Some("EDQUOT"), "{write}");
    assert!(u64_of(&write, "written") <= 4 * MIB, "{write}");
    let _ = fs::remove_dir_all(&dir);
}

/// The fixed policy identity of [`a_worker_under_an_identity_stops_at_the_quota`].
const IDENTITY: u32 = 64000;

/// A fresh directory `name` on the quota filesystem, in `project` (with
/// hard limits of `bytes` and `inodes`) when given, with a `files`
/// subdirectory made after that so that it is in the project too; both are
/// owned by [`IDENTITY`] (bind refuses a read-write root the identity cannot
/// write).
fn identity_dir(name: &str, project: Option<(u32, u64, u64)>) -> PathBuf {
    let dir = quota_dir(name);
    if let Some((id, bytes, inodes)) = project {
        assign_project(&dir, id);
        set_limits(id, bytes, inodes);
    }
    let files = dir.join("files");
    fs::create_dir(&files).expect("files dir");
    for d in [&dir, &files] {
        std::os::unix::fs::chown(d, Some(IDENTITY), Some(IDENTITY)).expect("chown");
    }
    dir
}

/// The worker writes 16 MiB into `/workspace/out/data`, then creates 64
/// empty files in `/workspace/out/files`.
fn data_and_files(s: &mut Session) -> (Value, Value) {
    let write = s.call(
        "probe.write",
        json!({"path": "/workspace/out/data", "bytes": 16 * MIB}),
    );
    let create = s.call(
        "probe.create",
        json!({"dir": "/workspace/out/files", "count": 64}),
    );
    (write, create)
}

/// The host uid and gid owning `path`.
fn owner(path: &Path) -> (u32, u32) {
    let m = fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (m.uid(), m.gid())
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn a_worker_under_an_identity_stops_at_the_quota() {
    // A root host, a policy `identity user 64000 group 64000`: the launch
    // drops to the identity before Bubblewrap starts, so the worker is host
    // uid 64000 and the project quota stops its writes.
    let probe = ProbeDir::new("identity");
    let dir = identity_dir("identity", Some((200, 4 * MIB, 16)));
    let roots = [Root {
        id: "out",
        host: &dir,
        quota: Some((200, CEILINGS)),
    }];
    let fixed = format!("user {IDENTITY} group {IDENTITY}");
    let text = policy_as(&probe, &roots, AGGREGATE, Some(&fixed));
    let bound = BoundCommand::bind(lower_text(&text, &roots)).expect("binds as root");
    let mut s = Session::start(&bound);
    let host_uids = splash_vm_tests::host_uids(&s.worker.pid().to_string());
    let below = s.call(
        "probe.write",
        json!({"path": "/workspace/out/below", "bytes": MIB}),
    );
    let (write, create) = data_and_files(&mut s);
    s.close();
    eprintln!("identity {IDENTITY}: uids {host_uids:?}\n{below}\n{write}\n{create}");
    assert_eq!(host_uids, vec![IDENTITY; 4], "the worker's host uids");
    // Control: a write below the limit succeeds.
    assert_eq!(below["ok"], json!(true), "{below}");
    assert_eq!(u64_of(&below, "written"), MIB);
    assert_eq!(errno(&write), Some("EDQUOT"), "{write}");
    let written = u64_of(&write, "written");
    assert!(
        (2 * MIB..=3 * MIB).contains(&written),
        "stops at the 4 MiB limit less the 1 MiB below it: {write}"
    );
    assert_eq!(errno(&create), Some("EDQUOT"), "{create}");
    // The root, `files`, `below` and `data` are four of the 16 inodes.
    assert_eq!(u64_of(&create, "created"), 12, "{create}");
    // What it wrote is the identity's on the host.
    for f in [dir.join("below"), dir.join("data"), dir.join("files/f0")] {
        assert_eq!(owner(&f), (IDENTITY, IDENTITY), "{}", f.display());
    }

    // Control: the same writes under the same identity into a root of the
    // same filesystem without the quota go to the end.
    let free = identity_dir("identity-free", None);
    let free_roots = [Root {
        id: "out",
        host: &free,
        quota: None,
    }];
    let text = policy_as(&probe, &free_roots, AGGREGATE, Some(&fixed));
    let bound = BoundCommand::bind(lower_text(&text, &free_roots)).expect("binds");
    let mut s = Session::start(&bound);
    let (write, create) = data_and_files(&mut s);
    s.close();
    assert_eq!(write["ok"], json!(true), "{write}");
    assert_eq!(u64_of(&write, "written"), 16 * MIB);
    assert_eq!(u64_of(&create, "created"), 64, "{create}");
    assert_eq!(owner(&free.join("data")), (IDENTITY, IDENTITY));

    // `identity dynamic` refuses the same read-write quota root statically:
    // its files would stay owned by a uid a later session may get.
    let text = policy_as(&probe, &roots, AGGREGATE, Some("dynamic"));
    let outcome = splashpol::check_source("vm.splashpol", &text);
    let codes: Vec<String> = outcome
        .diagnostics
        .iter()
        .map(|d| d.code.to_string())
        .collect();
    assert!(
        outcome.has_errors()
            && codes.contains(&"splash::check::dynamic-identity-writable-root".to_owned()),
        "{codes:?}"
    );
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_dir_all(&free);
}
