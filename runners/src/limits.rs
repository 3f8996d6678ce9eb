//! Resource limits: each selected `RLIMIT_*` as both soft and hard limit,
//! and core dumps disabled.

use std::collections::BTreeMap;

use crate::{Failure, sys};

/// A limit the runners can set. The order of the variants is the order in
/// which they are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Limit {
    /// `--cpu-seconds`: `RLIMIT_CPU`, cumulative CPU seconds.
    CpuSeconds,
    /// `--address-space-bytes`: `RLIMIT_AS`, virtual address space.
    AddressSpaceBytes,
    /// `--process-count`: `RLIMIT_NPROC`, threads of the real UID (not
    /// enforced for real UID 0 or `CAP_SYS_ADMIN`/`CAP_SYS_RESOURCE`).
    ProcessCount,
    /// `--open-files`: `RLIMIT_NOFILE`.
    OpenFiles,
    /// `--file-size-bytes`: `RLIMIT_FSIZE`, size of one written file.
    FileSizeBytes,
}

impl Limit {
    /// Every limit, in application order.
    pub const ALL: [Limit; 5] = [
        Limit::CpuSeconds,
        Limit::AddressSpaceBytes,
        Limit::ProcessCount,
        Limit::OpenFiles,
        Limit::FileSizeBytes,
    ];

    /// The command-line flag.
    pub fn flag(self) -> &'static str {
        match self {
            Limit::CpuSeconds => "--cpu-seconds",
            Limit::AddressSpaceBytes => "--address-space-bytes",
            Limit::ProcessCount => "--process-count",
            Limit::OpenFiles => "--open-files",
            Limit::FileSizeBytes => "--file-size-bytes",
        }
    }

    /// The limit a flag selects.
    pub fn from_flag(flag: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|l| l.flag() == flag)
    }

    /// The kernel resource name, for diagnostics.
    pub fn resource_name(self) -> &'static str {
        match self {
            Limit::CpuSeconds => "RLIMIT_CPU",
            Limit::AddressSpaceBytes => "RLIMIT_AS",
            Limit::ProcessCount => "RLIMIT_NPROC",
            Limit::OpenFiles => "RLIMIT_NOFILE",
            Limit::FileSizeBytes => "RLIMIT_FSIZE",
        }
    }

    fn resource(self) -> libc::__rlimit_resource_t {
        match self {
            Limit::CpuSeconds => libc::RLIMIT_CPU,
            Limit::AddressSpaceBytes => libc::RLIMIT_AS,
            Limit::ProcessCount => libc::RLIMIT_NPROC,
            Limit::OpenFiles => libc::RLIMIT_NOFILE,
            Limit::FileSizeBytes => libc::RLIMIT_FSIZE,
        }
    }
}

/// Sets every selected limit (soft = hard = value), then `RLIMIT_CORE` to 0
/// (soft and hard), in that order. A failure names the limit.
pub fn apply(limits: &BTreeMap<Limit, u64>) -> Result<(), Failure> {
    for (&limit, &value) in limits {
        sys::set_rlimit(limit.resource(), value).map_err(|e| {
            Failure::setup(format!(
                "failed to set `{}` to `{value}`: {e}",
                limit.resource_name()
            ))
        })?;
    }
    sys::set_rlimit(libc::RLIMIT_CORE, 0)
        .map_err(|e| Failure::setup(format!("failed to disable core dumps: {e}")))
}
