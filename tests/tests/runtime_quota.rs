//! Project-quota verification at bind, on this host. Its filesystems carry
//! no project quotas, so the real inspector must make bind fail closed with
//! the error for what is missing, and so must each real interface behind
//! the first. Inspectors standing for a provisioned
//! filesystem show the same plans binding (the control) and the bind-level
//! decisions (aggregate, shared budget, a pair reporting two limits).
//! Enforcement itself is shown on a real quota filesystem by the VM tests
//! (`tests/vm/tests/quota.rs`).

mod runtime_support;

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU32, Ordering};

use runtime_support::{
    Binding, NosuidArea, TempDir, TestPolicy, edited, host_with_probe, probe_policy, serial,
};
use splash_runtime::quota::{
    DirectoryProject, Interface, ProjectUsage, QIF_REQUIRED, QuotaState, QuotaUnit,
};
use splash_runtime::{
    BindError, BindOptions, BoundCommand, KernelQuotaInspector, QuotaError, QuotaInspector,
};
use splashpol::model::{AggregateQuota, ProjectQuota};
use splashpol::plan::{BwrapOp, LaunchPlan, MountSource, PinRole};

const QUOTA: ProjectQuota = ProjectQuota {
    project_id: 42,
    max_bytes: 64 << 20,
    max_inodes: 1000,
};

/// Kernel answers for project 42 provisioned with 32 MiB and 500 inodes.
fn provisioned_usage() -> ProjectUsage {
    ProjectUsage {
        hard_blocks: 32 << 10,
        hard_inodes: 500,
        used_bytes: 0,
        used_inodes: 1,
        valid: QIF_REQUIRED,
    }
}

const ENFORCED: QuotaState = QuotaState {
    project_accounting: true,
    project_enforced: true,
};

fn provisioned_project() -> DirectoryProject {
    DirectoryProject {
        project_id: 42,
        inherit: true,
    }
}

#[derive(Debug)]
struct Provisioned;

impl QuotaInspector for Provisioned {
    fn directory_project(&self, _: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
        Ok(provisioned_project())
    }
    fn quota_state(&self, _: BorrowedFd<'_>) -> io::Result<QuotaState> {
        Ok(ENFORCED)
    }
    fn project_usage(&self, _: BorrowedFd<'_>, _: u32) -> io::Result<ProjectUsage> {
        Ok(provisioned_usage())
    }
}

/// The kernel's answers, except that the interfaces named `provisioned`
/// answer as a provisioned filesystem would: what bind reports from each
/// real interface behind the first one on this host.
#[derive(Debug)]
struct KernelBehind {
    provisioned_state: bool,
    provisioned_project: bool,
}

impl QuotaInspector for KernelBehind {
    fn directory_project(&self, dir: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
        if self.provisioned_project {
            Ok(provisioned_project())
        } else {
            KernelQuotaInspector.directory_project(dir)
        }
    }
    fn quota_state(&self, dir: BorrowedFd<'_>) -> io::Result<QuotaState> {
        if self.provisioned_state {
            Ok(ENFORCED)
        } else {
            KernelQuotaInspector.quota_state(dir)
        }
    }
    fn project_usage(&self, dir: BorrowedFd<'_>, project_id: u32) -> io::Result<ProjectUsage> {
        KernelQuotaInspector.project_usage(dir, project_id)
    }
}

/// Answers a smaller byte limit from its second quota read on: the quota
/// was changed between the checks of two roots in one project.
#[derive(Debug, Default)]
struct ChangesBetweenRoots {
    reads: AtomicU32,
}

impl QuotaInspector for ChangesBetweenRoots {
    fn directory_project(&self, _: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
        Ok(provisioned_project())
    }
    fn quota_state(&self, _: BorrowedFd<'_>) -> io::Result<QuotaState> {
        Ok(ENFORCED)
    }
    fn project_usage(&self, _: BorrowedFd<'_>, _: u32) -> io::Result<ProjectUsage> {
        let mut usage = provisioned_usage();
        if self.reads.fetch_add(1, Ordering::Relaxed) > 0 {
            usage.hard_blocks = 16 << 10;
        }
        Ok(usage)
    }
}

const ROOT_QUOTA: &str = "read-write quota project 42 bytes 64 MiB inodes 1000";

fn quota_policy(bwrap: &std::path::Path, probe_dir: &TempDir, roots: &[&TempDir]) -> TestPolicy {
    let mut policy = probe_policy(bwrap, probe_dir);
    policy.binding = Binding::PinnedMounts;
    policy.no_user_namespaces = true;
    for (i, root) in roots.iter().enumerate() {
        policy.host_root_with(
            &format!("output-{i}"),
            root.path(),
            &format!("/workspace/output-{i}"),
            ROOT_QUOTA,
        );
    }
    policy
        .extra
        .push("quota aggregate bytes 64 MiB inodes 1000".into());
    policy
}

fn quota_plan(bwrap: &std::path::Path, probe_dir: &TempDir, root: &TempDir) -> LaunchPlan {
    let plan = quota_policy(bwrap, probe_dir, &[root]).plan();
    // The lowered plan verifies `QUOTA` on the root's pin under the
    // aggregate bound.
    assert_eq!(plan.quota_checks().len(), 1, "{:?}", plan.quota_checks());
    let check = &plan.quota_checks()[0];
    assert_eq!(check.quota, QUOTA);
    assert!(matches!(
        plan.pins()[usize::from(check.slot.0)].role,
        PinRole::FileRoot(_)
    ));
    assert_eq!(
        plan.aggregate_quota(),
        Some(AggregateQuota {
            max_bytes: 64 << 20,
            max_inodes: 1000,
        })
    );
    plan
}

fn quota_source(err: &BindError) -> &QuotaError {
    match err {
        BindError::Quota { source, .. } => source,
        other => panic!("expected a quota error, got {other}"),
    }
}

#[test]
fn bind_fails_closed_without_kernel_project_quotas() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let area = NosuidArea::new("quota-area");
    let root = TempDir::new_in(area.path(), "quota-root");
    let err =
        BoundCommand::bind(quota_plan(&bwrap, &probe_dir, &root)).expect_err("no project quotas");
    // The first check is the filesystem's quota state: this host's
    // filesystems have no quota enabled (`Q_XGETQSTATV` answers ENOSYS), or
    // at least no enforced project quota.
    assert!(
        matches!(
            quota_source(&err),
            QuotaError::Unsupported {
                interface: Interface::QuotaState,
                ..
            } | QuotaError::NotEnabled(_)
                | QuotaError::NoAccounting
                | QuotaError::NotEnforced
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "failed to verify the project quota of root `output-0` (`{}`)",
            root.path().display()
        )
    );

    // The interfaces behind it, asked of this kernel through the same
    // pinned descriptor, fail closed as well: the directory carries no
    // project (this filesystem cannot assign one), and the project's quota
    // reads as not enabled (ext4 without quota accounting: ESRCH) or
    // unsupported.
    let behind = |provisioned_project| {
        BoundCommand::bind_with(
            quota_plan(&bwrap, &probe_dir, &root),
            BindOptions::default().with_quota_inspector(KernelBehind {
                provisioned_state: true,
                provisioned_project,
            }),
        )
        .expect_err("no project quotas")
    };
    let err = behind(false);
    assert!(
        matches!(
            quota_source(&err),
            QuotaError::ProjectMismatch {
                expected: 42,
                found: 0
            }
        ),
        "{err:?}"
    );
    let err = behind(true);
    assert!(
        matches!(
            quota_source(&err),
            QuotaError::NotEnabled(_) | QuotaError::Unsupported { .. }
        ),
        "{err:?}"
    );

    // Control: the same plan binds when the filesystem reports a matching
    // quota, and is refused when the aggregate is exceeded.
    let bound = BoundCommand::bind_with(
        quota_plan(&bwrap, &probe_dir, &root),
        BindOptions::default().with_quota_inspector(Provisioned),
    )
    .expect("provisioned quota binds");
    assert_eq!(bound.verified_quotas().len(), 1);
    assert_eq!(bound.verified_quotas()[0].hard_bytes, 32 << 20);
    // The checker refuses a policy whose root ceiling exceeds its aggregate,
    // so the smaller aggregate is set on the lowered plan: the runtime
    // repeats the check against the verified hard limits.
    let plan = edited(
        quota_plan(&bwrap, &probe_dir, &root),
        "aggregate_quota",
        |aggregate: &mut Option<AggregateQuota>| {
            *aggregate = Some(AggregateQuota {
                max_bytes: 16 << 20,
                max_inodes: 1000,
            });
        },
    );
    let err = BoundCommand::bind_with(
        plan,
        BindOptions::default().with_quota_inspector(Provisioned),
    )
    .expect_err("aggregate exceeded");
    assert!(
        matches!(
            err,
            BindError::AggregateQuota(QuotaError::AggregateExceeded {
                what: QuotaUnit::Byte,
                ..
            })
        ),
        "{err}"
    );
}

#[test]
fn roots_in_one_project_share_one_budget() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    // Both roots on one nosuid mount (a root launch needs it).
    let area = NosuidArea::new("quota-area");
    let (a, b) = (
        TempDir::new_in(area.path(), "quota-a"),
        TempDir::new_in(area.path(), "quota-b"),
    );
    let plan = || {
        let plan = quota_policy(&bwrap, &probe_dir, &[&a, &b]).plan();
        assert_eq!(plan.quota_checks().len(), 2);
        // Two roots of 32 MiB each in one project on one filesystem are one
        // 32 MiB budget: under 48 MiB, counted once.
        edited(
            plan,
            "aggregate_quota",
            |aggregate: &mut Option<AggregateQuota>| {
                *aggregate = Some(AggregateQuota {
                    max_bytes: 48 << 20,
                    max_inodes: 1000,
                });
            },
        )
    };
    let bound = BoundCommand::bind_with(
        plan(),
        BindOptions::default().with_quota_inspector(Provisioned),
    )
    .expect("one shared budget");
    let v = bound.verified_quotas();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].device, v[1].device, "both roots on one filesystem");

    // The same (filesystem, project) pair answering two different limits is
    // refused, whichever came last.
    let err = BoundCommand::bind_with(
        plan(),
        BindOptions::default().with_quota_inspector(ChangesBetweenRoots::default()),
    )
    .expect_err("one pair, two limits");
    assert!(
        matches!(
            err,
            BindError::AggregateQuota(QuotaError::InconsistentPair {
                project: 42,
                first_bytes: 33_554_432,
                second_bytes: 16_777_216,
                ..
            })
        ),
        "{err}"
    );
}

#[test]
fn bind_refuses_a_raw_writable_mount_under_an_aggregate() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let (root, raw) = (TempDir::new("quota-root"), TempDir::new("quota-raw"));
    // The lowering never produces this (a raw read-write root under an
    // aggregate is a policy error); a plan from elsewhere is refused at
    // bind all the same, before any quota is read.
    let destination = splashpol::model::SandboxPath::new("/workspace/raw").expect("path");
    let plan = edited(
        quota_plan(&bwrap, &probe_dir, &root),
        "ops",
        |ops: &mut Vec<BwrapOp>| {
            ops.push(BwrapOp::Bind {
                source: MountSource::Path(
                    splashpol::model::HostPath::new(raw.path().to_str().expect("utf-8"))
                        .expect("path"),
                ),
                destination,
            });
        },
    );
    let err = BoundCommand::bind_with(
        plan,
        BindOptions::default().with_quota_inspector(Provisioned),
    )
    .expect_err("raw writable mount under an aggregate");
    assert!(
        matches!(&err, BindError::UnverifiedWritableMount { destination } if destination.as_str() == "/workspace/raw"),
        "{err}"
    );
}
