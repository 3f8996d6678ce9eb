//! Descriptor pinning with the real bwrap: what was retained at bind is what
//! the worker gets, whatever happens to the paths afterwards. Each test has
//! a control showing that without pinning the replacement is seen.

mod runtime_support;

use runtime_support::{
    Binding, ProbeSession, TempDir, TestPolicy, edited, host_with_probe, live_children,
    probe_policy, serial,
};
use serde_json::json;
use splash_runtime::{BoundCommand, WorkerStatus};
use splashpol::plan::BwrapOp;

/// Replaces directory `dir` by a fresh one holding `marker` = `content`.
fn replace_dir(dir: &std::path::Path, content: &str) {
    let old = dir.with_extension("old");
    std::fs::rename(dir, &old).expect("move the original away");
    std::fs::create_dir(dir).expect("create the replacement");
    std::fs::write(dir.join("marker"), content).expect("replacement marker");
}

fn marker_seen(probe: &mut ProbeSession) -> String {
    let out = probe
        .call(
            "probe.exec",
            json!({"argv": ["/usr/bin/cat", "/workspace/root/marker"]}),
        )
        .expect("exec cat");
    out["stdout"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| out.to_string())
}

#[test]
fn a_pinned_source_directory_replaced_after_bind_is_not_seen() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    for (binding, expected) in [
        (Binding::PinnedMounts, "original"),
        (Binding::Paths, "replacement"),
    ] {
        let parent = TempDir::new("pin-src");
        let root = parent.path().join("root");
        std::fs::create_dir(&root).expect("root");
        std::fs::write(root.join("marker"), "original").expect("marker");
        let mut policy = probe_policy(&bwrap, &probe_dir);
        policy.binding = binding;
        policy.host_root("root", &root, "/workspace/root", false);
        let bound = BoundCommand::bind(policy.plan()).expect("bind");
        replace_dir(&root, "replacement");
        let mut probe = ProbeSession::start(&bound, None).expect("start");
        assert_eq!(marker_seen(&mut probe), expected, "{binding:?}");
        assert_eq!(probe.close(), WorkerStatus::Exited(0));
    }
}

fn replace_file_with_script(path: &std::path::Path, unlink_original: bool) {
    if unlink_original {
        std::fs::remove_file(path).expect("remove worker");
    } else {
        std::fs::rename(path, path.with_extension("old")).expect("move worker away");
    }
    std::fs::write(path, "#!/bin/sh\nexit 42\n").expect("replacement");
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
}

#[test]
fn a_pinned_worker_executable_replaced_after_bind_still_runs() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    for (binding, unlink) in [
        (Binding::PinnedMountsAndExecutables, false),
        (Binding::PinnedMountsAndExecutables, true),
        (Binding::PinnedMounts, false),
    ] {
        let dir = TempDir::new("pin-exe");
        std::fs::copy(
            probe_dir.path().join("splash-probe"),
            dir.path().join("splash-probe"),
        )
        .expect("copy");
        let mut policy = TestPolicy::new(&bwrap, dir.path(), "splash-probe");
        policy.binding = binding;
        let bound = BoundCommand::bind(policy.plan()).expect("bind");
        // Put a different executable at the worker path.
        replace_file_with_script(&dir.path().join("splash-probe"), unlink);
        let started = ProbeSession::start(&bound, None);
        if let (Binding::PinnedMountsAndExecutables, false) = (binding, unlink) {
            let mut probe = started.expect("spawn");
            assert!(probe.report()["pid"].is_u64());
            assert_eq!(probe.close(), WorkerStatus::Exited(0));
            continue;
        }
        // A launch that fails early shows either while the preamble is
        // written or when the first reply is awaited; both carry
        // Bubblewrap's status.
        let outcome = started.and_then(|mut probe| probe.call("probe.report", json!({})));
        match (binding, unlink) {
            (Binding::PinnedMountsAndExecutables, true) => {
                // Bubblewrap 0.8 resolves `--ro-bind-fd` through
                // `/proc/self/fd/N`, which fails for an unlinked file: the
                // launch fails closed (bwrap exits 1), the replacement (42)
                // never runs.
                let err = outcome.expect_err("unlinked pin");
                assert!(
                    err.contains("exit status 1 ") || err.ends_with("exit status 1"),
                    "{err}"
                );
            }
            _ => {
                // Control: only the directory is pinned, so the replaced
                // file inside it is what runs.
                let err = outcome.expect_err("replacement ran");
                assert!(err.contains("exit status 42"), "{err}");
            }
        }
    }
    assert!(live_children().is_empty());
}

#[test]
fn the_pinned_bubblewrap_is_the_one_that_runs() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    for binding in [Binding::PinnedMountsAndExecutables, Binding::PinnedMounts] {
        let dir = TempDir::new("pin-bwrap");
        let copy = dir.path().join("bwrap");
        std::fs::copy(&bwrap, &copy).expect("copy bwrap");
        let mut policy = probe_policy(&copy, &probe_dir);
        policy.binding = binding;
        let bound = BoundCommand::bind(policy.plan()).expect("bind");
        // Replace the bwrap path with a different executable that leaves a
        // mark and fails.
        let mark = dir.path().join("impostor-ran");
        std::fs::remove_file(&copy).expect("remove bwrap copy");
        std::fs::write(
            &copy,
            format!("#!/bin/sh\ntouch {}\nexit 3\n", mark.display()),
        )
        .expect("impostor");
        std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let started = ProbeSession::start(&bound, None);
        match binding {
            Binding::PinnedMountsAndExecutables => {
                let mut probe = started.expect("start");
                assert!(probe.report()["pid"].is_u64());
                assert_eq!(probe.close(), WorkerStatus::Exited(0));
                assert!(!mark.exists(), "the replacement bwrap ran");
            }
            _ => {
                // Control: launched by path, the replacement runs.
                if let Ok(mut probe) = started {
                    let err = probe
                        .call("probe.report", json!({}))
                        .expect_err("impostor ran");
                    assert!(err.contains("exit status 3"), "{err}");
                }
                assert!(mark.exists(), "control: the replacement did not run");
            }
        }
    }
}

#[test]
fn bind_fails_closed_on_bad_sources() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let dir = TempDir::new("bad-src");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").expect("file");
    let link_to_root = dir.path().join("to-root");
    std::os::unix::fs::symlink("/", &link_to_root).expect("symlink");
    let worker_link_dir = TempDir::new("worker-link");
    std::os::unix::fs::symlink(
        probe_dir.path().join("splash-probe"),
        worker_link_dir.path().join("splash-probe"),
    )
    .expect("worker symlink");

    let cases = [
        (
            "missing",
            std::path::PathBuf::from("/nonexistent/splash/source"),
            "failed to resolve source `/nonexistent/splash/source`",
        ),
        (
            "wrong type",
            file.clone(),
            "is a regular file; expected a directory",
        ),
        ("resolves to root", link_to_root, "resolves to `/`"),
    ];
    for binding in [Binding::Paths, Binding::PinnedMounts] {
        for (name, source, message) in &cases {
            let mut policy = probe_policy(&bwrap, &probe_dir);
            policy.binding = binding;
            policy.host_root("root", source, "/w", false);
            let err = BoundCommand::bind(policy.plan())
                .expect_err(name)
                .to_string();
            assert!(err.contains(message), "{binding:?} {name}: {err}");
        }
    }
    // A symlinked worker is refused.
    let mut policy = TestPolicy::new(&bwrap, worker_link_dir.path(), "splash-probe");
    policy.binding = Binding::PinnedMountsAndExecutables;
    let err = BoundCommand::bind(policy.plan())
        .expect_err("symlinked worker")
        .to_string();
    assert!(err.contains("is a symbolic link"), "{err}");
    // A worker outside every read-only runtime mount is refused. The checker
    // never lets a policy place its worker in a writable mount, so the
    // lowered plan's read-only mount of the worker directory is turned into
    // a writable bind.
    let mut turned = 0;
    let plan = edited(
        probe_policy(&bwrap, &probe_dir).plan(),
        "ops",
        |ops: &mut Vec<BwrapOp>| {
            for op in ops.iter_mut() {
                if let BwrapOp::RoBind {
                    source,
                    destination,
                } = op
                    && destination.as_str() == runtime_support::WORKER_DIR
                {
                    *op = BwrapOp::Bind {
                        source: source.clone(),
                        destination: destination.clone(),
                    };
                    turned += 1;
                }
            }
        },
    );
    assert_eq!(turned, 1, "{:?}", plan.ops());
    let err = BoundCommand::bind(plan)
        .expect_err("worker in a writable root")
        .to_string();
    assert!(
        err.contains("not reached through a read-only runtime mount"),
        "{err}"
    );
    // A non-executable bwrap is refused.
    let mut policy = probe_policy(&file, &probe_dir);
    policy.binding = Binding::Paths;
    let err = BoundCommand::bind(policy.plan())
        .expect_err("bwrap not executable")
        .to_string();
    assert!(err.contains("expected an executable regular file"), "{err}");
}
