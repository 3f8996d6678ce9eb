//! Project-quota verification at bind. This kernel has no project quotas,
//! so the real inspector must make bind fail closed; an inspector standing
//! for a provisioned filesystem shows the same plan binding (the control).

mod runtime_support;

use std::io;
use std::os::fd::BorrowedFd;

use runtime_support::{Binding, TempDir, host_with_probe, probe_policy, serial};
use splash_runtime::quota::{DirectoryProject, ProjectUsage};
use splash_runtime::{BindError, BindOptions, BoundCommand, QuotaInspector};
use splashpol::model::{AggregateQuota, ProjectQuota};
use splashpol::plan::{LaunchPlan, PinRole};

const QUOTA: ProjectQuota = ProjectQuota {
    project_id: 42,
    max_bytes: 64 << 20,
    max_inodes: 1000,
};

#[derive(Debug)]
struct Provisioned;

impl QuotaInspector for Provisioned {
    fn directory_project(&self, _: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
        Ok(DirectoryProject {
            project_id: 42,
            inherit: true,
        })
    }
    fn project_usage(&self, _: BorrowedFd<'_>, _: u32) -> io::Result<ProjectUsage> {
        Ok(ProjectUsage {
            hard_bytes: 32 << 20,
            hard_inodes: 500,
            used_bytes: 0,
            used_inodes: 1,
            complete: true,
        })
    }
}

fn quota_plan(bwrap: &std::path::Path, probe_dir: &TempDir, root: &TempDir) -> LaunchPlan {
    let mut policy = probe_policy(bwrap, probe_dir);
    policy.binding = Binding::PinnedMounts;
    policy.no_user_namespaces = true;
    policy.host_root_with(
        "output",
        root.path(),
        "/workspace/output",
        "read-write quota project 42 bytes 64 MiB inodes 1000",
    );
    policy
        .extra
        .push("quota aggregate bytes 64 MiB inodes 1000".into());
    let plan = policy.plan();
    // The lowered plan verifies `QUOTA` on the root's pin under the
    // aggregate bound.
    assert_eq!(plan.quota_checks.len(), 1, "{:?}", plan.quota_checks);
    let check = &plan.quota_checks[0];
    assert_eq!(check.quota, QUOTA);
    assert!(matches!(
        plan.pins[usize::from(check.slot.0)].role,
        PinRole::FileRoot(_)
    ));
    assert_eq!(
        plan.aggregate_quota,
        Some(AggregateQuota {
            max_bytes: 64 << 20,
            max_inodes: 1000,
        })
    );
    plan
}

#[test]
fn bind_fails_closed_without_kernel_project_quotas() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let root = TempDir::new("quota-root");
    let err =
        BoundCommand::bind(quota_plan(&bwrap, &probe_dir, &root)).expect_err("no project quotas");
    assert!(matches!(err, BindError::Quota { .. }), "{err}");
    assert!(err.to_string().contains(&format!(
        "failed to verify the project quota of `{}`",
        root.path().display()
    )));

    // Control: the same plan binds when the filesystem reports a matching
    // quota, and is refused when the aggregate is exceeded.
    let bound = BoundCommand::bind_with(
        quota_plan(&bwrap, &probe_dir, &root),
        BindOptions::default().with_quota_inspector(Provisioned),
    )
    .expect("provisioned quota binds");
    assert_eq!(bound.verified_quotas().len(), 1);
    // The checker refuses a policy whose root ceiling exceeds its aggregate,
    // so the smaller aggregate is set on the lowered plan: the runtime
    // repeats the check against the verified hard limits.
    let mut plan = quota_plan(&bwrap, &probe_dir, &root);
    plan.aggregate_quota = Some(AggregateQuota {
        max_bytes: 16 << 20,
        max_inodes: 1000,
    });
    let err = BoundCommand::bind_with(
        plan,
        BindOptions::default().with_quota_inspector(Provisioned),
    )
    .expect_err("aggregate exceeded");
    assert!(matches!(err, BindError::AggregateQuota(_)), "{err}");
}
