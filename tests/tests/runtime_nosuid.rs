//! Read-write host roots when the host launches as root: the worker is host
//! uid 0 and owns what it creates there, mode bits included, so bind
//! requires the host mount holding every read-write root to be `nosuid`
//! (real bwrap, real mounts; as root, with an unprivileged control).

mod runtime_support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use runtime_support::{
    Binding, NosuidArea, ProbeSession, TempDir, TestPolicy, host_with_probe, probe_policy,
    running_as_root, serial,
};
use serde_json::json;
use splash_runtime::{
    BindError, BindOptions, BoundCommand, LaunchPreparation, LaunchSpec, SetIdError,
};

const SETPRIV: &str = "/usr/bin/setpriv";
const ID: &str = "/usr/bin/id";

/// bwrap, the probe, host root and `setpriv`, or a loud skip (a failure
/// under `SPLASH_REQUIRE_HOST=1`).
fn root_host() -> Option<(std::path::PathBuf, TempDir)> {
    let host = host_with_probe()?;
    let ready = running_as_root() && Path::new(SETPRIV).is_file() && Path::new(ID).is_file();
    splash_tests::require_host(ready, "host root with setpriv(1) and id(1)").then_some(host)
}

/// The per-mount options of the mount holding `path`.
fn mount_options(path: &Path) -> String {
    let out = Command::new("findmnt")
        .args(["-n", "-o", "OPTIONS", "-T"])
        .arg(path)
        .output()
        .expect("findmnt");
    assert!(out.status.success(), "findmnt {}", path.display());
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn nosuid(path: &Path) -> bool {
    mount_options(path).split(',').any(|o| o == "nosuid")
}

/// Runs `program -u` on the host as uid and gid 65534 with no groups and
/// returns what it printed: the effective uid it ran with.
fn euid_as_nobody(program: &Path) -> String {
    let out = Command::new(SETPRIV)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program)
        .arg("-u")
        .output()
        .expect("setpriv");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Runs `program` with `args`; true when it succeeded.
fn run(program: &str, args: &[&std::ffi::OsStr]) -> bool {
    Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
        .success()
}

fn policy(bwrap: &Path, probe_dir: &TempDir, root: &Path, binding: Binding) -> TestPolicy {
    let mut policy = probe_policy(bwrap, probe_dir);
    policy.binding = binding;
    policy.unbounded_host_writes = true;
    policy.host_root("output", root, "/workspace/output", true);
    policy
}

fn refused_root(err: &BindError) -> (&str, &Path) {
    match err {
        BindError::SetId(SetIdError::HonoursSetId { root, mount, .. }) => (root, mount),
        other => panic!("expected the nosuid refusal, got {other}"),
    }
}

#[test]
fn a_read_write_root_on_a_mount_that_honours_set_user_id_bits_is_refused_for_a_root_worker() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = root_host() else {
        return;
    };
    let root = TempDir::new("nosuid-refused");
    if nosuid(root.path()) {
        assert!(
            std::env::var_os("SPLASH_REQUIRE_HOST").is_none(),
            "the temp dir is already on a nosuid mount; nothing to refuse"
        );
        eprintln!("SKIP: the temp dir's mount is already nosuid");
        return;
    }
    // What is at stake: on this mount a set-user-ID-root copy of id(1)
    // made by root runs as root for uid 65534.
    let copy = root.path().join("id");
    std::fs::copy(ID, &copy).expect("copy id");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755)).expect("chmod");
    assert_eq!(euid_as_nobody(&copy), "0", "the bit is honoured here");
    std::fs::remove_file(&copy).expect("remove the copy");

    for binding in [Binding::PinnedMounts, Binding::Paths] {
        let plan = policy(&bwrap, &probe_dir, root.path(), binding).plan();
        let err = BoundCommand::bind(plan).expect_err("a root worker on a suid mount");
        let (name, mount) = refused_root(&err);
        assert_eq!(name, "output", "{binding:?}");
        assert_eq!(mount, Path::new("/"), "{binding:?}: {err}");
        let shown = err.to_string();
        for part in [
            &format!("read-write root `output` (`{}`)", root.path().display()),
            "is not mounted `nosuid`",
            "mount -o remount,nosuid /",
            "launch as an unprivileged user",
            "the launch is refused",
        ] {
            assert!(shown.contains(part), "{binding:?}: `{part}` in {shown}");
        }
    }

    // A nosuid root with a mount beneath it that honours the bits is
    // refused as well: the read-write bind is recursive.
    let area = NosuidArea::new("nosuid-nested");
    let inner = TempDir::new_in(area.path(), "inner");
    assert!(run(
        "mount",
        &[
            "--bind".as_ref(),
            root.path().as_os_str(),
            inner.path().as_os_str()
        ]
    ));
    let plan = policy(&bwrap, &probe_dir, area.path(), Binding::PinnedMounts).plan();
    let outcome = BoundCommand::bind(plan);
    assert!(run("umount", &[inner.path().as_os_str()]));
    let err = outcome.expect_err("a suid mount beneath the root");
    let (name, mount) = refused_root(&err);
    assert_eq!((name, mount), ("output", inner.path()));

    // A nosuid bind of a directory that its filesystem's suid-honouring
    // mount still shows elsewhere (here `/` at the directory's own path) is
    // refused too: the worker's file would be reachable there. (Control:
    // the nosuid bind of a directory over itself, which covers it, binds
    // in the test below.)
    let shown_at = TempDir::new("nosuid-elsewhere");
    assert!(run(
        "mount",
        &[
            "--bind".as_ref(),
            root.path().as_os_str(),
            shown_at.path().as_os_str()
        ]
    ));
    let remounted = run(
        "mount",
        &[
            "-o".as_ref(),
            "remount,bind,nosuid".as_ref(),
            shown_at.path().as_os_str(),
        ],
    );
    let plan = policy(&bwrap, &probe_dir, shown_at.path(), Binding::PinnedMounts).plan();
    let outcome = BoundCommand::bind(plan);
    assert!(run("umount", &[shown_at.path().as_os_str()]) && remounted);
    let err = outcome.expect_err("the directory is also shown at its own path");
    match &err {
        BindError::SetId(SetIdError::AlsoMounted {
            root: name,
            mount,
            appears,
            ..
        }) => {
            assert_eq!(name, "output");
            assert_eq!(mount, Path::new("/"));
            assert_eq!(appears, root.path());
        }
        other => panic!("expected the other-mount refusal, got {other}"),
    }
    assert!(
        err.to_string().contains("launch as an unprivileged user"),
        "{err}"
    );
}

#[test]
fn a_read_write_root_on_a_nosuid_mount_binds_and_its_set_user_id_bits_are_inert() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = root_host() else {
        return;
    };
    let area = NosuidArea::new("nosuid-granted");
    assert!(nosuid(area.path()), "{}", mount_options(area.path()));
    let bound =
        BoundCommand::bind(policy(&bwrap, &probe_dir, area.path(), Binding::PinnedMounts).plan())
            .expect("a nosuid root binds for a root worker");
    let mut probe = ProbeSession::start(&bound, None).expect("start");
    // The worker (host uid 0) writes there and sets the bit, which works.
    let made = probe
        .call(
            "probe.exec",
            json!({"argv": ["/bin/sh", "-c",
                "cp /usr/bin/id /workspace/output/id && chmod 4755 /workspace/output/id"]}),
        )
        .expect("exec");
    assert_eq!(made["exit_code"], json!(0), "{made:#}");
    probe.close();

    let copy = area.path().join("id");
    let meta = std::fs::metadata(&copy).expect("the worker's file");
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (0, 0o4755));
    // On the host the bit is inert: run as 65534 it stays 65534.
    assert_eq!(euid_as_nobody(&copy), "65534");
}

/// Declares that the launch runs as another host user (the wrapper itself
/// is not exercised: nothing is launched).
#[derive(Debug)]
struct RunsAs(u32);

impl LaunchPreparation for RunsAs {
    fn name(&self) -> &str {
        "runs-as"
    }
    fn prepare(&mut self, _: &BoundCommand) -> std::io::Result<()> {
        Ok(())
    }
    fn wrap(&self, _: &mut LaunchSpec) -> std::io::Result<()> {
        Ok(())
    }
    fn launch_uid(&self) -> Option<u32> {
        Some(self.0)
    }
}

#[test]
fn an_unprivileged_worker_binds_a_read_write_root_on_any_mount() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = root_host() else {
        return;
    };
    let root = TempDir::new("nosuid-unprivileged");
    // A set-user-ID file of uid 65534 gives nobody anything it lacks, so
    // the rule does not apply.
    for binding in [Binding::PinnedMounts, Binding::Paths] {
        let plan = policy(&bwrap, &probe_dir, root.path(), binding).plan();
        BoundCommand::bind_with(plan, BindOptions::default().with_preparation(RunsAs(65534)))
            .expect("an unprivileged worker binds");
    }
}
