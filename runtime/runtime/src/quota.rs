//! Project-quota verification of a descriptor-pinned read-write root.
//!
//! The check runs at bind, on the same directory Bubblewrap will later mount:
//! a read-only directory descriptor opened *relative to the retained `O_PATH`
//! pin* (never a fresh path lookup). The kernel interfaces sit behind the
//! [`QuotaInspector`] trait so that the decision logic in [`verify`] can be
//! exercised against a provisioned quota elsewhere (a VM) while this crate's
//! real implementation, [`KernelQuotaInspector`], fails closed on kernels and
//! filesystems without project quotas.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use splashpol::model::{AggregateQuota, ProjectQuota};

use crate::sys;

/// What the filesystem reports for one pinned directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectoryProject {
    /// The directory's project id (`fsx_projid`).
    pub project_id: u32,
    /// Whether `FS_XFLAG_PROJINHERIT` is set.
    pub inherit: bool,
}

/// The kernel's accounting for one project on one filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProjectUsage {
    /// Hard block limit in bytes (0 = none).
    pub hard_bytes: u64,
    /// Hard inode limit (0 = none).
    pub hard_inodes: u64,
    pub used_bytes: u64,
    pub used_inodes: u64,
    /// Whether the kernel returned limits and usage for both blocks and inodes.
    pub complete: bool,
}

/// Reads project-quota facts about an open directory.
pub trait QuotaInspector {
    /// The project id and inheritance flag of `dir`.
    fn directory_project(&self, dir: BorrowedFd<'_>) -> io::Result<DirectoryProject>;
    /// The quota of `project_id` on the filesystem holding `dir`.
    fn project_usage(&self, dir: BorrowedFd<'_>, project_id: u32) -> io::Result<ProjectUsage>;
}

/// The real inspector: `ioctl(FS_IOC_FSGETXATTR)` and
/// `quotactl_fd(Q_GETQUOTA, PRJQUOTA)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelQuotaInspector;

/// `QIF_BLIMITS | QIF_SPACE | QIF_ILIMITS | QIF_INODES`.
const QIF_LIMITS_AND_USAGE: u32 = libc::QIF_LIMITS | libc::QIF_USAGE;
/// Quota blocks are 1 KiB units (`QIF_DQBLKSIZE`).
const QUOTA_BLOCK_BYTES: u64 = 1024;

impl QuotaInspector for KernelQuotaInspector {
    fn directory_project(&self, dir: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
        let attr = sys::fs_get_xattr(dir)?;
        Ok(DirectoryProject {
            project_id: attr.projid,
            inherit: attr.xflags & sys::FS_XFLAG_PROJINHERIT != 0,
        })
    }

    fn project_usage(&self, dir: BorrowedFd<'_>, project_id: u32) -> io::Result<ProjectUsage> {
        let q = sys::project_quota(dir, project_id)?;
        Ok(ProjectUsage {
            hard_bytes: q.dqb_bhardlimit.saturating_mul(QUOTA_BLOCK_BYTES),
            hard_inodes: q.dqb_ihardlimit,
            used_bytes: q.dqb_curspace,
            used_inodes: q.dqb_curinodes,
            complete: q.dqb_valid & QIF_LIMITS_AND_USAGE == QIF_LIMITS_AND_USAGE,
        })
    }
}

/// Why a quota root was rejected.
#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    #[error("failed to open the pinned directory for reading")]
    OpenDirectory(#[source] io::Error),
    #[error("failed to read the project attributes (FS_IOC_FSGETXATTR)")]
    Attributes(#[source] io::Error),
    #[error("failed to read the project quota (quotactl_fd Q_GETQUOTA PRJQUOTA)")]
    Quota(#[source] io::Error),
    #[error("directory has project id {found}; the policy expects {expected}")]
    ProjectMismatch { expected: u32, found: u32 },
    #[error("project inheritance (FS_XFLAG_PROJINHERIT) is not set on the directory")]
    NoInheritance,
    #[error("the kernel did not return complete quota accounting for project {0}")]
    Incomplete(u32),
    #[error("project {project} has no hard {what} limit")]
    NoHardLimit { project: u32, what: &'static str },
    #[error("project {project} hard {what} limit {limit} exceeds the accepted ceiling {ceiling}")]
    AboveCeiling {
        project: u32,
        what: &'static str,
        limit: u64,
        ceiling: u64,
    },
    #[error("project {project} already uses {used} {what}, above its hard limit {limit}")]
    OverLimit {
        project: u32,
        what: &'static str,
        used: u64,
        limit: u64,
    },
    #[error(
        "the quota roots' distinct projects sum to {total} {what}, above the aggregate maximum {maximum}"
    )]
    AggregateExceeded {
        what: &'static str,
        total: u64,
        maximum: u64,
    },
}

/// A verified quota: the hard limits the kernel enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifiedQuota {
    pub project_id: u32,
    /// `st_dev` of the filesystem, so distinct pairs are counted once.
    pub device: u64,
    pub hard_bytes: u64,
    pub hard_inodes: u64,
}

/// Verifies one pinned directory against its policy quota.
pub fn verify(
    inspector: &dyn QuotaInspector,
    pin: BorrowedFd<'_>,
    device: u64,
    quota: &ProjectQuota,
) -> Result<VerifiedQuota, QuotaError> {
    let dir = sys::open_directory_at(pin).map_err(QuotaError::OpenDirectory)?;
    let project = inspector
        .directory_project(dir.as_fd())
        .map_err(QuotaError::Attributes)?;
    if project.project_id != quota.project_id {
        return Err(QuotaError::ProjectMismatch {
            expected: quota.project_id,
            found: project.project_id,
        });
    }
    if !project.inherit {
        return Err(QuotaError::NoInheritance);
    }
    let usage = inspector
        .project_usage(dir.as_fd(), quota.project_id)
        .map_err(QuotaError::Quota)?;
    let id = quota.project_id;
    if !usage.complete {
        return Err(QuotaError::Incomplete(id));
    }
    for (what, limit, ceiling, used) in [
        ("byte", usage.hard_bytes, quota.max_bytes, usage.used_bytes),
        (
            "inode",
            usage.hard_inodes,
            quota.max_inodes,
            usage.used_inodes,
        ),
    ] {
        if limit == 0 {
            return Err(QuotaError::NoHardLimit { project: id, what });
        }
        if limit > ceiling {
            return Err(QuotaError::AboveCeiling {
                project: id,
                what,
                limit,
                ceiling,
            });
        }
        if used > limit {
            return Err(QuotaError::OverLimit {
                project: id,
                what,
                used,
                limit,
            });
        }
    }
    Ok(VerifiedQuota {
        project_id: id,
        device,
        hard_bytes: usage.hard_bytes,
        hard_inodes: usage.hard_inodes,
    })
}

/// Sums the hard limits of distinct (filesystem, project) pairs once and
/// checks them against the aggregate maximum.
pub fn check_aggregate(
    verified: &[VerifiedQuota],
    aggregate: &AggregateQuota,
) -> Result<(), QuotaError> {
    let mut seen = std::collections::BTreeMap::new();
    for v in verified {
        seen.insert((v.device, v.project_id), (v.hard_bytes, v.hard_inodes));
    }
    let bytes = seen
        .values()
        .fold(0u64, |acc, (b, _)| acc.saturating_add(*b));
    let inodes = seen
        .values()
        .fold(0u64, |acc, (_, i)| acc.saturating_add(*i));
    if bytes > aggregate.max_bytes {
        return Err(QuotaError::AggregateExceeded {
            what: "bytes",
            total: bytes,
            maximum: aggregate.max_bytes,
        });
    }
    if inodes > aggregate.max_inodes {
        return Err(QuotaError::AggregateExceeded {
            what: "inodes",
            total: inodes,
            maximum: aggregate.max_inodes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys;
    use std::cell::Cell;

    /// A provisioned quota, standing in for a filesystem this kernel cannot
    /// provide; the real interfaces are exercised by
    /// `kernel_inspector_fails_closed_without_project_quotas`.
    struct Provisioned {
        project: DirectoryProject,
        usage: ProjectUsage,
        calls: Cell<u32>,
    }

    impl QuotaInspector for Provisioned {
        fn directory_project(&self, _: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
            self.calls.set(self.calls.get() + 1);
            Ok(self.project)
        }
        fn project_usage(&self, _: BorrowedFd<'_>, _: u32) -> io::Result<ProjectUsage> {
            Ok(self.usage)
        }
    }

    fn provisioned() -> Provisioned {
        Provisioned {
            project: DirectoryProject {
                project_id: 42,
                inherit: true,
            },
            usage: ProjectUsage {
                hard_bytes: 1 << 20,
                hard_inodes: 100,
                used_bytes: 10,
                used_inodes: 1,
                complete: true,
            },
            calls: Cell::new(0),
        }
    }

    const QUOTA: ProjectQuota = ProjectQuota {
        project_id: 42,
        max_bytes: 1 << 20,
        max_inodes: 100,
    };

    fn pin() -> std::os::fd::OwnedFd {
        sys::open_path_no_symlinks(&std::env::temp_dir().canonicalize().expect("temp dir"))
            .expect("pin temp dir")
    }

    #[test]
    fn accepts_a_matching_quota() {
        let pin = pin();
        let v = verify(&provisioned(), pin.as_fd(), 1, &QUOTA).expect("verified");
        assert_eq!(v.hard_bytes, 1 << 20);
    }

    #[test]
    fn rejects_each_unmet_requirement() {
        let pin = pin();
        let mut p = provisioned();
        p.project.project_id = 7;
        assert!(matches!(
            verify(&p, pin.as_fd(), 1, &QUOTA),
            Err(QuotaError::ProjectMismatch { found: 7, .. })
        ));
        let mut p = provisioned();
        p.project.inherit = false;
        assert!(matches!(
            verify(&p, pin.as_fd(), 1, &QUOTA),
            Err(QuotaError::NoInheritance)
        ));
        let mut p = provisioned();
        p.usage.complete = false;
        assert!(matches!(
            verify(&p, pin.as_fd(), 1, &QUOTA),
            Err(QuotaError::Incomplete(42))
        ));
        let mut p = provisioned();
        p.usage.hard_inodes = 0;
        assert!(matches!(
            verify(&p, pin.as_fd(), 1, &QUOTA),
            Err(QuotaError::NoHardLimit { what: "inode", .. })
        ));
        let mut p = provisioned();
        p.usage.hard_bytes = 2 << 20;
        assert!(matches!(
            verify(&p, pin.as_fd(), 1, &QUOTA),
            Err(QuotaError::AboveCeiling { what: "byte", .. })
        ));
        let mut p = provisioned();
        p.usage.used_bytes = 2 << 20;
        assert!(matches!(
            verify(&p, pin.as_fd(), 1, &QUOTA),
            Err(QuotaError::OverLimit { what: "byte", .. })
        ));
    }

    #[test]
    fn aggregate_counts_each_filesystem_project_pair_once() {
        let v = VerifiedQuota {
            project_id: 42,
            device: 1,
            hard_bytes: 100,
            hard_inodes: 10,
        };
        let agg = AggregateQuota {
            max_bytes: 150,
            max_inodes: 15,
        };
        assert!(check_aggregate(&[v, v], &agg).is_ok());
        let other = VerifiedQuota { device: 2, ..v };
        assert!(matches!(
            check_aggregate(&[v, other], &agg),
            Err(QuotaError::AggregateExceeded {
                what: "bytes",
                total: 200,
                ..
            })
        ));
    }

    #[test]
    fn kernel_inspector_fails_closed_without_project_quotas() {
        // This host's kernel and temp filesystem have no project quotas:
        // the real interfaces must report an error, never a default.
        let pin = pin();
        let result = verify(&KernelQuotaInspector, pin.as_fd(), 1, &QUOTA);
        assert!(
            result.is_err(),
            "expected a fail-closed error, got {result:?}"
        );
    }
}
