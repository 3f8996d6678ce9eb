//! Controls this runtime cannot enforce yet make bind fail instead of being
//! dropped: a cgroup-v2 boundary without a cgroup preparation step.

mod runtime_support;

use runtime_support::{host_with_probe, probe_policy, serial};
use splash_runtime::{BindError, BoundCommand};

#[test]
fn a_required_cgroup_without_a_preparation_step_fails_to_bind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.extra.push(
        r#"cgroup parent "/sys/fs/cgroup/splash" runner "/usr/libexec/splash/cgroup-runner" required { pids 64 }"#
            .into(),
    );
    let plan = policy.plan();
    assert!(plan.require_cgroup_v2 && plan.cgroup.is_some());
    let err = BoundCommand::bind(plan).expect_err("cgroup required");
    assert!(matches!(err, BindError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("cgroup-v2 boundary"), "{err}");

    // Control: the same policy without the cgroup block binds.
    BoundCommand::bind(probe_policy(&bwrap, &probe_dir).plan()).expect("binds");
}
