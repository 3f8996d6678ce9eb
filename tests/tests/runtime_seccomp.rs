//! The seccomp program delivered through an anonymous descriptor to bwrap
//! `--seccomp`: the worker is filtered and keeps no seccomp descriptor.

mod runtime_support;

use runtime_support::{Binding, ProbeSession, host_with_probe, probe_plan, serial};
use serde_json::{Value, json};
use splash_runtime::BoundCommand;
use splash_seccomp::{Arch, Profile};
use splashpol::plan::{SeccompDelivery, SeccompPlan};

fn deny_known_escape_surface() -> SeccompPlan {
    let arch = Arch::host().expect("supported arch");
    let program =
        splash_seccomp::compile(&Profile::DenyKnownEscapeSurface, arch).expect("compile filter");
    SeccompPlan {
        delivery: SeccompDelivery::Bubblewrap,
        arch,
        profile: "deny-known-escape-surface".into(),
        program: program.to_bytes(),
    }
}

fn unshare(probe: &mut ProbeSession) -> Value {
    probe
        .call("probe.try", json!({"op": "unshare-user"}))
        .expect("probe.try")
}

#[test]
fn deny_known_escape_surface_gives_eperm_for_unshare_and_leaves_no_descriptor() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    for filtered in [true, false] {
        let mut b = probe_plan(&bwrap, &probe_dir);
        b.binding = Binding::PinnedMountsAndExecutables;
        if filtered {
            b.seccomp = Some(deny_known_escape_surface());
        }
        let bound = BoundCommand::bind(b.build()).expect("bind");
        let mut probe = ProbeSession::start(&bound, None).expect("start");
        let report = probe.report();
        let attempt = unshare(&mut probe);
        let errno = attempt["error"]["name"].as_str();
        if filtered {
            assert_eq!(report["seccomp"], json!(2), "filter mode");
            assert_eq!(errno, Some("EPERM"), "{attempt:#}");
        } else {
            // Control: the same attempt is not stopped by EPERM.
            assert_eq!(report["seccomp"], json!(0));
            assert_ne!(errno, Some("EPERM"), "{attempt:#}");
        }
        // No descriptor beyond the standard streams (and the worker
        // library's own duplicates of them): bwrap consumed the filter.
        let fds = report["fds"].as_array().expect("fds");
        for f in fds {
            let target = f["target"].as_str().unwrap_or_default();
            assert!(
                target.starts_with("pipe:") || target == "/dev/null",
                "unexpected descriptor {f} (filtered={filtered})"
            );
        }
        probe.close();
    }
}
