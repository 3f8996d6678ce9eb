//! What a worker sees inside a real Bubblewrap sandbox launched by the
//! runtime: no capabilities, no host environment, cwd `/`, loopback only,
//! no unselected roots, no session key anywhere but the private pipe, and
//! no descriptor beyond its standard streams.

mod runtime_support;

use std::io::Read;

use runtime_support::{Binding, ProbeSession, TempDir, host_with_probe, probe_policy, serial};
use serde_json::{Value, json};
use splash_runtime::BoundCommand;

fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .expect("read /dev/urandom");
    key
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn hardened_worker_sees_only_what_the_plan_grants() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let selected = TempDir::new("selected");
    std::fs::write(selected.path().join("marker"), b"selected").expect("marker");
    let unselected = TempDir::new("unselected");
    std::fs::write(unselected.path().join("marker"), b"unselected").expect("marker");

    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.binding = Binding::PinnedMountsAndExecutables;
    policy.no_user_namespaces = true;
    policy.host_root("selected", selected.path(), "/workspace/selected", false);
    let bound = BoundCommand::bind(policy.plan()).expect("bind");
    let key = random_key();
    let mut probe = ProbeSession::start(&bound, Some(key)).expect("start");
    let report = probe.report();

    // Capabilities: every set empty.
    for set in [
        "inheritable",
        "permitted",
        "effective",
        "bounding",
        "ambient",
    ] {
        assert_eq!(
            report["capabilities"][set],
            json!("0000000000000000"),
            "{set}: {report:#}"
        );
    }
    // No host environment (Bubblewrap itself sets `PWD` after `--chdir /`),
    // cwd `/`.
    assert_eq!(report["environment"], json!({"PWD": "/"}), "environment");
    assert_eq!(report["cwd"], json!("/"));
    // Only loopback.
    assert_eq!(
        report["network_interfaces"]["proc_net_dev"],
        json!(["lo"]),
        "{:#}",
        report["network_interfaces"]
    );
    // Only the standard streams: any further descriptor is the worker
    // library's own duplicate of its stdin or stdout pipe, never a pin, the
    // seccomp program or a host file.
    let fds = report["fds"].as_array().expect("fd list");
    let target = |n: u64| {
        fds.iter()
            .find(|f| f["fd"] == json!(n))
            .map(|f| f["target"].clone())
    };
    let standard: Vec<Value> = (0..3).filter_map(target).collect();
    assert_eq!(standard.len(), 3, "{:#}", report["fds"]);
    assert_eq!(standard[2], json!("/dev/null"));
    for f in fds {
        assert!(standard.contains(&f["target"]), "unexpected descriptor {f}");
    }

    // The selected root is there, the unselected one nowhere.
    let seen = probe
        .call("probe.path", json!({"path": "/workspace/selected/marker"}))
        .expect("path");
    assert_eq!(seen["exists"], json!(true), "{seen:#}");
    let unseen = probe
        .call(
            "probe.path",
            json!({"path": unselected.path().join("marker").to_str()}),
        )
        .expect("path");
    assert_eq!(unseen["exists"], json!(false), "{unseen:#}");
    let mounts = report["mounts"].to_string();
    assert!(
        !mounts.contains(unselected.path().to_str().expect("utf-8")),
        "{mounts}"
    );

    // The key is in no argv, environment or mount of bwrap or the worker.
    let key_hex = hex(&key);
    let bwrap_pid = probe.worker.pid();
    let cmdline = std::fs::read(format!("/proc/{bwrap_pid}/cmdline")).expect("bwrap cmdline");
    let environ = std::fs::read(format!("/proc/{bwrap_pid}/environ")).expect("bwrap environ");
    assert!(environ.is_empty(), "bwrap environment is not empty");
    for (what, bytes) in [
        ("bwrap argv", cmdline.clone()),
        ("worker argv", report["argv"].to_string().into_bytes()),
        (
            "worker environment",
            report["environment"].to_string().into_bytes(),
        ),
        ("worker mounts", mounts.clone().into_bytes()),
    ] {
        assert!(!contains_bytes(&bytes, &key), "raw key in {what}");
        assert!(
            !contains_bytes(&bytes, key_hex.as_bytes()),
            "hex key in {what}"
        );
    }
    // Every process of the sandbox (bwrap's children): argv and environment.
    let children = std::fs::read_to_string(format!("/proc/{bwrap_pid}/task/{bwrap_pid}/children"))
        .unwrap_or_default();
    for child in children.split_whitespace() {
        for file in ["cmdline", "environ"] {
            if let Ok(bytes) = std::fs::read(format!("/proc/{child}/{file}")) {
                assert!(!contains_bytes(&bytes, &key), "raw key in {child}/{file}");
                assert!(
                    !contains_bytes(&bytes, key_hex.as_bytes()),
                    "hex key in {child}/{file}"
                );
            }
        }
    }
    let status = probe.close();
    assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));
}

#[test]
fn control_the_same_probe_outside_the_sandbox_sees_the_host() {
    // The assertions above would pass trivially if the probe could not see
    // capabilities, interfaces, environment or descriptors at all: run the
    // same probe and report outside any sandbox and see the host's values.
    let _serial = serial();
    let Some((_bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let manifest = runtime_support::probe_manifest("s-1");
    let key = splash_protocol::SessionKey::from_bytes(random_key()).expect("key");
    let boot =
        splash_protocol::PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
    let mut child = std::process::Command::new(probe_dir.path().join("splash-probe"))
        .env("SPLASH_CONTROL", "1")
        .current_dir(probe_dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn probe");
    let mut stdin = child.stdin.take().expect("stdin");
    boot.write_to(&mut stdin).expect("bootstrap");
    let stdout = child.stdout.take().expect("stdout");
    let mut session =
        splash_protocol::HostSession::open(manifest, key, stdin, stdout).expect("open");
    let report = session.invoke("probe.report", json!({})).expect("report");
    session.close().expect("close");
    assert!(child.wait().expect("wait").success());

    assert_ne!(
        report["capabilities"]["effective"],
        json!("0000000000000000")
    );
    assert_eq!(report["environment"]["SPLASH_CONTROL"], json!("1"));
    assert_ne!(report["cwd"], json!("/"));
    let host_interfaces = std::fs::read_to_string("/proc/net/dev").expect("host /proc/net/dev");
    if host_interfaces.lines().count() > 3 {
        assert_ne!(report["network_interfaces"]["proc_net_dev"], json!(["lo"]));
    }
}

#[test]
fn a_root_the_manifest_does_not_select_is_not_mounted() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let selected = TempDir::new("sel");
    let unselected = TempDir::new("unsel");
    std::fs::write(selected.path().join("marker"), b"1").expect("marker");
    std::fs::write(unselected.path().join("marker"), b"2").expect("marker");
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.binding = Binding::PinnedMounts;
    policy.host_root("selected", selected.path(), "/workspace/selected", false);
    policy.host_root(
        "unselected",
        unselected.path(),
        "/workspace/unselected",
        false,
    );
    let text = policy.render();
    for select_both in [false, true] {
        let ids: &[&str] = if select_both {
            &["selected", "unselected"]
        } else {
            &["selected"]
        };
        let manifest = runtime_support::manifest_selecting(ids);
        let bound = BoundCommand::bind(runtime_support::lowered(&text, &manifest)).expect("bind");
        let mut probe = ProbeSession::start(&bound, None).expect("start");
        let seen = probe
            .call("probe.path", json!({"path": "/workspace/selected/marker"}))
            .expect("path");
        assert_eq!(seen["exists"], json!(true), "{seen:#}");
        // Control: selected, the same root is there.
        let other = probe
            .call(
                "probe.path",
                json!({"path": "/workspace/unselected/marker"}),
            )
            .expect("path");
        assert_eq!(other["exists"], json!(select_both), "{other:#}");
        let host_path = unselected.path().join("marker").display().to_string();
        let by_host_path = probe
            .call("probe.path", json!({"path": host_path}))
            .expect("path");
        assert_eq!(by_host_path["exists"], json!(false), "{by_host_path:#}");
        probe.close();
    }
}
