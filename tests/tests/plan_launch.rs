//! Real launches of the argv that `lower` + `bwrap_arguments` emit in path
//! mode (no descriptor pinning): the installed Bubblewrap starts a small
//! shell worker from a runtime mount, the worker reports what it sees from
//! inside, and the report is compared with the policy.
//!
//! Every "denied"/"absent" observation has a control in the same file that
//! shows the same probe succeeding when the layer is not there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use splash_protocol::{CapabilityManifest, Grant, GrantFormat, Resource, ResourceKind, Token};
use splash_tests::{bwrap_path, require_host};
use splashpol::activate::activate;
use splashpol::emit::shell_quote;
use splashpol::lower::lower;
use splashpol::model::{
    AbsPath, Access, FileRoot, FileRootKind, HostPath, Policy, PrivateTmp, RuntimeMount,
    SandboxPath, SeccompPolicy, Side,
};
use splashpol::plan::{Arch, LaunchPlan, PinSlot, Slot};

const WORKER: &str = r#"#!/bin/sh
# /etc is not mounted, so only tools reached without /etc/alternatives work
echo "cwd=$(pwd)"
printf 'env='; tr '\0' ' ' < /proc/$$/environ; echo
grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | tr -d '\t' | sed 's/:/=/'
for d in /workspace/ro /workspace/rw /workspace/scratch /workspace/hidden; do
  if [ -d "$d" ]; then
    if touch "$d/.probe" 2>/dev/null; then echo "root:$d=rw"; else echo "root:$d=ro"; fi
  else
    echo "root:$d=absent"
  fi
done
echo "tmp=$(stat -f -c '%b %S' /tmp)"
echo "scratch=$(stat -f -c '%b %S' /workspace/scratch 2>/dev/null)"
if unshare -U true 2>/dev/null; then echo userns=allowed; else echo userns=denied; fi
if touch /probe-rootfs 2>/dev/null; then echo rootfs=rw; else echo rootfs=ro; fi
echo "proc=$(grep '^[^ ]* /proc ' /proc/self/mounts | cut -d' ' -f4 | cut -d, -f1)"
echo "hello=$(cat /workspace/ro/hello.txt 2>/dev/null)"
cut -d' ' -f5 /proc/self/mountinfo | sed 's/^/mount=/'
echo "seccomp=$(grep '^Seccomp:' /proc/self/status | tr -dc 0-9)"
echo "args=$*"
"#;

/// Temporary host directories for one launch, removed on drop.
struct Fixture {
    base: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        static N: AtomicU32 = AtomicU32::new(0);
        let base = std::env::temp_dir().join(format!(
            "splash-plan-launch-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        for d in ["rt/bin", "ro", "rw", "hidden"] {
            std::fs::create_dir_all(base.join(d)).expect("create fixture dir");
        }
        std::fs::write(base.join("ro/hello.txt"), "hello-from-host").expect("write");
        let worker = base.join("rt/bin/worker");
        std::fs::write(&worker, WORKER).expect("write worker");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Fixture { base }
    }

    fn path(&self, rel: &str) -> HostPath {
        HostPath::new(self.base.join(rel).to_string_lossy().into_owned()).expect("abs path")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn p<S: Side>(s: &str) -> AbsPath<S> {
    AbsPath::new(s).expect("path")
}

fn id(s: &str) -> Token {
    Token::new(s).expect("token")
}

fn host_root(fx: &Fixture, name: &str, dest: &str, access: Access) -> FileRoot {
    FileRoot {
        id: id(name),
        destination: p(dest),
        kind: FileRootKind::Host {
            source: fx.path(name),
            access,
            quota: None,
        },
    }
}

/// A path-mode policy: system directories and the fixture runtime as
/// read-only runtime mounts, four registered roots.
fn policy(fx: &Fixture, bwrap: &Path) -> Value {
    let mut runtime_mounts = vec![RuntimeMount {
        source: fx.path("rt"),
        destination: p("/opt/splash"),
    }];
    for sys in ["/usr", "/bin", "/lib", "/lib64"] {
        if Path::new(sys).exists() {
            runtime_mounts.push(RuntimeMount {
                source: p(sys),
                destination: p(sys),
            });
        }
    }
    json!({
        "name": "plan-launch",
        "bubblewrap": HostPath::new(bwrap.to_string_lossy().into_owned()).expect("bwrap path"),
        "worker": "/opt/splash/bin/worker",
        "worker_args": ["--json-lines", "two words"],
        "runtime_mounts": runtime_mounts,
        "file_roots": vec![
            host_root(fx, "ro", "/workspace/ro", Access::ReadOnly),
            host_root(fx, "rw", "/workspace/rw", Access::ReadWrite),
            FileRoot {
                id: id("scratch"),
                destination: p("/workspace/scratch"),
                kind: FileRootKind::Ephemeral {
                    size_bytes: 1 << 20,
                },
            },
            host_root(fx, "hidden", "/workspace/hidden", Access::ReadOnly),
        ],
        "tmp": PrivateTmp::Bounded {
            size_bytes: 2 << 20,
        },
        "bounded_writes": false,
        "no_further_user_namespaces": true,
        "pin_mounts": false,
        "pin_executables": false,
        "allow_unbounded_host_writes": true,
        "aggregate_quota": null,
        "aggregate_ephemeral_max_bytes": 3 << 20,
        "max_active_file_roots": 64,
        "seccomp": SeccompPolicy::Off,
        "require_limit_runner": false,
        "runners": splashpol::model::Runners::None,
        "cgroup": null,
        "require_cgroup_v2": false,
        "watchdog": null,
        "network_broker": null,
        "worker_identity": null,
    })
}

fn manifest(roots: &[&str]) -> CapabilityManifest {
    let mut grant = Grant {
        tool: id("tool.call"),
        format: GrantFormat::Json,
        max_calls: 1,
        max_input_bytes: 16384,
        max_output_bytes: 65536,
        max_compensations: 0,
        resources: Default::default(),
    };
    grant.resources = roots
        .iter()
        .map(|r| Resource {
            kind: ResourceKind::FileRoot,
            id: id(r),
        })
        .collect();
    CapabilityManifest {
        protocol_version: 5,
        session_id: id("s-1"),
        grants: vec![grant],
    }
}

/// `raw`, a policy's JSON form, as a checked policy.
fn checked(raw: &Value) -> Policy {
    serde_json::from_value(raw.clone()).expect("a valid policy")
}

fn plan_for(raw: &Value, roots: &[&str]) -> LaunchPlan {
    let policy = &checked(raw);
    let activation = activate(policy, Some(&manifest(roots))).expect("activate");
    let arch = Arch::host().expect("supported host arch");
    lower(policy, &activation, arch, "test").expect("lower")
}

/// Run the plan with the real bwrap; the worker's report as key → values.
///
/// A path-mode plan has no pinned descriptors; its only possible descriptor
/// slot is Bubblewrap's seccomp program (a policy with a `landlock` block
/// always has one), which a shell opens on descriptor 9 just before it execs
/// bwrap. Device sources are the host's own nodes, as the runtime renders
/// them for a worker that does not own them (the runtime's private nodes
/// are `runtime_devices.rs`'s subject).
fn launch(plan: &LaunchPlan) -> BTreeMap<String, Vec<String>> {
    const SECCOMP_FD: &str = "9";
    let mut slots = |slot| match slot {
        Slot::BwrapSeccomp => SECCOMP_FD.to_string(),
        Slot::Device(node) => splashpol::emit::device_destination(node),
        other => panic!("path mode plan has a descriptor slot {other:?}"),
    };
    let program = plan.bwrap_program(&mut slots);
    let args = plan.bwrap_arguments(&mut slots);
    let filter = std::env::temp_dir().join(format!(
        "splash-plan-launch-seccomp-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let bytes = plan.seccomp().map_or(&[][..], |s| &s.program[..]);
    std::fs::write(&filter, bytes).expect("write the seccomp program");
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!(
            "exec \"$0\" \"$@\" {SECCOMP_FD}<\"$SPLASH_SECCOMP_FILE\""
        ))
        .arg(&program)
        .args(&args)
        .env("SPLASH_SECCOMP_FILE", &filter)
        .output()
        .expect("spawn bwrap");
    let _ = std::fs::remove_file(&filter);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bwrap failed: {:?}\nargv: {args:?}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut report: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in stdout.lines() {
        if let Some((k, v)) = line.split_once('=') {
            report.entry(k.to_string()).or_default().push(v.to_string());
        }
    }
    report
}

fn one<'a>(report: &'a BTreeMap<String, Vec<String>>, key: &str) -> &'a str {
    match report.get(key).map(Vec::as_slice) {
        Some([v]) => v,
        other => panic!("report key `{key}`: {other:?}"),
    }
}

fn bwrap() -> Option<PathBuf> {
    let found = bwrap_path();
    if require_host(found.is_some(), "bubblewrap (`bwrap`)") {
        found
    } else {
        None
    }
}

fn tmpfs_bytes(stat: &str) -> u64 {
    let mut it = stat
        .split_whitespace()
        .map(|n| n.parse::<u64>().expect("number"));
    let (blocks, size) = (it.next().expect("blocks"), it.next().expect("size"));
    blocks * size
}

#[test]
fn selected_roots_are_mounted_as_the_policy_says_and_nothing_else() {
    let Some(bwrap) = bwrap() else { return };
    let fx = Fixture::new();
    let policy = policy(&fx, &bwrap);
    let plan = plan_for(&policy, &["ro", "rw", "scratch"]);

    // The unselected root appears nowhere in the launch object.
    let argv = plan.bwrap_arguments(&mut |_| "{fd}".to_string());
    let hidden = fx.path("hidden").to_string();
    assert!(
        !argv
            .iter()
            .any(|a| a.contains(&hidden) || a.contains("/workspace/hidden"))
    );

    let r = launch(&plan);
    assert_eq!(one(&r, "root:/workspace/ro"), "ro");
    assert_eq!(one(&r, "root:/workspace/rw"), "rw");
    assert_eq!(one(&r, "root:/workspace/scratch"), "rw");
    assert_eq!(one(&r, "root:/workspace/hidden"), "absent");
    assert_eq!(one(&r, "hello"), "hello-from-host");
    // The write landed in the host directory behind the read-write root.
    assert!(fx.base.join("rw/.probe").exists());
    assert!(!fx.base.join("ro/.probe").exists());

    // Sizes of the bounded tmpfs mounts.
    assert_eq!(tmpfs_bytes(one(&r, "tmp")), 2 << 20);
    assert_eq!(tmpfs_bytes(one(&r, "scratch")), 1 << 20);

    // Process state: no capabilities, empty environment (bwrap itself sets
    // only `PWD` after `--chdir`), cwd `/`, the fixed arguments.
    for cap in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(one(&r, cap), "0000000000000000", "{cap}");
    }
    assert_eq!(one(&r, "env").trim(), "PWD=/");
    assert_eq!(one(&r, "cwd"), "/");
    assert_eq!(one(&r, "args"), "--json-lines two words");
    assert_eq!(one(&r, "userns"), "denied");
    assert_eq!(
        one(&r, "rootfs"),
        "rw",
        "no bounded-writes remount in this policy"
    );

    // Mount points under /workspace: exactly the selected roots.
    let mounts: BTreeSet<&str> = r["mount"]
        .iter()
        .map(String::as_str)
        .filter(|m| m.starts_with("/workspace"))
        .collect();
    assert_eq!(
        mounts,
        ["/workspace/ro", "/workspace/rw", "/workspace/scratch"]
            .into_iter()
            .collect()
    );
}

#[test]
fn control_the_same_root_is_visible_when_selected() {
    let Some(bwrap) = bwrap() else { return };
    let fx = Fixture::new();
    let policy = policy(&fx, &bwrap);
    let r = launch(&plan_for(&policy, &["hidden"]));
    assert_eq!(one(&r, "root:/workspace/hidden"), "ro");
    assert_eq!(one(&r, "root:/workspace/ro"), "absent");
}

#[test]
fn control_user_namespaces_are_available_without_the_lockdown() {
    let Some(bwrap) = bwrap() else { return };
    let fx = Fixture::new();
    let mut policy = policy(&fx, &bwrap);
    policy["no_further_user_namespaces"] = json!(false);
    let plan = plan_for(&policy, &["ro"]);
    assert!(
        !plan
            .bwrap_arguments(&mut |_| String::new())
            .iter()
            .any(|a| a == "--disable-userns")
    );
    let r = launch(&plan);
    assert_eq!(one(&r, "userns"), "allowed");
}

#[test]
fn bounded_writes_remount_the_root_proc_and_dev_read_only() {
    let Some(bwrap) = bwrap() else { return };
    let fx = Fixture::new();
    let mut policy = policy(&fx, &bwrap);
    policy["bounded_writes"] = json!(true);
    policy["allow_unbounded_host_writes"] = json!(false);
    let r = launch(&plan_for(&policy, &["ro", "scratch"]));
    assert_eq!(one(&r, "rootfs"), "ro");
    assert_eq!(one(&r, "proc"), "ro");
    // Selected submounts keep their own access.
    assert_eq!(one(&r, "root:/workspace/scratch"), "rw");
    assert_eq!(one(&r, "root:/workspace/ro"), "ro");
}

#[test]
fn refused_plans_never_reach_bwrap() {
    // Pure: no host needed. A read-write root under bounded writes is
    // refused by lowering even though activation accepts the selector.
    let fx = Fixture::new();
    let mut policy = policy(&fx, Path::new("/usr/bin/bwrap"));
    policy["bounded_writes"] = json!(true);
    let checked_policy = checked(&policy);
    let activation = activate(&checked_policy, Some(&manifest(&["rw"]))).expect("activate");
    assert!(lower(&checked_policy, &activation, Arch::X86_64, "test").is_err());
    // The aggregate ephemeral bound: /tmp (2 MiB) + scratch (1 MiB) fits 3 MiB,
    // one byte less does not.
    policy["aggregate_ephemeral_max_bytes"] = json!((3 << 20) - 1);
    assert!(activate(&checked(&policy), Some(&manifest(&["scratch"]))).is_err());
}

#[test]
fn pinned_plan_launches_through_descriptors() {
    // Descriptor mode, rendered with descriptors a shell opens: every mount
    // source, bwrap itself and the worker overlay come from descriptors, and
    // bwrap installs the seccomp program from its descriptor.
    let Some(bwrap) = bwrap() else { return };
    let bash = Path::new("/bin/bash");
    if !require_host(bash.exists(), "bash (for descriptors above 9)") {
        return;
    }
    let fx = Fixture::new();
    let mut policy = policy(&fx, &bwrap);
    policy["pin_mounts"] = json!(true);
    policy["pin_executables"] = json!(true);
    policy["seccomp"] = json!(SeccompPolicy::DenyKnownEscapeSurface);
    let plan = plan_for(&policy, &["ro", "scratch"]);
    let seccomp = plan.seccomp().expect("seccomp plan");
    let program = fx.base.join("filter.bpf");
    std::fs::write(&program, &seccomp.program).expect("write filter");

    const FIRST_PIN_FD: u16 = 10;
    let mut render = |slot| match slot {
        Slot::Pin(PinSlot(n)) => (FIRST_PIN_FD + n).to_string(),
        Slot::BwrapSeccomp => "9".to_string(),
        Slot::RunnerSeccomp => panic!("no runner in this plan"),
        Slot::LearnListener => panic!("not a learning plan"),
        Slot::Device(node) => splashpol::emit::device_destination(node),
    };
    let mut line = vec![plan.bwrap_program(&mut render)];
    line.extend(plan.bwrap_arguments(&mut render));
    assert!(
        line[0].starts_with("/proc/self/fd/"),
        "bwrap runs from its descriptor"
    );

    // One `exec N<path` per descriptor: bash drops all but the first of
    // several multi-digit redirections given to one `exec`.
    let mut script = format!("exec 9<{};", shell_quote(&program.to_string_lossy()));
    for (i, pin) in plan.pins().iter().enumerate() {
        script.push_str(&format!(
            " exec {}<{};",
            usize::from(FIRST_PIN_FD) + i,
            shell_quote(pin.host_path.as_str())
        ));
    }
    script.push_str(" exec");
    for arg in &line {
        script.push(' ');
        script.push_str(&shell_quote(arg));
    }
    let out = Command::new(bash)
        .arg("-c")
        .arg(&script)
        .output()
        .expect("spawn bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pinned launch failed: {:?}\nscript: {script}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut r: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in stdout.lines() {
        if let Some((k, v)) = l.split_once('=') {
            r.entry(k.to_string()).or_default().push(v.to_string());
        }
    }
    assert_eq!(one(&r, "hello"), "hello-from-host");
    assert_eq!(one(&r, "root:/workspace/ro"), "ro");
    assert_eq!(one(&r, "root:/workspace/scratch"), "rw");
    assert_eq!(one(&r, "root:/workspace/hidden"), "absent");
    assert_eq!(one(&r, "seccomp"), "2", "a seccomp filter is installed");
    assert!(
        r["mount"].iter().any(|m| m == "/opt/splash/bin/worker"),
        "worker overlay mounted"
    );
}

/// The runner binaries next to this test's directory (`cargo build --bins`).
fn runner_binaries() -> Option<(PathBuf, PathBuf)> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?;
    let landlock = dir.join("splash-landlock-runner");
    let limit = dir.join("splash-limit-runner");
    (landlock.is_file() && limit.is_file()).then_some((landlock, limit))
}

/// Shell builtins only: under Landlock the worker may not execute anything.
const CHAIN_WORKER: &str = r#"#!/bin/sh
while read -r line; do echo "limit=$line"; done < /proc/self/limits
if /usr/bin/true 2>/dev/null; then echo exec=allowed; else echo exec=denied; fi
echo "args=$*"
"#;

fn chain_policy(fx: &Fixture, bwrap: &Path, landlock: bool) -> Option<Value> {
    let (landlock_bin, limit_bin) = runner_binaries()?;
    for (src, name) in [
        (&landlock_bin, "splash-landlock-runner"),
        (&limit_bin, "splash-limit-runner"),
    ] {
        std::fs::copy(src, fx.base.join("rt/bin").join(name)).expect("copy runner");
    }
    std::fs::write(fx.base.join("rt/bin/worker"), CHAIN_WORKER).expect("write worker");
    let mut policy = policy(fx, bwrap);
    let limit = Some(splashpol::model::LimitRunner {
        path: p("/opt/splash/bin/splash-limit-runner"),
        limits: splashpol::model::ResourceLimits {
            cpu_seconds: Some(30),
            address_space_bytes: None,
            process_count: None,
            open_files: Some(64),
            file_size_bytes: Some(16 << 20),
        },
    });
    let landlock = if landlock {
        // The dynamically linked runner needs its resolved loader, the
        // script worker its interpreter.
        let loader = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").ok()?;
        let shell = std::fs::canonicalize("/bin/sh").ok()?;
        Some(splashpol::model::LandlockRunner {
            path: p("/opt/splash/bin/splash-landlock-runner"),
            allow_exec: vec![
                SandboxPath::new(loader.to_string_lossy().into_owned()).ok()?,
                SandboxPath::new(shell.to_string_lossy().into_owned()).ok()?,
            ],
        })
    } else {
        None
    };
    policy["runners"] = json!(splashpol::model::Runners::Separate { limit, landlock });
    Some(policy)
}

#[test]
fn runner_chain_applies_limits_and_the_executable_allowlist() {
    let Some(bwrap) = bwrap() else { return };
    let fx = Fixture::new();
    let have = runner_binaries().is_some() && Path::new("/lib64/ld-linux-x86-64.so.2").exists();
    if !require_host(
        have,
        "runner binaries (`cargo build --bins`) and an x86-64 glibc loader",
    ) {
        return;
    }
    let Some(policy) = chain_policy(&fx, &bwrap, true) else {
        panic!("chain policy");
    };
    let plan = plan_for(&policy, &["ro"]);
    let argv = plan.bwrap_arguments(&mut |_| "{fd}".to_string());
    let cmd = &argv[argv.iter().position(|a| a == "--").expect("--") + 1..];
    assert_eq!(cmd[0], "/opt/splash/bin/splash-landlock-runner");
    let r = launch(&plan);
    let limits = r.get("limit").expect("limits reported");
    let has = |name: &str, value: &str| {
        limits.iter().any(|l| {
            l.starts_with(name)
                && l[name.len()..]
                    .split_whitespace()
                    .take(2)
                    .all(|v| v == value)
        })
    };
    assert!(has("Max open files", "64"), "{limits:?}");
    assert!(has("Max cpu time", "30"), "{limits:?}");
    assert!(has("Max file size", "16777216"), "{limits:?}");
    assert!(has("Max core file size", "0"), "{limits:?}");
    assert_eq!(
        one(&r, "exec"),
        "denied",
        "Landlock forbids executing anything else"
    );
    assert_eq!(one(&r, "args"), "--json-lines two words");

    // Control: the same chain without the Landlock runner can execute.
    let fx = Fixture::new();
    let policy = chain_policy(&fx, &bwrap, false).expect("chain policy");
    let r = launch(&plan_for(&policy, &["ro"]));
    assert_eq!(one(&r, "exec"), "allowed");
    assert!(
        r["limit"]
            .iter()
            .any(|l| l.starts_with("Max open files") && l.contains(" 64 "))
    );
}
