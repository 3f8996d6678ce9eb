//! Storage bounds with the real bwrap: bounded tmpfs roots and `/tmp` stop
//! at their size with ENOSPC, bounded-writes mode makes everything outside
//! the writable roots EROFS. Each with a control.

mod runtime_support;

use runtime_support::{
    Binding, ProbeSession, edited, errno_name, host_with_probe, probe_policy, serial,
};
use serde_json::{Value, json};
use splash_runtime::BoundCommand;
use splashpol::plan::BwrapOp;

const MIB: u64 = 1024 * 1024;

fn write(probe: &mut ProbeSession, path: &str, bytes: u64) -> Value {
    probe
        .call(
            "probe.write",
            json!({"path": path, "bytes": bytes, "remove": true}),
        )
        .expect("probe.write")
}

#[test]
fn bounded_tmpfs_roots_and_tmp_return_enospc_at_their_size() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.binding = Binding::PinnedMounts;
    policy.tmpfs_root("scratch", "/workspace/scratch", "4 MiB");
    policy.tmp = Some("private size 2 MiB".into());
    policy.tmpfs_root("unbounded", "/workspace/unbounded", "1 MiB");
    // A policy cannot register an unbounded tmpfs root: the control root's
    // bound is lifted in the lowered plan, so only the bound differs.
    let mut lifted = 0;
    let plan = edited(policy.plan(), "ops", |ops: &mut Vec<BwrapOp>| {
        for op in ops.iter_mut() {
            if let BwrapOp::Tmpfs {
                destination,
                size_bytes,
            } = op
                && destination.as_str() == "/workspace/unbounded"
            {
                *size_bytes = None;
                lifted += 1;
            }
        }
    });
    assert_eq!(lifted, 1, "{:?}", plan.ops());
    let bound = BoundCommand::bind(plan).expect("bind");
    let mut probe = ProbeSession::start(&bound, None).expect("start");
    for (dir, size) in [("/workspace/scratch", 4 * MIB), ("/tmp", 2 * MIB)] {
        // Control: below the bound the same write succeeds.
        let below = write(&mut probe, &format!("{dir}/below"), size / 2);
        assert_eq!(below["ok"], json!(true), "{dir}: {below:#}");
        // Past the bound: ENOSPC, after no more than the bound.
        let over = write(&mut probe, &format!("{dir}/over"), size + 2 * MIB);
        assert_eq!(errno_name(&over), Some("ENOSPC"), "{dir}: {over:#}");
        assert!(
            over["written"].as_u64().expect("written") <= size,
            "{over:#}"
        );
    }
    // Control: the same oversized write to an unbounded tmpfs succeeds, so
    // the ENOSPC above came from the bound.
    let unbounded = write(&mut probe, "/workspace/unbounded/over", 6 * MIB);
    assert_eq!(unbounded["ok"], json!(true), "{unbounded:#}");
    probe.close();
}

#[test]
fn bounded_writes_make_everything_outside_writable_roots_read_only() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    for bounded in [true, false] {
        let mut policy = probe_policy(&bwrap, &probe_dir);
        policy.binding = Binding::PinnedMounts;
        policy.tmpfs_root("scratch", "/workspace/scratch", "4 MiB");
        // `writes bounded` requires `user-namespaces none`; the control
        // keeps it, so only the bounded writes differ.
        policy.no_user_namespaces = true;
        policy.bounded_writes = bounded;
        let bound = BoundCommand::bind(policy.plan()).expect("bind");
        let mut probe = ProbeSession::start(&bound, None).expect("start");
        let root = write(&mut probe, "/outside-roots", 4096);
        let scratch = write(&mut probe, "/workspace/scratch/inside", 4096);
        assert_eq!(scratch["ok"], json!(true), "bounded={bounded}: {scratch:#}");
        if bounded {
            assert_eq!(errno_name(&root), Some("EROFS"), "{root:#}");
        } else {
            // Control: without bounded writes the root tmpfs is writable.
            assert_eq!(root["ok"], json!(true), "{root:#}");
        }
        probe.close();
    }
}
