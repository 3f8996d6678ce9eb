//! Controls this runtime cannot enforce yet make bind fail instead of being
//! dropped: a cgroup-v2 boundary without a cgroup preparation step.

mod runtime_support;

use runtime_support::{host_with_probe, probe_plan, serial};
use splash_runtime::{BindError, BoundCommand};

#[test]
fn a_required_cgroup_without_a_preparation_step_fails_to_bind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut plan = probe_plan(&bwrap, &probe_dir).build();
    plan.require_cgroup_v2 = true;
    let err = BoundCommand::bind(plan).expect_err("cgroup required");
    assert!(matches!(err, BindError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("cgroup-v2 boundary"), "{err}");

    // Control: the same plan without the requirement binds.
    BoundCommand::bind(probe_plan(&bwrap, &probe_dir).build()).expect("binds");
}
