//! Controls this runtime cannot enforce make bind fail instead of being
//! dropped: a plan that requires the cgroup-v2 boundary but carries no
//! cgroup policy, and a cgroup policy whose parent is not usable.

mod runtime_support;

use runtime_support::{edited_json, host_with_probe, probe_policy, serial};
use splash_runtime::{BindError, BoundCommand};
use splashpol::model::CgroupPolicy;

#[test]
fn a_cgroup_boundary_that_cannot_be_provided_fails_to_bind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let mut policy = probe_policy(&bwrap, &probe_dir);
    policy.extra.push(
        r#"cgroup parent "/sys/fs/cgroup/splash-absent" runner "/usr/libexec/splash/cgroup-runner" required { pids 64 }"#
            .into(),
    );
    let plan = policy.plan();
    assert!(plan.require_cgroup_v2() && plan.cgroup().is_some());
    let err = BoundCommand::bind(plan.clone()).expect_err("no such parent");
    assert!(matches!(err, BindError::Cgroup(_)), "{err}");
    assert!(err.to_string().contains("cgroup-v2 boundary"), "{err}");

    // Required, with the cgroup policy removed from the plan: not a plan,
    // so it cannot be read back from its JSON.
    let stripped = edited_json(&plan, "cgroup", |cgroup: &mut Option<CgroupPolicy>| {
        *cgroup = None;
    });
    let err =
        serde_json::from_value::<splashpol::plan::LaunchPlan>(stripped).expect_err("required");
    assert!(err.to_string().contains("cgroup-v2 boundary"), "{err}");
    assert!(
        err.to_string()
            .contains(&splashpol::plan::PlanError::MissingCgroup.to_string()),
        "{err}"
    );

    // Control: the same policy without the cgroup block binds.
    BoundCommand::bind(probe_policy(&bwrap, &probe_dir).plan()).expect("binds");
}
