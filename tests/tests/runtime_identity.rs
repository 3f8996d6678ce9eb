//! Worker identities (`identity`) with the real bwrap and the probe: from
//! the host, the real, effective and saved ids of Bubblewrap and of the
//! worker are the identity's; files the worker writes on a read-write root
//! are the identity's; the launch uses the host's device nodes (no private
//! directory); a read-write root the identity cannot write is a bind error;
//! a dynamic identity is leased from the range and given back when the
//! worker is reaped, two live sessions get different ids, and a lease a
//! SIGKILLed host left behind is taken again. Each has a control: the same
//! launch without `identity` runs as host root.

mod runtime_support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use runtime_support::{
    Binding, NosuidArea, ProbeSession, TempDir, host_with_probe, probe_policy, running_as_root,
    serial,
};
use serde_json::json;
use splash_runtime::identity::{IdentityLease, leased, process_gids, process_uids};
use splash_runtime::{
    BindError, BindOptions, BoundCommand, DynamicIdentities, IdentityError, IdentityRange,
    IdentitySwitch,
};

const UID: u32 = 64000;
const GID: u32 = 64001;

/// bwrap, the probe and a root host, or a loud skip.
fn root_host() -> Option<(std::path::PathBuf, TempDir)> {
    let host = host_with_probe()?;
    if !splash_tests::require_host(running_as_root(), "host root (only root switches identity)") {
        return None;
    }
    Some(host)
}

/// The ids of `/proc/PID`: real, effective, saved (and filesystem).
fn ids(pid: u32) -> ([u32; 4], [u32; 4]) {
    let dir = Path::new("/proc").join(pid.to_string());
    (
        process_uids(&dir).expect("uids"),
        process_gids(&dir).expect("gids"),
    )
}

/// The supplementary groups of `/proc/PID`.
fn groups(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn dynamic_options(dir: &Path, first: u32, count: u32) -> BindOptions {
    BindOptions::default().with_dynamic_identities(DynamicIdentities::new(
        IdentityRange::new(first, count).expect("range"),
        dir.join("leases"),
    ))
}

#[test]
fn a_root_launch_runs_bubblewrap_and_the_worker_as_the_identity() {
    let _serial = serial();
    let Some((bwrap, probe)) = root_host() else {
        return;
    };
    let area = NosuidArea::new("identity-out");
    let out = area.path().join("out");
    std::fs::create_dir(&out).expect("out");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::chown(&out, Some(UID), Some(GID)).expect("chown");

    let mut policy = probe_policy(&bwrap, &probe);
    policy.binding = Binding::PinnedMountsAndExecutables;
    policy.host_root("out", &out, "/out", true);
    policy.unbounded_host_writes = true;
    let control = policy.clone();
    policy
        .extra
        .push(format!("identity user {UID} group {GID}"));

    let parent = runtime_support::DeviceParent::new("identity");
    let bound = BoundCommand::bind_with(
        policy.plan(),
        BindOptions::default().with_device_directory(parent.path()),
    )
    .expect("bind");
    assert_eq!(
        *bound.identity(),
        IdentitySwitch::Fixed { uid: UID, gid: GID }
    );
    assert!(
        !bound.private_device_nodes(),
        "the identity owns none of the host's nodes"
    );
    let mut s = ProbeSession::start(&bound, None).expect("start");
    let worker = s.worker.sandbox_pid().expect("sandbox pid");
    let bubblewrap = s.worker.pid();
    for pid in [bubblewrap, worker] {
        let (u, g) = ids(pid);
        assert_eq!(u, [UID; 4], "uids of {pid}");
        assert_eq!(g, [GID; 4], "gids of {pid}");
        assert_eq!(groups(pid), "", "supplementary groups of {pid}");
    }
    assert!(
        parent.directories().is_empty(),
        "no private device directory for a launch under an identity"
    );
    let wrote = s
        .call("probe.write", json!({"path": "/out/file", "bytes": 16}))
        .expect("write");
    assert_eq!(wrote["ok"], true, "{wrote}");
    let meta = std::fs::metadata(out.join("file")).expect("written file");
    assert_eq!((meta.uid(), meta.gid()), (UID, GID));
    s.close();

    // Control: without `identity` the same launch is host root (which
    // without capabilities writes only where root may: the root is root's
    // again) and what it writes is root's.
    std::os::unix::fs::chown(&out, Some(0), Some(0)).expect("chown back");
    let bound = BoundCommand::bind(control.plan()).expect("bind control");
    assert_eq!(*bound.identity(), IdentitySwitch::Unchanged);
    let mut s = ProbeSession::start(&bound, None).expect("start control");
    let worker = s.worker.sandbox_pid().expect("sandbox pid");
    assert_eq!(ids(worker).0, [0; 4]);
    let wrote = s
        .call("probe.write", json!({"path": "/out/control", "bytes": 16}))
        .expect("write");
    assert_eq!(wrote["ok"], true, "{wrote}");
    assert_eq!(
        std::fs::metadata(out.join("control")).expect("file").uid(),
        0
    );
    s.close();
}

#[test]
fn a_read_write_root_the_identity_cannot_write_is_a_bind_error_naming_it() {
    let _serial = serial();
    let Some((bwrap, probe)) = root_host() else {
        return;
    };
    let area = NosuidArea::new("identity-ro");
    let out = area.path().join("out");
    std::fs::create_dir(&out).expect("out");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut policy = probe_policy(&bwrap, &probe);
    policy.binding = Binding::PinnedMounts;
    policy.host_root("out", &out, "/out", true);
    policy.unbounded_host_writes = true;
    policy
        .extra
        .push(format!("identity user {UID} group {GID}"));
    let err = BoundCommand::bind(policy.plan()).expect_err("root-owned 0755 root");
    assert!(
        matches!(
            &err,
            BindError::Identity(IdentityError::RootNotWritable { root, uid: UID, .. }) if root == "out"
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("`out`") && text.contains(&out.display().to_string()),
        "{text}"
    );
    // Control: writable by the identity's group, it binds.
    std::os::unix::fs::chown(&out, None, Some(GID)).expect("chgrp");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o775)).expect("chmod");
    BoundCommand::bind(policy.plan()).expect("group-writable root");
}

#[test]
fn a_dynamic_identity_is_leased_from_the_range_and_given_back_at_reap() {
    let _serial = serial();
    let Some((bwrap, probe)) = root_host() else {
        return;
    };
    let leases = TempDir::new("leases");
    let first = 0x7FFD_0000;
    let mut policy = probe_policy(&bwrap, &probe);
    policy.extra.push("identity dynamic".into());
    let options = || dynamic_options(leases.path(), first, 4);
    let bound = BoundCommand::bind_with(policy.plan(), options()).expect("bind");
    let a = ProbeSession::start(&bound, None).expect("first session");
    let b = ProbeSession::start(&bound, None).expect("second session");
    let ua = a.worker.leased_uid().expect("leased");
    let ub = b.worker.leased_uid().expect("leased");
    assert_ne!(ua, ub, "two live sessions never share an id");
    for (s, uid) in [(&a, ua), (&b, ub)] {
        assert!((first..first + 4).contains(&uid), "{uid} from the range");
        let worker = s.worker.sandbox_pid().expect("pid");
        assert_eq!(ids(worker), ([uid; 4], [uid; 4]));
        assert!(leased(&leases.path().join("leases"), uid).expect("lock state"));
    }
    a.close();
    b.close();
    for uid in [ua, ub] {
        assert!(
            !leased(&leases.path().join("leases"), uid).expect("lock state"),
            "uid {uid} is given back when its worker is reaped"
        );
    }
    // A range with every id taken refuses the launch before it starts.
    let held: Vec<IdentityLease> = (0..4)
        .map(|_| {
            IdentityLease::take(&DynamicIdentities::new(
                IdentityRange::new(first, 4).expect("range"),
                leases.path().join("leases"),
            ))
            .expect("lease")
        })
        .collect();
    let Err(err) = ProbeSession::start(&bound, None) else {
        panic!("a launch with every id of the range taken started");
    };
    assert!(err.contains("leased"), "{err}");
    drop(held);
    ProbeSession::start(&bound, None)
        .expect("a free id again")
        .close();
}

#[test]
fn a_lease_left_by_a_sigkilled_host_is_taken_again() {
    let _serial = serial();
    let Some((bwrap, probe)) = root_host() else {
        return;
    };
    let splashc = runtime_support::bin_dir().join("splashc");
    if !splash_tests::require_host(splashc.is_file(), "the splashc binary") {
        return;
    }
    // `splashc run` leases from the default range and directory.
    let mut policy = probe_policy(&bwrap, &probe);
    policy.extra.push("identity dynamic".into());
    let dir = TempDir::new("killed-host");
    let file = dir.path().join("dynamic.splashpol");
    std::fs::write(&file, policy.render()).expect("policy");
    let mut host = std::process::Command::new(&splashc)
        .arg("run")
        .arg(&file)
        .args(["--invoke", "probe.sleep", "--input", r#"{"ms":60000}"#])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("splashc run");
    let leases = Path::new(splash_runtime::identity::DEFAULT_LEASE_DIRECTORY);
    let pid = host.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let uid = loop {
        let held = std::fs::read_dir(leases).ok().and_then(|d| {
            d.flatten().find_map(|e| {
                let holder = std::fs::read_to_string(e.path()).ok()?;
                (holder.trim() == pid)
                    .then(|| e.file_name().to_string_lossy().parse::<u32>().ok())
                    .flatten()
            })
        });
        if let Some(uid) = held
            && leased(leases, uid).unwrap_or(false)
        {
            break uid;
        }
        assert!(Instant::now() < deadline, "splashc never leased an id");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(IdentityRange::DEFAULT.contains(uid));
    // Killed once its worker runs (killed while Bubblewrap still sets the
    // sandbox up, an unprivileged Bubblewrap's inner process can be left
    // waiting for its dead parent; it keeps the uid, which is then skipped).
    let probe_copy = probe.path().join("splash-probe");
    while runtime_support::processes_running(&probe_copy).is_empty() {
        assert!(Instant::now() < deadline, "the worker never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    host.kill().expect("SIGKILL the host");
    host.wait().expect("reap the host");
    // The worker dies with its host (parent-death signal, `--die-with-parent`).
    let deadline = Instant::now() + Duration::from_secs(30);
    while process_with_uid(uid) {
        assert!(
            Instant::now() < deadline,
            "the killed host's worker lingers"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !leased(leases, uid).expect("lock state"),
        "the dead host's lock is gone"
    );
    let again = IdentityLease::take(&DynamicIdentities::new(
        IdentityRange::new(uid, 1).expect("range"),
        leases,
    ))
    .expect("the dead host's id is taken again");
    assert_eq!(again.uid(), uid);
}

fn process_with_uid(uid: u32) -> bool {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .any(|e| process_uids(&e.path()).is_some_and(|ids| ids.contains(&uid)))
}

/// A preparation that would run the launch as another uid.
#[derive(Debug)]
struct LaunchesAs(u32);

impl splash_runtime::LaunchPreparation for LaunchesAs {
    fn name(&self) -> &str {
        "launches-as"
    }
    fn prepare(&mut self, _: &BoundCommand) -> std::io::Result<()> {
        Ok(())
    }
    fn launch_uid(&self) -> Option<u32> {
        Some(self.0)
    }
    fn wrap(&self, _: &mut splash_runtime::LaunchSpec) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_identity_and_a_preparation_launching_as_another_uid_are_a_bind_error() {
    let _serial = serial();
    let Some((bwrap, probe)) = root_host() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe);
    policy
        .extra
        .push(format!("identity user {UID} group {GID}"));
    let options = BindOptions::default().with_preparation(LaunchesAs(65534));
    let err = BoundCommand::bind_with(policy.plan(), options).expect_err("two uids");
    assert!(
        matches!(
            &err,
            BindError::Identity(IdentityError::PreparationUid {
                wrapper_uid: 65534,
                ..
            })
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("launches-as") && text.contains("65534"),
        "{text}"
    );
    // Control: without the identity the same preparation binds.
    let mut plain = probe_policy(&bwrap, &probe);
    plain.binding = policy.binding;
    BoundCommand::bind_with(
        plain.plan(),
        BindOptions::default().with_preparation(LaunchesAs(65534)),
    )
    .expect("no identity: the preparation alone binds");
}
