//! Project-quota verification of a descriptor-pinned read-write root.
//!
//! The check runs at bind, on the same directory Bubblewrap will later mount:
//! a read-only directory descriptor opened *relative to the retained `O_PATH`
//! pin* (`openat(pin, ".", O_RDONLY | O_DIRECTORY)`, never a fresh path
//! lookup). Through that descriptor:
//!
//! 1. `fstat` gives the filesystem (`st_dev`) that identifies the
//!    (filesystem, project) pair for the aggregate;
//! 2. `quotactl_fd(QCMD(Q_XGETQSTATV, PRJQUOTA))` gives the filesystem's
//!    quota state: project accounting must be on and its limits enforced
//!    (`quotaoff -P` leaves the limits readable but unenforced); a
//!    filesystem without quotas fails here, before any per-directory fact;
//! 3. `ioctl(FS_IOC_FSGETXATTR)` gives the directory's project id and
//!    whether `FS_XFLAG_PROJINHERIT` is set;
//! 4. `quotactl_fd(QCMD(Q_GETQUOTA, PRJQUOTA), project_id)` gives the
//!    project's hard limits, usage and the `dqb_valid` mask.
//!
//! The kernel interfaces sit behind the [`QuotaInspector`] trait, which
//! returns the kernel's facts unchanged; every decision (errno
//! classification, the valid mask, the block-to-byte conversion, limits,
//! ceilings, usage) is made here in [`verify`], so a fake inspector can
//! exercise each branch. The real implementation is [`KernelQuotaInspector`];
//! enforcement itself is only ever shown on a real quota filesystem.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;

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

/// The kernel's accounting for one project on one filesystem, as
/// `Q_GETQUOTA` returns it (`struct if_dqblk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProjectUsage {
    /// Hard block limit in 1 KiB quota blocks (`dqb_bhardlimit`; 0 = none).
    pub hard_blocks: u64,
    /// Hard inode limit (`dqb_ihardlimit`; 0 = none).
    pub hard_inodes: u64,
    /// Space in use, in bytes (`dqb_curspace`).
    pub used_bytes: u64,
    /// Inodes in use (`dqb_curinodes`).
    pub used_inodes: u64,
    /// Which fields the kernel filled in (`dqb_valid`, `QIF_*` bits).
    pub valid: u32,
}

/// The filesystem's quota state (`qs_flags` of `Q_XGETQSTATV`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaState {
    /// `FS_QUOTA_PDQ_ACCT`: project usage is accounted.
    pub project_accounting: bool,
    /// `FS_QUOTA_PDQ_ENFD`: project limits are enforced.
    pub project_enforced: bool,
}

/// `QIF_BLIMITS`: block limits are valid.
pub const QIF_BLIMITS: u32 = libc::QIF_BLIMITS;
/// `QIF_SPACE`: current space is valid.
pub const QIF_SPACE: u32 = libc::QIF_SPACE;
/// `QIF_ILIMITS`: inode limits are valid.
pub const QIF_ILIMITS: u32 = libc::QIF_ILIMITS;
/// `QIF_INODES`: current inode count is valid.
pub const QIF_INODES: u32 = libc::QIF_INODES;
/// The fields a verification needs: both limits and both usages.
pub const QIF_REQUIRED: u32 = QIF_BLIMITS | QIF_SPACE | QIF_ILIMITS | QIF_INODES;
/// Quota block limits are in 1 KiB units (`QIF_DQBLKSIZE`).
pub const QUOTA_BLOCK_BYTES: u64 = 1024;

/// Reads project-quota facts about an open directory. Implementations
/// return what the kernel said, errors included, without interpreting it.
pub trait QuotaInspector {
    /// The project id and inheritance flag of `dir`.
    fn directory_project(&self, dir: BorrowedFd<'_>) -> io::Result<DirectoryProject>;
    /// The quota state of the filesystem holding `dir`.
    fn quota_state(&self, dir: BorrowedFd<'_>) -> io::Result<QuotaState>;
    /// The quota of `project_id` on the filesystem holding `dir`.
    fn project_usage(&self, dir: BorrowedFd<'_>, project_id: u32) -> io::Result<ProjectUsage>;
}

/// The real inspector: `ioctl(FS_IOC_FSGETXATTR)` and
/// `quotactl_fd(Q_GETQUOTA, PRJQUOTA)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelQuotaInspector;

impl QuotaInspector for KernelQuotaInspector {
    fn directory_project(&self, dir: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
        let attr = sys::fs_get_xattr(dir)?;
        Ok(DirectoryProject {
            project_id: attr.projid,
            inherit: attr.xflags & sys::FS_XFLAG_PROJINHERIT != 0,
        })
    }

    fn quota_state(&self, dir: BorrowedFd<'_>) -> io::Result<QuotaState> {
        let state = sys::quota_state(dir)?;
        Ok(QuotaState {
            project_accounting: state.qs_flags & sys::FS_QUOTA_PDQ_ACCT != 0,
            project_enforced: state.qs_flags & sys::FS_QUOTA_PDQ_ENFD != 0,
        })
    }

    fn project_usage(&self, dir: BorrowedFd<'_>, project_id: u32) -> io::Result<ProjectUsage> {
        let q = sys::project_quota(dir, project_id)?;
        Ok(ProjectUsage {
            hard_blocks: q.dqb_bhardlimit,
            hard_inodes: q.dqb_ihardlimit,
            used_bytes: q.dqb_curspace,
            used_inodes: q.dqb_curinodes,
            valid: q.dqb_valid,
        })
    }
}

/// The kernel interface a failure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    /// `ioctl(FS_IOC_FSGETXATTR)`.
    ProjectAttributes,
    /// `quotactl_fd(Q_XGETQSTATV, PRJQUOTA)`.
    QuotaState,
    /// `quotactl_fd(Q_GETQUOTA, PRJQUOTA)`.
    ProjectQuota,
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ProjectAttributes => "project attributes (FS_IOC_FSGETXATTR)",
            Self::QuotaState => "quota state (quotactl_fd Q_XGETQSTATV PRJQUOTA)",
            Self::ProjectQuota => "project quota (quotactl_fd Q_GETQUOTA PRJQUOTA)",
        })
    }
}

/// What a quota limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuotaUnit {
    /// Bytes.
    Byte,
    /// Inodes.
    Inode,
}

impl fmt::Display for QuotaUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Byte => "byte",
            Self::Inode => "inode",
        })
    }
}

/// Why a quota root was rejected. Each unmet requirement is its own variant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QuotaError {
    /// Failed to open the pinned directory for reading.
    #[error("failed to open the pinned directory for reading")]
    OpenDirectory(#[source] io::Error),
    /// Failed to identify the filesystem of the pinned directory (fstat).
    #[error("failed to identify the filesystem of the pinned directory (fstat)")]
    Filesystem(#[source] io::Error),
    /// The `interface` is not available: the kernel or filesystem lacks it, or no quota is enabled on this filesystem.
    #[error(
        "the {interface} is not available: the kernel or filesystem lacks it, or no quota is enabled on this filesystem"
    )]
    Unsupported {
        /// The quota interface that failed.
        interface: Interface,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Project quotas are not enabled on this filesystem (mount it with `prjquota`).
    #[error("project quotas are not enabled on this filesystem (mount it with `prjquota`)")]
    NotEnabled(#[source] io::Error),
    /// Project quota accounting is off on this filesystem (mount it with `prjquota`).
    #[error("project quota accounting is off on this filesystem (mount it with `prjquota`)")]
    NoAccounting,
    /// Project quota limits are accounted but not enforced on this filesystem (mount it with `prjquota`, or turn them on with `quotaon -P`).
    #[error(
        "project quota limits are accounted but not enforced on this filesystem (mount it with `prjquota`, or turn them on with `quotaon -P`)"
    )]
    NotEnforced,
    /// Permission to read the `interface` is missing.
    #[error("permission to read the {interface} is missing")]
    PermissionDenied {
        /// The quota interface that failed.
        interface: Interface,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The filesystem has no quota record for project `project` (no limits are set).
    #[error("the filesystem has no quota record for project {project} (no limits are set)")]
    NoRecord {
        /// The project id.
        project: u32,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Failed to read the `interface`.
    #[error("failed to read the {interface}")]
    Failed {
        /// The quota interface that failed.
        interface: Interface,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Directory has project id `found`.
    #[error("directory has project id {found}; the policy expects {expected}")]
    ProjectMismatch {
        /// What was expected.
        expected: u32,
        /// What was found.
        found: u32,
    },
    /// Project inheritance (FS_XFLAG_PROJINHERIT) is not set on the directory.
    #[error("project inheritance (FS_XFLAG_PROJINHERIT) is not set on the directory")]
    NoInheritance,
    /// The kernel did not return complete quota accounting for project `project` (valid mask `valid`, missing `missing`).
    #[error(
        "the kernel did not return complete quota accounting for project {project} (valid mask {valid:#x}, missing {missing:#x})"
    )]
    Incomplete {
        /// The project id.
        project: u32,
        /// Which limits the record says are valid.
        valid: u32,
        /// Which limits it lacks.
        missing: u32,
    },
    /// Project `project` hard block limit `blocks` (1 KiB blocks) does not fit in 64-bit bytes.
    #[error(
        "project {project} hard block limit {blocks} (1 KiB blocks) does not fit in 64-bit bytes"
    )]
    BlockOverflow {
        /// The project id.
        project: u32,
        /// The block count.
        blocks: u64,
    },
    /// Project `project` has no hard `what` limit.
    #[error("project {project} has no hard {what} limit")]
    NoHardLimit {
        /// The project id.
        project: u32,
        /// Bytes or inodes.
        what: QuotaUnit,
    },
    /// Project `project` hard `what` limit `limit` exceeds the accepted ceiling `ceiling`.
    #[error("project {project} hard {what} limit {limit} exceeds the accepted ceiling {ceiling}")]
    AboveCeiling {
        /// The project id.
        project: u32,
        /// Bytes or inodes.
        what: QuotaUnit,
        /// The hard limit.
        limit: u64,
        /// The policy ceiling.
        ceiling: u64,
    },
    /// Project `project` already uses `used` `what`s, above its hard limit `limit`.
    #[error("project {project} already uses {used} {what}s, above its hard limit {limit}")]
    OverLimit {
        /// The project id.
        project: u32,
        /// Bytes or inodes.
        what: QuotaUnit,
        /// The current usage.
        used: u64,
        /// The hard limit.
        limit: u64,
    },
    /// Project `project` on filesystem `device` reported different hard limits for two roots (`first_bytes` bytes, `first_inodes` inodes, then `second_bytes` bytes, `second_inodes` inodes).
    #[error(
        "project {project} on filesystem {device:#x} reported different hard limits for two roots ({first_bytes} bytes, {first_inodes} inodes, then {second_bytes} bytes, {second_inodes} inodes)"
    )]
    InconsistentPair {
        /// The device number.
        device: u64,
        /// The project id.
        project: u32,
        /// The byte limit of the first root.
        first_bytes: u64,
        /// The inode limit of the first root.
        first_inodes: u64,
        /// The byte limit of the second root.
        second_bytes: u64,
        /// The inode limit of the second root.
        second_inodes: u64,
    },
    /// The hard `what` limits of the distinct (filesystem, project) pairs sum to `total`, above the aggregate maximum `maximum`.
    #[error(
        "the hard {what} limits of the distinct (filesystem, project) pairs sum to {total}, above the aggregate maximum {maximum}"
    )]
    AggregateExceeded {
        /// Bytes or inodes.
        what: QuotaUnit,
        /// The sum over the roots.
        total: u128,
        /// The aggregate maximum.
        maximum: u64,
    },
}

/// Turns an inspector failure into its named error.
fn classify(interface: Interface, project: u32, source: io::Error) -> QuotaError {
    match source.raw_os_error() {
        Some(libc::ENOTTY | libc::EOPNOTSUPP | libc::ENOSYS) => {
            QuotaError::Unsupported { interface, source }
        }
        Some(libc::EPERM | libc::EACCES) => QuotaError::PermissionDenied { interface, source },
        Some(libc::ESRCH) if interface != Interface::ProjectAttributes => {
            QuotaError::NotEnabled(source)
        }
        Some(libc::ENOENT) if interface == Interface::ProjectQuota => {
            QuotaError::NoRecord { project, source }
        }
        _ => QuotaError::Failed { interface, source },
    }
}

/// A verified quota: the hard limits the kernel enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifiedQuota {
    /// The directory's project id.
    pub project_id: u32,
    /// `st_dev` of the verified directory: with the project id, the
    /// (filesystem, project) pair the aggregate counts once.
    pub device: u64,
    /// The hard limit on bytes.
    pub hard_bytes: u64,
    /// The hard limit on inodes.
    pub hard_inodes: u64,
}

/// Verifies one pinned directory against its policy quota. Every check of
/// the module documentation is made, in order, and the first unmet one is
/// returned.
pub fn verify(
    inspector: &dyn QuotaInspector,
    pin: BorrowedFd<'_>,
    quota: &ProjectQuota,
) -> Result<VerifiedQuota, QuotaError> {
    let dir = File::from(sys::open_directory_at(pin).map_err(QuotaError::OpenDirectory)?);
    let device = dir.metadata().map_err(QuotaError::Filesystem)?.dev();
    let id = quota.project_id;
    let state = inspector
        .quota_state(dir.as_fd())
        .map_err(|e| classify(Interface::QuotaState, id, e))?;
    if !state.project_accounting {
        return Err(QuotaError::NoAccounting);
    }
    if !state.project_enforced {
        return Err(QuotaError::NotEnforced);
    }
    let project = inspector
        .directory_project(dir.as_fd())
        .map_err(|e| classify(Interface::ProjectAttributes, id, e))?;
    if project.project_id != id {
        return Err(QuotaError::ProjectMismatch {
            expected: id,
            found: project.project_id,
        });
    }
    if !project.inherit {
        return Err(QuotaError::NoInheritance);
    }
    let usage = inspector
        .project_usage(dir.as_fd(), id)
        .map_err(|e| classify(Interface::ProjectQuota, id, e))?;
    if usage.valid & QIF_REQUIRED != QIF_REQUIRED {
        return Err(QuotaError::Incomplete {
            project: id,
            valid: usage.valid,
            missing: QIF_REQUIRED & !usage.valid,
        });
    }
    let hard_bytes =
        usage
            .hard_blocks
            .checked_mul(QUOTA_BLOCK_BYTES)
            .ok_or(QuotaError::BlockOverflow {
                project: id,
                blocks: usage.hard_blocks,
            })?;
    for (what, limit, ceiling, used) in [
        (
            QuotaUnit::Byte,
            hard_bytes,
            quota.max_bytes,
            usage.used_bytes,
        ),
        (
            QuotaUnit::Inode,
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
        hard_bytes,
        hard_inodes: usage.hard_inodes,
    })
}

/// Sums the hard limits of the distinct (filesystem, project) pairs once
/// and checks them against the aggregate maximum. Roots in one project on
/// one filesystem share one budget; if two of them report different limits
/// for the same pair (the quota changed between the checks), that is an
/// error rather than a choice of either value.
pub fn check_aggregate(
    verified: &[VerifiedQuota],
    aggregate: &AggregateQuota,
) -> Result<(), QuotaError> {
    let mut pairs: BTreeMap<(u64, u32), (u64, u64)> = BTreeMap::new();
    for v in verified {
        let limits = (v.hard_bytes, v.hard_inodes);
        let first = *pairs.entry((v.device, v.project_id)).or_insert(limits);
        if first != limits {
            return Err(QuotaError::InconsistentPair {
                device: v.device,
                project: v.project_id,
                first_bytes: first.0,
                first_inodes: first.1,
                second_bytes: limits.0,
                second_inodes: limits.1,
            });
        }
    }
    let bytes: u128 = pairs.values().map(|(b, _)| u128::from(*b)).sum();
    let inodes: u128 = pairs.values().map(|(_, i)| u128::from(*i)).sum();
    for (what, total, maximum) in [
        (QuotaUnit::Byte, bytes, aggregate.max_bytes),
        (QuotaUnit::Inode, inodes, aggregate.max_inodes),
    ] {
        if total > u128::from(maximum) {
            return Err(QuotaError::AggregateExceeded {
                what,
                total,
                maximum,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys;
    use std::os::fd::OwnedFd;

    /// Kernel answers for a provisioned quota, standing in for a filesystem
    /// this host lacks; the decision logic is all that is tested here. The
    /// real interfaces are exercised by
    /// `kernel_inspector_fails_closed_without_project_quotas` and, on a real
    /// quota filesystem, by the VM tests.
    #[derive(Clone, Copy)]
    struct Fake {
        project: Result<DirectoryProject, i32>,
        state: Result<QuotaState, i32>,
        usage: Result<ProjectUsage, i32>,
    }

    impl QuotaInspector for Fake {
        fn directory_project(&self, _: BorrowedFd<'_>) -> io::Result<DirectoryProject> {
            self.project.map_err(io::Error::from_raw_os_error)
        }
        fn quota_state(&self, _: BorrowedFd<'_>) -> io::Result<QuotaState> {
            self.state.map_err(io::Error::from_raw_os_error)
        }
        fn project_usage(&self, _: BorrowedFd<'_>, _: u32) -> io::Result<ProjectUsage> {
            self.usage.map_err(io::Error::from_raw_os_error)
        }
    }

    fn provisioned() -> Fake {
        Fake {
            project: Ok(DirectoryProject {
                project_id: 42,
                inherit: true,
            }),
            state: Ok(QuotaState {
                project_accounting: true,
                project_enforced: true,
            }),
            usage: Ok(ProjectUsage {
                hard_blocks: 1024,
                hard_inodes: 100,
                used_bytes: 10,
                used_inodes: 1,
                valid: libc::QIF_ALL,
            }),
        }
    }

    fn with_usage(f: impl FnOnce(&mut ProjectUsage)) -> Fake {
        let mut fake = provisioned();
        if let Ok(u) = fake.usage.as_mut() {
            f(u);
        }
        fake
    }

    const QUOTA: ProjectQuota = ProjectQuota {
        project_id: 42,
        max_bytes: 1 << 20,
        max_inodes: 100,
    };

    fn pin() -> OwnedFd {
        sys::open_path_no_symlinks(&std::env::temp_dir().canonicalize().expect("temp dir"))
            .expect("pin temp dir")
    }

    fn check(fake: Fake) -> Result<VerifiedQuota, QuotaError> {
        verify(&fake, pin().as_fd(), &QUOTA)
    }

    #[test]
    fn accepts_a_matching_quota_in_bytes() {
        let v = check(provisioned()).expect("verified");
        assert_eq!(
            (v.project_id, v.hard_bytes, v.hard_inodes),
            (42, 1 << 20, 100)
        );
        let temp = std::fs::metadata(std::env::temp_dir()).expect("temp dir");
        assert_eq!(v.device, temp.dev(), "the pinned directory's filesystem");
        // Usage exactly at the limit is not over it.
        assert!(
            check(with_usage(|u| {
                u.used_bytes = 1 << 20;
                u.used_inodes = 100;
            }))
            .is_ok()
        );
    }

    #[test]
    fn classifies_interface_failures() {
        use Interface::{ProjectAttributes as Attr, ProjectQuota as Quota, QuotaState as State};
        let attr = |errno| {
            check(Fake {
                project: Err(errno),
                ..provisioned()
            })
        };
        let state = |errno| {
            check(Fake {
                state: Err(errno),
                ..provisioned()
            })
        };
        let quota = |errno| {
            check(Fake {
                usage: Err(errno),
                ..provisioned()
            })
        };
        for errno in [libc::ENOTTY, libc::EOPNOTSUPP, libc::ENOSYS] {
            assert!(matches!(
                attr(errno),
                Err(QuotaError::Unsupported {
                    interface: Attr,
                    ..
                })
            ));
            assert!(matches!(
                state(errno),
                Err(QuotaError::Unsupported {
                    interface: State,
                    ..
                })
            ));
            assert!(matches!(
                quota(errno),
                Err(QuotaError::Unsupported {
                    interface: Quota,
                    ..
                })
            ));
        }
        for errno in [libc::EPERM, libc::EACCES] {
            assert!(matches!(
                attr(errno),
                Err(QuotaError::PermissionDenied {
                    interface: Attr,
                    ..
                })
            ));
            assert!(matches!(
                state(errno),
                Err(QuotaError::PermissionDenied {
                    interface: State,
                    ..
                })
            ));
            assert!(matches!(
                quota(errno),
                Err(QuotaError::PermissionDenied {
                    interface: Quota,
                    ..
                })
            ));
        }
        assert!(matches!(state(libc::ESRCH), Err(QuotaError::NotEnabled(_))));
        assert!(matches!(quota(libc::ESRCH), Err(QuotaError::NotEnabled(_))));
        assert!(matches!(
            quota(libc::ENOENT),
            Err(QuotaError::NoRecord { project: 42, .. })
        ));
        assert!(matches!(
            quota(libc::EIO),
            Err(QuotaError::Failed {
                interface: Quota,
                ..
            })
        ));
        assert!(matches!(
            attr(libc::ESRCH),
            Err(QuotaError::Failed {
                interface: Attr,
                ..
            })
        ));
    }

    #[test]
    fn rejects_each_unmet_requirement() {
        let mut fake = provisioned();
        fake.project = Ok(DirectoryProject {
            project_id: 7,
            inherit: true,
        });
        assert!(matches!(
            check(fake),
            Err(QuotaError::ProjectMismatch {
                expected: 42,
                found: 7
            })
        ));
        fake.project = Ok(DirectoryProject {
            project_id: 42,
            inherit: false,
        });
        assert!(matches!(check(fake), Err(QuotaError::NoInheritance)));

        let mut fake = provisioned();
        fake.state = Ok(QuotaState {
            project_accounting: false,
            project_enforced: false,
        });
        assert!(matches!(check(fake), Err(QuotaError::NoAccounting)));
        fake.state = Ok(QuotaState {
            project_accounting: true,
            project_enforced: false,
        });
        assert!(matches!(check(fake), Err(QuotaError::NotEnforced)));

        for bit in [QIF_BLIMITS, QIF_SPACE, QIF_ILIMITS, QIF_INODES] {
            let r = check(with_usage(|u| u.valid = libc::QIF_ALL & !bit));
            assert!(
                matches!(r, Err(QuotaError::Incomplete { project: 42, missing, .. }) if missing == bit),
                "{r:?}"
            );
        }
        // The time fields are not needed.
        assert!(check(with_usage(|u| u.valid = QIF_REQUIRED)).is_ok());

        let r = check(with_usage(|u| u.hard_blocks = u64::MAX / 1024 + 1));
        assert!(matches!(r, Err(QuotaError::BlockOverflow { .. })), "{r:?}");
        // The largest convertible limit converts exactly (and is then above
        // the ceiling, not saturated to it).
        let r = check(with_usage(|u| u.hard_blocks = u64::MAX / 1024));
        assert!(
            matches!(r, Err(QuotaError::AboveCeiling { what: QuotaUnit::Byte, limit, .. }) if limit == u64::MAX / 1024 * 1024),
            "{r:?}"
        );

        let r = check(with_usage(|u| u.hard_blocks = 0));
        assert!(
            matches!(
                r,
                Err(QuotaError::NoHardLimit {
                    what: QuotaUnit::Byte,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = check(with_usage(|u| u.hard_inodes = 0));
        assert!(
            matches!(
                r,
                Err(QuotaError::NoHardLimit {
                    what: QuotaUnit::Inode,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = check(with_usage(|u| u.hard_blocks = 1025));
        assert!(
            matches!(
                r,
                Err(QuotaError::AboveCeiling {
                    what: QuotaUnit::Byte,
                    limit: 1_049_600,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = check(with_usage(|u| u.hard_inodes = 101));
        assert!(
            matches!(
                r,
                Err(QuotaError::AboveCeiling {
                    what: QuotaUnit::Inode,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = check(with_usage(|u| u.used_bytes = (1 << 20) + 1));
        assert!(
            matches!(
                r,
                Err(QuotaError::OverLimit {
                    what: QuotaUnit::Byte,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = check(with_usage(|u| u.used_inodes = 101));
        assert!(
            matches!(
                r,
                Err(QuotaError::OverLimit {
                    what: QuotaUnit::Inode,
                    ..
                })
            ),
            "{r:?}"
        );
    }

    const V: VerifiedQuota = VerifiedQuota {
        project_id: 42,
        device: 1,
        hard_bytes: 100,
        hard_inodes: 10,
    };
    const AGG: AggregateQuota = AggregateQuota {
        max_bytes: 150,
        max_inodes: 15,
    };

    #[test]
    fn aggregate_counts_each_filesystem_project_pair_once() {
        // Two roots in one project on one filesystem: one budget.
        assert!(check_aggregate(&[V, V], &AGG).is_ok());
        // The same project id on another filesystem is another budget.
        let other_fs = VerifiedQuota { device: 2, ..V };
        assert!(matches!(
            check_aggregate(&[V, other_fs], &AGG),
            Err(QuotaError::AggregateExceeded {
                what: QuotaUnit::Byte,
                total: 200,
                maximum: 150
            })
        ));
        // Another project on the same filesystem too, and inodes count.
        let other_project = VerifiedQuota {
            project_id: 43,
            hard_bytes: 10,
            ..V
        };
        assert!(matches!(
            check_aggregate(&[V, other_project, V], &AGG),
            Err(QuotaError::AggregateExceeded {
                what: QuotaUnit::Inode,
                total: 20,
                maximum: 15
            })
        ));
    }

    #[test]
    fn aggregate_refuses_one_pair_with_two_limits() {
        let changed = VerifiedQuota {
            hard_bytes: 50,
            ..V
        };
        assert!(matches!(
            check_aggregate(&[V, changed], &AGG),
            Err(QuotaError::InconsistentPair {
                project: 42,
                first_bytes: 100,
                second_bytes: 50,
                ..
            })
        ));
    }

    #[test]
    fn aggregate_sums_without_overflow() {
        let big = |device| VerifiedQuota {
            device,
            hard_bytes: u64::MAX,
            hard_inodes: 1,
            ..V
        };
        let agg = AggregateQuota {
            max_bytes: u64::MAX,
            max_inodes: 10,
        };
        assert!(check_aggregate(&[big(1)], &agg).is_ok());
        assert!(matches!(
            check_aggregate(&[big(1), big(2)], &agg),
            Err(QuotaError::AggregateExceeded { what: QuotaUnit::Byte, total, .. }) if total == 2 * u128::from(u64::MAX)
        ));
    }

    #[test]
    fn kernel_inspector_fails_closed_without_project_quotas() {
        // The temp filesystem here has no project quotas: the real
        // interfaces must report that, never a default.
        let result = verify(&KernelQuotaInspector, pin().as_fd(), &QUOTA);
        assert!(
            matches!(
                result,
                Err(QuotaError::Unsupported {
                    interface: Interface::QuotaState,
                    ..
                } | QuotaError::NotEnabled(_)
                    | QuotaError::NoAccounting
                    | QuotaError::NotEnforced)
            ),
            "expected a fail-closed error for the missing quota, got {result:?}"
        );
    }
}
